// SPDX-License-Identifier: MIT
// IND2Adapter: Query (true limits, sizes), QueryAddressList, CreateOverlappedFile
// and every Create* with good and bad arguments; limits that work together
// (a queue pair with every maximum at once, max + 1 refused); resources that
// run out (windows, regions, queue pairs, memory).
#include <sys/mman.h>
#include <sys/resource.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/nd2api/nd2_objects_util.h"

namespace nd2t {
namespace {

class Nd2Adapter : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(Start(Mode::kInline));
    a_ = OpenAdapter(kIpA);
    ASSERT_NE(a_, nullptr);
    ASSERT_EQ(a_->CreateOverlappedFile(&file_), ND_SUCCESS);
    info_ = QueryInfo(a_);
  }
  void TearDown() override {
    if (file_) CloseHandle(file_);
    if (a_) a_->Release();
  }
  IND2CompletionQueue* NewCq(ULONG depth = 64) {
    IND2CompletionQueue* cq = nullptr;
    EXPECT_EQ(a_->CreateCompletionQueue(IID_IND2CompletionQueue, file_, depth, 0, 0, reinterpret_cast<void**>(&cq)),
              ND_SUCCESS);
    return cq;
  }
  IND2Adapter* a_ = nullptr;
  HANDLE file_ = nullptr;
  ND2_ADAPTER_INFO info_{};
};

// ---- Query ----------------------------------------------------------------------------------

