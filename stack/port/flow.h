// SPDX-License-Identifier: MIT
// rte_flow steering for physical NICs: UDP destination port 4791 (RoCEv2) to
// the stack's RX queues, spread by RSS over IP addresses and UDP ports (the
// RoCE UDP source port carries per-QP entropy) or to a single queue. With
// isolated mode (mlx5) only the matched traffic reaches DPDK and the kernel
// keeps the rest of the NIC.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <absl/status/statusor.h>

#include "stack/port/profile.h"

struct rte_flow;

namespace roce::port {

struct SteeringRule {
  bool ipv6 = false;
  uint16_t udp_dst = 4791;
  std::vector<uint16_t> queues;  // RSS over these, or QUEUE if one
  bool rss = false;
};

// The rules a profile asks for: one per IP version, or none when
// flow.steer_udp_port is 0. `rx_queues` is what the port configured.
std::vector<SteeringRule> SteeringRules(const PortProfile& p, bool rss);

// testpmd's spelling of the rule ("flow create 0 ingress pattern eth / ipv4 /
// udp dst is 4791 / end actions rss queues 0 1 end types ipv4-udp end / end"),
// for logs and the README.
std::string DescribeRule(const SteeringRule& r, uint16_t port_id = 0);

// The rte_flow attribute, pattern and actions of a rule, laid out in one
// object (the items point into it).
struct FlowSpec;
std::unique_ptr<FlowSpec, void (*)(FlowSpec*)> BuildFlowSpec(const SteeringRule& r);
// Inspection for tests: item types END-terminated, action types END-terminated.
std::vector<int> FlowSpecItemTypes(const FlowSpec& s);
std::vector<int> FlowSpecActionTypes(const FlowSpec& s);
uint16_t FlowSpecUdpDst(const FlowSpec& s);  // host order, from the spec (mask is 0xffff)

// rte_flow_validate + rte_flow_create on a port. The error names the rule
// and the driver's message.
absl::StatusOr<rte_flow*> CreateSteeringRule(uint16_t port_id, const SteeringRule& r);
void DestroyFlow(uint16_t port_id, rte_flow* f);

}  // namespace roce::port
