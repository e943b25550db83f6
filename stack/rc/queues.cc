// SPDX-License-Identifier: MIT
#include "stack/rc/queues.h"

#include <algorithm>
#include <bit>

namespace roce::rc {

CompletionQueue::CompletionQueue(uint32_t depth)
    : depth_(std::max<uint32_t>(depth, 1)), ring_(std::bit_ceil(depth_)), mask_(ring_.size() - 1) {}

bool CompletionQueue::Push(const Completion& c) {
  const uint64_t t = tail_.load(std::memory_order_relaxed);
  if (t - head_.load(std::memory_order_acquire) >= depth_) {
    overflows_++;
    if (on_overflow) on_overflow(c);
    return false;
  }
  ring_[t & mask_] = c;
  tail_.store(t + 1, std::memory_order_release);
  pushed_++;
  if (on_push && (on_push_every || c.solicited || c.status != Status::kSuccess)) on_push(c);
  return true;
}

uint32_t CompletionQueue::Poll(Completion* out, uint32_t max) {
  return PollEach(max, [&out](const Completion& c) { *out++ = c; });
}

bool CompletionQueue::Resize(uint32_t depth) {
  depth = std::max<uint32_t>(depth, 1);
  const uint64_t h = head_.load(std::memory_order_relaxed), t = tail_.load(std::memory_order_relaxed);
  if (t - h > depth) return false;
  std::vector<Completion> fresh(std::bit_ceil(depth));
  for (uint64_t i = h; i != t; i++) fresh[i - h] = ring_[i & mask_];
  ring_ = std::move(fresh);
  depth_ = depth;
  mask_ = ring_.size() - 1;
  head_.store(0, std::memory_order_relaxed);
  tail_.store(t - h, std::memory_order_release);
  return true;
}

ReceiveQueue::ReceiveQueue(uint32_t depth, uint32_t max_sge)
    : depth_(std::max<uint32_t>(depth, 1)),
      max_sge_(std::max<uint32_t>(max_sge, 1)),
      ring_(std::bit_ceil(depth_)),
      sges_(ring_.size() * max_sge_),
      mask_(ring_.size() - 1) {}

PostResult ReceiveQueue::Post(const RecvWr& wr) {
  if (wr.num_sge > max_sge_) return PostResult::kTooManySge;
  if (wr.num_sge && !wr.sge) return PostResult::kInvalidParameter;
  const uint64_t t = tail_.load(std::memory_order_relaxed);
  if (t - head_.load(std::memory_order_acquire) >= depth_) return PostResult::kQueueFull;
  const size_t slot = t & mask_;
  RecvWqe& w = ring_[slot];
  Sge* dst = &sges_[slot * max_sge_];
  uint64_t len = 0;
  for (uint32_t i = 0; i < wr.num_sge; i++) {
    dst[i] = wr.sge[i];
    len += wr.sge[i].length;
  }
  w.context = wr.context;
  w.num_sge = wr.num_sge;
  w.length = len;
  w.sge = dst;
  tail_.store(t + 1, std::memory_order_release);
  return PostResult::kOk;
}

bool ReceiveQueue::Resize(uint32_t depth) {
  depth = std::max<uint32_t>(depth, 1);
  const uint64_t h = head_.load(std::memory_order_relaxed), t = tail_.load(std::memory_order_relaxed);
  if (t - h > depth) return false;
  std::vector<RecvWqe> ring(std::bit_ceil(depth));
  std::vector<Sge> sges(ring.size() * max_sge_);
  for (uint64_t i = h; i != t; i++) {
    const RecvWqe& from = ring_[i & mask_];
    RecvWqe& to = ring[i - h];
    Sge* dst = &sges[(i - h) * max_sge_];
    std::copy(from.sge, from.sge + from.num_sge, dst);
    to = from;
    to.sge = dst;
  }
  depth_ = depth;
  ring_ = std::move(ring);
  sges_ = std::move(sges);
  mask_ = ring_.size() - 1;
  head_.store(0, std::memory_order_relaxed);
  tail_.store(t - h, std::memory_order_release);
  return true;
}

const RecvWqe* ReceiveQueue::Front() const {
  const uint64_t h = head_.load(std::memory_order_relaxed);
  if (h == tail_.load(std::memory_order_acquire)) return nullptr;
  return &ring_[h & mask_];
}

void ReceiveQueue::Pop() {
  taken_.store(taken_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  head_.store(head_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  if (on_pop) on_pop();
}

}  // namespace roce::rc
