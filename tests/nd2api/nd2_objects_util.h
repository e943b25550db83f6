// SPDX-License-Identifier: MIT
// What the nd2_objects tests share: the ND2_CONFIG they write (two adapters of
// this process over an in-process net_ring pair: 10.0.0.1 and 10.0.0.2, each
// also reachable over its own loopback), waits with deadlines, and endpoints
// (CQ, QP, registered buffer, connector) connected through the public API.
// Public headers only: <ndspi.h> and <ndsupport.h>, as any ND2 program.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <ndspi.h>
#include <ndsupport.h>

#include "nd2_sockaddr.h"

namespace nd2t {

inline constexpr const char* kIpA = "10.0.0.1";
inline constexpr const char* kIpB = "10.0.0.2";

// How the process's adapters run: inline progress (the application's
// threads drive the engines), a progress thread each, or inline with adapter
// 0 capturing every frame to CapturePath().
// kCapture: adapter0 captures every frame; kCaptureNoRepair: the same, and
// adapter1 has selective_repair = off.
enum class Mode { kInline, kThread, kCapture, kCaptureNoRepair };

inline std::string ConfigPath() { return "/tmp/nd2_objects_test_" + std::to_string(getpid()) + ".ini"; }
inline std::string CapturePath() { return "/tmp/nd2_objects_test_" + std::to_string(getpid()) + ".pcap"; }

inline Mode& CurrentMode() {
  static Mode m = Mode::kInline;
  return m;
}
inline bool& Started() {
  static bool s = false;
  return s;
}

inline void Stop() {
  if (Started()) {
    EXPECT_EQ(NdCleanup(), ND_SUCCESS);
    Started() = false;
  }
}

// NdStartup with the configuration of `m` (NdCleanup first if the process
// runs another one).
inline void Start(Mode m) {
  if (Started() && CurrentMode() == m) return;
  Stop();
  const char* progress = m == Mode::kThread ? "thread" : "inline";
  {
    std::ofstream f(ConfigPath());
    f << "[adapter0]\nprofile = net_ring.ini\nport.ring = nd2objects\nport.ring_side = a\nip = 10.0.0.1/24\nip6 = fd00::1/64\n"
         "progress = "
      << progress << "\n";
    if (m == Mode::kCapture || m == Mode::kCaptureNoRepair) f << "capture = " << CapturePath() << "\n";
    f << "[adapter1]\nprofile = net_ring.ini\nport.ring = nd2objects\nport.ring_side = b\nip = 10.0.0.2/24\nip6 = fd00::2/64\n"
         "port.mac = 02:00:00:00:00:02\nprogress = "
      << progress << "\n";
    if (m == Mode::kCaptureNoRepair) f << "selective_repair = off\n";
  }
  setenv("ND2_CONFIG", ConfigPath().c_str(), 1);
  ASSERT_EQ(NdStartup(), ND_SUCCESS);
  Started() = true;
  CurrentMode() = m;
}

// Closes the process's adapters at the end (gtest environment).
class Environment : public ::testing::Environment {
 public:
  void TearDown() override {
    Stop();
    unlink(ConfigPath().c_str());
    unlink(CapturePath().c_str());
  }
};

inline IND2Adapter* OpenAdapter(const char* ip) {
  sockaddr_in a = Addr(ip);
  IND2Adapter* ad = nullptr;
  EXPECT_EQ(NdOpenAdapter(IID_IND2Adapter, reinterpret_cast<sockaddr*>(&a), sizeof a, reinterpret_cast<void**>(&ad)),
            ND_SUCCESS);
  return ad;
}

inline ND2_ADAPTER_INFO QueryInfo(IND2Adapter* a) {
  ND2_ADAPTER_INFO info{};
  info.InfoVersion = ND_VERSION_2;
  ULONG cb = sizeof info;
  EXPECT_EQ(a->Query(&info, &cb), ND_SUCCESS);
  return info;
}

// An OVERLAPPED with its own auto-reset event.
struct Ov {
  OVERLAPPED ov{};
  Ov() { ov.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr); }
  ~Ov() { CloseHandle(ov.hEvent); }
  Ov(const Ov&) = delete;
  Ov& operator=(const Ov&) = delete;
};

// The final status of a request that returned `h`: ND_PENDING is waited for
// (at most `ms`: ND_TIMEOUT if it did not complete), anything else is final.
inline HRESULT Finish(IND2Overlapped* o, Ov& ov, HRESULT h, DWORD ms = 10000) {
  if (h != ND_PENDING) return h;
  if (WaitForSingleObject(ov.ov.hEvent, ms) != WAIT_OBJECT_0) return ND_TIMEOUT;
  return o->GetOverlappedResult(&ov.ov, FALSE);
}

