// SPDX-License-Identifier: MIT
// A reliable-connected queue pair: the requester (segments work requests
// into packets, stamps PSNs, paces a Read's responses with a read window —
// a long Read asks in several READ requests —, retransmits go-back-N on NAK /
// timeout / RNR),
// the completer (ACKs, NAKs, read responses → completions in posting order)
// and the responder (PSN checks, duplicates, placement with key/bounds/rights
// checks, read responses replayed from saved state, coalesced ACKs, NAKs, CNPs).
//
// Pure protocol: no DPDK, no threads, no clock reads. Time comes in as `now`
// (nanoseconds, any epoch); packets leave through the device's PacketSink.
// The three roles live in requester.cc, completer.cc and responder.cc, named
// after the IBTA chapters as in Linux rxe; this file holds the shared state.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "stack/rc/psn_ranges.h"
#include "stack/rc/queues.h"
#include "stack/rc/ring_deque.h"
#include "stack/rc/tx.h"
#include "stack/rc/types.h"

namespace roce::mem {
class MemoryTable;
}

namespace roce::rc {

class RcDevice;

// Copies `data` into an SGE list starting at byte `offset` of the list (the
// SGEs must have been validated).
void ScatterToSges(const Sge* sge, uint32_t n, uint64_t offset, wire::ByteSpan data);

// Per-QP counters, declared once: this list makes the struct's fields, the
// telemetry export (/roce/qp/stats,<qpn>), the sums tools and tests take
// (QpCounters::Add) and any listing (QpCounters::ForEach).
#define ROCE_QP_COUNTERS(X)                                                                 \
  X(tx_packets, "packets sent (first transmissions and retransmissions)")                  \
  X(tx_bytes, "payload bytes sent")                                                         \
  X(rx_packets, "packets accepted for this QP")                                             \
  X(rx_bytes, "payload bytes accepted")                                                     \
  X(retransmits, "request packets sent again")                                              \
  X(retransmit_bytes, "payload bytes sent again (requests resent, Read responses regenerated)") \
  X(replay_bytes, "Read response payload bytes regenerated (in retransmit_bytes)")         \
  X(timeouts, "retransmit timer expiries with data outstanding")                            \
  X(silent_timeouts, "timeouts with nothing heard from the peer since the previous retry")  \
  X(seq_naks_sent, "PSN sequence error NAKs sent")                                          \
  X(seq_naks_received, "PSN sequence error NAKs received")                                  \
  X(rnr_naks_sent, "RNR NAKs sent")                                                         \
  X(rnr_naks_received, "RNR NAKs received")                                                 \
  X(access_naks_sent, "remote access error NAKs sent")                                      \
  X(access_naks_received, "remote access error NAKs received")                              \
  X(invalid_naks_sent, "invalid request NAKs sent")                                         \
  X(invalid_naks_received, "invalid request NAKs received")                                 \
  X(op_naks_sent, "remote operational error NAKs sent")                                     \
  X(op_naks_received, "remote operational error NAKs received")                             \
  X(read_requests, "READ requests sent for the first time (a long Read asks in several)")  \
  X(read_window_cuts, "read window reductions (a Read response lost, a timeout)")           \
  X(read_probes, "Read responses in flight asked for again after none came (read probe)") \
  X(tail_probes, "last Send/Write packets resent after nothing was heard (tail probe)")    \
  X(implied_naks, "Read re-requests after an ACK past its missing responses")               \
  X(read_rerequests, "Read re-requests after missing responses")                           \
  X(read_ooo_placed, "Read responses placed ahead of a missing one")                        \
  X(dup_naks, "NAKs for a restart already under way (ignored)")                             \
  X(repairs, "single packets resent after a sequence NAK (selective repair)")               \
  X(repair_spurious, "repairs the peer answered before the resend could reach it")          \
  X(repair_go_back, "repairs answered by a plain ACK short of what was sent: went back N")  \
  X(duplicates, "duplicate requests received")                                              \
  X(read_replays, "duplicate Read requests answered again")                                 \
  X(stale_replays, "duplicate Reads whose memory no longer validates (dropped)")            \
  X(replays_superseded, "replays dropped unsent: a new Read took their resource")           \
  X(out_of_sequence, "requests received out of sequence")                                  \
  X(ooo_kept, "out-of-sequence requests kept until the gap before them was filled")        \
  X(ooo_executed, "kept requests executed once the gap was filled")                         \
  X(dup_responses, "stale ACKs / read responses ignored")                                   \
  X(acks_sent, "ACKs sent")                                                                 \
  X(acks_received, "ACK/NAK packets received")                                              \
  X(cnps_sent, "CNPs sent")                                                                 \
  X(cnps_received, "CNPs received")                                                         \
  X(ce_received, "CE-marked requests received")                                             \
  X(dropped_state, "packets for a QP not in a receiving state")                             \
  X(dropped_bad, "packets malformed for this QP (wrong peer, P_Key, transport, length)")

struct QpCounters {
#define ROCE_QP_COUNTER_FIELD(name, doc) uint64_t name = 0;
  ROCE_QP_COUNTERS(ROCE_QP_COUNTER_FIELD)
#undef ROCE_QP_COUNTER_FIELD

