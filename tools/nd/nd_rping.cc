// SPDX-License-Identifier: MIT
// nd-rping: Microsoft's ndrping (unidirectional RDMA ping test) on Linux, written here from its
// command line and protocol (README.md here), so either side can be the original.
//
//   nd-rping -s [-p|-b] [-r|-w] <ip>[:<port>]                     (port 54326)
//   nd-rping -c [-p|-b] [-r|-w] [-n nSge] [-q depth] <ip>[:<port>]
//
// Protocol. The server registers a 4 MB + 40 B buffer (remote write, or remote read with -r),
// posts one receive over it, accepts with its maximum inbound read limit, binds a memory window
// over the buffer and sends the 16-byte PeerInfo { UINT32 window token; DWORD inbound read
// limit; UINT64 buffer address } (little endian, the buffer's virtual address). The client
// (receive of 4 MB + 40 B posted before Connect) then RDMA-Writes (or Reads, -r) the start of
// that buffer, as many outstanding as its queue depth allows (reads: also the read limits):
// a warm-up of 1000 transfers of 40 bytes, then 1 B doubling to 4 MB, each
// min(500000, 2000 MB / size) times; then a 0-byte Send that ends the test, and both disconnect.
// The server takes no part in the transfers. -r / -w must be given to both sides alike.
//
// --verify (both sides): the server registers and binds its buffer for both Read and Write and
// fills it (after PeerInfo) with PatternByte(seed, 0, 0, offset). Read: after each size the
// client checks what it read (its buffer cleared before). Write: the client writes
// PatternByte(seed, S, 0, offset) and after each size reads the S bytes back into a cleared
// buffer of its own and checks them.
#include "nd_common.h"

using namespace ndtool;

namespace {

constexpr ProgramInfo kInfo{"nd-rping", "NetworkDirect unidirectional RDMA ping test (ndrping)", 54326,
                            true, true};
constexpr uint64_t kMaxIterations = 500000;
constexpr size_t kBufLen = kMaxXfer + kHdrLen;

struct PeerInfo {
  UINT32 m_remoteToken;
  DWORD m_nIncomingReadLimit;
  UINT64 m_remoteAddress;
};
static_assert(sizeof(PeerInfo) == 16 && offsetof(PeerInfo, m_remoteAddress) == 8, "ndrping's PeerInfo");

void* const kRecvCtx = reinterpret_cast<void*>(0x1000);
void* const kSendCtx = reinterpret_cast<void*>(0x2000);
void* const kReadCtx = reinterpret_cast<void*>(0x3000);
void* const kWriteCtx = reinterpret_cast<void*>(0x4000);
void* const kCheckCtx = reinterpret_cast<void*>(0x5000);

class RPingServer {
 public:
  explicit RPingServer(const Options& o) : o_(o), ep_(o.blocking) {}
  ~RPingServer() { free(buf_); }

  void Run() {
    ep_.Open(o_.addr);
    ep_.RequireInOrderDma();
    const ND2_ADAPTER_INFO& info = ep_.info();
    ep_.CreateCq(info.MaxCompletionQueueDepth);
    ep_.CreateConnector();
    ep_.CreateQp(min(info.MaxCompletionQueueDepth, info.MaxReceiveQueueDepth), 1, 0);

    buf_ = AllocBuffer(kBufLen);
    ULONG mr_flags = ND_MR_FLAG_ALLOW_LOCAL_WRITE |
                     (o_.op_read ? ND_MR_FLAG_ALLOW_REMOTE_READ : ND_MR_FLAG_ALLOW_REMOTE_WRITE);
    ULONG mw_flags = o_.op_read ? ND_OP_FLAG_ALLOW_READ : ND_OP_FLAG_ALLOW_WRITE;
    if (o_.verify) {
      mr_flags = ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ | ND_MR_FLAG_ALLOW_REMOTE_WRITE;
      mw_flags = ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE;
      // The pattern of the buffer's offsets, after where PeerInfo goes.
      for (size_t off = sizeof(PeerInfo); off < kBufLen; off++) buf_[off] = static_cast<char>(PatternByte(o_.seed, 0, 0, off));
    }
    ep_.Register(buf_, kBufLen, mr_flags);

    // The receive for the client's terminate message.
    ND2_SGE sge{buf_, static_cast<ULONG>(kBufLen), ep_.LocalToken()};
    ep_.PostReceive(&sge, 1, kRecvCtx);

    ep_.Listen(o_.addr);
    AnnounceListening(o_.addr);
    ep_.GetConnectionRequest();
    ep_.Accept(info.MaxInboundReadLimit, 0);

    ep_.BindWindow(buf_, kBufLen, mw_flags);
    PeerInfo pi{};
    pi.m_remoteToken = ep_.WindowToken();
    pi.m_nIncomingReadLimit = info.MaxInboundReadLimit;
    pi.m_remoteAddress = reinterpret_cast<UINT64>(buf_);
    memcpy(buf_, &pi, sizeof pi);
    // The original sends its whole buffer; the PeerInfo at its start is all the client reads.
    ND2_SGE info_sge{buf_, static_cast<ULONG>(sizeof pi), ep_.LocalToken()};
    ep_.Send(&info_sge, 1, 0, kSendCtx);
    ep_.WaitForSuccess(kSendCtx, "the PeerInfo send");

    // The client's terminate message.
    ep_.WaitForSuccess(kRecvCtx, "the terminate message");
    ep_.Shutdown();
    ep_.Release();
    printf("%s: server done (%s)\n", kInfo.name, o_.op_read ? "read" : "write");
    fflush(stdout);
  }

