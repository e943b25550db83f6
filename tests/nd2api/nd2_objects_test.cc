// SPDX-License-Identifier: MIT
// IND2QueuePair through the public headers: Send, Receive, Read, Write,
// Flush; every flag (SILENT_SUCCESS, READ_FENCE, SEND_AND_SOLICIT_EVENT is in
// nd2_objects_cq_test.cc, INLINE); every return value the spec page lists;
// the completion statuses (ND2_RESULT) each error produces; QueryInterface.
// Bind, Invalidate and SendAndInvalidate: nd2_objects_memory_test.cc.
#include <atomic>
#include <thread>

#include "tests/nd2api/nd2_objects_util.h"

namespace nd2t {

// NdCleanup after the last test of the program.
[[maybe_unused]] static ::testing::Environment* const kEnv = ::testing::AddGlobalTestEnvironment(new Environment);

namespace {

class Nd2Qp : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(Start(GetParam())); }
};

INSTANTIATE_TEST_SUITE_P(Progress, Nd2Qp, ::testing::Values(Mode::kInline, Mode::kThread),
                         [](const ::testing::TestParamInfo<Mode>& i) {
                           return i.param == Mode::kThread ? std::string("Thread") : std::string("Inline");
                         });

// Results carry the queue pair's context, the request's context and type, in
// posting order; receives their byte count; the data arrives.
TEST_P(Nd2Qp, SendReceiveReadWriteResults) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  for (int i = 0; i < 8; i++) ASSERT_EQ(p.b.PostReceive(reinterpret_cast<void*>(100 + i), i * 1024, 1024), ND_SUCCESS);
  for (int i = 0; i < 8; i++) {
    std::memset(p.a.buf.data() + i * 1024, 'a' + i, 1024);
    ASSERT_EQ(p.a.PostSend(reinterpret_cast<void*>(200 + i), i * 1024, 100 + i), ND_SUCCESS);
  }
  for (int i = 0; i < 8; i++) {
    ND2_RESULT r = p.a.NextI();
    EXPECT_EQ(r.Status, ND_SUCCESS);
    EXPECT_EQ(r.RequestType, Nd2RequestTypeSend);
    EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(200 + i));
    EXPECT_EQ(r.QueuePairContext, &p.a);
  }
  for (int i = 0; i < 8; i++) {
    ND2_RESULT r = p.b.NextR();
    EXPECT_EQ(r.Status, ND_SUCCESS);
    EXPECT_EQ(r.RequestType, Nd2RequestTypeReceive);
    EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(100 + i));
    EXPECT_EQ(r.QueuePairContext, &p.b);
    EXPECT_EQ(r.BytesTransferred, ULONG(100 + i));
    EXPECT_EQ(p.b.buf[i * 1024], 'a' + i);
    EXPECT_EQ(p.b.buf[i * 1024 + 99 + i], 'a' + i);
  }
  // Write with three SGEs gathered into one remote range; Read it back scattered over two.
  for (int i = 0; i < 3000; i++) p.a.buf[i] = static_cast<char>(i * 7);
  ND2_SGE w[3] = {p.a.Sge(0, 1000), p.a.Sge(1000, 1000), p.a.Sge(2000, 1000)};
  ASSERT_EQ(p.a.qp->Write(reinterpret_cast<void*>(1), w, 3, p.b.Va(500000), p.b.mr->GetRemoteToken(), 0), ND_SUCCESS);
  ND2_RESULT r = p.a.NextI();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  EXPECT_EQ(r.RequestType, Nd2RequestTypeWrite);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(1));
  EXPECT_EQ(std::memcmp(p.b.buf.data() + 500000, p.a.buf.data(), 3000), 0);
  ND2_SGE rd[2] = {p.a.Sge(600000, 1500), p.a.Sge(700000, 1500)};
  ASSERT_EQ(p.a.qp->Read(reinterpret_cast<void*>(2), rd, 2, p.b.Va(500000), p.b.mr->GetRemoteToken(), 0), ND_SUCCESS);
  r = p.a.NextI();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  EXPECT_EQ(r.RequestType, Nd2RequestTypeRead);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(2));
  EXPECT_EQ(std::memcmp(p.a.buf.data() + 600000, p.a.buf.data(), 1500), 0);
  EXPECT_EQ(std::memcmp(p.a.buf.data() + 700000, p.a.buf.data() + 1500, 1500), 0);
  // Zero-byte requests: a Send with no SGE (NULL array) to a receive with
  // none, a Read and a Write with none (a Read of nothing probes the peer).
  ASSERT_EQ(p.b.qp->Receive(reinterpret_cast<void*>(3), nullptr, 0), ND_SUCCESS);
  ASSERT_EQ(p.a.qp->Send(reinterpret_cast<void*>(4), nullptr, 0, 0), ND_SUCCESS);
  ASSERT_EQ(p.a.qp->Read(reinterpret_cast<void*>(5), nullptr, 0, p.b.Va(0), p.b.mr->GetRemoteToken(), 0), ND_SUCCESS);
  ASSERT_EQ(p.a.qp->Write(reinterpret_cast<void*>(6), nullptr, 0, p.b.Va(0), p.b.mr->GetRemoteToken(), 0),
            ND_SUCCESS);
  for (uintptr_t ctx = 4; ctx <= 6; ctx++) {
    r = p.a.NextI();
    EXPECT_EQ(r.Status, ND_SUCCESS);
    EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(ctx));
  }
  r = p.b.NextR();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(3));
  EXPECT_EQ(r.BytesTransferred, 0u);
}

