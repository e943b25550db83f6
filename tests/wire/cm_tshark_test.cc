// SPDX-License-Identifier: MIT
// CM MADs against an independent decoder: tshark's InfiniBand dissector
// reads the same field values as our parser from the CM MADs of the rxe
// captures, and decodes the REQ, REP, RTU, REJ, DREQ and DREP frames we
// build with random field values as the values we put in (REJ, which the
// captures lack, included). Tshark 4.0 has no MRA or SIDR dissector.
//
// One known tshark defect is allowed for: it reads the REQ paths' flow label
// and packet rate (data offset 88 / 132) from the wrong bits (cm-reference.md
// §10.9: R#1's bytes 02 e2 f0 00 show as flow label 0x0002e, rate 2). The
// test accepts the real value or exactly the defect's reading of our bytes.
// Tshark also shows a primary GID over IPv4 as its last 4 bytes only.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <absl/strings/ascii.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/strings/str_replace.h>
#include <absl/strings/str_split.h>

#include "stack/pcap/pcap_file.h"
#include "stack/wire/cm_msg.h"
#include "stack/wire/mad.h"
#include "stack/wire/rdma_cm.h"
#include "tests/support/test_support.h"
#include "tests/wire/cm_random.h"

namespace roce::wire {
namespace {

using Bytes = std::vector<uint8_t>;
using namespace roce::testing;
using roce::wire::cmtest::CmRandom;

// Field name -> value we expect tshark to show. Numbers are compared as
// numbers (tshark prints hex or decimal), byte strings as lower-case hex.
struct Want {
  std::map<std::string, uint64_t> num;
  std::map<std::string, std::string> text;
  std::map<std::string, std::pair<uint64_t, uint64_t>> either;  // one of two numbers
};

std::string Hex(const uint8_t* p, size_t n) {
  std::string s;
  char b[3];
  for (size_t i = 0; i < n; i++) {
    std::snprintf(b, sizeof b, "%02x", p[i]);
    s += b;
  }
  return s;
}
template <size_t N>
std::string Hex(const std::array<uint8_t, N>& a) {
  return Hex(a.data(), N);
}

// Tshark shows a primary-path GID of a frame sent over IPv4 as the IPv4
// address in its last 4 bytes (whatever the other 12 hold), an alternate-path
// GID as hex.
void AddGid(Want& w, const std::string& field, const Gid& g, bool primary) {
  if (primary)
    w.text[field + "_ipv4"] = IpAddr::FromV4(Load32(&g[12])).ToString();
  else
    w.text[field] = Hex(g);
}

void AddPath(Want& w, const std::string& pre, const CmPath& p, bool primary) {
  w.num[pre + "_locallid"] = p.local_lid;
  w.num[pre + "_remotelid"] = p.remote_lid;
  AddGid(w, pre + "_localgid", p.local_gid, primary);
  AddGid(w, pre + "_remotegid", p.remote_gid, primary);
  // Tshark 4.0 reads the flow label as the top 12 bits of the 3 bytes at its
  // offset and the packet rate from the first of them (cm-reference §10.9);
  // a fixed tshark would show the real values. Either is accepted.
  w.either[pre + "_flowlabel"] = {p.flow_label, p.flow_label >> 8};
  w.either[pre + "_pktrate"] = {p.packet_rate, (p.flow_label >> 12) & 0x3F};
  w.num[pre + "_tfcclass"] = p.traffic_class;
  w.num[pre + "_hoplim"] = p.hop_limit;
  w.num[pre + "_sl"] = p.sl;
  w.num[pre + "_subnetlocal"] = p.subnet_local;
  w.num[pre + "_localacktout"] = p.local_ack_timeout;
}

// What tshark should show for a CM MAD, from our parse of it.
Want Expect(const CmMad& m) {
  Want w;
  w.num["infiniband.mad.baseversion"] = m.hdr.base_version;
  w.num["infiniband.mad.mgmtclass"] = m.hdr.mgmt_class;
  w.num["infiniband.mad.classversion"] = m.hdr.class_version;
  w.num["infiniband.mad.method"] = m.hdr.method;
  w.num["infiniband.mad.status"] = m.hdr.status;
  w.num["infiniband.mad.classspecific"] = m.hdr.class_specific;
  w.num["infiniband.mad.transactionid"] = m.hdr.tid;
  w.num["infiniband.mad.attributeid"] = m.hdr.attr_id;
  w.num["infiniband.mad.attributemodifier"] = m.hdr.attr_mod;
  if (const CmReq* r = m.As<CmReq>()) {
    const std::string q = "infiniband.cm.req.";
    w.num["infiniband.cm.req"] = r->local_comm_id;
    w.num[q + "serviceid"] = r->service_id;
    w.num[q + "localcaguid"] = r->local_ca_guid;
    w.num[q + "localqkey"] = r->local_qkey;
    w.num[q + "localqpn"] = r->local_qpn;
    w.num[q + "responderres"] = r->responder_resources;
    w.num[q + "localeecn"] = r->local_eecn;
    w.num[q + "initdepth"] = r->initiator_depth;
    w.num[q + "remoteeecn"] = r->remote_eecn;
    w.num[q + "remoteresptout"] = r->remote_cm_response_timeout;
    w.num[q + "transpsvctype"] = r->transport_service_type;
    w.num[q + "e2eflowctrl"] = r->end_to_end_flow_control;
    w.num[q + "startpsn"] = r->starting_psn;
    w.num[q + "localresptout"] = r->local_cm_response_timeout;
    w.num[q + "retrcount"] = r->retry_count;
    w.num[q + "pkey"] = r->pkey;
    w.num[q + "pppmtu"] = r->path_mtu;
    w.num[q + "rdcexist"] = r->rdc_exists;
    w.num[q + "rnrretrcount"] = r->rnr_retry_count;
    w.num[q + "maxcmretr"] = r->max_cm_retries;
    w.num[q + "srq"] = r->srq;
    w.num[q + "ext_transport"] = r->extended_transport_type;
    AddPath(w, q + "prim", r->primary, true);
    AddPath(w, q + "alt", r->alternate, false);
    CmaHeader h;
    if ((r->service_id >> 24) == 1 && h.Parse(r->private_data) == Error::kOk) {
      w.num[q + "ip_cm.ipv"] = h.ip_version;
      w.num[q + "ip_cm.sport"] = h.src_port;
      if (h.ip_version == 4) {
        w.text[q + "ip_cm.sip4"] = h.SrcIp().ToString();
        w.text[q + "ip_cm.dip4"] = h.DstIp().ToString();
      }
      const ByteSpan app = RdmaCmAppPrivateData(*r);
      w.text[q + "ip_cm.private"] = Hex(app.data(), app.size());
    } else {
      w.text[q + "private"] = Hex(r->private_data);
    }
  } else if (const CmRep* p = m.As<CmRep>()) {
    const std::string q = "infiniband.cm.rep.";
    w.num["infiniband.cm.rep"] = p->local_comm_id;
    w.num[q + "remotecommid"] = p->remote_comm_id;
    w.num[q + "localqkey"] = p->local_qkey;
    w.num[q + "localqpn"] = p->local_qpn;
    w.num[q + "localeecn"] = p->local_eecn;
    w.num[q + "startpsn"] = p->starting_psn;
    w.num[q + "respres"] = p->responder_resources;
    w.num[q + "initdepth"] = p->initiator_depth;
    w.num[q + "tgtackdelay"] = p->target_ack_delay;
    w.num[q + "failoveracc"] = p->failover_accepted;
    w.num[q + "e2eflowctrl"] = p->end_to_end_flow_control;
    w.num[q + "rnrretrcount"] = p->rnr_retry_count;
    w.num[q + "srq"] = p->srq;
    w.num[q + "localcaguid"] = p->local_ca_guid;
    w.text[q + "private"] = Hex(p->private_data);
  } else if (const CmRtu* t = m.As<CmRtu>()) {
    w.num["infiniband.cm.rtu.localcommid"] = t->local_comm_id;
    w.num["infiniband.cm.rtu.remotecommid"] = t->remote_comm_id;
    w.text["infiniband.cm.rtu.private"] = Hex(t->private_data);
  } else if (const CmRej* j = m.As<CmRej>()) {
    w.num["infiniband.cm.rej.localcommid"] = j->local_comm_id;
    w.num["infiniband.cm.rej.remotecommid"] = j->remote_comm_id;
    w.num["infiniband.cm.rej.msgrej"] = j->message_rejected;
    w.num["infiniband.cm.rej.rejinfolen"] = j->reject_info_length;
    w.num["infiniband.cm.rej.reason"] = j->reason;
    w.text["infiniband.cm.rej.ari"] = Hex(j->ari);
    w.text["infiniband.cm.rej.private"] = Hex(j->private_data);
  } else if (const CmDreq* d = m.As<CmDreq>()) {
    w.num["infiniband.cm.dreq.localcommid"] = d->local_comm_id;
    w.num["infiniband.cm.dreq.remotecommid"] = d->remote_comm_id;
    w.num["infiniband.cm.req.remoteqpneecn"] = d->remote_qpn_eecn;  // tshark's name
    w.text["infiniband.cm.dreq.private"] = Hex(d->private_data);
  } else if (const CmDrep* e = m.As<CmDrep>()) {
    w.num["infiniband.cm.drsp.localcommid"] = e->local_comm_id;
    w.num["infiniband.cm.drsp.remotecommid"] = e->remote_comm_id;
    w.text["infiniband.cm.drsp.private"] = Hex(e->private_data);
  }
  return w;
}

bool ParseNum(const std::string& s, uint64_t* v) {
  if (s.rfind("0x", 0) == 0) return absl::SimpleHexAtoi(s.substr(2), v);
  return absl::SimpleAtoi(s, v);
}

bool tshark_defect_seen = false;

// Runs tshark over `path` (only UD frames to QP 1) and checks every expected
// field of frame i against wants[i]. Returns the number of fields compared.
int CompareWithTshark(const std::string& path, const std::vector<Want>& wants) {
  std::vector<std::string> fields;
  for (const auto& w : wants) {
    for (const auto& [f, v] : w.num) fields.push_back(f);
    for (const auto& [f, v] : w.text) fields.push_back(f);
    for (const auto& [f, v] : w.either) fields.push_back(f);
  }
  std::sort(fields.begin(), fields.end());
  fields.erase(std::unique(fields.begin(), fields.end()), fields.end());
  std::string cmd = "tshark -n -r '" + path + "' -Y 'infiniband.bth.opcode == 100 && infiniband.bth.destqp == 1'" +
                    " -T fields -E separator=/t -E occurrence=f";
  for (const auto& f : fields) cmd += " -e " + f;
  cmd += " 2>/dev/null";
  std::string out;
  EXPECT_EQ(Run(cmd, &out), 0) << cmd;
  const auto lines = Lines(out);
  EXPECT_EQ(lines.size(), wants.size());
  int compared = 0;
  for (size_t i = 0; i < std::min(lines.size(), wants.size()); i++) {
    SCOPED_TRACE(absl::StrCat("frame ", i + 1));
    std::vector<std::string> cols = absl::StrSplit(lines[i], '\t');
    EXPECT_EQ(cols.size(), fields.size());
    if (cols.size() != fields.size()) continue;
    std::map<std::string, std::string> got;
    for (size_t c = 0; c < fields.size(); c++) got[fields[c]] = cols[c];
    for (const auto& [f, v] : wants[i].num) {
      uint64_t n = 0;
      EXPECT_TRUE(ParseNum(got[f], &n)) << f << " = '" << got[f] << "'";
      EXPECT_EQ(n, v) << f;
      compared++;
    }
    for (const auto& [f, v] : wants[i].either) {
      uint64_t n = 0;
      EXPECT_TRUE(ParseNum(got[f], &n)) << f << " = '" << got[f] << "'";
      EXPECT_TRUE(n == v.first || n == v.second) << f << " = " << n << ", want " << v.first;
      if (n == v.second && v.first != v.second) tshark_defect_seen = true;
      compared++;
    }
    for (const auto& [f, v] : wants[i].text) {
      std::string g = absl::AsciiStrToLower(absl::StrReplaceAll(got[f], {{":", ""}}));
      EXPECT_EQ(g, v) << f;
      compared++;
    }
  }
  return compared;
}

std::string WritePcap(const std::string& name, const std::vector<Bytes>& frames) {
  const std::string path = OutputDir("cm_tshark") + "/" + name;
  auto w = pcapio::Writer::Open(path);
  EXPECT_TRUE(w.ok());
  uint64_t ts = 1'000'000'000;
  for (const auto& f : frames) (*w)->Write(ts += 1000, f.data(), f.size());
  return path;
}

TEST(CmTshark, ReadsTheCapturesAsWeDo) {
  ASSERT_TRUE(HaveTshark()) << "tshark is required (the test command installs it)";
  int compared = 0, mads = 0;
  for (const auto& cap : ReferenceCaptures()) {
    std::vector<Want> wants;
    for (const auto& f : cap.frames) {
      MadDatagram d;
      if (ParseMadDatagram(f.data, &d) != Error::kOk) continue;
      CmMad m;
      ASSERT_EQ(ParseCmMad(d.mad, &m), Error::kOk);
      wants.push_back(Expect(m));
    }
    if (wants.empty()) continue;
    SCOPED_TRACE(cap.name);
    mads += static_cast<int>(wants.size());
    compared += CompareWithTshark(cap.path, wants);
  }
  EXPECT_EQ(mads, 17);
  EXPECT_GT(compared, 17 * 10);
  std::printf("tshark agreed on %d fields of the %d captured CM MADs\n", compared, mads);
}

TEST(CmTshark, DecodesWhatWeBuild) {
  ASSERT_TRUE(HaveTshark()) << "tshark is required (the test command installs it)";
  // Reserved bits zero: tshark shows some of them as fields of their own.
  CmRandom rnd(31337, /*zero_reserved=*/true);
  NetHeaders path;
  path.eth.src = MacAddr{{0x02, 0, 0, 0, 0, 1}};
  path.eth.dst = MacAddr{{0x02, 0, 0, 0, 0, 2}};
  path.eth.ethertype = kEtherTypeIpv4;
  path.ip4.src = 0xC6120001;
  path.ip4.dst = 0xC6120002;
  std::vector<Bytes> frames;
  std::vector<Want> wants;
  for (int i = 0; i < 240; i++) {
    CmMessage msg;
    switch (i % 6) {
      case 0: {
        CmReq r = rnd.Req();
        if (i % 12 == 0) {  // an rdma_cm REQ: tshark then decodes the CMA header
          r.service_id = RdmaCmTcpServiceId(static_cast<uint16_t>(rnd.H()));
          const IpAddr a = IpAddr::FromV4(rnd.W()), b = IpAddr::FromV4(rnd.W());
          uint8_t app[CmaHeader::kAppPrivateDataLen];
          for (auto& x : app) x = static_cast<uint8_t>(rnd.R());
          ASSERT_TRUE(SetRdmaCmPrivateData(CmaHeader::Make(a, rnd.H(), b), ByteSpan(app, sizeof app), &r));
        } else if ((r.service_id >> 24) == 1) {
          r.service_id ^= uint64_t{1} << 40;
        }
        if (i % 4 == 0) {  // IPv4-mapped GIDs, as RoCEv2 over IPv4 has them
          r.primary.local_gid = IpAddr::FromV4(rnd.W()).b;
          r.primary.remote_gid = IpAddr::FromV4(rnd.W()).b;
        }
        msg = r;
        break;
      }
      case 1: msg = rnd.Rep(); break;
      case 2: msg = rnd.Rtu(); break;
      case 3: msg = rnd.Rej(); break;
      case 4: msg = rnd.Dreq(); break;
      default: msg = rnd.Drep(); break;
    }
    CmMad m = MakeCmMad(rnd.R(), std::move(msg));
    m.hdr.status = rnd.H();
    m.hdr.class_specific = rnd.H();
    m.hdr.attr_mod = rnd.W();
    const auto mad_bytes = SerializeCmMad(m);
    const MadDatagram d = MakeMadDatagram(path, static_cast<uint32_t>(i), mad_bytes);
    Bytes f(MadDatagramLen(d));
    ASSERT_EQ(BuildMadDatagram(d, f), f.size());
    frames.push_back(std::move(f));
    wants.push_back(Expect(m));
  }
  const int compared = CompareWithTshark(WritePcap("generated-cm.pcap", frames), wants);
  EXPECT_GT(compared, 240 * 8);
  std::printf("tshark agreed on %d fields of 240 built CM MADs%s\n", compared,
              tshark_defect_seen ? " (reading REQ flow labels / packet rates with its known defect)" : "");
}

}  // namespace
}  // namespace roce::wire
