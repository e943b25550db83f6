// SPDX-License-Identifier: MIT
// A memory / connection conformance suite in the spirit of Microsoft's
// ndmemorytest (its cases, written here from nd2-reference.md's behaviours,
// not from its code): through the public headers only, two adapters of one
// process over a net_ring pair, both progress modes. Each case that breaks a
// connection makes a fresh one.
//
//   WriteToReadOnlyWindow          ND_ACCESS_VIOLATION at the writer, the owner's receive flushed
//   AccessAfterInvalidate          Write and Read after Invalidate: ND_ACCESS_VIOLATION
//   OneBytePastAWindowOrRegion     Read / Write one byte past the end: ND_ACCESS_VIOLATION
//   PrivateDataMaximaOnOneConnector 57 then 56 bytes (Connect), 149 then 148 (Accept)
//   SendWithNoReceiveTimesOut      ND_IO_TIMEOUT at the sender within seconds; the peer sees nothing
//   SendWaitsForALateReceive       a receive posted 0.3 s late still takes the Send (RNR retries)
//   FlushOfAnUnconnectedQp         two zero-SGE receives, Flush: both ND_CANCELED, one Notify
//   ReceiveFlushedWhenThePeerCloses  Disconnect, or release without it: ND_CANCELED
//   RejectEitherWay                the server's Reject, the client's Reject after Connect
//   ConnectToAClosedListener       ND_CONNECTION_REFUSED
//   DoubleBindAndDoubleConnect     0xC0000238, ND_CONNECTION_ACTIVE, the abandoned Accept refused
//   InvalidAddress                 0xC00000CC, ND_INVALID_ADDRESS
//   QueueDepthsMaxAndMaxPlusOne    every maximum at once works; each maximum + 1 fails
//   DeregisterWithABoundWindow     ND_DEVICE_BUSY until the window is invalidated
//   RegisterNullOrEmpty            Register(NULL, 0) ND_INVALID_PARAMETER, (buf, 0) ND_INVALID_BUFFER_SIZE
#include <memory>

#include "nd2_connect_support.h"

