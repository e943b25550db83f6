// SPDX-License-Identifier: MIT
// rping as an ND2 program: librdmacm's rping (RDMA CM connection and RDMA
// ping-pong test) with its options and its protocol, written against the
// public NetworkDirect 2 headers (<ndspi.h>, <ndsupport.h>) and libnd2 only,
// so either side can be the kernel's rping (rdmacm-utils) on any RoCE host.
//
//   rping -s [-vVd] [-S size] [-C count] [-a addr] [-p port] [-P]   + port options
//   rping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port] + port options
//
// Per ping (rping's protocol): the client writes "rdma-ping-N: " and a
// rolling A..z pattern into its start buffer and SENDs {addr, rkey, size}
// of it; the server RDMA-READs it, SENDs "go ahead"; the client SENDs
// {addr, rkey, size} of its rdma buffer; the server RDMA-WRITEs the string
// back (strlen + 1 bytes) and SENDs an ACK; the client checks (-V) and
// prints (-v). The info messages are struct {__be64 buf; __be32 rkey;
// __be32 size;} (16 bytes). The client disconnects after -C pings (DREQ).
//
// In ND2 terms: IND2Connector::Connect / CompleteConnect (client) and
// IND2Listener::GetConnectionRequest + IND2Connector::Accept (server) for
// rdma_cm; four IND2MemoryRegions whose remote tokens are the rkeys (the
// buffers' virtual addresses go on the wire, as rping's do); IND2QueuePair
// Send / Receive / Read / Write; results from IND2CompletionQueue::GetResults,
// waited for with Notify and the notification's event; Disconnect and
// NotifyDisconnect for the end of a connection.
//
// The port options (--profile, --iface, --ip, --set, --capture) and the CM
// fault knobs become an ND2 configuration file (one [adapter0] section, see
// nd2api/src/config.h) written to a temporary file that ND2_CONFIG names for
// NdStartup. The extras tests use that ND2 itself does not report (the REJ
// reason, crossed DREQs, what the stack holds after --cycles) come from our
// extension IND2AdapterDiagnostics (ndspi.h), obtained by QueryInterface on
// the adapter.
//
// Waits (--timeout S, ours): every wait for the peer — its connection request or answer, each
// completion, the disconnect — ends after S seconds (30 s per completion, 30 s for the rest
// without it) with one line naming what it waited for, and exit status 1; a server waits for a
// client (-s, and each next one with -P) without limit unless --timeout was given.
//
// Exit status 0 on success.
#include <arpa/inet.h>
#include <endian.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <ndspi.h>
#include <ndsupport.h>

#include "nd_addr.h"
#include "nd_port_options.h"  // the port options as an ND2_CONFIG file

// The provider library's COM entry point (Windows declares it in combaseapi.h):
// S_OK once nothing made from the provider is alive.
extern "C" HRESULT DllCanUnloadNow(void);

