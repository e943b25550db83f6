// SPDX-License-Identifier: MIT
// Counting heap allocations, for the tests that the data path allocates
// nothing in steady state (tests/engine/engine_alloc, tests/nd2api/nd2_alloc).
// alloc_counter.cc replaces the global operator new / delete of the program:
// compile it into the test executable itself (a static library member would
// not be linked in, libstdc++ already defines them).
#pragma once

#include <cstdint>

namespace roce::testing {

// Counts every operator new, on any thread, from now on (and forgets earlier counts).
void StartCountingAllocations();
// Stops counting; returns how many there were.
uint64_t StopCountingAllocations();
// True if this program's operator new is the counting one (one explicit
// ::operator new call is counted): without it a count of 0 would prove nothing.
bool AllocationCounterWorks();
// Writes the backtraces of the first few counted allocations to stderr
// (`break roce::testing::CountedAllocation` in gdb shows them too).
void PrintCountedAllocations();

}  // namespace roce::testing
