// SPDX-License-Identifier: MIT
// ZcPool, the zero-copy references a sending engine attaches to mbufs (its
// registered memory as external buffers): references run out and come back as
// frames are freed — on another thread, as a ring pair's receiver frees them —
// a read in progress holds off Revoke, Close revokes every frame still out,
// and the pool goes with the last of them (the ASan build checks that it does,
// exactly once).
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "stack/port/dpdk.h"
#include "stack/port/zerocopy.h"
#include "tests/port/port_test_env.h"

namespace roce::port {
namespace {

rte_mempool* Pool() {
  static rte_mempool* p = rte_pktmbuf_pool_create("zc_test", 2047, 64, 0, 256, SOCKET_ID_ANY);
  return p;
}

rte_mbuf* Fresh() {
  rte_mbuf* m = rte_pktmbuf_alloc(Pool());
  EXPECT_NE(m, nullptr);
  return m;
}

TEST(ZcPool, ReferencesRunOutAndComeBackWhenFramesAreFreed) {
  ASSERT_NE(Pool(), nullptr);
  std::vector<uint8_t> mem(4096, 0xab);
  ZcPool* zc = ZcPool::Create(4);
  std::vector<rte_mbuf*> out;
  for (int i = 0; i < 4; i++) {
    rte_mbuf* m = Fresh();
    ASSERT_TRUE(zc->Attach(m, mem.data() + 100 * i, 100));
    EXPECT_TRUE(IsZcSegment(m));
    EXPECT_EQ(rte_pktmbuf_mtod(m, uint8_t*), mem.data() + 100 * i);
    EXPECT_EQ(m->data_len, 100);
    out.push_back(m);
  }
  EXPECT_EQ(zc->in_use(), 4u);
  rte_mbuf* m = Fresh();
  EXPECT_FALSE(zc->Attach(m, mem.data(), 100));  // all four are out
  EXPECT_TRUE(RTE_MBUF_DIRECT(m));              // untouched
  EXPECT_EQ(m->data_len, 0);
  rte_pktmbuf_free(out[2]);
  EXPECT_EQ(zc->in_use(), 3u);
  ASSERT_TRUE(zc->Attach(m, mem.data() + 7, 9));  // the one freed, again
  out[2] = m;
  for (rte_mbuf* f : out) rte_pktmbuf_free(f);
  EXPECT_EQ(zc->in_use(), 0u);
  EXPECT_EQ(zc->revoked(), 0u);
  zc->Close();  // none out: gone now
  EXPECT_EQ(rte_mempool_in_use_count(Pool()), 0u);
}

// The owner attaches and revokes while another thread reads and frees, as a
// ring pair's engines do; 32 references for 200000 frames.
TEST(ZcPool, FramesFreedOnAnotherThread) {
  ASSERT_NE(Pool(), nullptr);
  constexpr int kFrames = 200000;
  std::vector<uint8_t> mem(64 * 256);
  for (size_t i = 0; i < mem.size(); i++) mem[i] = static_cast<uint8_t>(i / 64);
  ZcPool* zc = ZcPool::Create(32);
  rte_ring* ring = rte_ring_create("zc_test_ring", 64, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
  ASSERT_NE(ring, nullptr);
  std::atomic<int> read{0}, bad{0};
  std::atomic<bool> stop{false};  // a stuck side (references never coming back) ends the test
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::thread reader([&] {
    for (int got = 0; got < kFrames && !stop;) {
      void* o;
      if (rte_ring_dequeue(ring, &o) != 0) {
        std::this_thread::yield();
        continue;
      }
      auto* m = static_cast<rte_mbuf*>(o);
      if (ZcAcquireFrame(m) != ZcRead::kHeld) bad++;
      const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
      const auto want = static_cast<uint8_t>((d - mem.data()) / 64);  // each 64-byte block holds its index
      for (uint16_t i = 0; i < m->data_len; i++)
        if (d[i] != want) {
          bad++;
          break;
        }
      ZcReleaseFrame(m);
      rte_pktmbuf_free(m);
      got++;
      read++;
    }
  });
  int full = 0;
  for (int i = 0; i < kFrames && !stop; i++) {
    rte_mbuf* m = nullptr;
    while (!m && !stop) {
      m = rte_pktmbuf_alloc(Pool());
      if (m && !zc->Attach(m, mem.data() + 64 * (i % 256), 64)) {
        rte_pktmbuf_free(m);
        m = nullptr;
        full++;
      }
      if (!m) std::this_thread::yield();
      if (std::chrono::steady_clock::now() > deadline) stop = true;
    }
    if (!m) break;
    if (i % 5000 == 0) zc->Revoke(reinterpret_cast<uint64_t>(mem.data()) + mem.size(), 64);  // overlaps nothing
    while (rte_ring_enqueue(ring, m) != 0) std::this_thread::yield();
  }
  if (stop) ADD_FAILURE() << "no reference came back in 20 s";
  reader.join();
  EXPECT_EQ(read.load(), kFrames);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(full, 0);  // it ran dry and refilled from what the reader freed
  EXPECT_EQ(zc->in_use(), 0u);
  EXPECT_EQ(zc->revoked(), 0u);
  zc->Close();
  rte_ring_free(ring);
  EXPECT_EQ(rte_mempool_in_use_count(Pool()), 0u);
}

TEST(ZcPool, RevokeWaitsForAReadInProgress) {
  ASSERT_NE(Pool(), nullptr);
  std::vector<uint8_t> mem(256, 1);
  ZcPool* zc = ZcPool::Create(4);
  rte_mbuf* m = Fresh();
  ASSERT_TRUE(zc->Attach(m, mem.data(), 256));
  std::atomic<bool> holding{false}, released{false};
  std::thread reader([&] {
    ASSERT_EQ(ZcAcquireFrame(m), ZcRead::kHeld);
    holding = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    released = true;
    ZcReleaseFrame(m);
  });
  while (!holding) std::this_thread::yield();
  zc->Revoke(reinterpret_cast<uint64_t>(mem.data()) + 255, 1);  // the last byte
  EXPECT_TRUE(released.load());  // it returned only after the read ended
  reader.join();
  EXPECT_EQ(zc->revoked(), 1u);
  EXPECT_TRUE(ZcRevoked(m));
  EXPECT_EQ(ZcAcquireFrame(m), ZcRead::kRevoked);  // no read after Revoke
  rte_pktmbuf_free(m);
  zc->Close();
}

TEST(ZcPool, CloseRevokesWhatIsOutAndTheLastFreeEndsThePool) {
  ASSERT_NE(Pool(), nullptr);
  std::vector<uint8_t> mem(1024, 2);
  ZcPool* zc = ZcPool::Create(8);
  rte_mbuf* a = Fresh();
  rte_mbuf* b = Fresh();
  rte_mbuf* c = Fresh();
  ASSERT_TRUE(zc->Attach(a, mem.data(), 100));
  ASSERT_TRUE(zc->Attach(b, mem.data() + 500, 100));
  ASSERT_TRUE(zc->Attach(c, mem.data() + 900, 100));
  rte_pktmbuf_free(b);
  EXPECT_EQ(ZcAcquireFrame(a), ZcRead::kHeld);
  ZcReleaseFrame(a);
  zc->Close();  // a and c are out: the pool stays
  EXPECT_EQ(ZcAcquireFrame(a), ZcRead::kRevoked);
  EXPECT_EQ(ZcAcquireFrame(c), ZcRead::kRevoked);
  // A chain of a direct mbuf and a revoked segment: nothing is held.
  rte_mbuf* h = Fresh();
  ASSERT_EQ(rte_pktmbuf_chain(h, c), 0);
  EXPECT_EQ(ZcAcquireFrame(h), ZcRead::kRevoked);
  // The frees on another thread, the last of them deletes the pool (under
  // ASan: a leak if none does, a use after free or double free if two do).
  std::thread t([&] {
    rte_pktmbuf_free(a);
    rte_pktmbuf_free(h);
  });
  t.join();
  EXPECT_EQ(rte_mempool_in_use_count(Pool()), 0u);
}

}  // namespace
}  // namespace roce::port
