// SPDX-License-Identifier: MIT
// Selective repair (issue 13): our responder keeps requests that arrive past
// a missing one (QpTuning::ooo_window) and executes them in order once the
// gap is filled; our requester resends only the missing packet after a
// sequence NAK and holds the rest until the answer. Against a go-back-N
// responder (ooo_window 0, as rxe) the answer is a plain ACK that stops at
// the repaired packet, and the requester goes back N from there.
#include <cstring>

#include "tests/rc/rc_wire.h"

namespace roce::rc::testing {
namespace {

bool FromAWithPsn(const Frame& f, uint32_t psn) { return f.from == kA && IsRequest(f.opcode) && f.psn == psn; }

// a sends b a 2560-byte Send (10 packets at path MTU 256) whose 4th packet
// (`*lost`, `*base` the first) is dropped once; runs until a's Send has
// completed and the link is idle, then checks both completions and that
// `dst` (b's 4096-byte receive) holds `src` (filled with `fill`).
void SendWithFourthPacketLost(RcPair& p, WireLog& w, uint8_t fill, Buffer& src, Buffer& dst, uint32_t* base,
                              uint32_t* lost) {
  src.Fill(fill);
  auto sr = p.a.Register(src, 0);
  auto dr = p.b.Register(dst, mem::kLocalWrite);
  Sge r0{dst.addr(), 4096, dr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &r0, 1)), PostResult::kOk);

  *base = p.a.qp->next_psn();
  const uint32_t l = *lost = PsnAdd(*base, 3);
  w.drop = DropFirst([l](const Frame& f) { return FromAWithPsn(f, l); });
  Sge s{src.addr(), 2560, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, &s, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  p.RunIdle();

  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}});
  auto rc = p.b.PollRecv();
  ExpectCompletions(rc, {{100, Status::kSuccess}});
  EXPECT_EQ(rc[0].bytes, 2560u);
  EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), 2560));
}

// A 10-packet Send whose 4th packet is lost once: one sequence NAK, one
// packet resent (with AckReq), the six after it kept and executed, one ACK
// for the whole message.
TEST(RcRepair, SingleLossInAWindowIsRepairedByOnePacket) {
  PairOptions o;
  o.attr.path_mtu = 256;
  RcPair p(o);
  WireLog w(p.net());
  Buffer src(4096, 1), dst(4096, 2);
  uint32_t base = 0, lost = 0;
  ASSERT_NO_FATAL_FAILURE(SendWithFourthPacketLost(p, w, 3, src, dst, &base, &lost));
  EXPECT_TRUE(dst.GuardsIntact());

  // The responder NAKs the first packet past the gap, once, naming the gap.
  auto naks = w.Where([](const Frame& f) { return f.from == kB && IsSeqNak(f); });
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].psn, lost);
  // The requester resends the lost packet alone, asking for an answer.
  auto resent = w.Where([&](const Frame& f) { return f.from == kA && f.t > naks[0].t; });
  ASSERT_EQ(resent.size(), 1u);
  EXPECT_EQ(resent[0].psn, lost);
  EXPECT_TRUE(resent[0].ack_req);
  for (uint32_t i = 0; i < 10; i++)
    EXPECT_EQ(w.Count([&](const Frame& f) { return FromAWithPsn(f, PsnAdd(base, i)); }), i == 3 ? 2u : 1u) << i;
  // Its answer acknowledges the whole message.
  auto acks = w.Where([&](const Frame& f) { return f.from == kB && IsAck(f) && f.t > resent[0].t; });
  ASSERT_GE(acks.size(), 1u);
  EXPECT_EQ(acks[0].psn, PsnAdd(base, 9));

  EXPECT_EQ(p.a.qp->counters.retransmits, 1u);
  EXPECT_EQ(p.a.qp->counters.retransmit_bytes, 256u);
  EXPECT_EQ(p.a.qp->counters.repairs, 1u);
  EXPECT_EQ(p.a.qp->counters.repair_go_back, 0u);
  EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
  EXPECT_EQ(p.b.qp->counters.seq_naks_sent, 1u);
  EXPECT_EQ(p.b.qp->counters.ooo_kept, 6u);
  EXPECT_EQ(p.b.qp->counters.ooo_executed, 6u);
  EXPECT_EQ(p.b.qp->counters.duplicates, 0u);
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
  EXPECT_EQ(p.b.qp->state(), QpState::kRts);
}

