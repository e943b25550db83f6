// SPDX-License-Identifier: MIT
// What the connection and memory conformance tests share: an ND2 process
// through the public headers only (<ndspi.h>, <ndsupport.h>), its ND2_CONFIG
// written by the test — two adapters over an in-process net_ring pair
// (10.0.0.1 / fd00::1 and 10.0.0.2 / fd00::2) — and bounded waits, so a
// request that never completes fails its test instead of hanging it.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <ndspi.h>
#include <ndsupport.h>

namespace nd2test {

// HRESULTs compared and printed as the 8 hex digits everyone quotes.
struct Hr {
  HRESULT v;
  bool operator==(const Hr& o) const { return v == o.v; }
};
inline void PrintTo(const Hr& h, std::ostream* os) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08X", static_cast<uint32_t>(h.v));
  *os << b;
}
#define EXPECT_HR(actual, expected) EXPECT_EQ(::nd2test::Hr{(actual)}, ::nd2test::Hr{(expected)})
#define ASSERT_HR(actual, expected) ASSERT_EQ(::nd2test::Hr{(actual)}, ::nd2test::Hr{(expected)})

constexpr DWORD kLongWaitMs = 10000;

// Two adapters on ring `ring`: adapter0 side a, adapter1 side b; extra
// lines per adapter (e.g. "cm_timeout = 12\n").
inline std::string WriteConfig(const std::string& ring, bool thread, const std::string& extra0 = "",
                               const std::string& extra1 = "") {
  const std::string path = "/tmp/" + ring + "_" + std::to_string(getpid()) + ".ini";
  std::ofstream f(path);
  const char* progress = thread ? "thread" : "inline";
  f << "; written by the test\n"
    << "[adapter0]\nprofile = net_ring.ini\nport.ring = " << ring << "\nport.ring_side = a\n"
    << "ip = 10.0.0.1/24\nip6 = fd00::1/64\nprogress = " << progress << "\n"
    << extra0 << "[adapter1]\nprofile = net_ring.ini\nport.ring = " << ring << "\nport.ring_side = b\n"
    << "ip = 10.0.0.2/24\nip6 = fd00::2/64\nport.mac = 02:00:00:00:00:02\nprogress = " << progress << "\n"
    << extra1;
  return path;
}

inline sockaddr_in V4(const char* ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}
inline sockaddr_in6 V6(const char* ip, uint16_t port) {
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  inet_pton(AF_INET6, ip, &a.sin6_addr);
  return a;
}
template <typename T>
const sockaddr* Sa(const T& a) {
  return reinterpret_cast<const sockaddr*>(&a);
}
inline uint16_t PortOf(const sockaddr* a) {
  return a->sa_family == AF_INET ? ntohs(reinterpret_cast<const sockaddr_in*>(a)->sin_port)
                                 : ntohs(reinterpret_cast<const sockaddr_in6*>(a)->sin6_port);
}
inline std::string IpOf(const sockaddr* a) {
  char b[64] = {};
  if (a->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a)->sin_addr, b, sizeof b);
  else
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr, b, sizeof b);
  return b;
}

inline uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Lets `ms` pass while the stack progresses: a wait on an event nobody sets
// (in inline mode the waiting thread drives the adapters, as every wait does).
inline void Pump(DWORD ms) {
  static HANDLE never = CreateEvent(nullptr, FALSE, FALSE, nullptr);
  WaitForSingleObject(never, ms);
}

// The result of an overlapped request that returned h: h itself unless it is
// ND_PENDING, else the completion, waited for up to ms (ND_PENDING if it
// never came).
inline HRESULT Await(IND2Overlapped* o, OVERLAPPED* ov, HRESULT h, DWORD ms = kLongWaitMs) {
  if (h != ND_PENDING) return h;
  const uint64_t until = NowMs() + ms;
  for (;;) {
    h = o->GetOverlappedResult(ov, FALSE);
    if (h != ND_PENDING || NowMs() >= until) return h;
    Pump(1);
  }
}

// A COM reference released when it goes out of scope (a failed assertion
// must not leave objects behind: NdCleanup would refuse, and the next test
// would find the old provider still started).
template <typename T>
class Owned {
 public:
  Owned() = default;
  explicit Owned(T* p) : p_(p) {}
  Owned(Owned&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = o.p_;
      o.p_ = nullptr;
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() { reset(); }
  void reset() {
    if (p_) p_->Release();
    p_ = nullptr;
  }
  T* release() {
    T* p = p_;
    p_ = nullptr;
    return p;
  }
  T* get() const { return p_; }
  T* operator->() const { return p_; }
  operator T*() const { return p_; }
  // For Create*(..., x.pv()).
  void** pv() {
    reset();
    return reinterpret_cast<void**>(&p_);
  }

 private:
  T* p_ = nullptr;
};

// One ND2 endpoint: adapter, overlapped file, CQ, QP, a registered buffer, a
// connector. Closed (everything released) when it goes out of scope.
struct Side {
  IND2Adapter* adapter = nullptr;
  HANDLE file = nullptr;
  IND2CompletionQueue* cq = nullptr;
  IND2QueuePair* qp = nullptr;
  IND2MemoryRegion* mr = nullptr;
  IND2Connector* conn = nullptr;
  std::vector<char> buf = std::vector<char>(1 << 16);
  OVERLAPPED ov{};

