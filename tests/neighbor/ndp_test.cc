// SPDX-License-Identifier: MIT
// wire/ndp: solicited-node addresses and MACs, the ICMPv6 checksum, NS/NA
// parse/emit with options, and the RFC 4861 frame checks.
#include "stack/wire/ndp.h"

#include <gtest/gtest.h>

#include "stack/wire/checksum.h"
#include "tests/neighbor/frames.h"

namespace roce::wire {
namespace {

using roce::neighbor::testing::Bytes;
using roce::neighbor::testing::Ip;
using roce::neighbor::testing::Mac;
using roce::neighbor::testing::NdFrame;

TEST(Ndp, SolicitedNodeMulticastAndMac) {
  const Ipv6Addr a = Ip("2001:db8::abcd:12:3456").b;
  const Ipv6Addr m = SolicitedNodeMulticast(a);
  EXPECT_EQ(m, Ip("ff02::1:ff12:3456").b);
  EXPECT_TRUE(IsSolicitedNodeMulticast(m));
  EXPECT_FALSE(IsSolicitedNodeMulticast(kIpv6AllNodes));
  EXPECT_FALSE(IsSolicitedNodeMulticast(a));
  EXPECT_EQ(Ipv6MulticastMac(m), Mac("33:33:ff:12:34:56"));
  EXPECT_EQ(Ipv6MulticastMac(kIpv6AllNodes), Mac("33:33:00:00:00:01"));
  EXPECT_TRUE(IsIpv6Multicast(m));
  EXPECT_TRUE(IsIpv6Unspecified(kIpv6Unspecified));
}

// The NS scapy builds for fe80::2 from fe80::1 (see neighbor_test.cc) has
// checksum 0x7a97; recompute it from the bytes after the IPv6 header.
TEST(Ndp, ChecksumMatchesAKnownVector) {
  Bytes icmp = {0x87, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0x80, 0x00,
                0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                0x00, 0x02, 0x01, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  const Ipv6Addr src = Ip("fe80::1").b, dst = Ip("ff02::1:ff00:2").b;
  EXPECT_EQ(Icmpv6Checksum(src, dst, icmp), 0x7a97);
  EXPECT_FALSE(VerifyIcmpv6Checksum(src, dst, icmp));  // field still 0
  Store16(&icmp[2], 0x7a97);
  EXPECT_TRUE(VerifyIcmpv6Checksum(src, dst, icmp));
  EXPECT_FALSE(VerifyIcmpv6Checksum(dst, src, Bytes{1, 2}));  // too short: never valid
}

// Find a message whose checksum is 0x0000: it is stored as 0x0000, and the
// other representation of zero (0xFFFF) verifies as well.
TEST(Ndp, ZeroChecksumIsStoredAsZero) {
  const Ipv6Addr src = Ip("fe80::1").b, dst = Ip("fe80::2").b;
  Bytes icmp(24, 0);
  icmp[0] = kIcmpv6NeighborAdvertisement;
  bool found = false;
  for (uint32_t v = 0; v <= 0xFFFF && !found; v++) {
    Store16(&icmp[22], static_cast<uint16_t>(v));
    if (Icmpv6Checksum(src, dst, icmp) == 0) found = true;
  }
  ASSERT_TRUE(found);
  EXPECT_TRUE(VerifyIcmpv6Checksum(src, dst, icmp));
  Store16(&icmp[2], 0xFFFF);
  EXPECT_TRUE(VerifyIcmpv6Checksum(src, dst, icmp));
}

TEST(Ndp, ParseEmitRoundTrip) {
  NdpMessage m;
  m.type = kIcmpv6NeighborAdvertisement;
  m.checksum = 0xBEEF;
  m.flags = NdpMessage::kFlagSolicited | NdpMessage::kFlagOverride | 0x123;
  m.target = Ip("2001:db8::7").b;
  m.has_lla = true;
  m.lla = Mac("02:11:22:33:44:55");
  Bytes b(m.Len());
  m.Emit(b.data());
  EXPECT_EQ(b[24], kNdOptTargetLinkAddr);
  EXPECT_EQ(b[25], 1);
  NdpMessage p;
  ASSERT_EQ(p.Parse(b), Error::kOk);
  EXPECT_EQ(p.type, m.type);
  EXPECT_EQ(p.checksum, m.checksum);
  EXPECT_EQ(p.flags, m.flags);
  EXPECT_TRUE(p.Solicited());
  EXPECT_TRUE(p.Override());
  EXPECT_FALSE(p.Router());
  EXPECT_EQ(p.target, m.target);
  EXPECT_TRUE(p.has_lla);
  EXPECT_EQ(p.lla, m.lla);
}

TEST(Ndp, OptionsOtherThanTheLinkLayerAddressAreSkipped) {
  // NS: a nonce option (type 14, 8 bytes), a TLLA (wrong kind for an NS), a
  // 16-byte SLLA, then a second SLLA that must not win.
  Bytes b(24, 0);
  b[0] = kIcmpv6NeighborSolicitation;
  const Bytes opts = {14, 1, 1, 2, 3, 4, 5, 6,
                      2,  1, 9, 9, 9, 9, 9, 9,
                      1,  2, 2, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0,
                      1,  1, 2, 0, 0, 0, 0, 8};
  b.insert(b.end(), opts.begin(), opts.end());
  NdpMessage m;
  ASSERT_EQ(m.Parse(b), Error::kOk);
  EXPECT_TRUE(m.has_lla);
  EXPECT_EQ(m.lla, Mac("02:00:00:00:00:07"));
  // Without any SLLA.
  ASSERT_EQ(m.Parse(ByteSpan(b).first(24 + 16)), Error::kOk);
  EXPECT_FALSE(m.has_lla);
  // An option header cut in half.
  EXPECT_EQ(m.Parse(ByteSpan(b).first(24 + 16 + 1)), Error::kBadNdp);
}

TEST(Ndp, BuildFillsLengthAndChecksumAndParsesBack) {
  Bytes f = NdFrame({.vlan = 0x2005});
  NdpFrame p;
  ASSERT_EQ(ParseNdpFrame(f, &p), Error::kOk);
  EXPECT_TRUE(p.eth.has_vlan);
  EXPECT_EQ(p.eth.vlan_tci, 0x2005);
  EXPECT_EQ(p.ip6.payload_length, 32);
  EXPECT_EQ(p.ip6.next_header, kIpProtoIcmpv6);
  EXPECT_TRUE(p.nd.IsNs());
  Bytes small(10);
  EXPECT_EQ(BuildNdpFrame(p, small), 0u);
}

TEST(Ndp, TrailingEthernetPaddingIsIgnored) {
  Bytes f = NdFrame({});
  f.resize(f.size() + 10, 0xAA);
  NdpFrame p;
  EXPECT_EQ(ParseNdpFrame(f, &p), Error::kOk);
}

TEST(Ndp, NonIpv6IsRejected) {
  Bytes f = roce::neighbor::testing::ArpFrame({});
  NdpFrame p;
  EXPECT_EQ(ParseNdpFrame(f, &p), Error::kBadEthertype);
}

TEST(Ndp, ErrorNamesExist) {
  for (Error e : {Error::kNotNdp, Error::kBadNdp, Error::kBadNdpHopLimit,
                  Error::kBadIcmpv6Checksum})
    EXPECT_STRNE(ErrorName(e), "unknown-error");
}

}  // namespace
}  // namespace roce::wire
