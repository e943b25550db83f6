// SPDX-License-Identifier: MIT
// IND2Connector and IND2Listener over the connection manager (stack/cm).
//
// Overlapped calls (Connect, CompleteConnect, Accept, NotifyDisconnect,
// Disconnect, GetConnectionRequest) either fail at once or return ND_PENDING;
// their outcome, ND_SUCCESS included, always arrives through the OVERLAPPED
// (event and/or completion port), as with providers whose calls are driver
// requests: a client waiting on its completion port after every call is never
// left waiting.
//
// Statuses beyond the obvious ones (nd2-reference.md):
//   - Bind on a bound connector / listener: STATUS_ADDRESS_ALREADY_ASSOCIATED.
//   - Connect to an address no connection can go to (unspecified, broadcast,
//     multicast, loopback, port 0): STATUS_BAD_NETWORK_NAME; off every subnet
//     of the adapter: ND_NETWORK_UNREACHABLE; no ARP/NDP answer:
//     ND_HOST_UNREACHABLE; no listener, a full backlog or the peer's Reject:
//     ND_CONNECTION_REFUSED; no CM answer: ND_IO_TIMEOUT. After those the
//     connector and its QP (still in Init, receives intact) may Connect again.
//   - NotifyDisconnect completes STATUS_CONNECTION_DISCONNECTED once the
//     connection is down (the peer's DREQ, or our own Disconnect).
//   - The QP is not referenced by the connector: releasing it while connected
//     disconnects (QpReleased); a pending Connect / Accept then completes
//     ND_CANCELED and a later Disconnect returns ND_CANCELED.
#include <algorithm>
#include <cstring>

#include "nd2api/src/nd2.h"

namespace roce::nd2 {

namespace {

bool IsAnyV4(const wire::IpAddr& ip) { return ip.IsV4() && ip.V4() == 0; }

HRESULT BindStatus(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kAlreadyExists: return ND_SHARING_VIOLATION;
    case absl::StatusCode::kResourceExhausted: return ND_TOO_MANY_ADDRESSES;
    case absl::StatusCode::kInvalidArgument: return ND_INVALID_ADDRESS;
    default: return ND_INSUFFICIENT_RESOURCES;
  }
}

// The largest IB MTU a frame of the port carries (as rxe: netdev MTU - 80).
uint32_t PathMtu(engine::Engine& eng) {
  const uint32_t room = eng.port().mtu() > 80 ? eng.port().mtu() - 80u : 0;
  uint32_t mtu = 256;
  while (mtu * 2 <= room && mtu < 4096) mtu *= 2;
  return mtu;
}

HRESULT CopyAddress(const wire::IpAddr& ip, uint16_t port, sockaddr* addr, ULONG* len) {
  if (!len) return ND_INVALID_PARAMETER_2;
  const ULONG need = SockaddrLen(ip);
  if (!addr || *len < need) {
    *len = need;
    return ND_BUFFER_OVERFLOW;
  }
  ToSockaddr(ip, port, addr);
  *len = need;
  return ND_SUCCESS;
}

// A destination no connection can go to.
bool BadDestination(const wire::IpAddr& ip, uint16_t port) {
  if (port == 0) return true;
  if (ip.IsV4()) {
    const uint32_t a = ip.V4();
    return (a >> 24) == 0 || (a >> 24) == 127 || (a >> 28) == 0xE || a == 0xFFFFFFFFu;
  }
  if (ip.b[0] == 0xFF) return true;  // multicast
  for (int i = 0; i < 15; i++)
    if (ip.b[i]) return false;
  return ip.b[15] <= 1;  // :: and ::1
}

// The adapter's address of ip's family for a wildcard (0.0.0.0 or ::).
bool PickLocal(Adapter* a, bool v4, wire::IpAddr* out) {
  for (const auto& x : a->addrs())
    if (x.IsV4() == v4) {
      *out = x;
      return true;
    }
  return false;
}

}  // namespace

// ---- connector ----------------------------------------------------------------------------------------

Connector::Connector(Adapter* a, std::shared_ptr<OverlappedFile> f) : adapter_(a), ov_(std::move(f)) {
  adapter_->AddRef();
}

