// SPDX-License-Identifier: MIT
// What engine_bench and nd2_bench share: the two native stacks over a ring
// pair as engine_bench opens them, the native engine's 8 B / 64 KB Write and
// 8 B Send ping-pong loops, and the baselines every figure is a ratio to (raw
// ring-pair packet rate in one thread and across two threads, one-core memcpy,
// kernel TCP loopback ping-pong). Each function runs one Google Benchmark
// loop and returns what it measured (wall seconds of the loop, items done
// in them: the rate a ratio counter divides, Figures); the EAL must be up.
#pragma once

#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/figures.h"
#include "stack/mem/memory_table.h"
#include "stack/port/dpdk.h"
#include "stack/port/mbuf.h"
#include "stack/wire/icrc.h"
#include "tools/lib/two_stacks.h"

namespace roce::bench {

// tx_on_post = false: a posted request waits for its engine's next pass (the
// stack before EngineOptions::tx_on_post; a same-run baseline for it).
// zero_copy = false: every payload copied into mbufs, as on a port whose
// driver DMAs (a NIC) or hands frames to another process (memif, vhost).
// rx_copy: every received frame copied into 2 KB segments after the
// headroom, as a NIC's scatter DMA lays it out (PortProfile::rx_copy).
inline std::unique_ptr<tools::TwoStacks> OpenNative(const std::string& ring, bool tx_on_post = true,
                                                    bool zero_copy = true, bool rx_copy = false) {
  tools::TwoStacksOptions o;
  o.rx_copy = rx_copy;
  o.ring = ring;
  o.tx_on_post = tx_on_post;
  if (!zero_copy) o.zero_copy_min = 0;
  o.caps.sq_depth = 256;
  o.caps.rq_depth = 256;
  o.tuning.max_unacked_psns = 512;
  o.tuning.ack_req_every = 64;
  o.tuning.max_tx_per_poll = 64;
  auto t = tools::TwoStacks::Open(o);
  if (!t.ok()) {
    std::fprintf(stderr, "%s: %s\n", ring.c_str(), std::string(t.status().message()).c_str());
    return nullptr;
  }
  return std::move(*t);
}

// Native engine: Writes of `size` bytes a -> b, both engines polled by this
// thread; every Write completes (no silent success), inline up to 64 B.
// `loop(step)` calls step() once per Write (a benchmark's loop, or a count:
// NativeWriteSeconds); the time includes completing them all. *tx_packets:
// a's packets sent meanwhile.
template <class Loop>
Measured NativeWriteLoop(tools::TwoStacks& t, uint32_t size, uint64_t* tx_packets, Loop&& loop) {
  std::vector<uint8_t> src(size, 0x5a), dst(size);
  const auto sr = t.Register(t.a(), src.data(), size, 0);
  const auto dr = t.Register(t.b(), dst.data(), size, mem::kLocalWrite | mem::kRemoteWrite);
  rc::Sge s{reinterpret_cast<uint64_t>(src.data()), size, sr.local_token};
  rc::SendWr w;
  w.op = rc::WrOp::kWrite;
  w.sge = &s;
  w.num_sge = 1;
  w.remote_addr = reinterpret_cast<uint64_t>(dst.data());
  w.rkey = dr.remote_token;
  w.flags = size <= 64 ? rc::kInline : 0u;
  rc::Completion cs[64];
  uint64_t done = 0, posted = 0;
  const uint64_t pkts0 = t.a().qp->counters.tx_packets;
  const auto t0 = std::chrono::steady_clock::now();
  loop([&] {
    while (t.Post(t.a(), w) == rc::PostResult::kQueueFull) {
      t.PollBoth();
      done += t.a().scq->Poll(cs, 64);
    }
    if ((++posted & 31) == 0) {  // poll every 32 posts: the engine's (and the raw baseline's) burst
      t.PollBoth();
      done += t.a().scq->Poll(cs, 64);
    }
  });
  while (done < posted) {  // timed: what was posted is done
    t.PollBoth();
    done += t.a().scq->Poll(cs, 64);
  }
  const double secs = SecondsSince(t0);
  *tx_packets = t.a().qp->counters.tx_packets - pkts0;
  t.Deregister(t.a(), sr);
  t.Deregister(t.b(), dr);
  return {secs, static_cast<double>(posted)};
}

inline Measured NativeWrite(benchmark::State& st, tools::TwoStacks& t, uint32_t size) {
  uint64_t pkts = 0;
  const Measured m = NativeWriteLoop(t, size, &pkts, [&](auto&& step) {
    for (auto _ : st) step();
  });
  st.counters["pkts/s"] = benchmark::Counter(static_cast<double>(pkts), benchmark::Counter::kIsRate);
  st.SetItemsProcessed(st.iterations());
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * size);
  return m;
}

