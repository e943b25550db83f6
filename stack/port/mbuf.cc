// SPDX-License-Identifier: MIT
#include "stack/port/mbuf.h"

#include <algorithm>
#include <cstring>

namespace roce::port {

uint32_t SegmentRoom(const rte_mempool* pool) {
  return rte_pktmbuf_data_room_size(const_cast<rte_mempool*>(pool));
}

uint32_t FirstSegmentRoom(const rte_mempool* pool) {
  uint32_t room = SegmentRoom(pool);
  return room > RTE_PKTMBUF_HEADROOM ? room - RTE_PKTMBUF_HEADROOM : 0;
}

namespace {

// A chain of segments that use their whole buffer (data_off = 0) holding
// `len` > 0 bytes, copied from src when given. Allocated 32 at a time in bulk;
// nullptr (nothing leaked) if the pool runs dry.
rte_mbuf* PayloadChain(rte_mempool* pool, uint32_t len, const uint8_t* src) {
  const uint32_t room = SegmentRoom(pool);
  if (room == 0 || len == 0) return nullptr;
  const uint32_t nsegs = (len + room - 1) / room;
  if (nsegs > RTE_MBUF_MAX_NB_SEGS) return nullptr;
  rte_mbuf* head = nullptr;
  rte_mbuf* tail = nullptr;
  uint32_t left = len;
  for (uint32_t done = 0; done < nsegs;) {
    rte_mbuf* v[32];
    const uint32_t n = std::min<uint32_t>(32, nsegs - done);
    if (rte_pktmbuf_alloc_bulk(pool, v, n) != 0) {
      if (head) rte_pktmbuf_free(head);
      return nullptr;
    }
    for (uint32_t i = 0; i < n; i++) {
      rte_mbuf* s = v[i];
      s->data_off = 0;
      const uint16_t take = static_cast<uint16_t>(std::min(left, room));
      if (src) {
        std::memcpy(rte_pktmbuf_mtod(s, uint8_t*), src, take);
        src += take;
      }
      s->data_len = take;
      left -= take;
      if (tail) {
        tail->next = s;
        head->nb_segs++;
        head->pkt_len += take;
      } else {
        head = s;
        s->pkt_len = take;
      }
      tail = s;
    }
    done += n;
  }
  return head;
}

}  // namespace

rte_mbuf* AllocFrame(rte_mempool* pool, uint32_t len) {
  const uint32_t first = FirstSegmentRoom(pool);
  if (first == 0) return nullptr;
  rte_mbuf* head = rte_pktmbuf_alloc(pool);
  if (!head) return nullptr;
  const uint32_t take = std::min(len, first);
  head->data_len = static_cast<uint16_t>(take);
  head->pkt_len = take;
  if (len > take) {
    rte_mbuf* rest = PayloadChain(pool, len - take, nullptr);
    if (!rest || !AppendSegment(head, rest)) {
      if (rest) rte_pktmbuf_free(rest);
      rte_pktmbuf_free(head);
      return nullptr;
    }
  }
  return head;
}

rte_mbuf* AllocHeader(rte_mempool* pool, uint16_t hdr_len) {
  if (hdr_len > FirstSegmentRoom(pool)) return nullptr;
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  if (!m) return nullptr;
  m->data_len = hdr_len;
  m->pkt_len = hdr_len;
  return m;
}

bool AppendSegment(rte_mbuf* head, rte_mbuf* seg) { return rte_pktmbuf_chain(head, seg) == 0; }

bool AppendCopy(rte_mbuf* head, rte_mempool* pool, ByteSpan data) {
  if (data.empty()) return true;
  rte_mbuf* last = rte_pktmbuf_lastseg(head);
  // Only a segment we own alone may be written past its data.
  const uint32_t tailroom =
      rte_mbuf_refcnt_read(last) == 1 && RTE_MBUF_DIRECT(last) ? rte_pktmbuf_tailroom(last) : 0;
  const uint32_t in_last = std::min<uint32_t>(tailroom, static_cast<uint32_t>(data.size()));
  const uint32_t rest = static_cast<uint32_t>(data.size()) - in_last;
  rte_mbuf* more = nullptr;
  if (rest > 0) {
    more = PayloadChain(pool, rest, data.data() + in_last);
    if (!more) return false;
    if (uint32_t{head->nb_segs} + more->nb_segs > RTE_MBUF_MAX_NB_SEGS) {
      rte_pktmbuf_free(more);
      return false;
    }
  }
  if (in_last > 0) {
    std::memcpy(rte_pktmbuf_mtod_offset(last, uint8_t*, last->data_len), data.data(), in_last);
    last->data_len = static_cast<uint16_t>(last->data_len + in_last);
    head->pkt_len += in_last;
  }
  if (more) {
    const bool ok = AppendSegment(head, more);
    (void)ok;  // the segment count was checked above
  }
  return true;
}

bool WriteAt(rte_mbuf* m, uint32_t off, ByteSpan data) {
  if (uint64_t{off} + data.size() > m->pkt_len) return false;
  size_t done = 0;
  for (rte_mbuf* s = m; s && done < data.size(); s = s->next) {
    if (off >= s->data_len) {
      off -= s->data_len;
      continue;
    }
    size_t take = std::min<size_t>(s->data_len - off, data.size() - done);
    std::memcpy(rte_pktmbuf_mtod_offset(s, uint8_t*, off), data.data() + done, take);
    done += take;
    off = 0;
  }
  return done == data.size();
}

size_t CopyOut(const rte_mbuf* m, uint32_t off, MutByteSpan out) {
  size_t done = 0;
  for (const rte_mbuf* s = m; s && done < out.size(); s = s->next) {
    if (off >= s->data_len) {
      off -= s->data_len;
      continue;
    }
    size_t take = std::min<size_t>(s->data_len - off, out.size() - done);
    std::memcpy(out.data() + done, rte_pktmbuf_mtod_offset(s, const uint8_t*, off), take);
    done += take;
    off = 0;
  }
  return done;
}

ByteSpan ReadContiguous(const rte_mbuf* m, uint32_t off, uint32_t len, uint8_t* scratch) {
  const void* p = rte_pktmbuf_read(m, off, len, scratch);
  if (!p) return {};
  return {static_cast<const uint8_t*>(p), len};
}

void GatherParts(const rte_mbuf* m, std::vector<std::pair<const uint8_t*, size_t>>* parts) {
  parts->clear();
  for (ByteSpan s : SegmentsOf(m)) parts->emplace_back(s.data(), s.size());
}

rte_mbuf* LinearCopy(const rte_mbuf* m, rte_mempool* pool) {
  if (m->pkt_len > FirstSegmentRoom(pool)) return nullptr;
  rte_mbuf* c = rte_pktmbuf_alloc(pool);
  if (!c) return nullptr;
  CopyOut(m, 0, MutByteSpan(rte_pktmbuf_mtod(c, uint8_t*), m->pkt_len));
  c->data_len = static_cast<uint16_t>(m->pkt_len);
  c->pkt_len = m->pkt_len;
  c->port = m->port;
  c->ol_flags = m->ol_flags;
  c->tx_offload = m->tx_offload;
  c->packet_type = m->packet_type;
  c->vlan_tci = m->vlan_tci;
  c->hash = m->hash;
  return c;
}

RxChecksum RxIpChecksum(const rte_mbuf* m) {
  switch (m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) {
    case RTE_MBUF_F_RX_IP_CKSUM_GOOD: return RxChecksum::kGood;
    case RTE_MBUF_F_RX_IP_CKSUM_BAD: return RxChecksum::kBad;
    case RTE_MBUF_F_RX_IP_CKSUM_NONE: return RxChecksum::kNone;
    default: return RxChecksum::kUnknown;
  }
}

RxChecksum RxL4Checksum(const rte_mbuf* m) {
  switch (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) {
    case RTE_MBUF_F_RX_L4_CKSUM_GOOD: return RxChecksum::kGood;
    case RTE_MBUF_F_RX_L4_CKSUM_BAD: return RxChecksum::kBad;
    case RTE_MBUF_F_RX_L4_CKSUM_NONE: return RxChecksum::kNone;
    default: return RxChecksum::kUnknown;
  }
}

void PrefetchAhead(rte_mbuf* const* pkts, uint16_t n, int i) {
  // Each stage needs a line the one before fetched: the frame's mbuf's second
  // line holds next, the segment's holds shinfo and its next (the tail), the
  // tail's first line its data. kPrefetchAhead, /2, /4, 1 frames ahead.
  static_assert(kPrefetchAhead >= 8);
  constexpr int kSeg = kPrefetchAhead / 2, kRef = kPrefetchAhead / 4;
  if (i + kPrefetchAhead < n) {
    const rte_mbuf* m = pkts[i + kPrefetchAhead];
    rte_prefetch0(rte_pktmbuf_mtod(m, const void*));
    PrefetchForWrite(&m->next);
  }
  if (i + kSeg >= 0 && i + kSeg < n) {
    if (const rte_mbuf* s = pkts[i + kSeg]->next) {
      PrefetchForWrite(s);
      PrefetchForWrite(&s->next);
    }
  }
  if (i + kRef >= 0 && i + kRef < n) {
    if (const rte_mbuf* s = pkts[i + kRef]->next) {
      if (RTE_MBUF_HAS_EXTBUF(s)) {
        PrefetchForWrite(s->shinfo);
        // Detaching it (the free) reads its mempool header, in the line before.
        rte_prefetch0(reinterpret_cast<const char*>(s) - 1);
      }
      if (const rte_mbuf* t = s->next) {
        PrefetchForWrite(t);
        PrefetchForWrite(&t->next);
      }
    }
  }
  if (i + 1 >= 0 && i + 1 < n) {
    const rte_mbuf* s = pkts[i + 1]->next;
    if (s && s->next) rte_prefetch0(rte_pktmbuf_mtod(s->next, const void*));  // the pad and the ICRC
  }
}

}  // namespace roce::port
