// SPDX-License-Identifier: MIT
#include "stack/neighbor/neighbor.h"

#include <bit>
#include <cstring>
#include <utility>

#include "stack/wire/ndp.h"

namespace roce::neighbor {

using wire::ArpPacket;
using wire::Error;
using wire::EthernetHeader;
using wire::Ipv6Addr;
using wire::NdpFrame;
using wire::NdpMessage;

namespace {

constexpr size_t kMinFrameLen = 60;  // Ethernet minimum without the FCS

uint64_t AddSat(uint64_t a, uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }

Ipv6Addr V6(const IpAddr& a) { return a.b; }

bool IsUsableMac(const MacAddr& m) { return !m.IsMulticast() && m != MacAddr{}; }

// A unicast IPv4 address a neighbour can have: not 0/8 ("this network"),
// 127/8 (loopback), 224/4 (multicast) or 240/4 (reserved, broadcast).
bool IsUnicastV4(uint32_t a) {
  const uint8_t top = static_cast<uint8_t>(a >> 24);
  return top != 0 && top != 127 && top < 224;
}

bool IsUnicastV6(const Ipv6Addr& a) {
  static constexpr Ipv6Addr kLoopback{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  return !wire::IsIpv6Unspecified(a) && !wire::IsIpv6Multicast(a) && a != kLoopback;
}

bool IsUnicast(const IpAddr& ip) { return ip.IsV4() ? IsUnicastV4(ip.V4()) : IsUnicastV6(V6(ip)); }

}  // namespace

const char* ResolveStatusName(ResolveStatus s) {
  switch (s) {
    case ResolveStatus::kResolved: return "resolved";
    case ResolveStatus::kPending: return "pending";
    case ResolveStatus::kFailed: return "failed";
    case ResolveStatus::kNoResources: return "no-resources";
  }
  return "unknown";
}

const char* NeighborStateName(NeighborState s) {
  switch (s) {
    case NeighborState::kIncomplete: return "incomplete";
    case NeighborState::kReachable: return "reachable";
    case NeighborState::kStale: return "stale";
    case NeighborState::kProbe: return "probe";
    case NeighborState::kStatic: return "static";
  }
  return "unknown";
}

uint64_t NeighborCounters::TotalDrops() const {
  uint64_t n = 0;
  for (uint64_t d : drops) n += d;
  return n;
}

FrameKind ClassifyNeighborFrame(ByteSpan frame) {
  EthernetHeader eth;
  if (eth.Parse(frame) != Error::kOk) return FrameKind::kOther;
  if (eth.ethertype == wire::kEtherTypeArp) return FrameKind::kArp;
  if (eth.ethertype != wire::kEtherTypeIpv6) return FrameKind::kOther;
  const size_t l3 = eth.Len();
  if (frame.size() < l3 + wire::Ipv6Header::kLen + 1) return FrameKind::kOther;
  if (frame[l3 + 6] != wire::kIpProtoIcmpv6) return FrameKind::kOther;
  const uint8_t type = frame[l3 + wire::Ipv6Header::kLen];
  return type == wire::kIcmpv6NeighborSolicitation || type == wire::kIcmpv6NeighborAdvertisement
             ? FrameKind::kNdp
             : FrameKind::kOther;
}

NeighborTable::NeighborTable(NeighborConfig cfg) : cfg_(std::move(cfg)) {
  if (cfg_.max_entries == 0) cfg_.max_entries = 1;
}

void NeighborTable::SetCompletionCallback(std::function<void(const NeighborCompletion&)> cb) {
  cb_ = std::move(cb);
}

bool NeighborTable::PollCompletion(NeighborCompletion* out) {
  if (completions_.empty()) return false;
  *out = completions_.front();
  completions_.pop_front();
  return true;
}

void NeighborTable::Deliver() {
  if (done_.empty()) return;
  std::vector<NeighborCompletion> d;
  d.swap(done_);  // the callback may re-enter the table
  for (const NeighborCompletion& c : d) {
    if (cb_) {
      cb_(c);
    } else {
      completions_.push_back(c);
    }
  }
}

Error NeighborTable::Drop(Error e) {
  counters_.drops[static_cast<size_t>(e)]++;
  return e;
}

bool NeighborTable::IsLocal(const IpAddr& ip) const {
  for (const IpAddr& a : cfg_.addrs)
    if (a == ip) return true;
  return false;
}

bool NeighborTable::IsLocalV4(uint32_t a) const { return IsLocal(IpAddr::FromV4(a)); }

// Of our addresses of dst's family, the one sharing the longest prefix with
// it (RFC 6724 rule 8; it also keeps link-local with link-local); the first
// one on a tie. Without prefix lengths this is the best guess at "same subnet".
const IpAddr* NeighborTable::SourceFor(const IpAddr& dst) const {
  const IpAddr* best = nullptr;
  int best_len = -1;
  for (const IpAddr& a : cfg_.addrs) {
    if (a.IsV4() != dst.IsV4()) continue;
    int len = 0;
    for (size_t i = 0; i < 16 && a.b[i] == dst.b[i]; i++) len += 8;
    if (len < 128) {
      const size_t i = static_cast<size_t>(len / 8);
      len += std::countl_zero(static_cast<uint8_t>(a.b[i] ^ dst.b[i]));
    }
    if (len > best_len) {
      best = &a;
      best_len = len;
    }
  }
  return best;
}

EthernetHeader NeighborTable::EthFor(const MacAddr& dst, uint16_t ethertype) const {
  EthernetHeader eth;
  eth.dst = dst;
  eth.src = cfg_.mac;
  eth.ethertype = ethertype;
  if (cfg_.vlan_id) {
    eth.has_vlan = true;
    eth.vlan_tci = static_cast<uint16_t>(((cfg_.vlan_pcp & 7) << 13) | (*cfg_.vlan_id & 0x0FFF));
  }
  return eth;
}

void NeighborTable::Send(uint8_t* buf, size_t len, TxFn tx) const {
  if (cfg_.pad_to_min_frame && len < kMinFrameLen) {
    std::memset(buf + len, 0, kMinFrameLen - len);
    len = kMinFrameLen;
  }
  tx(ByteSpan(buf, len));
}

// ---- receive -------------------------------------------------------------------

Error NeighborTable::HandleFrame(ByteSpan frame, uint64_t now, TxFn tx) {
  EthernetHeader eth;
  if (Error e = eth.Parse(frame); e != Error::kOk) return Drop(e);
  const uint16_t vid = eth.has_vlan ? (eth.vlan_tci & 0x0FFF) : 0;
  const bool vlan_ok = cfg_.vlan_id ? (eth.has_vlan && vid == *cfg_.vlan_id) : vid == 0;
  if (!vlan_ok) {
    counters_.wrong_vlan++;
    return Error::kOk;
  }
  Error e;
  if (eth.ethertype == wire::kEtherTypeArp) {
    e = HandleArp(frame, eth, now, tx);
  } else if (eth.ethertype == wire::kEtherTypeIpv6) {
    e = HandleNdp(frame, now, tx);
  } else {
    e = Drop(Error::kBadEthertype);
  }
  Deliver();
  return e;
}

// RFC 826's algorithm: update the sender if known, add it if the packet is
// addressed to us, and answer a request for one of our addresses. Gratuitous
// ARP (sender == target, request or reply) thus updates an existing entry
// and creates none.
Error NeighborTable::HandleArp(ByteSpan frame, const EthernetHeader& eth, uint64_t now,
                               TxFn tx) {
  ArpPacket arp;
  if (Error e = arp.Parse(frame.subspan(eth.Len())); e != Error::kOk) return Drop(e);
  if (!IsUsableMac(arp.sha)) return Drop(Error::kBadArp);
  if (arp.spa != 0 && !IsUnicastV4(arp.spa)) return Drop(Error::kBadArp);
  const bool request = arp.oper == ArpPacket::kRequest;
  (request ? counters_.arp_requests_rx : counters_.arp_replies_rx)++;

  if (arp.sha == cfg_.mac || eth.src == cfg_.mac) {  // our own frame, looped back
    counters_.ignored++;
    return Error::kOk;
  }
  if (IsLocalV4(arp.spa)) {  // someone else uses one of our addresses
    counters_.conflicts++;
    return Error::kOk;
  }
  const bool for_us = IsLocalV4(arp.tpa);
  // A reply we learn from must be meant for us (unicast to our MAC, or a
  // broadcast gratuitous one); a request is broadcast anyway.
  const bool to_us = request || eth.dst == cfg_.mac || eth.dst.IsBroadcast();
  if (arp.spa != 0 && to_us) {  // spa 0.0.0.0: an RFC 5227 probe, nothing to learn
    Learn(IpAddr::FromV4(arp.spa), arp.sha, now, /*create=*/for_us, /*override_mac=*/true);
  }
  if (!for_us) {
    counters_.ignored++;
    return Error::kOk;
  }
  if (request) {
    ArpPacket rep;
    rep.oper = ArpPacket::kReply;
    rep.sha = cfg_.mac;
    rep.spa = arp.tpa;
    rep.tha = arp.sha;
    rep.tpa = arp.spa;
    uint8_t buf[kMaxNeighborFrameLen];
    const EthernetHeader out = EthFor(arp.sha, wire::kEtherTypeArp);
    out.Emit(buf);
    rep.Emit(buf + out.Len());
    Send(buf, out.Len() + ArpPacket::kLen, tx);
    counters_.arp_replies_tx++;
  }
  return Error::kOk;
}

// RFC 4861 §7.2.3 (NS) and §7.2.5 (NA), after ParseNdpFrame's §7.1 checks.
Error NeighborTable::HandleNdp(ByteSpan frame, uint64_t now, TxFn tx) {
  NdpFrame f;
  if (Error e = wire::ParseNdpFrame(frame, &f); e != Error::kOk) return Drop(e);
  const IpAddr src = IpAddr::FromV6(f.ip6.src.data());
  const IpAddr target = IpAddr::FromV6(f.nd.target.data());
  if (f.nd.IsNs()) {
    counters_.ns_rx++;
  } else {
    counters_.na_rx++;
  }
  if (f.eth.src == cfg_.mac || (f.nd.has_lla && f.nd.lla == cfg_.mac)) {
    counters_.ignored++;  // our own frame, looped back
    return Error::kOk;
  }
  if (f.nd.has_lla && !IsUsableMac(f.nd.lla)) return Drop(Error::kBadNdp);
  // IPv4-mapped addresses never appear on the wire (RFC 4291 §2.5.5.2); the
  // table keys IPv4 neighbours that way, so NDP must not touch them.
  if (src.IsV4() || target.IsV4()) return Drop(Error::kBadNdp);

  if (!f.nd.IsNs()) {
    if (IsLocal(target)) {  // someone else advertises one of our addresses
      counters_.conflicts++;
      return Error::kOk;
    }
    auto it = entries_.find(target);
    if (it == entries_.end() || it->second.state == NeighborState::kStatic) {
      counters_.ignored++;  // unsolicited, nothing to update: discarded (§7.2.5)
      return Error::kOk;
    }
    if (f.nd.has_lla) {
      Learn(target, f.nd.lla, now, /*create=*/false, /*override_mac=*/f.nd.Override());
    } else if (it->second.state != NeighborState::kIncomplete && f.nd.Solicited()) {
      Confirm(target, it->second, it->second.mac, now);  // reachability confirmed
    }
    return Error::kOk;
  }

  // Neighbor Solicitation.
  if (!IsLocal(target)) {
    counters_.ignored++;  // not one of our addresses: silently discarded (§7.2.3)
    return Error::kOk;
  }
  const bool dad = wire::IsIpv6Unspecified(f.ip6.src);
  if (IsLocal(src)) {
    counters_.conflicts++;
    return Error::kOk;
  }
  if (!dad && f.nd.has_lla) Learn(src, f.nd.lla, now, /*create=*/true, /*override_mac=*/true);

  // Answer: from the target, with our link-layer address, Override set.
  // To the soliciting node (Solicited set) -- or, if it is doing duplicate
  // address detection from ::, to all-nodes with Solicited clear (§7.2.4).
  NdpFrame na;
  na.ip6.hop_limit = wire::kNdHopLimit;
  na.ip6.src = V6(target);
  na.nd.type = wire::kIcmpv6NeighborAdvertisement;
  na.nd.target = V6(target);
  na.nd.has_lla = true;
  na.nd.lla = cfg_.mac;
  if (dad) {
    na.ip6.dst = wire::kIpv6AllNodes;
    na.nd.flags = NdpMessage::kFlagOverride;
    na.eth = EthFor(wire::Ipv6MulticastMac(wire::kIpv6AllNodes), wire::kEtherTypeIpv6);
  } else {
    na.ip6.dst = f.ip6.src;
    na.nd.flags = NdpMessage::kFlagSolicited | NdpMessage::kFlagOverride;
    na.eth = EthFor(f.nd.has_lla ? f.nd.lla : f.eth.src, wire::kEtherTypeIpv6);
  }
  uint8_t buf[kMaxNeighborFrameLen];
  const size_t n = wire::BuildNdpFrame(na, wire::MutByteSpan(buf, sizeof buf));
  Send(buf, n, tx);
  counters_.na_tx++;
  return Error::kOk;
}

// ---- the table -------------------------------------------------------------------

void NeighborTable::Confirm(const IpAddr& ip, Entry& e, const MacAddr& mac, uint64_t now) {
  if (e.state == NeighborState::kIncomplete) {
    counters_.resolutions++;
    for (uint64_t cookie : e.waiters) done_.push_back({ip, cookie, true, mac});
    waiters_ -= e.waiters.size();
    e.waiters.clear();
    e.waiters.shrink_to_fit();
  } else if (e.state == NeighborState::kProbe) {
    counters_.refreshes++;
  }
  if (e.state != NeighborState::kIncomplete && e.mac != mac) counters_.updated++;
  e.state = NeighborState::kReachable;
  e.mac = mac;
  e.requests_sent = 0;
  e.expires = AddSat(now, cfg_.reachable_time_ns);
  e.deadline = AddSat(e.expires, cfg_.stale_time_ns);
  Arm(e.deadline);
}

void NeighborTable::Learn(const IpAddr& ip, const MacAddr& mac, uint64_t now, bool create,
                          bool override_mac) {
  if (!IsUnicast(ip)) return;
  auto it = entries_.find(ip);
  if (it == entries_.end()) {
    if (!create) return;
    if (entries_.size() >= cfg_.max_entries && !MakeRoom()) {
      counters_.table_full++;
      return;
    }
    it = entries_.try_emplace(ip).first;
    it->second.state = NeighborState::kReachable;
    it->second.mac = mac;
    it->second.last_used = now;
    counters_.learned++;
    Confirm(ip, it->second, mac, now);
    return;
  }
  Entry& e = it->second;
  if (e.state == NeighborState::kStatic) return;
  if (e.state != NeighborState::kIncomplete && e.mac != mac && !override_mac) return;
  Confirm(ip, e, mac, now);
}

bool NeighborTable::MakeRoom() {
  auto victim = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const NeighborState s = it->second.state;
    if (s == NeighborState::kIncomplete || s == NeighborState::kStatic) continue;
    if (victim == entries_.end() || it->second.last_used < victim->second.last_used) victim = it;
  }
  if (victim == entries_.end()) return false;
  entries_.erase(victim);
  counters_.evictions++;
  return true;
}

void NeighborTable::FailWaiters(const IpAddr& ip, Entry& e) {
  for (uint64_t cookie : e.waiters) done_.push_back({ip, cookie, false, MacAddr{}});
  waiters_ -= e.waiters.size();
  e.waiters.clear();
}

void NeighborTable::SendRequest(const IpAddr& ip, const MacAddr* unicast_to, TxFn tx) {
  const IpAddr* src = SourceFor(ip);
  if (src == nullptr) return;  // checked by Lookup; addresses do not change
  uint8_t buf[kMaxNeighborFrameLen];
  if (ip.IsV4()) {
    ArpPacket req;
    req.oper = ArpPacket::kRequest;
    req.sha = cfg_.mac;
    req.spa = src->V4();
    req.tpa = ip.V4();  // tha stays 00:00:00:00:00:00
    MacAddr dst;
    dst.b.fill(0xff);
    const EthernetHeader eth = EthFor(unicast_to ? *unicast_to : dst, wire::kEtherTypeArp);
    eth.Emit(buf);
    req.Emit(buf + eth.Len());
    Send(buf, eth.Len() + ArpPacket::kLen, tx);
    counters_.arp_requests_tx++;
    return;
  }
  // NS: to the target's solicited-node group, or unicast to the target when
  // probing a known MAC (neighbour unreachability detection, §7.3.3).
  NdpFrame ns;
  ns.ip6.hop_limit = wire::kNdHopLimit;
  ns.ip6.src = V6(*src);
  ns.ip6.dst = unicast_to ? V6(ip) : wire::SolicitedNodeMulticast(V6(ip));
  ns.nd.type = wire::kIcmpv6NeighborSolicitation;
  ns.nd.target = V6(ip);
  ns.nd.has_lla = true;
  ns.nd.lla = cfg_.mac;
  ns.eth = EthFor(unicast_to ? *unicast_to : wire::Ipv6MulticastMac(ns.ip6.dst),
                  wire::kEtherTypeIpv6);
  const size_t n = wire::BuildNdpFrame(ns, wire::MutByteSpan(buf, sizeof buf));
  Send(buf, n, tx);
  counters_.ns_tx++;
}

LookupResult NeighborTable::Lookup(const IpAddr& ip, uint64_t now, TxFn tx) {
  return DoLookup(ip, now, tx, nullptr);
}

LookupResult NeighborTable::Lookup(const IpAddr& ip, uint64_t now, TxFn tx, uint64_t cookie) {
  return DoLookup(ip, now, tx, &cookie);
}

LookupResult NeighborTable::DoLookup(const IpAddr& ip, uint64_t now, TxFn tx,
                                     const uint64_t* cookie) {
  LookupResult r;
  if (!IsUnicast(ip)) return r;  // kFailed
  if (IsLocal(ip)) {             // ourselves: the engine loops it back
    r.status = ResolveStatus::kResolved;
    r.mac = cfg_.mac;
    return r;
  }
  auto it = entries_.find(ip);
  if (it == entries_.end()) {
    if (SourceFor(ip) == nullptr) return r;  // no address of that family to ask from
    if (entries_.size() >= cfg_.max_entries && !MakeRoom()) {
      counters_.table_full++;
      r.status = ResolveStatus::kNoResources;
      return r;
    }
    it = entries_.try_emplace(ip).first;
    Entry& e = it->second;
    e.state = NeighborState::kIncomplete;
    e.requests_sent = 1;
    e.deadline = AddSat(now, cfg_.retry_interval_ns);
    Arm(e.deadline);
    SendRequest(ip, nullptr, tx);
  }
  Entry& e = it->second;
  e.last_used = now;
  switch (e.state) {
    case NeighborState::kIncomplete:
      r.status = ResolveStatus::kPending;
      if (cookie != nullptr) {
        if (waiters_ + completions_.size() >= cfg_.max_waiters) {
          counters_.waiter_limit++;
        } else {
          e.waiters.push_back(*cookie);
          waiters_++;
          r.waiter_queued = true;
        }
      }
      return r;
    case NeighborState::kReachable:
      if (now < e.expires) break;
      [[fallthrough]];
    case NeighborState::kStale:
      // Still use the MAC, but ask the peer to confirm it (unicast).
      e.state = NeighborState::kProbe;
      e.requests_sent = 1;
      e.deadline = AddSat(now, cfg_.retry_interval_ns);
      Arm(e.deadline);
      SendRequest(ip, &e.mac, tx);
      break;
    case NeighborState::kProbe:
    case NeighborState::kStatic:
      break;
  }
  r.status = ResolveStatus::kResolved;
  r.mac = e.mac;
  return r;
}

void NeighborTable::Poll(uint64_t now, TxFn tx) {
  next_deadline_ = kNoDeadline;
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = it->second;
    if (e.state == NeighborState::kReachable && now >= e.expires) e.state = NeighborState::kStale;
    bool erase = false;
    if (now >= e.deadline) {
      switch (e.state) {
        case NeighborState::kIncomplete:
        case NeighborState::kProbe: {
          const bool probe = e.state == NeighborState::kProbe;
          if (e.requests_sent <= cfg_.max_retries) {
            e.requests_sent++;
            counters_.retries++;
            e.deadline = AddSat(now, cfg_.retry_interval_ns);
            SendRequest(it->first, probe ? &e.mac : nullptr, tx);
          } else if (probe) {
            counters_.refresh_failures++;
            erase = true;
          } else {
            counters_.failures++;
            FailWaiters(it->first, e);
            erase = true;
          }
          break;
        }
        case NeighborState::kReachable:
        case NeighborState::kStale:
          counters_.aged_out++;
          erase = true;
          break;
        case NeighborState::kStatic:
          e.deadline = kNoDeadline;
          break;
      }
    }
    if (erase) {
      entries_.erase(it++);
    } else {
      Arm(e.deadline);
      ++it;
    }
  }
  Deliver();
}

