// SPDX-License-Identifier: MIT
// A statistics counter with one writer (the thread that polls a queue) and
// any number of readers (telemetry, tests). Relaxed atomic load + store: a
// plain mov on x86, no locked instruction on the fast path, and no data race
// for the reader.
#pragma once

#include <atomic>
#include <cstdint>

namespace roce::port {

class Counter {
 public:
  void Add(uint64_t n = 1) { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  uint64_t Get() const { return v_.load(std::memory_order_relaxed); }
  void Reset() { v_.store(0, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

}  // namespace roce::port
