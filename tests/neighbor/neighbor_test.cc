// SPDX-License-Identifier: MIT
// Deterministic unit tests of the neighbour table (ARP, NDP, resolution,
// retries, aging, static entries, bounds, VLAN), with simulated time.
#include "stack/neighbor/neighbor.h"

#include <gtest/gtest.h>

#include <random>

#include "stack/wire/ndp.h"
#include "tests/neighbor/frames.h"

namespace roce::neighbor {
namespace {

using namespace roce::neighbor::testing;
using wire::Error;

constexpr uint64_t kSec = 1'000'000'000;
constexpr uint64_t kT0 = 1000 * kSec;  // an arbitrary start time

NeighborConfig Config() {
  NeighborConfig c;
  c.mac = kOurMac;
  c.addrs = {Ip("10.0.0.1"), Ip("10.0.0.9"), Ip("fe80::1"), Ip("2001:db8::1")};
  c.retry_interval_ns = 1 * kSec;
  c.max_retries = 2;
  c.reachable_time_ns = 30 * kSec;
  c.stale_time_ns = 60 * kSec;
  return c;
}

// Golden frames built by scapy 2.5 (tests/neighbor/neighbor_scapy.py's addresses):
// the ARP reply 10.0.0.1 is-at 02:00:00:00:00:01 to 10.0.0.2, padded to 60.
const Bytes kGoldenArpReply = {
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00,
    0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x0a, 0x00,
    0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x0a, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
// NA fe80::1 -> fe80::2, Solicited+Override, TLLA 02:00:00:00:00:01.
const Bytes kGoldenNa = {
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x86, 0xdd, 0x60,
    0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x88, 0x00, 0x18, 0x1c, 0x60, 0x00,
    0x00, 0x00, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x01, 0x02, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
// NS fe80::1 -> ff02::1:ff00:2 (33:33:ff:00:00:02) for fe80::2, SLLA 02:00:00:00:00:01.
const Bytes kGoldenNs = {
    0x33, 0x33, 0xff, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x86, 0xdd, 0x60,
    0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0x00, 0x00, 0x02, 0x87, 0x00, 0x7a, 0x97, 0x00, 0x00,
    0x00, 0x00, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x02, 0x01, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01};

Bytes BroadcastArpRequest(const std::string& spa, const std::string& tpa) {
  Bytes b = ArpFrame({.sha = kOurMac, .spa = spa, .tpa = tpa, .eth_src = kOurMac});
  b.resize(60);  // zero padding
  return b;
}

Bytes ArpReplyFromPeer(const std::string& spa, const MacAddr& mac = kPeerMac,
                       const std::string& tpa = "10.0.0.1") {
  return ArpFrame({.oper = wire::ArpPacket::kReply, .sha = mac, .spa = spa, .tha = kOurMac,
                   .tpa = tpa, .eth_dst = kOurMac, .eth_src = mac});
}

class NeighborTest : public ::testing::Test {
 protected:
  NeighborTable t{Config()};
  Wire w;
  Error Rx(const Bytes& f, uint64_t now = kT0) { return t.HandleFrame(f, now, w); }
  NeighborCompletion NextCompletion() {
    NeighborCompletion c;
    EXPECT_TRUE(t.PollCompletion(&c));
    return c;
  }
};

// ---- ARP: answering ---------------------------------------------------------------

TEST_F(NeighborTest, ArpRequestForOurAddressGetsGoldenReply) {
  EXPECT_EQ(Rx(ArpFrame({})), Error::kOk);
  EXPECT_EQ(w.Take(), kGoldenArpReply);
  EXPECT_EQ(t.counters().arp_requests_rx, 1u);
  EXPECT_EQ(t.counters().arp_replies_tx, 1u);
}

TEST_F(NeighborTest, ArpReplyComesFromTheAskedAddress) {
  Rx(ArpFrame({.spa = "10.0.0.5", .tpa = "10.0.0.9"}));
  Bytes r = w.Take();
  wire::ArpPacket a;
  ASSERT_EQ(a.Parse(wire::ByteSpan(r).subspan(14)), Error::kOk);
  EXPECT_EQ(a.oper, wire::ArpPacket::kReply);
  EXPECT_EQ(a.spa, Ip("10.0.0.9").V4());
  EXPECT_EQ(a.tpa, Ip("10.0.0.5").V4());
  EXPECT_EQ(a.tha, kPeerMac);
}

TEST_F(NeighborTest, ArpRequestForAnotherAddressIsIgnored) {
  EXPECT_EQ(Rx(ArpFrame({.tpa = "10.0.0.77"})), Error::kOk);
  EXPECT_TRUE(w.sent.empty());
  EXPECT_EQ(t.counters().ignored, 1u);
  EXPECT_FALSE(t.Find(Ip("10.0.0.2")));  // and nothing learned
}

TEST_F(NeighborTest, ArpProbeIsAnsweredButNotLearned) {
  Rx(ArpFrame({.spa = "0.0.0.0"}));
  Bytes r = w.Take();
  wire::ArpPacket a;
  ASSERT_EQ(a.Parse(wire::ByteSpan(r).subspan(14)), Error::kOk);
  EXPECT_EQ(a.tpa, 0u);
  EXPECT_EQ(t.size(), 0u);
}

TEST_F(NeighborTest, ArpClaimingOurAddressIsAConflict) {
  Rx(ArpFrame({.spa = "10.0.0.1", .tpa = "10.0.0.1"}));
  EXPECT_TRUE(w.sent.empty());
  EXPECT_EQ(t.counters().conflicts, 1u);
}

TEST_F(NeighborTest, OwnLoopedBackFramesAreIgnored) {
  Rx(ArpFrame({.sha = kOurMac, .spa = "10.0.0.2", .eth_src = kOurMac}));
  Rx(NdFrame({.lla_mac = kOurMac, .eth_src = kOurMac}));
  EXPECT_TRUE(w.sent.empty());
  EXPECT_EQ(t.counters().ignored, 2u);
  EXPECT_EQ(t.size(), 0u);
}

// ---- ARP: learning ------------------------------------------------------------------

TEST_F(NeighborTest, LearnsFromRequestAddressedToUs) {
  Rx(ArpFrame({}));
  w.sent.clear();
  auto r = t.Lookup(Ip("10.0.0.2"), kT0 + 1, w);
  EXPECT_EQ(r.status, ResolveStatus::kResolved);
  EXPECT_EQ(r.mac, kPeerMac);
  EXPECT_TRUE(w.sent.empty());  // no request needed
  EXPECT_EQ(t.counters().learned, 1u);
}

TEST_F(NeighborTest, RequestForOthersUpdatesButDoesNotCreate) {
  Rx(ArpFrame({.spa = "10.0.0.3", .tpa = "10.0.0.77"}));
  EXPECT_FALSE(t.Find(Ip("10.0.0.3")));
  ASSERT_TRUE(t.AddStatic(Ip("10.0.0.4"), kPeerMac));
  Rx(ArpFrame({}));  // learn 10.0.0.2 -> peer
  w.sent.clear();
  Rx(ArpFrame({.sha = kOtherMac, .spa = "10.0.0.2", .tpa = "10.0.0.77", .eth_src = kOtherMac}));
  EXPECT_EQ(t.Find(Ip("10.0.0.2"))->mac, kOtherMac);  // RFC 826 merge
  EXPECT_EQ(t.counters().updated, 1u);
  EXPECT_TRUE(w.sent.empty());
}

TEST_F(NeighborTest, GratuitousArpUpdatesAnExistingEntryOnly) {
  // Unknown sender: nothing created.
  Rx(ArpFrame({.spa = "10.0.0.2", .tpa = "10.0.0.2"}));
  Rx(ArpFrame({.oper = wire::ArpPacket::kReply, .spa = "10.0.0.2", .tha = kBroadcast,
               .tpa = "10.0.0.2"}));
  EXPECT_EQ(t.size(), 0u);
  EXPECT_TRUE(w.sent.empty());
  // Known sender: both forms update the MAC.
  Rx(ArpFrame({}));
  w.sent.clear();
  Rx(ArpFrame({.sha = kOtherMac, .spa = "10.0.0.2", .tpa = "10.0.0.2", .eth_src = kOtherMac}));
  EXPECT_EQ(t.Find(Ip("10.0.0.2"))->mac, kOtherMac);
  Rx(ArpFrame({.oper = wire::ArpPacket::kReply, .sha = kPeerMac, .spa = "10.0.0.2",
               .tha = kBroadcast, .tpa = "10.0.0.2"}));
  EXPECT_EQ(t.Find(Ip("10.0.0.2"))->mac, kPeerMac);
  EXPECT_TRUE(w.sent.empty());
}

TEST_F(NeighborTest, ReplyToSomeoneElsesMacIsNotLearned) {
  t.Lookup(Ip("10.0.0.2"), kT0, w);
  Rx(ArpFrame({.oper = wire::ArpPacket::kReply, .tha = kOtherMac, .tpa = "10.0.0.1",
               .eth_dst = kOtherMac}));
  EXPECT_EQ(t.Find(Ip("10.0.0.2"))->state, NeighborState::kIncomplete);
}

// ---- resolution -------------------------------------------------------------------

TEST_F(NeighborTest, LookupSendsBroadcastRequestAndResolvesOnReply) {
  auto r = t.Lookup(Ip("10.0.0.2"), kT0, w, 7);
  EXPECT_EQ(r.status, ResolveStatus::kPending);
  EXPECT_TRUE(r.waiter_queued);
  EXPECT_EQ(w.Take(), BroadcastArpRequest("10.0.0.1", "10.0.0.2"));
  EXPECT_EQ(t.NextDeadline(), kT0 + kSec);
  EXPECT_EQ(t.NextDeadline(kT0 + 1), kT0 + kSec);
  EXPECT_EQ(t.NextDeadline(kT0 + 2 * kSec), kT0 + 2 * kSec);  // overdue: due now
  // A second lookup while pending sends nothing more.
  r = t.Lookup(Ip("10.0.0.2"), kT0 + 1, w, 8);
  EXPECT_EQ(r.status, ResolveStatus::kPending);
  EXPECT_TRUE(w.sent.empty());
  EXPECT_EQ(t.Find(Ip("10.0.0.2"))->waiters, 2u);

  EXPECT_EQ(Rx(ArpReplyFromPeer("10.0.0.2"), kT0 + 100), Error::kOk);
  EXPECT_TRUE(w.sent.empty());
  NeighborCompletion c = NextCompletion();
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.cookie, 7u);
  EXPECT_EQ(c.ip, Ip("10.0.0.2"));
  EXPECT_EQ(c.mac, kPeerMac);
  c = NextCompletion();
  EXPECT_EQ(c.cookie, 8u);
  EXPECT_FALSE(t.PollCompletion(&c));
  r = t.Lookup(Ip("10.0.0.2"), kT0 + 200, w);
  EXPECT_EQ(r.status, ResolveStatus::kResolved);
  EXPECT_EQ(r.mac, kPeerMac);
  EXPECT_EQ(t.counters().resolutions, 1u);
  EXPECT_EQ(t.counters().arp_requests_tx, 1u);
}

TEST_F(NeighborTest, RetriesThenFailsCleanlyAndCanStartAgain) {
  ASSERT_EQ(t.Lookup(Ip("10.0.0.2"), kT0, w, 1).status, ResolveStatus::kPending);
  const Bytes req = w.Take();
  // Nothing due before the deadline.
  t.Poll(kT0 + kSec - 1, w);
  EXPECT_TRUE(w.sent.empty());
  // Retry 1 and 2, one second apart, identical to the first request.
  t.Poll(kT0 + kSec, w);
  EXPECT_EQ(w.Take(), req);
  EXPECT_EQ(t.NextDeadline(), kT0 + 2 * kSec);
  t.Poll(kT0 + 2 * kSec, w);
  EXPECT_EQ(w.Take(), req);
  EXPECT_EQ(t.Find(Ip("10.0.0.2"))->requests_sent, 3u);
  NeighborCompletion c;
  EXPECT_FALSE(t.PollCompletion(&c));
  // (max_retries + 1) * interval after the start: failed, no more requests.
  t.Poll(kT0 + 3 * kSec, w);
  EXPECT_TRUE(w.sent.empty());
  c = NextCompletion();
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.cookie, 1u);
  EXPECT_FALSE(t.Find(Ip("10.0.0.2")));
  EXPECT_EQ(t.NextDeadline(), kNoDeadline);
  EXPECT_EQ(t.counters().failures, 1u);
  EXPECT_EQ(t.counters().retries, 2u);
  EXPECT_EQ(t.counters().arp_requests_tx, 3u);
  // A later lookup starts over.
  EXPECT_EQ(t.Lookup(Ip("10.0.0.2"), kT0 + 10 * kSec, w).status, ResolveStatus::kPending);
  EXPECT_EQ(w.Take(), req);
}

TEST_F(NeighborTest, LatePollStillRetriesOncePerCall) {
  t.Lookup(Ip("10.0.0.2"), kT0, w, 1);
  w.sent.clear();
  t.Poll(kT0 + 50 * kSec, w);  // the engine was busy: one retry, not a burst
  EXPECT_EQ(w.sent.size(), 1u);
  EXPECT_EQ(t.NextDeadline(), kT0 + 51 * kSec);
}

TEST_F(NeighborTest, CompletionCallbackMayReenter) {
  std::vector<NeighborCompletion> got;
  t.SetCompletionCallback([&](const NeighborCompletion& c) {
    got.push_back(c);
    // The engine's reaction: look the address up again (now resolved).
    auto r = t.Lookup(c.ip, kT0 + 5, w);
    EXPECT_EQ(r.status, ResolveStatus::kResolved);
  });
  t.Lookup(Ip("10.0.0.2"), kT0, w, 42);
  w.sent.clear();
  Rx(ArpReplyFromPeer("10.0.0.2"), kT0 + 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].ok);
  EXPECT_EQ(got[0].cookie, 42u);
  NeighborCompletion c;
  EXPECT_FALSE(t.PollCompletion(&c));  // delivered by callback, not queued
}

TEST_F(NeighborTest, LookupOfUnresolvableAddressesFails) {
  for (const char* a : {"0.0.0.0", "255.255.255.255", "224.0.0.1", "127.0.0.1", "::", "::1",
                        "ff02::1", "ff02::1:ff00:2"}) {
    SCOPED_TRACE(a);
    EXPECT_EQ(t.Lookup(Ip(a), kT0, w, 1).status, ResolveStatus::kFailed);
  }
  EXPECT_TRUE(w.sent.empty());
  EXPECT_EQ(t.size(), 0u);
}

TEST_F(NeighborTest, LookupWithoutSourceOfThatFamilyFails) {
  NeighborConfig c = Config();
  c.addrs = {Ip("10.0.0.1")};
  NeighborTable v4only(c);
  EXPECT_EQ(v4only.Lookup(Ip("fe80::2"), kT0, w).status, ResolveStatus::kFailed);
  EXPECT_TRUE(w.sent.empty());
}

TEST_F(NeighborTest, RequestsComeFromTheSourceSharingTheLongestPrefix) {
  NeighborConfig cfg = Config();
  cfg.addrs = {Ip("10.0.0.1"), Ip("192.168.7.1"), Ip("fe80::1"), Ip("2001:db8::1")};
  NeighborTable s(cfg);
  s.Lookup(Ip("192.168.7.20"), kT0, w);
  s.Lookup(Ip("8.8.8.8"), kT0, w);  // shares 6 bits with 10/8, none with 192/8
  s.Lookup(Ip("2001:db8::2"), kT0, w);
  s.Lookup(Ip("fe80::2"), kT0, w);
  ASSERT_EQ(w.sent.size(), 4u);
  EXPECT_EQ(wire::Load32(&w.sent[0][28]), Ip("192.168.7.1").V4());
  EXPECT_EQ(wire::Load32(&w.sent[1][28]), Ip("10.0.0.1").V4());
  wire::NdpFrame ns;
  ASSERT_EQ(wire::ParseNdpFrame(w.sent[2], &ns), Error::kOk);
  EXPECT_EQ(ns.ip6.src, Ip("2001:db8::1").b);
  ASSERT_EQ(wire::ParseNdpFrame(w.sent[3], &ns), Error::kOk);
  EXPECT_EQ(ns.ip6.src, Ip("fe80::1").b);
}

TEST_F(NeighborTest, LookupOfOurOwnAddressIsOurMac) {
  auto r = t.Lookup(Ip("10.0.0.9"), kT0, w);
  EXPECT_EQ(r.status, ResolveStatus::kResolved);
  EXPECT_EQ(r.mac, kOurMac);
}

// ---- aging ----------------------------------------------------------------------------

TEST_F(NeighborTest, StaleEntryIsUsedWhileUnicastProbeRefreshesIt) {
  Rx(ArpFrame({}), kT0);  // learned at kT0
  w.sent.clear();
  const IpAddr peer = Ip("10.0.0.2");
  // Fresh until reachable_time: no traffic.
  EXPECT_EQ(t.Lookup(peer, kT0 + 30 * kSec - 1, w).status, ResolveStatus::kResolved);
  EXPECT_TRUE(w.sent.empty());
  // Then stale: still resolved (no stall), and a unicast request goes out.
  auto r = t.Lookup(peer, kT0 + 30 * kSec, w);
  EXPECT_EQ(r.status, ResolveStatus::kResolved);
  EXPECT_EQ(r.mac, kPeerMac);
  Bytes probe = w.Take();
  Bytes want = BroadcastArpRequest("10.0.0.1", "10.0.0.2");
  std::copy(kPeerMac.b.begin(), kPeerMac.b.end(), want.begin());  // unicast to the known MAC
  EXPECT_EQ(probe, want);
  EXPECT_EQ(t.Find(peer)->state, NeighborState::kProbe);
  // The peer answers: fresh again for another reachable_time.
  Rx(ArpReplyFromPeer("10.0.0.2"), kT0 + 30 * kSec + 5);
  EXPECT_EQ(t.Find(peer)->state, NeighborState::kReachable);
  EXPECT_EQ(t.counters().refreshes, 1u);
  t.Poll(kT0 + 45 * kSec, w);
  EXPECT_EQ(t.Lookup(peer, kT0 + 60 * kSec, w).status, ResolveStatus::kResolved);
  EXPECT_TRUE(w.sent.empty());
  NeighborCompletion c;
  EXPECT_FALSE(t.PollCompletion(&c));
}

TEST_F(NeighborTest, UnansweredProbesRemoveTheEntryAndTheNextLookupBroadcasts) {
  Rx(ArpFrame({}), kT0);
  w.sent.clear();
  const IpAddr peer = Ip("10.0.0.2");
  uint64_t now = kT0 + 31 * kSec;
  EXPECT_EQ(t.Lookup(peer, now, w).status, ResolveStatus::kResolved);
  EXPECT_EQ(w.sent.size(), 1u);
  for (int i = 1; i <= 2; i++) {
    t.Poll(now + i * kSec, w);
    EXPECT_EQ(w.sent.size(), 1u + i);
    EXPECT_EQ(w.sent.back()[0], 0x02);  // still unicast
  }
  t.Poll(now + 3 * kSec, w);
  EXPECT_EQ(w.sent.size(), 3u);
  EXPECT_FALSE(t.Find(peer));
  EXPECT_EQ(t.counters().refresh_failures, 1u);
  w.sent.clear();
  EXPECT_EQ(t.Lookup(peer, now + 4 * kSec, w).status, ResolveStatus::kPending);
  EXPECT_EQ(w.Take(), BroadcastArpRequest("10.0.0.1", "10.0.0.2"));
}

TEST_F(NeighborTest, UnusedEntriesAgeOut) {
  Rx(ArpFrame({}), kT0);
  w.sent.clear();
  EXPECT_EQ(t.NextDeadline(), kT0 + 90 * kSec);  // reachable 30 s + stale 60 s
  t.Poll(kT0 + 31 * kSec, w);
  EXPECT_EQ(t.Find(Ip("10.0.0.2"))->state, NeighborState::kStale);
  t.Poll(kT0 + 90 * kSec - 1, w);
  EXPECT_TRUE(t.Find(Ip("10.0.0.2")));
  t.Poll(kT0 + 90 * kSec, w);
  EXPECT_FALSE(t.Find(Ip("10.0.0.2")));
  EXPECT_EQ(t.counters().aged_out, 1u);
  EXPECT_EQ(t.NextDeadline(), kNoDeadline);
  EXPECT_TRUE(w.sent.empty());
}

// ---- static entries ----------------------------------------------------------------

TEST_F(NeighborTest, StaticEntriesArePinned) {
  const IpAddr peer = Ip("10.0.0.2");
  ASSERT_TRUE(t.AddStatic(peer, kOtherMac));
  auto r = t.Lookup(peer, kT0, w);
  EXPECT_EQ(r.status, ResolveStatus::kResolved);
  EXPECT_EQ(r.mac, kOtherMac);
  // Learning does not override it.
  Rx(ArpFrame({}), kT0);
  w.sent.clear();
  Rx(ArpReplyFromPeer("10.0.0.2"), kT0);
  EXPECT_EQ(t.Find(peer)->mac, kOtherMac);
  EXPECT_EQ(t.Find(peer)->state, NeighborState::kStatic);
  // It never ages and never needs a timer.
  EXPECT_EQ(t.NextDeadline(), kNoDeadline);
  t.Poll(kT0 + 1'000'000 * kSec, w);
  r = t.Lookup(peer, kT0 + 1'000'000 * kSec, w);
  EXPECT_EQ(r.status, ResolveStatus::kResolved);
  EXPECT_EQ(r.mac, kOtherMac);
  EXPECT_TRUE(w.sent.empty());
  // Until removed.
  EXPECT_TRUE(t.Remove(peer));
  EXPECT_FALSE(t.Remove(peer));
  EXPECT_EQ(t.Lookup(peer, kT0 + 1'000'001 * kSec, w).status, ResolveStatus::kPending);
}

TEST_F(NeighborTest, AddStaticCompletesPendingWaiters) {
  t.Lookup(Ip("fe80::2"), kT0, w, 5);
  ASSERT_TRUE(t.AddStatic(Ip("fe80::2"), kOtherMac));
  NeighborCompletion c = NextCompletion();
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.mac, kOtherMac);
  t.Poll(kT0 + 10 * kSec, w);
  EXPECT_EQ(w.sent.size(), 1u);  // only the first NS: no retries for a static entry
}

