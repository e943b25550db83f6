// The ndsupport.h entry points, the provider object, and the pieces every
// object shares (overlapped requests, addresses).
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstring>

#include <chrono>
#include <thread>

#include "nd2api/src/nd2.h"
#include "stack/port/eal.h"

namespace roce::nd2 {

// ---- overlapped requests ---------------------------------------------------------------------------

HRESULT OverlappedSet::Pend(OVERLAPPED* ov, std::function<void()> on_cancel, uintptr_t tag) {
  MarkOverlappedPending(ov);
  std::lock_guard<std::mutex> l(mu_);
  pending_.push_back({ov, std::move(on_cancel), tag});
  return ND_PENDING;
}

bool OverlappedSet::Complete(OVERLAPPED* ov, HRESULT status, ULONG bytes) {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = pending_.begin();
    while (it != pending_.end() && it->ov != ov) ++it;
    if (it == pending_.end()) return false;
    pending_.erase(it);
  }
  CompleteOverlapped(file_.get(), ov, status, bytes);
  return true;
}

bool OverlappedSet::CompleteTagged(uintptr_t tag, HRESULT status, ULONG bytes) {
  OVERLAPPED* ov = nullptr;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = pending_.begin(); it != pending_.end(); ++it)
      if (it->tag == tag) {
        ov = it->ov;
        pending_.erase(it);
        break;
      }
  }
  if (!ov) return false;
  CompleteOverlapped(file_.get(), ov, status, bytes);
  return true;
}

size_t OverlappedSet::CompleteAllTagged(uintptr_t tag, HRESULT status) {
  std::vector<OVERLAPPED*> done;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->tag == tag) {
        done.push_back(it->ov);
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (OVERLAPPED* ov : done) CompleteOverlapped(file_.get(), ov, status, 0);
  return done.size();
}

bool OverlappedSet::HasTag(uintptr_t tag) {
  std::lock_guard<std::mutex> l(mu_);
  for (const Pending& p : pending_)
    if (p.tag == tag) return true;
  return false;
}

HRESULT OverlappedSet::CancelAll() {
  std::deque<Pending> all;
  {
    std::lock_guard<std::mutex> l(mu_);
    all.swap(pending_);
  }
  // In order: a client that cancels and then polls its port with a zero
  // timeout finds every cancelled request there, oldest first (ndcq).
  for (Pending& p : all) {
    if (p.on_cancel) p.on_cancel();
    CompleteOverlapped(file_.get(), p.ov, ND_CANCELED, 0);
  }
  return ND_SUCCESS;
}

HRESULT OverlappedSet::Result(OVERLAPPED* ov, BOOL wait) {
  if (!ov) return ND_INVALID_PARAMETER;
  if (wait) WaitForOverlapped(ov, INFINITE);
  return static_cast<HRESULT>(static_cast<uint32_t>(
      __atomic_load_n(reinterpret_cast<const ULONG_PTR*>(&ov->Internal), __ATOMIC_SEQ_CST)));
}

// ---- addresses ------------------------------------------------------------------------------------

bool FromSockaddr(const sockaddr* a, ULONG len, wire::IpAddr* ip, uint16_t* port) {
  if (!a) return false;
  if (a->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
    const auto* s = reinterpret_cast<const sockaddr_in*>(a);
    *ip = wire::IpAddr::FromV4(ntohl(s->sin_addr.s_addr));
    *port = ntohs(s->sin_port);
    return true;
  }
  if (a->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
    const auto* s = reinterpret_cast<const sockaddr_in6*>(a);
    *ip = wire::IpAddr::FromV6(s->sin6_addr.s6_addr);
    *port = ntohs(s->sin6_port);
    return true;
  }
  return false;
}

ULONG SockaddrLen(const wire::IpAddr& ip) {
  return ip.IsV4() ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
}

