// SPDX-License-Identifier: MIT
// wire/ costs: the ICRC of 64 B / 1 KB / 4 KB packets beside a raw ISA-L
// CRC-32 of the same bytes (the baseline: the ratio is the figure), and parse+
// validate / build ns per packet.
//   build/bench/wire_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <zlib.h>

#include <chrono>
#include <vector>

#include "stack/wire/frame.h"
#include "stack/wire/icrc.h"
#include "stack/wire/packet.h"

namespace roce::wire {
namespace {

// A valid RC WRITE_ONLY frame whose L3 packet (IP .. ICRC) is `l3_len` bytes.
std::vector<uint8_t> MakeFrame(size_t l3_len, RocePacket* p, std::vector<uint8_t>* payload) {
  p->eth.ethertype = kEtherTypeIpv4;
  p->ip4.src = 0xC612000A;
  p->ip4.dst = 0xC6120002;
  p->udp.src_port = 0xC123;
  p->bth.opcode = op::kRcWriteOnly;
  p->bth.dest_qp = 0x11;
  p->bth.ack_req = true;
  p->reth = {0x7f0000001000, 0x1234, 0};
  const size_t overhead = 20 + 8 + 12 + 16 + 4;
  payload->assign(l3_len - overhead, 0x5a);
  p->reth.dma_length = static_cast<uint32_t>(payload->size());
  p->payload = *payload;
  std::vector<uint8_t> f(FrameLen(*p, static_cast<uint32_t>(payload->size())));
  BuildRoceFrame(*p, f);
  return f;
}

// ICRC of a whole packet (IP .. before the ICRC: what a receiver verifies),
// and the counter x_raw: the raw ISA-L CRC-32 time of the same bytes (same
// span, same alignment), timed right after in this run, over the ICRC time
// (1.0: the ICRC costs no more than hashing the bytes).
void BM_Icrc(benchmark::State& st) {
  RocePacket p;
  std::vector<uint8_t> pl;
  auto f = MakeFrame(static_cast<size_t>(st.range(0)), &p, &pl);
  ByteSpan l3 = ByteSpan(f).subspan(14, f.size() - 14 - 4);
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : st) benchmark::DoNotOptimize(ComputeIcrc(l3));
  const auto t1 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < st.iterations(); i++) benchmark::DoNotOptimize(Crc32(0, l3));
  const auto t2 = std::chrono::steady_clock::now();
  st.counters["x_raw"] = std::chrono::duration<double>(t2 - t1).count() / std::chrono::duration<double>(t1 - t0).count();
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(l3.size()));
}
BENCHMARK(BM_Icrc)->Arg(64)->Arg(1024)->Arg(4096);

void BM_RawIsalCrc32(benchmark::State& st) {  // baseline for BM_Icrc: the same bytes, hashed raw
  RocePacket p;
  std::vector<uint8_t> pl;
  auto f = MakeFrame(static_cast<size_t>(st.range(0)), &p, &pl);
  ByteSpan l3 = ByteSpan(f).subspan(14, f.size() - 14 - 4);
  for (auto _ : st) benchmark::DoNotOptimize(Crc32(0, l3));
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(l3.size()));
}
BENCHMARK(BM_RawIsalCrc32)->Arg(64)->Arg(1024)->Arg(4096);

void BM_ZlibCrc32(benchmark::State& st) {  // for reference: what a naive port would use
  std::vector<uint8_t> b(static_cast<size_t>(st.range(0)) - 4, 0x5a);
  for (auto _ : st) benchmark::DoNotOptimize(crc32(0, b.data(), static_cast<uInt>(b.size())));
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(b.size()));
}
BENCHMARK(BM_ZlibCrc32)->Arg(64)->Arg(1024)->Arg(4096);

void BM_ParseValidate(benchmark::State& st) {
  RocePacket p;
  std::vector<uint8_t> pl;
  auto f = MakeFrame(static_cast<size_t>(st.range(0)), &p, &pl);
  ParseOptions o;
  o.verify_icrc = st.range(1) != 0;
  for (auto _ : st) {
    RocePacket q;
    benchmark::DoNotOptimize(ParseRoceFrame(f, &q, o));
    benchmark::DoNotOptimize(q.bth.psn);
  }
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_ParseValidate)->ArgsProduct({{64, 1024, 4096}, {0, 1}})->ArgNames({"bytes", "icrc"});

void BM_Build(benchmark::State& st) {
  RocePacket p;
  std::vector<uint8_t> pl;
  auto f = MakeFrame(static_cast<size_t>(st.range(0)), &p, &pl);
  std::vector<uint8_t> out(f.size());
  for (auto _ : st) {
    p.bth.psn = (p.bth.psn + 1) & 0xFFFFFF;
    benchmark::DoNotOptimize(BuildRoceFrame(p, out));
  }
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_Build)->Arg(64)->Arg(1024)->Arg(4096);

