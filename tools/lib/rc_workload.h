// SPDX-License-Identifier: MIT
// A random RC workload over the simulated link, checked by a reference model.
//
// K queue-pair pairs between two simulated hosts (half initiated from each
// side; every third responder takes receives from a shared receive queue).
// Initiators post random Send / SendWithInvalidate / Write / Read of 0 B to
// max_size (or only some of those operations, of min_size and more: `ops`,
// `min_size`) with random SGE lists, silent-success and fence flags;
// responders bind and invalidate memory windows over their target memory at
// quiescent points and sometimes post receives late (RNR). A small fraction
// of operations deliberately violate access (wrong token, invalidated
// window, one byte past the end, missing right, receive too small): the
// model predicts the failing operation's status, the cancellation of
// everything after it on both sides, and that no memory changed (but a Read
// one byte past the end, asked for in several READ requests, may have its
// sink hold the bytes of the range that exist); the pair then reconnects
// with fresh QPs.
//
// The model checks every completion (status, order, bytes, immediate and
// invalidate flags), every byte of every receive buffer, read sink and target
// region, and the guard zones around every registered buffer.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "stack/rc/device.h"
#include "tools/lib/sim_link.h"

namespace roce::sim {

struct WorkloadConfig {
  uint64_t seed = 1;
  uint64_t messages = 10000;   // data operations to complete (and check)
  uint32_t qps = 2;            // QP pairs
  Impairment imp;
  uint32_t max_size = 1u << 20;
  // 0: sizes from the usual mix (mostly small, a few up to max_size);
  // otherwise uniform in [min_size, max_size] (e.g. only large Reads).
  uint32_t min_size = 0;
  // Which operations the workload posts (kOp* bits; 0: all of them). A
  // deliberate error (error_rate) may still pick its own operation.
  uint32_t ops = 0;
  double error_rate = 0.002;   // fraction of operations that deliberately violate access
  double late_recv = 0.02;     // fraction of receives posted late (provokes RNR)
  uint32_t window_psns = 32;   // requester window
  uint32_t ooo_window = 256;   // with repair: PSNs the responder keeps past a gap (QpTuning::ooo_window)
  bool repair = true;          // selective repair (the default between our stacks); false: go-back-N (ooo_window 0)
  uint32_t max_outstanding = 24;  // operations in flight per pair
  uint32_t path_mtu = 0;       // 0: random per pair (256 .. 4096)
  uint8_t ack_timeout = 8;     // QpAttr::timeout: 4.096 us * 2^code (8: ~1 ms)
  bool ipv6 = false;
  uint64_t time_limit_ns = 0;  // virtual time limit (0: none)
  FILE* trace = nullptr;       // packet trace (SimNetwork::trace)
  FILE* dump_on_failure = nullptr;  // the last frames, at the first failure
  FILE* events = nullptr;           // QP protocol events (RcDevice::Config::event_hook)
};

// WorkloadConfig::ops bits.
inline constexpr uint32_t kOpSend = 1, kOpWrite = 2, kOpRead = 4;

struct WorkloadResult {
  uint64_t messages = 0, ok = 0, failed = 0;
  uint64_t errors_injected = 0, reconnects = 0, binds = 0, invalidates = 0, rnr_waits = 0;
  uint64_t sim_time_ns = 0;
  LinkCounters link;
  rc::QpCounters qp;          // summed over all QPs ever used
  rc::DeviceCounters dev;     // summed over both hosts
  std::vector<std::string> failures;  // the first few mismatches, described
  // The first few queue pairs whose connection failed on the wire (retries
  // exhausted): why, and where each stood (QueuePair::DebugState).
  std::vector<std::string> qp_failures;
};

WorkloadResult RunWorkload(const WorkloadConfig& cfg);

// Adds every field of b into a.
void Accumulate(rc::QpCounters& a, const rc::QpCounters& b);

}  // namespace roce::sim
