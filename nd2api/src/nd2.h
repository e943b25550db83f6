// SPDX-License-Identifier: MIT
// libnd2's objects: the ND2 interfaces (ndspi.h) over the stack (engine, RC
// core, connection manager). HRESULTs, OVERLAPPED and COM reference counting
// stay in this folder; the stack keeps its own statuses (status.h maps them).
//
// Threads and locks. An adapter is one port and its engine. Every call that
// touches the stack takes the engine's lock (Engine::mu()) — except the data
// path of a thread adapter: its queue pairs' Send/Write/Read/Receive go into
// per-queue-pair single-producer rings (QueuePair::RingSend, post_ring.h) the
// engine thread drains at the start of every pass, an SRQ's Receive into the
// SRQ's own ring, and GetResults polls a single-consumer CQ ring; those take
// only the object's own posting/polling mutex (one application thread at a
// time per object), never the engine's. The engine's callbacks (CQ pushes,
// CM events) run with its lock held and complete overlapped requests from
// there (CompleteOverlapped takes no lock of ours across the wait machinery).
// Lock order: an object's posting mutex (QueuePair / SRQ post_mu_), then the
// engine lock; an object's OverlappedSet mutex is never held while the engine
// lock is taken. Progress: inline adapters are polled by the thread in
// GetResults and by every thread blocked in a wait (the progress hook of
// handle.h); thread adapters by their engine's own thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "nd2api/src/config.h"
#include "nd2api/src/handle.h"
#include "nd2api/src/status.h"
#include "stack/cm/cm.h"
#include "stack/engine/engine.h"
#include "stack/host/host.h"

#ifndef ND_WIN32_NO_LEGACY_SAL
#define ND_WIN32_NO_LEGACY_SAL
#endif
#include "ndspi.h"
#include "ndsupport.h"

namespace roce::nd2 {

class Adapter;
class CompletionQueue;
class MemoryWindow;
class QueuePair;
class Connector;
class Listener;

// An array on the stack of a call that writes only the elements it then
// reads, left uninitialised: rc::Sge's and rc::Completion's member
// initialisers would zero all of them on every call (a post's 32 SGEs, 512
// bytes; GetResults' 64 completions, 3 KiB — 5% of an 8 B Write's
// instructions through ND2).
template <typename T, size_t N>
struct Scratch {
  Scratch() {}  // NOLINT: leaves the array uninitialised on purpose
  union {
    T s[N];
  };
};
using SgeScratch = Scratch<rc::Sge, rc::kMaxSge>;

// Adapter limits (what Query reports; CreateX refuses more).
struct Limits {
  static constexpr ULONG kMaxSge = rc::kMaxSge;                // 32
  static constexpr ULONG kMaxInline = 1024;
  static constexpr ULONG kMaxQueueDepth = 16384;               // receive / initiator
  static constexpr ULONG kMaxSrqDepth = 16384;
  static constexpr ULONG kMaxCqDepth = 65536;
  static constexpr ULONG kMaxReadLimit = 16;                   // inbound / outbound
  static constexpr ULONG kMaxTransfer = rc::kMaxMessage;       // 2^31 - 1
  static constexpr SIZE_T kMaxRegistration = SIZE_T{1} << 40;
  // A queue's SGE limit as created: what it was asked for rounded up to a
  // multiple of kSgeGranule (at most kMaxSge). Windows providers round to
  // their WQE size the same way (a 64-byte building block holds four
  // 16-byte SGEs), and Microsoft's ndmw posts 2 SGEs on a queue pair it
  // created for 1. The storage per request slot is sized for the rounded
  // count.
  static constexpr ULONG kSgeGranule = 4;
  static constexpr ULONG RoundSge(ULONG n) {
    const ULONG r = (n + kSgeGranule - 1) / kSgeGranule * kSgeGranule;
    return r < kMaxSge ? r : kMaxSge;
  }
  static constexpr ULONG kMaxCallerData = cm::kMaxReqPrivateData;   // 56
  static constexpr ULONG kMaxCalleeData = cm::kMaxRejPrivateData;   // 148
};

// Overlapped requests of one object: pended (ND_PENDING), completed from any
// thread, cancelled by CancelOverlappedRequests, waited for by
// GetOverlappedResult. The object's overlapped file decides where a
// completion goes (event and/or completion port).
class OverlappedSet {
 public:
  explicit OverlappedSet(std::shared_ptr<OverlappedFile> file) : file_(std::move(file)) {}
  // Marks ov pending and records it; on_cancel runs (without our lock) if
  // CancelAll takes it. Returns ND_PENDING.
  HRESULT Pend(OVERLAPPED* ov, std::function<void()> on_cancel = {}, uintptr_t tag = 0);
  // Completes ov if still pending here; false if it was not (cancelled).
  bool Complete(OVERLAPPED* ov, HRESULT status, ULONG bytes = 0);
  // Completes the oldest pending request with this tag.
  bool CompleteTagged(uintptr_t tag, HRESULT status, ULONG bytes = 0);
  // Completes every pending request with this tag.
  size_t CompleteAllTagged(uintptr_t tag, HRESULT status);
  HRESULT CancelAll();
  // IND2Overlapped::GetOverlappedResult.
  HRESULT Result(OVERLAPPED* ov, BOOL wait);
  bool HasTag(uintptr_t tag);
  // Nothing pending, without the lock (a completion queue asks on every
  // completion whether a Notify waits). Exact for what was pended before the
  // caller's last synchronisation with the pending thread (Notify pends under
  // the engine lock that completions are pushed under); a request pended or
  // completed concurrently may or may not be seen, as with HasTag.
  bool Empty() const { return count_.load(std::memory_order_acquire) == 0; }

