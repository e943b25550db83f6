// SPDX-License-Identifier: MIT
// A dedicated engine on a net_tap port, in a network namespace the test creates
// (root), sleeping on the port's RX interrupt (PortProfile::rx_interrupt):
//  - with naps far longer than the kernel's ARP patience, an idle engine still
//    answers the kernel's ARP requests at once (a frame ends its nap); with the
//    interrupt off the port has no fd and the engine's naps end on their own;
//  - with a thread that never yields spinning on the engine thread's CPU (an
//    application polling memory for a Write), the engine notices that its
//    yields come back late, sleeps as soon as it is idle, and is woken by
//    each frame.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <absl/strings/match.h>
#include <absl/strings/str_format.h>
#include <gtest/gtest.h>

#include "stack/engine/engine.h"
#include "stack/port/port.h"
#include "stack/port/profile.h"
#include "tests/port/port_test_env.h"
#include "tests/support/test_support.h"

namespace roce::engine {
namespace {

using namespace roce::port::testing;
using roce::testing::PinnedToOneCpu;
using roce::testing::PollUntil;
using roce::testing::SourcePath;
using std::chrono::milliseconds;

struct TapEngine {
  std::unique_ptr<Netns> ns;
  std::string ifname;
  std::unique_ptr<port::Port> port;
  std::unique_ptr<Engine> eng;
};

// A tap in its own namespace with the kernel at 192.0.2.1 and the engine at
// 192.0.2.2, the engine's thread started.
void OpenTapEngine(const char* tag, bool rx_interrupt, const EngineOptions& eo, TapEngine* t) {
  static int n = 0;
  t->ns = std::make_unique<Netns>(tag);
  ASSERT_TRUE(t->ns->ok());
  t->ns->Exec("sysctl -qw net.ipv6.conf.default.disable_ipv6=1");
  t->ifname = absl::StrFormat("rwk%x%d", static_cast<unsigned>(getpid()) & 0xffff, n++).substr(0, 15);
  auto prof = port::LoadProfile(
      SourcePath("drivers-cfg/net_tap.ini"),
      std::vector<std::string>{"port.devargs=iface=" + t->ifname + ",mac=fixed", "port.ipv4=192.0.2.2/24",
                               "port.ipv6=", std::string("port.rx_interrupt=") + (rx_interrupt ? "on" : "off")});
  ASSERT_TRUE(prof.ok()) << prof.status();
  {
    Netns::Enter in(*t->ns);
    ASSERT_TRUE(in.ok());
    auto p = port::Port::Open(*prof);
    ASSERT_TRUE(p.ok()) << p.status();
    t->port = std::move(*p);
  }
  EXPECT_EQ(t->port->RxWaitFd(0) >= 0, rx_interrupt);
  ASSERT_EQ(t->ns->Exec("ip addr add 192.0.2.1/24 dev " + t->ifname), 0);
  ASSERT_EQ(t->ns->Exec("ip link set " + t->ifname + " up"), 0);
  auto e = Engine::Create(t->port.get(), eo);
  ASSERT_TRUE(e.ok()) << e.status();
  t->eng = std::move(*e);
  EXPECT_EQ(t->eng->rx_wakeable(), rx_interrupt);
  ASSERT_TRUE(t->eng->Start().ok());
}

// Whether the kernel has resolved the engine's address.
bool KernelResolved(const TapEngine& t) {
  std::string out;
  t.ns->Exec("ip neigh show 192.0.2.2 dev " + t.ifname, &out);
  return absl::StrContains(out, "lladdr") && !absl::StrContains(out, "FAILED") &&
         !absl::StrContains(out, "INCOMPLETE");
}

// UDP datagrams from the kernel's side to the engine's address for `seconds`,
// `gap_us` apart: the kernel ARPs for it first (3 probes a second apart), then
// sends them (the engine counts and drops them: no RoCE). In the background.
std::thread KernelSends(const TapEngine& t, double seconds, int gap_us) {
  const std::string cmd = absl::StrFormat(
      "python3 -c 'import socket,time\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
      "end=time.time()+%f\nwhile time.time()<end:\n s.sendto(b\"x\",(\"192.0.2.2\",9))\n"
      " time.sleep(%f)\n' >/dev/null 2>&1",
      seconds, gap_us / 1e6);
  const Netns* ns = t.ns.get();
  return std::thread([ns, cmd] { ns->Exec(cmd); });
}

TEST(EngineTap, AnIdleEngineWakesForAFrameOnItsRxInterrupt) {
  if (!IsRoot()) GTEST_SKIP() << "needs root (tap, network namespace)";
  // With the interrupt an idle loop's nap is idle_sleep_max_ns at once: 20 s,
  // which a blind sleep would spend through all three of the kernel's probes.
  EngineOptions eo;
  eo.idle_spin_ns = 1'000'000;
  eo.idle_sleep_max_ns = 20'000'000'000;
  TapEngine t;
  ASSERT_NO_FATAL_FAILURE(OpenTapEngine("ewk", true, eo, &t));
  ASSERT_TRUE(PollUntil(2000, 5, [&] { return t.eng->naps() > 0; }));  // asleep, for 20 s
  std::this_thread::sleep_for(milliseconds(50));
  const uint64_t wakes0 = t.eng->rx_wakes(), naps0 = t.eng->naps();
  std::thread send = KernelSends(t, 0.2, 100'000);
  const bool resolved = PollUntil(3500, 20, [&] { return KernelResolved(t); });
  send.join();
  std::printf("resolved %d, rx_wakes %llu, naps %llu\n", resolved,
              static_cast<unsigned long long>(t.eng->rx_wakes() - wakes0),
              static_cast<unsigned long long>(t.eng->naps() - naps0));
  EXPECT_TRUE(resolved) << "the kernel's ARP went unanswered by an engine asleep on its RX interrupt";
  EXPECT_GT(t.eng->rx_wakes(), wakes0);
  t.eng->Stop();
}

TEST(EngineTap, WithoutTheInterruptTheEngineNapsBlind) {
  if (!IsRoot()) GTEST_SKIP() << "needs root (tap, network namespace)";
  TapEngine t;
  ASSERT_NO_FATAL_FAILURE(OpenTapEngine("enw", false, EngineOptions{}, &t));
  std::thread send = KernelSends(t, 0.2, 100'000);
  EXPECT_TRUE(PollUntil(3500, 20, [&] { return KernelResolved(t); }));  // found by a nap's end
  send.join();
  EXPECT_EQ(t.eng->rx_wakes(), 0u);
  t.eng->Stop();
}

TEST(EngineTap, OnACpuHeldByASpinnerTheEngineSleepsUntilAFrameComes) {
  if (!IsRoot()) GTEST_SKIP() << "needs root (tap, network namespace)";
  PinnedToOneCpu pin;  // the engine's thread and the spinner inherit it
  ASSERT_TRUE(pin.ok());
  EngineOptions eo;
  eo.adaptive_yield = true;  // the library's default for a progress thread
  TapEngine t;
  ASSERT_NO_FATAL_FAILURE(OpenTapEngine("ehg", true, eo, &t));
  EXPECT_FALSE(t.eng->sleeps_when_idle());
  std::atomic<bool> stop{false};
  std::thread spinner([&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  // Frames keep the engine busy; preempted by the spinner it yields, the
  // spinner keeps the CPU for the rest of its slice, the yield comes back late:
  // the engine then sleeps as soon as it is idle, and frames wake it.
  const uint64_t wakes0 = t.eng->rx_wakes();
  std::thread send = KernelSends(t, 3, 200);
  const bool resolved = PollUntil(3500, 20, [&] { return KernelResolved(t); });
  const bool hogged = PollUntil(3000, 5, [&] { return t.eng->sleeps_when_idle(); });
  send.join();
  const uint64_t wakes = t.eng->rx_wakes() - wakes0;
  stop = true;
  spinner.join();
  std::printf("sleeps when idle %d, resolved %d, rx_wakes %llu, idle yields %llu\n", hogged, resolved,
              static_cast<unsigned long long>(wakes), static_cast<unsigned long long>(t.eng->idle_yields()));
  EXPECT_TRUE(hogged) << "a spinner on the engine's CPU was never noticed";
  EXPECT_TRUE(resolved);
  EXPECT_GT(wakes, 0u);
  t.eng->Stop();
}

}  // namespace
}  // namespace roce::engine
