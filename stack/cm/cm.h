// SPDX-License-Identifier: MIT
// The connection manager: InfiniBand CM (REQ / MRA / REJ / REP / RTU / DREQ /
// DREP) in RoCEv2 UD datagrams to QP 1, in the form Linux rdma_cm uses — the
// TCP port space service ID 0x0000000001060000 | port, the 36-byte rdma_cm
// IP header at the front of the REQ's private data, GIDs that are the IP
// addresses, the flow label (src_port * 31 + dst_port) that also sets the
// data QP's UDP source port — so this stack connects to, and accepts from,
// kernel rdma_cm (rping, perftest -R) and any RoCE host.
//
// Pure protocol, like rc/: no DPDK, no threads, no clock reads; time comes in
// as `now`, MADs leave through the RC device's PacketSink (a UD SEND_ONLY
// from QP 1) and arrive through the device's GSI hook. The CM moves the data
// QP through Init / RTR / RTS with what the messages negotiated and to Error
// on disconnect; the application creates and destroys QPs.
//
// Not thread safe: the engine calls it with its lock held (rping, nd2api and
// tests go through the engine, or drive it directly in the simulator).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include "stack/rc/device.h"
#include "stack/wire/cm_msg.h"
#include "stack/wire/packet.h"
#include "stack/wire/rdma_cm.h"