namespace {

constexpr ULONG kInfoLen = 16;
constexpr uint32_t kMinSize = 23;          // as rping (the ping text is cut to fit)
constexpr uint32_t kMaxSize = 1u << 30;
constexpr uint32_t kStepTimeoutS = 30;  // per wait for the peer, without --timeout

struct Options {
  bool server = false, client = false;
  std::string addr, source;
  uint16_t port = 7174;
  uint32_t size = 100;
  uint64_t count = 0;  // 0: until killed (client) / the client leaves (server)
  bool verbose = false, validate = false, debug = false, persistent = false;
  uint64_t cycles = 1;          // --cycles N: the client connects, pings -C, disconnects, N times
  uint32_t drop_rx_dreqs = 0;   // --cm-drop-rx-dreqs N: fault injection
  uint32_t drop_tx_dreqs = 0;   // --cm-drop-tx-dreqs N: fault injection (forces crossed DREQs)
  int expect_reject = -1;       // --expect-reject R: succeed only if the peer rejects with reason R
  uint32_t timeout_s = 0;       // --timeout S: the limit of every wait (0: not given)
  // The port options: the ND2 adapter this process brings up.
  std::string profile = "net_tap.ini";
  std::string iface, capture;
  std::vector<std::string> ips, sets;
};

enum LongOpt : int {
  kOptCycles = 0x2000,
  kOptDropRx,
  kOptExpectReject,
  kOptDropTx,
  kOptProfile,
  kOptIface,
  kOptIp,
  kOptSet,
  kOptCapture,
  kOptTimeout,
};

void Usage(const char* argv0) {
  std::fprintf(stderr,
               "%s -s [-vVd] [-S size] [-C count] [-a addr] [-p port]\n"
               "%s -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]\n"
               "\t-c\t\tclient side\n"
               "\t-I\t\tSource address to bind to for client.\n"
               "\t-s\t\tserver side.  To bind to any address with IPv6 use -a ::0\n"
               "\t-v\t\tdisplay ping data to stdout\n"
               "\t-V\t\tvalidate ping data\n"
               "\t-d\t\tdebug printfs\n"
               "\t-S size \tping data size\n"
               "\t-C count\tping count times\n"
               "\t-a addr\t\taddress\n"
               "\t-p port\t\tport\n"
               "\t-P\t\tpersistent server mode allowing multiple connections\n"
               "\t-q\t\tuse self-created, self-modified QP (always the case in ND2)\n"
               "The ND2 adapter (written to an ND2_CONFIG file for NdStartup):\n"
               "\t--ip addr/len\tits address (required; repeat for IPv4 and IPv6)\n"
               "\t--profile P\ta drivers-cfg profile, a path or a name (default net_tap.ini)\n"
               "\t--iface NAME\tthe driver's interface (tap name, veth, ...)\n"
               "\t--set section.key=value\toverride a profile key (repeatable); key=value without\n"
               "\t\t\ta section: an ND2 adapter key (nd2api/src/config.h), e.g. burst=1\n"
               "\t--capture FILE\twrite every frame to a pcap\n"
               "Test extras:\n"
               "\t--cycles N\tclient: connect, ping -C times, disconnect; N times in one process,\n"
               "\t\t\tthen check that nothing leaked (QPs, connections, ports, memory regions,\n"
               "\t\t\tmbufs, RSS)\n"
               "\t--cm-drop-rx-dreqs N\tignore the first N DREQs received (as if lost)\n"
               "\t--cm-drop-tx-dreqs N\tlose the first N DREQs we send (retransmitted later):\n"
               "\t\t\twith a server's -C, the peer's DREQ crosses ours\n"
               "\t--expect-reject R\tclient: succeed only if the peer rejects with REJ reason R\n"
               "\t--timeout S\tfail (exit 1, naming the wait) when any wait for the peer lasts S s\n"
               "\t\t\t(default 30 s; a server's wait for a client: none unless given)\n"
               "\tA server given -C disconnects after that many pings.\n",
               argv0, argv0);
}

#define DEBUG_LOG(...)                       \
  do {                                       \
    if (opt.debug) std::printf(__VA_ARGS__); \
  } while (0)

// ---- small helpers ---------------------------------------------------------------------------

const char* HrName(HRESULT h) {
  switch (h) {
    case ND_SUCCESS: return "ND_SUCCESS";
    case ND_TIMEOUT: return "ND_TIMEOUT";
    case ND_CANCELED: return "ND_CANCELED";
    case ND_IO_TIMEOUT: return "ND_IO_TIMEOUT";
    case ND_CONNECTION_REFUSED: return "ND_CONNECTION_REFUSED";
    case ND_CONNECTION_ABORTED: return "ND_CONNECTION_ABORTED";
    case ND_CONNECTION_INVALID: return "ND_CONNECTION_INVALID";
    case ND_HOST_UNREACHABLE: return "ND_HOST_UNREACHABLE";
    case ND_NETWORK_UNREACHABLE: return "ND_NETWORK_UNREACHABLE";
    case ND_ACCESS_VIOLATION: return "ND_ACCESS_VIOLATION";
    case ND_REMOTE_ERROR: return "ND_REMOTE_ERROR";
    case ND_BUFFER_OVERFLOW: return "ND_BUFFER_OVERFLOW";
    case ND_DATA_OVERRUN: return "ND_DATA_OVERRUN";
    case ND_INVALID_ADDRESS: return "ND_INVALID_ADDRESS";
    case ND_INSUFFICIENT_RESOURCES: return "ND_INSUFFICIENT_RESOURCES";
    case ND_TOO_MANY_ADDRESSES: return "ND_TOO_MANY_ADDRESSES";
    case ND_SHARING_VIOLATION: return "ND_SHARING_VIOLATION";
    case ND_DEVICE_NOT_READY: return "ND_DEVICE_NOT_READY";
    case ND_DEVICE_BUSY: return "ND_DEVICE_BUSY";
    case ND_UNSUCCESSFUL: return "ND_UNSUCCESSFUL";
    default: return "?";
  }
}

std::string Hr(HRESULT h) {
  char b[64];
  std::snprintf(b, sizeof b, "%s (0x%08x)", HrName(h), static_cast<unsigned>(h));
  return b;
}

using ndtool::Addr;

// Waits for an overlapped request of `o` that returned `h` (ND_PENDING: not done yet). The wait
// drives the adapter (libnd2's inline progress).
HRESULT Finish(IND2Overlapped* o, OVERLAPPED* ov, HRESULT h) {
  if (h == ND_PENDING) h = o->GetOverlappedResult(ov, TRUE);
  return h;
}

// The limit of a wait for the peer, in seconds: --timeout, else kStepTimeoutS.
uint32_t StepTimeoutS(const Options& o) { return o.timeout_s ? o.timeout_s : kStepTimeoutS; }

// A wait that lasted its limit: one line naming it, then exit 1 (the provider's exit handler
// ends our connections on the wire: DREQ, at most 1 s).
[[noreturn]] void TimedOut(uint32_t secs, const std::string& what) {
  std::fflush(stdout);
  std::fprintf(stderr, "rping: timed out after %u s waiting for %s\n", static_cast<unsigned>(secs), what.c_str());
  std::fflush(stderr);
  std::exit(1);
}

// Finish within `secs` (0: no limit); past it, TimedOut naming `what`. The request's event is
// waited on in slices (each wait drives the adapter) and its status read without waiting:
// GetOverlappedResult(FALSE) is ND_PENDING until the request is done.
HRESULT FinishWithin(IND2Overlapped* o, OVERLAPPED* ov, HRESULT h, uint32_t secs, const std::string& what) {
  if (h != ND_PENDING) return h;
  if (secs == 0) return o->GetOverlappedResult(ov, TRUE);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(secs);
  for (;;) {
    h = o->GetOverlappedResult(ov, FALSE);
    if (h != ND_PENDING) return h;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) TimedOut(secs, what);
    WaitForSingleObject(ov->hEvent, static_cast<DWORD>(std::min<int64_t>(left, 200)));
  }
}

// The ND2 configuration for the port options: one adapter, inline progress
// (tools/nd/nd_port_options.h, shared with nd-perf).
bool WriteConfig(const Options& o, std::string* path) {
  ndtool::PortOptions p;
  p.profile = o.profile;
  p.iface = o.iface;
  p.ips = o.ips;
  p.sets = o.sets;
  p.capture = o.capture;
  if (o.drop_rx_dreqs) p.sets.push_back("cm_drop_rx_dreqs=" + std::to_string(o.drop_rx_dreqs));
  if (o.drop_tx_dreqs) p.sets.push_back("cm_drop_tx_dreqs=" + std::to_string(o.drop_tx_dreqs));
  std::string err;
  if (!ndtool::WriteNd2Config({p}, "rping", path, &err)) {
    std::fprintf(stderr, "rping: %s\n", err.c_str());
    return false;
  }
  if (o.debug) {
    std::string text;
    ndtool::Nd2ConfigText({p}, &text, &err);
    std::printf("ND2 configuration (%s):\n%s", path->c_str(), text.c_str());
  }
  return true;
}

