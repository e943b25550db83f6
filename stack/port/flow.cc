// SPDX-License-Identifier: MIT
#include "stack/port/flow.h"

#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>

#include "stack/port/dpdk.h"

namespace roce::port {

struct FlowSpec {
  rte_flow_attr attr{};
  rte_flow_item_udp udp_spec{};
  rte_flow_item_udp udp_mask{};
  rte_flow_item items[4]{};
  rte_flow_action_rss rss{};
  rte_flow_action_queue queue{};
  uint16_t queues[RTE_MAX_QUEUES_PER_PORT > 1024 ? 1024 : RTE_MAX_QUEUES_PER_PORT]{};
  rte_flow_action actions[2]{};
};

namespace {
constexpr uint64_t kRssTypesV4 = RTE_ETH_RSS_NONFRAG_IPV4_UDP;
constexpr uint64_t kRssTypesV6 = RTE_ETH_RSS_NONFRAG_IPV6_UDP;
}  // namespace

std::vector<SteeringRule> SteeringRules(const PortProfile& p, bool rss) {
  std::vector<SteeringRule> out;
  if (p.steer_udp_port == 0) return out;
  std::vector<uint16_t> queues = p.flow_queues;
  if (queues.empty())
    for (uint16_t q = 0; q < p.rx_queues; q++) queues.push_back(q);
  for (bool v6 : {false, true}) {
    SteeringRule r;
    r.ipv6 = v6;
    r.udp_dst = p.steer_udp_port;
    r.queues = queues;
    r.rss = rss && queues.size() > 1;
    if (!r.rss) r.queues.resize(1);
    out.push_back(r);
  }
  return out;
}

std::string DescribeRule(const SteeringRule& r, uint16_t port_id) {
  std::string s = absl::StrCat("flow create ", port_id, " ingress pattern eth / ", r.ipv6 ? "ipv6" : "ipv4",
                               " / udp dst is ", r.udp_dst, " / end actions ");
  if (r.rss)
    absl::StrAppend(&s, "rss queues ", absl::StrJoin(r.queues, " "), " end types ",
                    r.ipv6 ? "ipv6-udp" : "ipv4-udp", " end / end");
  else
    absl::StrAppend(&s, "queue index ", r.queues.empty() ? 0 : r.queues[0], " / end");
  return s;
}

std::unique_ptr<FlowSpec, void (*)(FlowSpec*)> BuildFlowSpec(const SteeringRule& r) {
  std::unique_ptr<FlowSpec, void (*)(FlowSpec*)> s(new FlowSpec(), [](FlowSpec* p) { delete p; });
  s->attr.ingress = 1;
  s->udp_spec.hdr.dst_port = rte_cpu_to_be_16(r.udp_dst);
  s->udp_mask.hdr.dst_port = 0xffff;
  s->items[0].type = RTE_FLOW_ITEM_TYPE_ETH;
  s->items[1].type = r.ipv6 ? RTE_FLOW_ITEM_TYPE_IPV6 : RTE_FLOW_ITEM_TYPE_IPV4;
  s->items[2].type = RTE_FLOW_ITEM_TYPE_UDP;
  s->items[2].spec = &s->udp_spec;
  s->items[2].mask = &s->udp_mask;
  s->items[3].type = RTE_FLOW_ITEM_TYPE_END;
  const size_t nq = std::min(r.queues.size(), std::size(s->queues));
  for (size_t i = 0; i < nq; i++) s->queues[i] = r.queues[i];
  if (r.rss) {
    s->rss.func = RTE_ETH_HASH_FUNCTION_DEFAULT;
    s->rss.level = 0;
    s->rss.types = r.ipv6 ? kRssTypesV6 : kRssTypesV4;
    s->rss.queue_num = static_cast<uint32_t>(nq);
    s->rss.queue = s->queues;
    s->actions[0].type = RTE_FLOW_ACTION_TYPE_RSS;
    s->actions[0].conf = &s->rss;
  } else {
    s->queue.index = nq ? s->queues[0] : 0;
    s->actions[0].type = RTE_FLOW_ACTION_TYPE_QUEUE;
    s->actions[0].conf = &s->queue;
  }
  s->actions[1].type = RTE_FLOW_ACTION_TYPE_END;
  return s;
}

std::vector<int> FlowSpecItemTypes(const FlowSpec& s) {
  std::vector<int> v;
  for (const rte_flow_item& i : s.items) {
    v.push_back(i.type);
    if (i.type == RTE_FLOW_ITEM_TYPE_END) break;
  }
  return v;
}

std::vector<int> FlowSpecActionTypes(const FlowSpec& s) {
  std::vector<int> v;
  for (const rte_flow_action& a : s.actions) {
    v.push_back(a.type);
    if (a.type == RTE_FLOW_ACTION_TYPE_END) break;
  }
  return v;
}

uint16_t FlowSpecUdpDst(const FlowSpec& s) { return rte_be_to_cpu_16(s.udp_spec.hdr.dst_port); }

absl::StatusOr<rte_flow*> CreateSteeringRule(uint16_t port_id, const SteeringRule& r) {
  auto spec = BuildFlowSpec(r);
  rte_flow_error err{};
  auto fail = [&](const char* what, int rc) {
    return absl::FailedPreconditionError(absl::StrCat(what, " (", DescribeRule(r, port_id), "): ",
                                                      err.message ? err.message : rte_strerror(-rc), " (",
                                                      rc, ")"));
  };
  int rc = rte_flow_validate(port_id, &spec->attr, spec->items, spec->actions, &err);
  if (rc != 0) return fail("rte_flow_validate", rc);
  rte_flow* f = rte_flow_create(port_id, &spec->attr, spec->items, spec->actions, &err);
  if (!f) return fail("rte_flow_create", -rte_errno);
  return f;
}

void DestroyFlow(uint16_t port_id, rte_flow* f) {
  rte_flow_error err{};
  rte_flow_destroy(port_id, f, &err);
}

}  // namespace roce::port
