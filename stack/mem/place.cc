// SPDX-License-Identifier: MIT
#include "stack/mem/place.h"

#include <isa-l/crc.h>

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "stack/wire/crc_fold.h"

namespace roce::mem {

namespace {
// PlaceGatherCrc32 where the pieces do not take the one-stream fold.
uint32_t GatherPieceByPiece(uint8_t* d, const Piece* pieces, size_t n, uint32_t crc) {
  for (size_t i = 0; i < n; i++) {
    crc = PlaceInOrderCrc32(d, pieces[i].p, pieces[i].len, crc);
    d += pieces[i].len;
  }
  return crc;
}
}  // namespace

#if defined(__x86_64__)

namespace {

// One store instruction each, emitted in program order (volatile asm is
// never reordered against other volatile asm), naturally aligned by the
// callers: none crosses a cache line.
inline void St1(uint8_t* d, const uint8_t* s) {
  asm volatile("movb %1, %0" : "=m"(*d) : "q"(*s));
}
inline void St2(uint8_t* d, const uint8_t* s) {
  uint16_t v;
  std::memcpy(&v, s, 2);
  asm volatile("movw %1, %0" : "=m"(*reinterpret_cast<uint16_t*>(d)) : "r"(v));
}
inline void St4(uint8_t* d, const uint8_t* s) {
  uint32_t v;
  std::memcpy(&v, s, 4);
  asm volatile("movl %1, %0" : "=m"(*reinterpret_cast<uint32_t*>(d)) : "r"(v));
}
inline void St8(uint8_t* d, const uint8_t* s) {
  uint64_t v;
  std::memcpy(&v, s, 8);
  asm volatile("movq %1, %0" : "=m"(*reinterpret_cast<uint64_t*>(d)) : "r"(v));
}
inline void St16(uint8_t* d, const uint8_t* s) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
  asm volatile("movdqa %1, %0" : "=m"(*reinterpret_cast<__m128i*>(d)) : "x"(v));
}

inline void Tail(uint8_t* d, const uint8_t* s, size_t n) {
  // d is 16-byte aligned: largest pieces first keeps each one aligned.
  if (n & 8) { St8(d, s); d += 8; s += 8; }
  if (n & 4) { St4(d, s); d += 4; s += 4; }
  if (n & 2) { St2(d, s); d += 2; s += 2; }
  if (n & 1) St1(d, s);
}

// Bytes [0, n) of d, n < 16, ascending, each store naturally aligned given
// that d's alignment is at least that of the remaining length's pieces
// (head: d advances to 16-byte alignment; tail: d is 16-byte aligned).
inline void Head(uint8_t*& d, const uint8_t*& s, size_t n) {
  const auto a = reinterpret_cast<uintptr_t>(d);
  // Smallest pieces first: each brings d to the next alignment.
  if ((a & 1) && n >= 1) { St1(d, s); d += 1; s += 1; n -= 1; }
  if ((reinterpret_cast<uintptr_t>(d) & 2) && n >= 2) { St2(d, s); d += 2; s += 2; n -= 2; }
  if ((reinterpret_cast<uintptr_t>(d) & 4) && n >= 4) { St4(d, s); d += 4; s += 4; n -= 4; }
  if ((reinterpret_cast<uintptr_t>(d) & 8) && n >= 8) { St8(d, s); d += 8; s += 8; n -= 8; }
  // Whatever is left is shorter than the piece that would have aligned d
  // further: aligned pieces if d is 16-byte aligned (Tail), else bytes.
  if ((reinterpret_cast<uintptr_t>(d) & 15) == 0) {
    Tail(d, s, n);
    return;
  }
  while (n) { St1(d, s); d++; s++; n--; }
}


#if defined(__GNUC__)
__attribute__((target("avx2"))) void Body32(uint8_t* d, const uint8_t* s, size_t n) {
  // d is 32-byte aligned, n a multiple of 32. Four loads, then four stores
  // in address order.
  size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32));
    const __m256i v2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 64));
    const __m256i v3 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 96));
    asm volatile("vmovdqa %1, %0" : "=m"(*reinterpret_cast<__m256i*>(d + i)) : "x"(v0));
    asm volatile("vmovdqa %1, %0" : "=m"(*reinterpret_cast<__m256i*>(d + i + 32)) : "x"(v1));
    asm volatile("vmovdqa %1, %0" : "=m"(*reinterpret_cast<__m256i*>(d + i + 64)) : "x"(v2));
    asm volatile("vmovdqa %1, %0" : "=m"(*reinterpret_cast<__m256i*>(d + i + 96)) : "x"(v3));
  }
  for (; i < n; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    asm volatile("vmovdqa %1, %0" : "=m"(*reinterpret_cast<__m256i*>(d + i)) : "x"(v));
  }
  _mm256_zeroupper();
}
const bool kAvx2 = [] {
  __builtin_cpu_init();  // (may run before libgcc's own initialiser)
  return __builtin_cpu_supports("avx2") != 0;
}();
#else
constexpr bool kAvx2 = false;
void Body32(uint8_t*, const uint8_t*, size_t) {}
#endif

}  // namespace

