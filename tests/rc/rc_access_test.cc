// SPDX-License-Identifier: MIT
// Remote access violations: wrong / guessed / local tokens, windows
// invalidated locally (Invalidate on the owner's QP) and remotely
// (SEND_WITH_INVALIDATE), one byte past the end of a region and of a window,
// missing rights, deregistered regions. Each one: ACCESS_VIOLATION at the
// initiator (remote access NAK on the wire), the target byte-identical
// (whole buffer and guards), the initiator's later WQEs flushed CANCELED in
// order, the responder's posted receives flushed CANCELED and its QP in Error.
#include <algorithm>

#include "tests/rc/rc_wire.h"

namespace roce::rc::testing {
namespace {

constexpr size_t kTarget = 4096;

struct AccessRig {
  RcPair p;
  WireLog w{p.net()};
  Buffer src{kTarget, 1}, sink{kTarget, 2}, target{kTarget, 3}, recv{2048, 4};
  mem::RegionInfo sr, kr, tr, rr;
  uint64_t b_ctx = 1000;

  explicit AccessRig(uint32_t target_access = mem::kLocalWrite | mem::kRemoteWrite | mem::kRemoteRead)
      : p(Options()) {
    src.Fill(11);
    sr = p.a.Register(src, 0);
    kr = p.a.Register(sink, mem::kLocalWrite);
    tr = p.b.Register(target, target_access);
    rr = p.b.Register(recv, mem::kLocalWrite);
  }
  static PairOptions Options() {
    PairOptions o;
    o.attr.path_mtu = 1024;
    return o;
  }

  // Binds a new window over [addr, addr+len) of `region` at b; returns its token.
  uint32_t BindWindow(uint32_t region, uint64_t addr, uint64_t len, uint32_t access,
                      uint32_t* mw_out = nullptr) {
    uint32_t mw = 0;
    EXPECT_EQ(p.b.mem().CreateWindow(&mw), mem::Result::kOk);
    const uint32_t tok = p.b.mem().AllocateWindowToken(mw);
    SendWr wr;
    wr.context = b_ctx++;
    wr.op = WrOp::kBind;
    wr.mw = mw;
    wr.mr = region;
    wr.bind_addr = addr;
    wr.bind_length = len;
    wr.bind_access = access;
    wr.bind_token = tok;
    EXPECT_EQ(p.b.qp->PostSend(wr), PostResult::kOk);
    EXPECT_TRUE(p.RunForSend(p.b, 1));
    auto c = p.b.PollSend();
    EXPECT_EQ(c.size(), 1u);
    if (!c.empty()) {
      EXPECT_EQ(c[0].status, Status::kSuccess);
      EXPECT_EQ(c[0].type, RequestType::kBind);
    }
    if (mw_out) *mw_out = mw;
    return tok;
  }

  // A Write or Read from a that must succeed (to show a token works before it is revoked).
  void RemoteOk(WrOp o, uint64_t addr, uint32_t len, uint32_t rkey) {
    Sge s = o == WrOp::kRead ? Sge{sink.addr(), len, kr.local_token} : Sge{src.addr(), len, sr.local_token};
    ASSERT_EQ(p.a.qp->PostSend(MakeRdma(77, o, &s, 1, addr, rkey)), PostResult::kOk);
    ASSERT_TRUE(p.RunForSend(p.a, 1));
    ExpectCompletions(p.a.PollSend(), {{77, Status::kSuccess}}, "setup access");
  }

