// SPDX-License-Identifier: MIT
// IND2QueuePair (and our SendAndInvalidate extension) over the RC core.
#include <algorithm>
#include <cstring>
#include <new>

#include "nd2api/src/nd2.h"

namespace roce::nd2 {

QueuePair::QueuePair(Adapter* a, CompletionQueue* rcq, CompletionQueue* icq, SharedReceiveQueue* srq, VOID* ctx)
    : adapter_(a), rcq_(rcq), icq_(icq), srq_(srq), ctx_(ctx) {
  adapter_->AddRef();
  rcq_->AddRef();
  icq_->AddRef();
  if (srq_) srq_->AddRef();
}

HRESULT QueuePair::Init(const rc::QpCaps& caps) {
  caps_ = caps;
  // A thread adapter: posting rings as deep as the queues (the credit checks
  // keep them from filling), with room for each request's SGEs and inline bytes.
  rings_ = !adapter_->inline_progress();
  if (rings_) {
    try {
      const uint32_t sq = std::max<uint32_t>(caps.sq_depth, 1), rq = std::max<uint32_t>(caps.rq_depth, 1);
      send_ring_ = std::make_unique<engine::SpscIndex>(sq);
      recv_ring_ = std::make_unique<engine::SpscIndex>(srq_ ? 1 : rq);
      const size_t ns = send_ring_->slots(), nr = recv_ring_->slots();
      send_wr_.resize(ns);
      send_sge_.resize(ns * std::max<uint32_t>(caps.max_send_sge, 1));
      send_inline_.resize(ns * caps.max_inline);
      recv_wr_.resize(nr);
      recv_sge_.resize(nr * std::max<uint32_t>(caps.max_recv_sge, 1));
    } catch (const std::bad_alloc&) {
      return ND_INSUFFICIENT_RESOURCES;
    }
  }
  roce::engine::EngineLock l(&adapter_->eng().mu());
  try {
    qp_ = adapter_->eng().CreateQp(caps, icq_->rc_cq(), rcq_->rc_cq(), srq_ ? srq_->rq() : nullptr,
                                   reinterpret_cast<uint64_t>(ctx_));
  } catch (const std::bad_alloc&) {
    qp_ = nullptr;  // the stack's queues did not fit in memory
  }
  // No free queue pair slot, or no memory for the queues.
  if (!qp_) return ND_INSUFFICIENT_RESOURCES;
  // Init at once: receives may be posted before the connection exists.
  qp_->ToInit();
  if (rings_) adapter_->eng().AddPostSource(&drainer_);
  return ND_SUCCESS;
}

QueuePair::~QueuePair() {
  if (qp_) {
    roce::engine::EngineLock l(&adapter_->eng().mu());
    if (rings_) {
      adapter_->eng().RemovePostSource(&drainer_);
      DrainPosts();
    }
    // Flushed: everything outstanding completes ND_CANCELED in the CQs.
    if (qp_->state() != rc::QpState::kReset) qp_->ToError();
    adapter_->eng().DestroyQp(qp_);
  }
  if (srq_) srq_->Release();
  icq_->Release();
  rcq_->Release();
  adapter_->Release();
}

ULONG QueuePair::Release() {
  const ULONG r = ref_.Drop();
  if (r == 0) {
    // Releasing a connected queue pair disconnects it (nd2-reference.md).
    Connector* c = nullptr;
    {
      roce::engine::EngineLock l(&adapter_->eng().mu());
      c = connector_;
      connector_ = nullptr;
      if (c) c->QpReleased();
    }
    delete this;
  }
  return r;
}

HRESULT QueuePair::QueryInterface(REFIID riid, void** ppv) {
  if (!ppv) return E_POINTER;
  if (riid == IID_IUnknown || riid == IID_IND2QueuePair) {
    *ppv = static_cast<IND2QueuePair*>(this);
  } else if (riid == IID_IND2QueuePairSendAndInvalidate) {
    *ppv = static_cast<IND2QueuePairSendAndInvalidate*>(this);
  } else {
    *ppv = nullptr;
    return E_NOINTERFACE;
  }
  AddRef();
  return S_OK;
}

HRESULT QueuePair::Flush() {
  roce::engine::EngineLock l(&adapter_->eng().mu());
  if (rings_) DrainPosts();  // what was posted before Flush is flushed too
  if (qp_->state() != rc::QpState::kReset && qp_->state() != rc::QpState::kError) qp_->ToError();
  return ND_SUCCESS;
}

namespace {
constexpr ULONG kStackFlags = rc::kSilentSuccess | rc::kReadFence | rc::kSolicited | rc::kInline;

// The request's SGEs in the stack's form; false if their total is more than
// one message can carry (MaxTransferLength).
bool ToSges(const ND2_SGE sge[], ULONG n, rc::Sge* out, uint64_t* total) {
  *total = 0;
  for (ULONG i = 0; i < n; i++) {
    out[i] = {reinterpret_cast<uint64_t>(sge[i].Buffer), sge[i].BufferLength, sge[i].MemoryRegionToken};
    *total += sge[i].BufferLength;
  }
  return *total <= Limits::kMaxTransfer;
}
}  // namespace

HRESULT QueuePair::PostInitiator(rc::SendWr& w, const ND2_SGE sge[], ULONG n, ULONG flags, ULONG allowed,
                                 HRESULT bad_flags) {
  if (n == 1 && sge && !rings_ && !(flags & ~allowed) && caps_.max_send_sge >= 1) {
    // One SGE posted at once under the engine lock, the common request: the
    // checks of PostGeneral come down to its length (inline: the bytes are
    // taken now, by the stack, from any memory). Apart from PostGeneral's
    // frame (its scratch arrays): an 8 B Write's PostInitiator took 75
    // instructions (callgrind), this 34.
    const bool inl = (flags & ND_OP_FLAG_INLINE) != 0;
    const ULONG len = sge[0].BufferLength;
    if (len > (inl ? caps_.max_inline : Limits::kMaxTransfer)) return ND_BUFFER_OVERFLOW;
    const rc::Sge one{reinterpret_cast<uint64_t>(sge[0].Buffer), len, inl ? 0u : sge[0].MemoryRegionToken};
    w.sge = &one;
    w.num_sge = 1;
    w.flags = flags & kStackFlags;
    return PostNow(w);
  }
  return PostGeneral(w, sge, n, flags, allowed, bad_flags);
}

HRESULT QueuePair::PostGeneral(rc::SendWr& w, const ND2_SGE sge[], ULONG n, ULONG flags, ULONG allowed,
                               HRESULT bad_flags) {
  if (flags & ~allowed) return bad_flags;
  if (n && !sge) return ND_INVALID_PARAMETER_2;
  SgeScratch scratch;
  rc::Sge* s = scratch.s;
  uint8_t inline_copy[Limits::kMaxInline];
  // s [0, n) into the stack: through the posting ring, or now under the engine lock.
  const auto post = [&] {
    w.sge = s;
    w.num_sge = n;
    w.flags = flags & kStackFlags;
    return rings_ ? RingSend(w) : PostNow(w);
  };
  if (flags & ND_OP_FLAG_INLINE) {
    // Inline: the bytes are taken now, from any memory (the tokens are not
    // used), and the SGE count is not limited by maxInitiatorRequestSge; only
    // the total, by the queue pair's inline size.
    // More SGEs than both limits cannot be a sensible inline request (each
    // non-empty one carries a byte at least).
    if (n > caps_.max_send_sge && n > caps_.max_inline) return ND_DATA_OVERRUN;
    uint64_t total = 0;
    for (ULONG i = 0; i < n; i++) {
      total += sge[i].BufferLength;
      if (total > caps_.max_inline) return ND_BUFFER_OVERFLOW;
    }
    if (!rings_ && n <= caps_.max_send_sge) {
      // Posted at once under the engine lock: the stack copies the bytes
      // from the caller's buffers itself (tokens unused), no gather here.
      for (ULONG i = 0; i < n; i++) s[i] = {reinterpret_cast<uint64_t>(sge[i].Buffer), sge[i].BufferLength, 0};
      return post();
    }
    uint64_t off = 0;
    for (ULONG i = 0; i < n; i++) {
      if (sge[i].BufferLength) std::memcpy(inline_copy + off, sge[i].Buffer, sge[i].BufferLength);
      off += sge[i].BufferLength;
    }
    s[0] = {reinterpret_cast<uint64_t>(inline_copy), static_cast<uint32_t>(total), 0};
    n = total ? 1 : 0;
  } else {
    if (n > caps_.max_send_sge) return ND_DATA_OVERRUN;
    uint64_t total;
    if (!ToSges(sge, n, s, &total)) return ND_BUFFER_OVERFLOW;
  }
  return post();
}

HRESULT QueuePair::PostNow(const rc::SendWr& w) {
  roce::engine::EngineLock l(&adapter_->eng().mu());
  const rc::QpState st = qp_->state();
  if (st != rc::QpState::kRts && st != rc::QpState::kError) return ND_CONNECTION_INVALID;
  return PostHresult(qp_->PostSend(w));  // rings the engine's doorbell
}

HRESULT QueuePair::Send(VOID* ctx, const ND2_SGE sge[], ULONG n, ULONG flags) {
  rc::SendWr w;
  w.context = reinterpret_cast<uint64_t>(ctx);
  w.op = rc::WrOp::kSend;
  return PostInitiator(w, sge, n, flags,
                       ND_OP_FLAG_SILENT_SUCCESS | ND_OP_FLAG_READ_FENCE | ND_OP_FLAG_SEND_AND_SOLICIT_EVENT |
                           ND_OP_FLAG_INLINE,
                       ND_INVALID_PARAMETER_4);
}

HRESULT QueuePair::SendAndInvalidate(VOID* ctx, const ND2_SGE sge[], ULONG n, UINT32 rtoken, ULONG flags) {
  rc::SendWr w;
  w.context = reinterpret_cast<uint64_t>(ctx);
  w.op = rc::WrOp::kSendWithInvalidate;
  w.invalidate_rkey = rtoken;
  return PostInitiator(w, sge, n, flags,
                       ND_OP_FLAG_SILENT_SUCCESS | ND_OP_FLAG_READ_FENCE | ND_OP_FLAG_SEND_AND_SOLICIT_EVENT |
                           ND_OP_FLAG_INLINE,
                       ND_INVALID_PARAMETER_5);
}

HRESULT QueuePair::Read(VOID* ctx, const ND2_SGE sge[], ULONG n, UINT64 raddr, UINT32 rkey, ULONG flags) {
  rc::SendWr w;
  w.context = reinterpret_cast<uint64_t>(ctx);
  w.op = rc::WrOp::kRead;
  w.remote_addr = raddr;
  w.rkey = rkey;
  return PostInitiator(w, sge, n, flags, ND_OP_FLAG_SILENT_SUCCESS | ND_OP_FLAG_READ_FENCE, ND_INVALID_PARAMETER_6);
}

HRESULT QueuePair::Write(VOID* ctx, const ND2_SGE sge[], ULONG n, UINT64 raddr, UINT32 rkey, ULONG flags) {
  rc::SendWr w;
  w.context = reinterpret_cast<uint64_t>(ctx);
  w.op = rc::WrOp::kWrite;
  w.remote_addr = raddr;
  w.rkey = rkey;
  return PostInitiator(w, sge, n, flags, ND_OP_FLAG_SILENT_SUCCESS | ND_OP_FLAG_READ_FENCE | ND_OP_FLAG_INLINE,
                       ND_INVALID_PARAMETER_6);
}

HRESULT QueuePair::Receive(VOID* ctx, const ND2_SGE sge[], ULONG n) {
  if (srq_) return ND_INVALID_DEVICE_REQUEST;  // receives go to the shared queue
  if (n > caps_.max_recv_sge) return ND_DATA_OVERRUN;
  if (n && !sge) return ND_INVALID_PARAMETER_2;
  SgeScratch scratch;
  rc::Sge* s = scratch.s;
  uint64_t total;
  if (!ToSges(sge, n, s, &total)) return ND_BUFFER_OVERFLOW;
  rc::RecvWr w;
  w.context = reinterpret_cast<uint64_t>(ctx);
  w.sge = s;
  w.num_sge = n;
  if (rings_) return RingReceive(w);
  roce::engine::EngineLock l(&adapter_->eng().mu());
  return PostHresult(qp_->PostRecv(w));
}

// ---- posting rings (thread adapters) ------------------------------------------------------------
// The posting thread does what the stack's PostSend / PostRecv would refuse
// (state, queue full; the arguments are checked before) against the stack's
// own counts, so the same call returns the same status in either progress
// mode; the request then waits in the ring, in posting order, for the next
// engine pass (or for a Bind, Invalidate, Flush or the destructor, which
// drain the ring under the engine lock before they act).

bool QueuePair::InitiatorReady() {
  if (ready_) return true;
  // Until connected: asked under the engine lock. Once in RTS or Error a
  // queue pair never leaves them (nothing resets an ND2 queue pair).
  roce::engine::EngineLock l(&adapter_->eng().mu());
  const rc::QpState st = qp_->state();
  ready_ = st == rc::QpState::kRts || st == rc::QpState::kError;
  return ready_;
}

HRESULT QueuePair::RingSend(const rc::SendWr& w) {
  absl::MutexLock pl(&post_mu_);
  if (!InitiatorReady()) return ND_CONNECTION_INVALID;
  // The stack's send queue holds what it has not retired; the ring what it
  // has not taken yet: together at most the queue's depth.
  uint64_t i;
  if (sends_posted_ - qp_->sends_retired() >= std::max<uint32_t>(caps_.sq_depth, 1) || !send_ring_->Reserve(&i))
    return ND_NO_MORE_ENTRIES;
  const uint32_t slot = send_ring_->Slot(i);
  rc::SendWr& d = send_wr_[slot];
  d = w;
  rc::Sge* sges = &send_sge_[size_t{slot} * std::max<uint32_t>(caps_.max_send_sge, 1)];
  if ((w.flags & rc::kInline) && w.num_sge) {
    // One SGE over the gathered bytes (PostInitiator): copied into the slot.
    uint8_t* bytes = &send_inline_[size_t{slot} * caps_.max_inline];
    std::memcpy(bytes, reinterpret_cast<const void*>(w.sge[0].addr), w.sge[0].length);
    sges[0] = {reinterpret_cast<uint64_t>(bytes), w.sge[0].length, 0};
  } else {
    std::copy(w.sge, w.sge + w.num_sge, sges);
  }
  d.sge = sges;
  send_ring_->Publish();
  sends_posted_++;
  adapter_->Kick();
  return ND_SUCCESS;
}

HRESULT QueuePair::RingReceive(const rc::RecvWr& w) {
  absl::MutexLock pl(&post_mu_);
  uint64_t i;
  if (recvs_posted_ - qp_->recvs_taken() >= std::max<uint32_t>(caps_.rq_depth, 1) || !recv_ring_->Reserve(&i))
    return ND_NO_MORE_ENTRIES;
  const uint32_t slot = recv_ring_->Slot(i);
  rc::Sge* sges = &recv_sge_[size_t{slot} * std::max<uint32_t>(caps_.max_recv_sge, 1)];
  std::copy(w.sge, w.sge + w.num_sge, sges);
  recv_wr_[slot] = w;
  recv_wr_[slot].sge = sges;
  recv_ring_->Publish();
  recvs_posted_++;
  adapter_->Kick();
  return ND_SUCCESS;
}

size_t QueuePair::DrainPosts() {
  // Receives first: a receive posted before a Send that makes the peer
  // answer is in place before the answer can arrive.
  size_t n = 0;
  uint64_t i;
  while (recv_ring_->Peek(&i)) {
    // Cannot be refused: checked when queued (the QP has no SRQ, is never
    // reset, and its receive queue has room by the credit count).
    qp_->PostRecv(recv_wr_[recv_ring_->Slot(i)]);
    recv_ring_->Pop();
    n++;
  }
  while (send_ring_->Peek(&i)) {
    qp_->PostSend(send_wr_[send_ring_->Slot(i)]);  // likewise (RTS or Error, room, arguments)
    send_ring_->Pop();
    n++;
  }
  return n;
}

HRESULT QueuePair::Bind(VOID* ctx, IUnknown* mr, IUnknown* mw, const VOID* buf, SIZE_T len, ULONG flags) {
  auto* region = OursOf<MemoryRegion, IND2MemoryRegion>(mr, IID_IND2MemoryRegion, adapter_);
  if (!region) return ND_INVALID_PARAMETER_2;
  auto* window = OursOf<MemoryWindow, IND2MemoryWindow>(mw, IID_IND2MemoryWindow, adapter_);
  if (!window || !window->handle()) return ND_INVALID_PARAMETER_3;
  if (!buf) return ND_INVALID_PARAMETER_4;
  constexpr ULONG kAllowed =
      ND_OP_FLAG_SILENT_SUCCESS | ND_OP_FLAG_READ_FENCE | ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE;
  // The page asks for at least one of ALLOW_READ / ALLOW_WRITE; Windows
  // providers take neither (ndmemorytest's NdMRDeregister binds with flags 0
  // and expects success): a window no peer may use.
  if (flags & ~kAllowed) return ND_INVALID_PARAMETER_6;
  const auto addr = reinterpret_cast<uint64_t>(buf);
  rc::SendWr w;
  w.context = reinterpret_cast<uint64_t>(ctx);
  w.op = rc::WrOp::kBind;
  w.flags = flags & (rc::kSilentSuccess | rc::kReadFence);
  w.mw = window->handle();
  w.bind_addr = addr;
  w.bind_length = len;
  w.bind_access = ((flags & ND_OP_FLAG_ALLOW_READ) ? uint32_t{mem::kRemoteRead} : 0u) |
                  ((flags & ND_OP_FLAG_ALLOW_WRITE) ? uint32_t{mem::kRemoteWrite} : 0u);
  // Posting rings: behind everything queued before it (drained now, under the
  // engine lock), straight into the stack, counted as any request.
  absl::MutexLockMaybe pl(rings_ ? &post_mu_ : nullptr);
  roce::engine::EngineLock l(&adapter_->eng().mu());
  if (rings_) DrainPosts();
  if (!region->registered()) return ND_INVALID_PARAMETER_2;
  // The region must allow what the window grants (ALLOW_WRITE needs a region
  // with local write) and hold the whole window: ND_ACCESS_VIOLATION, and
  // nothing is posted.
  if ((flags & ND_OP_FLAG_ALLOW_WRITE) && !(region->flags() & ND_MR_FLAG_ALLOW_LOCAL_WRITE)) return ND_ACCESS_VIOLATION;
  if (addr < region->addr() || len > region->length() || addr - region->addr() > region->length() - len)
    return ND_ACCESS_VIOLATION;
  w.mr = region->info().handle;
  const rc::QpState st = qp_->state();
  if (st != rc::QpState::kRts && st != rc::QpState::kError) return ND_CONNECTION_INVALID;
  // The window's token is valid as soon as Bind returns (ND2): allocated now.
  const uint32_t old_token = window->token();
  w.bind_token = window->NewToken();
  const HRESULT h = PostHresult(qp_->PostSend(w));
  if (h == ND_SUCCESS && rings_) sends_posted_++;
  if (h != ND_SUCCESS) {
    // Not posted: the window keeps the token it had.
    adapter_->RemoveWindow(w.bind_token, window);
    window->RestoreToken(old_token);
    return h;
  }
  // Flushed at once on a queue pair in error: the window stays as it was.
  if (st == rc::QpState::kRts) {
    window->SetBound(region->info().handle);
    // Nothing before it in the initiator queue: bound now, so the token
    // works as soon as Bind returns (nd2-reference.md), whoever the peer
    // learns it from. The request still runs in its turn (binding again to
    // the same range is a no-op) and completes as usual.
    if (qp_->outstanding_sends() == 1)
      adapter_->eng().rc().memory().BindWindow(w.mw, w.bind_token, w.mr, w.bind_addr, w.bind_length, w.bind_access);
  }
  return h;
}

HRESULT QueuePair::Invalidate(VOID* ctx, IUnknown* mw, ULONG flags) {
  auto* window = OursOf<MemoryWindow, IND2MemoryWindow>(mw, IID_IND2MemoryWindow, adapter_);
  if (!window || !window->handle()) return ND_INVALID_PARAMETER_2;
  if (flags & ~(ND_OP_FLAG_SILENT_SUCCESS | ND_OP_FLAG_READ_FENCE)) return ND_INVALID_PARAMETER_3;
  rc::SendWr w;
  w.context = reinterpret_cast<uint64_t>(ctx);
  w.op = rc::WrOp::kInvalidate;
  w.flags = flags & (rc::kSilentSuccess | rc::kReadFence);
  absl::MutexLockMaybe pl(rings_ ? &post_mu_ : nullptr);
  roce::engine::EngineLock l(&adapter_->eng().mu());
  if (rings_) DrainPosts();
  const rc::QpState st = qp_->state();
  if (st != rc::QpState::kRts && st != rc::QpState::kError) return ND_CONNECTION_INVALID;
  // A window that is not bound (in posting order): the request is posted on
  // a handle the stack rejects, so it completes in its turn with
  // ND_INVALID_DEVICE_REQUEST (status.cc) and, as any failed request, takes
  // the connection down.
  const bool bound = window->bound();
  w.mw = bound ? window->handle() : 0;
  const HRESULT h = PostHresult(qp_->PostSend(w));
  if (h == ND_SUCCESS && rings_) sends_posted_++;
  if (h == ND_SUCCESS && st == rc::QpState::kRts) window->SetUnbound();
  return h;
}

}  // namespace roce::nd2
