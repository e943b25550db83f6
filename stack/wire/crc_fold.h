// SPDX-License-Identifier: MIT
// CRC-32 (zlib's and the ICRC's polynomial, P = 0x104C11DB7, bit-reflected)
// by carry-less multiplication: the fold constants and the final reduction,
// shared by the ICRC (wire/icrc.cc) and the copy that computes the CRC of what
// it places (mem/place.cc). Header-only: constexpr constants and an inline
// function for callers compiled with PCLMULQDQ.
//
// Folding (Intel, "Fast CRC Computation for Generic Polynomials Using
// PCLMULQDQ"): a 128-bit lane D bits from where the fold ends is multiplied by
// x^(D+32) and x^(D-32) mod P (bit-reflected, shifted left by one), low and
// high qword respectively, and XOR-ed there. The constants are computed at
// compile time from P; the known D = 128 and D = 512 pairs check them.
#pragma once

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace roce::wire::crc_fold {

// x^n mod P, normal bit order.
constexpr uint32_t XPowModP(unsigned n) {
  uint64_t r = 1;
  for (unsigned i = 0; i < n; i++) {
    r <<= 1;
    if (r & 0x100000000ull) r ^= 0x104C11DB7ull;
  }
  return static_cast<uint32_t>(r);
}

// x^n mod P, bit-reflected and shifted left by one: a PCLMULQDQ multiplier.
constexpr uint64_t FoldConst(unsigned n) {
  const uint32_t v = XPowModP(n);
  uint32_t r = 0;
  for (int i = 0; i < 32; i++)
    if ((v >> i) & 1) r |= 1u << (31 - i);
  return uint64_t{r} << 1;
}

struct FoldK {
  uint64_t lo, hi;  // multiply a lane's low (earlier) and high qword
};
// The pair that folds a 128-bit lane across `bits` bits (bits >= 64).
constexpr FoldK FoldAcross(unsigned bits) { return {FoldConst(bits + 32), FoldConst(bits - 32)}; }

constexpr uint64_t kR5 = FoldConst(64);    // 64 -> 32 bits
constexpr uint64_t kPoly33 = 0x1db710641;  // P, reflected
constexpr uint64_t kMu33 = 0x1f7011641;    // x^64 / P, reflected

static_assert(FoldAcross(128).lo == 0x1751997d0 && FoldAcross(128).hi == 0x0ccaa009e);
static_assert(FoldAcross(512).lo == 0x154442bd4 && FoldAcross(512).hi == 0x1c6e41596);
static_assert(kR5 == 0x163cd6124);

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
// The CRC of a folded 128-bit remainder: 128 -> 64 -> 32 bits, then Barrett
// reduction modulo P; returns the final (complemented) CRC. Inlined into its
// caller, so it takes the caller's encoding (legacy SSE or VEX).
__attribute__((target("pclmul,sse4.1"), always_inline)) inline uint32_t Reduce128(__m128i x) {
  const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
  x = _mm_xor_si128(
      _mm_clmulepi64_si128(x, _mm_set_epi64x(static_cast<long long>(FoldAcross(128).hi), 0), 0x10),
      _mm_srli_si128(x, 8));
  x = _mm_xor_si128(
      _mm_clmulepi64_si128(_mm_and_si128(x, mask32), _mm_set_epi64x(0, static_cast<long long>(kR5)), 0x00),
      _mm_srli_si128(x, 4));
  const __m128i pu = _mm_set_epi64x(static_cast<long long>(kMu33), static_cast<long long>(kPoly33));
  __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x, mask32), pu, 0x10);
  t = _mm_clmulepi64_si128(_mm_and_si128(t, mask32), pu, 0x00);
  return ~static_cast<uint32_t>(_mm_extract_epi32(_mm_xor_si128(t, x), 1));
}
#endif

}  // namespace roce::wire::crc_fold
