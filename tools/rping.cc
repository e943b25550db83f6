// rping on this stack: librdmacm's rping (RDMA CM connection and RDMA
// ping-pong test) with its options and its protocol, over our connection
// manager (CM MADs on QP 1, rdma_cm addressing), so either side can be the
// kernel's rping (rdmacm-utils) on any RoCE host.
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
// Port options (as rc-pingpong): --profile --iface --ip --set --capture.
// Exit status 0 on success.
#include <getopt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <absl/strings/str_cat.h>
#include <absl/strings/str_format.h>

#include "stack/engine/engine.h"
#include "stack/wire/bytes.h"
#include "tools/lib/stack_host.h"

using namespace roce;

namespace {

constexpr uint32_t kInfoLen = 16;
constexpr uint32_t kMinSize = 23;  // as rping (the ping text is cut to fit)
constexpr uint64_t kWaitNs = 30'000'000'000ull;  // per step

struct Options {
  bool server = false, client = false;
  std::string addr, source;
  uint16_t port = 7174;
  uint32_t size = 100;
  uint64_t count = 0;  // 0: until killed (client) / the client leaves (server)
  bool verbose = false, validate = false, debug = false, persistent = false;
  uint64_t cycles = 1;       // --cycles N: the client connects, pings -C, disconnects, N times
  uint32_t drop_dreqs = 0;   // --cm-drop-rx-dreqs N: fault injection
  uint32_t drop_tx_dreqs = 0;  // --cm-drop-tx-dreqs N: fault injection (forces crossed DREQs)
  int expect_reject = -1;    // --expect-reject R: succeed only if the peer rejects with reason R
  tools::HostOptions host;
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
               "\t-q\t\tuse self-created, self-modified QP (always the case here)\n"
               "\t--cycles N\tclient: connect, ping -C times, disconnect; N times in one process,\n"
               "\t\t\tthen check that nothing leaked (QPs, connections, mbufs, memory)\n"
               "\t--cm-drop-rx-dreqs N\tignore the first N DREQs received (as if lost)\n"
               "\t--cm-drop-tx-dreqs N\tlose the first N DREQs we send (retransmitted later):\n"
               "\t\t\twith a server's -C, the peer's DREQ crosses ours\n"
               "\t--expect-reject R\tclient: succeed only if the peer rejects with REJ reason R\n"
               "\tA server given -C disconnects after that many pings.\n%s",
               argv0, argv0, tools::kHostOptionsUsage);
}

#define DEBUG_LOG(...)                       \
  do {                                       \
    if (opt.debug) std::printf(__VA_ARGS__); \
  } while (0)

// One connection's resources: QP, CQs, the four buffers rping registers.
class Session {
 public:
  Session(engine::Engine& eng, const Options& opt) : eng_(eng), opt_(opt) {}
  ~Session() { Destroy(); }

  bool Setup() {
    scq_ = std::make_unique<rc::CompletionQueue>(64);
    rcq_ = std::make_unique<rc::CompletionQueue>(64);
    start_.assign(opt_.size, 0);
    rdma_.assign(opt_.size, 0);
    absl::MutexLock l(&eng_.mu());
    rc::QpCaps caps;
    caps.sq_depth = 16;
    caps.rq_depth = 2;
    caps.max_send_sge = 1;
    caps.max_recv_sge = 1;
    qp_ = eng_.CreateQp(caps, scq_.get(), rcq_.get());
    if (!qp_) return false;
    mem::MemoryTable& m = eng_.rc().memory();
    return m.RegisterRegion(Addr(recv_.data()), kInfoLen, mem::kLocalWrite, &recv_mr_) == mem::Result::kOk &&
           m.RegisterRegion(Addr(send_.data()), kInfoLen, 0, &send_mr_) == mem::Result::kOk &&
           m.RegisterRegion(Addr(start_.data()), opt_.size, mem::kLocalWrite | mem::kRemoteRead, &start_mr_) ==
               mem::Result::kOk &&
           m.RegisterRegion(Addr(rdma_.data()), opt_.size,
                            mem::kLocalWrite | mem::kRemoteRead | mem::kRemoteWrite, &rdma_mr_) ==
               mem::Result::kOk;
  }
  void Destroy() {
    if (!qp_) return;
    absl::MutexLock l(&eng_.mu());
    mem::MemoryTable& m = eng_.rc().memory();
    for (auto* r : {&recv_mr_, &send_mr_, &start_mr_, &rdma_mr_})
      if (r->handle) m.DeregisterRegion(r->handle);
    eng_.DestroyQp(qp_);
    qp_ = nullptr;
  }
  rc::QueuePair* qp() { return qp_; }

