// SPDX-License-Identifier: MIT
// The Windows console layer of libnd2 (nd2api/include/windows.h & co., nd2api/src/win32_*.cc)
// against what Win32 does and what the machine says: threads (CreateThread, suspended starts,
// exit codes, ExitThread) and the waits on them and on events (WaitForSingleObject,
// WaitForMultipleObjects wait-any and wait-all, timeouts, mixed handles, errors), the 32- and
// 64-bit Interlocked operations (values across the 32-bit boundary, contention), the clocks
// against steady_clock and time(), GetSystemTimes against /proc/stat's meaning and this
// process's own CPU use, GetSystemInfo against /proc/stat and the page size, the process heap
// (zeroing a block that held data), VirtualAlloc / VirtualFree against /proc/self/maps and
// mincore, WSAStartup / WSACleanup, and WSAStringToAddress on good and bad IPv4 and IPv6
// strings with and without ports. Every wait that should succeed is bounded.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <windows.h>
#include <winsock2.h>
#include <ws2tcpip.h>
#include <process.h>

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr DWORD kBound = 10000;  // ms: "should have happened long before"

int64_t MsSince(Clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - start).count();
}

// ---- Threads ---------------------------------------------------------------------------------

struct ThreadArgs {
  HANDLE go = nullptr;          // the thread waits for it, if set
  std::atomic<int> ran{0};
  std::atomic<DWORD> id{0};
  DWORD result = 0;
};

DWORD WINAPI Routine(LPVOID p) {
  auto* a = static_cast<ThreadArgs*>(p);
  a->id = GetCurrentThreadId();
  if (a->go != nullptr) WaitForSingleObject(a->go, INFINITE);
  a->ran = 1;
  return a->result;
}

TEST(Win32Thread, RunsItsRoutineAndIsSignalledWithItsExitCode) {
  ThreadArgs args;
  args.go = CreateEventA(nullptr, TRUE, FALSE, nullptr);
  args.result = 0xC0FFEE;
  DWORD tid = 0;
  HANDLE t = CreateThread(nullptr, 0, Routine, &args, 0, &tid);
  ASSERT_NE(t, nullptr);
  EXPECT_NE(tid, 0u);
  EXPECT_NE(tid, GetCurrentThreadId());

  DWORD code = 0;
  ASSERT_TRUE(GetExitCodeThread(t, &code));
  EXPECT_EQ(code, STILL_ACTIVE);
  const Clock::time_point start = Clock::now();
  EXPECT_EQ(WaitForSingleObject(t, 50), WAIT_TIMEOUT) << "a running thread is not signalled";
  EXPECT_GE(MsSince(start), 45);

  SetEvent(args.go);
  EXPECT_EQ(WaitForSingleObject(t, kBound), WAIT_OBJECT_0);
  EXPECT_EQ(args.ran.load(), 1);
  EXPECT_EQ(args.id.load(), tid) << "lpThreadId is the thread's GetCurrentThreadId";
  ASSERT_TRUE(GetExitCodeThread(t, &code));
  EXPECT_EQ(code, 0xC0FFEEu);
  EXPECT_EQ(WaitForSingleObject(t, 0), WAIT_OBJECT_0) << "an exited thread stays signalled";
  EXPECT_TRUE(CloseHandle(t));
  EXPECT_FALSE(GetExitCodeThread(t, &code));
  EXPECT_EQ(GetLastError(), ERROR_INVALID_HANDLE);
  CloseHandle(args.go);
}

TEST(Win32Thread, CreateSuspendedWaitsForResumeThread) {
  ThreadArgs args;
  HANDLE t = CreateThread(nullptr, 64 * 1024, Routine, &args, CREATE_SUSPENDED, nullptr);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(WaitForSingleObject(t, 50), WAIT_TIMEOUT);
  EXPECT_EQ(args.ran.load(), 0) << "a suspended thread ran its routine";
  EXPECT_EQ(ResumeThread(t), 1u) << "the previous suspend count";
  EXPECT_EQ(WaitForSingleObject(t, kBound), WAIT_OBJECT_0);
  EXPECT_EQ(args.ran.load(), 1);
  EXPECT_EQ(ResumeThread(t), 0u) << "not suspended any more";
  EXPECT_TRUE(CloseHandle(t));
  EXPECT_EQ(ResumeThread(t), static_cast<DWORD>(-1));
}

struct Flag {
  std::atomic<bool>* set;
  ~Flag() { *set = true; }
};

DWORD WINAPI Exits(LPVOID p) {
  Flag f{static_cast<std::atomic<bool>*>(p)};
  ExitThread(77);
}

TEST(Win32Thread, ExitThreadGivesTheExitCodeAndUnwinds) {
  std::atomic<bool> destroyed{false};
  HANDLE t = CreateThread(nullptr, 0, Exits, &destroyed, 0, nullptr);
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(WaitForSingleObject(t, kBound), WAIT_OBJECT_0);
  DWORD code = 0;
  ASSERT_TRUE(GetExitCodeThread(t, &code));
  EXPECT_EQ(code, 77u);
  EXPECT_TRUE(destroyed.load()) << "ExitThread skipped the routine's destructors";
  CloseHandle(t);
}

unsigned __stdcall BeginRoutine(void* p) {
  static_cast<std::atomic<int>*>(p)->store(5);
  return 9;
}

