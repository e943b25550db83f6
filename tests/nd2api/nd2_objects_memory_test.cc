// SPDX-License-Identifier: MIT
// IND2MemoryRegion (Register / Deregister pended, their errors, tokens as the
// wire's keys), IND2MemoryWindow, IND2QueuePair::Bind / Invalidate and the
// SendAndInvalidate extension; remote access with a wrong token, after
// Invalidate, one byte past a window, without the right: ND_ACCESS_VIOLATION
// at the accessor and the target's receives flushed.
#include <sys/mman.h>

#include <cstdio>

#include "tests/nd2api/nd2_objects_util.h"

namespace nd2t {
namespace {

class Nd2Memory : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(Start(GetParam())); }
};

INSTANTIATE_TEST_SUITE_P(Progress, Nd2Memory, ::testing::Values(Mode::kInline, Mode::kThread),
                         [](const ::testing::TestParamInfo<Mode>& i) {
                           return i.param == Mode::kThread ? std::string("Thread") : std::string("Inline");
                         });

class Nd2MemoryInline : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(Start(Mode::kInline)); }
};

IND2MemoryWindow* NewWindow(IND2Adapter* a) {
  IND2MemoryWindow* w = nullptr;
  EXPECT_EQ(a->CreateMemoryWindow(IID_IND2MemoryWindow, reinterpret_cast<void**>(&w)), ND_SUCCESS);
  return w;
}

// b's side of a remote access by a: `a` Writes (or Reads) len bytes at
// b's va with `token`; returns a's result status. b has one receive posted
// (to see it flushed when the access fails).
struct Access {
  HRESULT initiator;
  HRESULT target_receive;  // ND_PENDING: still posted (the connection lives)
};
Access RemoteAccess(Pair& p, bool write, UINT64 va, ULONG len, UINT32 token) {
  EXPECT_EQ(p.b.PostReceive(reinterpret_cast<void*>(0xB), 900000, 64), ND_SUCCESS);
  ND2_SGE s = p.a.Sge(0, len);
  EXPECT_EQ(write ? p.a.qp->Write(reinterpret_cast<void*>(0xA), &s, 1, va, token, 0)
                  : p.a.qp->Read(reinterpret_cast<void*>(0xA), &s, 1, va, token, 0),
            ND_SUCCESS);
  Access out{};
  ND2_RESULT r = p.a.NextI();
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(0xA));
  out.initiator = r.Status;
  ND2_RESULT rr;
  out.target_receive = Next(p.b.cq, &rr, out.initiator == ND_SUCCESS ? 20 : 5000) ? rr.Status : ND_PENDING;
  return out;
}

// ---- Register / Deregister ------------------------------------------------------------------

// Register and Deregister pend (ND_PENDING) and complete through the
// overlapped: the event, the completion port (a client in port mode waits
// for the packet), GetOverlappedResult.
TEST_P(Nd2Memory, RegisterAndDeregisterPendAndCompleteThroughThePort) {
  Endpoint e;
  ASSERT_NO_FATAL_FAILURE(e.Open(kIpA));
  HANDLE port = CreateIoCompletionPort(e.file, nullptr, 42, 0);
  ASSERT_NE(port, nullptr);
  IND2MemoryRegion* mr = nullptr;
  ASSERT_EQ(e.adapter->CreateMemoryRegion(IID_IND2MemoryRegion, e.file, reinterpret_cast<void**>(&mr)), ND_SUCCESS);
  std::vector<char> buf(8192);
  OVERLAPPED ov{};
  ASSERT_EQ(mr->Register(buf.data(), buf.size(), ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov), ND_PENDING);
  DWORD bytes = 0;
  ULONG_PTR key = 0;
  OVERLAPPED* got = nullptr;
  ASSERT_TRUE(GetQueuedCompletionStatus(port, &bytes, &key, &got, 5000));
  EXPECT_EQ(got, &ov);
  EXPECT_EQ(key, 42u);
  EXPECT_EQ(mr->GetOverlappedResult(&ov, FALSE), ND_SUCCESS);
  EXPECT_NE(mr->GetLocalToken(), mr->GetRemoteToken());  // a local token never works remotely
  // Deregister, with the hEvent low bit set: the event is signalled, no packet.
  HANDLE ev = CreateEvent(nullptr, FALSE, FALSE, nullptr);
  OVERLAPPED ov2{};
  ov2.hEvent = reinterpret_cast<HANDLE>(reinterpret_cast<uintptr_t>(ev) | 1);
  ASSERT_EQ(mr->Deregister(&ov2), ND_PENDING);
  ASSERT_EQ(WaitForSingleObject(ev, 5000), WAIT_OBJECT_0);
  EXPECT_EQ(mr->GetOverlappedResult(&ov2, TRUE), ND_SUCCESS);
  got = nullptr;
  EXPECT_FALSE(GetQueuedCompletionStatus(port, &bytes, &key, &got, 20));
  EXPECT_EQ(got, nullptr);
  // Nothing outstanding to cancel.
  EXPECT_EQ(mr->CancelOverlappedRequests(), ND_SUCCESS);
  // The region is an IND2Overlapped; a window is not.
  IND2Overlapped* o = nullptr;
  ASSERT_EQ(mr->QueryInterface(IID_IND2Overlapped, reinterpret_cast<void**>(&o)), S_OK);
  o->Release();
  IND2MemoryWindow* w = NewWindow(e.adapter);
  void* p = reinterpret_cast<void*>(1);
  EXPECT_EQ(w->QueryInterface(IID_IND2Overlapped, &p), E_NOINTERFACE);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(mr->QueryInterface(IID_IND2MemoryWindow, &p), E_NOINTERFACE);
  w->Release();
  mr->Release();
  CloseHandle(ev);
  CloseHandle(port);
  e.Close();
}

