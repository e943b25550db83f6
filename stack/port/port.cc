// SPDX-License-Identifier: MIT
#include "stack/port/port.h"

#include "stack/port/zerocopy.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>


#include <algorithm>
#include <atomic>
#include <map>

#include <absl/strings/str_cat.h>
#include <absl/strings/str_format.h>
#include <absl/synchronization/mutex.h>

#include "stack/port/dpdk.h"
#include "stack/port/eal.h"
#include "stack/port/flow.h"
#include "stack/port/kernel_iface.h"

RTE_LOG_REGISTER(g_port_logtype, roce.port, NOTICE);

namespace roce::port {

// ---- queues ---------------------------------------------------------------------

struct alignas(64) Port::RxQueue {
  FaultInjector faults;
  // Frames produced by fault injection beyond what the caller asked for.
  static constexpr uint16_t kPendingCap = 2 * kMaxBurst + 2;
  rte_mbuf* pending[kPendingCap];
  uint16_t pend_head = 0, pend_count = 0;
  Counter packets, bytes;
  Counter rx_copy_nomem;  // rx_copy: frames dropped, the pool empty

  uint16_t PopPending(rte_mbuf** out, uint16_t n) {
    uint16_t k = 0;
    while (k < n && pend_count > 0) {
      out[k++] = pending[pend_head];
      pend_head = static_cast<uint16_t>((pend_head + 1) % kPendingCap);
      pend_count--;
    }
    return k;
  }
  void PushPending(rte_mbuf* m) {  // callers never exceed kPendingCap (see RxSlow)
    pending[(pend_head + pend_count) % kPendingCap] = m;
    pend_count++;
  }
  void FreeAll() {
    rte_mbuf* m[kPendingCap];
    uint16_t n = PopPending(m, kPendingCap);
    rte_pktmbuf_free_bulk(m, n);
    if (rte_mbuf* h = faults.TakeHeld()) rte_pktmbuf_free(h);
  }
};

struct alignas(64) Port::TxQueue {
  FaultInjector faults;
  std::vector<rte_mbuf*> backlog;  // ring buffer, capacity fixed at Open
  size_t head = 0, count = 0;
  Counter packets, bytes, full, oversize, nomem, linearized;
  std::atomic<uint32_t> backlog_gauge{0};

  size_t room() const { return backlog.size() - count; }
  void Push(rte_mbuf* m) {
    backlog[(head + count) % backlog.size()] = m;
    count++;
  }
  void FreeAll() {
    for (; count > 0; count--) {
      rte_pktmbuf_free(backlog[head]);
      head = (head + 1) % backlog.size();
    }
    backlog_gauge.store(0, std::memory_order_relaxed);
    if (rte_mbuf* h = faults.TakeHeld()) rte_pktmbuf_free(h);
  }
};

// ---- net_ring sets: the rings and pool both sides of a pair share -------------

namespace {

struct RingSet {
  uint16_t nq = 0;
  rte_ring* ab[16] = {};
  rte_ring* ba[16] = {};
  rte_mempool* pool = nullptr;
  int users = 0;
  bool side_open[3] = {};
};

absl::Mutex g_rings_mu;
std::map<std::string, RingSet>& Rings() {
  static auto* m = new std::map<std::string, RingSet>();
  return *m;
}

std::atomic<uint32_t> g_counter{0};

std::string UniqueSuffix() { return std::to_string(g_counter.fetch_add(1)); }

void DrainAndFreeRing(rte_ring* r) {
  if (!r) return;
  void* objs[64];
  unsigned n;
  while ((n = rte_ring_dequeue_burst(r, objs, 64, nullptr)) > 0)
    rte_pktmbuf_free_bulk(reinterpret_cast<rte_mbuf**>(objs), n);
  rte_ring_free(r);
}

rte_mempool* CreatePool(const PortProfile& p, const std::string& name) {
  return rte_pktmbuf_pool_create(name.c_str(), p.mbufs, p.mbuf_cache, 0,
                                 static_cast<uint16_t>(p.mbuf_data_room + RTE_PKTMBUF_HEADROOM),
                                 static_cast<int>(rte_socket_id()));
}

absl::Status Errno(const std::string& what, int rc) {
  const int e = rc < 0 ? -rc : rc;
  return absl::InternalError(absl::StrCat(what, ": ", rte_strerror(e), " (", e, ")"));
}

// Sets the MAC of a kernel network interface (SIOCSIFHWADDR).
absl::Status SetKernelMac(const std::string& ifname, const wire::MacAddr& mac) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  ifr.ifr_hwaddr.sa_family = ARPHRD_ETHER;
  std::memcpy(ifr.ifr_hwaddr.sa_data, mac.b.data(), 6);
  const int rc = ioctl(fd, SIOCSIFHWADDR, &ifr);
  const int err = errno;
  close(fd);
  if (rc != 0)
    return absl::InternalError(absl::StrCat("setting the MAC of ", ifname, ": ", strerror(err)));
  return absl::OkStatus();
}

// A unique kernel interface name (<= 15 characters) for a net_tap without iface=:
// a reused name silently joins the other process's tap.
std::string UniqueTapName() {
  return absl::StrFormat("rnic%x_%s", static_cast<unsigned>(getpid()) & 0xfffff, UniqueSuffix()).substr(0, 15);
}

// net_tap's receive without signals. The tap PMD sets O_ASYNC on its tun
// fds (F_SETSIG: SIGRTMIN + 1 in DPDK 22.11, else SIGIO), so the kernel
// queues the process a signal for every frame it puts on the tap, and
// rx_burst reads (readv until the queue is empty) only when the handler has
// bumped a trigger since its last burst. A signal is dear: the sender's
// write pays for an interrupt to the CPU the receiver runs on (kill_fasync,
// inside the bridge's forwarding of the frame), the receiver for the signal
// frame, its handler and sigreturn (~5 us for one raise() and handler on the
// 2-vCPU EPYC VM of the README's figures; perf: ~40% of a tap ping-pong's
// CPU time; a bare tap ping-pong over a bridge, 98 B frames: 7 us a round
// trip polling, 40 us signalled). Instead the port clears O_ASYNC on the
// tap's queues and calls the PMD's handler itself (a function call) before
// every burst: each burst reads, one readv (~0.5 us) finding nothing when
// the queue is empty.
using SignalHandler = void (*)(int);
struct TapQueues {
  std::vector<int> fds;  // this process's tun fds attached to the tap (its queues)
  int sig = 0;           // their signal (F_GETSIG; 0: SIGIO)
};

// The tun fds attached to `ifname` (its detached keep-alive fd answers no
// TUNGETIFF and gets no frames).
TapQueues FindTapQueues(const std::string& ifname) {
  TapQueues t;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return t;
  const int dir_fd = dirfd(d);
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dir_fd) continue;
    char target[64] = {};
    const ssize_t len = readlink(absl::StrCat("/proc/self/fd/", e->d_name).c_str(), target, sizeof target - 1);
    if (len <= 0 || std::strcmp(target, "/dev/net/tun") != 0) continue;
    ifreq ifr{};
    if (ioctl(static_cast<int>(fd), TUNGETIFF, &ifr) != 0 || ifname != ifr.ifr_name) continue;
    if (t.fds.empty()) t.sig = fcntl(static_cast<int>(fd), F_GETSIG);
    t.fds.push_back(static_cast<int>(fd));
  }
  closedir(d);
  if (t.sig <= 0) t.sig = SIGIO;
  return t;
}

