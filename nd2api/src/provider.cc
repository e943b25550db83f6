// SPDX-License-Identifier: MIT
// The ndsupport.h entry points, the provider object, and the pieces every
// object shares (overlapped requests, addresses).
#include <arpa/inet.h>
#include <poll.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <chrono>
#include <thread>

#include <absl/strings/str_cat.h>

#include "nd2api/src/nd2.h"
#include "stack/port/kernel_iface.h"
#include "stack/port/eal.h"

namespace roce::nd2 {

// ---- overlapped requests ---------------------------------------------------------------------------

HRESULT OverlappedSet::Pend(OVERLAPPED* ov, std::function<void()> on_cancel, uintptr_t tag) {
  MarkOverlappedPending(ov);
  std::lock_guard<std::mutex> l(mu_);
  pending_.push_back({ov, std::move(on_cancel), tag});
  count_.store(pending_.size(), std::memory_order_release);
  return ND_PENDING;
}

bool OverlappedSet::Complete(OVERLAPPED* ov, HRESULT status, ULONG bytes) {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = pending_.begin();
    while (it != pending_.end() && it->ov != ov) ++it;
    if (it == pending_.end()) return false;
    pending_.erase(it);
    count_.store(pending_.size(), std::memory_order_release);
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
        count_.store(pending_.size(), std::memory_order_release);
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
    count_.store(pending_.size(), std::memory_order_release);
  }
  for (OVERLAPPED* ov : done) CompleteOverlapped(file_.get(), ov, status, 0);
  return done.size();
}

