// SPDX-License-Identifier: MIT
// Tests of stack/netlink against the real kernel: every case builds a veth
// pair between two network namespaces it creates (and always deletes), with
// IPv4 and IPv6 addresses, and checks GetLink, GetAddrs, GetRoute,
// GetNeighbor, TriggerResolution (NTF_USE and the UDP fallback) and the
// Watcher (address/MTU/neighbour/link events, overrun re-dump, prompt Stop)
// against what `ip` and /sys say. Needs root (skips otherwise). Waits poll
// with a deadline, never sleep a fixed time.
#include "stack/netlink/netlink.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include <absl/strings/str_cat.h>
#include <absl/strings/strip.h>
#include <gtest/gtest.h>

#include "stack/netlink/watcher.h"

namespace roce::netlink {
namespace {

using Clock = std::chrono::steady_clock;
using wire::IpAddr;
using wire::MacAddr;

int Sh(const std::string& cmd, std::string* out = nullptr) {
  std::string full = cmd + " 2>&1";
  FILE* f = popen(full.c_str(), "r");
  if (!f) return -1;
  std::string buf;
  char tmp[4096];
  size_t n;
  while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) buf.append(tmp, n);
  int st = pclose(f);
  if (out) *out = buf;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// A network namespace the test creates, deleted (with its devices) on destruction.
class Netns {
 public:
  explicit Netns(const std::string& tag) : name_(absl::StrCat("roce-", tag, "-", getpid())) {
    Sh("ip netns del " + name_);  // a leftover of a crashed run with a recycled pid
    ok_ = Sh("ip netns add " + name_) == 0 && Exec("ip link set lo up") == 0;
  }
  ~Netns() { Sh("ip netns del " + name_); }
  const std::string& name() const { return name_; }
  bool ok() const { return ok_; }
  int Exec(const std::string& cmd, std::string* out = nullptr) const {
    return Sh("ip netns exec " + name_ + " " + cmd, out);
  }

  // While alive, the calling thread is inside the namespace.
  class Enter {
   public:
    explicit Enter(const Netns& ns) {
      self_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
      int target = open(("/var/run/netns/" + ns.name()).c_str(), O_RDONLY | O_CLOEXEC);
      ok_ = self_ >= 0 && target >= 0 && setns(target, CLONE_NEWNET) == 0;
      if (target >= 0) close(target);
    }
    ~Enter() {
      if (self_ >= 0) {
        if (ok_) setns(self_, CLONE_NEWNET);
        close(self_);
      }
    }
    bool ok() const { return ok_; }

   private:
    int self_ = -1;
    bool ok_ = false;
  };

 private:
  std::string name_;
  bool ok_ = false;
};

IpAddr Ip(const std::string& s) {
  IpAddr a;
  EXPECT_TRUE(IpAddr::FromString(s, &a)) << s;
  return a;
}

template <typename F>
bool WaitFor(F f, std::chrono::milliseconds limit = std::chrono::milliseconds(3000)) {
  auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return f();
}

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

bool HasAddr(const std::vector<IfAddr>& v, const std::string& s) {
  for (const IfAddr& a : v) {
    if (a.ToString() == s) return true;
  }
  return false;
}

// veth vA (namespace a: 10.77.0.1/24, fd00:77::1/64) <-> vB (namespace b:
// 10.77.0.2/24, fd00:77::2/64), both up, no DAD (link-local included).
class NetlinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (network namespaces and veth devices)";
    a_ = std::make_unique<Netns>("nla");
    b_ = std::make_unique<Netns>("nlb");
    ASSERT_TRUE(a_->ok() && b_->ok()) << "ip netns add failed";
    for (Netns* ns : {a_.get(), b_.get()}) {
      ASSERT_EQ(ns->Exec("sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0"), 0);
    }
    std::string out;
    ASSERT_EQ(a_->Exec("ip link add vA type veth peer name vB netns " + b_->name(), &out), 0) << out;
    ASSERT_EQ(a_->Exec("ip addr add 10.77.0.1/24 dev vA", &out), 0) << out;
    ASSERT_EQ(a_->Exec("ip addr add fd00:77::1/64 dev vA nodad", &out), 0) << out;
    ASSERT_EQ(b_->Exec("ip addr add 10.77.0.2/24 dev vB", &out), 0) << out;
    ASSERT_EQ(b_->Exec("ip addr add fd00:77::2/64 dev vB nodad", &out), 0) << out;
    ASSERT_EQ(a_->Exec("ip link set vA up", &out), 0) << out;
    ASSERT_EQ(b_->Exec("ip link set vB up", &out), 0) << out;
    ASSERT_EQ(a_->Exec("cat /sys/class/net/vA/address", &out), 0);
    ASSERT_TRUE(MacAddr::FromString(std::string(absl::StripAsciiWhitespace(out)), &mac_a_)) << out;
    ASSERT_EQ(b_->Exec("cat /sys/class/net/vB/address", &out), 0);
    ASSERT_TRUE(MacAddr::FromString(std::string(absl::StripAsciiWhitespace(out)), &mac_b_)) << out;
    ASSERT_EQ(a_->Exec("cat /sys/class/net/vA/ifindex", &out), 0);
    ifindex_a_ = std::stoi(out);
    // Carrier on is applied by the kernel's linkwatch work up to 1 s later;
    // until then the device's queue drops every frame (the first ARP request
    // included). Wait for both ends to be operationally up.
    for (auto [ns, dev] : {std::pair{a_.get(), "vA"}, std::pair{b_.get(), "vB"}}) {
      Netns::Enter e(*ns);
      ASSERT_TRUE(e.ok());
      ASSERT_TRUE(WaitFor([&] {
        auto l = GetLink(dev);
        return l.ok() && l->oper_up;
      })) << dev << " never came up";
    }
  }

