// SPDX-License-Identifier: MIT
// The XDP program (stack/port/xdp/soft_rnic_xdp.bpf.c) and its userspace side
// (stack/port/xdp_filter.h). Root only (BPF, veth, netns): skipped otherwise.
//  - Verdicts through BPF_PROG_TEST_RUN on hand-built frames: UDP 4791 to a
//    listed IPv4/IPv6 address (also VLAN / QinQ-outer tagged, with IPv4
//    options, with Ethernet padding) counts to_xsk; an unlisted address
//    pass_not_local; ARP, ICMP, TCP, UDP 4790, ICMPv6 pass_not_roce; IPv4
//    fragments, IPv6 extension headers, truncated frames and lying lengths
//    pass_malformed. Every verdict is XDP_PASS here: xsks_map is empty, as
//    after the owning process died.
//  - On a veth inside a test namespace: PrepareInterfaceForXdp with nothing
//    attached, with ours left by a dead pid (removed), by a live owner
//    (refused, left attached), by a reused pid (removed), in generic mode
//    (removed in that mode), with no owner yet
//    (refused), with a foreign program (refused, left attached);
//    XdpFilter::Attach / SetAddrs / Stats against real traffic from the peer
//    namespace (python3 sockets), Detach; the AF_XDP socket helpers.
#include <net/if.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/if_link.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>
#include <gtest/gtest.h>

#include "stack/port/xdp_filter.h"
#include "stack/wire/headers.h"
#include "tests/port/port_test_env.h"

