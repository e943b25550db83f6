// SPDX-License-Identifier: MIT
// nd-ping: Microsoft's ndping (unidirectional Send/Receive ping test) on Linux, written here
// from its command line and protocol (README.md here), so either side can be the original.
//
//   nd-ping -s [-p|-b] [-n nSge] <ip>[:<port>]            (port 54324)
//   nd-ping -c [-p|-b] [-n nSge] [-q pipeline] <ip>[:<port>]
//
// Protocol. The server posts `depth` receives, accepts with 4 bytes of private data: the number
// of sends the client may have outstanding (depth - 1, one receive kept for the sync). The
// client sends pings of the current size, up to that many credits and -q (128) outstanding;
// the server answers every depth/2 receives with a 1-byte Send that gives depth'/2 more credits
// (depth' = the advertised number). After the last ping of a size the client sends a 0-byte
// sync, which the server answers with a 0-byte Send; then the next size. Sizes: a warm-up of
// 1000 pings of 40 bytes, then 1 B doubling to 4 MB, each min(500000, 2000 MB / size) times.
// The client disconnects at the end; the server stops at the first flushed (ND_CANCELED)
// receive.
//
// --verify: the client's pings of size S carry PatternByte(seed, S, 0, offset); the server
// checks every ping it receives and counts them (its last line).
#include "nd_common.h"

using namespace ndtool;

namespace {

constexpr ProgramInfo kInfo{"nd-ping", "NetworkDirect unidirectional send/recv ping test (ndping)", 54324,
                            false, true};
constexpr uint64_t kMaxIterations = 500000;
constexpr ULONG kBufLen = kMaxXfer + kHdrLen;

class PingServer {
 public:
  explicit PingServer(const Options& o) : o_(o), ep_(o.blocking) {}
  ~PingServer() { free(buf_); }

  void Run() {
    buf_ = AllocBuffer(kBufLen);
    ep_.Open(o_.addr);
    ep_.Register(buf_, kBufLen, ND_MR_FLAG_ALLOW_LOCAL_WRITE);
    const ND2_ADAPTER_INFO& info = ep_.info();
    depth_ = min(info.MaxCompletionQueueDepth, info.MaxReceiveQueueDepth);
    if (depth_ < 2) ND_FAIL("the adapter's queues are too shallow (%u)", depth_);
    inline_ = info.InlineRequestThreshold;
    ep_.CreateCqFor(depth_, depth_);
    ep_.CreateConnector();
    ep_.CreateQp(depth_, o_.nsge, inline_);
    ep_.Listen(o_.addr);
    AnnounceListening(o_.addr);
    ep_.GetConnectionRequest();

    sgl_.resize(o_.nsge);
    nsge_ = PrepareSge(sgl_.data(), o_.nsge, buf_, kMaxXfer, ep_.LocalToken());
    for (ULONG i = 0; i < depth_; i++) ep_.PostReceive(sgl_.data(), nsge_, nullptr);
    // One receive fewer than posted: the client's sync needs one.
    const ULONG advertised = depth_ - 1;
    ep_.Accept(0, 0, &advertised, sizeof advertised);
    ReceivePings();
    ep_.Shutdown();
    ep_.Release();
    printf("%s: server received %llu pings, %llu bytes, %llu syncs%s\n", kInfo.name, pings_, bytes_, syncs_,
           o_.verify ? ", every byte verified" : "");
    fflush(stdout);
  }

 private:
  void ReceivePings() {
    ND2_SGE credit{buf_, 1, ep_.LocalToken()};
    ULONG threshold = depth_ / 2;
    for (;;) {
      ND2_RESULT r;
      ep_.WaitForCompletion(&r);
      if (r.Status == ND_CANCELED) return;  // the client disconnected: done
      if (r.Status != ND_SUCCESS) FailHr(__LINE__, r.Status, "a ping (IND2CompletionQueue::GetResults)");
      if (r.RequestType == Nd2RequestTypeSend) continue;
      if (r.RequestType != Nd2RequestTypeReceive) ND_FAIL("unexpected completion type %d", r.RequestType);
      if (r.BytesTransferred == 0) {  // sync: answer it
        syncs_++;
        ep_.Send(nullptr, 0, 0, nullptr);
      } else {
        pings_++;
        bytes_ += r.BytesTransferred;
        if (o_.verify) CheckPattern("a ping", buf_, r.BytesTransferred, o_.seed, r.BytesTransferred, 0);
      }
      ep_.PostReceive(sgl_.data(), nsge_, nullptr);
      if (--threshold == 0) {
        ep_.Send(&credit, 1, credit.BufferLength < inline_ ? ND_OP_FLAG_INLINE : 0, nullptr);
        threshold = depth_ / 2;
      }
    }
  }

  const Options& o_;
  Endpoint ep_;
  char* buf_ = nullptr;
  ULONG depth_ = 0, inline_ = 0, nsge_ = 0;
  std::vector<ND2_SGE> sgl_;
  unsigned long long pings_ = 0, bytes_ = 0, syncs_ = 0;
};

class PingClient {
 public:
  explicit PingClient(const Options& o) : o_(o), ep_(o.blocking) {}
  ~PingClient() { free(buf_); }

