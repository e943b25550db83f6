// SPDX-License-Identifier: MIT
// handle.cc: the handle table, the waits (single and multiple), events, threads' waitable state,
// completion ports, overlapped files, request completion and the progress hook (see handle.h).
#include "nd2api/src/handle.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <new>
#include <optional>
#include <utility>
#include <vector>

namespace roce::nd2 {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kStatusPending = 0x00000103;  // STATUS_PENDING (ndstatus.h)

// ---- Process-wide state ----------------------------------------------------------------------
// Allocated once and never destroyed: threads may still wait or complete requests while static
// destructors run at exit.

struct HookState {
  ProgressHook fn;
  uint32_t slice_ms;
  int active = 0;  // threads inside fn; guarded by Globals::hook_mu
};

struct Slot {
  uint32_t generation = 1;
  std::shared_ptr<Handle> object;
};

struct Globals {
  // Handle table.
  std::mutex table_mu;
  std::vector<Slot> slots;
  std::vector<uint32_t> free_slots;
  size_t open = 0;

  // Progress hook.
  std::mutex hook_mu;
  std::condition_variable hook_cv;
  std::shared_ptr<HookState> hook;

  // WaitForOverlapped waiters.
  std::mutex ov_mu;
  std::condition_variable ov_cv;

  // WaitForMultipleObjects waiters.
  std::mutex multi_mu;
  std::condition_variable multi_cv;
};

Globals& G() {
  static Globals* const globals = new Globals;
  return *globals;
}

std::atomic<bool> g_hook_set{false};
std::atomic<int> g_overlapped_waiters{0};
std::atomic<int> g_multi_waiters{0};
thread_local const HookState* t_current_hook = nullptr;  // non-null inside the hook

// ---- Handle values -------------------------------------------------------------------------
// value = generation << 32 | (index + 1) << 2. Generation is never 0 nor 0xFFFFFFFF, so a value
// is never NULL nor INVALID_HANDLE_VALUE, and its low two bits (Windows' tag bits) are free.

constexpr uint32_t kMaxSlots = 1u << 24;

HANDLE EncodeHandle(uint32_t index, uint32_t generation) {
  const uint64_t v = (uint64_t{generation} << 32) | (uint64_t{index + 1} << 2);
  return reinterpret_cast<HANDLE>(static_cast<uintptr_t>(v));
}

bool DecodeHandle(HANDLE handle, uint32_t* index, uint32_t* generation) {
  if (handle == nullptr || handle == INVALID_HANDLE_VALUE) return false;
  const uint64_t v = reinterpret_cast<uintptr_t>(handle) & ~uint64_t{3};
  const uint32_t low = static_cast<uint32_t>(v);
  if (low == 0) return false;
  *index = (low >> 2) - 1;
  *generation = static_cast<uint32_t>(v >> 32);
  return true;
}

uint32_t NextGeneration(uint32_t g) {
  ++g;
  return (g == 0 || g == 0xFFFFFFFFu) ? 1 : g;
}

std::vector<std::shared_ptr<Handle>> SnapshotHandles() {
  Globals& g = G();
  std::vector<std::shared_ptr<Handle>> out;
  std::lock_guard<std::mutex> lk(g.table_mu);
  out.reserve(g.open);
  for (const Slot& s : g.slots) {
    if (s.object) out.push_back(s.object);
  }
  return out;
}

// ---- Waiting ---------------------------------------------------------------------------------

bool HookWanted() {
  return t_current_hook == nullptr && g_hook_set.load(std::memory_order_acquire);
}

// The one wait loop behind every blocking call. `ready` runs with `lk` held and returns kReady
// (consuming what it waited for) or kClosed to end the wait, nullopt to go on. Without a hook
// the thread sleeps on `cv`; with one it calls the hook (lock released) instead, and a polling
// wait (timeout 0) calls it exactly once.
template <class Ready>
WaitOutcome WaitLoop(std::unique_lock<std::mutex>& lk, std::condition_variable& cv,
                     DWORD timeout_ms, Ready ready) {
  const bool infinite = timeout_ms == INFINITE;
  const Clock::time_point deadline =
      infinite ? Clock::time_point::max() : Clock::now() + std::chrono::milliseconds(timeout_ms);
  bool hook_called = false;
  for (;;) {
    if (std::optional<WaitOutcome> r = ready()) return *r;
    if (HookWanted()) {
      uint32_t budget = INFINITE;
      if (!infinite) {
        const Clock::time_point now = Clock::now();
        if (now >= deadline) {
          if (hook_called) return WaitOutcome::kTimeout;
          budget = 0;
        } else {
          const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
          budget = static_cast<uint32_t>(std::min<int64_t>(left, INFINITE - 1));
        }
      }
      lk.unlock();
      DriveProgress(budget);
      lk.lock();
      hook_called = true;
      continue;
    }
    if (infinite) {
      cv.wait(lk);
    } else if (cv.wait_until(lk, deadline) == std::cv_status::timeout) {
      if (std::optional<WaitOutcome> r = ready()) return *r;
      return WaitOutcome::kTimeout;
    }
  }
}

void WakeAllWaiters() {
  for (const std::shared_ptr<Handle>& h : SnapshotHandles()) h->WakeWaiters();
  Globals& g = G();
  {
    std::lock_guard<std::mutex> lk(g.ov_mu);
    g.ov_cv.notify_all();
  }
  std::lock_guard<std::mutex> lk(g.multi_mu);
  g.multi_cv.notify_all();
}

void NotifyOverlappedWaiters() {
  if (g_overlapped_waiters.load(std::memory_order_seq_cst) == 0) return;
  Globals& g = G();
  std::lock_guard<std::mutex> lk(g.ov_mu);
  g.ov_cv.notify_all();
}

}  // namespace