// A connection from an adapter to its own address (ND_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED).
TEST_P(Nd2Qp, LoopbackConnection) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open({}, {}, /*loopback=*/true));
  ASSERT_EQ(p.b.PostReceive(nullptr, 0, 64), ND_SUCCESS);
  std::strcpy(p.a.buf.data(), "to myself");
  ASSERT_EQ(p.a.PostSend(nullptr, 0, 10), ND_SUCCESS);
  EXPECT_EQ(p.a.NextI().Status, ND_SUCCESS);
  EXPECT_EQ(p.b.NextR().Status, ND_SUCCESS);
  EXPECT_STREQ(p.b.buf.data(), "to myself");
}

// ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED: a client that polls the last byte
// of a Write's target sees everything before it placed.
TEST_P(Nd2Qp, InOrderPlacementOfAWrite) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  for (int round = 1; round <= 3; round++) {
    const size_t n = 512 * 1024;
    for (size_t i = 0; i < n; i++) p.a.buf[i] = static_cast<char>((i * 31 + round) | 1);
    std::memset(p.b.buf.data(), 0, n);
    ND2_SGE s = p.a.Sge(0, n);
    ASSERT_EQ(p.a.qp->Write(nullptr, &s, 1, p.b.Va(0), p.b.mr->GetRemoteToken(), ND_OP_FLAG_SILENT_SUCCESS),
              ND_SUCCESS);
    const uint64_t end = NowMs() + 10000;
    ND2_RESULT r;
    while (__atomic_load_n(&p.b.buf[n - 1], __ATOMIC_ACQUIRE) == 0 && NowMs() < end)
      p.b.cq->GetResults(&r, 1);  // drives the engines in inline mode
    ASSERT_NE(p.b.buf[n - 1], 0) << "the last byte never came";
    ASSERT_EQ(std::memcmp(p.b.buf.data(), p.a.buf.data(), n), 0) << "round " << round;
  }
}

TEST_P(Nd2Qp, UnconnectedQueuePairRefusesInitiatorRequestsButTakesReceives) {
  Endpoint e;
  ASSERT_NO_FATAL_FAILURE(e.Open(kIpA));
  ND2_SGE s = e.Sge(0, 16);
  EXPECT_EQ(e.qp->Send(nullptr, &s, 1, 0), ND_CONNECTION_INVALID);
  EXPECT_EQ(e.qp->Write(nullptr, &s, 1, e.Va(0), e.mr->GetRemoteToken(), 0), ND_CONNECTION_INVALID);
  EXPECT_EQ(e.qp->Read(nullptr, &s, 1, e.Va(0), e.mr->GetRemoteToken(), 0), ND_CONNECTION_INVALID);
  IND2MemoryWindow* mw = nullptr;
  ASSERT_EQ(e.adapter->CreateMemoryWindow(IID_IND2MemoryWindow, reinterpret_cast<void**>(&mw)), ND_SUCCESS);
  EXPECT_EQ(e.qp->Bind(nullptr, e.mr, mw, e.buf.data(), 64, ND_OP_FLAG_ALLOW_READ), ND_CONNECTION_INVALID);
  EXPECT_EQ(e.qp->Invalidate(nullptr, mw, 0), ND_CONNECTION_INVALID);
  IND2QueuePairSendAndInvalidate* si = nullptr;
  ASSERT_EQ(e.qp->QueryInterface(IID_IND2QueuePairSendAndInvalidate, reinterpret_cast<void**>(&si)), S_OK);
  EXPECT_EQ(si->SendAndInvalidate(nullptr, &s, 1, 0x1234, 0), ND_CONNECTION_INVALID);
  si->Release();
  mw->Release();
  // Receives may be posted before the connection exists.
  EXPECT_EQ(e.qp->Receive(nullptr, &s, 1), ND_SUCCESS);
  // Nothing was posted by the refused calls.
  ND2_RESULT r;
  EXPECT_EQ(e.cq->GetResults(&r, 1), 0u);
  e.Close();
}

class Nd2QpInline : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(Start(Mode::kInline)); }
};

