// SPDX-License-Identifier: MIT
// Two stacks in one process over a net_ring pair: real mbufs, real ARP/NDP,
// Send / Write / Read / SendWithInvalidate up to 1 MB at path MTU 4096 with
// 2 KB mbufs (so every data frame is a chain both ways), IPv4 and IPv6, a
// capture checked by roce-pcap and tshark, loss injected by the port with
// recovery, and the dedicated polling thread.
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <rte_log.h>

#include "absl/strings/match.h"

#include "stack/engine/engine.h"
#include "stack/mem/memory_table.h"
#include "stack/mem/place.h"
#include "stack/pcap/pcap_file.h"
#include "stack/wire/packet.h"
#include "tests/port/port_test_env.h"
#include "tests/support/test_support.h"
#include "tools/lib/two_stacks.h"

namespace roce::engine {
namespace {

using rc::Completion;
using rc::Sge;
using rc::Status;
using rc::WrOp;

class EngineRing : public ::testing::Test {
 protected:
  // The two stacks of the tools (tools/lib/two_stacks.h) over the net_ring
  // `ring`: each side's MAC resolved over the ring (real ARP/NDP), one QP each
  // connected. Side a is h(0), side b h(1).
  static tools::TwoStacksOptions Options(const std::string& ring, bool ipv6 = false, uint32_t mtu = 4096) {
    tools::TwoStacksOptions o;
    o.ring = ring;
    o.ipv6 = ipv6;
    o.path_mtu = mtu;
    o.mem_seed = 5;
    o.cq_depth = 1024;
    o.caps.sq_depth = 64;
    o.caps.rq_depth = 64;
    o.caps.max_send_sge = 4;
    return o;
  }
  // A NIC's receive layout on both ports (rx_copy), with a `corrupt` share of
  // the frames each side receives corrupted after the copy (fault seeds
  // `seed` for b, `seed` + 1 for a).
  static tools::TwoStacksOptions CorruptedNicLayout(const std::string& ring, double corrupt, uint64_t seed) {
    tools::TwoStacksOptions o = Options(ring);
    o.rx_copy = true;
    port::FaultConfig f;
    f.rx.corrupt = corrupt;
    f.seed = seed;
    o.faults_b = f;
    f.seed = seed + 1;
    o.faults = f;
    return o;
  }
  void Open(const tools::TwoStacksOptions& o) {
    auto t = tools::TwoStacks::Open(o);
    ASSERT_TRUE(t.ok()) << t.status();
    ts_ = std::move(*t);
    // The path each QP was given carries the other side's MAC, as resolved.
    EXPECT_EQ(h(0).qp->attr().path.eth.dst, h(1).port->mac());
    EXPECT_EQ(h(1).qp->attr().path.eth.dst, h(0).port->mac());
  }
  void TearDown() override { ts_.reset(); }
  // Writes, Sends and Reads (TransfersLandExactly, seeds from `seed`) in each
  // of PlaceInOrderCrc32's codes, every 4 KB payload arriving cut by a segment
  // boundary (copied together as its ICRC is checked); ICRC errors counted
  // only if the ports corrupt frames.
  void CutPayloadsLandExactly(uint64_t seed, bool corrupted);
  tools::TwoStacks::Side& h(int i) { return i ? ts_->b() : ts_->a(); }
  // Polls both engines (those not running their own thread) until `n` completions are in `cq` (or ~10 s).
  std::vector<Completion> WaitFor(rc::CompletionQueue& cq, size_t n) { return ts_->Wait(cq, n); }
  mem::RegionInfo Reg(tools::TwoStacks::Side& x, std::vector<uint8_t>& b, uint32_t access) {
    mem::Result res;
    const mem::RegionInfo r = ts_->Register(x, b.data(), b.size(), access, &res);
    EXPECT_EQ(res, mem::Result::kOk);
    return r;
  }
  rc::PostResult Post(tools::TwoStacks::Side& x, const rc::SendWr& w) { return ts_->Post(x, w); }
  rc::PostResult PostRecv(tools::TwoStacks::Side& x, const rc::RecvWr& w) { return ts_->PostRecv(x, w); }
  // Send, Write, Read and SendWithInvalidate of `size` bytes from a to b, checked byte for byte.
  void RunAllOps(uint32_t size) {
    const size_t cap = size ? size : 1;  // a region cannot be empty
    std::vector<uint8_t> src(cap), recv(size + 16), target(cap), sink(cap);
    for (size_t i = 0; i < size; i++) src[i] = static_cast<uint8_t>(i * 13 + size);
    auto sr = Reg(h(0), src, 0);
    auto kr = Reg(h(0), sink, mem::kLocalWrite);
    auto rr = Reg(h(1), recv, mem::kLocalWrite);
    auto tr = Reg(h(1), target, mem::kLocalWrite | mem::kRemoteRead | mem::kRemoteWrite);
    // A window over the target for SendWithInvalidate, bound through b's QP.
    uint32_t mw, tok;
    {
      roce::engine::EngineLock l(&h(1).eng->mu());
      mem::MemoryTable& m = h(1).eng->rc().memory();
      ASSERT_EQ(m.CreateWindow(&mw), mem::Result::kOk);
      tok = m.AllocateWindowToken(mw);
    }
    rc::SendWr bind;
    bind.op = WrOp::kBind;
    bind.mw = mw;
    bind.mr = tr.handle;
    bind.bind_addr = reinterpret_cast<uint64_t>(target.data());
    bind.bind_length = size ? size : 1;
    bind.bind_access = mem::kRemoteRead;
    bind.bind_token = tok;
    ASSERT_EQ(Post(h(1), bind), rc::PostResult::kOk);
    auto bc = WaitFor(*h(1).scq, 1);
    ASSERT_EQ(bc.size(), 1u);
    ASSERT_EQ(bc[0].status, Status::kSuccess);

    Sge rs{reinterpret_cast<uint64_t>(recv.data()), size + 16, rr.local_token};
    rc::RecvWr r1{1, &rs, 1};
    ASSERT_EQ(PostRecv(h(1), r1), rc::PostResult::kOk);
    Sge ss{reinterpret_cast<uint64_t>(src.data()), size, sr.local_token};
    rc::SendWr w;
    w.sge = &ss;
    w.num_sge = 1;
    w.context = 10;
    w.op = WrOp::kSend;
    ASSERT_EQ(Post(h(0), w), rc::PostResult::kOk);
    w.context = 11;
    w.op = WrOp::kWrite;
    w.remote_addr = reinterpret_cast<uint64_t>(target.data());
    w.rkey = tr.remote_token;
    ASSERT_EQ(Post(h(0), w), rc::PostResult::kOk);
    Sge ks{reinterpret_cast<uint64_t>(sink.data()), size, kr.local_token};
    rc::SendWr rd = w;
    rd.context = 12;
    rd.op = WrOp::kRead;
    rd.sge = &ks;
    rd.rkey = tok;  // through the window
    ASSERT_EQ(Post(h(0), rd), rc::PostResult::kOk);
    rc::RecvWr r2{2, &rs, 1};
    ASSERT_EQ(PostRecv(h(1), r2), rc::PostResult::kOk);
    rc::SendWr inv = w;
    inv.context = 13;
    inv.op = WrOp::kSendWithInvalidate;
    inv.invalidate_rkey = tok;
    inv.flags = rc::kReadFence;
    ASSERT_EQ(Post(h(0), inv), rc::PostResult::kOk);
    auto sc = WaitFor(*h(0).scq, 4);
    ASSERT_EQ(sc.size(), 4u);
    for (size_t i = 0; i < 4; i++) {
      EXPECT_EQ(sc[i].status, Status::kSuccess) << i << " " << rc::CauseName(sc[i].cause);
      EXPECT_EQ(sc[i].request_context, 10 + i);
    }
    auto rcv = WaitFor(*h(1).rcq, 2);
    ASSERT_EQ(rcv.size(), 2u);
    EXPECT_EQ(rcv[0].bytes, size);
    EXPECT_FALSE(rcv[0].with_inv);
    EXPECT_TRUE(rcv[1].with_inv);
    EXPECT_EQ(rcv[1].inv_rkey, tok);
    EXPECT_EQ(0, memcmp(src.data(), recv.data(), size));
    EXPECT_EQ(0, memcmp(src.data(), target.data(), size));
    EXPECT_EQ(0, memcmp(src.data(), sink.data(), size));
    {  // the window was invalidated remotely
      roce::engine::EngineLock l(&h(1).eng->mu());
      EXPECT_NE(h(1).eng->rc().memory().CheckRemote(tok, reinterpret_cast<uint64_t>(target.data()), 1,
                                                    mem::kRemoteRead),
                mem::Result::kOk);
      h(1).eng->rc().memory().DestroyWindow(mw);
      for (auto* reg : {&rr, &tr}) h(1).eng->rc().memory().DeregisterRegion(reg->handle);
    }
    roce::engine::EngineLock l(&h(0).eng->mu());
    for (auto* reg : {&sr, &kr}) h(0).eng->rc().memory().DeregisterRegion(reg->handle);
  }
  std::unique_ptr<tools::TwoStacks> ts_;
};

TEST_F(EngineRing, ArpAndNdpResolveOverTheRing) {
  ASSERT_NO_FATAL_FAILURE(Open(Options("eng_arp")));
  const auto& n0 = h(0).eng->neighbors().counters();
  EXPECT_GE(n0.arp_requests_tx, 1u);
  EXPECT_GE(h(1).eng->neighbors().counters().arp_replies_tx, 1u);
}

TEST_F(EngineRing, AllOperationsUpTo1MBInChainedMbufs) {
  for (bool zero_copy : {true, false}) {
    SCOPED_TRACE(zero_copy ? "zero-copy" : "copied");
    auto o = Options(zero_copy ? "eng_ops_zc" : "eng_ops");
    if (!zero_copy) o.zero_copy_min = 0;
    ASSERT_NO_FATAL_FAILURE(Open(o));
    EXPECT_TRUE(h(0).port->zero_copy_tx());
    for (uint32_t size : {0u, 1u, 4096u, 4097u, 65536u, 1u << 20}) {
      SCOPED_TRACE(size);
      RunAllOps(size);
    }
    // Every 4 KB frame took two or more mbufs each way. Zero-copy: header |
    // payload attached to registered memory | pad + ICRC, received without a
    // copy (the ICRC checked over the segments, the payload placed from its
    // segment). Copied: header + payload in 2 KB segments, whose payload a
    // segment boundary cuts: that payload (not the frame) is copied together.
    const EngineCounters ca = h(0).eng->counters(), cb = h(1).eng->counters();
    if (zero_copy) {
      EXPECT_GT(ca.tx_zero_copy, 100u);  // Send/Write requests
      EXPECT_GT(cb.tx_zero_copy, 100u);  // Read responses
      EXPECT_EQ(cb.rx_linearized, 0u);
      EXPECT_EQ(ca.rx_linearized, 0u);
    } else {
      EXPECT_EQ(ca.tx_zero_copy + cb.tx_zero_copy, 0u);
      EXPECT_GT(cb.rx_linearized, 100u);
    }
    EXPECT_EQ(h(0).eng->rc().counters.IcrcErrors(), 0u);
    EXPECT_EQ(h(1).eng->rc().counters.IcrcErrors(), 0u);
    // A lossless ring: nothing arrives out of sequence, so nothing is NAKed
    // or repaired. A resend can only come from a timer (a timeout, a Read
    // or tail probe after a round trip or two without an answer), which a
    // stall of this polling thread on a loaded machine can fire.
    for (int i = 0; i < 2; i++) {
      const rc::QpCounters& c = h(i).qp->counters;
      EXPECT_EQ(c.out_of_sequence, 0u) << i;
      EXPECT_EQ(c.seq_naks_sent + c.seq_naks_received + c.repairs, 0u) << i;
      if (c.retransmits) {
        EXPECT_GT(c.timeouts + c.read_probes + c.tail_probes, 0u)
            << i << ": " << c.retransmits << " resent without a timer";
      }
    }
    ts_.reset();
  }
}

// Zero-copy frames point into the application's memory. Deregistering it
// while such frames are still in flight (in the ring, unread by the peer, or
// in the sender's TX backlog) revokes them: the peer drops them unread, so the
// memory may be unmapped at once. The Write then fails (its source is gone),
// and nothing of it reaches the target after the deregistration.
TEST_F(EngineRing, DeregisteringRevokesZeroCopyFramesInFlight) {
  ASSERT_NO_FATAL_FAILURE(Open(Options("eng_zcrev")));
  const size_t n = 1 << 20;
  void* mem = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* src = static_cast<uint8_t*>(mem);
  std::memset(src, 0xA5, n);
  std::vector<uint8_t> target(n, 0);
  mem::Result res;
  const auto sr = ts_->Register(h(0), src, n, 0, &res);
  ASSERT_EQ(res, mem::Result::kOk);
  auto tr = Reg(h(1), target, mem::kLocalWrite | mem::kRemoteWrite);
  Sge s{reinterpret_cast<uint64_t>(src), static_cast<uint32_t>(n), sr.local_token};
  rc::SendWr w;
  w.op = WrOp::kWrite;
  w.sge = &s;
  w.num_sge = 1;
  w.remote_addr = reinterpret_cast<uint64_t>(target.data());
  w.rkey = tr.remote_token;
  // Each engine logs a cause of drops the first time it counts it.
  char* log = nullptr;
  size_t log_len = 0;
  FILE* log_stream = open_memstream(&log, &log_len);
  ASSERT_NE(log_stream, nullptr);
  FILE* const old_stream = rte_log_get_stream();
  rte_openlog_stream(log_stream);
  ASSERT_EQ(Post(h(0), w), rc::PostResult::kOk);
  // Only the sender runs: its frames wait in the ring (and its backlog).
  for (int i = 0; i < 4; i++) h(0).eng->Poll();
  const uint64_t sent = h(0).eng->counters().tx_zero_copy;
  EXPECT_GT(sent, 64u);
  ts_->Deregister(h(0), sr);
  ASSERT_EQ(munmap(mem, n), 0);  // any later read of it would fault
  const auto c = WaitFor(*h(0).scq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, Status::kAccessViolation);
  const EngineCounters cb = h(1).eng->counters();
  const EngineCounters ca = h(0).eng->counters();
  EXPECT_GT(cb.rx_zc_revoked + ca.tx_zc_revoked, 0u);
  rte_openlog_stream(old_stream);
  std::fclose(log_stream);
  const std::string logged(log, log_len);
  std::free(log);
  // One line per engine and cause (the sender's revoked TX, the receiver's revoked RX), however many frames.
  EXPECT_EQ(absl::StrContains(logged, "stats tx_zc_revoked;"), ca.tx_zc_revoked > 0) << logged;
  EXPECT_EQ(absl::StrContains(logged, "stats rx_zc_revoked;"), cb.rx_zc_revoked > 0) << logged;
  for (const char* cause : {"tx_zc_revoked;", "rx_zc_revoked;"}) {
    size_t lines = 0;
    for (size_t at = logged.find(cause); at != std::string::npos; at = logged.find(cause, at + 1)) lines++;
    EXPECT_LE(lines, 1u) << cause << " logged more than once:\n" << logged;
  }
  // What the peer placed came before the deregistration: whole packets of the source.
  size_t placed = 0;
  while (placed < n && target[placed] == 0xA5) placed++;
  EXPECT_EQ(placed % 4096, 0u);
  for (size_t i = placed; i < n; i++) ASSERT_EQ(target[i], 0) << i;
  EXPECT_EQ(h(1).eng->rc().counters.IcrcErrors(), 0u);
}

// Telemetry exports every per-QP counter (the list in rc/qp.h), with its value.
TEST_F(EngineRing, TelemetryExportsEveryQpAndEngineCounter) {
  ASSERT_NO_FATAL_FAILURE(Open(Options("eng_tel")));
  RunAllOps(4096);
  roce::engine::EngineLock l(&h(0).eng->mu());
  auto v = port::QueryTelemetry("qp", h(0).eng->QpTelemetryId(h(0).qp->qpn()));
  // Both sides' QPs are registered (the same QPN on two ports).
  EXPECT_TRUE(port::QueryTelemetry("qp", h(1).eng->QpTelemetryId(h(1).qp->qpn())).ok());
  ASSERT_TRUE(v.ok()) << v.status();
  size_t n = 0;
  h(0).qp->counters.ForEach([&](const char* name, uint64_t value) {
    n++;
    auto it = v->u64.find(name);
    ASSERT_NE(it, v->u64.end()) << name << " is not exported";
    EXPECT_EQ(it->second, value) << name;
  });
  EXPECT_EQ(v->u64.size(), n);  // and nothing else
  EXPECT_GT(v->u64.at("tx_packets"), 0u);
  EXPECT_EQ(v->str.at("state"), "rts");
  // And the engine's: every counter of its list (stack/engine/engine.h), with its value.
  auto e = port::QueryTelemetry("engine", h(0).port->id());
  ASSERT_TRUE(e.ok()) << e.status();
  size_t m = 0;
  h(0).eng->counters().ForEach([&](const char* name, uint64_t value) {
    m++;
    auto it = e->u64.find(name);
    ASSERT_NE(it, e->u64.end()) << name << " is not exported";
    EXPECT_EQ(it->second, value) << name;
  });
  EXPECT_GE(m, 17u);
  EXPECT_GT(e->u64.at("tx_roce"), 0u);
}

TEST_F(EngineRing, Ipv6) {
  ASSERT_NO_FATAL_FAILURE(Open(Options("eng_v6", true, 1024)));
  RunAllOps(100000);
  EXPECT_GT(h(0).eng->neighbors().counters().ns_tx, 0u);
}

TEST_F(EngineRing, CaptureDecodesAndVerifies) {
  const std::string path = roce::testing::OutputDir("engine") + "/ring-capture.pcap";
  tools::TwoStacksOptions o = Options("eng_cap");
  o.capture_a = path;  // from before the ARP exchange
  ASSERT_NO_FATAL_FAILURE(Open(o));
  RunAllOps(10000);
  h(0).port->StopCapture();
  std::string out;
  ASSERT_EQ(roce::testing::Run(std::string(ROCE_BUILD_DIR) + "/tools/roce-pcap check " + path, &out), 0) << out;
  auto lines = roce::testing::Lines(out);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find(" 0 bad"), std::string::npos) << lines.back();
  ASSERT_EQ(roce::testing::Run("tshark -n -r " + path +
                                   " -Y '_ws.malformed || _ws.expert.severity >= 0x00600000' 2>/dev/null",
                               &out),
            0);
  EXPECT_EQ(out, "");
  ASSERT_EQ(roce::testing::Run("tshark -n -r " + path + " -Y arp 2>/dev/null | wc -l", &out), 0);
  EXPECT_GE(std::stoi(out), 2);  // request and reply
}

TEST_F(EngineRing, RecoversFromLossInjectedByThePort) {
  port::FaultConfig f;
  f.seed = 3;
  f.rx.drop = 0.02;
  f.tx.drop = 0.02;
  tools::TwoStacksOptions o = Options("eng_loss", false, 1024);
  o.faults = f;
  o.faults_b = f;
  ASSERT_NO_FATAL_FAILURE(Open(o));
  for (int i = 0; i < 3; i++) RunAllOps(200000);
  uint64_t retrans = h(0).qp->counters.retransmits + h(1).qp->counters.retransmits;
  uint64_t naks = h(0).qp->counters.seq_naks_received + h(0).qp->counters.implied_naks +
                  h(0).qp->counters.timeouts;
  EXPECT_GT(retrans, 0u);
  EXPECT_GT(naks, 0u);
  EXPECT_GT(h(0).port->Stats().tx_faults.dropped + h(0).port->Stats().rx_faults.dropped, 0u);
}

// RDMA Write, Send and Read Response Middle packets are placed as their ICRC
// is computed (one pass, mem::PlaceInOrderCrc32) and checked only then.
// TransfersLandExactly: four 256 KB Writes (or Sends into a receive of
// exactly that size) from a into the middle of a buffer on b, or Reads by a
// of a buffer on b into the middle of a buffer on a, each compared whole, and
// the target buffer's bytes around it untouched; returns the target side's
// device counters over them.
enum class Xfer { kWrite, kSend, kRead };
const char* XferName(Xfer x) { return x == Xfer::kWrite ? "Write" : x == Xfer::kSend ? "Send" : "Read"; }

rc::DeviceCounters TransfersLandExactly(tools::TwoStacks& ts, uint64_t seed_bytes, Xfer x) {
  constexpr size_t kGuard = 4096, kLen = 256 * 1024;
  const bool read = x == Xfer::kRead;
  tools::TwoStacks::Side& from = read ? ts.b() : ts.a();  // where the bytes are
  tools::TwoStacks::Side& to = read ? ts.a() : ts.b();    // where they land
  std::vector<uint8_t> src(kLen), target(kLen + 2 * kGuard, 0xEE);
  mem::RegionInfo sr, tr;
  rc::DeviceCounters d;
  {
    roce::engine::EngineLock l(&from.eng->mu());
    EXPECT_EQ(from.eng->rc().memory().RegisterRegion(reinterpret_cast<uint64_t>(src.data()), src.size(),
                                                     read ? static_cast<uint32_t>(mem::kRemoteRead) : 0u, &sr),
              mem::Result::kOk);
  }
  {
    roce::engine::EngineLock l(&to.eng->mu());
    EXPECT_EQ(to.eng->rc().memory().RegisterRegion(reinterpret_cast<uint64_t>(target.data()), target.size(),
                                                   mem::kLocalWrite | mem::kRemoteWrite, &tr),
              mem::Result::kOk);
    d = to.eng->rc().counters;
  }
  for (int round = 0; round < 4; round++) {
    for (size_t i = 0; i < kLen; i++) src[i] = static_cast<uint8_t>((i * 7 + round * 31 + seed_bytes) >> 2);
    Sge into{reinterpret_cast<uint64_t>(target.data() + kGuard), static_cast<uint32_t>(kLen), tr.local_token};
    if (x == Xfer::kSend) {
      rc::RecvWr r{static_cast<uint64_t>(200 + round), &into, 1};
      EXPECT_EQ(ts.PostRecv(ts.b(), r), rc::PostResult::kOk);
    }
    Sge s{reinterpret_cast<uint64_t>(src.data()), static_cast<uint32_t>(kLen), sr.local_token};
    rc::SendWr w;
    w.sge = read ? &into : &s;
    w.num_sge = 1;
    w.context = 100 + round;
    w.op = x == Xfer::kWrite ? WrOp::kWrite : x == Xfer::kSend ? WrOp::kSend : WrOp::kRead;
    w.remote_addr = read ? reinterpret_cast<uint64_t>(src.data()) : reinterpret_cast<uint64_t>(target.data() + kGuard);
    w.rkey = read ? sr.remote_token : tr.remote_token;
    EXPECT_EQ(ts.Post(ts.a(), w), rc::PostResult::kOk);
    auto c = ts.Wait(*ts.a().scq, 1);
    EXPECT_EQ(c.size(), 1u);
    if (c.size() != 1) break;
    EXPECT_EQ(c[0].status, Status::kSuccess) << rc::CauseName(c[0].cause);
    if (x == Xfer::kSend) {
      auto rcv = ts.Wait(*ts.b().rcq, 1);
      EXPECT_EQ(rcv.size(), 1u);
      if (rcv.size() != 1) break;
      EXPECT_EQ(rcv[0].status, Status::kSuccess);
      EXPECT_EQ(rcv[0].bytes, kLen);
    }
    EXPECT_EQ(0, memcmp(src.data(), target.data() + kGuard, kLen)) << "round " << round;
    size_t outside = 0;
    for (size_t i = 0; i < kGuard; i++) outside += (target[i] != 0xEE) + (target[kGuard + kLen + i] != 0xEE);
    EXPECT_EQ(outside, 0u) << "bytes changed around the target, round " << round;
  }
  {
    roce::engine::EngineLock l(&to.eng->mu());
    const rc::DeviceCounters& now = to.eng->rc().counters;
    d.rx_frames = now.rx_frames - d.rx_frames;
    for (size_t i = 0; i < static_cast<size_t>(wire::Error::kCount); i++) d.rx_errors[i] = now.rx_errors[i] - d.rx_errors[i];
    d.rx_placed_in_pass = now.rx_placed_in_pass - d.rx_placed_in_pass;
    d.rx_placed_dropped = now.rx_placed_dropped - d.rx_placed_dropped;
    to.eng->rc().memory().DeregisterRegion(tr.handle);
  }
  {
    roce::engine::EngineLock l(&from.eng->mu());
    from.eng->rc().memory().DeregisterRegion(sr.handle);
  }
  return d;
}

// A bit of 5% of the frames the target side receives flipped (b's for Writes
// and Sends, a's for Reads): the Middles whose ICRC turned out bad after they
// were placed are dropped, sent again, and every Write, Send and Read still
// lands whole and only where it was aimed. (The port copies a frame before it
// flips a bit, so these arrive in one segment.) Then the same with the
// two-pass code (the ICRC first): nothing placed in pass.
TEST_F(EngineRing, MiddlesPlacedAsTheirIcrcIsComputedSurviveCorruption) {
  mem::SetPlaceCrcOnePass(true);
  if (!mem::PlaceCrcOnePass()) ROCE_SKIP_ALLOWED("this CPU has no AVX-512 VPCLMULQDQ: the ICRC is checked first");
  port::FaultConfig f;
  f.seed = 9;
  f.rx.corrupt = 0.05;
  tools::TwoStacksOptions o = Options("eng_corrupt", false, 1024);
  o.faults_b = f;
  f.seed = 10;
  o.faults = f;  // a's receive side: the Read responses
  ASSERT_NO_FATAL_FAILURE(Open(o));
  uint64_t seed = 1;
  for (Xfer x : {Xfer::kWrite, Xfer::kSend, Xfer::kRead}) {
    SCOPED_TRACE(XferName(x));
    rc::DeviceCounters d = TransfersLandExactly(*ts_, seed++, x);
    EXPECT_GT(d.IcrcErrors(), 0u);
    // Some of the 4 x 254 Middles came in sequence and were placed in pass.
    // Only a run before the first corrupted one of a message, or after its
    // repair while the rest is still arriving, does: past a missing packet
    // the target keeps what follows out of order, verified first, and the
    // whole 256 KB is in flight before the repair. At this seed an unhurried
    // run places 106 / 123 / 61 (Write / Send / Read) in pass; a run whose
    // timers fire elsewhere (ASan, two tests on two cores) draws the faults
    // for other frames: one placed 13 for the Reads.
    EXPECT_GT(d.rx_placed_in_pass, 0u);
    EXPECT_GT(d.rx_placed_dropped, 0u);
    EXPECT_LT(d.rx_placed_dropped, d.IcrcErrors() + 1);
  }
  EXPECT_GT(h(0).port->Stats().rx_faults.corrupted, 0u);
  EXPECT_GT(h(1).port->Stats().rx_faults.corrupted, 0u);
  mem::SetPlaceCrcOnePass(false);
  for (Xfer x : {Xfer::kWrite, Xfer::kSend, Xfer::kRead}) {
    SCOPED_TRACE(std::string(XferName(x)) + ", two passes");
    rc::DeviceCounters d = TransfersLandExactly(*ts_, seed++, x);
    EXPECT_GT(d.IcrcErrors(), 0u);
    EXPECT_EQ(d.rx_placed_in_pass, 0u);
    EXPECT_EQ(d.rx_placed_dropped, 0u);
  }
  mem::SetPlaceCrcOnePass(true);
}

// Without faults, from the zero-copy sender: each Middle's payload is a
// segment of its own (header | payload | pad + ICRC), placed in one pass
// from there; at MTU 4096, 62 of every 256 KB message's 64 packets (for a
// Read, its 62 Read Response Middles and its Last, sent by b's responder:
// 63; a Write's Last is not, its last byte may be polled).
TEST_F(EngineRing, MiddlesPlacedInOnePassFromAZeroCopyChain) {
  mem::SetPlaceCrcOnePass(true);
  if (!mem::PlaceCrcOnePass()) ROCE_SKIP_ALLOWED("this CPU has no AVX-512 VPCLMULQDQ: the ICRC is checked first");
  ASSERT_NO_FATAL_FAILURE(Open(Options("eng_inpass")));
  uint64_t seed = 3;
  for (Xfer x : {Xfer::kWrite, Xfer::kSend, Xfer::kRead}) {
    SCOPED_TRACE(XferName(x));
    const bool read = x == Xfer::kRead;
    const uint64_t zc0 = h(read ? 1 : 0).eng->counters().tx_zero_copy;
    rc::DeviceCounters d = TransfersLandExactly(*ts_, seed++, x);
    EXPECT_GE(h(read ? 1 : 0).eng->counters().tx_zero_copy - zc0, 4u * 64);
    EXPECT_EQ(d.IcrcErrors(), 0u);
    EXPECT_EQ(d.rx_placed_in_pass, read ? 4u * 63 : 4u * 62);
    EXPECT_EQ(d.rx_placed_dropped, 0u);
  }
}

void EngineRing::CutPayloadsLandExactly(uint64_t seed, bool corrupted) {
  for (bool one_pass : {true, false}) {
    mem::SetPlaceCrcOnePass(one_pass);
    for (Xfer x : {Xfer::kWrite, Xfer::kSend, Xfer::kRead}) {
      SCOPED_TRACE(std::string(XferName(x)) + (one_pass ? "" : ", two passes"));
      engine::Engine& rx = *h(x == Xfer::kRead ? 0 : 1).eng;
      const uint64_t lin0 = rx.counters().rx_linearized;
      rc::DeviceCounters d = TransfersLandExactly(*ts_, seed++, x);
      if (corrupted) EXPECT_GT(d.IcrcErrors(), 0u);
      else EXPECT_EQ(d.IcrcErrors(), 0u);
      EXPECT_GE(rx.counters().rx_linearized - lin0, 4u * 64);
    }
  }
  mem::SetPlaceCrcOnePass(true);
}

// Copied chains, as every port but a ring pair or a CPU-reading vdev sends
// payloads: the sender copies each payload into the chain as its CRC is
// folded (Engine::CopyPayloadCrc), the receiver copies a payload that a
// segment boundary cuts (2 KB mbufs, 4 KB payloads) together as it checks
// the ICRC (Engine::IcrcLinearizePayload); with PlaceInOrderCrc32's one pass
// and with its two. The bytes land exactly, and every RoCE frame of the
// capture carries the ICRC that an independent zlib computation gives.
TEST_F(EngineRing, CopiedChainsCarryTheIcrcAnIndependentCrcGives) {
  const std::string path = roce::testing::OutputDir("engine") + "/copied-chains.pcap";
  tools::TwoStacksOptions o = Options("eng_copied");
  o.zero_copy_min = 0;
  o.capture_a = path;
  ASSERT_NO_FATAL_FAILURE(Open(o));
  CutPayloadsLandExactly(5, /*corrupted=*/false);
  EXPECT_EQ(h(0).eng->counters().tx_zero_copy + h(1).eng->counters().tx_zero_copy, 0u);
  h(0).port->StopCapture();
  auto frames = pcapio::ReadAll(path);
  ASSERT_TRUE(frames.ok()) << frames.status();
  size_t checked = 0, large = 0;
  for (const pcapio::Frame& f : *frames) {
    const std::vector<uint8_t>& b = f.data;
    if (b.size() < 14 + 20 + 8 + 12 + 4 || b[12] != 0x08 || b[13] != 0x00 || b[14 + 9] != 17) continue;
    const size_t l4 = 14 + (b[14] & 0xFu) * 4u;
    if (((b[l4 + 2] << 8) | b[l4 + 3]) != 4791) continue;
    const size_t ip_len = static_cast<size_t>((b[16] << 8) | b[17]);
    ASSERT_LE(14 + ip_len, b.size());
    const uint8_t* icrc = b.data() + 14 + ip_len - 4;
    const uint32_t got = icrc[0] | (icrc[1] << 8) | (icrc[2] << 16) | (uint32_t{icrc[3]} << 24);
    EXPECT_EQ(got, roce::testing::ReferenceIcrc(b.data() + 14, ip_len - 4)) << "RoCE frame " << checked;
    checked++;
    large += ip_len > 4096;
  }
  // a's Write and Send requests, b's Read responses: 2 x 3 x 4 x 64 of 4 KB payload.
  EXPECT_GE(large, 2u * 3 * 4 * 64);
}

// Corrupted copied chains: dropped at the receiver's check (the payload
// copied together first, into the engine's scratch, never the target), the
// transfers repaired and exact, in both of PlaceInOrderCrc32's codes.
TEST_F(EngineRing, CopiedChainsSurviveCorruption) {
  port::FaultConfig f;
  f.seed = 11;
  f.rx.corrupt = 0.05;
  tools::TwoStacksOptions o = Options("eng_cpbad");
  o.zero_copy_min = 0;
  o.faults_b = f;
  f.seed = 12;
  o.faults = f;  // a's receive side: the Read responses
  ASSERT_NO_FATAL_FAILURE(Open(o));
  uint64_t seed = 7;
  for (bool one_pass : {true, false}) {
    mem::SetPlaceCrcOnePass(one_pass);
    for (Xfer x : {Xfer::kWrite, Xfer::kSend, Xfer::kRead}) {
      SCOPED_TRACE(std::string(XferName(x)) + (one_pass ? "" : ", two passes"));
      rc::DeviceCounters d = TransfersLandExactly(*ts_, seed++, x);
      EXPECT_GT(d.IcrcErrors(), 0u);
    }
  }
  mem::SetPlaceCrcOnePass(true);
  EXPECT_GT(h(0).port->Stats().rx_faults.corrupted, 0u);
  EXPECT_GT(h(1).port->Stats().rx_faults.corrupted, 0u);
}

// A NIC's receive layout (PortProfile::rx_copy: each received frame copied
// into 2 KB segments after the headroom, so a 4 KB payload arrives cut at
// offsets no multiple of 64, the first piece after the headers), from a
// zero-copy sender (its frames copied under their read references): every
// 4 KB payload arrives cut and is copied together as its ICRC is checked.
TEST_F(EngineRing, NicReceiveLayoutCutsEveryLargePayload) {
  tools::TwoStacksOptions o = Options("eng_nicrx0");
  o.rx_copy = true;
  ASSERT_NO_FATAL_FAILURE(Open(o));
  uint64_t seed = 3;
  for (Xfer x : {Xfer::kWrite, Xfer::kRead}) {
    SCOPED_TRACE(XferName(x));
    engine::Engine& rx = *h(x == Xfer::kRead ? 0 : 1).eng;
    const uint64_t lin0 = rx.counters().rx_linearized;
    rc::DeviceCounters d = TransfersLandExactly(*ts_, seed++, x);
    EXPECT_EQ(d.IcrcErrors(), 0u);
    // Without rx_copy the zero-copy sender's payloads arrive whole in one segment.
    EXPECT_GE(rx.counters().rx_linearized - lin0, 4u * 64);
  }
  EXPECT_GT(h(0).eng->counters().tx_zero_copy, 0u);
}

// Segments of 192 bytes: a 4 KB payload in 22 of them, more than
// mem::PlaceGatherCrc32 takes at once (kPlaceGatherMax), so the receiver
// gathers it in batches; with the frames corrupted now and then, in both
// of PlaceInOrderCrc32's codes.
TEST_F(EngineRing, NicReceiveLayoutOfManySmallSegments) {
  tools::TwoStacksOptions o = CorruptedNicLayout("eng_nicrx1", 0.03, 31);
  o.mbuf_data_room = 192;
  o.mbufs = 65535;
  ASSERT_NO_FATAL_FAILURE(Open(o));
  ASSERT_GT(4096 / 192, static_cast<int>(mem::kPlaceGatherMax));
  CutPayloadsLandExactly(13, /*corrupted=*/true);
  for (int i = 0; i < 2; i++) EXPECT_EQ(h(i).port->Stats().rx_copy_nomem, 0u);
}

// The same layout with 5% of the received frames corrupted after the copy, on
// both sides: the transfers land exactly, in both of PlaceInOrderCrc32's codes.
TEST_F(EngineRing, NicReceiveLayoutLandsExactlyAndSurvivesCorruption) {
  ASSERT_NO_FATAL_FAILURE(Open(CorruptedNicLayout("eng_nicrx", 0.05, 21)));
  CutPayloadsLandExactly(9, /*corrupted=*/true);
  EXPECT_GT(h(0).eng->counters().tx_zero_copy, 0u);
  EXPECT_GT(h(1).eng->counters().tx_zero_copy, 0u);
  for (int i = 0; i < 2; i++) {
    const port::PortStats s = h(i).port->Stats();
    EXPECT_GT(s.rx_faults.corrupted, 0u);
    EXPECT_EQ(s.rx_copy_nomem, 0u);
  }
}

// The connection manager over the ring: a connects to b's listener with CM
// MADs on QP 1 (REQ/REP/RTU), a Send crosses the new connection, a
// disconnects (DREQ/DREP) — once with both engines polled by this thread,
// once with b's engine on its own thread and a's driven inline by
// Engine::WaitUntil (the two progress modes).
void CmRoundTrip(tools::TwoStacks& ts, bool b_dedicated) {
  engine::Engine& ea = *ts.a().eng;
  engine::Engine& eb = *ts.b().eng;
  rc::CompletionQueue scq(64), rcq(64), bscq(64), brcq(64);
  rc::QueuePair* qa = nullptr;
  rc::QueuePair* qb = nullptr;
  cm::ListenerId lid = 0;
  const wire::IpAddr ipa = *ea.LocalIp(false), ipb = *eb.LocalIp(false);
  {
    roce::engine::EngineLock l(&eb.mu());
    ASSERT_TRUE(eb.cm().BindPort(ipb, 7174).ok());
    auto li = eb.cm().Listen(ipb, 7174, 4);
    ASSERT_TRUE(li.ok()) << li.status();
    lid = *li;
    qb = eb.CreateQp({}, &bscq, &brcq);
  }
  if (b_dedicated) {
    ASSERT_TRUE(eb.Start().ok());
  }
  auto mac = ea.Resolve(ipb, 2'000'000'000);
  ASSERT_TRUE(mac.ok());
  cm::ConnId ca;
  {
    roce::engine::EngineLock l(&ea.mu());
    qa = ea.CreateQp({}, &scq, &rcq);
    cm::ConnectParams cp;
    cp.qpn = qa->qpn();
    cp.local_ip = ipa;
    cp.peer_ip = ipb;
    cp.peer_port = 7174;
    cp.peer_mac = *mac;
    cp.private_data = {'h', 'i'};
    auto c = ea.cm().Connect(cp, ea.NowNs());
    ASSERT_TRUE(c.ok()) << c.status();
    ca = *c;
  }
  // b accepts from this thread: inline it must poll both engines.
  auto poll_both_until = [&](const std::function<bool()>& pred) {
    for (int i = 0; i < 2'000'000; i++) {
      if (!b_dedicated) eb.Poll();
      ea.Poll();
      if (pred()) return true;
    }
    return false;
  };
  cm::ConnRequest req;
  ASSERT_TRUE(poll_both_until([&] {
    roce::engine::EngineLock l(&eb.mu());
    return eb.cm().GetRequest(lid, &req);
  }));
  EXPECT_EQ(req.peer_ip, ipa);
  EXPECT_EQ(req.private_data[0], 'h');
  std::vector<uint8_t> buf(100, 7), rbuf(100, 0);
  mem::RegionInfo sr, rr;
  {
    roce::engine::EngineLock l(&eb.mu());
    cm::AcceptParams ap;
    ap.qpn = qb->qpn();
    ASSERT_TRUE(eb.cm().Accept(req.id, ap, eb.NowNs()).ok());
    eb.rc().memory().RegisterRegion(reinterpret_cast<uint64_t>(rbuf.data()), rbuf.size(), mem::kLocalWrite, &rr);
    rc::Sge s{reinterpret_cast<uint64_t>(rbuf.data()), 100, rr.local_token};
    rc::RecvWr w;
    w.context = 5;
    w.sge = &s;
    w.num_sge = 1;
    ASSERT_EQ(qb->PostRecv(w), rc::PostResult::kOk);
  }
  ASSERT_TRUE(poll_both_until([&] {
    roce::engine::EngineLock l(&ea.mu());
    return ea.cm().Info(ca)->state == cm::ConnState::kEstablished;
  }));
  {
    roce::engine::EngineLock l(&ea.mu());
    ea.rc().memory().RegisterRegion(reinterpret_cast<uint64_t>(buf.data()), buf.size(), 0, &sr);
    rc::Sge s{reinterpret_cast<uint64_t>(buf.data()), 100, sr.local_token};
    rc::SendWr w;
    w.context = 6;
    w.sge = &s;
    w.num_sge = 1;
    ASSERT_EQ(qa->PostSend(w), rc::PostResult::kOk);
  }
  ASSERT_TRUE(poll_both_until([&] { return brcq.size() == 1 && scq.size() == 1; }));
  EXPECT_EQ(rbuf, buf);
  {
    roce::engine::EngineLock l(&ea.mu());
    ASSERT_TRUE(ea.cm().Disconnect(ca, ea.NowNs()).ok());
  }
  ASSERT_TRUE(poll_both_until([&] {
    roce::engine::EngineLock la(&ea.mu());
    roce::engine::EngineLock lb(&eb.mu());
    return ea.cm().Info(ca)->state == cm::ConnState::kTimeWait && eb.cm().Info(req.id)->peer_disconnected;
  }));
  if (b_dedicated) eb.Stop();
  for (engine::Engine* e : {&ea, &eb}) {
    roce::engine::EngineLock l(&e->mu());
    e->cm().Release(e == &ea ? ca : req.id, e->NowNs());
    e->rc().memory().DeregisterRegion(e == &ea ? sr.handle : rr.handle);
    e->DestroyQp(e == &ea ? qa : qb);
  }
  {
    roce::engine::EngineLock l(&eb.mu());
    eb.cm().CloseListener(lid, eb.NowNs());
    eb.cm().UnbindPort(ipb, 7174);
  }
}

TEST_F(EngineRing, ConnectionManagerInlineAndDedicated) {
  ASSERT_NO_FATAL_FAILURE(Open(Options("eng_cm")));
  ASSERT_NO_FATAL_FAILURE(CmRoundTrip(*ts_, false));
  ASSERT_NO_FATAL_FAILURE(CmRoundTrip(*ts_, true));
  EXPECT_EQ(h(0).eng->cm().counters.established, 2u);
  EXPECT_EQ(h(1).eng->cm().counters.established, 2u);
}

// Inline mode: a request posted to a queue pair with nothing unsent or
// unacknowledged goes on the wire from PostSend (the doorbell), before the
// sender's engine polls; one posted behind an unacknowledged request waits for
// the sender's next pass (streams go out in bursts). tx_on_post = false: every
// request waits for a pass.
TEST_F(EngineRing, IdleRequestLeavesAtThePost) {
  for (const bool on : {true, false}) {
    SCOPED_TRACE(on ? "tx_on_post" : "no tx_on_post");
    tools::TwoStacksOptions o = Options(on ? "eng_post_on" : "eng_post_off");
    o.tx_on_post = on;
    ASSERT_NO_FATAL_FAILURE(Open(o));
    std::vector<uint8_t> recv(64, 0);
    const mem::RegionInfo rr = Reg(h(1), recv, mem::kLocalWrite);
    for (uint32_t i = 0; i < 4; i++) {
      Sge s{reinterpret_cast<uint64_t>(recv.data() + 16 * i), 16, rr.local_token};
      ASSERT_EQ(PostRecv(h(1), rc::RecvWr{100 + i, &s, 1}), rc::PostResult::kOk);
    }
    uint8_t msg[4][8];
    auto send = [&](uint32_t i) {
      for (uint32_t k = 0; k < 8; k++) msg[i][k] = static_cast<uint8_t>(0x40 + 8 * i + k);
      Sge s{reinterpret_cast<uint64_t>(msg[i]), 8, 0};
      rc::SendWr w;
      w.context = i;
      w.op = WrOp::kSend;
      w.sge = &s;
      w.num_sge = 1;
      w.flags = rc::kInline;
      ASSERT_EQ(Post(h(0), w), rc::PostResult::kOk);
    };
    // Polls only b's engine a few passes; returns b's receive completions.
    auto poll_b = [&] {
      std::vector<Completion> got;
      for (int k = 0; k < 4; k++) {
        h(1).eng->Poll();
        Completion c[4];
        const uint32_t n = h(1).rcq->Poll(c, 4);
        got.insert(got.end(), c, c + n);
      }
      return got;
    };
    const uint64_t polls_a = h(0).eng->counters().polls;
    ASSERT_NO_FATAL_FAILURE(send(0));
    std::vector<Completion> got = poll_b();
    if (on) {
      ASSERT_EQ(got.size(), 1u) << "the Send to an idle QP did not leave at the post";
      EXPECT_EQ(got[0].request_context, 100u);
      EXPECT_EQ(got[0].bytes, 8u);
      EXPECT_EQ(std::memcmp(recv.data(), msg[0], 8), 0);
      EXPECT_EQ(h(0).eng->counters().tx_on_post, 1u);
    } else {
      EXPECT_TRUE(got.empty()) << "a Send left without a pass of its engine";
      EXPECT_EQ(h(0).eng->counters().tx_on_post, 0u);
    }
    EXPECT_EQ(h(0).eng->counters().polls, polls_a) << "side a was polled";
    // Two more behind the first, unacknowledged (a has not read b's ACK):
    // they wait for a's pass.
    ASSERT_NO_FATAL_FAILURE(send(1));
    ASSERT_NO_FATAL_FAILURE(send(2));
    EXPECT_EQ(poll_b().size(), 0u) << "a request behind an unacknowledged one left at the post";
    std::vector<Completion> sc = WaitFor(*h(0).scq, 3);
    ASSERT_EQ(sc.size(), 3u);
    for (uint32_t i = 0; i < 3; i++) {
      EXPECT_EQ(sc[i].status, Status::kSuccess);
      EXPECT_EQ(sc[i].request_context, i);
    }
    std::vector<Completion> rc = WaitFor(*h(1).rcq, on ? 2 : 3);
    ASSERT_EQ(rc.size(), on ? 2u : 3u);
    // Everything acknowledged: the next one is idle again.
    ASSERT_NO_FATAL_FAILURE(send(3));
    got = poll_b();
    EXPECT_EQ(got.size(), on ? 1u : 0u);
    if (!on) got = WaitFor(*h(1).rcq, 1);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].request_context, 103u);
    for (uint32_t i = 0; i < 4; i++) EXPECT_EQ(std::memcmp(recv.data() + 16 * i, msg[i], 8), 0) << i;
    EXPECT_EQ(h(0).eng->counters().tx_on_post, on ? 2u : 0u);
    ts_->Deregister(h(1), rr);
    ts_.reset();
  }
}

