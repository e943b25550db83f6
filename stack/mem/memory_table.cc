// SPDX-License-Identifier: MIT
#include "stack/mem/memory_table.h"

#include <algorithm>

namespace roce::mem {

const char* ResultName(Result r) {
  switch (r) {
    case Result::kOk: return "ok";
    case Result::kBadToken: return "bad-token";
    case Result::kOutOfBounds: return "out-of-bounds";
    case Result::kNoAccess: return "no-access";
    case Result::kInvalidParameter: return "invalid-parameter";
    case Result::kInvalidBufferSize: return "invalid-buffer-size";
    case Result::kNoResources: return "no-resources";
    case Result::kBusy: return "busy";
    case Result::kInvalidHandle: return "invalid-handle";
  }
  return "?";
}

MemoryTable::MemoryTable(uint64_t seed, uint32_t max_objects)
    : rng_(seed ? seed : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()) {
  max_objects = std::clamp<uint32_t>(max_objects, 2, kMaxObjects);
  slots_.resize(max_objects);
  // Slot 0 is never used, so token 0 (a common "unset" value) is never valid.
  free_.reserve(max_objects - 1);
  for (uint32_t i = 1; i < max_objects; i++) {
    free_.push_back(i);
    slots_[i].key = slots_[i].remote_key = static_cast<uint16_t>(rng_() & kKeyMask);
  }
  std::shuffle(free_.begin(), free_.end(), rng_);
}

uint16_t MemoryTable::NextKey(uint16_t key) {
  return static_cast<uint16_t>((key + 1 + rng_() % 8) & kKeyMask);
}

bool MemoryTable::Allocate(uint32_t* index) {
  if (free_.empty()) return false;
  // Take a random free slot (swap-remove), so indices are not predictable.
  const size_t i = rng_() % free_.size();
  *index = free_[i];
  free_[i] = free_.back();
  free_.pop_back();
  return true;
}

void MemoryTable::Release(uint32_t index) {
  Slot& s = slots_[index];
  const uint16_t old_key = s.key, old_remote = s.remote_key;
  s = Slot{};
  // Keep the old keys: the next occupant continues the slot's key sequence.
  s.key = old_key;
  s.remote_key = old_remote;
  free_.push_back(index);
}

bool MemoryTable::InRange(const Slot& s, uint64_t addr, uint64_t len) {
  return addr >= s.addr && len <= s.length && addr - s.addr <= s.length - len;
}

Result MemoryTable::RegisterRegion(uint64_t addr, uint64_t length, uint32_t access,
                                   RegionInfo* out) {
  if (addr == 0 && length == 0) return Result::kInvalidParameter;
  if (length == 0) return Result::kInvalidBufferSize;
  if (addr + length < addr) return Result::kInvalidParameter;  // wraps the address space
  if (access & ~uint32_t{kLocalWrite | kRemoteRead | kRemoteWrite | kReadSink})
    return Result::kInvalidParameter;
  if ((access & kRemoteWrite) && !(access & kLocalWrite)) return Result::kInvalidParameter;
  uint32_t idx;
  if (!Allocate(&idx)) return Result::kNoResources;
  Slot& s = slots_[idx];
  // Both keys continue the slot's sequence (remote_key is its newest key),
  // so neither repeats any key the slot issued recently, of either kind.
  const uint16_t k1 = NextKey(s.remote_key);
  const uint16_t k2 = NextKey(k1);
  s.kind = Kind::kRegion;
  s.valid = true;
  s.key = k1;
  s.remote_key = k2;
  s.addr = addr;
  s.length = length;
  s.access = access;
  s.windows = 0;
  live_regions_++;
  out->handle = idx;
  out->local_token = (idx << kKeyBits) | k1;
  out->remote_token = (idx << kKeyBits) | k2;
  return Result::kOk;
}

Result MemoryTable::DeregisterRegion(uint32_t handle) {
  if (handle == 0 || handle >= slots_.size() || slots_[handle].kind != Kind::kRegion)
    return Result::kInvalidHandle;
  if (slots_[handle].windows != 0) return Result::kBusy;
  const uint64_t addr = slots_[handle].addr, length = slots_[handle].length;
  Release(handle);
  live_regions_--;
  if (on_deregister) on_deregister(addr, length);
  return Result::kOk;
}

Result MemoryTable::CreateWindow(uint32_t* handle) {
  uint32_t idx;
  if (!Allocate(&idx)) return Result::kNoResources;
  Slot& s = slots_[idx];
  s.kind = Kind::kWindow;
  s.valid = false;
  // Unbound (no key is valid); WindowToken reports a fresh key of the
  // sequence until a token is allocated.
  s.remote_key = NextKey(s.remote_key);
  s.key = s.remote_key;
  live_windows_++;
  *handle = idx;
  return Result::kOk;
}

Result MemoryTable::DestroyWindow(uint32_t handle) {
  if (handle == 0 || handle >= slots_.size() || slots_[handle].kind != Kind::kWindow)
    return Result::kInvalidHandle;
  InvalidateWindow(handle);
  Release(handle);
  live_windows_--;
  return Result::kOk;
}

uint32_t MemoryTable::AllocateWindowToken(uint32_t window) {
  if (window == 0 || window >= slots_.size() || slots_[window].kind != Kind::kWindow) return 0;
  Slot& s = slots_[window];
  // remote_key holds the last key handed out; the bound key (s.key) keeps
  // working until the bind that activates the new one executes.
  s.remote_key = NextKey(s.remote_key);
  return (window << kKeyBits) | s.remote_key;
}

uint32_t MemoryTable::WindowToken(uint32_t window) const {
  if (window == 0 || window >= slots_.size() || slots_[window].kind != Kind::kWindow) return 0;
  const Slot& s = slots_[window];
  return (window << kKeyBits) | (s.valid ? s.key : s.remote_key);
}

Result MemoryTable::BindWindow(uint32_t window, uint32_t token, uint32_t region, uint64_t addr,
                               uint64_t length, uint32_t access) {
  if (window == 0 || window >= slots_.size() || slots_[window].kind != Kind::kWindow ||
      TokenIndex(token) != window)
    return Result::kInvalidHandle;
  if (region == 0 || region >= slots_.size() || slots_[region].kind != Kind::kRegion)
    return Result::kInvalidHandle;
  if (access & ~uint32_t{kRemoteRead | kRemoteWrite}) return Result::kInvalidParameter;
  const Slot& r = slots_[region];
  if (!InRange(r, addr, length)) return Result::kOutOfBounds;
  if ((access & kRemoteWrite) && !(r.access & kLocalWrite)) return Result::kNoAccess;
  Slot& w = slots_[window];
  if (w.valid) slots_[w.region].windows--;
  w.valid = true;
  w.key = static_cast<uint16_t>(token & kKeyMask);
  w.addr = addr;
  w.length = length;
  w.access = access;
  w.region = region;
  slots_[region].windows++;
  return Result::kOk;
}

Result MemoryTable::InvalidateWindow(uint32_t window) {
  if (window == 0 || window >= slots_.size() || slots_[window].kind != Kind::kWindow)
    return Result::kInvalidHandle;
  Slot& w = slots_[window];
  if (w.valid) {
    slots_[w.region].windows--;
    w.valid = false;
  }
  return Result::kOk;
}

Result MemoryTable::InvalidateRemote(uint32_t token) {
  const uint32_t idx = TokenIndex(token);
  if (idx == 0 || idx >= slots_.size()) return Result::kBadToken;
  Slot& w = slots_[idx];
  if (w.kind != Kind::kWindow || !w.valid || w.key != (token & kKeyMask)) return Result::kBadToken;
  return InvalidateWindow(idx);
}

const MemoryTable::Slot* MemoryTable::Find(uint32_t token, bool remote) const {
  const uint32_t idx = TokenIndex(token);
  if (idx == 0 || idx >= slots_.size()) return nullptr;
  const Slot& s = slots_[idx];
  if (!s.valid) return nullptr;
  const uint16_t key = static_cast<uint16_t>(token & kKeyMask);
  if (s.kind == Kind::kRegion) return (remote ? s.remote_key : s.key) == key ? &s : nullptr;
  if (s.kind == Kind::kWindow) return remote && s.key == key ? &s : nullptr;
  return nullptr;
}

Result MemoryTable::CheckLocal(uint32_t token, uint64_t addr, uint64_t length,
                               uint32_t need) const {
  if (length == 0) return Result::kOk;
  const Slot* s = Find(token, false);
  if (!s) return Result::kBadToken;
  if (!InRange(*s, addr, length)) return Result::kOutOfBounds;
  // A Read's local target may be a region with local write or with RDMA_READ_SINK.
  if (need == kReadSink) return (s->access & (kLocalWrite | kReadSink)) ? Result::kOk : Result::kNoAccess;
  if ((s->access & need) != need) return Result::kNoAccess;
  return Result::kOk;
}

Result MemoryTable::CheckRemote(uint32_t token, uint64_t addr, uint64_t length,
                                uint32_t need) const {
  if (length == 0) return Result::kOk;
  const Slot* s = Find(token, true);
  if (!s) return Result::kBadToken;
  if (!InRange(*s, addr, length)) return Result::kOutOfBounds;
  if ((s->access & need) != need) return Result::kNoAccess;
  return Result::kOk;
}

}  // namespace roce::mem