  void Open(const char* ip, ULONG mr_flags = ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ |
                                            ND_MR_FLAG_ALLOW_REMOTE_WRITE) {
    sockaddr_in a = V4(ip, 0);
    ASSERT_HR(NdOpenAdapter(IID_IND2Adapter, Sa(a), sizeof a, reinterpret_cast<void**>(&adapter)), ND_SUCCESS);
    ASSERT_HR(adapter->CreateOverlappedFile(&file), ND_SUCCESS);
    ov.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr);
    ASSERT_HR(adapter->CreateCompletionQueue(IID_IND2CompletionQueue, file, 256, 0, 0,
                                             reinterpret_cast<void**>(&cq)),
              ND_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(NewQp());
    ASSERT_HR(adapter->CreateMemoryRegion(IID_IND2MemoryRegion, file, reinterpret_cast<void**>(&mr)), ND_SUCCESS);
    ASSERT_HR(Await(mr, &ov, mr->Register(buf.data(), buf.size(), mr_flags, &ov)), ND_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(NewConnector());
  }
  void NewQp() {
    if (qp) qp->Release();
    qp = nullptr;
    ASSERT_HR(adapter->CreateQueuePair(IID_IND2QueuePair, cq, cq, this, 32, 32, 4, 4, 64,
                                       reinterpret_cast<void**>(&qp)),
              ND_SUCCESS);
  }
  void NewConnector() {
    if (conn) conn->Release();
    conn = nullptr;
    ASSERT_HR(adapter->CreateConnector(IID_IND2Connector, file, reinterpret_cast<void**>(&conn)), ND_SUCCESS);
  }
  ND2_SGE Sge(size_t off, ULONG len) { return ND2_SGE{buf.data() + off, len, mr->GetLocalToken()}; }
  HRESULT Recv(void* ctx, size_t off = 0, ULONG len = 4096) {
    ND2_SGE s = Sge(off, len);
    return qp->Receive(ctx, &s, 1);
  }
  HRESULT Send(void* ctx, size_t off, ULONG len, ULONG flags = 0) {
    ND2_SGE s = Sge(off, len);
    return qp->Send(ctx, &s, 1, flags);
  }
  // The next completion within ms (GetResults drives an inline adapter).
  std::optional<ND2_RESULT> Next(DWORD ms = kLongWaitMs) {
    const uint64_t until = NowMs() + ms;
    ND2_RESULT r{};
    do {
      if (cq->GetResults(&r, 1) == 1) return r;
      Pump(0);
    } while (NowMs() < until);
    return std::nullopt;
  }
  // No completion for ms.
  bool Quiet(DWORD ms) { return !Next(ms).has_value(); }
  Side() = default;
  Side(const Side&) = delete;
  Side& operator=(const Side&) = delete;
  ~Side() { Close(); }
  void Close() {
    if (conn) conn->Release();
    conn = nullptr;
    if (qp) qp->Release();
    qp = nullptr;
    if (mr) {
      Await(mr, &ov, mr->Deregister(&ov));
      mr->Release();
      mr = nullptr;
    }
    if (cq) cq->Release();
    cq = nullptr;
    if (ov.hEvent) CloseHandle(ov.hEvent);
    ov.hEvent = nullptr;
    if (file) CloseHandle(file);
    file = nullptr;
    if (adapter) adapter->Release();
    adapter = nullptr;
  }
};

// A listener on `side`'s adapter at ip:port (0: ephemeral), listening.
inline Owned<IND2Listener> Listen(Side& side, const char* ip, uint16_t port, ULONG backlog = 0) {
  Owned<IND2Listener> l;
  EXPECT_HR(side.adapter->CreateListener(IID_IND2Listener, side.file, l.pv()), ND_SUCCESS);
  if (!l) return l;
  sockaddr_in a = V4(ip, port);
  EXPECT_HR(l->Bind(Sa(a), sizeof a), ND_SUCCESS);
  EXPECT_HR(l->Listen(backlog), ND_SUCCESS);
  return l;
}

// Connects client to server (listener l at dest) with nothing special: the
// usual four steps, every result checked. The server's receive is posted
// first.
inline void Establish(Side& c, Side& s, IND2Listener* l, const sockaddr* dest, ULONG dest_len) {
  OVERLAPPED lov{};
  ASSERT_HR(l->GetConnectionRequest(s.conn, &lov), ND_PENDING);
  ASSERT_HR(c.conn->Connect(c.qp, dest, dest_len, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  ASSERT_HR(Await(l, &lov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(s.conn->Accept(s.qp, 1, 1, nullptr, 0, &s.ov), ND_PENDING);
  ASSERT_HR(Await(c.conn, &c.ov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(Await(c.conn, &c.ov, c.conn->CompleteConnect(&c.ov)), ND_SUCCESS);
  ASSERT_HR(Await(s.conn, &s.ov, ND_PENDING), ND_SUCCESS);
}

// NdStartup on a configuration written for the test; NdCleanup at the end.
class Process {
 public:
  Process(const std::string& ring, bool thread, const std::string& extra0 = "", const std::string& extra1 = "")
      : path_(WriteConfig(ring, thread, extra0, extra1)) {
    setenv("ND2_CONFIG", path_.c_str(), 1);
    started_ = NdStartup() == ND_SUCCESS;
  }
  ~Process() {
    if (started_) {
      EXPECT_HR(NdCleanup(), ND_SUCCESS);
    }
    unlink(path_.c_str());
  }
  bool started() const { return started_; }

 private:
  std::string path_;
  bool started_ = false;
};

}  // namespace nd2test
