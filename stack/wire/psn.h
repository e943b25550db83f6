// SPDX-License-Identifier: MIT
// 24-bit packet sequence number arithmetic (IBTA §9.7.1): the PSN space is a
// circle of 2^24; "a before b" means b is within the next 2^23 PSNs after a.
#pragma once

#include <cstdint>

namespace roce::wire {

inline constexpr uint32_t kPsnMask = 0x00FFFFFF;
inline constexpr uint32_t kPsnHalf = 0x00800000;

inline constexpr uint32_t PsnAdd(uint32_t psn, int64_t n) {
  return static_cast<uint32_t>(static_cast<int64_t>(psn) + n) & kPsnMask;
}

// Signed distance b - a in (-2^23, 2^23]: positive when b is after a.
inline constexpr int32_t PsnDiff(uint32_t b, uint32_t a) {
  uint32_t d = (b - a) & kPsnMask;
  return d > kPsnHalf ? static_cast<int32_t>(d) - static_cast<int32_t>(kPsnMask + 1)
                      : static_cast<int32_t>(d);
}

inline constexpr bool PsnLess(uint32_t a, uint32_t b) { return PsnDiff(b, a) > 0; }
inline constexpr bool PsnLessEq(uint32_t a, uint32_t b) { return PsnDiff(b, a) >= 0; }

}  // namespace roce::wire
