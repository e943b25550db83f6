// SPDX-License-Identifier: MIT
// The poll-mode engine: glues one DPDK port (stack/port) to the protocol
// (stack/rc, stack/neighbor). One pass of Poll():
//   RX burst → classify (ARP / NDP → neighbours; IPv4/IPv6 UDP 4791 → RC
//   device, where the QP is found by destination QPN as an array index;
//   anything else counted and dropped) → timers (RC retransmit/RNR,
//   neighbour retries) → let active QPs transmit → TX burst.
// The engine is the RC core's PacketSink: each packet is written by the wire/
// frame writer (wire/frame.h) from its queue pair's prebuilt template into
// mbufs taken from a bulk-allocated cache — a frame that fits one segment in
// one pass (headers, payload, pad, then the ICRC over them), a larger one as
// headers + payload chain with the ICRC over the pieces where they lie — with
// the IPv6 UDP checksum offloaded where the port can and in software
// otherwise. On receive each RoCEv2 frame is parsed once, from its first
// segment (wire::ParseRoceHeaders); the ICRC is verified over the segments in
// place before the packet reaches a queue pair (for a Write or Send Middle, as
// the device places its payload: one pass, rc::RcDevice::OnPacket), and the
// payload is handed on in place unless a segment boundary cuts it.
//
// Two modes, one engine lock:
//  - inline: the application thread calls Poll() itself (what ND2's
//    GetResults does on a 2-core box, and what the tests use);
//  - dedicated: Start() runs Poll() in a loop on its own thread (an EAL worker
//    lcore if one is given, else a plain thread).
// rc(), neighbors() and the QP/memory calls on them must be made with mu()
// held; Poll() takes it itself. Polling a CompletionQueue needs no lock (it is
// a single-consumer ring). In dedicated mode work requests need not take the
// lock either: they go into single-producer rings (post_ring.h) that every
// pass drains first (AddPostSource), so application threads posting and the
// engine's thread do not meet on a lock.
#pragma once

#include <sched.h>

#include <atomic>
#include <functional>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <absl/container/flat_hash_set.h>
#include <absl/status/statusor.h>
#include <absl/synchronization/mutex.h>

#include "stack/cm/cm.h"
#include "stack/engine/engine_mutex.h"
#include "stack/engine/post_ring.h"
#include "stack/neighbor/neighbor.h"
#include "stack/port/port.h"
#include "stack/port/zerocopy.h"
#include "stack/rc/device.h"

