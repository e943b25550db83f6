// SPDX-License-Identifier: MIT
// progress_yield (nd2api/src/config.h): what an idle progress thread does —
// yield its CPU (sched_yield) or spin in place. Two adapters with progress
// threads exchange Sends both ways through the public ND2 API; then each
// adapter's engine telemetry (/roce/engine/stats, read in-process with
// port::QueryTelemetry: the one thing here beyond the public headers) says
// whether its thread yielded while idle, and whether this thread did after
// its GetResults found nothing on that adapter's queue:
//   on    both yielded; off  neither did;
//   auto  they did exactly when two progress threads and one polling
//         application thread outnumber the CPUs this process may use (the
//         test counts them itself, with sched_getaffinity).
// The exchange itself must be intact in every setting. The rule of auto is
// also checked on its own (ProgressYields) for set-ups this machine is not.
#include <sched.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include <ndspi.h>
#include <ndsupport.h>

#include "nd2_connect_support.h"
#include "stack/port/telemetry.h"

namespace roce::nd2 {
bool ProgressYields(int8_t setting, size_t progress_threads, size_t cpus);  // nd2api/src/config.h
}

namespace {

using nd2test::Hr;

size_t CpusHere() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  return static_cast<size_t>(CPU_COUNT(&set));
}

// A counter of every engine registered now (the two adapters' engines).
std::vector<uint64_t> EngineCounter(const char* name) {
  std::vector<uint64_t> out;
  for (uint64_t id = 0; id < 64; id++) {
    auto v = roce::port::QueryTelemetry("engine", id);
    if (!v.ok()) continue;
    auto it = v->u64.find(name);
    EXPECT_NE(it, v->u64.end()) << "engine " << id << " reports no " << name;
    if (it != v->u64.end()) out.push_back(it->second);
  }
  return out;
}

class Nd2ProgressYield : public ::testing::TestWithParam<const char*> {};

TEST_P(Nd2ProgressYield, IdleProgressThreadsYieldAsConfigured) {
  const std::string setting = GetParam();
  const std::string line = setting.empty() ? "" : "progress_yield = " + setting + "\n";
  const bool expect_yield = setting == "on" || (setting.empty() && 2 + 1 > CpusHere());
  nd2test::Process proc("nd2yield", /*thread=*/true, line, line);
  ASSERT_TRUE(proc.started());
  {
    nd2test::Side a, b;
    ASSERT_NO_FATAL_FAILURE(a.Open("10.0.0.1"));
    ASSERT_NO_FATAL_FAILURE(b.Open("10.0.0.2"));
    auto l = nd2test::Listen(b, "10.0.0.2", 7400);
    ASSERT_TRUE(l);
    const sockaddr_in dest = nd2test::V4("10.0.0.2", 7400);
    ASSERT_NO_FATAL_FAILURE(nd2test::Establish(a, b, l.get(), nd2test::Sa(dest), sizeof dest));
    // Ping-pong: a -> b, then b -> a, each 32 bytes with the round's number.
    for (int round = 0; round < 20; round++) {
      ASSERT_HR(b.Recv(nullptr, 0, 64), ND_SUCCESS);
      ASSERT_HR(a.Recv(nullptr, 0, 64), ND_SUCCESS);
      std::memset(a.buf.data() + 1024, 'a' + round, 32);
      ASSERT_HR(a.Send(nullptr, 1024, 32), ND_SUCCESS);
      auto rb = b.Next();
      ASSERT_TRUE(rb.has_value()) << "round " << round;
      ASSERT_HR(rb->Status, ND_SUCCESS);
      EXPECT_EQ(rb->BytesTransferred, 32u);
      EXPECT_EQ(std::memcmp(b.buf.data(), a.buf.data() + 1024, 32), 0) << "round " << round;
      std::memset(b.buf.data() + 1024, 'A' + round, 32);
      ASSERT_HR(b.Send(nullptr, 1024, 32), ND_SUCCESS);
      // a's completions: its Send, then the Receive of b's answer (either order
      // is allowed between a Send and a Receive; both must come, successful).
      int got = 0;
      for (int k = 0; k < 2; k++) {
        auto r = a.Next();
        ASSERT_TRUE(r.has_value()) << "round " << round;
        ASSERT_HR(r->Status, ND_SUCCESS);
        got += r->RequestType == Nd2RequestTypeReceive;
      }
      EXPECT_EQ(got, 1);
      EXPECT_EQ(std::memcmp(a.buf.data(), b.buf.data() + 1024, 32), 0) << "round " << round;
      auto sb = b.Next();  // b's Send
      ASSERT_TRUE(sb.has_value());
      ASSERT_HR(sb->Status, ND_SUCCESS);
    }
    // The engines' threads while idle; this thread after its empty GetResults
    // (both CQs were polled empty while waiting for the other side: counted
    // on the adapter's engine whose CQ it was).
    const std::vector<uint64_t> yields = EngineCounter("idle_yields");
    const std::vector<uint64_t> polls = EngineCounter("poller_yields");
    ASSERT_EQ(yields.size(), 2u) << "expected the two adapters' engines in telemetry";
    ASSERT_EQ(polls.size(), 2u);
    for (size_t i = 0; i < yields.size(); i++) {
      std::printf("%s: engine %zu yielded %llu times, its poller %llu\n", setting.empty() ? "auto" : setting.c_str(),
                  i, static_cast<unsigned long long>(yields[i]), static_cast<unsigned long long>(polls[i]));
      if (expect_yield) {
        EXPECT_GT(yields[i], 0u) << "engine " << i;
        EXPECT_GT(polls[i], 0u) << "engine " << i;
      } else {
        EXPECT_EQ(yields[i], 0u) << "engine " << i;
        EXPECT_EQ(polls[i], 0u) << "engine " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Keys, Nd2ProgressYield, ::testing::Values("", "on", "off"),
                         [](const testing::TestParamInfo<const char*>& i) {
                           return std::string(i.index == 0 ? "Auto" : i.index == 1 ? "On" : "Off");
                         });

// The rule of auto (-1), and on (1) / off (0) whatever the counts.
TEST(Nd2ProgressYieldRule, SpinningThreadsAgainstCpus) {
  using roce::nd2::ProgressYields;
  EXPECT_TRUE(ProgressYields(-1, 2, 2));    // two threaded adapters and the application on 2 CPUs
  EXPECT_FALSE(ProgressYields(-1, 1, 2));   // split: one progress thread, one application thread
  EXPECT_TRUE(ProgressYields(-1, 1, 1));    // one CPU
  EXPECT_FALSE(ProgressYields(-1, 3, 4));
  EXPECT_TRUE(ProgressYields(-1, 4, 4));
  EXPECT_FALSE(ProgressYields(-1, 0, 1));   // no progress thread: nothing to decide
  EXPECT_TRUE(ProgressYields(1, 1, 64));
  EXPECT_FALSE(ProgressYields(0, 8, 1));
}

}  // namespace
