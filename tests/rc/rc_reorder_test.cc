// SPDX-License-Identifier: MIT
// Regression tests for the causes of connections dying on a lossy or
// reordering link (issue 10), each the exact packet sequence that triggered
// it, driven through the simulated link with frames dropped, held back and
// delivered late, or hand-fed:
//  1. read responses after a late one were dropped and the whole rest of the
//     Read replayed for every reordered response (floods of stale replays);
//  2. retries were consumed while the peer was answering;
//  3. ACKs and NAKs past an unanswered Read were ignored or acted on stale;
//  4. a retry pass that lost the expected PSN again met a silent responder;
//  5. a destroyed QP's number came back after 256 reuses of its slot.
#include <cstring>
#include <memory>
#include <set>

#include "tests/rc/rc_wire.h"

namespace roce::rc::testing {
namespace {

// Holds frames a predicate selects (they leave the link) so the test can
// deliver them late, after frames sent behind them: reordering on demand.
class Holder {
 public:
  Holder(RcPair& p, WireLog& w, std::function<bool(const Frame&)> pred)
      : p_(p), pred_(std::move(pred)) {
    w.modify = [this](const Frame& f, std::vector<uint8_t>& bytes) {
      if (pred_(f)) {
        held_.push_back({f.from, bytes});
        last_ = true;
      } else {
        last_ = false;
      }
    };
    w.drop = [this](const Frame&) { return last_; };
  }
  size_t held() const { return held_.size(); }
  // Delivers every held frame now, to the node it was sent to.
  void Release() {
    for (auto& [from, bytes] : held_) {
      Endpoint& to = from == kA ? p_.b : p_.a;
      to.node->dev().OnFrame(wire::ByteSpan(bytes.data(), bytes.size()), p_.net().now());
    }
    held_.clear();
  }

 private:
  RcPair& p_;
  std::function<bool(const Frame&)> pred_;
  std::vector<std::pair<int, std::vector<uint8_t>>> held_;
  bool last_ = false;
};

// ---- 1. Read responses: placed ahead of a gap, gap-only re-requests, and a
// loss threshold that rises to the reordering the link shows.

TEST(RcReorder, LateReadResponseIsPlacedAndTheThresholdAdapts) {
  PairOptions o;
  o.attr.path_mtu = 256;
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 2560;  // 10 responses
  Buffer sink(n, 1), sink2(n, 5), target(n, 2);
  target.Fill(11);
  auto kr = p.a.Register(sink, mem::kLocalWrite);
  auto kr2 = p.a.Register(sink2, mem::kLocalWrite);
  auto tr = p.b.Register(target, mem::kRemoteRead);
  uint32_t psn0 = p.a.qp->next_psn();
  // The 4th response (psn0+3) of the first pass is held back and delivered
  // after the other nine: a reordered frame, nothing lost.
  auto hold_psn = std::make_shared<uint32_t>(PsnAdd(psn0, 3));
  auto first_time = std::make_shared<bool>(true);
  Holder h(p, w, [&, hold_psn, first_time](const Frame& f) {
    if (f.from == kB && IsReadResponse(f.opcode) && f.psn == *hold_psn && *first_time) {
      *first_time = false;
      return true;
    }
    return false;
  });
  Sge ks{sink.addr(), n, kr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kRead, &ks, 1, target.addr(), tr.remote_token)),
            PostResult::kOk);
  ASSERT_TRUE(p.net().RunUntil([&] { return p.a.qp->counters.read_ooo_placed >= 6; },
                               p.net().now() + 1'000'000));
  ASSERT_EQ(h.held(), 1u);
  h.Release();
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  p.RunIdle();
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}});
  EXPECT_EQ(0, std::memcmp(sink.data(), target.data(), n));
  EXPECT_TRUE(sink.GuardsIntact());
  // Responses 4..9 were kept; with the initial threshold (1) the gap was
  // re-requested at once — for that one response only, not the rest.
  EXPECT_EQ(p.a.qp->counters.read_ooo_placed, 6u);
  auto req = w.Op(kA, op::kRcReadRequest);
  ASSERT_EQ(req.size(), 2u);
  EXPECT_EQ(req[1].psn, PsnAdd(psn0, 3));
  EXPECT_EQ(req[1].dma_len, 256u);
  EXPECT_EQ(req[1].va, target.addr() + 3 * 256);
  EXPECT_EQ(w.Count([](const Frame& f) { return f.from == kB && IsReadResponse(f.opcode); }), 11u);
  EXPECT_EQ(p.a.qp->counters.timeouts, 0u);

  // The held response came after six later ones and was not the replay
  // (a mid-Read MIDDLE): the link reorders by up to 7, and the next Read
  // with the same reordering needs no re-request at all.
  psn0 = p.a.qp->next_psn();
  *hold_psn = PsnAdd(psn0, 3);
  *first_time = true;
  Sge ks2{sink2.addr(), n, kr2.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(2, WrOp::kRead, &ks2, 1, target.addr(), tr.remote_token)),
            PostResult::kOk);
  ASSERT_TRUE(p.net().RunUntil([&] { return p.a.qp->counters.read_ooo_placed >= 12; },
                               p.net().now() + 1'000'000));
  h.Release();
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  p.RunIdle();
  ExpectCompletions(p.a.PollSend(), {{2, Status::kSuccess}});
  EXPECT_EQ(0, std::memcmp(sink2.data(), target.data(), n));
  EXPECT_EQ(w.Op(kA, op::kRcReadRequest).size(), 3u);  // just the second Read's request
  EXPECT_EQ(p.a.qp->counters.read_rerequests, 1u);     // the first Read's only
  EXPECT_EQ(p.b.qp->counters.read_replays, 1u);
  EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
}

