// SPDX-License-Identifier: MIT
#include "tests/support/alloc_counter.h"

#include <execinfo.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace roce::testing {
namespace {
std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_allocs{0};
constexpr int kTraces = 4, kDepth = 24;
void* g_trace[kTraces][kDepth];
int g_trace_len[kTraces];
}  // namespace

__attribute__((noinline)) void CountedAllocation() {
  const uint64_t n = g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (n < kTraces) g_trace_len[n] = backtrace(g_trace[n], kDepth);  // no allocation once warm
  asm volatile("");
}

void StartCountingAllocations() {
  void* warm[2];
  backtrace(warm, 2);  // loads what backtrace() needs before counting starts
  g_allocs = 0;
  g_counting = true;
}

uint64_t StopCountingAllocations() {
  g_counting = false;
  return g_allocs.load();
}

bool AllocationCounterWorks() {
  StartCountingAllocations();
  void* p = ::operator new(16);  // an explicit call: never elided
  const uint64_t n = StopCountingAllocations();
  ::operator delete(p);
  return n == 1;
}

void PrintCountedAllocations() {
  for (uint64_t i = 0; i < std::min<uint64_t>(g_allocs.load(), kTraces); i++) {
    dprintf(2, "---- counted allocation %d:\n", static_cast<int>(i));
    backtrace_symbols_fd(g_trace[i], g_trace_len[i], 2);
  }
}

namespace {
void* Counted(std::size_t n, std::size_t align) {
  if (g_counting.load(std::memory_order_relaxed)) CountedAllocation();
  if (n == 0) n = 1;
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                              : std::malloc(n);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace
}  // namespace roce::testing

using roce::testing::Counted;

void* operator new(std::size_t n) { return Counted(n, 0); }
void* operator new[](std::size_t n) { return Counted(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return Counted(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return Counted(n, static_cast<std::size_t>(a)); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
