// SPDX-License-Identifier: MIT
#include "stack/port/capture.h"

#include <time.h>

#include "stack/port/mbuf.h"

namespace roce::port {

absl::StatusOr<std::unique_ptr<Capture>> Capture::Open(const std::string& path, uint32_t snaplen) {
  auto w = pcapio::Writer::Open(path, snaplen);
  if (!w.ok()) return w.status();
  std::unique_ptr<Capture> c(new Capture());
  c->path_ = path;
  c->writer_ = std::move(*w);
  c->parts_.reserve(8);
  return c;
}

void Capture::Write(rte_mbuf* const* m, uint16_t n, uint64_t ts_ns) {
  absl::MutexLock l(&mu_);
  for (uint16_t i = 0; i < n; i++) {
    GatherParts(m[i], &parts_);
    writer_->WriteGather(ts_ns, parts_);
  }
}

void Capture::Flush() { writer_->Flush(); }

uint64_t Capture::NowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace roce::port
