// SPDX-License-Identifier: MIT
#include "nd2api/src/config.h"

#include <rte_cfgfile.h>
#include <sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <type_traits>

#include <absl/strings/match.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>
#include <absl/strings/strip.h>
#include <absl/strings/ascii.h>

#include "stack/host/host.h"
#include "stack/port/profile.h"

namespace roce::nd2 {

namespace {

bool Exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string Dir(const std::string& p) {
  const size_t s = p.rfind('/');
  return s == std::string::npos ? "." : p.substr(0, s);
}

// An unsigned integer in [lo, hi].
bool ParseUint(const std::string& v, uint32_t lo, uint32_t hi, uint32_t* out) {
  uint32_t x;
  if (!absl::SimpleAtoi(v, &x) || x < lo || x > hi) return false;
  *out = x;
  return true;
}

}  // namespace

bool ProgressYields(int8_t setting, size_t progress_threads, size_t cpus) {
  if (setting >= 0) return setting == 1;
  return progress_threads > 0 && progress_threads + 1 > cpus;
}

size_t UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

absl::StatusOr<Nd2Config> LoadNd2Config() {
  const char* env = std::getenv("ND2_CONFIG");
  return LoadNd2Config(env && *env ? env : kDefaultConfigPath);
}

absl::StatusOr<Nd2Config> LoadNd2Config(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return absl::NotFoundError(absl::StrCat("ND2 configuration ", path, " not found: ", std::strerror(errno),
                                            " (set ND2_CONFIG to an INI file with an [adapter...] section)"));
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot be read: ", std::strerror(errno)));
  // The syntax is checked here, line by line (rte_cfgfile's loader skips what
  // it cannot parse); the entries go into an rte_cfgfile.
  rte_cfgfile* cfg = rte_cfgfile_create(0);
  if (!cfg) return absl::ResourceExhaustedError(absl::StrCat(path, ": out of memory"));
  std::vector<std::vector<int>> lines;  // per section, per entry: its line
  std::string line, section;
  for (int no = 1; std::getline(in, line); no++) {
    auto syntax = [&](const std::string& why) {
      rte_cfgfile_close(cfg);
      return absl::InvalidArgumentError(absl::StrCat(path, ":", no, ": ", why, ": ", line));
    };
    std::string t(absl::StripAsciiWhitespace(line));
    if (t.empty() || t[0] == ';' || t[0] == '#') continue;
    if (t[0] == '[') {
      if (t.back() != ']' || t.size() < 3 || t.size() - 2 >= CFG_NAME_LEN)
        return syntax("not a valid INI line (a [section] name is 1..63 characters)");
      section = t.substr(1, t.size() - 2);
      if (rte_cfgfile_has_section(cfg, section.c_str()))
        return syntax(absl::StrCat("section [", section, "] appears twice"));
      if (rte_cfgfile_add_section(cfg, section.c_str()) != 0) return syntax("out of memory");
      lines.emplace_back();
      continue;
    }
    const size_t eq = t.find('=');
    if (eq == std::string::npos) return syntax("not a valid INI line (expected key = value or [section])");
    if (section.empty()) return syntax("not a valid INI line (key = value before any [section])");
    std::string key(absl::StripAsciiWhitespace(t.substr(0, eq)));
    std::string value = t.substr(eq + 1);
    if (const size_t c = value.find(';'); c != std::string::npos) value.resize(c);  // a trailing comment
    value = std::string(absl::StripAsciiWhitespace(value));
    if (key.empty() || key.size() >= CFG_NAME_LEN || value.size() >= CFG_VALUE_LEN)
      return syntax("not a valid INI line (a key of 1..63 characters, a value of at most 255)");
    if (rte_cfgfile_has_entry(cfg, section.c_str(), key.c_str()))
      return syntax(key == "ip" || key == "ip6"
                        ? absl::StrCat("[", section, "] a second ", key, " (an adapter has one IPv4 and one IPv6 address)")
                        : absl::StrCat("[", section, "] ", key, " is set twice"));
    if (rte_cfgfile_add_entry(cfg, section.c_str(), key.c_str(), value.c_str()) != 0) return syntax("out of memory");
    lines.back().push_back(no);
  }
  Nd2Config out;
  out.path = path;
  absl::Status err;
  const int nsec = rte_cfgfile_num_sections(cfg, nullptr, 0);
  std::vector<std::vector<char>> names(static_cast<size_t>(std::max(nsec, 0)), std::vector<char>(CFG_NAME_LEN));
  std::vector<char*> ptrs;
  for (auto& n : names) ptrs.push_back(n.data());
  rte_cfgfile_sections(cfg, ptrs.data(), nsec);
  std::map<std::string, std::string> owner;  // explicit address -> section
  for (int s = 0; s < nsec && err.ok(); s++) {
    const std::string sec = ptrs[s];
    if (!absl::StartsWith(sec, "adapter")) {
      err = absl::InvalidArgumentError(
          absl::StrCat(path, ": section [", sec, "]: unknown (one [adapter...] section per adapter)"));
      break;
    }
    AdapterConfig a;
    a.name = sec;
    const int n = rte_cfgfile_section_num_entries(cfg, sec.c_str());
    std::vector<rte_cfgfile_entry> entries(static_cast<size_t>(std::max(n, 0)));
    rte_cfgfile_section_entries(cfg, sec.c_str(), entries.data(), n);
    for (size_t ei = 0; ei < entries.size(); ei++) {
      const rte_cfgfile_entry& e = entries[ei];
      const std::string k = e.name, v = e.value;
      const int no = ei < lines[s].size() ? lines[s][ei] : 0;
      auto bad = [&](const std::string& why) {
        err = absl::InvalidArgumentError(absl::StrCat(path, ":", no, ": [", sec, "] ", k, " = ", v, ": ", why));
      };
      auto number = [&](uint32_t lo, uint32_t hi, auto* field, const char* what) {
        uint32_t x;
        if (!ParseUint(v, lo, hi, &x)) {
          bad(absl::StrCat("expected ", what, " (", lo, "..", hi, ")"));
          return;
        }
        *field = static_cast<std::remove_pointer_t<decltype(field)>>(x);
      };
      if (k == "profile") {
        std::string p = v;
        if (!p.empty() && p[0] != '/') {
          const std::string rel = Dir(path) + "/" + p;
          const std::string shipped = host::ShippedProfile(p);
          p = Exists(rel) || shipped.empty() ? rel : shipped;
        }
        if (v.empty() || !Exists(p))
          bad(host::DriversCfgDir().empty()
                  ? "no such profile (a path, relative to the configuration file; no drivers-cfg directory "
                    "was found for names: set SOFT_RNIC_DRIVERS_CFG)"
                  : "no such profile (a path, relative to the configuration file, or a drivers-cfg/ name)");
        a.profile = p;
      } else if (k == "iface") {
        if (v.empty()) bad("an interface name");
        a.iface = v;
      } else if (k == "ip" || k == "ip6") {
        const bool v6 = k == "ip6";
        auto pfx = port::ParseIpPrefix(v);
        if (v.find('/') == std::string::npos || !pfx.ok() || pfx->addr.IsV4() == v6) {
          bad(v6 ? "an IPv6 address with its prefix length, e.g. fd00::10/64"
                 : "an IPv4 address with its prefix length, e.g. 198.18.0.10/24");
        } else {
          const std::string addr = pfx->addr.ToString();
          auto [it, fresh] = owner.emplace(addr, sec);
          if (!fresh) bad(absl::StrCat("already the address of [", it->second, "]"));
          a.ips.push_back(v);
        }
      } else if (k == "mtu") {
        uint32_t m;
        if (!ParseUint(v, 576, 9600, &m)) bad("expected an IP MTU (576..9600)");
        a.overrides.push_back("port.mtu=" + v);
      } else if (k == "capture") {
        if (v.empty()) bad("a pcap file to write");
        a.capture = v;
      } else if (k == "progress") {
        if (v == "inline") a.progress_thread = false;
        else if (v == "thread") a.progress_thread = true;
        else bad("progress is inline or thread");
      } else if (k == "cm_timeout") {
        number(8, 31, &a.cm_timeout, "an exponent: 4.096 us * 2^n");
      } else if (k == "cm_retries") {
        number(0, 15, &a.cm_retries, "a retry count");
      } else if (k == "cm_mra_timeout") {
        number(0, 31, &a.cm_mra_timeout, "an exponent: 4.096 us * 2^n");
      } else if (k == "rnr_retry") {
        number(0, 7, &a.rnr_retry, "a retry count, 7 = forever");
      } else if (k == "rnr_timer") {
        number(0, 31, &a.rnr_timer, "an IB RNR timer code");
      } else if (k == "cm_drop_rx_dreqs" || k == "cm_drop_tx_dreqs") {
        number(0, 1000000, k == "cm_drop_rx_dreqs" ? &a.cm_drop_rx_dreqs : &a.cm_drop_tx_dreqs, "a count of DREQs");
      } else if (k == "ephemeral_ports") {
        std::vector<std::string> r = absl::StrSplit(v, '-');
        uint32_t lo, hi;
        if (r.size() != 2 || !ParseUint(r[0], 1, 65535, &lo) || !ParseUint(r[1], 1, 65535, &hi) || lo > hi) {
          bad("expected first-last, two ports in 1..65535, e.g. 49152-65535");
        } else {
          a.ephemeral_first = static_cast<uint16_t>(lo);
          a.ephemeral_last = static_cast<uint16_t>(hi);
        }
      } else if (k == "burst") {
        number(1, 64, &a.burst, "frames per engine pass");
      } else if (k == "selective_repair") {
        if (v == "on") a.selective_repair = 1;
        else if (v == "off") a.selective_repair = 0;
        else bad("selective_repair is on or off");
      } else if (k == "send_at_post") {
        if (v == "on") a.send_at_post = true;
        else if (v == "off") a.send_at_post = false;
        else bad("send_at_post is on or off");
      } else if (k == "progress_yield") {
        if (v == "auto") a.progress_yield = -1;
        else if (v == "on") a.progress_yield = 1;
        else if (v == "off") a.progress_yield = 0;
        else bad("progress_yield is auto, on or off");
      } else if (k.find('.') != std::string::npos) {
        a.overrides.push_back(k + "=" + v);
      } else {
        bad("unknown key (profile, iface, ip, ip6, mtu, capture, progress, cm_timeout, cm_retries, "
            "cm_mra_timeout, ephemeral_ports, rnr_retry, rnr_timer, cm_drop_rx_dreqs, cm_drop_tx_dreqs, "
            "burst, selective_repair, send_at_post, progress_yield, or a profile key section.key)");
      }
      if (!err.ok()) break;
    }
    if (err.ok() && a.profile.empty())
      err = absl::InvalidArgumentError(
          absl::StrCat(path, ": [", sec, "] profile: missing (profile = a drivers-cfg profile, e.g. net_tap.ini)"));
    // An adapter beside the kernel (net_af_xdp, identity = kernel) takes its
    // interface's addresses; `ip` then only picks the default of its family.
    auto kernel_identity = [&a] {
      auto prof = port::LoadProfile(a.profile, a.overrides);
      return prof.ok() && port::EffectiveIdentity(*prof) == port::Identity::kKernel;
    };
    if (err.ok() && a.ips.empty() && !kernel_identity())
      err = absl::InvalidArgumentError(
          absl::StrCat(path, ": [", sec, "] ip: missing (ip = the adapter's ND address, e.g. 198.18.0.10/24)"));
    out.adapters.push_back(std::move(a));
  }
  rte_cfgfile_close(cfg);
  if (!err.ok()) return err;
  if (out.adapters.empty())
    return absl::InvalidArgumentError(absl::StrCat(path, ": no [adapter...] section (one per adapter)"));
  return out;
}

}  // namespace roce::nd2
