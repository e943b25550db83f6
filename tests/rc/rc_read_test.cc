// SPDX-License-Identifier: MIT
// Reads on the wire: the outbound read limit (never more than max_rd_atomic
// Reads outstanding), what the responder does when the requester exceeds its
// inbound limit, READ_FENCE ordering, zero-length Send/Write/Read, the
// local READ_SINK right of a Read's target, and the responses placed into
// the sink as their ICRC is computed.
#include <algorithm>

#include "stack/mem/place.h"
#include "tests/rc/rc_wire.h"
#include "tests/support/test_support.h"

namespace roce::rc::testing {
namespace {

constexpr uint64_t kDelay = 1000;

// With gbps = 0 a frame sent at t arrives at exactly t + delay, so the wire
// log tells when each response reached the requester.
PairOptions InstantLink(uint32_t mtu = 1024) {
  PairOptions o;
  o.attr.path_mtu = mtu;
  o.imp.gbps = 0;
  o.imp.delay_ns = kDelay;
  return o;
}

// Highest number of Reads the requester had outstanding when it sent a new
// Read request: requests sent so far minus Reads whose last response had
// arrived.
uint32_t MaxReadsOutstanding(const WireLog& w) {
  uint32_t max = 0;
  std::vector<uint32_t> seen;
  for (size_t i = 0; i < w.frames.size(); i++) {
    const Frame& f = w.frames[i];
    if (f.from != kA || f.opcode != op::kRcReadRequest) continue;
    if (std::find(seen.begin(), seen.end(), f.psn) != seen.end()) continue;  // a retry
    seen.push_back(f.psn);
    const uint32_t answered = static_cast<uint32_t>(w.Count([&](const Frame& g) {
      return g.from == kB && EndsReadResponse(g.opcode) && g.t + kDelay <= f.t;
    }));
    max = std::max(max, static_cast<uint32_t>(seen.size()) - answered);
  }
  return max;
}

TEST(RcRead, NeverMoreThanMaxRdAtomicOnTheWire) {
  for (uint8_t limit : {uint8_t{1}, uint8_t{2}, uint8_t{4}}) {
    SCOPED_TRACE(::testing::Message() << "max_rd_atomic " << int{limit});
    PairOptions o = InstantLink();
    o.adjust = [&](bool a_side, QpAttr& at) {
      if (a_side) at.max_rd_atomic = limit;  // b keeps its 16 inbound resources
    };
    RcPair p(o);
    WireLog w(p.net());
    const uint32_t n = 4096;  // 4 responses each
    Buffer sink(8 * n, 1), target(8 * n, 2);
    target.Fill(3);
    auto kr = p.a.Register(sink, mem::kLocalWrite);
    auto tr = p.b.Register(target, mem::kRemoteRead);
    std::vector<Sge> sges(8);
    for (uint64_t i = 0; i < 8; i++) {
      sges[i] = {sink.addr() + i * n, n, kr.local_token};
      ASSERT_EQ(p.a.qp->PostSend(MakeRdma(i, WrOp::kRead, &sges[i], 1, target.addr() + i * n,
                                          tr.remote_token)),
                PostResult::kOk);
    }
    ASSERT_TRUE(p.RunForSend(p.a, 8));
    auto sc = p.a.PollSend();
    ASSERT_EQ(sc.size(), 8u);
    for (const Completion& c : sc) EXPECT_EQ(c.status, Status::kSuccess);
    EXPECT_EQ(0, memcmp(sink.data(), target.data(), 8 * n));
    EXPECT_EQ(w.Op(kA, op::kRcReadRequest).size(), 8u);
    EXPECT_EQ(MaxReadsOutstanding(w), limit);  // reached, never exceeded
    // The first burst holds exactly `limit` requests.
    const uint64_t t0 = w.frames.front().t;
    EXPECT_EQ(w.Count([&](const Frame& f) { return f.from == kA && f.t == t0; }), limit);
  }
}

// The requester's outbound limit (4) above the responder's inbound limit
// (2), a misconfiguration ND2's connection set-up prevents by clamping.
// Four multi-packet Reads arrive together: the responder accepts two, and
// the third finds its resource slot still answering the first; it NAKs
// invalid request and goes to Error after the two answers it owes.
TEST(RcRead, RequesterAboveResponderInboundLimitGetsInvalidRequest) {
  PairOptions o = InstantLink();
  o.adjust = [](bool a_side, QpAttr& at) {
    if (a_side) at.max_rd_atomic = 4;
    else at.max_dest_rd_atomic = 2;
  };
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 4096;
  Buffer sink(4 * n, 1), target(4 * n, 2);
  target.Fill(8);
  auto kr = p.a.Register(sink, mem::kLocalWrite);
  auto tr = p.b.Register(target, mem::kRemoteRead);
  const uint32_t psn0 = p.a.qp->next_psn();
  std::vector<Sge> sges(4);
  for (uint64_t i = 0; i < 4; i++) {
    sges[i] = {sink.addr() + i * n, n, kr.local_token};
    ASSERT_EQ(p.a.qp->PostSend(MakeRdma(i, WrOp::kRead, &sges[i], 1, target.addr() + i * n,
                                        tr.remote_token)),
              PostResult::kOk);
  }
  ASSERT_TRUE(p.RunForSend(p.a, 4));
  p.RunIdle();
  ExpectCompletions(p.a.PollSend(), {{0, Status::kSuccess},
                                     {1, Status::kSuccess},
                                     {2, Status::kDataError, Cause::kRemoteInvalidRequest},
                                     {3, Status::kCanceled, Cause::kFlushed}});
  EXPECT_EQ(0, memcmp(sink.data(), target.data(), 2 * n));
  auto naks = w.Where([](const Frame& f) { return f.from == kB && f.opcode == op::kRcAck; });
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].syndrome, syn::Nak(syn::kNakInvalidRequest));
  EXPECT_EQ(naks[0].psn, PsnAdd(psn0, 8));  // the third Read's request PSN
  // The NAK leaves after all 8 responses of the two accepted Reads.
  EXPECT_EQ(w.Count([](const Frame& f) { return IsReadResponse(f.opcode); }), 8u);
  EXPECT_TRUE(w.From(kB).back().opcode == op::kRcAck);
  EXPECT_EQ(p.b.qp->counters.invalid_naks_sent, 1u);
  EXPECT_EQ(p.a.qp->state(), QpState::kError);
  EXPECT_EQ(p.b.qp->state(), QpState::kError);
}

