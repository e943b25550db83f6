// SPDX-License-Identifier: MIT
// The Win32 subset libnd2 implements (nd2api/src: win32.cc, handle.cc) against what
// nd_win32.h documents and Win32 does: events (manual / auto reset, several waiters, close
// while waiting), WaitForSingleObject timeouts, I/O completion ports (FIFO, failed requests,
// timeouts, close while waiting), overlapped files and CompleteOverlapped (the low bit of
// hEvent), bad handles, GetLastError per thread, the NTSTATUS -> Win32 error mapping, and the
// progress hook driven by waiting threads. Timeouts are short and every wait that should
// succeed has a bound, so a bug fails the case instead of hanging it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "nd2api/src/handle.h"
#include "ndstatus.h"

namespace roce::nd2 {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr DWORD kBound = 10000;  // ms: "should have happened long before"

int64_t MsSince(Clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - start).count();
}

// Polls `pred` for up to `ms`; true once it holds.
template <class Pred>
bool Eventually(Pred pred, int ms = 5000) {
  const Clock::time_point end = Clock::now() + milliseconds(ms);
  while (Clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return pred();
}

HANDLE Tag(HANDLE h, uintptr_t bits) {
  return reinterpret_cast<HANDLE>(reinterpret_cast<uintptr_t>(h) | bits);
}

HANDLE NewFile() { return RegisterHandle(std::make_shared<OverlappedFile>()); }

HANDLE NewPort() { return CreateIoCompletionPort(INVALID_HANDLE_VALUE, nullptr, 0, 0); }

// Removes any progress hook when the case ends, whatever happened.
struct HookGuard {
  ~HookGuard() { SetProgressHook(nullptr); }
};

OVERLAPPED NewOverlapped(HANDLE event = nullptr) {
  OVERLAPPED ov{};
  ov.hEvent = event;
  MarkOverlappedPending(&ov);
  return ov;
}

// ---- Events ----------------------------------------------------------------------------------

TEST(Win32Event, InitialStateAndAutoReset) {
  HANDLE off = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  HANDLE on = CreateEventA(nullptr, FALSE, TRUE, nullptr);
  ASSERT_NE(off, nullptr);
  ASSERT_NE(on, nullptr);
  EXPECT_NE(off, on);
  EXPECT_NE(off, INVALID_HANDLE_VALUE);
  EXPECT_EQ(GetLastError(), ERROR_SUCCESS);

  EXPECT_EQ(WaitForSingleObject(off, 0), WAIT_TIMEOUT);
  EXPECT_EQ(WaitForSingleObject(on, 0), WAIT_OBJECT_0);
  EXPECT_EQ(WaitForSingleObject(on, 0), WAIT_TIMEOUT) << "the wait resets an auto-reset event";

  EXPECT_TRUE(SetEvent(off));
  EXPECT_TRUE(SetEvent(off)) << "setting a signalled event is not an error";
  EXPECT_EQ(WaitForSingleObject(off, 0), WAIT_OBJECT_0);
  EXPECT_EQ(WaitForSingleObject(off, 0), WAIT_TIMEOUT) << "two Sets do not count twice";

  EXPECT_TRUE(SetEvent(off));
  EXPECT_TRUE(ResetEvent(off));
  EXPECT_EQ(WaitForSingleObject(off, 0), WAIT_TIMEOUT);

  EXPECT_TRUE(CloseHandle(off));
  EXPECT_TRUE(CloseHandle(on));
}

TEST(Win32Event, ManualResetStaysSignalledUntilReset) {
  HANDLE ev = CreateEventA(nullptr, TRUE, TRUE, nullptr);
  ASSERT_NE(ev, nullptr);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(WaitForSingleObject(ev, 0), WAIT_OBJECT_0);
  EXPECT_EQ(WaitForSingleObject(ev, INFINITE), WAIT_OBJECT_0);
  EXPECT_TRUE(ResetEvent(ev));
  EXPECT_EQ(WaitForSingleObject(ev, 0), WAIT_TIMEOUT);
  EXPECT_TRUE(ResetEvent(ev)) << "resetting a reset event is not an error";
  EXPECT_TRUE(SetEvent(ev));
  EXPECT_EQ(WaitForSingleObject(ev, 0), WAIT_OBJECT_0);
  EXPECT_EQ(WaitForSingleObject(ev, 0), WAIT_OBJECT_0);
  EXPECT_TRUE(CloseHandle(ev));
}

TEST(Win32Event, CreateEventWAndNames) {
  HANDLE w = CreateEventW(nullptr, TRUE, FALSE, nullptr);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(WaitForSingleObject(w, 0), WAIT_TIMEOUT);
  EXPECT_TRUE(SetEvent(w));
  EXPECT_EQ(WaitForSingleObject(w, 0), WAIT_OBJECT_0);
  EXPECT_TRUE(CloseHandle(w));

  // An empty name is no name; security attributes are accepted and ignored.
  SECURITY_ATTRIBUTES sa{sizeof(SECURITY_ATTRIBUTES), nullptr, FALSE};
  HANDLE a = CreateEventA(&sa, FALSE, FALSE, "");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(CloseHandle(a));
  HANDLE b = CreateEventW(nullptr, FALSE, FALSE, L"");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(CloseHandle(b));

  // Named events are not supported.
  EXPECT_EQ(CreateEventA(nullptr, FALSE, FALSE, "Global\\x"), nullptr);
  EXPECT_EQ(GetLastError(), ERROR_INVALID_PARAMETER);
  EXPECT_EQ(CreateEventW(nullptr, TRUE, FALSE, L"x"), nullptr);
  EXPECT_EQ(GetLastError(), ERROR_INVALID_PARAMETER);
}

TEST(Win32Event, TimedWaitTimesOutOnTime) {
  HANDLE ev = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  ASSERT_NE(ev, nullptr);
  for (DWORD ms : {1u, 20u, 60u}) {
    const Clock::time_point start = Clock::now();
    EXPECT_EQ(WaitForSingleObject(ev, ms), WAIT_TIMEOUT);
    const int64_t took = MsSince(start);
    EXPECT_GE(took, static_cast<int64_t>(ms)) << ms;
    EXPECT_LT(took, static_cast<int64_t>(ms) + 2000) << ms;
  }
  EXPECT_TRUE(CloseHandle(ev));
}

TEST(Win32Event, WaiterBlocksUntilAnotherThreadSets) {
  for (BOOL manual : {FALSE, TRUE}) {
    HANDLE ev = CreateEventA(nullptr, manual, FALSE, nullptr);
    ASSERT_NE(ev, nullptr);
    std::atomic<bool> set{false};
    const Clock::time_point start = Clock::now();
    std::thread setter([&] {
      std::this_thread::sleep_for(milliseconds(50));
      set = true;
      SetEvent(ev);
    });
    EXPECT_EQ(WaitForSingleObject(ev, INFINITE), WAIT_OBJECT_0);
    EXPECT_TRUE(set.load()) << "returned before SetEvent";
    EXPECT_GE(MsSince(start), 50);
    setter.join();
    // A timed wait too.
    std::thread setter2([&] {
      std::this_thread::sleep_for(milliseconds(20));
      SetEvent(ev);
    });
    if (manual) ResetEvent(ev);
    EXPECT_EQ(WaitForSingleObject(ev, kBound), WAIT_OBJECT_0);
    setter2.join();
    EXPECT_TRUE(CloseHandle(ev));
  }
}

TEST(Win32Event, AutoResetReleasesExactlyOneWaiterPerSet) {
  constexpr int kWaiters = 4;
  HANDLE ev = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  ASSERT_NE(ev, nullptr);
  std::atomic<int> started{0}, released{0}, failed{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&] {
      ++started;
      if (WaitForSingleObject(ev, kBound) == WAIT_OBJECT_0) {
        ++released;
      } else {
        ++failed;
      }
    });
  }
  ASSERT_TRUE(Eventually([&] { return started.load() == kWaiters; }));
  std::this_thread::sleep_for(milliseconds(30));  // let them block
  for (int n = 1; n <= kWaiters; ++n) {
    EXPECT_TRUE(SetEvent(ev));
    EXPECT_TRUE(Eventually([&] { return released.load() >= n; })) << n;
    std::this_thread::sleep_for(milliseconds(50));  // time for a second, wrong, release
    EXPECT_EQ(released.load(), n) << "one SetEvent released more than one waiter";
  }
  for (std::thread& t : waiters) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(WaitForSingleObject(ev, 0), WAIT_TIMEOUT) << "every Set was consumed";
  EXPECT_TRUE(CloseHandle(ev));
}

