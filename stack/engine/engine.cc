// SPDX-License-Identifier: MIT
#include "stack/engine/engine.h"
#include "stack/port/kernel_iface.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <absl/strings/str_cat.h>
#include <absl/synchronization/mutex.h>

#include "stack/mem/place.h"
#include "stack/port/dpdk.h"
#include "stack/port/mbuf.h"
#include "stack/rc/tx.h"
#include "stack/wire/checksum.h"
#include "stack/wire/frame.h"
#include "stack/wire/icrc.h"
#include "stack/wire/packet.h"

namespace roce::engine {

using namespace roce::wire;

Engine::Engine(port::Port* port, const EngineOptions& opts) : port_(port), opts_(opts) {}

namespace {
// absl::Mutex's deadlock detection (on in builds without NDEBUG, such as
// Debian's Abseil) records every lock in a global graph: ~9% of an 8 B Write
// (perf: GraphCycles::GetId and the lock bookkeeping). The stack turns it off
// unless SOFT_RNIC_MUTEX_CHECK=1 (the test setup sets it: tests keep the
// lock-order check; applications and benchmarks do not pay for it).
void ConfigureMutexChecks() {
  static const bool once = [] {
    if (!MutexChecksRequested()) absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
    return true;
  }();
  (void)once;
}
}  // namespace

RTE_LOG_REGISTER(g_engine_logtype, roce.engine, NOTICE);

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(port::Port* port, const EngineOptions& opts) {
  if (!port) return absl::InvalidArgumentError("no port");
  ConfigureMutexChecks();
  std::unique_ptr<Engine> e(new Engine(port, opts));
  rc::RcDevice::Config rcc = opts.rc;
  if (!rcc.fatal_hook) {
    // A connection that dies on the wire says where it stood: the one record
    // a rare failure (a CI run, a user's link) leaves behind.
    rcc.fatal_hook = [](const rc::QueuePair& qp, const char* why) {
      rte_log(RTE_LOG_ERR, g_engine_logtype, "roce: QP %06x failed (%s): %s\n", qp.qpn(), why,
              qp.DebugState().c_str());
    };
  }
  if (!rcc.event_hook) {
    // SOFT_RNIC_QP_EVENTS=<prefix>: every QP protocol event (the events
    // rocesim --events writes) to <prefix>.<pid>, for debugging a run on real
    // ports; buffered, flushed as the process exits (and as a QP fails).
    static std::FILE* events = [] {
      const char* prefix = std::getenv("SOFT_RNIC_QP_EVENTS");
      if (!prefix || !*prefix) return static_cast<std::FILE*>(nullptr);
      std::FILE* f = std::fopen(absl::StrCat(prefix, ".", getpid()).c_str(), "w");
      if (f) std::setvbuf(f, nullptr, _IOFBF, 1 << 20);
      return f;
    }();
    if (events) {
      Engine* me = e.get();
      rcc.event_hook = [me](uint32_t qpn, const char* ev, uint64_t a, uint64_t b) {
        std::fprintf(events, "%14.3f qp=%06x %s %llu %llu (0x%llx)\n", me->rc_->now() / 1e3, qpn, ev,
                     static_cast<unsigned long long>(a), static_cast<unsigned long long>(b),
                     static_cast<unsigned long long>(b));
      };
      auto fatal = rcc.fatal_hook;
      rcc.fatal_hook = [fatal](const rc::QueuePair& qp, const char* why) {
        fatal(qp, why);
        std::fprintf(events, "FATAL %s: %s\n", why, qp.DebugState().c_str());
        std::fflush(events);
      };
    }
  }
  e->rc_ = std::make_unique<rc::RcDevice>(rcc, e.get());
  neighbor::NeighborConfig nc;
  nc.mac = port->mac();
  for (const port::IpPrefix& a : port->Addrs()) nc.addrs.push_back(a.addr);
  if (nc.addrs.empty()) return absl::FailedPreconditionError("the port profile has no IP address");
  if (port->kernel_identity()) e->kernel_ = port->kernel();
  e->addr_generation_ = port->AddrGeneration();
  nc.retry_interval_ns = opts.arp_retry_ns;
  nc.max_retries = opts.arp_retries;
  e->neighbors_ = std::make_unique<neighbor::NeighborTable>(nc);
  roce::cm::ConnectionManager::Config cc = opts.cm;
  cc.mac = port->mac();
  cc.addrs = nc.addrs;
  e->cm_ = std::make_unique<roce::cm::ConnectionManager>(e->rc_.get(), cc);
  e->tx_.reserve(opts.burst);
  e->scratch_.resize(kScratch + 63);
  e->first_room_ = port::FirstSegmentRoom(port->pool());
  e->data_at_ = sizeof(rte_mbuf) + rte_pktmbuf_priv_size(port->pool()) + RTE_PKTMBUF_HEADROOM;
  if (port->zero_copy_tx() && opts.zero_copy_min) {
    e->zc_ = port::ZcPool::Create(opts.zero_copy_frames);
    Engine* me = e.get();
    e->rc_->memory().on_deregister = [me](uint64_t addr, uint64_t len) { me->RevokeZeroCopy(addr, len); };
  }
  e->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (e->wake_fd_ < 0) return absl::InternalError(absl::StrCat("eventfd: ", std::strerror(errno)));
  if (port->kernel() && port->kernel()->af_xdp())
    e->rx_queue_count_ = std::min<uint16_t>(port->rx_queues(), kMaxRxQueues);
  e->rx_wakeable_ = port->RxWaitFd(e->rx_queue_count_ == 1 ? opts.queue : 0) >= 0;
  e->tsc0_ = rte_get_tsc_cycles();
  e->ns_per_cycle_ = 1e9 / static_cast<double>(rte_get_tsc_hz());
  Engine* self = e.get();
  auto reg = port::RegisterTelemetry("engine", port->id(), [self](port::TelemetryDict& d) {
    const EngineCounters c = self->counters();
    c.ForEach([&d](const char* name, uint64_t v) { d.Add(name, v); });
    d.Add("naps", self->naps());
    d.Add("rx_wakeable", self->rx_wakeable() ? 1 : 0);
    d.Add("rx_wakes", self->rx_wakes());
    d.Add("sleeps_when_idle", self->sleeps_when_idle() ? 1 : 0);
    d.Add("idle_yields", self->idle_yields());
    d.Add("poller_yields", self->poller_yields());
    d.Add("yielding", self->yielding() ? 1 : 0);  // adaptive_yield
    // Read without the engine lock: DestroyQp holds it while unregistering
    // (which takes the registry lock this callback runs under). Counters are
    // single-writer 64-bit values; a reply may be a poll pass stale.
    const rc::DeviceCounters& dc = self->rc_->counters;
    d.Add("rx_unknown_qp", dc.rx_unknown_qp);
    for (size_t i = 1; i < static_cast<size_t>(Error::kCount); i++)
      if (dc.rx_errors[i]) d.Add((std::string("rx_drop_") + ErrorName(static_cast<Error>(i))).c_str(), dc.rx_errors[i]);
    d.Add("icrc_errors", dc.IcrcErrors());
    d.Add("rx_placed_in_pass", dc.rx_placed_in_pass);
    d.Add("rx_placed_dropped", dc.rx_placed_dropped);
  });
  if (reg.ok()) e->telemetry_ = std::move(*reg);
  return e;
}

Engine::~Engine() {
  Stop();
  if (wake_fd_ >= 0) close(wake_fd_);
  EngineLock l(&mu_);
  qp_telemetry_.clear();
  telemetry_.Reset();
  for (rte_mbuf* m : tx_) rte_pktmbuf_free(m);
  tx_.clear();
  if (mcache_n_) rte_pktmbuf_free_bulk(mcache_, mcache_n_);
  mcache_n_ = 0;
  if (zc_) {
    rc_->memory().on_deregister = nullptr;
    // Close revokes every reference (the pool lives on while frames hold
    // them), so the purge then drops every zero-copy frame still queued.
    zc_->Close();
    zc_ = nullptr;
    port_->PurgeRevokedTx(opts_.queue);
  }
}

void Engine::RevokeZeroCopy(uint64_t addr, uint64_t len) {
  zc_->Revoke(addr, len);
  // Frames of this pass not yet handed to the port, then the port's backlog.
  size_t kept = 0;
  for (rte_mbuf* m : tx_) {
    if (port::ZcRevoked(m)) {
      rte_pktmbuf_free(m);
      Dropped(&EngineCounters::tx_zc_revoked, "a zero-copy frame's memory was deregistered before it went out");
    } else {
      tx_[kept++] = m;
    }
  }
  tx_.resize(kept);
  if (const uint64_t n = port_->PurgeRevokedTx(opts_.queue))
    Dropped(&EngineCounters::tx_zc_revoked, "a zero-copy frame's memory was deregistered before it went out", n);
}

uint64_t Engine::NowNs() const {
  return static_cast<uint64_t>(static_cast<double>(rte_get_tsc_cycles() - tsc0_) * ns_per_cycle_) + 1;
}

EngineCounters Engine::counters() const { return counters_; }

void Engine::Dropped(uint64_t EngineCounters::*field, const char* why, uint64_t n) {
  uint64_t& c = counters_.*field;
  if (c == 0) {
    const char* name = "?";
    counters_.ForEach([&](const char* k, const uint64_t& v) {
      if (&v == &c) name = k;
    });
    // At ERR, shown at the EAL's default level (error), except frames not
    // ours: on an interface shared with the kernel they are expected.
    rte_log(field == &EngineCounters::rx_other_dropped ? RTE_LOG_NOTICE : RTE_LOG_ERR, g_engine_logtype,
            "roce: port %u: %s (counted in /roce/engine/stats %s; logged once)\n", port_->id(), why, name);
  }
  c += n;
}

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
    Dropped(&EngineCounters::tx_nomem, "no mbuf for an ARP/NDP frame");
    return;
  }
  port::WriteAt(m, 0, frame);
  counters_.tx_neighbor++;
  tx_.push_back(m);
  if (tx_.size() >= tx_flush_at_) FlushTx();
}