// idle_yield: both engines on their own threads, each idle pass yields the
// CPU instead of pausing in place (for processes with more spinning threads
// than CPUs). Traffic still flows both ways (Sends a -> b, checked byte for
// byte, and their acknowledgements), and the engines did yield while waiting;
// with the option off they never do.
TEST_F(EngineRing, IdleYieldKeepsTrafficMoving) {
  for (const bool yield : {true, false}) {
    SCOPED_TRACE(yield ? "idle_yield on" : "idle_yield off");
    tools::TwoStacksOptions o = Options(yield ? "eng_yld_on" : "eng_yld_off");
    o.idle_yield = yield;
    ASSERT_NO_FATAL_FAILURE(Open(o));
    constexpr uint32_t kMsgs = 48;  // within rq_depth (64)
    std::vector<uint8_t> recv(kMsgs * 16), src(kMsgs * 16);
    for (size_t i = 0; i < src.size(); i++) src[i] = static_cast<uint8_t>(i * 7 + 3);
    const mem::RegionInfo rr = Reg(h(1), recv, mem::kLocalWrite);
    const mem::RegionInfo sr = Reg(h(0), src, 0);
    for (uint32_t i = 0; i < kMsgs; i++) {
      Sge s{reinterpret_cast<uint64_t>(recv.data() + 16 * i), 16, rr.local_token};
      ASSERT_EQ(PostRecv(h(1), rc::RecvWr{i, &s, 1}), rc::PostResult::kOk);
    }
    ASSERT_TRUE(h(0).eng->Start().ok());
    ASSERT_TRUE(h(1).eng->Start().ok());
    for (uint32_t i = 0; i < kMsgs; i++) {
      Sge s{reinterpret_cast<uint64_t>(src.data() + 16 * i), 16, sr.local_token};
      rc::SendWr w;
      w.context = i;
      w.op = WrOp::kSend;
      w.sge = &s;
      w.num_sge = 1;
      ASSERT_EQ(Post(h(0), w), rc::PostResult::kOk);
      if (i % 8 == 7) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // idle gaps
    }
    const std::vector<Completion> rc = WaitFor(*h(1).rcq, kMsgs);
    const std::vector<Completion> sc = WaitFor(*h(0).scq, kMsgs);
    ASSERT_EQ(rc.size(), kMsgs);
    ASSERT_EQ(sc.size(), kMsgs);
    for (uint32_t i = 0; i < kMsgs; i++) {
      EXPECT_EQ(rc[i].status, Status::kSuccess);
      EXPECT_EQ(rc[i].request_context, i);
      EXPECT_EQ(rc[i].bytes, 16u);
      EXPECT_EQ(sc[i].status, Status::kSuccess);
      EXPECT_EQ(sc[i].request_context, i);
    }
    EXPECT_EQ(recv, src);
    h(0).eng->Stop();
    h(1).eng->Stop();
    const uint64_t ya = h(0).eng->idle_yields(), yb = h(1).eng->idle_yields();
    std::printf("%s: idle yields a %llu, b %llu\n", yield ? "on" : "off", static_cast<unsigned long long>(ya),
                static_cast<unsigned long long>(yb));
    if (yield) {
      EXPECT_GT(ya, 0u);
      EXPECT_GT(yb, 0u);
    } else {
      EXPECT_EQ(ya, 0u);
      EXPECT_EQ(yb, 0u);
    }
    ts_->Deregister(h(0), sr);
    ts_->Deregister(h(1), rr);
    ts_.reset();
  }
}

