#include "stack/rc/tx.h"

#include <cstring>

namespace roce::rc {

size_t TxFrameLen(const TxPacket& pkt) {
  return wire::HeadersLen(*pkt.net, pkt.bth.opcode) + pkt.payload_len +
         wire::PadFor(pkt.payload_len) + wire::kIcrcLen;
}

size_t SerializeFrame(const TxPacket& pkt, uint8_t* out) {
  const size_t h = wire::EmitHeaders(*pkt.net, pkt.bth, pkt.ext, pkt.payload_len, out);
  uint8_t* o = out + h;
  for (uint32_t i = 0; i < pkt.nseg; i++) {
    std::memcpy(o, pkt.seg[i].p, pkt.seg[i].len);
    o += pkt.seg[i].len;
  }
  const uint8_t pad = wire::PadFor(pkt.payload_len);
  std::memset(o, 0, pad);
  o += pad;
  const size_t l3 = pkt.net->eth.Len();
  const uint32_t icrc = wire::ComputeIcrc(wire::ByteSpan(out + l3, static_cast<size_t>(o - out) - l3));
  wire::Store32Le(o, icrc);
  o += wire::kIcrcLen;
  const size_t n = static_cast<size_t>(o - out);
  if (pkt.net->ipv6) wire::FillUdp6Checksum(*pkt.net, wire::MutByteSpan(out, n));
  return n;
}

}  // namespace roce::rc
