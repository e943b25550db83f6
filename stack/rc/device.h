// SPDX-License-Identifier: MIT
// The RC device: the queue-pair table (indexed by QPN), the memory table,
// receive dispatch (parse + ICRC + lookup) and the progress loop that runs
// timers and lets active QPs transmit. One device is one RNIC port's worth
// of protocol state. Single-threaded: the engine (or the simulator) drives it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <queue>
#include <vector>

#include <absl/container/flat_hash_set.h>

#include "stack/mem/memory_table.h"
#include "stack/mem/place.h"
#include "stack/rc/qp.h"
#include "stack/rc/queues.h"
#include "stack/rc/tx.h"
#include "stack/rc/types.h"
#include "stack/wire/error.h"
#include "stack/wire/opcode.h"

namespace roce::rc {

struct DeviceCounters {
  uint64_t rx_frames = 0;
  uint64_t rx_errors[static_cast<size_t>(wire::Error::kCount)] = {};  // by reason
  uint64_t rx_unknown_qp = 0;
  uint64_t rx_not_rc = 0;      // UD/UC/CNP-less opcodes with no handler here
  uint64_t rx_placed_in_pass = 0;  // payloads placed as their ICRC was computed (one pass)
  uint64_t rx_placed_dropped = 0;  // ... of which the ICRC was bad (the packet dropped after all)
  uint64_t tx_packets = 0;
  uint64_t tx_busy = 0;        // sink refused a packet
  uint64_t IcrcErrors() const { return rx_errors[static_cast<size_t>(wire::Error::kIcrcMismatch)]; }
};

class RcDevice {
 public:
  struct Config {
    uint32_t max_qps = 256;      // QP slots; QPN = generation << 16 | slot (slots 0 and 1 are special)
    // A destroyed QP's number is not given to a new QP for this long (time as
    // passed to Poll / OnFrame): packets of the old connection still in the
    // network, or a peer still retrying, must never reach a new connection.
    // Longer than a peer's whole retry budget (7 retries of a 67 ms timeout,
    // the rdma_cm default, take 0.54 s), like the CM's time-wait.
    uint64_t qpn_quarantine_ns = 2'000'000'000;
    uint64_t mem_seed = 0;       // 0: random keys
    uint32_t max_mem_objects = 1u << 16;
    QpTuning tuning;
    wire::ParseOptions parse;
    // Diagnostics: if set, queue pairs report protocol events (start of a
    // WQE, go-back-N restarts, NAK handling, completions) here.
    std::function<void(uint32_t qpn, const char* event, uint64_t a, uint64_t b)> event_hook;
    // Diagnostics: a queue pair whose connection fails on the wire (retries
    // or RNR retries exhausted) reports here, before it goes to error, with
    // why (the event's name); qp.DebugState() tells where it stood. Never
    // on the data path: only as a connection dies.
    std::function<void(const QueuePair& qp, const char* why)> fatal_hook;
  };
  RcDevice(const Config& cfg, PacketSink* sink);
  ~RcDevice();

  mem::MemoryTable& memory() { return mem_; }
  const QpTuning& tuning() const { return cfg_.tuning; }

  // Null when every slot is in use (or every number of the free slots is
  // still in quarantine).
  QueuePair* CreateQp(const QpCaps& caps, CompletionQueue* send_cq, CompletionQueue* recv_cq,
                      ReceiveQueue* srq = nullptr, uint64_t context = 0);
  // The QPN enters quarantine (Config::qpn_quarantine_ns).
  void DestroyQp(QueuePair* qp);
  size_t QuarantinedQpns() const { return quarantine_.size(); }
  size_t QpsInUse() const { return qps_.size() - 2 - free_slots_.size(); }
  // Latest time seen (Poll / OnFrame / OnPacket / AdvanceTime).
  uint64_t now() const { return now_; }
  void AdvanceTime(uint64_t now) { now_ = std::max(now_, now); }
  QueuePair* FindQp(uint32_t qpn) const;