 private:
  struct Pending {
    OVERLAPPED* ov;
    std::function<void()> on_cancel;
    uintptr_t tag;
  };
  std::shared_ptr<OverlappedFile> file_;
  std::mutex mu_;
  std::deque<Pending> pending_;
  std::atomic<size_t> count_{0};  // pending_.size(), stored under mu_
};

// COM reference counting for an object with interfaces Ifaces...: the most
// derived class implements QueryInterface through Query().
class RefCount {
 public:
  ULONG Add() { return ++refs_; }
  ULONG Drop() { return --refs_; }
  ULONG Get() const { return refs_.load(); }
 private:
  std::atomic<ULONG> refs_{1};
};

#define ND2_REFCOUNT_METHODS(Class)                                       \
  ULONG STDMETHODCALLTYPE AddRef() override { return ref_.Add(); }          \
  ULONG STDMETHODCALLTYPE Release() override {                              \
    const ULONG r = ref_.Drop();                                            \
    if (r == 0) delete this;                                                \
    return r;                                                               \
  }

// sockaddr <-> stack address.
bool FromSockaddr(const sockaddr* a, ULONG len, wire::IpAddr* ip, uint16_t* port);
ULONG SockaddrLen(const wire::IpAddr& ip);
void ToSockaddr(const wire::IpAddr& ip, uint16_t port, sockaddr* out);

// ---- the provider: the process's adapters -------------------------------------------------------
// Set up by NdStartup from the configuration, torn down by the last NdCleanup.
class Provider final : public IND2Provider {
 public:
  // The open provider: null before NdStartup and after the last NdCleanup.
  static Provider* Get();
  // The provider while it lives: open, or closed with objects still alive
  // (their waits and polls still drive it).
  static Provider* Live();
  // An adapter's last object was released: a closed provider goes now.
  static void AdapterUnreferenced();
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void** ppv) override;
  // A reference is a startup (NdStartup); Release an NdCleanup.
  ULONG STDMETHODCALLTYPE AddRef() override;
  ULONG STDMETHODCALLTYPE Release() override;
  HRESULT STDMETHODCALLTYPE QueryAddressList(SOCKET_ADDRESS_LIST* list, ULONG* cb) override;
  HRESULT STDMETHODCALLTYPE ResolveAddress(const sockaddr* addr, ULONG len, UINT64* id) override;
  HRESULT STDMETHODCALLTYPE OpenAdapter(REFIID iid, UINT64 id, VOID** pp) override;

  const std::vector<std::unique_ptr<Adapter>>& adapters() const { return adapters_; }
  Adapter* FindByAddress(const wire::IpAddr& ip);
  // One pass of every inline adapter's engine (the progress hook). True if
  // anything moved.
  bool PollInline();
  // A wait's nap of up to ns on the inline adapters' RX interrupts (a frame
  // ends it; true then). *all_wake: every inline adapter has one, and this
  // thread slept on them (another thread already sleeping on them: a blind nap).
  bool SleepInline(uint64_t ns, bool* all_wake);

  static HRESULT Startup();
  static HRESULT Cleanup();

 private:
  std::vector<std::unique_ptr<Adapter>> adapters_;
  std::mutex sleep_mu_;  // SleepInline: the one thread sleeping on the interrupts
};