namespace roce::port {
namespace {

using testing::IsRoot;
using testing::Netns;

struct Guard {
  std::function<void()> f;
  ~Guard() {
    if (f) f();
  }
};

wire::IpAddr Ip(const std::string& s) {
  wire::IpAddr a;
  EXPECT_TRUE(wire::IpAddr::FromString(s, &a)) << s;
  return a;
}

uint64_t StartTime(const std::string& pid) {
  std::ifstream f("/proc/" + pid + "/stat");
  std::string s;
  std::getline(f, s);
  std::istringstream in(s.substr(s.rfind(')') + 1));
  std::string tok;
  for (int field = 3; field <= 22; field++) in >> tok;
  return std::strtoull(tok.c_str(), nullptr, 10);
}

// Our object, loaded (not attached), with its maps.
struct Loaded {
  bpf_object* obj = nullptr;
  int prog = -1, addrs = -1, owner = -1, stats = -1, xsks = -1;
  std::string error;
  Loaded() {
    obj = bpf_object__open_file(XdpProgramPath().c_str(), nullptr);
    if (!obj) {
      error = absl::StrCat("bpf_object__open_file(", XdpProgramPath(), "): ", strerror(errno));
      return;
    }
    if (int rc = bpf_object__load(obj); rc) {
      error = absl::StrCat("bpf_object__load: ", strerror(-rc));
      return;
    }
    bpf_program* p = bpf_object__find_program_by_name(obj, "soft_rnic_xdp");
    prog = p ? bpf_program__fd(p) : -1;
    addrs = bpf_object__find_map_fd_by_name(obj, "srnic_addrs");
    owner = bpf_object__find_map_fd_by_name(obj, "srnic_owner");
    stats = bpf_object__find_map_fd_by_name(obj, "srnic_stats");
    xsks = bpf_object__find_map_fd_by_name(obj, "xsks_map");
    if (prog < 0 || addrs < 0 || owner < 0 || stats < 0 || xsks < 0) error = "program or map missing";
  }
  ~Loaded() {
    if (obj) bpf_object__close(obj);
  }
  bool ok() const { return error.empty(); }
  void AddAddr(const wire::IpAddr& a) const {
    uint8_t one = 1;
    ASSERT_EQ(bpf_map_update_elem(addrs, a.b.data(), &one, BPF_ANY), 0);
  }
  void SetOwner(uint32_t pid, uint64_t start) const {
    struct {
      uint32_t pid, pad;
      uint64_t start;
    } rec{pid, 0, start};
    uint32_t key = 0;
    ASSERT_EQ(bpf_map_update_elem(owner, &key, &rec, BPF_ANY), 0);
  }
  // Per-CPU counters summed.
  std::array<uint64_t, 4> Stats() const {
    std::array<uint64_t, 4> out{};
    std::vector<uint64_t> v(static_cast<size_t>(libbpf_num_possible_cpus()));
    for (uint32_t i = 0; i < 4; i++) {
      EXPECT_EQ(bpf_map_lookup_elem(stats, &i, v.data()), 0);
      for (uint64_t x : v) out[i] += x;
    }
    return out;
  }
  uint32_t ProgId() const {
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    return bpf_obj_get_info_by_fd(prog, &info, &len) == 0 ? info.id : 0;
  }
};

// ---- frames ---------------------------------------------------------------

using Bytes = std::vector<uint8_t>;
void Put16(Bytes& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void PutAddr4(Bytes& b, const wire::IpAddr& a) { b.insert(b.end(), a.b.begin() + 12, a.b.end()); }
void PutAddr6(Bytes& b, const wire::IpAddr& a) { b.insert(b.end(), a.b.begin(), a.b.end()); }

Bytes Eth(uint16_t ethertype, int tags = 0, uint16_t tpid = 0x8100) {
  Bytes b = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2};
  for (int i = 0; i < tags; i++) {
    Put16(b, i == 0 ? tpid : 0x8100);
    Put16(b, 100 + i);  // VID
  }
  Put16(b, ethertype);
  return b;
}
Bytes UdpPayload(uint16_t dport, size_t payload, uint16_t udp_len = 0) {
  Bytes b;
  Put16(b, 49152);
  Put16(b, dport);
  Put16(b, udp_len ? udp_len : static_cast<uint16_t>(8 + payload));
  Put16(b, 0);
  for (size_t i = 0; i < payload; i++) b.push_back(static_cast<uint8_t>(i));
  return b;
}
struct V4 {
  uint8_t proto = 17;
  uint16_t frag = 0;  // flags + offset, host order
  int options = 0;    // 4-byte words of options
  int tot_len_delta = 0;
  uint8_t version = 4;
};
Bytes Ipv4(const wire::IpAddr& dst, const Bytes& l4, V4 o = {}, int tags = 0,
           uint16_t tpid = 0x8100) {
  Bytes b = Eth(0x0800, tags, tpid);
  const size_t hlen = 20 + 4 * static_cast<size_t>(o.options);
  b.push_back(static_cast<uint8_t>((o.version << 4) | (hlen / 4)));
  b.push_back(0);
  Put16(b, static_cast<uint16_t>(static_cast<int>(hlen + l4.size()) + o.tot_len_delta));
  Put16(b, 0x1234);
  Put16(b, o.frag);
  b.push_back(64);
  b.push_back(o.proto);
  Put16(b, 0);  // checksum: not checked by the program
  PutAddr4(b, Ip("10.9.0.100"));
  PutAddr4(b, dst);
  for (int i = 0; i < 4 * o.options; i++) b.push_back(1);  // NOP
  b.insert(b.end(), l4.begin(), l4.end());
  return b;
}
Bytes Ipv6(const wire::IpAddr& dst, const Bytes& l4, uint8_t nexthdr = 17, int tags = 0) {
  Bytes b = Eth(0x86DD, tags);
  b.push_back(0x60);
  b.push_back(0);
  b.push_back(0);
  b.push_back(0);
  Put16(b, static_cast<uint16_t>(l4.size()));
  b.push_back(nexthdr);
  b.push_back(64);
  PutAddr6(b, Ip("fd00:9::100"));
  PutAddr6(b, dst);
  b.insert(b.end(), l4.begin(), l4.end());
  return b;
}
Bytes Arp() {
  Bytes b = Eth(0x0806);
  const uint8_t body[28] = {0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 2, 10, 9, 0, 100,
                            0, 0, 0, 0, 0, 0, 10, 9, 0, 1};
  b.insert(b.end(), body, body + sizeof body);
  return b;
}
Bytes Truncate(Bytes b, size_t n) {
  b.resize(n);
  return b;
}

enum Counter { kToXsk = 0, kNotRoce = 1, kNotLocal = 2, kMalformed = 3 };
const char* const kCounterName[] = {"to_xsk", "pass_not_roce", "pass_not_local", "pass_malformed"};

class XdpVerdict : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!IsRoot()) GTEST_SKIP() << "needs root (BPF_PROG_TEST_RUN needs CAP_BPF/CAP_SYS_ADMIN)";
    lp_ = std::make_unique<Loaded>();
    ASSERT_TRUE(lp_->ok()) << lp_->error;
    lp_->AddAddr(kV4);
    lp_->AddAddr(kV6);
  }
  // Runs the program on `frame`: returns the action, and which counter moved
  // (exactly one must move by exactly one).
  void Expect(const Bytes& frame, Counter want, const std::string& what) {
    SCOPED_TRACE(what);
    auto before = lp_->Stats();
    Bytes out(frame.size() + 256);
    bpf_test_run_opts o{};
    o.sz = sizeof(o);
    o.data_in = frame.data();
    o.data_size_in = static_cast<uint32_t>(frame.size());
    o.data_out = out.data();
    o.data_size_out = static_cast<uint32_t>(out.size());
    o.repeat = 1;
    ASSERT_EQ(bpf_prog_test_run_opts(lp_->prog, &o), 0) << strerror(errno);
    EXPECT_EQ(o.retval, static_cast<uint32_t>(XDP_PASS));
    auto after = lp_->Stats();
    for (int i = 0; i < 4; i++)
      EXPECT_EQ(after[i] - before[i], i == want ? 1u : 0u) << kCounterName[i];
  }
  const wire::IpAddr kV4 = Ip("10.9.0.1");
  const wire::IpAddr kV6 = Ip("fd00:9::1");
  std::unique_ptr<Loaded> lp_;
};