// The adapter's diagnostics (our extension); null if the provider has none.
struct Diag {
  IND2AdapterDiagnostics* d = nullptr;
  bool Adapter(ND2_ADAPTER_DIAGNOSTICS* out) const {
    if (!d) return false;
    *out = {};
    out->InfoVersion = ND2_DIAGNOSTICS_VERSION_1;
    ULONG cb = sizeof *out;
    const HRESULT h = d->QueryAdapter(out, &cb);
    if (h != ND_SUCCESS) std::fprintf(stderr, "rping: QueryAdapter: %s\n", Hr(h).c_str());
    return h == ND_SUCCESS;
  }
  bool Connector(IND2Connector* c, ND2_CONNECTOR_DIAGNOSTICS* out) const {
    if (!d) return false;
    *out = {};
    out->InfoVersion = ND2_DIAGNOSTICS_VERSION_1;
    ULONG cb = sizeof *out;
    const HRESULT h = d->QueryConnector(c, out, &cb);
    if (h != ND_SUCCESS) std::fprintf(stderr, "rping: QueryConnector: %s\n", Hr(h).c_str());
    return h == ND_SUCCESS;
  }
};

// What every connection uses: the adapter and its overlapped file.
struct Host {
  IND2Adapter* adapter = nullptr;
  HANDLE file = nullptr;
  Diag diag;
};

// An OVERLAPPED with its own event (an overlapped request waited on by
// GetOverlappedResult, or a CQ notification waited on with a timeout).
struct Ov {
  OVERLAPPED ov{};
  Ov() { ov.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr); }
  ~Ov() {
    if (ov.hEvent) CloseHandle(ov.hEvent);
  }
  Ov(const Ov&) = delete;
  Ov& operator=(const Ov&) = delete;
  bool pending() const { return static_cast<HRESULT>(static_cast<uint32_t>(ov.Internal)) == ND_PENDING; }
};

// One completion queue and the notification we wait on.
class Cq {
 public:
  ~Cq() { Close(); }
  HRESULT Open(const Host& h, ULONG depth) {
    return h.adapter->CreateCompletionQueue(IID_IND2CompletionQueue, h.file, depth, 0, 0,
                                            reinterpret_cast<void**>(&cq_));
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
  IND2CompletionQueue* get() { return cq_; }
  // The next result: polled (each GetResults drives the adapter one pass)
  // for up to kSpin, then waited for through a notification (the wait
  // drives the adapter and naps when nothing moves). False on a timeout.
  // Polling first answers the peer at once (a ping step takes 2-10 ms
  // against a TCG guest) and sees a completion in the pass that brought it,
  // before frames that came just after it are read: a server's -C
  // disconnect then leaves before the peer's DREQ, which follows the last
  // ACK within microseconds, is handled (the crossed-DREQ case; a napping
  // wait would read both at once). Blocking keeps a long wait cheap.
  bool Next(ND2_RESULT* r, int64_t timeout_ms) {
    constexpr auto kSpin = std::chrono::milliseconds(50);
    notify_failed_ = false;
    const auto now = std::chrono::steady_clock::now();
    const auto deadline = now + std::chrono::milliseconds(timeout_ms);
    const auto spin_end = now + kSpin;
    for (;;) {
      if (cq_->GetResults(r, 1) == 1) return true;
      if (std::chrono::steady_clock::now() < spin_end) continue;
      if (!armed_) {
        const HRESULT h = cq_->Notify(ND_CQ_NOTIFY_ANY, &note_.ov);
        if (h != ND_PENDING && h != ND_SUCCESS) {
          std::fprintf(stderr, "rping: Notify: %s\n", Hr(h).c_str());
          notify_failed_ = true;
          return false;
        }
        armed_ = h == ND_PENDING;
        continue;  // a result that came meanwhile has satisfied it: poll again
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) return false;
      WaitForSingleObject(note_.ov.hEvent, static_cast<DWORD>(std::min<int64_t>(left, 1000)));
      if (!note_.pending()) armed_ = false;
    }
  }
  // Next returned false because Notify failed (not a timeout).
  bool notify_failed() const { return notify_failed_; }

 private:
  IND2CompletionQueue* cq_ = nullptr;
  Ov note_;
  bool armed_ = false;
  bool notify_failed_ = false;
};

// A registered buffer.
class Buffer {
 public:
  ~Buffer() { Close(); }
  HRESULT Open(const Host& h, size_t len, ULONG flags) {
    data_.assign(len, 0);
    HRESULT r = h.adapter->CreateMemoryRegion(IID_IND2MemoryRegion, h.file, reinterpret_cast<void**>(&mr_));
    if (FAILED(r)) return r;
    r = Finish(mr_, &ov_.ov, mr_->Register(data_.data(), data_.size(), flags, &ov_.ov));
    registered_ = r == ND_SUCCESS;
    return r;
  }
  void Close() {
    if (!mr_) return;
    if (registered_) {
      const HRESULT h = Finish(mr_, &ov_.ov, mr_->Deregister(&ov_.ov));
      if (h != ND_SUCCESS) std::fprintf(stderr, "rping: Deregister: %s\n", Hr(h).c_str());
      registered_ = false;
    }
    mr_->Release();
    mr_ = nullptr;
  }
  char* data() { return data_.data(); }
  ULONG size() const { return static_cast<ULONG>(data_.size()); }
  UINT64 addr() const { return reinterpret_cast<UINT64>(data_.data()); }
  UINT32 ltoken() const { return mr_->GetLocalToken(); }
  UINT32 rtoken() const { return mr_->GetRemoteToken(); }
  ND2_SGE Sge(ULONG len) { return ND2_SGE{data_.data(), len, ltoken()}; }

 private:
  std::vector<char> data_;
  IND2MemoryRegion* mr_ = nullptr;
  Ov ov_;
  bool registered_ = false;
};

// Request contexts (ND2_RESULT::RequestContext).
enum Ctx : uintptr_t { kCtxRecv = 1, kCtxSend = 10, kCtxRead = 11, kCtxWrite = 12 };
void* CtxPtr(Ctx c) { return reinterpret_cast<void*>(static_cast<uintptr_t>(c)); }

// One connection's resources: CQs, QP, connector, the four buffers rping
// registers.
class Session {
 public:
  Session(const Host& h, const Options& opt) : host_(h), opt_(opt) {}
  ~Session() { Close(); }