// A requester's probe for its last Read, sent just before that Read's answer
// reached it, and then a new Read in every resource slot (the answer came,
// the application posted again): all in one burst, as Microsoft's ndrping
// sends them when its process loses the CPU past the probe's timer. The
// duplicate's replay is still queued when the new Read for the same slot is
// taken; the requester has the old Read complete, so the replay goes unsent
// and every new Read is answered, no NAK invalid request.
TEST(RcRead, ProbeAheadOfNewReadsDoesNotHoldTheirResource) {
  PairOptions o = InstantLink();
  o.adjust = [](bool a_side, QpAttr& at) {
    if (a_side) at.max_rd_atomic = 2;
    else at.max_dest_rd_atomic = 2;
  };
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 64;
  Buffer sink(4 * n, 1), target(4 * n, 2);
  target.Fill(5);
  auto kr = p.a.Register(sink, mem::kLocalWrite);
  auto tr = p.b.Register(target, mem::kRemoteRead);
  std::vector<uint8_t> last_request;
  w.modify = [&](const Frame& f, std::vector<uint8_t>& frame) {
    if (f.from == kA && f.opcode == op::kRcReadRequest) last_request = frame;
  };
  std::vector<Sge> sges(4);
  auto post = [&](uint64_t i) {
    sges[i] = {sink.addr() + i * n, n, kr.local_token};
    ASSERT_EQ(p.a.qp->PostSend(MakeRdma(i, WrOp::kRead, &sges[i], 1, target.addr() + i * n,
                                        tr.remote_token)),
              PostResult::kOk);
  };
  post(0);
  post(1);
  ASSERT_TRUE(p.RunForSend(p.a, 2));
  const std::vector<uint8_t> probe = last_request;  // the second Read's request
  ASSERT_FALSE(probe.empty());
  w.modify = nullptr;
  p.net().Send(kA, std::vector<uint8_t>(probe));
  post(2);
  post(3);
  ASSERT_TRUE(p.RunForSend(p.a, 4));
  p.RunIdle();
  ExpectCompletions(p.a.PollSend(), {{0, Status::kSuccess},
                                     {1, Status::kSuccess},
                                     {2, Status::kSuccess},
                                     {3, Status::kSuccess}});
  EXPECT_EQ(0, memcmp(sink.data(), target.data(), 4 * n));
  // The three requests arrived together: the duplicate first.
  auto req = w.Op(kA, op::kRcReadRequest);
  ASSERT_EQ(req.size(), 5u);
  EXPECT_EQ(req[2].psn, req[1].psn);
  EXPECT_EQ(req[2].t, req[3].t);
  EXPECT_EQ(req[3].t, req[4].t);
  EXPECT_EQ(p.b.qp->counters.duplicates, 1u);
  EXPECT_EQ(p.b.qp->counters.replays_superseded, 1u);
  EXPECT_EQ(p.b.qp->counters.invalid_naks_sent, 0u);
  EXPECT_EQ(w.Count([](const Frame& f) { return f.from == kB && IsReadResponse(f.opcode); }), 4u);
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
  EXPECT_EQ(p.b.qp->state(), QpState::kRts);
}

