// SPDX-License-Identifier: MIT
// Zero-copy payload: mbuf segments attached (rte_pktmbuf_attach_extbuf) to
// memory the stack does not own — registered application memory — so a large
// payload goes out without being copied into mbufs.
//
// Each attachment holds a ZcRef from its sender's ZcPool: the shared info
// (reference count, free callback) and the range it points at. The memory is
// the application's: once it is deregistered it may be freed or unmapped, so
// the owner calls Revoke(range) then (the engine does it from the memory
// table's deregistration hook, with its lock held), and after Revoke returns
// nothing reads that range through any mbuf:
//  - readers on other threads (the receiving engine of a ring pair, a port's
//    RX capture or fault injection) bracket every read with ZcAcquireFrame /
//    ZcReleaseFrame; a revoked frame is dropped instead (Revoke waits out a
//    read in progress, which takes a packet's time);
//  - the sender's port drops revoked frames still waiting in its TX backlog
//    or fault hold slot (ZcRevoked), under the same lock as Revoke.
// Frames already handed to a driver that reads them on the CPU inside
// rte_eth_tx_burst (net_ring's peer engine aside) are done with by then;
// drivers that DMA or share memory with another process never get zero-copy
// frames (Port::zero_copy_tx()).
//
// A ZcPool lives until its owner closed it and the last mbuf referencing it
// was freed (the free callback may run on any thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "stack/port/dpdk.h"

namespace roce::port {

class ZcPool;

// One cache line each: the sender fills one while a reader counts on the next.
struct alignas(64) ZcRef {
  rte_mbuf_ext_shared_info shinfo;
  std::atomic<uint32_t> state{0};  // kRevoked | readers
  std::atomic<bool> live{false};
  uint64_t addr = 0;
  uint32_t len = 0;
  ZcPool* pool = nullptr;
  ZcRef* next_free = nullptr;  // in the pool's stack of refs put back
  static constexpr uint32_t kRevoked = 1u << 31;
};
static_assert(sizeof(ZcRef) == 64);

// Its owner (the sending engine, under its lock) attaches and revokes; the
// frees (FreeCb) come from any thread — on a ring pair, the receiving
// engine's, once a frame. No lock and no counter is shared between the two
// per frame: the owner takes references from its own list, refilled with
// the whole stack the frees pushed onto, taken at once (push by anyone, take
// all by one: no ABA), and the frees count only on their own cache line. (Before,
// each frame locked a std::mutex and moved two counters between the cores.)
class ZcPool {
 public:
  // `n` references (frames in flight at once).
  static ZcPool* Create(uint32_t n);
  // Revokes everything and lets the pool go once no mbuf references it.
  void Close();

  // Attaches [p, p + len) to `m` (a fresh, direct mbuf with nothing in it) as
  // its data. False (m untouched) if every reference is in use.
  bool Attach(rte_mbuf* m, const uint8_t* p, uint16_t len);
  // Every live reference overlapping [addr, addr + len) becomes revoked; waits
  // for reads in progress on them to end.
  void Revoke(uint64_t addr, uint64_t len);
  // References attached and not yet freed (exact on the owner's thread when
  // no frame is being freed; before Close).
  uint64_t in_use() const {
    return attached_.load(std::memory_order_relaxed) - (kOpen - holds_.load(std::memory_order_acquire));
  }
  uint64_t revoked() const { return revoked_.load(std::memory_order_relaxed); }
  // The shared info's free callback (identifies zero-copy segments).
  static void FreeCb(void* addr, void* opaque);

 private:
  // holds_ while open: kOpen less the references put back. Close turns it
  // into the references still out; the Put that takes it to 0 (or Close, if
  // none is out) deletes the pool.
  static constexpr int64_t kOpen = int64_t{1} << 62;

  explicit ZcPool(uint32_t n);
  void Put(ZcRef* r);

  std::unique_ptr<ZcRef[]> refs_;
  uint32_t n_;
  ZcRef* taken_ = nullptr;  // owner's free refs: all of them at first, then a stack taken from freed_
  std::atomic<uint64_t> attached_{0};      // written by the owner only
  std::atomic<uint64_t> revoked_{0};
  alignas(64) std::atomic<ZcRef*> freed_{nullptr};  // stack of refs put back
  std::atomic<int64_t> holds_{kOpen};
};

// True if `seg` is a zero-copy attachment (of any pool).
bool IsZcSegment(const rte_mbuf* seg);
enum class ZcRead : uint8_t { kNone, kHeld, kRevoked };
// Takes a read reference on every zero-copy segment of frame `m`: kNone (it
// has none), kHeld (release with ZcReleaseFrame after reading), kRevoked (one
// of them was revoked: nothing is held; drop the frame unread).
ZcRead ZcAcquireFrame(const rte_mbuf* m);
void ZcReleaseFrame(const rte_mbuf* m);
// Sender side, under the lock Revoke is called with: whether any segment of
// `m` was revoked.
bool ZcRevoked(const rte_mbuf* m);

}  // namespace roce::port
