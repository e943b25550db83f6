// Hostile peer: frames that pass every wire check (right addresses, right
// QPN, valid ICRC) but carry random opcodes, PSNs near the expected ones,
// random RETH addresses/keys/lengths, random AETH syndromes and MSNs, random
// payload sizes. The QP must never crash, never write outside registered
// memory (guard zones around every buffer, and registered target memory
// only changes through valid tokens), and its completions stay well formed.
// Runs under AddressSanitizer in CI.
#include <random>

#include <absl/strings/str_format.h>

#include "tests/rc/rc_harness.h"

namespace roce::rc::testing {
namespace {

using namespace roce::wire;

TEST(RcRobust, RandomValidFramesFromThePeerNeverCorruptMemory) {
  RcPair p;
  Buffer target(64 * 1024, 1), readonly(4096, 2), recv(8192, 3), outside(4096, 4), src(8192, 5);
  auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteWrite | mem::kRemoteRead);
  auto ro = p.b.Register(readonly, mem::kRemoteRead);
  auto rr = p.b.Register(recv, mem::kLocalWrite);
  auto sr = p.a.Register(src, 0);
  (void)sr;
  const std::vector<uint8_t> ro_before(readonly.data(), readonly.data() + readonly.size());
  const std::vector<uint8_t> outside_before(outside.data(), outside.data() + outside.size());
  for (int i = 0; i < 32; i++) {
    Sge s{recv.addr() + static_cast<uint64_t>(i % 4) * 2048, 2048, rr.local_token};
    p.b.qp->PostRecv(MakeRecv(static_cast<uint64_t>(i), &s, 1));
  }
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
      p.Connect();  // an error moved it: start again
      for (int i = 0; i < 8; i++) {
        Sge s{recv.addr() + static_cast<uint64_t>(i % 4) * 2048, 2048, rr.local_token};
        p.b.qp->PostRecv(MakeRecv(1000 + static_cast<uint64_t>(i), &s, 1));
      }
    }
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
    // Completions stay well formed.
    for (Endpoint* e : {&p.a, &p.b}) {
      for (const Completion& c : e->PollSend()) {
        EXPECT_LE(static_cast<int>(c.status), static_cast<int>(Status::kInternalError));
      }
      for (const Completion& c : e->PollRecv()) {
        EXPECT_EQ(c.type, RequestType::kReceive);
        EXPECT_LE(c.bytes, 2048u);
      }
    }
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
  for (Buffer* b : {&target, &readonly, &recv, &outside, &src}) EXPECT_TRUE(b->GuardsIntact());
  // Memory without remote write never changed; memory never registered never changed.
  EXPECT_EQ(0, memcmp(readonly.data(), ro_before.data(), ro_before.size()));
  EXPECT_EQ(0, memcmp(outside.data(), outside_before.data(), outside_before.size()));
  // And the QPs still work afterwards (once the old connection's frames are gone).
  p.RunIdle();
  p.Connect();
  Sge rs{recv.addr(), 64, rr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(99, &rs, 1)), PostResult::kOk);
  Sge ss{src.addr(), 64, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(98, &ss, 1)), PostResult::kOk);
  p.RunIdle();
  auto sc = p.a.PollSend();
  ASSERT_FALSE(sc.empty());
  EXPECT_EQ(sc.back().status, Status::kSuccess);
}

}  // namespace
}  // namespace roce::rc::testing