// A lost response in a long Read costs that response, not the rest of the
// Read; responses already placed are not asked for again.
TEST(RcReorder, LostReadResponsesCostOnlyThemselves) {
  PairOptions o;
  o.attr.path_mtu = 256;
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 64 * 256;
  ReadOfTarget r(p, n, 3);
  const uint32_t psn0 = r.psn0;
  auto resp = [&](uint32_t k) {
    return [&, k](const Frame& f) {
      return f.from == kB && IsReadResponse(f.opcode) && f.psn == PsnAdd(psn0, k);
    };
  };
  // 5, 20 and 40 lost once; 20 lost a second time in its replay.
  w.drop = DropAny({DropFirst(resp(5)), DropFirst(resp(20), 2), DropFirst(resp(40))});
  r.Post();
  r.ExpectDone();
  // Gaps are re-requested each for itself: 5, then (once 5's replay has
  // come) 20 and 40 together, the responses after each of them placed;
  // when 20's replay is lost too, the gap is still there after the read hold
  // (a couple of round trips, not the retransmit timeout) and 20 alone is
  // asked for again. 64 + 1 + 1 + 1 + 1 responses, no timeout.
  auto req = w.Op(kA, op::kRcReadRequest);
  ASSERT_EQ(req.size(), 5u);
  EXPECT_EQ(req[0].dma_len, n);
  EXPECT_EQ(req[1].psn, PsnAdd(psn0, 5));
  EXPECT_EQ(req[1].dma_len, 256u);
  EXPECT_EQ(req[2].psn, PsnAdd(psn0, 20));
  EXPECT_EQ(req[2].dma_len, 256u);
  EXPECT_EQ(req[3].psn, PsnAdd(psn0, 40));
  EXPECT_EQ(req[3].dma_len, 256u);
  EXPECT_EQ(req[4].psn, PsnAdd(psn0, 20));
  EXPECT_EQ(req[4].dma_len, 256u);
  auto resps = w.Where([](const Frame& f) { return f.from == kB && IsReadResponse(f.opcode); });
  EXPECT_EQ(resps.size(), 68u);
  EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
}

