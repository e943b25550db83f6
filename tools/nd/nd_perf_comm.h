// SPDX-License-Identifier: MIT
// nd_perf_comm.h: perftest's -R "communication" exchange as nd-perf speaks it: the 56-byte
// pingpong_dest on the wire (Dest) and connection A (Comm), on which the client sends each
// message first and the server answers with its own (the parameters, the handshakes around
// connection B and after the test, the bandwidth reports). The layout of the whole exchange is
// at the top of nd_perf.cc. Part of nd-perf's one translation unit (nd_perf.cc).
#pragma once

#include <endian.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <utility>

#include "nd_perf_nd2.h"

namespace ndperf {

constexpr size_t kDestLen = 56;            // sizeof(struct pingpong_dest)

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

}  // namespace ndperf
