// Shared helpers for the test suites: paths to the source tree, the reference
// captures, running an external command (tshark) and reading its output.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stack/pcap/pcap_file.h"

namespace roce::testing {

// Absolute path of a file in the source tree (ROCE_SOURCE_DIR is set by meson).
std::string SourcePath(const std::string& rel);
// A fresh directory under the build tree for files a test writes.
std::string OutputDir(const std::string& name);

// The reference captures in pcaps/reference: {path, frames}.
struct Capture {
  std::string name;
  std::string path;
  std::vector<pcapio::Frame> frames;
};
std::vector<Capture> ReferenceCaptures();

// Runs a shell command, returns its exit status and fills *out with stdout.
int Run(const std::string& cmd, std::string* out);
// Splits into lines, dropping a trailing empty one.
std::vector<std::string> Lines(const std::string& s);

// True if `tshark` is on PATH.
bool HaveTshark();

}  // namespace roce::testing