TEST_F(NeighborTest, AddStaticRejectsBadInput) {
  EXPECT_FALSE(t.AddStatic(Ip("224.0.0.1"), kPeerMac));
  EXPECT_FALSE(t.AddStatic(Ip("10.0.0.2"), kBroadcast));
  EXPECT_FALSE(t.AddStatic(Ip("10.0.0.2"), MacAddr{}));
}

TEST_F(NeighborTest, RemovingAPendingEntryFailsItsWaiters) {
  t.Lookup(Ip("10.0.0.2"), kT0, w, 9);
  EXPECT_TRUE(t.Remove(Ip("10.0.0.2")));
  NeighborCompletion c = NextCompletion();
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.cookie, 9u);
}

// ---- bounds -----------------------------------------------------------------------------

TEST_F(NeighborTest, TableIsBoundedAndEvictsLeastRecentlyUsed) {
  NeighborConfig cfg = Config();
  cfg.max_entries = 3;
  NeighborTable s(cfg);
  ASSERT_TRUE(s.AddStatic(Ip("10.0.0.100"), kOtherMac));
  // Two learned entries, 10.0.0.2 used more recently than 10.0.0.3.
  s.HandleFrame(ArpFrame({.spa = "10.0.0.3"}), kT0, w);
  s.HandleFrame(ArpFrame({.spa = "10.0.0.2"}), kT0 + 1, w);
  s.Lookup(Ip("10.0.0.3"), kT0 + 2, w);
  s.Lookup(Ip("10.0.0.2"), kT0 + 3, w);
  EXPECT_EQ(s.size(), 3u);
  // A new resolution evicts the least recently used learned entry.
  EXPECT_EQ(s.Lookup(Ip("10.0.0.4"), kT0 + 4, w).status, ResolveStatus::kPending);
  EXPECT_EQ(s.size(), 3u);
  EXPECT_FALSE(s.Find(Ip("10.0.0.3")));
  EXPECT_TRUE(s.Find(Ip("10.0.0.2")));
  EXPECT_EQ(s.counters().evictions, 1u);
  // Then the other learned one; then nothing is evictable (static + pending).
  EXPECT_EQ(s.Lookup(Ip("10.0.0.5"), kT0 + 5, w).status, ResolveStatus::kPending);
  EXPECT_FALSE(s.Find(Ip("10.0.0.2")));
  EXPECT_EQ(s.Lookup(Ip("10.0.0.6"), kT0 + 6, w).status, ResolveStatus::kNoResources);
  EXPECT_FALSE(s.AddStatic(Ip("10.0.0.7"), kPeerMac));
  s.HandleFrame(ArpFrame({.spa = "10.0.0.8"}), kT0 + 7, w);  // learning is refused too
  EXPECT_FALSE(s.Find(Ip("10.0.0.8")));
  EXPECT_EQ(s.counters().table_full, 3u);
  EXPECT_EQ(s.size(), 3u);
  EXPECT_TRUE(s.Find(Ip("10.0.0.100")));
}

