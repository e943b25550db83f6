// SPDX-License-Identifier: MIT
// rc-pingpong: RC Send/Receive ping-pong on this stack, wire- and protocol-
// compatible with rdma-core's ibv_rc_pingpong (its TCP exchange of
// LID:QPN:PSN:GID on port 18515, the same QP attributes and message loop,
// the same -p/-s/-n/-m/-r/-g/-c options and output), as server (no host
// argument) or client (the server's host name or address).
//
//   rc-pingpong --profile drivers-cfg/net_tap.ini --iface rnic0 --ip 198.18.0.10/24 [-s 4096] [-n 1000] [-m 1024]
//   rc-pingpong ... 198.18.0.2                         (client)
//
// The TCP exchange uses the kernel's sockets; RoCE uses the DPDK port and the
// address in its profile (carried to the peer in the GID). See
// tools/lib/pingpong_exchange.h for what the real program does, step by step.
//
// --timeout S (default 60) bounds every wait for the peer, in both roles: the exchange (the
// server's wait for its client included), ARP for the peer, and each completion of the loop;
// past it the program prints one line naming the wait and exits 1.
#include <getopt.h>
#include <netdb.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <absl/strings/str_cat.h>

#include "stack/engine/engine.h"
#include "tools/lib/pingpong_exchange.h"
#include "tools/lib/host_options.h"

using namespace roce;
namespace pp = roce::tools::rc_pingpong;

namespace {

struct Options {
  uint16_t port = tools::kPingpongDefaultPort;
  uint32_t size = pp::kDefaultSize;
  uint32_t mtu = pp::kDefaultPathMtu;
  uint32_t rx_depth = pp::kDefaultRxDepth;
  uint32_t iters = pp::kDefaultIters;
  int gid_index = -1;
  bool validate = false;
  std::string server;
  host::HostOptions host;  // --profile --iface --ip --set --capture
  int timeout_s = 60;  // give up on the exchange / a stalled run
  uint32_t quiet_tail = 2;  // iterations at the end run without injected faults
};

void Usage(const char* argv0) {
  std::printf(
      "Usage:\n"
      "  %s [options]            start a server and wait for connection\n"
      "  %s [options] <host>     connect to server at <host>\n\n"
      "Options (as ibv_rc_pingpong):\n"
      "  -p, --port=<port>      listen on/connect to port <port> (default 18515)\n"
      "  -d, --ib-dev=<dev>     accepted, ignored (the device is the DPDK port)\n"
      "  -i, --ib-port=<port>   accepted, ignored\n"
      "  -s, --size=<size>      size of message to exchange (default 4096)\n"
      "  -m, --mtu=<size>       path MTU (default 1024)\n"
      "  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n"
      "  -n, --iters=<iters>    number of exchanges (default 1000)\n"
      "  -l, --sl=<sl>          accepted, ignored\n"
      "  -e, --events           accepted, ignored (completions are polled)\n"
      "  -g, --gid-idx=<idx>    accepted (our GID is the port's address)\n"
      "  -c, --chk              validate received buffer\n"
      "Options of this stack:\n",
      argv0, argv0);
  std::fputs(tools::kHostOptionsUsage, stdout);
  std::printf(
      "  --timeout=<seconds>    give up after this long without progress (default 60)\n"
      "  --quiet-tail=<n>       turn injected faults off for the last n iterations (default 2):\n"
      "                         the loop has no closing handshake, so a final ACK lost after\n"
      "                         the peer has destroyed its QP can never be recovered\n");
}

bool ParseArgs(int argc, char** argv, Options* o) {
  std::vector<option> opts = {
      {"port", required_argument, nullptr, 'p'},    {"ib-dev", required_argument, nullptr, 'd'},
      {"ib-port", required_argument, nullptr, 'i'}, {"size", required_argument, nullptr, 's'},
      {"mtu", required_argument, nullptr, 'm'},     {"rx-depth", required_argument, nullptr, 'r'},
      {"iters", required_argument, nullptr, 'n'},   {"sl", required_argument, nullptr, 'l'},
      {"events", no_argument, nullptr, 'e'},        {"gid-idx", required_argument, nullptr, 'g'},
      {"chk", no_argument, nullptr, 'c'},           {"timeout", required_argument, nullptr, 6},
      {"quiet-tail", required_argument, nullptr, 7}, {"help", no_argument, nullptr, 'h'}};
  tools::AddHostLongOptions(&opts);
  for (;;) {
    const int c = getopt_long(argc, argv, "p:d:i:s:m:r:n:l:eg:cohP", opts.data(), nullptr);
    if (c == -1) break;
    switch (c) {
      case 'p': o->port = static_cast<uint16_t>(std::strtoul(optarg, nullptr, 0)); break;
      case 's': o->size = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 0)); break;
      case 'm': o->mtu = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 0)); break;
      case 'r': o->rx_depth = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 0)); break;
      case 'n': o->iters = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 0)); break;
      case 'g': o->gid_index = std::atoi(optarg); break;
      case 'c': o->validate = true; break;
      case 'd': case 'i': case 'l': case 'e': case 'o': case 'P': break;
      case 6:
        o->timeout_s = std::atoi(optarg);
        if (o->timeout_s < 1) {
          std::fprintf(stderr, "invalid --timeout %s (at least 1 second)\n", optarg);
          return false;
        }
        break;
      case 7: o->quiet_tail = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 0)); break;
      default:
        if (!tools::ParseHostOption(c, optarg, &o->host)) return false;
    }
  }
  if (optind == argc - 1) o->server = argv[optind];
  else if (optind < argc) return false;
  switch (o->mtu) {
    case 256: case 512: case 1024: case 2048: case 4096: break;
    default:
      std::fprintf(stderr, "invalid MTU %u\n", o->mtu);
      return false;
  }
  if (o->size == 0 || o->rx_depth == 0 || o->iters == 0) return false;
  return true;
}