// Send's return values: ND_DATA_OVERRUN (SGEs above maxInitiatorRequestSge),
// ND_BUFFER_OVERFLOW (more than MaxTransferLength), ND_NO_MORE_ENTRIES
// (initiator queue full), ND_INVALID_PARAMETER_4 (flags); Write and Read the
// same with ND_INVALID_PARAMETER_6. A refused request is not posted and the
// queue pair goes on working. Inline progress: nothing runs while we post.
TEST_F(Nd2QpInline, PostReturnValues) {
  QpSizes sz;
  sz.iq = 4;
  sz.isge = 2;  // rounded up to 4 (Limits::RoundSge)
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open(sz));
  const ND2_ADAPTER_INFO info = QueryInfo(p.a.adapter);
  const UINT32 rt = p.b.mr->GetRemoteToken();
  ND2_SGE five[5] = {p.a.Sge(0, 1), p.a.Sge(1, 1), p.a.Sge(2, 1), p.a.Sge(3, 1), p.a.Sge(4, 1)};
  EXPECT_EQ(p.a.qp->Send(nullptr, five, 5, 0), ND_DATA_OVERRUN);
  EXPECT_EQ(p.a.qp->Write(nullptr, five, 5, p.b.Va(0), rt, 0), ND_DATA_OVERRUN);
  EXPECT_EQ(p.a.qp->Read(nullptr, five, 5, p.b.Va(0), rt, 0), ND_DATA_OVERRUN);
  // Two SGEs whose lengths add up to MaxTransferLength + 1 (never touched: refused at once).
  ND2_SGE huge[2] = {{p.a.buf.data(), info.MaxTransferLength / 2 + 1, p.a.mr->GetLocalToken()},
                     {p.a.buf.data(), info.MaxTransferLength / 2 + 1, p.a.mr->GetLocalToken()}};
  ASSERT_EQ(ULONG64{huge[0].BufferLength} + huge[1].BufferLength, ULONG64{info.MaxTransferLength} + 1);
  EXPECT_EQ(p.a.qp->Send(nullptr, huge, 2, 0), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(p.a.qp->Write(nullptr, huge, 2, p.b.Va(0), rt, 0), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(p.a.qp->Read(nullptr, huge, 2, p.b.Va(0), rt, 0), ND_BUFFER_OVERFLOW);
  // Flags each method does not take.
  ND2_SGE one = p.a.Sge(0, 8);
  EXPECT_EQ(p.a.qp->Send(nullptr, &one, 1, ND_OP_FLAG_ALLOW_READ), ND_INVALID_PARAMETER_4);
  EXPECT_EQ(p.a.qp->Send(nullptr, &one, 1, 0x40), ND_INVALID_PARAMETER_4);
  EXPECT_EQ(p.a.qp->Write(nullptr, &one, 1, p.b.Va(0), rt, ND_OP_FLAG_SEND_AND_SOLICIT_EVENT), ND_INVALID_PARAMETER_6);
  EXPECT_EQ(p.a.qp->Write(nullptr, &one, 1, p.b.Va(0), rt, ND_OP_FLAG_ALLOW_WRITE), ND_INVALID_PARAMETER_6);
  EXPECT_EQ(p.a.qp->Read(nullptr, &one, 1, p.b.Va(0), rt, ND_OP_FLAG_INLINE), ND_INVALID_PARAMETER_6);
  EXPECT_EQ(p.a.qp->Read(nullptr, &one, 1, p.b.Va(0), rt, ND_OP_FLAG_SEND_AND_SOLICIT_EVENT), ND_INVALID_PARAMETER_6);
  // SGE count but no array.
  EXPECT_EQ(p.a.qp->Send(nullptr, nullptr, 1, 0), ND_INVALID_PARAMETER_2);
  EXPECT_EQ(p.a.qp->Write(nullptr, nullptr, 1, p.b.Va(0), rt, 0), ND_INVALID_PARAMETER_2);
  EXPECT_EQ(p.a.qp->Read(nullptr, nullptr, 1, p.b.Va(0), rt, 0), ND_INVALID_PARAMETER_2);
  // Nothing of that was posted.
  ND2_RESULT r;
  EXPECT_EQ(p.a.icq->GetResults(&r, 1), 0u);
  // The initiator queue holds 4 (one Write, one Read, two Sends): a fifth
  // request of any kind is refused.
  for (int i = 0; i < 4; i++) ASSERT_EQ(p.b.PostReceive(nullptr, 0, 64), ND_SUCCESS);
  ASSERT_EQ(p.a.qp->Write(reinterpret_cast<void*>(1), &one, 1, p.b.Va(4096), rt, 0), ND_SUCCESS);
  ASSERT_EQ(p.a.qp->Read(reinterpret_cast<void*>(2), &one, 1, p.b.Va(4096), rt, 0), ND_SUCCESS);
  ASSERT_EQ(p.a.qp->Send(reinterpret_cast<void*>(3), &one, 1, 0), ND_SUCCESS);
  ASSERT_EQ(p.a.qp->Send(reinterpret_cast<void*>(4), &one, 1, 0), ND_SUCCESS);
  EXPECT_EQ(p.a.qp->Send(nullptr, &one, 1, 0), ND_NO_MORE_ENTRIES);
  EXPECT_EQ(p.a.qp->Write(nullptr, &one, 1, p.b.Va(0), rt, 0), ND_NO_MORE_ENTRIES);
  EXPECT_EQ(p.a.qp->Read(nullptr, &one, 1, p.b.Va(0), rt, 0), ND_NO_MORE_ENTRIES);
  IND2QueuePairSendAndInvalidate* si = nullptr;
  ASSERT_EQ(p.a.qp->QueryInterface(IID_IND2QueuePairSendAndInvalidate, reinterpret_cast<void**>(&si)), S_OK);
  EXPECT_EQ(si->SendAndInvalidate(nullptr, &one, 1, 0, 0), ND_NO_MORE_ENTRIES);
  si->Release();
  // The four complete, in order; the queue pair takes more afterwards.
  for (uintptr_t i = 1; i <= 4; i++) {
    r = p.a.NextI();
    EXPECT_EQ(r.Status, ND_SUCCESS);
    EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(i));
  }
  ASSERT_EQ(p.a.qp->Send(reinterpret_cast<void*>(5), &one, 1, 0), ND_SUCCESS);
  EXPECT_EQ(p.a.NextI().Status, ND_SUCCESS);
  for (int i = 0; i < 3; i++) EXPECT_EQ(p.b.NextR().Status, ND_SUCCESS);
}

