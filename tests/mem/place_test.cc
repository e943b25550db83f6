// SPDX-License-Identifier: MIT
// mem::PlaceInOrder (stack/mem/place.h): the bytes of every alignment and
// length, nothing outside the destination touched, and — across threads —
// the order a poller relies on (ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED): when
// another core sees the last byte of a placement, it sees all the others.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "stack/mem/place.h"
#include "tests/support/test_support.h"

namespace roce::mem {
namespace {

TEST(PlaceInOrder, EveryAlignmentAndLength) {
  std::vector<uint8_t> src(9000), dst(9200), want(9200);
  for (size_t i = 0; i < src.size(); i++) src[i] = static_cast<uint8_t>(i * 131 + 7);
  std::vector<size_t> lens;
  for (size_t n = 0; n <= 160; n++) lens.push_back(n);
  for (size_t n : {255u, 256u, 257u, 511u, 512u, 1000u, 1023u, 1024u, 2047u, 4096u, 4100u, 8191u})
    lens.push_back(n);
  for (size_t da = 0; da < 64; da++) {
    for (size_t sa = 0; sa < 64; sa += 7) {
      for (size_t n : lens) {
        std::fill(dst.begin(), dst.end(), 0xEE);
        want = dst;
        std::memcpy(want.data() + 64 + da, src.data() + sa, n);
        PlaceInOrder(dst.data() + 64 + da, src.data() + sa, n);
        ASSERT_EQ(dst, want) << "dst alignment " << da << ", src alignment " << sa << ", length " << n;
      }
    }
  }
}

// A writer thread places generation g (every byte g) into a buffer, then
// waits for the reader to have seen it; the reader polls the last byte until
// it reads g and then checks every byte. With memcpy the reader sees old
// bytes (glibc stores the tail first); in address order it never may.
// Returns the generations in which the reader saw an old byte.
// The generation the reader has checked (for the control below).
std::atomic<int> polled_{0};

template <typename Copy>
int TornReads(Copy copy, size_t len, size_t offset, int generations) {
  alignas(64) static uint8_t buf[8192 + 128];
  std::vector<std::vector<uint8_t>> gen(256, std::vector<uint8_t>(len));
  for (int g = 0; g < 256; g++) std::fill(gen[g].begin(), gen[g].end(), static_cast<uint8_t>(g));
  uint8_t* dst = buf + offset;
  std::memset(dst, 0, len);
  std::atomic<int> seen{0};
  std::atomic<int> torn{0};
  polled_.store(0);
  std::thread reader([&] {
    for (int g = 1; g <= generations; g++) {
      const uint8_t want = static_cast<uint8_t>(g);
      const volatile uint8_t* last = dst + len - 1;
      for (uint32_t spins = 0; *last != want;)
        if ((++spins & 255) == 0) std::this_thread::yield();  // a loaded machine: let the writer run
      const volatile uint8_t* v = dst;
      for (size_t i = 0; i + 1 < len; i++) {
        if (v[i] != want) {
          torn.fetch_add(1, std::memory_order_relaxed);
          break;
        }
      }
      polled_.store(g, std::memory_order_release);
      seen.store(g, std::memory_order_release);
    }
  });
  for (int g = 1; g <= generations; g++) {
    copy(dst, gen[g & 255].data(), len);
    for (uint32_t spins = 0; seen.load(std::memory_order_acquire) != g;)
      if ((++spins & 255) == 0) std::this_thread::yield();
  }
  reader.join();
  return torn.load();
}

TEST(PlaceInOrder, APollerOfTheLastByteSeesEveryByte) {
  if (std::thread::hardware_concurrency() < 2) ROCE_SKIP_ALLOWED("needs two cores (a poller beside the writer)");
  for (size_t len : {33u, 512u, 1000u, 4096u}) {
    for (size_t offset : {0u, 5u, 16u}) {
      EXPECT_EQ(TornReads(PlaceInOrder, len, offset, 5000), 0) << len << " bytes at offset " << offset;
    }
  }
}

// PlaceInOrderCrc32 in both its codes (the one-pass copy + fold where the CPU
// has it, the CRC then PlaceInOrder everywhere): PlaceInOrder's bytes and
// zlib's crc32 of them, continued from a seed, for every destination
// alignment within 64 bytes and lengths across the one-pass threshold and
// the fold's block and four-block steps; nothing outside the destination.
class PlaceCrc : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    SetPlaceCrcOnePass(GetParam());
    if (GetParam() && !PlaceCrcOnePass())
      ROCE_SKIP_ALLOWED("this CPU has no AVX-512 VPCLMULQDQ (only the two-pass code runs)");
    ASSERT_EQ(PlaceCrcOnePass(), GetParam());
  }
  void TearDown() override { SetPlaceCrcOnePass(true); }
};