// IND2AdapterDiagnostics (diag.cc): a new tear-off of `a` in *ppv.
HRESULT CreateAdapterDiagnostics(Adapter* a, void** ppv);

// True if `peer` is in the subnet of the adapter's address of its family.
bool OnLink(const Adapter& a, const wire::IpAddr& peer);
// The local address the kernel's route to peer names (adapters on a kernel
// interface), if it is one of the adapter's.
std::optional<wire::IpAddr> SourceFor(const Adapter& a, const wire::IpAddr& peer);

// Writes a SOCKET_ADDRESS_LIST of `ips` (port 0) into list / *cb.
HRESULT FillAddressList(const std::vector<wire::IpAddr>& ips, SOCKET_ADDRESS_LIST* list, ULONG* cb);

// ---- adapter ------------------------------------------------------------------------------------
class Adapter final : public IND2Adapter {
 public:
  Adapter(const AdapterConfig& cfg, host::StackHost host, uint64_t id);
  ~Adapter();
  // COM: the provider owns adapters; references only count.
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void** ppv) override;
  ULONG STDMETHODCALLTYPE AddRef() override { return ref_.Add(); }
  // Back to the provider's own reference: a closed provider may go
  // (Provider::AdapterUnreferenced).
  ULONG STDMETHODCALLTYPE Release() override {
    const ULONG r = ref_.Drop();
    if (r == 1) Provider::AdapterUnreferenced();
    return r;
  }
  ULONG refs() const { return ref_.Get(); }

  HRESULT STDMETHODCALLTYPE CreateOverlappedFile(HANDLE* ph) override;
  HRESULT STDMETHODCALLTYPE Query(ND2_ADAPTER_INFO* info, ULONG* cb) override;
  HRESULT STDMETHODCALLTYPE QueryAddressList(SOCKET_ADDRESS_LIST* list, ULONG* cb) override;
  HRESULT STDMETHODCALLTYPE CreateCompletionQueue(REFIID iid, HANDLE file, ULONG depth, USHORT group,
                                                  KAFFINITY affinity, VOID** pp) override;
  HRESULT STDMETHODCALLTYPE CreateMemoryRegion(REFIID iid, HANDLE file, VOID** pp) override;
  HRESULT STDMETHODCALLTYPE CreateMemoryWindow(REFIID iid, VOID** pp) override;
  HRESULT STDMETHODCALLTYPE CreateSharedReceiveQueue(REFIID iid, HANDLE file, ULONG depth, ULONG max_sge,
                                                     ULONG threshold, USHORT group, KAFFINITY affinity,
                                                     VOID** pp) override;
  HRESULT STDMETHODCALLTYPE CreateQueuePair(REFIID iid, IUnknown* rcq, IUnknown* icq, VOID* ctx, ULONG rq_depth,
                                            ULONG iq_depth, ULONG max_rsge, ULONG max_isge, ULONG inline_size,
                                            VOID** pp) override;
  HRESULT STDMETHODCALLTYPE CreateQueuePairWithSrq(REFIID iid, IUnknown* rcq, IUnknown* icq, IUnknown* srq,
                                                   VOID* ctx, ULONG iq_depth, ULONG max_isge, ULONG inline_size,
                                                   VOID** pp) override;
  HRESULT STDMETHODCALLTYPE CreateConnector(REFIID iid, HANDLE file, VOID** pp) override;
  HRESULT STDMETHODCALLTYPE CreateListener(REFIID iid, HANDLE file, VOID** pp) override;

  engine::Engine& eng() { return *host_.eng; }
  uint64_t id() const { return id_; }
  // The adapter's addresses now (an af_xdp adapter's follow its interface).
  std::vector<wire::IpAddr> addrs() const;
  bool HasAddress(const wire::IpAddr& ip) const;
  bool inline_progress() const { return !cfg_.progress_thread; }
  const AdapterConfig& config() const { return cfg_; }
  // Inline: one engine pass (no-op for a thread adapter).
  size_t Progress();
  // Inline: the fd that becomes readable when a frame reaches the adapter's
  // port (Port::RxWaitFd), for a wait with nothing to do to sleep on; -1 if
  // the port has none (or the adapter has a thread). Arm before, disarm after.
  int RxWaitFd() { return cfg_.progress_thread ? -1 : eng().RxWaitFd(); }
  void ArmRxWait(bool on) { eng().ArmRxWait(on); }
  // Runs the engine until the CM owes its peers nothing (DREQs answered,
  // MADs and frames out) or timeout_ns passes (Engine::Linger).
  void Linger(uint64_t timeout_ns) { eng().Linger(timeout_ns); }
  // The process is exiting: every connection ends on the wire (DREQ, REJ),
  // every listener closes (ConnectionManager::ReleaseAll).
  void ReleaseConnections();
  // The progress thread stops (at exit, before static objects go).
  void StopProgress() { eng().Stop(); }
  // Work was posted (a WR, a CM request): a napping progress thread wakes.
  void Kick() {
    if (cfg_.progress_thread) eng().Kick();
  }
  // GetResults found nothing: a progress thread keeps spinning while the
  // application polls (it naps only once polling stops: waits, idle); with
  // progress_yield in effect the polling thread yields its CPU.
  void KeepAwake() {
    if (cfg_.progress_thread) eng().PollerIdle();
  }
  // The overlapped file for a HANDLE of this process (null if not one).
  static std::shared_ptr<OverlappedFile> FileOf(HANDLE h);

  // Registries the engine's callbacks use (hold the engine lock).
  void AddConnector(cm::ConnId id, Connector* c) { connectors_[id] = c; }
  void RemoveConnector(cm::ConnId id) { connectors_.erase(id); }
  void AddListener(cm::ListenerId id, Listener* l) { listeners_[id] = l; }
  void RemoveListener(cm::ListenerId id) { listeners_.erase(id); }
  void AddWindow(uint32_t token, MemoryWindow* w) { windows_[token] = w; }
  void RemoveWindow(uint32_t token, MemoryWindow* w);
  MemoryWindow* WindowByToken(uint32_t token);
  template <typename F>
  void ForEachWindow(F&& f) {
    for (auto& [token, w] : windows_) f(w);
  }
  // Connectors waiting for the peer's MAC (ARP/NDP): advanced on every
  // engine pass (engine lock held).
  void AddResolving(Connector* c) { resolving_.push_back(c); }
  void RemoveResolving(Connector* c);

 private:
  void OnPoll(uint64_t now);
  void OnCmEvent(cm::ConnId id, cm::Event e);
  void OnCmRequest(cm::ListenerId l);

  RefCount ref_;
  AdapterConfig cfg_;
  host::StackHost host_;
  uint64_t id_;
  absl::flat_hash_map<cm::ConnId, Connector*> connectors_;
  absl::flat_hash_map<cm::ListenerId, Listener*> listeners_;
  absl::flat_hash_map<uint32_t, MemoryWindow*> windows_;
  std::vector<Connector*> resolving_;
};