void Engine::PrefetchMbuf(const rte_mbuf* m) const {
  const char* b = reinterpret_cast<const char*>(m);
  port::PrefetchForWrite(b);
  port::PrefetchForWrite(b + 64);
  const char* d = b + data_at_;
  port::PrefetchForWrite(d);
  port::PrefetchForWrite(d + 64);
}

rte_mbuf* Engine::RefillMbufs() {
  // One pool access for a burst's worth of frames (TakeMbuf resets each); a
  // pool too low for a whole refill still gives what it can, one by one.
  if (rte_mempool_get_bulk(port_->pool(), reinterpret_cast<void**>(mcache_), kMbufCache) != 0)
    return rte_pktmbuf_alloc(port_->pool());
  mcache_n_ = kMbufCache;
  for (uint32_t i = 1; i <= kTakeAhead; i++) PrefetchMbuf(mcache_[kMbufCache - i]);
  return TakeMbuf();
}

bool Engine::AttachPayload(rte_mbuf* m, const FrameTemplate& t, const rc::TxPacket& pkt, size_t hlen,
                           bool udp6_offload) {
  rte_mbuf* seg[3];
  const uint32_t n = pkt.nseg;
  for (uint32_t i = 0; i <= n; i++) {
    seg[i] = TakeMbuf();
    if (!seg[i]) {
      for (uint32_t j = 0; j < i; j++) rte_pktmbuf_free(seg[j]);
      return false;
    }
  }
  for (uint32_t i = 0; i < n; i++) {
    if (!zc_->Attach(seg[i], pkt.seg[i].p, static_cast<uint16_t>(pkt.seg[i].len))) {
      for (uint32_t j = 0; j <= n; j++) rte_pktmbuf_free(seg[j]);  // detaches what was attached
      return false;
    }
  }
  uint8_t* h = rte_pktmbuf_mtod(m, uint8_t*);
  t.WriteHeaders(pkt.bth, pkt.ext, pkt.payload_len, h);
  m->data_len = static_cast<uint16_t>(hlen);
  // The ICRC: the payload's one pass, where it lies.
  const uint8_t pad = PadFor(pkt.payload_len);
  rte_mbuf* tail = seg[n];
  uint8_t* tb = rte_pktmbuf_mtod(tail, uint8_t*);
  for (uint8_t i = 0; i < pad; i++) tb[i] = 0;
  Store32Le(tb + pad, IcrcOf(t, h, hlen, pkt.seg, n, pad));
  tail->data_len = static_cast<uint16_t>(pad + kIcrcLen);
  rte_mbuf* last = m;
  for (uint32_t i = 0; i <= n; i++) {
    last->next = seg[i];
    last = seg[i];
  }
  m->nb_segs = static_cast<uint16_t>(n + 2);
  m->pkt_len = static_cast<uint32_t>(hlen + pkt.payload_len + pad + kIcrcLen);
  if (t.ipv6() && !udp6_offload)
    Store16(h + t.l4() + 6, t.Udp6ChecksumOf(h, hlen, pkt.seg, n, ByteSpan(tb, pad + kIcrcLen)));
  return true;
}

