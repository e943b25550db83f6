// SPDX-License-Identifier: MIT
// The frame writer: the one place a RoCEv2 frame the stack sends is laid out.
// Both the simulated link (rc/tx.cc's SerializeFrame) and the DPDK datapath
// (engine/engine.cc) write frames through it.
//
// A FrameTemplate holds the Ethernet / IP / UDP bytes of one path, built once
// per queue pair (at RTR) from its NetHeaders; per packet WriteHeaders copies
// them, patches the lengths (IPv4 total length and its header checksum —
// incrementally, from a sum taken at build time — or the IPv6 payload length;
// the UDP length) and writes the BTH and the opcode's extension headers.
// WriteFrame then places the payload pieces, the pad and the ICRC (and the
// IPv6 UDP checksum) for a frame in one buffer; a datapath whose payload lies
// elsewhere (mbufs attached to registered memory) calls WriteHeaders and
// finishes with IcrcOf / Udp6ChecksumOf over the pieces where they lie.
//
// Pure C++: no DPDK, no clock.
#pragma once

#include <cstdint>
#include <cstring>

#include "stack/wire/bytes.h"
#include "stack/wire/headers.h"
#include "stack/wire/icrc.h"
#include "stack/wire/opcode.h"
#include "stack/wire/packet.h"

namespace roce::wire {

// A piece of payload where it lies (registered memory, an inline buffer).
// Trivial on purpose: arrays of these are not zeroed when declared.
struct Gather {
  const uint8_t* p;
  uint32_t len;
};

class FrameTemplate {
 public:
  // Ethernet with 802.1Q + IPv4 with options + UDP.
  static constexpr size_t kMaxNetLen = EthernetHeader::kLen + EthernetHeader::kVlanLen + 60 + UdpHeader::kLen;

  FrameTemplate() = default;
  explicit FrameTemplate(const NetHeaders& net) { Build(net); }
  // Takes every field of `net` as it is (addresses, TOS/traffic class, TTL/hop
  // limit, flow label, IPv4 ID, flags and options, UDP ports and the UDP
  // checksum field over IPv4); lengths and the IPv4 checksum are per packet.
  void Build(const NetHeaders& net);

  bool built() const { return net_len_ != 0; }
  bool ipv6() const { return ipv6_; }
  size_t net_len() const { return net_len_; }  // Ethernet + IP + UDP
  size_t l3() const { return l3_; }            // offset of the IP header
  size_t l4() const { return l4_; }            // offset of the UDP header
  const uint8_t* bytes() const { return b_; }
  const uint8_t* dst_mac() const { return b_; }

  size_t HeadersLen(uint8_t opcode) const { return net_len_ + Bth::kLen + GetOpcodeInfo(opcode).ext_len; }
  size_t FrameLen(uint8_t opcode, uint32_t payload_len) const {
    return HeadersLen(opcode) + payload_len + PadFor(payload_len) + kIcrcLen;
  }

  // Writes Ethernet .. extension headers of a packet carrying `payload_len`
  // bytes into out (HeadersLen(bth.opcode) bytes); bth.pad_count is derived
  // from payload_len. Returns the headers' length.
  size_t WriteHeaders(const Bth& bth, const ExtHeaders& ext, uint32_t payload_len, uint8_t* out) const;

  // IPv6: the UDP checksum of a frame whose headers (WriteHeaders, `hdr`) and
  // payload pieces are given, followed by `tail` (pad + ICRC).
  uint16_t Udp6ChecksumOf(const uint8_t* hdr, size_t hlen, const Gather* pieces, uint32_t n,
                          ByteSpan tail) const;

 private:
  alignas(8) uint8_t b_[kMaxNetLen] = {};
  uint8_t net_len_ = 0, l3_ = 0, l4_ = 0, ip_hlen_ = 0;
  bool ipv6_ = false;
  uint32_t ip4_sum_ = 0;  // IPv4 header words with total length and checksum 0, unfolded
};

struct WriteOptions {
  // IPv6: compute the UDP checksum in software (off when the port offloads it).
  bool udp6_checksum = true;
};

// Writes a whole frame into out (t.FrameLen(bth.opcode, payload_len) bytes):
// headers, the payload pieces (payload_len bytes in all), zero pad, ICRC, and
// over IPv6 the UDP checksum. Returns the frame length.
size_t WriteFrame(const FrameTemplate& t, const Bth& bth, const ExtHeaders& ext, const Gather* pieces,
                  uint32_t n, uint32_t payload_len, uint8_t* out, const WriteOptions& opts = {});

// The ICRC of a frame whose headers (WriteHeaders) are at hdr[0, hlen) and
// whose payload is `pieces`, followed by `pad` zero bytes.
uint32_t IcrcOf(const FrameTemplate& t, const uint8_t* hdr, size_t hlen, const Gather* pieces,
                uint32_t n, uint8_t pad);

}  // namespace roce::wire
