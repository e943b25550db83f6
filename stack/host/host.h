// SPDX-License-Identifier: MIT
// One stack on one DPDK port, as a program brings it up (libnd2's adapters,
// rc-pingpong, rc-rdma, the two-stack harness): the shipped driver profiles
// and where they are found, a profile with the program's choices applied, the
// EAL, the port opened from it, the engine; and one way to connect an RC QP to
// a peer (neighbour resolution, path, RTR, RTS).
//
// The command-line side (--profile, --iface, --ip, --set, --capture as
// getopt_long entries) is the tools' (tools/lib/host_options.h).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include "stack/engine/engine.h"
#include "stack/port/profile.h"

namespace roce::host {

// The directory of the shipped driver profiles (drivers-cfg/*.ini), found with
// no source tree: $SOFT_RNIC_DRIVERS_CFG if set; else, from the directory of
// the program or shared library holding this code and each parent up to three
// levels, the first of <dir>/drivers-cfg (a build tree: build/drivers-cfg) and
// <dir>/share/soft-rnic/drivers-cfg (an installed prefix). "" if none exists.
std::string DriversCfgDir();
// `name` (e.g. "net_tap.ini") in DriversCfgDir(), or "" if it is not there.
std::string ShippedProfile(const std::string& name);

// A program's choices for its one port, and what BringUp does with them.
struct HostOptions {
  std::string profile = DefaultProfile();  // a drivers-cfg/*.ini file
  std::string iface;                       // the driver's interface (tap name, veth, ...)
  std::string ip;                          // addr/len: port.ipv4 or port.ipv6
  std::vector<std::string> overrides;      // section.key=value
  std::string capture;                     // file.pcap
  // A profile's single pinned lcore "0" becomes "0@(0-N-1)": one polling
  // thread, not pinned, sharing the machine with the peer (a qemu guest, or
  // another stack on the same host).
  bool unpin_lcore = true;
  engine::EngineOptions engine;

  // The shipped net_tap.ini (ShippedProfile), or "net_tap.ini" if none is found
  // (opening it then fails with the profile loader's message).
  static std::string DefaultProfile();
};

// One stack: a port and the engine polling it. The engine goes first.
struct StackHost {
  std::unique_ptr<port::Port> port;
  std::unique_ptr<engine::Engine> eng;
};

// The profile BringUp opens: the profile loaded with the overrides, then the
// interface, the address, the capture and the lcore rule applied.
absl::StatusOr<port::PortProfile> HostProfile(const HostOptions& o);
// Opens a port from `profile` and creates its engine (the EAL must be up). A
// port that fails to open: "Couldn't open the port: <why>".
absl::StatusOr<StackHost> OpenStackHost(const port::PortProfile& profile,
                                        const engine::EngineOptions& eo = {});
// HostProfile, InitEal for it, OpenStackHost.
absl::StatusOr<StackHost> BringUp(const HostOptions& o);

// Our address for RoCE (what goes in our GID): the family of o.ip when one was
// given, else IPv4 if the port has an IPv4 address, else IPv6.
// "the port profile has no IPv6 address (--ip)" when there is none.
absl::StatusOr<wire::IpAddr> LocalGidIp(const engine::Engine& eng, const HostOptions& o);

// What connecting a QP to its peer takes: the peer's address (from its GID)
// and the QP attributes both sides agreed on (dest_qpn = remote QPN, rq_psn =
// remote PSN, sq_psn = ours, path_mtu, rd_atomic, timers). attr.path is
// filled in by ConnectQp.
struct QpConnectParams {
  wire::IpAddr peer;
  rc::QpAttr attr;
  uint64_t resolve_timeout_ns = 3'000'000'000ull;
};
// Resolves the peer's MAC (ARP/NDP, or the kernel's neighbours on a kernel
// interface; which also lets a kernel RoCE peer resolve us), builds the path
// from our address of the peer's family, and moves `qp` (in INIT) to RTR and
// RTS. Takes eng.mu() itself: call without it, with the engine polled inline or
// by its own thread. Errors: the resolution's or the path's, "Failed to modify
// QP to RTR", "Failed to modify QP to RTS".
absl::Status ConnectQp(engine::Engine& eng, rc::QueuePair* qp, const QpConnectParams& p);

// Polls the engine inline for `d` (e.g. to let the last ACKs out before the
// QP is destroyed, as a NIC keeps running after the last completion).
void PollFor(engine::Engine& eng, std::chrono::nanoseconds d);

}  // namespace roce::host
