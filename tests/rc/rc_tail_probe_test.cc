// SPDX-License-Identifier: MIT
// The tail probe (QpTuning::tail_probe, QueuePair::OnTailProbe): a Send's or
// Write's last packet, or its ACK, lost with nothing after it to draw a
// sequence NAK is found two round trips (+200 us) later by resending that
// packet alone with AckReq, not by the retransmit timeout; towards our
// responder and towards a go-back-N one (as rxe). Once per silence: a silent
// peer costs one probe and still fails by the timer.
#include "tests/rc/rc_wire.h"

namespace roce::rc::testing {
namespace {

constexpr uint8_t kTimeout = 14;                   // 4.096 us * 2^14 = 67 ms
constexpr uint64_t kTimeoutNs = 4096ull << kTimeout;

PairOptions Options(bool go_back_n_peer) {
  PairOptions o;
  o.attr.path_mtu = 256;
  o.attr.timeout = kTimeout;
  if (go_back_n_peer) GoBackN(o.tuning);  // both sides as rxe
  return o;
}

// The ACK of a 4-packet Write is lost: the probe resends WRITE_LAST alone,
// the responder answers the duplicate without writing again.
TEST(RcTailProbe, LostAckOfAWriteIsProbedNotTimedOut) {
  for (bool gbn : {false, true}) {
    SCOPED_TRACE(gbn ? "go-back-N peer" : "our peer");
    RcPair p(Options(gbn));
    WireLog w(p.net());
    w.drop = DropFirst([](const Frame& f) { return f.from == kB && IsAck(f); });
    Buffer src(1024, 1), target(1024, 2);
    src.Fill(1);
    auto sr = p.a.Register(src, 0);
    auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteWrite);
    const uint32_t psn0 = p.a.qp->next_psn();
    Sge ss{src.addr(), 1024, sr.local_token};  // 4 packets
    const uint64_t t0 = p.net().now();
    ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kWrite, &ss, 1, target.addr(), tr.remote_token)),
              PostResult::kOk);
    ASSERT_TRUE(p.net().RunUntil([&] { return p.b.qp->expected_psn() == PsnAdd(psn0, 4); },
                                 p.net().now() + 1'000'000));
    EXPECT_EQ(0, memcmp(target.data(), src.data(), 1024));
    memset(target.data(), 0x3C, 1024);  // b's application overwrites the target
    ASSERT_TRUE(p.RunForSend(p.a, 1));
    const uint64_t took = p.net().now() - t0;
    ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}});
    p.RunIdle();
    for (int i = 0; i < 1024; i++) ASSERT_EQ(target.data()[i], 0x3C) << "written twice at " << i;
    EXPECT_LT(took, kTimeoutNs / 10);
    EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
    EXPECT_EQ(p.a.qp->counters.tail_probes, 1u);
    EXPECT_EQ(p.a.qp->counters.retransmits, 1u);
    EXPECT_EQ(p.b.qp->counters.duplicates, 1u);
    // On the wire: the four packets, then WRITE_LAST again with AckReq.
    auto req = w.From(kA);
    ASSERT_EQ(req.size(), 5u);
    EXPECT_EQ(req[4].opcode, op::kRcWriteLast);
    EXPECT_EQ(req[4].psn, PsnAdd(psn0, 3));
    EXPECT_TRUE(req[4].ack_req);
    EXPECT_GE(req[4].t - req[3].t, 200'000u);  // two round trips + 200 us after the last
  }
}

// A 700-byte Send (three packets) into a posted receive, through w's drops:
// it completes well before the retransmit timeout and arrives intact; the
// receive's completion goes to *rc.
void SendThroughTheDrops(RcPair& p, uint8_t fill, Completion* rc) {
  Buffer src(1024, 1), dst(1024, 2);
  src.Fill(fill);
  auto sr = p.a.Register(src, 0);
  auto dr = p.b.Register(dst, mem::kLocalWrite);
  Sge rs{dst.addr(), 1024, dr.local_token}, ss{src.addr(), 700, sr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &rs, 1)), PostResult::kOk);
  const uint64_t t0 = p.net().now();
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, &ss, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  EXPECT_LT(p.net().now() - t0, kTimeoutNs / 10);
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}});
  p.RunIdle();
  auto c = p.b.PollRecv();
  ExpectCompletions(c, {{100, Status::kSuccess}});
  ASSERT_EQ(c.size(), 1u);
  *rc = c[0];
  EXPECT_EQ(0, memcmp(dst.data(), src.data(), 700));
}

// A Send's last packet is lost: the probe is that packet, in sequence at the
// responder, which delivers the message once.
TEST(RcTailProbe, LostLastPacketOfASendIsProbed) {
  for (bool gbn : {false, true}) {
    SCOPED_TRACE(gbn ? "go-back-N peer" : "our peer");
    RcPair p(Options(gbn));
    WireLog w(p.net());
    w.drop = DropFirst([](const Frame& f) { return f.from == kA && f.opcode == op::kRcSendLast; });
    Completion rc;
    ASSERT_NO_FATAL_FAILURE(SendThroughTheDrops(p, 3, &rc));
    EXPECT_EQ(rc.bytes, 700u);
    EXPECT_EQ(p.b.rcq->size(), 0u);
    EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
    EXPECT_EQ(p.a.qp->counters.tail_probes, 1u);
    EXPECT_EQ(p.a.qp->counters.retransmits, 1u);
    EXPECT_EQ(p.b.qp->counters.out_of_sequence, 0u);
    EXPECT_EQ(p.b.qp->counters.duplicates, 0u);
  }
}

