#include "stack/wire/icrc.h"

#include <isa-l/crc.h>

#include <algorithm>
#include <cstring>

#include "stack/wire/headers.h"

namespace roce::wire {
namespace {

// CRC state after the 8 bytes of 0xFF that stand in for the masked LRH
// (computed once at load time, so the hot path has no init guard).
const uint32_t kLrhSeed = [] {
  const uint8_t ff[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  return crc32_gzip_refl(0, ff, sizeof ff);
}();

// Copies the first `copy` bytes of `in` (at least IP + UDP + BTH) into buf and
// sets the variant fields to ones. Returns IP + UDP + BTH length, or 0 if the
// span is not IPv4/IPv6 or too short.
size_t CopyMasked(ByteSpan in, uint8_t* buf, size_t copy_max) {
  if (in.empty()) return 0;
  size_t ip_len;
  const unsigned version = in[0] >> 4;
  if (version == 4) {
    ip_len = (in[0] & 0x0F) * 4u;
    if (ip_len < Ipv4Header::kLen) return 0;
  } else if (version == 6) {
    ip_len = Ipv6Header::kLen;
  } else {
    return 0;
  }
  const size_t n = ip_len + UdpHeader::kLen + Bth::kLen;
  if (in.size() < n) return 0;
  std::memcpy(buf, in.data(), std::max(n, std::min(in.size(), copy_max)));
  if (version == 4) {
    buf[1] = 0xff;                 // TOS
    buf[8] = 0xff;                 // TTL
    buf[10] = buf[11] = 0xff;      // header checksum
  } else {
    buf[0] |= 0x0f;                // traffic class, high nibble
    buf[1] = buf[2] = buf[3] = 0xff;  // traffic class low nibble + flow label
    buf[7] = 0xff;                 // hop limit
  }
  buf[ip_len + 6] = buf[ip_len + 7] = 0xff;      // UDP checksum
  buf[ip_len + UdpHeader::kLen + 4] = 0xff;      // BTH FECN/BECN/resv6
  return n;
}

constexpr size_t kMaxMasked = 60 + UdpHeader::kLen + Bth::kLen;
// Up to this size a whole packet is hashed from one masked copy: one CRC call
// is cheaper than three short ones.
constexpr size_t kOneCopyMax = 512;

}  // namespace

uint32_t Crc32(uint32_t seed, ByteSpan data) {
  return crc32_gzip_refl(seed, data.data(), data.size());
}

bool Icrc::Begin(ByteSpan in) {
  uint8_t buf[kMaxMasked];
  begun_ = CopyMasked(in, buf, 0);
  if (begun_ == 0) return false;
  crc_ = crc32_gzip_refl(kLrhSeed, buf, begun_);
  return true;
}

void Icrc::Update(ByteSpan more) { crc_ = crc32_gzip_refl(crc_, more.data(), more.size()); }

uint32_t ComputeIcrc(ByteSpan l3, bool* ok) {
  if (l3.size() <= kOneCopyMax) {
    uint8_t buf[kOneCopyMax];
    const size_t n = CopyMasked(l3, buf, kOneCopyMax);
    if (ok) *ok = n != 0;
    if (n == 0) return 0;
    return crc32_gzip_refl(kLrhSeed, buf, l3.size());
  }
  Icrc c;
  const bool good = c.Begin(l3);
  if (ok) *ok = good;
  if (!good) return 0;
  c.Update(l3.subspan(c.begun()));
  return c.Value();
}

}  // namespace roce::wire
