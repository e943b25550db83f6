// SPDX-License-Identifier: MIT
// nd-perf: perftest (linux-rdma/perftest: ib_send_bw, ib_write_bw, ib_read_bw, ib_send_lat,
// ib_write_lat, ib_read_lat) as one ND2 program, written for this project from perftest's
// documented options, its output and its rdma_cm (-R) exchange as seen on the wire (no code
// copied). Either side can be perftest 6.06 (Debian 12's package) run with -R:
//
//   nd-perf TEST [options]            server        TEST: send_bw write_bw read_bw
//   nd-perf TEST [options] SERVER     client              send_lat write_lat read_lat
//
// The exchange with -R (as perftest 6.06 does it; docs/tools.md, nd-perf):
// two RC connections to the same rdma_cm port (-p, 18515). A, the "communication" connection,
// carries small Sends; B carries the test. On A, the client sends each message first and the
// server answers with its own (each side posts its receives ahead):
//   version string (16 B, "6.06"), page size (4 B, big-endian), cache line (4 B), the path MTU
//   as a decimal string (2 B), an all-zero 56-byte pingpong_dest; then B is connected; another
//   zero pingpong_dest; then the real pingpong_dest {lid, out_reads, qpn, psn, rkey, vaddr, gid,
//   srqn, gid_index} (56 B, big-endian) three times (bw tests) or four times (send_bw, *_lat);
//   the test on B; then: write_bw/read_bw a pingpong_dest (the client is done), the client's
//   report (size, iterations as u64, BW peak, BW average, message rate as big-endian doubles;
//   the server answers with its own) and a last pingpong_dest; send_bw, send_lat, read_lat a
//   last pingpong_dest; write_lat nothing. Both sides disconnect B and A.
//
// ND2 only: <ndsupport.h> (through nd_common.h) and the C++ standard library; the adapters are
// those of ND2_CONFIG, or of a temporary configuration the port options write (--ip ...), or
// two adapters on an in-process net_ring pair with the server on its own thread (--pair).
#include "nd_addr.h"
#include "nd_common.h"
#include "nd_port_options.h"

#include <endian.h>
#include <getopt.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

using ndtool::FailHr;
using Clock = std::chrono::steady_clock;

// ---- The tests -----------------------------------------------------------------------------------
enum class Verb { kSend, kWrite, kRead };
enum class Kind { kBw, kLat };

struct TestInfo {
  const char* name;   // "write_bw"
  const char* title;  // perftest's banner
  Verb verb;
  Kind kind;
};

constexpr TestInfo kTests[] = {
    {"send_bw", "Send BW Test", Verb::kSend, Kind::kBw},
    {"write_bw", "RDMA_Write BW Test", Verb::kWrite, Kind::kBw},
    {"read_bw", "RDMA_Read BW Test", Verb::kRead, Kind::kBw},
    {"send_lat", "Send Latency Test", Verb::kSend, Kind::kLat},
    {"write_lat", "RDMA_Write Latency Test", Verb::kWrite, Kind::kLat},
    {"read_lat", "RDMA_Read Latency Test", Verb::kRead, Kind::kLat},
};

// perftest's constants.
constexpr uint16_t kDefaultPort = 18515;
constexpr uint64_t kMaxSize = 1u << 23;  // -a: 2 .. 8 MiB
constexpr uint32_t kCycleBuffer = 4096;  // the page size perftest exchanges
constexpr uint32_t kCacheLine = 64;
constexpr const char kVersion[] = "6.06";  // the perftest version we speak (Debian 12)
constexpr size_t kDestLen = 56;            // sizeof(struct pingpong_dest)
constexpr const char kResultLine[] =
    "---------------------------------------------------------------------------------------\n";

struct Options {
  const TestInfo* test = nullptr;
  bool server = true;
  std::string server_name;  // the client's positional argument
  std::string source_ip;    // --source_ip: the server's bind address / the client's local one
  uint16_t port = kDefaultPort;
  uint64_t size = 0;  // 0: the test's default
  uint64_t iters = 0;
  bool all = false;
  uint32_t duration = 0;  // -D seconds (bw tests)
  uint32_t mtu = 0;       // -m
  uint32_t tx_depth = 0, rx_depth = 0, cq_mod = 0, out_reads = 0, inline_size = 0;
  bool events = false;  // -e: wait for completions (Notify) instead of polling
  bool no_peak = false;
  bool gbits = false;
  std::string dev;  // -d: accepted (the adapter is the one of the address)
  uint32_t timeout_s = 0;
  // The adapters.
  bool port_options = false;  // --ip given: write an ND2 configuration
  bool port_only_sets = true;  // of the port options, only --set (which --pair takes too)
  ndtool::PortOptions adapter;
  bool pair = false;  // server and client in this process, two adapters on a net_ring pair
  std::string pair_profile = "net_ring.ini";
  bool quiet = false;  // the --pair server prints nothing

  bool bw() const { return test->kind == Kind::kBw; }
  bool lat() const { return test->kind == Kind::kLat; }
  Verb verb() const { return test->verb; }
  std::vector<uint64_t> Sizes() const {
    std::vector<uint64_t> v;
    if (all) {
      for (int i = 1; i < 24; i++) v.push_back(uint64_t{1} << i);
    } else {
      v.push_back(size);
    }
    return v;
  }
  uint64_t MaxSize() const { return all ? kMaxSize : size; }
};

// ---- Small helpers -------------------------------------------------------------------------------
thread_local const char* g_role = "";  // "server: " in --pair mode

