// The engine lock (stack/engine/engine_mutex.h): mutual exclusion on its
// fast (futex) path and its checked (absl::Mutex) path, and a contended
// Lock that sleeps in the kernel instead of spinning while the holder keeps it.
#include "stack/engine/engine_mutex.h"

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/test_support.h"

namespace roce::engine {
namespace {

uint64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// `threads` threads each add 1 to a plain counter `per_thread` times under
// the lock, with a read-modify-write spread over two loads and a store so
// that a lost update shows; every few hundred they also yield inside the
// critical section, so that others find it held and take the slow path.
template <class M>
uint64_t CountUnder(M& mu, int threads, int per_thread) {
  volatile uint64_t counter = 0;
  std::atomic<int> go{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++) {
    ts.emplace_back([&] {
      go.fetch_add(1);
      while (go.load() < threads) {
      }
      for (int i = 0; i < per_thread; i++) {
        ScopedLock<M> l(&mu);
        const uint64_t v = counter;
        if (i % 512 == 0) std::this_thread::yield();
        counter = v + 1;
      }
    });
  }
  for (auto& t : ts) t.join();
  return counter;
}

TEST(EngineMutex, FastPathExcludes) {
  EngineMutex mu(false);
  ASSERT_FALSE(mu.checked());
  EXPECT_EQ(CountUnder(mu, 3, 100'000), 300'000u);
}

TEST(EngineMutex, CheckedPathExcludes) {
  EngineMutex mu(true);
  ASSERT_TRUE(mu.checked());
  EXPECT_EQ(CountUnder(mu, 3, 30'000), 90'000u);
}

TEST(EngineMutex, FastMutexExcludes) {
  FastMutex mu;
  EXPECT_EQ(CountUnder(mu, 4, 50'000), 200'000u);
}

// Each unlock protocol (engine_mutex.h): the exchange, and the plain store
// whose sleepers rely on membarrier. More threads than this machine's CPUs,
// each yielding inside the critical section now and then, so that Locks
// spin out and sleep: a lost wake-up would leave a thread asleep for good
// (the test's timeout), a broken exclusion a short count.
void ExcludesAndWakes(bool asym) {
  FastMutex mu(asym);
  EXPECT_EQ(CountUnder(mu, 6, 40'000), 240'000u);
  EXPECT_FALSE(mu.Held());
  EXPECT_GT(mu.sleeps(), 0u);  // the sleeping path ran (else this shows nothing about wake-ups)
}

TEST(EngineMutex, ExchangeUnlockExcludesAndWakes) { ExcludesAndWakes(false); }

TEST(EngineMutex, PlainStoreUnlockExcludesAndWakes) {
  if (!AsymmetricUnlock())
    ROCE_SKIP_ALLOWED("the plain-store Unlock is off here (no membarrier PRIVATE_EXPEDITED, or SOFT_RNIC_ASYM_FENCES=0)");
  ExcludesAndWakes(true);
}

TEST(EngineMutex, TryLockAndHeld) {
  FastMutex mu;
  EXPECT_FALSE(mu.Held());
  ASSERT_TRUE(mu.TryLock());
  EXPECT_TRUE(mu.Held());
  bool other = true;
  std::thread([&] { other = mu.TryLock(); }).join();
  EXPECT_FALSE(other);  // held: another thread's TryLock fails
  mu.Unlock();
  EXPECT_FALSE(mu.Held());
  std::thread([&] {
    other = mu.TryLock();
    if (other) mu.Unlock();
  }).join();
  EXPECT_TRUE(other);
}

// A Lock that finds the mutex held for long sleeps (futex) and is woken by
// the Unlock: it gets the lock only after the holder let go, and spends
// little CPU time waiting (a spinning waiter would spend the whole wait).
template <class M>
void SleepsAndIsWoken(M& mu) {
  std::atomic<bool> released{false}, acquired{false};
  std::atomic<bool> holding{false};
  uint64_t waiter_cpu_ns = 0;
  bool saw_release = false;
  std::thread holder([&] {
    ScopedLock<M> l(&mu);
    holding = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    released = true;
  });
  while (!holding) std::this_thread::yield();
  std::thread waiter([&] {
    const uint64_t c0 = ThreadCpuNs();
    ScopedLock<M> l(&mu);
    waiter_cpu_ns = ThreadCpuNs() - c0;
    saw_release = released.load();
    acquired = true;
  });
  holder.join();
  waiter.join();
  EXPECT_TRUE(acquired);
  EXPECT_TRUE(saw_release);                  // not before the holder unlocked
  EXPECT_LT(waiter_cpu_ns, 50'000'000u);     // slept through most of the 200 ms
}

TEST(EngineMutex, ContendedLockSleepsAndIsWoken) {
  for (bool checked : {false, true}) {
    SCOPED_TRACE(checked ? "checked" : "fast");
    EngineMutex mu(checked);
    SleepsAndIsWoken(mu);
  }
  for (bool asym : {false, true}) {
    if (asym && !AsymmetricUnlock()) continue;  // (PlainStoreUnlockExcludesAndWakes says so)
    SCOPED_TRACE(asym ? "fast, plain-store unlock" : "fast, exchange unlock");
    FastMutex mu(asym);
    SleepsAndIsWoken(mu);
  }
}

}  // namespace
}  // namespace roce::engine