TEST(Win32Thread, BeginThreadExIsCreateThread) {
  std::atomic<int> v{0};
  unsigned id = 0;
  const uintptr_t h = _beginthreadex(nullptr, 0, BeginRoutine, &v, 0, &id);
  ASSERT_NE(h, 0u);
  EXPECT_NE(id, 0u);
  HANDLE t = reinterpret_cast<HANDLE>(h);
  ASSERT_EQ(WaitForSingleObject(t, kBound), WAIT_OBJECT_0);
  DWORD code = 0;
  EXPECT_TRUE(GetExitCodeThread(t, &code));
  EXPECT_EQ(code, 9u);
  EXPECT_EQ(v.load(), 5);
  EXPECT_EQ(static_cast<pid_t>(GetCurrentProcessId()), getpid());
  EXPECT_EQ(_getpid(), getpid());
  CloseHandle(t);
}

TEST(Win32Thread, NullRoutineFails) {
  EXPECT_EQ(CreateThread(nullptr, 0, nullptr, nullptr, 0, nullptr), nullptr);
  EXPECT_EQ(GetLastError(), ERROR_INVALID_PARAMETER);
}

// ---- WaitForMultipleObjects ------------------------------------------------------------------

DWORD WINAPI SleepThen(LPVOID p) {
  Sleep(static_cast<DWORD>(reinterpret_cast<uintptr_t>(p)));
  return 0;
}

TEST(Win32WaitMultiple, WaitAnyGivesTheLowestSignalledAndConsumesOnlyIt) {
  HANDLE e0 = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  HANDLE e1 = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  ThreadArgs args;
  args.go = CreateEventA(nullptr, TRUE, FALSE, nullptr);
  HANDLE t = CreateThread(nullptr, 0, Routine, &args, 0, nullptr);
  ASSERT_TRUE(e0 && e1 && t);
  HANDLE hs[3] = {e0, e1, t};

  EXPECT_EQ(WaitForMultipleObjects(3, hs, FALSE, 0), WAIT_TIMEOUT);
  SetEvent(e1);
  EXPECT_EQ(WaitForMultipleObjects(3, hs, FALSE, 0), WAIT_OBJECT_0 + 1);
  EXPECT_EQ(WaitForMultipleObjects(3, hs, FALSE, 0), WAIT_TIMEOUT) << "e1 (auto-reset) consumed";

  SetEvent(e0);
  SetEvent(e1);
  EXPECT_EQ(WaitForMultipleObjects(3, hs, FALSE, 0), WAIT_OBJECT_0) << "the lowest index wins";
  EXPECT_EQ(WaitForSingleObject(e1, 0), WAIT_OBJECT_0) << "e1 was not consumed by that wait";

  SetEvent(args.go);
  EXPECT_EQ(WaitForMultipleObjects(3, hs, FALSE, kBound), WAIT_OBJECT_0 + 2) << "the thread";
  EXPECT_EQ(WaitForMultipleObjects(3, hs, FALSE, 0), WAIT_OBJECT_0 + 2) << "stays signalled";

  const Clock::time_point start = Clock::now();
  HANDLE events[2] = {e0, e1};
  EXPECT_EQ(WaitForMultipleObjects(2, events, FALSE, 60), WAIT_TIMEOUT);
  EXPECT_GE(MsSince(start), 55);
  EXPECT_LT(MsSince(start), kBound);
  for (HANDLE h : {e0, e1, t, args.go}) CloseHandle(h);
}

TEST(Win32WaitMultiple, WaitAllNeedsEveryObjectAndConsumesThemTogether) {
  HANDLE automatic = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  HANDLE manual = CreateEventA(nullptr, TRUE, FALSE, nullptr);
  HANDLE t = CreateThread(nullptr, 0, SleepThen, reinterpret_cast<LPVOID>(uintptr_t{80}), 0,
                          nullptr);
  ASSERT_TRUE(automatic && manual && t);
  HANDLE hs[3] = {automatic, t, manual};

  SetEvent(automatic);
  SetEvent(manual);
  EXPECT_EQ(WaitForMultipleObjects(3, hs, TRUE, 0), WAIT_TIMEOUT) << "the thread still runs";
  EXPECT_EQ(WaitForSingleObject(automatic, 0), WAIT_OBJECT_0)
      << "a wait-all that failed consumed an auto-reset event";
  SetEvent(automatic);

  // Blocks until the thread exits (about 80 ms after it started).
  EXPECT_EQ(WaitForMultipleObjects(3, hs, TRUE, kBound), WAIT_OBJECT_0);
  EXPECT_EQ(WaitForSingleObject(automatic, 0), WAIT_TIMEOUT) << "consumed by the wait-all";
  EXPECT_EQ(WaitForSingleObject(manual, 0), WAIT_OBJECT_0) << "a manual event stays set";
  EXPECT_EQ(WaitForMultipleObjects(3, hs, TRUE, 30), WAIT_TIMEOUT) << "automatic is reset";
  for (HANDLE h : {automatic, manual, t}) CloseHandle(h);
}

