// SPDX-License-Identifier: MIT
// rnic-demo: two software RNICs on virtual devices (an in-process DPDK
// net_ring pair), talking RoCEv2: ARP, then Send, RDMA Write, RDMA Read and
// Send-with-Invalidate with byte checks, then the same traffic with loss
// injected by the port to show go-back-N recovery. Everything node a sends
// and receives is written to a pcap (check it with roce-pcap / Wireshark).
//
//   rnic-demo [--capture demo.pcap] [--loss 0.02] [--size 1048576]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include <absl/flags/flag.h>
#include <absl/flags/parse.h>
#include <absl/strings/str_format.h>

#include "stack/mem/memory_table.h"
#include "stack/port/eal.h"
#include "tools/lib/two_stacks.h"

ABSL_FLAG(std::string, capture, "demo.pcap", "pcap of everything node a sends and receives");
ABSL_FLAG(double, loss, 0.02, "drop probability each way in the lossy phase");
ABSL_FLAG(uint32_t, size, 1u << 20, "bytes per Write/Read");

using namespace roce;
using rc::Status;
using rc::WrOp;

namespace {

int failures = 0;

void Check(bool ok, const std::string& what) {
  absl::PrintF("  %-62s %s\n", what, ok ? "ok" : "FAILED");
  if (!ok) failures++;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const uint32_t size = absl::GetFlag(FLAGS_size);
  if (auto s = port::InitEal({}); !s.ok()) {
    absl::FPrintF(stderr, "%s\n", s.message());
    return 1;
  }
  tools::TwoStacksOptions o;
  o.capture_a = absl::GetFlag(FLAGS_capture);
  o.caps.sq_depth = 64;
  o.caps.rq_depth = 64;
  auto ts = tools::TwoStacks::Open(o);
  if (!ts.ok()) {
    absl::FPrintF(stderr, "could not set up the two stacks: %s\n", ts.status().message());
    return 1;
  }
  tools::TwoStacks& t = **ts;
  auto& A = t.a();
  auto& B = t.b();
  absl::PrintF("node a: %s %s  <->  node b: %s %s  (DPDK net_ring pair, path MTU %d, 2 KB mbufs)\n",
               A.eng->LocalIp(false)->ToString(), A.port->mac().ToString(),
               B.eng->LocalIp(false)->ToString(), B.port->mac().ToString(), o.path_mtu);
  absl::PrintF("ARP resolved both ways; QP a 0x%06x <-> QP b 0x%06x (RTS)\n", A.qp->qpn(), B.qp->qpn());

  std::vector<uint8_t> src(size), dst(size), sink(size), recv(size);
  for (size_t i = 0; i < size; i++) src[i] = static_cast<uint8_t>(i * 31 + 7);
  const auto sr = t.Register(A, src.data(), size, 0);
  const auto kr = t.Register(A, sink.data(), size, mem::kLocalWrite);
  const auto dr = t.Register(B, dst.data(), size, mem::kLocalWrite | mem::kRemoteRead | mem::kRemoteWrite);
  const auto rr = t.Register(B, recv.data(), size, mem::kLocalWrite);

  auto run = [&](const char* phase) {
    absl::PrintF("%s\n", phase);
    const auto t0 = std::chrono::steady_clock::now();
    // Send 4 KB.
    std::fill(recv.begin(), recv.end(), 0);
    rc::Sge rs{reinterpret_cast<uint64_t>(recv.data()), size, rr.local_token};
    t.PostRecv(B, rc::RecvWr{1, &rs, 1});
    rc::Sge ss{reinterpret_cast<uint64_t>(src.data()), 4096, sr.local_token};
    rc::SendWr w;
    w.op = WrOp::kSend;
    w.context = 1;
    w.sge = &ss;
    w.num_sge = 1;
    t.Post(A, w);
    auto c = t.Wait(*A.scq, 1);
    auto r = t.Wait(*B.rcq, 1);
    Check(c.size() == 1 && c[0].status == Status::kSuccess && r.size() == 1 && r[0].bytes == 4096 &&
              std::memcmp(src.data(), recv.data(), 4096) == 0,
          "Send 4 KB a->b, receive completion and bytes");
    // Write, then Read back.
    std::fill(dst.begin(), dst.end(), 0);
    std::fill(sink.begin(), sink.end(), 0);
    rc::Sge ws{reinterpret_cast<uint64_t>(src.data()), size, sr.local_token};
    w = {};
    w.op = WrOp::kWrite;
    w.context = 2;
    w.sge = &ws;
    w.num_sge = 1;
    w.remote_addr = reinterpret_cast<uint64_t>(dst.data());
    w.rkey = dr.remote_token;
    t.Post(A, w);
    rc::Sge ks{reinterpret_cast<uint64_t>(sink.data()), size, kr.local_token};
    rc::SendWr rd = w;
    rd.op = WrOp::kRead;
    rd.context = 3;
    rd.sge = &ks;
    t.Post(A, rd);
    c = t.Wait(*A.scq, 2);
    Check(c.size() == 2 && c[0].status == Status::kSuccess && std::memcmp(src.data(), dst.data(), size) == 0,
          absl::StrFormat("RDMA Write %d KB a->b, target bytes", size / 1024));
    Check(c.size() == 2 && c[1].status == Status::kSuccess && std::memcmp(src.data(), sink.data(), size) == 0,
          absl::StrFormat("RDMA Read %d KB a<-b, sink bytes", size / 1024));
    // Send with Invalidate of a window b bound over its target.
    uint32_t mw, tok;
    {
      roce::engine::EngineLock l(&B.eng->mu());
      B.eng->rc().memory().CreateWindow(&mw);
      tok = B.eng->rc().memory().AllocateWindowToken(mw);
    }
    rc::SendWr bind;
    bind.op = WrOp::kBind;
    bind.mw = mw;
    bind.mr = dr.handle;
    bind.bind_addr = reinterpret_cast<uint64_t>(dst.data());
    bind.bind_length = size;
    bind.bind_access = mem::kRemoteWrite;
    bind.bind_token = tok;
    t.Post(B, bind);
    auto bc = t.Wait(*B.scq, 1);
    t.PostRecv(B, rc::RecvWr{4, &rs, 1});
    w = {};
    w.op = WrOp::kSendWithInvalidate;
    w.context = 4;
    w.sge = &ss;
    w.num_sge = 1;
    w.invalidate_rkey = tok;
    t.Post(A, w);
    c = t.Wait(*A.scq, 1);
    r = t.Wait(*B.rcq, 1);
    bool invalid;
    {
      roce::engine::EngineLock l(&B.eng->mu());
      invalid = B.eng->rc().memory().CheckRemote(tok, reinterpret_cast<uint64_t>(dst.data()), 1,
                                                  mem::kRemoteWrite) != mem::Result::kOk;
      B.eng->rc().memory().DestroyWindow(mw);
    }
    Check(bc.size() == 1 && bc[0].status == Status::kSuccess && c.size() == 1 &&
              c[0].status == Status::kSuccess && r.size() == 1 && r[0].with_inv && r[0].inv_rkey == tok && invalid,
          "Bind window at b; SendWithInvalidate a->b invalidates it");
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    absl::PrintF("  (%.1f ms)\n", ms);
  };

  // Lets the last ACKs out, tears both stacks down and reports.
  auto finish = [&] {
    t.PollBoth();
    t.Deregister(A, sr);
    t.Deregister(A, kr);
    t.Deregister(B, dr);
    t.Deregister(B, rr);
    const uint64_t frames = A.port->Stats().capture_frames;
    ts->reset();
    absl::PrintF("capture of node a: %s (%d frames)\n", o.capture_a, frames);
    absl::PrintF("%s\n", failures ? "demo: FAILED" : "demo: all checks passed");
    port::CleanupEal();
    return failures ? 1 : 0;
  };

  run("Clean link:");
  if (absl::GetFlag(FLAGS_loss) <= 0) return finish();
  port::FaultConfig f;
  f.seed = 42;
  f.rx.drop = f.tx.drop = absl::GetFlag(FLAGS_loss);
  A.port->SetFaults(f);
  const rc::QpCounters before = A.qp->counters;
  run(absl::StrFormat("With %.0f%% of frames dropped each way by the port:", 100 * f.rx.drop).c_str());
  A.port->SetFaults({});
  const rc::QpCounters& q = A.qp->counters;
  absl::PrintF("  recovery at node a: %d retransmitted packets, %d sequence NAKs received, %d timeouts, "
               "%d implied NAKs; %d duplicates seen by b\n",
               q.retransmits - before.retransmits, q.seq_naks_received - before.seq_naks_received,
               q.timeouts - before.timeouts, q.implied_naks - before.implied_naks, B.qp->counters.duplicates);

  return finish();
}