void PlaceInOrder(void* dst, const void* src, size_t len) {
  auto* d = static_cast<uint8_t*>(dst);
  auto* s = static_cast<const uint8_t*>(src);
  const size_t to16 = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
  if (len < to16 + 16) {  // short: never reaches a whole aligned 16 bytes
    Head(d, s, len);
    return;
  }
  Head(d, s, to16);
  len -= to16;
  if (kAvx2 && len >= 64) {
    if (reinterpret_cast<uintptr_t>(d) & 16) {  // to 32-byte alignment
      St16(d, s);
      d += 16;
      s += 16;
      len -= 16;
    }
    const size_t body = len & ~size_t{31};
    Body32(d, s, body);
    d += body;
    s += body;
    len -= body;
  }
  for (; len >= 16; len -= 16, d += 16, s += 16) St16(d, s);
  Tail(d, s, len);
}


namespace {

// ---- PlaceInOrderCrc32: the copy and the CRC in one pass ----------------------------------------
//
// The CRC folds the source as 128-bit lanes of 64-byte blocks (Intel, "Fast
// CRC Computation for Generic Polynomials Using PCLMULQDQ", with VPCLMULQDQ's
// four lanes per instruction): a lane D bits from where the fold ends is
// multiplied by x^(D+32) and x^(D-32) mod P (bit-reflected, shifted left by
// one) and XOR-ed there. Four accumulators take 256 bytes per turn; each
// block loaded is stored as two aligned 32-byte halves, in address order, so
// the destination sees what PlaceInOrder would give it. The constants and the
// final reduction are the ICRC's (stack/wire/crc_fold.h).
using wire::crc_fold::FoldAcross;
using wire::crc_fold::FoldK;
constexpr FoldK kF128 = FoldAcross(128), kF256 = FoldAcross(256), kF384 = FoldAcross(384),
                kF512 = FoldAcross(512), kF1024 = FoldAcross(1024), kF1536 = FoldAcross(1536),
                kF2048 = FoldAcross(2048);

#if defined(__GNUC__)
// GCC 12's _mm512_castsi512_si256 passes an undefined vector to the builtin
// it is made of, and -Wuninitialized says so at every use.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define ROCE_ZMM __attribute__((target("avx512f,avx512vl,avx512bw,avx2,vpclmulqdq,pclmul,sse4.1")))

ROCE_ZMM inline __m512i K4(FoldK k) {
  const auto lo = static_cast<long long>(k.lo), hi = static_cast<long long>(k.hi);
  return _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo);
}
// x folded across the distance k was built for, XOR-ed with v.
ROCE_ZMM inline __m512i Fold3(__m512i x, __m512i k, __m512i v) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11), v,
                                   0x96);
}
ROCE_ZMM inline __m512i LoadStore(uint8_t* d, const uint8_t* s) {
  const __m512i v = _mm512_loadu_si512(s);
  const __m256i lo = _mm512_castsi512_si256(v), hi = _mm512_extracti64x4_epi64(v, 1);
  asm volatile("vmovdqa %1, %0" : "=m"(*reinterpret_cast<__m256i*>(d)) : "v"(lo));
  asm volatile("vmovdqa %1, %0" : "=m"(*reinterpret_cast<__m256i*>(d + 32)) : "v"(hi));
  return v;
}

