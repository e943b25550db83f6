// SPDX-License-Identifier: MIT
#include "stack/port/eal.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/synchronization/notification.h>
#include <absl/time/time.h>

#include "stack/port/dpdk.h"

namespace roce::port {
namespace {
// 0: never initialized, 1: initialized, 2: cleaned up (cannot init again).
std::atomic<int> g_state{0};
}  // namespace

std::vector<std::string> EalArgs(const EalOptions& o) {
  std::vector<std::string> a = {"soft-rnic"};
  if (o.hugepages) {
    a.push_back("--in-memory");
  } else {
    a.push_back("--no-huge");
    a.push_back("--no-shconf");
    a.push_back("-m");
    a.push_back(std::to_string(o.memory_mb));
  }
  if (o.allow.empty()) {
    a.push_back("--no-pci");
  } else {
    for (const auto& dev : o.allow) {
      a.push_back("-a");
      a.push_back(dev);
    }
  }
  // "0", "0-1" go to -l; a mapping such as "0@(0-1)" (lcore 0 floating over
  // CPUs 0-1) needs --lcores.
  a.push_back(o.lcores.find('@') != std::string::npos ? "--lcores" : "-l");
  a.push_back(o.lcores);
  a.push_back(absl::StrCat("--log-level=", o.log_level));
  if (!o.telemetry) a.push_back("--no-telemetry");
  for (const auto& e : o.extra) a.push_back(e);
  return a;
}

namespace {
// A number of /proc/meminfo ("HugePages_Total:", ...); 0 if it is not there.
long Meminfo(const char* key) {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  const size_t n = std::strlen(key);
  while (std::getline(meminfo, line))
    if (line.compare(0, n, key) == 0) return std::strtol(line.c_str() + n, nullptr, 10);
  return 0;
}
}  // namespace

uint64_t FreeHugepageBytes() {
  return static_cast<uint64_t>(std::max(0L, Meminfo("HugePages_Free:"))) *
         static_cast<uint64_t>(std::max(0L, Meminfo("Hugepagesize:"))) * 1024;
}

absl::Status CheckHugepages() {
  const long total = Meminfo("HugePages_Total:");
  std::string line;
  std::ifstream mounts("/proc/mounts");
  bool mounted = false;
  while (std::getline(mounts, line)) mounted |= line.find(" hugetlbfs ") != std::string::npos;
  if (total > 0 && mounted) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "eal.hugepages = yes but ", total == 0 ? "no hugepages are reserved" : "no hugetlbfs is mounted",
      ": echo 512 > /proc/sys/vm/nr_hugepages; mkdir -p /dev/hugepages; "
      "mount -t hugetlbfs nodev /dev/hugepages (or use hugepages = no)"));
}

absl::Status InitEal(const EalOptions& opts) {
  if (g_state.load() == 1) return absl::FailedPreconditionError("EAL already initialized");
  if (g_state.load() == 2)
    return absl::FailedPreconditionError("EAL was cleaned up; rte_eal_init runs once per process");
  if (opts.hugepages)
    if (absl::Status s = CheckHugepages(); !s.ok()) return s;
  std::vector<std::string> args = EalArgs(opts);
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  int rc = rte_eal_init(static_cast<int>(args.size()), argv.data());
  if (rc < 0) {
    int err = rte_errno;
    if (err == EALREADY) g_state = 1;
    return absl::InternalError(absl::StrCat("rte_eal_init(", absl::StrJoin(args, " "),
                                            ") failed: ", rte_strerror(err), " (", err, ")"));
  }
  g_state = 1;
  return absl::OkStatus();
}

bool EalInitialized() { return g_state.load() == 1; }

namespace {

struct InterruptThreadCall {
  absl::FunctionRef<void()> fn;
  absl::Notification done;
  static void Run(void* arg) {
    auto* c = static_cast<InterruptThreadCall*>(arg);
    c->fn();
    c->done.Notify();
  }
};

// One call through an EAL alarm: alarm callbacks run on the interrupt thread,
// between (never during) other interrupt callbacks.
void CallOnce(absl::FunctionRef<void()> fn, uint64_t delay_us) {
  InterruptThreadCall call{fn, {}};
  if (rte_eal_alarm_set(delay_us, &InterruptThreadCall::Run, &call) != 0) {
    fn();  // alarms unavailable
    return;
  }
  if (call.done.WaitForNotificationWithTimeout(absl::Seconds(10))) return;
  // The interrupt thread is stuck or gone. rte_eal_alarm_cancel waits for a
  // callback that is already running, so after it either the call ran (or is
  // about to signal) or it never will and this thread makes it.
  if (rte_eal_alarm_cancel(&InterruptThreadCall::Run, &call) > 0)
    fn();
  else
    call.done.WaitForNotification();
}

}  // namespace

void RunOnInterruptThread(absl::FunctionRef<void()> fn) {
  if (!EalInitialized() || rte_thread_is_intr()) {
    fn();
    return;
  }
  CallOnce(fn, 1);
  // If fn (un)registered interrupt sources, the thread rebuilds its epoll set
  // from the source list once fn's callback has returned (woken by a pipe
  // the change wrote), while this thread is already on its way. An empty
  // call a millisecond later runs after that rebuild unless the thread
  // stalled for the whole millisecond (EAL offers no stronger signal: the
  // alarm and the pipe can arrive in one epoll batch, in either order).
  CallOnce([] {}, 1000);
}

void CleanupEal() {
  RunOnInterruptThread([] {});  // no-op unless the EAL is up (it checks)
  if (g_state.exchange(2) == 1) rte_eal_cleanup();
}

}  // namespace roce::port
