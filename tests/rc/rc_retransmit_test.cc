// SPDX-License-Identifier: MIT
// Retransmission paths and what they look like on the wire: PSN wrap at
// 2^24 with losses across it, duplicate Send/Write re-acknowledged without
// being executed twice, a duplicate Read answered from saved state with an
// adjusted RETH, the implied NAK (an ACK past an unanswered Read), and ACK
// coalescing with the MSN each ACK carries.
#include "tests/rc/rc_wire.h"

namespace roce::rc::testing {
namespace {

// ---- PSN wrap -----------------------------------------------------------------

// A 10-packet Send, Write or Read starting at PSN 0xFFFFFB (so it spans
// FFFFFB .. 000004), with the packet at PSN FFFFFF lost on its first
// transmission and the one at 000002 lost on its second.
void WrapWithLoss(WrOp o) {
  PairOptions opt;
  opt.attr.path_mtu = 256;
  // Send/Write: the go-back-N path (the selective one across the wrap is in
  // rc_repair_test.cc).
  if (o != WrOp::kRead) GoBackN(opt.tuning);
  opt.a_psn = 0xFFFFFB;
  opt.b_psn = 0xFFFFFE;
  RcPair p(opt);
  WireLog w(p.net());
  const int data_from = o == WrOp::kRead ? kB : kA;  // who carries the payload
  auto at = [data_from](uint32_t psn) {
    return [data_from, psn](const Frame& f) {
      return f.from == data_from && f.psn == psn && f.opcode != op::kRcReadRequest;
    };
  };
  w.drop = DropAny({DropNth(at(0xFFFFFF), 1), DropNth(at(0x000002), 2)});
  const uint32_t n = 2560;
  Buffer src(n, 1), dst(n, 2);
  src.Fill(9);
  auto sr = p.a.Register(src, mem::kLocalWrite);
  auto dr = p.b.Register(dst, mem::kLocalWrite | mem::kRemoteWrite | mem::kRemoteRead);
  Sge rs{dst.addr(), n, dr.local_token};
  Sge ss{src.addr(), n, sr.local_token};
  if (o == WrOp::kSend) {
    ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &rs, 1)), PostResult::kOk);
  }
  if (o == WrOp::kRead) {
    dst.Fill(33);  // the Read copies b's dst into a's src
    ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, o, &ss, 1, dst.addr(), dr.remote_token)), PostResult::kOk);
  } else if (o == WrOp::kWrite) {
    ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, o, &ss, 1, dst.addr(), dr.remote_token)), PostResult::kOk);
  } else {
    ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, &ss, 1)), PostResult::kOk);
  }
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  p.RunIdle();
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}});
  EXPECT_EQ(0, memcmp(src.data(), dst.data(), n));
  EXPECT_TRUE(src.GuardsIntact());
  EXPECT_TRUE(dst.GuardsIntact());
  if (o == WrOp::kSend) {
    auto rc = p.b.PollRecv();
    ExpectCompletions(rc, {{100, Status::kSuccess}});
    EXPECT_EQ(rc[0].bytes, n);
  }
  EXPECT_EQ(p.a.qp->next_psn(), 0x000005u);
  EXPECT_EQ(p.a.qp->una(), 0x000005u);
  EXPECT_EQ(p.b.qp->expected_psn(), 0x000005u);
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
  EXPECT_EQ(p.b.qp->state(), QpState::kRts);

  // The data packets of the first pass, in order across the wrap.
  auto data = w.Where([&](const Frame& f) {
    return f.from == data_from && f.opcode != op::kRcAck && f.opcode != op::kRcReadRequest;
  });
  ASSERT_GE(data.size(), 10u);
  for (uint32_t i = 0; i < 10; i++) EXPECT_EQ(data[i].psn, PsnAdd(0xFFFFFB, i)) << i;
  if (o == WrOp::kRead) {
    // Responses after the lost 0xFFFFFF are kept (placed ahead of it), so
    // one re-request from it suffices: the replay's own loss at 0x000002
    // costs nothing, that response arrived in the first pass.
    auto req = w.Op(kA, op::kRcReadRequest);
    ASSERT_EQ(req.size(), 2u);
    const uint32_t want_psn[2] = {0xFFFFFB, 0xFFFFFF};
    for (int i = 0; i < 2; i++) {
      const uint32_t k = static_cast<uint32_t>(wire::PsnDiff(want_psn[i], 0xFFFFFB));
      EXPECT_EQ(req[i].psn, want_psn[i]);
      EXPECT_EQ(req[i].va, dst.addr() + k * 256);
      EXPECT_EQ(req[i].rkey, dr.remote_token);
    }
    EXPECT_EQ(req[0].dma_len, n);
    EXPECT_EQ(req[1].dma_len, 256u);  // only the missing response
    EXPECT_EQ(p.b.qp->counters.read_replays, 1u);
    EXPECT_EQ(p.a.qp->counters.read_ooo_placed, 5u);  // 0x000000..0x000004 of the first pass
    // The replay is that one response, READ_RESPONSE_ONLY at the re-requested PSN.
    auto replay = w.Where([&](const Frame& f) { return f.from == kB && f.t > req[1].t; });
    ASSERT_EQ(replay.size(), 1u);
    EXPECT_EQ(replay[0].psn, 0xFFFFFFu);
    EXPECT_EQ(replay[0].opcode, op::kRcReadResponseOnly);
  } else {
    auto naks = w.Where([](const Frame& f) { return f.from == kB && IsSeqNak(f); });
    ASSERT_EQ(naks.size(), 2u);
    EXPECT_EQ(naks[0].psn, 0xFFFFFFu);
    EXPECT_EQ(naks[1].psn, 0x000002u);
    // After each NAK a goes back to exactly the NAKed PSN.
    for (const Frame& nak : naks) {
      auto next = w.Where([&](const Frame& f) { return f.from == kA && f.t > nak.t; });
      ASSERT_FALSE(next.empty());
      EXPECT_EQ(next[0].psn, nak.psn);
    }
    EXPECT_EQ(p.b.qp->counters.seq_naks_sent, 2u);
    EXPECT_EQ(p.a.qp->counters.seq_naks_received, 2u);
    // The final ACK names the last PSN of the message, after the wrap.
    auto acks = w.Where([](const Frame& f) { return f.from == kB && IsAck(f); });
    ASSERT_FALSE(acks.empty());
    EXPECT_EQ(acks.back().psn, 0x000004u);
    EXPECT_EQ(acks.back().msn, 1u);
  }
}

