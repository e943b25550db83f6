// SPDX-License-Identifier: MIT
// Test harness for the RC core: two simulated hosts joined by a SimNetwork,
// each with a send CQ, a receive CQ and one QP, connected to each other.
// Buffers are real host memory registered in each device's memory table;
// guard zones around each buffer let tests assert nothing outside a
// registered range was written.
#pragma once

#include <sys/mman.h>

#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "stack/mem/memory_table.h"
#include "stack/rc/device.h"
#include "stack/wire/psn.h"
#include "tools/lib/sim_link.h"

namespace roce::rc::testing {

// A buffer with guard zones before and after, filled with a known pattern.
class Buffer {
 public:
  static constexpr size_t kGuard = 4096;
  Buffer(size_t size, uint8_t seed = 0) : size_(size), mem_(size + 2 * kGuard) {
    for (size_t i = 0; i < mem_.size(); i++) mem_[i] = static_cast<uint8_t>(i * 131 + seed);
    guard_ = mem_;
  }
  uint8_t* data() { return mem_.data() + kGuard; }
  uint64_t addr() { return reinterpret_cast<uint64_t>(data()); }
  size_t size() const { return size_; }
  void Fill(uint8_t seed) {
    for (size_t i = 0; i < size_; i++) data()[i] = static_cast<uint8_t>(i * 7 + seed);
  }
  // True if both guard zones still hold their pattern.
  bool GuardsIntact() const {
    return std::memcmp(mem_.data(), guard_.data(), kGuard) == 0 &&
           std::memcmp(mem_.data() + kGuard + size_, guard_.data() + kGuard + size_, kGuard) == 0;
  }

 private:
  size_t size_;
  std::vector<uint8_t> mem_, guard_;
};

struct Endpoint {
  sim::SimNode* node = nullptr;
  std::unique_ptr<CompletionQueue> scq, rcq;
  QueuePair* qp = nullptr;
  mem::MemoryTable& mem() { return node->dev().memory(); }
  mem::RegionInfo Register(Buffer& b, uint32_t access) {
    mem::RegionInfo r;
    EXPECT_EQ(mem().RegisterRegion(b.addr(), b.size(), access, &r), mem::Result::kOk);
    return r;
  }
  std::vector<Completion> PollSend() { return Poll(*scq); }
  std::vector<Completion> PollRecv() { return Poll(*rcq); }
  static std::vector<Completion> Poll(CompletionQueue& cq) {
    std::vector<Completion> v(cq.size());
    v.resize(cq.Poll(v.data(), static_cast<uint32_t>(v.size())));
    return v;
  }
};

struct PairOptions {
  uint64_t seed = 1;
  sim::Impairment imp{};
  QpCaps caps{};
  QpAttr attr{};  // path/dest_qpn/psns filled in by the harness
  uint32_t a_psn = 0x100, b_psn = 0x200;
  // Responders keep requests past a gap and requesters repair selectively
  // (the library's defaults between two of our stacks, QpAttr::peer_repairs,
  // which the harness sets); GoBackN() or adjust_tuning turn them off.
  QpTuning tuning{};
  // Per-side adjustment of the attributes just before RTR (e.g. a different
  // min RNR timer, inbound read limit or path TOS on one side).
  std::function<void(bool a_side, QpAttr& attr)> adjust;
  // Per-side protocol tuning (e.g. one side a go-back-N peer like rxe).
  std::function<void(bool a_side, QpTuning& tuning)> adjust_tuning;
  // RcDevice::Config::fatal_hook and event_hook of both devices.
  std::function<void(const QueuePair& qp, const char* why)> fatal_hook;
  std::function<void(uint32_t qpn, const char* event, uint64_t a, uint64_t b)> event_hook;
};

// The IBTA's minimum, as rxe behaves: the responder drops requests past a
// gap, the requester goes back N at once after a sequence NAK or timeout.
inline void GoBackN(QpTuning& t) {
  t.ooo_window = 0;
  t.selective_repair = false;
}

class RcPair {
 public:
  explicit RcPair(const PairOptions& o = {}) : opts_(o), net_(o.seed, o.imp) {
    for (bool a_side : {true, false}) {
      RcDevice::Config cfg;
      cfg.mem_seed = o.seed;
      cfg.tuning = o.tuning;
      if (o.adjust_tuning) o.adjust_tuning(a_side, cfg.tuning);
      cfg.fatal_hook = o.fatal_hook;
      cfg.event_hook = o.event_hook;
      (a_side ? a : b).node = net_.AddNode(a_side ? "a" : "b", cfg);
    }
    for (Endpoint* e : {&a, &b}) {
      e->scq = std::make_unique<CompletionQueue>(4096);
      e->rcq = std::make_unique<CompletionQueue>(4096);
      e->qp = e->node->dev().CreateQp(o.caps, e->scq.get(), e->rcq.get(), nullptr,
                                      e == &a ? 0xA : 0xB);
    }
    Connect();
  }

  // (Re)connects both QPs: Reset → Init → RTR → RTS with the options' attributes.
  void Connect() {
    for (Endpoint* e : {&a, &b}) {
      Endpoint& peer = e == &a ? b : a;
      e->qp->ToReset();
      ASSERT_TRUE(e->qp->ToInit());
      QpAttr at = opts_.attr;
      at.peer_repairs = true;  // both ends are this stack (as the CM would find)
      at.dest_qpn = peer.qp->qpn();
      at.sq_psn = e == &a ? opts_.a_psn : opts_.b_psn;
      at.rq_psn = e == &a ? opts_.b_psn : opts_.a_psn;
      at.path = e->node->PathTo(*peer.node);
      if (opts_.adjust) opts_.adjust(e == &a, at);
      ASSERT_TRUE(e->qp->ToRtr(at));
    }
    for (Endpoint* e : {&a, &b}) ASSERT_TRUE(e->qp->ToRts(net_.now()));
  }

  sim::SimNetwork& net() { return net_; }
  // Runs until `n` send completions are available at `e` (or virtual time `ns` passes).
  bool RunForSend(Endpoint& e, uint32_t n, uint64_t ns = 10'000'000'000ull) {
    return net_.RunUntil([&] { return e.scq->size() >= n; }, net_.now() + ns);
  }
  bool RunForRecv(Endpoint& e, uint32_t n, uint64_t ns = 10'000'000'000ull) {
    return net_.RunUntil([&] { return e.rcq->size() >= n; }, net_.now() + ns);
  }
  void RunIdle(uint64_t ns = 60'000'000'000ull) { net_.RunIdle(net_.now() + ns); }

  Endpoint a, b;

 private:
  PairOptions opts_;
  sim::SimNetwork net_;
};

inline SendWr MakeSend(uint64_t ctx, const Sge* sge, uint32_t n, WrOp op = WrOp::kSend) {
  SendWr w;
  w.context = ctx;
  w.op = op;
  w.sge = sge;
  w.num_sge = n;
  return w;
}

inline SendWr MakeRdma(uint64_t ctx, WrOp op, const Sge* sge, uint32_t n, uint64_t raddr,
                       uint32_t rkey) {
  SendWr w = MakeSend(ctx, sge, n, op);
  w.remote_addr = raddr;
  w.rkey = rkey;
  return w;
}

inline RecvWr MakeRecv(uint64_t ctx, const Sge* sge, uint32_t n) {
  RecvWr r;
  r.context = ctx;
  r.sge = sge;
  r.num_sge = n;
  return r;
}

}  // namespace roce::rc::testing