TEST_F(XdpVerdict, RoceToOurAddressGoesToTheSocket) {
  Expect(Ipv4(kV4, UdpPayload(4791, 40)), kToXsk, "IPv4 4791");
  Expect(Ipv6(kV6, UdpPayload(4791, 40)), kToXsk, "IPv6 4791");
  Expect(Ipv4(kV4, UdpPayload(4791, 40), {}, 1), kToXsk, "802.1Q IPv4");
  Expect(Ipv4(kV4, UdpPayload(4791, 40), {}, 1, 0x88A8), kToXsk, "802.1ad IPv4");
  Expect(Ipv6(kV6, UdpPayload(4791, 40), 17, 1), kToXsk, "802.1Q IPv6");
  Expect(Ipv4(kV4, UdpPayload(4791, 40), V4{.options = 2}), kToXsk, "IPv4 with options");
  // Minimum-size Ethernet frame: padding after the datagram.
  Bytes padded = Ipv4(kV4, UdpPayload(4791, 2));
  padded.resize(60, 0);
  Expect(padded, kToXsk, "padded to 60 bytes");
  Expect(Ipv4(kV4, UdpPayload(4791, 0)), kToXsk, "empty UDP payload");
}

TEST_F(XdpVerdict, OtherAddressesGoToTheKernel) {
  Expect(Ipv4(Ip("10.9.0.2"), UdpPayload(4791, 40)), kNotLocal, "IPv4 other host");
  Expect(Ipv4(Ip("255.255.255.255"), UdpPayload(4791, 40)), kNotLocal, "broadcast");
  Expect(Ipv6(Ip("fd00:9::2"), UdpPayload(4791, 40)), kNotLocal, "IPv6 other host");
  // The IPv4-mapped form of our IPv4 address in an IPv6 header is not it.
  Expect(Ipv6(kV4, UdpPayload(4791, 40)), kNotLocal, "IPv4-mapped IPv6 destination");
  // Removing an address takes effect at once.
  ASSERT_EQ(bpf_map_delete_elem(lp_->addrs, kV4.b.data()), 0);
  Expect(Ipv4(kV4, UdpPayload(4791, 40)), kNotLocal, "removed address");
}

TEST_F(XdpVerdict, NotRoceGoesToTheKernel) {
  Expect(Arp(), kNotRoce, "ARP");
  Expect(Ipv4(kV4, Bytes(8, 0), V4{.proto = 1}), kNotRoce, "ICMP");
  Expect(Ipv4(kV4, Bytes(20, 0), V4{.proto = 6}), kNotRoce, "TCP");
  Expect(Ipv4(kV4, UdpPayload(4790, 40)), kNotRoce, "UDP 4790");
  Expect(Ipv4(kV4, UdpPayload(53, 40)), kNotRoce, "UDP 53");
  Expect(Ipv6(kV6, Bytes(20, 0), 6), kNotRoce, "TCP over IPv6");
  Expect(Ipv6(kV6, Bytes(8, 0), 58), kNotRoce, "ICMPv6");
  Expect(Eth(0x88CC), kNotRoce, "LLDP, header only");
  Expect(Ipv4(kV4, UdpPayload(4791, 40), {}, 2), kNotRoce, "two tags: not looked through");
  // A fragment of something else is the kernel's without question.
  Expect(Ipv4(kV4, Bytes(20, 0), V4{.proto = 6, .frag = 0x2000}), kNotRoce, "TCP fragment");
}