TEST_P(PlaceCrc, BytesAndCrcOfEveryAlignmentAndLength) {
  std::vector<uint8_t> src(20000), dst(20300), want(20300);
  for (size_t i = 0; i < src.size(); i++) src[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  std::vector<size_t> lens = {0, 1, 3, 31, 64, 255, 256, 511};
  for (size_t n = kPlaceCrcOnePassMin - 40; n <= kPlaceCrcOnePassMin + 300; n += 13) lens.push_back(n);
  for (size_t n : {1023u, 1024u, 1025u, 2048u, 4096u, 4100u, 4159u, 8192u, 9000u, 16384u, 19999u})
    lens.push_back(n);
  for (size_t da = 0; da < 64; da++) {
    for (size_t sa : {0u, 1u, 17u, 32u}) {
      for (size_t n : lens) {
        if (sa + n > src.size()) continue;
        std::fill(dst.begin(), dst.end(), 0xEE);
        want = dst;
        std::memcpy(want.data() + 64 + da, src.data() + sa, n);
        const uint32_t seed = static_cast<uint32_t>(n * 0x9E3779B9u + da);
        const uint32_t ref = static_cast<uint32_t>(crc32(seed, src.data() + sa, static_cast<uInt>(n)));
        const uint32_t got = PlaceInOrderCrc32(dst.data() + 64 + da, src.data() + sa, n, seed);
        ASSERT_EQ(got, ref) << "dst alignment " << da << ", src alignment " << sa << ", length " << n;
        ASSERT_EQ(dst, want) << "dst alignment " << da << ", src alignment " << sa << ", length " << n;
      }
    }
  }
  // Chained: a message in packet-sized pieces gives the CRC of the whole.
  uint32_t c = 0;
  for (size_t off = 0; off < 16384; off += 4096) c = PlaceInOrderCrc32(dst.data() + off, src.data() + off, 4096, c);
  EXPECT_EQ(c, static_cast<uint32_t>(crc32(0, src.data(), 16384)));
}

// The short spans (a few bytes, and the head and tail around the one-pass
// blocks: every head up to 32-byte alignment, every tail under 64 bytes)
// against zlib for every length up to 160 and 512..640, every destination
// alignment, sources at several alignments; seeds of all bit patterns.
TEST_P(PlaceCrc, ShortSpansHeadsAndTailsOfEveryLength) {
  std::vector<uint8_t> src(800), dst(900), want(900);
  for (size_t i = 0; i < src.size(); i++) src[i] = static_cast<uint8_t>((i * 40503u) >> 7 ^ i);
  std::vector<size_t> lens;
  for (size_t n = 0; n <= 160; n++) lens.push_back(n);
  for (size_t n = 512; n <= 640; n++) lens.push_back(n);
  for (size_t da = 0; da < 64; da++) {
    for (size_t sa : {0u, 1u, 5u, 16u, 33u, 63u}) {
      for (size_t n : lens) {
        std::fill(dst.begin(), dst.end(), 0xEE);
        want = dst;
        std::memcpy(want.data() + 64 + da, src.data() + sa, n);
        const uint32_t seed = static_cast<uint32_t>((n + 1) * 0x9E3779B9u ^ (da << 24) ^ sa);
        const uint32_t ref = static_cast<uint32_t>(crc32(seed, src.data() + sa, static_cast<uInt>(n)));
        ASSERT_EQ(PlaceInOrderCrc32(dst.data() + 64 + da, src.data() + sa, n, seed), ref)
            << "dst alignment " << da << ", src alignment " << sa << ", length " << n;
        ASSERT_EQ(dst, want) << "dst alignment " << da << ", src alignment " << sa << ", length " << n;
      }
    }
  }
}

// Nothing past the source span is read: each span ends where an unreadable
// page begins (a read past it would fault) and starts where a readable one
// does, for every short length and the one-pass lengths' tails.
TEST_P(PlaceCrc, ReadsNothingOutsideTheSource) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* m = mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  auto* base = static_cast<uint8_t*>(m);
  ASSERT_EQ(mprotect(base, page, PROT_NONE), 0);
  ASSERT_EQ(mprotect(base + 2 * page, page, PROT_NONE), 0);
  uint8_t* mid = base + page;  // readable: [mid, mid + page)
  for (size_t i = 0; i < page; i++) mid[i] = static_cast<uint8_t>(i * 7 + 3);
  std::vector<uint8_t> dst(page + 64);
  for (size_t n = 0; n <= 700; n++) {
    for (const uint8_t* s : {static_cast<const uint8_t*>(mid + page - n), static_cast<const uint8_t*>(mid)}) {
      const uint32_t ref = static_cast<uint32_t>(crc32(0x12345678u, s, static_cast<uInt>(n)));
      ASSERT_EQ(PlaceInOrderCrc32(dst.data() + (n % 64), s, n, 0x12345678u), ref) << "length " << n;
    }
  }
  munmap(m, 3 * page);
}