TEST(RcRetransmit, PsnWrapSendWithLosses) { WrapWithLoss(WrOp::kSend); }
TEST(RcRetransmit, PsnWrapWriteWithLosses) { WrapWithLoss(WrOp::kWrite); }
TEST(RcRetransmit, PsnWrapReadWithLosses) { WrapWithLoss(WrOp::kRead); }

// Many operations in both directions across the wrap, no loss.
TEST(RcRetransmit, PsnWrapMixedTrafficBothDirections) {
  PairOptions opt;
  opt.attr.path_mtu = 512;
  opt.a_psn = 0xFFFFF0;
  opt.b_psn = 0xFFFFFF;
  RcPair p(opt);
  WireLog w(p.net());
  const uint32_t n = 3000;  // 6 packets at MTU 512
  Buffer asrc(n, 1), asink(n, 2), bsrc(n, 3), btarget(4 * n, 4), arecv(n, 5), brecv(n, 6);
  asrc.Fill(1);
  bsrc.Fill(2);
  btarget.Fill(3);
  auto as = p.a.Register(asrc, 0);
  auto ak = p.a.Register(asink, mem::kLocalWrite);
  auto ar = p.a.Register(arecv, mem::kLocalWrite);
  auto bs = p.b.Register(bsrc, 0);
  auto bt = p.b.Register(btarget, mem::kLocalWrite | mem::kRemoteWrite | mem::kRemoteRead);
  auto br = p.b.Register(brecv, mem::kLocalWrite);
  Sge a_s{asrc.addr(), n, as.local_token}, a_k{asink.addr(), n, ak.local_token};
  Sge a_r{arecv.addr(), n, ar.local_token}, b_s{bsrc.addr(), n, bs.local_token};
  Sge b_r{brecv.addr(), n, br.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(200, &b_r, 1)), PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostRecv(MakeRecv(300, &a_r, 1)), PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kWrite, &a_s, 1, btarget.addr() + n, bt.remote_token)),
            PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(2, &a_s, 1)), PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(3, WrOp::kRead, &a_k, 1, btarget.addr() + n, bt.remote_token)),
            PostResult::kOk);
  ASSERT_EQ(p.b.qp->PostSend(MakeSend(4, &b_s, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 3));
  ASSERT_TRUE(p.RunForSend(p.b, 1));
  p.RunIdle();
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}, {2, Status::kSuccess}, {3, Status::kSuccess}});
  ExpectCompletions(p.b.PollSend(), {{4, Status::kSuccess}});
  ExpectCompletions(p.b.PollRecv(), {{200, Status::kSuccess}});
  ExpectCompletions(p.a.PollRecv(), {{300, Status::kSuccess}});
  EXPECT_EQ(0, memcmp(asrc.data(), btarget.data() + n, n));
  EXPECT_EQ(0, memcmp(asrc.data(), brecv.data(), n));
  EXPECT_EQ(0, memcmp(asrc.data(), asink.data(), n));
  EXPECT_EQ(0, memcmp(bsrc.data(), arecv.data(), n));
  // a: 6 + 6 + 6 (read) PSNs from FFFFF0 = 000002 next. b: 6 from FFFFFF = 000005.
  EXPECT_EQ(p.a.qp->next_psn(), 0x000002u);
  EXPECT_EQ(p.b.qp->expected_psn(), 0x000002u);
  EXPECT_EQ(p.b.qp->next_psn(), 0x000005u);
  EXPECT_EQ(p.a.qp->expected_psn(), 0x000005u);
  EXPECT_EQ(p.a.qp->counters.retransmits + p.b.qp->counters.retransmits, 0u);
  // The Read's responses run FFFFFC .. 000001 with the right positions.
  auto resp = w.Where([](const Frame& f) { return IsReadResponse(f.opcode); });
  ASSERT_EQ(resp.size(), 6u);
  for (uint32_t i = 0; i < 6; i++) EXPECT_EQ(resp[i].psn, PsnAdd(0xFFFFFC, i));
  EXPECT_EQ(resp.front().opcode, op::kRcReadResponseFirst);
  EXPECT_EQ(resp.back().opcode, op::kRcReadResponseLast);
}

