// SPDX-License-Identifier: MIT
#include "stack/cm/cm.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include <absl/strings/str_cat.h>

#include "stack/wire/psn.h"

namespace roce::cm {

using namespace roce::wire;
namespace wcm = roce::wire::cm;

const char* ConnStateName(ConnState s) {
  switch (s) {
    case ConnState::kIdle: return "idle";
    case ConnState::kReqSent: return "req-sent";
    case ConnState::kMraReceived: return "mra-received";
    case ConnState::kRepReceived: return "rep-received";
    case ConnState::kReqReceived: return "req-received";
    case ConnState::kRepSent: return "rep-sent";
    case ConnState::kEstablished: return "established";
    case ConnState::kDreqSent: return "dreq-sent";
    case ConnState::kTimeWait: return "time-wait";
    case ConnState::kClosed: return "closed";
  }
  return "?";
}

const char* EventName(Event e) {
  switch (e) {
    case Event::kEstablished: return "established";
    case Event::kRepReceived: return "rep-received";
    case Event::kRejected: return "rejected";
    case Event::kTimedOut: return "timed-out";
    case Event::kDisconnected: return "disconnected";
    case Event::kDisconnectDone: return "disconnect-done";
    case Event::kClosed: return "closed";
  }
  return "?";
}

namespace {

uint8_t MtuCode(uint32_t mtu) {
  switch (mtu) {
    case 256: return wcm::kMtu256;
    case 512: return wcm::kMtu512;
    case 1024: return wcm::kMtu1024;
    case 2048: return wcm::kMtu2048;
    case 4096: return wcm::kMtu4096;
  }
  return 0;
}

uint64_t TimeoutNs(uint8_t code) { return 4096ull << std::min<uint8_t>(code, 31); }

bool Unspecified(const IpAddr& ip) { return ip == IpAddr{}; }


template <size_t N>
void CopyPd(std::array<uint8_t, N>& dst, const std::vector<uint8_t>& src) {
  std::copy_n(src.begin(), std::min(src.size(), N), dst.begin());
}

}  // namespace

// One connection (a cm_id): either role, every state.
struct ConnectionManager::Conn {
  ConnId id = kNoConn;
  ConnInfo info;
  bool released = false;
  bool port_owned = false;       // we bound local_port for it (ephemeral): unbind at close
  ListenerId listener = 0;
  // Negotiated.
  MacAddr peer_mac;
  IpAddr local_ip, peer_ip;
  uint32_t flow_label = 0;
  uint32_t path_mtu = 1024;
  uint8_t traffic_class = 0, hop_limit = 64;
  uint8_t local_ack_timeout = 19, retry_cnt = 7, rnr_retry = 7, min_rnr_timer = 12;
  uint32_t our_psn = 0;          // the PSN we expect to receive (REQ/REP starting PSN)
  uint32_t peer_psn = 0;         // the PSN the peer expects (what we send from)
  uint32_t req_attr_mod = 0;     // passive: the REQ's attribute modifier (ECE options offered)
  uint32_t ece_tx = 0;           // attribute modifier of our REQ (offered) / REP (accepted)
  uint32_t ece = 0;              // ECE options both sides agreed on (kEceSelectiveRepair)
  uint8_t peer_response_timeout = 18;
  uint64_t tid = 0;              // the connection's transaction ID (the active side's)
  uint64_t dreq_tid = 0;         // ours, for DREQs we send (passive: our own TID)
  wire::CmReq req;               // as received (passive) or sent (active)
  // Retransmission of the last REQ / REP / DREQ.
  bool retx_armed = false;
  uint64_t retx_deadline = 0;
  int retx_left = 0;
  uint64_t retx_tid = 0;
  wire::CmMessage retx_msg;
  // Passive: MRA once if the application takes long.
  uint64_t mra_deadline = 0;
  bool mra_sent = false;
  uint64_t rx_at_accept = 0;     // the QP's received packets when we sent REP
  uint64_t timewait_deadline = 0;
  uint64_t scheduled = 0;        // deadline the timer heap holds for us (0: none)
  // Replies to duplicates.
  bool have_last_reply = false;
  wire::CmMessage last_reply;    // REP (passive) or RTU (active)
  bool defer_rtu = false;
  bool keep_qp = false;          // ConnectParams::keep_qp_on_failure