// SGE limits are rounded up to a multiple of 4 (Limits::RoundSge), as Windows
// providers round them to their WQE size: Microsoft's ndmw creates its queue
// pair for 1 SGE and Sends 2. Created for 1 each way: 2 and 4 SGEs post and
// land in order, 5 are refused (ND_DATA_OVERRUN) on either queue.
TEST_F(Nd2QpInline, SgeLimitsAreRoundedUpAsWindowsProvidersDo) {
  QpSizes sz;
  sz.isge = 1;
  sz.rsge = 1;
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open(sz));
  for (int i = 0; i < 8; i++) p.a.buf[i] = static_cast<char>('a' + i);
  ND2_SGE two[2] = {p.a.Sge(0, 3), p.a.Sge(3, 5)};
  ND2_SGE recv4[4] = {p.b.Sge(0, 2), p.b.Sge(100, 2), p.b.Sge(200, 2), p.b.Sge(300, 2)};
  ASSERT_EQ(p.b.qp->Receive(reinterpret_cast<void*>(1), recv4, 4), ND_SUCCESS);
  ASSERT_EQ(p.a.qp->Send(reinterpret_cast<void*>(2), two, 2, 0), ND_SUCCESS);
  EXPECT_EQ(p.a.NextI().Status, ND_SUCCESS);
  ND2_RESULT r = p.b.NextR();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  EXPECT_EQ(r.BytesTransferred, 8u);
  for (int i = 0; i < 8; i++) EXPECT_EQ(p.b.buf[100 * (i / 2) + i % 2], 'a' + i) << i;
  ND2_SGE five[5] = {p.a.Sge(0, 1), p.a.Sge(1, 1), p.a.Sge(2, 1), p.a.Sge(3, 1), p.a.Sge(4, 1)};
  EXPECT_EQ(p.a.qp->Send(nullptr, five, 4, 0), ND_SUCCESS);  // no receive: left queued
  EXPECT_EQ(p.a.qp->Send(nullptr, five, 5, 0), ND_DATA_OVERRUN);
  ND2_SGE rfive[5] = {p.b.Sge(0, 1), p.b.Sge(1, 1), p.b.Sge(2, 1), p.b.Sge(3, 1), p.b.Sge(4, 1)};
  EXPECT_EQ(p.b.qp->Receive(nullptr, rfive, 5), ND_DATA_OVERRUN);
  EXPECT_EQ(p.b.qp->Receive(nullptr, rfive, 4), ND_SUCCESS);
  EXPECT_EQ(p.a.NextI().Status, ND_SUCCESS);
  EXPECT_EQ(p.b.NextR().BytesTransferred, 4u);
}