  // Posts the offending request first, then a Send, a valid Write into the
  // same target and a Read; b has two receives posted. Asserts everything the
  // file comment promises.
  void ExpectViolation(WrOp o, uint64_t addr, uint32_t len, uint32_t rkey) {
    Sge r0{recv.addr(), 1024, rr.local_token}, r1{recv.addr() + 1024, 1024, rr.local_token};
    ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100, &r0, 1)), PostResult::kOk);
    ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(101, &r1, 1)), PostResult::kOk);
    const auto target_before = Snapshot(target), recv_before = Snapshot(recv),
               sink_before = Snapshot(sink);
    const auto acc_sent = p.b.qp->counters.access_naks_sent;
    const auto acc_recv = p.a.qp->counters.access_naks_received;
    const size_t frames_before = w.frames.size();
    const uint32_t bad_psn = p.a.qp->next_psn();

    Sge bs = o == WrOp::kRead ? Sge{sink.addr(), len, kr.local_token} : Sge{src.addr(), len, sr.local_token};
    ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, o, &bs, 1, addr, rkey)), PostResult::kOk);
    Sge ss{src.addr(), 64, sr.local_token};
    ASSERT_EQ(p.a.qp->PostSend(MakeSend(2, &ss, 1)), PostResult::kOk);
    ASSERT_EQ(p.a.qp->PostSend(MakeRdma(3, WrOp::kWrite, &ss, 1, target.addr(), tr.remote_token)),
              PostResult::kOk);
    Sge ks{sink.addr(), 64, kr.local_token};
    ASSERT_EQ(p.a.qp->PostSend(MakeRdma(4, WrOp::kRead, &ks, 1, target.addr(), tr.remote_token)),
              PostResult::kOk);
    ASSERT_TRUE(p.RunForSend(p.a, 4));
    p.RunIdle();

    ExpectCompletions(p.a.PollSend(), {{1, Status::kAccessViolation, Cause::kRemoteAccess},
                                       {2, Status::kCanceled, Cause::kFlushed},
                                       {3, Status::kCanceled, Cause::kFlushed},
                                       {4, Status::kCanceled, Cause::kFlushed}},
                      "initiator");
    ExpectCompletions(p.b.PollRecv(), {{100, Status::kCanceled, Cause::kFlushed},
                                       {101, Status::kCanceled, Cause::kFlushed}},
                      "responder receives");
    EXPECT_EQ(p.a.qp->state(), QpState::kError);
    EXPECT_EQ(p.b.qp->state(), QpState::kError);
    EXPECT_TRUE(SameBytes(target, target_before)) << "target memory changed";
    EXPECT_TRUE(SameBytes(recv, recv_before)) << "receive memory changed";
    EXPECT_TRUE(SameBytes(sink, sink_before)) << "read sink changed";
    EXPECT_EQ(p.b.qp->counters.access_naks_sent, acc_sent + 1);
    EXPECT_EQ(p.a.qp->counters.access_naks_received, acc_recv + 1);
    std::vector<Frame> naks;
    for (size_t i = frames_before; i < w.frames.size(); i++) {
      const Frame& f = w.frames[i];
      if (f.from == kB && f.opcode == op::kRcAck) naks.push_back(f);
      // Nothing but the NAK comes back: no read response, no ACK.
      if (f.from == kB) {
        EXPECT_EQ(f.opcode, op::kRcAck) << f.ToString();
      }
    }
    ASSERT_EQ(naks.size(), 1u);
    EXPECT_EQ(naks[0].syndrome, syn::Nak(syn::kNakRemoteAccess));
    EXPECT_EQ(naks[0].psn, bad_psn);
    EXPECT_EQ(naks[0].dest_qp, p.a.qp->qpn());
    // Later requests from a reach b but are not executed (b drops them).
    const auto first_bad = std::find_if(w.frames.begin() + static_cast<long>(frames_before),
                                        w.frames.end(), [](const Frame& f) { return f.from == kA; });
    ASSERT_NE(first_bad, w.frames.end());
    EXPECT_EQ(first_bad->psn, bad_psn);
    EXPECT_EQ(first_bad->opcode, o == WrOp::kRead ? op::kRcReadRequest : len <= 1024 ? op::kRcWriteOnly
                                                                                     : op::kRcWriteFirst);
  }
};

TEST(RcAccess, WrongKey) {
  AccessRig s;
  const uint32_t bad = (s.tr.remote_token & ~mem::kKeyMask) | ((s.tr.remote_token + 1) & mem::kKeyMask);
  s.ExpectViolation(WrOp::kWrite, s.target.addr(), 100, bad);
}

TEST(RcAccess, WrongIndex) {
  AccessRig s;
  s.ExpectViolation(WrOp::kRead, s.target.addr(), 100, s.tr.remote_token + (1u << mem::kKeyBits));
}