// Register's errors, each returned at once (nothing pended): Register(NULL,
// 0) ND_INVALID_PARAMETER, (buf, 0) ND_INVALID_BUFFER_SIZE, above
// MaxRegistrationSize ND_INVALID_PARAMETER, memory that is not there or not
// writable for a writable registration ND_ACCESS_VIOLATION, unknown flags
// ND_INVALID_PARAMETER_3, no OVERLAPPED ND_INVALID_PARAMETER_4; a second
// Register on a registered region ND_INVALID_DEVICE_STATE; Deregister of
// nothing ND_INVALID_DEVICE_STATE.
TEST_F(Nd2MemoryInline, RegisterErrors) {
  IND2Adapter* a = OpenAdapter(kIpA);
  ASSERT_NE(a, nullptr);
  const ND2_ADAPTER_INFO info = QueryInfo(a);
  HANDLE f = nullptr;
  ASSERT_EQ(a->CreateOverlappedFile(&f), ND_SUCCESS);
  IND2MemoryRegion* mr = nullptr;
  ASSERT_EQ(a->CreateMemoryRegion(IID_IND2MemoryRegion, f, reinterpret_cast<void**>(&mr)), ND_SUCCESS);
  Ov ov;
  const ULONG rw = ND_MR_FLAG_ALLOW_LOCAL_WRITE;
  EXPECT_EQ(mr->Register(nullptr, 0, rw, &ov.ov), ND_INVALID_PARAMETER);
  std::vector<char> buf(4096);
  EXPECT_EQ(mr->Register(buf.data(), 0, rw, &ov.ov), ND_INVALID_BUFFER_SIZE);
  EXPECT_EQ(mr->Register(buf.data(), buf.size(), 0x40, &ov.ov), ND_INVALID_PARAMETER_3);
  EXPECT_EQ(mr->Register(buf.data(), buf.size(), rw, nullptr), ND_INVALID_PARAMETER_4);
  EXPECT_EQ(mr->Register(nullptr, 4096, rw, &ov.ov), ND_ACCESS_VIOLATION);
  EXPECT_EQ(mr->Register(buf.data(), SIZE_T(info.MaxRegistrationSize) + 1, rw, &ov.ov), ND_INVALID_PARAMETER);
  // Pages that are gone, pages that cannot be read, read-only pages for writing, a hole in the range.
  const size_t pg = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  char* m = static_cast<char*>(mmap(nullptr, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(m, MAP_FAILED);
  ASSERT_EQ(mprotect(m + pg, pg, PROT_READ), 0);
  ASSERT_EQ(mprotect(m + 2 * pg, pg, PROT_NONE), 0);
  ASSERT_EQ(munmap(m + 3 * pg, pg), 0);
  EXPECT_EQ(mr->Register(m + 3 * pg, 16, ND_MR_FLAG_ALLOW_REMOTE_READ, &ov.ov), ND_ACCESS_VIOLATION);
  EXPECT_EQ(mr->Register(m + 2 * pg, 16, ND_MR_FLAG_ALLOW_REMOTE_READ, &ov.ov), ND_ACCESS_VIOLATION);
  EXPECT_EQ(mr->Register(m + pg, 16, ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov.ov), ND_ACCESS_VIOLATION);
  EXPECT_EQ(mr->Register(m + pg, 16, ND_MR_FLAG_ALLOW_REMOTE_WRITE, &ov.ov), ND_ACCESS_VIOLATION);
  EXPECT_EQ(mr->Register(m + pg, 16, ND_MR_FLAG_RDMA_READ_SINK, &ov.ov), ND_ACCESS_VIOLATION);
  EXPECT_EQ(mr->Register(m, 2 * pg, ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov.ov), ND_ACCESS_VIOLATION);
  EXPECT_EQ(mr->Register(m, 4 * pg, ND_MR_FLAG_ALLOW_REMOTE_READ, &ov.ov), ND_ACCESS_VIOLATION);
  EXPECT_EQ(mr->Register(reinterpret_cast<void*>(~uintptr_t{0} - 100), 4096, 0, &ov.ov), ND_ACCESS_VIOLATION);
  // None of those signalled anything.
  EXPECT_EQ(WaitForSingleObject(ov.ov.hEvent, 0), WAIT_TIMEOUT);
  // Read-only memory for reading (a Send source, a remote Read target) is fine.
  EXPECT_EQ(Finish(mr, ov, mr->Register(m, 2 * pg, ND_MR_FLAG_ALLOW_REMOTE_READ, &ov.ov)), ND_SUCCESS);
  EXPECT_EQ(mr->Register(buf.data(), buf.size(), rw, &ov.ov), ND_INVALID_DEVICE_STATE);
  Deregister(mr);
  EXPECT_EQ(mr->Deregister(&ov.ov), ND_INVALID_DEVICE_STATE);
  EXPECT_EQ(mr->Deregister(nullptr), ND_INVALID_PARAMETER_1);
  munmap(m, 3 * pg);
  // The same buffer registered on two regions with different rights.
  IND2MemoryRegion* mr2 = nullptr;
  ASSERT_EQ(a->CreateMemoryRegion(IID_IND2MemoryRegion, f, reinterpret_cast<void**>(&mr2)), ND_SUCCESS);
  EXPECT_EQ(Finish(mr, ov, mr->Register(buf.data(), buf.size(), rw, &ov.ov)), ND_SUCCESS);
  EXPECT_EQ(Finish(mr2, ov, mr2->Register(buf.data(), buf.size(), ND_MR_FLAG_ALLOW_REMOTE_READ, &ov.ov)), ND_SUCCESS);
  EXPECT_NE(mr->GetLocalToken(), mr2->GetLocalToken());
  Deregister(mr);
  Deregister(mr2);
  mr2->Release();
  mr->Release();
  CloseHandle(f);
  a->Release();
}

// MaxRegistrationSize is a true limit: a registration of exactly that size
// succeeds (address space reserved without memory behind it).
TEST_F(Nd2MemoryInline, MaxRegistrationSizeRegisters) {
  IND2Adapter* a = OpenAdapter(kIpA);
  ASSERT_NE(a, nullptr);
  const ND2_ADAPTER_INFO info = QueryInfo(a);
  HANDLE f = nullptr;
  ASSERT_EQ(a->CreateOverlappedFile(&f), ND_SUCCESS);
  void* m = mmap(nullptr, info.MaxRegistrationSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  ASSERT_NE(m, MAP_FAILED) << "cannot reserve " << info.MaxRegistrationSize << " bytes of address space";
  IND2MemoryRegion* mr = Register(a, f, m, info.MaxRegistrationSize, kAllMrFlags);
  ASSERT_NE(mr, nullptr);
  Deregister(mr);
  mr->Release();
  munmap(m, info.MaxRegistrationSize);
  CloseHandle(f);
  a->Release();
}

// Tokens: the remote token works remotely, the local one does not; after
// Deregister the old token fails (ND_ACCESS_VIOLATION at the accessor, the
// target's receive flushed); registered again, the region has new tokens.
TEST_P(Nd2Memory, RegionTokensRemoteAccessAndDeregister) {
  {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(p.Open());
    Access ok = RemoteAccess(p, true, p.b.Va(0), 64, p.b.mr->GetRemoteToken());
    EXPECT_EQ(ok.initiator, ND_SUCCESS);
    EXPECT_EQ(ok.target_receive, ND_PENDING);
    Access local = RemoteAccess(p, true, p.b.Va(0), 64, p.b.mr->GetLocalToken());
    EXPECT_EQ(local.initiator, ND_ACCESS_VIOLATION);
    EXPECT_EQ(local.target_receive, ND_CANCELED);
  }
  for (bool write : {true, false}) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(p.Open());
    const UINT32 old_local = p.b.mr->GetLocalToken(), old_remote = p.b.mr->GetRemoteToken();
    Deregister(p.b.mr);
    Access gone = RemoteAccess(p, write, p.b.Va(0), 64, old_remote);
    EXPECT_EQ(gone.initiator, ND_ACCESS_VIOLATION);
    EXPECT_EQ(gone.target_receive, ND_CANCELED);
    Ov ov;
    ASSERT_EQ(Finish(p.b.mr, ov, p.b.mr->Register(p.b.buf.data(), p.b.buf.size(), kAllMrFlags, &ov.ov)), ND_SUCCESS);
    EXPECT_NE(p.b.mr->GetLocalToken(), old_local);
    EXPECT_NE(p.b.mr->GetRemoteToken(), old_remote);
  }
}

// Rights of a region: a Write needs ALLOW_REMOTE_WRITE, a Read
// ALLOW_REMOTE_READ; one byte past the region fails.
TEST_P(Nd2Memory, RegionRightsAndBounds) {
  struct Case {
    ULONG flags;
    bool write;
    size_t off;
    ULONG len;
    HRESULT want;
  };
  const size_t n = 1 << 20;
  const Case cases[] = {
      {ND_MR_FLAG_ALLOW_REMOTE_READ, true, 0, 64, ND_ACCESS_VIOLATION},
      {ND_MR_FLAG_ALLOW_REMOTE_READ, false, 0, 64, ND_SUCCESS},
      {ND_MR_FLAG_ALLOW_REMOTE_WRITE, false, 0, 64, ND_ACCESS_VIOLATION},
      {ND_MR_FLAG_ALLOW_REMOTE_WRITE, true, 0, 64, ND_SUCCESS},
      {ND_MR_FLAG_ALLOW_LOCAL_WRITE, true, 0, 64, ND_ACCESS_VIOLATION},
      {kAllMrFlags, true, n - 64, 64, ND_SUCCESS},
      {kAllMrFlags, true, n - 63, 64, ND_ACCESS_VIOLATION},
      {kAllMrFlags, false, n - 63, 64, ND_ACCESS_VIOLATION},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "flags " << c.flags << (c.write ? " write" : " read") << " at " << c.off);
    Pair p;
    ASSERT_NO_FATAL_FAILURE(p.Open());
    IND2MemoryRegion* t = Register(p.b.adapter, p.b.file, p.b.buf.data(), n, c.flags);
    ASSERT_NE(t, nullptr);
    Access r = RemoteAccess(p, c.write, p.b.Va(c.off), c.len, t->GetRemoteToken());
    EXPECT_EQ(r.initiator, c.want);
    EXPECT_EQ(r.target_receive, c.want == ND_SUCCESS ? ND_PENDING : ND_CANCELED);
    p.b.qp->Flush();
    Deregister(t);
    t->Release();
  }
}

// ---- windows --------------------------------------------------------------------------------

// A window is created unbound (its token grants nothing); Bind's token is
// valid as soon as Bind returns; the window grants exactly its range and
// rights; Bind and Invalidate complete in the initiator queue, in order;
// after Invalidate the token fails.
TEST_P(Nd2Memory, WindowBindAccessInvalidate) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  IND2MemoryWindow* w = NewWindow(p.b.adapter);
  ASSERT_NE(w, nullptr);
  for (int i = 0; i < 4096; i++) p.b.buf[8192 + i] = static_cast<char>(i);
  // Bind [8192, 8192 + 4096) for reading; the token goes to the peer in a Send
  // posted right after (before the Bind's result is looked at).
  ASSERT_EQ(p.b.qp->Bind(reinterpret_cast<void*>(0x51), p.b.mr, w, p.b.buf.data() + 8192, 4096,
                         ND_OP_FLAG_ALLOW_READ),
            ND_SUCCESS);
  const UINT32 token = w->GetRemoteToken();
  ASSERT_EQ(p.a.PostReceive(nullptr, 0, 64), ND_SUCCESS);
  std::memcpy(p.b.buf.data() + 100000, &token, 4);
  ASSERT_EQ(p.b.PostSend(reinterpret_cast<void*>(0x52), 100000, 4), ND_SUCCESS);
  ND2_RESULT r = p.b.NextI();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  EXPECT_EQ(r.RequestType, Nd2RequestTypeBind);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(0x51));
  EXPECT_EQ(r.QueuePairContext, &p.b);
  EXPECT_EQ(p.b.NextI().RequestContext, reinterpret_cast<void*>(0x52));
  EXPECT_EQ(p.a.NextR().Status, ND_SUCCESS);
  UINT32 got;
  std::memcpy(&got, p.a.buf.data(), 4);
  EXPECT_EQ(got, token);
  // The whole window reads back; remote addresses are virtual addresses.
  ND2_SGE s = p.a.Sge(200000, 4096);
  ASSERT_EQ(p.a.qp->Read(nullptr, &s, 1, p.b.Va(8192), got, 0), ND_SUCCESS);
  EXPECT_EQ(p.a.NextI().Status, ND_SUCCESS);
  EXPECT_EQ(std::memcmp(p.a.buf.data() + 200000, p.b.buf.data() + 8192, 4096), 0);
  // Invalidate: completes in b's initiator queue; the window can be bound again.
  ASSERT_EQ(p.b.qp->Invalidate(reinterpret_cast<void*>(0x53), w, 0), ND_SUCCESS);
  r = p.b.NextI();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  EXPECT_EQ(r.RequestType, Nd2RequestTypeInvalidate);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(0x53));
  // After Invalidate the token fails: ND_ACCESS_VIOLATION at the accessor.
  Access after = RemoteAccess(p, false, p.b.Va(8192), 64, got);
  EXPECT_EQ(after.initiator, ND_ACCESS_VIOLATION);
  EXPECT_EQ(after.target_receive, ND_CANCELED);
  w->Release();
}