TEST(Win32WaitMultiple, BlockedWaitAnyIsWokenByAnotherThread) {
  HANDLE e0 = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  HANDLE e1 = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  HANDLE hs[2] = {e0, e1};
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(30));
    SetEvent(e1);
  });
  const Clock::time_point start = Clock::now();
  EXPECT_EQ(WaitForMultipleObjects(2, hs, FALSE, kBound), WAIT_OBJECT_0 + 1);
  EXPECT_GE(MsSince(start), 20);
  setter.join();
  CloseHandle(e0);
  CloseHandle(e1);
}

// Two threads bounce two auto-reset events through wait-any / wait-all waits: a lost wake-up
// shows up as a wait that times out.
TEST(Win32WaitMultiple, StressPingPongLosesNoWakeup) {
  HANDLE ping = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  HANDLE pong = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  HANDLE never = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  constexpr int kRounds = 3000;
  std::atomic<int> failures{0};
  std::thread other([&] {
    HANDLE hs[2] = {never, ping};
    for (int i = 0; i < kRounds; ++i) {
      if (WaitForMultipleObjects(2, hs, FALSE, kBound) != WAIT_OBJECT_0 + 1) ++failures;
      SetEvent(pong);
    }
  });
  HANDLE one[1] = {pong};
  for (int i = 0; i < kRounds; ++i) {
    SetEvent(ping);
    if (WaitForMultipleObjects(1, one, TRUE, kBound) != WAIT_OBJECT_0) ++failures;
  }
  other.join();
  EXPECT_EQ(failures.load(), 0);
  for (HANDLE h : {ping, pong, never}) CloseHandle(h);
}

TEST(Win32WaitMultiple, ArgumentsAndHandlesAreChecked) {
  HANDLE e = CreateEventA(nullptr, TRUE, TRUE, nullptr);
  HANDLE port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, nullptr, 0, 0);
  HANDLE hs[MAXIMUM_WAIT_OBJECTS + 1];
  for (HANDLE& h : hs) h = e;

  EXPECT_EQ(WaitForMultipleObjects(0, hs, FALSE, 0), WAIT_FAILED);
  EXPECT_EQ(GetLastError(), ERROR_INVALID_PARAMETER);
  EXPECT_EQ(WaitForMultipleObjects(MAXIMUM_WAIT_OBJECTS + 1, hs, FALSE, 0), WAIT_FAILED);
  EXPECT_EQ(GetLastError(), ERROR_INVALID_PARAMETER);
  EXPECT_EQ(WaitForMultipleObjects(MAXIMUM_WAIT_OBJECTS, hs, FALSE, 0), WAIT_OBJECT_0)
      << "a handle twice is allowed in a wait-any";
  EXPECT_EQ(WaitForMultipleObjects(2, hs, TRUE, 0), WAIT_FAILED) << "but not in a wait-all";
  EXPECT_EQ(GetLastError(), ERROR_INVALID_PARAMETER);

  HANDLE bad[2] = {e, reinterpret_cast<HANDLE>(uintptr_t{0x12345678})};
  EXPECT_EQ(WaitForMultipleObjects(2, bad, FALSE, 0), WAIT_FAILED);
  EXPECT_EQ(GetLastError(), ERROR_INVALID_HANDLE);
  HANDLE wrong[2] = {e, port};
  EXPECT_EQ(WaitForMultipleObjects(2, wrong, FALSE, 0), WAIT_FAILED) << "a port is not waitable";
  EXPECT_EQ(GetLastError(), ERROR_INVALID_HANDLE);
  EXPECT_EQ(WaitForSingleObject(port, 0), WAIT_FAILED);
  CloseHandle(port);
  CloseHandle(e);
}

TEST(Win32WaitMultiple, CloseWhileAnotherThreadWaitsEndsTheWait) {
  HANDLE e0 = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  HANDLE e1 = CreateEventA(nullptr, FALSE, FALSE, nullptr);
  HANDLE hs[2] = {e0, e1};
  std::atomic<DWORD> r{0};
  std::atomic<DWORD> err{0};
  std::thread waiter([&] {
    r = WaitForMultipleObjects(2, hs, TRUE, kBound);
    err = GetLastError();
  });
  std::this_thread::sleep_for(milliseconds(30));
  const Clock::time_point start = Clock::now();
  CloseHandle(e1);
  waiter.join();
  EXPECT_LT(MsSince(start), kBound / 2);
  EXPECT_EQ(r.load(), WAIT_FAILED);
  EXPECT_EQ(err.load(), ERROR_INVALID_HANDLE);
  CloseHandle(e0);
}

// ---- Interlocked -----------------------------------------------------------------------------

TEST(Win32Interlocked, SixtyFourBitOperationsCrossTheThirtyTwoBitBoundary) {
  volatile LONG64 v = 0xFFFFFFFFll;
  EXPECT_EQ(InterlockedIncrement64(&v), 0x100000000ll) << "returns the new value";
  EXPECT_EQ(InterlockedDecrement64(&v), 0xFFFFFFFFll);
  EXPECT_EQ(InterlockedAdd64(&v, 0x100000001ll), 0x200000000ll);
  EXPECT_EQ(InterlockedExchangeAdd64(&v, -1), 0x200000000ll) << "returns the old value";
  EXPECT_EQ(v, 0x1FFFFFFFFll);
  EXPECT_EQ(InterlockedExchange64(&v, INT64_MIN), 0x1FFFFFFFFll);
  EXPECT_EQ(v, INT64_MIN);
  EXPECT_EQ(InterlockedCompareExchange64(&v, 42, 0), INT64_MIN) << "no match: unchanged";
  EXPECT_EQ(v, INT64_MIN);
  EXPECT_EQ(InterlockedCompareExchange64(&v, 0x123456789ll, INT64_MIN), INT64_MIN);
  EXPECT_EQ(v, 0x123456789ll);
  EXPECT_EQ(InterlockedAnd64(&v, 0xF0000000Fll), 0x123456789ll);
  EXPECT_EQ(v, 0x100000009ll);
  EXPECT_EQ(InterlockedOr64(&v, 0x7000000000ll), 0x100000009ll);
  EXPECT_EQ(v, 0x7100000009ll);
  EXPECT_EQ(InterlockedXor64(&v, 0x7100000001ll), 0x7100000009ll);
  EXPECT_EQ(v, 8);
}

