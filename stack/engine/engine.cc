#include "stack/engine/engine.h"

#include <algorithm>
#include <cstring>
#include <deque>

#include <absl/strings/str_cat.h>

#include "stack/port/dpdk.h"
#include "stack/port/mbuf.h"
#include "stack/rc/tx.h"
#include "stack/wire/checksum.h"
#include "stack/wire/icrc.h"
#include "stack/wire/packet.h"

namespace roce::engine {

using namespace roce::wire;

Engine::Engine(port::Port* port, const EngineOptions& opts) : port_(port), opts_(opts) {}

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(port::Port* port, const EngineOptions& opts) {
  if (!port) return absl::InvalidArgumentError("no port");
  std::unique_ptr<Engine> e(new Engine(port, opts));
  e->rc_ = std::make_unique<rc::RcDevice>(opts.rc, e.get());
  neighbor::NeighborConfig nc;
  nc.mac = port->mac();
  if (port->ipv4()) nc.addrs.push_back(port->ipv4()->addr);
  if (port->ipv6()) nc.addrs.push_back(port->ipv6()->addr);
  if (nc.addrs.empty()) return absl::FailedPreconditionError("the port profile has no IP address");
  nc.retry_interval_ns = opts.arp_retry_ns;
  nc.max_retries = opts.arp_retries;
  e->neighbors_ = std::make_unique<neighbor::NeighborTable>(nc);
  roce::cm::ConnectionManager::Config cc = opts.cm;
  cc.mac = port->mac();
  cc.addrs = nc.addrs;
  e->cm_ = std::make_unique<roce::cm::ConnectionManager>(e->rc_.get(), cc);
  e->tx_.reserve(opts.burst);
  e->scratch_.resize(16384);
  e->tsc0_ = rte_get_tsc_cycles();
  e->ns_per_cycle_ = 1e9 / static_cast<double>(rte_get_tsc_hz());
  Engine* self = e.get();
  auto reg = port::RegisterTelemetry("engine", port->id(), [self](port::TelemetryDict& d) {
    const EngineCounters c = self->counters();
    d.Add("rx_frames", c.rx_frames);
    d.Add("rx_roce", c.rx_roce);
    d.Add("rx_arp_ndp", c.rx_arp_ndp);
    d.Add("rx_other_dropped", c.rx_other);
    d.Add("rx_linearized", c.rx_linearized);
    d.Add("tx_roce", c.tx_roce);
    d.Add("tx_neighbor", c.tx_neighbor);
    d.Add("tx_nomem", c.tx_nomem);
    d.Add("tx_oversize", c.tx_oversize);
    // Read without the engine lock: DestroyQp holds it while unregistering
    // (which takes the registry lock this callback runs under). Counters are
    // single-writer 64-bit values; a reply may be a poll pass stale.
    const rc::DeviceCounters& dc = self->rc_->counters;
    d.Add("rx_unknown_qp", dc.rx_unknown_qp);
    for (size_t i = 1; i < static_cast<size_t>(Error::kCount); i++)
      if (dc.rx_errors[i]) d.Add((std::string("rx_drop_") + ErrorName(static_cast<Error>(i))).c_str(), dc.rx_errors[i]);
    d.Add("icrc_errors", dc.IcrcErrors());
  });
  if (reg.ok()) e->telemetry_ = std::move(*reg);
  return e;
}

Engine::~Engine() {
  Stop();
  absl::MutexLock l(&mu_);
  qp_telemetry_.clear();
  telemetry_.Reset();
  for (rte_mbuf* m : tx_) rte_pktmbuf_free(m);
  tx_.clear();
}

uint64_t Engine::NowNs() const {
  return static_cast<uint64_t>(static_cast<double>(rte_get_tsc_cycles() - tsc0_) * ns_per_cycle_) + 1;
}

EngineCounters Engine::counters() const { return counters_; }

std::optional<IpAddr> Engine::LocalIp(bool ipv6) const {
  const auto& p = ipv6 ? port_->ipv6() : port_->ipv4();
  if (!p) return std::nullopt;
  return p->addr;
}

absl::StatusOr<NetHeaders> Engine::PathTo(const IpAddr& peer, const MacAddr& peer_mac) const {
  const bool v6 = !peer.IsV4();
  const auto local = LocalIp(v6);
  if (!local) return absl::FailedPreconditionError(absl::StrCat("no local ", v6 ? "IPv6" : "IPv4", " address"));
  NetHeaders n;
  n.eth.src = port_->mac();
  n.eth.dst = peer_mac;
  n.ipv6 = v6;
  n.eth.ethertype = v6 ? kEtherTypeIpv6 : kEtherTypeIpv4;
  if (v6) {
    std::copy(local->b.begin(), local->b.end(), n.ip6.src.begin());
    std::copy(peer.b.begin(), peer.b.end(), n.ip6.dst.begin());
    n.ip6.traffic_class = opts_.tos;
    n.ip6.hop_limit = opts_.ttl;
  } else {
    n.ip4.src = local->V4();
    n.ip4.dst = peer.V4();
    n.ip4.tos = opts_.tos;
    n.ip4.ttl = opts_.ttl;
  }
  return n;
}

// ---- TX ---------------------------------------------------------------------------

void Engine::FlushTx() {
  if (!tx_.empty()) {
    port_->TxBurst(opts_.queue, tx_.data(), static_cast<uint16_t>(tx_.size()));
    tx_.clear();
  }
  port_->Flush(opts_.queue);
}

void Engine::SendRaw(ByteSpan frame) {
  if (frame.size() >= 6 && std::equal(frame.begin(), frame.begin() + 6, port_->mac().b.begin())) {
    loopback_.emplace_back(frame.begin(), frame.end());
    counters_.tx_loopback++;
    return;
  }
  rte_mbuf* m = port::AllocFrame(port_->pool(), static_cast<uint32_t>(frame.size()));
  if (!m) {
    counters_.tx_nomem++;
    return;
  }
  port::WriteAt(m, 0, frame);
  counters_.tx_neighbor++;
  tx_.push_back(m);
  if (tx_.size() >= opts_.burst) FlushTx();
}

bool Engine::Transmit(const rc::TxPacket& pkt, uint64_t now) {
  (void)now;
  // Back-pressure: let the device drain before taking more.
  if (port_->TxBacklog(opts_.queue) > 128) {
    counters_.tx_busy++;
    return false;
  }
  const NetHeaders& net = *pkt.net;
  if (net.eth.dst == port_->mac()) {
    // To ourselves (a connection between two of our own QPs): looped back
    // inside the engine, received on the next pass.
    std::vector<uint8_t> frame(rc::TxFrameLen(pkt));
    rc::SerializeFrame(pkt, frame.data());
    loopback_.push_back(std::move(frame));
    counters_.tx_loopback++;
    return true;
  }
  const size_t hlen = HeadersLen(net, pkt.bth.opcode);
  const uint32_t plen = pkt.payload_len;
  const uint8_t pad = PadFor(plen);
  const size_t total = hlen + plen + pad + kIcrcLen;
  if (total > port_->max_frame_len()) {
    counters_.tx_oversize++;
    return true;  // dropped: a path MTU above the port's; the retry budget will tell
  }
  rte_mbuf* m = port::AllocHeader(port_->pool(), static_cast<uint16_t>(hlen));
  if (!m) {
    counters_.tx_nomem++;
    return false;
  }
  uint8_t* h = rte_pktmbuf_mtod(m, uint8_t*);
  // Checksums. The IPv4 header checksum is always computed here (it is
  // cheap, and a port capture — taken before the device — then shows the
  // real value); the IPv6 UDP checksum, which covers the payload, goes to
  // the port's offload when it has one.
  EmitHeaders(net, pkt.bth, pkt.ext, plen, h);
  Icrc icrc;
  const size_t l3 = net.eth.Len();
  icrc.Begin(ByteSpan(h + l3, hlen - l3));
  icrc.Update(ByteSpan(h + l3 + icrc.begun(), hlen - l3 - icrc.begun()));
  bool ok = true;
  for (uint32_t i = 0; i < pkt.nseg && ok; i++) {
    const ByteSpan s(pkt.seg[i].p, pkt.seg[i].len);
    icrc.Update(s);
    ok = port::AppendCopy(m, port_->pool(), s);
  }
  uint8_t tail[3 + kIcrcLen] = {};
  icrc.Update(ByteSpan(tail, pad));
  Store32Le(tail + pad, icrc.Value());
  ok = ok && port::AppendCopy(m, port_->pool(), ByteSpan(tail, pad + kIcrcLen));
  if (!ok) {
    rte_pktmbuf_free(m);
    counters_.tx_nomem++;
    return false;
  }
  if (net.ipv6) {
    port::TxChecksumRequest want;
    want.l2_len = static_cast<uint16_t>(l3);
    want.l3_len = Ipv6Header::kLen;
    want.ipv6 = true;
    want.udp_checksum = true;
    if (port_->RequestTxChecksums(m, want).udp_checksum) {
      // In software: pseudo-header + UDP header, then the datagram's pieces.
      const size_t udp_at = l3 + Ipv6Header::kLen;
      InetChecksum c = BeginUdp6Checksum(net.ip6.src.data(), net.ip6.dst.data(),
                                         static_cast<uint32_t>(total - udp_at), h + udp_at);
      c.Add(ByteSpan(h + udp_at + UdpHeader::kLen, hlen - udp_at - UdpHeader::kLen));
      for (uint32_t i = 0; i < pkt.nseg; i++) c.Add(ByteSpan(pkt.seg[i].p, pkt.seg[i].len));
      c.Add(ByteSpan(tail, pad + kIcrcLen));
      Store16(h + udp_at + 6, c.Finish());
    }
  }
  counters_.tx_roce++;
  tx_.push_back(m);
  if (tx_.size() >= opts_.burst) FlushTx();
  return true;
}

// ---- RX -----------------------------------------------------------------------------

void Engine::HandleRx(rte_mbuf* m, uint64_t now) {
  counters_.rx_frames++;
  ByteSpan frame;
  if (m->nb_segs == 1) {
    frame = ByteSpan(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len);
  } else {
    if (m->pkt_len > scratch_.size()) {
      counters_.rx_too_long++;
      return;
    }
    const size_t n = port::CopyOut(m, 0, MutByteSpan(scratch_.data(), m->pkt_len));
    frame = ByteSpan(scratch_.data(), n);
    counters_.rx_linearized++;
  }
  HandleFrame(frame, now);
}

void Engine::HandleFrame(ByteSpan frame, uint64_t now) {
  const neighbor::FrameKind k = neighbor::ClassifyNeighborFrame(frame);
  if (k != neighbor::FrameKind::kOther) {
    counters_.rx_arp_ndp++;
    neighbors_->HandleFrame(frame, now, [this](ByteSpan f) { SendRaw(f); });
    return;
  }
  // RoCEv2? (IPv4/IPv6, UDP, destination port 4791 — any source port.)
  size_t off = 12;
  if (frame.size() < 14) {
    counters_.rx_other++;
    return;
  }
  uint16_t et = Load16(&frame[off]);
  off += 2;
  if (et == kEtherTypeVlan && frame.size() >= 18) {
    et = Load16(&frame[off + 2]);
    off += 4;
  }
  bool udp4791 = false;
  if (et == kEtherTypeIpv4 && frame.size() >= off + 20 && frame[off + 9] == kIpProtoUdp) {
    const size_t l4 = off + (frame[off] & 0xF) * 4u;
    udp4791 = frame.size() >= l4 + 4 && Load16(&frame[l4 + 2]) == kRoceV2Port;
  } else if (et == kEtherTypeIpv6 && frame.size() >= off + 44 && frame[off + 6] == kIpProtoUdp) {
    udp4791 = Load16(&frame[off + 42]) == kRoceV2Port;
  }
  if (!udp4791) {
    counters_.rx_other++;
    return;
  }
  counters_.rx_roce++;
  rc_->OnFrame(frame, now);
}

void Engine::AddPostSource(PostSource* s) { post_sources_.push_back(s); }

void Engine::RemovePostSource(PostSource* s) {
  post_sources_.erase(std::remove(post_sources_.begin(), post_sources_.end(), s), post_sources_.end());
}

size_t Engine::Poll() {
  absl::MutexLock l(&mu_);
  counters_.polls++;
  size_t drained = 0;
  for (PostSource* s : post_sources_) drained += s->DrainPosts();
  const uint64_t now = NowNs();
  rte_mbuf* pkts[64];
  const uint16_t burst = std::min<uint16_t>(opts_.burst, 64);
  const uint16_t n = port_->RxBurst(opts_.queue, pkts, burst);
  for (uint16_t i = 0; i < n; i++) {
    HandleRx(pkts[i], now);
    rte_pktmbuf_free(pkts[i]);
  }
  size_t looped = 0;
  if (!loopback_.empty()) {
    std::deque<std::vector<uint8_t>> frames;
    frames.swap(loopback_);  // what these frames make goes on the next pass
    for (const auto& f : frames) {
      counters_.rx_frames++;
      HandleFrame(ByteSpan(f.data(), f.size()), now);
    }
    looped = frames.size();
  }
  auto tx = [this](ByteSpan f) { SendRaw(f); };
  if (neighbors_->NextDeadline() <= now) neighbors_->Poll(now, tx);
  const size_t sent = rc_->Poll(now, 256);
  const uint64_t cm_due = cm_->NextDeadline();
  if (cm_due && cm_due <= now) cm_->Poll(now);
  if (on_poll) on_poll(now);
  FlushTx();
  return n + sent + looped + drained;
}

// ---- dedicated mode ----------------------------------------------------------------------

void Engine::Loop() {
  uint64_t idle_since = 0, nap = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    if (Poll() != 0) {
      idle_since = 0;
      nap = 0;
      continue;
    }
    if (opts_.idle_sleep_max_ns == 0) {
      rte_pause();
      continue;
    }
    const uint64_t now = NowNs();
    if (idle_since == 0 || kicked_.exchange(false)) idle_since = now;
    if (now - idle_since < opts_.idle_spin_ns) {
      rte_pause();
      continue;
    }
    nap = nap ? std::min(nap * 2, opts_.idle_sleep_max_ns) : 1000;
    absl::MutexLock l(&nap_mu_);
    napping_.store(true);  // then kicked_ is read: Kick() sees one or the other
    if (!kicked_.exchange(false) && !stop_.load())
      nap_cv_.WaitWithTimeout(&nap_mu_, absl::Nanoseconds(static_cast<int64_t>(nap)));
    napping_.store(false);
    naps_++;
  }
}

