// SPDX-License-Identifier: MIT
// The port layer on an in-process net_ring pair (no root, no kernel devices):
// EAL set-up, single and chained frames both ways, loopback, multiple queues,
// the offloads a ring reports and what the port does without them, the TX
// backlog (never spins, counts what it drops), oversize frames, mbuf helpers,
// telemetry (in-process and over the DPDK telemetry socket), and opening
// profiles from drivers-cfg/.
#include <dirent.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include <absl/strings/match.h>
#include <absl/strings/str_join.h>
#include <absl/strings/str_cat.h>
#include <gtest/gtest.h>

#include "stack/port/dpdk.h"
#include "stack/port/eal.h"
#include "stack/port/port.h"
#include "tests/port/port_test_env.h"
#include "tests/support/test_support.h"

namespace roce::port {
namespace {

using namespace roce::port::testing;

std::vector<rte_mbuf*> MakeFrames(Port& from, const Port& to, uint32_t len, uint32_t count, uint32_t seq0 = 0) {
  std::vector<rte_mbuf*> v;
  for (uint32_t i = 0; i < count; i++) {
    rte_mbuf* m = MbufFrom(from.pool(), TestFrame(len, seq0 + i, from.mac(), to.mac()));
    EXPECT_NE(m, nullptr);
    if (m) v.push_back(m);
  }
  return v;
}

TEST(Eal, InitRunsOncePerProcess) {
  EXPECT_TRUE(EalInitialized());
  absl::Status s = InitEal();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
}

TEST(Eal, EmbeddedDefaultNeedsNothingFromTheMachine) {
  std::vector<std::string> a = EalArgs({});
  std::string joined = absl::StrJoin(a, " ");
  EXPECT_EQ(joined, "soft-rnic --no-huge --no-shconf -m 256 --no-pci -l 0 --log-level=error");
  EalOptions h;
  h.hugepages = true;
  h.allow = {"0000:3b:00.0,rxq_cqe_comp_en=0"};
  joined = absl::StrJoin(EalArgs(h), " ");
  EXPECT_TRUE(absl::StrContains(joined, "--in-memory")) << joined;
  EXPECT_TRUE(absl::StrContains(joined, "-a 0000:3b:00.0,rxq_cqe_comp_en=0")) << joined;
  EXPECT_FALSE(absl::StrContains(joined, "--no-pci")) << joined;
  EXPECT_FALSE(absl::StrContains(joined, "--no-huge")) << joined;
}

TEST(Eal, HugepagesAreCheckedBeforeInit) {
  // The process's EAL is up already; CheckHugepages is what InitEal runs
  // first with hugepages = yes, since a failed rte_eal_init cannot be retried.
  std::string out;
  roce::testing::Run("grep -c ' hugetlbfs ' /proc/mounts; awk '/HugePages_Total/ {print $2}' /proc/meminfo", &out);
  std::vector<std::string> l = roce::testing::Lines(out);
  const bool have = l.size() == 2 && l[0] != "0" && l[1] != "0";
  absl::Status s = CheckHugepages();
  EXPECT_EQ(s.ok(), have) << s;
  if (!have) {
    EXPECT_TRUE(absl::StrContains(s.message(), "nr_hugepages")) << s;
  }
}

TEST(RingPair, LongestRingNameFits) {
  PortProfile p = RingProfile();
  p.ring = "abcdefghijkl";
  p.ring_side = RingSide::kLoop;
  ASSERT_TRUE(ValidateProfile(p).ok());
  {
    auto port = Port::Open(p);
    ASSERT_TRUE(port.ok()) << port.status();
    EXPECT_EQ((*port)->name(), "net_ring_abcdefghijkl_loop");
    char name[RTE_ETH_NAME_MAX_LEN];
    ASSERT_EQ(rte_eth_dev_get_name_by_port((*port)->id(), name), 0);
    EXPECT_STREQ(name, "net_ring_abcdefghijkl_loop");
  }
  EXPECT_TRUE(Port::Open(p).ok());  // closed cleanly: the name is free again
  p.ring = "abcdefghijklm";
  EXPECT_FALSE(ValidateProfile(p).ok());
}

TEST(RingPair, SingleSegmentFramesBothWays) {
  Pair p = OpenPair(RingProfile());
  ASSERT_TRUE(p.a && p.b);
  EXPECT_NE(p.a->mac(), p.b->mac());
  EXPECT_TRUE(p.a->LinkUp());
  for (Port* from : {p.a.get(), p.b.get()}) {
    Port* to = from == p.a.get() ? p.b.get() : p.a.get();
    std::vector<rte_mbuf*> tx = MakeFrames(*from, *to, 64, 100);
    std::vector<std::vector<uint8_t>> sent;
    for (rte_mbuf* m : tx) sent.push_back(Bytes(m));
    std::vector<rte_mbuf*> rx = Exchange(*from, *to, tx, 100);
    ASSERT_EQ(rx.size(), 100u);
    for (size_t i = 0; i < rx.size(); i++) {
      EXPECT_EQ(rx[i]->nb_segs, 1);
      EXPECT_EQ(Bytes(rx[i]), sent[i]) << i;
    }
    FreeAll(rx);
  }
  PortStats sa = p.a->Stats(), sb = p.b->Stats();
  EXPECT_EQ(sa.tx_packets, 100u);
  EXPECT_EQ(sa.tx_bytes, 6400u);
  EXPECT_EQ(sa.rx_packets, 100u);
  EXPECT_EQ(sb.rx_bytes, 6400u);
  EXPECT_EQ(sa.dev_opackets, 100u);  // the ring PMD's own counters agree
  EXPECT_EQ(sb.dev_ipackets, 100u);
  EXPECT_EQ(sa.tx_full + sa.tx_oversize + sa.tx_nomem, 0u);
  EXPECT_EQ(sa.pool_in_use, 0u);  // nothing leaked (the pair shares one pool)
}

TEST(RingPair, ChainedFramesArriveAsChains) {
  PortProfile prof = RingProfile();
  prof.mtu = 9000;
  Pair p = OpenPair(prof);
  ASSERT_TRUE(p.a && p.b);
  // Header segment + payload segments, as the engine will build them.
  const uint32_t kLens[] = {60, 2048, 2049, 4200, 9000};
  std::vector<rte_mbuf*> tx;
  std::vector<std::vector<uint8_t>> sent;
  for (uint32_t len : kLens) {
    std::vector<uint8_t> f = TestFrame(len, len, p.a->mac(), p.b->mac());
    const uint16_t hdr = std::min<uint32_t>(len, 58);  // Ethernet..BTH+RETH sized header
    rte_mbuf* m = AllocHeader(p.a->pool(), hdr);
    ASSERT_NE(m, nullptr);
    ASSERT_TRUE(WriteAt(m, 0, ByteSpan(f.data(), hdr)));
    ASSERT_TRUE(AppendCopy(m, p.a->pool(), ByteSpan(f.data() + hdr, len - hdr)));
    ASSERT_EQ(m->pkt_len, len);
    if (len > 2048) {
      EXPECT_GT(m->nb_segs, 1);
    }
    tx.push_back(m);
    sent.push_back(f);
  }
  std::vector<rte_mbuf*> rx = Exchange(*p.a, *p.b, tx, std::size(kLens));
  ASSERT_EQ(rx.size(), std::size(kLens));
  for (size_t i = 0; i < rx.size(); i++) {
    SCOPED_TRACE(kLens[i]);
    EXPECT_EQ(Bytes(rx[i]), sent[i]);
    size_t segs = 0, total = 0;
    for (ByteSpan s : SegmentsOf(rx[i])) {
      segs++;
      total += s.size();
    }
    EXPECT_EQ(segs, rx[i]->nb_segs);
    EXPECT_EQ(total, kLens[i]);
    if (kLens[i] > 2048) {
      EXPECT_GT(rx[i]->nb_segs, 1);
    }
  }
  EXPECT_EQ(p.a->Stats().tx_linearized, 0u);  // the ring offers multi-segment TX
  FreeAll(rx);
  EXPECT_EQ(p.a->Stats().pool_in_use, 0u);
}

TEST(RingPair, OffloadsReportedAndEnforced) {
  Pair p = OpenPair(RingProfile());
  ASSERT_TRUE(p.a);
  const Offloads& o = p.a->offloads();
  // net_ring offers multi-seg TX and RX scatter, no checksum offload.
  EXPECT_TRUE(o.tx_multiseg) << o.ToString();
  EXPECT_TRUE(o.rx_scatter) << o.ToString();
  EXPECT_FALSE(o.tx_ipv4_checksum);
  EXPECT_FALSE(o.tx_udp_checksum);
  EXPECT_FALSE(o.rx_ipv4_checksum);
  EXPECT_EQ(o.tx_capa, uint64_t{RTE_ETH_TX_OFFLOAD_MULTI_SEGS});
  // Without the offload the caller computes the checksums: nothing is flagged.
  rte_mbuf* m = MbufFrom(p.a->pool(), TestFrame(64, 1, p.a->mac(), p.b->mac()));
  TxChecksumRequest want{14, 20, false, true, true};
  TxChecksumRequest left = p.a->RequestTxChecksums(m, want);
  EXPECT_TRUE(left.ip_checksum);
  EXPECT_TRUE(left.udp_checksum);
  EXPECT_EQ(m->ol_flags & (RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_UDP_CKSUM), 0u);
  rte_pktmbuf_free(m);

  // Asking for an offload the device lacks fails at open, with a clear reason.
  PortProfile req = RingProfile();
  req.tx_udp_checksum = Tristate::kOn;
  auto r = Port::Open(req);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "TX UDP checksum offload is required")) << r.status();
}