TEST_F(NeighborTest, WaitersAreBounded) {
  NeighborConfig cfg = Config();
  cfg.max_waiters = 2;
  NeighborTable s(cfg);
  EXPECT_TRUE(s.Lookup(Ip("10.0.0.2"), kT0, w, 1).waiter_queued);
  EXPECT_TRUE(s.Lookup(Ip("10.0.0.3"), kT0, w, 2).waiter_queued);
  auto r = s.Lookup(Ip("10.0.0.2"), kT0, w, 3);
  EXPECT_EQ(r.status, ResolveStatus::kPending);
  EXPECT_FALSE(r.waiter_queued);
  EXPECT_EQ(s.counters().waiter_limit, 1u);
  // Undelivered completions still count; draining them frees the slots.
  s.HandleFrame(ArpReplyFromPeer("10.0.0.2"), kT0 + 1, w);
  EXPECT_FALSE(s.Lookup(Ip("10.0.0.4"), kT0 + 2, w, 4).waiter_queued);
  NeighborCompletion c;
  ASSERT_TRUE(s.PollCompletion(&c));
  EXPECT_TRUE(s.Lookup(Ip("10.0.0.4"), kT0 + 3, w, 5).waiter_queued);
}

// ---- NDP ---------------------------------------------------------------------------------