  // Calls fn(name, value) for every counter, in declaration order.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
#define ROCE_QP_COUNTER_VISIT(name, doc) fn(#name, name);
    ROCE_QP_COUNTERS(ROCE_QP_COUNTER_VISIT)
#undef ROCE_QP_COUNTER_VISIT
  }
  QpCounters& Add(const QpCounters& o) {
#define ROCE_QP_COUNTER_ADD(name, doc) name += o.name;
    ROCE_QP_COUNTERS(ROCE_QP_COUNTER_ADD)
#undef ROCE_QP_COUNTER_ADD
    return *this;
  }
  QpCounters Minus(const QpCounters& o) const {
    QpCounters d = *this;
#define ROCE_QP_COUNTER_SUB(name, doc) d.name -= o.name;
    ROCE_QP_COUNTERS(ROCE_QP_COUNTER_SUB)
#undef ROCE_QP_COUNTER_SUB
    return d;
  }
};

class QueuePair {
 public:
  QueuePair(RcDevice* dev, uint32_t qpn, const QpCaps& caps, CompletionQueue* send_cq,
            CompletionQueue* recv_cq, ReceiveQueue* srq, uint64_t context);
  QueuePair(const QueuePair&) = delete;
  QueuePair& operator=(const QueuePair&) = delete;

  uint32_t qpn() const { return qpn_; }
  uint64_t context() const { return context_; }
  QpState state() const { return state_; }
  const QpAttr& attr() const { return attr_; }
  const QpCaps& caps() const { return caps_; }
  ReceiveQueue* srq() const { return srq_; }

  // State transitions. Each returns false if not allowed from the current state.
  bool ToInit();
  bool ToRtr(const QpAttr& attr);
  bool ToRts(uint64_t now);
  // Moves to Error and flushes everything outstanding (as CANCELED).
  void ToError();
  // Back to Reset: drops all state without completions (the QP can be reused).
  void ToReset();

  // Application side.
  PostResult PostSend(const SendWr& wr);
  PostResult PostRecv(const RecvWr& wr);

  // Engine side.
  void OnPacket(const wire::RocePacket& p, uint64_t now);
  size_t PollTx(uint64_t now, size_t budget);
  bool HasTxWork() const;
  void OnTimer(uint64_t now);
  uint64_t Deadline() const;  // earliest timer, 0 = none

  QpCounters counters;

  // For tests: the requester's view.
  uint32_t next_psn() const { return next_psn_; }
  uint32_t una() const { return una_; }
  uint32_t expected_psn() const { return epsn_; }
  uint32_t outstanding_sends() const { return static_cast<uint32_t>(sq_tail_ - sq_head_); }
  // The read window and the Read responses in flight (requester.cc "Read pacing").
  uint32_t read_window() const { return read_wnd_; }
  uint32_t read_in_flight() const { return ReadInFlight(); }
  uint32_t reads_outstanding() const { return static_cast<uint32_t>(read_reqs_.size()); }
  // Send WQEs retired so far (completed, flushed or silently done), counted
  // before each one's completion is pushed, so a thread that sees a
  // completion sees its slot free; and receives taken off the QP's own
  // receive queue. Any thread (nd2api's posting rings count credits with them).
  uint64_t sends_retired() const { return sends_retired_.load(std::memory_order_acquire); }
  uint64_t recvs_taken() const { return rq_.taken(); }
  // Diagnostics: the requester's and completer's protocol state and the
  // counters that are not zero, on one line (RcDevice::Config::fatal_hook).
  std::string DebugState() const;