// A gap of several responses is asked for; its replay loses the first one
// again, and the rest of the replay, arriving past the hole, shows it lost:
// the gap is asked for once more — one retry of the stall budget for one
// re-request, however many responses of the old replay come after it (each
// of them had spent one, and a 4 MiB Read over taps, whose receive bursts
// held dozens, failed nd2tools pair-rping with retries-exhausted-stalled).
TEST(RcReorder, OneRetryPerReRequestOfAGap) {
  PairOptions o;
  o.attr.path_mtu = 256;
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 64 * 256;
  ReadOfTarget r(p, n, 4);
  const uint32_t psn0 = r.psn0;
  // Transmissions of response k so far (k = PSN - psn0).
  auto sent = std::make_shared<std::vector<int>>(64, 0);
  auto k_of = [&](const Frame& f) -> int {
    if (f.from != kB || !IsReadResponse(f.opcode)) return -1;
    const int32_t k = wire::PsnDiff(f.psn, psn0);
    return k >= 0 && k < 64 ? k : -1;
  };
  // The replay of the gap but its first response: held, then delivered in
  // one burst (as a port's receive burst hands them over, before the
  // requester transmits again).
  Holder h(p, w, [&, sent](const Frame& f) {
    const int k = k_of(f);
    return k >= 6 && k <= 12 && (*sent)[k] == 1;
  });
  auto hold = w.drop;
  w.drop = [&, sent, hold](const Frame& f) {
    const int k = k_of(f);
    const bool held = hold(f);
    if (k < 0) return held;
    const int nth = ++(*sent)[k];
    // 5..12 lost in the first pass; 5 lost again in the replay of the gap.
    return held || (k >= 5 && k <= 12 && nth == 1) || (k == 5 && nth == 2);
  };
  r.Post();
  ASSERT_TRUE(p.net().RunUntil([&] { return h.held() == 7; }, p.net().now() + 1'000'000));
  h.Release();
  r.ExpectDone();
  auto req = w.Op(kA, op::kRcReadRequest);
  ASSERT_EQ(req.size(), 3u);
  EXPECT_EQ(req[1].psn, PsnAdd(psn0, 5));  // the gap, 8 responses
  EXPECT_EQ(req[1].dma_len, 8 * 256u);
  EXPECT_EQ(req[2].psn, PsnAdd(psn0, 5));  // then its first one alone
  EXPECT_EQ(req[2].dma_len, 256u);
  // Every retry counted is one re-request sent.
  EXPECT_EQ(p.a.qp->counters.read_rerequests + p.a.qp->counters.implied_naks, 2u);
  EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
}

// A Read's gap is re-requested, and then the responder falls silent for a
// few ACK timeouts (descheduled, its link down): the read hold asks again,
// twice as late each time nothing was heard, instead of every couple of
// round trips, which spent the stall budget (max_stalled_retries, 64) in a
// fraction of the silence and failed the Read; the retransmit timer counts
// the silence (retry_cnt). Once b answers, the Read completes.
TEST(RcReorder, ReadGapOutlastsASilentResponder) {
  PairOptions o;
  o.attr.path_mtu = 256;
  o.attr.timeout = 12;  // 4.096 us * 2^12 = 16.8 ms
  o.attr.retry_cnt = 7;
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 16 * 256;
  ReadOfTarget r(p, n, 6, mem::kLocalWrite | mem::kRemoteRead | mem::kRemoteWrite);
  // A Write first samples the round trip (microseconds here): the read hold
  // is then a couple of round trips, not a quarter of the ACK timeout.
  Sge k0{r.sink.addr(), 256, r.kr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(9, WrOp::kWrite, &k0, 1, r.target.addr(), r.tr.remote_token)),
            PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  ExpectCompletions(p.a.PollSend(), {{9, Status::kSuccess}});
  const uint32_t psn0 = r.psn0 = p.a.qp->next_psn();
  constexpr uint64_t kSilence = 60'000'000;  // 60 ms: 3.6 ACK timeouts, well inside retry_cnt
  uint64_t silent_from = 0;
  w.drop = [&](const Frame& f) {
    if (f.from == kA) {
      // a's re-request for the gap: from now on b is not heard.
      if (!silent_from && f.opcode == op::kRcReadRequest && f.psn == PsnAdd(psn0, 3)) silent_from = f.t;
      return false;
    }
    if (IsReadResponse(f.opcode) && f.psn == PsnAdd(psn0, 3) && !silent_from) return true;  // the gap
    return silent_from && f.t < silent_from + kSilence;
  };
  r.Post();
  r.ExpectDone();
  ASSERT_NE(silent_from, 0u);
  // The holds double: about log2(60 ms / two round trips of microseconds)
  // re-requests through the silence (without the doubling: over 64).
  EXPECT_LE(p.a.qp->counters.read_rerequests, 16u);
  EXPECT_GE(p.a.qp->counters.silent_timeouts, 2u);
  EXPECT_LE(p.a.qp->counters.timeouts, 5u);
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
}

