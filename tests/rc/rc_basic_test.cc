// SPDX-License-Identifier: MIT
// Basic RC operations over a clean simulated link: Send, Write, Read,
// multi-packet messages, SGE lists, inline, silent success, completions in
// posting order.
#include <numeric>

#include "tests/rc/rc_wire.h"

namespace roce::rc::testing {
namespace {

TEST(RcBasic, SendReceiveOnePacket) {
  RcPair p;
  Buffer src(64, 1), dst(64, 2);
  auto sr = p.a.Register(src, 0);
  auto dr = p.b.Register(dst, mem::kLocalWrite);
  src.Fill(9);
  Sge rs{dst.addr(), 64, dr.local_token};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(77, &rs, 1)), PostResult::kOk);
  Sge ss{src.addr(), 40, sr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(5, &ss, 1)), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  auto sc = p.a.PollSend();
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, Status::kSuccess);
  EXPECT_EQ(sc[0].request_context, 5u);
  EXPECT_EQ(sc[0].qp_context, 0xAu);
  EXPECT_EQ(sc[0].type, RequestType::kSend);
  auto rc = p.b.PollRecv();
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, Status::kSuccess);
  EXPECT_EQ(rc[0].bytes, 40u);
  EXPECT_EQ(rc[0].request_context, 77u);
  EXPECT_EQ(rc[0].type, RequestType::kReceive);
  EXPECT_EQ(0, memcmp(src.data(), dst.data(), 40));
  EXPECT_TRUE(dst.GuardsIntact());
}

// The solicited-event flag: BTH.SE on the last packet of a Send (or of a
// Write with immediate) only, and the receive completion says so — what a CQ
// armed for solicited completions waits for.
TEST(RcBasic, SolicitedEventOnLastPacketAndInReceiveCompletion) {
  PairOptions o;
  o.attr.path_mtu = 256;
  RcPair p(o);
  WireLog w{p.net()};
  Buffer src(1000, 1), dst(4 * 1000, 2), target(1000, 3);
  src.Fill(5);
  auto sr = p.a.Register(src, 0);
  auto dr = p.b.Register(dst, mem::kLocalWrite);
  auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteWrite);
  for (uint32_t i = 0; i < 4; i++) {
    Sge rs{dst.addr() + i * 1000, 1000, dr.local_token};
    ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100 + i, &rs, 1)), PostResult::kOk);
  }
  Sge ss{src.addr(), 600, sr.local_token};  // three packets at MTU 256
  SendWr s1 = MakeSend(1, &ss, 1);
  s1.flags = kSolicited;
  SendWr s2 = MakeSend(2, &ss, 1);  // not solicited
  SendWr s3 = MakeRdma(3, WrOp::kWriteWithImm, &ss, 1, target.addr(), tr.remote_token);
  s3.flags = kSolicited;
  s3.imm = 7;
  SendWr s4 = MakeRdma(4, WrOp::kWrite, &ss, 1, target.addr(), tr.remote_token);
  s4.flags = kSolicited;  // no receive is consumed: SE means nothing here
  for (SendWr* wr : {&s1, &s2, &s3, &s4}) ASSERT_EQ(p.a.qp->PostSend(*wr), PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 4));
  for (const Completion& c : p.a.PollSend()) EXPECT_EQ(c.status, Status::kSuccess);
  auto rc = p.b.PollRecv();
  ASSERT_EQ(rc.size(), 3u);
  EXPECT_TRUE(rc[0].solicited);
  EXPECT_FALSE(rc[1].solicited);
  EXPECT_TRUE(rc[2].solicited);
  EXPECT_TRUE(rc[2].with_imm);
  // On the wire: SE set on exactly the SEND_LAST of s1 and WRITE_LAST_IMM of s3.
  std::vector<uint8_t> se_ops;
  size_t requests = 0;
  for (const Frame& f : w.From(kA)) {
    if (!f.parsed || !IsRequest(f.opcode)) continue;
    requests++;
    if (f.se) se_ops.push_back(f.opcode);
  }
  EXPECT_EQ(requests, 12u);
  EXPECT_EQ(se_ops, (std::vector<uint8_t>{wire::op::kRcSendLast, wire::op::kRcWriteLastImm}));
}

