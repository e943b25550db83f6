// Requester (IBTA §9.7.4 / rxe_req.c behaviour): turns send-queue WQEs into
// request packets — path-MTU segmentation with FIRST/MIDDLE/LAST/ONLY
// opcodes, PSNs, AckReq — within the window, the outbound read limit and
// READ_FENCE; executes memory-window Bind/Invalidate in order; and restarts
// from any PSN for go-back-N (a Read resumes from the middle of its response).
#include <algorithm>

#include "stack/mem/memory_table.h"
#include "stack/rc/device.h"
#include "stack/rc/qp.h"
#include "stack/wire/psn.h"

namespace roce::rc {

using namespace roce::wire;

size_t QueuePair::RequesterTx(uint64_t now, size_t budget) {
  if (rnr_deadline_ || send_error_) return 0;
  const uint32_t window = dev_->tuning().max_unacked_psns;
  size_t n = 0;
  // Read re-requests first: they ask again only for what is missing and do
  // not move the cursor, so nothing sent after the Read goes out again.
  while (n < budget && !rereq_.empty() && state_ == QpState::kRts) {
    const uint64_t i = rereq_.front();
    SendWqe& w = Slot(i);
    if (i < sq_head_ || i >= sq_tail_ || !w.started || !w.IsRead() || w.done) {
      rereq_.erase(rereq_.begin());
      continue;
    }
    const uint32_t k = static_cast<uint32_t>(PsnDiff(w.resp_psn, w.first_psn));
    const bool probe = probe_;
    if (!EmitRequest(w, k, now, ReadGap(w))) return n;
    rereq_.erase(rereq_.begin());
    n++;
    // (after a timeout the retransmit timer paces; the read hold goes with
    // selective repair, only between our stacks)
    if (!probe && Repairs()) {
      // A re-request for a gap: if the gap is still there a round trip or
      // two later, the re-request or its replay was lost; ask again then
      // (OnTimer), not only at the retransmit timeout.
      if (read_hold_psn_ != w.resp_psn) read_hold_unheard_ = 0;
      if (read_hold_psn_ != w.resp_psn || !read_hold_at_) read_hold_tries_ = 0;
      read_hold_psn_ = w.resp_psn;
      read_hold_at_ = now + ReadHoldNs();
      read_hold_tries_++;
      dev_->TimerChanged(this);
    }
  }
  // A selective repair: the one missing packet, before anything new.
  if (repair_ == Repair::kDue && n < budget && state_ == QpState::kRts) {
    if (!EmitRepair(now)) return n;
    n++;
  }
  while (n < budget && cursor_ < sq_tail_ && state_ == QpState::kRts) {
    SendWqe& w = Slot(cursor_);
    if (!w.started) {
      const uint64_t at = cursor_;
      if (!StartWqe(w, now)) break;
      if (cursor_ != at) continue;  // a completion inside StartWqe moved the cursor
    }
    if (w.IsLocal() || w.done) {
      cursor_++;
      cursor_pkt_ = 0;
      continue;
    }
    // A Read asks for what it still misses: from its next expected response.
    if (w.IsRead()) cursor_pkt_ = static_cast<uint32_t>(PsnDiff(w.resp_psn, w.first_psn));
    const uint32_t psn = PsnAdd(w.first_psn, cursor_pkt_);
    if (goback_bounded_ && !PsnLess(psn, goback_end_)) {
      // The bounded go-back is done: on with what was never sent.
      const uint32_t frontier = max_sent_;
      RetryFrom(frontier);
      continue;
    }
    // The window limits new PSNs; a resend of one already sent always goes.
    if (!PsnLess(psn, max_sent_) && PsnDiff(psn, acked_) >= static_cast<int32_t>(window)) break;
    if (!EmitRequest(w, cursor_pkt_, now, w.IsRead() ? ReadGap(w) : 0)) break;
    n++;
    if (w.IsRead() || ++cursor_pkt_ >= w.npkts) {
      cursor_++;
      cursor_pkt_ = 0;
    }
  }
  return n;
}

bool QueuePair::StartWqe(SendWqe& w, uint64_t now) {
  (void)now;
  if (w.IsLocal()) {
    ExecuteLocal(w);
    w.started = true;
    w.first_psn = next_psn_;
    w.npkts = 0;
    if (w.status != Status::kSuccess) {
      send_error_ = true;
      ToError();
      return false;
    }
    w.done = true;
    CompleteSendHead();
    return true;
  }
  if ((w.wr.flags & kReadFence) && reads_outstanding_ > 0) return false;
  if (w.IsRead() && reads_outstanding_ >= std::max<uint32_t>(attr_.max_rd_atomic, 1)) return false;
  if (PsnDiff(next_psn_, acked_) >= static_cast<int32_t>(dev_->tuning().max_unacked_psns))
    return false;
  if (!w.inline_data) {
    // Local SGEs: Send/Write sources need any registered region, Read sinks
    // need local write (or RDMA_READ_SINK).
    const uint32_t need = w.IsRead() ? uint32_t{mem::kReadSink} : 0u;
    for (uint32_t i = 0; i < w.wr.num_sge; i++) {
      const Sge& s = w.wr.sge[i];
      if (mem_->CheckLocal(s.lkey, s.addr, s.length, need) != mem::Result::kOk) {
        w.started = true;
        w.status = Status::kAccessViolation;
        w.cause = Cause::kLocalProtection;
        send_error_ = true;
        ToError();
        return false;
      }
    }
  }
  const uint32_t mtu = attr_.path_mtu;
  w.npkts = std::max<uint32_t>(1, (w.length + mtu - 1) / mtu);
  w.first_psn = next_psn_;
  next_psn_ = PsnAdd(next_psn_, w.npkts);
  w.started = true;
  dev_->Event(qpn_, "start", cursor_, (uint64_t{w.first_psn} << 32) | w.npkts);
  if (w.IsRead()) {
    w.resp_psn = w.first_psn;
    reads_outstanding_++;
  }
  cursor_pkt_ = 0;
  return true;
}

void QueuePair::ExecuteLocal(SendWqe& w) {
  mem::Result r;
  if (w.wr.op == WrOp::kBind) {
    r = mem_->BindWindow(w.wr.mw, w.wr.bind_token, w.wr.mr, w.wr.bind_addr, w.wr.bind_length,
                         w.wr.bind_access);
  } else {
    r = mem_->InvalidateWindow(w.wr.mw);
  }
  if (r != mem::Result::kOk) {
    w.status = Status::kAccessViolation;
    w.cause = w.wr.op == WrOp::kBind ? Cause::kBindError : Cause::kInvalidate;
  }
}

bool QueuePair::Gather(const SendWqe& w, uint64_t offset, uint32_t len, TxPacket* pkt) const {
  pkt->payload_len = len;
  pkt->nseg = 0;
  if (len == 0) return true;
  if (w.inline_data) {
    pkt->seg[0] = {w.inline_data + offset, len};
    pkt->nseg = 1;
    return true;
  }
  uint64_t pos = 0;
  for (uint32_t i = 0; i < w.wr.num_sge && len; i++) {
    const Sge& s = w.wr.sge[i];
    if (offset >= pos + s.length) {
      pos += s.length;
      continue;
    }
    const uint64_t in = offset - pos;
    const uint32_t take = static_cast<uint32_t>(std::min<uint64_t>(s.length - in, len));
    // The source is re-checked for every packet, first transmission or
    // retransmission: a region deregistered while the request is in flight
    // is a local protection error, never a read of memory we no longer own.
    if (mem_->CheckLocal(s.lkey, s.addr + in, take, 0) != mem::Result::kOk) return false;
    pkt->seg[pkt->nseg++] = {reinterpret_cast<const uint8_t*>(s.addr + in), take};
    offset += take;
    len -= take;
    pos += s.length;
  }
  return true;
}

bool QueuePair::EmitRequest(SendWqe& w, uint32_t k, uint64_t now, uint32_t read_pkts) {
  TxPacket pkt;
  const uint32_t mtu = attr_.path_mtu;
  const uint32_t psn = PsnAdd(w.first_psn, k);
  const uint64_t offset = uint64_t{k} * mtu;
  pkt.bth.psn = psn;
  pkt.bth.mig_req = true;
  bool last = true;
  if (w.IsRead()) {
    pkt.bth.opcode = op::kRcReadRequest;
    // After a timeout, ask for every response still missing in one request
    // (its reply is many frames, so one loss cannot silence the whole retry);
    // otherwise only the gap before the first response already placed.
    if (probe_) read_pkts = ReadSpan(w);
    uint64_t len = w.length - offset;
    if (read_pkts) len = std::min<uint64_t>(len, uint64_t{read_pkts} * mtu);
    if (PsnLess(psn, max_sent_)) {  // a re-request: what it covers is asked for
      w.asked = true;
      w.asked_to = PsnAdd(psn, read_pkts ? read_pkts : w.npkts - k);
      w.replay_hi = psn;
      w.gap_retry = true;
      w.gap_psn = psn;
    }
    pkt.ext.reth = {w.wr.remote_addr + offset, w.wr.rkey, static_cast<uint32_t>(len)};
    pkt.payload_len = 0;
  } else {
    const uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(mtu, w.length - offset));
    const bool first = k == 0;
    last = k + 1 == w.npkts;
    const bool send = w.wr.op == WrOp::kSend || w.wr.op == WrOp::kSendWithImm ||
                      w.wr.op == WrOp::kSendWithInvalidate;
    const bool imm = w.wr.op == WrOp::kSendWithImm || w.wr.op == WrOp::kWriteWithImm;
    const bool inv = w.wr.op == WrOp::kSendWithInvalidate;
    uint8_t code;
    if (send) {
      if (first && last) code = imm ? op::kRcSendOnlyImm : inv ? op::kRcSendOnlyInv : op::kRcSendOnly;
      else if (first) code = op::kRcSendFirst;
      else if (last) code = imm ? op::kRcSendLastImm : inv ? op::kRcSendLastInv : op::kRcSendLast;
      else code = op::kRcSendMiddle;
      pkt.bth.se = last && (w.wr.flags & kSolicited);
    } else {
      if (first && last) code = imm ? op::kRcWriteOnlyImm : op::kRcWriteOnly;
      else if (first) code = op::kRcWriteFirst;
      else if (last) code = imm ? op::kRcWriteLastImm : op::kRcWriteLast;
      else code = op::kRcWriteMiddle;
      if (first) pkt.ext.reth = {w.wr.remote_addr, w.wr.rkey, w.length};
      pkt.bth.se = last && imm && (w.wr.flags & kSolicited);
    }
    pkt.bth.opcode = code;
    if (last) {
      pkt.ext.imm = w.wr.imm;
      pkt.ext.ieth_rkey = w.wr.invalidate_rkey;
    }
    if (!Gather(w, offset, len, &pkt)) {
      dev_->Event(qpn_, "source-gone", psn, offset);
      w.status = Status::kAccessViolation;
      w.cause = Cause::kLocalProtection;
      send_error_ = true;
      ToError();
      return false;
    }
  }
  const QpTuning& t = dev_->tuning();
  pkt.bth.ack_req = last || force_ack_req_ || since_ack_req_ + 1 >= t.ack_req_every ||
                    PsnDiff(PsnAdd(psn, 1), acked_) >= static_cast<int32_t>(t.max_unacked_psns);
  // The first packet after a timeout asks for an answer at once; if it is
  // (nearly) all that is outstanding, it goes twice, so one lost frame does
  // not make the whole retry look like a silent peer.
  const bool probe = probe_;
  if (probe) pkt.bth.ack_req = true;
  const bool retransmit = PsnLess(psn, max_sent_);
  if (w.IsRead()) w.req_psn = psn;
  if (!Send(pkt, now)) return false;
  if (retransmit) {
    if (psn == rtt_psn_) rtt_pending_ = false;  // Karn: no sample of a resent packet
    counters.retransmits++;
    counters.retransmit_bytes += pkt.payload_len;
  }
  probe_ = false;
  if (probe && retransmit && UnconfirmedAfter(w, psn, read_pkts, k) <= 2 && Send(pkt, now)) {
    counters.retransmits++;
    counters.retransmit_bytes += pkt.payload_len;
  }
  const uint32_t end = w.IsRead() ? PsnAdd(w.LastPsn(), 1) : PsnAdd(psn, 1);
  if (PsnDiff(end, max_sent_) > 0) max_sent_ = end;
  since_ack_req_ = pkt.bth.ack_req ? 0 : since_ack_req_ + 1;
  if (!retrans_deadline_) ArmRetransmitTimer(now);
  if (!retransmit && pkt.bth.ack_req && !w.IsRead() && !rtt_pending_) {
    rtt_pending_ = true;
    rtt_psn_ = psn;
    rtt_t_ = now;
  }
  return true;
}