void Engine::Kick() {
  kicked_.store(true);
  if (napping_.load()) {
    absl::MutexLock l(&nap_mu_);
    nap_cv_.Signal();
  }
}

absl::Status Engine::Start(int lcore) {
  if (running_.exchange(true)) return absl::FailedPreconditionError("already running");
  stop_ = false;
  lcore_ = lcore;
  if (lcore >= 0) {
    const int rc = rte_eal_remote_launch(
        [](void* arg) -> int {
          static_cast<Engine*>(arg)->Loop();
          return 0;
        },
        this, static_cast<unsigned>(lcore));
    if (rc != 0) {
      running_ = false;
      return absl::UnavailableError(absl::StrCat("rte_eal_remote_launch on lcore ", lcore, ": ", rc));
    }
  } else {
    thread_ = std::thread([this] { Loop(); });
  }
  return absl::OkStatus();
}

void Engine::Stop() {
  if (!running_.load()) return;
  stop_ = true;
  Kick();
  if (lcore_ >= 0)
    rte_eal_wait_lcore(static_cast<unsigned>(lcore_));
  else if (thread_.joinable())
    thread_.join();
  running_ = false;
}

// ---- resolution, QPs ------------------------------------------------------------------------

absl::StatusOr<MacAddr> Engine::Resolve(const IpAddr& peer, uint64_t timeout_ns) {
  // One of our own addresses: ourselves (loopback connections).
  for (bool v6 : {false, true})
    if (auto ip = LocalIp(v6); ip && *ip == peer) return port_->mac();
  const uint64_t deadline = NowNs() + timeout_ns;
  for (;;) {
    {
      absl::MutexLock l(&mu_);
      const neighbor::LookupResult r = neighbors_->Lookup(peer, NowNs(), [this](ByteSpan f) { SendRaw(f); });
      FlushTx();
      if (r.status == neighbor::ResolveStatus::kResolved) return r.mac;
      if (r.status == neighbor::ResolveStatus::kFailed)
        return absl::NotFoundError(absl::StrCat("no ARP/NDP answer from ", peer.ToString()));
      if (r.status == neighbor::ResolveStatus::kNoResources)
        return absl::ResourceExhaustedError("neighbour table full");
    }
    if (NowNs() > deadline) return absl::DeadlineExceededError(absl::StrCat("resolving ", peer.ToString()));
    if (running_.load())
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    else
      Poll();
  }
}

