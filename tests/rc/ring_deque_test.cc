// RingDeque (stack/rc/ring_deque.h) against std::deque: the same random
// sequence of push_back / pop_front / insert / clear / Reserve leaves the
// same contents, across wrap-around and growth; within the reserved
// capacity it never reallocates.
#include "stack/rc/ring_deque.h"

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
    if (!d.empty()) ASSERT_EQ(r.back(), d.back()) << step;
    if (step % 97 == 0)
      for (size_t i = 0; i < d.size(); i++) ASSERT_EQ(r[i], d[i]) << step << " " << i;
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

}  // namespace
}  // namespace roce::rc
