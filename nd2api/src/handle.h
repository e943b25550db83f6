// SPDX-License-Identifier: MIT
// handle.h: libnd2's internal side of the Win32 subset that nd_win32.h declares (events, waits,
// I/O completion ports, GetLastError) and of windows.h's threads. Not a public header: only
// nd2api/src and its tests include it. What the ND2 objects use:
//
//   - Handle: the base of everything a HANDLE names, with a kind (event, completion port,
//     overlapped file, thread, generic). Objects live in shared_ptrs; a HANDLE is an index and a
//     generation in a process-wide table, so a closed, stale or made-up HANDLE is detected
//     (ERROR_INVALID_HANDLE), never dereferenced. A thread inside a wait holds its own
//     reference, so CloseHandle while another thread waits is safe: the waiter returns.
//     The low two bits of a HANDLE are ignored on lookup (Windows' tag bits: the low bit of
//     OVERLAPPED::hEvent means "do not queue to the port", and programs pass such tagged
//     handles to CloseHandle).
//   - RegisterHandle / LookupHandle / LookupHandleAs<T>: how a library object becomes a HANDLE
//     (IND2Adapter::CreateOverlappedFile: RegisterHandle(std::make_shared<OverlappedFile>())).
//   - CompleteOverlapped: finishes a request that returned ND_PENDING, from any thread.
//   - SetProgressHook: the engine's poll, run by threads blocked in a wait.
//   - WaitForOverlapped: blocks until a request's OVERLAPPED is no longer pending
//     (GetOverlappedResult(wait=TRUE) for a request without an event).
//   - SetLastError, NtStatusToWin32Error.
//
// Locking: each event and port has its own std::mutex and std::condition_variable; the handle
// table and the hook have one mutex each. No lock is held while the progress hook runs, so the
// hook may complete requests, set events and post packets.
#pragma once

// The standard headers first: nd_win32.h then defines SAL names as empty macros.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#ifndef ND_WIN32_NO_LEGACY_SAL
#define ND_WIN32_NO_LEGACY_SAL
#endif
#include "nd_win32.h"

namespace roce::nd2 {

// Win32 error codes this layer reports that nd_win32.h does not name.
inline constexpr DWORD kErrorAbandonedWait0 = 735;  // ERROR_ABANDONED_WAIT_0: port closed
                                                    // while GetQueuedCompletionStatus waited
inline constexpr DWORD kErrorMrMidNotFound = 317;   // ERROR_MR_MID_NOT_FOUND: no mapping

// ---- Last error ------------------------------------------------------------------------------

// The calling thread's last Win32 error (what GetLastError returns). Starts at 0.
void SetLastError(DWORD error);

// The Win32 error that Windows' GetQueuedCompletionStatus reports for a request that completed
// with `status` (an NTSTATUS, which is also the ND2 HRESULT): RtlNtStatusToDosError's mapping for
// every ND_* status and the plain STATUS_* values of ndstatus.h, for example
//   ND_CANCELED -> ERROR_OPERATION_ABORTED (995), ND_IO_TIMEOUT -> ERROR_SEM_TIMEOUT (121),
//   ND_BUFFER_OVERFLOW -> ERROR_MORE_DATA (234), ND_CONNECTION_REFUSED -> 1225.
// HRESULTs of FACILITY_WIN32 (0x8007xxxx) and NTSTATUS-wrapped Win32 codes (0xC007xxxx) give
// their low 16 bits; 0 gives 0; anything else unknown gives ERROR_MR_MID_NOT_FOUND (317), as on
// Windows.
DWORD NtStatusToWin32Error(HRESULT status);

// ---- Handles ---------------------------------------------------------------------------------

class Handle {
 public:
  enum class Kind : uint8_t {
    kEvent,           // CreateEvent: Event
    kCompletionPort,  // CreateIoCompletionPort: CompletionPort
    kOverlappedFile,  // IND2Adapter::CreateOverlappedFile: OverlappedFile (or a subclass)
    kThread,          // CreateThread: Thread
    kGeneric,         // anything else the library hands out as a HANDLE
  };