// The same loss against a go-back-N responder (keeps nothing past a gap, as
// rxe): the repaired packet is answered by a plain ACK that stops at it, so
// the requester goes back N over what it had sent after it.
TEST(RcRepair, GoBackNResponderCompletesThroughThePlainAckFallback) {
  PairOptions o;
  o.attr.path_mtu = 256;
  o.adjust_tuning = [](bool a_side, QpTuning& t) {
    if (!a_side) t.ooo_window = 0;  // b: a go-back-N responder
  };
  RcPair p(o);
  WireLog w(p.net());
  Buffer src(4096, 1), dst(4096, 2);
  uint32_t base = 0, lost = 0;
  ASSERT_NO_FATAL_FAILURE(SendWithFourthPacketLost(p, w, 5, src, dst, &base, &lost));

  auto naks = w.Where([](const Frame& f) { return f.from == kB && IsSeqNak(f); });
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].psn, lost);
  // First the lost packet alone; b answers it with an ACK for exactly it.
  auto after = w.Where([&](const Frame& f) { return f.from == kA && f.t > naks[0].t; });
  ASSERT_EQ(after.size(), 7u);
  EXPECT_EQ(after[0].psn, lost);
  EXPECT_TRUE(after[0].ack_req);
  auto acks = w.Where([&](const Frame& f) { return f.from == kB && IsAck(f) && f.t > after[0].t; });
  ASSERT_GE(acks.size(), 2u);
  EXPECT_EQ(acks[0].psn, lost);
  // Then go-back-N over the rest, in order, once each.
  for (uint32_t i = 1; i < 7; i++) {
    EXPECT_EQ(after[i].psn, PsnAdd(lost, i)) << i;
    EXPECT_GT(after[i].t, acks[0].t) << i;
  }
  EXPECT_EQ(acks.back().psn, PsnAdd(base, 9));

  EXPECT_EQ(p.a.qp->counters.repairs, 1u);
  EXPECT_EQ(p.a.qp->counters.repair_go_back, 1u);
  EXPECT_EQ(p.a.qp->counters.retransmits, 7u);
  EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
  EXPECT_EQ(p.b.qp->counters.ooo_kept, 0u);
  EXPECT_EQ(p.b.qp->counters.out_of_sequence, 6u);
  EXPECT_EQ(p.b.qp->counters.seq_naks_sent, 1u);
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
}

// Default tuning, but the peer is not known to be this stack (QpAttr::
// peer_repairs false, as the CM sets it towards rxe or hardware): plain
// go-back-N both ways — the responder keeps nothing, the requester resends
// everything from the gap at once, and no ACK jumps past a resend pass.
TEST(RcRepair, OnlyTowardsAPeerThatRepairs) {
  PairOptions o;
  o.attr.path_mtu = 256;
  o.adjust = [](bool, QpAttr& at) { at.peer_repairs = false; };
  RcPair p(o);
  WireLog w(p.net());
  Buffer src(4096, 1), dst(4096, 2);
  uint32_t base = 0, lost = 0;
  ASSERT_NO_FATAL_FAILURE(SendWithFourthPacketLost(p, w, 7, src, dst, &base, &lost));

  auto naks = w.Where([](const Frame& f) { return f.from == kB && IsSeqNak(f); });
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].psn, lost);
  // The seven packets from the gap on go again back to back, before any ACK.
  auto after = w.Where([&](const Frame& f) { return f.from == kA && f.t > naks[0].t; });
  ASSERT_EQ(after.size(), 7u);
  auto acks = w.Where([&](const Frame& f) { return f.from == kB && IsAck(f) && f.t > naks[0].t; });
  ASSERT_GE(acks.size(), 1u);
  for (uint32_t i = 0; i < 7; i++) {
    EXPECT_EQ(after[i].psn, PsnAdd(lost, i)) << i;
    EXPECT_LT(after[i].t, acks[0].t) << i;
  }
  EXPECT_EQ(acks.back().psn, PsnAdd(base, 9));
  EXPECT_EQ(p.a.qp->counters.repairs, 0u);
  EXPECT_EQ(p.a.qp->counters.retransmits, 7u);
  EXPECT_EQ(p.b.qp->counters.ooo_kept, 0u);
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
}

