// SPDX-License-Identifier: MIT
#include "nd2api/src/status.h"

namespace roce::nd2 {

namespace {
// One row per ND2 completion status the stack produces (nd2-reference.md,
// "Semantics"; IND2CompletionQueue.md, ND2_RESULT): a remote access error is
// ND_ACCESS_VIOLATION at the initiator, a flush ND_CANCELED, the RNR or
// transport retries ND_IO_TIMEOUT, the sender of a too-small receive
// STATUS_DATA_ERROR as on IB, the receiver of it ND_BUFFER_OVERFLOW, a remote
// operational error ND_REMOTE_ERROR, and an Invalidate of a window that is
// not bound (the stack fails it as an access error with cause kInvalidate)
// ND_INVALID_DEVICE_REQUEST, "an improperly formatted request".
constexpr StatusRow kTable[] = {
    {rc::Status::kSuccess, true, rc::Cause::kNone, ND_SUCCESS},
    {rc::Status::kCanceled, true, rc::Cause::kNone, ND_CANCELED},
    {rc::Status::kBufferOverflow, true, rc::Cause::kNone, ND_BUFFER_OVERFLOW},
    {rc::Status::kDataError, true, rc::Cause::kNone, STATUS_DATA_ERROR},
    {rc::Status::kAccessViolation, false, rc::Cause::kInvalidate, ND_INVALID_DEVICE_REQUEST},
    {rc::Status::kAccessViolation, true, rc::Cause::kNone, ND_ACCESS_VIOLATION},
    {rc::Status::kIoTimeout, true, rc::Cause::kNone, ND_IO_TIMEOUT},
    {rc::Status::kRemoteError, true, rc::Cause::kNone, ND_REMOTE_ERROR},
    {rc::Status::kInternalError, true, rc::Cause::kNone, ND_INTERNAL_ERROR},
};

// What a post returns (IND2QueuePair.md, IND2SharedReceiveQueue.md): not
// connected ND_CONNECTION_INVALID, queue full ND_NO_MORE_ENTRIES, too many
// SGEs ND_DATA_OVERRUN, more data than supported (inline above the queue
// pair's inline size, a total above MaxTransferLength) ND_BUFFER_OVERFLOW.
constexpr PostRow kPostTable[] = {
    {rc::PostResult::kOk, ND_SUCCESS},
    {rc::PostResult::kInvalidState, ND_CONNECTION_INVALID},
    {rc::PostResult::kQueueFull, ND_NO_MORE_ENTRIES},
    {rc::PostResult::kTooManySge, ND_DATA_OVERRUN},
    {rc::PostResult::kInlineTooLarge, ND_BUFFER_OVERFLOW},
    {rc::PostResult::kInvalidParameter, ND_INVALID_PARAMETER},
};
}  // namespace

const StatusRow* StatusTable(size_t* rows) {
  *rows = sizeof kTable / sizeof kTable[0];
  return kTable;
}

HRESULT ToHresult(rc::Status s, rc::Cause cause) {
  for (const StatusRow& r : kTable)
    if (r.status == s && (r.any_cause || r.cause == cause)) return r.hresult;
  return ND_INTERNAL_ERROR;
}

bool FromHresult(HRESULT h, rc::Status* s, rc::Cause* cause) {
  for (const StatusRow& r : kTable)
    if (r.hresult == h) {
      *s = r.status;
      if (cause) *cause = r.any_cause ? rc::Cause::kNone : r.cause;
      return true;
    }
  return false;
}

const PostRow* PostTable(size_t* rows) {
  *rows = sizeof kPostTable / sizeof kPostTable[0];
  return kPostTable;
}

HRESULT PostHresult(rc::PostResult r) {
  if (r == rc::PostResult::kOk) return ND_SUCCESS;  // every post but a refused one
  for (const PostRow& p : kPostTable)
    if (p.result == r) return p.hresult;
  return ND_INTERNAL_ERROR;
}

bool FromPostHresult(HRESULT h, rc::PostResult* r) {
  for (const PostRow& p : kPostTable)
    if (p.hresult == h) {
      *r = p.result;
      return true;
    }
  return false;
}

}  // namespace roce::nd2
