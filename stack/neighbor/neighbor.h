// SPDX-License-Identifier: MIT
// The neighbour layer: answers ARP for the stack's IPv4 addresses and IPv6
// Neighbor Discovery (NS/NA) for its IPv6 ones, learns peers' MACs, and
// resolves a peer's MAC on demand with retries and a timeout that fails
// cleanly. Pure C++: no DPDK and no clock. Time is an argument (nanoseconds on
// any monotonic clock the caller likes) and frames go in and out as byte
// spans, so it is deterministic and unit-testable.
//
// How the engine drives it, from its poll loop (one thread; not thread-safe):
//   - receive: if ClassifyNeighborFrame(frame) != kOther, call
//     HandleFrame(frame, now, tx); `tx` is called with the reply (if any).
//   - connect: Lookup(peer_ip, now, tx[, cookie]) -> resolved MAC, or pending
//     (a request went out through `tx`), or failed / no resources.
//     With a cookie, a pending lookup queues a waiter that completes exactly
//     once (resolved or failed) through the completion callback, or, if none
//     is set, through PollCompletion().
//   - timers: when now >= NextDeadline(), call Poll(now, tx) (retries,
//     resolution timeouts, refresh probes, garbage collection).
// `tx` frames are complete Ethernet frames (802.1Q-tagged if configured) of at
// most kMaxNeighborFrameLen bytes; the span is only valid during the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/functional/function_ref.h>
#include <absl/hash/hash.h>

#include "stack/wire/bytes.h"
#include "stack/wire/error.h"
#include "stack/wire/headers.h"