// Our responder answers a re-request for part of a Read (what we and
// hardware send for a gap) and a re-request to the end (what rxe sends),
// and refuses one that is not whole packets of the same data.
TEST(RcReorder, ResponderServesPartialAndToTheEndReRequests) {
  PairOptions o;
  o.attr.path_mtu = 256;
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 2560;
  Buffer sink(n, 1), target(n, 2);
  target.Fill(8);
  auto kr = p.a.Register(sink, mem::kLocalWrite);
  auto tr = p.b.Register(target, mem::kRemoteRead);
  const uint32_t psn0 = p.a.qp->next_psn();
  Sge ks{sink.addr(), n, kr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kRead, &ks, 1, target.addr(), tr.remote_token)),
            PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  p.RunIdle();
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}});
  const wire::NetHeaders path = p.a.node->PathTo(*p.b.node);
  auto rerequest = [&](uint32_t k, uint32_t len) -> std::vector<Frame> {
    wire::RocePacket pk;
    static_cast<wire::NetHeaders&>(pk) = path;
    pk.bth.opcode = op::kRcReadRequest;
    pk.bth.dest_qp = p.b.qp->qpn();
    pk.bth.psn = PsnAdd(psn0, k);
    pk.bth.pkey = 0xFFFF;
    pk.bth.ack_req = true;
    pk.reth = {target.addr() + k * 256, tr.remote_token, len};
    std::vector<uint8_t> frame(512);
    const size_t fl = wire::BuildRoceFrame(pk, frame);
    EXPECT_GT(fl, 0u);
    const size_t before = w.frames.size();
    p.b.node->dev().OnFrame(wire::ByteSpan(frame.data(), fl), p.net().now());
    p.RunIdle();
    std::vector<Frame> out(w.frames.begin() + static_cast<long>(before), w.frames.end());
    return out;
  };
  // Two packets from the 4th: FIRST + LAST, full MTU each.
  std::vector<Frame> r = rerequest(3, 512);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].opcode, op::kRcReadResponseFirst);
  EXPECT_EQ(r[0].psn, PsnAdd(psn0, 3));
  EXPECT_EQ(r[1].opcode, op::kRcReadResponseLast);
  EXPECT_EQ(r[1].psn, PsnAdd(psn0, 4));
  EXPECT_EQ(r[1].payload_len, 256u);
  // To the end from the 8th: FIRST, MIDDLE, LAST.
  r = rerequest(7, n - 7 * 256);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].opcode, op::kRcReadResponseFirst);
  EXPECT_EQ(r[1].opcode, op::kRcReadResponseMiddle);
  EXPECT_EQ(r[2].opcode, op::kRcReadResponseLast);
  EXPECT_EQ(r[2].psn, PsnAdd(psn0, 9));
  // Not whole packets, past the end, another address: dropped, no answer.
  const uint64_t bad_before = p.b.qp->counters.dropped_bad;
  EXPECT_TRUE(rerequest(3, 300).empty());
  EXPECT_TRUE(rerequest(3, n).empty());
  EXPECT_EQ(p.b.qp->counters.dropped_bad, bad_before + 2);
  EXPECT_EQ(p.b.qp->state(), QpState::kRts);
  // The requester took the unasked-for responses as duplicates.
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
  EXPECT_EQ(p.a.PollSend().size(), 0u);
}

// ---- 2 and 3. ACKs and NAKs past an unanswered Read.

