// SPDX-License-Identifier: MIT
// rc-rdma: RDMA Write and RDMA Read between this stack and a verbs peer, both
// directions, plus a remote access violation — the interop check for the
// one-sided operations that ibv_rc_pingpong (Send only) never exercises.
//
// The peer is tests/interop/rdma_peer.py (pyverbs on kernel Soft-RoCE, in an
// rxe-peer guest), a TCP server on port 18516; this tool is the client and
// drives the steps with one text line each (the protocol is described at the
// top of rdma_peer.py):
//   1. we RDMA-Write Pattern(s1) into the peer's region, RDMA-Read it back and
//      compare; the peer checks its region holds Pattern(s1)        (CHECK)
//   2. the peer RDMA-Writes Pattern(s2) into our region and reads it back;
//      we check our region holds Pattern(s2)                      (WRITE_READ)
//   3. --bad-key theirs: the peer writes with a wrong rkey and must get
//      IBV_WC_REM_ACCESS_ERR; our region must still hold Pattern(s2)
//      --bad-key ours: we write with a wrong rkey and must get an access
//      violation (remote access NAK); the peer's region must still hold s1
// Steps 1 and 2 repeat --rounds times with new patterns. With injected faults
// (--set fault.rx_drop=...) a last step checks our counters show the recovery.
// Output ends with `rc-rdma: N steps, N ok, N failed`; exit 0 only if all ok.
// --timeout S (default 60) bounds every wait for the peer (its TCP server, each answer on it,
// ARP, each completion): past it one line names the wait and the exit status is 1.
//
//   rc-rdma --profile drivers-cfg/net_tap.ini --iface dtap0 --ip 198.18.0.10/24 [--size N] [-m MTU]
//           [--bad-key ours|theirs|none] 198.18.0.2
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <absl/strings/str_cat.h>
#include <absl/strings/str_format.h>
#include <absl/strings/str_split.h>

#include "stack/engine/engine.h"
#include "tools/lib/pingpong_exchange.h"
#include "tools/lib/host_options.h"

using namespace roce;
namespace pp = roce::tools::rc_pingpong;