// The token works as soon as Bind returns (here: the peer writes with it at
// once, before the Bind's result is looked at, with SILENT_SUCCESS: no result at all).
TEST_P(Nd2Memory, WindowTokenWorksAsSoonAsBindReturns) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  for (int round = 0; round < 3; round++) {
    IND2MemoryWindow* w = NewWindow(p.b.adapter);
    ASSERT_EQ(p.b.qp->Bind(nullptr, p.b.mr, w, p.b.buf.data() + 4096 * round, 4096,
                           ND_OP_FLAG_ALLOW_WRITE | ND_OP_FLAG_SILENT_SUCCESS),
              ND_SUCCESS);
    std::memset(p.a.buf.data(), 'a' + round, 4096);
    Access r = RemoteAccess(p, true, p.b.Va(4096 * round), 4096, w->GetRemoteToken());
    EXPECT_EQ(r.initiator, ND_SUCCESS);
    EXPECT_EQ(p.b.buf[4096 * round + 4095], 'a' + round);
    EXPECT_TRUE(Drain(p.b.icq, 20).empty());
    w->Release();
  }
}

// What a window grants: its rights and its range, nothing more.
TEST_P(Nd2Memory, WindowRightsAndBounds) {
  struct Case {
    ULONG bind_flags;
    bool write;
    size_t off;  // from the window's start
    ULONG len;
    HRESULT want;
  };
  const Case cases[] = {
      {ND_OP_FLAG_ALLOW_READ, true, 0, 16, ND_ACCESS_VIOLATION},   // write to a read-only window
      {ND_OP_FLAG_ALLOW_WRITE, false, 0, 16, ND_ACCESS_VIOLATION}, // read from a write-only window
      {ND_OP_FLAG_ALLOW_WRITE, true, 0, 4096, ND_SUCCESS},
      {ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE, true, 4095, 1, ND_SUCCESS},
      {ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE, true, 4095, 2, ND_ACCESS_VIOLATION},  // one byte past
      {ND_OP_FLAG_ALLOW_READ, false, 0, 4097, ND_ACCESS_VIOLATION},
      {ND_OP_FLAG_ALLOW_READ, false, size_t(-1), 1, ND_ACCESS_VIOLATION},  // one byte before
      // Neither right (Windows providers take it; ndmemorytest's NdMRDeregister binds so):
      // a window no peer may use.
      {0, false, 0, 16, ND_ACCESS_VIOLATION},
      {0, true, 0, 16, ND_ACCESS_VIOLATION},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "bind " << c.bind_flags << (c.write ? " write " : " read ") << c.off << "+"
                                      << c.len);
    Pair p;
    ASSERT_NO_FATAL_FAILURE(p.Open());
    IND2MemoryWindow* w = NewWindow(p.b.adapter);
    ASSERT_EQ(p.b.qp->Bind(nullptr, p.b.mr, w, p.b.buf.data() + 65536, 4096, c.bind_flags), ND_SUCCESS);
    // The Bind has run before the peer is told (as a Send after it would ensure).
    EXPECT_EQ(p.b.NextI().Status, ND_SUCCESS);
    Access r = RemoteAccess(p, c.write, p.b.Va(65536) + c.off, c.len, w->GetRemoteToken());
    EXPECT_EQ(r.initiator, c.want);
    EXPECT_EQ(r.target_receive, c.want == ND_SUCCESS ? ND_PENDING : ND_CANCELED);
    w->Release();
  }
  // An unbound window's token grants nothing.
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  IND2MemoryWindow* w = NewWindow(p.b.adapter);
  Access r = RemoteAccess(p, false, p.b.Va(0), 16, w->GetRemoteToken());
  EXPECT_EQ(r.initiator, ND_ACCESS_VIOLATION);
  w->Release();
}