 private:
  const Options& o_;
  Endpoint ep_;
  char* buf_ = nullptr;
};

class RPingClient {
 public:
  explicit RPingClient(const Options& o) : o_(o), ep_(o.blocking) {}
  ~RPingClient() { free(buf_); }

  void Run() {
    const sockaddr_in local = ResolveLocal(o_.addr);
    ep_.Open(local);
    ep_.RequireInOrderDma();
    const ND2_ADAPTER_INFO& info = ep_.info();
    depth_ = min(info.MaxCompletionQueueDepth, info.MaxInitiatorQueueDepth);
    if (o_.pipeline) depth_ = min(depth_, o_.pipeline);  // -q: the queue depth
    max_sge_ = min(o_.nsge, info.MaxInitiatorSge);
    inline_ = info.InlineRequestThreshold;
    if (o_.op_read) {
      depth_ = min(depth_, info.MaxOutboundReadLimit);
      max_sge_ = min(o_.nsge, info.MaxReadSge);
    }

    // --verify: the second half receives the read-back of a write.
    const size_t len = o_.verify ? 2 * kBufLen : kBufLen;
    buf_ = AllocBuffer(len);
    check_area_ = buf_ + kBufLen;
    ULONG flags = ND_MR_FLAG_ALLOW_LOCAL_WRITE;
    if (o_.op_read || o_.verify) flags |= ND_MR_FLAG_RDMA_READ_SINK;
    ep_.Register(buf_, len, flags);
    ep_.CreateCq(depth_);
    ep_.CreateConnector();
    ep_.CreateQp(min(depth_, info.MaxReceiveQueueDepth), o_.nsge, inline_);

    ND2_SGE sge{buf_, static_cast<ULONG>(kBufLen), ep_.LocalToken()};
    ep_.PostReceive(&sge, 1, kRecvCtx);
    // Reads need an outbound limit; --verify reads each write back.
    ep_.Connect(local, o_.addr, 0, o_.op_read ? depth_ : (o_.verify ? 1 : 0));
    ep_.CompleteConnect();

    ep_.WaitForSuccess(kRecvCtx, "the server's PeerInfo");
    memcpy(&peer_, buf_, sizeof peer_);
    if (o_.op_read) depth_ = min(depth_, peer_.m_nIncomingReadLimit);
    if (depth_ == 0) ND_FAIL("the server allows no reads");

    PrintTableHeader();
    credits_ = depth_;
    sgl_.resize(max_sge_);
    if (o_.warmup > 0) {
      Timer timer;
      CpuMonitor cpu;
      DoSize(kHdrLen, o_.warmup, &timer, &cpu);
      SleepMs(1000);
    }
    for (const uint32_t size : o_.Sizes()) {
      const uint32_t iterations = o_.Iterations(size, kMaxIterations);
      Timer timer;
      CpuMonitor cpu;
      DoSize(size, iterations, &timer, &cpu);
      PrintTableRow(size, iterations, timer.Micros() / iterations, cpu.Report(),
                    static_cast<double>(size) * iterations / (timer.Micros() / 1e6));
    }

    // The terminate message.
    ep_.Send(nullptr, 0, 0, kSendCtx);
    ep_.WaitForSuccess(kSendCtx, "the terminate message");
    ep_.Shutdown();
    ep_.Release();
    printf("%s: client %s %llu times, %llu bytes%s\n", kInfo.name, o_.op_read ? "read" : "wrote", ops_, bytes_,
           o_.verify ? ", every size verified" : "");
    fflush(stdout);
  }