// `nblk` >= 4 blocks of 64 bytes from s to d (32-byte aligned); returns
// crc32(crc, s, 64 * nblk).
ROCE_ZMM __attribute__((noinline)) uint32_t FoldCopy(uint8_t* d, const uint8_t* s, size_t nblk, uint32_t crc) {
  __m512i a0 = LoadStore(d, s), a1 = LoadStore(d + 64, s + 64), a2 = LoadStore(d + 128, s + 128),
          a3 = LoadStore(d + 192, s + 192);
  a0 = _mm512_xor_si512(a0, _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(~crc))));
  size_t i = 4;
  const __m512i k2048 = K4(kF2048);
  for (; i + 4 <= nblk; i += 4) {
    const size_t o = 64 * i;
    a0 = Fold3(a0, k2048, LoadStore(d + o, s + o));
    a1 = Fold3(a1, k2048, LoadStore(d + o + 64, s + o + 64));
    a2 = Fold3(a2, k2048, LoadStore(d + o + 128, s + o + 128));
    a3 = Fold3(a3, k2048, LoadStore(d + o + 192, s + o + 192));
  }
  __m512i x = Fold3(a0, K4(kF1536), a3);
  x = Fold3(a1, K4(kF1024), x);
  x = Fold3(a2, K4(kF512), x);
  const __m512i k512 = K4(kF512);
  for (; i < nblk; i++) x = Fold3(x, k512, LoadStore(d + 64 * i, s + 64 * i));
  // Four lanes to one: lane j across (3 - j) * 128 bits, lane 3 as it is.
  const __m512i kl = _mm512_set_epi64(0, 0, static_cast<long long>(kF128.hi), static_cast<long long>(kF128.lo),
                                      static_cast<long long>(kF256.hi), static_cast<long long>(kF256.lo),
                                      static_cast<long long>(kF384.hi), static_cast<long long>(kF384.lo));
  x = Fold3(x, kl, _mm512_maskz_mov_epi64(0xC0, x));
  const __m256i h = _mm256_xor_si256(_mm512_castsi512_si256(x), _mm512_extracti64x4_epi64(x, 1));
  return wire::crc_fold::Reduce128(_mm_xor_si128(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
}

// zlib's crc32(crc, s, n) of a span too short for the block fold (the heads
// and tails around FoldCopy's blocks: a destination off 32-byte alignment, a
// length that is no multiple of 64, a payload that a NIC's segment boundary
// cuts) without a call into ISA-L, whose entry and dispatch cost ~10 ns for a
// few bytes. A span held as one 16-byte block with zeros before it (a zero
// register over leading zeros stays zero) reduces as the fold's remainder
// does; 16-byte blocks fold across 128 bits; a last partial block of r bytes
// shifts the remainder on by r bytes (its first r bytes folded across 128
// bits onto the block of its other bytes and the r new ones). Bytes are
// loaded by masked loads or inside the span: nothing past it is read.
// (Under 4 bytes the seed would reach past the data: a byte table.)
struct ByteTable {
  uint32_t t[256] = {};
  constexpr ByteTable() {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
      t[i] = c;
    }
  }
};
constexpr ByteTable kByteTable;
// pshufb indices: loaded at m + 16 - k, a block moved up by k bytes (zeros
// below); at d + k, moved down by k bytes (zeros above).
struct Shifts {
  alignas(16) uint8_t m[32] = {};
  alignas(16) uint8_t d[32] = {};
  constexpr Shifts() {
    for (int i = 0; i < 16; i++) {
      m[i] = 0x80;
      m[16 + i] = static_cast<uint8_t>(i);
      d[i] = static_cast<uint8_t>(i);
      d[16 + i] = 0x80;
    }
  }
};
constexpr Shifts kShifts;

