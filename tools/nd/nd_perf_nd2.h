// SPDX-License-Identifier: MIT
// nd_perf_nd2.h: nd-perf's ND2 plumbing: how it fails (one line "nd-perf: [server: ]what",
// exit 1), waits with a limit (Limit, FinishWithin), and the ND2 objects of a side: its
// adapter (with our diagnostics extension for QPNs and port counters), a registered buffer
// (Region), a completion queue polled and waited on through Notify (Cq), and a connection
// (CQ, queue pair, connector: Connect / Accept / Disconnect within limits). The overlapped
// wait without a limit, the status names and the buffer allocation are nd_common.h's. Part
// of nd-perf's one translation unit (nd_perf.cc).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "nd_addr.h"
#include "nd_common.h"  // <ndsupport.h>; StatusName, FailHr, AllocBuffer, FinishOverlapped

namespace ndperf {

using Clock = std::chrono::steady_clock;

// ---- Failure reporting ---------------------------------------------------------------------------
inline thread_local const char* g_role = "";  // "server: " in --pair mode

[[noreturn]] inline void Die(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] inline void Die(const char* fmt, ...) {
  char msg[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fflush(stdout);
  fprintf(stderr, "nd-perf: %s%s\n", g_role, msg);
  fflush(stderr);
  _exit(1);
}

inline void Check(HRESULT hr, const char* what) {
  if (FAILED(hr)) Die("%s failed with %08x (%s)", what, static_cast<unsigned>(hr), ndtool::StatusName(hr));
}

// nd_addr.h's address; nd_common.h's line for a failed result (its status by name, its line).
using ndtool::Addr;
using ndtool::FailHr;

// ---- ND2 plumbing --------------------------------------------------------------------------------
// How long a wait may last: `secs` from when it was made (the --timeout, 60 s by default), or
// forever (a server's wait for its first client when --timeout was not given, as perftest's).
struct Limit {
  Clock::time_point at = Clock::time_point::max();
  uint32_t secs = 0;
  static Limit In(uint32_t s) { return Limit{Clock::now() + std::chrono::seconds(s), s}; }
  static Limit Forever() { return Limit{}; }
  bool forever() const { return at == Clock::time_point::max(); }
  bool Passed() const { return !forever() && Clock::now() > at; }
};

// A wait that ran past its limit: one line naming what it waited for, exit 1.
[[noreturn]] inline void TimedOut(const Limit& l, const char* what) { Die("timed out after %u s waiting for %s", l.secs, what); }

// An overlapped request's final status within `limit` (ndtool::FinishOverlapped's, but dying
// past the limit, naming `what`): the request's event waited on in slices, its status read
// without waiting (GetOverlappedResult(FALSE): ND_PENDING until done).
inline HRESULT FinishWithin(IND2Overlapped* o, OVERLAPPED* ov, HRESULT hr, const Limit& limit, const char* what) {
  if (hr != ND_PENDING) return hr;
  if (limit.forever()) return ndtool::FinishOverlapped(o, ov, hr);
  for (;;) {
    hr = o->GetOverlappedResult(ov, FALSE);
    if (hr != ND_PENDING) return hr;
    const auto now = Clock::now();
    if (now > limit.at) TimedOut(limit, what);
    const long long left = std::chrono::duration_cast<std::chrono::milliseconds>(limit.at - now).count();
    WaitForSingleObject(ov->hEvent, static_cast<DWORD>(std::clamp<long long>(left + 1, 1, 200)));
  }
}

struct Ov {
  OVERLAPPED ov{};
  Ov() {
    ov.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr);
    if (!ov.hEvent) Die("CreateEvent failed");
  }
  ~Ov() { CloseHandle(ov.hEvent); }
  Ov(const Ov&) = delete;
  Ov& operator=(const Ov&) = delete;
  bool pending() const { return static_cast<HRESULT>(static_cast<uint32_t>(ov.Internal)) == ND_PENDING; }
};

// One side's adapter.
struct Adapter {
  IND2Adapter* adapter = nullptr;
  HANDLE file = nullptr;
  IND2AdapterDiagnostics* diag = nullptr;  // our extension (QPNs for the printout); may be null
  ND2_ADAPTER_INFO info{};
  Addr local;

