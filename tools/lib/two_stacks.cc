// SPDX-License-Identifier: MIT
#include "tools/lib/two_stacks.h"

#include <absl/strings/str_cat.h>

namespace roce::tools {

absl::StatusOr<std::unique_ptr<TwoStacks>> TwoStacks::Open(const TwoStacksOptions& o) {
  std::unique_ptr<TwoStacks> t(new TwoStacks());
  for (int i = 0; i < 2; i++) {
    port::PortProfile p;
    p.driver = "net_ring";
    p.ring = o.ring;
    p.ring_side = i ? port::RingSide::kB : port::RingSide::kA;
    p.mtu = o.port_mtu;
    p.mbufs = o.mbufs;
    p.mbuf_data_room = o.mbuf_data_room;
    if (auto s = port::SetAddress(&p, i ? "10.0.0.2/24" : "10.0.0.1/24"); !s.ok()) return s;
    if (auto s = port::SetAddress(&p, i ? "fd00::2/64" : "fd00::1/64"); !s.ok()) return s;
    wire::MacAddr mac;
    wire::MacAddr::FromString(i ? "02:00:00:00:00:02" : "02:00:00:00:00:01", &mac);
    p.mac = mac;
    p.faults = i ? o.faults_b : o.faults;
    p.rx_copy = o.rx_copy;
    if (i == 0) p.capture = o.capture_a;
    engine::EngineOptions eo;
    eo.rc.tuning = o.tuning;
    if (o.max_qps) eo.rc.max_qps = o.max_qps;
    eo.cm = o.cm;
    if (o.mem_seed) eo.rc.mem_seed = o.mem_seed + i;
    eo.arp_retry_ns = 20'000'000;
    eo.zero_copy_min = o.zero_copy_min;
    eo.tx_on_post = o.tx_on_post;
    eo.idle_yield = o.idle_yield;
    eo.adaptive_yield = o.adaptive_yield;
    eo.idle_sleep_max_ns = o.idle_sleep_max_ns;
    auto h = host::OpenStackHost(p, eo);
    if (!h.ok()) return h.status();
    static_cast<host::StackHost&>(t->s_[i]) = std::move(*h);
    t->s_[i].scq = std::make_unique<rc::CompletionQueue>(o.cq_depth);
    t->s_[i].rcq = std::make_unique<rc::CompletionQueue>(o.cq_depth);
  }
  if (auto s = t->Connect(o); !s.ok()) return s;
  return t;
}

TwoStacks::~TwoStacks() {
  for (Side& s : s_) {
    if (!s.eng) continue;
    s.eng->Stop();
    roce::engine::EngineLock l(&s.eng->mu());
    if (s.qp) s.eng->DestroyQp(s.qp);
  }
  for (Side& s : s_) {
    s.eng.reset();
    s.port.reset();
  }
}

absl::Status TwoStacks::Connect(const TwoStacksOptions& o) {
  for (int i = 0; i < 2; i++) {
    roce::engine::EngineLock l(&s_[i].eng->mu());
    s_[i].qp = s_[i].eng->CreateQp(o.caps, s_[i].scq.get(), s_[i].rcq.get(), nullptr, 100 + i);
    if (!s_[i].qp || !s_[i].qp->ToInit()) return absl::InternalError("cannot create a QP");
  }
  for (int i = 0; i < 2; i++) {
    host::QpConnectParams c;
    c.peer = *s_[1 - i].eng->LocalIp(o.ipv6);
    c.resolve_timeout_ns = 2'000'000'000ull;
    c.attr.path_mtu = o.path_mtu;
    c.attr.dest_qpn = s_[1 - i].qp->qpn();
    c.attr.sq_psn = 0x100 + 0x1000 * i;
    c.attr.rq_psn = 0x100 + 0x1000 * (1 - i);
    c.attr.timeout = 12;
    c.attr.peer_repairs = true;  // both ends are this stack
    // The other side answers ARP/NDP from its own polling thread meanwhile.
    if (auto st = s_[1 - i].eng->Start(); !st.ok()) return st;
    const absl::Status st = host::ConnectQp(*s_[i].eng, s_[i].qp, c);
    s_[1 - i].eng->Stop();
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

size_t TwoStacks::PollBoth() {
  size_t n = 0;
  for (Side& s : s_)
    if (!s.eng->running()) n += s.eng->Poll();
  return n;
}


std::vector<rc::Completion> TwoStacks::Wait(rc::CompletionQueue& cq, size_t n, uint64_t timeout_ns) {
  std::vector<rc::Completion> out;
  const uint64_t t0 = s_[0].eng->NowNs();
  while (out.size() < n && s_[0].eng->NowNs() - t0 < timeout_ns) {
    PollBoth();
    rc::Completion c[32];
    const uint32_t k = cq.Poll(c, 32);
    out.insert(out.end(), c, c + k);
  }
  return out;
}

mem::RegionInfo TwoStacks::Register(Side& s, void* p, size_t len, uint32_t access, mem::Result* result) {
  roce::engine::EngineLock l(&s.eng->mu());
  mem::RegionInfo r{};
  const mem::Result res = s.eng->rc().memory().RegisterRegion(reinterpret_cast<uint64_t>(p), len, access, &r);
  if (result) *result = res;
  return r;
}

void TwoStacks::Deregister(Side& s, const mem::RegionInfo& r) {
  roce::engine::EngineLock l(&s.eng->mu());
  s.eng->rc().memory().DeregisterRegion(r.handle);
}

rc::PostResult TwoStacks::Post(Side& s, const rc::SendWr& w) {
  roce::engine::EngineLock l(&s.eng->mu());
  return s.qp->PostSend(w);
}

rc::PostResult TwoStacks::PostRecv(Side& s, const rc::RecvWr& w) {
  roce::engine::EngineLock l(&s.eng->mu());
  return s.qp->PostRecv(w);
}

}  // namespace roce::tools