namespace roce::cm {

// Enhanced Connection Establishment (ECE, IBTA; Linux rdma_cm and mlx5 use it
// to negotiate vendor features such as selective repeat): the REQ carries a
// 24-bit vendor ID and, in the MAD header's attribute modifier, the options
// it offers; the REP echoes the vendor ID (as librdmacm does) and answers in
// its attribute modifier with the options it accepts. Ours: selective repair
// (rc::QpAttr::peer_repairs). A peer that is not this stack answers with no
// options (librdmacm over a provider without ECE, such as rxe: 0), so its
// connections stay plain go-back-N.
// Our vendor ID is not an IEEE-assigned OUI: "SR" under a locally
// administered first octet (0x0A: the CID form), which no vendor holds.
// Our attribute modifier carries "SR" in its upper half and the options in
// its lower half: librdmacm answers a foreign vendor ID with that ID and
// *its own provider's* options (ibv_query_ece), so a peer whose provider has
// ECE (mlx5) could send our vendor ID with its own option bits; without the
// signature they could read as ours.
inline constexpr uint32_t kEceVendorId = 0x0A5352;
inline constexpr uint32_t kEceSignature = 0x53520000;
inline constexpr uint32_t kEceSelectiveRepair = 1u << 0;
// The attribute modifier for `options` (0 for none, as librdmacm sends).
constexpr uint32_t EceAttrMod(uint32_t options) { return options ? kEceSignature | (options & 0xFFFF) : 0; }
// The options of ours a REQ / REP carries (0 if it is not one of ours).
constexpr uint32_t EceOptions(uint32_t vendor_id, uint32_t attr_mod) {
  return vendor_id == kEceVendorId && (attr_mod & 0xFFFF0000) == kEceSignature ? attr_mod & 0xFFFF : 0;
}

using ConnId = uint32_t;
using ListenerId = uint32_t;
inline constexpr ConnId kNoConn = 0;

// Private data the application may carry (rdma_cm / ND2 limits).
inline constexpr size_t kMaxReqPrivateData = wire::CmaHeader::kAppPrivateDataLen;  // 56
inline constexpr size_t kMaxRepPrivateData = wire::CmRep::kPrivateDataLen;          // 196
inline constexpr size_t kMaxRejPrivateData = wire::CmRej::kPrivateDataLen;          // 148
inline constexpr size_t kMaxDreqPrivateData = wire::CmDreq::kPrivateDataLen;        // 220

// Ephemeral ports, as Linux.
inline constexpr uint16_t kEphemeralFirst = 49152;
inline constexpr uint16_t kEphemeralLast = 65535;

enum class ConnState : uint8_t {
  kIdle,         // not connected (yet)
  kReqSent,      // active: REQ sent, waiting for REP
  kMraReceived,  // active: the peer asked for more time (MRA)
  kRepReceived,  // active, defer_rtu: REP in, waiting for the application's CompleteConnect or Reject
  kReqReceived,  // passive: waiting for the application's Accept or Reject
  kRepSent,      // passive: REP sent, waiting for RTU (or the first data packet)
  kEstablished,
  kDreqSent,     // we asked to disconnect, waiting for DREP
  kTimeWait,     // disconnected; the comm ID is held until time-wait ends
  kClosed,       // rejected, timed out, or time-wait over
};
const char* ConnStateName(ConnState s);

enum class Event : uint8_t {
  kEstablished,     // both roles; the QP is in RTS
  kRepReceived,     // active with defer_rtu: the peer accepted (REP); CompleteConnect or Reject
  kRejected,        // a REJ arrived (ConnInfo::reject_reason, private data)
  kTimedOut,        // no answer after max CM retries (REQ, REP or DREQ)
  kDisconnected,    // the peer sent DREQ (or our own DREQ completed: kDisconnectDone)
  kDisconnectDone,  // our DREQ was answered (DREP, a crossed DREQ) or timed out
  kClosed,          // time-wait over; the ConnId is gone once released
};
const char* EventName(Event e);

// Why a connection ended, as the application sees it.
struct ConnInfo {
  ConnState state = ConnState::kIdle;
  bool active = false;
  wire::IpAddr local_ip, peer_ip;
  uint16_t local_port = 0, peer_port = 0;
  uint32_t qpn = 0, peer_qpn = 0;
  uint32_t local_comm_id = 0, peer_comm_id = 0;
  // Read limits the peer announced: how many of our Reads it serves
  // (responder resources) and how many of its Reads may be in flight to us
  // (initiator depth). Negotiated: ours are what the QP got.
  uint8_t peer_responder_resources = 0, peer_initiator_depth = 0;
  uint8_t inbound_read_limit = 0, outbound_read_limit = 0;  // the QP's
  std::vector<uint8_t> private_data;  // last from the peer (REQ app part, REP, REJ, DREQ)
  uint16_t reject_reason = 0;         // REJ received (or sent on timeout)
  bool timed_out = false;
  bool peer_disconnected = false;
};

struct ConnRequest {
  ConnId id = kNoConn;
  ListenerId listener = 0;
  wire::IpAddr local_ip, peer_ip;
  uint16_t local_port = 0, peer_port = 0;
  std::vector<uint8_t> private_data;  // the application's part (56 bytes as sent)
  uint8_t peer_responder_resources = 0, peer_initiator_depth = 0;
  uint32_t path_mtu = 0;
};

struct ConnectParams {
  uint32_t qpn = 0;                 // a QP of the device, in Reset or Init
  wire::IpAddr local_ip, peer_ip;
  uint16_t local_port = 0;          // 0: an ephemeral port (else it must be bound)
  uint16_t peer_port = 0;
  wire::MacAddr peer_mac;           // resolved by the caller (ARP/NDP)
  std::vector<uint8_t> private_data;  // at most 56 bytes
  uint8_t responder_resources = 1;  // inbound Reads we serve
  uint8_t initiator_depth = 1;      // outbound Reads we want in flight
  uint32_t path_mtu = 1024;         // largest our port carries (256..4096)
  uint8_t retry_cnt = 7, rnr_retry = 7;
  uint8_t local_ack_timeout = 19;   // 4.096 us * 2^19 = 2.1 s, as rdma_cm over RoCE
  uint8_t min_rnr_timer = 12;
  uint8_t traffic_class = 0, hop_limit = 64;
  // ND2: the peer's acceptance (REP) is reported (kRepReceived) and the RTU
  // waits for CompleteConnect, so the application may still Reject. Else the
  // RTU goes at once and kEstablished follows the REP.
  bool defer_rtu = false;
  // ND2: a REQ that is refused (REJ), times out or is abandoned leaves the QP
  // as it was (Init, its posted receives intact), so the application may
  // connect it again; else the QP goes to Error.
  bool keep_qp_on_failure = false;
};

struct AcceptParams {
  uint32_t qpn = 0;                 // a QP of the device, in Reset or Init
  std::vector<uint8_t> private_data;  // at most 196 bytes
  uint8_t responder_resources = 1;  // inbound Reads we serve (capped by what the peer may issue)
  uint8_t initiator_depth = 1;      // outbound Reads (capped by the peer's responder resources)
  uint8_t rnr_retry = 7;            // the peer's RNR retry count towards us (REP field)
  uint8_t min_rnr_timer = 12;
  uint32_t max_path_mtu = 4096;     // refuse (REJ) a REQ asking for more
};

struct CmCounters {
  uint64_t rx_mads = 0, tx_mads = 0, retransmits = 0, tx_deferred = 0;
  uint64_t rx_req = 0, rx_mra = 0, rx_rej = 0, rx_rep = 0, rx_rtu = 0, rx_dreq = 0, rx_drep = 0;
  uint64_t tx_req = 0, tx_mra = 0, tx_rej = 0, tx_rep = 0, tx_rtu = 0, tx_dreq = 0, tx_drep = 0;
  uint64_t duplicates = 0;      // a message we had answered already, answered again
  uint64_t dropped_bad = 0;     // malformed, wrong class/Q_Key/transport, unsupported (SIDR, LAP)
  uint64_t dropped_stale = 0;   // for no connection, or one in a state that ignores it
  uint64_t rej_no_listener = 0, rej_backlog = 0, timeouts = 0, established = 0;
  uint64_t crossed_dreqs = 0;   // the peer's DREQ arrived while ours was outstanding
};

class ConnectionManager {
 public:
  struct Config {
    wire::MacAddr mac;                    // our port's
    std::vector<wire::IpAddr> addrs;      // our addresses (GIDs)
    uint64_t ca_guid = 0;                 // 0: the modified EUI-64 of the MAC
    // Offer (REQ) and accept (REP) selective repair over ECE; false: every
    // connection is go-back-N.
    bool selective_repair = true;
    uint8_t cm_response_timeout = 18;     // 4.096 us * 2^18 = 1.07 s between retransmissions
    uint8_t max_cm_retries = 15;
    uint8_t target_ack_delay = 15;        // what our REP announces (rxe's)
    uint64_t mra_after_ns = 0;            // MRA a REQ the application has not decided on (0: half the response timeout)
    uint8_t mra_service_timeout = 24;     // what the MRA asks for: 4.096 us * 2^24 = 69 s
    uint64_t time_wait_ns = 2'000'000'000;
    uint16_t ephemeral_first = kEphemeralFirst, ephemeral_last = kEphemeralLast;
    uint64_t seed = 0;                    // 0: random (comm IDs, PSNs, ephemeral ports)
    // Fault injection for tests: the first N DREQs received are ignored, as
    // if lost (the peer retransmits them): forces crossed DREQs on a real link.
    uint32_t drop_rx_dreqs = 0;
    // ... and the first N DREQs we send leave nothing on the wire (our
    // retransmission follows): the peer's own DREQ then finds ours outstanding.
    uint32_t drop_tx_dreqs = 0;
  };