TEST_F(NeighborTest, NeighborSolicitationGetsGoldenAdvertisement) {
  EXPECT_EQ(Rx(NdFrame({})), Error::kOk);
  EXPECT_EQ(w.Take(), kGoldenNa);
  EXPECT_EQ(t.counters().ns_rx, 1u);
  EXPECT_EQ(t.counters().na_tx, 1u);
  // And the source link-layer option was learned.
  auto r = t.Lookup(Ip("fe80::2"), kT0, w);
  EXPECT_EQ(r.status, ResolveStatus::kResolved);
  EXPECT_EQ(r.mac, kPeerMac);
}

TEST_F(NeighborTest, UnicastSolicitationWithoutSllaIsAnsweredToTheEthernetSource) {
  Rx(NdFrame({.src = "2001:db8::2", .dst = "2001:db8::1", .target = "2001:db8::1",
              .lla = false, .eth_src = kOtherMac}));
  wire::NdpFrame na;
  ASSERT_EQ(wire::ParseNdpFrame(w.Take(), &na), Error::kOk);
  EXPECT_EQ(na.eth.dst, kOtherMac);
  EXPECT_EQ(na.ip6.dst, Ip("2001:db8::2").b);
  EXPECT_EQ(na.ip6.src, Ip("2001:db8::1").b);
  EXPECT_EQ(na.nd.flags, wire::NdpMessage::kFlagSolicited | wire::NdpMessage::kFlagOverride);
  EXPECT_FALSE(t.Find(Ip("2001:db8::2")));  // nothing to learn without the option
}