TEST_F(XdpVerdict, MalformedGoesToTheKernel) {
  const Bytes v4 = Ipv4(kV4, UdpPayload(4791, 40));
  Expect(Ipv4(kV4, UdpPayload(4791, 40), V4{.frag = 0x2000}), kMalformed, "IPv4 MF set");
  Expect(Ipv4(kV4, UdpPayload(4791, 40), V4{.frag = 0x0010}), kMalformed, "IPv4 offset 128");
  Expect(Ipv4(kV4, UdpPayload(4791, 40), V4{.frag = 0x4000}), kToXsk, "DF only is fine");
  Expect(Ipv6(kV6, UdpPayload(4791, 40), 0), kMalformed, "IPv6 hop-by-hop");
  Expect(Ipv6(kV6, UdpPayload(4791, 40), 44), kMalformed, "IPv6 fragment header");
  Expect(Ipv6(kV6, UdpPayload(4791, 40), 60), kMalformed, "IPv6 destination options");
  for (size_t n : {14, 20, 33, 34, 41}) Expect(Truncate(v4, n), kMalformed, absl::StrCat("IPv4 ", n, " B"));
  Expect(Truncate(v4, v4.size() - 1), kMalformed, "IPv4 one byte short of tot_len");
  const Bytes v6 = Ipv6(kV6, UdpPayload(4791, 40));
  for (size_t n : {14, 53, 54, 61}) Expect(Truncate(v6, n), kMalformed, absl::StrCat("IPv6 ", n, " B"));
  Expect(Truncate(Ipv4(kV4, UdpPayload(4791, 40), {}, 1), 16), kMalformed, "tag cut");
  Expect(Ipv4(kV4, UdpPayload(4791, 40), V4{.tot_len_delta = -30}), kMalformed, "tot_len < UDP len");
  Expect(Ipv4(kV4, UdpPayload(4791, 40, 4)), kMalformed, "UDP len < 8");
  Expect(Ipv4(kV4, UdpPayload(4791, 40), V4{.version = 5}), kMalformed, "IPv4 version 5");
}

// ---- on an interface --------------------------------------------------------

class XdpIface : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!IsRoot()) GTEST_SKIP() << "needs root (veth, netns, XDP attach)";
    ns_ = std::make_unique<Netns>("xdpf");
    peer_ = std::make_unique<Netns>("xdpp");
    ASSERT_TRUE(ns_->ok() && peer_->ok());
    ASSERT_EQ(ns_->Exec("ip link add xv0 type veth peer name xv1 netns " + peer_->name()), 0);
    ASSERT_EQ(ns_->Exec("ip addr add 10.77.0.1/24 dev xv0"), 0);
    ASSERT_EQ(ns_->Exec("ip addr add 10.77.0.3/24 dev xv0"), 0);
    ASSERT_EQ(ns_->Exec("ip addr add fd00:77::1/64 dev xv0 nodad"), 0);
    ASSERT_EQ(ns_->Exec("ip link set xv0 up"), 0);
    ASSERT_EQ(peer_->Exec("ip addr add 10.77.0.2/24 dev xv1"), 0);
    ASSERT_EQ(peer_->Exec("ip addr add fd00:77::2/64 dev xv1 nodad"), 0);
    ASSERT_EQ(peer_->Exec("ip link set xv1 up"), 0);
    enter_ = std::make_unique<Netns::Enter>(*ns_);
    ASSERT_TRUE(enter_->ok());
    ifindex_ = static_cast<int>(if_nametoindex("xv0"));
    ASSERT_GT(ifindex_, 0);
  }
  void TearDown() override {
    // Whatever a test left attached (deleting the namespace would remove it
    // with the veth anyway).
    if (ifindex_ > 0) {
      bpf_xdp_detach(ifindex_, XDP_FLAGS_DRV_MODE, nullptr);
      bpf_xdp_detach(ifindex_, XDP_FLAGS_SKB_MODE, nullptr);
    }
    enter_.reset();
    peer_.reset();
    ns_.reset();
  }
  // Attaches `fd` natively if veth takes it, else in generic mode.
  uint32_t AttachProg(int fd) {
    int rc = bpf_xdp_attach(ifindex_, fd, XDP_FLAGS_DRV_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST, nullptr);
    if (rc == 0) return XDP_FLAGS_DRV_MODE;
    rc = bpf_xdp_attach(ifindex_, fd, XDP_FLAGS_SKB_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST, nullptr);
    EXPECT_EQ(rc, 0) << strerror(-rc);
    return rc == 0 ? XDP_FLAGS_SKB_MODE : 0;
  }
  uint32_t AttachedId() {
    uint32_t id = 0;
    EXPECT_EQ(bpf_xdp_query_id(ifindex_, 0, &id), 0);
    return id;
  }
  // Runs python3 in the peer namespace.
  void Py(const std::string& code) {
    std::string out;
    int rc = peer_->Exec("python3 -c '" + code + "'", &out);
    EXPECT_EQ(rc, 0) << out;
  }

  std::unique_ptr<Netns> ns_, peer_;
  std::unique_ptr<Netns::Enter> enter_;
  int ifindex_ = 0;
};

