// SPDX-License-Identifier: MIT
// Our ibv_rc_pingpong exchange against the real ibv_rc_pingpong on kernel
// Soft-RoCE in an rxe-peer guest. Run by the interop harness (case
// `exchange`), which boots the guest, puts a veth on the bridge and runs this
// program inside the netns with RXE_* variables set; run alone it skips (it
// is no meson test of its own). Under the harness every case must run: a
// skipped case fails `exchange` (interop.py reads this program's gtest output).
//
// We play a host RoCE stack at RXE_HOST_IP (198.18.0.10) with a QP that does
// not exist: the guest's ibv_rc_pingpong gets our values, connects its QP to
// them and, as client, starts sending to us. We check what it received (its
// "remote address" line), what it sent us (QPN, PSN, RoCEv2 GID at its GID
// index) and, as client, that its first RC SEND comes to our QPN with the PSN
// it announced and a valid ICRC. The guest program then never gets an answer
// and is killed (rxe retries forever: retry_cnt 7 is infinite there).
//
// The ARP step is part of what is tested: a kernel RoCE peer cannot move its
// QP to RTR unless it can already resolve the IP of our GID, so (as the DPDK
// stack will) we send it an ARP request from our address first. The last
// test shows what happens without.
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stack/wire/headers.h"
#include "stack/wire/opcode.h"
#include "stack/wire/packet.h"
#include "tools/lib/pingpong_exchange.h"

namespace roce::tools {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

uint32_t ParseIpv4(const std::string& s) {
  in_addr a{};
  if (::inet_pton(AF_INET, s.c_str(), &a) != 1) return 0;
  return ntohl(a.s_addr);
}

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs a command, returns its exit status, stdout+stderr in *out.
int Run(const std::string& cmd, std::string* out) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  out->clear();
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  int st = ::pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The guest side, through rxe-peer (which the harness told us about).
class Guest {
 public:
  // Starts CMD (bash, $RXE_DEV/$RXE_GID_INDEX expanded in the guest) in the
  // background, line-buffered so that a killed program's output survives.
  static std::string Start(const std::string& cmd) {
    std::string out;
    int rc = Run(Peer() + " run --vm 1 --bg --timeout 120 -- stdbuf -oL -eL bash -c " + ShellQuote(cmd), &out);
    return rc == 0 ? Trim(out) : "";
  }
  // Kills a job (no-op if it ended), returns its output.
  static std::string Kill(const std::string& job) {
    std::string out;
    Run(Peer() + " kill " + job, &out);
    return out;
  }
  static std::string Wait(const std::string& job, int* rc) {
    std::string out;
    *rc = Run("timeout 60 " + Peer() + " wait " + job, &out);
    return out;
  }
  static bool WaitListening(int port) {
    std::string out;
    return Run(Peer() + " run --vm 1 --timeout 40 -- bash -c " +
                   ShellQuote("for i in $(seq 1 300); do ss -Hltn 'sport = :" + std::to_string(port) +
                              "' | grep -q . && exit 0; sleep 0.1; done; exit 1"),
               &out) == 0;
  }
  static std::string Peer() { return ShellQuote(Env("RXE_PEER")); }
};

// A raw AF_PACKET socket on the host interface (the veth on the bridge): what
// the DPDK stack sends and receives there.
class RawPort {
 public:
  bool Open(const std::string& ifname, std::string* error) {
    fd_ = ::socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    if (fd_ < 0) {
      *error = "socket(AF_PACKET) failed";
      return false;
    }
    ifindex_ = static_cast<int>(::if_nametoindex(ifname.c_str()));
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = ifindex_;
    ifreq ifr{};
    std::snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname.c_str());
    if (ifindex_ == 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0 ||
        ::ioctl(fd_, SIOCGIFHWADDR, &ifr) != 0) {
      *error = "cannot bind to " + ifname;
      return false;
    }
    std::memcpy(mac_.b.data(), ifr.ifr_hwaddr.sa_data, 6);
    return true;
  }
  ~RawPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  const wire::MacAddr& mac() const { return mac_; }

  // "Who has target? Tell sender" from our MAC: makes the target's kernel
  // create a neighbour entry for `sender` (Linux does so for a request that
  // is addressed to it).
  bool SendArpRequest(uint32_t sender, uint32_t target) {
    uint8_t frame[60] = {};
    wire::EthernetHeader eth;
    eth.dst.b = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    eth.src = mac_;
    eth.ethertype = wire::kEtherTypeArp;
    eth.Emit(frame);
    wire::ArpPacket arp;
    arp.oper = wire::ArpPacket::kRequest;
    arp.sha = mac_;
    arp.spa = sender;
    arp.tpa = target;
    arp.Emit(frame + wire::EthernetHeader::kLen);
    return ::send(fd_, frame, sizeof frame, 0) == static_cast<ssize_t>(sizeof frame);
  }

