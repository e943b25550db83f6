// IND2CompletionQueue and IND2SharedReceiveQueue.
#include <algorithm>

#include "nd2api/src/nd2.h"

namespace roce::nd2 {

namespace {
constexpr uintptr_t kTagAny = ND_CQ_NOTIFY_ANY + 1, kTagSolicited = ND_CQ_NOTIFY_SOLICITED + 1,
                    kTagErrors = ND_CQ_NOTIFY_ERRORS + 1;
}  // namespace

CompletionQueue::CompletionQueue(Adapter* a, std::shared_ptr<OverlappedFile> f, ULONG depth)
    : adapter_(a), ov_(std::move(f)), cq_(std::make_unique<rc::CompletionQueue>(depth)) {
  adapter_->AddRef();
  cq_->on_push = [this](const rc::Completion& c) { OnPush(c); };
}

CompletionQueue::~CompletionQueue() {
  ov_.CancelAll();
  {
    absl::MutexLock l(&adapter_->eng().mu());
    cq_->on_push = nullptr;
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
  if (!group) return ND_INVALID_PARAMETER_1;
  if (!affinity) return ND_INVALID_PARAMETER_2;
  *group = 0;
  *affinity = ~KAFFINITY{0};
  return ND_SUCCESS;
}

HRESULT CompletionQueue::Resize(ULONG depth) {
  if (depth == 0 || depth > Limits::kMaxCqDepth) return ND_INVALID_PARAMETER_1;
  std::lock_guard<std::mutex> pl(poll_mu_);
  absl::MutexLock l(&adapter_->eng().mu());
  if (depth < cq_->size()) return ND_BUFFER_OVERFLOW;  // the queued completions must fit
  // The engine pushes into this ring: resized with both sides held.
  if (!cq_->Resize(depth)) return ND_BUFFER_OVERFLOW;
  return ND_SUCCESS;
}

void CompletionQueue::OnPush(const rc::Completion& c) {
  const bool error = c.status != rc::Status::kSuccess;
  const bool sol = c.solicited;
  unseen_any_++;
  if (sol || error) unseen_sol_or_err_++;
  if (error) unseen_err_++;
  // Every outstanding Notify that this completion satisfies completes.
  ov_.CompleteAllTagged(kTagAny, ND_SUCCESS);
  if (sol || error) ov_.CompleteAllTagged(kTagSolicited, ND_SUCCESS);
  if (error) ov_.CompleteAllTagged(kTagErrors, ND_SUCCESS);
}

HRESULT CompletionQueue::Notify(ULONG type, OVERLAPPED* ov) {
  if (type != ND_CQ_NOTIFY_ANY && type != ND_CQ_NOTIFY_SOLICITED && type != ND_CQ_NOTIFY_ERRORS)
    return ND_INVALID_PARAMETER_1;
  if (!ov) return ND_INVALID_PARAMETER_2;
  // Armed under the engine lock: a completion pushed from now on finds it.
  // One already queued and not yet returned by GetResults satisfies it at
  // once (no lost wake-up between a GetResults that returned 0 and Notify).
  absl::MutexLock l(&adapter_->eng().mu());
  const uint64_t pending = type == ND_CQ_NOTIFY_ANY        ? unseen_any_.load()
                           : type == ND_CQ_NOTIFY_SOLICITED ? unseen_sol_or_err_.load()
                                                            : unseen_err_.load();
  const HRESULT h = ov_.Pend(ov, {}, type + 1);
  if (pending) ov_.Complete(ov, ND_SUCCESS);
  return h;
}

ULONG CompletionQueue::GetResults(ND2_RESULT results[], ULONG n) {
  if (!results || n == 0) return 0;
  // Inline progress: the polling thread drives the process's inline
  // engines (all of them: a peer adapter in this process needs its passes
  // too, or two adapters of one program would wait on each other).
  if (adapter_->inline_progress()) {
    if (Provider* p = Provider::Get()) p->PollInline();
    else adapter_->Progress();
  }
  std::lock_guard<std::mutex> pl(poll_mu_);
  ULONG got = 0;
  while (got < n && !carry_.empty()) {
    results[got++] = carry_.front();
    carry_.pop_front();
  }
  rc::Completion cs[64];
  while (got < n) {
    const uint32_t want = std::min<uint32_t>(64, n - got);
    const uint32_t k = cq_->Poll(cs, want);
    if (k == 0) break;
    for (uint32_t i = 0; i < k; i++) {
      const rc::Completion& c = cs[i];
      unseen_any_ = unseen_any_ > 0 ? unseen_any_ - 1 : 0;
      if (c.solicited || c.status != rc::Status::kSuccess)
        unseen_sol_or_err_ = unseen_sol_or_err_ > 0 ? unseen_sol_or_err_ - 1 : 0;
      if (c.status != rc::Status::kSuccess) unseen_err_ = unseen_err_ > 0 ? unseen_err_ - 1 : 0;
      ND2_RESULT r{};
      r.Status = ToHresult(c.status);
      r.BytesTransferred = c.bytes;
      r.QueuePairContext = reinterpret_cast<VOID*>(c.qp_context);
      r.RequestContext = reinterpret_cast<VOID*>(c.request_context);
      r.RequestType = static_cast<ND2_REQUEST_TYPE>(c.type);
      if (c.type == rc::RequestType::kReceive && c.with_inv && c.status == rc::Status::kSuccess) {
        // SendAndInvalidate at the receiver: the invalidate result first,
        // its context the window (ndspi.h, IND2QueuePairSendAndInvalidate).
        ND2_RESULT inv{};
        inv.Status = ND_SUCCESS;
        inv.QueuePairContext = r.QueuePairContext;
        {
          absl::MutexLock l(&adapter_->eng().mu());
          inv.RequestContext = static_cast<IND2MemoryWindow*>(adapter_->WindowByToken(c.inv_rkey));
        }
        inv.RequestType = Nd2RequestTypeInvalidate;
        if (got < n) results[got++] = inv;
        else carry_.push_back(inv);
      }
      if (got < n) results[got++] = r;
      else carry_.push_back(r);
    }
  }
  return got;
}

// ---- shared receive queue ---------------------------------------------------------------------------

SharedReceiveQueue::SharedReceiveQueue(Adapter* a, std::shared_ptr<OverlappedFile> f, ULONG depth, ULONG max_sge,
                                       ULONG threshold)
    : adapter_(a), ov_(std::move(f)), rq_(std::make_unique<rc::ReceiveQueue>(depth, max_sge)), max_sge_(max_sge),
      threshold_(threshold) {
  adapter_->AddRef();
  rq_->on_pop = [this] { CheckThreshold(); };  // the engine took a receive (its lock held)
}

SharedReceiveQueue::~SharedReceiveQueue() {
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
  if (!group) return ND_INVALID_PARAMETER_1;
  if (!affinity) return ND_INVALID_PARAMETER_2;
  *group = 0;
  *affinity = ~KAFFINITY{0};
  return ND_SUCCESS;
}

HRESULT SharedReceiveQueue::Modify(ULONG depth, ULONG threshold) {
  absl::MutexLock l(&adapter_->eng().mu());
  if (depth != 0 && depth != rq_->depth()) {
    // The ring is shared with the engine; a different depth would need every
    // QP on it quiesced. Only growing within the built capacity is offered.
    if (depth > Limits::kMaxSrqDepth) return ND_INVALID_PARAMETER_1;
    if (depth < rq_->size()) return ND_BUFFER_OVERFLOW;
    return ND_NOT_SUPPORTED;
  }
  if (threshold > rq_->depth()) return ND_INVALID_PARAMETER_2;
  if (threshold != 0) threshold_ = threshold;
  return ND_SUCCESS;
}

void SharedReceiveQueue::CheckThreshold() {
  if (threshold_ && rq_->size() < threshold_) ov_.CompleteAllTagged(1, ND_SUCCESS);
}

HRESULT SharedReceiveQueue::Notify(OVERLAPPED* ov) {
  if (!ov) return ND_INVALID_PARAMETER_1;
  absl::MutexLock l(&adapter_->eng().mu());
  const HRESULT h = ov_.Pend(ov, {}, 1);
  CheckThreshold();
  return h;
}

HRESULT SharedReceiveQueue::Receive(VOID* ctx, const ND2_SGE sge[], ULONG n) {
  if (n > max_sge_) return ND_DATA_OVERRUN;
  if (n && !sge) return ND_INVALID_PARAMETER_2;
  rc::Sge s[Limits::kMaxSge];
  for (ULONG i = 0; i < n; i++)
    s[i] = {reinterpret_cast<uint64_t>(sge[i].Buffer), sge[i].BufferLength, sge[i].MemoryRegionToken};
  rc::RecvWr w;
  w.context = reinterpret_cast<uint64_t>(ctx);
  w.sge = s;
  w.num_sge = n;
  absl::MutexLock l(&adapter_->eng().mu());
  return PostHresult(rq_->Post(w));
}

}  // namespace roce::nd2