// ---- Handle table ----------------------------------------------------------------------------

HANDLE RegisterHandle(std::shared_ptr<Handle> object) {
  if (!object) {
    SetLastError(ERROR_INVALID_PARAMETER);
    return nullptr;
  }
  Globals& g = G();
  std::lock_guard<std::mutex> lk(g.table_mu);
  uint32_t index;
  try {
    if (!g.free_slots.empty()) {
      index = g.free_slots.back();
      g.free_slots.pop_back();
    } else {
      if (g.slots.size() >= kMaxSlots) {
        SetLastError(ERROR_NOT_ENOUGH_MEMORY);
        return nullptr;
      }
      g.free_slots.reserve(g.slots.size() + 1);  // so that closing never allocates
      g.slots.emplace_back();
      index = static_cast<uint32_t>(g.slots.size() - 1);
    }
  } catch (const std::bad_alloc&) {
    SetLastError(ERROR_NOT_ENOUGH_MEMORY);
    return nullptr;
  }
  Slot& slot = g.slots[index];
  slot.object = std::move(object);
  ++g.open;
  return EncodeHandle(index, slot.generation);
}

std::shared_ptr<Handle> LookupHandle(HANDLE handle) {
  uint32_t index, generation;
  if (!DecodeHandle(handle, &index, &generation)) return nullptr;
  Globals& g = G();
  std::lock_guard<std::mutex> lk(g.table_mu);
  if (index >= g.slots.size()) return nullptr;
  const Slot& slot = g.slots[index];
  if (slot.generation != generation) return nullptr;
  return slot.object;
}

bool CloseHandleObject(HANDLE handle) {
  std::shared_ptr<Handle> object;
  uint32_t index, generation;
  if (DecodeHandle(handle, &index, &generation)) {
    Globals& g = G();
    std::lock_guard<std::mutex> lk(g.table_mu);
    if (index < g.slots.size() && g.slots[index].generation == generation &&
        g.slots[index].object) {
      Slot& slot = g.slots[index];
      object = std::move(slot.object);
      slot.object.reset();
      slot.generation = NextGeneration(slot.generation);
      g.free_slots.push_back(index);  // capacity reserved by RegisterHandle
      --g.open;
    }
  }
  if (!object) {
    SetLastError(ERROR_INVALID_HANDLE);
    return false;
  }
  object->OnClose();
  return true;
}

