// SPDX-License-Identifier: MIT
// Big-endian loads and stores on raw bytes. Everything on the wire is
// network order; these helpers are the only place wire/ converts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace roce::wire {

using ByteSpan = std::span<const uint8_t>;
using MutByteSpan = std::span<uint8_t>;

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ || __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
constexpr bool kLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
constexpr uint16_t be16(uint16_t v) { return kLittleEndian ? __builtin_bswap16(v) : v; }
constexpr uint32_t be32(uint32_t v) { return kLittleEndian ? __builtin_bswap32(v) : v; }
constexpr uint64_t be64(uint64_t v) { return kLittleEndian ? __builtin_bswap64(v) : v; }
constexpr uint32_t le32(uint32_t v) { return kLittleEndian ? v : __builtin_bswap32(v); }

// memcpy + byte swap: one load or store each (the compiler merges byte-wise
// shifts into one access only for some of these patterns; these run for
// every header field of every packet).
inline uint16_t Load16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return be16(v);
}
inline uint32_t Load24(const uint8_t* p) { return (uint32_t{Load16(p)} << 8) | p[2]; }
inline uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return be32(v);
}
inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return be64(v);
}
inline uint32_t Load32Le(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return le32(v);
}

inline void Store16(uint8_t* p, uint16_t v) {
  v = be16(v);
  std::memcpy(p, &v, 2);
}
inline void Store24(uint8_t* p, uint32_t v) {
  Store16(p, static_cast<uint16_t>(v >> 8));
  p[2] = static_cast<uint8_t>(v);
}
inline void Store32(uint8_t* p, uint32_t v) {
  v = be32(v);
  std::memcpy(p, &v, 4);
}
inline void Store64(uint8_t* p, uint64_t v) {
  v = be64(v);
  std::memcpy(p, &v, 8);
}
inline void Store32Le(uint8_t* p, uint32_t v) {
  v = le32(v);
  std::memcpy(p, &v, 4);
}

// memcpy for the few bytes of an inline payload: up to 16 bytes in two
// overlapping loads and stores, no call (a variable-length memcpy is a call
// through the PLT to libc's; two of them per 8 B inline Write were ~1.3% of
// the split writer's time); longer, memcpy.
inline void CopySmall(uint8_t* d, const uint8_t* s, size_t n) {
  if (n >= 8 && n <= 16) {
    uint64_t a, b;
    std::memcpy(&a, s, 8);
    std::memcpy(&b, s + n - 8, 8);
    std::memcpy(d, &a, 8);
    std::memcpy(d + n - 8, &b, 8);
  } else if (n >= 4 && n < 8) {
    uint32_t a, b;
    std::memcpy(&a, s, 4);
    std::memcpy(&b, s + n - 4, 4);
    std::memcpy(d, &a, 4);
    std::memcpy(d + n - 4, &b, 4);
  } else if (n < 4) {
    for (size_t i = 0; i < n; i++) d[i] = s[i];
  } else {
    std::memcpy(d, s, n);
  }
}

}  // namespace roce::wire
