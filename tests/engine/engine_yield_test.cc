// SPDX-License-Identifier: MIT
// EngineOptions::adaptive_yield: a dedicated engine's idle passes pause in place while its
// CPU is its own and yield it (sched_yield) while another thread that wants that CPU is found
// waiting — whatever process that thread belongs to — and stop yielding once it is gone. The
// test pins itself (and so the engine's thread and its competitor, which inherit the mask) to
// one CPU, so the competitor's presence is certain. Alone in its meson entry (is_parallel
// false): another test's threads would be competitors too.
#include <dirent.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "stack/engine/engine.h"
#include "tests/port/port_test_env.h"
#include "tests/support/test_support.h"
#include "tools/lib/two_stacks.h"

namespace roce::engine {
namespace {

using roce::testing::PinnedToOneCpu;
using roce::testing::PollUntil;
using std::chrono::milliseconds;

// Involuntary context switches of every thread of this process (/proc/self/task/*/status):
// while the test's own threads sleep, what grows is the engine thread's preemptions.
uint64_t ProcessInvoluntarySwitches() {
  uint64_t n = 0;
  DIR* d = opendir("/proc/self/task");
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/status");
    std::string line;
    while (std::getline(f, line))
      if (line.rfind("nonvoluntary_ctxt_switches:", 0) == 0) n += std::stoull(line.substr(27));
  }
  closedir(d);
  return n;
}

TEST(EngineYield, AdaptiveYieldFollowsContentionForTheCpu) {
  PinnedToOneCpu pin;  // this thread; new threads inherit it
  ASSERT_TRUE(pin.ok());

  for (const bool adaptive : {true, false}) {
    SCOPED_TRACE(adaptive ? "adaptive_yield on" : "adaptive_yield off");
    tools::TwoStacksOptions o;
    o.ring = adaptive ? "eng_ady_on" : "eng_ady_off";
    o.adaptive_yield = adaptive;
    o.idle_sleep_max_ns = 0;  // always spin when idle: the passes the option is about
    auto t = tools::TwoStacks::Open(o);
    ASSERT_TRUE(t.ok()) << t.status();
    Engine& e = *(*t)->a().eng;
    ASSERT_TRUE(e.Start().ok());

    // A competitor spinning on the same CPU: the engine's thread is preempted, notices, yields.
    std::atomic<bool> stop{false};
    std::thread competitor([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
    const uint64_t y0 = e.idle_yields();
    const bool on = PollUntil(2000, 5, [&] { return e.yielding(); });
    std::this_thread::sleep_for(milliseconds(100));
    const uint64_t yields_contended = e.idle_yields() - y0;
    stop = true;
    competitor.join();
    // Alone again: the yielding ends once the hold runs out. This thread looks less often
    // than the hold (kContentionHoldNs, 50 ms): its own waking preempts the engine's. A
    // machine busy with other work keeps preempting the engine, and then it rightly goes on
    // yielding: still yielding is a failure only if the engine was left alone meanwhile.
    const uint64_t sw0 = ProcessInvoluntarySwitches();
    const bool off = PollUntil(3000, 100, [&] { return !e.yielding(); });
    const uint64_t preempted = ProcessInvoluntarySwitches() - sw0;
    std::printf("%s: yielding seen %d, %llu yields in 100 ms of contention, off again %d (%llu preemptions meanwhile)\n",
                adaptive ? "on" : "off", on, static_cast<unsigned long long>(yields_contended), off,
                static_cast<unsigned long long>(preempted));
    if (adaptive) {
      EXPECT_TRUE(on) << "a competitor on the engine thread's CPU was never noticed";
      EXPECT_GT(yields_contended, 0u);
      // Each 100 ms look preempts it once; more than that many means other work on the CPU.
      EXPECT_TRUE(off || preempted > 40) << "still yielding 3 s after the competitor left, though the engine "
                                            "was preempted only " << preempted << " times meanwhile";
    } else {
      EXPECT_FALSE(on);
      EXPECT_EQ(yields_contended, 0u);
    }
    e.Stop();
    t->reset();
  }
}

}  // namespace
}  // namespace roce::engine
