// SPDX-License-Identifier: MIT
// mbuf helpers for the engine: frames larger than one segment are mbuf chains,
// and every buffer comes from a mempool (nothing is allocated per packet
// outside the pools).
//
// Building a frame to send:
//   rte_mbuf* m = AllocFrame(pool, len);            // chain sized for len bytes
//   WriteAt(m, 0, bytes)  / SegmentsOf(m)            // fill it in place
// or a header segment followed by payload:
//   rte_mbuf* h = AllocHeader(pool, hdr_len);        // one segment, headroom kept
//   AppendCopy(h, pool, payload)                     // copies into new tail segments
//   AppendSegment(h, seg)                            // chains a segment you built
//                                                    // (e.g. an indirect/attached mbuf)
// Reading a received (possibly chained) frame:
//   for (ByteSpan s : SegmentsOf(m)) ...             // iterate segments, no copy
//   ReadContiguous(m, off, len, scratch)             // pointer into the mbuf, or a
//                                                    // copy in scratch if it spans segments
//   CopyOut(m, off, out)                             // linearize into a span
// Capture: GatherParts(m, &parts) gives pcapio::Writer::WriteGather the
// segments as (pointer, length) pairs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "stack/port/dpdk.h"

namespace roce::port {

using ByteSpan = std::span<const uint8_t>;
using MutByteSpan = std::span<uint8_t>;

// Data bytes one segment of `pool` can hold when it starts at the buffer
// (payload segments) and when it keeps the default headroom (first segment).
uint32_t SegmentRoom(const rte_mempool* pool);
uint32_t FirstSegmentRoom(const rte_mempool* pool);

// Allocates a chain holding exactly `len` bytes (contents uninitialized): the
// first segment keeps RTE_PKTMBUF_HEADROOM, later segments use their whole
// buffer. Returns nullptr if the pool runs dry or the chain would exceed
// RTE_MBUF_MAX_NB_SEGS; nothing leaks.
rte_mbuf* AllocFrame(rte_mempool* pool, uint32_t len);

// One segment with `hdr_len` bytes appended (uninitialized) after the
// headroom. nullptr if the pool is empty or hdr_len does not fit.
rte_mbuf* AllocHeader(rte_mempool* pool, uint16_t hdr_len);

// Chains `seg` (itself a chain or a single mbuf) to the end of `head`;
// false (nothing changed) if the segment count would exceed the maximum.
bool AppendSegment(rte_mbuf* head, rte_mbuf* seg);

// Appends `data` to the frame: fills the tailroom of the last segment, then
// allocates segments from `pool`. On failure the frame is unchanged.
bool AppendCopy(rte_mbuf* head, rte_mempool* pool, ByteSpan data);

// PREFETCHW: the line fetched owned, for writing. DPDK's flags build for
// -march=corei7, where GCC's __builtin_prefetch(p, 1) is a plain read
// prefetch. Every x86-64 CPU since Broadwell and every AMD one has it; older
// ones decode it as a NOP. (A prefetch never faults, whatever the address.)
inline void PrefetchForWrite(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

// Prefetches, a few frames ahead of the one being handled, what handling a
// received frame touches first, so the cache misses of a burst overlap with
// the work instead of coming one frame after the other. Four stages, each
// reading a line the stage before fetched: 8 frames ahead the frame's first
// data line (the headers, read) and its mbuf's second line (next); 4 ahead
// its second segment's mbuf; 2 ahead an attached segment's shared info (a
// zero-copy reference) and mempool header, and the third segment's mbuf (a
// zero-copy frame's tail); 1 ahead the tail's data (pad and ICRC). The mbufs
// and the shared info are written (a reference count, the free that
// follows), so they are fetched for writing (PREFETCHW: owned at once, not
// shared then upgraded). An mbuf another core wrote last (a ring pair's
// sender) misses in this core's cache: without this a receiver of full bursts
// of 4 KB zero-copy frames spent ~90 ns a frame on those misses (perf,
// Nd2/Write/split/65536: ZcAcquireFrame 14% of the thread, DPDK's detach 6%);
// stages 4/2/1 without the tail made the split 64 KB Write ~10% faster, these
// ~6% more (ZcAcquireFrame had still stalled on the tail's mbuf, and stage 2
// on a next that stage 4 had asked for too late).
// The engine does it for bursts of chained frames only, out of line: on
// one-segment 8 B frames of its own core it cost the 8 B Write ~5%, and
// inlined into the poll ~6% even unexecuted. (One-segment frames get only
// their data lines fetched a few frames ahead, in Engine::Poll.)
constexpr int kPrefetchAhead = 8;
// Call with i = -kPrefetchAhead .. n - 1, handling frame i after each call.
void PrefetchAhead(rte_mbuf* const* pkts, uint16_t n, int i);

// Frees n received frames. When all are plain (direct, one segment, not
// shared) and of one pool — every small frame of a ring or NIC — they go
// back with one inline rte_mempool_put_bulk (the lcore's cache); otherwise
// rte_pktmbuf_free_bulk, which handles chains, attached and shared mbufs.
// rte_pktmbuf_free_bulk of one frame costs ~110 instructions, this ~30.
// Only an mbuf's first line is read: a frame's head counts its chain
// (nb_segs), so one segment means no next (DPDK's mbuf invariant, which
// rte_mbuf_check asserts), and the second line (next), which the sender's
// reset writes, stays in the sender's cache.
inline void FreeReceived(rte_mbuf** pkts, uint16_t n) {
  if (n == 0) return;
  rte_mempool* const pool = pkts[0]->pool;
  for (uint16_t i = 0; i < n; i++) {
    const rte_mbuf* m = pkts[i];
    if (unlikely(m->pool != pool || m->nb_segs != 1 || !RTE_MBUF_DIRECT(m) ||
                 rte_mbuf_refcnt_read(m) != 1)) {
      rte_pktmbuf_free_bulk(pkts, n);
      return;
    }
  }
  rte_mempool_put_bulk(pool, reinterpret_cast<void* const*>(pkts), n);
}

// Writes `data` at byte offset `off` of the frame (across segments). False if
// the frame is too short.
bool WriteAt(rte_mbuf* m, uint32_t off, ByteSpan data);

// Copies bytes [off, off + out.size()) of the frame to out; returns the count
// copied (less at the end of the frame). CopyOut(m, 0, buf) linearizes.
size_t CopyOut(const rte_mbuf* m, uint32_t off, MutByteSpan out);

// `len` bytes at `off` as one span: points into the mbuf if they lie in one
// segment, otherwise they are copied into scratch (>= len bytes). Empty span
// if the frame is too short.
ByteSpan ReadContiguous(const rte_mbuf* m, uint32_t off, uint32_t len, uint8_t* scratch);

// The frame's segments as spans: for (ByteSpan s : SegmentsOf(m)).
class SegmentRange {
 public:
  class Iterator {
   public:
    explicit Iterator(const rte_mbuf* s) : s_(s) {}
    ByteSpan operator*() const { return {rte_pktmbuf_mtod(s_, const uint8_t*), s_->data_len}; }
    Iterator& operator++() {
      s_ = s_->next;
      return *this;
    }
    bool operator!=(const Iterator& o) const { return s_ != o.s_; }

   private:
    const rte_mbuf* s_;
  };
  explicit SegmentRange(const rte_mbuf* m) : m_(m) {}
  Iterator begin() const { return Iterator(m_); }
  Iterator end() const { return Iterator(nullptr); }

 private:
  const rte_mbuf* m_;
};
inline SegmentRange SegmentsOf(const rte_mbuf* m) { return SegmentRange(m); }

// Mutable segments (to fill a frame from AllocFrame in place).
template <typename F>
void ForEachMutableSegment(rte_mbuf* m, F&& f) {
  for (rte_mbuf* s = m; s; s = s->next) f(MutByteSpan(rte_pktmbuf_mtod(s, uint8_t*), s->data_len));
}

// Replaces *parts with the frame's segments (for pcapio::Writer::WriteGather).
// Reuses the vector's capacity: no allocation once it has grown.
void GatherParts(const rte_mbuf* m, std::vector<std::pair<const uint8_t*, size_t>>* parts);

// A single-segment copy of a chained frame from `pool`; nullptr if it does not
// fit one segment or the pool is empty. The original is not freed.
rte_mbuf* LinearCopy(const rte_mbuf* m, rte_mempool* pool);

// Checksum offload requests and results (see Port::offloads()).
struct TxChecksumRequest {
  uint16_t l2_len = 14;   // Ethernet (+4 with 802.1Q)
  uint16_t l3_len = 20;   // IPv4 header or 40 for IPv6
  bool ipv6 = false;
  bool ip_checksum = false;   // IPv4 header checksum
  bool udp_checksum = false;  // UDP checksum (needed over IPv6)
};
enum class RxChecksum : uint8_t { kUnknown, kGood, kBad, kNone };
RxChecksum RxIpChecksum(const rte_mbuf* m);
RxChecksum RxL4Checksum(const rte_mbuf* m);

}  // namespace roce::port
