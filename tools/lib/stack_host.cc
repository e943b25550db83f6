// SPDX-License-Identifier: MIT
#include "tools/lib/stack_host.h"

#include <unistd.h>

#include <absl/strings/str_cat.h>

#include "stack/port/eal.h"

namespace roce::tools {

std::string HostOptions::DefaultProfile() { return std::string(ROCE_SOURCE_DIR) + "/drivers-cfg/net_tap.ini"; }

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

bool ParseHostOption(int code, const char* arg, HostOptions* o) {
  switch (code) {
    case kOptProfile: o->profile = arg; return true;
    case kOptIface: o->iface = arg; return true;
    case kOptIp: o->ip = arg; return true;
    case kOptSet: o->overrides.push_back(arg); return true;
    case kOptCapture: o->capture = arg; return true;
    default: return false;
  }
}

absl::StatusOr<port::PortProfile> HostProfile(const HostOptions& o) {
  auto profile = port::LoadProfile(o.profile, o.overrides);
  if (!profile.ok()) return profile.status();
  if (!o.iface.empty()) {
    if (auto s = port::SetInterface(&*profile, o.iface); !s.ok()) return s;
  }
  if (!o.ip.empty()) {
    if (auto s = port::SetAddress(&*profile, o.ip); !s.ok()) return s;
  }
  if (!o.capture.empty()) profile->capture = o.capture;
  if (o.unpin_lcore && profile->eal.lcores == "0") {
    const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu > 1) profile->eal.lcores = absl::StrCat("0@(0-", ncpu - 1, ")");
  }
  return profile;
}

absl::StatusOr<StackHost> OpenStackHost(const port::PortProfile& profile, const engine::EngineOptions& eo) {
  StackHost h;
  auto p = port::Port::Open(profile);
  if (!p.ok()) return absl::Status(p.status().code(), absl::StrCat("Couldn't open the port: ", p.status().message()));
  h.port = std::move(*p);
  auto e = engine::Engine::Create(h.port.get(), eo);
  if (!e.ok()) return e.status();
  h.eng = std::move(*e);
  return h;
}

absl::StatusOr<StackHost> BringUp(const HostOptions& o) {
  auto profile = HostProfile(o);
  if (!profile.ok()) return profile.status();
  const port::PortProfile profiles[] = {*profile};
  if (auto s = port::InitEal(port::EalOptionsFor(profiles)); !s.ok()) return s;
  return OpenStackHost(*profile, o.engine);
}

absl::StatusOr<wire::IpAddr> LocalGidIp(const engine::Engine& eng, const HostOptions& o) {
  const bool v6 = o.ip.empty() ? !eng.LocalIp(false) : o.ip.find(':') != std::string::npos;
  const auto ip = eng.LocalIp(v6);
  if (!ip) return absl::NotFoundError(absl::StrCat("the port profile has no ", v6 ? "IPv6" : "IPv4", " address (--ip)"));
  return *ip;
}

absl::Status ConnectQp(engine::Engine& eng, rc::QueuePair* qp, const QpConnectParams& p) {
  auto mac = eng.Resolve(p.peer, p.resolve_timeout_ns);
  if (!mac.ok()) return mac.status();
  roce::engine::EngineLock l(&eng.mu());
  auto path = eng.PathTo(p.peer, *mac);
  if (!path.ok()) return path.status();
  rc::QpAttr a = p.attr;
  a.path = *path;
  if (!qp->ToRtr(a)) return absl::FailedPreconditionError("Failed to modify QP to RTR");
  if (!qp->ToRts(eng.NowNs())) return absl::FailedPreconditionError("Failed to modify QP to RTS");
  return absl::OkStatus();
}

void PollFor(engine::Engine& eng, std::chrono::nanoseconds d) {
  for (auto until = std::chrono::steady_clock::now() + d; std::chrono::steady_clock::now() < until;) eng.Poll();
}

}  // namespace roce::tools
