// SPDX-License-Identifier: MIT
// Every NAK kind, seen from both sides: what the responder puts on the wire
// (syndrome, PSN, MSN), its counters and receive completions, and what the
// requester does with it (go-back-N, RNR wait in virtual time, or failing the
// request and flushing the rest). Also retry and RNR-retry exhaustion.
#include <string>
#include <utility>
#include <vector>

#include <absl/strings/str_format.h>

#include "tests/rc/rc_wire.h"

namespace roce::rc::testing {
namespace {

// ---- PSN sequence error -------------------------------------------------------

// Both sides go-back-N (the IBTA's minimum, as rxe): selective repair has
// its own tests (rc_repair_test.cc).
TEST(RcNak, SequenceErrorOneNakThenSilentDropThenGoBackN) {
  PairOptions o;
  o.attr.path_mtu = 256;
  GoBackN(o.tuning);
  RcPair p(o);
  WireLog w(p.net());
  Buffer src(4096, 1), dst(8192, 2);
  src.Fill(3);
  auto sr = p.a.Register(src, 0);
  auto dr = p.b.Register(dst, mem::kLocalWrite);
  Sge r0{dst.addr(), 4096, dr.local_token}, r1{dst.addr() + 4096, 4096, dr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &r0, 1)), PostResult::kOk);
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(101, &r1, 1)), PostResult::kOk);

  // A first message, so that the NAK has a non-zero MSN to carry.
  Sge s0{src.addr(), 16, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, &s0, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));

  // Then a 10-packet Send whose 4th packet is lost once.
  const uint32_t base = p.a.qp->next_psn();
  const uint32_t lost = PsnAdd(base, 3);
  w.drop = DropFirst([&](const Frame& f) { return f.from == kA && f.psn == lost; });
  Sge s1{src.addr(), 2560, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(2, &s1, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 2));
  p.RunIdle();

  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}, {2, Status::kSuccess}});
  auto rc = p.b.PollRecv();
  ExpectCompletions(rc, {{100, Status::kSuccess}, {101, Status::kSuccess}});
  EXPECT_EQ(rc[1].bytes, 2560u);
  EXPECT_EQ(0, memcmp(dst.data() + 4096, src.data(), 2560));
  EXPECT_TRUE(dst.GuardsIntact());

  // Exactly one sequence NAK, naming the lost PSN, with the MSN of the one
  // completed message.
  auto naks = w.Where([](const Frame& f) { return f.from == kB && IsNak(f, syn::kNakPsnSeqError); });
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].psn, lost);
  EXPECT_EQ(naks[0].msn, 1u);
  EXPECT_EQ(naks[0].dest_qp, p.a.qp->qpn());
  // Silent drop: b sends nothing else until the lost PSN arrives again.
  auto resend = w.Where([&](const Frame& f) { return f.from == kA && f.psn == lost && !f.dropped; });
  ASSERT_EQ(resend.size(), 1u);
  EXPECT_EQ(w.Count([&](const Frame& f) {
              return f.from == kB && f.t > naks[0].t && f.t <= resend[0].t;
            }),
            0u);
  // Go-back-N from the NAKed PSN: after the NAK, a sends lost .. base+9 once
  // each, in order, and nothing before the lost PSN again.
  auto after = w.Where([&](const Frame& f) { return f.from == kA && f.t > naks[0].t; });
  ASSERT_EQ(after.size(), 7u);
  for (uint32_t i = 0; i < 7; i++) EXPECT_EQ(after[i].psn, PsnAdd(lost, i)) << i;
  for (uint32_t i = 0; i < 3; i++)
    EXPECT_EQ(w.Count([&](const Frame& f) { return f.from == kA && f.psn == PsnAdd(base, i); }), 1u);

  // Counters on both sides.
  EXPECT_EQ(p.b.qp->counters.seq_naks_sent, 1u);
  EXPECT_EQ(p.b.qp->counters.out_of_sequence, 6u);  // base+4 .. base+9 of the first pass
  EXPECT_EQ(p.b.qp->counters.duplicates, 0u);
  EXPECT_EQ(p.a.qp->counters.seq_naks_received, 1u);
  EXPECT_EQ(p.a.qp->counters.retransmits, 7u);
  EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
  EXPECT_EQ(p.b.qp->state(), QpState::kRts);
  EXPECT_EQ(p.b.qp->expected_psn(), PsnAdd(base, 10));
}

