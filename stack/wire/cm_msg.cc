// SPDX-License-Identifier: MIT
#include "stack/wire/cm_msg.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace roce::wire {

namespace {

// Every CM message occupies the whole MAD data area.
constexpr size_t kDataLen = mad::kDataLen;

uint8_t U8(unsigned v) { return static_cast<uint8_t>(v); }

template <size_t N>
void CopyIn(std::array<uint8_t, N>& a, const uint8_t* p) {
  std::memcpy(a.data(), p, N);
}
template <size_t N>
void CopyOut(const std::array<uint8_t, N>& a, uint8_t* p) {
  std::memcpy(p, a.data(), N);
}

}  // namespace

const char* cm::AttrName(uint16_t attr_id) {
  switch (attr_id) {
    case kAttrClassPortInfo: return "ClassPortInfo";
    case kAttrReq: return "REQ";
    case kAttrMra: return "MRA";
    case kAttrRej: return "REJ";
    case kAttrRep: return "REP";
    case kAttrRtu: return "RTU";
    case kAttrDreq: return "DREQ";
    case kAttrDrep: return "DREP";
    case kAttrSidrReq: return "SIDR_REQ";
    case kAttrSidrRep: return "SIDR_REP";
    case kAttrLap: return "LAP";
    case kAttrApr: return "APR";
    default: return "unknown";
  }
}

// ---- path -------------------------------------------------------------------------

void CmPath::Parse(const uint8_t* p) {
  local_lid = Load16(p);
  remote_lid = Load16(p + 2);
  CopyIn(local_gid, p + 4);
  CopyIn(remote_gid, p + 20);
  const uint32_t w = Load32(p + 36);
  flow_label = w >> 12;
  resv_flow = U8((w >> 6) & 0x3F);
  packet_rate = U8(w & 0x3F);
  traffic_class = p[40];
  hop_limit = p[41];
  sl = U8(p[42] >> 4);
  subnet_local = (p[42] >> 3) & 1;
  resv_sl = U8(p[42] & 7);
  local_ack_timeout = U8(p[43] >> 3);
  resv_ack = U8(p[43] & 7);
}

void CmPath::Emit(uint8_t* p) const {
  Store16(p, local_lid);
  Store16(p + 2, remote_lid);
  CopyOut(local_gid, p + 4);
  CopyOut(remote_gid, p + 20);
  Store32(p + 36, ((flow_label & 0xFFFFFu) << 12) | ((resv_flow & 0x3Fu) << 6) | (packet_rate & 0x3Fu));
  p[40] = traffic_class;
  p[41] = hop_limit;
  p[42] = U8(((sl & 0xFu) << 4) | (subnet_local ? 8u : 0u) | (resv_sl & 7u));
  p[43] = U8(((local_ack_timeout & 0x1Fu) << 3) | (resv_ack & 7u));
}

// ---- REQ --------------------------------------------------------------------------

Error CmReq::Parse(ByteSpan data) {
  if (data.size() < kDataLen) return Error::kTruncated;
  const uint8_t* p = data.data();
  local_comm_id = Load32(p);
  resv4 = p[4];
  vendor_id = Load24(p + 5);
  service_id = Load64(p + 8);
  local_ca_guid = Load64(p + 16);
  resv24 = Load32(p + 24);
  local_qkey = Load32(p + 28);
  local_qpn = Load24(p + 32);
  responder_resources = p[35];
  local_eecn = Load24(p + 36);
  initiator_depth = p[39];
  remote_eecn = Load24(p + 40);
  remote_cm_response_timeout = U8(p[43] >> 3);
  transport_service_type = U8((p[43] >> 1) & 3);
  end_to_end_flow_control = p[43] & 1;
  starting_psn = Load24(p + 44);
  local_cm_response_timeout = U8(p[47] >> 3);
  retry_count = U8(p[47] & 7);
  pkey = Load16(p + 48);
  path_mtu = U8(p[50] >> 4);
  rdc_exists = (p[50] >> 3) & 1;
  rnr_retry_count = U8(p[50] & 7);
  max_cm_retries = U8(p[51] >> 4);
  srq = (p[51] >> 3) & 1;
  extended_transport_type = U8(p[51] & 7);
  primary.Parse(p + 52);
  alternate.Parse(p + 96);
  CopyIn(private_data, p + kPrivateDataOffset);
  return Error::kOk;
}

