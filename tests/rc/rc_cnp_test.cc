// SPDX-License-Identifier: MIT
// Congestion notification: a CE-marked request (ECT(0) path, the link marks
// every ECN-capable frame CE) makes the responder send CNPs — opcode 0x81,
// BECN set, DestQP = the requester's QPN — at most one per
// QpTuning::cnp_interval_ns per QP.
#include "tests/rc/rc_wire.h"

namespace roce::rc::testing {
namespace {

struct CnpRun {
  std::vector<Frame> cnps;
  uint64_t first_arrival = 0, last_arrival = 0;  // of a's requests at b
  QpCounters a, b;
  size_t requests = 0;
};

CnpRun RunCnp(uint8_t a_tos, double ce_mark, uint64_t interval_ns) {
  PairOptions o;
  o.imp.ce_mark = ce_mark;
  o.imp.gbps = 100;
  o.imp.delay_ns = 1000;
  o.tuning.cnp_interval_ns = interval_ns;
  o.adjust = [a_tos](bool a_side, QpAttr& at) {
    if (a_side) at.path.ip4.tos = a_tos;
  };
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 200 * 1024;  // 200 packets, ~88 ns apart on the link
  Buffer src(n, 1), target(n, 2);
  src.Fill(3);
  auto sr = p.a.Register(src, 0);
  auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteWrite);
  Sge ss{src.addr(), n, sr.local_token};
  EXPECT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kWrite, &ss, 1, target.addr(), tr.remote_token)),
            PostResult::kOk);
  EXPECT_TRUE(p.RunForSend(p.a, 1));
  p.RunIdle();
  auto sc = p.a.PollSend();
  EXPECT_EQ(sc.size(), 1u);
  if (!sc.empty()) {
    EXPECT_EQ(sc[0].status, Status::kSuccess);
  }
  EXPECT_EQ(0, memcmp(src.data(), target.data(), n));
  CnpRun r;
  r.cnps = w.Where([](const Frame& f) { return f.opcode == op::kCnp; });
  for (const Frame& f : r.cnps) {
    EXPECT_EQ(f.from, kB);
    EXPECT_TRUE(f.becn);
    EXPECT_EQ(f.dest_qp, p.a.qp->qpn());
    EXPECT_EQ(f.ecn, 0);  // b's path is not ECN-capable: its frames are never marked
  }
  // Requests carry ECT(0) as sent; the link marks them after the filter.
  for (const Frame& f : w.From(kA)) EXPECT_EQ(f.ecn, a_tos & 3);
  r.requests = w.From(kA).size();
  r.a = p.a.qp->counters;
  r.b = p.b.qp->counters;
  return r;
}

TEST(RcCnp, CeMarkedRequestsDrawRateLimitedCnps) {
  const uint64_t interval = 4000;
  CnpRun r = RunCnp(0x02, 1.0, interval);
  EXPECT_EQ(r.requests, 200u);
  EXPECT_EQ(r.b.ce_received, 200u);
  // The burst reaches b over ~17.6 us: one CNP per 4 us window, no more.
  ASSERT_GE(r.cnps.size(), 4u);
  EXPECT_LE(r.cnps.size(), 6u);
  for (size_t i = 1; i < r.cnps.size(); i++) {
    EXPECT_GE(r.cnps[i].t - r.cnps[i - 1].t, interval) << i;
  }
  EXPECT_EQ(r.b.cnps_sent, r.cnps.size());
  EXPECT_EQ(r.a.cnps_received, r.cnps.size());
  // CNPs do not disturb the transfer.
  EXPECT_EQ(r.a.retransmits, 0u);
}

TEST(RcCnp, IntervalZeroAnswersEveryMarkedRequest) {
  CnpRun r = RunCnp(0x02, 1.0, 0);
  EXPECT_EQ(r.b.ce_received, 200u);
  EXPECT_EQ(r.cnps.size(), 200u);
  EXPECT_EQ(r.a.cnps_received, 200u);
}

TEST(RcCnp, LongIntervalAllowsOneCnp) {
  CnpRun r = RunCnp(0x02, 1.0, 1'000'000'000);
  EXPECT_EQ(r.cnps.size(), 1u);
  EXPECT_EQ(r.b.ce_received, 200u);
}

TEST(RcCnp, NoCongestionNoCnp) {
  CnpRun r = RunCnp(0x02, 0.0, 4000);
  EXPECT_EQ(r.cnps.size(), 0u);
  EXPECT_EQ(r.b.ce_received, 0u);
  EXPECT_EQ(r.b.cnps_sent, 0u);
}

TEST(RcCnp, NotEcnCapableIsNeverMarked) {
  CnpRun r = RunCnp(0x00, 1.0, 4000);
  EXPECT_EQ(r.cnps.size(), 0u);
  EXPECT_EQ(r.b.ce_received, 0u);
}

}  // namespace
}  // namespace roce::rc::testing