// ---- RNR --------------------------------------------------------------------

TEST(RcNak, TimerCodesMatchIbta) {
  // IBTA vol 1 table 45 (RNR NAK timer field), in microseconds.
  const double us[32] = {655360, 10,    20,    30,    40,    60,    80,    120,
                         160,    240,   320,   480,   640,   960,   1280,  1920,
                         2560,   3840,  5120,  7680,  10240, 15360, 20480, 30720,
                         40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520};
  for (uint8_t c = 0; c < 32; c++) EXPECT_EQ(RnrTimerNs(c), static_cast<uint64_t>(us[c] * 1000)) << int{c};
  // Local ACK timeout: 4.096 us * 2^code, 0 = none.
  EXPECT_EQ(AckTimeoutNs(0), 0u);
  EXPECT_EQ(AckTimeoutNs(1), 8192u);
  EXPECT_EQ(AckTimeoutNs(14), 67'108'864u);
  EXPECT_EQ(AckTimeoutNs(31), 4096ull << 31);
}

TEST(RcNak, RnrNakCarriesResponderTimerAndRequesterWaitsIt) {
  // IBTA RNR timer table: code 1 = 0.01 ms, code 14 = 1.28 ms.
  for (auto [code, wait] : {std::pair<uint8_t, uint64_t>{1, 10'000}, {14, 1'280'000}}) {
    SCOPED_TRACE(::testing::Message() << "min_rnr_timer code " << int{code});
    EXPECT_EQ(RnrTimerNs(code), wait);
    PairOptions o;
    o.adjust = [&](bool a_side, QpAttr& at) {
      // Only the responder's code counts; give a a different one to prove it.
      at.min_rnr_timer = a_side ? 31 : code;
    };
    RcPair p(o);
    WireLog w(p.net());
    Buffer src(256, 1), dst(256, 2);
    src.Fill(5);
    auto sr = p.a.Register(src, 0);
    auto dr = p.b.Register(dst, mem::kLocalWrite);
    Sge ss{src.addr(), 200, sr.local_token};
    ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, &ss, 1)), PostResult::kOk);
    // No receive yet: run until b has refused it three times.
    ASSERT_TRUE(p.net().RunUntil([&] { return p.b.qp->counters.rnr_naks_sent >= 3; },
                                 p.net().now() + 1'000'000'000));
    Sge rs{dst.addr(), 256, dr.local_token};
    ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(9, &rs, 1)), PostResult::kOk);
    ASSERT_TRUE(p.RunForSend(p.a, 1));
    ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}});
    ExpectCompletions(p.b.PollRecv(), {{9, Status::kSuccess}});
    EXPECT_EQ(0, memcmp(src.data(), dst.data(), 200));

    auto rnr = w.Where(IsRnrNak);
    auto sends = w.Op(kA, op::kRcSendOnly);
    ASSERT_GE(rnr.size(), 3u);
    ASSERT_EQ(sends.size(), rnr.size() + 1);
    for (size_t i = 0; i < rnr.size(); i++) {
      EXPECT_EQ(rnr[i].from, kB);
      EXPECT_EQ(rnr[i].syndrome, syn::Rnr(code));
      EXPECT_EQ(rnr[i].psn, sends[0].psn);
      EXPECT_EQ(rnr[i].msn, 0u);
      EXPECT_EQ(sends[i + 1].psn, sends[0].psn);
      // The retry leaves the RNR timer after the NAK reached a (1 us link).
      const uint64_t gap = sends[i + 1].t - rnr[i].t;
      EXPECT_GE(gap, wait) << i;
      EXPECT_LE(gap, wait + 2'000) << i;
    }
    EXPECT_EQ(p.b.qp->counters.rnr_naks_sent, rnr.size());
    EXPECT_EQ(p.a.qp->counters.rnr_naks_received, rnr.size());
    EXPECT_EQ(p.a.qp->counters.retransmits, rnr.size());
    EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
    EXPECT_EQ(p.a.qp->state(), QpState::kRts);
    EXPECT_EQ(p.b.qp->state(), QpState::kRts);
  }
}

