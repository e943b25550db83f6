// SPDX-License-Identifier: MIT
// Two full stacks (DPDK port + engine + RC) over an in-process net_ring pair,
// polled inline by one thread: 8 B RDMA Write messages/s, 64 KB Write GB/s
// and the 8 B Send ping-pong round trip — each beside a baseline measured in
// the same run: the raw ring-pair packet rate at the same burst size, a
// one-core memcpy of the same bytes, and a kernel TCP loopback ping-pong.
//   build/bench/engine_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include "bench/baselines.h"
#include "stack/port/eal.h"

namespace roce {
namespace {

void BM_EngineWrite(benchmark::State& st) {
  auto t = bench::OpenNative("bench_write");
  if (!t) return st.SkipWithError("setup failed");
  bench::NativeWrite(st, *t, static_cast<uint32_t>(st.range(0)));
}
BENCHMARK(BM_EngineWrite)->Arg(8)->Arg(65536)->UseRealTime();

// One 8 B Send a->b, then b->a; one iteration = one round trip.
void BM_EngineSendPingPong(benchmark::State& st) {
  auto t = bench::OpenNative("bench_pp");
  if (!t) return st.SkipWithError("setup failed");
  bench::NativeSendPingPong(st, *t);
}
BENCHMARK(BM_EngineSendPingPong)->UseRealTime();

// Baseline: raw rte_eth_tx_burst/rx_burst over the same ring pair, 64 B
// frames, burst 32 (the engine's burst) — the packet rate the ring allows.
void BM_RingPairRaw(benchmark::State& st) {
  auto t = bench::OpenNative("bench_raw");
  if (!t) return st.SkipWithError("setup failed");
  bench::RingPairRaw(st, *t->a().port, *t->b().port, /*cross_core=*/false);
}
BENCHMARK(BM_RingPairRaw)->UseRealTime();

// Baseline: one core copying the bytes.
void BM_Memcpy(benchmark::State& st) { bench::Memcpy(st, static_cast<size_t>(st.range(0))); }
BENCHMARK(BM_Memcpy)->Arg(65536)->UseRealTime();

// Baseline: an 8 B ping-pong over kernel TCP loopback, both ends in this
// thread (write, read on the other end, write back, read).
void BM_KernelTcpLoopbackPingPong(benchmark::State& st) { bench::KernelTcpLoopbackPingPong(st); }
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