size_t OpenHandleCount() {
  Globals& g = G();
  std::lock_guard<std::mutex> lk(g.table_mu);
  return g.open;
}

// ---- Waitable objects -----------------------------------------------------------------------
// WaitForMultipleObjects sleeps on Globals::multi_cv under multi_mu. A waitable that becomes
// signalled (its own mu_ released) takes multi_mu before notifying, when such a wait exists:
// the waiter counts itself (seq_cst) before it first looks at an object, so either it sees the
// new state or the notifier sees the count and cannot notify before the waiter sleeps.

namespace {
void NotifyMultiWaiters() {
  if (g_multi_waiters.load(std::memory_order_seq_cst) == 0) return;
  Globals& g = G();
  { std::lock_guard<std::mutex> lk(g.multi_mu); }
  g.multi_cv.notify_all();
}
}  // namespace

WaitOutcome Waitable::Wait(DWORD timeout_ms) {
  std::unique_lock<std::mutex> lk(mu_);
  return WaitLoop(lk, cv_, timeout_ms, [this]() -> std::optional<WaitOutcome> {
    if (SignalledLocked()) {
      ConsumeLocked();
      return WaitOutcome::kReady;
    }
    if (closed_) return WaitOutcome::kClosed;
    return std::nullopt;
  });
}

void Waitable::NotifySignalled(bool all) {
  if (all) {
    cv_.notify_all();
  } else {
    cv_.notify_one();
  }
  NotifyMultiWaiters();
}

void Waitable::OnClose() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  NotifyMultiWaiters();
}

void Waitable::WakeWaiters() {
  std::lock_guard<std::mutex> lk(mu_);
  cv_.notify_all();
}

DWORD WaitForMultiple(const std::shared_ptr<Waitable>* objects, size_t count, bool wait_all,
                      DWORD timeout_ms) {
  // The objects' locks are taken in address order (each once), so that two waits over the
  // same objects cannot deadlock, and a wait-all sees and consumes every object at one instant.
  std::vector<Waitable*> order;
  order.reserve(count);
  for (size_t i = 0; i < count; ++i) order.push_back(objects[i].get());
  std::sort(order.begin(), order.end());
  order.erase(std::unique(order.begin(), order.end()), order.end());

  Globals& g = G();
  g_multi_waiters.fetch_add(1, std::memory_order_seq_cst);
  size_t index = 0;
  WaitOutcome r;
  {
    std::unique_lock<std::mutex> lk(g.multi_mu);
    r = WaitLoop(lk, g.multi_cv, timeout_ms, [&]() -> std::optional<WaitOutcome> {
      for (Waitable* w : order) w->mu_.lock();
      std::optional<WaitOutcome> out;
      bool all = true;
      for (size_t i = 0; i < count && !out; ++i) {
        const Waitable* w = objects[i].get();
        if (w->closed_) {
          out = WaitOutcome::kClosed;
        } else if (!w->SignalledLocked()) {
          all = false;
        } else if (!wait_all) {
          objects[i]->ConsumeLocked();
          index = i;
          out = WaitOutcome::kReady;
        }
      }
      if (!out && wait_all && all) {
        for (Waitable* w : order) w->ConsumeLocked();
        out = WaitOutcome::kReady;
      }
      for (Waitable* w : order) w->mu_.unlock();
      return out;
    });
  }
  g_multi_waiters.fetch_sub(1, std::memory_order_seq_cst);
  switch (r) {
    case WaitOutcome::kReady:
      return WAIT_OBJECT_0 + static_cast<DWORD>(index);
    case WaitOutcome::kTimeout:
      return WAIT_TIMEOUT;
    case WaitOutcome::kClosed:
      break;
  }
  SetLastError(ERROR_INVALID_HANDLE);
  return WAIT_FAILED;
}