TEST(RcAccess, TokenZero) {
  AccessRig s;
  s.ExpectViolation(WrOp::kWrite, s.target.addr(), 100, 0);
}

TEST(RcAccess, LocalTokenUsedRemotely) {
  AccessRig s;
  s.RemoteOk(WrOp::kWrite, s.target.addr(), 100, s.tr.remote_token);
  s.ExpectViolation(WrOp::kWrite, s.target.addr(), 100, s.tr.local_token);
}

TEST(RcAccess, LocalTokenUsedRemotelyForRead) {
  AccessRig s;
  s.ExpectViolation(WrOp::kRead, s.target.addr(), 100, s.tr.local_token);
}

TEST(RcAccess, WindowAfterLocalInvalidate) {
  AccessRig s;
  uint32_t mw;
  const uint32_t tok = s.BindWindow(s.tr.handle, s.target.addr() + 512, 1024,
                                    mem::kRemoteRead | mem::kRemoteWrite, &mw);
  s.RemoteOk(WrOp::kWrite, s.target.addr() + 512, 1024, tok);
  s.RemoteOk(WrOp::kRead, s.target.addr() + 512, 1024, tok);
  // b invalidates the window through its own QP (in order, completes in its CQ).
  SendWr inv;
  inv.context = 555;
  inv.op = WrOp::kInvalidate;
  inv.mw = mw;
  ASSERT_EQ(s.p.b.qp->PostSend(inv), PostResult::kOk);
  ASSERT_TRUE(s.p.RunForSend(s.p.b, 1));
  auto c = s.p.b.PollSend();
  ExpectCompletions(c, {{555, Status::kSuccess}});
  EXPECT_EQ(c[0].type, RequestType::kInvalidate);
  s.ExpectViolation(WrOp::kWrite, s.target.addr() + 512, 100, tok);
}

TEST(RcAccess, WindowAfterLocalInvalidateRead) {
  AccessRig s;
  uint32_t mw;
  const uint32_t tok = s.BindWindow(s.tr.handle, s.target.addr(), 1024, mem::kRemoteRead, &mw);
  s.RemoteOk(WrOp::kRead, s.target.addr(), 1024, tok);
  SendWr inv;
  inv.context = 555;
  inv.op = WrOp::kInvalidate;
  inv.mw = mw;
  ASSERT_EQ(s.p.b.qp->PostSend(inv), PostResult::kOk);
  ASSERT_TRUE(s.p.RunForSend(s.p.b, 1));
  ExpectCompletions(s.p.b.PollSend(), {{555, Status::kSuccess}});
  s.ExpectViolation(WrOp::kRead, s.target.addr(), 1024, tok);
}

TEST(RcAccess, WindowAfterRemoteInvalidate) {
  AccessRig s;
  const uint32_t tok = s.BindWindow(s.tr.handle, s.target.addr() + 1000, 2000,
                                    mem::kRemoteRead | mem::kRemoteWrite);
  s.RemoteOk(WrOp::kWrite, s.target.addr() + 1000, 2000, tok);
  // SEND_WITH_INVALIDATE of the window's token.
  Sge r{s.recv.addr(), 64, s.rr.local_token};
  ASSERT_EQ(s.p.b.qp->PostRecv(MakeRecv(50, &r, 1)), PostResult::kOk);
  Sge ss{s.src.addr(), 32, s.sr.local_token};
  SendWr si = MakeSend(51, &ss, 1, WrOp::kSendWithInvalidate);
  si.invalidate_rkey = tok;
  ASSERT_EQ(s.p.a.qp->PostSend(si), PostResult::kOk);
  ASSERT_TRUE(s.p.RunForSend(s.p.a, 1));
  ExpectCompletions(s.p.a.PollSend(), {{51, Status::kSuccess}});
  auto rc = s.p.b.PollRecv();
  ExpectCompletions(rc, {{50, Status::kSuccess}});
  EXPECT_TRUE(rc[0].with_inv);
  EXPECT_EQ(rc[0].inv_rkey, tok);
  EXPECT_EQ(rc[0].bytes, 32u);
  auto inv = s.w.Op(kA, op::kRcSendOnlyInv);
  ASSERT_EQ(inv.size(), 1u);
  EXPECT_TRUE(inv[0].has_ieth);
  EXPECT_EQ(inv[0].ieth, tok);
  s.ExpectViolation(WrOp::kWrite, s.target.addr() + 1000, 2000, tok);
}

