// SPDX-License-Identifier: MIT
// The capture switch: every frame a port sends and receives, written to a
// pcap file (LINKTYPE_ETHERNET, opens in Wireshark/tshark) through
// roce::pcapio::Writer. The mbuf segments are handed to WriteGather as they
// are; no copy here beyond the one WriteGather makes into its own buffer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <absl/status/statusor.h>
#include <absl/synchronization/mutex.h>

#include "stack/pcap/pcap_file.h"

struct rte_mbuf;

namespace roce::port {

class Capture {
 public:
  static absl::StatusOr<std::unique_ptr<Capture>> Open(const std::string& path,
                                                       uint32_t snaplen = 65535);
  // Writes the frames m[0..n) with timestamp `ts_ns` (CLOCK_REALTIME).
  // Thread-safe: queues of one port may be polled by different threads.
  void Write(rte_mbuf* const* m, uint16_t n, uint64_t ts_ns);
  void Flush();
  uint64_t frames() const { return writer_->frames(); }
  const std::string& path() const { return path_; }

  static uint64_t NowNs();

 private:
  Capture() = default;
  std::string path_;
  std::unique_ptr<pcapio::Writer> writer_;
  absl::Mutex mu_;  // guards parts_ (the writer has its own lock)
  std::vector<std::pair<const uint8_t*, size_t>> parts_;
};

}  // namespace roce::port