 private:
  // ---- send queue ---------------------------------------------------------
  struct SendWqe {
    // User-provided, so that resetting a slot (PostSend) applies the member
    // initialisers below without zero-filling the whole slot first (the
    // Read ranges' arrays: ~40% of PostSend's time in perf); `ooo` is empty
    // by its own initialiser and reads nothing beyond its count.
    SendWqe() {}
    SendWr wr;                 // wr.sge points at this slot's SGE storage
    uint8_t* inline_data = nullptr;
    uint32_t length = 0;
    bool started = false;      // PSNs assigned (local ops: executed)
    bool done = false;         // acknowledged / answered / executed
    bool local_checked = false;
    uint32_t first_psn = 0, npkts = 0;
    uint32_t req_psn = 0;      // Read: PSN of the last request sent
    uint32_t req_pkts = 0;     // Read: responses [0, req_pkts) asked for (the read window paces the rest)
    uint32_t lost_from = 0;    // Read: responses [lost_from, lost_to) judged lost and not asked for
    uint32_t lost_to = 0;      //   again yet (not in flight: the read window has room for them)
    bool lost_gap = false;     // Read: ... as a gap (its re-request arms the read hold)
    uint32_t resp_psn = 0;     // Read: next response PSN expected
    bool gap_retry = false;    // Read: a retry was requested for a gap at gap_psn
    uint32_t gap_psn = 0;
    bool asked = false;        // Read: a re-request for responses before asked_to is out
    uint32_t asked_to = 0;
    uint32_t replay_hi = 0;    // Read: highest response PSN in [gap_psn, asked_to) since it was asked
    PsnRanges ooo;             // Read: responses placed ahead of resp_psn (index i = resp_psn + i)
    Status status = Status::kSuccess;
    Cause cause = Cause::kNone;
    uint32_t LastPsn() const;
    bool IsRead() const { return wr.op == WrOp::kRead; }
    bool IsLocal() const { return wr.op == WrOp::kBind || wr.op == WrOp::kInvalidate; }
  };
  SendWqe& Slot(uint64_t i) { return sq_[i & sq_mask_]; }
  const SendWqe& Slot(uint64_t i) const { return sq_[i & sq_mask_]; }

