// SPDX-License-Identifier: MIT
// IND2CompletionQueue (GetResults, Notify ANY / SOLICITED / ERRORS, no lost
// wake-up, Resize, GetNotifyAffinity, CancelOverlappedRequests, overrun) and
// IND2SharedReceiveQueue (Receive, Notify at the threshold, Modify), with
// IND2Overlapped on each.
#include <sched.h>

#include <atomic>
#include <thread>

#include "tests/nd2api/nd2_objects_util.h"

namespace nd2t {
namespace {

class Nd2Cq : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(Start(GetParam())); }
};

INSTANTIATE_TEST_SUITE_P(Progress, Nd2Cq, ::testing::Values(Mode::kInline, Mode::kThread),
                         [](const ::testing::TestParamInfo<Mode>& i) {
                           return i.param == Mode::kThread ? std::string("Thread") : std::string("Inline");
                         });

class Nd2CqInline : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(Start(Mode::kInline)); }
};

// Sets `stop` and joins `t` however the scope is left (a failed ASSERT).
struct Joiner {
  std::thread& t;
  std::atomic<bool>& stop;
  ~Joiner() {
    stop = true;
    if (t.joinable()) t.join();
  }
};

// Lets the engines run for `ms` without touching any CQ (a wait drives
// inline engines).
void Progress(DWORD ms) {
  HANDLE ev = CreateEvent(nullptr, FALSE, FALSE, nullptr);
  WaitForSingleObject(ev, ms);
  CloseHandle(ev);
}

// The spec's example: Notify pends; a completion completes it; GetResults
// returns it, then 0; that completion does not complete the next Notify.
TEST_P(Nd2Cq, NotifyAnyCompletesOnTheNextCompletionOnce) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  for (int round = 0; round < 3; round++) {
    Ov ov;
    ASSERT_EQ(p.b.cq->Notify(ND_CQ_NOTIFY_ANY, &ov.ov), ND_PENDING);
    EXPECT_TRUE(StillPending(p.b.cq, ov));
    ASSERT_EQ(p.b.PostReceive(nullptr, 0, 64), ND_SUCCESS);
    ASSERT_EQ(p.a.PostSend(nullptr, 0, 8), ND_SUCCESS);
    EXPECT_EQ(Finish(p.b.cq, ov, ND_PENDING), ND_SUCCESS);
    ND2_RESULT r[4];
    EXPECT_EQ(p.b.cq->GetResults(r, 4), 1u);
    EXPECT_EQ(p.b.cq->GetResults(r, 4), 0u);
    EXPECT_EQ(p.a.NextI().Status, ND_SUCCESS);
    // Re-armed: pending again, the completion already returned does not count.
    Ov again;
    ASSERT_EQ(p.b.cq->Notify(ND_CQ_NOTIFY_ANY, &again.ov), ND_PENDING);
    EXPECT_TRUE(StillPending(p.b.cq, again, 30));
    EXPECT_EQ(p.b.cq->CancelOverlappedRequests(), ND_SUCCESS);
    EXPECT_EQ(Finish(p.b.cq, again, ND_PENDING), ND_CANCELED);
  }
}

// A completion that arrives after GetResults returned 0 and before Notify
// completes that Notify at once (no lost wake-up); one that already
// triggered a Notify does not trigger the next one.
TEST_P(Nd2Cq, NoLostWakeUpBetweenGetResultsAndNotify) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  ND2_RESULT r;
  EXPECT_EQ(p.b.cq->GetResults(&r, 1), 0u);
  ASSERT_EQ(p.b.PostReceive(nullptr, 0, 64), ND_SUCCESS);
  ASSERT_EQ(p.a.PostSend(nullptr, 0, 8), ND_SUCCESS);
  EXPECT_EQ(p.a.NextI().Status, ND_SUCCESS);  // the peer has it: b's result is queued
  Progress(20);
  Ov ov;
  const HRESULT h = p.b.cq->Notify(ND_CQ_NOTIFY_ANY, &ov.ov);
  ASSERT_TRUE(h == ND_PENDING || h == ND_SUCCESS);
  EXPECT_EQ(Finish(p.b.cq, ov, h, 0), ND_SUCCESS) << "the queued completion must satisfy Notify at once";
  // Not consumed yet, but it already triggered: the next Notify waits.
  Ov next;
  ASSERT_EQ(p.b.cq->Notify(ND_CQ_NOTIFY_ANY, &next.ov), ND_PENDING);
  EXPECT_TRUE(StillPending(p.b.cq, next, 30));
  EXPECT_EQ(p.b.cq->GetResults(&r, 1), 1u);
  EXPECT_EQ(p.b.cq->CancelOverlappedRequests(), ND_SUCCESS);
  EXPECT_EQ(Finish(p.b.cq, next, ND_PENDING), ND_CANCELED);
}

