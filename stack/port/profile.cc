// SPDX-License-Identifier: MIT
#include "stack/port/profile.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <set>

#include <absl/strings/ascii.h>
#include <absl/strings/match.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/strings/str_split.h>
#include <absl/strings/strip.h>

#include "stack/port/dpdk.h"

namespace roce::port {
namespace {

constexpr DriverInfo kDrivers[] = {
    {"net_ring", DriverKind::kRing, "in-process ring pair or loopback (CI, benchmarks)"},
    {"net_tap", DriverKind::kVdev, "kernel TAP interface (MTU <= 1500)"},
    {"net_pcap", DriverKind::kVdev, "pcap files (rx_pcap/tx_pcap) or a live interface (iface)"},
    {"net_af_packet", DriverKind::kVdev, "AF_PACKET socket on a kernel interface (veth)"},
    {"net_memif", DriverKind::kVdev, "shared-memory packet interface between processes"},
    {"net_vhost", DriverKind::kVdev, "vhost-user backend (server side of virtio_user)"},
    {"net_virtio_user", DriverKind::kVdev, "virtio-user frontend to a vhost-user socket"},
    {"net_af_xdp", DriverKind::kVdev, "AF_XDP socket on a kernel interface"},
    {"net_null", DriverKind::kVdev, "sink/source for benchmarks"},
    // PCI drivers with a description; any other name that is not net_* is
    // taken as a PCI driver too (FindDriver).
    {"mlx5", DriverKind::kPci, "NVIDIA ConnectX-4..7 / BlueField (bifurcated, kernel keeps the netdev)"},
    {"ice", DriverKind::kPci, "Intel E810"},
    {"i40e", DriverKind::kPci, "Intel X710/XL710/XXV710"},
    {"ixgbe", DriverKind::kPci, "Intel 82599/X540/X550"},
    {"virtio", DriverKind::kPci, "virtio-net PCI device of a VM (vfio-pci bound)"},
    {"bnxt", DriverKind::kPci, "Broadcom NetXtreme-E"},
    {"ena", DriverKind::kPci, "Amazon ENA (vfio-pci)"},
    {"gve", DriverKind::kPci, "Google gVNIC (vfio-pci)"},
    {"mana", DriverKind::kPci, "Microsoft Azure MANA (bifurcated)"},
    {"netvsc", DriverKind::kPci, "Hyper-V / Azure synthetic NIC (VMBus, uio_hv_generic)"},
};
// Any other PCI PMD.
constexpr DriverInfo kOtherPci = {"pci", DriverKind::kPci, "a PCI NIC probed by the EAL"};

constexpr size_t kMaxLine = CFG_NAME_LEN + CFG_VALUE_LEN + 2;

using Setter = std::function<absl::Status(PortProfile&, const std::string&)>;

struct KeyDef {
  ProfileKey doc;
  Setter set;
};

absl::Status Bad(const std::string& key, const std::string& value, absl::string_view want) {
  return absl::InvalidArgumentError(absl::StrCat(key, " = '", value, "': expected ", want));
}

absl::Status ParseBool(const std::string& key, const std::string& v, bool* out) {
  std::string l = absl::AsciiStrToLower(v);
  if (l == "yes" || l == "true" || l == "on" || l == "1") {
    *out = true;
  } else if (l == "no" || l == "false" || l == "off" || l == "0") {
    *out = false;
  } else {
    return Bad(key, v, "yes or no");
  }
  return absl::OkStatus();
}

absl::Status ParseTristate(const std::string& key, const std::string& v, Tristate* out) {
  std::string l = absl::AsciiStrToLower(v);
  if (l == "auto") {
    *out = Tristate::kAuto;
    return absl::OkStatus();
  }
  bool b;
  if (!ParseBool(key, v, &b).ok()) return Bad(key, v, "auto, on or off");
  *out = b ? Tristate::kOn : Tristate::kOff;
  return absl::OkStatus();
}

template <typename T>
absl::Status ParseUint(const std::string& key, const std::string& v, uint64_t lo, uint64_t hi, T* out) {
  uint64_t x;
  if (!absl::SimpleAtoi(v, &x) || x < lo || x > hi)
    return Bad(key, v, absl::StrCat("an integer in [", lo, ", ", hi, "]"));
  *out = static_cast<T>(x);
  return absl::OkStatus();
}

absl::Status ParseProb(const std::string& key, const std::string& v, double* out) {
  double x;
  if (!absl::SimpleAtod(v, &x) || !(x >= 0 && x <= 1)) return Bad(key, v, "a probability in [0, 1]");
  *out = x;
  return absl::OkStatus();
}

absl::Status ParseQueues(const std::string& key, const std::string& v, std::vector<uint16_t>* out) {
  out->clear();
  if (v.empty()) return absl::OkStatus();
  for (absl::string_view part : absl::StrSplit(v, ',')) {
    part = absl::StripAsciiWhitespace(part);
    std::pair<absl::string_view, absl::string_view> r = absl::StrSplit(part, absl::MaxSplits('-', 1));
    uint32_t lo, hi;
    if (!absl::SimpleAtoi(r.first, &lo)) return Bad(key, v, "queue ids like 0,1,2 or 0-3");
    hi = lo;
    if (!r.second.empty() && !absl::SimpleAtoi(r.second, &hi))
      return Bad(key, v, "queue ids like 0,1,2 or 0-3");
    if (hi < lo || hi > 1023) return Bad(key, v, "queue ids like 0,1,2 or 0-3");
    for (uint32_t q = lo; q <= hi; q++) out->push_back(static_cast<uint16_t>(q));
  }
  return absl::OkStatus();
}

// The key table: every key a profile may hold, its documentation and parser.
const std::vector<KeyDef>& Keys() {
  static const std::vector<KeyDef>* keys = new std::vector<KeyDef>{
      // [eal]
      {{"eal", "hugepages", "yes: --in-memory on mounted hugetlbfs; no (default): --no-huge --no-shconf"},
       [](PortProfile& p, const std::string& v) { return ParseBool("eal.hugepages", v, &p.eal.hugepages); }},
      {{"eal", "memory_mb", "-m for --no-huge (default 256)"},
       [](PortProfile& p, const std::string& v) { return ParseUint("eal.memory_mb", v, 16, 65536, &p.eal.memory_mb); }},
      {{"eal", "lcores", "-l (default 0)"},
       [](PortProfile& p, const std::string& v) {
         if (v.empty()) return Bad("eal.lcores", v, "a core list");
         p.eal.lcores = v;
         return absl::OkStatus();
       }},
      {{"eal", "log_level", "--log-level (default error)"},
       [](PortProfile& p, const std::string& v) {
         if (v.empty()) return Bad("eal.log_level", v, "a log level");
         p.eal.log_level = v;
         return absl::OkStatus();
       }},
      {{"eal", "telemetry", "no: --no-telemetry (default yes)"},
       [](PortProfile& p, const std::string& v) { return ParseBool("eal.telemetry", v, &p.eal.telemetry); }},
      {{"eal", "args", "extra EAL arguments, space separated (e.g. --single-file-segments)"},
       [](PortProfile& p, const std::string& v) {
         p.eal.extra = absl::StrSplit(v, absl::ByAnyChar(" \t"), absl::SkipEmpty());
         return absl::OkStatus();
       }},
      // [port]
      {{"port", "driver", "DPDK driver: net_ring, net_tap, net_pcap, net_af_packet, net_memif, net_vhost, "
                          "net_virtio_user, net_af_xdp, net_null, or any PCI PMD (mlx5, ice, i40e, ixgbe, "
                          "virtio, bnxt, ena, gve, mana, netvsc, ...) with port.pci"},
       [](PortProfile& p, const std::string& v) {
         if (!FindDriver(v)) {
           std::vector<std::string> names;
           for (auto& d : kDrivers)
             if (d.kind != DriverKind::kPci) names.push_back(d.name);
           return Bad("port.driver", v,
                      absl::StrCat("one of ", absl::StrJoin(names, ", "), ", or a PCI driver name"));
         }
         p.driver = v;
         return absl::OkStatus();
       }},
      {{"port", "name", "ethdev/vdev name (must start with the driver name); default <driver>_r<N>"},
       [](PortProfile& p, const std::string& v) { p.name = v; return absl::OkStatus(); }},
      {{"port", "devargs", "driver arguments, as for --vdev (after the name) or -a (after the PCI address)"},
       [](PortProfile& p, const std::string& v) { p.devargs = v; return absl::OkStatus(); }},
      {{"port", "pci", "PCI address of a physical NIC (0000:3b:00.0)"},
       [](PortProfile& p, const std::string& v) { p.pci = v; return absl::OkStatus(); }},
      {{"port", "rx_queues", "RX queues (default 1)"},
       [](PortProfile& p, const std::string& v) {
         p.rx_queues_given = true;
         return ParseUint("port.rx_queues", v, 1, 64, &p.rx_queues);
       }},
      {{"port", "tx_queues", "TX queues (default 1)"},
       [](PortProfile& p, const std::string& v) { return ParseUint("port.tx_queues", v, 1, 64, &p.tx_queues); }},
      {{"port", "rx_desc", "RX descriptors per queue (default 1024; the driver may adjust)"},
       [](PortProfile& p, const std::string& v) { return ParseUint("port.rx_desc", v, 16, 32768, &p.rx_desc); }},
      {{"port", "tx_desc", "TX descriptors per queue (default 1024; the driver may adjust)"},
       [](PortProfile& p, const std::string& v) { return ParseUint("port.tx_desc", v, 16, 32768, &p.tx_desc); }},
      {{"port", "mtu", "IP MTU (default 1500; identity = kernel: the interface's); frames up to mtu + 18 "
                       "bytes. On a kernel interface it may not exceed the interface's MTU"},
       [](PortProfile& p, const std::string& v) {
         p.mtu_given = true;
         return ParseUint("port.mtu", v, 68, 9600, &p.mtu);
       }},
      {{"port", "identity", "auto (kernel for net_af_xdp, else own), kernel (the interface's addresses, MAC, "
                            "MTU, routes and neighbours through netlink), own (the profile's, own ARP/ND)"},
       [](PortProfile& p, const std::string& v) {
         const std::string l = absl::AsciiStrToLower(v);
         if (l == "auto") p.identity = Identity::kAuto;
         else if (l == "kernel") p.identity = Identity::kKernel;
         else if (l == "own") p.identity = Identity::kOwn;
         else return Bad("port.identity", v, "auto, kernel or own");
         return absl::OkStatus();
       }},
      {{"port", "set_mtu", "program the MTU on the device (default yes; af_packet: no)"},
       [](PortProfile& p, const std::string& v) { return ParseBool("port.set_mtu", v, &p.set_mtu); }},
      {{"port", "mac", "source MAC (default: the device's)"},
       [](PortProfile& p, const std::string& v) {
         if (v.empty()) {
           p.mac.reset();
           return absl::OkStatus();
         }
         wire::MacAddr m;
         if (!wire::MacAddr::FromString(v, &m)) return Bad("port.mac", v, "a MAC address like 02:00:00:00:00:01");
         p.mac = m;
         return absl::OkStatus();
       }},
      {{"port", "ipv4", "the stack's IPv4 address with prefix (10.0.0.1/24)"},
       [](PortProfile& p, const std::string& v) {
         if (v.empty()) {
           p.ipv4.reset();
           return absl::OkStatus();
         }
         auto a = ParseIpPrefix(v);
         if (!a.ok() || !a->addr.IsV4()) return Bad("port.ipv4", v, "an IPv4 address like 10.0.0.1/24");
         p.ipv4 = *a;
         return absl::OkStatus();
       }},
      {{"port", "ipv6", "the stack's IPv6 address with prefix (fd00::1/64)"},
       [](PortProfile& p, const std::string& v) {
         if (v.empty()) {
           p.ipv6.reset();
           return absl::OkStatus();
         }
         auto a = ParseIpPrefix(v);
         if (!a.ok() || a->addr.IsV4()) return Bad("port.ipv6", v, "an IPv6 address like fd00::1/64");
         p.ipv6 = *a;
         return absl::OkStatus();
       }},
      {{"port", "capture", "pcap file receiving every frame sent and received (empty: off)"},
       [](PortProfile& p, const std::string& v) { p.capture = v; return absl::OkStatus(); }},
      {{"port", "promiscuous", "promiscuous mode (default no)"},
       [](PortProfile& p, const std::string& v) { return ParseBool("port.promiscuous", v, &p.promiscuous); }},
      {{"port", "mbufs", "mbufs in the port's pool (default 8191)"},
       [](PortProfile& p, const std::string& v) { return ParseUint("port.mbufs", v, 255, 4194303, &p.mbufs); }},
      {{"port", "mbuf_data_room", "data bytes per mbuf, headroom excluded (default 2048)"},
       [](PortProfile& p, const std::string& v) {
         return ParseUint("port.mbuf_data_room", v, 256, 65535 - RTE_PKTMBUF_HEADROOM, &p.mbuf_data_room);
       }},
      {{"port", "mbuf_cache", "per-lcore mempool cache (default 256)"},
       [](PortProfile& p, const std::string& v) {
         return ParseUint("port.mbuf_cache", v, 0, RTE_MEMPOOL_CACHE_MAX_SIZE, &p.mbuf_cache);
       }},
      {{"port", "rx_copy",
        "copy every received frame into the port's pool as a NIC's scatter DMA lays it out, mbuf_data_room "
        "bytes a segment (default no; for measuring and testing a NIC's receive layout on a ring pair or vdev)"},
       [](PortProfile& p, const std::string& v) { return ParseBool("port.rx_copy", v, &p.rx_copy); }},
      {{"port", "tap_rx_signal",
        "net_tap: read the tap only when its signal says a frame came, as the PMD does (default no: every "
        "burst reads it, and no signal is sent: a signal and the interrupt that delivers it cost more than "
        "the read)"},
       [](PortProfile& p, const std::string& v) { return ParseBool("port.tap_rx_signal", v, &p.tap_rx_signal); }},
      {{"port", "rx_interrupt",
        "an fd per RX queue that wakes an idle progress thread when a frame arrives: auto (net_tap, "
        "net_memif), on (required), off (the thread naps for up to its idle_sleep_max between looks)"},
       [](PortProfile& p, const std::string& v) { return ParseTristate("port.rx_interrupt", v, &p.rx_interrupt); }},
      {{"port", "tx_backlog", "software TX queue for frames the device did not take (default 256; 0: drop them)"},
       [](PortProfile& p, const std::string& v) { return ParseUint("port.tx_backlog", v, 0, 65536, &p.tx_backlog); }},
      {{"port", "ring", "net_ring: name of the ring set both sides of a pair share, <= 12 characters (default roce)"},
       [](PortProfile& p, const std::string& v) { p.ring = v; return absl::OkStatus(); }},
      {{"port", "ring_side", "net_ring: a, b (the other end of the pair) or loop (rx = tx)"},
       [](PortProfile& p, const std::string& v) {
         if (v == "a") p.ring_side = RingSide::kA;
         else if (v == "b") p.ring_side = RingSide::kB;
         else if (v == "loop") p.ring_side = RingSide::kLoop;
         else return Bad("port.ring_side", v, "a, b or loop");
         return absl::OkStatus();
       }},
      {{"port", "ring_size", "net_ring: ring entries, a power of two (default 1024)"},
       [](PortProfile& p, const std::string& v) { return ParseUint("port.ring_size", v, 64, 65536, &p.ring_size); }},
      // [offload]
      {{"offload", "tx_ipv4_checksum", "IPv4 header checksum on TX: auto (if offered), on (required), off"},
       [](PortProfile& p, const std::string& v) { return ParseTristate("offload.tx_ipv4_checksum", v, &p.tx_ipv4_checksum); }},
      {{"offload", "tx_udp_checksum", "UDP checksum on TX: auto, on, off"},
       [](PortProfile& p, const std::string& v) { return ParseTristate("offload.tx_udp_checksum", v, &p.tx_udp_checksum); }},
      {{"offload", "tx_multiseg", "multi-segment TX: auto, on, off (off: chains are linearized)"},
       [](PortProfile& p, const std::string& v) { return ParseTristate("offload.tx_multiseg", v, &p.tx_multiseg); }},
      {{"offload", "rx_checksum", "IPv4/UDP checksum check on RX: auto, on, off"},
       [](PortProfile& p, const std::string& v) { return ParseTristate("offload.rx_checksum", v, &p.rx_checksum); }},
      {{"offload", "rx_scatter", "chained RX for frames above one mbuf: auto, on, off"},
       [](PortProfile& p, const std::string& v) { return ParseTristate("offload.rx_scatter", v, &p.rx_scatter); }},
      // [flow]
      {{"flow", "steer_udp_port", "rte_flow rule: UDP destination port to the stack's queues (4791; 0: none)"},
       [](PortProfile& p, const std::string& v) { return ParseUint("flow.steer_udp_port", v, 0, 65535, &p.steer_udp_port); }},
      {{"flow", "rss", "RSS over the flow queues on IP addresses + UDP ports: auto, on, off"},
       [](PortProfile& p, const std::string& v) { return ParseTristate("flow.rss", v, &p.rss); }},
      {{"flow", "isolate", "rte_flow isolated mode: only matched traffic reaches DPDK (default no)"},
       [](PortProfile& p, const std::string& v) { return ParseBool("flow.isolate", v, &p.isolate); }},
      {{"flow", "queues", "RX queues the rule spreads over, e.g. 0-3 (default: all)"},
       [](PortProfile& p, const std::string& v) { return ParseQueues("flow.queues", v, &p.flow_queues); }},
      // [fault]
      {{"fault", "seed", "seed of the fault injection (default 1)"},
       [](PortProfile& p, const std::string& v) {
         return ParseUint("fault.seed", v, 0, UINT64_MAX, &p.faults.seed);
       }},
      {{"fault", "reorder_hold", "burst calls a held packet waits for a successor (default 1)"},
       [](PortProfile& p, const std::string& v) {
         return ParseUint("fault.reorder_hold", v, 1, 1000000, &p.faults.reorder_hold);
       }},
      {{"fault", "rx_drop", "probability an RX frame is dropped"},
       [](PortProfile& p, const std::string& v) { return ParseProb("fault.rx_drop", v, &p.faults.rx.drop); }},
      {{"fault", "rx_duplicate", "probability an RX frame is delivered twice"},
       [](PortProfile& p, const std::string& v) { return ParseProb("fault.rx_duplicate", v, &p.faults.rx.duplicate); }},
      {{"fault", "rx_reorder", "probability an RX frame is delivered after its successor"},
       [](PortProfile& p, const std::string& v) { return ParseProb("fault.rx_reorder", v, &p.faults.rx.reorder); }},
      {{"fault", "rx_corrupt", "probability one random bit of an RX frame is flipped"},
       [](PortProfile& p, const std::string& v) { return ParseProb("fault.rx_corrupt", v, &p.faults.rx.corrupt); }},
      {{"fault", "tx_drop", "probability a TX frame is dropped"},
       [](PortProfile& p, const std::string& v) { return ParseProb("fault.tx_drop", v, &p.faults.tx.drop); }},
      {{"fault", "tx_duplicate", "probability a TX frame is sent twice"},
       [](PortProfile& p, const std::string& v) { return ParseProb("fault.tx_duplicate", v, &p.faults.tx.duplicate); }},
      {{"fault", "tx_reorder", "probability a TX frame is sent after its successor"},
       [](PortProfile& p, const std::string& v) { return ParseProb("fault.tx_reorder", v, &p.faults.tx.reorder); }},
      {{"fault", "tx_corrupt", "probability one random bit of a TX frame is flipped"},
       [](PortProfile& p, const std::string& v) { return ParseProb("fault.tx_corrupt", v, &p.faults.tx.corrupt); }},
  };
  return *keys;
}

const KeyDef* FindKey(absl::string_view section, absl::string_view key) {
  for (const KeyDef& k : Keys())
    if (section == k.doc.section && key == k.doc.key) return &k;
  return nullptr;
}

absl::Status WithSource(const absl::Status& s, const std::string& where) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(where, ": ", s.message()));
}