// The PMD's trigger handler for `sig`: the handler if it lives in the tap
// driver's shared object, else nullptr (the PMD found the signal taken and
// reads every burst already, or DPDK is linked statically and the handler
// cannot be told from an application's).
SignalHandler TapTriggerHandler(int sig) {
  struct sigaction sa {};
  if (sigaction(sig, nullptr, &sa) != 0 || (sa.sa_flags & SA_SIGINFO)) return nullptr;
  SignalHandler h = sa.sa_handler;
  if (h == SIG_DFL || h == SIG_IGN || h == nullptr) return nullptr;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(h), &info) == 0 || !info.dli_fname || !std::strstr(info.dli_fname, "net_tap"))
    return nullptr;
  return h;
}

}  // namespace

// ---- Offloads -------------------------------------------------------------------

std::string Offloads::ToString() const {
  return absl::StrFormat(
      "tx_ipv4_checksum=%d tx_udp_checksum=%d tx_multiseg=%d rx_ipv4_checksum=%d rx_udp_checksum=%d "
      "rx_scatter=%d rss=%d (capa rx %#x tx %#x, enabled rx %#x tx %#x)",
      tx_ipv4_checksum, tx_udp_checksum, tx_multiseg, rx_ipv4_checksum, rx_udp_checksum, rx_scatter, rss,
      rx_capa, tx_capa, rx_enabled, tx_enabled);
}

// ---- open / close ---------------------------------------------------------------

Port::Port() = default;

absl::StatusOr<std::unique_ptr<Port>> Port::Open(const PortProfile& profile) {
  if (!EalInitialized())
    return absl::FailedPreconditionError("Port::Open before InitEal");
  std::unique_ptr<Port> p(new Port());
  if (absl::Status s = p->Init(profile); !s.ok())
    return absl::Status(s.code(), absl::StrCat("port ", p->name_.empty() ? profile.driver : p->name_,
                                               " (", profile.source, "): ", s.message()));
  return p;
}

absl::Status Port::Init(const PortProfile& profile) {
  if (absl::Status s = ValidateProfile(profile); !s.ok()) return s;
  profile_ = profile;
  driver_ = FindDriver(profile_.driver);
  // A kernel interface the device opens (not net_tap's, which the PMD makes).
  const bool existing_iface = profile_.driver == "net_af_xdp" || profile_.driver == "net_af_packet" ||
                              (profile_.driver == "net_pcap" && !KernelInterface(profile_).empty());
  if (existing_iface) {
    auto k = KernelIface::Open(&profile_);
    if (!k.ok()) return k.status();
    kif_ = std::move(*k);
  }
  const std::vector<int> xsk_before = kif_ && kif_->af_xdp() ? AfXdpSocketFds() : std::vector<int>{};
  max_frame_len_ = uint32_t{profile_.mtu} + RTE_ETHER_HDR_LEN + 4;  // + one 802.1Q tag
  rxq_.reset(new RxQueue[profile_.rx_queues]);
  txq_.reset(new TxQueue[profile_.tx_queues]);
  for (uint16_t q = 0; q < profile_.tx_queues; q++) txq_[q].backlog.assign(profile_.tx_backlog, nullptr);
  if (absl::Status s = CreateDevice(); !s.ok()) return s;
  if (absl::Status s = Configure(); !s.ok()) return s;
  if (kif_) {
    std::vector<int> xsk;
    if (kif_->af_xdp())
      for (int fd : AfXdpSocketFds())
        if (std::find(xsk_before.begin(), xsk_before.end(), fd) == xsk_before.end()) xsk.push_back(fd);
    if (absl::Status s = kif_->Started(xsk); !s.ok()) return s;
    if (kif_->kernel_identity()) mac_ = kif_->mac();
    // An AF_XDP socket is readable when its RX ring has a frame: the fd a
    // progress thread sleeps on (one per queue, in queue order).
    if (kif_->af_xdp() && profile_.rx_interrupt != Tristate::kOff && rx_wait_fds_.empty() &&
        xsk.size() == profile_.rx_queues)
      rx_wait_fds_ = xsk;
  } else if (profile_.driver == "net_tap" && !profile_.set_mtu) {
    if (absl::Status s = KernelIface::CheckMtu(GetDevarg(profile_.devargs, "iface"), profile_.mtu, profile_.mtu_given);
        !s.ok())
      return s;
  }
  if (!profile_.capture.empty())
    if (absl::Status s = StartCapture(profile_.capture); !s.ok()) return s;
  SetFaults(profile_.faults);
  auto reg = RegisterTelemetry("port", port_id_, [this](TelemetryDict& d) { FillTelemetry(d); });
  if (!reg.ok()) return reg.status();
  telemetry_ = std::move(*reg);
  return absl::OkStatus();
}