 private:
  // One size: the transfers (timed), with --verify the data prepared before and checked after.
  void DoSize(ULONG size, uint32_t iterations, Timer* timer, CpuMonitor* cpu) {
    if (o_.verify) {
      if (o_.op_read) memset(buf_, 0, size);
      else FillPattern(buf_, size, o_.seed, size, 0);
    }
    const ULONG n = PrepareSge(sgl_.data(), max_sge_, buf_, size, ep_.LocalToken());
    cpu->Start();
    timer->Start();
    DoPings(size, iterations, n);
    timer->End();
    cpu->End();
    if (!o_.verify) return;
    if (o_.op_read) {
      // What was read: PeerInfo, then the server's pattern.
      const size_t head = std::min<size_t>(size, sizeof peer_);
      if (memcmp(buf_, &peer_, head) != 0) ND_FAIL("data mismatch in a read of size %u: the PeerInfo bytes", size);
      for (size_t off = head; off < size; off++) {
        const uint8_t want = PatternByte(o_.seed, 0, 0, off);
        if (static_cast<uint8_t>(buf_[off]) != want)
          ND_FAIL("data mismatch in a read of size %u: byte %zu is 0x%02x, expected 0x%02x", size, off,
                  static_cast<uint8_t>(buf_[off]), want);
      }
    } else {
      // Read the written bytes back into a cleared area.
      memset(check_area_, 0, size);
      ND2_SGE s{check_area_, size, ep_.LocalToken()};
      ep_.Read(&s, 1, peer_.m_remoteAddress, peer_.m_remoteToken, 0, kCheckCtx);
      ep_.WaitForSuccess(kCheckCtx, "the read-back of a write");
      CheckPattern("the read-back of a write", check_area_, size, o_.seed, size, 0);
    }
  }

  ULONG Issue(uint32_t* iters, ULONG nsge, ULONG flags) {
    ULONG issued = 0;
    while (credits_ > 0 && *iters > 0) {
      if (o_.op_read)
        ep_.Read(sgl_.data(), nsge, peer_.m_remoteAddress, peer_.m_remoteToken, flags, kReadCtx);
      else
        ep_.Write(sgl_.data(), nsge, peer_.m_remoteAddress, peer_.m_remoteToken, flags, kWriteCtx);
      credits_--;
      (*iters)--;
      issued++;
    }
    return issued;
  }

  void DoPings(ULONG size, uint32_t iters, ULONG nsge) {
    const ULONG flags = (!o_.op_read && size < inline_) ? ND_OP_FLAG_INLINE : 0;
    uint64_t issued = Issue(&iters, nsge, flags), completed = 0;
    while (issued != completed || iters != 0) {
      ND2_RESULT r;
      ep_.WaitForCompletion(&r);
      if (r.Status != ND_SUCCESS) FailHr(__LINE__, r.Status, o_.op_read ? "an RDMA Read" : "an RDMA Write");
      if (r.RequestContext != (o_.op_read ? kReadCtx : kWriteCtx)) ND_FAIL("Invalid completion context");
      completed++;
      credits_++;
      ops_++;
      bytes_ += size;
      issued += Issue(&iters, nsge, flags);
    }
  }

  const Options& o_;
  Endpoint ep_;
  char* buf_ = nullptr;
  char* check_area_ = nullptr;
  ULONG depth_ = 0, max_sge_ = 0, inline_ = 0, credits_ = 0;
  PeerInfo peer_{};
  std::vector<ND2_SGE> sgl_;
  unsigned long long ops_ = 0, bytes_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = ParseArgs(kInfo, argc, argv);
  return RunProgram(o, [&] { RPingServer(o).Run(); }, [&] { RPingClient(o).Run(); });
}
