// SPDX-License-Identifier: MIT
// A whole RoCEv2 frame: Ethernet [802.1Q] / IPv4|IPv6 / UDP 4791 / BTH /
// extension headers / payload / pad / ICRC. ParseRoceFrame validates every
// layer and returns the first reason it rejects a frame; the spans in the
// result point into the caller's buffer (a view, nothing is copied).
// BuildRoceFrame emits a frame from the same representation; EmitHeaders
// emits only up to the payload, for a datapath that places the payload
// itself (mbuf chains) and finishes the ICRC with Icrc::Update.
#pragma once

#include <cstdint>
#include <cstring>

#include "stack/wire/bytes.h"
#include "stack/wire/error.h"
#include "stack/wire/headers.h"
#include "stack/wire/icrc.h"
#include "stack/wire/opcode.h"

namespace roce::wire {

// Ethernet / IP / UDP: what a queue pair's path fixes (a per-QP template).
struct NetHeaders {
  EthernetHeader eth;
  bool ipv6 = false;
  Ipv4Header ip4;
  Ipv6Header ip6;
  UdpHeader udp;
  uint8_t Ecn() const { return ipv6 ? ip6.Ecn() : ip4.Ecn(); }
  IpAddr SrcIp() const { return ipv6 ? IpAddr::FromV6(ip6.src.data()) : IpAddr::FromV4(ip4.src); }
  IpAddr DstIp() const { return ipv6 ? IpAddr::FromV6(ip6.dst.data()) : IpAddr::FromV4(ip4.dst); }
  // The same addresses as `out`, swapped: a packet of the path `out` sends on
  // comes back on (same family; SrcIp() == out.DstIp() and DstIp() ==
  // out.SrcIp(), without building the IpAddrs — the receive path checks
  // every packet).
  bool IsReplyTo(const NetHeaders& out) const {
    if (ipv6 != out.ipv6) return false;
    return ipv6 ? ip6.src == out.ip6.dst && ip6.dst == out.ip6.src : ip4.src == out.ip4.dst && ip4.dst == out.ip4.src;
  }
  size_t Len() const {
    return eth.Len() + (ipv6 ? Ipv6Header::kLen : ip4.Len()) + UdpHeader::kLen;
  }
};

// Extension headers; which are meaningful is GetOpcodeInfo(bth.opcode).headers.
struct ExtHeaders {
  Deth deth;
  Reth reth;
  AtomicEth atomic;
  Aeth aeth;
  AtomicAckEth atomic_ack;
  uint32_t imm = 0;         // ImmDt, host order of the 4 wire bytes
  uint32_t ieth_rkey = 0;   // IETH: R_Key to invalidate
  uint8_t cnp_resv[16] = {};
};

// Writes the extension headers an opcode carries (`headers`:
// GetOpcodeInfo(opcode).headers) in wire order at `o`; returns the end.
inline uint8_t* EmitExtHeaders(uint16_t headers, const ExtHeaders& x, uint8_t* o) {
  const uint16_t h = headers;
  if (h & kHdrDeth) { x.deth.Emit(o); o += kDethLen; }
  if (h & kHdrReth) { x.reth.Emit(o); o += kRethLen; }
  if (h & kHdrAtomicEth) { x.atomic.Emit(o); o += kAtomicEthLen; }
  if (h & kHdrAeth) { x.aeth.Emit(o); o += kAethLen; }
  if (h & kHdrAtomicAckEth) { x.atomic_ack.Emit(o); o += kAtomicAckEthLen; }
  if (h & kHdrImmDt) { Store32(o, x.imm); o += kImmDtLen; }
  if (h & kHdrIeth) { Store32(o, x.ieth_rkey); o += kIethLen; }
  if (h & kHdrCnpPad) { std::memcpy(o, x.cnp_resv, kCnpPadLen); o += kCnpPadLen; }
  return o;
}

struct RocePacket : NetHeaders, ExtHeaders {
  Bth bth;
  ByteSpan payload;         // payload without pad
  ByteSpan pad;             // pad bytes as received (0..3)
  uint32_t icrc = 0;        // as received (wire bytes read little-endian)
  ByteSpan trailer;         // bytes after the IP datagram (Ethernet padding)
  // Offsets into the frame, filled by ParseRoceFrame.
  uint16_t l3_offset = 0;
  uint16_t bth_offset = 0;
  // Set by a receive path that leaves the ICRC check to the placement of the
  // payload (rc::RcDevice::OnPacket: the CRC computed as the payload is
  // copied, mem::PlaceInOrderCrc32): icrc_partial is the ICRC of everything
  // before the payload (Icrc::Value()); payload, pad and icrc are set.
  // Nothing may act on such a packet before the device has checked it.
  bool icrc_deferred = false;
  uint32_t icrc_partial = 0;