[[noreturn]] void Die(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] void Die(const char* fmt, ...) {
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

void Check(HRESULT hr, const char* what) {
  if (FAILED(hr)) Die("%s failed with %08x (%s)", what, static_cast<unsigned>(hr), ndtool::StatusName(hr));
}

double NowUs() { return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count(); }

using ndtool::Addr;

// perftest's pingpong_dest as it goes over connection A: 56 bytes, every field big-endian.
struct Dest {
  uint32_t lid = 0, out_reads = 0, qpn = 0, psn = 0, rkey = 0;
  uint64_t vaddr = 0;
  uint8_t gid[16] = {};
  uint32_t srqn = 0, gid_index = 0;

  void Encode(uint8_t* b) const {
    memset(b, 0, kDestLen);
    auto put32 = [&](size_t off, uint32_t v) {
      v = htobe32(v);
      memcpy(b + off, &v, 4);
    };
    put32(0, lid);
    put32(4, out_reads);
    put32(8, qpn);
    put32(12, psn);
    put32(16, rkey);
    const uint64_t va = htobe64(vaddr);
    memcpy(b + 24, &va, 8);
    memcpy(b + 32, gid, 16);
    put32(48, srqn);
    put32(52, gid_index);
  }
  static Dest Decode(const uint8_t* b) {
    Dest d;
    auto get32 = [&](size_t off) {
      uint32_t v;
      memcpy(&v, b + off, 4);
      return be32toh(v);
    };
    d.lid = get32(0);
    d.out_reads = get32(4);
    d.qpn = get32(8);
    d.psn = get32(12);
    d.rkey = get32(16);
    uint64_t va;
    memcpy(&va, b + 24, 8);
    d.vaddr = be64toh(va);
    memcpy(d.gid, b + 32, 16);
    d.srqn = get32(48);
    d.gid_index = get32(52);
    return d;
  }
};

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
[[noreturn]] void TimedOut(const Limit& l, const char* what) { Die("timed out after %u s waiting for %s", l.secs, what); }

// An overlapped request's final status (waited for when it pended; the wait drives an
// inline-progress adapter).
HRESULT Finish(IND2Overlapped* o, OVERLAPPED* ov, HRESULT hr) {
  if (hr == ND_PENDING) hr = o->GetOverlappedResult(ov, TRUE);
  return hr;
}

// The same within `limit` (dies past it, naming `what`): the request's event waited on in
// slices, its status read without waiting (GetOverlappedResult(FALSE): ND_PENDING until done).
HRESULT FinishWithin(IND2Overlapped* o, OVERLAPPED* ov, HRESULT hr, const Limit& limit, const char* what) {
  if (hr != ND_PENDING) return hr;
  if (limit.forever()) return o->GetOverlappedResult(ov, TRUE);
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
    Check(Finish(mr_, &ov_.ov, mr_->Register(buf_, len, flags, &ov_.ov)), "IND2MemoryRegion::Register");
    registered_ = true;
  }
  void Close() {
    if (mr_) {
      if (registered_) Check(Finish(mr_, &ov_.ov, mr_->Deregister(&ov_.ov)), "IND2MemoryRegion::Deregister");
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

// ---- Connection A: perftest's "communication" channel ---------------------------------------------
class Comm {
 public:
  static constexpr size_t kSlot = 64;
  static constexpr ULONG kSlots = 4;  // receives kept posted

  Comm(Adapter& a, bool client, uint32_t timeout_s) : conn_(a), a_(a), client_(client), timeout_s_(timeout_s) {}

  void Open() {
    conn_.Open(QpShape{kSlots, 2, 0, 16});
    mem_.Open(a_, kSlot * (kSlots + 1), ND_MR_FLAG_ALLOW_LOCAL_WRITE);
    for (ULONG i = 0; i < kSlots; i++) PostRecv(i);
  }
  Connection& conn() { return conn_; }

  // The message exchange of perftest's ctx_xchg_data: the client sends first.
  // The peer answers only what it received: once its answer is here our Send was delivered,
  // even if the connection goes before that Send's ACK (lost on a lossy link) comes. The last
  // message of the closing handshake may be followed by the peer's disconnect at once, with
  // its ACK lost the same way.
  void Exchange(const void* mine, void* theirs, size_t n, const char* what, bool closing = false) {
    if (client_) {
      Send(mine, n, what, SendEnd::kAnswered);
      Recv(theirs, n, what);
    } else {
      Recv(theirs, n, what);
      Send(mine, n, what, closing ? SendEnd::kPeerMayClose : SendEnd::kAcked);
    }
  }
  Dest HandShake(const Dest& mine, const char* what, bool closing = false) {
    uint8_t out[kDestLen], in[kDestLen];
    mine.Encode(out);
    Exchange(out, in, kDestLen, what, closing);
    return Dest::Decode(in);
  }
  Dest CloseHandShake(const Dest& mine) { return HandShake(mine, "closing handshake", true); }
  // The server's handshake after the client's test: it comes when the client is done, however
  // long that takes (perftest's server waits as long) while the client's test traffic reaches
  // our port; the timeout without a frame from it ends the wait (a client that stopped, a link
  // that drops everything), as does the connection going.
  Dest HandShakeAfterTest(const Dest& mine, const char* what) {
    patient_ = true;
    const Dest d = HandShake(mine, what);
    patient_ = false;
    return d;
  }
  // A message if one is there now (non-blocking); its length in *n.
  bool TryRecv(void* out, size_t cap, size_t* n) {
    Drain(false, "");
    if (arrived_.empty()) return false;
    *n = Take(out, cap);
    return true;
  }

  // How a Send may end: its completion (kAcked); or the connection going once the peer's
  // answer has arrived (kAnswered), or at all (kPeerMayClose: the last message before the
  // peer's disconnect).
  enum class SendEnd { kAcked, kAnswered, kPeerMayClose };
  void Send(const void* data, size_t n, const char* what, SendEnd end = SendEnd::kAcked) {
    char* slot = mem_.data() + kSlots * kSlot;
    memcpy(slot, data, n);
    const ND2_SGE sge = mem_.Sge(kSlots * kSlot, n);
    Check(conn_.qp()->Send(&send_ctx_, &sge, 1, 0), "IND2QueuePair::Send (connection A)");
    send_done_ = false;
    while (!send_done_) {
      if (down_) {
        if (end == SendEnd::kPeerMayClose || (end == SendEnd::kAnswered && !arrived_.empty())) return;
        Die("connection A went down while sending our %s", what);
      }
      Drain(true, what);
    }
  }
  void Recv(void* out, size_t n, const char* what) {
    while (arrived_.empty()) {
      if (down_) Die("connection A went down while waiting for the peer's %s", what);
      Drain(true, what);
    }
    const size_t got = Take(out, n);
    if (got != n)
      Die("protocol: expected the peer's %s (%zu bytes) on connection A, got a message of %zu bytes "
          "(is the peer perftest with -R, and the same test?)",
          what, n, got);
  }

 private:
  void PostRecv(ULONG i) {
    const ND2_SGE sge = mem_.Sge(i * kSlot, kSlot);
    Check(conn_.qp()->Receive(reinterpret_cast<void*>(uintptr_t{i} + 1), &sge, 1), "IND2QueuePair::Receive");
  }
  // Results of the CQ: a receive is queued (in order), a send marks the send done.
  void Drain(bool wait, const char* what) {
    ND2_RESULT r[8];
    char msg[160];
    snprintf(msg, sizeof msg, "%s%s on connection A", strncmp(what, "the ", 4) == 0 ? "" : "the peer's ", what);
    const ULONG n = !wait ? conn_.cq().Poll(r, 8)
                    : patient_ ? PatientWait(r, 8, msg)
                               : conn_.cq().Wait(r, 8, Limit::In(timeout_s_), msg);
    for (ULONG i = 0; i < n; i++) {
      if (r[i].Status == ND_CANCELED) {  // flushed: the connection is going (the peer is done)
        down_ = true;
        continue;
      }
      if (r[i].Status != ND_SUCCESS) FailHr(__LINE__, r[i].Status, "a request on connection A");
      if (r[i].RequestContext == &send_ctx_) {
        send_done_ = true;
      } else {
        arrived_.push_back({static_cast<ULONG>(reinterpret_cast<uintptr_t>(r[i].RequestContext) - 1),
                            static_cast<size_t>(r[i].BytesTransferred)});
      }
    }
  }
  // The patient wait: results, for as long as our port keeps receiving frames (the client's
  // test: its Writes, Reads, Sends and ACKs); `timeout_s_` without one (or, without our port
  // counters, `timeout_s_` at all) dies naming `what`.
  ULONG PatientWait(ND2_RESULT* r, ULONG cap, const char* what) {
    uint64_t frames = 0;
    const bool counted = a_.RxFrames(&frames);
    for (;;) {
      const Limit l = Limit::In(timeout_s_);
      if (const ULONG n = conn_.cq().WaitUntil(r, cap, l.at)) return n;
      uint64_t now = 0;
      if (!counted || !a_.RxFrames(&now) || now == frames)
        Die("timed out after %u s waiting for %s: no frame from the peer in %u s", timeout_s_, what, timeout_s_);
      frames = now;
    }
  }
  size_t Take(void* out, size_t cap) {
    const auto [slot, len] = arrived_.front();
    arrived_.pop_front();
    memcpy(out, mem_.data() + slot * kSlot, std::min(len, cap));
    PostRecv(slot);
    return len;
  }

  Connection conn_;
  Adapter& a_;
  Region mem_;
  bool client_;
  uint32_t timeout_s_;
  int send_ctx_ = 0;
  bool send_done_ = false;
  bool down_ = false;
  bool patient_ = false;
  std::deque<std::pair<ULONG, size_t>> arrived_;
};

// ---- Reports ---------------------------------------------------------------------------------------
struct BwReport {
  uint64_t size = 0, iters = 0;
  double peak = 0, avg = 0, msg_rate = 0;
};

struct Printer {
  const Options& o;
  bool on() const { return !o.quiet; }
  void Out(const char* fmt, ...) const __attribute__((format(printf, 2, 3))) {
    if (!on()) return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
  }
  void BwHeader() const {
    Out(o.gbits ? " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
                : " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n");
  }
  void BwRow(const BwReport& r) const {
    Out(" %-7" PRIu64 "    %-7" PRIu64 "          %-7.2f            %-7.2f\t\t   %-7.6f\n", r.size, r.iters, r.peak,
        r.avg, r.msg_rate);
  }
  void LatHeader() const {
    Out(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
        "99%% percentile[usec]   99.9%% percentile[usec] \n");
  }
  // deltas: one per measured iteration (us), divided by `factor` (2: a ping-pong's round trip).
  void LatRow(uint64_t size, uint64_t iters, std::vector<double> d, double factor) const {
    if (d.empty()) d.push_back(0);
    for (double& x : d) x /= factor;
    std::sort(d.begin(), d.end());
    double sum = 0;
    for (double x : d) sum += x;
    const double avg = sum / static_cast<double>(d.size());
    double var = 0;
    for (double x : d) var += (x - avg) * (x - avg);
    const double stdev = std::sqrt(var / static_cast<double>(d.size()));
    auto pct = [&](double p) {
      size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(d.size())));
      return d[std::min(d.size() - 1, i > 0 ? i - 1 : 0)];
    };
    Out(" %-7" PRIu64 " %" PRIu64 "          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f "
        "\t\t%-7.2f\n",
        size, iters, d.front(), d.back(), d[d.size() / 2], avg, stdev, pct(0.99), pct(0.999));
  }
  void Line() const { Out("%s", kResultLine); }
};

// BW figures from per-request post / completion times (us), perftest's way: the average over
// the whole run, the peak over the best window of consecutive requests.
BwReport ComputeBw(const Options& o, uint64_t size, const std::vector<double>& posted,
                   const std::vector<double>& completed) {
  BwReport r;
  r.size = size;
  r.iters = completed.size();
  if (completed.empty()) return r;
  const double unit = o.gbits ? 125000000.0 : 1048576.0;  // Gb (10^9 bits) or MiB per second
  const double total_us = std::max(completed.back() - posted.front(), 1e-3);
  r.avg = static_cast<double>(size) * static_cast<double>(r.iters) / total_us * 1e6 / unit;
  r.msg_rate = static_cast<double>(r.iters) / total_us;  // per us = millions per second
  if (o.no_peak) return r;
  // The shortest mean time per request over windows [i, j]: every window up to 5000 requests
  // (perftest's default count), windows up to a length that keeps the work near 2e7 steps above.
  double best = total_us / static_cast<double>(r.iters);
  const size_t n = std::min(completed.size(), posted.size());
  const size_t span = n <= 5000 ? n : std::max<size_t>(1, 20'000'000 / n);
  for (size_t i = 0; i < n; i++)
    for (size_t j = i; j < n && j < i + span; j++)
      if (completed[j] > posted[i])  // (a window of no time: completions seen in one poll)
        best = std::min(best, (completed[j] - posted[i]) / static_cast<double>(j - i + 1));
  r.peak = static_cast<double>(size) / best * 1e6 / unit;
  return r;
}

// ---- One side of a test -------------------------------------------------------------------------
class Side {
 public:
  Side(const Options& o, bool client) : o_(o), client_(client), p_{o} {}

  // Server: listens on `bind` (port -p) and serves one test. Client: connects to `server`.
  void Run(const Addr& local, const Addr& peer_or_bind, std::atomic<bool>* listening) {
    a_.Open(local);
    comm_ = std::make_unique<Comm>(a_, client_, TimeoutS());
    comm_->Open();
    IND2Listener* listener = nullptr;
    if (!client_) {
      Check(a_.adapter->CreateListener(IID_IND2Listener, a_.file, reinterpret_cast<void**>(&listener)),
            "IND2Adapter::CreateListener");
      Check(listener->Bind(peer_or_bind.sa(), peer_or_bind.len), "IND2Listener::Bind");
      Check(listener->Listen(0), "IND2Listener::Listen");
      p_.Out("\n************************************\n* Waiting for client to connect... *\n"
             "************************************\n");
      if (listening) listening->store(true);
      // The first client: waited for as long as it takes, unless --timeout was given.
      comm_->conn().Accept(listener, 0, o_.timeout_s ? Limit::In(o_.timeout_s) : Limit::Forever(), TimeoutS(),
                           "connection A");
    } else {
      ConnectComm(peer_or_bind);
    }

    // The parameters (perftest's exchange_versions, check_sys_data, check_mtu).
    char ver[16] = {}, rver[17] = {};
    memcpy(ver, kVersion, sizeof kVersion);
    comm_->Exchange(ver, rver, 16, "version");
    const double rv = atof(rver);
    if (rv >= 5.32) {
      uint32_t mine = htobe32(kCycleBuffer), theirs = 0;
      comm_->Exchange(&mine, &theirs, 4, "page size");
      mine = htobe32(kCacheLine);
      comm_->Exchange(&mine, &theirs, 4, "cache line size");
    }
    if (rv >= 5.1) {
      char cur[4] = {}, rem[4] = {};
      snprintf(cur, sizeof cur, "%d", MtuEnum());
      comm_->Exchange(cur, rem, rv >= 5.31 ? 2 : 4, "MTU");
    }

    // Connection B (perftest's create_rdma_cm_connection: a handshake before and after).
    Dest zero;
    comm_->HandShake(zero, "handshake before connection B");
    OpenData();
    const ULONG max_rl = o_.verb() == Verb::kRead ? OutReads() : 0;
    if (!client_) {
      data_->Accept(listener, max_rl, Limit::In(TimeoutS()), TimeoutS(), "connection B");
    } else {
      ConnectData(peer_or_bind, max_rl);
    }
    if (listener) listener->Release();
    comm_->HandShake(zero, "handshake after connection B");
    ULONG in_rl = 0, out_rl = 0;
    data_->ReadLimits(&in_rl, &out_rl);
    // Reads we may have in flight: what the peer serves, at most what we asked for.
    read_limit_ = std::max<ULONG>(1, std::min(out_rl, std::max<ULONG>(max_rl, 1)));

    // Our pingpong_dest, and the peer's.
    Dest me;
    me.out_reads = o_.verb() == Verb::kRead ? out_rl : 1;
    me.qpn = a_.LocalQpn(data_->connector());
    me.rkey = mem_.rtoken();
    me.vaddr = reinterpret_cast<uint64_t>(mem_.data()) + half_;
    a_.local.Gid(me.gid);
    me.gid_index = 0;
    const int pre = o_.lat() ? 4 : 3;
    for (int i = 0; i < pre; i++) peer_ = comm_->HandShake(me, "pingpong_dest");
    PrintInfo(me);

    if (o_.bw()) RunBw(me);
    else RunLat(me);

    // Both connections go (B first); the peer may have started: a crossed DREQ is fine.
    data_->Disconnect(Limit::In(TimeoutS()), "connection B");
    comm_->conn().Disconnect(Limit::In(TimeoutS()), "connection A");
    data_.reset();
    comm_.reset();
    mem_.Close();
    a_.Close();
  }

 private:
  uint32_t TimeoutS() const { return o_.timeout_s ? o_.timeout_s : 60; }
  Limit Deadline() const { return Limit::In(TimeoutS()); }
  int MtuEnum() const {
    const uint32_t m = o_.mtu ? o_.mtu : 1024;
    int e = 1;
    for (uint32_t v = 256; v < m && e < 5; v <<= 1) e++;
    return e;
  }
  ULONG OutReads() const {
    const ULONG want = o_.out_reads ? o_.out_reads : 16;
    return std::min<ULONG>(want, std::min(a_.info.MaxInboundReadLimit, a_.info.MaxOutboundReadLimit));
  }
  ULONG TxDepth() const {
    ULONG d = o_.tx_depth ? o_.tx_depth : (o_.bw() ? 128 : 1);
    if (o_.bw() && !o_.duration && o_.iters < d) d = static_cast<ULONG>(std::max<uint64_t>(1, o_.iters));
    return std::min<ULONG>(d, a_.info.MaxInitiatorQueueDepth);
  }
  ULONG RxDepth() const {
    ULONG d = o_.rx_depth ? o_.rx_depth : 512;
    if (!o_.duration && o_.iters + 1 < d) d = static_cast<ULONG>(o_.iters + 1);
    return std::min<ULONG>(d, a_.info.MaxReceiveQueueDepth);
  }
  // -I, capped at the adapter's inline limit; the flag for a request of `size`.
  ULONG InlineSize() const { return std::min<ULONG>(o_.inline_size, a_.info.MaxInlineDataSize); }
  ULONG InlineFlag(uint64_t size) const { return InlineSize() && size <= InlineSize() ? ND_OP_FLAG_INLINE : 0; }
  ULONG CqMod() const {
    ULONG m = o_.cq_mod ? o_.cq_mod : 100;
    return std::max<ULONG>(1, std::min(m, TxDepth()));
  }

  // Connection B's objects and the test buffer: [0, half) is what we send (and the last byte
  // of a write_lat message, its counter), [half, 2 half) what the peer writes and reads (its
  // address and token go in our pingpong_dest) and what our Reads and receives fill.
  void OpenData() {
    data_ = std::make_unique<Connection>(a_);
    half_ = std::max<size_t>(o_.MaxSize(), kCycleBuffer);
    half_ = (half_ + 4095) / 4096 * 4096;
    mem_.Open(a_, 2 * half_,
              ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ | ND_MR_FLAG_ALLOW_REMOTE_WRITE |
                  ND_MR_FLAG_RDMA_READ_SINK);
    // Payload: a byte pattern (the last byte of a write_lat message is its counter).
    for (size_t i = 0; i < half_; i++) mem_.data()[i] = static_cast<char>(i * 7 + 1);
    QpShape s;
    s.init_depth = std::max<ULONG>(TxDepth(), 2);
    s.recv_depth = o_.verb() == Verb::kSend ? RxDepth() : 1;
    s.inline_size = InlineSize();
    s.cq_depth = s.init_depth + s.recv_depth + 8;
    data_->Open(s);
    // Receives before the connection exists: the peer may send as soon as it is up.
    if (o_.verb() == Verb::kSend && (!client_ || o_.lat()))
      for (ULONG i = 0; i < s.recv_depth; i++) PostDataRecv(i);
  }

  // Client: connection A, retried while refused (the server may not listen yet).
  void ConnectComm(const Addr& server) {
    const Limit limit = Limit::In(TimeoutS());
    for (;;) {
      if (comm_->conn().Connect(server, 0, 0, limit, "connection A") == ND_SUCCESS) return;
      if (limit.Passed())
        Die("timed out after %u s waiting for a server on %s port %u (connection A refused: nobody listens?)",
            limit.secs, server.ip().c_str(), o_.port);
      ndtool::SleepMs(200);
      comm_ = std::make_unique<Comm>(a_, client_, TimeoutS());  // a new connector and queue pair
      comm_->Open();
    }
  }
  // Client: connection B, retried while refused (perftest's server listens for it only after
  // the handshake before it; perftest's client retries 10 times, 100 ms apart).
  void ConnectData(const Addr& server, ULONG rl) {
    const Limit limit = Limit::In(std::min<uint32_t>(10, TimeoutS()));
    for (;;) {
      if (data_->Connect(server, rl, rl, limit, "connection B") == ND_SUCCESS) return;
      if (limit.Passed())
        Die("timed out after %u s waiting for the server to accept connection B on %s port %u (refused)", limit.secs,
            server.ip().c_str(), o_.port);
      ndtool::SleepMs(100);
      data_.reset();
      mem_.Close();
      OpenData();
    }
  }

  void PrintInfo(const Dest& me) {
    const bool bw = o_.bw();
    p_.Out("%s", kResultLine);
    p_.Out("                    %s\n", o_.test->title);
    p_.Out(" Dual-port       : OFF\t\tDevice         : nd2 %s\n", a_.local.ip().c_str());
    p_.Out(" Number of qps   : 1\t\tTransport type : IB\n");
    p_.Out(" Connection type : RC\t\tUsing SRQ      : OFF\n");
    if (client_ || o_.verb() != Verb::kSend) {
      if (o_.verb() != Verb::kRead || client_) p_.Out(" TX depth        : %u\n", static_cast<unsigned>(TxDepth()));
    }
    if (o_.verb() == Verb::kSend) p_.Out(" RX depth        : %u\n", static_cast<unsigned>(RxDepth()));
    if (bw) p_.Out(" CQ Moderation   : %u\n", static_cast<unsigned>(CqMod()));
    if (o_.mtu) p_.Out(" Mtu             : %u[B]\n", o_.mtu);
    else p_.Out(" Mtu             : the adapter's (ND2_CONFIG)\n");
    p_.Out(" Link type       : Ethernet\n");
    if (o_.verb() == Verb::kRead) p_.Out(" Outstand reads  : %u\n", static_cast<unsigned>(read_limit_));
    else p_.Out(" Max inline data : %u[B]\n", static_cast<unsigned>(InlineSize()));
    p_.Out(" rdma_cm QPs\t : ON\n Data ex. method : rdma_cm\n");
    p_.Out("%s", kResultLine);
    PrintDest("local", me);
    PrintDest("remote", peer_);
    p_.Out("%s", kResultLine);
  }
  void PrintDest(const char* side, const Dest& d) {
    p_.Out(" %s address: LID %#04x QPN %#06x PSN %#06x\n", side, d.lid, d.qpn, d.psn);
    p_.Out(" GID: %02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d\n", d.gid[0],
           d.gid[1], d.gid[2], d.gid[3], d.gid[4], d.gid[5], d.gid[6], d.gid[7], d.gid[8], d.gid[9], d.gid[10],
           d.gid[11], d.gid[12], d.gid[13], d.gid[14], d.gid[15]);
  }

  // Checks a data-connection result.
  void CheckResult(const ND2_RESULT& r, const char* what) {
    if (r.Status != ND_SUCCESS) {
      if (r.Status == ND_CANCELED) Die("connection B went down during the test (%s)", what);
      FailHr(__LINE__, r.Status, what);
    }
  }

  // ---- Bandwidth ----
  // write_bw / read_bw: the client runs every size (a warm-up first, as perftest), then the
  // end-of-test handshake, the reports and the closing handshake; the server only waits and
  // prints the client's report. send_bw: before each size a handshake (the server's receives
  // are posted), after each size of -a another; both sides measure; the closing handshake.
  void RunBw(const Dest& me) {
    p_.BwHeader();
    if (o_.verb() == Verb::kSend) {
      const std::vector<uint64_t> sizes = o_.Sizes();
      for (size_t i = 0; i < sizes.size(); i++) {
        comm_->HandShake(me, "handshake before a size");
        if (client_) p_.BwRow(BwClientRun(sizes[i], o_.iters, false));
        else p_.BwRow(SendBwServe(sizes[i]));
        if (o_.all) comm_->HandShake(me, "handshake after a size");
      }
      p_.Line();
      if (closing_seen_) {  // -D: the server saw the client's closing handshake already
        uint8_t out[kDestLen];
        me.Encode(out);
        comm_->Send(out, kDestLen, "closing handshake", Comm::SendEnd::kPeerMayClose);
      } else {
        comm_->CloseHandShake(me);
      }
      return;
    }
    if (client_) {
      BwReport last;
      for (uint64_t size : o_.Sizes()) {
        if (!o_.duration) BwClientRun(size, std::min<uint64_t>(TxDepth(), o_.iters), true);
        last = BwClientRun(size, o_.iters, false);
        p_.BwRow(last);
      }
      p_.Line();
      comm_->HandShake(me, "end-of-test handshake");
      ExchangeReports(last);
      comm_->CloseHandShake(me);
      return;
    }
    comm_->HandShakeAfterTest(me, "the client's end-of-test handshake");
    const BwReport theirs = ExchangeReports(BwReport{});
    p_.BwRow(theirs);
    p_.Line();
    comm_->CloseHandShake(me);
  }

  // The client's run of `iters` requests of `size` (-D: for the duration instead), at most the
  // queue depth (reads: the read limit) in flight. Every `CqMod()`-th request and the last one
  // are signaled, the others silent (perftest's CQ moderation): a signaled completion stands
  // for every request before it (the queue completes in order).
  BwReport BwClientRun(uint64_t size, uint64_t iters, bool warmup) {
    const Verb v = o_.verb();
    ULONG depth = TxDepth();
    if (v == Verb::kRead) depth = std::min(depth, read_limit_);
    const uint64_t mod = std::max<ULONG>(1, std::min(CqMod(), depth));
    const bool timed = o_.duration && !warmup;
    std::vector<double> posted, completed;
    posted.reserve(timed ? 1 << 16 : iters);
    completed.reserve(timed ? 1 << 16 : iters);
    const double end_us = NowUs() + o_.duration * 1e6;
    uint64_t npost = 0, ndone = 0;
    uint64_t goal = timed ? UINT64_MAX : iters;  // -D: fixed when the time is up
    const ND2_SGE sge_send = mem_.Sge(0, size);
    const ND2_SGE sge_read = mem_.Sge(half_, size);
    const ULONG inline_flag = v != Verb::kRead ? InlineFlag(size) : 0;
    ND2_RESULT res[32];
    auto last_progress = Clock::now();
    while (ndone < goal) {
      if (timed && goal == UINT64_MAX && NowUs() >= end_us) {
        // Time is up: the requests posted so far, and one more if the last was silent (its
        // signaled completion tells when the silent ones are done).
        goal = npost % mod == 0 ? npost : npost + 1;
        if (goal == 0) goal = 1;
      }
      while (npost < goal && npost - ndone < depth) {
        const uint64_t i = npost++;
        const bool signaled = (i + 1) % mod == 0 || i + 1 == goal;
        const ULONG flags = inline_flag | (signaled ? 0 : ND_OP_FLAG_SILENT_SUCCESS);
        void* ctx = reinterpret_cast<void*>(static_cast<uintptr_t>(i + 1));
        HRESULT h;
        if (v == Verb::kWrite) h = data_->qp()->Write(ctx, &sge_send, 1, peer_.vaddr, peer_.rkey, flags);
        else if (v == Verb::kRead) h = data_->qp()->Read(ctx, &sge_read, 1, peer_.vaddr, peer_.rkey, flags & ~ND_OP_FLAG_INLINE);
        else h = data_->qp()->Send(ctx, &sge_send, 1, flags);
        Check(h, "posting a request on connection B");
        posted.push_back(NowUs());
        if (timed && goal == UINT64_MAX && NowUs() >= end_us) break;
      }
      const ULONG n = o_.events ? data_->cq().Wait(res, 32, Deadline(), "completions on connection B")
                                : data_->cq().Poll(res, 32);
      if (n) last_progress = Clock::now();
      const double t = NowUs();
      for (ULONG k = 0; k < n; k++) {
        CheckResult(res[k], "a request on connection B");
        const uint64_t idx = reinterpret_cast<uintptr_t>(res[k].RequestContext);  // 1-based
        while (ndone < idx) {
          completed.push_back(t);
          ndone++;
        }
      }
      if (Clock::now() - last_progress > std::chrono::seconds(TimeoutS()))
        Die("timed out after %u s waiting for a completion on connection B (%" PRIu64 " of %" PRIu64 " done)",
            TimeoutS(), ndone, npost);
    }
    return ComputeBw(o_, size, posted, completed);
  }

  // send_bw's server: receives `iters` messages of `size` (-D: until the client's closing
  // handshake arrives on connection A) and measures them; the receives are reposted as they
  // complete.
  BwReport SendBwServe(uint64_t size) {
    // The clock starts when our answer to the handshake before the size has gone: the client
    // starts sending when it has it.
    const double t0 = NowUs();
    ND2_RESULT res[32];
    std::vector<double> completed;
    completed.reserve(o_.duration ? 1024 : o_.iters);
    uint64_t got = 0;
    auto last_progress = Clock::now();
    while (o_.duration ? !closing_seen_ : got < o_.iters) {
      const ULONG n = o_.events ? data_->cq().Wait(res, 32, Deadline(), "messages on connection B")
                                : data_->cq().Poll(res, 32);
      const double t = NowUs();
      for (ULONG k = 0; k < n; k++) {
        CheckResult(res[k], "a receive on connection B");
        if (res[k].BytesTransferred != size)
          Die("a message of %u bytes arrived, expected %" PRIu64 " (the same -s / -a on both sides?)",
              static_cast<unsigned>(res[k].BytesTransferred), size);
        completed.push_back(t);
        got++;
        PostDataRecv(static_cast<ULONG>(reinterpret_cast<uintptr_t>(res[k].RequestContext) - 1));
      }
      if (n) last_progress = Clock::now();
      if (o_.duration) {
        uint8_t buf[64];
        size_t len = 0;
        if (comm_->TryRecv(buf, sizeof buf, &len)) {
          if (len != kDestLen) Die("protocol: a %zu-byte message on connection A, expected the closing handshake", len);
          closing_seen_ = true;
        }
      }
      if (Clock::now() - last_progress > std::chrono::seconds(TimeoutS()))
        Die("timed out after %u s waiting for a message on connection B (%" PRIu64 " of %" PRIu64 " arrived)",
            TimeoutS(), got, o_.iters);
    }
    // The server sees arrivals only: each message's window starts at the previous arrival (the
    // first at the handshake).
    std::vector<double> posted(completed.size());
    for (size_t i = 0; i < completed.size(); i++) posted[i] = i > 0 ? completed[i - 1] : t0;
    return ComputeBw(o_, size, posted, completed);
  }
  void PostDataRecv(ULONG slot) {
    // Every receive gets the whole receive half (messages up to the largest size).
    const ND2_SGE sge = mem_.Sge(half_, half_);
    Check(data_->qp()->Receive(reinterpret_cast<void*>(uintptr_t{slot} + 1), &sge, 1), "IND2QueuePair::Receive");
  }

  // perftest's xchg_bw_reports: size, iterations, BW peak, BW average, message rate (the client
  // sends first); returns the peer's.
  BwReport ExchangeReports(const BwReport& mine) {
    BwReport t;
    auto xu64 = [&](uint64_t v, const char* what) {
      uint64_t out = htobe64(v), in = 0;
      comm_->Exchange(&out, &in, 8, what);
      return be64toh(in);
    };
    auto xdbl = [&](double v, const char* what) {
      uint64_t bits;
      memcpy(&bits, &v, 8);
      const uint64_t in = xu64(bits, what);
      double d;
      memcpy(&d, &in, 8);
      return d;
    };
    t.size = xu64(mine.size, "report: size");
    t.iters = xu64(mine.iters, "report: iterations");
    t.peak = xdbl(mine.peak, "report: BW peak");
    t.avg = xdbl(mine.avg, "report: BW average");
    t.msg_rate = xdbl(mine.msg_rate, "report: message rate");
    return t;
  }

  // ---- Latency ----
  void RunLat(const Dest& me) {
    const Verb v = o_.verb();
    const bool prints = v != Verb::kRead || client_;  // read_lat's server prints no table
    if (prints) p_.LatHeader();
    const std::vector<uint64_t> sizes = o_.Sizes();
    for (size_t i = 0; i < sizes.size(); i++) {
      const uint64_t size = sizes[i];
      // send_lat syncs between the sizes of -a (write_lat and read_lat do not).
      if (v == Verb::kSend && i > 0) comm_->HandShake(me, "handshake between sizes");
      std::vector<double> stamps;
      if (v == Verb::kWrite) stamps = WriteLatRun(size);
      else if (v == Verb::kSend) stamps = SendLatRun(size);
      else if (client_) stamps = ReadLatRun(size);
      if (!prints) continue;
      std::vector<double> deltas;
      for (size_t i = 1; i < stamps.size(); i++) deltas.push_back(stamps[i] - stamps[i - 1]);
      p_.LatRow(size, o_.iters, deltas, v == Verb::kRead ? 1.0 : 2.0);
    }
    if (prints) p_.Line();
    if (v == Verb::kSend || (v == Verb::kRead && client_)) comm_->CloseHandShake(me);
    else if (v == Verb::kRead) comm_->HandShakeAfterTest(me, "the client's closing handshake");
  }

  // Waits for the next completion of a request of ours (the data CQ), dying on an error.
  void WaitOwn(const char* what) {
    ND2_RESULT r;
    data_->cq().Wait(&r, 1, Deadline(), what, o_.events ? std::chrono::microseconds(0) : std::chrono::seconds(3600));
    CheckResult(r, what);
  }

  // perftest's write_lat: each side writes `size` bytes whose last byte is its counter into the
  // peer's buffer and watches the last byte of its own; the server writes first.
  std::vector<double> WriteLatRun(uint64_t size) {
    std::vector<double> stamps;
    stamps.reserve(o_.iters);
    volatile char* poll = mem_.data() + half_ + size - 1;
    char* post = mem_.data() + size - 1;
    const ND2_SGE sge = mem_.Sge(0, size);
    const ULONG flags = InlineFlag(size);
    uint64_t scnt = 0, rcnt = 0;
    ND2_RESULT r[8];
    uint64_t outstanding = 0;
    while (scnt < o_.iters || rcnt < o_.iters) {
      if (rcnt < o_.iters && !(scnt < 1 && !client_)) {
        rcnt++;
        const auto deadline = Deadline();
        // Polling the CQ drives the adapter (inline progress) that places the peer's write.
        while (*poll != static_cast<char>(rcnt)) {
          const ULONG n = data_->cq().Poll(r, 8);
          for (ULONG k = 0; k < n; k++) {
            CheckResult(r[k], "an RDMA Write");
            outstanding--;
          }
          if (deadline.Passed())
            Die("write_lat: timed out after %u s waiting for the peer's write %" PRIu64 " of size %" PRIu64,
                deadline.secs, rcnt, size);
        }
      }
      if (scnt < o_.iters) {
        *post = static_cast<char>(++scnt);
        stamps.push_back(NowUs());
        Check(data_->qp()->Write(nullptr, &sge, 1, peer_.vaddr, peer_.rkey, flags), "IND2QueuePair::Write");
        outstanding++;
      }
      // Completions taken every iteration, as perftest's write_lat polls after each post: the
      // loop above polls only while the peer's write has not come, and when it has come each
      // time the completions would pile up past the queue's depth (ND_BUFFER_OVERFLOW).
      const ULONG n = data_->cq().Poll(r, 8);
      for (ULONG k = 0; k < n; k++) {
        CheckResult(r[k], "an RDMA Write");
        outstanding--;
      }
    }
    while (outstanding) {
      data_->cq().Wait(r, 1, Deadline(), "an RDMA Write completion");
      CheckResult(r[0], "an RDMA Write");
      outstanding--;
    }
    return stamps;
  }

  // perftest's send_lat: the client sends, the server answers each message with one of its own.
  std::vector<double> SendLatRun(uint64_t size) {
    std::vector<double> stamps;
    stamps.reserve(o_.iters);
    const ND2_SGE sge = mem_.Sge(0, size);
    const ULONG flags = InlineFlag(size);
    uint64_t scnt = 0, rcnt = 0, sends_out = 0, early = 0;
    ND2_RESULT r[8];
    // Messages that arrived while we waited for a Send slot (counted, reposted).
    auto wait_recv = [&]() {
      if (early) {
        early--;
        return;
      }
      const auto deadline = Deadline();
      for (;;) {
        const ULONG n = o_.events ? data_->cq().Wait(r, 8, deadline, "a message on connection B") : data_->cq().Poll(r, 8);
        uint64_t got = 0;
        for (ULONG k = 0; k < n; k++) {
          CheckResult(r[k], "a request on connection B");
          if (r[k].RequestContext == &send_ctx_) {
            sends_out--;
            continue;
          }
          if (r[k].BytesTransferred != size)
            Die("send_lat: a message of %u bytes arrived, expected %" PRIu64, static_cast<unsigned>(r[k].BytesTransferred), size);
          PostDataRecv(static_cast<ULONG>(reinterpret_cast<uintptr_t>(r[k].RequestContext) - 1));
          got++;
        }
        if (got) {
          early += got - 1;  // more than one in the batch: the next waits take them
          return;
        }
        if (deadline.Passed())
          Die("send_lat: timed out after %u s waiting for message %" PRIu64 " of size %" PRIu64, deadline.secs,
              rcnt + 1, size);
      }
    };
    while (scnt < o_.iters || rcnt < o_.iters) {
      if (rcnt < o_.iters && !(scnt < 1 && client_)) {  // the client sends first
        wait_recv();
        rcnt++;
      }
      if (scnt < o_.iters) {
        // The peer's answer can come before the ACK of our last Send (an ACK
        // lost on a lossy link, retransmitted later): wait for a free slot of
        // the send queue rather than overrun it.
        const ULONG depth = TxDepth();
        for (auto deadline = Deadline(); sends_out >= depth;) {
          const ULONG n = data_->cq().Poll(r, 8);
          for (ULONG k = 0; k < n; k++) {
            CheckResult(r[k], "a request on connection B");
            if (r[k].RequestContext == &send_ctx_) {
              sends_out--;
            } else {
              if (r[k].BytesTransferred != size)
                Die("send_lat: a message of %u bytes arrived, expected %" PRIu64,
                    static_cast<unsigned>(r[k].BytesTransferred), size);
              PostDataRecv(static_cast<ULONG>(reinterpret_cast<uintptr_t>(r[k].RequestContext) - 1));
              early++;
            }
          }
          if (!n && deadline.Passed())
            Die("send_lat: timed out after %u s waiting for the completion of Send %" PRIu64, deadline.secs, scnt);
        }
        stamps.push_back(NowUs());
        Check(data_->qp()->Send(&send_ctx_, &sge, 1, flags), "IND2QueuePair::Send");
        sends_out++;
        scnt++;
      }
    }
    while (sends_out) {
      data_->cq().Wait(r, 1, Deadline(), "a Send completion");
      CheckResult(r[0], "a Send");
      if (r[0].RequestContext == &send_ctx_) sends_out--;
      else Die("send_lat: an unexpected message after the last one");
    }
    return stamps;
  }

  // perftest's read_lat: the client reads `size` bytes of the server's buffer, one at a time.
  std::vector<double> ReadLatRun(uint64_t size) {
    std::vector<double> stamps;
    stamps.reserve(o_.iters + 1);
    const ND2_SGE sge = mem_.Sge(half_, size);
    for (uint64_t i = 0; i < o_.iters; i++) {
      stamps.push_back(NowUs());
      Check(data_->qp()->Read(nullptr, &sge, 1, peer_.vaddr, peer_.rkey, 0), "IND2QueuePair::Read");
      WaitOwn("an RDMA Read completion");
    }
    stamps.push_back(NowUs());
    return stamps;
  }

  const Options& o_;
  bool client_;
  Printer p_;
  Adapter a_;
  std::unique_ptr<Comm> comm_;
  std::unique_ptr<Connection> data_;
  Region mem_;
  size_t half_ = 0;  // the buffer: [0, half) what we send / read into ... see OpenData
  ULONG read_limit_ = 1;
  Dest peer_;
  int send_ctx_ = 0;
  bool closing_seen_ = false;
};

// ---- Command line --------------------------------------------------------------------------------
void Usage(FILE* f) {
  fprintf(f,
          "Usage: nd-perf TEST [options]            start a server and wait for a connection\n"
          "       nd-perf TEST [options] <server>   connect to the server at <server>\n"
          "TEST: send_bw write_bw read_bw send_lat write_lat read_lat (perftest's ib_<TEST>)\n"
          "perftest's options:\n"
          "  -s, --size=<bytes>       message size (default 65536 bw, 2 lat)\n"
          "  -n, --iters=<n>          iterations (default 5000 bw, 1000 lat)\n"
          "  -a, --all                sizes 2 .. 2^23\n"
          "  -D, --duration=<s>       bw tests: run for <s> seconds instead of -n\n"
          "  -p, --port=<port>        rdma_cm port of the server (default 18515)\n"
          "  -R, --rdma_cm            connect with rdma_cm (always: ND2 connects through its CM)\n"
          "  -m, --mtu=<mtu>          path MTU 256..4096 (with the port options: the adapter's MTU)\n"
          "  -t, --tx-depth=<n>       requests in flight (default 128 bw, 1 lat)\n"
          "  -r, --rx-depth=<n>       receives posted (default 512)\n"
          "  -o, --outs=<n>           outstanding reads (capped at the adapter's read limits)\n"
          "  -Q, --cq-mod=<n>         a completion every <n> requests (default 100)\n"
          "  -I, --inline_size=<n>    inline sends and writes up to <n> bytes\n"
          "  -e, --events             wait for completions (Notify) instead of polling\n"
          "  -N, --noPeak             no BW peak\n"
          "      --report_gbits       BW in Gb/s\n"
          "  -F, --CPU-freq  -d, --ib-dev=<dev>  -i, --ib-port=<port>  -x, --gid-index=<i>\n"
          "  -c, --connection=RC  -q, --qp=1  -u, --qp-timeout  -S, --sl  -T, --tos\n"
          "                           accepted; ND2 has one kind of adapter and connection\n"
          "      --source_ip=<ip>     the server's bind address / the client's local address\n"
          "  -h, --help  -V, --version\n"
          "The adapters are those of ND2_CONFIG, unless these port options make one:\n"
          "      --ip=<addr/len>      the adapter's address (repeatable: IPv4 and IPv6)\n"
          "      --profile=<P>        a drivers-cfg profile, a path or a name (default net_tap.ini)\n"
          "      --iface=<name>       the driver's interface (tap name, veth, ...)\n"
          "      --set=<k=v>          a profile key (section.key=value) or an ND2 adapter key\n"
          "      --capture=<file>     a pcap of every frame\n"
          "      --pair               server and client in this process: two adapters on an\n"
          "                           in-process net_ring pair (10.0.0.1 serves, 10.0.0.2 runs\n"
          "                           the test and prints); no peer, no root; --set keys\n"
          "                           apply to both (e.g. --set progress=thread)\n"
          "      --timeout=<s>        give up on any wait for the peer after <s> seconds (default 60;\n"
          "                           without it, a server waits for its first client forever)\n");
}

enum LongOpt : int {
  kOptGbits = 0x2000,
  kOptSourceIp,
  kOptIp,
  kOptProfile,
  kOptIface,
  kOptSet,
  kOptCapture,
  kOptPair,
  kOptTimeout,
  kOptPairProfile,
};

uint64_t Num(const char* opt, const char* s, uint64_t lo, uint64_t hi) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = strtoull(s, &end, 0);
  if (!*s || errno || *end || s[0] == '-' || v < lo || v > hi) {
    fprintf(stderr, "nd-perf: bad value '%s' for %s (expected %llu..%llu)\n", s, opt,
            static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi));
    exit(2);
  }
  return v;
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    Usage(argc < 2 ? stderr : stdout);
    exit(argc < 2 ? 2 : 0);
  }
  if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
    printf("Version: %s (nd-perf, ND2)\n", kVersion);
    exit(0);
  }
  for (const TestInfo& t : kTests)
    if (!strcmp(argv[1], t.name) || (!strncmp(argv[1], "ib_", 3) && !strcmp(argv[1] + 3, t.name))) o.test = &t;
  if (!o.test) {
    fprintf(stderr, "nd-perf: unknown test '%s' (send_bw write_bw read_bw send_lat write_lat read_lat)\n", argv[1]);
    exit(2);
  }
  const option longopts[] = {
      {"size", required_argument, nullptr, 's'},      {"iters", required_argument, nullptr, 'n'},
      {"all", no_argument, nullptr, 'a'},             {"duration", required_argument, nullptr, 'D'},
      {"port", required_argument, nullptr, 'p'},      {"rdma_cm", no_argument, nullptr, 'R'},
      {"mtu", required_argument, nullptr, 'm'},       {"tx-depth", required_argument, nullptr, 't'},
      {"rx-depth", required_argument, nullptr, 'r'},  {"outs", required_argument, nullptr, 'o'},
      {"cq-mod", required_argument, nullptr, 'Q'},    {"inline_size", required_argument, nullptr, 'I'},
      {"events", no_argument, nullptr, 'e'},          {"noPeak", no_argument, nullptr, 'N'},
      {"CPU-freq", no_argument, nullptr, 'F'},        {"ib-dev", required_argument, nullptr, 'd'},
      {"ib-port", required_argument, nullptr, 'i'},   {"gid-index", required_argument, nullptr, 'x'},
      {"connection", required_argument, nullptr, 'c'}, {"qp", required_argument, nullptr, 'q'},
      {"qp-timeout", required_argument, nullptr, 'u'}, {"sl", required_argument, nullptr, 'S'},
      {"tos", required_argument, nullptr, 'T'},       {"help", no_argument, nullptr, 'h'},
      {"version", no_argument, nullptr, 'V'},         {"bidirectional", no_argument, nullptr, 'b'},
      {"report_gbits", no_argument, nullptr, kOptGbits}, {"source_ip", required_argument, nullptr, kOptSourceIp},
      {"ip", required_argument, nullptr, kOptIp},     {"profile", required_argument, nullptr, kOptProfile},
      {"iface", required_argument, nullptr, kOptIface}, {"set", required_argument, nullptr, kOptSet},
      {"capture", required_argument, nullptr, kOptCapture}, {"pair", no_argument, nullptr, kOptPair},
      {"pair-profile", required_argument, nullptr, kOptPairProfile},
      {"timeout", required_argument, nullptr, kOptTimeout}, {nullptr, 0, nullptr, 0}};
  optind = 2;
  int c;
  while ((c = getopt_long(argc, argv, "s:n:aD:p:Rm:t:r:o:Q:I:eNFd:i:x:c:q:u:S:T:hVb", longopts, nullptr)) != -1) {
    switch (c) {
      case 's': o.size = Num("-s", optarg, 1, kMaxSize * 16); break;
      case 'n': o.iters = Num("-n", optarg, 5, 100000000); break;
      case 'a': o.all = true; break;
      case 'D': o.duration = static_cast<uint32_t>(Num("-D", optarg, 1, 86400)); break;
      case 'p': o.port = static_cast<uint16_t>(Num("-p", optarg, 1, 65535)); break;
      case 'R': break;
      case 'm': {
        o.mtu = static_cast<uint32_t>(Num("-m", optarg, 256, 4096));
        if (o.mtu & (o.mtu - 1)) {
          fprintf(stderr, "nd-perf: -m must be 256, 512, 1024, 2048 or 4096\n");
          exit(2);
        }
        break;
      }
      case 't': o.tx_depth = static_cast<uint32_t>(Num("-t", optarg, 1, 16384)); break;
      case 'r': o.rx_depth = static_cast<uint32_t>(Num("-r", optarg, 1, 16384)); break;
      case 'o': o.out_reads = static_cast<uint32_t>(Num("-o", optarg, 1, 65536)); break;
      case 'Q': o.cq_mod = static_cast<uint32_t>(Num("-Q", optarg, 1, 1024)); break;
      case 'I': o.inline_size = static_cast<uint32_t>(Num("-I", optarg, 0, 65536)); break;
      case 'e': o.events = true; break;
      case 'N': o.no_peak = true; break;
      case 'F': break;
      case 'd': o.dev = optarg; break;
      case 'i': case 'x': case 'u': case 'S': case 'T': break;
      case 'q':
        if (Num("-q", optarg, 1, 1) != 1) exit(2);
        break;
      case 'c':
        if (strcmp(optarg, "RC") != 0) {
          fprintf(stderr, "nd-perf: -c %s: ND2 connections are RC\n", optarg);
          exit(2);
        }
        break;
      case 'b':
        fprintf(stderr, "nd-perf: -b (bidirectional) is not supported\n");
        exit(2);
      case 'h': Usage(stdout); exit(0);
      case 'V': printf("Version: %s (nd-perf, ND2)\n", kVersion); exit(0);
      case kOptGbits: o.gbits = true; break;
      case kOptSourceIp: o.source_ip = optarg; break;
      case kOptIp: o.adapter.ips.push_back(optarg); o.port_options = true; o.port_only_sets = false; break;
      case kOptProfile: o.adapter.profile = optarg; o.port_options = true; o.port_only_sets = false; break;
      case kOptIface: o.adapter.iface = optarg; o.port_options = true; o.port_only_sets = false; break;
      case kOptSet: o.adapter.sets.push_back(optarg); o.port_options = true; break;
      case kOptCapture: o.adapter.capture = optarg; o.port_options = true; o.port_only_sets = false; break;
      case kOptPair: o.pair = true; break;
      case kOptPairProfile: o.pair_profile = optarg; break;
      case kOptTimeout: o.timeout_s = static_cast<uint32_t>(Num("--timeout", optarg, 1, 86400)); break;
      default: Usage(stderr); exit(2);
    }
  }
  if (optind < argc) {
    o.server = false;
    o.server_name = argv[optind++];
  }
  if (optind < argc) {
    fprintf(stderr, "nd-perf: unexpected argument '%s'\n", argv[optind]);
    exit(2);
  }
  if (!o.size) o.size = o.bw() ? 65536 : 2;
  if (!o.iters) o.iters = o.bw() ? 5000 : 1000;
  if (o.duration && o.lat()) {
    fprintf(stderr, "nd-perf: -D is supported by the bandwidth tests\n");
    exit(2);
  }
  if (o.duration && o.all) {
    fprintf(stderr, "nd-perf: -D and -a together are not supported\n");
    exit(2);
  }
  if (o.pair && (!o.server || !o.port_only_sets)) {
    fprintf(stderr, "nd-perf: --pair takes no server address and no port options but --set\n");
    exit(2);
  }
  if (o.pair) o.port_options = false;  // its --set keys go to both of its adapters
  // A net_af_xdp adapter takes its interface's addresses (identity = kernel).
  if (o.port_options && o.adapter.ips.empty() && o.adapter.profile.find("af_xdp") == std::string::npos) {
    fprintf(stderr, "nd-perf: the port options need --ip addr/len (the adapter's address)\n");
    exit(2);
  }
  if (o.mtu && o.port_options) o.adapter.sets.push_back("mtu=" + std::to_string(o.mtu + 80));
  return o;
}