// What rte_cfgfile cannot report: lines it would skip silently (no '='),
// entries before any section, names or values it would truncate.
absl::Status Lint(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::string line;
  int lineno = 0;
  bool in_section = false;
  while (std::getline(in, line)) {
    lineno++;
    const std::string where = absl::StrCat(path, ":", lineno);
    if (line.size() > kMaxLine) return absl::InvalidArgumentError(absl::StrCat(where, ": line too long"));
    size_t hash = line.find('#');
    while (hash != std::string::npos && hash > 0 && line[hash - 1] == '\\') hash = line.find('#', hash + 1);
    absl::string_view l = absl::StripAsciiWhitespace(absl::string_view(line).substr(0, hash));
    if (l.empty()) continue;
    if (l.front() == '[') {
      if (l.back() != ']')
        return absl::InvalidArgumentError(absl::StrCat(where, ": section header '", l, "' lacks ']'"));
      in_section = true;
      continue;
    }
    size_t eq = l.find('=');
    if (eq == absl::string_view::npos)
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": expected 'key = value' or '[section]', got '", l, "'"));
    if (!in_section)
      return absl::InvalidArgumentError(absl::StrCat(where, ": '", l, "' comes before any [section]"));
    absl::string_view key = absl::StripAsciiWhitespace(l.substr(0, eq));
    absl::string_view value = absl::StripAsciiWhitespace(l.substr(eq + 1));
    if (key.empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": empty key"));
    if (key.size() >= CFG_NAME_LEN || value.size() >= CFG_VALUE_LEN)
      return absl::InvalidArgumentError(absl::StrCat(where, ": key or value too long"));
  }
  return absl::OkStatus();
}