TEST_F(NeighborTest, DuplicateAddressDetectionIsAnsweredToAllNodes) {
  Rx(NdFrame({.src = "::", .target = "2001:db8::1", .lla = false}));
  wire::NdpFrame na;
  ASSERT_EQ(wire::ParseNdpFrame(w.Take(), &na), Error::kOk);
  EXPECT_EQ(na.eth.dst, Mac("33:33:00:00:00:01"));
  EXPECT_EQ(na.ip6.dst, wire::kIpv6AllNodes);
  EXPECT_EQ(na.ip6.hop_limit, 255);
  EXPECT_FALSE(na.nd.Solicited());  // RFC 4861 §7.2.4
  EXPECT_TRUE(na.nd.Override());
  EXPECT_TRUE(na.nd.has_lla);
  EXPECT_EQ(na.nd.lla, kOurMac);
  EXPECT_EQ(t.size(), 0u);
}

TEST_F(NeighborTest, SolicitationForAnotherAddressIsIgnored) {
  EXPECT_EQ(Rx(NdFrame({.target = "fe80::77"})), Error::kOk);
  EXPECT_TRUE(w.sent.empty());
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.counters().ignored, 1u);
}

TEST_F(NeighborTest, LookupV6SendsGoldenSolicitationAndResolvesOnAdvertisement) {
  EXPECT_EQ(t.Lookup(Ip("fe80::2"), kT0, w, 3).status, ResolveStatus::kPending);
  EXPECT_EQ(w.Take(), kGoldenNs);
  EXPECT_EQ(t.counters().ns_tx, 1u);
  Rx(NdFrame({.ns = false, .src = "fe80::2", .dst = "fe80::1", .target = "fe80::2",
              .flags = wire::NdpMessage::kFlagSolicited | wire::NdpMessage::kFlagOverride}));
  EXPECT_TRUE(w.sent.empty());
  NeighborCompletion c = NextCompletion();
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.mac, kPeerMac);
  EXPECT_EQ(t.counters().na_rx, 1u);
  EXPECT_EQ(t.counters().resolutions, 1u);
}

