// Ratio counters for the bench programs: a benchmark measures its own loop
// (Measured: wall seconds and items done in them) and records the rate under
// a name; a later benchmark in the same run divides its rate by the median
// of what was recorded (repetitions included), so every figure is read as a
// ratio to a baseline measured on the same machine in the same minute.
// Plain C++ (no DPDK, no ND2 headers): both kinds of translation unit use it.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace roce::bench {

struct Measured {
  double secs = 0, items = 0;
  double rate() const { return secs > 0 ? items / secs : 0; }
};

// Wall seconds since `t0`.
inline double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class Figures {
 public:
  // Google Benchmark first runs a loop for 1, 10, 100 ... iterations to size
  // the real run: such a run of a pipelined loop times the posts and hardly
  // any of the work (a 64 KB Write loop of one iteration "moved" 60 GB/s), so
  // only a loop that ran at least kMinSecs (`secs`) is recorded.
  static constexpr double kMinSecs = 0.01;
  static void Record(const std::string& name, double v, double secs) {
    if (v > 0 && secs >= kMinSecs) map()[name].push_back(v);
  }
  // The median recorded under `name`, or 0 if none (the baseline was filtered out).
  static double Median(const std::string& name) {
    auto it = map().find(name);
    if (it == map().end() || it->second.empty()) return 0;
    std::vector<double> v = it->second;
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    return v[v.size() / 2];
  }
  // Sets counter `key` = v / Median(baseline) when the baseline was measured.
  static void Ratio(benchmark::State& st, const char* key, double v, const std::string& baseline) {
    const double b = Median(baseline);
    if (b > 0 && v > 0) st.counters[key] = v / b;
  }

 private:
  static std::map<std::string, std::vector<double>>& map() {
    static std::map<std::string, std::vector<double>> m;
    return m;
  }
};

}  // namespace roce::bench