Connector::~Connector() {
  ov_.CancelAll();  // a pending Connect / Accept is abandoned (its on_cancel)
  {
    roce::engine::EngineLock l(&adapter_->eng().mu());
    if (waiting_on_) waiting_on_->Forget(this);
    if (state_ == State::kResolving) adapter_->RemoveResolving(this);
    ForgetConn();  // the CM disconnects / rejects as needed
    Unbind();
    DetachQp();
  }
  adapter_->Release();
}

void Connector::Unbind() {
  if (port_bound_) {
    adapter_->eng().cm().UnbindPort(local_ip_, local_port_);
    port_bound_ = false;
  }
}

void Connector::DetachQp() {
  if (qp_ && qp_->connector() == this) qp_->SetConnector(nullptr);
  qp_ = nullptr;
}

void Connector::ForgetConn() {
  if (conn_ == cm::kNoConn) return;
  adapter_->RemoveConnector(conn_);
  adapter_->eng().cm().Release(conn_, adapter_->eng().NowNs());
  conn_ = cm::kNoConn;
}

HRESULT Connector::QueryInterface(REFIID riid, void** ppv) {
  if (!ppv) return E_POINTER;
  if (riid == IID_IUnknown || riid == IID_IND2Overlapped || riid == IID_IND2Connector) {
    *ppv = static_cast<IND2Connector*>(this);
    AddRef();
    return S_OK;
  }
  *ppv = nullptr;
  return E_NOINTERFACE;
}

HRESULT Connector::CancelOverlappedRequests() {
  // Every pending request completes ND_CANCELED; a connection attempt being
  // made (Connect) or answered (Accept) is abandoned (their on_cancel). An
  // established connection is not touched (NotifyDisconnect does not flush).
  return ov_.CancelAll();
}

HRESULT Connector::Bind(const sockaddr* addr, ULONG len) {
  wire::IpAddr ip;
  uint16_t port;
  if (!FromSockaddr(addr, len, &ip, &port)) return ND_INVALID_PARAMETER_1;
  roce::engine::EngineLock l(&adapter_->eng().mu());
  if (port_bound_ || state_ != State::kIdle) return STATUS_ADDRESS_ALREADY_ASSOCIATED;
  // A connection leaves from one address: a wildcard picks the adapter's.
  if (IsAnyV4(ip) || ip == wire::IpAddr{}) {
    if (!PickLocal(adapter_, ip.IsV4(), &ip)) return ND_INVALID_ADDRESS;
  }
  if (!adapter_->HasAddress(ip)) return ND_INVALID_ADDRESS;
  auto b = adapter_->eng().cm().BindPort(ip, port);
  if (!b.ok()) return BindStatus(b.status());
  local_ip_ = ip;
  local_port_ = *b;
  port_bound_ = true;
  state_ = State::kBound;
  return ND_SUCCESS;
}