// Bind's return values: ND_ACCESS_VIOLATION when the region does not allow
// what the window would grant (ALLOW_WRITE without local write) or does not
// hold the range (nothing posted, the queue pair goes on); bad objects and
// flags; ND_NO_MORE_ENTRIES. Invalidate's too.
TEST_F(Nd2MemoryInline, BindAndInvalidateReturnValues) {
  QpSizes sz;
  sz.iq = 2;
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open({}, sz));
  IND2MemoryWindow* w = NewWindow(p.b.adapter);
  IND2MemoryRegion* ro = Register(p.b.adapter, p.b.file, p.b.buf.data(), 65536, ND_MR_FLAG_ALLOW_REMOTE_READ);
  ASSERT_NE(ro, nullptr);
  char* base = p.b.buf.data();
  EXPECT_EQ(p.b.qp->Bind(nullptr, ro, w, base, 4096, ND_OP_FLAG_ALLOW_WRITE), ND_ACCESS_VIOLATION);
  EXPECT_EQ(p.b.qp->Bind(nullptr, ro, w, base + 65536 - 100, 101, ND_OP_FLAG_ALLOW_READ), ND_ACCESS_VIOLATION);
  EXPECT_EQ(p.b.qp->Bind(nullptr, ro, w, base - 1, 10, ND_OP_FLAG_ALLOW_READ), ND_ACCESS_VIOLATION);
  EXPECT_EQ(p.b.qp->Bind(nullptr, ro, w, base, 4096, ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_INLINE),
            ND_INVALID_PARAMETER_6);
  EXPECT_EQ(p.b.qp->Bind(nullptr, nullptr, w, base, 4096, ND_OP_FLAG_ALLOW_READ), ND_INVALID_PARAMETER_2);
  EXPECT_EQ(p.b.qp->Bind(nullptr, w, w, base, 4096, ND_OP_FLAG_ALLOW_READ), ND_INVALID_PARAMETER_2);
  EXPECT_EQ(p.b.qp->Bind(nullptr, p.a.mr, w, base, 4096, ND_OP_FLAG_ALLOW_READ), ND_INVALID_PARAMETER_2);  // other adapter
  EXPECT_EQ(p.b.qp->Bind(nullptr, ro, nullptr, base, 4096, ND_OP_FLAG_ALLOW_READ), ND_INVALID_PARAMETER_3);
  EXPECT_EQ(p.b.qp->Bind(nullptr, ro, ro, base, 4096, ND_OP_FLAG_ALLOW_READ), ND_INVALID_PARAMETER_3);
  IND2MemoryWindow* wa = NewWindow(p.a.adapter);
  EXPECT_EQ(p.b.qp->Bind(nullptr, ro, wa, base, 4096, ND_OP_FLAG_ALLOW_READ), ND_INVALID_PARAMETER_3);  // other adapter
  EXPECT_EQ(p.b.qp->Bind(nullptr, ro, w, nullptr, 4096, ND_OP_FLAG_ALLOW_READ), ND_INVALID_PARAMETER_4);
  EXPECT_EQ(p.b.qp->Invalidate(nullptr, nullptr, 0), ND_INVALID_PARAMETER_2);
  EXPECT_EQ(p.b.qp->Invalidate(nullptr, wa, 0), ND_INVALID_PARAMETER_2);
  EXPECT_EQ(p.b.qp->Invalidate(nullptr, w, ND_OP_FLAG_ALLOW_READ), ND_INVALID_PARAMETER_3);
  // An unregistered region.
  IND2MemoryRegion* none = nullptr;
  ASSERT_EQ(p.b.adapter->CreateMemoryRegion(IID_IND2MemoryRegion, p.b.file, reinterpret_cast<void**>(&none)),
            ND_SUCCESS);
  EXPECT_EQ(p.b.qp->Bind(nullptr, none, w, base, 4096, ND_OP_FLAG_ALLOW_READ), ND_INVALID_PARAMETER_2);
  none->Release();
  ND2_RESULT r;
  EXPECT_EQ(p.b.icq->GetResults(&r, 1), 0u) << "a refused Bind posted something";
  // The initiator queue (depth 2) full: Bind and Invalidate refused.
  ASSERT_EQ(p.b.qp->Bind(reinterpret_cast<void*>(1), ro, w, base, 4096, ND_OP_FLAG_ALLOW_READ), ND_SUCCESS);
  ASSERT_EQ(p.b.qp->Invalidate(reinterpret_cast<void*>(2), w, 0), ND_SUCCESS);
  EXPECT_EQ(p.b.qp->Bind(nullptr, ro, w, base, 4096, ND_OP_FLAG_ALLOW_READ), ND_NO_MORE_ENTRIES);
  EXPECT_EQ(p.b.qp->Invalidate(nullptr, w, 0), ND_NO_MORE_ENTRIES);
  EXPECT_EQ(p.b.NextI().RequestContext, reinterpret_cast<void*>(1));
  EXPECT_EQ(p.b.NextI().RequestContext, reinterpret_cast<void*>(2));
  // The queue pair still works.
  ASSERT_EQ(p.a.PostReceive(nullptr, 0, 8), ND_SUCCESS);
  ASSERT_EQ(p.b.PostSend(nullptr, 0, 8), ND_SUCCESS);
  EXPECT_EQ(p.b.NextI().Status, ND_SUCCESS);
  Deregister(ro);
  ro->Release();
  wa->Release();
  w->Release();
}