namespace {

using namespace nd2test;

constexpr uint16_t kPort = 54350;  // ndmemorytest's

// What the owner of a window sends its peer.
struct WindowDesc {
  UINT64 base;
  UINT32 token;
  UINT32 length;
};

class Nd2Memory : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    proc_ = std::make_unique<Process>("nd2mem", GetParam());
    ASSERT_TRUE(proc_->started());
  }
  void TearDown() override {
    Drop();
    proc_.reset();
  }
  // A fresh client (10.0.0.1) and server (10.0.0.2), connected. The server's
  // first receive (4 KB at buf[0]) is posted before Accept.
  void Connect() {
    Drop();
    ASSERT_NO_FATAL_FAILURE(c_.Open("10.0.0.1"));
    ASSERT_NO_FATAL_FAILURE(s_.Open("10.0.0.2"));
    l_ = Listen(s_, "10.0.0.2", kPort);
    ASSERT_NE(l_, nullptr);
    ASSERT_HR(s_.Recv(&s_, 0, 4096), ND_SUCCESS);
    sockaddr_in dest = V4("10.0.0.2", kPort);
    ASSERT_NO_FATAL_FAILURE(Establish(c_, s_, l_, Sa(dest), sizeof dest));
  }
  void Drop() {
    if (mw_) mw_->Release();
    mw_ = nullptr;
    l_.reset();
    c_.Close();
    s_.Close();
  }
  // The client binds a window over its buf[off, off + len) with `flags` and
  // sends the server its description; the server's receive takes it.
  void ShareWindow(size_t off, ULONG len, ULONG flags) {
    ASSERT_HR(c_.adapter->CreateMemoryWindow(IID_IND2MemoryWindow, reinterpret_cast<void**>(&mw_)), ND_SUCCESS);
    ASSERT_HR(c_.qp->Bind(&mw_, c_.mr, mw_, c_.buf.data() + off, len, flags), ND_SUCCESS);
    auto r = c_.Next();
    ASSERT_TRUE(r);
    ASSERT_HR(r->Status, ND_SUCCESS);
    ASSERT_EQ(r->RequestType, Nd2RequestTypeBind);
    ASSERT_EQ(r->RequestContext, &mw_);
    WindowDesc d{reinterpret_cast<UINT64>(c_.buf.data() + off), mw_->GetRemoteToken(), len};
    std::memcpy(c_.buf.data() + 60000, &d, sizeof d);
    ASSERT_HR(c_.Send(nullptr, 60000, sizeof d), ND_SUCCESS);
    r = c_.Next();
    ASSERT_TRUE(r);
    ASSERT_HR(r->Status, ND_SUCCESS);
    r = s_.Next();
    ASSERT_TRUE(r);
    ASSERT_HR(r->Status, ND_SUCCESS);
    ASSERT_EQ(r->BytesTransferred, sizeof d);
    std::memcpy(&desc_, s_.buf.data(), sizeof desc_);
  }
  // The server reads or writes n bytes at the window's base + at; the status
  // of its completion.
  HRESULT Access(bool write, UINT64 at, ULONG n) {
    ND2_SGE sge = s_.Sge(8192, n);
    const HRESULT h = write ? s_.qp->Write(nullptr, &sge, 1, desc_.base + at, desc_.token, 0)
                            : s_.qp->Read(nullptr, &sge, 1, desc_.base + at, desc_.token, 0);
    if (h != ND_SUCCESS) return h;
    auto r = s_.Next();
    if (!r) return ND_PENDING;
    EXPECT_EQ(r->RequestType, write ? Nd2RequestTypeWrite : Nd2RequestTypeRead);
    return r->Status;
  }
  // The client's posted receive is flushed: the window owner's QP went to
  // error with the failed access (ND_CANCELED).
  void ExpectOwnerFlushed() {
    auto r = c_.Next();
    ASSERT_TRUE(r) << "the owner's receive was not flushed";
    EXPECT_HR(r->Status, ND_CANCELED);
    EXPECT_EQ(r->RequestType, Nd2RequestTypeReceive);
  }

  std::unique_ptr<Process> proc_;
  Side c_, s_;
  Owned<IND2Listener> l_;
  IND2MemoryWindow* mw_ = nullptr;
  WindowDesc desc_{};
};

TEST_P(Nd2Memory, WriteToReadOnlyWindow) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  for (size_t i = 0; i < 8192; i++) c_.buf[4096 + i] = static_cast<char>(i * 5);
  ASSERT_NO_FATAL_FAILURE(ShareWindow(4096, 8192, ND_OP_FLAG_ALLOW_READ));
  ASSERT_HR(c_.Recv(&c_, 0, 64), ND_SUCCESS);  // tells the owner when the peer fails it
  // Reading is allowed.
  ASSERT_HR(Access(false, 0, 8192), ND_SUCCESS);
  EXPECT_EQ(std::memcmp(s_.buf.data() + 8192, c_.buf.data() + 4096, 8192), 0);
  // Writing is not: ND_ACCESS_VIOLATION at the writer, nothing written.
  std::memset(s_.buf.data() + 8192, 0x11, 100);
  EXPECT_HR(Access(true, 0, 100), ND_ACCESS_VIOLATION);
  EXPECT_EQ(c_.buf[4096 + 1], static_cast<char>(5));
  ASSERT_NO_FATAL_FAILURE(ExpectOwnerFlushed());
}

TEST_P(Nd2Memory, AccessAfterInvalidate) {
  for (bool write : {true, false}) {
    SCOPED_TRACE(write ? "Write" : "Read");
    ASSERT_NO_FATAL_FAILURE(Connect());
    ASSERT_NO_FATAL_FAILURE(ShareWindow(4096, 8192, ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE));
    std::strcpy(s_.buf.data() + 8192, "through the window");
    ASSERT_HR(Access(true, 16, 19), ND_SUCCESS);  // valid while bound
    EXPECT_STREQ(c_.buf.data() + 4096 + 16, "through the window");
    ASSERT_HR(c_.qp->Invalidate(&desc_, mw_, 0), ND_SUCCESS);
    auto r = c_.Next();
    ASSERT_TRUE(r);
    EXPECT_HR(r->Status, ND_SUCCESS);
    EXPECT_EQ(r->RequestType, Nd2RequestTypeInvalidate);
    ASSERT_HR(c_.Recv(&c_, 0, 64), ND_SUCCESS);
    EXPECT_HR(Access(write, 16, 19), ND_ACCESS_VIOLATION);
    ASSERT_NO_FATAL_FAILURE(ExpectOwnerFlushed());
  }
}