  void Open(const Addr& a) {
    local = a;
    Check(NdOpenAdapter(IID_IND2Adapter, a.sa(), a.len, reinterpret_cast<void**>(&adapter)), "NdOpenAdapter");
    Check(adapter->CreateOverlappedFile(&file), "IND2Adapter::CreateOverlappedFile");
    info.InfoVersion = ND_VERSION_2;
    ULONG len = sizeof info;
    Check(adapter->Query(&info, &len), "IND2Adapter::Query");
    if (adapter->QueryInterface(IID_IND2AdapterDiagnostics, reinterpret_cast<void**>(&diag)) != S_OK) diag = nullptr;
  }
  void Close() {
    if (diag) diag->Release();
    if (file) CloseHandle(file);
    if (adapter) adapter->Release();
    diag = nullptr;
    file = nullptr;
    adapter = nullptr;
  }
  // The frames our port has received so far (our extension's QueryPort); false without it.
  bool RxFrames(uint64_t* n) const {
    if (!diag) return false;
    ND2_PORT_DIAGNOSTICS d{};
    d.InfoVersion = ND2_DIAGNOSTICS_VERSION_1;
    ULONG cb = sizeof d;
    if (diag->QueryPort(&d, &cb) != ND_SUCCESS) return false;
    *n = d.RxPackets;
    return true;
  }
  uint32_t LocalQpn(IND2Connector* c) const {
    if (!diag || !c) return 0;
    ND2_CONNECTOR_DIAGNOSTICS d{};
    d.InfoVersion = ND2_DIAGNOSTICS_VERSION_1;
    ULONG cb = sizeof d;
    return diag->QueryConnector(c, &d, &cb) == ND_SUCCESS ? d.LocalQpn : 0;
  }
};

// A registered, page-aligned, zeroed buffer.
class Region {
 public:
  ~Region() { Close(); }
  void Open(Adapter& a, size_t len, ULONG flags) {
    len_ = len;
    buf_ = ndtool::AllocBuffer(len);
    Check(a.adapter->CreateMemoryRegion(IID_IND2MemoryRegion, a.file, reinterpret_cast<void**>(&mr_)),
          "IND2Adapter::CreateMemoryRegion");
    Check(ndtool::FinishOverlapped(mr_, &ov_.ov, mr_->Register(buf_, len, flags, &ov_.ov)),
          "IND2MemoryRegion::Register");
    registered_ = true;
  }
  void Close() {
    if (mr_) {
      if (registered_)
        Check(ndtool::FinishOverlapped(mr_, &ov_.ov, mr_->Deregister(&ov_.ov)), "IND2MemoryRegion::Deregister");
      mr_->Release();
    }
    free(buf_);
    mr_ = nullptr;
    buf_ = nullptr;
    registered_ = false;
  }
  char* data() const { return buf_; }
  size_t size() const { return len_; }
  UINT32 ltoken() const { return mr_->GetLocalToken(); }
  UINT32 rtoken() const { return mr_->GetRemoteToken(); }
  ND2_SGE Sge(size_t off, size_t len) const { return ND2_SGE{buf_ + off, static_cast<ULONG>(len), ltoken()}; }

 private:
  char* buf_ = nullptr;
  size_t len_ = 0;
  IND2MemoryRegion* mr_ = nullptr;
  Ov ov_;
  bool registered_ = false;
};

// A completion queue with its notification (-e, and long waits).
class Cq {
 public:
  ~Cq() { Close(); }
  void Open(Adapter& a, ULONG depth) {
    Check(a.adapter->CreateCompletionQueue(IID_IND2CompletionQueue, a.file, depth, 0, 0,
                                           reinterpret_cast<void**>(&cq_)),
          "IND2Adapter::CreateCompletionQueue");
  }
  void Close() {
    if (!cq_) return;
    if (armed_ && note_.pending()) {
      cq_->CancelOverlappedRequests();
      cq_->GetOverlappedResult(&note_.ov, TRUE);
    }
    armed_ = false;
    cq_->Release();
    cq_ = nullptr;
  }
  IND2CompletionQueue* get() const { return cq_; }
  // Results now (a poll: it drives an inline-progress adapter).
  ULONG Poll(ND2_RESULT* r, ULONG n) { return cq_->GetResults(r, n); }
  // At least one result: polled for `spin`, then waited for through a notification (the wait
  // drives the adapter and naps when nothing moves). Dies past the limit, naming `what`.
  ULONG Wait(ND2_RESULT* r, ULONG n, const Limit& limit, const char* what,
             std::chrono::microseconds spin = std::chrono::milliseconds(20)) {
    const ULONG got = WaitUntil(r, n, limit.at, spin);
    if (!got) TimedOut(limit, what);
    return got;
  }
  // The same, but 0 once `deadline` has passed with no result.
  ULONG WaitUntil(ND2_RESULT* r, ULONG n, Clock::time_point deadline,
                  std::chrono::microseconds spin = std::chrono::milliseconds(20)) {
    const auto spin_end = Clock::now() + spin;
    for (;;) {
      if (const ULONG got = cq_->GetResults(r, n)) return got;
      const auto now = Clock::now();
      if (now > deadline) return 0;
      if (now < spin_end) continue;
      if (!armed_) {
        const HRESULT h = cq_->Notify(ND_CQ_NOTIFY_ANY, &note_.ov);
        if (h != ND_PENDING && h != ND_SUCCESS) Check(h, "IND2CompletionQueue::Notify");
        armed_ = h == ND_PENDING;
        continue;  // a result that came meanwhile satisfied it: poll again
      }
      WaitForSingleObject(note_.ov.hEvent, 200);
      if (!note_.pending()) armed_ = false;
    }
  }