bool Engine::CopyPayloadCrc(rte_mbuf* m, const Gather* pieces, uint32_t n, uint32_t* crc) {
  rte_mbuf* last = rte_pktmbuf_lastseg(m);
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t* src = pieces[i].p;
    uint32_t left = pieces[i].len;
    while (left > 0) {
      uint32_t room = rte_pktmbuf_tailroom(last);
      if (room == 0) {
        rte_mbuf* s = TakeMbuf();
        if (!s) return false;
        s->data_off = 0;  // a payload segment: its whole buffer
        last->next = s;
        m->nb_segs++;
        last = s;
        room = rte_pktmbuf_tailroom(s);
      }
      const uint32_t take = std::min(room, left);
      *crc = mem::PlaceInOrderCrc32(rte_pktmbuf_mtod_offset(last, uint8_t*, last->data_len), src, take, *crc);
      last->data_len = static_cast<uint16_t>(last->data_len + take);
      m->pkt_len += take;
      src += take;
      left -= take;
    }
  }
  return true;
}

bool Engine::Transmit(const rc::TxPacket& pkt, uint64_t now) {
  (void)now;
  // Back-pressure: let the device drain before taking more.
  if (port_->TxBacklog(opts_.queue) > 128) {
    counters_.tx_busy++;
    return false;
  }
  // The path's template: the queue pair's own, or (CM datagrams) one built
  // for this packet, out of line: a call frame with a ~100-byte template in
  // it costs every packet.
  if (!pkt.tmpl) return TransmitOwnTemplate(pkt);
  return TransmitWith(pkt, *pkt.tmpl);
}

bool Engine::TransmitOwnTemplate(const rc::TxPacket& pkt) {
  const FrameTemplate t(*pkt.net);
  return TransmitWith(pkt, t);
}

bool Engine::TransmitWith(const rc::TxPacket& pkt, const FrameTemplate& tr) {
  const FrameTemplate* t = &tr;
  const uint32_t plen = pkt.payload_len;
  const size_t hlen = t->HeadersLen(pkt.bth.opcode);
  const uint8_t pad = PadFor(plen);
  const size_t total = hlen + plen + pad + kIcrcLen;
  if (std::memcmp(t->dst_mac(), port_->mac().b.data(), 6) == 0) {
    // To ourselves (a connection between two of our own QPs): looped back
    // inside the engine, received on the next pass.
    std::vector<uint8_t> frame(total);
    WriteFrame(*t, pkt.bth, pkt.ext, pkt.seg, pkt.nseg, plen, frame.data());
    loopback_.push_back(std::move(frame));
    counters_.tx_loopback++;
    return true;
  }
  if (total > port_->max_frame_len()) {
    Dropped(&EngineCounters::tx_oversize, "a frame longer than the port's MTU (path MTU above it)");
    return true;  // dropped: a path MTU above the port's; the retry budget will tell
  }
  rte_mbuf* m = TakeMbuf();
  if (!m) {
    Dropped(&EngineCounters::tx_nomem, "no mbuf for a RoCE frame (held back, sent again)");
    return false;
  }
  uint8_t* h = rte_pktmbuf_mtod(m, uint8_t*);
  // The IPv6 UDP checksum covers the payload: the port's offload when it has
  // one. (The IPv4 header checksum is always written here — incrementally,
  // from the template — so a port capture, taken before the device, shows
  // the real value.)
  const bool udp6_offload = t->ipv6() && port_->offloads().tx_udp_checksum;
  if (zc_ && pkt.registered && plen >= opts_.zero_copy_min && pkt.nseg <= 2 &&
      AttachPayload(m, *t, pkt, hlen, udp6_offload)) {
    counters_.tx_zero_copy++;
  } else if (total <= first_room_) {
    // One segment: headers, payload, pad, then the ICRC in one pass over it.
    WriteOptions wo;
    wo.udp6_checksum = !udp6_offload;
    WriteFrame(*t, pkt.bth, pkt.ext, pkt.seg, pkt.nseg, plen, h, wo);
    m->data_len = static_cast<uint16_t>(total);
    m->pkt_len = static_cast<uint32_t>(total);
  } else {
    // Larger than a segment: headers first, then the payload copied into
    // the chain as its CRC is folded (one pass over it), the ICRC last. The
    // headers move back so that the payload starts on a cache line: the
    // one-pass copy then has no unaligned head (nor, with whole segments, a
    // tail) to fold apart from its blocks, here or at a receiver of the chain.
    const uint16_t back = static_cast<uint16_t>((reinterpret_cast<uintptr_t>(h) + hlen) & 63);
    if (back <= m->data_off) {
      m->data_off = static_cast<uint16_t>(m->data_off - back);
      h -= back;
    }
    t->WriteHeaders(pkt.bth, pkt.ext, plen, h);
    m->data_len = static_cast<uint16_t>(hlen);
    m->pkt_len = static_cast<uint32_t>(hlen);
    uint8_t tail[3 + kIcrcLen] = {};
    uint32_t crc = IcrcOf(*t, h, hlen, nullptr, 0, 0);
    bool ok = CopyPayloadCrc(m, pkt.seg, pkt.nseg, &crc);
    Store32Le(tail + pad, Icrc::Extend(crc, ByteSpan(tail, pad)));
    ok = ok && port::AppendCopy(m, port_->pool(), ByteSpan(tail, pad + kIcrcLen));
    if (!ok) {
      rte_pktmbuf_free(m);
      Dropped(&EngineCounters::tx_nomem, "no mbuf for a RoCE frame's payload (held back, sent again)");
      return false;
    }
    if (t->ipv6() && !udp6_offload)
      Store16(h + t->l4() + 6, t->Udp6ChecksumOf(h, hlen, pkt.seg, pkt.nseg, ByteSpan(tail, pad + kIcrcLen)));
  }
  if (udp6_offload) {
    port::TxChecksumRequest want;
    want.l2_len = static_cast<uint16_t>(t->l3());
    want.l3_len = Ipv6Header::kLen;
    want.ipv6 = true;
    want.udp_checksum = true;
    port_->RequestTxChecksums(m, want);
  }
  counters_.tx_roce++;
  tx_.push_back(m);
  if (tx_.size() >= tx_flush_at_) FlushTx();
  return true;
}

