// SPDX-License-Identifier: MIT
// Addresses above 4 GiB and lengths up to 2^31 - 1.
//
// Regions live at fixed virtual addresses above 4 GiB (reserved with
// MAP_NORESERVE | MAP_FIXED_NOREPLACE; the low 32 bits are 0xC0000000 so a
// 2 GiB region crosses a 4 GiB boundary and any 32-bit truncation of an
// address or offset shows). To move 2^31 - 1 real bytes without 2 GiB of
// RAM per side, each range is one 64 MiB memfd mapped again and again
// (MAP_SHARED | MAP_FIXED over the reservation): every byte of the range is
// real memory, and a pseudo-random pattern in the memfd (period 64 MiB)
// catches misplaced bytes at any offset that is not a multiple of 64 MiB.
//
// The full 2^31 - 1 byte Write and Read run in the normal and the sanitizer
// build (a few seconds each; see the test's printed timing).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "tests/rc/rc_wire.h"

namespace roce::rc::testing {
namespace {

constexpr uint64_t kMax = kMaxMessage;  // 2^31 - 1
constexpr size_t kPeriod = 64ull << 20;

// `len` bytes of address space at a fixed address above 4 GiB, backed by one
// memfd of kPeriod bytes mapped repeatedly; `view` maps the memfd once.
class AliasedRange {
 public:
  AliasedRange(uint64_t len, std::initializer_list<uint64_t> candidates) {
    len_ = (len + kPeriod - 1) / kPeriod * kPeriod;
    fd_ = memfd_create("rc-large-test", 0);
    if (fd_ < 0 || ftruncate(fd_, static_cast<off_t>(kPeriod)) != 0) return;
    for (uint64_t want : candidates) {
      void* p = mmap(reinterpret_cast<void*>(want), len_, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
      if (p == MAP_FAILED) continue;
      if (reinterpret_cast<uint64_t>(p) != want) {  // kernel without MAP_FIXED_NOREPLACE
        munmap(p, len_);
        continue;
      }
      base_ = want;
      break;
    }
    if (!base_) return;
    for (uint64_t off = 0; off < len_; off += kPeriod) {
      void* p = mmap(reinterpret_cast<void*>(base_ + off), kPeriod, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_FIXED, fd_, 0);
      if (p == MAP_FAILED) return;
    }
    void* v = mmap(nullptr, kPeriod, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (v == MAP_FAILED) return;
    view_ = static_cast<uint8_t*>(v);
  }
  ~AliasedRange() {
    if (view_) munmap(view_, kPeriod);
    if (base_) munmap(reinterpret_cast<void*>(base_), len_);
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return view_ != nullptr; }
  uint64_t base() const { return base_; }
  uint8_t* view() const { return view_; }
  // The byte at address base + off.
  uint8_t& At(uint64_t off) const { return view_[off % kPeriod]; }
  void Fill(uint64_t seed) const {
    std::mt19937_64 g(seed);
    auto* w = reinterpret_cast<uint64_t*>(view_);
    for (size_t i = 0; i < kPeriod / 8; i++) w[i] = g();
  }

 private:
  int fd_ = -1;
  uint64_t base_ = 0, len_ = 0;
  uint8_t* view_ = nullptr;
};

// Candidates above ASan's shadow (the sanitizer build maps its shadow below
// 0x10007fff8000), each with low 32 bits 0xC0000000.
constexpr uint64_t kCandA[] = {0x2345C0000000ull, 0x2445C0000000ull, 0x2545C0000000ull};
constexpr uint64_t kCandB[] = {0x3456C0000000ull, 0x3556C0000000ull, 0x3656C0000000ull};

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Counts frames per node and keeps the first request of each opcode and
// every READ request; cheap enough for half a million packets.
struct Counter {
  uint64_t frames[2] = {0, 0};
  uint64_t payload[2] = {0, 0};
  std::vector<Frame> firsts;
  std::vector<Frame> naks;
  std::vector<Frame> reads;
  void Install(sim::SimNetwork& net) {
    net.filter = [this](const sim::SimNode& from, std::vector<uint8_t>& frame) {
      const int n = from.id();
      frames[n]++;
      wire::RocePacket p;
      wire::ParseOptions o;
      o.verify_icrc = false;
      if (wire::ParseRoceFrame(frame, &p, o) != wire::Error::kOk) return true;
      payload[n] += p.payload.size();
      const bool first_of_op = std::none_of(firsts.begin(), firsts.end(), [&](const Frame& f) {
        return f.from == n && f.opcode == p.bth.opcode;
      });
      const bool nak = p.bth.opcode == op::kRcAck && p.aeth.syndrome != syn::Ack();
      if (first_of_op || nak) {
        Frame f = WireLog::Parse(frame, 0, n);
        (nak ? naks : firsts).push_back(f);
      }
      if (p.bth.opcode == op::kRcReadRequest) reads.push_back(WireLog::Parse(frame, 0, n));
      return true;
    };
  }
  const Frame* First(int node, uint8_t opcode) const {
    for (const Frame& f : firsts)
      if (f.from == node && f.opcode == opcode) return &f;
    return nullptr;
  }
};

TEST(RcLarge, FullLengthWriteAndReadAbove4GiB) {
  AliasedRange ra(kMax, {kCandA[0], kCandA[1], kCandA[2]});
  AliasedRange rb(kMax, {kCandB[0], kCandB[1], kCandB[2]});
  ASSERT_TRUE(ra.ok() && rb.ok()) << "could not map test ranges above 4 GiB";
  ASSERT_GT(ra.base(), 0xFFFFFFFFull);
  ASSERT_EQ(ra.base() & 0xFFFFFFFFull, 0xC0000000ull);
  PairOptions o;
  o.attr.path_mtu = 4096;
  // Without a bounded transmit queue the simulator would take all 2^19 read
  // responses at once and hold 2 GiB of frames in flight.
  o.imp.tx_queue_ns = 100'000;
  RcPair p(o);
  Counter cnt;
  cnt.Install(p.net());
  mem::RegionInfo ka, kb;
  ASSERT_EQ(p.a.mem().RegisterRegion(ra.base(), kMax, mem::kLocalWrite, &ka), mem::Result::kOk);
  ASSERT_EQ(p.b.mem().RegisterRegion(rb.base(), kMax,
                                     mem::kLocalWrite | mem::kRemoteWrite | mem::kRemoteRead, &kb),
            mem::Result::kOk);
  ra.Fill(1);
  rb.Fill(2);

  // Write all 2^31 - 1 bytes, gathered from two SGEs (2^30 + 2^30 - 1).
  Sge ws[2] = {{ra.base(), 1u << 30, ka.local_token},
               {ra.base() + (1u << 30), (1u << 30) - 1, ka.local_token}};
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kWrite, ws, 2, rb.base(), kb.remote_token)),
            PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1, 60'000'000'000ull));
  const double tw = Seconds(t0);
  auto c = p.a.PollSend();
  ExpectCompletions(c, {{1, Status::kSuccess}});
  EXPECT_EQ(c[0].bytes, kMax);
  EXPECT_EQ(cnt.payload[0], kMax);
  EXPECT_EQ(cnt.frames[0], (kMax + 4095) / 4096);  // 524288 packets, no retransmission
  const Frame* wf = cnt.First(0, op::kRcWriteFirst);
  ASSERT_NE(wf, nullptr);
  EXPECT_EQ(wf->va, rb.base());
  EXPECT_EQ(wf->dma_len, kMax);
  ASSERT_NE(cnt.First(0, op::kRcWriteLast), nullptr);
  EXPECT_EQ(cnt.First(0, op::kRcWriteLast)->payload_len, 4095u);
  // Every byte offset modulo the period was written with the source's byte.
  EXPECT_EQ(0, memcmp(rb.view(), ra.view(), kPeriod));
  EXPECT_EQ(p.a.qp->counters.retransmits, 0u);

