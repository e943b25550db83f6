// SPDX-License-Identifier: MIT
// Queue-pair state shared by the three roles: construction, state
// transitions, posting, packet dispatch, timers and the TX turn.
#include "stack/rc/qp.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <new>
#include <type_traits>

#include <absl/strings/str_format.h>

#include "stack/mem/memory_table.h"
#include "stack/rc/device.h"
#include "stack/wire/bytes.h"
#include "stack/wire/psn.h"

namespace roce::rc {

using namespace roce::wire;

uint32_t QueuePair::SendWqe::LastPsn() const { return PsnAdd(first_psn, int64_t{npkts} - 1); }

QueuePair::QueuePair(RcDevice* dev, uint32_t qpn, const QpCaps& caps, CompletionQueue* send_cq,
                     CompletionQueue* recv_cq, ReceiveQueue* srq, uint64_t context)
    : dev_(dev),
      mem_(&dev->memory()),
      qpn_(qpn),
      context_(context),
      caps_(caps),
      send_cq_(send_cq),
      recv_cq_(recv_cq),
      srq_(srq),
      rq_(srq ? 1 : caps.rq_depth, srq ? 1 : caps.max_recv_sge) {
  caps_.sq_depth = std::max<uint32_t>(caps_.sq_depth, 1);
  caps_.max_send_sge = std::clamp<uint32_t>(caps_.max_send_sge, 1, kMaxSge);
  caps_.max_recv_sge = std::clamp<uint32_t>(caps_.max_recv_sge, 1, kMaxSge);
  // A power-of-two ring (slots by mask); sq_depth WQEs at most in it.
  const size_t ring = std::bit_ceil(caps_.sq_depth);
  sq_mask_ = ring - 1;
  sq_.resize(ring);
  sq_sges_.resize(ring * caps_.max_send_sge);
  sq_inline_.resize(ring * caps_.max_inline);
}

// ---- state transitions ------------------------------------------------------

bool QueuePair::ToInit() {
  if (state_ != QpState::kReset) return false;
  state_ = QpState::kInit;
  return true;
}

bool QueuePair::ToRtr(const QpAttr& attr) {
  if (state_ != QpState::kInit) return false;
  switch (attr.path_mtu) {
    case 256: case 512: case 1024: case 2048: case 4096: break;
    default: return false;
  }
  if (attr.dest_qpn > kPsnMask || attr.max_dest_rd_atomic == 0) return false;
  attr_ = attr;
  repairs_ = attr.peer_repairs && dev_->tuning().selective_repair;
  ooo_window_ = attr.peer_repairs ? dev_->tuning().ooo_window : 0;
  attr_.sq_psn &= kPsnMask;
  attr_.rq_psn &= kPsnMask;
  net_ = attr.path;
  net_.eth.ethertype = net_.ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4;
  if (net_.ipv6) {
    net_.ip6.next_header = kIpProtoUdp;
  } else {
    net_.ip4.protocol = kIpProtoUdp;
    net_.ip4.ihl = 5;
    net_.ip4.flags_frag = Ipv4Header::kFlagDf;
  }
  net_.udp.dst_port = kRoceV2Port;
  net_.udp.checksum = 0;
  if (net_.udp.src_port == 0) {
    // Source-port entropy as Linux derives it: a 20-bit flow label folded
    // from the two QPNs, then into 0xC000..0xFFFF.
    uint64_t v = uint64_t{qpn_} * attr_.dest_qpn;
    v ^= v >> 20;
    v ^= v >> 40;
    const uint32_t fl = static_cast<uint32_t>(v & 0xFFFFF);
    net_.udp.src_port = static_cast<uint16_t>(((fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14)) | 0xC000);
  }
  tmpl_.Build(net_);
  epsn_ = attr_.rq_psn;
  msn_ = 0;
  nak_sent_ = false;
  ClearOoo();
  in_msg_ = InMsg::kNone;
  read_res_.assign(attr_.max_dest_rd_atomic, ReadResource{});
  read_res_next_ = 0;
  max_responses_ = 2u * attr_.max_dest_rd_atomic + 32;
  // Room for the limit and the ACK / NAK that may follow a full queue.
  responses_.Reserve(max_responses_ + 4);
  read_reqs_.Reserve(std::max<uint32_t>(attr_.max_rd_atomic, 1));
  state_ = QpState::kRtr;
  return true;
}

bool QueuePair::ToRts(uint64_t now) {
  (void)now;
  if (state_ != QpState::kRtr) return false;
  next_psn_ = una_ = max_sent_ = attr_.sq_psn;
  retry_left_ = attr_.retry_cnt;
  rnr_left_ = attr_.rnr_retry;
  stall_left_ = static_cast<int>(dev_->tuning().max_stalled_retries);
  reorder_thresh_ = std::max<uint32_t>(dev_->tuning().reorder_threshold, 1);
  heard_ = false;
  hole_active_ = false;
  acked_ = una_;
  repair_ = Repair::kNone;
  hole_deadline_ = 0;
  read_hold_at_ = 0;
  read_hold_unheard_ = 0;
  reo_wnd_ = 0;
  repairs_needed_ = 0;
  srtt_ = rttvar_ = min_rtt_ = 0;
  rtt_pending_ = false;
  const QpTuning& t = dev_->tuning();
  read_reqs_.clear();
  read_wnd_ = t.read_window_max
                  ? std::clamp(t.read_window, kReadWindowMin, std::max(t.read_window_max, kReadWindowMin))
                  : 0;
  read_ssthresh_ = t.read_window_max;
  read_wnd_acc_ = 0;
  read_recovering_ = false;
  read_probe_at_ = 0;
  read_heard_ = false;
  tail_probe_at_ = 0;
  tail_probe_due_ = tail_probed_ = false;
  tail_pto_ = TailProbeNs();
  state_ = QpState::kRts;
  if (cursor_ < sq_tail_) dev_->MarkActive(this);
  return true;
}

void QueuePair::ToError() {
  if (state_ == QpState::kReset) return;
  state_ = QpState::kError;
  // Send queue: in posting order, finished WQEs keep their status, the
  // failing one (if any) carries its error, everything else is canceled.
  // Once one completes in error, every later one is flushed, even a Read
  // whose responses all came ahead of an older request's.
  bool flushing = false;
  while (sq_head_ != sq_tail_) {
    SendWqe& w = Slot(sq_head_);
    if ((!w.done || flushing) && w.status == Status::kSuccess) {
      w.status = Status::kCanceled;
      w.cause = Cause::kFlushed;
    }
    if (w.status != Status::kSuccess) flushing = true;
    PushSendCompletion(w);
    sq_head_++;
  }
  cursor_ = ack_scan_ = sq_tail_;
  cursor_pkt_ = 0;
  read_reqs_.clear();
  rereq_.clear();
  retrans_deadline_ = rnr_deadline_ = hole_deadline_ = read_hold_at_ = read_probe_at_ = tail_probe_at_ = 0;
  tail_probe_due_ = false;
  repair_ = Repair::kNone;
  // Receive side: the receive in progress and every posted receive.
  if (have_recv_) CompleteRecv(Status::kCanceled, Cause::kFlushed);
  if (!srq_) {
    while (const RecvWqe* r = rq_.Front()) {
      Completion c;
      c.qp_context = context_;
      c.request_context = r->context;
      c.status = Status::kCanceled;
      c.cause = Cause::kFlushed;
      c.type = RequestType::kReceive;
      c.qpn = qpn_;
      rq_.Pop();  // first: whoever sees the completion sees the slot free
      recv_cq_->Push(c);
    }
  }
  in_msg_ = InMsg::kNone;
  responses_.clear();
  ClearOoo();
  cnp_owed_ = false;
  dev_->TimerChanged(this);
}

void QueuePair::ToReset() {
  state_ = QpState::kReset;
  sends_retired_.store(sends_retired_.load(std::memory_order_relaxed) + (sq_tail_ - sq_head_),
                       std::memory_order_release);  // dropped: retired without completions
  sq_head_ = sq_tail_ = cursor_ = ack_scan_ = 0;
  cursor_pkt_ = 0;
  read_reqs_.clear();
  rereq_.clear();
  retrans_deadline_ = rnr_deadline_ = hole_deadline_ = read_hold_at_ = read_probe_at_ = tail_probe_at_ = 0;
  tail_probe_due_ = false;
  repair_ = Repair::kNone;
  send_error_ = false;
  have_recv_ = false;
  in_msg_ = InMsg::kNone;
  responses_.clear();
  ClearOoo();
  while (!srq_ && rq_.Front()) rq_.Pop();
  cnp_owed_ = false;
  have_cnp_time_ = false;
  dev_->TimerChanged(this);
}

// ---- posting ----------------------------------------------------------------

PostResult QueuePair::PostSend(const SendWr& wr) {
  if (state_ == QpState::kReset) return PostResult::kInvalidState;
  if (wr.num_sge > caps_.max_send_sge) return PostResult::kTooManySge;
  if (wr.num_sge && !wr.sge) return PostResult::kInvalidParameter;
  if (sq_tail_ - sq_head_ >= caps_.sq_depth) return PostResult::kQueueFull;
  uint64_t total = 0;
  for (uint32_t i = 0; i < wr.num_sge; i++) total += wr.sge[i].length;
  const bool local = wr.op == WrOp::kBind || wr.op == WrOp::kInvalidate;
  if (!local && total > kMaxMessage) return PostResult::kInvalidParameter;
  const bool inl = (wr.flags & kInline) && !local;
  if (inl) {
    if (wr.op == WrOp::kRead) return PostResult::kInvalidParameter;
    if (total > caps_.max_inline) return PostResult::kInlineTooLarge;
  }
  // Everything before this request sent and acknowledged (the doorbell may
  // send it at once). Local operations (Bind, Invalidate) wait for Poll.
  const bool idle = !local && ack_scan_ == sq_tail_ && rereq_.empty();
  const size_t slot = sq_tail_ & sq_mask_;
  SendWqe& w = sq_[slot];
  static_assert(std::is_trivially_destructible_v<SendWqe>);
  new (&w) SendWqe();  // the member initialisers, no zero fill
  w.wr = wr;
  w.length = local ? 0 : static_cast<uint32_t>(total);
  Sge* sges = &sq_sges_[slot * caps_.max_send_sge];
  if (inl) {
    // Inline: the bytes are copied now; the caller may reuse its buffers.
    w.inline_data = &sq_inline_[slot * caps_.max_inline];
    size_t off = 0;
    for (uint32_t i = 0; i < wr.num_sge; i++) {
      wire::CopySmall(w.inline_data + off, reinterpret_cast<const uint8_t*>(wr.sge[i].addr), wr.sge[i].length);
      off += wr.sge[i].length;
    }
    w.wr.sge = nullptr;
    w.wr.num_sge = 0;
  } else {
    std::copy(wr.sge, wr.sge + wr.num_sge, sges);
    w.wr.sge = sges;
  }
  sq_tail_++;
  if (state_ == QpState::kError) {
    // Posting to a QP in error: flushed at once, in order.
    w.status = Status::kCanceled;
    w.cause = Cause::kFlushed;
    PushSendCompletion(w);
    sq_head_ = cursor_ = ack_scan_ = sq_tail_;
    return PostResult::kOk;
  }
  if (state_ == QpState::kRts) {
    dev_->MarkActive(this);
    dev_->Doorbell(*this, idle);
  }
  return PostResult::kOk;
}

PostResult QueuePair::PostRecv(const RecvWr& wr) {
  if (srq_) return PostResult::kInvalidState;  // post to the SRQ instead
  if (state_ == QpState::kReset) return PostResult::kInvalidState;
  const PostResult r = rq_.Post(wr);
  if (r == PostResult::kOk && state_ == QpState::kError) {
    const RecvWqe* f = rq_.Front();
    Completion c;
    c.qp_context = context_;
    c.request_context = f->context;
    c.status = Status::kCanceled;
    c.cause = Cause::kFlushed;
    c.type = RequestType::kReceive;
    c.qpn = qpn_;
    rq_.Pop();  // first: whoever sees the completion sees the slot free
    recv_cq_->Push(c);
  }
  return r;
}

// ---- dispatch, TX turn, timers ------------------------------------------------------

void QueuePair::OnPacket(const RocePacket& p, uint64_t now) {
  if (state_ != QpState::kRtr && state_ != QpState::kRts) {
    counters.dropped_state++;
    return;
  }
  // RC only, from our peer, on our partition.
  const OpcodeInfo& info = p.info();
  if ((info.transport != Transport::kRc && info.transport != Transport::kCnp) ||
      p.bth.pkey != 0xFFFF || !p.IsReplyTo(net_)) {
    counters.dropped_bad++;
    return;
  }
  counters.rx_packets++;
  counters.rx_bytes += p.payload.size();
  if (info.transport == Transport::kCnp) {
    counters.cnps_received++;
    return;
  }
  if (info.request) {
    OnRequest(p, now);
  } else if (state_ == QpState::kRts) {
    heard_ = true;  // the peer is there, whatever this response says
    resp_rx_++;
    OnResponse(p, now);
  } else {
    counters.dropped_state++;
  }
  if (HasTxWork()) dev_->MarkActive(this);
}

bool QueuePair::HasTxWork() const {
  if (state_ != QpState::kRtr && state_ != QpState::kRts) return false;
  if (cnp_owed_ || !responses_.empty()) return true;
  return state_ == QpState::kRts && (cursor_ < sq_tail_ || !rereq_.empty()) && rnr_deadline_ == 0;
}

size_t QueuePair::PollTx(uint64_t now, size_t budget) {
  budget = std::min<size_t>(budget, dev_->tuning().max_tx_per_poll);
  size_t n = 0;
  if (state_ != QpState::kRtr && state_ != QpState::kRts) return 0;
  // Responses first: they complete the peer's work and free its window.
  n += ResponderTx(now, budget);
  if (state_ == QpState::kRts && n < budget) n += RequesterTx(now, budget - n);
  return n;
}

uint64_t QueuePair::Deadline() const {
  // 0 (unset) as the largest value, so the earliest is a plain minimum
  // (branch-free: this runs after every packet that arms or moves a timer).
  const auto key = [](uint64_t t) { return t - 1; };  // 0 wraps to UINT64_MAX
  const uint64_t repair = repair_ == Repair::kWait || repair_ == Repair::kHold || repair_ == Repair::kGoBackWait
                              ? repair_at_
                              : 0;
  uint64_t m = std::min(key(retrans_deadline_), key(rnr_deadline_));
  m = std::min(m, key(repair));
  m = std::min(m, key(hole_deadline_));
  m = std::min(m, key(read_hold_at_));
  m = std::min(m, key(read_probe_at_));
  m = std::min(m, key(tail_probe_at_));
  return m + 1;  // UINT64_MAX (none set) wraps back to 0
}

void QueuePair::OnTimer(uint64_t now) {
  if (state_ != QpState::kRts) return;
  if (repair_ == Repair::kGoBackWait && now >= repair_at_) {
    repair_ = Repair::kNone;
    counters.repair_go_back++;
    dev_->Event(qpn_, "repair-go-back", acked_, repair_hi_);
    GoBackBounded(acked_, repair_hi_);
  }
  if ((repair_ == Repair::kWait || repair_ == Repair::kHold) && repair_at_ && now >= repair_at_) {
    // kWait: the gap was not filled by a late packet; kHold: no answer to
    // the resend (it or the answer was lost): again, a retry that spends
    // the stall budget (a peer that answers nothing fails by the timer).
    const bool again = repair_ == Repair::kHold;  // (never after a timeout: no hold deadline)
    repair_ = Repair::kDue;
    if (again && !ConsumeRetry(/*silent=*/false)) {
      dev_->TimerChanged(this);
      return;
    }
    dev_->MarkActive(this);
  }
  if (hole_deadline_ && now >= hole_deadline_) {
    hole_deadline_ = 0;
    SendWqe* rd = OldestOpenRead();
    if (rd && hole_active_ && hole_psn_ == rd->resp_psn)
      NoteBeyondHole(*rd, now, /*implied=*/false, /*deadline=*/true);
    if (state_ != QpState::kRts) return;
  }
  if (read_hold_at_ && now >= read_hold_at_) {
    read_hold_at_ = 0;
    SendWqe* rd = OldestOpenRead();
    if (rd && rd->resp_psn == read_hold_psn_ && rd->asked && PsnDiff(rd->asked_to, rd->resp_psn) > 0 &&
        !ReRequestDue(*rd)) {
      // The gap a re-request asked for is still there: it or its replay was
      // lost. Again (a retry that spends the stall budget, as a repair's).
      // Nothing heard from the peer since the last retry: it may be silent
      // (descheduled, its link down), so the next hold is twice as long
      // (ReadHoldNs), and a silence of seconds costs a dozen retries, not one
      // every two round trips — 64 of those, under a second, had failed the
      // connection (retries-exhausted-stalled) while the retransmit timer
      // would have waited out retry_cnt timeouts.
      read_hold_unheard_ = heard_ ? 0 : read_hold_unheard_ + 1;
      rd->asked = false;
      counters.read_rerequests++;
      dev_->Event(qpn_, "rerequest-again", rd->resp_psn, read_hold_tries_);
      if (!ConsumeRetry(/*silent=*/false)) {
        dev_->TimerChanged(this);
        return;
      }
      ReadWindowLoss();
      ReRequestRead(*rd, ReadLostEnd(*rd), /*gap=*/true);
      dev_->MarkActive(this);
    }
  }
  if (read_probe_at_ && now >= read_probe_at_) {
    read_probe_at_ = 0;
    OnReadProbe(now);
    if (state_ != QpState::kRts) return;
  }
  if (tail_probe_at_ && now >= tail_probe_at_) {
    tail_probe_at_ = 0;
    OnTailProbe(now);
  }
  if (rnr_deadline_ && now >= rnr_deadline_) {
    rnr_deadline_ = 0;
    ArmRetransmitTimer(now);
    dev_->MarkActive(this);
  }
  if (retrans_deadline_ && now >= retrans_deadline_) {
    retrans_deadline_ = 0;
    if (una_ != next_psn_) {
      counters.timeouts++;
      if (PsnDiff(acked_, una_) < 0) acked_ = una_;
      const bool silent = !heard_;
      if (silent) counters.silent_timeouts++;
      dev_->Event(qpn_, silent ? "timeout-silent" : "timeout", una_, retry_left_);
      if (ConsumeRetry(silent)) {
        seq_nak_active_ = false;
        tail_probe_due_ = false;  // the retry resends it
        repair_ = Repair::kNone;
        rtt_pending_ = false;
        // A lost re-request is sent again from here (go-back-N from una_
        // re-requests an unanswered Read from its next expected response).
        for (uint64_t i = ack_scan_; i != sq_tail_; i++) {
          SendWqe& w = Slot(i);
          if (!w.started) break;
          w.gap_retry = false;
          w.asked = false;
          w.lost_from = w.lost_to = 0;
        }
        rereq_.clear();
        read_hold_at_ = 0;
        hole_active_ = false;
        // Go back to the first PSN the responder has not confirmed; an
        // unanswered Read before it asks again for what it misses.
        // With selective repair that is one packet, whose answer tells
        // whether anything after it is missing (StartRepair).
        // Not after a silent pass: then everything goes again, so that one
        // more lost frame cannot make the next pass silent too.
        if (silent || !RepairNow(acked_, now, RepairCause::kTimeout)) RetryFrom(acked_);
        // Every open Read asks again for all it misses (the cursor's pass
        // for those it has not passed), within the read window, which starts
        // again from its minimum.
        bool reads = false;
        for (uint64_t i = ack_scan_; i != sq_tail_; i++) {
          SendWqe& w = Slot(i);
          if (!w.started) break;
          if (!w.IsRead() || w.done) continue;
          reads = true;
          ReRequestRead(w, w.req_pkts, /*gap=*/false);
        }
        if (reads) ReadWindowTimeout();
        probe_ = true;
        ArmRetransmitTimer(now);
        dev_->MarkActive(this);
      }
    }
  }
  dev_->TimerChanged(this);
}

bool QueuePair::Send(TxPacket& pkt, uint64_t now) {
  pkt.net = &net_;
  pkt.tmpl = &tmpl_;
  // Anything but this QP's inline buffer is registered memory, which the
  // sink may reference until it is deregistered (zero-copy, rc/tx.h).
  const auto p0 = reinterpret_cast<uintptr_t>(pkt.nseg ? pkt.seg[0].p : nullptr);
  const auto in0 = reinterpret_cast<uintptr_t>(sq_inline_.data());
  pkt.registered = pkt.nseg != 0 && !(p0 >= in0 && p0 < in0 + sq_inline_.size());
  pkt.qpn = qpn_;
  pkt.bth.pkey = 0xFFFF;
  pkt.bth.dest_qp = attr_.dest_qpn;
  if (!dev_->Transmit(pkt, now)) return false;
  counters.tx_packets++;
  counters.tx_bytes += pkt.payload_len;
  return true;
}

}  // namespace roce::rc