absl::Status Port::CreateDevice() {
  const PortProfile& p = profile_;
  if (driver_->kind == DriverKind::kRing) {
    const int side = static_cast<int>(p.ring_side);
    name_ = absl::StrCat("net_ring_", p.ring, "_", side == 0 ? "a" : side == 1 ? "b" : "loop");
    absl::MutexLock l(&g_rings_mu);
    auto& sets = Rings();
    auto it = sets.find(p.ring);
    if (it == sets.end()) {
      RingSet rs;
      rs.nq = p.rx_queues;
      const std::string tag = UniqueSuffix();
      for (uint16_t q = 0; q < rs.nq; q++) {
        rs.ab[q] = rte_ring_create(absl::StrCat("rr", tag, "ab", q).c_str(), p.ring_size, SOCKET_ID_ANY,
                                   RING_F_SP_ENQ | RING_F_SC_DEQ);
        rs.ba[q] = rte_ring_create(absl::StrCat("rr", tag, "ba", q).c_str(), p.ring_size, SOCKET_ID_ANY,
                                   RING_F_SP_ENQ | RING_F_SC_DEQ);
        if (!rs.ab[q] || !rs.ba[q]) {
          int err = rte_errno;
          for (uint16_t i = 0; i <= q; i++) {
            DrainAndFreeRing(rs.ab[i]);
            DrainAndFreeRing(rs.ba[i]);
          }
          return Errno("rte_ring_create", err);
        }
      }
      rs.pool = CreatePool(p, absl::StrCat("rnr", tag));
      if (!rs.pool) {
        int err = rte_errno;
        for (uint16_t q = 0; q < rs.nq; q++) {
          DrainAndFreeRing(rs.ab[q]);
          DrainAndFreeRing(rs.ba[q]);
        }
        return Errno(absl::StrCat("mbuf pool of ", p.mbufs, " x ", p.mbuf_data_room, " B (raise eal.memory_mb?)"),
                     err);
      }
      it = sets.emplace(p.ring, rs).first;
    }
    RingSet& rs = it->second;
    if (rs.nq != p.rx_queues)
      return absl::InvalidArgumentError(absl::StrCat("ring set ", p.ring, " has ", rs.nq, " queues, profile asks ",
                                                     p.rx_queues));
    const bool loop_open = rs.side_open[2], pair_open = rs.side_open[0] || rs.side_open[1];
    if (rs.side_open[side] || (side == 2 && pair_open) || (side != 2 && loop_open))
      return absl::AlreadyExistsError(absl::StrCat("ring set ", p.ring, " side is already open"));
    rte_ring* rx[16];
    rte_ring* tx[16];
    for (uint16_t q = 0; q < rs.nq; q++) {
      rx[q] = side == 0 ? rs.ba[q] : rs.ab[q];
      tx[q] = side == 1 ? rs.ba[q] : rs.ab[q];
    }
    const std::string short_name = name_.substr(strlen("net_ring_"));
    int id = rte_eth_from_rings(short_name.c_str(), rx, rs.nq, tx, rs.nq, rte_socket_id());
    if (id < 0) return Errno(absl::StrCat("rte_eth_from_rings(", short_name, ")"), rte_errno);
    port_id_ = static_cast<uint16_t>(id);
    created_ = true;
    rs.side_open[side] = true;
    rs.users++;
    ring_set_ = p.ring;
    pool_ = rs.pool;
    pool_owned_ = false;
    return absl::OkStatus();
  }

  pool_ = CreatePool(p, absl::StrCat("rnp", UniqueSuffix()));
  if (!pool_)
    return Errno(absl::StrCat("mbuf pool of ", p.mbufs, " x ", p.mbuf_data_room, " B (raise eal.memory_mb?)"),
                 rte_errno);
  pool_owned_ = true;

  if (driver_->kind == DriverKind::kPci) {
    name_ = p.pci;
    uint16_t id;
    if (rte_eth_dev_get_port_by_name(p.pci.c_str(), &id) != 0) {
      const std::string spec = p.devargs.empty() ? p.pci : absl::StrCat(p.pci, ",", p.devargs);
      int rc = rte_dev_probe(spec.c_str());
      if (rc != 0) return Errno(absl::StrCat("rte_dev_probe(", spec, ") (is the NIC bound to vfio-pci / mlx5?)"), rc);
      if (rte_eth_dev_get_port_by_name(p.pci.c_str(), &id) != 0)
        return absl::NotFoundError(absl::StrCat("no ethdev named ", p.pci, " after probing"));
    }
    port_id_ = id;
    created_ = true;
    return absl::OkStatus();
  }

  name_ = p.name.empty() ? absl::StrCat(p.driver, "_r", UniqueSuffix()) : p.name;
  std::string devargs = p.devargs;
  if (p.driver == "net_tap" && GetDevarg(devargs, "iface").empty())
    devargs = SetDevarg(devargs, "iface", UniqueTapName());
  int rc = rte_vdev_init(name_.c_str(), devargs.c_str());
  if (rc != 0) return Errno(absl::StrCat("rte_vdev_init(", name_, ", \"", devargs, "\")"), rc);
  uint16_t id;
  if (rte_eth_dev_get_port_by_name(name_.c_str(), &id) != 0) {
    rte_vdev_uninit(name_.c_str());
    return absl::NotFoundError(absl::StrCat("rte_vdev_init(", name_, ") made no ethdev"));
  }
  port_id_ = id;
  created_ = true;
  profile_.devargs = devargs;
  return absl::OkStatus();
}

