// SPDX-License-Identifier: MIT
#include "stack/rc/tx.h"

namespace roce::rc {

size_t TxFrameLen(const TxPacket& pkt) {
  if (pkt.tmpl) return pkt.tmpl->FrameLen(pkt.bth.opcode, pkt.payload_len);
  return wire::HeadersLen(*pkt.net, pkt.bth.opcode) + pkt.payload_len +
         wire::PadFor(pkt.payload_len) + wire::kIcrcLen;
}

size_t SerializeFrame(const TxPacket& pkt, uint8_t* out) {
  if (pkt.tmpl)
    return wire::WriteFrame(*pkt.tmpl, pkt.bth, pkt.ext, pkt.seg, pkt.nseg, pkt.payload_len, out);
  const wire::FrameTemplate t(*pkt.net);
  return wire::WriteFrame(t, pkt.bth, pkt.ext, pkt.seg, pkt.nseg, pkt.payload_len, out);
}

}  // namespace roce::rc
