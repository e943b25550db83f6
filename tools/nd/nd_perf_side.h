// SPDX-License-Identifier: MIT
// nd_perf_side.h: one side of an nd-perf test (Side), server or client: connection A and the
// parameters, connection B and the pingpong_dests, the test itself (send/write/read, bandwidth
// or latency, as perftest runs each), the closing handshakes and the disconnects. Its ND2
// objects are nd_perf_nd2.h's, the exchange nd_perf_comm.h's, the printing nd_perf_report.h's.
// Part of nd-perf's one translation unit (nd_perf.cc).
#pragma once

#include <endian.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "nd_common.h"  // SleepMs
#include "nd_perf_comm.h"
#include "nd_perf_nd2.h"
#include "nd_perf_options.h"
#include "nd_perf_report.h"

namespace ndperf {

inline double NowUs() { return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count(); }

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

}  // namespace ndperf