// Native engine: one 8 B Send a -> b, then b -> a; one step = one round
// trip (`loop` as NativeWriteLoop's).
template <class Loop>
Measured NativeSendPingPongLoop(tools::TwoStacks& t, Loop&& loop) {
  uint8_t buf[2][8] = {};
  mem::RegionInfo r[2] = {t.Register(t.a(), buf[0], 8, mem::kLocalWrite), t.Register(t.b(), buf[1], 8, mem::kLocalWrite)};
  tools::TwoStacks::Side* side[2] = {&t.a(), &t.b()};
  auto post_recv = [&](int i) {
    rc::Sge s{reinterpret_cast<uint64_t>(buf[i]), 8, r[i].local_token};
    t.PostRecv(*side[i], rc::RecvWr{1, &s, 1});
  };
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 64; k++) post_recv(i);
  rc::Completion c[8];
  uint64_t trips = 0;
  const auto t0 = std::chrono::steady_clock::now();
  loop([&] {
    for (int i = 0; i < 2; i++) {
      rc::Sge s{reinterpret_cast<uint64_t>(buf[i]), 8, r[i].local_token};
      rc::SendWr w;
      w.op = rc::WrOp::kSend;
      w.sge = &s;
      w.num_sge = 1;
      w.flags = rc::kInline | rc::kSilentSuccess;
      t.Post(*side[i], w);
      while (side[1 - i]->rcq->Poll(c, 1) == 0) t.PollBoth();
      post_recv(1 - i);
    }
    trips++;
  });
  return {SecondsSince(t0), static_cast<double>(trips)};
}

inline Measured NativeSendPingPong(benchmark::State& st, tools::TwoStacks& t) {
  const Measured m = NativeSendPingPongLoop(t, [&](auto&& step) {
    for (auto _ : st) step();
  });
  st.SetItemsProcessed(st.iterations());  // time per iteration = the round trip
  return m;
}

