// SPDX-License-Identifier: MIT
#include "stack/wire/rdma_cm.h"

#include <algorithm>
#include <cstring>

namespace roce::wire {

std::optional<RdmaCmServiceIdParts> ParseRdmaCmServiceId(uint64_t service_id) {
  if (service_id >> 32) return std::nullopt;
  RdmaCmServiceIdParts r;
  r.port_space = static_cast<uint16_t>(service_id >> 16);
  r.port = static_cast<uint16_t>(service_id);
  switch (r.port_space) {
    case rdma_cm::kPortSpaceIpoib:
    case rdma_cm::kPortSpaceTcp:
    case rdma_cm::kPortSpaceUdp:
    case rdma_cm::kPortSpaceIb:
      return r;
    default:
      return std::nullopt;
  }
}

CmaHeader CmaHeader::Make(const IpAddr& src, uint16_t src_port, const IpAddr& dst) {
  CmaHeader h;
  h.src_port = src_port;
  if (src.IsV4()) {
    h.ip_version = 4;
    Store32(&h.src_addr[12], src.V4());
    Store32(&h.dst_addr[12], dst.V4());
  } else {
    h.ip_version = 6;
    h.src_addr = src.b;
    h.dst_addr = dst.b;
  }
  return h;
}

IpAddr CmaHeader::ToIp(const std::array<uint8_t, 16>& a) const {
  if (ip_version == 4) return IpAddr::FromV4(Load32(&a[12]));
  return IpAddr::FromV6(a.data());
}

Error CmaHeader::Parse(ByteSpan in) {
  if (in.size() < kLen) return Error::kTruncated;
  const uint8_t* p = in.data();
  version = p[0];
  ip_version = static_cast<uint8_t>(p[1] >> 4);
  resv = static_cast<uint8_t>(p[1] & 0xF);
  src_port = Load16(p + 2);
  std::memcpy(src_addr.data(), p + 4, 16);
  std::memcpy(dst_addr.data(), p + 20, 16);
  if (version != kVersion || (ip_version != 4 && ip_version != 6)) return Error::kBadCmMessage;
  return Error::kOk;
}

void CmaHeader::Emit(uint8_t* out) const {
  out[0] = version;
  out[1] = static_cast<uint8_t>(((ip_version & 0xFu) << 4) | (resv & 0xFu));
  Store16(out + 2, src_port);
  std::memcpy(out + 4, src_addr.data(), 16);
  std::memcpy(out + 20, dst_addr.data(), 16);
}

bool SetRdmaCmPrivateData(const CmaHeader& h, ByteSpan app_data, CmReq* req) {
  if (app_data.size() > CmaHeader::kAppPrivateDataLen) return false;
  req->private_data.fill(0);
  h.Emit(req->private_data.data());
  std::copy(app_data.begin(), app_data.end(), req->private_data.begin() + CmaHeader::kLen);
  return true;
}

uint64_t GuidFromMac(const MacAddr& mac) {
  const auto& m = mac.b;
  const uint8_t g[8] = {static_cast<uint8_t>(m[0] ^ 0x02), m[1], m[2], 0xFF, 0xFE, m[3], m[4], m[5]};
  return Load64(g);
}

}  // namespace roce::wire
