#include "stack/mem/place.h"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace roce::mem {

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

#else  // not x86-64: every byte a release store (ascending, ordered)

void PlaceInOrder(void* dst, const void* src, size_t len) {
  auto* d = static_cast<uint8_t*>(dst);
  auto* s = static_cast<const uint8_t*>(src);
  for (size_t i = 0; i < len; i++) __atomic_store_n(d + i, s[i], __ATOMIC_RELEASE);
}

#endif

}  // namespace roce::mem