HRESULT Connector::Connect(IUnknown* qpu, const sockaddr* dest, ULONG len, ULONG in_rl, ULONG out_rl,
                           const VOID* pd, ULONG pd_len, OVERLAPPED* ov) {
  if (!ov) return ND_INVALID_PARAMETER_8;
  auto* qp = OursOf<QueuePair, IND2QueuePair>(qpu, IID_IND2QueuePair, adapter_);
  if (!qp) return ND_INVALID_PARAMETER_1;
  wire::IpAddr peer;
  uint16_t peer_port;
  if (!FromSockaddr(dest, len, &peer, &peer_port)) return ND_INVALID_PARAMETER_2;
  if (pd_len && !pd) return ND_ACCESS_VIOLATION;
  // Checked before anything changes: the same connector then works with a
  // legal size.
  if (pd_len > Limits::kMaxCallerData) return ND_INVALID_BUFFER_SIZE;
  in_rl = std::min<ULONG>(in_rl, Limits::kMaxReadLimit);
  out_rl = std::min<ULONG>(out_rl, Limits::kMaxReadLimit);
  roce::engine::EngineLock l(&adapter_->eng().mu());
  const bool retry = (state_ == State::kRejected || state_ == State::kFailed) && retry_ok_;
  if (state_ != State::kIdle && state_ != State::kBound && !retry) return ND_CONNECTION_ACTIVE;
  if ((qp->connector() && qp->connector() != this) || qp->rc_qp()->state() != rc::QpState::kInit)
    return ND_CONNECTION_ACTIVE;
  if (BadDestination(peer, peer_port)) return STATUS_BAD_NETWORK_NAME;
  wire::IpAddr local;
  if (port_bound_) {
    local = local_ip_;
    if (local.IsV4() != peer.IsV4()) return ND_INVALID_ADDRESS;
  } else if (!PickLocal(adapter_, peer.IsV4(), &local)) {
    return ND_INVALID_ADDRESS;
  }
  if (!adapter_->HasAddress(peer) && !OnLink(*adapter_, peer)) return ND_NETWORK_UNREACHABLE;
  if (!port_bound_) {  // an ephemeral port now: GetLocalAddress works while connecting
    auto b = adapter_->eng().cm().BindPort(local, 0);
    if (!b.ok()) return BindStatus(b.status());
    local_ip_ = local;
    local_port_ = *b;
    port_bound_ = true;
  }
  if (retry) ForgetConn();
  const AdapterConfig& cfg = adapter_->config();
  cm::ConnectParams& p = connect_;
  p = cm::ConnectParams{};
  p.qpn = qp->rc_qp()->qpn();
  p.local_ip = local;
  p.peer_ip = peer;
  p.local_port = local_port_;
  p.peer_port = peer_port;
  p.private_data.assign(static_cast<const uint8_t*>(pd), static_cast<const uint8_t*>(pd) + pd_len);
  p.responder_resources = static_cast<uint8_t>(in_rl);
  p.initiator_depth = static_cast<uint8_t>(out_rl);
  p.path_mtu = PathMtu(adapter_->eng());
  // How often the peer retries our RNR NAKs. A queue pair on an SRQ asks for
  // forever (7): a Send that finds the SRQ empty must not fail the
  // connection (IND2Adapter::CreateQueuePairWithSrq).
  p.rnr_retry = qp->has_srq() ? 7 : cfg.rnr_retry;
  p.min_rnr_timer = cfg.rnr_timer;   // the wait our RNR NAKs ask for
  p.defer_rtu = true;                // CompleteConnect sends the RTU; Reject may refuse the REP
  p.keep_qp_on_failure = true;       // a refused attempt leaves the QP as it was
  qp_ = qp;
  qp->SetConnector(this);
  state_ = State::kResolving;
  retry_ok_ = have_peer_limits_ = peer_disconnected_ = false;
  const uint64_t now = adapter_->eng().NowNs();
  resolve_deadline_ = now + kResolveTimeoutNs;
  const HRESULT h = ov_.Pend(
      ov,
      [this] {
        // Cancelled (CancelOverlappedRequests, or the connector going away):
        // the attempt is abandoned; the peer hears a REJ (timeout).
        roce::engine::EngineLock lk(&adapter_->eng().mu());
        switch (state_) {
          case State::kResolving:
            adapter_->RemoveResolving(this);
            retry_ok_ = true;
            break;
          case State::kConnecting:
            adapter_->eng().cm().Disconnect(conn_, adapter_->eng().NowNs()).IgnoreError();
            retry_ok_ = true;  // the QP is still in Init
            break;
          case State::kConnected:  // the REP came meanwhile: refused
            adapter_->eng().cm().Disconnect(conn_, adapter_->eng().NowNs()).IgnoreError();
            break;
          default:
            return;
        }
        state_ = State::kFailed;
        DetachQp();
        adapter_->Kick();
      },
      kTagConnect);
  // The peer's MAC comes from ARP/NDP without blocking the caller: the first
  // lookup step now, later ones on the engine's passes (Adapter::OnPoll).
  if (!AdvanceResolve(now)) adapter_->AddResolving(this);
  adapter_->Kick();
  return h;
}

bool Connector::AdvanceResolve(uint64_t now) {
  if (state_ != State::kResolving) return true;
  const neighbor::LookupResult r = adapter_->eng().LookupNeighbor(connect_.peer_ip);
  HRESULT fail = ND_SUCCESS;
  if (r.status == neighbor::ResolveStatus::kResolved) {
    connect_.peer_mac = r.mac;
    auto c = adapter_->eng().cm().Connect(connect_, now);
    if (c.ok()) {
      conn_ = *c;
      adapter_->AddConnector(conn_, this);
      state_ = State::kConnecting;
      connect_.private_data.clear();
      return true;
    }
    fail = ND_INSUFFICIENT_RESOURCES;
  } else if (r.status == neighbor::ResolveStatus::kPending && now < resolve_deadline_) {
    return false;
  } else {
    fail = r.status == neighbor::ResolveStatus::kNoResources ? ND_INSUFFICIENT_RESOURCES : ND_HOST_UNREACHABLE;
  }
  // Failed: the connector and the QP may try again.
  state_ = State::kFailed;
  retry_ok_ = true;
  DetachQp();
  ov_.CompleteTagged(kTagConnect, fail);
  return true;
}