// With no Notify outstanding the engine stops calling the queue back for
// each completion (rc::CompletionQueue::on_push_every): only solicited and
// failed ones reach it. A Notify made after such a stretch still counts
// every completion pushed in it (ANY: one not yet taken completes it at
// once), and a solicited one pushed in it satisfies SOLICITED.
TEST_P(Nd2Cq, NotifyCountsCompletionsPushedWhileNoneWasOutstanding) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  for (int i = 0; i < 6; i++) ASSERT_EQ(p.b.PostReceive(reinterpret_cast<void*>(i + 1), i * 64, 64), ND_SUCCESS);
  for (int i = 0; i < 3; i++) {
    ASSERT_EQ(p.a.PostSend(nullptr, 0, 8), ND_SUCCESS);
    EXPECT_EQ(p.a.NextI().Status, ND_SUCCESS);
  }
  Progress(20);
  // Three receives completed, none watched: take two, then ANY sees the third.
  ND2_RESULT two[2];
  ULONG got = 0;
  for (const uint64_t give_up = NowMs() + 10000; got < 2 && NowMs() < give_up;)
    got += p.b.cq->GetResults(two + got, 2 - got);
  ASSERT_EQ(got, 2u);
  Ov any;
  HRESULT h = p.b.cq->Notify(ND_CQ_NOTIFY_ANY, &any.ov);
  ASSERT_TRUE(h == ND_PENDING || h == ND_SUCCESS);
  EXPECT_EQ(Finish(p.b.cq, any, h, 0), ND_SUCCESS) << "the third completion, pushed unwatched, must count";
  ASSERT_EQ(Drain(p.b.cq, 100, 1).size(), 1u);
  // Unwatched again (the event fired): an unsolicited and a solicited receive.
  ASSERT_EQ(p.a.PostSend(nullptr, 0, 8), ND_SUCCESS);
  ASSERT_EQ(p.a.PostSend(nullptr, 0, 8, ND_OP_FLAG_SEND_AND_SOLICIT_EVENT), ND_SUCCESS);
  EXPECT_EQ(p.a.NextI().Status, ND_SUCCESS);
  EXPECT_EQ(p.a.NextI().Status, ND_SUCCESS);
  Progress(20);
  Ov sol;
  h = p.b.cq->Notify(ND_CQ_NOTIFY_SOLICITED, &sol.ov);
  ASSERT_TRUE(h == ND_PENDING || h == ND_SUCCESS);
  EXPECT_EQ(Finish(p.b.cq, sol, h, 0), ND_SUCCESS) << "the solicited receive, pushed unwatched, must count";
  std::vector<ND2_RESULT> rs = Drain(p.b.cq, 100, 2);
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[1].RequestContext, reinterpret_cast<void*>(5));
  // Everything taken: a new SOLICITED waits through an unsolicited receive.
  Ov next;
  ASSERT_EQ(p.b.cq->Notify(ND_CQ_NOTIFY_SOLICITED, &next.ov), ND_PENDING);
  ASSERT_EQ(p.a.PostSend(nullptr, 0, 8), ND_SUCCESS);
  EXPECT_EQ(p.a.NextI().Status, ND_SUCCESS);
  Progress(20);
  EXPECT_TRUE(StillPending(p.b.cq, next, 30));
  EXPECT_EQ(p.b.cq->CancelOverlappedRequests(), ND_SUCCESS);
  EXPECT_EQ(Finish(p.b.cq, next, ND_PENDING), ND_CANCELED);
}

// ND_CQ_NOTIFY_SOLICITED completes only on a receive of a Send with
// ND_OP_FLAG_SEND_AND_SOLICIT_EVENT (or on an error).
TEST_P(Nd2Cq, NotifySolicited) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  Ov ov;
  ASSERT_EQ(p.b.cq->Notify(ND_CQ_NOTIFY_SOLICITED, &ov.ov), ND_PENDING);
  for (int i = 0; i < 3; i++) ASSERT_EQ(p.b.PostReceive(reinterpret_cast<void*>(i + 1), i * 64, 64), ND_SUCCESS);
  ASSERT_EQ(p.a.PostSend(nullptr, 0, 8), ND_SUCCESS);
  ASSERT_EQ(p.a.PostSend(nullptr, 0, 8), ND_SUCCESS);
  EXPECT_EQ(p.a.NextI().Status, ND_SUCCESS);
  EXPECT_EQ(p.a.NextI().Status, ND_SUCCESS);
  Progress(20);
  EXPECT_TRUE(StillPending(p.b.cq, ov, 30)) << "unsolicited receives must not satisfy SOLICITED";
  ASSERT_EQ(p.a.PostSend(nullptr, 0, 8, ND_OP_FLAG_SEND_AND_SOLICIT_EVENT), ND_SUCCESS);
  EXPECT_EQ(Finish(p.b.cq, ov, ND_PENDING), ND_SUCCESS);
  std::vector<ND2_RESULT> rs = Drain(p.b.cq, 100, 3);
  ASSERT_EQ(rs.size(), 3u);
  EXPECT_EQ(rs[2].RequestContext, reinterpret_cast<void*>(3));
  // SEND_AND_SOLICIT_EVENT with SendAndInvalidate too is covered in the memory tests.
}

// ANY takes precedence: a SOLICITED request outstanding with an ANY one
// completes on the next (unsolicited) completion too; every outstanding
// Notify completes on one event.
TEST_P(Nd2Cq, AnyOverridesSolicitedAndOneEventReleasesAll) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  Ov sol, any1, any2, err;
  ASSERT_EQ(p.b.cq->Notify(ND_CQ_NOTIFY_SOLICITED, &sol.ov), ND_PENDING);
  ASSERT_EQ(p.b.cq->Notify(ND_CQ_NOTIFY_ANY, &any1.ov), ND_PENDING);
  ASSERT_EQ(p.b.cq->Notify(ND_CQ_NOTIFY_ANY, &any2.ov), ND_PENDING);
  ASSERT_EQ(p.b.cq->Notify(ND_CQ_NOTIFY_ERRORS, &err.ov), ND_PENDING);
  ASSERT_EQ(p.b.PostReceive(nullptr, 0, 64), ND_SUCCESS);
  ASSERT_EQ(p.a.PostSend(nullptr, 0, 8), ND_SUCCESS);
  EXPECT_EQ(Finish(p.b.cq, any1, ND_PENDING), ND_SUCCESS);
  EXPECT_EQ(Finish(p.b.cq, any2, ND_PENDING), ND_SUCCESS);
  EXPECT_EQ(Finish(p.b.cq, sol, ND_PENDING), ND_SUCCESS);
  EXPECT_EQ(Finish(p.b.cq, err, ND_PENDING), ND_SUCCESS);
}