  // A UDP datagram from namespace a to ip:9 (the kernel resolves ip first).
  int UdpSendFromA(const std::string& ip) {
    return a_->Exec(absl::StrCat(
        "python3 -c \"import socket,sys; a=sys.argv[1]; "
        "s=socket.socket(socket.AF_INET6 if ':' in a else socket.AF_INET, socket.SOCK_DGRAM); "
        "s.sendto(b'x', (a, 9))\" ",
        ip));
  }

  // Waits (inside a) until the kernel has a usable entry for ip with the peer's MAC.
  bool WaitResolved(const std::string& ip, std::chrono::milliseconds limit = std::chrono::milliseconds(3000)) {
    return WaitFor(
        [&] {
          auto n = GetNeighbor(ifindex_a_, Ip(ip));
          return n.ok() && n->has_value() && (*n)->has_mac && Usable((*n)->state) && (*n)->mac == mac_b_;
        },
        limit);
  }

  std::unique_ptr<Netns> a_, b_;
  MacAddr mac_a_, mac_b_;
  int ifindex_a_ = 0;
};

TEST(NetlinkPure, Usable) {
  EXPECT_TRUE(Usable(NeighState::kReachable));
  EXPECT_TRUE(Usable(NeighState::kStale));
  EXPECT_TRUE(Usable(NeighState::kDelay));
  EXPECT_TRUE(Usable(NeighState::kProbe));
  EXPECT_TRUE(Usable(NeighState::kPermanent));
  EXPECT_TRUE(Usable(NeighState::kNoArp));
  EXPECT_FALSE(Usable(NeighState::kNone));
  EXPECT_FALSE(Usable(NeighState::kIncomplete));
  EXPECT_FALSE(Usable(NeighState::kFailed));
  EXPECT_STREQ(NeighStateName(NeighState::kReachable), "REACHABLE");
  IfAddr a{Ip("10.0.0.1"), 24};
  EXPECT_EQ(a.ToString(), "10.0.0.1/24");
  IfAddr b{Ip("fd00::1"), 64, true};
  EXPECT_EQ(b.ToString(), "fd00::1/64");
  Route r;
  EXPECT_EQ(r.NextHop(Ip("10.0.0.9")), Ip("10.0.0.9"));
  r.gateway = Ip("10.0.0.254");
  EXPECT_EQ(r.NextHop(Ip("10.0.0.9")), Ip("10.0.0.254"));
}

// ---- parsers on hand-made messages (no kernel) ------------------------------------

struct Msg {
  alignas(nlmsghdr) char buf[1024] = {};
  nlmsghdr* nlh;
  Msg(uint16_t type, size_t hdr_len) {
    nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = type;
    if (hdr_len) mnl_nlmsg_put_extra_header(nlh, hdr_len);
  }
  template <typename T>
  T* hdr() {
    return static_cast<T*>(mnl_nlmsg_get_payload(nlh));
  }
};

TEST(NetlinkParse, LinkMessages) {
  LinkInfo l;
  Msg empty(RTM_NEWLINK, 0);  // too short for its ifinfomsg
  EXPECT_FALSE(detail::ParseLink(empty.nlh, &l));

  Msg m(RTM_NEWLINK, sizeof(ifinfomsg));
  m.hdr<ifinfomsg>()->ifi_index = 7;
  m.hdr<ifinfomsg>()->ifi_flags = IFF_UP | IFF_RUNNING | (1u << 16) /* IFF_LOWER_UP */;
  mnl_attr_put_strz(m.nlh, IFLA_IFNAME, "eth7");
  mnl_attr_put_u32(m.nlh, IFLA_MTU, 9000);
  const uint8_t mac[6] = {2, 0, 0, 0, 0, 7};
  mnl_attr_put(m.nlh, IFLA_ADDRESS, 6, mac);
  nlattr* xdp = mnl_attr_nest_start(m.nlh, IFLA_XDP);
  mnl_attr_put_u8(m.nlh, IFLA_XDP_ATTACHED, XDP_ATTACHED_DRV);
  mnl_attr_put_u32(m.nlh, IFLA_XDP_PROG_ID, 42);
  mnl_attr_nest_end(m.nlh, xdp);
  nlattr* info = mnl_attr_nest_start(m.nlh, IFLA_LINKINFO);
  mnl_attr_put_strz(m.nlh, IFLA_INFO_KIND, "veth");
  mnl_attr_nest_end(m.nlh, info);
  ASSERT_TRUE(detail::ParseLink(m.nlh, &l));
  EXPECT_EQ(l.ifindex, 7);
  EXPECT_EQ(l.name, "eth7");
  EXPECT_EQ(l.mtu, 9000u);
  EXPECT_EQ(l.mac.ToString(), "02:00:00:00:00:07");
  EXPECT_TRUE(l.admin_up);
  EXPECT_TRUE(l.oper_up);
  EXPECT_EQ(l.xdp_prog_id, 42u);
  EXPECT_EQ(l.kind, "veth");

  // A 2-byte MTU, a 4-byte address, a name without its NUL, a nest holding a
  // short u32: each ignored (or bounded), never read past.
  Msg bad(RTM_NEWLINK, sizeof(ifinfomsg));
  bad.hdr<ifinfomsg>()->ifi_index = 8;
  uint16_t short_mtu = 1500;
  mnl_attr_put(bad.nlh, IFLA_MTU, 2, &short_mtu);
  mnl_attr_put(bad.nlh, IFLA_ADDRESS, 4, mac);
  mnl_attr_put(bad.nlh, IFLA_IFNAME, 3, "abc");
  xdp = mnl_attr_nest_start(bad.nlh, IFLA_XDP);
  mnl_attr_put(bad.nlh, IFLA_XDP_PROG_ID, 2, &short_mtu);
  mnl_attr_nest_end(bad.nlh, xdp);
  ASSERT_TRUE(detail::ParseLink(bad.nlh, &l));
  EXPECT_EQ(l.mtu, 0u);
  EXPECT_EQ(l.mac, MacAddr{});
  EXPECT_EQ(l.name, "abc");
  EXPECT_EQ(l.xdp_prog_id, 0u);
  EXPECT_FALSE(l.admin_up);

  // An attribute whose length runs past the message: parsing stops there.
  Msg trunc(RTM_NEWLINK, sizeof(ifinfomsg));
  trunc.hdr<ifinfomsg>()->ifi_index = 9;
  mnl_attr_put_u32(trunc.nlh, IFLA_MTU, 1280);
  nlattr* last = static_cast<nlattr*>(mnl_nlmsg_get_payload_tail(trunc.nlh));
  mnl_attr_put_strz(trunc.nlh, IFLA_IFNAME, "x");
  last->nla_len = 200;
  ASSERT_TRUE(detail::ParseLink(trunc.nlh, &l));
  EXPECT_EQ(l.mtu, 1280u);
  EXPECT_EQ(l.name, "");

  // Another family (a bridge port's AF_BRIDGE message) or type is not a link.
  Msg bridge(RTM_NEWLINK, sizeof(ifinfomsg));
  bridge.hdr<ifinfomsg>()->ifi_family = AF_BRIDGE;
  bridge.hdr<ifinfomsg>()->ifi_index = 3;
  EXPECT_FALSE(detail::ParseLink(bridge.nlh, &l));
  Msg other(RTM_NEWROUTE, sizeof(ifinfomsg));
  EXPECT_FALSE(detail::ParseLink(other.nlh, &l));
}