HRESULT Connector::CompleteConnect(OVERLAPPED* ov) {
  if (!ov) return ND_INVALID_PARAMETER_1;
  HRESULT result;
  {
    roce::engine::EngineLock l(&adapter_->eng().mu());
    if (state_ == State::kAborted && conn_ != cm::kNoConn) {
      // The passive side gave up before we completed: its REP timed out (REJ
      // timeout) or it abandoned the connection (REJ / DREQ).
      const cm::ConnInfo* i = adapter_->eng().cm().Info(conn_);
      if (i && i->active) return i->reject_reason == wire::cm::kRejTimeout ? ND_IO_TIMEOUT : ND_CONNECTION_ABORTED;
    }
    if (state_ != State::kConnected) return ND_CONNECTION_INVALID;
    const auto s = adapter_->eng().cm().CompleteConnect(conn_, adapter_->eng().NowNs());
    result = s.ok() ? ND_SUCCESS : ND_IO_TIMEOUT;
    state_ = s.ok() ? State::kEstablished : State::kFailed;
    adapter_->Kick();
  }
  const HRESULT h = ov_.Pend(ov, {}, kTagComplete);
  ov_.Complete(ov, result);
  return h;
}

HRESULT Connector::Accept(IUnknown* qpu, ULONG in_rl, ULONG out_rl, const VOID* pd, ULONG pd_len,
                          OVERLAPPED* ov) {
  if (!ov) return ND_INVALID_PARAMETER_6;
  auto* qp = OursOf<QueuePair, IND2QueuePair>(qpu, IID_IND2QueuePair, adapter_);
  if (!qp) return ND_INVALID_PARAMETER_1;
  if (pd_len && !pd) return ND_ACCESS_VIOLATION;
  if (pd_len > Limits::kMaxCalleeData) return ND_INVALID_BUFFER_SIZE;  // the connector stays usable
  roce::engine::EngineLock l(&adapter_->eng().mu());
  if (state_ == State::kAborted) return ND_CONNECTION_ABORTED;
  if (state_ != State::kRequested) return ND_CONNECTION_INVALID;
  if (qp->connector() || qp->rc_qp()->state() != rc::QpState::kInit) return ND_CONNECTION_ACTIVE;
  const cm::ConnInfo* info = adapter_->eng().cm().Info(conn_);
  if (!info || info->state != cm::ConnState::kReqReceived) {
    state_ = State::kAborted;
    return ND_CONNECTION_ABORTED;
  }
  const AdapterConfig& cfg = adapter_->config();
  cm::AcceptParams p;
  p.qpn = qp->rc_qp()->qpn();
  p.private_data.assign(static_cast<const uint8_t*>(pd), static_cast<const uint8_t*>(pd) + pd_len);
  // Clamped silently to ours here and to the peer's offer by the CM.
  p.responder_resources = static_cast<uint8_t>(std::min<ULONG>(in_rl, Limits::kMaxReadLimit));
  p.initiator_depth = static_cast<uint8_t>(std::min<ULONG>(out_rl, Limits::kMaxReadLimit));
  p.max_path_mtu = PathMtu(adapter_->eng());
  p.rnr_retry = qp->has_srq() ? 7 : cfg.rnr_retry;  // as in Connect
  p.min_rnr_timer = cfg.rnr_timer;
  const auto s = adapter_->eng().cm().Accept(conn_, p, adapter_->eng().NowNs());
  if (!s.ok()) return ND_INSUFFICIENT_RESOURCES;
  qp_ = qp;
  qp->SetConnector(this);
  state_ = State::kAccepting;
  adapter_->Kick();
  return ov_.Pend(
      ov,
      [this] {
        // Cancelled: the connection is abandoned (the active side hears a DREQ).
        roce::engine::EngineLock lk(&adapter_->eng().mu());
        if (state_ != State::kAccepting) return;
        adapter_->eng().cm().Disconnect(conn_, adapter_->eng().NowNs()).IgnoreError();
        state_ = State::kFailed;
        DetachQp();
        adapter_->Kick();
      },
      kTagAccept);
}

