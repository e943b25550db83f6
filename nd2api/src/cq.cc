// SPDX-License-Identifier: MIT
// IND2CompletionQueue and IND2SharedReceiveQueue.
#include <sched.h>

#include <algorithm>
#include <new>

#include "nd2api/src/nd2.h"

namespace roce::nd2 {

namespace {
constexpr uintptr_t kTagAny = ND_CQ_NOTIFY_ANY + 1, kTagSolicited = ND_CQ_NOTIFY_SOLICITED + 1,
                    kTagErrors = ND_CQ_NOTIFY_ERRORS + 1;
constexpr uintptr_t kTagSrqNotify = 1;
}  // namespace

KAFFINITY CallerAffinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  KAFFINITY a = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int i = 0; i < 64; i++)
      if (CPU_ISSET(i, &set)) a |= KAFFINITY{1} << i;
  return a ? a : 1;
}

CompletionQueue::CompletionQueue(Adapter* a, std::shared_ptr<OverlappedFile> f, ULONG depth)
    : adapter_(a), ov_(std::move(f)), cq_(std::make_unique<rc::CompletionQueue>(depth)), affinity_(CallerAffinity()) {
  adapter_->AddRef();
  cq_->on_push = [this](const rc::Completion& c) { OnPush(c); };
  cq_->on_overflow = [this](const rc::Completion& c) { OnOverflow(c); };
}

CompletionQueue::~CompletionQueue() {
  // Outstanding Notify requests complete ND_CANCELED: the queue is destroyed.
  ov_.CancelAll();
  {
    roce::engine::EngineLock l(&adapter_->eng().mu());
    cq_->on_push = nullptr;
    cq_->on_overflow = nullptr;
  }
  adapter_->Release();
}

HRESULT CompletionQueue::QueryInterface(REFIID riid, void** ppv) {
  if (!ppv) return E_POINTER;
  if (riid == IID_IUnknown || riid == IID_IND2Overlapped || riid == IID_IND2CompletionQueue) {
    *ppv = static_cast<IND2CompletionQueue*>(this);
    AddRef();
    return S_OK;
  }
  *ppv = nullptr;
  return E_NOINTERFACE;
}

HRESULT CompletionQueue::GetNotifyAffinity(USHORT* group, KAFFINITY* affinity) {
  if (!group || !affinity) return ND_INVALID_PARAMETER;
  *group = 0;
  *affinity = affinity_;
  return ND_SUCCESS;
}

HRESULT CompletionQueue::Resize(ULONG depth) {
  if (depth == 0 || depth > Limits::kMaxCqDepth) return ND_INVALID_PARAMETER;
  engine::FastLock pl(&poll_mu_);
  roce::engine::EngineLock l(&adapter_->eng().mu());
  // The queued completions must fit (the queue is then unchanged). The
  // engine pushes into this ring: resized with both sides held, so no
  // completion is lost or reordered.
  if (depth < cq_->size()) return ND_BUFFER_OVERFLOW;
  try {
    if (!cq_->Resize(depth)) return ND_BUFFER_OVERFLOW;
  } catch (const std::bad_alloc&) {
    return ND_INSUFFICIENT_RESOURCES;
  }
  return ND_SUCCESS;
}

void CompletionQueue::Trigger(HRESULT status) {
  trigger_seq_ = cq_->pushed();
  ov_.CompleteAllTagged(kTagAny, status);
  ov_.CompleteAllTagged(kTagSolicited, status);
  ov_.CompleteAllTagged(kTagErrors, status);
}

void CompletionQueue::OnPush(const rc::Completion& c) {
  const bool error = c.status != rc::Status::kSuccess;
  const bool sol = c.solicited;
  const uint64_t seq = cq_->pushed();  // this completion's number
  if (sol || error) last_sol_or_err_ = seq;
  if (error) last_err_ = seq;
  // The queue is armed at the strongest kind outstanding (ANY over
  // SOLICITED over ERRORS; errors satisfy every kind); an event releases
  // every outstanding Notify.
  if (ov_.Empty()) {
    // No Notify outstanding: nothing to trigger, and until Notify arms the
    // queue again only solicited and failed completions need this call
    // (their numbers, above); the count of all is the queue's own.
    cq_->on_push_every = false;
    return;
  }
  if (ov_.HasTag(kTagAny) || ((sol || error) && ov_.HasTag(kTagSolicited)) || (error && ov_.HasTag(kTagErrors)))
    Trigger(ND_SUCCESS);
}