// The first address of this process's adapters.
bool FirstAddress(Addr* out) {
  SIZE_T cb = 0;
  NdQueryAddressList(0, nullptr, &cb);
  std::vector<char> buf(cb ? cb : 1);
  auto* list = reinterpret_cast<SOCKET_ADDRESS_LIST*>(buf.data());
  if (NdQueryAddressList(0, list, &cb) != ND_SUCCESS || list->iAddressCount < 1) return false;
  *out = Addr::From(list->Address[0].lpSockaddr, static_cast<ULONG>(list->Address[0].iSockaddrLength));
  return true;
}

Addr ParseOrDie(const std::string& s, uint16_t port) {
  Addr a;
  if (!Addr::Parse(s, port, &a)) {
    fprintf(stderr, "nd-perf: bad address '%s' (an IPv4 or IPv6 address)\n", s.c_str());
    exit(2);
  }
  return a;
}

int RunOne(const Options& o) {
  if (o.server) {
    Addr bind;
    if (!o.source_ip.empty()) {
      bind = ParseOrDie(o.source_ip, o.port);
    } else if (!FirstAddress(&bind)) {
      Die("the ND2 configuration has no adapter address");
    }
    bind.set_port(o.port);
    Addr local = bind;
    local.set_port(0);
    Side s(o, false);
    s.Run(local, bind, nullptr);
    return 0;
  }
  const Addr server = ParseOrDie(o.server_name, o.port);
  Addr local;
  if (!o.source_ip.empty()) {
    local = ParseOrDie(o.source_ip, 0);
  } else {
    SIZE_T ll = sizeof local.ss;
    Check(NdResolveAddress(server.sa(), server.len, local.sa(), &ll), "NdResolveAddress (no local address for the server's)");
    local.len = static_cast<ULONG>(ll);
    local.set_port(0);
  }
  Side s(o, true);
  s.Run(local, server, nullptr);
  return 0;
}

