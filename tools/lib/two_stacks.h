// SPDX-License-Identifier: MIT
// Two complete stacks (port + engine + one connected RC QP each) in one
// process over an in-process net_ring pair: what the demo, the engine tests
// and the engine benchmark run on. Addresses 10.0.0.1 / 10.0.0.2 (fd00::1 /
// fd00::2), MACs 02:00:00:00:00:01 / :02, learned by real ARP/NDP over the
// ring. Each side is brought up and its QP connected the way the tools do it
// (stack/host/host.h). The EAL must be initialized.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <absl/status/status.h>

#include "stack/engine/engine.h"
#include "stack/host/host.h"

namespace roce::tools {

struct TwoStacksOptions {
  std::string ring = "two_stacks";
  uint32_t path_mtu = 4096;
  uint16_t port_mtu = 4200;
  uint16_t mbuf_data_room = 2048;  // < a 4 KB frame: data frames are mbuf chains
  uint32_t mbufs = 16383;
  bool ipv6 = false;               // connect the QPs over IPv6
  std::string capture_a;           // pcap of everything side a sends and receives
  port::FaultConfig faults;        // applied to side a (both directions)
  port::FaultConfig faults_b;      // applied to side b (both directions)
  uint64_t mem_seed = 0;           // != 0: side a's memory keys from mem_seed, b's from mem_seed + 1
  uint32_t cq_depth = 4096;
  rc::QpCaps caps;
  rc::QpTuning tuning;
  // Both engines' connection managers (mac/addrs come from the ports), and
  // their QP slots (0: the RC device's default).
  cm::ConnectionManager::Config cm;
  uint32_t max_qps = 0;
  // EngineOptions::zero_copy_min of both engines (0: payload always copied).
  uint32_t zero_copy_min = engine::EngineOptions{}.zero_copy_min;
  // EngineOptions::tx_on_post of both engines.
  bool tx_on_post = engine::EngineOptions{}.tx_on_post;
  // EngineOptions::idle_yield of both engines (what Start's thread does when idle).
  bool idle_yield = engine::EngineOptions{}.idle_yield;
  // EngineOptions::adaptive_yield and idle_sleep_max_ns of both engines.
  bool adaptive_yield = engine::EngineOptions{}.adaptive_yield;
  uint64_t idle_sleep_max_ns = engine::EngineOptions{}.idle_sleep_max_ns;
  // PortProfile::rx_copy of both ports: every received frame copied into
  // mbuf_data_room-byte segments, as a NIC's scatter DMA lays it out.
  bool rx_copy = false;
};

class TwoStacks {
 public:
  struct Side : host::StackHost {  // port, eng
    std::unique_ptr<rc::CompletionQueue> scq, rcq;
    rc::QueuePair* qp = nullptr;
  };
  static absl::StatusOr<std::unique_ptr<TwoStacks>> Open(const TwoStacksOptions& o);
  ~TwoStacks();

  Side& a() { return s_[0]; }
  Side& b() { return s_[1]; }
  // One poll pass of both engines (inline mode); an engine running its own
  // polling thread (Start) is left to it.
  size_t PollBoth();
  // Polls both until `cq` holds `n` completions, then returns them (or fewer after `timeout_ns`).
  std::vector<rc::Completion> Wait(rc::CompletionQueue& cq, size_t n, uint64_t timeout_ns = 10'000'000'000ull);
  // Registers `len` bytes at `p` on a side (engine lock taken); the outcome in *result if given.
  mem::RegionInfo Register(Side& s, void* p, size_t len, uint32_t access, mem::Result* result = nullptr);
  void Deregister(Side& s, const mem::RegionInfo& r);
  rc::PostResult Post(Side& s, const rc::SendWr& w);
  rc::PostResult PostRecv(Side& s, const rc::RecvWr& w);

 private:
  TwoStacks() = default;
  absl::Status Connect(const TwoStacksOptions& o);
  Side s_[2];
};

}  // namespace roce::tools