// An Invalidate of a window that is not bound completes
// ND_INVALID_DEVICE_REQUEST ("an Invalidate request attempted to invalidate
// a memory window that is not bound"); as any error, it takes the
// connection down: what follows completes ND_CANCELED.
TEST_P(Nd2Memory, InvalidateOfAnUnboundWindow) {
  for (int bound_before : {0, 1}) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(p.Open());
    IND2MemoryWindow* w = NewWindow(p.b.adapter);
    if (bound_before) {  // bound, invalidated: unbound again
      ASSERT_EQ(p.b.qp->Bind(nullptr, p.b.mr, w, p.b.buf.data(), 64, ND_OP_FLAG_ALLOW_READ), ND_SUCCESS);
      ASSERT_EQ(p.b.qp->Invalidate(nullptr, w, 0), ND_SUCCESS);
      EXPECT_EQ(p.b.NextI().Status, ND_SUCCESS);
      EXPECT_EQ(p.b.NextI().Status, ND_SUCCESS);
    }
    ASSERT_EQ(p.b.qp->Invalidate(reinterpret_cast<void*>(1), w, 0), ND_SUCCESS);
    ASSERT_EQ(p.b.PostSend(reinterpret_cast<void*>(2), 0, 8), ND_SUCCESS);
    ND2_RESULT r = p.b.NextI();
    EXPECT_EQ(r.Status, ND_INVALID_DEVICE_REQUEST);
    EXPECT_EQ(r.RequestType, Nd2RequestTypeInvalidate);
    EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(1));
    r = p.b.NextI();
    EXPECT_EQ(r.Status, ND_CANCELED);
    EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(2));
    w->Release();
  }
}

