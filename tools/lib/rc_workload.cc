// SPDX-License-Identifier: MIT
#include "tools/lib/rc_workload.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <random>

#include <absl/strings/str_format.h>

#include "stack/mem/memory_table.h"

namespace roce::sim {

void Accumulate(rc::QpCounters& a, const rc::QpCounters& b) { a.Add(b); }

namespace {

using namespace roce::rc;

// A buffer with guard zones on both sides. The whole allocation starts with
// a pattern that is a pure function of (seed, position), so any part can be
// checked later without keeping a copy; guards must keep it forever.
class GBuf {
 public:
  static constexpr size_t kGuard = 64;
  GBuf(size_t size, uint64_t pattern_seed) : seed(pattern_seed), size_(size), words_((size + 2 * kGuard + 7) / 8) {
    for (size_t i = 0; i < words_.size(); i++) words_[i] = Word(i);
  }
  uint8_t* data() { return bytes() + kGuard; }
  const uint8_t* data() const { return bytes() + kGuard; }
  uint64_t addr() const { return reinterpret_cast<uint64_t>(data()); }
  size_t size() const { return size_; }
  bool GuardsOk() const { return Intact(0, kGuard) && Intact(kGuard + size_, kGuard); }
  // Buffer bytes [from, size) still hold the initial pattern.
  bool TailUntouched(size_t from) const { return Intact(kGuard + from, size_ - from); }
  bool Untouched() const { return TailUntouched(0); }
  // Every buffer byte i still holds the initial pattern or, for i < n, expect[i].
  bool UntouchedOr(const uint8_t* expect, size_t n) const {
    const uint8_t* b = bytes();
    for (size_t i = 0; i < size_; i++) {
      const size_t j = kGuard + i;
      if (b[j] != static_cast<uint8_t>(Word(j / 8) >> (8 * (j & 7))) && !(i < n && b[j] == expect[i]))
        return false;
    }
    return true;
  }
  mem::RegionInfo reg{};
  const uint64_t seed;

 private:
  uint64_t Word(size_t i) const {
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 1;  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint8_t* bytes() { return reinterpret_cast<uint8_t*>(words_.data()); }
  const uint8_t* bytes() const { return reinterpret_cast<const uint8_t*>(words_.data()); }
  // Allocation bytes [off, off+len) hold the pattern.
  bool Intact(size_t off, size_t len) const {
    const uint8_t* b = bytes();
    size_t i = off;
    const size_t end = off + len;
    for (; i < end && (i & 7); i++)
      if (b[i] != static_cast<uint8_t>(Word(i / 8) >> (8 * (i & 7)))) return false;
    for (; i + 8 <= end; i += 8) {
      uint64_t w;
      std::memcpy(&w, b + i, 8);
      if (w != Word(i / 8)) return false;
    }
    for (; i < end; i++)
      if (b[i] != static_cast<uint8_t>(Word(i / 8) >> (8 * (i & 7)))) return false;
    return true;
  }
  size_t size_;
  std::vector<uint64_t> words_;
};

enum class ErrKind { kNone, kBadToken, kStale, kPastEnd, kNoRight, kTooSmall, kLocalProt };

struct OpRec {
  uint64_t id = 0, seq = 0;
  WrOp op = WrOp::kSend;
  uint32_t len = 0, flags = 0;
  uint64_t src_off = 0;
  uint64_t target_off = 0;          // write/read: offset in target
  uint32_t rkey = 0;                // write/read: token used
  ErrKind err = ErrKind::kNone;     // this is the predicted failing op
  Status expect = Status::kSuccess;
  std::unique_ptr<GBuf> sink;       // read
  std::vector<uint8_t> read_expect;
  uint32_t inv_token = 0;           // send with invalidate
  bool recv_too_small = false;
  // outcomes
  bool i_done = false, r_done = false;
  Status i_status = Status::kSuccess, r_status = Status::kSuccess;
  bool IsSend() const { return op == WrOp::kSend || op == WrOp::kSendWithInvalidate; }
};
using OpPtr = std::shared_ptr<OpRec>;

struct Win {
  uint32_t handle = 0;
  bool bound = false;
  uint32_t token = 0;
  uint64_t off = 0, len = 0;
  uint32_t access = 0;
  std::vector<uint32_t> stale;  // tokens this window had before
};

struct Host {
  SimNode* node = nullptr;
  std::unique_ptr<CompletionQueue> scq, rcq;
  std::unique_ptr<ReceiveQueue> srq;
  std::map<uint64_t, std::unique_ptr<GBuf>> srq_bufs;  // posted SRQ receives by id
  uint32_t srq_users = 0;
  uint64_t srq_hold_until = 0;  // refills paused until then (RNR)
};

struct PostedRecv {
  uint64_t id;
  std::unique_ptr<GBuf> buf;
};

struct Pair {
  int id = 0;
  Host* hi = nullptr;
  Host* hr = nullptr;
  QueuePair* qi = nullptr;
  QueuePair* qr = nullptr;
  bool srq = false;
  uint32_t mtu = 1024;
  std::unique_ptr<GBuf> src, target;
  std::vector<uint8_t> shadow;  // expected target content
  std::deque<OpPtr> ops;        // posted on qi, awaiting its completion (in order)
  std::deque<OpPtr> sends;      // sends awaiting the responder's receive completion
  struct PendingRecv {
    uint64_t not_before;
    uint32_t size;
  };
  std::deque<PendingRecv> recv_pending;  // non-SRQ: receives to post, in order
  std::deque<PostedRecv> recv_posted;    // non-SRQ: posted, in order
  std::vector<Win> windows;
  enum class Phase { kRun, kDrain, kMaint, kFailed, kDone } phase = Phase::kRun;
  uint32_t to_quiesce = 0;
  OpPtr fail;                   // predicted failing op
  bool failure_seen = false;    // a non-success completion arrived on qi
  bool tainted = false;         // an unexpected outcome: resynchronize at teardown
  uint32_t maint_pending = 0;
  uint64_t seq = 0;
  std::vector<std::pair<uint64_t, uint64_t>> ambiguous;  // target ranges that may or may not be written
};

class Workload {
 public:
  explicit Workload(const WorkloadConfig& c)
      : cfg_(c),
        rng_(c.seed),
        net_(c.seed ^ 0x5EED, c.imp, c.ipv6),
        kSrcSize(std::max<size_t>(2u << 20, c.max_size)),
        kTargetSize(std::max<size_t>(4u << 20, 2 * size_t{c.max_size})) {}
  WorkloadResult Run();