TEST(NetlinkParse, AddrAndNeighbourMessages) {
  IfAddr a;
  int idx = 0;
  Msg m(RTM_NEWADDR, sizeof(ifaddrmsg));
  m.hdr<ifaddrmsg>()->ifa_family = AF_INET;
  m.hdr<ifaddrmsg>()->ifa_prefixlen = 24;
  m.hdr<ifaddrmsg>()->ifa_index = 5;
  m.hdr<ifaddrmsg>()->ifa_flags = IFA_F_SECONDARY;
  const uint8_t peer[4] = {10, 0, 0, 2}, local[4] = {10, 0, 0, 1};
  mnl_attr_put(m.nlh, IFA_ADDRESS, 4, peer);
  mnl_attr_put(m.nlh, IFA_LOCAL, 4, local);
  mnl_attr_put_u32(m.nlh, IFA_FLAGS, IFA_F_SECONDARY | IFA_F_NOPREFIXROUTE);
  ASSERT_TRUE(detail::ParseAddr(m.nlh, &a, &idx));
  EXPECT_EQ(a.ToString(), "10.0.0.1/24");  // IFA_LOCAL, not the peer
  EXPECT_EQ(idx, 5);
  EXPECT_EQ(a.flags, uint32_t{IFA_F_SECONDARY | IFA_F_NOPREFIXROUTE});  // IFA_FLAGS wins

  Msg bad(RTM_NEWADDR, sizeof(ifaddrmsg));
  bad.hdr<ifaddrmsg>()->ifa_family = AF_INET;
  mnl_attr_put(bad.nlh, IFA_LOCAL, 5, "abcde");  // wrong size, no other address
  EXPECT_FALSE(detail::ParseAddr(bad.nlh, &a, &idx));
  Msg v6(RTM_DELADDR, sizeof(ifaddrmsg));
  v6.hdr<ifaddrmsg>()->ifa_family = AF_INET6;
  v6.hdr<ifaddrmsg>()->ifa_prefixlen = 64;
  IpAddr ip6 = Ip("fd00::7");
  mnl_attr_put(v6.nlh, IFA_ADDRESS, 16, ip6.b.data());
  ASSERT_TRUE(detail::ParseAddr(v6.nlh, &a, &idx));
  EXPECT_EQ(a.ToString(), "fd00::7/64");
  EXPECT_TRUE(a.ipv6);
  Msg fam(RTM_NEWADDR, sizeof(ifaddrmsg));
  fam.hdr<ifaddrmsg>()->ifa_family = AF_PACKET;
  mnl_attr_put(fam.nlh, IFA_ADDRESS, 4, peer);
  EXPECT_FALSE(detail::ParseAddr(fam.nlh, &a, &idx));

  Neighbor n;
  Msg nm(RTM_NEWNEIGH, sizeof(ndmsg));
  nm.hdr<ndmsg>()->ndm_family = AF_INET;
  nm.hdr<ndmsg>()->ndm_ifindex = 5;
  nm.hdr<ndmsg>()->ndm_state = NUD_STALE;
  mnl_attr_put(nm.nlh, NDA_DST, 4, peer);
  const uint8_t mac[6] = {2, 0, 0, 0, 0, 9};
  mnl_attr_put(nm.nlh, NDA_LLADDR, 6, mac);
  ASSERT_TRUE(detail::ParseNeighbor(nm.nlh, &n));
  EXPECT_EQ(n.ip, Ip("10.0.0.2"));
  EXPECT_TRUE(n.has_mac);
  EXPECT_EQ(n.state, NeighState::kStale);
  EXPECT_EQ(n.ifindex, 5);
  Msg nshort(RTM_NEWNEIGH, sizeof(ndmsg));
  nshort.hdr<ndmsg>()->ndm_family = AF_INET6;
  nshort.hdr<ndmsg>()->ndm_state = NUD_INCOMPLETE;
  mnl_attr_put(nshort.nlh, NDA_DST, 16, ip6.b.data());
  mnl_attr_put(nshort.nlh, NDA_LLADDR, 4, mac);  // not a MAC
  ASSERT_TRUE(detail::ParseNeighbor(nshort.nlh, &n));
  EXPECT_FALSE(n.has_mac);
  EXPECT_EQ(n.state, NeighState::kIncomplete);
  Msg ndst(RTM_NEWNEIGH, sizeof(ndmsg));
  ndst.hdr<ndmsg>()->ndm_family = AF_INET6;
  mnl_attr_put(ndst.nlh, NDA_DST, 4, peer);  // an IPv4-sized IPv6 destination
  EXPECT_FALSE(detail::ParseNeighbor(ndst.nlh, &n));
  Msg proxy(RTM_NEWNEIGH, sizeof(ndmsg));
  proxy.hdr<ndmsg>()->ndm_family = AF_INET;
  proxy.hdr<ndmsg>()->ndm_flags = NTF_PROXY;
  mnl_attr_put(proxy.nlh, NDA_DST, 4, peer);
  EXPECT_FALSE(detail::ParseNeighbor(proxy.nlh, &n));
  Msg fdb(RTM_NEWNEIGH, sizeof(ndmsg));
  fdb.hdr<ndmsg>()->ndm_family = AF_BRIDGE;
  mnl_attr_put(fdb.nlh, NDA_LLADDR, 6, mac);
  EXPECT_FALSE(detail::ParseNeighbor(fdb.nlh, &n));
}