TEST(Win32Event, ManualResetReleasesEveryWaiter) {
  constexpr int kWaiters = 4;
  HANDLE ev = CreateEventA(nullptr, TRUE, FALSE, nullptr);
  ASSERT_NE(ev, nullptr);
  std::atomic<int> started{0}, released{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&] {
      ++started;
      if (WaitForSingleObject(ev, kBound) == WAIT_OBJECT_0) ++released;
    });
  }
  ASSERT_TRUE(Eventually([&] { return started.load() == kWaiters; }));
  std::this_thread::sleep_for(milliseconds(30));
  EXPECT_EQ(released.load(), 0);
  EXPECT_TRUE(SetEvent(ev));
  for (std::thread& t : waiters) t.join();
  EXPECT_EQ(released.load(), kWaiters);
  EXPECT_EQ(WaitForSingleObject(ev, 0), WAIT_OBJECT_0) << "still signalled";
  EXPECT_TRUE(ResetEvent(ev));
  EXPECT_EQ(WaitForSingleObject(ev, 0), WAIT_TIMEOUT);
  EXPECT_TRUE(CloseHandle(ev));
}

TEST(Win32Event, CloseWhileAnotherThreadWaits) {
  for (DWORD timeout : {INFINITE, kBound}) {
    HANDLE ev = CreateEventA(nullptr, FALSE, FALSE, nullptr);
    ASSERT_NE(ev, nullptr);
    std::atomic<bool> waiting{false};
    DWORD result = 0, error = 0;
    std::thread waiter([&] {
      waiting = true;
      result = WaitForSingleObject(ev, timeout);
      error = GetLastError();
    });
    ASSERT_TRUE(Eventually([&] { return waiting.load(); }));
    std::this_thread::sleep_for(milliseconds(30));
    const Clock::time_point start = Clock::now();
    EXPECT_TRUE(CloseHandle(ev));
    waiter.join();
    EXPECT_LT(MsSince(start), 2000) << "the waiter was not woken by CloseHandle";
    EXPECT_EQ(result, WAIT_FAILED);
    EXPECT_EQ(error, ERROR_INVALID_HANDLE);
    EXPECT_EQ(WaitForSingleObject(ev, 0), WAIT_FAILED);
  }
}

// No lost wake-up: two threads hand a token back and forth through two auto-reset events.
// A lost SetEvent shows up as a wait that times out.
TEST(Win32Event, StressPingPongLosesNoWakeup) {
  HANDLE ping = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  HANDLE pong = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  ASSERT_NE(ping, nullptr);
  ASSERT_NE(pong, nullptr);
  constexpr int kRounds = 100000;
  const Clock::time_point deadline = Clock::now() + milliseconds(2500);
  std::atomic<bool> stop{false};
  std::atomic<int> lost{0};
  std::thread peer([&] {
    for (;;) {
      if (WaitForSingleObject(ping, 5000) != WAIT_OBJECT_0) {
        ++lost;
        return;
      }
      if (stop.load()) return;
      SetEvent(pong);
    }
  });
  int rounds = 0;
  while (rounds < kRounds && Clock::now() < deadline) {
    SetEvent(ping);
    if (WaitForSingleObject(pong, 5000) != WAIT_OBJECT_0) {
      ++lost;
      break;
    }
    ++rounds;
  }
  stop = true;
  SetEvent(ping);
  peer.join();
  EXPECT_EQ(lost.load(), 0) << "after " << rounds << " rounds";
  EXPECT_GT(rounds, 1000);
  std::printf("ping-pong: %d rounds\n", rounds);
  EXPECT_TRUE(CloseHandle(ping));
  EXPECT_TRUE(CloseHandle(pong));
}

// The same with a waiter that uses timed waits and a setter that does not wait for it: every
// SetEvent that finds the event reset must release exactly one wait.
TEST(Win32Event, StressSetsAreNeitherLostNorDuplicated) {
  HANDLE ev = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  HANDLE ack = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  ASSERT_NE(ev, nullptr);
  ASSERT_NE(ack, nullptr);
  constexpr int kRounds = 20000;
  std::atomic<int> consumed{0};
  std::atomic<bool> done{false};
  std::thread consumer([&] {
    while (!done.load()) {
      const DWORD r = WaitForSingleObject(ev, 1);  // short timeouts race with Sets
      if (r == WAIT_OBJECT_0) {
        ++consumed;
        SetEvent(ack);
      }
    }
  });
  int produced = 0;
  const Clock::time_point deadline = Clock::now() + milliseconds(2500);
  while (produced < kRounds && Clock::now() < deadline) {
    SetEvent(ev);
    ++produced;
    ASSERT_EQ(WaitForSingleObject(ack, 5000), WAIT_OBJECT_0) << "lost after " << produced;
  }
  done = true;
  consumer.join();
  EXPECT_EQ(consumed.load(), produced);
  EXPECT_TRUE(CloseHandle(ev));
  EXPECT_TRUE(CloseHandle(ack));
}

// ---- Handles and last error ------------------------------------------------------------------

void ExpectInvalidEverywhere(HANDLE h, const char* what) {
  SCOPED_TRACE(what);
  SetLastError(0);
  EXPECT_FALSE(SetEvent(h));
  EXPECT_EQ(GetLastError(), ERROR_INVALID_HANDLE);
  SetLastError(0);
  EXPECT_FALSE(ResetEvent(h));
  EXPECT_EQ(GetLastError(), ERROR_INVALID_HANDLE);
  SetLastError(0);
  EXPECT_EQ(WaitForSingleObject(h, 0), WAIT_FAILED);
  EXPECT_EQ(GetLastError(), ERROR_INVALID_HANDLE);
  SetLastError(0);
  EXPECT_EQ(WaitForSingleObject(h, INFINITE), WAIT_FAILED);
  EXPECT_EQ(GetLastError(), ERROR_INVALID_HANDLE);
  SetLastError(0);
  EXPECT_FALSE(CloseHandle(h));
  EXPECT_EQ(GetLastError(), ERROR_INVALID_HANDLE);
  DWORD bytes = 1;
  ULONG_PTR key = 1;
  OVERLAPPED dummy{};
  OVERLAPPED* ov = &dummy;
  SetLastError(0);
  EXPECT_FALSE(GetQueuedCompletionStatus(h, &bytes, &key, &ov, INFINITE));
  EXPECT_EQ(ov, nullptr);
  EXPECT_EQ(GetLastError(), ERROR_INVALID_HANDLE);
  SetLastError(0);
  EXPECT_FALSE(PostQueuedCompletionStatus(h, 1, 2, nullptr));
  EXPECT_EQ(GetLastError(), ERROR_INVALID_HANDLE);
  if (h != INVALID_HANDLE_VALUE) {
    SetLastError(0);
    EXPECT_EQ(CreateIoCompletionPort(h, nullptr, 0, 0), nullptr);
    EXPECT_EQ(GetLastError(), ERROR_INVALID_HANDLE);
  }
  EXPECT_EQ(LookupHandle(h), nullptr);
}