// ---- selective repair -------------------------------------------------------------
//
// A sequence NAK names the first PSN the responder misses. Our responder
// keeps what came after it (QpTuning::ooo_window) and, once that PSN arrives,
// executes the kept requests and acknowledges past them, or NAKs the next
// gap. So the requester resends just that packet, with AckReq, and holds
// everything after it until the answer:
//  - an ACK or NAK past it: done (a NAK starts the next repair);
//  - a plain ACK short of what had been sent before the resend: the responder
//    kept nothing after the gap (a go-back-N responder such as rxe, or its
//    window was full): go back N from there, as the IBTA requester does;
//  - nothing within RepairHoldNs: the resend or its answer was lost; again.
// New packets keep flowing within the window meanwhile (the responder keeps
// them too). A gap may be reordering, not loss: the resend waits reo_wnd_,
// which grows when a repair turns out spurious (answered sooner than a round
// trip after the resend) and halves after 16 repairs in a row that were not.

bool QueuePair::FindRequest(uint32_t psn, uint64_t* seq, uint32_t* k) const {
  for (uint64_t i = sq_head_; i != sq_tail_; i++) {
    const SendWqe& w = Slot(i);
    if (!w.started) return false;
    if (w.IsLocal() || w.done) continue;
    if (PsnDiff(psn, w.first_psn) < 0) return false;
    if (PsnDiff(psn, w.LastPsn()) > 0) continue;
    // A Read is repaired only as a whole request nothing has answered yet.
    if (w.IsRead() && (psn != w.first_psn || w.resp_psn != w.first_psn)) return false;
    *seq = i;
    *k = static_cast<uint32_t>(PsnDiff(psn, w.first_psn));
    return true;
  }
  return false;
}