void CompletionQueue::OnOverflow(const rc::Completion&) {
  // A completion was lost: the queue is unusable (IND2CompletionQueue::Notify,
  // ND_BUFFER_OVERFLOW); every outstanding Notify learns it now.
  overrun_ = true;
  Trigger(ND_BUFFER_OVERFLOW);
}

HRESULT CompletionQueue::Notify(ULONG type, OVERLAPPED* ov) {
  if (type != ND_CQ_NOTIFY_ANY && type != ND_CQ_NOTIFY_SOLICITED && type != ND_CQ_NOTIFY_ERRORS)
    return ND_INVALID_PARAMETER_1;
  if (!ov) return ND_INVALID_PARAMETER_2;
  // Armed under the engine lock: a completion pushed from now on finds it.
  // One pushed after the last event and after what GetResults has taken
  // satisfies it at once (no lost wake-up between a GetResults that
  // returned less than asked and Notify; no second wake-up for a completion
  // that already triggered one).
  roce::engine::EngineLock l(&adapter_->eng().mu());
  if (overrun_) return ND_BUFFER_OVERFLOW;
  cq_->on_push_every = true;  // every push reaches OnPush while a Notify is outstanding
  const uint64_t last = type == ND_CQ_NOTIFY_ANY        ? cq_->pushed()
                        : type == ND_CQ_NOTIFY_SOLICITED ? last_sol_or_err_
                                                         : last_err_;
  const HRESULT h = ov_.Pend(ov, {}, type + 1);
  if (last > std::max(trigger_seq_, consumed_.load())) Trigger(ND_SUCCESS);
  return h;
}

ULONG CompletionQueue::GetResults(ND2_RESULT results[], ULONG n) {
  if (!results || n == 0) return 0;
  // Inline progress: the polling thread drives the process's inline
  // engines (all of them: a peer adapter in this process needs its passes
  // too, or two adapters of one program would wait on each other) — also
  // when this queue's adapter has a progress thread, as a wait does: a
  // program whose other adapter is inline polls this one for what that one
  // sends (PollInline skips threaded adapters at no cost).
  if (Provider* p = Provider::Live()) p->PollInline();
  else if (adapter_->inline_progress()) adapter_->Progress();
  engine::FastLock pl(&poll_mu_);
  ULONG got = 0;
  while (got < n && !carry_.empty()) {
    results[got++] = carry_.front();
    carry_.pop_front();
  }
  // Each completion becomes its result where it lies in the ring, written
  // field by field into the caller's array: a result built on the stack and
  // then copied was read back with 16-byte loads over the narrower stores
  // that had just written it (a failed store forward each, ~45% of
  // GetResults in a split-mode 8 B Write's profile).
  const auto fill = [](ND2_RESULT* r, const rc::Completion& c) {
    r->Status = ToHresult(c);
    r->BytesTransferred = c.bytes;
    r->QueuePairContext = reinterpret_cast<VOID*>(c.qp_context);
    r->RequestContext = reinterpret_cast<VOID*>(c.request_context);
    r->RequestType = static_cast<ND2_REQUEST_TYPE>(c.type);
  };
  auto convert = [&](const rc::Completion& c) {
    if (c.type == rc::RequestType::kReceive && c.with_inv && c.status == rc::Status::kSuccess) [[unlikely]] {
      // SendAndInvalidate at the receiver: the invalidate result first,
      // its context the window (ndspi.h, IND2QueuePairSendAndInvalidate).
      ND2_RESULT inv{};
      inv.Status = ND_SUCCESS;
      inv.QueuePairContext = reinterpret_cast<VOID*>(c.qp_context);
      {
        roce::engine::EngineLock l(&adapter_->eng().mu());
        MemoryWindow* w = adapter_->WindowByToken(c.inv_rkey);
        // The window is unbound from now on (a later Invalidate of it is
        // one of a window that is not bound).
        if (w && w->token() == c.inv_rkey) w->SetUnbound();
        inv.RequestContext = static_cast<IND2MemoryWindow*>(w);
      }
      inv.RequestType = Nd2RequestTypeInvalidate;
      if (got < n) results[got++] = inv;
      else carry_.push_back(inv);
    }
    if (got < n) [[likely]] {
      fill(&results[got++], c);
    } else {
      ND2_RESULT r{};
      fill(&r, c);
      carry_.push_back(r);
    }
  };
  while (got < n) {
    const uint32_t k = cq_->PollEach(std::min<uint32_t>(64, n - got), convert);
    if (k == 0) break;
    // Written only here, under poll_mu_: a store, not a locked add.
    consumed_.store(consumed_.load(std::memory_order_relaxed) + k, std::memory_order_release);
  }
  if (got == 0) adapter_->KeepAwake();
  return got;
}