TEST(Win32Handles, BadHandlesFailWithoutCrashing) {
  ExpectInvalidEverywhere(nullptr, "NULL");
  ExpectInvalidEverywhere(INVALID_HANDLE_VALUE, "INVALID_HANDLE_VALUE");
  ExpectInvalidEverywhere(reinterpret_cast<HANDLE>(uintptr_t{0x1234}), "small integer");
  ExpectInvalidEverywhere(reinterpret_cast<HANDLE>(uintptr_t{0xdeadbeef00000010}), "garbage");
  int local = 0;
  ExpectInvalidEverywhere(&local, "a pointer to memory");

  HANDLE ev = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  ASSERT_NE(ev, nullptr);
  EXPECT_TRUE(CloseHandle(ev));
  ExpectInvalidEverywhere(ev, "closed event");
  // A handle value stays dead when its slot is reused.
  HANDLE again = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  ASSERT_NE(again, nullptr);
  EXPECT_NE(again, ev);
  ExpectInvalidEverywhere(ev, "stale handle of a reused slot");
  EXPECT_TRUE(CloseHandle(again));

  HANDLE port = NewPort();
  ASSERT_NE(port, nullptr);
  EXPECT_TRUE(CloseHandle(port));
  ExpectInvalidEverywhere(port, "closed port");
}

TEST(Win32Handles, WrongKindsFail) {
  HANDLE ev = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  HANDLE port = NewPort();
  HANDLE file = NewFile();
  ASSERT_NE(ev, nullptr);
  ASSERT_NE(port, nullptr);
  ASSERT_NE(file, nullptr);

  for (HANDLE not_event : {port, file}) {
    SetLastError(0);
    EXPECT_FALSE(SetEvent(not_event));
    EXPECT_EQ(GetLastError(), ERROR_INVALID_HANDLE);
    EXPECT_FALSE(ResetEvent(not_event));
    SetLastError(0);
    EXPECT_EQ(WaitForSingleObject(not_event, 0), WAIT_FAILED);
    EXPECT_EQ(GetLastError(), ERROR_INVALID_HANDLE);
  }
  for (HANDLE not_port : {ev, file}) {
    DWORD bytes;
    ULONG_PTR key;
    OVERLAPPED* ov = nullptr;
    SetLastError(0);
    EXPECT_FALSE(GetQueuedCompletionStatus(not_port, &bytes, &key, &ov, 0));
    EXPECT_EQ(GetLastError(), ERROR_INVALID_HANDLE);
    EXPECT_FALSE(PostQueuedCompletionStatus(not_port, 0, 0, nullptr));
    SetLastError(0);
    EXPECT_EQ(CreateIoCompletionPort(file, not_port, 0, 0), nullptr);
    EXPECT_EQ(GetLastError(), ERROR_INVALID_HANDLE);
  }
  for (HANDLE not_file : {ev, port}) {
    SetLastError(0);
    EXPECT_EQ(CreateIoCompletionPort(not_file, port, 0, 0), nullptr);
    EXPECT_EQ(GetLastError(), ERROR_INVALID_HANDLE);
  }
  // The failed attempts left the file unbound.
  EXPECT_EQ(CreateIoCompletionPort(file, port, 1, 0), port);

  EXPECT_TRUE(CloseHandle(ev));
  EXPECT_TRUE(CloseHandle(port));
  EXPECT_TRUE(CloseHandle(file));
}

// Windows ignores the low two bits of a handle; the low bit of OVERLAPPED::hEvent is set by
// programs that then pass hEvent to SetEvent or CloseHandle as it is.
TEST(Win32Handles, TagBitsAreIgnored) {
  HANDLE ev = CreateEventA(nullptr, TRUE, FALSE, nullptr);
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ev) & 3, 0u);
  EXPECT_TRUE(SetEvent(Tag(ev, 1)));
  EXPECT_EQ(WaitForSingleObject(Tag(ev, 2), 0), WAIT_OBJECT_0);
  EXPECT_TRUE(ResetEvent(Tag(ev, 3)));
  EXPECT_EQ(WaitForSingleObject(ev, 0), WAIT_TIMEOUT);
  EXPECT_TRUE(CloseHandle(Tag(ev, 1)));
  EXPECT_FALSE(CloseHandle(ev));
}

TEST(Win32Handles, RegistryCountsAndGenericHandles) {
  const size_t before = OpenHandleCount();
  struct Thing : Handle {
    Thing() : Handle(Kind::kGeneric) {}
    void OnClose() override { ++closes; }
    int closes = 0;
  };
  auto thing = std::make_shared<Thing>();
  HANDLE h = RegisterHandle(thing);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(OpenHandleCount(), before + 1);
  EXPECT_EQ(LookupHandle(h), thing);
  EXPECT_EQ(LookupHandleAs<Thing>(h), thing);
  EXPECT_EQ(LookupHandleAs<Event>(h), nullptr);
  EXPECT_EQ(thing->kind(), Handle::Kind::kGeneric);
  EXPECT_EQ(WaitForSingleObject(h, 0), WAIT_FAILED);
  EXPECT_TRUE(CloseHandle(h));
  EXPECT_EQ(thing->closes, 1);
  EXPECT_FALSE(CloseHandle(h));
  EXPECT_EQ(thing->closes, 1);
  EXPECT_EQ(OpenHandleCount(), before);
  EXPECT_EQ(RegisterHandle(nullptr), nullptr);
  EXPECT_EQ(GetLastError(), ERROR_INVALID_PARAMETER);
}

TEST(Win32LastError, IsPerThread) {
  SetLastError(0);
  EXPECT_FALSE(SetEvent(nullptr));
  EXPECT_EQ(GetLastError(), ERROR_INVALID_HANDLE);
  DWORD other_initial = 12345, other_after = 0;
  std::thread t([&] {
    other_initial = GetLastError();
    SetLastError(ERROR_INVALID_PARAMETER);
    other_after = GetLastError();
  });
  t.join();
  EXPECT_EQ(other_initial, ERROR_SUCCESS) << "a new thread starts at 0";
  EXPECT_EQ(other_after, ERROR_INVALID_PARAMETER);
  EXPECT_EQ(GetLastError(), ERROR_INVALID_HANDLE) << "untouched by the other thread";
}

// ---- Completion ports ------------------------------------------------------------------------

