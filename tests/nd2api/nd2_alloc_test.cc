// SPDX-License-Identifier: MIT
// No heap allocation in steady state through the ND2 API: once a connection
// has carried each kind of request, more Sends and Receives, Writes (8 B,
// inline, 64 KB), Reads and GetResults allocate nothing — in inline mode (the
// application's GetResults drives the stack) and with a progress thread per
// adapter (posting through the per-QP rings), over a link that reorders 2% of
// the frames (selective repair at work). Every global operator new of this
// binary, on any thread, is counted while the loop runs.
#include "tests/nd2api/nd2_objects_util.h"
#include "tests/support/alloc_counter.h"

namespace nd2t {

[[maybe_unused]] static ::testing::Environment* const kEnv = ::testing::AddGlobalTestEnvironment(new Environment);

namespace {

// The two adapters of nd2_objects_util.h's configuration, with 2% of the
// frames each receives delivered after their successor (fault injection):
// the warm-up then meets out-of-order packets (the first one makes a QP take
// its selective-repair buffers, once), and the measured rounds go on meeting
// them.
void StartWithReordering(Mode m) {
  Stop();
  const char* progress = m == Mode::kThread ? "thread" : "inline";
  {
    std::ofstream f(ConfigPath());
    for (int i = 0; i < 2; i++) {
      f << "[adapter" << i << "]\nprofile = net_ring.ini\nport.ring = nd2alloc\nport.ring_side = " << (i ? "b" : "a")
        << "\nip = 10.0.0." << i + 1 << "/24\nip6 = fd00::" << i + 1 << "/64\nprogress = " << progress
        << "\nfault.rx_reorder = 0.02\nfault.seed = " << 7 + i << "\n";
      if (i) f << "port.mac = 02:00:00:00:00:02\n";
    }
  }
  setenv("ND2_CONFIG", ConfigPath().c_str(), 1);
  ASSERT_EQ(NdStartup(), ND_SUCCESS);
  Started() = true;
  CurrentMode() = m;
}

class Nd2Alloc : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartWithReordering(GetParam())); }
};

INSTANTIATE_TEST_SUITE_P(Progress, Nd2Alloc, ::testing::Values(Mode::kInline, Mode::kThread),
                         [](const ::testing::TestParamInfo<Mode>& i) {
                           return i.param == Mode::kThread ? std::string("Thread") : std::string("Inline");
                         });

// Polls `cq` until it yields a result (bounded); false if none came or it failed.
bool One(IND2CompletionQueue* cq) {
  ND2_RESULT r;
  for (long i = 0; i < 50'000'000; i++) {
    if (cq->GetResults(&r, 1) == 1) return r.Status == ND_SUCCESS;
  }
  return false;
}

// One round from a to b: a receive and an 8 B Send, an 8 B inline Write, a
// 64 KB Write, an 8 B and a 64 KB Read; every result taken.
bool Round(Pair& p) {
  constexpr ULONG kBig = 65536;
  ND2_SGE s8 = p.a.Sge(0, 8), big = p.a.Sge(0, kBig), sink8 = p.a.Sge(200000, 8), sink = p.a.Sge(200000, kBig);
  ND2_SGE r = p.b.Sge(0, 64);
  const UINT32 tok = p.b.mr->GetRemoteToken();
  bool ok = p.b.qp->Receive(nullptr, &r, 1) == ND_SUCCESS;
  ok = ok && p.a.qp->Send(nullptr, &s8, 1, 0) == ND_SUCCESS;
  ok = ok && p.a.qp->Write(nullptr, &s8, 1, p.b.Va(4096), tok, ND_OP_FLAG_INLINE) == ND_SUCCESS;
  ok = ok && p.a.qp->Write(nullptr, &big, 1, p.b.Va(300000), tok, 0) == ND_SUCCESS;
  ok = ok && p.a.qp->Read(nullptr, &sink8, 1, p.b.Va(300000), tok, 0) == ND_SUCCESS;
  ok = ok && p.a.qp->Read(nullptr, &sink, 1, p.b.Va(300000), tok, 0) == ND_SUCCESS;
  for (int i = 0; ok && i < 5; i++) ok = One(p.a.icq);
  return ok && One(p.b.cq);
}

TEST_P(Nd2Alloc, SteadyStateAllocatesNothing) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  for (size_t i = 0; i < 65536; i++) p.a.buf[i] = static_cast<char>(i * 31);
  for (int i = 0; i < 50; i++) ASSERT_TRUE(Round(p)) << "warm-up round " << i;
  ASSERT_TRUE(roce::testing::AllocationCounterWorks());
  roce::testing::StartCountingAllocations();
  bool ok = true;
  int rounds = 0;
  for (; rounds < 200 && ok; rounds++) ok = Round(p);
  const uint64_t allocs = roce::testing::StopCountingAllocations();
  ASSERT_TRUE(ok) << "round " << rounds;
  EXPECT_EQ(allocs, 0u) << "heap allocations in " << rounds << " rounds of 6 requests";
  if (allocs) roce::testing::PrintCountedAllocations();
  EXPECT_EQ(0, std::memcmp(p.a.buf.data(), p.b.buf.data() + 300000, 65536));
  EXPECT_EQ(0, std::memcmp(p.a.buf.data(), p.a.buf.data() + 200000, 65536));
}

}  // namespace
}  // namespace nd2t
