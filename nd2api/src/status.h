// SPDX-License-Identifier: MIT
// The one mapping between the stack's statuses and ND2's HRESULTs (the ND
// status values are NTSTATUS values). Used in both directions; tested in
// tests/nd2api/nd2_objects_status_test.cc.
#pragma once

#include <cstddef>

#include "stack/rc/types.h"

#ifndef ND_WIN32_NO_LEGACY_SAL
#define ND_WIN32_NO_LEGACY_SAL
#endif
#include "ndstatus.h"

namespace roce::nd2 {

// One row of the completion-status table: a stack status (and, where the
// ND2 status depends on it, the cause) and the ND2_RESULT.Status it is.
struct StatusRow {
  rc::Status status;
  bool any_cause;   // false: only for `cause`
  rc::Cause cause;
  HRESULT hresult;
};
// The table (first matching row wins; every HRESULT appears once).
const StatusRow* StatusTable(size_t* rows);

// A completion's status as ND2_RESULT.Status.
HRESULT ToHresult(rc::Status s, rc::Cause cause = rc::Cause::kNone);
// A completion's status (success, nearly always, without the table's walk).
inline HRESULT ToHresult(const rc::Completion& c) {
  return c.status == rc::Status::kSuccess ? ND_SUCCESS : ToHresult(c.status, c.cause);
}
// The stack status (and cause, kNone unless the row names one) an ND2
// completion status stands for; false for anything that is not a
// completion status of this table.
bool FromHresult(HRESULT h, rc::Status* s, rc::Cause* cause = nullptr);

// One row of the post table: a refused (or accepted) post and the HRESULT
// IND2QueuePair / IND2SharedReceiveQueue methods return for it.
struct PostRow {
  rc::PostResult result;
  HRESULT hresult;
};
const PostRow* PostTable(size_t* rows);
HRESULT PostHresult(rc::PostResult r);
// The post result an HRESULT of that table stands for; false otherwise.
bool FromPostHresult(HRESULT h, rc::PostResult* r);

}  // namespace roce::nd2