  ConnectionManager(rc::RcDevice* dev, const Config& cfg);
  ~ConnectionManager();
  ConnectionManager(const ConnectionManager&) = delete;
  ConnectionManager& operator=(const ConnectionManager&) = delete;

  // Events for a connection (from inside OnMad / Poll / the API calls).
  std::function<void(ConnId, Event)> on_event;
  // A listener has a new request (GetRequest returns it).
  std::function<void(ListenerId)> on_request;

  // ---- addresses ----------------------------------------------------------------
  // Reserves (ip, port); port 0 picks an ephemeral one. ip unspecified (::)
  // means every address of ours. AlreadyExists if taken, ResourceExhausted if
  // no ephemeral port is free, InvalidArgument if ip is not ours.
  absl::StatusOr<uint16_t> BindPort(const wire::IpAddr& ip, uint16_t port);
  void UnbindPort(const wire::IpAddr& ip, uint16_t port);
  bool IsLocalAddress(const wire::IpAddr& ip) const;
  // Replaces our addresses (an interface's that changed). Bound ports and
  // connections on a removed address stay as they are; new REQs to it are
  // no longer ours.
  void SetAddrs(std::vector<wire::IpAddr> addrs) { cfg_.addrs = std::move(addrs); }

  // ---- listeners ----------------------------------------------------------------
  // Listens on a bound (ip, port). backlog: pending requests (not yet taken by
  // GetRequest) beyond which new ones are rejected (REJ no resources).
  absl::StatusOr<ListenerId> Listen(const wire::IpAddr& ip, uint16_t port, uint32_t backlog);
  bool GetRequest(ListenerId l, ConnRequest* out);
  size_t PendingRequests(ListenerId l) const;
  // Stops listening; requests not yet taken are rejected. The port stays bound.
  void CloseListener(ListenerId l, uint64_t now);