void ToSockaddr(const wire::IpAddr& ip, uint16_t port, sockaddr* out) {
  if (ip.IsV4()) {
    sockaddr_in s{};
    s.sin_family = AF_INET;
    s.sin_port = htons(port);
    s.sin_addr.s_addr = htonl(ip.V4());
    std::memcpy(out, &s, sizeof s);
  } else {
    sockaddr_in6 s{};
    s.sin6_family = AF_INET6;
    s.sin6_port = htons(port);
    std::memcpy(s.sin6_addr.s6_addr, ip.b.data(), 16);
    std::memcpy(out, &s, sizeof s);
  }
}

HRESULT FillAddressList(const std::vector<wire::IpAddr>& ips, SOCKET_ADDRESS_LIST* list, ULONG* cb) {
  if (!cb) return ND_INVALID_PARAMETER;
  // Header, the SOCKET_ADDRESS array, then the sockaddrs it points to.
  size_t need = offsetof(SOCKET_ADDRESS_LIST, Address) + ips.size() * sizeof(SOCKET_ADDRESS);
  need += ips.size() * sizeof(sockaddr_in6);  // room for either family
  if (!list || *cb < need) {
    *cb = static_cast<ULONG>(need);
    return ND_BUFFER_OVERFLOW;
  }
  list->iAddressCount = static_cast<INT>(ips.size());
  uint8_t* store = reinterpret_cast<uint8_t*>(list) + offsetof(SOCKET_ADDRESS_LIST, Address) +
                   ips.size() * sizeof(SOCKET_ADDRESS);
  for (size_t i = 0; i < ips.size(); i++) {
    sockaddr* sa = reinterpret_cast<sockaddr*>(store);
    ToSockaddr(ips[i], 0, sa);
    list->Address[i].lpSockaddr = sa;
    list->Address[i].iSockaddrLength = static_cast<INT>(SockaddrLen(ips[i]));
    store += sizeof(sockaddr_in6);
  }
  *cb = static_cast<ULONG>(need);
  return ND_SUCCESS;
}

// ---- the provider ------------------------------------------------------------------------------------

namespace {
std::mutex g_mu;
int g_startups = 0;
Provider* g_provider = nullptr;
}  // namespace

Provider* Provider::Get() { return g_provider; }

HRESULT Provider::QueryInterface(REFIID riid, void** ppv) {
  if (!ppv) return E_POINTER;
  if (riid == IID_IUnknown || riid == IID_IND2Provider) {
    *ppv = static_cast<IND2Provider*>(this);
    return S_OK;
  }
  *ppv = nullptr;
  return E_NOINTERFACE;
}

Adapter* Provider::FindByAddress(const wire::IpAddr& ip) {
  for (auto& a : adapters_)
    if (a->HasAddress(ip)) return a.get();
  return nullptr;
}

HRESULT Provider::QueryAddressList(SOCKET_ADDRESS_LIST* list, ULONG* cb) {
  std::vector<wire::IpAddr> all;
  for (auto& a : adapters_) all.insert(all.end(), a->addrs().begin(), a->addrs().end());
  return FillAddressList(all, list, cb);
}

HRESULT Provider::ResolveAddress(const sockaddr* addr, ULONG len, UINT64* id) {
  wire::IpAddr ip;
  uint16_t port;
  if (!FromSockaddr(addr, len, &ip, &port)) return ND_INVALID_PARAMETER_1;
  if (!id) return ND_INVALID_PARAMETER_3;
  Adapter* a = FindByAddress(ip);
  if (!a) return ND_INVALID_ADDRESS;
  *id = a->id();
  return ND_SUCCESS;
}

HRESULT Provider::OpenAdapter(REFIID iid, UINT64 id, VOID** pp) {
  if (!pp) return ND_INVALID_PARAMETER_3;
  for (auto& a : adapters_)
    if (a->id() == id) return a->QueryInterface(iid, pp);
  *pp = nullptr;
  return ND_INVALID_PARAMETER_2;
}

bool Provider::PollInline() {
  bool any = false;
  for (auto& a : adapters_) any |= a->Progress() > 0;
  return any;
}