// An ACK overtakes the Read's response (reordering): when the response
// arrives the Send behind the Read completes at once — the ACK was kept,
// not lost behind the Read — with no timeout.
TEST(RcReorder, AckPastALateReadResponseIsKept) {
  PairOptions o;
  o.attr.timeout = 10;  // 4.2 ms
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
  Holder h(p, w, [](const Frame& f) { return f.opcode == op::kRcReadResponseOnly; });
  Sge ks{sink.addr(), 512, kr.local_token}, ss{src.addr(), 64, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kRead, &ks, 1, target.addr(), tr.remote_token)),
            PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(2, &ss, 1)), PostResult::kOk);
  const uint64_t t0 = p.net().now();
  // The Send's ACK arrives; the Read's response is still held.
  ASSERT_TRUE(p.net().RunUntil([&] { return p.a.qp->counters.acks_received >= 1 && h.held() >= 1; },
                               p.net().now() + 1'000'000));
  EXPECT_EQ(p.a.PollSend().size(), 0u);
  h.Release();  // the original response, late
  ASSERT_TRUE(p.RunForSend(p.a, 2, 1'000'000));
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}, {2, Status::kSuccess}});
  EXPECT_LT(p.net().now() - t0, 4096ull << 10);
  EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
  EXPECT_EQ(0, std::memcmp(sink.data(), target.data(), 512));
  p.RunIdle();
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
}

// A sequence NAK for a Send behind an unanswered Read is acted on at once:
// the requester resends from the NAKed PSN (before, it waited for the
// retransmit timer), and the Read is re-requested for its missing response.
TEST(RcReorder, NakPastAnUnansweredReadIsActedOn) {
  PairOptions o;
  o.attr.timeout = 12;  // 16.8 ms: a retry before it is the NAK's doing
  RcPair p(o);
  WireLog w(p.net());
  Buffer sink(512, 1), target(512, 2), src(4096, 3), recv(4096, 4);
  target.Fill(2);
  auto kr = p.a.Register(sink, mem::kLocalWrite);
  auto sr = p.a.Register(src, 0);
  auto tr = p.b.Register(target, mem::kRemoteRead);
  auto rr = p.b.Register(recv, mem::kLocalWrite);
  Sge rs{recv.addr(), 4096, rr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &rs, 1)), PostResult::kOk);
  const uint32_t psn0 = p.a.qp->next_psn();
  // Read at psn0 (its response lost), Send of 4 packets at psn0+1.. with its
  // first packet lost: b NAKs psn0+1.
  w.drop = DropAny({DropFirst([](const Frame& f) { return f.opcode == op::kRcReadResponseOnly; }),
                    DropFirst([&](const Frame& f) { return f.from == kA && f.psn == PsnAdd(psn0, 1); })});
  Sge ks{sink.addr(), 512, kr.local_token}, ss{src.addr(), 4096, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kRead, &ks, 1, target.addr(), tr.remote_token)),
            PostResult::kOk);
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(2, &ss, 1)), PostResult::kOk);
  const uint64_t t0 = p.net().now();
  ASSERT_TRUE(p.RunForSend(p.a, 2));
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}, {2, Status::kSuccess}});
  EXPECT_LT(p.net().now() - t0, 4096ull << 12);
  EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
  auto naks = w.Where([](const Frame& f) { return f.from == kB && IsSeqNak(f); });
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].psn, PsnAdd(psn0, 1));
  // After the NAK: the Read's re-request (the NAK also shows its response
  // was lost) and the Send from the NAKed PSN on.
  auto next = w.Where([&](const Frame& f) { return f.from == kA && f.t > naks[0].t; });
  ASSERT_GE(next.size(), 2u);
  EXPECT_EQ(next[0].opcode, op::kRcReadRequest);
  EXPECT_EQ(next[0].psn, psn0);
  EXPECT_EQ(next[1].psn, PsnAdd(psn0, 1));
  EXPECT_EQ(next[1].opcode, op::kRcSendFirst);
  EXPECT_EQ(0, std::memcmp(sink.data(), target.data(), 512));
  ExpectCompletions(p.b.PollRecv(), {{100, Status::kSuccess}});
}

