// SPDX-License-Identifier: MIT
// CM MADs on the wire (stack/wire/mad.h, cm_msg.h, rdma_cm.h).
//
// Golden: every CM MAD in the rxe reference captures (rping and ib_write_bw
// -R: REQ, REP, RTU, DREQ, DREP) parses, its fields have the values listed in
// /work/shared/cm-reference.md (typed in here by hand from that document, not
// from our parser), and the MAD and the whole frame (ICRC included) rebuild
// byte for byte — from the parsed form and from scratch with the rdma_cm
// helpers. Layout: each bit field lands on the bits the IBTA tables give.
// Round trip: random values in every field (fixed seeds) survive emit+parse,
// and any 232 bytes under a CM header survive parse+emit. Negative:
// truncated, garbage and out-of-range input is refused, never read past.
#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stack/wire/cm_msg.h"
#include "stack/wire/mad.h"
#include "stack/wire/packet.h"
#include "stack/wire/rdma_cm.h"
#include "tests/support/test_support.h"
#include "tests/wire/cm_random.h"

namespace roce::wire {
namespace {

using Bytes = std::vector<uint8_t>;
using roce::testing::ReferenceCaptures;
using roce::wire::cmtest::CmRandom;

// ---- the CM MADs of the captures ----------------------------------------------------

struct CapturedMad {
  std::string cap;
  size_t frame = 0;  // 1-based, as tshark and cm-reference.md number them
  Bytes bytes;
};

std::vector<CapturedMad> CapturedMads() {
  std::vector<CapturedMad> v;
  for (const auto& cap : ReferenceCaptures())
    for (size_t i = 0; i < cap.frames.size(); i++) {
      RocePacket p;
      if (ParseRoceFrame(cap.frames[i].data, &p) != Error::kOk) continue;
      if (p.bth.opcode == op::kUdSendOnly && p.bth.dest_qp == kGsiQpn)
        v.push_back({cap.name, i + 1, cap.frames[i].data});
    }
  return v;
}

const IpAddr kActiveIp = IpAddr::FromV4(0xC6120003);   // 198.18.0.3
const IpAddr kPassiveIp = IpAddr::FromV4(0xC6120002);  // 198.18.0.2
const MacAddr kActiveMac{{0x52, 0x54, 0x00, 0xc6, 0x12, 0x03}};
const MacAddr kPassiveMac{{0x52, 0x54, 0x00, 0xc6, 0x12, 0x02}};

// cm-reference.md §1 and §3-§6, one row per MAD.
struct Expected {
  const char* cap;
  size_t frame;
  uint16_t attr;
  uint64_t tid;
  uint32_t bth_psn;       // the sender's QP1 send counter
  bool from_active;       // 198.18.0.3 -> 198.18.0.2
  uint32_t local_comm_id;
  uint32_t remote_comm_id;  // 0 for a REQ
  uint32_t qpn;             // REQ/REP local QPN, DREQ remote QPN; else 0
  uint32_t starting_psn;    // REQ/REP
};

const Expected kExpected[] = {
    {"rping", 1, cm::kAttrReq, 0x00000002e206e568, 0, true, 0x68e506e2, 0, 0x13, 0x678c64},
    {"rping", 2, cm::kAttrRep, 0x00000002e206e568, 0, false, 0xd87ca5b1, 0x68e506e2, 0x13, 0x33e664},
    {"rping", 3, cm::kAttrRtu, 0x00000002e206e568, 1, true, 0x68e506e2, 0xd87ca5b1, 0, 0},
    {"rping", 64, cm::kAttrDreq, 0x00000002e206e568, 2, true, 0x68e506e2, 0xd87ca5b1, 0x13, 0},
    {"rping", 65, cm::kAttrDrep, 0x00000002e206e568, 1, false, 0xd87ca5b1, 0x68e506e2, 0, 0},
    {"ib_write_bw_R", 1, cm::kAttrReq, 0x00000002e206e569, 3, true, 0x69e506e2, 0, 0x14, 0x90097b},
    {"ib_write_bw_R", 2, cm::kAttrRep, 0x00000002e206e569, 2, false, 0xda7ca5b1, 0x69e506e2, 0x14, 0x9feb51},
    {"ib_write_bw_R", 3, cm::kAttrRtu, 0x00000002e206e569, 4, true, 0x69e506e2, 0xda7ca5b1, 0, 0},
    {"ib_write_bw_R", 24, cm::kAttrReq, 0x00000002e206e56a, 5, true, 0x6ae506e2, 0, 0x15, 0xbc199e},
    {"ib_write_bw_R", 25, cm::kAttrRep, 0x00000002e206e56a, 3, false, 0xdc7ca5b1, 0x6ae506e2, 0x15, 0xacf230},
    {"ib_write_bw_R", 26, cm::kAttrRtu, 0x00000002e206e56a, 6, true, 0x6ae506e2, 0xdc7ca5b1, 0, 0},
    {"ib_write_bw_R", 313, cm::kAttrDreq, 0x00000002e206e56a, 7, true, 0x6ae506e2, 0xdc7ca5b1, 0x15, 0},
    {"ib_write_bw_R", 314, cm::kAttrDrep, 0x00000002e206e56a, 4, false, 0xdc7ca5b1, 0x6ae506e2, 0, 0},
    {"ib_write_bw_R", 315, cm::kAttrDreq, 0x00000002e206e569, 8, true, 0x69e506e2, 0xda7ca5b1, 0x14, 0},
    {"ib_write_bw_R", 316, cm::kAttrDreq, 0x00000002b1a57cda, 5, false, 0xda7ca5b1, 0x69e506e2, 0x14, 0},
    {"ib_write_bw_R", 317, cm::kAttrDrep, 0x00000002e206e569, 6, false, 0xda7ca5b1, 0x69e506e2, 0, 0},
    {"ib_write_bw_R", 318, cm::kAttrDrep, 0x00000002b1a57cda, 9, true, 0x69e506e2, 0xda7ca5b1, 0, 0},
};

// The REQs' rdma_cm side (§4): CMA source port, destination port, flow label,
// responder resources / initiator depth, and the data QP's UDP source port (§7).
struct ExpectedReq {
  const char* cap;
  size_t frame;
  uint16_t cma_src_port;
  uint16_t dst_port;
  uint32_t flow_label;
  uint8_t resources;
  uint16_t data_udp_sport;
};
const ExpectedReq kExpectedReqs[] = {
    {"rping", 1, 0x84b7, 7174, 0x02e2f, 1, 0xEE2F},
    {"ib_write_bw_R", 1, 0xc42b, 18515, 0x80988, 0, 0xC9A8},
    {"ib_write_bw_R", 24, 0xa685, 18515, 0x4726e, 0, 0xF27F},
};

template <typename T>
bool AllZero(const T& a) {
  return std::all_of(a.begin(), a.end(), [](uint8_t b) { return b == 0; });
}

const CapturedMad* Find(const std::vector<CapturedMad>& v, const std::string& cap, size_t frame) {
  for (const auto& m : v)
    if (m.cap == cap && m.frame == frame) return &m;
  return nullptr;
}

TEST(CmGolden, EveryCapturedMadMatchesTheReference) {
  const auto mads = CapturedMads();
  ASSERT_EQ(mads.size(), std::size(kExpected));  // 17: 5 in rping, 12 in ib_write_bw -R
  for (const Expected& x : kExpected) {
    SCOPED_TRACE(std::string(x.cap) + " #" + std::to_string(x.frame));
    const CapturedMad* cm = Find(mads, x.cap, x.frame);
    ASSERT_NE(cm, nullptr);
    MadDatagram d;
    ASSERT_EQ(ParseMadDatagram(cm->bytes, &d), Error::kOk);
    // §2: encapsulation.
    EXPECT_EQ(cm->bytes.size(), 322u);
    EXPECT_EQ(MadDatagramLen(d), 322u);
    EXPECT_FALSE(d.ipv6);
    EXPECT_EQ(d.ip4.src, (x.from_active ? kActiveIp : kPassiveIp).V4());
    EXPECT_EQ(d.ip4.dst, (x.from_active ? kPassiveIp : kActiveIp).V4());
    EXPECT_EQ(d.eth.src, x.from_active ? kActiveMac : kPassiveMac);
    EXPECT_EQ(d.ip4.tos, 0);
    EXPECT_EQ(d.ip4.ttl, 64);
    EXPECT_EQ(d.ip4.flags_frag, Ipv4Header::kFlagDf);
    EXPECT_EQ(d.udp.src_port, 0xD872);
    EXPECT_EQ(d.udp.src_port, kQp1UdpSrcPort);
    EXPECT_EQ(d.udp.checksum, 0);
    EXPECT_EQ(d.bth.opcode, 0x64);
    EXPECT_EQ(d.bth.pkey, 0xFFFF);
    EXPECT_EQ(d.bth.dest_qp, 1u);
    EXPECT_TRUE(d.bth.ack_req);
    EXPECT_FALSE(d.bth.se || d.bth.mig_req);
    EXPECT_EQ(d.bth.pad_count, 0);
    EXPECT_EQ(d.bth.psn, x.bth_psn);
    EXPECT_EQ(d.deth.qkey, 0x80010000u);
    EXPECT_EQ(d.deth.src_qp, 1u);
    // §3: MAD header.
    CmMad m;
    ASSERT_EQ(ParseCmMad(d.mad, &m), Error::kOk);
    EXPECT_EQ(m.hdr.base_version, 1);
    EXPECT_EQ(m.hdr.mgmt_class, 0x07);
    EXPECT_EQ(m.hdr.class_version, 2);
    EXPECT_EQ(m.hdr.method, mad::kMethodSend);
    EXPECT_EQ(m.hdr.status, 0);
    EXPECT_EQ(m.hdr.class_specific, 0);
    EXPECT_EQ(m.hdr.resv, 0);
    EXPECT_EQ(m.hdr.attr_mod, 0u);
    EXPECT_EQ(m.hdr.attr_id, x.attr);
    EXPECT_EQ(AttrIdOf(m.msg), x.attr);
    EXPECT_EQ(m.hdr.tid, x.tid);
    // The TID is Linux's: hi_tid 2 over the originator's byte-swapped comm ID.
    EXPECT_EQ(CmTidCommId(m.hdr.tid) == x.local_comm_id, x.attr != cm::kAttrRep && x.attr != cm::kAttrDrep)
        << "REQ/RTU/DREQ carry the sender's own TID, REP/DREP echo the request's";
    // §4-§6: the message.
    switch (x.attr) {
      case cm::kAttrReq: {
        const CmReq* r = m.As<CmReq>();
        ASSERT_NE(r, nullptr);
        EXPECT_EQ(r->local_comm_id, x.local_comm_id);
        EXPECT_EQ(m.hdr.tid, FormCmTid(2, r->local_comm_id));
        EXPECT_EQ(r->local_qpn, x.qpn);
        EXPECT_EQ(r->starting_psn, x.starting_psn);
        break;
      }
      case cm::kAttrRep: {
        const CmRep* r = m.As<CmRep>();
        ASSERT_NE(r, nullptr);
        EXPECT_EQ(r->local_comm_id, x.local_comm_id);
        EXPECT_EQ(r->remote_comm_id, x.remote_comm_id);
        EXPECT_EQ(m.hdr.tid, FormCmTid(2, r->remote_comm_id));  // echoes the REQ's
        EXPECT_EQ(r->local_qpn, x.qpn);
        EXPECT_EQ(r->starting_psn, x.starting_psn);
        EXPECT_EQ(r->local_qkey, 0u);
        EXPECT_EQ(r->local_eecn, 0u);
        EXPECT_EQ(r->vendor_id, 0u);
        EXPECT_EQ(r->target_ack_delay, 15);
        EXPECT_EQ(r->failover_accepted, 0);
        EXPECT_FALSE(r->end_to_end_flow_control);
        EXPECT_EQ(r->rnr_retry_count, 7);
        EXPECT_FALSE(r->srq);
        EXPECT_EQ(r->resv27, 0);
        EXPECT_EQ(r->local_ca_guid, 0x505400fffec61202u);
        EXPECT_EQ(r->local_ca_guid, GuidFromMac(kPassiveMac));
        EXPECT_TRUE(AllZero(r->private_data));
        break;
      }
      case cm::kAttrRtu: {
        const CmRtu* r = m.As<CmRtu>();
        ASSERT_NE(r, nullptr);
        EXPECT_EQ(r->local_comm_id, x.local_comm_id);
        EXPECT_EQ(r->remote_comm_id, x.remote_comm_id);
        EXPECT_TRUE(AllZero(r->private_data));
        break;
      }
      case cm::kAttrDreq: {
        const CmDreq* r = m.As<CmDreq>();
        ASSERT_NE(r, nullptr);
        EXPECT_EQ(r->local_comm_id, x.local_comm_id);
        EXPECT_EQ(r->remote_comm_id, x.remote_comm_id);
        EXPECT_EQ(r->remote_qpn_eecn, x.qpn);
        EXPECT_EQ(r->resv11, 0);
        EXPECT_EQ(m.hdr.tid, FormCmTid(2, r->local_comm_id));
        EXPECT_TRUE(AllZero(r->private_data));
        break;
      }
      case cm::kAttrDrep: {
        const CmDrep* r = m.As<CmDrep>();
        ASSERT_NE(r, nullptr);
        EXPECT_EQ(r->local_comm_id, x.local_comm_id);
        EXPECT_EQ(r->remote_comm_id, x.remote_comm_id);
        EXPECT_EQ(m.hdr.tid, FormCmTid(2, r->remote_comm_id));  // echoes the DREQ's
        EXPECT_TRUE(AllZero(r->private_data));
        break;
      }
      default:
        ADD_FAILURE() << "unexpected attribute " << x.attr;
    }
  }
}

TEST(CmGolden, ReqFieldsAndRdmaCmHeader) {
  const auto mads = CapturedMads();
  for (const ExpectedReq& x : kExpectedReqs) {
    SCOPED_TRACE(std::string(x.cap) + " #" + std::to_string(x.frame));
    const CapturedMad* cm = Find(mads, x.cap, x.frame);
    ASSERT_NE(cm, nullptr);
    MadDatagram d;
    ASSERT_EQ(ParseMadDatagram(cm->bytes, &d), Error::kOk);
    CmMad m;
    ASSERT_EQ(ParseCmMad(d.mad, &m), Error::kOk);
    const CmReq* r = m.As<CmReq>();
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->resv4, 0);
    EXPECT_EQ(r->vendor_id, 0u);
    EXPECT_EQ(r->service_id, 0x0000000001060000u | x.dst_port);
    EXPECT_EQ(r->service_id, RdmaCmTcpServiceId(x.dst_port));
    const auto sid = ParseRdmaCmServiceId(r->service_id);
    ASSERT_TRUE(sid.has_value());
    EXPECT_EQ(sid->port_space, rdma_cm::kPortSpaceTcp);
    EXPECT_EQ(sid->port, x.dst_port);
    EXPECT_EQ(r->local_ca_guid, 0x505400fffec61203u);
    EXPECT_EQ(r->local_ca_guid, GuidFromMac(kActiveMac));
    EXPECT_EQ(r->resv24, 0u);
    EXPECT_EQ(r->local_qkey, 0u);
    EXPECT_EQ(r->responder_resources, x.resources);
    EXPECT_EQ(r->initiator_depth, x.resources);
    EXPECT_EQ(r->local_eecn, 0u);
    EXPECT_EQ(r->remote_eecn, 0u);
    EXPECT_EQ(r->remote_cm_response_timeout, 20);
    EXPECT_EQ(r->transport_service_type, cm::kTransportRc);
    EXPECT_FALSE(r->end_to_end_flow_control);
    EXPECT_EQ(r->local_cm_response_timeout, 20);
    EXPECT_EQ(r->retry_count, 7);
    EXPECT_EQ(r->pkey, 0xFFFF);
    EXPECT_EQ(r->path_mtu, cm::kMtu1024);
    EXPECT_EQ(cm::MtuBytes(r->path_mtu), 1024u);
    EXPECT_FALSE(r->rdc_exists);
    EXPECT_EQ(r->rnr_retry_count, 7);
    EXPECT_EQ(r->max_cm_retries, 15);
    EXPECT_FALSE(r->srq);
    EXPECT_EQ(r->extended_transport_type, 0);
    const CmPath& p = r->primary;
    EXPECT_EQ(p.local_lid, 0xFFFF);
    EXPECT_EQ(p.remote_lid, 0xFFFF);
    EXPECT_EQ(p.local_gid, kActiveIp.b);  // ::ffff:198.18.0.3
    EXPECT_EQ(p.remote_gid, kPassiveIp.b);
    EXPECT_EQ(p.flow_label, x.flow_label);
    EXPECT_EQ(p.flow_label, RdmaCmFlowLabel(x.cma_src_port, x.dst_port));
    EXPECT_EQ(p.resv_flow, 0);
    EXPECT_EQ(p.packet_rate, 0);
    EXPECT_EQ(p.traffic_class, 0);
    EXPECT_EQ(p.hop_limit, 64);
    EXPECT_EQ(p.sl, 0);
    EXPECT_FALSE(p.subnet_local);
    EXPECT_EQ(p.local_ack_timeout, 19);
    EXPECT_EQ(p.resv_sl, 0);
    EXPECT_EQ(p.resv_ack, 0);
    EXPECT_EQ(r->alternate, CmPath{});
    // Flow label -> the data QP's UDP source port (rxe, both directions).
    EXPECT_EQ(FlowLabelToUdpSrcPort(p.flow_label), x.data_udp_sport);
    EXPECT_EQ(RoceUdpSrcPort(p.flow_label, r->local_qpn, r->local_qpn), x.data_udp_sport);
    // The CMA header.
    CmaHeader h;
    ASSERT_EQ(h.Parse(r->private_data), Error::kOk);
    EXPECT_EQ(h.version, 0);
    EXPECT_EQ(h.ip_version, 4);
    EXPECT_EQ(h.resv, 0);
    EXPECT_EQ(h.src_port, x.cma_src_port);
    EXPECT_EQ(h.SrcIp(), kActiveIp);
    EXPECT_EQ(h.DstIp(), kPassiveIp);
    // IPv4 after 12 zero bytes, not ::ffff-mapped (unlike the GIDs).
    const std::array<uint8_t, 16> src4{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 198, 18, 0, 3};
    EXPECT_EQ(h.src_addr, src4);
    EXPECT_EQ(h, CmaHeader::Make(kActiveIp, x.cma_src_port, kPassiveIp));
    const ByteSpan app = RdmaCmAppPrivateData(*r);
    EXPECT_EQ(app.size(), 56u);
    EXPECT_TRUE(std::all_of(app.begin(), app.end(), [](uint8_t b) { return b == 0; }));
    // cm-reference §4 gives R#1's header bytes.
    if (x.frame == 1 && std::string(x.cap) == "rping") {
      const uint8_t want[CmaHeader::kLen] = {0x00, 0x40, 0x84, 0xb7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                            0xc6, 0x12, 0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                            0xc6, 0x12, 0x00, 0x02};
      EXPECT_EQ(0, std::memcmp(r->private_data.data(), want, sizeof want));
      // And the flow label bytes at MAD data offset 88: 02 e2 f0 00.
      const uint8_t fl[4] = {0x02, 0xe2, 0xf0, 0x00};
      EXPECT_EQ(0, std::memcmp(d.mad.data() + 24 + 88, fl, 4));
    }
  }
}

// Each data QP's packets in the captures leave from the UDP port that the
// REQ's flow label gives (cm-reference §7), in both directions.
TEST(CmGolden, FlowLabelSetsTheDataQpUdpPort) {
  std::map<std::pair<std::string, uint32_t>, uint16_t> sport_of;  // (cap, QPN) -> port
  for (const auto& cm : CapturedMads()) {
    MadDatagram d;
    ASSERT_EQ(ParseMadDatagram(cm.bytes, &d), Error::kOk);
    CmMad m;
    ASSERT_EQ(ParseCmMad(d.mad, &m), Error::kOk);
    if (const CmReq* r = m.As<CmReq>())
      sport_of[{cm.cap, r->local_qpn}] = FlowLabelToUdpSrcPort(r->primary.flow_label);
  }
  ASSERT_EQ(sport_of.size(), 3u);
  int checked = 0;
  for (const auto& cap : ReferenceCaptures()) {
    for (const auto& f : cap.frames) {
      RocePacket p;
      if (ParseRoceFrame(f.data, &p) != Error::kOk || p.bth.dest_qp == kGsiQpn) continue;
      auto it = sport_of.find({cap.name, p.bth.dest_qp});
      if (it == sport_of.end()) continue;
      EXPECT_EQ(p.udp.src_port, it->second) << cap.name << " QP " << p.bth.dest_qp;
      checked++;
    }
  }
  EXPECT_EQ(checked, 60 + 306);  // every rping and ib_write_bw_R data packet
}

TEST(CmGolden, MadsAndFramesRebuildByteIdentical) {
  for (const auto& cm : CapturedMads()) {
    SCOPED_TRACE(cm.cap + " #" + std::to_string(cm.frame));
    MadDatagram d;
    ASSERT_EQ(ParseMadDatagram(cm.bytes, &d), Error::kOk);
    CmMad m;
    ASSERT_EQ(ParseCmMad(d.mad, &m), Error::kOk);
    EXPECT_EQ(SerializeCmMad(m), d.mad);
    // The frame from its parsed form, lengths/IP checksum/ICRC recomputed.
    Bytes out(400);
    out.resize(BuildMadDatagram(d, out));
    EXPECT_EQ(out, cm.bytes);
    // Verbatim (nothing recomputed).
    BuildOptions verbatim;
    verbatim.fill_lengths = verbatim.fill_ip_checksum = verbatim.fill_icrc = false;
    verbatim.fill_udp6_checksum = false;
    Bytes out2(400);
    out2.resize(BuildMadDatagram(d, out2, verbatim));
    EXPECT_EQ(out2, cm.bytes);
    // From scratch: a path as the engine makes one, the PSN, the MAD we
    // serialize from the typed message. Only the IP ID is copied over.
    const bool active = d.ip4.src == kActiveIp.V4();
    NetHeaders path;
    path.eth.src = active ? kActiveMac : kPassiveMac;
    path.eth.dst = active ? kPassiveMac : kActiveMac;
    path.eth.ethertype = kEtherTypeIpv4;
    path.ip4.src = (active ? kActiveIp : kPassiveIp).V4();
    path.ip4.dst = (active ? kPassiveIp : kActiveIp).V4();
    path.ip4.id = d.ip4.id;
    const auto mad_bytes = SerializeCmMad(m);
    MadDatagram fresh = MakeMadDatagram(path, d.bth.psn, mad_bytes);
    Bytes out3(MadDatagramLen(fresh));
    ASSERT_EQ(BuildMadDatagram(fresh, out3), out3.size());
    EXPECT_EQ(out3, cm.bytes);
  }
}

// rping's REQ (R#1) made from nothing but the connection's parameters and the
// rdma_cm helpers, as Linux would fill it.
TEST(CmGolden, RpingReqFromScratch) {
  CmReq r;
  r.local_comm_id = 0x68e506e2;
  r.service_id = RdmaCmTcpServiceId(7174);
  r.local_ca_guid = GuidFromMac(kActiveMac);
  r.local_qpn = 0x13;
  r.responder_resources = 1;
  r.initiator_depth = 1;
  r.remote_cm_response_timeout = 20;
  r.transport_service_type = cm::kTransportRc;
  r.starting_psn = 0x678c64;
  r.local_cm_response_timeout = 20;
  r.retry_count = 7;
  r.pkey = kDefaultPkey;
  r.path_mtu = cm::kMtu1024;
  r.rnr_retry_count = 7;
  r.max_cm_retries = 15;
  r.primary.local_lid = r.primary.remote_lid = 0xFFFF;
  r.primary.local_gid = kActiveIp.b;
  r.primary.remote_gid = kPassiveIp.b;
  r.primary.flow_label = RdmaCmFlowLabel(33975, 7174);
  r.primary.hop_limit = 64;
  r.primary.local_ack_timeout = 19;
  ASSERT_TRUE(SetRdmaCmPrivateData(CmaHeader::Make(kActiveIp, 33975, kPassiveIp), {}, &r));
  const CmMad m = MakeCmMad(FormCmTid(2, r.local_comm_id), r);

  const auto mads = CapturedMads();
  const CapturedMad* cm = Find(mads, "rping", 1);
  ASSERT_NE(cm, nullptr);
  MadDatagram d;
  ASSERT_EQ(ParseMadDatagram(cm->bytes, &d), Error::kOk);
  EXPECT_EQ(SerializeCmMad(m), d.mad);
  // And the REP (R#2) from the passive side.
  CmRep rep;
  rep.local_comm_id = 0xd87ca5b1;
  rep.remote_comm_id = r.local_comm_id;
  rep.local_qpn = 0x13;
  rep.starting_psn = 0x33e664;
  rep.responder_resources = rep.initiator_depth = 1;
  rep.target_ack_delay = 15;
  rep.rnr_retry_count = 7;
  rep.local_ca_guid = GuidFromMac(kPassiveMac);
  const CmMad mrep = MakeCmMad(m.hdr.tid, rep);
  const CapturedMad* cm2 = Find(mads, "rping", 2);
  ASSERT_NE(cm2, nullptr);
  ASSERT_EQ(ParseMadDatagram(cm2->bytes, &d), Error::kOk);
  EXPECT_EQ(SerializeCmMad(mrep), d.mad);
}

// ---- layout: each field on the bits the IBTA tables give ------------------------

// Emits `msg` (all zero but for one field at its maximum) and checks the MAD
// data bytes: `want` at `offset`, every other byte zero.
void ExpectOnly(const CmMessage& msg, size_t offset, std::vector<uint8_t> want, const char* what) {
  SCOPED_TRACE(what);
  const auto b = SerializeCmMad(MakeCmMad(0, msg));
  std::vector<uint8_t> expect(mad::kDataLen, 0);
  std::copy(want.begin(), want.end(), expect.begin() + static_cast<long>(offset));
  EXPECT_EQ(std::vector<uint8_t>(b.begin() + 24, b.end()), expect);
  CmMad back;
  ASSERT_EQ(ParseCmMad(b, &back), Error::kOk);
  EXPECT_EQ(back.msg, msg);
}

TEST(CmLayout, ReqFields) {
  auto req = [](auto set) { CmReq r; set(r); return CmMessage(r); };
  ExpectOnly(req([](CmReq& r) { r.local_comm_id = 0xFFFFFFFF; }), 0, {0xFF, 0xFF, 0xFF, 0xFF}, "comm id");
  ExpectOnly(req([](CmReq& r) { r.vendor_id = 0xFFFFFF; }), 5, {0xFF, 0xFF, 0xFF}, "vendor id");
  ExpectOnly(req([](CmReq& r) { r.service_id = 0x0102030405060708; }), 8, {1, 2, 3, 4, 5, 6, 7, 8}, "sid");
  ExpectOnly(req([](CmReq& r) { r.local_ca_guid = 0x1112131415161718; }), 16,
             {0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18}, "guid");
  ExpectOnly(req([](CmReq& r) { r.local_qkey = 0x80010000; }), 28, {0x80, 0x01, 0, 0}, "qkey");
  ExpectOnly(req([](CmReq& r) { r.local_qpn = 0xFFFFFF; }), 32, {0xFF, 0xFF, 0xFF}, "qpn");
  ExpectOnly(req([](CmReq& r) { r.responder_resources = 0xFF; }), 35, {0xFF}, "resp res");
  ExpectOnly(req([](CmReq& r) { r.local_eecn = 0xFFFFFF; }), 36, {0xFF, 0xFF, 0xFF}, "eecn");
  ExpectOnly(req([](CmReq& r) { r.initiator_depth = 0xFF; }), 39, {0xFF}, "init depth");
  ExpectOnly(req([](CmReq& r) { r.remote_eecn = 0xFFFFFF; }), 40, {0xFF, 0xFF, 0xFF}, "remote eecn");
  ExpectOnly(req([](CmReq& r) { r.remote_cm_response_timeout = 31; }), 43, {0xF8}, "remote cm timeout");
  ExpectOnly(req([](CmReq& r) { r.transport_service_type = 3; }), 43, {0x06}, "transport");
  ExpectOnly(req([](CmReq& r) { r.end_to_end_flow_control = true; }), 43, {0x01}, "e2e fc");
  ExpectOnly(req([](CmReq& r) { r.starting_psn = 0xFFFFFF; }), 44, {0xFF, 0xFF, 0xFF}, "psn");
  ExpectOnly(req([](CmReq& r) { r.local_cm_response_timeout = 31; }), 47, {0xF8}, "local cm timeout");
  ExpectOnly(req([](CmReq& r) { r.retry_count = 7; }), 47, {0x07}, "retry");
  ExpectOnly(req([](CmReq& r) { r.pkey = 0xFFFF; }), 48, {0xFF, 0xFF}, "pkey");
  ExpectOnly(req([](CmReq& r) { r.path_mtu = 15; }), 50, {0xF0}, "mtu");
  ExpectOnly(req([](CmReq& r) { r.rdc_exists = true; }), 50, {0x08}, "rdc");
  ExpectOnly(req([](CmReq& r) { r.rnr_retry_count = 7; }), 50, {0x07}, "rnr retry");
  ExpectOnly(req([](CmReq& r) { r.max_cm_retries = 15; }), 51, {0xF0}, "max cm retries");
  ExpectOnly(req([](CmReq& r) { r.srq = true; }), 51, {0x08}, "srq");
  ExpectOnly(req([](CmReq& r) { r.extended_transport_type = 7; }), 51, {0x07}, "ext transport");
  ExpectOnly(req([](CmReq& r) { r.private_data[0] = 0xAA; r.private_data[91] = 0xBB; }), 140,
             [] { std::vector<uint8_t> v(92); v[0] = 0xAA; v[91] = 0xBB; return v; }(), "private");
  // The primary path at 52, the alternate at 96.
  for (size_t base : {size_t{52}, size_t{96}}) {
    auto path = [base](auto set) {
      CmReq r;
      set(base == 52 ? r.primary : r.alternate);
      return CmMessage(r);
    };
    ExpectOnly(path([](CmPath& p) { p.local_lid = 0x1234; }), base, {0x12, 0x34}, "local lid");
    ExpectOnly(path([](CmPath& p) { p.remote_lid = 0x5678; }), base + 2, {0x56, 0x78}, "remote lid");
    ExpectOnly(path([](CmPath& p) { p.local_gid[0] = 0xFE; p.local_gid[15] = 1; }), base + 4,
               {0xFE, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "local gid");
    ExpectOnly(path([](CmPath& p) { p.remote_gid[0] = 0xFE; p.remote_gid[15] = 2; }), base + 20,
               {0xFE, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}, "remote gid");
    ExpectOnly(path([](CmPath& p) { p.flow_label = 0xFFFFF; }), base + 36, {0xFF, 0xFF, 0xF0, 0x00}, "flow");
    ExpectOnly(path([](CmPath& p) { p.flow_label = 0x12345; }), base + 36, {0x12, 0x34, 0x50, 0x00}, "flow2");
    ExpectOnly(path([](CmPath& p) { p.resv_flow = 0x3F; }), base + 38, {0x0F, 0xC0}, "resv flow");
    ExpectOnly(path([](CmPath& p) { p.packet_rate = 0x3F; }), base + 39, {0x3F}, "rate");
    ExpectOnly(path([](CmPath& p) { p.traffic_class = 0xFF; }), base + 40, {0xFF}, "tc");
    ExpectOnly(path([](CmPath& p) { p.hop_limit = 0xFF; }), base + 41, {0xFF}, "hop limit");
    ExpectOnly(path([](CmPath& p) { p.sl = 15; }), base + 42, {0xF0}, "sl");
    ExpectOnly(path([](CmPath& p) { p.subnet_local = true; }), base + 42, {0x08}, "subnet local");
    ExpectOnly(path([](CmPath& p) { p.resv_sl = 7; }), base + 42, {0x07}, "resv sl");
    ExpectOnly(path([](CmPath& p) { p.local_ack_timeout = 31; }), base + 43, {0xF8}, "ack timeout");
    ExpectOnly(path([](CmPath& p) { p.resv_ack = 7; }), base + 43, {0x07}, "resv ack");
  }
}

TEST(CmLayout, RepFields) {
  auto rep = [](auto set) { CmRep r; set(r); return CmMessage(r); };
  ExpectOnly(rep([](CmRep& r) { r.local_comm_id = 0x01020304; }), 0, {1, 2, 3, 4}, "local");
  ExpectOnly(rep([](CmRep& r) { r.remote_comm_id = 0x01020304; }), 4, {1, 2, 3, 4}, "remote");
  ExpectOnly(rep([](CmRep& r) { r.local_qkey = 0x01020304; }), 8, {1, 2, 3, 4}, "qkey");
  ExpectOnly(rep([](CmRep& r) { r.local_qpn = 0xFFFFFF; }), 12, {0xFF, 0xFF, 0xFF}, "qpn");
  ExpectOnly(rep([](CmRep& r) { r.vendor_id = 0xAABBCC; }), 15, {0xAA, 0, 0, 0, 0xBB, 0, 0, 0, 0xCC}, "vendor");
  ExpectOnly(rep([](CmRep& r) { r.local_eecn = 0xFFFFFF; }), 16, {0xFF, 0xFF, 0xFF}, "eecn");
  ExpectOnly(rep([](CmRep& r) { r.starting_psn = 0xFFFFFF; }), 20, {0xFF, 0xFF, 0xFF}, "psn");
  ExpectOnly(rep([](CmRep& r) { r.responder_resources = 0xFF; }), 24, {0xFF}, "resp res");
  ExpectOnly(rep([](CmRep& r) { r.initiator_depth = 0xFF; }), 25, {0xFF}, "init depth");
  ExpectOnly(rep([](CmRep& r) { r.target_ack_delay = 31; }), 26, {0xF8}, "ack delay");
  ExpectOnly(rep([](CmRep& r) { r.failover_accepted = 3; }), 26, {0x06}, "failover");
  ExpectOnly(rep([](CmRep& r) { r.end_to_end_flow_control = true; }), 26, {0x01}, "e2e");
  ExpectOnly(rep([](CmRep& r) { r.rnr_retry_count = 7; }), 27, {0xE0}, "rnr");
  ExpectOnly(rep([](CmRep& r) { r.srq = true; }), 27, {0x10}, "srq");
  ExpectOnly(rep([](CmRep& r) { r.resv27 = 15; }), 27, {0x0F}, "resv");
  ExpectOnly(rep([](CmRep& r) { r.local_ca_guid = 0x0102030405060708; }), 28, {1, 2, 3, 4, 5, 6, 7, 8}, "guid");
  ExpectOnly(rep([](CmRep& r) { r.private_data[0] = 1; r.private_data[195] = 2; }), 36,
             [] { std::vector<uint8_t> v(196); v[0] = 1; v[195] = 2; return v; }(), "private");
}

TEST(CmLayout, OtherMessages) {
  {
    CmMra m;
    m.message_mraed = 3;
    ExpectOnly(m, 8, {0xC0}, "mra msg");
    m = {};
    m.resv8 = 0x3F;
    ExpectOnly(m, 8, {0x3F}, "mra resv8");
    m = {};
    m.service_timeout = 31;
    ExpectOnly(m, 9, {0xF8}, "mra timeout");
    m = {};
    m.private_data[0] = 1;
    m.private_data[221] = 2;
    ExpectOnly(m, 10, [] { std::vector<uint8_t> v(222); v[0] = 1; v[221] = 2; return v; }(), "mra private");
    m = {};
    m.remote_comm_id = 0x01020304;
    ExpectOnly(m, 4, {1, 2, 3, 4}, "mra remote");
  }
  {
    CmRej m;
    m.message_rejected = 3;
    ExpectOnly(m, 8, {0xC0}, "rej msg");
    m = {};
    m.reject_info_length = 72;
    ExpectOnly(m, 9, {72 << 1}, "rej info length");
    m = {};
    m.resv9 = true;
    ExpectOnly(m, 9, {0x01}, "rej resv9");
    m = {};
    m.reason = cm::kRejConsumerDefined;
    ExpectOnly(m, 10, {0, 28}, "rej reason");
    m = {};
    m.ari[0] = 1;
    m.ari[71] = 2;
    ExpectOnly(m, 12, [] { std::vector<uint8_t> v(72); v[0] = 1; v[71] = 2; return v; }(), "ari");
    m = {};
    m.private_data[0] = 1;
    m.private_data[147] = 2;
    ExpectOnly(m, 84, [] { std::vector<uint8_t> v(148); v[0] = 1; v[147] = 2; return v; }(), "rej private");
  }
  {
    CmRtu m;
    m.private_data[0] = 1;
    m.private_data[223] = 2;
    ExpectOnly(m, 8, [] { std::vector<uint8_t> v(224); v[0] = 1; v[223] = 2; return v; }(), "rtu private");
  }
  {
    CmDreq m;
    m.remote_qpn_eecn = 0xFFFFFF;
    ExpectOnly(m, 8, {0xFF, 0xFF, 0xFF}, "dreq qpn");
    m = {};
    m.resv11 = 0xFF;
    ExpectOnly(m, 11, {0xFF}, "dreq resv");
    m = {};
    m.private_data[0] = 1;
    m.private_data[219] = 2;
    ExpectOnly(m, 12, [] { std::vector<uint8_t> v(220); v[0] = 1; v[219] = 2; return v; }(), "dreq private");
  }
  {
    CmDrep m;
    m.local_comm_id = 0x01020304;
    m.private_data[223] = 2;
    ExpectOnly(m, 0, [] { std::vector<uint8_t> v(232); v[0] = 1; v[1] = 2; v[2] = 3; v[3] = 4; v[231] = 2; return v; }(),
               "drep");
  }
  {
    CmSidrReq m;
    m.request_id = 0x01020304;
    m.pkey = 0xFFFF;
    m.resv6 = 0x0506;
    m.service_id = 0x1112131415161718;
    m.private_data[215] = 9;
    std::vector<uint8_t> v(232);
    const uint8_t head[16] = {1, 2, 3, 4, 0xFF, 0xFF, 5, 6, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18};
    std::copy(head, head + 16, v.begin());
    v[231] = 9;
    ExpectOnly(m, 0, v, "sidr req");
  }
  {
    CmSidrRep m;
    m.request_id = 0x01020304;
    m.status = cm::kSidrNoQp;
    m.additional_info_length = 72;
    m.vendor_id = 0xAABBCC;
    m.qpn = 0x123456;
    m.service_id = 0x1112131415161718;
    m.qkey = 0x80010000;
    m.additional_info[0] = 7;
    m.private_data[0] = 8;
    m.private_data[135] = 9;
    std::vector<uint8_t> v(232);
    const uint8_t head[25] = {1, 2, 3, 4, 3, 72, 0xAA, 0xBB, 0x12, 0x34, 0x56, 0xCC, 0x11,
                              0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x80, 0x01, 0, 0, 7};
    std::copy(head, head + 25, v.begin());
    v[96] = 8;
    v[231] = 9;
    ExpectOnly(m, 0, v, "sidr rep");
  }
}

TEST(CmLayout, MadHeaderAndPrivateDataLengths) {
  // The private data lengths of cm-reference / IBTA, and that each fills the
  // MAD to its end.
  EXPECT_EQ(CmReq::kPrivateDataLen, 92u);
  EXPECT_EQ(CmMra::kPrivateDataLen, 222u);
  EXPECT_EQ(CmRej::kPrivateDataLen, 148u);
  EXPECT_EQ(CmRej::kAriLen, 72u);
  EXPECT_EQ(CmRep::kPrivateDataLen, 196u);
  EXPECT_EQ(CmRtu::kPrivateDataLen, 224u);
  EXPECT_EQ(CmDreq::kPrivateDataLen, 220u);
  EXPECT_EQ(CmDrep::kPrivateDataLen, 224u);
  EXPECT_EQ(CmSidrReq::kPrivateDataLen, 216u);
  EXPECT_EQ(CmSidrRep::kPrivateDataLen, 136u);
  for (int i = 0; i < 9; i++) {
    CmRandom r(i);
    std::visit([](const auto& x) {
      using T = std::decay_t<decltype(x)>;
      EXPECT_EQ(T::kPrivateDataOffset + T::kPrivateDataLen, mad::kDataLen) << cm::AttrName(T::kAttrId);
    }, r.Any(i));
  }
  CmMad m = MakeCmMad(0x0123456789abcdef, CmRtu{});
  m.hdr.status = 0x1122;
  m.hdr.class_specific = 0x3344;
  m.hdr.attr_mod = 0x55667788;
  const auto b = SerializeCmMad(m);
  const uint8_t want[24] = {1, 7, 2, 3, 0x11, 0x22, 0x33, 0x44, 0x01, 0x23, 0x45, 0x67,
                            0x89, 0xab, 0xcd, 0xef, 0x00, 0x14, 0, 0, 0x55, 0x66, 0x77, 0x88};
  EXPECT_EQ(0, std::memcmp(b.data(), want, 24));
  // EmitCmMad takes the attribute ID from the message, not the header.
  m.hdr.attr_id = 0x0010;
  EXPECT_EQ(SerializeCmMad(m)[17], 0x14);
}

// ---- round trip ---------------------------------------------------------------------

TEST(CmRoundTrip, RandomFieldValuesSurviveEmitAndParse) {
  CmRandom rnd(20261124);
  std::map<uint16_t, int> seen;
  for (int i = 0; i < 20000; i++) {
    const CmMad m = rnd.Mad(rnd.Any(i));
    const auto b = SerializeCmMad(m);
    CmMad back;
    ASSERT_EQ(ParseCmMad(b, &back), Error::kOk) << i;
    ASSERT_TRUE(back == m) << "message " << cm::AttrName(m.hdr.attr_id) << " round " << i;
    ASSERT_EQ(SerializeCmMad(back), b);
    seen[m.hdr.attr_id]++;
  }
  EXPECT_EQ(seen.size(), 9u);
}

TEST(CmRoundTrip, AnyBytesUnderACmHeaderSurviveParseAndEmit) {
  std::mt19937_64 rng(4242);
  const uint16_t attrs[] = {0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18};
  int accepted = 0;
  for (int i = 0; i < 20000; i++) {
    std::array<uint8_t, mad::kLen> b;
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    b[0] = 1;
    b[1] = 7;
    b[2] = 2;
    Store16(&b[16], attrs[i % 9]);
    CmMad m;
    const Error e = ParseCmMad(b, &m);
    if (e == Error::kBadCmMessage) {  // a length field past its area
      ASSERT_TRUE(attrs[i % 9] == cm::kAttrRej || attrs[i % 9] == cm::kAttrSidrRep);
      continue;
    }
    ASSERT_EQ(e, Error::kOk);
    accepted++;
    ASSERT_EQ(SerializeCmMad(m), b) << "attribute " << attrs[i % 9];
  }
  EXPECT_GT(accepted, 15000);
}

TEST(CmRoundTrip, IpV6DatagramAndCmaHeader) {
  IpAddr a, b;
  ASSERT_TRUE(IpAddr::FromString("fd00::3", &a));
  ASSERT_TRUE(IpAddr::FromString("fd00::2", &b));
  const CmaHeader h = CmaHeader::Make(a, 4000, b);
  EXPECT_EQ(h.ip_version, 6);
  EXPECT_EQ(h.src_addr, a.b);
  EXPECT_EQ(h.SrcIp(), a);
  EXPECT_EQ(h.DstIp(), b);
  CmReq r;
  const uint8_t app[56] = {1, 2, 3};
  ASSERT_TRUE(SetRdmaCmPrivateData(h, ByteSpan(app, 56), &r));
  const uint8_t too_long[57] = {};
  EXPECT_FALSE(SetRdmaCmPrivateData(h, ByteSpan(too_long, 57), &r));
  CmaHeader back;
  ASSERT_EQ(back.Parse(r.private_data), Error::kOk);
  EXPECT_EQ(back, h);
  EXPECT_EQ(RdmaCmAppPrivateData(r)[2], 3);
  EXPECT_EQ(r.private_data[1], 0x60);

  NetHeaders path;
  path.eth.src = kActiveMac;
  path.eth.dst = kPassiveMac;
  path.eth.ethertype = kEtherTypeIpv6;
  path.ipv6 = true;
  path.ip6.src = a.b;
  path.ip6.dst = b.b;
  path.eth.has_vlan = true;
  path.eth.vlan_tci = 0x2005;
  const auto mad_bytes = SerializeCmMad(MakeCmMad(FormCmTid(2, 7), r));
  const MadDatagram d = MakeMadDatagram(path, 0xABCDEF, mad_bytes);
  Bytes f(MadDatagramLen(d));
  EXPECT_EQ(f.size(), 18u + 40 + 8 + 12 + 8 + 256 + 4);
  ASSERT_EQ(BuildMadDatagram(d, f), f.size());
  MadDatagram back_d;
  ASSERT_EQ(ParseMadDatagram(f, &back_d), Error::kOk);
  EXPECT_TRUE(back_d.ipv6);
  EXPECT_EQ(back_d.bth.psn, 0xABCDEFu);
  EXPECT_EQ(back_d.mad, mad_bytes);
  EXPECT_EQ(back_d.udp.src_port, kQp1UdpSrcPort);
  Bytes f2(f.size());
  ASSERT_EQ(BuildMadDatagram(back_d, f2), f.size());
  EXPECT_EQ(f2, f);
  CmMad m;
  ASSERT_EQ(ParseCmMad(back_d.mad, &m), Error::kOk);
  ASSERT_NE(m.As<CmReq>(), nullptr);
  EXPECT_EQ(*m.As<CmReq>(), r);
}

// ---- errors -------------------------------------------------------------------------

TEST(CmNegative, TruncatedAndOversizedMads) {
  CmRandom rnd(5);
  for (int k = 0; k < 9; k++) {
    const auto full = SerializeCmMad(rnd.Mad(rnd.Any(k)));
    for (size_t n = 0; n < mad::kLen; n++) {
      const Bytes cut(full.begin(), full.begin() + static_cast<long>(n));  // exact size for ASan
      CmMad m;
      EXPECT_EQ(ParseCmMad(cut, &m), Error::kTruncated) << n;
    }
    Bytes longer(full.begin(), full.end());
    longer.push_back(0);
    CmMad m;
    EXPECT_EQ(ParseCmMad(longer, &m), Error::kBadMad);
  }
  // The per-message parsers refuse short data on their own too.
  const Bytes short_data(mad::kDataLen - 1);
  CmReq req;
  EXPECT_EQ(req.Parse(short_data), Error::kTruncated);
  CmRej rej;
  EXPECT_EQ(rej.Parse(short_data), Error::kTruncated);
  CmSidrRep sr;
  EXPECT_EQ(sr.Parse(short_data), Error::kTruncated);
  CmaHeader h;
  EXPECT_EQ(h.Parse(ByteSpan(short_data).first(35)), Error::kTruncated);
}

TEST(CmNegative, WrongHeaderOrAttribute) {
  const auto good = SerializeCmMad(MakeCmMad(1, CmRtu{}));
  CmMad m;
  ASSERT_EQ(ParseCmMad(good, &m), Error::kOk);
  auto with = [&](size_t at, uint8_t v) {
    auto b = good;
    b[at] = v;
    return ParseCmMad(b, &m);
  };
  EXPECT_EQ(with(0, 2), Error::kBadMad);    // base version
  EXPECT_EQ(with(1, 0x03), Error::kNotCm);  // SA class
  EXPECT_EQ(with(1, 0x87), Error::kNotCm);
  EXPECT_EQ(with(2, 1), Error::kNotCm);     // class version 1
  EXPECT_EQ(with(3, 0x81), Error::kOk);     // the method is the CM's business
  for (uint16_t attr : {0x0000, 0x0001, 0x000F, 0x0019, 0x001A, 0x0110, 0xFFFF}) {
    auto b = good;
    Store16(&b[16], attr);
    EXPECT_EQ(ParseCmMad(b, &m), Error::kUnknownCmAttribute) << attr;
  }
  EXPECT_STREQ(cm::AttrName(0x19), "LAP");
  EXPECT_STREQ(ErrorName(Error::kUnknownCmAttribute), "unknown-cm-attribute");
  for (Error e : {Error::kNotGsi, Error::kNotCm, Error::kUnknownCmAttribute, Error::kBadCmMessage})
    EXPECT_STRNE(ErrorName(e), "unknown-error");
}

TEST(CmNegative, LengthFieldsPastTheirArea) {
  CmRej rej;
  for (int len = 0; len < 128; len++) {
    rej.reject_info_length = static_cast<uint8_t>(len);
    const auto b = SerializeCmMad(MakeCmMad(1, rej));
    CmMad m;
    EXPECT_EQ(ParseCmMad(b, &m), len <= 72 ? Error::kOk : Error::kBadCmMessage) << len;
  }
  CmSidrRep rep;
  for (int len = 0; len < 256; len++) {
    rep.additional_info_length = static_cast<uint8_t>(len);
    const auto b = SerializeCmMad(MakeCmMad(1, rep));
    CmMad m;
    EXPECT_EQ(ParseCmMad(b, &m), len <= 72 ? Error::kOk : Error::kBadCmMessage) << len;
  }
  // rdma_cm header: version 0 and IP version 4 or 6 only.
  uint8_t b[CmaHeader::kLen] = {0x00, 0x40};
  CmaHeader h;
  EXPECT_EQ(h.Parse(ByteSpan(b, sizeof b)), Error::kOk);
  b[1] = 0x60;
  EXPECT_EQ(h.Parse(ByteSpan(b, sizeof b)), Error::kOk);
  for (uint8_t v : {0x00, 0x50, 0x10, 0xF0}) {
    b[1] = v;
    EXPECT_EQ(h.Parse(ByteSpan(b, sizeof b)), Error::kBadCmMessage) << int{v};
  }
  b[1] = 0x40;
  b[0] = 1;
  EXPECT_EQ(h.Parse(ByteSpan(b, sizeof b)), Error::kBadCmMessage);
}

TEST(CmNegative, DatagramsThatAreNotGsiMads) {
  const auto mads = CapturedMads();
  ASSERT_FALSE(mads.empty());
  MadDatagram d;
  ASSERT_EQ(ParseMadDatagram(mads[0].bytes, &d), Error::kOk);
  auto rebuilt = [](MadDatagram x) {
    Bytes f(MadDatagramLen(x));
    f.resize(BuildMadDatagram(x, f));
    return f;
  };
  MadDatagram x = d;
  x.bth.dest_qp = 2;
  MadDatagram out;
  EXPECT_EQ(ParseMadDatagram(rebuilt(x), &out), Error::kNotGsi);
  x = d;
  x.deth.qkey = 0x80010001;
  EXPECT_EQ(ParseMadDatagram(rebuilt(x), &out), Error::kNotGsi);
  x = d;
  x.mad[0] = 2;  // base version
  EXPECT_EQ(ParseMadDatagram(rebuilt(x), &out), Error::kBadMad);
  // An RC SEND to QP 1 (no DETH).
  RocePacket p;
  ASSERT_EQ(ParseRoceFrame(mads[0].bytes, &p), Error::kOk);
  p.bth.opcode = op::kRcSendOnly;
  Bytes f(400);
  f.resize(BuildRoceFrame(p, f));
  EXPECT_EQ(ParseMadDatagram(f, &out), Error::kNotGsi);
  // A UD SEND to QP 1 whose payload is not one MAD.
  for (size_t len : {size_t{0}, size_t{24}, size_t{252}, size_t{260}, size_t{512}}) {
    ASSERT_EQ(ParseRoceFrame(mads[0].bytes, &p), Error::kOk);
    const Bytes payload(len, 1);
    p.payload = payload;
    Bytes g(600);
    g.resize(BuildRoceFrame(p, g));
    EXPECT_EQ(ParseMadDatagram(g, &out), Error::kBadMad) << len;
  }
  // A bad ICRC is the frame parser's.
  Bytes bad = mads[0].bytes;
  bad[100] ^= 1;
  EXPECT_EQ(ParseMadDatagram(bad, &out), Error::kIcrcMismatch);
  ParseOptions no_icrc;
  no_icrc.verify_icrc = false;
  EXPECT_EQ(ParseMadDatagram(bad, &out, no_icrc), Error::kOk);
  // Ethernet padding after the datagram is accepted and dropped.
  Bytes padded = mads[0].bytes;
  padded.resize(padded.size() + 6, 0);
  ASSERT_EQ(ParseMadDatagram(padded, &out), Error::kOk);
  Bytes again(400);
  again.resize(BuildMadDatagram(out, again));
  EXPECT_EQ(again, mads[0].bytes);
  // Too small an output buffer.
  Bytes small(321);
  EXPECT_EQ(BuildMadDatagram(d, small), 0u);
}

TEST(CmNegative, GarbageNeverCrashes) {
  std::mt19937_64 rng(77);
  int ok = 0;
  for (int i = 0; i < 100000; i++) {
    Bytes b(rng() % 300);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    if (b.size() >= 24 && (rng() & 1)) {
      b[0] = 1;
      b[1] = 7;
      b[2] = 2;
      b[16] = 0;
      b[17] = static_cast<uint8_t>(0x0F + rng() % 12);
    }
    const Bytes exact(b);
    CmMad m;
    if (ParseCmMad(exact, &m) == Error::kOk) {
      ok++;
      ASSERT_EQ(exact.size(), mad::kLen);
      const auto again = SerializeCmMad(m);
      ASSERT_TRUE(std::equal(again.begin(), again.end(), exact.begin()));
    }
    CmaHeader h;
    (void)h.Parse(exact);
    MadDatagram d;
    (void)ParseMadDatagram(exact, &d);
  }
  EXPECT_GT(ok, 0);
}

// ---- rdma_cm helpers ----------------------------------------------------------------

TEST(RdmaCm, ServiceIds) {
  EXPECT_EQ(RdmaCmTcpServiceId(7174), 0x0000000001061c06u);
  EXPECT_EQ(RdmaCmTcpServiceId(18515), 0x0000000001064853u);
  EXPECT_EQ(RdmaCmServiceId(rdma_cm::kPortSpaceUdp, 1), 0x0000000001110001u);
  const auto p = ParseRdmaCmServiceId(0x0000000001061c06);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*p, (RdmaCmServiceIdParts{rdma_cm::kPortSpaceTcp, 7174}));
  EXPECT_EQ(ParseRdmaCmServiceId(0x00000000013F0005)->port_space, rdma_cm::kPortSpaceIb);
  EXPECT_FALSE(ParseRdmaCmServiceId(0x0000000101061c06).has_value());  // upper bits set
  EXPECT_FALSE(ParseRdmaCmServiceId(0x0000000001070001).has_value());  // no such port space
  EXPECT_FALSE(ParseRdmaCmServiceId(0x1000000000000001).has_value());
  for (uint32_t port = 0; port < 65536; port += 97) {
    const auto q = ParseRdmaCmServiceId(RdmaCmTcpServiceId(static_cast<uint16_t>(port)));
    ASSERT_TRUE(q.has_value());
    EXPECT_EQ(q->port, port);
  }
}

TEST(RdmaCm, FlowLabelAndUdpPorts) {
  // cm-reference §4 and §7.
  EXPECT_EQ(RdmaCmFlowLabel(33975, 7174), 0x02e2fu);
  EXPECT_EQ(RdmaCmFlowLabel(50219, 18515), 0x80988u);
  EXPECT_EQ(RdmaCmFlowLabel(42629, 18515), 0x4726eu);
  EXPECT_EQ(RdmaCmFlowLabel(0xFFFF, 0xFFFF), (0xFFFFu * 32u) & 0xFFFFF);
  EXPECT_EQ(FlowLabelToUdpSrcPort(0x02e2f), 0xEE2F);
  EXPECT_EQ(FlowLabelToUdpSrcPort(0x80988), 0xC9A8);
  EXPECT_EQ(FlowLabelToUdpSrcPort(0x4726e), 0xF27F);
  for (uint32_t fl = 0; fl < 0x100000; fl += 251) {
    const uint16_t s = FlowLabelToUdpSrcPort(fl);
    EXPECT_GE(s, 0xC000);  // always in RoCE's 0xC000.. range
  }
  // Without a flow label, the QPNs' (rdma_calc_flow_label).
  EXPECT_EQ(QpFlowLabel(0x13, 0x13), 0x169u);
  EXPECT_EQ(RoceUdpSrcPort(0, 0x13, 0x13), FlowLabelToUdpSrcPort(0x169));
  EXPECT_EQ(RoceUdpSrcPort(0x02e2f, 5, 6), 0xEE2F);
  EXPECT_EQ(QpFlowLabel(0xFFFFFF, 0xFFFFFF), [] {
    uint64_t v = uint64_t{0xFFFFFF} * 0xFFFFFF;
    v ^= v >> 20;
    v ^= v >> 40;
    return static_cast<uint32_t>(v & 0xFFFFF);
  }());
  // rxe's port for QP 1 (all MADs in the captures) and the hash behind it.
  EXPECT_EQ(RxeQpUdpSrcPort(1), 0xD872);
  EXPECT_EQ(RxeQpUdpSrcPort(0), 0xC000);
}

TEST(RdmaCm, TransactionIdsAndGuids) {
  EXPECT_EQ(FormCmTid(2, 0x68e506e2), 0x00000002e206e568u);
  EXPECT_EQ(FormCmTid(2, 0xda7ca5b1), 0x00000002b1a57cdau);
  EXPECT_EQ(CmTidCommId(0x00000002b1a57cda), 0xda7ca5b1u);
  EXPECT_EQ(CmTidCommId(FormCmTid(7, 0x01020304)), 0x01020304u);
  EXPECT_EQ(GuidFromMac(kActiveMac), 0x505400fffec61203u);
  EXPECT_EQ(GuidFromMac(kPassiveMac), 0x505400fffec61202u);
  EXPECT_EQ(GuidFromMac(MacAddr{{0x00, 0x11, 0x22, 0x33, 0x44, 0x55}}), 0x021122fffe334455u);
}

}  // namespace
}  // namespace roce::wire
