// SPDX-License-Identifier: MIT
// Connections per second through the connection manager, between two full
// stacks (DPDK port + engine + RC + CM) over an in-process net_ring pair,
// polled inline by one thread — beside the 8 B Send round trip between the
// same two stacks, measured in the same run as the baseline (so a connection
// reads as "X round trips").
//
// One BM_CmConnectDisconnect iteration: a QP on each side; a connects
// (REQ), b takes the request and accepts (REP), a answers (RTU): both
// established; a disconnects (DREQ), b answers (DREP): both in time-wait;
// both ids released, both QPs destroyed. Counters: MADs per connection (both
// directions), retransmissions, the most connections a CM held at once
// (time-wait ones included: bounded by the short time-wait the benchmark
// configures), the most QP numbers in quarantine at once, and where the
// time went (QP create, Connect..established, Disconnect..time-wait, release
// + destroy), in wall-clock ns per connection. Run with the default QP caps
// and with small queues (small_qp:1).
//   build/bench/cm_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "stack/mem/memory_table.h"
#include "stack/port/eal.h"
#include "tools/lib/two_stacks.h"

namespace roce {
namespace {

using rc::WrOp;

// A connection's time-wait. The default (2 s) would hold every connection of
// the last 2 s — at 10 000/s, 20 000 per side, and as many ephemeral ports of
// the 16 384 there are (Connect would fail with ResourceExhausted above
// 8 192/s). 10 ms keeps the CM's table small and the ports free; what the
// table holds is reported (max_conns).
constexpr uint64_t kTimeWaitNs = 10'000'000;
constexpr uint16_t kListenPort = 7471;
constexpr int kPingPongRecvs = 64;

// The two stacks both benchmarks run on, opened once (the first benchmark
// that needs them) and closed before the EAL is.
struct Fixture {
  std::unique_ptr<tools::TwoStacks> t;
  wire::IpAddr ip_a, ip_b;
  wire::MacAddr mac_b;
  cm::ListenerId listener = 0;
  // Ping-pong: 8 B buffers registered once, kPingPongRecvs receives kept posted.
  uint8_t buf[2][8] = {};
  mem::RegionInfo region[2] = {};
};
std::unique_ptr<Fixture> g_fixture;

Fixture* GetFixture() {
  if (g_fixture) return g_fixture.get();
  tools::TwoStacksOptions o;
  o.ring = "cm_bench";
  o.caps.sq_depth = 256;  // the ping-pong QPs: as engine_bench
  o.caps.rq_depth = 256;
  o.tuning.max_unacked_psns = 512;
  o.tuning.ack_req_every = 64;
  o.tuning.max_tx_per_poll = 64;
  o.cm.time_wait_ns = kTimeWaitNs;
  // QP slots. A destroyed QP's number is quarantined for 2 s
  // (RcDevice::Config::qpn_quarantine_ns), and a device has max_qps slots x
  // 256 generations of numbers: the default 256 slots allow 65 536 QP
  // creations per 2 s, 32 768/s per device — which this benchmark reaches
  // (~30 000/s measured, 63 000 numbers in quarantine at once). 1024 slots
  // allow 131 072/s. CreateQp failing would end the benchmark with an error;
  // max_quarantined_qpns reports how close it came.
  o.max_qps = 1024;
  auto t = tools::TwoStacks::Open(o);
  if (!t.ok()) {
    std::fprintf(stderr, "cm_bench: %s\n", std::string(t.status().message()).c_str());
    return nullptr;
  }
  auto f = std::make_unique<Fixture>();
  f->t = std::move(*t);
  engine::Engine& ea = *f->t->a().eng;
  engine::Engine& eb = *f->t->b().eng;
  f->ip_a = *ea.LocalIp(false);
  f->ip_b = *eb.LocalIp(false);
  // b answers a's ARP (already resolved when the stacks connected their QPs).
  if (auto st = eb.Start(); !st.ok()) return nullptr;
  auto mac = ea.Resolve(f->ip_b, 2'000'000'000ull);
  eb.Stop();
  if (!mac.ok()) return nullptr;
  f->mac_b = *mac;
  {
    roce::engine::EngineLock l(&eb.mu());
    if (!eb.cm().BindPort(f->ip_b, kListenPort).ok()) return nullptr;
    auto li = eb.cm().Listen(f->ip_b, kListenPort, 64);
    if (!li.ok()) return nullptr;
    f->listener = *li;
  }
  f->region[0] = f->t->Register(f->t->a(), f->buf[0], 8, mem::kLocalWrite);
  f->region[1] = f->t->Register(f->t->b(), f->buf[1], 8, mem::kLocalWrite);
  tools::TwoStacks::Side* side[2] = {&f->t->a(), &f->t->b()};
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < kPingPongRecvs; k++) {
      rc::Sge s{reinterpret_cast<uint64_t>(f->buf[i]), 8, f->region[i].local_token};
      f->t->PostRecv(*side[i], rc::RecvWr{1, &s, 1});
    }
  g_fixture = std::move(f);
  return g_fixture.get();
}

// Polls both engines until pred_a() (called with a's engine lock held) and
// pred_b() (with b's) are both true; false after `timeout_ns`. The locks are
// taken one at a time: nesting them would cost absl's deadlock detection
// (on in Debian's absl) a lock-graph update each time.
template <typename PredA, typename PredB>
bool PollUntil(Fixture& f, PredA pred_a, PredB pred_b, uint64_t timeout_ns = 5'000'000'000ull) {
  engine::Engine& ea = *f.t->a().eng;
  engine::Engine& eb = *f.t->b().eng;
  const uint64_t deadline = ea.NowNs() + timeout_ns;
  for (;;) {
    bool done;
    {
      roce::engine::EngineLock l(&ea.mu());
      done = pred_a();
    }
    if (done) {
      roce::engine::EngineLock l(&eb.mu());
      if (pred_b()) return true;
    }
    if (ea.NowNs() > deadline) return false;
    f.t->PollBoth();
  }
}

bool TimeWaitOrClosed(const cm::ConnInfo* i) {
  return !i || i->state == cm::ConnState::kTimeWait || i->state == cm::ConnState::kClosed;
}

void BM_CmConnectDisconnect(benchmark::State& st) {
  Fixture* f = GetFixture();
  if (!f) return st.SkipWithError("setup failed");
  engine::Engine& ea = *f->t->a().eng;
  engine::Engine& eb = *f->t->b().eng;
  cm::ConnectionManager& ca = ea.cm();
  cm::ConnectionManager& cb = eb.cm();
  rc::CompletionQueue cq_a(256), cq_b(256);
  // small_qp:0: the default caps (128 send / 128 receive WRs, 4 SGEs each,
  // 256 B inline: a 32 KB inline buffer plus the WQE and SGE arrays to
  // allocate and zero per QP); small_qp:1: small queues (16 / 16 WRs, 1 SGE,
  // no inline) — what the size of QP creation costs.
  rc::QpCaps caps;
  if (st.range(0) == 1) {
    caps.sq_depth = caps.rq_depth = 16;
    caps.max_send_sge = caps.max_recv_sge = 1;
    caps.max_inline = 0;
  }

  cm::ConnectParams cp;
  cp.local_ip = f->ip_a;
  cp.peer_ip = f->ip_b;
  cp.peer_port = kListenPort;
  cp.peer_mac = f->mac_b;
  cp.path_mtu = 4096;
  cm::AcceptParams ap;

  const uint64_t mads0 = ca.counters.tx_mads + cb.counters.tx_mads;
  const uint64_t retx0 = ca.counters.retransmits + cb.counters.retransmits;
  const uint64_t est0 = ca.counters.established + cb.counters.established;
  size_t max_conns = 0, max_quarantined = 0;
  cm::ConnId max_id[2] = {0, 0};
  uint64_t t_create = 0, t_establish = 0, t_disconnect = 0, t_destroy = 0;

  for (auto _ : st) {
    const uint64_t t0 = ea.NowNs();
    rc::QueuePair* qa;
    rc::QueuePair* qb;
    {
      roce::engine::EngineLock l(&ea.mu());
      qa = ea.CreateQp(caps, &cq_a, &cq_a);
    }
    {
      roce::engine::EngineLock l(&eb.mu());
      qb = eb.CreateQp(caps, &cq_b, &cq_b);
    }
    if (!qa || !qb) return st.SkipWithError("CreateQp failed (QPN quarantine: raise max_qps)");
    const uint64_t t1 = ea.NowNs();
    cm::ConnId ida;
    {
      roce::engine::EngineLock l(&ea.mu());
      cp.qpn = qa->qpn();
      auto c = ca.Connect(cp, ea.NowNs());
      if (!c.ok()) return st.SkipWithError(std::string(c.status().message()).c_str());
      ida = *c;
    }
    cm::ConnRequest req;
    if (!PollUntil(*f, [] { return true; }, [&] { return cb.GetRequest(f->listener, &req); }))
      return st.SkipWithError("no request");
    {
      roce::engine::EngineLock l(&eb.mu());
      ap.qpn = qb->qpn();
      if (auto s = cb.Accept(req.id, ap, eb.NowNs()); !s.ok()) return st.SkipWithError(std::string(s.message()).c_str());
    }
    if (!PollUntil(
            *f, [&] { return ca.Info(ida)->state == cm::ConnState::kEstablished; },
            [&] { return cb.Info(req.id)->state == cm::ConnState::kEstablished; }))
      return st.SkipWithError("not established");
    const uint64_t t2 = ea.NowNs();
    {
      roce::engine::EngineLock l(&ea.mu());
      if (auto s = ca.Disconnect(ida, ea.NowNs()); !s.ok()) return st.SkipWithError(std::string(s.message()).c_str());
    }
    if (!PollUntil(*f, [&] { return TimeWaitOrClosed(ca.Info(ida)); }, [&] { return TimeWaitOrClosed(cb.Info(req.id)); }))
      return st.SkipWithError("not disconnected");
    const uint64_t t3 = ea.NowNs();
    max_id[0] = std::max(max_id[0], ida);
    max_id[1] = std::max(max_id[1], req.id);
    {
      roce::engine::EngineLock l(&ea.mu());
      max_conns = std::max(max_conns, ca.Connections());
      max_quarantined = std::max(max_quarantined, ea.rc().QuarantinedQpns());
      ca.Release(ida, ea.NowNs());
      ea.DestroyQp(qa);
    }
    {
      roce::engine::EngineLock l(&eb.mu());
      max_conns = std::max(max_conns, cb.Connections());
      cb.Release(req.id, eb.NowNs());
      eb.DestroyQp(qb);
    }
    const uint64_t t4 = ea.NowNs();
    t_create += t1 - t0;
    t_establish += t2 - t1;
    t_disconnect += t3 - t2;
    t_destroy += t4 - t3;
  }
  // (Not timed.) Time-wait ends: every connection of the run is forgotten.
  // Polled until then (not for a fixed time: on a shared machine the thread
  // may sleep past any fixed time between polling a and polling b).
  size_t left = 0;
  PollUntil(
      *f, [&] { return (left = ca.Connections()) == 0; },
      [&] { return (left = cb.Connections()) == 0; }, 100 * kTimeWaitNs);
  if (left) {
    // Which, and in what state (ids are handed out in order).
    for (int side = 0; side < 2; side++) {
      engine::Engine& e = side ? eb : ea;
      cm::ConnectionManager& m = e.cm();
      roce::engine::EngineLock l(&e.mu());
      for (cm::ConnId id = 1; id <= max_id[side]; id++)
        if (const cm::ConnInfo* i = m.Info(id))
          std::fprintf(stderr, "cm_bench: side %c conn %u: %s (timed_out %d, peer_disconnected %d)\n",
                       "ab"[side], id, cm::ConnStateName(i->state), i->timed_out, i->peer_disconnected);
      std::fprintf(stderr, "cm_bench: side %c: now %lu, next CM deadline %lu, %zu connections\n", "ab"[side],
                   static_cast<unsigned long>(e.NowNs()), static_cast<unsigned long>(m.NextDeadline()),
                   m.Connections());
      const cm::CmCounters& k = m.counters;
      std::fprintf(stderr,
                   "cm_bench: side %c: rx %lu tx %lu retransmits %lu deferred %lu duplicates %lu stale %lu "
                   "bad %lu timeouts %lu rx_mra %lu tx_mra %lu\n",
                   "ab"[side], k.rx_mads, k.tx_mads, k.retransmits, k.tx_deferred, k.duplicates, k.dropped_stale,
                   k.dropped_bad, k.timeouts, k.rx_mra, k.tx_mra);
    }
    return st.SkipWithError("connections left after time-wait");
  }
  const double n = static_cast<double>(std::max<int64_t>(st.iterations(), 1));
  st.SetItemsProcessed(st.iterations());  // items/s = connections/s
  st.counters["mads/conn"] = static_cast<double>(ca.counters.tx_mads + cb.counters.tx_mads - mads0) / n;
  st.counters["retransmits"] = static_cast<double>(ca.counters.retransmits + cb.counters.retransmits - retx0);
  st.counters["established/conn"] =
      static_cast<double>(ca.counters.established + cb.counters.established - est0) / n;
  st.counters["max_conns"] = static_cast<double>(max_conns);
  st.counters["max_quarantined_qpns"] = static_cast<double>(max_quarantined);
  st.counters["ns_create_qps"] = static_cast<double>(t_create) / n;
  st.counters["ns_establish"] = static_cast<double>(t_establish) / n;
  st.counters["ns_disconnect"] = static_cast<double>(t_disconnect) / n;
  st.counters["ns_release_destroy"] = static_cast<double>(t_destroy) / n;
}
BENCHMARK(BM_CmConnectDisconnect)->ArgName("small_qp")->Arg(0)->Arg(1)->UseRealTime();

// Baseline: one 8 B Send a->b, then b->a, on the two stacks' own connected
// QPs; one iteration = one round trip (as engine_bench's BM_EngineSendPingPong).
void BM_SendPingPong8B(benchmark::State& st) {
  Fixture* f = GetFixture();
  if (!f) return st.SkipWithError("setup failed");
  tools::TwoStacks& t = *f->t;
  tools::TwoStacks::Side* side[2] = {&t.a(), &t.b()};
  rc::Completion c[8];
  for (auto _ : st) {
    for (int i = 0; i < 2; i++) {
      rc::Sge s{reinterpret_cast<uint64_t>(f->buf[i]), 8, f->region[i].local_token};
      rc::SendWr w;
      w.op = WrOp::kSend;
      w.sge = &s;
      w.num_sge = 1;
      w.flags = rc::kInline | rc::kSilentSuccess;
      t.Post(*side[i], w);
      while (side[1 - i]->rcq->Poll(c, 1) == 0) t.PollBoth();
      if (c[0].status != rc::Status::kSuccess) return st.SkipWithError("receive failed");
      rc::Sge r{reinterpret_cast<uint64_t>(f->buf[1 - i]), 8, f->region[1 - i].local_token};
      t.PostRecv(*side[1 - i], rc::RecvWr{1, &r, 1});  // keep kPingPongRecvs posted
    }
  }
  st.SetItemsProcessed(st.iterations());  // time per iteration = the round trip
}
BENCHMARK(BM_SendPingPong8B)->UseRealTime();

}  // namespace
}  // namespace roce

int main(int argc, char** argv) {
  if (!roce::port::InitEal({}).ok()) return 1;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  roce::g_fixture.reset();
  roce::port::CleanupEal();
  return 0;
}