// ---- Events ----------------------------------------------------------------------------------

void Event::Set() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (signalled_) return;
    signalled_ = true;
  }
  NotifySignalled(manual_reset_);
}

void Event::Reset() {
  std::lock_guard<std::mutex> lk(mu_);
  signalled_ = false;
}

// ---- Threads ---------------------------------------------------------------------------------

void Thread::Finish(DWORD exit_code) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    exit_code_ = exit_code;
    done_ = true;
  }
  NotifySignalled(true);
}

DWORD Thread::exit_code() {
  std::lock_guard<std::mutex> lk(mu_);
  return exit_code_;
}

void Thread::Publish(DWORD id) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    id_ = id;
    started_ = true;
  }
  cv_.notify_all();
}

DWORD Thread::WaitStarted() {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [this] { return started_; });
  return id_;
}

void Thread::SetSuspended() {
  std::lock_guard<std::mutex> lk(mu_);
  suspend_count_ = 1;
}

DWORD Thread::Resume() {
  DWORD previous;
  {
    std::lock_guard<std::mutex> lk(mu_);
    previous = suspend_count_;
    if (suspend_count_ > 0) --suspend_count_;
  }
  cv_.notify_all();
  return previous;
}

void Thread::WaitResumed() {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [this] { return suspend_count_ == 0; });
}

// ---- Completion ports ------------------------------------------------------------------------

void CompletionPort::Post(const CompletionPacket& packet) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (closed_) return;  // nobody can dequeue it any more
    queue_.push_back(packet);
  }
  cv_.notify_one();
}

WaitOutcome CompletionPort::Dequeue(DWORD timeout_ms, CompletionPacket* packet) {
  std::unique_lock<std::mutex> lk(mu_);
  return WaitLoop(lk, cv_, timeout_ms, [this, packet]() -> std::optional<WaitOutcome> {
    if (!queue_.empty()) {
      *packet = queue_.front();
      queue_.pop_front();
      return WaitOutcome::kReady;
    }
    if (closed_) return WaitOutcome::kClosed;
    return std::nullopt;
  });
}

size_t CompletionPort::queued() {
  std::lock_guard<std::mutex> lk(mu_);
  return queue_.size();
}

void CompletionPort::OnClose() {
  std::lock_guard<std::mutex> lk(mu_);
  closed_ = true;
  queue_.clear();
  cv_.notify_all();
}

void CompletionPort::WakeWaiters() {
  std::lock_guard<std::mutex> lk(mu_);
  cv_.notify_all();
}

// ---- Overlapped files ------------------------------------------------------------------------

bool OverlappedFile::Associate(std::shared_ptr<CompletionPort> port, ULONG_PTR key) {
  if (!port) return false;
  std::lock_guard<std::mutex> lk(mu_);
  if (port_) return false;
  port_ = std::move(port);
  key_ = key;
  return true;
}

std::shared_ptr<CompletionPort> OverlappedFile::port(ULONG_PTR* key) const {
  std::lock_guard<std::mutex> lk(mu_);
  if (key != nullptr) *key = key_;
  return port_;
}

// ---- Completing requests ---------------------------------------------------------------------

void MarkOverlappedPending(OVERLAPPED* ov) {
  if (ov == nullptr) return;
  __atomic_store_n(&ov->InternalHigh, ULONG_PTR{0}, __ATOMIC_RELAXED);
  __atomic_store_n(&ov->Internal, ULONG_PTR{kStatusPending}, __ATOMIC_SEQ_CST);
}

namespace {
std::atomic<bool> g_exiting{false};
}  // namespace

void StopCompletingOverlapped() { g_exiting.store(true); }