// Random payloads behind valid headers: the parsers never read out of bounds
// (run under ASan/valgrind to see it) and never crash.
TEST(NetlinkParse, RandomGarbage) {
  std::mt19937 rng(12345);
  const uint16_t types[] = {RTM_NEWLINK, RTM_DELLINK, RTM_NEWADDR, RTM_DELADDR, RTM_NEWNEIGH, RTM_DELNEIGH};
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    size_t len = rng() % 200;
    std::vector<uint32_t> storage((NLMSG_HDRLEN + len + 3) / 4 + 1);
    auto* nlh = reinterpret_cast<nlmsghdr*>(storage.data());
    auto* bytes = reinterpret_cast<uint8_t*>(storage.data());
    for (size_t k = NLMSG_HDRLEN; k < NLMSG_HDRLEN + len; ++k) bytes[k] = static_cast<uint8_t>(rng());
    // Mostly plausible families and attribute headers, to get past the first checks.
    if (len > 0) bytes[NLMSG_HDRLEN] = (rng() % 2) ? AF_INET : AF_INET6;
    if (rng() % 2 && len > 0) bytes[NLMSG_HDRLEN] = AF_UNSPEC;
    nlh->nlmsg_len = static_cast<uint32_t>(NLMSG_HDRLEN + len);
    nlh->nlmsg_type = types[rng() % 6];
    LinkInfo l;
    IfAddr a;
    int idx;
    Neighbor n;
    parsed += detail::ParseLink(nlh, &l) + detail::ParseAddr(nlh, &a, &idx) + detail::ParseNeighbor(nlh, &n);
  }
  EXPECT_GT(parsed, 0);
}

TEST_F(NetlinkTest, GetLink) {
  Netns::Enter e(*a_);
  ASSERT_TRUE(e.ok());
  auto l = GetLink("vA");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->ifindex, ifindex_a_);
  EXPECT_EQ(l->name, "vA");
  EXPECT_EQ(l->mac, mac_a_);
  EXPECT_EQ(l->mtu, 1500u);
  EXPECT_TRUE(l->admin_up);
  EXPECT_TRUE(WaitFor([&] {
    auto x = GetLink("vA");
    return x.ok() && x->oper_up;
  })) << "vA never became operationally up";
  EXPECT_EQ(l->kind, "veth");
  EXPECT_EQ(l->xdp_prog_id, 0u);

  auto by_index = GetLink(ifindex_a_);
  ASSERT_TRUE(by_index.ok()) << by_index.status();
  EXPECT_EQ(by_index->name, "vA");
  EXPECT_EQ(by_index->mac, mac_a_);

  ASSERT_EQ(a_->Exec("ip link set vA mtu 1400"), 0);
  l = GetLink("vA");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->mtu, 1400u);

  // The peer down: vA stays administratively up but loses its carrier.
  ASSERT_EQ(b_->Exec("ip link set vB down"), 0);
  l = GetLink("vA");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_TRUE(l->admin_up);
  EXPECT_FALSE(l->oper_up);
  ASSERT_EQ(a_->Exec("ip link set vA down"), 0);
  l = GetLink(ifindex_a_);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_FALSE(l->admin_up);
  EXPECT_FALSE(l->oper_up);

  // lo is there in every namespace; a missing name or index is NotFound naming it.
  auto lo = GetLink("lo");
  ASSERT_TRUE(lo.ok()) << lo.status();
  EXPECT_EQ(lo->ifindex, 1);
  auto missing = GetLink("nosuchdev0");
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_NE(missing.status().message().find("'nosuchdev0'"), std::string::npos) << missing.status();
  EXPECT_TRUE(absl::IsNotFound(GetLink("a-name-much-too-long-for-linux").status()));
  EXPECT_TRUE(absl::IsNotFound(GetLink(987654).status()));
  // vA is not in the host's namespace: the sockets follow the calling thread.
}

TEST_F(NetlinkTest, SocketsFollowTheThreadsNamespace) {
  {
    Netns::Enter e(*b_);
    ASSERT_TRUE(e.ok());
    EXPECT_TRUE(absl::IsNotFound(GetLink("vA").status()));
    auto l = GetLink("vB");
    ASSERT_TRUE(l.ok()) << l.status();
    EXPECT_EQ(l->mac, mac_b_);
  }
  Netns::Enter e(*a_);
  EXPECT_TRUE(absl::IsNotFound(GetLink("vB").status()));
}