namespace roce::neighbor {

using wire::ByteSpan;
using wire::IpAddr;
using wire::MacAddr;

// Transmits one frame (copy it out; the span dies when the call returns).
using TxFn = absl::FunctionRef<void(ByteSpan frame)>;

// Ethernet 18 (with 802.1Q) + IPv6 40 + NS/NA with one option 32.
inline constexpr size_t kMaxNeighborFrameLen = 90;
inline constexpr uint64_t kNoDeadline = UINT64_MAX;

enum class FrameKind : uint8_t { kOther, kArp, kNdp };
// Cheap receive-path classifier: ARP, or IPv6 / ICMPv6 type 135/136 (no
// extension headers), after an optional 802.1Q tag. Does not validate: hand
// kArp/kNdp frames to HandleFrame, which does.
FrameKind ClassifyNeighborFrame(ByteSpan frame);

struct NeighborConfig {
  MacAddr mac;                  // our MAC: the source of everything we send
  std::vector<IpAddr> addrs;    // our addresses; IPv4 ones IPv4-mapped (IpAddr::FromV4)
  // 802.1Q: if set, frames are sent tagged with this VLAN id (and `vlan_pcp`)
  // and only frames tagged with this VLAN id are accepted. If unset, only
  // untagged and priority-tagged (VID 0) frames are accepted.
  std::optional<uint16_t> vlan_id;
  uint8_t vlan_pcp = 0;
  // Resolution: the first request goes out at Lookup, then `max_retries`
  // more, `retry_interval_ns` apart; `retry_interval_ns` after the last one
  // the resolution fails (so it fails (max_retries + 1) * retry_interval_ns
  // after it started).
  uint64_t retry_interval_ns = 1'000'000'000;
  uint32_t max_retries = 2;
  // A learned MAC is used without question for this long after it was last
  // confirmed; after that the entry is stale: a Lookup still returns the MAC
  // at once but sends unicast probes (same retry rules); a reply makes it
  // fresh again, no reply removes the entry. A stale entry nobody looks up is
  // removed `stale_time_ns` after it went stale.
  uint64_t reachable_time_ns = 30'000'000'000;
  uint64_t stale_time_ns = 60'000'000'000;
  size_t max_entries = 1024;    // all entries, static ones included
  size_t max_waiters = 1024;    // queued waiters plus undelivered completions
  bool pad_to_min_frame = true; // pad short frames (ARP) to 60 bytes
};

enum class ResolveStatus : uint8_t {
  kResolved,     // `mac` is valid
  kPending,      // a request is out; see LookupResult::waiter_queued
  kFailed,       // not resolvable: multicast/broadcast/unspecified/loopback
                 // address, or we have no source address of that family
  kNoResources,  // table full of entries that cannot be evicted; nothing started
};
const char* ResolveStatusName(ResolveStatus s);

struct LookupResult {
  ResolveStatus status = ResolveStatus::kFailed;
  MacAddr mac;                 // when kResolved
  bool waiter_queued = false;  // kPending with a cookie: a completion will come
};

// One waiter's outcome: the resolved MAC, or a failure (no answer after all
// retries, or the entry was removed while pending).
struct NeighborCompletion {
  IpAddr ip;
  uint64_t cookie = 0;
  bool ok = false;
  MacAddr mac;  // when ok
};

struct NeighborCounters {
  uint64_t arp_requests_rx = 0, arp_replies_rx = 0;
  uint64_t arp_requests_tx = 0, arp_replies_tx = 0;
  uint64_t ns_rx = 0, na_rx = 0, ns_tx = 0, na_tx = 0;
  uint64_t resolutions = 0;       // pending entries that got their MAC
  uint64_t failures = 0;          // pending entries that timed out
  uint64_t retries = 0;           // requests/probes after the first one
  uint64_t refreshes = 0;         // stale entries confirmed again by the peer
  uint64_t refresh_failures = 0;  // stale entries removed after unanswered probes
  uint64_t learned = 0;           // entries created from received frames
  uint64_t updated = 0;           // existing entries whose MAC changed
  uint64_t aged_out = 0;          // stale entries garbage collected
  uint64_t evictions = 0;         // entries evicted to make room
  uint64_t table_full = 0;        // lookups/learning refused: nothing evictable
  uint64_t waiter_limit = 0;      // waiters refused: max_waiters reached
  uint64_t ignored = 0;           // valid but not for us (other targets, own echoes)
  uint64_t conflicts = 0;         // someone else claims one of our addresses
  uint64_t wrong_vlan = 0;        // VLAN tag absent, present or different from config
  uint64_t drops[static_cast<size_t>(wire::Error::kCount)] = {};  // malformed, by reason
  uint64_t Drops(wire::Error e) const { return drops[static_cast<size_t>(e)]; }
  uint64_t TotalDrops() const;
};

enum class NeighborState : uint8_t {
  kIncomplete,  // resolving: requests out, MAC unknown, waiters queued
  kReachable,   // MAC confirmed less than reachable_time ago
  kStale,       // MAC older than reachable_time, not being probed
  kProbe,       // stale and in use: unicast probes out
  kStatic,      // pinned by AddStatic: never ages, never learned over
};
const char* NeighborStateName(NeighborState s);

// A snapshot of one entry, for diagnostics and tests.
struct NeighborInfo {
  NeighborState state;
  MacAddr mac;
  uint32_t requests_sent;  // in the current resolution/probe round
  size_t waiters;
};

class NeighborTable {
 public:
  explicit NeighborTable(NeighborConfig cfg);
  NeighborTable(const NeighborTable&) = delete;
  NeighborTable& operator=(const NeighborTable&) = delete;

  // Completions go to `cb` if set (called at the end of the HandleFrame /
  // Poll / AddStatic / Remove call that decided them; it may call back into
  // the table), else they queue for PollCompletion.
  void SetCompletionCallback(std::function<void(const NeighborCompletion&)> cb);
  bool PollCompletion(NeighborCompletion* out);

  // A received ARP or NDP frame. Answers requests for our addresses through
  // `tx` and learns from what it sees. Returns kOk if the frame was well
  // formed (acted upon or ignored), else the reason it was dropped (counted in
  // counters().drops). Never reads outside `frame`.
  wire::Error HandleFrame(ByteSpan frame, uint64_t now_ns, TxFn tx);