// ---- RX -----------------------------------------------------------------------------

namespace {

// RoCEv2? (IPv4/IPv6, UDP, destination port 4791 — any source port.) A peek
// at four fields of the first `avail` bytes; false also when they do not
// reach that far (the caller copies a chain together and asks again).
// Inlined: every received frame is classified by it.
[[gnu::always_inline]] inline bool IsRoceV2(const uint8_t* f, size_t avail) {
  if (avail < 14) return false;
  size_t off = 12;
  uint16_t et = Load16(f + off);
  off += 2;
  if (et == kEtherTypeVlan && avail >= 18) {
    et = Load16(f + off + 2);
    off += 4;
  }
  if (et == kEtherTypeIpv4 && avail >= off + 20 && f[off + 9] == kIpProtoUdp) {
    const size_t l4 = off + (f[off] & 0xF) * 4u;
    return avail >= l4 + 4 && Load16(f + l4 + 2) == kRoceV2Port;
  }
  if (et == kEtherTypeIpv6 && avail >= off + 44 && f[off + 6] == kIpProtoUdp)
    return Load16(f + off + 42) == kRoceV2Port;
  return false;
}

}  // namespace

void Engine::HandleRx(rte_mbuf* m, uint64_t now) {
  counters_.rx_frames++;
  const uint8_t* head = rte_pktmbuf_mtod(m, const uint8_t*);
  if (IsRoceV2(head, m->data_len)) {
    counters_.rx_roce++;
    // Zero-copy segments of an in-process sender are read under a read
    // reference; a revoked one (its memory was deregistered) is not read.
    port::ZcRead zr = port::ZcRead::kNone;
    if (m->nb_segs > 1 || RTE_MBUF_HAS_EXTBUF(m)) {
      zr = port::ZcAcquireFrame(m);
      if (zr == port::ZcRead::kRevoked) {
        Dropped(&EngineCounters::rx_zc_revoked, "a received zero-copy frame's memory was deregistered");
        return;
      }
    }
    ReceiveRoce(head, m->data_len, m->pkt_len, m, now);
    if (zr == port::ZcRead::kHeld) port::ZcReleaseFrame(m);
    return;
  }
  ByteSpan frame;
  if (m->nb_segs == 1) {
    frame = ByteSpan(head, m->data_len);
  } else {
    if (!Linearize(m, &frame)) return;
  }
  HandleFrame(frame, now);
}

bool Engine::Linearize(const rte_mbuf* m, ByteSpan* out) {
  if (m->pkt_len > kScratch) {
    Dropped(&EngineCounters::rx_too_long, "a received chained frame longer than the engine's scratch");
    return false;
  }
  const size_t n = port::CopyOut(m, 0, MutByteSpan(scratch(), m->pkt_len));
  *out = ByteSpan(scratch(), n);
  counters_.rx_linearized++;
  return true;
}

void Engine::HandleFrame(ByteSpan frame, uint64_t now) {
  if (IsRoceV2(frame.data(), frame.size())) {
    counters_.rx_roce++;
    ReceiveRoce(frame.data(), frame.size(), frame.size(), nullptr, now);
    return;
  }
  const neighbor::FrameKind k = neighbor::ClassifyNeighborFrame(frame);
  if (k != neighbor::FrameKind::kOther && !port_->kernel_identity()) {
    counters_.rx_arp_ndp++;
    neighbors_->HandleFrame(frame, now, [this](ByteSpan f) { SendRaw(f); });
    return;
  }
  Dropped(&EngineCounters::rx_other_dropped, "a received frame neither RoCEv2 nor ARP/NDP");
}

