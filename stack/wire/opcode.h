// SPDX-License-Identifier: MIT
// BTH opcodes and what each implies: transport, extension headers, payload,
// position in a message, request or response. IBTA vol 1 §9.2 / table 38.
#pragma once

#include <array>
#include <cstdint>

namespace roce::wire {

namespace op {
// RC
inline constexpr uint8_t kRcSendFirst = 0x00;
inline constexpr uint8_t kRcSendMiddle = 0x01;
inline constexpr uint8_t kRcSendLast = 0x02;
inline constexpr uint8_t kRcSendLastImm = 0x03;
inline constexpr uint8_t kRcSendOnly = 0x04;
inline constexpr uint8_t kRcSendOnlyImm = 0x05;
inline constexpr uint8_t kRcWriteFirst = 0x06;
inline constexpr uint8_t kRcWriteMiddle = 0x07;
inline constexpr uint8_t kRcWriteLast = 0x08;
inline constexpr uint8_t kRcWriteLastImm = 0x09;
inline constexpr uint8_t kRcWriteOnly = 0x0A;
inline constexpr uint8_t kRcWriteOnlyImm = 0x0B;
inline constexpr uint8_t kRcReadRequest = 0x0C;
inline constexpr uint8_t kRcReadResponseFirst = 0x0D;
inline constexpr uint8_t kRcReadResponseMiddle = 0x0E;
inline constexpr uint8_t kRcReadResponseLast = 0x0F;
inline constexpr uint8_t kRcReadResponseOnly = 0x10;
inline constexpr uint8_t kRcAck = 0x11;
inline constexpr uint8_t kRcAtomicAck = 0x12;
inline constexpr uint8_t kRcCompareSwap = 0x13;
inline constexpr uint8_t kRcFetchAdd = 0x14;
inline constexpr uint8_t kRcSendLastInv = 0x16;
inline constexpr uint8_t kRcSendOnlyInv = 0x17;
// UC (0x20 | RC send/write code)
inline constexpr uint8_t kUcBase = 0x20;
// UD
inline constexpr uint8_t kUdSendOnly = 0x64;
inline constexpr uint8_t kUdSendOnlyImm = 0x65;
// RoCEv2 congestion notification packet
inline constexpr uint8_t kCnp = 0x81;
}  // namespace op

enum class Transport : uint8_t { kInvalid, kRc, kUc, kUd, kCnp };

// Position of a packet inside a multi-packet message.
enum class Position : uint8_t { kNone, kFirst, kMiddle, kLast, kOnly };

// Extension-header bits. The order of the enumerators is the order on the wire.
enum HeaderBit : uint16_t {
  kHdrDeth = 1u << 0,
  kHdrReth = 1u << 1,
  kHdrAtomicEth = 1u << 2,
  kHdrAeth = 1u << 3,
  kHdrAtomicAckEth = 1u << 4,
  kHdrImmDt = 1u << 5,
  kHdrIeth = 1u << 6,
  kHdrCnpPad = 1u << 7,  // the 16 reserved bytes of a CNP
};

inline constexpr unsigned kBthLen = 12;
inline constexpr unsigned kRethLen = 16;
inline constexpr unsigned kAethLen = 4;
inline constexpr unsigned kDethLen = 8;
inline constexpr unsigned kImmDtLen = 4;
inline constexpr unsigned kIethLen = 4;
inline constexpr unsigned kAtomicEthLen = 28;
inline constexpr unsigned kAtomicAckEthLen = 8;
inline constexpr unsigned kCnpPadLen = 16;
inline constexpr unsigned kIcrcLen = 4;

enum class OpKind : uint8_t { kInvalid, kSend, kWrite, kReadRequest, kReadResponse, kAck,
                              kAtomic, kAtomicAck, kCnp };

struct OpcodeInfo {
  const char* name = nullptr;  // nullptr: not a valid opcode
  Transport transport = Transport::kInvalid;
  OpKind kind = OpKind::kInvalid;
  Position position = Position::kNone;
  uint16_t headers = 0;       // HeaderBit mask
  uint8_t ext_len = 0;        // total extension-header bytes after the BTH
  bool payload = false;       // may carry payload
  bool request = false;       // true: requester->responder; false: response
};

// Indexed by opcode; unknown opcodes have name == nullptr.
extern const std::array<OpcodeInfo, 256> kOpcodeTable;
inline const OpcodeInfo& GetOpcodeInfo(uint8_t opcode) { return kOpcodeTable[opcode]; }
inline bool IsValidOpcode(uint8_t opcode) { return GetOpcodeInfo(opcode).name != nullptr; }
inline const char* OpcodeName(uint8_t opcode) {
  const char* n = GetOpcodeInfo(opcode).name;
  return n ? n : "UNKNOWN";
}

}  // namespace roce::wire