  void Run() {
    const sockaddr_in local = ResolveLocal(o_.addr);
    // Pings go from the first half, receives (credits, sync answers) land in the second.
    buf_ = AllocBuffer(2 * size_t{kBufLen});
    recv_area_ = buf_ + kBufLen;
    ep_.Open(local);
    ep_.Register(buf_, 2 * size_t{kBufLen}, ND_MR_FLAG_ALLOW_LOCAL_WRITE);
    const ND2_ADAPTER_INFO& info = ep_.info();
    depth_ = min(info.MaxCompletionQueueDepth, info.MaxInitiatorQueueDepth);
    inline_ = info.InlineRequestThreshold;
    ep_.CreateCqFor(depth_, depth_);
    ep_.CreateConnector();
    ep_.CreateQp(depth_, o_.nsge, inline_);
    ep_.Connect(local, o_.addr, 0, 0);

    // The server's credits: 4 bytes of private data (ask for the size first, as the original).
    ULONG len = 0;
    HRESULT hr = ep_.connector()->GetPrivateData(nullptr, &len);
    if (hr != ND_BUFFER_OVERFLOW) FailHr(__LINE__, hr, "IND2Connector::GetPrivateData (size)");
    if (len < sizeof(ULONG)) ND_FAIL("the server's private data has %u bytes, not a queue depth", len);
    std::vector<char> pd(len);
    ND_CHECK(ep_.connector()->GetPrivateData(pd.data(), &len), "IND2Connector::GetPrivateData");
    ULONG peer_depth = 0;
    memcpy(&peer_depth, pd.data(), sizeof peer_depth);
    if (peer_depth == 0) ND_FAIL("the server offers no credits");
    peer_depth_ = peer_depth;
    credits_ = peer_depth;
    ep_.CompleteConnect();

    send_sgl_.resize(o_.nsge);
    recv_sgl_.resize(o_.nsge);
    recv_nsge_ = PrepareSge(recv_sgl_.data(), o_.nsge, recv_area_, kMaxXfer, ep_.LocalToken());
    PrintTableHeader();
    max_out_ = o_.pipeline ? o_.pipeline : 128;

    if (o_.warmup > 0) {
      if (o_.verify) FillPattern(buf_, kHdrLen, o_.seed, kHdrLen, 0);
      const ULONG n = PrepareSge(send_sgl_.data(), o_.nsge, buf_, kHdrLen, ep_.LocalToken());
      SendPings(o_.warmup, n, kHdrLen);
      SleepMs(1000);
    }
    for (const uint32_t size : o_.Sizes()) {
      const uint32_t iterations = o_.Iterations(size, kMaxIterations);
      if (o_.verify) FillPattern(buf_, size, o_.seed, size, 0);
      const ULONG n = PrepareSge(send_sgl_.data(), o_.nsge, buf_, size, ep_.LocalToken());
      Timer timer;
      CpuMonitor cpu;
      cpu.Start();
      timer.Start();
      SendPings(iterations, n, size);
      timer.End();
      cpu.End();
      PrintTableRow(size, iterations, timer.Micros() / iterations, cpu.Report(),
                    static_cast<double>(size) * iterations / (timer.Micros() / 1e6));
    }
    ep_.Shutdown();
    ep_.Release();
    printf("%s: client sent %llu pings, %llu bytes\n", kInfo.name, pings_, bytes_);
    fflush(stdout);
  }

 private:
  // `iters` pings of `size` bytes, then the sync and its answer.
  void SendPings(uint64_t iters, ULONG nsge, ULONG size) {
    bool sync_sent = false, sync_acked = false;
    // One receive for the sync's answer, one for a credit message.
    ep_.PostReceive(recv_sgl_.data(), recv_nsge_, nullptr);
    ep_.PostReceive(recv_sgl_.data(), recv_nsge_, nullptr);
    const uint64_t max_out = std::min<uint64_t>({max_out_, iters, depth_});
    const ULONG flags = size < inline_ ? ND_OP_FLAG_INLINE : 0;
    while (!sync_acked) {
      while (credits_ > 0 && iters > 0 && outstanding_ < max_out) {
        ep_.Send(send_sgl_.data(), nsge, flags, nullptr);
        credits_--;
        iters--;
        outstanding_++;
        pings_++;
        bytes_ += size;
      }
      if (ep_.blocking()) ep_.WaitForNotify();
      ND2_RESULT r;
      while (ep_.Poll(&r)) {
        if (r.Status == ND_CANCELED) ND_FAIL("Connection unexpectedly aborted.");
        if (r.Status != ND_SUCCESS) FailHr(__LINE__, r.Status, "a ping (IND2CompletionQueue::GetResults)");
        if (r.RequestType == Nd2RequestTypeReceive) {
          if (r.BytesTransferred == 0) {
            sync_acked = true;
          } else {  // credit update
            credits_ += peer_depth_ / 2;
            ep_.PostReceive(recv_sgl_.data(), recv_nsge_, nullptr);
          }
        } else {
          outstanding_--;
          if (iters == 0 && !sync_sent) {
            // The server kept one receive for it: it may take the credit count below zero.
            ep_.Send(nullptr, 0, 0, nullptr);
            outstanding_++;
            credits_--;
            sync_sent = true;
          }
        }
      }
    }
  }

  const Options& o_;
  Endpoint ep_;
  char* buf_ = nullptr;
  char* recv_area_ = nullptr;
  ULONG depth_ = 0, inline_ = 0, recv_nsge_ = 0;
  int64_t peer_depth_ = 0, credits_ = 0;
  uint64_t outstanding_ = 0, max_out_ = 128;
  std::vector<ND2_SGE> send_sgl_, recv_sgl_;
  unsigned long long pings_ = 0, bytes_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = ParseArgs(kInfo, argc, argv);
  return RunProgram(o, [&] { PingServer(o).Run(); }, [&] { PingClient(o).Run(); });
}