  // ---- connections ----------------------------------------------------------------
  absl::StatusOr<ConnId> Connect(const ConnectParams& p, uint64_t now);
  absl::Status Accept(ConnId id, const AcceptParams& p, uint64_t now);
  // Passive: refuses a request (REJ consumer defined). Active with defer_rtu:
  // refuses the peer's REP.
  absl::Status Reject(ConnId id, const std::vector<uint8_t>& private_data, uint64_t now);
  // Active with defer_rtu, after kRepReceived: the QP to RTS, RTU, established.
  absl::Status CompleteConnect(ConnId id, uint64_t now);
  // Sends DREQ and moves the QP to Error (its outstanding work flushes).
  absl::Status Disconnect(ConnId id, uint64_t now);
  // The application is done with the id: it is forgotten once closed (a
  // connection still in use is disconnected first; one still requested is
  // rejected).
  void Release(ConnId id, uint64_t now);
  // The process is going away with connections still open (its exit, as the
  // kernel's CM does for a dead rdma_cm user): every connection is released
  // as above (DREQ or REJ), every listener closed.
  void ReleaseAll(uint64_t now);
  // What this CM still owes its peers: MADs the device could not take yet,
  // DREQs not answered (DREP or a crossed DREQ). A process that goes away
  // lingers until it is 0 (bounded): its peers then hear the end of every
  // connection instead of timing out.
  size_t Owed() const;
  const ConnInfo* Info(ConnId id) const;

  // ---- progress -------------------------------------------------------------------
  // A datagram the device received for QP 1.
  void OnGsiPacket(const wire::RocePacket& p, uint64_t now);
  // Timers (retransmissions, MRA, time-wait, first-data detection) and
  // MADs the device could not take earlier.
  void Poll(uint64_t now);
  uint64_t NextDeadline() const;  // 0: none
  size_t Connections() const { return conns_.size(); }
  size_t BoundPorts() const { return bound_.size(); }

  CmCounters counters;

 private:
  struct Conn;
  struct Listener {
    ListenerId id = 0;
    wire::IpAddr ip;  // unspecified: any
    uint16_t port = 0;
    uint32_t backlog = 0;
    std::deque<ConnId> pending;
    bool open = true;
  };

  Conn* Find(ConnId id);
  const Conn* Find(ConnId id) const;
  Conn* FindByLocalCommId(uint32_t comm_id);
  Conn* FromPeer(const wire::RocePacket& p, uint32_t our_comm_id, uint32_t their_comm_id);
  ConnId NewConn();
  uint32_t NewCommId();
  uint32_t RandomPsn();
  uint64_t ResponseTimeoutNs() const;
  bool PortTaken(const wire::IpAddr& ip, uint16_t port) const;