// Deregister with a window bound: ND_DEVICE_BUSY; once the window is
// invalidated the region deregisters. A region released while windows are
// bound to it takes their access away.
TEST_P(Nd2Memory, DeregisterWithABoundWindowAndReleasedRegion) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  IND2MemoryWindow* w = NewWindow(p.b.adapter);
  IND2MemoryRegion* t = Register(p.b.adapter, p.b.file, p.b.buf.data(), 65536, kAllMrFlags);
  ASSERT_EQ(p.b.qp->Bind(nullptr, t, w, p.b.buf.data(), 4096, ND_OP_FLAG_ALLOW_WRITE), ND_SUCCESS);
  EXPECT_EQ(p.b.NextI().Status, ND_SUCCESS);
  Ov ov;
  EXPECT_EQ(t->Deregister(&ov.ov), ND_DEVICE_BUSY);
  EXPECT_EQ(WaitForSingleObject(ov.ov.hEvent, 0), WAIT_TIMEOUT);
  // Still registered and working.
  EXPECT_EQ(RemoteAccess(p, true, p.b.Va(0), 64, w->GetRemoteToken()).initiator, ND_SUCCESS);
  ASSERT_EQ(p.b.qp->Invalidate(nullptr, w, 0), ND_SUCCESS);
  EXPECT_EQ(p.b.NextI().Status, ND_SUCCESS);
  EXPECT_EQ(Finish(t, ov, t->Deregister(&ov.ov)), ND_SUCCESS);
  // Bound again, then the region is released without Deregister.
  Ov ov2;
  ASSERT_EQ(Finish(t, ov2, t->Register(p.b.buf.data(), 65536, kAllMrFlags, &ov2.ov)), ND_SUCCESS);
  ASSERT_EQ(p.b.qp->Bind(nullptr, t, w, p.b.buf.data(), 4096, ND_OP_FLAG_ALLOW_WRITE), ND_SUCCESS);
  EXPECT_EQ(p.b.NextI().Status, ND_SUCCESS);
  EXPECT_EQ(RemoteAccess(p, true, p.b.Va(0), 64, w->GetRemoteToken()).initiator, ND_SUCCESS);
  t->Release();
  Access r = RemoteAccess(p, true, p.b.Va(0), 64, w->GetRemoteToken());
  EXPECT_EQ(r.initiator, ND_ACCESS_VIOLATION);
  w->Release();
}

// ---- SendAndInvalidate ------------------------------------------------------------------------

// The sender gets one result; the receiver's CQ gets the invalidate result
// (RequestContext the window) and then the receive result; the window is
// unbound from then on: a later access fails ND_ACCESS_VIOLATION at the
// accessor, and it can be bound again.
TEST_P(Nd2Memory, SendAndInvalidate) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  IND2MemoryWindow* w = NewWindow(p.b.adapter);
  ASSERT_EQ(p.b.qp->Bind(nullptr, p.b.mr, w, p.b.buf.data() + 4096, 4096, ND_OP_FLAG_ALLOW_WRITE), ND_SUCCESS);
  EXPECT_EQ(p.b.NextI().Status, ND_SUCCESS);
  const UINT32 token = w->GetRemoteToken();
  // a uses the window, then says it is done with it.
  EXPECT_EQ(RemoteAccess(p, true, p.b.Va(4096), 4096, token).initiator, ND_SUCCESS);
  IND2QueuePairSendAndInvalidate* si = nullptr;
  ASSERT_EQ(p.a.qp->QueryInterface(IID_IND2QueuePairSendAndInvalidate, reinterpret_cast<void**>(&si)), S_OK);
  std::strcpy(p.a.buf.data() + 300000, "done with it");
  ND2_SGE s = p.a.Sge(300000, 13);
  // b's receive from RemoteAccess is still posted (context 0xB).
  ASSERT_EQ(si->SendAndInvalidate(reinterpret_cast<void*>(0x5A), &s, 1, token, 0), ND_SUCCESS);
  ND2_RESULT r = p.a.NextI();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  EXPECT_EQ(r.RequestType, Nd2RequestTypeSend);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(0x5A));
  EXPECT_TRUE(Drain(p.a.icq, 30).empty()) << "the sender gets one result";
  r = p.b.NextR();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  EXPECT_EQ(r.RequestType, Nd2RequestTypeInvalidate);
  EXPECT_EQ(r.RequestContext, static_cast<void*>(w));
  EXPECT_EQ(r.QueuePairContext, &p.b);
  r = p.b.NextR();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  EXPECT_EQ(r.RequestType, Nd2RequestTypeReceive);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(0xB));
  EXPECT_EQ(r.BytesTransferred, 13u);
  EXPECT_STREQ(p.b.buf.data() + 900000, "done with it");
  // Bound again (a new token): works; the old token does not.
  ASSERT_EQ(p.b.qp->Bind(nullptr, p.b.mr, w, p.b.buf.data() + 4096, 4096, ND_OP_FLAG_ALLOW_WRITE), ND_SUCCESS);
  EXPECT_EQ(p.b.NextI().Status, ND_SUCCESS);
  EXPECT_NE(w->GetRemoteToken(), token);
  EXPECT_EQ(RemoteAccess(p, true, p.b.Va(4096), 16, w->GetRemoteToken()).initiator, ND_SUCCESS);
  // Invalidated by the peer and then by ourselves: nothing to invalidate.
  ASSERT_EQ(p.b.PostReceive(nullptr, 0, 64), ND_SUCCESS);
  ASSERT_EQ(si->SendAndInvalidate(nullptr, nullptr, 0, w->GetRemoteToken(), ND_OP_FLAG_SILENT_SUCCESS), ND_SUCCESS);
  std::vector<ND2_RESULT> rs = Drain(p.b.cq, 100, 2);
  ASSERT_GE(rs.size(), 2u);
  EXPECT_EQ(rs[rs.size() - 2].RequestType, Nd2RequestTypeInvalidate);
  Access after = RemoteAccess(p, true, p.b.Va(4096), 16, w->GetRemoteToken());
  EXPECT_EQ(after.initiator, ND_ACCESS_VIOLATION);
  EXPECT_EQ(after.target_receive, ND_CANCELED);
  si->Release();
  w->Release();
}

