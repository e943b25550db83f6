// SPDX-License-Identifier: MIT
#include "tests/port/port_test_env.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>

#include "stack/port/dpdk.h"
#include "stack/port/eal.h"
#include "stack/wire/bytes.h"

namespace roce::port::testing {

namespace {
std::string g_runtime_dir;
}  // namespace

// Each test process gets its own runtime directory (--file-prefix): meson
// starts test binaries together, and two EALs starting at the same moment can
// take each other's telemetry socket (DPDK 22.11 tests "in use" by connecting,
// which fails while the owner has bound but not yet listened, then unlinks
// it), leaving a process whose telemetry nobody can reach.
void EalEnvironment::SetUp() {
  EalOptions o;
  o.extra.push_back(absl::StrCat("--file-prefix=rnic-test-", getpid()));
  absl::Status s = InitEal(o);
  ASSERT_TRUE(s.ok()) << s;
  g_runtime_dir = rte_eal_get_runtime_dir();
}

void EalEnvironment::TearDown() {
  CleanupEal();
  // Only the directory this process's EAL made for itself.
  if (absl::StrContains(g_runtime_dir, absl::StrCat("rnic-test-", getpid()))) {
    std::error_code ec;
    std::filesystem::remove_all(g_runtime_dir, ec);
  }
}

namespace {
[[maybe_unused]] ::testing::Environment* const g_env = ::testing::AddGlobalTestEnvironment(new EalEnvironment);
std::atomic<int> g_ring{0};
}  // namespace

Pair OpenPair(PortProfile p) {
  auto r = OpenRingPair(std::move(p));
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  return {std::move(r->first), std::move(r->second)};
}

PortProfile RingProfile(uint16_t queues) {
  PortProfile p;
  p.driver = "net_ring";
  p.ring = absl::StrCat("t", g_ring.fetch_add(1));
  p.rx_queues = p.tx_queues = queues;
  p.rx_desc = p.tx_desc = 256;
  p.mbufs = 4095;
  p.mbuf_cache = 64;
  return p;
}

std::vector<uint8_t> TestFrame(uint32_t len, uint32_t seq, const wire::MacAddr& src, const wire::MacAddr& dst) {
  std::vector<uint8_t> f(len);
  std::memcpy(f.data(), dst.b.data(), 6);
  std::memcpy(f.data() + 6, src.b.data(), 6);
  wire::Store16(&f[12], 0x0800);
  uint8_t* ip = &f[14];
  ip[0] = 0x45;
  wire::Store16(ip + 2, static_cast<uint16_t>(len - 14));
  ip[8] = 64;
  ip[9] = 17;
  wire::Store32(ip + 12, 0xc0a80001);
  wire::Store32(ip + 16, 0xc0a80002);
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += wire::Load16(ip + i);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  wire::Store16(ip + 10, static_cast<uint16_t>(~sum));
  uint8_t* udp = ip + 20;
  wire::Store16(udp, 49152);
  wire::Store16(udp + 2, 4791);
  wire::Store16(udp + 4, static_cast<uint16_t>(len - 34));
  if (len >= 46) wire::Store32(&f[42], seq);
  for (uint32_t i = 46; i < len; i++) f[i] = static_cast<uint8_t>(seq * 7 + i);
  return f;
}

uint32_t FrameSeq(const rte_mbuf* m) {
  uint8_t b[4];
  if (CopyOut(m, 42, b) != 4) return UINT32_MAX;
  return wire::Load32(b);
}

std::vector<uint8_t> Bytes(const rte_mbuf* m) {
  std::vector<uint8_t> v(m->pkt_len);
  CopyOut(m, 0, v);
  return v;
}

rte_mbuf* MbufFrom(rte_mempool* pool, const std::vector<uint8_t>& bytes) {
  rte_mbuf* m = AllocFrame(pool, static_cast<uint32_t>(bytes.size()));
  if (m) WriteAt(m, 0, bytes);
  return m;
}

std::vector<rte_mbuf*> Exchange(Port& tx, Port& rx, std::vector<rte_mbuf*> frames, size_t expect, int idle_polls) {
  std::vector<rte_mbuf*> got;
  size_t off = 0;
  int idle = 0;
  while (got.size() < expect || off < frames.size()) {
    if (off < frames.size()) {
      uint16_t n = static_cast<uint16_t>(std::min<size_t>(32, frames.size() - off));
      tx.TxBurst(0, frames.data() + off, n);
      off += n;
    } else {
      tx.Flush(0);
    }
    rte_mbuf* b[64];
    uint16_t k = rx.RxBurst(0, b, 64);
    got.insert(got.end(), b, b + k);
    if (k == 0 && off >= frames.size()) {
      if (++idle > idle_polls) break;
      rx.Flush(0);
    } else {
      idle = 0;
    }
  }
  return got;
}

void FreeAll(std::vector<rte_mbuf*>& v) {
  for (rte_mbuf* m : v) rte_pktmbuf_free(m);
  v.clear();
}

bool IsRoot() { return geteuid() == 0; }

int Sh(const std::string& cmd, std::string* out) {
  std::string full = cmd + " 2>&1";
  FILE* f = popen(full.c_str(), "r");
  if (!f) return -1;
  std::string buf;
  char tmp[4096];
  size_t n;
  while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) buf.append(tmp, n);
  int st = pclose(f);
  if (out) *out = buf;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Netns::Netns(const std::string& tag) {
  name_ = absl::StrCat("roce-", tag, "-", getpid());
  Sh("ip netns del " + name_);  // a leftover of a crashed run with a recycled pid
  ok_ = Sh("ip netns add " + name_) == 0 && Exec("ip link set lo up") == 0;
}

Netns::~Netns() { Sh("ip netns del " + name_); }

int Netns::Exec(const std::string& cmd, std::string* out) const {
  return Sh("ip netns exec " + name_ + " " + cmd, out);
}

Netns::Enter::Enter(const Netns& ns) {
  self_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  int target = open(("/var/run/netns/" + ns.name()).c_str(), O_RDONLY | O_CLOEXEC);
  ok_ = self_ >= 0 && target >= 0 && setns(target, CLONE_NEWNET) == 0;
  if (target >= 0) close(target);
}

Netns::Enter::~Enter() {
  if (self_ >= 0) {
    if (ok_) setns(self_, CLONE_NEWNET);
    close(self_);
  }
}

}  // namespace roce::port::testing