// Receive's return values: ND_NO_MORE_ENTRIES (receive queue full),
// ND_DATA_OVERRUN (SGEs above maxReceiveRequestSge), ND_BUFFER_OVERFLOW (more
// than MaxTransferLength), ND_INVALID_PARAMETER_2 (a count without an array).
TEST_F(Nd2QpInline, ReceiveReturnValues) {
  QpSizes sz;
  sz.rq = 3;
  sz.rsge = 2;  // rounded up to 4 (Limits::RoundSge)
  Endpoint e;
  ASSERT_NO_FATAL_FAILURE(e.Open(kIpA, sz));
  const ND2_ADAPTER_INFO info = QueryInfo(e.adapter);
  ND2_SGE three[5] = {e.Sge(0, 1), e.Sge(1, 1), e.Sge(2, 1), e.Sge(3, 1), e.Sge(4, 1)};
  EXPECT_EQ(e.qp->Receive(nullptr, three, 5), ND_DATA_OVERRUN);
  ND2_SGE huge[2] = {{e.buf.data(), info.MaxTransferLength, e.mr->GetLocalToken()}, e.Sge(0, 1)};
  EXPECT_EQ(e.qp->Receive(nullptr, huge, 2), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(e.qp->Receive(nullptr, nullptr, 1), ND_INVALID_PARAMETER_2);
  for (int i = 0; i < 3; i++) ASSERT_EQ(e.qp->Receive(nullptr, three, 2), ND_SUCCESS);
  EXPECT_EQ(e.qp->Receive(nullptr, three, 1), ND_NO_MORE_ENTRIES);
  EXPECT_EQ(e.qp->Receive(nullptr, nullptr, 0), ND_NO_MORE_ENTRIES);
  // Flush: the three complete ND_CANCELED; the queue has room again.
  EXPECT_EQ(e.qp->Flush(), ND_SUCCESS);
  std::vector<ND2_RESULT> rs = Drain(e.cq, 100, 3);
  ASSERT_EQ(rs.size(), 3u);
  for (auto& r : rs) EXPECT_EQ(r.Status, ND_CANCELED);
  e.Close();
}

// ND_OP_FLAG_INLINE: the bytes are taken at the call, from memory outside
// any region (tokens ignored), with more SGEs than maxInitiatorRequestSge;
// only the total is limited, by the queue pair's inline size
// (ND_BUFFER_OVERFLOW above it). Send and Write.
TEST_P(Nd2Qp, InlineSendAndWrite) {
  QpSizes sz;
  sz.isge = 1;
  sz.inl = 64;
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open(sz));
  char parts[4][16];
  ND2_SGE s[4];
  for (int i = 0; i < 4; i++) {
    std::memset(parts[i], 'w' + i, sizeof parts[i]);
    s[i] = ND2_SGE{parts[i], sizeof parts[i], 0xDEAD0000u + i};  // not tokens of anything
  }
  ASSERT_EQ(p.b.PostReceive(reinterpret_cast<void*>(7), 0, 128), ND_SUCCESS);
  ASSERT_EQ(p.a.qp->Send(reinterpret_cast<void*>(8), s, 4, ND_OP_FLAG_INLINE), ND_SUCCESS);
  ASSERT_EQ(p.a.qp->Write(reinterpret_cast<void*>(9), s, 4, p.b.Va(4096), p.b.mr->GetRemoteToken(), ND_OP_FLAG_INLINE),
            ND_SUCCESS);
  // The caller may reuse its buffers at once.
  std::memset(parts, 0, sizeof parts);
  EXPECT_EQ(p.a.NextI().RequestContext, reinterpret_cast<void*>(8));
  ND2_RESULT r = p.a.NextI();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(9));
  r = p.b.NextR();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  EXPECT_EQ(r.BytesTransferred, 64u);
  for (int i = 0; i < 64; i++) {
    EXPECT_EQ(p.b.buf[i], 'w' + i / 16) << i;
    EXPECT_EQ(p.b.buf[4096 + i], 'w' + i / 16) << i;
  }
  char more[65] = {};
  ND2_SGE big{more, 65, 0};
  EXPECT_EQ(p.a.qp->Send(nullptr, &big, 1, ND_OP_FLAG_INLINE), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(p.a.qp->Write(nullptr, &big, 1, p.b.Va(0), p.b.mr->GetRemoteToken(), ND_OP_FLAG_INLINE),
            ND_BUFFER_OVERFLOW);
  // Without INLINE the SGE limit holds (1 asked for, 4 as rounded up).
  const ND2_SGE five[5] = {s[0], s[1], s[2], s[3], s[0]};
  EXPECT_EQ(p.a.qp->Send(nullptr, five, 5, 0), ND_DATA_OVERRUN);
  // Inline, the count is bounded by the inline size (64 here): 65 empty SGEs are refused.
  std::vector<ND2_SGE> empty(65, ND2_SGE{parts[0], 0, 0});
  EXPECT_EQ(p.a.qp->Send(nullptr, empty.data(), 65, ND_OP_FLAG_INLINE), ND_DATA_OVERRUN);
  ASSERT_EQ(p.b.PostReceive(nullptr, 0, 8), ND_SUCCESS);
  EXPECT_EQ(p.a.qp->Send(reinterpret_cast<void*>(10), empty.data(), 64, ND_OP_FLAG_INLINE), ND_SUCCESS);
  EXPECT_EQ(p.a.NextI().RequestContext, reinterpret_cast<void*>(10));
  EXPECT_EQ(p.b.NextR().BytesTransferred, 0u);
}

