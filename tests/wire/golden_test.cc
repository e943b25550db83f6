// SPDX-License-Identifier: MIT
// Golden vectors: every RoCEv2 packet in the reference captures (a hardware
// RNIC and Linux rxe, pcaps/reference) parses, its ICRC verifies, and building
// it again from the parsed representation gives the identical bytes. Counts
// are checked against the tshark summaries captured with them.
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "stack/wire/packet.h"
#include "tests/support/test_support.h"

namespace roce::wire {
namespace {

using roce::testing::ReferenceCaptures;

bool IsRoceUdp(const RocePacket& p, Error e) {
  return e != Error::kBadEthertype && e != Error::kNotUdp && e != Error::kNotRoce &&
         !(e == Error::kOk && p.udp.dst_port != kRoceV2Port);
}

// "BTH opcodes (count opcode)" section of a .tshark.txt file.
std::map<int, int> TsharkOpcodeCounts(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::map<int, int> m;
  bool in_section = false;
  while (std::getline(in, line)) {
    if (line.find("BTH opcodes") != std::string::npos) {
      in_section = true;
      continue;
    }
    // Rows of the section are "   <count> <opcode>".
    std::istringstream row(line);
    int count, opcode;
    std::string rest;
    if (in_section && (row >> count >> opcode) && !(row >> rest)) {
      m[opcode] += count;
    } else if (in_section) {
      in_section = false;
    }
  }
  return m;
}

TEST(Golden, EveryReferencePacketParsesVerifiesAndRebuildsIdentically) {
  int total = 0;
  for (const auto& cap : ReferenceCaptures()) {
    SCOPED_TRACE(cap.name);
    ASSERT_FALSE(cap.frames.empty()) << cap.path;
    std::map<int, int> opcodes;
    int roce = 0;
    for (size_t i = 0; i < cap.frames.size(); i++) {
      const auto& f = cap.frames[i].data;
      RocePacket p;
      const Error e = ParseRoceFrame(f, &p);
      if (!IsRoceUdp(p, e)) continue;
      SCOPED_TRACE(i + 1);
      roce++;
      ASSERT_EQ(e, Error::kOk) << ErrorName(e);
      opcodes[p.bth.opcode]++;
      // Rebuild with every length, checksum, pad and the ICRC recomputed.
      BuildOptions computed;
      computed.append_trailer = true;
      std::vector<uint8_t> out(f.size() + 16);
      out.resize(BuildRoceFrame(p, out, computed));
      EXPECT_EQ(out, f);
      // And verbatim (nothing recomputed) must also reproduce it.
      BuildOptions verbatim;
      verbatim.fill_lengths = verbatim.fill_ip_checksum = verbatim.fill_icrc = false;
      verbatim.zero_pad = false;
      verbatim.fill_udp6_checksum = false;
      verbatim.append_trailer = true;
      std::vector<uint8_t> out2(f.size() + 16);
      out2.resize(BuildRoceFrame(p, out2, verbatim));
      EXPECT_EQ(out2, f);
    }
    total += roce;
    if (cap.name == "hisilicon-roce") {
      EXPECT_EQ(roce, 105);  // pcaps/reference/README: 105 RoCEv2 packets from a hardware RNIC
      EXPECT_EQ(cap.frames.size(), 123u);
    } else {
      const std::string summary =
          cap.path.substr(0, cap.path.size() - 5) + ".tshark.txt";
      auto want = TsharkOpcodeCounts(summary);
      ASSERT_FALSE(want.empty()) << summary;
      std::map<int, int> got(opcodes.begin(), opcodes.end());
      EXPECT_EQ(got, want);
    }
  }
  EXPECT_EQ(total, 105 + 318 + 60 + 20 + 65);
}

TEST(Golden, HardwareCaptureFeatures) {
  // What the reference README says of the hardware capture: ECT(0), MigReq=1,
  // source port = QPN, path MTU 1024, SEND_FIRST/LAST_IMM/ONLY_IMM and ACKs.
  auto caps = ReferenceCaptures();
  const auto& hw = caps[0];
  ASSERT_EQ(hw.name, "hisilicon-roce");
  std::map<uint8_t, int> ops;
  for (const auto& fr : hw.frames) {
    RocePacket p;
    if (ParseRoceFrame(fr.data, &p) != Error::kOk) continue;
    ops[p.bth.opcode]++;
    EXPECT_EQ(p.ip4.tos, 0x02);
    EXPECT_TRUE(p.bth.mig_req);
    EXPECT_TRUE(p.udp.src_port == 69 || p.udp.src_port == 72) << p.udp.src_port;
    if (p.bth.opcode == op::kRcSendFirst) {
      EXPECT_EQ(p.payload.size(), 1024u);
    }
    if (p.bth.opcode == op::kRcAck) {
      EXPECT_EQ(syndrome::Type(p.aeth.syndrome), syndrome::kTypeAck);
    }
  }
  EXPECT_GT(ops[op::kRcSendFirst], 0);
  EXPECT_GT(ops[op::kRcSendLastImm], 0);
  EXPECT_GT(ops[op::kRcSendOnlyImm], 0);
  EXPECT_GT(ops[op::kRcAck], 0);
}

TEST(Golden, CmMadsInRpingCapture) {
  // rping's connection: REQ, REP, RTU ... DREQ, DREP, as UD SENDs to QP1 with
  // Q_Key 0x80010000 (the tshark summary lists the same attribute ids).
  auto caps = ReferenceCaptures();
  const auto& rp = caps[4];
  ASSERT_EQ(rp.name, "rping");
  std::vector<uint16_t> attrs;
  for (const auto& fr : rp.frames) {
    RocePacket p;
    if (ParseRoceFrame(fr.data, &p) != Error::kOk || p.bth.opcode != op::kUdSendOnly) continue;
    EXPECT_EQ(p.bth.dest_qp, 1u);
    EXPECT_EQ(p.deth.qkey, 0x80010000u);
    EXPECT_EQ(p.deth.src_qp, 1u);
    ASSERT_EQ(p.payload.size(), MadHeader::kMadLen);
    MadHeader m;
    ASSERT_EQ(m.Parse(p.payload), Error::kOk);
    EXPECT_EQ(m.mgmt_class, 0x07);
    EXPECT_EQ(m.class_version, 2);
    attrs.push_back(m.attr_id);
  }
  EXPECT_EQ(attrs, (std::vector<uint16_t>{0x10, 0x13, 0x14, 0x15, 0x16}));
}

}  // namespace
}  // namespace roce::wire
