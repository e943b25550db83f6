// SPDX-License-Identifier: MIT
// Classic pcap files through libpcap: a reader for captures (golden vectors,
// net_pcap output) and a writer the stack uses for its capture switch and the
// tools use to emit captures Wireshark opens (LINKTYPE_ETHERNET).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/synchronization/mutex.h>

struct pcap;
struct pcap_dumper;

namespace roce::pcapio {

struct Frame {
  uint64_t ts_ns = 0;
  uint32_t orig_len = 0;
  std::vector<uint8_t> data;
};

// Reads every frame of a classic pcap or pcapng file. Fails on a missing file
// or a link type other than Ethernet.
absl::StatusOr<std::vector<Frame>> ReadAll(const std::string& path);

class Writer {
 public:
  static absl::StatusOr<std::unique_ptr<Writer>> Open(const std::string& path,
                                                      uint32_t snaplen = 65535);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Appends one frame; `ts_ns` is the capture timestamp (any clock).
  // A frame may be given in pieces (header + payload segments).
  void Write(uint64_t ts_ns, const uint8_t* data, size_t len);
  void WriteGather(uint64_t ts_ns, const std::vector<std::pair<const uint8_t*, size_t>>& parts);
  void Flush();
  uint64_t frames() const { return frames_; }

 private:
  Writer() = default;
  absl::Mutex mu_;
  struct pcap* pcap_ = nullptr;
  struct pcap_dumper* dumper_ = nullptr;
  uint32_t snaplen_ = 65535;
  uint64_t frames_ = 0;
  std::vector<uint8_t> scratch_;
};

}  // namespace roce::pcapio