TEST_F(Nd2Adapter, QuerySizeProbeAndBufferOverflow) {
  // pInfo NULL with *pcbInfo 0: ND_BUFFER_OVERFLOW and the size needed.
  ULONG cb = 0;
  EXPECT_EQ(a_->Query(nullptr, &cb), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(cb, sizeof(ND2_ADAPTER_INFO));
  // A buffer one byte too small: ND_BUFFER_OVERFLOW, the size, the buffer untouched.
  unsigned char raw[sizeof(ND2_ADAPTER_INFO) + 64];
  std::memset(raw, 0xAB, sizeof raw);
  auto* info = reinterpret_cast<ND2_ADAPTER_INFO*>(raw);
  info->InfoVersion = ND_VERSION_2;
  cb = sizeof(ND2_ADAPTER_INFO) - 1;
  EXPECT_EQ(a_->Query(info, &cb), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(cb, sizeof(ND2_ADAPTER_INFO));
  for (size_t i = sizeof(ULONG); i < sizeof raw; i++) ASSERT_EQ(raw[i], 0xAB) << "byte " << i << " written";
  // Exactly the size: ND_SUCCESS. Bigger: ND_SUCCESS, *pcbInfo = the size used, nothing beyond it written.
  cb = sizeof raw;
  EXPECT_EQ(a_->Query(info, &cb), ND_SUCCESS);
  EXPECT_EQ(cb, sizeof(ND2_ADAPTER_INFO));
  for (size_t i = sizeof(ND2_ADAPTER_INFO); i < sizeof raw; i++) ASSERT_EQ(raw[i], 0xAB);
  // The documented version (1) is taken as well as the one clients pass (ND_VERSION_2).
  ND2_ADAPTER_INFO v1{};
  v1.InfoVersion = 1;
  cb = sizeof v1;
  EXPECT_EQ(a_->Query(&v1, &cb), ND_SUCCESS);
  EXPECT_EQ(v1.MaxInitiatorSge, info->MaxInitiatorSge);
  // No size pointer: ND_INVALID_PARAMETER_2.
  EXPECT_EQ(a_->Query(info, nullptr), ND_INVALID_PARAMETER_2);
}

TEST_F(Nd2Adapter, QueryReportsConsistentValuesAndOnlyTrueFlags) {
  EXPECT_EQ(info_.InfoVersion, ND_VERSION_2);
  EXPECT_LE(info_.MaxReadSge, info_.MaxInitiatorSge);
  EXPECT_GT(info_.MaxReceiveSge, 0u);
  EXPECT_GT(info_.MaxSharedReceiveQueueDepth, 0u);  // SRQs are supported
  EXPECT_EQ(info_.MaxCallerData, 56u);
  EXPECT_EQ(info_.MaxCalleeData, 148u);
  EXPECT_LE(info_.InlineRequestThreshold, info_.MaxInlineDataSize);
  // What MS-MPI asks of a provider (nd2-reference.md).
  EXPECT_GE(info_.MaxInitiatorQueueDepth, 32u);
  EXPECT_GE(info_.MaxReceiveQueueDepth, 128u);
  EXPECT_GE(info_.MaxCompletionQueueDepth, 160u);
  // Exactly the flags that hold (each is proven by a test: in-order placement
  // by Nd2Qp.InOrderPlacementOfAWrite, loopback by Nd2Qp.LoopbackConnection,
  // CQ resize by Nd2Cq.Resize*); no interrupt moderation, no multi-engine.
  EXPECT_EQ(info_.AdapterFlags, ULONG{ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED | ND_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED |
                                      ND_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED});
  // The adapter id names the adapter: the same through another open, another for the other adapter.
  IND2Adapter* again = OpenAdapter(kIpA);
  IND2Adapter* other = OpenAdapter(kIpB);
  ASSERT_TRUE(again && other);
  EXPECT_EQ(QueryInfo(again).AdapterId, info_.AdapterId);
  EXPECT_NE(QueryInfo(other).AdapterId, info_.AdapterId);
  again->Release();
  other->Release();
}

// ---- QueryAddressList -----------------------------------------------------------------------

TEST_F(Nd2Adapter, QueryAddressList) {
  ULONG cb = 0;
  EXPECT_EQ(a_->QueryAddressList(nullptr, &cb), ND_BUFFER_OVERFLOW);
  const ULONG need = cb;
  EXPECT_GE(need, sizeof(SOCKET_ADDRESS_LIST));
  std::vector<unsigned char> raw(need + 64, 0xCD);
  auto* list = reinterpret_cast<SOCKET_ADDRESS_LIST*>(raw.data());
  cb = need - 1;
  EXPECT_EQ(a_->QueryAddressList(list, &cb), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(cb, need);
  for (unsigned char c : raw) ASSERT_EQ(c, 0xCD) << "buffer written on overflow";
  cb = static_cast<ULONG>(raw.size());
  ASSERT_EQ(a_->QueryAddressList(list, &cb), ND_SUCCESS);
  EXPECT_EQ(cb, need);
  // The adapter's IPv4 and IPv6 addresses (ip, ip6 of its section), port 0.
  ASSERT_EQ(list->iAddressCount, 2);
  std::vector<std::string> got;
  for (int i = 0; i < list->iAddressCount; i++) {
    const sockaddr* sa = list->Address[i].lpSockaddr;
    char text[INET6_ADDRSTRLEN] = {};
    if (sa->sa_family == AF_INET) {
      EXPECT_EQ(list->Address[i].iSockaddrLength, int(sizeof(sockaddr_in)));
      EXPECT_EQ(reinterpret_cast<const sockaddr_in*>(sa)->sin_port, 0);
      inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, text, sizeof text);
    } else {
      EXPECT_EQ(list->Address[i].iSockaddrLength, int(sizeof(sockaddr_in6)));
      inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, text, sizeof text);
    }
    got.push_back(text);
  }
  EXPECT_EQ(got, (std::vector<std::string>{kIpA, "fd00::1"}));
}

// ---- CreateOverlappedFile ---------------------------------------------------------------------

TEST_F(Nd2Adapter, OverlappedFileBindsToAPortAndSurvivesCloseHandle) {
  EXPECT_EQ(a_->CreateOverlappedFile(nullptr), ND_INVALID_PARAMETER_1);
  HANDLE f = nullptr;
  ASSERT_EQ(a_->CreateOverlappedFile(&f), ND_SUCCESS);
  ASSERT_NE(f, nullptr);
  HANDLE port = CreateIoCompletionPort(f, nullptr, 77, 0);
  ASSERT_NE(port, nullptr);
  IND2CompletionQueue* cq = nullptr;
  ASSERT_EQ(a_->CreateCompletionQueue(IID_IND2CompletionQueue, f, 16, 0, 0, reinterpret_cast<void**>(&cq)),
            ND_SUCCESS);
  // A misbehaving client closes the file while the CQ uses it: requests on
  // the CQ still complete (to the port the file was bound to), nothing leaks
  // or crashes.
  EXPECT_TRUE(CloseHandle(f));
  OVERLAPPED ov{};
  ASSERT_EQ(cq->Notify(ND_CQ_NOTIFY_ANY, &ov), ND_PENDING);
  EXPECT_EQ(cq->CancelOverlappedRequests(), ND_SUCCESS);
  DWORD bytes = 0;
  ULONG_PTR key = 0;
  OVERLAPPED* got = nullptr;
  EXPECT_FALSE(GetQueuedCompletionStatus(port, &bytes, &key, &got, 1000));
  EXPECT_EQ(got, &ov);
  EXPECT_EQ(key, 77u);
  EXPECT_EQ(cq->GetOverlappedResult(&ov, FALSE), ND_CANCELED);
  cq->Release();
  CloseHandle(port);
}

// ---- Create*: IIDs, handles, depths ----------------------------------------------------------

TEST_F(Nd2Adapter, CreateWithWrongIidOrBadHandleOrNullOut) {
  void* p = reinterpret_cast<void*>(1);
  EXPECT_EQ(a_->CreateCompletionQueue(IID_IND2QueuePair, file_, 16, 0, 0, &p), E_NOINTERFACE);
  EXPECT_EQ(p, nullptr);
  p = reinterpret_cast<void*>(1);
  EXPECT_EQ(a_->CreateMemoryRegion(IID_IND2CompletionQueue, file_, &p), E_NOINTERFACE);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(a_->CreateMemoryWindow(IID_IND2MemoryRegion, &p), E_NOINTERFACE);
  EXPECT_EQ(a_->CreateSharedReceiveQueue(IID_IND2CompletionQueue, file_, 16, 1, 0, 0, 0, &p), E_NOINTERFACE);
  EXPECT_EQ(a_->CreateConnector(IID_IND2Listener, file_, &p), E_NOINTERFACE);
  EXPECT_EQ(a_->CreateListener(IID_IND2Connector, file_, &p), E_NOINTERFACE);
  IND2CompletionQueue* cq = NewCq();
  ASSERT_NE(cq, nullptr);
  EXPECT_EQ(a_->CreateQueuePair(IID_IND2CompletionQueue, cq, cq, nullptr, 4, 4, 1, 1, 0, &p), E_NOINTERFACE);
  // A handle that is no overlapped file of ours (an event, a closed one, a made-up one).
  HANDLE ev = CreateEvent(nullptr, FALSE, FALSE, nullptr);
  EXPECT_EQ(a_->CreateCompletionQueue(IID_IND2CompletionQueue, ev, 16, 0, 0, &p), ND_INVALID_HANDLE);
  EXPECT_EQ(a_->CreateMemoryRegion(IID_IND2MemoryRegion, ev, &p), ND_INVALID_HANDLE);
  EXPECT_EQ(a_->CreateSharedReceiveQueue(IID_IND2SharedReceiveQueue, ev, 16, 1, 0, 0, 0, &p), ND_INVALID_HANDLE);
  EXPECT_EQ(a_->CreateConnector(IID_IND2Connector, ev, &p), ND_INVALID_HANDLE);
  EXPECT_EQ(a_->CreateListener(IID_IND2Listener, ev, &p), ND_INVALID_HANDLE);
  CloseHandle(ev);
  EXPECT_EQ(a_->CreateCompletionQueue(IID_IND2CompletionQueue, ev, 16, 0, 0, &p), ND_INVALID_HANDLE);
  EXPECT_EQ(a_->CreateCompletionQueue(IID_IND2CompletionQueue, reinterpret_cast<HANDLE>(0x123450), 16, 0, 0, &p),
            ND_INVALID_HANDLE);
  EXPECT_EQ(a_->CreateCompletionQueue(IID_IND2CompletionQueue, nullptr, 16, 0, 0, &p), ND_INVALID_HANDLE);
  // No out pointer.
  EXPECT_EQ(a_->CreateCompletionQueue(IID_IND2CompletionQueue, file_, 16, 0, 0, nullptr), ND_INVALID_PARAMETER_6);
  EXPECT_EQ(a_->CreateMemoryRegion(IID_IND2MemoryRegion, file_, nullptr), ND_INVALID_PARAMETER_3);
  EXPECT_EQ(a_->CreateMemoryWindow(IID_IND2MemoryWindow, nullptr), ND_INVALID_PARAMETER_2);
  EXPECT_EQ(a_->CreateSharedReceiveQueue(IID_IND2SharedReceiveQueue, file_, 16, 1, 0, 0, 0, nullptr),
            ND_INVALID_PARAMETER_8);
  EXPECT_EQ(a_->CreateQueuePair(IID_IND2QueuePair, cq, cq, nullptr, 4, 4, 1, 1, 0, nullptr), ND_INVALID_PARAMETER_10);
  EXPECT_EQ(a_->CreateConnector(IID_IND2Connector, file_, nullptr), ND_INVALID_PARAMETER_3);
  EXPECT_EQ(a_->CreateListener(IID_IND2Listener, file_, nullptr), ND_INVALID_PARAMETER_3);
  // IUnknown is accepted for every object (and gives the same object).
  IUnknown* u = nullptr;
  ASSERT_EQ(a_->CreateMemoryWindow(IID_IUnknown, reinterpret_cast<void**>(&u)), ND_SUCCESS);
  IND2MemoryWindow* mw = nullptr;
  ASSERT_EQ(u->QueryInterface(IID_IND2MemoryWindow, reinterpret_cast<void**>(&mw)), S_OK);
  EXPECT_EQ(static_cast<IUnknown*>(mw), u);
  mw->Release();
  u->Release();
  cq->Release();
}

TEST_F(Nd2Adapter, CompletionQueueDepthLimits) {
  void* p = nullptr;
  EXPECT_EQ(a_->CreateCompletionQueue(IID_IND2CompletionQueue, file_, 0, 0, 0, &p), ND_INVALID_PARAMETER_3);
  EXPECT_EQ(a_->CreateCompletionQueue(IID_IND2CompletionQueue, file_, info_.MaxCompletionQueueDepth + 1, 0, 0, &p),
            ND_INVALID_PARAMETER_3);
  EXPECT_EQ(p, nullptr);
  ASSERT_EQ(a_->CreateCompletionQueue(IID_IND2CompletionQueue, file_, info_.MaxCompletionQueueDepth, 0, 0, &p),
            ND_SUCCESS);
  static_cast<IND2CompletionQueue*>(p)->Release();
}

TEST_F(Nd2Adapter, SharedReceiveQueueLimits) {
  void* p = nullptr;
  const ULONG d = info_.MaxSharedReceiveQueueDepth, s = info_.MaxReceiveSge;
  EXPECT_EQ(a_->CreateSharedReceiveQueue(IID_IND2SharedReceiveQueue, file_, 0, 1, 0, 0, 0, &p), ND_INVALID_PARAMETER_3);
  EXPECT_EQ(a_->CreateSharedReceiveQueue(IID_IND2SharedReceiveQueue, file_, d + 1, 1, 0, 0, 0, &p),
            ND_INVALID_PARAMETER_3);
  EXPECT_EQ(a_->CreateSharedReceiveQueue(IID_IND2SharedReceiveQueue, file_, 16, 0, 0, 0, 0, &p), ND_INVALID_PARAMETER_4);
  EXPECT_EQ(a_->CreateSharedReceiveQueue(IID_IND2SharedReceiveQueue, file_, 16, s + 1, 0, 0, 0, &p),
            ND_INVALID_PARAMETER_4);
  EXPECT_EQ(a_->CreateSharedReceiveQueue(IID_IND2SharedReceiveQueue, file_, 16, 1, 17, 0, 0, &p),
            ND_INVALID_PARAMETER_5);
  EXPECT_EQ(p, nullptr);
  ASSERT_EQ(a_->CreateSharedReceiveQueue(IID_IND2SharedReceiveQueue, file_, d, s, d, 0, 0, &p), ND_SUCCESS);
  static_cast<IND2SharedReceiveQueue*>(p)->Release();
}

TEST_F(Nd2Adapter, QueuePairArgumentsEachRefused) {
  IND2CompletionQueue* cq = NewCq();
  ASSERT_NE(cq, nullptr);
  const ULONG rq = info_.MaxReceiveQueueDepth, iq = info_.MaxInitiatorQueueDepth, rs = info_.MaxReceiveSge,
              is = info_.MaxInitiatorSge, in = info_.MaxInlineDataSize;
  void* p = nullptr;
  auto create = [&](IUnknown* r, IUnknown* i, ULONG a, ULONG b, ULONG c, ULONG d, ULONG e) {
    return a_->CreateQueuePair(IID_IND2QueuePair, r, i, nullptr, a, b, c, d, e, &p);
  };
  EXPECT_EQ(create(nullptr, cq, 4, 4, 1, 1, 0), ND_INVALID_PARAMETER_2);
  EXPECT_EQ(create(cq, nullptr, 4, 4, 1, 1, 0), ND_INVALID_PARAMETER_3);
  EXPECT_EQ(create(cq, cq, 0, 4, 1, 1, 0), ND_INVALID_PARAMETER_5);
  EXPECT_EQ(create(cq, cq, rq + 1, 4, 1, 1, 0), ND_INVALID_PARAMETER_5);
  EXPECT_EQ(create(cq, cq, 4, 0, 1, 1, 0), ND_INVALID_PARAMETER_6);
  EXPECT_EQ(create(cq, cq, 4, iq + 1, 1, 1, 0), ND_INVALID_PARAMETER_6);
  EXPECT_EQ(create(cq, cq, 4, 4, rs + 1, 1, 0), ND_INVALID_PARAMETER_7);
  EXPECT_EQ(create(cq, cq, 4, 4, 1, is + 1, 0), ND_INVALID_PARAMETER_8);
  EXPECT_EQ(create(cq, cq, 4, 4, 1, 1, in + 1), ND_INVALID_PARAMETER_9);
  // Every maximum at once but one above it: that one is named.
  EXPECT_EQ(create(cq, cq, rq + 1, iq, rs, is, in), ND_INVALID_PARAMETER_5);
  EXPECT_EQ(create(cq, cq, rq, iq, rs, is, in + 1), ND_INVALID_PARAMETER_9);
  EXPECT_EQ(p, nullptr);

  // Objects that are not CQs of this adapter.
  IND2MemoryWindow* mw = nullptr;
  ASSERT_EQ(a_->CreateMemoryWindow(IID_IND2MemoryWindow, reinterpret_cast<void**>(&mw)), ND_SUCCESS);
  EXPECT_EQ(create(mw, cq, 4, 4, 1, 1, 0), ND_INVALID_PARAMETER_2);
  EXPECT_EQ(create(cq, mw, 4, 4, 1, 1, 0), ND_INVALID_PARAMETER_3);
  IND2Adapter* b = OpenAdapter(kIpB);
  HANDLE bf = nullptr;
  ASSERT_EQ(b->CreateOverlappedFile(&bf), ND_SUCCESS);
  IND2CompletionQueue* bcq = nullptr;
  ASSERT_EQ(b->CreateCompletionQueue(IID_IND2CompletionQueue, bf, 16, 0, 0, reinterpret_cast<void**>(&bcq)),
            ND_SUCCESS);
  EXPECT_EQ(create(bcq, cq, 4, 4, 1, 1, 0), ND_INVALID_PARAMETER_2);
  EXPECT_EQ(create(cq, bcq, 4, 4, 1, 1, 0), ND_INVALID_PARAMETER_3);

  // With an SRQ.
  IND2SharedReceiveQueue* srq = nullptr;
  ASSERT_EQ(a_->CreateSharedReceiveQueue(IID_IND2SharedReceiveQueue, file_, 16, 2, 0, 0, 0, reinterpret_cast<void**>(&srq)),
            ND_SUCCESS);
  IND2SharedReceiveQueue* bsrq = nullptr;
  ASSERT_EQ(b->CreateSharedReceiveQueue(IID_IND2SharedReceiveQueue, bf, 16, 2, 0, 0, 0, reinterpret_cast<void**>(&bsrq)),
            ND_SUCCESS);
  auto create_srq = [&](IUnknown* r, IUnknown* i, IUnknown* s, ULONG a, ULONG b2, ULONG c) {
    return a_->CreateQueuePairWithSrq(IID_IND2QueuePair, r, i, s, nullptr, a, b2, c, &p);
  };
  EXPECT_EQ(create_srq(bcq, cq, srq, 4, 1, 0), ND_INVALID_PARAMETER_2);
  EXPECT_EQ(create_srq(cq, mw, srq, 4, 1, 0), ND_INVALID_PARAMETER_3);
  EXPECT_EQ(create_srq(cq, cq, nullptr, 4, 1, 0), ND_INVALID_PARAMETER_4);
  EXPECT_EQ(create_srq(cq, cq, bsrq, 4, 1, 0), ND_INVALID_PARAMETER_4);
  EXPECT_EQ(create_srq(cq, cq, cq, 4, 1, 0), ND_INVALID_PARAMETER_4);
  EXPECT_EQ(create_srq(cq, cq, srq, 0, 1, 0), ND_INVALID_PARAMETER_6);
  EXPECT_EQ(create_srq(cq, cq, srq, iq + 1, 1, 0), ND_INVALID_PARAMETER_6);
  EXPECT_EQ(create_srq(cq, cq, srq, 4, is + 1, 0), ND_INVALID_PARAMETER_7);
  EXPECT_EQ(create_srq(cq, cq, srq, 4, 1, in + 1), ND_INVALID_PARAMETER_8);
  EXPECT_EQ(a_->CreateQueuePairWithSrq(IID_IND2QueuePair, cq, cq, srq, nullptr, 4, 1, 0, nullptr),
            ND_INVALID_PARAMETER_9);
  EXPECT_EQ(a_->CreateQueuePairWithSrq(IID_IND2Adapter, cq, cq, srq, nullptr, 4, 1, 0, &p), E_NOINTERFACE);
  EXPECT_EQ(p, nullptr);
  ASSERT_EQ(create_srq(cq, cq, srq, iq, is, in), ND_SUCCESS);
  static_cast<IND2QueuePair*>(p)->Release();

  bsrq->Release();
  srq->Release();
  bcq->Release();
  CloseHandle(bf);
  b->Release();
  mw->Release();
  cq->Release();
}

// Every maximum Query reports, at once, on a connected pair: both queue
// pairs at the maximum depths, SGE counts and inline size, on completion
// queues of the maximum depth; each queue filled to its depth (one more:
// ND_NO_MORE_ENTRIES); then all of it runs and completes.
TEST_F(Nd2Adapter, EveryMaximumAtOnceWorks) {
  QpSizes m;
  m.rq = info_.MaxReceiveQueueDepth;
  m.iq = info_.MaxInitiatorQueueDepth;
  m.rsge = info_.MaxReceiveSge;
  m.isge = info_.MaxInitiatorSge;
  m.inl = info_.MaxInlineDataSize;
  m.cq = info_.MaxCompletionQueueDepth;
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open(m, m));
  const ULONG nsge = m.isge;
  // b: MaxReceiveQueueDepth receives of MaxReceiveSge SGEs (2 bytes each, laid out
  // back to back per receive).
  const ULONG rsge_len = 2;
  std::vector<ND2_SGE> rs(m.rsge);
  std::vector<char> rbuf(size_t{m.rq} * m.rsge * rsge_len);
  IND2MemoryRegion* rmr = Register(p.b.adapter, p.b.file, rbuf.data(), rbuf.size(), kAllMrFlags);
  ASSERT_NE(rmr, nullptr);
  for (ULONG i = 0; i < m.rq; i++) {
    for (ULONG k = 0; k < m.rsge; k++)
      rs[k] = {rbuf.data() + (size_t{i} * m.rsge + k) * rsge_len, rsge_len, rmr->GetLocalToken()};
    ASSERT_EQ(p.b.qp->Receive(reinterpret_cast<void*>(uintptr_t{i}), rs.data(), m.rsge), ND_SUCCESS) << i;
  }
  EXPECT_EQ(p.b.qp->Receive(nullptr, rs.data(), m.rsge), ND_NO_MORE_ENTRIES);
  // a: MaxInitiatorQueueDepth sends of MaxInitiatorSge one-byte SGEs each (message i
  // carries bytes i, i+1, ... mod 251). Nothing runs while we post (inline
  // progress, no wait): the queue really holds them all.
  for (size_t i = 0; i < p.a.buf.size(); i++) p.a.buf[i] = static_cast<char>(i % 251);
  std::vector<ND2_SGE> ss(nsge);
  for (ULONG i = 0; i < m.iq; i++) {
    for (ULONG k = 0; k < nsge; k++) ss[k] = p.a.Sge((i + k) % 251, 1);
    ASSERT_EQ(p.a.qp->Send(reinterpret_cast<void*>(uintptr_t{i}), ss.data(), nsge, 0), ND_SUCCESS) << i;
  }
  EXPECT_EQ(p.a.qp->Send(nullptr, ss.data(), nsge, 0), ND_NO_MORE_ENTRIES);
  // All of it completes, in order, with the right bytes.
  for (ULONG i = 0; i < m.iq; i++) {
    ND2_RESULT r = p.a.NextI();
    ASSERT_EQ(r.Status, ND_SUCCESS) << i;
    ASSERT_EQ(r.RequestContext, reinterpret_cast<void*>(uintptr_t{i}));
  }
  for (ULONG i = 0; i < m.rq; i++) {
    ND2_RESULT r = p.b.NextR();
    ASSERT_EQ(r.Status, ND_SUCCESS) << i;
    ASSERT_EQ(r.RequestContext, reinterpret_cast<void*>(uintptr_t{i}));
    ASSERT_EQ(r.BytesTransferred, nsge);
    const char* got = rbuf.data() + size_t{i} * m.rsge * rsge_len;
    for (ULONG k = 0; k < nsge; k++) ASSERT_EQ(got[k], static_cast<char>((i + k) % 251)) << i << " " << k;
  }
  // An inline send of MaxInlineDataSize from ordinary memory, into a receive of that size.
  std::vector<char> big(m.inl + 1);
  for (size_t i = 0; i < big.size(); i++) big[i] = static_cast<char>(i * 13);
  ASSERT_EQ(p.b.PostReceive(nullptr, 0, m.inl), ND_SUCCESS);
  // Before it, requests too long to take: one byte over the inline size (one
  // SGE, or two), a message over MaxTransferLength. Nothing of them is sent:
  // the receive gets the inline send below.
  ND2_SGE over{big.data(), m.inl + 1, 0};
  EXPECT_EQ(p.a.qp->Send(nullptr, &over, 1, ND_OP_FLAG_INLINE), ND_BUFFER_OVERFLOW);
  ND2_SGE two[2] = {{big.data(), m.inl, 0}, {big.data(), 1, 0}};
  EXPECT_EQ(p.a.qp->Send(nullptr, two, 2, ND_OP_FLAG_INLINE), ND_BUFFER_OVERFLOW);
  ND2_SGE huge{big.data(), 0x80000000u, 0};
  EXPECT_EQ(p.a.qp->Send(nullptr, &huge, 1, 0), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(p.a.qp->Send(nullptr, &huge, 1, 0x80000000u), ND_INVALID_PARAMETER_4);  // flags first
  ND2_SGE inl{big.data(), m.inl, 0};
  ASSERT_EQ(p.a.qp->Send(nullptr, &inl, 1, ND_OP_FLAG_INLINE), ND_SUCCESS);
  EXPECT_EQ(p.a.NextI().Status, ND_SUCCESS);
  ND2_RESULT r = p.b.NextR();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  EXPECT_EQ(r.BytesTransferred, m.inl);
  EXPECT_EQ(std::memcmp(p.b.buf.data(), big.data(), m.inl), 0);
  Deregister(rmr);
  rmr->Release();
}

// The read limits Query reports are what a connection gets when both sides ask for more.
TEST_F(Nd2Adapter, ReadLimitsAreClampedToTheMaxima) {
  Endpoint c, s;
  ASSERT_NO_FATAL_FAILURE(c.Open(kIpA));
  ASSERT_NO_FATAL_FAILURE(s.Open(kIpB));
  ASSERT_NO_FATAL_FAILURE(Connect(c, s, kIpB, 1000));
  ULONG in = 0, out = 0;
  ASSERT_EQ(c.conn->GetReadLimits(&in, &out), ND_SUCCESS);
  EXPECT_EQ(in, info_.MaxInboundReadLimit);
  EXPECT_EQ(out, info_.MaxOutboundReadLimit);
  // MaxOutboundReadLimit Reads in flight at once, all answered.
  const ULONG n = info_.MaxOutboundReadLimit * 2;
  for (size_t i = 0; i < 65536; i++) s.buf[i] = static_cast<char>(i * 3);
  for (ULONG i = 0; i < n; i++) {
    ND2_SGE sg = c.Sge(i * 4096, 4096);
    ASSERT_EQ(c.qp->Read(nullptr, &sg, 1, s.Va(i * 4096), s.mr->GetRemoteToken(), 0), ND_SUCCESS);
  }
  for (ULONG i = 0; i < n; i++) ASSERT_EQ(c.NextI().Status, ND_SUCCESS);
  EXPECT_EQ(std::memcmp(c.buf.data(), s.buf.data(), size_t{n} * 4096), 0);
  c.Close();
  s.Close();
}

// ---- resources that run out ---------------------------------------------------------------------

TEST_F(Nd2Adapter, WindowsAndRegionsRunOutWithInsufficientResources) {
  std::vector<IND2MemoryWindow*> ws;
  HRESULT h = ND_SUCCESS;
  while (ws.size() < 200000) {
    IND2MemoryWindow* w = nullptr;
    h = a_->CreateMemoryWindow(IID_IND2MemoryWindow, reinterpret_cast<void**>(&w));
    if (h != ND_SUCCESS) {
      EXPECT_EQ(w, nullptr);
      break;
    }
    ws.push_back(w);
  }
  EXPECT_EQ(h, ND_INSUFFICIENT_RESOURCES);
  EXPECT_GT(ws.size(), 1000u);
  // Regions share the adapter's memory-object table: none can be registered now.
  std::vector<char> buf(4096);
  IND2MemoryRegion* mr = nullptr;
  ASSERT_EQ(a_->CreateMemoryRegion(IID_IND2MemoryRegion, file_, reinterpret_cast<void**>(&mr)), ND_SUCCESS);
  Ov ov;
  EXPECT_EQ(mr->Register(buf.data(), buf.size(), ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov.ov), ND_INSUFFICIENT_RESOURCES);
  // One window released: the region registers, and the table is full again.
  ws.back()->Release();
  ws.pop_back();
  EXPECT_EQ(Finish(mr, ov, mr->Register(buf.data(), buf.size(), ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov.ov)), ND_SUCCESS);
  IND2MemoryWindow* w = nullptr;
  EXPECT_EQ(a_->CreateMemoryWindow(IID_IND2MemoryWindow, reinterpret_cast<void**>(&w)), ND_INSUFFICIENT_RESOURCES);
  Deregister(mr);
  mr->Release();
  for (auto* x : ws) x->Release();
  // All of them back.
  ASSERT_EQ(a_->CreateMemoryWindow(IID_IND2MemoryWindow, reinterpret_cast<void**>(&w)), ND_SUCCESS);
  w->Release();
}

TEST_F(Nd2Adapter, QueuePairsRunOutWithInsufficientResources) {
  IND2CompletionQueue* cq = NewCq();
  ASSERT_NE(cq, nullptr);
  std::vector<IND2QueuePair*> qps;
  HRESULT h = ND_SUCCESS;
  while (qps.size() < 100000) {
    IND2QueuePair* qp = nullptr;
    h = a_->CreateQueuePair(IID_IND2QueuePair, cq, cq, nullptr, 1, 1, 1, 1, 0, reinterpret_cast<void**>(&qp));
    if (h != ND_SUCCESS) break;
    qps.push_back(qp);
  }
  EXPECT_EQ(h, ND_INSUFFICIENT_RESOURCES);
  EXPECT_GT(qps.size(), 100u);
  for (auto* q : qps) q->Release();
  IND2QueuePair* qp = nullptr;
  EXPECT_EQ(a_->CreateQueuePair(IID_IND2QueuePair, cq, cq, nullptr, 1, 1, 1, 1, 0, reinterpret_cast<void**>(&qp)),
            ND_SUCCESS);
  if (qp) qp->Release();
  cq->Release();
}

#if !defined(__SANITIZE_ADDRESS__)
// Out of memory (the address space capped just above what the process uses):
// creation fails with the documented status, nothing crashes, and once memory
// is back the same calls succeed (nothing was leaked by the failures).
// Not under AddressSanitizer, whose allocator reserves its own address space.
size_t VmBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (f) {
    if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

TEST_F(Nd2Adapter, OutOfMemoryGivesNoMemoryOrInsufficientResources) {
  IND2CompletionQueue* cq = NewCq();
  ASSERT_NE(cq, nullptr);
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &old), 0);
  void* big_cq = reinterpret_cast<void*>(1);
  void* big_qp = reinterpret_cast<void*>(1);
  void* big_srq = reinterpret_cast<void*>(1);
  IND2SharedReceiveQueue* srq = nullptr;
  ASSERT_EQ(a_->CreateSharedReceiveQueue(IID_IND2SharedReceiveQueue, file_, 4, info_.MaxReceiveSge, 0, 0, 0,
                                         reinterpret_cast<void**>(&srq)),
            ND_SUCCESS);
  HRESULT h_cq, h_qp, h_srq, h_resize, h_modify;
  {
    rlimit cap = old;
    cap.rlim_cur = VmBytes() + (1u << 20);
    // The cap alone does not exhaust memory: malloc keeps freed blocks (and,
    // once earlier tests freed large ones, raises its mmap threshold so that
    // multi-MiB blocks come from the heap), so a 3 MiB CQ ring could still fit
    // in space the process already maps (it did on a CI machine). Take every
    // free block of kSoak bytes or more first: then no allocation that large
    // succeeds, and each call below needs one (the smallest, the SRQ's 16384
    // receive WQEs, is 512 KiB).
    constexpr size_t kSoak = 128u << 10;
    std::vector<void*> soak;
    soak.reserve(1u << 14);  // 2 GiB of 128 KiB blocks: more than malloc keeps
    ASSERT_EQ(setrlimit(RLIMIT_AS, &cap), 0);
    while (soak.size() < soak.capacity()) {
      void* b = std::malloc(kSoak);
      if (!b) break;
      soak.push_back(b);
    }
    h_cq = a_->CreateCompletionQueue(IID_IND2CompletionQueue, file_, info_.MaxCompletionQueueDepth, 0, 0, &big_cq);
    h_qp = a_->CreateQueuePair(IID_IND2QueuePair, cq, cq, nullptr, info_.MaxReceiveQueueDepth,
                               info_.MaxInitiatorQueueDepth, info_.MaxReceiveSge, info_.MaxInitiatorSge,
                               info_.MaxInlineDataSize, &big_qp);
    h_srq = a_->CreateSharedReceiveQueue(IID_IND2SharedReceiveQueue, file_, info_.MaxSharedReceiveQueueDepth,
                                         info_.MaxReceiveSge, 0, 0, 0, &big_srq);
    h_resize = cq->Resize(info_.MaxCompletionQueueDepth);
    h_modify = srq->Modify(info_.MaxSharedReceiveQueueDepth, 0);
    for (void* b : soak) std::free(b);
    ASSERT_EQ(setrlimit(RLIMIT_AS, &old), 0);
    ASSERT_LT(soak.size(), soak.capacity()) << "malloc never ran out under the cap";
  }
  EXPECT_EQ(h_cq, ND_NO_MEMORY);
  EXPECT_EQ(big_cq, nullptr);
  EXPECT_EQ(h_qp, ND_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(big_qp, nullptr);
  EXPECT_EQ(h_srq, ND_NO_MEMORY);
  EXPECT_EQ(big_srq, nullptr);
  EXPECT_EQ(h_resize, ND_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(h_modify, ND_INSUFFICIENT_RESOURCES);
  // Should a creation have succeeded, release it: a leaked object keeps the
  // provider up and fails the tests after this one too.
  for (void* made : {big_cq, big_qp, big_srq}) {
    if (made && made != reinterpret_cast<void*>(1)) static_cast<IUnknown*>(made)->Release();
  }
  // Memory back: the same calls succeed.
  ASSERT_EQ(a_->CreateQueuePair(IID_IND2QueuePair, cq, cq, nullptr, info_.MaxReceiveQueueDepth,
                                info_.MaxInitiatorQueueDepth, info_.MaxReceiveSge, info_.MaxInitiatorSge,
                                info_.MaxInlineDataSize, &big_qp),
            ND_SUCCESS);
  static_cast<IND2QueuePair*>(big_qp)->Release();
  EXPECT_EQ(cq->Resize(info_.MaxCompletionQueueDepth), ND_SUCCESS);
  EXPECT_EQ(srq->Modify(info_.MaxSharedReceiveQueueDepth, 0), ND_SUCCESS);
  srq->Release();
  cq->Release();
}
#endif

// ---- QueryInterface on the adapter -----------------------------------------------------------

TEST_F(Nd2Adapter, QueryInterface) {
  void* p = reinterpret_cast<void*>(1);
  EXPECT_EQ(a_->QueryInterface(IID_IND2QueuePair, &p), E_NOINTERFACE);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(a_->QueryInterface(IID_IND2Adapter, nullptr), E_POINTER);
  IND2Adapter* again = nullptr;
  ASSERT_EQ(a_->QueryInterface(IID_IND2Adapter, reinterpret_cast<void**>(&again)), S_OK);
  EXPECT_EQ(again, a_);
  again->Release();
}

}  // namespace
}  // namespace nd2t
