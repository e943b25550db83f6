// The one mapping between the stack's statuses and ND2's HRESULTs (the ND
// status values are NTSTATUS values). Used in both directions; tested in
// tests/nd2api/status_test.cc.
#pragma once

#include "stack/rc/types.h"

#ifndef ND_WIN32_NO_LEGACY_SAL
#define ND_WIN32_NO_LEGACY_SAL
#endif
#include "ndstatus.h"

namespace roce::nd2 {

// A completion's status as ND2_RESULT.Status.
HRESULT ToHresult(rc::Status s);
// The stack status an ND2 completion status stands for (kInternalError for
// anything that is not a completion status).
rc::Status FromHresult(HRESULT h);

// A refused post (IND2QueuePair::Send ...). `flags_param` is the 1-based
// position of the flags parameter (ND_INVALID_PARAMETER_n).
HRESULT PostHresult(rc::PostResult r);

}  // namespace roce::nd2