TEST(RcAccess, OneBytePastRegionEndWrite) {
  AccessRig s;
  s.RemoteOk(WrOp::kWrite, s.target.addr() + kTarget - 100, 100, s.tr.remote_token);  // up to the end: fine
  s.ExpectViolation(WrOp::kWrite, s.target.addr() + kTarget - 100, 101, s.tr.remote_token);
}

TEST(RcAccess, OneBytePastRegionEndMultiPacketWrite) {
  AccessRig s;
  s.ExpectViolation(WrOp::kWrite, s.target.addr() + 1, kTarget, s.tr.remote_token);
}

TEST(RcAccess, OneBytePastRegionEndRead) {
  AccessRig s;
  s.RemoteOk(WrOp::kRead, s.target.addr(), kTarget, s.tr.remote_token);
  s.ExpectViolation(WrOp::kRead, s.target.addr() + 1, kTarget, s.tr.remote_token);
}

TEST(RcAccess, OneByteBeforeRegionStart) {
  AccessRig s;
  s.ExpectViolation(WrOp::kWrite, s.target.addr() - 1, 10, s.tr.remote_token);
}

TEST(RcAccess, OneBytePastWindowEndWrite) {
  AccessRig s;
  const uint64_t ws = s.target.addr() + 256;
  const uint32_t tok = s.BindWindow(s.tr.handle, ws, 512, mem::kRemoteRead | mem::kRemoteWrite);
  s.RemoteOk(WrOp::kWrite, ws + 412, 100, tok);
  // Inside the region, one byte past the window.
  s.ExpectViolation(WrOp::kWrite, ws + 412, 101, tok);
}

TEST(RcAccess, OneBytePastWindowEndRead) {
  AccessRig s;
  const uint64_t ws = s.target.addr() + 256;
  const uint32_t tok = s.BindWindow(s.tr.handle, ws, 512, mem::kRemoteRead);
  s.RemoteOk(WrOp::kRead, ws, 512, tok);
  s.ExpectViolation(WrOp::kRead, ws, 513, tok);
}

TEST(RcAccess, OneByteBeforeWindowStart) {
  AccessRig s;
  const uint64_t ws = s.target.addr() + 256;
  const uint32_t tok = s.BindWindow(s.tr.handle, ws, 512, mem::kRemoteRead | mem::kRemoteWrite);
  s.ExpectViolation(WrOp::kWrite, ws - 1, 2, tok);
}

TEST(RcAccess, WriteToReadOnlyWindow) {
  AccessRig s;
  const uint32_t tok = s.BindWindow(s.tr.handle, s.target.addr(), kTarget, mem::kRemoteRead);
  s.RemoteOk(WrOp::kRead, s.target.addr(), 64, tok);
  s.ExpectViolation(WrOp::kWrite, s.target.addr(), 64, tok);
}

TEST(RcAccess, ReadFromWriteOnlyWindow) {
  AccessRig s;
  const uint32_t tok = s.BindWindow(s.tr.handle, s.target.addr(), kTarget, mem::kRemoteWrite);
  s.RemoteOk(WrOp::kWrite, s.target.addr(), 64, tok);
  s.ExpectViolation(WrOp::kRead, s.target.addr(), 64, tok);
}

TEST(RcAccess, ReadWithoutRemoteRead) {
  AccessRig s(mem::kLocalWrite | mem::kRemoteWrite);
  s.RemoteOk(WrOp::kWrite, s.target.addr(), 64, s.tr.remote_token);
  s.ExpectViolation(WrOp::kRead, s.target.addr(), 64, s.tr.remote_token);
}

TEST(RcAccess, WriteWithoutRemoteWrite) {
  AccessRig s(mem::kLocalWrite | mem::kRemoteRead);
  s.RemoteOk(WrOp::kRead, s.target.addr(), 64, s.tr.remote_token);
  s.ExpectViolation(WrOp::kWrite, s.target.addr(), 64, s.tr.remote_token);
}