  // Read all of it back into a, after changing b's bytes.
  rb.Fill(3);
  Sge rs{ra.base(), static_cast<uint32_t>(kMax), ka.local_token};
  const uint64_t before_b = cnt.frames[1];
  t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(2, WrOp::kRead, &rs, 1, rb.base(), kb.remote_token)),
            PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1, 60'000'000'000ull));
  const double tr = Seconds(t0);
  c = p.a.PollSend();
  ExpectCompletions(c, {{2, Status::kSuccess}});
  EXPECT_EQ(c[0].bytes, kMax);
  EXPECT_EQ(cnt.frames[1] - before_b, (kMax + 4095) / 4096);
  // Asked for in READ requests of a read window's worth or less each (the
  // first: read_window packets), one after the other over the Read's PSNs
  // and bytes, none twice: 2^31 - 1 bytes in all.
  const QpTuning t;
  ASSERT_GT(cnt.reads.size(), 1u);
  EXPECT_EQ(cnt.reads.size(), p.a.qp->counters.read_requests);
  EXPECT_EQ(cnt.reads[0].dma_len, t.read_window * 4096u);
  uint64_t asked = 0;
  for (const Frame& f : cnt.reads) {
    ASSERT_EQ(f.psn, PsnAdd(cnt.reads[0].psn, static_cast<int64_t>(asked / 4096)));
    ASSERT_EQ(f.va, rb.base() + asked);
    ASSERT_LE(f.dma_len, t.read_window_max * 4096u);
    ASSERT_TRUE(f.dma_len % 4096 == 0 || asked + f.dma_len == kMax);
    asked += f.dma_len;
  }
  EXPECT_EQ(asked, kMax);
  EXPECT_EQ(0, memcmp(ra.view(), rb.view(), kPeriod));
  EXPECT_GT(p.b.node->dev().counters.tx_busy, 0u);  // the responder was held back, and recovered
  EXPECT_EQ(p.b.qp->counters.retransmits + p.a.qp->counters.retransmits, 0u);
  std::printf("[ timing ] 2^31-1 byte Write %.2f s, Read %.2f s (wall)\n", tw, tr);