TEST(Win32Port, CreateTimeoutsAndArguments) {
  HANDLE port = NewPort();
  ASSERT_NE(port, nullptr);
  EXPECT_NE(port, INVALID_HANDLE_VALUE);

  DWORD bytes = 7;
  ULONG_PTR key = 7;
  OVERLAPPED dummy{};
  OVERLAPPED* ov = &dummy;
  EXPECT_FALSE(GetQueuedCompletionStatus(port, &bytes, &key, &ov, 0));
  EXPECT_EQ(ov, nullptr);
  EXPECT_EQ(GetLastError(), WAIT_TIMEOUT);

  ov = &dummy;
  const Clock::time_point start = Clock::now();
  EXPECT_FALSE(GetQueuedCompletionStatus(port, &bytes, &key, &ov, 60));
  EXPECT_GE(MsSince(start), 60);
  EXPECT_LT(MsSince(start), 2060);
  EXPECT_EQ(ov, nullptr);
  EXPECT_EQ(GetLastError(), WAIT_TIMEOUT);

  // Required out-parameters.
  ov = &dummy;
  EXPECT_FALSE(GetQueuedCompletionStatus(port, nullptr, &key, &ov, 0));
  EXPECT_EQ(GetLastError(), ERROR_INVALID_PARAMETER);
  EXPECT_EQ(ov, nullptr);
  EXPECT_FALSE(GetQueuedCompletionStatus(port, &bytes, nullptr, &ov, 0));
  EXPECT_EQ(GetLastError(), ERROR_INVALID_PARAMETER);
  EXPECT_FALSE(GetQueuedCompletionStatus(port, &bytes, &key, nullptr, 0));
  EXPECT_EQ(GetLastError(), ERROR_INVALID_PARAMETER);

  // INVALID_HANDLE_VALUE with an existing port: nothing to bind.
  EXPECT_EQ(CreateIoCompletionPort(INVALID_HANDLE_VALUE, port, 0, 0), nullptr);
  EXPECT_EQ(GetLastError(), ERROR_INVALID_PARAMETER);
  // NumberOfConcurrentThreads is accepted whatever it is.
  HANDLE port2 = CreateIoCompletionPort(INVALID_HANDLE_VALUE, nullptr, 99, 8);
  ASSERT_NE(port2, nullptr);
  EXPECT_NE(port2, port);

  EXPECT_TRUE(CloseHandle(port));
  EXPECT_TRUE(CloseHandle(port2));
}

TEST(Win32Port, PostedPacketsComeOutInOrder) {
  HANDLE port = NewPort();
  ASSERT_NE(port, nullptr);
  std::vector<OVERLAPPED> ovs(100);
  for (size_t i = 0; i < ovs.size(); ++i) {
    // A posted packet succeeds whatever the OVERLAPPED says.
    ovs[i].Internal = static_cast<uint32_t>(ND_CANCELED);
    ASSERT_TRUE(PostQueuedCompletionStatus(port, static_cast<DWORD>(i * 3), 1000 + i, &ovs[i]));
  }
  ASSERT_TRUE(PostQueuedCompletionStatus(port, 0, 0, nullptr));  // a NULL OVERLAPPED is fine
  for (size_t i = 0; i < ovs.size(); ++i) {
    DWORD bytes = 0;
    ULONG_PTR key = 0;
    OVERLAPPED* ov = nullptr;
    ASSERT_TRUE(GetQueuedCompletionStatus(port, &bytes, &key, &ov, 0)) << i;
    EXPECT_EQ(bytes, i * 3);
    EXPECT_EQ(key, 1000 + i);
    EXPECT_EQ(ov, &ovs[i]);
  }
  DWORD bytes = 1;
  ULONG_PTR key = 1;
  OVERLAPPED dummy{};
  OVERLAPPED* ov = &dummy;
  EXPECT_TRUE(GetQueuedCompletionStatus(port, &bytes, &key, &ov, 0));
  EXPECT_EQ(ov, nullptr);
  EXPECT_EQ(bytes, 0u);
  EXPECT_FALSE(GetQueuedCompletionStatus(port, &bytes, &key, &ov, 0));
  EXPECT_EQ(GetLastError(), WAIT_TIMEOUT);
  EXPECT_TRUE(CloseHandle(port));
}

TEST(Win32Port, BlockedDequeueIsWokenByPost) {
  HANDLE port = NewPort();
  ASSERT_NE(port, nullptr);
  OVERLAPPED target{};
  const Clock::time_point start = Clock::now();
  std::thread poster([&] {
    std::this_thread::sleep_for(milliseconds(40));
    PostQueuedCompletionStatus(port, 5, 6, &target);
  });
  DWORD bytes = 0;
  ULONG_PTR key = 0;
  OVERLAPPED* ov = nullptr;
  EXPECT_TRUE(GetQueuedCompletionStatus(port, &bytes, &key, &ov, INFINITE));
  EXPECT_GE(MsSince(start), 40);
  EXPECT_EQ(bytes, 5u);
  EXPECT_EQ(key, 6u);
  EXPECT_EQ(ov, &target);
  poster.join();
  EXPECT_TRUE(CloseHandle(port));
}

TEST(Win32Port, CloseWhileAnotherThreadWaits) {
  HANDLE port = NewPort();
  ASSERT_NE(port, nullptr);
  std::atomic<bool> waiting{false};
  BOOL ok = TRUE;
  DWORD error = 0;
  OVERLAPPED dummy{};
  OVERLAPPED* ov = &dummy;
  std::thread waiter([&] {
    DWORD bytes;
    ULONG_PTR key;
    waiting = true;
    ok = GetQueuedCompletionStatus(port, &bytes, &key, &ov, INFINITE);
    error = GetLastError();
  });
  ASSERT_TRUE(Eventually([&] { return waiting.load(); }));
  std::this_thread::sleep_for(milliseconds(30));
  EXPECT_TRUE(CloseHandle(port));
  waiter.join();
  EXPECT_FALSE(ok);
  EXPECT_EQ(ov, nullptr);
  EXPECT_EQ(error, kErrorAbandonedWait0);
}

TEST(Win32Port, StressProducersKeepTheirOrder) {
  HANDLE port = NewPort();
  ASSERT_NE(port, nullptr);
  constexpr int kProducers = 2;
  constexpr int kPerProducer = 50000;
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        PostQueuedCompletionStatus(port, static_cast<DWORD>(i), static_cast<ULONG_PTR>(p),
                                   nullptr);
      }
    });
  }
  std::vector<DWORD> next(kProducers, 0);
  int received = 0;
  bool in_order = true;
  while (received < kProducers * kPerProducer) {
    DWORD bytes;
    ULONG_PTR key;
    OVERLAPPED* ov;
    if (!GetQueuedCompletionStatus(port, &bytes, &key, &ov, 5000)) break;
    if (key >= kProducers || bytes != next[key]) in_order = false;
    if (key < kProducers) next[key] = bytes + 1;
    ++received;
  }
  for (std::thread& t : producers) t.join();
  EXPECT_EQ(received, kProducers * kPerProducer);
  EXPECT_TRUE(in_order);
  EXPECT_TRUE(CloseHandle(port));
}

// ---- Overlapped files and CompleteOverlapped --------------------------------------------------

