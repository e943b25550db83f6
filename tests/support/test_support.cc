#include "tests/support/test_support.h"

#include <sys/stat.h>
#include <sys/wait.h>

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

}  // namespace roce::testing