// The device below refuses packets whenever the link is busy (a full NIC
// ring: Transmit returns false). Both roles must keep their place and send
// the refused packet later, without counting it as sent or retransmitting.
TEST(RcRetransmit, RefusedTransmitsAreSentLater) {
  PairOptions opt;
  opt.attr.path_mtu = 256;
  opt.imp.tx_queue_ns = 1;  // one frame on the wire at a time
  RcPair p(opt);
  WireLog w(p.net());
  const uint32_t n = 5000;
  Buffer src(n, 1), sink(n, 2), target(n, 3), recv(n, 4);
  src.Fill(1);
  target.Fill(2);
  auto sr = p.a.Register(src, 0);
  auto kr = p.a.Register(sink, mem::kLocalWrite);
  auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteRead | mem::kRemoteWrite);
  auto rr = p.b.Register(recv, mem::kLocalWrite);
  const auto target_before = Snapshot(target);
  Sge rs{recv.addr(), n, rr.local_token}, ss{src.addr(), n, sr.local_token}, ks{sink.addr(), n, kr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &rs, 1)), PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kRead, &ks, 1, target.addr(), tr.remote_token)), PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(2, &ss, 1)), PostResult::kOk);
  SendWr wr = MakeRdma(3, WrOp::kWrite, &ss, 1, target.addr(), tr.remote_token);
  wr.flags |= kReadFence;
  ASSERT_EQ(p.a.qp->PostSend(wr), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 3));
  p.RunIdle();
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}, {2, Status::kSuccess}, {3, Status::kSuccess}});
  ExpectCompletions(p.b.PollRecv(), {{100, Status::kSuccess}});
  EXPECT_EQ(0, memcmp(sink.data(), target_before.data(), n));
  EXPECT_EQ(0, memcmp(recv.data(), src.data(), n));
  EXPECT_EQ(0, memcmp(target.data(), src.data(), n));
  EXPECT_GT(p.a.node->dev().counters.tx_busy, 0u);
  EXPECT_GT(p.b.node->dev().counters.tx_busy, 0u);
  EXPECT_EQ(p.a.qp->counters.retransmits, 0u);
  // Every PSN went out exactly once, in order: 1 read request + 20 + 20.
  auto req = w.Where([](const Frame& f) { return f.from == kA; });
  ASSERT_EQ(req.size(), 41u);
  for (uint32_t i = 0; i < req.size(); i++) EXPECT_EQ(req[i].psn, PsnAdd(req[0].psn, i == 0 ? 0 : 19 + i));
  EXPECT_EQ(p.a.qp->counters.tx_packets, 41u);
  EXPECT_EQ(w.Count([](const Frame& f) { return IsReadResponse(f.opcode); }), 20u);
}