bool ValidPci(const std::string& s) {
  // [DDDD:]BB:DD.F, hex digits.
  unsigned d, b, dv, f;
  char tail;
  if (std::sscanf(s.c_str(), "%x:%x:%x.%x%c", &d, &b, &dv, &f, &tail) == 4) return d <= 0xffff && b <= 0xff && dv <= 0x1f && f <= 7;
  if (std::sscanf(s.c_str(), "%x:%x.%x%c", &b, &dv, &f, &tail) == 3) return b <= 0xff && dv <= 0x1f && f <= 7;
  return false;
}

}  // namespace

std::span<const DriverInfo> KnownDrivers() { return kDrivers; }

const DriverInfo* FindDriver(absl::string_view name) {
  for (const DriverInfo& d : kDrivers)
    if (name == d.name) return &d;
  // A PCI PMD's name: letters, digits, '_' (not a vdev's net_ prefix).
  if (name.empty() || name.size() > 32 || absl::StartsWith(name, "net_")) return nullptr;
  for (char c : name)
    if (!absl::ascii_isalnum(c) && c != '_') return nullptr;
  return &kOtherPci;
}

Identity EffectiveIdentity(const PortProfile& p) {
  if (p.identity != Identity::kAuto) return p.identity;
  return p.driver == "net_af_xdp" ? Identity::kKernel : Identity::kOwn;
}

