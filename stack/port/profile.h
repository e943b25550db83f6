// SPDX-License-Identifier: MIT
// Port profiles: INI files in drivers-cfg/ read with DPDK's rte_cfgfile, one
// per driver set-up, overridable key by key from code or flags
// ("port.ipv4=10.0.0.2"). A profile names the driver and its devargs, the
// queues and descriptors, MTU, MAC and the stack's own IPv4/IPv6 addresses,
// offload policy, rte_flow steering, capture file and fault injection.
// drivers-cfg/README.md documents every key; ProfileKeys() lists them.
//
// rte_cfgfile silently skips a line without '=' and keeps only the first of
// duplicated keys or sections; LoadProfile rejects those (and unknown keys)
// with the file, line and key in the message, so a typo never goes unseen.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <absl/strings/string_view.h>
#include <utility>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include "stack/port/eal.h"
#include "stack/port/fault.h"
#include "stack/wire/headers.h"

namespace roce::port {

enum class DriverKind : uint8_t {
  kRing,  // net_ring from rte_eth_from_rings: in-process pair or loopback
  kVdev,  // any other virtual device, created with rte_vdev_init(name, devargs)
  kPci,   // a physical NIC (mlx5, ice, i40e, virtio-pci...) at profile.pci
};

struct DriverInfo {
  const char* name;
  DriverKind kind;
  const char* what;
};
// The drivers a profile may name; nullptr if unknown. The virtual devices
// (net_*) are a closed list; any other name is a PCI driver: the EAL probes
// the device at port.pci with whatever PMD claims it (ena, gve, mana, netvsc,
// igb, ...), and the name is a label (the known ones carry a description).
const DriverInfo* FindDriver(absl::string_view name);
std::span<const DriverInfo> KnownDrivers();

// Where a port's identity (MAC, MTU, addresses) and neighbours come from.
// kKernel: the Linux interface it sits on (net_af_xdp beside the kernel):
// every IPv4/IPv6 address of the interface, followed through netlink, its MAC
// and MTU, and the kernel's routes and neighbour table (no ARP/ND of ours).
// kOwn: the profile's MAC and addresses, and the stack's own ARP/ND.
// auto: kernel for net_af_xdp, own for every other driver.
enum class Identity : uint8_t { kAuto, kKernel, kOwn };

enum class Tristate : uint8_t { kAuto, kOn, kOff };  // auto: use if the port offers it

struct IpPrefix {
  wire::IpAddr addr;
  uint8_t prefix_len = 0;
  std::string ToString() const;
};

enum class RingSide : uint8_t { kA, kB, kLoop };

struct PortProfile {
  std::string source = "<defaults>";  // file the profile came from

  EalOptions eal;  // [eal]

  // [port]
  std::string driver = "net_ring";
  std::string name;      // vdev / ethdev name; default <driver>_r<N>
  std::string devargs;   // driver arguments, as given to rte_vdev_init / after the PCI address
  std::string pci;       // physical NICs: PCI address (0000:3b:00.0)
  uint16_t rx_queues = 1, tx_queues = 1;
  uint16_t rx_desc = 1024, tx_desc = 1024;
  uint16_t mtu = 1500;   // IP MTU the stack may use (frames up to mtu + 18 bytes)
  bool mtu_given = false;        // port.mtu was set (else a kernel interface's MTU is taken)
  bool rx_queues_given = false;  // port.rx_queues was set (else net_af_xdp takes every channel)
  Identity identity = Identity::kAuto;
  bool set_mtu = true;   // program it on the device (af_packet: no, framesz rules)
  std::optional<wire::MacAddr> mac;
  std::optional<IpPrefix> ipv4, ipv6;
  std::string capture;   // pcap path: every frame sent and received
  bool promiscuous = false;
  uint32_t mbufs = 8191;           // pool size (2^n - 1 is best)
  uint16_t mbuf_data_room = 2048;  // data bytes per mbuf, headroom not included
  uint16_t mbuf_cache = 256;
  uint32_t tx_backlog = 256;       // software TX queue for frames the device refused
  // Every received frame copied into the port's pool, as a NIC's scatter DMA
  // lays it out (mbuf_data_room bytes a segment, each after the headroom):
  // a ring pair or a vdev then gives the stack a NIC's receive layout, for
  // benchmarks and tests of that path.
  bool rx_copy = false;
  // net_tap only: the tap PMD reads its queue only after a signal (O_ASYNC
  // on the tun fd; its handler bumps a trigger that rx_burst compares). false
  // (default): the port turns the signal off and bumps the trigger itself
  // before every burst, so each burst reads the queue (one readv that finds
  // nothing when it is empty). true: the PMD's own signal-driven reads.
  bool tap_rx_signal = false;
  // An fd per RX queue that becomes readable when a frame arrives (DPDK's Rx
  // interrupts: intr_conf.rxq, rte_eth_dev_rx_intr_ctl_q_get_fd), on which an
  // idle progress thread sleeps instead of napping blind. auto: on for the
  // drivers known to give one (net_tap, net_memif), off for the others; on:
  // required (open fails without it); off: never.
  Tristate rx_interrupt = Tristate::kAuto;
  // net_ring only
  std::string ring = "roce";       // the two sides of a pair name the same ring set
  RingSide ring_side = RingSide::kA;
  uint32_t ring_size = 1024;

