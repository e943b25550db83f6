// Completer (IBTA §9.7.5.2 / rxe_comp.c behaviour): ACKs advance the oldest
// unacknowledged PSN, read responses are placed and checked in order, NAKs
// restart (sequence), pause (RNR) or fail (access / invalid / operational)
// the request, an ACK past an unanswered Read is an implied NAK, retries are
// counted, and completions leave strictly in posting order — silent
// successes suppressed, errors always reported.
#include <algorithm>
#include <cstring>

#include "stack/mem/memory_table.h"
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
    std::memcpy(reinterpret_cast<void*>(sge[i].addr + in), src, take);
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
      break;
    default:  // ATOMIC_ACKNOWLEDGE: we never send atomics
      counters.dropped_bad++;
      return;
  }
  if (state_ == QpState::kRts) CompleteSendHead();
}

void QueuePair::OnAck(uint32_t psn, uint64_t now) {
  if (PsnDiff(psn, una_) < 0) {  // acknowledges nothing new
    counters.dup_responses++;
    return;
  }
  if (PsnDiff(psn, max_sent_) >= 0) {  // acknowledges a PSN never sent
    counters.dropped_bad++;
    return;
  }
  AdvanceUna(PsnAdd(psn, 1), now);
}

bool QueuePair::AdvanceUna(uint32_t new_una, uint64_t now) {
  if (PsnDiff(new_una, una_) <= 0) return true;
  uint32_t target = new_una;
  bool implied = false;
  for (; ack_scan_ != sq_tail_; ack_scan_++) {
    SendWqe& w = Slot(ack_scan_);
    if (!w.started) break;
    if (w.IsLocal() || w.done) continue;
    if (PsnDiff(target, w.first_psn) <= 0) break;  // does not reach this WQE
    if (w.IsRead()) {
      // Later PSNs are acknowledged but this Read is not fully answered: its
      // remaining responses were lost. Acknowledge up to them and ask again —
      // once per gap (every later ACK says the same; the timer covers a lost
      // re-request).
      target = w.resp_psn;
      if (!w.gap_retry || w.gap_psn != w.resp_psn) {
        w.gap_retry = true;
        w.gap_psn = w.resp_psn;
        implied = true;
      }
      break;
    }
    if (PsnDiff(target, w.LastPsn()) <= 0) break;  // partly acknowledged
    w.done = true;
  }
  const bool progress = PsnDiff(target, una_) > 0;
  if (progress) {
    dev_->Event(qpn_, "una", una_, target);
    una_ = target;
    retry_left_ = attr_.retry_cnt;
    rnr_left_ = attr_.rnr_retry;
    seq_nak_active_ = false;
    ArmRetransmitTimer(now);
  }
  if (implied) {
    counters.implied_naks++;
    RetryFrom(target);
    dev_->MarkActive(this);
  } else if (progress) {
    SyncCursor();
  }
  return PsnDiff(new_una, target) <= 0;
}

bool QueuePair::ConsumeRetry(uint64_t now) {
  (void)now;
  if (retry_left_ <= 0) {
    FailAt(una_, Status::kIoTimeout, Cause::kRetryExceeded);
    return false;
  }
  retry_left_--;
  return true;
}

void QueuePair::OnNak(uint32_t psn, uint8_t s, uint64_t now) {
  dev_->Event(qpn_, "nak", psn, s);
  if (PsnDiff(psn, una_) < 0 || PsnDiff(psn, max_sent_) >= 0) {
    counters.dup_responses++;
    return;
  }
  if (syndrome::Type(s) == syndrome::kTypeRnr) {
    counters.rnr_naks_received++;
    if (!AdvanceUna(psn, now)) return;
    if (rnr_deadline_ && psn == una_) {  // a copy of the NAK we are already waiting out
      counters.dup_naks++;
      return;
    }
    if (attr_.rnr_retry != 7 && rnr_left_-- <= 0) {
      FailAt(psn, Status::kIoTimeout, Cause::kRnrRetryExceeded);
      return;
    }
    RetryFrom(psn);
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
      if (!AdvanceUna(psn, now)) return;
      if (seq_nak_active_ && seq_nak_psn_ == psn) {  // duplicate of the NAK being handled
        counters.dup_naks++;
        return;
      }
      if (!ConsumeRetry(now)) return;
      seq_nak_active_ = true;
      seq_nak_psn_ = psn;
      RetryFrom(psn);
      dev_->MarkActive(this);
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
  // The oldest Read not yet fully answered.
  SendWqe* rd = nullptr;
  for (uint64_t i = ack_scan_; i != sq_tail_; i++) {
    SendWqe& w = Slot(i);
    if (!w.started) break;
    if (w.IsRead() && !w.done) {
      rd = &w;
      break;
    }
  }
  const uint32_t psn = p.bth.psn;
  if (!rd || PsnDiff(psn, rd->resp_psn) < 0) {
    counters.dup_responses++;
    return;
  }
  if (PsnDiff(psn, rd->resp_psn) > 0) {
    // A response is missing. Ask again from it, once per gap (later
    // responses of the same burst land here too).
    counters.dup_responses++;
    if (!rd->gap_retry || rd->gap_psn != rd->resp_psn) {
      rd->gap_retry = true;
      rd->gap_psn = rd->resp_psn;
      if (!AdvanceUna(rd->first_psn, now)) return;
      if (!ConsumeRetry(now)) return;
      RetryFrom(rd->resp_psn);
      dev_->MarkActive(this);
    }
    return;
  }
  // The response we expect: everything before this Read is done.
  if (!AdvanceUna(rd->first_psn, now)) return;
  const uint32_t mtu = attr_.path_mtu;
  const uint64_t offset = uint64_t(PsnDiff(psn, rd->first_psn)) * mtu;
  const bool last = psn == rd->LastPsn();
  const Position pos = p.info().position;
  const size_t want = last ? static_cast<size_t>(rd->length - offset) : mtu;
  if ((last ? (pos != Position::kLast && pos != Position::kOnly)
            : (pos != Position::kFirst && pos != Position::kMiddle)) ||
      p.payload.size() != want) {
    counters.dropped_bad++;
    return;
  }
  // The sink was checked when the Read started; its region may have been
  // deregistered since, and then nothing more may land in it.
  if (!SinkStillValid(*mem_, rd->wr.sge, rd->wr.num_sge, offset, p.payload.size())) {
    FailAt(psn, Status::kAccessViolation, Cause::kLocalProtection);
    return;
  }
  Scatter(rd->wr.sge, rd->wr.num_sge, offset, p.payload);
  rd->resp_psn = PsnAdd(psn, 1);
  una_ = rd->resp_psn;
  retry_left_ = attr_.retry_cnt;
  rnr_left_ = attr_.rnr_retry;
  seq_nak_active_ = false;
  if (last) {
    rd->done = true;
    reads_outstanding_--;
    dev_->MarkActive(this);  // a fenced or read-limited WQE may go now
  }
  ArmRetransmitTimer(now);
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