void CmReq::Emit(uint8_t* p) const {
  Store32(p, local_comm_id);
  p[4] = resv4;
  Store24(p + 5, vendor_id & 0xFFFFFF);
  Store64(p + 8, service_id);
  Store64(p + 16, local_ca_guid);
  Store32(p + 24, resv24);
  Store32(p + 28, local_qkey);
  Store24(p + 32, local_qpn & 0xFFFFFF);
  p[35] = responder_resources;
  Store24(p + 36, local_eecn & 0xFFFFFF);
  p[39] = initiator_depth;
  Store24(p + 40, remote_eecn & 0xFFFFFF);
  p[43] = U8(((remote_cm_response_timeout & 0x1Fu) << 3) | ((transport_service_type & 3u) << 1) |
             (end_to_end_flow_control ? 1u : 0u));
  Store24(p + 44, starting_psn & 0xFFFFFF);
  p[47] = U8(((local_cm_response_timeout & 0x1Fu) << 3) | (retry_count & 7u));
  Store16(p + 48, pkey);
  p[50] = U8(((path_mtu & 0xFu) << 4) | (rdc_exists ? 8u : 0u) | (rnr_retry_count & 7u));
  p[51] = U8(((max_cm_retries & 0xFu) << 4) | (srq ? 8u : 0u) | (extended_transport_type & 7u));
  primary.Emit(p + 52);
  alternate.Emit(p + 96);
  CopyOut(private_data, p + kPrivateDataOffset);
}

// ---- MRA --------------------------------------------------------------------------

Error CmMra::Parse(ByteSpan data) {
  if (data.size() < kDataLen) return Error::kTruncated;
  const uint8_t* p = data.data();
  local_comm_id = Load32(p);
  remote_comm_id = Load32(p + 4);
  message_mraed = U8(p[8] >> 6);
  resv8 = U8(p[8] & 0x3F);
  service_timeout = U8(p[9] >> 3);
  resv9 = U8(p[9] & 7);
  CopyIn(private_data, p + kPrivateDataOffset);
  return Error::kOk;
}

void CmMra::Emit(uint8_t* p) const {
  Store32(p, local_comm_id);
  Store32(p + 4, remote_comm_id);
  p[8] = U8(((message_mraed & 3u) << 6) | (resv8 & 0x3Fu));
  p[9] = U8(((service_timeout & 0x1Fu) << 3) | (resv9 & 7u));
  CopyOut(private_data, p + kPrivateDataOffset);
}

// ---- REJ --------------------------------------------------------------------------

Error CmRej::Parse(ByteSpan data) {
  if (data.size() < kDataLen) return Error::kTruncated;
  const uint8_t* p = data.data();
  local_comm_id = Load32(p);
  remote_comm_id = Load32(p + 4);
  message_rejected = U8(p[8] >> 6);
  resv8 = U8(p[8] & 0x3F);
  reject_info_length = U8(p[9] >> 1);
  resv9 = p[9] & 1;
  reason = Load16(p + 10);
  CopyIn(ari, p + 12);
  CopyIn(private_data, p + kPrivateDataOffset);
  if (reject_info_length > kAriLen) return Error::kBadCmMessage;
  return Error::kOk;
}

void CmRej::Emit(uint8_t* p) const {
  Store32(p, local_comm_id);
  Store32(p + 4, remote_comm_id);
  p[8] = U8(((message_rejected & 3u) << 6) | (resv8 & 0x3Fu));
  p[9] = U8(((reject_info_length & 0x7Fu) << 1) | (resv9 ? 1u : 0u));
  Store16(p + 10, reason);
  CopyOut(ari, p + 12);
  CopyOut(private_data, p + kPrivateDataOffset);
}

// ---- REP --------------------------------------------------------------------------