// READ_FENCE: a fenced Write waits until every earlier Read is answered; an
// unfenced one goes out at once, before the Read's first response arrives.
void FenceOrder(bool fence) {
  PairOptions o = InstantLink();
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 8192;  // 8 responses
  Buffer sink(n, 1), target(n, 2), src(64, 3);
  target.Fill(1);
  src.Fill(2);
  auto kr = p.a.Register(sink, mem::kLocalWrite);
  auto sr = p.a.Register(src, 0);
  auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteRead | mem::kRemoteWrite);
  const auto before = Snapshot(target);
  Sge ks{sink.addr(), n, kr.local_token}, ss{src.addr(), 64, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kRead, &ks, 1, target.addr(), tr.remote_token)),
            PostResult::kOk);
  // The Write overwrites the first 64 bytes the Read is reading.
  SendWr wr = MakeRdma(2, WrOp::kWrite, &ss, 1, target.addr(), tr.remote_token);
  if (fence) wr.flags |= kReadFence;
  ASSERT_EQ(p.a.qp->PostSend(wr), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 2));
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}, {2, Status::kSuccess}});

  auto req = w.Op(kA, op::kRcReadRequest);
  auto wrf = w.Op(kA, op::kRcWriteOnly);
  auto resp = w.Where([](const Frame& f) { return IsReadResponse(f.opcode); });
  ASSERT_EQ(req.size(), 1u);
  ASSERT_EQ(wrf.size(), 1u);
  ASSERT_EQ(resp.size(), 8u);
  if (fence) {
    EXPECT_GE(wrf[0].t, resp.back().t + kDelay) << "fenced Write left before the Read was answered";
    // ... so the Read saw the old bytes.
    EXPECT_EQ(0, memcmp(sink.data(), before.data(), n));
  } else {
    EXPECT_EQ(wrf[0].t, req[0].t);
    EXPECT_LT(wrf[0].t, resp.front().t + kDelay);
  }
  EXPECT_EQ(0, memcmp(target.data(), src.data(), 64));
}

TEST(RcRead, ReadFenceHoldsWriteUntilReadsComplete) { FenceOrder(true); }
TEST(RcRead, WriteAfterReadWithoutFenceGoesAtOnce) { FenceOrder(false); }

TEST(RcRead, ReadFenceWithoutOutstandingReadsDoesNotWait) {
  PairOptions o = InstantLink();
  RcPair p(o);
  WireLog w(p.net());
  Buffer src(64, 1), target(256, 2);
  auto sr = p.a.Register(src, 0);
  auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteWrite);
  Sge ss{src.addr(), 64, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kWrite, &ss, 1, target.addr(), tr.remote_token)),
            PostResult::kOk);
  SendWr wr = MakeRdma(2, WrOp::kWrite, &ss, 1, target.addr() + 64, tr.remote_token);
  wr.flags |= kReadFence;
  ASSERT_EQ(p.a.qp->PostSend(wr), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 2));
  auto wrf = w.Op(kA, op::kRcWriteOnly);
  ASSERT_EQ(wrf.size(), 2u);
  EXPECT_EQ(wrf[0].t, wrf[1].t);
}

// ---- zero length -----------------------------------------------------------------

