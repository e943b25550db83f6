// SPDX-License-Identifier: MIT
// nd-rpingpong: Microsoft's ndrpingpong (bidirectional RDMA Write ping-pong test) on Linux,
// written here from its command line and protocol (README.md here), so either side can be the
// original.
//
//   nd-rpingpong -s [-p|-b] [-n nSge] <ip>[:<port>]            (port 54327)
//   nd-rpingpong -c [-p|-b] [-n nSge] <ip>[:<port>]
//
// Protocol. Each side registers a buffer of 4 MB + 40 B + 2 * 16 bytes (remote write), binds a
// memory window over all of it and sends the 16-byte PeerInfo { UINT32 window token; 4 bytes of
// padding; UINT64 buffer address } (little endian) from the last 16 bytes; the one before
// receives the peer's (the client sends first, the server answers). Then, for each iteration
// of size S, the client sets the last byte of its S bytes ('A' in the warm-up, 'X' after) and
// RDMA-Writes them to the start of the server's buffer; the server watches its byte S-1 until
// it reads that value (in-order placement makes the whole payload valid then), sets it to 'B' /
// 'Y' and writes its S bytes back the same way; the client watches for that. Sizes: a warm-up
// of 1000 exchanges of 40 bytes, then 1 B doubling to 4 MB, each min(100000, 2000 MB / size)
// times; both sides run the same schedule (so give both the same --iters / --warmup /
// --min-size / --max-size). The client then sends a 0-byte terminate message, which the server
// receives on its second posted receive; both disconnect.
//
// While watching a byte, this implementation also polls its CQ (GetResults): an ND2 program
// must call into an inline-progress adapter for it to place data (the original only spins on
// memory, which needs a provider that progresses on its own: `progress = thread` here).
//
// --verify: the client's ping i of size S carries PatternByte(seed, S, 2i, offset) before the
// marker byte, the server checks it and answers with PatternByte(seed, S, 2i + 1, offset),
// which the client checks.
#include "nd_common.h"

using namespace ndtool;

namespace {

constexpr ProgramInfo kInfo{"nd-rpingpong", "NetworkDirect bidirectional RDMA write ping-pong test (ndrpingpong)",
                            54327, false, true};
constexpr uint64_t kMaxIterations = 100000;

struct PeerInfo {
  UINT32 m_remoteToken;
  UINT64 m_remoteAddress;
};
static_assert(sizeof(PeerInfo) == 16 && offsetof(PeerInfo, m_remoteAddress) == 8, "ndrpingpong's PeerInfo");

constexpr size_t kBufLen = kMaxXfer + kHdrLen + 2 * sizeof(PeerInfo);
constexpr size_t kPeerInfoOff = kMaxXfer + kHdrLen;                      // received here
constexpr size_t kOurInfoOff = kMaxXfer + kHdrLen + sizeof(PeerInfo);    // sent from here

constexpr char kClientWarmupVal = 'A', kServerWarmupVal = 'B';
constexpr char kClientTestVal = 'X', kServerTestVal = 'Y';

void* const kRecvCtx = reinterpret_cast<void*>(0x1000);
void* const kSendCtx = reinterpret_cast<void*>(0x2000);
void* const kWriteCtx = reinterpret_cast<void*>(0x4000);

class Side {
 public:
  Side(const Options& o, bool server) : o_(o), ep_(o.blocking), server_(server) {}
  virtual ~Side() { free(buf_); }

