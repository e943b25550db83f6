// SPDX-License-Identifier: MIT
// Capture: a port writes every frame it sends and receives to a pcap file
// (switched on by the profile key port.capture or by StartCapture), chained
// mbufs included; roce::pcapio::ReadAll reads back exactly the bytes, and
// tshark opens the file and decodes every frame as RoCEv2 without a warning.
// Also the net_pcap driver from drivers-cfg/net_pcap_file.ini: a reference
// capture replayed into a port and what it sends written by the driver.
#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>
#include <gtest/gtest.h>

#include "stack/pcap/pcap_file.h"
#include "stack/port/port.h"
#include "tests/port/port_test_env.h"
#include "tests/support/test_support.h"
#include "tools/lib/samples.h"

namespace roce::port {
namespace {

using namespace roce::port::testing;
using roce::testing::HaveTshark;
using roce::testing::Lines;
using roce::testing::OutputDir;
using roce::testing::SourcePath;

// As in tests/wire/tshark_test.cc: no RPC-over-RDMA heuristics on our SENDs.
const char* kDecodeOpts = " --disable-heuristic rpcrdma_infiniband";

// A chain: the first 64 bytes in one segment, the rest in others.
rte_mbuf* Chained(rte_mempool* pool, const std::vector<uint8_t>& f) {
  const uint16_t hdr = static_cast<uint16_t>(std::min<size_t>(64, f.size()));
  rte_mbuf* m = AllocHeader(pool, hdr);
  EXPECT_NE(m, nullptr);
  WriteAt(m, 0, ByteSpan(f.data(), hdr));
  EXPECT_TRUE(AppendCopy(m, pool, ByteSpan(f.data() + hdr, f.size() - hdr)));
  return m;
}

std::vector<rte_mbuf*> SendAll(Port& tx, Port& rx, const std::vector<std::vector<uint8_t>>& frames) {
  std::vector<rte_mbuf*> v;
  for (const auto& f : frames) v.push_back(Chained(tx.pool(), f));
  return Exchange(tx, rx, v, frames.size());
}

TEST(Capture, EveryFrameSentAndReceivedReadsBackAndTsharkDecodesIt) {
  const std::vector<std::vector<uint8_t>> samples = roce::tools::SampleFrames();
  ASSERT_GT(samples.size(), 20u);
  const std::string dir = OutputDir("port_capture");
  const std::string path_a = dir + "/a.pcap", path_b = dir + "/b.pcap";
  PortProfile prof = RingProfile();
  prof.mtu = 9000;
  auto a = Port::Open([&] {
    PortProfile p = prof;
    EXPECT_TRUE(ApplyOverride(&p, "port.capture=" + path_a).ok());  // the profile switch
    return p;
  }());
  ASSERT_TRUE(a.ok()) << a.status();
  prof.ring_side = RingSide::kB;
  auto b = Port::Open(prof);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE((*a)->capturing());
  ASSERT_TRUE((*b)->StartCapture(path_b).ok());  // the API switch

  std::vector<rte_mbuf*> at_b = SendAll(**a, **b, samples);
  ASSERT_EQ(at_b.size(), samples.size());
  std::vector<std::vector<uint8_t>> echoed;
  for (rte_mbuf* m : at_b) echoed.push_back(Bytes(m));
  FreeAll(at_b);
  std::vector<rte_mbuf*> at_a = SendAll(**b, **a, echoed);
  ASSERT_EQ(at_a.size(), samples.size());
  FreeAll(at_a);
  EXPECT_EQ((*a)->Stats().capture_frames, 2 * samples.size());
  (*a)->StopCapture();
  (*b)->StopCapture();
  EXPECT_FALSE((*b)->capturing());

  for (const std::string& path : {path_a, path_b}) {
    SCOPED_TRACE(path);
    auto frames = pcapio::ReadAll(path);
    ASSERT_TRUE(frames.ok()) << frames.status();
    ASSERT_EQ(frames->size(), 2 * samples.size());
    for (size_t i = 0; i < frames->size(); i++) {
      EXPECT_EQ((*frames)[i].data, samples[i % samples.size()]) << i;
      EXPECT_EQ((*frames)[i].orig_len, samples[i % samples.size()].size());
    }
  }

  ASSERT_TRUE(HaveTshark()) << "tshark is required (the test command installs it)";
  std::string out;
  ASSERT_EQ(roce::testing::Run("tshark -n -r '" + path_a + "'" + kDecodeOpts +
                                   " -o ip.check_checksum:TRUE -T fields -e frame.protocols 2>/dev/null",
                               &out),
            0)
      << out;
  std::vector<std::string> lines = Lines(out);
  ASSERT_EQ(lines.size(), 2 * samples.size()) << out;
  for (const std::string& l : lines) EXPECT_TRUE(absl::StrContains(l, ":udp:infiniband")) << l;
  ASSERT_EQ(roce::testing::Run("tshark -n -r '" + path_a + "'" + kDecodeOpts +
                                   " -o ip.check_checksum:TRUE"
                                   " -Y '_ws.malformed || _ws.expert.severity >= 0x00600000' 2>/dev/null",
                               &out),
            0);
  EXPECT_EQ(out, "") << "tshark flagged frames:\n" << out;
}

TEST(Capture, TxCaptureShowsWhatLeftThePortAfterFaults) {
  const std::string path = OutputDir("port_capture") + "/faults.pcap";
  auto pair = OpenRingPair(RingProfile());
  ASSERT_TRUE(pair.ok());
  auto& [a, b] = *pair;
  ASSERT_TRUE(a->StartCapture(path).ok());
  FaultConfig f;
  f.tx.drop = 0.5;
  a->SetFaults(f);
  std::vector<rte_mbuf*> v;
  for (uint32_t i = 0; i < 200; i++) v.push_back(MbufFrom(a->pool(), TestFrame(80, i, a->mac(), b->mac())));
  std::vector<rte_mbuf*> rx = Exchange(*a, *b, v, 200);
  const PortStats s = a->Stats();
  a->StopCapture();
  auto frames = pcapio::ReadAll(path);
  ASSERT_TRUE(frames.ok());
  EXPECT_EQ(frames->size(), s.tx_packets);
  EXPECT_EQ(frames->size(), rx.size());
  EXPECT_EQ(s.tx_packets + s.tx_faults.dropped, 200u);
  for (size_t i = 0; i < rx.size(); i++) EXPECT_EQ((*frames)[i].data, Bytes(rx[i]));
  FreeAll(rx);
}

TEST(Capture, RingPairSidesCaptureToTheirOwnFiles) {
  const std::string dir = OutputDir("port_capture");
  PortProfile prof = RingProfile();
  prof.capture = dir + "/pair.pcap";
  {
    auto pair = OpenRingPair(prof);
    ASSERT_TRUE(pair.ok()) << pair.status();
    auto& [a, b] = *pair;
    EXPECT_EQ(b->profile().capture, dir + "/pair-b.pcap");
    std::vector<rte_mbuf*> v = {MbufFrom(a->pool(), TestFrame(70, 1, a->mac(), b->mac()))};
    std::vector<rte_mbuf*> rx = Exchange(*a, *b, v, 1);
    EXPECT_EQ(rx.size(), 1u);
    FreeAll(rx);
  }
  for (const char* f : {"/pair.pcap", "/pair-b.pcap"}) {
    auto frames = pcapio::ReadAll(dir + f);
    ASSERT_TRUE(frames.ok()) << frames.status();
    EXPECT_EQ(frames->size(), 1u) << f;
  }
}

TEST(Capture, UnwritablePathFails) {
  auto pair = OpenRingPair(RingProfile());
  ASSERT_TRUE(pair.ok());
  EXPECT_FALSE(pair->first->StartCapture("/nonexistent-dir/x.pcap").ok());
  EXPECT_FALSE(pair->first->capturing());
  PortProfile p = RingProfile();
  p.capture = "/nonexistent-dir/x.pcap";
  auto port = Port::Open(p);
  ASSERT_FALSE(port.ok());
  EXPECT_TRUE(absl::StrContains(port.status().message(), "/nonexistent-dir/x.pcap")) << port.status();
}

TEST(NetPcap, ReplaysACaptureAndWritesWhatItSends) {
  const std::string ref = SourcePath("pcaps/reference/rxe/rping.pcap");
  auto expect = pcapio::ReadAll(ref);
  ASSERT_TRUE(expect.ok()) << expect.status();
  const std::string dir = OutputDir("port_capture");
  const std::string out = dir + "/net_pcap_tx.pcap", cap = dir + "/net_pcap_capture.pcap";
  auto prof = LoadProfile(SourcePath("drivers-cfg/net_pcap_file.ini"),
                          std::vector<std::string>{absl::StrCat("port.devargs=rx_pcap=", ref, ",tx_pcap=", out),
                                                   "port.capture=" + cap});
  ASSERT_TRUE(prof.ok()) << prof.status();
  std::vector<rte_mbuf*> got;
  {
    auto port = Port::Open(*prof);
    ASSERT_TRUE(port.ok()) << port.status();
    for (int idle = 0; idle < 3;) {
      rte_mbuf* b[32];
      uint16_t k = (*port)->RxBurst(0, b, 32);
      got.insert(got.end(), b, b + k);
      idle = k ? 0 : idle + 1;
    }
    ASSERT_EQ(got.size(), expect->size());
    for (size_t i = 0; i < got.size(); i++) EXPECT_EQ(Bytes(got[i]), (*expect)[i].data) << i;
    // Send them back out: the driver writes them to tx_pcap.
    EXPECT_EQ((*port)->TxBurst(0, got.data(), static_cast<uint16_t>(got.size())), got.size());
    EXPECT_EQ((*port)->Stats().rx_packets, expect->size());
  }  // closing the port closes tx_pcap
  auto written = pcapio::ReadAll(out);
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(written->size(), expect->size());
  for (size_t i = 0; i < written->size(); i++) EXPECT_EQ((*written)[i].data, (*expect)[i].data) << i;
  auto captured = pcapio::ReadAll(cap);
  ASSERT_TRUE(captured.ok());
  EXPECT_EQ(captured->size(), 2 * expect->size());
}

}  // namespace
}  // namespace roce::port
