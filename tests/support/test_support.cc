// SPDX-License-Identifier: MIT
#include "tests/support/test_support.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <absl/strings/str_split.h>

namespace roce::testing {

std::string SourcePath(const std::string& rel) { return std::string(ROCE_SOURCE_DIR) + "/" + rel; }

std::string OutputDir(const std::string& name) {
  std::string d = std::string(ROCE_BUILD_DIR) + "/test-output/" + name;
  std::filesystem::create_directories(d);
  return d;
}

std::vector<Capture> ReferenceCaptures() {
  std::vector<Capture> out;
  for (const char* rel : {"pcaps/reference/hardware/hisilicon-roce.pcap",
                          "pcaps/reference/rxe/ib_write_bw_R.pcap",
                          "pcaps/reference/rxe/ibv_rc_pingpong.pcap",
                          "pcaps/reference/rxe/ibv_ud_pingpong.pcap",
                          "pcaps/reference/rxe/rping.pcap"}) {
    Capture c;
    c.path = SourcePath(rel);
    c.name = std::filesystem::path(rel).stem().string();
    auto frames = pcapio::ReadAll(c.path);
    if (frames.ok()) c.frames = std::move(*frames);
    out.push_back(std::move(c));
  }
  return out;
}

int Run(const std::string& cmd, std::string* out) {
  out->clear();
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return -1;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, n);
  int st = pclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> v = absl::StrSplit(s, '\n');
  if (!v.empty() && v.back().empty()) v.pop_back();
  return v;
}

bool HaveTshark() {
  std::string out;
  return Run("command -v tshark", &out) == 0 && !out.empty();
}

uint32_t ReferenceIcrc(const uint8_t* l3, size_t len) {
  std::vector<uint8_t> b(l3, l3 + len);
  size_t l4;
  if ((b[0] >> 4) == 4) {
    l4 = (b[0] & 0xF) * 4u;
    b[1] = 0xFF;            // TOS
    b[8] = 0xFF;            // TTL
    b[10] = b[11] = 0xFF;   // header checksum
  } else {
    l4 = 40;
    b[0] |= 0x0F;           // traffic class (bits 4-11) and flow label (12-31)
    b[1] = b[2] = b[3] = 0xFF;
    b[7] = 0xFF;            // hop limit
  }
  b[l4 + 6] = b[l4 + 7] = 0xFF;  // UDP checksum
  b[l4 + 8 + 4] = 0xFF;          // BTH resv8a (FECN, BECN, resv6)
  uLong c = crc32(0, nullptr, 0);
  const uint8_t ff[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  c = crc32(c, ff, 8);
  c = crc32(c, b.data(), static_cast<uInt>(b.size()));
  return static_cast<uint32_t>(c);
}

}  // namespace roce::testing
