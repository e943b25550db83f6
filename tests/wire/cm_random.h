// SPDX-License-Identifier: MIT
// Random CM messages for the round-trip and tshark tests: every field gets
// a random value within its width (reserved bits too, unless `zero_reserved`),
// length fields stay in range so that parsing accepts the result.
#pragma once

#include <random>

#include "stack/wire/cm_msg.h"

namespace roce::wire::cmtest {

class CmRandom {
 public:
  explicit CmRandom(uint64_t seed, bool zero_reserved = false) : rng_(seed), zero_resv_(zero_reserved) {}

  uint64_t R() { return rng_(); }
  uint32_t Bits(unsigned n) { return static_cast<uint32_t>(rng_() & ((uint64_t{1} << n) - 1)); }
  uint8_t B(unsigned n) { return static_cast<uint8_t>(Bits(n)); }
  uint16_t H() { return static_cast<uint16_t>(Bits(16)); }
  uint32_t W() { return static_cast<uint32_t>(rng_()); }
  bool Flag() { return rng_() & 1; }
  uint8_t Resv(unsigned n) { return zero_resv_ ? 0 : B(n); }
  template <size_t N>
  void Fill(std::array<uint8_t, N>& a) {
    for (auto& x : a) x = static_cast<uint8_t>(rng_());
  }

  CmPath Path() {
    CmPath p;
    p.local_lid = H();
    p.remote_lid = H();
    Fill(p.local_gid);
    Fill(p.remote_gid);
    p.flow_label = Bits(20);
    p.resv_flow = Resv(6);
    p.packet_rate = B(6);
    p.traffic_class = B(8);
    p.hop_limit = B(8);
    p.sl = B(4);
    p.subnet_local = Flag();
    p.resv_sl = Resv(3);
    p.local_ack_timeout = B(5);
    p.resv_ack = Resv(3);
    return p;
  }

  CmReq Req() {
    CmReq m;
    m.local_comm_id = W();
    m.resv4 = Resv(8);
    m.vendor_id = zero_resv_ ? 0 : Bits(24);
    m.service_id = R();
    m.local_ca_guid = R();
    m.resv24 = zero_resv_ ? 0 : W();
    m.local_qkey = W();
    m.local_qpn = Bits(24);
    m.responder_resources = B(8);
    m.local_eecn = Bits(24);
    m.initiator_depth = B(8);
    m.remote_eecn = Bits(24);
    m.remote_cm_response_timeout = B(5);
    m.transport_service_type = B(2);
    m.end_to_end_flow_control = Flag();
    m.starting_psn = Bits(24);
    m.local_cm_response_timeout = B(5);
    m.retry_count = B(3);
    m.pkey = H();
    m.path_mtu = B(4);
    m.rdc_exists = Flag();
    m.rnr_retry_count = B(3);
    m.max_cm_retries = B(4);
    m.srq = Flag();
    m.extended_transport_type = B(3);
    m.primary = Path();
    m.alternate = Path();
    Fill(m.private_data);
    return m;
  }

  CmMra Mra() {
    CmMra m;
    m.local_comm_id = W();
    m.remote_comm_id = W();
    m.message_mraed = B(2);
    m.resv8 = Resv(6);
    m.service_timeout = B(5);
    m.resv9 = Resv(3);
    Fill(m.private_data);
    return m;
  }

  CmRej Rej() {
    CmRej m;
    m.local_comm_id = W();
    m.remote_comm_id = W();
    m.message_rejected = B(2);
    m.resv8 = Resv(6);
    m.reject_info_length = static_cast<uint8_t>(rng_() % (CmRej::kAriLen + 1));
    m.resv9 = zero_resv_ ? false : Flag();
    m.reason = H();
    Fill(m.ari);
    Fill(m.private_data);
    return m;
  }

  CmRep Rep() {
    CmRep m;
    m.local_comm_id = W();
    m.remote_comm_id = W();
    m.local_qkey = W();
    m.local_qpn = Bits(24);
    m.local_eecn = Bits(24);
    m.starting_psn = Bits(24);
    m.vendor_id = zero_resv_ ? 0 : Bits(24);
    m.responder_resources = B(8);
    m.initiator_depth = B(8);
    m.target_ack_delay = B(5);
    m.failover_accepted = B(2);
    m.end_to_end_flow_control = Flag();
    m.rnr_retry_count = B(3);
    m.srq = Flag();
    m.resv27 = Resv(4);
    m.local_ca_guid = R();
    Fill(m.private_data);
    return m;
  }

  CmRtu Rtu() {
    CmRtu m;
    m.local_comm_id = W();
    m.remote_comm_id = W();
    Fill(m.private_data);
    return m;
  }

  CmDreq Dreq() {
    CmDreq m;
    m.local_comm_id = W();
    m.remote_comm_id = W();
    m.remote_qpn_eecn = Bits(24);
    m.resv11 = Resv(8);
    Fill(m.private_data);
    return m;
  }

  CmDrep Drep() {
    CmDrep m;
    m.local_comm_id = W();
    m.remote_comm_id = W();
    Fill(m.private_data);
    return m;
  }

  CmSidrReq SidrReq() {
    CmSidrReq m;
    m.request_id = W();
    m.pkey = H();
    m.resv6 = zero_resv_ ? 0 : H();
    m.service_id = R();
    Fill(m.private_data);
    return m;
  }

  CmSidrRep SidrRep() {
    CmSidrRep m;
    m.request_id = W();
    m.status = B(8);
    m.additional_info_length = static_cast<uint8_t>(rng_() % (CmSidrRep::kInfoLen + 1));
    m.vendor_id = zero_resv_ ? 0 : Bits(24);
    m.qpn = Bits(24);
    m.service_id = R();
    m.qkey = W();
    Fill(m.additional_info);
    Fill(m.private_data);
    return m;
  }

  // Any of the nine messages.
  CmMessage Any(int which) {
    switch (which % 9) {
      case 0: return Req();
      case 1: return Mra();
      case 2: return Rej();
      case 3: return Rep();
      case 4: return Rtu();
      case 5: return Dreq();
      case 6: return Drep();
      case 7: return SidrReq();
      default: return SidrRep();
    }
  }

  // A MAD header with every field random but class/version/attribute right.
  CmMad Mad(CmMessage msg) {
    CmMad m;
    m.hdr.base_version = mad::kBaseVersion;
    m.hdr.mgmt_class = mad::kClassCm;
    m.hdr.class_version = mad::kCmClassVersion;
    m.hdr.method = B(8);
    m.hdr.status = H();
    m.hdr.class_specific = H();
    m.hdr.tid = R();
    m.hdr.attr_id = AttrIdOf(msg);
    m.hdr.resv = zero_resv_ ? 0 : H();
    m.hdr.attr_mod = W();
    m.msg = std::move(msg);
    return m;
  }

 private:
  std::mt19937_64 rng_;
  bool zero_resv_;
};

}  // namespace roce::wire::cmtest
