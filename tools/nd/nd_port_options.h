// SPDX-License-Identifier: MIT
// nd_port_options.h: the port options of this project's stack tools (--profile, --iface, --ip,
// --set, --capture; docs/tools.md, rc-pingpong) for an ND2 program, which gets its adapters
// from the INI file ND2_CONFIG names (nd2api/src/config.h): the options become such a file,
// written to a temporary path that ND2_CONFIG is set to before NdStartup. Public ND2 headers and
// the C++ standard library only, like the programs that include it (nd-perf, build/tools/rping).
//
//   PortOptions p;  ... p.ips.push_back("198.18.0.10/24") ...
//   std::string path, err;
//   if (!WriteNd2Config({p}, "nd-perf", &path, &err)) ...   // one [adapterN] per PortOptions
//   setenv("ND2_CONFIG", path.c_str(), 1); NdStartup(); unlink(path.c_str());
#pragma once

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace ndtool {

// One adapter's port options.
struct PortOptions {
  std::string profile = "net_tap.ini";  // a drivers-cfg name or a path
  std::string iface;                    // the driver's interface (tap, veth, ...)
  std::vector<std::string> ips;         // "a.b.c.d/len" (ip) or an IPv6 "addr/len" (ip6)
  std::vector<std::string> sets;        // "section.key=value" (profile key) or "key=value"
                                        // (ND2 adapter key, e.g. burst=1, progress=thread)
  std::string capture;                  // pcap of every frame
  std::string progress = "inline";      // the adapter's progress mode
};

// The text of an ND2 configuration with one [adapterN] section per entry; false (and *err) if a
// value cannot be written (a ';' or newline in it, a --set without '=').
inline bool Nd2ConfigText(const std::vector<PortOptions>& adapters, std::string* text, std::string* err) {
  auto bad = [](const std::string& s, const char* chars) { return s.find_first_of(chars) != std::string::npos; };
  std::string t;
  for (size_t i = 0; i < adapters.size(); i++) {
    const PortOptions& o = adapters[i];
    std::vector<std::pair<std::string, std::string>> kv;
    std::string profile = o.profile;
    char real[PATH_MAX];
    // A path relative to here (not a drivers-cfg name): the file lives elsewhere, so make it
    // absolute.
    if (access(profile.c_str(), R_OK) == 0 && realpath(profile.c_str(), real)) profile = real;
    kv.emplace_back("profile", profile);
    if (!o.iface.empty()) kv.emplace_back("iface", o.iface);
    for (const std::string& ip : o.ips) kv.emplace_back(ip.find(':') == std::string::npos ? "ip" : "ip6", ip);
    if (!o.capture.empty()) kv.emplace_back("capture", o.capture);
    bool progress_set = false;
    for (const std::string& s : o.sets) {
      const size_t eq = s.find('=');
      if (eq == std::string::npos || eq == 0) {
        *err = "--set " + s + ": not section.key=value or key=value";
        return false;
      }
      std::string k = s.substr(0, eq), v = s.substr(eq + 1);
      while (!k.empty() && k.back() == ' ') k.pop_back();
      while (!v.empty() && v.front() == ' ') v.erase(v.begin());
      progress_set = progress_set || k == "progress";
      kv.emplace_back(k, v);
    }
    if (!progress_set) kv.emplace_back("progress", o.progress);
    t += "[adapter" + std::to_string(i) + "]\n";
    for (const auto& [k, v] : kv) {
      if (k.empty() || bad(k, ";=\n[] \t") || bad(v, ";\n")) {
        *err = "'" + k + " = " + v + "' cannot be written to an ND2 configuration";
        return false;
      }
      t += k + " = " + v + "\n";
    }
  }
  *text = t;
  return true;
}

// Writes the configuration to a new file under $TMPDIR (or /tmp) named <prog>-nd2-XXXXXX.ini.
inline bool WriteNd2Config(const std::vector<PortOptions>& adapters, const char* prog, std::string* path,
                           std::string* err) {
  std::string text;
  if (!Nd2ConfigText(adapters, &text, err)) return false;
  text = std::string("; written by ") + prog + " for NdStartup (ND2_CONFIG)\n" + text;
  const char* dir = getenv("TMPDIR");
  std::string tmpl = std::string(dir && *dir ? dir : "/tmp") + "/" + prog + "-nd2-XXXXXX.ini";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back(0);
  const int fd = mkstemps(name.data(), 4);
  if (fd < 0) {
    *err = "cannot create " + tmpl + ": " + strerror(errno);
    return false;
  }
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!ok) {
    *err = std::string("cannot write ") + name.data();
    unlink(name.data());
    return false;
  }
  *path = name.data();
  return true;
}

}  // namespace ndtool
