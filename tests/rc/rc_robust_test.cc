// SPDX-License-Identifier: MIT
// Hostile peer: frames that pass every wire check (right addresses, right
// QPN, valid ICRC) but carry random opcodes, PSNs near the expected ones,
// random RETH addresses/keys/lengths, random AETH syndromes and MSNs, random
// payload sizes. The QP must never crash, never write outside registered
// memory (guard zones around every buffer, and registered target memory
// only changes through valid tokens), and its completions stay well formed.
// Runs under AddressSanitizer in CI.
//
// Meanwhile a keeps a few real requests (Send, Write, Read) outstanding, so
// the hostile ACKs, NAKs and Read responses meet a completer with work to end;
// b keeps receives posted. Every completion must be one of a request we
// posted, in posting order, of its type and length, and end with a status
// such a peer can cause (kSendEnds / kRecvEnds below), nothing else.
#include <deque>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>

#include <absl/strings/str_format.h>

#include "tests/rc/rc_harness.h"

namespace roce::rc::testing {
namespace {

using namespace roce::wire;

using End = std::pair<Status, Cause>;

// How a's requests may end when its peer may send anything: forged ACKs,
// NAKs and Read responses, and b's real ones, which the hostile requests
// provoke (stack/rc/completer.cc: OnNak, ConsumeRetry, FailAt; qp.cc: ToError):
const std::set<End> kSendEnds = {
    {Status::kSuccess, Cause::kNone},                        // ACKed (also by a forged ACK)
    {Status::kCanceled, Cause::kFlushed},                    // behind a failed one: flushed
    {Status::kAccessViolation, Cause::kRemoteAccess},        // NAK remote access error
    {Status::kDataError, Cause::kRemoteInvalidRequest},      // NAK invalid request
    {Status::kRemoteError, Cause::kRemoteOperational},       // NAK remote operational (any other code)
    {Status::kIoTimeout, Cause::kRetryExceeded},             // sequence NAKs / gaps / timeouts used up retry_cnt
};
// Not possible here, so failures: kIoTimeout/kRnrRetryExceeded (rnr_retry 7 =
// retry forever, asserted below), kAccessViolation/kLocalProtection (every
// SGE is valid and no region is deregistered), kBufferOverflow (receives
// only), kInternalError, bind/invalidate causes (none posted).
//
// How b's receives may end (stack/rc/responder.cc: CompleteRecv,
// ResponderError, PlaceRecv; qp.cc: ToError). Not kAccessViolation/
// kLocalProtection: the receive SGEs stay valid.
const std::set<End> kRecvEnds = {
    {Status::kSuccess, Cause::kNone},
    {Status::kCanceled, Cause::kFlushed},
    {Status::kCanceled, Cause::kRemoteInvalidRequest},  // bad opcode sequence / length mid-message
    {Status::kCanceled, Cause::kRemoteAccess},          // bad RETH mid-message
    {Status::kCanceled, Cause::kInvalidate},            // Send with Invalidate of a key not ours
    {Status::kBufferOverflow, Cause::kLocalLength},     // a Send longer than the receive
};

std::string EndName(const Completion& c) {
  return absl::StrFormat("ctx %d: %s/%s", c.request_context, StatusName(c.status), CauseName(c.cause));
}

TEST(RcRobust, RandomValidFramesFromThePeerNeverCorruptMemory) {
  RcPair p;
  ASSERT_EQ(QpAttr{}.rnr_retry, 7) << "kSendEnds assumes RNR retries never run out";
  Buffer target(64 * 1024, 1), readonly(4096, 2), recv(8192, 3), outside(4096, 4), src(8192, 5),
      sink(8192, 6);
  auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteWrite | mem::kRemoteRead);
  auto ro = p.b.Register(readonly, mem::kRemoteRead);
  auto rr = p.b.Register(recv, mem::kLocalWrite);
  auto sr = p.a.Register(src, 0);
  auto kr = p.a.Register(sink, mem::kLocalWrite);
  const std::vector<uint8_t> ro_before(readonly.data(), readonly.data() + readonly.size());
  const std::vector<uint8_t> outside_before(outside.data(), outside.data() + outside.size());

