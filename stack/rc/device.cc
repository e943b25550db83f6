// SPDX-License-Identifier: MIT
#include "stack/rc/device.h"

#include <algorithm>

#include "stack/mem/place.h"
#include "stack/wire/icrc.h"
#include "stack/wire/mad.h"
#include "stack/wire/opcode.h"
#include "stack/wire/packet.h"

namespace roce::rc {

namespace {
constexpr uint32_t kQpIndexBits = 16;
constexpr uint32_t kQpIndexMask = (1u << kQpIndexBits) - 1;
constexpr uint32_t kFirstQpIndex = 2;  // QP0 and QP1 are special
}  // namespace

RcDevice::RcDevice(const Config& cfg, PacketSink* sink)
    : cfg_(cfg), sink_(sink), mem_(cfg.mem_seed, cfg.max_mem_objects) {
  cfg_.max_qps = std::clamp<uint32_t>(cfg_.max_qps, 1, kQpIndexMask - kFirstQpIndex);
  qps_.resize(cfg_.max_qps + kFirstQpIndex);
  qp_gen_.resize(qps_.size(), 0xFF);  // the first QPN of a slot has generation 0
  in_active_.resize(qps_.size(), 0);
  active_.Reserve(qps_.size());
  // The timer heap holds one live entry per QP and the stale ones its earlier
  // deadlines left (until they come due): room for several per QP up front,
  // so a burst of repairs does not grow it on the data path.
  std::vector<TimerEntry> heap;
  heap.reserve(4 * qps_.size() + 256);
  timers_ = decltype(timers_)(std::greater<TimerEntry>(), std::move(heap));
  for (uint32_t i = kFirstQpIndex; i < qps_.size(); i++) free_slots_.push_back(i);
}

RcDevice::~RcDevice() = default;

void RcDevice::ExpireQuarantine() {
  while (!quarantine_.empty() && now_ - quarantine_.front().first >= cfg_.qpn_quarantine_ns) {
    quarantined_.erase(quarantine_.front().second);
    quarantine_.pop_front();
  }
}

QueuePair* RcDevice::CreateQp(const QpCaps& caps, CompletionQueue* send_cq,
                              CompletionQueue* recv_cq, ReceiveQueue* srq, uint64_t context) {
  if (!send_cq || !recv_cq) return nullptr;
  ExpireQuarantine();
  // The least recently freed slot, with the next generation whose QPN is
  // not in quarantine: a number a peer may still be sending to is never
  // answered by a new QP (the generation alone would repeat after 256 reuses).
  for (size_t tries = free_slots_.size(); tries > 0; tries--) {
    const uint32_t i = free_slots_.front();
    free_slots_.pop_front();
    for (uint32_t g = 1; g <= 256; g++) {
      const uint8_t gen = static_cast<uint8_t>(qp_gen_[i] + g);
      const uint32_t qpn = (uint32_t{gen} << kQpIndexBits) | i;
      if (quarantined_.contains(qpn)) continue;
      qp_gen_[i] = gen;
      try {
        qps_[i] = std::make_unique<QueuePair>(this, qpn, caps, send_cq, recv_cq, srq, context);
      } catch (...) {
        free_slots_.push_front(i);  // no memory for its queues: the slot stays free
        throw;
      }
      return qps_[i].get();
    }
    free_slots_.push_back(i);  // every number of this slot is quarantined
  }
  return nullptr;
}

void RcDevice::DestroyQp(QueuePair* qp) {
  if (!qp) return;
  const uint32_t i = qp->qpn() & kQpIndexMask;
  if (i >= qps_.size() || qps_[i].get() != qp) return;
  const uint32_t qpn = qp->qpn();
  qps_[i].reset();
  in_active_[i] = 0;
  free_slots_.push_back(i);
  if (cfg_.qpn_quarantine_ns) {
    quarantine_.emplace_back(now_, qpn);
    quarantined_.insert(qpn);
  }
  ExpireQuarantine();
  // Stale entries in active_ / timers_ are skipped by qpn mismatch.
}

QueuePair* RcDevice::FindQp(uint32_t qpn) const {
  const uint32_t i = qpn & kQpIndexMask;
  if (i >= qps_.size() || !qps_[i] || qps_[i]->qpn() != qpn) return nullptr;
  return qps_[i].get();
}

wire::Error RcDevice::OnFrame(wire::ByteSpan frame, uint64_t now) {
  AdvanceTime(now);
  counters.rx_frames++;
  // The packet struct is reused from frame to frame (not cleared: the parser
  // sets every field a queue pair reads); a frame delivered from inside the
  // handling of another (a test's synchronous link) gets its own.
  if (rx_busy_) {
    wire::RocePacket p;
    const wire::Error e = ParseDeferring(frame, &p);
    if (e != wire::Error::kOk) counters.rx_errors[static_cast<size_t>(e)]++;
    else OnPacket(p, now);
    return e;
  }
  const wire::Error e = ParseDeferring(frame, &rx_pkt_);
  if (e != wire::Error::kOk) {
    counters.rx_errors[static_cast<size_t>(e)]++;
    return e;
  }
  rx_busy_ = true;
  OnPacket(rx_pkt_, now);
  rx_busy_ = false;
  return e;
}

wire::Error RcDevice::ParseDeferring(wire::ByteSpan frame, wire::RocePacket* p) const {
  wire::ParseOptions po = cfg_.parse;
  const bool verify = po.verify_icrc;
  po.verify_icrc = false;
  p->icrc_deferred = false;
  const wire::Error e = wire::ParseRoceFrame(frame, p, po);
  if (e != wire::Error::kOk || !verify) return e;
  const size_t l3 = p->l3_offset;
  const size_t at = static_cast<size_t>(p->payload.data() - frame.data());
  if (DeferIcrc(p->bth.opcode, p->payload.size())) {
    wire::Icrc c;
    if (!c.BeginAll(frame.subspan(l3, at - l3))) return wire::Error::kIcrcMismatch;
    p->icrc_partial = c.Value();
    p->icrc_deferred = true;
    return e;
  }
  const size_t icrc_at = at + p->payload.size() + p->pad.size();
  if (wire::ComputeIcrc(frame.subspan(l3, icrc_at - l3)) != p->icrc) return wire::Error::kIcrcMismatch;
  return e;
}

bool RcDevice::CheckDeferred(const wire::RocePacket& p, QueuePair** placed) {
  *placed = nullptr;
  QueuePair* qp = p.bth.dest_qp == wire::kGsiQpn ? nullptr : FindQp(p.bth.dest_qp);
  uint8_t* dst = qp ? qp->InPlaceTarget(p) : nullptr;
  uint32_t crc = p.icrc_partial;
  if (dst) {
    crc = mem::PlaceInOrderCrc32(dst, p.payload.data(), p.payload.size(), crc);
    counters.rx_placed_in_pass++;
  } else {
    crc = wire::Icrc::Extend(crc, p.payload);
  }
  crc = wire::Icrc::Extend(crc, p.pad);
  if (crc != p.icrc) {
    counters.rx_errors[static_cast<size_t>(wire::Error::kIcrcMismatch)]++;
    if (dst) counters.rx_placed_dropped++;
    return false;
  }
  if (dst) *placed = qp;
  return true;
}

void RcDevice::OnPacket(const wire::RocePacket& p, uint64_t now) {
  AdvanceTime(now);
  if (p.icrc_deferred) [[unlikely]] {
    QueuePair* placed = nullptr;
    if (!CheckDeferred(p, &placed)) return;
    if (placed) {  // the QP the packet's QPN names, as below
      placed->placed_ = &p;
      placed->OnPacket(p, now);
      placed->placed_ = nullptr;
      return;
    }
  }
  if (p.bth.dest_qp == wire::kGsiQpn) {
    if (gsi_) gsi_(p, now);
    else counters.rx_unknown_qp++;
    return;
  }
  QueuePair* qp = FindQp(p.bth.dest_qp);
  if (!qp) {
    counters.rx_unknown_qp++;
    return;
  }
  qp->OnPacket(p, now);
}

void RcDevice::MarkActive(QueuePair* qp) {
  const uint32_t i = qp->qpn() & kQpIndexMask;
  if (in_active_[i]) return;
  in_active_[i] = 1;
  active_.push_back(qp->qpn());
}

void RcDevice::TimerChanged(QueuePair* qp) {
  const uint64_t d = qp->Deadline();
  if (d && (qp->scheduled_timer_ == 0 || d < qp->scheduled_timer_)) {
    qp->scheduled_timer_ = d;
    timers_.push({d, qp->qpn()});
  }
}

bool RcDevice::Transmit(const TxPacket& pkt, uint64_t now) {
  if (!sink_->Transmit(pkt, now)) {
    counters.tx_busy++;
    return false;
  }
  counters.tx_packets++;
  return true;
}

uint64_t RcDevice::NextDeadline() {
  while (!timers_.empty()) {
    const auto [d, qpn] = timers_.top();
    QueuePair* qp = FindQp(qpn);
    if (qp && qp->scheduled_timer_ == d) return d;
    timers_.pop();  // stale
  }
  return 0;
}

size_t RcDevice::TransmitNow(QueuePair& qp, uint64_t now) {
  AdvanceTime(now);
  // PollTx caps the turn at tuning().max_tx_per_poll; the QP stays on the
  // active list (PostSend put it there), so Poll gives it the rest.
  return qp.PollTx(now, SIZE_MAX);
}

size_t RcDevice::Poll(uint64_t now, size_t budget) {
  AdvanceTime(now);
  // Timers first.
  while (!timers_.empty() && timers_.top().first <= now) {
    const auto [d, qpn] = timers_.top();
    timers_.pop();
    QueuePair* qp = FindQp(qpn);
    if (!qp || qp->scheduled_timer_ != d) continue;
    qp->scheduled_timer_ = 0;
    qp->OnTimer(now);
    TimerChanged(qp);  // a later deadline still pending gets its entry back
  }
  // Then a round-robin turn for every active QP.
  size_t sent = 0;
  size_t turns = active_.size();
  while (turns-- > 0 && sent < budget) {
    const uint32_t qpn = active_.front();
    active_.pop_front();
    const uint32_t i = qpn & kQpIndexMask;
    QueuePair* qp = FindQp(qpn);
    if (!qp) continue;  // destroyed since it was queued
    in_active_[i] = 0;
    sent += qp->PollTx(now, budget - sent);
    if (qp->HasTxWork()) MarkActive(qp);
  }
  return sent;
}

}  // namespace roce::rc
