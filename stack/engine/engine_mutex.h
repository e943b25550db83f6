// SPDX-License-Identifier: MIT
// The engine's lock (Engine::mu()), and a plain fast mutex.
//
// Every post and every pass of an engine takes Engine::mu(): four to five
// times per message of an 8 B ping-pong. Debian's absl::Mutex does that in
// ~58 instructions per Lock + Unlock, out of line (its debug bookkeeping
// included): 3.7% of the round trip (bench/instructions). FastMutex is a
// futex mutex (Drepper, "Futexes Are Tricky", mutex 3) whose uncontended
// Lock and Unlock are one atomic each, inline; a contended Lock spins briefly
// (the critical sections are a pass or a post: microseconds), then sleeps in
// the kernel, woken by the Unlock that sees it waiting.
//
// Where the kernel has membarrier(2) (Linux >= 4.14), Unlock is not even an
// atomic: a release store, then a plain read of a sleepers count. A locked
// instruction waits for every store before it to leave the store buffer; a
// post's stores go to lines the receiving core read last, so the exchange
// an Unlock was held the posting thread of a split-mode 8 B Write (perf put
// ~9 ns a message on it, Intel; paired, the plain store made the Write
// 0.96x the time, the inline round trip 0.97x). What the exchange
// guaranteed (an Unlock sees a sleeper, or the sleeper sees the lock free)
// comes from the sleeper's side instead: it counts itself, then has every
// running thread of the process pass a full barrier (membarrier
// PRIVATE_EXPEDITED, an IPI to each), then looks at the lock again before
// it sleeps. An Unlock whose store the sleeper's look can miss is one whose
// read of the count comes after its barrier, so it sees the sleeper and
// wakes it (the asymmetric Dekker of liburcu and Folly;
// port/fence.h). Without membarrier: the exchange, as before.
//
// Biased. The Lock's compare-exchange is a locked instruction too, and a
// post takes the lock while the frames it wrote last are still on their way
// out: perf put ~86% of the split-mode 8 B Write's PostNow samples (~10% of
// the writing thread's) on it. Most engine locks are taken by one thread
// (the application's, driving an inline engine; or the progress thread),
// so a thread that takes the lock kBiasAfter times in a row through the
// word is granted a bias: its Lock then stores its token in in_, passes a
// compiler barrier and finds the word free (or withdraws its token and takes
// the word like anyone), and its Unlock is a release store of 0 to in_; no
// locked instruction either way. Another thread takes the word as before,
// then revokes the bias: membarrier (as above, the owner's store-then-load
// against its locked exchange then barrier then load), then waits for in_
// to be 0 (spinning, then napping: the owner is inside for a post or a
// pass). A revocation costs a system call and an IPI to each running thread;
// each one doubles the run of locks the next bias needs (up to 2^20), so
// threads that take turns pay it ever more rarely. Without membarrier no
// bias is granted.
//
// EngineMutex is a FastMutex, except under SOFT_RNIC_MUTEX_CHECK=1 (meson's
// test set-up sets it) where it is an absl::Mutex, so the tests keep
// absl's lock-order (deadlock) checks of the engine lock against every other
// absl::Mutex of the stack and of libnd2. The FastMutex path has its own
// tests (tests/engine/engine_mutex_test.cc) and runs in the tests that set
// SOFT_RNIC_MUTEX_CHECK=0.
//
// Both carry the thread-safety annotations of absl::Mutex (ABSL_LOCKABLE):
// GUARDED_BY and LOCKS_REQUIRED on the engine lock are checked as before.
#pragma once

#include <absl/base/optimization.h>
#include <absl/base/thread_annotations.h>
#include <absl/synchronization/mutex.h>

#include <atomic>
#include <cstdint>

namespace roce::engine {

// SOFT_RNIC_MUTEX_CHECK=1: the engine lock is an absl::Mutex and absl's
// deadlock detection stays on (Engine::Create turns it off otherwise).
bool MutexChecksRequested();

// Whether FastMutex's Unlock is a plain store (port::AsymmetricFencesAvailable).
bool AsymmetricUnlock();

class ABSL_LOCKABLE FastMutex {
 public:
  FastMutex() : FastMutex(AsymmetricUnlock()) {}
  // asymmetric_unlock: the plain-store Unlock (needs AsymmetricUnlock()).
  explicit FastMutex(bool asymmetric_unlock) : asym_(asymmetric_unlock) {}
  FastMutex(const FastMutex&) = delete;
  FastMutex& operator=(const FastMutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    const uintptr_t me = Self();
    if (ABSL_PREDICT_TRUE(owner_.load(std::memory_order_relaxed) == me) && EnterBiased(me)) return;
    uint32_t c = kFree;
    if (ABSL_PREDICT_FALSE(!s_.compare_exchange_strong(c, kHeld, std::memory_order_acquire,
                                                       std::memory_order_relaxed)))
      LockSlow();
    AfterWord(me);
  }
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    const uintptr_t me = Self();
    if (owner_.load(std::memory_order_relaxed) == me) {
      if (EnterBiased(me)) return true;
      if (s_.load(std::memory_order_relaxed) != kFree) return false;
    }
    uint32_t c = kFree;
    if (!s_.compare_exchange_strong(c, kHeld, std::memory_order_acquire, std::memory_order_relaxed)) return false;
    if (ABSL_PREDICT_FALSE(owner_.load(std::memory_order_relaxed) != 0) && !Revoke(/*wait=*/false)) {
      UnlockWord();  // the owner is inside
      return false;
    }
    Count(me);
    return true;
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    // Only the owner stores its own token in in_, and only while it enters
    // or holds the lock on its path: seeing it here, the caller holds it so.
    if (ABSL_PREDICT_TRUE(in_.load(std::memory_order_relaxed) == Self())) {
      in_.store(0, std::memory_order_release);
      return;
    }
    UnlockWord();
  }
  // Held by some thread (FastMutex does not know which).
  bool Held() const { return s_.load(std::memory_order_relaxed) != kFree || in_.load(std::memory_order_relaxed) != 0; }
  // Times a Lock went to sleep in the kernel (tests).
  uint32_t sleeps() const { return sleeps_.load(std::memory_order_relaxed); }
  // Biased: to the calling thread (tests), and how many times a bias was
  // revoked, and the locks a thread must take in a row to be granted one.
  bool BiasedToMe() const { return owner_.load(std::memory_order_relaxed) == Self(); }
  uint32_t revocations() const { return revocations_.load(std::memory_order_relaxed); }
  static constexpr uint32_t kBiasAfter = 1024;

