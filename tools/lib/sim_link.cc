// SPDX-License-Identifier: MIT
#include "tools/lib/sim_link.h"

#include <algorithm>

#include "stack/rc/tx.h"

namespace roce::sim {

using namespace roce::wire;

SimNode::SimNode(SimNetwork* net, int id, const std::string& name, const MacAddr& mac,
                 const IpAddr& ip, const rc::RcDevice::Config& cfg)
    : net_(net), id_(id), name_(name), mac_(mac), ip_(ip), dev_(cfg, this) {}

bool SimNode::Transmit(const rc::TxPacket& pkt, uint64_t now) {
  (void)now;
  if (!net_->CanSend(id_)) return false;
  std::vector<uint8_t> frame(rc::TxFrameLen(pkt));
  rc::SerializeFrame(pkt, frame.data());
  net_->Send(id_, std::move(frame));
  return true;
}

NetHeaders SimNode::PathTo(const SimNode& peer, uint8_t tos) const {
  NetHeaders n;
  n.eth.src = mac_;
  n.eth.dst = peer.mac_;
  n.ipv6 = !ip_.IsV4();
  n.eth.ethertype = n.ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4;
  if (n.ipv6) {
    std::copy(ip_.b.begin(), ip_.b.end(), n.ip6.src.begin());
    std::copy(peer.ip_.b.begin(), peer.ip_.b.end(), n.ip6.dst.begin());
    n.ip6.traffic_class = tos;
  } else {
    n.ip4.src = ip_.V4();
    n.ip4.dst = peer.ip_.V4();
    n.ip4.tos = tos;
  }
  return n;
}

SimNetwork::SimNetwork(uint64_t seed, const Impairment& imp, bool ipv6)
    : rng_(seed), imp_(imp), ipv6_(ipv6) {}

SimNode* SimNetwork::AddNode(const std::string& name, const rc::RcDevice::Config& cfg) {
  const int id = static_cast<int>(nodes_.size());
  MacAddr mac;
  mac.b = {0x02, 0x00, 0x00, 0x00, 0x00, static_cast<uint8_t>(id + 1)};
  IpAddr ip = IpAddr::FromV4(0xC6120000u | static_cast<uint32_t>(10 + id));  // 198.18.0.10+
  if (ipv6_) {
    ip = IpAddr{};
    ip.b[0] = 0x20;
    ip.b[1] = 0x01;
    ip.b[2] = 0x0d;
    ip.b[3] = 0xb8;
    ip.b[15] = static_cast<uint8_t>(0x10 + id);
  }
  nodes_.push_back(std::make_unique<SimNode>(this, id, name, mac, ip, cfg));
  busy_until_.push_back(0);
  rx_busy_until_.push_back(0);
  return nodes_.back().get();
}

int SimNetwork::Destination(const std::vector<uint8_t>& frame) const {
  if (frame.size() < 6) return -1;
  for (const auto& n : nodes_)
    if (std::equal(n->mac().b.begin(), n->mac().b.end(), frame.begin())) return n->id();
  return -1;
}

void SimNetwork::CountLost(const std::vector<uint8_t>& frame) {
  RocePacket p;
  ParseOptions o;
  o.verify_icrc = false;
  o.verify_ip_checksum = false;
  if (ParseRoceFrame(frame, &p, o) != Error::kOk || p.info().transport != Transport::kRc) return;
  counters_.lost_payload_bytes += p.payload.size();
  if (!p.info().request) counters_.lost_response_bytes += p.payload.size();
}

void SimNetwork::Send(int from, std::vector<uint8_t>&& frame) {
  counters_.frames++;
  counters_.bytes += frame.size();
  if (filter && !filter(*nodes_[static_cast<size_t>(from)], frame)) {
    counters_.filtered++;
    return;
  }
  const int dst = Destination(frame);
  if (trace) {
    RocePacket p;
    if (ParseRoceFrame(frame, &p) == Error::kOk) {
      std::fprintf(trace, "%12.3f %d>%d qp=%06x %-30s psn=%u len=%zu%s", now_ / 1e3, from, dst,
                   p.bth.dest_qp, OpcodeName(p.bth.opcode), p.bth.psn, p.payload.size(),
                   p.bth.ack_req ? " A" : "");
      if (p.Has(kHdrAeth)) std::fprintf(trace, " aeth=%02x msn=%u", p.aeth.syndrome, p.aeth.msn);
      if (p.Has(kHdrReth)) std::fprintf(trace, " reth=%llx/%u/%08x", static_cast<unsigned long long>(p.reth.va), p.reth.dma_length, p.reth.rkey);
      if (p.Has(kHdrIeth)) std::fprintf(trace, " ieth=%08x", p.ieth_rkey);
    }
  }
  if (dst < 0) {
    counters_.dropped++;
    return;
  }
  const uint64_t ser = imp_.gbps > 0 ? static_cast<uint64_t>(frame.size() * 8 / imp_.gbps) + 1 : 0;
  uint64_t& busy = busy_until_[static_cast<size_t>(from)];
  const uint64_t start = std::max(now_, busy);
  busy = start + ser;
  uint64_t at = busy + imp_.delay_ns;
  uint8_t fate = 0;
  if (Chance(imp_.loss)) {
    counters_.dropped++;
    CountLost(frame);
    if (!recent_.empty()) Remember(from, dst, frame, 1);
    if (trace) std::fprintf(trace, " LOST\n");
    return;
  }
  if (Chance(imp_.corrupt)) {
    fate = 4;
    CountLost(frame);
    const size_t bit = std::uniform_int_distribution<size_t>(0, frame.size() * 8 - 1)(rng_);
    frame[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    counters_.corrupted++;
  }
  if (imp_.ce_mark > 0 && frame.size() >= 34 && Load16(&frame[12]) == kEtherTypeIpv4 &&
      (frame[15] & 3) != 0 && (frame[15] & 3) != 3 && Chance(imp_.ce_mark)) {
    frame[15] |= 3;  // CE; the ICRC masks TOS, the IP checksum must follow
    Store16(&frame[24], Ipv4Header::ComputeChecksum(&frame[14], (frame[14] & 0xF) * 4u));
    counters_.ce_marked++;
  }
  if (Chance(imp_.reorder)) {
    const uint64_t k = std::uniform_int_distribution<uint64_t>(1, std::max<uint32_t>(imp_.reorder_depth, 1))(rng_);
    at += k * std::max<uint64_t>(ser, 50);
    counters_.reordered++;
    fate = 2;
    if (trace) std::fprintf(trace, " REORDERED");
  }
  if (trace) std::fprintf(trace, "\n");
  if (!recent_.empty()) Remember(from, dst, frame, fate);
  if (Chance(imp_.dup)) {
    counters_.duplicated++;
    if (!recent_.empty()) Remember(from, dst, frame, 3);
    inflight_.push({at + 1, seq_++, dst, frame});
  }
  inflight_.push({at, seq_++, dst, std::move(frame)});
}

bool SimNetwork::Step(uint64_t until_ns) {
  // Let every device send what it can at the current time.
  bool sent = false;
  for (auto& n : nodes_) sent |= n->dev().Poll(now_, 1024) > 0;
  if (sent) return true;
  // Then jump to the next event.
  uint64_t next = UINT64_MAX;
  if (!inflight_.empty()) next = inflight_.top().at;
  for (auto& n : nodes_) {
    const uint64_t d = n->dev().NextDeadline();
    if (d) next = std::min(next, std::max(d, now_));
  }
  if (next == UINT64_MAX || next > until_ns) return false;
  now_ = std::max(now_, next);
  while (!inflight_.empty() && inflight_.top().at <= now_) {
    InFlight f = std::move(const_cast<InFlight&>(inflight_.top()));
    inflight_.pop();
    if (imp_.rx_gbps > 0 && !f.received) {
      // Into the receiver's buffer, out of it at rx_gbps; dropped if full.
      uint64_t& rx = rx_busy_until_[static_cast<size_t>(f.dst)];
      if (rx > now_ + imp_.rx_queue_ns) {
        counters_.dropped++;
        counters_.rx_overflows++;
        CountLost(f.frame);
        if (trace) std::fprintf(trace, "%12.3f >%d RX-OVERFLOW len=%zu\n", now_ / 1e3, f.dst, f.frame.size());
        continue;
      }
      rx = std::max(rx, now_) + static_cast<uint64_t>(f.frame.size() * 8 / imp_.rx_gbps) + 1;
      f.at = rx;
      f.received = true;
      inflight_.push(std::move(f));
      continue;
    }
    counters_.delivered++;
    nodes_[static_cast<size_t>(f.dst)]->dev().OnFrame(f.frame, now_);
  }
  return true;
}

bool SimNetwork::RunUntil(const std::function<bool()>& done, uint64_t until_ns) {
  while (!done()) {
    if (!Step(until_ns)) return done();
  }
  return true;
}

void SimNetwork::RunIdle(uint64_t until_ns) {
  while (Step(until_ns)) {
  }
}

}  // namespace roce::sim

namespace roce::sim {

void SimNetwork::Remember(int from, int to, const std::vector<uint8_t>& frame, uint8_t fate) {
  Record& r = recent_[recent_next_++ % recent_.size()];
  r = Record{};
  r.t = now_;
  r.from = static_cast<uint8_t>(from);
  r.to = static_cast<uint8_t>(to);
  r.fate = fate;
  RocePacket p;
  ParseOptions o;
  o.verify_icrc = false;
  if (ParseRoceFrame(frame, &p, o) != Error::kOk) return;
  r.valid = true;
  r.qpn = p.bth.dest_qp;
  r.psn = p.bth.psn;
  r.len = static_cast<uint32_t>(p.payload.size());
  r.opcode = p.bth.opcode;
  r.ack_req = p.bth.ack_req;
  if (p.Has(kHdrAeth)) r.syndrome = p.aeth.syndrome;
}

void SimNetwork::DumpRecent(FILE* out) const {
  static const char* kFate[] = {"", " LOST", " REORDERED", " DUP", " CORRUPT"};
  const size_t n = recent_.size();
  for (size_t i = 0; i < n; i++) {
    const Record& r = recent_[(recent_next_ + i) % n];
    if (!r.valid) continue;
    std::fprintf(out, "%12.3f %d>%d qp=%06x %-34s psn=%u len=%u%s aeth=%02x%s\n", r.t / 1e3, r.from,
                 r.to, r.qpn, OpcodeName(r.opcode), r.psn, r.len, r.ack_req ? " A" : "", r.syndrome,
                 kFate[r.fate]);
  }
}

}  // namespace roce::sim
