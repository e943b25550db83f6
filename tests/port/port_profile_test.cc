// SPDX-License-Identifier: MIT
// Profiles: every file in drivers-cfg/ loads and validates (the physical-NIC
// ones included: they cannot be opened here), overrides from code/flags go
// through the same parsing, and malformed files fail with a message naming
// the file, line or key. Also the rte_flow steering rule a profile produces.
// No EAL needed: rte_cfgfile works without it.
#include <filesystem>
#include <fstream>

#include <absl/strings/match.h>
#include <absl/strings/str_join.h>
#include <gtest/gtest.h>

#include "stack/port/dpdk.h"
#include "stack/port/flow.h"
#include "stack/port/profile.h"
#include "tests/support/test_support.h"

namespace roce::port {
namespace {

using roce::testing::OutputDir;
using roce::testing::SourcePath;

std::vector<std::string> ProfileFiles() {
  std::vector<std::string> v;
  for (const auto& e : std::filesystem::directory_iterator(SourcePath("drivers-cfg")))
    if (e.path().extension() == ".ini") v.push_back(e.path().string());
  std::sort(v.begin(), v.end());
  return v;
}

absl::StatusOr<PortProfile> LoadText(const std::string& name, const std::string& text) {
  const std::string path = OutputDir("port_profile") + "/" + name;
  std::ofstream(path) << text;
  return LoadProfile(path);
}

TEST(Profile, EveryDriversCfgFileLoadsAndValidates) {
  std::vector<std::string> files = ProfileFiles();
  ASSERT_GE(files.size(), 13u);
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    auto p = LoadProfile(f);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_TRUE(ValidateProfile(*p).ok());
    EXPECT_NE(FindDriver(p->driver), nullptr);
    EXPECT_EQ(p->source, f);
    if (EffectiveIdentity(*p) == Identity::kOwn)
      EXPECT_TRUE(p->ipv4.has_value()) << "every profile of its own identity names the stack's IPv4 address";
    if (FindDriver(p->driver)->kind == DriverKind::kPci) {
      EXPECT_FALSE(p->pci.empty());
      EXPECT_TRUE(p->eal.hugepages);
      EalOptions eal = EalOptionsFor(std::vector<PortProfile>{*p});
      ASSERT_EQ(eal.allow.size(), 1u);
      EXPECT_EQ(eal.allow[0].rfind(p->pci, 0), 0u);
      std::string args = absl::StrJoin(EalArgs(eal), " ");
      EXPECT_FALSE(absl::StrContains(args, "--no-pci")) << args;
    }
  }
}

TEST(Profile, ValuesOfTheRingAndAfPacketProfiles) {
  auto r = LoadProfile(SourcePath("drivers-cfg/net_ring.ini"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->driver, "net_ring");
  EXPECT_EQ(r->ring, "roce");
  EXPECT_EQ(r->mtu, 4200);
  EXPECT_EQ(r->ipv4->ToString(), "10.0.0.1/24");
  EXPECT_EQ(r->ipv6->ToString(), "fd00::1/64");
  EXPECT_FALSE(r->eal.hugepages);
  EXPECT_FALSE(r->faults.Any());

  auto a = LoadProfile(SourcePath("drivers-cfg/net_af_packet.ini"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(GetDevarg(a->devargs, "framesz"), "8192");
  EXPECT_FALSE(a->set_mtu);
  EXPECT_EQ(a->tx_udp_checksum, Tristate::kOff);
  EXPECT_GE(a->mbuf_data_room, 8192);

  auto m = LoadProfile(SourcePath("drivers-cfg/mlx5.ini"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->steer_udp_port, 4791);
  EXPECT_EQ(m->rss, Tristate::kOn);
  EXPECT_EQ(m->flow_queues, (std::vector<uint16_t>{0, 1, 2, 3}));
  EXPECT_EQ(m->devargs, "dv_flow_en=1");
}

TEST(Profile, OverridesUseTheSameParser) {
  auto p = LoadProfile(SourcePath("drivers-cfg/net_tap.ini"),
                       std::vector<std::string>{"port.ipv4=10.9.8.7/16", "port.mtu = 1400",
                                                "fault.tx_drop=0.25", "port.capture=/tmp/x.pcap"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->ipv4->ToString(), "10.9.8.7/16");
  EXPECT_EQ(p->mtu, 1400);
  EXPECT_EQ(p->faults.tx.drop, 0.25);
  EXPECT_EQ(p->capture, "/tmp/x.pcap");
  // What --iface does.
  p->devargs = SetDevarg(p->devargs, "iface", "veth7");
  EXPECT_EQ(p->devargs, "iface=veth7,mac=fixed");
  EXPECT_EQ(SetDevarg("", "iface", "x"), "iface=x");
  EXPECT_EQ(GetDevarg("a=1,iface=veth7", "iface"), "veth7");
  // Bad overrides say which key and why.
  auto bad = LoadProfile(SourcePath("drivers-cfg/net_tap.ini"), std::vector<std::string>{"port.mtu=huge"});
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "port.mtu = 'huge'")) << bad.status();
  PortProfile q;
  EXPECT_FALSE(ApplyOverride(&q, "port.nosuchkey=1").ok());
  EXPECT_FALSE(ApplyOverride(&q, "no-equals-sign").ok());
  EXPECT_TRUE(ApplyOverride(&q, "port.ipv6=fd00::5").ok());
  EXPECT_EQ(q.ipv6->prefix_len, 128);
  EXPECT_FALSE(ApplyOverride(&q, "port.ipv4=fd00::5").ok());  // wrong family
}

TEST(Profile, InterfaceAndAddressFlags) {
  struct Case {
    const char* file;
    const char* iface;
    const char* devargs;  // expected
  } cases[] = {
      {"net_tap.ini", "rnic7", "iface=rnic7,mac=fixed"},
      {"net_af_packet.ini", "veth3", "iface=veth3,framesz=8192,blocksz=8192,framecnt=512,qpairs=1"},
      {"net_pcap_file.ini", "veth4", "iface=veth4"},
      {"net_pcap_live.ini", "veth5", "iface=veth5"},
      {"vhost.ini", "/tmp/v.sock", "iface=/tmp/v.sock,queues=1"},
      {"virtio_user.ini", "/tmp/v.sock", "path=/tmp/v.sock,queues=1"},
      {"memif_client.ini", "/tmp/m.sock", "role=client,id=0,socket=/tmp/m.sock,socket-abstract=no,bsize=2048"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    auto p = LoadProfile(SourcePath(std::string("drivers-cfg/") + c.file));
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_TRUE(SetInterface(&*p, c.iface).ok());
    EXPECT_EQ(p->devargs, c.devargs);
    EXPECT_TRUE(ValidateProfile(*p).ok());
  }
  auto m = LoadProfile(SourcePath("drivers-cfg/mlx5.ini"));
  ASSERT_TRUE(SetInterface(&*m, "0000:5e:00.1").ok());
  EXPECT_EQ(m->pci, "0000:5e:00.1");
  auto r = LoadProfile(SourcePath("drivers-cfg/net_ring.ini"));
  ASSERT_TRUE(SetInterface(&*r, "pair7").ok());
  EXPECT_EQ(r->ring, "pair7");
  ASSERT_TRUE(SetAddress(&*r, "10.7.0.1/16").ok());
  ASSERT_TRUE(SetAddress(&*r, "fd07::1/64").ok());
  EXPECT_EQ(r->ipv4->ToString(), "10.7.0.1/16");
  EXPECT_EQ(r->ipv6->ToString(), "fd07::1/64");
  EXPECT_FALSE(SetAddress(&*r, "10.7.0.300").ok());
}

TEST(Profile, MalformedFilesFailClearly) {
  struct Case {
    const char* name;
    const char* text;
    const char* message;
  } cases[] = {
      {"noeq.ini", "[port]\ndriver net_tap\n", "noeq.ini:2: expected 'key = value'"},
      {"nosection.ini", "driver = net_tap\n[port]\n", "nosection.ini:1: 'driver = net_tap' comes before any [section]"},
      {"bracket.ini", "[port\ndriver = net_tap\n", "bracket.ini:1: section header '[port' lacks ']'"},
      {"unknownkey.ini", "[port]\ndriver = net_tap\nmtuu = 1500\n", "[port] mtuu: unknown key"},
      {"unknownsec.ini", "[ports]\ndriver = net_tap\n", "unknown section [ports]"},
      {"dupkey.ini", "[port]\nmtu = 1500\nmtu = 9000\n", "[port] mtu appears twice"},
      {"dupsec.ini", "[port]\nmtu = 1500\n[port]\nmtu = 9000\n", "section [port] appears twice"},
      {"badnum.ini", "[port]\nrx_queues = many\n", "port.rx_queues = 'many': expected an integer in [1, 64]"},
      {"baddrv.ini", "[port]\ndriver = net_foo\n", "port.driver = 'net_foo': expected one of net_ring"},
      {"badmac.ini", "[port]\nmac = 02:00:00:00:00\n", "port.mac"},
      {"badprob.ini", "[fault]\nrx_drop = 1.5\n", "fault.rx_drop = '1.5': expected a probability"},
      {"nopci.ini", "[port]\ndriver = mlx5\n", "driver mlx5 needs port.pci"},
      {"badpci.ini", "[port]\ndriver = ice\npci = 3b:00\n", "is not a PCI address"},
      {"isolate.ini", "[flow]\nisolate = yes\n", "flow.isolate without flow.steer_udp_port"},
      {"smallpool.ini", "[port]\nmbufs = 1000\nrx_desc = 1024\n", "port.mbufs 1000 is too small"},
      {"queues.ini", "[port]\nrx_queues = 2\ntx_queues = 2\n[flow]\nqueues = 0-2\n", "names queue 2"},
      {"v6mtu.ini", "[port]\nmtu = 1000\nipv6 = fd00::1/64\n", "below the IPv6 minimum"},
      {"empty.ini", "[port]\nmtu =\n", "port.mtu = '': expected an integer"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto p = LoadText(c.name, c.text);
    ASSERT_FALSE(p.ok());
    EXPECT_TRUE(absl::StrContains(p.status().message(), c.message)) << p.status();
  }
  EXPECT_EQ(LoadProfile("/nonexistent/x.ini").status().code(), absl::StatusCode::kNotFound);
  // Comments, blank lines, empty optional values and inline comments are fine.
  auto ok = LoadText("ok.ini", "# c\n\n[port]  \n  mtu = 9000   # jumbo\ncapture =\nmac = 02:00:00:00:00:07\n");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->mtu, 9000);
  EXPECT_EQ(ok->capture, "");
  EXPECT_EQ(ok->mac->ToString(), "02:00:00:00:00:07");
}

TEST(Profile, IdentityAndTheAfXdpProfile) {
  auto x = LoadProfile(SourcePath("drivers-cfg/net_af_xdp.ini"));
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_EQ(x->driver, "net_af_xdp");
  EXPECT_EQ(EffectiveIdentity(*x), Identity::kKernel);
  EXPECT_FALSE(x->mtu_given) << "the interface's MTU unless the profile sets one";
  EXPECT_FALSE(x->rx_queues_given) << "a socket per channel unless the profile sets the queues";
  EXPECT_EQ(KernelInterface(*x), "eth0");
  // auto: kernel for af_xdp only; own for the others.
  auto tap = LoadProfile(SourcePath("drivers-cfg/net_tap.ini"));
  ASSERT_TRUE(tap.ok());
  EXPECT_EQ(EffectiveIdentity(*tap), Identity::kOwn);
  EXPECT_EQ(KernelInterface(*tap), "rnic0");
  // identity = kernel needs af_xdp; af_xdp needs iface= and takes no xdp_prog.
  auto bad = LoadProfile(SourcePath("drivers-cfg/net_tap.ini"), std::vector<std::string>{"port.identity=kernel"});
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "needs driver net_af_xdp")) << bad.status();
  EXPECT_FALSE(LoadProfile(SourcePath("drivers-cfg/net_tap.ini"), std::vector<std::string>{"port.identity=maybe"}).ok());
  auto noif = LoadProfile(SourcePath("drivers-cfg/net_af_xdp.ini"), std::vector<std::string>{"port.devargs=start_queue=0"});
  ASSERT_FALSE(noif.ok());
  EXPECT_TRUE(absl::StrContains(noif.status().message(), "iface=")) << noif.status();
  auto prog = LoadProfile(SourcePath("drivers-cfg/net_af_xdp.ini"),
                          std::vector<std::string>{"port.devargs=iface=veth0,xdp_prog=/tmp/x.o"});
  ASSERT_FALSE(prog.ok());
  EXPECT_TRUE(absl::StrContains(prog.status().message(), "xdp_prog")) << prog.status();
  auto own = LoadProfile(SourcePath("drivers-cfg/net_af_xdp.ini"),
                         std::vector<std::string>{"port.identity=own", "port.ipv4=10.9.0.1/24", "port.mtu=1400"});
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(EffectiveIdentity(*own), Identity::kOwn);
  EXPECT_TRUE(own->mtu_given);
}

TEST(Profile, AnyPciDriverNameOpens) {
  // The PCI driver name is a label: the EAL probes whatever PMD claims the device.
  for (const char* name : {"ena", "gve", "mana", "netvsc", "igb", "e1000", "mlx5", "nfp", "octeontx2"}) {
    SCOPED_TRACE(name);
    const DriverInfo* d = FindDriver(name);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->kind, DriverKind::kPci);
    PortProfile p;
    ASSERT_TRUE(SetProfileKey(&p, "port.driver", name).ok());
    ASSERT_TRUE(SetProfileKey(&p, "port.pci", "0000:00:05.0").ok());
    EXPECT_TRUE(ValidateProfile(p).ok()) << ValidateProfile(p);
  }
  // Virtual devices stay a closed list: a typo is an error naming the known ones.
  PortProfile p;
  absl::Status s = SetProfileKey(&p, "port.driver", "net_tapp");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "net_af_xdp")) << s;
  EXPECT_FALSE(SetProfileKey(&p, "port.driver", "bad name").ok());
  EXPECT_FALSE(SetProfileKey(&p, "port.driver", "").ok());
}