  const OpcodeInfo& info() const { return GetOpcodeInfo(bth.opcode); }
  bool Has(HeaderBit h) const { return info().headers & h; }
};

struct ParseOptions {
  bool verify_ip_checksum = true;  // off when the NIC already checked it
  bool verify_icrc = true;
};

// Parses and validates a frame. On kOk every field of *out is set.
Error ParseRoceFrame(ByteSpan frame, RocePacket* out, const ParseOptions& opts = {});

// Where the parts of a RoCEv2 frame lie, as offsets from its first byte.
struct FrameLayout {
  uint32_t l3 = 0;           // IP header
  uint32_t bth = 0;          // BTH
  uint32_t payload = 0;      // first payload byte (after the extension headers)
  uint32_t payload_len = 0;  // without pad
  uint32_t icrc = 0;         // the ICRC (after the pad)
  uint32_t end = 0;          // end of the IP datagram (icrc + 4); Ethernet padding follows
};

// Parses and validates every header of a frame that is `frame_len` bytes long
// and whose first `avail` bytes are at `head`; the rest (payload, pad, ICRC)
// may lie elsewhere — later segments of an mbuf chain. Fills *out except
// payload, pad, icrc and trailer, and *lay; verifies neither the ICRC nor
// anything behind the headers. With avail == frame_len it accepts and rejects
// exactly what ParseRoceFrame does (which is built on it). Returns kTruncated
// with *straddle set when the frame is long enough but its headers do not lie
// within the first `avail` bytes (copy them together and parse again).
// Extension fields the opcode does not carry keep what *out held, except
// imm and ieth_rkey, which are zeroed: *out may be reused from packet to
// packet without being cleared.
Error ParseRoceHeaders(const uint8_t* head, size_t avail, size_t frame_len, RocePacket* out,
                       FrameLayout* lay, bool* straddle, const ParseOptions& opts = {});
// The same without the fast path for the common frame (Ethernet, IPv4
// without options, UDP 4791, all headers in the first segment) that
// ParseRoceHeaders tries first: for tests, which check that both give the
// same result for any input.
Error ParseRoceHeadersGeneral(const uint8_t* head, size_t avail, size_t frame_len, RocePacket* out,
                              FrameLayout* lay, bool* straddle, const ParseOptions& opts = {});

// Parses the UDP payload of a RoCEv2 datagram (BTH .. ICRC) into the
// transport fields of *out. Does not verify the ICRC (it needs the IP header).
Error ParseTransport(ByteSpan bth_to_icrc, RocePacket* out);

struct BuildOptions {
  bool fill_lengths = true;      // IP total/payload length, UDP length, BTH PadCnt
  bool fill_ip_checksum = true;  // IPv4 header checksum
  bool fill_icrc = true;         // else write p.icrc
  bool fill_udp6_checksum = true;  // IPv6: real UDP checksum (else p.udp.checksum)
  bool zero_pad = true;          // else write p.pad bytes
  bool append_trailer = false;   // append p.trailer after the datagram
};

// Bytes of everything before the payload (Ethernet through extension headers).
size_t HeadersLen(const RocePacket& p);
// Stores the IPv6 UDP checksum of a complete frame built from `net` (the frame
// starts at the Ethernet header and ends with the ICRC).
void FillUdp6Checksum(const NetHeaders& net, MutByteSpan frame);
// Bytes of the whole frame for a payload of `payload_len`.
size_t FrameLen(const RocePacket& p, uint32_t payload_len);
inline uint8_t PadFor(uint32_t payload_len) { return static_cast<uint8_t>((4 - (payload_len & 3)) & 3); }

// Emits Ethernet .. extension headers for a payload of `payload_len` bytes
// into out (at least HeadersLen bytes). Returns HeadersLen. With
// fill_lengths the lengths and PadCnt are derived from payload_len.
size_t EmitHeaders(const NetHeaders& net, const Bth& bth, const ExtHeaders& ext,
                   uint32_t payload_len, uint8_t* out, const BuildOptions& opts = {});
inline size_t EmitHeaders(const RocePacket& p, uint32_t payload_len, uint8_t* out,
                          const BuildOptions& opts = {}) {
  return EmitHeaders(p, p.bth, p, payload_len, out, opts);
}
// Length of the extension headers of an opcode plus NetHeaders + BTH.
inline size_t HeadersLen(const NetHeaders& net, uint8_t opcode) {
  return net.Len() + Bth::kLen + GetOpcodeInfo(opcode).ext_len;
}

// Emits the whole frame (headers, p.payload, pad, ICRC). Returns the frame
// length, or 0 if `out` is too small.
size_t BuildRoceFrame(const RocePacket& p, MutByteSpan out, const BuildOptions& opts = {});

}  // namespace roce::wire