// Requests of every kind kept behind a lost first packet: once it is
// repaired they execute in PSN order, each exactly once — Sends consume
// receives in order, the Write with immediate completes between them, the
// Read is answered after the Sends before it — and nothing kept is resent.
TEST(RcRepair, KeptRequestsExecuteInOrderExactlyOnceWhenTheGapIsFilled) {
  PairOptions o;
  o.attr.path_mtu = 256;
  RcPair p(o);
  WireLog w(p.net());
  Buffer src(4096, 1), recv(4096, 2), target(4096, 3), sink(1024, 4);
  src.Fill(7);
  target.Fill(9);
  auto sr = p.a.Register(src, 0);
  auto kr = p.a.Register(sink, mem::kLocalWrite);
  auto rr = p.b.Register(recv, mem::kLocalWrite);
  auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteWrite | mem::kRemoteRead);
  Sge r[4];
  for (uint32_t i = 0; i < 4; i++) {
    r[i] = Sge{recv.addr() + 1024 * i, 1024, rr.local_token};
    ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100 + i, &r[i], 1)), PostResult::kOk);
  }
  const uint32_t base = p.a.qp->next_psn();
  // Its first packet (the first Send) is lost once.
  w.drop = DropFirst([&](const Frame& f) { return FromAWithPsn(f, base); });
  Sge s1{src.addr(), 200, sr.local_token};           // Send, 1 packet
  Sge s2{src.addr() + 256, 600, sr.local_token};     // Write with immediate, 3 packets
  Sge s3{src.addr() + 1024, 300, sr.local_token};    // Send, 2 packets
  Sge ks{sink.addr(), 512, kr.local_token};          // Read of what the Write wrote
  Sge s5{src.addr() + 2048, 100, sr.local_token};    // Send, 1 packet
  SendWr wi = MakeRdma(2, WrOp::kWriteWithImm, &s2, 1, target.addr(), tr.remote_token);
  wi.imm = 0x1234;
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, &s1, 1)), PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(wi), PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(3, &s3, 1)), PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(4, WrOp::kRead, &ks, 1, target.addr(), tr.remote_token)),
            PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(5, &s5, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 5));
  p.RunIdle();

  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess},
                                     {2, Status::kSuccess},
                                     {3, Status::kSuccess},
                                     {4, Status::kSuccess},
                                     {5, Status::kSuccess}});
  auto rc = p.b.PollRecv();
  ExpectCompletions(rc, {{100, Status::kSuccess}, {101, Status::kSuccess}, {102, Status::kSuccess},
                         {103, Status::kSuccess}});
  EXPECT_EQ(rc[0].bytes, 200u);
  EXPECT_EQ(rc[1].imm, 0x1234u);  // the Write with immediate, between the Sends
  EXPECT_EQ(rc[2].bytes, 300u);
  EXPECT_EQ(rc[3].bytes, 100u);
  EXPECT_EQ(0, std::memcmp(recv.data(), src.data(), 200));
  EXPECT_EQ(0, std::memcmp(recv.data() + 2048, src.data() + 1024, 300));
  EXPECT_EQ(0, std::memcmp(recv.data() + 3072, src.data() + 2048, 100));
  EXPECT_EQ(0, std::memcmp(target.data(), src.data() + 256, 600));
  // The Read saw the Write before it (executed in order, not when it came).
  EXPECT_EQ(0, std::memcmp(sink.data(), src.data() + 256, 512));
  EXPECT_TRUE(recv.GuardsIntact());
  EXPECT_TRUE(sink.GuardsIntact());

  // Only the lost packet went twice; the Read request went once.
  EXPECT_EQ(p.a.qp->counters.retransmits, 1u);
  EXPECT_EQ(w.Op(kA, op::kRcReadRequest).size(), 1u);
  // 3 + 2 packets, the Read request and the last Send kept, all executed.
  EXPECT_EQ(p.b.qp->counters.ooo_kept, 7u);
  EXPECT_EQ(p.b.qp->counters.ooo_executed, 7u);
  EXPECT_EQ(p.b.qp->counters.duplicates, 0u);
  EXPECT_EQ(p.b.qp->counters.read_replays, 0u);
  EXPECT_EQ(p.b.qp->counters.seq_naks_sent, 1u);
}