TEST(Win32Interlocked, ThirtyTwoBitAndPointerOperations) {
  volatile LONG v = 0x7FFFFFFF;
  EXPECT_EQ(InterlockedIncrement(&v), INT32_MIN) << "wraps as the 32-bit LONG it is";
  EXPECT_EQ(InterlockedDecrement(&v), 0x7FFFFFFF);
  EXPECT_EQ(InterlockedExchange(&v, 5), 0x7FFFFFFF);
  EXPECT_EQ(InterlockedExchangeAdd(&v, 3), 5);
  EXPECT_EQ(InterlockedAdd(&v, 2), 10);
  EXPECT_EQ(InterlockedCompareExchange(&v, 1, 10), 10);
  EXPECT_EQ(InterlockedAnd(&v, 3), 1);
  EXPECT_EQ(InterlockedOr(&v, 6), 1);
  EXPECT_EQ(InterlockedXor(&v, 7), 7);
  EXPECT_EQ(v, 0);

  int a = 0, b = 0;
  PVOID volatile p = &a;
  EXPECT_EQ(InterlockedExchangePointer(&p, &b), &a);
  EXPECT_EQ(InterlockedCompareExchangePointer(&p, &a, &a), &b) << "no match";
  EXPECT_EQ(p, &b);
  EXPECT_EQ(InterlockedCompareExchangePointer(&p, &a, &b), &b);
  EXPECT_EQ(p, &a);
}

TEST(Win32Interlocked, ContendedIncrementsAndAddsAreAtomic) {
  volatile LONG64 counter = 0xFFFFFF00ll;
  volatile LONG64 sum = 0;
  constexpr int kThreads = 4, kEach = 100000;
  std::vector<std::thread> ts;
  for (int i = 0; i < kThreads; ++i) {
    ts.emplace_back([&] {
      for (int k = 0; k < kEach; ++k) {
        InterlockedIncrement64(&counter);
        InterlockedExchangeAdd64(&sum, 0x100000000ll);
      }
    });
  }
  for (std::thread& t : ts) t.join();
  EXPECT_EQ(counter, 0xFFFFFF00ll + kThreads * kEach);
  EXPECT_EQ(sum, 0x100000000ll * kThreads * kEach);
}

// ---- Clocks ----------------------------------------------------------------------------------

TEST(Win32Clock, PerformanceCounterIsMonotonicAndMatchesWallTime) {
  LARGE_INTEGER freq, a, b;
  ASSERT_TRUE(QueryPerformanceFrequency(&freq));
  ASSERT_GT(freq.QuadPart, 0);
  ASSERT_TRUE(QueryPerformanceCounter(&a));
  LONGLONG prev = a.QuadPart;
  for (int i = 0; i < 10000; ++i) {
    LARGE_INTEGER now;
    QueryPerformanceCounter(&now);
    ASSERT_GE(now.QuadPart, prev) << "went backwards";
    prev = now.QuadPart;
  }
  ASSERT_TRUE(QueryPerformanceCounter(&a));
  const Clock::time_point start = Clock::now();
  std::this_thread::sleep_for(milliseconds(50));
  ASSERT_TRUE(QueryPerformanceCounter(&b));
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const double counted = static_cast<double>(b.QuadPart - a.QuadPart) / freq.QuadPart;
  EXPECT_GT(counted, wall * 0.8) << "counter seconds " << counted << ", wall " << wall;
  EXPECT_LT(counted, wall * 1.25 + 0.005) << "counter seconds " << counted << ", wall " << wall;
  EXPECT_GE(counted, 0.045);
  EXPECT_FALSE(QueryPerformanceCounter(nullptr));
}

TEST(Win32Clock, SleepTickCountAndSystemTime) {
  const ULONGLONG t0 = GetTickCount64();
  const Clock::time_point start = Clock::now();
  Sleep(60);
  const int64_t slept = MsSince(start);
  const ULONGLONG t1 = GetTickCount64();
  EXPECT_GE(slept, 59);
  EXPECT_LT(slept, kBound);
  EXPECT_GE(t1 - t0, 50u);
  EXPECT_LE(t1 - t0, static_cast<ULONGLONG>(slept) + 20);
  const DWORD low = GetTickCount();
  const DWORD low64 = static_cast<DWORD>(GetTickCount64());
  EXPECT_LE(low64 - low, 5u) << "GetTickCount is GetTickCount64's low 32 bits";
  const Clock::time_point y = Clock::now();
  Sleep(0);
  EXPECT_LT(MsSince(y), 1000) << "Sleep(0) only yields";

  FILETIME ft;
  GetSystemTimeAsFileTime(&ft);
  const uint64_t hundred_ns = (uint64_t{ft.dwHighDateTime} << 32) | ft.dwLowDateTime;
  const int64_t unix_secs = static_cast<int64_t>(hundred_ns / 10000000ull) - 11644473600ll;
  EXPECT_LE(std::llabs(unix_secs - static_cast<int64_t>(time(nullptr))), 2);
}