  explicit Handle(Kind kind) : kind_(kind) {}
  virtual ~Handle() = default;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  Kind kind() const { return kind_; }

  // Called once by CloseHandle, after the HANDLE stopped resolving and without any table lock
  // held. The object lives on while anyone holds a reference (a waiting thread, a file bound
  // to a port, the library). Events and ports wake their waiters here.
  virtual void OnClose() {}

  // Wakes every thread blocked on this object so that it re-examines the world (used when a
  // progress hook appears: blocked waiters must start driving it). Default: nothing.
  virtual void WakeWaiters() {}

 private:
  const Kind kind_;
};

// Makes `object` reachable through a new HANDLE (never NULL nor INVALID_HANDLE_VALUE; its low
// two bits are 0). NULL, with SetLastError(ERROR_NOT_ENOUGH_MEMORY), when the table is full or
// memory runs out; NULL with ERROR_INVALID_PARAMETER for a null object.
HANDLE RegisterHandle(std::shared_ptr<Handle> object);

// The object `handle` names (low two bits ignored), or nullptr for NULL, INVALID_HANDLE_VALUE,
// a closed or unknown handle. Does not touch the last error.
std::shared_ptr<Handle> LookupHandle(HANDLE handle);

template <class T>
std::shared_ptr<T> LookupHandleAs(HANDLE handle) {
  return std::dynamic_pointer_cast<T>(LookupHandle(handle));
}

// Removes `handle` from the table and calls OnClose on its object (what CloseHandle does).
// False, with ERROR_INVALID_HANDLE, when it names nothing.
bool CloseHandleObject(HANDLE handle);

// Number of open handles (tests, leak checks).
size_t OpenHandleCount();

// ---- Waiting ---------------------------------------------------------------------------------

enum class WaitOutcome { kReady, kTimeout, kClosed };

// ---- Waitable objects -----------------------------------------------------------------------

// What WaitForSingleObject and WaitForMultipleObjects wait on: events and threads. Each has its
// own lock and condition variable (single waits sleep there); a change of state also wakes the
// threads in WaitForMultipleObjects (one process-wide condition variable, touched only while
// such a wait exists).
class Waitable : public Handle {
 public:
  using Handle::Handle;

  // kReady when signalled within `timeout_ms` (INFINITE: no limit; 0: a poll) and consumed if
  // the object is consumed by a wait (auto-reset event), kTimeout, or kClosed when the object
  // was closed first. Drives the progress hook while waiting.
  WaitOutcome Wait(DWORD timeout_ms);

  void OnClose() override;
  void WakeWaiters() override;

 protected:
  // With mu_ held: would a wait be satisfied now; take it (an auto-reset event resets).
  virtual bool SignalledLocked() const = 0;
  virtual void ConsumeLocked() {}
  // Call after making the object signalled (mu_ released): wakes one single waiter (all with
  // `all`) and every WaitForMultipleObjects.
  void NotifySignalled(bool all);

  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;  // guarded by mu_

 private:
  friend DWORD WaitForMultiple(const std::shared_ptr<Waitable>* objects, size_t count,
                               bool wait_all, DWORD timeout_ms);
};

// Waits on `count` objects (1 to MAXIMUM_WAIT_OBJECTS, no null) as WaitForMultipleObjects
// does: WAIT_OBJECT_0 + i (wait any: the lowest signalled; wait all: 0), WAIT_TIMEOUT, or
// WAIT_FAILED with ERROR_INVALID_HANDLE when one of them was closed during the wait.
DWORD WaitForMultiple(const std::shared_ptr<Waitable>* objects, size_t count, bool wait_all,
                      DWORD timeout_ms);

// ---- Events ----------------------------------------------------------------------------------

// A Win32 event. Manual-reset: Set releases every waiter, present and future, until Reset.
// Auto-reset: Set releases exactly one waiter (the event is reset by the wait that returns);
// with no waiter it stays signalled until one comes. Set on a signalled event does nothing.
class Event final : public Waitable {
 public:
  static constexpr Kind kKind = Kind::kEvent;
  Event(bool manual_reset, bool initially_signalled)
      : Waitable(kKind), manual_reset_(manual_reset), signalled_(initially_signalled) {}