 private:
  // kContended: held, maybe sleepers (the exchange protocol only; the
  // asymmetric one counts its sleepers in sleepers_ and uses kFree/kHeld).
  static constexpr uint32_t kFree = 0, kHeld = 1, kContended = 2;
  // A token of the calling thread: its thread pointer (never 0).
  static uintptr_t Self() { return reinterpret_cast<uintptr_t>(__builtin_thread_pointer()); }
  // The biased owner's way in (Lock and TryLock): announce, then look at the
  // word (Dekker against Revoke, whose side is the membarrier; see "Biased"
  // above). True: inside. The word must be free and the bias still ours: the
  // caller's look at owner_ may predate a revocation whose word was let go
  // since (a load of the word that sees that release sees the revocation
  // after it). False: withdrawn (another thread holds the word, or took the
  // bias back).
  [[gnu::always_inline]] bool EnterBiased(uintptr_t me) {
    in_.store(me, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (ABSL_PREDICT_TRUE(s_.load(std::memory_order_acquire) == kFree &&
                          owner_.load(std::memory_order_relaxed) == me))
      return true;
    in_.store(0, std::memory_order_release);
    return false;
  }
  void UnlockWord() {
    if (ABSL_PREDICT_TRUE(asym_)) {
      s_.store(kFree, std::memory_order_release);
      // The count is read after the store in program order (the compiler
      // keeps it there; the CPU may not, which the sleeper's membarrier covers).
      std::atomic_signal_fence(std::memory_order_seq_cst);
      if (ABSL_PREDICT_FALSE(sleepers_.load(std::memory_order_relaxed) != 0)) Wake();
      return;
    }
    if (ABSL_PREDICT_FALSE(s_.exchange(kFree, std::memory_order_release) == kContended)) Wake();
  }
  // With the word held: waits for a biased owner of another thread to leave
  // and revokes its bias (wait = false: gives up instead; false returned).
  // Then counts this thread's run of locks, granting it the bias at the end of one.
  void AfterWord(uintptr_t me) {
    const uintptr_t o = owner_.load(std::memory_order_relaxed);
    if (ABSL_PREDICT_FALSE(o != 0 && o != me)) Revoke(/*wait=*/true);
    Count(me);
  }
  void Count(uintptr_t me) {
    if (run_of_ != me) {
      run_of_ = me;
      run_ = 0;
    }
    if (ABSL_PREDICT_FALSE(++run_ == bias_after_) && asym_) owner_.store(me, std::memory_order_relaxed);
  }
  bool Revoke(bool wait);
  void LockSlow();
  void Wake();
  std::atomic<uint32_t> s_{kFree};
  const bool asym_;
  std::atomic<uint32_t> sleepers_{0};
  std::atomic<uint32_t> sleeps_{0};
  // Bias: owner_ is written with the word held only; in_ by the owner only.
  std::atomic<uintptr_t> owner_{0};
  std::atomic<uintptr_t> in_{0};
  // With the word held only: whose run of locks, how long, how long one must be.
  uintptr_t run_of_ = 0;
  uint32_t run_ = 0;
  uint32_t bias_after_ = kBiasAfter;
  std::atomic<uint32_t> revocations_{0};
};

class ABSL_LOCKABLE EngineMutex {
 public:
  // Checked (an absl::Mutex) when SOFT_RNIC_MUTEX_CHECK=1 at construction.
  EngineMutex();
  explicit EngineMutex(bool checked) : checked_(checked) {}
  EngineMutex(const EngineMutex&) = delete;
  EngineMutex& operator=(const EngineMutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    if (ABSL_PREDICT_FALSE(checked_)) return abseil_.Lock();
    fast_.Lock();
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    if (ABSL_PREDICT_FALSE(checked_)) return abseil_.Unlock();
    fast_.Unlock();
  }
  // Checked: by this thread (absl::Mutex::AssertHeld); fast: by some thread.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK();
  bool checked() const { return checked_; }

 private:
  const bool checked_;
  FastMutex fast_;
  absl::Mutex abseil_;
};

// absl::MutexLock for these.
template <class M>
class ABSL_SCOPED_LOCKABLE ScopedLock {
 public:
  explicit ScopedLock(M* m) ABSL_EXCLUSIVE_LOCK_FUNCTION(m) : m_(m) { m_->Lock(); }
  ~ScopedLock() ABSL_UNLOCK_FUNCTION() { m_->Unlock(); }
  ScopedLock(const ScopedLock&) = delete;
  ScopedLock& operator=(const ScopedLock&) = delete;

 private:
  M* const m_;
};
using EngineLock = ScopedLock<EngineMutex>;
using FastLock = ScopedLock<FastMutex>;

}  // namespace roce::engine