// ND_CQ_NOTIFY_ERRORS ignores successful completions and completes on an
// error; errors satisfy SOLICITED as well.
TEST_P(Nd2Cq, NotifyErrors) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open());
  Ov err, sol;
  ASSERT_EQ(p.a.icq->Notify(ND_CQ_NOTIFY_ERRORS, &err.ov), ND_PENDING);
  ASSERT_EQ(p.a.icq->Notify(ND_CQ_NOTIFY_SOLICITED, &sol.ov), ND_PENDING);
  ND2_SGE s = p.a.Sge(0, 8);
  ASSERT_EQ(p.a.qp->Write(nullptr, &s, 1, p.b.Va(0), p.b.mr->GetRemoteToken(), 0), ND_SUCCESS);
  ASSERT_EQ(p.a.qp->Read(nullptr, &s, 1, p.b.Va(0), p.b.mr->GetRemoteToken(), 0), ND_SUCCESS);
  Progress(30);
  EXPECT_TRUE(StillPending(p.a.icq, err, 30));
  EXPECT_TRUE(StillPending(p.a.icq, sol, 1));
  EXPECT_EQ(Drain(p.a.icq, 100, 2).size(), 2u);
  ASSERT_EQ(p.a.qp->Write(nullptr, &s, 1, p.b.Va(0), p.b.mr->GetRemoteToken() ^ 0x10, 0), ND_SUCCESS);
  EXPECT_EQ(Finish(p.a.icq, err, ND_PENDING), ND_SUCCESS);
  EXPECT_EQ(Finish(p.a.icq, sol, ND_PENDING), ND_SUCCESS);
  EXPECT_EQ(p.a.NextI().Status, ND_ACCESS_VIOLATION);
}

TEST_P(Nd2Cq, NotifyBadArgumentsAndDestroyedQueue) {
  Endpoint e;
  ASSERT_NO_FATAL_FAILURE(e.Open(kIpA));
  Ov ov;
  EXPECT_EQ(e.cq->Notify(3, &ov.ov), ND_INVALID_PARAMETER_1);
  EXPECT_EQ(e.cq->Notify(ND_CQ_NOTIFY_ANY, nullptr), ND_INVALID_PARAMETER_2);
  EXPECT_EQ(e.cq->GetOverlappedResult(nullptr, FALSE), ND_INVALID_PARAMETER);
  // Released with a Notify outstanding (the last reference): ND_CANCELED, "the completion queue was destroyed".
  IND2CompletionQueue* cq = nullptr;
  ASSERT_EQ(e.adapter->CreateCompletionQueue(IID_IND2CompletionQueue, e.file, 8, 0, 0, reinterpret_cast<void**>(&cq)),
            ND_SUCCESS);
  ASSERT_EQ(cq->Notify(ND_CQ_NOTIFY_ANY, &ov.ov), ND_PENDING);
  cq->Release();
  ASSERT_EQ(WaitForSingleObject(ov.ov.hEvent, 1000), WAIT_OBJECT_0);
  EXPECT_EQ(static_cast<HRESULT>(ov.ov.Internal), ND_CANCELED);
  e.Close();
}

// GetOverlappedResult: ND_PENDING while outstanding (wait FALSE), the final
// status once done; wait TRUE blocks until then (here: until another thread
// cancels), even with no event in the OVERLAPPED.
TEST_P(Nd2Cq, GetOverlappedResultPendingThenFinal) {
  Endpoint e;
  ASSERT_NO_FATAL_FAILURE(e.Open(kIpA));
  OVERLAPPED ov{};  // no event
  ASSERT_EQ(e.cq->Notify(ND_CQ_NOTIFY_ANY, &ov), ND_PENDING);
  EXPECT_EQ(e.cq->GetOverlappedResult(&ov, FALSE), ND_PENDING);
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    e.cq->CancelOverlappedRequests();
  });
  const uint64_t t0 = NowMs();
  EXPECT_EQ(e.cq->GetOverlappedResult(&ov, TRUE), ND_CANCELED);
  EXPECT_GE(NowMs() - t0, 40u);
  canceller.join();
  e.Close();
}