absl::Status Port::Configure() {
  const PortProfile& p = profile_;
  rte_eth_dev_info info;
  if (int rc = rte_eth_dev_info_get(port_id_, &info); rc != 0) return Errno("rte_eth_dev_info_get", rc);
  if (p.rx_queues > info.max_rx_queues || p.tx_queues > info.max_tx_queues)
    return absl::InvalidArgumentError(absl::StrCat(info.driver_name, " offers ", info.max_rx_queues, " RX / ",
                                                   info.max_tx_queues, " TX queues, profile asks ", p.rx_queues,
                                                   " / ", p.tx_queues));
  if (kif_ && kif_->af_xdp()) {
    // An AF_XDP frame is one UMEM chunk (an mbuf, at most a page) whose
    // first 256 bytes are the kernel's XDP headroom.
    constexpr uint32_t kXdpHeadroom = 256;
    uint32_t cap = p.mbuf_data_room > kXdpHeadroom + 18 + 68 ? p.mbuf_data_room - kXdpHeadroom - 18 : 68;
    if (info.max_mtu) cap = std::min<uint32_t>(cap, info.max_mtu);
    if (p.mtu > cap) {
      if (p.mtu_given)
        return absl::InvalidArgumentError(absl::StrCat("port.mtu ", p.mtu, " is above what one ", info.driver_name,
                                                       " frame holds with mbuf_data_room ", p.mbuf_data_room, ": ",
                                                       cap));
      profile_.mtu = static_cast<uint16_t>(cap);
      max_frame_len_ = uint32_t{profile_.mtu} + RTE_ETHER_HDR_LEN + 4;
    }
  }
  Offloads& o = offloads_;
  o.rx_capa = info.rx_offload_capa;
  o.tx_capa = info.tx_offload_capa;

  // Each offload: auto = use it if offered, on = required, off = not used.
  auto pick = [&](Tristate t, uint64_t capa, uint64_t bits, const char* what, bool* out) -> absl::Status {
    const bool offered = (capa & bits) == bits;
    if (t == Tristate::kOn && !offered)
      return absl::FailedPreconditionError(
          absl::StrFormat("%s is required by the profile but %s does not offer it (capa %#x)", what,
                          info.driver_name, capa));
    *out = t != Tristate::kOff && offered;
    return absl::OkStatus();
  };
  absl::Status s;
  if (!(s = pick(p.tx_ipv4_checksum, o.tx_capa, RTE_ETH_TX_OFFLOAD_IPV4_CKSUM, "TX IPv4 checksum offload",
                 &o.tx_ipv4_checksum)).ok())
    return s;
  if (!(s = pick(p.tx_udp_checksum, o.tx_capa, RTE_ETH_TX_OFFLOAD_UDP_CKSUM, "TX UDP checksum offload",
                 &o.tx_udp_checksum)).ok())
    return s;
  if (!(s = pick(p.tx_multiseg, o.tx_capa, RTE_ETH_TX_OFFLOAD_MULTI_SEGS, "multi-segment TX", &o.tx_multiseg)).ok())
    return s;
  bool rx_ck = false;
  if (!(s = pick(p.rx_checksum, o.rx_capa, RTE_ETH_RX_OFFLOAD_IPV4_CKSUM, "RX IPv4 checksum offload", &rx_ck)).ok())
    return s;
  o.rx_ipv4_checksum = rx_ck;
  o.rx_udp_checksum = rx_ck && (o.rx_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM);
  if (!(s = pick(p.rx_scatter, o.rx_capa, RTE_ETH_RX_OFFLOAD_SCATTER, "RX scatter", &o.rx_scatter)).ok()) return s;

  o.tx_enabled = (o.tx_ipv4_checksum ? RTE_ETH_TX_OFFLOAD_IPV4_CKSUM : 0) |
                 (o.tx_udp_checksum ? RTE_ETH_TX_OFFLOAD_UDP_CKSUM : 0) |
                 (o.tx_multiseg ? RTE_ETH_TX_OFFLOAD_MULTI_SEGS : 0);
  o.rx_enabled = (o.rx_ipv4_checksum ? RTE_ETH_RX_OFFLOAD_IPV4_CKSUM : 0) |
                 (o.rx_udp_checksum ? RTE_ETH_RX_OFFLOAD_UDP_CKSUM : 0) |
                 (o.rx_scatter ? RTE_ETH_RX_OFFLOAD_SCATTER : 0);
  if (info.tx_desc_lim.nb_mtu_seg_max) max_tx_segs_ = info.tx_desc_lim.nb_mtu_seg_max;
  if (info.tx_desc_lim.nb_seg_max) max_tx_segs_ = std::min(max_tx_segs_, info.tx_desc_lim.nb_seg_max);
  {
    const std::string& d = profile_.driver;
    const bool cpu_reader = driver_->kind == DriverKind::kRing || d == "net_tap" ||
                            d == "net_af_packet" || d == "net_pcap";
    zero_copy_tx_ = cpu_reader && o.tx_multiseg && max_tx_segs_ >= 4;
    rx_copy_ = p.rx_copy;
  }

  rte_eth_conf conf{};
  conf.rxmode.offloads = o.rx_enabled;
  conf.txmode.offloads = o.tx_enabled;
  if (p.set_mtu) conf.rxmode.mtu = p.mtu;
  const bool rx_intr = p.rx_interrupt == Tristate::kOn ||
                       (p.rx_interrupt == Tristate::kAuto && (p.driver == "net_tap" || p.driver == "net_memif"));
  conf.intr_conf.rxq = rx_intr ? 1 : 0;
  const uint64_t rss_hf = (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP) & info.flow_type_rss_offloads;
  if (p.rss == Tristate::kOn && rss_hf == 0)
    return absl::FailedPreconditionError(absl::StrCat("flow.rss = on but ", info.driver_name, " has no RSS"));
  if (p.rss != Tristate::kOff && p.rx_queues > 1 && rss_hf != 0) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_hf = rss_hf;
    o.rss = true;
  }

  if (p.isolate) {
    rte_flow_error err{};
    if (int rc = rte_flow_isolate(port_id_, 1, &err); rc != 0)
      return absl::FailedPreconditionError(
          absl::StrCat("rte_flow_isolate: ", err.message ? err.message : rte_strerror(-rc)));
  }

  if (int rc = rte_eth_dev_configure(port_id_, p.rx_queues, p.tx_queues, &conf); rc != 0)
    return Errno(absl::StrCat("rte_eth_dev_configure(mtu ", p.set_mtu ? p.mtu : 0, ", rx offloads ",
                              absl::Hex(o.rx_enabled), ", tx offloads ", absl::Hex(o.tx_enabled), ")"),
                 rc);
  uint16_t nrx = p.rx_desc, ntx = p.tx_desc;
  if (int rc = rte_eth_dev_adjust_nb_rx_tx_desc(port_id_, &nrx, &ntx); rc != 0)
    return Errno("rte_eth_dev_adjust_nb_rx_tx_desc", rc);
  const int socket = rte_eth_dev_socket_id(port_id_);
  for (uint16_t q = 0; q < p.rx_queues; q++) {
    rte_eth_rxconf rxc = info.default_rxconf;
    rxc.offloads = o.rx_enabled;
    if (int rc = rte_eth_rx_queue_setup(port_id_, q, nrx, socket, &rxc, pool_); rc != 0)
      return Errno(absl::StrCat("rte_eth_rx_queue_setup(", q, ", ", nrx, " descriptors, mbuf data room ",
                                p.mbuf_data_room, ")"),
                   rc);
  }
  for (uint16_t q = 0; q < p.tx_queues; q++) {
    rte_eth_txconf txc = info.default_txconf;
    txc.offloads = o.tx_enabled;
    if (int rc = rte_eth_tx_queue_setup(port_id_, q, ntx, socket, &txc); rc != 0)
      return Errno(absl::StrCat("rte_eth_tx_queue_setup(", q, ", ", ntx, ")"), rc);
  }

  // MAC: the profile's, else the device's, else a locally administered one
  // (net_ring ports have none).
  rte_ether_addr ea{};
  rte_eth_macaddr_get(port_id_, &ea);
  if (p.mac) {
    std::copy(p.mac->b.begin(), p.mac->b.end(), ea.addr_bytes);
    int rc = rte_eth_dev_default_mac_addr_set(port_id_, &ea);
    if (rc != 0 && rc != -ENOTSUP) return Errno(absl::StrCat("setting MAC ", p.mac->ToString()), rc);
  } else if (rte_is_zero_ether_addr(&ea)) {
    const uint8_t gen[6] = {0x02, 0x72, 0x6e, 0x69, static_cast<uint8_t>(port_id_ >> 8),
                            static_cast<uint8_t>(port_id_ & 0xff)};
    std::copy(gen, gen + 6, ea.addr_bytes);
  }
  std::copy(ea.addr_bytes, ea.addr_bytes + 6, mac_.b.begin());

  if (p.promiscuous) {
    int rc = rte_eth_promiscuous_enable(port_id_);
    if (rc != 0 && rc != -ENOTSUP) return Errno("rte_eth_promiscuous_enable", rc);
  }
  if (int rc = rte_eth_dev_start(port_id_); rc != 0) return Errno("rte_eth_dev_start", rc);
  started_ = true;

  if (p.driver == "net_tap") {
    // The tap PMD gives the kernel side of the tap the stack's MAC. A Linux
    // bridge installs each port's own MAC as a *local* FDB entry, so frames
    // addressed to the stack would be delivered to the bridge host instead of
    // going out through the tap. Give the kernel netdev a MAC of its own.
    const std::string ifname = GetDevarg(p.devargs, "iface");
    wire::MacAddr km = mac_;
    km.b[5] ^= 0x80;
    if (!ifname.empty()) {
      if (absl::Status ks = SetKernelMac(ifname, km); !ks.ok()) return ks;
    }
    // Every burst reads; no SIGIO (TapTriggerHandler). The handler is found
    // first: with no handler to call, the signals must stay. (A queue whose
    // O_ASYNC stayed set keeps its signals, and is read every burst too.)
    if (!p.tap_rx_signal && !ifname.empty()) {
      const TapQueues tq = FindTapQueues(ifname);
      if (SignalHandler h = tq.fds.empty() ? nullptr : TapTriggerHandler(tq.sig)) {
        tap_rx_trigger_ = h;
        tap_rx_sig_ = tq.sig;
        for (int fd : tq.fds) {
          const int flags = fcntl(fd, F_GETFL);
          if (flags >= 0 && (flags & O_ASYNC)) fcntl(fd, F_SETFL, flags & ~O_ASYNC);
        }
      }
    }
  }

  if (rx_intr) {
    for (uint16_t q = 0; q < p.rx_queues; q++) {
      const int fd = rte_eth_dev_rx_intr_ctl_q_get_fd(port_id_, q);
      if (fd < 0) {
        if (p.rx_interrupt == Tristate::kOn)
          return absl::FailedPreconditionError(absl::StrCat(
              "port.rx_interrupt = on but ", info.driver_name, " gives RX queue ", q, " no interrupt fd"));
        rx_wait_fds_.clear();
        break;
      }
      rx_wait_fds_.push_back(fd);
    }
    // Drivers whose fd is the queue's own (net_tap) have no enable op.
    rx_intr_ops_ = !rx_wait_fds_.empty() && rte_eth_dev_rx_intr_enable(port_id_, 0) != -ENOTSUP;
    if (rx_intr_ops_) rte_eth_dev_rx_intr_disable(port_id_, 0);
  }

  for (const SteeringRule& r : SteeringRules(p, o.rss)) {
    auto f = CreateSteeringRule(port_id_, r);
    if (!f.ok()) return f.status();
    flows_.push_back(*f);
  }
  return absl::OkStatus();
}