uint32_t QueuePair::CursorPsn() const {
  for (uint64_t i = cursor_; i < sq_tail_; i++) {
    const SendWqe& w = Slot(i);
    if (!w.started) break;
    if (w.IsLocal() || w.done) continue;
    if (i == cursor_) {
      if (w.IsRead()) return w.resp_psn;
      return PsnAdd(w.first_psn, cursor_pkt_);
    }
    return w.IsRead() ? w.resp_psn : w.first_psn;
  }
  return next_psn_;
}

void QueuePair::StartRepair(uint32_t psn, uint64_t now) {
  uint64_t seq;
  uint32_t k;
  // Only when nothing else is being resent (the cursor is at the frontier)
  // and the packet is one we can resend alone; otherwise go back N.
  if (!Repairs() || PsnLess(CursorPsn(), max_sent_) ||
      !FindRequest(psn, &seq, &k)) {
    repair_ = Repair::kNone;
    RetryFrom(psn);
    dev_->MarkActive(this);
    return;
  }
  // A sample sent after the gap waits for it: not a round trip.
  if (rtt_pending_ && PsnDiff(rtt_psn_, psn) > 0) rtt_pending_ = false;
  repair_psn_ = psn;
  repair_tries_ = 0;
  repair_nak_t_ = now;
  repair_cause_ = RepairCause::kNak;
  if (reo_wnd_) {
    repair_ = Repair::kWait;
    repair_at_ = now + reo_wnd_;
    dev_->TimerChanged(this);
  } else {
    repair_ = Repair::kDue;
    dev_->MarkActive(this);
  }
}

