// SPDX-License-Identifier: MIT
// No heap allocation in steady state (issue 13): once two stacks over the
// net_ring pair have carried each kind of request once, more Sends, Writes
// (one packet and multi-packet), Reads and their completions, ACKs and
// receives allocate nothing. Every global operator new of this binary is
// counted while the rounds run (tests/support/alloc_counter.h; both engines
// are polled inline, on this thread); mbufs come from DPDK mempools and are
// not counted.
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "stack/engine/engine.h"
#include "tests/port/port_test_env.h"
#include "tests/support/alloc_counter.h"
#include "tools/lib/two_stacks.h"

namespace roce::engine {
namespace {

using rc::Completion;
using rc::Sge;
using rc::Status;
using rc::WrOp;

class EngineAlloc : public ::testing::TestWithParam<bool> {};

// One round: a receive and an 8 B Send, an 8 B Write, a 64 KB Write, an 8 B
// and a 64 KB Read, all from a to b; polled until the five completions on a
// and the receive on b are in. Returns false if they did not come.
bool Round(tools::TwoStacks& ts, const Sge& src, const Sge& sink, const Sge& recv, uint64_t target, uint32_t rkey) {
  auto& a = ts.a();
  auto& b = ts.b();
  rc::RecvWr r{1, &recv, 1};
  if (ts.PostRecv(b, r) != rc::PostResult::kOk) return false;
  Sge s8 = src, k8 = sink;
  s8.length = k8.length = 8;
  struct Op {
    WrOp op;
    const Sge* sge;
  } ops[] = {{WrOp::kSend, &s8}, {WrOp::kWrite, &s8}, {WrOp::kWrite, &src}, {WrOp::kRead, &k8}, {WrOp::kRead, &sink}};
  uint64_t ctx = 10;
  for (const Op& o : ops) {
    rc::SendWr w;
    w.op = o.op;
    w.sge = o.sge;
    w.num_sge = 1;
    w.context = ctx++;
    w.remote_addr = target;
    w.rkey = rkey;
    if (ts.Post(a, w) != rc::PostResult::kOk) return false;
  }
  Completion c[8];
  uint32_t got_a = 0, got_b = 0;
  for (int i = 0; i < 2'000'000 && (got_a < 5 || got_b < 1); i++) {
    ts.PollBoth();
    const uint32_t ka = a.scq->Poll(c, 8);
    for (uint32_t j = 0; j < ka; j++)
      if (c[j].status != Status::kSuccess) return false;
    got_a += ka;
    const uint32_t kb = b.rcq->Poll(c, 8);
    for (uint32_t j = 0; j < kb; j++)
      if (c[j].status != Status::kSuccess || c[j].bytes != 8) return false;
    got_b += kb;
  }
  return got_a == 5 && got_b == 1;
}

TEST_P(EngineAlloc, SteadyStateAllocatesNothing) {
  const bool zero_copy = GetParam();
  tools::TwoStacksOptions o;
  o.ring = zero_copy ? "alloc_zc" : "alloc_copy";
  o.mem_seed = 9;
  o.cq_depth = 64;
  o.caps.sq_depth = 16;
  o.caps.rq_depth = 16;
  o.zero_copy_min = zero_copy ? 1024 : 0;
  auto t = tools::TwoStacks::Open(o);
  ASSERT_TRUE(t.ok()) << t.status();
  tools::TwoStacks& ts = **t;
  constexpr uint32_t kLen = 65536;
  std::vector<uint8_t> src(kLen, 0x5A), sink(kLen), recv(64), target(kLen);
  const auto sr = ts.Register(ts.a(), src.data(), kLen, 0);
  const auto kr = ts.Register(ts.a(), sink.data(), kLen, mem::kLocalWrite);
  const auto rr = ts.Register(ts.b(), recv.data(), recv.size(), mem::kLocalWrite);
  const auto tr = ts.Register(ts.b(), target.data(), kLen, mem::kRemoteRead | mem::kRemoteWrite | mem::kLocalWrite);
  const Sge s{reinterpret_cast<uint64_t>(src.data()), kLen, sr.local_token};
  const Sge k{reinterpret_cast<uint64_t>(sink.data()), kLen, kr.local_token};
  const Sge r{reinterpret_cast<uint64_t>(recv.data()), 64, rr.local_token};
  const uint64_t ta = reinterpret_cast<uint64_t>(target.data());
  // Warm up: every queue, pool and table reaches its working size.
  for (int i = 0; i < 50; i++) ASSERT_TRUE(Round(ts, s, k, r, ta, tr.remote_token)) << "warm-up round " << i;
  ASSERT_TRUE(roce::testing::AllocationCounterWorks());
  roce::testing::StartCountingAllocations();
  bool ok = true;
  int rounds = 0;
  for (; rounds < 200 && ok; rounds++) ok = Round(ts, s, k, r, ta, tr.remote_token);
  const uint64_t allocs = roce::testing::StopCountingAllocations();
  ASSERT_TRUE(ok) << "round " << rounds;
  EXPECT_EQ(allocs, 0u) << "heap allocations in " << rounds << " rounds of 6 requests";
  if (allocs) roce::testing::PrintCountedAllocations();
  EXPECT_EQ(0, memcmp(src.data(), sink.data(), kLen));
  EXPECT_EQ(0, memcmp(src.data(), target.data(), kLen));
}

INSTANTIATE_TEST_SUITE_P(Payload, EngineAlloc, ::testing::Values(false, true),
                         [](const auto& i) { return i.param ? "ZeroCopy" : "Copied"; });

}  // namespace
}  // namespace roce::engine