TEST(RcAccess, DeregisteredRegion) {
  AccessRig s;
  mem::RegionInfo r2;
  ASSERT_EQ(s.p.b.mem().RegisterRegion(s.target.addr(), kTarget,
                                       mem::kLocalWrite | mem::kRemoteWrite | mem::kRemoteRead, &r2),
            mem::Result::kOk);
  s.RemoteOk(WrOp::kWrite, s.target.addr(), 64, r2.remote_token);
  ASSERT_EQ(s.p.b.mem().DeregisterRegion(r2.handle), mem::Result::kOk);
  s.ExpectViolation(WrOp::kWrite, s.target.addr(), 64, r2.remote_token);
}

TEST(RcAccess, DeregisteredRegionRead) {
  AccessRig s;
  mem::RegionInfo r2;
  ASSERT_EQ(s.p.b.mem().RegisterRegion(s.target.addr(), kTarget, mem::kRemoteRead, &r2),
            mem::Result::kOk);
  s.RemoteOk(WrOp::kRead, s.target.addr(), 64, r2.remote_token);
  ASSERT_EQ(s.p.b.mem().DeregisterRegion(r2.handle), mem::Result::kOk);
  s.ExpectViolation(WrOp::kRead, s.target.addr(), 64, r2.remote_token);
}

// Deregister is refused while a window is bound to the region, and the
// window keeps working.
TEST(RcAccess, DeregisterRefusedWhileWindowBound) {
  AccessRig s;
  const uint32_t tok = s.BindWindow(s.tr.handle, s.target.addr(), 128, mem::kRemoteWrite);
  EXPECT_EQ(s.p.b.mem().DeregisterRegion(s.tr.handle), mem::Result::kBusy);
  s.RemoteOk(WrOp::kWrite, s.target.addr(), 128, tok);
}

// The NAK names the failing request's PSN: with an older Read still
// unanswered (its response lost), the error lands on the Write the NAK
// names; the Read, never answered, is flushed.
TEST(RcAccess, NakFailsTheRequestItNamesNotTheOldest) {
  AccessRig s;
  s.w.drop = [](const Frame& f) { return IsReadResponse(f.opcode); };
  const uint32_t psn0 = s.p.a.qp->next_psn();
  Sge ks{s.sink.addr(), 64, s.kr.local_token}, ss{s.src.addr(), 64, s.sr.local_token};
  ASSERT_EQ(s.p.a.qp->PostSend(MakeRdma(1, WrOp::kRead, &ks, 1, s.target.addr(), s.tr.remote_token)),
            PostResult::kOk);
  ASSERT_EQ(s.p.a.qp->PostSend(MakeRdma(2, WrOp::kWrite, &ss, 1, s.target.addr(), s.tr.remote_token ^ 3)),
            PostResult::kOk);
  ASSERT_TRUE(s.p.RunForSend(s.p.a, 2));
  ExpectCompletions(s.p.a.PollSend(), {{1, Status::kCanceled, Cause::kFlushed},
                                       {2, Status::kAccessViolation, Cause::kRemoteAccess}});
  auto naks = s.w.Where([](const Frame& f) { return f.from == kB && f.opcode == op::kRcAck; });
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].psn, PsnAdd(psn0, 1));
}