ROCE_ZMM inline __m128i Load16(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
// x folded across 128 bits (k: kF128's pair), XOR-ed with v.
ROCE_ZMM inline __m128i Fold128(__m128i x, __m128i k, __m128i v) {
  return _mm_ternarylogic_epi64(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11), v, 0x96);
}

ROCE_ZMM uint32_t ShortCrc(uint32_t crc, const uint8_t* s, size_t n) {
  if (n < 4) {
    uint32_t c = ~crc;
    for (size_t i = 0; i < n; i++) c = kByteTable.t[(c ^ s[i]) & 0xFF] ^ (c >> 8);
    return ~c;
  }
  const __m128i seed = _mm_cvtsi32_si128(static_cast<int>(~crc));
  if (n < 16) {
    const __m128i v = _mm_xor_si128(_mm_maskz_loadu_epi8(static_cast<__mmask16>((1u << n) - 1), s), seed);
    return wire::crc_fold::Reduce128(_mm_shuffle_epi8(v, Load16(kShifts.m + n)));
  }
  const __m128i k = _mm_set_epi64x(static_cast<long long>(kF128.hi), static_cast<long long>(kF128.lo));
  __m128i x = _mm_xor_si128(Load16(s), seed);
  size_t i = 16;
  for (; i + 16 <= n; i += 16) x = Fold128(x, k, Load16(s + i));
  if (const size_t r = n - i) {
    // The span's last 16 bytes hold the r new ones at the top.
    const __m128i last = _mm_maskz_mov_epi8(static_cast<__mmask16>(0xFFFFu << (16 - r)), Load16(s + n - 16));
    x = Fold128(_mm_shuffle_epi8(x, Load16(kShifts.m + r)), k,
                _mm_or_si128(_mm_shuffle_epi8(x, Load16(kShifts.d + r)), last));
  }
  return wire::crc_fold::Reduce128(x);
}

// The next 64 bytes of a run of pieces: where they lie when one piece holds
// them, else assembled in buf (a block a piece boundary cuts).
struct PieceCursor {
  const Piece* p;
  size_t i = 0, o = 0;
  const uint8_t* Next(uint8_t* buf, size_t want) {
    const size_t left = p[i].len - o;
    if (left >= want) {
      const uint8_t* at = static_cast<const uint8_t*>(p[i].p) + o;
      o += want;
      if (o == p[i].len) i++, o = 0;
      return at;
    }
    for (size_t got = 0; got < want;) {
      const size_t take = std::min(want - got, p[i].len - o);
      std::memcpy(buf + got, static_cast<const uint8_t*>(p[i].p) + o, take);
      got += take;
      o += take;
      if (o == p[i].len) i++, o = 0;
    }
    return buf;
  }
  // Whether the current piece holds the next `want` bytes.
  bool Holds(size_t want) const { return p[i].len - o >= want; }
};

