// SPDX-License-Identifier: MIT
// The Linux interface beneath a port (net_af_xdp, net_af_packet, net_tap,
// net_pcap live), as the kernel sees it through netlink (stack/netlink):
//  - checks at open, before the device exists: the interface is there and
//    up, port.mtu is not above its MTU, and for net_af_xdp that no other
//    XDP program holds it (a stale one of ours, left by a killed process, is
//    removed; port/xdp_filter.h);
//  - identity = kernel (net_af_xdp beside the kernel): the port's MAC, MTU
//    and addresses are the interface's — every IPv4 and IPv6 address, GIDs of
//    the adapter, followed while running (RTM_NEWADDR / RTM_DELADDR) and
//    written into the XDP program's address map so that only RoCEv2 to them
//    reaches the socket;
//  - neighbours from the kernel, as rdma-core does for RoCE: the next hop
//    from the kernel's routes, its MAC from the kernel's neighbour table
//    (followed by RTM_NEWNEIGH), resolution asked of the kernel when missing.
//    No ARP or ND of ours on such a port.
// Thread-safe: the netlink watcher runs on its own thread; every getter may
// be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/status/statusor.h>
#include <absl/synchronization/mutex.h>

#include "stack/netlink/netlink.h"
#include "stack/netlink/watcher.h"
#include "stack/port/profile.h"
#include "stack/port/xdp_filter.h"
#include "stack/wire/headers.h"

namespace roce::port {

// While alive, the calling thread is in the network namespace `fd` names (if
// it was elsewhere): netlink and XDP calls about an interface must be made
// from its namespace, whichever thread makes them (a port closed from another
// thread, a test that opened it inside a namespace).
class InNetns {
 public:
  InNetns(int fd, uint64_t ino);
  ~InNetns();
  InNetns(const InNetns&) = delete;
  InNetns& operator=(const InNetns&) = delete;

 private:
  int saved_ = -1;
};

// A kernel neighbour lookup's outcome (the engine maps it to its own).
struct KernelNeighbor {
  enum Status : uint8_t { kResolved, kPending, kFailed } status = kFailed;
  wire::MacAddr mac;
  std::string why;  // kFailed: no route, route through another interface, ...
};

struct KernelIfaceCounters {
  uint64_t resolutions_asked = 0;   // TriggerResolution calls
  uint64_t neighbors_resolved = 0;  // lookups answered from the kernel's table
  uint64_t route_failures = 0;      // no route, or one through another interface
  uint64_t addr_changes = 0;        // address sets followed (XDP map rewritten)
};

class KernelIface {
 public:
  // Before the device is created. Resolves the interface of `profile`
  // (iface=), checks it, and for identity = kernel fills the profile's MTU
  // (if not given), ipv4/ipv6 (the given ones must be the interface's), and
  // for net_af_xdp the queues and the xdp_prog devarg.
  static absl::StatusOr<std::unique_ptr<KernelIface>> Open(PortProfile* profile);
  ~KernelIface();

  // After rte_eth_dev_start. `xsk_fds`: the AF_XDP sockets the device opened
  // (net_af_xdp). Attaches to our XDP program's maps, writes the addresses
  // and starts following the interface.
  absl::Status Started(const std::vector<int>& xsk_fds);
  // The checks that need the running device (net_tap: the PMD made the
  // interface): port.mtu against the interface's.
  // After the device closed: detaches our XDP program if the PMD did not.
  void Closed();
  static absl::Status CheckMtu(const std::string& ifname, uint16_t mtu, bool mtu_given);

  // The calling thread in the interface's network namespace while alive.
  InNetns EnterNetns() const { return InNetns(netns_fd_, netns_ino_); }
  int netns_fd() const { return netns_fd_; }
  uint64_t netns_ino() const { return netns_ino_; }
  const std::string& name() const { return name_; }
  int ifindex() const { return ifindex_; }
  bool kernel_identity() const { return kernel_identity_; }
  bool af_xdp() const { return af_xdp_; }
  const wire::MacAddr& mac() const { return mac_; }
  uint32_t link_mtu() const { return link_mtu_; }
  // net_af_xdp: whether every socket is in zero-copy mode (nullopt: unknown).
  std::optional<bool> zero_copy() const { return zero_copy_; }
  size_t sockets() const { return xsk_count_; }

  // The interface's addresses now (identity = kernel), usable ones only (no
  // tentative / DAD-failed IPv6). `generation` changes whenever they do.
  std::vector<IpPrefix> Addrs() const;
  uint64_t generation() const;

  // The MAC to send to `peer` with, from the kernel. Cheap on the fast
  // path after the first call (a route is looked up once a second at most).
  KernelNeighbor Resolve(const wire::IpAddr& peer, uint64_t now_ns);
  // Whether the kernel routes `peer` through this interface.
  bool RoutesThrough(const wire::IpAddr& peer, uint64_t now_ns);
  // The source address the kernel's route to `peer` names (else nullopt).
  std::optional<wire::IpAddr> SourceFor(const wire::IpAddr& peer, uint64_t now_ns);

  std::optional<XdpStats> xdp_stats() const;
  KernelIfaceCounters counters() const;
  netlink::Watcher::Counters watcher_counters() const;

 private:
  KernelIface() = default;
  void OnChange(bool force);
  void StopWatcher();
  struct PeerRoute {
    wire::IpAddr next_hop;
    std::optional<wire::IpAddr> src;
    uint64_t looked_up = 0;       // ns
    uint64_t triggered = 0;       // ns of the last TriggerResolution, 0: none
    bool ok = false;
    std::string why;
  };
  PeerRoute& RouteOf(const wire::IpAddr& peer, uint64_t now_ns);

  std::string name_;
  int netns_fd_ = -1;       // the namespace the interface was opened in
  uint64_t netns_ino_ = 0;
  int ifindex_ = 0;
  bool kernel_identity_ = false, af_xdp_ = false;
  wire::MacAddr mac_;
  uint32_t link_mtu_ = 0;
  std::optional<bool> zero_copy_;
  size_t xsk_count_ = 0;
  std::unique_ptr<netlink::Watcher> watcher_;
  std::unique_ptr<XdpFilter> filter_;

  mutable absl::Mutex mu_;
  std::vector<IpPrefix> addrs_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> generation_{1};
  absl::flat_hash_map<std::array<uint8_t, 16>, PeerRoute> routes_ ABSL_GUARDED_BY(mu_);  // by peer.b
  KernelIfaceCounters counters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace roce::port