TEST_F(XdpIface, PrepareWithNothingAttached) {
  EXPECT_TRUE(PrepareInterfaceForXdp(ifindex_, "xv0").ok());
  auto a = InspectXdp(ifindex_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->prog_id, 0u);
}

TEST_F(XdpIface, PrepareRemovesOursLeftByADeadProcess) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  Loaded lp;
  ASSERT_TRUE(lp.ok()) << lp.error;
  lp.SetOwner(static_cast<uint32_t>(child), 12345);
  const uint32_t mode = AttachProg(lp.prog);
  ASSERT_NE(mode, 0u);
  std::printf("veth attach mode: %s\n", mode == XDP_FLAGS_DRV_MODE ? "native" : "generic");
  auto a = InspectXdp(ifindex_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->prog_id, lp.ProgId());
  EXPECT_EQ(a->name, "soft_rnic_xdp");
  EXPECT_TRUE(a->ours);
  EXPECT_EQ(a->owner_pid, static_cast<uint32_t>(child));
  EXPECT_FALSE(a->owner_alive);
  EXPECT_EQ(a->mode_flags, mode);

  ::testing::internal::CaptureStderr();
  absl::Status s = PrepareInterfaceForXdp(ifindex_, "xv0");
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(err, absl::StrCat("soft-rnic: removed a stale soft_rnic_xdp program (pid ", child,
                              " is gone) from xv0\n"));
  EXPECT_EQ(AttachedId(), 0u);
}

// The mode matters for the detach: generic mode on a device that has a
// native one (what a user may have forced with xdpgeneric).
TEST_F(XdpIface, PrepareRemovesOursInGenericMode) {
  Loaded lp;
  ASSERT_TRUE(lp.ok()) << lp.error;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  lp.SetOwner(static_cast<uint32_t>(child), 0);
  ASSERT_EQ(bpf_xdp_attach(ifindex_, lp.prog, XDP_FLAGS_SKB_MODE, nullptr), 0);
  auto a = InspectXdp(ifindex_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->mode_flags, static_cast<uint32_t>(XDP_FLAGS_SKB_MODE));
  ::testing::internal::CaptureStderr();
  absl::Status s = PrepareInterfaceForXdp(ifindex_, "xv0");
  ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(AttachedId(), 0u);
}

TEST_F(XdpIface, PrepareRefusesOursWithALiveOwner) {
  Loaded lp;
  ASSERT_TRUE(lp.ok()) << lp.error;
  lp.SetOwner(static_cast<uint32_t>(getpid()), StartTime("self"));
  ASSERT_NE(AttachProg(lp.prog), 0u);
  auto a = InspectXdp(ifindex_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->ours);
  EXPECT_TRUE(a->owner_alive);
  absl::Status s = PrepareInterfaceForXdp(ifindex_, "xv0");
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_EQ(s.message(), absl::StrCat("interface xv0 already carries a soft-RNIC adapter (pid ",
                                      getpid(), "); two adapters on one interface are not supported"));
  EXPECT_EQ(AttachedId(), lp.ProgId());

  // The same pid with another start time: a reused pid, so the owner is gone.
  lp.SetOwner(static_cast<uint32_t>(getpid()), StartTime("self") + 1);
  a = InspectXdp(ifindex_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->owner_alive);
  ::testing::internal::CaptureStderr();
  s = PrepareInterfaceForXdp(ifindex_, "xv0");
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE(absl::StrContains(err, "removed a stale soft_rnic_xdp program")) << err;
  EXPECT_EQ(AttachedId(), 0u);
}