 private:
  // setup
  void Setup();
  void CreateQps(Pair& p);
  void Connect(Pair& p);
  // driving
  void Drive(Pair& p);
  void PostDueRecvs(Pair& p, bool all);
  void RefillSrq(Host& h);
  void GenerateOp(Pair& p, bool allow_error);
  bool ChooseRemote(Pair& p, uint32_t len, uint32_t need, uint64_t* off, uint32_t* rkey);
  void StartMaintenance(Pair& p);
  void Teardown(Pair& p);
  // checking
  size_t PollAll();  // returns completions handled
  void OnInitiatorCompletion(Pair& p, const Completion& c);
  void OnResponderSendCompletion(Pair& p, const Completion& c);
  void OnRecvCompletion(Pair& p, const Completion& c, GBuf* buf);
  void FinishOp(Pair& p, OpRec& op);
  void CheckSendPair(Pair& p, OpRec& op);
  void VerifyMemory(Pair& p);
  void Fail(Pair& p, const std::string& what);

  uint64_t Rand(uint64_t n) { return n ? rng_() % n : 0; }
  bool Coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  uint32_t RandomSize();
  uint64_t NextSeed() { return ++seed_counter_; }

  WorkloadConfig cfg_;
  std::mt19937_64 rng_;
  SimNetwork net_;
  Host hosts_[2];
  std::vector<Pair> pairs_;
  WorkloadResult res_;
  uint64_t issued_ = 0, checked_ = 0, next_id_ = 1, seed_counter_ = 1000;
  rc::QpCounters retired_;
  uint64_t last_progress_ns_ = 0;
  // Each pair's source and target buffers: room for the largest message.
  const size_t kSrcSize, kTargetSize;
};

constexpr uint32_t kWindows = 4;
constexpr uint64_t kMsNs = 1'000'000;

uint32_t Workload::RandomSize() {
  const uint32_t max = cfg_.max_size;
  if (cfg_.min_size) {
    const uint32_t lo = std::min(cfg_.min_size, max);
    return lo + static_cast<uint32_t>(Rand(uint64_t{max} - lo + 1));
  }
  const uint64_t r = Rand(1000);
  uint64_t hi;
  if (r < 450) hi = 256;
  else if (r < 800) hi = 4096;
  else if (r < 960) hi = 65536;
  else if (r < 995) hi = 262144;
  else hi = max;
  hi = std::min<uint64_t>(hi, max);
  if (Rand(50) == 0) return Rand(2) ? 0 : static_cast<uint32_t>(hi);  // edges
  return static_cast<uint32_t>(Rand(hi + 1));
}

void Workload::Setup() {
  RcDevice::Config dc;
  dc.max_qps = 4 * cfg_.qps + 8;
  dc.mem_seed = cfg_.seed + 17;
  dc.tuning.max_unacked_psns = cfg_.window_psns;
  dc.tuning.ack_req_every = std::max<uint32_t>(cfg_.window_psns / 2, 1);
  dc.tuning.ooo_window = cfg_.ooo_window;
  if (!cfg_.repair) {
    dc.tuning.ooo_window = 0;
    dc.tuning.selective_repair = false;
  }
  if (cfg_.events) {
    dc.event_hook = [this](uint32_t qpn, const char* e, uint64_t a, uint64_t b) {
      std::fprintf(cfg_.events, "%12.3f qp=%06x %s %llu %llu (0x%llx)\n", net_.now() / 1e3, qpn, e,
                   static_cast<unsigned long long>(a), static_cast<unsigned long long>(b),
                   static_cast<unsigned long long>(b));
    };
  }
  dc.fatal_hook = [this](const QueuePair& qp, const char* why) {
    if (res_.qp_failures.size() < 8)
      res_.qp_failures.push_back(absl::StrFormat("t=%.3fms %s: %s", net_.now() / 1e6, why, qp.DebugState()));
  };
  for (int h = 0; h < 2; h++) {
    hosts_[h].node = net_.AddNode(h ? "b" : "a", dc);
    hosts_[h].scq = std::make_unique<CompletionQueue>(1u << 16);
    hosts_[h].rcq = std::make_unique<CompletionQueue>(1u << 16);
    hosts_[h].srq = std::make_unique<ReceiveQueue>(16, 4);
  }
  pairs_.resize(cfg_.qps);
  for (uint32_t i = 0; i < cfg_.qps; i++) {
    Pair& p = pairs_[i];
    p.id = static_cast<int>(i);
    p.hi = &hosts_[i % 2];
    p.hr = &hosts_[(i + 1) % 2];
    p.srq = i % 3 == 2;
    if (p.srq) p.hr->srq_users++;
    static constexpr uint32_t kMtus[] = {256, 512, 1024, 2048, 4096};
    p.mtu = cfg_.path_mtu ? cfg_.path_mtu : kMtus[Rand(5)];
    p.src = std::make_unique<GBuf>(kSrcSize, NextSeed());
    p.target = std::make_unique<GBuf>(kTargetSize, NextSeed());
    p.shadow.assign(p.target->data(), p.target->data() + kTargetSize);
    mem::MemoryTable& mi = p.hi->node->dev().memory();
    mem::MemoryTable& mr = p.hr->node->dev().memory();
    mi.RegisterRegion(p.src->addr(), kSrcSize, 0, &p.src->reg);
    mr.RegisterRegion(p.target->addr(), kTargetSize,
                      mem::kLocalWrite | mem::kRemoteRead | mem::kRemoteWrite, &p.target->reg);
    p.windows.resize(kWindows);
    for (Win& w : p.windows) mr.CreateWindow(&w.handle);
    CreateQps(p);
    Connect(p);
    p.phase = Pair::Phase::kMaint;
    StartMaintenance(p);
  }
}

void Workload::CreateQps(Pair& p) {
  QpCaps caps;
  caps.sq_depth = cfg_.max_outstanding + 8;
  caps.rq_depth = cfg_.max_outstanding + 8;
  caps.max_send_sge = 8;
  caps.max_recv_sge = 4;
  caps.max_inline = 64;
  p.qi = p.hi->node->dev().CreateQp(caps, p.hi->scq.get(), p.hi->rcq.get(), nullptr,
                                    uint64_t(p.id) << 1);
  p.qr = p.hr->node->dev().CreateQp(caps, p.hr->scq.get(), p.hr->rcq.get(),
                                    p.srq ? p.hr->srq.get() : nullptr, (uint64_t(p.id) << 1) | 1);
}

void Workload::Connect(Pair& p) {
  const uint32_t psn_i = static_cast<uint32_t>(rng_() & 0xFFFFFF);
  const uint32_t psn_r = static_cast<uint32_t>(rng_() & 0xFFFFFF);
  for (int side = 0; side < 2; side++) {
    QueuePair* q = side ? p.qr : p.qi;
    QueuePair* peer = side ? p.qi : p.qr;
    SimNode* me = side ? p.hr->node : p.hi->node;
    SimNode* other = side ? p.hi->node : p.hr->node;
    q->ToInit();
    QpAttr a;
    a.path_mtu = p.mtu;
    a.dest_qpn = peer->qpn();
    a.sq_psn = side ? psn_r : psn_i;
    a.rq_psn = side ? psn_i : psn_r;
    a.max_rd_atomic = 8;
    a.max_dest_rd_atomic = 8;
    a.timeout = cfg_.ack_timeout;
    a.retry_cnt = 7;
    a.rnr_retry = 7;      // infinite
    a.min_rnr_timer = 3;  // 30 us
    a.path = me->PathTo(*other, Rand(4) == 0 ? 0x02 : 0);
    a.peer_repairs = true;  // both ends are this stack
    q->ToRtr(a);
  }
  p.qi->ToRts(net_.now());
  p.qr->ToRts(net_.now());
}

// ---- generation ----------------------------------------------------------------------

bool Workload::ChooseRemote(Pair& p, uint32_t len, uint32_t need, uint64_t* off, uint32_t* rkey) {
  if (Coin(0.5)) {
    std::vector<Win*> ok;
    for (Win& w : p.windows)
      if (w.bound && (w.access & need) == need && w.len >= len) ok.push_back(&w);
    if (!ok.empty()) {
      Win* w = ok[Rand(ok.size())];
      *off = w->off + Rand(w->len - len + 1);
      *rkey = w->token;
      return true;
    }
  }
  *off = Rand(kTargetSize - len + 1);
  *rkey = p.target->reg.remote_token;
  return true;
}

void Workload::GenerateOp(Pair& p, bool allow_error) {
  auto op = std::make_shared<OpRec>();
  op->id = next_id_++;
  op->seq = ++p.seq;
  const uint64_t kind = Rand(100);
  op->op = kind < 30 ? WrOp::kSend : kind < 35 ? WrOp::kSendWithInvalidate
           : kind < 68 ? WrOp::kWrite : WrOp::kRead;
  if (cfg_.ops) {
    // Only the operations asked for: the one drawn if it is one of them,
    // else one of them by the same draw.
    const uint32_t bit = kind < 35 ? kOpSend : kind < 68 ? kOpWrite : kOpRead;
    if (!(cfg_.ops & bit)) {
      std::vector<WrOp> allowed;
      if (cfg_.ops & kOpSend) allowed.push_back(WrOp::kSend);
      if (cfg_.ops & kOpWrite) allowed.push_back(WrOp::kWrite);
      if (cfg_.ops & kOpRead) allowed.push_back(WrOp::kRead);
      op->op = allowed[kind % allowed.size()];
    }
  }
  op->len = RandomSize();
  if (Coin(0.1)) op->flags |= kSilentSuccess;
  if (Coin(0.05)) op->flags |= kReadFence;
  if (Coin(0.1)) op->flags |= kSolicited;
  op->src_off = Rand(kSrcSize - op->len + 1);

  // Deliberate error?
  ErrKind err = ErrKind::kNone;
  if (allow_error && op->len > 0 && Coin(cfg_.error_rate)) {
    std::vector<ErrKind> kinds = {ErrKind::kBadToken, ErrKind::kPastEnd, ErrKind::kLocalProt};
    bool have_stale = false, have_ro = false, have_wo = false;
    for (Win& w : p.windows) {
      have_stale |= !w.stale.empty();
      have_ro |= w.bound && w.access == mem::kRemoteRead && w.len >= op->len;
      have_wo |= w.bound && w.access == mem::kRemoteWrite && w.len >= op->len;
    }
    if (have_stale) kinds.push_back(ErrKind::kStale);
    if (have_ro || have_wo) kinds.push_back(ErrKind::kNoRight);
    if (!p.srq) kinds.push_back(ErrKind::kTooSmall);
    err = kinds[Rand(kinds.size())];
    if (err == ErrKind::kTooSmall) op->op = WrOp::kSend;
    if (err == ErrKind::kNoRight) op->op = have_ro ? WrOp::kWrite : WrOp::kRead;
    if (err == ErrKind::kBadToken || err == ErrKind::kStale || err == ErrKind::kPastEnd)
      op->op = Coin(0.5) ? WrOp::kWrite : WrOp::kRead;
  }
  if (op->op == WrOp::kSendWithInvalidate) {
    std::vector<Win*> bound;
    for (Win& w : p.windows)
      if (w.bound) bound.push_back(&w);
    if (bound.empty()) {
      op->op = WrOp::kSend;
    } else {
      Win* w = bound[Rand(bound.size())];
      op->inv_token = w->token;
      // An outstanding Read of this window could still need its data (a
      // replay after a lost response): the invalidation waits for it.
      for (const OpPtr& o : p.ops)
        if (o->op == WrOp::kRead && !o->i_done && o->rkey == w->token) op->flags |= kReadFence;
      w->stale.push_back(w->token);
      w->bound = false;  // invalid for everything posted after this
    }
  }

  // Local SGEs over the source range (Send/Write) or a fresh sink (Read).
  Sge sges[8];
  uint32_t nsge = 0;
  uint64_t local_base;
  uint32_t lkey;
  if (op->op == WrOp::kRead) {
    op->sink = std::make_unique<GBuf>(op->len, NextSeed());
    p.hi->node->dev().memory().RegisterRegion(
        op->sink->addr(), std::max<uint32_t>(op->len, 1),
        Coin(0.5) ? uint32_t{mem::kLocalWrite} : uint32_t{mem::kReadSink}, &op->sink->reg);
    local_base = op->sink->addr();
    lkey = op->sink->reg.local_token;
  } else {
    local_base = p.src->addr() + op->src_off;
    lkey = p.src->reg.local_token;
  }
  {
    uint32_t left = op->len;
    uint64_t a = local_base;
    const uint32_t max_sge = 1 + static_cast<uint32_t>(Rand(8));
    while (nsge < max_sge && (left > 0 || nsge == 0)) {
      uint32_t take = (nsge + 1 == max_sge) ? left : static_cast<uint32_t>(Rand(left + 1));
      sges[nsge++] = {a, take, lkey};
      a += take;
      left -= take;
    }
    if (left) sges[nsge - 1].length += left;
  }
  if (err == ErrKind::kLocalProt) {  // on an SGE that carries bytes (empty ones are not checked)
    uint32_t i = static_cast<uint32_t>(Rand(nsge));
    while (sges[i].length == 0) i = (i + 1) % nsge;
    sges[i].lkey ^= 1;
  }
  if (op->op != WrOp::kRead && op->len <= 64 && err == ErrKind::kNone && Coin(0.3))
    op->flags |= kInline;

  SendWr wr;
  wr.context = op->id;
  wr.op = op->op;
  wr.flags = op->flags;
  wr.sge = sges;
  wr.num_sge = op->len == 0 && Coin(0.5) ? 0 : nsge;
  wr.invalidate_rkey = op->inv_token;

  if (op->op == WrOp::kWrite || op->op == WrOp::kRead) {
    const uint32_t need = op->op == WrOp::kWrite ? uint32_t{mem::kRemoteWrite} : uint32_t{mem::kRemoteRead};
    uint64_t off;
    uint32_t rkey;
    ChooseRemote(p, op->len, need, &off, &rkey);
    switch (err) {
      case ErrKind::kBadToken:
        rkey ^= 1u << static_cast<uint32_t>(Rand(mem::kKeyBits));
        break;
      case ErrKind::kStale: {
        std::vector<uint32_t> st;
        for (Win& w : p.windows) st.insert(st.end(), w.stale.begin(), w.stale.end());
        rkey = st[Rand(st.size())];
        break;
      }
      case ErrKind::kPastEnd: {
        Win* w = nullptr;
        for (Win& x : p.windows)
          if (x.bound && (x.access & need) && x.len >= op->len) w = &x;
        if (w && Coin(0.7)) {
          off = w->off + w->len - op->len + 1;
          rkey = w->token;
        } else if (op->len <= kTargetSize) {
          off = kTargetSize - op->len + 1;
          rkey = p.target->reg.remote_token;
        }
        break;
      }
      case ErrKind::kNoRight:
        for (Win& w : p.windows)
          if (w.bound && w.access == (op->op == WrOp::kWrite ? mem::kRemoteRead : mem::kRemoteWrite) &&
              w.len >= op->len) {
            off = w.off + Rand(w.len - op->len + 1);
            rkey = w.token;
            break;
          }
        break;
      default:
        break;
    }
    op->target_off = off;
    op->rkey = rkey;
    wr.remote_addr = p.target->addr() + off;
    wr.rkey = rkey;
    // A Write over data an outstanding Read still has to return waits for it.
    if (op->op == WrOp::kWrite && err == ErrKind::kNone) {
      for (const OpPtr& o : p.ops)
        if (o->op == WrOp::kRead && !o->i_done && o->target_off < off + op->len &&
            off < o->target_off + o->len)
          wr.flags = op->flags |= kReadFence;
    }
  }
  if (err != ErrKind::kNone) {
    op->err = err;
    op->expect = err == ErrKind::kTooSmall ? Status::kDataError : Status::kAccessViolation;
    p.fail = op;
    res_.errors_injected++;
  }

  // Model effects, in posting order.
  if (op->op == WrOp::kRead && (err == ErrKind::kNone || err == ErrKind::kPastEnd)) {
    // (one past the end: what the range holds before its end)
    const uint64_t n = err == ErrKind::kNone ? op->len : std::min<uint64_t>(op->len - 1, kTargetSize - op->target_off);
    op->read_expect.assign(p.shadow.begin() + static_cast<long>(op->target_off),
                           p.shadow.begin() + static_cast<long>(op->target_off + n));
  }
  if (op->op == WrOp::kWrite && err == ErrKind::kNone && op->len) {
    std::memcpy(p.shadow.data() + op->target_off, p.src->data() + op->src_off, op->len);
  }
  if (op->IsSend() && err != ErrKind::kLocalProt) {
    uint32_t rsize = op->len + static_cast<uint32_t>(Rand(2) ? 0 : Rand(64));
    if (err == ErrKind::kTooSmall) {
      rsize = static_cast<uint32_t>(Rand(op->len));
      op->recv_too_small = true;
    }
    if (!p.srq) {
      const uint64_t late = Coin(cfg_.late_recv) ? 20'000 + Rand(300'000) : 0;
      if (late) res_.rnr_waits++;
      p.recv_pending.push_back({net_.now() + late, rsize});
    }
    p.sends.push_back(op);
  }
  const PostResult pr = p.qi->PostSend(wr);
  if (pr != PostResult::kOk) {
    Fail(p, absl::StrFormat("post failed: %s", PostResultName(pr)));
    return;
  }
  p.ops.push_back(op);
  issued_++;
}

void Workload::PostDueRecvs(Pair& p, bool all) {
  while (!p.recv_pending.empty() && (all || p.recv_pending.front().not_before <= net_.now())) {
    const uint32_t size = p.recv_pending.front().size;
    p.recv_pending.pop_front();
    PostedRecv r;
    r.id = next_id_++;
    r.buf = std::make_unique<GBuf>(size, NextSeed());
    p.hr->node->dev().memory().RegisterRegion(r.buf->addr(), std::max<uint32_t>(size, 1),
                                              mem::kLocalWrite, &r.buf->reg);
    // Scatter the receive over up to 4 SGEs.
    Sge s[4];
    uint32_t n = 0, left = size;
    uint64_t a = r.buf->addr();
    const uint32_t want = 1 + static_cast<uint32_t>(Rand(4));
    while (n < want) {
      const uint32_t take = n + 1 == want ? left : static_cast<uint32_t>(Rand(left + 1));
      s[n++] = {a, take, r.buf->reg.local_token};
      a += take;
      left -= take;
    }
    RecvWr wr;
    wr.context = r.id;
    wr.sge = s;
    wr.num_sge = n;
    if (p.qr->PostRecv(wr) != PostResult::kOk) {
      Fail(p, "post recv failed");
      return;
    }
    p.recv_posted.push_back(std::move(r));
  }
}

void Workload::RefillSrq(Host& h) {
  if (!h.srq_users || net_.now() < h.srq_hold_until) return;
  while (h.srq->size() < h.srq->depth()) {
    if (Coin(cfg_.late_recv / 4)) {  // let it run dry for a while
      h.srq_hold_until = net_.now() + 50'000 + Rand(200'000);
      res_.rnr_waits++;
      return;
    }
    auto b = std::make_unique<GBuf>(cfg_.max_size, NextSeed());
    h.node->dev().memory().RegisterRegion(b->addr(), std::max<uint32_t>(cfg_.max_size, 1),
                                          mem::kLocalWrite, &b->reg);
    Sge s{b->addr(), cfg_.max_size, b->reg.local_token};
    RecvWr wr;
    wr.context = next_id_++;
    wr.sge = &s;
    wr.num_sge = 1;
    if (h.srq->Post(wr) != PostResult::kOk) return;
    h.srq_bufs[wr.context] = std::move(b);
  }
}

void Workload::StartMaintenance(Pair& p) {
  // Bind or invalidate windows through the responder's QP; they execute in
  // order and complete on its send CQ.
  mem::MemoryTable& mr = p.hr->node->dev().memory();
  for (Win& w : p.windows) {
    const uint64_t r = Rand(10);
    SendWr wr;
    if (r < 5 || (!w.bound && r < 8)) {
      wr.op = WrOp::kBind;
      wr.mw = w.handle;
      wr.mr = p.target->reg.handle;
      const uint64_t len = 1 + Rand(std::min<uint64_t>(kTargetSize, 2ull * cfg_.max_size));
      const uint64_t off = Rand(kTargetSize - len + 1);
      const uint64_t acc = Rand(3);
      wr.bind_addr = p.target->addr() + off;
      wr.bind_length = len;
      wr.bind_access = acc == 0 ? mem::kRemoteRead : acc == 1 ? mem::kRemoteWrite
                                                             : mem::kRemoteRead | mem::kRemoteWrite;
      wr.bind_token = mr.AllocateWindowToken(w.handle);
      if (w.bound) w.stale.push_back(w.token);
      w.bound = true;
      w.token = wr.bind_token;
      w.off = off;
      w.len = len;
      w.access = wr.bind_access;
      res_.binds++;
    } else if (w.bound && r < 8) {
      wr.op = WrOp::kInvalidate;
      wr.mw = w.handle;
      w.stale.push_back(w.token);
      w.bound = false;
      res_.invalidates++;
    } else {
      continue;
    }
    if (w.stale.size() > 8) w.stale.erase(w.stale.begin());
    wr.context = 0;
    if (p.qr->PostSend(wr) != PostResult::kOk) {
      Fail(p, "post bind failed");
      return;
    }
    p.maint_pending++;
  }
}

void Workload::Drive(Pair& p) {
  // Silent successes at the tail never produce a completion: once the QP has
  // nothing outstanding they are done.
  if (p.qi->outstanding_sends() == 0) {
    while (!p.ops.empty()) {
      OpRec& s = *p.ops.front();
      if (!(s.flags & kSilentSuccess) || p.failure_seen || s.err != ErrKind::kNone) {
        Fail(p, absl::StrFormat("op %d never completed", s.id));
        p.phase = Pair::Phase::kFailed;
      }
      s.i_done = true;
      s.i_status = Status::kSuccess;
      FinishOp(p, s);
      p.ops.pop_front();
    }
  }
  switch (p.phase) {
    case Pair::Phase::kRun: {
      PostDueRecvs(p, false);
      while (p.ops.size() < cfg_.max_outstanding && p.to_quiesce > 0 &&
             issued_ < cfg_.messages && p.phase == Pair::Phase::kRun) {
        GenerateOp(p, true);
        p.to_quiesce--;
        if (p.fail) {
          // A few more operations behind the failing one: all must be canceled.
          const uint64_t extra = Rand(4);
          for (uint64_t i = 0; i < extra && issued_ < cfg_.messages && p.ops.size() < cfg_.max_outstanding; i++)
            GenerateOp(p, false);
          p.phase = Pair::Phase::kFailed;
          break;
        }
      }
      if (p.phase == Pair::Phase::kRun && (p.to_quiesce == 0 || issued_ >= cfg_.messages))
        p.phase = Pair::Phase::kDrain;
      break;
    }
    case Pair::Phase::kDrain:
      PostDueRecvs(p, false);
      if (p.ops.empty() && p.sends.empty()) {
        VerifyMemory(p);
        if (issued_ >= cfg_.messages) {
          p.phase = Pair::Phase::kDone;
          break;
        }
        p.phase = Pair::Phase::kMaint;
        StartMaintenance(p);
      }
      break;
    case Pair::Phase::kMaint:
      if (p.maint_pending == 0) {
        p.phase = Pair::Phase::kRun;
        p.to_quiesce = 20 + static_cast<uint32_t>(Rand(400));
      }
      break;
    case Pair::Phase::kFailed:
      PostDueRecvs(p, true);
      if (p.ops.empty()) Teardown(p);
      break;
    case Pair::Phase::kDone:
      break;
  }
}

// ---- checking ---------------------------------------------------------------------------

void Workload::Fail(Pair& p, const std::string& what) {
  res_.failed++;
  p.tainted = true;
  if (res_.failures.size() < 20)
    res_.failures.push_back(absl::StrFormat("pair %d t=%.3fms: %s", p.id, net_.now() / 1e6, what));
  if (cfg_.trace) std::fprintf(cfg_.trace, "FAILED pair %d (qpn %06x): %s\n", p.id, p.qi->qpn(), what.c_str());
  if (cfg_.dump_on_failure && res_.failed == 1) {
    net_.DumpRecent(cfg_.dump_on_failure);
    std::fprintf(cfg_.dump_on_failure, "FAILED pair %d (qpi %06x qpr %06x): %s\n", p.id, p.qi->qpn(),
                 p.qr->qpn(), what.c_str());
    std::fflush(cfg_.dump_on_failure);
  }
}

size_t Workload::PollAll() {
  size_t handled = 0;
  Completion cs[64];
  for (Host& h : hosts_) {
    uint32_t n;
    while ((n = h.scq->Poll(cs, 64)) > 0) {
      handled += n;
      for (uint32_t i = 0; i < n; i++) {
        Pair& p = pairs_[cs[i].qp_context >> 1];
        if (cs[i].qp_context & 1)
          OnResponderSendCompletion(p, cs[i]);
        else
          OnInitiatorCompletion(p, cs[i]);
      }
      last_progress_ns_ = net_.now();
    }
    while ((n = h.rcq->Poll(cs, 64)) > 0) {
      handled += n;
      for (uint32_t i = 0; i < n; i++) {
        Pair& p = pairs_[cs[i].qp_context >> 1];
        std::unique_ptr<GBuf> buf;
        if (p.srq) {
          auto it = h.srq_bufs.find(cs[i].request_context);
          if (it != h.srq_bufs.end()) {
            buf = std::move(it->second);
            h.srq_bufs.erase(it);
          }
        } else if (!p.recv_posted.empty() && p.recv_posted.front().id == cs[i].request_context) {
          buf = std::move(p.recv_posted.front().buf);
          p.recv_posted.pop_front();
        }
        if (!buf) {
          Fail(p, absl::StrFormat("receive completion for unknown receive %d", cs[i].request_context));
          continue;
        }
        OnRecvCompletion(p, cs[i], buf.get());
        h.node->dev().memory().DeregisterRegion(buf->reg.handle);
      }
      last_progress_ns_ = net_.now();
    }
  }
  return handled;
}

void Workload::OnResponderSendCompletion(Pair& p, const Completion& c) {
  if (c.type != RequestType::kBind && c.type != RequestType::kInvalidate) {
    Fail(p, "unexpected responder send completion");
    return;
  }
  if (p.maint_pending) p.maint_pending--;
  if (c.status != Status::kSuccess && p.phase != Pair::Phase::kFailed)
    Fail(p, absl::StrFormat("window op: %s (%s)", StatusName(c.status), CauseName(c.cause)));
}

void Workload::OnInitiatorCompletion(Pair& p, const Completion& c) {
  // Silent successes before this one completed without a completion.
  while (!p.ops.empty() && p.ops.front()->id != c.request_context &&
         (p.ops.front()->flags & kSilentSuccess)) {
    OpRec& s = *p.ops.front();
    s.i_done = true;
    s.i_status = Status::kSuccess;
    if (p.failure_seen || s.err != ErrKind::kNone)
      Fail(p, absl::StrFormat("silent op %d treated as success after a failure", s.id));
    FinishOp(p, s);
    p.ops.pop_front();
  }
  if (p.ops.empty() || p.ops.front()->id != c.request_context) {
    Fail(p, absl::StrFormat("completion %d out of order", c.request_context));
    return;
  }
  OpPtr op = p.ops.front();
  p.ops.pop_front();
  op->i_done = true;
  op->i_status = c.status;
  bool good;
  if (!p.failure_seen) {
    if (c.status == Status::kSuccess) {
      good = op->err == ErrKind::kNone;
    } else {
      p.failure_seen = true;
      const bool at_f = p.fail && op == p.fail;
      const bool before_f = p.fail && op->seq < p.fail->seq;
      good = (at_f && (c.status == op->expect || c.status == Status::kIoTimeout)) ||
             (before_f && (c.status == Status::kIoTimeout || c.status == Status::kCanceled));
    }
  } else {
    good = c.status == Status::kCanceled ||
           (p.fail && op == p.fail && c.status == op->expect);
  }
  if (!good) {
    Fail(p, absl::StrFormat("op %d (op %d, err %d, rkey %08x, %d B, seq %d) completed %s/%s; predicted failure %s", op->id,
                            static_cast<int>(op->op), static_cast<int>(op->err), op->rkey, op->len, op->seq, StatusName(c.status), CauseName(c.cause),
                            p.fail ? absl::StrFormat("at seq %d", p.fail->seq) : "none"));
  }
  if (c.status == Status::kSuccess && c.bytes != op->len)
    Fail(p, absl::StrFormat("op %d bytes %d != %d", op->id, c.bytes, op->len));
  if (!good) {
    // Resynchronize the model and take the pair down.
    p.failure_seen = true;
    if (p.phase != Pair::Phase::kFailed) p.phase = Pair::Phase::kFailed;
  }
  FinishOp(p, *op);
  if (c.status != Status::kSuccess && p.phase != Pair::Phase::kFailed) p.phase = Pair::Phase::kFailed;
}

void Workload::FinishOp(Pair& p, OpRec& op) {
  checked_++;
  mem::MemoryTable& mi = p.hi->node->dev().memory();
  if (op.op == WrOp::kRead && op.sink) {
    if (!op.sink->GuardsOk()) Fail(p, absl::StrFormat("read %d wrote outside its sink", op.id));
    if (op.i_status == Status::kSuccess && op.err == ErrKind::kNone) {
      if (op.len && std::memcmp(op.sink->data(), op.read_expect.data(), op.len) != 0)
        Fail(p, absl::StrFormat("read %d (%d B at %d) returned wrong data", op.id, op.len, op.target_off));
    } else if (op.err != ErrKind::kNone && op.i_status == op.expect &&
               !op.sink->UntouchedOr(op.read_expect.data(), op.read_expect.size())) {
      // (One past the end: a long Read asks in several READ requests, and
      // those before the one that reaches past the end are answered, so the
      // sink may hold the bytes of the range that exist — nothing else.)
      Fail(p, absl::StrFormat("failed read %d wrote its sink", op.id));
    }
    mi.DeregisterRegion(op.sink->reg.handle);
    op.sink.reset();
  }
  if (op.op == WrOp::kWrite && op.i_status != Status::kSuccess && op.err == ErrKind::kNone && op.len) {
    // Executed or not at the responder: we cannot know.
    p.ambiguous.push_back({op.target_off, op.len});
  }
  if (op.IsSend()) CheckSendPair(p, op);
}

void Workload::OnRecvCompletion(Pair& p, const Completion& c, GBuf* buf) {
  if (c.type != RequestType::kReceive) {
    Fail(p, "receive completion with wrong type");
    return;
  }
  if (!buf->GuardsOk()) Fail(p, absl::StrFormat("receive %d: write outside its buffer", c.request_context));
  if (p.sends.empty()) {
    if (c.status != Status::kCanceled) Fail(p, absl::StrFormat("receive completed %s with no send", StatusName(c.status)));
    return;
  }
  OpPtr op = p.sends.front();
  if (c.status == Status::kCanceled && !p.failure_seen && !p.fail && !p.tainted) {
    Fail(p, "receive canceled without a failure");
  }
  if (c.status == Status::kCanceled) {
    // Flushed: every later send's receive is flushed too (they are in order);
    // the send itself must not have succeeded.
    op->r_done = true;
    op->r_status = c.status;
    p.sends.pop_front();
    CheckSendPair(p, *op);
    return;
  }
  p.sends.pop_front();
  op->r_done = true;
  op->r_status = c.status;
  if (c.status == Status::kSuccess) {
    const bool inv = op->op == WrOp::kSendWithInvalidate;
    const bool se = (op->flags & kSolicited) != 0;
    if (c.bytes != op->len || c.with_inv != inv || (inv && c.inv_rkey != op->inv_token) ||
        c.with_imm || c.solicited != se)
      Fail(p, absl::StrFormat("receive for op %d: %d B inv=%d se=%d (want %d B inv=%d se=%d)",
                              op->id, c.bytes, c.with_inv, c.solicited, op->len, inv, se));
    else if (op->len && std::memcmp(buf->data(), p.src->data() + op->src_off, op->len) != 0)
      Fail(p, absl::StrFormat("receive for op %d: wrong data", op->id));
    else if (!buf->TailUntouched(op->len))
      Fail(p, absl::StrFormat("receive for op %d: bytes past the message written", op->id));
    if (op->err != ErrKind::kNone) Fail(p, absl::StrFormat("failing send %d was received", op->id));
  } else if (c.status == Status::kBufferOverflow) {
    if (!op->recv_too_small) Fail(p, absl::StrFormat("op %d: unexpected buffer overflow", op->id));
  } else {
    Fail(p, absl::StrFormat("receive for op %d: %s", op->id, StatusName(c.status)));
  }
  CheckSendPair(p, *op);
}

void Workload::CheckSendPair(Pair& p, OpRec& op) {
  if (!op.i_done || !op.r_done) return;
  if (op.i_status == Status::kSuccess && op.r_status != Status::kSuccess)
    Fail(p, absl::StrFormat("send %d succeeded but its receive completed %s", op.id, StatusName(op.r_status)));
  if (op.r_status == Status::kSuccess && p.fail && op.seq >= p.fail->seq)
    Fail(p, absl::StrFormat("send %d after the failing op was received", op.id));
}

void Workload::VerifyMemory(Pair& p) {
  for (auto [off, len] : p.ambiguous)
    std::memcpy(p.shadow.data() + off, p.target->data() + off, len);
  p.ambiguous.clear();
  if (p.tainted) {
    std::memcpy(p.shadow.data(), p.target->data(), kTargetSize);
  } else if (std::memcmp(p.shadow.data(), p.target->data(), kTargetSize) != 0) {
    size_t i = 0;
    while (p.shadow[i] == p.target->data()[i]) i++;
    Fail(p, absl::StrFormat("target memory differs from the model at offset %d", i));
    std::memcpy(p.shadow.data(), p.target->data(), kTargetSize);
  }
  if (!p.target->GuardsOk() || !p.src->GuardsOk())
    Fail(p, "guard zone around target/source overwritten");
  if (!p.src->Untouched()) Fail(p, "source buffer modified");
}

void Workload::Teardown(Pair& p) {
  // Flush the responder too (a failure it did not see, e.g. a local error
  // at the initiator), collect its receive completions, then reconnect with
  // fresh QPs so no packet of the old connection can reach the new one.
  p.qr->ToError();
  p.qi->ToError();
  PollAll();
  if (!p.srq && !p.recv_posted.empty()) Fail(p, "posted receives not flushed");
  // Sends whose receive never completed (SRQ pairs lose nothing: the SRQ keeps them).
  while (!p.sends.empty()) {
    OpRec& op = *p.sends.front();
    if (op.i_status == Status::kSuccess && !p.tainted)
      Fail(p, absl::StrFormat("send %d succeeded but nothing was received", op.id));
    p.sends.pop_front();
  }
  // Windows: an invalidate in flight may or may not have happened.
  mem::MemoryTable& mr = p.hr->node->dev().memory();
  for (Win& w : p.windows)
    if (w.bound && mr.CheckRemote(w.token, p.target->addr() + w.off, 1, 0) != mem::Result::kOk)
      w.bound = false;
  VerifyMemory(p);
  Accumulate(retired_, p.qi->counters);
  Accumulate(retired_, p.qr->counters);
  p.hi->node->dev().DestroyQp(p.qi);
  p.hr->node->dev().DestroyQp(p.qr);
  CreateQps(p);
  Connect(p);
  res_.reconnects++;
  p.fail.reset();
  p.failure_seen = false;
  p.tainted = false;
  p.recv_pending.clear();
  p.phase = Pair::Phase::kMaint;
  StartMaintenance(p);
}

WorkloadResult Workload::Run() {
  net_.trace = cfg_.trace;
  if (cfg_.dump_on_failure) net_.RecordRecent(3000000);
  Setup();
  const uint64_t limit = cfg_.time_limit_ns ? cfg_.time_limit_ns : UINT64_MAX;
  for (;;) {
    const uint64_t before = issued_ + res_.binds + res_.invalidates + res_.reconnects;
    std::vector<Pair::Phase> phases;
    for (Pair& p : pairs_) phases.push_back(p.phase);
    for (Pair& p : pairs_) Drive(p);
    bool drove = before != issued_ + res_.binds + res_.invalidates + res_.reconnects;
    for (size_t i = 0; i < pairs_.size(); i++) drove |= phases[i] != pairs_[i].phase;
    for (Host& h : hosts_) RefillSrq(h);
    bool all_done = checked_ >= cfg_.messages;
    for (Pair& p : pairs_)
      all_done &= p.ops.empty() && p.sends.empty() && p.phase != Pair::Phase::kFailed;
    if (all_done) break;
    if (net_.now() - last_progress_ns_ > 60'000'000'000ull) {
      for (Pair& p : pairs_)
        if (!p.ops.empty() || !p.sends.empty())
          Fail(p, absl::StrFormat("no progress for 60 s of virtual time: %d ops, %d receives outstanding, phase %d",
                                  p.ops.size(), p.sends.size(), static_cast<int>(p.phase)));
      break;
    }
    const bool stepped = net_.Step(limit);
    if (PollAll() == 0 && !stepped && !drove) {
      // Idle network: only a late receive (or an SRQ refill) can move things.
      uint64_t next = UINT64_MAX;
      for (Pair& p : pairs_)
        if (!p.recv_pending.empty()) next = std::min(next, p.recv_pending.front().not_before);
      for (Host& h : hosts_)
        if (h.srq_users && h.srq_hold_until > net_.now()) next = std::min(next, h.srq_hold_until);
      if (next == UINT64_MAX || next > limit) {
        for (Pair& p : pairs_)
          if (!p.ops.empty() || !p.sends.empty())
            Fail(p, absl::StrFormat("stalled: %d ops and %d receives outstanding, phase %d",
                                    p.ops.size(), p.sends.size(), static_cast<int>(p.phase)));
        break;
      }
      net_.AdvanceTo(next);
    }
  }
  res_.messages = checked_;
  res_.sim_time_ns = net_.now();
  res_.link = net_.counters();
  res_.qp = retired_;
  for (Pair& p : pairs_) {
    Accumulate(res_.qp, p.qi->counters);
    Accumulate(res_.qp, p.qr->counters);
  }
  for (Host& h : hosts_) {
    const DeviceCounters& d = h.node->dev().counters;
    res_.dev.rx_frames += d.rx_frames;
    res_.dev.rx_unknown_qp += d.rx_unknown_qp;
    res_.dev.rx_placed_in_pass += d.rx_placed_in_pass;
    res_.dev.rx_placed_dropped += d.rx_placed_dropped;
    res_.dev.tx_packets += d.tx_packets;
    for (size_t i = 0; i < static_cast<size_t>(wire::Error::kCount); i++)
      res_.dev.rx_errors[i] += d.rx_errors[i];
  }
  // Every mismatch counts against one message (conservatively: a message
  // with two mismatches is counted twice).
  res_.failed = std::min(res_.failed, res_.messages);
  res_.ok = res_.messages - res_.failed;
  return res_;
}

}  // namespace

WorkloadResult RunWorkload(const WorkloadConfig& cfg) {
  Workload w(cfg);
  return w.Run();
}

}  // namespace roce::sim