 protected:
  void Setup(const sockaddr_in& local) {
    ep_.Open(local);
    ep_.RequireInOrderDma();
    const ND2_ADAPTER_INFO& info = ep_.info();
    depth_ = min(info.MaxCompletionQueueDepth, info.MaxInitiatorQueueDepth);
    if (o_.pipeline) depth_ = min(depth_, o_.pipeline);  // -q: the queue depth
    max_sge_ = min(o_.nsge, info.MaxInitiatorSge);
    inline_ = info.InlineRequestThreshold;
    // The server's CQ is as deep as the adapter allows, the client's as its queue (originals).
    ep_.CreateCq(server_ ? info.MaxCompletionQueueDepth : depth_);
    ep_.CreateConnector();
    ep_.CreateQp(min(depth_, info.MaxReceiveQueueDepth), o_.nsge, inline_);
    buf_ = AllocBuffer(kBufLen);
    // Never a marker byte where the peer looks before the first exchange.
    FillPattern(buf_, kMaxXfer + kHdrLen, o_.seed, 0, 0xffffffffu);
    ep_.Register(buf_, kBufLen, ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_WRITE);
    sgl_.resize(max_sge_);
  }
  void PostInfoReceive() {
    ND2_SGE s{buf_ + kPeerInfoOff, static_cast<ULONG>(sizeof(PeerInfo)), ep_.LocalToken()};
    ep_.PostReceive(&s, 1, kRecvCtx);
  }
  void SendOurInfo() {
    ep_.BindWindow(buf_, kBufLen, ND_OP_FLAG_ALLOW_WRITE);
    PeerInfo pi{};
    pi.m_remoteToken = ep_.WindowToken();
    pi.m_remoteAddress = reinterpret_cast<UINT64>(buf_);
    memcpy(buf_ + kOurInfoOff, &pi, sizeof pi);
    ND2_SGE s{buf_ + kOurInfoOff, static_cast<ULONG>(sizeof pi), ep_.LocalToken()};
    ep_.Send(&s, 1, 0, kSendCtx);
  }
  void ReadPeerInfo() {
    PeerInfo pi;
    memcpy(&pi, buf_ + kPeerInfoOff, sizeof pi);
    remote_addr_ = pi.m_remoteAddress;
    remote_token_ = pi.m_remoteToken;
  }

  // Handles one completion: our Write's, the peer's terminate message (server), a send's.
  void Handle(const ND2_RESULT& r) {
    if (r.Status != ND_SUCCESS) FailHr(__LINE__, r.Status, "a completion");
    if (r.RequestContext == kWriteCtx) {
      write_done_ = true;
    } else if (server_ && r.RequestContext == kRecvCtx) {
      term_received_ = true;  // may come before our last Write's completion
    } else {
      ND_FAIL("unexpected completion (context %p)", r.RequestContext);
    }
  }
  // Waits until the peer wrote `val` into byte `at` of our buffer, polling the CQ meanwhile.
  void WaitForByte(size_t at, char val) {
    const volatile char* p = buf_ + at;
    while (*p != val) {
      ND2_RESULT r;
      if (ep_.Poll(&r)) Handle(r);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
  }
  // Waits for our Write's completion (polling, or Notify + wait).
  void WaitForWrite() {
    while (!write_done_) {
      ND2_RESULT r;
      ep_.WaitForCompletion(&r);
      Handle(r);
    }
    write_done_ = false;
  }
  // Our S bytes (payload, then the marker) to the start of the peer's buffer.
  void WriteOut(ULONG size, char marker) {
    buf_[size - 1] = marker;
    const ULONG n = PrepareSge(sgl_.data(), max_sge_, buf_, size, ep_.LocalToken());
    ep_.Write(sgl_.data(), n, remote_addr_, remote_token_, size < inline_ ? ND_OP_FLAG_INLINE : 0, kWriteCtx);
  }

  const Options& o_;
  Endpoint ep_;
  const bool server_;
  char* buf_ = nullptr;
  ULONG depth_ = 0, max_sge_ = 0, inline_ = 0;
  std::vector<ND2_SGE> sgl_;
  UINT64 remote_addr_ = 0;
  UINT32 remote_token_ = 0;
  bool write_done_ = false, term_received_ = false;
  unsigned long long exchanges_ = 0, bytes_ = 0;
};

class RPingPongServer : public Side {
 public:
  explicit RPingPongServer(const Options& o) : Side(o, true) {}

  void Run() {
    Setup(o_.addr);
    // The client's PeerInfo, then its terminate message.
    PostInfoReceive();
    PostInfoReceive();
    ep_.Listen(o_.addr);
    AnnounceListening(o_.addr);
    ep_.GetConnectionRequest();
    ep_.Accept(0, 0);
    ep_.WaitForSuccess(kRecvCtx, "the client's PeerInfo");
    ReadPeerInfo();  // before our answer: nothing writes there after
    SendOurInfo();
    ep_.WaitForSuccess(kSendCtx, "the PeerInfo send");

    if (o_.warmup > 0) DoPongs(kHdrLen, o_.warmup, true);
    for (const uint32_t size : o_.Sizes()) DoPongs(size, o_.Iterations(size, kMaxIterations), false);
    while (!term_received_) {
      ND2_RESULT r;
      ep_.WaitForCompletion(&r);
      Handle(r);
    }
    ep_.Shutdown();
    ep_.Release();
    printf("%s: server answered %llu pings, %llu bytes%s\n", kInfo.name, exchanges_, bytes_,
           o_.verify ? ", every byte verified" : "");
    fflush(stdout);
  }

