// SPDX-License-Identifier: MIT
#include "tools/lib/samples.h"

#include "stack/wire/packet.h"
#include "stack/wire/psn.h"

namespace roce::tools {

using namespace roce::wire;

std::vector<std::vector<uint8_t>> SampleFrames() {
  std::vector<std::vector<uint8_t>> out;
  std::vector<uint8_t> payload(1500);
  for (size_t i = 0; i < payload.size(); i++) payload[i] = static_cast<uint8_t>(i * 7 + 3);
  uint32_t psn = 0xFFFFF0;  // crosses the 24-bit wrap
  int n = 0;
  for (int variant = 0; variant < 3; variant++) {  // 0: IPv4, 1: IPv6, 2: IPv4 + VLAN
    for (int code = 0; code < 256; code++) {
      const OpcodeInfo& info = GetOpcodeInfo(static_cast<uint8_t>(code));
      if (!info.name) continue;
      RocePacket p;
      MacAddr::FromString("02:00:00:00:00:01", &p.eth.src);
      MacAddr::FromString("02:00:00:00:00:02", &p.eth.dst);
      p.ipv6 = variant == 1;
      p.eth.ethertype = p.ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4;
      if (variant == 2) {
        p.eth.has_vlan = true;
        p.eth.vlan_tci = (3 << 13) | 100;
      }
      p.ip4.src = 0xC612000A;  // 198.18.0.10
      p.ip4.dst = 0xC6120002;
      p.ip4.tos = 0x02;
      p.ip4.id = static_cast<uint16_t>(n);
      const uint8_t s6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a};
      const uint8_t d6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02};
      std::copy(s6, s6 + 16, p.ip6.src.begin());
      std::copy(d6, d6 + 16, p.ip6.dst.begin());
      p.ip6.flow_label = 0x12345;
      p.udp.src_port = static_cast<uint16_t>(0xC000 | (n & 0x3FFF));
      p.bth.opcode = static_cast<uint8_t>(code);
      p.bth.dest_qp = info.transport == Transport::kUd ? 1 : 0x000011;
      p.bth.psn = psn;
      psn = PsnAdd(psn, 1);
      p.bth.ack_req = info.position == Position::kLast || info.position == Position::kOnly;
      p.bth.se = info.kind == OpKind::kSend && p.bth.ack_req;
      if (info.transport == Transport::kCnp) {
        p.bth.becn = true;
        p.bth.ack_req = false;
        p.bth.psn = 0;
      }
      p.reth = {0x00007f0012345000ull + static_cast<uint64_t>(n) * 64, 0x1234abcd, 4096};
      p.aeth = {syndrome::Ack(), static_cast<uint32_t>(n)};
      p.deth = {0x80010000, 0, 1};
      p.imm = 0xdeadbeef;
      p.ieth_rkey = 0x00c0ffee;
      p.atomic = {0x00007f0000001000ull, 0x55aa55aa, 1, 2};
      p.atomic_ack = {0x1122334455667788ull};
      uint32_t len = 0;
      if (info.payload) {
        // Vary the length so every pad count appears; FIRST/MIDDLE carry a full MTU.
        if (info.position == Position::kFirst || info.position == Position::kMiddle)
          len = 1024;
        else
          len = static_cast<uint32_t>((n * 37) % 1024 + 1);
      }
      p.payload = ByteSpan(payload.data(), len);
      std::vector<uint8_t> frame(FrameLen(p, len));
      frame.resize(BuildRoceFrame(p, frame));
      out.push_back(std::move(frame));
      n++;
    }
  }
  return out;
}

}  // namespace roce::tools