// Deregister (or Invalidate) between the packets of one multi-packet Write:
// once Deregister has returned, the application may reuse or unmap the
// memory, so no later packet of the Write may land in it. The access check
// of the FIRST packet is not enough.
void RevokeDuringWrite(bool window) {
  AccessRig s;
  mem::RegionInfo r2;
  ASSERT_EQ(s.p.b.mem().RegisterRegion(s.target.addr(), kTarget,
                                       mem::kLocalWrite | mem::kRemoteWrite, &r2),
            mem::Result::kOk);
  uint32_t mw = 0, rkey = r2.remote_token;
  if (window) rkey = s.BindWindow(r2.handle, s.target.addr(), kTarget, mem::kRemoteWrite, &mw);
  const uint32_t psn0 = s.p.a.qp->next_psn();
  Sge ss{s.src.addr(), static_cast<uint32_t>(kTarget), s.sr.local_token};  // 4 packets
  ASSERT_EQ(s.p.a.qp->PostSend(MakeRdma(1, WrOp::kWrite, &ss, 1, s.target.addr(), rkey)),
            PostResult::kOk);
  // Run until b has placed the first packet only.
  ASSERT_TRUE(s.p.net().RunUntil([&] { return s.p.b.qp->expected_psn() != psn0; },
                                 s.p.net().now() + 1'000'000));
  ASSERT_EQ(s.p.b.qp->expected_psn(), PsnAdd(psn0, 1));
  if (window) {
    ASSERT_EQ(s.p.b.mem().InvalidateWindow(mw), mem::Result::kOk);
  } else {
    ASSERT_EQ(s.p.b.mem().DeregisterRegion(r2.handle), mem::Result::kOk);
  }
  // The application reuses the memory.
  memset(s.target.data() + 1024, 0x5A, kTarget - 1024);
  const auto after = Snapshot(s.target);
  ASSERT_TRUE(s.p.RunForSend(s.p.a, 1));
  s.p.RunIdle();
  EXPECT_TRUE(SameBytes(s.target, after)) << "packets of the Write landed after the "
                                          << (window ? "window was invalidated" : "region was deregistered");
  auto c = s.p.a.PollSend();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, Status::kAccessViolation) << StatusName(c[0].status);
}

TEST(RcAccess, DeregisterDuringMultiPacketWrite) { RevokeDuringWrite(false); }
TEST(RcAccess, InvalidateWindowDuringMultiPacketWrite) { RevokeDuringWrite(true); }

// The same for a multi-packet Send whose posted receive lies in a region the
// receiver deregisters after the first packet: the rest must not land, and
// the receive fails like a receive with a bad token (local protection,
// remote operational error NAK).
TEST(RcAccess, DeregisterReceiveBufferDuringMultiPacketSend) {
  AccessRig s;
  mem::RegionInfo r2;
  ASSERT_EQ(s.p.b.mem().RegisterRegion(s.target.addr(), kTarget, mem::kLocalWrite, &r2),
            mem::Result::kOk);
  Sge rs{s.target.addr(), static_cast<uint32_t>(kTarget), r2.local_token};
  ASSERT_EQ(s.p.b.qp->PostRecv(MakeRecv(100, &rs, 1)), PostResult::kOk);
  const uint32_t psn0 = s.p.a.qp->next_psn();
  Sge ss{s.src.addr(), static_cast<uint32_t>(kTarget), s.sr.local_token};  // 4 packets
  ASSERT_EQ(s.p.a.qp->PostSend(MakeSend(1, &ss, 1)), PostResult::kOk);
  ASSERT_TRUE(s.p.net().RunUntil([&] { return s.p.b.qp->expected_psn() != psn0; },
                                 s.p.net().now() + 1'000'000));
  ASSERT_EQ(s.p.b.qp->expected_psn(), PsnAdd(psn0, 1));
  ASSERT_EQ(s.p.b.mem().DeregisterRegion(r2.handle), mem::Result::kOk);
  memset(s.target.data() + 1024, 0x5A, kTarget - 1024);
  const auto after = Snapshot(s.target);
  ASSERT_TRUE(s.p.RunForSend(s.p.a, 1));
  s.p.RunIdle();
  EXPECT_TRUE(SameBytes(s.target, after)) << "packets of the Send landed after the region was deregistered";
  ExpectCompletions(s.p.a.PollSend(), {{1, Status::kRemoteError, Cause::kRemoteOperational}});
  ExpectCompletions(s.p.b.PollRecv(), {{100, Status::kAccessViolation, Cause::kLocalProtection}});
}