// Sparse traffic to a dedicated engine: one 8 B Send a -> b every `gap_us`,
// b's engine on its own thread (which naps after EngineOptions::idle_spin_ns
// without work), a's polled here. One iteration: the time from the post until
// this thread, polling b's receive queue, sees the completion. keep_awake:
// the polling calls b's Engine::KeepAwake (as ND2's GetResults does for a
// thread adapter); otherwise the packet waits for b's nap to end.
inline Measured SparseSendToDedicated(benchmark::State& st, tools::TwoStacks& t, bool keep_awake,
                                      uint32_t gap_us = 1000) {
  uint8_t buf[2][8] = {};
  mem::RegionInfo r[2] = {t.Register(t.a(), buf[0], 8, 0), t.Register(t.b(), buf[1], 8, mem::kLocalWrite)};
  auto post_recv = [&] {
    rc::Sge s{reinterpret_cast<uint64_t>(buf[1]), 8, r[1].local_token};
    t.PostRecv(t.b(), rc::RecvWr{1, &s, 1});
  };
  for (int k = 0; k < 16; k++) post_recv();
  if (!t.b().eng->Start().ok()) {
    st.SkipWithError("b's engine thread did not start");
    return {};
  }
  rc::Completion c[8];
  double busy = 0;
  uint64_t lost = 0;
  for (auto _ : st) {
    st.PauseTiming();
    const auto idle_until = std::chrono::steady_clock::now() + std::chrono::microseconds(gap_us);
    while (std::chrono::steady_clock::now() < idle_until) {
      t.a().eng->Poll();  // a takes b's ACKs; b is left alone (it naps)
      if (keep_awake) t.b().eng->KeepAwake();
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    st.ResumeTiming();
    const auto t0 = std::chrono::steady_clock::now();
    rc::Sge s{reinterpret_cast<uint64_t>(buf[0]), 8, r[0].local_token};
    rc::SendWr w;
    w.op = rc::WrOp::kSend;
    w.sge = &s;
    w.num_sge = 1;
    w.flags = rc::kInline | rc::kSilentSuccess;
    t.Post(t.a(), w);
    const auto give_up = t0 + std::chrono::seconds(1);
    uint32_t got = 0;
    while ((got = t.b().rcq->Poll(c, 8)) == 0 && std::chrono::steady_clock::now() < give_up) {
      t.a().eng->Poll();
      if (keep_awake) t.b().eng->KeepAwake();
    }
    busy += SecondsSince(t0);
    if (got == 0) lost++;
    post_recv();
  }
  t.b().eng->Stop();
  t.Deregister(t.a(), r[0]);
  t.Deregister(t.b(), r[1]);
  if (lost) st.SkipWithError("a Send was not received within 1 s");
  st.SetItemsProcessed(st.iterations());
  return {busy, static_cast<double>(st.iterations())};
}

namespace internal {
inline void WriteFrames(rte_mbuf* const* m, uint16_t n, const uint8_t* frame, uint16_t len) {
  for (uint16_t i = 0; i < n; i++) {
    // The ICRC of the frame from its source, long in the cache (not from the
    // bytes just stored, which the fold's loads would wait for): the floor.
    // DoNotOptimize: computed for every frame, as a stack must (its PSNs
    // differ), not once for all.
    const uint8_t* src = frame;
    benchmark::DoNotOptimize(src);
    const uint32_t c = wire::ComputeIcrc(wire::ByteSpan(src + 14, len - 14u - 4u));
    uint8_t* d = rte_pktmbuf_mtod(m[i], uint8_t*);
    std::memcpy(d, src, len - 4u);
    wire::Store32Le(d + len - 4, c);  // as WriteFrame stores it
  }
}
inline uint64_t CheckFrames(rte_mbuf* const* m, uint16_t n, uint16_t len) {
  uint64_t bad = 0;
  for (uint16_t i = 0; i < n; i++) {
    const uint8_t* d = rte_pktmbuf_mtod(m[i], const uint8_t*);
    bad += m[i]->data_len != len ||
           wire::ComputeIcrc(wire::ByteSpan(d + 14, len - 14u - 4u)) != wire::Load32Le(d + len - 4);
  }
  return bad;
}
}  // namespace internal

// Raw rte_eth_tx_burst / rx_burst of 64 B frames, burst 32 (the engine's),
// over a ring pair: a -> b in this thread, or (cross_core) transmitted by this
// thread and received by another one — the packet rate the ring allows.
// `frame` (optional, `frame_len` bytes from its Ethernet header, its ICRC in
// the last 4): the floor of any RoCE software stack's frame rate instead of the
// raw ring's. The sender copies the frame into each mbuf and computes its ICRC
// into it (`wire::ComputeIcrc` over bytes [14, frame_len - 4)), the receiver
// computes it again and compares; what neither side can skip, and nothing of a
// protocol (no queue pair, no ACK, no completion). Frames received with a
// wrong ICRC are counted in *bad.
inline Measured RingPairRaw(benchmark::State& st, port::Port& a, port::Port& b, bool cross_core,
                            const uint8_t* frame = nullptr, uint16_t frame_len = 0, uint64_t* bad = nullptr) {
  const uint16_t len = frame ? frame_len : 64;
  std::atomic<uint64_t> rx_bad{0};
  constexpr uint16_t kBurst = 32;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> received{0};
  std::thread rx_thread;
  if (cross_core) {
    rx_thread = std::thread([&] {
      rte_mbuf* rx[kBurst];
      uint64_t got = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        const uint16_t k = rte_eth_rx_burst(b.id(), 0, rx, kBurst);
        if (k) {
          if (frame) rx_bad.fetch_add(internal::CheckFrames(rx, k, len), std::memory_order_relaxed);
          rte_pktmbuf_free_bulk(rx, k);
          got += k;
          received.store(got, std::memory_order_relaxed);
        }
      }
    });
  }
  rte_mbuf* tx[kBurst];
  rte_mbuf* rx[kBurst];
  uint64_t sent = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : st) {
    if (rte_pktmbuf_alloc_bulk(a.pool(), tx, kBurst) != 0) {
      if (!cross_core) {
        st.SkipWithError("pool empty");
        break;
      }
      continue;  // the receiver is behind: it frees some (items count what it received)
    }
    for (rte_mbuf* m : tx) rte_pktmbuf_append(m, len);
    if (frame) internal::WriteFrames(tx, kBurst, frame, len);
    uint16_t n = 0;
    while (n < kBurst) {
      n += rte_eth_tx_burst(a.id(), 0, tx + n, kBurst - n);
      if (!cross_core && n < kBurst) break;
    }
    for (uint16_t i = n; i < kBurst; i++) rte_pktmbuf_free(tx[i]);
    sent += n;
    if (!cross_core) {
      uint16_t got = 0;
      while (got < n) {
        const uint16_t k = rte_eth_rx_burst(b.id(), 0, rx, kBurst);
        if (k && frame) rx_bad.fetch_add(internal::CheckFrames(rx, k, len), std::memory_order_relaxed);
        if (k) rte_pktmbuf_free_bulk(rx, k);
        got += k;
      }
    }
  }
  const double secs = SecondsSince(t0);
  const uint64_t received_in_time = received.load(std::memory_order_relaxed);
  if (cross_core) {
    stop = true;
    rx_thread.join();
    // Frames still in the ring when timing stopped were not received.
    rte_mbuf* m[kBurst];
    while (uint16_t k = rte_eth_rx_burst(b.id(), 0, m, kBurst)) rte_pktmbuf_free_bulk(m, k);
    if (bad) *bad = rx_bad.load();
    st.SetItemsProcessed(static_cast<int64_t>(received_in_time));
    return {secs, static_cast<double>(received_in_time)};
  }
  if (bad) *bad = rx_bad.load();
  st.SetItemsProcessed(static_cast<int64_t>(sent));
  return {secs, static_cast<double>(sent)};
}

