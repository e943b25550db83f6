// SPDX-License-Identifier: MIT
// Ports on kernel devices, each inside a network namespace the test creates
// (and deletes, even when the test fails), so no traffic leaves them. Root
// only: skipped otherwise, which `tools/run test` reports and CI=true counts
// as a failure (CI runs as root).
//  - net_tap: the kernel answers our ARP request, and sends ICMP port
//    unreachable for a UDP datagram to 4791 both with software checksums and
//    with the tap's checksum offload (proof that the kernel accepted the
//    checksums); a bad UDP checksum is counted by the kernel and not
//    answered; an oversize frame is dropped and counted, TX never spins.
//  - net_af_packet on a veth pair with jumbo frames: chained 4200 B frames
//    cross intact; the reported offloads (none for checksums) and the
//    configure failure when one is required.
//  - net_pcap live on one end of a veth, af_packet on the other.
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <filesystem>

#include <chrono>
#include <functional>
#include <thread>

#include <absl/strings/match.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_format.h>
#include <absl/strings/str_split.h>
#include <gtest/gtest.h>

#include "stack/port/port.h"
#include "stack/wire/checksum.h"
#include "stack/wire/headers.h"
#include "tests/port/port_test_env.h"
#include "tests/support/test_support.h"

namespace roce::port {
namespace {

using namespace roce::port::testing;
using roce::testing::SourcePath;
using wire::Load16;
using wire::Load32;
using wire::MacAddr;

constexpr uint32_t kKernelIp = 0xc0000201;  // 192.0.2.1 (TEST-NET-1, inside the namespace)
constexpr uint32_t kStackIp = 0xc0000202;   // 192.0.2.2

std::string Unique(const char* prefix) {
  static int n = 0;
  return absl::StrFormat("%s%x%d", prefix, static_cast<unsigned>(getpid()) & 0xffff, n++).substr(0, 15);
}

// IPv6 off before any interface exists: no ND/MLD frames from the kernel.
void QuietNamespace(const Netns& ns) {
  ns.Exec("sysctl -qw net.ipv6.conf.default.disable_ipv6=1");
  ns.Exec("sysctl -qw net.ipv6.conf.all.disable_ipv6=1");
  ns.Exec("sysctl -qw net.ipv4.icmp_ratelimit=0");
}

// Polls until `pred` accepts a frame (returned) or the deadline passes
// (empty). Frames it rejects are freed.
std::vector<uint8_t> PollFor(Port& port, const std::function<bool(const std::vector<uint8_t>&)>& pred,
                             int timeout_ms = 2000) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    rte_mbuf* b[32];
    uint16_t k = port.RxBurst(0, b, 32);
    std::vector<uint8_t> hit;
    for (uint16_t i = 0; i < k; i++) {
      std::vector<uint8_t> f = Bytes(b[i]);
      if (hit.empty() && pred(f)) hit = std::move(f);
    }
    rte_pktmbuf_free_bulk(b, k);
    if (!hit.empty()) return hit;
    if (k == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return {};
}

bool SendBytes(Port& port, const std::vector<uint8_t>& f, const TxChecksumRequest* offload = nullptr) {
  rte_mbuf* m = MbufFrom(port.pool(), f);
  if (!m) return false;
  if (offload) port.RequestTxChecksums(m, *offload);
  return port.TxBurst(0, &m, 1) == 1;
}

std::vector<uint8_t> ArpRequest(const MacAddr& src, uint32_t spa, uint32_t tpa) {
  std::vector<uint8_t> f(14 + wire::ArpPacket::kLen);
  wire::EthernetHeader eth;
  eth.dst = MacAddr{{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
  eth.src = src;
  eth.ethertype = wire::kEtherTypeArp;
  eth.Emit(f.data());
  wire::ArpPacket arp;
  arp.sha = src;
  arp.spa = spa;
  arp.tpa = tpa;
  arp.Emit(f.data() + 14);
  return f;
}

enum class Csum { kSoftware, kOffload, kBadUdp };

// Ethernet / IPv4 / UDP sport -> 4791 / 32 bytes.
std::vector<uint8_t> Udp4(const MacAddr& src, const MacAddr& dst, uint16_t sport, Csum mode) {
  std::vector<uint8_t> f(14 + 20 + 8 + 32);
  wire::EthernetHeader eth;
  eth.dst = dst;
  eth.src = src;
  eth.ethertype = wire::kEtherTypeIpv4;
  eth.Emit(f.data());
  wire::Ipv4Header ip;
  ip.total_length = 20 + 8 + 32;
  ip.src = kStackIp;
  ip.dst = kKernelIp;
  ip.Emit(&f[14]);
  for (size_t i = 42; i < f.size(); i++) f[i] = static_cast<uint8_t>(i);
  wire::UdpHeader udp;
  udp.src_port = sport;
  udp.length = 8 + 32;
  udp.Emit(&f[34]);
  if (mode == Csum::kOffload) {
    wire::Store16(&f[24], 0xdead);  // garbage: the offload must overwrite both
    wire::Store16(&f[40], 0xbeef);
    return f;
  }
  wire::Store16(&f[24], wire::Ipv4Header::ComputeChecksum(&f[14], 20));
  wire::InetChecksum c;
  c.Add(wire::ByteSpan(&f[26], 8));  // pseudo header: addresses
  c.Add16(17);
  c.Add16(8 + 32);
  c.Add(wire::ByteSpan(&f[34], 8 + 32));
  uint16_t sum = c.Finish();
  wire::Store16(&f[40], mode == Csum::kBadUdp ? static_cast<uint16_t>(sum ^ 0x5a5a) : sum);
  return f;
}

bool IsIcmpPortUnreachableFor(const std::vector<uint8_t>& f, uint16_t sport) {
  if (f.size() < 14 + 20 + 8 + 20 + 8 || Load16(&f[12]) != 0x0800 || f[23] != 1) return false;
  const uint8_t* icmp = &f[14 + (f[14] & 15) * 4];
  const uint8_t* inner_udp = icmp + 8 + 20;
  return icmp[0] == 3 && icmp[1] == 3 && Load16(inner_udp) == sport && Load16(inner_udp + 2) == 4791;
}

uint64_t UdpCounter(const Netns& ns, const std::string& name) {
  std::string out;
  ns.Exec("cat /proc/net/snmp", &out);
  std::vector<std::string> names, values;
  for (const std::string& l : roce::testing::Lines(out)) {
    if (l.rfind("Udp: ", 0) != 0) continue;
    (names.empty() ? names : values) = absl::StrSplit(l.substr(5), ' ');
  }
  for (size_t i = 0; i < names.size() && i < values.size(); i++) {
    uint64_t v;
    if (names[i] == name && absl::SimpleAtoi(values[i], &v)) return v;
  }
  return UINT64_MAX;
}

#define REQUIRE_ROOT() \
  if (!IsRoot()) GTEST_SKIP() << "needs root (tap, veth, network namespaces)"

// This process's tun fds attached to `ifname` that signal (O_ASYNC).
int TunFdsWithAsync(const std::string& ifname) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (std::filesystem::read_symlink(e.path(), ec) != "/dev/net/tun") continue;
    const int fd = std::stoi(e.path().filename().string());
    ifreq ifr{};
    if (ioctl(fd, TUNGETIFF, &ifr) == 0 && ifname == ifr.ifr_name && (fcntl(fd, F_GETFL) & O_ASYNC)) n++;
  }
  return n;
}

// port.tap_rx_signal = yes: the PMD's own signalled reads, as before; the
// kernel still answers ARP.
TEST(Kernel, TapWithItsSignalStillReads) {
  REQUIRE_ROOT();
  Netns ns("tsig");
  ASSERT_TRUE(ns.ok());
  QuietNamespace(ns);
  const std::string ifname = Unique("rtsg");
  auto prof = LoadProfile(SourcePath("drivers-cfg/net_tap.ini"),
                          std::vector<std::string>{"port.devargs=iface=" + ifname + ",mac=fixed",
                                                   "port.ipv4=192.0.2.2/24", "port.ipv6=", "port.tap_rx_signal=yes"});
  ASSERT_TRUE(prof.ok()) << prof.status();
  absl::StatusOr<std::unique_ptr<Port>> port;
  {
    Netns::Enter in(ns);
    ASSERT_TRUE(in.ok());
    port = Port::Open(*prof);
  }
  ASSERT_TRUE(port.ok()) << port.status();
  Port& p = **port;
  EXPECT_FALSE(p.tap_rx_polled());
  EXPECT_GT(TunFdsWithAsync(ifname), 0);
  ASSERT_EQ(ns.Exec("ip addr add 192.0.2.1/24 dev " + ifname), 0);
  ASSERT_EQ(ns.Exec("ip link set " + ifname + " up"), 0);
  ASSERT_TRUE(SendBytes(p, ArpRequest(p.mac(), kStackIp, kKernelIp)));
  std::vector<uint8_t> reply = PollFor(p, [&](const std::vector<uint8_t>& f) {
    wire::ArpPacket a;
    return f.size() >= 42 && Load16(&f[12]) == wire::kEtherTypeArp &&
           a.Parse(wire::ByteSpan(f).subspan(14)) == wire::Error::kOk && a.oper == wire::ArpPacket::kReply &&
           a.spa == kKernelIp && a.tpa == kStackIp;
  });
  EXPECT_FALSE(reply.empty()) << "no ARP reply from the kernel";
}

TEST(Kernel, TapTalksToTheKernelWithSoftwareAndOffloadedChecksums) {
  REQUIRE_ROOT();
  Netns ns("tap");
  ASSERT_TRUE(ns.ok());
  QuietNamespace(ns);
  const std::string ifname = Unique("rtap");
  auto prof = LoadProfile(SourcePath("drivers-cfg/net_tap.ini"),
                          std::vector<std::string>{"port.devargs=iface=" + ifname + ",mac=fixed",
                                                   "port.ipv4=192.0.2.2/24", "port.ipv6="});
  ASSERT_TRUE(prof.ok()) << prof.status();
  absl::StatusOr<std::unique_ptr<Port>> port;
  {
    Netns::Enter in(ns);
    ASSERT_TRUE(in.ok());
    port = Port::Open(*prof);
  }
  ASSERT_TRUE(port.ok()) << port.status();
  Port& p = **port;
  // What the tap offers (it computes checksums itself).
  EXPECT_TRUE(p.offloads().tx_ipv4_checksum) << p.offloads().ToString();
  EXPECT_TRUE(p.offloads().tx_udp_checksum);
  EXPECT_TRUE(p.offloads().tx_multiseg);
  EXPECT_TRUE(p.offloads().rx_ipv4_checksum);
  // Every burst reads the tap; the PMD's signal is off (port.tap_rx_signal).
  EXPECT_TRUE(p.tap_rx_polled());
  EXPECT_EQ(TunFdsWithAsync(ifname), 0);
  // The tap lives in the test's namespace, with IPv6 off (no ND/MLD frames).
  std::string v6;
  ASSERT_EQ(ns.Exec("sysctl -n net.ipv6.conf." + ifname + ".disable_ipv6", &v6), 0) << v6;
  EXPECT_EQ(v6, "1\n");
  EXPECT_NE(Sh("ip link show " + ifname), 0) << "the tap must not appear outside the namespace";
  ASSERT_EQ(ns.Exec("ip addr add 192.0.2.1/24 dev " + ifname), 0);
  ASSERT_EQ(ns.Exec("ip link set " + ifname + " up"), 0);

  // ARP: the kernel answers for its address.
  ASSERT_TRUE(SendBytes(p, ArpRequest(p.mac(), kStackIp, kKernelIp)));
  std::vector<uint8_t> reply = PollFor(p, [&](const std::vector<uint8_t>& f) {
    wire::ArpPacket a;
    return f.size() >= 42 && Load16(&f[12]) == wire::kEtherTypeArp &&
           a.Parse(wire::ByteSpan(f).subspan(14)) == wire::Error::kOk && a.oper == wire::ArpPacket::kReply &&
           a.spa == kKernelIp && a.tpa == kStackIp;
  });
  ASSERT_FALSE(reply.empty()) << "no ARP reply from the kernel";
  MacAddr kernel_mac;
  std::copy(reply.begin() + 6, reply.begin() + 12, kernel_mac.b.begin());

  // UDP to a closed port: ICMP port unreachable means the checksums were good.
  const uint64_t csum_errors0 = UdpCounter(ns, "InCsumErrors");
  ASSERT_TRUE(SendBytes(p, Udp4(p.mac(), kernel_mac, 50001, Csum::kSoftware)));
  EXPECT_FALSE(PollFor(p, [](const auto& f) { return IsIcmpPortUnreachableFor(f, 50001); }).empty())
      << "software checksums";
  TxChecksumRequest want{14, 20, false, true, true};
  ASSERT_TRUE(SendBytes(p, Udp4(p.mac(), kernel_mac, 50002, Csum::kOffload), &want));
  EXPECT_FALSE(PollFor(p, [](const auto& f) { return IsIcmpPortUnreachableFor(f, 50002); }).empty())
      << "offloaded checksums";
  ASSERT_TRUE(SendBytes(p, Udp4(p.mac(), kernel_mac, 50003, Csum::kBadUdp)));
  EXPECT_TRUE(PollFor(p, [](const auto& f) { return IsIcmpPortUnreachableFor(f, 50003); }, 300).empty());
  EXPECT_EQ(UdpCounter(ns, "InCsumErrors"), csum_errors0 + 1);

  // Above the MTU: dropped and counted before the tap (which would refuse it
  // forever, bumping oerrors).
  std::vector<uint8_t> big = Udp4(p.mac(), kernel_mac, 50004, Csum::kSoftware);
  big.resize(1600);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(SendBytes(p, big));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
  const PortStats s = p.Stats();
  EXPECT_EQ(s.tx_oversize, 1u);
  EXPECT_EQ(s.tx_packets, 4u);
  EXPECT_EQ(s.dev_oerrors, 0u);
  EXPECT_GE(s.rx_packets, 3u);
  // Closing the port removes the tap.
  port->reset();
  EXPECT_NE(ns.Exec("ip link show " + ifname), 0);
}

// Two af_packet ports on the ends of a jumbo veth pair inside a namespace.
struct VethPair {
  Netns ns{"veth"};
  std::string va = Unique("rva"), vb = Unique("rvb");
  bool Setup(int mtu) {
    if (!ns.ok()) return false;
    QuietNamespace(ns);
    return ns.Exec(absl::StrCat("ip link add ", va, " mtu ", mtu, " type veth peer name ", vb, " mtu ", mtu)) == 0 &&
           ns.Exec("ip link set " + va + " up") == 0 && ns.Exec("ip link set " + vb + " up") == 0;
  }
};

absl::StatusOr<std::unique_ptr<Port>> OpenIn(const Netns& ns, const PortProfile& p) {
  Netns::Enter in(ns);
  if (!in.ok()) return absl::InternalError("setns failed");
  return Port::Open(p);
}

// Sends frames a few at a time and collects what `rx` receives from `tx`'s
// MAC (the kernel may add its own frames), up to `expect` or a deadline.
std::vector<std::vector<uint8_t>> Trickle(Port& tx, Port& rx, const std::vector<rte_mbuf*>& frames, size_t expect) {
  std::vector<std::vector<uint8_t>> got;
  size_t off = 0;
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (got.size() < expect && std::chrono::steady_clock::now() < end) {
    if (off < frames.size()) {
      uint16_t n = static_cast<uint16_t>(std::min<size_t>(4, frames.size() - off));
      tx.TxBurst(0, const_cast<rte_mbuf**>(frames.data()) + off, n);
      off += n;
    }
    tx.Flush(0);
    rte_mbuf* b[32];
    uint16_t k = rx.RxBurst(0, b, 32);
    for (uint16_t i = 0; i < k; i++) {
      std::vector<uint8_t> f = Bytes(b[i]);
      if (f.size() >= 12 && std::equal(f.begin() + 6, f.begin() + 12, tx.mac().b.begin())) got.push_back(f);
    }
    rte_pktmbuf_free_bulk(b, k);
    if (k == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return got;
}

TEST(Kernel, AfPacketJumboFramesOnAVeth) {
  REQUIRE_ROOT();
  VethPair v;
  ASSERT_TRUE(v.Setup(9000));
  auto base = LoadProfile(SourcePath("drivers-cfg/net_af_packet.ini"));
  ASSERT_TRUE(base.ok()) << base.status();
  PortProfile pa = *base, pb = *base;
  pa.devargs = SetDevarg(pa.devargs, "iface", v.va);
  pb.devargs = SetDevarg(pb.devargs, "iface", v.vb);
  pb.mac = MacAddr{{0x02, 0, 0, 0, 0xaf, 0x02}};
  auto a = OpenIn(v.ns, pa);
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = OpenIn(v.ns, pb);
  ASSERT_TRUE(b.ok()) << b.status();
  // af_packet: multi-seg TX, no checksum offload (the stack does them).
  const Offloads& o = (*a)->offloads();
  EXPECT_TRUE(o.tx_multiseg) << o.ToString();
  EXPECT_FALSE(o.tx_ipv4_checksum);
  EXPECT_FALSE(o.tx_udp_checksum);
  EXPECT_FALSE(o.rx_ipv4_checksum);
  EXPECT_EQ((*a)->max_frame_len(), 4200u + 18u);

  // PMTU-4096-sized frames as chains (header + two payload segments), and small ones.
  std::vector<rte_mbuf*> frames;
  std::vector<std::vector<uint8_t>> sent;
  for (uint32_t i = 0; i < 40; i++) {
    const uint32_t len = i % 2 ? 4200 : 64;
    std::vector<uint8_t> f = TestFrame(len, i, (*a)->mac(), (*b)->mac());
    rte_mbuf* m = AllocHeader((*a)->pool(), 64);
    ASSERT_NE(m, nullptr);
    WriteAt(m, 0, ByteSpan(f.data(), 64));
    for (uint32_t off = 64; off < len; off += 2100) {
      const uint16_t n = static_cast<uint16_t>(std::min<uint32_t>(2100, len - off));
      rte_mbuf* seg = AllocHeader((*a)->pool(), n);
      ASSERT_NE(seg, nullptr);
      WriteAt(seg, 0, ByteSpan(f.data() + off, n));
      ASSERT_TRUE(AppendSegment(m, seg));
    }
    if (len == 4200) {
      EXPECT_EQ(m->nb_segs, 3);
    }
    frames.push_back(m);
    sent.push_back(f);
  }
  auto got = Trickle(**a, **b, frames, frames.size());
  ASSERT_EQ(got.size(), sent.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_EQ(got[i], sent[i]) << i;
  EXPECT_EQ((*a)->Stats().tx_linearized, 0u);

  // Requiring a checksum offload af_packet lacks: configure fails, clearly.
  PortProfile pc = *base;
  pc.devargs = SetDevarg(pc.devargs, "iface", v.va);
  pc.tx_udp_checksum = Tristate::kOn;
  auto c = OpenIn(v.ns, pc);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(absl::StrContains(c.status().message(), "net_af_packet does not offer it")) << c.status();
}

TEST(Kernel, PcapLiveAndAfPacketOnAVeth) {
  REQUIRE_ROOT();
  VethPair v;
  ASSERT_TRUE(v.Setup(1500));
  auto pl = LoadProfile(SourcePath("drivers-cfg/net_pcap_live.ini"),
                        std::vector<std::string>{"port.devargs=iface=" + v.va, "port.mac=02:00:00:00:bc:01"});
  ASSERT_TRUE(pl.ok()) << pl.status();
  auto pb = LoadProfile(SourcePath("drivers-cfg/net_af_packet.ini"),
                        std::vector<std::string>{"port.devargs=iface=" + v.vb, "port.mtu=1500"});
  ASSERT_TRUE(pb.ok()) << pb.status();
  auto a = OpenIn(v.ns, *pl);
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = OpenIn(v.ns, *pb);
  ASSERT_TRUE(b.ok()) << b.status();
  for (auto [tx, rx] : {std::pair{a->get(), b->get()}, std::pair{b->get(), a->get()}}) {
    std::vector<rte_mbuf*> frames;
    std::vector<std::vector<uint8_t>> sent;
    for (uint32_t i = 0; i < 20; i++) {
      sent.push_back(TestFrame(1000, i, tx->mac(), rx->mac()));
      frames.push_back(MbufFrom(tx->pool(), sent.back()));
    }
    auto got = Trickle(*tx, *rx, frames, frames.size());
    ASSERT_EQ(got.size(), sent.size()) << tx->profile().driver << " -> " << rx->profile().driver;
    for (size_t i = 0; i < got.size(); i++) EXPECT_EQ(got[i], sent[i]) << i;
  }
}

}  // namespace
}  // namespace roce::port
