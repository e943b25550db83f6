// Which adapters an ND2 process has: an INI file (read with rte_cfgfile)
// named by the environment variable ND2_CONFIG, else kDefaultConfigPath.
//
//   ; one section per adapter; its name starts with "adapter"
//   [adapter0]
//   profile  = net_tap.ini           ; a drivers-cfg profile: a path, relative to
//                                    ; this file's folder, or a name in drivers-cfg/
//   iface    = dtap0                 ; the driver's interface (tap name, veth, ...)
//   ip       = 198.18.0.10/24        ; the adapter's address (ND address); repeat as
//   ip6      = fd00::10/64           ;   ip6 for an IPv6 one
//   mtu      = 1500                  ; port.mtu
//   capture  = /tmp/adapter0.pcap    ; every frame sent and received
//   progress = inline                ; inline (default): the application's threads drive
//                                    ; the engine in GetResults and in every wait;
//                                    ; thread: a progress thread of its own
//   fault.rx_drop = 0.01             ; any other key "section.key" overrides that
//                                    ; profile key (as rc-pingpong's --set)
//
// Errors name the file, the section and the key.
#pragma once

#include <string>
#include <vector>

#include <absl/status/statusor.h>

namespace roce::nd2 {

inline constexpr char kDefaultConfigPath[] = "/etc/soft-rnic/nd2.ini";

struct AdapterConfig {
  std::string name;       // the section
  std::string profile;    // resolved path
  std::string iface;
  std::vector<std::string> ips;
  std::string capture;
  std::vector<std::string> overrides;  // "section.key=value"
  bool progress_thread = false;
};

struct Nd2Config {
  std::string path;
  std::vector<AdapterConfig> adapters;
};

// Reads the file ND2_CONFIG names (or the default).
absl::StatusOr<Nd2Config> LoadNd2Config();
absl::StatusOr<Nd2Config> LoadNd2Config(const std::string& path);

}  // namespace roce::nd2