bool QueuePair::RepairNow(uint32_t psn, uint64_t now, RepairCause cause) {
  uint64_t seq;
  uint32_t k;
  if (!Repairs() || PsnLess(CursorPsn(), max_sent_) ||
      !FindRequest(psn, &seq, &k)) {
    repair_ = Repair::kNone;
    return false;
  }
  if (rtt_pending_ && PsnDiff(rtt_psn_, psn) > 0) rtt_pending_ = false;
  repair_psn_ = psn;
  repair_tries_ = 0;
  repair_nak_t_ = now;
  repair_cause_ = cause;
  repair_ = Repair::kDue;
  dev_->MarkActive(this);
  return true;
}

bool QueuePair::EmitRepair(uint64_t now) {
  uint64_t seq;
  uint32_t k;
  if (!FindRequest(repair_psn_, &seq, &k)) {  // acknowledged or failed meanwhile
    repair_ = Repair::kNone;
    return true;
  }
  SendWqe& w = Slot(seq);
  force_ack_req_ = true;
  const bool ok = EmitRequest(w, k, now, w.IsRead() ? ReadGap(w) : 0);
  force_ack_req_ = false;
  if (!ok) return false;
  counters.repairs++;
  dev_->Event(qpn_, "repair", repair_psn_, repair_tries_);
  if (repair_tries_ == 0) {
    repair_hi_ = max_sent_;
    repair_sent_t_ = now;
  }
  repair_tries_++;
  repair_ = Repair::kHold;
  // After a timeout the retransmit timer paces the retries (one per timeout,
  // as the IBTA counts them); after a NAK the peer is known to be there.
  repair_at_ = repair_cause_ == RepairCause::kTimeout ? 0 : now + RepairHoldNs();
  dev_->TimerChanged(this);
  return true;
}