namespace roce::engine {

struct EngineOptions {
  rc::RcDevice::Config rc;
  uint16_t queue = 0;       // RX and TX queue this engine polls
  uint16_t burst = 32;
  uint8_t tos = 0;          // IPv4 TOS / IPv6 traffic class of RoCE packets (0x02: ECT(0))
  uint8_t ttl = 64;
  // Neighbour resolution (MAC/addresses come from the port).
  uint64_t arp_retry_ns = 200'000'000;
  uint32_t arp_retries = 10;
  // The connection manager on QP 1 (mac/addrs come from the port).
  cm::ConnectionManager::Config cm;
  // Dedicated mode: after `idle_spin_ns` of passes that found nothing to do
  // the loop sleeps, 1 us doubling up to `idle_sleep_max_ns` per nap, until a
  // pass finds work or Kick() is called (an idle engine costs well under 5%
  // of a core; the first frame after a long idle waits up to one nap).
  // On a port with an RX interrupt (Port::RxWaitFd) a frame ends a nap, so
  // naps are idle_sleep_max_ns from the first (timers are looked at that
  // often); there a loop whose yields come back late (kHogYieldNs: the CPUs
  // are held by threads that do not yield) sleeps as soon as it is idle.
  // idle_sleep_max_ns = 0: always spin.
  uint64_t idle_spin_ns = 200'000;
  uint64_t idle_sleep_max_ns = 1'000'000;
  // Dedicated mode: an idle pass gives the CPU away (sched_yield) instead of
  // pausing in place. For a process with more spinning threads than CPUs
  // (two adapters with progress threads and a polling application on two
  // cores): a thread that spins in place holds its CPU for a whole scheduler
  // slice while the thread with work waits for it (an ND2 ping-pong of that
  // set-up took ~520 us a round trip, 6 us with this). It costs a system call
  // per idle pass, and the pass that finds a packet starts that much later:
  // with a CPU to itself, leave it off (~7% of a split-mode 8 B Write).
  bool idle_yield = false;
  // Dedicated mode, idle_yield off: yield as idle_yield does, but only while
  // the CPUs are found oversubscribed — the loop counts its own involuntary
  // context switches (getrusage RUSAGE_THREAD, at most every
  // kContentionCheckNs of idle passes); one since the last look means
  // another thread, of this process or any other, was runnable on its CPU
  // and waited. Yielding then lasts kContentionHoldNs past the last such
  // look (a yield that hands the CPU over counts as one too, so it renews
  // itself while the contention lasts) and applies to pollers (PollerIdle)
  // as well. Two processes with a progress thread and a polling thread each
  // on two CPUs are the case no static count of this process's threads sees.
  bool adaptive_yield = false;
  // Zero-copy TX: a payload at least this long that lies in registered memory
  // goes out as mbufs attached to that memory (no copy; the ICRC is its one
  // pass over it) when the port allows it (Port::zero_copy_tx). 0: never.
  // Deregistering the memory revokes such frames still in flight
  // (port/zerocopy.h): nothing reads it after DeregisterRegion returns.
  uint32_t zero_copy_min = 1024;
  uint32_t zero_copy_frames = 4096;  // zero-copy frames in flight at most (then: copied)
  // Inline mode (no dedicated thread): a request posted to a queue pair with
  // nothing else unsent or unacknowledged is sent from within PostSend (the
  // doorbell), not on the next Poll: a round trip then needs no pass on the
  // sending side. Streams (posts behind unacknowledged ones) still go out in
  // bursts from Poll. false: every request waits for Poll.
  bool tx_on_post = true;
};

// Every engine counter once: the field, its telemetry key (/roce/engine/stats)
// and what it counts. Drops are among them (rx_other_dropped, rx_too_long,
// tx_nomem, tx_oversize, tx_busy, *_zc_revoked), each also logged the first
// time it happens.
#define ROCE_ENGINE_COUNTERS(X)                                                              \
  X(rx_frames, "frames received")                                                           \
  X(rx_roce, "RoCEv2 frames handed to the RC device")                                       \
  X(rx_arp_ndp, "ARP / NDP frames handed to the neighbour table")                          \
  X(rx_other_dropped, "frames neither RoCEv2 nor ARP/NDP (dropped)")                       \
  X(rx_linearized, "received payloads cut by a segment boundary, copied together")          \
  X(rx_too_long, "RoCEv2 frames longer than the engine can check (dropped)")                \
  X(tx_roce, "RoCEv2 frames sent")                                                          \
  X(tx_neighbor, "ARP / NDP frames sent")                                                   \
  X(tx_nomem, "frames not sent: no mbuf (dropped, the QP resends)")                         \
  X(tx_oversize, "frames not sent: longer than the port's MTU (dropped)")                   \
  X(tx_busy, "frames the port's TX ring refused (held back, sent later)")                   \
  X(tx_loopback, "frames to our own MAC, received by the next pass")                        \
  X(tx_zero_copy, "frames whose payload went out attached, not copied")                     \
  X(tx_zc_revoked, "zero-copy frames dropped before the device: memory deregistered")      \
  X(rx_zc_revoked, "zero-copy frames of an in-process sender dropped unread: revoked")      \
  X(polls, "poll passes")                                                                   \
  X(tx_on_post, "posts whose packets went out from the doorbell (tx_on_post)")

struct EngineCounters {
#define ROCE_ENGINE_COUNTER_FIELD(name, doc) uint64_t name = 0;
  ROCE_ENGINE_COUNTERS(ROCE_ENGINE_COUNTER_FIELD)
#undef ROCE_ENGINE_COUNTER_FIELD
  // fn(const char* name, uint64_t value) for every counter, in the order above.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
#define ROCE_ENGINE_COUNTER_VISIT(name, doc) fn(#name, name);
    ROCE_ENGINE_COUNTERS(ROCE_ENGINE_COUNTER_VISIT)
#undef ROCE_ENGINE_COUNTER_VISIT
  }
};