  // What is posted and not yet completed, in posting order (a Reset drops it
  // without completions).
  struct Posted {
    uint64_t ctx;
    RequestType type;
    uint32_t bytes;
  };
  std::deque<Posted> sends;
  std::deque<uint64_t> recvs;
  uint64_t next_send = 1, next_recv = 0;
  std::map<End, int> send_ends, recv_ends;
  // a: up to 3 requests outstanding (Send 64 B, Write 3000 B, Read 3000 B in turn).
  auto post_sends = [&] {
    while (p.a.qp->state() == QpState::kRts && sends.size() < 3) {
      const uint64_t ctx = next_send++;
      SendWr w;
      Sge s;
      switch (ctx % 3) {
        case 0:
          s = {src.addr(), 64, sr.local_token};
          w = MakeSend(ctx, &s, 1);
          sends.push_back({ctx, RequestType::kSend, 64});
          break;
        case 1:
          s = {src.addr() + 64, 3000, sr.local_token};
          w = MakeRdma(ctx, WrOp::kWrite, &s, 1, target.addr() + 4096, tr.remote_token);
          sends.push_back({ctx, RequestType::kWrite, 3000});
          break;
        default:
          s = {sink.addr() + 64, 3000, kr.local_token};
          w = MakeRdma(ctx, WrOp::kRead, &s, 1, target.addr() + 8192, tr.remote_token);
          sends.push_back({ctx, RequestType::kRead, 3000});
          break;
      }
      ASSERT_EQ(p.a.qp->PostSend(w), PostResult::kOk);
    }
  };
  // b: up to 8 receives of 2048 B posted.
  auto post_recvs = [&] {
    while (p.b.qp->state() == QpState::kRts && recvs.size() < 8) {
      const uint64_t ctx = next_recv++;
      Sge s{recv.addr() + (ctx % 4) * 2048, 2048, rr.local_token};
      ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(ctx, &s, 1)), PostResult::kOk);
      recvs.push_back(ctx);
    }
  };
  // Every completion: one we posted, the oldest not yet completed, of its
  // type and length, with an end such a peer can cause.
  auto drain = [&] {
    for (const Completion& c : p.a.PollSend()) {
      ASSERT_FALSE(sends.empty()) << "a completion for nothing posted: " << EndName(c);
      const Posted w = sends.front();
      sends.pop_front();
      EXPECT_EQ(c.request_context, w.ctx) << "out of posting order";
      EXPECT_EQ(c.type, w.type) << EndName(c);
      EXPECT_EQ(c.bytes, w.bytes) << EndName(c);
      EXPECT_EQ(c.qpn, p.a.qp->qpn());
      EXPECT_EQ(c.qp_context, 0xAu);
      EXPECT_TRUE(kSendEnds.count({c.status, c.cause})) << "a's request ended " << EndName(c);
      send_ends[{c.status, c.cause}]++;
    }
    EXPECT_TRUE(p.b.PollSend().empty()) << "b posted no request";
    for (const Completion& c : p.b.PollRecv()) {
      ASSERT_FALSE(recvs.empty()) << "a receive completion for nothing posted: " << EndName(c);
      const uint64_t ctx = recvs.front();
      recvs.pop_front();
      EXPECT_EQ(c.request_context, ctx) << "out of posting order";
      EXPECT_EQ(c.type, RequestType::kReceive);
      EXPECT_LE(c.bytes, 2048u);
      EXPECT_EQ(c.qpn, p.b.qp->qpn());
      EXPECT_TRUE(kRecvEnds.count({c.status, c.cause})) << "b's receive ended " << EndName(c);
      recv_ends[{c.status, c.cause}]++;
    }
    EXPECT_TRUE(p.a.PollRecv().empty()) << "a posted no receive";
  };
  post_recvs();
  post_sends();
  std::mt19937_64 rng(1234);
  const NetHeaders path_ab = p.a.node->PathTo(*p.b.node);
  const NetHeaders path_ba = p.b.node->PathTo(*p.a.node);
  std::vector<uint8_t> payload(4200);
  for (auto& x : payload) x = static_cast<uint8_t>(rng());
  std::vector<uint8_t> frame(8192);
  uint64_t injected = 0;
  QpCounters seen;  // summed over every connection of the run
  auto add = [&](const QpCounters& c) { seen.Add(c); };
  for (int round = 0; round < 20000; round++) {
    // Alternate: requests into b's responder, responses into a's completer.
    const bool to_b = round % 2 == 0;
    Endpoint& dst = to_b ? p.b : p.a;
    Endpoint& from = to_b ? p.a : p.b;
    if (dst.qp->state() != QpState::kRts) {
      add(p.a.qp->counters);
      add(p.b.qp->counters);
      p.a.qp->counters = {};
      p.b.qp->counters = {};
      drain();
      p.Connect();  // an error moved it: start again (Reset drops the queues)
      sends.clear();
      recvs.clear();
    }
    post_recvs();
    post_sends();
    RocePacket pk;
    static_cast<NetHeaders&>(pk) = to_b ? path_ab : path_ba;
    // Valid opcodes only (others die in the parser, covered elsewhere).
    uint8_t code;
    do {
      code = static_cast<uint8_t>(rng() % 0x18);
    } while (!IsValidOpcode(code));
    if (rng() % 8 == 0) code = static_cast<uint8_t>(0x20 + rng() % 12);  // UC on an RC QP
    pk.bth.opcode = code;
    pk.bth.dest_qp = dst.qp->qpn();
    const uint32_t base = to_b ? dst.qp->expected_psn() : from.qp->expected_psn();
    pk.bth.psn = PsnAdd(to_b ? dst.qp->expected_psn() : dst.qp->una(),
                        static_cast<int64_t>(rng() % 9) - 4);
    (void)base;
    pk.bth.ack_req = rng() & 1;
    pk.bth.pkey = rng() % 16 ? 0xFFFF : static_cast<uint16_t>(rng());
    // RETH: inside the target, inside the read-only region, past an end, or anywhere.
    const uint32_t pick = rng() % 5;
    const uint64_t base_addr = pick == 0 ? target.addr() : pick == 1 ? readonly.addr()
                               : pick == 2 ? outside.addr() : pick == 3 ? target.addr() + target.size() - 16
                                           : rng();
    const uint32_t keys[] = {tr.remote_token, ro.remote_token, tr.local_token,
                             static_cast<uint32_t>(rng()), 0};
    pk.reth = {base_addr + rng() % 64, keys[rng() % 5],
               static_cast<uint32_t>(rng() % 3 ? rng() % 9000 : rng())};
    pk.aeth = {static_cast<uint8_t>(rng()), static_cast<uint32_t>(rng() & 0xFFFFFF)};
    pk.ieth_rkey = keys[rng() % 5];
    pk.imm = static_cast<uint32_t>(rng());
    const OpcodeInfo& info = GetOpcodeInfo(code);
    uint32_t len = 0;
    if (info.payload) {
      const uint32_t mtu = 1024;
      len = rng() % 4 == 0 ? mtu : static_cast<uint32_t>(rng() % (mtu + 64));
    }
    pk.payload = ByteSpan(payload.data(), len);
    const size_t n = BuildRoceFrame(pk, frame);
    ASSERT_GT(n, 0u);
    dst.node->dev().OnFrame(ByteSpan(frame.data(), n), p.net().now());
    injected++;
    if (round % 16 == 0) p.net().RunIdle(p.net().now() + 2'000'000);
    drain();
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(injected, 20000u);
  add(p.a.qp->counters);
  add(p.b.qp->counters);
  // The frames reached the interesting paths, not just the door.
  EXPECT_GT(seen.access_naks_sent, 10u);
  EXPECT_GT(seen.invalid_naks_sent, 10u);
  EXPECT_GT(seen.seq_naks_sent, 10u);
  EXPECT_GT(seen.duplicates, 10u);
  EXPECT_GT(seen.dropped_bad, 10u);
  EXPECT_GT(seen.rx_packets, 5000u);
  absl::PrintF("access NAKs %d, invalid NAKs %d, sequence NAKs %d, RNR NAKs %d, duplicates %d, "
              "dropped %d, accepted %d, stale responses %d\n",
              seen.access_naks_sent, seen.invalid_naks_sent,
              seen.seq_naks_sent, seen.rnr_naks_sent,
              seen.duplicates, seen.dropped_bad,
              seen.rx_packets, seen.dup_responses);
  // The hostile responses did end a's requests, in more ways than success.
  std::string ends;
  for (const auto& [e, n] : send_ends) absl::StrAppendFormat(&ends, " %s/%s %d", StatusName(e.first), CauseName(e.second), n);
  absl::PrintF("a's requests ended:%s\n", ends);
  ends.clear();
  for (const auto& [e, n] : recv_ends) absl::StrAppendFormat(&ends, " %s/%s %d", StatusName(e.first), CauseName(e.second), n);
  absl::PrintF("b's receives ended:%s\n", ends);
  EXPECT_GT((send_ends[{Status::kSuccess, Cause::kNone}]), 0);
  EXPECT_GT(send_ends.size(), 3u);
  EXPECT_GT(recv_ends.size(), 2u);
  for (Buffer* b : {&target, &readonly, &recv, &outside, &src, &sink}) EXPECT_TRUE(b->GuardsIntact());
  // Memory without remote write never changed; memory never registered never changed.
  EXPECT_EQ(0, memcmp(readonly.data(), ro_before.data(), ro_before.size()));
  EXPECT_EQ(0, memcmp(outside.data(), outside_before.data(), outside_before.size()));
  // And the QPs still work afterwards (once the old connection's frames are gone).
  p.RunIdle();
  drain();
  p.Connect();
  Sge rs{recv.addr(), 64, rr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(99, &rs, 1)), PostResult::kOk);
  Sge ss{src.addr(), 64, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(98, &ss, 1)), PostResult::kOk);
  p.RunIdle();
  auto sc = p.a.PollSend();
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].request_context, 98u);
  EXPECT_EQ(sc[0].status, Status::kSuccess) << EndName(sc[0]);
  auto rc = p.b.PollRecv();
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].request_context, 99u);
  EXPECT_EQ(rc[0].status, Status::kSuccess) << EndName(rc[0]);
  EXPECT_EQ(rc[0].bytes, 64u);
}

}  // namespace
}  // namespace roce::rc::testing