absl::StatusOr<wire::IpAddr> ResolveHost(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res)
    return absl::NotFoundError(absl::StrCat("cannot resolve ", host));
  const auto* sin = reinterpret_cast<const sockaddr_in*>(res->ai_addr);
  const wire::IpAddr ip = wire::IpAddr::FromV4(ntohl(sin->sin_addr.s_addr));
  freeaddrinfo(res);
  return ip;
}

class PingPong {
 public:
  explicit PingPong(const Options& o) : o_(o) {}
  int Run();

 private:
  bool PostRecvs(uint32_t n);
  bool PostSend();
  bool ConnectQp(const tools::PingpongDest& remote, std::string* error);
  // " (--timeout N s)" after an exchange error that is a timeout, else "".
  std::string TimeoutNote(const std::string& error) const {
    return error.rfind("timed out", 0) == 0 ? absl::StrCat(" (after ", o_.timeout_s, " s, --timeout)") : "";
  }

  const Options& o_;
  std::unique_ptr<port::Port> port_;
  std::unique_ptr<engine::Engine> eng_;
  std::unique_ptr<rc::CompletionQueue> cq_;
  rc::QueuePair* qp_ = nullptr;
  std::vector<uint8_t> buf_;
  mem::RegionInfo mr_{};
  tools::PingpongDest local_;
  wire::IpAddr local_ip_;
};

bool PingPong::PostRecvs(uint32_t n) {
  roce::engine::EngineLock l(&eng_->mu());
  rc::Sge s{reinterpret_cast<uint64_t>(buf_.data()), o_.size, mr_.local_token};
  for (uint32_t i = 0; i < n; i++) {
    rc::RecvWr r{pp::kRecvWrId, &s, 1};
    if (qp_->PostRecv(r) != rc::PostResult::kOk) return false;
  }
  return true;
}

bool PingPong::PostSend() {
  roce::engine::EngineLock l(&eng_->mu());
  rc::Sge s{reinterpret_cast<uint64_t>(buf_.data()), o_.size, mr_.local_token};
  rc::SendWr w;
  w.context = pp::kSendWrId;
  w.op = rc::WrOp::kSend;
  w.sge = &s;
  w.num_sge = 1;
  if (o_.size <= qp_->caps().max_inline) w.flags = rc::kInline;
  return qp_->PostSend(w) == rc::PostResult::kOk;
}

