#include "stack/wire/packet.h"

#include <cstring>

#include "stack/wire/checksum.h"

namespace roce::wire {

Error ParseTransport(ByteSpan in, RocePacket* out) {
  if (in.size() < Bth::kLen + kIcrcLen) return Error::kTruncated;
  out->bth.Parse(in);
  if (out->bth.tver != 0) return Error::kBadTransportVersion;
  const OpcodeInfo& info = GetOpcodeInfo(out->bth.opcode);
  if (info.name == nullptr) return Error::kUnknownOpcode;
  const size_t after_bth = in.size() - Bth::kLen - kIcrcLen;
  if (after_bth < info.ext_len) return Error::kHeaderMismatch;
  const size_t payload_and_pad = after_bth - info.ext_len;
  if (!info.payload && payload_and_pad != 0) return Error::kHeaderMismatch;
  if ((payload_and_pad & 3) != 0 || out->bth.pad_count > payload_and_pad)
    return Error::kBadPadCount;

  const uint8_t* p = in.data() + Bth::kLen;
  const uint16_t h = info.headers;
  if (h & kHdrDeth) { out->deth.Parse(p); p += kDethLen; }
  if (h & kHdrReth) { out->reth.Parse(p); p += kRethLen; }
  if (h & kHdrAtomicEth) { out->atomic.Parse(p); p += kAtomicEthLen; }
  if (h & kHdrAeth) { out->aeth.Parse(p); p += kAethLen; }
  if (h & kHdrAtomicAckEth) { out->atomic_ack.Parse(p); p += kAtomicAckEthLen; }
  if (h & kHdrImmDt) { out->imm = Load32(p); p += kImmDtLen; }
  if (h & kHdrIeth) { out->ieth_rkey = Load32(p); p += kIethLen; }
  if (h & kHdrCnpPad) { std::memcpy(out->cnp_resv, p, kCnpPadLen); p += kCnpPadLen; }
  const size_t payload_len = payload_and_pad - out->bth.pad_count;
  out->payload = ByteSpan(p, payload_len);
  out->pad = ByteSpan(p + payload_len, out->bth.pad_count);
  out->icrc = Load32Le(in.data() + in.size() - kIcrcLen);
  return Error::kOk;
}

Error ParseRoceFrame(ByteSpan frame, RocePacket* out, const ParseOptions& opts) {
  Error e = out->eth.Parse(frame);
  if (e != Error::kOk) return e;
  const size_t l3 = out->eth.Len();
  ByteSpan ip = frame.subspan(l3);
  size_t l3_len, l4;
  if (out->eth.ethertype == kEtherTypeIpv4) {
    out->ipv6 = false;
    if ((e = out->ip4.Parse(ip)) != Error::kOk) return e;
    if (opts.verify_ip_checksum && !Ipv4Header::VerifyChecksum(ip.data(), out->ip4.Len()))
      return Error::kBadIpChecksum;
    if (out->ip4.protocol != kIpProtoUdp) return Error::kNotUdp;
    l3_len = out->ip4.total_length;
    l4 = out->ip4.Len();
  } else if (out->eth.ethertype == kEtherTypeIpv6) {
    out->ipv6 = true;
    if ((e = out->ip6.Parse(ip)) != Error::kOk) return e;
    if (out->ip6.next_header != kIpProtoUdp) return Error::kNotUdp;
    l3_len = Ipv6Header::kLen + out->ip6.payload_length;
    l4 = Ipv6Header::kLen;
  } else {
    return Error::kBadEthertype;
  }
  ip = ip.first(l3_len);
  if ((e = out->udp.Parse(ip.subspan(l4))) != Error::kOk) return e;
  if (out->udp.length != l3_len - l4) return Error::kBadUdpLength;
  if (out->udp.dst_port != kRoceV2Port) return Error::kNotRoce;
  if ((e = ParseTransport(ip.subspan(l4 + UdpHeader::kLen), out)) != Error::kOk) return e;
  out->trailer = frame.subspan(l3 + l3_len);
  out->l3_offset = static_cast<uint16_t>(l3);
  out->bth_offset = static_cast<uint16_t>(l3 + l4 + UdpHeader::kLen);
  if (opts.verify_icrc) {
    if (ComputeIcrc(ip.first(l3_len - kIcrcLen)) != out->icrc) return Error::kIcrcMismatch;
  }
  return Error::kOk;
}

size_t HeadersLen(const RocePacket& p) { return HeadersLen(p, p.bth.opcode); }

size_t FrameLen(const RocePacket& p, uint32_t payload_len) {
  return HeadersLen(p) + payload_len + PadFor(payload_len) + kIcrcLen;
}

size_t EmitHeaders(const NetHeaders& p, const Bth& bth_in, const ExtHeaders& x,
                   uint32_t payload_len, uint8_t* out, const BuildOptions& opts) {
  const OpcodeInfo& info = GetOpcodeInfo(bth_in.opcode);
  const size_t ip_hlen = p.ipv6 ? Ipv6Header::kLen : p.ip4.Len();
  const size_t transport = Bth::kLen + info.ext_len + payload_len + PadFor(payload_len) + kIcrcLen;
  uint8_t* o = out;
  p.eth.Emit(o);
  o += p.eth.Len();
  if (p.ipv6) {
    Ipv6Header ip = p.ip6;
    if (opts.fill_lengths) ip.payload_length = static_cast<uint16_t>(UdpHeader::kLen + transport);
    ip.Emit(o);
  } else {
    Ipv4Header ip = p.ip4;
    if (opts.fill_lengths) ip.total_length = static_cast<uint16_t>(ip_hlen + UdpHeader::kLen + transport);
    ip.Emit(o);
    if (opts.fill_ip_checksum) Store16(o + 10, Ipv4Header::ComputeChecksum(o, ip_hlen));
  }
  o += ip_hlen;
  UdpHeader udp = p.udp;
  if (opts.fill_lengths) udp.length = static_cast<uint16_t>(UdpHeader::kLen + transport);
  udp.Emit(o);
  o += UdpHeader::kLen;
  Bth bth = bth_in;
  if (opts.fill_lengths) bth.pad_count = PadFor(payload_len);
  bth.Emit(o);
  o += Bth::kLen;
  const uint16_t h = info.headers;
  if (h & kHdrDeth) { x.deth.Emit(o); o += kDethLen; }
  if (h & kHdrReth) { x.reth.Emit(o); o += kRethLen; }
  if (h & kHdrAtomicEth) { x.atomic.Emit(o); o += kAtomicEthLen; }
  if (h & kHdrAeth) { x.aeth.Emit(o); o += kAethLen; }
  if (h & kHdrAtomicAckEth) { x.atomic_ack.Emit(o); o += kAtomicAckEthLen; }
  if (h & kHdrImmDt) { Store32(o, x.imm); o += kImmDtLen; }
  if (h & kHdrIeth) { Store32(o, x.ieth_rkey); o += kIethLen; }
  if (h & kHdrCnpPad) { std::memcpy(o, x.cnp_resv, kCnpPadLen); o += kCnpPadLen; }
  return static_cast<size_t>(o - out);
}

size_t BuildRoceFrame(const RocePacket& p, MutByteSpan out, const BuildOptions& opts) {
  const uint32_t payload_len = static_cast<uint32_t>(p.payload.size());
  const size_t pad = opts.fill_lengths ? PadFor(payload_len) : p.bth.pad_count;
  const size_t hlen = HeadersLen(p);
  const size_t total = hlen + payload_len + pad + kIcrcLen +
                       (opts.append_trailer ? p.trailer.size() : 0);
  if (out.size() < total) return 0;
  uint8_t* o = out.data();
  EmitHeaders(p, payload_len, o, opts);
  if (payload_len) std::memcpy(o + hlen, p.payload.data(), payload_len);
  uint8_t* padp = o + hlen + payload_len;
  if (opts.zero_pad || p.pad.size() != pad)
    std::memset(padp, 0, pad);
  else
    std::memcpy(padp, p.pad.data(), pad);
  const size_t l3 = p.eth.Len();
  const size_t icrc_at = hlen + payload_len + pad;
  const uint32_t icrc =
      opts.fill_icrc ? ComputeIcrc(ByteSpan(o + l3, icrc_at - l3)) : p.icrc;
  Store32Le(o + icrc_at, icrc);
  size_t n = icrc_at + kIcrcLen;
  if (p.ipv6 && opts.fill_udp6_checksum) FillUdp6Checksum(p, MutByteSpan(o, n));
  if (opts.append_trailer && !p.trailer.empty()) {
    std::memcpy(o + n, p.trailer.data(), p.trailer.size());
    n += p.trailer.size();
  }
  return n;
}

}  // namespace roce::wire

namespace roce::wire {

void FillUdp6Checksum(const NetHeaders& net, MutByteSpan frame) {
  const size_t udp_at = net.eth.Len() + Ipv6Header::kLen;
  uint8_t* o = frame.data();
  const uint16_t c = UdpChecksumV6(net.ip6.src.data(), net.ip6.dst.data(),
                                   ByteSpan(o + udp_at, UdpHeader::kLen),
                                   ByteSpan(o + udp_at + UdpHeader::kLen,
                                            frame.size() - udp_at - UdpHeader::kLen));
  Store16(o + udp_at + 6, c);
}

}  // namespace roce::wire
