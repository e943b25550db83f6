// SPDX-License-Identifier: MIT
// EAL set-up for the whole process. rte_eal_init can run only once per
// process (a second call, even after rte_eal_cleanup, fails with EALREADY), so
// InitEal is called once by main() (or a gtest Environment) and every port is
// created and destroyed on top of it.
//
// The embedded default needs nothing from the machine: virtual devices only,
// no hugepages, no shared config, no PCI (never probe the VM's own NIC),
// one lcore, quiet logs and enough memory for the mbuf pools:
//   --no-huge --no-shconf --no-pci -l 0 --log-level=error -m 256
// --no-huge --no-shconf also lets several test binaries run at once (no fixed
// file prefix). With hugepages=true it becomes --in-memory (hugetlbfs must be
// mounted; no files are left behind).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <absl/functional/function_ref.h>
#include <absl/status/status.h>

namespace roce::port {

struct EalOptions {
  bool hugepages = false;          // true: --in-memory; false: --no-huge --no-shconf
  uint32_t memory_mb = 256;        // -m (no-huge only: hugepages grow on demand)
  std::string lcores = "0";        // -l ("0@(0-1)": --lcores, lcore 0 floating over CPUs 0-1)
  std::string log_level = "error"; // --log-level
  bool telemetry = true;           // false: --no-telemetry
  std::vector<std::string> allow;  // -a <pci>[,devargs]; empty: --no-pci
  std::vector<std::string> extra;  // appended verbatim (e.g. --single-file-segments)
};

// The argument vector InitEal passes to rte_eal_init (argv[0] included).
std::vector<std::string> EalArgs(const EalOptions& opts);

// With hugepages: fails (before rte_eal_init, which cannot be retried) unless
// 2 MB pages are reserved and a hugetlbfs is mounted; the message says how.
absl::Status CheckHugepages();
// Bytes of reserved hugepages not in use (/proc/meminfo).
uint64_t FreeHugepageBytes();

// Initializes the EAL. Fails if it was already initialized in this process
// (by InitEal or by anyone else) or if rte_eal_init fails; the message names
// the arguments and rte_errno.
absl::Status InitEal(const EalOptions& opts = {});
bool EalInitialized();
// rte_eal_cleanup; the EAL cannot be initialized again afterwards. Waits
// first for the interrupt thread to be idle (see RunOnInterruptThread).
void CleanupEal();

// Runs fn on the EAL interrupt thread (where DPDK runs device interrupt,
// control-socket and alarm callbacks, one at a time) and returns when it has
// run and the thread is back waiting, its list of interrupt sources rebuilt
// after any change fn made (the rebuild reads the sources' handles, which
// live in DPDK memory: rte_eal_cleanup must not unmap it under the thread).
// Runs fn here if this is that thread or there is none. For driver
// operations that race those callbacks (closing a memif port).
void RunOnInterruptThread(absl::FunctionRef<void()> fn);

}  // namespace roce::port
