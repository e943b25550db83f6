// SPDX-License-Identifier: MIT
// Our output against an independent decoder: the captures this project writes
// (every opcode over IPv4, IPv6 and 802.1Q, and every reference packet rebuilt
// by our builder) are decoded by tshark as InfiniBand/RRoCE with no malformed
// frame and no expert warning or error, and tshark reads back the same field
// values we put in.
#include <gtest/gtest.h>

#include <absl/strings/numbers.h>
#include <absl/strings/str_split.h>

#include "stack/pcap/pcap_file.h"
#include "stack/wire/packet.h"
#include "tests/support/test_support.h"
#include "tools/lib/samples.h"

namespace roce::wire {
namespace {

using namespace roce::testing;

std::string WritePcap(const std::string& name, const std::vector<std::vector<uint8_t>>& frames) {
  const std::string path = OutputDir("tshark") + "/" + name;
  auto w = pcapio::Writer::Open(path);
  EXPECT_TRUE(w.ok());
  uint64_t ts = 1'000'000'000;
  for (const auto& f : frames) (*w)->Write(ts += 1000, f.data(), f.size());
  return path;
}

uint64_t Num(const std::string& s) {
  uint64_t v = 0;
  if (s.rfind("0x", 0) == 0) {
    EXPECT_TRUE(absl::SimpleHexAtoi(s.substr(2), &v)) << s;
  } else {
    EXPECT_TRUE(absl::SimpleAtoi(s, &v)) << s;
  }
  return v;
}

// The hardware capture's source ports (69, 72) would otherwise be decoded as
// TFTP; perftest's 4-byte sync SENDs would be taken for RPC-over-RDMA.
const char* kDecodeOpts =
    " -d udp.port==69,infiniband -d udp.port==72,infiniband"
    " --disable-heuristic rpcrdma_infiniband";

void CheckWithTshark(const std::string& path, const std::vector<std::vector<uint8_t>>& frames) {
  ASSERT_TRUE(HaveTshark()) << "tshark is required (the test command installs it)";
  std::string out;
  // 1. Nothing malformed, no expert info of warning severity or above.
  ASSERT_EQ(Run("tshark -n -r '" + path + "'" + kDecodeOpts +
                    " -o udp.check_checksum:TRUE -o ip.check_checksum:TRUE"
                    " -Y '_ws.malformed || _ws.expert.severity >= 0x00600000' 2>/dev/null",
                &out),
            0);
  EXPECT_EQ(out, "") << "tshark flagged frames:\n" << out;
  // 2. Field values.
  ASSERT_EQ(Run("tshark -n -r '" + path + "'" + kDecodeOpts +
                    " -T fields -E separator=/t -E occurrence=f"
                    " -e frame.protocols -e infiniband.bth.opcode -e infiniband.bth.destqp"
                    " -e infiniband.bth.psn -e infiniband.bth.a -e infiniband.bth.padcnt"
                    " -e infiniband.reth.va -e infiniband.reth.r_key -e infiniband.reth.dmalen"
                    " -e infiniband.aeth.msn -e infiniband.deth.q_key -e infiniband.deth.srcqp"
                    " -e infiniband.bth.se -e infiniband.bth.p_key 2>/dev/null",
                &out),
            0);
  auto lines = Lines(out);
  ASSERT_EQ(lines.size(), frames.size());
  for (size_t i = 0; i < frames.size(); i++) {
    SCOPED_TRACE(i + 1);
    RocePacket p;
    ASSERT_EQ(ParseRoceFrame(frames[i], &p), Error::kOk);
    std::vector<std::string> c = absl::StrSplit(lines[i], '\t');
    ASSERT_EQ(c.size(), 14u) << lines[i];
    EXPECT_NE(c[0].find(":udp:infiniband"), std::string::npos) << c[0];
    EXPECT_EQ(Num(c[1]), p.bth.opcode);
    EXPECT_EQ(Num(c[2]), p.bth.dest_qp);
    EXPECT_EQ(Num(c[3]), p.bth.psn);
    EXPECT_EQ(Num(c[4]) != 0, p.bth.ack_req);
    EXPECT_EQ(Num(c[5]), p.bth.pad_count);
    EXPECT_EQ(Num(c[12]) != 0, p.bth.se);
    EXPECT_EQ(Num(c[13]), p.bth.pkey);
    if (p.Has(kHdrReth)) {
      EXPECT_EQ(Num(c[6]), p.reth.va);
      EXPECT_EQ(Num(c[7]), p.reth.rkey);
      EXPECT_EQ(Num(c[8]), p.reth.dma_length);
    } else if (p.Has(kHdrAtomicEth)) {  // tshark shows AtomicETH's VA and R_Key as reth.*
      EXPECT_EQ(Num(c[6]), p.atomic.va);
      EXPECT_EQ(Num(c[7]), p.atomic.rkey);
    } else {
      EXPECT_EQ(c[6], "");
    }
    if (p.Has(kHdrAeth)) {
      EXPECT_EQ(Num(c[9]), p.aeth.msn);
    }
    if (p.Has(kHdrDeth)) {
      EXPECT_EQ(Num(c[10]), p.deth.qkey);
      EXPECT_EQ(Num(c[11]), p.deth.src_qp);
    }
  }
}

TEST(Tshark, DecodesEveryOpcodeWeBuild) {
  auto frames = roce::tools::SampleFrames();
  CheckWithTshark(WritePcap("samples.pcap", frames), frames);
}

TEST(Tshark, DecodesReferencePacketsRebuiltByUs) {
  std::vector<std::vector<uint8_t>> frames;
  for (const auto& cap : ReferenceCaptures())
    for (const auto& fr : cap.frames) {
      RocePacket p;
      if (ParseRoceFrame(fr.data, &p) != Error::kOk) continue;
      std::vector<uint8_t> b(fr.data.size());
      b.resize(BuildRoceFrame(p, b));
      frames.push_back(std::move(b));
    }
  ASSERT_EQ(frames.size(), 568u);
  CheckWithTshark(WritePcap("rebuilt-reference.pcap", frames), frames);
}

}  // namespace
}  // namespace roce::wire
