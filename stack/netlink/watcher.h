// SPDX-License-Identifier: MIT
// Watcher: follows one network interface through rtnetlink events. A thread
// blocked in poll() on a NETLINK_ROUTE socket subscribed to RTNLGRP_LINK,
// RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR and RTNLGRP_NEIGH keeps a snapshot
// of the interface: its link (MAC, MTU, up/down, ...), its addresses and the
// neighbour entries the kernel has for it (from a dump at start and the
// events since). Events of other interfaces are ignored.
//
//   auto w = roce::netlink::Watcher::Start(ifindex);   // on a thread inside the namespace
//   uint64_t g = (*w)->generation();                   // poll loop: cheap change check
//   if (g != last) { last = g; auto addrs = (*w)->addrs(); ... }
//   (*w)->neighbor(peer_ip);                           // no syscall
//
// Getters are thread-safe (absl::Mutex). generation() is bumped after every
// change of the snapshot (an event that changes nothing bumps nothing). The
// callback (optional) runs on the watcher thread, with no lock held, after
// each batch of events that changed something; it must not call Stop() or
// destroy the Watcher. If the socket overruns (ENOBUFS: events were lost),
// the watcher re-dumps link, addresses and neighbours (counters().resyncs).
// Stop() and the destructor end the thread promptly (an eventfd wakes it;
// at most one in-flight re-dump, bounded by its 1 s receive timeout).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <absl/base/thread_annotations.h>
#include <absl/status/statusor.h>
#include <absl/synchronization/mutex.h>

#include "stack/netlink/netlink.h"

namespace roce::netlink {

class Watcher {
 public:
  struct Options {
    // SO_RCVBUF(FORCE) of the event socket: how many events may queue while
    // the thread is busy before the kernel drops some (ENOBUFS -> re-dump).
    int rcvbuf_bytes = 1 << 20;
  };

  // Opens the sockets in the calling thread's network namespace, dumps the
  // interface's state (NotFound if there is no such interface) and starts the
  // thread. The snapshot is complete when Start returns.
  static absl::StatusOr<std::unique_ptr<Watcher>> Start(int ifindex) { return Start(ifindex, Options{}); }
  static absl::StatusOr<std::unique_ptr<Watcher>> Start(int ifindex, Options opts);
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  // Ends the thread (idempotent). The getters keep answering from the last snapshot.
  void Stop();

  int ifindex() const { return ifindex_; }
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // False once the kernel deleted the interface (or moved it to another
  // namespace): addresses and neighbours are then empty, the link is down.
  bool present() const;
  LinkInfo link() const;
  std::vector<IfAddr> addrs() const;
  std::optional<Neighbor> neighbor(const wire::IpAddr& ip) const;  // from events/dump, no syscall
  std::vector<Neighbor> neighbors() const;

  void SetCallback(std::function<void()> cb);

  struct Counters {
    uint64_t events = 0;         // messages about this interface (changing something or not)
    uint64_t addr_added = 0;
    uint64_t addr_removed = 0;
    uint64_t neigh_updates = 0;  // neighbour entries created, changed or deleted
    uint64_t link_changes = 0;   // link messages that changed the LinkInfo (or deleted the link)
    uint64_t resyncs = 0;        // re-dumps after an overrun
    uint64_t resync_errors = 0;  // re-dumps that failed (retried after 1 s)
  };
  Counters counters() const;

 private:
  struct Snapshot {
    bool present = true;
    LinkInfo link;
    std::vector<IfAddr> addrs;
    std::map<std::array<uint8_t, 16>, Neighbor> neighbors;
    bool operator==(const Snapshot&) const = default;
  };

  Watcher(int ifindex, mnl_socket* events, std::unique_ptr<detail::QuerySocket> query, int stop_fd);
  absl::StatusOr<Snapshot> Dump();
  absl::Status Resync(bool count);
  void Run();
  // Applies one event; true if the snapshot changed.
  bool Apply(const nlmsghdr* nlh) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int ifindex_;
  mnl_socket* const events_;
  const std::unique_ptr<detail::QuerySocket> query_;  // used by the thread only (after Start)
  const int stop_fd_;
  std::thread thread_;
  std::atomic<bool> stopped_{false};
  std::atomic<uint64_t> generation_{0};

  mutable absl::Mutex mu_;
  Snapshot snap_ ABSL_GUARDED_BY(mu_);
  Counters counters_ ABSL_GUARDED_BY(mu_);

  absl::Mutex stop_mu_;  // serializes Stop()
  absl::Mutex cb_mu_;
  std::function<void()> cb_ ABSL_GUARDED_BY(cb_mu_);
};

}  // namespace roce::netlink