bool OverlappedSet::HasTag(uintptr_t tag) {
  if (Empty()) return false;
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
    count_.store(0, std::memory_order_release);
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

// The provider's life, as Microsoft's ndsupport (ndfrmwrk.cpp) gives it to
// applications: NdStartup counts a reference, NdCleanup drops one and returns
// S_OK (ND_DEVICE_NOT_READY with none to drop). When the last goes, the
// helpers stop answering (ND_DEVICE_NOT_READY: the provider is closed), but
// objects the application still holds keep working — on Windows they hold the
// provider DLL loaded — and the adapters are torn down when the last of them
// is released (Adapter::Release) or, if never, at process exit. A closed
// provider still alive is opened again by the next NdStartup. Before it goes,
// every adapter lingers (kLingerNs at most) until the DREQs, REJs and RTUs its
// connection manager owes are on the wire and answered; at exit the
// connections still open are released first (DREQ / REJ), as the kernel's CM
// does for a process that dies with rdma_cm IDs open.
namespace {
std::mutex g_mu;
int g_startups = 0;
Provider* g_provider = nullptr;  // open (g_startups > 0) or closed with objects alive
bool g_atexit = false;
constexpr uint64_t kLingerNs = 1'000'000'000;

// Every adapter's references are the provider's own.
bool Unreferenced(const Provider& p) {
  for (const auto& a : p.adapters())
    if (a->refs() > 1) return false;
  return true;
}

// Tears the provider down (g_mu held): lingers for what it owes, then closes
// the adapters.
void Teardown() {
  for (const auto& a : g_provider->adapters()) a->Linger(kLingerNs);
  SetProgressHook(nullptr);
  delete g_provider;
  g_provider = nullptr;
}

// At exit, a provider still alive (no NdCleanup, or objects never released):
// its connections end on the wire, its progress threads stop before the
// process's static objects go. Nothing is freed: other threads may still
// hold the objects.
void AtExit() {
  std::unique_lock<std::mutex> l(g_mu, std::try_to_lock);
  if (!l.owns_lock() || !g_provider) return;
  StopCompletingOverlapped();
  for (const auto& a : g_provider->adapters()) a->ReleaseConnections();
  for (const auto& a : g_provider->adapters()) a->Linger(kLingerNs);
  for (const auto& a : g_provider->adapters()) a->StopProgress();
}
}  // namespace

Provider* Provider::Get() { return g_startups > 0 ? g_provider : nullptr; }
Provider* Provider::Live() { return g_provider; }

void Provider::AdapterUnreferenced() {
  std::lock_guard<std::mutex> l(g_mu);
  if (g_provider && g_startups == 0 && Unreferenced(*g_provider)) Teardown();
}

HRESULT Provider::QueryInterface(REFIID riid, void** ppv) {
  if (!ppv) return E_POINTER;
  if (riid == IID_IUnknown || riid == IID_IND2Provider) {
    *ppv = static_cast<IND2Provider*>(this);
    AddRef();
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
  for (auto& a : adapters_) {
    const std::vector<wire::IpAddr> mine = a->addrs();
    all.insert(all.end(), mine.begin(), mine.end());
  }
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
  return ND_INVALID_PARAMETER;  // an ID no ResolveAddress returned
}

bool Provider::PollInline() {
  bool any = false;
  for (auto& a : adapters_) any |= a->Progress() > 0;
  return any;
}

bool Provider::SleepInline(uint64_t ns, bool* all_wake) {
  *all_wake = false;
  // One thread at a time sleeps on the interrupts (arming is not thread-safe
  // on every driver); the others nap blind, as before.
  std::unique_lock<std::mutex> sleeper(sleep_mu_, std::try_to_lock);
  if (!sleeper.owns_lock()) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
    return false;
  }
  pollfd fds[16];
  Adapter* armed[16];
  nfds_t n = 0;
  *all_wake = true;
  for (auto& a : adapters_) {
    if (!a->inline_progress()) continue;
    const int fd = a->RxWaitFd();
    if (fd < 0 || n == 16) {
      *all_wake = false;
      continue;
    }
    a->ArmRxWait(true);
    armed[n] = a.get();
    fds[n++] = {fd, POLLIN, 0};
  }
  const timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  const int r = ppoll(fds, n, &ts, nullptr);
  for (nfds_t i = 0; i < n; i++) armed[i]->ArmRxWait(false);
  return r > 0;
}

namespace {
// Threads blocked in a wait drive the inline adapters: one pass per call.
// A wait that sees nothing move for kWaitSpinNs starts napping (1 us
// doubling to kWaitNapMaxNs, never past the wait's budget), so a thread
// blocked for long in GetConnectionRequest or a Notify costs little CPU; a
// wait that follows a pause of more than kWaitSpinNs in calls starts fresh.
// Naps sleep on the inline adapters' RX interrupts (Provider::SleepInline): a
// frame ends one at once, and where every inline adapter has one the naps are
// kWaitNapMaxNs from the first (timers still run at least that often).
constexpr uint64_t kWaitSpinNs = 200'000;
constexpr uint64_t kWaitNapMaxNs = 1'000'000;
thread_local uint64_t t_idle_since = 0, t_last_call = 0, t_nap = 0;

uint64_t MonoNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

bool InlineWaitHook(uint32_t budget_ms) {
  Provider* p = Provider::Live();
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
  bool all_wake = false;
  const bool woken = p->SleepInline(std::min<uint64_t>(t_nap, uint64_t{budget_ms} * 1'000'000), &all_wake);
  if (all_wake) t_nap = kWaitNapMaxNs;
  t_last_call = MonoNs();
  return woken;
}
}  // namespace

namespace {
HRESULT StartupFailed(const std::string& message) {
  std::fprintf(stderr, "libnd2: NdStartup: %s\n", message.c_str());
  g_startups = 0;
  return ND_DEVICE_NOT_READY;
}
}  // namespace

HRESULT Provider::Startup() {
  std::lock_guard<std::mutex> l(g_mu);
  if (g_startups++ > 0) return ND_SUCCESS;
  if (g_provider) return ND_SUCCESS;  // closed, with objects alive: open again
  if (!g_atexit) g_atexit = std::atexit(AtExit) == 0;
  // Every failure: ND_DEVICE_NOT_READY and one line on stderr naming the
  // file, the [section] and the key.
  auto cfg = LoadNd2Config();
  if (!cfg.ok()) return StartupFailed(std::string(cfg.status().message()));
  std::vector<port::PortProfile> profiles;
  std::vector<std::string> seen;  // addresses of the adapters so far, "ip [section]"
  for (const AdapterConfig& a : cfg->adapters) {
    host::HostOptions h;
    h.profile = a.profile;
    h.iface = a.iface;
    h.overrides = a.overrides;
    h.capture = a.capture;
    auto p = host::HostProfile(h);
    if (!p.ok())
      return StartupFailed(absl::StrCat(cfg->path, ": [", a.name, "] profile = ", a.profile, ": ",
                                        p.status().message()));
    for (const std::string& ip : a.ips) {
      if (auto s = port::SetAddress(&*p, ip); !s.ok())
        return StartupFailed(absl::StrCat(cfg->path, ": [", a.name, "] ip = ", ip, ": ", s.message()));
    }
    // Two adapters with one address (e.g. the profile's default IPv6 address
    // left in both): the address could not name an adapter.
    for (const auto& pfx : {p->ipv4, p->ipv6}) {
      if (!pfx) continue;
      const std::string addr = pfx->addr.ToString();
      for (const std::string& other : seen)
        if (other.substr(0, other.find(' ')) == addr)
          return StartupFailed(absl::StrCat(cfg->path, ": [", a.name, "] ", pfx->addr.IsV4() ? "ip" : "ip6",
                                            ": the address ", addr, " is also that of ",
                                            other.substr(other.find(' ') + 1),
                                            " (set ip / ip6 so that every adapter has its own)"));
      seen.push_back(addr + " [" + a.name + "]");
    }
    profiles.push_back(*p);
  }
  if (!port::EalInitialized()) {
    if (auto s = port::InitEal(port::EalOptionsFor(profiles)); !s.ok())
      return StartupFailed(absl::StrCat(cfg->path, ": DPDK EAL: ", s.message()));
  }
  auto* prov = new Provider();
  // Spinning threads against CPUs (progress_yield = auto): counted before
  // any progress thread starts.
  const size_t cpus = UsableCpus();
  const size_t progress_threads = static_cast<size_t>(
      std::count_if(cfg->adapters.begin(), cfg->adapters.end(), [](const AdapterConfig& a) { return a.progress_thread; }));
  for (size_t i = 0; i < profiles.size(); i++) {
    const AdapterConfig& a = cfg->adapters[i];
    engine::EngineOptions eo;
    eo.cm.cm_response_timeout = a.cm_timeout;
    eo.cm.max_cm_retries = a.cm_retries;
    eo.cm.mra_service_timeout = a.cm_mra_timeout;
    eo.cm.ephemeral_first = a.ephemeral_first;
    eo.cm.ephemeral_last = a.ephemeral_last;
    eo.cm.drop_rx_dreqs = a.cm_drop_rx_dreqs;
    eo.cm.drop_tx_dreqs = a.cm_drop_tx_dreqs;
    eo.burst = a.burst;
    eo.tx_on_post = a.send_at_post;
    eo.idle_yield = a.progress_thread && ProgressYields(a.progress_yield, progress_threads, cpus);
    eo.adaptive_yield = a.progress_thread && a.progress_yield < 0;  // auto: also while contended
    if (a.selective_repair >= 0) eo.cm.selective_repair = a.selective_repair != 0;
    auto host = host::OpenStackHost(profiles[i], eo);
    if (!host.ok()) {
      delete prov;
      return StartupFailed(absl::StrCat(cfg->path, ": [", a.name, "]: ", host.status().message()));
    }
    const wire::MacAddr mac = host->port->mac();
    const uint64_t id = (uint64_t{0x4E44} << 48) | (uint64_t{i} << 40) | (uint64_t{mac.b[2]} << 24) |
                        (uint64_t{mac.b[3]} << 16) | (uint64_t{mac.b[4]} << 8) | mac.b[5];
    prov->adapters_.push_back(std::make_unique<Adapter>(a, std::move(*host), id));
  }
  g_provider = prov;
  // Threads blocked in a wait drive inline adapters. With none, a wait sleeps until its
  // object is signalled (a progress thread completes it): the hook would only nap in its
  // place, and a nap is not woken by the completion (each wait cost up to a 1 ms nap).
  if (progress_threads < profiles.size()) SetProgressHook(InlineWaitHook);
  return ND_SUCCESS;
}

HRESULT Provider::Cleanup() {
  std::lock_guard<std::mutex> l(g_mu);
  if (g_startups == 0) return ND_DEVICE_NOT_READY;
  if (--g_startups > 0) return ND_SUCCESS;
  // The last one: torn down now if the application holds nothing made from
  // an adapter, else when it releases the last of it (AdapterUnreferenced).
  if (Unreferenced(*g_provider)) Teardown();
  return ND_SUCCESS;
}

// A provider reference (DllGetClassObject) is a startup: the provider stays up
// while it is held.
ULONG Provider::AddRef() {
  std::lock_guard<std::mutex> l(g_mu);
  return static_cast<ULONG>(++g_startups);
}

ULONG Provider::Release() {
  Cleanup();
  std::lock_guard<std::mutex> l(g_mu);
  return static_cast<ULONG>(g_startups);
}

std::optional<wire::IpAddr> SourceFor(const Adapter& a, const wire::IpAddr& peer) {
  Adapter& m = const_cast<Adapter&>(a);
  port::KernelIface* k = m.eng().port().kernel();
  if (!k || !k->kernel_identity()) return std::nullopt;
  std::optional<wire::IpAddr> src = k->SourceFor(peer, m.eng().NowNs());
  if (src && !m.HasAddress(*src)) return std::nullopt;
  return src;
}

bool OnLink(const Adapter& a, const wire::IpAddr& peer) {
  Adapter& m = const_cast<Adapter&>(a);
  // On a kernel interface: whatever the kernel routes through it (a peer
  // behind a router too).
  if (port::KernelIface* k = m.eng().port().kernel(); k && k->kernel_identity())
    return k->RoutesThrough(peer, m.eng().NowNs());
  const auto& pfx = peer.IsV4() ? m.eng().port().ipv4() : m.eng().port().ipv6();
  if (!pfx) return false;
  const uint32_t bits = pfx->prefix_len;
  for (uint32_t i = 0; i < 128 && i < (peer.IsV4() ? 96u + bits : bits); i++) {
    const uint8_t mask = static_cast<uint8_t>(0x80u >> (i % 8));
    if ((peer.b[i / 8] & mask) != (pfx->addr.b[i / 8] & mask)) return false;
  }
  return true;
}

}  // namespace roce::nd2