HRESULT Connector::Reject(const VOID* pd, ULONG pd_len) {
  if (pd_len && !pd) return ND_ACCESS_VIOLATION;
  if (pd_len > Limits::kMaxCalleeData) return ND_INVALID_BUFFER_SIZE;  // the connector stays usable
  roce::engine::EngineLock l(&adapter_->eng().mu());
  if (state_ == State::kAborted) return ND_CONNECTION_ABORTED;
  if (state_ != State::kRequested && state_ != State::kConnected) return ND_CONNECTION_INVALID;
  std::vector<uint8_t> data(static_cast<const uint8_t*>(pd), static_cast<const uint8_t*>(pd) + pd_len);
  const auto s = adapter_->eng().cm().Reject(conn_, data, adapter_->eng().NowNs());
  if (!s.ok()) {
    state_ = State::kAborted;
    return ND_CONNECTION_ABORTED;
  }
  state_ = State::kRejected;
  DetachQp();
  adapter_->Kick();
  return ND_SUCCESS;
}

HRESULT Connector::GetReadLimits(ULONG* in_rl, ULONG* out_rl) {
  roce::engine::EngineLock l(&adapter_->eng().mu());
  if (conn_ == cm::kNoConn || !have_peer_limits_) return ND_CONNECTION_INVALID;
  const cm::ConnInfo* i = adapter_->eng().cm().Info(conn_);
  if (!i) return ND_UNSUCCESSFUL;
  // What the peer asked for, from our side: its initiator depth is our
  // inbound limit, its responder resources our outbound one; clamped to ours.
  if (in_rl) *in_rl = std::min<ULONG>(i->peer_initiator_depth, Limits::kMaxReadLimit);
  if (out_rl) *out_rl = std::min<ULONG>(i->peer_responder_resources, Limits::kMaxReadLimit);
  return ND_SUCCESS;
}

HRESULT Connector::GetPrivateData(VOID* pd, ULONG* len) {
  if (!len) return ND_INVALID_PARAMETER_2;
  roce::engine::EngineLock l(&adapter_->eng().mu());
  // The peer's REQ (passive), REP or REJ (active): the CM's fields as they
  // are on the wire (56, 196 or 148 bytes; the sender's data, then zeros).
  if (conn_ == cm::kNoConn || (!have_peer_limits_ && state_ != State::kRejected)) return ND_CONNECTION_INVALID;
  const cm::ConnInfo* i = adapter_->eng().cm().Info(conn_);
  if (!i) return ND_UNSUCCESSFUL;
  const ULONG have = static_cast<ULONG>(i->private_data.size());
  if (!pd || *len < have) {
    if (pd && *len) std::memcpy(pd, i->private_data.data(), std::min(*len, have));
    *len = have;
    return ND_BUFFER_OVERFLOW;
  }
  std::memcpy(pd, i->private_data.data(), have);
  *len = have;
  return ND_SUCCESS;
}

HRESULT Connector::GetLocalAddress(sockaddr* addr, ULONG* len) {
  if (!len) return ND_INVALID_PARAMETER_2;
  roce::engine::EngineLock l(&adapter_->eng().mu());
  if (conn_ != cm::kNoConn) {
    const cm::ConnInfo* i = adapter_->eng().cm().Info(conn_);
    if (i) return CopyAddress(i->local_ip, i->local_port, addr, len);
  }
  if (port_bound_) return CopyAddress(local_ip_, local_port_, addr, len);
  return ND_CONNECTION_INVALID;
}

HRESULT Connector::GetPeerAddress(sockaddr* addr, ULONG* len) {
  if (!len) return ND_INVALID_PARAMETER_2;
  roce::engine::EngineLock l(&adapter_->eng().mu());
  if (conn_ == cm::kNoConn || !have_peer_limits_) return ND_CONNECTION_INVALID;
  const cm::ConnInfo* i = adapter_->eng().cm().Info(conn_);
  if (!i) return ND_CONNECTION_INVALID;
  return CopyAddress(i->peer_ip, i->peer_port, addr, len);
}