// CancelOverlappedRequests: every outstanding Notify completes ND_CANCELED,
// queued to the file's completion port in the order they were issued (a
// client polling the port with a zero timeout right after finds them all);
// a request whose hEvent has the low bit set is not queued to the port.
TEST_P(Nd2Cq, CancelQueuesEveryRequestInOrder) {
  Endpoint e;
  ASSERT_NO_FATAL_FAILURE(e.Open(kIpA));
  HANDLE port = CreateIoCompletionPort(e.file, nullptr, 5, 0);
  ASSERT_NE(port, nullptr);
  OVERLAPPED ov[4] = {};
  HANDLE ev = CreateEvent(nullptr, TRUE, FALSE, nullptr);
  ov[3].hEvent = reinterpret_cast<HANDLE>(reinterpret_cast<uintptr_t>(ev) | 1);  // not to the port
  const ULONG types[4] = {ND_CQ_NOTIFY_ANY, ND_CQ_NOTIFY_SOLICITED, ND_CQ_NOTIFY_ERRORS, ND_CQ_NOTIFY_ANY};
  for (int i = 0; i < 4; i++) ASSERT_EQ(e.cq->Notify(types[i], &ov[i]), ND_PENDING);
  EXPECT_EQ(e.cq->CancelOverlappedRequests(), ND_SUCCESS);
  for (int i = 0; i < 3; i++) {
    DWORD bytes = 1;
    ULONG_PTR key = 0;
    OVERLAPPED* got = nullptr;
    EXPECT_FALSE(GetQueuedCompletionStatus(port, &bytes, &key, &got, 0));
    EXPECT_EQ(GetLastError(), 995u);  // ERROR_OPERATION_ABORTED
    EXPECT_EQ(got, &ov[i]);
    EXPECT_EQ(key, 5u);
    EXPECT_EQ(e.cq->GetOverlappedResult(&ov[i], FALSE), ND_CANCELED);
  }
  DWORD bytes;
  ULONG_PTR key;
  OVERLAPPED* got = nullptr;
  EXPECT_FALSE(GetQueuedCompletionStatus(port, &bytes, &key, &got, 0));
  EXPECT_EQ(got, nullptr);
  EXPECT_EQ(WaitForSingleObject(ev, 0), WAIT_OBJECT_0);
  EXPECT_EQ(e.cq->GetOverlappedResult(&ov[3], FALSE), ND_CANCELED);
  // Nothing outstanding: still ND_SUCCESS.
  EXPECT_EQ(e.cq->CancelOverlappedRequests(), ND_SUCCESS);
  CloseHandle(ev);
  CloseHandle(port);
  e.Close();
}

TEST_P(Nd2Cq, GetResultsEdgeCasesAndAffinity) {
  Endpoint e;
  ASSERT_NO_FATAL_FAILURE(e.Open(kIpA));
  ASSERT_EQ(e.PostReceive(nullptr, 0, 8), ND_SUCCESS);
  ASSERT_EQ(e.qp->Flush(), ND_SUCCESS);
  ND2_RESULT r{};
  EXPECT_EQ(e.cq->GetResults(nullptr, 1), 0u);
  EXPECT_EQ(e.cq->GetResults(&r, 0), 0u);
  EXPECT_EQ(e.cq->GetResults(&r, 1), 1u);  // still there after the two calls above
  EXPECT_EQ(r.Status, ND_CANCELED);
  // The notify affinity: group 0 and the CPUs this thread may run on.
  USHORT group = 9;
  KAFFINITY aff = 0;
  EXPECT_EQ(e.cq->GetNotifyAffinity(nullptr, &aff), ND_INVALID_PARAMETER);
  EXPECT_EQ(e.cq->GetNotifyAffinity(&group, nullptr), ND_INVALID_PARAMETER);
  ASSERT_EQ(e.cq->GetNotifyAffinity(&group, &aff), ND_SUCCESS);
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  KAFFINITY mine = 0;
  for (int i = 0; i < 64; i++)
    if (CPU_ISSET(i, &set)) mine |= KAFFINITY{1} << i;
  EXPECT_EQ(group, 0);
  EXPECT_EQ(aff, mine);
  // QueryInterface: the CQ is an IND2Overlapped.
  IND2Overlapped* o = nullptr;
  ASSERT_EQ(e.cq->QueryInterface(IID_IND2Overlapped, reinterpret_cast<void**>(&o)), S_OK);
  EXPECT_EQ(static_cast<void*>(o), static_cast<void*>(e.cq));
  o->Release();
  void* p = reinterpret_cast<void*>(1);
  EXPECT_EQ(e.cq->QueryInterface(IID_IND2QueuePair, &p), E_NOINTERFACE);
  EXPECT_EQ(p, nullptr);
  e.Close();
}

