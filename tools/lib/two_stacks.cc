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
    if (i == 0) {
      p.capture = o.capture_a;
      p.faults = o.faults;
    }
    auto port = port::Port::Open(p);
    if (!port.ok()) return port.status();
    t->s_[i].port = std::move(*port);
    engine::EngineOptions eo;
    eo.rc.tuning = o.tuning;
    eo.arp_retry_ns = 20'000'000;
    auto e = engine::Engine::Create(t->s_[i].port.get(), eo);
    if (!e.ok()) return e.status();
    t->s_[i].eng = std::move(*e);
    t->s_[i].scq = std::make_unique<rc::CompletionQueue>(4096);
    t->s_[i].rcq = std::make_unique<rc::CompletionQueue>(4096);
  }
  if (auto s = t->Connect(o); !s.ok()) return s;
  return t;
}

TwoStacks::~TwoStacks() {
  for (Side& s : s_) {
    if (!s.eng) continue;
    s.eng->Stop();
    absl::MutexLock l(&s.eng->mu());
    if (s.qp) s.eng->DestroyQp(s.qp);
  }
  for (Side& s : s_) {
    s.eng.reset();
    s.port.reset();
  }
}

absl::Status TwoStacks::Connect(const TwoStacksOptions& o) {
  wire::IpAddr ip[2];
  wire::MacAddr mac[2];
  for (int i = 0; i < 2; i++) ip[i] = *s_[i].eng->LocalIp(o.ipv6);
  for (int i = 0; i < 2; i++) {
    // The other side answers ARP/NDP from its own polling thread meanwhile.
    if (auto st = s_[1 - i].eng->Start(); !st.ok()) return st;
    auto m = s_[i].eng->Resolve(ip[1 - i], 2'000'000'000ull);
    s_[1 - i].eng->Stop();
    if (!m.ok()) return m.status();
    mac[1 - i] = *m;
  }
  for (int i = 0; i < 2; i++) {
    absl::MutexLock l(&s_[i].eng->mu());
    s_[i].qp = s_[i].eng->CreateQp(o.caps, s_[i].scq.get(), s_[i].rcq.get(), nullptr, 100 + i);
    if (!s_[i].qp || !s_[i].qp->ToInit()) return absl::InternalError("cannot create a QP");
  }
  for (int i = 0; i < 2; i++) {
    absl::MutexLock l(&s_[i].eng->mu());
    rc::QpAttr a;
    a.path_mtu = o.path_mtu;
    a.dest_qpn = s_[1 - i].qp->qpn();
    a.sq_psn = 0x100 + 0x1000 * i;
    a.rq_psn = 0x100 + 0x1000 * (1 - i);
    a.timeout = 12;
    auto path = s_[i].eng->PathTo(ip[1 - i], mac[1 - i]);
    if (!path.ok()) return path.status();
    a.path = *path;
    if (!s_[i].qp->ToRtr(a)) return absl::InternalError("QP to RTR");
  }
  for (int i = 0; i < 2; i++) {
    absl::MutexLock l(&s_[i].eng->mu());
    if (!s_[i].qp->ToRts(s_[i].eng->NowNs())) return absl::InternalError("QP to RTS");
  }
  return absl::OkStatus();
}

size_t TwoStacks::PollBoth() { return s_[0].eng->Poll() + s_[1].eng->Poll(); }

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

mem::RegionInfo TwoStacks::Register(Side& s, void* p, size_t len, uint32_t access) {
  absl::MutexLock l(&s.eng->mu());
  mem::RegionInfo r{};
  s.eng->rc().memory().RegisterRegion(reinterpret_cast<uint64_t>(p), len, access, &r);
  return r;
}

void TwoStacks::Deregister(Side& s, const mem::RegionInfo& r) {
  absl::MutexLock l(&s.eng->mu());
  s.eng->rc().memory().DeregisterRegion(r.handle);
}

rc::PostResult TwoStacks::Post(Side& s, const rc::SendWr& w) {
  absl::MutexLock l(&s.eng->mu());
  return s.qp->PostSend(w);
}

rc::PostResult TwoStacks::PostRecv(Side& s, const rc::RecvWr& w) {
  absl::MutexLock l(&s.eng->mu());
  return s.qp->PostRecv(w);
}

}  // namespace roce::tools