// ---- completion queue ----------------------------------------------------------------------------
// The notify affinity CQs and SRQs report: processor group 0 and the CPUs the
// calling thread may run on (Linux has no processor groups; notifications are
// processed by whichever thread drives the engine, so no narrower set is true).
KAFFINITY CallerAffinity();

class CompletionQueue final : public IND2CompletionQueue {
 public:
  CompletionQueue(Adapter* a, std::shared_ptr<OverlappedFile> f, ULONG depth);
  ~CompletionQueue();
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void** ppv) override;
  ND2_REFCOUNT_METHODS(CompletionQueue)
  HRESULT STDMETHODCALLTYPE CancelOverlappedRequests() override { return ov_.CancelAll(); }
  HRESULT STDMETHODCALLTYPE GetOverlappedResult(OVERLAPPED* ov, BOOL wait) override { return ov_.Result(ov, wait); }
  HRESULT STDMETHODCALLTYPE GetNotifyAffinity(USHORT* group, KAFFINITY* affinity) override;
  HRESULT STDMETHODCALLTYPE Resize(ULONG depth) override;
  HRESULT STDMETHODCALLTYPE Notify(ULONG type, OVERLAPPED* ov) override;
  ULONG STDMETHODCALLTYPE GetResults(ND2_RESULT results[], ULONG n) override;

  rc::CompletionQueue* rc_cq() { return cq_.get(); }
  Adapter* adapter() { return adapter_; }

 private:
  void OnPush(const rc::Completion& c);      // engine lock held
  void OnOverflow(const rc::Completion& c);  // engine lock held
  void Trigger(HRESULT status);              // engine lock held: completes every Notify
  RefCount ref_;
  Adapter* adapter_;
  OverlappedSet ov_;
  std::unique_ptr<rc::CompletionQueue> cq_;
  KAFFINITY affinity_;
  engine::FastMutex poll_mu_;         // one consumer at a time
  std::deque<ND2_RESULT> carry_;      // results made from one completion that did not fit
  // Notification (no lost wake-up, no double trigger). Completions are
  // numbered 1, 2, ... as they are pushed; `consumed_` is the number
  // GetResults has taken, `trigger_seq_` the number pushed when Notify
  // requests last completed. A Notify completes at once if a completion of
  // its kind was pushed after both; otherwise the next such push completes
  // it (and every other outstanding Notify: one event releases them all).
  uint64_t last_sol_or_err_ = 0, last_err_ = 0, trigger_seq_ = 0;  // engine lock
  std::atomic<uint64_t> consumed_{0};
  bool overrun_ = false;              // engine lock: a completion did not fit; the CQ is unusable
};