// p.pad, p.icrc and p.trailer of a frame laid out as `lay` whose first
// `avail` bytes are at `head` (m: its chain, or null for a contiguous frame;
// a chain has no trailer). False if the pad or the ICRC is not all there.
inline bool Engine::ReadPadIcrc(const uint8_t* head, size_t avail, const rte_mbuf* m, const FrameLayout& lay,
                                RocePacket& p) {
  if (lay.end <= avail) [[likely]] {
    p.pad = ByteSpan(head + lay.payload + lay.payload_len, p.bth.pad_count);
    p.icrc = Load32Le(head + lay.icrc);
    p.trailer = ByteSpan(head + lay.end, avail - lay.end);
    return true;
  }
  return m && ReadPadIcrcChained(m, lay, p);
}

bool Engine::ReadPadIcrcChained(const rte_mbuf* m, const FrameLayout& lay, RocePacket& p) {
  const uint8_t pad = p.bth.pad_count;
  uint8_t icrc_bytes[kIcrcLen];
  const ByteSpan ib = port::ReadContiguous(m, lay.icrc, kIcrcLen, icrc_bytes);
  const ByteSpan pb = port::ReadContiguous(m, lay.payload + lay.payload_len, pad, rx_pad_);
  if (ib.size() != kIcrcLen || pb.size() != pad) return false;
  p.icrc = Load32Le(ib.data());
  p.pad = pb;
  p.trailer = ByteSpan();
  return true;
}

// A RoCEv2 frame of `len` bytes whose first `avail` are at `head` (m: the
// chain they start, or null for a contiguous frame). Parsed once, here, from
// the first segment; the ICRC is verified over the segments where they lie
// before anything of the packet reaches a queue pair, so a corrupted packet
// leaves no byte behind — except an RDMA Write or Send Middle whose payload
// lies in one segment (rc::RcDevice::DeferIcrc): the device checks its ICRC
// as it places it, in one pass, where the packet's own good copy must write
// the same bytes before the message can complete (rc::QueuePair::
// InPlaceTarget). The
// payload is handed on in place when it lies in one segment (a chain from a
// zero-copy sender: header | payload | pad+ICRC), and copied together only
// when a segment boundary cuts it.
void Engine::ReceiveRoce(const uint8_t* head, size_t avail, size_t len, const rte_mbuf* m, uint64_t now) {
  rc::DeviceCounters& dc = rc_->counters;
  ParseOptions po = opts_.rc.parse;
  if (m && po.verify_ip_checksum && port::RxIpChecksum(m) == port::RxChecksum::kGood)
    po.verify_ip_checksum = false;
  RocePacket& p = rx_pkt_;  // reused: no packet struct cleared per frame
  FrameLayout lay;
  bool straddle = false;
  Error e = ParseRoceHeaders(head, avail, len, &p, &lay, &straddle, po);
  if (straddle) {  // headers cut by a segment boundary: rare, copy the frame together
    ByteSpan frame;
    if (m && Linearize(m, &frame)) ReceiveRoce(frame.data(), frame.size(), frame.size(), nullptr, now);
    return;
  }
  dc.rx_frames++;
  if (e != Error::kOk) {
    dc.rx_errors[static_cast<size_t>(e)]++;
    return;
  }
  if (po.verify_icrc && rc::RcDevice::DeferIcrc(p.bth.opcode, lay.payload_len) && DeferIcrc(head, avail, m, lay, p)) {
    rc_->OnPacket(p, now);  // checks the ICRC (as it places the payload) before anything acts on it
    p.icrc_deferred = false;  // (p is reused: every other packet leaves here with it clear)
    return;
  }
  if (lay.end <= avail) {  // the whole datagram in the first segment
    p.payload = ByteSpan(head + lay.payload, lay.payload_len);
    ReadPadIcrc(head, avail, m, lay, p);
    if (po.verify_icrc && ComputeIcrc(ByteSpan(head + lay.l3, lay.icrc - lay.l3)) != p.icrc) {
      dc.rx_errors[static_cast<size_t>(Error::kIcrcMismatch)]++;
      return;
    }
  } else if (m && ChainPayloadCut(m, lay) && lay.payload_len <= kScratch) {
    // A chain whose payload a segment boundary cuts (a NIC's scatter, a
    // copying sender's chain): the payload copied together into scratch_ as
    // its CRC is folded, one pass instead of the ICRC's and then the copy's.
    if (!IcrcLinearizePayload(head, m, lay, p)) return;
  } else {
    // A chain: the ICRC over the segments in place, up to the ICRC itself.
    Icrc c;
    c.BeginAll(ByteSpan(head + lay.l3, std::min<size_t>(avail, lay.icrc) - lay.l3));
    uint32_t off = static_cast<uint32_t>(avail);
    const rte_mbuf* seg = m->next;
    const rte_mbuf* pay_seg = nullptr;  // the segment holding the whole payload, if one does
    uint32_t pay_seg_off = 0;
    if (lay.payload + lay.payload_len <= avail) {
      pay_seg = m;
      pay_seg_off = 0;
    }
    for (; seg && off < lay.icrc; seg = seg->next) {
      const uint32_t n = std::min<uint32_t>(seg->data_len, lay.icrc - off);
      c.Update(ByteSpan(rte_pktmbuf_mtod(seg, const uint8_t*), n));
      if (lay.payload >= off && lay.payload + lay.payload_len <= off + seg->data_len) {
        pay_seg = seg;
        pay_seg_off = off;
      }
      off += seg->data_len;
    }
    if (!ReadPadIcrc(head, avail, m, lay, p)) {
      dc.rx_errors[static_cast<size_t>(Error::kTruncated)]++;
      return;
    }
    if (po.verify_icrc && c.Value() != p.icrc) {
      dc.rx_errors[static_cast<size_t>(Error::kIcrcMismatch)]++;
      return;
    }
    if (lay.payload_len == 0) {
      p.payload = ByteSpan();
    } else if (pay_seg) {
      p.payload = ByteSpan(rte_pktmbuf_mtod(pay_seg, const uint8_t*) + (lay.payload - pay_seg_off),
                           lay.payload_len);
    } else {  // cut, and longer than scratch_ (a shorter cut payload took IcrcLinearizePayload)
      Dropped(&EngineCounters::rx_too_long, "a received RoCE payload cut by segments and longer than the engine's scratch");
      return;
    }
  }
  rc_->OnPacket(p, now);
}