// The responder keeps at most ooo_window PSNs past the gap. What came
// beyond that was dropped; once the gap is filled the responder says so with
// a sequence NAK for the first of them (not an ACK, which would read as "the
// rest is on its way"), and the requester repairs on from there: the message
// completes with no timeout and nothing kept sent twice.
TEST(RcRepair, KeptRequestCapReached) {
  PairOptions o;
  o.attr.path_mtu = 256;
  o.adjust_tuning = [](bool a_side, QpTuning& t) {
    if (!a_side) t.ooo_window = 8;
  };
  RcPair p(o);
  WireLog w(p.net());
  Buffer src(8192, 1), dst(8192, 2);
  src.Fill(11);
  auto sr = p.a.Register(src, 0);
  auto dr = p.b.Register(dst, mem::kLocalWrite);
  Sge r0{dst.addr(), 8192, dr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &r0, 1)), PostResult::kOk);

  const uint32_t base = p.a.qp->next_psn();
  const uint32_t lost = PsnAdd(base, 1);
  w.drop = DropFirst([&](const Frame& f) { return FromAWithPsn(f, lost); });
  Sge s{src.addr(), 20 * 256, sr.local_token};  // 20 packets
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, &s, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  p.RunIdle();

  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}});
  auto rc = p.b.PollRecv();
  ExpectCompletions(rc, {{100, Status::kSuccess}});
  EXPECT_EQ(rc[0].bytes, 20u * 256);
  EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), 20 * 256));
  EXPECT_TRUE(dst.GuardsIntact());

  // base+2 .. base+8 kept (7 PSNs past the gap: less than the window of 8),
  // base+9 .. base+19 dropped.
  EXPECT_EQ(p.b.qp->counters.ooo_kept, 7u);
  EXPECT_EQ(p.b.qp->counters.ooo_executed, 7u);
  EXPECT_EQ(p.b.qp->counters.out_of_sequence, 18u);
  // The first NAK names the lost packet, the next one the first not kept.
  auto naks = w.Where([](const Frame& f) { return f.from == kB && IsSeqNak(f); });
  ASSERT_GE(naks.size(), 2u);
  EXPECT_EQ(naks[0].psn, lost);
  EXPECT_EQ(naks[1].psn, PsnAdd(base, 9));
  // Nothing kept went twice, nothing before the gap either.
  for (uint32_t i = 0; i < 9; i++)
    EXPECT_EQ(w.Count([&](const Frame& f) { return FromAWithPsn(f, PsnAdd(base, i)); }), i == 1 ? 2u : 1u) << i;
  // The dropped ones went exactly twice.
  for (uint32_t i = 9; i < 20; i++)
    EXPECT_EQ(w.Count([&](const Frame& f) { return FromAWithPsn(f, PsnAdd(base, i)); }), 2u) << i;
  EXPECT_EQ(p.a.qp->counters.retransmits, 12u);
  EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
  EXPECT_EQ(p.b.qp->state(), QpState::kRts);
}

