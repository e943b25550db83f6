// SPDX-License-Identifier: MIT
// The frame writer (wire/frame.h) against independent references: the
// reference captures (a hardware RNIC and Linux rxe) written again from their
// parsed headers through a FrameTemplate give the identical bytes; frames of
// every opcode, both IP versions, 802.1Q and IPv4 options equal what the
// field-by-field serializer (BuildRoceFrame) emits; the scattered finish
// (IcrcOf, Udp6ChecksumOf) equals the one-buffer one. ParseRoceHeaders on a
// frame split at any point reads nothing past the first part (each part is
// its own heap block: ASan sees any overread) and agrees with ParseRoceFrame.
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "stack/wire/frame.h"
#include "stack/wire/packet.h"
#include "tests/support/test_support.h"

namespace roce::wire {
namespace {

using Bytes = std::vector<uint8_t>;

bool IsRoce(const RocePacket& p, Error e) {
  return e != Error::kBadEthertype && e != Error::kNotUdp && e != Error::kNotRoce &&
         !(e == Error::kOk && p.udp.dst_port != kRoceV2Port);
}

TEST(FrameWriter, ReferenceCapturesWriteIdentically) {
  int n = 0;
  for (const auto& cap : roce::testing::ReferenceCaptures()) {
    SCOPED_TRACE(cap.name);
    for (size_t i = 0; i < cap.frames.size(); i++) {
      const Bytes& f = cap.frames[i].data;
      RocePacket p;
      const Error e = ParseRoceFrame(f, &p);
      if (!IsRoce(p, e) || e != Error::kOk) continue;
      // Frames with Ethernet padding or non-zero pad bytes are not what a
      // writer emits; everything else must come out byte for byte.
      bool zero_pad = true;
      for (uint8_t b : p.pad) zero_pad &= b == 0;
      if (!p.trailer.empty() || !zero_pad) continue;
      SCOPED_TRACE(i + 1);
      const FrameTemplate t(p);
      ASSERT_EQ(t.FrameLen(p.bth.opcode, static_cast<uint32_t>(p.payload.size())), f.size());
      Bytes out(f.size());
      const Gather g{p.payload.data(), static_cast<uint32_t>(p.payload.size())};
      WriteOptions wo;
      wo.udp6_checksum = p.ipv6 && p.udp.checksum != 0;  // rxe sends 0 over IPv6: keep it
      const size_t len = WriteFrame(t, p.bth, p, &g, g.len ? 1 : 0, g.len, out.data(), wo);
      ASSERT_EQ(len, f.size());
      EXPECT_EQ(out, f);
      n++;
    }
  }
  EXPECT_GT(n, 100);
}

NetHeaders MakeNet(bool ipv6, bool vlan, uint8_t ip4_options) {
  NetHeaders n;
  n.eth.src.b = {0x02, 0, 0, 0, 0, 1};
  n.eth.dst.b = {0x02, 0, 0, 0, 0, 2};
  n.eth.has_vlan = vlan;
  n.eth.vlan_tci = 0x2005;
  n.ipv6 = ipv6;
  n.eth.ethertype = ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4;
  if (ipv6) {
    for (int i = 0; i < 16; i++) {
      n.ip6.src[i] = static_cast<uint8_t>(0x20 + i);
      n.ip6.dst[i] = static_cast<uint8_t>(0xA0 + i);
    }
    n.ip6.traffic_class = 0x02;
    n.ip6.flow_label = 0x12345;
    n.ip6.hop_limit = 63;
  } else {
    n.ip4.src = 0xC612000A;
    n.ip4.dst = 0xC6120002;
    n.ip4.tos = 0x02;
    n.ip4.ttl = 61;
    n.ip4.id = 0xBEEF;
    n.ip4.ihl = static_cast<uint8_t>(5 + ip4_options);
    for (int i = 0; i < ip4_options * 4; i++) n.ip4.options[i] = static_cast<uint8_t>(i == 0 ? 1 : 0);
  }
  n.udp.src_port = 0xC0DE;
  return n;
}

TEST(FrameWriter, EqualsFieldByFieldSerializerForEveryOpcode) {
  std::minstd_rand rng(7);
  int cases = 0;
  for (int variant = 0; variant < 4; variant++) {
    const bool ipv6 = variant == 1;
    const NetHeaders net = MakeNet(ipv6, variant == 2, variant == 3 ? 2 : 0);
    const FrameTemplate t(net);
    for (int op = 0; op < 256; op++) {
      const OpcodeInfo& info = GetOpcodeInfo(static_cast<uint8_t>(op));
      if (info.name == nullptr) continue;
      for (uint32_t plen : {0u, 1u, 2u, 3u, 4u, 5u, 255u, 256u, 1024u, 4096u}) {
        if (!info.payload && plen) continue;
        SCOPED_TRACE(::testing::Message() << "variant " << variant << " op " << op << " len " << plen);
        RocePacket p;
        static_cast<NetHeaders&>(p) = net;
        p.bth.opcode = static_cast<uint8_t>(op);
        p.bth.se = rng() & 1;
        p.bth.mig_req = rng() & 1;
        p.bth.becn = rng() & 1;
        p.bth.dest_qp = rng() & 0xFFFFFF;
        p.bth.ack_req = rng() & 1;
        p.bth.psn = rng() & 0xFFFFFF;
        auto r32 = [&] { return static_cast<uint32_t>(rng()); };
        p.deth = {r32(), 0, r32() & 0xFFFFFF};
        p.reth = {(uint64_t{r32()} << 32) | r32(), r32(), r32()};
        p.atomic = {(uint64_t{r32()} << 32) | r32(), r32(), uint64_t{r32()} << 20, r32()};
        p.aeth = {static_cast<uint8_t>(r32()), r32() & 0xFFFFFF};
        p.atomic_ack.orig = (uint64_t{rng()} << 32) | rng();
        p.imm = rng();
        p.ieth_rkey = rng();
        Bytes payload(plen);
        for (auto& b : payload) b = static_cast<uint8_t>(rng());
        p.payload = payload;
        Bytes want(FrameLen(p, plen));
        ASSERT_EQ(BuildRoceFrame(p, want), want.size());
        // The payload in up to three pieces.
        std::vector<Gather> pieces;
        uint32_t a = plen / 3, b = plen / 2;
        if (a) pieces.push_back({payload.data(), a});
        if (b > a) pieces.push_back({payload.data() + a, b - a});
        if (plen > b) pieces.push_back({payload.data() + b, plen - b});
        ASSERT_EQ(t.FrameLen(p.bth.opcode, plen), want.size());
        Bytes got(want.size());
        ASSERT_EQ(WriteFrame(t, p.bth, p, pieces.data(), static_cast<uint32_t>(pieces.size()), plen,
                             got.data()),
                  want.size());
        EXPECT_EQ(got, want);
        // Scattered: headers, then the ICRC and UDP checksum over the pieces.
        Bytes hdr(t.HeadersLen(p.bth.opcode));
        ASSERT_EQ(t.WriteHeaders(p.bth, p, plen, hdr.data()), hdr.size());
        Bytes want_hdr(want.begin(), want.begin() + static_cast<ptrdiff_t>(hdr.size()));
        if (ipv6) want_hdr[t.l4() + 6] = want_hdr[t.l4() + 7] = 0;  // filled in last, over everything
        EXPECT_EQ(hdr, want_hdr);
        const uint8_t pad = PadFor(plen);
        uint8_t tail[7] = {};
        Store32Le(tail + pad, IcrcOf(t, hdr.data(), hdr.size(), pieces.data(),
                                     static_cast<uint32_t>(pieces.size()), pad));
        EXPECT_TRUE(std::equal(tail, tail + pad + 4, want.end() - pad - 4));
        if (ipv6) {
          const uint16_t c = t.Udp6ChecksumOf(hdr.data(), hdr.size(), pieces.data(),
                                              static_cast<uint32_t>(pieces.size()), ByteSpan(tail, pad + 4));
          EXPECT_EQ(c, Load16(want.data() + t.l4() + 6));
        }
        RocePacket q;
        EXPECT_EQ(ParseRoceFrame(got, &q), Error::kOk);
        cases++;
      }
    }
  }
  EXPECT_GT(cases, 400);
}

// CopySmall (the inline payload's copy) against memcpy for every length up
// to 40 and every source offset in a word: exact-size heap blocks, so ASan
// sees a read or write past either end; the bytes around the copy untouched.
TEST(CopySmall, CopiesEveryLengthExactly) {
  std::mt19937 rng(7);
  for (size_t n = 0; n <= 40; n++) {
    for (size_t off = 0; off < 8; off++) {
      std::unique_ptr<uint8_t[]> src(new uint8_t[n + off]);
      for (size_t i = 0; i < n + off; i++) src[i] = static_cast<uint8_t>(rng());
      Bytes dst(n + 16, 0xA5);
      CopySmall(dst.data() + 8, src.get() + off, n);
      Bytes want(n + 16, 0xA5);
      if (n) std::memcpy(want.data() + 8, src.get() + off, n);
      ASSERT_EQ(dst, want) << "n=" << n << " off=" << off;
      std::unique_ptr<uint8_t[]> exact(new uint8_t[n]);
      CopySmall(exact.get(), src.get() + off, n);
      ASSERT_TRUE(n == 0 || std::memcmp(exact.get(), src.get() + off, n) == 0) << "n=" << n;
    }
  }
}

TEST(FrameWriter, Ipv4ChecksumIsPatchedIncrementally) {
  std::minstd_rand rng(11);
  for (int i = 0; i < 2000; i++) {
    NetHeaders n = MakeNet(false, false, static_cast<uint8_t>(rng() % 11));
    n.ip4.tos = static_cast<uint8_t>(rng());
    n.ip4.ttl = static_cast<uint8_t>(rng());
    n.ip4.id = static_cast<uint16_t>(rng());
    n.ip4.src = rng();
    n.ip4.dst = rng();
    for (auto& b : n.ip4.options) b = static_cast<uint8_t>(rng());
    const FrameTemplate t(n);
    Bth bth;
    bth.opcode = op::kRcSendOnly;
    ExtHeaders x;
    const uint32_t plen = rng() % 9000;
    uint8_t out[200];
    t.WriteHeaders(bth, x, plen, out);
    const uint8_t* ip = out + t.l3();
    EXPECT_TRUE(Ipv4Header::VerifyChecksum(ip, n.ip4.Len())) << i;
  }
}

// A frame split into two heap blocks: the first `avail` bytes and the rest.
Error ParseSplit(const Bytes& f, size_t avail, RocePacket* p, FrameLayout* lay, bool* straddle) {
  std::unique_ptr<uint8_t[]> head(new uint8_t[avail ? avail : 1]);
  std::copy(f.begin(), f.begin() + static_cast<ptrdiff_t>(avail), head.get());
  ParseOptions o;
  o.verify_icrc = false;
  return ParseRoceHeaders(head.get(), avail, f.size(), p, lay, straddle, o);
}

TEST(ParseRoceHeaders, SplitFramesAgreeWithWholeFrames) {
  std::minstd_rand rng(3);
  ParseOptions no_icrc;
  no_icrc.verify_icrc = false;
  int split_ok = 0;
  for (int round = 0; round < 3000; round++) {
    const NetHeaders net = MakeNet(round % 3 == 1, round % 5 == 2, round % 7 == 3 ? 1 : 0);
    RocePacket p;
    static_cast<NetHeaders&>(p) = net;
    static const uint8_t kOps[] = {op::kRcSendOnly, op::kRcWriteFirst, op::kRcWriteOnlyImm,
                                   op::kRcReadRequest, op::kRcAck, op::kRcReadResponseLast,
                                   op::kUdSendOnly, op::kCnp, op::kRcSendLastInv};
    p.bth.opcode = kOps[rng() % sizeof kOps];
    const uint32_t plen = GetOpcodeInfo(p.bth.opcode).payload ? rng() % 300 : 0;
    Bytes payload(plen, 0x5a);
    p.payload = payload;
    Bytes f(FrameLen(p, plen));
    BuildRoceFrame(p, f);
    // Mutate a few bytes in the headers now and then.
    if (round % 2) {
      const int k = 1 + static_cast<int>(rng() % 3);
      for (int j = 0; j < k; j++) f[rng() % std::min<size_t>(f.size(), 110)] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    if (round % 11 == 0) f.resize(rng() % f.size());
    RocePacket whole;
    const Error ew = ParseRoceFrame(f, &whole, no_icrc);
    for (size_t avail = 0; avail <= f.size(); avail++) {
      RocePacket q;
      FrameLayout lay;
      bool straddle = false;
      const Error e = ParseSplit(f, avail, &q, &lay, &straddle);
      if (straddle) {
        ASSERT_EQ(e, Error::kTruncated);
        ASSERT_LT(avail, f.size());
        continue;
      }
      ASSERT_EQ(e, ew) << "round " << round << " avail " << avail << " " << ErrorName(e) << " vs "
                       << ErrorName(ew);
      if (e != Error::kOk) continue;
      split_ok++;
      EXPECT_EQ(q.bth.psn, whole.bth.psn);
      EXPECT_EQ(q.bth.opcode, whole.bth.opcode);
      EXPECT_EQ(lay.payload, static_cast<size_t>(whole.payload.data() - f.data()));
      EXPECT_EQ(lay.payload_len, whole.payload.size());
      EXPECT_EQ(lay.icrc + 4 + whole.trailer.size(), f.size());
      EXPECT_EQ(q.reth.va, whole.reth.va);
      EXPECT_EQ(q.imm, whole.imm);
      EXPECT_EQ(q.ieth_rkey, whole.ieth_rkey);
    }
  }
  EXPECT_GT(split_ok, 10000);
}

TEST(ParseRoceHeaders, ReusedPacketClearsImmediateAndInvalidate) {
  NetHeaders net = MakeNet(false, false, 0);
  RocePacket p;
  static_cast<NetHeaders&>(p) = net;
  p.bth.opcode = op::kRcSendOnlyImm;
  p.imm = 0x11223344;
  Bytes pl(8, 1);
  p.payload = pl;
  Bytes a(FrameLen(p, 8));
  BuildRoceFrame(p, a);
  p.bth.opcode = op::kRcSendOnly;
  Bytes b(FrameLen(p, 8));
  BuildRoceFrame(p, b);
  RocePacket q;
  ASSERT_EQ(ParseRoceFrame(a, &q), Error::kOk);
  EXPECT_EQ(q.imm, 0x11223344u);
  ASSERT_EQ(ParseRoceFrame(b, &q), Error::kOk);
  EXPECT_EQ(q.imm, 0u);  // nothing of the previous packet stays visible
  EXPECT_EQ(q.ieth_rkey, 0u);
}

}  // namespace
}  // namespace roce::wire
