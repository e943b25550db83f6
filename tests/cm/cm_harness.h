// SPDX-License-Identifier: MIT
// Two RC devices on the simulated link, each with a connection manager on its
// QP 1: the CM exchange runs over real RoCEv2 UD frames (parsed and built by
// stack/wire, ICRC checked), with loss and filtering from the link.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "stack/cm/cm.h"
#include "stack/wire/cm_msg.h"
#include "stack/wire/mad.h"
#include "tools/lib/sim_link.h"

namespace roce::cm::testing {

// A CM MAD as it crossed the link.
struct MadFrame {
  int from = -1;
  uint64_t t = 0;
  bool dropped = false;
  wire::MadDatagram dgram;
  wire::CmMad mad;
  uint16_t attr() const { return mad.hdr.attr_id; }
};

struct CmNode {
  sim::SimNode* node = nullptr;
  std::unique_ptr<ConnectionManager> cm;
  std::unique_ptr<rc::CompletionQueue> scq, rcq;
  std::vector<std::pair<ConnId, Event>> events;
  std::vector<ListenerId> requests;
  rc::RcDevice& dev() { return node->dev(); }
  wire::IpAddr ip() const { return node->ip(); }
  bool Has(ConnId id, Event e) const {
    for (const auto& [i, ev] : events)
      if (i == id && ev == e) return true;
    return false;
  }
  rc::QueuePair* NewQp(uint64_t ctx = 0) {
    rc::QpCaps caps;
    return dev().CreateQp(caps, scq.get(), rcq.get(), nullptr, ctx);
  }
};

struct CmPairOptions {
  uint64_t seed = 7;
  sim::Impairment imp{};
  bool ipv6 = false;
  ConnectionManager::Config cfg{};  // mac/addrs/seed filled in per node
  // Per-node change of the configuration (e.g. another CA GUID on one side).
  std::function<void(bool a_side, ConnectionManager::Config& c)> adjust;
};

class CmPair {
  // First: the devices must outlive the connection managers on them.
  sim::SimNetwork net_;

 public:
  explicit CmPair(const CmPairOptions& o = {}) : net_(o.seed, o.imp, o.ipv6) {
    rc::RcDevice::Config dc;
    dc.mem_seed = o.seed;
    a.node = net_.AddNode("a", dc);
    b.node = net_.AddNode("b", dc);
    int i = 0;
    for (CmNode* n : {&a, &b}) {
      ConnectionManager::Config c = o.cfg;
      c.mac = n->node->mac();
      c.addrs = {n->node->ip()};
      c.seed = o.seed * 10 + static_cast<uint64_t>(++i);
      if (o.adjust) o.adjust(n == &a, c);
      n->cm = std::make_unique<ConnectionManager>(&n->dev(), c);
      n->scq = std::make_unique<rc::CompletionQueue>(1024);
      n->rcq = std::make_unique<rc::CompletionQueue>(1024);
      n->cm->on_event = [n](ConnId id, Event e) { n->events.push_back({id, e}); };
      n->cm->on_request = [n](ListenerId l) { n->requests.push_back(l); };
    }
    net_.filter = [this](const sim::SimNode& from, std::vector<uint8_t>& frame) {
      wire::MadDatagram d;
      wire::ParseOptions po;
      if (wire::ParseMadDatagram(frame, &d, po) != wire::Error::kOk) return true;  // data
      MadFrame f;
      f.from = from.id();
      f.t = net_.now();
      f.dgram = d;
      if (wire::ParseCmMad(wire::ByteSpan(d.mad.data(), d.mad.size()), &f.mad) != wire::Error::kOk) {
        mads.push_back(f);
        return true;
      }
      if (rewrite && rewrite(f)) {  // re-sealed: the receiver sees a valid frame
        const auto bytes = wire::SerializeCmMad(f.mad);
        std::copy(bytes.begin(), bytes.end(), d.mad.begin());
        frame.resize(wire::MadDatagramLen(d));
        wire::BuildMadDatagram(d, frame);
        f.dgram = d;
      }
      f.dropped = drop && drop(f);
      mads.push_back(f);
      return !f.dropped;
    };
  }
  ~CmPair() { net_.filter = nullptr; }

  // Changes a CM MAD in flight (returns true if it did).
  std::function<bool(MadFrame&)> rewrite;
  sim::SimNetwork& net() { return net_; }
  uint64_t now() const { return net_.now(); }

  // Runs the link and both CMs until pred() or `ns` of virtual time.
  bool RunUntil(const std::function<bool()>& pred, uint64_t ns = 60'000'000'000ull) {
    const uint64_t until = net_.now() + ns;
    for (int guard = 0; guard < 50'000'000; guard++) {
      a.cm->Poll(net_.now());
      b.cm->Poll(net_.now());
      if (pred()) return true;
      if (!net_.Step(until)) {
        uint64_t next = 0;
        for (CmNode* n : {&a, &b}) {
          const uint64_t d = n->cm->NextDeadline();
          if (d > net_.now() && (!next || d < next)) next = d;
        }
        if (!next || next > until) {
          a.cm->Poll(net_.now());
          b.cm->Poll(net_.now());
          return pred();
        }
        net_.AdvanceTo(next);
      }
    }
    return pred();
  }
  void RunFor(uint64_t ns) {
    RunUntil([] { return false; }, ns);
  }

  std::vector<MadFrame> Mads(int from, uint16_t attr) const {
    std::vector<MadFrame> v;
    for (const MadFrame& f : mads)
      if (f.from == from && f.attr() == attr) v.push_back(f);
    return v;
  }

  CmNode a, b;
  std::vector<MadFrame> mads;
  std::function<bool(const MadFrame&)> drop;  // true: the link drops this MAD
};

}  // namespace roce::cm::testing