TEST(Win32Overlapped, SuccessfulCompletionReachesTheBoundPort) {
  HANDLE port = NewPort();
  HANDLE file = NewFile();
  ASSERT_NE(port, nullptr);
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(CreateIoCompletionPort(file, port, 77, 0), port);

  OVERLAPPED ov = NewOverlapped();
  EXPECT_EQ(static_cast<HRESULT>(ov.Internal), ND_PENDING);
  EXPECT_TRUE(CompleteOverlapped(file, &ov, ND_SUCCESS, 123));
  EXPECT_EQ(ov.Internal, 0u);
  EXPECT_EQ(ov.InternalHigh, 123u);

  DWORD bytes = 0;
  ULONG_PTR key = 0;
  OVERLAPPED* got = nullptr;
  ASSERT_TRUE(GetQueuedCompletionStatus(port, &bytes, &key, &got, 0));
  EXPECT_EQ(bytes, 123u);
  EXPECT_EQ(key, 77u);
  EXPECT_EQ(got, &ov);

  // A second file on the same port with its own key; completions keep their order.
  HANDLE file2 = NewFile();
  EXPECT_EQ(CreateIoCompletionPort(file2, port, 78, 0), port);
  OVERLAPPED a = NewOverlapped(), b = NewOverlapped(), c = NewOverlapped();
  CompleteOverlapped(file2, &a, ND_SUCCESS, 1);
  CompleteOverlapped(file, &b, ND_SUCCESS, 2);
  CompleteOverlapped(file2, &c, ND_SUCCESS, 3);
  const struct {
    OVERLAPPED* ov;
    ULONG_PTR key;
    DWORD bytes;
  } expected[] = {{&a, 78, 1}, {&b, 77, 2}, {&c, 78, 3}};
  for (const auto& e : expected) {
    ASSERT_TRUE(GetQueuedCompletionStatus(port, &bytes, &key, &got, 0));
    EXPECT_EQ(got, e.ov);
    EXPECT_EQ(key, e.key);
    EXPECT_EQ(bytes, e.bytes);
  }
  EXPECT_TRUE(CloseHandle(file));
  EXPECT_TRUE(CloseHandle(file2));
  EXPECT_TRUE(CloseHandle(port));
}

TEST(Win32Overlapped, FailedCompletionReturnsFalseWithTheOverlapped) {
  HANDLE port = NewPort();
  HANDLE file = NewFile();
  ASSERT_EQ(CreateIoCompletionPort(file, port, 5, 0), port);
  const struct {
    HRESULT status;
    DWORD error;
  } cases[] = {
      {ND_CANCELED, ERROR_OPERATION_ABORTED},
      {ND_IO_TIMEOUT, 121},          // ERROR_SEM_TIMEOUT
      {ND_BUFFER_OVERFLOW, 234},     // ERROR_MORE_DATA: a warning fails the call too
      {ND_CONNECTION_REFUSED, 1225}, // ERROR_CONNECTION_REFUSED
      {ND_ACCESS_VIOLATION, 998},    // ERROR_NOACCESS
  };
  for (const auto& c : cases) {
    OVERLAPPED ov = NewOverlapped();
    CompleteOverlapped(file, &ov, c.status, 9);
    EXPECT_EQ(static_cast<HRESULT>(ov.Internal), c.status);
    DWORD bytes = 0;
    ULONG_PTR key = 0;
    OVERLAPPED* got = nullptr;
    SetLastError(0);
    EXPECT_FALSE(GetQueuedCompletionStatus(port, &bytes, &key, &got, 0));
    EXPECT_EQ(got, &ov) << "a failed request still dequeues its OVERLAPPED";
    EXPECT_EQ(bytes, 9u);
    EXPECT_EQ(key, 5u);
    EXPECT_EQ(GetLastError(), c.error) << std::hex << c.status;
  }
  // A success code other than 0 is a success.
  OVERLAPPED ov = NewOverlapped();
  CompleteOverlapped(file, &ov, ND_TIMEOUT, 0);
  DWORD bytes;
  ULONG_PTR key;
  OVERLAPPED* got;
  EXPECT_TRUE(GetQueuedCompletionStatus(port, &bytes, &key, &got, 0));
  EXPECT_TRUE(CloseHandle(file));
  EXPECT_TRUE(CloseHandle(port));
}

TEST(Win32Overlapped, BindingRules) {
  HANDLE file = NewFile();
  ASSERT_NE(file, nullptr);
  // No existing port: a new one is created and bound.
  HANDLE port = CreateIoCompletionPort(file, nullptr, 3, 0);
  ASSERT_NE(port, nullptr);
  OVERLAPPED ov = NewOverlapped();
  CompleteOverlapped(file, &ov, ND_SUCCESS, 4);
  DWORD bytes;
  ULONG_PTR key;
  OVERLAPPED* got;
  ASSERT_TRUE(GetQueuedCompletionStatus(port, &bytes, &key, &got, 0));
  EXPECT_EQ(key, 3u);
  // One binding per file.
  HANDLE other = NewPort();
  const size_t open = OpenHandleCount();
  SetLastError(0);
  EXPECT_EQ(CreateIoCompletionPort(file, other, 1, 0), nullptr);
  EXPECT_EQ(GetLastError(), ERROR_INVALID_PARAMETER);
  EXPECT_EQ(CreateIoCompletionPort(file, nullptr, 1, 0), nullptr);
  EXPECT_EQ(GetLastError(), ERROR_INVALID_PARAMETER);
  EXPECT_EQ(OpenHandleCount(), open) << "the port made for a failed binding was closed";
  EXPECT_EQ(CreateIoCompletionPort(file, port, 3, 0), nullptr);
  EXPECT_TRUE(CloseHandle(other));
  EXPECT_TRUE(CloseHandle(file));
  EXPECT_TRUE(CloseHandle(port));
}

TEST(Win32Overlapped, EventAndPortAreBothSignalled) {
  HANDLE port = NewPort();
  HANDLE file = NewFile();
  HANDLE ev = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  ASSERT_EQ(CreateIoCompletionPort(file, port, 1, 0), port);
  OVERLAPPED ov = NewOverlapped(ev);
  CompleteOverlapped(file, &ov, ND_SUCCESS, 8);
  EXPECT_EQ(WaitForSingleObject(ev, 0), WAIT_OBJECT_0);
  DWORD bytes;
  ULONG_PTR key;
  OVERLAPPED* got;
  EXPECT_TRUE(GetQueuedCompletionStatus(port, &bytes, &key, &got, 0));
  EXPECT_EQ(got, &ov);
  EXPECT_TRUE(CloseHandle(ev));
  EXPECT_TRUE(CloseHandle(file));
  EXPECT_TRUE(CloseHandle(port));
}

// Win32: the low bit of hEvent set means "signal the event, do not queue to the port".
TEST(Win32Overlapped, LowBitOfHEventKeepsThePacketOffThePort) {
  HANDLE port = NewPort();
  HANDLE file = NewFile();
  HANDLE ev = CreateEventA(nullptr, TRUE, FALSE, nullptr);
  ASSERT_EQ(CreateIoCompletionPort(file, port, 1, 0), port);
  OVERLAPPED ov = NewOverlapped(Tag(ev, 1));
  CompleteOverlapped(file, &ov, ND_CANCELED, 0);
  EXPECT_EQ(WaitForSingleObject(ev, 0), WAIT_OBJECT_0);
  EXPECT_EQ(WaitForSingleObject(ov.hEvent, 0), WAIT_OBJECT_0);
  EXPECT_EQ(ov.hEvent, Tag(ev, 1)) << "the OVERLAPPED's hEvent is left as it was";
  DWORD bytes;
  ULONG_PTR key;
  OVERLAPPED* got = &ov;
  EXPECT_FALSE(GetQueuedCompletionStatus(port, &bytes, &key, &got, 0));
  EXPECT_EQ(got, nullptr);
  EXPECT_EQ(GetLastError(), WAIT_TIMEOUT);
  EXPECT_TRUE(CloseHandle(ov.hEvent)) << "ndmrlat closes the tagged handle";
  EXPECT_TRUE(CloseHandle(file));
  EXPECT_TRUE(CloseHandle(port));
}

