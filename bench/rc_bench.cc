// SPDX-License-Identifier: MIT
// The RC protocol core alone: two devices joined back-to-back in one thread
// (every packet is serialized to bytes with its ICRC, parsed and checked, and
// placed), no impairment. RDMA Writes of 8 B and 64 KB: messages/s and
// packets/s — the ceiling the DPDK datapath can reach — beside a plain
// memcpy of the same bytes (the baseline, measured in the same run).
//   build/bench/rc_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "stack/mem/memory_table.h"
#include "stack/mem/place.h"
#include "stack/rc/device.h"

namespace roce::rc {
namespace {

// Delivers every packet straight to the peer device (serialize → parse).
class Loopback : public PacketSink {
 public:
  RcDevice* peer = nullptr;
  uint64_t packets = 0;
  bool Transmit(const TxPacket& pkt, uint64_t now) override {
    const size_t n = TxFrameLen(pkt);
    if (buf_.size() < n) buf_.resize(n);
    SerializeFrame(pkt, buf_.data());
    peer->OnFrame(wire::ByteSpan(buf_.data(), n), now);
    packets++;
    return true;
  }

 private:
  std::vector<uint8_t> buf_;
};

struct Rig {
  Loopback la, lb;
  std::unique_ptr<RcDevice> a, b;
  std::unique_ptr<CompletionQueue> acq, arq, bcq, brq;
  QueuePair *qa, *qb;
  std::vector<uint8_t> src, dst;
  mem::RegionInfo sr, dr;

  explicit Rig(uint32_t msg) : src(msg), dst(msg) {
    RcDevice::Config c;
    c.mem_seed = 1;
    c.tuning.max_unacked_psns = 1024;
    c.tuning.ack_req_every = 64;
    c.tuning.max_tx_per_poll = 256;
    a = std::make_unique<RcDevice>(c, &la);
    b = std::make_unique<RcDevice>(c, &lb);
    la.peer = b.get();
    lb.peer = a.get();
    acq = std::make_unique<CompletionQueue>(4096);
    arq = std::make_unique<CompletionQueue>(16);
    bcq = std::make_unique<CompletionQueue>(16);
    brq = std::make_unique<CompletionQueue>(16);
    QpCaps caps;
    caps.sq_depth = 512;
    qa = a->CreateQp(caps, acq.get(), arq.get());
    qb = b->CreateQp(caps, bcq.get(), brq.get());
    for (int side = 0; side < 2; side++) {
      QueuePair* q = side ? qb : qa;
      QpAttr at;
      at.path_mtu = 4096;
      at.dest_qpn = (side ? qa : qb)->qpn();
      at.sq_psn = side ? 500 : 100;
      at.rq_psn = side ? 100 : 500;
      at.path.eth.src.b = {2, 0, 0, 0, 0, static_cast<uint8_t>(1 + side)};
      at.path.eth.dst.b = {2, 0, 0, 0, 0, static_cast<uint8_t>(2 - side)};
      at.path.ip4.src = 0xC612000A + side;
      at.path.ip4.dst = 0xC612000B - side;
      q->ToInit();
      q->ToRtr(at);
    }
    qa->ToRts(0);
    qb->ToRts(0);
    std::memset(src.data(), 0x5a, msg);
    a->memory().RegisterRegion(reinterpret_cast<uint64_t>(src.data()), msg, 0, &sr);
    b->memory().RegisterRegion(reinterpret_cast<uint64_t>(dst.data()), msg,
                               mem::kLocalWrite | mem::kRemoteWrite, &dr);
  }
};

void BM_RcWrite(benchmark::State& st) {
  const uint32_t msg = static_cast<uint32_t>(st.range(0));
  Rig r(msg);
  Sge sge{reinterpret_cast<uint64_t>(r.src.data()), msg, r.sr.local_token};
  SendWr wr;
  wr.op = WrOp::kWrite;
  wr.sge = &sge;
  wr.num_sge = 1;
  wr.remote_addr = reinterpret_cast<uint64_t>(r.dst.data());
  wr.rkey = r.dr.remote_token;
  Completion cs[64];
  uint64_t now = 0, done = 0, posted = 0;
  for (auto _ : st) {
    // One message per iteration; keep the send queue fed and the pipe moving.
    while (r.qa->PostSend(wr) == PostResult::kQueueFull) {
      r.a->Poll(++now, 256);
      r.b->Poll(++now, 256);
      done += r.acq->Poll(cs, 64);
    }
    if ((++posted & 15) == 0) {  // as engine_bench: poll every 16 posts, so ACKs coalesce
      r.a->Poll(++now, 64);
      r.b->Poll(++now, 64);
      done += r.acq->Poll(cs, 64);
    }
  }
  while (r.qa->outstanding_sends()) {
    r.a->Poll(++now, 256);
    r.b->Poll(++now, 256);
    done += r.acq->Poll(cs, 64);
  }
  if (done != static_cast<uint64_t>(st.iterations())) st.SkipWithError("lost completions");
  const double pkts = static_cast<double>(r.la.packets);
  st.counters["data_pkts/s"] = benchmark::Counter(pkts, benchmark::Counter::kIsRate);
  st.counters["acks_per_msg"] = benchmark::Counter(static_cast<double>(r.lb.packets) / st.iterations());
  st.SetItemsProcessed(st.iterations());
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * msg);
}
BENCHMARK(BM_RcWrite)->Arg(8)->Arg(65536);

void BM_Memcpy(benchmark::State& st) {  // baseline: the bytes alone
  const size_t msg = static_cast<size_t>(st.range(0));
  std::vector<uint8_t> a(msg, 1), b(msg);
  for (auto _ : st) {
    std::memcpy(b.data(), a.data(), msg);
    benchmark::DoNotOptimize(b.data());
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(st.iterations());
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(msg));
}
BENCHMARK(BM_Memcpy)->Arg(8)->Arg(65536);

// `place(d, s, len)` 16 times, then memcpy of the same bytes 16 times, each
// iteration: x_memcpy is place's rate over memcpy's, measured back to back.
template <class Place>
void AgainstMemcpy(benchmark::State& st, uint8_t* d, const uint8_t* s, size_t len, Place place) {
  double t_place = 0, t_copy = 0;
  uint64_t rounds = 0;
  for (auto _ : st) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 16; i++) {
      place(d, s, len);
      benchmark::ClobberMemory();
    }
    auto t1 = std::chrono::steady_clock::now();
    for (int i = 0; i < 16; i++) {
      std::memcpy(d, s, len);
      benchmark::ClobberMemory();
    }
    auto t2 = std::chrono::steady_clock::now();
    t_place += std::chrono::duration<double>(t1 - t0).count();
    t_copy += std::chrono::duration<double>(t2 - t1).count();
    rounds++;
  }
  if (t_place > 0) st.counters["x_memcpy"] = t_copy / t_place;
  st.SetBytesProcessed(static_cast<int64_t>(rounds * 16 * len));
}