// PlaceInOrderCrc32 of pieces (none empty; `len` bytes in all, >= 256 and
// holding nblk = len / 64 >= 4 blocks) placed one after another from d
// (32-byte aligned): FoldCopy's fold, run through the pieces as one stream —
// a block that straddles two pieces is assembled on the stack first — then
// the tail of len % 64 bytes folded 16 bytes at a time and shifted on as
// ShortCrc does. One reduction to 32 bits in all (per piece, each a head, a
// tail and a reduction on the CRC's critical path, ~16 ns a piece of a
// 4 KB payload a NIC's segments cut).
ROCE_ZMM __attribute__((noinline)) uint32_t FoldGather(uint8_t* d, const Piece* pieces, size_t len, uint32_t crc) {
  alignas(64) uint8_t buf[64];
  PieceCursor c{pieces};
  const size_t nblk = len / 64;
  __m512i a0 = LoadStore(d, c.Next(buf, 64));
  __m512i a1 = LoadStore(d + 64, c.Next(buf, 64));
  __m512i a2 = LoadStore(d + 128, c.Next(buf, 64));
  __m512i a3 = LoadStore(d + 192, c.Next(buf, 64));
  a0 = _mm512_xor_si512(a0, _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(~crc))));
  size_t i = 4;
  const __m512i k2048 = K4(kF2048);
  for (; i + 4 <= nblk; i += 4) {
    const size_t o = 64 * i;
    if (c.Holds(256)) {  // the common case: four blocks inside one piece
      const uint8_t* s = c.Next(buf, 256);
      a0 = Fold3(a0, k2048, LoadStore(d + o, s));
      a1 = Fold3(a1, k2048, LoadStore(d + o + 64, s + 64));
      a2 = Fold3(a2, k2048, LoadStore(d + o + 128, s + 128));
      a3 = Fold3(a3, k2048, LoadStore(d + o + 192, s + 192));
    } else {
      a0 = Fold3(a0, k2048, LoadStore(d + o, c.Next(buf, 64)));
      a1 = Fold3(a1, k2048, LoadStore(d + o + 64, c.Next(buf, 64)));
      a2 = Fold3(a2, k2048, LoadStore(d + o + 128, c.Next(buf, 64)));
      a3 = Fold3(a3, k2048, LoadStore(d + o + 192, c.Next(buf, 64)));
    }
  }
  __m512i x = Fold3(a0, K4(kF1536), a3);
  x = Fold3(a1, K4(kF1024), x);
  x = Fold3(a2, K4(kF512), x);
  const __m512i k512 = K4(kF512);
  for (; i < nblk; i++) x = Fold3(x, k512, LoadStore(d + 64 * i, c.Next(buf, 64)));
  const __m512i kl = _mm512_set_epi64(0, 0, static_cast<long long>(kF128.hi), static_cast<long long>(kF128.lo),
                                      static_cast<long long>(kF256.hi), static_cast<long long>(kF256.lo),
                                      static_cast<long long>(kF384.hi), static_cast<long long>(kF384.lo));
  x = Fold3(x, kl, _mm512_maskz_mov_epi64(0xC0, x));
  const __m256i h = _mm256_xor_si256(_mm512_castsi512_si256(x), _mm512_extracti64x4_epi64(x, 1));
  __m128i r = _mm_xor_si128(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  if (const size_t n = len - 64 * nblk) {
    // The tail, gathered at t + 16 (so that the last 16 bytes before its end
    // are inside t however short it is), placed, and folded on.
    alignas(16) uint8_t t[80];
    std::memcpy(t + 16, c.Next(buf, n), n);
    PlaceInOrder(d + 64 * nblk, t + 16, n);
    const __m128i k = _mm_set_epi64x(static_cast<long long>(kF128.hi), static_cast<long long>(kF128.lo));
    size_t j = 0;
    for (; j + 16 <= n; j += 16) r = Fold128(r, k, Load16(t + 16 + j));
    if (const size_t q = n - j) {
      const __m128i last = _mm_maskz_mov_epi8(static_cast<__mmask16>(0xFFFFu << (16 - q)), Load16(t + n));
      r = Fold128(_mm_shuffle_epi8(r, Load16(kShifts.m + q)), k, _mm_or_si128(_mm_shuffle_epi8(r, Load16(kShifts.d + q)), last));
    }
  }
  return wire::crc_fold::Reduce128(r);
}

#undef ROCE_ZMM
#pragma GCC diagnostic pop

__attribute__((target("avx"), noinline)) void ZeroUpper() { _mm256_zeroupper(); }

const bool kCpuOnePass = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx2") && __builtin_cpu_supports("vpclmulqdq") &&
         __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
}();
#else
constexpr bool kCpuOnePass = false;
uint32_t FoldCopy(uint8_t*, const uint8_t*, size_t, uint32_t crc) { return crc; }
uint32_t ShortCrc(uint32_t crc, const uint8_t*, size_t) { return crc; }
uint32_t FoldGather(uint8_t*, const Piece*, size_t, uint32_t crc) { return crc; }
void ZeroUpper() {}
#endif
bool g_one_pass = kCpuOnePass;

}  // namespace