  // Hold mu().
  bool PostRecv() {
    rc::Sge s{Addr(recv_.data()), kInfoLen, recv_mr_.local_token};
    rc::RecvWr w;
    w.context = 1;
    w.sge = &s;
    w.num_sge = 1;
    return qp_->PostRecv(w) == rc::PostResult::kOk;
  }
  // Sends {addr, rkey, size} of `buf`.
  bool SendInfo(bool rdma_buf) {
    const uint64_t a = rdma_buf ? Addr(rdma_.data()) : Addr(start_.data());
    wire::Store64(&send_[0], a);
    wire::Store32(&send_[8], rdma_buf ? rdma_mr_.remote_token : start_mr_.remote_token);
    wire::Store32(&send_[12], opt_.size);
    rc::Sge s{Addr(send_.data()), kInfoLen, send_mr_.local_token};
    rc::SendWr w;
    w.context = 10;
    w.sge = &s;
    w.num_sge = 1;
    absl::MutexLock l(&eng_.mu());
    return qp_->PostSend(w) == rc::PostResult::kOk;
  }
  bool Rdma(rc::WrOp op, uint32_t len) {
    rc::Sge s{Addr(rdma_.data()), len, rdma_mr_.local_token};
    rc::SendWr w;
    w.context = op == rc::WrOp::kRead ? 11 : 12;
    w.op = op;
    w.sge = &s;
    w.num_sge = 1;
    w.remote_addr = remote_addr_;
    w.rkey = remote_rkey_;
    absl::MutexLock l(&eng_.mu());
    return qp_->PostSend(w) == rc::PostResult::kOk;
  }
  // Waits for one completion on the send (or receive) CQ; false on an error
  // status, a disconnect or a timeout. A receive re-posts itself and records
  // the info it carried.
  bool Wait(bool recv, const std::function<bool()>& gone) {
    rc::CompletionQueue& cq = recv ? *rcq_ : *scq_;
    rc::Completion c;
    bool got = false, failed = false;
    eng_.WaitUntil(
        [&] {
          if (cq.Poll(&c, 1) == 1) {
            got = true;
            return true;
          }
          failed = gone();
          return failed;
        },
        kWaitNs);
    if (!got) {
      if (!failed) std::fprintf(stderr, "rping: timed out waiting for a %s completion\n", recv ? "receive" : "send");
      return false;
    }
    if (c.status != rc::Status::kSuccess) {
      if (c.status != rc::Status::kCanceled)
        std::fprintf(stderr, "cq completion failed status %s (%s)\n", rc::StatusName(c.status), rc::CauseName(c.cause));
      return false;
    }
    if (recv) {
      if (c.bytes != kInfoLen) {
        std::fprintf(stderr, "Received bogus data, size %u\n", c.bytes);
        return false;
      }
      remote_addr_ = wire::Load64(&recv_[0]);
      remote_rkey_ = wire::Load32(&recv_[8]);
      remote_len_ = wire::Load32(&recv_[12]);
      absl::MutexLock l(&eng_.mu());
      if (!PostRecv()) return false;
    }
    return true;
  }
  uint32_t remote_len() const { return remote_len_; }
  char* start() { return reinterpret_cast<char*>(start_.data()); }
  char* rdma() { return reinterpret_cast<char*>(rdma_.data()); }