std::string KernelInterface(const PortProfile& p) {
  if (p.driver == "net_af_xdp" || p.driver == "net_af_packet" || p.driver == "net_tap" || p.driver == "net_pcap")
    return GetDevarg(p.devargs, "iface");
  return "";
}

std::string IpPrefix::ToString() const { return absl::StrCat(addr.ToString(), "/", prefix_len); }

absl::StatusOr<IpPrefix> ParseIpPrefix(absl::string_view s) {
  std::pair<std::string, std::string> parts = absl::StrSplit(s, absl::MaxSplits('/', 1));
  IpPrefix p;
  if (!wire::IpAddr::FromString(parts.first, &p.addr))
    return absl::InvalidArgumentError(absl::StrCat("bad IP address '", s, "'"));
  const uint32_t max = p.addr.IsV4() ? 32 : 128;
  uint32_t len = max;
  if (!parts.second.empty() && (!absl::SimpleAtoi(parts.second, &len) || len > max))
    return absl::InvalidArgumentError(absl::StrCat("bad prefix length in '", s, "'"));
  p.prefix_len = static_cast<uint8_t>(len);
  return p;
}

std::span<const ProfileKey> ProfileKeys() {
  static const std::vector<ProfileKey>* docs = [] {
    auto* v = new std::vector<ProfileKey>();
    for (const KeyDef& k : Keys()) v->push_back(k.doc);
    return v;
  }();
  return *docs;
}