TEST(RcNak, RnrRetry7IsInfinite) {
  PairOptions o;
  o.attr.rnr_retry = 7;
  o.attr.min_rnr_timer = 1;  // 10 us
  RcPair p(o);
  WireLog w(p.net());
  Buffer src(64, 1), dst(64, 2);
  auto sr = p.a.Register(src, 0);
  auto dr = p.b.Register(dst, mem::kLocalWrite);
  Sge ss{src.addr(), 64, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, &ss, 1)), PostResult::kOk);
  // Far more than 7 refusals: the requester keeps trying.
  ASSERT_TRUE(p.net().RunUntil([&] { return p.b.qp->counters.rnr_naks_sent >= 40; },
                               p.net().now() + 1'000'000'000));
  EXPECT_EQ(p.a.scq->size(), 0u);
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
  Sge rs{dst.addr(), 64, dr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(9, &rs, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}});
  ExpectCompletions(p.b.PollRecv(), {{9, Status::kSuccess}});
  EXPECT_GE(p.a.qp->counters.rnr_naks_received, 40u);
  EXPECT_EQ(w.Count(IsRnrNak), p.b.qp->counters.rnr_naks_sent);
}

TEST(RcNak, RnrRetryExhaustedTimesOutAndPeerSeesNothing) {
  PairOptions o;
  o.attr.rnr_retry = 3;
  o.attr.min_rnr_timer = 1;  // 10 us
  std::vector<std::string> fatal;
  o.fatal_hook = [&fatal](const QueuePair& qp, const char* why) {
    fatal.push_back(std::string(why) + ": " + qp.DebugState());
  };
  RcPair p(o);
  WireLog w(p.net());
  Buffer src(512, 1), recv(512, 2), target(512, 3);
  src.Fill(1);
  auto sr = p.a.Register(src, 0);
  auto rr = p.b.Register(recv, mem::kLocalWrite);
  auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteWrite);
  const auto recv_before = Snapshot(recv), target_before = Snapshot(target);
  const uint32_t psn0 = p.a.qp->next_psn();
  const uint64_t t0 = p.net().now();
  Sge ss{src.addr(), 100, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, &ss, 1)), PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(2, WrOp::kWrite, &ss, 1, target.addr(), tr.remote_token)),
            PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(3, &ss, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 3));
  const uint64_t tc = p.net().now();
  ExpectCompletions(p.a.PollSend(), {{1, Status::kIoTimeout, Cause::kRnrRetryExceeded},
                                     {2, Status::kCanceled, Cause::kFlushed},
                                     {3, Status::kCanceled, Cause::kFlushed}});
  EXPECT_EQ(p.a.qp->state(), QpState::kError);
  // 1 + rnr_retry transmissions of the Send, each refused.
  EXPECT_EQ(w.Count([&](const Frame& f) { return f.from == kA && f.psn == psn0; }), 4u);
  auto rnr = w.Where(IsRnrNak);
  ASSERT_EQ(rnr.size(), 4u);
  for (const Frame& f : rnr) {
    EXPECT_EQ(f.psn, psn0);
    EXPECT_EQ(f.syndrome, syn::Rnr(1));
  }
  EXPECT_EQ(p.a.qp->counters.rnr_naks_received, 4u);
  EXPECT_EQ(p.b.qp->counters.rnr_naks_sent, 4u);
  ASSERT_EQ(fatal.size(), 1u);  // a's QP only: b's lives on
  EXPECT_EQ(fatal[0].rfind(absl::StrFormat("rnr-retries-exhausted: qpn=%06x ", p.a.qp->qpn()), 0), 0u) << fatal[0];
  EXPECT_NE(fatal[0].find(" rnr_naks_received=4"), std::string::npos) << fatal[0];
  // Three RNR waits of 10 us (plus link time) before the fourth NAK fails it.
  EXPECT_GE(tc - t0, 3 * 10'000u);  // code 1 = 10 us
  EXPECT_LE(tc - t0, 3 * 10'000u + 4 * 3'000);

  // The peer saw nothing: no completion, no bytes, its QP still running and
  // still expecting the same PSN; the Write behind the refused Send was
  // dropped as out of sequence, not executed.
  p.RunIdle();
  EXPECT_EQ(p.b.rcq->size(), 0u);
  EXPECT_EQ(p.b.qp->state(), QpState::kRts);
  EXPECT_EQ(p.b.qp->expected_psn(), psn0);
  EXPECT_TRUE(SameBytes(target, target_before));
  // A receive posted now stays posted: nothing more arrives and nothing is written.
  Sge rs{recv.addr(), 512, rr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(9, &rs, 1)), PostResult::kOk);
  // Anything a posts now is flushed at once and never reaches the wire.
  const size_t frames = w.frames.size();
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(4, &ss, 1)), PostResult::kOk);
  p.RunIdle();
  ExpectCompletions(p.a.PollSend(), {{4, Status::kCanceled, Cause::kFlushed}});
  EXPECT_EQ(w.frames.size(), frames);
  EXPECT_EQ(p.b.rcq->size(), 0u);
  EXPECT_TRUE(SameBytes(recv, recv_before));
}

