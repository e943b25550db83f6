// SPDX-License-Identifier: MIT
#include "stack/wire/icrc.h"

#include <isa-l/crc.h>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cstring>

#include "stack/wire/crc_fold.h"
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

#if defined(__GNUC__) && defined(__x86_64__)
// ---- PCLMULQDQ: the mask inside the fold -------------------------------------------------------
//
// The seed change above sits on the critical path of a short packet: the
// masked bytes are loaded, looked up and XOR-ed before the first byte is
// hashed (~10 cycles of a 64-byte packet's ~35). With carry-less multiplies
// the mask costs nothing: the CRC folds 16-byte blocks (Intel, "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ"), so the variant fields
// are set to ones with one OR per block as it is loaded, and the LRH's 8 bytes
// of ones become a constant XOR-ed into the first block.
//
// The packet (len >= 40) is hashed as 16-byte blocks from a zero state, with
// n = -len mod 16 zero bytes in front (leading zeros leave a zero CRC register
// at zero): block 0 is the first 16 bytes moved up by n, block k >= 1 is the
// 16 bytes at 16k - n. Each block is folded across the distance to the end in
// groups of four (independent multiplies, one fold of latency per 64 bytes),
// then 128 bits are reduced to 32 (Barrett).
//
// Fold constants and the final reduction: stack/wire/crc_fold.h. kFoldN folds
// a block across N bytes.
using crc_fold::FoldK;
constexpr FoldK kFold16 = crc_fold::FoldAcross(128);
constexpr FoldK kFold32 = crc_fold::FoldAcross(256);
constexpr FoldK kFold48 = crc_fold::FoldAcross(384);
constexpr FoldK kFold64 = crc_fold::FoldAcross(512);
static_assert(kFold32.lo == 0x0f1da05aa && kFold32.hi == 0x15a546366 && kFold48.lo == 0x03db1ecdc &&
              kFold48.hi == 0x174359406);

// The variant fields of IP + UDP + BTH as OR masks by offset from the IP
// header, then zeros (loaded at 16k - n for the blocks that hold any: k <= 2
// for IPv4, k <= 4 for IPv6, whose last one is at byte 52); and the initial
// CRC register (the complement of the CRC after the LRH's ones), XOR-ed into
// the first four bytes, which blocks 0 and 1 share when n > 12.
struct OrMask {
  alignas(16) uint8_t m[96] = {};
  alignas(16) uint8_t x[32] = {};
  constexpr OrMask(const uint8_t* off, const uint8_t* mask, size_t count) {
    for (size_t j = 0; j < count; j++) m[off[j]] = mask[j];
    for (int i = 0; i < 4; i++) x[i] = static_cast<uint8_t>(~kT.lrh_seed >> (8 * i));
  }
};
constexpr OrMask kV4OrMask(Tables::kV4Off, Tables::kV4Mask, Tables::kV4N);
constexpr OrMask kV6OrMask(Tables::kV6Off, Tables::kV6Mask, Tables::kV6N);
// pshufb indices moving a block up by n bytes (zeros below): load at 16 - n.
struct ShiftUp {
  alignas(16) uint8_t m[32] = {};
  constexpr ShiftUp() {
    for (int i = 0; i < 16; i++) m[i] = 0x80;
    for (int i = 0; i < 16; i++) m[16 + i] = static_cast<uint8_t>(i);
  }
};
constexpr ShiftUp kShiftUp;

#define ROCE_CLMUL __attribute__((target("pclmul,sse4.1"), always_inline)) inline