  // Waits for a RoCEv2 frame to dst_ip; parses it (ICRC verified).
  bool ReceiveRoce(uint32_t dst_ip, int timeout_ms, wire::RocePacket* p, std::vector<uint8_t>* keep,
                   std::string* error) {
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    std::vector<uint8_t> buf(10000);
    for (;;) {
      int left = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count());
      if (left <= 0) {
        *error = "no RoCEv2 frame to our address within " + std::to_string(timeout_ms) + " ms";
        return false;
      }
      pollfd pf{fd_, POLLIN, 0};
      if (::poll(&pf, 1, left) <= 0) continue;
      ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
      if (n <= 0) continue;
      *keep = std::vector<uint8_t>(buf.begin(), buf.begin() + n);
      wire::RocePacket pkt;
      wire::Error e = wire::ParseRoceFrame(wire::ByteSpan(keep->data(), keep->size()), &pkt);
      if (e == wire::Error::kNotRoce || e == wire::Error::kNotUdp || e == wire::Error::kBadEthertype) continue;
      if (e != wire::Error::kOk) {
        *error = std::string("RoCEv2 frame rejected: ") + wire::ErrorName(e);
        return false;
      }
      if (!pkt.ipv6 && pkt.ip4.dst == dst_ip) {
        *p = pkt;
        return true;
      }
    }
  }

 private:
  int fd_ = -1;
  int ifindex_ = 0;
  wire::MacAddr mac_;
};

class ExchangeInterop : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Env("RXE_PEER").empty() || Env("RXE_PEER_NS").empty())
      GTEST_SKIP() << "run through tests/interop/interop.py (case 'exchange'): needs a guest";
    guest_ip_ = ParseIpv4(Env("RXE_VM1_IP"));
    host_ip_ = ParseIpv4(Env("RXE_HOST_IP"));
    bridge_ip_ = Env("RXE_BRIDGE_IP");
    gid_index_ = std::atoi(Env("RXE_VM1_GID_INDEX").c_str());
    ASSERT_NE(guest_ip_, 0u);
    ASSERT_NE(host_ip_, 0u);
    std::string err;
    ASSERT_TRUE(port_.Open(Env("RXE_HOST_IFACE"), &err)) << err;
    // The guest's GID at its GID index as sysfs prints it (RXE_VM1_GID),
    // e.g. 0000:0000:0000:0000:0000:ffff:c612:0002.
    std::string sys = Env("RXE_VM1_GID");
    std::string hex;
    for (char c : sys)
      if (c != ':') hex += c;
    ASSERT_TRUE(GidFromWire(hex, &guest_gid_)) << "RXE_VM1_GID=" << sys;
    ours_.lid = 0;
    ours_.qpn = 0x0abcde;
    ours_.psn = RcPingpongStartPsn(PingpongSeed());
    ours_.gid = Ipv4MappedGid(host_ip_);
  }

  // What the guest program printed and sent must match what we exchanged.
  void CheckGuestOutput(const std::string& out, const PingpongDest& guest_sent) {
    PingpongDest local, remote;
    ASSERT_TRUE(FindAddressLine(out, true, &local)) << out;
    ASSERT_TRUE(FindAddressLine(out, false, &remote)) << out;
    EXPECT_EQ(local, guest_sent) << out;
    EXPECT_EQ(remote, ours_) << out;  // the guest got our values intact
  }

  void CheckGuestValues(const PingpongDest& g) {
    EXPECT_EQ(g.lid, 0);  // RoCE: no LID
    EXPECT_NE(g.qpn, 0u);
    EXPECT_LE(g.psn, 0xffffffu);
    EXPECT_EQ(g.gid, guest_gid_) << GidToString(g.gid);  // its GID at RXE_VM1_GID_INDEX
    EXPECT_EQ(g.gid, Ipv4MappedGid(guest_ip_)) << GidToString(g.gid);  // RoCEv2, IPv4-mapped
  }

  std::string GuestCmd(const std::string& server) const {
    return "exec ibv_rc_pingpong -d $RXE_DEV -g " + std::to_string(gid_index_) + " -s 64 -n 3 " + server;
  }

  uint32_t guest_ip_ = 0, host_ip_ = 0;
  std::string bridge_ip_;
  int gid_index_ = 1;
  Gid guest_gid_{};
  PingpongDest ours_;
  RawPort port_;
};