bool Engine::ChainPayloadCut(const rte_mbuf* m, const FrameLayout& lay) {
  if (lay.payload_len == 0) return false;
  const uint32_t pay_end = lay.payload + lay.payload_len;
  uint32_t off = 0;
  for (const rte_mbuf* s = m; s && off < pay_end; s = s->next) {
    if (lay.payload >= off && pay_end <= off + s->data_len) return false;  // in this segment
    off += s->data_len;
  }
  return true;
}

bool Engine::IcrcLinearizePayload(const uint8_t* head, const rte_mbuf* m, const FrameLayout& lay, RocePacket& p) {
  rc::DeviceCounters& dc = rc_->counters;
  Icrc c;
  if (!c.BeginAll(ByteSpan(head + lay.l3, lay.payload - lay.l3))) {
    dc.rx_errors[static_cast<size_t>(Error::kTruncated)]++;
    return false;
  }
  uint32_t crc = c.Value();
  const uint32_t pay_end = lay.payload + lay.payload_len;
  // The payload's pieces, gathered into scratch as one CRC stream
  // (mem::PlaceGatherCrc32: one tail and one reduction, not one per piece;
  // a chain of more segments than it takes at once, in batches), then the
  // pad (at most 3 bytes: at most 3 segments).
  mem::Piece pieces[mem::kPlaceGatherMax];
  ByteSpan pad[3];
  size_t np = 0, npad = 0, placed = 0;
  auto flush = [&] {
    crc = mem::PlaceGatherCrc32(scratch() + placed, pieces, np, crc);
    for (size_t i = 0; i < np; i++) placed += pieces[i].len;
    np = 0;
  };
  uint32_t off = 0;
  for (const rte_mbuf* s = m; s && off < lay.icrc; s = s->next) {
    const uint8_t* d = rte_pktmbuf_mtod(s, const uint8_t*);
    const uint32_t end = off + s->data_len;
    uint32_t a = std::max(off, lay.payload), b = std::min(end, pay_end);
    if (a < b) {
      if (np == mem::kPlaceGatherMax) flush();
      pieces[np++] = {d + (a - off), b - a};
    }
    a = std::max(off, pay_end);
    b = std::min(end, lay.icrc);
    if (a < b && npad < 3) pad[npad++] = ByteSpan(d + (a - off), b - a);
    off = end;
  }
  if (np) flush();
  for (size_t i = 0; i < npad; i++) crc = Icrc::Extend(crc, pad[i]);
  if (off < lay.icrc || !ReadPadIcrc(head, m->data_len, m, lay, p)) {
    dc.rx_errors[static_cast<size_t>(Error::kTruncated)]++;
    return false;
  }
  if (crc != p.icrc) {
    dc.rx_errors[static_cast<size_t>(Error::kIcrcMismatch)]++;
    return false;
  }
  p.payload = ByteSpan(scratch(), lay.payload_len);
  counters_.rx_linearized++;
  return true;
}

// The ICRC of what precedes the payload, the payload where it lies (in one
// segment), the pad and the ICRC, for the device to check as it places the
// payload (RocePacket::icrc_deferred). False if the payload is cut by a
// segment boundary (the caller checks the ICRC first, as for any packet).
bool Engine::DeferIcrc(const uint8_t* head, size_t avail, const rte_mbuf* m, const FrameLayout& lay,
                       RocePacket& p) {
  const uint8_t* pay;
  if (lay.payload + lay.payload_len <= avail) {
    pay = head + lay.payload;
  } else if (m && lay.payload == avail && m->next && m->next->data_len >= lay.payload_len) {
    pay = rte_pktmbuf_mtod(m->next, const uint8_t*);  // a zero-copy sender's payload segment
  } else {
    return false;
  }
  if (!ReadPadIcrc(head, avail, m, lay, p)) return false;
  Icrc c;
  if (!c.BeginAll(ByteSpan(head + lay.l3, lay.payload - lay.l3))) return false;
  p.payload = ByteSpan(pay, lay.payload_len);
  p.icrc_partial = c.Value();
  p.icrc_deferred = true;
  return true;
}

void Engine::AddPostSource(PostSource* s) { post_sources_.push_back(s); }

void Engine::RemovePostSource(PostSource* s) {
  post_sources_.erase(std::remove(post_sources_.begin(), post_sources_.end(), s), post_sources_.end());
}

