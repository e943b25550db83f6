// SPDX-License-Identifier: MIT
// The stack tools' shared port options (host_options.h).
#include "tools/lib/host_options.h"

#include <unistd.h>

namespace roce::tools {

const char kHostOptionsUsage[] =
    "  --profile=<file>       port profile (drivers-cfg/*.ini; default net_tap.ini)\n"
    "  --iface=<name>         the driver's interface (tap name, veth, ...)\n"
    "  --ip=<addr/len>        the stack's own address (port.ipv4 / port.ipv6); its family picks our GID\n"
    "  --set=<section.key=v>  any profile key (repeatable), e.g. --set fault.rx_drop=0.02\n"
    "  --capture=<file.pcap>  write every frame sent and received\n";

void AddHostLongOptions(std::vector<option>* opts) {
  opts->push_back({"profile", required_argument, nullptr, kOptProfile});
  opts->push_back({"iface", required_argument, nullptr, kOptIface});
  opts->push_back({"ip", required_argument, nullptr, kOptIp});
  opts->push_back({"set", required_argument, nullptr, kOptSet});
  opts->push_back({"capture", required_argument, nullptr, kOptCapture});
  opts->push_back({nullptr, 0, nullptr, 0});
}

bool ParseHostOption(int code, const char* arg, host::HostOptions* o) {
  switch (code) {
    case kOptProfile: {
      // A bare name that is not a file here is a shipped profile (drivers-cfg/).
      const std::string shipped = host::ShippedProfile(arg);
      o->profile = access(arg, R_OK) != 0 && !shipped.empty() ? shipped : arg;
      return true;
    }
    case kOptIface: o->iface = arg; return true;
    case kOptIp: o->ip = arg; return true;
    case kOptSet: o->overrides.push_back(arg); return true;
    case kOptCapture: o->capture = arg; return true;
    default: return false;
  }
}

}  // namespace roce::tools