namespace {
// Threads blocked in a wait drive the inline adapters: one pass per call.
// A wait that sees nothing move for kWaitSpinNs starts napping (1 us
// doubling to kWaitNapMaxNs, never past the wait's budget), so a thread
// blocked for long in GetConnectionRequest or a Notify costs little CPU; a
// wait that follows a pause of more than kWaitSpinNs in calls starts fresh.
constexpr uint64_t kWaitSpinNs = 200'000;
constexpr uint64_t kWaitNapMaxNs = 1'000'000;
thread_local uint64_t t_idle_since = 0, t_last_call = 0, t_nap = 0;

uint64_t MonoNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

bool InlineWaitHook(uint32_t budget_ms) {
  Provider* p = Provider::Get();
  if (!p) return false;
  if (p->PollInline()) {
    t_idle_since = t_nap = 0;
    return true;
  }
  const uint64_t now = MonoNs();
  if (t_idle_since == 0 || now - t_last_call > kWaitSpinNs) t_idle_since = now, t_nap = 0;
  t_last_call = now;
  if (budget_ms == 0 || now - t_idle_since < kWaitSpinNs) return false;
  t_nap = t_nap ? std::min(t_nap * 2, kWaitNapMaxNs) : 1000;
  std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<uint64_t>(t_nap, uint64_t{budget_ms} * 1'000'000)));
  t_last_call = MonoNs();
  return false;
}
}  // namespace

HRESULT Provider::Startup() {
  std::lock_guard<std::mutex> l(g_mu);
  if (g_startups++ > 0) return ND_SUCCESS;
  auto cfg = LoadNd2Config();
  if (!cfg.ok()) {
    std::fprintf(stderr, "libnd2: %s\n", std::string(cfg.status().message()).c_str());
    g_startups = 0;
    return ND_DEVICE_NOT_READY;
  }
  std::vector<port::PortProfile> profiles;
  std::vector<tools::HostOptions> hosts;
  for (const AdapterConfig& a : cfg->adapters) {
    tools::HostOptions h;
    h.profile = a.profile;
    h.iface = a.iface;
    h.overrides = a.overrides;
    h.capture = a.capture;
    auto p = tools::HostProfile(h);
    if (!p.ok()) {
      std::fprintf(stderr, "libnd2: %s [%s]: %s\n", cfg->path.c_str(), a.name.c_str(),
                   std::string(p.status().message()).c_str());
      g_startups = 0;
      return ND_DEVICE_NOT_READY;
    }
    for (const std::string& ip : a.ips) {
      if (auto s = port::SetAddress(&*p, ip); !s.ok()) {
        std::fprintf(stderr, "libnd2: %s [%s] ip %s: %s\n", cfg->path.c_str(), a.name.c_str(), ip.c_str(),
                     std::string(s.message()).c_str());
        g_startups = 0;
        return ND_DEVICE_NOT_READY;
      }
    }
    profiles.push_back(*p);
  }
  if (!port::EalInitialized()) {
    if (auto s = port::InitEal(port::EalOptionsFor(profiles)); !s.ok()) {
      std::fprintf(stderr, "libnd2: %s\n", std::string(s.message()).c_str());
      g_startups = 0;
      return ND_DEVICE_NOT_READY;
    }
  }
  auto* prov = new Provider();
  for (size_t i = 0; i < profiles.size(); i++) {
    engine::EngineOptions eo;
    auto host = tools::OpenStackHost(profiles[i], eo);
    if (!host.ok()) {
      std::fprintf(stderr, "libnd2: %s [%s]: %s\n", cfg->path.c_str(), cfg->adapters[i].name.c_str(),
                   std::string(host.status().message()).c_str());
      delete prov;
      g_startups = 0;
      return ND_DEVICE_NOT_READY;
    }
    const wire::MacAddr mac = host->port->mac();
    const uint64_t id = (uint64_t{0x4E44} << 48) | (uint64_t{i} << 40) | (uint64_t{mac.b[2]} << 24) |
                        (uint64_t{mac.b[3]} << 16) | (uint64_t{mac.b[4]} << 8) | mac.b[5];
    prov->adapters_.push_back(std::make_unique<Adapter>(cfg->adapters[i], std::move(*host), id));
  }
  g_provider = prov;
  // Threads blocked in a wait drive inline adapters.
  SetProgressHook(InlineWaitHook);
  return ND_SUCCESS;
}

