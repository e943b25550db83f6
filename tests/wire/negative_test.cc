// SPDX-License-Identifier: MIT
// Negative tests over the reference captures: every RoCEv2 frame truncated at
// every length is rejected as truncated; every single-bit flip is rejected
// with the reason the field it lands in calls for, or accepted when the field
// is one the spec leaves unprotected (Ethernet addresses, FECN/BECN, the
// masked IP/UDP fields when the IP checksum is not checked).
#include <set>

#include <gtest/gtest.h>

#include "stack/wire/packet.h"
#include "tests/support/test_support.h"

namespace roce::wire {
namespace {

using roce::testing::ReferenceCaptures;
using Reasons = std::set<Error>;

const Reasons kAccepted = {Error::kOk};

// What a flip of `bit` (0 = MSB of byte 0) in a valid IPv4 RoCEv2 frame
// without VLAN must give, from the field layout in the IBTA / RFC 791 / RFC 768.
Reasons Expected(const RocePacket& p, size_t frame_len, size_t bit, bool ip_csum) {
  const size_t byte = bit / 8;
  const unsigned mask = 0x80u >> (bit % 8);
  const size_t ip = p.l3_offset;             // 14
  const size_t udp = ip + p.ip4.Len();
  const size_t bth = udp + 8;
  const size_t end = frame_len - p.trailer.size();
  if (byte < 12) return kAccepted;                         // MAC addresses
  if (byte < ip) return {Error::kBadEthertype};
  if (byte < udp) {
    const size_t o = byte - ip;
    if (o == 0) return mask & 0xF0 ? Reasons{Error::kBadIpVersion}
                                   : Reasons{Error::kBadIpHeaderLength, Error::kBadIpChecksum,
                                             Error::kTruncated, Error::kBadUdpLength,
                                             Error::kNotRoce, Error::kIcrcMismatch};
    if (o == 2 || o == 3)
      return ip_csum ? Reasons{Error::kTruncated, Error::kBadIpChecksum, Error::kBadIpTotalLength}
                     : Reasons{Error::kTruncated, Error::kBadUdpLength, Error::kBadIpTotalLength};
    if (o == 6 && (mask & 0x20)) return {Error::kIpFragment};           // MF
    if ((o == 6 && (mask & 0x1F)) || o == 7) return {Error::kIpFragment};  // fragment offset
    if (ip_csum) return {Error::kBadIpChecksum};
    if (o == 1 || o == 8 || o == 10 || o == 11) return kAccepted;  // TOS, TTL, checksum: masked
    if (o == 9) return {Error::kNotUdp};
    return {Error::kIcrcMismatch};  // ID, DF/reserved flag, addresses
  }
  if (byte < bth) {
    const size_t o = byte - udp;
    if (o < 2) return {Error::kIcrcMismatch};  // source port: covered, any value legal
    if (o < 4) return {Error::kNotRoce};
    if (o < 6) return {Error::kBadUdpLength};
    return kAccepted;  // UDP checksum: masked, not checked (ICRC protects the datagram)
  }
  if (byte < bth + 12) {
    const size_t o = byte - bth;
    if (o == 0) return {Error::kUnknownOpcode, Error::kHeaderMismatch, Error::kBadPadCount,
                        Error::kIcrcMismatch};
    if (o == 1) {
      if (mask & 0x0F) return {Error::kBadTransportVersion};
      if (mask & 0x30) return {Error::kBadPadCount, Error::kIcrcMismatch};
      return {Error::kIcrcMismatch};  // SE, MigReq
    }
    if (o == 4) return kAccepted;  // FECN, BECN, resv6: masked
    return {Error::kIcrcMismatch};  // P_Key, DestQP, AckReq, resv7, PSN
  }
  if (byte < end) return {Error::kIcrcMismatch};  // extension headers, payload, pad, ICRC
  return kAccepted;                               // Ethernet trailer
}

class Negative : public ::testing::Test {
 protected:
  void SetUp() override {
    for (auto& cap : ReferenceCaptures())
      for (auto& fr : cap.frames) {
        RocePacket p;
        if (ParseRoceFrame(fr.data, &p) == Error::kOk) frames_.push_back(fr.data);
      }
    ASSERT_EQ(frames_.size(), 568u);
  }
  std::vector<std::vector<uint8_t>> frames_;
};

TEST_F(Negative, TruncatedAtEveryLengthIsRejectedAsTruncated) {
  for (const auto& f : frames_) {
    RocePacket full;
    ASSERT_EQ(ParseRoceFrame(f, &full), Error::kOk);
    const size_t datagram_end = f.size() - full.trailer.size();
    for (size_t n = 0; n < datagram_end; n++) {
      std::vector<uint8_t> t(f.begin(), f.begin() + static_cast<long>(n));  // own allocation: ASan sees overreads
      RocePacket p;
      ASSERT_EQ(ParseRoceFrame(t, &p), Error::kTruncated) << "len " << n << " of " << f.size();
    }
  }
}

void FlipAll(const std::vector<std::vector<uint8_t>>& frames, bool ip_csum) {
  ParseOptions opts;
  opts.verify_ip_checksum = ip_csum;
  size_t checked = 0, accepted = 0;
  for (const auto& f : frames) {
    RocePacket orig;
    ASSERT_EQ(ParseRoceFrame(f, &orig), Error::kOk);
    ASSERT_FALSE(orig.eth.has_vlan);
    ASSERT_FALSE(orig.ipv6);
    const size_t payload_start = orig.bth_offset + 12 + orig.info().ext_len;
    const size_t payload_end = payload_start + orig.payload.size();
    std::vector<uint8_t> g = f;
    for (size_t bit = 0; bit < f.size() * 8; bit++) {
      const size_t byte = bit / 8;
      // All header bits, pad, ICRC and trailer; a stride through long payloads.
      if (byte >= payload_start + 8 && byte < payload_end - 8 && bit % 61 != 0) continue;
      g[byte] ^= static_cast<uint8_t>(0x80u >> (bit % 8));
      RocePacket p;
      const Error e = ParseRoceFrame(g, &p, opts);
      g[byte] = f[byte];
      const Reasons want = Expected(orig, f.size(), bit, ip_csum);
      checked++;
      accepted += e == Error::kOk;
      ASSERT_TRUE(want.count(e)) << "bit " << bit << " (byte " << byte << ") gave " << ErrorName(e);
    }
  }
  EXPECT_GT(checked, 100000u);
  EXPECT_GT(accepted, 0u);
}

TEST_F(Negative, SingleBitFlipsWithIpChecksumChecked) { FlipAll(frames_, true); }

TEST_F(Negative, SingleBitFlipsInMaskedFieldsAreAcceptedWithoutIpChecksum) {
  FlipAll(frames_, false);
}

TEST(NegativeTransport, PadAndHeaderConsistency) {
  // A SEND_ONLY with 5 payload bytes: pad 3, aligned.
  uint8_t buf[12 + 8 + 4] = {};
  Bth b;
  b.opcode = op::kRcSendOnly;
  b.pad_count = 3;
  b.Emit(buf);
  RocePacket p;
  EXPECT_EQ(ParseTransport(ByteSpan(buf, sizeof buf), &p), Error::kOk);
  EXPECT_EQ(p.payload.size(), 5u);
  // Unaligned payload+pad.
  EXPECT_EQ(ParseTransport(ByteSpan(buf, sizeof buf - 1), &p), Error::kBadPadCount);
  // ACK with payload.
  b.opcode = op::kRcAck;
  b.pad_count = 0;
  b.Emit(buf);
  EXPECT_EQ(ParseTransport(ByteSpan(buf, 12 + 4 + 4), &p), Error::kOk);
  EXPECT_EQ(ParseTransport(ByteSpan(buf, sizeof buf), &p), Error::kHeaderMismatch);
  // READ_REQUEST too short for its RETH.
  b.opcode = op::kRcReadRequest;
  b.Emit(buf);
  EXPECT_EQ(ParseTransport(ByteSpan(buf, 12 + 8 + 4), &p), Error::kHeaderMismatch);
  // Pad with no payload.
  b.opcode = op::kRcSendOnly;
  b.pad_count = 1;
  b.Emit(buf);
  EXPECT_EQ(ParseTransport(ByteSpan(buf, 12 + 4), &p), Error::kBadPadCount);
  // TVer 1, opcode 0x15.
  b.pad_count = 0;
  b.tver = 1;
  b.Emit(buf);
  EXPECT_EQ(ParseTransport(ByteSpan(buf, 16), &p), Error::kBadTransportVersion);
  b.tver = 0;
  b.opcode = 0x15;
  b.Emit(buf);
  EXPECT_EQ(ParseTransport(ByteSpan(buf, 16), &p), Error::kUnknownOpcode);
  EXPECT_EQ(ParseTransport(ByteSpan(buf, 15), &p), Error::kTruncated);
}

}  // namespace
}  // namespace roce::wire
