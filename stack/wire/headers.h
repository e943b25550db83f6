// SPDX-License-Identifier: MIT
// Header representations for every layer of a RoCEv2 frame: a plain struct per
// header with Parse (from bytes, bounds-checked) and Emit (to bytes). Parse
// never reads past the span it is given; Emit writes exactly kLen (or Len())
// bytes. Fields are host order; reserved bits are kept so that parse+emit
// reproduces the input byte for byte.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "stack/wire/bytes.h"
#include "stack/wire/error.h"

namespace roce::wire {

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeArp = 0x0806;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
inline constexpr uint8_t kIpProtoUdp = 17;
inline constexpr uint8_t kIpProtoIcmpv6 = 58;
inline constexpr uint16_t kRoceV2Port = 4791;

struct MacAddr {
  std::array<uint8_t, 6> b{};
  bool operator==(const MacAddr&) const = default;
  bool IsBroadcast() const { return b == std::array<uint8_t, 6>{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}; }
  bool IsMulticast() const { return b[0] & 1; }
  std::string ToString() const;
  static bool FromString(const std::string& s, MacAddr* out);
};

// An IP address as a 16-byte GID: IPv4 is stored IPv4-mapped (::ffff:a.b.c.d),
// exactly as RoCEv2 GIDs carry it.
struct IpAddr {
  std::array<uint8_t, 16> b{};
  bool operator==(const IpAddr&) const = default;
  bool IsV4() const;
  uint32_t V4() const { return Load32(&b[12]); }  // host order
  static IpAddr FromV4(uint32_t host_order);
  static IpAddr FromV6(const uint8_t* p);
  std::string ToString() const;
  static bool FromString(const std::string& s, IpAddr* out);
};

struct EthernetHeader {
  static constexpr size_t kLen = 14;
  static constexpr size_t kVlanLen = 4;
  MacAddr dst, src;
  bool has_vlan = false;
  uint16_t vlan_tci = 0;    // PCP(3) DEI(1) VID(12), valid when has_vlan
  uint16_t ethertype = 0;   // inner ethertype
  size_t Len() const { return kLen + (has_vlan ? kVlanLen : 0); }
  Error Parse(ByteSpan in);
  void Emit(uint8_t* out) const;
};

struct ArpPacket {
  static constexpr size_t kLen = 28;
  static constexpr uint16_t kRequest = 1;
  static constexpr uint16_t kReply = 2;
  uint16_t htype = 1, ptype = kEtherTypeIpv4;
  uint8_t hlen = 6, plen = 4;
  uint16_t oper = kRequest;
  MacAddr sha, tha;
  uint32_t spa = 0, tpa = 0;  // host order
  Error Parse(ByteSpan in);
  void Emit(uint8_t* out) const;
};

struct Ipv4Header {
  static constexpr size_t kLen = 20;
  static constexpr uint16_t kFlagDf = 0x4000;
  static constexpr uint16_t kFlagMf = 0x2000;
  uint8_t ihl = 5;            // 32-bit words
  uint8_t tos = 0;            // DSCP(6) ECN(2)
  uint16_t total_length = 0;
  uint16_t id = 0;
  uint16_t flags_frag = kFlagDf;
  uint8_t ttl = 64;
  uint8_t protocol = kIpProtoUdp;
  uint16_t checksum = 0;
  uint32_t src = 0, dst = 0;  // host order
  std::array<uint8_t, 40> options{};
  size_t Len() const { return ihl * 4u; }
  uint8_t Ecn() const { return tos & 3; }
  // Structural checks only (version, IHL, total length, fragments). The
  // header checksum is checked by VerifyChecksum so that callers whose NIC
  // already verified it can skip it.
  Error Parse(ByteSpan in);
  void Emit(uint8_t* out) const;  // writes `checksum` as is
  static uint16_t ComputeChecksum(const uint8_t* hdr, size_t len);  // over bytes, csum field zeroed
  static bool VerifyChecksum(const uint8_t* hdr, size_t len);
};

struct Ipv6Header {
  static constexpr size_t kLen = 40;
  uint8_t traffic_class = 0;  // DSCP(6) ECN(2)
  uint32_t flow_label = 0;    // 20 bits
  uint16_t payload_length = 0;
  uint8_t next_header = kIpProtoUdp;
  uint8_t hop_limit = 64;
  std::array<uint8_t, 16> src{}, dst{};
  uint8_t Ecn() const { return traffic_class & 3; }
  Error Parse(ByteSpan in);
  void Emit(uint8_t* out) const;
};

struct UdpHeader {
  static constexpr size_t kLen = 8;
  uint16_t src_port = 0, dst_port = kRoceV2Port, length = 0, checksum = 0;
  Error Parse(ByteSpan in);
  void Emit(uint8_t* out) const;
};

// Base Transport Header, 12 bytes.
struct Bth {
  static constexpr size_t kLen = 12;
  uint8_t opcode = 0;
  bool se = false;         // solicited event
  bool mig_req = false;
  uint8_t pad_count = 0;   // 2 bits
  uint8_t tver = 0;        // 4 bits
  uint16_t pkey = 0xFFFF;
  bool fecn = false, becn = false;
  uint8_t resv6 = 0;       // 6 reserved bits after FECN/BECN
  uint32_t dest_qp = 0;    // 24 bits
  bool ack_req = false;
  uint8_t resv7 = 0;       // 7 reserved bits
  uint32_t psn = 0;        // 24 bits
  Error Parse(ByteSpan in);
  void Emit(uint8_t* out) const { Emit(out, pad_count); }
  // As Emit, with `pad` as the pad count (a frame writer's, from the payload
  // length) instead of pad_count.
  void Emit(uint8_t* out, uint8_t pad) const;
};

// Inline: one per packet sent, where a call and a copy of the struct cost as
// much as the three stores.
inline void Bth::Emit(uint8_t* out, uint8_t pad) const {
  // Three big-endian words (each a byte of flags over 24 bits of value):
  // three stores instead of twelve.
  const uint32_t f1 = (se ? 0x80u : 0u) | (mig_req ? 0x40u : 0u) | ((pad & 3u) << 4) | (tver & 0x0Fu);
  const uint32_t f4 = (fecn ? 0x80u : 0u) | (becn ? 0x40u : 0u) | (resv6 & 0x3Fu);
  const uint32_t f8 = (ack_req ? 0x80u : 0u) | (resv7 & 0x7Fu);
  Store32(out, (uint32_t{opcode} << 24) | (f1 << 16) | pkey);
  Store32(out + 4, (f4 << 24) | (dest_qp & 0xFFFFFFu));
  Store32(out + 8, (f8 << 24) | (psn & 0xFFFFFFu));
}

// RDMA extended transport header.
struct Reth {
  static constexpr size_t kLen = 16;
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t dma_length = 0;
  void Parse(const uint8_t* in);
  void Emit(uint8_t* out) const;
};

// ACK extended transport header.
struct Aeth {
  static constexpr size_t kLen = 4;
  uint8_t syndrome = 0;
  uint32_t msn = 0;  // 24 bits
  void Parse(const uint8_t* in);
  void Emit(uint8_t* out) const;
};

// AETH syndrome encoding (IBTA table 43).
namespace syndrome {
inline constexpr uint8_t kTypeMask = 0x60;
inline constexpr uint8_t kTypeAck = 0x00;
inline constexpr uint8_t kTypeRnr = 0x20;
inline constexpr uint8_t kTypeReserved = 0x40;
inline constexpr uint8_t kTypeNak = 0x60;
inline constexpr uint8_t kNakPsnSeqError = 0;
inline constexpr uint8_t kNakInvalidRequest = 1;
inline constexpr uint8_t kNakRemoteAccess = 2;
inline constexpr uint8_t kNakRemoteOperational = 3;
inline constexpr uint8_t kNakInvalidRdRequest = 4;
inline constexpr uint8_t kCreditInvalid = 0x1F;
inline constexpr uint8_t Ack(uint8_t credits = kCreditInvalid) { return kTypeAck | (credits & 0x1F); }
inline constexpr uint8_t Rnr(uint8_t timer_code) { return kTypeRnr | (timer_code & 0x1F); }
inline constexpr uint8_t Nak(uint8_t code) { return kTypeNak | (code & 0x1F); }
inline constexpr uint8_t Type(uint8_t s) { return s & kTypeMask; }
inline constexpr uint8_t Value(uint8_t s) { return s & 0x1F; }
}  // namespace syndrome

// Datagram extended transport header (UD).
struct Deth {
  static constexpr size_t kLen = 8;
  uint32_t qkey = 0;
  uint8_t resv = 0;
  uint32_t src_qp = 0;  // 24 bits
  void Parse(const uint8_t* in);
  void Emit(uint8_t* out) const;
};

struct AtomicEth {
  static constexpr size_t kLen = 28;
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint64_t swap_add = 0;
  uint64_t compare = 0;
  void Parse(const uint8_t* in);
  void Emit(uint8_t* out) const;
};

struct AtomicAckEth {
  static constexpr size_t kLen = 8;
  uint64_t orig = 0;
  void Parse(const uint8_t* in) { orig = Load64(in); }
  void Emit(uint8_t* out) const { Store64(out, orig); }
};

// Common MAD header (IBTA §13.4.2), 24 bytes.
struct MadHeader {
  static constexpr size_t kLen = 24;
  static constexpr size_t kMadLen = 256;
  uint8_t base_version = 1;
  uint8_t mgmt_class = 0;
  uint8_t class_version = 0;
  uint8_t method = 0;       // R bit included
  uint16_t status = 0;
  uint16_t class_specific = 0;
  uint64_t tid = 0;
  uint16_t attr_id = 0;
  uint16_t resv = 0;
  uint32_t attr_mod = 0;
  bool operator==(const MadHeader&) const = default;
  Error Parse(ByteSpan in);
  void Emit(uint8_t* out) const;
};

// The per-packet parsers, inline: the receive path calls them for every frame.
inline Error Bth::Parse(ByteSpan in) {
  if (in.size() < kLen) return Error::kTruncated;
  const uint8_t* p = in.data();
  opcode = p[0];
  se = p[1] & 0x80;
  mig_req = p[1] & 0x40;
  pad_count = (p[1] >> 4) & 3;
  tver = p[1] & 0x0F;
  pkey = Load16(p + 2);
  fecn = p[4] & 0x80;
  becn = p[4] & 0x40;
  resv6 = p[4] & 0x3F;
  dest_qp = Load24(p + 5);
  ack_req = p[8] & 0x80;
  resv7 = p[8] & 0x7F;
  psn = Load24(p + 9);
  return Error::kOk;
}

inline void Reth::Parse(const uint8_t* in) {
  va = Load64(in);
  rkey = Load32(in + 8);
  dma_length = Load32(in + 12);
}

inline void Aeth::Parse(const uint8_t* in) {
  syndrome = in[0];
  msn = Load24(in + 1);
}

namespace detail {
// One's-complement sum of the header's 16-bit words, folded to 16 bits, in
// host byte order: the sum does not care about byte order (RFC 1071 §2(B)),
// so the words are added as native 32-bit loads and swapped once at the end
// (an IPv4 header is a whole number of 32-bit words).
inline uint16_t FoldedNativeSum(const uint8_t* hdr, size_t len) {
  uint64_t sum = 0;
  // Unrolled: the receive path sums every IPv4 header (len 20, a constant there).
#pragma GCC unroll 15
  for (size_t i = 0; i + 4 <= len; i += 4) {
    uint32_t w;
    std::memcpy(&w, hdr + i, 4);
    sum += w;
  }
  sum = (sum & 0xFFFFFFFF) + (sum >> 32);
  sum = (sum & 0xFFFF) + (sum >> 16);
  sum = (sum & 0xFFFF) + (sum >> 16);
  sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}
}  // namespace detail

inline bool Ipv4Header::VerifyChecksum(const uint8_t* hdr, size_t len) {
  // Over the whole header, its checksum included, the sum is 0xFFFF.
  return detail::FoldedNativeSum(hdr, len) == 0xFFFF;
}

}  // namespace roce::wire