TEST_P(Nd2Memory, OneBytePastAWindowOrRegion) {
  for (bool write : {false, true}) {
    SCOPED_TRACE(write ? "Write" : "Read");
    ASSERT_NO_FATAL_FAILURE(Connect());
    ASSERT_NO_FATAL_FAILURE(ShareWindow(4096, 8192, ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE));
    ASSERT_HR(c_.Recv(&c_, 0, 64), ND_SUCCESS);
    ASSERT_HR(Access(write, 0, 8192), ND_SUCCESS);  // exactly the window
    ASSERT_HR(Access(write, 8191, 1), ND_SUCCESS);  // its last byte
    EXPECT_HR(Access(write, 1, 8192), ND_ACCESS_VIOLATION);
    ASSERT_NO_FATAL_FAILURE(ExpectOwnerFlushed());
  }
  // A region: its remote token, one byte past its end (the 64 KB buffer).
  ASSERT_NO_FATAL_FAILURE(Connect());
  ASSERT_HR(c_.Recv(&c_, 0, 64), ND_SUCCESS);
  desc_ = WindowDesc{reinterpret_cast<UINT64>(c_.buf.data()), c_.mr->GetRemoteToken(),
                     static_cast<UINT32>(c_.buf.size())};
  ASSERT_HR(Access(false, c_.buf.size() - 4096, 4096), ND_SUCCESS);
  EXPECT_HR(Access(false, c_.buf.size() - 4096, 4097), ND_ACCESS_VIOLATION);
  ASSERT_NO_FATAL_FAILURE(ExpectOwnerFlushed());
}

