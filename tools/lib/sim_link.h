// SPDX-License-Identifier: MIT
// A simulated Ethernet joining RC devices: every packet is serialized to real
// bytes (headers, payload, pad, ICRC), carried through a seeded impairment
// model — loss, duplication, reordering, single-bit corruption (which the
// receiver's ICRC check must catch), propagation delay and a serialization
// rate — and parsed again at the receiver. Time is virtual: the simulator
// jumps to the next delivery or timer, so hours of protocol time cost only
// the CPU of the packets themselves. Deterministic for a seed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <random>
#include <string>
#include <vector>
#include <cstdio>

#include "stack/rc/device.h"

namespace roce::sim {

struct Impairment {
  double loss = 0;       // probability a frame is dropped
  double reorder = 0;    // probability a frame is held back behind later ones
  double dup = 0;        // probability a frame is delivered twice
  double corrupt = 0;    // probability one random bit of a frame is flipped
  uint64_t delay_ns = 1000;        // one-way propagation delay
  double gbps = 100;               // serialization rate per sender (0: instant)
  uint32_t reorder_depth = 8;      // a held-back frame arrives up to this many frame-times late
  double ce_mark = 0;    // probability an ECN-capable IPv4 frame is marked CE (congestion)
  // Transmit queue per sender, in serialization time (0: unbounded). When the
  // link is already busy this far ahead, the node refuses the packet as a
  // full NIC ring would (the device counts tx_busy and the QP retries later),
  // so a long burst — a 2 GiB Read's responses — is not all queued at once.
  uint64_t tx_queue_ns = 0;
  // A receiver slower than the link, as a kernel tap or a busy host is: frames
  // reach a node's receive buffer at link speed and leave it at rx_gbps; one
  // that arrives while the buffer already holds rx_queue_ns of draining is
  // dropped (tail drop: losses come in bursts, as a tap drops an unpaced Read
  // response train). 0: the receiver keeps up.
  double rx_gbps = 0;
  uint64_t rx_queue_ns = 0;
};

struct LinkCounters {
  uint64_t frames = 0, bytes = 0, dropped = 0, duplicated = 0, reordered = 0, corrupted = 0,
           delivered = 0, filtered = 0, ce_marked = 0;
  // RC payload bytes (requests and Read responses) of frames the link lost or
  // corrupted: what a sender that resent exactly the lost packets would resend.
  uint64_t lost_payload_bytes = 0;
  uint64_t lost_response_bytes = 0;  // of which Read responses
  uint64_t rx_overflows = 0;         // of `dropped`: tail drops at a slow receiver
};

class SimNetwork;

// One simulated host: an RC device plus the addresses its packets carry.
class SimNode : public rc::PacketSink {
 public:
  SimNode(SimNetwork* net, int id, const std::string& name, const wire::MacAddr& mac,
          const wire::IpAddr& ip, const rc::RcDevice::Config& cfg);
  bool Transmit(const rc::TxPacket& pkt, uint64_t now) override;

  rc::RcDevice& dev() { return dev_; }
  int id() const { return id_; }
  const std::string& name() const { return name_; }
  const wire::MacAddr& mac() const { return mac_; }
  const wire::IpAddr& ip() const { return ip_; }
  // Network headers for packets from this node to `peer` (IPv4 or IPv6 by address).
  wire::NetHeaders PathTo(const SimNode& peer, uint8_t tos = 0) const;

 private:
  SimNetwork* net_;
  int id_;
  std::string name_;
  wire::MacAddr mac_;
  wire::IpAddr ip_;
  rc::RcDevice dev_;
  std::vector<uint8_t> scratch_;
};

class SimNetwork {
 public:
  // Hosts get 198.18.0.10, .11, ... (or 2001:db8::10, ... with ipv6).
  SimNetwork(uint64_t seed, const Impairment& imp, bool ipv6 = false);
  SimNode* AddNode(const std::string& name, const rc::RcDevice::Config& cfg = {});
  SimNode* node(int i) { return nodes_[static_cast<size_t>(i)].get(); }
  size_t nodes() const { return nodes_.size(); }

  uint64_t now() const { return now_; }
  Impairment& impairment() { return imp_; }
  const LinkCounters& counters() const { return counters_; }

  // A test hook run on every frame before the impairments: return false to
  // drop it. The frame may be modified in place (e.g. to flip a bit).
  std::function<bool(const SimNode& from, std::vector<uint8_t>& frame)> filter;
  // If set, one line per frame sent and its fate (for debugging).
  FILE* trace = nullptr;
  // Keep the last `n` frames in memory (cheap); DumpRecent prints them.
  void RecordRecent(size_t n) { recent_.assign(n, Record{}); }
  void DumpRecent(FILE* out) const;

  // Runs the network: devices transmit, frames are delivered, timers fire,
  // time jumps to the next event. Returns true when `done()` holds, false
  // if the network goes idle first or virtual time passes `until_ns`.
  bool RunUntil(const std::function<bool()>& done, uint64_t until_ns);
  // Runs until nothing is in flight, no timer is pending, or `until_ns`.
  void RunIdle(uint64_t until_ns);
  // Moves virtual time forward (never back) with nothing happening.
  void AdvanceTo(uint64_t t) { now_ = std::max(now_, t); }
  // One step: transmit what is ready, deliver what is due. Returns false if idle.
  bool Step(uint64_t until_ns);

  void Send(int from, std::vector<uint8_t>&& frame);
  // False while `from`'s transmit queue is full (Impairment::tx_queue_ns).
  bool CanSend(int from) const {
    return imp_.tx_queue_ns == 0 || busy_until_[static_cast<size_t>(from)] <= now_ + imp_.tx_queue_ns;
  }

 private:
  struct InFlight {
    uint64_t at;
    uint64_t seq;
    int dst;
    std::vector<uint8_t> frame;
    bool received = false;  // through the receiver's buffer (Impairment::rx_gbps)
    bool operator>(const InFlight& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  bool Chance(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  int Destination(const std::vector<uint8_t>& frame) const;
  // Counts the RC payload of a frame the link lost or corrupted.
  void CountLost(const std::vector<uint8_t>& frame);

  struct Record {
    uint64_t t = 0;
    uint32_t qpn = 0, psn = 0, len = 0;
    uint8_t from = 0, to = 0, opcode = 0, syndrome = 0, fate = 0;  // fate: 0 ok, 1 lost, 2 reordered, 3 dup, 4 corrupt
    bool ack_req = false, valid = false;
  };
  void Remember(int from, int to, const std::vector<uint8_t>& frame, uint8_t fate);
  std::vector<Record> recent_;
  size_t recent_next_ = 0;
  std::mt19937_64 rng_;
  Impairment imp_;
  bool ipv6_ = false;
  uint64_t now_ = 0;
  uint64_t seq_ = 0;
  std::vector<std::unique_ptr<SimNode>> nodes_;
  std::vector<uint64_t> busy_until_;
  std::vector<uint64_t> rx_busy_until_;  // per node: when its receive buffer drains
  std::priority_queue<InFlight, std::vector<InFlight>, std::greater<InFlight>> inflight_;
  LinkCounters counters_;
};

}  // namespace roce::sim