// ---- ndsupport.h ----------------------------------------------------------------------------------------

using roce::nd2::Provider;

extern "C" {

HRESULT NdStartup(void) { return Provider::Startup(); }

HRESULT NdCleanup(void) { return Provider::Cleanup(); }

void NdFlushProviders(void) {}

HRESULT NdQueryAddressList(DWORD flags, SOCKET_ADDRESS_LIST* list, SIZE_T* cb) {
  Provider* p = Provider::Get();
  if (!p) return ND_DEVICE_NOT_READY;
  if (!cb) return ND_INVALID_PARAMETER_3;
  ULONG c = static_cast<ULONG>(std::min<SIZE_T>(*cb, 0xFFFFFFFFu));
  HRESULT h;
  if (flags & ND_QUERY_EXCLUDE_NDv2_ADDRESSES) {
    // Every address here is an ND2 one.
    h = roce::nd2::FillAddressList({}, list, &c);
  } else {
    h = p->QueryAddressList(list, &c);
  }
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
  // The remote itself if it is ours (loopback), else our address of the
  // same family whose subnet holds it (a route is one hop here: the port's
  // link). None of the family: ND_INVALID_ADDRESS; none on-link:
  // ND_NETWORK_UNREACHABLE.
  // An adapter on a kernel interface: the source the kernel's route names.
  std::optional<roce::wire::IpAddr> found;
  const roce::wire::IpAddr* best = nullptr;
  bool family = false;
  for (const auto& a : p->adapters()) {
    const std::vector<roce::wire::IpAddr> addrs = a->addrs();
    for (const auto& mine : addrs) {
      if (mine.IsV4() != ip.IsV4()) continue;
      family = true;
      if (mine == ip) found = mine;
      else if (!found && roce::nd2::OnLink(*a, ip)) found = roce::nd2::SourceFor(*a, ip).value_or(mine);
    }
  }
  if (found) best = &*found;
  if (!family) return ND_INVALID_ADDRESS;
  if (!best) return ND_NETWORK_UNREACHABLE;
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

// The provider DLL's COM entry points (what Windows' ndutil calls after
// loading a provider; here: dlsym(handle, "DllGetClassObject")). The class ID
// is not checked (one provider per library); IID_IND2Provider (or IUnknown)
// returns the provider with a reference that keeps it started (NdStartup's
// configuration; the reference's Release is an NdCleanup).
HRESULT DllGetClassObject(const GUID& clsid, REFIID riid, void** ppv) {
  (void)clsid;
  if (!ppv) return E_POINTER;
  *ppv = nullptr;
  if (!(riid == IID_IND2Provider) && !(riid == IID_IUnknown)) return E_NOINTERFACE;
  const HRESULT h = Provider::Startup();
  if (FAILED(h)) return h;
  *ppv = static_cast<IND2Provider*>(Provider::Get());
  return S_OK;
}

HRESULT DllCanUnloadNow(void) { return Provider::Live() ? S_FALSE : S_OK; }

}  // extern "C"