// A completion queue of MaxCompletionQueueDepth holds exactly that many
// results. One more: the queue overran and is unusable (Notify:
// ND_BUFFER_OVERFLOW, and an outstanding ERRORS Notify completes with it).
TEST_F(Nd2CqInline, DepthIsTrueAndOverrunIsReported) {
  IND2Adapter* a = OpenAdapter(kIpA);
  ASSERT_NE(a, nullptr);
  const ND2_ADAPTER_INFO info = QueryInfo(a);
  HANDLE f = nullptr;
  ASSERT_EQ(a->CreateOverlappedFile(&f), ND_SUCCESS);
  IND2CompletionQueue* cq = nullptr;
  const ULONG depth = info.MaxCompletionQueueDepth;
  ASSERT_EQ(a->CreateCompletionQueue(IID_IND2CompletionQueue, f, depth, 0, 0, reinterpret_cast<void**>(&cq)),
            ND_SUCCESS);
  IND2QueuePair* qp = nullptr;
  ASSERT_EQ(a->CreateQueuePair(IID_IND2QueuePair, cq, cq, nullptr, 4, 4, 1, 1, 0, reinterpret_cast<void**>(&qp)),
            ND_SUCCESS);
  // A flushed queue pair completes every receive at once: `depth` of them fill the queue.
  ASSERT_EQ(qp->Flush(), ND_SUCCESS);
  for (ULONG i = 0; i < depth; i++) ASSERT_EQ(qp->Receive(reinterpret_cast<void*>(uintptr_t{i}), nullptr, 0), ND_SUCCESS);
  // The flushed results are errors: an ERRORS Notify completes at once.
  Ov errors;
  const HRESULT h = cq->Notify(ND_CQ_NOTIFY_ERRORS, &errors.ov);
  EXPECT_EQ(Finish(cq, errors, h, 0), ND_SUCCESS);
  // They triggered it: the next Notify waits for something new.
  Ov any;
  ASSERT_EQ(cq->Notify(ND_CQ_NOTIFY_ANY, &any.ov), ND_PENDING);
  EXPECT_TRUE(StillPending(cq, any, 10));
  // Resize below the queued count: ND_BUFFER_OVERFLOW, nothing lost.
  EXPECT_EQ(cq->Resize(depth - 1), ND_BUFFER_OVERFLOW);
  // One more: overrun. The outstanding Notify reports it, and so does every later one.
  ASSERT_EQ(qp->Receive(reinterpret_cast<void*>(uintptr_t{depth}), nullptr, 0), ND_SUCCESS);
  EXPECT_EQ(Finish(cq, any, ND_PENDING, 1000), ND_BUFFER_OVERFLOW);
  Ov later;
  EXPECT_EQ(cq->Notify(ND_CQ_NOTIFY_ANY, &later.ov), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(cq->Notify(ND_CQ_NOTIFY_ERRORS, &later.ov), ND_BUFFER_OVERFLOW);
  // The `depth` results that fit are all there, in order.
  std::vector<ND2_RESULT> rs(4096);
  ULONG total = 0;
  for (;;) {
    const ULONG n = cq->GetResults(rs.data(), static_cast<ULONG>(rs.size()));
    for (ULONG i = 0; i < n; i++) {
      ASSERT_EQ(rs[i].RequestContext, reinterpret_cast<void*>(uintptr_t{total}));
      ASSERT_EQ(rs[i].Status, ND_CANCELED);
      total++;
    }
    if (n < rs.size()) break;
  }
  EXPECT_EQ(total, depth);
  qp->Release();
  cq->Release();
  CloseHandle(f);
  a->Release();
}

// Resize: up and down while results are queued (kept, in order), not below
// the queued count (ND_BUFFER_OVERFLOW), not to 0 or above the maximum
// (ND_INVALID_PARAMETER).
TEST_P(Nd2Cq, ResizeKeepsQueuedResults) {
  Endpoint e;
  QpSizes sz;
  sz.cq = 16;
  sz.rq = 16;
  ASSERT_NO_FATAL_FAILURE(e.Open(kIpA, sz));
  const ND2_ADAPTER_INFO info = QueryInfo(e.adapter);
  EXPECT_EQ(e.cq->Resize(0), ND_INVALID_PARAMETER);
  EXPECT_EQ(e.cq->Resize(info.MaxCompletionQueueDepth + 1), ND_INVALID_PARAMETER);
  for (uintptr_t i = 0; i < 10; i++) ASSERT_EQ(e.PostReceive(reinterpret_cast<void*>(i), 0, 8), ND_SUCCESS);
  ASSERT_EQ(e.qp->Flush(), ND_SUCCESS);
  Progress(10);
  EXPECT_EQ(e.cq->Resize(9), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(e.cq->Resize(10), ND_SUCCESS);
  EXPECT_EQ(e.cq->Resize(info.MaxCompletionQueueDepth), ND_SUCCESS);
  EXPECT_EQ(e.cq->Resize(12), ND_SUCCESS);
  ND2_RESULT r[16];
  ASSERT_EQ(e.cq->GetResults(r, 16), 10u);
  for (uintptr_t i = 0; i < 10; i++) EXPECT_EQ(r[i].RequestContext, reinterpret_cast<void*>(i));
  e.Close();
}

// Resize while traffic flows: no result lost or reordered (the sender never
// has more outstanding than the smallest size used).
TEST_P(Nd2Cq, ResizeUnderTrafficLosesNothing) {
  QpSizes sz;
  sz.cq = 64;
  sz.rq = 32;
  sz.iq = 32;
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open(sz, sz));
  const int n = 3000;
  std::atomic<bool> done{false};
  std::atomic<int> resizes{0}, resize_errors{0};
  std::thread resizer([&] {
    ULONG sizes[] = {64, 200, 80, 1000, 96};
    for (int i = 0; !done.load(); i++) {
      if (p.b.cq->Resize(sizes[i % 5]) != ND_SUCCESS) resize_errors++;
      resizes++;
      std::this_thread::yield();
    }
  });
  Joiner join{resizer, done};
  int sent = 0, received = 0, send_done = 0;
  ND2_RESULT r[32];
  const uint64_t end = NowMs() + 60000;
  // Traffic until at least n results have come and the resizer has run
  // many times meanwhile.
  auto more = [&] { return sent < n || resizes.load() < 100; };
  while ((more() || received < sent) && NowMs() < end) {
    while (more() && sent - received < 24 && sent - send_done < 24) {
      ASSERT_EQ(p.b.PostReceive(reinterpret_cast<void*>(uintptr_t(sent)), 0, 64), ND_SUCCESS);
      ASSERT_EQ(p.a.PostSend(nullptr, 0, 8), ND_SUCCESS);
      sent++;
    }
    send_done += static_cast<int>(p.a.icq->GetResults(r, 32));
    const ULONG k = p.b.cq->GetResults(r, 32);
    for (ULONG i = 0; i < k; i++) {
      ASSERT_EQ(r[i].Status, ND_SUCCESS);
      ASSERT_EQ(r[i].RequestContext, reinterpret_cast<void*>(uintptr_t(received))) << "lost or reordered";
      received++;
    }
  }
  done = true;
  resizer.join();
  EXPECT_GE(received, n);
  EXPECT_EQ(received, sent);
  EXPECT_EQ(p.b.cq->Resize(64), ND_SUCCESS);
  EXPECT_GE(resizes.load(), 100);
  EXPECT_EQ(resize_errors.load(), 0);
}

// Many notifications in a row, with another thread producing: each round the
// consumer drains, arms Notify(ANY) and waits; a lost wake-up would hang
// (caught by the wait's deadline).
TEST_P(Nd2Cq, NotifyLoopNeverMissesACompletion) {
  QpSizes sz;
  sz.rq = 256;
  sz.iq = 256;
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Open(sz, sz));
  const int n = 2000;
  for (int i = 0; i < 256; i++) ASSERT_EQ(p.b.PostReceive(nullptr, 0, 64), ND_SUCCESS);
  std::atomic<int> posted{0};
  std::atomic<bool> stop{false};
  std::thread producer([&] {
    ND2_RESULT r[16];
    int completed = 0;
    while (posted.load() < n && !stop.load()) {
      if (posted.load() - completed < 128) {
        if (p.a.PostSend(nullptr, 0, 8) == ND_SUCCESS) posted++;
        if (posted.load() % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      completed += static_cast<int>(p.a.icq->GetResults(r, 16));
    }
    while (completed < posted.load() && !stop.load()) completed += static_cast<int>(p.a.icq->GetResults(r, 16));
  });
  Joiner join{producer, stop};
  int got = 0, waits = 0;
  ND2_RESULT r[8];
  Ov ov;
  while (got < n) {
    ULONG k;
    while ((k = p.b.cq->GetResults(r, 8)) > 0) {
      for (ULONG i = 0; i < k; i++) {
        ASSERT_EQ(r[i].Status, ND_SUCCESS);
        ASSERT_EQ(p.b.PostReceive(nullptr, 0, 64), ND_SUCCESS);
      }
      got += static_cast<int>(k);
    }
    if (got >= n) break;
    const HRESULT h = Finish(p.b.cq, ov, p.b.cq->Notify(ND_CQ_NOTIFY_ANY, &ov.ov), 10000);
    ASSERT_EQ(h, ND_SUCCESS) << "Notify did not complete (lost wake-up?) after " << got << " results";
    waits++;
  }
  EXPECT_EQ(got, n);
  EXPECT_GT(waits, 10);
}

// ---- shared receive queue ----------------------------------------------------------------------

struct SrqSide {
  IND2SharedReceiveQueue* srq = nullptr;
  Endpoint e1, e2;  // two queue pairs on the SRQ (server side)
  Endpoint c1, c2;  // their clients
  void Open(ULONG depth, ULONG max_sge, ULONG threshold) {
    IND2Adapter* b = OpenAdapter(kIpB);
    ASSERT_NE(b, nullptr);
    HANDLE f = nullptr;
    ASSERT_EQ(b->CreateOverlappedFile(&f), ND_SUCCESS);
    ASSERT_EQ(b->CreateSharedReceiveQueue(IID_IND2SharedReceiveQueue, f, depth, max_sge, threshold, 0, 0,
                                          reinterpret_cast<void**>(&srq)),
              ND_SUCCESS);
    CloseHandle(f);  // the SRQ keeps its file
    b->Release();
    ASSERT_NO_FATAL_FAILURE(e1.Open(kIpB, {}, false, srq));
    ASSERT_NO_FATAL_FAILURE(e2.Open(kIpB, {}, false, srq));
    ASSERT_NO_FATAL_FAILURE(c1.Open(kIpA));
    ASSERT_NO_FATAL_FAILURE(c2.Open(kIpA));
    ASSERT_NO_FATAL_FAILURE(Connect(c1, e1, kIpB));
    ASSERT_NO_FATAL_FAILURE(Connect(c2, e2, kIpB));
  }
  // A receive on the SRQ into e1's buffer at `off`.
  HRESULT Post(void* ctx, size_t off, ULONG len) {
    ND2_SGE s = e1.Sge(off, len);
    return srq->Receive(ctx, &s, 1);
  }
  ~SrqSide() {
    c1.Close();
    c2.Close();
    e1.Close();
    e2.Close();
    if (srq) srq->Release();
  }
};

// Receives posted to one SRQ are taken by whichever queue pair a message
// arrives on, in posting order; each result goes to that queue pair's CQ
// with its context.
TEST_P(Nd2Cq, SharedReceiveQueueFeedsBothQueuePairs) {
  SrqSide s;
  ASSERT_NO_FATAL_FAILURE(s.Open(16, 2, 0));
  for (uintptr_t i = 0; i < 4; i++) ASSERT_EQ(s.Post(reinterpret_cast<void*>(i), i * 64, 64), ND_SUCCESS);
  std::strcpy(s.c1.buf.data(), "one");
  std::strcpy(s.c2.buf.data(), "two");
  ASSERT_EQ(s.c1.PostSend(nullptr, 0, 4), ND_SUCCESS);
  EXPECT_EQ(s.c1.NextI().Status, ND_SUCCESS);
  ASSERT_EQ(s.c2.PostSend(nullptr, 0, 4), ND_SUCCESS);
  EXPECT_EQ(s.c2.NextI().Status, ND_SUCCESS);
  ND2_RESULT r = s.e1.NextR();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  EXPECT_EQ(r.QueuePairContext, &s.e1);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(0));
  r = s.e2.NextR();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  EXPECT_EQ(r.QueuePairContext, &s.e2);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(1));
  EXPECT_STREQ(s.e1.buf.data(), "one");
  EXPECT_STREQ(s.e1.buf.data() + 64, "two");
  // A queue pair on an SRQ takes no receives of its own.
  EXPECT_EQ(s.e1.PostReceive(nullptr, 0, 8), ND_INVALID_DEVICE_REQUEST);
}

