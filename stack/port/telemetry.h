// SPDX-License-Identifier: MIT
// Counters exported through DPDK telemetry, in a pattern any layer can reuse:
// a *group* (this layer uses "port", the engine will add "qp") owns two
// commands on the telemetry socket,
//   /roce/<group>/list            -> [ids]
//   /roce/<group>/stats,<id>      -> {"name": value, ...}
// and each object registers a callback that fills the dictionary for its id.
// The returned handle unregisters on destruction, so a reply never touches a
// destroyed object (the callback runs under the registry lock).
//
// Read them with DPDK's client: `dpdk-telemetry.py` (package dpdk), then
// --> /roce/port/list   --> /roce/port/stats,0
// or in-process with QueryTelemetry (tests, tools).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include <absl/status/statusor.h>

struct rte_tel_data;

namespace roce::port {

// Where a callback writes its values: a telemetry reply or a plain map.
class TelemetryDict {
 public:
  void Add(const char* name, uint64_t value);
  void AddString(const char* name, const std::string& value);

 private:
  friend struct TelemetryAccess;
  rte_tel_data* tel_ = nullptr;
  std::map<std::string, uint64_t>* u64_ = nullptr;
  std::map<std::string, std::string>* str_ = nullptr;
};

using TelemetryFn = std::function<void(TelemetryDict&)>;

class TelemetryRegistration {
 public:
  TelemetryRegistration() = default;
  TelemetryRegistration(std::string group, uint64_t id) : group_(std::move(group)), id_(id), live_(true) {}
  TelemetryRegistration(TelemetryRegistration&& o) noexcept { *this = std::move(o); }
  TelemetryRegistration& operator=(TelemetryRegistration&& o) noexcept;
  ~TelemetryRegistration() { Reset(); }
  void Reset();
  bool live() const { return live_; }

 private:
  std::string group_;
  uint64_t id_ = 0;
  bool live_ = false;
};

// Registers `fn` as /roce/<group>/stats,<id>. `group` is [a-z0-9_]+. The
// group's commands are registered with DPDK on first use (commands cannot be
// removed; they answer for whatever ids are registered). Fails if the id is
// taken or DPDK refuses the command.
absl::StatusOr<TelemetryRegistration> RegisterTelemetry(const std::string& group, uint64_t id,
                                                        TelemetryFn fn);

// The values /roce/<group>/stats,<id> would return, without the socket.
struct TelemetryValues {
  std::map<std::string, uint64_t> u64;
  std::map<std::string, std::string> str;
};
absl::StatusOr<TelemetryValues> QueryTelemetry(const std::string& group, uint64_t id);

}  // namespace roce::port
