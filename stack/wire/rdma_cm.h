// SPDX-License-Identifier: MIT
// What Linux rdma_cm layers on IB CM for IP-addressed connections over
// RoCEv2, as pure functions: service IDs of the IP port spaces, the 36-byte
// CMA header at the front of REQ private data, the flow label rdma_cm puts in
// the REQ path and the UDP source port rxe derives from it, how the CM forms
// transaction IDs, and the CA GUID of a MAC. See /work/shared/cm-reference.md
// for the captures these are checked against.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "stack/wire/bytes.h"
#include "stack/wire/cm_msg.h"
#include "stack/wire/error.h"
#include "stack/wire/headers.h"

namespace roce::wire {

namespace rdma_cm {
// Port spaces (enum rdma_ucm_port_space).
inline constexpr uint16_t kPortSpaceIpoib = 0x0002;
inline constexpr uint16_t kPortSpaceTcp = 0x0106;
inline constexpr uint16_t kPortSpaceUdp = 0x0111;
inline constexpr uint16_t kPortSpaceIb = 0x013F;
}  // namespace rdma_cm

// Service ID of an IP port: port_space << 16 | port, e.g. 0x0000000001061c06
// for TCP port 7174.
constexpr uint64_t RdmaCmServiceId(uint16_t port_space, uint16_t port) {
  return (uint64_t{port_space} << 16) | port;
}
constexpr uint64_t RdmaCmTcpServiceId(uint16_t port) {
  return RdmaCmServiceId(rdma_cm::kPortSpaceTcp, port);
}

struct RdmaCmServiceIdParts {
  uint16_t port_space = 0;
  uint16_t port = 0;
  bool operator==(const RdmaCmServiceIdParts&) const = default;
};
// The port space and port of an rdma_cm IP service ID: the upper 32 bits
// zero and one of the four port spaces; nullopt otherwise.
std::optional<RdmaCmServiceIdParts> ParseRdmaCmServiceId(uint64_t service_id);

// The CMA header (struct cma_hdr): the first 36 bytes of the private data of
// a REQ that rdma_cm sends for an IP-addressed connection. REP, REJ, DREQ
// and the rest carry none.
struct CmaHeader {
  static constexpr size_t kLen = 36;
  static constexpr size_t kAppPrivateDataLen = CmReq::kPrivateDataLen - kLen;  // 56
  static constexpr uint8_t kVersion = 0;
  uint8_t version = kVersion;  // 0: Linux refuses anything else
  uint8_t ip_version = 4;      // byte 1, high nibble: 4 or 6
  uint8_t resv = 0;            // byte 1, low nibble
  uint16_t src_port = 0;       // 2: the active side's port
  // 4 and 20: the active side's (source) and passive side's (destination)
  // addresses as stored: IPv6 as is, IPv4 in the last 4 bytes after 12 zero
  // bytes (not ::ffff-mapped, unlike the path GIDs).
  std::array<uint8_t, 16> src_addr{};
  std::array<uint8_t, 16> dst_addr{};
  bool operator==(const CmaHeader&) const = default;

  // A header for a connection from src:src_port to dst (same family).
  static CmaHeader Make(const IpAddr& src, uint16_t src_port, const IpAddr& dst);
  // The addresses as IpAddr (IPv4 from the last 4 bytes, as ::ffff:a.b.c.d).
  IpAddr SrcIp() const { return ToIp(src_addr); }
  IpAddr DstIp() const { return ToIp(dst_addr); }

  // kTruncated if shorter than 36 bytes; kBadCmMessage if the version is not
  // 0 or the IP version not 4 or 6 (what Linux's cma_save_ip_info refuses).
  Error Parse(ByteSpan in);
  void Emit(uint8_t* out) const;  // 36 bytes

 private:
  IpAddr ToIp(const std::array<uint8_t, 16>& a) const;
};

// REQ private data as rdma_cm sends it: the CMA header then the application's
// bytes (at most 56, else false and `req` is left alone), zero-filled.
bool SetRdmaCmPrivateData(const CmaHeader& h, ByteSpan app_data, CmReq* req);
// The application's part of a REQ's private data (the 56 bytes after the CMA header).
inline ByteSpan RdmaCmAppPrivateData(const CmReq& req) {
  return ByteSpan(req.private_data).subspan(CmaHeader::kLen);
}

// The RoCEv2 flow label rdma_cm puts in a REQ's primary path
// (cma_get_roce_udp_flow_label, unless an IPv6 source sets one): the active
// side's port * 31 + the passive side's port, 20 bits.
constexpr uint32_t RdmaCmFlowLabel(uint16_t src_port, uint16_t dst_port) {
  return (uint32_t{src_port} * 31u + dst_port) & 0xFFFFFu;
}
// The flow label of a QP pair without one (rdma_calc_flow_label).
constexpr uint32_t QpFlowLabel(uint32_t lqpn, uint32_t rqpn) {
  uint64_t v = uint64_t{lqpn} * rqpn;
  v ^= v >> 20;
  v ^= v >> 40;
  return static_cast<uint32_t>(v & 0xFFFFF);
}
// The UDP source port of a flow label (rdma_flow_label_to_udp_sport):
// 0xC000 | (low 14 bits ^ high 6 bits).
constexpr uint16_t FlowLabelToUdpSrcPort(uint32_t flow_label) {
  const uint32_t fl = flow_label & 0xFFFFF;
  return static_cast<uint16_t>(0xC000u | ((fl & 0x3FFF) ^ (fl >> 14)));
}
// The UDP source port Linux (rxe) uses for a connected QP's data packets in
// both directions: from the path's flow label, or the QPNs' if it is 0
// (rdma_get_udp_sport).
constexpr uint16_t RoceUdpSrcPort(uint32_t flow_label, uint32_t lqpn, uint32_t rqpn) {
  return FlowLabelToUdpSrcPort((flow_label & 0xFFFFF) ? flow_label : QpFlowLabel(lqpn, rqpn));
}

// A CM transaction ID as Linux forms it (cm_form_tid): the MAD agent's hi_tid
// (2 on the rxe guests) above the local comm ID's wire bytes read as a
// little-endian integer. `local_comm_id` is as the structs hold it (the wire
// bytes big-endian): comm ID 0x68e506e2 gives low word 0xe206e568.
constexpr uint64_t FormCmTid(uint32_t hi_tid, uint32_t local_comm_id) {
  const uint32_t c = local_comm_id;
  const uint32_t swapped = (c >> 24) | ((c >> 8) & 0xFF00) | ((c << 8) & 0xFF0000) | (c << 24);
  return (uint64_t{hi_tid} << 32) | swapped;
}
// The comm ID a Linux-formed TID was made from.
constexpr uint32_t CmTidCommId(uint64_t tid) {
  const uint32_t c = static_cast<uint32_t>(tid);
  return (c >> 24) | ((c >> 8) & 0xFF00) | ((c << 8) & 0xFF0000) | (c << 24);
}

// The CA / port GUID of a RoCE device: the modified EUI-64 of its MAC
// (universal/local bit flipped, ff:fe inserted): 52:54:00:c6:12:03 gives
// 0x505400fffec61203.
uint64_t GuidFromMac(const MacAddr& mac);

}  // namespace roce::wire
