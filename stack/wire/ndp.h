// SPDX-License-Identifier: MIT
// IPv6 Neighbor Discovery (RFC 4861) on the wire: the ICMPv6 Neighbor
// Solicitation and Neighbor Advertisement messages with their source/target
// link-layer address options, the ICMPv6 checksum over the IPv6 pseudo-header,
// solicited-node multicast addresses and their 33:33:xx:xx:xx:xx MACs, and a
// whole-frame parser that applies every validity check of RFC 4861 §7.1.1 and
// §7.1.2. Pure: no DPDK, no clock. The neighbour table (stack/neighbor/neighbor.h)
// decides what to do with a valid message.
#pragma once

#include <array>
#include <cstdint>

#include "stack/wire/bytes.h"
#include "stack/wire/error.h"
#include "stack/wire/headers.h"

namespace roce::wire {

using Ipv6Addr = std::array<uint8_t, 16>;

inline constexpr uint8_t kIcmpv6NeighborSolicitation = 135;
inline constexpr uint8_t kIcmpv6NeighborAdvertisement = 136;
inline constexpr uint8_t kNdOptSourceLinkAddr = 1;
inline constexpr uint8_t kNdOptTargetLinkAddr = 2;
inline constexpr uint8_t kNdHopLimit = 255;  // RFC 4861: sent with, and only accepted at, 255

inline constexpr Ipv6Addr kIpv6Unspecified{};
inline constexpr Ipv6Addr kIpv6AllNodes{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

inline bool IsIpv6Multicast(const Ipv6Addr& a) { return a[0] == 0xff; }
inline bool IsIpv6Unspecified(const Ipv6Addr& a) { return a == kIpv6Unspecified; }
// ff02::1:ffXX:XXXX, the low 24 bits taken from `a` (RFC 4291 §2.7.1).
Ipv6Addr SolicitedNodeMulticast(const Ipv6Addr& a);
bool IsSolicitedNodeMulticast(const Ipv6Addr& a);
// The Ethernet MAC of an IPv6 multicast address: 33:33 + its low 32 bits
// (RFC 2464 §7); for a solicited-node address that is 33:33:ff:xx:xx:xx.
MacAddr Ipv6MulticastMac(const Ipv6Addr& a);

// ICMPv6 checksum (RFC 4443 §2.3) of `icmp` (the whole ICMPv6 message; its
// checksum field, bytes 2..3, counts as zero) over the IPv6 pseudo-header.
// Returns the value to store (0x0000 when the one's-complement sum is 0xFFFF;
// ICMPv6 has no "no checksum" value, unlike UDP). `icmp` must be >= 4 bytes.
uint16_t Icmpv6Checksum(const Ipv6Addr& src, const Ipv6Addr& dst, ByteSpan icmp);
// True if the checksum stored in `icmp` is right (either representation of 0).
bool VerifyIcmpv6Checksum(const Ipv6Addr& src, const Ipv6Addr& dst, ByteSpan icmp);

// An NS or NA message (ICMPv6 header, the 4-byte flags/reserved word, the
// target address, options). Only the link-layer address option is kept: the
// source one (type 1) in an NS, the target one (type 2) in an NA; other
// options are skipped, as RFC 4861 requires.
struct NdpMessage {
  static constexpr size_t kLen = 24;        // fixed part
  static constexpr size_t kLlaOptLen = 8;   // Ethernet link-layer address option
  static constexpr uint32_t kFlagRouter = 0x80000000;
  static constexpr uint32_t kFlagSolicited = 0x40000000;
  static constexpr uint32_t kFlagOverride = 0x20000000;

  uint8_t type = kIcmpv6NeighborSolicitation;
  uint8_t code = 0;
  uint16_t checksum = 0;
  uint32_t flags = 0;  // the whole second word: R/S/O in an NA, reserved (0) in an NS
  Ipv6Addr target{};
  bool has_lla = false;  // the SLLA option (NS) / TLLA option (NA) is present
  MacAddr lla;

  bool IsNs() const { return type == kIcmpv6NeighborSolicitation; }
  bool Router() const { return flags & kFlagRouter; }
  bool Solicited() const { return flags & kFlagSolicited; }
  bool Override() const { return flags & kFlagOverride; }
  size_t Len() const { return kLen + (has_lla ? kLlaOptLen : 0); }

  // Parses one ICMPv6 message (exactly the IPv6 payload). Checks the type
  // (135/136: else kNotNdp), the code, the length and the option framing
  // (every option length > 0 and inside the message: else kBadNdp). Does not
  // check the checksum (it needs the IPv6 header): see ParseNdpFrame.
  Error Parse(ByteSpan icmp);
  // Writes Len() bytes, `checksum` as is.
  void Emit(uint8_t* out) const;
};

// A whole NDP frame: Ethernet [802.1Q] / IPv6 / ICMPv6 NS|NA.
struct NdpFrame {
  EthernetHeader eth;
  Ipv6Header ip6;
  NdpMessage nd;
  size_t Len() const { return eth.Len() + Ipv6Header::kLen + nd.Len(); }
};

// Parses and validates an NDP frame as RFC 4861 §7.1 says a node must before
// acting on it: ethertype IPv6 (kBadEthertype), next header ICMPv6 and type
// NS/NA (kNotNdp; extension headers are not followed), hop limit 255
// (kBadNdpHopLimit), ICMPv6 checksum (kBadIcmpv6Checksum), code 0, length
// >= 24, target not multicast, option lengths, for an NS from :: a
// solicited-node destination and no SLLA option, for an NA to a multicast
// destination the Solicited flag clear (kBadNdp). Never reads outside `frame`.
Error ParseNdpFrame(ByteSpan frame, NdpFrame* out);

// Emits `f` into `out` (which must hold f.Len() bytes), filling the IPv6
// payload length and the ICMPv6 checksum. Returns the frame length, 0 if
// `out` is too small.
size_t BuildNdpFrame(const NdpFrame& f, MutByteSpan out);

}  // namespace roce::wire