TEST(Win32Overlapped, WithoutAPortOnlyTheEventIsSignalled) {
  HANDLE ev = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  HANDLE unbound = NewFile();
  OVERLAPPED a = NewOverlapped(ev);
  EXPECT_TRUE(CompleteOverlapped(unbound, &a, ND_SUCCESS, 1));
  EXPECT_EQ(WaitForSingleObject(ev, 0), WAIT_OBJECT_0);
  OVERLAPPED b = NewOverlapped(ev);
  EXPECT_TRUE(CompleteOverlapped(static_cast<HANDLE>(nullptr), &b, ND_SUCCESS, 2));
  EXPECT_EQ(WaitForSingleObject(ev, 0), WAIT_OBJECT_0);
  EXPECT_EQ(b.InternalHigh, 2u);
  // A bad file handle: reported, but the request still completes through its event.
  OVERLAPPED c = NewOverlapped(ev);
  EXPECT_FALSE(CompleteOverlapped(ev, &c, ND_SUCCESS, 3));
  EXPECT_EQ(WaitForSingleObject(ev, 0), WAIT_OBJECT_0);
  EXPECT_EQ(c.Internal, 0u);
  // No event, no file: only the OVERLAPPED. A closed event is ignored.
  OVERLAPPED d = NewOverlapped();
  CompleteOverlapped(static_cast<OverlappedFile*>(nullptr), &d, ND_CANCELED, 0);
  EXPECT_EQ(static_cast<HRESULT>(d.Internal), ND_CANCELED);
  EXPECT_TRUE(CloseHandle(ev));
  OVERLAPPED e = NewOverlapped(ev);
  CompleteOverlapped(static_cast<OverlappedFile*>(nullptr), &e, ND_SUCCESS, 0);
  CompleteOverlapped(static_cast<OverlappedFile*>(nullptr), nullptr, ND_SUCCESS, 0);
  EXPECT_TRUE(CloseHandle(unbound));
}

TEST(Win32Overlapped, CompletionFromAnotherThreadWakesBothKindsOfWaiter) {
  HANDLE port = NewPort();
  auto file_obj = std::make_shared<OverlappedFile>();
  HANDLE file = RegisterHandle(file_obj);
  HANDLE ev = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  ASSERT_EQ(CreateIoCompletionPort(file, port, 4, 0), port);
  OVERLAPPED ov = NewOverlapped(ev);
  DWORD event_result = 0;
  std::thread event_waiter([&] { event_result = WaitForSingleObject(ev, kBound); });
  std::thread completer([&] {
    std::this_thread::sleep_for(milliseconds(30));
    CompleteOverlapped(file_obj.get(), &ov, ND_SUCCESS, 11);
  });
  DWORD bytes = 0;
  ULONG_PTR key = 0;
  OVERLAPPED* got = nullptr;
  EXPECT_TRUE(GetQueuedCompletionStatus(port, &bytes, &key, &got, kBound));
  EXPECT_EQ(got, &ov);
  EXPECT_EQ(bytes, 11u);
  completer.join();
  event_waiter.join();
  EXPECT_EQ(event_result, WAIT_OBJECT_0);
  EXPECT_EQ(ov.InternalHigh, 11u);
  EXPECT_TRUE(CloseHandle(ev));
  EXPECT_TRUE(CloseHandle(file));
  EXPECT_TRUE(CloseHandle(port));
}

// The binding outlives CloseHandle of either handle; completions after the port's handle is
// closed go nowhere and do not crash.
TEST(Win32Overlapped, ClosingHandlesWhileRequestsAreOutstanding) {
  HANDLE port = NewPort();
  auto file_obj = std::make_shared<OverlappedFile>();
  HANDLE file = RegisterHandle(file_obj);
  ASSERT_EQ(CreateIoCompletionPort(file, port, 4, 0), port);
  EXPECT_TRUE(CloseHandle(file));  // the library still holds the object
  OVERLAPPED a = NewOverlapped();
  CompleteOverlapped(file_obj.get(), &a, ND_CANCELED, 0);
  DWORD bytes;
  ULONG_PTR key;
  OVERLAPPED* got = nullptr;
  EXPECT_FALSE(GetQueuedCompletionStatus(port, &bytes, &key, &got, 0));
  EXPECT_EQ(got, &a);
  EXPECT_TRUE(CloseHandle(port));
  OVERLAPPED b = NewOverlapped();
  CompleteOverlapped(file_obj.get(), &b, ND_SUCCESS, 1);
  EXPECT_EQ(b.Internal, 0u);
  ULONG_PTR bound_key = 0;
  EXPECT_NE(file_obj->port(&bound_key), nullptr);
  EXPECT_EQ(bound_key, 4u);
}

TEST(Win32Overlapped, WaitForOverlapped) {
  OVERLAPPED ov = NewOverlapped();
  const Clock::time_point start = Clock::now();
  EXPECT_EQ(WaitForOverlapped(&ov, 30), static_cast<DWORD>(WAIT_TIMEOUT));
  EXPECT_GE(MsSince(start), 30);
  EXPECT_EQ(WaitForOverlapped(&ov, 0), static_cast<DWORD>(WAIT_TIMEOUT));
  std::thread completer([&] {
    std::this_thread::sleep_for(milliseconds(30));
    CompleteOverlapped(static_cast<OverlappedFile*>(nullptr), &ov, ND_CANCELED, 5);
  });
  EXPECT_EQ(WaitForOverlapped(&ov, INFINITE), WAIT_OBJECT_0);
  EXPECT_EQ(static_cast<HRESULT>(ov.Internal), ND_CANCELED);
  EXPECT_EQ(ov.InternalHigh, 5u);
  completer.join();
  EXPECT_EQ(WaitForOverlapped(&ov, 0), WAIT_OBJECT_0);
  EXPECT_EQ(WaitForOverlapped(nullptr, 0), WAIT_FAILED);
}

// ---- Error mapping ---------------------------------------------------------------------------