uint64_t QueuePair::ReadHoldNs() const {
  // Two round trips (the replay may queue behind responses the peer is
  // still sending), doubled for every re-request of the same gap while the
  // hold is armed, and for every one the hold made without hearing from the
  // peer (OnTimer).
  const uint64_t timeout = AckTimeoutNs(attr_.timeout);
  uint64_t t = srtt_ ? 2 * std::max(2 * srtt_, srtt_ + 4 * rttvar_) : (timeout ? timeout / 4 : 1'000'000);
  t <<= std::min<uint32_t>(read_hold_tries_ + read_hold_unheard_, 16);
  return timeout ? std::min(t, timeout) : t;
}

uint64_t QueuePair::RepairHoldNs() const {
  // A round trip with its variation, doubled for every resend that went
  // unanswered; before any sample, a quarter of the ACK timeout.
  const uint64_t timeout = AckTimeoutNs(attr_.timeout);
  uint64_t t = srtt_ ? std::max(2 * srtt_, srtt_ + 4 * rttvar_) : (timeout ? timeout / 4 : 1'000'000);
  t <<= std::min<uint32_t>(repair_tries_ > 0 ? repair_tries_ - 1 : 0, 16);
  return timeout ? std::min(t, timeout) : t;
}

void QueuePair::RepairAnswered(uint64_t now, bool plain_ack) {
  if (repair_ == Repair::kGoBackWait) {  // the rest came after all
    repair_ = Repair::kNone;
    dev_->TimerChanged(this);
    return;
  }
  const bool held = repair_ == Repair::kHold;
  // Answered before the resend could have reached the responder and come
  // back: the packet was late, not lost. min_rtt_ is measured on first
  // transmissions, which may have queued behind a window of frames; a resend
  // goes first, so its answer can come sooner than that without any
  // reordering. Only an answer within half the minimum round trip is proof
  // (else a loss-only link looks reordered, and every misjudged repair would
  // add its own wait to the allowance: it ratcheted up to the cap).
  const bool spurious = held && repair_tries_ == 1 && min_rtt_ && now - repair_sent_t_ < min_rtt_ / 2;
  repair_ = Repair::kNone;
  seq_nak_active_ = false;
  dev_->TimerChanged(this);
  if (!held || spurious) {
    // The gap filled itself: reordering. (A timeout's or RNR NAK's repair
    // says nothing about reordering.)
    if (repair_cause_ == RepairCause::kNak) {
      if (spurious) counters.repair_spurious++;
      const uint64_t timeout = AckTimeoutNs(attr_.timeout);
      const uint64_t cap = timeout ? timeout / 4 : 1'000'000;
      const uint64_t seen = now - repair_nak_t_;
      reo_wnd_ = std::min(cap, std::max(reo_wnd_, seen + seen / 4));
      dev_->Event(qpn_, spurious ? "reo-wnd-spurious" : "reo-wnd-filled", repair_psn_, reo_wnd_);
      repairs_needed_ = 0;
    }
    return;
  }
  if (repair_cause_ == RepairCause::kNak && ++repairs_needed_ >= 16) {
    reo_wnd_ /= 2;
    repairs_needed_ = 0;
  }
  if (plain_ack && PsnLess(acked_, repair_hi_)) {
    // After a sequence NAK, a later packet had reached the responder before
    // the repaired one. A responder that keeps such packets (ooo_window)
    // executes them once the gap is filled, then acknowledges past them or
    // NAKs the next gap: a plain ACK past repair_psn_ + 1 comes only from
    // it. What it does not cover yet is still on its way (reordered) or
    // lost (what it had no room to keep it NAKs at once: GapKnown): a lost
    // one is NAKed when a later packet arrives, or the retransmit timer
    // fires (a timeout's repair answered short goes back N, below). Going
    // back N here would resend a reordered window for nothing (a probe of
    // the first missing packet measured worse too: sent before the
    // reordered packets arrive, it is answered as if they were lost).
    if (repair_cause_ == RepairCause::kNak && PsnDiff(acked_, PsnAdd(repair_psn_, 1)) > 0) return;
    // A go-back-N responder (rxe) dropped them: its ACK stops at the
    // repaired packet. After a timeout or an RNR NAK, too, nothing after
    // acked_ is on its way. After the reordering allowance, go back N over
    // what was sent before the resend.
    repair_psn_ = acked_;
    repair_nak_t_ = now;
    if (reo_wnd_) {
      repair_ = Repair::kGoBackWait;
      repair_at_ = now + reo_wnd_;
      dev_->TimerChanged(this);
      return;
    }
    counters.repair_go_back++;
    dev_->Event(qpn_, "repair-go-back", acked_, repair_hi_);
    GoBackBounded(acked_, repair_hi_);
  }
}

