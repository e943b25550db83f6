// SPDX-License-Identifier: MIT
// The kernel interface beneath a port: checks at open, identity = kernel
// (addresses, MAC, MTU from netlink), the XDP filter's address map, and the
// kernel's routes and neighbours (kernel_iface.h).
#include "stack/port/kernel_iface.h"

#include <linux/ethtool.h>
#include <linux/if_addr.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>

namespace roce::port {
namespace {

constexpr uint64_t kRouteRefreshNs = 1'000'000'000;    // a peer's route looked up again
constexpr uint64_t kRetriggerNs = 1'000'000'000;       // resolution asked again while pending

// The interface's combined channels (ETHTOOL_GCHANNELS), 1 if it has none.
uint16_t Channels(const std::string& ifname) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 1;
  ethtool_channels ch{};
  ch.cmd = ETHTOOL_GCHANNELS;
  ifreq ifr{};
  std::snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname.c_str());
  ifr.ifr_data = reinterpret_cast<char*>(&ch);
  const int rc = ioctl(fd, SIOCETHTOOL, &ifr);
  close(fd);
  if (rc != 0 || ch.combined_count == 0) return 1;
  return static_cast<uint16_t>(std::min<uint32_t>(ch.combined_count, 16));
}

bool Usable(const netlink::IfAddr& a) {
  return !(a.flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED));
}

IpPrefix ToPrefix(const netlink::IfAddr& a) {
  IpPrefix p;
  p.addr = a.addr;
  p.prefix_len = a.prefix_len;
  return p;
}

std::vector<IpPrefix> UsableAddrs(const std::vector<netlink::IfAddr>& in) {
  std::vector<IpPrefix> out;
  for (const netlink::IfAddr& a : in)
    if (Usable(a)) out.push_back(ToPrefix(a));
  return out;
}

std::string List(const std::vector<IpPrefix>& v) {
  std::vector<std::string> s;
  for (const IpPrefix& p : v) s.push_back(p.ToString());
  return s.empty() ? "none" : absl::StrJoin(s, ", ");
}

// The first address of a family, global scope before link-local.
std::optional<IpPrefix> Primary(const std::vector<IpPrefix>& v, bool v6) {
  std::optional<IpPrefix> ll;
  for (const IpPrefix& p : v) {
    if (p.addr.IsV4() == v6) continue;
    if (v6 && p.addr.b[0] == 0xfe && (p.addr.b[1] & 0xc0) == 0x80) {
      if (!ll) ll = p;
      continue;
    }
    return p;
  }
  return ll;
}