// A multi-packet Write with immediate needs a receive only at its LAST
// packet: the RNR NAK names that PSN and the retry resends only it.
TEST(RcNak, RnrOnLastPacketOfWriteWithImmediate) {
  PairOptions o;
  o.attr.path_mtu = 256;
  o.attr.min_rnr_timer = 1;
  RcPair p(o);
  WireLog w(p.net());
  Buffer src(1024, 1), target(1024, 2);
  src.Fill(8);
  auto sr = p.a.Register(src, 0);
  auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteWrite);
  const uint32_t psn0 = p.a.qp->next_psn();
  Sge ss{src.addr(), 1000, sr.local_token};  // 4 packets
  SendWr wr = MakeRdma(1, WrOp::kWriteWithImm, &ss, 1, target.addr(), tr.remote_token);
  wr.imm = 0x01020304;
  ASSERT_EQ(p.a.qp->PostSend(wr), PostResult::kOk);
  ASSERT_TRUE(p.net().RunUntil([&] { return p.b.qp->counters.rnr_naks_sent >= 1; },
                               p.net().now() + 1'000'000));
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(9, nullptr, 0)), PostResult::kOk);  // a Write's immediate needs no buffer
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}});
  auto rc = p.b.PollRecv();
  ExpectCompletions(rc, {{9, Status::kSuccess}});
  EXPECT_TRUE(rc[0].with_imm);
  EXPECT_EQ(rc[0].imm, 0x01020304u);
  EXPECT_EQ(rc[0].bytes, 1000u);
  EXPECT_EQ(0, memcmp(target.data(), src.data(), 1000));
  auto rnr = w.Where(IsRnrNak);
  ASSERT_GE(rnr.size(), 1u);
  EXPECT_EQ(rnr[0].psn, PsnAdd(psn0, 3));
  // Each PSN of the first three packets went out once; the LAST once per try.
  for (uint32_t i = 0; i < 3; i++)
    EXPECT_EQ(w.Count([&](const Frame& f) { return f.from == kA && f.psn == PsnAdd(psn0, i); }), 1u);
  EXPECT_EQ(w.Op(kA, op::kRcWriteLastImm).size(), rnr.size() + 1);
}

// ---- fatal NAKs -----------------------------------------------------------------

