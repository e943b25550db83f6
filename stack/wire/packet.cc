// SPDX-License-Identifier: MIT
#include "stack/wire/packet.h"

#include <algorithm>
#include <cstring>

#include "stack/wire/checksum.h"

namespace roce::wire {

namespace {

// BTH and extension headers of a transport `tlen` bytes long (BTH .. ICRC)
// at `in`; reads only the BTH and the extension headers (the caller made sure
// `in` holds at least min(tlen, BTH + 28 + ...) of them, see NeedTransport).
// Sets *ext_end (offset of the payload) and *payload_len. Inlined into each
// caller: the per-frame fast path below runs it for every packet received.
[[gnu::always_inline]] inline Error ParseTransportHeaders(const uint8_t* in, size_t tlen, RocePacket* out,
                                                         size_t* ext_end, size_t* payload_len) {
  if (tlen < Bth::kLen + kIcrcLen) return Error::kTruncated;
  out->bth.Parse(ByteSpan(in, Bth::kLen));
  if (out->bth.tver != 0) return Error::kBadTransportVersion;
  const OpcodeInfo& info = GetOpcodeInfo(out->bth.opcode);
  if (info.name == nullptr) return Error::kUnknownOpcode;
  const size_t after_bth = tlen - Bth::kLen - kIcrcLen;
  if (after_bth < info.ext_len) return Error::kHeaderMismatch;
  const size_t payload_and_pad = after_bth - info.ext_len;
  if (!info.payload && payload_and_pad != 0) return Error::kHeaderMismatch;
  if ((payload_and_pad & 3) != 0 || out->bth.pad_count > payload_and_pad)
    return Error::kBadPadCount;

  const uint8_t* p = in + Bth::kLen;
  const uint16_t h = info.headers;
  if (h & kHdrDeth) { out->deth.Parse(p); p += kDethLen; }
  if (h & kHdrReth) { out->reth.Parse(p); p += kRethLen; }
  if (h & kHdrAtomicEth) { out->atomic.Parse(p); p += kAtomicEthLen; }
  if (h & kHdrAeth) { out->aeth.Parse(p); p += kAethLen; }
  if (h & kHdrAtomicAckEth) { out->atomic_ack.Parse(p); p += kAtomicAckEthLen; }
  if (h & kHdrImmDt) { out->imm = Load32(p); p += kImmDtLen; } else { out->imm = 0; }
  if (h & kHdrIeth) { out->ieth_rkey = Load32(p); p += kIethLen; } else { out->ieth_rkey = 0; }
  if (h & kHdrCnpPad) { std::memcpy(out->cnp_resv, p, kCnpPadLen); p += kCnpPadLen; }
  *ext_end = static_cast<size_t>(p - in);
  *payload_len = payload_and_pad - out->bth.pad_count;
  return Error::kOk;
}

}  // namespace

Error ParseTransport(ByteSpan in, RocePacket* out) {
  size_t ext_end = 0, payload_len = 0;
  const Error e = ParseTransportHeaders(in.data(), in.size(), out, &ext_end, &payload_len);
  if (e != Error::kOk) return e;
  const uint8_t* p = in.data() + ext_end;
  out->payload = ByteSpan(p, payload_len);
  out->pad = ByteSpan(p + payload_len, out->bth.pad_count);
  out->icrc = Load32Le(in.data() + in.size() - kIcrcLen);
  return Error::kOk;
}

namespace {

// The common frame, valid: Ethernet without VLAN, IPv4 without options, UDP
// to 4791, a known opcode, all headers in the first `avail` bytes. Fills
// exactly what the general path below fills and returns true; false — with
// *out partly written — for anything else, which the general path then
// parses from the start (and names the error). Loads the fields directly,
// without the general path's per-header bounds checks.
[[gnu::always_inline]] inline bool ParseCommonV4(const uint8_t* head, size_t avail, size_t frame_len, RocePacket* out,
                          FrameLayout* lay, const ParseOptions& opts) {
  constexpr size_t kL3 = EthernetHeader::kLen, kL4 = kL3 + Ipv4Header::kLen;
  constexpr size_t kBth = kL4 + UdpHeader::kLen;  // 42
  if (avail < kBth + Bth::kLen || Load16(head + 12) != kEtherTypeIpv4 || head[kL3] != 0x45) return false;
  const uint8_t* ip = head + kL3;
  const uint16_t total = Load16(ip + 2);
  const uint16_t flags_frag = Load16(ip + 6);
  if (total < Ipv4Header::kLen || total > frame_len - kL3 || (flags_frag & (Ipv4Header::kFlagMf | 0x1FFF)) ||
      ip[9] != kIpProtoUdp)
    return false;
  if (opts.verify_ip_checksum && !Ipv4Header::VerifyChecksum(ip, Ipv4Header::kLen)) return false;
  const uint8_t* udp = head + kL4;
  if (Load16(udp + 2) != kRoceV2Port || Load16(udp + 4) != total - Ipv4Header::kLen) return false;
  const size_t end = kL3 + total;
  if (end < kBth + Bth::kLen || avail < std::min(end, kBth + Bth::kLen + GetOpcodeInfo(head[kBth]).ext_len))
    return false;
  size_t ext_end = 0, payload_len = 0;
  if (ParseTransportHeaders(head + kBth, total - Ipv4Header::kLen - UdpHeader::kLen, out, &ext_end,
                            &payload_len) != Error::kOk)
    return false;
  EthernetHeader& e = out->eth;
  std::memcpy(e.dst.b.data(), head, 6);
  std::memcpy(e.src.b.data(), head + 6, 6);
  e.has_vlan = false;
  e.ethertype = kEtherTypeIpv4;
  out->ipv6 = false;
  Ipv4Header& h = out->ip4;
  h.ihl = 5;
  h.tos = ip[1];
  h.total_length = total;
  h.id = Load16(ip + 4);
  h.flags_frag = flags_frag;
  h.ttl = ip[8];
  h.protocol = kIpProtoUdp;
  h.checksum = Load16(ip + 10);
  h.src = Load32(ip + 12);
  h.dst = Load32(ip + 16);
  h.options = {};
  UdpHeader& u = out->udp;
  u.src_port = Load16(udp);
  u.dst_port = kRoceV2Port;
  u.length = static_cast<uint16_t>(total - Ipv4Header::kLen);
  u.checksum = Load16(udp + 6);
  out->l3_offset = kL3;
  out->bth_offset = kBth;
  lay->l3 = kL3;
  lay->bth = kBth;
  lay->payload = static_cast<uint32_t>(kBth + ext_end);
  lay->payload_len = static_cast<uint32_t>(payload_len);
  lay->end = static_cast<uint32_t>(end);
  lay->icrc = lay->end - static_cast<uint32_t>(kIcrcLen);
  return true;
}

}  // namespace

Error ParseRoceHeaders(const uint8_t* head, size_t avail, size_t frame_len, RocePacket* out,
                       FrameLayout* lay, bool* straddle, const ParseOptions& opts) {
  *straddle = false;
  if (avail > frame_len) avail = frame_len;
  if (ParseCommonV4(head, avail, frame_len, out, lay, opts)) return Error::kOk;
  return ParseRoceHeadersGeneral(head, avail, frame_len, out, lay, straddle, opts);
}

Error ParseRoceHeadersGeneral(const uint8_t* head, size_t avail, size_t frame_len, RocePacket* out,
                              FrameLayout* lay, bool* straddle, const ParseOptions& opts) {
  *straddle = false;
  if (avail > frame_len) avail = frame_len;
  // Bytes [0, end) must be readable at head before a header is parsed; when
  // they are not but the frame is longer, the headers straddle segments.
  // (A frame shorter than `end` is left to the parsers, which see the frame's
  // real length and report kTruncated without reading past it.)
  auto missing = [&](size_t end) { return end > avail && avail < frame_len; };
  const ByteSpan frame(head, frame_len);  // only [0, avail) is ever read through it
  if (missing(EthernetHeader::kLen) ||
      (avail >= EthernetHeader::kLen && Load16(head + 12) == kEtherTypeVlan &&
       missing(EthernetHeader::kLen + EthernetHeader::kVlanLen))) {
    *straddle = true;
    return Error::kTruncated;
  }
  Error e = out->eth.Parse(frame);
  if (e != Error::kOk) return e;
  const size_t l3 = out->eth.Len();
  ByteSpan ip = frame.subspan(l3);
  size_t l3_len, l4;
  if (out->eth.ethertype == kEtherTypeIpv4) {
    out->ipv6 = false;
    if (missing(l3 + Ipv4Header::kLen) || (avail >= l3 + 1 && missing(l3 + (head[l3] & 0x0F) * 4u))) {
      *straddle = true;
      return Error::kTruncated;
    }
    if ((e = out->ip4.Parse(ip)) != Error::kOk) return e;
    if (opts.verify_ip_checksum && !Ipv4Header::VerifyChecksum(ip.data(), out->ip4.Len()))
      return Error::kBadIpChecksum;
    if (out->ip4.protocol != kIpProtoUdp) return Error::kNotUdp;
    l3_len = out->ip4.total_length;
    l4 = out->ip4.Len();
  } else if (out->eth.ethertype == kEtherTypeIpv6) {
    out->ipv6 = true;
    if (missing(l3 + Ipv6Header::kLen)) {
      *straddle = true;
      return Error::kTruncated;
    }
    if ((e = out->ip6.Parse(ip)) != Error::kOk) return e;
    if (out->ip6.next_header != kIpProtoUdp) return Error::kNotUdp;
    l3_len = Ipv6Header::kLen + out->ip6.payload_length;
    l4 = Ipv6Header::kLen;
  } else {
    return Error::kBadEthertype;
  }
  ip = ip.first(l3_len);
  const size_t udp_at = l3 + l4;
  const size_t bth_at = udp_at + UdpHeader::kLen;
  const size_t end = l3 + l3_len;  // within the frame: the IP parsers checked
  if (missing(std::min(end, bth_at))) {
    *straddle = true;
    return Error::kTruncated;
  }
  if ((e = out->udp.Parse(ip.subspan(l4))) != Error::kOk) return e;
  if (out->udp.length != l3_len - l4) return Error::kBadUdpLength;
  if (out->udp.dst_port != kRoceV2Port) return Error::kNotRoce;
  // The BTH, then the extension headers its opcode has (bounded by the
  // datagram, whose length the transport parser checks).
  if (missing(std::min(end, bth_at + Bth::kLen)) ||
      (avail > bth_at &&
       missing(std::min(end, bth_at + Bth::kLen + GetOpcodeInfo(head[bth_at]).ext_len)))) {
    *straddle = true;
    return Error::kTruncated;
  }
  size_t ext_end = 0, payload_len = 0;
  e = ParseTransportHeaders(head + bth_at, l3_len - l4 - UdpHeader::kLen, out, &ext_end, &payload_len);
  if (e != Error::kOk) return e;
  out->l3_offset = static_cast<uint16_t>(l3);
  out->bth_offset = static_cast<uint16_t>(bth_at);
  lay->l3 = static_cast<uint32_t>(l3);
  lay->bth = static_cast<uint32_t>(bth_at);
  lay->payload = static_cast<uint32_t>(bth_at + ext_end);
  lay->payload_len = static_cast<uint32_t>(payload_len);
  lay->end = static_cast<uint32_t>(end);
  lay->icrc = lay->end - static_cast<uint32_t>(kIcrcLen);
  return Error::kOk;
}

Error ParseRoceFrame(ByteSpan frame, RocePacket* out, const ParseOptions& opts) {
  FrameLayout lay;
  bool straddle;
  const Error e = ParseRoceHeaders(frame.data(), frame.size(), frame.size(), out, &lay, &straddle, opts);
  if (e != Error::kOk) return e;
  out->payload = frame.subspan(lay.payload, lay.payload_len);
  out->pad = frame.subspan(lay.payload + lay.payload_len, out->bth.pad_count);
  out->icrc = Load32Le(frame.data() + lay.icrc);
  out->trailer = frame.subspan(lay.end);
  if (opts.verify_icrc) {
    if (ComputeIcrc(frame.subspan(lay.l3, lay.icrc - lay.l3)) != out->icrc) return Error::kIcrcMismatch;
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
  o = EmitExtHeaders(info.headers, x, o);
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