  uint64_t Deadline() const {
    uint64_t d = 0;
    for (uint64_t t : {retx_armed ? retx_deadline : 0, mra_deadline, timewait_deadline})
      if (t && (!d || t < d)) d = t;
    return d;
  }
};

ConnectionManager::ConnectionManager(rc::RcDevice* dev, const Config& cfg) : dev_(dev), cfg_(cfg) {
  std::random_device rd;
  rng_.seed(cfg_.seed ? cfg_.seed : (uint64_t{rd()} << 32) ^ rd());
  if (!cfg_.ca_guid) cfg_.ca_guid = wire::GuidFromMac(cfg_.mac);
  hi_tid_ = static_cast<uint32_t>(rng_()) | 1;
  if (cfg_.ephemeral_first > cfg_.ephemeral_last) std::swap(cfg_.ephemeral_first, cfg_.ephemeral_last);
  next_ephemeral_ = static_cast<uint16_t>(
      cfg_.ephemeral_first + rng_() % (uint32_t{cfg_.ephemeral_last} - cfg_.ephemeral_first + 1));
  dev_->SetGsiHandler([this](const RocePacket& p, uint64_t now) { OnGsiPacket(p, now); });
}

ConnectionManager::~ConnectionManager() { dev_->SetGsiHandler(nullptr); }

// ---- bookkeeping ---------------------------------------------------------------------

ConnectionManager::Conn* ConnectionManager::Find(ConnId id) {
  auto it = conns_.find(id);
  return it == conns_.end() ? nullptr : it->second.get();
}
const ConnectionManager::Conn* ConnectionManager::Find(ConnId id) const {
  auto it = conns_.find(id);
  return it == conns_.end() ? nullptr : it->second.get();
}
ConnectionManager::Conn* ConnectionManager::FindByLocalCommId(uint32_t comm_id) {
  auto it = by_comm_id_.find(comm_id);
  return it == by_comm_id_.end() ? nullptr : Find(it->second);
}

ConnectionManager::Conn* ConnectionManager::FromPeer(const RocePacket& p, uint32_t our_comm_id,
                                                     uint32_t their_comm_id) {
  // A message for one of our connections must come from its peer's address,
  // and name the peer's comm ID once we know it (0: not given).
  Conn* c = FindByLocalCommId(our_comm_id);
  if (!c || c->peer_ip != p.SrcIp()) return nullptr;
  if (their_comm_id && c->info.peer_comm_id && c->info.peer_comm_id != their_comm_id) return nullptr;
  return c;
}

ConnId ConnectionManager::NewConn() {
  while (next_conn_ == kNoConn || conns_.contains(next_conn_)) next_conn_++;
  const ConnId id = next_conn_++;
  auto c = std::make_unique<Conn>();
  c->id = id;
  conns_[id] = std::move(c);
  return id;
}

uint32_t ConnectionManager::NewCommId() {
  // Random and never 0; unique among the IDs we hold (time-wait included).
  for (;;) {
    const uint32_t v = static_cast<uint32_t>(rng_());
    if (v && !by_comm_id_.contains(v)) return v;
  }
}

uint32_t ConnectionManager::RandomPsn() { return static_cast<uint32_t>(rng_()) & kPsnMask; }

uint64_t ConnectionManager::ResponseTimeoutNs() const { return TimeoutNs(cfg_.cm_response_timeout); }

const ConnInfo* ConnectionManager::Info(ConnId id) const {
  const Conn* c = Find(id);
  return c ? &c->info : nullptr;
}

void ConnectionManager::ArmTimer(Conn* c) {
  const uint64_t d = c->Deadline();
  if (d && (c->scheduled == 0 || d < c->scheduled)) {
    c->scheduled = d;
    timers_.push({d, c->id});
  }
  if (c->info.state == ConnState::kRepSent)
    rep_sent_.insert(c->id);
  else
    rep_sent_.erase(c->id);
}

void ConnectionManager::Emit(Conn* c, Event e) {
  if (on_event) on_event(c->id, e);
}

// ---- addresses -------------------------------------------------------------------------

bool ConnectionManager::IsLocalAddress(const IpAddr& ip) const {
  return std::find(cfg_.addrs.begin(), cfg_.addrs.end(), ip) != cfg_.addrs.end();
}

bool ConnectionManager::PortTaken(const IpAddr& ip, uint16_t port) const {
  // A port bound to any address conflicts with every address, and the reverse.
  auto lo = bound_.lower_bound({port, {}});
  for (auto it = lo; it != bound_.end() && it->first == port; ++it) {
    if (Unspecified(ip) || it->second == std::array<uint8_t, 16>{} || it->second == ip.b) return true;
  }
  return false;
}

absl::StatusOr<uint16_t> ConnectionManager::BindPort(const IpAddr& ip, uint16_t port) {
  if (!Unspecified(ip) && !IsLocalAddress(ip))
    return absl::InvalidArgumentError(absl::StrCat(ip.ToString(), " is not an address of this adapter"));
  if (port) {
    if (PortTaken(ip, port)) return absl::AlreadyExistsError(absl::StrCat("port ", port, " is in use"));
    bound_.insert({port, ip.b});
    return port;
  }
  const uint32_t n = uint32_t{cfg_.ephemeral_last} - cfg_.ephemeral_first + 1;
  for (uint32_t i = 0; i < n; i++) {
    uint16_t p = next_ephemeral_;
    next_ephemeral_ = p == cfg_.ephemeral_last ? cfg_.ephemeral_first : static_cast<uint16_t>(p + 1);
    if (!PortTaken(ip, p)) {
      bound_.insert({p, ip.b});
      return p;
    }
  }
  return absl::ResourceExhaustedError("no ephemeral port is free");
}

void ConnectionManager::UnbindPort(const IpAddr& ip, uint16_t port) { bound_.erase({port, ip.b}); }

// ---- listeners ---------------------------------------------------------------------------

absl::StatusOr<ListenerId> ConnectionManager::Listen(const IpAddr& ip, uint16_t port, uint32_t backlog) {
  if (!bound_.contains({port, ip.b}))
    return absl::FailedPreconditionError(absl::StrCat("port ", port, " is not bound"));
  for (const auto& [id, l] : listeners_)
    if (l.port == port && (l.ip == ip || Unspecified(l.ip) || Unspecified(ip)))
      return absl::AlreadyExistsError(absl::StrCat("already listening on port ", port));
  Listener l;
  l.id = next_listener_++;
  l.ip = ip;
  l.port = port;
  l.backlog = std::max<uint32_t>(backlog, 1);
  listeners_[l.id] = l;
  return l.id;
}

bool ConnectionManager::GetRequest(ListenerId lid, ConnRequest* out) {
  auto it = listeners_.find(lid);
  if (it == listeners_.end()) return false;
  Listener& l = it->second;
  while (!l.pending.empty()) {
    const ConnId id = l.pending.front();
    l.pending.pop_front();
    Conn* c = Find(id);
    if (!c || c->info.state != ConnState::kReqReceived) {  // gone meanwhile (the peer gave up)
      if (c) {  // the application never saw it: forgotten once closed
        c->released = true;
        if (c->info.state == ConnState::kClosed) Close(c);
      }
      continue;
    }
    out->id = id;
    out->listener = lid;
    out->local_ip = c->info.local_ip;
    out->peer_ip = c->info.peer_ip;
    out->local_port = c->info.local_port;
    out->peer_port = c->info.peer_port;
    out->private_data = c->info.private_data;
    out->peer_responder_resources = c->info.peer_responder_resources;
    out->peer_initiator_depth = c->info.peer_initiator_depth;
    out->path_mtu = c->path_mtu;
    return true;
  }
  return false;
}

size_t ConnectionManager::PendingRequests(ListenerId lid) const {
  auto it = listeners_.find(lid);
  return it == listeners_.end() ? 0 : it->second.pending.size();
}

void ConnectionManager::CloseListener(ListenerId lid, uint64_t now) {
  auto it = listeners_.find(lid);
  if (it == listeners_.end()) return;
  std::deque<ConnId> pending = std::move(it->second.pending);
  listeners_.erase(it);
  for (ConnId id : pending) {
    Conn* c = Find(id);
    if (c && c->info.state == ConnState::kReqReceived && !c->released) {
      c->released = true;  // never handed to the application
      Reject(id, {}, now).IgnoreError();
    }
  }
}

// ---- sending -------------------------------------------------------------------------------

NetHeaders ConnectionManager::MadPath(const Conn& c) const {
  NetHeaders n;
  n.eth.src = cfg_.mac;
  n.eth.dst = c.peer_mac;
  n.ipv6 = !c.peer_ip.IsV4();
  n.eth.ethertype = n.ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4;
  if (n.ipv6) {
    n.ip6.src = c.local_ip.b;
    n.ip6.dst = c.peer_ip.b;
    n.ip6.hop_limit = 64;
  } else {
    n.ip4.src = c.local_ip.V4();
    n.ip4.dst = c.peer_ip.V4();
    n.ip4.ttl = 64;
  }
  n.udp.src_port = kQp1UdpSrcPort;
  n.udp.dst_port = kRoceV2Port;
  return n;
}

NetHeaders ConnectionManager::DataPath(const Conn& c) const {
  NetHeaders n = MadPath(c);
  // The flow label sets the data QP's UDP source port, the same both ways
  // (rxe derives it so; any receiver accepts any source port).
  n.udp.src_port = FlowLabelToUdpSrcPort(c.flow_label);
  if (n.ipv6) {
    n.ip6.traffic_class = c.traffic_class;
    n.ip6.hop_limit = c.hop_limit;
    n.ip6.flow_label = c.flow_label & 0xFFFFF;
  } else {
    n.ip4.tos = c.traffic_class;
    n.ip4.ttl = c.hop_limit;
  }
  return n;
}

NetHeaders ConnectionManager::ReplyPath(const RocePacket& p) const {
  NetHeaders n;
  n.eth.src = cfg_.mac;
  n.eth.dst = p.eth.src;
  n.eth.has_vlan = p.eth.has_vlan;
  n.eth.vlan_tci = p.eth.vlan_tci;
  n.ipv6 = p.ipv6;
  n.eth.ethertype = n.ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4;
  if (n.ipv6) {
    n.ip6.src = p.ip6.dst;
    n.ip6.dst = p.ip6.src;
    n.ip6.hop_limit = 64;
  } else {
    n.ip4.src = p.ip4.dst;
    n.ip4.dst = p.ip4.src;
    n.ip4.ttl = 64;
  }
  n.udp.src_port = kQp1UdpSrcPort;
  n.udp.dst_port = kRoceV2Port;
  return n;
}

void ConnectionManager::Transmit(const NetHeaders& path, const std::array<uint8_t, mad::kLen>& mad) {
  rc::TxPacket pkt;
  pkt.net = &path;
  pkt.bth.opcode = op::kUdSendOnly;
  pkt.bth.pkey = kDefaultPkey;
  pkt.bth.dest_qp = kGsiQpn;
  pkt.bth.ack_req = true;  // as Linux sends every MAD (meaningless for UD)
  pkt.bth.psn = qp1_psn_;
  pkt.ext.deth.qkey = kGsiQkey;
  pkt.ext.deth.src_qp = kGsiQpn;
  pkt.payload_len = mad::kLen;
  pkt.nseg = 1;
  pkt.seg[0] = {mad.data(), static_cast<uint32_t>(mad.size())};
  pkt.qpn = kGsiQpn;
  if (!deferred_.empty() || !dev_->Transmit(pkt, dev_->now())) {
    counters.tx_deferred++;
    deferred_.push_back({path, mad});
    return;
  }
  qp1_psn_ = PsnAdd(qp1_psn_, 1);
  counters.tx_mads++;
}

void ConnectionManager::SendMadTo(const NetHeaders& path, uint64_t tid, const CmMessage& msg, uint32_t attr_mod) {
  switch (AttrIdOf(msg)) {
    case wcm::kAttrReq: counters.tx_req++; break;
    case wcm::kAttrMra: counters.tx_mra++; break;
    case wcm::kAttrRej: counters.tx_rej++; break;
    case wcm::kAttrRep: counters.tx_rep++; break;
    case wcm::kAttrRtu: counters.tx_rtu++; break;
    case wcm::kAttrDreq:
      counters.tx_dreq++;
      if (cfg_.drop_tx_dreqs > 0) {  // fault injection (Config::drop_tx_dreqs)
        cfg_.drop_tx_dreqs--;
        return;
      }
      break;
    case wcm::kAttrDrep: counters.tx_drep++; break;
    default: break;
  }
  CmMad m = MakeCmMad(tid, msg);
  m.hdr.attr_mod = attr_mod;
  Transmit(path, SerializeCmMad(m));
}

uint32_t ConnectionManager::AttrModFor(const Conn& c, const CmMessage& msg) {
  const uint16_t a = AttrIdOf(msg);
  return a == wcm::kAttrReq || a == wcm::kAttrRep ? c.ece_tx : 0;
}

void ConnectionManager::SendMad(Conn* c, uint64_t tid, CmMessage msg, uint64_t now, bool retransmittable) {
  SendMadTo(MadPath(*c), tid, msg, AttrModFor(*c, msg));
  if (retransmittable) {
    c->retx_armed = true;
    c->retx_deadline = now + ResponseTimeoutNs();
    c->retx_left = cfg_.max_cm_retries;
    c->retx_tid = tid;
    c->retx_msg = std::move(msg);
  }
  ArmTimer(c);
}

void ConnectionManager::SendRej(const NetHeaders& path, uint64_t tid, uint32_t local_comm,
                                uint32_t remote_comm, uint8_t msg_rejected, uint16_t reason,
                                const std::vector<uint8_t>& pd) {
  CmRej r;
  r.local_comm_id = local_comm;
  r.remote_comm_id = remote_comm;
  r.message_rejected = msg_rejected;
  r.reason = reason;
  CopyPd(r.private_data, pd);
  SendMadTo(path, tid, r);
}

// ---- QP -----------------------------------------------------------------------------------

bool ConnectionManager::SetupQp(Conn* c, uint32_t sq_psn, uint32_t rq_psn, bool to_rts, uint64_t now) {
  rc::QueuePair* qp = dev_->FindQp(c->info.qpn);
  if (!qp) return false;
  if (qp->state() == rc::QpState::kReset && !qp->ToInit()) return false;
  if (qp->state() != rc::QpState::kInit) return false;
  rc::QpAttr a;
  a.path_mtu = c->path_mtu;
  a.dest_qpn = c->info.peer_qpn;
  a.sq_psn = sq_psn;
  a.rq_psn = rq_psn;
  a.max_rd_atomic = c->info.outbound_read_limit;
  // The RC core needs one read resource to answer with NAKs; a limit of 0
  // (perftest -R) still refuses every Read (the requester never sends one).
  a.max_dest_rd_atomic = std::max<uint8_t>(c->info.inbound_read_limit, 1);
  a.timeout = c->local_ack_timeout;
  a.retry_cnt = c->retry_cnt;
  a.rnr_retry = c->rnr_retry;
  a.min_rnr_timer = c->min_rnr_timer;
  a.path = DataPath(*c);
  a.peer_repairs = (c->ece & kEceSelectiveRepair) != 0;
  if (!qp->ToRtr(a)) return false;
  if (to_rts && !qp->ToRts(now)) return false;
  return true;
}

void ConnectionManager::QpToError(Conn* c) {
  if (rc::QueuePair* qp = dev_->FindQp(c->info.qpn)) {
    if (qp->state() != rc::QpState::kReset && qp->state() != rc::QpState::kError) qp->ToError();
  }
}

void ConnectionManager::Establish(Conn* c, uint64_t now) {
  (void)now;
  c->info.state = ConnState::kEstablished;
  c->retx_armed = false;
  c->mra_deadline = 0;
  rep_sent_.erase(c->id);
  counters.established++;
  Emit(c, Event::kEstablished);
}

void ConnectionManager::EnterTimeWait(Conn* c, uint64_t now) {
  c->info.state = ConnState::kTimeWait;
  c->retx_armed = false;
  c->mra_deadline = 0;
  c->timewait_deadline = now + std::max<uint64_t>(cfg_.time_wait_ns, 1);
  ArmTimer(c);
}

void ConnectionManager::Close(Conn* c) {
  if (c->info.state == ConnState::kClosed) {
    if (c->released) {
      rep_sent_.erase(c->id);
      conns_.erase(c->id);
    }
    return;
  }
  c->info.state = ConnState::kClosed;
  rep_sent_.erase(c->id);
  c->retx_armed = false;
  c->mra_deadline = 0;
  c->timewait_deadline = 0;
  if (c->info.local_comm_id) by_comm_id_.erase(c->info.local_comm_id);
  if (c->info.peer_comm_id) by_peer_comm_id_.erase({c->info.peer_ip.b, c->info.peer_comm_id});
  if (c->port_owned) {
    UnbindPort(c->local_ip, c->info.local_port);
    c->port_owned = false;
  }
  const ConnId id = c->id;
  const bool released = c->released;
  Emit(c, Event::kClosed);
  if (released) conns_.erase(id);
}

// ---- API: connect / accept / reject / disconnect --------------------------------------------

absl::StatusOr<ConnId> ConnectionManager::Connect(const ConnectParams& p, uint64_t now) {
  if (p.private_data.size() > kMaxReqPrivateData)
    return absl::InvalidArgumentError(absl::StrCat("private data of ", p.private_data.size(),
                                                   " bytes: at most ", kMaxReqPrivateData));
  if (!MtuCode(p.path_mtu)) return absl::InvalidArgumentError("path MTU must be 256..4096");
  if (!IsLocalAddress(p.local_ip))
    return absl::InvalidArgumentError(absl::StrCat(p.local_ip.ToString(), " is not ours"));
  if (p.local_ip.IsV4() != p.peer_ip.IsV4()) return absl::InvalidArgumentError("address families differ");
  if (!p.peer_port) return absl::InvalidArgumentError("no destination port");
  rc::QueuePair* qp = dev_->FindQp(p.qpn);
  if (!qp) return absl::NotFoundError("no such QP");
  if (qp->state() != rc::QpState::kReset && qp->state() != rc::QpState::kInit)
    return absl::FailedPreconditionError("the QP is not in Reset or Init");
  bool port_owned = false;
  uint16_t lport = p.local_port;
  if (!lport) {
    auto b = BindPort(p.local_ip, 0);
    if (!b.ok()) return b.status();
    lport = *b;
    port_owned = true;
  }
  if (qp->state() == rc::QpState::kReset && !qp->ToInit()) {
    if (port_owned) UnbindPort(p.local_ip, lport);
    return absl::FailedPreconditionError("the QP refused Init");
  }
  const ConnId id = NewConn();
  Conn* c = Find(id);
  c->port_owned = port_owned;
  c->info.active = true;
  c->info.local_ip = c->local_ip = p.local_ip;
  c->info.peer_ip = c->peer_ip = p.peer_ip;
  c->info.local_port = lport;
  c->info.peer_port = p.peer_port;
  c->info.qpn = p.qpn;
  c->info.local_comm_id = NewCommId();
  by_comm_id_[c->info.local_comm_id] = id;
  c->peer_mac = p.peer_mac;
  c->path_mtu = p.path_mtu;
  c->traffic_class = p.traffic_class;
  c->hop_limit = p.hop_limit;
  c->local_ack_timeout = p.local_ack_timeout;
  c->retry_cnt = p.retry_cnt;
  c->rnr_retry = p.rnr_retry;
  c->min_rnr_timer = p.min_rnr_timer;
  c->defer_rtu = p.defer_rtu;
  c->keep_qp = p.keep_qp_on_failure;
  c->flow_label = RdmaCmFlowLabel(lport, p.peer_port);
  c->our_psn = RandomPsn();
  c->tid = c->dreq_tid = FormCmTid(hi_tid_, c->info.local_comm_id);
  c->info.inbound_read_limit = p.responder_resources;
  c->info.outbound_read_limit = p.initiator_depth;

  CmReq& r = c->req;
  r.local_comm_id = c->info.local_comm_id;
  r.service_id = RdmaCmTcpServiceId(p.peer_port);
  r.local_ca_guid = cfg_.ca_guid;
  r.local_qpn = p.qpn;
  r.responder_resources = p.responder_resources;
  r.initiator_depth = p.initiator_depth;
  r.remote_cm_response_timeout = cfg_.cm_response_timeout;
  r.transport_service_type = wcm::kTransportRc;
  r.starting_psn = c->our_psn;
  r.local_cm_response_timeout = cfg_.cm_response_timeout;
  r.retry_count = p.retry_cnt & 7;
  r.pkey = kDefaultPkey;
  r.path_mtu = MtuCode(p.path_mtu);
  r.rnr_retry_count = p.rnr_retry & 7;
  r.max_cm_retries = cfg_.max_cm_retries & 0xF;
  r.primary.local_lid = r.primary.remote_lid = 0xFFFF;
  r.primary.local_gid = p.local_ip.b;
  r.primary.remote_gid = p.peer_ip.b;
  r.primary.flow_label = c->flow_label;
  r.primary.traffic_class = p.traffic_class;
  r.primary.hop_limit = p.hop_limit;
  r.primary.local_ack_timeout = p.local_ack_timeout & 0x1F;
  if (cfg_.selective_repair) {  // ECE offer
    r.vendor_id = kEceVendorId;
    c->ece_tx = EceAttrMod(kEceSelectiveRepair);
  }
  SetRdmaCmPrivateData(CmaHeader::Make(p.local_ip, lport, p.peer_ip),
                       ByteSpan(p.private_data.data(), p.private_data.size()), &r);
  c->info.state = ConnState::kReqSent;
  SendMad(c, c->tid, r, now, true);
  return id;
}

absl::Status ConnectionManager::Accept(ConnId id, const AcceptParams& p, uint64_t now) {
  Conn* c = Find(id);
  if (!c) return absl::NotFoundError("no such connection");
  if (c->info.state != ConnState::kReqReceived)
    return absl::FailedPreconditionError(absl::StrCat("connection is ", ConnStateName(c->info.state)));
  if (p.private_data.size() > kMaxRepPrivateData)
    return absl::InvalidArgumentError(absl::StrCat("private data of ", p.private_data.size(),
                                                   " bytes: at most ", kMaxRepPrivateData));
  rc::QueuePair* qp = dev_->FindQp(p.qpn);
  if (!qp) return absl::NotFoundError("no such QP");
  if (qp->state() != rc::QpState::kReset && qp->state() != rc::QpState::kInit)
    return absl::FailedPreconditionError("the QP is not in Reset or Init");
  c->info.qpn = p.qpn;
  // Read limits cross over: what we serve is at most what the peer may
  // issue, what we issue at most what the peer serves.
  c->info.inbound_read_limit = std::min(p.responder_resources, c->req.initiator_depth);
  c->info.outbound_read_limit = std::min(p.initiator_depth, c->req.responder_resources);
  c->min_rnr_timer = p.min_rnr_timer;
  c->our_psn = RandomPsn();
  // ECE: accept what we support of what a REQ of ours offered.
  const uint32_t ours = cfg_.selective_repair ? kEceSelectiveRepair : 0;
  c->ece = EceOptions(c->req.vendor_id, c->req_attr_mod) & ours;
  c->ece_tx = EceAttrMod(c->ece);
  if (!SetupQp(c, c->req.starting_psn, c->our_psn, true, now)) {
    QpToError(c);
    return absl::InternalError("the QP refused the connection's attributes");
  }
  c->rx_at_accept = qp->counters.rx_packets;
  CmRep rep;
  rep.local_comm_id = c->info.local_comm_id;
  rep.remote_comm_id = c->info.peer_comm_id;
  rep.local_qpn = p.qpn;
  rep.starting_psn = c->our_psn;
  rep.responder_resources = c->info.inbound_read_limit;
  rep.initiator_depth = c->info.outbound_read_limit;
  rep.target_ack_delay = cfg_.target_ack_delay & 0x1F;
  rep.rnr_retry_count = p.rnr_retry & 7;
  rep.srq = qp->srq() != nullptr;
  rep.local_ca_guid = cfg_.ca_guid;
  rep.vendor_id = c->req.vendor_id;  // echoed, as librdmacm does
  CopyPd(rep.private_data, p.private_data);
  c->info.state = ConnState::kRepSent;
  c->mra_deadline = 0;
  c->have_last_reply = true;
  c->last_reply = rep;
  SendMad(c, c->tid, rep, now, true);
  return absl::OkStatus();
}

absl::Status ConnectionManager::Reject(ConnId id, const std::vector<uint8_t>& private_data, uint64_t now) {
  Conn* c = Find(id);
  if (!c) return absl::NotFoundError("no such connection");
  if (c->info.state == ConnState::kRepReceived) {
    if (private_data.size() > kMaxRejPrivateData)
      return absl::InvalidArgumentError(absl::StrCat("private data of ", private_data.size(),
                                                     " bytes: at most ", kMaxRejPrivateData));
    SendRej(MadPath(*c), c->tid, c->info.local_comm_id, c->info.peer_comm_id, wcm::kMsgRep,
            wcm::kRejConsumerDefined, private_data);
    QpToError(c);
    EnterTimeWait(c, now);
    return absl::OkStatus();
  }
  if (c->info.state != ConnState::kReqReceived)
    return absl::FailedPreconditionError(absl::StrCat("connection is ", ConnStateName(c->info.state)));
  if (private_data.size() > kMaxRejPrivateData)
    return absl::InvalidArgumentError(absl::StrCat("private data of ", private_data.size(),
                                                   " bytes: at most ", kMaxRejPrivateData));
  SendRej(MadPath(*c), c->tid, c->info.local_comm_id, c->info.peer_comm_id, wcm::kMsgReq,
          wcm::kRejConsumerDefined, private_data);
  c->info.reject_reason = wcm::kRejConsumerDefined;
  // Held for time-wait: a duplicate REQ gets the REJ again.
  CmRej again;
  again.local_comm_id = c->info.local_comm_id;
  again.remote_comm_id = c->info.peer_comm_id;
  again.message_rejected = wcm::kMsgReq;
  again.reason = wcm::kRejConsumerDefined;
  CopyPd(again.private_data, private_data);
  c->have_last_reply = true;
  c->last_reply = again;
  EnterTimeWait(c, now);
  return absl::OkStatus();
}

absl::Status ConnectionManager::CompleteConnect(ConnId id, uint64_t now) {
  Conn* c = Find(id);
  if (!c) return absl::NotFoundError("no such connection");
  if (c->info.state != ConnState::kRepReceived)
    return absl::FailedPreconditionError(absl::StrCat("connection is ", ConnStateName(c->info.state)));
  rc::QueuePair* qp = dev_->FindQp(c->info.qpn);
  if (!qp || !qp->ToRts(now)) {
    SendRej(MadPath(*c), c->tid, c->info.local_comm_id, c->info.peer_comm_id, wcm::kMsgRep, wcm::kRejNoQp);
    QpToError(c);
    EnterTimeWait(c, now);
    return absl::InternalError("the QP refused RTS");
  }
  CmRtu rtu;
  rtu.local_comm_id = c->info.local_comm_id;
  rtu.remote_comm_id = c->info.peer_comm_id;
  c->have_last_reply = true;
  c->last_reply = rtu;
  SendMad(c, c->tid, rtu, now, false);
  Establish(c, now);
  return absl::OkStatus();
}

absl::Status ConnectionManager::Disconnect(ConnId id, uint64_t now) {
  Conn* c = Find(id);
  if (!c) return absl::NotFoundError("no such connection");
  switch (c->info.state) {
    case ConnState::kEstablished:
    case ConnState::kRepSent: {  // passive, RTU not seen yet
      QpToError(c);
      CmDreq d;
      d.local_comm_id = c->info.local_comm_id;
      d.remote_comm_id = c->info.peer_comm_id;
      d.remote_qpn_eecn = c->info.peer_qpn;
      c->info.state = ConnState::kDreqSent;
      SendMad(c, c->dreq_tid, d, now, true);
      return absl::OkStatus();
    }
    case ConnState::kRepReceived:
      Reject(id, {}, now).IgnoreError();
      return absl::OkStatus();
    case ConnState::kReqSent:
    case ConnState::kMraReceived:
      // Abandon the attempt: tell the peer (REJ timeout), as Linux does.
      SendRej(MadPath(*c), c->tid, c->info.local_comm_id, 0, wcm::kMsgReq, wcm::kRejTimeout);
      if (!c->keep_qp) QpToError(c);
      EnterTimeWait(c, now);
      return absl::OkStatus();
    case ConnState::kDreqSent:
    case ConnState::kTimeWait:
    case ConnState::kClosed:
      return absl::FailedPreconditionError("already disconnecting or disconnected");
    default:
      return absl::FailedPreconditionError(absl::StrCat("connection is ", ConnStateName(c->info.state)));
  }
}

void ConnectionManager::Release(ConnId id, uint64_t now) {
  Conn* c = Find(id);
  if (!c) return;
  c->released = true;
  switch (c->info.state) {
    case ConnState::kReqReceived:
      Reject(id, {}, now).IgnoreError();
      break;
    case ConnState::kEstablished:
    case ConnState::kRepSent:
    case ConnState::kReqSent:
    case ConnState::kMraReceived:
    case ConnState::kRepReceived:
      Disconnect(id, now).IgnoreError();
      break;
    case ConnState::kIdle:
    case ConnState::kClosed:
      Close(c);
      break;
    default:
      break;  // dreq-sent / time-wait: forgotten when closed
  }
}

void ConnectionManager::ReleaseAll(uint64_t now) {
  std::vector<ListenerId> lids;
  for (const auto& [lid, l] : listeners_) lids.push_back(lid);
  for (ListenerId lid : lids) CloseListener(lid, now);
  std::vector<ConnId> ids;
  for (const auto& [id, c] : conns_) ids.push_back(id);
  for (ConnId id : ids) Release(id, now);
}

size_t ConnectionManager::Owed() const {
  size_t n = deferred_.size();
  for (const auto& [id, c] : conns_) n += c->info.state == ConnState::kDreqSent;
  return n;
}

// ---- receiving ------------------------------------------------------------------------------

void ConnectionManager::OnGsiPacket(const RocePacket& p, uint64_t now) {
  counters.rx_mads++;
  // Only for us (a frame to another address is not ours to answer, and a
  // reply would go out from an address that is not ours).
  if (p.bth.opcode != op::kUdSendOnly || p.deth.qkey != kGsiQkey || p.payload.size() < mad::kLen ||
      !IsLocalAddress(p.DstIp())) {
    counters.dropped_bad++;
    return;
  }
  CmMad m;
  if (ParseCmMad(p.payload.first(mad::kLen), &m) != Error::kOk || m.hdr.method != mad::kMethodSend) {
    counters.dropped_bad++;
    return;
  }
  if (const auto* req = m.As<CmReq>()) OnReq(p, m.hdr, *req, now);
  else if (const auto* mra = m.As<CmMra>()) OnMra(p, *mra, now);
  else if (const auto* rej = m.As<CmRej>()) OnRej(p, *rej, now);
  else if (const auto* rep = m.As<CmRep>()) OnRep(p, m.hdr, *rep, now);
  else if (const auto* rtu = m.As<CmRtu>()) OnRtu(p, *rtu, now);
  else if (const auto* dreq = m.As<CmDreq>()) OnDreq(p, m.hdr, *dreq, now);
  else if (const auto* drep = m.As<CmDrep>()) OnDrep(p, *drep, now);
  else if (const auto* sidr = m.As<CmSidrReq>()) {
    // SIDR (UD service resolution) is not offered: say so.
    counters.dropped_bad++;
    CmSidrRep r;
    r.request_id = sidr->request_id;
    r.status = wcm::kSidrUnsupported;
    r.service_id = sidr->service_id;
    SendMadTo(ReplyPath(p), m.hdr.tid, r);
  } else {
    counters.dropped_bad++;
  }
}

void ConnectionManager::OnReq(const RocePacket& p, const MadHeader& h, const CmReq& m, uint64_t now) {
  counters.rx_req++;
  const NetHeaders reply = ReplyPath(p);
  const IpAddr src = p.SrcIp(), dst = p.DstIp();
  // A duplicate (the REQ was retransmitted): answer as before.
  auto dup = by_peer_comm_id_.find({src.b, m.local_comm_id});
  if (dup != by_peer_comm_id_.end()) {
    Conn* c = Find(dup->second);
    if (c) {
      counters.duplicates++;
      if (c->info.state == ConnState::kReqReceived) {
        CmMra mra;
        mra.local_comm_id = c->info.local_comm_id;
        mra.remote_comm_id = c->info.peer_comm_id;
        mra.message_mraed = wcm::kMsgReq;
        mra.service_timeout = cfg_.mra_service_timeout & 0x1F;
        c->mra_sent = true;
        SendMadTo(reply, c->tid, mra);
      } else if (c->have_last_reply &&
                 (c->info.state == ConnState::kRepSent || c->info.state == ConnState::kTimeWait)) {
        SendMadTo(reply, c->tid, c->last_reply, AttrModFor(*c, c->last_reply));  // the REP (or REJ) again
      }
      return;
    }
  }
  auto reject = [&](uint16_t reason) {
    SendRej(reply, h.tid, 0, m.local_comm_id, wcm::kMsgReq, reason);
  };
  if (m.transport_service_type != wcm::kTransportRc) {
    counters.dropped_bad++;
    reject(wcm::kRejInvalidTransportType);
    return;
  }
  const auto sid = ParseRdmaCmServiceId(m.service_id);
  CmaHeader cma;
  if (!sid || sid->port_space != rdma_cm::kPortSpaceTcp ||
      cma.Parse(ByteSpan(m.private_data.data(), m.private_data.size())) != Error::kOk) {
    counters.rej_no_listener++;
    reject(wcm::kRejInvalidServiceId);
    return;
  }
  // The GIDs are the addresses the data will use: they must be the frame's.
  if (IpAddr{m.primary.local_gid} != src || IpAddr{m.primary.remote_gid} != dst || !IsLocalAddress(dst)) {
    counters.dropped_bad++;
    reject(wcm::kRejInvalidGid);
    return;
  }
  const uint32_t mtu = wcm::MtuBytes(m.path_mtu);
  if (!mtu) {
    counters.dropped_bad++;
    reject(wcm::kRejInvalidMtu);
    return;
  }
  Listener* l = nullptr;
  for (auto& [id, x] : listeners_)
    if (x.port == sid->port && (Unspecified(x.ip) || x.ip == dst)) l = &x;
  if (!l) {
    counters.rej_no_listener++;
    reject(wcm::kRejInvalidServiceId);
    return;
  }
  if (l->pending.size() >= l->backlog) {
    counters.rej_backlog++;
    reject(wcm::kRejNoResources);
    return;
  }
  const ConnId id = NewConn();
  Conn* c = Find(id);
  c->listener = l->id;
  c->req = m;
  c->req_attr_mod = h.attr_mod;
  c->info.active = false;
  c->info.local_ip = c->local_ip = dst;
  c->info.peer_ip = c->peer_ip = src;
  c->info.local_port = l->port;
  c->info.peer_port = cma.src_port;
  c->info.peer_qpn = m.local_qpn;
  c->info.peer_comm_id = m.local_comm_id;
  c->info.local_comm_id = NewCommId();
  by_comm_id_[c->info.local_comm_id] = id;
  by_peer_comm_id_[{src.b, m.local_comm_id}] = id;
  c->info.peer_responder_resources = m.responder_resources;
  c->info.peer_initiator_depth = m.initiator_depth;
  const ByteSpan app = RdmaCmAppPrivateData(m);
  c->info.private_data.assign(app.begin(), app.end());
  c->peer_mac = p.eth.src;
  c->path_mtu = mtu;
  c->flow_label = m.primary.flow_label;
  c->traffic_class = m.primary.traffic_class;
  c->hop_limit = m.primary.hop_limit ? m.primary.hop_limit : 64;
  c->local_ack_timeout = m.primary.local_ack_timeout;
  c->retry_cnt = m.retry_count;
  c->rnr_retry = m.rnr_retry_count;
  c->peer_response_timeout = m.remote_cm_response_timeout;
  c->tid = h.tid;  // REP and the active side's DREQ use it; our DREQ uses our own
  c->dreq_tid = FormCmTid(hi_tid_, c->info.local_comm_id);
  c->info.state = ConnState::kReqReceived;
  // If the application takes long, an MRA keeps the peer from timing out.
  const uint64_t mra_after =
      cfg_.mra_after_ns ? cfg_.mra_after_ns : TimeoutNs(std::min(m.remote_cm_response_timeout, cfg_.cm_response_timeout)) / 2;
  c->mra_deadline = now + std::max<uint64_t>(mra_after, 1);
  ArmTimer(c);
  l->pending.push_back(id);
  if (on_request) on_request(l->id);
}

void ConnectionManager::OnMra(const RocePacket& p, const CmMra& m, uint64_t now) {
  counters.rx_mra++;
  Conn* c = FromPeer(p, m.remote_comm_id, m.local_comm_id);
  if (c && m.message_mraed == wcm::kMsgRep && c->info.state == ConnState::kRepSent) {
    // The peer takes its time to complete the connection: wait as asked.
    c->retx_deadline = now + TimeoutNs(m.service_timeout) + ResponseTimeoutNs();
    ArmTimer(c);
    return;
  }
  if (!c || m.message_mraed != wcm::kMsgReq || c->info.state != ConnState::kReqSent) {
    counters.dropped_stale++;
    return;
  }
  c->info.peer_comm_id = m.local_comm_id;
  c->info.state = ConnState::kMraReceived;
  // Wait as long as the peer asked before asking again.
  c->retx_deadline = now + TimeoutNs(m.service_timeout) + ResponseTimeoutNs();
  ArmTimer(c);
}

void ConnectionManager::OnRej(const RocePacket& p, const CmRej& m, uint64_t now) {
  counters.rx_rej++;
  // A REJ of our REQ may come before the peer has a comm ID (0).
  Conn* c = FromPeer(p, m.remote_comm_id, m.local_comm_id ? m.local_comm_id : 0);
  if (!c && m.remote_comm_id == 0 && m.local_comm_id != 0) {
    // The active side gave up on its REQ before it knew our comm ID (REJ
    // timeout, as Linux sends): found by the peer's comm ID.
    auto it = by_peer_comm_id_.find({p.SrcIp().b, m.local_comm_id});
    if (it != by_peer_comm_id_.end()) c = Find(it->second);
  }
  if (!c) {
    counters.dropped_stale++;
    return;
  }
  switch (c->info.state) {
    case ConnState::kReqReceived:  // passive: the active side abandoned its REQ
    case ConnState::kReqSent:
    case ConnState::kMraReceived:
    case ConnState::kRepReceived:
    case ConnState::kRepSent:  // passive: the active side gave up (or refused our REP)
    case ConnState::kEstablished:
      break;
    default:
      counters.dropped_stale++;
      return;
  }
  if (c->info.state == ConnState::kReqReceived) {
    // Abandoned before the application took it: off the listener's backlog
    // (it must not refuse live requests), and forgotten once closed.
    if (auto l = listeners_.find(c->listener); l != listeners_.end()) {
      auto& q = l->second.pending;
      if (auto it = std::find(q.begin(), q.end(), c->id); it != q.end()) {
        q.erase(it);
        c->released = true;
      }
    }
  }
  const bool was_established = c->info.state == ConnState::kEstablished;
  const bool attempt = c->info.state == ConnState::kReqSent || c->info.state == ConnState::kMraReceived;
  c->info.reject_reason = m.reason;
  c->info.private_data.assign(m.private_data.begin(), m.private_data.end());
  if (c->info.state != ConnState::kReqReceived && !(attempt && c->keep_qp)) QpToError(c);
  EnterTimeWait(c, now);
  Emit(c, was_established ? Event::kDisconnected : Event::kRejected);
}

void ConnectionManager::OnRep(const RocePacket& p, const MadHeader& h, const CmRep& m, uint64_t now) {
  (void)h;
  counters.rx_rep++;
  Conn* c = FromPeer(p, m.remote_comm_id, 0);
  if (!c) {
    counters.dropped_stale++;
    return;
  }
  if (c->info.state == ConnState::kEstablished && c->info.active) {
    // Our RTU was lost: the REP came again. Answer with the RTU again.
    counters.duplicates++;
    if (c->have_last_reply) SendMadTo(MadPath(*c), c->tid, c->last_reply);
    return;
  }
  if (c->info.state == ConnState::kRepReceived) {
    // The application has not called CompleteConnect yet: ask for time.
    counters.duplicates++;
    CmMra mra;
    mra.local_comm_id = c->info.local_comm_id;
    mra.remote_comm_id = c->info.peer_comm_id;
    mra.message_mraed = wcm::kMsgRep;
    mra.service_timeout = cfg_.mra_service_timeout & 0x1F;
    SendMadTo(MadPath(*c), c->tid, mra);
    return;
  }
  if (c->info.state != ConnState::kReqSent && c->info.state != ConnState::kMraReceived) {
    counters.dropped_stale++;
    return;
  }
  c->info.peer_comm_id = m.local_comm_id;
  c->info.peer_qpn = m.local_qpn;
  c->info.peer_responder_resources = m.responder_resources;
  c->info.peer_initiator_depth = m.initiator_depth;
  c->info.private_data.assign(m.private_data.begin(), m.private_data.end());
  by_peer_comm_id_[{c->peer_ip.b, m.local_comm_id}] = c->id;
  // Read limits cross over (the peer's REP says what it serves and issues).
  c->info.outbound_read_limit = std::min(c->info.outbound_read_limit, m.responder_resources);
  c->info.inbound_read_limit = std::min(c->info.inbound_read_limit, m.initiator_depth);
  c->rnr_retry = m.rnr_retry_count;
  c->peer_psn = m.starting_psn;
  // ECE: what the REP accepted of what we offered, if it answers as us.
  c->ece = EceOptions(m.vendor_id, h.attr_mod) & EceOptions(kEceVendorId, c->ece_tx);
  if (!SetupQp(c, m.starting_psn, c->our_psn, !c->defer_rtu, now)) {
    SendRej(MadPath(*c), c->tid, c->info.local_comm_id, m.local_comm_id, wcm::kMsgRep, wcm::kRejNoQp);
    c->info.reject_reason = wcm::kRejNoQp;
    QpToError(c);
    EnterTimeWait(c, now);
    Emit(c, Event::kRejected);
    return;
  }
  if (c->defer_rtu) {
    c->info.state = ConnState::kRepReceived;
    c->retx_armed = false;
    Emit(c, Event::kRepReceived);
    return;
  }
  CmRtu rtu;
  rtu.local_comm_id = c->info.local_comm_id;
  rtu.remote_comm_id = m.local_comm_id;
  c->have_last_reply = true;
  c->last_reply = rtu;
  SendMad(c, c->tid, rtu, now, false);
  Establish(c, now);
}

void ConnectionManager::OnRtu(const RocePacket& p, const CmRtu& m, uint64_t now) {
  counters.rx_rtu++;
  Conn* c = FromPeer(p, m.remote_comm_id, m.local_comm_id);
  if (!c || c->info.state != ConnState::kRepSent || c->info.peer_comm_id != m.local_comm_id) {
    counters.dropped_stale++;
    return;
  }
  Establish(c, now);
}

void ConnectionManager::OnDreq(const RocePacket& p, const MadHeader& h, const CmDreq& m, uint64_t now) {
  counters.rx_dreq++;
  if (cfg_.drop_rx_dreqs > 0) {  // fault injection (Config::drop_rx_dreqs)
    cfg_.drop_rx_dreqs--;
    return;
  }
  Conn* c = FindByLocalCommId(m.remote_comm_id);
  if (c && c->peer_ip != p.SrcIp()) c = nullptr;
  auto drep = [&](uint32_t local, uint32_t remote) {
    CmDrep d;
    d.local_comm_id = local;
    d.remote_comm_id = remote;
    SendMadTo(ReplyPath(p), h.tid, d);  // echoes the DREQ's TID
  };
  if (!c) {
    // Unknown (long gone, or never ours): a DREP anyway, so the peer stops asking.
    counters.dropped_stale++;
    drep(m.remote_comm_id, m.local_comm_id);
    return;
  }
  if (m.remote_qpn_eecn != c->info.qpn || m.local_comm_id != c->info.peer_comm_id) {
    counters.dropped_stale++;  // not for this connection (Linux drops it too)
    return;
  }
  switch (c->info.state) {
    case ConnState::kEstablished:
    case ConnState::kRepSent:
    case ConnState::kRepReceived:  // active, before CompleteConnect: the passive side gave up
      QpToError(c);
      c->info.peer_disconnected = true;
      c->info.private_data.assign(m.private_data.begin(), m.private_data.end());
      drep(c->info.local_comm_id, c->info.peer_comm_id);
      EnterTimeWait(c, now);
      Emit(c, Event::kDisconnected);
      return;
    case ConnState::kDreqSent:
      // Crossed DREQs (perftest does it): answer, and our disconnect is done.
      counters.crossed_dreqs++;
      c->info.peer_disconnected = true;
      drep(c->info.local_comm_id, c->info.peer_comm_id);
      EnterTimeWait(c, now);
      Emit(c, Event::kDisconnectDone);
      return;
    case ConnState::kTimeWait:
    case ConnState::kClosed:
      counters.duplicates++;
      drep(c->info.local_comm_id, c->info.peer_comm_id);
      return;
    default:
      counters.dropped_stale++;
      return;
  }
}

void ConnectionManager::OnDrep(const RocePacket& p, const CmDrep& m, uint64_t now) {
  counters.rx_drep++;
  Conn* c = FromPeer(p, m.remote_comm_id, m.local_comm_id);
  if (!c || c->info.state != ConnState::kDreqSent || c->info.peer_comm_id != m.local_comm_id) {
    counters.dropped_stale++;
    return;
  }
  EnterTimeWait(c, now);
  Emit(c, Event::kDisconnectDone);
}

// ---- timers --------------------------------------------------------------------------------

void ConnectionManager::OnTimer(Conn* c, uint64_t now) {
  if (c->timewait_deadline && now >= c->timewait_deadline) {
    Close(c);
    return;
  }
  if (c->mra_deadline && now >= c->mra_deadline) {
    c->mra_deadline = 0;
    if (c->info.state == ConnState::kReqReceived && !c->mra_sent) {
      CmMra mra;
      mra.local_comm_id = c->info.local_comm_id;
      mra.remote_comm_id = c->info.peer_comm_id;
      mra.message_mraed = wcm::kMsgReq;
      mra.service_timeout = cfg_.mra_service_timeout & 0x1F;
      c->mra_sent = true;
      SendMad(c, c->tid, mra, now, false);
    }
  }
  if (!c->retx_armed || now < c->retx_deadline) return;
  // Passive, REP sent, RTU lost: data from the peer means it got our REP.
  if (c->info.state == ConnState::kRepSent) {
    const rc::QueuePair* qp = dev_->FindQp(c->info.qpn);
    if (qp && qp->counters.rx_packets > c->rx_at_accept) {
      Establish(c, now);
      return;
    }
  }
  if (c->retx_left-- > 0) {
    counters.retransmits++;
    SendMadTo(MadPath(*c), c->retx_tid, c->retx_msg, AttrModFor(*c, c->retx_msg));
    c->retx_deadline = now + ResponseTimeoutNs();
    return;
  }
  // Out of retries.
  counters.timeouts++;
  c->retx_armed = false;
  c->info.timed_out = true;
  switch (c->info.state) {
    case ConnState::kReqSent:
    case ConnState::kMraReceived:
      c->info.reject_reason = wcm::kRejTimeout;
      SendRej(MadPath(*c), c->tid, c->info.local_comm_id, c->info.peer_comm_id, wcm::kMsgReq, wcm::kRejTimeout);
      if (!c->keep_qp) QpToError(c);
      EnterTimeWait(c, now);
      Emit(c, Event::kTimedOut);
      break;
    case ConnState::kRepSent:
      c->info.reject_reason = wcm::kRejTimeout;
      SendRej(MadPath(*c), c->tid, c->info.local_comm_id, c->info.peer_comm_id, wcm::kMsgRep, wcm::kRejTimeout);
      QpToError(c);
      EnterTimeWait(c, now);
      Emit(c, Event::kTimedOut);
      break;
    case ConnState::kDreqSent:
      EnterTimeWait(c, now);
      Emit(c, Event::kDisconnectDone);
      break;
    default:
      break;
  }
}

void ConnectionManager::Poll(uint64_t now) {
  while (!deferred_.empty()) {
    Deferred d = deferred_.front();
    deferred_.pop_front();
    const size_t before = deferred_.size();
    Transmit(d.path, d.mad);
    if (deferred_.size() > before) {  // still busy: keep the order
      deferred_.pop_back();
      deferred_.push_front(std::move(d));
      counters.tx_deferred--;
      break;
    }
  }
  // Passive connections whose RTU may be lost: data from the peer means it
  // got our REP.
  for (auto it = rep_sent_.begin(); it != rep_sent_.end();) {
    Conn* c = Find(*it);
    ++it;
    if (!c || c->info.state != ConnState::kRepSent) continue;
    const rc::QueuePair* qp = dev_->FindQp(c->info.qpn);
    if (qp && qp->counters.rx_packets > c->rx_at_accept) Establish(c, now);
  }
  while (!timers_.empty() && timers_.top().first <= now) {
    const auto [d, id] = timers_.top();
    timers_.pop();
    Conn* c = Find(id);
    if (!c || c->scheduled != d) continue;  // stale entry
    c->scheduled = 0;
    OnTimer(c, now);
    if ((c = Find(id)) != nullptr) ArmTimer(c);  // a later deadline gets its entry back
  }
}

uint64_t ConnectionManager::NextDeadline() const {
  if (!deferred_.empty() || !rep_sent_.empty()) return 1;  // as soon as possible
  // The heap's top may be stale (a deadline that moved later): firing it
  // early costs a no-op pass.
  return timers_.empty() ? 0 : timers_.top().first;
}

}  // namespace roce::cm
