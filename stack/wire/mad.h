// SPDX-License-Identifier: MIT
// Management datagrams on RoCEv2: the constants of the MAD common header
// (IBTA vol 1 §13.4; the header itself is MadHeader in headers.h) and the
// frame that carries a MAD to or from the General Services Interface: a UD
// SEND_ONLY to QP 1 with a DETH (Q_Key 0x80010000, source QP 1) and exactly
// one 256-byte MAD as payload, which is how Linux rdma_cm (and rxe) send CM
// messages over RoCEv2. CM message bodies are in cm_msg.h.
#pragma once

#include <array>
#include <cstdint>

#include "stack/wire/bytes.h"
#include "stack/wire/error.h"
#include "stack/wire/headers.h"
#include "stack/wire/packet.h"

namespace roce::wire {

namespace mad {
inline constexpr size_t kLen = MadHeader::kMadLen;             // 256
inline constexpr size_t kHeaderLen = MadHeader::kLen;          // 24
inline constexpr size_t kDataLen = kLen - kHeaderLen;          // 232
inline constexpr uint8_t kBaseVersion = 1;
// Management classes (IBTA table 117).
inline constexpr uint8_t kClassSubnLid = 0x01;
inline constexpr uint8_t kClassSubnAdm = 0x03;
inline constexpr uint8_t kClassPerf = 0x04;
inline constexpr uint8_t kClassBm = 0x05;
inline constexpr uint8_t kClassDevMgt = 0x06;
inline constexpr uint8_t kClassCm = 0x07;
inline constexpr uint8_t kClassSnmp = 0x08;
inline constexpr uint8_t kClassSubnDirected = 0x81;
inline constexpr uint8_t kCmClassVersion = 2;
// Methods (IBTA table 118); the response bit is part of the method byte.
inline constexpr uint8_t kMethodGet = 0x01;
inline constexpr uint8_t kMethodSet = 0x02;
inline constexpr uint8_t kMethodSend = 0x03;  // every CM message
inline constexpr uint8_t kMethodTrap = 0x05;
inline constexpr uint8_t kMethodReport = 0x06;
inline constexpr uint8_t kMethodTrapRepress = 0x07;
inline constexpr uint8_t kMethodResponse = 0x80;
inline constexpr uint8_t kMethodGetResp = kMethodGet | kMethodResponse;
}  // namespace mad

// The General Services Interface: QP 1 and its well-known Q_Key (IBTA §13.5.1).
inline constexpr uint32_t kGsiQpn = 1;
inline constexpr uint32_t kGsiQkey = 0x80010000;
inline constexpr uint16_t kDefaultPkey = 0xFFFF;

// The UDP source port rxe gives a QP when nothing sets one (no flow label):
// 0xC000 + hash_32(qpn, 14) with the kernel's golden-ratio hash. For QP 1 it
// is 0xD872, the source port of every CM MAD in the rxe captures (both hosts,
// requests and replies alike).
constexpr uint16_t RxeQpUdpSrcPort(uint32_t qpn) {
  return static_cast<uint16_t>(0xC000u + ((qpn * 0x61C88647u) >> (32 - 14)));
}
inline constexpr uint16_t kQp1UdpSrcPort = RxeQpUdpSrcPort(kGsiQpn);
static_assert(kQp1UdpSrcPort == 0xD872);

// A RoCEv2 frame carrying one MAD to the GSI. NetHeaders is the path
// (Ethernet [802.1Q] / IPv4|IPv6 / UDP); the MAD is copied (256 bytes).
struct MadDatagram : NetHeaders {
  Bth bth;    // opcode UD SEND_ONLY, dest QP 1; PSN = the sender's QP1 send counter
  Deth deth;  // Q_Key 0x80010000, source QP 1
  std::array<uint8_t, mad::kLen> mad{};
  uint32_t icrc = 0;  // as received, or written verbatim when BuildOptions::fill_icrc is off
};

// A GSI datagram along `path` (its Ethernet/IP fields; lengths, checksums and
// the ICRC are filled by BuildMadDatagram): UDP source port kQp1UdpSrcPort
// and destination 4791; BTH opcode 0x64, P_Key 0xFFFF, dest QP 1, AckReq set
// (rxe sets it on every MAD; nobody acknowledges UD) and `psn`; DETH Q_Key
// 0x80010000, source QP 1; and `mad` (e.g. SerializeCmMad's).
MadDatagram MakeMadDatagram(const NetHeaders& path, uint32_t psn,
                            const std::array<uint8_t, mad::kLen>& mad);

// Parses a whole frame (ParseRoceFrame with `opts`, so the ICRC is checked
// unless told otherwise) and checks that it is a MAD for the GSI: opcode UD
// SEND_ONLY, dest QP 1 and Q_Key 0x80010000 (rxe drops anything else sent
// to QP 1), else kNotGsi; a payload of exactly 256 bytes, else kBadMad; and
// a MAD base version of 1, else kBadMad. Ethernet padding after the IP
// datagram is tolerated (and not kept). The MAD's class is not checked here.
Error ParseMadDatagram(ByteSpan frame, MadDatagram* out, const ParseOptions& opts = {});

// Frame length of a datagram (Ethernet + IP + UDP + BTH + DETH + 256 + ICRC):
// 322 bytes over IPv4 without VLAN.
size_t MadDatagramLen(const NetHeaders& net);

// Emits the whole frame (BuildRoceFrame rules for `opts`; the trailer option
// does not apply). Returns the frame length, or 0 if `out` is too small.
size_t BuildMadDatagram(const MadDatagram& d, MutByteSpan out, const BuildOptions& opts = {});

}  // namespace roce::wire