// What the responder places with (stack/mem/place.h: ascending stores, so a
// poller of the last byte sees the rest) beside memcpy of the same bytes, one
// packet's payload at a time (1 KB, 4 KB) and a 64 KB message.
void BM_PlaceInOrder(benchmark::State& st) {
  const size_t msg = static_cast<size_t>(st.range(0));
  std::vector<uint8_t> a(msg + 64, 1), b(msg + 64);
  AgainstMemcpy(st, b.data() + 3, a.data() + 1, msg, mem::PlaceInOrder);
}
BENCHMARK(BM_PlaceInOrder)->Arg(1024)->Arg(4096)->Arg(65536);

// What the responder places a 4 KB packet's payload with when it checks the
// ICRC as it copies (mem::PlaceInOrderCrc32), the destination and the source
// (args) bytes past 64-byte alignment (0: page-aligned buffers; 16: malloc'd
// 64 KB ones, so a head and a tail around the one-pass blocks), beside
// memcpy of the same bytes.
void BM_PlaceCrc32(benchmark::State& st) {
  constexpr size_t kLen = 4096;
  std::vector<uint8_t> a(kLen + 128, 1), b(kLen + 128);
  const auto at = [](uint8_t* p, int64_t off) { return p + (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64 + off; };
  uint32_t crc = 0;
  AgainstMemcpy(st, at(b.data(), st.range(0)), at(a.data(), st.range(1)), kLen,
                [&crc](uint8_t* d, const uint8_t* s, size_t len) { crc = mem::PlaceInOrderCrc32(d, s, len, crc); });
  benchmark::DoNotOptimize(crc);
}
BENCHMARK(BM_PlaceCrc32)->Args({0, 0})->Args({16, 16})->Args({40, 40})->Args({16, 0});

// A 4 KB payload as a NIC's 2 KB receive segments cut it (1978 bytes after
// the headers of the first, 2048, then 70; each segment's buffer 64-byte
// aligned) gathered into a 64-byte aligned buffer with its CRC: arg 1 as one
// stream (mem::PlaceGatherCrc32), arg 0 piece by piece (PlaceInOrderCrc32
// chained: a head, a tail and a reduction each), beside memcpy of 4 KB.
void BM_PlaceGatherCrc32(benchmark::State& st) {
  constexpr size_t kSeg = 2048, kHdr = 70, kLen = 4096;
  std::vector<uint8_t> a(3 * kSeg + 128, 1), b(kLen + 128);
  const auto at = [](uint8_t* p) { return p + (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64; };
  uint8_t* seg = at(a.data());
  const mem::Piece pieces[3] = {{seg + kHdr, kSeg - kHdr}, {seg + kSeg, kSeg}, {seg + 2 * kSeg, kLen - (2 * kSeg - kHdr)}};
  uint32_t crc = 0;
  const bool stream = st.range(0) != 0;
  AgainstMemcpy(st, at(b.data()), seg, kLen, [&](uint8_t* d, const uint8_t*, size_t) {
    if (stream) {
      crc = mem::PlaceGatherCrc32(d, pieces, 3, crc);
    } else {
      for (const mem::Piece& p : pieces) {
        crc = mem::PlaceInOrderCrc32(d, p.p, p.len, crc);
        d += p.len;
      }
    }
  });
  benchmark::DoNotOptimize(crc);
}
BENCHMARK(BM_PlaceGatherCrc32)->Arg(0)->Arg(1);

}  // namespace
}  // namespace roce::rc

BENCHMARK_MAIN();
