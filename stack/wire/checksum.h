// SPDX-License-Identifier: MIT
// Internet one's-complement checksum (RFC 1071), accumulated over any number
// of spans (odd-length spans are handled), for the IPv6 UDP checksum: IPv6
// forbids a zero UDP checksum (RFC 8200 §8.1), so frames over IPv6 carry a real
// one. Receivers of RoCEv2 ignore it (it is masked out of the ICRC); the
// Linux kernel under rxe checks it when it is non-zero.
#pragma once

#include <cstdint>

#include "stack/wire/bytes.h"

namespace roce::wire {

class InetChecksum {
 public:
  void Add(ByteSpan s);
  // Adds a 16-bit word; only valid while an even number of bytes has been added.
  void Add16(uint16_t v) { sum_ += v; }
  // The checksum to store: ~sum, with 0 sent as 0xFFFF (UDP).
  uint16_t Finish() const;

 private:
  uint64_t sum_ = 0;
  bool odd_ = false;  // an odd number of bytes has been added so far
};

// Starts a UDP-over-IPv6 checksum: the pseudo-header (addresses, UDP length,
// next header) and the first 6 bytes of the UDP header (its checksum field
// counts as zero). Add the datagram after the UDP header, then Finish().
InetChecksum BeginUdp6Checksum(const uint8_t src[16], const uint8_t dst[16], uint32_t udp_len,
                               const uint8_t* udp_header);

// UDP-over-IPv6 checksum of `udp` (UDP header with any checksum value, then
// the datagram), returned ready to store.
uint16_t UdpChecksumV6(const uint8_t src[16], const uint8_t dst[16], ByteSpan udp_header,
                       ByteSpan rest);

}  // namespace roce::wire