TEST(Win32ErrorMapping, NdStatusesMapAsRtlNtStatusToDosError) {
  const struct {
    HRESULT status;
    DWORD error;
  } rows[] = {
      {ND_SUCCESS, 0},
      {ND_BUFFER_OVERFLOW, 234},         {ND_DEVICE_BUSY, 170},
      {ND_NO_MORE_ENTRIES, 259},         {ND_UNSUCCESSFUL, 31},
      {ND_ACCESS_VIOLATION, 998},        {ND_INVALID_HANDLE, 6},
      {ND_INVALID_PARAMETER, 87},        {ND_INVALID_DEVICE_REQUEST, 1},
      {ND_NO_MEMORY, 8},                 {ND_INVALID_PARAMETER_MIX, 87},
      {ND_DATA_OVERRUN, 1117},           {ND_SHARING_VIOLATION, 32},
      {ND_INSUFFICIENT_RESOURCES, 1450}, {ND_DEVICE_NOT_READY, 21},
      {ND_IO_TIMEOUT, 121},              {ND_NOT_SUPPORTED, 50},
      {ND_INTERNAL_ERROR, 1359},         {ND_INVALID_PARAMETER_1, 87},
      {ND_INVALID_PARAMETER_10, 87},     {ND_CANCELED, 995},
      {ND_REMOTE_ERROR, 51},             {ND_INVALID_ADDRESS, 59},
      {ND_INVALID_DEVICE_STATE, 22},     {ND_INVALID_BUFFER_SIZE, 1784},
      {ND_TOO_MANY_ADDRESSES, 68},       {ND_ADDRESS_ALREADY_EXISTS, 52},
      {ND_CONNECTION_REFUSED, 1225},     {ND_CONNECTION_INVALID, 1229},
      {ND_CONNECTION_ACTIVE, 1230},      {ND_NETWORK_UNREACHABLE, 1231},
      {ND_HOST_UNREACHABLE, 1232},       {ND_CONNECTION_ABORTED, 1236},
      {ND_DEVICE_REMOVED, 1617},         {STATUS_ADDRESS_ALREADY_ASSOCIATED, 1227},
      {STATUS_BAD_NETWORK_NAME, 67},     {STATUS_CONNECTION_DISCONNECTED, 64},
      {STATUS_DATA_ERROR, 23},           {STATUS_REQUEST_ABORTED, 1235},
      {STATUS_PENDING, ERROR_IO_PENDING},
      {E_OUTOFMEMORY, 14},               {E_INVALIDARG, 87},
      {HRESULT_FROM_WIN32(ERROR_OPERATION_ABORTED), 995},
      {static_cast<HRESULT>(0xC0070005u), 5},  // NTSTATUS_FROM_WIN32(ERROR_ACCESS_DENIED)
      {static_cast<HRESULT>(0xD0000120u), 995}, // 0xD... is 0xC...
      {static_cast<HRESULT>(0xC0001234u), kErrorMrMidNotFound},
      {E_FAIL, kErrorMrMidNotFound},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(NtStatusToWin32Error(r.status), r.error) << std::hex << r.status;
  }
}

// ---- Progress hook ---------------------------------------------------------------------------

TEST(Win32Progress, SingleThreadedWaitDrivesTheHookUntilTheRequestCompletes) {
  HookGuard guard;
  HANDLE ev = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  OVERLAPPED ov = NewOverlapped(ev);
  int calls = 0;
  uint32_t max_timeout = 0;
  const std::thread::id me = std::this_thread::get_id();
  bool other_thread = false;
  SetProgressHook([&](uint32_t timeout_ms) {
    if (std::this_thread::get_id() != me) other_thread = true;
    max_timeout = std::max(max_timeout, timeout_ms);
    if (++calls == 5) {
      CompleteOverlapped(static_cast<OverlappedFile*>(nullptr), &ov, ND_SUCCESS, 42);
      return true;
    }
    return false;
  });
  EXPECT_EQ(WaitForSingleObject(ev, kBound), WAIT_OBJECT_0);
  EXPECT_EQ(calls, 5);
  EXPECT_FALSE(other_thread);
  EXPECT_LE(max_timeout, kDefaultProgressSliceMs);
  EXPECT_EQ(ov.InternalHigh, 42u);

  // INFINITE waits drive it too.
  calls = 0;
  ov = NewOverlapped(ev);
  EXPECT_EQ(WaitForSingleObject(ev, INFINITE), WAIT_OBJECT_0);
  EXPECT_EQ(calls, 5);

  // An object that is ready does not call the hook.
  calls = 0;
  SetEvent(ev);
  EXPECT_EQ(WaitForSingleObject(ev, kBound), WAIT_OBJECT_0);
  EXPECT_EQ(calls, 0);
  SetProgressHook(nullptr);
  EXPECT_TRUE(CloseHandle(ev));
}

TEST(Win32Progress, PortWaitDrivesTheHookAndGetsWhatItCompletes) {
  HookGuard guard;
  HANDLE port = NewPort();
  auto file_obj = std::make_shared<OverlappedFile>();
  HANDLE file = RegisterHandle(file_obj);
  ASSERT_EQ(CreateIoCompletionPort(file, port, 12, 0), port);
  OVERLAPPED ov1 = NewOverlapped(), ov2 = NewOverlapped();
  int calls = 0;
  SetProgressHook([&](uint32_t) {
    ++calls;
    if (calls == 3) CompleteOverlapped(file_obj.get(), &ov1, ND_SUCCESS, 1);
    if (calls == 6) CompleteOverlapped(file_obj.get(), &ov2, ND_CANCELED, 2);
    return calls == 3 || calls == 6;
  });
  DWORD bytes;
  ULONG_PTR key;
  OVERLAPPED* got = nullptr;
  EXPECT_TRUE(GetQueuedCompletionStatus(port, &bytes, &key, &got, kBound));
  EXPECT_EQ(got, &ov1);
  EXPECT_EQ(calls, 3);
  EXPECT_FALSE(GetQueuedCompletionStatus(port, &bytes, &key, &got, INFINITE));
  EXPECT_EQ(got, &ov2);
  EXPECT_EQ(GetLastError(), ERROR_OPERATION_ABORTED);
  EXPECT_EQ(calls, 6);

  // WaitForOverlapped too.
  OVERLAPPED ov3 = NewOverlapped();
  calls = 0;
  SetProgressHook([&](uint32_t) {
    if (++calls == 4) CompleteOverlapped(static_cast<OverlappedFile*>(nullptr), &ov3, 0, 3);
    return true;
  });
  EXPECT_EQ(WaitForOverlapped(&ov3, kBound), WAIT_OBJECT_0);
  EXPECT_EQ(calls, 4);
  SetProgressHook(nullptr);
  EXPECT_TRUE(CloseHandle(file));
  EXPECT_TRUE(CloseHandle(port));
}

TEST(Win32Progress, PollingWaitCallsTheHookOnceWithZero) {
  HookGuard guard;
  HANDLE ev = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  HANDLE port = NewPort();
  std::vector<uint32_t> timeouts;
  SetProgressHook([&](uint32_t timeout_ms) {
    timeouts.push_back(timeout_ms);
    return false;
  });
  EXPECT_EQ(WaitForSingleObject(ev, 0), WAIT_TIMEOUT);
  EXPECT_EQ(timeouts, std::vector<uint32_t>{0});
  timeouts.clear();
  DWORD bytes;
  ULONG_PTR key;
  OVERLAPPED* got;
  EXPECT_FALSE(GetQueuedCompletionStatus(port, &bytes, &key, &got, 0));
  EXPECT_EQ(GetLastError(), WAIT_TIMEOUT);
  EXPECT_EQ(timeouts, std::vector<uint32_t>{0});
  timeouts.clear();
  OVERLAPPED ov = NewOverlapped();
  EXPECT_EQ(WaitForOverlapped(&ov, 0), static_cast<DWORD>(WAIT_TIMEOUT));
  EXPECT_EQ(timeouts, std::vector<uint32_t>{0});

  // A polling GetQueuedCompletionStatus loop sees what the hook completes (ndcq's pattern).
  timeouts.clear();
  PostQueuedCompletionStatus(port, 1, 1, nullptr);
  EXPECT_TRUE(GetQueuedCompletionStatus(port, &bytes, &key, &got, 0));
  EXPECT_TRUE(timeouts.empty()) << "a ready port does not call the hook";
  SetProgressHook(nullptr);
  EXPECT_TRUE(CloseHandle(ev));
  EXPECT_TRUE(CloseHandle(port));
}