TEST(Profile, EveryKeyIsDocumentedInTheReadme) {
  std::ifstream in(SourcePath("drivers-cfg/README.md"));
  std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const ProfileKey& k : ProfileKeys())
    EXPECT_TRUE(absl::StrContains(readme, absl::StrCat("`", k.key, "`"))) << k.section << "." << k.key;
  for (const std::string& f : ProfileFiles())
    EXPECT_TRUE(absl::StrContains(readme, std::filesystem::path(f).filename().string())) << f;
}

TEST(Flow, SteeringRulesOfAProfile) {
  auto m = LoadProfile(SourcePath("drivers-cfg/mlx5.ini"));
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<SteeringRule> rules = SteeringRules(*m, /*rss=*/true);
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(DescribeRule(rules[0]),
            "flow create 0 ingress pattern eth / ipv4 / udp dst is 4791 / end actions rss queues 0 1 2 3 end "
            "types ipv4-udp end / end");
  EXPECT_EQ(DescribeRule(rules[1], 1),
            "flow create 1 ingress pattern eth / ipv6 / udp dst is 4791 / end actions rss queues 0 1 2 3 end "
            "types ipv6-udp end / end");
  auto spec = BuildFlowSpec(rules[0]);
  EXPECT_EQ(FlowSpecItemTypes(*spec), (std::vector<int>{RTE_FLOW_ITEM_TYPE_ETH, RTE_FLOW_ITEM_TYPE_IPV4,
                                                        RTE_FLOW_ITEM_TYPE_UDP, RTE_FLOW_ITEM_TYPE_END}));
  EXPECT_EQ(FlowSpecActionTypes(*spec), (std::vector<int>{RTE_FLOW_ACTION_TYPE_RSS, RTE_FLOW_ACTION_TYPE_END}));
  EXPECT_EQ(FlowSpecUdpDst(*spec), 4791);
  // Without RSS (one queue, or a NIC without it): one QUEUE action.
  std::vector<SteeringRule> single = SteeringRules(*m, /*rss=*/false);
  EXPECT_EQ(DescribeRule(single[0]),
            "flow create 0 ingress pattern eth / ipv4 / udp dst is 4791 / end actions queue index 0 / end");
  EXPECT_EQ(FlowSpecActionTypes(*BuildFlowSpec(single[1])),
            (std::vector<int>{RTE_FLOW_ACTION_TYPE_QUEUE, RTE_FLOW_ACTION_TYPE_END}));
  PortProfile none;
  EXPECT_TRUE(SteeringRules(none, true).empty());
}

}  // namespace
}  // namespace roce::port
