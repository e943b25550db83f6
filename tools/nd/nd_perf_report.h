// SPDX-License-Identifier: MIT
// nd_perf_report.h: what nd-perf prints of a test, in perftest's format: the bandwidth and
// latency tables (Printer; quiet for --pair's server) and the bandwidth figures computed from
// per-request post and completion times (ComputeBw: average and peak, MB/s or Gb/s). Part of
// nd-perf's one translation unit (nd_perf.cc).
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "nd_perf_options.h"

namespace ndperf {

constexpr const char kResultLine[] =
    "---------------------------------------------------------------------------------------\n";

// ---- Reports ---------------------------------------------------------------------------------------
struct BwReport {
  uint64_t size = 0, iters = 0;
  double peak = 0, avg = 0, msg_rate = 0;
};

struct Printer {
  const Options& o;
  bool on() const { return !o.quiet; }
  void Out(const char* fmt, ...) const __attribute__((format(printf, 2, 3))) {
    if (!on()) return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
  }
  void BwHeader() const {
    Out(o.gbits ? " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
                : " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n");
  }
  void BwRow(const BwReport& r) const {
    Out(" %-7" PRIu64 "    %-7" PRIu64 "          %-7.2f            %-7.2f\t\t   %-7.6f\n", r.size, r.iters, r.peak,
        r.avg, r.msg_rate);
  }
  void LatHeader() const {
    Out(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
        "99%% percentile[usec]   99.9%% percentile[usec] \n");
  }
  // deltas: one per measured iteration (us), divided by `factor` (2: a ping-pong's round trip).
  void LatRow(uint64_t size, uint64_t iters, std::vector<double> d, double factor) const {
    if (d.empty()) d.push_back(0);
    for (double& x : d) x /= factor;
    std::sort(d.begin(), d.end());
    double sum = 0;
    for (double x : d) sum += x;
    const double avg = sum / static_cast<double>(d.size());
    double var = 0;
    for (double x : d) var += (x - avg) * (x - avg);
    const double stdev = std::sqrt(var / static_cast<double>(d.size()));
    auto pct = [&](double p) {
      size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(d.size())));
      return d[std::min(d.size() - 1, i > 0 ? i - 1 : 0)];
    };
    Out(" %-7" PRIu64 " %" PRIu64 "          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f "
        "\t\t%-7.2f\n",
        size, iters, d.front(), d.back(), d[d.size() / 2], avg, stdev, pct(0.99), pct(0.999));
  }
  void Line() const { Out("%s", kResultLine); }
};

// BW figures from per-request post / completion times (us), perftest's way: the average over
// the whole run, the peak over the best window of consecutive requests.
inline BwReport ComputeBw(const Options& o, uint64_t size, const std::vector<double>& posted,
                   const std::vector<double>& completed) {
  BwReport r;
  r.size = size;
  r.iters = completed.size();
  if (completed.empty()) return r;
  const double unit = o.gbits ? 125000000.0 : 1048576.0;  // Gb (10^9 bits) or MiB per second
  const double total_us = std::max(completed.back() - posted.front(), 1e-3);
  r.avg = static_cast<double>(size) * static_cast<double>(r.iters) / total_us * 1e6 / unit;
  r.msg_rate = static_cast<double>(r.iters) / total_us;  // per us = millions per second
  if (o.no_peak) return r;
  // The shortest mean time per request over windows [i, j]: every window up to 5000 requests
  // (perftest's default count), windows up to a length that keeps the work near 2e7 steps above.
  double best = total_us / static_cast<double>(r.iters);
  const size_t n = std::min(completed.size(), posted.size());
  const size_t span = n <= 5000 ? n : std::max<size_t>(1, 20'000'000 / n);
  for (size_t i = 0; i < n; i++)
    for (size_t j = i; j < n && j < i + span; j++)
      if (completed[j] > posted[i])  // (a window of no time: completions seen in one poll)
        best = std::min(best, (completed[j] - posted[i]) / static_cast<double>(j - i + 1));
  r.peak = static_cast<double>(size) / best * 1e6 / unit;
  return r;
}

}  // namespace ndperf
