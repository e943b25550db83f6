// SPDX-License-Identifier: MIT
// Posting from application threads to an engine that runs on its own thread
// (dedicated mode), without a lock the engine holds.
//
// SpscIndex: the indices of a single-producer / single-consumer ring of a
// power-of-two number of slots; the owner keeps the slots (whatever a request
// needs: a work request, its SGEs, inline bytes), writes slot Slot(i) in place
// after Reserve and hands it over with Publish; the consumer reads Peek's slot
// and frees it with Pop. Each side keeps a cached copy of the other side's
// index, so a side touches the other's cache line only when its copy says the
// ring looks full (producer) or empty (consumer).
//
// PostSource: something the engine drains at the start of every pass, with its
// lock held (Engine::AddPostSource). Whoever holds the engine lock is the
// consumer, so a caller that must put its request behind everything already
// posted (ND2's Bind, Flush, destruction) drains the ring itself under the lock.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace roce::engine {

class SpscIndex {
 public:
  // At least `min_slots` slots (rounded up to a power of two, at least 1).
  explicit SpscIndex(uint32_t min_slots = 1) : mask_(std::bit_ceil(min_slots ? min_slots : 1u) - 1) {}
  uint32_t slots() const { return static_cast<uint32_t>(mask_ + 1); }
  uint32_t Slot(uint64_t i) const { return static_cast<uint32_t>(i & mask_); }

  // Producer: the next free position, or false if the ring is full.
  bool Reserve(uint64_t* i) {
    const uint64_t t = tail_.load(std::memory_order_relaxed);
    if (t - head_cache_ > mask_) {
      head_cache_ = head_.load(std::memory_order_acquire);
      if (t - head_cache_ > mask_) return false;
    }
    *i = t;
    return true;
  }
  // Producer: the reserved slot is written; the consumer may take it.
  void Publish() { tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

  // Consumer: the oldest published position, or false if there is none.
  bool Peek(uint64_t* i) {
    const uint64_t h = head_.load(std::memory_order_relaxed);
    if (h == tail_cache_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (h == tail_cache_) return false;
    }
    *i = h;
    return true;
  }
  void Pop() { head_.store(head_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
  // Either side: nothing published and not taken.
  bool empty() const { return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire); }

 private:
  const uint64_t mask_;
  alignas(64) std::atomic<uint64_t> head_{0};  // consumer's
  uint64_t tail_cache_ = 0;                    // consumer's copy of tail_
  alignas(64) std::atomic<uint64_t> tail_{0};  // producer's
  uint64_t head_cache_ = 0;                    // producer's copy of head_
};

class PostSource {
 public:
  // Moves what was posted into the stack (engine lock held). Returns the
  // number of requests taken (work: the engine does not nap after it).
  virtual size_t DrainPosts() = 0;

 protected:
  ~PostSource() = default;
};

}  // namespace roce::engine
