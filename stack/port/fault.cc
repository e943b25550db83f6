// SPDX-License-Identifier: MIT
#include "stack/port/fault.h"

#include <cmath>

#include "stack/port/dpdk.h"

namespace roce::port {
namespace {

uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// True if every segment's data belongs to this mbuf alone.
bool Private(const rte_mbuf* m) {
  for (const rte_mbuf* s = m; s; s = s->next)
    if (rte_mbuf_refcnt_read(s) != 1 || !RTE_MBUF_DIRECT(s)) return false;
  return true;
}

}  // namespace

void Rng::Seed(uint64_t seed) {
  uint64_t x = seed;
  for (auto& w : s_) w = SplitMix64(x);
}

uint64_t Rng::Next() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

Chance::Chance(double p) {
  if (!(p > 0)) return;  // also NaN
  if (p >= 1) {
    always_ = true;
    return;
  }
  threshold_ = static_cast<uint64_t>(std::ldexp(p, 64));
  if (threshold_ == 0) threshold_ = 1;
}

FaultInjector::~FaultInjector() {
  if (held_) rte_pktmbuf_free(held_);
}

void FaultInjector::Configure(const FaultProbabilities& p, uint64_t seed, uint64_t stream,
                              uint32_t reorder_hold) {
  if (held_) rte_pktmbuf_free(held_);
  held_ = nullptr;
  held_age_ = 0;
  uint64_t mix = seed ^ (0xa0761d6478bd642full * (stream + 1));
  rng_.Seed(mix);
  drop_ = Chance(p.drop);
  dup_ = Chance(p.duplicate);
  reorder_ = Chance(p.reorder);
  corrupt_ = Chance(p.corrupt);
  active_ = p.Any();
  reorder_hold_ = reorder_hold == 0 ? 1 : reorder_hold;
}

FaultCounts FaultInjector::counts() const {
  return {dropped_.Get(), duplicated_.Get(), reordered_.Get(), corrupted_.Get(), nomem_.Get()};
}

void FaultInjector::ResetCounts() {
  dropped_.Reset();
  duplicated_.Reset();
  reordered_.Reset();
  corrupted_.Reset();
  nomem_.Reset();
}

rte_mbuf* FaultInjector::TakeHeld() {
  rte_mbuf* m = held_;
  held_ = nullptr;
  held_age_ = 0;
  return m;
}

rte_mbuf* FaultInjector::Corrupt(rte_mbuf* m, rte_mempool* pool) {
  if (m->pkt_len == 0) return m;
  if (!Private(m)) {
    rte_mbuf* c = rte_pktmbuf_copy(m, pool, 0, UINT32_MAX);
    if (!c) {
      nomem_.Add();
      return m;
    }
    rte_pktmbuf_free(m);
    m = c;
  }
  uint64_t bit = rng_.Below(uint64_t{m->pkt_len} * 8);
  uint64_t byte = bit / 8;
  rte_mbuf* s = m;
  while (byte >= s->data_len) {
    byte -= s->data_len;
    s = s->next;
  }
  rte_pktmbuf_mtod(s, uint8_t*)[byte] ^= static_cast<uint8_t>(1u << (bit % 8));
  corrupted_.Add();
  return m;
}

uint16_t FaultInjector::Apply(rte_mbuf* const* in, uint16_t n, rte_mbuf** out, rte_mempool* pool) {
  uint16_t k = 0;
  bool fresh = false;  // held_ was held during this call
  for (uint16_t i = 0; i < n; i++) {
    rte_mbuf* m = in[i];
    if (drop_.Roll(rng_)) {
      dropped_.Add();
      rte_pktmbuf_free(m);
      continue;
    }
    if (corrupt_.Roll(rng_)) m = Corrupt(m, pool);
    rte_mbuf* dup = nullptr;
    if (dup_.Roll(rng_)) {
      dup = rte_pktmbuf_copy(m, pool, 0, UINT32_MAX);
      if (dup)
        duplicated_.Add();
      else
        nomem_.Add();
    }
    if (reorder_.Roll(rng_) && held_ == nullptr) {
      reordered_.Add();
      held_ = m;
      held_age_ = 0;
      fresh = true;
      if (dup) out[k++] = dup;
      continue;
    }
    out[k++] = m;
    if (dup) out[k++] = dup;
    if (held_) {  // held by an earlier packet: this one overtook it
      out[k++] = held_;
      held_ = nullptr;
      fresh = false;
    }
  }
  if (held_ && !fresh && ++held_age_ >= reorder_hold_) {
    // Waited `reorder_hold` burst calls without a successor.
    out[k++] = held_;
    held_ = nullptr;
    held_age_ = 0;
  }
  return k;
}

}  // namespace roce::port