  // ---- requester (requester.cc) ---------------------------------------------
  // What started a selective repair (StartRepair): a sequence NAK, a timeout
  // (the retransmit timer paces its retries, not the hold) or an RNR NAK
  // (resent when the RNR wait is over).
  enum class RepairCause : uint8_t { kNak, kTimeout, kRnr };
  // Repairs `psn` without a reordering allowance (a timeout, an RNR NAK);
  // false if it cannot be repaired alone (the caller goes back N).
  bool RepairNow(uint32_t psn, uint64_t now, RepairCause cause);
  size_t RequesterTx(uint64_t now, size_t budget);
  bool StartWqe(SendWqe& w, uint64_t now);
  void ExecuteLocal(SendWqe& w);
  // `read_pkts`: a Read asks for this many responses from packet `pkt` on.
  bool EmitRequest(SendWqe& w, uint32_t pkt, uint64_t now, uint32_t read_pkts = 0);
  // Read pacing (requester.cc). Responses a new READ request of `w` may ask
  // for now (0: wait for responses, or for the outbound read limit).
  uint32_t ReadAsk(const SendWqe& w) const;
  // How many of `n` missing responses a re-request may ask for now (0: wait).
  uint32_t ReadReAsk(uint32_t n) const;
  // Responses asked for and neither placed nor judged lost, over every open
  // Read: what the read window bounds.
  uint32_t ReadInFlight() const;
  // Responses of `w` in [a, b) not placed yet.
  uint32_t ReadUnplaced(const SendWqe& w, uint32_t a, uint32_t b) const;
  // Responses [from, to) of `w` are lost: asked for again (ReRequestTx);
  // towards a peer not ours from the first missing response of the READ
  // request holding `from` (NextMissing). `gap`: a gap judged lost
  // (NoteBeyondHole, the read hold), whose re-request arms the read hold,
  // rather than a pass going back.
  void ReadLost(SendWqe& w, uint32_t from, uint32_t to, bool gap = false);
  // Sends re-requests for what ReadLost marked, within the read window.
  // False: the sink took no more.
  bool ReRequestTx(uint64_t now, size_t budget, size_t* n);
  // The READ request (sent) that holds packet k of `w`: its first packet
  // (*first) and the index after its last. A request for part of one names
  // that one's read resource at the responder, so it must stay inside it.
  uint32_t ReadReqOf(const SendWqe& w, uint32_t k, uint32_t* first) const;
  // The next (re-)request of `w` for responses still missing in [from, to):
  // from its first missing packet *k, *n packets up to the next one placed,
  // the end of the READ request holding it, or `to` — or, when *k starts a
  // READ request none of whose responses has come, all of it (*whole: the
  // responder may not have it, and a part would be a new request to it);
  // towards a peer not ours, from that request's first missing response
  // over all its missing ones below `to` (rxe narrows a read resource to
  // each duplicate's start). False: none missing.
  bool NextMissing(const SendWqe& w, uint32_t from, uint32_t to, uint32_t* k, uint32_t* n,
                   bool* whole = nullptr) const;
  // A response of `rd`, packet k, was placed (the first copy); `in_order`:
  // at the next PSN the oldest open Read expects. The window grows.
  void ReadPlaced(const SendWqe& rd, uint32_t k, bool in_order);
  // A Read response was judged lost (it is asked for again): the window is
  // halved, once per recovery.
  void ReadWindowLoss();
  // A retransmit timeout with a Read open: the window to its minimum.
  void ReadWindowTimeout();
  static constexpr uint32_t kReadWindowMin = 2;
  // Outstanding READ requests whose responses have all come, in order, end.
  void RetireReads();
  // The read probe: responses in flight and none heard of for ReadProbeNs
  // (re-armed by every response and request): the last one asked for again
  // (towards a peer not ours: all of them).
  uint64_t ReadProbeNs() const;
  void ArmReadProbe(uint64_t now);
  void OnReadProbe(uint64_t now);
  // The tail probe (TCP's tail loss probe, for Sends and Writes): nothing
  // heard for ReadProbeNs while packets are unacknowledged resends the last
  // packet sent, with AckReq, once until the next progress.
  void ArmTailProbe(uint64_t now);
  uint64_t TailProbeNs() const;
  void OnTailProbe(uint64_t now);
  bool EmitTailProbe(uint64_t now);
  bool Gather(const SendWqe& w, uint64_t offset, uint32_t len, TxPacket* pkt) const;  // false: source no longer registered
  void RetryFrom(uint32_t psn);
  // Goes back N over [from, to) only, then on with what was never sent.
  void GoBackBounded(uint32_t from, uint32_t to);
  // Selective repair (requester.cc): after a sequence NAK for `psn`, resend
  // only that packet (after the reordering allowance), ask for an answer and
  // hold the rest until it comes; a go-back-N responder's plain ACK sends us
  // back N from what it acknowledged.
  void StartRepair(uint32_t psn, uint64_t now);
  // The peer acknowledged past the repaired PSN (`plain_ack`: by an ACK, not
  // a NAK or a Read response).
  void RepairAnswered(uint64_t now, bool plain_ack);
  bool EmitRepair(uint64_t now);
  uint64_t RepairHoldNs() const;
  uint64_t ReoWndCap() const;
  uint64_t ReadHoldNs() const;
  // The WQE (sequence number) and packet index holding `psn`, if it is an
  // unfinished Send/Write packet or the request of an unanswered Read.
  bool FindRequest(uint32_t psn, uint64_t* seq, uint32_t* k) const;
  // The transmit cursor's PSN (next_psn_ when it is past every started WQE).
  uint32_t CursorPsn() const;
  // Round-trip samples: AckReq'd first transmissions, answered by an ACK/NAK
  // (acked_ past the sample) or a Read response at `*resp_psn` at or past it.
  void SampleRtt(uint64_t now, const uint32_t* resp_psn = nullptr);
  // Keeps the (re)transmit cursor at or after the oldest uncompleted WQE and
  // the oldest unacknowledged PSN: completed WQEs' slots are reused by new
  // posts, and acknowledged packets need not go out again.
  void SyncCursor();
  void ArmRetransmitTimer(uint64_t now);

