// SPDX-License-Identifier: MIT
// Requester (IBTA §9.7.4 / rxe_req.c behaviour): turns send-queue WQEs into
// request packets — path-MTU segmentation with FIRST/MIDDLE/LAST/ONLY
// opcodes, PSNs, AckReq — within the window, the outbound read limit and
// READ_FENCE; paces Reads (a long one asks for its responses in several READ
// requests, a read window's worth at a time: "Read pacing" below); executes
// memory-window Bind/Invalidate in order; and restarts from any PSN for
// go-back-N (a Read resumes from the middle of its response).
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
  if (!ReRequestTx(now, budget, &n)) return n;
  // A tail probe: the last packet sent, again (OnTailProbe).
  if (tail_probe_due_ && n < budget && state_ == QpState::kRts) [[unlikely]] {
    if (!EmitTailProbe(now)) return n;
    n++;
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
    // A Read goes on from its next expected response at the earliest.
    const uint32_t rk = w.IsRead() ? static_cast<uint32_t>(PsnDiff(w.resp_psn, w.first_psn)) : 0;
    if (w.IsRead() && cursor_pkt_ < rk) cursor_pkt_ = rk;
    const uint32_t psn = PsnAdd(w.first_psn, cursor_pkt_);
    if (goback_bounded_ && !PsnLess(psn, goback_end_)) {
      // The bounded go-back is done: on with what was never sent.
      const uint32_t frontier = max_sent_;
      RetryFrom(frontier);
      continue;
    }
    if (w.IsRead()) {
      if (cursor_pkt_ < w.req_pkts) {
        // Asked for before: a pass going back (a timeout, a go-back-N
        // restart) asks again for every response still missing from here,
        // as re-requests (within the read window, one per READ request they
        // fall in), before anything new.
        ReadLost(w, cursor_pkt_, w.req_pkts);
        cursor_pkt_ = w.req_pkts;
        if (!ReRequestTx(now, budget, &n)) break;
        continue;
      }
      if (cursor_pkt_ >= w.npkts) {
        cursor_++;
        cursor_pkt_ = 0;
        continue;
      }
      // A new READ request for the next responses, as many as the read
      // window has room for (its PSNs were taken within the window when the
      // Read started); later WQEs wait behind it, their PSNs after its.
      const uint32_t cnt = ReadAsk(w);
      if (!cnt) break;
      if (!EmitRequest(w, cursor_pkt_, now, cnt)) break;
      n++;
      counters.read_requests++;
      read_reqs_.push_back({psn, PsnAdd(psn, cnt)});
      w.req_pkts = cursor_pkt_ + cnt;
      if (read_reqs_.size() == 1) ArmReadProbe(now);
      cursor_pkt_ = w.req_pkts;
      continue;
    }
    // The window limits new PSNs; a resend of one already sent always goes.
    if (!PsnLess(psn, max_sent_) && PsnDiff(psn, acked_) >= static_cast<int32_t>(window)) break;
    if (!EmitRequest(w, cursor_pkt_, now)) break;
    n++;
    if (++cursor_pkt_ >= w.npkts) {
      cursor_++;
      cursor_pkt_ = 0;
    }
  }
  return n;
}

// ---- Read pacing ------------------------------------------------------------------
//
// A Read's responses come back as fast as the responder can send them:
// thousands of frames for a few MB, more than a receiver slower than the link
// can queue (a kernel tap's 1000 frames), and what it drops is asked for
// again in replays just as unpaced. So the requester bounds the responses in
// flight — asked for, neither placed nor judged lost — over all its open
// Reads to a window (read_wnd_, QpTuning::read_window). A Read takes its
// whole PSN range when it starts, as before, and asks for its responses in
// READ requests of a part of that range each (PSN first + k, RETH for bytes
// k * MTU on), sent as the window has room: ordinary requests to the
// responder, each within the outbound read limit. Later WQEs wait until the
// Read's last request is out (their PSNs follow its range). Responses judged
// lost (a gap re-requested, a timeout) leave the flight and are asked for
// again within the window too, one re-request per READ request they fall in
// (a re-request names one of the responder's read resources). The window is
// AIMD, as TCP's congestion window: slow start from read_window, +1 per
// response placed up to read_ssthresh_, then +1 per window's worth; a loss
// halves it, once per recovery (until every response asked for before the
// loss has come in order), a timeout takes it to the minimum.