// ND_OP_FLAG_SILENT_SUCCESS: no result when the request succeeds, one when it fails.
TEST_P(Nd2Qp, SilentSuccess) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  for (int i = 0; i < 2; i++) ASSERT_EQ(p.b.PostReceive(nullptr, i * 64, 64), ND_SUCCESS);
  ASSERT_EQ(p.a.PostSend(reinterpret_cast<void*>(1), 0, 8, ND_OP_FLAG_SILENT_SUCCESS), ND_SUCCESS);
  ND2_SGE s = p.a.Sge(0, 8);
  ASSERT_EQ(p.a.qp->Write(reinterpret_cast<void*>(2), &s, 1, p.b.Va(8192), p.b.mr->GetRemoteToken(),
                          ND_OP_FLAG_SILENT_SUCCESS),
            ND_SUCCESS);
  ASSERT_EQ(p.a.qp->Read(reinterpret_cast<void*>(3), &s, 1, p.b.Va(8192), p.b.mr->GetRemoteToken(),
                         ND_OP_FLAG_SILENT_SUCCESS),
            ND_SUCCESS);
  ASSERT_EQ(p.a.PostSend(reinterpret_cast<void*>(4), 0, 8, 0), ND_SUCCESS);
  std::vector<ND2_RESULT> rs = Drain(p.a.icq, 100, 1);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].RequestContext, reinterpret_cast<void*>(4));
  EXPECT_EQ(Drain(p.b.cq, 100, 2).size(), 2u);  // both receives completed (the receiver's result is not silent)
  // A silent request that fails is reported.
  ASSERT_EQ(p.a.qp->Write(reinterpret_cast<void*>(5), &s, 1, p.b.Va(0), p.b.mr->GetRemoteToken() ^ 0x55,
                          ND_OP_FLAG_SILENT_SUCCESS),
            ND_SUCCESS);
  ND2_RESULT r = p.a.NextI();
  EXPECT_EQ(r.Status, ND_ACCESS_VIOLATION);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(5));
}

// ND_OP_FLAG_READ_FENCE: the Send after a Read leaves only once the Read is
// complete, so a peer that changes the memory as soon as the Send arrives
// cannot change what the Read returns.
TEST_P(Nd2Qp, ReadFenceHoldsTheSendBackUntilTheReadIsDone) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  // Large enough that the peer's engine needs several passes to answer the
  // Read (a pass sends at most 64 packets per queue pair).
  const size_t n = 960 * 1024;
  for (int round = 0; round < 3; round++) {
    std::memset(p.b.buf.data(), 'o', n);  // old contents
    ASSERT_EQ(p.b.PostReceive(nullptr, n, 64), ND_SUCCESS);
    ND2_SGE s = p.a.Sge(0, n);
    ASSERT_EQ(p.a.qp->Read(reinterpret_cast<void*>(1), &s, 1, p.b.Va(0), p.b.mr->GetRemoteToken(), 0), ND_SUCCESS);
    ASSERT_EQ(p.a.PostSend(reinterpret_cast<void*>(2), n, 8, ND_OP_FLAG_READ_FENCE), ND_SUCCESS);
    // The peer overwrites its memory the moment the Send arrives.
    ND2_RESULT r = p.b.NextR();
    ASSERT_EQ(r.Status, ND_SUCCESS);
    std::memset(p.b.buf.data(), 'N', n);
    EXPECT_EQ(p.a.NextI().RequestContext, reinterpret_cast<void*>(1));
    EXPECT_EQ(p.a.NextI().RequestContext, reinterpret_cast<void*>(2));
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += p.a.buf[i] != 'o';
    EXPECT_EQ(bad, 0u) << "round " << round << ": the Read returned bytes written after the fenced Send arrived";
  }
}

// A receive too small for the Send: the receive completes
// ND_BUFFER_OVERFLOW, the sender STATUS_DATA_ERROR (as on IB), the connection
// is torn down and everything after completes ND_CANCELED, including
// requests posted afterwards.
TEST_P(Nd2Qp, ReceiveTooSmall) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  ASSERT_EQ(p.b.PostReceive(reinterpret_cast<void*>(1), 0, 16), ND_SUCCESS);
  ASSERT_EQ(p.b.PostReceive(reinterpret_cast<void*>(2), 64, 16), ND_SUCCESS);
  ASSERT_EQ(p.a.PostSend(reinterpret_cast<void*>(3), 0, 17), ND_SUCCESS);
  ASSERT_EQ(p.a.PostSend(reinterpret_cast<void*>(4), 0, 1), ND_SUCCESS);
  ND2_RESULT r = p.b.NextR();
  EXPECT_EQ(r.Status, ND_BUFFER_OVERFLOW);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(1));
  r = p.b.NextR();
  EXPECT_EQ(r.Status, ND_CANCELED);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(2));
  r = p.a.NextI();
  EXPECT_EQ(r.Status, STATUS_DATA_ERROR);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(3));
  r = p.a.NextI();
  EXPECT_EQ(r.Status, ND_CANCELED);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(4));
  // Posted after the error: accepted and flushed.
  ASSERT_EQ(p.a.PostSend(reinterpret_cast<void*>(5), 0, 1), ND_SUCCESS);
  r = p.a.NextI();
  EXPECT_EQ(r.Status, ND_CANCELED);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(5));
  ASSERT_EQ(p.b.PostReceive(reinterpret_cast<void*>(6), 0, 1), ND_SUCCESS);
  r = p.b.NextR();
  EXPECT_EQ(r.Status, ND_CANCELED);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(6));
}

