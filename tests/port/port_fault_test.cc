// SPDX-License-Identifier: MIT
// Fault injection on a net_ring pair: each fault at probability 1 does
// exactly what it says (and keeps mbuf ownership right: duplicates are
// independent copies, a shared frame is copied before a bit is flipped, the
// held frame is released by the next frame, the next burst or Flush); mixed
// probabilities give statistics within tolerance for a fixed seed; the same
// seed and traffic give byte-identical results twice, another seed does not.
#include <algorithm>
#include <bit>
#include <map>

#include <gtest/gtest.h>

#include "stack/port/dpdk.h"
#include "stack/port/port.h"
#include "tests/port/port_test_env.h"

namespace roce::port {
namespace {

using namespace roce::port::testing;

constexpr uint32_t kLen = 96;

std::vector<rte_mbuf*> Frames(Port& from, const Port& to, uint32_t count, uint32_t seq0 = 0) {
  std::vector<rte_mbuf*> v;
  for (uint32_t i = 0; i < count; i++) v.push_back(MbufFrom(from.pool(), TestFrame(kLen, seq0 + i, from.mac(), to.mac())));
  return v;
}

// Sends `count` frames in bursts of 32 and receives after each burst; the
// same call sequence every time (determinism depends on it).
std::vector<std::vector<uint8_t>> Traffic(Pair& p, uint32_t count) {
  std::vector<std::vector<uint8_t>> got;
  auto drain = [&] {
    rte_mbuf* b[64];
    uint16_t k;
    while ((k = p.b->RxBurst(0, b, 64)) > 0) {
      for (uint16_t i = 0; i < k; i++) got.push_back(Bytes(b[i]));
      rte_pktmbuf_free_bulk(b, k);
    }
  };
  for (uint32_t off = 0; off < count; off += 32) {
    std::vector<rte_mbuf*> f = Frames(*p.a, *p.b, std::min(32u, count - off), off);
    p.a->TxBurst(0, f.data(), static_cast<uint16_t>(f.size()));
    drain();
  }
  p.a->Flush(0);
  drain();
  p.b->Flush(0);
  drain();
  return got;
}

int Hamming(const std::vector<uint8_t>& x, const std::vector<uint8_t>& y) {
  if (x.size() != y.size()) return 1 << 20;
  int d = 0;
  for (size_t i = 0; i < x.size(); i++) d += std::popcount(static_cast<unsigned>(x[i] ^ y[i]));
  return d;
}

// The seq a (possibly corrupted) frame was sent with and its bit distance
// (2 when it was corrupted on TX and again on RX).
std::pair<uint32_t, int> Original(const std::vector<uint8_t>& f, uint32_t count, const Port& a, const Port& b) {
  uint32_t seq = wire::Load32(&f[42]);
  for (int bit = -1; bit < 32; bit++) {
    uint32_t s = bit < 0 ? seq : seq ^ (1u << bit);
    if (s >= count) continue;
    int d = Hamming(f, TestFrame(kLen, s, a.mac(), b.mac()));
    if (d <= 2) return {s, d};
  }
  return {UINT32_MAX, -1};
}

TEST(Faults, OffByDefault) {
  Pair p = OpenPair(RingProfile());
  ASSERT_TRUE(p.a);
  EXPECT_FALSE(p.a->faults().Any());
  auto got = Traffic(p, 500);
  ASSERT_EQ(got.size(), 500u);
  for (uint32_t i = 0; i < 500; i++) EXPECT_EQ(got[i], TestFrame(kLen, i, p.a->mac(), p.b->mac()));
}

TEST(Faults, DropAll) {
  Pair p = OpenPair(RingProfile());
  FaultConfig f;
  f.tx.drop = 1;
  p.a->SetFaults(f);
  EXPECT_TRUE(Traffic(p, 100).empty());
  PortStats s = p.a->Stats();
  EXPECT_EQ(s.tx_faults.dropped, 100u);
  EXPECT_EQ(s.tx_packets, 0u);
  EXPECT_EQ(s.pool_in_use, 0u);
}

TEST(Faults, DuplicateAllGivesIndependentCopies) {
  Pair p = OpenPair(RingProfile());
  FaultConfig f;
  f.rx.duplicate = 1;
  p.b->SetFaults(f);
  std::vector<rte_mbuf*> tx = Frames(*p.a, *p.b, 10);
  ASSERT_EQ(p.a->TxBurst(0, tx.data(), 10), 10);
  rte_mbuf* b[64];
  ASSERT_EQ(p.b->RxBurst(0, b, 64), 20);
  for (int i = 0; i < 20; i += 2) {
    EXPECT_NE(b[i], b[i + 1]);
    EXPECT_EQ(rte_mbuf_refcnt_read(b[i]), 1);
    EXPECT_EQ(rte_mbuf_refcnt_read(b[i + 1]), 1);
    EXPECT_EQ(Bytes(b[i]), Bytes(b[i + 1]));
    EXPECT_EQ(FrameSeq(b[i]), static_cast<uint32_t>(i / 2));
  }
  rte_pktmbuf_free_bulk(b, 20);
  EXPECT_EQ(p.b->Stats().rx_faults.duplicated, 10u);
  EXPECT_EQ(p.b->Stats().rx_packets, 10u);  // the device delivered 10
  EXPECT_EQ(p.a->Stats().pool_in_use, 0u);
}

TEST(Faults, DuplicatesBeyondTheCallersArrayWaitForTheNextBurst) {
  Pair p = OpenPair(RingProfile());
  FaultConfig f;
  f.rx.duplicate = 1;
  p.b->SetFaults(f);
  std::vector<rte_mbuf*> tx = Frames(*p.a, *p.b, 8);
  p.a->TxBurst(0, tx.data(), 8);
  rte_mbuf* b[8];
  std::vector<uint32_t> seqs;
  for (int i = 0; i < 4; i++) {
    uint16_t k = p.b->RxBurst(0, b, 8);
    for (uint16_t j = 0; j < k; j++) seqs.push_back(FrameSeq(b[j]));
    rte_pktmbuf_free_bulk(b, k);
  }
  EXPECT_EQ(seqs, (std::vector<uint32_t>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7}));
}

TEST(Faults, ReorderAllSwapsNeighbours) {
  Pair p = OpenPair(RingProfile());
  FaultConfig f;
  f.rx.reorder = 1;
  p.b->SetFaults(f);
  std::vector<rte_mbuf*> tx = Frames(*p.a, *p.b, 7);
  p.a->TxBurst(0, tx.data(), 7);
  rte_mbuf* b[64];
  uint16_t k = p.b->RxBurst(0, b, 64);
  std::vector<uint32_t> seqs;
  for (uint16_t j = 0; j < k; j++) seqs.push_back(FrameSeq(b[j]));
  rte_pktmbuf_free_bulk(b, k);
  // 0 held, 1 overtakes it, 2 held, 3, 2, ...; 6 waits for the next burst.
  EXPECT_EQ(seqs, (std::vector<uint32_t>{1, 0, 3, 2, 5, 4}));
  k = p.b->RxBurst(0, b, 64);  // nothing new: released after one burst call
  ASSERT_EQ(k, 1);
  EXPECT_EQ(FrameSeq(b[0]), 6u);
  rte_pktmbuf_free(b[0]);
  EXPECT_EQ(p.b->Stats().rx_faults.reordered, 4u);
}

TEST(Faults, HeldTxFrameIsReleasedByFlush) {
  Pair p = OpenPair(RingProfile());
  FaultConfig f;
  f.tx.reorder = 1;
  f.reorder_hold = 1000;
  p.a->SetFaults(f);
  std::vector<rte_mbuf*> tx = Frames(*p.a, *p.b, 1);
  p.a->TxBurst(0, tx.data(), 1);
  rte_mbuf* b[4];
  EXPECT_EQ(p.b->RxBurst(0, b, 4), 0);
  p.a->TxBurst(0, nullptr, 0);  // an empty burst does not release it (hold 1000)
  EXPECT_EQ(p.b->RxBurst(0, b, 4), 0);
  p.a->Flush(0);
  ASSERT_EQ(p.b->RxBurst(0, b, 4), 1);
  EXPECT_EQ(FrameSeq(b[0]), 0u);
  rte_pktmbuf_free(b[0]);
}

TEST(Faults, CorruptFlipsOneBitAndSparesASharedFrame) {
  Pair p = OpenPair(RingProfile());
  FaultConfig f;
  f.tx.corrupt = 1;
  p.a->SetFaults(f);
  std::vector<rte_mbuf*> tx = Frames(*p.a, *p.b, 20);
  // The engine keeps a reference for retransmission: that copy must not change.
  rte_mbuf* kept = tx[5];
  rte_mbuf_refcnt_update(kept, 1);
  const std::vector<uint8_t> before = Bytes(kept);
  p.a->TxBurst(0, tx.data(), 20);
  EXPECT_EQ(Bytes(kept), before);
  rte_pktmbuf_free(kept);
  rte_mbuf* b[64];
  ASSERT_EQ(p.b->RxBurst(0, b, 64), 20);
  for (uint32_t i = 0; i < 20; i++)
    EXPECT_EQ(Hamming(Bytes(b[i]), TestFrame(kLen, i, p.a->mac(), p.b->mac())), 1) << i;
  rte_pktmbuf_free_bulk(b, 20);
  EXPECT_EQ(p.a->Stats().tx_faults.corrupted, 20u);
  EXPECT_EQ(p.a->Stats().pool_in_use, 0u);
}

FaultConfig Mixed(uint64_t seed) {
  FaultConfig f;
  f.seed = seed;
  f.rx = {0.10, 0.05, 0.05, 0.05};
  f.tx = {0.02, 0.02, 0.02, 0.02};
  return f;
}

TEST(Faults, StatisticsWithinTolerance) {
  constexpr uint32_t kN = 20000;
  Pair p = OpenPair(RingProfile());
  FaultConfig f = Mixed(12345);
  p.a->SetFaults(f);
  p.b->SetFaults(f);
  auto got = Traffic(p, kN);
  const PortStats a = p.a->Stats(), b = p.b->Stats();
  // Each decision is drawn for the frames that survived the ones before it.
  auto near = [](uint64_t got_count, double expect, double tol) {
    EXPECT_NEAR(static_cast<double>(got_count), expect, expect * tol) << "expected about " << expect;
  };
  const double tx_kept = kN * 0.98;
  near(a.tx_faults.dropped, kN * 0.02, 0.2);
  near(a.tx_faults.corrupted, tx_kept * 0.02, 0.2);
  near(a.tx_faults.duplicated, tx_kept * 0.02, 0.2);
  near(a.tx_faults.reordered, tx_kept * 0.02, 0.25);
  EXPECT_EQ(a.tx_packets, kN - a.tx_faults.dropped + a.tx_faults.duplicated);
  EXPECT_EQ(b.rx_packets, a.tx_packets);
  const double rx_kept = b.rx_packets * 0.9;
  near(b.rx_faults.dropped, b.rx_packets * 0.1, 0.1);
  near(b.rx_faults.corrupted, rx_kept * 0.05, 0.15);
  near(b.rx_faults.duplicated, rx_kept * 0.05, 0.15);
  near(b.rx_faults.reordered, rx_kept * 0.05, 0.2);
  EXPECT_EQ(got.size(), b.rx_packets - b.rx_faults.dropped + b.rx_faults.duplicated);
  EXPECT_EQ(a.tx_faults.nomem + b.rx_faults.nomem, 0u);

  // Every delivered frame is an original or one bit (two if hit on both
  // sides) away from it; the flipped bits match the corruption counters (a
  // duplicate of a corrupted frame is corrupted too, hence the tolerance).
  uint64_t flipped = 0, unknown = 0, late = 0;
  uint32_t max_seen = 0;
  std::map<uint32_t, int> copies;
  for (const auto& fr : got) {
    auto [seq, d] = Original(fr, kN, *p.a, *p.b);
    if (d < 0) {
      unknown++;
      continue;
    }
    flipped += static_cast<uint64_t>(d);
    copies[seq]++;
    if (seq < max_seen) late++;
    max_seen = std::max(max_seen, seq);
  }
  EXPECT_LE(unknown, 2u);  // two flips inside the seq field are not traced back
  const uint64_t corrupted = a.tx_faults.corrupted + b.rx_faults.corrupted;
  near(flipped, static_cast<double>(corrupted), 0.1);
  EXPECT_GE(late, (a.tx_faults.reordered + b.rx_faults.reordered) / 2);
  EXPECT_EQ(p.a->Stats().pool_in_use, 0u);
}

TEST(Faults, SameSeedSameResultOtherSeedNot) {
  auto once = [](uint64_t seed, PortStats* sa, PortStats* sb) {
    Pair p = OpenPair(RingProfile());
    FaultConfig f = Mixed(seed);
    p.a->SetFaults(f);
    p.b->SetFaults(f);
    auto got = Traffic(p, 3000);
    *sa = p.a->Stats();
    *sb = p.b->Stats();
    return got;
  };
  PortStats a1, b1, a2, b2, a3, b3;
  auto r1 = once(7, &a1, &b1);
  auto r2 = once(7, &a2, &b2);
  auto r3 = once(8, &a3, &b3);
  EXPECT_EQ(r1, r2);  // byte for byte, in the same order
  EXPECT_EQ(a1.tx_faults.dropped, a2.tx_faults.dropped);
  EXPECT_EQ(b1.rx_faults.corrupted, b2.rx_faults.corrupted);
  EXPECT_EQ(b1.rx_faults.reordered, b2.rx_faults.reordered);
  EXPECT_EQ(b1.rx_faults.duplicated, b2.rx_faults.duplicated);
  EXPECT_NE(r1, r3);
}

TEST(Faults, FromTheProfile) {
  PortProfile prof = RingProfile();
  ASSERT_TRUE(ApplyOverride(&prof, "fault.rx_drop=0.5").ok());
  ASSERT_TRUE(ApplyOverride(&prof, "fault.seed=99").ok());
  Pair p = OpenPair(prof);
  ASSERT_TRUE(p.a);
  auto got = Traffic(p, 1000);
  const PortStats b = p.b->Stats();
  EXPECT_GT(b.rx_faults.dropped, 400u);
  EXPECT_LT(b.rx_faults.dropped, 600u);
  EXPECT_EQ(got.size(), 1000u - b.rx_faults.dropped);
  // Turned off from code.
  p.b->SetFaults({});
  EXPECT_EQ(Traffic(p, 100).size(), 100u);
}

}  // namespace
}  // namespace roce::port
