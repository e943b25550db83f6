// SPDX-License-Identifier: MIT
// The port options every stack tool shares (--profile, --iface, --ip,
// --set section.key=value, --capture) as getopt_long entries, filling a
// host::HostOptions (stack/host/host.h) that host::BringUp then opens.
//
// rc-pingpong and rc-rdma parse their command lines with getopt_long (they
// keep ibv_rc_pingpong's short options), so the shared options come as
// entries a tool appends to its own table:
//
//   host::HostOptions h;
//   std::vector<option> opts = {{"size", required_argument, nullptr, 's'}, ...};
//   tools::AddHostLongOptions(&opts);          // also appends the terminating entry
//   while ((c = getopt_long(argc, argv, "s:", opts.data(), nullptr)) != -1)
//     switch (c) {
//       case 's': ...; break;
//       default: if (!tools::ParseHostOption(c, optarg, &h)) return Usage();
//     }
//   auto s = host::BringUp(h);                 // EAL + port + engine (+ capture)
#pragma once

#include <getopt.h>

#include <vector>

#include "stack/host/host.h"

namespace roce::tools {

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
bool ParseHostOption(int code, const char* arg, host::HostOptions* o);
// The usage lines of the shared options (for a tool's --help).
extern const char kHostOptionsUsage[];

}  // namespace roce::tools