HRESULT Connector::NotifyDisconnect(OVERLAPPED* ov) {
  if (!ov) return ND_INVALID_PARAMETER_1;
  roce::engine::EngineLock l(&adapter_->eng().mu());
  switch (state_) {
    case State::kConnected:
    case State::kAccepting:
    case State::kEstablished:
    case State::kDisconnecting:
    case State::kDisconnected:
      break;
    case State::kAborted:
      if (peer_disconnected_) break;
      return ND_CONNECTION_INVALID;
    default:
      return ND_CONNECTION_INVALID;  // never connected
  }
  // Completes when the connection goes down; only that (no flush).
  const HRESULT h = ov_.Pend(ov, {}, kTagNotifyDisconnect);
  if (state_ == State::kDisconnected || peer_disconnected_) ov_.Complete(ov, STATUS_CONNECTION_DISCONNECTED);
  return h;
}

HRESULT Connector::Disconnect(OVERLAPPED* ov) {
  if (!ov) return ND_INVALID_PARAMETER_1;
  roce::engine::EngineLock l(&adapter_->eng().mu());
  if (qp_gone_) return ND_CANCELED;  // the QP was released (and disconnected then)
  switch (state_) {
    case State::kDisconnected: {  // the peer was first: nothing left to do
      const HRESULT h = ov_.Pend(ov, {}, kTagDisconnect);
      ov_.Complete(ov, ND_SUCCESS);
      return h;
    }
    case State::kDisconnecting:  // completes with the one under way
      return ov_.Pend(ov, {}, kTagDisconnect);
    case State::kEstablished:
    case State::kConnected:  // REP in, not completed: refused
      break;
    default:
      return ND_CONNECTION_INVALID;
  }
  // The CM moves the QP to Error: its outstanding requests complete ND_CANCELED.
  const bool refuse = state_ == State::kConnected;
  const auto s = adapter_->eng().cm().Disconnect(conn_, adapter_->eng().NowNs());
  if (!s.ok()) return ND_CONNECTION_INVALID;
  adapter_->Kick();
  if (refuse) {
    state_ = State::kDisconnected;
    const HRESULT h = ov_.Pend(ov, {}, kTagDisconnect);
    ov_.Complete(ov, ND_SUCCESS);
    ov_.CompleteAllTagged(kTagNotifyDisconnect, STATUS_CONNECTION_DISCONNECTED);
    return h;
  }
  state_ = State::kDisconnecting;
  return ov_.Pend(ov, {}, kTagDisconnect);
}

void Connector::OnEvent(cm::Event e) {
  switch (e) {
    case cm::Event::kRepReceived:  // active: the peer accepted
      if (state_ == State::kConnecting) {
        state_ = State::kConnected;
        have_peer_limits_ = true;
        ov_.CompleteTagged(kTagConnect, ND_SUCCESS);
      }
      break;
    case cm::Event::kEstablished:
      if (state_ == State::kAccepting) {
        state_ = State::kEstablished;
        ov_.CompleteTagged(kTagAccept, ND_SUCCESS);
      }
      break;
    case cm::Event::kRejected:
      switch (state_) {
        case State::kConnecting:  // no listener, a full backlog, or the peer's Reject
          state_ = State::kRejected;
          retry_ok_ = true;  // the QP is still in Init
          have_peer_limits_ = false;
          DetachQp();
          ov_.CompleteTagged(kTagConnect, ND_CONNECTION_REFUSED);
          break;
        case State::kConnected:  // the passive side gave up before CompleteConnect
        case State::kRequested:  // the active side abandoned its request
          state_ = State::kAborted;
          break;
        case State::kAccepting:  // the active side refused our acceptance
          state_ = State::kRejected;
          ov_.CompleteTagged(kTagAccept, ND_CONNECTION_REFUSED);
          break;
        default:
          break;
      }
      break;
    case cm::Event::kTimedOut:
      if (state_ == State::kConnecting) {
        state_ = State::kFailed;
        retry_ok_ = true;
        DetachQp();
        ov_.CompleteTagged(kTagConnect, ND_IO_TIMEOUT);
      } else if (state_ == State::kAccepting) {
        state_ = State::kFailed;
        ov_.CompleteTagged(kTagAccept, ND_IO_TIMEOUT);
      }
      break;
    case cm::Event::kDisconnected:  // the peer's DREQ (the CM flushed the QP)
      peer_disconnected_ = true;
      if (state_ == State::kAccepting) ov_.CompleteTagged(kTagAccept, ND_CONNECTION_ABORTED);
      state_ = state_ == State::kConnected ? State::kAborted : State::kDisconnected;
      ov_.CompleteAllTagged(kTagNotifyDisconnect, STATUS_CONNECTION_DISCONNECTED);
      ov_.CompleteAllTagged(kTagDisconnect, ND_SUCCESS);
      break;
    case cm::Event::kDisconnectDone:  // ours answered (DREP, crossed DREQ) or timed out
      if (state_ == State::kDisconnecting) state_ = State::kDisconnected;
      if (const cm::ConnInfo* i = adapter_->eng().cm().Info(conn_); i && i->peer_disconnected)
        peer_disconnected_ = true;
      ov_.CompleteAllTagged(kTagNotifyDisconnect, STATUS_CONNECTION_DISCONNECTED);
      ov_.CompleteAllTagged(kTagDisconnect, ND_SUCCESS);
      break;
    case cm::Event::kClosed:
      break;
  }
}

