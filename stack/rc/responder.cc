// SPDX-License-Identifier: MIT
// Responder (IBTA §9.7.5.1 / rxe_resp.c behaviour): PSN checks (expected,
// duplicate, out of sequence: one sequence NAK then silent drops until the
// expected PSN arrives), opcode-sequence and length checks, receive
// consumption (RQ or SRQ) with RNR NAK when none is posted, placement after
// token/bounds/rights checks (nothing is written on failure), Read requests
// answered from saved state (replayed for duplicates, up to the inbound read
// limit), coalesced ACKs carrying the MSN, NAKs, and CNPs for CE-marked
// requests. Responses leave in order through one queue: an ACK never
// overtakes the read responses before it.
#include <algorithm>
#include <cstring>

#include "stack/mem/memory_table.h"
#include "stack/mem/place.h"
#include "stack/rc/device.h"
#include "stack/rc/qp.h"
#include "stack/wire/psn.h"

namespace roce::rc {

using namespace roce::wire;

void QueuePair::OnRequest(const RocePacket& p, uint64_t now) {
  if (error_pending_) {
    counters.dropped_state++;
    return;
  }
  if (p.Ecn() == 3) {
    counters.ce_received++;
    if (!have_cnp_time_ || now - last_cnp_ >= dev_->tuning().cnp_interval_ns) cnp_owed_ = true;
  }
  const int32_t d = PsnDiff(p.bth.psn, epsn_);
  if (d > 0) {
    counters.out_of_sequence++;
    // One sequence NAK per episode. A requester that went back (a PSN at or
    // below the highest out-of-sequence one seen) is on its next pass; when
    // that pass asks for an answer (AckReq) and lost the expected PSN again,
    // it hears why — else every such pass would meet silence, and a lossy
    // link would exhaust the retries of a requester facing a live peer.
    const bool new_episode = !nak_sent_;
    if (!new_episode && PsnDiff(p.bth.psn, oos_hi_) <= 0) went_back_ = true;
    if (new_episode || (went_back_ && p.bth.ack_req)) {
      nak_sent_ = true;
      went_back_ = false;
      counters.seq_naks_sent++;
      QueueNak(syndrome::Nak(syndrome::kNakPsnSeqError), epsn_);
    }
    if (new_episode || PsnDiff(p.bth.psn, oos_hi_) > 0) oos_hi_ = p.bth.psn;
    KeepOoo(p);
    return;
  }
  if (d < 0) {
    OnDuplicate(p);
    return;
  }
  if (responses_.size() >= max_responses_) {  // cannot answer now: the requester will retry
    counters.out_of_sequence++;
    return;
  }
  bool ack_req = false;
  if (!ExecuteRequest(p, now, &ack_req)) return;
  const uint32_t drained = ooo_count_ ? DrainOoo(now) : 0;
  // Kept requests just executed: say so at once (the requester waits for
  // this answer before it resends anything after the gap).
  // A request that asks for an answer while later ones are kept past a new
  // gap hears of that gap.
  if (ack_req || drained || (p.bth.ack_req && ooo_count_)) AnswerProgress();
}

bool QueuePair::ExecuteRequest(const RocePacket& p, uint64_t now, bool* ack_req) {
  (void)now;
  nak_sent_ = false;

  const OpcodeInfo& info = p.info();
  const Position pos = info.position;
  const uint32_t mtu = attr_.path_mtu;
  const size_t len = p.payload.size();
  bool seq_ok;
  switch (in_msg_) {
    case InMsg::kSend:
      seq_ok = info.kind == OpKind::kSend && (pos == Position::kMiddle || pos == Position::kLast);
      break;
    case InMsg::kWrite:
      seq_ok = info.kind == OpKind::kWrite && (pos == Position::kMiddle || pos == Position::kLast);
      break;
    default:
      seq_ok = pos == Position::kFirst || pos == Position::kOnly;
  }
  const bool len_ok = (pos == Position::kFirst || pos == Position::kMiddle)
                          ? len == mtu
                          : len <= mtu && !(pos == Position::kLast && len == 0);
  if (!seq_ok || !len_ok) {
    ResponderError(syndrome::kNakInvalidRequest, Status::kCanceled, Cause::kRemoteInvalidRequest);
    return false;
  }
  const bool ends = pos == Position::kLast || pos == Position::kOnly;

  switch (info.kind) {
    case OpKind::kSend: {
      if (!have_recv_ && !TakeRecv()) {
        counters.rnr_naks_sent++;
        nak_sent_ = true;
        went_back_ = false;
        oos_hi_ = epsn_;
        QueueNak(syndrome::Rnr(attr_.min_rnr_timer), epsn_);
        return false;
      }
      if (!PlaceRecv(p.payload, placed_ == &p)) return false;  // already there: InPlaceTarget
      if (!ends) {
        in_msg_ = InMsg::kSend;
        break;
      }
      recv_with_imm_ = p.Has(kHdrImmDt);
      recv_solicited_ = p.bth.se;
      recv_imm_ = p.imm;
      recv_with_inv_ = p.Has(kHdrIeth);
      recv_inv_rkey_ = p.ieth_rkey;
      if (recv_with_inv_ && mem_->InvalidateRemote(p.ieth_rkey) != mem::Result::kOk) {
        ResponderError(syndrome::kNakRemoteAccess, Status::kCanceled, Cause::kInvalidate);
        return false;
      }
      CompleteRecv(Status::kSuccess, Cause::kNone);
      msn_ = PsnAdd(msn_, 1);
      in_msg_ = InMsg::kNone;
      break;
    }
    case OpKind::kWrite: {
      if (pos == Position::kFirst || pos == Position::kOnly) {
        write_va_ = p.reth.va;
        write_rkey_ = p.reth.rkey;
        write_left_ = write_total_ = p.reth.dma_length;
        if (write_total_ &&
            mem_->CheckRemote(write_rkey_, write_va_, write_total_, mem::kRemoteWrite) !=
                mem::Result::kOk) {
          ResponderError(syndrome::kNakRemoteAccess, Status::kCanceled, Cause::kRemoteAccess);
          return false;
        }
      }
      if (len > write_left_ || (ends && len != write_left_)) {
        ResponderError(syndrome::kNakInvalidRequest, Status::kCanceled,
                       Cause::kRemoteInvalidRequest);
        return false;
      }
      // FIRST / ONLY checked the whole range above. The region may have been
      // deregistered (or the window invalidated) since: check every later
      // packet again, or it could land in memory the application got back.
      if (len && pos != Position::kFirst && pos != Position::kOnly &&
          mem_->CheckRemote(write_rkey_, write_va_, len, mem::kRemoteWrite) != mem::Result::kOk) {
        ResponderError(syndrome::kNakRemoteAccess, Status::kCanceled, Cause::kRemoteAccess);
        return false;
      }
      const bool imm = p.Has(kHdrImmDt);
      if (ends && imm && !have_recv_ && !TakeRecv()) {
        counters.rnr_naks_sent++;
        nak_sent_ = true;
        went_back_ = false;
        oos_hi_ = epsn_;
        QueueNak(syndrome::Rnr(attr_.min_rnr_timer), epsn_);
        return false;
      }
      // In address order: a poller of the target's last byte sees the rest
      // (mem/place.h). Already there if the device placed it (InPlaceTarget).
      if (len && placed_ != &p) mem::PlaceInOrder(reinterpret_cast<void*>(write_va_), p.payload.data(), len);
      write_va_ += len;
      write_left_ -= static_cast<uint32_t>(len);
      if (!ends) {
        in_msg_ = InMsg::kWrite;
        break;
      }
      if (imm) {
        recv_with_imm_ = true;
        recv_solicited_ = p.bth.se;
        recv_imm_ = p.imm;
        recv_with_inv_ = false;
        recv_off_ = write_total_;  // a Write-with-immediate reports the Write's length
        CompleteRecv(Status::kSuccess, Cause::kNone);
      }
      msn_ = PsnAdd(msn_, 1);
      in_msg_ = InMsg::kNone;
      break;
    }
    case OpKind::kReadRequest: {
      const uint32_t rlen = p.reth.dma_length;
      // IBTA messages are at most 2^31 bytes; more would also need more than
      // half the PSN space for the responses at small MTUs.
      if (rlen > 0x80000000u) {
        ResponderError(syndrome::kNakInvalidRequest, Status::kCanceled,
                       Cause::kRemoteInvalidRequest);
        return false;
      }
      if (rlen && mem_->CheckRemote(p.reth.rkey, p.reth.va, rlen, mem::kRemoteRead) !=
                      mem::Result::kOk) {
        ResponderError(syndrome::kNakRemoteAccess, Status::kCanceled, Cause::kRemoteAccess);
        return false;
      }
      // The resource slot must not still be answering an older Read: that
      // would mean the requester exceeded our inbound read limit. A replay
      // for a duplicate of that Read is another matter: a requester that
      // asked again (a probe sent just before the answer reached it) and
      // then issued this Read has the old one complete, or it could not
      // have a new one out; the replay is for nothing and goes.
      for (size_t ri = 0; ri < responses_.size(); ri++) {
        const Response& r = responses_[ri];
        if (r.kind != Response::Kind::kRead || r.res != read_res_next_) continue;
        if (r.dup_only) {
          responses_.erase(ri--);
          counters.replays_superseded++;
          continue;
        }
        ResponderError(syndrome::kNakInvalidRequest, Status::kCanceled,
                       Cause::kRemoteInvalidRequest);
        return false;
      }
      ReadResource& res = read_res_[read_res_next_];
      res.first_psn = p.bth.psn;
      res.npkts = static_cast<uint32_t>(std::max<uint64_t>(1, (uint64_t{rlen} + mtu - 1) / mtu));
      res.va = p.reth.va;
      res.rkey = p.reth.rkey;
      res.length = rlen;
      res.sent_to = p.bth.psn;
      res.valid = true;
      msn_ = PsnAdd(msn_, 1);  // C9-148: a Read counts when it is accepted
      Response r{};
      r.kind = Response::Kind::kRead;
      r.psn = r.start_psn = p.bth.psn;
      r.msn = msn_;
      r.res = read_res_next_;
      r.end = rlen;
      responses_.push_back(r);
      read_res_next_ = (read_res_next_ + 1) % static_cast<uint32_t>(read_res_.size());
      epsn_ = PsnAdd(epsn_, res.npkts);
      return true;  // the responses are the acknowledgement
    }
    default:  // atomics and anything else we do not implement
      ResponderError(syndrome::kNakInvalidRequest, Status::kCanceled, Cause::kRemoteInvalidRequest);
      return false;
  }
  epsn_ = PsnAdd(epsn_, 1);
  if (p.bth.ack_req) *ack_req = true;
  return true;
}

// ---- requests past a gap ------------------------------------------------------
//
// A request whose PSN is ahead of the expected one (a loss or a reordered
// frame before it) is kept, up to QpTuning::ooo_window PSNs ahead, and
// executed in order when the gap is filled: the requester resends only the
// missing packet, and the ACK that follows jumps past everything kept. On the
// wire nothing changes for a go-back-N requester (rxe): the sequence NAK goes
// out as before, and what it resends after the gap arrives as duplicates.

void QueuePair::KeepOoo(const RocePacket& p) {
  // A power of two (slot = PSN & (w - 1)), at most 256.
  uint32_t w = std::min<uint32_t>(OooWindow(), 256);
  while (w & (w - 1)) w &= w - 1;
  const int32_t d = PsnDiff(p.bth.psn, epsn_);
  if (w == 0 || d <= 0) return;
  if (static_cast<uint32_t>(d) >= w || p.payload.size() > attr_.path_mtu) {
    // Not kept: remember that something past the gap is missing, so the
    // answer once the gap is filled is a NAK for it, not an ACK that the
    // requester would take for "the rest is on its way" (GapKnown).
    if (!ooo_overflow_ || PsnDiff(p.bth.psn, ooo_over_hi_) > 0) ooo_over_hi_ = p.bth.psn;
    ooo_overflow_ = true;
    return;
  }
  if (ooo_.size() != w || ooo_data_.size() != size_t{w} * attr_.path_mtu) {
    ooo_.assign(w, OooSlot{});
    ooo_data_.assign(size_t{w} * attr_.path_mtu, 0);
    ooo_count_ = 0;
  }
  const uint32_t slot = p.bth.psn & (w - 1);
  OooSlot& s = ooo_[slot];
  if (s.used) {
    // The same request again, or one left behind by a jump of epsn_ (a
    // Read's response PSNs): replace the latter.
    if (PsnDiff(s.pkt.bth.psn, epsn_) > 0) return;
    ooo_count_--;
  }
  s.pkt = p;
  uint8_t* buf = &ooo_data_[size_t{slot} * attr_.path_mtu];
  if (!p.payload.empty()) std::memcpy(buf, p.payload.data(), p.payload.size());
  s.pkt.payload = ByteSpan(buf, p.payload.size());
  s.pkt.pad = ByteSpan();
  s.pkt.trailer = ByteSpan();
  s.used = true;
  if (ooo_count_ == 0 || PsnDiff(p.bth.psn, ooo_hi_) > 0) ooo_hi_ = p.bth.psn;
  ooo_count_++;
  counters.ooo_kept++;
}

bool QueuePair::GapKnown() {
  if (ooo_overflow_ && PsnDiff(ooo_over_hi_, epsn_) < 0) ooo_overflow_ = false;
  if (ooo_overflow_) return true;
  return ooo_count_ && !OooHasEpsn();
}

bool QueuePair::OooHasEpsn() const {
  if (ooo_count_ == 0) return false;
  const OooSlot& s = ooo_[epsn_ & (ooo_.size() - 1)];
  return s.used && s.pkt.bth.psn == epsn_;
}

uint32_t QueuePair::DrainOoo(uint64_t now) {
  uint32_t n = 0;
  while (OooHasEpsn() && !error_pending_ && responses_.size() < max_responses_) {
    OooSlot& s = ooo_[epsn_ & (ooo_.size() - 1)];
    s.used = false;
    ooo_count_--;
    bool ack_req = false;
    // The slot's payload stays put until the slot is reused, which nothing
    // in ExecuteRequest does.
    if (!ExecuteRequest(s.pkt, now, &ack_req)) break;  // RNR NAK or a fatal one
    counters.ooo_executed++;
    n++;
  }
  if (error_pending_) {
    ClearOoo();
    return n;
  }
  // A Read moves epsn_ past its response PSNs: drop anything kept there.
  if (ooo_count_) {
    for (OooSlot& s : ooo_) {
      if (s.used && PsnDiff(s.pkt.bth.psn, epsn_) < 0) {
        s.used = false;
        ooo_count_--;
      }
    }
  }
  return n;
}

void QueuePair::AnswerProgress() {
  if (error_pending_ || nak_sent_) return;  // a fatal or RNR NAK is the answer
  if (GapKnown()) {
    // Later requests came (kept, or past the window) and the expected one
    // has not: a new gap.
    nak_sent_ = true;
    went_back_ = false;
    oos_hi_ = ooo_count_ ? ooo_hi_ : ooo_over_hi_;
    if (ooo_count_ && ooo_overflow_ && PsnDiff(ooo_over_hi_, oos_hi_) > 0) oos_hi_ = ooo_over_hi_;
    counters.seq_naks_sent++;
    QueueNak(syndrome::Nak(syndrome::kNakPsnSeqError), epsn_);
    return;
  }
  QueueAck();
}

void QueuePair::ClearOoo() {
  for (OooSlot& s : ooo_) s.used = false;
  ooo_count_ = 0;
  ooo_overflow_ = false;
}

void QueuePair::OnDuplicate(const RocePacket& p) {
  counters.duplicates++;
  if (p.bth.opcode != op::kRcReadRequest) {
    // A retransmitted Send/Write we already executed: acknowledge again —
    // with a sequence NAK if we keep requests past a gap (a requester whose
    // NAK was lost probes what it last heard of, and must learn of the gap).
    if (p.bth.ack_req) {
      if (!error_pending_ && GapKnown()) {
        counters.seq_naks_sent++;
        QueueNak(syndrome::Nak(syndrome::kNakPsnSeqError), epsn_);
      } else {
        QueueAck();
      }
    }
    return;
  }
  const uint32_t mtu = attr_.path_mtu;
  for (uint32_t i = 0; i < read_res_.size(); i++) {
    ReadResource& res = read_res_[i];
    if (!res.valid || PsnDiff(p.bth.psn, res.first_psn) < 0 ||
        PsnDiff(p.bth.psn, PsnAdd(res.first_psn, res.npkts - 1)) > 0)
      continue;
    const uint64_t offset = uint64_t(PsnDiff(p.bth.psn, res.first_psn)) * mtu;
    // A re-request asks for the same data from this PSN on: to the end, or
    // (as rxe and hardware accept) whole packets of it, for a gap.
    const uint64_t rest = res.length - offset;
    const uint32_t want = p.reth.dma_length;
    if (p.reth.va != res.va + offset || p.reth.rkey != res.rkey || want > rest ||
        (want < rest && (want == 0 || want % mtu != 0))) {
      counters.dropped_bad++;
      return;
    }
    counters.read_replays++;
    dev_->Event(qpn_, "read-replay", p.bth.psn, (uint64_t{want / mtu} << 32) | static_cast<uint32_t>(PsnDiff(res.sent_to, p.bth.psn)));
    for (size_t ri = 0; ri < responses_.size(); ri++) {
      Response& r = responses_[ri];
      if (r.kind != Response::Kind::kRead || r.res != i) continue;
      if (want == rest) {
        // Everything from here (a go-back-N requester): restart the job in
        // place; the requester asks for its first missing response, so
        // everything before it has arrived.
        r.psn = r.start_psn = p.bth.psn;
        r.offset = offset;
        r.end = offset + want;
        r.replay = true;
        return;
      }
      // A gap while the job is still being generated: replay what of the gap
      // was generated already, ahead of the job, which then goes on where
      // it was (restarting it at the gap would drop its rest).
      if (offset >= r.offset || responses_.size() >= max_responses_) return;
      Response g{};
      g.kind = Response::Kind::kRead;
      g.psn = g.start_psn = p.bth.psn;
      g.offset = offset;
      g.end = std::min<uint64_t>(offset + want, r.offset);
      g.msn = r.msn;
      g.res = i;
      g.replay = g.dup_only = true;
      responses_.insert(ri, g);
      return;
    }
    if (responses_.size() >= max_responses_) return;
    Response r{};
    r.kind = Response::Kind::kRead;
    r.psn = r.start_psn = p.bth.psn;
    r.offset = offset;
    r.end = offset + want;
    r.msn = msn_;
    r.res = i;
    r.replay = r.dup_only = true;
    responses_.push_back(r);
    return;
  }
}

bool QueuePair::TakeRecv() {
  ReceiveQueue* q = srq_ ? srq_ : &rq_;
  const RecvWqe* r = q->Front();
  if (!r) return false;
  cur_recv_ = *r;
  std::copy(r->sge, r->sge + r->num_sge, cur_sges_);
  cur_recv_.sge = cur_sges_;
  q->Pop();
  have_recv_ = true;
  recv_off_ = 0;
  recv_with_imm_ = recv_with_inv_ = recv_solicited_ = false;
  return true;
}

uint8_t* QueuePair::InPlaceTarget(const RocePacket& p) const {
  if (p.bth.opcode == op::kRcReadResponseMiddle || p.bth.opcode == op::kRcReadResponseLast)
    return ReadSinkTarget(p);  // completer.cc
  if ((state_ != QpState::kRtr && state_ != QpState::kRts) || error_pending_ || p.bth.psn != epsn_ ||
      p.bth.pkey != 0xFFFF || !p.IsReplyTo(net_))
    return nullptr;
  const size_t len = p.payload.size();
  if (len != attr_.path_mtu || responses_.size() >= max_responses_) return nullptr;
  if (p.bth.opcode == op::kRcWriteMiddle && in_msg_ == InMsg::kWrite) {
    if (len > write_left_ ||
        mem_->CheckRemote(write_rkey_, write_va_, len, mem::kRemoteWrite) != mem::Result::kOk)
      return nullptr;
    return reinterpret_cast<uint8_t*>(write_va_);
  }
  if (p.bth.opcode == op::kRcSendMiddle && in_msg_ == InMsg::kSend && have_recv_ &&
      recv_off_ + len <= cur_recv_.length) {
    // Within one SGE of the receive (PlaceRecv checks the same SGE).
    uint64_t pos = 0;
    for (uint32_t i = 0; i < cur_recv_.num_sge && pos <= recv_off_; i++) {
      const Sge& s = cur_sges_[i];
      if (recv_off_ + len <= pos + s.length) {
        if (mem_->CheckLocal(s.lkey, s.addr, s.length, mem::kLocalWrite) != mem::Result::kOk) return nullptr;
        return reinterpret_cast<uint8_t*>(s.addr + (recv_off_ - pos));
      }
      pos += s.length;
    }
  }
  return nullptr;
}

bool QueuePair::PlaceRecv(ByteSpan data, bool placed) {
  if (recv_off_ + data.size() > cur_recv_.length) {
    ResponderError(syndrome::kNakInvalidRequest, Status::kBufferOverflow, Cause::kLocalLength);
    return false;
  }
  // Validate every SGE this packet's data touches, then copy. On every
  // packet, not once per receive: the region may have been deregistered since
  // the previous packet of the message.
  uint64_t pos = 0;
  const uint64_t end = recv_off_ + data.size();
  for (uint32_t i = 0; i < cur_recv_.num_sge && pos < end; i++) {
    const Sge& s = cur_sges_[i];
    if (s.length && pos + s.length > recv_off_ &&
        mem_->CheckLocal(s.lkey, s.addr, s.length, mem::kLocalWrite) != mem::Result::kOk) {
      ResponderError(syndrome::kNakRemoteOperational, Status::kAccessViolation,
                     Cause::kLocalProtection);
      return false;
    }
    pos += s.length;
  }
  if (!placed) ScatterToSges(cur_sges_, cur_recv_.num_sge, recv_off_, data);
  recv_off_ = end;
  return true;
}

void QueuePair::CompleteRecv(Status st, Cause cause) {
  Completion c;
  c.qp_context = context_;
  c.request_context = cur_recv_.context;
  c.status = st;
  c.cause = cause;
  c.type = RequestType::kReceive;
  c.bytes = static_cast<uint32_t>(recv_off_);
  c.qpn = qpn_;
  if (st == Status::kSuccess) {
    c.with_imm = recv_with_imm_;
    c.imm = recv_imm_;
    c.with_inv = recv_with_inv_;
    c.inv_rkey = recv_inv_rkey_;
    c.solicited = recv_solicited_;
  }
  recv_cq_->Push(c);
  have_recv_ = false;
}

void QueuePair::ResponderError(uint8_t nak_code, Status recv_status, Cause cause) {
  switch (nak_code) {
    case syndrome::kNakRemoteAccess: counters.access_naks_sent++; break;
    case syndrome::kNakInvalidRequest: counters.invalid_naks_sent++; break;
    default: counters.op_naks_sent++; break;
  }
  if (have_recv_) CompleteRecv(recv_status, cause);
  // Nothing already queued (ACKs, read responses) may follow a fatal NAK's
  // PSN out of order: it goes last, then the QP moves to Error.
  QueueNak(syndrome::Nak(nak_code), epsn_);
  error_pending_ = true;
  ClearOoo();
  dev_->MarkActive(this);
}

void QueuePair::QueueAck() {
  const uint32_t psn = PsnAdd(epsn_, -1);
  if (!responses_.empty() && responses_.back().kind == Response::Kind::kAck) {
    responses_.back().psn = psn;  // coalesce
    responses_.back().msn = msn_;
    return;
  }
  Response r{};
  r.kind = Response::Kind::kAck;
  r.psn = psn;
  r.syndrome = syndrome::Ack();
  r.msn = msn_;
  responses_.push_back(r);
}

void QueuePair::QueueNak(uint8_t s, uint32_t psn) {
  Response r{};
  r.kind = Response::Kind::kNak;
  r.psn = psn;
  r.syndrome = s;
  r.msn = msn_;
  responses_.push_back(r);
}

size_t QueuePair::ResponderTx(uint64_t now, size_t budget) {
  size_t n = 0;
  if (cnp_owed_ && n < budget) {
    TxPacket pkt;
    pkt.bth.opcode = op::kCnp;
    pkt.bth.becn = true;
    if (Send(pkt, now)) {
      cnp_owed_ = false;
      last_cnp_ = now;
      have_cnp_time_ = true;
      counters.cnps_sent++;
      n++;
    }
  }
  const uint32_t mtu = attr_.path_mtu;
  while (n < budget && !responses_.empty()) {
    Response& r = responses_.front();
    TxPacket pkt;
    pkt.bth.psn = r.psn;
    if (r.kind != Response::Kind::kRead) {
      pkt.bth.opcode = op::kRcAck;
      pkt.ext.aeth = {r.syndrome, r.msn};
      if (!Send(pkt, now)) break;
      if (r.kind == Response::Kind::kAck) counters.acks_sent++;
      responses_.pop_front();
      n++;
      continue;
    }
    ReadResource& res = read_res_[r.res];
    const uint64_t left = r.end - r.offset;
    const uint32_t plen = static_cast<uint32_t>(std::min<uint64_t>(mtu, left));
    const bool first = r.psn == r.start_psn;
    const bool last = left <= mtu;
    pkt.bth.opcode = first && last ? op::kRcReadResponseOnly
                     : first       ? op::kRcReadResponseFirst
                     : last        ? op::kRcReadResponseLast
                                   : op::kRcReadResponseMiddle;
    pkt.ext.aeth = {syndrome::Ack(), r.msn};
    if (plen) {
      // The region may have gone since the request was accepted. A replay
      // for a duplicate request (possibly a stale one the requester no longer
      // needs) is dropped; a first answer fails the request.
      if (mem_->CheckRemote(res.rkey, res.va + r.offset, plen, mem::kRemoteRead) !=
          mem::Result::kOk) {
        if (r.replay) {
          counters.stale_replays++;
          responses_.pop_front();
          continue;
        }
        const uint32_t psn = r.psn;
        responses_.clear();
        counters.access_naks_sent++;
        QueueNak(syndrome::Nak(syndrome::kNakRemoteAccess), psn);
        error_pending_ = true;
        continue;
      }
      pkt.seg[0] = {reinterpret_cast<const uint8_t*>(res.va + r.offset), plen};
      pkt.nseg = 1;
    }
    pkt.payload_len = plen;
    if (!Send(pkt, now)) break;
    n++;
    if (PsnLess(r.psn, res.sent_to)) {
      counters.retransmit_bytes += plen;
      counters.replay_bytes += plen;
    } else {
      res.sent_to = PsnAdd(r.psn, 1);
    }
    r.psn = PsnAdd(r.psn, 1);
    r.offset += plen;
    if (last) responses_.pop_front();
  }
  if (error_pending_ && responses_.empty()) {
    error_pending_ = false;
    ToError();
    return n;
  }
  // Kept requests waiting for room in the response queue.
  if (OooHasEpsn() && responses_.size() < max_responses_ && DrainOoo(now)) {
    AnswerProgress();
    dev_->MarkActive(this);
  }
  return n;
}

}  // namespace roce::rc
