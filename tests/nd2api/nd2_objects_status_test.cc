// SPDX-License-Identifier: MIT
// The one mapping between the stack's statuses and ND2 HRESULTs
// (nd2api/src/status.cc), in both directions: every stack completion status
// has an ND2 status and comes back from it; every HRESULT of the table stands
// for one stack status; the post results likewise. Which test produces each
// status end to end: nd2api/README.md ("Conformance: adapter, CQ, SRQ,
// memory, queue pair").
#include <set>

#include <gtest/gtest.h>

#include "nd2api/src/status.h"

namespace roce::nd2 {
namespace {

constexpr rc::Status kAllStatuses[] = {rc::Status::kSuccess,       rc::Status::kCanceled,
                                       rc::Status::kBufferOverflow, rc::Status::kDataError,
                                       rc::Status::kAccessViolation, rc::Status::kIoTimeout,
                                       rc::Status::kRemoteError,   rc::Status::kInternalError};
constexpr rc::Cause kAllCauses[] = {
    rc::Cause::kNone,         rc::Cause::kFlushed,      rc::Cause::kRetryExceeded,
    rc::Cause::kRnrRetryExceeded, rc::Cause::kLocalProtection, rc::Cause::kLocalLength,
    rc::Cause::kRemoteAccess, rc::Cause::kRemoteInvalidRequest, rc::Cause::kRemoteOperational,
    rc::Cause::kBindError,    rc::Cause::kInvalidate};

TEST(Nd2Status, EveryStackStatusMapsAndComesBack) {
  for (rc::Status s : kAllStatuses)
    for (rc::Cause c : kAllCauses) {
      const HRESULT h = ToHresult(s, c);
      rc::Status back;
      rc::Cause back_cause;
      ASSERT_TRUE(FromHresult(h, &back, &back_cause)) << std::hex << h;
      EXPECT_EQ(back, s) << static_cast<int>(s) << "/" << static_cast<int>(c) << " -> " << std::hex << h;
      // The round trip keeps the HRESULT too.
      EXPECT_EQ(ToHresult(back, back_cause), h);
    }
}

TEST(Nd2Status, TableRowsAreDistinctAndBothWays) {
  size_t n = 0;
  const StatusRow* rows = StatusTable(&n);
  ASSERT_GT(n, 0u);
  std::set<HRESULT> seen;
  for (size_t i = 0; i < n; i++) {
    EXPECT_TRUE(seen.insert(rows[i].hresult).second) << "HRESULT twice: " << std::hex << rows[i].hresult;
    rc::Status s;
    rc::Cause c;
    ASSERT_TRUE(FromHresult(rows[i].hresult, &s, &c));
    EXPECT_EQ(s, rows[i].status);
    EXPECT_EQ(ToHresult(s, rows[i].any_cause ? rc::Cause::kNone : rows[i].cause), rows[i].hresult);
  }
  // Every stack status has a row of its own.
  for (rc::Status s : kAllStatuses) {
    bool found = false;
    for (size_t i = 0; i < n; i++) found |= rows[i].status == s && rows[i].any_cause;
    EXPECT_TRUE(found) << static_cast<int>(s);
  }
}

TEST(Nd2Status, TheValuesTheSpecAndReferenceName) {
  EXPECT_EQ(ToHresult(rc::Status::kSuccess), ND_SUCCESS);
  EXPECT_EQ(ToHresult(rc::Status::kCanceled, rc::Cause::kFlushed), ND_CANCELED);
  EXPECT_EQ(ToHresult(rc::Status::kBufferOverflow, rc::Cause::kLocalLength), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(ToHresult(rc::Status::kDataError, rc::Cause::kRemoteInvalidRequest), HRESULT(0xC000003E));
  EXPECT_EQ(ToHresult(rc::Status::kAccessViolation, rc::Cause::kRemoteAccess), ND_ACCESS_VIOLATION);
  EXPECT_EQ(ToHresult(rc::Status::kAccessViolation, rc::Cause::kLocalProtection), ND_ACCESS_VIOLATION);
  EXPECT_EQ(ToHresult(rc::Status::kAccessViolation, rc::Cause::kBindError), ND_ACCESS_VIOLATION);
  EXPECT_EQ(ToHresult(rc::Status::kAccessViolation, rc::Cause::kInvalidate), ND_INVALID_DEVICE_REQUEST);
  EXPECT_EQ(ToHresult(rc::Status::kIoTimeout, rc::Cause::kRnrRetryExceeded), ND_IO_TIMEOUT);
  EXPECT_EQ(ToHresult(rc::Status::kIoTimeout, rc::Cause::kRetryExceeded), ND_IO_TIMEOUT);
  EXPECT_EQ(ToHresult(rc::Status::kRemoteError, rc::Cause::kRemoteOperational), ND_REMOTE_ERROR);
  EXPECT_EQ(ToHresult(rc::Status::kInternalError), ND_INTERNAL_ERROR);
  // Not completion statuses of the table.
  rc::Status s;
  EXPECT_FALSE(FromHresult(ND_PENDING, &s));
  EXPECT_FALSE(FromHresult(ND_CONNECTION_REFUSED, &s));
  EXPECT_FALSE(FromHresult(ND_DATA_OVERRUN, &s));
}

TEST(Nd2Status, PostTableBothWays) {
  constexpr rc::PostResult kAll[] = {rc::PostResult::kOk,         rc::PostResult::kInvalidState,
                                     rc::PostResult::kQueueFull,  rc::PostResult::kTooManySge,
                                     rc::PostResult::kInlineTooLarge, rc::PostResult::kInvalidParameter};
  std::set<HRESULT> seen;
  for (rc::PostResult r : kAll) {
    const HRESULT h = PostHresult(r);
    EXPECT_TRUE(seen.insert(h).second) << static_cast<int>(r);
    rc::PostResult back;
    ASSERT_TRUE(FromPostHresult(h, &back));
    EXPECT_EQ(back, r) << static_cast<int>(r);
  }
  size_t n = 0;
  const PostRow* rows = PostTable(&n);
  EXPECT_EQ(n, sizeof kAll / sizeof kAll[0]);
  for (size_t i = 0; i < n; i++) EXPECT_EQ(PostHresult(rows[i].result), rows[i].hresult);
  EXPECT_EQ(PostHresult(rc::PostResult::kOk), ND_SUCCESS);
  EXPECT_EQ(PostHresult(rc::PostResult::kInvalidState), ND_CONNECTION_INVALID);
  EXPECT_EQ(PostHresult(rc::PostResult::kQueueFull), ND_NO_MORE_ENTRIES);
  EXPECT_EQ(PostHresult(rc::PostResult::kTooManySge), ND_DATA_OVERRUN);
  EXPECT_EQ(PostHresult(rc::PostResult::kInlineTooLarge), ND_BUFFER_OVERFLOW);
  rc::PostResult r;
  EXPECT_FALSE(FromPostHresult(ND_PENDING, &r));
}

}  // namespace
}  // namespace roce::nd2