ROCE_CLMUL __m128i Fold(__m128i x, FoldK k) {
  const __m128i kk = _mm_set_epi64x(static_cast<long long>(k.hi), static_cast<long long>(k.lo));
  return _mm_xor_si128(_mm_clmulepi64_si128(x, kk, 0x00), _mm_clmulepi64_si128(x, kk, 0x11));
}
ROCE_CLMUL __m128i Load(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// len >= 40 (IPv4) or >= 60 (IPv6). Compiled twice (below): with legacy SSE
// encodings, and with VEX encodings for CPUs with AVX.
template <bool kV6>
ROCE_CLMUL uint32_t IcrcClmulBody(const uint8_t* p, size_t len) {
  const OrMask& mk = kV6 ? kV6OrMask : kV4OrMask;
  const size_t n = (0 - len) & 15;
  const size_t nb = (len + n) >> 4;  // >= 3 (IPv4), >= 4 (IPv6)
  const uint8_t* blk = p + 16 - n;  // block k >= 1 at blk + 16(k - 1)
  __m128i b0 = _mm_or_si128(Load(p), Load(mk.m));
  b0 = _mm_xor_si128(b0, Load(mk.x));
  b0 = _mm_shuffle_epi8(b0, Load(kShiftUp.m + 16 - n));
  const __m128i b1 = _mm_xor_si128(_mm_or_si128(Load(blk), Load(mk.m + 16 - n)), Load(mk.x + 16 - n));
  const __m128i b2 = _mm_or_si128(Load(blk + 16), Load(mk.m + 32 - n));
  __m128i x;
  size_t k;
  if (nb >= 4) {
    __m128i b3 = Load(blk + 32);
    if (kV6) b3 = _mm_or_si128(b3, Load(mk.m + 48 - n));
    x = _mm_xor_si128(_mm_xor_si128(Fold(b0, kFold48), Fold(b1, kFold32)),
                      _mm_xor_si128(Fold(b2, kFold16), b3));
    k = 4;
    if (kV6 && nb >= 5) {  // block 4 holds byte 52 (BTH byte 4) when n >= 12
      x = _mm_xor_si128(Fold(x, kFold16), _mm_or_si128(Load(blk + 48), Load(mk.m + 64 - n)));
      k = 5;
    }
  } else {
    x = _mm_xor_si128(_mm_xor_si128(Fold(b0, kFold32), Fold(b1, kFold16)), b2);
    k = 3;
  }
  for (; k + 4 <= nb; k += 4) {
    const uint8_t* b = blk + 16 * (k - 1);
    x = _mm_xor_si128(_mm_xor_si128(Fold(x, kFold64), Fold(Load(b), kFold48)),
                      _mm_xor_si128(Fold(Load(b + 16), kFold32),
                                    _mm_xor_si128(Fold(Load(b + 32), kFold16), Load(b + 48))));
  }
  const uint8_t* b = blk + 16 * (k - 1);
  switch (nb - k) {
    case 3:
      x = _mm_xor_si128(_mm_xor_si128(Fold(x, kFold48), Fold(Load(b), kFold32)),
                        _mm_xor_si128(Fold(Load(b + 16), kFold16), Load(b + 32)));
      break;
    case 2:
      x = _mm_xor_si128(_mm_xor_si128(Fold(x, kFold32), Fold(Load(b), kFold16)), Load(b + 16));
      break;
    case 1:
      x = _mm_xor_si128(Fold(x, kFold16), Load(b));
      break;
    default:
      break;
  }
  return crc_fold::Reduce128(x);
}
#undef ROCE_CLMUL

// Why two encodings. A legacy-SSE instruction executed while the upper halves
// of the vector registers are in use (XINUSE's YMM / ZMM_Hi256 state) pays a
// state-transition penalty on CPUs that have one, and ISA-L's AVX-512 fold
// (spans of 256 bytes on) returns in that state: it executes no VZEROUPPER.
// Measured on an AMD EPYC (Zen 4): a 64 B frame's ICRC took 6.6 ns with the
// state clean and 15 ns after one 4 KB ISA-L call (nd2_bench Icrc/64: x_raw
// 0.49, against ISA-L's own 64 B CRC, which is VEX-encoded). VEX-encoded
// 128-bit instructions pay nothing in either state.
template <bool kV6>
__attribute__((target("pclmul,sse4.1"))) uint32_t IcrcClmulSse(const uint8_t* p, size_t len) {
  return IcrcClmulBody<kV6>(p, len);
}
// Aligned to a cache line: where the link put it decided the 64 B ICRC's
// time on an Intel Xeon (identical code, three builds: 4.9 to 5.7 ns against
// ISA-L's 4.0); aligned, paired, 0.852x the time, longer frames and the 8 B
// Writes unchanged.
template <bool kV6>
__attribute__((target("pclmul,avx"), aligned(64))) uint32_t IcrcClmulAvx(const uint8_t* p, size_t len) {
  return IcrcClmulBody<kV6>(p, len);
}

// The short-frame code in use (IcrcCode, never kAuto): the best the CPU has,
// chosen at start-up; tests force each (SelectIcrcCode).
IcrcCode DetectCode() {
  __builtin_cpu_init();  // (may run before libgcc's own initialiser)
  if (!__builtin_cpu_supports("pclmul") || !__builtin_cpu_supports("sse4.1")) return IcrcCode::kSeedIsal;
  return __builtin_cpu_supports("avx") ? IcrcCode::kClmulAvx : IcrcCode::kClmulSse;
}
const IcrcCode kCpuCode = DetectCode();
const bool kAvx = __builtin_cpu_supports("avx") != 0;
IcrcCode g_code = kCpuCode;

template <bool kV6>
inline uint32_t IcrcClmul(const uint8_t* p, size_t len) {
  return g_code == IcrcCode::kClmulAvx ? IcrcClmulAvx<kV6>(p, len) : IcrcClmulSse<kV6>(p, len);
}

// Leaves the upper halves of the vector registers clean (see above), so that
// the rest of the data path — the compiler's baseline x86-64 code is legacy
// SSE — does not pay for ISA-L's last call. (Vector registers are not
// preserved across calls in this ABI: nothing of the caller's is lost.)
__attribute__((target("avx"), noinline)) void ZeroUpper() { _mm256_zeroupper(); }
void ClearUpper() {
  if (kAvx) ZeroUpper();
}
inline uint32_t IsalCrc(uint32_t seed, const uint8_t* p, size_t n) {
  const uint32_t c = crc32_gzip_refl(seed, p, n);
  ClearUpper();
  return c;
}
#else
constexpr IcrcCode kCpuCode = IcrcCode::kSeedIsal;
IcrcCode g_code = kCpuCode;
template <bool kV6>
uint32_t IcrcClmul(const uint8_t*, size_t) { return 0; }
void ClearUpper() {}
inline uint32_t IsalCrc(uint32_t seed, const uint8_t* p, size_t n) { return crc32_gzip_refl(seed, p, n); }
#endif

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

// IPv4 with a 20-byte header or IPv6, on a CPU with PCLMULQDQ, shorter than
// 256 bytes: where the seed change is a sizeable part of the cost. From 256
// bytes on, ISA-L's eight-way fold is ~20% faster than this four-way one
// (measured here: 1 KB 56 vs 73 ns) and the seed change is noise. Returns
// the bytes IcrcClmul needs at least (0: not for it).
constexpr size_t kClmulBelow = 256;
inline size_t ClmulKind(const uint8_t* p, size_t len) {
  if (g_code == IcrcCode::kSeedIsal || len >= kClmulBelow || len < kV4Begun) return 0;
  if (p[0] == 0x45) return kV4Begun;
  return (p[0] >> 4) == 6 && len >= kV6Begun ? kV6Begun : 0;
}
inline uint32_t Clmul(const uint8_t* p, size_t len, size_t kind) {
  return kind == kV4Begun ? IcrcClmul<false>(p, len) : IcrcClmul<true>(p, len);
}

constexpr size_t kMaxMasked = 60 + UdpHeader::kLen + Bth::kLen;

}  // namespace