  // ---- completer (completer.cc) ---------------------------------------------
  void OnResponse(const wire::RocePacket& p, uint64_t now);
  void OnAck(uint32_t psn, uint64_t now);
  void OnNak(uint32_t psn, uint8_t syndrome, uint64_t now);
  void OnReadResponse(const wire::RocePacket& p, uint64_t now);
  // Acknowledges all PSNs before new_una; returns false if an unanswered Read
  // stands in the way (implied NAK: a retry from its next response is started).
  // `evidence`: the caller is an ACK/NAK from the peer, so an unanswered Read
  // in the way has seen a later response (see NoteBeyondHole).
  bool AdvanceUna(uint32_t new_una, uint64_t now, bool evidence = false);
  void FailAt(uint32_t psn, Status st, Cause cause);
  void CompleteSendHead();
  void PushSendCompletion(const SendWqe& w);
  // Accounts for one retry. `silent`: a timeout with nothing heard from the
  // peer since the previous retry — only those consume retry_cnt; every retry
  // without forward progress consumes the stall budget. False: exhausted
  // (the QP failed with a timeout status).
  bool ConsumeRetry(bool silent);
  // Forward progress: new PSNs acknowledged or new Read data placed.
  void OnProgress(uint64_t now);
  // The oldest Read still waiting for responses, or null.
  const SendWqe* OldestOpenRead() const;
  SendWqe* OldestOpenRead() { return const_cast<SendWqe*>(std::as_const(*this).OldestOpenRead()); }
  // A response from the peer arrived that lies beyond `rd`'s next expected
  // response: counts towards declaring it lost and re-requesting the rest.
  // `before` (a PSN, -1: none): the evidence shows lost only responses
  // before it (an ACK's or NAK's PSN, a response's), else what the
  // responses placed show (ReadLostEnd).
  void NoteBeyondHole(SendWqe& rd, uint64_t now, bool implied, bool deadline = false, int64_t before = -1);
  // Queues a re-request of `rd` from its next expected response up to packet
  // `to` (`gap`: a gap judged lost, see ReadLost), sent before anything else
  // without moving the send cursor (nothing after it is resent).
  void ReRequestRead(SendWqe& rd, uint32_t to, bool gap);
  // A (re-)request of `rd` will go out without another: one is queued, or
  // the send cursor has not passed it. Asking again then spends no retry.
  bool ReRequestDue(const SendWqe& rd) const;
  uint64_t SeqOf(const SendWqe& w) const;  // the WQE's sequence number
  // Where the responses of `w` judged lost end, once its next expected one
  // is: after the gap before the first response placed past it (all that is
  // asked for if none is), and after every later gap with reorder_thresh_
  // responses placed beyond it (as a SACK scoreboard judges).
  uint32_t ReadLostEnd(const SendWqe& w) const;
  // Packets still unconfirmed from packet `psn` of `w` on (a Read: the `read_pkts`
  // responses asked for), counted up to 3: a lone packet after a timeout goes twice.
  uint64_t UnconfirmedAfter(const SendWqe& w, uint32_t psn, uint32_t read_pkts) const;