  void Set();
  void Reset();
  bool manual_reset() const { return manual_reset_; }

 private:
  bool SignalledLocked() const override { return signalled_; }
  void ConsumeLocked() override {
    if (!manual_reset_) signalled_ = false;
  }

  const bool manual_reset_;
  bool signalled_;  // guarded by mu_
};

// ---- Threads ---------------------------------------------------------------------------------

// A thread made by CreateThread (win32_thread.cc). Signalled, for good, once it has exited; its
// exit code is then what its routine returned (or gave ExitThread). Closing the HANDLE does not
// stop the thread.
class Thread final : public Waitable {
 public:
  static constexpr Kind kKind = Kind::kThread;
  static constexpr DWORD kStillActive = 259;  // STILL_ACTIVE
  Thread() : Waitable(kKind) {}

  // Records the exit code and signals the thread's waiters (called once, by the thread).
  void Finish(DWORD exit_code);
  // kStillActive until Finish.
  DWORD exit_code();
  // The thread's id (gettid), once Publish ran; WaitStarted blocks until then.
  void Publish(DWORD id);
  DWORD WaitStarted();
  // CREATE_SUSPENDED: the new thread blocks in WaitResumed until Resume. Resume returns the
  // previous suspend count (1, then 0).
  void SetSuspended();
  DWORD Resume();
  void WaitResumed();

 private:
  bool SignalledLocked() const override { return done_; }

  bool done_ = false;  // all guarded by mu_
  DWORD exit_code_ = kStillActive;
  DWORD id_ = 0;
  bool started_ = false;
  DWORD suspend_count_ = 0;
};

// ---- Completion ports ------------------------------------------------------------------------

// One completion packet: what GetQueuedCompletionStatus returns. `status` is the request's
// final status (STATUS_SUCCESS for PostQueuedCompletionStatus).
struct CompletionPacket {
  DWORD bytes = 0;
  ULONG_PTR key = 0;
  OVERLAPPED* overlapped = nullptr;
  HRESULT status = 0;
};

// An I/O completion port: a FIFO of packets with blocking dequeues. Closing it wakes its
// waiters (kClosed); packets still arriving from bound files are accepted and dropped with the
// object.
class CompletionPort final : public Handle {
 public:
  static constexpr Kind kKind = Kind::kCompletionPort;
  CompletionPort() : Handle(kKind) {}

  void Post(const CompletionPacket& packet);
  // kReady with the oldest packet in *packet, kTimeout, or kClosed. Drives the progress hook
  // while waiting.
  WaitOutcome Dequeue(DWORD timeout_ms, CompletionPacket* packet);
  size_t queued();

  void OnClose() override;
  void WakeWaiters() override;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<CompletionPacket> queue_;
  bool closed_ = false;
};

// ---- Overlapped files ------------------------------------------------------------------------

// The HANDLE of IND2Adapter::CreateOverlappedFile. An application binds it to a completion port
// with CreateIoCompletionPort(file, port, key, 0); requests issued with it then complete there.
// The library may subclass it (OnClose to learn that the application closed it). The binding
// keeps the port object alive (as on Windows), and survives CloseHandle of either handle.
class OverlappedFile : public Handle {
 public:
  static constexpr Kind kKind = Kind::kOverlappedFile;
  OverlappedFile() : Handle(kKind) {}