std::vector<IpPrefix> Port::Addrs() const {
  if (kif_ && kif_->kernel_identity()) return kif_->Addrs();
  std::vector<IpPrefix> v;
  if (profile_.ipv4) v.push_back(*profile_.ipv4);
  if (profile_.ipv6) v.push_back(*profile_.ipv6);
  return v;
}

uint64_t Port::AddrGeneration() const { return kif_ && kif_->kernel_identity() ? kif_->generation() : 1; }

bool Port::kernel_identity() const { return kif_ && kif_->kernel_identity(); }

void Port::LogDrop(DropCause c, const std::string& what) const {
  const uint32_t bit = 1u << c;
  if (logged_drops_.load(std::memory_order_relaxed) & bit) return;
  if (logged_drops_.fetch_or(bit) & bit) return;
  // At ERR: shown at the EAL's default log level (eal.log_level = error).
  rte_log(RTE_LOG_ERR, g_port_logtype,
          "roce: port %s (%s): dropping frames: %s; counted in /roce/port/stats,%u, logged once\n", name_.c_str(),
          profile_.driver.c_str(), what.c_str(), port_id_);
}

void Port::ArmRxInterrupt(uint16_t queue, bool on) {
  if (!rx_intr_ops_ || queue >= rx_wait_fds_.size()) return;
  if (on) rte_eth_dev_rx_intr_enable(port_id_, queue);
  else rte_eth_dev_rx_intr_disable(port_id_, queue);
}

Port::~Port() {
  telemetry_.Reset();
  if (rxq_)
    for (uint16_t q = 0; q < profile_.rx_queues; q++) rxq_[q].FreeAll();
  if (txq_)
    for (uint16_t q = 0; q < profile_.tx_queues; q++) txq_[q].FreeAll();
  if (capture_) capture_->Flush();
  for (rte_flow* f : flows_) DestroyFlow(port_id_, f);
  auto stop_and_close = [this] {
    if (started_) rte_eth_dev_stop(port_id_);
    if (created_) {
      rte_eth_dev_close(port_id_);
      if (driver_->kind != DriverKind::kPci) rte_vdev_uninit(name_.c_str());
    }
  };
  // memif's control channel lives on the EAL interrupt thread: a peer's
  // disconnect (or the socket's EOF) runs memif_disconnect there, freeing the
  // regions and control channel that stop/close free too, and DPDK 22.11
  // does not serialise the two (double rte_free: SIGSEGV or heap corruption
  // when both ends of a pair close together). Closing on that thread makes
  // them take turns.
  if (profile_.driver == "net_memif") {
    RunOnInterruptThread(stop_and_close);
  } else {
    // net_af_xdp detaches its XDP program at close through netlink: from
    // the interface's namespace, whichever thread closes the port.
    std::optional<InNetns> in;
    if (kif_) in.emplace(kif_->netns_fd(), kif_->netns_ino());
    stop_and_close();
  }
  if (kif_) kif_->Closed();  // our XDP program off the interface, if the PMD left it
  if (!ring_set_.empty()) {
    absl::MutexLock l(&g_rings_mu);
    auto it = Rings().find(ring_set_);
    if (it != Rings().end()) {
      RingSet& rs = it->second;
      rs.side_open[static_cast<int>(profile_.ring_side)] = false;
      if (--rs.users == 0) {
        for (uint16_t q = 0; q < rs.nq; q++) {
          DrainAndFreeRing(rs.ab[q]);
          DrainAndFreeRing(rs.ba[q]);
        }
        rte_mempool_free(rs.pool);
        Rings().erase(it);
      }
    }
  } else if (pool_owned_ && pool_) {
    rte_mempool_free(pool_);
  }
}

bool Port::LinkUp() const {
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(port_id_, &link) != 0) return false;
  return link.link_status == RTE_ETH_LINK_UP;
}

// ---- RX -----------------------------------------------------------------------------

void Port::AccountRx(RxQueue& rq, rte_mbuf* const* pkts, uint16_t n) {
  uint64_t bytes = 0;
  for (uint16_t i = 0; i < n; i++) bytes += pkts[i]->pkt_len;
  rq.packets.Add(n);
  rq.bytes.Add(bytes);
  if (capture_) {
    const uint64_t now = Capture::NowNs();
    for (uint16_t i = 0; i < n; i++) {
      // A zero-copy frame from an in-process sender is read under a read
      // reference (a revoked one is not captured; the engine drops it).
      const ZcRead r = ZcAcquireFrame(pkts[i]);
      if (r == ZcRead::kRevoked) continue;
      capture_->Write(&pkts[i], 1, now);
      if (r == ZcRead::kHeld) ZcReleaseFrame(pkts[i]);
    }
  }
}

uint16_t Port::RxBurst(uint16_t q, rte_mbuf** pkts, uint16_t n) {
  RxQueue& rq = rxq_[q];
  if (tap_rx_trigger_) tap_rx_trigger_(tap_rx_sig_);  // this burst reads the tap (TapTriggerHandler)
  if (!rq.faults.active() && rq.pend_count == 0 && !rx_copy_) {
    const uint16_t got = rte_eth_rx_burst(port_id_, q, pkts, n);
    if (got) AccountRx(rq, pkts, got);
    return got;
  }
  return RxSlow(rq, q, pkts, n);
}