class Engine : public rc::PacketSink {
 public:
  static absl::StatusOr<std::unique_ptr<Engine>> Create(port::Port* port,
                                                        const EngineOptions& opts = {});
  ~Engine() override;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  EngineMutex& mu() ABSL_LOCK_RETURNED(mu_) { return mu_; }
  rc::RcDevice& rc() { return *rc_; }
  cm::ConnectionManager& cm() { return *cm_; }
  neighbor::NeighborTable& neighbors() { return *neighbors_; }
  port::Port& port() { return *port_; }

  // One pass of the loop. Returns frames received + sent + requests drained.
  size_t Poll() ABSL_LOCKS_EXCLUDED(mu_);
  // Sources of posted work (post_ring.h), drained at the start of every pass
  // (before RX: whatever was posted before a pass is in the stack before any
  // frame that pass reads). A source stays registered until removed.
  void AddPostSource(PostSource* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemovePostSource(PostSource* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Dedicated mode. lcore >= 0: rte_eal_remote_launch on that worker lcore.
  absl::Status Start(int lcore = -1);
  void Stop();
  // Work was posted from outside the engine's thread (dedicated mode): end
  // an idle nap now. Cheap; any thread, with or without mu().
  void Kick();
  // A thread is polling for this engine's completions (dedicated mode): the
  // loop keeps spinning instead of napping while it does (what a polling
  // application expects of a NIC: an arriving packet is handled now, not
  // after a nap of up to idle_sleep_max_ns). Cheaper than Kick() when
  // repeated: one shared read while the last kick is still pending.
  // While the loop sleeps until a frame wakes it (hogged_), a poller leaves
  // it asleep: an arriving frame wakes it as soon as the scheduler lets it run.
  void KeepAwake() {
    if (hogged_.load(std::memory_order_relaxed)) return;
    if (!kicked_.load(std::memory_order_relaxed) || napping_.load(std::memory_order_relaxed)) Kick();
  }
  // A thread polling for this engine's completions found none (ND2's
  // GetResults): KeepAwake, and with idle_yield it gives its CPU away too
  // (counted), as the idle loop does — with more spinning threads than CPUs
  // a poller that spins in place holds a CPU the engine may need.
  void PollerIdle() {
    KeepAwake();
    if (opts_.idle_yield || contended_.load(std::memory_order_relaxed)) {
      sched_yield();
      poller_yields_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  // PostSend's notice (called with mu() held): Kick(), or in inline mode
  // for an idle queue pair (EngineOptions::tx_on_post) its packets now.
  void Doorbell(rc::QueuePair& qp, bool idle) override;
  bool running() const { return running_.load(); }

  // Monotonic nanoseconds (TSC).
  uint64_t NowNs() const;

  // The stack's own addresses (from the port profile).
  std::optional<wire::IpAddr> LocalIp(bool ipv6) const;
  // Ethernet/IP/UDP towards `peer` at `peer_mac`, from our address of the same family.
  absl::StatusOr<wire::NetHeaders> PathTo(const wire::IpAddr& peer, const wire::MacAddr& peer_mac) const;
  // Resolves `peer` by ARP/NDP, polling (inline) or waiting (dedicated) until
  // it resolves, fails or `timeout_ns` passes. Call without holding mu().
  absl::StatusOr<wire::MacAddr> Resolve(const wire::IpAddr& peer, uint64_t timeout_ns);
  // One step of resolving `peer` without waiting (hold mu()): kResolved with
  // the MAC (our own for one of our addresses), kPending (a request went out;
  // ask again on a later pass), kFailed, kNoResources.
  neighbor::LookupResult LookupNeighbor(const wire::IpAddr& peer);
  // Called at the end of every Poll pass, with mu() held (ND2 uses it to move
  // connections waiting for ARP/NDP along, in either progress mode).
  std::function<void(uint64_t now)> on_poll;
  // Runs the engine (inline) or lets its thread run (dedicated) until pred(),
  // evaluated with mu() held, is true or `timeout_ns` passes. Call without mu().
  bool WaitUntil(const std::function<bool()>& pred, uint64_t timeout_ns);
  // What the engine still owes the wire: the CM's unanswered DREQs and
  // MADs not yet taken (ConnectionManager::Owed), frames the port has not
  // taken yet (its TX backlog, our TX burst). Hold mu().
  size_t Owed() const;
  // Runs the engine (as WaitUntil) until Owed() is 0 or `timeout_ns`
  // passes; true if nothing is owed. Call without mu().
  bool Linger(uint64_t timeout_ns);

  // The id of a QP's telemetry: /roce/qp/stats,<port id << 24 | qpn>.
  uint64_t QpTelemetryId(uint32_t qpn) const { return (uint64_t{port_->id()} << 24) | qpn; }
  // QP creation/destruction with per-QP telemetry (/roce/qp/stats,<id>). Hold mu().
  rc::QueuePair* CreateQp(const rc::QpCaps& caps, rc::CompletionQueue* scq, rc::CompletionQueue* rcq,
                          rc::ReceiveQueue* srq = nullptr, uint64_t context = 0);
  void DestroyQp(rc::QueuePair* qp);

  EngineCounters counters() const;
  // Naps the dedicated loop has taken (slept, not just tried), from any thread;
  // those a frame ended (the port's RX interrupt, Port::RxWaitFd); posts sent
  // by their poster while the loop slept on that interrupt (Doorbell).
  uint64_t naps() const { return naps_.load(std::memory_order_relaxed); }
  uint64_t rx_wakes() const { return rx_wakes_.load(std::memory_order_relaxed); }
  // The loop sleeps on the port's RX interrupt (Port::RxWaitFd >= 0).
  bool rx_wakeable() const { return rx_wakeable_; }
  // That fd (-1: none), for a thread that drives an inline engine to sleep on
  // between passes; the device's interrupt armed before and disarmed after.
  int RxWaitFd() const { return port_->RxWaitFd(opts_.queue); }
  void ArmRxWait(bool on) { port_->ArmRxInterrupt(opts_.queue, on); }
  // Idle passes after which the dedicated loop yielded its CPU (idle_yield),
  // and empty polls after which the poller did (PollerIdle).
  uint64_t idle_yields() const { return idle_yields_.load(std::memory_order_relaxed); }
  uint64_t poller_yields() const { return poller_yields_.load(std::memory_order_relaxed); }
  // adaptive_yield: the CPUs were found oversubscribed lately (idle passes yield).
  bool yielding() const { return contended_.load(std::memory_order_relaxed); }
  // A yield came back late lately (kHogYieldNs): the loop sleeps on the RX
  // interrupt as soon as it is idle.
  bool sleeps_when_idle() const { return hogged_.load(std::memory_order_relaxed); }

 private:
  // rc::PacketSink: called by the RC device from inside Poll (lock held).
  bool Transmit(const rc::TxPacket& pkt, uint64_t now) override;
  // Transmit's body, with the path's template; and the rare packet without one.
  [[gnu::always_inline]] inline bool TransmitWith(const rc::TxPacket& pkt, const wire::FrameTemplate& t);
  [[gnu::noinline]] bool TransmitOwnTemplate(const rc::TxPacket& pkt);

 private:
  explicit Engine(port::Port* port, const EngineOptions& opts);
  // A fresh mbuf for a frame, from a cache refilled with one
  // rte_mempool_get_bulk: each is reset (rte_pktmbuf_reset, as
  // rte_pktmbuf_alloc does) as it is taken, and the one kTakeAhead takes
  // later is prefetched for writing then (its two mbuf lines and first two
  // data lines). The pool cycles its mbufs (first in, first out through its
  // ring when another core frees them, as a ring pair's receiver does), so
  // they come cold. Before, rte_pktmbuf_alloc_bulk wrote all 32 mbufs' lines
  // at once (64 lines another core had read, their stores queued behind one
  // another) and only the data lines were prefetched: paired A/B (10-16
  // rounds), inline 8 B Write 0.966 [0.871, 0.995], split 8 B 0.999 (fast
  // phase), split 64 KB 1.000. kTakeAhead 8 rather than 4 (Intel): split
  // 8 B 0.977 [0.969, 0.989]; 16: 1.029 against 8.
  rte_mbuf* TakeMbuf() {
    if (!mcache_n_) return RefillMbufs();
    rte_mbuf* m = mcache_[--mcache_n_];
    if (mcache_n_ >= kTakeAhead) PrefetchMbuf(mcache_[mcache_n_ - kTakeAhead]);
    rte_pktmbuf_reset(m);
    return m;
  }
  static constexpr uint32_t kTakeAhead = 8;
  void PrefetchMbuf(const rte_mbuf* m) const;
  rte_mbuf* RefillMbufs();
  // Headers in m (one segment), the payload attached zero-copy, pad + ICRC in
  // a tail segment. False (m untouched): fall back to copying.
  bool AttachPayload(rte_mbuf* m, const wire::FrameTemplate& t, const rc::TxPacket& pkt, size_t hlen,
                     bool udp6_offload);
  // Appends the pieces to m's chain (the last segment's room, then fresh
  // segments), continuing *crc (an Icrc value) over them as they are copied:
  // one pass (mem::PlaceInOrderCrc32). False if the pool ran dry (m keeps
  // what was appended; the caller frees it).
  bool CopyPayloadCrc(rte_mbuf* m, const wire::Gather* pieces, uint32_t n, uint32_t* crc);
  void RevokeZeroCopy(uint64_t addr, uint64_t len);
  void SendRaw(wire::ByteSpan frame);
  // Counts `n` frames dropped (or held back) for one cause, `field` of
  // counters_, and logs the cause the first time this engine sees it.
  void Dropped(uint64_t EngineCounters::*field, const char* why, uint64_t n = 1);
  void FlushTx();
  void HandleRx(rte_mbuf* m, uint64_t now);
  void HandleFrame(wire::ByteSpan frame, uint64_t now);
  void ReceiveRoce(const uint8_t* head, size_t avail, size_t len, const rte_mbuf* m, uint64_t now);
  [[gnu::always_inline]] inline bool ReadPadIcrc(const uint8_t* head, size_t avail, const rte_mbuf* m,
                                                 const wire::FrameLayout& lay, wire::RocePacket& p);
  bool ReadPadIcrcChained(const rte_mbuf* m, const wire::FrameLayout& lay, wire::RocePacket& p);
  bool DeferIcrc(const uint8_t* head, size_t avail, const rte_mbuf* m, const wire::FrameLayout& lay,
                 wire::RocePacket& p);
  bool Linearize(const rte_mbuf* m, wire::ByteSpan* out);  // into scratch_
  // Whether no one segment of m holds the whole (non-empty) payload.
  static bool ChainPayloadCut(const rte_mbuf* m, const wire::FrameLayout& lay);
  // The ICRC checked as the payload is copied together into scratch_ (one
  // pass, mem::PlaceInOrderCrc32); p.payload, pad and icrc set. False (the
  // error counted) if the chain is short or the ICRC wrong.
  bool IcrcLinearizePayload(const uint8_t* head, const rte_mbuf* m, const wire::FrameLayout& lay,
                            wire::RocePacket& p);
  void Loop();
  void IdleSpin(uint64_t now);  // one idle pass's wait: yield the CPU (idle_yield) or pause
  // Sleeps up to ns, until Kick() or (rx_wakeable_) a frame in the RX queue.
  void Nap(uint64_t ns);
  // adaptive_yield: looks (rate-limited) for involuntary context switches of
  // the loop's thread and sets or clears contended_.
  void CheckContention(uint64_t now);
  static constexpr uint64_t kContentionCheckNs = 2'000'000;
  static constexpr uint64_t kContentionHoldNs = 50'000'000;
  // A yield that gave the CPU back only after this long handed it to a thread
  // that does not yield (an application spinning on memory for a Write):
  // with the RX interrupt to wake it, the loop then sleeps as soon as it is
  // idle (hogged_) for kContentionHoldNs, instead of spinning and yielding.
  static constexpr uint64_t kHogYieldNs = 250'000;

  port::Port* port_;
  EngineOptions opts_;
  EngineMutex mu_;
  std::unique_ptr<rc::RcDevice> rc_;
  std::unique_ptr<neighbor::NeighborTable> neighbors_;
  std::unique_ptr<cm::ConnectionManager> cm_;
  std::vector<rte_mbuf*> tx_;
  // Frames and payloads copied together: kScratch bytes from scratch(), on a
  // cache line, so that the one-pass copy of a payload into it has no
  // unaligned head. (A vector, not an aligned unique_ptr: the members after
  // it keep their lines; 16 bytes fewer made the split 8 B Write 1.03x.)
  static constexpr size_t kScratch = 16384;
  std::vector<uint8_t> scratch_;
  uint8_t* scratch() {
    const auto a = reinterpret_cast<uintptr_t>(scratch_.data());
    return scratch_.data() + ((64 - (a & 63)) & 63);
  }
  static constexpr uint32_t kMbufCache = 32;
  rte_mbuf* mcache_[kMbufCache] = {};
  uint32_t mcache_n_ = 0;
  uint32_t first_room_ = 0;  // data bytes of a frame's first segment
  size_t data_at_ = 0;       // a fresh mbuf's data, from its address
  wire::RocePacket rx_pkt_;  // the packet being received (reused, never cleared)
  uint8_t rx_pad_[4] = {};
  port::ZcPool* zc_ = nullptr;  // zero-copy references (null: off); closed, not deleted
  std::deque<std::vector<uint8_t>> loopback_;
  std::vector<PostSource*> post_sources_ ABSL_GUARDED_BY(mu_);
  EngineCounters counters_;
  bool in_poll_ = false;  // inside Poll (with mu_): the doorbell does not transmit
  // Frames queued in tx_ that make a burst. Inside a pass (and the doorbell's
  // send of a post) the burst; outside one 1: a frame made by a call from
  // outside the engine's passes — a CM message (Connect, Accept, Reject,
  // CompleteConnect, Disconnect, a released connection's DREQ), an ARP or
  // NDP request — leaves before that call returns, whoever drives the
  // engine and whether or not it ever passes again.
  uint16_t tx_flush_at_ = 1;
  // A request was posted from inside this pass (with mu_): the pass counts as
  // work, so a dedicated loop passes again rather than napping (Doorbell).
  bool posted_in_pass_ = false;
  double ns_per_cycle_ = 1;
  uint64_t tsc0_ = 0;
  std::atomic<bool> running_{false}, stop_{false};
  std::atomic<bool> kicked_{false}, napping_{false};
  // Kick() ends a nap through this eventfd (one write while a wake is pending).
  int wake_fd_ = -1;
  std::atomic<bool> wake_pending_{false};
  bool rx_wakeable_ = false;  // the loop sleeps on Port::RxWaitFd(opts_.queue) too
  // RX queues polled: 1 (opts_.queue), or every queue of a net_af_xdp port
  // (RSS spreads RoCE over the interface's channels, a socket on each).
  static constexpr uint16_t kMaxRxQueues = 16;
  uint16_t rx_queue_count_ = 1;
  uint64_t addr_generation_ = 0;                 // Port::AddrGeneration the CM has
  port::KernelIface* kernel_ = nullptr;          // identity = kernel: its addresses change
  absl::flat_hash_set<std::string> kernel_route_logged_;  // peers whose "cannot reach" was logged
  std::atomic<uint64_t> naps_{0}, rx_wakes_{0};
  std::atomic<uint64_t> idle_yields_{0};
  std::atomic<uint64_t> poller_yields_{0};
  std::atomic<bool> contended_{false};  // adaptive_yield: yielding now
  std::atomic<bool> hogged_{false};     // sleeping when idle (kHogYieldNs)
  uint64_t hog_seen_ = 0;               // the loop's thread only
  uint64_t contention_checked_ = 0, contention_seen_ = 0;  // the loop's thread only
  long ivcsw_ = -1;                                        // its involuntary switches at the last look
  // Its time waiting for a CPU while runnable (/proc/thread-self/schedstat,
  // ns), at the last look; the file, opened by the thread (-2: not yet).
  uint64_t run_delay_ = 0;
  int schedstat_fd_ = -2;
  std::thread thread_;
  int lcore_ = -1;
  port::TelemetryRegistration telemetry_;
  std::vector<std::pair<uint32_t, port::TelemetryRegistration>> qp_telemetry_;
};

}  // namespace roce::engine