// The last two packets are lost: the probe (the last) arrives out of
// sequence, the responder NAKs the first missing one, and the requester
// resends from there (a repair towards ours, go-back-N towards the other).
TEST(RcTailProbe, LostTailOfTwoPacketsIsRecoveredThroughTheNak) {
  for (bool gbn : {false, true}) {
    SCOPED_TRACE(gbn ? "go-back-N peer" : "our peer");
    RcPair p(Options(gbn));
    WireLog w(p.net());
    w.drop = DropAny({DropFirst([](const Frame& f) { return f.from == kA && f.opcode == op::kRcSendMiddle; }),
                      DropFirst([](const Frame& f) { return f.from == kA && f.opcode == op::kRcSendLast; })});
    Completion rc;
    ASSERT_NO_FATAL_FAILURE(SendThroughTheDrops(p, 5, &rc));
    EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
    EXPECT_EQ(p.a.qp->counters.tail_probes, 1u);
    EXPECT_EQ(p.a.qp->counters.seq_naks_received, 1u);
    EXPECT_EQ(p.b.qp->counters.seq_naks_sent, 1u);
  }
}

// Nothing comes back at all: one probe, then the retransmit timer judges the
// peer as before (retry_cnt retries, each a timeout apart).
TEST(RcTailProbe, SilentPeerCostsOneProbeAndFailsByTheTimer) {
  PairOptions o = Options(false);
  o.attr.retry_cnt = 3;
  RcPair p(o);
  WireLog w(p.net());
  w.drop = [](const Frame& f) { return f.from == kB; };
  Buffer src(256, 1), dst(256, 2);
  auto sr = p.a.Register(src, 0);
  auto dr = p.b.Register(dst, mem::kLocalWrite | mem::kRemoteWrite);
  Sge ss{src.addr(), 100, sr.local_token};
  const uint64_t t0 = p.net().now();
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kWrite, &ss, 1, dst.addr(), dr.remote_token)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  const uint64_t elapsed = p.net().now() - t0;
  ExpectCompletions(p.a.PollSend(), {{1, Status::kIoTimeout, Cause::kRetryExceeded}});
  EXPECT_EQ(p.a.qp->counters.tail_probes, 1u);
  EXPECT_EQ(p.a.qp->counters.timeouts, 4u);
  EXPECT_GE(elapsed, 4 * kTimeoutNs);
  EXPECT_LT(elapsed, 5 * kTimeoutNs);
}

// A lossless stream of small Writes, each ACKed within a round trip, never
// probes; neither does a Read (the read probe's).
TEST(RcTailProbe, LosslessTrafficNeverProbes) {
  RcPair p(Options(false));
  WireLog w(p.net());
  Buffer src(4096, 1), dst(4096, 2);
  auto sr = p.a.Register(src, mem::kLocalWrite);
  auto dr = p.b.Register(dst, mem::kLocalWrite | mem::kRemoteWrite | mem::kRemoteRead);
  const uint32_t n = 200;
  for (uint32_t i = 0; i < n; i++) {
    Sge ss{src.addr() + (i % 64) * 8, 8, sr.local_token};
    const WrOp op = i % 50 == 49 ? WrOp::kRead : WrOp::kWrite;
    ASSERT_EQ(p.a.qp->PostSend(MakeRdma(i, op, &ss, 1, dst.addr() + (i % 64) * 8, dr.remote_token)),
              PostResult::kOk);
    if (i % 16 == 15 || i == n - 1) {
      ASSERT_TRUE(p.RunForSend(p.a, i % 16 + 1));
      for (const Completion& c : p.a.PollSend()) ASSERT_EQ(c.status, Status::kSuccess);
    }
  }
  p.RunIdle();
  EXPECT_EQ(p.a.qp->counters.tail_probes, 0u);
  EXPECT_EQ(p.a.qp->counters.retransmits, 0u);
}

// Off (QpTuning::tail_probe = false): the lost ACK waits for the timeout.
TEST(RcTailProbe, OffWaitsForTheTimeout) {
  PairOptions o = Options(false);
  o.tuning.tail_probe = false;
  RcPair p(o);
  WireLog w(p.net());
  w.drop = DropFirst([](const Frame& f) { return f.from == kB && IsAck(f); });
  Buffer src(256, 1), dst(256, 2);
  auto sr = p.a.Register(src, 0);
  auto dr = p.b.Register(dst, mem::kLocalWrite | mem::kRemoteWrite);
  Sge ss{src.addr(), 100, sr.local_token};
  const uint64_t t0 = p.net().now();
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kWrite, &ss, 1, dst.addr(), dr.remote_token)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  EXPECT_GE(p.net().now() - t0, kTimeoutNs);
  EXPECT_EQ(p.a.qp->counters.tail_probes, 0u);
  EXPECT_EQ(p.a.qp->counters.timeouts, 1u);
}

}  // namespace
}  // namespace roce::rc::testing