// A SendAndInvalidate naming no window bound at the peer fails at the
// sender (ND_ACCESS_VIOLATION) and flushes the peer's receive; its own
// return values are Send's, with ND_INVALID_PARAMETER_5 for flags.
TEST_P(Nd2Memory, SendAndInvalidateErrors) {
  {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(p.Open());
    IND2QueuePairSendAndInvalidate* si = nullptr;
    ASSERT_EQ(p.a.qp->QueryInterface(IID_IND2QueuePairSendAndInvalidate, reinterpret_cast<void**>(&si)), S_OK);
    ASSERT_EQ(p.b.PostReceive(reinterpret_cast<void*>(1), 0, 64), ND_SUCCESS);
    ASSERT_EQ(si->SendAndInvalidate(reinterpret_cast<void*>(2), nullptr, 0, p.b.mr->GetRemoteToken(), 0), ND_SUCCESS);
    ND2_RESULT r = p.a.NextI();
    EXPECT_EQ(r.Status, ND_ACCESS_VIOLATION);
    EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(2));
    r = p.b.NextR();
    EXPECT_EQ(r.Status, ND_CANCELED);
    EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(1));
    si->Release();
  }
  QpSizes sz;
  sz.isge = 1;
  sz.inl = 16;
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open(sz));
  const ND2_ADAPTER_INFO info = QueryInfo(p.a.adapter);
  IND2QueuePairSendAndInvalidate* si = nullptr;
  ASSERT_EQ(p.a.qp->QueryInterface(IID_IND2QueuePairSendAndInvalidate, reinterpret_cast<void**>(&si)), S_OK);
  ND2_SGE five[5] = {p.a.Sge(0, 1), p.a.Sge(1, 1), p.a.Sge(2, 1), p.a.Sge(3, 1), p.a.Sge(4, 1)};
  EXPECT_EQ(si->SendAndInvalidate(nullptr, five, 5, 1, 0), ND_DATA_OVERRUN);  // 1 asked for, 4 rounded
  ND2_SGE huge{p.a.buf.data(), info.MaxTransferLength + 1, p.a.mr->GetLocalToken()};
  EXPECT_EQ(si->SendAndInvalidate(nullptr, &huge, 1, 1, 0), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(si->SendAndInvalidate(nullptr, five, 1, 1, ND_OP_FLAG_ALLOW_WRITE), ND_INVALID_PARAMETER_5);
  EXPECT_EQ(si->SendAndInvalidate(nullptr, five, 1, 1, 0x80), ND_INVALID_PARAMETER_5);
  char big[17] = {};
  ND2_SGE inl{big, 17, 0};
  EXPECT_EQ(si->SendAndInvalidate(nullptr, &inl, 1, 1, ND_OP_FLAG_INLINE), ND_BUFFER_OVERFLOW);
  si->Release();
}

// ---- tokens on the wire -----------------------------------------------------------------------

// A minimal pcap reader: every frame of the file.
std::vector<std::vector<uint8_t>> ReadPcap(const std::string& path) {
  std::vector<std::vector<uint8_t>> out;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return out;
  uint8_t gh[24];
  if (std::fread(gh, 1, 24, f) == 24) {
    uint32_t magic;
    std::memcpy(&magic, gh, 4);
    const bool ok = magic == 0xa1b2c3d4u || magic == 0xa1b23c4du;
    uint8_t rh[16];
    while (ok && std::fread(rh, 1, 16, f) == 16) {
      uint32_t incl;
      std::memcpy(&incl, rh + 8, 4);
      std::vector<uint8_t> frame(incl);
      if (std::fread(frame.data(), 1, incl, f) != incl) break;
      out.push_back(std::move(frame));
    }
  }
  std::fclose(f);
  return out;
}

uint32_t Be32(const uint8_t* p) { return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3]; }
uint64_t Be64(const uint8_t* p) { return uint64_t{Be32(p)} << 32 | Be32(p + 4); }

// The RETH (va, rkey) of every RDMA WRITE ONLY / READ REQUEST frame.
struct Reth {
  uint8_t opcode;
  uint64_t va;
  uint32_t rkey;
  uint32_t len;
};
std::vector<Reth> RethsIn(const std::vector<std::vector<uint8_t>>& frames) {
  std::vector<Reth> out;
  for (const auto& f : frames) {
    if (f.size() < 14 + 20 + 8 + 12 + 16) continue;
    if (f[12] != 0x08 || f[13] != 0x00) continue;  // IPv4
    const size_t ihl = (f[14] & 0x0F) * 4;
    if (f[14 + 9] != 17) continue;  // UDP
    const uint8_t* udp = f.data() + 14 + ihl;
    if ((udp[2] << 8 | udp[3]) != 4791) continue;
    const uint8_t* bth = udp + 8;
    const uint8_t op = bth[0];
    if (op != 0x0A && op != 0x0C) continue;  // RC RDMA WRITE ONLY, RDMA READ REQUEST
    const uint8_t* reth = bth + 12;
    out.push_back({op, Be64(reth), Be32(reth + 8), Be32(reth + 12)});
  }
  return out;
}

