// SPDX-License-Identifier: MIT
#include <algorithm>
#include <cstring>
#include <new>

#include "nd2api/src/nd2.h"

namespace roce::nd2 {

Adapter::Adapter(const AdapterConfig& cfg, host::StackHost host, uint64_t id)
    : cfg_(cfg), host_(std::move(host)), id_(id) {
  roce::engine::EngineLock l(&eng().mu());
  eng().cm().on_event = [this](cm::ConnId c, cm::Event e) { OnCmEvent(c, e); };
  eng().cm().on_request = [this](cm::ListenerId lid) { OnCmRequest(lid); };
  eng().on_poll = [this](uint64_t now) { OnPoll(now); };
  if (cfg_.progress_thread) eng().Start().IgnoreError();
}

Adapter::~Adapter() {
  eng().Stop();
  roce::engine::EngineLock l(&eng().mu());
  eng().cm().on_event = nullptr;
  eng().cm().on_request = nullptr;
  eng().on_poll = nullptr;
}

void Adapter::RemoveResolving(Connector* c) {
  resolving_.erase(std::remove(resolving_.begin(), resolving_.end(), c), resolving_.end());
}

void Adapter::OnPoll(uint64_t now) {
  if (resolving_.empty()) return;
  // AdvanceResolve may complete an overlapped request but never adds or
  // removes connectors itself: the list is ours to prune.
  std::vector<Connector*> still;
  for (Connector* c : resolving_)
    if (!c->AdvanceResolve(now)) still.push_back(c);
  resolving_.swap(still);
}

HRESULT Adapter::QueryInterface(REFIID riid, void** ppv) {
  if (!ppv) return E_POINTER;
  if (riid == IID_IUnknown || riid == IID_IND2Adapter) {
    *ppv = static_cast<IND2Adapter*>(this);
    AddRef();
    return S_OK;
  }
  if (riid == IID_IND2AdapterDiagnostics) return CreateAdapterDiagnostics(this, ppv);  // our extension
  *ppv = nullptr;
  return E_NOINTERFACE;
}

std::vector<wire::IpAddr> Adapter::addrs() const {
  std::vector<wire::IpAddr> v;
  for (const port::IpPrefix& a : host_.eng->port().Addrs()) v.push_back(a.addr);
  return v;
}

bool Adapter::HasAddress(const wire::IpAddr& ip) const {
  for (const auto& a : addrs())
    if (a == ip) return true;
  return false;
}

void Adapter::ReleaseConnections() {
  roce::engine::EngineLock l(&eng().mu());
  eng().cm().ReleaseAll(eng().NowNs());
}

size_t Adapter::Progress() {
  if (cfg_.progress_thread) return 0;
  return eng().Poll();
}

std::shared_ptr<OverlappedFile> Adapter::FileOf(HANDLE h) { return LookupHandleAs<OverlappedFile>(h); }

void Adapter::RemoveWindow(uint32_t token, MemoryWindow* w) {
  auto it = windows_.find(token);
  if (it != windows_.end() && it->second == w) windows_.erase(it);
}

MemoryWindow* Adapter::WindowByToken(uint32_t token) {
  auto it = windows_.find(token);
  return it == windows_.end() ? nullptr : it->second;
}

void Adapter::OnCmEvent(cm::ConnId id, cm::Event e) {
  auto it = connectors_.find(id);
  if (it != connectors_.end()) it->second->OnEvent(e);
}

void Adapter::OnCmRequest(cm::ListenerId lid) {
  auto it = listeners_.find(lid);
  if (it != listeners_.end()) it->second->OnRequest();
}

HRESULT Adapter::CreateOverlappedFile(HANDLE* ph) {
  if (!ph) return ND_INVALID_PARAMETER_1;
  try {
    *ph = RegisterHandle(std::make_shared<OverlappedFile>());
  } catch (const std::bad_alloc&) {
    *ph = nullptr;
  }
  // RegisterHandle fails only when memory (or the handle table) runs out.
  return *ph ? ND_SUCCESS : ND_NO_MEMORY;
}

HRESULT Adapter::Query(ND2_ADAPTER_INFO* info, ULONG* cb) {
  if (!cb) return ND_INVALID_PARAMETER_2;
  if (!info || *cb < sizeof(ND2_ADAPTER_INFO)) {
    *cb = sizeof(ND2_ADAPTER_INFO);
    return ND_BUFFER_OVERFLOW;
  }
  if (info->InfoVersion != ND_VERSION_2 && info->InfoVersion != ND_VERSION_1) return ND_INVALID_PARAMETER_1;
  std::memset(reinterpret_cast<uint8_t*>(info) + sizeof(info->InfoVersion), 0,
              sizeof(ND2_ADAPTER_INFO) - sizeof(info->InfoVersion));
  info->VendorId = 0;
  info->DeviceId = 0;
  info->AdapterId = id_;
  info->MaxRegistrationSize = Limits::kMaxRegistration;
  info->MaxWindowSize = Limits::kMaxRegistration;
  info->MaxInitiatorSge = Limits::kMaxSge;
  info->MaxReceiveSge = Limits::kMaxSge;
  info->MaxReadSge = Limits::kMaxSge;
  info->MaxTransferLength = Limits::kMaxTransfer;
  info->MaxInlineDataSize = Limits::kMaxInline;
  info->MaxInboundReadLimit = Limits::kMaxReadLimit;
  info->MaxOutboundReadLimit = Limits::kMaxReadLimit;
  info->MaxReceiveQueueDepth = Limits::kMaxQueueDepth;
  info->MaxInitiatorQueueDepth = Limits::kMaxQueueDepth;
  info->MaxSharedReceiveQueueDepth = Limits::kMaxSrqDepth;
  info->MaxCompletionQueueDepth = Limits::kMaxCqDepth;
  info->InlineRequestThreshold = 256;   // below this, INLINE pays (one copy, no gather)
  info->LargeRequestThreshold = 65536;  // above this, a Write beats a Send with copies
  info->MaxCallerData = Limits::kMaxCallerData;
  info->MaxCalleeData = Limits::kMaxCalleeData;
  info->AdapterFlags = ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED | ND_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED |
                       ND_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED;
  *cb = sizeof(ND2_ADAPTER_INFO);
  return ND_SUCCESS;
}

HRESULT Adapter::QueryAddressList(SOCKET_ADDRESS_LIST* list, ULONG* cb) { return FillAddressList(addrs(), list, cb); }

HRESULT Adapter::CreateCompletionQueue(REFIID iid, HANDLE file, ULONG depth, USHORT group, KAFFINITY affinity,
                                       VOID** pp) {
  (void)group;
  (void)affinity;
  if (!pp) return ND_INVALID_PARAMETER_6;
  *pp = nullptr;
  if (iid != IID_IND2CompletionQueue && iid != IID_IUnknown) return E_NOINTERFACE;
  auto f = FileOf(file);
  if (!f) return ND_INVALID_HANDLE;
  if (depth == 0 || depth > Limits::kMaxCqDepth) return ND_INVALID_PARAMETER_3;
  CompletionQueue* cq;
  try {
    cq = new CompletionQueue(this, f, depth);
  } catch (const std::bad_alloc&) {
    return ND_NO_MEMORY;
  }
  const HRESULT h = cq->QueryInterface(iid, pp);
  cq->Release();
  return h;
}

HRESULT Adapter::CreateMemoryRegion(REFIID iid, HANDLE file, VOID** pp) {
  if (!pp) return ND_INVALID_PARAMETER_3;
  *pp = nullptr;
  if (iid != IID_IND2MemoryRegion && iid != IID_IUnknown) return E_NOINTERFACE;
  auto f = FileOf(file);
  if (!f) return ND_INVALID_HANDLE;
  MemoryRegion* mr;
  try {
    mr = new MemoryRegion(this, f);
  } catch (const std::bad_alloc&) {
    return ND_NO_MEMORY;
  }
  const HRESULT h = mr->QueryInterface(iid, pp);
  mr->Release();
  return h;
}

HRESULT Adapter::CreateMemoryWindow(REFIID iid, VOID** pp) {
  if (!pp) return ND_INVALID_PARAMETER_2;
  *pp = nullptr;
  if (iid != IID_IND2MemoryWindow && iid != IID_IUnknown) return E_NOINTERFACE;
  MemoryWindow* mw;
  try {
    mw = new MemoryWindow(this);
  } catch (const std::bad_alloc&) {
    return ND_INSUFFICIENT_RESOURCES;
  }
  if (!mw->handle()) {
    mw->Release();
    return ND_INSUFFICIENT_RESOURCES;
  }
  const HRESULT h = mw->QueryInterface(iid, pp);
  mw->Release();
  return h;
}

HRESULT Adapter::CreateSharedReceiveQueue(REFIID iid, HANDLE file, ULONG depth, ULONG max_sge, ULONG threshold,
                                          USHORT group, KAFFINITY affinity, VOID** pp) {
  (void)group;
  (void)affinity;
  if (!pp) return ND_INVALID_PARAMETER_8;
  *pp = nullptr;
  if (iid != IID_IND2SharedReceiveQueue && iid != IID_IUnknown) return E_NOINTERFACE;
  auto f = FileOf(file);
  if (!f) return ND_INVALID_HANDLE;
  if (depth == 0 || depth > Limits::kMaxSrqDepth) return ND_INVALID_PARAMETER_3;
  if (max_sge == 0 || max_sge > Limits::kMaxSge) return ND_INVALID_PARAMETER_4;
  if (threshold > depth) return ND_INVALID_PARAMETER_5;
  SharedReceiveQueue* srq;
  try {
    srq = new SharedReceiveQueue(this, f, depth, Limits::RoundSge(max_sge), threshold);
  } catch (const std::bad_alloc&) {
    return ND_NO_MEMORY;
  }
  const HRESULT h = srq->QueryInterface(iid, pp);
  srq->Release();
  return h;
}

namespace {
// The object behind an IUnknown* of ours, of this adapter (null otherwise).
template <typename T, typename I>
T* Ours(IUnknown* u, REFIID iid, Adapter* a) {
  if (!u) return nullptr;
  I* i = nullptr;
  if (u->QueryInterface(iid, reinterpret_cast<void**>(&i)) != S_OK || !i) return nullptr;
  T* t = dynamic_cast<T*>(i);
  i->Release();
  if (!t || t->adapter() != a) return nullptr;
  return t;
}
}  // namespace

HRESULT Adapter::CreateQueuePair(REFIID iid, IUnknown* rcq, IUnknown* icq, VOID* ctx, ULONG rq_depth,
                                 ULONG iq_depth, ULONG max_rsge, ULONG max_isge, ULONG inline_size, VOID** pp) {
  if (!pp) return ND_INVALID_PARAMETER_10;
  *pp = nullptr;
  if (iid != IID_IND2QueuePair && iid != IID_IUnknown) return E_NOINTERFACE;
  auto* r = Ours<CompletionQueue, IND2CompletionQueue>(rcq, IID_IND2CompletionQueue, this);
  if (!r) return ND_INVALID_PARAMETER_2;
  auto* i = Ours<CompletionQueue, IND2CompletionQueue>(icq, IID_IND2CompletionQueue, this);
  if (!i) return ND_INVALID_PARAMETER_3;
  if (rq_depth == 0 || rq_depth > Limits::kMaxQueueDepth) return ND_INVALID_PARAMETER_5;
  if (iq_depth == 0 || iq_depth > Limits::kMaxQueueDepth) return ND_INVALID_PARAMETER_6;
  if (max_rsge == 0 || max_rsge > Limits::kMaxSge) return ND_INVALID_PARAMETER_7;
  if (max_isge == 0 || max_isge > Limits::kMaxSge) return ND_INVALID_PARAMETER_8;
  if (inline_size > Limits::kMaxInline) return ND_INVALID_PARAMETER_9;
  QueuePair* qp;
  try {
    qp = new QueuePair(this, r, i, nullptr, ctx);
  } catch (const std::bad_alloc&) {
    return ND_INSUFFICIENT_RESOURCES;
  }
  rc::QpCaps caps;
  caps.sq_depth = iq_depth;
  caps.rq_depth = rq_depth;
  caps.max_send_sge = Limits::RoundSge(max_isge);
  caps.max_recv_sge = Limits::RoundSge(max_rsge);
  caps.max_inline = inline_size;
  HRESULT h = qp->Init(caps);
  if (SUCCEEDED(h)) h = qp->QueryInterface(iid, pp);
  qp->Release();
  return h;
}

HRESULT Adapter::CreateQueuePairWithSrq(REFIID iid, IUnknown* rcq, IUnknown* icq, IUnknown* srq, VOID* ctx,
                                        ULONG iq_depth, ULONG max_isge, ULONG inline_size, VOID** pp) {
  if (!pp) return ND_INVALID_PARAMETER_9;
  *pp = nullptr;
  if (iid != IID_IND2QueuePair && iid != IID_IUnknown) return E_NOINTERFACE;
  auto* r = Ours<CompletionQueue, IND2CompletionQueue>(rcq, IID_IND2CompletionQueue, this);
  if (!r) return ND_INVALID_PARAMETER_2;
  auto* i = Ours<CompletionQueue, IND2CompletionQueue>(icq, IID_IND2CompletionQueue, this);
  if (!i) return ND_INVALID_PARAMETER_3;
  auto* s = Ours<SharedReceiveQueue, IND2SharedReceiveQueue>(srq, IID_IND2SharedReceiveQueue, this);
  if (!s) return ND_INVALID_PARAMETER_4;
  if (iq_depth == 0 || iq_depth > Limits::kMaxQueueDepth) return ND_INVALID_PARAMETER_6;
  if (max_isge == 0 || max_isge > Limits::kMaxSge) return ND_INVALID_PARAMETER_7;
  if (inline_size > Limits::kMaxInline) return ND_INVALID_PARAMETER_8;
  QueuePair* qp;
  try {
    qp = new QueuePair(this, r, i, s, ctx);
  } catch (const std::bad_alloc&) {
    return ND_INSUFFICIENT_RESOURCES;
  }
  rc::QpCaps caps;
  caps.sq_depth = iq_depth;
  caps.max_send_sge = Limits::RoundSge(max_isge);
  caps.max_recv_sge = s->max_sge();
  caps.max_inline = inline_size;
  HRESULT h = qp->Init(caps);
  if (SUCCEEDED(h)) h = qp->QueryInterface(iid, pp);
  qp->Release();
  return h;
}

HRESULT Adapter::CreateConnector(REFIID iid, HANDLE file, VOID** pp) {
  if (!pp) return ND_INVALID_PARAMETER_3;
  *pp = nullptr;
  if (iid != IID_IND2Connector && iid != IID_IUnknown) return E_NOINTERFACE;
  auto f = FileOf(file);
  if (!f) return ND_INVALID_HANDLE;
  Connector* c;
  try {
    c = new Connector(this, f);
  } catch (const std::bad_alloc&) {
    return ND_NO_MEMORY;
  }
  const HRESULT h = c->QueryInterface(iid, pp);
  c->Release();
  return h;
}

HRESULT Adapter::CreateListener(REFIID iid, HANDLE file, VOID** pp) {
  if (!pp) return ND_INVALID_PARAMETER_3;
  *pp = nullptr;
  if (iid != IID_IND2Listener && iid != IID_IUnknown) return E_NOINTERFACE;
  auto f = FileOf(file);
  if (!f) return ND_INVALID_HANDLE;
  Listener* l;
  try {
    l = new Listener(this, f);
  } catch (const std::bad_alloc&) {
    return ND_NO_MEMORY;
  }
  const HRESULT h = l->QueryInterface(iid, pp);
  l->Release();
  return h;
}

}  // namespace roce::nd2
