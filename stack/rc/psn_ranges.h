// SPDX-License-Identifier: MIT
// PsnRanges: which PSNs after a base have been seen, as a few disjoint runs
// (the requester's record of a Read's responses placed ahead of a missing
// one).
#pragma once

#include <cstdint>

namespace roce::rc {

// Which PSNs after a base have been seen (index 0 = base), as up to kRanges
// disjoint runs: a Read's responses that arrived ahead of a missing one,
// however far ahead (a 2 GiB Read has millions of responses; a loss or two
// splits them into a few runs).
class PsnRanges {
 public:
  static constexpr uint32_t kRanges = 32;
  bool Test(uint32_t i) const {
    for (uint32_t r = 0; r < n_; r++)
      if (i >= a_[r] && i < b_[r]) return true;
    return false;
  }
  // Marks i seen; false when that needs a run beyond kRanges (not marked).
  bool Set(uint32_t i);
  bool Any() const { return n_ != 0; }
  void Clear() { n_ = 0; }
  uint32_t Count() const {
    uint32_t c = 0;
    for (uint32_t r = 0; r < n_; r++) c += b_[r] - a_[r];
    return c;
  }
  // Number of seen indexes from `i` up before the first unseen one.
  uint32_t RunFrom(uint32_t i) const {
    for (uint32_t r = 0; r < n_; r++)
      if (i >= a_[r] && i < b_[r]) return b_[r] - i;
    return 0;
  }
  // The first seen index at or after i (0: none).
  uint32_t FirstFrom(uint32_t i) const {
    for (uint32_t r = 0; r < n_; r++)
      if (b_[r] > i) return a_[r] > i ? a_[r] : i;
    return 0;
  }
  // Number of seen indexes in [lo, hi).
  uint32_t CountIn(uint32_t lo, uint32_t hi) const {
    uint32_t c = 0;
    for (uint32_t r = 0; r < n_; r++) {
      const uint32_t a = a_[r] > lo ? a_[r] : lo, b = b_[r] < hi ? b_[r] : hi;
      if (a < b) c += b - a;
    }
    return c;
  }
  // Number of seen indexes just before `end` (the run that ends there; 0: none).
  uint32_t RunBefore(uint32_t end) const {
    for (uint32_t r = 0; r < n_; r++)
      if (a_[r] < end && end <= b_[r]) return end - a_[r];
    return 0;
  }
  // Where the last run starts from which on at least n indexes are seen (0: none).
  uint32_t StartOfLast(uint32_t n) const {
    uint32_t c = 0;
    for (uint32_t r = n_; r-- > 0;) {
      c += b_[r] - a_[r];
      if (c >= n) return a_[r];
    }
    return 0;
  }
  // Where the last run starts and ends (0, 0: none).
  uint32_t LastStart() const { return n_ ? a_[n_ - 1] : 0; }
  uint32_t LastEnd() const { return n_ ? b_[n_ - 1] : 0; }
  // Moves the base forward by n (index n becomes index 0).
  void Shift(uint32_t n);

 private:
  uint32_t n_ = 0;
  uint32_t a_[kRanges], b_[kRanges];  // runs [a, b), sorted, not touching
};

}  // namespace roce::rc