// ---- duplicates ---------------------------------------------------------------

TEST(RcRetransmit, DuplicateSendReAckedNotDeliveredTwice) {
  PairOptions o;
  o.attr.path_mtu = 256;
  o.attr.timeout = 8;  // 1.05 ms
  o.tuning.tail_probe = false;  // the timeout's pass resends all (rc_tail_probe_test: one)
  RcPair p(o);
  WireLog w(p.net());
  w.drop = DropFirst([](const Frame& f) { return f.from == kB && f.opcode == op::kRcAck; });
  Buffer src(1024, 1), dst(2048, 2);
  src.Fill(1);
  auto sr = p.a.Register(src, 0);
  auto dr = p.b.Register(dst, mem::kLocalWrite);
  Sge r0{dst.addr(), 1024, dr.local_token}, r1{dst.addr() + 1024, 1024, dr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &r0, 1)), PostResult::kOk);
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(101, &r1, 1)), PostResult::kOk);
  const uint32_t psn0 = p.a.qp->next_psn();
  Sge ss{src.addr(), 700, sr.local_token};  // 3 packets
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, &ss, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForRecv(p.b, 1));
  ExpectCompletions(p.b.PollRecv(), {{100, Status::kSuccess}});
  EXPECT_EQ(0, memcmp(dst.data(), src.data(), 700));
  // The application takes its buffer back; a duplicate must not touch it.
  memset(dst.data(), 0xC3, 1024);
  const uint64_t t_first = p.net().now();
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}});
  EXPECT_GE(p.net().now() - t_first, (4096ull << 8) - 10'000);  // 4.096 us * 2^8
  p.RunIdle();
  EXPECT_EQ(p.b.rcq->size(), 0u);  // delivered exactly once
  for (int i = 0; i < 1024; i++) ASSERT_EQ(dst.data()[i], 0xC3) << i;
  EXPECT_EQ(p.a.qp->counters.timeouts, 1u);
  EXPECT_EQ(p.a.qp->counters.retransmits, 3u);
  EXPECT_EQ(p.b.qp->counters.duplicates, 3u);
  // ACKs for the last PSN, the first lost; after the timeout the first
  // resent packet asks for an ACK (AckReq), and so does the last: every one
  // names the last PSN received and carries MSN 1.
  auto acks = w.Where([](const Frame& f) { return f.from == kB && IsAck(f); });
  ASSERT_EQ(acks.size(), 3u);
  EXPECT_TRUE(acks[0].dropped);
  for (const Frame& f : acks) {
    EXPECT_EQ(f.psn, PsnAdd(psn0, 2));
    EXPECT_EQ(f.msn, 1u);
  }
  auto resent = w.Where([&](const Frame& f) { return f.from == kA && f.t > acks[0].t; });
  ASSERT_EQ(resent.size(), 3u);
  EXPECT_TRUE(resent[0].ack_req);
  EXPECT_FALSE(resent[1].ack_req);
  EXPECT_TRUE(resent[2].ack_req);
  // The second receive was not consumed by the duplicates: the next Send gets it.
  Sge s2{src.addr() + 100, 50, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(2, &s2, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  ExpectCompletions(p.a.PollSend(), {{2, Status::kSuccess}});
  auto rc = p.b.PollRecv();
  ExpectCompletions(rc, {{101, Status::kSuccess}});
  EXPECT_EQ(rc[0].bytes, 50u);
  EXPECT_EQ(0, memcmp(dst.data() + 1024, src.data() + 100, 50));
  EXPECT_EQ(w.Where([](const Frame& f) { return f.from == kB && IsAck(f); }).back().msn, 2u);
}

TEST(RcRetransmit, DuplicateWriteReAckedNotWrittenTwice) {
  PairOptions o;
  o.attr.path_mtu = 256;
  o.attr.timeout = 8;
  o.tuning.tail_probe = false;
  RcPair p(o);
  WireLog w(p.net());
  w.drop = DropFirst([](const Frame& f) { return f.from == kB && f.opcode == op::kRcAck; });
  Buffer src(1024, 1), target(1024, 2);
  src.Fill(1);
  auto sr = p.a.Register(src, 0);
  auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteWrite);
  const uint32_t psn0 = p.a.qp->next_psn();
  Sge ss{src.addr(), 1024, sr.local_token};  // 4 packets
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kWrite, &ss, 1, target.addr(), tr.remote_token)),
            PostResult::kOk);
  ASSERT_TRUE(p.net().RunUntil([&] { return p.b.qp->expected_psn() == PsnAdd(psn0, 4); },
                               p.net().now() + 1'000'000));
  EXPECT_EQ(0, memcmp(target.data(), src.data(), 1024));
  memset(target.data(), 0x3C, 1024);  // b's application overwrites the target
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  p.RunIdle();
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}});
  for (int i = 0; i < 1024; i++) ASSERT_EQ(target.data()[i], 0x3C) << "written twice at " << i;
  EXPECT_TRUE(target.GuardsIntact());
  EXPECT_EQ(p.a.qp->counters.timeouts, 1u);
  EXPECT_EQ(p.b.qp->counters.duplicates, 4u);
  EXPECT_EQ(w.Op(kA, op::kRcWriteFirst).size(), 2u);
  // The lost ACK, then one for the resent WRITE_FIRST (the first packet
  // after a timeout asks for one) and one for the resent WRITE_LAST.
  auto acks = w.Where([](const Frame& f) { return f.from == kB && IsAck(f); });
  ASSERT_EQ(acks.size(), 3u);
  for (size_t i = 1; i < 3; i++) {
    EXPECT_EQ(acks[i].psn, PsnAdd(psn0, 3));
    EXPECT_EQ(acks[i].msn, 1u);
  }
}

