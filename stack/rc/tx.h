// What the RC core hands to the layer below for each packet: the path's
// network headers (a per-QP template), the BTH and extension headers, and the
// payload as a gather list pointing into registered memory (or a WQE's inline
// buffer). The sink serializes it — into bytes for the simulated link, into
// mbufs for DPDK — and must not keep the pointers after Transmit returns.
#pragma once

#include <cstdint>

#include "stack/wire/packet.h"

namespace roce::rc {

struct Segment {
  const uint8_t* p = nullptr;
  uint32_t len = 0;
};

struct TxPacket {
  static constexpr uint32_t kMaxSegs = 34;  // max SGEs + room for split boundaries
  const wire::NetHeaders* net = nullptr;
  wire::Bth bth;
  wire::ExtHeaders ext;
  uint32_t payload_len = 0;
  uint32_t nseg = 0;
  Segment seg[kMaxSegs];
  uint32_t qpn = 0;  // sending QP (for counters / capture)
};

class PacketSink {
 public:
  virtual ~PacketSink() = default;
  // Takes the packet or returns false (no room now: the QP retries later).
  virtual bool Transmit(const TxPacket& pkt, uint64_t now) = 0;
  // A work request was posted (from any thread, with the device's lock held):
  // whatever runs Poll() should run it soon (an engine napping while idle
  // wakes up).
  virtual void Doorbell() {}
};

// Bytes of the frame `pkt` serializes to.
size_t TxFrameLen(const TxPacket& pkt);
// Serializes headers, payload, pad, ICRC (and the IPv6 UDP checksum) into
// out, which must hold TxFrameLen bytes. Returns the frame length.
size_t SerializeFrame(const TxPacket& pkt, uint8_t* out);

}  // namespace roce::rc
