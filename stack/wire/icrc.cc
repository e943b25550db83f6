#include "stack/wire/icrc.h"

#include <isa-l/crc.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "stack/wire/headers.h"

namespace roce::wire {
namespace {

// ---- the masked fields as a change of seed ----------------------------------------------------
//
// The ICRC is a CRC-32 of the packet with its variant fields set to ones.
// CRC-32 is affine in its input: with R(s, d) the raw register after `d` from
// state s (linear in s and d together) and crc32(c, d) = ~R(~c, d),
//   crc32(c, d ^ e) = crc32(c, d) ^ R(0, e).
// Setting a byte b at offset p to its masked value m is XOR-ing e = (b | m) ^ b
// = ~b & m into it, and a change of the data at offset p is, for the CRC of
// everything from offset 0, the same as a change of the seed by
// G_p(e) = S^-(p+1)(T[e]), where T is the byte table and S^-1 undoes one step
// over a zero byte. So
//   ICRC = crc32(lrh_seed ^ XOR_p H_p[b_p], packet as it lies),
// with H_p[b] = G_p(~b & m_p) tabulated per masked offset: one pass of ISA-L
// over the bytes where they are, no masked copy, whatever the length.

constexpr uint32_t kPoly = 0xEDB88320u;  // reflected Ethernet polynomial

struct Tables {
  // IPv4 with a 20-byte header: TOS, TTL, header checksum, UDP checksum, BTH byte 4.
  static constexpr size_t kV4N = 7;
  static constexpr uint8_t kV4Off[kV4N] = {1, 8, 10, 11, 20 + 6, 20 + 7, 20 + 8 + 4};
  static constexpr uint8_t kV4Mask[kV4N] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  // IPv6: traffic class (low nibble of byte 0 and high nibble of byte 1), flow
  // label (rest of bytes 1..3), hop limit, UDP checksum, BTH byte 4.
  static constexpr size_t kV6N = 8;
  static constexpr uint8_t kV6Off[kV6N] = {0, 1, 2, 3, 7, 40 + 6, 40 + 7, 40 + 8 + 4};
  static constexpr uint8_t kV6Mask[kV6N] = {0x0f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

  uint32_t lrh_seed = 0;  // crc32 after the 8 bytes of 0xFF standing in for the LRH
  uint32_t v4[kV4N][256] = {};
  uint32_t v6[kV6N][256] = {};

  constexpr Tables() {
    uint32_t t[256] = {};
    uint8_t inv[256] = {};  // top byte of T[i] -> i (unique for a CRC table)
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = (c >> 1) ^ ((c & 1) ? kPoly : 0);
      t[i] = c;
      inv[c >> 24] = static_cast<uint8_t>(i);
    }
    // One step back over a zero byte: s' = (s >> 8) ^ T[s & 0xff].
    auto unstep = [&](uint32_t s1) {
      const uint8_t i = inv[s1 >> 24];
      return ((s1 ^ t[i]) << 8) | i;
    };
    auto g = [&](size_t p, uint8_t e) {
      uint32_t s = t[e];
      for (size_t k = 0; k <= p; k++) s = unstep(s);
      return s;
    };
    auto fill = [&](uint32_t (*tab)[256], const uint8_t* off, const uint8_t* mask, size_t n) {
      for (size_t j = 0; j < n; j++) {
        uint32_t bit[8] = {};  // G_p is linear: built from the eight single bits
        for (int k = 0; k < 8; k++) bit[k] = g(off[j], static_cast<uint8_t>(1u << k));
        for (uint32_t b = 0; b < 256; b++) {
          const uint32_t e = ~b & mask[j] & 0xff;
          uint32_t v = 0;
          for (int k = 0; k < 8; k++)
            if (e & (1u << k)) v ^= bit[k];
          tab[j][b] = v;
        }
      }
    };
    fill(v4, kV4Off, kV4Mask, kV4N);
    fill(v6, kV6Off, kV6Mask, kV6N);
    uint32_t c = ~0u;
    for (int k = 0; k < 8; k++) c = (c >> 8) ^ t[(c ^ 0xff) & 0xff];
    lrh_seed = ~c;
  }
};

// Built by the compiler: no init guard, no static initialisation order.
constexpr Tables kT;

constexpr size_t kV4Begun = Ipv4Header::kLen + UdpHeader::kLen + Bth::kLen;  // 40
constexpr size_t kV6Begun = Ipv6Header::kLen + UdpHeader::kLen + Bth::kLen;  // 60

// The seed that makes a CRC over the unmasked bytes from the IP header on the
// ICRC, and the length of IP + UDP + BTH; 0 if `in` is not an IPv4 packet with
// a 20-byte header or an IPv6 packet holding at least IP + UDP + BTH.
// (Written out: the loads are independent and the XORs a tree, so the seed is
// ready about one table load after the header bytes.)
inline size_t FastSeed(const uint8_t* p, size_t len, uint32_t* seed) {
  if (len >= kV4Begun && p[0] == 0x45) {
    static_assert(Tables::kV4Off[0] == 1 && Tables::kV4Off[1] == 8 && Tables::kV4Off[2] == 10 &&
                  Tables::kV4Off[3] == 11 && Tables::kV4Off[4] == 26 && Tables::kV4Off[5] == 27 &&
                  Tables::kV4Off[6] == 32);
    const auto& t = kT.v4;
    *seed = ((kT.lrh_seed ^ t[0][p[1]]) ^ (t[1][p[8]] ^ t[2][p[10]])) ^
            ((t[3][p[11]] ^ t[4][p[26]]) ^ (t[5][p[27]] ^ t[6][p[32]]));
    return kV4Begun;
  }
  if (len >= kV6Begun && (p[0] >> 4) == 6) {
    static_assert(Tables::kV6Off[0] == 0 && Tables::kV6Off[1] == 1 && Tables::kV6Off[2] == 2 &&
                  Tables::kV6Off[3] == 3 && Tables::kV6Off[4] == 7 && Tables::kV6Off[5] == 46 &&
                  Tables::kV6Off[6] == 47 && Tables::kV6Off[7] == 52);
    const auto& t = kT.v6;
    *seed = ((kT.lrh_seed ^ t[0][p[0]]) ^ (t[1][p[1]] ^ t[2][p[2]])) ^
            ((t[3][p[3]] ^ t[4][p[7]]) ^ (t[5][p[46]] ^ t[6][p[47]])) ^ t[7][p[52]];
    return kV6Begun;
  }
  return 0;
}

// The general case (IPv4 with options): the first IP + UDP + BTH bytes copied
// and masked. Returns their length, or 0 if the span is not IPv4/IPv6 or too short.
size_t CopyMasked(ByteSpan in, uint8_t* buf) {
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
  std::memcpy(buf, in.data(), n);
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

}  // namespace

uint32_t Crc32(uint32_t seed, ByteSpan data) {
  return crc32_gzip_refl(seed, data.data(), data.size());
}

bool Icrc::Begin(ByteSpan in) {
  uint32_t seed;
  begun_ = FastSeed(in.data(), in.size(), &seed);
  if (begun_) {
    crc_ = crc32_gzip_refl(seed, in.data(), begun_);
    return true;
  }
  uint8_t buf[kMaxMasked];
  begun_ = CopyMasked(in, buf);
  if (begun_ == 0) return false;
  crc_ = crc32_gzip_refl(kT.lrh_seed, buf, begun_);
  return true;
}

bool Icrc::BeginAll(ByteSpan in) {
  uint32_t seed;
  if (FastSeed(in.data(), in.size(), &seed)) {
    begun_ = in.size();
    crc_ = crc32_gzip_refl(seed, in.data(), in.size());
    return true;
  }
  if (!Begin(in)) return false;
  Update(in.subspan(begun_));
  begun_ = in.size();
  return true;
}

void Icrc::Update(ByteSpan more) { crc_ = crc32_gzip_refl(crc_, more.data(), more.size()); }

uint32_t ComputeIcrc(ByteSpan l3, bool* ok) {
  uint32_t seed;
  if (FastSeed(l3.data(), l3.size(), &seed)) {  // one pass over the bytes where they lie
    if (ok) *ok = true;
    return crc32_gzip_refl(seed, l3.data(), l3.size());
  }
  Icrc c;
  const bool good = c.BeginAll(l3);
  if (ok) *ok = good;
  return good ? c.Value() : 0;
}

}  // namespace roce::wire