absl::Status SetProfileKey(PortProfile* p, absl::string_view section_dot_key, absl::string_view value) {
  std::pair<absl::string_view, absl::string_view> sk = absl::StrSplit(section_dot_key, absl::MaxSplits('.', 1));
  const KeyDef* k = FindKey(sk.first, sk.second);
  if (!k) return absl::InvalidArgumentError(absl::StrCat("unknown profile key '", section_dot_key, "'"));
  return k->set(*p, std::string(absl::StripAsciiWhitespace(value)));
}

absl::Status ApplyOverride(PortProfile* p, absl::string_view assignment) {
  size_t eq = assignment.find('=');
  if (eq == absl::string_view::npos)
    return absl::InvalidArgumentError(absl::StrCat("override '", assignment, "' is not section.key=value"));
  return SetProfileKey(p, absl::StripAsciiWhitespace(assignment.substr(0, eq)), assignment.substr(eq + 1));
}

absl::StatusOr<PortProfile> LoadProfile(const std::string& path, std::span<const std::string> overrides) {
  if (absl::Status s = Lint(path); !s.ok()) return s;
  rte_cfgfile_parameters params{};
  params.comment_character = '#';
  rte_cfgfile* cfg = rte_cfgfile_load_with_params(path.c_str(), CFG_FLAG_EMPTY_VALUES, &params);
  if (!cfg) return absl::InvalidArgumentError(absl::StrCat(path, ": rte_cfgfile_load failed"));
  PortProfile p;
  p.source = path;
  absl::Status status = absl::OkStatus();
  const int nsec = rte_cfgfile_num_sections(cfg, nullptr, 0);
  std::set<std::string> seen_sections;
  for (int i = 0; i < nsec && status.ok(); i++) {
    char section[CFG_NAME_LEN];
    const int n = rte_cfgfile_section_num_entries_by_index(cfg, section, i);
    if (!seen_sections.insert(section).second) {
      status = absl::InvalidArgumentError(absl::StrCat(path, ": section [", section, "] appears twice"));
      break;
    }
    bool known_section = false;
    for (const KeyDef& k : Keys()) known_section |= absl::string_view(section) == k.doc.section;
    if (!known_section) {
      status = absl::InvalidArgumentError(
          absl::StrCat(path, ": unknown section [", section, "] (known: eal, port, offload, flow, fault)"));
      break;
    }
    std::vector<rte_cfgfile_entry> entries(static_cast<size_t>(std::max(n, 0)));
    rte_cfgfile_section_entries_by_index(cfg, i, section, entries.data(), n);
    std::set<std::string> seen_keys;
    for (const rte_cfgfile_entry& e : entries) {
      const std::string where = absl::StrCat(path, ": [", section, "] ", e.name);
      if (!seen_keys.insert(e.name).second) {
        status = absl::InvalidArgumentError(absl::StrCat(where, " appears twice"));
        break;
      }
      const KeyDef* k = FindKey(section, e.name);
      if (!k) {
        status = absl::InvalidArgumentError(absl::StrCat(where, ": unknown key"));
        break;
      }
      status = WithSource(k->set(p, e.value), path);
      if (!status.ok()) break;
    }
  }
  rte_cfgfile_close(cfg);
  if (!status.ok()) return status;
  for (const std::string& o : overrides)
    if (absl::Status s = ApplyOverride(&p, o); !s.ok()) return WithSource(s, "override");
  if (absl::Status s = ValidateProfile(p); !s.ok()) return WithSource(s, path);
  return p;
}