  bool Open() {
    HRESULT h;
    if (FAILED(h = scq_.Open(host_, 16)) || FAILED(h = rcq_.Open(host_, 16))) {
      std::fprintf(stderr, "rping: CreateCompletionQueue: %s\n", Hr(h).c_str());
      return false;
    }
    // Receive depth 2 (the info messages), initiator depth 16, one SGE each way.
    h = host_.adapter->CreateQueuePair(IID_IND2QueuePair, rcq_.get(), scq_.get(), this, 2, 16, 1, 1, 0,
                                       reinterpret_cast<void**>(&qp_));
    if (FAILED(h)) {
      std::fprintf(stderr, "rping: CreateQueuePair: %s\n", Hr(h).c_str());
      return false;
    }
    if (FAILED(h = recv_.Open(host_, kInfoLen, ND_MR_FLAG_ALLOW_LOCAL_WRITE)) ||
        FAILED(h = send_.Open(host_, kInfoLen, 0)) ||
        FAILED(h = start_.Open(host_, opt_.size, ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ)) ||
        FAILED(h = rdma_.Open(host_, opt_.size,
                              ND_MR_FLAG_ALLOW_REMOTE_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ |
                                  ND_MR_FLAG_RDMA_READ_SINK))) {
      std::fprintf(stderr, "rping: registering the buffers: %s\n", Hr(h).c_str());
      return false;
    }
    h = host_.adapter->CreateConnector(IID_IND2Connector, host_.file, reinterpret_cast<void**>(&conn_));
    if (FAILED(h)) {
      std::fprintf(stderr, "rping: CreateConnector: %s\n", Hr(h).c_str());
      return false;
    }
    return true;
  }
  // Releases everything: the connector (its connection goes), the QP, the
  // buffers, the CQs.
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
    recv_.Close();
    send_.Close();
    start_.Close();
    rdma_.Close();
    scq_.Close();
    rcq_.Close();
  }
  IND2QueuePair* qp() { return qp_; }
  IND2Connector* conn() { return conn_; }
  OVERLAPPED* ov() { return &ov_.ov; }
  OVERLAPPED* disc_ov() { return &disc_.ov; }
  bool disc_pending() const { return disc_.pending(); }

  bool PostRecv() {
    const ND2_SGE s = recv_.Sge(kInfoLen);
    const HRESULT h = qp_->Receive(CtxPtr(kCtxRecv), &s, 1);
    if (h != ND_SUCCESS) std::fprintf(stderr, "rping: Receive: %s\n", Hr(h).c_str());
    return h == ND_SUCCESS;
  }
  // Sends {addr, rkey, size} of the start or the rdma buffer.
  bool SendInfo(bool rdma_buf) {
    Buffer& b = rdma_buf ? rdma_ : start_;
    const uint64_t a = htobe64(b.addr());
    const uint32_t k = htobe32(b.rtoken()), n = htobe32(opt_.size);
    std::memcpy(send_.data(), &a, 8);
    std::memcpy(send_.data() + 8, &k, 4);
    std::memcpy(send_.data() + 12, &n, 4);
    const ND2_SGE s = send_.Sge(kInfoLen);
    const HRESULT h = qp_->Send(CtxPtr(kCtxSend), &s, 1, 0);
    if (h != ND_SUCCESS) std::fprintf(stderr, "rping: Send: %s\n", Hr(h).c_str());
    return h == ND_SUCCESS;
  }
  // RDMA Read (the peer's buffer into ours) or Write (ours into the peer's)
  // of `len` bytes at the address and token the peer's last info gave.
  bool Rdma(bool read, ULONG len) {
    const ND2_SGE s = rdma_.Sge(len);
    const HRESULT h = read ? qp_->Read(CtxPtr(kCtxRead), &s, 1, remote_addr_, remote_token_, 0)
                           : qp_->Write(CtxPtr(kCtxWrite), &s, 1, remote_addr_, remote_token_, 0);
    if (h != ND_SUCCESS) std::fprintf(stderr, "rping: %s: %s\n", read ? "Read" : "Write", Hr(h).c_str());
    return h == ND_SUCCESS;
  }
  // Waits for one result on the initiator (send) or receive queue (`what`:
  // the step, for the message); false on an error status (ND_CANCELED: the
  // connection went) or bogus data. A receive re-posts itself and records
  // the info it carried. Past the step's limit: TimedOut (exit 1).
  bool Wait(bool recv, const char* what) {
    ND2_RESULT r{};
    const uint32_t secs = StepTimeoutS(opt_);
    if (!(recv ? rcq_ : scq_).Next(&r, int64_t{secs} * 1000)) {
      if (!(recv ? rcq_ : scq_).notify_failed())
        TimedOut(secs, std::string(what) + (recv ? " (a receive completion)" : " (a send completion)"));
      last_status_ = ND_UNSUCCESSFUL;
      return false;
    }
    if (r.Status != ND_SUCCESS) {
      if (r.Status != ND_CANCELED) std::fprintf(stderr, "cq completion failed status %s\n", Hr(r.Status).c_str());
      last_status_ = r.Status;
      return false;
    }
    if (recv) {
      if (r.BytesTransferred != kInfoLen) {
        std::fprintf(stderr, "Received bogus data, size %u\n", static_cast<unsigned>(r.BytesTransferred));
        return false;
      }
      uint64_t a;
      uint32_t k, n;
      std::memcpy(&a, recv_.data(), 8);
      std::memcpy(&k, recv_.data() + 8, 4);
      std::memcpy(&n, recv_.data() + 12, 4);
      remote_addr_ = be64toh(a);
      remote_token_ = be32toh(k);
      remote_len_ = be32toh(n);
      if (!PostRecv()) return false;
    }
    return true;
  }
  HRESULT last_status() const { return last_status_; }
  uint32_t remote_len() const { return remote_len_; }
  char* start() { return start_.data(); }
  char* rdma() { return rdma_.data(); }

 private:
  const Host& host_;
  const Options& opt_;
  Cq scq_, rcq_;
  IND2QueuePair* qp_ = nullptr;
  IND2Connector* conn_ = nullptr;
  Buffer recv_, send_, start_, rdma_;
  Ov ov_, disc_;
  uint64_t remote_addr_ = 0;
  uint32_t remote_token_ = 0, remote_len_ = 0;
  HRESULT last_status_ = ND_SUCCESS;
};

