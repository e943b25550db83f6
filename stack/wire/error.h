// SPDX-License-Identifier: MIT
// Why a frame was rejected. Every parser in wire/ returns one of these;
// kOk means accepted. Names are stable: tools and counters print them.
#pragma once

#include <cstdint>

namespace roce::wire {

enum class Error : uint8_t {
  kOk = 0,
  kTruncated,            // the buffer ends before a header or a length field says
  kBadEthertype,         // not IPv4 / IPv6 / ARP after optional 802.1Q tags
  kBadIpVersion,         // version nibble does not match the ethertype
  kBadIpHeaderLength,    // IPv4 IHL < 5
  kBadIpTotalLength,     // IPv4 total length < header length
  kBadIpChecksum,        // IPv4 header checksum wrong (when checked)
  kIpFragment,           // MF set or fragment offset != 0: RoCE is never fragmented
  kNotUdp,               // IP protocol / next header is not UDP
  kBadUdpLength,         // UDP length disagrees with the IP payload length
  kNotRoce,              // UDP destination port is not 4791
  kBadTransportVersion,  // BTH TVer != 0
  kUnknownOpcode,        // opcode not in the RC / UC / UD / CNP table
  kHeaderMismatch,       // packet too short for the extension headers its opcode implies,
                         // or payload present where the opcode allows none
  kBadPadCount,          // PadCnt larger than the payload, or payload+pad not 4-byte aligned
  kIcrcMismatch,         // invariant CRC does not match
  kBadArp,               // ARP that is not Ethernet/IPv4 request or reply
  kBadMad,               // MAD shorter than 24 bytes or wrong base version
  kNotNdp,               // IPv6 frame that is not ICMPv6 Neighbor Solicitation/Advertisement
  kBadNdp,               // NS/NA failing RFC 4861 §7.1 (code, length, target, options, flags)
  kBadNdpHopLimit,       // NS/NA whose IPv6 hop limit is not 255 (may come from off-link)
  kBadIcmpv6Checksum,    // ICMPv6 checksum over the IPv6 pseudo-header wrong
  kNotGsi,               // not a UD SEND_ONLY to QP 1 with the GSI Q_Key (0x80010000)
  kNotCm,                // MAD is not Communication Management (class 0x07, class version 2)
  kUnknownCmAttribute,   // CM attribute ID this stack does not parse (LAP, APR, ClassPortInfo...)
  kBadCmMessage,         // CM message with a length field out of range, or a bad rdma_cm header
  kCount,
};

const char* ErrorName(Error e);

}  // namespace roce::wire
