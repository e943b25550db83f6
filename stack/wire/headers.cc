// SPDX-License-Identifier: MIT
#include "stack/wire/headers.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>

namespace roce::wire {

const char* ErrorName(Error e) {
  switch (e) {
    case Error::kOk: return "ok";
    case Error::kTruncated: return "truncated";
    case Error::kBadEthertype: return "bad-ethertype";
    case Error::kBadIpVersion: return "bad-ip-version";
    case Error::kBadIpHeaderLength: return "bad-ip-header-length";
    case Error::kBadIpTotalLength: return "bad-ip-total-length";
    case Error::kBadIpChecksum: return "bad-ip-checksum";
    case Error::kIpFragment: return "ip-fragment";
    case Error::kNotUdp: return "not-udp";
    case Error::kBadUdpLength: return "bad-udp-length";
    case Error::kNotRoce: return "not-roce";
    case Error::kBadTransportVersion: return "bad-transport-version";
    case Error::kUnknownOpcode: return "unknown-opcode";
    case Error::kHeaderMismatch: return "header-mismatch";
    case Error::kBadPadCount: return "bad-pad-count";
    case Error::kIcrcMismatch: return "icrc-mismatch";
    case Error::kBadArp: return "bad-arp";
    case Error::kBadMad: return "bad-mad";
    case Error::kNotNdp: return "not-ndp";
    case Error::kBadNdp: return "bad-ndp";
    case Error::kBadNdpHopLimit: return "bad-ndp-hop-limit";
    case Error::kBadIcmpv6Checksum: return "bad-icmpv6-checksum";
    case Error::kNotGsi: return "not-gsi";
    case Error::kNotCm: return "not-cm";
    case Error::kUnknownCmAttribute: return "unknown-cm-attribute";
    case Error::kBadCmMessage: return "bad-cm-message";
    case Error::kCount: break;
  }
  return "unknown-error";
}

// ---- addresses --------------------------------------------------------------

std::string MacAddr::ToString() const {
  char s[18];
  std::snprintf(s, sizeof s, "%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4], b[5]);
  return s;
}

bool MacAddr::FromString(const std::string& s, MacAddr* out) {
  unsigned v[6];
  char tail;
  if (std::sscanf(s.c_str(), "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                  &tail) != 6)
    return false;
  for (int i = 0; i < 6; i++) {
    if (v[i] > 0xff) return false;
    out->b[i] = static_cast<uint8_t>(v[i]);
  }
  return true;
}

bool IpAddr::IsV4() const {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(b.data(), kPrefix, 12) == 0;
}

IpAddr IpAddr::FromV4(uint32_t host_order) {
  IpAddr a;
  a.b[10] = a.b[11] = 0xff;
  Store32(&a.b[12], host_order);
  return a;
}

IpAddr IpAddr::FromV6(const uint8_t* p) {
  IpAddr a;
  std::memcpy(a.b.data(), p, 16);
  return a;
}

std::string IpAddr::ToString() const {
  char s[INET6_ADDRSTRLEN];
  if (IsV4()) return inet_ntop(AF_INET, &b[12], s, sizeof s);
  return inet_ntop(AF_INET6, b.data(), s, sizeof s);
}

bool IpAddr::FromString(const std::string& s, IpAddr* out) {
  uint8_t buf[16];
  if (inet_pton(AF_INET, s.c_str(), buf) == 1) {
    *out = FromV4(Load32(buf));
    return true;
  }
  if (inet_pton(AF_INET6, s.c_str(), buf) == 1) {
    *out = FromV6(buf);
    return true;
  }
  return false;
}

// ---- Ethernet ------------------------------------------------------------------

Error EthernetHeader::Parse(ByteSpan in) {
  if (in.size() < kLen) return Error::kTruncated;
  std::memcpy(dst.b.data(), in.data(), 6);
  std::memcpy(src.b.data(), in.data() + 6, 6);
  uint16_t et = Load16(in.data() + 12);
  has_vlan = false;
  if (et == kEtherTypeVlan) {
    if (in.size() < kLen + kVlanLen) return Error::kTruncated;
    has_vlan = true;
    vlan_tci = Load16(in.data() + 14);
    et = Load16(in.data() + 16);
  }
  ethertype = et;
  return Error::kOk;
}

void EthernetHeader::Emit(uint8_t* out) const {
  std::memcpy(out, dst.b.data(), 6);
  std::memcpy(out + 6, src.b.data(), 6);
  if (has_vlan) {
    Store16(out + 12, kEtherTypeVlan);
    Store16(out + 14, vlan_tci);
    Store16(out + 16, ethertype);
  } else {
    Store16(out + 12, ethertype);
  }
}

// ---- ARP ---------------------------------------------------------------------------

Error ArpPacket::Parse(ByteSpan in) {
  if (in.size() < kLen) return Error::kTruncated;
  const uint8_t* p = in.data();
  htype = Load16(p);
  ptype = Load16(p + 2);
  hlen = p[4];
  plen = p[5];
  oper = Load16(p + 6);
  std::memcpy(sha.b.data(), p + 8, 6);
  spa = Load32(p + 14);
  std::memcpy(tha.b.data(), p + 18, 6);
  tpa = Load32(p + 24);
  if (htype != 1 || ptype != kEtherTypeIpv4 || hlen != 6 || plen != 4 ||
      (oper != kRequest && oper != kReply))
    return Error::kBadArp;
  return Error::kOk;
}

void ArpPacket::Emit(uint8_t* out) const {
  Store16(out, htype);
  Store16(out + 2, ptype);
  out[4] = hlen;
  out[5] = plen;
  Store16(out + 6, oper);
  std::memcpy(out + 8, sha.b.data(), 6);
  Store32(out + 14, spa);
  std::memcpy(out + 18, tha.b.data(), 6);
  Store32(out + 24, tpa);
}

// ---- IPv4 -----------------------------------------------------------------------

Error Ipv4Header::Parse(ByteSpan in) {
  if (in.size() < kLen) return Error::kTruncated;
  const uint8_t* p = in.data();
  if ((p[0] >> 4) != 4) return Error::kBadIpVersion;
  ihl = p[0] & 0x0F;
  if (ihl < 5) return Error::kBadIpHeaderLength;
  if (in.size() < Len()) return Error::kTruncated;
  tos = p[1];
  total_length = Load16(p + 2);
  id = Load16(p + 4);
  flags_frag = Load16(p + 6);
  ttl = p[8];
  protocol = p[9];
  checksum = Load16(p + 10);
  src = Load32(p + 12);
  dst = Load32(p + 16);
  options = {};
  std::memcpy(options.data(), p + kLen, Len() - kLen);
  if (total_length < Len()) return Error::kBadIpTotalLength;
  if (in.size() < total_length) return Error::kTruncated;
  if (flags_frag & (kFlagMf | 0x1FFF)) return Error::kIpFragment;
  return Error::kOk;
}

void Ipv4Header::Emit(uint8_t* out) const {
  out[0] = static_cast<uint8_t>(0x40 | (ihl & 0x0F));
  out[1] = tos;
  Store16(out + 2, total_length);
  Store16(out + 4, id);
  Store16(out + 6, flags_frag);
  out[8] = ttl;
  out[9] = protocol;
  Store16(out + 10, checksum);
  Store32(out + 12, src);
  Store32(out + 16, dst);
  std::memcpy(out + kLen, options.data(), Len() - kLen);
}

namespace {
inline uint16_t Swap16(uint16_t v) { return static_cast<uint16_t>((v >> 8) | (v << 8)); }
}  // namespace

uint16_t Ipv4Header::ComputeChecksum(const uint8_t* hdr, size_t len) {
  // The checksum field counts as zero: adding its one's complement takes it
  // back out (x + ~x is 0xFFFF, which is zero in one's-complement arithmetic).
  uint16_t field;
  std::memcpy(&field, hdr + 10, 2);
  uint32_t s = uint32_t{detail::FoldedNativeSum(hdr, len)} + static_cast<uint16_t>(~field);
  s = (s & 0xFFFF) + (s >> 16);
  return Swap16(static_cast<uint16_t>(~s));
}

// ---- IPv6 -----------------------------------------------------------------------

Error Ipv6Header::Parse(ByteSpan in) {
  if (in.size() < kLen) return Error::kTruncated;
  const uint8_t* p = in.data();
  uint32_t w = Load32(p);
  if ((w >> 28) != 6) return Error::kBadIpVersion;
  traffic_class = static_cast<uint8_t>(w >> 20);
  flow_label = w & 0xFFFFF;
  payload_length = Load16(p + 4);
  next_header = p[6];
  hop_limit = p[7];
  std::memcpy(src.data(), p + 8, 16);
  std::memcpy(dst.data(), p + 24, 16);
  if (in.size() < kLen + payload_length) return Error::kTruncated;
  return Error::kOk;
}

void Ipv6Header::Emit(uint8_t* out) const {
  Store32(out, (6u << 28) | (uint32_t{traffic_class} << 20) | (flow_label & 0xFFFFF));
  Store16(out + 4, payload_length);
  out[6] = next_header;
  out[7] = hop_limit;
  std::memcpy(out + 8, src.data(), 16);
  std::memcpy(out + 24, dst.data(), 16);
}

// ---- UDP ------------------------------------------------------------------------

Error UdpHeader::Parse(ByteSpan in) {
  if (in.size() < kLen) return Error::kTruncated;
  src_port = Load16(in.data());
  dst_port = Load16(in.data() + 2);
  length = Load16(in.data() + 4);
  checksum = Load16(in.data() + 6);
  return Error::kOk;
}

void UdpHeader::Emit(uint8_t* out) const {
  Store16(out, src_port);
  Store16(out + 2, dst_port);
  Store16(out + 4, length);
  Store16(out + 6, checksum);
}

// ---- InfiniBand transport headers ---------------------------------------------------

void Reth::Emit(uint8_t* out) const {
  Store64(out, va);
  Store32(out + 8, rkey);
  Store32(out + 12, dma_length);
}

void Aeth::Emit(uint8_t* out) const {
  out[0] = syndrome;
  Store24(out + 1, msn);
}

void Deth::Parse(const uint8_t* in) {
  qkey = Load32(in);
  resv = in[4];
  src_qp = Load24(in + 5);
}

void Deth::Emit(uint8_t* out) const {
  Store32(out, qkey);
  out[4] = resv;
  Store24(out + 5, src_qp);
}

void AtomicEth::Parse(const uint8_t* in) {
  va = Load64(in);
  rkey = Load32(in + 8);
  swap_add = Load64(in + 12);
  compare = Load64(in + 20);
}

void AtomicEth::Emit(uint8_t* out) const {
  Store64(out, va);
  Store32(out + 8, rkey);
  Store64(out + 12, swap_add);
  Store64(out + 20, compare);
}

// ---- MAD --------------------------------------------------------------------------

Error MadHeader::Parse(ByteSpan in) {
  if (in.size() < kLen) return Error::kBadMad;
  const uint8_t* p = in.data();
  base_version = p[0];
  mgmt_class = p[1];
  class_version = p[2];
  method = p[3];
  status = Load16(p + 4);
  class_specific = Load16(p + 6);
  tid = Load64(p + 8);
  attr_id = Load16(p + 16);
  resv = Load16(p + 18);
  attr_mod = Load32(p + 20);
  if (base_version != 1) return Error::kBadMad;
  return Error::kOk;
}

void MadHeader::Emit(uint8_t* out) const {
  out[0] = base_version;
  out[1] = mgmt_class;
  out[2] = class_version;
  out[3] = method;
  Store16(out + 4, status);
  Store16(out + 6, class_specific);
  Store64(out + 8, tid);
  Store16(out + 16, attr_id);
  Store16(out + 18, resv);
  Store32(out + 20, attr_mod);
}

}  // namespace roce::wire
