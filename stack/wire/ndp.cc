// SPDX-License-Identifier: MIT
#include "stack/wire/ndp.h"

#include <cstring>

#include "stack/wire/checksum.h"

namespace roce::wire {

Ipv6Addr SolicitedNodeMulticast(const Ipv6Addr& a) {
  Ipv6Addr m{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, a[13], a[14], a[15]};
  return m;
}

bool IsSolicitedNodeMulticast(const Ipv6Addr& a) {
  static constexpr uint8_t kPrefix[13] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff};
  return std::memcmp(a.data(), kPrefix, sizeof kPrefix) == 0;
}

MacAddr Ipv6MulticastMac(const Ipv6Addr& a) {
  MacAddr m;
  m.b = {0x33, 0x33, a[12], a[13], a[14], a[15]};
  return m;
}

namespace {

// One's-complement sum of the pseudo-header (RFC 8200 §8.1) and `icmp`, the
// checksum field (bytes 2..3) included only if `with_checksum`.
InetChecksum SumV6(const Ipv6Addr& src, const Ipv6Addr& dst, ByteSpan icmp, bool with_checksum) {
  InetChecksum c;
  c.Add(ByteSpan(src.data(), 16));
  c.Add(ByteSpan(dst.data(), 16));
  const uint32_t len = static_cast<uint32_t>(icmp.size());
  c.Add16(static_cast<uint16_t>(len >> 16));
  c.Add16(static_cast<uint16_t>(len));
  c.Add16(kIpProtoIcmpv6);
  c.Add(icmp.first(2));
  if (with_checksum) c.Add(icmp.subspan(2, 2));
  c.Add(icmp.subspan(4));
  return c;
}

}  // namespace

uint16_t Icmpv6Checksum(const Ipv6Addr& src, const Ipv6Addr& dst, ByteSpan icmp) {
  // The folded sum is never 0 here (the pseudo-header's next header is 58),
  // so Finish() returns 0xFFFF only when the one's complement is really 0x0000:
  // store that as 0x0000, as every other stack does.
  const uint16_t c = SumV6(src, dst, icmp, false).Finish();
  return c == 0xFFFF ? 0 : c;
}

bool VerifyIcmpv6Checksum(const Ipv6Addr& src, const Ipv6Addr& dst, ByteSpan icmp) {
  if (icmp.size() < 4) return false;
  // Sum over everything, the stored checksum included, must be 0xFFFF (so the
  // complement, which Finish() maps from 0 to 0xFFFF, is 0).
  return SumV6(src, dst, icmp, true).Finish() == 0xFFFF;
}

Error NdpMessage::Parse(ByteSpan icmp) {
  if (icmp.size() < 4) return Error::kTruncated;
  const uint8_t* p = icmp.data();
  type = p[0];
  code = p[1];
  checksum = Load16(p + 2);
  if (type != kIcmpv6NeighborSolicitation && type != kIcmpv6NeighborAdvertisement)
    return Error::kNotNdp;
  if (icmp.size() < kLen) return Error::kBadNdp;  // ICMP length < 24 (RFC 4861 §7.1)
  flags = Load32(p + 4);
  std::memcpy(target.data(), p + 8, 16);
  has_lla = false;
  lla = {};
  const uint8_t want = type == kIcmpv6NeighborSolicitation ? kNdOptSourceLinkAddr
                                                           : kNdOptTargetLinkAddr;
  size_t off = kLen;
  while (off < icmp.size()) {
    if (icmp.size() - off < 2) return Error::kBadNdp;  // an option header cut short
    const uint8_t opt_type = p[off];
    const size_t opt_len = size_t{p[off + 1]} * 8;
    if (opt_len == 0 || opt_len > icmp.size() - off) return Error::kBadNdp;
    // A link-layer address option on Ethernet is 8 bytes; a longer one still
    // starts with the 6-byte address. The first one counts.
    if (opt_type == want && !has_lla) {
      has_lla = true;
      std::memcpy(lla.b.data(), p + off + 2, 6);
    }
    off += opt_len;
  }
  if (code != 0) return Error::kBadNdp;
  if (IsIpv6Multicast(target)) return Error::kBadNdp;
  return Error::kOk;
}

void NdpMessage::Emit(uint8_t* out) const {
  out[0] = type;
  out[1] = code;
  Store16(out + 2, checksum);
  Store32(out + 4, flags);
  std::memcpy(out + 8, target.data(), 16);
  if (has_lla) {
    out[24] = type == kIcmpv6NeighborSolicitation ? kNdOptSourceLinkAddr : kNdOptTargetLinkAddr;
    out[25] = 1;  // in units of 8 bytes
    std::memcpy(out + 26, lla.b.data(), 6);
  }
}

Error ParseNdpFrame(ByteSpan frame, NdpFrame* out) {
  if (Error e = out->eth.Parse(frame); e != Error::kOk) return e;
  if (out->eth.ethertype != kEtherTypeIpv6) return Error::kBadEthertype;
  const ByteSpan l3 = frame.subspan(out->eth.Len());
  if (Error e = out->ip6.Parse(l3); e != Error::kOk) return e;
  if (out->ip6.next_header != kIpProtoIcmpv6) return Error::kNotNdp;
  const ByteSpan icmp = l3.subspan(Ipv6Header::kLen, out->ip6.payload_length);
  if (Error e = out->nd.Parse(icmp); e != Error::kOk) return e;
  if (out->ip6.hop_limit != kNdHopLimit) return Error::kBadNdpHopLimit;
  if (!VerifyIcmpv6Checksum(out->ip6.src, out->ip6.dst, icmp)) return Error::kBadIcmpv6Checksum;
  // The source is never multicast (RFC 4291 §2.7).
  if (IsIpv6Multicast(out->ip6.src)) return Error::kBadNdp;
  if (out->nd.IsNs()) {
    // §7.1.1: from the unspecified address (duplicate address detection) only
    // to a solicited-node address and without a source link-layer option.
    if (IsIpv6Unspecified(out->ip6.src) &&
        (!IsSolicitedNodeMulticast(out->ip6.dst) || out->nd.has_lla))
      return Error::kBadNdp;
  } else {
    // §7.1.2: a multicast advertisement is never solicited.
    if (IsIpv6Multicast(out->ip6.dst) && out->nd.Solicited()) return Error::kBadNdp;
  }
  return Error::kOk;
}

size_t BuildNdpFrame(const NdpFrame& f, MutByteSpan out) {
  const size_t len = f.Len();
  if (out.size() < len) return 0;
  uint8_t* p = out.data();
  f.eth.Emit(p);
  p += f.eth.Len();
  Ipv6Header ip6 = f.ip6;
  ip6.next_header = kIpProtoIcmpv6;
  ip6.payload_length = static_cast<uint16_t>(f.nd.Len());
  ip6.Emit(p);
  uint8_t* icmp = p + Ipv6Header::kLen;
  NdpMessage nd = f.nd;
  nd.checksum = 0;
  nd.Emit(icmp);
  Store16(icmp + 2, Icmpv6Checksum(ip6.src, ip6.dst, ByteSpan(icmp, nd.Len())));
  return len;
}

}  // namespace roce::wire