  // Receive: a whole frame (parsed and ICRC-checked here) or an already
  // parsed packet, verified or with its ICRC check deferred (icrc_deferred:
  // checked here first, or — an RDMA Write, Send or Read Response Middle, or
  // a Read Response Last, whose place is known, QueuePair::InPlaceTarget —
  // as its payload is placed, in one pass).
  // OnFrame defers too, where the CPU makes the pass worth it
  // (mem::PlaceCrcOnePass), for payloads of kPlaceCrcOnePassMin bytes and
  // more: the simulator's corruption cases run this path.
  wire::Error OnFrame(wire::ByteSpan frame, uint64_t now);
  void OnPacket(const wire::RocePacket& p, uint64_t now);
  // Whether a receive path should defer the ICRC check of a packet with this
  // opcode and payload length to OnPacket.
  static bool DeferIcrc(uint8_t opcode, size_t payload_len) {
    return (opcode == wire::op::kRcWriteMiddle || opcode == wire::op::kRcSendMiddle ||
            opcode == wire::op::kRcReadResponseMiddle || opcode == wire::op::kRcReadResponseLast) &&
           payload_len >= mem::kPlaceCrcOnePassMin && mem::PlaceCrcOnePass();
  }

  // Progress: fire due timers, then let active QPs transmit (round robin) up
  // to `budget` packets. Returns packets sent.
  size_t Poll(uint64_t now, size_t budget = 256);
  // Earliest pending timer (0: none) and whether any QP has packets to send.
  uint64_t NextDeadline();
  bool HasTxWork() const { return !active_.empty(); }

  DeviceCounters counters;

  // Datagrams for QP 1 (the GSI: CM MADs) go here instead of to a QP.
  using GsiHandler = std::function<void(const wire::RocePacket& p, uint64_t now)>;
  void SetGsiHandler(GsiHandler h) { gsi_ = std::move(h); }

  // Used by QueuePair.
  void MarkActive(QueuePair* qp);
  void TimerChanged(QueuePair* qp);
  bool Transmit(const TxPacket& pkt, uint64_t now);
  void Doorbell(QueuePair& qp, bool idle) {
    if (sink_) sink_->Doorbell(qp, idle);
  }
  // A transmit turn for `qp` now, outside Poll (what a sink's Doorbell does
  // for an idle post): hold the device's lock, and never call it from inside
  // Poll or OnFrame/OnPacket. Returns packets sent.
  size_t TransmitNow(QueuePair& qp, uint64_t now);
  void Event(uint32_t qpn, const char* e, uint64_t a, uint64_t b) {
    if (cfg_.event_hook) cfg_.event_hook(qpn, e, a, b);
  }
  void Fatal(const QueuePair& qp, const char* why) {
    if (cfg_.fatal_hook) cfg_.fatal_hook(qp, why);
  }

 private:
  Config cfg_;
  PacketSink* sink_;
  mem::MemoryTable mem_;
  void ExpireQuarantine();
  // The deferred ICRC check (OnPacket); *placed: the QP whose payload is in place.
  bool CheckDeferred(const wire::RocePacket& p, QueuePair** placed);
  // ParseRoceFrame with cfg_.parse, the ICRC checked or deferred (DeferIcrc).
  wire::Error ParseDeferring(wire::ByteSpan frame, wire::RocePacket* p) const;
  std::vector<std::unique_ptr<QueuePair>> qps_;  // index = qpn & mask
  std::vector<uint8_t> qp_gen_;                  // generation of the slot's last QPN
  std::deque<uint32_t> free_slots_;              // least recently freed first
  std::deque<std::pair<uint64_t, uint32_t>> quarantine_;  // (destroyed at, qpn), oldest first
  absl::flat_hash_set<uint32_t> quarantined_;
  uint64_t now_ = 0;
  wire::RocePacket rx_pkt_;  // OnFrame's packet, reused
  bool rx_busy_ = false;
  GsiHandler gsi_;
  std::vector<uint8_t> in_active_;
  RingDeque<uint32_t> active_;  // each QP at most once (in_active_): reserved for all
  using TimerEntry = std::pair<uint64_t, uint32_t>;  // deadline, qpn
  std::priority_queue<TimerEntry, std::vector<TimerEntry>, std::greater<TimerEntry>> timers_;
};

}  // namespace roce::rc