TEST_F(XdpIface, PrepareRefusesOursWithNoOwnerYet) {
  Loaded lp;  // srnic_owner all zero: a PMD attached it, XdpFilter::Attach not run yet
  ASSERT_TRUE(lp.ok()) << lp.error;
  ASSERT_NE(AttachProg(lp.prog), 0u);
  absl::Status s = PrepareInterfaceForXdp(ifindex_, "xv0");
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "starting")) << s;
  EXPECT_EQ(AttachedId(), lp.ProgId());
}

TEST_F(XdpIface, PrepareRefusesAForeignProgram) {
  // r0 = XDP_PASS; exit
  const bpf_insn insns[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, XDP_PASS},
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "other_prog", "GPL", insns, 2, nullptr);
  ASSERT_GE(fd, 0) << strerror(errno);
  Guard close_fd{[fd] { close(fd); }};
  ASSERT_NE(AttachProg(fd), 0u);
  const uint32_t id = AttachedId();
  auto a = InspectXdp(ifindex_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->name, "other_prog");
  EXPECT_FALSE(a->ours);
  absl::Status s = PrepareInterfaceForXdp(ifindex_, "xv0");
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "interface xv0")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "'other_prog'")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), absl::StrCat("id ", id))) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "does not replace it")) << s;
  EXPECT_EQ(AttachedId(), id);
  auto f = XdpFilter::Attach(ifindex_);
  EXPECT_TRUE(absl::IsFailedPrecondition(f.status())) << f.status();
  EXPECT_EQ(AttachedId(), id);
}

TEST_F(XdpIface, FilterCountsRealTraffic) {
  {
    auto f = XdpFilter::Attach(ifindex_);
    EXPECT_TRUE(absl::IsFailedPrecondition(f.status())) << f.status();  // nothing attached
  }
  Loaded lp;
  ASSERT_TRUE(lp.ok()) << lp.error;
  const uint32_t mode = AttachProg(lp.prog);
  ASSERT_NE(mode, 0u);
  auto f = XdpFilter::Attach(ifindex_);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->prog_id(), lp.ProgId());
  auto a = InspectXdp(ifindex_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->owner_pid, static_cast<uint32_t>(getpid()));
  EXPECT_TRUE(a->owner_alive);
  // Now a second adapter is refused.
  EXPECT_TRUE(absl::IsFailedPrecondition(PrepareInterfaceForXdp(ifindex_, "xv0")));

  // The address set is replaced.
  auto keys = [&] {
    std::vector<std::array<uint8_t, 16>> v;
    std::array<uint8_t, 16> cur{}, next{};
    bool first = true;
    while (bpf_map_get_next_key(lp.addrs, first ? nullptr : cur.data(), next.data()) == 0) {
      v.push_back(next);
      cur = next;
      first = false;
    }
    std::sort(v.begin(), v.end());
    return v;
  };
  ASSERT_TRUE((*f)->SetAddrs({Ip("10.77.0.1"), Ip("fd00:77::1"), Ip("10.77.0.9")}).ok());
  EXPECT_EQ(keys().size(), 3u);
  ASSERT_TRUE((*f)->SetAddrs({Ip("fd00:77::1"), Ip("10.77.0.1"), Ip("10.77.0.1")}).ok());
  auto k = keys();
  ASSERT_EQ(k.size(), 2u);
  EXPECT_TRUE(std::binary_search(k.begin(), k.end(), Ip("10.77.0.1").b));
  EXPECT_TRUE(std::binary_search(k.begin(), k.end(), Ip("fd00:77::1").b));
  EXPECT_FALSE(std::binary_search(k.begin(), k.end(), Ip("10.77.0.9").b));
  std::vector<wire::IpAddr> many(257);
  for (uint32_t i = 0; i < many.size(); i++) many[i] = wire::IpAddr::FromV4(0x0a000000 + i);
  EXPECT_TRUE(absl::IsInvalidArgument((*f)->SetAddrs(many)));

  const XdpStats s0 = (*f)->Stats();
  // RoCE-looking datagrams to our addresses (xsks_map is empty: the kernel
  // gets them and answers port unreachable).
  Py("import socket\n"
     "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
     "for i in range(5): s.sendto(b\"x\" * 40, (\"10.77.0.1\", 4791))\n"
     "s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)\n"
     "for i in range(3): s6.sendto(b\"y\" * 40, (\"fd00:77::1\", 4791))\n");
  // To the interface's other address, not in the set.
  Py("import socket\n"
     "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
     "for i in range(4): s.sendto(b\"x\" * 40, (\"10.77.0.3\", 4791))\n");
  // Not RoCE: other UDP, TCP.
  Py("import socket\n"
     "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
     "for i in range(2): s.sendto(b\"x\" * 40, (\"10.77.0.1\", 4790))\n"
     "t = socket.socket()\n"
     "t.settimeout(2)\n"
     "print(t.connect_ex((\"10.77.0.1\", 5000)))\n");
  XdpStats s1;
  for (int i = 0; i < 200; i++) {  // generic mode counts synchronously; native via NAPI
    s1 = (*f)->Stats();
    if (s1.to_xsk - s0.to_xsk >= 8 && s1.pass_not_local - s0.pass_not_local >= 4 &&
        s1.pass_not_roce - s0.pass_not_roce >= 3)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(s1.to_xsk - s0.to_xsk, 8u);
  EXPECT_EQ(s1.pass_not_local - s0.pass_not_local, 4u);
  EXPECT_GE(s1.pass_not_roce - s0.pass_not_roce, 3u);  // 2 UDP + SYN (+ ARP, ND, ...)
  // pass_malformed may move: the peer's MLDv2 reports carry a hop-by-hop
  // header (router alert), which the program counts there.

  // Detach removes it (only ours), twice is fine.
  EXPECT_TRUE((*f)->Detach().ok());
  EXPECT_EQ(AttachedId(), 0u);
  EXPECT_TRUE((*f)->Detach().ok());
}