 private:
  IND2CompletionQueue* cq_ = nullptr;
  Ov note_;
  bool armed_ = false;
};

// ---- A connection: CQ, QP, connector ----------------------------------------------------------------
struct QpShape {
  ULONG recv_depth = 1, init_depth = 1, inline_size = 0, cq_depth = 8;
};

class Connection {
 public:
  explicit Connection(Adapter& a) : a_(a) {}
  ~Connection() { Close(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void Open(const QpShape& s) {
    cq_.Open(a_, s.cq_depth);
    Check(a_.adapter->CreateQueuePair(IID_IND2QueuePair, cq_.get(), cq_.get(), nullptr, s.recv_depth,
                                      s.init_depth, 1, 1, s.inline_size, reinterpret_cast<void**>(&qp_)),
          "IND2Adapter::CreateQueuePair");
    Check(a_.adapter->CreateConnector(IID_IND2Connector, a_.file, reinterpret_cast<void**>(&conn_)),
          "IND2Adapter::CreateConnector");
  }
  void Close() {
    if (conn_) {
      conn_->CancelOverlappedRequests();
      conn_->Release();
      conn_ = nullptr;
    }
    if (qp_) {
      qp_->Release();
      qp_ = nullptr;
    }
    cq_.Close();
  }
  // Client: Connect within `limit`, then CompleteConnect within as many seconds (`name`:
  // "connection A").
  // ND_CONNECTION_REFUSED (nobody listens yet) is returned, anything else that fails dies.
  HRESULT Connect(const Addr& server, ULONG in_rl, ULONG out_rl, const Limit& limit, const char* name) {
    Addr local = a_.local;
    local.set_port(0);
    Check(conn_->Bind(local.sa(), local.len), "IND2Connector::Bind");
    std::string what = std::string("the server's answer to our connection request (") + name + ")";
    const HRESULT h = FinishWithin(conn_, &ov_.ov,
                                   conn_->Connect(qp_, server.sa(), server.len, in_rl, out_rl, nullptr, 0, &ov_.ov),
                                   limit, what.c_str());
    if (h == ND_CONNECTION_REFUSED) return h;
    Check(h, "IND2Connector::Connect");
    what = std::string("CompleteConnect (") + name + ")";
    Check(FinishWithin(conn_, &ov_.ov, conn_->CompleteConnect(&ov_.ov), Limit::In(limit.secs), what.c_str()),
          "IND2Connector::CompleteConnect");
    connected_ = true;
    return ND_SUCCESS;
  }
  // Server: the next connection request of `l` (waited for within `request`), accepted within
  // `secs` (the client's RTU) with the read limits the peer asked for, capped at `max_rl`.
  void Accept(IND2Listener* l, ULONG max_rl, const Limit& request, uint32_t secs, const char* name) {
    std::string what = std::string("a client to connect (") + name + ")";
    Check(FinishWithin(l, &ov_.ov, l->GetConnectionRequest(conn_, &ov_.ov), request, what.c_str()),
          "IND2Listener::GetConnectionRequest");
    ULONG in = 0, out = 0;
    Check(conn_->GetReadLimits(&in, &out), "IND2Connector::GetReadLimits");
    in = std::min(in, max_rl);
    out = std::min(out, max_rl);
    what = std::string("the client's answer to our accept (") + name + ")";
    Check(FinishWithin(conn_, &ov_.ov, conn_->Accept(qp_, in, out, nullptr, 0, &ov_.ov), Limit::In(secs),
                       what.c_str()),
          "IND2Connector::Accept");
    connected_ = true;
  }
  // The read limits in force (after Connect / Accept): what we serve, what we may issue.
  void ReadLimits(ULONG* in, ULONG* out) { Check(conn_->GetReadLimits(in, out), "IND2Connector::GetReadLimits"); }
  // Disconnect, waited for within `limit` (the peer's DREP, or its DREQ crossing ours).
  void Disconnect(const Limit& limit, const char* name) {
    if (!connected_) return;
    connected_ = false;
    const std::string what = std::string("the disconnect of ") + name;
    const HRESULT h = FinishWithin(conn_, &ov_.ov, conn_->Disconnect(&ov_.ov), limit, what.c_str());
    if (FAILED(h) && h != ND_CONNECTION_INVALID) Check(h, "IND2Connector::Disconnect");
  }
  IND2QueuePair* qp() const { return qp_; }
  IND2Connector* connector() const { return conn_; }
  Cq& cq() { return cq_; }

 private:
  Adapter& a_;
  Cq cq_;
  IND2QueuePair* qp_ = nullptr;
  IND2Connector* conn_ = nullptr;
  Ov ov_;
  bool connected_ = false;
};

}  // namespace ndperf