// A Send to a queue pair whose SRQ is empty does not fail the connection:
// it waits (RNR) until a receive is posted.
TEST_P(Nd2Cq, SendToAnEmptySharedReceiveQueueWaits) {
  SrqSide s;
  ASSERT_NO_FATAL_FAILURE(s.Open(8, 1, 0));
  ASSERT_EQ(s.c1.PostSend(reinterpret_cast<void*>(1), 0, 8), ND_SUCCESS);
  ND2_RESULT r;
  EXPECT_FALSE(Next(s.c1.icq, &r, 100));
  ASSERT_EQ(s.Post(reinterpret_cast<void*>(2), 0, 64), ND_SUCCESS);
  r = s.c1.NextI();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  r = s.e1.NextR();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(2));
}

// Receive's return values on an SRQ.
TEST_P(Nd2Cq, SharedReceiveQueueReceiveReturnValues) {
  Endpoint e;
  ASSERT_NO_FATAL_FAILURE(e.Open(kIpA));
  const ND2_ADAPTER_INFO info = QueryInfo(e.adapter);
  IND2SharedReceiveQueue* srq = nullptr;
  ASSERT_EQ(e.adapter->CreateSharedReceiveQueue(IID_IND2SharedReceiveQueue, e.file, 3, 2, 0, 0, 0,
                                                reinterpret_cast<void**>(&srq)),
            ND_SUCCESS);
  // Created for 2 SGEs, rounded up to 4 (Limits::RoundSge).
  ND2_SGE five[5] = {e.Sge(0, 1), e.Sge(1, 1), e.Sge(2, 1), e.Sge(3, 1), e.Sge(4, 1)};
  EXPECT_EQ(srq->Receive(nullptr, five, 5), ND_DATA_OVERRUN);
  ND2_SGE huge[2] = {{e.buf.data(), info.MaxTransferLength, e.mr->GetLocalToken()}, e.Sge(0, 1)};
  EXPECT_EQ(srq->Receive(nullptr, huge, 2), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(srq->Receive(nullptr, nullptr, 2), ND_INVALID_PARAMETER_2);
  EXPECT_EQ(srq->Receive(nullptr, nullptr, 0), ND_SUCCESS);  // zero-byte receive
  EXPECT_EQ(srq->Receive(nullptr, five, 2), ND_SUCCESS);
  EXPECT_EQ(srq->Receive(nullptr, five, 1), ND_SUCCESS);
  EXPECT_EQ(srq->Receive(nullptr, five, 1), ND_NO_MORE_ENTRIES);
  // Affinity and interfaces, as for the CQ.
  USHORT g = 1;
  KAFFINITY aff = 0;
  EXPECT_EQ(srq->GetNotifyAffinity(nullptr, &aff), ND_INVALID_PARAMETER);
  EXPECT_EQ(srq->GetNotifyAffinity(&g, nullptr), ND_INVALID_PARAMETER);
  ASSERT_EQ(srq->GetNotifyAffinity(&g, &aff), ND_SUCCESS);
  EXPECT_EQ(g, 0);
  EXPECT_NE(aff, 0u);
  IND2Overlapped* o = nullptr;
  ASSERT_EQ(srq->QueryInterface(IID_IND2Overlapped, reinterpret_cast<void**>(&o)), S_OK);
  o->Release();
  void* p = reinterpret_cast<void*>(1);
  EXPECT_EQ(srq->QueryInterface(IID_IND2CompletionQueue, &p), E_NOINTERFACE);
  EXPECT_EQ(p, nullptr);
  srq->Release();
  e.Close();
}

// Notify completes when fewer receives than the threshold are outstanding:
// not before; with threshold 0 never; ND_CANCELED when cancelled or when the
// SRQ is destroyed.
TEST_P(Nd2Cq, SharedReceiveQueueNotifyAtTheThreshold) {
  SrqSide s;
  ASSERT_NO_FATAL_FAILURE(s.Open(8, 1, 3));
  for (uintptr_t i = 0; i < 5; i++) ASSERT_EQ(s.Post(reinterpret_cast<void*>(i), i * 64, 64), ND_SUCCESS);
  Ov ov;
  ASSERT_EQ(s.srq->Notify(&ov.ov), ND_PENDING);
  EXPECT_TRUE(StillPending(s.srq, ov, 20));
  // 5 -> 3 outstanding: not below 3 yet.
  for (int i = 0; i < 2; i++) {
    ASSERT_EQ(s.c1.PostSend(nullptr, 0, 8), ND_SUCCESS);
    EXPECT_EQ(s.c1.NextI().Status, ND_SUCCESS);
  }
  EXPECT_EQ(Drain(s.e1.cq, 100, 2).size(), 2u);
  EXPECT_TRUE(StillPending(s.srq, ov, 20));
  // 3 -> 2: below the threshold.
  ASSERT_EQ(s.c2.PostSend(nullptr, 0, 8), ND_SUCCESS);
  EXPECT_EQ(Finish(s.srq, ov, ND_PENDING), ND_SUCCESS);
  EXPECT_EQ(s.c2.NextI().Status, ND_SUCCESS);
  // Still below: a new Notify completes at once.
  Ov now;
  EXPECT_EQ(Finish(s.srq, now, s.srq->Notify(&now.ov), 1000), ND_SUCCESS);
  // Threshold 1 (Modify with depth 0 keeps the depth): 2 outstanding, not below 1.
  EXPECT_EQ(s.srq->Modify(0, 1), ND_SUCCESS);
  Ov later;
  ASSERT_EQ(s.srq->Notify(&later.ov), ND_PENDING);
  EXPECT_TRUE(StillPending(s.srq, later, 20));
  EXPECT_EQ(s.srq->CancelOverlappedRequests(), ND_SUCCESS);
  EXPECT_EQ(Finish(s.srq, later, ND_PENDING), ND_CANCELED);
  // Destroyed with a Notify outstanding: ND_CANCELED.
  Endpoint e;
  ASSERT_NO_FATAL_FAILURE(e.Open(kIpA));
  IND2SharedReceiveQueue* q = nullptr;
  ASSERT_EQ(e.adapter->CreateSharedReceiveQueue(IID_IND2SharedReceiveQueue, e.file, 4, 1, 0, 0, 0,
                                                reinterpret_cast<void**>(&q)),
            ND_SUCCESS);
  Ov never;
  ASSERT_EQ(q->Notify(&never.ov), ND_PENDING);
  EXPECT_TRUE(StillPending(q, never, 20)) << "threshold 0: no notifications";
  EXPECT_EQ(q->Notify(nullptr), ND_INVALID_PARAMETER_1);
  q->Release();
  ASSERT_EQ(WaitForSingleObject(never.ov.hEvent, 1000), WAIT_OBJECT_0);
  EXPECT_EQ(static_cast<HRESULT>(never.ov.Internal), ND_CANCELED);
  e.Close();
}

// Modify: the depth grows and shrinks with receives outstanding (kept, in
// order); not below the outstanding count (ND_BUFFER_OVERFLOW, unchanged),
// not above the maximum (ND_INVALID_PARAMETER); 0 leaves a value as it is.
TEST_P(Nd2Cq, SharedReceiveQueueModify) {
  SrqSide s;
  ASSERT_NO_FATAL_FAILURE(s.Open(4, 1, 0));
  const ND2_ADAPTER_INFO info = QueryInfo(s.e1.adapter);
  for (uintptr_t i = 0; i < 4; i++) ASSERT_EQ(s.Post(reinterpret_cast<void*>(i), i * 64, 64), ND_SUCCESS);
  EXPECT_EQ(s.Post(nullptr, 0, 64), ND_NO_MORE_ENTRIES);
  EXPECT_EQ(s.srq->Modify(3, 0), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(s.Post(nullptr, 0, 64), ND_NO_MORE_ENTRIES);  // unchanged
  EXPECT_EQ(s.srq->Modify(info.MaxSharedReceiveQueueDepth + 1, 0), ND_INVALID_PARAMETER);
  EXPECT_EQ(s.srq->Modify(0, 0), ND_SUCCESS);
  EXPECT_EQ(s.srq->Modify(10, 0), ND_SUCCESS);
  for (uintptr_t i = 4; i < 10; i++) ASSERT_EQ(s.Post(reinterpret_cast<void*>(i), i * 64, 64), ND_SUCCESS);
  EXPECT_EQ(s.Post(nullptr, 0, 64), ND_NO_MORE_ENTRIES);
  // Consume 4, shrink to 6 (6 outstanding), refill: none lost, all in order.
  for (int i = 0; i < 4; i++) ASSERT_EQ(s.c1.PostSend(nullptr, 0, 8), ND_SUCCESS);
  for (int i = 0; i < 4; i++) EXPECT_EQ(s.c1.NextI().Status, ND_SUCCESS);
  std::vector<ND2_RESULT> rs = Drain(s.e1.cq, 100, 4);
  ASSERT_EQ(rs.size(), 4u);
  EXPECT_EQ(s.srq->Modify(5, 0), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(s.srq->Modify(6, 0), ND_SUCCESS);
  EXPECT_EQ(s.Post(nullptr, 0, 64), ND_NO_MORE_ENTRIES);
  for (int i = 0; i < 6; i++) ASSERT_EQ(s.c2.PostSend(nullptr, 0, 8), ND_SUCCESS);
  for (int i = 0; i < 6; i++) EXPECT_EQ(s.c2.NextI().Status, ND_SUCCESS);
  std::vector<ND2_RESULT> more = Drain(s.e2.cq, 100, 6);
  rs.insert(rs.end(), more.begin(), more.end());
  ASSERT_EQ(rs.size(), 10u);
  for (uintptr_t i = 0; i < 10; i++) EXPECT_EQ(rs[i].RequestContext, reinterpret_cast<void*>(i));
  // A threshold above the depth is refused.
  EXPECT_EQ(s.srq->Modify(0, 7), ND_INVALID_PARAMETER);
}

}  // namespace
}  // namespace nd2t