// ---- shared receive queue ---------------------------------------------------------------------------

SharedReceiveQueue::SharedReceiveQueue(Adapter* a, std::shared_ptr<OverlappedFile> f, ULONG depth, ULONG max_sge,
                                       ULONG threshold)
    : adapter_(a), ov_(std::move(f)), rq_(std::make_unique<rc::ReceiveQueue>(depth, max_sge)), max_sge_(max_sge),
      threshold_(threshold), affinity_(CallerAffinity()) {
  adapter_->AddRef();
  rq_->on_pop = [this] { CheckThreshold(); };  // the engine took a receive (its lock held)
}

SharedReceiveQueue::~SharedReceiveQueue() {
  // Outstanding Notify requests complete ND_CANCELED. Queue pairs hold a
  // reference: none uses the queue any more.
  ov_.CancelAll();
  adapter_->Release();
}

HRESULT SharedReceiveQueue::QueryInterface(REFIID riid, void** ppv) {
  if (!ppv) return E_POINTER;
  if (riid == IID_IUnknown || riid == IID_IND2Overlapped || riid == IID_IND2SharedReceiveQueue) {
    *ppv = static_cast<IND2SharedReceiveQueue*>(this);
    AddRef();
    return S_OK;
  }
  *ppv = nullptr;
  return E_NOINTERFACE;
}

HRESULT SharedReceiveQueue::GetNotifyAffinity(USHORT* group, KAFFINITY* affinity) {
  if (!group || !affinity) return ND_INVALID_PARAMETER;
  *group = 0;
  *affinity = affinity_;
  return ND_SUCCESS;
}

HRESULT SharedReceiveQueue::Modify(ULONG depth, ULONG threshold) {
  // 0 leaves either value as it is.
  if (depth > Limits::kMaxSrqDepth) return ND_INVALID_PARAMETER;
  absl::MutexLockMaybe pl(adapter_->inline_progress() ? nullptr : &post_mu_);
  roce::engine::EngineLock l(&adapter_->eng().mu());
  const ULONG new_depth = depth ? depth : rq_->depth();
  if (threshold > new_depth) return ND_INVALID_PARAMETER;
  if (depth && depth != rq_->depth()) {
    // Fewer entries than receives outstanding: ND_BUFFER_OVERFLOW, the queue
    // unchanged. The engine takes receives from this ring under the lock we
    // hold: nothing is lost or reordered.
    if (depth < rq_->size()) return ND_BUFFER_OVERFLOW;
    try {
      if (!rq_->Resize(depth)) return ND_BUFFER_OVERFLOW;
    } catch (const std::bad_alloc&) {
      return ND_INSUFFICIENT_RESOURCES;
    }
  }
  if (threshold) threshold_ = threshold;
  CheckThreshold();
  return ND_SUCCESS;
}

void SharedReceiveQueue::CheckThreshold() {
  // Level-triggered: Notify completes while fewer receives than the
  // threshold are outstanding (0: notifications off).
  if (threshold_ && rq_->size() < threshold_) ov_.CompleteAllTagged(kTagSrqNotify, ND_SUCCESS);
}

HRESULT SharedReceiveQueue::Notify(OVERLAPPED* ov) {
  if (!ov) return ND_INVALID_PARAMETER_1;
  roce::engine::EngineLock l(&adapter_->eng().mu());
  const HRESULT h = ov_.Pend(ov, {}, kTagSrqNotify);
  CheckThreshold();
  return h;
}

HRESULT SharedReceiveQueue::Receive(VOID* ctx, const ND2_SGE sge[], ULONG n) {
  if (n > max_sge_) return ND_DATA_OVERRUN;
  if (n && !sge) return ND_INVALID_PARAMETER_2;
  SgeScratch scratch;
  rc::Sge* s = scratch.s;
  uint64_t total = 0;
  for (ULONG i = 0; i < n; i++) {
    s[i] = {reinterpret_cast<uint64_t>(sge[i].Buffer), sge[i].BufferLength, sge[i].MemoryRegionToken};
    total += sge[i].BufferLength;
  }
  if (total > Limits::kMaxTransfer) return ND_BUFFER_OVERFLOW;
  rc::RecvWr w;
  w.context = reinterpret_cast<uint64_t>(ctx);
  w.sge = s;
  w.num_sge = n;
  if (!adapter_->inline_progress()) {
    // The engine's thread takes receives from the other end of the ring.
    absl::MutexLock pl(&post_mu_);
    return PostHresult(rq_->Post(w));
  }
  roce::engine::EngineLock l(&adapter_->eng().mu());
  return PostHresult(rq_->Post(w));
}

}  // namespace roce::nd2