TEST(RcNak, InvalidRequestOnOpcodeSequenceViolation) {
  PairOptions o;
  o.attr.path_mtu = 256;
  RcPair p(o);
  WireLog w(p.net());
  // SEND_FIRST rewritten to SEND_MIDDLE: a middle packet with no message open.
  const uint32_t psn0 = p.a.qp->next_psn();
  w.modify = [&](const Frame& f, std::vector<uint8_t>& frame) {
    if (f.from == kA && f.psn == psn0 && f.opcode == op::kRcSendFirst) {
      ASSERT_TRUE(WireLog::Rewrite(frame, [](wire::RocePacket& pk) { pk.bth.opcode = op::kRcSendMiddle; }));
    }
  };
  Buffer src(1024, 1), dst(2048, 2);
  src.Fill(2);
  auto sr = p.a.Register(src, 0);
  auto dr = p.b.Register(dst, mem::kLocalWrite);
  const auto before = Snapshot(dst);
  Sge r0{dst.addr(), 1024, dr.local_token}, r1{dst.addr() + 1024, 1024, dr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &r0, 1)), PostResult::kOk);
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(101, &r1, 1)), PostResult::kOk);
  Sge ss{src.addr(), 512, sr.local_token};  // 2 packets: FIRST, LAST
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, &ss, 1)), PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(2, &ss, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 2));
  p.RunIdle();

  ASSERT_EQ(w.Op(kA, op::kRcSendMiddle).size(), 1u);  // the rewrite reached the wire
  auto naks = w.Where([](const Frame& f) { return f.from == kB && f.opcode == op::kRcAck; });
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].syndrome, syn::Nak(syn::kNakInvalidRequest));
  EXPECT_EQ(naks[0].psn, psn0);
  EXPECT_EQ(naks[0].msn, 0u);
  ExpectCompletions(p.a.PollSend(), {{1, Status::kDataError, Cause::kRemoteInvalidRequest},
                                     {2, Status::kCanceled, Cause::kFlushed}});
  ExpectCompletions(p.b.PollRecv(), {{100, Status::kCanceled}, {101, Status::kCanceled}});
  EXPECT_EQ(p.b.qp->counters.invalid_naks_sent, 1u);
  EXPECT_EQ(p.a.qp->counters.invalid_naks_received, 1u);
  EXPECT_EQ(p.a.qp->state(), QpState::kError);
  EXPECT_EQ(p.b.qp->state(), QpState::kError);
  EXPECT_TRUE(SameBytes(dst, before));
}

// A Send larger than the posted receive: the receive completes
// BUFFER_OVERFLOW, the sender DATA_ERROR (invalid request NAK), both QPs go
// to Error, nothing is written outside the receive's SGEs.
void ReceiveTooSmall(uint32_t mtu, uint32_t recv_len, uint32_t send_len, uint32_t nak_pkt) {
  PairOptions o;
  o.attr.path_mtu = mtu;
  RcPair p(o);
  WireLog w(p.net());
  Buffer src(8192, 1), dst(8192, 2);
  src.Fill(4);
  auto sr = p.a.Register(src, 0);
  auto dr = p.b.Register(dst, mem::kLocalWrite);
  const auto before = Snapshot(dst);
  const uint64_t off = 512;
  Sge r0{dst.addr() + off, recv_len, dr.local_token};
  Sge r1{dst.addr() + 6000, 1000, dr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &r0, 1)), PostResult::kOk);
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(101, &r1, 1)), PostResult::kOk);
  const uint32_t psn0 = p.a.qp->next_psn();
  Sge ss{src.addr(), send_len, sr.local_token};
  Sge small{src.addr(), 10, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, &ss, 1)), PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(2, &small, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 2));
  p.RunIdle();

  ExpectCompletions(p.a.PollSend(), {{1, Status::kDataError, Cause::kRemoteInvalidRequest},
                                     {2, Status::kCanceled, Cause::kFlushed}});
  ExpectCompletions(p.b.PollRecv(), {{100, Status::kBufferOverflow, Cause::kLocalLength},
                                     {101, Status::kCanceled, Cause::kFlushed}});
  auto naks = w.Where([](const Frame& f) { return f.from == kB && f.opcode == op::kRcAck; });
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].syndrome, syn::Nak(syn::kNakInvalidRequest));
  EXPECT_EQ(naks[0].psn, PsnAdd(psn0, nak_pkt));
  EXPECT_EQ(p.b.qp->counters.invalid_naks_sent, 1u);
  EXPECT_EQ(p.a.qp->counters.invalid_naks_received, 1u);
  EXPECT_EQ(p.a.qp->state(), QpState::kError);
  EXPECT_EQ(p.b.qp->state(), QpState::kError);
  // Outside the receive buffer: untouched (before it, after it, the second
  // receive that was flushed, and the guard zones).
  EXPECT_EQ(0, memcmp(dst.data(), before.data(), off));
  EXPECT_EQ(0, memcmp(dst.data() + off + recv_len, before.data() + off + recv_len,
                      dst.size() - off - recv_len));
  EXPECT_TRUE(dst.GuardsIntact());
  // Whatever did land is a prefix of the message.
  for (uint32_t i = 0; i < recv_len; i++) {
    if (dst.data()[off + i] != before[off + i]) {
      EXPECT_EQ(dst.data()[off + i], src.data()[i]) << i;
    }
  }
}

