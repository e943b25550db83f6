// SPDX-License-Identifier: MIT
// Asymmetric fences (membarrier(2)): a fast side that needs only a compiler
// barrier between its store and its load, and a slow side that makes every
// running thread of the process pass a full barrier before it reads. Between
// them, the store-then-load of each side (Dekker) holds: either the slow side
// sees the fast side's store or the fast side's later load sees the slow
// side's. The locked instruction the fast side saves waits for every store
// before it to leave the store buffer; the slow side pays a system call and an
// IPI to each running thread instead. For where one side runs per frame or
// per post and the other rarely (engine/engine_mutex.h: Unlock against a
// sleeping Lock).
#pragma once

namespace roce::port {

// The process is registered for MEMBARRIER_CMD_PRIVATE_EXPEDITED (asked
// once; false if the kernel lacks it or SOFT_RNIC_ASYM_FENCES=0): fast sides
// may use compiler barriers only.
bool AsymmetricFencesAvailable();
// The slow side's fence. True if it was one (a process forked from a
// registered one registers itself again; MEMBARRIER_CMD_GLOBAL, slower, is
// the last resort); false only if no membarrier command worked.
bool AsymmetricFence();

}  // namespace roce::port