// The repaired packet is corrupted on its way (the responder drops it on its
// ICRC): no answer within the repair hold, so it goes again; then a copy of
// it arrives late, after it was executed: a duplicate, acknowledged again
// and not executed twice.
TEST(RcRepair, CorruptAndDuplicateRepairedPacket) {
  PairOptions o;
  o.attr.path_mtu = 256;
  RcPair p(o);
  WireLog w(p.net());
  Buffer src(4096, 1), dst(4096, 2);
  src.Fill(13);
  auto sr = p.a.Register(src, 0);
  auto dr = p.b.Register(dst, mem::kLocalWrite);
  Sge r0{dst.addr(), 2048, dr.local_token}, r1{dst.addr() + 2048, 2048, dr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &r0, 1)), PostResult::kOk);
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(101, &r1, 1)), PostResult::kOk);

  const uint32_t base = p.a.qp->next_psn();
  const uint32_t lost = PsnAdd(base, 2);
  int seen = 0;
  std::vector<uint8_t> copy;
  w.modify = [&](const Frame& f, std::vector<uint8_t>& frame) {
    if (!FromAWithPsn(f, lost)) return;
    ++seen;
    if (seen == 2) frame[frame.size() / 2] ^= 0x10;  // the first repair: corrupted
    if (seen == 3) copy = frame;                      // the second: a copy kept for later
  };
  w.drop = DropFirst([&](const Frame& f) { return FromAWithPsn(f, lost); });  // the original
  Sge s{src.addr(), 6 * 256, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, &s, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  p.RunIdle();
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}});
  EXPECT_EQ(seen, 3);
  EXPECT_EQ(p.b.node->dev().counters.IcrcErrors(), 1u);
  EXPECT_EQ(p.a.qp->counters.repairs, 2u);
  EXPECT_EQ(p.a.qp->counters.retransmits, 2u);
  EXPECT_EQ(p.a.qp->counters.repair_go_back, 0u);
  EXPECT_EQ(p.a.qp->counters.timeouts, 0u);

  // The late copy of the repaired packet.
  ASSERT_FALSE(copy.empty());
  const uint64_t acks_before = p.b.qp->counters.acks_sent;
  EXPECT_EQ(p.b.node->dev().OnFrame(wire::ByteSpan(copy.data(), copy.size()), p.net().now()), wire::Error::kOk);
  p.RunIdle();
  EXPECT_EQ(p.b.qp->counters.duplicates, 1u);
  EXPECT_EQ(p.b.qp->counters.acks_sent, acks_before + 1);  // it asked for an answer

  // Then a second message: the receive it takes is the next one, so the
  // first message completed exactly once.
  Sge s2{src.addr() + 2048, 100, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(2, &s2, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  p.RunIdle();
  ExpectCompletions(p.a.PollSend(), {{2, Status::kSuccess}});
  auto rc = p.b.PollRecv();
  ExpectCompletions(rc, {{100, Status::kSuccess}, {101, Status::kSuccess}});
  EXPECT_EQ(rc[0].bytes, 6u * 256);
  EXPECT_EQ(rc[1].bytes, 100u);
  EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), 6 * 256));
  EXPECT_EQ(0, std::memcmp(dst.data() + 2048, src.data() + 2048, 100));
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
  EXPECT_EQ(p.b.qp->state(), QpState::kRts);
}

// A repair across the 24-bit PSN wrap.
TEST(RcRepair, RepairAcrossThePsnWrap) {
  PairOptions o;
  o.attr.path_mtu = 256;
  o.a_psn = 0xFFFFFC;
  RcPair p(o);
  WireLog w(p.net());
  Buffer src(4096, 1), dst(4096, 2);
  src.Fill(17);
  auto sr = p.a.Register(src, 0);
  auto dr = p.b.Register(dst, mem::kLocalWrite);
  Sge r0{dst.addr(), 4096, dr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &r0, 1)), PostResult::kOk);
  const uint32_t lost = PsnAdd(0xFFFFFC, 3);  // 0xFFFFFF, the last before the wrap
  w.drop = DropFirst([&](const Frame& f) { return FromAWithPsn(f, lost); });
  Sge s{src.addr(), 8 * 256, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, &s, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  p.RunIdle();
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}});
  ExpectCompletions(p.b.PollRecv(), {{100, Status::kSuccess}});
  EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), 8 * 256));
  EXPECT_EQ(p.a.qp->counters.retransmits, 1u);
  EXPECT_EQ(p.b.qp->counters.ooo_kept, 4u);
  EXPECT_EQ(p.b.qp->counters.ooo_executed, 4u);
}

}  // namespace
}  // namespace roce::rc::testing
