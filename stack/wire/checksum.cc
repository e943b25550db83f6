// SPDX-License-Identifier: MIT
#include "stack/wire/checksum.h"

namespace roce::wire {

void InetChecksum::Add(ByteSpan s) {
  const uint8_t* p = s.data();
  size_t n = s.size();
  if (n == 0) return;
  if (odd_) {  // the first byte completes the low half of the previous word
    sum_ += *p++;
    n--;
    odd_ = false;
  }
  for (; n >= 2; p += 2, n -= 2) sum_ += Load16(p);
  if (n) {
    sum_ += uint32_t{*p} << 8;
    odd_ = true;
  }
}

uint16_t InetChecksum::Finish() const {
  uint64_t s = sum_;
  while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
  uint16_t c = static_cast<uint16_t>(~s);
  return c == 0 ? 0xFFFF : c;
}

InetChecksum BeginUdp6Checksum(const uint8_t src[16], const uint8_t dst[16], uint32_t udp_len,
                               const uint8_t* udp_header) {
  InetChecksum c;
  c.Add(ByteSpan(src, 16));
  c.Add(ByteSpan(dst, 16));
  c.Add16(static_cast<uint16_t>(udp_len >> 16));
  c.Add16(static_cast<uint16_t>(udp_len));
  c.Add16(17);  // UDP
  c.Add(ByteSpan(udp_header, 6));  // ports and length; the checksum field counts as 0
  return c;
}

uint16_t UdpChecksumV6(const uint8_t src[16], const uint8_t dst[16], ByteSpan udp_header,
                       ByteSpan rest) {
  InetChecksum c = BeginUdp6Checksum(
      src, dst, static_cast<uint32_t>(udp_header.size() + rest.size()), udp_header.data());
  c.Add(rest);
  return c.Finish();
}

}  // namespace roce::wire