// A receive whose SGE names no registered memory: the receiver's result is
// ND_ACCESS_VIOLATION, the sender's ND_REMOTE_ERROR (the peer failed it).
TEST_P(Nd2Qp, ReceiveIntoInvalidMemoryIsARemoteErrorAtTheSender) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  ND2_SGE bad{p.b.buf.data(), 64, p.b.mr->GetLocalToken() ^ 0x7};
  ASSERT_EQ(p.b.qp->Receive(reinterpret_cast<void*>(1), &bad, 1), ND_SUCCESS);
  ASSERT_EQ(p.a.PostSend(reinterpret_cast<void*>(2), 0, 8), ND_SUCCESS);
  ND2_RESULT r = p.b.NextR();
  EXPECT_EQ(r.Status, ND_ACCESS_VIOLATION);
  r = p.a.NextI();
  EXPECT_EQ(r.Status, ND_REMOTE_ERROR);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(2));
}

// Local SGEs that name no memory of this adapter (a made-up token, another
// adapter's region, a range past the region): ND_ACCESS_VIOLATION in the
// result, never a crash or a write elsewhere.
TEST_P(Nd2Qp, ForeignOrInvalidLocalTokens) {
  std::vector<char> outside(64, 'x');
  const char* names[] = {"another adapter's token", "a made-up token", "the region's remote token",
                         "memory outside the region", "one byte past the region"};
  auto sge_for = [&](Pair& q, int k) -> ND2_SGE {
    switch (k) {
      case 0: return {q.a.buf.data(), 8, q.b.mr->GetLocalToken()};
      case 1: return {q.a.buf.data(), 8, 0x5A5A5A5A};
      case 2: return {q.a.buf.data(), 8, q.a.mr->GetRemoteToken()};
      case 3: return {outside.data(), 8, q.a.mr->GetLocalToken()};
      default: return {q.a.buf.data() + q.a.buf.size() - 4, 5, q.a.mr->GetLocalToken()};
    }
  };
  for (int k = 0; k < 5; k++) {
    SCOPED_TRACE(names[k]);
    {  // as the source of a Send
      Pair q;
      ASSERT_NO_FATAL_FAILURE(q.Open());
      ND2_SGE s = sge_for(q, k);
      ASSERT_EQ(q.b.PostReceive(nullptr, 0, 64), ND_SUCCESS);
      ASSERT_EQ(q.a.qp->Send(reinterpret_cast<void*>(1), &s, 1, 0), ND_SUCCESS);
      ND2_RESULT r = q.a.NextI();
      EXPECT_EQ(r.Status, ND_ACCESS_VIOLATION);
      EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(1));
    }
    {  // as the sink of a Read
      Pair q;
      ASSERT_NO_FATAL_FAILURE(q.Open());
      ND2_SGE s = sge_for(q, k);
      ASSERT_EQ(q.a.qp->Read(reinterpret_cast<void*>(2), &s, 1, q.b.Va(0), q.b.mr->GetRemoteToken(), 0), ND_SUCCESS);
      ND2_RESULT r = q.a.NextI();
      EXPECT_EQ(r.Status, ND_ACCESS_VIOLATION);
      EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(2));
    }
    EXPECT_EQ(std::string(outside.begin(), outside.end()), std::string(64, 'x'));
  }
}

// Flush: every outstanding request of this queue pair (and only of it)
// completes ND_CANCELED; on an unconnected queue pair too.
TEST_P(Nd2Qp, FlushCancelsOnlyThisQueuePairsRequests) {
  Endpoint e;
  ASSERT_NO_FATAL_FAILURE(e.Open(kIpA));
  // A second queue pair on the same CQ, with receives of its own.
  IND2QueuePair* other = nullptr;
  ASSERT_EQ(e.adapter->CreateQueuePair(IID_IND2QueuePair, e.cq, e.cq, reinterpret_cast<void*>(0x77), 8, 8, 1, 1, 0,
                                       reinterpret_cast<void**>(&other)),
            ND_SUCCESS);
  ND2_SGE s = e.Sge(0, 64);
  ASSERT_EQ(other->Receive(reinterpret_cast<void*>(99), &s, 1), ND_SUCCESS);
  for (uintptr_t i = 1; i <= 5; i++) ASSERT_EQ(e.qp->Receive(reinterpret_cast<void*>(i), &s, 1), ND_SUCCESS);
  EXPECT_EQ(e.qp->Flush(), ND_SUCCESS);
  std::vector<ND2_RESULT> rs = Drain(e.cq, 100, 5);
  ASSERT_EQ(rs.size(), 5u);
  for (uintptr_t i = 0; i < 5; i++) {
    EXPECT_EQ(rs[i].Status, ND_CANCELED);
    EXPECT_EQ(rs[i].RequestType, Nd2RequestTypeReceive);
    EXPECT_EQ(rs[i].RequestContext, reinterpret_cast<void*>(i + 1));
    EXPECT_EQ(rs[i].QueuePairContext, &e);
  }
  // Flush again: nothing more, still ND_SUCCESS.
  EXPECT_EQ(e.qp->Flush(), ND_SUCCESS);
  EXPECT_TRUE(Drain(e.cq, 30).empty());
  // The other queue pair's receive is still there: released, it is flushed now.
  other->Release();
  rs = Drain(e.cq, 100, 1);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].RequestContext, reinterpret_cast<void*>(99));
  EXPECT_EQ(rs[0].QueuePairContext, reinterpret_cast<void*>(0x77));
  e.Close();
}