  // ---- responder (responder.cc) ---------------------------------------------
  void OnRequest(const wire::RocePacket& p, uint64_t now);
  // Executes the request at epsn_. Returns false if it was not consumed
  // (RNR, a fatal error); *ack_req: it asked for an acknowledgement.
  bool ExecuteRequest(const wire::RocePacket& p, uint64_t now, bool* ack_req);
  // Out-of-sequence requests kept until the gap before them is filled.
  void KeepOoo(const wire::RocePacket& p);
  // Executes kept requests from epsn_ on; returns how many.
  uint32_t DrainOoo(uint64_t now);
  // After requests were executed: an ACK, or a sequence NAK for the next gap
  // when later requests are kept (it acknowledges everything before it too).
  void AnswerProgress();
  void ClearOoo();
  bool OooHasEpsn() const;
  // Something after epsn_ arrived (kept or not) while epsn_ did not.
  bool GapKnown();
  void OnDuplicate(const wire::RocePacket& p);
  bool TakeRecv();  // cur_recv_ from RQ/SRQ
  // Where this packet's payload goes if it is good, when that is known before
  // its ICRC is (RcDevice::OnPacket places it as the CRC is computed): an
  // RDMA Write Middle at the expected PSN of a Write in progress, from the
  // peer, MTU long, into the range the Write's First packet checked and that
  // is still writable; or a Send Middle likewise, into one writable SGE of the
  // receive its First took; or a Read Response Middle (or the Last that ends
  // the Read exactly) at the PSN the oldest open Read expects next, into one
  // valid SGE of its sink. So every byte it names is one the packet's good
  // copy must write again before the message can complete (and never a
  // Write's last byte, which in-order placement pollers watch; a receive's or
  // a Read sink's bytes mean nothing before its completion). Null otherwise:
  // the device checks the ICRC first.
  uint8_t* InPlaceTarget(const wire::RocePacket& p) const;
  // Its Read Response part (completer.cc).
  uint8_t* ReadSinkTarget(const wire::RocePacket& p) const;
  // placed: the bytes are already there (InPlaceTarget); checked and counted only.
  bool PlaceRecv(wire::ByteSpan data, bool placed = false);
  void CompleteRecv(Status st, Cause cause);
  void ResponderError(uint8_t nak_code, Status recv_status, Cause cause);
  size_t ResponderTx(uint64_t now, size_t budget);
  void QueueAck();
  void QueueNak(uint8_t syndrome, uint32_t psn);
  bool Send(TxPacket& pkt, uint64_t now);

  RcDevice* dev_;
  mem::MemoryTable* mem_;
  const uint32_t qpn_;
  const uint64_t context_;
  QpCaps caps_;
  QpAttr attr_;
  // Selective repair and the responder's keeping apply only towards a peer
  // that is this stack (QpAttr::peer_repairs; see QpTuning).
  // Set at RTR.
  bool Repairs() const { return repairs_; }
  uint32_t OooWindow() const { return ooo_window_; }
  bool repairs_ = false;
  uint32_t ooo_window_ = 0;
  QpState state_ = QpState::kReset;
  CompletionQueue* send_cq_;
  CompletionQueue* recv_cq_;
  ReceiveQueue* srq_;
  ReceiveQueue rq_;  // unused with an SRQ