bool PingPong::ConnectQp(const tools::PingpongDest& remote, std::string* error) {
  wire::IpAddr peer = wire::IpAddr::FromV6(remote.gid.data());
  if (peer == wire::IpAddr{}) {
    *error = "the peer sent no GID (run ibv_rc_pingpong with -g)";
    return false;
  }
  if (peer.IsV4() != local_ip_.IsV4()) {
    *error = absl::StrCat("the peer's GID ", peer.ToString(), " and ours (", local_ip_.ToString(),
                          ") are of different IP families: pick the peer's -g index to match --ip");
    return false;
  }
  // ARP/NDP for the peer (also what lets a kernel RoCE peer, rxe, resolve us), RTR, RTS.
  host::QpConnectParams c;
  c.peer = peer;
  c.attr.path_mtu = o_.mtu;
  c.attr.dest_qpn = remote.qpn;
  c.attr.rq_psn = remote.psn;
  c.attr.sq_psn = local_.psn;
  c.attr.max_dest_rd_atomic = pp::kMaxDestRdAtomic;
  c.attr.max_rd_atomic = pp::kMaxRdAtomic;
  c.attr.min_rnr_timer = pp::kMinRnrTimer;
  c.attr.timeout = pp::kTimeout;
  c.attr.retry_cnt = pp::kRetryCnt;
  c.attr.rnr_retry = pp::kRnrRetry;
  c.resolve_timeout_ns = std::min<uint64_t>(c.resolve_timeout_ns, uint64_t(o_.timeout_s) * 1'000'000'000ull);
  if (auto s = host::ConnectQp(*eng_, qp_, c); !s.ok()) {
    *error = std::string(s.message());
    return false;
  }
  return true;
}

int PingPong::Run() {
  // Port and engine: one polling thread, not pinned (it shares the machine
  // with the peer, a qemu guest or another stack on the same host).
  auto host = host::BringUp(o_.host);
  if (!host.ok()) {
    std::fprintf(stderr, "%s\n", std::string(host.status().message()).c_str());
    return 1;
  }
  port_ = std::move(host->port);
  eng_ = std::move(host->eng);
  // Our GID is the port's address: the family of --ip when given (so
  // `--ip fe80::10/64` talks RoCEv2 over IPv6), else IPv4 when the profile
  // has one, else IPv6. The peer's GID family must match (its -g index).
  const auto my_ip = host::LocalGidIp(*eng_, o_.host);
  if (!my_ip.ok()) {
    std::fprintf(stderr, "%s\n", std::string(my_ip.status().message()).c_str());
    return 1;
  }

  // Buffer, CQ, QP — as ibv_rc_pingpong sets them up.
  buf_.assign(o_.size, pp::kBufferFill);
  cq_ = std::make_unique<rc::CompletionQueue>(o_.rx_depth + 1);
  {
    roce::engine::EngineLock l(&eng_->mu());
    if (eng_->rc().memory().RegisterRegion(reinterpret_cast<uint64_t>(buf_.data()), o_.size,
                                           mem::kLocalWrite, &mr_) != mem::Result::kOk) {
      std::fprintf(stderr, "Couldn't register MR\n");
      return 1;
    }
    rc::QpCaps caps;
    caps.sq_depth = pp::kMaxSendWr;
    caps.rq_depth = o_.rx_depth;
    caps.max_send_sge = 1;
    caps.max_recv_sge = 1;
    caps.max_inline = 64;
    qp_ = eng_->CreateQp(caps, cq_.get(), cq_.get());
    if (!qp_ || !qp_->ToInit()) {
      std::fprintf(stderr, "Couldn't create QP\n");
      return 1;
    }
  }
  if (!PostRecvs(o_.rx_depth)) {
    std::fprintf(stderr, "Couldn't post receive\n");
    return 1;
  }
  uint32_t routs = o_.rx_depth;

  local_ip_ = *my_ip;
  local_.lid = 0;
  local_.qpn = qp_->qpn();
  local_.psn = tools::RcPingpongStartPsn(tools::PingpongSeed());
  local_.gid = my_ip->b;  // IPv4 as ::ffff:a.b.c.d, as rxe's RoCEv2 GIDs
  std::printf("%s\n", tools::FormatAddressLine(true, local_).c_str());
  std::fflush(stdout);

  // The exchange blocks on TCP: keep the engine polling meanwhile (ARP).
  if (auto s = eng_->Start(); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 1;
  }
  tools::ExchangeOptions xo;
  xo.timeout_ms = o_.timeout_s * 1000;
  tools::PingpongDest remote;
  std::string err;
  if (!o_.server.empty()) {
    // Client: ARP the server first (rxe needs a neighbour entry for us before its RTR).
    auto sip = ResolveHost(o_.server);
    if (sip.ok()) (void)eng_->Resolve(*sip, std::min<uint64_t>(3'000'000'000ull, uint64_t(o_.timeout_s) * 1'000'000'000ull));
    xo.connect_retry_ms = 2000;
    tools::ExchangeResult r = tools::PingpongClientExchange(o_.server, o_.port, local_, xo);
    if (!r.ok()) {
      eng_->Stop();
      std::fprintf(stderr, "Couldn't get remote LID: %s%s\n", r.error.c_str(), TimeoutNote(r.error).c_str());
      return 1;
    }
    remote = r.remote;
    if (!ConnectQp(remote, &err)) {
      eng_->Stop();
      std::fprintf(stderr, "%s\n", err.c_str());
      return 1;
    }
  } else {
    tools::PingpongServer server;
    if (!server.Listen(o_.port, &err)) {
      eng_->Stop();
      std::fprintf(stderr, "Couldn't listen to port %u: %s\n", o_.port, err.c_str());
      return 1;
    }
    tools::ExchangeResult r = server.Exchange(
        local_, [this](const tools::PingpongDest& d, std::string* e2) { return ConnectQp(d, e2); }, xo);
    if (!r.ok()) {
      eng_->Stop();
      std::fprintf(stderr, "Couldn't get remote LID: %s%s\n", r.error.c_str(), TimeoutNote(r.error).c_str());
      return 1;
    }
    remote = r.remote;
  }
  eng_->Stop();
  std::printf("%s\n", tools::FormatAddressLine(false, remote).c_str());
  std::fflush(stdout);

  if (!o_.server.empty() && o_.validate) {
    for (uint32_t i = 0; i < o_.size; i += static_cast<uint32_t>(sysconf(_SC_PAGESIZE))) buf_[i] = 0;
  }

  // The loop of ibv_rc_pingpong.
  const auto t0 = std::chrono::steady_clock::now();
  auto last_progress = t0;
  uint64_t pending = pp::kRecvWrId;
  uint32_t scnt = 0, rcnt = 0;
  if (!o_.server.empty()) {
    if (!PostSend()) {
      std::fprintf(stderr, "Couldn't post send\n");
      return 1;
    }
    pending |= pp::kSendWrId;
  }
  int rc_exit = 0;
  while (rcnt < o_.iters || scnt < o_.iters) {
    // ibv_rc_pingpong ends without a handshake: once the peer has its last
    // completions it destroys its QP, and if our last ACK or its last ACK was
    // lost, the retransmission meets no QP (hardware and rxe alike) and our
    // final send fails with retry-exceeded. The last iterations therefore run
    // without injected faults; every earlier one sees them.
    if (port_->faults().Any() &&
        (uint64_t{rcnt} + o_.quiet_tail >= o_.iters || uint64_t{scnt} + o_.quiet_tail >= o_.iters)) {
      port::FaultConfig quiet = port_->faults();
      quiet.rx = {};
      quiet.tx = {};
      port_->SetFaults(quiet);
      std::fprintf(stderr, "rc-pingpong: injected faults off for the last %u iterations (scnt=%u rcnt=%u)\n",
                   o_.quiet_tail, scnt, rcnt);
    }
    const size_t moved = eng_->Poll();
    rc::Completion wc[2];
    const uint32_t ne = cq_->Poll(wc, 2);
    if (!moved && !ne) std::this_thread::yield();  // share the CPU with the peer
    const auto now = std::chrono::steady_clock::now();
    if (ne) last_progress = now;
    if (now - last_progress > std::chrono::seconds(o_.timeout_s)) {
      std::fprintf(stderr, "rc-pingpong: timed out after %d s waiting for a completion (%s; scnt=%u rcnt=%u)\n",
                   o_.timeout_s,
                   (pending & pp::kRecvWrId) && (pending & pp::kSendWrId) ? "the peer's next message and our send's ACK"
                   : (pending & pp::kRecvWrId)                           ? "the peer's next message"
                                                                          : "our send's ACK",
                   scnt, rcnt);
      rc_exit = 1;
      break;
    }
    for (uint32_t i = 0; i < ne; i++) {
      if (wc[i].status != rc::Status::kSuccess) {
        std::fprintf(stderr, "Failed status %s (%s) for wr_id %d\n", rc::StatusName(wc[i].status),
                     rc::CauseName(wc[i].cause), static_cast<int>(wc[i].request_context));
        rc_exit = 1;
        break;
      }
      switch (wc[i].request_context) {
        case pp::kSendWrId:
          ++scnt;
          break;
        case pp::kRecvWrId:
          if (--routs <= 1) {
            if (!PostRecvs(o_.rx_depth - routs)) {
              std::fprintf(stderr, "Couldn't post receive\n");
              return 1;
            }
            routs = o_.rx_depth;
          }
          ++rcnt;
          break;
        default:
          std::fprintf(stderr, "Completion for unknown wr_id %d\n", static_cast<int>(wc[i].request_context));
          return 1;
      }
      pending &= ~wc[i].request_context;
      if (scnt < o_.iters && !pending) {
        if (!PostSend()) {
          std::fprintf(stderr, "Couldn't post send\n");
          return 1;
        }
        pending = pp::kRecvWrId | pp::kSendWrId;
      }
    }
    if (rc_exit) break;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Like a NIC that keeps running after the application's last completion:
  // let the last ACKs (and any retransmission the peer asks for) go out.
  host::PollFor(*eng_, std::chrono::milliseconds(100));
  if (rc_exit == 0) {
    const long long bytes = static_cast<long long>(o_.size) * o_.iters * 2;
    std::printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, secs, bytes * 8.0 / secs / 1000000);
    std::printf("%u iters in %.2f seconds = %.2f usec/iter\n", o_.iters, secs, secs * 1000000 / o_.iters);
    if (o_.server.empty() && o_.validate) {
      for (uint32_t i = 0; i < o_.size; i += static_cast<uint32_t>(sysconf(_SC_PAGESIZE)))
        if (buf_[i] != 0) std::printf("invalid data in page %ld\n", i / sysconf(_SC_PAGESIZE));
    }
  }
  {
    roce::engine::EngineLock l(&eng_->mu());
    const rc::QpCounters& c = qp_->counters;
    std::fprintf(stderr,
                 "rc-pingpong: qp 0x%06x tx %llu rx %llu retransmits %llu timeouts %llu seq-naks %llu/%llu "
                 "rnr-naks %llu/%llu duplicates %llu icrc-errors %llu\n",
                 qp_->qpn(), static_cast<unsigned long long>(c.tx_packets),
                 static_cast<unsigned long long>(c.rx_packets), static_cast<unsigned long long>(c.retransmits),
                 static_cast<unsigned long long>(c.timeouts), static_cast<unsigned long long>(c.seq_naks_sent),
                 static_cast<unsigned long long>(c.seq_naks_received),
                 static_cast<unsigned long long>(c.rnr_naks_sent),
                 static_cast<unsigned long long>(c.rnr_naks_received),
                 static_cast<unsigned long long>(c.duplicates),
                 static_cast<unsigned long long>(eng_->rc().counters.IcrcErrors()));
    const port::PortStats ps = port_->Stats();
    std::fprintf(stderr, "rc-pingpong: port faults rx drop %llu tx drop %llu\n",
                 static_cast<unsigned long long>(ps.rx_faults.dropped),
                 static_cast<unsigned long long>(ps.tx_faults.dropped));
    eng_->DestroyQp(qp_);
    eng_->rc().memory().DeregisterRegion(mr_.handle);
  }
  eng_.reset();
  port_.reset();
  return rc_exit;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) {
    Usage(argv[0]);
    return 1;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  PingPong pp(o);
  const int rc = pp.Run();
  return rc;
}
