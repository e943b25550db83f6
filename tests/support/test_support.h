// SPDX-License-Identifier: MIT
// Shared helpers for the test suites: paths to the source tree, the reference
// captures, running an external command (tshark) and reading its output.
#pragma once

#include <sched.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "stack/pcap/pcap_file.h"

// Skips the current GoogleTest case with a reason that the skip rule accepts
// under CI=true (README, "Set-up"; tools/test_summary.py): only for a case
// that cannot run on this machine, CI machines included, e.g.
//   if (!HaveMlx5()) ROCE_SKIP_ALLOWED("needs an mlx5 NIC (none here)");
// The reason becomes the line "SKIP-ALLOWED: <reason>" of the skip message.
// "Needs root" or "needs qemu" are no such reason (CI is root with qemu): use
// GTEST_SKIP for those; a plain GTEST_SKIP fails under CI=true.
#define ROCE_SKIP_ALLOWED(reason) GTEST_SKIP() << "SKIP-ALLOWED: " << (reason)

namespace roce::testing {

// Absolute path of a file in the source tree (ROCE_SOURCE_DIR is set by meson).
std::string SourcePath(const std::string& rel);
// A fresh directory under the build tree for files a test writes.
std::string OutputDir(const std::string& name);

// The reference captures in pcaps/reference: {path, frames}.
struct Capture {
  std::string name;
  std::string path;
  std::vector<pcapio::Frame> frames;
};
std::vector<Capture> ReferenceCaptures();

// Runs a shell command, returns its exit status and fills *out with stdout.
int Run(const std::string& cmd, std::string* out);
// Splits into lines, dropping a trailing empty one.
std::vector<std::string> Lines(const std::string& s);

// True if `tshark` is on PATH.
bool HaveTshark();

// The ICRC of a RoCEv2 packet from its IP header (v4 or v6) up to its ICRC,
// computed independently of stack/wire: the bytes copied, the variant fields
// masked per the spec, zlib's crc32 over 8 bytes of 0xFF and them. Compare
// with the frame's last four bytes read little-endian.
uint32_t ReferenceIcrc(const uint8_t* l3, size_t len);

// Waits up to `ms` for pred(), looking every `step_ms`; pred()'s last value.
template <typename F>
bool PollUntil(int ms, int step_ms, F pred) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
  }
  return pred();
}

// While alive, the calling thread (and the threads it starts, which inherit the
// mask) runs on one CPU, the first it may use; the mask is restored after.
class PinnedToOneCpu {
 public:
  PinnedToOneCpu() {
    if (sched_getaffinity(0, sizeof all_, &all_) != 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &all_)) cpu++;
    CPU_SET(cpu, &one);
    ok_ = sched_setaffinity(0, sizeof one, &one) == 0;
  }
  ~PinnedToOneCpu() {
    if (ok_) sched_setaffinity(0, sizeof all_, &all_);
  }
  PinnedToOneCpu(const PinnedToOneCpu&) = delete;
  PinnedToOneCpu& operator=(const PinnedToOneCpu&) = delete;
  bool ok() const { return ok_; }

 private:
  cpu_set_t all_{};
  bool ok_ = false;
};

}  // namespace roce::testing