Error CmRep::Parse(ByteSpan data) {
  if (data.size() < kDataLen) return Error::kTruncated;
  const uint8_t* p = data.data();
  local_comm_id = Load32(p);
  remote_comm_id = Load32(p + 4);
  local_qkey = Load32(p + 8);
  local_qpn = Load24(p + 12);
  local_eecn = Load24(p + 16);
  starting_psn = Load24(p + 20);
  vendor_id = (uint32_t{p[15]} << 16) | (uint32_t{p[19]} << 8) | p[23];
  responder_resources = p[24];
  initiator_depth = p[25];
  target_ack_delay = U8(p[26] >> 3);
  failover_accepted = U8((p[26] >> 1) & 3);
  end_to_end_flow_control = p[26] & 1;
  rnr_retry_count = U8(p[27] >> 5);
  srq = (p[27] >> 4) & 1;
  resv27 = U8(p[27] & 0xF);
  local_ca_guid = Load64(p + 28);
  CopyIn(private_data, p + kPrivateDataOffset);
  return Error::kOk;
}

void CmRep::Emit(uint8_t* p) const {
  Store32(p, local_comm_id);
  Store32(p + 4, remote_comm_id);
  Store32(p + 8, local_qkey);
  Store24(p + 12, local_qpn & 0xFFFFFF);
  p[15] = U8(vendor_id >> 16);
  Store24(p + 16, local_eecn & 0xFFFFFF);
  p[19] = U8(vendor_id >> 8);
  Store24(p + 20, starting_psn & 0xFFFFFF);
  p[23] = U8(vendor_id);
  p[24] = responder_resources;
  p[25] = initiator_depth;
  p[26] = U8(((target_ack_delay & 0x1Fu) << 3) | ((failover_accepted & 3u) << 1) |
             (end_to_end_flow_control ? 1u : 0u));
  p[27] = U8(((rnr_retry_count & 7u) << 5) | (srq ? 0x10u : 0u) | (resv27 & 0xFu));
  Store64(p + 28, local_ca_guid);
  CopyOut(private_data, p + kPrivateDataOffset);
}

// ---- RTU, DREQ, DREP --------------------------------------------------------------

Error CmRtu::Parse(ByteSpan data) {
  if (data.size() < kDataLen) return Error::kTruncated;
  local_comm_id = Load32(data.data());
  remote_comm_id = Load32(data.data() + 4);
  CopyIn(private_data, data.data() + kPrivateDataOffset);
  return Error::kOk;
}

void CmRtu::Emit(uint8_t* p) const {
  Store32(p, local_comm_id);
  Store32(p + 4, remote_comm_id);
  CopyOut(private_data, p + kPrivateDataOffset);
}

Error CmDreq::Parse(ByteSpan data) {
  if (data.size() < kDataLen) return Error::kTruncated;
  const uint8_t* p = data.data();
  local_comm_id = Load32(p);
  remote_comm_id = Load32(p + 4);
  remote_qpn_eecn = Load24(p + 8);
  resv11 = p[11];
  CopyIn(private_data, p + kPrivateDataOffset);
  return Error::kOk;
}

void CmDreq::Emit(uint8_t* p) const {
  Store32(p, local_comm_id);
  Store32(p + 4, remote_comm_id);
  Store24(p + 8, remote_qpn_eecn & 0xFFFFFF);
  p[11] = resv11;
  CopyOut(private_data, p + kPrivateDataOffset);
}

Error CmDrep::Parse(ByteSpan data) {
  if (data.size() < kDataLen) return Error::kTruncated;
  local_comm_id = Load32(data.data());
  remote_comm_id = Load32(data.data() + 4);
  CopyIn(private_data, data.data() + kPrivateDataOffset);
  return Error::kOk;
}

void CmDrep::Emit(uint8_t* p) const {
  Store32(p, local_comm_id);
  Store32(p + 4, remote_comm_id);
  CopyOut(private_data, p + kPrivateDataOffset);
}

// ---- SIDR -------------------------------------------------------------------------

Error CmSidrReq::Parse(ByteSpan data) {
  if (data.size() < kDataLen) return Error::kTruncated;
  const uint8_t* p = data.data();
  request_id = Load32(p);
  pkey = Load16(p + 4);
  resv6 = Load16(p + 6);
  service_id = Load64(p + 8);
  CopyIn(private_data, p + kPrivateDataOffset);
  return Error::kOk;
}