void BM_EmitHeadersOnly(benchmark::State& st) {  // what a zero-copy datapath pays before the ICRC
  RocePacket p;
  std::vector<uint8_t> pl;
  auto f = MakeFrame(1024, &p, &pl);
  uint8_t out[128];
  for (auto _ : st) {
    p.bth.psn = (p.bth.psn + 1) & 0xFFFFFF;
    benchmark::DoNotOptimize(EmitHeaders(p, 960, out));
  }
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_EmitHeadersOnly);

// The data path's frame writer on an 8 B RDMA Write (IPv4; headers from a
// queue pair's template, WriteFrame, into 256 rotating 128-byte buffers as
// into mbufs): mode 0 the whole frame, its ICRC folded from the bytes just
// written; 1 the same frame without the ICRC (headers and payload only); 2
// bursts of 16 frames written, then their ICRCs, each folded once its
// frame's stores have long reached the cache (its time is per burst:
// items_per_second counts frames in every mode). 0 against 1 + the ICRC
// alone (BM_Icrc/64) is what the fold's 16-byte loads wait for: each spans
// several of the headers' small stores, so it cannot take its bytes from
// them (store forwarding) and waits until they have all been written to the
// cache. Measured on an Intel Xeon (release + LTO, medians of 3, twice):
// 16.9-17.0 ns a frame, 6.2-6.3 without the ICRC, 11.0 a burst later, 3.95
// the ICRC alone. (Computing the ICRC from the fields' values instead — a
// constant learned per kind of frame, then the PSN word, the RETH and the
// payload folded from registers, nothing loaded back — took as long here and
// made the split 8 B Write 1.026x and the inline one 1.041x the time: the
// writer's stall moved to its next stores. The issue 13 notes, stop 36.)
void BM_WriteFrame(benchmark::State& st) {
  NetHeaders n;
  n.eth.src.b = {2, 0, 0, 0, 0, 1};
  n.eth.dst.b = {2, 0, 0, 0, 0, 2};
  n.eth.ethertype = kEtherTypeIpv4;
  n.ip4.src = 0xC612000A;
  n.ip4.dst = 0xC6120002;
  n.udp.src_port = 0xC123;
  const FrameTemplate t(n);
  Bth bth;
  bth.opcode = op::kRcWriteOnly;
  bth.dest_qp = 0x11;
  ExtHeaders ext;
  ext.reth = {0x7f0000001000, 0x1234, 8};
  const uint8_t payload[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const Gather g{payload, 8};
  constexpr size_t kSlot = 128, kSlots = 256, kBurst = 16;
  std::vector<uint8_t> buf(kSlot * kSlots);
  const size_t len = t.FrameLen(bth.opcode, 8), l3 = t.l3();
  const int64_t mode = st.range(0);
  uint32_t i = 0;
  for (auto _ : st) {
    if (mode == 2) {
      uint8_t* first = buf.data() + kSlot * (i % kSlots);  // kSlots % kBurst == 0: no wrap inside
      for (size_t k = 0; k < kBurst; k++, i++) {
        bth.psn = i & 0xFFFFFF;
        ext.reth.va += 8;
        uint8_t* o = first + kSlot * k;
        const size_t h = t.WriteHeaders(bth, ext, 8, o);
        CopySmall(o + h, payload, 8);
      }
      for (size_t k = 0; k < kBurst; k++) {
        uint8_t* o = first + kSlot * k;
        Store32Le(o + len - kIcrcLen, ComputeIcrc(ByteSpan(o + l3, len - kIcrcLen - l3)));
      }
      continue;
    }
    bth.psn = i & 0xFFFFFF;
    ext.reth.va += 8;
    uint8_t* o = buf.data() + kSlot * (i++ % kSlots);
    if (mode == 0) {
      benchmark::DoNotOptimize(WriteFrame(t, bth, ext, &g, 1, 8, o));
    } else {
      const size_t h = t.WriteHeaders(bth, ext, 8, o);
      CopySmall(o + h, payload, 8);
      Store32Le(o + len - kIcrcLen, 0);
      benchmark::ClobberMemory();
    }
  }
  st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * (mode == 2 ? kBurst : 1));
  // The frame left in the first slot by modes 0 and 2 (mode 1 writes no
  // ICRC) must be one a receiver accepts: its ICRC good.
  RocePacket q;
  const Error e = mode == 1 ? Error::kOk : ParseRoceFrame(ByteSpan(buf.data(), len), &q);
  if (e != Error::kOk) st.SkipWithError(ErrorName(e));
}
BENCHMARK(BM_WriteFrame)->Arg(0)->Arg(1)->Arg(2)->ArgName("mode");

}  // namespace
}  // namespace roce::wire

BENCHMARK_MAIN();