TEST(Win32Progress, TimedWaitWithAnIdleHookTimesOutOnTime) {
  HookGuard guard;
  HANDLE ev = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  std::atomic<int> calls{0};
  std::atomic<uint32_t> max_timeout{0};
  SetProgressHook(
      [&](uint32_t timeout_ms) {
        ++calls;
        if (timeout_ms > max_timeout) max_timeout = timeout_ms;
        std::this_thread::sleep_for(milliseconds(timeout_ms));  // an idle engine blocks
        return false;
      },
      5);
  const Clock::time_point start = Clock::now();
  EXPECT_EQ(WaitForSingleObject(ev, 60), WAIT_TIMEOUT);
  const int64_t took = MsSince(start);
  EXPECT_GE(took, 60);
  EXPECT_LT(took, 2060);
  EXPECT_GE(calls.load(), 2);
  EXPECT_LE(max_timeout.load(), 5u) << "the slice bounds every call";
  SetProgressHook(nullptr);
  EXPECT_TRUE(CloseHandle(ev));
}

TEST(Win32Progress, SetFromAnotherThreadIsSeenWhileTheWaiterDrivesTheHook) {
  HookGuard guard;
  HANDLE ev = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  std::atomic<int> calls{0};
  SetProgressHook([&](uint32_t timeout_ms) {
    ++calls;
    std::this_thread::sleep_for(milliseconds(timeout_ms));
    return false;
  });
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(40));
    SetEvent(ev);
  });
  const Clock::time_point start = Clock::now();
  EXPECT_EQ(WaitForSingleObject(ev, kBound), WAIT_OBJECT_0);
  EXPECT_LT(MsSince(start), 2000);
  EXPECT_GT(calls.load(), 1);
  setter.join();
  SetProgressHook(nullptr);
  EXPECT_TRUE(CloseHandle(ev));
}

TEST(Win32Progress, WithoutAHookWaitsBlock) {
  HookGuard guard;
  std::atomic<int> calls{0};
  SetProgressHook([&](uint32_t) {
    ++calls;
    return false;
  });
  SetProgressHook(nullptr);
  HANDLE ev = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  EXPECT_EQ(WaitForSingleObject(ev, 30), WAIT_TIMEOUT);
  EXPECT_EQ(calls.load(), 0);
  EXPECT_FALSE(DriveProgress(0));
  EXPECT_TRUE(CloseHandle(ev));
}

// A thread already blocked (no hook) starts driving a hook installed later: a program may
// wait before the library sets its hook.
TEST(Win32Progress, BlockedWaiterStartsDrivingANewHook) {
  HookGuard guard;
  HANDLE ev = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  HANDLE port = NewPort();
  std::atomic<int> waiting{0};
  DWORD event_result = 0;
  BOOL port_result = FALSE;
  std::thread event_waiter([&] {
    ++waiting;
    event_result = WaitForSingleObject(ev, INFINITE);
  });
  std::thread port_waiter([&] {
    DWORD bytes;
    ULONG_PTR key;
    OVERLAPPED* got;
    ++waiting;
    port_result = GetQueuedCompletionStatus(port, &bytes, &key, &got, INFINITE);
  });
  ASSERT_TRUE(Eventually([&] { return waiting.load() == 2; }));
  std::this_thread::sleep_for(milliseconds(30));
  std::atomic<bool> posted{false};
  SetProgressHook([&](uint32_t) {
    SetEvent(ev);
    if (!posted.exchange(true)) PostQueuedCompletionStatus(port, 0, 0, nullptr);
    return true;
  });
  event_waiter.join();
  port_waiter.join();
  EXPECT_EQ(event_result, WAIT_OBJECT_0);
  EXPECT_TRUE(port_result);
  SetProgressHook(nullptr);
  EXPECT_TRUE(CloseHandle(ev));
  EXPECT_TRUE(CloseHandle(port));
}

// SetProgressHook returns only once no other thread is inside the old hook.
TEST(Win32Progress, ReplacingTheHookWaitsForCallsInFlight) {
  HookGuard guard;
  HANDLE ev = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  std::atomic<bool> inside{false}, returned{false};
  SetProgressHook([&](uint32_t) {
    if (!returned.load()) {
      inside = true;
      std::this_thread::sleep_for(milliseconds(100));
      returned = true;
    }
    return false;
  });
  std::thread waiter([&] { WaitForSingleObject(ev, kBound); });
  ASSERT_TRUE(Eventually([&] { return inside.load(); }));
  SetProgressHook(nullptr);
  EXPECT_TRUE(returned.load()) << "SetProgressHook returned while the old hook still ran";
  SetEvent(ev);
  waiter.join();
  EXPECT_TRUE(CloseHandle(ev));
}

// The hook may remove itself, and a wait made inside the hook does not call it again.
TEST(Win32Progress, HookMayWaitAndRemoveItself) {
  HookGuard guard;
  HANDLE ev = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  HANDLE inner = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  std::atomic<int> depth{0}, max_depth{0}, calls{0};
  SetProgressHook([&](uint32_t) {
    const int d = ++depth;
    if (d > max_depth) max_depth = d;
    ++calls;
    WaitForSingleObject(inner, 1);  // blocks; no recursive hook call
    if (calls == 3) SetProgressHook(nullptr);
    --depth;
    return false;
  });
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(50));
    SetEvent(ev);
  });
  EXPECT_EQ(WaitForSingleObject(ev, kBound), WAIT_OBJECT_0);
  setter.join();
  EXPECT_EQ(calls.load(), 3) << "the hook removed itself on its third call";
  EXPECT_EQ(max_depth.load(), 1);
  EXPECT_TRUE(CloseHandle(ev));
  EXPECT_TRUE(CloseHandle(inner));
}

// Two threads waiting with a hook that returns at once (a poll-mode engine): the token still
// goes back and forth without loss.
TEST(Win32Progress, StressPingPongWithABusyHook) {
  HookGuard guard;
  HANDLE ping = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  HANDLE pong = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  std::atomic<uint64_t> calls{0};
  SetProgressHook([&](uint32_t) {
    calls.fetch_add(1, std::memory_order_relaxed);
    std::this_thread::yield();
    return false;
  });
  std::atomic<bool> stop{false};
  std::atomic<int> lost{0};
  std::thread peer([&] {
    for (;;) {
      if (WaitForSingleObject(ping, 5000) != WAIT_OBJECT_0) {
        ++lost;
        return;
      }
      if (stop.load()) return;
      SetEvent(pong);
    }
  });
  int rounds = 0;
  const Clock::time_point deadline = Clock::now() + milliseconds(1000);
  while (rounds < 20000 && Clock::now() < deadline) {
    SetEvent(ping);
    if (WaitForSingleObject(pong, 5000) != WAIT_OBJECT_0) {
      ++lost;
      break;
    }
    ++rounds;
  }
  stop = true;
  SetEvent(ping);
  peer.join();
  EXPECT_EQ(lost.load(), 0);
  EXPECT_GT(rounds, 10);  // two busy pollers on a loaded 2-core box can be slow
  std::printf("ping-pong with a busy hook: %d rounds, %llu hook calls\n", rounds,
              static_cast<unsigned long long>(calls.load()));
  SetProgressHook(nullptr);
  EXPECT_TRUE(CloseHandle(ping));
  EXPECT_TRUE(CloseHandle(pong));
}

}  // namespace
}  // namespace roce::nd2