 private:
  static uint64_t Addr(const void* p) { return reinterpret_cast<uint64_t>(p); }
  engine::Engine& eng_;
  const Options& opt_;
  std::unique_ptr<rc::CompletionQueue> scq_, rcq_;
  rc::QueuePair* qp_ = nullptr;
  std::array<uint8_t, kInfoLen> recv_{}, send_{};
  std::vector<uint8_t> start_, rdma_;
  mem::RegionInfo recv_mr_{}, send_mr_{}, start_mr_{}, rdma_mr_{};
  uint64_t remote_addr_ = 0;
  uint32_t remote_rkey_ = 0, remote_len_ = 0;
};

// The largest IB MTU a frame of the port carries (as rxe: netdev MTU - 80).
uint32_t PathMtu(engine::Engine& eng) {
  const uint32_t room = eng.port().mtu() > 80 ? eng.port().mtu() - 80u : 0;
  uint32_t mtu = 256;
  while (mtu * 2 <= room && mtu < 4096) mtu *= 2;
  return mtu;
}

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

int RunClient(const Options& opt, engine::Engine& eng, const wire::IpAddr& local, const wire::IpAddr& peer) {
  Session s(eng, opt);
  if (!s.Setup()) {
    std::fprintf(stderr, "rping: could not create the QP or register buffers\n");
    return 1;
  }
  auto mac = eng.Resolve(peer, 5'000'000'000ull);
  if (!mac.ok()) {
    std::fprintf(stderr, "rdma_resolve_addr: %s\n", std::string(mac.status().message()).c_str());
    return 1;
  }
  DEBUG_LOG("route resolved\n");
  cm::ConnId id = cm::kNoConn;
  {
    absl::MutexLock l(&eng.mu());
    cm::ConnectParams cp;
    cp.qpn = s.qp()->qpn();
    cp.local_ip = local;
    cp.peer_ip = peer;
    cp.peer_port = opt.port;
    cp.peer_mac = *mac;
    cp.responder_resources = 1;
    cp.initiator_depth = 1;
    cp.path_mtu = PathMtu(eng);
    auto c = eng.cm().Connect(cp, eng.NowNs());
    if (!c.ok()) {
      std::fprintf(stderr, "rdma_connect: %s\n", std::string(c.status().message()).c_str());
      return 1;
    }
    id = *c;
    s.PostRecv();  // before any message can arrive
  }
  const cm::ConnInfo* info = nullptr;
  eng.WaitUntil(
      [&] {
        info = eng.cm().Info(id);
        return info->state != cm::ConnState::kReqSent && info->state != cm::ConnState::kMraReceived;
      },
      120'000'000'000ull);
  {
    absl::MutexLock l(&eng.mu());
    info = eng.cm().Info(id);
    if (info->state != cm::ConnState::kEstablished) {
      if (info->timed_out)
        std::fprintf(stderr, "rping: connect to %s:%u timed out\n", peer.ToString().c_str(), opt.port);
      else {
        std::string pd;
        for (uint8_t b : info->private_data) {
          if (!b) break;
          pd += (b >= 32 && b < 127) ? static_cast<char>(b) : '.';
        }
        std::printf("rping: connection to %s:%u rejected: REJ reason %u, private data \"%s\"\n",
                    peer.ToString().c_str(), opt.port, info->reject_reason, pd.c_str());
      }
      const bool expected = !info->timed_out && opt.expect_reject == info->reject_reason;
      eng.cm().Release(id, eng.NowNs());
      return expected ? 0 : 1;
    }
    DEBUG_LOG("rdma_connect successful (local %s:%u, QPN 0x%x; peer QPN 0x%x)\n", local.ToString().c_str(),
              info->local_port, info->qpn, info->peer_qpn);
    if (opt.expect_reject >= 0) {
      std::fprintf(stderr, "rping: connected, but a reject (reason %d) was expected\n", opt.expect_reject);
      eng.cm().Disconnect(id, eng.NowNs()).IgnoreError();
      return 1;
    }
  }
  auto gone = [&] {
    const cm::ConnInfo* i = eng.cm().Info(id);
    return i->state != cm::ConnState::kEstablished;
  };
  int rc = 0;
  int start = 65;
  for (uint64_t ping = 0; !opt.count || ping < opt.count; ping++) {
    FillStart(s.start(), opt.size, ping, &start);
    if (!s.SendInfo(false) || !s.Wait(false, gone)) { rc = 1; break; }
    if (!s.Wait(true, gone)) { rc = 1; break; }  // "go ahead" after its Read
    if (!s.SendInfo(true) || !s.Wait(false, gone)) { rc = 1; break; }
    if (!s.Wait(true, gone)) { rc = 1; break; }  // after its Write
    if (opt.validate && std::memcmp(s.start(), s.rdma(), opt.size) != 0) {
      std::fprintf(stderr, "data mismatch!\n");
      rc = 1;
      break;
    }
    if (opt.verbose) std::printf("ping data: %s\n", s.rdma());
  }
  if (rc) std::fprintf(stderr, "rping: the test failed\n");
  DEBUG_LOG("rping client: disconnecting\n");
  {
    absl::MutexLock l(&eng.mu());
    eng.cm().Disconnect(id, eng.NowNs()).IgnoreError();
  }
  eng.WaitUntil(
      [&] {
        const cm::ConnInfo* i = eng.cm().Info(id);
        return i->state == cm::ConnState::kTimeWait || i->state == cm::ConnState::kClosed;
      },
      20'000'000'000ull);
  {
    absl::MutexLock l(&eng.mu());
    eng.cm().Release(id, eng.NowNs());
  }
  return rc;
}

struct ResourceUse {
  size_t qps = 0, conns = 0, ports = 0, mbufs = 0, regions = 0, rss_kb = 0;
};
size_t RssKb() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long size = 0, rss = 0;
  if (f) {
    if (std::fscanf(f, "%lu %lu", &size, &rss) != 2) rss = 0;
    std::fclose(f);
  }
  return rss * 4;
}
ResourceUse Measure(engine::Engine& eng) {
  ResourceUse u;
  {
    absl::MutexLock l(&eng.mu());
    u.qps = eng.rc().QpsInUse();
    u.conns = eng.cm().Connections();
    u.ports = eng.cm().BoundPorts();
    u.regions = eng.rc().memory().live_regions();
  }
  u.mbufs = eng.port().Stats().pool_in_use;
  u.rss_kb = RssKb();
  return u;
}

// --cycles: connect, ping, disconnect, N times; afterwards (time-wait over)
// nothing the connections used may still be held, and the time per cycle
// must not grow (no stall).
int RunCycles(const Options& opt, engine::Engine& eng, const wire::IpAddr& local, const wire::IpAddr& peer) {
  if (opt.cycles == 1) return RunClient(opt, eng, local, peer);
  const ResourceUse before = Measure(eng);
  const auto t0 = std::chrono::steady_clock::now();
  double first_half = 0, worst = 0;
  for (uint64_t i = 0; i < opt.cycles; i++) {
    const auto c0 = std::chrono::steady_clock::now();
    if (RunClient(opt, eng, local, peer) != 0) {
      std::fprintf(stderr, "rping: cycle %llu failed\n", static_cast<unsigned long long>(i));
      return 1;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    worst = std::max(worst, s);
    if (i < opt.cycles / 2) first_half += s;
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Past time-wait (the CM's) and the QPN quarantine, the engine must hold
  // what it held before the first connection.
  eng.WaitUntil([&] { return eng.cm().Connections() == 0; }, 10'000'000'000ull);
  tools::PollFor(eng, std::chrono::milliseconds(200));
  const ResourceUse after = Measure(eng);
  const double second_half = total - first_half;
  std::printf("rping: %llu cycles in %.1f s (%.1f ms each, worst %.1f ms; first half %.1f s, second %.1f s)\n",
              static_cast<unsigned long long>(opt.cycles), total, 1000 * total / opt.cycles, 1000 * worst,
              first_half, second_half);
  std::printf("rping: before/after: QPs %zu/%zu, connections %zu/%zu, bound ports %zu/%zu, mbufs %zu/%zu, "
              "memory regions %zu/%zu, RSS %zu/%zu KiB\n",
              before.qps, after.qps, before.conns, after.conns, before.ports, after.ports, before.mbufs, after.mbufs,
              before.regions, after.regions, before.rss_kb, after.rss_kb);
  bool ok = after.qps == before.qps && after.conns == before.conns && after.ports == before.ports &&
            after.regions == before.regions && after.mbufs <= before.mbufs + 64 &&
            after.rss_kb <= before.rss_kb + 16 * 1024;
  // No stall: the second half no slower than twice the first.
  if (second_half > 2 * first_half + 1.0) {
    std::fprintf(stderr, "rping: cycles slowed down (first half %.1f s, second half %.1f s)\n", first_half, second_half);
    ok = false;
  }
  if (!ok) std::fprintf(stderr, "rping: resources leaked over the cycles\n");
  return ok ? 0 : 1;
}

int ServeOne(const Options& opt, engine::Engine& eng, cm::ListenerId lid) {
  cm::ConnRequest req;
  eng.WaitUntil([&] { return eng.cm().GetRequest(lid, &req); }, UINT64_MAX / 4);
  DEBUG_LOG("connect request from %s:%u\n", req.peer_ip.ToString().c_str(), req.peer_port);
  Session s(eng, opt);
  if (!s.Setup()) {
    std::fprintf(stderr, "rping: could not create the QP or register buffers\n");
    absl::MutexLock l(&eng.mu());
    eng.cm().Reject(req.id, {}, eng.NowNs()).IgnoreError();
    return 1;
  }
  {
    absl::MutexLock l(&eng.mu());
    cm::AcceptParams ap;
    ap.qpn = s.qp()->qpn();
    ap.responder_resources = 1;
    ap.initiator_depth = 1;
    auto st = eng.cm().Accept(req.id, ap, eng.NowNs());
    if (!st.ok()) {
      std::fprintf(stderr, "rdma_accept: %s\n", std::string(st.message()).c_str());
      return 1;
    }
    s.PostRecv();
  }
  const cm::ConnId id = req.id;
  auto gone = [&] {
    const cm::ConnInfo* i = eng.cm().Info(id);
    return i->state != cm::ConnState::kEstablished && i->state != cm::ConnState::kRepSent;
  };
  int rc = 0;
  bool disconnected = false;
  for (uint64_t ping = 0;; ping++) {
    if (!s.Wait(true, gone)) { disconnected = true; break; }  // the client's start buffer
    if (s.remote_len() > opt.size) {
      std::fprintf(stderr, "rping: the client's buffer (%u) is larger than ours (%u)\n", s.remote_len(), opt.size);
      rc = 1;
      break;
    }
    if (!s.Rdma(rc::WrOp::kRead, s.remote_len()) || !s.Wait(false, gone)) { rc = 1; break; }
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
    if (!s.SendInfo(true) || !s.Wait(false, gone)) { rc = 1; break; }    // go ahead
    if (!s.Wait(true, gone)) { rc = 1; break; }                           // the client's rdma buffer
    const uint32_t len = static_cast<uint32_t>(strnlen(s.rdma(), opt.size - 1)) + 1;
    if (!s.Rdma(rc::WrOp::kWrite, len) || !s.Wait(false, gone)) { rc = 1; break; }
    if (!s.SendInfo(true) || !s.Wait(false, gone)) { rc = 1; break; }    // ACK
    if (opt.count && ping + 1 >= opt.count) break;  // ours: disconnect after -C pings
  }
  {
    absl::MutexLock l(&eng.mu());
    const cm::ConnInfo* i = eng.cm().Info(id);
    if (i->peer_disconnected) {
      DEBUG_LOG("server DISCONNECT EVENT...\n");
      disconnected = true;
    } else {
      eng.cm().Disconnect(id, eng.NowNs()).IgnoreError();
    }
  }
  if (!disconnected || rc) {
    eng.WaitUntil(
        [&] {
          const cm::ConnInfo* i = eng.cm().Info(id);
          return i->state == cm::ConnState::kTimeWait || i->state == cm::ConnState::kClosed;
        },
        20'000'000'000ull);
  }
  {
    absl::MutexLock l(&eng.mu());
    DEBUG_LOG("rping server: disconnected (crossed DREQs so far: %llu)\n",
              static_cast<unsigned long long>(eng.cm().counters.crossed_dreqs));
    eng.cm().Release(id, eng.NowNs());
  }
  // Let the last ACKs go before the QP is destroyed.
  tools::PollFor(eng, std::chrono::milliseconds(50));
  return rc;
}

int RunServer(const Options& opt, engine::Engine& eng, const wire::IpAddr& bind_ip) {
  cm::ListenerId lid = 0;
  {
    absl::MutexLock l(&eng.mu());
    auto p = eng.cm().BindPort(bind_ip, opt.port);
    if (!p.ok()) {
      std::fprintf(stderr, "rdma_bind_addr: %s\n", std::string(p.status().message()).c_str());
      return 1;
    }
    auto li = eng.cm().Listen(bind_ip, opt.port, 3);
    if (!li.ok()) {
      std::fprintf(stderr, "rdma_listen: %s\n", std::string(li.status().message()).c_str());
      return 1;
    }
    lid = *li;
  }
  std::printf("rping: listening on %s:%u\n", bind_ip == wire::IpAddr{} ? "*" : bind_ip.ToString().c_str(),
              opt.port);
  std::fflush(stdout);
  int rc = 0;
  do {
    rc |= ServeOne(opt, eng, lid);
    std::fflush(stdout);
  } while (opt.persistent);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  std::vector<option> longopts = {{"help", no_argument, nullptr, 'h'},
                                  {"cycles", required_argument, nullptr, 0x2000},
                                  {"cm-drop-rx-dreqs", required_argument, nullptr, 0x2001},
                                  {"expect-reject", required_argument, nullptr, 0x2002},
                                  {"cm-drop-tx-dreqs", required_argument, nullptr, 0x2003}};
  tools::AddHostLongOptions(&longopts);
  int c;
  while ((c = getopt_long(argc, argv, "a:I:Pp:C:S:t:scvVdqh", longopts.data(), nullptr)) != -1) {
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
      case 'q': break;  // our QPs are always created and moved by us
      case 't': break;  // tos: not offered
      case 'h': Usage(argv[0]); return 0;
      case 0x2000: opt.cycles = std::max<uint64_t>(1, std::strtoull(optarg, nullptr, 0)); break;
      case 0x2001: opt.drop_dreqs = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 0)); break;
      case 0x2002: opt.expect_reject = std::atoi(optarg); break;
      case 0x2003: opt.drop_tx_dreqs = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 0)); break;
      default:
        if (!tools::ParseHostOption(c, optarg, &opt.host)) {
          Usage(argv[0]);
          return 1;
        }
    }
  }
  if (opt.server == opt.client || (opt.client && opt.addr.empty())) {
    Usage(argv[0]);
    return 1;
  }
  if (opt.size < kMinSize || opt.size > (1u << 30)) {
    std::fprintf(stderr, "Invalid size %u (valid range is %u to %u)\n", opt.size, kMinSize, 1u << 30);
    return 1;
  }
  opt.host.engine.cm.drop_rx_dreqs = opt.drop_dreqs;
  opt.host.engine.cm.drop_tx_dreqs = opt.drop_tx_dreqs;
  auto host = tools::BringUp(opt.host);
  if (!host.ok()) {
    std::fprintf(stderr, "%s\n", std::string(host.status().message()).c_str());
    return 1;
  }
  engine::Engine& eng = *host->eng;
  wire::IpAddr addr;
  if (!opt.addr.empty() && !wire::IpAddr::FromString(opt.addr, &addr)) {
    std::fprintf(stderr, "rping: bad address %s\n", opt.addr.c_str());
    return 1;
  }
  int rc;
  if (opt.server) {
    rc = RunServer(opt, eng, addr);
  } else {
    wire::IpAddr local;
    if (!opt.source.empty()) {
      if (!wire::IpAddr::FromString(opt.source, &local)) {
        std::fprintf(stderr, "rping: bad source address %s\n", opt.source.c_str());
        return 1;
      }
    } else {
      auto l = eng.LocalIp(!addr.IsV4());
      if (!l) {
        std::fprintf(stderr, "rping: no local %s address (--ip)\n", addr.IsV4() ? "IPv4" : "IPv6");
        return 1;
      }
      local = *l;
    }
    rc = RunCycles(opt, eng, local, addr);
  }
  std::fflush(stdout);
  return rc;
}