TEST(RcRetransmit, DuplicateReadReplayedFromTheMiddle) {
  PairOptions o;
  o.attr.path_mtu = 256;
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 2560;  // 10 responses
  ReadOfTarget r(p, n, 77);
  const uint32_t psn0 = r.psn0;
  Buffer& target = r.target;
  auto& tr = r.tr;
  w.drop = DropFirst([&](const Frame& f) { return f.from == kB && f.psn == PsnAdd(psn0, 4); });
  r.Post();
  r.ExpectDone();

  auto req = w.Op(kA, op::kRcReadRequest);
  ASSERT_EQ(req.size(), 2u);
  EXPECT_EQ(req[0].psn, psn0);
  EXPECT_EQ(req[0].va, target.addr());
  EXPECT_EQ(req[0].dma_len, n);
  EXPECT_EQ(req[1].psn, PsnAdd(psn0, 4));
  EXPECT_EQ(req[1].va, target.addr() + 4 * 256);
  EXPECT_EQ(req[1].dma_len, 256u);  // the gap only: 5..9 arrived and were kept
  EXPECT_EQ(req[1].rkey, tr.remote_token);
  EXPECT_EQ(p.a.qp->counters.read_ooo_placed, 5u);
  // The replay: READ_RESPONSE_ONLY at the re-requested PSN, with AETH and the Read's MSN.
  auto replay = w.Where([&](const Frame& f) { return f.from == kB && f.t > req[1].t; });
  ASSERT_EQ(replay.size(), 1u);
  EXPECT_EQ(replay[0].psn, PsnAdd(psn0, 4));
  EXPECT_EQ(replay[0].opcode, op::kRcReadResponseOnly);
  EXPECT_TRUE(replay[0].has_aeth);
  EXPECT_EQ(replay[0].msn, 1u);
  EXPECT_EQ(replay[0].syndrome, syn::Ack());
  EXPECT_EQ(p.b.qp->counters.read_replays, 1u);
  EXPECT_EQ(p.b.qp->counters.duplicates, 1u);
  EXPECT_EQ(p.a.qp->counters.dup_responses, 0u);  // nothing arrived twice
  EXPECT_EQ(p.a.qp->counters.retransmits, 1u);
}