TEST_P(Nd2Memory, PrivateDataMaximaOnOneConnector) {
  ASSERT_NO_FATAL_FAILURE(c_.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s_.Open("10.0.0.2"));
  ND2_ADAPTER_INFO info{};
  info.InfoVersion = ND_VERSION_2;
  ULONG cb = sizeof info;
  ASSERT_HR(c_.adapter->Query(&info, &cb), ND_SUCCESS);
  l_ = Listen(s_, "10.0.0.2", kPort);
  OVERLAPPED lov{};
  ASSERT_HR(l_->GetConnectionRequest(s_.conn, &lov), ND_PENDING);
  ASSERT_HR(s_.qp->Receive(nullptr, nullptr, 0), ND_SUCCESS);  // a zero-SGE receive
  std::vector<char> pd(info.MaxCalleeData + 1, 'p');
  sockaddr_in dest = V4("10.0.0.2", kPort);
  sockaddr_in src = V4("10.0.0.1", 0);
  // As ndmemorytest does it: Bind then Connect, twice on one connector (the
  // second Bind fails: already bound).
  ASSERT_HR(c_.conn->Bind(Sa(src), sizeof src), ND_SUCCESS);
  EXPECT_HR(c_.conn->Connect(c_.qp, Sa(dest), sizeof dest, 1, 1, pd.data(), info.MaxCallerData + 1, &c_.ov),
            ND_INVALID_BUFFER_SIZE);
  EXPECT_HR(c_.conn->Bind(Sa(src), sizeof src), STATUS_ADDRESS_ALREADY_ASSOCIATED);
  ASSERT_HR(c_.conn->Connect(c_.qp, Sa(dest), sizeof dest, 1, 1, pd.data(), info.MaxCallerData, &c_.ov),
            ND_PENDING);
  ASSERT_HR(Await(l_, &lov, ND_PENDING), ND_SUCCESS);
  EXPECT_HR(s_.conn->Accept(s_.qp, 1, 1, pd.data(), info.MaxCalleeData + 1, &s_.ov), ND_INVALID_BUFFER_SIZE);
  ASSERT_HR(s_.conn->Accept(s_.qp, 1, 1, pd.data(), info.MaxCalleeData, &s_.ov), ND_PENDING);
  ASSERT_HR(Await(c_.conn, &c_.ov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(Await(c_.conn, &c_.ov, c_.conn->CompleteConnect(&c_.ov)), ND_SUCCESS);
  ASSERT_HR(Await(s_.conn, &s_.ov, ND_PENDING), ND_SUCCESS);
  // A zero-length Send into the zero-SGE receive.
  ASSERT_HR(c_.qp->Send(nullptr, nullptr, 0, 0), ND_SUCCESS);
  auto r = c_.Next();
  ASSERT_TRUE(r);
  EXPECT_HR(r->Status, ND_SUCCESS);
  r = s_.Next();
  ASSERT_TRUE(r);
  EXPECT_HR(r->Status, ND_SUCCESS);
  EXPECT_EQ(r->BytesTransferred, 0u);
}

TEST_P(Nd2Memory, SendWithNoReceiveTimesOut) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  // Use up the server's one receive.
  ASSERT_HR(c_.Send(nullptr, 0, 10), ND_SUCCESS);
  ASSERT_TRUE(c_.Next());
  ASSERT_TRUE(s_.Next());
  const uint64_t t0 = NowMs();
  ASSERT_HR(c_.Send(&c_, 0, 4096), ND_SUCCESS);
  auto r = c_.Next(20000);
  ASSERT_TRUE(r) << "the Send never completed";
  EXPECT_HR(r->Status, ND_IO_TIMEOUT);  // after the RNR retries
  EXPECT_EQ(r->RequestType, Nd2RequestTypeSend);
  EXPECT_EQ(r->RequestContext, &c_);
  EXPECT_LT(NowMs() - t0, 5000u) << "RNR retries must end within seconds";
  // The peer saw nothing, and a receive posted now stays empty.
  EXPECT_TRUE(s_.Quiet(100));
  ASSERT_HR(s_.Recv(&s_, 0, 4096), ND_SUCCESS);
  EXPECT_TRUE(s_.Quiet(200));
}

// The other side of the RNR budget: a receive posted late, but within it,
// takes the Send (the sender retried, it did not fail).
TEST_P(Nd2Memory, SendWaitsForALateReceive) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  ASSERT_HR(c_.Send(nullptr, 0, 10), ND_SUCCESS);  // uses up the server's receive
  ASSERT_TRUE(c_.Next());
  ASSERT_TRUE(s_.Next());
  std::strcpy(c_.buf.data() + 100, "late but taken");
  ASSERT_HR(c_.Send(&c_, 100, 15), ND_SUCCESS);
  Pump(300);
  ASSERT_HR(s_.Recv(&s_, 0, 4096), ND_SUCCESS);
  auto r = c_.Next();
  ASSERT_TRUE(r);
  EXPECT_HR(r->Status, ND_SUCCESS);
  r = s_.Next();
  ASSERT_TRUE(r);
  EXPECT_HR(r->Status, ND_SUCCESS);
  EXPECT_STREQ(s_.buf.data(), "late but taken");
}

TEST_P(Nd2Memory, FlushOfAnUnconnectedQp) {
  ASSERT_NO_FATAL_FAILURE(s_.Open("10.0.0.2"));
  ASSERT_HR(s_.qp->Receive(&s_, nullptr, 0), ND_SUCCESS);
  ASSERT_HR(s_.qp->Receive(&c_, nullptr, 0), ND_SUCCESS);
  ASSERT_HR(s_.qp->Flush(), ND_SUCCESS);
  // One notification, then both results, ND_CANCELED, in posting order.
  HRESULT h = s_.cq->Notify(ND_CQ_NOTIFY_ANY, &s_.ov);
  EXPECT_HR(Await(s_.cq, &s_.ov, h), ND_SUCCESS);
  ND2_RESULT r[3] = {};
  ASSERT_EQ(s_.cq->GetResults(r, 3), 2u);
  EXPECT_HR(r[0].Status, ND_CANCELED);
  EXPECT_HR(r[1].Status, ND_CANCELED);
  EXPECT_EQ(r[0].RequestContext, &s_);
  EXPECT_EQ(r[1].RequestContext, &c_);
  EXPECT_EQ(r[0].RequestType, Nd2RequestTypeReceive);
}