// port.rx_interrupt: a ring has no Rx interrupt. auto and off open without a
// wake-up fd; on (required) fails at open, naming the driver.
TEST(RingPair, RxInterruptIsGrantedOnlyWhereTheDriverHasOne) {
  for (const Tristate t : {Tristate::kAuto, Tristate::kOff}) {
    PortProfile p = RingProfile();
    p.ring_side = RingSide::kLoop;
    p.rx_interrupt = t;
    auto port = Port::Open(p);
    ASSERT_TRUE(port.ok()) << port.status();
    EXPECT_EQ((*port)->RxWaitFd(0), -1);
  }
  PortProfile p = RingProfile();
  p.ring_side = RingSide::kLoop;
  p.rx_interrupt = Tristate::kOn;
  auto port = Port::Open(p);
  ASSERT_FALSE(port.ok());
  EXPECT_TRUE(absl::StrContains(port.status().message(), "port.rx_interrupt = on but net_ring")) << port.status();
}

TEST(RingPair, WithoutMultiSegTxChainsAreLinearized) {
  PortProfile prof = RingProfile();
  prof.mtu = 4000;
  prof.mbuf_data_room = 8192;  // one mbuf holds the whole frame
  prof.mbufs = 1023;
  prof.tx_multiseg = Tristate::kOff;
  Pair p = OpenPair(prof);
  ASSERT_TRUE(p.a);
  EXPECT_FALSE(p.a->offloads().tx_multiseg);
  std::vector<uint8_t> f = TestFrame(3000, 9, p.a->mac(), p.b->mac());
  rte_mbuf* m = AllocHeader(p.a->pool(), 100);
  WriteAt(m, 0, ByteSpan(f.data(), 100));
  // A chain of three: header, then two attached segments.
  rte_mbuf* s1 = AllocHeader(p.a->pool(), 1000);
  WriteAt(s1, 0, ByteSpan(f.data() + 100, 1000));
  rte_mbuf* s2 = AllocHeader(p.a->pool(), 1900);
  WriteAt(s2, 0, ByteSpan(f.data() + 1100, 1900));
  ASSERT_TRUE(AppendSegment(m, s1));
  ASSERT_TRUE(AppendSegment(m, s2));
  ASSERT_EQ(m->nb_segs, 3);
  std::vector<rte_mbuf*> rx = Exchange(*p.a, *p.b, {m}, 1);
  ASSERT_EQ(rx.size(), 1u);
  EXPECT_EQ(rx[0]->nb_segs, 1);
  EXPECT_EQ(Bytes(rx[0]), f);
  EXPECT_EQ(p.a->Stats().tx_linearized, 1u);
  FreeAll(rx);
  EXPECT_EQ(p.a->Stats().pool_in_use, 0u);
}