// An ACK for a Send behind a Read whose only response was lost: the
// requester must not take the ACK as answering the Read (implied NAK): it
// asks for the Read again and completes both in order.
TEST(RcRetransmit, ImpliedNakReRequestsTheRead) {
  RcPair p;
  WireLog w(p.net());
  Buffer sink(512, 1), target(512, 2), src(64, 3), recv(64, 4);
  target.Fill(5);
  auto kr = p.a.Register(sink, mem::kLocalWrite);
  auto sr = p.a.Register(src, 0);
  auto tr = p.b.Register(target, mem::kRemoteRead);
  auto rr = p.b.Register(recv, mem::kLocalWrite);
  Sge rs{recv.addr(), 64, rr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &rs, 1)), PostResult::kOk);
  w.drop = DropFirst([](const Frame& f) { return f.opcode == op::kRcReadResponseOnly; });
  const uint32_t psn0 = p.a.qp->next_psn();
  Sge ks{sink.addr(), 512, kr.local_token}, ss{src.addr(), 64, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kRead, &ks, 1, target.addr(), tr.remote_token)),
            PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(2, &ss, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 2));
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}, {2, Status::kSuccess}});
  EXPECT_EQ(0, memcmp(sink.data(), target.data(), 512));
  EXPECT_EQ(p.a.qp->counters.implied_naks, 1u);
  EXPECT_EQ(p.a.qp->counters.timeouts, 0u);  // no need to wait for the timer
  EXPECT_EQ(p.b.qp->counters.read_replays, 1u);
  auto req = w.Op(kA, op::kRcReadRequest);
  ASSERT_EQ(req.size(), 2u);
  EXPECT_EQ(req[1].psn, psn0);
  EXPECT_EQ(req[1].dma_len, 512u);
  // The ACK that implied the NAK: for the Send's PSN, MSN 2 (Read + Send).
  auto acks = w.Where([](const Frame& f) { return f.from == kB && IsAck(f); });
  ASSERT_GE(acks.size(), 1u);
  EXPECT_EQ(acks[0].psn, PsnAdd(psn0, 1));
  EXPECT_EQ(acks[0].msn, 2u);
  EXPECT_LT(acks[0].t, req[1].t);
  ExpectCompletions(p.b.PollRecv(), {{100, Status::kSuccess}});
}

// The same, with the replay lost too: the gap is still there after the read
// hold (a couple of round trips), so it is asked for again then, well before
// the retransmit timeout.
TEST(RcRetransmit, ImpliedNakWithLostReplayIsAskedAgainAfterTheReadHold) {
  PairOptions o;
  o.attr.timeout = 8;  // 1.05 ms
  RcPair p(o);
  WireLog w(p.net());
  Buffer sink(512, 1), target(512, 2), src(64, 3), recv(64, 4);
  target.Fill(6);
  auto kr = p.a.Register(sink, mem::kLocalWrite);
  auto sr = p.a.Register(src, 0);
  auto tr = p.b.Register(target, mem::kRemoteRead);
  auto rr = p.b.Register(recv, mem::kLocalWrite);
  Sge rs{recv.addr(), 64, rr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &rs, 1)), PostResult::kOk);
  w.drop = DropFirst([](const Frame& f) { return f.opcode == op::kRcReadResponseOnly; }, 2);
  Sge ks{sink.addr(), 512, kr.local_token}, ss{src.addr(), 64, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kRead, &ks, 1, target.addr(), tr.remote_token)),
            PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(2, &ss, 1)), PostResult::kOk);
  const uint64_t t0 = p.net().now();
  ASSERT_TRUE(p.RunForSend(p.a, 2));
  EXPECT_LT(p.net().now() - t0, (4096ull << 8) / 2);  // well within the 1.05 ms timeout
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}, {2, Status::kSuccess}});
  EXPECT_EQ(0, memcmp(sink.data(), target.data(), 512));
  EXPECT_EQ(p.a.qp->counters.implied_naks, 1u);
  EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
  // The request, the implied NAK's re-request (its reply lost), and the
  // re-request again after the read hold.
  EXPECT_EQ(w.Op(kA, op::kRcReadRequest).size(), 3u);
  EXPECT_EQ(p.b.qp->counters.read_replays, 2u);
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
}

// ---- ACK coalescing -----------------------------------------------------------

