#include "nd2api/src/status.h"

namespace roce::nd2 {

namespace {
struct Pair {
  rc::Status s;
  HRESULT h;
};
// One row per stack status: its ND2 completion status (nd2-reference.md,
// "Semantics": a remote access error is ND_ACCESS_VIOLATION at the initiator,
// a flush ND_CANCELED, the RNR or transport retries ND_IO_TIMEOUT, the sender
// of a too-small receive STATUS_DATA_ERROR as on IB, the receiver of it
// ND_BUFFER_OVERFLOW, a remote operational error ND_REMOTE_ERROR).
constexpr Pair kTable[] = {
    {rc::Status::kSuccess, ND_SUCCESS},
    {rc::Status::kCanceled, ND_CANCELED},
    {rc::Status::kBufferOverflow, ND_BUFFER_OVERFLOW},
    {rc::Status::kDataError, STATUS_DATA_ERROR},
    {rc::Status::kAccessViolation, ND_ACCESS_VIOLATION},
    {rc::Status::kIoTimeout, ND_IO_TIMEOUT},
    {rc::Status::kRemoteError, ND_REMOTE_ERROR},
    {rc::Status::kInternalError, ND_INTERNAL_ERROR},
};
}  // namespace

HRESULT ToHresult(rc::Status s) {
  for (const Pair& p : kTable)
    if (p.s == s) return p.h;
  return ND_INTERNAL_ERROR;
}

rc::Status FromHresult(HRESULT h) {
  for (const Pair& p : kTable)
    if (p.h == h) return p.s;
  return rc::Status::kInternalError;
}

HRESULT PostHresult(rc::PostResult r) {
  switch (r) {
    case rc::PostResult::kOk: return ND_SUCCESS;
    case rc::PostResult::kInvalidState: return ND_CONNECTION_INVALID;
    case rc::PostResult::kQueueFull: return ND_NO_MORE_ENTRIES;
    case rc::PostResult::kTooManySge: return ND_DATA_OVERRUN;
    case rc::PostResult::kInlineTooLarge: return ND_INVALID_BUFFER_SIZE;
    case rc::PostResult::kInvalidParameter: return ND_BUFFER_OVERFLOW;
  }
  return ND_INTERNAL_ERROR;
}

}  // namespace roce::nd2
