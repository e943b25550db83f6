// SPDX-License-Identifier: MIT
// Seeded mutation fuzzing of the wire parsers (run under ASan/UBSan by
// `tools/run test`, which is where out-of-bounds reads would show).
//
// Inputs start from the reference captures (hardware RNIC and rxe frames):
// structure-aware mutations change header fields, the payload length, VLAN
// tagging and the IP version and rebuild the frame (so the ICRC and the
// checksums can be valid and parsing gets past them), then byte-level
// mutations (bit flips, random bytes, insertions, deletions, truncation,
// extension) break it in arbitrary ways. Each input is parsed into an
// exactly-sized heap buffer, with and without ICRC/IP-checksum checking.
//
// The oracle for an accepted frame is independent of how it was made: the
// parsed representation must be complete — rebuilding it verbatim (nothing
// recomputed) reproduces the input byte for byte — its spans must lie inside
// the input, and with checking on the ICRC recomputed from it must match.
// NDP and ARP parsers get the same treatment from frames built by our emitters,
// and the CM MAD parsers (MAD datagram, CM message, rdma_cm header) from the
// CM MADs of the rxe captures.
// Longer campaigns: WIRE_FUZZ_ROUNDS=5000000 WIRE_FUZZ_SEED=N build-asan/tests/wire/wire_fuzz_test
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "stack/wire/cm_msg.h"
#include "stack/wire/icrc.h"
#include "stack/wire/mad.h"
#include "stack/wire/ndp.h"
#include "stack/wire/packet.h"
#include "stack/wire/rdma_cm.h"
#include "tests/support/test_support.h"

