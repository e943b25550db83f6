// SPDX-License-Identifier: MIT
// IND2MemoryRegion and IND2MemoryWindow over the stack's memory table: the
// tokens are the keys on the wire (local token = L_Key, remote token = R_Key).
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "nd2api/src/nd2.h"

namespace roce::nd2 {

namespace {
// Linux's PROCMAP_QUERY (6.11+, linux/fs.h; the headers of older systems lack
// it): asks /proc/self/maps for the mapping that covers one address, in
// O(log n), where reading the whole file costs ~0.4 ms per thousand mappings
// (a DPDK process has over a thousand).
struct ProcmapQuery {
  uint64_t size;
  uint64_t query_flags;
  uint64_t query_addr;
  uint64_t vma_start;
  uint64_t vma_end;
  uint64_t vma_flags;
  uint64_t vma_page_size;
  uint64_t vma_offset;
  uint64_t inode;
  uint32_t dev_major;
  uint32_t dev_minor;
  uint32_t vma_name_size;
  uint32_t build_id_size;
  uint64_t vma_name_addr;
  uint64_t build_id_addr;
};
constexpr unsigned long kProcmapQuery = _IOWR('f', 17, ProcmapQuery);
constexpr uint64_t kVmaReadable = 0x1, kVmaWritable = 0x2;

int MapsFd() {
  static const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  return fd;
}

// 1: the range is mapped with the rights; 0: it is not; -1: PROCMAP_QUERY is
// not available.
int RangeMappedByQuery(uint64_t addr, uint64_t end, bool write) {
  const int fd = MapsFd();
  if (fd < 0) return -1;
  for (uint64_t cur = addr; cur < end;) {
    ProcmapQuery q{};
    q.size = sizeof q;
    q.query_addr = cur;
    if (ioctl(fd, kProcmapQuery, &q) != 0) {
      if (errno == ENOENT) return 0;  // nothing mapped at cur
      return -1;                      // ENOTTY / EINVAL: an older kernel
    }
    if (q.vma_start > cur || q.vma_end <= cur) return 0;
    if (!(q.vma_flags & kVmaReadable) || (write && !(q.vma_flags & kVmaWritable))) return 0;
    cur = q.vma_end;
  }
  return 1;
}

// True if [addr, addr + len) is mapped, readable and (if `write`) writable
// in this process: the stack reads and writes registered memory directly, so
// a registration of memory that is not there (or read-only memory for
// writing) would fault later, on the engine's thread. Without PROCMAP_QUERY,
// /proc/self/maps is read (the mappings in address order).
bool RangeMapped(uint64_t addr, uint64_t len, bool write) {
  const uint64_t end = addr + len;
  const int q = RangeMappedByQuery(addr, end, write);
  if (q >= 0) return q == 1;
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;  // cannot tell: the access checks of the wire still apply
  std::string text;
  char buf[16384];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  uint64_t cur = addr;
  size_t pos = 0;
  while (pos < text.size() && cur < end) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    const char* line = text.c_str() + pos;
    char* p = nullptr;
    const uint64_t lo = std::strtoull(line, &p, 16);
    const uint64_t hi = (p && *p == '-') ? std::strtoull(p + 1, &p, 16) : 0;
    pos = eol + 1;
    if (!p || *p != ' ' || hi <= cur) continue;
    if (lo > cur) return false;  // a hole
    if (p[1] != 'r' || (write && p[2] != 'w')) return false;
    cur = hi;
  }
  return cur >= end;
}
}  // namespace

MemoryRegion::MemoryRegion(Adapter* a, std::shared_ptr<OverlappedFile> f) : adapter_(a), ov_(std::move(f)) {
  adapter_->AddRef();
}