TEST(RcRead, ZeroLengthSendWriteReadNeedNoValidToken) {
  RcPair p;
  WireLog w(p.net());
  Buffer recv(64, 1);
  auto rr = p.b.Register(recv, mem::kLocalWrite);
  const auto before = Snapshot(recv);
  Sge r0{recv.addr(), 64, rr.local_token};
  Sge r1{recv.addr(), 64, rr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &r0, 1)), PostResult::kOk);
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(101, &r1, 1)), PostResult::kOk);
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(102, &r1, 1)), PostResult::kOk);
  const uint32_t psn0 = p.a.qp->next_psn();
  // A Send with no SGE, and one with a zero-length SGE carrying a bogus token.
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, nullptr, 0)), PostResult::kOk);
  Sge z{0xDEAD0000, 0, 0xBADBAD};
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(2, &z, 1)), PostResult::kOk);
  // Write and Read of 0 bytes at an arbitrary address with an invalid token.
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(3, WrOp::kWrite, nullptr, 0, 0x1, 0xDEADBEEF)), PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(4, WrOp::kRead, &z, 1, 0xFFFFFFFFFFFFFFF0ull, 0)), PostResult::kOk);
  // Write with immediate of 0 bytes: consumes a receive, reports 0 bytes and the immediate.
  SendWr wi = MakeRdma(5, WrOp::kWriteWithImm, nullptr, 0, 0x2, 0x12345678);
  wi.imm = 0xA5A5F00D;
  ASSERT_EQ(p.a.qp->PostSend(wi), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 5));
  p.RunIdle();
  auto sc = p.a.PollSend();
  ExpectCompletions(sc, {{1, Status::kSuccess}, {2, Status::kSuccess}, {3, Status::kSuccess},
                         {4, Status::kSuccess}, {5, Status::kSuccess}});
  for (const Completion& c : sc) EXPECT_EQ(c.bytes, 0u);
  auto rc = p.b.PollRecv();
  ExpectCompletions(rc, {{100, Status::kSuccess}, {101, Status::kSuccess}, {102, Status::kSuccess}});
  for (const Completion& c : rc) EXPECT_EQ(c.bytes, 0u);
  EXPECT_FALSE(rc[0].with_imm);
  EXPECT_TRUE(rc[2].with_imm);
  EXPECT_EQ(rc[2].imm, 0xA5A5F00Du);
  EXPECT_TRUE(SameBytes(recv, before));

  // On the wire: one packet each, the right opcodes, no payload.
  auto reqs = w.Where([](const Frame& f) { return f.from == kA; });
  ASSERT_EQ(reqs.size(), 5u);
  const uint8_t want[5] = {op::kRcSendOnly, op::kRcSendOnly, op::kRcWriteOnly, op::kRcReadRequest,
                           op::kRcWriteOnlyImm};
  for (uint32_t i = 0; i < 5; i++) {
    EXPECT_EQ(reqs[i].opcode, want[i]) << i;
    EXPECT_EQ(reqs[i].psn, PsnAdd(psn0, i)) << i;
    EXPECT_EQ(reqs[i].payload_len, 0u) << i;
  }
  EXPECT_EQ(reqs[2].dma_len, 0u);
  EXPECT_EQ(reqs[2].va, 0x1u);
  EXPECT_EQ(reqs[2].rkey, 0xDEADBEEFu);
  EXPECT_EQ(reqs[3].dma_len, 0u);
  EXPECT_EQ(reqs[3].rkey, 0u);
  auto resp = w.Where([](const Frame& f) { return f.from == kB && IsReadResponse(f.opcode); });
  ASSERT_EQ(resp.size(), 1u);
  EXPECT_EQ(resp[0].opcode, op::kRcReadResponseOnly);
  EXPECT_EQ(resp[0].payload_len, 0u);
  EXPECT_EQ(resp[0].psn, PsnAdd(psn0, 3));
  EXPECT_EQ(w.Count([](const Frame& f) {
              return f.from == kB && f.opcode == op::kRcAck && f.syndrome != syn::Ack();
            }),
            0u);
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
  EXPECT_EQ(p.b.qp->state(), QpState::kRts);
}

// ---- a Read's local target ------------------------------------------------------

