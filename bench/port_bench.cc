// SPDX-License-Identifier: MIT
// Raw packet rate of the in-process net_ring pair at burst 32 for 64 B and
// 1 KB frames: the baseline the engine benchmark will be compared against.
//   Raw:  rte_pktmbuf_alloc_bulk -> header write -> rte_eth_tx_burst (A) ->
//         rte_eth_rx_burst (B) -> rte_pktmbuf_free_bulk, one thread.
//   RawTouch: Raw plus reading each mbuf's pkt_len on both sides, the least
//         any layer that counts bytes must do (on this VM's 4 KB pages that
//         first touch is most of the difference between Raw and Port).
//   Port: the same through Port::TxBurst / Port::RxBurst (counters, the
//         backlog check and the fault/capture branches, all off).
// EAL: the embedded default (--no-huge); pass --hugepages to use mounted
// hugepages (--in-memory), which the DPDK notes measured ~1.7x faster.
//   build-port/bench/port_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <cstring>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "stack/port/dpdk.h"
#include "stack/port/eal.h"
#include "stack/port/port.h"

namespace {

using roce::port::Port;

constexpr uint16_t kBurst = 32;

struct RingPair {
  std::unique_ptr<Port> a, b;
  static RingPair& Get() {
    static RingPair* p = [] {
      roce::port::PortProfile prof;
      prof.driver = "net_ring";
      prof.ring = "bench";
      prof.mtu = 1500;
      prof.mbufs = 8191;
      prof.rx_desc = prof.tx_desc = 1024;
      auto r = roce::port::OpenRingPair(prof);
      if (!r.ok()) {
        fprintf(stderr, "OpenRingPair: %s\n", std::string(r.status().message()).c_str());
        std::abort();
      }
      return new RingPair{std::move(r->first), std::move(r->second)};
    }();
    return *p;
  }
};

void FillBurst(rte_mempool* pool, rte_mbuf** m, uint16_t len, const uint8_t* hdr) {
  if (rte_pktmbuf_alloc_bulk(pool, m, kBurst) != 0) std::abort();
  for (uint16_t i = 0; i < kBurst; i++) {
    m[i]->data_len = len;
    m[i]->pkt_len = len;
    std::memcpy(rte_pktmbuf_mtod(m[i], uint8_t*), hdr, 64);  // headers: one cache line
  }
}

void BM_RingPairRaw(benchmark::State& state) {
  RingPair& p = RingPair::Get();
  const uint16_t len = static_cast<uint16_t>(state.range(0));
  const uint16_t a = p.a->id(), b = p.b->id();
  uint8_t hdr[64] = {};
  rte_mbuf* tx[kBurst];
  rte_mbuf* rx[kBurst];
  uint64_t pkts = 0;
  for (auto _ : state) {
    FillBurst(p.a->pool(), tx, len, hdr);
    uint16_t sent = rte_eth_tx_burst(a, 0, tx, kBurst);
    if (sent < kBurst) rte_pktmbuf_free_bulk(tx + sent, kBurst - sent);
    uint16_t got = rte_eth_rx_burst(b, 0, rx, kBurst);
    rte_pktmbuf_free_bulk(rx, got);
    pkts += got;
  }
  state.SetItemsProcessed(static_cast<int64_t>(pkts));
  state.SetBytesProcessed(static_cast<int64_t>(pkts * len));
  state.counters["Mpps"] = benchmark::Counter(static_cast<double>(pkts) / 1e6, benchmark::Counter::kIsRate);
}

void BM_RingPairPort(benchmark::State& state) {
  RingPair& p = RingPair::Get();
  const uint16_t len = static_cast<uint16_t>(state.range(0));
  uint8_t hdr[64] = {};
  rte_mbuf* tx[kBurst];
  rte_mbuf* rx[kBurst];
  uint64_t pkts = 0;
  for (auto _ : state) {
    FillBurst(p.a->pool(), tx, len, hdr);
    p.a->TxBurst(0, tx, kBurst);
    uint16_t got = p.b->RxBurst(0, rx, kBurst);
    rte_pktmbuf_free_bulk(rx, got);
    pkts += got;
  }
  state.SetItemsProcessed(static_cast<int64_t>(pkts));
  state.SetBytesProcessed(static_cast<int64_t>(pkts * len));
  state.counters["Mpps"] = benchmark::Counter(static_cast<double>(pkts) / 1e6, benchmark::Counter::kIsRate);
}

void BM_RingPairRawTouch(benchmark::State& state) {
  RingPair& p = RingPair::Get();
  const uint16_t len = static_cast<uint16_t>(state.range(0));
  const uint16_t a = p.a->id(), b = p.b->id();
  uint8_t hdr[64] = {};
  rte_mbuf* tx[kBurst];
  rte_mbuf* rx[kBurst];
  uint64_t pkts = 0, bytes = 0;
  for (auto _ : state) {
    FillBurst(p.a->pool(), tx, len, hdr);
    for (uint16_t i = 0; i < kBurst; i++) bytes += tx[i]->pkt_len;
    uint16_t sent = rte_eth_tx_burst(a, 0, tx, kBurst);
    if (sent < kBurst) rte_pktmbuf_free_bulk(tx + sent, kBurst - sent);
    uint16_t got = rte_eth_rx_burst(b, 0, rx, kBurst);
    for (uint16_t i = 0; i < got; i++) bytes += rx[i]->pkt_len;
    rte_pktmbuf_free_bulk(rx, got);
    pkts += got;
  }
  benchmark::DoNotOptimize(bytes);
  state.SetItemsProcessed(static_cast<int64_t>(pkts));
  state.SetBytesProcessed(static_cast<int64_t>(pkts * len));
  state.counters["Mpps"] = benchmark::Counter(static_cast<double>(pkts) / 1e6, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RingPairRaw)->Arg(64)->Arg(1024);
BENCHMARK(BM_RingPairRawTouch)->Arg(64)->Arg(1024);
BENCHMARK(BM_RingPairPort)->Arg(64)->Arg(1024);

}  // namespace

int main(int argc, char** argv) {
  roce::port::EalOptions eal;
  std::vector<char*> args;
  for (int i = 0; i < argc; i++) {
    if (std::string(argv[i]) == "--hugepages")
      eal.hugepages = true;
    else
      args.push_back(argv[i]);
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  if (absl::Status s = roce::port::InitEal(eal); !s.ok()) {
    fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
