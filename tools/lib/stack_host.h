// SPDX-License-Identifier: MIT
// One stack on one DPDK port, as the tools bring it up: the port options every
// tool shares (--profile, --iface, --ip, --set section.key=value, --capture),
// the EAL, the port opened from its drivers-cfg profile, the engine; and one
// way to connect an RC QP to a peer (ARP/NDP, path, RTR, RTS).
//
// rc-pingpong and rc-rdma parse their command lines with getopt_long (they
// keep ibv_rc_pingpong's short options), so the shared options come as
// getopt_long entries a tool appends to its own table:
//
//   tools::HostOptions host;
//   std::vector<option> opts = {{"size", required_argument, nullptr, 's'}, ...};
//   tools::AddHostLongOptions(&opts);          // also appends the terminating entry
//   while ((c = getopt_long(argc, argv, "s:", opts.data(), nullptr)) != -1)
//     switch (c) {
//       case 's': ...; break;
//       default: if (!tools::ParseHostOption(c, optarg, &host)) return Usage();
//     }
//   auto h = tools::BringUp(host);             // EAL + port + engine (+ capture)
//   ...
//   tools::QpConnectParams c; c.peer = ...; c.attr.dest_qpn = ...; ...
//   if (auto s = tools::ConnectQp(*h->eng, qp, c); !s.ok()) ...
#pragma once

#include <getopt.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include "stack/engine/engine.h"
#include "stack/port/profile.h"

namespace roce::tools {

// The options every stack tool takes, and what BringUp does with them.
struct HostOptions {
  std::string profile = DefaultProfile();  // --profile: a drivers-cfg/*.ini file
  std::string iface;                       // --iface: the driver's interface (tap name, veth, ...)
  std::string ip;                          // --ip addr/len: port.ipv4 or port.ipv6
  std::vector<std::string> overrides;      // --set section.key=value (repeatable)
  std::string capture;                     // --capture file.pcap
  // A profile's single pinned lcore "0" becomes "0@(0-N-1)": one polling
  // thread, not pinned, sharing the machine with the peer (a qemu guest, or
  // another stack on the same host).
  bool unpin_lcore = true;
  engine::EngineOptions engine;

  // <source dir>/drivers-cfg/net_tap.ini
  static std::string DefaultProfile();
};

// getopt_long codes of the shared options (above any character a tool uses).
enum HostOptionCode : int {
  kOptProfile = 0x1000,
  kOptIface,
  kOptIp,
  kOptSet,
  kOptCapture,
};

// Appends --profile, --iface, --ip, --set and --capture (each with a
// required argument, returning the codes above) and then the terminating
// all-zero entry to a getopt_long table.
void AddHostLongOptions(std::vector<option>* opts);
// If `code` is one of the shared options, stores `arg` in *o and returns true.
bool ParseHostOption(int code, const char* arg, HostOptions* o);
// The usage lines of the shared options (for a tool's --help).
extern const char kHostOptionsUsage[];

// One stack: a port and the engine polling it. The engine goes first.
struct StackHost {
  std::unique_ptr<port::Port> port;
  std::unique_ptr<engine::Engine> eng;
};

// The profile BringUp opens: --profile loaded with the --set overrides, then
// --iface, --ip, --capture and the lcore rule applied.
absl::StatusOr<port::PortProfile> HostProfile(const HostOptions& o);
// Opens a port from `profile` and creates its engine (the EAL must be up). A
// port that fails to open: "Couldn't open the port: <why>".
absl::StatusOr<StackHost> OpenStackHost(const port::PortProfile& profile,
                                        const engine::EngineOptions& eo = {});
// HostProfile, InitEal for it, OpenStackHost.
absl::StatusOr<StackHost> BringUp(const HostOptions& o);

// Our address for RoCE (what goes in our GID): the family of --ip when one was
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
// Resolves the peer's MAC by ARP/NDP (which also lets a kernel RoCE peer
// resolve us), builds the path from our address of the peer's family, and
// moves `qp` (in INIT) to RTR and RTS. Takes eng.mu() itself: call without it,
// with the engine polled inline or by its own thread. Errors: the resolution's
// or the path's, "Failed to modify QP to RTR", "Failed to modify QP to RTS".
absl::Status ConnectQp(engine::Engine& eng, rc::QueuePair* qp, const QpConnectParams& p);

// Polls the engine inline for `d` (e.g. to let the last ACKs out before the
// QP is destroyed, as a NIC keeps running after the last completion).
void PollFor(engine::Engine& eng, std::chrono::nanoseconds d);

}  // namespace roce::tools
