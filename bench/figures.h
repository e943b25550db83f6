// SPDX-License-Identifier: MIT
// Ratio counters for the bench programs: a benchmark measures its own loop
// (Measured: wall seconds and items done in them) and records the rate under
// a name; a later benchmark in the same run divides its rate by the median
// of what was recorded (repetitions included), so every figure is read as a
// ratio to a baseline measured on the same machine in the same minute.
// Plain C++ (no DPDK, no ND2 headers): both kinds of translation unit use it.
// Also the page-aligned buffer the ND2 loops and the memcpy baseline use.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace roce::bench {

struct Measured {
  double secs = 0, items = 0;
  double rate() const { return secs > 0 ? items / secs : 0; }
};

// A page-aligned buffer, as perftest and tools/nd (nd_common.h) allocate
// theirs: a 4 KB packet's payload then lies on the same 64-byte boundaries
// at both ends. (A malloc'd 64 KB one starts 16 bytes past a page: the
// receiver's copy-with-CRC then has a head and a tail around its blocks,
// ~25 ns a 4 KB packet more; rc_bench PlaceCrc32/16/16 against /0/0.)
class PageBuf {
 public:
  PageBuf() = default;
  PageBuf(size_t bytes, char v) { assign(bytes, v); }
  PageBuf(const PageBuf&) = delete;
  PageBuf& operator=(const PageBuf&) = delete;
  ~PageBuf() { std::free(p_); }
  // `bytes` of `v` in a new buffer (size() 0 if it could not be had).
  void assign(size_t bytes, char v) {
    std::free(p_);
    p_ = static_cast<char*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096));
    n_ = p_ ? bytes : 0;
    if (p_) std::memset(p_, v, n_);
  }
  char* data() const { return p_; }
  size_t size() const { return n_; }

 private:
  char* p_ = nullptr;
  size_t n_ = 0;
};

// Wall seconds since `t0`.
inline double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class Figures {
 public:
  // Google Benchmark sizes a loop before it measures it: in the first
  // repetition it runs 1, 10, 100 ... iterations until a run lasts
  // --benchmark_min_time, and reports only that last run (later repetitions
  // reuse its count). The sizing runs are not figures: a pipelined loop of
  // one iteration times the posts and hardly any of the work (a 64 KB Write
  // loop of one iteration "moved" 60 GB/s), and the first runs of a loop are
  // the coldest. Only runs of the largest iteration count recorded under a
  // name — the reported ones — make its median. (Before, every run of at
  // least 10 ms counted, sizing runs included: in one run the ND2 round trip
  // of 918 ns got x_tcp 0.0876 against a reported TCP median of 9.54 us —
  // the baseline's median had come out 10.5 us — 10% too small.)
  static void Record(const std::string& name, double v, const benchmark::State& st) {
    if (v > 0 && st.iterations() > 0) map()[name].push_back({st.iterations(), v});
  }
  // The median recorded under `name`, or 0 if none (the baseline was filtered out).
  static double Median(const std::string& name) {
    auto it = map().find(name);
    if (it == map().end() || it->second.empty()) return 0;
    benchmark::IterationCount most = 0;
    for (const Run& r : it->second) most = std::max(most, r.iterations);
    std::vector<double> v;
    for (const Run& r : it->second)
      if (r.iterations == most) v.push_back(r.value);
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    return v[v.size() / 2];
  }
  // Sets counter `key` = v / Median(baseline) when the baseline was measured.
  static void Ratio(benchmark::State& st, const char* key, double v, const std::string& baseline) {
    const double b = Median(baseline);
    if (b > 0 && v > 0) st.counters[key] = v / b;
  }

 private:
  struct Run {
    benchmark::IterationCount iterations;
    double value;
  };
  static std::map<std::string, std::vector<Run>>& map() {
    static std::map<std::string, std::vector<Run>> m;
    return m;
  }
};

}  // namespace roce::bench
