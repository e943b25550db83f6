#include "nd2api/src/config.h"

#include <rte_cfgfile.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>

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

}  // namespace

absl::StatusOr<Nd2Config> LoadNd2Config() {
  const char* env = std::getenv("ND2_CONFIG");
  return LoadNd2Config(env && *env ? env : kDefaultConfigPath);
}

absl::StatusOr<Nd2Config> LoadNd2Config(const std::string& path) {
  if (!Exists(path))
    return absl::NotFoundError(absl::StrCat(
        "ND2 configuration ", path, " not found (set ND2_CONFIG to an INI file with an [adapter] section)"));
  rte_cfgfile_parameters params{};
  params.comment_character = ';';
  rte_cfgfile* cfg = rte_cfgfile_load_with_params(path.c_str(), 0, &params);
  if (!cfg) return absl::InvalidArgumentError(absl::StrCat(path, ": not a valid INI file"));
  Nd2Config out;
  out.path = path;
  absl::Status err;
  const int nsec = rte_cfgfile_num_sections(cfg, nullptr, 0);
  std::vector<std::vector<char>> names(static_cast<size_t>(std::max(nsec, 0)), std::vector<char>(CFG_NAME_LEN));
  std::vector<char*> ptrs;
  for (auto& n : names) ptrs.push_back(n.data());
  rte_cfgfile_sections(cfg, ptrs.data(), nsec);
  for (int s = 0; s < nsec && err.ok(); s++) {
    const std::string sec = ptrs[s];
    if (!absl::StartsWith(sec, "adapter")) {
      err = absl::InvalidArgumentError(absl::StrCat(path, ": section [", sec, "]: only [adapter...] sections are known"));
      break;
    }
    AdapterConfig a;
    a.name = sec;
    const int n = rte_cfgfile_section_num_entries(cfg, sec.c_str());
    std::vector<rte_cfgfile_entry> entries(static_cast<size_t>(std::max(n, 0)));
    rte_cfgfile_section_entries(cfg, sec.c_str(), entries.data(), n);
    for (const rte_cfgfile_entry& e : entries) {
      const std::string k = e.name, v = e.value;
      auto bad = [&](const std::string& why) {
        err = absl::InvalidArgumentError(absl::StrCat(path, ": [", sec, "] ", k, " = ", v, ": ", why));
      };
      if (k == "profile") {
        std::string p = v;
        if (!p.empty() && p[0] != '/') {
          const std::string rel = Dir(path) + "/" + p;
          const std::string shipped = std::string(ROCE_SOURCE_DIR) + "/drivers-cfg/" + p;
          p = Exists(rel) ? rel : shipped;
        }
        if (!Exists(p)) bad("no such profile (a path, relative to the configuration file, or a drivers-cfg/ name)");
        a.profile = p;
      } else if (k == "iface") {
        a.iface = v;
      } else if (k == "ip" || k == "ip6") {
        if (v.find('/') == std::string::npos) bad("an address with its prefix length, e.g. 198.18.0.10/24");
        a.ips.push_back(v);
      } else if (k == "mtu") {
        a.overrides.push_back("port.mtu=" + v);
      } else if (k == "capture") {
        a.capture = v;
      } else if (k == "progress") {
        if (v == "inline") a.progress_thread = false;
        else if (v == "thread") a.progress_thread = true;
        else bad("progress is inline or thread");
      } else if (k.find('.') != std::string::npos) {
        a.overrides.push_back(k + "=" + v);
      } else {
        bad("unknown key (profile, iface, ip, ip6, mtu, capture, progress, or a profile key section.key)");
      }
      if (!err.ok()) break;
    }
    if (err.ok() && a.profile.empty())
      err = absl::InvalidArgumentError(absl::StrCat(path, ": [", sec, "] has no profile ="));
    if (err.ok() && a.ips.empty())
      err = absl::InvalidArgumentError(absl::StrCat(path, ": [", sec, "] has no ip = (the adapter's ND address)"));
    out.adapters.push_back(std::move(a));
  }
  rte_cfgfile_close(cfg);
  if (!err.ok()) return err;
  if (out.adapters.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no [adapter] section"));
  return out;
}

}  // namespace roce::nd2
