// SPDX-License-Identifier: MIT
#include "stack/wire/mad.h"

#include <algorithm>
#include <cstring>

namespace roce::wire {

MadDatagram MakeMadDatagram(const NetHeaders& path, uint32_t psn,
                            const std::array<uint8_t, mad::kLen>& mad) {
  MadDatagram d;
  static_cast<NetHeaders&>(d) = path;
  d.udp.src_port = kQp1UdpSrcPort;
  d.udp.dst_port = kRoceV2Port;
  d.udp.checksum = 0;
  d.bth = Bth{};
  d.bth.opcode = op::kUdSendOnly;
  d.bth.pkey = kDefaultPkey;
  d.bth.dest_qp = kGsiQpn;
  d.bth.ack_req = true;
  d.bth.psn = psn & 0xFFFFFF;
  d.deth.qkey = kGsiQkey;
  d.deth.resv = 0;
  d.deth.src_qp = kGsiQpn;
  d.mad = mad;
  return d;
}

Error ParseMadDatagram(ByteSpan frame, MadDatagram* out, const ParseOptions& opts) {
  RocePacket p;
  const Error e = ParseRoceFrame(frame, &p, opts);
  if (e != Error::kOk) return e;
  if (p.bth.opcode != op::kUdSendOnly || p.bth.dest_qp != kGsiQpn || p.deth.qkey != kGsiQkey)
    return Error::kNotGsi;
  if (p.payload.size() != mad::kLen) return Error::kBadMad;
  MadHeader h;
  if (h.Parse(p.payload) != Error::kOk) return Error::kBadMad;
  static_cast<NetHeaders&>(*out) = p;
  out->bth = p.bth;
  out->deth = p.deth;
  std::copy(p.payload.begin(), p.payload.end(), out->mad.begin());
  out->icrc = p.icrc;
  return Error::kOk;
}

size_t MadDatagramLen(const NetHeaders& net) {
  return HeadersLen(net, op::kUdSendOnly) + mad::kLen + kIcrcLen;
}

size_t BuildMadDatagram(const MadDatagram& d, MutByteSpan out, const BuildOptions& opts) {
  RocePacket p;
  static_cast<NetHeaders&>(p) = d;
  p.bth = d.bth;
  p.deth = d.deth;
  p.payload = ByteSpan(d.mad.data(), d.mad.size());
  p.icrc = d.icrc;
  BuildOptions o = opts;
  o.append_trailer = false;
  return BuildRoceFrame(p, out, o);
}

}  // namespace roce::wire
