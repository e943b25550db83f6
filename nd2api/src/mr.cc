// IND2MemoryRegion and IND2MemoryWindow over the stack's memory table: the
// tokens are the keys on the wire (local token = L_Key, remote token = R_Key).
#include "nd2api/src/nd2.h"

namespace roce::nd2 {

MemoryRegion::MemoryRegion(Adapter* a, std::shared_ptr<OverlappedFile> f) : adapter_(a), ov_(std::move(f)) {
  adapter_->AddRef();
}

MemoryRegion::~MemoryRegion() {
  ov_.CancelAll();
  if (registered_) {
    absl::MutexLock l(&adapter_->eng().mu());
    adapter_->eng().rc().memory().DeregisterRegion(info_.handle);
  }
  adapter_->Release();
}

HRESULT MemoryRegion::QueryInterface(REFIID riid, void** ppv) {
  if (!ppv) return E_POINTER;
  if (riid == IID_IUnknown || riid == IID_IND2Overlapped || riid == IID_IND2MemoryRegion) {
    *ppv = static_cast<IND2MemoryRegion*>(this);
    AddRef();
    return S_OK;
  }
  *ppv = nullptr;
  return E_NOINTERFACE;
}

HRESULT MemoryRegion::Register(const VOID* buf, SIZE_T len, ULONG flags, OVERLAPPED* ov) {
  if (!ov) return ND_INVALID_PARAMETER_4;
  constexpr ULONG kKnown = ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ |
                           ND_MR_FLAG_ALLOW_REMOTE_WRITE | ND_MR_FLAG_RDMA_READ_SINK | ND_MR_FLAG_DO_NOT_SECURE_VM;
  if (flags & ~kKnown) return ND_INVALID_PARAMETER_3;
  if (!buf) return ND_INVALID_PARAMETER;
  if (len == 0) return ND_INVALID_BUFFER_SIZE;
  if (len > Limits::kMaxRegistration) return ND_INVALID_PARAMETER;
  uint32_t access = 0;
  if (flags & ND_MR_FLAG_ALLOW_LOCAL_WRITE) access |= mem::kLocalWrite;
  if ((flags & ND_MR_FLAG_ALLOW_REMOTE_WRITE) == ND_MR_FLAG_ALLOW_REMOTE_WRITE)
    access |= mem::kRemoteWrite | mem::kLocalWrite;
  if (flags & ND_MR_FLAG_ALLOW_REMOTE_READ) access |= mem::kRemoteRead;
  if (flags & ND_MR_FLAG_RDMA_READ_SINK) access |= mem::kReadSink;
  mem::Result r;
  {
    absl::MutexLock l(&adapter_->eng().mu());
    if (registered_) return ND_INVALID_DEVICE_STATE;
    r = adapter_->eng().rc().memory().RegisterRegion(reinterpret_cast<uint64_t>(buf), len, access, &info_);
    registered_ = r == mem::Result::kOk;
  }
  // Pended and completed through the overlapped, as real providers do
  // (clients in completion-port mode wait for the packet).
  const HRESULT h = ov_.Pend(ov);
  ov_.Complete(ov, r == mem::Result::kOk ? ND_SUCCESS : ND_INSUFFICIENT_RESOURCES);
  return h;
}

HRESULT MemoryRegion::Deregister(OVERLAPPED* ov) {
  if (!ov) return ND_INVALID_PARAMETER_1;
  mem::Result r;
  {
    absl::MutexLock l(&adapter_->eng().mu());
    if (!registered_) return ND_INVALID_DEVICE_STATE;
    r = adapter_->eng().rc().memory().DeregisterRegion(info_.handle);
    if (r == mem::Result::kOk) registered_ = false;
  }
  if (r == mem::Result::kBusy) return ND_DEVICE_BUSY;  // a window is bound to it
  const HRESULT h = ov_.Pend(ov);
  ov_.Complete(ov, r == mem::Result::kOk ? ND_SUCCESS : ND_UNSUCCESSFUL);
  return h;
}

MemoryWindow::MemoryWindow(Adapter* a) : adapter_(a) {
  adapter_->AddRef();
  absl::MutexLock l(&adapter_->eng().mu());
  if (adapter_->eng().rc().memory().CreateWindow(&handle_) != mem::Result::kOk) handle_ = 0;
}

MemoryWindow::~MemoryWindow() {
  {
    absl::MutexLock l(&adapter_->eng().mu());
    adapter_->RemoveWindow(token_, this);
    if (handle_) adapter_->eng().rc().memory().DestroyWindow(handle_);
  }
  adapter_->Release();
}

HRESULT MemoryWindow::QueryInterface(REFIID riid, void** ppv) {
  if (!ppv) return E_POINTER;
  if (riid == IID_IUnknown || riid == IID_IND2MemoryWindow) {
    *ppv = static_cast<IND2MemoryWindow*>(this);
    AddRef();
    return S_OK;
  }
  *ppv = nullptr;
  return E_NOINTERFACE;
}

uint32_t MemoryWindow::NewToken() {
  adapter_->RemoveWindow(token_, this);
  token_ = adapter_->eng().rc().memory().AllocateWindowToken(handle_);
  adapter_->AddWindow(token_, this);
  return token_;
}

}  // namespace roce::nd2
