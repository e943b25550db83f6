// IND2Connector and IND2Listener over the connection manager (stack/cm).
#include <algorithm>
#include <cstring>

#include "nd2api/src/nd2.h"

namespace roce::nd2 {

namespace {

template <typename T, typename I>
T* OursOf(IUnknown* u, REFIID iid, Adapter* a) {
  if (!u) return nullptr;
  I* i = nullptr;
  if (u->QueryInterface(iid, reinterpret_cast<void**>(&i)) != S_OK || !i) return nullptr;
  T* t = dynamic_cast<T*>(i);
  i->Release();
  if (!t || t->adapter() != a) return nullptr;
  return t;
}

// 0.0.0.0 and :: both mean "any address" to the CM (all-zero IpAddr).
wire::IpAddr Normalize(const wire::IpAddr& ip) {
  if (ip.IsV4() && ip.V4() == 0) return wire::IpAddr{};
  return ip;
}

HRESULT BindStatus(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kAlreadyExists: return ND_SHARING_VIOLATION;
    case absl::StatusCode::kResourceExhausted: return ND_TOO_MANY_ADDRESSES;
    case absl::StatusCode::kInvalidArgument: return ND_INVALID_ADDRESS;
    default: return ND_UNSUCCESSFUL;
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

}  // namespace

// ---- connector ----------------------------------------------------------------------------------------

Connector::Connector(Adapter* a, std::shared_ptr<OverlappedFile> f) : adapter_(a), ov_(std::move(f)) {
  adapter_->AddRef();
}

Connector::~Connector() {
  ov_.CancelAll();
  QueuePair* qp = nullptr;
  {
    absl::MutexLock l(&adapter_->eng().mu());
    if (waiting_on_) waiting_on_->Forget(this);
    if (state_ == State::kResolving) adapter_->RemoveResolving(this);
    if (conn_ != cm::kNoConn) {
      adapter_->RemoveConnector(conn_);
      adapter_->eng().cm().Release(conn_, adapter_->eng().NowNs());  // disconnects / rejects as needed
      conn_ = cm::kNoConn;
    }
    Unbind();
    qp = qp_;
    qp_ = nullptr;
    if (qp && qp->connector() == this) qp->SetConnector(nullptr);
  }
  if (qp) qp->Release();
  adapter_->Release();
}

void Connector::Unbind() {
  if (port_bound_) {
    adapter_->eng().cm().UnbindPort(local_ip_, local_port_);
    port_bound_ = false;
  }
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
  // A connection attempt being cancelled is abandoned (the pending Connect's
  // on_cancel releases it).
  return ov_.CancelAll();
}

HRESULT Connector::Bind(const sockaddr* addr, ULONG len) {
  wire::IpAddr ip;
  uint16_t port;
  if (!FromSockaddr(addr, len, &ip, &port)) return ND_INVALID_PARAMETER_1;
  ip = Normalize(ip);
  absl::MutexLock l(&adapter_->eng().mu());
  if (port_bound_ || state_ != State::kIdle) return STATUS_ADDRESS_ALREADY_ASSOCIATED;
  if (ip == wire::IpAddr{}) {
    if (adapter_->addrs().empty()) return ND_INVALID_ADDRESS;
    ip = adapter_->addrs()[0];
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
  if (!FromSockaddr(dest, len, &peer, &peer_port) || peer_port == 0) return ND_INVALID_PARAMETER_2;
  if (pd_len && !pd) return ND_ACCESS_VIOLATION;
  if (pd_len > Limits::kMaxCallerData) return ND_INVALID_BUFFER_SIZE;
  in_rl = std::min<ULONG>(in_rl, Limits::kMaxReadLimit);
  out_rl = std::min<ULONG>(out_rl, Limits::kMaxReadLimit);
  wire::IpAddr local;
  absl::MutexLock l(&adapter_->eng().mu());
  if (state_ != State::kIdle && state_ != State::kBound) return ND_CONNECTION_ACTIVE;
  if (qp->connector() || qp->rc_qp()->state() != rc::QpState::kInit) return ND_CONNECTION_ACTIVE;
  if (port_bound_) {
    local = local_ip_;
    if (local.IsV4() != peer.IsV4()) return ND_INVALID_ADDRESS;
  } else {
    bool found = false;
    for (const auto& a : adapter_->addrs())
      if (a.IsV4() == peer.IsV4()) {
        local = a;
        found = true;
        break;
      }
    if (!found) return ND_INVALID_ADDRESS;
  }
  cm::ConnectParams& p = connect_;
  p = cm::ConnectParams{};
  p.qpn = qp->rc_qp()->qpn();
  p.local_ip = local;
  p.peer_ip = peer;
  p.local_port = port_bound_ ? local_port_ : 0;
  p.peer_port = peer_port;
  p.private_data.assign(static_cast<const uint8_t*>(pd), static_cast<const uint8_t*>(pd) + pd_len);
  p.responder_resources = static_cast<uint8_t>(in_rl);
  p.initiator_depth = static_cast<uint8_t>(out_rl);
  p.path_mtu = PathMtu(adapter_->eng());
  p.defer_rtu = true;  // CompleteConnect sends the RTU; Reject may refuse the REP
  qp->AddRef();
  qp_ = qp;
  qp->SetConnector(this);
  state_ = State::kResolving;
  const uint64_t now = adapter_->eng().NowNs();
  resolve_deadline_ = now + kResolveTimeoutNs;
  // The peer's MAC comes from ARP/NDP without blocking the caller: the first
  // lookup step now, later ones on the engine's passes (Adapter::OnPoll).
  const HRESULT h = ov_.Pend(
      ov,
      [this] {
        // Cancelled: abandon the attempt.
        absl::MutexLock lk(&adapter_->eng().mu());
        if (state_ == State::kResolving) {
          adapter_->RemoveResolving(this);
          state_ = State::kFailed;
        } else if (state_ == State::kConnecting && conn_ != cm::kNoConn) {
          adapter_->eng().cm().Disconnect(conn_, adapter_->eng().NowNs()).IgnoreError();
          state_ = State::kFailed;
        }
      },
      kTagConnect);
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
    fail = c.status().code() == absl::StatusCode::kResourceExhausted ? ND_TOO_MANY_ADDRESSES : ND_UNSUCCESSFUL;
  } else if (r.status == neighbor::ResolveStatus::kPending && now < resolve_deadline_) {
    return false;
  } else {
    fail = r.status == neighbor::ResolveStatus::kNoResources ? ND_INSUFFICIENT_RESOURCES : ND_HOST_UNREACHABLE;
  }
  // Failed: the QP is free for another connector (ours keeps its reference
  // until it goes away: releasing here, under the engine lock, could be the
  // last reference).
  state_ = State::kFailed;
  if (qp_ && qp_->connector() == this) qp_->SetConnector(nullptr);
  ov_.CompleteTagged(kTagConnect, fail);
  return true;
}

HRESULT Connector::CompleteConnect(OVERLAPPED* ov) {
  if (!ov) return ND_INVALID_PARAMETER_1;
  HRESULT result;
  {
    absl::MutexLock l(&adapter_->eng().mu());
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
  if (pd_len > Limits::kMaxCalleeData) return ND_INVALID_BUFFER_SIZE;
  absl::MutexLock l(&adapter_->eng().mu());
  if (state_ != State::kRequested) return ND_CONNECTION_INVALID;
  if (qp->connector() || qp->rc_qp()->state() != rc::QpState::kInit) return ND_CONNECTION_ACTIVE;
  const cm::ConnInfo* info = adapter_->eng().cm().Info(conn_);
  if (!info || info->state != cm::ConnState::kReqReceived) {
    state_ = State::kFailed;
    return ND_CONNECTION_ABORTED;
  }
  cm::AcceptParams p;
  p.qpn = qp->rc_qp()->qpn();
  p.private_data.assign(static_cast<const uint8_t*>(pd), static_cast<const uint8_t*>(pd) + pd_len);
  p.responder_resources = static_cast<uint8_t>(std::min<ULONG>(in_rl, Limits::kMaxReadLimit));
  p.initiator_depth = static_cast<uint8_t>(std::min<ULONG>(out_rl, Limits::kMaxReadLimit));
  p.max_path_mtu = PathMtu(adapter_->eng());
  const auto s = adapter_->eng().cm().Accept(conn_, p, adapter_->eng().NowNs());
  if (!s.ok()) return ND_UNSUCCESSFUL;
  qp->AddRef();
  qp_ = qp;
  qp->SetConnector(this);
  state_ = State::kAccepting;
  adapter_->Kick();
  return ov_.Pend(ov, {}, kTagAccept);
}

HRESULT Connector::Reject(const VOID* pd, ULONG pd_len) {
  if (pd_len && !pd) return ND_ACCESS_VIOLATION;
  if (pd_len > Limits::kMaxCalleeData) return ND_INVALID_BUFFER_SIZE;
  absl::MutexLock l(&adapter_->eng().mu());
  if (state_ != State::kRequested && state_ != State::kConnected) return ND_CONNECTION_INVALID;
  std::vector<uint8_t> data(static_cast<const uint8_t*>(pd), static_cast<const uint8_t*>(pd) + pd_len);
  const auto s = adapter_->eng().cm().Reject(conn_, data, adapter_->eng().NowNs());
  if (!s.ok()) {
    state_ = State::kFailed;
    return ND_CONNECTION_ABORTED;
  }
  state_ = State::kRejected;
  adapter_->Kick();
  return ND_SUCCESS;
}

HRESULT Connector::GetReadLimits(ULONG* in_rl, ULONG* out_rl) {
  absl::MutexLock l(&adapter_->eng().mu());
  if (conn_ == cm::kNoConn) return ND_CONNECTION_INVALID;
  const cm::ConnInfo* i = adapter_->eng().cm().Info(conn_);
  if (!i) return ND_UNSUCCESSFUL;
  // What the peer asked for, from our side: its initiator depth is our
  // inbound limit, its responder resources our outbound one; clamped.
  if (in_rl) *in_rl = std::min<ULONG>(i->peer_initiator_depth, Limits::kMaxReadLimit);
  if (out_rl) *out_rl = std::min<ULONG>(i->peer_responder_resources, Limits::kMaxReadLimit);
  return ND_SUCCESS;
}

HRESULT Connector::GetPrivateData(VOID* pd, ULONG* len) {
  if (!len) return ND_INVALID_PARAMETER_2;
  absl::MutexLock l(&adapter_->eng().mu());
  if (conn_ == cm::kNoConn) return ND_CONNECTION_INVALID;
  const cm::ConnInfo* i = adapter_->eng().cm().Info(conn_);
  if (!i) return ND_UNSUCCESSFUL;
  const ULONG have = static_cast<ULONG>(i->private_data.size());
  if (!pd || *len < have) {
    if (pd && *len) std::memcpy(pd, i->private_data.data(), *len);
    *len = have;
    return ND_BUFFER_OVERFLOW;
  }
  std::memcpy(pd, i->private_data.data(), have);
  *len = have;
  return ND_SUCCESS;
}

HRESULT Connector::GetLocalAddress(sockaddr* addr, ULONG* len) {
  absl::MutexLock l(&adapter_->eng().mu());
  if (conn_ != cm::kNoConn) {
    const cm::ConnInfo* i = adapter_->eng().cm().Info(conn_);
    if (i) return CopyAddress(i->local_ip, i->local_port, addr, len);
  }
  if (port_bound_) return CopyAddress(local_ip_, local_port_, addr, len);
  return ND_CONNECTION_INVALID;
}

HRESULT Connector::GetPeerAddress(sockaddr* addr, ULONG* len) {
  absl::MutexLock l(&adapter_->eng().mu());
  if (conn_ == cm::kNoConn) return ND_CONNECTION_INVALID;
  const cm::ConnInfo* i = adapter_->eng().cm().Info(conn_);
  if (!i) return ND_CONNECTION_INVALID;
  return CopyAddress(i->peer_ip, i->peer_port, addr, len);
}

HRESULT Connector::NotifyDisconnect(OVERLAPPED* ov) {
  if (!ov) return ND_INVALID_PARAMETER_1;
  absl::MutexLock l(&adapter_->eng().mu());
  if (state_ != State::kConnected && state_ != State::kEstablished && state_ != State::kDisconnecting &&
      state_ != State::kDisconnected)
    return ND_CONNECTION_INVALID;
  const HRESULT h = ov_.Pend(ov, {}, kTagNotifyDisconnect);
  if (peer_disconnected_) ov_.Complete(ov, ND_SUCCESS);
  return h;
}

HRESULT Connector::Disconnect(OVERLAPPED* ov) {
  if (!ov) return ND_INVALID_PARAMETER_1;
  absl::MutexLock l(&adapter_->eng().mu());
  if (state_ == State::kDisconnected) {
    const HRESULT h = ov_.Pend(ov, {}, kTagDisconnect);
    ov_.Complete(ov, ND_SUCCESS);
    return h;
  }
  if (state_ != State::kEstablished && state_ != State::kConnected) return ND_CONNECTION_INVALID;
  // The CM moves the QP to Error: its outstanding requests complete ND_CANCELED.
  const auto s = adapter_->eng().cm().Disconnect(conn_, adapter_->eng().NowNs());
  if (!s.ok()) return ND_CONNECTION_INVALID;
  state_ = State::kDisconnecting;
  adapter_->Kick();
  return ov_.Pend(ov, {}, kTagDisconnect);
}

void Connector::OnEvent(cm::Event e) {
  switch (e) {
    case cm::Event::kRepReceived:  // active: the peer accepted
      if (state_ == State::kConnecting) {
        state_ = State::kConnected;
        ov_.CompleteTagged(kTagConnect, ND_SUCCESS);
      }
      break;
    case cm::Event::kEstablished:
      if (state_ == State::kAccepting) {
        state_ = State::kEstablished;
        ov_.CompleteTagged(kTagAccept, ND_SUCCESS);
      } else if (state_ == State::kConnecting) {  // (no deferred RTU)
        state_ = State::kEstablished;
        ov_.CompleteTagged(kTagConnect, ND_SUCCESS);
      }
      break;
    case cm::Event::kRejected: {
      const bool was_connecting = state_ == State::kConnecting;
      state_ = State::kRejected;
      if (was_connecting) ov_.CompleteTagged(kTagConnect, ND_CONNECTION_REFUSED);
      ov_.CompleteTagged(kTagAccept, ND_CONNECTION_ABORTED);
      break;
    }
    case cm::Event::kTimedOut:
      state_ = State::kFailed;
      ov_.CompleteTagged(kTagConnect, ND_IO_TIMEOUT);
      ov_.CompleteTagged(kTagAccept, ND_IO_TIMEOUT);
      break;
    case cm::Event::kDisconnected:  // the peer's DREQ (the CM flushed the QP)
      peer_disconnected_ = true;
      if (state_ == State::kAccepting) ov_.CompleteTagged(kTagAccept, ND_CONNECTION_ABORTED);
      if (state_ == State::kConnecting) ov_.CompleteTagged(kTagConnect, ND_CONNECTION_REFUSED);
      state_ = State::kDisconnected;
      ov_.CompleteAllTagged(kTagNotifyDisconnect, ND_SUCCESS);
      ov_.CompleteAllTagged(kTagDisconnect, ND_SUCCESS);
      break;
    case cm::Event::kDisconnectDone:
      state_ = State::kDisconnected;
      if (adapter_->eng().cm().Info(conn_) && adapter_->eng().cm().Info(conn_)->peer_disconnected) {
        peer_disconnected_ = true;
        ov_.CompleteAllTagged(kTagNotifyDisconnect, ND_SUCCESS);
      }
      ov_.CompleteAllTagged(kTagDisconnect, ND_SUCCESS);
      break;
    case cm::Event::kClosed:
      break;
  }
}

void Connector::TakeRequest(const cm::ConnRequest& r) {
  request_ = r;
  conn_ = r.id;
  adapter_->AddConnector(conn_, this);
  state_ = State::kRequested;
}

void Connector::QpReleased() {
  if (conn_ != cm::kNoConn &&
      (state_ == State::kEstablished || state_ == State::kConnected || state_ == State::kAccepting)) {
    adapter_->eng().cm().Disconnect(conn_, adapter_->eng().NowNs()).IgnoreError();
    state_ = State::kDisconnecting;
  }
  qp_ = nullptr;
}

// ---- listener ---------------------------------------------------------------------------------------------

Listener::Listener(Adapter* a, std::shared_ptr<OverlappedFile> f) : adapter_(a), ov_(std::move(f)) {
  adapter_->AddRef();
}

Listener::~Listener() {
  ov_.CancelAll();
  {
    absl::MutexLock l(&adapter_->eng().mu());
    for (Waiter& w : waiters_) w.connector->SetWaitingOn(nullptr);
    waiters_.clear();
    if (listening_) {
      adapter_->RemoveListener(lid_);
      adapter_->eng().cm().CloseListener(lid_, adapter_->eng().NowNs());
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
    absl::MutexLock l(&adapter_->eng().mu());
    for (Waiter& w : waiters_) w.connector->SetWaitingOn(nullptr);
    waiters_.clear();
  }
  return ov_.CancelAll();
}

HRESULT Listener::Bind(const sockaddr* addr, ULONG len) {
  wire::IpAddr ip;
  uint16_t port;
  if (!FromSockaddr(addr, len, &ip, &port)) return ND_INVALID_PARAMETER_1;
  ip = Normalize(ip);
  absl::MutexLock l(&adapter_->eng().mu());
  if (bound_) return STATUS_ADDRESS_ALREADY_ASSOCIATED;
  if (!(ip == wire::IpAddr{}) && !adapter_->HasAddress(ip)) return ND_INVALID_ADDRESS;
  auto b = adapter_->eng().cm().BindPort(ip, port);
  if (!b.ok()) return BindStatus(b.status());
  ip_ = ip;
  port_ = *b;
  bound_ = true;
  return ND_SUCCESS;
}

HRESULT Listener::Listen(ULONG backlog) {
  absl::MutexLock l(&adapter_->eng().mu());
  if (!bound_ || listening_) return ND_INVALID_DEVICE_STATE;
  auto li = adapter_->eng().cm().Listen(ip_, port_, backlog ? backlog : 4096);
  if (!li.ok()) return ND_UNSUCCESSFUL;
  lid_ = *li;
  listening_ = true;
  adapter_->AddListener(lid_, this);
  return ND_SUCCESS;
}

HRESULT Listener::GetLocalAddress(sockaddr* addr, ULONG* len) {
  absl::MutexLock l(&adapter_->eng().mu());
  if (!bound_) return ND_INVALID_DEVICE_STATE;
  wire::IpAddr ip = ip_;
  if (ip == wire::IpAddr{} && !adapter_->addrs().empty()) {
    // Bound to any address: report the family's unspecified address.
    ip = adapter_->addrs()[0].IsV4() ? wire::IpAddr::FromV4(0) : wire::IpAddr{};
  }
  return CopyAddress(ip, port_, addr, len);
}

HRESULT Listener::GetConnectionRequest(IUnknown* cu, OVERLAPPED* ov) {
  if (!ov) return ND_INVALID_PARAMETER_2;
  auto* c = OursOf<Connector, IND2Connector>(cu, IID_IND2Connector, adapter_);
  if (!c) return ND_INVALID_PARAMETER_1;
  absl::MutexLock l(&adapter_->eng().mu());
  if (!listening_) return ND_INVALID_DEVICE_STATE;
  // The connector is not AddRef'd (a reference dropped under the engine
  // lock could be the last one): a connector released while it waits takes
  // itself off the list (Forget).
  waiters_.push_back({c, ov});
  c->SetWaitingOn(this);
  const HRESULT h = ov_.Pend(ov, [this, ov] {
    absl::MutexLock lk(&adapter_->eng().mu());
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