// A dedicated engine with nothing to do naps (up to idle_sleep_max_ns at a
// time: a packet arriving meanwhile waits for the nap to end). While a thread
// polls for its completions and says so (KeepAwake, as ND2's GetResults does
// on an empty result), it does not nap; once that stops, it naps again. The
// bound is loose (a polling thread descheduled on a busy machine lets a few
// naps through); a lost KeepAwake would let about as many as idle.
TEST_F(EngineRing, KeepAwakeHoldsOffNaps) {
  ASSERT_NO_FATAL_FAILURE(Open(Options("eng_awake")));
  engine::Engine& e = *h(1).eng;
  ASSERT_TRUE(e.Start().ok());
  auto naps_over = [&](bool keep_awake) {
    const uint64_t n0 = e.naps();
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (std::chrono::steady_clock::now() < until) {
      if (keep_awake) e.KeepAwake();
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    return e.naps() - n0;
  };
  const uint64_t idle = naps_over(false);
  const uint64_t awake = naps_over(true);
  const uint64_t idle_again = naps_over(false);
  e.Stop();
  std::printf("naps in 200 ms: idle %llu, kept awake %llu, idle again %llu\n", static_cast<unsigned long long>(idle),
              static_cast<unsigned long long>(awake), static_cast<unsigned long long>(idle_again));
  EXPECT_GE(idle, 20u);  // naps of at most 1 ms (idle_sleep_max_ns) for 200 ms
  EXPECT_GE(idle_again, 20u);
  EXPECT_LT(awake * 4, idle) << "naps taken while a thread kept the engine awake";
}

// The progress thread (not an EAL core) registers an lcore id, so DPDK gives
// it a per-lcore mempool cache, and releases it when it stops.
TEST_F(EngineRing, ProgressThreadHasAnLcoreWhileItRuns) {
  ASSERT_NO_FATAL_FAILURE(Open(Options("eng_lcore")));
  engine::Engine& e = *h(1).eng;
  std::atomic<unsigned> seen{LCORE_ID_ANY - 1};
  e.on_poll = [&](uint64_t) { seen = rte_lcore_id(); };
  const unsigned before = rte_lcore_count();
  ASSERT_TRUE(e.Start().ok());
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (seen == LCORE_ID_ANY - 1 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const unsigned during = rte_lcore_count();
  e.Stop();
  e.on_poll = nullptr;
  ASSERT_NE(seen.load(), LCORE_ID_ANY - 1) << "the engine never polled";
  EXPECT_NE(seen.load(), LCORE_ID_ANY);
  EXPECT_NE(seen.load(), rte_lcore_id());  // not this thread's
  EXPECT_EQ(during, before + 1);
  EXPECT_EQ(rte_lcore_count(), before);  // released at Stop
}

TEST_F(EngineRing, DedicatedPollingThread) {
  ASSERT_NO_FATAL_FAILURE(Open(Options("eng_thread")));
  ASSERT_TRUE(h(1).eng->Start().ok());
  RunAllOps(300000);
  h(1).eng->Stop();
  EXPECT_GT(h(1).eng->counters().polls, 10u);
}

}  // namespace
}  // namespace roce::engine
