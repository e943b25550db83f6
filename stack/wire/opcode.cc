// SPDX-License-Identifier: MIT
// The opcode table, built once at compile time.
#include "stack/wire/opcode.h"

#include <array>

namespace roce::wire {
namespace {

constexpr uint8_t ExtLen(uint16_t h) {
  unsigned n = 0;
  if (h & kHdrDeth) n += kDethLen;
  if (h & kHdrReth) n += kRethLen;
  if (h & kHdrAtomicEth) n += kAtomicEthLen;
  if (h & kHdrAeth) n += kAethLen;
  if (h & kHdrAtomicAckEth) n += kAtomicAckEthLen;
  if (h & kHdrImmDt) n += kImmDtLen;
  if (h & kHdrIeth) n += kIethLen;
  if (h & kHdrCnpPad) n += kCnpPadLen;
  return static_cast<uint8_t>(n);
}

constexpr OpcodeInfo Op(const char* name, Transport t, OpKind k, Position p, uint16_t h,
                        bool payload, bool request) {
  return OpcodeInfo{name, t, k, p, h, ExtLen(h), payload, request};
}

using P = Position;
using K = OpKind;

constexpr std::array<OpcodeInfo, 256> BuildTable() {
  std::array<OpcodeInfo, 256> t{};
  // Send and Write opcodes are shared by RC (0x00) and UC (0x20).
  struct Base {
    uint8_t code;
    const char* rc;
    const char* uc;
    K kind;
    P pos;
    uint16_t h;
  };
  constexpr Base kSendWrite[] = {
      {0x00, "RC_SEND_FIRST", "UC_SEND_FIRST", K::kSend, P::kFirst, 0},
      {0x01, "RC_SEND_MIDDLE", "UC_SEND_MIDDLE", K::kSend, P::kMiddle, 0},
      {0x02, "RC_SEND_LAST", "UC_SEND_LAST", K::kSend, P::kLast, 0},
      {0x03, "RC_SEND_LAST_WITH_IMMEDIATE", "UC_SEND_LAST_WITH_IMMEDIATE", K::kSend, P::kLast,
       kHdrImmDt},
      {0x04, "RC_SEND_ONLY", "UC_SEND_ONLY", K::kSend, P::kOnly, 0},
      {0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", "UC_SEND_ONLY_WITH_IMMEDIATE", K::kSend, P::kOnly,
       kHdrImmDt},
      {0x06, "RC_RDMA_WRITE_FIRST", "UC_RDMA_WRITE_FIRST", K::kWrite, P::kFirst, kHdrReth},
      {0x07, "RC_RDMA_WRITE_MIDDLE", "UC_RDMA_WRITE_MIDDLE", K::kWrite, P::kMiddle, 0},
      {0x08, "RC_RDMA_WRITE_LAST", "UC_RDMA_WRITE_LAST", K::kWrite, P::kLast, 0},
      {0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", K::kWrite,
       P::kLast, kHdrImmDt},
      {0x0A, "RC_RDMA_WRITE_ONLY", "UC_RDMA_WRITE_ONLY", K::kWrite, P::kOnly, kHdrReth},
      {0x0B, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", K::kWrite,
       P::kOnly, kHdrReth | kHdrImmDt},
  };
  for (const Base& b : kSendWrite) {
    t[b.code] = Op(b.rc, Transport::kRc, b.kind, b.pos, b.h, true, true);
    t[op::kUcBase | b.code] = Op(b.uc, Transport::kUc, b.kind, b.pos, b.h, true, true);
  }
  t[op::kRcReadRequest] =
      Op("RC_RDMA_READ_REQUEST", Transport::kRc, K::kReadRequest, P::kOnly, kHdrReth, false, true);
  t[op::kRcReadResponseFirst] = Op("RC_RDMA_READ_RESPONSE_FIRST", Transport::kRc,
                                   K::kReadResponse, P::kFirst, kHdrAeth, true, false);
  t[op::kRcReadResponseMiddle] = Op("RC_RDMA_READ_RESPONSE_MIDDLE", Transport::kRc,
                                    K::kReadResponse, P::kMiddle, 0, true, false);
  t[op::kRcReadResponseLast] = Op("RC_RDMA_READ_RESPONSE_LAST", Transport::kRc, K::kReadResponse,
                                  P::kLast, kHdrAeth, true, false);
  t[op::kRcReadResponseOnly] = Op("RC_RDMA_READ_RESPONSE_ONLY", Transport::kRc, K::kReadResponse,
                                  P::kOnly, kHdrAeth, true, false);
  t[op::kRcAck] = Op("RC_ACKNOWLEDGE", Transport::kRc, K::kAck, P::kOnly, kHdrAeth, false, false);
  t[op::kRcAtomicAck] = Op("RC_ATOMIC_ACKNOWLEDGE", Transport::kRc, K::kAtomicAck, P::kOnly,
                           kHdrAeth | kHdrAtomicAckEth, false, false);
  t[op::kRcCompareSwap] = Op("RC_CMP_SWAP", Transport::kRc, K::kAtomic, P::kOnly, kHdrAtomicEth,
                             false, true);
  t[op::kRcFetchAdd] =
      Op("RC_FETCH_ADD", Transport::kRc, K::kAtomic, P::kOnly, kHdrAtomicEth, false, true);
  t[op::kRcSendLastInv] = Op("RC_SEND_LAST_WITH_INVALIDATE", Transport::kRc, K::kSend, P::kLast,
                             kHdrIeth, true, true);
  t[op::kRcSendOnlyInv] = Op("RC_SEND_ONLY_WITH_INVALIDATE", Transport::kRc, K::kSend, P::kOnly,
                             kHdrIeth, true, true);
  t[op::kUdSendOnly] =
      Op("UD_SEND_ONLY", Transport::kUd, K::kSend, P::kOnly, kHdrDeth, true, true);
  t[op::kUdSendOnlyImm] = Op("UD_SEND_ONLY_WITH_IMMEDIATE", Transport::kUd, K::kSend, P::kOnly,
                             kHdrDeth | kHdrImmDt, true, true);
  t[op::kCnp] = Op("CNP", Transport::kCnp, K::kCnp, P::kOnly, kHdrCnpPad, false, true);
  return t;
}

}  // namespace

constexpr std::array<OpcodeInfo, 256> kOpcodeTable = BuildTable();

}  // namespace roce::wire