uint16_t Port::RxSlow(RxQueue& rq, uint16_t q, rte_mbuf** pkts, uint16_t n) {
  uint16_t out = rq.PopPending(pkts, n);
  if (out == n) return out;
  // pend_count is 0 now. Fault injection turns `want` frames into at most
  // 2 * want + 1, of which n - out >= want go to the caller: the rest
  // (<= want + 1) fit in pending.
  rte_mbuf* raw[kMaxBurst];
  const uint16_t want = std::min<uint16_t>(static_cast<uint16_t>(n - out), kMaxBurst);
  uint16_t got = rte_eth_rx_burst(port_id_, q, raw, want);
  if (got) AccountRx(rq, raw, got);
  rte_mbuf* faulted[2 * kMaxBurst + 1];
  rte_mbuf** list = raw;
  uint16_t k = got;
  if (rx_copy_) {
    // A NIC's layout: each frame copied into fresh mbufs of this pool
    // (headroom, then up to mbuf_data_room bytes a segment); a zero-copy one
    // under a read reference (a revoked one is dropped), as below.
    uint16_t kept = 0;
    for (uint16_t i = 0; i < got; i++) {
      rte_mbuf* m = raw[i];
      const ZcRead r = ZcAcquireFrame(m);
      rte_mbuf* c = r != ZcRead::kRevoked ? rte_pktmbuf_copy(m, pool_, 0, UINT32_MAX) : nullptr;
      if (r == ZcRead::kHeld) ZcReleaseFrame(m);
      rte_pktmbuf_free(m);
      if (!c) {
        if (r != ZcRead::kRevoked) {
          rq.rx_copy_nomem.Add(1);
          LogDrop(kDropRxCopy, "received frame dropped: no mbuf to copy it into (rx_drop_copy_nomem)");
        }
        continue;
      }
      raw[kept++] = c;
    }
    k = got = kept;
  }
  if (rq.faults.active()) {
    // Fault injection copies frames: zero-copy ones are copied into the pool
    // first, under a read reference (a revoked one is dropped).
    uint16_t kept = 0;
    for (uint16_t i = 0; i < got; i++) {
      rte_mbuf* m = raw[i];
      const ZcRead r = ZcAcquireFrame(m);
      if (r != ZcRead::kNone) {
        rte_mbuf* c = r == ZcRead::kHeld ? rte_pktmbuf_copy(m, pool_, 0, UINT32_MAX) : nullptr;
        if (r == ZcRead::kHeld) ZcReleaseFrame(m);
        rte_pktmbuf_free(m);
        if (!c) continue;
        m = c;
      }
      raw[kept++] = m;
    }
    k = rq.faults.Apply(raw, kept, faulted, pool_);
    list = faulted;
  }
  uint16_t i = 0;
  for (; i < k && out < n; i++) pkts[out++] = list[i];
  for (; i < k; i++) rq.PushPending(list[i]);
  return out;
}

// ---- TX -----------------------------------------------------------------------------

uint16_t Port::TxBurst(uint16_t q, rte_mbuf** pkts, uint16_t n) {
  TxQueue& tq = txq_[q];
  // The usual burst (no backlog, no fault injection, every frame fit to send
  // as it is) goes to Submit without TxChunk's copy of the list.
  if (likely(n > 0 && n <= kMaxBurst && tq.count == 0 && !tq.faults.active())) {
    uint32_t lens[kMaxBurst];
    uint16_t i = 0;
    for (; i < n; i++) {
      lens[i] = pkts[i]->pkt_len;
      if (unlikely(lens[i] > max_frame_len_ || NeedsLinearCopy(pkts[i]))) break;
    }
    if (likely(i == n)) return Submit(tq, q, pkts, lens, n);
  }
  if (n == 0) return TxChunk(tq, q, pkts, 0);
  uint16_t accepted = 0;
  while (n > 0) {
    const uint16_t chunk = std::min(n, kMaxBurst);
    accepted = static_cast<uint16_t>(accepted + TxChunk(tq, q, pkts, chunk));
    pkts += chunk;
    n = static_cast<uint16_t>(n - chunk);
  }
  return accepted;
}

uint16_t Port::TxChunk(TxQueue& tq, uint16_t q, rte_mbuf** pkts, uint16_t n) {
  rte_mbuf* work[kMaxBurst];
  uint32_t lens[kMaxBurst];
  uint16_t k = 0;
  for (uint16_t i = 0; i < n; i++) {
    rte_mbuf* m = pkts[i];
    const uint32_t len = m->pkt_len;
    if (unlikely(len > max_frame_len_)) {
      tq.oversize.Add();
      LogDrop(kDropOversize, absl::StrCat("a ", len, "-byte frame is longer than port.mtu ", profile_.mtu,
                                          " + 18 (tx_drop_oversize)"));
      rte_pktmbuf_free(m);
      continue;
    }
    if (unlikely(NeedsLinearCopy(m))) {
      rte_mbuf* c = LinearCopy(m, pool_);
      rte_pktmbuf_free(m);
      if (!c) {
        tq.nomem.Add();
        LogDrop(kDropNomem, absl::StrCat("a ", len, "-byte chain could not be copied into one mbuf (pool empty or ",
                                         "longer than mbuf_data_room) (tx_drop_nomem)"));
        continue;
      }
      tq.linearized.Add();
      m = c;
    }
    work[k] = m;
    lens[k++] = len;
  }
  if (!tq.faults.active()) return Submit(tq, q, work, lens, k);
  rte_mbuf* faulted[2 * kMaxBurst + 1];
  const uint16_t f = tq.faults.Apply(work, k, faulted, pool_);
  return Submit(tq, q, faulted, nullptr, f);
}

void Port::DrainBacklog(TxQueue& tq, uint16_t q) {
  while (tq.count > 0) {
    rte_mbuf* batch[kMaxBurst];
    uint32_t lens[kMaxBurst];
    const uint16_t n = static_cast<uint16_t>(std::min<size_t>(tq.count, kMaxBurst));
    for (uint16_t i = 0; i < n; i++) {
      batch[i] = tq.backlog[(tq.head + i) % tq.backlog.size()];
      lens[i] = batch[i]->pkt_len;  // read before the device (or a peer thread) owns it
    }
    const uint16_t sent = rte_eth_tx_burst(port_id_, q, batch, n);
    uint64_t bytes = 0;
    for (uint16_t i = 0; i < sent; i++) bytes += lens[i];
    tq.packets.Add(sent);
    tq.bytes.Add(bytes);
    tq.head = (tq.head + sent) % tq.backlog.size();
    tq.count -= sent;
    if (sent < n) break;  // the device is full: retry on the next call, never spin
  }
  tq.backlog_gauge.store(static_cast<uint32_t>(tq.count), std::memory_order_relaxed);
}