  // Binds to `port` under `key`. False when already bound (Windows allows one binding).
  bool Associate(std::shared_ptr<CompletionPort> port, ULONG_PTR key);
  // The bound port (nullptr if none); its key in *key.
  std::shared_ptr<CompletionPort> port(ULONG_PTR* key) const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<CompletionPort> port_;
  ULONG_PTR key_ = 0;
};

// ---- Completing requests ---------------------------------------------------------------------

// Marks `ov` as outstanding: Internal = STATUS_PENDING, InternalHigh = 0 (what the library does
// before returning ND_PENDING; WaitForOverlapped and HasOverlappedIoCompleted-style polls read
// it).
void MarkOverlappedPending(OVERLAPPED* ov);

// Completes a request that returned ND_PENDING, from any thread, exactly once:
//   1. reads ov->hEvent (before anything else: once Internal is published the application
//      may reuse the OVERLAPPED);
//   2. ov->InternalHigh = bytes, then ov->Internal = status (zero-extended to 64 bits: the
//      low 32 bits are the HRESULT / NTSTATUS; stored with a sequentially consistent atomic
//      store, so a thread polling Internal sees InternalHigh too);
//   3. wakes WaitForOverlapped callers;
//   4. sets the event hEvent names (low bit masked), if any;
//   5. unless the low bit of hEvent is set, queues (bytes, key, ov, status) to the port `file`
//      is bound to, if it is bound.
// `file` may be null (a request with no file: only the event). The HANDLE form returns false
// when `file` is neither NULL nor an overlapped file (the event is still set, nothing queued).
void CompleteOverlapped(OverlappedFile* file, OVERLAPPED* ov, HRESULT status, ULONG bytes);
bool CompleteOverlapped(HANDLE file, OVERLAPPED* ov, HRESULT status, ULONG bytes);
// The process is exiting (libnd2's exit handler ends its connections on the wire): from now on
// completions leave application memory alone — an OVERLAPPED the application left pending may
// live in a stack frame that has returned — and are dropped.
void StopCompletingOverlapped();

// Blocks until ov->Internal is no longer STATUS_PENDING (after MarkOverlappedPending), driving
// the progress hook like every wait. WAIT_OBJECT_0 or WAIT_TIMEOUT.
DWORD WaitForOverlapped(OVERLAPPED* ov, DWORD timeout_ms);

// ---- Progress hook ---------------------------------------------------------------------------

// Called by a thread waiting in WaitForSingleObject, GetQueuedCompletionStatus or
// WaitForOverlapped whose object is not ready yet, instead of sleeping, so that a
// single-threaded program whose only call is a wait still sees its requests complete.
// Contract:
//   - `timeout_ms` is how long the hook may block waiting for work (at most the wait's
//     remaining time and the slice given to SetProgressHook; 0 for a polling wait, which calls
//     the hook exactly once). Return true if it made progress (anything may have completed),
//     false if idle. The wait re-checks its object after every call and calls again until the
//     object is ready or the wait times out: a hook that returns at once makes the wait a busy
//     poll (the inline progress mode of a poll-mode engine); one that wants the waiter to sleep
//     blocks up to timeout_ms itself. A Set/Post from another thread is seen when the hook
//     returns.
//   - Called with no lock of this layer held: it may call CompleteOverlapped, SetEvent,
//     PostQueuedCompletionStatus. Several waiting threads may call it at once: it must be
//     thread-safe. A wait made from inside the hook does not call the hook again (it blocks).
//   - Must not throw.
using ProgressHook = std::function<bool(uint32_t timeout_ms)>;
inline constexpr uint32_t kDefaultProgressSliceMs = 1;

// Installs `hook` (empty: none; waits then simply block). Returns once no thread other than
// the caller is still inside the previous hook, so the library may destroy what that hook
// used. Threads already blocked in a wait start calling the new hook.
void SetProgressHook(ProgressHook hook, uint32_t max_slice_ms = kDefaultProgressSliceMs);

// Runs the hook once with min(timeout_ms, slice) if one is set and the calling thread is not
// already inside it. Returns the hook's result (false when it did not run).
bool DriveProgress(uint32_t timeout_ms);

}  // namespace roce::nd2