TEST_F(NeighborTest, AdvertisementWithoutOverrideDoesNotReplaceAKnownMac) {
  Rx(NdFrame({}));  // learn fe80::2 -> peer
  w.sent.clear();
  auto na = [&](uint32_t flags) {
    return NdFrame({.ns = false, .src = "fe80::2", .dst = "fe80::1", .target = "fe80::2",
                    .flags = flags, .lla_mac = kOtherMac, .eth_src = kOtherMac});
  };
  Rx(na(wire::NdpMessage::kFlagSolicited));
  EXPECT_EQ(t.Find(Ip("fe80::2"))->mac, kPeerMac);
  Rx(na(wire::NdpMessage::kFlagOverride));
  EXPECT_EQ(t.Find(Ip("fe80::2"))->mac, kOtherMac);
  EXPECT_TRUE(w.sent.empty());
}

TEST_F(NeighborTest, UnsolicitedAdvertisementCreatesNothing) {
  Rx(NdFrame({.ns = false, .src = "fe80::3", .dst = "ff02::1", .target = "fe80::3",
              .flags = wire::NdpMessage::kFlagOverride}));
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.counters().ignored, 1u);
}

TEST_F(NeighborTest, AdvertisementForOurAddressIsAConflict) {
  Rx(NdFrame({.ns = false, .src = "fe80::1", .dst = "ff02::1", .target = "fe80::1",
              .flags = wire::NdpMessage::kFlagOverride}));
  EXPECT_EQ(t.counters().conflicts, 1u);
  EXPECT_TRUE(w.sent.empty());
}

TEST_F(NeighborTest, StaleV6EntryIsProbedWithUnicastSolicitation) {
  Rx(NdFrame({}), kT0);
  w.sent.clear();
  EXPECT_EQ(t.Lookup(Ip("fe80::2"), kT0 + 31 * kSec, w).status, ResolveStatus::kResolved);
  wire::NdpFrame ns;
  ASSERT_EQ(wire::ParseNdpFrame(w.Take(), &ns), Error::kOk);
  EXPECT_TRUE(ns.nd.IsNs());
  EXPECT_EQ(ns.eth.dst, kPeerMac);
  EXPECT_EQ(ns.ip6.dst, Ip("fe80::2").b);
  EXPECT_EQ(ns.nd.target, Ip("fe80::2").b);
  // A solicited NA without the option confirms the known MAC (§7.2.5).
  Rx(NdFrame({.ns = false, .src = "fe80::2", .dst = "fe80::1", .target = "fe80::2",
              .flags = wire::NdpMessage::kFlagSolicited, .lla = false}),
     kT0 + 31 * kSec + 1);
  EXPECT_EQ(t.Find(Ip("fe80::2"))->state, NeighborState::kReachable);
  EXPECT_EQ(t.counters().refreshes, 1u);
}

struct BadNd {
  const char* name;
  Error want;
  std::function<void(Bytes&)> mutate;  // applied to a valid NS (86 bytes, untagged)
};

TEST_F(NeighborTest, InvalidNdpIsDroppedWithTheRfc4861Reason) {
  constexpr size_t kIcmp = 54;  // ICMPv6 offset in an untagged frame
  auto fix_checksum = [](Bytes& b) {
    b[kIcmp + 2] = b[kIcmp + 3] = 0;
    wire::Ipv6Addr src, dst;
    std::copy(b.begin() + 22, b.begin() + 38, src.begin());
    std::copy(b.begin() + 38, b.begin() + 54, dst.begin());
    wire::Store16(&b[kIcmp + 2],
                  wire::Icmpv6Checksum(src, dst, wire::ByteSpan(b).subspan(kIcmp)));
  };
  const std::vector<BadNd> cases = {
      {"hop limit 254", Error::kBadNdpHopLimit, [](Bytes& b) { b[21] = 254; }},
      {"bad checksum", Error::kBadIcmpv6Checksum, [](Bytes& b) { b[kIcmp + 2] ^= 1; }},
      {"code 1", Error::kBadNdp, [&](Bytes& b) { b[kIcmp + 1] = 1; fix_checksum(b); }},
      {"option length 0", Error::kBadNdp, [&](Bytes& b) { b[kIcmp + 25] = 0; fix_checksum(b); }},
      {"option overruns", Error::kBadNdp, [&](Bytes& b) { b[kIcmp + 25] = 2; fix_checksum(b); }},
      {"multicast target", Error::kBadNdp,
       [&](Bytes& b) { b[kIcmp + 8] = 0xff; fix_checksum(b); }},
      {"DAD with SLLA", Error::kBadNdp,
       [&](Bytes& b) { std::fill(b.begin() + 22, b.begin() + 38, 0); fix_checksum(b); }},
      {"multicast source", Error::kBadNdp, [&](Bytes& b) { b[22] = 0xff; fix_checksum(b); }},
      {"ICMPv6 shorter than 24", Error::kBadNdp,
       [&](Bytes& b) { b.resize(kIcmp + 20); b[19] = 20; fix_checksum(b); }},
      {"payload length beyond frame", Error::kTruncated, [](Bytes& b) { b[19] = 33; }},
      {"echo request", Error::kNotNdp, [&](Bytes& b) { b[kIcmp] = 128; fix_checksum(b); }},
      {"UDP", Error::kNotNdp, [](Bytes& b) { b[20] = 17; }},
      {"IPv4 version nibble", Error::kBadIpVersion, [](Bytes& b) { b[14] = 0x45; }},
      {"multicast SLLA", Error::kBadNdp, [&](Bytes& b) { b[kIcmp + 26] = 0x01; fix_checksum(b); }},
  };
  for (const BadNd& c : cases) {
    SCOPED_TRACE(c.name);
    NeighborTable s(Config());
    Bytes f = NdFrame({});
    c.mutate(f);
    EXPECT_EQ(s.HandleFrame(f, kT0, w), c.want);
    EXPECT_EQ(s.counters().Drops(c.want), 1u);
    EXPECT_EQ(s.counters().TotalDrops(), 1u);
    EXPECT_TRUE(w.sent.empty());
    EXPECT_EQ(s.size(), 0u);
  }
}

