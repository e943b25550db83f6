// SPDX-License-Identifier: MIT
#include "stack/port/telemetry.h"

#include <cerrno>
#include <cstdlib>
#include <set>

#include <absl/strings/str_cat.h>
#include <absl/strings/string_view.h>
#include <absl/synchronization/mutex.h>

#include "stack/port/dpdk.h"

namespace roce::port {

struct TelemetryAccess {
  static TelemetryDict ForTel(rte_tel_data* d) {
    TelemetryDict t;
    t.tel_ = d;
    return t;
  }
  static TelemetryDict ForMap(TelemetryValues* v) {
    TelemetryDict t;
    t.u64_ = &v->u64;
    t.str_ = &v->str;
    return t;
  }
};

namespace {

struct Registry {
  absl::Mutex mu;
  std::set<std::string> commands_registered;                   // groups with DPDK commands
  std::map<std::string, std::map<uint64_t, TelemetryFn>> sources;  // group -> id -> fn
};

Registry& Reg() {
  static Registry* r = new Registry();  // never destroyed: the telemetry thread may outlive main
  return *r;
}

// "/roce/<group>/<verb>" -> group, verb.
bool SplitCommand(absl::string_view cmd, std::string* group, std::string* verb) {
  constexpr absl::string_view kPrefix = "/roce/";
  if (cmd.substr(0, kPrefix.size()) != kPrefix) return false;
  cmd.remove_prefix(kPrefix.size());
  size_t slash = cmd.find('/');
  if (slash == absl::string_view::npos) return false;
  *group = std::string(cmd.substr(0, slash));
  *verb = std::string(cmd.substr(slash + 1));
  return true;
}

int Handler(const char* cmd, const char* params, rte_tel_data* d) {
  std::string group, verb;
  if (!SplitCommand(cmd, &group, &verb)) return -EINVAL;
  Registry& r = Reg();
  absl::MutexLock l(&r.mu);
  auto g = r.sources.find(group);
  if (verb == "list") {
    rte_tel_data_start_array(d, RTE_TEL_U64_VAL);
    if (g != r.sources.end())
      for (auto& [id, fn] : g->second) rte_tel_data_add_array_u64(d, id);
    return 0;
  }
  if (verb != "stats" || params == nullptr || *params == '\0') return -EINVAL;
  char* end = nullptr;
  errno = 0;
  unsigned long long id = std::strtoull(params, &end, 10);
  if (errno != 0 || *end != '\0') return -EINVAL;
  if (g == r.sources.end()) return -EINVAL;
  auto s = g->second.find(id);
  if (s == g->second.end()) return -EINVAL;
  rte_tel_data_start_dict(d);
  TelemetryDict dict = TelemetryAccess::ForTel(d);
  s->second(dict);
  return 0;
}

bool ValidGroup(const std::string& g) {
  if (g.empty() || g.size() > 24) return false;
  for (char c : g)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

}  // namespace

void TelemetryDict::Add(const char* name, uint64_t value) {
  if (tel_) rte_tel_data_add_dict_u64(tel_, name, value);
  if (u64_) (*u64_)[name] = value;
}

void TelemetryDict::AddString(const char* name, const std::string& value) {
  if (tel_) rte_tel_data_add_dict_string(tel_, name, value.c_str());
  if (str_) (*str_)[name] = value;
}

TelemetryRegistration& TelemetryRegistration::operator=(TelemetryRegistration&& o) noexcept {
  if (this != &o) {
    Reset();
    group_ = std::move(o.group_);
    id_ = o.id_;
    live_ = o.live_;
    o.live_ = false;
  }
  return *this;
}

void TelemetryRegistration::Reset() {
  if (!live_) return;
  live_ = false;
  Registry& r = Reg();
  absl::MutexLock l(&r.mu);
  auto g = r.sources.find(group_);
  if (g != r.sources.end()) g->second.erase(id_);
}

absl::StatusOr<TelemetryRegistration> RegisterTelemetry(const std::string& group, uint64_t id,
                                                        TelemetryFn fn) {
  if (!ValidGroup(group)) return absl::InvalidArgumentError(absl::StrCat("bad telemetry group '", group, "'"));
  Registry& r = Reg();
  absl::MutexLock l(&r.mu);
  if (!r.commands_registered.count(group)) {
    std::string list = absl::StrCat("/roce/", group, "/list");
    std::string stats = absl::StrCat("/roce/", group, "/stats");
    int rc = rte_telemetry_register_cmd(list.c_str(), Handler,
                                        "Lists the ids of this soft-RNIC group. No parameters");
    if (rc == 0)
      rc = rte_telemetry_register_cmd(stats.c_str(), Handler,
                                      "Returns the counters of one soft-RNIC object. Parameter: id");
    if (rc != 0)
      return absl::InternalError(absl::StrCat("rte_telemetry_register_cmd(", stats, "): ", rc));
    r.commands_registered.insert(group);
  }
  auto& ids = r.sources[group];
  if (!ids.emplace(id, std::move(fn)).second)
    return absl::AlreadyExistsError(absl::StrCat("/roce/", group, "/stats,", id, " is registered"));
  return TelemetryRegistration(group, id);
}

absl::StatusOr<TelemetryValues> QueryTelemetry(const std::string& group, uint64_t id) {
  Registry& r = Reg();
  absl::MutexLock l(&r.mu);
  auto g = r.sources.find(group);
  if (g == r.sources.end()) return absl::NotFoundError(absl::StrCat("no telemetry group ", group));
  auto s = g->second.find(id);
  if (s == g->second.end()) return absl::NotFoundError(absl::StrCat("no /roce/", group, "/stats,", id));
  TelemetryValues v;
  TelemetryDict dict = TelemetryAccess::ForMap(&v);
  s->second(dict);
  return v;
}

}  // namespace roce::port