bool NeighborTable::AddStatic(const IpAddr& ip, const MacAddr& mac) {
  if (!IsUnicast(ip) || !IsUsableMac(mac)) return false;
  auto it = entries_.find(ip);
  if (it == entries_.end()) {
    if (entries_.size() >= cfg_.max_entries && !MakeRoom()) {
      counters_.table_full++;
      return false;
    }
    it = entries_.try_emplace(ip).first;
  } else if (it->second.state == NeighborState::kIncomplete) {
    Confirm(ip, it->second, mac, 0);
  }
  Entry& e = it->second;
  e.state = NeighborState::kStatic;
  e.mac = mac;
  e.requests_sent = 0;
  e.deadline = kNoDeadline;
  Deliver();
  return true;
}

bool NeighborTable::Remove(const IpAddr& ip) {
  auto it = entries_.find(ip);
  if (it == entries_.end()) return false;
  FailWaiters(ip, it->second);
  entries_.erase(it);
  Deliver();
  return true;
}

std::optional<NeighborInfo> NeighborTable::Find(const IpAddr& ip) const {
  auto it = entries_.find(ip);
  if (it == entries_.end()) return std::nullopt;
  const Entry& e = it->second;
  return NeighborInfo{e.state, e.mac, e.requests_sent, e.waiters.size()};
}

}  // namespace roce::neighbor