// rping's client payload for ping `n`.
void FillStart(char* b, uint32_t size, uint64_t n, int* start) {
  int cc = std::snprintf(b, size, "rdma-ping-%llu: ", static_cast<unsigned long long>(n));
  int c = *start;
  for (uint32_t i = static_cast<uint32_t>(cc); i < size; i++) {
    b[i] = static_cast<char>(c);
    if (++c > 122) c = 65;
  }
  if (++*start > 122) *start = 65;
  b[size - 1] = 0;
}

std::string Printable(const std::vector<char>& pd) {
  std::string s;
  for (char ch : pd) {
    if (!ch) break;
    s += (ch >= 32 && ch < 127) ? ch : '.';
  }
  return s;
}

int RunClient(const Options& opt, const Host& host, const Addr* local, const Addr& peer) {
  Session s(host, opt);
  if (!s.Open()) return 1;
  IND2Connector* c = s.conn();
  if (local) {  // -I: rdma_bind_addr to the source address (an ephemeral port)
    const HRESULT h = c->Bind(local->sa(), local->len);
    if (h != ND_SUCCESS) {
      std::fprintf(stderr, "rdma_bind_addr: %s\n", Hr(h).c_str());
      return 1;
    }
  }
  if (!s.PostRecv()) return 1;  // before any message can arrive
  const uint32_t step = StepTimeoutS(opt);
  HRESULT h = FinishWithin(c, s.ov(), c->Connect(s.qp(), peer.sa(), peer.len, 1, 1, nullptr, 0, s.ov()), step,
                           "the server's answer to our connection request (rdma_connect to " + peer.str() + ")");
  if (h == ND_CONNECTION_REFUSED) {
    // The peer rejected (REJ): the private data through ND2, the reason
    // through our diagnostics extension (ND2 folds every reason into
    // ND_CONNECTION_REFUSED).
    std::vector<char> pd(256);
    ULONG len = static_cast<ULONG>(pd.size());
    const HRESULT ph = c->GetPrivateData(pd.data(), &len);
    pd.resize(ph == ND_SUCCESS ? len : 0);
    if (ph != ND_SUCCESS) std::fprintf(stderr, "rping: GetPrivateData after the reject: %s\n", Hr(ph).c_str());
    ND2_CONNECTOR_DIAGNOSTICS d;
    const bool have_reason = host.diag.Connector(c, &d);
    if (have_reason)
      std::printf("rping: connection to %s rejected: REJ reason %u, private data \"%s\"\n", peer.str().c_str(),
                  static_cast<unsigned>(d.RejectReason), Printable(pd).c_str());
    else
      std::printf("rping: connection to %s rejected: REJ reason unknown, private data \"%s\"\n",
                  peer.str().c_str(), Printable(pd).c_str());
    return opt.expect_reject >= 0 && have_reason && static_cast<ULONG>(opt.expect_reject) == d.RejectReason ? 0 : 1;
  }
  if (h == ND_IO_TIMEOUT) {
    std::fprintf(stderr, "rping: connect to %s timed out\n", peer.str().c_str());
    return 1;
  }
  if (h != ND_SUCCESS) {
    std::fprintf(stderr, "rdma_connect: %s\n", Hr(h).c_str());
    return 1;
  }
  // The peer accepted (REP): the RTU goes with CompleteConnect.
  h = FinishWithin(c, s.ov(), c->CompleteConnect(s.ov()), step, "CompleteConnect (rdma_connect)");
  if (h != ND_SUCCESS) {
    std::fprintf(stderr, "rdma_connect (CompleteConnect): %s\n", Hr(h).c_str());
    return 1;
  }
  if (opt.debug) {
    sockaddr_storage la{};
    ULONG ll = sizeof la;
    ND2_CONNECTOR_DIAGNOSTICS d{};
    if (c->GetLocalAddress(reinterpret_cast<sockaddr*>(&la), &ll) == ND_SUCCESS && host.diag.Connector(c, &d))
      std::printf("rdma_connect successful (local %s, QPN 0x%x; peer QPN 0x%x)\n",
                  Addr::From(reinterpret_cast<sockaddr*>(&la), ll).str().c_str(), static_cast<unsigned>(d.LocalQpn),
                  static_cast<unsigned>(d.PeerQpn));
  }
  if (opt.expect_reject >= 0) {
    std::fprintf(stderr, "rping: connected, but a reject (reason %d) was expected\n", opt.expect_reject);
    FinishWithin(c, s.ov(), c->Disconnect(s.ov()), step, "the disconnect (rdma_disconnect)");
    return 1;
  }
  int rc = 0;
  int start = 65;
  for (uint64_t ping = 0; !opt.count || ping < opt.count; ping++) {
    FillStart(s.start(), opt.size, ping, &start);
    if (!s.SendInfo(false) || !s.Wait(false, "our Send of the start buffer's info")) { rc = 1; break; }
    if (!s.Wait(true, "the server's \"go ahead\" after its RDMA Read")) { rc = 1; break; }
    if (!s.SendInfo(true) || !s.Wait(false, "our Send of the rdma buffer's info")) { rc = 1; break; }
    if (!s.Wait(true, "the server's ACK after its RDMA Write")) { rc = 1; break; }
    if (opt.validate && std::memcmp(s.start(), s.rdma(), opt.size) != 0) {
      std::fprintf(stderr, "data mismatch!\n");
      rc = 1;
      break;
    }
    if (opt.verbose) std::printf("ping data: %s\n", s.rdma());
  }
  if (rc) std::fprintf(stderr, "rping: the test failed\n");
  DEBUG_LOG("rping client: disconnecting\n");
  h = FinishWithin(c, s.ov(), c->Disconnect(s.ov()), step, "the disconnect (rdma_disconnect)");
  if (h != ND_SUCCESS && !rc) {
    std::fprintf(stderr, "rdma_disconnect: %s\n", Hr(h).c_str());
    rc = 1;
  }
  return rc;
}

size_t RssKb() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long size = 0, rss = 0;
  if (f) {
    if (std::fscanf(f, "%lu %lu", &size, &rss) != 2) rss = 0;
    std::fclose(f);
  }
  return rss * (static_cast<size_t>(sysconf(_SC_PAGESIZE)) / 1024);
}