uint16_t Port::Submit(TxQueue& tq, uint16_t q, rte_mbuf** list, const uint32_t* lens, uint16_t n) {
  if (tq.count > 0) DrainBacklog(tq, q);
  const uint64_t now = capture_ ? Capture::NowNs() : 0;
  if (tq.count > 0) {
    // Keep the order: new frames wait behind the backlog.
    const uint16_t take = static_cast<uint16_t>(std::min<size_t>(n, tq.room()));
    if (capture_ && take) capture_->Write(list, take, now);
    for (uint16_t i = 0; i < take; i++) tq.Push(list[i]);
    if (take < n) {
      tq.full.Add(n - take);
      LogDrop(kDropFull, "the device and the TX backlog are full (tx_drop_full)");
      rte_pktmbuf_free_bulk(list + take, n - take);
    }
    tq.backlog_gauge.store(static_cast<uint32_t>(tq.count), std::memory_order_relaxed);
    return take;
  }
  if (n == 0) return 0;
  uint32_t own_lens[2 * kMaxBurst + 1];
  if (!lens) {
    for (uint16_t i = 0; i < n; i++) own_lens[i] = list[i]->pkt_len;
    lens = own_lens;
  }
  // Captured as handed to the device: once sent, a frame may be freed at any
  // moment (by the peer thread of a ring pair).
  if (capture_) capture_->Write(list, n, now);
  const uint16_t sent = rte_eth_tx_burst(port_id_, q, list, n);
  uint64_t bytes = 0;
  for (uint16_t i = 0; i < sent; i++) bytes += lens[i];
  tq.packets.Add(sent);
  tq.bytes.Add(bytes);
  uint16_t queued = 0;
  for (uint16_t i = sent; i < n; i++) {
    if (tq.room() > 0) {
      tq.Push(list[i]);
      queued++;
    } else {
      tq.full.Add();
      LogDrop(kDropFull, "the device and the TX backlog are full (tx_drop_full)");
      rte_pktmbuf_free(list[i]);
    }
  }
  tq.backlog_gauge.store(static_cast<uint32_t>(tq.count), std::memory_order_relaxed);
  return static_cast<uint16_t>(sent + queued);
}

size_t Port::PurgeRevokedTx(uint16_t q) {
  if (q >= profile_.tx_queues) return 0;
  TxQueue& tq = txq_[q];
  size_t dropped = 0;
  size_t kept = 0;
  const size_t cap = tq.backlog.size();
  for (size_t i = 0; i < tq.count; i++) {
    rte_mbuf* m = tq.backlog[(tq.head + i) % cap];
    if (ZcRevoked(m)) {
      rte_pktmbuf_free(m);
      dropped++;
    } else {
      tq.backlog[(tq.head + kept) % cap] = m;
      kept++;
    }
  }
  tq.count = kept;
  tq.backlog_gauge.store(static_cast<uint32_t>(tq.count), std::memory_order_relaxed);
  if (rte_mbuf* h = tq.faults.TakeHeld()) {
    if (ZcRevoked(h)) {
      rte_pktmbuf_free(h);
      dropped++;
    } else {
      Submit(tq, q, &h, nullptr, 1);
    }
  }
  return dropped;
}

void Port::Flush(uint16_t q) {
  if (q < profile_.tx_queues) {
    TxQueue& tq = txq_[q];
    if (rte_mbuf* m = tq.faults.TakeHeld())
      Submit(tq, q, &m, nullptr, 1);
    else if (tq.count > 0)
      DrainBacklog(tq, q);
  }
  if (q < profile_.rx_queues) {
    RxQueue& rq = rxq_[q];
    if (rte_mbuf* m = rq.faults.TakeHeld()) {
      if (rq.pend_count < RxQueue::kPendingCap)
        rq.PushPending(m);
      else
        rte_pktmbuf_free(m);
    }
  }
}

uint32_t Port::TxBacklog(uint16_t q) const { return txq_[q].backlog_gauge.load(std::memory_order_relaxed); }

// ---- offload helpers -------------------------------------------------------------

TxChecksumRequest Port::RequestTxChecksums(rte_mbuf* m, const TxChecksumRequest& want) const {
  TxChecksumRequest left = want;
  uint64_t flags = 0;
  if (want.ip_checksum && !want.ipv6 && offloads_.tx_ipv4_checksum) {
    flags |= RTE_MBUF_F_TX_IP_CKSUM;
    left.ip_checksum = false;
  }
  if (want.udp_checksum && offloads_.tx_udp_checksum) {
    flags |= RTE_MBUF_F_TX_UDP_CKSUM;
    left.udp_checksum = false;
  }
  if (want.ipv6 && want.ip_checksum) left.ip_checksum = false;  // IPv6 has none
  if (!flags) return left;
  flags |= want.ipv6 ? RTE_MBUF_F_TX_IPV6 : RTE_MBUF_F_TX_IPV4;
  m->l2_len = want.l2_len;
  m->l3_len = want.l3_len;
  m->ol_flags |= flags;
  uint8_t* l3 = rte_pktmbuf_mtod_offset(m, uint8_t*, want.l2_len);
  if (flags & RTE_MBUF_F_TX_IP_CKSUM) {
    auto* ip = reinterpret_cast<rte_ipv4_hdr*>(l3);
    ip->hdr_checksum = 0;
  }
  if (flags & RTE_MBUF_F_TX_UDP_CKSUM) {
    // Offloads expect the pseudo-header sum in the UDP checksum field.
    auto* udp = reinterpret_cast<rte_udp_hdr*>(l3 + want.l3_len);
    udp->dgram_cksum = want.ipv6 ? rte_ipv6_phdr_cksum(reinterpret_cast<const rte_ipv6_hdr*>(l3), m->ol_flags)
                                 : rte_ipv4_phdr_cksum(reinterpret_cast<const rte_ipv4_hdr*>(l3), m->ol_flags);
  }
  return left;
}

// ---- capture, faults, stats --------------------------------------------------------

absl::Status Port::StartCapture(const std::string& path) {
  auto c = Capture::Open(path);
  if (!c.ok()) return c.status();
  capture_ = std::move(*c);
  profile_.capture = path;
  return absl::OkStatus();
}

void Port::StopCapture() {
  if (capture_) capture_->Flush();
  capture_.reset();
  profile_.capture.clear();
}

void Port::SetFaults(const FaultConfig& f) {
  profile_.faults = f;
  for (uint16_t q = 0; q < profile_.rx_queues; q++) {
    if (rte_mbuf* m = rxq_[q].faults.TakeHeld()) rxq_[q].PushPending(m);
    rxq_[q].faults.Configure(f.rx, f.seed, 2 * uint64_t{q}, f.reorder_hold);
  }
  for (uint16_t q = 0; q < profile_.tx_queues; q++) {
    if (rte_mbuf* m = txq_[q].faults.TakeHeld()) Submit(txq_[q], q, &m, nullptr, 1);
    txq_[q].faults.Configure(f.tx, f.seed, 2 * uint64_t{q} + 1, f.reorder_hold);
  }
}