// The requester side of the same rule: a Read's sink region deregistered
// while responses are still arriving. The rest must not land in it.
TEST(RcAccess, DeregisterReadSinkWhileResponsesArrive) {
  AccessRig s;
  mem::RegionInfo r2;
  ASSERT_EQ(s.p.a.mem().RegisterRegion(s.sink.addr(), kTarget, mem::kLocalWrite, &r2), mem::Result::kOk);
  Sge ks{s.sink.addr(), static_cast<uint32_t>(kTarget), r2.local_token};  // 4 responses
  ASSERT_EQ(s.p.a.qp->PostSend(MakeRdma(1, WrOp::kRead, &ks, 1, s.target.addr(), s.tr.remote_token)),
            PostResult::kOk);
  ASSERT_TRUE(s.p.net().RunUntil([&] { return s.p.a.qp->counters.rx_packets >= 1; },
                                 s.p.net().now() + 1'000'000));
  ASSERT_EQ(s.p.a.qp->counters.rx_packets, 1u);
  ASSERT_EQ(s.p.a.mem().DeregisterRegion(r2.handle), mem::Result::kOk);
  memset(s.sink.data() + 1024, 0x5A, kTarget - 1024);
  const auto after = Snapshot(s.sink);
  ASSERT_TRUE(s.p.RunForSend(s.p.a, 1));
  s.p.RunIdle();
  EXPECT_TRUE(SameBytes(s.sink, after)) << "read responses landed after the sink was deregistered";
  ExpectCompletions(s.p.a.PollSend(), {{1, Status::kAccessViolation, Cause::kLocalProtection}});
}

// The requester's source: a Write whose second packet is lost, with the source
// region deregistered before the go-back-N retransmission. The retransmission
// must not read the deregistered memory: the Write fails with a local
// protection error, nothing more of it reaches the wire, the QP flushes.
TEST(RcAccess, DeregisterWriteSourceBeforeRetransmit) {
  AccessRig s;
  mem::RegionInfo r2;
  ASSERT_EQ(s.p.a.mem().RegisterRegion(s.src.addr(), kTarget, 0, &r2), mem::Result::kOk);
  const uint32_t psn0 = s.p.a.qp->next_psn();
  bool dropped = false;
  s.w.drop = [&](const Frame& f) {
    if (dropped || f.from != 0 || f.psn != PsnAdd(psn0, 1)) return false;
    return dropped = true;
  };
  memset(s.target.data(), 0, kTarget);
  Sge ss{s.src.addr(), static_cast<uint32_t>(kTarget), r2.local_token};  // 4 packets at MTU 1024
  ASSERT_EQ(s.p.a.qp->PostSend(MakeRdma(1, WrOp::kWrite, &ss, 1, s.target.addr(), s.tr.remote_token)),
            PostResult::kOk);
  ASSERT_EQ(s.p.a.qp->PostSend(MakeRdma(2, WrOp::kWrite, &ss, 1, s.target.addr(), s.tr.remote_token)),
            PostResult::kOk);  // flushed behind it
  // Wait until all four packets went out once and b answered the gap.
  ASSERT_TRUE(s.p.net().RunUntil([&] { return s.w.From(0).size() >= 4 && s.w.From(1).size() >= 1; },
                                 s.p.net().now() + 1'000'000));
  ASSERT_TRUE(dropped);
  ASSERT_EQ(s.p.a.qp->counters.retransmits, 0u);
  ASSERT_EQ(s.p.a.mem().DeregisterRegion(r2.handle), mem::Result::kOk);
  const size_t sent_before = s.w.From(0).size();
  ASSERT_TRUE(s.p.RunForSend(s.p.a, 2));
  s.p.RunIdle();
  ExpectCompletions(s.p.a.PollSend(), {{1, Status::kAccessViolation, Cause::kLocalProtection},
                                       {2, Status::kCanceled, Cause::kFlushed}});
  EXPECT_EQ(s.p.a.qp->state(), QpState::kError);
  EXPECT_EQ(s.w.From(0).size(), sent_before) << "a request left after its source was deregistered";
  EXPECT_EQ(s.p.a.qp->counters.retransmits, 0u);
  // Only the first packet landed; the out-of-sequence ones were dropped.
  EXPECT_EQ(memcmp(s.target.data(), s.src.data(), 1024), 0);
  EXPECT_EQ(std::count(s.target.data() + 1024, s.target.data() + kTarget, 0),
            static_cast<long>(kTarget - 1024));
}

}  // namespace
}  // namespace roce::rc::testing