// ---- GetSystemTimes / GetSystemInfo --------------------------------------------------------

uint64_t Ft(const FILETIME& f) { return (uint64_t{f.dwHighDateTime} << 32) | f.dwLowDateTime; }

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

TEST(Win32SystemTimes, MonotonicIdleWithinKernelAndCountsOurOwnWork) {
  FILETIME i0, k0, u0, i1, k1, u1;
  ASSERT_TRUE(GetSystemTimes(&i0, &k0, &u0));
  EXPECT_LE(Ft(i0), Ft(k0)) << "kernel time includes idle time";

  // Burn ~200 ms of this thread's CPU: the machine's busy time (kernel - idle + user) must grow
  // by at least most of it.
  const double cpu0 = ThreadCpuSeconds();
  volatile uint64_t x = 0;
  while (ThreadCpuSeconds() - cpu0 < 0.2) x = x + 1;
  const double burnt = ThreadCpuSeconds() - cpu0;

  ASSERT_TRUE(GetSystemTimes(&i1, &k1, &u1));
  EXPECT_LE(Ft(i1), Ft(k1));
  EXPECT_GE(Ft(i1), Ft(i0));
  EXPECT_GE(Ft(k1), Ft(k0));
  EXPECT_GE(Ft(u1), Ft(u0));
  const double busy =
      static_cast<double>((Ft(k1) - Ft(i1)) - (Ft(k0) - Ft(i0)) + (Ft(u1) - Ft(u0))) / 1e7;
  EXPECT_GE(busy, burnt * 0.7) << "burnt " << burnt << " s of CPU, busy grew " << busy << " s";

  // All CPUs' time since boot: about uptime times the CPUs (100 ns units), within a factor.
  std::ifstream up("/proc/uptime");
  double uptime = 0;
  up >> uptime;
  SYSTEM_INFO si;
  GetSystemInfo(&si);
  const double total = static_cast<double>(Ft(k1) + Ft(u1)) / 1e7;
  EXPECT_GT(total, uptime * si.dwNumberOfProcessors * 0.5) << "uptime " << uptime;
  EXPECT_LT(total, uptime * si.dwNumberOfProcessors * 1.5 + 10) << "uptime " << uptime;

  // Any argument may be NULL.
  EXPECT_TRUE(GetSystemTimes(nullptr, &k0, nullptr));
}

TEST(Win32SystemInfo, ProcessorsAndPagesAreTheMachines) {
  SYSTEM_INFO si;
  memset(&si, 0xAB, sizeof(si));
  GetSystemInfo(&si);
  std::ifstream stat("/proc/stat");
  std::string line;
  DWORD cpus = 0;
  while (std::getline(stat, line)) {
    if (line.size() > 3 && line.compare(0, 3, "cpu") == 0 && line[3] >= '0' && line[3] <= '9') {
      ++cpus;
    }
  }
  EXPECT_EQ(si.dwNumberOfProcessors, cpus) << "the CPUs /proc/stat lists";
  EXPECT_EQ(si.dwPageSize, static_cast<DWORD>(getpagesize()));
  EXPECT_EQ(si.dwAllocationGranularity % si.dwPageSize, 0u);
  if (cpus < 64) {
    EXPECT_EQ(static_cast<DWORD>(__builtin_popcountll(si.dwActiveProcessorMask)), cpus);
  }
#if defined(__x86_64__)
  EXPECT_EQ(si.wProcessorArchitecture, PROCESSOR_ARCHITECTURE_AMD64);
#endif
  EXPECT_LT(si.lpMinimumApplicationAddress, si.lpMaximumApplicationAddress);
  SYSTEM_INFO native;
  GetNativeSystemInfo(&native);
  EXPECT_EQ(native.dwNumberOfProcessors, si.dwNumberOfProcessors);
}

// ---- Memory ----------------------------------------------------------------------------------

TEST(Win32Heap, ZeroMemoryFlagZeroesAReusedBlock) {
  HANDLE heap = GetProcessHeap();
  ASSERT_NE(heap, nullptr);
  constexpr SIZE_T kSize = 4000;
  // Fill blocks with a pattern and free them, so that the next ones likely reuse their memory.
  for (int round = 0; round < 8; ++round) {
    std::vector<unsigned char*> dirty;
    for (int i = 0; i < 4; ++i) {
      auto* p = static_cast<unsigned char*>(HeapAlloc(heap, 0, kSize));
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
      memset(p, 0xA5, kSize);
      dirty.push_back(p);
    }
    for (unsigned char* p : dirty) EXPECT_TRUE(HeapFree(heap, 0, p));
    auto* z = static_cast<unsigned char*>(HeapAlloc(heap, HEAP_ZERO_MEMORY, kSize));
    ASSERT_NE(z, nullptr);
    size_t nonzero = 0;
    for (SIZE_T i = 0; i < kSize; ++i) nonzero += z[i] != 0;
    EXPECT_EQ(nonzero, 0u) << "HEAP_ZERO_MEMORY left bytes set";
    EXPECT_TRUE(HeapFree(heap, 0, z));
  }
  EXPECT_TRUE(HeapFree(heap, 0, nullptr));
  int not_a_heap;
  EXPECT_EQ(HeapAlloc(&not_a_heap, 0, 16), nullptr);
  EXPECT_FALSE(HeapFree(&not_a_heap, 0, nullptr));
}

