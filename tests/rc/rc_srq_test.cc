// SPDX-License-Identifier: MIT
// Shared receive queue: three QPs on host b share one ReceiveQueue, each
// connected to its own QP on host a. Receives are taken from the SRQ in the
// order messages arrive (whichever QP they arrive on), the data lands in the
// buffer of the receive taken, and each completion names the QP that took it.
// An empty SRQ answers RNR on any QP; an error on one QP does not flush the
// shared queue.
#include "tests/rc/rc_wire.h"

namespace roce::rc::testing {
namespace {

constexpr int kN = 3;

class SrqRig {
 public:
  explicit SrqRig(const QpTuning& tuning = {}, uint32_t mtu = 1024) : net_(7, sim::Impairment{}) {
    RcDevice::Config cfg;
    cfg.mem_seed = 7;
    cfg.tuning = tuning;
    a = net_.AddNode("a", cfg);
    b = net_.AddNode("b", cfg);
    QpCaps caps;
    for (int i = 0; i < kN; i++) {
      aq[i] = a->dev().CreateQp(caps, &a_scq, &a_rcq, nullptr, 0xA0 + static_cast<uint64_t>(i));
      bq[i] = b->dev().CreateQp(caps, &b_scq, &b_rcq, &srq, 0xB0 + static_cast<uint64_t>(i));
    }
    for (int i = 0; i < kN; i++) {
      for (int side = 0; side < 2; side++) {
        QueuePair* me = side == 0 ? aq[i] : bq[i];
        QueuePair* peer = side == 0 ? bq[i] : aq[i];
        QpAttr at;
        at.path_mtu = mtu;
        at.dest_qpn = peer->qpn();
        at.sq_psn = side == 0 ? 0x1000u * (i + 1) : 0x2000u * (i + 1);
        at.rq_psn = side == 0 ? 0x2000u * (i + 1) : 0x1000u * (i + 1);
        at.min_rnr_timer = 1;
        at.path = (side == 0 ? a : b)->PathTo(side == 0 ? *b : *a);
        EXPECT_TRUE(me->ToInit());
        EXPECT_TRUE(me->ToRtr(at));
      }
    }
    for (int i = 0; i < kN; i++) {
      EXPECT_TRUE(aq[i]->ToRts(net_.now()));
      EXPECT_TRUE(bq[i]->ToRts(net_.now()));
    }
  }
  sim::SimNetwork& net() { return net_; }
  bool RunForSend(uint32_t n) {
    return net_.RunUntil([&] { return a_scq.size() >= n; }, net_.now() + 10'000'000'000ull);
  }
  void RunIdle() { net_.RunIdle(net_.now() + 10'000'000'000ull); }
  int IndexOfB(uint32_t qpn) const {
    for (int i = 0; i < kN; i++)
      if (bq[i]->qpn() == qpn) return i;
    return -1;
  }

 private:
  sim::SimNetwork net_;

 public:
  sim::SimNode *a = nullptr, *b = nullptr;
  CompletionQueue a_scq{1024}, a_rcq{1024}, b_scq{1024}, b_rcq{1024};
  ReceiveQueue srq{64, 4};
  QueuePair* aq[kN] = {};
  QueuePair* bq[kN] = {};
};

mem::RegionInfo Reg(sim::SimNode* n, Buffer& buf, uint32_t access) {
  mem::RegionInfo r;
  EXPECT_EQ(n->dev().memory().RegisterRegion(buf.addr(), buf.size(), access, &r), mem::Result::kOk);
  return r;
}

TEST(RcSrq, ReceivesTakenInArrivalOrderAcrossQps) {
  SrqRig s;
  constexpr uint32_t kSlot = 1024;
  Buffer src(kN * kSlot, 1), dst(8 * kSlot, 2);
  for (size_t i = 0; i < src.size(); i++) src.data()[i] = static_cast<uint8_t>(i * 13 + i / 251);
  auto sr = Reg(s.a, src, 0);
  auto dr = Reg(s.b, dst, mem::kLocalWrite);
  const auto before = Snapshot(dst);
  EXPECT_EQ(s.bq[0]->PostRecv(MakeRecv(1, nullptr, 0)), PostResult::kInvalidState);  // post to the SRQ
  for (uint64_t j = 0; j < 6; j++) {
    Sge r{dst.addr() + j * kSlot, kSlot, dr.local_token};
    ASSERT_EQ(s.srq.Post(MakeRecv(j, &r, 1)), PostResult::kOk);
  }
  // One message at a time so the arrival order is the sending order.
  const int order[6] = {2, 0, 1, 2, 1, 0};
  const uint32_t len[6] = {100, 200, 300, 400, 500, 600};
  for (int k = 0; k < 6; k++) {
    const int q = order[k];
    Sge ss{src.addr() + static_cast<uint64_t>(q) * kSlot, len[k], sr.local_token};
    ASSERT_EQ(s.aq[q]->PostSend(MakeSend(static_cast<uint64_t>(k), &ss, 1)), PostResult::kOk);
    ASSERT_TRUE(s.RunForSend(static_cast<uint32_t>(k + 1)));
  }
  s.RunIdle();
  std::vector<Completion> rc(16);
  rc.resize(s.b_rcq.Poll(rc.data(), 16));
  ASSERT_EQ(rc.size(), 6u);
  for (int k = 0; k < 6; k++) {
    SCOPED_TRACE(k);
    const int q = order[k];
    const Completion& c = rc[static_cast<size_t>(k)];
    EXPECT_EQ(c.status, Status::kSuccess);
    EXPECT_EQ(c.request_context, static_cast<uint64_t>(k));  // SRQ order = arrival order
    EXPECT_EQ(c.qpn, s.bq[q]->qpn());
    EXPECT_EQ(c.qp_context, 0xB0u + static_cast<uint64_t>(q));
    EXPECT_EQ(c.bytes, len[k]);
    EXPECT_EQ(0, memcmp(dst.data() + static_cast<size_t>(k) * kSlot,
                        src.data() + static_cast<size_t>(q) * kSlot, len[k]));
    // The rest of the slot is untouched.
    EXPECT_EQ(0, memcmp(dst.data() + static_cast<size_t>(k) * kSlot + len[k],
                        before.data() + static_cast<size_t>(k) * kSlot + len[k], kSlot - len[k]));
  }
  EXPECT_EQ(s.srq.size(), 0u);
  EXPECT_EQ(0, memcmp(dst.data() + 6 * kSlot, before.data() + 6 * kSlot, 2 * kSlot));
  EXPECT_TRUE(dst.GuardsIntact());
}

// Multi-packet Sends on three QPs interleaved packet by packet: each QP
// takes a receive when its first packet arrives and keeps it for the whole
// message; no message mixes with another.
TEST(RcSrq, InterleavedMultiPacketSendsKeepTheirReceive) {
  QpTuning t;
  t.max_tx_per_poll = 1;  // round robin one packet per QP turn
  SrqRig s(t, 256);
  constexpr uint32_t kLen = 1000;  // 4 packets
  Buffer src(kN * kLen, 1), dst(kN * 1024, 2);
  for (size_t i = 0; i < src.size(); i++) src.data()[i] = static_cast<uint8_t>((i / kLen) * 50 + i * 7);
  auto sr = Reg(s.a, src, 0);
  auto dr = Reg(s.b, dst, mem::kLocalWrite);
  for (uint64_t j = 0; j < kN; j++) {
    Sge r{dst.addr() + j * 1024, 1024, dr.local_token};
    ASSERT_EQ(s.srq.Post(MakeRecv(j, &r, 1)), PostResult::kOk);
  }
  WireLog w(s.net());
  // Post on QP 1, then 2, then 0.
  const int post_order[kN] = {1, 2, 0};
  for (int q : post_order) {
    Sge ss{src.addr() + static_cast<uint64_t>(q) * kLen, kLen, sr.local_token};
    ASSERT_EQ(s.aq[q]->PostSend(MakeSend(static_cast<uint64_t>(q), &ss, 1)), PostResult::kOk);
  }
  ASSERT_TRUE(s.RunForSend(kN));
  s.RunIdle();
  // The packets really were interleaved.
  auto sends = w.Where([](const Frame& f) { return f.from == kA && IsRequest(f.opcode); });
  ASSERT_EQ(sends.size(), 12u);
  EXPECT_NE(sends[0].dest_qp, sends[1].dest_qp);
  // Receive j went to the QP whose SEND_FIRST arrived j-th.
  std::vector<int> first_order;
  for (const Frame& f : sends)
    if (f.opcode == op::kRcSendFirst) first_order.push_back(s.IndexOfB(f.dest_qp));
  ASSERT_EQ(first_order.size(), static_cast<size_t>(kN));
  std::vector<Completion> rc(16);
  rc.resize(s.b_rcq.Poll(rc.data(), 16));
  ASSERT_EQ(rc.size(), static_cast<size_t>(kN));
  for (const Completion& c : rc) {
    EXPECT_EQ(c.status, Status::kSuccess);
    EXPECT_EQ(c.bytes, kLen);
    const int q = s.IndexOfB(c.qpn);
    ASSERT_GE(q, 0);
    EXPECT_EQ(c.qp_context, 0xB0u + static_cast<uint64_t>(q));
    EXPECT_EQ(first_order[c.request_context], q) << "receive " << c.request_context;
    EXPECT_EQ(0, memcmp(dst.data() + c.request_context * 1024, src.data() + static_cast<size_t>(q) * kLen, kLen))
        << "receive " << c.request_context << " holds another QP's bytes";
  }
  EXPECT_TRUE(dst.GuardsIntact());
}

TEST(RcSrq, EmptySrqRnrThenServesWhicheverQpRetriesFirst) {
  SrqRig s;
  Buffer src(256, 1), dst(1024, 2);
  src.Fill(4);
  auto sr = Reg(s.a, src, 0);
  auto dr = Reg(s.b, dst, mem::kLocalWrite);
  WireLog w(s.net());
  Sge ss{src.addr(), 64, sr.local_token};
  ASSERT_EQ(s.aq[0]->PostSend(MakeSend(10, &ss, 1)), PostResult::kOk);
  ASSERT_EQ(s.aq[2]->PostSend(MakeSend(12, &ss, 1)), PostResult::kOk);
  ASSERT_TRUE(s.net().RunUntil([&] { return s.bq[0]->counters.rnr_naks_sent >= 2 &&
                                            s.bq[2]->counters.rnr_naks_sent >= 2; },
                               s.net().now() + 100'000'000));
  for (uint64_t j = 0; j < 2; j++) {
    Sge r{dst.addr() + j * 512, 512, dr.local_token};
    ASSERT_EQ(s.srq.Post(MakeRecv(j, &r, 1)), PostResult::kOk);
  }
  ASSERT_TRUE(s.RunForSend(2));
  std::vector<Completion> sc(4), rc(4);
  sc.resize(s.a_scq.Poll(sc.data(), 4));
  rc.resize(s.b_rcq.Poll(rc.data(), 4));
  ASSERT_EQ(sc.size(), 2u);
  ASSERT_EQ(rc.size(), 2u);
  for (const Completion& c : sc) EXPECT_EQ(c.status, Status::kSuccess);
  EXPECT_NE(rc[0].qpn, rc[1].qpn);
  auto rnr = w.Where([](const Frame& f) {
    return f.from == kB && f.opcode == op::kRcAck && syn::Type(f.syndrome) == syn::kTypeRnr;
  });
  EXPECT_GE(rnr.size(), 4u);
  EXPECT_EQ(rnr.size(), s.bq[0]->counters.rnr_naks_sent + s.bq[2]->counters.rnr_naks_sent);
  EXPECT_EQ(s.bq[1]->counters.rnr_naks_sent, 0u);
  for (const Completion& c : rc) {
    EXPECT_EQ(c.status, Status::kSuccess);
    EXPECT_TRUE(c.qpn == s.bq[0]->qpn() || c.qpn == s.bq[2]->qpn());
  }
}

TEST(RcSrq, ErrorOnOneQpDoesNotFlushTheSharedQueue) {
  SrqRig s;
  Buffer src(256, 1), dst(2048, 2), target(256, 3);
  src.Fill(5);
  auto sr = Reg(s.a, src, 0);
  auto dr = Reg(s.b, dst, mem::kLocalWrite);
  auto tr = Reg(s.b, target, mem::kLocalWrite | mem::kRemoteWrite);
  for (uint64_t j = 0; j < 3; j++) {
    Sge r{dst.addr() + j * 512, 512, dr.local_token};
    ASSERT_EQ(s.srq.Post(MakeRecv(j, &r, 1)), PostResult::kOk);
  }
  // QP 0 dies of a remote access error.
  Sge ss{src.addr(), 64, sr.local_token};
  ASSERT_EQ(s.aq[0]->PostSend(MakeRdma(1, WrOp::kWrite, &ss, 1, target.addr(), tr.remote_token ^ 1)),
            PostResult::kOk);
  ASSERT_TRUE(s.RunForSend(1));
  s.RunIdle();
  EXPECT_EQ(s.bq[0]->state(), QpState::kError);
  EXPECT_EQ(s.aq[0]->state(), QpState::kError);
  EXPECT_EQ(s.b_rcq.size(), 0u);  // no receive was flushed
  EXPECT_EQ(s.srq.size(), 3u);
  // QP 1 still gets the first shared receive.
  ASSERT_EQ(s.aq[1]->PostSend(MakeSend(2, &ss, 1)), PostResult::kOk);
  ASSERT_TRUE(s.RunForSend(2));
  std::vector<Completion> rc(4);
  rc.resize(s.b_rcq.Poll(rc.data(), 4));
  ExpectCompletions(rc, {{0, Status::kSuccess}});
  EXPECT_EQ(rc[0].qpn, s.bq[1]->qpn());
  EXPECT_EQ(0, memcmp(dst.data(), src.data(), 64));
  EXPECT_EQ(s.srq.size(), 2u);
}

}  // namespace
}  // namespace roce::rc::testing
