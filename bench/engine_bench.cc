// Two full stacks (DPDK port + engine + RC) over an in-process net_ring pair,
// polled inline by one thread: 8 B RDMA Write messages/s, 64 KB Write GB/s
// and the 8 B Send ping-pong round trip — each beside a baseline measured in
// the same run: the raw ring-pair packet rate at the same burst size, a
// one-core memcpy of the same bytes, and a kernel TCP loopback ping-pong.
//   build/bench/engine_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "stack/mem/memory_table.h"
#include "stack/port/dpdk.h"
#include "stack/port/eal.h"
#include "stack/port/mbuf.h"
#include "tools/lib/two_stacks.h"

namespace roce {
namespace {

using rc::WrOp;

std::unique_ptr<tools::TwoStacks> Open(const std::string& ring) {
  tools::TwoStacksOptions o;
  o.ring = ring;
  o.caps.sq_depth = 256;
  o.caps.rq_depth = 256;
  o.tuning.max_unacked_psns = 512;
  o.tuning.ack_req_every = 64;
  o.tuning.max_tx_per_poll = 64;
  auto t = tools::TwoStacks::Open(o);
  return t.ok() ? std::move(*t) : nullptr;
}

void BM_EngineWrite(benchmark::State& st) {
  const uint32_t size = static_cast<uint32_t>(st.range(0));
  auto t = Open("bench_write");
  if (!t) return st.SkipWithError("setup failed");
  std::vector<uint8_t> src(size, 0x5a), dst(size);
  const auto sr = t->Register(t->a(), src.data(), size, 0);
  const auto dr = t->Register(t->b(), dst.data(), size, mem::kLocalWrite | mem::kRemoteWrite);
  rc::Sge s{reinterpret_cast<uint64_t>(src.data()), size, sr.local_token};
  rc::SendWr w;
  w.op = WrOp::kWrite;
  w.sge = &s;
  w.num_sge = 1;
  w.remote_addr = reinterpret_cast<uint64_t>(dst.data());
  w.rkey = dr.remote_token;
  w.flags = size <= 64 ? rc::kInline : 0u;
  rc::Completion cs[64];
  uint64_t done = 0;
  const uint64_t pkts0 = t->a().qp->counters.tx_packets;
  for (auto _ : st) {
    while (t->Post(t->a(), w) == rc::PostResult::kQueueFull) {
      t->PollBoth();
      done += t->a().scq->Poll(cs, 64);
    }
    if ((done & 15) == 0) {  // keep the pipeline full: poll every few posts
      t->PollBoth();
      done += t->a().scq->Poll(cs, 64);
    }
  }
  while (done < static_cast<uint64_t>(st.iterations())) {
    t->PollBoth();
    done += t->a().scq->Poll(cs, 64);
  }
  st.counters["pkts/s"] = benchmark::Counter(static_cast<double>(t->a().qp->counters.tx_packets - pkts0),
                                             benchmark::Counter::kIsRate);
  st.SetItemsProcessed(st.iterations());
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * size);
  t->Deregister(t->a(), sr);
  t->Deregister(t->b(), dr);
}
BENCHMARK(BM_EngineWrite)->Arg(8)->Arg(65536)->UseRealTime();

// One 8 B Send a->b, then b->a; one iteration = one round trip.
void BM_EngineSendPingPong(benchmark::State& st) {
  auto t = Open("bench_pp");
  if (!t) return st.SkipWithError("setup failed");
  uint8_t buf[2][8] = {};
  mem::RegionInfo r[2] = {t->Register(t->a(), buf[0], 8, mem::kLocalWrite),
                          t->Register(t->b(), buf[1], 8, mem::kLocalWrite)};
  tools::TwoStacks::Side* side[2] = {&t->a(), &t->b()};
  auto post_recv = [&](int i) {
    rc::Sge s{reinterpret_cast<uint64_t>(buf[i]), 8, r[i].local_token};
    t->PostRecv(*side[i], rc::RecvWr{1, &s, 1});
  };
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 64; k++) post_recv(i);
  rc::Completion c[8];
  for (auto _ : st) {
    for (int i = 0; i < 2; i++) {
      rc::Sge s{reinterpret_cast<uint64_t>(buf[i]), 8, r[i].local_token};
      rc::SendWr w;
      w.op = WrOp::kSend;
      w.sge = &s;
      w.num_sge = 1;
      w.flags = rc::kInline | rc::kSilentSuccess;
      t->Post(*side[i], w);
      while (side[1 - i]->rcq->Poll(c, 1) == 0) t->PollBoth();
      post_recv(1 - i);
    }
  }
  st.SetItemsProcessed(st.iterations());  // time per iteration = the round trip
}
BENCHMARK(BM_EngineSendPingPong)->UseRealTime();

// Baseline: raw rte_eth_tx_burst/rx_burst over the same ring pair, 64 B
// frames, burst 32 (the engine's burst) — the packet rate the ring allows.
void BM_RingPairRaw(benchmark::State& st) {
  auto t = Open("bench_raw");
  if (!t) return st.SkipWithError("setup failed");
  port::Port& a = *t->a().port;
  port::Port& b = *t->b().port;
  rte_mbuf* tx[32];
  rte_mbuf* rx[32];
  for (auto _ : st) {
    if (rte_pktmbuf_alloc_bulk(a.pool(), tx, 32) != 0) return st.SkipWithError("pool empty");
    for (rte_mbuf* m : tx) rte_pktmbuf_append(m, 64);
    const uint16_t n = rte_eth_tx_burst(a.id(), 0, tx, 32);
    for (uint16_t i = n; i < 32; i++) rte_pktmbuf_free(tx[i]);
    uint16_t got = 0;
    while (got < n) {
      const uint16_t k = rte_eth_rx_burst(b.id(), 0, rx, 32);
      for (uint16_t i = 0; i < k; i++) rte_pktmbuf_free(rx[i]);
      got += k;
    }
  }
  st.SetItemsProcessed(st.iterations() * 32);
}
BENCHMARK(BM_RingPairRaw)->UseRealTime();

// Baseline: one core copying the bytes.
void BM_Memcpy(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  std::vector<uint8_t> a(n, 1), b(n);
  for (auto _ : st) {
    std::memcpy(b.data(), a.data(), n);
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(n));
}
BENCHMARK(BM_Memcpy)->Arg(65536)->UseRealTime();

// Baseline: an 8 B ping-pong over kernel TCP loopback, both ends in this
// thread (write, read on the other end, write back, read).
void BM_KernelTcpLoopbackPingPong(benchmark::State& st) {
  const int ls = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sl = sizeof sa;
  if (bind(ls, reinterpret_cast<sockaddr*>(&sa), sl) != 0 || listen(ls, 1) != 0 ||
      getsockname(ls, reinterpret_cast<sockaddr*>(&sa), &sl) != 0)
    return st.SkipWithError("socket");
  const int c = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(c, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return st.SkipWithError("connect");
  const int s = accept(ls, nullptr, nullptr);
  const int one = 1;
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char m[8] = {};
  for (auto _ : st) {
    if (write(c, m, 8) != 8 || read(s, m, 8) != 8 || write(s, m, 8) != 8 || read(c, m, 8) != 8)
      return st.SkipWithError("io");
  }
  close(c);
  close(s);
  close(ls);
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_KernelTcpLoopbackPingPong)->UseRealTime();

}  // namespace
}  // namespace roce

int main(int argc, char** argv) {
  if (!roce::port::InitEal({}).ok()) return 1;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  roce::port::CleanupEal();
  return 0;
}