namespace roce::wire {
namespace {

using Bytes = std::vector<uint8_t>;

std::vector<Bytes> ReferenceRoceFrames() {
  std::vector<Bytes> v;
  for (const auto& cap : roce::testing::ReferenceCaptures())
    for (const auto& f : cap.frames) {
      RocePacket p;
      if (ParseRoceFrame(f.data, &p) == Error::kOk) v.push_back(f.data);
    }
  return v;
}

bool Within(ByteSpan s, const Bytes& buf) {
  if (s.empty()) return true;
  return s.data() >= buf.data() && s.data() + s.size() <= buf.data() + buf.size();
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}
  uint32_t U(uint32_t n) { return n ? static_cast<uint32_t>(rng_() % n) : 0; }
  bool P(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  uint64_t R() { return rng_(); }

  // Field-level mutation of a parsed packet, rebuilt with (mostly) valid
  // lengths, checksums and ICRC. `payload` keeps the bytes p.payload views.
  Bytes Structured(RocePacket p, Bytes& payload) {
    switch (U(12)) {
      case 0: p.bth.opcode = static_cast<uint8_t>(U(256)); break;
      case 1: p.bth.opcode = static_cast<uint8_t>(U(0x18)); break;  // RC opcodes
      case 2: p.bth.psn = static_cast<uint32_t>(R()) & 0xFFFFFF; p.bth.ack_req = P(.5); break;
      case 3: p.bth.dest_qp = static_cast<uint32_t>(R()) & 0xFFFFFF; break;
      case 4: p.reth = {R(), static_cast<uint32_t>(R()), static_cast<uint32_t>(R())}; break;
      case 5: p.aeth.syndrome = static_cast<uint8_t>(U(256)); p.aeth.msn = U(1u << 24); break;
      case 6: payload.resize(U(4200)); break;
      case 7: payload.resize(U(8)); break;
      case 8:
        p.eth.has_vlan = !p.eth.has_vlan;
        p.eth.vlan_tci = static_cast<uint16_t>(R());
        break;
      case 9:
        if (!p.ipv6) {
          p.ipv6 = true;
          p.eth.ethertype = kEtherTypeIpv6;
          for (auto& b : p.ip6.src) b = static_cast<uint8_t>(R());
          for (auto& b : p.ip6.dst) b = static_cast<uint8_t>(R());
          p.ip6.hop_limit = static_cast<uint8_t>(U(256));
        }
        break;
      case 10: p.bth.tver = static_cast<uint8_t>(U(16)); p.bth.pkey = static_cast<uint16_t>(R()); break;
      default: p.bth.pad_count = static_cast<uint8_t>(U(4)); break;
    }
    for (auto& b : payload) b = static_cast<uint8_t>(R());
    p.payload = ByteSpan(payload.data(), payload.size());
    BuildOptions o;
    o.fill_lengths = !P(.05);
    o.fill_ip_checksum = !P(.05);
    o.fill_icrc = !P(.05);
    o.zero_pad = true;
    o.append_trailer = P(.1);
    Bytes out(FrameLen(p, static_cast<uint32_t>(payload.size())) + p.trailer.size() + 64);
    out.resize(BuildRoceFrame(p, out, o));
    return out;
  }

  // Byte-level damage.
  void Bytewise(Bytes& f) {
    const int n = 1 + static_cast<int>(U(6));
    for (int i = 0; i < n; i++) {
      switch (U(7)) {
        case 0:
          if (!f.empty()) f[U(static_cast<uint32_t>(f.size()))] ^= static_cast<uint8_t>(1u << U(8));
          break;
        case 1:
          if (!f.empty()) f[U(static_cast<uint32_t>(std::min<size_t>(f.size(), 80)))] = static_cast<uint8_t>(R());
          break;
        case 2: f.resize(U(static_cast<uint32_t>(f.size() + 1))); break;
        case 3: f.insert(f.begin() + U(static_cast<uint32_t>(f.size() + 1)), U(9), static_cast<uint8_t>(R())); break;
        case 4:
          if (!f.empty()) {
            const size_t at = U(static_cast<uint32_t>(f.size()));
            f.erase(f.begin() + at, f.begin() + std::min(f.size(), at + 1 + U(8)));
          }
          break;
        case 5: f.resize(f.size() + U(64), static_cast<uint8_t>(R())); break;
        default:
          if (f.size() > 8) {  // copy a chunk over another (headers shifted)
            const size_t a = U(static_cast<uint32_t>(f.size() - 4)), b = U(static_cast<uint32_t>(f.size() - 4));
            std::memmove(&f[b], &f[a], 4);
          }
          break;
      }
    }
  }

 private:
  std::mt19937_64 rng_;
};

// Makes a byte-mutated frame consistent again where it can: IP and UDP
// lengths from the frame size, the IPv4 header checksum (RFC 1071, computed
// here) and the ICRC — so that damage to the transport headers (inserted or
// deleted bytes, odd lengths) reaches the checks behind the ICRC.
void Repair(Bytes& f) {
  if (f.size() < 14) return;
  size_t l3 = 14;
  uint16_t et = static_cast<uint16_t>(f[12] << 8 | f[13]);
  if (et == 0x8100 && f.size() >= 18) {
    l3 = 18;
    et = static_cast<uint16_t>(f[16] << 8 | f[17]);
  }
  auto put16 = [&](size_t at, size_t v) {
    f[at] = static_cast<uint8_t>(v >> 8);
    f[at + 1] = static_cast<uint8_t>(v);
  };
  size_t udp;
  if (et == 0x0800) {
    if (f.size() < l3 + 20) return;
    const size_t ihl = (f[l3] & 15u) * 4;
    if (ihl < 20 || f.size() < l3 + ihl + 8 + 4) return;
    put16(l3 + 2, f.size() - l3);
    put16(l3 + 10, 0);
    uint32_t sum = 0;
    for (size_t i = 0; i < ihl; i += 2) sum += static_cast<uint32_t>(f[l3 + i] << 8 | f[l3 + i + 1]);
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    put16(l3 + 10, ~sum & 0xFFFF);
    udp = l3 + ihl;
  } else if (et == 0x86DD) {
    if (f.size() < l3 + 40 + 8 + 4) return;
    put16(l3 + 4, f.size() - l3 - 40);
    udp = l3 + 40;
  } else {
    return;
  }
  put16(udp + 4, f.size() - udp);
  bool ok = false;
  const uint32_t icrc = ComputeIcrc(ByteSpan(f.data() + l3, f.size() - l3 - 4), &ok);
  if (!ok) return;
  for (int i = 0; i < 4; i++) f[f.size() - 4 + i] = static_cast<uint8_t>(icrc >> (8 * i));
}

struct Stats {
  uint64_t inputs = 0, accepted = 0, accepted_checked = 0;
  std::map<Error, uint64_t> reasons;
};

void ExpectRebuildsAs(const RocePacket& p, const BuildOptions& o, const Bytes& want, const char* what) {
  Bytes out(want.size() + 64);
  out.resize(BuildRoceFrame(p, out, o));
  if (out == want) return;
  size_t at = 0;
  while (at < std::min(out.size(), want.size()) && out[at] == want[at]) at++;
  ADD_FAILURE() << what << ": first difference at byte " << at << " of " << want.size() << " (rebuilt "
                << out.size() << "), opcode " << static_cast<int>(p.bth.opcode) << ", BTH at " << p.bth_offset;
}

// Parses `input` from an exactly-sized heap copy and checks the oracle.
void ParseAndCheck(const Bytes& input, bool checked, Stats* st) {
  const Bytes buf(input);  // exact size: ASan sees any read past the end
  RocePacket p;
  ParseOptions po;
  po.verify_icrc = po.verify_ip_checksum = checked;
  const Error e = ParseRoceFrame(buf, &p, po);
  st->inputs++;
  st->reasons[e]++;
  if (e != Error::kOk) return;
  st->accepted++;
  if (checked) st->accepted_checked++;
  ASSERT_TRUE(Within(p.payload, buf) && Within(p.pad, buf) && Within(p.trailer, buf));
  ASSERT_LT(p.bth_offset, buf.size());
  ASSERT_LT(p.l3_offset, p.bth_offset);
  ASSERT_EQ(HeadersLen(p) + p.payload.size() + p.pad.size() + 4 + p.trailer.size(), buf.size());
  ASSERT_EQ(p.pad.size(), p.bth.pad_count);
  BuildOptions verbatim;
  verbatim.fill_lengths = verbatim.fill_ip_checksum = verbatim.fill_icrc = false;
  verbatim.zero_pad = false;
  verbatim.fill_udp6_checksum = false;
  verbatim.append_trailer = true;
  ExpectRebuildsAs(p, verbatim, buf, "an accepted frame's parsed form does not reproduce it");
  if (checked) {
    // Recomputing every derived field must not change an accepted frame
    // (except an IPv6 UDP checksum and the pad bytes' values, which
    // receivers do not check).
    BuildOptions computed;
    computed.append_trailer = true;
    computed.fill_udp6_checksum = false;
    computed.zero_pad = false;
    ExpectRebuildsAs(p, computed, buf, "an accepted frame has a derived field that is not what it should be");
  }
}

// ParseRoceHeaders' fast path for the common frame must accept and reject
// exactly what the general path does, and fill the same fields: both on the
// whole frame and with only its first `avail` bytes readable (a chain).
bool SameParse(const Bytes& f, size_t avail, const ParseOptions& o) {
  RocePacket a, b;
  FrameLayout la, lb;
  bool sa = false, sb = false;
  const Error ea = ParseRoceHeaders(f.data(), avail, f.size(), &a, &la, &sa, o);
  const Error eb = ParseRoceHeadersGeneral(f.data(), avail, f.size(), &b, &lb, &sb, o);
  if (ea != eb || sa != sb) return false;
  if (ea != Error::kOk) return true;
  auto same_bth = [](const Bth& x, const Bth& y) {
    return x.opcode == y.opcode && x.se == y.se && x.mig_req == y.mig_req && x.pad_count == y.pad_count &&
           x.tver == y.tver && x.pkey == y.pkey && x.fecn == y.fecn && x.becn == y.becn && x.resv6 == y.resv6 &&
           x.dest_qp == y.dest_qp && x.ack_req == y.ack_req && x.resv7 == y.resv7 && x.psn == y.psn;
  };
  const Ipv4Header &x4 = a.ip4, &y4 = b.ip4;
  return la.l3 == lb.l3 && la.bth == lb.bth && la.payload == lb.payload && la.payload_len == lb.payload_len &&
         la.icrc == lb.icrc && la.end == lb.end && a.l3_offset == b.l3_offset && a.bth_offset == b.bth_offset &&
         a.eth.dst.b == b.eth.dst.b && a.eth.src.b == b.eth.src.b && a.eth.has_vlan == b.eth.has_vlan &&
         a.eth.ethertype == b.eth.ethertype && (!a.eth.has_vlan || a.eth.vlan_tci == b.eth.vlan_tci) &&
         a.ipv6 == b.ipv6 &&
         (a.ipv6 || (x4.ihl == y4.ihl && x4.tos == y4.tos && x4.total_length == y4.total_length &&
                     x4.id == y4.id && x4.flags_frag == y4.flags_frag && x4.ttl == y4.ttl &&
                     x4.protocol == y4.protocol && x4.checksum == y4.checksum && x4.src == y4.src &&
                     x4.dst == y4.dst && x4.options == y4.options)) &&
         a.udp.src_port == b.udp.src_port && a.udp.dst_port == b.udp.dst_port && a.udp.length == b.udp.length &&
         a.udp.checksum == b.udp.checksum && same_bth(a.bth, b.bth) && a.reth.va == b.reth.va &&
         a.reth.rkey == b.reth.rkey && a.reth.dma_length == b.reth.dma_length && a.imm == b.imm &&
         a.ieth_rkey == b.ieth_rkey && a.aeth.syndrome == b.aeth.syndrome && a.aeth.msn == b.aeth.msn &&
         a.deth.qkey == b.deth.qkey && a.deth.src_qp == b.deth.src_qp;
}

TEST(WireFuzz, RoceFrameParserOnMutatedReferenceFrames) {
  const std::vector<Bytes> refs = ReferenceRoceFrames();
  ASSERT_GT(refs.size(), 500u);
  // WIRE_FUZZ_ROUNDS / WIRE_FUZZ_SEED run longer or other campaigns by hand.
  const char* env_rounds = std::getenv("WIRE_FUZZ_ROUNDS");
  const char* env_seed = std::getenv("WIRE_FUZZ_SEED");
  const uint32_t kRounds = env_rounds ? static_cast<uint32_t>(std::strtoul(env_rounds, nullptr, 10)) : 200000;
  Mutator m(env_seed ? std::strtoull(env_seed, nullptr, 10) : 20261122);
  Stats st;
  for (uint32_t i = 0; i < kRounds && !::testing::Test::HasFailure(); i++) {
    const Bytes& ref = refs[m.U(static_cast<uint32_t>(refs.size()))];
    Bytes f;
    const int kind = static_cast<int>(m.U(3));
    if (kind == 0) {
      f = ref;
      m.Bytewise(f);
      if (m.P(.5)) Repair(f);
    } else {
      RocePacket p;
      ASSERT_EQ(ParseRoceFrame(ref, &p), Error::kOk);
      Bytes payload(p.payload.begin(), p.payload.end());
      f = m.Structured(p, payload);
      if (kind == 2) {
        m.Bytewise(f);
        if (m.P(.5)) Repair(f);
      }
    }
    SCOPED_TRACE(i);
    ParseAndCheck(f, true, &st);
    ParseAndCheck(f, false, &st);
    for (bool checked : {true, false}) {
      ParseOptions o;
      o.verify_ip_checksum = o.verify_icrc = checked;
      ASSERT_TRUE(SameParse(f, f.size(), o)) << "fast and general paths differ (whole frame)";
      const size_t avail = m.U(static_cast<uint32_t>(f.size() + 1));
      ASSERT_TRUE(SameParse(f, avail, o)) << "fast and general paths differ (first " << avail << " bytes)";
    }
  }
  // The fuzzer must reach both sides of the parser, or it proves little.
  EXPECT_GT(st.accepted_checked, kRounds / 20u);
  EXPECT_GT(st.inputs - st.accepted, kRounds / 2u);
  EXPECT_GE(st.reasons.size(), 12u) << "too few distinct rejection reasons reached";
  std::printf("fuzz: %llu inputs, %llu accepted (%llu with ICRC/IP checksum checked), %zu outcomes\n",
              static_cast<unsigned long long>(st.inputs), static_cast<unsigned long long>(st.accepted),
              static_cast<unsigned long long>(st.accepted_checked), st.reasons.size());
  for (const auto& [e, n] : st.reasons)
    std::printf("  %-28s %llu\n", ErrorName(e), static_cast<unsigned long long>(n));
}

TEST(WireFuzz, TransportParserOnRandomBytes) {
  Mutator m(7);
  for (int i = 0; i < 50000; i++) {
    Bytes b(m.U(120));
    for (auto& x : b) x = static_cast<uint8_t>(m.R());
    if (!b.empty() && m.P(.5)) b[0] = static_cast<uint8_t>(m.U(0x18));  // RC opcodes
    const Bytes buf(b);
    RocePacket p;
    if (ParseTransport(buf, &p) == Error::kOk) {
      ASSERT_TRUE(Within(p.payload, buf) && Within(p.pad, buf));
      ASSERT_LE(p.payload.size() + p.pad.size() + Bth::kLen + GetOpcodeInfo(p.bth.opcode).ext_len + 4,
                buf.size());
    }
  }
}

// CM MADs: the 17 of the rxe captures, mutated structurally (attribute ID,
// class, length fields, rdma_cm header bytes) and bytewise, as bare MADs and
// put back into their frames (repaired or not). The oracle: an accepted MAD
// serializes back to its exact bytes, an accepted rdma_cm header emits back
// to its bytes, an accepted datagram rebuilds to the frame (less any
// Ethernet padding) both verbatim and with lengths/checksums/ICRC recomputed
// when they were checked.
TEST(WireFuzz, CmMadParsersOnMutatedCaptureMads) {
  std::vector<Bytes> frames;
  for (const auto& cap : roce::testing::ReferenceCaptures())
    for (const auto& f : cap.frames) {
      MadDatagram d;
      if (ParseMadDatagram(f.data, &d) == Error::kOk) frames.push_back(f.data);
    }
  ASSERT_EQ(frames.size(), 17u);
  const char* env_rounds = std::getenv("WIRE_FUZZ_ROUNDS");
  const char* env_seed = std::getenv("WIRE_FUZZ_SEED");
  const uint32_t kRounds = env_rounds ? static_cast<uint32_t>(std::strtoul(env_rounds, nullptr, 10)) : 200000;
  Mutator m(env_seed ? std::strtoull(env_seed, nullptr, 10) : 20261124);
  std::map<Error, uint64_t> mad_reasons, frame_reasons;
  uint64_t mads_ok = 0, frames_ok = 0, cma_ok = 0;
  std::map<uint16_t, uint64_t> attrs_ok;
  for (uint32_t i = 0; i < kRounds && !::testing::Test::HasFailure(); i++) {
    SCOPED_TRACE(i);
    Bytes frame = frames[m.U(static_cast<uint32_t>(frames.size()))];
    const size_t mad_at = frame.size() - kIcrcLen - mad::kLen;
    Bytes mad_bytes(frame.begin() + static_cast<long>(mad_at), frame.end() - kIcrcLen);
    // Structure-aware changes.
    const uint32_t n = 1 + m.U(3);
    for (uint32_t k = 0; k < n; k++) {
      switch (m.U(8)) {
        case 0: case 1:  // another message type, or one we do not parse
          Store16(&mad_bytes[16], static_cast<uint16_t>(m.P(.9) ? 0x10 + m.U(9) : m.U(0x30)));
          break;
        case 2: mad_bytes[24 + 9] = static_cast<uint8_t>(m.U(256)); break;  // REJ info length
        case 3: mad_bytes[24 + 5] = static_cast<uint8_t>(m.U(256)); break;  // SIDR_REP info length
        case 4: mad_bytes[m.P(.5) ? 1 : 2] = static_cast<uint8_t>(m.P(.5) ? m.U(256) : m.U(9)); break;
        case 5: mad_bytes[24 + 140 + m.U(2)] = static_cast<uint8_t>(m.U(256)); break;  // CMA version / IP version
        case 6: for (size_t j = 24; j < mad_bytes.size(); j++) if (m.P(.2)) mad_bytes[j] = static_cast<uint8_t>(m.R()); break;
        default: break;
      }
    }
    if (m.P(.3)) m.Bytewise(mad_bytes);
    {
      const Bytes buf(mad_bytes);  // exact size
      CmMad cm_mad;
      const Error e = ParseCmMad(buf, &cm_mad);
      mad_reasons[e]++;
      if (e == Error::kOk) {
        mads_ok++;
        attrs_ok[cm_mad.hdr.attr_id]++;
        ASSERT_EQ(buf.size(), mad::kLen);
        ASSERT_EQ(AttrIdOf(cm_mad.msg), cm_mad.hdr.attr_id);
        const auto again = SerializeCmMad(cm_mad);
        ASSERT_TRUE(std::equal(again.begin(), again.end(), buf.begin()))
            << "an accepted CM MAD's parsed form does not reproduce it";
      }
      if (buf.size() >= 24 + 140) {
        const Bytes cma(buf.begin() + 24 + 140, buf.end());
        CmaHeader h;
        if (h.Parse(cma) == Error::kOk) {
          cma_ok++;
          uint8_t out[CmaHeader::kLen];
          h.Emit(out);
          ASSERT_TRUE(std::equal(out, out + CmaHeader::kLen, cma.begin()));
        }
      }
    }
    // The MAD back in its frame.
    frame.erase(frame.begin() + static_cast<long>(mad_at), frame.end() - kIcrcLen);
    frame.insert(frame.begin() + static_cast<long>(mad_at), mad_bytes.begin(), mad_bytes.end());
    if (m.P(.8)) Repair(frame);
    if (m.P(.2)) m.Bytewise(frame);
    if (m.P(.1)) frame.resize(frame.size() + 1 + m.U(20), 0);  // Ethernet padding
    const Bytes buf(frame);
    for (const bool checked : {true, false}) {
      ParseOptions po;
      po.verify_icrc = po.verify_ip_checksum = checked;
      MadDatagram d;
      const Error e = ParseMadDatagram(buf, &d, po);
      frame_reasons[e]++;
      if (e != Error::kOk) continue;
      frames_ok++;
      const size_t len = MadDatagramLen(d);
      ASSERT_LE(len, buf.size());
      BuildOptions verbatim;
      verbatim.fill_lengths = verbatim.fill_ip_checksum = verbatim.fill_icrc = false;
      verbatim.fill_udp6_checksum = false;
      Bytes out(len);
      ASSERT_EQ(BuildMadDatagram(d, out, verbatim), len);
      ASSERT_TRUE(std::equal(out.begin(), out.end(), buf.begin()))
          << "an accepted MAD datagram's parsed form does not reproduce it";
      if (checked) {
        BuildOptions computed;
        computed.fill_udp6_checksum = false;
        ASSERT_EQ(BuildMadDatagram(d, out, computed), len);
        ASSERT_TRUE(std::equal(out.begin(), out.end(), buf.begin()))
            << "an accepted MAD datagram has a derived field that is not what it should be";
      }
    }
  }
  EXPECT_GT(mads_ok, kRounds / 5u);
  EXPECT_GT(frames_ok, kRounds / 10u);
  EXPECT_GT(cma_ok, kRounds / 20u);
  EXPECT_EQ(attrs_ok.size(), 9u) << "every CM message type must be reached";
  for (Error e : {Error::kTruncated, Error::kBadMad, Error::kNotCm, Error::kUnknownCmAttribute,
                  Error::kBadCmMessage})
    EXPECT_GT(mad_reasons[e], 0u) << ErrorName(e);
  for (Error e : {Error::kIcrcMismatch, Error::kBadMad, Error::kNotGsi})
    EXPECT_GT(frame_reasons[e], 0u) << ErrorName(e);
  std::printf("cm fuzz: %u rounds, %llu MADs accepted over %zu types, %llu datagrams accepted, %llu CMA headers\n",
              kRounds, static_cast<unsigned long long>(mads_ok), attrs_ok.size(),
              static_cast<unsigned long long>(frames_ok), static_cast<unsigned long long>(cma_ok));
  for (const auto& [e, c] : mad_reasons)
    std::printf("  mad   %-28s %llu\n", ErrorName(e), static_cast<unsigned long long>(c));
  for (const auto& [e, c] : frame_reasons)
    std::printf("  frame %-28s %llu\n", ErrorName(e), static_cast<unsigned long long>(c));
}

NdpFrame SampleNdp(Mutator& m) {
  NdpFrame f;
  f.eth.src = {0x52, 0x54, 0, 0xc6, 0x12, 0x02};
  f.eth.dst = {0x33, 0x33, 0xff, 0x12, 0, 0x10};
  f.eth.ethertype = kEtherTypeIpv6;
  f.eth.has_vlan = m.P(.2);
  f.ip6.next_header = 58;
  f.ip6.hop_limit = 255;
  const uint8_t src[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, 0xff, 0xfe, 0xc6, 0x12, 0x02};
  std::memcpy(f.ip6.src.data(), src, 16);
  const uint8_t dst[16] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0x12, 0, 0x10};
  std::memcpy(f.ip6.dst.data(), dst, 16);
  const bool ns = m.P(.5);
  f.nd.type = ns ? kIcmpv6NeighborSolicitation : kIcmpv6NeighborAdvertisement;
  if (!ns) {
    f.nd.flags = NdpMessage::kFlagOverride | NdpMessage::kFlagSolicited;
    std::memcpy(f.ip6.dst.data(), src, 16);
  }
  const uint8_t target[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xc6, 0x12};
  std::memcpy(f.nd.target.data(), target, 16);
  f.nd.has_lla = m.P(.8);
  f.nd.lla = f.eth.src;
  return f;
}

TEST(WireFuzz, NdpAndArpParsersOnMutatedFrames) {
  Mutator m(99);
  uint64_t ndp_ok = 0, arp_ok = 0;
  for (int i = 0; i < 40000; i++) {
    const NdpFrame f = SampleNdp(m);
    Bytes b(f.Len());
    ASSERT_EQ(BuildNdpFrame(f, b), b.size());
    if (m.P(.9)) m.Bytewise(b);
    const Bytes buf(b);
    NdpFrame out;
    if (ParseNdpFrame(buf, &out) == Error::kOk) {
      ndp_ok++;
      ASSERT_LE(out.Len(), buf.size());
      Bytes again(out.Len());
      ASSERT_EQ(BuildNdpFrame(out, again), again.size());
      ASSERT_TRUE(std::equal(again.begin(), again.end(), buf.begin()))
          << "an accepted NDP frame's parsed form does not reproduce it";
    }
    Bytes a(ArpPacket::kLen);
    ArpPacket arp;
    arp.oper = m.P(.5) ? ArpPacket::kRequest : ArpPacket::kReply;
    arp.spa = static_cast<uint32_t>(m.R());
    arp.tpa = static_cast<uint32_t>(m.R());
    arp.Emit(a.data());
    if (m.P(.9)) m.Bytewise(a);
    const Bytes abuf(a);
    ArpPacket parsed;
    if (parsed.Parse(abuf) == Error::kOk) {
      arp_ok++;
      Bytes again(ArpPacket::kLen);
      parsed.Emit(again.data());
      ASSERT_TRUE(std::equal(again.begin(), again.end(), abuf.begin()));
    }
  }
  EXPECT_GT(ndp_ok, 1000u);
  EXPECT_GT(arp_ok, 1000u);
}

}  // namespace
}  // namespace roce::wire