// The permissions /proc/self/maps shows for the mapping that holds `p` ("" if none).
std::string MapPerms(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms;
    in >> range >> perms;
    const size_t dash = range.find('-');
    const uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
    const uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (a >= lo && a < hi) return perms;
  }
  return "";
}

bool Mapped(const void* p, size_t len) {
  std::vector<unsigned char> vec((len + 4095) / 4096 + 1);
  return mincore(const_cast<void*>(p), len, vec.data()) == 0;
}

TEST(Win32Virtual, CommittedPagesAreZeroWritableAndReleased) {
  const size_t page = static_cast<size_t>(getpagesize());
  const size_t len = 3 * page + 100;
  auto* p = static_cast<unsigned char*>(
      VirtualAlloc(nullptr, len, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (64 * 1024), 0u) << "64 KiB allocation granularity";
  size_t nonzero = 0;
  for (size_t i = 0; i < len; ++i) nonzero += p[i] != 0;
  EXPECT_EQ(nonzero, 0u);
  for (size_t i = 0; i < len; ++i) p[i] = static_cast<unsigned char>(i);
  for (size_t i = 0; i < len; i += 997) ASSERT_EQ(p[i], static_cast<unsigned char>(i));
  EXPECT_EQ(MapPerms(p).substr(0, 3), "rw-");
  EXPECT_TRUE(Mapped(p, len));

  EXPECT_FALSE(VirtualFree(p, len, MEM_RELEASE)) << "MEM_RELEASE takes size 0";
  EXPECT_EQ(GetLastError(), ERROR_INVALID_PARAMETER);
  EXPECT_FALSE(VirtualFree(p + page, 0, MEM_RELEASE)) << "and the region's base";
  EXPECT_EQ(GetLastError(), ERROR_INVALID_ADDRESS);
  EXPECT_TRUE(VirtualFree(p, 0, MEM_RELEASE));
  EXPECT_FALSE(Mapped(p, len)) << "released pages are still mapped";
  EXPECT_FALSE(VirtualFree(p, 0, MEM_RELEASE)) << "released twice";
}

TEST(Win32Virtual, ReserveThenCommitAndDecommit) {
  const size_t page = static_cast<size_t>(getpagesize());
  auto* base =
      static_cast<unsigned char*>(VirtualAlloc(nullptr, 16 * page, MEM_RESERVE, PAGE_NOACCESS));
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(MapPerms(base).substr(0, 3), "---") << "reserved, not committed";
  unsigned char* mid = base + 4 * page + 10;
  auto* got = static_cast<unsigned char*>(VirtualAlloc(mid, 100, MEM_COMMIT, PAGE_READWRITE));
  EXPECT_EQ(got, base + 4 * page) << "the page that holds the address";
  EXPECT_EQ(MapPerms(got).substr(0, 3), "rw-");
  EXPECT_EQ(MapPerms(base).substr(0, 3), "---");
  memset(got, 0x5A, page);
  EXPECT_TRUE(VirtualFree(got, page, MEM_DECOMMIT));
  EXPECT_EQ(MapPerms(got).substr(0, 3), "---");
  ASSERT_EQ(VirtualAlloc(got, page, MEM_COMMIT, PAGE_READONLY), got);
  EXPECT_EQ(MapPerms(got).substr(0, 3), "r--");
  EXPECT_EQ(got[0], 0) << "a decommitted page reads zero when committed again";
  EXPECT_EQ(VirtualAlloc(base + 64 * page, page, MEM_COMMIT, PAGE_READWRITE), nullptr)
      << "outside every reservation";
  EXPECT_EQ(GetLastError(), ERROR_INVALID_ADDRESS);
  EXPECT_EQ(VirtualAlloc(nullptr, page, MEM_COMMIT, 0x12345), nullptr);
  EXPECT_EQ(GetLastError(), ERROR_INVALID_PARAMETER);
  EXPECT_TRUE(VirtualFree(base, 0, MEM_RELEASE));
  EXPECT_FALSE(Mapped(base, 16 * page));
}

// ---- Winsock ---------------------------------------------------------------------------------

TEST(Win32Winsock, StartupVersionsAndCleanupCount) {
  WSADATA d;
  ASSERT_EQ(WSAStartup(MAKEWORD(2, 2), &d), 0);
  EXPECT_EQ(d.wVersion, 0x0202);
  EXPECT_EQ(d.wHighVersion, 0x0202);
  EXPECT_STRNE(d.szDescription, "");
  ASSERT_EQ(WSAStartup(MAKEWORD(1, 1), &d), 0);
  EXPECT_EQ(d.wVersion, 0x0101);
  ASSERT_EQ(WSAStartup(MAKEWORD(3, 0), &d), 0);
  EXPECT_EQ(d.wVersion, 0x0202) << "a newer request gets the highest";
  EXPECT_EQ(WSAStartup(MAKEWORD(0, 9), &d), WSAVERNOTSUPPORTED);
  EXPECT_EQ(WSAStartup(MAKEWORD(2, 2), nullptr), WSAEFAULT);
  EXPECT_EQ(WSACleanup(), 0);
  EXPECT_EQ(WSACleanup(), 0);
  EXPECT_EQ(WSACleanup(), 0);
  EXPECT_EQ(WSACleanup(), SOCKET_ERROR) << "one more WSACleanup than WSAStartups";
  EXPECT_EQ(WSAGetLastError(), WSANOTINITIALISED);
  WSASetLastError(1234);
  EXPECT_EQ(GetLastError(), 1234u);
}

// Parses `s` as AddressFamily `family` into a sockaddr_storage; the result code.
int Parse(const char* s, int family, sockaddr_storage* ss, int* len) {
  memset(ss, 0xEE, sizeof(*ss));
  *len = sizeof(*ss);
  return WSAStringToAddressA(const_cast<char*>(s), family, nullptr,
                             reinterpret_cast<sockaddr*>(ss), len);
}

struct V4Case {
  const char* text;
  const char* addr;
  uint16_t port;
};

TEST(Win32Winsock, StringToAddressIpv4GoodForms) {
  const V4Case cases[] = {
      {"192.168.1.2", "192.168.1.2", 0},       {"10.0.0.1:4791", "10.0.0.1", 4791},
      {"0.0.0.0:65535", "0.0.0.0", 65535},     {"127.1", "127.0.0.1", 0},
      {"1.2.65535", "1.2.255.255", 0},         {"0x7f.1", "127.0.0.1", 0},
      {"010.0.0.1", "8.0.0.1", 0},             {"4294967295", "255.255.255.255", 0},
      {"1.2.3.4:0x10", "1.2.3.4", 16},         {"0xC0.0xA8.0.1:54331", "192.168.0.1", 54331},
  };
  for (const V4Case& c : cases) {
    sockaddr_storage ss;
    int len;
    ASSERT_EQ(Parse(c.text, AF_INET, &ss, &len), 0) << c.text;
    EXPECT_EQ(len, static_cast<int>(sizeof(sockaddr_in))) << c.text;
    const auto* sin = reinterpret_cast<const sockaddr_in*>(&ss);
    EXPECT_EQ(sin->sin_family, AF_INET) << c.text;
    char buf[INET_ADDRSTRLEN];
    EXPECT_STREQ(inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf)), c.addr) << c.text;
    EXPECT_EQ(ntohs(sin->sin_port), c.port) << c.text;
    for (unsigned char z : sin->sin_zero) EXPECT_EQ(z, 0) << c.text << ": sin_zero not zeroed";
  }
}

