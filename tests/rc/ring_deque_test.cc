// SPDX-License-Identifier: MIT
// The RC core's rings. RingDeque (stack/rc/ring_deque.h) against std::deque: the same random
// sequence of push_back / pop_front / insert / clear / Reserve leaves the
// same contents, across wrap-around and growth; within the reserved
// capacity it never reallocates.
#include "stack/rc/ring_deque.h"

#include "stack/rc/queues.h"

#include <deque>
#include <random>

#include <gtest/gtest.h>

namespace roce::rc {
namespace {

TEST(RingDeque, MatchesStdDequeThroughWrapInsertAndGrowth) {
  std::mt19937 rng(7);
  RingDeque<int> r;
  std::deque<int> d;
  int next = 0;
  for (int step = 0; step < 200000; step++) {
    const uint32_t op = rng() % 100;
    if (op < 45) {
      r.push_back(next);
      d.push_back(next);
      next++;
    } else if (op < 85) {
      if (!d.empty()) {
        ASSERT_EQ(r.front(), d.front());
        r.pop_front();
        d.pop_front();
      }
    } else if (op < 97) {
      const size_t at = d.empty() ? 0 : rng() % (d.size() + 1);
      r.insert(at, -next);
      d.insert(d.begin() + static_cast<long>(at), -next);
      next++;
    } else if (op < 98) {
      r.clear();
      d.clear();
    } else {
      r.Reserve(rng() % 64);
    }
    ASSERT_EQ(r.size(), d.size()) << step;
    ASSERT_EQ(r.empty(), d.empty());
    if (!d.empty()) {
      ASSERT_EQ(r.back(), d.back()) << step;
    }
    if (step % 97 == 0) {
      for (size_t i = 0; i < d.size(); i++) ASSERT_EQ(r[i], d[i]) << step << " " << i;
    }
  }
}

TEST(RingDeque, NoReallocationWithinTheReservedCapacity) {
  RingDeque<int> r;
  r.Reserve(40);
  ASSERT_EQ(r.capacity(), 64u);
  r.push_back(0);
  const int* slot0 = &r.front();
  for (int i = 1; i < 100000; i++) {
    r.push_back(i);
    while (r.size() > 50) r.pop_front();
    if (i % 7 == 0) r.insert(r.size() / 2, -i);
    ASSERT_LE(r.size(), 64u);
    ASSERT_EQ(r.capacity(), 64u);
  }
  // Same storage throughout: the element at position 0 lives in the ring.
  EXPECT_GE(&r.front(), slot0 - 63);
  EXPECT_LE(&r.front(), slot0 + 63);
}

// The completion and receive queues keep their slots in a power-of-two ring
// (by mask) but hold exactly the depth asked for, in order across the wrap
// and through Resize.
TEST(Queues, DepthIsExactWithPowerOfTwoSlots) {
  CompletionQueue cq(3);
  EXPECT_EQ(cq.depth(), 3u);
  uint64_t pushed = 0, polled = 0;
  for (int round = 0; round < 50; round++) {
    while (true) {
      Completion c;
      c.request_context = pushed;
      if (!cq.Push(c)) break;
      pushed++;
    }
    ASSERT_EQ(cq.size(), 3u);
    Completion out[2];
    const uint32_t n = cq.Poll(out, 2);
    ASSERT_EQ(n, 2u);
    for (uint32_t i = 0; i < n; i++) ASSERT_EQ(out[i].request_context, polled++);
  }
  EXPECT_EQ(cq.overflows(), 50u);
  ASSERT_TRUE(cq.Resize(5));
  EXPECT_EQ(cq.depth(), 5u);
  Completion c;
  for (int i = 0; i < 4; i++) {
    c.request_context = pushed++;
    EXPECT_TRUE(cq.Push(c));
  }
  EXPECT_FALSE(cq.Push(c));
  Completion out[8];
  ASSERT_EQ(cq.Poll(out, 8), 5u);
  for (uint32_t i = 0; i < 5; i++) EXPECT_EQ(out[i].request_context, polled++);

  ReceiveQueue rq(3, 2);
  uint64_t posted = 0, taken = 0;
  Sge sge[2] = {{0x1000, 10, 1}, {0x2000, 20, 2}};
  for (int round = 0; round < 50; round++) {
    while (true) {
      RecvWr w{posted, sge, 2};
      const PostResult r = rq.Post(w);
      if (r == PostResult::kQueueFull) break;
      ASSERT_EQ(r, PostResult::kOk);
      posted++;
    }
    ASSERT_EQ(rq.size(), 3u);
    const RecvWqe* f = rq.Front();
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->context, taken++);
    EXPECT_EQ(f->length, 30u);
    EXPECT_EQ(f->sge[1].addr, 0x2000u);
    rq.Pop();
  }
  ASSERT_TRUE(rq.Resize(4));  // two posted: room for two more
  for (int i = 0; i < 2; i++) {
    RecvWr w{posted++, sge, 1};
    EXPECT_EQ(rq.Post(w), PostResult::kOk);
  }
  RecvWr w{posted, sge, 1};
  EXPECT_EQ(rq.Post(w), PostResult::kQueueFull);
  for (uint64_t i = 0; i < 4; i++) {
    const RecvWqe* f = rq.Front();
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->context, taken++);
    rq.Pop();
  }
  EXPECT_EQ(rq.Front(), nullptr);
}

TEST(RingDeque, EraseKeepsOrderAcrossTheWrap) {
  RingDeque<int> d;
  d.Reserve(4);
  for (int i = 0; i < 3; i++) d.push_back(i);
  d.pop_front();
  d.pop_front();  // head at 2: the next pushes wrap round the ring
  for (int i = 3; i < 6; i++) d.push_back(i);
  ASSERT_EQ(d.size(), 4u);  // 2 3 4 5
  d.erase(1);               // 2 4 5
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0], 2);
  EXPECT_EQ(d[1], 4);
  EXPECT_EQ(d[2], 5);
  d.erase(2);  // the last
  d.erase(0);  // the first
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d.front(), 4);
  d.push_back(9);
  EXPECT_EQ(d.back(), 9);
  EXPECT_EQ(d.capacity(), 4u);  // no regrow
}

}  // namespace
}  // namespace roce::rc