// ---- shared receive queue -----------------------------------------------------------------------
class SharedReceiveQueue final : public IND2SharedReceiveQueue {
 public:
  SharedReceiveQueue(Adapter* a, std::shared_ptr<OverlappedFile> f, ULONG depth, ULONG max_sge, ULONG threshold);
  ~SharedReceiveQueue();
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void** ppv) override;
  ND2_REFCOUNT_METHODS(SharedReceiveQueue)
  HRESULT STDMETHODCALLTYPE CancelOverlappedRequests() override { return ov_.CancelAll(); }
  HRESULT STDMETHODCALLTYPE GetOverlappedResult(OVERLAPPED* ov, BOOL wait) override { return ov_.Result(ov, wait); }
  HRESULT STDMETHODCALLTYPE GetNotifyAffinity(USHORT* group, KAFFINITY* affinity) override;
  HRESULT STDMETHODCALLTYPE Modify(ULONG depth, ULONG threshold) override;
  HRESULT STDMETHODCALLTYPE Notify(OVERLAPPED* ov) override;
  HRESULT STDMETHODCALLTYPE Receive(VOID* ctx, const ND2_SGE sge[], ULONG n) override;

  rc::ReceiveQueue* rq() { return rq_.get(); }
  ULONG max_sge() const { return max_sge_; }

  Adapter* adapter() { return adapter_; }
  // After the engine consumed receives (engine lock held): Notify at the threshold.
  void CheckThreshold();

 private:
  RefCount ref_;
  Adapter* adapter_;
  OverlappedSet ov_;
  // A thread adapter: Receive posts into rq_ (its producer side) under
  // post_mu_, not the engine lock; Modify holds both (Resize needs both sides).
  absl::Mutex post_mu_;
  std::unique_ptr<rc::ReceiveQueue> rq_;
  ULONG max_sge_;
  std::atomic<ULONG> threshold_;
  KAFFINITY affinity_;
};

// ---- memory ----------------------------------------------------------------------------------------
class MemoryRegion final : public IND2MemoryRegion {
 public:
  MemoryRegion(Adapter* a, std::shared_ptr<OverlappedFile> f);
  ~MemoryRegion();
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void** ppv) override;
  ND2_REFCOUNT_METHODS(MemoryRegion)
  HRESULT STDMETHODCALLTYPE CancelOverlappedRequests() override { return ov_.CancelAll(); }
  HRESULT STDMETHODCALLTYPE GetOverlappedResult(OVERLAPPED* ov, BOOL wait) override { return ov_.Result(ov, wait); }
  HRESULT STDMETHODCALLTYPE Register(const VOID* buf, SIZE_T len, ULONG flags, OVERLAPPED* ov) override;
  HRESULT STDMETHODCALLTYPE Deregister(OVERLAPPED* ov) override;
  UINT32 STDMETHODCALLTYPE GetLocalToken() override { return info_.local_token; }
  UINT32 STDMETHODCALLTYPE GetRemoteToken() override { return info_.remote_token; }

  Adapter* adapter() { return adapter_; }
  bool registered() const { return registered_; }
  const mem::RegionInfo& info() const { return info_; }
  uint64_t addr() const { return addr_; }
  uint64_t length() const { return length_; }
  ULONG flags() const { return flags_; }

 private:
  RefCount ref_;
  Adapter* adapter_;
  OverlappedSet ov_;
  bool registered_ = false;   // engine lock
  mem::RegionInfo info_{};
  uint64_t addr_ = 0, length_ = 0;
  ULONG flags_ = 0;
};