// Inline progress: nothing moves between the posts and the Flush.
TEST_F(Nd2QpInline, FlushCancelsOutstandingRequestsOfAConnectedQueuePair) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  for (uintptr_t i = 1; i <= 3; i++) ASSERT_EQ(p.a.PostSend(reinterpret_cast<void*>(i), 0, 8), ND_SUCCESS);
  ND2_SGE s = p.a.Sge(0, 4096);
  ASSERT_EQ(p.a.qp->Read(reinterpret_cast<void*>(4), &s, 1, p.b.Va(0), p.b.mr->GetRemoteToken(), 0), ND_SUCCESS);
  ASSERT_EQ(p.a.PostReceive(reinterpret_cast<void*>(5), 0, 8), ND_SUCCESS);
  EXPECT_EQ(p.a.qp->Flush(), ND_SUCCESS);
  for (uintptr_t i = 1; i <= 5; i++) {
    ND2_RESULT r = p.a.NextI();
    EXPECT_EQ(r.Status, ND_CANCELED);
    EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(i));
  }
  // Posted after the Flush: completed ND_CANCELED.
  ASSERT_EQ(p.a.PostSend(reinterpret_cast<void*>(9), 0, 8), ND_SUCCESS);
  EXPECT_EQ(p.a.NextI().Status, ND_CANCELED);
  EXPECT_TRUE(Drain(p.b.cq, 30).empty());  // the peer saw nothing
}

// A Send with no receive posted at the peer: after the RNR retries it
// completes ND_IO_TIMEOUT at the sender; the peer sees nothing.
TEST_P(Nd2Qp, SendWithNoReceivePostedTimesOut) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  ASSERT_EQ(p.a.PostSend(reinterpret_cast<void*>(1), 0, 8), ND_SUCCESS);
  ASSERT_EQ(p.a.PostSend(reinterpret_cast<void*>(2), 0, 8), ND_SUCCESS);
  ND2_RESULT r = p.a.NextI(30000);
  EXPECT_EQ(r.Status, ND_IO_TIMEOUT);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(1));
  r = p.a.NextI();
  EXPECT_EQ(r.Status, ND_CANCELED);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(2));
  EXPECT_TRUE(Drain(p.b.cq, 30).empty());
}

// A released queue pair's outstanding requests come back ND_CANCELED
// through its CQs (which outlive it).
TEST_P(Nd2Qp, ReleasedQueuePairFlushesIntoItsCq) {
  Endpoint e;
  ASSERT_NO_FATAL_FAILURE(e.Open(kIpA));
  for (uintptr_t i = 1; i <= 3; i++) ASSERT_EQ(e.PostReceive(reinterpret_cast<void*>(i), 0, 8), ND_SUCCESS);
  e.qp->Release();
  e.qp = nullptr;
  std::vector<ND2_RESULT> rs = Drain(e.cq, 100, 3);
  ASSERT_EQ(rs.size(), 3u);
  for (auto& r : rs) EXPECT_EQ(r.Status, ND_CANCELED);
  e.Close();
}

TEST_P(Nd2Qp, QueryInterface) {
  Endpoint e;
  ASSERT_NO_FATAL_FAILURE(e.Open(kIpA));
  void* p = reinterpret_cast<void*>(1);
  EXPECT_EQ(e.qp->QueryInterface(IID_IND2Overlapped, &p), E_NOINTERFACE);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(e.qp->QueryInterface(IID_IND2CompletionQueue, &p), E_NOINTERFACE);
  EXPECT_EQ(e.qp->QueryInterface(IID_IND2QueuePair, nullptr), E_POINTER);
  IUnknown* u = nullptr;
  ASSERT_EQ(e.qp->QueryInterface(IID_IUnknown, reinterpret_cast<void**>(&u)), S_OK);
  IND2QueuePairSendAndInvalidate* si = nullptr;
  ASSERT_EQ(u->QueryInterface(IID_IND2QueuePairSendAndInvalidate, reinterpret_cast<void**>(&si)), S_OK);
  IND2QueuePair* back = nullptr;
  ASSERT_EQ(si->QueryInterface(IID_IND2QueuePair, reinterpret_cast<void**>(&back)), S_OK);
  EXPECT_EQ(back, e.qp);
  back->Release();
  si->Release();
  u->Release();
  e.Close();
}

}  // namespace
}  // namespace nd2t