void CmSidrReq::Emit(uint8_t* p) const {
  Store32(p, request_id);
  Store16(p + 4, pkey);
  Store16(p + 6, resv6);
  Store64(p + 8, service_id);
  CopyOut(private_data, p + kPrivateDataOffset);
}

Error CmSidrRep::Parse(ByteSpan data) {
  if (data.size() < kDataLen) return Error::kTruncated;
  const uint8_t* p = data.data();
  request_id = Load32(p);
  status = p[4];
  additional_info_length = p[5];
  vendor_id = (uint32_t{Load16(p + 6)} << 8) | p[11];
  qpn = Load24(p + 8);
  service_id = Load64(p + 12);
  qkey = Load32(p + 20);
  CopyIn(additional_info, p + 24);
  CopyIn(private_data, p + kPrivateDataOffset);
  if (additional_info_length > kInfoLen) return Error::kBadCmMessage;
  return Error::kOk;
}

void CmSidrRep::Emit(uint8_t* p) const {
  Store32(p, request_id);
  p[4] = status;
  p[5] = additional_info_length;
  Store16(p + 6, static_cast<uint16_t>(vendor_id >> 8));
  Store24(p + 8, qpn & 0xFFFFFF);
  p[11] = U8(vendor_id);
  Store64(p + 12, service_id);
  Store32(p + 20, qkey);
  CopyOut(additional_info, p + 24);
  CopyOut(private_data, p + kPrivateDataOffset);
}

// ---- whole MAD --------------------------------------------------------------------

uint16_t AttrIdOf(const CmMessage& m) {
  return std::visit([](const auto& x) { return std::decay_t<decltype(x)>::kAttrId; }, m);
}

CmMad MakeCmMad(uint64_t tid, CmMessage msg) {
  CmMad m;
  m.hdr.base_version = mad::kBaseVersion;
  m.hdr.mgmt_class = mad::kClassCm;
  m.hdr.class_version = mad::kCmClassVersion;
  m.hdr.method = mad::kMethodSend;
  m.hdr.tid = tid;
  m.hdr.attr_id = AttrIdOf(msg);
  m.msg = std::move(msg);
  return m;
}

namespace {

template <typename T>
Error ParseAs(ByteSpan data, CmMessage* out) {
  T& t = out->emplace<T>();
  return t.Parse(data);
}

}  // namespace

Error ParseCmMad(ByteSpan in, CmMad* out) {
  if (in.size() < mad::kLen) return Error::kTruncated;
  if (in.size() > mad::kLen) return Error::kBadMad;
  if (out->hdr.Parse(in) != Error::kOk) return Error::kBadMad;
  if (out->hdr.mgmt_class != mad::kClassCm || out->hdr.class_version != mad::kCmClassVersion)
    return Error::kNotCm;
  const ByteSpan data = in.subspan(mad::kHeaderLen);
  switch (out->hdr.attr_id) {
    case cm::kAttrReq: return ParseAs<CmReq>(data, &out->msg);
    case cm::kAttrMra: return ParseAs<CmMra>(data, &out->msg);
    case cm::kAttrRej: return ParseAs<CmRej>(data, &out->msg);
    case cm::kAttrRep: return ParseAs<CmRep>(data, &out->msg);
    case cm::kAttrRtu: return ParseAs<CmRtu>(data, &out->msg);
    case cm::kAttrDreq: return ParseAs<CmDreq>(data, &out->msg);
    case cm::kAttrDrep: return ParseAs<CmDrep>(data, &out->msg);
    case cm::kAttrSidrReq: return ParseAs<CmSidrReq>(data, &out->msg);
    case cm::kAttrSidrRep: return ParseAs<CmSidrRep>(data, &out->msg);
    default: return Error::kUnknownCmAttribute;
  }
}

void EmitCmMad(const CmMad& m, uint8_t* out) {
  MadHeader h = m.hdr;
  h.attr_id = AttrIdOf(m.msg);
  h.Emit(out);
  std::visit([out](const auto& x) { x.Emit(out + mad::kHeaderLen); }, m.msg);
}

std::array<uint8_t, mad::kLen> SerializeCmMad(const CmMad& m) {
  std::array<uint8_t, mad::kLen> b{};
  EmitCmMad(m, b.data());
  return b;
}

}  // namespace roce::wire