TEST(RcNak, ReceiveTooSmallSinglePacket) { ReceiveTooSmall(1024, 50, 100, 0); }
TEST(RcNak, ReceiveTooSmallFailsOnThirdPacket) { ReceiveTooSmall(1024, 2500, 3000, 2); }
TEST(RcNak, ReceiveTooSmallByOneByte) { ReceiveTooSmall(256, 1023, 1024, 3); }

TEST(RcNak, RemoteOperationalErrorOnBadReceiveToken) {
  RcPair p;
  WireLog w(p.net());
  Buffer src(256, 1), dst(1024, 2);
  src.Fill(6);
  auto sr = p.a.Register(src, 0);
  auto dr = p.b.Register(dst, mem::kLocalWrite);
  const auto before = Snapshot(dst);
  Sge bad{dst.addr(), 256, dr.local_token ^ 0x5};  // right index, wrong key
  Sge good{dst.addr() + 512, 256, dr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &bad, 1)), PostResult::kOk);
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(101, &good, 1)), PostResult::kOk);
  const uint32_t psn0 = p.a.qp->next_psn();
  Sge ss{src.addr(), 100, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, &ss, 1)), PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(2, &ss, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 2));
  p.RunIdle();
  ExpectCompletions(p.a.PollSend(), {{1, Status::kRemoteError, Cause::kRemoteOperational},
                                     {2, Status::kCanceled, Cause::kFlushed}});
  ExpectCompletions(p.b.PollRecv(), {{100, Status::kAccessViolation, Cause::kLocalProtection},
                                     {101, Status::kCanceled, Cause::kFlushed}});
  auto naks = w.Where([](const Frame& f) { return f.from == kB && f.opcode == op::kRcAck; });
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].syndrome, syn::Nak(syn::kNakRemoteOperational));
  EXPECT_EQ(naks[0].psn, psn0);
  EXPECT_EQ(p.b.qp->counters.op_naks_sent, 1u);
  EXPECT_EQ(p.a.qp->counters.op_naks_received, 1u);
  EXPECT_EQ(p.a.qp->state(), QpState::kError);
  EXPECT_EQ(p.b.qp->state(), QpState::kError);
  EXPECT_TRUE(SameBytes(dst, before));
}

TEST(RcNak, RemoteAccessErrorBothSides) {
  RcPair p;
  WireLog w(p.net());
  Buffer src(256, 1), target(1024, 2), recv(256, 3);
  src.Fill(6);
  auto sr = p.a.Register(src, 0);
  auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteWrite);
  auto rr = p.b.Register(recv, mem::kLocalWrite);
  const auto before = Snapshot(target);
  Sge rs{recv.addr(), 256, rr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &rs, 1)), PostResult::kOk);
  const uint32_t psn0 = p.a.qp->next_psn();
  Sge ss{src.addr(), 100, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kWrite, &ss, 1, target.addr(), tr.remote_token + 1)),
            PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  p.RunIdle();
  ExpectCompletions(p.a.PollSend(), {{1, Status::kAccessViolation, Cause::kRemoteAccess}});
  ExpectCompletions(p.b.PollRecv(), {{100, Status::kCanceled, Cause::kFlushed}});
  auto naks = w.Where([](const Frame& f) { return f.from == kB && f.opcode == op::kRcAck; });
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].syndrome, syn::Nak(syn::kNakRemoteAccess));
  EXPECT_EQ(naks[0].psn, psn0);
  EXPECT_EQ(p.b.qp->counters.access_naks_sent, 1u);
  EXPECT_EQ(p.a.qp->counters.access_naks_received, 1u);
  EXPECT_TRUE(SameBytes(target, before));
}

// ---- transport retries exhausted ----------------------------------------------

