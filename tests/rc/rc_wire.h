// SPDX-License-Identifier: MIT
// Wire capture for RC tests: installs itself as the SimNetwork filter, parses
// every frame a node sends (with roce::wire::ParseRoceFrame, ICRC checked)
// and records what the tests assert on — sender, virtual send time, opcode,
// PSN, DestQP, AckReq, AETH syndrome and MSN, RETH, BECN, ECN, payload
// length. A test may drop frames (`drop`) or rewrite them (`modify`, with
// Rewrite re-serializing the frame so the ICRC and lengths stay valid).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stack/wire/packet.h"
#include "tests/rc/rc_harness.h"
#include "stack/wire/psn.h"
#include "tools/lib/sim_link.h"

namespace roce::rc::testing {

struct Frame {
  uint64_t t = 0;     // virtual time the sender handed it to the link
  int from = -1;      // sending node id (0 = a, 1 = b in RcPair)
  bool parsed = false;
  bool dropped = false;
  uint8_t opcode = 0;
  uint32_t psn = 0, dest_qp = 0;
  bool ack_req = false, becn = false, se = false;
  uint8_t ecn = 0;
  bool has_aeth = false;
  uint8_t syndrome = 0;
  uint32_t msn = 0;
  bool has_reth = false;
  uint64_t va = 0;
  uint32_t rkey = 0, dma_len = 0;
  bool has_ieth = false;
  uint32_t ieth = 0;
  uint32_t payload_len = 0;
  size_t frame_len = 0;
  std::string ToString() const {
    char b[200];
    std::snprintf(b, sizeof b, "t=%llu from=%d %s psn=%06x qp=%06x%s len=%u syn=%02x msn=%u",
                  static_cast<unsigned long long>(t), from, wire::OpcodeName(opcode), psn, dest_qp,
                  ack_req ? " A" : "", payload_len, syndrome, msn);
    return b;
  }
};

inline bool IsReadResponse(uint8_t op) {
  return op >= wire::op::kRcReadResponseFirst && op <= wire::op::kRcReadResponseOnly;
}
inline bool EndsReadResponse(uint8_t op) {
  return op == wire::op::kRcReadResponseLast || op == wire::op::kRcReadResponseOnly;
}
inline bool IsRequest(uint8_t op) { return wire::GetOpcodeInfo(op).request; }

// Shorthands every RC wire test uses: node ids of RcPair, and ACK/NAK tests.
using wire::PsnAdd;
namespace op = wire::op;
namespace syn = wire::syndrome;
constexpr int kA = 0, kB = 1;

inline bool IsAck(const Frame& f) { return f.opcode == op::kRcAck && f.syndrome == syn::Ack(); }
inline bool IsNak(const Frame& f, uint8_t code) {
  return f.opcode == op::kRcAck && f.has_aeth && f.syndrome == syn::Nak(code);
}
inline bool IsSeqNak(const Frame& f) { return IsNak(f, syn::kNakPsnSeqError); }
inline bool IsRnrNak(const Frame& f) {
  return f.opcode == op::kRcAck && f.has_aeth && syn::Type(f.syndrome) == syn::kTypeRnr;
}

class WireLog {
 public:
  explicit WireLog(sim::SimNetwork& net) : net_(net) {
    net_.filter = [this](const sim::SimNode& from, std::vector<uint8_t>& frame) {
      return OnFrame(from, frame);
    };
  }
  ~WireLog() { net_.filter = nullptr; }
  WireLog(const WireLog&) = delete;
  WireLog& operator=(const WireLog&) = delete;

  // Return true to drop the frame (it is still recorded, marked dropped).
  std::function<bool(const Frame&)> drop;
  // May rewrite the frame (use Rewrite); runs before `drop`.
  std::function<void(const Frame&, std::vector<uint8_t>&)> modify;

  std::vector<Frame> frames;

  std::vector<Frame> Where(const std::function<bool(const Frame&)>& pred) const {
    std::vector<Frame> v;
    for (const Frame& f : frames)
      if (pred(f)) v.push_back(f);
    return v;
  }
  std::vector<Frame> From(int node) const {
    return Where([&](const Frame& f) { return f.from == node; });
  }
  size_t Count(const std::function<bool(const Frame&)>& pred) const { return Where(pred).size(); }
  // Frames `node` sent with opcode `op`.
  std::vector<Frame> Op(int node, uint8_t op) const {
    return Where([&](const Frame& f) { return f.from == node && f.opcode == op; });
  }
  void Dump(FILE* out = stderr) const {
    for (const Frame& f : frames) std::fprintf(out, "  %s%s\n", f.ToString().c_str(), f.dropped ? " DROPPED" : "");
  }

  static Frame Parse(const std::vector<uint8_t>& frame, uint64_t t, int from) {
    Frame f;
    f.t = t;
    f.from = from;
    f.frame_len = frame.size();
    wire::RocePacket p;
    if (wire::ParseRoceFrame(frame, &p) != wire::Error::kOk) return f;
    f.parsed = true;
    f.opcode = p.bth.opcode;
    f.psn = p.bth.psn;
    f.dest_qp = p.bth.dest_qp;
    f.ack_req = p.bth.ack_req;
    f.becn = p.bth.becn;
    f.se = p.bth.se;
    f.ecn = p.Ecn();
    f.payload_len = static_cast<uint32_t>(p.payload.size());
    if (p.Has(wire::kHdrAeth)) {
      f.has_aeth = true;
      f.syndrome = p.aeth.syndrome;
      f.msn = p.aeth.msn;
    }
    if (p.Has(wire::kHdrReth)) {
      f.has_reth = true;
      f.va = p.reth.va;
      f.rkey = p.reth.rkey;
      f.dma_len = p.reth.dma_length;
    }
    if (p.Has(wire::kHdrIeth)) {
      f.has_ieth = true;
      f.ieth = p.ieth_rkey;
    }
    return f;
  }