uint32_t QueuePair::ReadAsk(const SendWqe& w) const {
  if (read_reqs_.size() >= std::max<uint32_t>(attr_.max_rd_atomic, 1)) return 0;
  const uint32_t left = w.npkts - w.req_pkts;
  if (!dev_->tuning().read_window_max) return left;  // unpaced: everything at once
  const uint32_t in_flight = ReadInFlight();
  const uint32_t room = read_wnd_ > in_flight ? read_wnd_ - in_flight : 0;
  if (left <= room) return left;
  // A part, once a quarter of the window is free: fewer, larger requests
  // (the outbound read limit counts requests, not bytes).
  return room >= std::max<uint32_t>(read_wnd_ / 4, 1) ? room : 0;
}

uint32_t QueuePair::ReadReAsk(uint32_t n) const {
  if (!dev_->tuning().read_window_max) return n;
  const uint32_t in_flight = ReadInFlight();
  const uint32_t room = read_wnd_ > in_flight ? read_wnd_ - in_flight : 0;
  if (n <= room) return n;
  // (a quarter at least: every re-request is a replay job at the responder,
  // which holds a few dozen)
  return room >= std::max<uint32_t>(read_wnd_ / 4, 1) ? room : 0;
}

uint32_t QueuePair::ReadUnplaced(const SendWqe& w, uint32_t a, uint32_t b) const {
  const uint32_t rk = static_cast<uint32_t>(PsnDiff(w.resp_psn, w.first_psn));
  if (a < rk) a = rk;
  if (a >= b) return 0;
  return (b - a) - w.ooo.CountIn(a - rk, b - rk);
}

uint32_t QueuePair::ReadInFlight() const {
  uint32_t n = 0;
  for (uint64_t i = ack_scan_; i != sq_tail_; i++) {
    const SendWqe& w = Slot(i);
    if (!w.started) break;
    if (!w.IsRead() || w.done) continue;
    n += ReadUnplaced(w, 0, w.req_pkts) - ReadUnplaced(w, w.lost_from, std::min(w.lost_to, w.req_pkts));
  }
  return n;
}

void QueuePair::ReadLost(SendWqe& w, uint32_t from, uint32_t to, bool gap) {
  const uint32_t rk = static_cast<uint32_t>(PsnDiff(w.resp_psn, w.first_psn));
  from = std::max(from, rk);
  to = std::min(to, w.req_pkts);
  if (from >= to) return;
  if (!Repairs()) {
    // Towards a responder not ours a re-request starts at its READ
    // request's first missing response (NextMissing): all from there are
    // asked for again, so they are not in flight.
    uint32_t first;
    ReadReqOf(w, from, &first);
    from = std::max(first, rk);
    while (from > rk && w.ooo.Test(from - rk)) from += w.ooo.RunFrom(from - rk);
  }
  if (std::max(w.lost_from, rk) < w.lost_to) {  // some already marked: one range over both
    from = std::min(from, std::max(w.lost_from, rk));
    to = std::max(to, w.lost_to);
  }
  if (!(std::max(w.lost_from, rk) < w.lost_to)) w.lost_gap = false;
  w.lost_gap |= gap;
  w.lost_from = from;
  w.lost_to = to;
  const uint64_t seq = SeqOf(w);
  if (std::find(rereq_.begin(), rereq_.end(), seq) == rereq_.end()) rereq_.push_back(seq);
  dev_->MarkActive(this);
}

