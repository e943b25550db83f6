// SPDX-License-Identifier: MIT
#include "stack/port/fence.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace roce::port {

namespace {
long Membarrier(int cmd) { return syscall(SYS_membarrier, cmd, 0, 0); }
}  // namespace

bool AsymmetricFencesAvailable() {
  static const bool ok = [] {
    if (const char* v = std::getenv("SOFT_RNIC_ASYM_FENCES"); v && std::strcmp(v, "0") == 0) return false;
    const long cmds = Membarrier(MEMBARRIER_CMD_QUERY);
    if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return false;
    return Membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  }();
  return ok;
}

bool AsymmetricFence() {
  if (Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return true;
  if (Membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
      Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
    return true;
  return Membarrier(MEMBARRIER_CMD_GLOBAL) == 0;
}

}  // namespace roce::port