TEST_P(Nd2Memory, ReceiveFlushedWhenThePeerCloses) {
  // The peer disconnects right after connecting.
  ASSERT_NO_FATAL_FAILURE(Connect());
  ASSERT_HR(Await(c_.conn, &c_.ov, c_.conn->Disconnect(&c_.ov)), ND_SUCCESS);
  auto r = s_.Next(5000);
  ASSERT_TRUE(r);
  EXPECT_HR(r->Status, ND_CANCELED);
  EXPECT_EQ(r->RequestContext, &s_);
  // The peer goes away without Disconnect (releases its connector and QP).
  ASSERT_NO_FATAL_FAILURE(Connect());
  c_.conn->Release();
  c_.conn = nullptr;
  c_.qp->Release();
  c_.qp = nullptr;
  r = s_.Next(5000);
  ASSERT_TRUE(r);
  EXPECT_HR(r->Status, ND_CANCELED);
}

TEST_P(Nd2Memory, RejectEitherWay) {
  ASSERT_NO_FATAL_FAILURE(c_.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s_.Open("10.0.0.2"));
  l_ = Listen(s_, "10.0.0.2", kPort);
  sockaddr_in dest = V4("10.0.0.2", kPort);
  OVERLAPPED lov{};
  // The server rejects: the client's Connect ND_CONNECTION_REFUSED.
  ASSERT_HR(l_->GetConnectionRequest(s_.conn, &lov), ND_PENDING);
  ASSERT_HR(c_.conn->Connect(c_.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &c_.ov), ND_PENDING);
  ASSERT_HR(Await(l_, &lov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(s_.conn->Reject(nullptr, 0), ND_SUCCESS);
  EXPECT_HR(Await(c_.conn, &c_.ov, ND_PENDING), ND_CONNECTION_REFUSED);
  // The client rejects the server's acceptance: Accept ND_CONNECTION_REFUSED.
  ASSERT_NO_FATAL_FAILURE(s_.NewConnector());
  ASSERT_HR(l_->GetConnectionRequest(s_.conn, &lov), ND_PENDING);
  ASSERT_HR(c_.conn->Connect(c_.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &c_.ov), ND_PENDING);
  ASSERT_HR(Await(l_, &lov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(s_.conn->Accept(s_.qp, 0, 0, nullptr, 0, &s_.ov), ND_PENDING);
  ASSERT_HR(Await(c_.conn, &c_.ov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(c_.conn->Reject(nullptr, 0), ND_SUCCESS);
  EXPECT_HR(Await(s_.conn, &s_.ov, ND_PENDING), ND_CONNECTION_REFUSED);
}

TEST_P(Nd2Memory, ConnectToAClosedListener) {
  ASSERT_NO_FATAL_FAILURE(c_.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s_.Open("10.0.0.2"));
  auto l = Listen(s_, "10.0.0.2", kPort);
  l.reset();
  Pump(100);
  sockaddr_in dest = V4("10.0.0.2", kPort);
  ASSERT_HR(c_.conn->Connect(c_.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &c_.ov), ND_PENDING);
  EXPECT_HR(Await(c_.conn, &c_.ov, ND_PENDING), ND_CONNECTION_REFUSED);
}

TEST_P(Nd2Memory, DoubleBindAndDoubleConnect) {
  ASSERT_NO_FATAL_FAILURE(c_.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s_.Open("10.0.0.2"));
  l_ = Listen(s_, "10.0.0.2", kPort);
  sockaddr_in la = V4("10.0.0.2", kPort);
  EXPECT_HR(l_->Bind(Sa(la), sizeof la), STATUS_ADDRESS_ALREADY_ASSOCIATED);  // the same listener again
  Owned<IND2Listener> l2;
  ASSERT_HR(s_.adapter->CreateListener(IID_IND2Listener, s_.file, l2.pv()), ND_SUCCESS);
  EXPECT_HR(l2->Bind(Sa(la), sizeof la), ND_SHARING_VIOLATION);  // another on the same address
  EXPECT_NE(l2->Listen(0), ND_SUCCESS);
  l2.reset();
  OVERLAPPED lov{};
  ASSERT_HR(l_->GetConnectionRequest(s_.conn, &lov), ND_PENDING);
  sockaddr_in src = V4("10.0.0.1", 0);
  ASSERT_HR(c_.conn->Bind(Sa(src), sizeof src), ND_SUCCESS);
  ASSERT_HR(c_.conn->Connect(c_.qp, Sa(la), sizeof la, 1, 1, nullptr, 0, &c_.ov), ND_PENDING);
  ASSERT_HR(Await(l_, &lov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(s_.conn->Accept(s_.qp, 1, 1, nullptr, 0, &s_.ov), ND_PENDING);
  ASSERT_HR(Await(c_.conn, &c_.ov, ND_PENDING), ND_SUCCESS);
  // Another connection on the same connector: Bind 0xC0000238, Connect ND_CONNECTION_ACTIVE.
  EXPECT_HR(c_.conn->Bind(Sa(src), sizeof src), static_cast<HRESULT>(0xC0000238));
  OVERLAPPED x{};
  EXPECT_HR(Await(c_.conn, &x, c_.conn->Connect(c_.qp, Sa(la), sizeof la, 0, 0, nullptr, 0, &x)),
            ND_CONNECTION_ACTIVE);
  // The client goes away without CompleteConnect: the server's Accept is refused.
  c_.conn->Release();
  c_.conn = nullptr;
  EXPECT_HR(Await(s_.conn, &s_.ov, ND_PENDING), STATUS_CONNECTION_REFUSED);
}

TEST_P(Nd2Memory, InvalidAddress) {
  ASSERT_NO_FATAL_FAILURE(c_.Open("10.0.0.1"));
  sockaddr_in zero = V4("0.0.0.0", kPort);
  EXPECT_HR(Await(c_.conn, &c_.ov, c_.conn->Connect(c_.qp, Sa(zero), sizeof zero, 0, 0, nullptr, 0, &c_.ov)),
            STATUS_BAD_NETWORK_NAME);
  sockaddr_in nobody = V4("10.0.0.9", 0);
  EXPECT_HR(c_.conn->Bind(Sa(nobody), sizeof nobody), ND_INVALID_ADDRESS);
  Owned<IND2Adapter> a;
  EXPECT_HR(NdOpenAdapter(IID_IND2Adapter, Sa(nobody), sizeof nobody, a.pv()),
            ND_INVALID_ADDRESS);
}

TEST_P(Nd2Memory, QueueDepthsMaxAndMaxPlusOne) {
  ASSERT_NO_FATAL_FAILURE(s_.Open("10.0.0.2"));
  ND2_ADAPTER_INFO i{};
  i.InfoVersion = ND_VERSION_2;
  ULONG cb = sizeof i;
  ASSERT_HR(s_.adapter->Query(&i, &cb), ND_SUCCESS);
  Owned<IND2CompletionQueue> cq;
  ASSERT_HR(s_.adapter->CreateCompletionQueue(IID_IND2CompletionQueue, s_.file, i.MaxCompletionQueueDepth, 0, 0,
                                              cq.pv()),
            ND_SUCCESS);
  Owned<IND2CompletionQueue> bad_cq;
  EXPECT_TRUE(FAILED(s_.adapter->CreateCompletionQueue(IID_IND2CompletionQueue, s_.file,
                                                       i.MaxCompletionQueueDepth + 1, 0, 0,
                                                       bad_cq.pv())));
  EXPECT_EQ(bad_cq.get(), nullptr);
  auto qp = [&](ULONG rq, ULONG iq, ULONG rsge, ULONG isge, ULONG inl) {
    IND2QueuePair* q = nullptr;
    const HRESULT h = s_.adapter->CreateQueuePair(IID_IND2QueuePair, cq, cq, nullptr, rq, iq, rsge, isge, inl,
                                                  reinterpret_cast<void**>(&q));
    if (q) q->Release();
    return h;
  };
  const ULONG rq = i.MaxReceiveQueueDepth, iq = i.MaxInitiatorQueueDepth, rs = i.MaxReceiveSge,
              is = i.MaxInitiatorSge, in = i.MaxInlineDataSize;
  EXPECT_HR(qp(rq, iq, rs, is, in), ND_SUCCESS);  // every maximum at once
  EXPECT_TRUE(FAILED(qp(rq + 1, 1, 1, 1, 0)));
  EXPECT_TRUE(FAILED(qp(1, iq + 1, 1, 1, 0)));
  EXPECT_TRUE(FAILED(qp(1, 1, rs + 1, 1, 0)));
  EXPECT_TRUE(FAILED(qp(1, 1, 1, is + 1, 0)));
  EXPECT_TRUE(FAILED(qp(1, 1, 1, 1, in + 1)));
  Owned<IND2SharedReceiveQueue> srq;
  EXPECT_TRUE(FAILED(s_.adapter->CreateSharedReceiveQueue(IID_IND2SharedReceiveQueue, s_.file,
                                                          i.MaxSharedReceiveQueueDepth + 1, 1, 0, 0, 0,
                                                          srq.pv())));
  ASSERT_HR(s_.adapter->CreateSharedReceiveQueue(IID_IND2SharedReceiveQueue, s_.file, i.MaxSharedReceiveQueueDepth,
                                                 i.MaxReceiveSge, 0, 0, 0, srq.pv()),
            ND_SUCCESS);
  srq.reset();
  cq.reset();
}

TEST_P(Nd2Memory, DeregisterWithABoundWindow) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  ASSERT_NO_FATAL_FAILURE(ShareWindow(4096, 4096, ND_OP_FLAG_ALLOW_READ));
  EXPECT_HR(c_.mr->Deregister(&c_.ov), ND_DEVICE_BUSY);
  // Still registered and usable: a Send from it works.
  ASSERT_HR(s_.Recv(&s_, 0, 64), ND_SUCCESS);
  ASSERT_HR(c_.Send(nullptr, 0, 8), ND_SUCCESS);
  auto r = c_.Next();
  ASSERT_TRUE(r);
  EXPECT_HR(r->Status, ND_SUCCESS);
  // Once the window is invalidated, Deregister succeeds.
  ASSERT_HR(c_.qp->Invalidate(nullptr, mw_, 0), ND_SUCCESS);
  r = c_.Next();
  ASSERT_TRUE(r);
  EXPECT_HR(r->Status, ND_SUCCESS);
  EXPECT_HR(Await(c_.mr, &c_.ov, c_.mr->Deregister(&c_.ov)), ND_SUCCESS);
  EXPECT_HR(Await(c_.mr, &c_.ov, c_.mr->Register(c_.buf.data(), 4096, ND_MR_FLAG_ALLOW_LOCAL_WRITE, &c_.ov)),
            ND_SUCCESS);  // Close deregisters it again
}

TEST_P(Nd2Memory, RegisterNullOrEmpty) {
  ASSERT_NO_FATAL_FAILURE(s_.Open("10.0.0.2"));
  Owned<IND2MemoryRegion> mr;
  ASSERT_HR(s_.adapter->CreateMemoryRegion(IID_IND2MemoryRegion, s_.file, mr.pv()),
            ND_SUCCESS);
  EXPECT_HR(Await(mr, &s_.ov, mr->Register(nullptr, 0, ND_MR_FLAG_ALLOW_LOCAL_WRITE, &s_.ov)), ND_INVALID_PARAMETER);
  char ten[10];
  EXPECT_HR(Await(mr, &s_.ov, mr->Register(ten, 0, ND_MR_FLAG_ALLOW_LOCAL_WRITE, &s_.ov)), ND_INVALID_BUFFER_SIZE);
  // The region is still unregistered and takes a proper buffer.
  EXPECT_HR(Await(mr, &s_.ov, mr->Register(ten, sizeof ten, ND_MR_FLAG_ALLOW_LOCAL_WRITE, &s_.ov)), ND_SUCCESS);
  EXPECT_HR(Await(mr, &s_.ov, mr->Deregister(&s_.ov)), ND_SUCCESS);
  mr.reset();
}

INSTANTIATE_TEST_SUITE_P(Progress, Nd2Memory, ::testing::Values(false, true),
                         [](const auto& i) { return i.param ? "ProgressThread" : "Inline"; });

}  // namespace