size_t Engine::Poll() {
  EngineLock l(&mu_);
  in_poll_ = true;  // a post from inside the pass (a callback, a drained ring) waits for its RC turn
  tx_flush_at_ = opts_.burst;  // frames go in bursts until the pass ends
  posted_in_pass_ = false;
  counters_.polls++;
  size_t drained = 0;
  for (PostSource* s : post_sources_) drained += s->DrainPosts();
  const uint64_t now = NowNs();
  rte_mbuf* pkts[64];
  const uint16_t burst = std::min<uint16_t>(opts_.burst, 64);
  // Every RX queue of a port whose traffic RSS spreads over all of them
  // (net_af_xdp: a socket per channel); else this engine's queue.
  uint16_t rx_total = 0;
  for (uint16_t rxq = 0; rxq < rx_queue_count_; rxq++) {
    const uint16_t n = port_->RxBurst(rx_queue_count_ == 1 ? opts_.queue : rxq, pkts, burst);
    rx_total += n;
    if (n > 1 && pkts[0]->nb_segs > 1) {  // large frames: 3 mbufs each
      for (int i = -port::kPrefetchAhead; i < n; i++) {
        port::PrefetchAhead(pkts, n, i);
        if (i >= 0) HandleRx(pkts[i], now);
      }
    } else {
      // One-segment frames: each one's first and last data lines (headers;
      // payload and ICRC) fetched kAhead frames before it is handled, so the
      // misses of a burst another core wrote overlap instead of coming one
      // frame after the other (the mbufs' first lines, which give the address,
      // RxBurst's accounting has just read). Split-mode 8 B Write: 0.87x the
      // time (the receiver had spent ~30% of its time on the first load).
      constexpr uint16_t kAhead = 4;
      const auto fetch = [](const rte_mbuf* m) {
        const char* d = rte_pktmbuf_mtod(m, const char*);
        rte_prefetch0(d);
        rte_prefetch0(d + m->data_len - 1);
      };
      for (uint16_t i = 0; i < n && i < kAhead; i++) fetch(pkts[i]);
      for (uint16_t i = 0; i < n; i++) {
        if (i + kAhead < n) fetch(pkts[i + kAhead]);
        HandleRx(pkts[i], now);
      }
    }
    port::FreeReceived(pkts, n);  // one trip to the mempool for the burst
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
  if (kernel_ && kernel_->generation() != addr_generation_) [[unlikely]] {
    const uint64_t g = kernel_->generation();
    // The interface's addresses changed (identity = kernel): the CM answers
    // for the new set; connections on a removed address keep their headers.
    addr_generation_ = g;
    std::vector<IpAddr> addrs;
    for (const port::IpPrefix& a : port_->Addrs()) addrs.push_back(a.addr);
    cm_->SetAddrs(std::move(addrs));
  }
  const size_t sent = rc_->Poll(now, 256);
  const uint64_t cm_due = cm_->NextDeadline();
  if (cm_due && cm_due <= now) cm_->Poll(now);
  if (on_poll) on_poll(now);
  FlushTx();
  in_poll_ = false;
  tx_flush_at_ = 1;
  return rx_total + sent + looped + drained + (posted_in_pass_ ? 1 : 0);
}

void Engine::Doorbell(rc::QueuePair& qp, bool idle) {
  const bool dedicated = running();
  if (!idle || !opts_.tx_on_post || in_poll_ || dedicated) {
    // Only a dedicated loop naps and needs the kick (a seq_cst store: a full
    // barrier; skipping it made a split-mode 8 B Write 0.97x the time), and
    // not from inside its own pass (a post drained from a posting ring, a
    // callback's): that pass, or the next one, sends it, and a pass that
    // saw a post counts as work (posted_in_pass_), after which the loop
    // passes again rather than napping. An inline engine's next pass is its
    // poller's next GetResults. A Start() racing with this post begins with
    // a pass, which finds the request.
    if (in_poll_) posted_in_pass_ = true;
    else if (dedicated) Kick();
    return;
  }
  // Inline mode, from the posting thread under mu_ (PostSend's contract),
  // outside any pass: nothing else is touching the device or the TX queue.
  mu_.AssertHeld();
  tx_flush_at_ = opts_.burst;  // the post's packets in one burst
  const size_t sent = rc_->TransmitNow(qp, NowNs());
  tx_flush_at_ = 1;
  if (sent == 0) return;
  counters_.tx_on_post++;
  FlushTx();
}

// ---- dedicated mode ----------------------------------------------------------------------

void Engine::Loop() {
  uint64_t idle_since = 0, nap = 0;
  schedstat_fd_ = -2;  // this thread's own, opened by its first CheckContention
  run_delay_ = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    if (Poll() != 0) {
      idle_since = 0;
      nap = 0;
      continue;
    }
    const uint64_t now = NowNs();
    if (opts_.idle_sleep_max_ns == 0) {
      IdleSpin(now);
      continue;
    }
    if (idle_since == 0 || kicked_.exchange(false)) idle_since = now;
    // CPUs taken by threads that do not yield, and a frame to wake it: sleep
    // at once. Spinning, or yielding (which hands the CPU to such a thread for
    // the rest of its slice), keeps the CPU from the threads this one waits for.
    bool hogged = hogged_.load(std::memory_order_relaxed);
    if (hogged && now - hog_seen_ >= kContentionHoldNs) hogged_.store(hogged = false, std::memory_order_relaxed);
    if (!hogged && now - idle_since < opts_.idle_spin_ns) {
      IdleSpin(now);
      continue;
    }
    // A frame ends a nap on the RX interrupt at once: no need to start short.
    nap = rx_wakeable_ ? opts_.idle_sleep_max_ns : nap ? std::min(nap * 2, opts_.idle_sleep_max_ns) : 1000;
    Nap(nap);
    if (opts_.adaptive_yield && rx_wakeable_) {
      const uint64_t t = NowNs();
      if (t - contention_checked_ >= kContentionCheckNs) CheckContention(t);
    }
  }
  if (schedstat_fd_ >= 0) close(schedstat_fd_);
  schedstat_fd_ = -2;
}

