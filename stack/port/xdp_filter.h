// SPDX-License-Identifier: MIT
// The userspace side of the XDP program (xdp/soft_rnic_xdp.bpf.c) that the
// net_af_xdp PMD loads on an interface the soft-RNIC shares with the kernel:
// where the program is (XdpProgramPath), what is attached to an interface
// (InspectXdp), clearing a program left by a killed adapter before the PMD
// opens the interface (PrepareInterfaceForXdp), and, once the PMD attached
// ours, its maps (XdpFilter: the owner record, the address set the program
// steers to the AF_XDP sockets, its counters). Also finds this process's
// AF_XDP sockets and their zero-copy mode. libbpf only, no DPDK.
//
// Lifecycle (the PMD attaches with XDP_FLAGS_UPDATE_IF_NOEXIST and detaches
// at dev close):
//   PrepareInterfaceForXdp(ifindex, ifname);   // before the PMD opens it
//   ... open the port (xdp_prog=XdpProgramPath()) ...
//   auto f = XdpFilter::Attach(ifindex);        // owner := this process
//   f->SetAddrs({IpAddr::FromV4(...)});         // now RoCE goes to the sockets
//   ... close the port (the PMD detaches), then destroy f ...
// A process killed with SIGKILL leaves the program attached; its redirect
// falls back to XDP_PASS once the sockets are gone, and the next process's
// PrepareInterfaceForXdp removes it (the owner's pid is dead).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stack/wire/headers.h"

namespace roce::port {

// The program's object file: env SOFT_RNIC_XDP_PROG if set and not empty,
// else where the build put it (stack/port/xdp/soft_rnic_xdp.o in the build
// dir).
std::string XdpProgramPath();

// The XDP program attached to an interface (prog_id 0: none).
struct XdpAttached {
  uint32_t prog_id = 0;
  std::string name;          // as the kernel keeps it (15 chars at most)
  bool ours = false;         // named soft_rnic_xdp with a map srnic_owner
  uint32_t owner_pid = 0;    // from srnic_owner (ours only; 0: not written yet)
  bool owner_alive = false;  // that pid runs and started when the record says
  // Beyond the minimum: the mode it is attached in (XDP_FLAGS_DRV_MODE,
  // XDP_FLAGS_SKB_MODE or XDP_FLAGS_HW_MODE; a detach must name it), and
  // when it was loaded (CLOCK_BOOTTIME ns, bpf_prog_info.load_time).
  uint32_t mode_flags = 0;
  uint64_t load_time_ns = 0;
};
// Needs CAP_SYS_ADMIN (bpf_prog_get_fd_by_id). With programs in several
// modes (native and offloaded), the native/generic one is reported.
absl::StatusOr<XdpAttached> InspectXdp(int ifindex);

// Before the PMD opens `ifname`: nothing attached → OK; ours with a dead
// owner (a killed process's) → detached (only if it is still that program),
// one line on stderr, OK; ours with a live owner → FailedPrecondition naming
// the interface and the pid; ours with no owner yet, loaded less than 10 s
// ago (an adapter starting) → FailedPrecondition, loaded earlier (its
// process died while starting) → removed as stale; any other program →
// FailedPrecondition naming it (never replaced).
absl::Status PrepareInterfaceForXdp(int ifindex, const std::string& ifname);

struct XdpStats {
  uint64_t to_xsk = 0;          // redirect attempted
  uint64_t pass_not_roce = 0;   // not IP / not UDP 4791
  uint64_t pass_not_local = 0;  // UDP 4791 to an address not in the set
  uint64_t pass_malformed = 0;  // truncated, IPv4 fragment, IPv6 extension header
};

// Our program's maps on one interface, after the PMD attached it.
class XdpFilter {
 public:
  // Finds the program on `ifindex` (InspectXdp), refuses one that is not
  // ours or is owned by another live process, opens its maps by id and
  // writes this process (pid + start time) as its owner.
  static absl::StatusOr<std::unique_ptr<XdpFilter>> Attach(int ifindex);
  // Closes the fds; does not detach (the PMD does at dev close).
  ~XdpFilter();
  XdpFilter(const XdpFilter&) = delete;
  XdpFilter& operator=(const XdpFilter&) = delete;

  // The destination addresses steered to the sockets become exactly `addrs`
  // (IPv4 as IPv4-mapped, IpAddr::FromV4): the new are added first, then
  // the ones not listed removed. At most 256.
  absl::Status SetAddrs(const std::vector<wire::IpAddr>& addrs);
  // The program's counters, summed over the CPUs.
  XdpStats Stats() const;
  uint32_t prog_id() const { return prog_id_; }
  int ifindex() const { return ifindex_; }
  // Detaches our program if it is still the one attached on the interface
  // (for when the PMD did not); OK if it is gone already.
  absl::Status Detach();

 private:
  XdpFilter() = default;
  int ifindex_ = 0;
  uint32_t prog_id_ = 0;
  uint32_t mode_flags_ = 0;
  int prog_fd_ = -1;
  int addrs_fd_ = -1;
  int owner_fd_ = -1;
  int stats_fd_ = -1;
};

// This process's fds that are AF_XDP sockets (ascending). Diff before and
// after starting a port to know its sockets.
std::vector<int> AfXdpSocketFds();
// Whether the AF_XDP socket `fd` is bound in zero-copy mode (XDP_OPTIONS);
// nullopt if it is not one.
std::optional<bool> XskZeroCopy(int fd);

}  // namespace roce::port