  // [offload]
  Tristate tx_ipv4_checksum = Tristate::kAuto;
  Tristate tx_udp_checksum = Tristate::kAuto;
  Tristate tx_multiseg = Tristate::kAuto;
  Tristate rx_checksum = Tristate::kAuto;
  Tristate rx_scatter = Tristate::kAuto;

  // [flow]
  uint16_t steer_udp_port = 0;       // rte_flow: UDP dst port to the stack's queues (0: none)
  Tristate rss = Tristate::kAuto;    // spread over flow_queues (RSS on IP + UDP ports)
  bool isolate = false;              // rte_flow_isolate: only matched traffic reaches DPDK
  std::vector<uint16_t> flow_queues; // default: every RX queue

  // [fault]
  FaultConfig faults;
};

// One "section.key" of a profile with its documentation.
struct ProfileKey {
  const char* section;
  const char* key;
  const char* doc;
};
std::span<const ProfileKey> ProfileKeys();

// Reads a profile file. `overrides` are "section.key=value" strings applied
// after the file (same syntax and validation as the file).
absl::StatusOr<PortProfile> LoadProfile(const std::string& path,
                                        std::span<const std::string> overrides = {});

// Sets one key ("port.mtu", "9000") with the same parsing as the file.
absl::Status SetProfileKey(PortProfile* p, absl::string_view section_dot_key, absl::string_view value);
// "section.key=value".
absl::Status ApplyOverride(PortProfile* p, absl::string_view assignment);

// Cross-field checks (LoadProfile runs them; call again after changing fields by hand).
absl::Status ValidateProfile(const PortProfile& p);

// Returns devargs with key=value set (replaced if present, appended if not):
// what a tool's --iface does (SetDevarg(p.devargs, "iface", "veth0")).
std::string SetDevarg(const std::string& devargs, const std::string& key, const std::string& value);
// The value of key in devargs, or "".
std::string GetDevarg(const std::string& devargs, const std::string& key);

// What a tool's --iface does: sets the driver's interface argument (iface=
// for net_tap/net_pcap/net_af_packet/net_af_xdp and the socket path of
// net_vhost, path= for net_virtio_user, socket= for net_memif, the ring set
// for net_ring, the PCI address for physical NICs).
absl::Status SetInterface(PortProfile* p, const std::string& iface);
// What --ip does: "10.1.0.2/24" sets port.ipv4, "fd00::2/64" port.ipv6.
absl::Status SetAddress(PortProfile* p, absl::string_view ip_with_prefix);

// EAL options for a set of ports: the first profile's [eal] section, plus
// "-a <pci>,<devargs>" for every physical port (which turns --no-pci off).
EalOptions EalOptionsFor(std::span<const PortProfile> profiles);

// The identity a profile resolves to (Identity::kAuto decided by the driver).
Identity EffectiveIdentity(const PortProfile& p);
// The kernel interface a port sits on: iface= of net_af_xdp, net_af_packet,
// net_tap, net_pcap (live); "" for the others.
std::string KernelInterface(const PortProfile& p);

// "10.0.0.1/24", "fd00::1/64", "10.0.0.1" (prefix defaults to /32, /128).
absl::StatusOr<IpPrefix> ParseIpPrefix(absl::string_view s);

}  // namespace roce::port
