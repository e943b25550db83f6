// SPDX-License-Identifier: MIT
// nd-pingpong: Microsoft's ndpingpong (Send/Receive ping-pong test) on Linux, written here from
// its command line and protocol (README.md here), so either side can be the original.
//
//   nd-pingpong -s [-p|-b] [-n nSge] <ip>[:<port>]            (port 54325)
//   nd-pingpong -c [-p|-b] [-n nSge] <ip>[:<port>]
//
// Protocol. Both sides post `depth` receives of 4 MB before the exchange (the server before
// Accept). The client sends a ping and waits for its send completion and for the pong; the
// server waits for the ping, reposts, sends the pong from the buffer the ping landed in (so the
// pong echoes the ping) and waits for its send completion. Sizes: a warm-up of 1000 exchanges of
// 40 bytes, then 1 B doubling to 4 MB, each min(100000, 2000 MB / size) times; both sides run
// the same schedule (so give both the same --iters / --warmup / --min-size / --max-size). The
// client prints half the round trip as the latency. Then both disconnect.
//
// --verify: the client's ping number i of size S carries PatternByte(seed, S, i, offset); the
// server checks it; the client receives the pong in a buffer of its own, cleared before each
// ping, and checks that it echoes the ping.
#include "nd_common.h"

using namespace ndtool;

namespace {

constexpr ProgramInfo kInfo{"nd-pingpong", "NetworkDirect send/recv pingpong test (ndpingpong)", 54325,
                            false, true};
constexpr uint64_t kMaxIterations = 100000;
constexpr ULONG kBufLen = kMaxXfer + kHdrLen;

// What both sides share: the completion bookkeeping of one exchange.
class Side {
 public:
  explicit Side(const Options& o) : o_(o), ep_(o.blocking) {}
  virtual ~Side() { free(buf_); }

 protected:
  // Waits until *flag is set by a completion (request contexts point at the flags).
  void WaitFor(bool* flag, const char* what) {
    while (!*flag) {
      ND2_RESULT r;
      ep_.WaitForCompletion(&r);
      if (r.Status == ND_CANCELED) ND_FAIL("%s: the connection was closed (ND_CANCELED)", what);
      if (r.Status != ND_SUCCESS) FailHr(__LINE__, r.Status, what);
      if (r.RequestContext == &recv_done_) last_recv_bytes_ = r.BytesTransferred;
      if (r.RequestContext != &recv_done_ && r.RequestContext != &send_done_)
        ND_FAIL("%s: unexpected completion (context %p)", what, r.RequestContext);
      *static_cast<bool*>(r.RequestContext) = true;
    }
    *flag = false;
  }

  // The adapter, CQ, connector and QP; depth: as deep as the adapter allows (the server's
  // receive queue, the client's initiator queue), or -q.
  void Setup(const sockaddr_in& local, bool server) {
    ep_.Open(local);
    const ND2_ADAPTER_INFO& info = ep_.info();
    depth_ = min(info.MaxCompletionQueueDepth,
                 server ? info.MaxReceiveQueueDepth : info.MaxInitiatorQueueDepth);
    if (o_.pipeline) depth_ = min(depth_, o_.pipeline);  // -q: the queue depth
    inline_ = info.InlineRequestThreshold;
    ep_.CreateCqFor(depth_, depth_);
    ep_.CreateConnector();
    ep_.CreateQp(depth_, o_.nsge, inline_);
    send_sgl_.resize(o_.nsge);
    recv_sgl_.resize(o_.nsge);
  }
  void PostReceives(char* area) {
    recv_nsge_ = PrepareSge(recv_sgl_.data(), o_.nsge, area, kMaxXfer, ep_.LocalToken());
    for (ULONG i = 0; i < depth_; i++) ep_.PostReceive(recv_sgl_.data(), recv_nsge_, &recv_done_);
  }
  void Repost() { ep_.PostReceive(recv_sgl_.data(), recv_nsge_, &recv_done_); }

  const Options& o_;
  Endpoint ep_;
  char* buf_ = nullptr;
  ULONG depth_ = 0, inline_ = 0, recv_nsge_ = 0;
  std::vector<ND2_SGE> send_sgl_, recv_sgl_;
  bool send_done_ = false, recv_done_ = false;
  ULONG last_recv_bytes_ = 0;
};

class PingPongServer : public Side {
 public:
  using Side::Side;