bool QueuePair::ReRequestTx(uint64_t now, size_t budget, size_t* n) {
  while (*n < budget && !rereq_.empty() && state_ == QpState::kRts) {
    const uint64_t seq = rereq_.front();
    SendWqe& w = Slot(seq);
    const uint32_t rk = w.started && w.IsRead() ? static_cast<uint32_t>(PsnDiff(w.resp_psn, w.first_psn)) : 0;
    uint32_t k, cnt;
    bool whole = false;
    if (seq < sq_head_ || seq >= sq_tail_ || !w.started || !w.IsRead() || w.done ||
        !NextMissing(w, std::max(w.lost_from, rk), w.lost_to, &k, &cnt, &whole)) {
      if (seq >= sq_head_ && seq < sq_tail_) w.lost_from = w.lost_to = 0;
      rereq_.erase(rereq_.begin());
      continue;
    }
    // Towards a responder not ours, a re-request may not start above a
    // missing response of its READ request (NextMissing): the rest of it
    // when those asked for already have come (or are asked for again).
    if (!Repairs() && k < std::max(w.lost_from, rk)) return true;
    // Within the window (a whole request goes as it went, at once: the
    // responder may be waiting for it).
    if (!whole) {
      cnt = ReadReAsk(cnt);
      if (!cnt) return true;  // the window is full: when responses come
    }
    const bool probe = probe_;
    if (!EmitRequest(w, k, now, cnt)) return false;
    (*n)++;
    w.lost_from = std::max(w.lost_from, k + cnt);
    ArmReadProbe(now);
    // (after a timeout the retransmit timer paces; the read hold goes with
    // selective repair, only between our stacks)
    if (k == rk && w.lost_gap && !probe && Repairs()) {
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
  return true;
}

uint32_t QueuePair::ReadReqOf(const SendWqe& w, uint32_t k, uint32_t* first) const {
  const uint32_t psn = PsnAdd(w.first_psn, k);
  for (size_t i = 0; i < read_reqs_.size(); i++) {
    const ReadReq& r = read_reqs_[i];
    if (PsnDiff(psn, r.first) >= 0 && PsnDiff(psn, r.end) < 0) {
      *first = static_cast<uint32_t>(PsnDiff(r.first, w.first_psn));
      return static_cast<uint32_t>(PsnDiff(r.end, w.first_psn));
    }
  }
  *first = k;  // (a missing response's request is always outstanding)
  return k + 1;
}

bool QueuePair::NextMissing(const SendWqe& w, uint32_t from, uint32_t to, uint32_t* k, uint32_t* n,
                            bool* whole) const {
  const uint32_t rk = static_cast<uint32_t>(PsnDiff(w.resp_psn, w.first_psn));
  const auto skip_placed = [&](uint32_t i) {
    while (i > rk && w.ooo.Test(i - rk)) i += w.ooo.RunFrom(i - rk);
    return i;
  };
  uint32_t a = skip_placed(std::max(from, rk));
  if (a >= to) return false;
  uint32_t first;
  const uint32_t req_end = ReadReqOf(w, a, &first);
  // A responder not ours may narrow a read resource to each duplicate
  // request's start (rxe: a later one must start at or after it, else it is
  // dropped): a re-request of a READ request starts at its first missing
  // response and covers all those missing below `to`.
  if (!Repairs()) a = skip_placed(std::max(first, rk));
  *k = a;
  if (a == first && ReadUnplaced(w, first, req_end) == req_end - first) {
    // Nothing of that READ request has come: the responder may never have
    // had it, and would take a part of it for a new request of that length
    // (its next PSN then not ours). Asked for again whole, as it went.
    *n = req_end - first;
    if (whole) *whole = true;
    return true;
  }
  if (whole) *whole = false;
  uint32_t e = std::min(to, req_end);
  if (!Repairs()) {
    e -= w.ooo.RunBefore(e - rk);  // (to the last missing one: a is missing, the run ends after it)
  } else if (const uint32_t placed = w.ooo.FirstFrom(a - rk + 1); placed && rk + placed < e) {
    e = rk + placed;  // up to the next response placed
  }
  *n = e - a;
  return true;
}

void QueuePair::ReadPlaced(const SendWqe& rd, uint32_t k, bool in_order) {
  const uint32_t max = dev_->tuning().read_window_max;
  if (!max) return;
  if (read_recovering_) {
    if (!in_order || PsnDiff(PsnAdd(rd.first_psn, k + 1), read_recover_) < 0) return;
    read_recovering_ = false;
  }
  if (read_wnd_ >= max) return;
  if (read_wnd_ < read_ssthresh_) {
    read_wnd_++;
  } else if (++read_wnd_acc_ >= read_wnd_) {
    read_wnd_acc_ = 0;
    read_wnd_++;
  }
}

void QueuePair::ReadWindowLoss() {
  if (!dev_->tuning().read_window_max || read_recovering_) return;
  read_ssthresh_ = read_wnd_ = std::max(read_wnd_ / 2, kReadWindowMin);
  read_wnd_acc_ = 0;
  read_recovering_ = true;
  read_recover_ = max_sent_;
  counters.read_window_cuts++;
  dev_->Event(qpn_, "read-window", read_wnd_, ReadInFlight());
}

void QueuePair::ReadWindowTimeout() {
  // Responses lost with nothing after them to tell: from the minimum again,
  // the threshold half the window.
  if (!dev_->tuning().read_window_max) return;
  read_ssthresh_ = std::max(read_wnd_ / 2, kReadWindowMin);
  read_wnd_ = kReadWindowMin;
  read_wnd_acc_ = 0;
  read_recovering_ = false;
  counters.read_window_cuts++;
  dev_->Event(qpn_, "read-window", read_wnd_, ReadInFlight());
}

uint64_t QueuePair::ReadProbeNs() const {
  // A round trip with its variation (a sample waits for the responses queued
  // ahead of it, as the missing ones would); before any sample, a quarter of
  // the ACK timeout.
  const uint64_t timeout = AckTimeoutNs(attr_.timeout);
  const uint64_t t = srtt_ ? std::max(2 * srtt_, srtt_ + 4 * rttvar_) : (timeout ? timeout / 4 : 1'000'000);
  return timeout ? std::min(t, timeout) : t;
}

void QueuePair::ArmReadProbe(uint64_t now) {
  if (read_reqs_.empty() && rereq_.empty()) {
    read_probe_at_ = 0;
    return;
  }
  read_probe_at_ = now + ReadProbeNs();
  dev_->TimerChanged(this);
}

void QueuePair::OnReadProbe(uint64_t now) {
  // Responses are in flight and none has come for a while: lost at the end
  // of a burst, with nothing after them to show it (NoteBeyondHole), or
  // only late. As TCP's tail loss probe: ask again for the last one alone.
  // Its replay comes after whatever is still on its way (a responder answers
  // in order; ours ignores a re-request for what it has yet to send), so it
  // shows the others lost only if they are. One retry of the stall budget;
  // only if a response came since the last probe: a silent peer is the
  // retransmit timer's to judge (retry_cnt).
  if (!read_heard_) return;
  read_heard_ = false;
  if (!Repairs()) {
    // Towards a responder not ours a re-request must start at the first
    // missing response of its READ request (NextMissing), so a probe of the
    // last would wait behind those: every response in flight is asked for
    // again, within the window, from the first missing one.
    if (ReadInFlight() == 0) return;
    counters.read_probes++;
    dev_->Event(qpn_, "read-probe", una_, ReadInFlight());
    if (!ConsumeRetry(/*silent=*/false)) return;
    for (uint64_t i = ack_scan_; i != sq_tail_; i++) {
      SendWqe& w = Slot(i);
      if (!w.started) break;
      if (!w.IsRead() || w.done) continue;
      w.asked = false;
      ReadLost(w, 0, w.req_pkts);
    }
    ArmReadProbe(now);
    return;
  }
  SendWqe* last = nullptr;
  uint32_t k = 0;
  for (uint64_t i = ack_scan_; i != sq_tail_; i++) {
    SendWqe& w = Slot(i);
    if (!w.started) break;
    if (!w.IsRead() || w.done) continue;
    const uint32_t rk = static_cast<uint32_t>(PsnDiff(w.resp_psn, w.first_psn));
    // Its last response in flight: asked for, not placed, not being asked again.
    for (uint32_t j = w.req_pkts; j-- > rk;) {
      if (j > rk && w.ooo.Test(j - rk)) {
        j -= w.ooo.RunBefore(j - rk + 1) - 1;  // (to the run's start)
        continue;
      }
      if (j >= std::max(w.lost_from, rk) && j < w.lost_to) break;
      last = &w;
      k = j;
      break;
    }
  }
  if (!last) return;
  counters.read_probes++;
  dev_->Event(qpn_, "read-probe", PsnAdd(last->first_psn, k), ReadInFlight());
  if (!ConsumeRetry(/*silent=*/false)) return;
  ReadLost(*last, k, k + 1);
  ArmReadProbe(now);
}

void QueuePair::RetireReads() {
  // Freed in order: the responder frees its read resources in the order the
  // requests came, so an answered one behind an unanswered one still holds
  // its resource there (and a new Read would take the oldest's).
  const SendWqe* o = OldestOpenRead();
  while (!read_reqs_.empty() && (!o || PsnDiff(read_reqs_.front().end, o->resp_psn) <= 0))
    read_reqs_.pop_front();
}

uint64_t QueuePair::TailProbeNs() const {
  // Two round trips, as the read probe, and 200 us more: what a peer's poll
  // loop, a NIC's interrupt moderation or a descheduled thread add to an
  // answer without loss (TCP's tail loss probe adds the delayed-ACK time).
  // A spurious probe costs one duplicate packet; a lost last packet without
  // one, the retransmit timeout.
  constexpr uint64_t kSlackNs = 200'000;
  const uint64_t timeout = AckTimeoutNs(attr_.timeout);
  const uint64_t t = (srtt_ ? std::max(2 * srtt_, srtt_ + 4 * rttvar_) : 0) + kSlackNs;
  return timeout ? std::min(t, timeout / 2) : t;
}

void QueuePair::ArmTailProbe(uint64_t now) {
  // Armed while a packet sent with AckReq is unanswered (a burst's tail
  // always asks: a message's last packet, or the window's); the deadline
  // runs from the latest one (OnTailProbe).
  tail_probe_at_ = una_ != next_psn_ && !tail_probed_ && PsnDiff(ack_req_psn_, acked_) >= 0 &&
                           dev_->tuning().tail_probe
                       ? std::max(now, ack_req_t_) + tail_pto_
                       : 0;
}

void QueuePair::OnTailProbe(uint64_t now) {
  // Sends and Writes are unacknowledged and nothing has come for two round
  // trips: the last packet sent, or its ACK, may have been lost at the end
  // of a burst, with nothing after it to draw a sequence NAK — without a
  // probe only the retransmit timer (2.1 s on ND2 connections) would find
  // it. As TCP's tail loss probe, the last packet goes again with AckReq:
  // a responder that has it answers it as a duplicate (an ACK of all it
  // has), one that lacks it executes it (and ACKs), one that lacks more
  // NAKs the first gap (a repair, or go-back-N towards rxe). Once until the
  // next progress, so a silent peer costs one packet and the retransmit
  // timer still judges it; not while anything else recovers (a repair, a
  // go-back pass, an RNR wait, Reads: those have the read probe).
  if (tail_probed_ || una_ == next_psn_ || PsnDiff(ack_req_psn_, acked_) < 0 || rnr_deadline_ ||
      repair_ != Repair::kNone || seq_nak_active_ || PsnLess(CursorPsn(), max_sent_) || !rereq_.empty() ||
      OldestOpenRead())
    return;
  if (now < ack_req_t_ + tail_pto_) {  // armed for an earlier AckReq: from the latest
    tail_probe_at_ = ack_req_t_ + tail_pto_;
    return;
  }
  tail_probed_ = true;
  tail_probe_due_ = true;
  dev_->MarkActive(this);
}

bool QueuePair::EmitTailProbe(uint64_t now) {
  tail_probe_due_ = false;
  uint64_t seq;
  uint32_t k;
  const uint32_t last = PsnAdd(max_sent_, -1);
  if (una_ == next_psn_ || !FindRequest(last, &seq, &k)) return true;  // answered meanwhile
  SendWqe& w = Slot(seq);
  if (w.IsRead()) return true;
  force_ack_req_ = true;
  const bool ok = EmitRequest(w, k, now, 0);
  force_ack_req_ = false;
  if (!ok) {
    tail_probe_due_ = state_ == QpState::kRts;  // the TX queue was full: on the next pass
    return false;
  }
  counters.tail_probes++;
  dev_->Event(qpn_, "tail-probe", last, una_);
  return true;
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
  if ((w.wr.flags & kReadFence) && !read_reqs_.empty()) return false;
  if (w.IsRead() && read_reqs_.size() >= std::max<uint32_t>(attr_.max_rd_atomic, 1)) return false;
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
  if (w.IsRead()) w.resp_psn = w.first_psn;  // (its requests: RequesterTx)
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
    // A new request for the next part of the Read, or a re-request for
    // missing responses (callers: after a timeout every missing one, in one
    // request per READ request they fall in, so one loss cannot silence the
    // whole retry; otherwise the gap before the first response placed).
    if (!read_pkts) read_pkts = w.npkts - k;
    const uint64_t len = std::min<uint64_t>(w.length - offset, uint64_t{read_pkts} * mtu);
    if (PsnLess(psn, max_sent_)) {
      // A re-request: what it covers is asked for. One starting at the next
      // expected response starts a new replay; a later part of the same gap
      // (the next READ request's) extends it.
      const uint32_t to = PsnAdd(psn, read_pkts);
      if (!w.asked || psn == w.resp_psn) {
        w.asked = true;
        w.asked_to = to;
        w.replay_hi = psn;
        w.gap_retry = true;
        w.gap_psn = psn;
      } else if (PsnDiff(to, w.asked_to) > 0) {
        w.asked_to = to;
      }
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
  if (probe && retransmit && UnconfirmedAfter(w, psn, read_pkts) <= 2 && Send(pkt, now)) {
    counters.retransmits++;
    counters.retransmit_bytes += pkt.payload_len;
  }
  const uint32_t end = PsnAdd(psn, w.IsRead() ? read_pkts : 1);
  if (PsnDiff(end, max_sent_) > 0) max_sent_ = end;
  since_ack_req_ = pkt.bth.ack_req ? 0 : since_ack_req_ + 1;
  bool arm_tail = false;
  if (pkt.bth.ack_req) {
    ack_req_psn_ = psn;
    ack_req_t_ = now;
    arm_tail = !tail_probe_at_ && !tail_probed_;
    if (arm_tail) ArmTailProbe(now);
  }
  if (!retrans_deadline_) ArmRetransmitTimer(now);
  else if (arm_tail) dev_->TimerChanged(this);
  // Round-trip samples: a Send/Write packet's ACK, or a new READ request's
  // first response (which also waits for the responses queued before it:
  // what a lost one's wait is judged by, ReadProbeNs).
  if (!retransmit && pkt.bth.ack_req && !rtt_pending_) {
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
    if (w.IsRead()) {
      // A Read is repaired only as a whole READ request sent that nothing
      // has answered yet (the responder lost it, so none of its responses
      // can have come).
      const uint32_t pk = static_cast<uint32_t>(PsnDiff(psn, w.first_psn));
      const int32_t d = PsnDiff(psn, w.resp_psn);
      if (d < 0 || pk >= w.req_pkts) return false;
      bool starts = false;
      for (size_t r = 0; r < read_reqs_.size() && !starts; r++) starts = read_reqs_[r].first == psn;
      uint32_t first;
      const uint32_t end = ReadReqOf(w, pk, &first);
      if (!starts || ReadUnplaced(w, first, end) != end - first) return false;
    }
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
    const uint32_t k = i == cursor_ ? cursor_pkt_ : 0;
    if (w.IsRead())  // a Read goes on from its next expected response at the earliest
      return PsnAdd(w.first_psn, std::max<int64_t>(k, PsnDiff(w.resp_psn, w.first_psn)));
    return PsnAdd(w.first_psn, k);
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
  uint32_t rk = k, cnt = 0;
  if (w.IsRead() && !NextMissing(w, k, w.req_pkts, &rk, &cnt)) {  // (FindRequest: the whole request)
    repair_ = Repair::kNone;
    return true;
  }
  force_ack_req_ = true;
  const bool ok = EmitRequest(w, rk, now, cnt);
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

uint64_t QueuePair::ReoWndCap() const {
  // The reordering allowance never exceeds eight smoothed round trips nor a
  // quarter of the ACK timeout. RACK bounds its reo_wnd by one (RFC 8985
  // 6.2); one cost the rocesim grid's depth-64 reordering 3-6x the
  // retransmits, eight about what no bound cost. Without it, repairs
  // misjudged spurious (RepairAnswered) ratcheted the allowance a quarter at
  // a time, the wait it imposed counted as reordering seen: on a lossy
  // af_xdp pair under CPU load it reached 537 ms, and each further loss
  // waited that long.
  const uint64_t timeout = AckTimeoutNs(attr_.timeout);
  const uint64_t cap = timeout ? timeout / 4 : 1'000'000;
  return srtt_ ? std::min(cap, 8 * srtt_) : cap;
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
  // add its own wait to the allowance: it ratcheted up to the cap). The
  // minimum counts first answers to repairs too: a repair waits on an idle
  // path (the window is stalled behind the gap), where under CPU load first
  // transmissions never do — there every repair of a loss-only af_xdp pair
  // was judged spurious (833 of 895), and now 4 of ~2500 are.
  const uint64_t answered_in = now - repair_sent_t_;
  const bool first = held && repair_tries_ == 1;
  const bool spurious = first && min_rtt_ && answered_in < min_rtt_ / 2;
  if (first && (!min_rtt_ || answered_in < min_rtt_)) min_rtt_ = answered_in;
  repair_ = Repair::kNone;
  seq_nak_active_ = false;
  dev_->TimerChanged(this);
  if (!held || spurious) {
    // The gap filled itself: reordering. (A timeout's or RNR NAK's repair
    // says nothing about reordering.)
    if (repair_cause_ == RepairCause::kNak) {
      if (spurious) counters.repair_spurious++;
      const uint64_t seen = now - repair_nak_t_;
      reo_wnd_ = std::min(ReoWndCap(), std::max(reo_wnd_, seen + seen / 4));
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

void QueuePair::SampleRtt(uint64_t now, const uint32_t* resp_psn) {
  if (!rtt_pending_ || (resp_psn ? PsnDiff(*resp_psn, rtt_psn_) < 0 : PsnDiff(acked_, rtt_psn_) <= 0)) return;
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
  tail_pto_ = TailProbeNs();
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
      // A Read from its next expected response at the earliest, and no
      // further than what it has asked for (then on with new requests).
      if (w.IsRead())
        cursor_pkt_ = std::max(std::min(cursor_pkt_, w.req_pkts),
                               static_cast<uint32_t>(PsnDiff(w.resp_psn, w.first_psn)));
      return;
    }
  }
  cursor_ = sq_tail_;
  cursor_pkt_ = 0;
}

uint64_t QueuePair::UnconfirmedAfter(const SendWqe& w, uint32_t psn, uint32_t read_pkts) const {
  // The responses this packet asks for (a Read) or the packet itself, then
  // every PSN after it not yet confirmed and not answered.
  uint64_t left = w.IsRead() ? read_pkts : 1;
  if (!w.IsRead()) left += w.npkts - 1 - static_cast<uint32_t>(PsnDiff(psn, w.first_psn));
  for (uint64_t i = SeqOf(w) + 1; i < sq_tail_ && left <= 2; i++) {
    const SendWqe& x = Slot(i);
    if (!x.started) break;
    if (x.IsLocal() || x.done) continue;
    if (x.IsRead()) {  // the responses it has asked for and not received
      left += ReadUnplaced(x, 0, x.req_pkts);
      continue;
    }
    const uint32_t from = PsnDiff(acked_, x.first_psn) > 0 ? acked_ : x.first_psn;
    const int32_t n = PsnDiff(PsnAdd(x.LastPsn(), 1), from);
    if (n > 0) left += static_cast<uint64_t>(n);
  }
  return left;
}

uint32_t QueuePair::ReadLostEnd(const SendWqe& w) const {
  // Responses placed ahead of the next expected one need not come again.
  const uint32_t rk = static_cast<uint32_t>(PsnDiff(w.resp_psn, w.first_psn));
  if (!w.ooo.Any()) return w.req_pkts;
  const uint32_t end = rk + std::max(w.ooo.FirstFrom(1), w.ooo.StartOfLast(reorder_thresh_));
  return std::min(w.req_pkts, end);
}

uint64_t QueuePair::SeqOf(const SendWqe& w) const {
  // Slot index -> WQE sequence number (the slot holds the WQE in [sq_head_, sq_tail_)).
  const uint64_t idx = static_cast<uint64_t>(&w - sq_.data());
  return sq_head_ + ((idx + sq_.size() - (sq_head_ & sq_mask_)) & sq_mask_);
}

bool QueuePair::ReRequestDue(const SendWqe& rd) const {
  const uint64_t seq = SeqOf(rd);
  const uint32_t rk = static_cast<uint32_t>(PsnDiff(rd.resp_psn, rd.first_psn));
  // If the cursor has not passed this Read yet (nor its next expected
  // response), the normal pass asks for it.
  if (cursor_ < seq) return true;
  if (cursor_ == seq && cursor_pkt_ <= rk && cursor_pkt_ < rd.req_pkts) return true;
  // Marked lost from its next expected response on (maybe waiting for room).
  return std::max(rd.lost_from, rk) == rk && rk < rd.lost_to;
}

void QueuePair::ReRequestRead(SendWqe& rd, uint32_t to, bool gap) {
  const uint64_t seq = SeqOf(rd);
  dev_->Event(qpn_, "rerequest", rd.resp_psn, seq);
  if (cursor_ < seq || (cursor_ == seq && cursor_pkt_ <= static_cast<uint32_t>(PsnDiff(rd.resp_psn, rd.first_psn)) &&
                        cursor_pkt_ < rd.req_pkts))
    return;  // the cursor's pass asks for it
  ReadLost(rd, static_cast<uint32_t>(PsnDiff(rd.resp_psn, rd.first_psn)), to, gap);
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
