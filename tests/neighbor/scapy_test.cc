// SPDX-License-Identifier: MIT
// Independent checks of the neighbour layer:
//  1. scapy builds ARP requests/replies and NDP NS/NA frames
//     (tests/neighbor/neighbor_scapy.py gen); we feed them to NeighborTable;
//     scapy parses our replies and requests and checks every field and the
//     ICMPv6 checksum (neighbor_scapy.py check).
//  2. tshark decodes everything we sent with no malformed packet, no expert
//     warning, and a good ICMPv6 checksum status.
#include <gtest/gtest.h>

#include <absl/strings/str_split.h>

#include <fstream>
#include <map>

#include "stack/neighbor/neighbor.h"
#include "stack/pcap/pcap_file.h"
#include "tests/neighbor/frames.h"
#include "tests/support/test_support.h"

namespace roce::neighbor {
namespace {

using namespace roce::neighbor::testing;
using roce::testing::Lines;
using roce::testing::OutputDir;

using roce::testing::SourcePath;

constexpr uint64_t kSec = 1'000'000'000;
constexpr uint64_t kT0 = 5000 * kSec;

// A python3 that has scapy (the Debian package installs it for /usr/bin/python3,
// which may not be the first python3 on PATH).
std::string PythonWithScapy() {
  for (const char* py : {"python3", "/usr/bin/python3"}) {
    std::string out;
    if (roce::testing::Run(std::string(py) + " -c 'import scapy.all' 2>/dev/null", &out) == 0) return py;
  }
  return "";
}

NeighborConfig Config(bool vlan) {
  NeighborConfig c;
  c.mac = kOurMac;
  c.addrs = {Ip("10.0.0.1"), Ip("10.0.0.9"), Ip("fe80::1"), Ip("2001:db8::1")};
  if (vlan) c.vlan_id = 100;
  return c;
}

TEST(NeighborScapy, RepliesAndRequestsCheckOutInScapyAndTshark) {
  const std::string py = PythonWithScapy();
  ASSERT_NE(py, "") << "python3-scapy is required (the test command installs it)";
  const std::string dir = OutputDir("neighbor-scapy");
  const std::string script = SourcePath("tests/neighbor/neighbor_scapy.py");
  std::string out;
  ASSERT_EQ(roce::testing::Run(py + " '" + script + "' gen '" + dir + "' 2>&1", &out), 0) << out;

  auto inputs = pcapio::ReadAll(dir + "/inputs.pcap");
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  std::ifstream mf(dir + "/manifest.txt");
  std::vector<std::string> manifest;
  for (std::string line; std::getline(mf, line);) manifest.push_back(line);
  ASSERT_EQ(manifest.size(), inputs->size());
  ASSERT_GE(inputs->size(), 15u);

  NeighborTable plain(Config(false)), tagged(Config(true)), probe(Config(false));
  std::vector<Bytes> sent_frames;  // for tshark, in order
  std::ofstream requests(dir + "/requests.txt");
  auto record_request = [&](const std::string& kind, NeighborTable& t, const IpAddr& ip,
                            uint64_t now) {
    Wire w;
    t.Lookup(ip, now, w);
    ASSERT_EQ(w.sent.size(), 1u) << kind;
    requests << kind << " " << Hex(w.sent[0]) << "\n";
    sent_frames.push_back(w.sent[0]);
  };
  // Requests: broadcast ARP and multicast NS, untagged and tagged; unicast
  // probes of stale entries. (The answers to the first pair come from scapy below.)
  record_request("arp", plain, Ip("10.0.0.2"), kT0);
  record_request("ns", plain, Ip("2001:db8::2"), kT0);
  record_request("arp-vlan", tagged, Ip("10.0.0.2"), kT0);
  record_request("ns-vlan", tagged, Ip("2001:db8::2"), kT0);
  {
    Wire w;
    probe.HandleFrame(ArpFrame({}), kT0, w);
    probe.HandleFrame(NdFrame({.src = "2001:db8::2"}), kT0, w);
    ASSERT_EQ(probe.size(), 2u);
  }
  record_request("arp-probe", probe, Ip("10.0.0.2"), kT0 + 31 * kSec);
  record_request("ns-probe", probe, Ip("2001:db8::2"), kT0 + 31 * kSec);
  requests.close();
  {
    Wire w;
    plain.Lookup(Ip("10.0.0.3"), kT0, w);
    plain.Lookup(Ip("2001:db8::3"), kT0, w);
  }

  std::ofstream replies(dir + "/replies.txt");
  size_t n_replies = 0;
  for (size_t i = 0; i < inputs->size(); i++) {
    const Bytes& f = (*inputs)[i].data;
    SCOPED_TRACE(manifest[i]);
    EXPECT_NE(ClassifyNeighborFrame(f), FrameKind::kOther);
    wire::EthernetHeader eth;
    ASSERT_EQ(eth.Parse(f), wire::Error::kOk);
    NeighborTable& t = eth.has_vlan ? tagged : plain;
    Wire w;
    t.HandleFrame(f, kT0 + 1 + i, w);
    for (const Bytes& r : w.sent) {
      replies << i << " " << Hex(r) << "\n";
      sent_frames.push_back(r);
      n_replies++;
    }
    std::vector<std::string> m = absl::StrSplit(manifest[i], ' ');
    if (m.size() == 3 && m[1] == "resolves") {
      Wire w2;
      auto r = plain.Lookup(Ip(m[2]), kT0 + 1 + i, w2);
      EXPECT_EQ(r.status, ResolveStatus::kResolved);
      EXPECT_EQ(r.mac, kPeerMac);
    }
  }
  replies.close();
  EXPECT_GE(n_replies, 9u);
  // One input had a bad hop limit, one a bad checksum.
  EXPECT_EQ(plain.counters().Drops(wire::Error::kBadNdpHopLimit), 1u);
  EXPECT_EQ(plain.counters().Drops(wire::Error::kBadIcmpv6Checksum), 1u);

  // 1. scapy's verdict.
  const int rc = roce::testing::Run(py + " '" + script + "' check '" + dir + "' 2>&1", &out);
  EXPECT_EQ(rc, 0) << out;
  std::cout << "scapy: " << out;

  // 2. tshark's.
  ASSERT_TRUE(roce::testing::HaveTshark()) << "tshark is required";
  const std::string pcap = dir + "/neighbor-sent.pcap";
  {
    auto wr = pcapio::Writer::Open(pcap);
    ASSERT_TRUE(wr.ok()) << wr.status();
    uint64_t ts = kT0;
    for (const Bytes& f : sent_frames) (*wr)->Write(ts += 1000, f.data(), f.size());
  }
  ASSERT_EQ(roce::testing::Run("tshark -n -r '" + pcap +
                    "' -Y '_ws.malformed || _ws.expert.severity >= 0x00600000' 2>/dev/null",
                &out),
            0);
  EXPECT_EQ(out, "") << "tshark flagged frames:\n" << out;
  ASSERT_EQ(roce::testing::Run("tshark -n -r '" + pcap +
                    "' -T fields -E separator=/t -e frame.protocols -e arp.opcode"
                    " -e icmpv6.type -e icmpv6.checksum.status 2>/dev/null",
                &out),
            0);
  const auto lines = Lines(out);
  ASSERT_EQ(lines.size(), sent_frames.size());
  size_t arp = 0, ndp = 0;
  for (const std::string& l : lines) {
    std::vector<std::string> c = absl::StrSplit(l, '\t');
    ASSERT_EQ(c.size(), 4u) << l;
    if (c[0].find(":arp") != std::string::npos) {
      arp++;
      EXPECT_TRUE(c[1] == "1" || c[1] == "2") << l;
    } else {
      ndp++;
      EXPECT_NE(c[0].find(":ipv6:icmpv6"), std::string::npos) << l;
      EXPECT_TRUE(c[2] == "135" || c[2] == "136") << l;
      EXPECT_EQ(c[3], "1") << "ICMPv6 checksum not good: " << l;
    }
  }
  EXPECT_GE(arp, 6u);
  EXPECT_GE(ndp, 8u);
}

}  // namespace
}  // namespace roce::neighbor