// The table keys IPv4 neighbours as ::ffff:a.b.c.d: NDP naming such an
// address must not be able to rewrite an ARP-learned entry.
TEST_F(NeighborTest, NdpCannotTouchIpv4Entries) {
  t.Lookup(Ip("10.0.0.2"), kT0, w, 1);
  w.sent.clear();
  EXPECT_EQ(Rx(NdFrame({.ns = false, .src = "::ffff:10.0.0.2", .dst = "fe80::1",
                        .target = "::ffff:10.0.0.2",
                        .flags = wire::NdpMessage::kFlagSolicited |
                                 wire::NdpMessage::kFlagOverride,
                        .lla_mac = kOtherMac})),
            Error::kBadNdp);
  EXPECT_EQ(Rx(NdFrame({.src = "::ffff:10.0.0.2", .target = "fe80::1", .lla_mac = kOtherMac})),
            Error::kBadNdp);
  EXPECT_EQ(Rx(NdFrame({.src = "fe80::2", .target = "::ffff:10.0.0.1"})), Error::kBadNdp);
  EXPECT_EQ(t.Find(Ip("10.0.0.2"))->state, NeighborState::kIncomplete);
  EXPECT_TRUE(w.sent.empty());
}

TEST_F(NeighborTest, NaToMulticastWithSolicitedFlagIsDropped) {
  EXPECT_EQ(Rx(NdFrame({.ns = false, .src = "fe80::3", .dst = "ff02::1", .target = "fe80::3",
                        .flags = wire::NdpMessage::kFlagSolicited})),
            Error::kBadNdp);
}

TEST_F(NeighborTest, InvalidArpIsDroppedWithItsReason) {
  Bytes f = ArpFrame({});
  f[14 + 7] = 3;  // RARP request
  EXPECT_EQ(Rx(f), Error::kBadArp);
  f = ArpFrame({.sha = kBroadcast});
  EXPECT_EQ(Rx(f), Error::kBadArp);
  f = ArpFrame({.spa = "224.0.0.5"});
  EXPECT_EQ(Rx(f), Error::kBadArp);
  f = ArpFrame({});
  f.resize(14 + 27);
  EXPECT_EQ(Rx(f), Error::kTruncated);
  EXPECT_EQ(t.counters().Drops(Error::kBadArp), 3u);
  EXPECT_EQ(t.counters().Drops(Error::kTruncated), 1u);
  EXPECT_TRUE(w.sent.empty());
}

// ---- 802.1Q -------------------------------------------------------------------------------

TEST_F(NeighborTest, VlanTaggedFramesOnlyForTheConfiguredVlan) {
  NeighborConfig cfg = Config();
  cfg.vlan_id = 100;
  cfg.vlan_pcp = 3;
  NeighborTable v(cfg);
  // Untagged, other VLAN: not ours.
  v.HandleFrame(ArpFrame({}), kT0, w);
  v.HandleFrame(ArpFrame({.vlan = 101}), kT0, w);
  v.HandleFrame(NdFrame({.vlan = 0}), kT0, w);
  EXPECT_TRUE(w.sent.empty());
  EXPECT_EQ(v.counters().wrong_vlan, 3u);
  // VLAN 100 (any priority): answered, tagged with our PCP.
  v.HandleFrame(ArpFrame({.vlan = (5 << 13) | 100}), kT0, w);
  Bytes r = w.Take();
  Bytes want = kGoldenArpReply;
  const uint8_t tag[] = {0x81, 0x00, 0x60, 0x64};  // PCP 3, VID 100
  want.insert(want.begin() + 12, tag, tag + 4);
  want.resize(60);  // the padding makes it 60 bytes, tag included
  EXPECT_EQ(r, want);
  v.HandleFrame(NdFrame({.vlan = 100}), kT0, w);
  wire::NdpFrame na;
  ASSERT_EQ(wire::ParseNdpFrame(w.Take(), &na), Error::kOk);
  EXPECT_TRUE(na.eth.has_vlan);
  EXPECT_EQ(na.eth.vlan_tci, 0x6064);
  // Requests are tagged too.
  v.Lookup(Ip("10.0.0.3"), kT0, w);
  r = w.Take();
  EXPECT_EQ(wire::Load16(&r[12]), 0x8100);
  EXPECT_EQ(wire::Load16(&r[14]), 0x6064);
  EXPECT_EQ(wire::Load16(&r[16]), 0x0806);
}

TEST_F(NeighborTest, UntaggedConfigAcceptsPriorityTaggedFrames) {
  Rx(ArpFrame({.vlan = 6 << 13}));  // VID 0: 802.1p priority tag only
  EXPECT_EQ(w.Take().size(), 60u);
  Rx(ArpFrame({.vlan = 7}));
  EXPECT_TRUE(w.sent.empty());
  EXPECT_EQ(t.counters().wrong_vlan, 1u);
}

// ---- robustness ---------------------------------------------------------------------------