TEST(RcNak, RetryExhaustedWithSilentPeer) {
  PairOptions o;
  o.attr.timeout = 10;   // T = 4.096 us * 2^10 = 4.19 ms
  o.attr.retry_cnt = 3;
  std::vector<std::string> fatal;  // the diagnostics hook: once, as the QP fails
  o.fatal_hook = [&fatal](const QueuePair& qp, const char* why) {
    fatal.push_back(std::string(why) + ": " + qp.DebugState());
  };
  RcPair p(o);
  WireLog w(p.net());
  w.drop = [](const Frame& f) { return f.from == kB; };  // b answers, nobody hears it
  Buffer src(256, 1), recv(1024, 2), target(256, 3), sink(256, 4);
  src.Fill(7);
  auto sr = p.a.Register(src, 0);
  auto kr = p.a.Register(sink, mem::kLocalWrite);
  auto rr = p.b.Register(recv, mem::kLocalWrite);
  auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteWrite | mem::kRemoteRead);
  Sge r0{recv.addr(), 512, rr.local_token}, r1{recv.addr() + 512, 512, rr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &r0, 1)), PostResult::kOk);
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(101, &r1, 1)), PostResult::kOk);

  const uint64_t T = 4096ull << 10;  // 4.096 us * 2^timeout
  const uint32_t psn0 = p.a.qp->next_psn();
  const uint64_t t0 = p.net().now();
  Sge ss{src.addr(), 100, sr.local_token}, ks{sink.addr(), 100, kr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, &ss, 1)), PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(2, WrOp::kWrite, &ss, 1, target.addr(), tr.remote_token)),
            PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(3, WrOp::kRead, &ks, 1, target.addr(), tr.remote_token)),
            PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(4, &ss, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 4));
  const uint64_t elapsed = p.net().now() - t0;
  ExpectCompletions(p.a.PollSend(), {{1, Status::kIoTimeout, Cause::kRetryExceeded},
                                     {2, Status::kCanceled, Cause::kFlushed},
                                     {3, Status::kCanceled, Cause::kFlushed},
                                     {4, Status::kCanceled, Cause::kFlushed}});
  EXPECT_EQ(p.a.qp->state(), QpState::kError);
  // retry_cnt retries after the first try, each after a timeout T: the
  // failure comes with the (retry_cnt+1)th expiry.
  EXPECT_GE(elapsed, 4 * T);
  EXPECT_LT(elapsed, 5 * T);
  EXPECT_EQ(p.a.qp->counters.timeouts, 4u);
  // Where it stood, as the hook saw it: nothing acknowledged, every retry
  // spent, four timeouts, all silent.
  ASSERT_EQ(fatal.size(), 1u);
  const std::string st = fatal[0] + " ";  // every field ends with a space
  EXPECT_EQ(st.rfind("retries-exhausted-silent: ", 0), 0u) << st;
  EXPECT_NE(st.find(absl::StrFormat("qpn=%06x ", p.a.qp->qpn())), std::string::npos) << st;
  EXPECT_NE(st.find(absl::StrFormat(" una=%u ", psn0)), std::string::npos) << st;
  EXPECT_NE(st.find(" retry_left=0 "), std::string::npos) << st;
  EXPECT_NE(st.find(" timeouts=4 "), std::string::npos) << st;
  EXPECT_NE(st.find(" silent_timeouts=4 "), std::string::npos) << st;
  // Every retry goes back to the oldest unacknowledged PSN and resends all four.
  EXPECT_EQ(w.Count([&](const Frame& f) { return f.from == kA && f.psn == psn0; }), 4u);
  EXPECT_EQ(w.Count([&](const Frame& f) { return f.from == kA; }), 16u);
  EXPECT_EQ(p.a.qp->counters.retransmits, 12u);
  // b executed each request once and treated the retries as duplicates.
  EXPECT_EQ(p.b.qp->counters.duplicates, 12u);
  ExpectCompletions(p.b.PollRecv(), {{100, Status::kSuccess}, {101, Status::kSuccess}});
  // Posting to the failed QP completes at once, canceled.
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(5, &ss, 1)), PostResult::kOk);
  ExpectCompletions(p.a.PollSend(), {{5, Status::kCanceled, Cause::kFlushed}});
}

}  // namespace
}  // namespace roce::rc::testing