TEST(RingPair, LoopbackSide) {
  PortProfile prof = RingProfile();
  prof.ring_side = RingSide::kLoop;
  auto port = Port::Open(prof);
  ASSERT_TRUE(port.ok()) << port.status();
  std::vector<rte_mbuf*> rx = Exchange(**port, **port, MakeFrames(**port, **port, 128, 10), 10);
  ASSERT_EQ(rx.size(), 10u);
  for (uint32_t i = 0; i < 10; i++) EXPECT_EQ(FrameSeq(rx[i]), i);
  FreeAll(rx);
  // The same ring set cannot also be opened as a pair.
  prof.ring_side = RingSide::kA;
  EXPECT_EQ(Port::Open(prof).status().code(), absl::StatusCode::kAlreadyExists);
}

TEST(RingPair, QueuesAreSeparate) {
  Pair p = OpenPair(RingProfile(2));
  ASSERT_TRUE(p.a);
  EXPECT_EQ(p.a->rx_queues(), 2);
  std::vector<rte_mbuf*> f = MakeFrames(*p.a, *p.b, 64, 8);
  EXPECT_EQ(p.a->TxBurst(1, f.data(), 8), 8);
  rte_mbuf* got[16];
  EXPECT_EQ(p.b->RxBurst(0, got, 16), 0);
  ASSERT_EQ(p.b->RxBurst(1, got, 16), 8);
  rte_pktmbuf_free_bulk(got, 8);
}

