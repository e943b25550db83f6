// SPDX-License-Identifier: MIT
// Bringing up one stack on one port (host.h): the shipped profiles' directory,
// the profile, the EAL, the port, the engine, and connecting an RC QP.
#include "stack/host/host.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <absl/strings/str_cat.h>

#include "stack/port/eal.h"

namespace roce::host {
namespace {

bool IsDir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

std::string Real(const char* p) {
  char buf[PATH_MAX];
  return p && *p && realpath(p, buf) ? std::string(buf) : std::string();
}

std::string FindDriversCfg() {
  if (const char* env = getenv("SOFT_RNIC_DRIVERS_CFG"); env && *env) return IsDir(env) ? env : "";
  // The module holding this code: libnd2.so for an ND2 program, else the program itself.
  std::vector<std::string> modules;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&DriversCfgDir), &info) && info.dli_fname &&
      std::string(info.dli_fname).find(".so") != std::string::npos)
    modules.push_back(Real(info.dli_fname));
  modules.push_back(Real("/proc/self/exe"));
  for (const std::string& m : modules) {
    if (m.empty()) continue;
    std::string dir = DirOf(m);
    for (int up = 0; up <= 3; up++, dir = DirOf(dir)) {
      for (const char* sub : {"/drivers-cfg", "/share/soft-rnic/drivers-cfg"}) {
        const std::string d = dir + sub;
        if (IsDir(d)) return d;
      }
      if (dir == "/") break;
    }
  }
  return "";
}

}  // namespace

std::string DriversCfgDir() {
  static const std::string dir = FindDriversCfg();
  return dir;
}

std::string ShippedProfile(const std::string& name) {
  const std::string dir = DriversCfgDir();
  if (dir.empty() || name.empty() || name.find('/') != std::string::npos) return "";
  const std::string p = dir + "/" + name;
  return access(p.c_str(), R_OK) == 0 ? p : "";
}

std::string HostOptions::DefaultProfile() {
  const std::string p = ShippedProfile("net_tap.ini");
  return p.empty() ? "net_tap.ini" : p;
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

}  // namespace roce::host