// True if `ov` is still pending after `ms` of progress (the wait drives the
// engines in inline mode).
inline bool StillPending(IND2Overlapped* o, Ov& ov, DWORD ms = 50) {
  if (WaitForSingleObject(ov.ov.hEvent, ms) == WAIT_OBJECT_0) {
    SetEvent(ov.ov.hEvent);  // keep the signal for the caller
    return false;
  }
  return o->GetOverlappedResult(&ov.ov, FALSE) == ND_PENDING;
}

inline uint64_t NowMs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// Polls `cq` until one result arrives (true) or `ms` pass (false).
inline bool Next(IND2CompletionQueue* cq, ND2_RESULT* r, uint64_t ms = 10000) {
  const uint64_t end = NowMs() + ms;
  do {
    if (cq->GetResults(r, 1) == 1) return true;
  } while (NowMs() < end);
  return false;
}

// Every result `cq` yields until it has been quiet for `quiet_ms`, once it
// has yielded `at_least` (waiting up to 10 s for those: with progress threads
// on a loaded 2-core machine the first result can come later than any quiet
// time — a fresh-clone CI run saw SilentSuccess/Thread drain nothing in 100 ms).
inline std::vector<ND2_RESULT> Drain(IND2CompletionQueue* cq, uint64_t quiet_ms = 100, size_t at_least = 0) {
  std::vector<ND2_RESULT> out;
  const uint64_t give_up = NowMs() + 10000;
  uint64_t end = NowMs() + quiet_ms;
  ND2_RESULT r[16];
  while (NowMs() < end || (out.size() < at_least && NowMs() < give_up)) {
    const ULONG n = cq->GetResults(r, 16);
    for (ULONG i = 0; i < n; i++) out.push_back(r[i]);
    if (n) end = NowMs() + quiet_ms;
  }
  return out;
}

// Registers buf[0, len) on a new region of `a` (waits for the pended Register).
inline IND2MemoryRegion* Register(IND2Adapter* a, HANDLE file, void* buf, size_t len, ULONG flags) {
  IND2MemoryRegion* mr = nullptr;
  EXPECT_EQ(a->CreateMemoryRegion(IID_IND2MemoryRegion, file, reinterpret_cast<void**>(&mr)), ND_SUCCESS);
  if (!mr) return nullptr;
  Ov ov;
  EXPECT_EQ(Finish(mr, ov, mr->Register(buf, len, flags, &ov.ov)), ND_SUCCESS);
  return mr;
}

inline void Deregister(IND2MemoryRegion* mr) {
  Ov ov;
  EXPECT_EQ(Finish(mr, ov, mr->Deregister(&ov.ov)), ND_SUCCESS);
}

inline constexpr ULONG kAllMrFlags =
    ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ | ND_MR_FLAG_ALLOW_REMOTE_WRITE;

// QP sizes for Endpoint.
struct QpSizes {
  ULONG rq = 64, iq = 64, rsge = 4, isge = 4, inl = 256;
  ULONG cq = 1024;
};

// One side of a connection: adapter, overlapped file, one CQ for both
// queues (or two), a QP whose context is this object, a 1 MB buffer
// registered with every right, and a connector.
struct Endpoint {
  IND2Adapter* adapter = nullptr;
  HANDLE file = nullptr;
  IND2CompletionQueue* cq = nullptr;   // receive results
  IND2CompletionQueue* icq = nullptr;  // initiator results (== cq unless separate)
  IND2QueuePair* qp = nullptr;
  IND2MemoryRegion* mr = nullptr;
  IND2Connector* conn = nullptr;
  std::vector<char> buf = std::vector<char>(1 << 20);