TEST(RingPair, TxNeverSpinsBacklogThenCountedDrops) {
  PortProfile prof = RingProfile();
  prof.ring_size = 64;  // holds 63
  prof.tx_backlog = 256;
  Pair p = OpenPair(prof);
  ASSERT_TRUE(p.a);
  // 400 frames with nobody receiving: 63 in the ring, 256 in the backlog, 81 dropped.
  std::vector<rte_mbuf*> f = MakeFrames(*p.a, *p.b, 64, 400);
  uint32_t accepted = 0;
  for (size_t off = 0; off < f.size(); off += 32)
    accepted += p.a->TxBurst(0, f.data() + off, static_cast<uint16_t>(std::min<size_t>(32, f.size() - off)));
  EXPECT_EQ(accepted, 63u + 256u);
  EXPECT_EQ(p.a->TxBacklog(0), 256u);
  PortStats s = p.a->Stats();
  EXPECT_EQ(s.tx_full, 81u);
  EXPECT_EQ(s.tx_packets, 63u);
  EXPECT_EQ(s.tx_backlog, 256u);
  // Draining the receiver and flushing the sender delivers the rest in order.
  std::vector<rte_mbuf*> rx;
  for (int i = 0; i < 100 && rx.size() < 319; i++) {
    rte_mbuf* b[64];
    uint16_t k = p.b->RxBurst(0, b, 64);
    rx.insert(rx.end(), b, b + k);
    p.a->Flush(0);
  }
  ASSERT_EQ(rx.size(), 319u);
  for (uint32_t i = 0; i < 319; i++) ASSERT_EQ(FrameSeq(rx[i]), i);
  EXPECT_EQ(p.a->TxBacklog(0), 0u);
  EXPECT_EQ(p.a->Stats().tx_packets, 319u);
  FreeAll(rx);
  EXPECT_EQ(p.a->Stats().pool_in_use, 0u);
}