// A NAK older than what the responder already confirmed (reordered behind a
// later ACK) must not send the requester back.
TEST(RcReorder, StaleNakIsIgnored) {
  PairOptions o;
  o.attr.path_mtu = 256;
  RcPair p(o);
  WireLog w(p.net());
  Buffer src(2048, 1), target(2048, 2);
  auto sr = p.a.Register(src, 0);
  auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteWrite);
  const uint32_t psn0 = p.a.qp->next_psn();
  Sge ss{src.addr(), 2048, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kWrite, &ss, 1, target.addr(), tr.remote_token)),
            PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  ASSERT_EQ(p.a.qp->una(), PsnAdd(psn0, 8));
  // A sequence NAK for psn0+2, as if delayed from an earlier episode.
  wire::RocePacket pk;
  static_cast<wire::NetHeaders&>(pk) = p.b.node->PathTo(*p.a.node);
  pk.bth.opcode = op::kRcAck;
  pk.bth.dest_qp = p.a.qp->qpn();
  pk.bth.psn = PsnAdd(psn0, 2);
  pk.bth.pkey = 0xFFFF;
  pk.aeth = {syn::Nak(syn::kNakPsnSeqError), 1};
  std::vector<uint8_t> frame(256);
  const size_t fl = wire::BuildRoceFrame(pk, frame);
  const size_t sent = w.From(kA).size();
  const uint64_t stale = p.a.qp->counters.dup_responses;
  p.a.node->dev().OnFrame(wire::ByteSpan(frame.data(), fl), p.net().now());
  p.RunIdle();
  EXPECT_EQ(w.From(kA).size(), sent);  // nothing resent
  EXPECT_EQ(p.a.qp->counters.dup_responses, stale + 1);
  EXPECT_EQ(p.a.qp->counters.seq_naks_received, 0u);
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
}

// ---- 2 and 4. Live peer on a lossy link: the retry budget is for silence.

// The same packet is lost five times in a row with retry_cnt 3: each retry
// pass loses it again, but the responder answers every pass (its re-NAK
// when the requester went back and asks), so the peer is alive and the
// connection survives; the retries cost no retry_cnt.
// (Go-back-N on both sides; with selective repair see rc_repair_test.cc.)
TEST(RcReorder, RepeatedLossOfOnePacketWithALivePeerSurvives) {
  PairOptions o;
  o.attr.path_mtu = 256;
  o.attr.timeout = 8;
  o.attr.retry_cnt = 3;
  GoBackN(o.tuning);
  RcPair p(o);
  WireLog w(p.net());
  Buffer src(2048, 1), recv(2048, 2);
  src.Fill(4);
  auto sr = p.a.Register(src, 0);
  auto rr = p.b.Register(recv, mem::kLocalWrite);
  Sge rs{recv.addr(), 2048, rr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &rs, 1)), PostResult::kOk);
  const uint32_t psn0 = p.a.qp->next_psn();
  w.drop = DropFirst([&](const Frame& f) { return f.from == kA && f.psn == PsnAdd(psn0, 2); }, 5);
  Sge ss{src.addr(), 2048, sr.local_token};  // 8 packets
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, &ss, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}});
  ExpectCompletions(p.b.PollRecv(), {{100, Status::kSuccess}});
  EXPECT_EQ(0, std::memcmp(recv.data(), src.data(), 2048));
  EXPECT_EQ(p.a.qp->counters.silent_timeouts, 0u);
  // Five passes lost it: the first, then four retries (NAK- or timer-driven),
  // more than retry_cnt.
  const QpCounters& c = p.a.qp->counters;
  EXPECT_GE(c.timeouts + c.seq_naks_received - c.dup_naks, 5u);
  // Every pass that lost psn0+2 heard a NAK for it: the first, and then one
  // per pass that went back (b repeats it for a pass with AckReq).
  auto naks = w.Where([&](const Frame& f) { return f.from == kB && IsSeqNak(f); });
  EXPECT_GE(naks.size(), 5u);
  for (const Frame& f : naks) EXPECT_EQ(f.psn, PsnAdd(psn0, 2));
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
}