HRESULT Connector::CanTakeRequest() const {
  if (waiting_on_) return ND_CONNECTION_ACTIVE;  // already waiting for one
  switch (state_) {
    case State::kIdle:
      return ND_SUCCESS;
    case State::kBound:
    case State::kRejected:
    case State::kAborted:
    case State::kFailed:
    case State::kDisconnected:
      return ND_INVALID_DEVICE_STATE;  // used before: a fresh connector takes a request
    default:
      return ND_CONNECTION_ACTIVE;
  }
}

void Connector::TakeRequest(const cm::ConnRequest& r) {
  request_ = r;
  conn_ = r.id;
  adapter_->AddConnector(conn_, this);
  state_ = State::kRequested;
  have_peer_limits_ = true;
}

void Connector::QpReleased() {
  // The application released the QP (engine lock held; the QP is going away).
  qp_gone_ = true;
  const uint64_t now = adapter_->eng().NowNs();
  switch (state_) {
    case State::kResolving:
      adapter_->RemoveResolving(this);
      state_ = State::kFailed;
      ov_.CompleteTagged(kTagConnect, ND_CANCELED);
      break;
    case State::kConnecting:
    case State::kConnected:
      adapter_->eng().cm().Disconnect(conn_, now).IgnoreError();  // REJ to the peer
      state_ = State::kFailed;
      ov_.CompleteTagged(kTagConnect, ND_CANCELED);
      break;
    case State::kAccepting:
      adapter_->eng().cm().Disconnect(conn_, now).IgnoreError();
      state_ = State::kFailed;
      ov_.CompleteTagged(kTagAccept, ND_CANCELED);
      break;
    case State::kEstablished:  // releasing a connected QP disconnects it
      adapter_->eng().cm().Disconnect(conn_, now).IgnoreError();
      state_ = State::kDisconnecting;
      break;
    default:
      break;
  }
  qp_ = nullptr;
  adapter_->Kick();
}

// ---- listener ---------------------------------------------------------------------------------------------

Listener::Listener(Adapter* a, std::shared_ptr<OverlappedFile> f) : adapter_(a), ov_(std::move(f)) {
  adapter_->AddRef();
}

Listener::~Listener() {
  ov_.CancelAll();  // pending GetConnectionRequests: ND_CANCELED (the listen request was closed)
  {
    roce::engine::EngineLock l(&adapter_->eng().mu());
    for (Waiter& w : waiters_) w.connector->SetWaitingOn(nullptr);
    waiters_.clear();
    if (listening_) {
      adapter_->RemoveListener(lid_);
      // Requests not handed to a connector yet are rejected; new ones find no
      // listener (ND_CONNECTION_REFUSED at the connecting side).
      adapter_->eng().cm().CloseListener(lid_, adapter_->eng().NowNs());
      adapter_->Kick();
    }
    if (bound_) adapter_->eng().cm().UnbindPort(ip_, port_);
  }
  adapter_->Release();
}