namespace roce::rc {

std::string QueuePair::DebugState() const {
  std::string s = absl::StrFormat(
      "qpn=%06x state=%s peer_repairs=%d next_psn=%u una=%u acked=%u max_sent=%u wqes=[%u,%u) cursor=%u+%u "
      "retry_left=%d rnr_left=%d stall_left=%d heard=%d probe=%d srtt_ns=%u rttvar_ns=%u reo_wnd_ns=%u "
      "reorder_thresh=%u repair=%d repair_psn=%u repair_tries=%u retrans_in_ns=%d rnr_in_ns=%d "
      "hole=%d hole_psn=%u read_hold_psn=%u read_hold_tries=%u read_hold_in_ns=%d reads_out=%u read_wnd=%u "
      "read_inflight=%u read_ssthresh=%u read_recovering=%d rereq=%u epsn=%u",
      qpn_, QpStateName(state_), repairs_, next_psn_, una_, acked_, max_sent_, sq_head_, sq_tail_, cursor_,
      cursor_pkt_, retry_left_, rnr_left_, stall_left_, heard_, probe_, srtt_, rttvar_, reo_wnd_, reorder_thresh_,
      static_cast<int>(repair_), repair_psn_, repair_tries_,
      retrans_deadline_ ? static_cast<int64_t>(retrans_deadline_ - dev_->now()) : -1,
      rnr_deadline_ ? static_cast<int64_t>(rnr_deadline_ - dev_->now()) : -1, hole_active_, hole_psn_,
      read_hold_psn_, read_hold_tries_, read_hold_at_ ? static_cast<int64_t>(read_hold_at_ - dev_->now()) : -1,
      read_reqs_.size(), read_wnd_, ReadInFlight(), read_ssthresh_, read_recovering_, rereq_.size(), epsn_);
  for (uint64_t i = sq_head_; i != sq_tail_; i++) {  // the oldest open Read, where a Read stalls
    const SendWqe& w = Slot(i);
    if (!w.started) break;
    if (!w.IsRead() || w.done) continue;
    absl::StrAppendFormat(&s,
                          " read{wqe=%u first_psn=%u npkts=%u req_pkts=%u resp_psn=%u ahead=%u asked=%d "
                          "asked_to=%u replay_hi=%u gap_psn=%u}",
                          i, w.first_psn, w.npkts, w.req_pkts, w.resp_psn, w.ooo.Count(), w.asked, w.asked_to,
                          w.replay_hi, w.gap_psn);
    break;
  }
  counters.ForEach([&s](const char* name, uint64_t v) {
    if (v) absl::StrAppendFormat(&s, " %s=%u", name, v);
  });
  return s;
}

}  // namespace roce::rc