  // The MAC of `ip`, or starts (or continues) resolving it. With a cookie, a
  // kPending result queues a waiter (if max_waiters allows: waiter_queued).
  LookupResult Lookup(const IpAddr& ip, uint64_t now_ns, TxFn tx);
  LookupResult Lookup(const IpAddr& ip, uint64_t now_ns, TxFn tx, uint64_t cookie);

  // Runs every timer due at `now_ns`: retransmits, failures, probes, GC.
  void Poll(uint64_t now_ns, TxFn tx);
  // The earliest time Poll has work to do (kNoDeadline if none). May be
  // earlier than needed (an early Poll is harmless), never later.
  uint64_t NextDeadline() const { return next_deadline_; }
  // The same, never earlier than `now_ns` (== now_ns: Poll is due now).
  uint64_t NextDeadline(uint64_t now_ns) const {
    return next_deadline_ < now_ns ? now_ns : next_deadline_;
  }

  // Pins ip -> mac (replacing any entry; a pending one completes with `mac`).
  // False if `ip` is not a unicast address or the table is full.
  bool AddStatic(const IpAddr& ip, const MacAddr& mac);
  // Removes any entry for `ip`, static or learned; its waiters fail.
  bool Remove(const IpAddr& ip);

  std::optional<NeighborInfo> Find(const IpAddr& ip) const;
  size_t size() const { return entries_.size(); }
  const NeighborCounters& counters() const { return counters_; }
  const NeighborConfig& config() const { return cfg_; }
  bool IsLocal(const IpAddr& ip) const;

 private:
  struct IpHash {
    size_t operator()(const IpAddr& a) const {
      return absl::HashOf(wire::Load64(&a.b[0]), wire::Load64(&a.b[8]));
    }
  };
  struct Entry {
    NeighborState state = NeighborState::kIncomplete;
    MacAddr mac;
    uint32_t requests_sent = 0;
    uint64_t deadline = kNoDeadline;  // next retry/timeout (incomplete, probe) or GC (stale)
    uint64_t expires = 0;             // reachable: when it turns stale
    uint64_t last_used = 0;           // for eviction
    std::vector<uint64_t> waiters;
  };
  using Map = absl::flat_hash_map<IpAddr, Entry, IpHash>;

  LookupResult DoLookup(const IpAddr& ip, uint64_t now, TxFn tx, const uint64_t* cookie);
  wire::Error HandleArp(ByteSpan frame, const wire::EthernetHeader& eth, uint64_t now, TxFn tx);
  wire::Error HandleNdp(ByteSpan frame, uint64_t now, TxFn tx);
  // Learns ip -> mac. `create`: add an entry if there is none (else only an
  // existing one is updated). `override_mac`: replace a different known MAC.
  void Learn(const IpAddr& ip, const MacAddr& mac, uint64_t now, bool create, bool override_mac);
  void Confirm(const IpAddr& ip, Entry& e, const MacAddr& mac, uint64_t now);
  // Makes room for one more entry; false if the table is full of entries
  // that cannot be evicted (incomplete or static).
  bool MakeRoom();
  void FailWaiters(const IpAddr& ip, Entry& e);
  void SendRequest(const IpAddr& ip, const MacAddr* unicast_to, TxFn tx);
  const IpAddr* SourceFor(const IpAddr& dst) const;
  bool IsLocalV4(uint32_t a) const;
  wire::EthernetHeader EthFor(const MacAddr& dst, uint16_t ethertype) const;
  void Send(uint8_t* buf, size_t len, TxFn tx) const;
  void Arm(uint64_t t) { next_deadline_ = t < next_deadline_ ? t : next_deadline_; }
  wire::Error Drop(wire::Error e);
  void Deliver();  // hands `done_` to the callback or the queue

  NeighborConfig cfg_;
  Map entries_;
  NeighborCounters counters_;
  uint64_t next_deadline_ = kNoDeadline;
  size_t waiters_ = 0;  // queued in entries
  std::function<void(const NeighborCompletion&)> cb_;
  std::deque<NeighborCompletion> completions_;
  std::vector<NeighborCompletion> done_;  // decided during the current call
};

}  // namespace roce::neighbor
