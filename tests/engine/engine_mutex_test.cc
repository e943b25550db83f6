// SPDX-License-Identifier: MIT
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

// Biased locking (engine_mutex.h "Biased"): a thread that took the lock
// kBiasAfter times in a row is granted a bias, and then excludes another
// thread without a locked instruction; the other's Lock waits for it (napping,
// not spinning) and revokes the bias; its TryLock gives up and leaves it.
TEST(EngineMutex, BiasIsGrantedExcludesAndIsRevoked) {
  if (!AsymmetricUnlock())
    ROCE_SKIP_ALLOWED("no bias here (no membarrier PRIVATE_EXPEDITED, or SOFT_RNIC_ASYM_FENCES=0)");
  FastMutex mu;
  for (uint32_t i = 0; i + 1 < FastMutex::kBiasAfter; i++) {
    mu.Lock();
    mu.Unlock();
  }
  EXPECT_FALSE(mu.BiasedToMe());  // one short of the run
  mu.Lock();
  mu.Unlock();
  ASSERT_TRUE(mu.BiasedToMe());
  EXPECT_FALSE(mu.Held());

  mu.Lock();  // on the owner's path
  EXPECT_TRUE(mu.Held());
  bool tried = true;
  std::thread([&] { tried = mu.TryLock(); }).join();
  EXPECT_FALSE(tried);  // the owner is inside: TryLock gives up
  EXPECT_TRUE(mu.BiasedToMe());
  EXPECT_EQ(mu.revocations(), 0u);

  std::atomic<bool> acquired{false}, released{false};
  bool saw_release = false;
  uint64_t waiter_cpu_ns = 0;
  std::thread waiter([&] {
    const uint64_t c0 = ThreadCpuNs();
    mu.Lock();
    waiter_cpu_ns = ThreadCpuNs() - c0;
    saw_release = released.load();
    acquired = true;
    mu.Unlock();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(acquired);  // not while the owner holds it
  released = true;
  mu.Unlock();
  waiter.join();
  EXPECT_TRUE(acquired);
  EXPECT_TRUE(saw_release);
  EXPECT_LT(waiter_cpu_ns, 50'000'000u);  // napped through most of the 200 ms
  EXPECT_FALSE(mu.BiasedToMe());          // revoked
  EXPECT_EQ(mu.revocations(), 1u);
  EXPECT_FALSE(mu.Held());

  // The next bias needs a run twice as long.
  for (uint32_t i = 0; i < FastMutex::kBiasAfter; i++) {
    mu.Lock();
    mu.Unlock();
  }
  EXPECT_FALSE(mu.BiasedToMe());
  for (uint32_t i = 0; i < FastMutex::kBiasAfter; i++) {
    mu.Lock();
    mu.Unlock();
  }
  EXPECT_TRUE(mu.BiasedToMe());
  std::thread([&] {
    tried = mu.TryLock();  // the owner is out: takes it, revoking the bias
    if (tried) mu.Unlock();
  }).join();
  EXPECT_TRUE(tried);
  EXPECT_FALSE(mu.BiasedToMe());
  EXPECT_EQ(mu.revocations(), 2u);
}

// One thread takes the lock in long runs (and so is biased again and again),
// two others now and then: no two ever inside at once, no update lost, and
// the bias was granted and revoked along the way.
TEST(EngineMutex, BiasedOwnerAndOthersExclude) {
  if (!AsymmetricUnlock())
    ROCE_SKIP_ALLOWED("no bias here (no membarrier PRIVATE_EXPEDITED, or SOFT_RNIC_ASYM_FENCES=0)");
  FastMutex mu;
  volatile uint64_t counter = 0;
  std::atomic<int> inside{0}, overlaps{0};
  std::atomic<bool> owner_done{false};
  auto critical = [&] {
    if (inside.fetch_add(1, std::memory_order_relaxed) != 0) overlaps.fetch_add(1);
    const uint64_t v = counter;
    for (volatile int k = 0; k < 40; k++) {
    }
    counter = v + 1;
    inside.fetch_sub(1, std::memory_order_relaxed);
  };
  constexpr int kOwner = 300'000, kOther = 300;
  std::thread owner([&] {
    for (int i = 0; i < kOwner; i++) {
      FastLock l(&mu);
      critical();
    }
    owner_done = true;
  });
  std::vector<std::thread> others;
  for (int t = 0; t < 2; t++)
    others.emplace_back([&] {
      for (int i = 0; i < kOther; i++) {
        {
          FastLock l(&mu);
          critical();
        }
        std::this_thread::sleep_for(std::chrono::microseconds(owner_done ? 1 : 100));
      }
    });
  owner.join();
  for (auto& t : others) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(counter, uint64_t{kOwner} + 2 * kOther);
  EXPECT_GE(mu.revocations(), 2u);  // the owner's path ran, and was taken back
  EXPECT_FALSE(mu.Held());
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