TEST(RcRetransmit, AckCoalescingCarriesTheMsn) {
  PairOptions o;
  o.attr.path_mtu = 256;
  o.imp.gbps = 0;  // a burst arrives at once: the responder answers it with one ACK
  RcPair p(o);
  WireLog w(p.net());
  Buffer src(1024, 1), target(16384, 2), recv(16384, 3);
  src.Fill(4);
  auto sr = p.a.Register(src, 0);
  auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteWrite);
  auto rr = p.b.Register(recv, mem::kLocalWrite);
  const uint32_t psn0 = p.a.qp->next_psn();
  // Burst 1: ten single-packet Writes, each with AckReq.
  Sge one{src.addr(), 100, sr.local_token};
  for (uint64_t i = 0; i < 10; i++)
    ASSERT_EQ(p.a.qp->PostSend(MakeRdma(i, WrOp::kWrite, &one, 1, target.addr() + i * 100, tr.remote_token)),
              PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 10));
  p.RunIdle();
  // Burst 2: seven 3-packet Sends (AckReq on each last packet only).
  for (uint64_t i = 0; i < 7; i++) {
    Sge r{recv.addr() + i * 1024, 1024, rr.local_token};
    ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100 + i, &r, 1)), PostResult::kOk);
  }
  Sge three{src.addr(), 600, sr.local_token};
  for (uint64_t i = 0; i < 7; i++) ASSERT_EQ(p.a.qp->PostSend(MakeSend(10 + i, &three, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 17));
  p.RunIdle();
  auto sc = p.a.PollSend();
  ASSERT_EQ(sc.size(), 17u);
  for (const Completion& c : sc) EXPECT_EQ(c.status, Status::kSuccess);
  EXPECT_EQ(p.b.PollRecv().size(), 7u);

  const size_t ackreqs = w.Count([](const Frame& f) { return f.from == kA && f.ack_req; });
  EXPECT_EQ(ackreqs, 17u);
  auto acks = w.Where([](const Frame& f) { return f.from == kB && IsAck(f); });
  ASSERT_EQ(acks.size(), 2u);  // one per burst
  EXPECT_EQ(acks[0].psn, PsnAdd(psn0, 9));
  EXPECT_EQ(acks[0].msn, 10u);
  EXPECT_EQ(acks[1].psn, PsnAdd(psn0, 9 + 21));
  EXPECT_EQ(acks[1].msn, 17u);
  EXPECT_EQ(p.b.qp->counters.acks_sent, 2u);
  EXPECT_EQ(p.a.qp->counters.acks_received, 2u);
  EXPECT_EQ(p.a.qp->counters.retransmits, 0u);
}

// Without coalescing opportunities (frames arrive one by one) every AckReq
// packet is answered, and each ACK's MSN counts the messages up to its PSN.
TEST(RcRetransmit, AckPerAckReqMsnCountsMessages) {
  PairOptions o;
  o.attr.path_mtu = 256;
  o.imp.gbps = 1;  // ~1 us per frame: the responder answers each before the next arrives
  RcPair p(o);
  WireLog w(p.net());
  Buffer src(1024, 1), target(8192, 2);
  auto sr = p.a.Register(src, 0);
  auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteWrite);
  const uint32_t psn0 = p.a.qp->next_psn();
  // Messages of 1, 2, 3, 1, 4 packets.
  const uint32_t sizes[] = {100, 400, 700, 10, 1024};
  uint32_t last_psn[5], psn = psn0;
  for (uint64_t i = 0; i < 5; i++) {
    Sge s{src.addr(), sizes[i], sr.local_token};
    ASSERT_EQ(p.a.qp->PostSend(MakeRdma(i, WrOp::kWrite, &s, 1, target.addr() + i * 1024, tr.remote_token)),
              PostResult::kOk);
    psn = PsnAdd(psn, (sizes[i] + 255) / 256);
    last_psn[i] = PsnAdd(psn, -1);
  }
  ASSERT_TRUE(p.RunForSend(p.a, 5));
  p.RunIdle();
  auto acks = w.Where([](const Frame& f) { return f.from == kB && IsAck(f); });
  ASSERT_EQ(acks.size(), 5u);
  for (uint32_t i = 0; i < 5; i++) {
    EXPECT_EQ(acks[i].psn, last_psn[i]);
    EXPECT_EQ(acks[i].msn, i + 1);
  }
}

}  // namespace
}  // namespace roce::rc::testing
