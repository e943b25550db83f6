// SPDX-License-Identifier: MIT
// net_af_xdp ports beside the kernel, each on a veth pair between two
// network namespaces the test creates (and deletes): the identity taken from
// the interface (addresses, MAC, MTU; addresses followed while running), the
// XDP program's life (attached with our addresses, removed at close, another
// program's refused and left alone, one adapter per interface), a peer
// behind a router resolved through the kernel's route and table, the clear
// errors at open (no interface, down, address not on it, MTU above it — for
// af_packet too), RoCEv2 to the port while the kernel keeps everything else.
// Root only: skipped otherwise, which CI=true counts as a failure.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_format.h>
#include <gtest/gtest.h>

#include "stack/port/kernel_iface.h"
#include "stack/port/port.h"
#include "stack/port/xdp_filter.h"
#include "tests/port/port_test_env.h"
#include "tests/support/test_support.h"

namespace roce::port {
namespace {

using namespace roce::port::testing;
using roce::testing::SourcePath;

// Two namespaces joined by a veth: `a` (ours: xa<tag>, 10.61.0.1/24,
// fd00:61::1/64) and `b` (the peer: 10.61.0.2, fd00:61::2).
struct Veth {
  Netns a{"axa"}, b{"axb"};
  std::string ia, ib;
  explicit Veth(int mtu = 1500) {
    const std::string tag = absl::StrFormat("%x", static_cast<unsigned>(getpid()) & 0xffff);
    ia = "xa" + tag;
    ib = "xb" + tag;
    Sh(absl::StrCat("ip link add ", ia, " netns ", a.name(), " mtu ", mtu, " type veth peer name ", ib, " netns ",
                    b.name(), " mtu ", mtu));
    a.Exec(absl::StrCat("ip addr add 10.61.0.1/24 dev ", ia));
    a.Exec(absl::StrCat("ip addr add fd00:61::1/64 dev ", ia, " nodad"));
    b.Exec(absl::StrCat("ip addr add 10.61.0.2/24 dev ", ib));
    b.Exec(absl::StrCat("ip addr add fd00:61::2/64 dev ", ib, " nodad"));
    a.Exec(absl::StrCat("ip link set ", ia, " up"));
    b.Exec(absl::StrCat("ip link set ", ib, " up"));
    WaitUp();
  }
  void WaitUp() {
    for (int i = 0; i < 100; i++) {
      std::string out;
      a.Exec(absl::StrCat("cat /sys/class/net/", ia, "/operstate"), &out);
      if (absl::StrContains(out, "up")) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  PortProfile Profile(std::vector<std::string> extra = {}) const {
    std::vector<std::string> o = {absl::StrCat("port.devargs=iface=", ia)};
    o.insert(o.end(), extra.begin(), extra.end());
    auto p = LoadProfile(SourcePath("drivers-cfg/net_af_xdp.ini"), o);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : PortProfile{};
  }
  absl::StatusOr<std::unique_ptr<Port>> Open(const PortProfile& p) const {
    Netns::Enter in(a);
    return Port::Open(p);
  }
  std::string XdpOn() const {  // "" or the program's line of `ip link`
    std::string out;
    a.Exec(absl::StrCat("ip -d link show dev ", ia), &out);
    const size_t at = out.find("prog/xdp");
    return at == std::string::npos ? "" : out.substr(at, 40);
  }
  // From b: `n` UDP datagrams to dst:port.
  void SendUdp(const std::string& dst, int port, int n) const {
    const bool v6 = dst.find(':') != std::string::npos;
    b.Exec(absl::StrFormat(
        "python3 -c \"import socket,time\ns=socket.socket(socket.%s,socket.SOCK_DGRAM)\n"
        "for i in range(%d):\n s.sendto(b'x'*40,('%s',%d)); time.sleep(0.01)\"",
        v6 ? "AF_INET6" : "AF_INET", n, dst, port));
  }
};

bool HasAddr(const std::vector<IpPrefix>& v, const std::string& a) {
  for (const IpPrefix& p : v)
    if (p.addr.ToString() == a) return true;
  return false;
}

#define NEED_ROOT() \
  if (!IsRoot()) GTEST_SKIP() << "needs root (veth, network namespaces, XDP)"

TEST(AfXdp, TakesTheInterfacesIdentityAndFollowsItsAddresses) {
  NEED_ROOT();
  Veth v;
  auto port = v.Open(v.Profile());
  ASSERT_TRUE(port.ok()) << port.status();
  Port& p = **port;
  ASSERT_NE(p.kernel(), nullptr);
  KernelIface& k = *p.kernel();
  EXPECT_TRUE(k.kernel_identity());
  EXPECT_TRUE(k.af_xdp());
  EXPECT_EQ(k.name(), v.ia);
  // MAC and MTU are the interface's; the primary addresses are its.
  std::string mac;
  v.a.Exec(absl::StrCat("cat /sys/class/net/", v.ia, "/address"), &mac);
  EXPECT_TRUE(absl::StrContains(mac, p.mac().ToString())) << mac << " vs " << p.mac().ToString();
  EXPECT_EQ(p.mtu(), 1500);
  ASSERT_TRUE(p.ipv4().has_value());
  EXPECT_EQ(p.ipv4()->ToString(), "10.61.0.1/24");
  ASSERT_TRUE(p.ipv6().has_value());
  EXPECT_EQ(p.ipv6()->ToString(), "fd00:61::1/64");
  EXPECT_TRUE(HasAddr(p.Addrs(), "10.61.0.1"));
  EXPECT_TRUE(HasAddr(p.Addrs(), "fd00:61::1"));
  // The fe80:: address is a GID too, once its duplicate address detection
  // is over (a tentative address is not one).
  bool link_local = false;
  for (int i = 0; i < 400 && !link_local; i++) {
    for (const IpPrefix& a : p.Addrs()) link_local |= a.addr.b[0] == 0xfe && a.addr.b[1] == 0x80;
    if (!link_local) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(link_local) << "the fe80:: address followed once DAD ended";
  // A veth has no zero-copy AF_XDP: copy mode, and we know it.
  ASSERT_TRUE(k.zero_copy().has_value());
  EXPECT_FALSE(*k.zero_copy());
  EXPECT_EQ(k.sockets(), p.rx_queues());
  // Our program is on the interface, owned by us.
  absl::StatusOr<XdpAttached> att;
  {
    Netns::Enter in(v.a);
    att = InspectXdp(k.ifindex());
  }
  ASSERT_TRUE(att.ok()) << att.status();
  EXPECT_TRUE(att->ours);
  EXPECT_EQ(att->owner_pid, static_cast<uint32_t>(getpid()));

  // RoCEv2 to our address reaches the sockets; other UDP and 4791 to an
  // address that is not the interface's pass to the kernel.
  const XdpStats before = *k.xdp_stats();
  v.SendUdp("10.61.0.1", 4791, 5);
  v.SendUdp("fd00:61::1", 4791, 3);
  v.SendUdp("10.61.0.1", 4790, 4);
  std::vector<rte_mbuf*> got;
  for (int i = 0; i < 200 && got.size() < 8; i++) {
    rte_mbuf* m[32];
    const uint16_t n = p.RxBurst(0, m, 32);
    got.insert(got.end(), m, m + n);
    if (!n) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(got.size(), 8u) << "the 8 datagrams to port 4791 reached the port";
  FreeAll(got);
  const XdpStats after = *k.xdp_stats();
  EXPECT_EQ(after.to_xsk - before.to_xsk, 8u);
  EXPECT_GE(after.pass_not_roce - before.pass_not_roce, 4u);

  // An address added while running is a GID at once (and steered to us);
  // a removed one is no longer.
  const uint64_t g0 = p.AddrGeneration();
  v.a.Exec(absl::StrCat("ip addr add 10.61.0.7/24 dev ", v.ia));
  bool seen = false;
  for (int i = 0; i < 200 && !seen; i++) {
    seen = HasAddr(p.Addrs(), "10.61.0.7");
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(seen) << "RTM_NEWADDR followed";
  EXPECT_GT(p.AddrGeneration(), g0);
  const XdpStats mid = *k.xdp_stats();
  v.SendUdp("10.61.0.7", 4791, 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(k.xdp_stats()->to_xsk - mid.to_xsk, 2u) << "the new address is in the XDP program's map";
  v.a.Exec(absl::StrCat("ip addr del 10.61.0.7/24 dev ", v.ia));
  bool gone = false;
  for (int i = 0; i < 200 && !gone; i++) {
    gone = !HasAddr(p.Addrs(), "10.61.0.7");
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "RTM_DELADDR followed";
  for (int i = 0; i < 50; i++) {  // drain what arrived
    rte_mbuf* m[32];
    const uint16_t n = p.RxBurst(0, m, 32);
    std::vector<rte_mbuf*> d(m, m + n);
    FreeAll(d);
  }

  // The kernel's neighbours: the peer resolves through the kernel (no ARP
  // of ours), an address routed elsewhere fails with the reason.
  auto peer = wire::IpAddr::FromV4(0x0a3d0002);
  KernelNeighbor n;
  {
    Netns::Enter in(v.a);
    for (int i = 0; i < 300; i++) {
      n = k.Resolve(peer, static_cast<uint64_t>(i + 1) * 10'000'000);
      if (n.status != KernelNeighbor::kPending) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ASSERT_EQ(n.status, KernelNeighbor::kResolved) << n.why;
  std::string peer_mac;
  v.b.Exec(absl::StrCat("cat /sys/class/net/", v.ib, "/address"), &peer_mac);
  EXPECT_TRUE(absl::StrContains(peer_mac, n.mac.ToString()));
  KernelNeighbor far;
  {
    Netns::Enter in(v.a);
    far = k.Resolve(wire::IpAddr::FromV4(0x0b000001), 1);  // 11.0.0.1: no route
  }
  EXPECT_EQ(far.status, KernelNeighbor::kFailed);
  EXPECT_FALSE(far.why.empty());

  // A peer behind a router: the next hop from the kernel's route, its MAC
  // from the kernel's table (the router here is b).
  v.a.Exec("ip route add 10.99.0.0/24 via 10.61.0.2");
  KernelNeighbor routed;
  {
    Netns::Enter in(v.a);
    routed = k.Resolve(wire::IpAddr::FromV4(0x0a630005), 5'000'000'000);  // 10.99.0.5
  }
  ASSERT_EQ(routed.status, KernelNeighbor::kResolved) << routed.why;
  EXPECT_EQ(routed.mac, n.mac) << "the router's MAC";

  port->reset();
  EXPECT_EQ(v.XdpOn(), "") << "our program is removed when the port closes";
}

TEST(AfXdp, ClearErrorsAtOpenLeaveNothingAttached) {
  NEED_ROOT();
  Veth v;
  auto expect_error = [&](const PortProfile& prof, std::initializer_list<const char*> words) {
    auto p = v.Open(prof);
    ASSERT_FALSE(p.ok());
    for (const char* w : words) EXPECT_TRUE(absl::StrContains(p.status().message(), w)) << p.status();
    EXPECT_EQ(v.XdpOn(), "") << p.status();
  };
  // No such interface.
  expect_error(v.Profile({"port.devargs=iface=nosuch0"}), {"nosuch0"});
  // An address that is not the interface's: named with the ones it has.
  expect_error(v.Profile({"port.ipv4=10.61.0.9/24"}), {"10.61.0.9", "10.61.0.1/24", v.ia.c_str()});
  // port.mtu above the interface's.
  expect_error(v.Profile({"port.mtu=2000"}), {"2000", "1500", v.ia.c_str()});
  // Interface down.
  v.a.Exec(absl::StrCat("ip link set ", v.ia, " down"));
  expect_error(v.Profile(), {v.ia.c_str(), "down"});
  v.a.Exec(absl::StrCat("ip link set ", v.ia, " up"));
  v.WaitUp();

  // Another program's XDP program: refused, named, and left in place.
  {
    Netns::Enter in(v.a);
    const int ifindex = static_cast<int>(if_nametoindex(v.ia.c_str()));
    const bpf_insn pass[] = {
        {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, XDP_PASS},
        {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
    };
    const int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "other_prog", "GPL", pass, 2, nullptr);
    ASSERT_GE(fd, 0) << "bpf_prog_load: " << errno;
    ASSERT_EQ(bpf_xdp_attach(ifindex, fd, XDP_FLAGS_SKB_MODE, nullptr), 0);
    auto p = Port::Open(v.Profile());
    ASSERT_FALSE(p.ok());
    EXPECT_TRUE(absl::StrContains(p.status().message(), "other_prog")) << p.status();
    EXPECT_TRUE(absl::StrContains(p.status().message(), v.ia)) << p.status();
    EXPECT_NE(v.XdpOn(), "") << "another program's XDP program is never replaced";
    bpf_xdp_detach(ifindex, XDP_FLAGS_SKB_MODE, nullptr);
    close(fd);
  }
  EXPECT_EQ(v.XdpOn(), "");

  // Two adapters on one interface: the second is refused, the first keeps working.
  auto first = v.Open(v.Profile());
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = v.Open(v.Profile());
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(absl::StrContains(second.status().message(), std::to_string(getpid()))) << second.status();
  EXPECT_NE(v.XdpOn(), "");
  first->reset();
  EXPECT_EQ(v.XdpOn(), "");
}

TEST(AfPacket, MtuAboveTheInterfacesIsAnErrorNamingBoth) {
  NEED_ROOT();
  Veth v;
  auto prof = LoadProfile(SourcePath("drivers-cfg/net_af_packet.ini"),
                          std::vector<std::string>{absl::StrCat("port.devargs=iface=", v.ia,
                                                                ",framesz=8192,blocksz=8192,framecnt=512,qpairs=1")});
  ASSERT_TRUE(prof.ok()) << prof.status();
  ASSERT_EQ(prof->mtu, 4200);
  auto p = v.Open(*prof);
  ASSERT_FALSE(p.ok()) << "4200 on a 1500-byte interface would drop every data frame";
  EXPECT_TRUE(absl::StrContains(p.status().message(), "4200")) << p.status();
  EXPECT_TRUE(absl::StrContains(p.status().message(), "1500")) << p.status();
  EXPECT_TRUE(absl::StrContains(p.status().message(), v.ia)) << p.status();
  prof->mtu = 1500;
  auto ok = v.Open(*prof);
  EXPECT_TRUE(ok.ok()) << ok.status();
}

}  // namespace
}  // namespace roce::port