uint32_t PlaceInOrderCrc32(void* dst, const void* src, size_t len, uint32_t crc) {
  auto* d = static_cast<uint8_t*>(dst);
  auto* s = static_cast<const uint8_t*>(src);
  if (g_one_pass && len < 64) {  // (a payload of a few bytes, a piece of a cut one)
    crc = ShortCrc(crc, s, len);
    ZeroUpper();
    PlaceInOrder(d, s, len);
    return crc;
  }
  if (!g_one_pass || len < kPlaceCrcOnePassMin) {
    crc = crc32_gzip_refl(crc, s, len);
    if (kAvx2) ZeroUpper();  // ISA-L's AVX-512 fold leaves the upper halves in use
    PlaceInOrder(d, s, len);
    return crc;
  }
  // A head and a tail of less than 64 bytes: ShortCrc and PlaceInOrder's
  // stores (they were ISA-L calls, ~10 ns each); the blocks between in one
  // pass, their stores 32-byte aligned. The head runs to 32-byte alignment of
  // d, or — where s and d are equally misaligned mod 32 — to s's cache line,
  // which aligns d too and keeps every 64-byte load inside one line (16 bytes
  // off: 0.87x the time of a 4 KB placement with split loads, rc_bench
  // BM_PlaceCrc32/16/16).
  const auto da = reinterpret_cast<uintptr_t>(d), sa = reinterpret_cast<uintptr_t>(s);
  const size_t head = ((sa - da) & 31) == 0 ? (64 - (sa & 63)) & 63 : (32 - (da & 31)) & 31;
  if (head) {
    crc = ShortCrc(crc, s, head);
    PlaceInOrder(d, s, head);
    d += head;
    s += head;
    len -= head;
  }
  const size_t nblk = len / 64;  // >= 7 (len >= 512, head < 64)
  crc = FoldCopy(d, s, nblk, crc);
  d += 64 * nblk;
  s += 64 * nblk;
  len -= 64 * nblk;
  if (len) crc = ShortCrc(crc, s, len);
  ZeroUpper();
  PlaceInOrder(d, s, len);
  return crc;
}

uint32_t PlaceGatherCrc32(void* dst, const Piece* pieces, size_t n, uint32_t crc) {
  auto* d = static_cast<uint8_t*>(dst);
  size_t len = 0, k = 0;
  Piece p[kPlaceGatherMax];
  for (size_t i = 0; i < n; i++) {
    if (pieces[i].len == 0) continue;
    if (k == kPlaceGatherMax) {
      k = 0;  // more pieces than the stream takes: piece by piece below
      break;
    }
    p[k++] = pieces[i];
    len += pieces[i].len;
  }
  if (g_one_pass && k > 0 && len >= kPlaceCrcOnePassMin && (reinterpret_cast<uintptr_t>(d) & 31) == 0) {
    crc = FoldGather(d, p, len, crc);
    ZeroUpper();
    return crc;
  }
  return GatherPieceByPiece(d, pieces, n, crc);
}

bool PlaceCrcOnePass() { return g_one_pass; }
bool SetPlaceCrcOnePass(bool on) {
  const bool was = g_one_pass;
  g_one_pass = on && kCpuOnePass;
  return was;
}

#else  // not x86-64: every byte a release store (ascending, ordered)

void PlaceInOrder(void* dst, const void* src, size_t len) {
  auto* d = static_cast<uint8_t*>(dst);
  auto* s = static_cast<const uint8_t*>(src);
  for (size_t i = 0; i < len; i++) __atomic_store_n(d + i, s[i], __ATOMIC_RELEASE);
}

uint32_t PlaceInOrderCrc32(void* dst, const void* src, size_t len, uint32_t crc) {
  crc = crc32_gzip_refl(crc, static_cast<const uint8_t*>(src), len);
  PlaceInOrder(dst, src, len);
  return crc;
}
uint32_t PlaceGatherCrc32(void* dst, const Piece* pieces, size_t n, uint32_t crc) {
  return GatherPieceByPiece(static_cast<uint8_t*>(dst), pieces, n, crc);
}
bool PlaceCrcOnePass() { return false; }
bool SetPlaceCrcOnePass(bool) { return false; }

#endif

}  // namespace roce::mem