class MemoryWindow final : public IND2MemoryWindow {
 public:
  explicit MemoryWindow(Adapter* a);
  ~MemoryWindow();
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void** ppv) override;
  ND2_REFCOUNT_METHODS(MemoryWindow)
  UINT32 STDMETHODCALLTYPE GetRemoteToken() override { return token_; }

  Adapter* adapter() { return adapter_; }
  uint32_t handle() const { return handle_; }
  // Bind posts: the token the window will carry (valid from now on).
  uint32_t NewToken();  // engine lock held
  // A Bind that was not posted: the window keeps its previous token.
  void RestoreToken(uint32_t token);  // engine lock held
  uint32_t token() const { return token_; }
  // Bound in posting order (engine lock held): set when a Bind is posted,
  // cleared when an Invalidate is posted or the peer's SendAndInvalidate is
  // reported by GetResults. An Invalidate of a window that is not bound
  // completes ND_INVALID_DEVICE_REQUEST.
  bool bound() const { return bound_; }
  uint32_t bound_region() const { return bound_region_; }
  void SetBound(uint32_t region) {
    bound_ = true;
    bound_region_ = region;
  }
  void SetUnbound() {
    bound_ = false;
    bound_region_ = 0;
  }

 private:
  RefCount ref_;
  Adapter* adapter_;
  uint32_t handle_ = 0;
  uint32_t token_ = 0;
  bool bound_ = false;
  uint32_t bound_region_ = 0;
};

// ---- queue pair ----------------------------------------------------------------------------------
class QueuePair final : public IND2QueuePair, public IND2QueuePairSendAndInvalidate {
 public:
  QueuePair(Adapter* a, CompletionQueue* rcq, CompletionQueue* icq, SharedReceiveQueue* srq, VOID* ctx);
  ~QueuePair();
  HRESULT Init(const rc::QpCaps& caps);  // creates the stack's QP
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void** ppv) override;
  ULONG STDMETHODCALLTYPE AddRef() override { return ref_.Add(); }
  ULONG STDMETHODCALLTYPE Release() override;
  HRESULT STDMETHODCALLTYPE Flush() override;
  HRESULT STDMETHODCALLTYPE Send(VOID* ctx, const ND2_SGE sge[], ULONG n, ULONG flags) override;
  HRESULT STDMETHODCALLTYPE Receive(VOID* ctx, const ND2_SGE sge[], ULONG n) override;
  HRESULT STDMETHODCALLTYPE Bind(VOID* ctx, IUnknown* mr, IUnknown* mw, const VOID* buf, SIZE_T len,
                                 ULONG flags) override;
  HRESULT STDMETHODCALLTYPE Invalidate(VOID* ctx, IUnknown* mw, ULONG flags) override;
  HRESULT STDMETHODCALLTYPE Read(VOID* ctx, const ND2_SGE sge[], ULONG n, UINT64 raddr, UINT32 rkey,
                                 ULONG flags) override;
  HRESULT STDMETHODCALLTYPE Write(VOID* ctx, const ND2_SGE sge[], ULONG n, UINT64 raddr, UINT32 rkey,
                                  ULONG flags) override;
  HRESULT STDMETHODCALLTYPE SendAndInvalidate(VOID* ctx, const ND2_SGE sge[], ULONG n, UINT32 rtoken,
                                              ULONG flags) override;

  Adapter* adapter() { return adapter_; }
  rc::QueuePair* rc_qp() { return qp_; }
  bool has_srq() const { return srq_ != nullptr; }
  // The connector using this QP (a released QP disconnects it).
  void SetConnector(Connector* c) { connector_ = c; }
  Connector* connector() { return connector_; }

 private:
  HRESULT PostInitiator(rc::SendWr& w, const ND2_SGE sge[], ULONG n, ULONG flags, ULONG allowed,
                        HRESULT bad_flags);
  // Any request (PostInitiator's general case): out of line, its frame
  // holds the scratch SGEs and the inline copy.
  __attribute__((noinline)) HRESULT PostGeneral(rc::SendWr& w, const ND2_SGE sge[], ULONG n, ULONG flags,
                                                ULONG allowed, HRESULT bad_flags);
  // Inline progress: `w` posted now under the engine lock.
  HRESULT PostNow(const rc::SendWr& w);
  // Posting rings (a thread adapter; qp.cc): requests are checked and queued
  // here by the posting thread, taken into the stack by whoever holds the
  // engine lock (its thread at the start of every pass, or a poster that must
  // come after them). Inline adapters post straight into the stack instead.
  HRESULT RingSend(const rc::SendWr& w) ABSL_LOCKS_EXCLUDED(post_mu_);
  HRESULT RingReceive(const rc::RecvWr& w) ABSL_LOCKS_EXCLUDED(post_mu_);
  // Queue pair state allows initiator requests (connected, or in error: flushed).
  bool InitiatorReady() ABSL_EXCLUSIVE_LOCKS_REQUIRED(post_mu_);
  size_t DrainPosts();  // engine lock held
  struct Drainer final : engine::PostSource {
    explicit Drainer(QueuePair* q) : qp(q) {}
    size_t DrainPosts() override { return qp->DrainPosts(); }
    QueuePair* qp;
  };
  RefCount ref_;
  Adapter* adapter_;
  CompletionQueue* rcq_;
  CompletionQueue* icq_;
  SharedReceiveQueue* srq_;
  VOID* ctx_;
  rc::QueuePair* qp_ = nullptr;
  rc::QpCaps caps_;
  Connector* connector_ = nullptr;
  // ---- posting rings (thread adapters only) ----
  bool rings_ = false;
  Drainer drainer_{this};
  // Application threads posting to this queue pair take turns here (the
  // rings have one producer); never held while waiting for the engine lock
  // except by Bind / Invalidate / Flush, which take it after this one.
  absl::Mutex post_mu_;
  // Requests ever queued (rings and direct), against the stack's retired /
  // taken counts: the queue is full at caps_ depth, exactly as in the stack.
  uint64_t sends_posted_ ABSL_GUARDED_BY(post_mu_) = 0;
  uint64_t recvs_posted_ ABSL_GUARDED_BY(post_mu_) = 0;
  bool ready_ ABSL_GUARDED_BY(post_mu_) = false;  // RTS or Error seen (never goes back)
  std::unique_ptr<engine::SpscIndex> send_ring_, recv_ring_;
  std::vector<rc::SendWr> send_wr_;      // per send slot
  std::vector<rc::Sge> send_sge_;        // max_send_sge per send slot
  std::vector<uint8_t> send_inline_;     // max_inline per send slot
  std::vector<rc::RecvWr> recv_wr_;
  std::vector<rc::Sge> recv_sge_;        // max_recv_sge per receive slot
};