  // The very end of the range: the last byte is inside, one more is not.
  ra.At(0) = 0x11;
  Sge one{ra.base(), 1, ka.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(3, WrOp::kWrite, &one, 1, rb.base() + kMax - 1, kb.remote_token)),
            PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  ExpectCompletions(p.a.PollSend(), {{3, Status::kSuccess}});
  EXPECT_EQ(rb.At(kMax - 1), 0x11);
  rb.At(kMax - 1) = 0x22;
  Sge last{ra.base() + kMax - 1, 1, ka.local_token};  // the sink's own last byte
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(4, WrOp::kRead, &last, 1, rb.base() + kMax - 1, kb.remote_token)),
            PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  ExpectCompletions(p.a.PollSend(), {{4, Status::kSuccess}});
  EXPECT_EQ(ra.At(kMax - 1), 0x22);
  // Two bytes at the last byte: one past the end.
  std::vector<uint8_t> snap(rb.view(), rb.view() + kPeriod);
  Sge two{ra.base(), 2, ka.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(5, WrOp::kWrite, &two, 1, rb.base() + kMax - 1, kb.remote_token)),
            PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  ExpectCompletions(p.a.PollSend(), {{5, Status::kAccessViolation, Cause::kRemoteAccess}});
  EXPECT_EQ(0, memcmp(rb.view(), snap.data(), kPeriod));
  ASSERT_EQ(cnt.naks.size(), 1u);
  EXPECT_EQ(cnt.naks[0].syndrome, syn::Nak(syn::kNakRemoteAccess));
}

TEST(RcLarge, EndOfRangeBoundsAbove4GiB) {
  AliasedRange ra(kMax, {kCandA[0], kCandA[1], kCandA[2]});
  AliasedRange rb(kMax, {kCandB[0], kCandB[1], kCandB[2]});
  ASSERT_TRUE(ra.ok() && rb.ok());
  PairOptions o;
  o.attr.path_mtu = 1024;
  RcPair p(o);
  mem::RegionInfo ka, kb;
  ASSERT_EQ(p.a.mem().RegisterRegion(ra.base(), kMax, mem::kLocalWrite, &ka), mem::Result::kOk);
  ASSERT_EQ(p.b.mem().RegisterRegion(rb.base(), kMax, mem::kRemoteRead | mem::kRemoteWrite | mem::kLocalWrite, &kb),
            mem::Result::kOk);
  ra.Fill(4);
  rb.Fill(5);
  // A multi-packet Read ending exactly at the last byte.
  Sge s{ra.base(), 8192, ka.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kRead, &s, 1, rb.base() + kMax - 8192, kb.remote_token)),
            PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  ExpectCompletions(p.a.PollSend(), {{1, Status::kSuccess}});
  for (uint64_t i = 0; i < 8192; i++) ASSERT_EQ(ra.At(i), rb.At(kMax - 8192 + i)) << i;
  // The same Read one byte further: out of bounds.
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(2, WrOp::kRead, &s, 1, rb.base() + kMax - 8191, kb.remote_token)),
            PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  ExpectCompletions(p.a.PollSend(), {{2, Status::kAccessViolation, Cause::kRemoteAccess}});
  p.Connect();
  // A Read of 2^31 - 1 bytes starting one byte in: one past the end (checked
  // at the request, nothing sent back).
  Sge big{ra.base(), static_cast<uint32_t>(kMax), ka.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(3, WrOp::kRead, &big, 1, rb.base() + 1, kb.remote_token)),
            PostResult::kOk);
  ASSERT_TRUE(p.RunForSend(p.a, 1));
  ExpectCompletions(p.a.PollSend(), {{3, Status::kAccessViolation, Cause::kRemoteAccess}});
}

