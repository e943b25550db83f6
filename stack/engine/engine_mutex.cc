// SPDX-License-Identifier: MIT
#include "stack/engine/engine_mutex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <rte_pause.h>

#include "stack/port/fence.h"

namespace roce::engine {

namespace {
// Spins before sleeping: an engine pass or a post holds the lock for a few
// microseconds at most; a futex sleep and wake-up cost about as much.
constexpr int kSpins = 256;
}  // namespace

bool MutexChecksRequested() {
  const char* v = std::getenv("SOFT_RNIC_MUTEX_CHECK");
  return v && std::strcmp(v, "1") == 0;
}

bool AsymmetricUnlock() { return port::AsymmetricFencesAvailable(); }

void FastMutex::LockSlow() {
  for (int i = 0; i < kSpins; i++) {
    rte_pause();
    uint32_t c = s_.load(std::memory_order_relaxed);
    if (c == kFree && s_.compare_exchange_weak(c, kHeld, std::memory_order_acquire, std::memory_order_relaxed))
      return;
  }
  if (asym_) {
    // Counted first; then every running thread of the process passes a full
    // barrier: an Unlock that stored kFree before its barrier shows here as
    // free, one that reads the count after its barrier sees this sleeper and
    // wakes it (and a wake that comes before the sleep makes FUTEX_WAIT
    // return at once: the lock is no longer kHeld, or it is again and its
    // next Unlock sees the count). Again before every sleep.
    // Should no barrier work, the sleep is bounded instead: a missed
    // wake-up then costs a millisecond, never a hang.
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    for (;;) {
      const bool fenced = port::AsymmetricFence();
      uint32_t c = kFree;
      if (s_.compare_exchange_strong(c, kHeld, std::memory_order_acquire, std::memory_order_relaxed)) break;
      sleeps_.fetch_add(1, std::memory_order_relaxed);
      const timespec bound{0, 1'000'000};
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(&s_), FUTEX_WAIT_PRIVATE, kHeld, fenced ? nullptr : &bound,
              nullptr, 0);
    }
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    return;
  }
  // Mark it contended (so the holder's Unlock wakes a sleeper) and sleep
  // while it stays held. A thread that takes it this way leaves it marked
  // contended: its Unlock may wake no one, never misses a sleeper.
  uint32_t c = s_.exchange(kContended, std::memory_order_acquire);
  while (c != kFree) {
    sleeps_.fetch_add(1, std::memory_order_relaxed);
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&s_), FUTEX_WAIT_PRIVATE, kContended, nullptr, nullptr, 0);
    c = s_.exchange(kContended, std::memory_order_acquire);
  }
}

bool FastMutex::Revoke(bool wait) {
  // The owner stores its token in in_ before it looks at the word, which
  // this thread holds: after the barrier either the owner's look sees the
  // word held (it withdraws and waits for the word) or its token shows here.
  const bool fenced = port::AsymmetricFence();
  if (!wait && in_.load(std::memory_order_acquire) != 0) return false;
  owner_.store(0, std::memory_order_relaxed);  // later Locks of the owner take the word
  // Without a barrier (no membarrier command worked, after one did at
  // start-up: not expected) a token still in the owner's store buffer is
  // not seen: the owner's absence must then hold for a millisecond.
  const uint64_t quiet_ns = fenced ? 0 : 1'000'000;
  uint64_t nap_ns = 10'000;
  for (int i = 0;; i++) {
    if (in_.load(std::memory_order_acquire) == 0) {
      if (quiet_ns == 0) break;
      timespec t0{}, t1{};
      clock_gettime(CLOCK_MONOTONIC, &t0);
      bool quiet = true;
      do {
        if (in_.load(std::memory_order_acquire) != 0) quiet = false;
        clock_gettime(CLOCK_MONOTONIC, &t1);
      } while (quiet && static_cast<uint64_t>((t1.tv_sec - t0.tv_sec) * 1'000'000'000ll + (t1.tv_nsec - t0.tv_nsec)) <
                            quiet_ns);
      if (quiet) break;
      continue;
    }
    // The owner is inside: a post or a pass, microseconds, unless it was
    // preempted there. Spin, then nap.
    if (i < kSpins) {
      rte_pause();
    } else {
      const timespec nap{0, static_cast<long>(nap_ns)};
      nanosleep(&nap, nullptr);
      if (nap_ns < 1'000'000) nap_ns *= 2;
    }
  }
  revocations_.fetch_add(1, std::memory_order_relaxed);
  // Each revocation doubles the run a thread needs for the next bias: a
  // membarrier (an IPI to each running thread) per 1024 locks at worst,
  // then ever fewer.
  if (bias_after_ < (1u << 20)) bias_after_ *= 2;
  run_ = 0;
  return true;
}

void FastMutex::Wake() {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&s_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

EngineMutex::EngineMutex() : checked_(MutexChecksRequested()) {}

void EngineMutex::AssertHeld() const {
  if (checked_) {
    abseil_.AssertHeld();
  } else if (!fast_.Held()) {
    std::fprintf(stderr, "roce: the engine lock is not held\n");
    std::abort();
  }
}

}  // namespace roce::engine