// ---- connector / listener -----------------------------------------------------------------------
class Connector final : public IND2Connector {
 public:
  Connector(Adapter* a, std::shared_ptr<OverlappedFile> f);
  ~Connector();
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void** ppv) override;
  ND2_REFCOUNT_METHODS(Connector)
  HRESULT STDMETHODCALLTYPE CancelOverlappedRequests() override;
  HRESULT STDMETHODCALLTYPE GetOverlappedResult(OVERLAPPED* ov, BOOL wait) override { return ov_.Result(ov, wait); }
  HRESULT STDMETHODCALLTYPE Bind(const sockaddr* addr, ULONG len) override;
  HRESULT STDMETHODCALLTYPE Connect(IUnknown* qp, const sockaddr* dest, ULONG len, ULONG in_rl, ULONG out_rl,
                                    const VOID* pd, ULONG pd_len, OVERLAPPED* ov) override;
  HRESULT STDMETHODCALLTYPE CompleteConnect(OVERLAPPED* ov) override;
  HRESULT STDMETHODCALLTYPE Accept(IUnknown* qp, ULONG in_rl, ULONG out_rl, const VOID* pd, ULONG pd_len,
                                   OVERLAPPED* ov) override;
  HRESULT STDMETHODCALLTYPE Reject(const VOID* pd, ULONG pd_len) override;
  HRESULT STDMETHODCALLTYPE GetReadLimits(ULONG* in_rl, ULONG* out_rl) override;
  HRESULT STDMETHODCALLTYPE GetPrivateData(VOID* pd, ULONG* len) override;
  HRESULT STDMETHODCALLTYPE GetLocalAddress(sockaddr* addr, ULONG* len) override;
  HRESULT STDMETHODCALLTYPE GetPeerAddress(sockaddr* addr, ULONG* len) override;
  HRESULT STDMETHODCALLTYPE NotifyDisconnect(OVERLAPPED* ov) override;
  HRESULT STDMETHODCALLTYPE Disconnect(OVERLAPPED* ov) override;

  // Engine lock held.
  void OnEvent(cm::Event e);
  // A listener hands this connector a request (engine lock held).
  void TakeRequest(const cm::ConnRequest& r);
  // May GetConnectionRequest use this connector? ND_SUCCESS or why not (engine lock held).
  HRESULT CanTakeRequest() const;
  // The QP is going away: disconnect without waiting (engine lock held).
  void QpReleased();
  // The listener whose GetConnectionRequest this connector waits in (engine lock held).
  void SetWaitingOn(Listener* l) { waiting_on_ = l; }
  // Resolving the peer (engine lock held): one lookup step; sends the REQ
  // once the MAC is known, fails the Connect with ND_HOST_UNREACHABLE when
  // it cannot be. True when no longer resolving.
  bool AdvanceResolve(uint64_t now);
  Adapter* adapter() { return adapter_; }
  cm::ConnId conn_id() const { return conn_; }  // engine lock held (diag.cc)

  // How long a Connect waits for ARP/NDP (the neighbor table's own
  // resolution time: three requests one second apart).
  static constexpr uint64_t kResolveTimeoutNs = 3'000'000'000ull;

 private:
  enum class State : uint8_t { kIdle, kBound, kResolving, kConnecting, kConnected, kRequested, kAccepting, kEstablished,
                               kDisconnecting, kDisconnected, kRejected, kAborted, kFailed };
  static constexpr uintptr_t kTagConnect = 1, kTagAccept = 2, kTagNotifyDisconnect = 3, kTagDisconnect = 4,
                             kTagComplete = 5;
  void Unbind();  // engine lock held
  RefCount ref_;
  Adapter* adapter_;
  OverlappedSet ov_;
  State state_ = State::kIdle;
  wire::IpAddr local_ip_;
  uint16_t local_port_ = 0;
  bool port_bound_ = false;
  cm::ConnId conn_ = cm::kNoConn;
  QueuePair* qp_ = nullptr;   // not AddRef'd: a released QP tells us (QpReleased)
  cm::ConnRequest request_;
  cm::ConnectParams connect_;       // kResolving: the REQ to send
  uint64_t resolve_deadline_ = 0;
  bool peer_disconnected_ = false;
  Listener* waiting_on_ = nullptr;
  bool retry_ok_ = false;          // a failed Connect may be retried on this connector
  bool qp_gone_ = false;           // the application released the QP while we used it
  bool have_peer_limits_ = false;  // the peer's read limits / private data arrived
  // connector.cc helpers (engine lock held).
  void DetachQp();
  void ForgetConn();
};