absl::Status ValidateProfile(const PortProfile& p) {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  const DriverInfo* d = FindDriver(p.driver);
  if (!d) return bad("unknown driver '", p.driver, "'");
  if (d->kind == DriverKind::kPci) {
    if (p.pci.empty()) return bad("driver ", p.driver, " needs port.pci (the NIC's PCI address)");
    if (!ValidPci(p.pci)) return bad("port.pci '", p.pci, "' is not a PCI address like 0000:3b:00.0");
  } else if (!p.pci.empty()) {
    return bad("port.pci is only for physical NICs, not ", p.driver);
  }
  if (p.identity == Identity::kKernel && p.driver != "net_af_xdp")
    return bad("port.identity = kernel needs driver net_af_xdp (its XDP program keeps RoCE from the kernel), not ",
               p.driver);
  if (p.driver == "net_af_xdp") {
    if (GetDevarg(p.devargs, "iface").empty()) return bad("net_af_xdp needs devargs iface=<interface>");
    if (!GetDevarg(p.devargs, "xdp_prog").empty())
      return bad("net_af_xdp: xdp_prog is the stack's own program (soft_rnic_xdp.o); remove it from devargs");
    if (p.rx_queues != p.tx_queues) return bad("net_af_xdp needs rx_queues == tx_queues (one socket per queue)");
  }
  if (d->kind == DriverKind::kRing) {
    if (!p.devargs.empty()) return bad("net_ring takes no devargs (use port.ring / port.ring_side)");
    // "net_ring_<ring>_loop" must fit DPDK's 29-character ring/ethdev name.
    if (p.ring.empty() || p.ring.size() > 12 ||
        !std::all_of(p.ring.begin(), p.ring.end(), [](char c) { return absl::ascii_isalnum(c) || c == '_'; }))
      return bad("port.ring '", p.ring, "' must be 1-12 letters, digits or '_'");
    if ((p.ring_size & (p.ring_size - 1)) != 0) return bad("port.ring_size ", p.ring_size, " is not a power of two");
    if (p.rx_queues != p.tx_queues) return bad("net_ring needs rx_queues == tx_queues");
    if (p.rx_queues > 16) return bad("net_ring has at most 16 queues");
  }
  if (!p.name.empty()) {
    if (p.name.size() > 48) return bad("port.name is longer than 48 characters");
    if (d->kind == DriverKind::kVdev && p.name.rfind(p.driver, 0) != 0)
      return bad("port.name '", p.name, "' must start with the driver name ", p.driver);
    if (d->kind == DriverKind::kRing) return bad("net_ring ports are named from port.ring and port.ring_side");
  }
  if (p.ipv6 && p.mtu < 1280) return bad("port.mtu ", p.mtu, " is below the IPv6 minimum 1280");
  if (p.mac && p.mac->IsMulticast()) return bad("port.mac ", p.mac->ToString(), " is a multicast address");
  const uint64_t rx_bufs = uint64_t{p.rx_queues} * p.rx_desc;
  if (p.mbufs < rx_bufs + 2u * p.mbuf_cache + 128)
    return bad("port.mbufs ", p.mbufs, " is too small for ", p.rx_queues, " x ", p.rx_desc,
               " RX descriptors plus the cache (need at least ", rx_bufs + 2u * p.mbuf_cache + 128, ")");
  if (p.mbuf_cache > p.mbufs / 2) return bad("port.mbuf_cache ", p.mbuf_cache, " is more than half the pool");
  if (p.tx_backlog != 0 && p.tx_backlog < 64) return bad("port.tx_backlog must be 0 or at least 64 (one burst)");
  for (uint16_t q : p.flow_queues)
    if (q >= p.rx_queues) return bad("flow.queues names queue ", q, " but port.rx_queues is ", p.rx_queues);
  if (p.isolate && p.steer_udp_port == 0)
    return bad("flow.isolate without flow.steer_udp_port would let no traffic reach the stack");
  if (p.rss == Tristate::kOn && p.rx_queues < 2) return bad("flow.rss = on needs port.rx_queues >= 2");
  return absl::OkStatus();
}