TEST(RingPair, NoBacklogDropsAtOnce) {
  PortProfile prof = RingProfile();
  prof.ring_size = 64;
  prof.tx_backlog = 0;
  Pair p = OpenPair(prof);
  ASSERT_TRUE(p.a);
  std::vector<rte_mbuf*> f = MakeFrames(*p.a, *p.b, 64, 100);
  uint32_t accepted = 0;
  for (size_t off = 0; off < f.size(); off += 50) accepted += p.a->TxBurst(0, f.data() + off, 50);
  EXPECT_EQ(accepted, 63u);
  EXPECT_EQ(p.a->Stats().tx_full, 37u);
  std::vector<rte_mbuf*> rx = Exchange(*p.a, *p.b, {}, 63);
  EXPECT_EQ(rx.size(), 63u);
  FreeAll(rx);
}

TEST(RingPair, OversizeFramesAreDroppedBeforeTheDevice) {
  Pair p = OpenPair(RingProfile());  // MTU 1500: frames up to 1518
  ASSERT_TRUE(p.a);
  EXPECT_EQ(p.a->max_frame_len(), 1518u);
  std::vector<rte_mbuf*> f = MakeFrames(*p.a, *p.b, 1518, 1);
  std::vector<rte_mbuf*> big = MakeFrames(*p.a, *p.b, 1519, 1);
  f.push_back(big[0]);
  EXPECT_EQ(p.a->TxBurst(0, f.data(), 2), 1);
  EXPECT_EQ(p.a->Stats().tx_oversize, 1u);
  std::vector<rte_mbuf*> rx = Exchange(*p.a, *p.b, {}, 1);
  ASSERT_EQ(rx.size(), 1u);
  EXPECT_EQ(rx[0]->pkt_len, 1518u);
  FreeAll(rx);
}

TEST(Mbuf, AllocFrameSizesAndSegments) {
  Pair p = OpenPair(RingProfile());
  ASSERT_TRUE(p.a);
  rte_mempool* pool = p.a->pool();
  const uint32_t first = FirstSegmentRoom(pool), room = SegmentRoom(pool);
  EXPECT_EQ(first, 2048u);
  EXPECT_EQ(room, 2048u + RTE_PKTMBUF_HEADROOM);
  struct Case {
    uint32_t len;
    uint16_t segs;
  } cases[] = {{0, 1}, {1, 1}, {first, 1}, {first + 1, 2}, {first + room, 2}, {first + room + 1, 3}, {20000, 10}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.len);
    rte_mbuf* m = AllocFrame(pool, c.len);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->pkt_len, c.len);
    EXPECT_EQ(m->nb_segs, c.segs);
    EXPECT_EQ(m->data_off, RTE_PKTMBUF_HEADROOM);
    for (rte_mbuf* s = m->next; s; s = s->next) EXPECT_EQ(s->data_off, 0);
    std::vector<uint8_t> data(c.len);
    for (uint32_t i = 0; i < c.len; i++) data[i] = static_cast<uint8_t>(i * 13 + 1);
    ASSERT_TRUE(WriteAt(m, 0, data));
    EXPECT_EQ(Bytes(m), data);
    EXPECT_FALSE(WriteAt(m, c.len, ByteSpan(data.data(), 1)));
    std::vector<std::pair<const uint8_t*, size_t>> parts;
    GatherParts(m, &parts);
    EXPECT_EQ(parts.size(), c.segs);
    rte_pktmbuf_free(m);
  }
  // ReadContiguous: a pointer into the mbuf inside a segment, scratch across.
  rte_mbuf* m = AllocFrame(pool, 5000);
  std::vector<uint8_t> data(5000);
  for (uint32_t i = 0; i < 5000; i++) data[i] = static_cast<uint8_t>(i);
  WriteAt(m, 0, data);
  uint8_t scratch[64];
  ByteSpan in = ReadContiguous(m, 10, 40, scratch);
  EXPECT_EQ(in.data(), rte_pktmbuf_mtod_offset(m, const uint8_t*, 10));
  ByteSpan across = ReadContiguous(m, first - 8, 16, scratch);
  EXPECT_EQ(across.data(), scratch);
  EXPECT_TRUE(std::equal(across.begin(), across.end(), data.begin() + first - 8));
  EXPECT_TRUE(ReadContiguous(m, 4990, 20, scratch).empty());
  uint8_t out[100];
  EXPECT_EQ(CopyOut(m, 4950, out), 50u);
  EXPECT_TRUE(std::equal(out, out + 50, data.begin() + 4950));
  rte_pktmbuf_free(m);
  EXPECT_EQ(p.a->Stats().pool_in_use, 0u);
}