// Our client, ibv_rc_pingpong server in the guest.
TEST_F(ExchangeInterop, OurClientGuestServer) {
  // As our client will: make the server able to resolve our address first.
  ASSERT_TRUE(port_.SendArpRequest(host_ip_, guest_ip_));
  std::string job = Guest::Start(GuestCmd(""));
  ASSERT_FALSE(job.empty());
  char ip[INET_ADDRSTRLEN];
  in_addr a{htonl(guest_ip_)};
  ::inet_ntop(AF_INET, &a, ip, sizeof ip);
  ExchangeResult r = PingpongClientExchange(ip, kPingpongDefaultPort, ours_,
                                            {.timeout_ms = 60000, .connect_retry_ms = 50000});
  // The guest server now waits for our first SEND, which never comes.
  std::string out = Guest::Kill(job);
  ASSERT_TRUE(r.ok()) << r.error << "\nguest:\n" << out;
  std::printf("guest server sent: %s\n", FormatAddressLine(false, r.remote).c_str());
  CheckGuestValues(r.remote);
  CheckGuestOutput(out, r.remote);
}

// Our server, ibv_rc_pingpong client in the guest.
TEST_F(ExchangeInterop, OurServerGuestClient) {
  PingpongServer server;
  std::string err;
  ASSERT_TRUE(server.Listen(kPingpongDefaultPort, &err)) << err;
  std::string job = Guest::Start(GuestCmd(bridge_ip_));  // TCP to the netns kernel address
  ASSERT_FALSE(job.empty());
  bool arp_sent = false;
  ExchangeResult r = server.Exchange(
      ours_,
      [&](const PingpongDest& remote, std::string* why) {
        // Where the real server connects its QP: learn/teach addresses.
        uint32_t ip = 0;
        if (!GidToIpv4(remote.gid, &ip)) {
          *why = "client GID is not IPv4-mapped: " + GidToString(remote.gid);
          return false;
        }
        arp_sent = port_.SendArpRequest(host_ip_, ip);
        return arp_sent;
      },
      {.timeout_ms = 60000});
  ASSERT_TRUE(r.ok()) << r.error << "\nguest:\n" << Guest::Kill(job);
  EXPECT_TRUE(arp_sent);
  CheckGuestValues(r.remote);
  // The guest connected its QP to ours and sends its first message: an RC
  // SEND ONLY (64 bytes < path MTU) to our QPN, starting at the PSN it told us.
  wire::RocePacket p;
  std::vector<uint8_t> frame;
  bool got = port_.ReceiveRoce(host_ip_, 15000, &p, &frame, &err);
  std::string out = Guest::Kill(job);
  ASSERT_TRUE(got) << err << "\nguest:\n" << out;
  EXPECT_EQ(p.ip4.src, guest_ip_);
  EXPECT_EQ(p.bth.dest_qp, ours_.qpn);
  EXPECT_EQ(p.bth.psn, r.remote.psn);
  EXPECT_EQ(p.bth.opcode, 0x04) << "expected RC SEND ONLY";
  EXPECT_TRUE(p.bth.ack_req);
  EXPECT_EQ(p.payload.size(), 64u);
  std::printf("guest client sent: %s; first packet: %s QP 0x%06x PSN 0x%06x TTL %u sport 0x%04x\n",
              FormatAddressLine(false, r.remote).c_str(), p.info().name, p.bth.dest_qp, p.bth.psn,
              unsigned{p.ip4.ttl}, unsigned{p.udp.src_port});
  CheckGuestOutput(out, r.remote);
}

// Without the ARP step the guest's RTR fails and the server closes the
// connection without replying: the reason a host stack must ARP first.
TEST_F(ExchangeInterop, GuestServerCannotResolveUs) {
  ours_.gid = Ipv4MappedGid(host_ip_ + 1);  // an address nobody ever announced
  std::string job = Guest::Start(GuestCmd(""));
  ASSERT_FALSE(job.empty());
  char ip[INET_ADDRSTRLEN];
  in_addr a{htonl(guest_ip_)};
  ::inet_ntop(AF_INET, &a, ip, sizeof ip);
  ExchangeResult r = PingpongClientExchange(ip, kPingpongDefaultPort, ours_,
                                            {.timeout_ms = 60000, .connect_retry_ms = 50000});
  int rc = 0;
  std::string out = Guest::Wait(job, &rc);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("closed by peer after 0 of 52"), std::string::npos) << r.error;
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("Failed to modify QP to RTR"), std::string::npos) << out;
}

}  // namespace
}  // namespace roce::tools
