// A reliable-connected queue pair: the requester (segments work requests
// into packets, stamps PSNs, retransmits go-back-N on NAK / timeout / RNR),
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
#include <vector>

#include "stack/rc/queues.h"
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
  X(implied_naks, "Read re-requests after an ACK past its missing responses")               \
  X(read_rerequests, "Read re-requests after missing responses")                           \
  X(read_ooo_placed, "Read responses placed ahead of a missing one")                        \
  X(dup_naks, "NAKs for a restart already under way (ignored)")                             \
  X(duplicates, "duplicate requests received")                                              \
  X(read_replays, "duplicate Read requests answered again")                                 \
  X(stale_replays, "duplicate Reads whose memory no longer validates (dropped)")            \
  X(out_of_sequence, "requests dropped as out of sequence")                                 \
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

// Which of the next 256 PSNs after a base have been seen (bit 0 = base).
struct PsnBits {
  static constexpr uint32_t kBits = 256;
  uint64_t w[kBits / 64] = {};
  bool Test(uint32_t i) const { return (w[i >> 6] >> (i & 63)) & 1; }
  void Set(uint32_t i) { w[i >> 6] |= uint64_t{1} << (i & 63); }
  bool Any() const { return (w[0] | w[1] | w[2] | w[3]) != 0; }
  void Clear() { w[0] = w[1] = w[2] = w[3] = 0; }
  // Number of set bits from bit `i` up before the first clear one.
  uint32_t RunFrom(uint32_t i) const {
    uint32_t n = 0;
    while (i + n < kBits && Test(i + n)) n++;
    return n;
  }
  // Moves the base forward by n (bit n becomes bit 0).
  void Shift(uint32_t n);
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
  // Send WQEs retired so far (completed, flushed or silently done), counted
  // before each one's completion is pushed, so a thread that sees a
  // completion sees its slot free; and receives taken off the QP's own
  // receive queue. Any thread (nd2api's posting rings count credits with them).
  uint64_t sends_retired() const { return sends_retired_.load(std::memory_order_acquire); }
  uint64_t recvs_taken() const { return rq_.taken(); }

 private:
  // ---- send queue ---------------------------------------------------------
  struct SendWqe {
    SendWr wr;                 // wr.sge points at this slot's SGE storage
    uint8_t* inline_data = nullptr;
    uint32_t length = 0;
    bool started = false;      // PSNs assigned (local ops: executed)
    bool done = false;         // acknowledged / answered / executed
    bool local_checked = false;
    uint32_t first_psn = 0, npkts = 0;
    uint32_t req_psn = 0;      // Read: PSN of the last request sent
    uint32_t resp_psn = 0;     // Read: next response PSN expected
    bool gap_retry = false;    // Read: a retry was requested for a gap at gap_psn
    uint32_t gap_psn = 0;
    bool asked = false;        // Read: a re-request for responses before asked_to is out
    uint32_t asked_to = 0;
    PsnBits ooo;               // Read: responses placed ahead of resp_psn (bit i = resp_psn + i)
    Status status = Status::kSuccess;
    Cause cause = Cause::kNone;
    uint32_t LastPsn() const;
    bool IsRead() const { return wr.op == WrOp::kRead; }
    bool IsLocal() const { return wr.op == WrOp::kBind || wr.op == WrOp::kInvalidate; }
  };
  SendWqe& Slot(uint64_t i) { return sq_[i % sq_.size()]; }
  const SendWqe& Slot(uint64_t i) const { return sq_[i % sq_.size()]; }

  // ---- requester (requester.cc) ---------------------------------------------
  size_t RequesterTx(uint64_t now, size_t budget);
  bool StartWqe(SendWqe& w, uint64_t now);
  void ExecuteLocal(SendWqe& w);
  // `read_pkts`: a Read asks for this many responses from packet `pkt` on
  // (0: everything to its end).
  bool EmitRequest(SendWqe& w, uint32_t pkt, uint64_t now, uint32_t read_pkts = 0);
  bool Gather(const SendWqe& w, uint64_t offset, uint32_t len, TxPacket* pkt) const;  // false: source no longer registered
  void RetryFrom(uint32_t psn);
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
  SendWqe* OldestOpenRead();
  // The next started Read after `after` in posting order (done or not), or null.
  SendWqe* NextOpenOrDoneRead(SendWqe* after);
  // A response from the peer arrived that lies beyond `rd`'s next expected
  // response: counts towards declaring it lost and re-requesting the rest.
  void NoteBeyondHole(SendWqe& rd, uint64_t now, bool implied);
  // Queues a re-request of `rd` from its next expected response, sent before
  // anything else without moving the send cursor (nothing after it is resent).
  void ReRequestRead(SendWqe& rd);
  // Packets a (re-)request of Read `w` asks for: the gap before the first
  // response already placed, or 0 for everything from resp_psn to the end.
  uint32_t ReadGap(const SendWqe& w) const;
  // Packets from resp_psn that cover every missing response of Read `w` (0: to the end).
  uint32_t ReadSpan(const SendWqe& w) const;
  // Packets still unconfirmed from packet `psn` (index k) of `w` on, counted
  // up to 3: a lone packet after a timeout goes twice (EmitRequest).
  uint64_t UnconfirmedAfter(const SendWqe& w, uint32_t psn, uint32_t read_pkts, uint32_t k) const;

  // ---- responder (responder.cc) ---------------------------------------------
  void OnRequest(const wire::RocePacket& p, uint64_t now);
  void OnDuplicate(const wire::RocePacket& p);
  bool TakeRecv();  // cur_recv_ from RQ/SRQ
  bool PlaceRecv(wire::ByteSpan data);
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
  QpState state_ = QpState::kReset;
  CompletionQueue* send_cq_;
  CompletionQueue* recv_cq_;
  ReceiveQueue* srq_;
  ReceiveQueue rq_;  // unused with an SRQ

  // Send queue: [sq_head_, sq_tail_) posted and not yet completed.
  std::vector<SendWqe> sq_;
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
  uint32_t reads_outstanding_ = 0;
  int retry_left_ = 7, rnr_left_ = 7;
  int stall_left_ = 64;
  bool heard_ = false;             // a response from the peer since the last retry
  bool probe_ = false;             // the next request is the first after a timeout
  // Loss detection for Read responses (NoteBeyondHole).
  uint64_t resp_rx_ = 0;           // response packets accepted so far
  bool hole_active_ = false;       // hole_psn_ is missing and later responses came
  uint32_t hole_psn_ = 0;
  uint64_t hole_at_ = 0;           // resp_rx_ before the first response past the hole
  uint32_t reorder_thresh_ = 1;
  // Everything before acked_ is known to have reached the responder (the
  // highest ACK or NAK heard). It runs ahead of una_ while an unanswered Read
  // is in the way; older ACKs and NAKs are stale.
  uint32_t acked_ = 0;
  std::vector<uint64_t> rereq_;    // Read WQEs (by index) to re-request, in order
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
  };
  std::deque<Response> responses_;
  size_t max_responses_ = 64;

  // Path template: Ethernet/IP/UDP + our BTH defaults.
  wire::NetHeaders net_;
  wire::FrameTemplate tmpl_;  // net_'s bytes, prebuilt at RTR (wire/frame.h)
};

}  // namespace roce::rc