// --pair: the server on a thread (quiet) on 10.0.0.1, the client here on 10.0.0.2.
int RunPair(const Options& o) {
  Options so = o;
  so.quiet = true;
  Options co = o;
  co.server = false;
  Addr bind = ParseOrDie("10.0.0.1", o.port), local_s = ParseOrDie("10.0.0.1", 0), local_c = ParseOrDie("10.0.0.2", 0);
  std::atomic<bool> listening{false};
  std::thread t([&] {
    g_role = "server: ";
    Side s(so, false);
    s.Run(local_s, bind, &listening);
  });
  while (!listening.load()) ndtool::SleepMs(1);
  {
    Side c(co, true);
    c.Run(local_c, bind, nullptr);
  }
  t.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = ParseArgs(argc, argv);
  ndtool::g_prog = "nd-perf";
  // A vhost-user or memif peer that exits first closes its socket under our port: a write to
  // it must fail (EPIPE), not kill us after the test.
  signal(SIGPIPE, SIG_IGN);
  std::string cfg;
  if (o.port_options || o.pair) {
    std::vector<ndtool::PortOptions> adapters;
    if (o.pair) {
      // Two adapters on one in-process net_ring pair (a name of our own per process).
      const std::string ring = "ndperf" + std::to_string(getpid() % 100000);
      ndtool::PortOptions a, b;
      a.profile = b.profile = o.pair_profile;
      a.ips = {"10.0.0.1/24", "fd00::1/64"};
      b.ips = {"10.0.0.2/24", "fd00::2/64"};
      a.sets = {"port.ring=" + ring, "port.ring_side=a"};
      b.sets = {"port.ring=" + ring, "port.ring_side=b", "port.mac=02:00:00:00:00:02"};
      if (o.mtu) {
        a.sets.push_back("mtu=" + std::to_string(o.mtu + 80));
        b.sets.push_back("mtu=" + std::to_string(o.mtu + 80));
      }
      for (const std::string& kv : o.adapter.sets) {  // --set: both adapters
        a.sets.push_back(kv);
        b.sets.push_back(kv);
      }
      adapters = {a, b};
    } else {
      adapters = {o.adapter};
    }
    std::string err;
    if (!ndtool::WriteNd2Config(adapters, "nd-perf", &cfg, &err)) {
      fprintf(stderr, "nd-perf: %s\n", err.c_str());
      return 2;
    }
    setenv("ND2_CONFIG", cfg.c_str(), 1);
  }
  const HRESULT h = NdStartup();
  if (!cfg.empty()) unlink(cfg.c_str());
  if (FAILED(h)) {
    fprintf(stderr, "nd-perf: NdStartup failed with %08x (%s): the adapters of ND2_CONFIG could not be brought up\n",
            static_cast<unsigned>(h), ndtool::StatusName(h));
    return 1;
  }
  const int rc = o.pair ? RunPair(o) : RunOne(o);
  fflush(stdout);
  const HRESULT ch = NdCleanup();
  if (FAILED(ch)) {
    fprintf(stderr, "nd-perf: NdCleanup failed with %08x (%s): an ND2 object was not released\n",
            static_cast<unsigned>(ch), ndtool::StatusName(ch));
    return 1;
  }
  return rc;
}
