// SPDX-License-Identifier: MIT
// The names of types.h's enums (for logs, events and diagnostics) and the
// IBTA's RNR timer table.
#include "stack/rc/types.h"

namespace roce::rc {

const char* StatusName(Status s) {
  switch (s) {
    case Status::kSuccess: return "success";
    case Status::kCanceled: return "canceled";
    case Status::kBufferOverflow: return "buffer-overflow";
    case Status::kDataError: return "data-error";
    case Status::kAccessViolation: return "access-violation";
    case Status::kIoTimeout: return "io-timeout";
    case Status::kRemoteError: return "remote-error";
    case Status::kInternalError: return "internal-error";
  }
  return "?";
}

const char* CauseName(Cause c) {
  switch (c) {
    case Cause::kNone: return "none";
    case Cause::kFlushed: return "flushed";
    case Cause::kRetryExceeded: return "retry-exceeded";
    case Cause::kRnrRetryExceeded: return "rnr-retry-exceeded";
    case Cause::kLocalProtection: return "local-protection";
    case Cause::kLocalLength: return "local-length";
    case Cause::kRemoteAccess: return "remote-access";
    case Cause::kRemoteInvalidRequest: return "remote-invalid-request";
    case Cause::kRemoteOperational: return "remote-operational";
    case Cause::kBindError: return "bind-error";
    case Cause::kInvalidate: return "invalidate";
  }
  return "?";
}

const char* PostResultName(PostResult r) {
  switch (r) {
    case PostResult::kOk: return "ok";
    case PostResult::kInvalidState: return "invalid-state";
    case PostResult::kQueueFull: return "queue-full";
    case PostResult::kTooManySge: return "too-many-sge";
    case PostResult::kInlineTooLarge: return "inline-too-large";
    case PostResult::kInvalidParameter: return "invalid-parameter";
  }
  return "?";
}

const char* QpStateName(QpState s) {
  switch (s) {
    case QpState::kReset: return "reset";
    case QpState::kInit: return "init";
    case QpState::kRtr: return "rtr";
    case QpState::kRts: return "rts";
    case QpState::kError: return "error";
  }
  return "?";
}

uint64_t RnrTimerNs(uint8_t code) {
  // IBTA table 45, in units of 10 us; code 0 is the longest (655.36 ms).
  static constexpr uint32_t k10us[32] = {
      65536, 1,    2,    3,    4,    6,    8,    12,   16,   24,   32,
      48,    64,   96,   128,  192,  256,  384,  512,  768,  1024, 1536,
      2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};
  return uint64_t{k10us[code & 31]} * 10000;
}

}  // namespace roce::rc