std::string SetDevarg(const std::string& devargs, const std::string& key, const std::string& value) {
  std::vector<std::string> parts = absl::StrSplit(devargs, ',', absl::SkipEmpty());
  bool done = false;
  for (std::string& part : parts) {
    if (part == key || part.rfind(key + "=", 0) == 0) {
      part = absl::StrCat(key, "=", value);
      done = true;
    }
  }
  if (!done) parts.push_back(absl::StrCat(key, "=", value));
  return absl::StrJoin(parts, ",");
}

std::string GetDevarg(const std::string& devargs, const std::string& key) {
  for (absl::string_view part : absl::StrSplit(devargs, ',', absl::SkipEmpty()))
    if (absl::ConsumePrefix(&part, key + "=")) return std::string(part);
  return "";
}

absl::Status SetInterface(PortProfile* p, const std::string& iface) {
  const DriverInfo* d = FindDriver(p->driver);
  if (!d) return absl::InvalidArgumentError(absl::StrCat("unknown driver '", p->driver, "'"));
  if (iface.empty()) return absl::InvalidArgumentError("empty interface name");
  if (d->kind == DriverKind::kRing) return SetProfileKey(p, "port.ring", iface);
  if (d->kind == DriverKind::kPci) return SetProfileKey(p, "port.pci", iface);
  const char* key = p->driver == "net_virtio_user" ? "path" : p->driver == "net_memif" ? "socket" : "iface";
  if (p->driver == "net_pcap") {
    // One live interface for both directions replaces files or rx_/tx_iface.
    std::vector<std::string> kept;
    for (absl::string_view kv : absl::StrSplit(p->devargs, ',', absl::SkipEmpty()))
      if (!absl::StartsWith(kv, "rx_") && !absl::StartsWith(kv, "tx_") && !absl::StartsWith(kv, "iface="))
        kept.emplace_back(kv);
    p->devargs = absl::StrJoin(kept, ",");
  }
  p->devargs = SetDevarg(p->devargs, key, iface);
  return absl::OkStatus();
}

absl::Status SetAddress(PortProfile* p, absl::string_view ip_with_prefix) {
  auto a = ParseIpPrefix(ip_with_prefix);
  if (!a.ok()) return a.status();
  if (a->addr.IsV4())
    p->ipv4 = *a;
  else
    p->ipv6 = *a;
  return absl::OkStatus();
}

EalOptions EalOptionsFor(std::span<const PortProfile> profiles) {
  EalOptions o = profiles.empty() ? EalOptions{} : profiles.front().eal;
  for (const PortProfile& p : profiles) {
    o.hugepages |= p.eal.hugepages;
    o.memory_mb = std::max(o.memory_mb, p.eal.memory_mb);
    for (const std::string& e : p.eal.extra)
      if (std::find(o.extra.begin(), o.extra.end(), e) == o.extra.end()) o.extra.push_back(e);
    const DriverInfo* d = FindDriver(p.driver);
    if (d && d->kind == DriverKind::kPci)
      o.allow.push_back(p.devargs.empty() ? p.pci : absl::StrCat(p.pci, ",", p.devargs));
  }
  return o;
}

}  // namespace roce::port