// One core copying `n` bytes (page-aligned buffers, as nd2_bench's).
inline Measured Memcpy(benchmark::State& st, size_t n) {
  const PageBuf a(n, 1), b(n, 0);
  if (a.size() != n || b.size() != n) {
    st.SkipWithError("out of memory");
    return {0, 0};
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : st) {
    std::memcpy(b.data(), a.data(), n);
    benchmark::ClobberMemory();
  }
  const double secs = SecondsSince(t0);
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(n));
  return {secs, static_cast<double>(st.iterations()) * static_cast<double>(n)};
}

// The floor of an RC round trip in software over a ring pair, in one thread:
// each side in turn sends two frames in one burst, its ACK of the message it
// received and its own message (a -> b, then b -> a: one iteration, one round
// trip, four frames), each written with its ICRC (as RingPairRaw's frames);
// the other side receives both, checks their ICRCs and copies the message's
// payload (its last `payload` bytes before the ICRC) out. Nothing of a
// protocol: no queue pair, no completion, no timer. Frames with a wrong ICRC
// are counted in *bad.
inline Measured RingPingPongFrames(benchmark::State& st, port::Port& a, port::Port& b, const uint8_t* msg,
                                   uint16_t msg_len, uint16_t payload, const uint8_t* ack, uint16_t ack_len,
                                   uint64_t* bad) {
  port::Port* side[2] = {&a, &b};
  uint8_t sink[64] = {};
  uint64_t wrong = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : st) {
    for (int i = 0; i < 2; i++) {
      port::Port& from = *side[i];
      port::Port& to = *side[1 - i];
      rte_mbuf* m[2];
      if (rte_pktmbuf_alloc_bulk(from.pool(), m, 2) != 0) {
        st.SkipWithError("pool empty");
        return {};
      }
      rte_pktmbuf_append(m[0], ack_len);
      rte_pktmbuf_append(m[1], msg_len);
      internal::WriteFrames(m, 1, ack, ack_len);
      internal::WriteFrames(m + 1, 1, msg, msg_len);
      // In-process rings lose nothing; bounded all the same (a broken ring
      // fails the benchmark rather than hanging it).
      uint16_t n = 0, got = 0;
      rte_mbuf* rx[2];
      for (uint32_t spin = 0; n < 2 && spin < (1u << 24); spin++)
        n += rte_eth_tx_burst(from.id(), 0, m + n, static_cast<uint16_t>(2 - n));
      for (uint32_t spin = 0; got < n && spin < (1u << 24); spin++)
        got += rte_eth_rx_burst(to.id(), 0, rx + got, static_cast<uint16_t>(n - got));
      if (n < 2 || got < 2) {
        if (n < 2) rte_pktmbuf_free_bulk(m + n, 2 - n);
        if (got) rte_pktmbuf_free_bulk(rx, got);
        st.SkipWithError("a frame did not come through the ring pair");
        return {};
      }
      for (rte_mbuf* r : rx) {
        wrong += internal::CheckFrames(&r, 1, r->data_len);
        if (r->data_len == msg_len)
          std::memcpy(sink, rte_pktmbuf_mtod_offset(r, const uint8_t*, msg_len - 4 - payload), payload);
      }
      benchmark::DoNotOptimize(sink);
      rte_pktmbuf_free_bulk(rx, 2);
    }
  }
  const double secs = SecondsSince(t0);
  *bad = wrong;
  st.SetItemsProcessed(st.iterations());
  return {secs, static_cast<double>(st.iterations())};
}

// An 8 B ping-pong over kernel TCP loopback, both ends in this thread (write,
// read on the other end, write back, read).
inline Measured KernelTcpLoopbackPingPong(benchmark::State& st) {
  const int ls = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sl = sizeof sa;
  if (bind(ls, reinterpret_cast<sockaddr*>(&sa), sl) != 0 || listen(ls, 1) != 0 ||
      getsockname(ls, reinterpret_cast<sockaddr*>(&sa), &sl) != 0)
    return st.SkipWithError("socket"), Measured{};
  const int c = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(c, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return st.SkipWithError("connect"), Measured{};
  const int s = accept(ls, nullptr, nullptr);
  const int one = 1;
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char m[8] = {};
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : st) {
    if (write(c, m, 8) != 8 || read(s, m, 8) != 8 || write(s, m, 8) != 8 || read(c, m, 8) != 8) {
      st.SkipWithError("io");
      break;
    }
  }
  const double secs = SecondsSince(t0);
  close(c);
  close(s);
  close(ls);
  st.SetItemsProcessed(st.iterations());
  return {secs, static_cast<double>(st.iterations())};
}

}  // namespace roce::bench