  // Send queue: [sq_head_, sq_tail_) posted and not yet completed.
  std::vector<SendWqe> sq_;
  uint64_t sq_mask_ = 0;  // sq_.size() - 1 (a power of two >= caps_.sq_depth)
  std::vector<Sge> sq_sges_;
  std::vector<uint8_t> sq_inline_;
  uint64_t sq_head_ = 0, sq_tail_ = 0;
  std::atomic<uint64_t> sends_retired_{0};  // single writer: the engine
  uint64_t cursor_ = 0;        // next WQE to (re)transmit from
  uint32_t cursor_pkt_ = 0;    // packet index inside it
  uint64_t ack_scan_ = 0;      // first WQE not yet known to be acknowledged
  uint32_t next_psn_ = 0;      // PSN of the next new packet
  uint32_t una_ = 0;           // oldest unacknowledged PSN
  uint32_t max_sent_ = 0;      // PSN after the highest one sent (counts retransmits)
  uint32_t since_ack_req_ = 0;
  int retry_left_ = 7, rnr_left_ = 7;
  int stall_left_ = 64;
  bool heard_ = false;             // a response from the peer since the last retry
  bool probe_ = false;             // the next request is the first after a timeout
  bool force_ack_req_ = false;     // the next request carries AckReq (a repair)
  // Selective repair (StartRepair): kWait until repair_at_ (a reordered
  // packet may still fill the gap), kDue, then kHold until the answer or
  // repair_at_ (then it goes again).
  // kGoBackWait: a plain ACK short of what was sent before the resend; after
  // the reordering allowance, go back over [acked_, repair_hi_) only.
  enum class Repair : uint8_t { kNone, kWait, kDue, kHold, kGoBackWait } repair_ = Repair::kNone;
  // A go-back that ends at goback_end_: the cursor then skips to what was
  // never sent (packets sent after a repair's resend are not known missing).
  bool goback_bounded_ = false;
  uint32_t goback_end_ = 0;
  uint32_t repair_psn_ = 0;
  uint32_t repair_hi_ = 0;         // max_sent_ when it was resent
  uint32_t repair_tries_ = 0;
  RepairCause repair_cause_ = RepairCause::kNak;
  uint64_t repair_at_ = 0;
  uint64_t repair_nak_t_ = 0;      // when the NAK came
  uint64_t repair_sent_t_ = 0;     // when it was resent
  uint64_t reo_wnd_ = 0;           // reordering allowance before a repair resend
  uint32_t repairs_needed_ = 0;    // repairs in a row that were not spurious
  // Round-trip time (SampleRtt; min_rtt_ also from repairs, RepairAnswered).
  uint64_t srtt_ = 0, rttvar_ = 0, min_rtt_ = 0;
  bool rtt_pending_ = false;
  uint32_t rtt_psn_ = 0;
  uint64_t rtt_t_ = 0;
  // Loss detection for Read responses (NoteBeyondHole).
  uint64_t resp_rx_ = 0;           // response packets accepted so far
  bool hole_active_ = false;       // hole_psn_ is missing and later responses came
  uint32_t hole_psn_ = 0;
  uint64_t hole_at_ = 0;           // resp_rx_ before the first response past the hole
  uint64_t hole_t_ = 0;            // when the first response past the hole came
  uint64_t hole_deadline_ = 0;     // when the hole counts as lost, however few came after it
  // A Read re-request for the gap at read_hold_psn_ is out: if the gap is
  // still there at read_hold_at_, it is asked for again.
  uint64_t read_hold_at_ = 0;
  uint32_t read_hold_psn_ = 0;
  uint32_t read_hold_tries_ = 0;
  uint32_t read_hold_unheard_ = 0;  // the hold's re-requests since the peer was last heard (OnTimer)
  uint32_t reorder_thresh_ = 1;
  // Everything before acked_ is known to have reached the responder (the
  // highest ACK or NAK heard). It runs ahead of una_ while an unanswered Read
  // is in the way; older ACKs and NAKs are stale.
  uint32_t acked_ = 0;
  // Read WQEs (by index) with responses to ask for again (lost_from..lost_to), in order.
  std::vector<uint64_t> rereq_;
  // Read pacing (requester.cc): every READ request sent and not yet answered
  // in full, in PSN order, as the PSNs of its responses [first, end): the
  // outbound read limit counts them (freed in order, as the responder frees
  // its read resources), and a re-request stays inside one of them.
  struct ReadReq {
    uint32_t first, end;
  };
  RingDeque<ReadReq> read_reqs_;   // reserved for max_rd_atomic at RTR
  uint32_t read_wnd_ = 0;          // response packets we may have in flight (ReadInFlight)
  uint32_t read_ssthresh_ = 0;     // below it the window grows by one per response
  uint32_t read_wnd_acc_ = 0;      // responses towards the next +1 above read_ssthresh_
  uint64_t read_probe_at_ = 0;     // OnReadProbe (0: not armed)
  uint64_t tail_probe_at_ = 0;     // OnTailProbe (0: not armed)
  bool tail_probe_due_ = false;    // RequesterTx resends the last packet sent
  bool tail_probed_ = false;       // one probe per silence: again after progress
  uint32_t ack_req_psn_ = 0;       // the last packet sent with AckReq
  uint64_t ack_req_t_ = 0;         // when
  uint64_t tail_pto_ = 0;          // TailProbeNs, as of the last RTT sample
  bool read_heard_ = false;        // a Read response came since the last probe
  bool read_recovering_ = false;   // cut for a loss: no more cuts (nor growth) until
  uint32_t read_recover_ = 0;      // the responses up to this PSN have come in order
  uint64_t retrans_deadline_ = 0;  // 0 = not armed
  uint64_t rnr_deadline_ = 0;      // 0 = not waiting
  uint32_t rnr_psn_ = 0;           // PSN the RNR wait is for
  bool send_error_ = false;        // a WQE failed; the QP is going to error
  // A go-back-N restart from seq_nak_psn_ is under way because of a sequence
  // NAK: further NAKs for that PSN are duplicates (the responder sends one).
  bool seq_nak_active_ = false;
  uint32_t seq_nak_psn_ = 0;