  void Run() {
    buf_ = AllocBuffer(kBufLen);
    Setup(o_.addr, true);
    ep_.Register(buf_, kBufLen, ND_MR_FLAG_ALLOW_LOCAL_WRITE);
    ep_.Listen(o_.addr);
    AnnounceListening(o_.addr);
    ep_.GetConnectionRequest();
    PostReceives(buf_);
    ep_.Accept(0, 0);

    if (o_.warmup > 0) Pong(o_.warmup, kHdrLen);
    for (const uint32_t size : o_.Sizes()) Pong(o_.Iterations(size, kMaxIterations), size);
    ep_.Shutdown();
    ep_.Release();
    printf("%s: server answered %llu pings, %llu bytes%s\n", kInfo.name, pings_, bytes_,
           o_.verify ? ", every byte verified" : "");
    fflush(stdout);
  }

 private:
  void Pong(uint32_t iters, ULONG len) {
    const ULONG nsend = PrepareSge(send_sgl_.data(), o_.nsge, buf_, len, ep_.LocalToken());
    const ULONG flags = len < inline_ ? ND_OP_FLAG_INLINE : 0;
    for (uint32_t i = 0; i < iters; i++) {
      WaitFor(&recv_done_, "the ping");
      if (last_recv_bytes_ != len)
        ND_FAIL("ping %u of size %u arrived with %u bytes (are both sides' sizes the same?)", i, len,
                last_recv_bytes_);
      if (o_.verify) CheckPattern("a ping", buf_, len, o_.seed, len, i);
      pings_++;
      bytes_ += len;
      Repost();
      ep_.Send(send_sgl_.data(), nsend, flags, &send_done_);  // the pong: the ping's bytes
      WaitFor(&send_done_, "the pong's send");
    }
  }

  unsigned long long pings_ = 0, bytes_ = 0;
};

class PingPongClient : public Side {
 public:
  using Side::Side;

  void Run() {
    const sockaddr_in local = ResolveLocal(o_.addr);
    // Pings go from the first half; pongs land in the second.
    buf_ = AllocBuffer(2 * size_t{kBufLen});
    recv_area_ = buf_ + kBufLen;
    Setup(local, false);
    ep_.Register(buf_, 2 * size_t{kBufLen}, ND_MR_FLAG_ALLOW_LOCAL_WRITE);
    ep_.Connect(local, o_.addr, 0, 0);
    ep_.CompleteConnect();
    PostReceives(recv_area_);

    PrintTableHeader();
    if (o_.warmup > 0) {
      Ping(o_.warmup, kHdrLen);
      SleepMs(1000);
    }
    for (const uint32_t size : o_.Sizes()) {
      const uint32_t iterations = o_.Iterations(size, kMaxIterations);
      Timer timer;
      CpuMonitor cpu;
      cpu.Start();
      timer.Start();
      Ping(iterations, size);
      timer.End();
      cpu.End();
      // Ping and pong both count; the latency is half a round trip.
      PrintTableRow(size, iterations, timer.Micros() / iterations / 2.0, cpu.Report(),
                    2.0 * size * iterations / (timer.Micros() / 1e6));
    }
    ep_.Shutdown();
    ep_.Release();
    printf("%s: client sent %llu pings, %llu bytes%s\n", kInfo.name, pings_, bytes_,
           o_.verify ? ", every pong verified" : "");
    fflush(stdout);
  }

 private:
  void Ping(uint32_t iters, ULONG len) {
    const ULONG nsend = PrepareSge(send_sgl_.data(), o_.nsge, buf_, len, ep_.LocalToken());
    const ULONG flags = len < inline_ ? ND_OP_FLAG_INLINE : 0;
    for (uint32_t i = 0; i < iters; i++) {
      if (o_.verify) {
        // Nothing is in flight: the previous pong is in and its send complete.
        FillPattern(buf_, len, o_.seed, len, i);
        memset(recv_area_, 0, len);
      }
      ep_.Send(send_sgl_.data(), nsend, flags, &send_done_);
      WaitFor(&send_done_, "the ping's send");
      WaitFor(&recv_done_, "the pong");
      if (last_recv_bytes_ != len) ND_FAIL("pong %u of size %u arrived with %u bytes", i, len, last_recv_bytes_);
      if (o_.verify) CheckPattern("a pong", recv_area_, len, o_.seed, len, i);
      pings_++;
      bytes_ += len;
      Repost();
    }
  }

  char* recv_area_ = nullptr;
  unsigned long long pings_ = 0, bytes_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = ParseArgs(kInfo, argc, argv);
  return RunProgram(o, [&] { PingPongServer(o).Run(); }, [&] { PingPongClient(o).Run(); });
}