// Pieces placed one after another (a payload a NIC's segments cut):
// PlaceGatherCrc32 against zlib over their concatenation and the bytes
// placed, for random cuts — pieces of one byte, under a block, empty ones,
// many — at random source alignments, a 32-byte aligned destination (the
// one-stream fold) and misaligned ones (piece by piece); nothing outside the
// destination touched, nothing read past a piece (each ends where an
// unreadable page begins).
TEST_P(PlaceCrc, GatheredPiecesAsOneStream) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  constexpr size_t kPages = 4;  // pieces of up to 4 pages, each ending at an unreadable page
  void* m = mmap(nullptr, (kPages + 2) * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  auto* base = static_cast<uint8_t*>(m);
  uint8_t* end = base + (kPages + 1) * page;  // [end, end + page) unreadable
  ASSERT_EQ(mprotect(end, page, PROT_NONE), 0);
  for (uint8_t* q = base; q < end; q++) *q = static_cast<uint8_t>((q - base) * 2654435761u >> 11);
  std::vector<uint8_t> dst(kPages * page + 300), want(dst.size());
  uint8_t* const d0 = dst.data() + ((64 - reinterpret_cast<uintptr_t>(dst.data()) % 64) % 64) + 64;
  uint32_t rng = 12345;
  auto next = [&](uint32_t lim) {
    rng = rng * 1103515245u + 12345u;
    return (rng >> 8) % lim;
  };
  const size_t totals[] = {0, 40, 300, 511, 512, 513, 575, 640, 1000, 2047, 4096, 4100, 4159, 8192, 9000, 16000};
  int streamed = 0;
  for (size_t total : totals) {
    for (int trial = 0; trial < 60; trial++) {
      // Cut points: 0..7 of them, some at the same place (empty pieces), some a byte apart.
      std::vector<size_t> cuts = {0, total};
      const uint32_t ncut = next(8);
      for (uint32_t c = 0; c < ncut; c++) {
        size_t at = total ? next(static_cast<uint32_t>(total + 1)) : 0;
        if (c % 3 == 2 && !cuts.empty()) at = std::min(total, cuts.back() + next(3));
        cuts.push_back(at);
      }
      std::sort(cuts.begin(), cuts.end());
      std::vector<Piece> pieces;
      std::vector<uint8_t> cat;
      for (size_t c = 0; c + 1 < cuts.size(); c++) {
        const size_t len = cuts[c + 1] - cuts[c];
        // At the end of the readable pages, or at a random alignment well inside.
        const uint8_t* src = (trial % 2 || len == 0) ? end - len : base + next(64) + next(static_cast<uint32_t>(page));
        pieces.push_back({src, len});
        cat.insert(cat.end(), src, src + len);
      }
      for (size_t da : {0u, 32u, 5u}) {
        if (trial % 3 && da) continue;  // the aligned destination mostly
        std::fill(dst.begin(), dst.end(), 0xEE);
        want = dst;
        uint8_t* d = d0 + da;
        std::copy(cat.begin(), cat.end(), want.begin() + (d - dst.data()));
        const uint32_t seed = static_cast<uint32_t>(total * 0x9E3779B9u + trial * 77 + da);
        // (zlib's crc32 of a null buffer is its initial value, not the seed)
        const uint32_t ref = cat.empty() ? seed : static_cast<uint32_t>(crc32(seed, cat.data(), static_cast<uInt>(cat.size())));
        ASSERT_EQ(PlaceGatherCrc32(d, pieces.data(), pieces.size(), seed), ref)
            << "total " << total << ", " << pieces.size() << " pieces, trial " << trial << ", dst +" << da;
        ASSERT_EQ(dst, want) << "total " << total << ", " << pieces.size() << " pieces, trial " << trial;
        streamed += da == 0 && total >= kPlaceCrcOnePassMin;
      }
    }
  }
  EXPECT_GT(streamed, 300);
  munmap(m, (kPages + 2) * page);
}

TEST_P(PlaceCrc, APollerOfTheLastByteSeesEveryByte) {
  if (std::thread::hardware_concurrency() < 2) ROCE_SKIP_ALLOWED("needs two cores (a poller beside the writer)");
  auto place = [](void* d, const void* s, size_t l) { PlaceInOrderCrc32(d, s, l, 0); };
  for (size_t len : {1000u, 4096u}) {
    for (size_t offset : {0u, 5u, 48u}) {
      EXPECT_EQ(TornReads(place, len, offset, 3000), 0) << len << " bytes at offset " << offset;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Code, PlaceCrc, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "OnePass" : "TwoPass"; });

// The check itself can fail: a copy that stores its first byte last (as
// glibc's memcpy stores its first 32 bytes last) — here only once the reader
// has seen the last byte and checked the rest, so it cannot miss the old one.
TEST(PlaceInOrder, ThePollerCatchesAHeadStoredLast) {
  if (std::thread::hardware_concurrency() < 2) ROCE_SKIP_ALLOWED("needs two cores (a poller beside the writer)");
  static int g = 0;
  g = 0;
  auto head_last = [](void* d, const void* s, size_t l) {
    g++;
    std::memcpy(static_cast<uint8_t*>(d) + 1, static_cast<const uint8_t*>(s) + 1, l - 1);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (polled_.load(std::memory_order_acquire) != g && std::chrono::steady_clock::now() < until)
      std::this_thread::yield();
    *static_cast<volatile uint8_t*>(d) = *static_cast<const uint8_t*>(s);
  };
  EXPECT_EQ(TornReads(head_last, 512, 0, 200), 200);
}

}  // namespace
}  // namespace roce::mem