// Lets `ms` pass inside a wait: the wait drives the adapter (timers: the
// CM's time-wait, the QPN quarantine) as any ND2 wait does.
void PassTime(uint32_t ms) {
  HANDLE e = CreateEvent(nullptr, FALSE, FALSE, nullptr);
  WaitForSingleObject(e, ms);
  CloseHandle(e);
}

// --cycles: connect, ping, disconnect, N times; afterwards (time-wait and
// the QPN quarantine over) nothing the connections used may still be held,
// and the time per cycle must not grow (no stall).
int RunCycles(const Options& opt, const Host& host, const Addr* local, const Addr& peer) {
  if (opt.cycles == 1) return RunClient(opt, host, local, peer);
  ND2_ADAPTER_DIAGNOSTICS before, after;
  if (!host.diag.Adapter(&before)) {
    std::fprintf(stderr, "rping: --cycles needs the adapter's diagnostics (IND2AdapterDiagnostics)\n");
    return 1;
  }
  const size_t rss_before = RssKb();
  const auto t0 = std::chrono::steady_clock::now();
  double first_half = 0, worst = 0;
  for (uint64_t i = 0; i < opt.cycles; i++) {
    const auto c0 = std::chrono::steady_clock::now();
    if (RunClient(opt, host, local, peer) != 0) {
      std::fprintf(stderr, "rping: cycle %llu failed\n", static_cast<unsigned long long>(i));
      return 1;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    worst = std::max(worst, s);
    if (i < opt.cycles / 2) first_half += s;
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Every connection's time-wait ends (2 s); give them up to 10 s, then a
  // little more for the last frames. (Quarantined QPNs are printed, not
  // compared: the stack releases expired ones when it next creates a QP.)
  for (int i = 0; i < 100; i++) {
    if (!host.diag.Adapter(&after)) return 1;
    if (after.Connections == before.Connections) break;
    PassTime(100);
  }
  PassTime(200);
  if (!host.diag.Adapter(&after)) return 1;
  const size_t rss_after = RssKb();
  const double second_half = total - first_half;
  auto u = [](UINT64 v) { return static_cast<unsigned long long>(v); };
  std::printf("rping: %llu cycles in %.1f s (%.1f ms each, worst %.1f ms; first half %.1f s, second %.1f s)\n",
              u(opt.cycles), total, 1000 * total / static_cast<double>(opt.cycles), 1000 * worst, first_half,
              second_half);
  std::printf("rping: before/after: QPs %llu/%llu, quarantined QPNs %llu/%llu, connections %llu/%llu, "
              "bound ports %llu/%llu, mbufs %llu/%llu, memory regions %llu/%llu, memory windows %llu/%llu, "
              "RSS %zu/%zu KiB\n",
              u(before.QueuePairs), u(after.QueuePairs), u(before.QuarantinedQpns), u(after.QuarantinedQpns),
              u(before.Connections), u(after.Connections), u(before.BoundPorts), u(after.BoundPorts),
              u(before.PacketBuffersInUse), u(after.PacketBuffersInUse), u(before.MemoryRegions),
              u(after.MemoryRegions), u(before.MemoryWindows), u(after.MemoryWindows), rss_before, rss_after);
  std::printf("rping: CM: %llu REQ, %llu REP received, %llu DREQ sent, %llu DREP received, %llu retransmits, "
              "%llu timeouts\n",
              u(after.CmRequestsSent - before.CmRequestsSent), u(after.CmRepliesReceived - before.CmRepliesReceived),
              u(after.CmDisconnectRequestsSent - before.CmDisconnectRequestsSent),
              u(after.CmDisconnectRepliesReceived - before.CmDisconnectRepliesReceived),
              u(after.CmRetransmits - before.CmRetransmits), u(after.CmTimeouts - before.CmTimeouts));
  bool ok = after.QueuePairs == before.QueuePairs && after.Connections == before.Connections && after.BoundPorts == before.BoundPorts &&
            after.MemoryRegions == before.MemoryRegions && after.MemoryWindows == before.MemoryWindows &&
            after.PacketBuffersInUse <= before.PacketBuffersInUse + 64 && rss_after <= rss_before + 16 * 1024;
  if (!ok) std::fprintf(stderr, "rping: resources leaked over the cycles\n");
  // Every cycle connected once: as many REQs as cycles at least.
  if (after.CmRequestsSent - before.CmRequestsSent < opt.cycles) {
    std::fprintf(stderr, "rping: fewer REQs sent than cycles\n");
    ok = false;
  }
  // No stall: the second half no slower than twice the first.
  if (second_half > 2 * first_half + 1.0) {
    std::fprintf(stderr, "rping: cycles slowed down (first half %.1f s, second half %.1f s)\n", first_half,
                 second_half);
    ok = false;
  }
  return ok ? 0 : 1;
}

int ServeOne(const Options& opt, const Host& host, IND2Listener* listener) {
  Session s(host, opt);
  if (!s.Open()) return 1;
  IND2Connector* c = s.conn();
  const uint32_t step = StepTimeoutS(opt);
  {
    Ov req;
    // A client: for as long as it takes unless --timeout was given.
    const HRESULT h = FinishWithin(listener, &req.ov, listener->GetConnectionRequest(c, &req.ov), opt.timeout_s,
                                   "a client to connect (rdma_get_request)");
    if (h != ND_SUCCESS) {
      std::fprintf(stderr, "rdma_get_request: %s\n", Hr(h).c_str());
      return 1;
    }
  }
  if (opt.debug) {
    sockaddr_storage pa{};
    ULONG pl = sizeof pa;
    if (c->GetPeerAddress(reinterpret_cast<sockaddr*>(&pa), &pl) == ND_SUCCESS)
      std::printf("connect request from %s\n", Addr::From(reinterpret_cast<sockaddr*>(&pa), pl).str().c_str());
  }
  if (!s.PostRecv()) {
    c->Reject(nullptr, 0);
    return 1;
  }
  HRESULT h = FinishWithin(c, s.ov(), c->Accept(s.qp(), 1, 1, nullptr, 0, s.ov()), step,
                           "the client's answer to our accept (rdma_accept)");
  if (h != ND_SUCCESS) {
    std::fprintf(stderr, "rdma_accept: %s\n", Hr(h).c_str());
    return 1;
  }
  // The peer's disconnect (DREQ), noticed when the loop ends.
  h = c->NotifyDisconnect(s.disc_ov());
  if (h != ND_PENDING && h != ND_SUCCESS) std::fprintf(stderr, "rping: NotifyDisconnect: %s\n", Hr(h).c_str());
  int rc = 0;
  bool disconnected = false;
  // A failed step: flushed (ND_CANCELED) is the peer's disconnect having
  // flushed it — the client may end the test (DREQ) before our last Send's
  // ACK, lost on a lossy link, came back, as librdmacm's rping treats a flush
  // (IBV_WC_WR_FLUSH_ERR) — and is judged below like a flushed receive;
  // anything else fails the test.
  const auto end = [&] {
    if (s.last_status() == ND_CANCELED) disconnected = true;
    else rc = 1;
  };
  for (uint64_t ping = 0;; ping++) {
    // The client's start buffer, or its disconnect (receive flushed).
    if (!s.Wait(true, "the client's next ping (the info of its start buffer) or its disconnect")) {
      disconnected = true;
      break;
    }
    if (s.remote_len() > opt.size) {
      std::fprintf(stderr, "rping: the client's buffer (%u) is larger than ours (%u)\n", s.remote_len(), opt.size);
      rc = 1;
      break;
    }
    if (!s.Rdma(true, s.remote_len()) || !s.Wait(false, "our RDMA Read of the client's start buffer")) {
      end();
      break;
    }
    if (opt.verbose) std::printf("server ping data: %s\n", s.rdma());
    if (opt.validate) {
      std::vector<char> want(opt.size);
      int start = static_cast<int>(65 + ping % 58);
      FillStart(want.data(), opt.size, ping, &start);
      if (std::memcmp(want.data(), s.rdma(), s.remote_len()) != 0) {
        std::fprintf(stderr, "data mismatch!\n");
        rc = 1;
        break;
      }
    }
    if (!s.SendInfo(true) || !s.Wait(false, "our Send of \"go ahead\"")) { end(); break; }
    if (!s.Wait(true, "the info of the client's rdma buffer")) { end(); break; }
    const ULONG len = static_cast<ULONG>(strnlen(s.rdma(), opt.size - 1)) + 1;
    if (!s.Rdma(false, len) || !s.Wait(false, "our RDMA Write to the client")) { end(); break; }
    if (!s.SendInfo(true) || !s.Wait(false, "our Send of the ACK")) { end(); break; }
    if (opt.count && ping + 1 >= opt.count) break;                // ours: disconnect after -C pings
  }
  if (disconnected) {
    // The receive failed: the peer's DREQ flushed it (NotifyDisconnect
    // completes in the same pass), or the connection failed, which is no
    // end of the test.
    if (s.disc_pending()) WaitForSingleObject(s.disc_ov()->hEvent, 2000);
    if (s.disc_pending()) {
      std::fprintf(stderr, "rping: the connection failed (%s) without a disconnect from the peer\n",
                   Hr(s.last_status()).c_str());
      rc = 1;
    } else {
      DEBUG_LOG("server DISCONNECT EVENT...\n");
    }
  }
  // Ours (rdma_disconnect); after the peer's it completes at once.
  h = FinishWithin(c, s.ov(), c->Disconnect(s.ov()), step, "the disconnect (rdma_disconnect)");
  if (h != ND_SUCCESS && h != ND_CONNECTION_INVALID) {
    std::fprintf(stderr, "rdma_disconnect: %s\n", Hr(h).c_str());
    rc = 1;
  }
  if (opt.debug) {
    ND2_ADAPTER_DIAGNOSTICS d;
    if (host.diag.Adapter(&d))
      std::printf("rping server: disconnected (crossed DREQs so far: %llu)\n",
                  static_cast<unsigned long long>(d.CmCrossedDisconnects));
  }
  return rc;
}

int RunServer(const Options& opt, const Host& host, const Addr& bind) {
  IND2Listener* l = nullptr;
  HRESULT h = host.adapter->CreateListener(IID_IND2Listener, host.file, reinterpret_cast<void**>(&l));
  if (FAILED(h)) {
    std::fprintf(stderr, "rping: CreateListener: %s\n", Hr(h).c_str());
    return 1;
  }
  h = l->Bind(bind.sa(), bind.len);
  if (h != ND_SUCCESS) {
    std::fprintf(stderr, "rdma_bind_addr: %s\n", Hr(h).c_str());
    l->Release();
    return 1;
  }
  h = l->Listen(3);
  if (h != ND_SUCCESS) {
    std::fprintf(stderr, "rdma_listen: %s\n", Hr(h).c_str());
    l->Release();
    return 1;
  }
  std::printf("rping: listening on %s:%u\n", bind.any() ? "*" : bind.ip().c_str(), opt.port);
  std::fflush(stdout);
  int rc = 0;
  do {
    rc |= ServeOne(opt, host, l);
    std::fflush(stdout);
  } while (opt.persistent);
  l->Release();
  return rc;
}

int Run(const Options& opt) {
  Addr addr;
  bool have_addr = false;
  if (!opt.addr.empty()) {
    if (!Addr::Parse(opt.addr, opt.port, &addr)) {
      std::fprintf(stderr, "rping: bad address %s\n", opt.addr.c_str());
      return 1;
    }
    have_addr = true;
  }
  // The local address the adapter is opened by (NdOpenAdapter).
  Addr local, source;
  if (opt.client) {
    if (!opt.source.empty()) {
      if (!Addr::Parse(opt.source, 0, &source)) {
        std::fprintf(stderr, "rping: bad source address %s\n", opt.source.c_str());
        return 1;
      }
      local = source;
    } else {
      SIZE_T ll = sizeof local.ss;
      const HRESULT h = NdResolveAddress(addr.sa(), addr.len, local.sa(), &ll);
      if (h != ND_SUCCESS) {
        std::fprintf(stderr, "rdma_resolve_addr: no local %s address for %s: %s\n", addr.v4() ? "IPv4" : "IPv6",
                     addr.ip().c_str(), Hr(h).c_str());
        return 1;
      }
      local.len = static_cast<ULONG>(ll);
    }
  } else if (have_addr && !addr.any()) {
    local = addr;
  } else if (!ndtool::FirstAddress(&local)) {
    std::fprintf(stderr, "rping: the ND2 adapter has no address\n");
    return 1;
  }
  Host host;
  HRESULT h = NdOpenAdapter(IID_IND2Adapter, local.sa(), local.len, reinterpret_cast<void**>(&host.adapter));
  if (h != ND_SUCCESS) {
    std::fprintf(stderr, "rping: NdOpenAdapter(%s): %s\n", local.ip().c_str(), Hr(h).c_str());
    return 1;
  }
  h = host.adapter->CreateOverlappedFile(&host.file);
  if (h != ND_SUCCESS) {
    std::fprintf(stderr, "rping: CreateOverlappedFile: %s\n", Hr(h).c_str());
    host.adapter->Release();
    return 1;
  }
  if (host.adapter->QueryInterface(IID_IND2AdapterDiagnostics, reinterpret_cast<void**>(&host.diag.d)) != S_OK)
    host.diag.d = nullptr;
  int rc;
  if (opt.server) {
    Addr bind = have_addr ? addr : Addr{};
    if (!have_addr) {  // any address (rping without -a)
      auto* s4 = reinterpret_cast<sockaddr_in*>(&bind.ss);
      s4->sin_family = AF_INET;
      bind.len = sizeof(sockaddr_in);
    }
    bind.set_port(opt.port);
    rc = RunServer(opt, host, bind);
  } else {
    rc = RunCycles(opt, host, opt.source.empty() ? nullptr : &source, addr);
  }
  if (host.diag.d) host.diag.d->Release();
  CloseHandle(host.file);
  host.adapter->Release();
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  const option longopts[] = {{"help", no_argument, nullptr, 'h'},
                             {"cycles", required_argument, nullptr, kOptCycles},
                             {"cm-drop-rx-dreqs", required_argument, nullptr, kOptDropRx},
                             {"expect-reject", required_argument, nullptr, kOptExpectReject},
                             {"cm-drop-tx-dreqs", required_argument, nullptr, kOptDropTx},
                             {"profile", required_argument, nullptr, kOptProfile},
                             {"iface", required_argument, nullptr, kOptIface},
                             {"ip", required_argument, nullptr, kOptIp},
                             {"set", required_argument, nullptr, kOptSet},
                             {"capture", required_argument, nullptr, kOptCapture},
                             {"timeout", required_argument, nullptr, kOptTimeout},
                             {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "a:I:Pp:C:S:t:scvVdqh", longopts, nullptr)) != -1) {
    switch (c) {
      case 'a': opt.addr = optarg; break;
      case 'I': opt.source = optarg; break;
      case 'P': opt.persistent = true; break;
      case 'p': opt.port = static_cast<uint16_t>(std::strtoul(optarg, nullptr, 0)); break;
      case 's': opt.server = true; break;
      case 'c': opt.client = true; break;
      case 'C': opt.count = std::strtoull(optarg, nullptr, 0); break;
      case 'S': opt.size = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 0)); break;
      case 'v': opt.verbose = true; break;
      case 'V': opt.validate = true; break;
      case 'd': opt.debug = true; break;
      case 'q': break;  // ND2 queue pairs are always the application's own
      case 't': break;  // tos: not offered
      case 'h': Usage(argv[0]); return 0;
      case kOptCycles: opt.cycles = std::max<uint64_t>(1, std::strtoull(optarg, nullptr, 0)); break;
      case kOptDropRx: opt.drop_rx_dreqs = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 0)); break;
      case kOptExpectReject: opt.expect_reject = std::atoi(optarg); break;
      case kOptDropTx: opt.drop_tx_dreqs = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 0)); break;
      case kOptProfile: opt.profile = optarg; break;
      case kOptIface: opt.iface = optarg; break;
      case kOptIp: opt.ips.push_back(optarg); break;
      case kOptSet: opt.sets.push_back(optarg); break;
      case kOptCapture: opt.capture = optarg; break;
      case kOptTimeout: {
        char* end = nullptr;
        const unsigned long v = std::strtoul(optarg, &end, 10);
        if (!*optarg || *end || optarg[0] == '-' || v < 1 || v > 86400) {
          std::fprintf(stderr, "rping: bad --timeout '%s' (1..86400 seconds)\n", optarg);
          return 1;
        }
        opt.timeout_s = static_cast<uint32_t>(v);
        break;
      }
      default: Usage(argv[0]); return 1;
    }
  }
  if (optind < argc || opt.server == opt.client || (opt.client && opt.addr.empty())) {
    Usage(argv[0]);
    return 1;
  }
  if (opt.size < kMinSize || opt.size > kMaxSize) {
    std::fprintf(stderr, "Invalid size %u (valid range is %u to %u)\n", opt.size, kMinSize, kMaxSize);
    return 1;
  }
  if (opt.ips.empty()) {
    std::fprintf(stderr, "rping: --ip addr/len is required (the address of the ND2 adapter this run brings up)\n");
    return 1;
  }
  // The ND2 configuration: read by NdStartup, removed once it has been.
  std::string cfg;
  if (!WriteConfig(opt, &cfg)) return 1;
  setenv("ND2_CONFIG", cfg.c_str(), 1);
  const HRESULT h = NdStartup();
  unlink(cfg.c_str());
  if (h != ND_SUCCESS) {
    std::fprintf(stderr, "rping: NdStartup: %s (the ND2 adapter could not be brought up; see above)\n",
                 Hr(h).c_str());
    return 1;
  }
  int rc = Run(opt);
  std::fflush(stdout);
  // Every object is released by now. NdCleanup succeeds either way (as
  // Microsoft's ndsupport: objects still held keep the provider alive), so
  // the provider's COM entry point tells: it can be unloaded only when
  // nothing made from it lives.
  const HRESULT ch = NdCleanup();
  if (ch != ND_SUCCESS) {
    std::fprintf(stderr, "rping: NdCleanup: %s\n", Hr(ch).c_str());
    rc = 1;
  } else if (DllCanUnloadNow() != S_OK) {
    std::fprintf(stderr, "rping: NdCleanup: an ND2 object was not released (the provider stays up)\n");
    rc = 1;
  }
  return rc;
}
