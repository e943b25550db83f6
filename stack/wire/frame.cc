// SPDX-License-Identifier: MIT
#include "stack/wire/frame.h"

#include "stack/wire/checksum.h"

namespace roce::wire {

namespace {

// Copies the template: fixed sizes for the common layouts (the compiler
// turns them into a few vector moves), any length otherwise.
inline void CopyNet(uint8_t* out, const uint8_t* b, size_t n) {
  constexpr size_t kV4 = EthernetHeader::kLen + Ipv4Header::kLen + UdpHeader::kLen;  // 42
  constexpr size_t kV6 = EthernetHeader::kLen + Ipv6Header::kLen + UdpHeader::kLen;  // 62
  if (n == kV4) std::memcpy(out, b, kV4);
  else if (n == kV6) std::memcpy(out, b, kV6);
  else std::memcpy(out, b, n);
}

}  // namespace

void FrameTemplate::Build(const NetHeaders& net) {
  std::memset(b_, 0, sizeof b_);
  ipv6_ = net.ipv6;
  l3_ = static_cast<uint8_t>(net.eth.Len());
  net.eth.Emit(b_);
  if (ipv6_) {
    Ipv6Header ip = net.ip6;
    ip.payload_length = 0;
    ip.Emit(b_ + l3_);
    ip_hlen_ = Ipv6Header::kLen;
    ip4_sum_ = 0;
  } else {
    Ipv4Header ip = net.ip4;
    ip.total_length = 0;
    ip.checksum = 0;
    ip.Emit(b_ + l3_);
    ip_hlen_ = static_cast<uint8_t>(ip.Len());
    uint32_t sum = 0;
    for (size_t i = 0; i + 1 < ip_hlen_; i += 2) sum += Load16(b_ + l3_ + i);
    ip4_sum_ = sum;
  }
  l4_ = static_cast<uint8_t>(l3_ + ip_hlen_);
  UdpHeader udp = net.udp;
  udp.length = 0;
  udp.Emit(b_ + l4_);
  net_len_ = static_cast<uint8_t>(l4_ + UdpHeader::kLen);
}

size_t FrameTemplate::WriteHeaders(const Bth& bth, const ExtHeaders& ext, uint32_t payload_len,
                                   uint8_t* out) const {
  const OpcodeInfo& info = GetOpcodeInfo(bth.opcode);
  const uint8_t pad = PadFor(payload_len);
  const uint32_t udp_len =
      static_cast<uint32_t>(UdpHeader::kLen + Bth::kLen + info.ext_len) + payload_len + pad + kIcrcLen;
  CopyNet(out, b_, net_len_);
  uint8_t* ip = out + l3_;
  if (ipv6_) {
    Store16(ip + 4, static_cast<uint16_t>(udp_len));
  } else {
    const uint32_t total = ip_hlen_ + udp_len;
    Store16(ip + 2, static_cast<uint16_t>(total));
    uint32_t s = ip4_sum_ + (total & 0xFFFF);
    s = (s & 0xFFFF) + (s >> 16);
    s = (s & 0xFFFF) + (s >> 16);
    Store16(ip + 10, static_cast<uint16_t>(~s));
  }
  Store16(out + l4_ + 4, static_cast<uint16_t>(udp_len));
  uint8_t* o = out + net_len_;
  bth.Emit(o, pad);
  o = EmitExtHeaders(info.headers, ext, o + Bth::kLen);
  return static_cast<size_t>(o - out);
}

uint16_t FrameTemplate::Udp6ChecksumOf(const uint8_t* hdr, size_t hlen, const Gather* pieces,
                                       uint32_t n, ByteSpan tail) const {
  const uint8_t* ip = hdr + l3_;
  const uint8_t* udp = hdr + l4_;
  InetChecksum c = BeginUdp6Checksum(ip + 8, ip + 24, Load16(udp + 4), udp);
  c.Add(ByteSpan(udp + UdpHeader::kLen, hlen - l4_ - UdpHeader::kLen));
  for (uint32_t i = 0; i < n; i++) c.Add(ByteSpan(pieces[i].p, pieces[i].len));
  c.Add(tail);
  return c.Finish();
}

uint32_t IcrcOf(const FrameTemplate& t, const uint8_t* hdr, size_t hlen, const Gather* pieces,
                uint32_t n, uint8_t pad) {
  Icrc c;
  const ByteSpan l3(hdr + t.l3(), hlen - t.l3());
  c.Begin(l3);
  if (c.begun() < l3.size()) c.Update(l3.subspan(c.begun()));
  for (uint32_t i = 0; i < n; i++) c.Update(ByteSpan(pieces[i].p, pieces[i].len));
  static constexpr uint8_t kZero[4] = {};
  if (pad) c.Update(ByteSpan(kZero, pad));
  return c.Value();
}

size_t WriteFrame(const FrameTemplate& t, const Bth& bth, const ExtHeaders& ext, const Gather* pieces,
                  uint32_t n, uint32_t payload_len, uint8_t* out, const WriteOptions& opts) {
  const size_t h = t.WriteHeaders(bth, ext, payload_len, out);
  uint8_t* o = out + h;
  for (uint32_t i = 0; i < n; i++) {
    CopySmall(o, pieces[i].p, pieces[i].len);
    o += pieces[i].len;
  }
  const uint8_t pad = PadFor(payload_len);
  for (uint8_t i = 0; i < pad; i++) *o++ = 0;
  // One pass: the whole packet from the IP header lies in `out`.
  const size_t l3 = t.l3();
  Store32Le(o, ComputeIcrc(ByteSpan(out + l3, static_cast<size_t>(o - out) - l3)));
  o += kIcrcLen;
  const size_t len = static_cast<size_t>(o - out);
  if (t.ipv6() && opts.udp6_checksum) {
    const size_t udp = t.l4();
    const uint16_t c = UdpChecksumV6(out + l3 + 8, out + l3 + 24, ByteSpan(out + udp, UdpHeader::kLen),
                                     ByteSpan(out + udp + UdpHeader::kLen, len - udp - UdpHeader::kLen));
    Store16(out + udp + 6, c);
  }
  return len;
}

}  // namespace roce::wire