TEST(Win32Winsock, StringToAddressIpv4BadForms) {
  const char* bad[] = {"",          "1.2.3.4.5",     "256.1.1.1",   "1.2.3.4:",
                       "1.2.3.4:65536", "1.2.3.4 ",  " 1.2.3.4",    "1.2.3.",
                       "a.b.c.d",   "1.2.3.4:80x",   "08.1.1.1",    "::1",
                       "1.2.65536", "1.2.3.256",     "1.2.3.4::80", "1.2.3.4:-1",
                       "0x",        "1..2.3"};
  for (const char* s : bad) {
    sockaddr_storage ss;
    int len;
    WSASetLastError(0);
    EXPECT_EQ(Parse(s, AF_INET, &ss, &len), SOCKET_ERROR) << "'" << s << "'";
    EXPECT_EQ(WSAGetLastError(), WSAEINVAL) << "'" << s << "'";
  }
  EXPECT_EQ(WSAStringToAddressA(nullptr, AF_INET, nullptr, nullptr, nullptr), SOCKET_ERROR);
}

struct V6Case {
  const char* text;
  const char* addr;
  uint16_t port;
  uint32_t scope;
};

TEST(Win32Winsock, StringToAddressIpv6GoodForms) {
  const V6Case cases[] = {
      {"::1", "::1", 0, 0},
      {"[::1]:4791", "::1", 4791, 0},
      {"[2001:db8::1]", "2001:db8::1", 0, 0},
      {"fe80::1%2", "fe80::1", 0, 2},
      {"[fe80::1%3]:80", "fe80::1", 80, 3},
      {"::ffff:1.2.3.4", "::ffff:1.2.3.4", 0, 0},
      {"[fd00::1]:65535", "fd00::1", 65535, 0},
  };
  for (const V6Case& c : cases) {
    sockaddr_storage ss;
    int len;
    ASSERT_EQ(Parse(c.text, AF_INET6, &ss, &len), 0) << c.text;
    EXPECT_EQ(len, static_cast<int>(sizeof(sockaddr_in6))) << c.text;
    const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    EXPECT_EQ(sin6->sin6_family, AF_INET6) << c.text;
    char buf[INET6_ADDRSTRLEN];
    EXPECT_STREQ(inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof(buf)), c.addr) << c.text;
    EXPECT_EQ(ntohs(sin6->sin6_port), c.port) << c.text;
    EXPECT_EQ(sin6->sin6_scope_id, c.scope) << c.text;
    EXPECT_EQ(sin6->sin6_flowinfo, 0u) << c.text;
  }
}

