// SPDX-License-Identifier: MIT
// Completion queue and receive queue (a QP's own, or shared: SRQ). Both are
// single-producer / single-consumer rings so the application thread (posting
// receives, polling completions) and the engine thread (consuming receives,
// pushing completions) can share them without locks; in inline mode both
// sides are the same thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "stack/rc/types.h"

namespace roce::rc {

class CompletionQueue {
 public:
  explicit CompletionQueue(uint32_t depth);
  // Producer (engine). Returns false when full (the completion is lost and counted).
  bool Push(const Completion& c);
  // Consumer (application). Returns the number written to out.
  uint32_t Poll(Completion* out, uint32_t max);
  // Consumer: f(const Completion&) on up to max queued completions where
  // they lie in the ring (no copy out), then their slots are freed. f must
  // not poll this queue. Returns how many.
  template <class F>
  uint32_t PollEach(uint32_t max, F&& f) {
    uint64_t h = head_.load(std::memory_order_relaxed);
    const uint64_t t = tail_.load(std::memory_order_acquire);
    uint32_t n = 0;
    for (; h != t && n < max; h++, n++) f(ring_[h & mask_]);
    head_.store(h, std::memory_order_release);
    return n;
  }
  uint32_t depth() const { return depth_; }
  uint32_t size() const {
    return static_cast<uint32_t>(tail_.load(std::memory_order_acquire) -
                                 head_.load(std::memory_order_acquire));
  }
  uint64_t overflows() const { return overflows_; }
  // Completions pushed since the queue was made (a Resize does not reset it).
  uint64_t pushed() const { return pushed_; }
  // Called by the producer after a push (ND2 Notify is built on it): after
  // every push while on_push_every is set, otherwise only after one that
  // is solicited or not successful. Both are the producer's (its lock).
  std::function<void(const Completion&)> on_push;
  bool on_push_every = true;
  // Called by the producer when a completion did not fit (ND2: the CQ overran).
  std::function<void(const Completion&)> on_overflow;
  // Changes the depth, keeping the queued completions (false: they do not
  // fit). Neither Push nor Poll may run meanwhile (ND2 Resize holds both sides).
  bool Resize(uint32_t depth);

 private:
  uint32_t depth_;
  std::vector<Completion> ring_;  // a power of two >= depth_: slots by mask
  uint64_t mask_;
  std::atomic<uint64_t> head_{0}, tail_{0};
  uint64_t overflows_ = 0;
  uint64_t pushed_ = 0;
};

struct RecvWqe {
  uint64_t context = 0;
  uint32_t num_sge = 0;
  uint64_t length = 0;  // sum of SGE lengths
  const Sge* sge = nullptr;
};

class ReceiveQueue {
 public:
  ReceiveQueue(uint32_t depth, uint32_t max_sge);
  // Producer (application).
  PostResult Post(const RecvWr& wr);
  // Consumer (engine): the oldest posted WQE, or nullptr.
  const RecvWqe* Front() const;
  void Pop();
  uint32_t size() const {
    return static_cast<uint32_t>(tail_.load(std::memory_order_acquire) -
                                 head_.load(std::memory_order_acquire));
  }
  uint32_t depth() const { return depth_; }
  uint32_t max_sge() const { return max_sge_; }
  // WQEs popped so far (any thread; unlike the ring indices, Resize keeps it).
  uint64_t taken() const { return taken_.load(std::memory_order_acquire); }
  // Called by the consumer after each Pop (ND2 SRQ Notify is built on it).
  std::function<void()> on_pop;
  // Changes the depth, keeping the posted WQEs in order (false: more are
  // posted than `depth`). Neither Post nor Front/Pop may run meanwhile (ND2
  // IND2SharedReceiveQueue::Modify holds both sides).
  bool Resize(uint32_t depth);

 private:
  uint32_t depth_, max_sge_;
  std::vector<RecvWqe> ring_;  // a power of two >= depth_: slots by mask
  std::vector<Sge> sges_;      // max_sge_ per slot
  uint64_t mask_;
  std::atomic<uint64_t> head_{0}, tail_{0};
  std::atomic<uint64_t> taken_{0};
};

}  // namespace roce::rc