void QueuePair::SampleRtt(uint64_t now) {
  if (!rtt_pending_ || PsnDiff(acked_, rtt_psn_) <= 0) return;
  rtt_pending_ = false;
  const uint64_t s = now - rtt_t_;
  if (!srtt_) {
    srtt_ = s;
    rttvar_ = s / 2;
  } else {
    const uint64_t dev = s > srtt_ ? s - srtt_ : srtt_ - s;
    rttvar_ = (3 * rttvar_ + dev) / 4;
    srtt_ = (7 * srtt_ + s) / 8;
  }
  if (!min_rtt_ || s < min_rtt_) min_rtt_ = s;
}

void QueuePair::GoBackBounded(uint32_t from, uint32_t to) {
  RetryFrom(from);
  goback_bounded_ = PsnLess(to, max_sent_);
  goback_end_ = to;
  dev_->MarkActive(this);
}

void QueuePair::RetryFrom(uint32_t psn) {
  dev_->Event(qpn_, "retry-from", psn, cursor_);
  goback_bounded_ = false;
  for (uint64_t i = sq_head_; i != sq_tail_; i++) {
    SendWqe& w = Slot(i);
    if (!w.started) {
      cursor_ = i;
      cursor_pkt_ = 0;
      return;
    }
    if (w.IsLocal() || w.done) continue;
    // The first unfinished WQE that holds `psn` or comes after it (the one
    // holding it may be done: a Read answered ahead of an older one).
    if (PsnDiff(psn, w.LastPsn()) <= 0) {
      cursor_ = i;
      cursor_pkt_ = static_cast<uint32_t>(std::max<int32_t>(0, PsnDiff(psn, w.first_psn)));
      if (w.IsRead()) cursor_pkt_ = static_cast<uint32_t>(PsnDiff(w.resp_psn, w.first_psn));
      return;
    }
  }
  cursor_ = sq_tail_;
  cursor_pkt_ = 0;
}

