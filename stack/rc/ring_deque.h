// SPDX-License-Identifier: MIT
// A double-ended queue over one power-of-two ring: what std::deque does for
// the RC core's queues, without allocating a block as the ends cycle round.
// Reserve() once for the expected depth; push_back past it doubles the ring
// (an allocation, never a loss). Indices are positions from the front.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace roce::rc {

template <typename T>
class RingDeque {
 public:
  // Capacity for at least n elements (a power of two); keeps the contents.
  void Reserve(size_t n) {
    const size_t c = std::bit_ceil(n);  // 1 for 0;
    if (c > buf_.size()) Regrow(c);
  }
  size_t size() const { return static_cast<size_t>(tail_ - head_); }
  bool empty() const { return tail_ == head_; }
  size_t capacity() const { return buf_.size(); }
  T& operator[](size_t i) { return buf_[(head_ + i) & mask_]; }
  const T& operator[](size_t i) const { return buf_[(head_ + i) & mask_]; }
  T& front() { return (*this)[0]; }
  T& back() { return (*this)[size() - 1]; }
  void push_back(const T& v) {
    if (size() == buf_.size()) Regrow(buf_.empty() ? 8 : buf_.size() * 2);
    buf_[tail_++ & mask_] = v;
  }
  void pop_front() { head_++; }
  void clear() { head_ = tail_ = 0; }
  // Inserts v before position i (0 <= i <= size()): later elements move back.
  void insert(size_t i, const T& v) {
    push_back(v);
    for (size_t j = size() - 1; j > i; j--) (*this)[j] = std::move((*this)[j - 1]);
    (*this)[i] = v;
  }
  // Removes the element at position i (0 <= i < size()): later ones move up.
  void erase(size_t i) {
    for (size_t j = i; j + 1 < size(); j++) (*this)[j] = std::move((*this)[j + 1]);
    tail_--;
  }

 private:
  void Regrow(size_t c) {
    std::vector<T> b(c);
    for (size_t i = 0; i < size(); i++) b[i] = std::move((*this)[i]);
    tail_ = size();
    head_ = 0;
    buf_ = std::move(b);
    mask_ = c - 1;
  }
  std::vector<T> buf_;
  uint64_t head_ = 0, tail_ = 0, mask_ = 0;
};

}  // namespace roce::rc
