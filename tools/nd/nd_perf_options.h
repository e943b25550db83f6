// SPDX-License-Identifier: MIT
// nd_perf_options.h: what an nd-perf run is: perftest's six tests, the constants of perftest
// that nd-perf keeps (port, sizes, the version it speaks, the page and cache line it
// exchanges) and the options one side runs with (parsed from the command line by nd_perf.cc;
// read by the reports and by a side). Part of nd-perf's one translation unit (nd_perf.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nd_port_options.h"

namespace ndperf {

// ---- The tests -----------------------------------------------------------------------------------
enum class Verb { kSend, kWrite, kRead };
enum class Kind { kBw, kLat };

struct TestInfo {
  const char* name;   // "write_bw"
  const char* title;  // perftest's banner
  Verb verb;
  Kind kind;
};

constexpr TestInfo kTests[] = {
    {"send_bw", "Send BW Test", Verb::kSend, Kind::kBw},
    {"write_bw", "RDMA_Write BW Test", Verb::kWrite, Kind::kBw},
    {"read_bw", "RDMA_Read BW Test", Verb::kRead, Kind::kBw},
    {"send_lat", "Send Latency Test", Verb::kSend, Kind::kLat},
    {"write_lat", "RDMA_Write Latency Test", Verb::kWrite, Kind::kLat},
    {"read_lat", "RDMA_Read Latency Test", Verb::kRead, Kind::kLat},
};

// perftest's constants.
constexpr uint16_t kDefaultPort = 18515;
constexpr uint64_t kMaxSize = 1u << 23;  // -a: 2 .. 8 MiB
constexpr uint32_t kCycleBuffer = 4096;  // the page size perftest exchanges
constexpr uint32_t kCacheLine = 64;
constexpr const char kVersion[] = "6.06";  // the perftest version we speak (Debian 12)

struct Options {
  const TestInfo* test = nullptr;
  bool server = true;
  std::string server_name;  // the client's positional argument
  std::string source_ip;    // --source_ip: the server's bind address / the client's local one
  uint16_t port = kDefaultPort;
  uint64_t size = 0;  // 0: the test's default
  uint64_t iters = 0;
  bool all = false;
  uint32_t duration = 0;  // -D seconds (bw tests)
  uint32_t mtu = 0;       // -m
  uint32_t tx_depth = 0, rx_depth = 0, cq_mod = 0, out_reads = 0, inline_size = 0;
  bool events = false;  // -e: wait for completions (Notify) instead of polling
  bool no_peak = false;
  bool gbits = false;
  std::string dev;  // -d: accepted (the adapter is the one of the address)
  uint32_t timeout_s = 0;
  // The adapters.
  bool port_options = false;  // --ip given: write an ND2 configuration
  bool port_only_sets = true;  // of the port options, only --set (which --pair takes too)
  ndtool::PortOptions adapter;
  bool pair = false;  // server and client in this process, two adapters on a net_ring pair
  std::string pair_profile = "net_ring.ini";
  bool quiet = false;  // the --pair server prints nothing

  bool bw() const { return test->kind == Kind::kBw; }
  bool lat() const { return test->kind == Kind::kLat; }
  Verb verb() const { return test->verb; }
  std::vector<uint64_t> Sizes() const {
    std::vector<uint64_t> v;
    if (all) {
      for (int i = 1; i < 24; i++) v.push_back(uint64_t{1} << i);
    } else {
      v.push_back(size);
    }
    return v;
  }
  uint64_t MaxSize() const { return all ? kMaxSize : size; }
};

}  // namespace ndperf