// Every prefix of every valid frame kind, each in a buffer of exactly that
// size (so AddressSanitizer sees any read past the end).
TEST_F(NeighborTest, EveryTruncationIsHandledWithoutReadingPastTheEnd) {
  const std::vector<Bytes> frames = {
      ArpFrame({}),
      ArpFrame({.vlan = 100}),
      ArpReplyFromPeer("10.0.0.2"),
      NdFrame({}),
      NdFrame({.vlan = 100}),
      NdFrame({.ns = false, .src = "fe80::2", .dst = "fe80::1", .target = "fe80::2",
               .flags = wire::NdpMessage::kFlagSolicited}),
  };
  for (const Bytes& full : frames) {
    for (size_t n = 0; n <= full.size(); n++) {
      NeighborConfig cfg = Config();
      if (full[12] == 0x81) cfg.vlan_id = 100;
      NeighborTable s(cfg);
      s.Lookup(Ip("10.0.0.2"), kT0, w, 1);
      s.Lookup(Ip("fe80::2"), kT0, w, 2);
      w.sent.clear();
      auto buf = std::make_unique<uint8_t[]>(n);
      std::copy(full.begin(), full.begin() + n, buf.get());
      (void)ClassifyNeighborFrame(wire::ByteSpan(buf.get(), n));
      const Error e = s.HandleFrame(wire::ByteSpan(buf.get(), n), kT0, w);
      if (n == full.size()) {
        EXPECT_EQ(e, Error::kOk);
        EXPECT_EQ(s.counters().TotalDrops(), 0u);
      } else {
        // Our builders make exact frames (no Ethernet padding), so every cut
        // is a drop.
        EXPECT_NE(e, Error::kOk) << n;
        EXPECT_TRUE(w.sent.empty()) << n;
        EXPECT_EQ(s.counters().TotalDrops(), 1u);
      }
    }
  }
}

// Every single-bit flip of every frame kind: handled (acted upon, ignored or
// dropped with a reason), never a crash; an NDP frame with a flipped bit in
// the checksummed part is always dropped.
TEST_F(NeighborTest, EverySingleBitFlipIsHandled) {
  const std::vector<Bytes> frames = {ArpFrame({}), ArpReplyFromPeer("10.0.0.2"), NdFrame({}),
                                     NdFrame({.ns = false, .src = "fe80::2", .dst = "fe80::1",
                                              .target = "fe80::2",
                                              .flags = wire::NdpMessage::kFlagSolicited})};
  for (const Bytes& full : frames) {
    for (size_t bit = 0; bit < full.size() * 8; bit++) {
      NeighborTable s(Config());
      s.Lookup(Ip("10.0.0.2"), kT0, w, 1);
      s.Lookup(Ip("fe80::2"), kT0, w, 2);
      w.sent.clear();
      Bytes f = full;
      f[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      const Error e = s.HandleFrame(f, kT0, w);
      EXPECT_EQ(e != Error::kOk, s.counters().TotalDrops() == 1) << bit;
      const bool ndp = wire::Load16(&full[12]) == wire::kEtherTypeIpv6;
      // Bytes 22.. are the pseudo-header addresses and the ICMPv6 message.
      if (ndp && bit / 8 >= 22) {
        EXPECT_NE(e, Error::kOk) << bit;
      }
      for (const Bytes& r : w.sent) EXPECT_LE(r.size(), kMaxNeighborFrameLen);
    }
  }
}

TEST_F(NeighborTest, RandomFramesNeverCrash) {
  std::mt19937 rng(12345);
  NeighborConfig cfg = Config();
  cfg.max_entries = 64;
  NeighborTable s(cfg);
  const std::vector<Bytes> seeds = {ArpFrame({}), NdFrame({}), ArpReplyFromPeer("10.0.0.2"),
                                    NdFrame({.src = "::", .lla = false})};
  uint64_t now = kT0;
  for (int i = 0; i < 200000; i++) {
    Bytes f = seeds[rng() % seeds.size()];
    const int mode = static_cast<int>(rng() % 3);
    if (mode == 0) {  // flip a few bits
      for (int k = 1 + rng() % 4; k > 0; k--) f[rng() % f.size()] ^= 1u << (rng() % 8);
    } else if (mode == 1) {  // random length, random tail
      f.resize(rng() % 120);
      for (size_t j = 14; j < f.size(); j++) f[j] = static_cast<uint8_t>(rng());
    } else {  // random bytes behind a valid Ethernet header
      for (size_t j = 14; j < f.size(); j++)
        if (rng() % 8 == 0) f[j] = static_cast<uint8_t>(rng());
    }
    auto buf = std::make_unique<uint8_t[]>(f.size());
    std::copy(f.begin(), f.end(), buf.get());
    s.HandleFrame(wire::ByteSpan(buf.get(), f.size()), now, w);
    if (i % 1000 == 0) s.Lookup(IpAddr::FromV4(0x0a000000u | (rng() % 200 + 2)), now, w, i);
    now += 1'000'000;
    if (now >= s.NextDeadline()) s.Poll(now, w);
    NeighborCompletion c;
    while (s.PollCompletion(&c)) {
    }
    w.sent.clear();
  }
  EXPECT_LE(s.size(), 64u);
  EXPECT_GT(s.counters().TotalDrops(), 0u);
}

TEST(NeighborClassify, Kinds) {
  EXPECT_EQ(ClassifyNeighborFrame(ArpFrame({})), FrameKind::kArp);
  EXPECT_EQ(ClassifyNeighborFrame(ArpFrame({.vlan = 100})), FrameKind::kArp);
  EXPECT_EQ(ClassifyNeighborFrame(NdFrame({})), FrameKind::kNdp);
  EXPECT_EQ(ClassifyNeighborFrame(NdFrame({.ns = false, .vlan = 5})), FrameKind::kNdp);
  Bytes f = NdFrame({});
  f[54] = 128;  // echo request
  EXPECT_EQ(ClassifyNeighborFrame(f), FrameKind::kOther);
  f = NdFrame({});
  f[20] = 17;
  EXPECT_EQ(ClassifyNeighborFrame(f), FrameKind::kOther);
  EXPECT_EQ(ClassifyNeighborFrame({}), FrameKind::kOther);
}

}  // namespace
}  // namespace roce::neighbor
