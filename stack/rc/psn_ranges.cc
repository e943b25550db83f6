// SPDX-License-Identifier: MIT
// PsnRanges' run insertion and shifting (psn_ranges.h).
#include "stack/rc/psn_ranges.h"

namespace roce::rc {

bool PsnRanges::Set(uint32_t i) {
  uint32_t r = 0;
  while (r < n_ && b_[r] < i) r++;  // first run ending at or after i
  if (r < n_ && i >= a_[r] && i < b_[r]) return true;
  if (r < n_ && b_[r] == i) {  // extends run r at its end
    b_[r]++;
    if (r + 1 < n_ && a_[r + 1] == b_[r]) {  // and joins the next
      b_[r] = b_[r + 1];
      for (uint32_t k = r + 1; k + 1 < n_; k++) {
        a_[k] = a_[k + 1];
        b_[k] = b_[k + 1];
      }
      n_--;
    }
    return true;
  }
  if (r < n_ && a_[r] == i + 1) {  // extends run r at its start
    a_[r] = i;
    return true;
  }
  if (n_ == kRanges) return false;
  for (uint32_t k = n_; k > r; k--) {
    a_[k] = a_[k - 1];
    b_[k] = b_[k - 1];
  }
  a_[r] = i;
  b_[r] = i + 1;
  n_++;
  return true;
}

void PsnRanges::Shift(uint32_t n) {
  uint32_t out = 0;
  for (uint32_t r = 0; r < n_; r++) {
    if (b_[r] <= n) continue;
    a_[out] = a_[r] > n ? a_[r] - n : 0;
    b_[out] = b_[r] - n;
    out++;
  }
  n_ = out;
}

}  // namespace roce::rc