TEST(RcBasic, MultiPacketSendWriteReadWithSgeLists) {
  PairOptions o;
  o.attr.path_mtu = 256;
  o.caps.max_send_sge = 4;
  o.caps.max_recv_sge = 4;
  RcPair p(o);
  const size_t n = 5000;
  Buffer src(n, 1), recv(n + 100, 2), target(3 * n, 3), sink(n, 4);
  src.Fill(42);
  target.Fill(17);
  auto sr = p.a.Register(src, 0);
  auto kr = p.a.Register(sink, mem::kLocalWrite);
  auto rr = p.b.Register(recv, mem::kLocalWrite);
  auto tr = p.b.Register(target, mem::kLocalWrite | mem::kRemoteWrite | mem::kRemoteRead);
  // Receive scattered over three SGEs.
  Sge rs[3] = {{recv.addr(), 1000, rr.local_token},
               {recv.addr() + 1000, 7, rr.local_token},
               {recv.addr() + 1007, 4093, rr.local_token}};
  ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(1, rs, 3)), PostResult::kOk);
  // Send gathered from three SGEs.
  Sge ss[3] = {{src.addr(), 999, sr.local_token},
               {src.addr() + 999, 1, sr.local_token},
               {src.addr() + 1000, 4000, sr.local_token}};
  ASSERT_EQ(p.a.qp->PostSend(MakeSend(10, ss, 3)), PostResult::kOk);
  // Write the same bytes into the middle of target, then read target back.
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(11, WrOp::kWrite, ss, 3, target.addr() + n,
                                      tr.remote_token)),
            PostResult::kOk);
  Sge ks{sink.addr(), static_cast<uint32_t>(n), kr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(12, WrOp::kRead, &ks, 1, target.addr() + n,
                                      tr.remote_token)),
            PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 3));
  auto sc = p.a.PollSend();
  ASSERT_EQ(sc.size(), 3u);
  for (int i = 0; i < 3; i++) {
    EXPECT_EQ(sc[static_cast<size_t>(i)].status, Status::kSuccess) << i;
    EXPECT_EQ(sc[static_cast<size_t>(i)].request_context, 10u + static_cast<uint64_t>(i));
  }
  EXPECT_EQ(sc[1].type, RequestType::kWrite);
  EXPECT_EQ(sc[2].type, RequestType::kRead);
  auto rc = p.b.PollRecv();
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].bytes, n);
  EXPECT_EQ(0, memcmp(src.data(), recv.data(), n));
  EXPECT_EQ(0, memcmp(src.data(), target.data() + n, n));
  EXPECT_EQ(0, memcmp(src.data(), sink.data(), n));
  for (Buffer* b : {&src, &recv, &target, &sink}) EXPECT_TRUE(b->GuardsIntact());
  // 5000 B at MTU 256 is 20 packets each way for Send and Write; a Read is one request.
  EXPECT_EQ(p.a.qp->counters.retransmits, 0u);
}

TEST(RcBasic, InlineAndSilentSuccessKeepOrder) {
  RcPair p;
  Buffer recv(4096, 1);
  auto rr = p.b.Register(recv, mem::kLocalWrite);
  for (int i = 0; i < 8; i++) {
    Sge rs{recv.addr() + static_cast<uint64_t>(i) * 512, 512, rr.local_token};
    ASSERT_EQ(p.b.qp->PostRecv(MakeRecv(100 + static_cast<uint64_t>(i), &rs, 1)), PostResult::kOk);
  }
  for (int i = 0; i < 8; i++) {
    uint8_t bytes[64];
    memset(bytes, i + 1, sizeof bytes);
    Sge s{reinterpret_cast<uint64_t>(bytes), 64, 0};  // inline: no token needed
    SendWr w = MakeSend(static_cast<uint64_t>(i), &s, 1);
    w.flags = kInline | (i % 2 ? kSilentSuccess : 0u);
    ASSERT_EQ(p.a.qp->PostSend(w), PostResult::kOk);
    memset(bytes, 0xEE, sizeof bytes);  // inline data was copied at post time
  }
  p.RunIdle();
  auto sc = p.a.PollSend();
  ASSERT_EQ(sc.size(), 4u);  // the four silent successes are not reported
  for (size_t i = 0; i < sc.size(); i++) EXPECT_EQ(sc[i].request_context, 2 * i);
  auto rc = p.b.PollRecv();
  ASSERT_EQ(rc.size(), 8u);
  for (size_t i = 0; i < 8; i++) {
    EXPECT_EQ(rc[i].request_context, 100 + i);
    EXPECT_EQ(recv.data()[i * 512], i + 1);
    EXPECT_EQ(recv.data()[i * 512 + 63], i + 1);
  }
}

TEST(RcBasic, PostValidation) {
  PairOptions o;
  o.caps.max_send_sge = 2;
  o.caps.sq_depth = 2;
  o.caps.max_inline = 16;
  RcPair p(o);
  Sge s[3] = {};
  EXPECT_EQ(p.a.qp->PostSend(MakeSend(1, s, 3)), PostResult::kTooManySge);
  uint8_t big[17];
  Sge b{reinterpret_cast<uint64_t>(big), 17, 0};
  SendWr w = MakeSend(1, &b, 1);
  w.flags = kInline;
  EXPECT_EQ(p.a.qp->PostSend(w), PostResult::kInlineTooLarge);
  Sge huge[2] = {{0x1000, 0x40000000, 1}, {0x1000, 0x40000000, 1}};
  EXPECT_EQ(p.a.qp->PostSend(MakeSend(1, huge, 2)), PostResult::kInvalidParameter);
  EXPECT_EQ(p.a.qp->PostSend(MakeSend(1, nullptr, 0)), PostResult::kOk);
  EXPECT_EQ(p.a.qp->PostSend(MakeSend(2, nullptr, 0)), PostResult::kOk);
  EXPECT_EQ(p.a.qp->PostSend(MakeSend(3, nullptr, 0)), PostResult::kQueueFull);
}

}  // namespace
}  // namespace roce::rc::testing