void Listener::Forget(Connector* c) {
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (it->connector == c) {
      ov_.Complete(it->ov, ND_CANCELED);
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
}

HRESULT Listener::QueryInterface(REFIID riid, void** ppv) {
  if (!ppv) return E_POINTER;
  if (riid == IID_IUnknown || riid == IID_IND2Overlapped || riid == IID_IND2Listener) {
    *ppv = static_cast<IND2Listener*>(this);
    AddRef();
    return S_OK;
  }
  *ppv = nullptr;
  return E_NOINTERFACE;
}

HRESULT Listener::CancelOverlappedRequests() {
  {
    roce::engine::EngineLock l(&adapter_->eng().mu());
    for (Waiter& w : waiters_) w.connector->SetWaitingOn(nullptr);
    waiters_.clear();
  }
  return ov_.CancelAll();
}

HRESULT Listener::Bind(const sockaddr* addr, ULONG len) {
  wire::IpAddr ip;
  uint16_t port;
  if (!FromSockaddr(addr, len, &ip, &port)) return ND_INVALID_PARAMETER_1;
  if (IsAnyV4(ip)) ip = wire::IpAddr{};  // 0.0.0.0 and :: both mean every address
  roce::engine::EngineLock l(&adapter_->eng().mu());
  if (bound_) return STATUS_ADDRESS_ALREADY_ASSOCIATED;
  if (!(ip == wire::IpAddr{}) && !adapter_->HasAddress(ip)) return ND_INVALID_ADDRESS;
  auto b = adapter_->eng().cm().BindPort(ip, port);
  if (!b.ok()) return BindStatus(b.status());
  ip_ = ip;
  any_v4_ = addr->sa_family == AF_INET;
  port_ = *b;
  bound_ = true;
  return ND_SUCCESS;
}

HRESULT Listener::Listen(ULONG backlog) {
  roce::engine::EngineLock l(&adapter_->eng().mu());
  if (!bound_ || listening_) return ND_INVALID_DEVICE_STATE;
  // 0: no limit (the CM's queue is bounded only by memory; 65536 pending).
  auto li = adapter_->eng().cm().Listen(ip_, port_, backlog ? backlog : 65536);
  if (!li.ok()) return ND_INSUFFICIENT_RESOURCES;
  lid_ = *li;
  listening_ = true;
  adapter_->AddListener(lid_, this);
  return ND_SUCCESS;
}

HRESULT Listener::GetLocalAddress(sockaddr* addr, ULONG* len) {
  if (!len) return ND_INVALID_PARAMETER_2;
  roce::engine::EngineLock l(&adapter_->eng().mu());
  if (!listening_) return ND_INVALID_DEVICE_STATE;
  wire::IpAddr ip = ip_;
  // Bound to every address: the wildcard of the family it was bound with.
  if (ip == wire::IpAddr{} && any_v4_) ip = wire::IpAddr::FromV4(0);
  return CopyAddress(ip, port_, addr, len);
}

HRESULT Listener::GetConnectionRequest(IUnknown* cu, OVERLAPPED* ov) {
  if (!ov) return ND_INVALID_PARAMETER_2;
  auto* c = OursOf<Connector, IND2Connector>(cu, IID_IND2Connector, adapter_);
  if (!c) return ND_INVALID_PARAMETER_1;
  roce::engine::EngineLock l(&adapter_->eng().mu());
  if (!listening_) return ND_INVALID_DEVICE_STATE;
  if (const HRESULT ok = c->CanTakeRequest(); ok != ND_SUCCESS) return ok;
  // The connector is not AddRef'd (a reference dropped under the engine
  // lock could be the last one): a connector released while it waits takes
  // itself off the list (Forget).
  waiters_.push_back({c, ov});
  c->SetWaitingOn(this);
  const HRESULT h = ov_.Pend(ov, [this, ov] {
    roce::engine::EngineLock lk(&adapter_->eng().mu());
    for (auto it = waiters_.begin(); it != waiters_.end(); ++it)
      if (it->ov == ov) {
        it->connector->SetWaitingOn(nullptr);
        waiters_.erase(it);
        break;
      }
  });
  Serve();
  return h;
}

void Listener::OnRequest() { Serve(); }

void Listener::Serve() {
  cm::ConnRequest r;
  while (!waiters_.empty() && adapter_->eng().cm().GetRequest(lid_, &r)) {
    Waiter w = waiters_.front();
    waiters_.pop_front();
    w.connector->SetWaitingOn(nullptr);
    w.connector->TakeRequest(r);
    ov_.Complete(w.ov, ND_SUCCESS);
  }
}

}  // namespace roce::nd2