PortStats Port::Stats() const {
  PortStats s;
  for (uint16_t q = 0; q < profile_.rx_queues; q++) {
    const RxQueue& rq = rxq_[q];
    s.rx_packets += rq.packets.Get();
    s.rx_bytes += rq.bytes.Get();
    s.rx_faults += rq.faults.counts();
    s.rx_copy_nomem += rq.rx_copy_nomem.Get();
  }
  for (uint16_t q = 0; q < profile_.tx_queues; q++) {
    const TxQueue& tq = txq_[q];
    s.tx_packets += tq.packets.Get();
    s.tx_bytes += tq.bytes.Get();
    s.tx_full += tq.full.Get();
    s.tx_oversize += tq.oversize.Get();
    s.tx_nomem += tq.nomem.Get();
    s.tx_linearized += tq.linearized.Get();
    s.tx_backlog += tq.backlog_gauge.load(std::memory_order_relaxed);
    s.tx_faults += tq.faults.counts();
  }
  s.capture_frames = capture_ ? capture_->frames() : 0;
  rte_eth_stats es{};
  if (rte_eth_stats_get(port_id_, &es) == 0) {
    s.dev_ipackets = es.ipackets;
    s.dev_ibytes = es.ibytes;
    s.dev_opackets = es.opackets;
    s.dev_obytes = es.obytes;
    s.dev_imissed = es.imissed;
    s.dev_ierrors = es.ierrors;
    s.dev_oerrors = es.oerrors;
    s.dev_rx_nombuf = es.rx_nombuf;
    if (es.imissed) LogDrop(kDropMissed, "the device dropped received frames: RX ring full (rx_drop_missed)");
    if (es.rx_nombuf) LogDrop(kDropNombuf, "the device dropped received frames: no mbuf (rx_drop_nombuf)");
    if (es.oerrors) LogDrop(kDropOerrors, "the device refused frames (tx_errors)");
  }
  if (pool_) {
    s.pool_in_use = rte_mempool_in_use_count(pool_);
    s.pool_free = rte_mempool_avail_count(pool_);
  }
  return s;
}

void Port::ResetStats() {
  for (uint16_t q = 0; q < profile_.rx_queues; q++) {
    rxq_[q].packets.Reset();
    rxq_[q].bytes.Reset();
    rxq_[q].faults.ResetCounts();
  }
  for (uint16_t q = 0; q < profile_.tx_queues; q++) {
    TxQueue& tq = txq_[q];
    for (Counter* c : {&tq.packets, &tq.bytes, &tq.full, &tq.oversize, &tq.nomem, &tq.linearized}) c->Reset();
    tq.faults.ResetCounts();
  }
  rte_eth_stats_reset(port_id_);
}

void Port::FillTelemetry(TelemetryDict& d) const {
  const PortStats s = Stats();
  d.AddString("name", name_);
  d.AddString("driver", profile_.driver);
  d.AddString("mac", mac_.ToString());
  d.Add("rx_interrupt", rx_wait_fds_.empty() ? 0 : 1);  // PortProfile::rx_interrupt, granted
  d.Add("rx_queues", profile_.rx_queues);
  d.Add("mtu", profile_.mtu);
  if (kif_) {
    d.AddString("interface", kif_->name());
    d.Add("ifindex", static_cast<uint64_t>(kif_->ifindex()));
    d.Add("interface_mtu", kif_->link_mtu());
    d.AddString("identity", kif_->kernel_identity() ? "kernel" : "own");
    if (kif_->af_xdp()) {
      const std::optional<bool> zc = kif_->zero_copy();
      d.AddString("xdp_mode", !zc ? "unknown" : *zc ? "zero-copy" : "copy");
      d.Add("xdp_sockets", kif_->sockets());
      if (const std::optional<XdpStats> x = kif_->xdp_stats()) {
        d.Add("xdp_to_socket", x->to_xsk);
        d.Add("xdp_pass_not_roce", x->pass_not_roce);
        d.Add("xdp_pass_not_local", x->pass_not_local);
        d.Add("xdp_pass_malformed", x->pass_malformed);
      }
    }
    if (kif_->kernel_identity()) {
      std::string addrs;
      for (const IpPrefix& a : kif_->Addrs()) absl::StrAppend(&addrs, addrs.empty() ? "" : " ", a.ToString());
      d.AddString("addresses", addrs);
      const KernelIfaceCounters kc = kif_->counters();
      d.Add("kernel_resolutions_asked", kc.resolutions_asked);
      d.Add("kernel_route_failures", kc.route_failures);
      d.Add("addr_changes", kc.addr_changes);
    }
  }
  d.Add("rx_packets", s.rx_packets);
  d.Add("rx_bytes", s.rx_bytes);
  d.Add("tx_packets", s.tx_packets);
  d.Add("tx_bytes", s.tx_bytes);
  d.Add("tx_drop_full", s.tx_full);
  d.Add("tx_drop_oversize", s.tx_oversize);
  d.Add("tx_drop_nomem", s.tx_nomem);
  d.Add("tx_linearized", s.tx_linearized);
  d.Add("rx_drop_copy_nomem", s.rx_copy_nomem);
  d.Add("tx_backlog", s.tx_backlog);
  d.Add("rx_drop_nombuf", s.dev_rx_nombuf);
  d.Add("rx_drop_missed", s.dev_imissed);
  d.Add("rx_errors", s.dev_ierrors);
  d.Add("tx_errors", s.dev_oerrors);
  d.Add("fault_rx_drop", s.rx_faults.dropped);
  d.Add("fault_rx_duplicate", s.rx_faults.duplicated);
  d.Add("fault_rx_reorder", s.rx_faults.reordered);
  d.Add("fault_rx_corrupt", s.rx_faults.corrupted);
  d.Add("fault_rx_nomem", s.rx_faults.nomem);
  d.Add("fault_tx_drop", s.tx_faults.dropped);
  d.Add("fault_tx_duplicate", s.tx_faults.duplicated);
  d.Add("fault_tx_reorder", s.tx_faults.reordered);
  d.Add("fault_tx_corrupt", s.tx_faults.corrupted);
  d.Add("fault_tx_nomem", s.tx_faults.nomem);
  d.Add("capture_frames", s.capture_frames);
  d.Add("dev_ipackets", s.dev_ipackets);
  d.Add("dev_opackets", s.dev_opackets);
  d.Add("dev_ibytes", s.dev_ibytes);
  d.Add("dev_obytes", s.dev_obytes);
  d.Add("pool_in_use", s.pool_in_use);
  d.Add("pool_free", s.pool_free);
}

absl::StatusOr<std::pair<std::unique_ptr<Port>, std::unique_ptr<Port>>> OpenRingPair(PortProfile base) {
  base.driver = "net_ring";
  base.ring_side = RingSide::kA;
  auto a = Port::Open(base);
  if (!a.ok()) return a.status();
  base.ring_side = RingSide::kB;
  if (base.mac) base.mac->b[5] ^= 1;  // a different MAC for the other end
  if (!base.capture.empty()) {        // and its own capture file: x.pcap -> x-b.pcap
    const size_t dot = base.capture.rfind('.');
    const size_t slash = base.capture.rfind('/');
    const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
    base.capture = has_ext ? base.capture.substr(0, dot) + "-b" + base.capture.substr(dot) : base.capture + "-b";
  }
  auto b = Port::Open(base);
  if (!b.ok()) return b.status();
  return std::make_pair(std::move(*a), std::move(*b));
}

}  // namespace roce::port