bool SelectIcrcCode(IcrcCode c) {
  const IcrcCode want = c == IcrcCode::kAuto ? kCpuCode : c;
  if (want > kCpuCode) return false;  // the codes are in the order of what they need of the CPU
  g_code = want;
  return true;
}

void ClearUpperVectorState() { ClearUpper(); }

bool Icrc::Begin(ByteSpan in) {
  if (const size_t kind = ClmulKind(in.data(), in.size())) {
    begun_ = kind;
    crc_ = Clmul(in.data(), kind, kind);
    return true;
  }
  uint32_t seed;
  begun_ = FastSeed(in.data(), in.size(), &seed);
  if (begun_) {
    crc_ = IsalCrc(seed, in.data(), begun_);
    return true;
  }
  uint8_t buf[kMaxMasked];
  begun_ = CopyMasked(in, buf);
  if (begun_ == 0) return false;
  crc_ = IsalCrc(kT.lrh_seed, buf, begun_);
  return true;
}

bool Icrc::BeginAll(ByteSpan in) {
  if (const size_t kind = ClmulKind(in.data(), in.size())) {
    begun_ = in.size();
    crc_ = Clmul(in.data(), in.size(), kind);
    return true;
  }
  uint32_t seed;
  if (FastSeed(in.data(), in.size(), &seed)) {
    begun_ = in.size();
    crc_ = IsalCrc(seed, in.data(), in.size());
    return true;
  }
  if (!Begin(in)) return false;
  Update(in.subspan(begun_));
  begun_ = in.size();
  return true;
}

void Icrc::Update(ByteSpan more) { crc_ = IsalCrc(crc_, more.data(), more.size()); }
uint32_t Icrc::Extend(uint32_t value, ByteSpan more) {
  return more.empty() ? value : IsalCrc(value, more.data(), more.size());
}

uint32_t ComputeIcrc(ByteSpan l3, bool* ok) {
  if (const size_t kind = ClmulKind(l3.data(), l3.size())) {  // one pass, masked as it loads
    if (ok) *ok = true;
    return Clmul(l3.data(), l3.size(), kind);
  }
  uint32_t seed;
  if (FastSeed(l3.data(), l3.size(), &seed)) {  // one pass over the bytes where they lie
    if (ok) *ok = true;
    return IsalCrc(seed, l3.data(), l3.size());
  }
  Icrc c;
  const bool good = c.BeginAll(l3);
  if (ok) *ok = good;
  return good ? c.Value() : 0;
}

}  // namespace roce::wire