void Engine::Nap(uint64_t ns) {
  napping_.store(true);  // then kicked_ is read: Kick() sees one or the other
  if (!kicked_.exchange(false) && !stop_.load()) {
    pollfd fds[1 + kMaxRxQueues];
    fds[0] = {wake_fd_, POLLIN, 0};
    nfds_t nfds = 1;
    for (uint16_t i = 0; i < rx_queue_count_; i++) {
      const uint16_t q = rx_queue_count_ == 1 ? opts_.queue : i;
      const int fd = port_->RxWaitFd(q);
      if (fd < 0) continue;
      port_->ArmRxInterrupt(q, true);
      fds[nfds++] = {fd, POLLIN, 0};
    }
    const timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    naps_.fetch_add(1, std::memory_order_relaxed);  // counted as it starts: a nap may be long
    const int n = ppoll(fds, nfds, &ts, nullptr);
    for (uint16_t i = 0; i < rx_queue_count_; i++) port_->ArmRxInterrupt(rx_queue_count_ == 1 ? opts_.queue : i, false);
    bool rx_woke = false;
    for (nfds_t i = 1; i < nfds; i++) rx_woke |= (fds[i].revents & POLLIN) != 0;
    if (n > 0 && rx_woke) rx_wakes_.fetch_add(1, std::memory_order_relaxed);
    if (n > 0 && (fds[0].revents & POLLIN)) {
      uint64_t v;
      [[maybe_unused]] ssize_t r = read(wake_fd_, &v, sizeof v);
    }
  }
  napping_.store(false);
  wake_pending_.store(false);  // a Kick from now on writes again (a stale count: one early wake)
}

void Engine::IdleSpin(uint64_t now) {
  if (opts_.adaptive_yield && now - contention_checked_ >= kContentionCheckNs) CheckContention(now);
  if (!opts_.idle_yield && !contended_.load(std::memory_order_relaxed)) {
    rte_pause();
    return;
  }
  sched_yield();
  idle_yields_.fetch_add(1, std::memory_order_relaxed);
  if (rx_wakeable_ && opts_.idle_sleep_max_ns != 0) {
    const uint64_t back = NowNs();
    if (back - now >= kHogYieldNs) {
      hog_seen_ = back;
      hogged_.store(true, std::memory_order_relaxed);
    }
  }
}

void Engine::CheckContention(uint64_t now) {
  const uint64_t since = now - contention_checked_;
  contention_checked_ = now;
  rusage ru{};
  if (getrusage(RUSAGE_THREAD, &ru) != 0) return;
  // Naps are voluntary switches; a thread that was runnable and lost its CPU
  // (preempted, or a yield that handed it over) counts an involuntary one.
  if (ivcsw_ >= 0 && ru.ru_nivcsw > ivcsw_) contention_seen_ = now;
  ivcsw_ = ru.ru_nivcsw;
  // A loop that sleeps until a frame wakes it is seldom preempted; it waits
  // for a CPU after each wake instead. More than 1/16 of the time since the
  // last look spent runnable without a CPU is contention too.
  if (schedstat_fd_ == -2) schedstat_fd_ = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (schedstat_fd_ >= 0) {
    char buf[96];
    const ssize_t len = pread(schedstat_fd_, buf, sizeof buf - 1, 0);
    unsigned long long run = 0, wait = 0;
    if (len > 0 && (buf[len] = '\0', std::sscanf(buf, "%llu %llu", &run, &wait) == 2)) {
      if (run_delay_ != 0 && (wait - run_delay_) * 16 > since) contention_seen_ = now;
      run_delay_ = wait;
    }
  }
  const bool on = contention_seen_ != 0 && now - contention_seen_ < kContentionHoldNs;
  if (on != contended_.load(std::memory_order_relaxed)) contended_.store(on, std::memory_order_relaxed);
}

void Engine::Kick() {
  kicked_.store(true);
  if (napping_.load() && !wake_pending_.exchange(true)) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t r = write(wake_fd_, &one, sizeof one);
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
    thread_ = std::thread([this] {
      // An lcore id of its own (a registered non-EAL thread) gives the
      // thread DPDK's per-lcore mempool cache: without one every mbuf it
      // frees (a ring pair's receiver frees three a 4 KB frame) and takes
      // goes through the pool's shared ring, first in first out, so the
      // sender's next mbufs are the coldest of the pool.
      const bool registered = rte_lcore_id() == LCORE_ID_ANY && rte_thread_register() == 0;
      Loop();
      if (registered) rte_thread_unregister();
    });
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
      EngineLock l(&mu_);
      const neighbor::LookupResult r = LookupNeighbor(peer);  // ours or the kernel's
      if (r.status == neighbor::ResolveStatus::kResolved) return r.mac;
      if (r.status == neighbor::ResolveStatus::kFailed)
        return absl::NotFoundError(absl::StrCat(port_->kernel_identity() ? "the kernel has no route or neighbour for "
                                                                         : "no ARP/NDP answer from ",
                                                peer.ToString()));
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
  if (port::KernelIface* k = port_->kernel(); k && k->kernel_identity()) {
    // The kernel's routes and neighbours (no ARP/ND of ours on such a port).
    const port::KernelNeighbor kn = k->Resolve(peer, NowNs());
    neighbor::LookupResult r;
    r.status = kn.status == port::KernelNeighbor::kResolved  ? neighbor::ResolveStatus::kResolved
               : kn.status == port::KernelNeighbor::kPending ? neighbor::ResolveStatus::kPending
                                                             : neighbor::ResolveStatus::kFailed;
    r.mac = kn.mac;
    if (kn.status == port::KernelNeighbor::kFailed && kernel_route_logged_.insert(peer.ToString()).second)
      rte_log(RTE_LOG_WARNING, g_engine_logtype, "roce: %s: cannot reach %s: %s\n", k->name().c_str(),
              peer.ToString().c_str(), kn.why.c_str());
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
      EngineLock l(&mu_);
      if (pred()) return true;
    }
    if (NowNs() > deadline) return false;
    if (running_.load())
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    else
      Poll();
  }
}

size_t Engine::Owed() const {
  return cm_->Owed() + port_->TxBacklog(opts_.queue) + tx_.size();
}

bool Engine::Linger(uint64_t timeout_ns) {
  return WaitUntil([this] { return Owed() == 0; }, timeout_ns);
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