 private:
  void DoPongs(ULONG size, uint32_t iters, bool warmup) {
    const char client_val = warmup ? kClientWarmupVal : kClientTestVal;
    const char server_val = warmup ? kServerWarmupVal : kServerTestVal;
    for (uint32_t i = 0; i < iters; i++) {
      WaitForByte(size - 1, client_val);
      if (o_.verify) {
        CheckPattern("a ping", buf_, size - 1, o_.seed, size, 2 * i);
        FillPattern(buf_, size - 1, o_.seed, size, 2 * i + 1);
      }
      WriteOut(size, server_val);
      WaitForWrite();
      exchanges_++;
      bytes_ += size;
    }
  }
};

class RPingPongClient : public Side {
 public:
  explicit RPingPongClient(const Options& o) : Side(o, false) {}

  void Run() {
    const sockaddr_in local = ResolveLocal(o_.addr);
    Setup(local);
    PostInfoReceive();
    ep_.Connect(local, o_.addr, 0, 0);
    ep_.CompleteConnect();
    SendOurInfo();
    // Our send's completion and the server's PeerInfo, in either order.
    for (bool sent = false, got = false; !sent || !got;) {
      ND2_RESULT r;
      ep_.WaitForCompletion(&r);
      if (r.Status != ND_SUCCESS) FailHr(__LINE__, r.Status, "the PeerInfo exchange");
      if (r.RequestContext == kSendCtx) sent = true;
      else if (r.RequestContext == kRecvCtx) got = true;
      else ND_FAIL("unexpected completion event (context %p)", r.RequestContext);
    }
    ReadPeerInfo();

    PrintTableHeader();
    if (o_.warmup > 0) {
      DoPings(kHdrLen, o_.warmup, true);
      SleepMs(1000);
    }
    for (const uint32_t size : o_.Sizes()) {
      const uint32_t iterations = o_.Iterations(size, kMaxIterations);
      Timer timer;
      CpuMonitor cpu;
      cpu.Start();
      timer.Start();
      DoPings(size, iterations, false);
      timer.End();
      cpu.End();
      PrintTableRow(size, iterations, timer.Micros() / iterations, cpu.Report(),
                    static_cast<double>(size) * iterations / (timer.Micros() / 1e6));
    }

    // The terminate message: its send completes (or is flushed if the server closed first).
    ep_.Send(nullptr, 0, 0, kSendCtx);
    ND2_RESULT r;
    ep_.WaitForCompletion(&r);
    if (r.RequestContext != kSendCtx || (r.Status != ND_SUCCESS && r.Status != ND_CANCELED))
      FailHr(__LINE__, r.Status, "the terminate message");
    ep_.Shutdown();
    ep_.Release();
    printf("%s: client sent %llu pings, %llu bytes%s\n", kInfo.name, exchanges_, bytes_,
           o_.verify ? ", every pong verified" : "");
    fflush(stdout);
  }

 private:
  void DoPings(ULONG size, uint32_t iters, bool warmup) {
    const char client_val = warmup ? kClientWarmupVal : kClientTestVal;
    const char server_val = warmup ? kServerWarmupVal : kServerTestVal;
    for (uint32_t i = 0; i < iters; i++) {
      // Nothing is in flight: our previous Write completed, the server's pong is in.
      if (o_.verify) FillPattern(buf_, size - 1, o_.seed, size, 2 * i);
      WriteOut(size, client_val);
      WaitForByte(size - 1, server_val);
      WaitForWrite();
      if (o_.verify) CheckPattern("a pong", buf_, size - 1, o_.seed, size, 2 * i + 1);
      exchanges_++;
      bytes_ += size;
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = ParseArgs(kInfo, argc, argv);
  return RunProgram(o, [&] { RPingPongServer(o).Run(); }, [&] { RPingPongClient(o).Run(); });
}