TEST(Mbuf, AllocationFailsCleanlyWhenThePoolRunsDry) {
  PortProfile prof = RingProfile();
  prof.mbufs = 511;
  prof.mbuf_cache = 0;
  prof.rx_desc = prof.tx_desc = 64;
  Pair p = OpenPair(prof);
  ASSERT_TRUE(p.a);
  rte_mempool* pool = p.a->pool();
  std::vector<rte_mbuf*> hold;
  while (rte_mempool_avail_count(pool) > 3) hold.push_back(rte_pktmbuf_alloc(pool));
  EXPECT_EQ(AllocFrame(pool, 5 * 2048), nullptr);  // needs 5
  EXPECT_EQ(rte_mempool_avail_count(pool), 3u);   // nothing leaked
  rte_mbuf* h = AllocHeader(pool, 64);
  ASSERT_NE(h, nullptr);
  std::vector<uint8_t> big(3 * 2176 + 1);
  EXPECT_FALSE(AppendCopy(h, pool, big));  // needs 4 more, 2 left
  EXPECT_EQ(h->pkt_len, 64u);
  EXPECT_EQ(h->nb_segs, 1);
  EXPECT_EQ(rte_mempool_avail_count(pool), 2u);
  rte_pktmbuf_free(h);
  FreeAll(hold);
  EXPECT_EQ(rte_mempool_in_use_count(pool), 0u);
}