  // Parses `frame`, lets `mutate` change the packet (headers; the payload is
  // kept), and re-serializes it with valid lengths, IP checksum and ICRC.
  static bool Rewrite(std::vector<uint8_t>& frame,
                      const std::function<void(wire::RocePacket&)>& mutate) {
    wire::RocePacket p;
    if (wire::ParseRoceFrame(frame, &p) != wire::Error::kOk) return false;
    std::vector<uint8_t> payload(p.payload.begin(), p.payload.end());
    mutate(p);
    p.payload = wire::ByteSpan(payload.data(), payload.size());
    std::vector<uint8_t> out(wire::FrameLen(p, static_cast<uint32_t>(payload.size())));
    const size_t n = wire::BuildRoceFrame(p, wire::MutByteSpan(out.data(), out.size()));
    if (n == 0) return false;
    out.resize(n);
    frame.swap(out);
    return true;
  }

 private:
  bool OnFrame(const sim::SimNode& from, std::vector<uint8_t>& frame) {
    Frame f = Parse(frame, net_.now(), from.id());
    EXPECT_TRUE(f.parsed) << "a node sent a frame that does not parse";
    if (modify) {
      modify(f, frame);
      const uint64_t t = f.t;
      f = Parse(frame, t, from.id());
    }
    f.dropped = drop && drop(f);
    frames.push_back(f);
    return !f.dropped;
  }

  sim::SimNetwork& net_;
};

// Drops the first `times` transmissions of the frames `pred` selects.
inline std::function<bool(const Frame&)> DropFirst(std::function<bool(const Frame&)> pred,
                                                   int times = 1) {
  auto left = std::make_shared<int>(times);
  return [pred = std::move(pred), left](const Frame& f) {
    if (*left > 0 && pred(f)) {
      --*left;
      return true;
    }
    return false;
  };
}

// Drops only the `n`th (1-based) frame `pred` selects.
inline std::function<bool(const Frame&)> DropNth(std::function<bool(const Frame&)> pred, int n) {
  auto seen = std::make_shared<int>(0);
  return [pred = std::move(pred), seen, n](const Frame& f) { return pred(f) && ++*seen == n; };
}
// Drops a frame if any of the predicates does (each keeps its own state).
inline std::function<bool(const Frame&)> DropAny(std::vector<std::function<bool(const Frame&)>> ps) {
  return [ps = std::move(ps)](const Frame& f) {
    bool d = false;
    for (const auto& p : ps) d = p(f) || d;  // every predicate sees every frame
    return d;
  };
}

// The bytes of a buffer (the guard zones are checked with GuardsIntact).
inline std::vector<uint8_t> Snapshot(Buffer& b) {
  return std::vector<uint8_t>(b.data(), b.data() + b.size());
}
inline bool SameBytes(Buffer& b, const std::vector<uint8_t>& snap) {
  return b.size() == snap.size() && std::memcmp(b.data(), snap.data(), snap.size()) == 0 &&
         b.GuardsIntact();
}

struct Expect {
  uint64_t ctx;
  Status status;
  Cause cause = Cause::kNone;  // kNone: not checked (unless status is success)
};
// Completions in this exact order with these statuses (and causes).
inline void ExpectCompletions(const std::vector<Completion>& got, const std::vector<Expect>& want,
                              const char* what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); i++) {
    EXPECT_EQ(got[i].request_context, want[i].ctx) << what << " #" << i;
    EXPECT_EQ(got[i].status, want[i].status)
        << what << " #" << i << ": " << StatusName(got[i].status) << " vs " << StatusName(want[i].status);
    if (want[i].cause != Cause::kNone || want[i].status == Status::kSuccess) {
      EXPECT_EQ(got[i].cause, want[i].cause)
          << what << " #" << i << ": " << CauseName(got[i].cause) << " vs " << CauseName(want[i].cause);
    }
  }
}

// One RDMA Read by p.a of `n` bytes of b's buffer into a's (the set-up most
// Read tests share): `target` filled from `seed`, registered with
// `target_access`; psn0 is the Read's first PSN once posted (set at
// construction: post nothing else before Post).
struct ReadOfTarget {
  RcPair& p;
  Buffer sink, target;
  mem::RegionInfo kr, tr;
  uint32_t psn0;
  Sge ks;
  ReadOfTarget(RcPair& pair, uint32_t n, uint8_t seed, uint32_t target_access = mem::kRemoteRead)
      : p(pair), sink(n, 1), target(n, 2) {
    target.Fill(seed);
    kr = p.a.Register(sink, mem::kLocalWrite);
    tr = p.b.Register(target, target_access);
    psn0 = p.a.qp->next_psn();
    ks = Sge{sink.addr(), n, kr.local_token};
  }
  void Post(uint64_t ctx = 1) {
    ASSERT_EQ(p.a.qp->PostSend(MakeRdma(ctx, WrOp::kRead, &ks, 1, target.addr(), tr.remote_token)),
              PostResult::kOk);
  }
  // Runs until the Read completes and the link is idle; it must have
  // succeeded with the target's bytes in the sink and nothing around it touched.
  void ExpectDone(uint64_t ctx = 1) {
    ASSERT_TRUE(p.RunForSend(p.a, 1));
    p.RunIdle();
    ExpectCompletions(p.a.PollSend(), {{ctx, Status::kSuccess}});
    EXPECT_EQ(0, std::memcmp(sink.data(), target.data(), sink.size()));
    EXPECT_TRUE(sink.GuardsIntact());
  }
};

}  // namespace roce::rc::testing