TEST_F(NetlinkTest, GetAddrs) {
  Netns::Enter e(*a_);
  ASSERT_TRUE(e.ok());
  std::vector<IfAddr> addrs;
  // The link-local address comes with the link going up.
  ASSERT_TRUE(WaitFor([&] {
    auto r = GetAddrs(ifindex_a_);
    if (!r.ok()) return false;
    addrs = *r;
    for (const IfAddr& a : addrs) {
      if (a.ipv6 && a.addr.b[0] == 0xfe && (a.addr.b[1] & 0xc0) == 0x80) return true;
    }
    return false;
  })) << "no fe80:: address on vA";
  int v4 = 0, v6 = 0, ll = 0;
  for (const IfAddr& a : addrs) {
    SCOPED_TRACE(a.ToString());
    if (a.ToString() == "10.77.0.1/24") {
      ++v4;
      EXPECT_FALSE(a.ipv6);
      EXPECT_TRUE(a.addr.IsV4());
      EXPECT_EQ(a.scope, RT_SCOPE_UNIVERSE);
    } else if (a.ToString() == "fd00:77::1/64") {
      ++v6;
      EXPECT_TRUE(a.ipv6);
      EXPECT_EQ(a.scope, RT_SCOPE_UNIVERSE);
      EXPECT_FALSE(a.flags & IFA_F_TENTATIVE);
      EXPECT_TRUE(a.flags & IFA_F_NODAD);
      EXPECT_TRUE(a.flags & IFA_F_PERMANENT);
    } else if (a.ipv6 && a.addr.b[0] == 0xfe) {
      ++ll;
      EXPECT_EQ(a.prefix_len, 64);
      EXPECT_EQ(a.scope, RT_SCOPE_LINK);
    } else {
      ADD_FAILURE() << "unexpected address";
    }
  }
  EXPECT_EQ(v4, 1);
  EXPECT_EQ(v6, 1);
  EXPECT_EQ(ll, 1);

  // lo's addresses are not vA's; a missing index has none.
  auto lo = GetAddrs(1);
  ASSERT_TRUE(lo.ok()) << lo.status();
  EXPECT_TRUE(HasAddr(*lo, "127.0.0.1/8"));
  EXPECT_FALSE(HasAddr(*lo, "10.77.0.1/24"));
  auto none = GetAddrs(987654);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());

  // IPv4 on a point-to-point address: the local one (IFA_LOCAL), not the peer.
  ASSERT_EQ(a_->Exec("ip addr add 10.77.9.1 peer 10.77.9.2/32 dev vA"), 0);
  auto p2p = GetAddrs(ifindex_a_);
  ASSERT_TRUE(p2p.ok()) << p2p.status();
  EXPECT_TRUE(HasAddr(*p2p, "10.77.9.1/32"));
  EXPECT_FALSE(HasAddr(*p2p, "10.77.9.2/32"));
}

TEST_F(NetlinkTest, AddrFlagsTentativeAndDadFailed) {
  Netns::Enter e(*a_);
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(a_->Exec("sysctl -qw net.ipv6.conf.all.accept_dad=1 net.ipv6.conf.vA.accept_dad=1"), 0);
  // fd00:78::1 is nobody else's: tentative during DAD (>= 1 s), then not.
  // fd00:77::2 is vB's: DAD fails.
  ASSERT_EQ(a_->Exec("ip addr add fd00:78::1/64 dev vA"), 0);
  ASSERT_EQ(a_->Exec("ip addr add fd00:77::2/128 dev vA"), 0);
  auto find = [&](const std::string& s) -> std::optional<IfAddr> {
    auto r = GetAddrs(ifindex_a_);
    if (!r.ok()) return std::nullopt;
    for (const IfAddr& a : *r) {
      if (a.ToString() == s) return a;
    }
    return std::nullopt;
  };
  auto t = find("fd00:78::1/64");
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->flags & IFA_F_TENTATIVE) << std::hex << t->flags;
  EXPECT_TRUE(WaitFor(
      [&] {
        auto x = find("fd00:78::1/64");
        return x && !(x->flags & IFA_F_TENTATIVE);
      },
      std::chrono::milliseconds(5000)))
      << "DAD never finished";
  EXPECT_TRUE(WaitFor(
      [&] {
        auto x = find("fd00:77::2/128");
        return x && (x->flags & IFA_F_DADFAILED);
      },
      std::chrono::milliseconds(5000)))
      << "DAD of vB's address never failed";
}