// FreeReceived: plain frames of one pool go back in one put; a burst with a
// chain, a shared frame, an attached clone or a second pool's frame is freed
// the general way. Either way each buffer is back exactly when its last user
// lets go.
TEST(Mbuf, FreeReceivedReturnsEveryKindOfFrame) {
  PortProfile prof = RingProfile();
  prof.mbuf_cache = 0;  // every put lands in the pool's ring: counts are exact
  Pair p = OpenPair(prof);
  ASSERT_TRUE(p.a);
  rte_mempool* pool = p.a->pool();
  rte_mempool* other = rte_pktmbuf_pool_create("free_rx_other", 63, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  ASSERT_NE(other, nullptr) << rte_strerror(rte_errno);
  const unsigned base = rte_mempool_in_use_count(pool), base_other = rte_mempool_in_use_count(other);
  // Plain frames.
  rte_mbuf* burst[8];
  for (rte_mbuf*& m : burst) {
    m = AllocFrame(pool, 64);
    ASSERT_NE(m, nullptr);
  }
  EXPECT_EQ(rte_mempool_in_use_count(pool), base + 8);
  FreeReceived(burst, 8);
  EXPECT_EQ(rte_mempool_in_use_count(pool), base);
  FreeReceived(burst, 0);  // nothing to free
  EXPECT_EQ(rte_mempool_in_use_count(pool), base);
  // A mixed burst: a plain frame, a 3-segment chain, a frame shared (refcnt 2),
  // an attached clone of a plain frame, and a frame of another pool.
  rte_mbuf* plain = AllocFrame(pool, 64);
  rte_mbuf* chain = AllocFrame(pool, 5000);
  rte_mbuf* shared = AllocFrame(pool, 64);
  rte_mbuf* parent = AllocFrame(pool, 64);
  rte_mbuf* foreign = AllocFrame(other, 64);
  ASSERT_TRUE(plain && chain && shared && parent && foreign);
  ASSERT_EQ(chain->nb_segs, 3);
  rte_mbuf_refcnt_update(shared, 1);
  rte_mbuf* clone = rte_pktmbuf_clone(parent, pool);  // attached: parent's refcnt 2
  ASSERT_NE(clone, nullptr);
  EXPECT_EQ(rte_mempool_in_use_count(pool), base + 1 + 3 + 1 + 1 + 1);
  rte_mbuf* mixed[] = {plain, chain, shared, clone, foreign};
  FreeReceived(mixed, 5);
  // Left: `shared` (one reference) and `parent` (its own reference).
  EXPECT_EQ(rte_mempool_in_use_count(pool), base + 2);
  EXPECT_EQ(rte_mempool_in_use_count(other), base_other);
  EXPECT_EQ(rte_mbuf_refcnt_read(shared), 1);
  EXPECT_EQ(rte_mbuf_refcnt_read(parent), 1);
  rte_mbuf* rest[] = {shared, parent};
  FreeReceived(rest, 2);
  EXPECT_EQ(rte_mempool_in_use_count(pool), base);
  // Plain frames of two pools: each goes back to its own.
  rte_mbuf* two[] = {AllocFrame(pool, 64), AllocFrame(other, 64), AllocFrame(pool, 64)};
  ASSERT_TRUE(two[0] && two[1] && two[2]);
  FreeReceived(two, 3);
  EXPECT_EQ(rte_mempool_in_use_count(pool), base);
  EXPECT_EQ(rte_mempool_in_use_count(other), base_other);
  rte_mempool_free(other);
}

// ---- telemetry ----------------------------------------------------------------

// Connects to this process's telemetry socket (several DPDK processes may
// run, each with its own dpdk_telemetry.v2[:N]) and runs one command.
std::string TelemetryCommand(const std::string& cmd) {
  std::string dir = rte_eal_get_runtime_dir();
  DIR* d = opendir(dir.c_str());
  if (!d) return "";
  std::string reply;
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, "dpdk_telemetry.v2", 17) != 0) continue;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un sun{};
    sun.sun_family = AF_UNIX;
    std::string path = dir + "/" + e->d_name;
    std::snprintf(sun.sun_path, sizeof sun.sun_path, "%s", path.c_str());
    if (connect(fd, reinterpret_cast<sockaddr*>(&sun), sizeof sun) != 0) {
      close(fd);
      continue;
    }
    char buf[65536];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    std::string hello(buf, n > 0 ? static_cast<size_t>(n) : 0);
    if (!absl::StrContains(hello, absl::StrCat("\"pid\":", getpid(), ","))) {
      close(fd);
      continue;
    }
    if (write(fd, cmd.data(), cmd.size()) == static_cast<ssize_t>(cmd.size())) {
      n = read(fd, buf, sizeof buf - 1);
      if (n > 0) reply.assign(buf, static_cast<size_t>(n));
    }
    close(fd);
    break;
  }
  closedir(d);
  return reply;
}