void CompleteOverlapped(OverlappedFile* file, OVERLAPPED* ov, HRESULT status, ULONG bytes) {
  if (ov == nullptr || g_exiting.load(std::memory_order_relaxed)) return;
  // Everything read from the OVERLAPPED is read before Internal says "done".
  HANDLE event_handle = ov->hEvent;
  const bool to_port = (reinterpret_cast<uintptr_t>(event_handle) & 1) == 0;
  std::shared_ptr<Event> event = LookupHandleAs<Event>(event_handle);
  ULONG_PTR key = 0;
  std::shared_ptr<CompletionPort> port =
      (to_port && file != nullptr) ? file->port(&key) : nullptr;

  __atomic_store_n(&ov->InternalHigh, ULONG_PTR{bytes}, __ATOMIC_RELAXED);
  __atomic_store_n(&ov->Internal, ULONG_PTR{static_cast<uint32_t>(status)}, __ATOMIC_SEQ_CST);
  NotifyOverlappedWaiters();
  if (event) event->Set();
  if (port) {
    try {
      port->Post(CompletionPacket{bytes, key, ov, status});
    } catch (const std::bad_alloc&) {
      // Nothing better to do: the OVERLAPPED and the event already say it completed.
    }
  }
}

bool CompleteOverlapped(HANDLE file, OVERLAPPED* ov, HRESULT status, ULONG bytes) {
  std::shared_ptr<OverlappedFile> f;
  bool ok = true;
  if (file != nullptr) {
    f = LookupHandleAs<OverlappedFile>(file);
    ok = f != nullptr;
  }
  CompleteOverlapped(f.get(), ov, status, bytes);
  return ok;
}

DWORD WaitForOverlapped(OVERLAPPED* ov, DWORD timeout_ms) {
  if (ov == nullptr) {
    SetLastError(ERROR_INVALID_PARAMETER);
    return WAIT_FAILED;
  }
  Globals& g = G();
  g_overlapped_waiters.fetch_add(1, std::memory_order_seq_cst);
  WaitOutcome r;
  {
    std::unique_lock<std::mutex> lk(g.ov_mu);
    r = WaitLoop(lk, g.ov_cv, timeout_ms, [ov]() -> std::optional<WaitOutcome> {
      const ULONG_PTR v = __atomic_load_n(&ov->Internal, __ATOMIC_SEQ_CST);
      if (static_cast<uint32_t>(v) != kStatusPending) return WaitOutcome::kReady;
      return std::nullopt;
    });
  }
  g_overlapped_waiters.fetch_sub(1, std::memory_order_seq_cst);
  return r == WaitOutcome::kReady ? WAIT_OBJECT_0 : WAIT_TIMEOUT;
}

// ---- Progress hook ---------------------------------------------------------------------------

void SetProgressHook(ProgressHook hook, uint32_t max_slice_ms) {
  std::shared_ptr<HookState> next;
  if (hook) next = std::make_shared<HookState>(HookState{std::move(hook), max_slice_ms});
  Globals& g = G();
  {
    std::unique_lock<std::mutex> lk(g.hook_mu);
    std::shared_ptr<HookState> old = std::exchange(g.hook, next);
    g_hook_set.store(next != nullptr, std::memory_order_release);
    if (old) {
      // Let every other thread leave the old hook; the caller may itself be inside it.
      const int own = t_current_hook == old.get() ? 1 : 0;
      g.hook_cv.wait(lk, [&] { return old->active == own; });
    }
  }
  if (next) WakeAllWaiters();
}

bool DriveProgress(uint32_t timeout_ms) {
  if (t_current_hook != nullptr) return false;
  Globals& g = G();
  std::shared_ptr<HookState> h;
  {
    std::lock_guard<std::mutex> lk(g.hook_mu);
    h = g.hook;
    if (!h) return false;
    ++h->active;
  }
  struct Leave {
    Globals& g;
    HookState* h;
    ~Leave() {
      t_current_hook = nullptr;
      std::lock_guard<std::mutex> lk(g.hook_mu);
      --h->active;
      if (g.hook.get() != h) g.hook_cv.notify_all();  // retired: SetProgressHook may wait
    }
  } leave{g, h.get()};
  t_current_hook = h.get();
  return h->fn(std::min(timeout_ms, h->slice_ms));
}

}  // namespace roce::nd2