// A responder that keeps answering but never lets the connection progress
// fails it after max_stalled_retries retries (not never).
// (Go-back-N on both sides; with selective repair see rc_repair_test.cc.)
TEST(RcReorder, PeerThatAnswersButNeverProgressesFailsAfterTheStallBudget) {
  PairOptions o;
  o.attr.path_mtu = 256;
  o.attr.timeout = 8;
  o.attr.retry_cnt = 7;
  o.tuning.max_stalled_retries = 5;
  GoBackN(o.tuning);
  RcPair p(o);
  WireLog w(p.net());
  Buffer src(1024, 1), recv(1024, 2);
  auto sr = p.a.Register(src, 0);
  auto rr = p.b.Register(recv, mem::kLocalWrite);
  Sge rs{recv.addr(), 1024, rr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &rs, 1)), PostResult::kOk);
  const uint32_t psn0 = p.a.qp->next_psn();
  w.drop = [&](const Frame& f) { return f.from == kA && f.psn == PsnAdd(psn0, 1); };  // forever
  Sge ss{src.addr(), 1024, sr.local_token};  // 4 packets
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(1, &ss, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  ExpectCompletions(p.a.PollSend(), {{1, Status::kIoTimeout, Cause::kRetryExceeded}});
  EXPECT_EQ(p.a.qp->state(), QpState::kError);
  EXPECT_EQ(p.a.qp->counters.silent_timeouts, 0u);
  // 1 NAK-driven retry + timeouts: 6 retries in all, the 6th exceeding 5.
  EXPECT_EQ(p.a.qp->counters.timeouts + p.a.qp->counters.seq_naks_received -
                p.a.qp->counters.dup_naks,
            6u);
}

// ---- 5. QPN quarantine.

TEST(RcReorder, DestroyedQpnIsNotReusedWithinTheQuarantine) {
  sim::SimNetwork net(1, {});
  RcDevice::Config cfg;
  cfg.max_qps = 1;  // one slot: only the generation can change
  cfg.qpn_quarantine_ns = 1'000'000'000;
  sim::SimNode* node = net.AddNode("a", cfg);
  RcDevice& dev = node->dev();
  CompletionQueue cq(16);
  std::set<uint32_t> seen;
  uint32_t first = 0;
  for (int i = 0; i < 255; i++) {
    QueuePair* qp = dev.CreateQp({}, &cq, &cq);
    ASSERT_NE(qp, nullptr) << i;
    if (i == 0) first = qp->qpn();
    EXPECT_TRUE(seen.insert(qp->qpn()).second) << "QPN " << qp->qpn() << " reused at " << i;
    dev.DestroyQp(qp);
    dev.AdvanceTime(dev.now() + 1'000'000);  // 1 ms apart
  }
  // 255 numbers quarantined, 1 left (the slot's 256th generation)...
  QueuePair* last = dev.CreateQp({}, &cq, &cq);
  ASSERT_NE(last, nullptr);
  EXPECT_TRUE(seen.insert(last->qpn()).second);
  dev.DestroyQp(last);
  // ... and now none: a new QP must wait rather than answer to an old number.
  EXPECT_EQ(dev.CreateQp({}, &cq, &cq), nullptr);
  EXPECT_EQ(dev.QuarantinedQpns(), 256u);
  // A packet for the first (destroyed) QPN is not taken by anyone.
  wire::RocePacket pk;
  static_cast<wire::NetHeaders&>(pk) = node->PathTo(*node);
  pk.bth.opcode = op::kRcSendOnly;
  pk.bth.dest_qp = first;
  const uint64_t unknown = dev.counters.rx_unknown_qp;
  dev.OnPacket(pk, dev.now());
  EXPECT_EQ(dev.counters.rx_unknown_qp, unknown + 1);
  // Once the first number's quarantine is over, it may come back.
  dev.AdvanceTime(dev.now() + 1'000'000'000 - 255 * 1'000'000);
  QueuePair* again = dev.CreateQp({}, &cq, &cq);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->qpn(), first);
}

}  // namespace
}  // namespace roce::rc::testing