HRESULT Provider::Cleanup() {
  std::lock_guard<std::mutex> l(g_mu);
  if (g_startups == 0) return ND_SUCCESS;
  if (--g_startups > 0) return ND_SUCCESS;
  SetProgressHook(nullptr);
  delete g_provider;
  g_provider = nullptr;
  return ND_SUCCESS;
}

}  // namespace roce::nd2

// ---- ndsupport.h ----------------------------------------------------------------------------------------

using roce::nd2::Provider;

extern "C" {

HRESULT NdStartup(void) { return Provider::Startup(); }

HRESULT NdCleanup(void) { return Provider::Cleanup(); }

void NdFlushProviders(void) {}

HRESULT NdQueryAddressList(DWORD flags, SOCKET_ADDRESS_LIST* list, SIZE_T* cb) {
  (void)flags;
  Provider* p = Provider::Get();
  if (!p) return ND_DEVICE_NOT_READY;
  if (!cb) return ND_INVALID_PARAMETER_3;
  ULONG c = static_cast<ULONG>(*cb);
  const HRESULT h = p->QueryAddressList(list, &c);
  *cb = c;
  return h;
}

HRESULT NdResolveAddress(const struct sockaddr* remote, SIZE_T remote_len, struct sockaddr* local,
                         SIZE_T* local_len) {
  Provider* p = Provider::Get();
  if (!p) return ND_DEVICE_NOT_READY;
  roce::wire::IpAddr ip;
  uint16_t port;
  if (!roce::nd2::FromSockaddr(remote, static_cast<ULONG>(remote_len), &ip, &port)) return ND_INVALID_PARAMETER_1;
  if (!local_len) return ND_INVALID_PARAMETER_4;
  // The local address of the same family on the remote's subnet, else the
  // first of that family (a route is one hop here: the port's link).
  const roce::wire::IpAddr* best = nullptr;
  for (const auto& a : p->adapters())
    for (const auto& mine : a->addrs()) {
      if (mine.IsV4() != ip.IsV4()) continue;
      if (mine == ip) best = &mine;  // loopback
      if (!best) best = &mine;
      if (ip.IsV4() && (mine.V4() >> 8) == (ip.V4() >> 8)) best = &mine;
    }
  if (!best) return ND_INVALID_ADDRESS;
  const ULONG need = roce::nd2::SockaddrLen(*best);
  if (!local || *local_len < need) {
    *local_len = need;
    return ND_BUFFER_OVERFLOW;
  }
  roce::nd2::ToSockaddr(*best, 0, local);
  *local_len = need;
  return ND_SUCCESS;
}

HRESULT NdCheckAddress(const struct sockaddr* addr, SIZE_T len) {
  Provider* p = Provider::Get();
  if (!p) return ND_DEVICE_NOT_READY;
  roce::wire::IpAddr ip;
  uint16_t port;
  if (!roce::nd2::FromSockaddr(addr, static_cast<ULONG>(len), &ip, &port)) return ND_INVALID_PARAMETER_1;
  return p->FindByAddress(ip) ? ND_SUCCESS : ND_INVALID_ADDRESS;
}

HRESULT NdOpenAdapter(REFIID iid, const struct sockaddr* addr, SIZE_T len, VOID** pp) {
  Provider* p = Provider::Get();
  if (!p) return ND_DEVICE_NOT_READY;
  UINT64 id;
  const HRESULT h = p->ResolveAddress(addr, static_cast<ULONG>(len), &id);
  if (FAILED(h)) return h;
  return p->OpenAdapter(iid, id, pp);
}

HRESULT NdOpenV1Adapter(const struct sockaddr* addr, SIZE_T len, INDAdapter** pp) {
  (void)addr;
  (void)len;
  if (pp) *pp = nullptr;
  return ND_NOT_SUPPORTED;
}

}  // extern "C"