TEST_F(XdpIface, DetachLeavesAnotherProgramAlone) {
  Loaded lp;
  ASSERT_TRUE(lp.ok()) << lp.error;
  const uint32_t mode = AttachProg(lp.prog);
  ASSERT_NE(mode, 0u);
  auto f = XdpFilter::Attach(ifindex_);
  ASSERT_TRUE(f.ok()) << f.status();
  // Someone replaces it (same object file, a new load).
  Loaded other;
  ASSERT_TRUE(other.ok()) << other.error;
  bpf_xdp_attach_opts o{};
  o.sz = sizeof(o);
  o.old_prog_fd = lp.prog;
  ASSERT_EQ(bpf_xdp_attach(ifindex_, other.prog, mode | XDP_FLAGS_REPLACE, &o), 0);
  EXPECT_TRUE((*f)->Detach().ok());
  EXPECT_EQ(AttachedId(), other.ProgId());
}

TEST(XdpHelpers, ProgramPath) {
  const char* old = getenv("SOFT_RNIC_XDP_PROG");
  std::string saved = old ? old : "";
  unsetenv("SOFT_RNIC_XDP_PROG");
  std::string def = XdpProgramPath();
  EXPECT_TRUE(absl::EndsWith(def, "/stack/port/xdp/soft_rnic_xdp.o")) << def;
  EXPECT_EQ(access(def.c_str(), R_OK), 0) << def;
  setenv("SOFT_RNIC_XDP_PROG", "/tmp/other.o", 1);
  EXPECT_EQ(XdpProgramPath(), "/tmp/other.o");
  if (old)
    setenv("SOFT_RNIC_XDP_PROG", saved.c_str(), 1);
  else
    unsetenv("SOFT_RNIC_XDP_PROG");
}

TEST(XdpHelpers, AfXdpSockets) {
  const std::vector<int> before = AfXdpSocketFds();
  int fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0) GTEST_SKIP() << "socket(AF_XDP): " << strerror(errno) << " (needs CAP_NET_RAW)";
  Guard g{[fd] { close(fd); }};
  std::vector<int> after = AfXdpSocketFds();
  EXPECT_EQ(after.size(), before.size() + 1);
  EXPECT_NE(std::find(after.begin(), after.end(), fd), after.end());
  EXPECT_EQ(XskZeroCopy(fd), std::optional<bool>(false));  // not bound: no zero-copy
  int udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(udp, 0);
  Guard g2{[udp] { close(udp); }};
  EXPECT_EQ(XskZeroCopy(udp), std::nullopt);
  after = AfXdpSocketFds();
  EXPECT_EQ(std::find(after.begin(), after.end(), udp), after.end());
}

}  // namespace
}  // namespace roce::port
