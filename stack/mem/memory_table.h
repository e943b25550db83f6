// SPDX-License-Identifier: MIT
// Memory regions and windows, their tokens, and the access checks every
// local and remote access goes through.
//
// A token (ND2's "token", IB's L_Key/R_Key) is 32 bits: a 20-bit slot index in
// the high bits and a 12-bit key in the low bits. Slots are handed out from a
// shuffled free list. Each slot issues its keys from one sequence — region
// local and remote keys, window tokens, whatever the slot holds over time —
// starting at a random key and advancing by a random step of 1..8 per key
// issued. A registration issues two keys, a window creation or bind one, so
// a stale or invalidated token (local or remote) cannot come back, as either
// kind, for at least 255 reuses of the slot, and a guessed one fails unless
// both index and key are right.
// A region has two tokens in one slot: the local token and the remote token
// carry different keys, so a local token never works remotely.
//
// Addresses are the application's virtual addresses (ND2 remote addresses are
// not zero-based). Every check is overflow-safe for any 64-bit address and
// length. The table is not thread-safe: the engine thread owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace roce::mem {

// Access rights. The values equal ND2's ND_MR_FLAG_* bits, but this layer
// does not depend on ND2.
enum Access : uint32_t {
  kLocalWrite = 1u << 0,
  kRemoteRead = 1u << 1,
  kRemoteWrite = 1u << 2,
  kReadSink = 1u << 3,   // may be the local target of an RDMA Read
};

enum class Result : uint8_t {
  kOk,
  kBadToken,       // no live object has this token (wrong index or key, invalidated, stale)
  kOutOfBounds,    // [addr, addr+len) not inside the object
  kNoAccess,       // the object does not grant the needed right
  kInvalidParameter,
  kInvalidBufferSize,
  kNoResources,
  kBusy,           // region still has bound windows
  kInvalidHandle,
};
const char* ResultName(Result r);

inline constexpr uint32_t kKeyBits = 12;
inline constexpr uint32_t kKeyMask = (1u << kKeyBits) - 1;
inline constexpr uint32_t kMaxObjects = 1u << (32 - kKeyBits);
inline constexpr uint32_t TokenIndex(uint32_t token) { return token >> kKeyBits; }

struct RegionInfo {
  uint32_t handle = 0;     // slot index
  uint32_t local_token = 0;
  uint32_t remote_token = 0;
};

class MemoryTable {
 public:
  // seed 0: keys and slot order from std::random_device; otherwise deterministic.
  explicit MemoryTable(uint64_t seed = 0, uint32_t max_objects = 1u << 16);

  // Regions. Register(nullptr-equivalent addr 0 with len 0) is kInvalidParameter,
  // len 0 is kInvalidBufferSize (ND2's rules).
  Result RegisterRegion(uint64_t addr, uint64_t length, uint32_t access, RegionInfo* out);
  Result DeregisterRegion(uint32_t handle);  // kBusy while windows are bound to it
  // Called by DeregisterRegion with the region's range before it returns kOk:
  // the engine revokes zero-copy frames that still point into it, so nothing
  // reads the memory once the application has it back.
  std::function<void(uint64_t addr, uint64_t length)> on_deregister;

  // Windows: created unbound. AllocateWindowToken picks the token the next
  // bind will activate (ND2: the token is valid as soon as Bind returns, while
  // the bind itself executes later, in order, on the QP).
  Result CreateWindow(uint32_t* handle);
  Result DestroyWindow(uint32_t handle);  // unbinds first
  uint32_t AllocateWindowToken(uint32_t window);
  // Binds `window` to [addr, addr+len) of `region` with remote rights `access`
  // (kRemoteRead / kRemoteWrite) under `token` (from AllocateWindowToken).
  // Remote write needs a region with local write. The range must lie in the region.
  Result BindWindow(uint32_t window, uint32_t token, uint32_t region, uint64_t addr,
                    uint64_t length, uint32_t access);
  // Local invalidate of a window (by handle).
  Result InvalidateWindow(uint32_t window);
  // Remote invalidate (SEND_WITH_INVALIDATE's IETH): the token must be a bound
  // window's current token.
  Result InvalidateRemote(uint32_t token);
  uint32_t WindowToken(uint32_t window) const;  // current or last allocated token

  // Data-path checks. A zero-length access needs no valid token (IBTA).
  Result CheckLocal(uint32_t token, uint64_t addr, uint64_t length, uint32_t need) const;
  Result CheckRemote(uint32_t token, uint64_t addr, uint64_t length, uint32_t need) const;

  uint32_t live_regions() const { return live_regions_; }
  uint32_t live_windows() const { return live_windows_; }

 private:
  enum class Kind : uint8_t { kFree, kRegion, kWindow };
  struct Slot {
    Kind kind = Kind::kFree;
    bool valid = false;        // region registered / window bound
    uint16_t key = 0;          // local key (region) or current window key
    // Region: its remote key. Window: the last token allocated. Either way
    // the newest key the slot has issued (the next one follows it).
    uint16_t remote_key = 0;
    uint64_t addr = 0, length = 0;
    uint32_t access = 0;
    uint32_t region = 0;       // window: the region it is bound to
    uint32_t windows = 0;      // region: number of windows bound to it
  };
  static bool InRange(const Slot& s, uint64_t addr, uint64_t len);
  uint16_t NextKey(uint16_t key);
  bool Allocate(uint32_t* index);
  void Release(uint32_t index);
  const Slot* Find(uint32_t token, bool remote) const;

  std::mt19937_64 rng_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  uint32_t live_regions_ = 0, live_windows_ = 0;
};

}  // namespace roce::mem
