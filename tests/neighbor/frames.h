// SPDX-License-Identifier: MIT
// Frame builders and a transmit recorder for the neighbour-layer tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stack/neighbor/neighbor.h"
#include "stack/wire/headers.h"
#include "stack/wire/ndp.h"

namespace roce::neighbor::testing {

using Bytes = std::vector<uint8_t>;

inline MacAddr Mac(const std::string& s) {
  MacAddr m;
  EXPECT_TRUE(MacAddr::FromString(s, &m)) << s;
  return m;
}

inline IpAddr Ip(const std::string& s) {
  IpAddr a;
  EXPECT_TRUE(IpAddr::FromString(s, &a)) << s;
  return a;
}

inline const MacAddr kOurMac = Mac("02:00:00:00:00:01");
inline const MacAddr kPeerMac = Mac("02:00:00:00:00:02");
inline const MacAddr kOtherMac = Mac("02:00:00:00:00:03");
inline const MacAddr kBroadcast = Mac("ff:ff:ff:ff:ff:ff");

// Collects what the table transmits.
struct Wire {
  mutable std::vector<Bytes> sent;  // absl::FunctionRef calls a const operator()
  void operator()(wire::ByteSpan f) const { sent.emplace_back(f.begin(), f.end()); }
  TxFn tx() { return TxFn(*this); }
  Bytes Take() {
    EXPECT_EQ(sent.size(), 1u);
    Bytes b = sent.empty() ? Bytes{} : sent.back();
    sent.clear();
    return b;
  }
};

inline wire::EthernetHeader Eth(const MacAddr& dst, const MacAddr& src, uint16_t type,
                                int vlan = -1) {
  wire::EthernetHeader e;
  e.dst = dst;
  e.src = src;
  e.ethertype = type;
  if (vlan >= 0) {
    e.has_vlan = true;
    e.vlan_tci = static_cast<uint16_t>(vlan);
  }
  return e;
}

struct ArpSpec {
  uint16_t oper = wire::ArpPacket::kRequest;
  MacAddr sha = kPeerMac;
  std::string spa = "10.0.0.2";
  MacAddr tha{};
  std::string tpa = "10.0.0.1";
  MacAddr eth_dst = kBroadcast;
  MacAddr eth_src = kPeerMac;
  int vlan = -1;  // TCI, or -1 for untagged
};

inline Bytes ArpFrame(const ArpSpec& s) {
  wire::EthernetHeader e = Eth(s.eth_dst, s.eth_src, wire::kEtherTypeArp, s.vlan);
  wire::ArpPacket a;
  a.oper = s.oper;
  a.sha = s.sha;
  a.spa = Ip(s.spa).V4();
  a.tha = s.tha;
  a.tpa = Ip(s.tpa).V4();
  Bytes b(e.Len() + wire::ArpPacket::kLen);
  e.Emit(b.data());
  a.Emit(b.data() + e.Len());
  return b;
}

struct NdSpec {
  bool ns = true;
  std::string src = "fe80::2";
  std::string dst;  // default: solicited-node of target (NS) / fe80::1 (NA)
  std::string target = "fe80::1";
  uint32_t flags = 0;
  bool lla = true;
  MacAddr lla_mac = kPeerMac;
  MacAddr eth_src = kPeerMac;
  MacAddr eth_dst{};  // default: from dst
  uint8_t hop_limit = 255;
  int vlan = -1;
};

inline Bytes NdFrame(const NdSpec& s) {
  wire::NdpFrame f;
  f.ip6.hop_limit = s.hop_limit;
  f.ip6.src = Ip(s.src).b;
  f.nd.type = s.ns ? wire::kIcmpv6NeighborSolicitation : wire::kIcmpv6NeighborAdvertisement;
  f.nd.target = Ip(s.target).b;
  f.nd.flags = s.flags;
  f.nd.has_lla = s.lla;
  f.nd.lla = s.lla_mac;
  if (s.dst.empty()) {
    f.ip6.dst = s.ns ? wire::SolicitedNodeMulticast(f.nd.target) : Ip("fe80::1").b;
  } else {
    f.ip6.dst = Ip(s.dst).b;
  }
  MacAddr edst = s.eth_dst;
  if (edst == MacAddr{}) edst = wire::IsIpv6Multicast(f.ip6.dst) ? wire::Ipv6MulticastMac(f.ip6.dst) : kOurMac;
  f.eth = Eth(edst, s.eth_src, wire::kEtherTypeIpv6, s.vlan);
  Bytes b(f.Len());
  EXPECT_EQ(wire::BuildNdpFrame(f, b), b.size());
  return b;
}

inline std::string Hex(const Bytes& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t x : b) {
    s += d[x >> 4];
    s += d[x & 15];
  }
  return s;
}

}  // namespace roce::neighbor::testing