namespace {

struct Options {
  uint16_t port = 18516;
  uint32_t size = 100000;  // not a multiple of any MTU: a short last packet
  uint32_t mtu = 1024;
  std::string bad_key = "theirs";
  std::string server;
  host::HostOptions host;  // --profile --iface --ip --set --capture
  int timeout_s = 60;
  uint32_t rounds = 1;
};

// Byte i = (seed + 7 i + (i >> 8)) mod 256, as rdma_peer.py.
std::vector<uint8_t> Pattern(uint32_t seed, uint32_t n) {
  std::vector<uint8_t> v(n);
  for (uint32_t i = 0; i < n; i++) v[i] = static_cast<uint8_t>(seed + 7 * i + (i >> 8));
  return v;
}

// A wait for the peer that lasted --timeout: one line naming it, exit 1.
[[noreturn]] void TimedOut(int secs, const std::string& what) {
  std::fflush(stdout);
  std::fprintf(stderr, "rc-rdma: timed out after %d s waiting for %s\n", secs, what.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

// A line-oriented TCP client for the steps.
class Control {
 public:
  ~Control() {
    if (fd_ >= 0) close(fd_);
  }
  bool Connect(const std::string& host, uint16_t port, int timeout_s) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    if (inet_pton(AF_INET, host.c_str(), &sa.sin_addr) != 1) return false;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    while (std::chrono::steady_clock::now() < until) {  // the peer may still be starting
      fd_ = socket(AF_INET, SOCK_STREAM, 0);
      // connect() gives up at the deadline (Linux bounds it by SO_SNDTIMEO), not after TCP's
      // own SYN retries (about 2 minutes) when nothing answers.
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(until - std::chrono::steady_clock::now());
      timeval tv{static_cast<time_t>(left.count() / 1000000), static_cast<suseconds_t>(left.count() % 1000000)};
      if (tv.tv_sec == 0 && tv.tv_usec == 0) tv.tv_usec = 1000;
      setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      if (connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
        tv = {};
        setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        return true;
      }
      close(fd_);
      fd_ = -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return false;
  }
  bool Send(const std::string& line) {
    const std::string s = line + "\n";
    return write(fd_, s.data(), s.size()) == static_cast<ssize_t>(s.size());
  }
  // The next line; "" on EOF/error. Keeps the engine polling while it waits
  // (the peer's verbs traffic needs our side to answer). Past `timeout_s`:
  // one line naming `what`, exit 1.
  template <typename PollFn>
  std::string Recv(PollFn&& poll, int timeout_s, const std::string& what) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    for (;;) {
      if (auto nl = buf_.find('\n'); nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      if (std::chrono::steady_clock::now() > until) TimedOut(timeout_s, what);
      poll();
      char tmp[512];
      const ssize_t n = recv(fd_, tmp, sizeof tmp, MSG_DONTWAIT);
      if (n == 0) return "";
      if (n > 0) buf_.append(tmp, static_cast<size_t>(n));
      else if (errno != EAGAIN && errno != EWOULDBLOCK) return "";
      else std::this_thread::yield();  // share the CPU with the peer (a qemu guest)
    }
  }

 private:
  int fd_ = -1;
  std::string buf_;
};

class Rdma {
 public:
  explicit Rdma(const Options& o) : o_(o) {}
  int Run();

 private:
  bool Setup();
  // Posts one signalled Write/Read and polls until its completion.
  rc::Completion Do(rc::WrOp op, std::vector<uint8_t>& local, const mem::RegionInfo& lr, uint64_t raddr,
                    uint32_t rkey);
  void Step(const std::string& what, bool ok, const std::string& detail = "");
  std::string Ask(const std::string& line);

  const Options& o_;
  std::unique_ptr<port::Port> port_;
  std::unique_ptr<engine::Engine> eng_;
  std::unique_ptr<rc::CompletionQueue> cq_;
  rc::QueuePair* qp_ = nullptr;
  std::vector<uint8_t> src_, back_, target_;
  mem::RegionInfo src_mr_{}, back_mr_{}, target_mr_{};
  wire::IpAddr local_ip_;
  Control ctl_;
  int ok_ = 0, failed_ = 0;
};

void Rdma::Step(const std::string& what, bool ok, const std::string& detail) {
  (ok ? ok_ : failed_)++;
  std::printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what.c_str(), detail.empty() ? "" : ": ", detail.c_str());
}

std::string Rdma::Ask(const std::string& line) {
  if (!ctl_.Send(line)) return "";
  return ctl_.Recv([this] { eng_->Poll(); }, o_.timeout_s, "the peer's answer to " + line.substr(0, line.find(' ')));
}

bool Rdma::Setup() {
  auto host = host::BringUp(o_.host);
  if (!host.ok()) return std::fprintf(stderr, "%s\n", std::string(host.status().message()).c_str()), false;
  port_ = std::move(host->port);
  eng_ = std::move(host->eng);
  const auto my_ip = eng_->LocalIp(false);
  if (!my_ip) return std::fprintf(stderr, "the port profile has no IPv4 address (--ip)\n"), false;
  local_ip_ = *my_ip;

  src_.assign(o_.size, 0);
  back_.assign(o_.size, 0);
  target_.assign(o_.size, 0);
  cq_ = std::make_unique<rc::CompletionQueue>(64);
  roce::engine::EngineLock l(&eng_->mu());
  auto& m = eng_->rc().memory();
  if (m.RegisterRegion(reinterpret_cast<uint64_t>(src_.data()), o_.size, 0, &src_mr_) != mem::Result::kOk ||
      m.RegisterRegion(reinterpret_cast<uint64_t>(back_.data()), o_.size, mem::kLocalWrite, &back_mr_) !=
          mem::Result::kOk ||
      m.RegisterRegion(reinterpret_cast<uint64_t>(target_.data()), o_.size,
                       mem::kLocalWrite | mem::kRemoteWrite | mem::kRemoteRead, &target_mr_) != mem::Result::kOk)
    return std::fprintf(stderr, "Couldn't register memory\n"), false;
  rc::QpCaps caps;
  caps.sq_depth = 16;
  caps.rq_depth = 16;
  caps.max_send_sge = 1;
  caps.max_recv_sge = 1;
  qp_ = eng_->CreateQp(caps, cq_.get(), cq_.get());
  if (!qp_ || !qp_->ToInit()) return std::fprintf(stderr, "Couldn't create QP\n"), false;
  return true;
}

rc::Completion Rdma::Do(rc::WrOp op, std::vector<uint8_t>& local, const mem::RegionInfo& lr, uint64_t raddr,
                        uint32_t rkey) {
  rc::Completion c{};
  c.status = rc::Status::kInternalError;
  {
    roce::engine::EngineLock l(&eng_->mu());
    rc::Sge s{reinterpret_cast<uint64_t>(local.data()), o_.size, lr.local_token};
    rc::SendWr w;
    w.context = 7;
    w.op = op;
    w.sge = &s;
    w.num_sge = 1;
    w.remote_addr = raddr;
    w.rkey = rkey;
    if (qp_->PostSend(w) != rc::PostResult::kOk) return c;
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(o_.timeout_s);
  while (std::chrono::steady_clock::now() < until) {
    eng_->Poll();
    if (cq_->Poll(&c, 1)) return c;
  }
  TimedOut(o_.timeout_s, std::string("the completion of our RDMA ") + (op == rc::WrOp::kRead ? "Read" : "Write"));
}

int Rdma::Run() {
  if (!Setup()) return 1;
  // Ask for the peer's MAC before it moves to RTR (rxe needs a neighbour
  // entry for the IP in our GID), and keep answering ARP while TCP blocks.
  wire::IpAddr server_ip;
  {
    in_addr a{};
    if (inet_pton(AF_INET, o_.server.c_str(), &a) != 1) return std::fprintf(stderr, "bad server address\n"), 1;
    server_ip = wire::IpAddr::FromV4(ntohl(a.s_addr));
  }
  if (auto s = eng_->Start(); !s.ok()) return std::fprintf(stderr, "%s\n", std::string(s.message()).c_str()), 1;
  (void)eng_->Resolve(server_ip, std::min<uint64_t>(3'000'000'000ull, uint64_t(o_.timeout_s) * 1'000'000'000ull));
  if (!ctl_.Connect(o_.server, o_.port, o_.timeout_s)) {
    eng_->Stop();
    std::fprintf(stderr, "rc-rdma: timed out after %d s waiting for the peer's TCP server on %s:%u (couldn't connect)\n",
                 o_.timeout_s, o_.server.c_str(), o_.port);
    return 1;
  }
  const uint32_t my_psn = tools::RcPingpongStartPsn(tools::PingpongSeed());
  char gid[33];
  for (int i = 0; i < 16; i++) std::snprintf(gid + 2 * i, 3, "%02x", local_ip_.b[i]);
  ctl_.Send(absl::StrFormat("QP %06x %06x %s %016x %08x %u", qp_->qpn(), my_psn, gid,
                            reinterpret_cast<uint64_t>(target_.data()), target_mr_.remote_token, o_.size));
  // The engine's own thread polls meanwhile; this one only waits for TCP.
  std::string line = ctl_.Recv([] { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }, o_.timeout_s,
                               "the peer's QP line");
  eng_->Stop();  // from here this thread polls (inline mode)
  std::vector<std::string> f = absl::StrSplit(line, ' ');
  if (f.size() != 7 || f[0] != "QP") return std::fprintf(stderr, "peer: %s\n", line.c_str()), 1;
  const uint32_t rqpn = static_cast<uint32_t>(std::strtoul(f[1].c_str(), nullptr, 16));
  const uint32_t rpsn = static_cast<uint32_t>(std::strtoul(f[2].c_str(), nullptr, 16));
  uint8_t rgid[16];
  for (int i = 0; i < 16 && f[3].size() == 32; i++)
    rgid[i] = static_cast<uint8_t>(std::strtoul(f[3].substr(2 * i, 2).c_str(), nullptr, 16));
  const uint64_t raddr = std::strtoull(f[4].c_str(), nullptr, 16);
  const uint32_t rkey = static_cast<uint32_t>(std::strtoul(f[5].c_str(), nullptr, 16));
  if (f[3].size() != 32 || std::strtoul(f[6].c_str(), nullptr, 10) < o_.size)
    return std::fprintf(stderr, "peer: bad QP line %s\n", line.c_str()), 1;
  host::QpConnectParams cp;
  cp.peer = wire::IpAddr::FromV6(rgid);
  cp.attr.path_mtu = o_.mtu;
  cp.attr.dest_qpn = rqpn;
  cp.attr.rq_psn = rpsn;
  cp.attr.sq_psn = my_psn;
  cp.attr.max_dest_rd_atomic = 4;
  cp.attr.max_rd_atomic = 4;
  cp.attr.min_rnr_timer = pp::kMinRnrTimer;
  cp.attr.timeout = pp::kTimeout;
  cp.attr.retry_cnt = pp::kRetryCnt;
  cp.attr.rnr_retry = pp::kRnrRetry;
  cp.resolve_timeout_ns = std::min<uint64_t>(cp.resolve_timeout_ns, uint64_t(o_.timeout_s) * 1'000'000'000ull);
  if (auto s = host::ConnectQp(*eng_, qp_, cp); !s.ok())
    return std::fprintf(stderr, "%s\n", std::string(s.message()).c_str()), 1;
  std::printf("connected: our qpn 0x%06x, peer qpn 0x%06x, peer region 0x%016llx rkey 0x%08x, %u bytes\n",
              qp_->qpn(), rqpn, static_cast<unsigned long long>(raddr), rkey, o_.size);

  uint32_t s1 = 0, s2 = 0;
  const uint32_t s3 = 250;
  std::vector<uint8_t> want2;
  for (uint32_t round = 0; round < o_.rounds && !failed_; round++) {
    s1 = 11 + 2 * round;
    s2 = 12 + 2 * round;
    const std::string tag = o_.rounds > 1 ? absl::StrCat(" [round ", round + 1, "]") : "";
    // 1. our Write, our Read back, the peer's view.
    const std::vector<uint8_t> want1 = Pattern(s1, o_.size);
    std::copy(want1.begin(), want1.end(), src_.begin());  // in place: the region stays valid
    std::fill(back_.begin(), back_.end(), 0);
    rc::Completion c = Do(rc::WrOp::kWrite, src_, src_mr_, raddr, rkey);
    Step("RDMA Write to the peer" + tag, c.status == rc::Status::kSuccess,
         absl::StrCat(rc::StatusName(c.status), " (", rc::CauseName(c.cause), ")"));
    c = Do(rc::WrOp::kRead, back_, back_mr_, raddr, rkey);
    Step("RDMA Read from the peer" + tag, c.status == rc::Status::kSuccess && back_ == src_,
         c.status != rc::Status::kSuccess ? rc::StatusName(c.status) : back_ == src_ ? "" : "other bytes");
    std::string a = Ask(absl::StrCat("CHECK ", s1));
    Step("the peer's region holds what we wrote" + tag, a == "OK", a);
    // 2. the peer's Write and Read of our region.
    a = Ask(absl::StrCat("WRITE_READ ", s2));
    Step("the peer's RDMA Write and Read of our region" + tag, a == "OK", a);
    want2 = Pattern(s2, o_.size);
    Step("our region holds what the peer wrote" + tag, target_ == want2);
  }
  std::string a;
  rc::Completion c{};
  if (port_->faults().Any()) {
    const port::PortStats ps = port_->Stats();
    roce::engine::EngineLock l(&eng_->mu());
    const rc::QpCounters& k = qp_->counters;
    const uint64_t drops = ps.rx_faults.dropped + ps.tx_faults.dropped;
    const uint64_t recovered = k.retransmits + k.seq_naks_sent + k.duplicates;
    Step("injected loss was recovered by retransmits / sequence NAKs / duplicate handling",
         drops > 0 && recovered > 0,
         absl::StrCat(drops, " frames dropped; retransmits ", k.retransmits, ", seq-naks sent ",
                      k.seq_naks_sent, ", duplicates ", k.duplicates));
  }
  // 3. one remote access violation (it ends the connection: both QPs go to error).
  if (o_.bad_key == "theirs") {
    a = Ask(absl::StrCat("BAD_WRITE ", s3));
    Step("the peer's Write with a wrong rkey fails IBV_WC_REM_ACCESS_ERR", a == "OK", a);
    Step("our region untouched by it", target_ == want2);
    roce::engine::EngineLock l(&eng_->mu());
    Step("we sent a remote access NAK", qp_->counters.access_naks_sent > 0);
  } else if (o_.bad_key == "ours") {
    const std::vector<uint8_t> want3 = Pattern(s3, o_.size);
    std::copy(want3.begin(), want3.end(), src_.begin());
    c = Do(rc::WrOp::kWrite, src_, src_mr_, raddr, rkey ^ 0x80);
    Step("our Write with a wrong rkey fails with an access violation (remote access NAK)",
         c.status == rc::Status::kAccessViolation && c.cause == rc::Cause::kRemoteAccess,
         absl::StrCat(rc::StatusName(c.status), " (", rc::CauseName(c.cause), ")"));
    a = Ask(absl::StrCat("CHECK ", s1));
    Step("the peer's region untouched by it", a == "OK", a);
  }
  ctl_.Send("BYE");
  host::PollFor(*eng_, std::chrono::milliseconds(100));
  {
    roce::engine::EngineLock l(&eng_->mu());
    const rc::QpCounters& k = qp_->counters;
    std::fprintf(stderr, "rc-rdma: qp 0x%06x tx %llu rx %llu retransmits %llu seq-naks %llu/%llu duplicates %llu\n",
                 qp_->qpn(), static_cast<unsigned long long>(k.tx_packets),
                 static_cast<unsigned long long>(k.rx_packets), static_cast<unsigned long long>(k.retransmits),
                 static_cast<unsigned long long>(k.seq_naks_sent), static_cast<unsigned long long>(k.seq_naks_received),
                 static_cast<unsigned long long>(k.duplicates));
    eng_->DestroyQp(qp_);
  }
  std::printf("rc-rdma: %d steps, %d ok, %d failed\n", ok_ + failed_, ok_, failed_);
  eng_.reset();
  port_.reset();
  return failed_ ? 1 : 0;
}

bool ParseArgs(int argc, char** argv, Options* o) {
  std::vector<option> opts = {
      {"port", required_argument, nullptr, 'p'},    {"size", required_argument, nullptr, 's'},
      {"mtu", required_argument, nullptr, 'm'},     {"bad-key", required_argument, nullptr, 'b'},
      {"timeout", required_argument, nullptr, 6},   {"rounds", required_argument, nullptr, 7}};
  tools::AddHostLongOptions(&opts);
  for (;;) {
    const int c = getopt_long(argc, argv, "p:s:m:b:", opts.data(), nullptr);
    if (c == -1) break;
    switch (c) {
      case 'p': o->port = static_cast<uint16_t>(std::strtoul(optarg, nullptr, 0)); break;
      case 's': o->size = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 0)); break;
      case 'm': o->mtu = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 0)); break;
      case 'b': o->bad_key = optarg; break;
      case 6:
        o->timeout_s = std::atoi(optarg);
        if (o->timeout_s < 1) return false;
        break;
      case 7: o->rounds = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 0)); break;
      default:
        if (!tools::ParseHostOption(c, optarg, &o->host)) return false;
    }
  }
  if (optind != argc - 1) return false;
  o->server = argv[optind];
  if (o->bad_key != "ours" && o->bad_key != "theirs" && o->bad_key != "none") return false;
  switch (o->mtu) {
    case 256: case 512: case 1024: case 2048: case 4096: break;
    default: return false;
  }
  return o->size > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: %s [--profile F] [--iface I] [--ip A/L] [--set k=v]... [--capture F] [-p 18516] "
                 "[-s bytes] [-m mtu] [--bad-key ours|theirs|none] [--rounds n] [--timeout s] <peer IPv4>\n",
                 argv[0]);
    return 1;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  Rdma r(o);
  return r.Run();
}
