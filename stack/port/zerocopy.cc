// SPDX-License-Identifier: MIT
#include "stack/port/zerocopy.h"

#include <algorithm>

#include "stack/port/mbuf.h"

namespace roce::port {

ZcPool::ZcPool(uint32_t n) : refs_(new ZcRef[n]), n_(n) {
  for (uint32_t i = 0; i < n; i++) {
    refs_[i].pool = this;
    refs_[i].next_free = i + 1 < n ? &refs_[i + 1] : nullptr;
  }
  taken_ = &refs_[0];
}

ZcPool* ZcPool::Create(uint32_t n) { return new ZcPool(std::max<uint32_t>(n, 1)); }

void ZcPool::Close() {
  Revoke(0, UINT64_MAX);
  const int64_t to_out = static_cast<int64_t>(attached_.load(std::memory_order_relaxed)) - kOpen;
  if (holds_.fetch_add(to_out, std::memory_order_acq_rel) + to_out == 0) delete this;
}

bool ZcPool::Attach(rte_mbuf* m, const uint8_t* p, uint16_t len) {
  // Every ref pushed was written before its push (release); the exchange
  // acquires them all (each push is a read-modify-write of freed_). The
  // stack is walked one ref per Attach, the next one's line fetched now:
  // walked at once, its links were a chain of dependent misses (each ref
  // last written by the freeing core): 74% of Attach's samples, ~9% of a
  // split 64 KB Write's sender.
  if (!taken_) taken_ = freed_.exchange(nullptr, std::memory_order_acquire);
  ZcRef* r = taken_;
  if (!r) return false;
  taken_ = r->next_free;
  if (taken_) PrefetchForWrite(taken_);
  r->addr = reinterpret_cast<uint64_t>(p);
  r->len = len;
  r->state.store(0, std::memory_order_relaxed);
  r->live.store(true, std::memory_order_release);
  r->shinfo.free_cb = &ZcPool::FreeCb;
  r->shinfo.fcb_opaque = r;
  rte_mbuf_ext_refcnt_set(&r->shinfo, 1);
  attached_.store(attached_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  rte_pktmbuf_attach_extbuf(m, const_cast<uint8_t*>(p), static_cast<rte_iova_t>(r->addr), len, &r->shinfo);
  m->data_len = len;
  m->pkt_len = len;
  return true;
}

void ZcPool::FreeCb(void*, void* opaque) {
  ZcRef* r = static_cast<ZcRef*>(opaque);
  r->pool->Put(r);
}

void ZcPool::Put(ZcRef* r) {
  r->live.store(false, std::memory_order_release);
  ZcRef* head = freed_.load(std::memory_order_relaxed);
  do {
    r->next_free = head;
  } while (!freed_.compare_exchange_weak(head, r, std::memory_order_release, std::memory_order_relaxed));
  if (holds_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

void ZcPool::Revoke(uint64_t addr, uint64_t len) {
  const uint64_t end = addr + len < addr ? UINT64_MAX : addr + len;
  for (uint32_t i = 0; i < n_; i++) {
    ZcRef& r = refs_[i];
    if (!r.live.load(std::memory_order_acquire)) continue;
    if (r.addr >= end || r.addr + r.len <= addr) continue;
    uint32_t s = r.state.fetch_or(ZcRef::kRevoked, std::memory_order_acq_rel);
    if (!(s & ZcRef::kRevoked)) revoked_.fetch_add(1, std::memory_order_relaxed);
    while ((s & ~ZcRef::kRevoked) != 0) {  // a read in progress (another thread)
      rte_pause();
      s = r.state.load(std::memory_order_acquire);
    }
  }
}

bool IsZcSegment(const rte_mbuf* seg) {
  return RTE_MBUF_HAS_EXTBUF(seg) && seg->shinfo && seg->shinfo->free_cb == &ZcPool::FreeCb;
}

namespace {
ZcRef* RefOf(const rte_mbuf* seg) { return static_cast<ZcRef*>(seg->shinfo->fcb_opaque); }
}  // namespace

ZcRead ZcAcquireFrame(const rte_mbuf* m) {
  bool any = false;
  for (const rte_mbuf* s = m; s; s = s->next) {
    if (!IsZcSegment(s)) continue;
    ZcRef* r = RefOf(s);
    if (r->state.fetch_add(1, std::memory_order_acq_rel) & ZcRef::kRevoked) {
      r->state.fetch_sub(1, std::memory_order_acq_rel);
      for (const rte_mbuf* t = m; t != s; t = t->next)
        if (IsZcSegment(t)) RefOf(t)->state.fetch_sub(1, std::memory_order_acq_rel);
      return ZcRead::kRevoked;
    }
    any = true;
  }
  return any ? ZcRead::kHeld : ZcRead::kNone;
}

void ZcReleaseFrame(const rte_mbuf* m) {
  for (const rte_mbuf* s = m; s; s = s->next)
    if (IsZcSegment(s)) RefOf(s)->state.fetch_sub(1, std::memory_order_acq_rel);
}

bool ZcRevoked(const rte_mbuf* m) {
  for (const rte_mbuf* s = m; s; s = s->next)
    if (IsZcSegment(s) && (RefOf(s)->state.load(std::memory_order_acquire) & ZcRef::kRevoked)) return true;
  return false;
}

}  // namespace roce::port