TEST(RcRead, ReadSinkNeedsLocalWriteOrReadSink) {
  RcPair p;
  WireLog w(p.net());
  Buffer target(256, 1), sink_rs(256, 2), sink_none(256, 3), sink_lw(256, 4);
  target.Fill(6);
  auto tr = p.b.Register(target, mem::kRemoteRead);
  auto k_rs = p.a.Register(sink_rs, mem::kReadSink);
  auto k_none = p.a.Register(sink_none, mem::kRemoteRead);  // no local write, no read sink
  auto k_lw = p.a.Register(sink_lw, mem::kLocalWrite);
  Sge s1{sink_rs.addr(), 256, k_rs.local_token}, s2{sink_lw.addr(), 256, k_lw.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kRead, &s1, 1, target.addr(), tr.remote_token)), PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(2, WrOp::kRead, &s2, 1, target.addr(), tr.remote_token)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 2));
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}, {2, Status::kSuccess}});
  EXPECT_EQ(0, memcmp(sink_rs.data(), target.data(), 256));
  EXPECT_EQ(0, memcmp(sink_lw.data(), target.data(), 256));
  // A sink without either right fails locally: nothing goes on the wire.
  const size_t frames = w.frames.size();
  const auto before = Snapshot(sink_none);
  Sge s3{sink_none.addr(), 256, k_none.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(3, WrOp::kRead, &s3, 1, target.addr(), tr.remote_token)), PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(4, WrOp::kRead, &s1, 1, target.addr(), tr.remote_token)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 2));
  ExpectCompletions(p.a.PollSend(), {{3, Status::kAccessViolation, Cause::kLocalProtection},
                                     {4, Status::kCanceled, Cause::kFlushed}});
  EXPECT_EQ(w.frames.size(), frames);
  EXPECT_TRUE(SameBytes(sink_none, before));
  EXPECT_EQ(p.a.qp->state(), QpState::kError);
}

// A Read's Middles and its Last (shorter than the MTU, with a pad) are placed
// into the sink as their ICRC is computed (QueuePair::ReadSinkTarget). The
// first copy of the Last arrives with a payload byte flipped: its bytes land
// in the sink where the good copy's go, its ICRC fails, it is dropped
// (rx_placed_dropped) and the Read does not complete on it; the retry's
// answer does, with the sink exactly the target's bytes and nothing around
// it touched. A second Read, unharmed, places its two Middles and its Last.
TEST(RcRead, ReadResponseLastPlacedInPassSurvivesCorruption) {
  const bool was = mem::SetPlaceCrcOnePass(true);
  if (!mem::PlaceCrcOnePass()) ROCE_SKIP_ALLOWED("this CPU has no AVX-512 VPCLMULQDQ: the ICRC is checked first");
  PairOptions o = InstantLink(1024);
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 3 * 1024 + 602;  // First, two Middles, a Last of 602 bytes (pad 2)
  Buffer sink(n, 1), target(n, 2);
  target.Fill(7);
  auto kr = p.a.Register(sink, mem::kLocalWrite);
  auto tr = p.b.Register(target, mem::kRemoteRead);
  int lasts = 0;
  w.modify = [&](const Frame& f, std::vector<uint8_t>& frame) {
    if (f.from == kB && f.opcode == op::kRcReadResponseLast && ++lasts == 1) frame[frame.size() / 2] ^= 0x10;
  };
  const rc::DeviceCounters& dc = p.a.node->dev().counters;
  Sge ks{sink.addr(), n, kr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kRead, &ks, 1, target.addr(), tr.remote_token)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}});
  EXPECT_EQ(lasts, 1);
  EXPECT_EQ(dc.IcrcErrors(), 1u);
  EXPECT_EQ(dc.rx_placed_dropped, 1u);  // the corrupted Last, placed then dropped
  EXPECT_EQ(0, memcmp(sink.data(), target.data(), n));
  EXPECT_TRUE(sink.GuardsIntact());
  EXPECT_GE(p.a.qp->counters.retransmits, 1u);

  sink.Fill(9);
  const uint64_t placed = dc.rx_placed_in_pass;
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(2, WrOp::kRead, &ks, 1, target.addr(), tr.remote_token)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  ExpectCompletions(p.a.PollSend(), {{2, Status::kSuccess}});
  EXPECT_EQ(dc.rx_placed_in_pass - placed, 3u);  // two Middles and the Last
  EXPECT_EQ(dc.rx_placed_dropped, 1u);
  EXPECT_EQ(0, memcmp(sink.data(), target.data(), n));
  EXPECT_TRUE(sink.GuardsIntact());
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
  mem::SetPlaceCrcOnePass(was);
}

}  // namespace
}  // namespace roce::rc::testing
