// SPDX-License-Identifier: MIT
// Seeded fault injection on a port's datapath: drop, duplicate, reorder and
// corrupt (flip one random bit), each a probability, on RX and on TX
// separately. Off by default. The kernel here has no netem; this is how the
// stack is tested against loss, duplication and reordering.
//
// Determinism: the decisions depend only on the seed, the direction, the
// queue and the sequence of packets given to Apply (the random stream is
// xoshiro256** seeded by splitmix64, not std:: distributions, so it is the
// same on every platform and libstdc++).
//
// Per packet, in this order: drop? (freed, nothing else) -> corrupt? (one bit
// of the frame flipped; a shared mbuf -- refcnt > 1, indirect or external
// buffer -- is first copied so a retransmit buffer the caller kept is not
// damaged) -> duplicate? (an independent copy from the pool follows the
// original) -> reorder? (the packet goes to the one hold-back slot and is
// released right after the next packet that passes, or after
// `reorder_hold` burst calls that brought none, or by Flush).
#pragma once

#include <array>
#include <cstdint>

#include "stack/port/counter.h"

struct rte_mbuf;
struct rte_mempool;

namespace roce::port {

struct FaultProbabilities {
  double drop = 0;
  double duplicate = 0;
  double reorder = 0;
  double corrupt = 0;
  bool Any() const { return drop > 0 || duplicate > 0 || reorder > 0 || corrupt > 0; }
  bool operator==(const FaultProbabilities&) const = default;
};

struct FaultConfig {
  uint64_t seed = 1;
  FaultProbabilities rx, tx;
  uint32_t reorder_hold = 1;  // burst calls a held packet may wait for a successor
  bool Any() const { return rx.Any() || tx.Any(); }
  bool operator==(const FaultConfig&) const = default;
};

// Counts of one direction (a snapshot).
struct FaultCounts {
  uint64_t dropped = 0;
  uint64_t duplicated = 0;
  uint64_t reordered = 0;
  uint64_t corrupted = 0;
  uint64_t nomem = 0;  // a duplicate or private copy could not be allocated
  FaultCounts& operator+=(const FaultCounts& o) {
    dropped += o.dropped, duplicated += o.duplicated, reordered += o.reordered;
    corrupted += o.corrupted, nomem += o.nomem;
    return *this;
  }
};

// xoshiro256** seeded through splitmix64: small, fast, reproducible.
class Rng {
 public:
  explicit Rng(uint64_t seed = 1) { Seed(seed); }
  void Seed(uint64_t seed);
  uint64_t Next();
  // Uniform in [0, n).
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }

 private:
  std::array<uint64_t, 4> s_{};
};

// A Bernoulli trial with probability p as a 64-bit threshold (exact for 0 and 1).
class Chance {
 public:
  Chance() = default;
  explicit Chance(double p);
  bool Roll(Rng& rng) const { return always_ || (threshold_ != 0 && rng.Next() < threshold_); }
  bool never() const { return !always_ && threshold_ == 0; }

 private:
  uint64_t threshold_ = 0;
  bool always_ = false;
};

// Fault injection for one direction of one queue. Not thread-safe: used by the
// thread that polls the queue.
class FaultInjector {
 public:
  FaultInjector() = default;
  ~FaultInjector();
  FaultInjector(const FaultInjector&) = delete;
  FaultInjector& operator=(const FaultInjector&) = delete;

  // `stream` separates directions and queues that share a seed. Frees a held
  // packet. Counters are kept.
  void Configure(const FaultProbabilities& p, uint64_t seed, uint64_t stream,
                 uint32_t reorder_hold);
  bool active() const { return active_ || held_ != nullptr; }

  // Applies the faults to in[0..n) (ownership passes in) and writes what
  // survives, in delivery order, to out[] which must hold 2 * n + 1 entries.
  // `pool` provides duplicates and private copies. Returns the count.
  uint16_t Apply(rte_mbuf* const* in, uint16_t n, rte_mbuf** out, rte_mempool* pool);
  // Returns the held packet (or nullptr) and empties the slot.
  rte_mbuf* TakeHeld();

  FaultCounts counts() const;
  void ResetCounts();

 private:
  rte_mbuf* Corrupt(rte_mbuf* m, rte_mempool* pool);

  Rng rng_;
  Chance drop_, dup_, reorder_, corrupt_;
  bool active_ = false;
  uint32_t reorder_hold_ = 1;
  rte_mbuf* held_ = nullptr;
  uint32_t held_age_ = 0;  // burst calls since the packet was held
  Counter dropped_, duplicated_, reordered_, corrupted_, nomem_;
};

}  // namespace roce::port