TEST(RcLarge, PostRejectsMessagesAbove2GiBMinus1) {
  RcPair p;
  WireLog w(p.net());
  const uint64_t base = 0x2345C0000000ull;  // never touched: posting does not read it
  Sge over[2] = {{base, 1u << 30, 1}, {base + (1u << 30), 1u << 30, 1}};  // 2^31
  Sge over1{base, 0x80000000u, 1};
  for (WrOp o : {WrOp::kSend, WrOp::kWrite, WrOp::kRead, WrOp::kWriteWithImm, WrOp::kSendWithImm}) {
    EXPECT_EQ(p.a.qp->PostSend(MakeRdma(1, o, over, 2, base, 1)), PostResult::kInvalidParameter);
    EXPECT_EQ(p.a.qp->PostSend(MakeRdma(1, o, &over1, 1, base, 1)), PostResult::kInvalidParameter);
  }
  // Four SGEs whose 32-bit sum would wrap to something small.
  Sge wrap[4] = {{base, 0xFFFFFFFFu, 1}, {base, 0xFFFFFFFFu, 1}, {base, 2, 1}, {base, 0, 1}};
  EXPECT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kWrite, wrap, 4, base, 1)), PostResult::kInvalidParameter);
  EXPECT_EQ(p.a.qp->outstanding_sends(), 0u);
  p.RunIdle();
  EXPECT_EQ(p.a.scq->size(), 0u);
  EXPECT_TRUE(w.frames.empty());
}

// A READ_REQUEST whose RETH asks for more than 2^31 - 1 bytes (rewritten on
// the wire; our requester never sends one) against a 4 GiB region. The
// responder must either refuse it (invalid request NAK) or account for
// every response PSN it will send; it must not accept it as a shorter Read.
TEST(RcLarge, ReadRequestAbove2GiBFromTheWire) {
  AliasedRange rb(1ull << 32, {kCandB[0], kCandB[1], kCandB[2]});
  ASSERT_TRUE(rb.ok());
  PairOptions o;
  o.attr.path_mtu = 4096;
  RcPair p(o);
  WireLog w(p.net());
  Buffer sink(4096, 1);
  auto kr = p.a.Register(sink, mem::kLocalWrite);
  mem::RegionInfo kb;
  ASSERT_EQ(p.b.mem().RegisterRegion(rb.base(), 1ull << 32, mem::kRemoteRead, &kb), mem::Result::kOk);
  const uint32_t psn0 = p.a.qp->next_psn();
  const uint32_t dma = 0xFFFFFFFFu;
  w.modify = [&](const Frame& f, std::vector<uint8_t>& frame) {
    if (f.from == 0 && f.opcode == op::kRcReadRequest) {
      ASSERT_TRUE(WireLog::Rewrite(frame, [&](wire::RocePacket& pk) { pk.reth.dma_length = dma; }));
    }
  };
  Sge s{sink.addr(), 4096, kr.local_token};
  ASSERT_EQ(p.a.qp->PostSend(MakeRdma(1, WrOp::kRead, &s, 1, rb.base(), kb.remote_token)), PostResult::kOk);
  // Let b answer a few packets' worth, then look.
  p.net().RunUntil([&] {
    return w.Count([](const Frame& f) { return f.from == 1; }) >= 4;
  }, p.net().now() + 1'000'000);
  auto naks = w.Where([](const Frame& f) { return f.from == 1 && f.opcode == op::kRcAck; });
  const bool refused = !naks.empty() && naks[0].syndrome == syn::Nak(syn::kNakInvalidRequest);
  const uint32_t npkts = static_cast<uint32_t>((uint64_t{dma} + 4095) / 4096);
  const bool accounted = p.b.qp->expected_psn() == PsnAdd(psn0, npkts);
  EXPECT_TRUE(refused || accounted)
      << "responder accepted a " << dma << "-byte Read but advanced its expected PSN by "
      << wire::PsnDiff(p.b.qp->expected_psn(), psn0) << " instead of " << npkts;
}

}  // namespace
}  // namespace roce::rc::testing