  // Responder.
  uint32_t epsn_ = 0;
  uint32_t msn_ = 0;
  bool nak_sent_ = false;          // sequence or RNR NAK outstanding for epsn_
  uint32_t oos_hi_ = 0;            // highest PSN dropped as out of sequence since the NAK
  bool went_back_ = false;         // the requester resent below oos_hi_ since the last NAK
  // Requests kept past a gap (KeepOoo): slot = PSN & (size - 1), payload in
  // ooo_data_ at slot * path MTU. Allocated the first time one is kept.
  struct OooSlot {
    wire::RocePacket pkt;
    bool used = false;
  };
  std::vector<OooSlot> ooo_;
  std::vector<uint8_t> ooo_data_;
  uint32_t ooo_count_ = 0;
  uint32_t ooo_hi_ = 0;            // highest PSN kept
  bool ooo_overflow_ = false;      // a request past the gap was not kept (window, size)
  uint32_t ooo_over_hi_ = 0;       // the highest such PSN
  enum class InMsg : uint8_t { kNone, kSend, kWrite } in_msg_ = InMsg::kNone;
  bool have_recv_ = false;
  RecvWqe cur_recv_;
  Sge cur_sges_[kMaxSge];
  uint32_t recv_checked_ = 0;      // SGEs of cur_recv_ already validated
  uint64_t recv_off_ = 0;
  uint64_t write_va_ = 0;
  uint32_t write_rkey_ = 0;
  uint32_t write_left_ = 0;
  uint32_t write_total_ = 0;
  uint64_t last_cnp_ = 0;
  bool cnp_owed_ = false;
  bool have_cnp_time_ = false;
  bool error_pending_ = false;     // a fatal NAK is queued; go to Error once it is sent
  bool recv_with_imm_ = false, recv_with_inv_ = false, recv_solicited_ = false;
  uint32_t recv_imm_ = 0, recv_inv_rkey_ = 0;
  uint64_t scheduled_timer_ = 0;   // deadline the device's timer heap holds for us
  const wire::RocePacket* placed_ = nullptr;  // its payload is in place (RcDevice::OnPacket)
  friend class RcDevice;

  struct ReadResource {
    uint32_t first_psn = 0, npkts = 0;
    uint64_t va = 0;
    uint32_t rkey = 0, length = 0;
    uint32_t sent_to = 0;  // PSN after the last response ever generated (replays lie below)
    bool valid = false;
  };
  std::vector<ReadResource> read_res_;  // ring of max_dest_rd_atomic entries
  uint32_t read_res_next_ = 0;

  // Responses in the order they must leave: ACK/NAKs and read-response jobs.
  struct Response {
    enum class Kind : uint8_t { kAck, kNak, kRead } kind;
    uint32_t psn;        // ACK/NAK PSN; read: next response PSN
    uint8_t syndrome = 0;
    uint32_t msn = 0;
    uint32_t res = 0;    // read resource index
    uint32_t start_psn = 0;  // read: PSN of the request being answered
    uint64_t offset = 0;     // read: bytes already sent
    uint64_t end = 0;        // read: offset where this reply ends (a re-request may ask for less)
    bool replay = false;     // read: answering a duplicate request
    bool dup_only = false;   // read: a replay queued on its own, not the request's first answer
  };
  RingDeque<Response> responses_;  // reserved for max_responses_ at RTR
  size_t max_responses_ = 64;

  // Path template: Ethernet/IP/UDP + our BTH defaults.
  wire::NetHeaders net_;
  wire::FrameTemplate tmpl_;  // net_'s bytes, prebuilt at RTR (wire/frame.h)
};

}  // namespace roce::rc
