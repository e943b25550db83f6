// SPDX-License-Identifier: MIT
// What the RC core hands to the layer below for each packet: the path (its
// network headers and the queue pair's prebuilt frame template), the BTH and
// extension headers, and the payload as a gather list pointing into
// registered memory (or a WQE's inline buffer, or a CM message). The sink
// writes the frame with the wire/ frame writer (wire/frame.h) — into bytes for
// the simulated link, into mbufs for DPDK.
//
// Lifetime of the payload: a sink must not keep the pointers after Transmit
// returns, except when `registered` is set: then the pieces lie in registered
// memory and the sink may reference them (zero-copy) until that memory is
// deregistered — the engine revokes such references when it is (see
// engine.h), so nothing reads it after deregistration returns.
#pragma once

#include <cstdint>

#include "stack/wire/frame.h"
#include "stack/wire/packet.h"

namespace roce::rc {

class QueuePair;

// A payload piece. Trivial: the gather array of a TxPacket is not zeroed
// when the packet is declared (only pieces [0, nseg) are ever read).
using Segment = wire::Gather;

struct TxPacket {
  static constexpr uint32_t kMaxSegs = 34;  // max SGEs + room for split boundaries
  const wire::NetHeaders* net = nullptr;
  // The path's prebuilt template (a queue pair's, built at RTR from *net);
  // null: the sink builds one from *net for this packet.
  const wire::FrameTemplate* tmpl = nullptr;
  wire::Bth bth;
  wire::ExtHeaders ext;
  uint32_t payload_len = 0;
  uint32_t nseg = 0;
  uint32_t qpn = 0;          // sending QP (for counters / capture)
  bool registered = false;   // the pieces lie in registered memory (see above)
  Segment seg[kMaxSegs];     // [0, nseg) valid; left uninitialised
};

class PacketSink {
 public:
  virtual ~PacketSink() = default;
  // Takes the packet or returns false (no room now: the QP retries later).
  virtual bool Transmit(const TxPacket& pkt, uint64_t now) = 0;
  // A work request was posted to `qp` (from any thread, with the device's
  // lock held): whatever runs Poll() should run it soon (an engine napping
  // while idle wakes up). `idle`: before it, everything `qp` had posted was
  // sent and acknowledged — a latency-bound request, which a sink that polls
  // inline may send at once (RcDevice::TransmitNow), as a hardware NIC sends
  // on its doorbell, instead of on the next pass.
  virtual void Doorbell(QueuePair& qp, bool idle) {
    (void)qp;
    (void)idle;
  }
};

// Bytes of the frame `pkt` serializes to.
size_t TxFrameLen(const TxPacket& pkt);
// Serializes headers, payload, pad, ICRC (and the IPv6 UDP checksum) into
// out, which must hold TxFrameLen bytes, with the wire/ frame writer.
// Returns the frame length.
size_t SerializeFrame(const TxPacket& pkt, uint8_t* out);

}  // namespace roce::rc