TEST(Win32Winsock, StringToAddressIpv6BadForms) {
  const char* bad[] = {"[::1",   "::1]",      "[::1]:",      "[::1]:70000", "1.2.3.4",
                       "[::1]80", "fe80::1%", "gg::1",       "",            "[]:80",
                       "[::1] ", "::1 ",      "[::1]:80:90", "[::1%x]"};
  for (const char* s : bad) {
    sockaddr_storage ss;
    int len;
    WSASetLastError(0);
    EXPECT_EQ(Parse(s, AF_INET6, &ss, &len), SOCKET_ERROR) << "'" << s << "'";
    EXPECT_EQ(WSAGetLastError(), WSAEINVAL) << "'" << s << "'";
  }
}

TEST(Win32Winsock, StringToAddressBufferFamilyAndWideForm) {
  sockaddr_in sin;
  INT len = 8;
  char v4[] = "10.1.2.3:80";
  EXPECT_EQ(WSAStringToAddressA(v4, AF_INET, nullptr, reinterpret_cast<sockaddr*>(&sin), &len),
            SOCKET_ERROR);
  EXPECT_EQ(WSAGetLastError(), WSAEFAULT);
  EXPECT_EQ(len, static_cast<INT>(sizeof(sockaddr_in))) << "the size needed";
  sockaddr_in6 sin6;
  len = sizeof(sockaddr_in);
  char v6[] = "::1";
  EXPECT_EQ(WSAStringToAddressA(v6, AF_INET6, nullptr, reinterpret_cast<sockaddr*>(&sin6), &len),
            SOCKET_ERROR);
  EXPECT_EQ(WSAGetLastError(), WSAEFAULT);
  EXPECT_EQ(len, static_cast<INT>(sizeof(sockaddr_in6)));
  len = sizeof(sin);
  EXPECT_EQ(WSAStringToAddressA(v4, AF_UNIX, nullptr, reinterpret_cast<sockaddr*>(&sin), &len),
            SOCKET_ERROR);
  EXPECT_EQ(WSAGetLastError(), WSAEINVAL);

  wchar_t w4[] = L"10.1.2.3:80";
  len = sizeof(sin);
  ASSERT_EQ(WSAStringToAddressW(w4, AF_INET, nullptr, reinterpret_cast<sockaddr*>(&sin), &len), 0);
  EXPECT_EQ(sin.sin_addr.s_addr, htonl(0x0A010203u));
  EXPECT_EQ(ntohs(sin.sin_port), 80);
  wchar_t w6[] = L"[fe80::2%7]:9";
  len = sizeof(sin6);
  ASSERT_EQ(WSAStringToAddressW(w6, AF_INET6, nullptr, reinterpret_cast<sockaddr*>(&sin6), &len),
            0);
  EXPECT_EQ(ntohs(sin6.sin6_port), 9);
  EXPECT_EQ(sin6.sin6_scope_id, 7u);
  wchar_t accent[] = L"10.1.2.3\u00e9";
  len = sizeof(sin);
  EXPECT_EQ(
      WSAStringToAddressW(accent, AF_INET, nullptr, reinterpret_cast<sockaddr*>(&sin), &len),
      SOCKET_ERROR);
  EXPECT_EQ(WSAGetLastError(), WSAEINVAL);
  // Without UNICODE the generic name is the A form.
  len = sizeof(sin);
  EXPECT_EQ(WSAStringToAddress(v4, AF_INET, nullptr, reinterpret_cast<sockaddr*>(&sin), &len), 0);
}

// ---- Macros ----------------------------------------------------------------------------------

struct __declspec(align(64)) Aligned {
  char c;
};
__declspec(noinline) int NotInlined(int x) { return x + 1; }
__forceinline int Inlined(int x) { return x * 2; }
class __declspec(novtable) NoVtable {
 public:
  virtual ~NoVtable() = default;
};

TEST(Win32Macros, DeclspecCountofAndWordMacros) {
  static_assert(alignof(Aligned) == 64, "__declspec(align(64))");
  EXPECT_EQ(NotInlined(1) + Inlined(2), 6);
  int arr[7];
  static_assert(_countof(arr) == 7, "_countof");
  static_assert(ARRAYSIZE(arr) == 7, "ARRAYSIZE");
  EXPECT_EQ(MAKEWORD(2, 2), 0x0202);
  EXPECT_EQ(MAKEWORD(0x1234, 0x5678), 0x7834) << "each half is a byte";
  EXPECT_EQ(LOBYTE(0x1234), 0x34);
  EXPECT_EQ(HIBYTE(0x1234), 0x12);
  EXPECT_EQ(LOWORD(0x12345678u), 0x5678);
  EXPECT_EQ(HIWORD(0x12345678u), 0x1234);
  EXPECT_EQ(static_cast<DWORD>(MAKELONG(0x5678, 0x1234)), 0x12345678u);
  unsigned char buf[16];
  memset(buf, 1, sizeof(buf));
  ZeroMemory(buf, 8);
  FillMemory(buf + 8, 4, 0x7F);
  EXPECT_EQ(buf[7], 0);
  EXPECT_EQ(buf[8], 0x7F);
  EXPECT_EQ(buf[12], 1);
  SecureZeroMemory(buf, sizeof(buf));
  EXPECT_EQ(buf[12], 0);
  UNREFERENCED_PARAMETER(arr);
}

}  // namespace
