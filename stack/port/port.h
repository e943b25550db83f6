// SPDX-License-Identifier: MIT
// A DPDK ethdev as the stack sees it: opened from a profile (drivers-cfg/),
// with its mbuf pool, the offloads it really has, RX/TX burst wrappers that
// count, capture and inject faults, and telemetry (/roce/port/stats,<id>).
//
// Threading: each queue is polled by one thread at a time (the usual DPDK
// rule); counters may be read from any thread. SetFaults, StartCapture and
// StopCapture are called while no queue is being polled, or from the only
// polling thread.
//
// Ownership: RxBurst hands the caller mbufs it must free (or send).
// TxBurst always takes ownership of all n mbufs and never spins: what the
// device does not take right away waits in a bounded software backlog
// (profile port.tx_backlog) that the next TxBurst or Flush retries first;
// when that is full the frames are freed and counted (tx_full). Frames longer
// than mtu + 18 are freed and counted (tx_oversize) before they reach the
// device (net_tap would refuse them forever). All mbufs from pool() must be
// freed before the Port is destroyed.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <absl/status/statusor.h>

#include "stack/port/capture.h"
#include "stack/port/counter.h"
#include "stack/port/fault.h"
#include "stack/port/mbuf.h"
#include "stack/port/profile.h"
#include "stack/port/telemetry.h"

struct rte_flow;

namespace roce::port {

class KernelIface;

inline constexpr uint16_t kMaxBurst = 64;  // frames per device call (larger bursts are split)

// What the port offloads (enabled at configure time) and what the device
// offers. Whatever is false here the stack computes in software.
struct Offloads {
  bool tx_ipv4_checksum = false;
  bool tx_udp_checksum = false;
  bool tx_multiseg = false;   // false: TxBurst linearizes chains into one mbuf
  bool rx_ipv4_checksum = false;
  bool rx_udp_checksum = false;
  bool rx_scatter = false;
  bool rss = false;
  uint64_t rx_capa = 0, tx_capa = 0;        // rte_eth_dev_info rx/tx_offload_capa
  uint64_t rx_enabled = 0, tx_enabled = 0;  // what was configured
  std::string ToString() const;
};

struct PortStats {
  // Frames the device gave (RX, before RX faults) and took (TX, after TX faults).
  uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0;
  // TX drops by reason, and TX work.
  uint64_t tx_full = 0;         // device did not take them and the backlog was full
  uint64_t tx_oversize = 0;     // longer than mtu + 18
  uint64_t tx_nomem = 0;        // a chain could not be linearized (pool empty / too long)
  uint64_t tx_linearized = 0;   // chains copied into one mbuf (no multi-seg TX)
  uint64_t tx_backlog = 0;      // gauge: frames waiting in the TX backlogs now
  uint64_t rx_copy_nomem = 0;   // profile rx_copy: received frames dropped, the pool empty
  FaultCounts rx_faults, tx_faults;
  uint64_t capture_frames = 0;
  // The device's own counters (rte_eth_stats_get): rx_nombuf is the RX
  // "no mbuf" drop, imissed the RX ring overflow, oerrors what it refused.
  uint64_t dev_ipackets = 0, dev_ibytes = 0, dev_opackets = 0, dev_obytes = 0;
  uint64_t dev_imissed = 0, dev_ierrors = 0, dev_oerrors = 0, dev_rx_nombuf = 0;
  uint64_t pool_in_use = 0, pool_free = 0;
};

class Port {
 public:
  // Creates the device (rte_vdev_init, rte_eth_from_rings, or the probed PCI
  // port), its pool, configures offloads, queues, MTU, MAC, flow rules, starts
  // it, and starts capture and fault injection if the profile asks.
  static absl::StatusOr<std::unique_ptr<Port>> Open(const PortProfile& profile);
  ~Port();
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;

  uint16_t id() const { return port_id_; }
  const std::string& name() const { return name_; }
  const PortProfile& profile() const { return profile_; }
  rte_mempool* pool() const { return pool_; }
  const Offloads& offloads() const { return offloads_; }
  const wire::MacAddr& mac() const { return mac_; }
  // The primary address of each family: the profile's, or with identity =
  // kernel the given one or the interface's first (global before link-local).
  const std::optional<IpPrefix>& ipv4() const { return profile_.ipv4; }
  const std::optional<IpPrefix>& ipv6() const { return profile_.ipv6; }
  // Every address of the port (its GIDs): identity = kernel, the interface's
  // now (they change: AddrGeneration); else ipv4() and ipv6().
  std::vector<IpPrefix> Addrs() const;
  uint64_t AddrGeneration() const;
  // The kernel interface beneath (net_af_xdp, net_af_packet, net_tap,
  // net_pcap live), or nullptr.
  KernelIface* kernel() const { return kif_.get(); }
  bool kernel_identity() const;
  uint16_t mtu() const { return profile_.mtu; }
  uint32_t max_frame_len() const { return max_frame_len_; }
  uint16_t rx_queues() const { return profile_.rx_queues; }
  uint16_t tx_queues() const { return profile_.tx_queues; }
  bool LinkUp() const;

  // Up to n (any n; kMaxBurst per device call when faults are on) frames.
  uint16_t RxBurst(uint16_t queue, rte_mbuf** pkts, uint16_t n);
  // Takes all n; returns how many the device or the backlog accepted (with
  // faults this counts what survived them, duplicates included).
  uint16_t TxBurst(uint16_t queue, rte_mbuf** pkts, uint16_t n);
  // Releases a frame held back by reordering (TX: sent; RX: returned by the
  // next RxBurst) and retries the TX backlog. Call once per poll loop pass.
  void Flush(uint16_t queue);
  uint32_t TxBacklog(uint16_t queue) const;