TEST(Telemetry, PortCountersInProcessAndOnTheSocket) {
  Pair p = OpenPair(RingProfile());
  ASSERT_TRUE(p.a);
  std::vector<rte_mbuf*> rx = Exchange(*p.a, *p.b, MakeFrames(*p.a, *p.b, 100, 7), 7);
  FreeAll(rx);
  auto v = QueryTelemetry("port", p.a->id());
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->u64.at("tx_packets"), 7u);
  EXPECT_EQ(v->u64.at("tx_bytes"), 700u);
  EXPECT_EQ(v->u64.at("fault_rx_drop"), 0u);
  EXPECT_EQ(v->str.at("driver"), "net_ring");
  auto vb = QueryTelemetry("port", p.b->id());
  ASSERT_TRUE(vb.ok());
  EXPECT_EQ(vb->u64.at("rx_packets"), 7u);

  std::string reply = TelemetryCommand(absl::StrCat("/roce/port/stats,", p.b->id()));
  EXPECT_TRUE(absl::StrContains(reply, "\"rx_packets\":7")) << reply;
  EXPECT_TRUE(absl::StrContains(reply, "\"rx_bytes\":700")) << reply;
  reply = TelemetryCommand("/roce/port/list");
  EXPECT_TRUE(absl::StrContains(reply, absl::StrCat(p.a->id()))) << reply;
  EXPECT_TRUE(absl::StrContains(reply, "/roce/port/list")) << reply;

  // The same pattern serves other groups (the engine's per-QP counters).
  uint64_t qp_sent = 42;
  {
    auto reg = RegisterTelemetry("qp", 17, [&](TelemetryDict& d) { d.Add("sent", qp_sent); });
    ASSERT_TRUE(reg.ok()) << reg.status();
    EXPECT_EQ(RegisterTelemetry("qp", 17, [](TelemetryDict&) {}).status().code(),
              absl::StatusCode::kAlreadyExists);
    EXPECT_TRUE(absl::StrContains(TelemetryCommand("/roce/qp/stats,17"), "\"sent\":42"));
  }
  EXPECT_EQ(QueryTelemetry("qp", 17).status().code(), absl::StatusCode::kNotFound);
  const uint16_t id = p.a->id();
  p.a.reset();
  EXPECT_EQ(QueryTelemetry("port", id).status().code(), absl::StatusCode::kNotFound);
}

// ---- profiles opened for real -----------------------------------------------------

TEST(Profiles, RingProfileFromDriversCfgOpensAPair) {
  auto prof = LoadProfile(roce::testing::SourcePath("drivers-cfg/net_ring.ini"),
                          std::vector<std::string>{"port.ring=cfgpair"});
  ASSERT_TRUE(prof.ok()) << prof.status();
  Pair p = OpenPair(*prof);
  ASSERT_TRUE(p.a && p.b);
  ASSERT_TRUE(p.a->ipv4().has_value());
  std::vector<rte_mbuf*> rx = Exchange(*p.a, *p.b, MakeFrames(*p.a, *p.b, 64, 5), 5);
  EXPECT_EQ(rx.size(), 5u);
  FreeAll(rx);
}

TEST(Profiles, PhysicalNicProfileFailsClearlyWithoutTheNic) {
  auto prof = LoadProfile(roce::testing::SourcePath("drivers-cfg/mlx5.ini"));
  ASSERT_TRUE(prof.ok()) << prof.status();
  auto port = Port::Open(*prof);
  ASSERT_FALSE(port.ok());
  EXPECT_TRUE(absl::StrContains(port.status().message(), "rte_dev_probe")) << port.status();
}

TEST(Profiles, FlowRuleOnADeviceWithoutRteFlowFailsClearly) {
  PortProfile prof = RingProfile();
  prof.steer_udp_port = 4791;
  auto port = Port::Open(prof);
  ASSERT_FALSE(port.ok());
  EXPECT_TRUE(absl::StrContains(port.status().message(), "udp dst is 4791")) << port.status();
  // Nothing is left behind: the same ring set opens without the rule.
  prof.steer_udp_port = 0;
  EXPECT_TRUE(Port::Open(prof).ok());
}

}  // namespace
}  // namespace roce::port
