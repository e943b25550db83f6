// SPDX-License-Identifier: MIT
// Unit tests of wire/: PSN arithmetic, the opcode table against rdma-core's
// <infiniband/opcode.h>, header round trips, checksums, and the ICRC against
// an independent zlib computation that masks the fields itself.
#include <infiniband/opcode.h>
#include <zlib.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include <cstdio>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "stack/wire/checksum.h"
#include "stack/wire/icrc.h"
#include "stack/wire/opcode.h"
#include "stack/wire/packet.h"
#include "stack/wire/psn.h"
#include "tests/support/test_support.h"
#include "tools/lib/samples.h"

namespace roce::wire {
namespace {

TEST(Psn, ArithmeticWrapsAt24Bits) {
  EXPECT_EQ(PsnAdd(0xFFFFFF, 1), 0u);
  EXPECT_EQ(PsnAdd(0xFFFFFE, 5), 3u);
  EXPECT_EQ(PsnAdd(2, -3), 0xFFFFFFu);
  EXPECT_EQ(PsnDiff(3, 0xFFFFFE), 5);
  EXPECT_EQ(PsnDiff(0xFFFFFE, 3), -5);
  EXPECT_TRUE(PsnLess(0xFFFFF0, 0x10));
  EXPECT_FALSE(PsnLess(0x10, 0xFFFFF0));
  EXPECT_TRUE(PsnLessEq(7, 7));
  EXPECT_FALSE(PsnLess(7, 7));
  // Exactly half the space apart: b is "after" a by 2^23, a is not after b.
  EXPECT_EQ(PsnDiff(kPsnHalf, 0), static_cast<int32_t>(kPsnHalf));
  EXPECT_TRUE(PsnLess(0, kPsnHalf));
  EXPECT_EQ(PsnDiff(kPsnHalf + 1, 0), -static_cast<int32_t>(kPsnHalf - 1));
}

TEST(Opcode, MatchesRdmaCoreNumbering) {
  struct {
    int code;
    const char* name;
  } cases[] = {
      {IBV_OPCODE_RC_SEND_FIRST, "RC_SEND_FIRST"},
      {IBV_OPCODE_RC_SEND_ONLY_WITH_IMMEDIATE, "RC_SEND_ONLY_WITH_IMMEDIATE"},
      {IBV_OPCODE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE"},
      {IBV_OPCODE_RC_RDMA_READ_REQUEST, "RC_RDMA_READ_REQUEST"},
      {IBV_OPCODE_RC_RDMA_READ_RESPONSE_MIDDLE, "RC_RDMA_READ_RESPONSE_MIDDLE"},
      {IBV_OPCODE_RC_ACKNOWLEDGE, "RC_ACKNOWLEDGE"},
      {IBV_OPCODE_RC_ATOMIC_ACKNOWLEDGE, "RC_ATOMIC_ACKNOWLEDGE"},
      {IBV_OPCODE_RC_COMPARE_SWAP, "RC_CMP_SWAP"},
      {IBV_OPCODE_RC_FETCH_ADD, "RC_FETCH_ADD"},
      {IBV_OPCODE_UC_SEND_MIDDLE, "UC_SEND_MIDDLE"},
      {IBV_OPCODE_UC_RDMA_WRITE_LAST_WITH_IMMEDIATE, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE"},
      {IBV_OPCODE_UD_SEND_ONLY, "UD_SEND_ONLY"},
      {IBV_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE, "UD_SEND_ONLY_WITH_IMMEDIATE"},
  };
  for (auto& c : cases) EXPECT_STREQ(OpcodeName(static_cast<uint8_t>(c.code)), c.name);
  // RD is not supported; 0x15 and 0x18.. are not RC opcodes we accept.
  EXPECT_FALSE(IsValidOpcode(IBV_OPCODE_RD_SEND_ONLY));
  EXPECT_FALSE(IsValidOpcode(0x15));
  EXPECT_FALSE(IsValidOpcode(0x2C));
  EXPECT_FALSE(IsValidOpcode(0xFF));
  EXPECT_TRUE(IsValidOpcode(op::kCnp));
}

TEST(Opcode, HeadersPayloadAndPosition) {
  const OpcodeInfo& wr = GetOpcodeInfo(op::kRcWriteOnlyImm);
  EXPECT_EQ(wr.headers, kHdrReth | kHdrImmDt);
  EXPECT_EQ(wr.ext_len, 20);
  EXPECT_TRUE(wr.payload);
  EXPECT_TRUE(wr.request);
  EXPECT_EQ(wr.position, Position::kOnly);
  const OpcodeInfo& rr = GetOpcodeInfo(op::kRcReadResponseMiddle);
  EXPECT_EQ(rr.headers, 0);
  EXPECT_FALSE(rr.request);
  EXPECT_EQ(rr.position, Position::kMiddle);
  EXPECT_EQ(GetOpcodeInfo(op::kRcReadRequest).ext_len, kRethLen);
  EXPECT_FALSE(GetOpcodeInfo(op::kRcReadRequest).payload);
  EXPECT_EQ(GetOpcodeInfo(op::kRcAtomicAck).ext_len, kAethLen + kAtomicAckEthLen);
  EXPECT_EQ(GetOpcodeInfo(op::kRcSendOnlyInv).headers, kHdrIeth);
  EXPECT_EQ(GetOpcodeInfo(op::kUdSendOnlyImm).ext_len, kDethLen + kImmDtLen);
  EXPECT_EQ(GetOpcodeInfo(op::kCnp).ext_len, 16);
  int valid = 0, requests = 0;
  for (int i = 0; i < 256; i++) {
    const OpcodeInfo& info = GetOpcodeInfo(static_cast<uint8_t>(i));
    if (!info.name) continue;
    valid++;
    requests += info.request;
  }
  EXPECT_EQ(valid, 21 + 2 + 12 + 2 + 1);  // RC 0x00-0x14, RC inv x2, UC x12, UD x2, CNP
  EXPECT_EQ(requests, valid - 6);         // 4 read responses, ACK, atomic ACK
}

TEST(Headers, BthBitLayout) {
  Bth b;
  b.opcode = 0x0A;
  b.se = true;
  b.mig_req = true;
  b.pad_count = 3;
  b.pkey = 0xFFFF;
  b.fecn = true;
  b.becn = false;
  b.dest_qp = 0xABCDEF;
  b.ack_req = true;
  b.psn = 0x123456;
  uint8_t out[12];
  b.Emit(out);
  const uint8_t want[12] = {0x0A, 0xF0, 0xFF, 0xFF, 0x80, 0xAB, 0xCD, 0xEF, 0x80, 0x12, 0x34, 0x56};
  EXPECT_EQ(0, memcmp(out, want, 12));
  Bth c;
  ASSERT_EQ(c.Parse(ByteSpan(out, 12)), Error::kOk);
  EXPECT_EQ(c.dest_qp, 0xABCDEFu);
  EXPECT_EQ(c.psn, 0x123456u);
  EXPECT_EQ(c.pad_count, 3);
  EXPECT_TRUE(c.fecn && c.se && c.mig_req && c.ack_req && !c.becn);
}

TEST(Headers, ExtensionHeaderRoundTrips) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1000; i++) {
    uint8_t buf[32];
    Reth r{rng(), static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng())};
    r.Emit(buf);
    Reth r2;
    r2.Parse(buf);
    EXPECT_EQ(r2.va, r.va);
    EXPECT_EQ(r2.rkey, r.rkey);
    EXPECT_EQ(r2.dma_length, r.dma_length);
    EXPECT_EQ(Load64(buf), r.va);  // big-endian on the wire
    AtomicEth a{rng(), static_cast<uint32_t>(rng()), rng(), rng()};
    a.Emit(buf);
    AtomicEth a2;
    a2.Parse(buf);
    EXPECT_EQ(a2.va, a.va);
    EXPECT_EQ(a2.swap_add, a.swap_add);
    EXPECT_EQ(a2.compare, a.compare);
    Deth d{static_cast<uint32_t>(rng()), 0, static_cast<uint32_t>(rng() & 0xFFFFFF)};
    d.Emit(buf);
    Deth d2;
    d2.Parse(buf);
    EXPECT_EQ(d2.qkey, d.qkey);
    EXPECT_EQ(d2.src_qp, d.src_qp);
    Aeth e{static_cast<uint8_t>(rng()), static_cast<uint32_t>(rng() & 0xFFFFFF)};
    e.Emit(buf);
    Aeth e2;
    e2.Parse(buf);
    EXPECT_EQ(e2.syndrome, e.syndrome);
    EXPECT_EQ(e2.msn, e.msn);
  }
}

TEST(Headers, AethSyndromeEncoding) {
  EXPECT_EQ(syndrome::Ack(), 0x1F);
  EXPECT_EQ(syndrome::Rnr(14), 0x2E);
  EXPECT_EQ(syndrome::Nak(syndrome::kNakPsnSeqError), 0x60);
  EXPECT_EQ(syndrome::Nak(syndrome::kNakRemoteAccess), 0x62);
  EXPECT_EQ(syndrome::Type(0x62), syndrome::kTypeNak);
  EXPECT_EQ(syndrome::Value(0x2E), 14);
}

TEST(Headers, ParsersRejectShortInput) {
  uint8_t buf[64] = {};
  for (size_t n = 0; n < 64; n++) {
    ByteSpan s(buf, n);
    EthernetHeader eth;
    EXPECT_EQ(eth.Parse(s) == Error::kTruncated, n < 14);
    Bth b;
    EXPECT_EQ(b.Parse(s) == Error::kTruncated, n < 12);
    UdpHeader u;
    EXPECT_EQ(u.Parse(s) == Error::kTruncated, n < 8);
    ArpPacket a;
    if (n < 28) {
      EXPECT_EQ(a.Parse(s), Error::kTruncated);
    }
  }
}

TEST(Headers, ArpRoundTripAndValidation) {
  ArpPacket a;
  a.oper = ArpPacket::kReply;
  MacAddr::FromString("52:54:00:c6:12:02", &a.sha);
  a.spa = 0xC6120002;
  a.tpa = 0xC612000A;
  uint8_t buf[28];
  a.Emit(buf);
  ArpPacket b;
  ASSERT_EQ(b.Parse(ByteSpan(buf, 28)), Error::kOk);
  EXPECT_EQ(b.sha, a.sha);
  EXPECT_EQ(b.spa, a.spa);
  EXPECT_EQ(b.oper, ArpPacket::kReply);
  buf[7] = 9;  // opcode 9
  EXPECT_EQ(b.Parse(ByteSpan(buf, 28)), Error::kBadArp);
}

TEST(Headers, AddressStrings) {
  IpAddr a;
  ASSERT_TRUE(IpAddr::FromString("198.18.0.2", &a));
  EXPECT_TRUE(a.IsV4());
  EXPECT_EQ(a.V4(), 0xC6120002u);
  EXPECT_EQ(a.ToString(), "198.18.0.2");
  ASSERT_TRUE(IpAddr::FromString("fe80::5054:ff:fec6:1202", &a));
  EXPECT_FALSE(a.IsV4());
  EXPECT_EQ(a.ToString(), "fe80::5054:ff:fec6:1202");
  EXPECT_FALSE(IpAddr::FromString("1.2.3", &a));
  MacAddr m;
  ASSERT_TRUE(MacAddr::FromString("52:54:00:C6:12:0a", &m));
  EXPECT_EQ(m.ToString(), "52:54:00:c6:12:0a");
  EXPECT_FALSE(MacAddr::FromString("52:54:00:c6:12", &m));
  EXPECT_FALSE(MacAddr::FromString("52:54:00:c6:12:100", &m));
}

TEST(Checksum, Ipv4KnownVector) {
  // RFC 1071 style example: header from a real capture (hardware pcap frame).
  const uint8_t h[20] = {0x45, 0x02, 0x00, 0x3e, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                         0x00, 0x00, 0xc0, 0xa8, 0x01, 0x01, 0xc0, 0xa8, 0x01, 0x02};
  uint16_t c = Ipv4Header::ComputeChecksum(h, 20);
  uint8_t h2[20];
  memcpy(h2, h, 20);
  Store16(h2 + 10, c);
  // Summing a header that includes its checksum gives 0xFFFF.
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += Load16(h2 + i);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  EXPECT_EQ(sum, 0xFFFFu);
  EXPECT_TRUE(Ipv4Header::VerifyChecksum(h2, 20));
  h2[8]--;
  EXPECT_FALSE(Ipv4Header::VerifyChecksum(h2, 20));
}

// The header checksum against the RFC 791 definition written out (16-bit
// big-endian words, the checksum field as zero), for random headers of every
// legal length; verification accepts exactly the headers whose words sum to
// 0xFFFF (as Linux's ip_fast_csum does).
TEST(Checksum, Ipv4MatchesTheDefinition) {
  std::mt19937 rng(11);
  for (int round = 0; round < 20000; round++) {
    const size_t len = 20 + 4 * (rng() % 11);
    uint8_t h[60];
    for (size_t i = 0; i < len; i++) h[i] = static_cast<uint8_t>(rng());
    if (round % 7 == 0) std::memset(h + 12, 0xFF, len - 12);  // carries galore
    uint32_t sum = 0;
    for (size_t i = 0; i < len; i += 2)
      if (i != 10) sum += Load16(h + i);
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    ASSERT_EQ(Ipv4Header::ComputeChecksum(h, len), static_cast<uint16_t>(~sum)) << round;
    uint32_t all = 0;
    for (size_t i = 0; i < len; i += 2) all += Load16(h + i);
    while (all >> 16) all = (all & 0xFFFF) + (all >> 16);
    ASSERT_EQ(Ipv4Header::VerifyChecksum(h, len), all == 0xFFFF) << round;
    Store16(h + 10, Ipv4Header::ComputeChecksum(h, len));
    ASSERT_TRUE(Ipv4Header::VerifyChecksum(h, len)) << round;
    h[rng() % len] ^= static_cast<uint8_t>(1u << (rng() % 8));
    ASSERT_FALSE(Ipv4Header::VerifyChecksum(h, len)) << round;  // one flipped bit is always caught
  }
}

TEST(Checksum, InetChecksumSplitsAnywhere) {
  std::mt19937 rng(3);
  std::vector<uint8_t> data(1001);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  InetChecksum whole;
  whole.Add(data);
  for (size_t cut1 = 0; cut1 < 20; cut1++) {
    for (size_t cut2 = cut1; cut2 < cut1 + 9; cut2++) {
      InetChecksum c;
      c.Add(ByteSpan(data).first(cut1));
      c.Add(ByteSpan(data).subspan(cut1, cut2 - cut1));
      c.Add(ByteSpan(data).subspan(cut2));
      EXPECT_EQ(c.Finish(), whole.Finish());
    }
  }
}

// The ICRC computed independently: copy, mask per the spec, zlib crc32.
uint32_t ReferenceIcrc(ByteSpan l3) { return roce::testing::ReferenceIcrc(l3.data(), l3.size()); }

TEST(Icrc, MatchesIndependentZlibComputationOnEveryOpcodeV4AndV6) {
  int v6 = 0;
  for (const auto& f : roce::tools::SampleFrames()) {
    RocePacket p;
    ASSERT_EQ(ParseRoceFrame(f, &p), Error::kOk);
    const size_t l3len = f.size() - p.l3_offset;
    ByteSpan l3 = ByteSpan(f).subspan(p.l3_offset, l3len - kIcrcLen);
    EXPECT_EQ(ComputeIcrc(l3), ReferenceIcrc(l3));
    EXPECT_EQ(Load32Le(&f[f.size() - 4]), ReferenceIcrc(l3));
    v6 += p.ipv6;
  }
  EXPECT_GT(v6, 30);
}

TEST(Icrc, ChainedOverSegmentsEqualsOneShot) {
  auto frames = roce::tools::SampleFrames();
  std::mt19937 rng(11);
  for (const auto& f : frames) {
    RocePacket p;
    ASSERT_EQ(ParseRoceFrame(f, &p), Error::kOk);
    ByteSpan l3 = ByteSpan(f).subspan(p.l3_offset, f.size() - p.l3_offset - kIcrcLen);
    const uint32_t one = ComputeIcrc(l3);
    for (int k = 0; k < 5; k++) {
      Icrc c;
      ASSERT_TRUE(c.Begin(l3));
      size_t off = c.begun();
      while (off < l3.size()) {
        size_t n = std::min<size_t>(l3.size() - off, 1 + rng() % 700);
        c.Update(l3.subspan(off, n));
        off += n;
      }
      EXPECT_EQ(c.Value(), one);
    }
  }
}

// Every code that can hash a short frame (icrc.h, IcrcCode) against the
// reference, on the sample frames and on random IPv4 / IPv6 spans of every
// length around the 256-byte switch to ISA-L; whole and chained.
TEST(Icrc, EveryCodeTheCpuRunsMatchesTheReference) {
  const auto frames = roce::tools::SampleFrames();
  std::mt19937 rng(29);
  int ran = 0;
  for (IcrcCode code : {IcrcCode::kSeedIsal, IcrcCode::kClmulSse, IcrcCode::kClmulAvx}) {
    if (!SelectIcrcCode(code)) {
      std::printf("this CPU cannot run IcrcCode %d (not compared)\n", static_cast<int>(code));
      continue;
    }
    ran++;
    for (const auto& f : frames) {
      RocePacket p;
      ASSERT_EQ(ParseRoceFrame(f, &p), Error::kOk);
      const ByteSpan l3 = ByteSpan(f).subspan(p.l3_offset, f.size() - p.l3_offset - kIcrcLen);
      EXPECT_EQ(ComputeIcrc(l3), ReferenceIcrc(l3)) << "code " << static_cast<int>(code);
    }
    for (bool v6 : {false, true}) {
      for (size_t len = v6 ? 60 : 40; len <= 300; len++) {
        std::vector<uint8_t> b(len);
        for (auto& x : b) x = static_cast<uint8_t>(rng());
        b[0] = v6 ? static_cast<uint8_t>(0x60 | (b[0] & 0x0F)) : 0x45;
        const ByteSpan l3(b);
        const uint32_t want = ReferenceIcrc(l3);
        ASSERT_EQ(ComputeIcrc(l3), want) << "code " << static_cast<int>(code) << " v6 " << v6 << " len " << len;
        Icrc c;
        ASSERT_TRUE(c.Begin(l3));
        c.Update(l3.subspan(c.begun()));
        ASSERT_EQ(c.Value(), want);
        Icrc all;
        ASSERT_TRUE(all.BeginAll(l3));
        ASSERT_EQ(all.Value(), want);
      }
    }
  }
  ASSERT_TRUE(SelectIcrcCode(IcrcCode::kAuto));
  EXPECT_GE(ran, 1);
}

#if defined(__x86_64__)
// Plain asm in a function compiled without AVX: the compiler adds no
// VZEROUPPER on the way out (it does to a target("avx") function).
void DirtyUpperHalves() {
  asm volatile("vcmpps $0x0f, %%ymm1, %%ymm1, %%ymm1" ::: "xmm1");  // all ones in ymm1
}
__attribute__((target("xsave"))) uint64_t XinUse() { return _xgetbv(1); }
#endif

// ISA-L's AVX-512 fold returns with the upper halves of the vector registers
// in use; every legacy-SSE instruction after it then pays a state-transition
// penalty (measured on Zen 4: a 64 B ICRC 6.6 -> 15 ns). ComputeIcrc of a
// frame long enough for ISA-L leaves them clean.
TEST(Icrc, LeavesTheUpperHalvesOfTheVectorRegistersClean) {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  const bool xgetbv1 = __get_cpuid_count(0xD, 1, &a, &b, &c, &d) && (a & 4);  // XINUSE readable
  if (!__builtin_cpu_supports("avx") || !xgetbv1)
    ROCE_SKIP_ALLOWED("no AVX or no XGETBV(1) on this CPU: no upper state to leave dirty");
  constexpr uint64_t kUpper = (1u << 2) | (1u << 6);  // YMM, ZMM_Hi256
  const std::vector<uint8_t>* big = nullptr;
  const auto frames = roce::tools::SampleFrames();
  for (const auto& f : frames)
    if (f.size() >= 14 + 512 && (!big || f.size() > big->size())) big = &f;
  ASSERT_NE(big, nullptr) << "no sample frame of 512 bytes or more";
  RocePacket p;
  ASSERT_EQ(ParseRoceFrame(*big, &p), Error::kOk);
  const ByteSpan l3 = ByteSpan(*big).subspan(p.l3_offset, big->size() - p.l3_offset - kIcrcLen);
  DirtyUpperHalves();
  ASSERT_NE(XinUse() & kUpper, 0u) << "the CPU does not report the state this test is about";
  const uint32_t v = ComputeIcrc(l3);
  const uint64_t after = XinUse();
  EXPECT_EQ(after & kUpper, 0u) << std::hex << "XINUSE " << after;
  EXPECT_EQ(v, ReferenceIcrc(l3));
#else
  ROCE_SKIP_ALLOWED("not x86-64");
#endif
}

TEST(Icrc, MaskedFieldsDoNotChangeIt) {
  auto frames = roce::tools::SampleFrames();
  for (const auto& f0 : frames) {
    std::vector<uint8_t> f = f0;
    RocePacket p;
    ASSERT_EQ(ParseRoceFrame(f, &p), Error::kOk);
    ByteSpan l3 = ByteSpan(f).subspan(p.l3_offset, f.size() - p.l3_offset - kIcrcLen);
    const uint32_t before = ComputeIcrc(l3);
    uint8_t* ip = &f[p.l3_offset];
    if (p.ipv6) {
      ip[0] ^= 0x0F;
      ip[1] ^= 0xFF;
      ip[3] ^= 0x5A;
      ip[7] ^= 0x3C;  // hop limit
    } else {
      ip[1] ^= 0xFC;  // TOS
      ip[8] ^= 0x11;  // TTL
      ip[10] ^= 0x77;
    }
    f[p.bth_offset - 2] ^= 0xAB;  // UDP checksum
    f[p.bth_offset + 4] ^= 0xC1;  // FECN/BECN/resv6
    EXPECT_EQ(ComputeIcrc(l3), before);
    f[p.bth_offset + 11] ^= 1;    // PSN is covered
    EXPECT_NE(ComputeIcrc(l3), before);
    f[p.bth_offset + 11] ^= 1;
    if (p.ipv6) {
      ip[0] ^= 0x10;  // the IPv6 version nibble is covered (IBTA A17; rxe agrees)
      EXPECT_NE(ComputeIcrc(l3), before);
    }
  }
}

// Random bytes everywhere (the masked fields included), IPv4 with and without
// options and IPv6, every length from the bare headers up: the one-pass form,
// Begin + Update in pieces and BeginAll + Update all equal the reference.
TEST(Icrc, AnyHeaderBytesAnyLengthEveryEntryPoint) {
  std::mt19937 rng(7);
  for (int k = 0; k < 3000; k++) {
    const int kind = k % 3;  // 0: IPv4 20-byte header, 1: IPv4 with options, 2: IPv6
    const size_t ip_len = kind == 0 ? 20 : kind == 1 ? 4u * (6 + rng() % 10) : 40;
    const size_t len = ip_len + 20 + rng() % (k < 1500 ? 64 : 2000);
    std::vector<uint8_t> b(len);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    b[0] = kind == 2 ? static_cast<uint8_t>(0x60 | (b[0] & 0x0F)) : static_cast<uint8_t>(0x40 | (ip_len / 4));
    const ByteSpan l3(b);
    const uint32_t want = ReferenceIcrc(l3);
    bool ok = false;
    EXPECT_EQ(ComputeIcrc(l3, &ok), want) << k;
    EXPECT_TRUE(ok);
    Icrc c;
    ASSERT_TRUE(c.Begin(l3));
    EXPECT_EQ(c.begun(), ip_len + 20);
    const size_t cut = c.begun() + (len > c.begun() ? rng() % (len - c.begun() + 1) : 0);
    c.Update(l3.subspan(c.begun(), cut - c.begun()));
    c.Update(l3.subspan(cut));
    EXPECT_EQ(c.Value(), want) << k;
    Icrc all;
    ASSERT_TRUE(all.BeginAll(l3.first(cut)));
    EXPECT_EQ(all.begun(), cut);
    all.Update(l3.subspan(cut));
    EXPECT_EQ(all.Value(), want) << k;
  }
  // Too short, or not IP: refused, whatever the entry point.
  std::vector<uint8_t> shortv4(39, 0x45), v5(80, 0x55), shortv6(59, 0x60);
  for (const auto* v : {&shortv4, &v5, &shortv6}) {
    bool ok = true;
    EXPECT_EQ(ComputeIcrc(*v, &ok), 0u);
    EXPECT_FALSE(ok);
    Icrc c;
    EXPECT_FALSE(c.Begin(*v));
    EXPECT_FALSE(c.BeginAll(*v));
  }
}

// Every IPv4 and IPv6 length from the bare headers to past the 256 bytes
// where the PCLMULQDQ fold hands over to ISA-L (icrc.cc): each length mod 16
// (the fold's leading zeros, the LRH constant straddling its first two
// blocks, IPv6's BTH byte in block 3 or 4), random bytes in the masked fields
// and the IPv6 version's neighbours, the span ending exactly where its
// allocation does (ASan sees any read past it), every entry point equal to
// the reference.
TEST(Icrc, EveryIpv4AndIpv6LengthAcrossBothPaths) {
  std::mt19937 rng(13);
  for (size_t len = 40; len <= 700 + 20; len++) {
    for (int rep = 0; rep < 6; rep++) {
      const bool v6 = rep >= 3;
      if (v6 && len < 60) continue;
      std::vector<uint8_t> b(len);
      for (auto& x : b) x = static_cast<uint8_t>(rng());
      b[0] = v6 ? static_cast<uint8_t>(0x60 | (b[0] & 0x0F)) : 0x45;
      const ByteSpan l3(b);
      const uint32_t want = ReferenceIcrc(l3);
      bool ok = false;
      ASSERT_EQ(ComputeIcrc(l3, &ok), want) << len << (v6 ? " v6" : " v4");
      ASSERT_TRUE(ok);
      Icrc all;
      ASSERT_TRUE(all.BeginAll(l3));
      ASSERT_EQ(all.Value(), want) << len << (v6 ? " v6" : " v4");
      Icrc c;
      ASSERT_TRUE(c.Begin(l3));
      ASSERT_EQ(c.begun(), v6 ? 60u : 40u);
      c.Update(l3.subspan(c.begun()));
      ASSERT_EQ(c.Value(), want) << len << (v6 ? " v6" : " v4");
    }
  }
}

TEST(Build, EmitHeadersPlusChainedIcrcEqualsBuildRoceFrame) {
  for (const auto& f : roce::tools::SampleFrames()) {
    RocePacket p;
    ASSERT_EQ(ParseRoceFrame(f, &p), Error::kOk);
    std::vector<uint8_t> out(f.size());
    const uint32_t plen = static_cast<uint32_t>(p.payload.size());
    const size_t h = EmitHeaders(p, plen, out.data());
    ASSERT_EQ(h, HeadersLen(p));
    ASSERT_EQ(FrameLen(p, plen), f.size());
    memcpy(&out[h], p.payload.data(), plen);
    Icrc c;
    ASSERT_TRUE(c.Begin(ByteSpan(out).subspan(p.l3_offset)));
    c.Update(ByteSpan(out).subspan(p.l3_offset + c.begun(), h - p.l3_offset - c.begun()));
    c.Update(p.payload);
    const uint8_t zeros[3] = {};
    c.Update(ByteSpan(zeros, PadFor(plen)));
    Store32Le(&out[f.size() - 4], c.Value());
    if (p.ipv6) {  // the UDP checksum is left to the caller with EmitHeaders
      out[p.bth_offset - 2] = f[p.bth_offset - 2];
      out[p.bth_offset - 1] = f[p.bth_offset - 1];
    }
    EXPECT_EQ(out, f);
  }
}

TEST(Build, RejectsTooSmallOutput) {
  auto frames = roce::tools::SampleFrames();
  RocePacket p;
  ASSERT_EQ(ParseRoceFrame(frames[0], &p), Error::kOk);
  std::vector<uint8_t> out(frames[0].size() - 1);
  EXPECT_EQ(BuildRoceFrame(p, out), 0u);
}

TEST(Mad, HeaderRoundTrip) {
  MadHeader m;
  m.mgmt_class = 0x07;
  m.class_version = 2;
  m.method = 0x03;
  m.tid = 0x0123456789abcdefull;
  m.attr_id = 0x0010;
  m.attr_mod = 0;
  uint8_t buf[24];
  m.Emit(buf);
  MadHeader n;
  ASSERT_EQ(n.Parse(ByteSpan(buf, 24)), Error::kOk);
  EXPECT_EQ(n.tid, m.tid);
  EXPECT_EQ(n.attr_id, 0x10);
  EXPECT_EQ(buf[16], 0x00);
  EXPECT_EQ(buf[17], 0x10);
  EXPECT_EQ(n.Parse(ByteSpan(buf, 23)), Error::kBadMad);
  buf[0] = 2;
  EXPECT_EQ(n.Parse(ByteSpan(buf, 24)), Error::kBadMad);
}

}  // namespace
}  // namespace roce::wire