  void Open(const char* ip, QpSizes s = {}, bool separate_cqs = false, IND2SharedReceiveQueue* srq = nullptr) {
    adapter = OpenAdapter(ip);
    ASSERT_NE(adapter, nullptr);
    ASSERT_EQ(adapter->CreateOverlappedFile(&file), ND_SUCCESS);
    ASSERT_EQ(adapter->CreateCompletionQueue(IID_IND2CompletionQueue, file, s.cq, 0, 0, reinterpret_cast<void**>(&cq)),
              ND_SUCCESS);
    if (separate_cqs) {
      ASSERT_EQ(
          adapter->CreateCompletionQueue(IID_IND2CompletionQueue, file, s.cq, 0, 0, reinterpret_cast<void**>(&icq)),
          ND_SUCCESS);
    } else {
      icq = cq;
      cq->AddRef();
    }
    if (srq) {
      ASSERT_EQ(adapter->CreateQueuePairWithSrq(IID_IND2QueuePair, cq, icq, srq, this, s.iq, s.isge, s.inl,
                                                reinterpret_cast<void**>(&qp)),
                ND_SUCCESS);
    } else {
      ASSERT_EQ(adapter->CreateQueuePair(IID_IND2QueuePair, cq, icq, this, s.rq, s.iq, s.rsge, s.isge, s.inl,
                                         reinterpret_cast<void**>(&qp)),
                ND_SUCCESS);
    }
    mr = Register(adapter, file, buf.data(), buf.size(), kAllMrFlags);
    ASSERT_NE(mr, nullptr);
    ASSERT_EQ(adapter->CreateConnector(IID_IND2Connector, file, reinterpret_cast<void**>(&conn)), ND_SUCCESS);
  }
  ND2_SGE Sge(size_t off, ULONG len) { return ND2_SGE{buf.data() + off, len, mr->GetLocalToken()}; }
  UINT64 Va(size_t off) { return reinterpret_cast<UINT64>(buf.data() + off); }
  HRESULT PostReceive(void* ctx, size_t off, ULONG len) {
    ND2_SGE s = Sge(off, len);
    return qp->Receive(ctx, &s, 1);
  }
  HRESULT PostSend(void* ctx, size_t off, ULONG len, ULONG flags = 0) {
    ND2_SGE s = Sge(off, len);
    return qp->Send(ctx, &s, 1, flags);
  }
  // The next result of the initiator / receive queue (fails the test if none comes).
  ND2_RESULT NextI(uint64_t ms = 10000) {
    ND2_RESULT r{};
    EXPECT_TRUE(Next(icq, &r, ms)) << "no initiator result";
    return r;
  }
  ND2_RESULT NextR(uint64_t ms = 10000) {
    ND2_RESULT r{};
    EXPECT_TRUE(Next(cq, &r, ms)) << "no receive result";
    return r;
  }
  void Close() {
    if (conn) conn->Release();
    if (qp) qp->Release();
    if (mr) {
      Ov ov;
      HRESULT h = mr->Deregister(&ov.ov);
      Finish(mr, ov, h);
      mr->Release();
    }
    if (icq) icq->Release();
    if (cq) cq->Release();
    if (file) CloseHandle(file);
    if (adapter) adapter->Release();
    conn = nullptr;
    qp = nullptr;
    mr = nullptr;
    icq = cq = nullptr;
    file = nullptr;
    adapter = nullptr;
  }
};

inline uint16_t NextPort() {
  static uint16_t p = 40000;
  return ++p;
}

// Connects client (Connect) to server (listener on server_ip, Accept), both
// asking for read limits `rl`.
inline void Connect(Endpoint& client, Endpoint& server, const char* server_ip, ULONG rl = 4) {
  IND2Listener* l = nullptr;
  ASSERT_EQ(server.adapter->CreateListener(IID_IND2Listener, server.file, reinterpret_cast<void**>(&l)), ND_SUCCESS);
  sockaddr_in la = Addr(server_ip, NextPort());
  ASSERT_EQ(l->Bind(reinterpret_cast<sockaddr*>(&la), sizeof la), ND_SUCCESS);
  ASSERT_EQ(l->Listen(0), ND_SUCCESS);
  Ov lov, cov, sov;
  const HRESULT hl = l->GetConnectionRequest(server.conn, &lov.ov);
  const HRESULT hc =
      client.conn->Connect(client.qp, reinterpret_cast<sockaddr*>(&la), sizeof la, rl, rl, nullptr, 0, &cov.ov);
  ASSERT_TRUE(hc == ND_PENDING || hc == ND_SUCCESS) << std::hex << hc;
  ASSERT_EQ(Finish(l, lov, hl), ND_SUCCESS);
  l->Release();
  // Accept completes once the client's CompleteConnect (RTU) arrives.
  const HRESULT ha = server.conn->Accept(server.qp, rl, rl, nullptr, 0, &sov.ov);
  ASSERT_TRUE(ha == ND_PENDING || ha == ND_SUCCESS) << std::hex << ha;
  ASSERT_EQ(Finish(client.conn, cov, hc), ND_SUCCESS);
  ASSERT_EQ(Finish(client.conn, cov, client.conn->CompleteConnect(&cov.ov)), ND_SUCCESS);
  ASSERT_EQ(Finish(server.conn, sov, ha), ND_SUCCESS);
}

// Two endpoints connected: `a` on 10.0.0.1 connects to `b` on 10.0.0.2 (or
// to 10.0.0.1 itself: loopback).
struct Pair {
  Endpoint a, b;
  void Open(QpSizes sa = {}, QpSizes sb = {}, bool loopback = false) {
    ASSERT_NO_FATAL_FAILURE(a.Open(kIpA, sa));
    ASSERT_NO_FATAL_FAILURE(b.Open(loopback ? kIpA : kIpB, sb));
    ASSERT_NO_FATAL_FAILURE(Connect(a, b, loopback ? kIpA : kIpB));
  }
  void Close() {
    a.Close();
    b.Close();
  }
  ~Pair() { Close(); }
};

}  // namespace nd2t