class Listener final : public IND2Listener {
 public:
  Listener(Adapter* a, std::shared_ptr<OverlappedFile> f);
  ~Listener();
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void** ppv) override;
  ND2_REFCOUNT_METHODS(Listener)
  HRESULT STDMETHODCALLTYPE CancelOverlappedRequests() override;
  HRESULT STDMETHODCALLTYPE GetOverlappedResult(OVERLAPPED* ov, BOOL wait) override { return ov_.Result(ov, wait); }
  HRESULT STDMETHODCALLTYPE Bind(const sockaddr* addr, ULONG len) override;
  HRESULT STDMETHODCALLTYPE Listen(ULONG backlog) override;
  HRESULT STDMETHODCALLTYPE GetLocalAddress(sockaddr* addr, ULONG* len) override;
  HRESULT STDMETHODCALLTYPE GetConnectionRequest(IUnknown* connector, OVERLAPPED* ov) override;

  void OnRequest();  // engine lock held
  // A connector that waits here is going away (engine lock held).
  void Forget(Connector* c);

 private:
  void Serve();  // engine lock held: hand pending requests to waiting connectors
  RefCount ref_;
  Adapter* adapter_;
  OverlappedSet ov_;
  wire::IpAddr ip_;
  uint16_t port_ = 0;
  bool bound_ = false;
  bool any_v4_ = false;  // bound with a sockaddr_in (GetLocalAddress's family)
  cm::ListenerId lid_ = 0;
  bool listening_ = false;
  struct Waiter {
    Connector* connector;  // not AddRef'd (see GetConnectionRequest)
    OVERLAPPED* ov;
  };
  std::deque<Waiter> waiters_;
};

// The object of ours behind an interface an application passes in (a QP, a
// memory region or window, a connector): T if `u` answers `iid` with one of
// our T on adapter `a`, else nullptr (another provider's object, another
// adapter's, or null). The reference QueryInterface took is dropped.
template <typename T, typename I>
T* OursOf(IUnknown* u, REFIID iid, Adapter* a) {
  if (!u) return nullptr;
  I* i = nullptr;
  if (u->QueryInterface(iid, reinterpret_cast<void**>(&i)) != S_OK || !i) return nullptr;
  T* t = dynamic_cast<T*>(i);
  i->Release();
  if (!t || t->adapter() != a) return nullptr;
  return t;
}

}  // namespace roce::nd2