neighbor::LookupResult Engine::LookupNeighbor(const IpAddr& peer) {
  for (bool v6 : {false, true})
    if (auto ip = LocalIp(v6); ip && *ip == peer) {
      neighbor::LookupResult r;
      r.status = neighbor::ResolveStatus::kResolved;
      r.mac = port_->mac();
      return r;
    }
  neighbor::LookupResult r = neighbors_->Lookup(peer, NowNs(), [this](ByteSpan f) { SendRaw(f); });
  FlushTx();
  return r;
}

bool Engine::WaitUntil(const std::function<bool()>& pred, uint64_t timeout_ns) {
  const uint64_t deadline = NowNs() + timeout_ns;
  for (;;) {
    {
      absl::MutexLock l(&mu_);
      if (pred()) return true;
    }
    if (NowNs() > deadline) return false;
    if (running_.load())
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    else
      Poll();
  }
}

rc::QueuePair* Engine::CreateQp(const rc::QpCaps& caps, rc::CompletionQueue* scq,
                                rc::CompletionQueue* rcq, rc::ReceiveQueue* srq, uint64_t context) {
  rc::QueuePair* qp = rc_->CreateQp(caps, scq, rcq, srq, context);
  if (!qp) return nullptr;
  const uint32_t qpn = qp->qpn();
  // The registration is removed (under the registry lock) before the QP is
  // destroyed, so the callback never sees a dead QP.
  // Two engines (ports) in one process hand out the same QPNs: the id is
  // port << 24 | QPN.
  auto reg = port::RegisterTelemetry("qp", QpTelemetryId(qpn), [q = qp](port::TelemetryDict& d) {
    d.AddString("state", rc::QpStateName(q->state()));
    q->counters.ForEach([&d](const char* name, uint64_t v) { d.Add(name, v); });
  });
  if (reg.ok()) qp_telemetry_.emplace_back(qpn, std::move(*reg));
  return qp;
}

void Engine::DestroyQp(rc::QueuePair* qp) {
  if (!qp) return;
  const uint32_t qpn = qp->qpn();
  for (auto it = qp_telemetry_.begin(); it != qp_telemetry_.end(); ++it)
    if (it->first == qpn) {
      qp_telemetry_.erase(it);
      break;
    }
  rc_->DestroyQp(qp);
}

}  // namespace roce::engine
