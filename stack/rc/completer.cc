// SPDX-License-Identifier: MIT
// Completer (IBTA §9.7.5.2 / rxe_comp.c behaviour): ACKs advance the oldest
// unacknowledged PSN, read responses are placed and checked in order, NAKs
// restart (sequence), pause (RNR) or fail (access / invalid / operational)
// the request, an ACK past an unanswered Read is an implied NAK, retries are
// counted, and completions leave strictly in posting order — silent
// successes suppressed, errors always reported.
#include <algorithm>
#include <cstring>

#include "stack/mem/memory_table.h"
#include "stack/mem/place.h"
#include "stack/rc/device.h"
#include "stack/rc/qp.h"
#include "stack/wire/psn.h"

namespace roce::rc {

using namespace roce::wire;

namespace {

RequestType TypeOf(WrOp op) {
  switch (op) {
    case WrOp::kSend:
    case WrOp::kSendWithImm:
    case WrOp::kSendWithInvalidate: return RequestType::kSend;
    case WrOp::kWrite:
    case WrOp::kWriteWithImm: return RequestType::kWrite;
    case WrOp::kRead: return RequestType::kRead;
    case WrOp::kBind: return RequestType::kBind;
    case WrOp::kInvalidate: return RequestType::kInvalidate;
  }
  return RequestType::kSend;
}

// Copies `data` into an SGE list starting at byte `offset` of the list.
void Scatter(const Sge* sge, uint32_t n, uint64_t offset, ByteSpan data) {
  uint64_t pos = 0;
  const uint8_t* src = data.data();
  size_t left = data.size();
  for (uint32_t i = 0; i < n && left; i++) {
    if (offset >= pos + sge[i].length) {
      pos += sge[i].length;
      continue;
    }
    const uint64_t in = offset - pos;
    const size_t take = static_cast<size_t>(std::min<uint64_t>(sge[i].length - in, left));
    mem::PlaceInOrder(reinterpret_cast<void*>(sge[i].addr + in), src, take);  // (mem/place.h)
    src += take;
    left -= take;
    offset += take;
    pos += sge[i].length;
  }
}

// True if every SGE that bytes [offset, offset+len) of the list land in is
// still a valid Read sink.
bool SinkStillValid(const mem::MemoryTable& m, const Sge* sge, uint32_t n, uint64_t offset,
                    uint64_t len) {
  uint64_t pos = 0;
  const uint64_t end = offset + len;
  for (uint32_t i = 0; i < n && pos < end; i++) {
    if (sge[i].length && pos + sge[i].length > offset &&
        m.CheckLocal(sge[i].lkey, sge[i].addr, sge[i].length, mem::kReadSink) != mem::Result::kOk)
      return false;
    pos += sge[i].length;
  }
  return true;
}

}  // namespace

void ScatterToSges(const Sge* sge, uint32_t n, uint64_t offset, ByteSpan data) {
  Scatter(sge, n, offset, data);
}

// A Read Response Middle is placed as its ICRC is computed (InPlaceTarget)
// only when it is the response the oldest open Read expects next, from the
// peer, MTU long, into one SGE of the Read's sink that is still valid. The
// Read cannot complete before a good copy of that PSN has been placed at the
// same offset (a corrupted packet's bytes are written again), and a sink's
// bytes mean nothing before its Read's completion. A Last likewise, when it
// is the Read's last PSN and exactly as long as the rest of the Read (the
// bytes its good copy writes). Responses past a missing one, First and Only,
// and a Last of any other length are verified first, as before.
uint8_t* QueuePair::ReadSinkTarget(const RocePacket& p) const {
  if (state_ != QpState::kRts || p.bth.pkey != 0xFFFF || !p.IsReplyTo(net_)) return nullptr;
  const size_t len = p.payload.size();
  const bool last = p.bth.opcode == op::kRcReadResponseLast;
  if (!last && len != attr_.path_mtu) return nullptr;
  const SendWqe* rd = OldestOpenRead();
  if (!rd || p.bth.psn != rd->resp_psn || (p.bth.psn == rd->LastPsn()) != last ||
      PsnDiff(p.bth.psn, max_sent_) >= 0)
    return nullptr;
  const uint64_t offset = uint64_t(PsnDiff(p.bth.psn, rd->first_psn)) * attr_.path_mtu;
  if (last ? offset + len != rd->length : offset + len > rd->length) return nullptr;
  uint64_t pos = 0;
  for (uint32_t i = 0; i < rd->wr.num_sge && pos <= offset; i++) {
    const Sge& s = rd->wr.sge[i];
    if (offset + len <= pos + s.length) {
      if (offset < pos ||
          mem_->CheckLocal(s.lkey, s.addr, s.length, mem::kReadSink) != mem::Result::kOk)
        return nullptr;
      return reinterpret_cast<uint8_t*>(s.addr + (offset - pos));
    }
    pos += s.length;
  }
  return nullptr;
}

void QueuePair::OnResponse(const RocePacket& p, uint64_t now) {
  switch (p.bth.opcode) {
    case op::kRcAck:
      counters.acks_received++;
      if (syndrome::Type(p.aeth.syndrome) == syndrome::kTypeAck)
        OnAck(p.bth.psn, now);
      else
        OnNak(p.bth.psn, p.aeth.syndrome, now);
      break;
    case op::kRcReadResponseFirst:
    case op::kRcReadResponseMiddle:
    case op::kRcReadResponseLast:
    case op::kRcReadResponseOnly:
      OnReadResponse(p, now);
      if (repair_ != Repair::kNone && state_ == QpState::kRts && PsnDiff(acked_, repair_psn_) > 0)
        RepairAnswered(now, /*plain_ack=*/false);
      break;
    default:  // ATOMIC_ACKNOWLEDGE: we never send atomics
      counters.dropped_bad++;
      return;
  }
  if (state_ == QpState::kRts) CompleteSendHead();
}

void QueuePair::OnAck(uint32_t psn, uint64_t now) {
  if (PsnDiff(psn, max_sent_) >= 0) {  // acknowledges a PSN never sent
    counters.dropped_bad++;
    return;
  }
  if (PsnDiff(PsnAdd(psn, 1), acked_) <= 0) {  // says nothing new
    counters.dup_responses++;
    return;
  }
  AdvanceUna(PsnAdd(psn, 1), now, /*evidence=*/true);
  SampleRtt(now);
  if (repair_ != Repair::kNone && PsnDiff(acked_, repair_psn_) > 0) RepairAnswered(now, /*plain_ack=*/true);
}

void QueuePair::OnProgress(uint64_t now) {
  retry_left_ = attr_.retry_cnt;
  rnr_left_ = attr_.rnr_retry;
  stall_left_ = static_cast<int>(dev_->tuning().max_stalled_retries);
  tail_probed_ = false;
  ArmTailProbe(now);  // (ArmRetransmitTimer tells the device)
  ArmRetransmitTimer(now);
}

bool QueuePair::AdvanceUna(uint32_t new_una, uint64_t now, bool evidence) {
  bool progress = false;
  if (evidence && PsnDiff(new_una, acked_) > 0) {
    acked_ = new_una;  // the responder has everything before new_una
    progress = true;
  }
  SendWqe* blocking = nullptr;
  if (PsnDiff(new_una, una_) >= 0) {
    uint32_t target = new_una;
    for (; ack_scan_ != sq_tail_; ack_scan_++) {
      SendWqe& w = Slot(ack_scan_);
      if (!w.started) break;
      if (w.IsLocal()) continue;
      if (w.done) {  // a Read answered ahead of an older one: acknowledged too
        if (PsnDiff(PsnAdd(w.LastPsn(), 1), target) > 0) target = PsnAdd(w.LastPsn(), 1);
        continue;
      }
      if (PsnDiff(target, w.first_psn) <= 0) break;  // does not reach this WQE
      if (w.IsRead()) {
        // Later PSNs are acknowledged but this Read is not fully answered:
        // acknowledge up to its next expected response. The rest were sent
        // before this ACK, so they are lost or late (NoteBeyondHole decides).
        target = w.resp_psn;
        blocking = &w;
        break;
      }
      if (PsnDiff(target, w.LastPsn()) <= 0) break;  // partly acknowledged
      w.done = true;
    }
    if (PsnDiff(target, una_) > 0) {
      dev_->Event(qpn_, "una", una_, target);
      una_ = target;
      seq_nak_active_ = false;
      progress = true;
    }
  }
  if (PsnDiff(una_, acked_) > 0) acked_ = una_;
  if (progress) {
    OnProgress(now);
    SyncCursor();
  }
  // (what the responder had before new_una: the responses of the Read's
  // requests before it, not those of a request it lacks — a NAK for it)
  if (blocking && evidence) NoteBeyondHole(*blocking, now, /*implied=*/true, /*deadline=*/false, new_una);
  return blocking == nullptr;
}

const QueuePair::SendWqe* QueuePair::OldestOpenRead() const {
  for (uint64_t i = ack_scan_; i != sq_tail_; i++) {
    const SendWqe& w = Slot(i);
    if (!w.started) break;
    if (w.IsRead() && !w.done) return &w;
  }
  return nullptr;
}

void QueuePair::NoteBeyondHole(SendWqe& rd, uint64_t now, bool implied, bool deadline, int64_t before) {
  // The evidence says nothing of the responses from `before` on (they were
  // asked for in requests the responder has not answered yet).
  uint32_t to = ReadLostEnd(rd);
  if (before >= 0) {
    const int32_t b = PsnDiff(static_cast<uint32_t>(before), rd.first_psn);
    if (PsnDiff(static_cast<uint32_t>(before), rd.resp_psn) <= 0) return;
    to = std::min<uint32_t>(to, static_cast<uint32_t>(b));
  }
  if (!hole_active_ || hole_psn_ != rd.resp_psn) {
    hole_active_ = true;
    hole_psn_ = rd.resp_psn;
    hole_at_ = resp_rx_ - 1;  // this response is the first past the hole
    hole_t_ = now;
  }
  // Asked already (a gap re-request, or the span one after a timeout) and
  // its replay has not reached the gap yet: the later responses may be ones
  // placed before; the read hold (OnTimer) and the retransmit timer cover a
  // lost re-request. Once the replay has passed the hole (replay_hi), the
  // hole is a loss like any other.
  // (replay_hi only with selective repair: the original responses still
  // streaming in pass the hole too, and without the read hold's pacing each
  // of them re-requested the gap and spent the stall budget — a 4 MiB Read
  // over a lossy tap failed with a retry timeout in nd2tools pair-rping.)
  if (rd.asked && PsnDiff(rd.asked_to, rd.resp_psn) > 0 &&
      (!Repairs() || PsnDiff(rd.replay_hi, rd.resp_psn) <= 0))
    return;
  // May still be on its way: fewer later responses than the link has
  // reordered by, or sooner than the reordering allowance (reo_wnd_, shared
  // with the requests' repairs). Once the allowance is over (hole_deadline_)
  // the count no longer matters.
  if (now - hole_t_ < reo_wnd_ || (!deadline && resp_rx_ - hole_at_ < reorder_thresh_)) {
    if (reo_wnd_ && (!hole_deadline_ || hole_deadline_ > hole_t_ + reo_wnd_)) {
      hole_deadline_ = hole_t_ + reo_wnd_;
      dev_->TimerChanged(this);
    }
    return;
  }
  // Already being asked for (a re-request queued by an earlier response of
  // this receive burst): one re-request, one retry.
  if (ReRequestDue(rd)) return;
  rd.gap_retry = true;
  rd.gap_psn = rd.resp_psn;
  if (implied)
    counters.implied_naks++;
  else
    counters.read_rerequests++;
  if (!ConsumeRetry(/*silent=*/false)) return;
  read_hold_unheard_ = 0;  // a response came: the peer is there
  ReadWindowLoss();
  ReRequestRead(rd, to, /*gap=*/true);
}

bool QueuePair::ConsumeRetry(bool silent) {
  heard_ = false;
  if (--stall_left_ < 0 || (silent && retry_left_ <= 0)) {
    const char* why = stall_left_ < 0 ? "retries-exhausted-stalled" : "retries-exhausted-silent";
    dev_->Event(qpn_, why, una_, static_cast<uint64_t>(retry_left_));
    dev_->Fatal(*this, why);
    FailAt(una_, Status::kIoTimeout, Cause::kRetryExceeded);
    return false;
  }
  if (silent) retry_left_--;
  return true;
}

void QueuePair::OnNak(uint32_t psn, uint8_t s, uint64_t now) {
  dev_->Event(qpn_, "nak", psn, s);
  if (PsnDiff(psn, max_sent_) >= 0) {
    counters.dropped_bad++;
    return;
  }
  if (PsnDiff(psn, acked_) < 0) {  // older than what we know the responder has
    counters.dup_responses++;
    return;
  }
  // Everything before the NAKed PSN was received. An unanswered Read before
  // it does not stop us from acting on the NAK: its responses are a separate
  // matter (NoteBeyondHole), the requests from `psn` on are not.
  AdvanceUna(psn, now, /*evidence=*/true);
  if (state_ != QpState::kRts) return;
  SampleRtt(now);
  if (repair_ != Repair::kNone && PsnDiff(acked_, repair_psn_) > 0) RepairAnswered(now, /*plain_ack=*/false);
  if (syndrome::Type(s) == syndrome::kTypeRnr) {
    counters.rnr_naks_received++;
    if (rnr_deadline_ && rnr_psn_ == psn) {  // a copy of the NAK we are already waiting out
      counters.dup_naks++;
      return;
    }
    if (attr_.rnr_retry != 7 && rnr_left_-- <= 0) {
      dev_->Fatal(*this, "rnr-retries-exhausted");
      FailAt(psn, Status::kIoTimeout, Cause::kRnrRetryExceeded);
      return;
    }
    // After the wait: the RNR'd packet alone if the responder keeps what
    // came after it (selective repair), else everything from it.
    if (!RepairNow(psn, now, RepairCause::kRnr)) RetryFrom(psn);
    rnr_psn_ = psn;
    retrans_deadline_ = 0;
    rnr_deadline_ = now + RnrTimerNs(syndrome::Value(s));
    dev_->TimerChanged(this);
    return;
  }
  if (syndrome::Type(s) != syndrome::kTypeNak) {
    counters.dropped_bad++;
    return;
  }
  switch (syndrome::Value(s)) {
    case syndrome::kNakPsnSeqError:
      counters.seq_naks_received++;
      if (seq_nak_active_ && seq_nak_psn_ == psn) {  // duplicate of the NAK being handled
        counters.dup_naks++;
        return;
      }
      if (!ConsumeRetry(/*silent=*/false)) return;
      seq_nak_active_ = true;
      seq_nak_psn_ = psn;
      StartRepair(psn, now);
      return;
    case syndrome::kNakInvalidRequest:
      counters.invalid_naks_received++;
      FailAt(psn, Status::kDataError, Cause::kRemoteInvalidRequest);
      return;
    case syndrome::kNakRemoteAccess:
      counters.access_naks_received++;
      FailAt(psn, Status::kAccessViolation, Cause::kRemoteAccess);
      return;
    default:
      counters.op_naks_received++;
      FailAt(psn, Status::kRemoteError, Cause::kRemoteOperational);
      return;
  }
}

void QueuePair::OnReadResponse(const RocePacket& p, uint64_t now) {
  SendWqe* oldest = OldestOpenRead();
  const uint32_t psn = p.bth.psn;
  if (!oldest || PsnDiff(psn, oldest->resp_psn) < 0) {
    counters.dup_responses++;
    return;
  }
  if (PsnDiff(psn, max_sent_) >= 0) {  // answers nothing we asked
    counters.dropped_bad++;
    return;
  }
  // Responses are coming: the read probe waits again, and a sample sent
  // before this response's request is answered.
  read_heard_ = true;
  ArmReadProbe(now);
  SampleRtt(now, &psn);
  // The open Read this response answers: the oldest, or a later one (its
  // responses are kept too; they also show the oldest's missing ones were
  // sent before them).
  SendWqe* rd = nullptr;
  for (uint64_t i = ack_scan_; i != sq_tail_; i++) {
    SendWqe& w = Slot(i);
    if (!w.started) break;
    if (w.IsRead() && !w.done && PsnDiff(psn, w.first_psn) >= 0 && PsnDiff(psn, w.LastPsn()) <= 0) {
      rd = &w;
      break;
    }
  }
  if (!rd || PsnDiff(psn, rd->resp_psn) < 0) {
    counters.dup_responses++;
    NoteBeyondHole(*oldest, now, /*implied=*/false, /*deadline=*/false, psn);
    return;
  }
  const uint32_t mtu = attr_.path_mtu;
  const uint64_t offset = uint64_t(PsnDiff(psn, rd->first_psn)) * mtu;
  const bool last = psn == rd->LastPsn();
  const Position pos = p.info().position;
  const size_t want = last ? static_cast<size_t>(rd->length - offset) : mtu;
  // The Read's last PSN ends a response (LAST or ONLY); any other PSN
  // carries a full MTU, and may end the reply to a re-request for a gap.
  if ((last && pos != Position::kLast && pos != Position::kOnly) || p.payload.size() != want) {
    counters.dropped_bad++;
    return;
  }
  const uint32_t d = static_cast<uint32_t>(PsnDiff(psn, rd->resp_psn));
  // How far the replay of a re-request has come (NoteBeyondHole).
  if (rd->asked && PsnDiff(psn, rd->asked_to) < 0 && PsnDiff(psn, rd->replay_hi) > 0) rd->replay_hi = psn;
  // A second copy, or one more run of responses than we track: dropped.
  if (d > 0 && (rd->ooo.Test(d) || !rd->ooo.Set(d))) {
    counters.dup_responses++;
    NoteBeyondHole(*oldest, now, /*implied=*/false, /*deadline=*/false, psn);
    return;
  }
  // The sink was checked when the Read started; its region may have been
  // deregistered since, and then nothing more may land in it.
  if (!SinkStillValid(*mem_, rd->wr.sge, rd->wr.num_sge, offset, p.payload.size())) {
    FailAt(psn, Status::kAccessViolation, Cause::kLocalProtection);
    return;
  }
  if (placed_ != &p) Scatter(rd->wr.sge, rd->wr.num_sge, offset, p.payload);  // else there already (ReadSinkTarget)
  ReadPlaced(*rd, static_cast<uint32_t>(PsnDiff(psn, rd->first_psn)), d == 0 && rd == oldest);
  if (d > 0 || rd != oldest) {
    // Ahead of a missing response: keep it (the memory is ours and the
    // bytes are those of this offset), so a late response costs nothing.
    counters.read_ooo_placed++;
    if (d == 0) {
      const uint32_t adv = 1 + rd->ooo.RunFrom(1);
      rd->ooo.Shift(adv);
      rd->resp_psn = PsnAdd(psn, adv);
      if (PsnDiff(rd->resp_psn, rd->LastPsn()) > 0) {  // complete, ahead of the oldest
        // Its requests still count for the read limit: the responder frees
        // read resources in the order the requests came, so the oldest one's
        // would be taken by a new Read (RetireReads frees them later).
        rd->done = true;
        rd->ooo.Clear();
      }
    }
    // Its request reached the responder, so did everything before it.
    if (PsnDiff(rd->first_psn, acked_) > 0) acked_ = rd->first_psn;
    OnProgress(now);
    NoteBeyondHole(*oldest, now, /*implied=*/false, /*deadline=*/false, psn);
    return;
  }
  // The response we expect: everything before this Read is done.
  AdvanceUna(rd->first_psn, now);
  const bool filled_hole = hole_active_ && hole_psn_ == psn;
  if (filled_hole) {
    // A response that arrived after later ones: reordering, unless it is the
    // start of the replay we asked for (a replay starts with FIRST or ONLY).
    // Later PSNs of the range a re-request asked for are its replay too.
    const bool replay =
        rd->gap_retry && ((rd->gap_psn == psn && (pos == Position::kFirst || pos == Position::kOnly)) ||
                          (rd->asked && PsnDiff(psn, rd->gap_psn) > 0 && PsnDiff(psn, rd->asked_to) < 0));
    if (!replay) {
      const uint64_t seen = resp_rx_ - hole_at_;
      const uint32_t cap = std::max<uint32_t>(dev_->tuning().max_reorder_threshold, 1);
      if (seen + 1 > reorder_thresh_) {
        reorder_thresh_ = static_cast<uint32_t>(std::min<uint64_t>(cap, seen + 1));
        dev_->Event(qpn_, "reorder-threshold", psn, reorder_thresh_);
      }
      // And in time: a response counts as lost only after the allowance.
      const uint64_t late = now - hole_t_;
      reo_wnd_ = std::min(ReoWndCap(), std::max(reo_wnd_, late + late / 4));
      dev_->Event(qpn_, "reo-wnd-read", psn, reo_wnd_);
    }
    hole_active_ = false;
  }
  const uint32_t adv = 1 + rd->ooo.RunFrom(1);
  rd->ooo.Shift(adv);
  rd->resp_psn = PsnAdd(psn, adv);
  una_ = rd->resp_psn;
  if (PsnDiff(una_, acked_) > 0) acked_ = una_;
  seq_nak_active_ = false;
  OnProgress(now);
  const size_t reqs = read_reqs_.size();
  if (PsnDiff(rd->resp_psn, rd->LastPsn()) > 0) {
    rd->done = true;
    rd->ooo.Clear();
    // This Read's requests and those of later ones answered ahead of it.
    RetireReads();
    dev_->MarkActive(this);  // a fenced or read-limited WQE may go now
    // ACKs and NAKs that arrived while this Read was in the way, and later
    // Reads already answered.
    AdvanceUna(PsnDiff(acked_, una_) > 0 ? acked_ : una_, now);
    // The next open Read may have responses placed past a gap already (they
    // came while this one was the oldest): its gap is judged now, not at the
    // timeout.
    if (SendWqe* nx = OldestOpenRead(); nx && nx->ooo.Any() && state_ == QpState::kRts) {
      hole_active_ = true;
      hole_psn_ = nx->resp_psn;
      hole_at_ = resp_rx_ - std::min<uint64_t>(resp_rx_, nx->ooo.Count());
      hole_t_ = now;
      NoteBeyondHole(*nx, now, /*implied=*/false);
    }
    return;
  }
  RetireReads();  // the READ requests this response ends
  if (read_reqs_.size() != reqs) dev_->MarkActive(this);  // the next may go
  if (rd->ooo.Any()) {
    // Another response is missing before ones already here: it has waited
    // as long as the previous gap did.
    const uint64_t at = filled_hole ? hole_at_ : resp_rx_ - 1;
    if (!filled_hole) hole_t_ = now;
    hole_active_ = true;
    hole_psn_ = rd->resp_psn;
    hole_at_ = at;
    NoteBeyondHole(*rd, now, /*implied=*/false);
  }
}

void QueuePair::FailAt(uint32_t psn, Status st, Cause cause) {
  AdvanceUna(psn, 0);
  SendWqe* failing = nullptr;
  for (uint64_t i = sq_head_; i != sq_tail_; i++) {
    SendWqe& w = Slot(i);
    if (!w.started) break;
    if (w.IsLocal() || w.done) continue;
    if (!failing) failing = &w;  // the oldest outstanding one, unless psn names another
    if (PsnDiff(psn, w.first_psn) >= 0 && PsnDiff(psn, w.LastPsn()) <= 0) {
      failing = &w;
      break;
    }
  }
  if (failing) {
    failing->status = st;
    failing->cause = cause;
  }
  send_error_ = true;
  ToError();
}

void QueuePair::PushSendCompletion(const SendWqe& w) {
  sends_retired_.store(sends_retired_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  dev_->Event(qpn_, "complete", w.wr.context, static_cast<uint64_t>(w.status));
  if (w.status == Status::kSuccess && (w.wr.flags & kSilentSuccess)) return;
  Completion c;
  c.qp_context = context_;
  c.request_context = w.wr.context;
  c.status = w.status;
  c.cause = w.cause;
  c.type = TypeOf(w.wr.op);
  c.bytes = w.length;
  c.qpn = qpn_;
  send_cq_->Push(c);
}

void QueuePair::CompleteSendHead() {
  while (sq_head_ != sq_tail_) {
    SendWqe& w = Slot(sq_head_);
    if (!w.done) break;
    PushSendCompletion(w);
    sq_head_++;
  }
  if (ack_scan_ < sq_head_) ack_scan_ = sq_head_;
  SyncCursor();
}

}  // namespace roce::rc