  void SendMad(Conn* c, uint64_t tid, wire::CmMessage msg, uint64_t now, bool retransmittable);
  // attr_mod: the MAD header's attribute modifier (ECE options of a REQ/REP).
  void SendMadTo(const wire::NetHeaders& path, uint64_t tid, const wire::CmMessage& msg, uint32_t attr_mod = 0);
  static uint32_t AttrModFor(const Conn& c, const wire::CmMessage& msg);
  void Transmit(const wire::NetHeaders& path, const std::array<uint8_t, wire::mad::kLen>& mad);
  void SendRej(const wire::NetHeaders& path, uint64_t tid, uint32_t local_comm, uint32_t remote_comm,
               uint8_t msg_rejected, uint16_t reason, const std::vector<uint8_t>& pd = {});
  wire::NetHeaders ReplyPath(const wire::RocePacket& p) const;
  wire::NetHeaders MadPath(const Conn& c) const;
  wire::NetHeaders DataPath(const Conn& c) const;

  void OnReq(const wire::RocePacket& p, const wire::MadHeader& h, const wire::CmReq& m, uint64_t now);
  void OnMra(const wire::RocePacket& p, const wire::CmMra& m, uint64_t now);
  void OnRej(const wire::RocePacket& p, const wire::CmRej& m, uint64_t now);
  void OnRep(const wire::RocePacket& p, const wire::MadHeader& h, const wire::CmRep& m, uint64_t now);
  void OnRtu(const wire::RocePacket& p, const wire::CmRtu& m, uint64_t now);
  void OnDreq(const wire::RocePacket& p, const wire::MadHeader& h, const wire::CmDreq& m, uint64_t now);
  void OnDrep(const wire::RocePacket& p, const wire::CmDrep& m, uint64_t now);

  bool SetupQp(Conn* c, uint32_t sq_psn, uint32_t rq_psn, bool to_rts, uint64_t now);
  void QpToError(Conn* c);
  void Establish(Conn* c, uint64_t now);
  void EnterTimeWait(Conn* c, uint64_t now);
  void Close(Conn* c);
  void Emit(Conn* c, Event e);
  void OnTimer(Conn* c, uint64_t now);

  rc::RcDevice* dev_;
  Config cfg_;
  std::mt19937_64 rng_;
  uint32_t hi_tid_ = 0;
  uint32_t qp1_psn_ = 0;
  absl::flat_hash_map<ConnId, std::unique_ptr<Conn>> conns_;
  absl::flat_hash_map<uint32_t, ConnId> by_comm_id_;  // local comm ID -> conn
  absl::flat_hash_map<std::pair<std::array<uint8_t, 16>, uint32_t>, ConnId> by_peer_comm_id_;  // (peer IP, peer comm ID)
  std::map<ListenerId, Listener> listeners_;
  std::set<std::pair<uint16_t, std::array<uint8_t, 16>>> bound_;  // (port, ip); ip :: = any
  ConnId next_conn_ = 1;
  ListenerId next_listener_ = 1;
  uint16_t next_ephemeral_ = 0;
  struct Deferred {
    wire::NetHeaders path;
    std::array<uint8_t, wire::mad::kLen> mad;
  };
  std::deque<Deferred> deferred_;  // the device was busy
  // Timers: a min-heap of (deadline, conn) with lazy deletion (a conn keeps
  // one live entry, its earliest deadline); passive connections in RepSent
  // are also watched for their first data packet (a lost RTU).
  void ArmTimer(Conn* c);
  using TimerEntry = std::pair<uint64_t, ConnId>;
  std::priority_queue<TimerEntry, std::vector<TimerEntry>, std::greater<TimerEntry>> timers_;
  std::set<ConnId> rep_sent_;
};

}  // namespace roce::cm