MemoryRegion::~MemoryRegion() {
  ov_.CancelAll();
  {
    roce::engine::EngineLock l(&adapter_->eng().mu());
    if (registered_) {
      // Released without Deregister: windows still bound to the region stop
      // granting access now (the application may free the buffer next).
      auto& mem = adapter_->eng().rc().memory();
      adapter_->ForEachWindow([&](MemoryWindow* w) {
        if (w->bound() && w->bound_region() == info_.handle) {
          mem.InvalidateWindow(w->handle());
          w->SetUnbound();
        }
      });
      mem.DeregisterRegion(info_.handle);
    }
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
  const auto addr = reinterpret_cast<uint64_t>(buf);
  if (!buf && len == 0) return ND_INVALID_PARAMETER;  // nd2-reference.md: Register(NULL, 0)
  if (len == 0) return ND_INVALID_BUFFER_SIZE;         // Register(buf, 0)
  if (len > Limits::kMaxRegistration) return ND_INVALID_PARAMETER;  // above MaxRegistrationSize
  uint32_t access = 0;
  if (flags & ND_MR_FLAG_ALLOW_LOCAL_WRITE) access |= mem::kLocalWrite;
  if ((flags & ND_MR_FLAG_ALLOW_REMOTE_WRITE) == ND_MR_FLAG_ALLOW_REMOTE_WRITE)
    access |= mem::kRemoteWrite | mem::kLocalWrite;
  if (flags & ND_MR_FLAG_ALLOW_REMOTE_READ) access |= mem::kRemoteRead;
  if (flags & ND_MR_FLAG_RDMA_READ_SINK) access |= mem::kReadSink;
  // The buffer must be memory of this process (readable; writable if
  // anything may write it): otherwise ND_ACCESS_VIOLATION, "the specified
  // buffer or buffer size was not valid".
  if (!buf || addr + len < addr ||
      !RangeMapped(addr, len, (access & (mem::kLocalWrite | mem::kRemoteWrite | mem::kReadSink)) != 0))
    return ND_ACCESS_VIOLATION;
  {
    roce::engine::EngineLock l(&adapter_->eng().mu());
    if (registered_) return ND_INVALID_DEVICE_STATE;  // one buffer per region: Deregister first
    const mem::Result r = adapter_->eng().rc().memory().RegisterRegion(addr, len, access, &info_);
    if (r == mem::Result::kNoResources) return ND_INSUFFICIENT_RESOURCES;
    if (r != mem::Result::kOk) return ND_INVALID_PARAMETER;
    registered_ = true;
    addr_ = addr;
    length_ = len;
    flags_ = flags;
  }
  // Pended and completed through the overlapped, as real providers do
  // (clients in completion-port mode wait for the packet).
  const HRESULT h = ov_.Pend(ov);
  ov_.Complete(ov, ND_SUCCESS);
  return h;
}

HRESULT MemoryRegion::Deregister(OVERLAPPED* ov) {
  if (!ov) return ND_INVALID_PARAMETER_1;
  {
    roce::engine::EngineLock l(&adapter_->eng().mu());
    if (!registered_) return ND_INVALID_DEVICE_STATE;
    const mem::Result r = adapter_->eng().rc().memory().DeregisterRegion(info_.handle);
    if (r == mem::Result::kBusy) return ND_DEVICE_BUSY;  // a window is bound to it
    if (r != mem::Result::kOk) return ND_UNSUCCESSFUL;
    registered_ = false;
  }
  const HRESULT h = ov_.Pend(ov);
  ov_.Complete(ov, ND_SUCCESS);
  return h;
}

MemoryWindow::MemoryWindow(Adapter* a) : adapter_(a) {
  adapter_->AddRef();
  roce::engine::EngineLock l(&adapter_->eng().mu());
  if (adapter_->eng().rc().memory().CreateWindow(&handle_) != mem::Result::kOk) handle_ = 0;
}

MemoryWindow::~MemoryWindow() {
  {
    roce::engine::EngineLock l(&adapter_->eng().mu());
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

void MemoryWindow::RestoreToken(uint32_t token) {
  token_ = token;
  if (token_) adapter_->AddWindow(token_, this);
}

uint32_t MemoryWindow::NewToken() {
  adapter_->RemoveWindow(token_, this);
  token_ = adapter_->eng().rc().memory().AllocateWindowToken(handle_);
  adapter_->AddWindow(token_, this);
  return token_;
}

}  // namespace roce::nd2