uint64_t ThreadNetnsIno() {
  struct stat st {};
  return stat("/proc/thread-self/ns/net", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

}  // namespace

InNetns::InNetns(int fd, uint64_t ino) {
  if (fd < 0 || ino == 0 || ThreadNetnsIno() == ino) return;
  saved_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (saved_ >= 0 && setns(fd, CLONE_NEWNET) != 0) {
    close(saved_);
    saved_ = -1;
  }
}

InNetns::~InNetns() {
  if (saved_ < 0) return;
  setns(saved_, CLONE_NEWNET);
  close(saved_);
}

absl::Status KernelIface::CheckMtu(const std::string& ifname, uint16_t mtu, bool mtu_given) {
  auto link = netlink::GetLink(ifname);
  if (!link.ok()) return link.status();
  if (mtu > link->mtu)
    return absl::InvalidArgumentError(absl::StrCat("port.mtu ", mtu, mtu_given ? "" : " (the default)",
                                                   " is above the MTU of interface ", ifname, ", ", link->mtu,
                                                   ": frames that long would be dropped; set port.mtu <= ",
                                                   link->mtu, " or raise the interface's MTU"));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<KernelIface>> KernelIface::Open(PortProfile* p) {
  std::unique_ptr<KernelIface> k(new KernelIface());
  k->name_ = KernelInterface(*p);
  k->netns_fd_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  k->netns_ino_ = ThreadNetnsIno();
  k->af_xdp_ = p->driver == "net_af_xdp";
  k->kernel_identity_ = EffectiveIdentity(*p) == Identity::kKernel;
  auto link = netlink::GetLink(k->name_);
  if (!link.ok()) return link.status();
  k->ifindex_ = link->ifindex;
  k->mac_ = link->mac;
  k->link_mtu_ = link->mtu;
  if (k->af_xdp_ && (!link->admin_up || !link->oper_up))
    return absl::FailedPreconditionError(absl::StrCat("interface ", k->name_, " is ",
                                                      link->admin_up ? "up but has no carrier" : "down",
                                                      " (ip link set ", k->name_, " up)"));
  if (k->kernel_identity_ && !p->mtu_given) p->mtu = static_cast<uint16_t>(std::min<uint32_t>(link->mtu, 9600));
  if (absl::Status s = CheckMtu(k->name_, p->mtu, p->mtu_given); !s.ok()) return s;

  if (k->kernel_identity_ && p->mac && !(*p->mac == k->mac_))
    return absl::InvalidArgumentError(absl::StrCat("port.mac ", p->mac->ToString(), ": with identity = kernel the MAC is ",
                                                   k->name_, "'s, ", k->mac_.ToString()));
  if (k->kernel_identity_) {
    auto addrs = netlink::GetAddrs(k->ifindex_);
    if (!addrs.ok()) return addrs.status();
    const std::vector<IpPrefix> usable = UsableAddrs(*addrs);
    if (usable.empty())
      return absl::FailedPreconditionError(
          absl::StrCat("interface ", k->name_, " has no IPv4 or IPv6 address (ip addr add ... dev ", k->name_, ")"));
    for (std::optional<IpPrefix>* given : {&p->ipv4, &p->ipv6}) {
      if (!*given) continue;
      auto it = std::find_if(usable.begin(), usable.end(),
                             [&](const IpPrefix& a) { return a.addr == (*given)->addr; });
      if (it == usable.end())
        return absl::InvalidArgumentError(absl::StrCat("address ", (*given)->addr.ToString(),
                                                       " is not an address of interface ", k->name_, " (it has ",
                                                       List(usable), ")"));
      **given = *it;  // the interface's prefix length
    }
    if (!p->ipv4) p->ipv4 = Primary(usable, false);
    if (!p->ipv6) p->ipv6 = Primary(usable, true);
    absl::MutexLock l(&k->mu_);
    k->addrs_ = usable;
  }

  if (k->af_xdp_) {
    p->set_mtu = false;  // the interface's MTU is the kernel's: never changed from here
    if (absl::Status s = PrepareInterfaceForXdp(k->ifindex_, k->name_); !s.ok()) return s;
    if (!p->rx_queues_given) p->rx_queues = p->tx_queues = Channels(k->name_);
    const std::string qc = GetDevarg(p->devargs, "queue_count");
    if (qc.empty()) p->devargs = SetDevarg(p->devargs, "queue_count", std::to_string(p->rx_queues));
    else if (qc != std::to_string(p->rx_queues))
      return absl::InvalidArgumentError(absl::StrCat("devargs queue_count=", qc, " but port.rx_queues is ",
                                                     p->rx_queues));
    const std::string prog = XdpProgramPath();
    if (access(prog.c_str(), R_OK) != 0)
      return absl::NotFoundError(absl::StrCat("the XDP program ", prog, " is missing (", std::strerror(errno),
                                              "; SOFT_RNIC_XDP_PROG names another)"));
    p->devargs = SetDevarg(p->devargs, "xdp_prog", prog);
  }
  return k;
}

// The watcher's thread calls OnChange, which reads watcher_: stop the thread
// while watcher_ is still set (unique_ptr::reset clears it before deleting).
void KernelIface::StopWatcher() {
  if (watcher_) watcher_->Stop();
  watcher_.reset();
}

KernelIface::~KernelIface() {
  StopWatcher();
  if (netns_fd_ >= 0) close(netns_fd_);
}

void KernelIface::Closed() {
  StopWatcher();
  InNetns in = EnterNetns();
  if (filter_) {
    if (absl::Status s = filter_->Detach(); !s.ok())
      std::fprintf(stderr, "soft-rnic: %s: removing the XDP program: %s\n", name_.c_str(),
                   std::string(s.message()).c_str());
    filter_.reset();
  }
}

absl::Status KernelIface::Started(const std::vector<int>& xsk_fds) {
  if (af_xdp_) {
    xsk_count_ = xsk_fds.size();
    bool all_zc = !xsk_fds.empty(), known = !xsk_fds.empty();
    for (int fd : xsk_fds) {
      const std::optional<bool> zc = XskZeroCopy(fd);
      if (!zc) known = false;
      else all_zc &= *zc;
    }
    if (known) zero_copy_ = all_zc;
    auto f = XdpFilter::Attach(ifindex_);
    if (!f.ok()) return f.status();
    filter_ = std::move(*f);
  }
  if (kernel_identity_) {
    auto w = netlink::Watcher::Start(ifindex_);
    if (!w.ok()) return w.status();
    watcher_ = std::move(*w);
    watcher_->SetCallback([this] { OnChange(false); });
    OnChange(true);  // the addresses as the watcher's first dump has them
  }
  return absl::OkStatus();
}

void KernelIface::OnChange(bool force) {
  std::vector<IpPrefix> now = UsableAddrs(watcher_->addrs());
  std::vector<wire::IpAddr> plain;
  for (const IpPrefix& a : now) plain.push_back(a.addr);
  {
    absl::MutexLock l(&mu_);
    auto same = [](const IpPrefix& a, const IpPrefix& b) {
      return a.addr == b.addr && a.prefix_len == b.prefix_len;
    };
    const bool changed = now.size() != addrs_.size() || !std::equal(now.begin(), now.end(), addrs_.begin(), same);
    // Routes may have changed with the addresses or the link: look again.
    for (auto& [k, r] : routes_) r.looked_up = 0;
    if (!changed && !force) return;
    if (changed) {
      addrs_ = now;
      counters_.addr_changes++;
      generation_.fetch_add(1);
    }
  }
  if (filter_) {
    if (absl::Status s = filter_->SetAddrs(plain); !s.ok())
      std::fprintf(stderr, "soft-rnic: %s: updating the XDP address map: %s\n", name_.c_str(),
                   std::string(s.message()).c_str());
  }
}

std::vector<IpPrefix> KernelIface::Addrs() const {
  absl::MutexLock l(&mu_);
  return addrs_;
}

uint64_t KernelIface::generation() const { return generation_.load(std::memory_order_relaxed); }

KernelIface::PeerRoute& KernelIface::RouteOf(const wire::IpAddr& peer, uint64_t now) {
  PeerRoute& r = routes_[peer.b];
  if (r.looked_up && now - r.looked_up < kRouteRefreshNs) return r;
  r.looked_up = now;
  InNetns in = EnterNetns();
  // A link-local peer is on this interface's link by definition (its scope).
  const bool link_local = !peer.IsV4() && peer.b[0] == 0xfe && (peer.b[1] & 0xc0) == 0x80;
  auto route = netlink::GetRoute(peer, link_local ? ifindex_ : 0);
  if (!route.ok()) {
    r.ok = false;
    r.why = std::string(route.status().message());
    counters_.route_failures++;
    return r;
  }
  if (route->oif != ifindex_) {
    r.ok = false;
    char other[IF_NAMESIZE] = "?";
    if_indextoname(static_cast<unsigned>(route->oif), other);
    r.why = absl::StrCat("the kernel routes ", peer.ToString(), " through ", other, ", not ", name_);
    counters_.route_failures++;
    return r;
  }
  r.ok = true;
  r.why.clear();
  r.next_hop = route->NextHop(peer);
  r.src = route->prefsrc;
  return r;
}

KernelNeighbor KernelIface::Resolve(const wire::IpAddr& peer, uint64_t now) {
  KernelNeighbor out;
  wire::IpAddr nh;
  bool trigger = false;
  {
    absl::MutexLock l(&mu_);
    PeerRoute& r = RouteOf(peer, now);
    if (!r.ok) {
      out.why = r.why;
      return out;
    }
    nh = r.next_hop;
    std::optional<netlink::Neighbor> n = watcher_ ? watcher_->neighbor(nh) : std::nullopt;
    if (n && n->has_mac && netlink::Usable(n->state)) {
      out.status = KernelNeighbor::kResolved;
      out.mac = n->mac;
      counters_.neighbors_resolved++;
      return out;
    }
    out.status = KernelNeighbor::kPending;
    if (!r.triggered || now - r.triggered >= kRetriggerNs) {
      r.triggered = now;
      trigger = true;
      counters_.resolutions_asked++;
    }
  }
  if (trigger) {
    InNetns in = EnterNetns();
    // The watcher may have missed an entry made before it started: ask once.
    auto got = netlink::GetNeighbor(ifindex_, nh);
    if (got.ok() && *got && (*got)->has_mac && netlink::Usable((*got)->state)) {
      out.status = KernelNeighbor::kResolved;
      out.mac = (*got)->mac;
      return out;
    }
    (void)netlink::TriggerResolution(ifindex_, nh);
  }
  return out;
}

bool KernelIface::RoutesThrough(const wire::IpAddr& peer, uint64_t now) {
  absl::MutexLock l(&mu_);
  return RouteOf(peer, now).ok;
}

std::optional<wire::IpAddr> KernelIface::SourceFor(const wire::IpAddr& peer, uint64_t now) {
  absl::MutexLock l(&mu_);
  PeerRoute& r = RouteOf(peer, now);
  if (!r.ok || !r.src) return std::nullopt;
  return r.src;
}

std::optional<XdpStats> KernelIface::xdp_stats() const {
  if (!filter_) return std::nullopt;
  return filter_->Stats();
}

KernelIfaceCounters KernelIface::counters() const {
  absl::MutexLock l(&mu_);
  return counters_;
}

netlink::Watcher::Counters KernelIface::watcher_counters() const {
  return watcher_ ? watcher_->counters() : netlink::Watcher::Counters{};
}

}  // namespace roce::port
