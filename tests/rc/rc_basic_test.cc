// Basic RC operations over a clean simulated link: Send, Write, Read,
// multi-packet messages, SGE lists, inline, silent success, completions in
// posting order.
#include <numeric>

#include "tests/rc/rc_harness.h"

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
