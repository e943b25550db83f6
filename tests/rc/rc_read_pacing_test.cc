// SPDX-License-Identifier: MIT
// Read pacing (QpTuning::read_window, requester.cc "Read pacing"): a long
// Read asks for its responses in several READ requests, never more than the
// read window's worth in flight, so a receiver that cannot absorb a burst
// (a kernel tap's queue: sim::Impairment::rx_gbps / rx_queue_ns) loses little
// instead of collapsing. On the wire those are ordinary READ requests
// (consecutive PSN ranges and bytes of the Read, within the outbound read
// limit); a lost one is resent alone and whole, a gap across two of them is
// asked for in one re-request per request, a lost tail is probed instead of
// waiting out the retransmit timeout, a go-back-N responder (as rxe) gets
// the same requests, and READ_FENCE still waits for all of the Read.
#include <algorithm>

#include "tests/rc/rc_wire.h"

namespace roce::rc::testing {
namespace {

using wire::PsnDiff;

constexpr uint64_t kDelay = 1000;

// With gbps = 0 a frame sent at t arrives at exactly t + delay, so the wire
// log tells what had reached the requester when it sent each request (a
// window's responses arrive together, and a request asks for the whole room).
PairOptions InstantLink(uint32_t mtu, uint32_t window, uint32_t window_max) {
  PairOptions o;
  o.attr.path_mtu = mtu;
  o.imp.gbps = 0;
  o.imp.delay_ns = kDelay;
  o.tuning.read_window = window;
  o.tuning.read_window_max = window_max;
  return o;
}

// 10 Gb/s: responses come one by one (0.9 us a 1 KB frame), and a request
// goes as soon as a quarter of the window is free.
PairOptions TenGig(uint32_t window, uint32_t window_max) {
  PairOptions o = InstantLink(1024, window, window_max);
  o.imp.gbps = 10;
  return o;
}

// The first transmission of each READ request of a's, in order: each asks
// for the responses after the previous one's (anything else re-asks).
std::vector<Frame> FirstRequests(const WireLog& w, uint32_t mtu = 1024) {
  std::vector<Frame> v;
  uint32_t next = 0;
  for (const Frame& f : w.frames) {
    if (f.from != kA || f.opcode != op::kRcReadRequest) continue;
    if (!v.empty() && f.psn != next) continue;
    v.push_back(f);
    next = PsnAdd(f.psn, std::max<int64_t>(1, (int64_t{f.dma_len} + mtu - 1) / mtu));
  }
  return v;
}

// The READ requests cover the Read once, in order: PSN first + k asks for
// bytes k * mtu on; all but the last a whole number of packets.
void ExpectConsecutive(const std::vector<Frame>& req, uint32_t psn0, uint64_t va, uint64_t len,
                       uint32_t mtu) {
  uint64_t asked = 0;
  for (const Frame& f : req) {
    ASSERT_EQ(f.psn, PsnAdd(psn0, static_cast<int64_t>(asked / mtu))) << asked;
    ASSERT_EQ(f.va, va + asked);
    ASSERT_GT(f.dma_len, 0u);
    asked += f.dma_len;
    ASSERT_TRUE(asked == len || f.dma_len % mtu == 0) << f.dma_len;
  }
  EXPECT_EQ(asked, len);
}

// Most responses a's READ requests had asked for and that had not reached a
// when it sent one (instant link: a response sent at t arrived at t + delay).
uint64_t MaxInFlight(const WireLog& w, uint32_t mtu) {
  uint64_t asked = 0, most = 0;
  for (const Frame& f : FirstRequests(w)) {
    asked += (uint64_t{f.dma_len} + mtu - 1) / mtu;
    const uint64_t got = w.Count([&](const Frame& g) {
      return g.from == kB && IsReadResponse(g.opcode) && !g.dropped && g.t + kDelay <= f.t;
    });
    most = std::max(most, asked - std::min(asked, got));
  }
  return most;
}

TEST(RcReadPacing, AtMostAWindowOfResponsesInFlight) {
  // A window of 8 packets growing to 32, a 4 MiB Read of 4096 packets.
  PairOptions o = InstantLink(1024, 8, 32);
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 4u << 20;
  ReadOfTarget r(p, n, 5);
  // As a sees it when it asks: what is in flight plus what it asks for.
  uint64_t over = 0;
  w.modify = [&](const Frame& f, std::vector<uint8_t>&) {
    if (f.from == kA && f.opcode == op::kRcReadRequest &&
        p.a.qp->read_in_flight() + (f.dma_len + 1023) / 1024 > p.a.qp->read_window())
      over++;
  };
  r.Post();
  r.ExpectDone();
  const auto req = FirstRequests(w);
  ExpectConsecutive(req, r.psn0, r.target.addr(), n, 1024);
  EXPECT_EQ(req.front().dma_len, 8 * 1024u);  // the first: the initial window
  EXPECT_EQ(req.size(), p.a.qp->counters.read_requests);
  EXPECT_GT(req.size(), n / (32 * 1024));
  for (const Frame& f : req) EXPECT_LE(f.dma_len, 32 * 1024u);
  EXPECT_EQ(over, 0u);
  // On the wire: never more than the window's maximum outstanding, and it
  // grew to it.
  EXPECT_EQ(MaxInFlight(w, 1024), 32u);
  EXPECT_EQ(p.a.qp->read_window(), 32u);
  // Nothing lost: every response once, no re-request.
  EXPECT_EQ(w.Count([](const Frame& f) { return IsReadResponse(f.opcode); }), n / 1024);
  EXPECT_EQ(w.Op(kA, op::kRcReadRequest).size(), req.size());
  EXPECT_EQ(p.b.qp->counters.duplicates, 0u);
}

// read_window_max 0: a Read asks for everything at once, as before pacing.
TEST(RcReadPacing, WindowZeroAsksForAllAtOnce) {
  PairOptions o = InstantLink(1024, 8, 0);
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 1u << 20;
  ReadOfTarget r(p, n, 6);
  r.Post();
  r.ExpectDone();
  const auto req = FirstRequests(w);
  ASSERT_EQ(req.size(), 1u);
  EXPECT_EQ(req[0].dma_len, n);
}

// The simulated tap: responses reach a at 100 Gb/s into a receive buffer of
// 50 us that drains at 1 Gb/s (about six 1 KB frames); what arrives when it
// is full is dropped. ND2's ACK timeout (2.1 s). Unpaced, a 4 MiB Read's
// 4096 responses arrive at once, all but a few are dropped, and every replay
// loses again: seconds and timeouts. Paced, it takes about what the receiver
// needs (4 MiB at 1 Gb/s: 35 ms with headers); a buffer of six frames holds
// a window of four to eight, and each time the window outgrows it a few
// responses are lost (here 36.5 ms, 10% asked for again, no timeout).
PairOptions ShallowReceiver(uint64_t queue_ns = 50'000) {
  PairOptions o;
  o.attr.path_mtu = 1024;
  o.attr.timeout = 19;  // 4.096 us * 2^19 = 2.1 s, as ND2 connections
  o.imp.delay_ns = 1000;
  o.imp.gbps = 100;
  o.imp.rx_gbps = 1;
  o.imp.rx_queue_ns = queue_ns;
  return o;
}

TEST(RcReadPacing, FourMegabyteReadOverAShallowReceiver) {
  RcPair p(ShallowReceiver());
  const uint32_t n = 4u << 20;
  ReadOfTarget r(p, n, 7);
  const uint64_t t0 = p.net().now();
  r.Post();
  ASSERT_TRUE(p.RunForSend(p.a, 1, 1'000'000'000));
  const uint64_t took = p.net().now() - t0;
  r.ExpectDone();  // every byte
  const QpCounters& a = p.a.qp->counters;
  const QpCounters& b = p.b.qp->counters;
  std::printf("[ figures ] 4 MiB Read: %.1f ms, %llu responses replayed (%.2f%%), %llu dropped at the "
              "receiver, %llu READ requests, %llu re-requests, %llu probes, window cut %llu times\n",
              took / 1e6, static_cast<unsigned long long>(b.replay_bytes / 1024), 100.0 * b.replay_bytes / n,
              static_cast<unsigned long long>(p.net().counters().rx_overflows),
              static_cast<unsigned long long>(a.read_requests),
              static_cast<unsigned long long>(a.read_rerequests + a.implied_naks),
              static_cast<unsigned long long>(a.read_probes), static_cast<unsigned long long>(a.read_window_cuts));
  EXPECT_EQ(a.timeouts, 0u);
  EXPECT_LT(took, 50'000'000u);           // the receiver's 35 ms, and a little
  EXPECT_LT(b.replay_bytes, n / 6);       // (unpaced: all of it, many times)
  EXPECT_LT(p.net().counters().rx_overflows, n / 1024 / 6);
  EXPECT_GT(a.read_window_cuts, 0u);      // the window found the receiver
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
}

// Several Reads at once share the window (it is the QP's, not a Read's);
// a buffer of 200 us (about 23 frames) loses less (here 6%).
TEST(RcReadPacing, ReadsInParallelShareTheWindowOverAShallowReceiver) {
  RcPair p(ShallowReceiver(200'000));
  const uint32_t n = 1u << 20, k = 4;
  Buffer sink(k * n, 1), target(k * n, 2);
  target.Fill(9);
  auto kr = p.a.Register(sink, mem::kLocalWrite);
  auto tr = p.b.Register(target, mem::kRemoteRead);
  std::vector<Sge> s(k);
  for (uint32_t i = 0; i < k; i++) {
    s[i] = {sink.addr() + uint64_t{i} * n, n, kr.local_token};
    ASSERT_EQ(p.a.qp->PostSend(MakeRdma(i, WrOp::kRead, &s[i], 1, target.addr() + uint64_t{i} * n,
                                        tr.remote_token)),
              PostResult::kOk);
  }
  const uint64_t t0 = p.net().now();
  ASSERT_TRUE(p.RunForSend(p.a, k, 1'000'000'000));
  const uint64_t took = p.net().now() - t0;
  ExpectCompletions(p.a.PollSend(), {{0, Status::kSuccess}, {1, Status::kSuccess},
                                     {2, Status::kSuccess}, {3, Status::kSuccess}});
  EXPECT_EQ(0, std::memcmp(sink.data(), target.data(), k * n));
  EXPECT_TRUE(sink.GuardsIntact());
  std::printf("[ figures ] 4 x 1 MiB Read: %.1f ms, %.2f%% asked for again\n", took / 1e6,
              100.0 * p.b.qp->counters.replay_bytes / (k * n));
  EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
  EXPECT_LT(took, 50'000'000u);
  EXPECT_LT(p.b.qp->counters.replay_bytes, k * n / 10);
}

// The outbound read limit counts READ requests: a long Read's requests in
// flight never exceed it (the last response of a request frees it, in
// order), and the responder, whose inbound limit is the same, never finds
// one too many (it would NAK invalid request).
TEST(RcReadPacing, RequestsWithinTheOutboundReadLimit) {
  for (uint8_t limit : {uint8_t{1}, uint8_t{2}, uint8_t{4}}) {
    SCOPED_TRACE(::testing::Message() << "read limit " << int{limit});
    PairOptions o = TenGig(16, 64);
    o.adjust = [&](bool a_side, QpAttr& at) {
      if (a_side) at.max_rd_atomic = limit;
      else at.max_dest_rd_atomic = limit;
    };
    RcPair p(o);
    WireLog w(p.net());
    const uint32_t n = 512 * 1024;
    ReadOfTarget r(p, n, 8);
    uint32_t most = 0;
    w.modify = [&](const Frame& f, std::vector<uint8_t>&) {
      // (a new request is counted once it is out)
      if (f.from == kA && f.opcode == op::kRcReadRequest && PsnDiff(f.psn, p.a.qp->next_psn()) < 0)
        most = std::max(most, p.a.qp->reads_outstanding() + 1);
    };
    r.Post();
    r.ExpectDone();
    EXPECT_EQ(most, limit);
    EXPECT_GT(p.a.qp->counters.read_requests, uint64_t{limit});
    EXPECT_EQ(p.b.qp->counters.invalid_naks_sent, 0u);
  }
}

// A READ request of a part lost on its way: the responder NAKs the sequence
// at its PSN (the next request came), and that request alone goes again, as
// it went; the responder had kept the ones after it.
TEST(RcReadPacing, LostRequestOfAPartIsResentAloneAndWhole) {
  PairOptions o = TenGig(16, 16);
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 64 * 1024;
  ReadOfTarget r(p, n, 10);
  w.drop = DropNth([](const Frame& f) { return f.from == kA && f.opcode == op::kRcReadRequest; }, 2);
  r.Post();
  r.ExpectDone();
  const auto all = w.Op(kA, op::kRcReadRequest);
  const auto req = FirstRequests(w);
  ExpectConsecutive(req, r.psn0, r.target.addr(), n, 1024);
  ASSERT_GT(req.size(), 2u);
  ASSERT_EQ(all.size(), req.size() + 1);  // one resend
  const Frame* again = nullptr;
  for (size_t i = 1; i < all.size(); i++)
    if (all[i].psn == req[1].psn) again = &all[i];
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->dma_len, req[1].dma_len);
  EXPECT_EQ(again->va, req[1].va);
  EXPECT_EQ(p.a.qp->counters.repairs, 1u);
  EXPECT_EQ(p.b.qp->counters.read_replays, 0u);
  EXPECT_EQ(w.Count([](const Frame& f) { return IsReadResponse(f.opcode); }), n / 1024);
  EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
}

// Responses lost across the boundary of two READ requests: the gap is asked
// for in one re-request per request it falls in (each names that request's
// read resource at the responder), nothing else again.
TEST(RcReadPacing, GapAcrossTwoRequestsAskedForPerRequest) {
  PairOptions o = TenGig(16, 16);
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 64 * 1024;
  ReadOfTarget r(p, n, 11);
  // The first request asks for 16 responses (the window), the next for 4
  // once 4 have come: lose 14 .. 17 once.
  auto resp = [&](uint32_t k) {
    return [&, k](const Frame& f) { return f.from == kB && IsReadResponse(f.opcode) && f.psn == PsnAdd(r.psn0, k); };
  };
  w.drop = DropAny({DropFirst(resp(14)), DropFirst(resp(15)), DropFirst(resp(16)), DropFirst(resp(17))});
  r.Post();
  r.ExpectDone();
  const auto req = FirstRequests(w);
  ASSERT_GE(req.size(), 2u);
  ASSERT_EQ(req[0].dma_len, 16 * 1024u);
  ASSERT_EQ(req[1].psn, PsnAdd(r.psn0, 16));
  ASSERT_GE(req[1].dma_len, 2 * 1024u);
  // The re-requests: every READ request but the first transmissions.
  std::vector<Frame> re;
  for (const Frame& f : w.Op(kA, op::kRcReadRequest)) {
    const bool first = std::any_of(req.begin(), req.end(), [&](const Frame& q) { return q.t == f.t && q.psn == f.psn; });
    if (!first) re.push_back(f);
  }
  // (each waits for room in the window, halved by the loss)
  ASSERT_EQ(re.size(), 2u);
  EXPECT_EQ(re[0].psn, PsnAdd(r.psn0, 14));
  EXPECT_EQ(re[0].dma_len, 2 * 1024u);  // the end of the first request
  EXPECT_EQ(re[1].psn, PsnAdd(r.psn0, 16));
  EXPECT_EQ(re[1].dma_len, 2 * 1024u);  // the start of the second
  EXPECT_EQ(w.Count([](const Frame& f) { return IsReadResponse(f.opcode); }), n / 1024 + 4);
  EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
}

// The last responses of a Read lost, nothing after them: the read probe (a
// couple of round trips) asks for the last one again, whose replay shows the
// others lost; the Read completes in microseconds, not at the 2.1 s
// retransmit timeout.
TEST(RcReadPacing, LostTailIsProbedNotTimedOut) {
  PairOptions o;
  o.attr.path_mtu = 1024;
  o.attr.timeout = 19;
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 64 * 1024;
  ReadOfTarget r(p, n, 12);
  w.drop = [&](const Frame& f) {
    const int32_t k = PsnDiff(f.psn, r.psn0);
    return f.from == kB && IsReadResponse(f.opcode) && k >= 56 && k < 64 &&
           w.Count([&](const Frame& g) { return g.from == kB && g.psn == f.psn; }) == 0;
  };
  const uint64_t t0 = p.net().now();
  r.Post();
  ASSERT_TRUE(p.RunForSend(p.a, 1, 100'000'000));
  EXPECT_LT(p.net().now() - t0, 1'000'000u);
  r.ExpectDone();
  EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
  EXPECT_EQ(p.a.qp->counters.read_probes, 1u);
  // The probe (the last response alone), then the rest of the tail.
  auto req = w.Op(kA, op::kRcReadRequest);
  ASSERT_EQ(req.size(), 3u);
  EXPECT_EQ(req[1].psn, PsnAdd(r.psn0, 63));
  EXPECT_EQ(req[1].dma_len, 1024u);
  EXPECT_EQ(req[2].psn, PsnAdd(r.psn0, 56));
  EXPECT_EQ(req[2].dma_len, 7 * 1024u);
}

// A go-back-N responder, as rxe: it keeps nothing past a gap. A long Read
// over a lossy link still completes, every byte, its requests and re-requests
// all ordinary ones; and within each READ request the re-requests never
// start below an earlier one (rxe narrows a read resource to each
// duplicate's start and drops one that starts below it).
TEST(RcReadPacing, LongReadsFromAGoBackNResponderOverALossyLink) {
  PairOptions o;
  o.attr.path_mtu = 1024;
  o.seed = 3;
  o.imp.loss = 0.02;
  o.adjust_tuning = [](bool, QpTuning& t) { GoBackN(t); };
  o.adjust = [](bool, QpAttr& at) { at.peer_repairs = false; };
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 1u << 20, k = 4;
  Buffer sink(k * n, 1), target(k * n, 2);
  target.Fill(13);
  auto kr = p.a.Register(sink, mem::kLocalWrite);
  auto tr = p.b.Register(target, mem::kRemoteRead);
  std::vector<Sge> s(k);
  for (uint32_t i = 0; i < k; i++) {
    s[i] = {sink.addr() + uint64_t{i} * n, n, kr.local_token};
    ASSERT_EQ(p.a.qp->PostSend(MakeRdma(i, WrOp::kRead, &s[i], 1, target.addr() + uint64_t{i} * n,
                                        tr.remote_token)),
              PostResult::kOk);
  }
  ASSERT_TRUE(p.RunForSend(p.a, k, 60'000'000'000ull));
  ExpectCompletions(p.a.PollSend(), {{0, Status::kSuccess}, {1, Status::kSuccess},
                                     {2, Status::kSuccess}, {3, Status::kSuccess}});
  EXPECT_EQ(0, std::memcmp(sink.data(), target.data(), k * n));
  EXPECT_GT(p.a.qp->counters.read_requests, k);
  EXPECT_EQ(p.b.qp->counters.invalid_naks_sent + p.b.qp->counters.dropped_bad, 0u);
  // Each READ request as it first went (the Reads' requests follow each
  // other over one PSN range), and every later request inside one of them.
  const auto req = FirstRequests(w);
  EXPECT_EQ(req.size(), p.a.qp->counters.read_requests);
  std::vector<int64_t> lowest(req.size(), -1);  // the start of the latest re-request in each
  uint64_t re = 0;
  for (const Frame& f : w.Op(kA, op::kRcReadRequest)) {
    for (size_t i = 0; i < req.size(); i++) {
      const int32_t d = PsnDiff(f.psn, req[i].psn);
      if (d < 0 || d >= static_cast<int32_t>((req[i].dma_len + 1023) / 1024)) continue;
      if (f.t == req[i].t && d == 0) break;  // its first transmission
      re++;
      EXPECT_GE(d, lowest[i]) << "a re-request below an earlier one in the same READ request";
      lowest[i] = d;
      EXPECT_LE(uint64_t{f.dma_len} + static_cast<uint64_t>(d) * 1024, req[i].dma_len);
      break;
    }
  }
  EXPECT_GT(re, 0u);
}

// Towards a responder not ours the read probe does not ask for the last
// response alone: its replay would narrow rxe's read resource to it, and the
// re-request for the rest of the tail, below it, would be dropped (and so
// would every later one, the retransmit timeout's too). It asks from the
// READ request's first missing response over all of the tail.
TEST(RcReadPacing, TailProbeTowardsAPeerNotOursStartsAtTheFirstMissing) {
  PairOptions o;
  o.attr.path_mtu = 1024;
  o.attr.timeout = 19;
  o.adjust_tuning = [](bool, QpTuning& t) { GoBackN(t); };
  o.adjust = [](bool, QpAttr& at) { at.peer_repairs = false; };
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 64 * 1024;
  ReadOfTarget r(p, n, 14);
  w.drop = [&](const Frame& f) {
    const int32_t k = PsnDiff(f.psn, r.psn0);
    return f.from == kB && IsReadResponse(f.opcode) && k >= 56 && k < 64 &&
           w.Count([&](const Frame& g) { return g.from == kB && g.psn == f.psn; }) == 0;
  };
  r.Post();
  ASSERT_TRUE(p.RunForSend(p.a, 1, 100'000'000));
  r.ExpectDone();
  EXPECT_EQ(p.a.qp->counters.timeouts, 0u);
  EXPECT_EQ(p.a.qp->counters.read_probes, 1u);
  auto req = w.Op(kA, op::kRcReadRequest);
  ASSERT_EQ(req.size(), 2u);
  EXPECT_EQ(req[1].psn, PsnAdd(r.psn0, 56));
  EXPECT_EQ(req[1].dma_len, 8 * 1024u);
}

// READ_FENCE: a fenced Write waits for every part of a paced Read; an
// unfenced one waits only until the Read's last request is out (its PSNs
// come after the Read's), not for its responses.
void FenceAfterPacedRead(bool fence) {
  PairOptions o = InstantLink(1024, 4, 4);
  RcPair p(o);
  WireLog w(p.net());
  const uint32_t n = 32 * 1024;  // 32 responses, in requests of at most 4
  Buffer sink(n, 1), target(n, 2), src(64, 3);
  target.Fill(1);
  src.Fill(2);
  auto kr = p.a.Register(sink, mem::kLocalWrite);
  auto sr = p.a.Register(src, 0);
  auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteRead | mem::kRemoteWrite);
  const auto before = Snapshot(target);
  Sge ks{sink.addr(), n, kr.local_token}, ss{src.addr(), 64, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kRead, &ks, 1, target.addr(), tr.remote_token)), PostResult::kOk);
  SendWr wr = MakeRdma(2, WrOp::kWrite, &ss, 1, target.addr(), tr.remote_token);  // the Read's first bytes
  if (fence) wr.flags |= kReadFence;
  ASSERT_EQ(p.a.qp->PostSend(wr), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 2));
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}, {2, Status::kSuccess}});
  auto req = w.Op(kA, op::kRcReadRequest);
  auto wrf = w.Op(kA, op::kRcWriteOnly);
  auto resp = w.Where([](const Frame& f) { return IsReadResponse(f.opcode); });
  ASSERT_GT(req.size(), 1u);
  ASSERT_EQ(wrf.size(), 1u);
  ASSERT_EQ(resp.size(), n / 1024);
  if (fence) {
    EXPECT_GE(wrf[0].t, resp.back().t + kDelay);
    EXPECT_EQ(0, memcmp(sink.data(), before.data(), n));  // the Read saw the old bytes
  } else {
    EXPECT_GE(wrf[0].t, req.back().t);
    EXPECT_LT(wrf[0].t, resp.back().t + kDelay);
  }
  EXPECT_EQ(0, memcmp(target.data(), src.data(), 64));
}

TEST(RcReadPacing, ReadFenceWaitsForEveryPartOfAPacedRead) { FenceAfterPacedRead(true); }
TEST(RcReadPacing, UnfencedWriteGoesAfterThePacedReadsLastRequest) { FenceAfterPacedRead(false); }

}  // namespace
}  // namespace roce::rc::testing