  // Whether frames may carry zero-copy segments (port/zerocopy.h): the driver
  // reads TX frames on the CPU — inside rte_eth_tx_burst (net_tap,
  // net_af_packet, net_pcap) or in this process's peer engine (net_ring) — and
  // chains of 4 segments go out as they are. Not for DMA or shared-memory
  // devices (PCI NICs, vhost/virtio_user, memif), which only see DPDK memory.
  bool zero_copy_tx() const { return zero_copy_tx_; }
  // net_tap: every burst reads the tap, and the kernel sends this process no
  // SIGIO for its frames (PortProfile::tap_rx_signal off, and it worked).
  bool tap_rx_polled() const { return tap_rx_trigger_ != nullptr; }
  // The fd that becomes readable when RX queue q has a frame, for a thread
  // with nothing to do to sleep on (PortProfile::rx_interrupt), or -1. Arm
  // the device's interrupt before the sleep and disarm it after (both no-ops
  // where the fd is the queue itself, net_tap). A frame held by a fault
  // (reordering) does not make it readable: sleep with a timeout.
  int RxWaitFd(uint16_t queue) const {
    return queue < rx_wait_fds_.size() ? rx_wait_fds_[queue] : -1;
  }
  void ArmRxInterrupt(uint16_t queue, bool on);
  // Frees the frames waiting in queue q's TX backlog or fault hold slot whose
  // zero-copy memory was revoked (ZcPool::Revoke): they must not reach the
  // device. Returns how many. Call with the lock Revoke was called with.
  size_t PurgeRevokedTx(uint16_t queue);

  // Checksum offload: sets ol_flags, l2_len, l3_len (and the UDP pseudo-
  // header sum the offload needs) for what this port offloads, and returns
  // the part of `want` the caller must still compute in software. The
  // headers must be in the first segment.
  TxChecksumRequest RequestTxChecksums(rte_mbuf* m, const TxChecksumRequest& want) const;

  absl::Status StartCapture(const std::string& path);
  void StopCapture();
  bool capturing() const { return capture_ != nullptr; }

  // Replaces the fault configuration (counters are kept; RNG streams restart
  // from the seed, so the same config + same traffic = same faults).
  void SetFaults(const FaultConfig& f);
  const FaultConfig& faults() const { return profile_.faults; }

  PortStats Stats() const;
  void ResetStats();

 private:
  struct RxQueue;
  struct TxQueue;
  Port();
  absl::Status Init(const PortProfile& profile);
  absl::Status CreateDevice();
  absl::Status Configure();
  void AccountRx(RxQueue& rq, rte_mbuf* const* pkts, uint16_t n);
  uint16_t RxSlow(RxQueue& rq, uint16_t q, rte_mbuf** pkts, uint16_t n);
  uint16_t TxChunk(TxQueue& tq, uint16_t q, rte_mbuf** pkts, uint16_t n);
  // A chain the device cannot take as it is (no multi-segment TX, or more
  // segments than it accepts): TX copies it into one segment first. The one
  // test for both TxBurst's fast path and TxChunk.
  bool NeedsLinearCopy(const rte_mbuf* m) const {
    return m->nb_segs > 1 && (!offloads_.tx_multiseg || m->nb_segs > max_tx_segs_);
  }
  uint16_t Submit(TxQueue& tq, uint16_t q, rte_mbuf** list, const uint32_t* lens, uint16_t n);
  void DrainBacklog(TxQueue& tq, uint16_t q);
  void FillTelemetry(TelemetryDict& d) const;
  // Every drop is counted; the first of each cause is also logged (rte_log
  // type roce.port) with what to look at.
  enum DropCause : uint8_t { kDropOversize, kDropNomem, kDropFull, kDropRxCopy, kDropMissed, kDropNombuf,
                             kDropOerrors };
  void LogDrop(DropCause c, const std::string& what) const;
  mutable std::atomic<uint32_t> logged_drops_{0};
  std::unique_ptr<KernelIface> kif_;

  PortProfile profile_;
  const DriverInfo* driver_ = nullptr;
  std::string name_;
  uint16_t port_id_ = UINT16_MAX;
  bool created_ = false, started_ = false;
  rte_mempool* pool_ = nullptr;
  bool pool_owned_ = false;   // false for a ring pair's shared pool
  std::string ring_set_;      // net_ring: registry key
  Offloads offloads_;
  wire::MacAddr mac_;
  uint32_t max_frame_len_ = 0;
  uint16_t max_tx_segs_ = UINT16_MAX;
  bool zero_copy_tx_ = false;
  bool rx_copy_ = false;  // profile rx_copy: RxSlow copies every frame into pool_
  // net_tap without its SIGIO (PortProfile::tap_rx_signal off): the PMD's
  // trigger handler, called before every burst so that the burst reads.
  void (*tap_rx_trigger_)(int) = nullptr;
  int tap_rx_sig_ = 0;
  std::vector<int> rx_wait_fds_;  // per RX queue (RxWaitFd); owned by the driver
  bool rx_intr_ops_ = false;      // rte_eth_dev_rx_intr_enable does something
  std::unique_ptr<RxQueue[]> rxq_;
  std::unique_ptr<TxQueue[]> txq_;
  std::vector<rte_flow*> flows_;
  std::unique_ptr<Capture> capture_;
  TelemetryRegistration telemetry_;
};

// Both ends of an in-process net_ring pair: `base` with ring_side a, and b.
// The two share one mbuf pool (frames cross from one to the other). Side b
// gets the MAC with the last bit flipped (if base has one) and, if base
// captures to x.pcap, captures to x-b.pcap.
absl::StatusOr<std::pair<std::unique_ptr<Port>, std::unique_ptr<Port>>> OpenRingPair(PortProfile base);

}  // namespace roce::port