TEST_F(NetlinkTest, GetRoute) {
  Netns::Enter e(*a_);
  ASSERT_TRUE(e.ok());
  // On-link peers: no gateway, the next hop is the destination.
  auto r = GetRoute(Ip("10.77.0.2"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->oif, ifindex_a_);
  EXPECT_FALSE(r->gateway);
  ASSERT_TRUE(r->prefsrc);
  EXPECT_EQ(*r->prefsrc, Ip("10.77.0.1"));
  EXPECT_EQ(r->NextHop(Ip("10.77.0.2")), Ip("10.77.0.2"));
  EXPECT_EQ(r->mtu, 0u);
  r = GetRoute(Ip("10.77.0.2"), ifindex_a_);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->oif, ifindex_a_);
  r = GetRoute(Ip("fd00:77::2"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->oif, ifindex_a_);
  EXPECT_FALSE(r->gateway);
  ASSERT_TRUE(r->prefsrc);
  EXPECT_EQ(*r->prefsrc, Ip("fd00:77::1"));

  // Behind a router (the peer): the gateway is the peer; a route MTU is reported.
  ASSERT_EQ(a_->Exec("ip route add 198.18.5.0/24 via 10.77.0.2"), 0);
  ASSERT_EQ(a_->Exec("ip route add 198.18.6.0/24 via 10.77.0.2 mtu 1300"), 0);
  ASSERT_EQ(a_->Exec("ip -6 route add fd00:99::/64 via fd00:77::2"), 0);
  r = GetRoute(Ip("198.18.5.7"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->oif, ifindex_a_);
  ASSERT_TRUE(r->gateway);
  EXPECT_EQ(*r->gateway, Ip("10.77.0.2"));
  EXPECT_EQ(r->NextHop(Ip("198.18.5.7")), Ip("10.77.0.2"));
  r = GetRoute(Ip("198.18.6.7"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->mtu, 1300u);
  r = GetRoute(Ip("fd00:99::5"));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->gateway);
  EXPECT_EQ(*r->gateway, Ip("fd00:77::2"));

  // Unreachable (no default route in the namespace), and a blackhole route.
  auto u = GetRoute(Ip("203.0.113.9"));
  EXPECT_FALSE(u.ok());
  EXPECT_NE(u.status().message().find("203.0.113.9"), std::string::npos) << u.status();
  auto u6 = GetRoute(Ip("2001:db8::1"));
  EXPECT_FALSE(u6.ok());
  EXPECT_NE(u6.status().message().find("2001:db8::1"), std::string::npos) << u6.status();
  ASSERT_EQ(a_->Exec("ip route add blackhole 198.18.7.0/24"), 0);
  auto bh = GetRoute(Ip("198.18.7.1"));
  EXPECT_FALSE(bh.ok());
  EXPECT_NE(bh.status().message().find("198.18.7.1"), std::string::npos) << bh.status();
  // Our own address: a local route through lo.
  r = GetRoute(Ip("10.77.0.1"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->oif, 1);
}

TEST_F(NetlinkTest, GetNeighborBeforeAndAfterResolution) {
  Netns::Enter e(*a_);
  ASSERT_TRUE(e.ok());
  for (const char* ip : {"10.77.0.2", "fd00:77::2"}) {
    SCOPED_TRACE(ip);
    auto before = GetNeighbor(ifindex_a_, Ip(ip));
    ASSERT_TRUE(before.ok()) << before.status();
    EXPECT_FALSE(before->has_value()) << NeighStateName((*before)->state);
    auto dumped = detail::GetNeighborByDump(ifindex_a_, Ip(ip));
    ASSERT_TRUE(dumped.ok()) << dumped.status();
    EXPECT_FALSE(dumped->has_value());

    ASSERT_EQ(UdpSendFromA(ip), 0);
    ASSERT_TRUE(WaitResolved(ip)) << "the kernel never resolved " << ip;
    auto after = GetNeighbor(ifindex_a_, Ip(ip));
    ASSERT_TRUE(after.ok() && after->has_value());
    EXPECT_EQ((*after)->ip, Ip(ip));
    EXPECT_EQ((*after)->ifindex, ifindex_a_);
    // The dump (old kernels' path) gives the same entry.
    dumped = detail::GetNeighborByDump(ifindex_a_, Ip(ip));
    ASSERT_TRUE(dumped.ok() && dumped->has_value()) << dumped.status();
    EXPECT_EQ((*dumped)->mac, mac_b_);
    EXPECT_EQ((*dumped)->ip, Ip(ip));
  }
  auto all = detail::QuerySocket::Open();
  ASSERT_TRUE(all.ok());
  auto list = detail::DumpNeighborsOn(**all, ifindex_a_);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_GE(list->size(), 2u);
  // A missing interface is an error, not "no entry".
  EXPECT_TRUE(absl::IsNotFound(GetNeighbor(987654, Ip("10.77.0.2")).status()));
}

TEST_F(NetlinkTest, TriggerResolutionIpv4AndIpv6) {
  Netns::Enter e(*a_);
  ASSERT_TRUE(e.ok());
  for (const char* ip : {"10.77.0.2", "fd00:77::2"}) {
    SCOPED_TRACE(ip);
    auto t0 = Clock::now();
    absl::Status st = TriggerResolution(ifindex_a_, Ip(ip));
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_TRUE(WaitResolved(ip)) << "no entry with the peer's MAC";
    EXPECT_LT(MsSince(t0), 1000) << "resolution took too long";
    // Resolved: a second call changes nothing.
    auto before = GetNeighbor(ifindex_a_, Ip(ip));
    ASSERT_TRUE(TriggerResolution(ifindex_a_, Ip(ip)).ok());
    auto after = GetNeighbor(ifindex_a_, Ip(ip));
    ASSERT_TRUE(before.ok() && after.ok() && after->has_value());
    EXPECT_EQ((*after)->mac, mac_b_);
  }
}

TEST_F(NetlinkTest, TriggerResolutionLeavesPermanentEntriesAlone) {
  Netns::Enter e(*a_);
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(a_->Exec("ip neigh add 10.77.0.50 lladdr 02:00:00:00:00:50 dev vA nud permanent"), 0);
  ASSERT_TRUE(TriggerResolution(ifindex_a_, Ip("10.77.0.50")).ok());
  auto n = GetNeighbor(ifindex_a_, Ip("10.77.0.50"));
  ASSERT_TRUE(n.ok() && n->has_value()) << n.status();
  EXPECT_EQ((*n)->state, NeighState::kPermanent);
  MacAddr want;
  ASSERT_TRUE(MacAddr::FromString("02:00:00:00:00:50", &want));
  EXPECT_EQ((*n)->mac, want);
  std::string out;
  a_->Exec("ip neigh show 10.77.0.50 dev vA", &out);
  EXPECT_NE(out.find("PERMANENT"), std::string::npos) << out;
}

TEST_F(NetlinkTest, TriggerResolutionOfNobodyFails) {
  Netns::Enter e(*a_);
  ASSERT_TRUE(e.ok());
  // Nobody has 10.77.0.99: the entry is created, probed, and fails.
  ASSERT_TRUE(TriggerResolution(ifindex_a_, Ip("10.77.0.99")).ok());
  auto n = GetNeighbor(ifindex_a_, Ip("10.77.0.99"));
  ASSERT_TRUE(n.ok() && n->has_value()) << n.status();
  EXPECT_FALSE(Usable((*n)->state)) << NeighStateName((*n)->state);
  EXPECT_FALSE((*n)->has_mac);
  // Again while being resolved: fine, nothing changes.
  EXPECT_TRUE(TriggerResolution(ifindex_a_, Ip("10.77.0.99")).ok());
}

TEST_F(NetlinkTest, UdpFallbackResolves) {
  Netns::Enter e(*a_);
  ASSERT_TRUE(e.ok());
  for (const char* ip : {"10.77.0.2", "fd00:77::2"}) {
    SCOPED_TRACE(ip);
    absl::Status st = detail::TriggerByUdp(ifindex_a_, Ip(ip));
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_TRUE(WaitResolved(ip));
  }
}

TEST_F(NetlinkTest, NtfUseResolvesLinkLocal) {
  // The peer's fe80:: address.
  IpAddr peer_ll;
  {
    Netns::Enter eb(*b_);
    auto lb = GetLink("vB");
    ASSERT_TRUE(lb.ok());
    ASSERT_TRUE(WaitFor([&] {
      auto r = GetAddrs(lb->ifindex);
      if (!r.ok()) return false;
      for (const IfAddr& a : *r) {
        if (a.scope == RT_SCOPE_LINK) {
          peer_ll = a.addr;
          return true;
        }
      }
      return false;
    }));
  }
  Netns::Enter e(*a_);
  ASSERT_TRUE(detail::TriggerByNtfUse(ifindex_a_, peer_ll).ok());
  EXPECT_TRUE(WaitResolved(peer_ll.ToString()));
}

TEST_F(NetlinkTest, WatcherFollowsAddressesMtuAndNeighbours) {
  Netns::Enter e(*a_);
  ASSERT_TRUE(e.ok());
  auto w = Watcher::Start(ifindex_a_);
  ASSERT_TRUE(w.ok()) << w.status();
  Watcher& watcher = **w;
  std::atomic<int> calls{0};
  watcher.SetCallback([&] { calls.fetch_add(1); });
  EXPECT_GE(watcher.generation(), 1u);
  EXPECT_TRUE(watcher.present());
  EXPECT_EQ(watcher.link().mac, mac_a_);
  EXPECT_EQ(watcher.link().name, "vA");
  EXPECT_TRUE(HasAddr(watcher.addrs(), "10.77.0.1/24"));
  EXPECT_TRUE(HasAddr(watcher.addrs(), "fd00:77::1/64"));

  // An address added and removed.
  uint64_t g0 = watcher.generation();
  ASSERT_EQ(a_->Exec("ip addr add 10.77.1.1/24 dev vA"), 0);
  EXPECT_TRUE(WaitFor([&] { return HasAddr(watcher.addrs(), "10.77.1.1/24"); }));
  EXPECT_GT(watcher.generation(), g0);
  EXPECT_GE(watcher.counters().addr_added, 1u);
  EXPECT_TRUE(WaitFor([&] { return calls.load() > 0; }));
  uint64_t g1 = watcher.generation();
  ASSERT_EQ(a_->Exec("ip addr del 10.77.1.1/24 dev vA"), 0);
  EXPECT_TRUE(WaitFor([&] { return !HasAddr(watcher.addrs(), "10.77.1.1/24"); }));
  EXPECT_GT(watcher.generation(), g1);
  EXPECT_GE(watcher.counters().addr_removed, 1u);
  ASSERT_EQ(a_->Exec("ip addr add fd00:55::1/64 dev vA nodad"), 0);
  EXPECT_TRUE(WaitFor([&] { return HasAddr(watcher.addrs(), "fd00:55::1/64"); }));

  // The MTU.
  uint64_t links = watcher.counters().link_changes;
  ASSERT_EQ(a_->Exec("ip link set vA mtu 1300"), 0);
  EXPECT_TRUE(WaitFor([&] { return watcher.link().mtu == 1300; }));
  EXPECT_GT(watcher.counters().link_changes, links);

  // Another interface's events change nothing here.
  ASSERT_EQ(a_->Exec("ip link add vX type veth peer name vY"), 0);
  ASSERT_EQ(a_->Exec("ip addr add 10.88.0.1/24 dev vX"), 0);
  ASSERT_EQ(a_->Exec("ip link set vX up mtu 1200"), 0);

  // A neighbour appearing after TriggerResolution.
  uint64_t neigh = watcher.counters().neigh_updates;
  EXPECT_FALSE(watcher.neighbor(Ip("10.77.0.2")));
  ASSERT_TRUE(TriggerResolution(ifindex_a_, Ip("10.77.0.2")).ok());
  ASSERT_TRUE(TriggerResolution(ifindex_a_, Ip("fd00:77::2")).ok());
  for (const char* ip : {"10.77.0.2", "fd00:77::2"}) {
    EXPECT_TRUE(WaitFor([&] {
      auto n = watcher.neighbor(Ip(ip));
      return n && n->has_mac && Usable(n->state) && n->mac == mac_b_ && n->ifindex == ifindex_a_;
    })) << ip;
  }
  EXPECT_GT(watcher.counters().neigh_updates, neigh);
  EXPECT_FALSE(HasAddr(watcher.addrs(), "10.88.0.1/24"));
  EXPECT_EQ(watcher.link().mtu, 1300u);
  EXPECT_EQ(watcher.link().name, "vA");
  Watcher::Counters c = watcher.counters();
  EXPECT_GE(c.events, c.addr_added + c.addr_removed);
  EXPECT_EQ(c.resyncs, 0u);

  // Stop is prompt, and the snapshot stays readable.
  auto t0 = Clock::now();
  watcher.Stop();
  EXPECT_LT(MsSince(t0), 200);
  watcher.Stop();  // idempotent
  ASSERT_EQ(a_->Exec("ip addr add 10.77.3.1/24 dev vA"), 0);
  EXPECT_TRUE(HasAddr(watcher.addrs(), "fd00:55::1/64"));
  EXPECT_FALSE(HasAddr(watcher.addrs(), "10.77.3.1/24"));
  t0 = Clock::now();
  w->reset();
  EXPECT_LT(MsSince(t0), 200);
}

TEST_F(NetlinkTest, WatcherStartsWithExistingNeighbours) {
  Netns::Enter e(*a_);
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(UdpSendFromA("10.77.0.2"), 0);
  ASSERT_TRUE(WaitResolved("10.77.0.2"));
  auto w = Watcher::Start(ifindex_a_);
  ASSERT_TRUE(w.ok()) << w.status();
  auto n = (*w)->neighbor(Ip("10.77.0.2"));
  ASSERT_TRUE(n);
  EXPECT_EQ(n->mac, mac_b_);
  // Besides the kernel's NOARP entries of the IPv6 multicast groups it sent
  // to (ff02::2, ff02::16), only 10.77.0.2.
  int unicast = 0;
  for (const Neighbor& x : (*w)->neighbors()) {
    EXPECT_EQ(x.ifindex, ifindex_a_);
    if (x.state != NeighState::kNoArp) ++unicast;
  }
  EXPECT_EQ(unicast, 1);
  // The entry removed by hand: the watcher sees it go.
  ASSERT_EQ(a_->Exec("ip neigh del 10.77.0.2 dev vA"), 0);
  EXPECT_TRUE(WaitFor([&] { return !(*w)->neighbor(Ip("10.77.0.2")); }));
}

TEST_F(NetlinkTest, WatcherOfMissingInterfaceFails) {
  Netns::Enter e(*a_);
  ASSERT_TRUE(e.ok());
  auto w = Watcher::Start(987654);
  EXPECT_TRUE(absl::IsNotFound(w.status())) << w.status();
}

TEST_F(NetlinkTest, WatcherSeesLinkDeleted) {
  Netns::Enter e(*a_);
  ASSERT_TRUE(e.ok());
  auto w = Watcher::Start(ifindex_a_);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(b_->Exec("ip link set vB down"), 0);
  EXPECT_TRUE(WaitFor([&] { return !(*w)->link().oper_up; }));
  EXPECT_TRUE((*w)->link().admin_up);
  ASSERT_EQ(a_->Exec("ip link del vA"), 0);
  EXPECT_TRUE(WaitFor([&] { return !(*w)->present(); }));
  EXPECT_TRUE((*w)->addrs().empty());
  EXPECT_FALSE((*w)->link().admin_up);
}

// The callback holds the watcher thread while a burst of events overflows a
// small socket buffer: the kernel drops events (ENOBUFS) and the watcher
// re-dumps everything.
TEST_F(NetlinkTest, WatcherResyncsAfterOverrun) {
  Netns::Enter e(*a_);
  ASSERT_TRUE(e.ok());
  Watcher::Options opts;
  opts.rcvbuf_bytes = 4096;
  auto w = Watcher::Start(ifindex_a_, opts);
  ASSERT_TRUE(w.ok()) << w.status();
  std::mutex m;
  std::condition_variable cv;
  bool entered = false, release = false;
  (*w)->SetCallback([&] {
    std::unique_lock<std::mutex> l(m);
    entered = true;
    cv.notify_all();
    cv.wait(l, [&] { return release; });
  });
  ASSERT_EQ(a_->Exec("ip addr add 10.77.1.1/24 dev vA"), 0);
  {
    std::unique_lock<std::mutex> l(m);
    ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(3), [&] { return entered; }));
  }
  constexpr int kAddrs = 200;
  std::string batch = absl::StrCat("/tmp/roce-netlink-batch-", getpid());
  {
    std::ofstream f(batch);
    for (int i = 1; i <= kAddrs; ++i) f << "addr add 10.77.2." << i << "/32 dev vA\n";
  }
  std::string out;
  ASSERT_EQ(a_->Exec("ip -batch " + batch, &out), 0) << out;
  unlink(batch.c_str());
  {
    std::lock_guard<std::mutex> l(m);
    release = true;
  }
  cv.notify_all();
  EXPECT_TRUE(WaitFor([&] { return (*w)->counters().resyncs >= 1; })) << "no overrun seen";
  EXPECT_TRUE(WaitFor([&] {
    auto a = (*w)->addrs();
    return HasAddr(a, "10.77.2.1/32") && HasAddr(a, absl::StrCat("10.77.2.", kAddrs, "/32"));
  }));
  auto addrs = (*w)->addrs();
  int n = 0;
  for (const IfAddr& a : addrs) n += a.ToString().rfind("10.77.2.", 0) == 0;
  EXPECT_EQ(n, kAddrs);
  EXPECT_TRUE(HasAddr(addrs, "10.77.1.1/24"));
  (*w)->SetCallback(nullptr);
  auto t0 = Clock::now();
  w->reset();
  EXPECT_LT(MsSince(t0), 200);
}

}  // namespace
}  // namespace roce::netlink