// The remote tokens of regions and windows are the R_Keys the RETH carries,
// and remote addresses the virtual addresses (ND2 is not zero-based).
TEST(Nd2MemoryWire, TokensAreTheKeysOnTheWire) {
  ASSERT_NO_FATAL_FAILURE(Start(Mode::kCapture));
  UINT64 va_mr = 0, va_mw = 0;
  UINT32 tok_mr = 0, tok_mw = 0;
  {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(p.Open());
    IND2MemoryWindow* w = NewWindow(p.b.adapter);
    ASSERT_EQ(p.b.qp->Bind(nullptr, p.b.mr, w, p.b.buf.data() + 8192, 4096,
                           ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE),
              ND_SUCCESS);
    EXPECT_EQ(p.b.NextI().Status, ND_SUCCESS);
    va_mr = p.b.Va(100);
    tok_mr = p.b.mr->GetRemoteToken();
    va_mw = p.b.Va(8192 + 100);
    tok_mw = w->GetRemoteToken();
    ND2_SGE s = p.a.Sge(0, 200);
    ASSERT_EQ(p.a.qp->Write(nullptr, &s, 1, va_mr, tok_mr, 0), ND_SUCCESS);
    EXPECT_EQ(p.a.NextI().Status, ND_SUCCESS);
    ASSERT_EQ(p.a.qp->Read(nullptr, &s, 1, va_mw, tok_mw, 0), ND_SUCCESS);
    EXPECT_EQ(p.a.NextI().Status, ND_SUCCESS);
    w->Release();
  }
  ASSERT_NO_FATAL_FAILURE(Start(Mode::kInline));  // closes the adapters: the capture is complete
  const std::vector<Reth> reths = RethsIn(ReadPcap(CapturePath()));
  bool saw_write = false, saw_read = false;
  for (const Reth& r : reths) {
    if (r.opcode == 0x0A && r.va == va_mr) {
      EXPECT_EQ(r.rkey, tok_mr);
      EXPECT_EQ(r.len, 200u);
      saw_write = true;
    }
    if (r.opcode == 0x0C && r.va == va_mw) {
      EXPECT_EQ(r.rkey, tok_mw);
      saw_read = true;
    }
  }
  EXPECT_TRUE(saw_write) << reths.size() << " RETHs in the capture";
  EXPECT_TRUE(saw_read);
}

// The ECE of every CM REQ / REP (MADs in UD SEND_ONLY datagrams to QP 1):
// the REQ's vendor ID (CM payload bytes 5-7) and the MAD's attribute modifier.
struct Ece {
  uint16_t attr;  // 0x0010 REQ, 0x0013 REP
  uint32_t vendor_id;
  uint32_t attr_mod;
};
std::vector<Ece> EcesIn(const std::vector<std::vector<uint8_t>>& frames) {
  std::vector<Ece> out;
  for (const auto& f : frames) {
    if (f.size() < 14 + 20 + 8 + 12 + 8 + 256 || f[12] != 0x08 || f[13] != 0x00 || f[14 + 9] != 17) continue;
    const uint8_t* udp = f.data() + 14 + (f[14] & 0x0F) * 4;
    if ((udp[2] << 8 | udp[3]) != 4791) continue;
    const uint8_t* bth = udp + 8;
    if (bth[0] != 0x64 || (Be32(bth + 4) & 0xFFFFFF) != 1) continue;  // UD SEND ONLY to QP 1
    const uint8_t* mad = bth + 12 + 8;
    const uint16_t attr = static_cast<uint16_t>(mad[16] << 8 | mad[17]);
    if (mad[1] != 0x07 || (attr != 0x0010 && attr != 0x0013)) continue;  // CM REQ, REP
    const uint8_t* msg = mad + 24;
    out.push_back({attr, attr == 0x0010 ? Be32(msg + 4) & 0xFFFFFF : 0u, Be32(mad + 20)});
  }
  return out;
}

// Selective repair (docs/protocol.md, Protocol notes) is offered in the REQ and
// accepted in the REP between two of our adapters by default — ECE vendor ID
// 0x0A5352, attribute modifier 0x5352 << 16 | 1 — and an adapter with
// selective_repair = off accepts nothing (the REP's attribute modifier 0).
TEST(Nd2MemoryWire, SelectiveRepairIsNegotiatedAndTheKeyTurnsItOff) {
  for (Mode m : {Mode::kCapture, Mode::kCaptureNoRepair}) {
    ASSERT_NO_FATAL_FAILURE(Start(m));
    {
      Pair p;
      ASSERT_NO_FATAL_FAILURE(p.Open());
    }
    ASSERT_NO_FATAL_FAILURE(Start(Mode::kInline));  // the capture is complete
    const std::vector<Ece> eces = EcesIn(ReadPcap(CapturePath()));
    int reqs = 0, reps = 0;
    for (const Ece& e : eces) {
      if (e.attr == 0x0010) {
        reqs++;
        EXPECT_EQ(e.vendor_id, 0x0A5352u);
        EXPECT_EQ(e.attr_mod, 0x53520001u);
      } else {
        reps++;
        EXPECT_EQ(e.attr_mod, m == Mode::kCapture ? 0x53520001u : 0u) << (m == Mode::kCapture ? "default" : "off");
      }
    }
    EXPECT_GE(reqs, 1);
    EXPECT_GE(reps, 1);
  }
}

}  // namespace
}  // namespace nd2t
