// SPDX-License-Identifier: MIT
#include "stack/pcap/pcap_file.h"

#include <pcap/pcap.h>

#include <cstring>

#include <absl/strings/str_cat.h>

namespace roce::pcapio {

absl::StatusOr<std::vector<Frame>> ReadAll(const std::string& path) {
  char err[PCAP_ERRBUF_SIZE] = {};
  pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
  if (!p) return absl::NotFoundError(absl::StrCat(path, ": ", err));
  if (pcap_datalink(p) != DLT_EN10MB) {
    pcap_close(p);
    return absl::InvalidArgumentError(absl::StrCat(path, ": link type is not Ethernet"));
  }
  std::vector<Frame> out;
  pcap_pkthdr* h;
  const u_char* d;
  int rc;
  while ((rc = pcap_next_ex(p, &h, &d)) == 1) {
    Frame f;
    f.ts_ns = uint64_t(h->ts.tv_sec) * 1000000000ull + uint64_t(h->ts.tv_usec);
    f.orig_len = h->len;
    f.data.assign(d, d + h->caplen);
    out.push_back(std::move(f));
  }
  std::string perr = rc == PCAP_ERROR ? pcap_geterr(p) : "";
  pcap_close(p);
  if (rc == PCAP_ERROR) return absl::DataLossError(absl::StrCat(path, ": ", perr));
  return out;
}

absl::StatusOr<std::unique_ptr<Writer>> Writer::Open(const std::string& path, uint32_t snaplen) {
  std::unique_ptr<Writer> w(new Writer());
  w->snaplen_ = snaplen;
  w->pcap_ = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, static_cast<int>(snaplen),
                                                  PCAP_TSTAMP_PRECISION_MICRO);
  if (!w->pcap_) return absl::InternalError("pcap_open_dead failed");
  w->dumper_ = pcap_dump_open(w->pcap_, path.c_str());
  if (!w->dumper_) return absl::PermissionDeniedError(absl::StrCat(path, ": ", pcap_geterr(w->pcap_)));
  return w;
}

Writer::~Writer() {
  if (dumper_) pcap_dump_close(dumper_);
  if (pcap_) pcap_close(pcap_);
}

void Writer::Write(uint64_t ts_ns, const uint8_t* data, size_t len) {
  WriteGather(ts_ns, {{data, len}});
}

void Writer::WriteGather(uint64_t ts_ns, const std::vector<std::pair<const uint8_t*, size_t>>& parts) {
  absl::MutexLock l(&mu_);
  size_t len = 0;
  for (auto& [p, n] : parts) len += n;
  const size_t cap = len < snaplen_ ? len : snaplen_;
  scratch_.resize(cap);
  size_t off = 0;
  for (auto& [p, n] : parts) {
    if (off >= cap) break;
    size_t take = n < cap - off ? n : cap - off;
    std::memcpy(scratch_.data() + off, p, take);
    off += take;
  }
  pcap_pkthdr h{};
  h.ts.tv_sec = static_cast<time_t>(ts_ns / 1000000000ull);
  h.ts.tv_usec = static_cast<suseconds_t>((ts_ns % 1000000000ull) / 1000);
  h.caplen = static_cast<bpf_u_int32>(cap);
  h.len = static_cast<bpf_u_int32>(len);
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &h, scratch_.data());
  frames_++;
}

void Writer::Flush() {
  absl::MutexLock l(&mu_);
  pcap_dump_flush(dumper_);
}

}  // namespace roce::pcapio