uint64_t QueuePair::UnconfirmedAfter(const SendWqe& w, uint32_t psn, uint32_t read_pkts,
                                     uint32_t k) const {
  // The responses this packet asks for (a Read) or the packet itself, then
  // every PSN after it not yet confirmed and not answered.
  uint64_t left = w.IsRead() ? (read_pkts ? read_pkts : w.npkts - k) : 1;
  if (!w.IsRead()) left += w.npkts - 1 - static_cast<uint32_t>(PsnDiff(psn, w.first_psn));
  for (uint64_t i = SeqOf(w) + 1; i < sq_tail_ && left <= 2; i++) {
    const SendWqe& x = Slot(i);
    if (!x.started) break;
    if (x.IsLocal() || x.done) continue;
    const uint32_t from = PsnDiff(acked_, x.first_psn) > 0 ? acked_ : x.first_psn;
    const int32_t n = PsnDiff(PsnAdd(x.LastPsn(), 1), from);
    if (n > 0) left += static_cast<uint64_t>(n);
  }
  return left;
}

uint32_t QueuePair::ReadSpan(const SendWqe& w) const {
  // Up to the last missing response: to the end unless the tail is placed.
  const uint32_t k = static_cast<uint32_t>(PsnDiff(w.resp_psn, w.first_psn));
  const uint32_t left = w.npkts - k;
  return w.ooo.LastEnd() == left ? w.ooo.LastStart() : 0;
}

uint32_t QueuePair::ReadGap(const SendWqe& w) const {
  // Responses placed ahead of the next expected one need not come again:
  // ask up to the first of them (0: everything to the end).
  return w.ooo.FirstFrom(1);
}

uint64_t QueuePair::SeqOf(const SendWqe& w) const {
  // Slot index -> WQE sequence number (the slot holds the WQE in [sq_head_, sq_tail_)).
  const uint64_t idx = static_cast<uint64_t>(&w - sq_.data());
  return sq_head_ + ((idx + sq_.size() - (sq_head_ & sq_mask_)) & sq_mask_);
}

bool QueuePair::ReRequestDue(const SendWqe& rd) const {
  const uint64_t seq = SeqOf(rd);
  // If the cursor has not passed this Read yet, the normal pass asks for it.
  if (cursor_ <= seq) return true;
  for (uint64_t q : rereq_)
    if (q == seq) return true;
  return false;
}

void QueuePair::ReRequestRead(SendWqe& rd) {
  const uint64_t seq = SeqOf(rd);
  dev_->Event(qpn_, "rerequest", rd.resp_psn, seq);
  if (ReRequestDue(rd)) return;
  rereq_.push_back(seq);
  dev_->MarkActive(this);
}

void QueuePair::SyncCursor() {
  if (cursor_ < sq_head_) {
    cursor_ = sq_head_;
    cursor_pkt_ = 0;
  }
  if (cursor_ >= sq_tail_) return;
  const SendWqe& w = Slot(cursor_);
  if (w.started && !w.IsLocal() && !w.done && !w.IsRead() &&
      PsnDiff(acked_, PsnAdd(w.first_psn, cursor_pkt_)) > 0)
    RetryFrom(acked_);
}

void QueuePair::ArmRetransmitTimer(uint64_t now) {
  const uint64_t t = AckTimeoutNs(attr_.timeout);
  retrans_deadline_ = (t && una_ != next_psn_) ? now + t : 0;
  dev_->TimerChanged(this);
}

}  // namespace roce::rc
