// SPDX-License-Identifier: MIT
// Work requests, completions, statuses and queue-pair attributes of the RC
// core. These carry what ND2 requests and ND2_RESULTs carry, in the stack's
// own types; nd2api/ maps them (the statuses one-to-one onto ND2 statuses).
#pragma once

#include <cstdint>

#include "stack/wire/packet.h"

namespace roce::rc {

// Completion status. Each value is exactly one ND2 status:
enum class Status : uint8_t {
  kSuccess,          // ND_SUCCESS
  kCanceled,         // ND_CANCELED: flushed (the QP went to error, or was disconnected)
  kBufferOverflow,   // ND_BUFFER_OVERFLOW: a Send did not fit the posted receive (receiver)
  kDataError,        // STATUS_DATA_ERROR: the peer rejected the request as invalid
                     //   (sender of a receive-too-small, bad opcode sequence, unsupported op)
  kAccessViolation,  // ND_ACCESS_VIOLATION: a token / bounds / rights check failed, local or remote
  kIoTimeout,        // ND_IO_TIMEOUT: transport or RNR retries exhausted
  kRemoteError,      // ND_REMOTE_ERROR: the peer failed the request (remote operational error)
  kInternalError,    // ND_INTERNAL_ERROR
};
const char* StatusName(Status s);

// Why, in more detail (diagnostics and counters; not part of the ND2 mapping).
enum class Cause : uint8_t {
  kNone,
  kFlushed,
  kRetryExceeded,
  kRnrRetryExceeded,
  kLocalProtection,       // local SGE token/bounds/rights
  kLocalLength,           // receive too small
  kRemoteAccess,          // NAK remote access error
  kRemoteInvalidRequest,  // NAK invalid request
  kRemoteOperational,     // NAK remote operational error
  kBindError,
  kInvalidate,            // invalidate of a window that is not ours / not bound
};
const char* CauseName(Cause c);

// = ND2_REQUEST_TYPE values.
enum class RequestType : uint8_t { kReceive = 0, kSend = 1, kBind = 2, kInvalidate = 3, kRead = 4, kWrite = 5 };

enum class WrOp : uint8_t {
  kSend,
  kSendWithImm,
  kSendWithInvalidate,
  kWrite,
  kWriteWithImm,
  kRead,
  kBind,
  kInvalidate,
};

// Work-request flags (same bit values as ND_OP_FLAG_*).
enum WrFlag : uint32_t {
  kSilentSuccess = 0x1,
  kReadFence = 0x2,
  kSolicited = 0x4,
  kInline = 0x20,
};

struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

inline constexpr uint32_t kMaxSge = 32;
inline constexpr uint32_t kMaxMessage = 0x7FFFFFFF;  // 2^31 - 1

struct SendWr {
  uint64_t context = 0;
  WrOp op = WrOp::kSend;
  uint32_t flags = 0;
  const Sge* sge = nullptr;
  uint32_t num_sge = 0;
  uint64_t remote_addr = 0;   // Read / Write
  uint32_t rkey = 0;          // Read / Write
  uint32_t imm = 0;           // *WithImm
  uint32_t invalidate_rkey = 0;  // SendWithInvalidate
  // Bind / Invalidate (memory window operations, executed locally in order)
  uint32_t mw = 0;            // window handle
  uint32_t mr = 0;            // region handle (Bind)
  uint64_t bind_addr = 0;
  uint64_t bind_length = 0;
  uint32_t bind_access = 0;   // mem::kRemoteRead | mem::kRemoteWrite
  uint32_t bind_token = 0;    // from MemoryTable::AllocateWindowToken
};

struct RecvWr {
  uint64_t context = 0;
  const Sge* sge = nullptr;
  uint32_t num_sge = 0;
};

struct Completion {
  uint64_t qp_context = 0;
  uint64_t request_context = 0;
  Status status = Status::kSuccess;
  Cause cause = Cause::kNone;
  RequestType type = RequestType::kSend;
  uint32_t bytes = 0;        // receives: bytes received; others: bytes of the request
  uint32_t qpn = 0;
  bool with_imm = false;
  bool with_inv = false;
  bool solicited = false;    // receives: the message's last packet had BTH.SE
  uint32_t imm = 0;
  uint32_t inv_rkey = 0;
};

// Result of posting (returned synchronously; nd2api maps it to an HRESULT).
enum class PostResult : uint8_t {
  kOk,
  kInvalidState,      // QP in Reset
  kQueueFull,
  kTooManySge,
  kInlineTooLarge,
  kInvalidParameter,  // e.g. total length above 2^31-1, inline Read
};
const char* PostResultName(PostResult r);

enum class QpState : uint8_t { kReset, kInit, kRtr, kRts, kError };
const char* QpStateName(QpState s);

struct QpCaps {
  uint32_t sq_depth = 128;
  uint32_t rq_depth = 128;       // ignored with an SRQ
  uint32_t max_send_sge = 4;
  uint32_t max_recv_sge = 4;
  uint32_t max_inline = 256;
};

// What a connection negotiates (RTR/RTS attributes).
struct QpAttr {
  uint32_t path_mtu = 1024;      // 256, 512, 1024, 2048, 4096
  uint32_t dest_qpn = 0;
  uint32_t sq_psn = 0;           // first PSN we send
  uint32_t rq_psn = 0;           // first PSN we expect
  uint8_t max_rd_atomic = 16;    // outbound read limit (initiator depth)
  uint8_t max_dest_rd_atomic = 16;  // inbound read limit (responder resources)
  uint8_t timeout = 14;          // local ACK timeout: 4.096 us * 2^timeout; 0 = none
  uint8_t retry_cnt = 7;         // transport retries (7 = seven retries, per the IBTA)
  uint8_t rnr_retry = 7;         // RNR retries; 7 = infinite
  uint8_t min_rnr_timer = 12;    // code we put in our RNR NAKs (12 = 0.64 ms)
  wire::NetHeaders path;         // Ethernet / IP / UDP towards the peer
  // The peer is this stack (the CM learns it from the ECE options of the REQ
  // and REP, see cm::kEceVendorId in stack/cm/cm.h): it resends only a missing packet after a sequence
  // NAK and takes an ACK past what it is resending in stride. Only then do
  // QpTuning's ooo_window and selective_repair apply; towards anything else
  // (rxe, hardware) the QP is plain go-back-N.
  bool peer_repairs = false;
};

// Protocol tuning that is not negotiated.
struct QpTuning {
  uint32_t max_unacked_psns = 256;  // requester window in PSNs
  uint32_t ack_req_every = 32;      // AckReq at least every N packets
  uint64_t cnp_interval_ns = 4000;  // at most one CNP per QP per interval
  uint32_t max_tx_per_poll = 64;    // packets a QP emits per Poll turn
  // Read pacing (requester.cc): a Read's responses all come back at once, as
  // fast as the responder sends them; a receiver slower than the link (a
  // kernel tap queues 1000 frames, a busy host less) drops what it cannot
  // queue, and the repair's re-requests, unpaced too, lose again. So a QP
  // has at most a window of response packets in flight (asked for, neither
  // received nor judged lost), a long Read asked for in several READ
  // requests (each a part of the Read's PSN range, within the outbound read
  // limit: ordinary requests to any responder), re-requests within the same
  // window. The window starts at read_window packets, grows by one per
  // response received up to the threshold (slow start; at first
  // read_window_max) and by one per window's worth above it, up to
  // read_window_max; a lost response halves it (and sets the threshold),
  // once until the responses asked for before the loss have come, and a
  // timeout takes it to 2. read_window_max 0: no pacing (a Read asks for all
  // its responses in one request, its re-requests go at once).
  uint32_t read_window = 64;
  uint32_t read_window_max = 512;
  // Read responses: a missing one is taken as lost (and re-requested) once
  // this many later responses have arrived; starts here and rises to the
  // reordering the link has shown (a late response that filled a gap),
  // up to max_reorder_threshold. 1 = re-request at the first sign, as the
  // IBTA describes for a link that does not reorder.
  uint32_t reorder_threshold = 1;
  uint32_t max_reorder_threshold = 128;
  // Retries (timeouts, sequence NAKs, Read re-requests) in a row without
  // forward progress while the peer is answering: a live peer that never
  // lets the connection progress fails it after this many. A silent peer
  // fails it after retry_cnt (see QpAttr::retry_cnt).
  uint32_t max_stalled_retries = 64;
  // Selective repair, between two of our stacks only (QpAttr::peer_repairs):
  // Responder: requests that arrive past a missing one are kept (up to this
  // many PSNs beyond the expected one; a power of two, at most 256) and
  // executed in order once the gap is filled, so a loss or a reordered frame
  // costs only the missing packet. It must cover the peer's window
  // (max_unacked_psns, ours 256): what arrives past it is dropped and then
  // repaired one round trip at a time (rocesim --window 256 at 1% loss: with
  // 64, 22x the ideal resend and 3.8x slower than go-back-N; with 256, 1.3x
  // and 2.8x faster). 0: dropped, as the IBTA's minimum (and rxe) does; the
  // requester then goes back N. The memory (this many path-MTU buffers: 1 MiB
  // at MTU 4096) is taken the first time a QP needs it.
  // Never towards a peer that is not ours: the ACK after a filled gap jumps
  // past what a go-back-N requester is resending in its current pass, and
  // rxe's completer then moves its acknowledged PSN past a message it has not
  // completed; if the ACK to that message's resent last packet is lost, rxe
  // never retries ("no point in retrying if we have already seen the last
  // ack", rxe_comp.c) and the connection hangs (seen in rcpp-client-tap-loss2).
  uint32_t ooo_window = 256;
  // Requester: after a sequence NAK, resend only the missing packet and wait
  // for the answer before going back N (see docs/protocol.md, "Protocol notes").
  // false: go back N at once, as rxe does. Against a responder that keeps
  // nothing it costs a round trip per loss, hence also only towards our own.
  bool selective_repair = true;
  // Requester: Sends and Writes unacknowledged with nothing heard for two
  // round trips resend their last packet, with AckReq, once until the next
  // progress (TCP's tail loss probe; QueuePair::OnTailProbe): a lost last
  // packet or ACK costs two round trips, not the retransmit timeout. Legal
  // towards any responder (a resend is a duplicate or fills the gap).
  bool tail_probe = true;
};

// Local ACK timeout: 4.096 us * 2^code (code 0: no timeout).
inline uint64_t AckTimeoutNs(uint8_t code) {
  if (code == 0) return 0;
  return 4096ull << (code > 31 ? 31 : code);
}
uint64_t RnrTimerNs(uint8_t code);

}  // namespace roce::rc
