// SPDX-License-Identifier: MIT
// XdpProgramPath, InspectXdp, PrepareInterfaceForXdp, XdpFilter (the maps of
// our XDP program: owner record, address set, counters) and the AF_XDP socket
// helpers, over libbpf's syscall wrappers (bpf_xdp_query/attach/detach, by-id
// fds, object info). No DPDK: the PMD loads and detaches the program itself.
#include "stack/port/xdp_filter.h"

#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_link.h>
#include <linux/if_xdp.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "stack/port/xdp/xdp_config.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif

namespace roce::port {
namespace {

constexpr char kProgName[] = "soft_rnic_xdp";
constexpr char kOwnerMap[] = "srnic_owner";
constexpr char kAddrsMap[] = "srnic_addrs";
constexpr char kStatsMap[] = "srnic_stats";
constexpr uint32_t kMaxAddrs = 256;  // srnic_addrs max_entries
constexpr uint32_t kNumStats = 4;    // srnic_stats entries
// An owner record still empty this long after the load: its process died
// between the PMD's attach and XdpFilter::Attach.
constexpr uint64_t kOwnerGraceNs = 10'000'000'000ull;

// srnic_owner's value (the BPF side's struct srnic_owner_rec).
struct OwnerRec {
  uint32_t pid;
  uint32_t pad;
  uint64_t start_time;
};
static_assert(sizeof(OwnerRec) == 16);

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(Fd&& o) noexcept : fd_(o.Release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = o.Release();
    }
    return *this;
  }
  int get() const { return fd_; }
  int Release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

absl::Status ErrnoStatus(int err, const std::string& what) {
  std::string msg = absl::StrCat(what, ": ", strerror(err));
  if (err == EPERM || err == EACCES)
    return absl::PermissionDeniedError(absl::StrCat(msg, " (needs CAP_SYS_ADMIN / CAP_BPF + CAP_NET_ADMIN)"));
  if (err == ENOENT || err == ENODEV) return absl::NotFoundError(msg);
  return absl::InternalError(msg);
}

std::string IfName(int ifindex) {
  char buf[IF_NAMESIZE] = {};
  if (if_indextoname(static_cast<unsigned>(ifindex), buf)) return buf;
  return absl::StrCat("ifindex ", ifindex);
}

const char* ModeName(uint32_t mode) {
  switch (mode) {
    case XDP_FLAGS_DRV_MODE: return "native";
    case XDP_FLAGS_SKB_MODE: return "generic";
    case XDP_FLAGS_HW_MODE: return "offloaded";
    default: return "unknown";
  }
}

// Field 22 of /proc/<pid>/stat (start time in clock ticks since boot), 0 if
// it cannot be read.
uint64_t ProcStartTime(const std::string& pid) {
  std::ifstream f("/proc/" + pid + "/stat");
  std::string s;
  if (!f || !std::getline(f, s)) return 0;
  size_t rp = s.rfind(')');  // comm may hold spaces and parentheses
  if (rp == std::string::npos) return 0;
  std::istringstream in(s.substr(rp + 1));
  std::string tok;
  for (int field = 3; field <= 22; field++) {
    if (!(in >> tok)) return 0;
  }
  return std::strtoull(tok.c_str(), nullptr, 10);
}

bool OwnerAlive(const OwnerRec& o) {
  if (o.pid == 0) return false;
  if (kill(static_cast<pid_t>(o.pid), 0) != 0 && errno != EPERM) return false;
  if (o.start_time == 0) return true;
  uint64_t now = ProcStartTime(std::to_string(o.pid));
  // Unreadable (hidepid): trust kill(); a different start time: the pid was reused.
  return now == 0 || now == o.start_time;
}

uint64_t BootTimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// What is attached on `ifindex`: the program id and its mode (0, 0: none).
absl::Status QueryAttached(int ifindex, uint32_t* id, uint32_t* mode) {
  bpf_xdp_query_opts q{};
  q.sz = sizeof(q);
  int rc = bpf_xdp_query(ifindex, 0, &q);
  if (rc) return ErrnoStatus(-rc, absl::StrCat("bpf_xdp_query(", IfName(ifindex), ")"));
  *id = 0;
  *mode = 0;
  if (q.drv_prog_id) {
    *id = q.drv_prog_id;
    *mode = XDP_FLAGS_DRV_MODE;
  } else if (q.skb_prog_id) {
    *id = q.skb_prog_id;
    *mode = XDP_FLAGS_SKB_MODE;
  } else if (q.hw_prog_id) {
    *id = q.hw_prog_id;
    *mode = XDP_FLAGS_HW_MODE;
  } else if (q.prog_id) {  // a kernel that reports only the single id
    *id = q.prog_id;
    *mode = q.attach_mode == XDP_ATTACHED_SKB  ? XDP_FLAGS_SKB_MODE
            : q.attach_mode == XDP_ATTACHED_HW ? XDP_FLAGS_HW_MODE
                                                : XDP_FLAGS_DRV_MODE;
  }
  return absl::OkStatus();
}

// The id currently attached in `mode` (0: none).
absl::StatusOr<uint32_t> AttachedInMode(int ifindex, uint32_t mode) {
  bpf_xdp_query_opts q{};
  q.sz = sizeof(q);
  int rc = bpf_xdp_query(ifindex, 0, &q);
  if (rc) return ErrnoStatus(-rc, absl::StrCat("bpf_xdp_query(", IfName(ifindex), ")"));
  switch (mode) {
    case XDP_FLAGS_DRV_MODE: return q.drv_prog_id;
    case XDP_FLAGS_SKB_MODE: return q.skb_prog_id;
    case XDP_FLAGS_HW_MODE: return q.hw_prog_id;
    default: return q.prog_id;
  }
}

struct ProgInfo {
  std::string name;
  uint64_t load_time_ns = 0;
  std::vector<uint32_t> map_ids;
};

absl::StatusOr<ProgInfo> GetProgInfo(int prog_fd) {
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  int rc = bpf_obj_get_info_by_fd(prog_fd, &info, &len);
  if (rc) return ErrnoStatus(-rc, "bpf_obj_get_info_by_fd(prog)");
  ProgInfo out;
  out.name.assign(info.name, strnlen(info.name, sizeof(info.name)));
  out.load_time_ns = info.load_time;
  uint32_t n = info.nr_map_ids;
  if (n) {
    out.map_ids.resize(n);
    bpf_prog_info again{};
    again.nr_map_ids = n;
    again.map_ids = reinterpret_cast<uint64_t>(out.map_ids.data());
    len = sizeof(again);
    rc = bpf_obj_get_info_by_fd(prog_fd, &again, &len);
    if (rc) return ErrnoStatus(-rc, "bpf_obj_get_info_by_fd(prog map ids)");
    out.map_ids.resize(std::min(n, again.nr_map_ids));
  }
  return out;
}

struct MapRef {
  std::string name;
  uint32_t value_size = 0;
  uint32_t max_entries = 0;
  Fd fd;
};

// The program's maps, opened by id (maps that vanished meanwhile skipped).
absl::StatusOr<std::vector<MapRef>> OpenMaps(const std::vector<uint32_t>& ids) {
  std::vector<MapRef> out;
  for (uint32_t id : ids) {
    Fd fd(bpf_map_get_fd_by_id(id));
    if (fd.get() < 0) {
      if (errno == ENOENT) continue;
      return ErrnoStatus(errno, absl::StrCat("bpf_map_get_fd_by_id(", id, ")"));
    }
    bpf_map_info mi{};
    uint32_t len = sizeof(mi);
    int rc = bpf_obj_get_info_by_fd(fd.get(), &mi, &len);
    if (rc) return ErrnoStatus(-rc, "bpf_obj_get_info_by_fd(map)");
    MapRef m;
    m.name.assign(mi.name, strnlen(mi.name, sizeof(mi.name)));
    m.value_size = mi.value_size;
    m.max_entries = mi.max_entries;
    m.fd = std::move(fd);
    out.push_back(std::move(m));
  }
  return out;
}

MapRef* FindMap(std::vector<MapRef>& maps, const char* name) {
  for (auto& m : maps)
    if (m.name == name) return &m;
  return nullptr;
}

// Detaches `prog_fd` from `ifindex` in `mode`, only if it is still the one
// attached (XDP_FLAGS_REPLACE + expected fd: EEXIST otherwise).
int DetachExpected(int ifindex, uint32_t mode, int prog_fd) {
  bpf_xdp_attach_opts o{};
  o.sz = sizeof(o);
  o.old_prog_fd = prog_fd;
  return bpf_xdp_detach(ifindex, mode | XDP_FLAGS_REPLACE, &o);
}

}  // namespace

std::string XdpProgramPath() {
  const char* env = getenv("SOFT_RNIC_XDP_PROG");
  if (env && *env) return env;
  return SOFT_RNIC_XDP_PROG_DEFAULT;
}

absl::StatusOr<XdpAttached> InspectXdp(int ifindex) {
  XdpAttached a;
  // The program may be detached (and freed) between the query and the
  // by-id open: query again then.
  for (int attempt = 0; attempt < 3; attempt++) {
    uint32_t id = 0, mode = 0;
    if (absl::Status s = QueryAttached(ifindex, &id, &mode); !s.ok()) return s;
    if (id == 0) return XdpAttached{};
    Fd pfd(bpf_prog_get_fd_by_id(id));
    if (pfd.get() < 0) {
      if (errno == ENOENT) continue;
      return ErrnoStatus(errno, absl::StrCat("bpf_prog_get_fd_by_id(", id, ")"));
    }
    auto info = GetProgInfo(pfd.get());
    if (!info.ok()) return info.status();
    a = XdpAttached{};
    a.prog_id = id;
    a.mode_flags = mode;
    a.name = info->name;
    a.load_time_ns = info->load_time_ns;
    if (a.name != kProgName) return a;
    auto maps = OpenMaps(info->map_ids);
    if (!maps.ok()) return maps.status();
    MapRef* owner = FindMap(*maps, kOwnerMap);
    if (!owner || owner->value_size < sizeof(OwnerRec)) return a;
    a.ours = true;
    std::vector<uint8_t> val(owner->value_size);
    uint32_t key = 0;
    if (bpf_map_lookup_elem(owner->fd.get(), &key, val.data()) == 0) {
      OwnerRec rec;
      memcpy(&rec, val.data(), sizeof(rec));
      a.owner_pid = rec.pid;
      a.owner_alive = OwnerAlive(rec);
    }
    return a;
  }
  return absl::UnavailableError(
      absl::StrCat("the XDP program on ", IfName(ifindex), " kept changing while inspected"));
}

absl::Status PrepareInterfaceForXdp(int ifindex, const std::string& ifname) {
  auto a = InspectXdp(ifindex);
  if (!a.ok()) return a.status();
  if (a->prog_id == 0) return absl::OkStatus();
  if (!a->ours)
    return absl::FailedPreconditionError(absl::StrCat(
        "interface ", ifname, " already has XDP program '", a->name, "' (id ", a->prog_id,
        ", ", ModeName(a->mode_flags), " mode) attached; the soft-RNIC does not replace it: "
        "detach it (ip link set dev ", ifname, " xdp off) or use another interface"));
  if (a->owner_alive)
    return absl::FailedPreconditionError(absl::StrCat(
        "interface ", ifname, " already carries a soft-RNIC adapter (pid ", a->owner_pid,
        "); two adapters on one interface are not supported"));
  std::string why;
  if (a->owner_pid != 0) {
    why = absl::StrCat("pid ", a->owner_pid, " is gone");
  } else {
    uint64_t now = BootTimeNs();
    if (a->load_time_ns == 0 || now < a->load_time_ns + kOwnerGraceNs)
      return absl::FailedPreconditionError(absl::StrCat(
          "interface ", ifname, " already carries a soft-RNIC adapter that is starting (program id ",
          a->prog_id, ", no owner recorded yet); two adapters on one interface are not supported"));
    why = "its owner never registered";
  }
  Fd pfd(bpf_prog_get_fd_by_id(a->prog_id));
  if (pfd.get() < 0) {
    if (errno == ENOENT) return PrepareInterfaceForXdp(ifindex, ifname);  // gone meanwhile
    return ErrnoStatus(errno, absl::StrCat("bpf_prog_get_fd_by_id(", a->prog_id, ")"));
  }
  int rc = DetachExpected(ifindex, a->mode_flags, pfd.get());
  if (rc == -EEXIST) {
    // Replaced meanwhile (another adapter started): judge the new one.
    return PrepareInterfaceForXdp(ifindex, ifname);
  }
  if (rc)
    return ErrnoStatus(-rc, absl::StrCat("removing the stale soft_rnic_xdp program (id ",
                                         a->prog_id, ") from ", ifname));
  fprintf(stderr, "soft-rnic: removed a stale soft_rnic_xdp program (%s) from %s\n", why.c_str(),
          ifname.c_str());
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<XdpFilter>> XdpFilter::Attach(int ifindex) {
  const std::string ifname = IfName(ifindex);
  auto a = InspectXdp(ifindex);
  if (!a.ok()) return a.status();
  if (a->prog_id == 0)
    return absl::FailedPreconditionError(absl::StrCat(
        "no XDP program on ", ifname, " (the net_af_xdp PMD should have loaded xdp_prog=",
        XdpProgramPath(), ")"));
  if (!a->ours)
    return absl::FailedPreconditionError(absl::StrCat("the XDP program on ", ifname, " is '",
                                                      a->name, "' (id ", a->prog_id,
                                                      "), not soft_rnic_xdp"));
  if (a->owner_alive && a->owner_pid != static_cast<uint32_t>(getpid()))
    return absl::FailedPreconditionError(absl::StrCat(
        "interface ", ifname, " already carries a soft-RNIC adapter (pid ", a->owner_pid,
        "); two adapters on one interface are not supported"));

  std::unique_ptr<XdpFilter> f(new XdpFilter());
  f->ifindex_ = ifindex;
  f->prog_id_ = a->prog_id;
  f->mode_flags_ = a->mode_flags;
  Fd pfd(bpf_prog_get_fd_by_id(a->prog_id));
  if (pfd.get() < 0)
    return ErrnoStatus(errno, absl::StrCat("bpf_prog_get_fd_by_id(", a->prog_id, ")"));
  auto info = GetProgInfo(pfd.get());
  if (!info.ok()) return info.status();
  auto maps = OpenMaps(info->map_ids);
  if (!maps.ok()) return maps.status();
  MapRef* addrs = FindMap(*maps, kAddrsMap);
  MapRef* owner = FindMap(*maps, kOwnerMap);
  MapRef* stats = FindMap(*maps, kStatsMap);
  if (!addrs || !owner || !stats || owner->value_size != sizeof(OwnerRec) ||
      stats->value_size != sizeof(uint64_t) || stats->max_entries < kNumStats)
    return absl::FailedPreconditionError(absl::StrCat(
        "the soft_rnic_xdp program on ", ifname, " (id ", a->prog_id,
        ") lacks the maps srnic_addrs/srnic_owner/srnic_stats this build expects"));

  OwnerRec rec{};
  rec.pid = static_cast<uint32_t>(getpid());
  rec.start_time = ProcStartTime("self");
  uint32_t key = 0;
  int rc = bpf_map_update_elem(owner->fd.get(), &key, &rec, BPF_ANY);
  if (rc) return ErrnoStatus(-rc, "writing srnic_owner");

  f->prog_fd_ = pfd.Release();
  f->addrs_fd_ = addrs->fd.Release();
  f->owner_fd_ = owner->fd.Release();
  f->stats_fd_ = stats->fd.Release();
  return f;
}

XdpFilter::~XdpFilter() {
  for (int fd : {prog_fd_, addrs_fd_, owner_fd_, stats_fd_})
    if (fd >= 0) close(fd);
}

absl::Status XdpFilter::SetAddrs(const std::vector<wire::IpAddr>& addrs) {
  std::vector<std::array<uint8_t, 16>> want;
  for (const auto& a : addrs) want.push_back(a.b);
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  if (want.size() > kMaxAddrs)
    return absl::InvalidArgumentError(
        absl::StrCat(want.size(), " addresses; the XDP program takes at most ", kMaxAddrs));
  // What is in the map now (collected first: deleting while walking a hash
  // map can restart the walk).
  std::vector<std::array<uint8_t, 16>> have;
  std::array<uint8_t, 16> cur{}, next{};
  bool first = true;
  while (bpf_map_get_next_key(addrs_fd_, first ? nullptr : cur.data(), next.data()) == 0) {
    have.push_back(next);
    cur = next;
    first = false;
    if (have.size() > 4 * kMaxAddrs) break;  // cannot happen; no endless walk
  }
  std::sort(have.begin(), have.end());
  const uint8_t one = 1;
  for (const auto& k : want) {
    if (std::binary_search(have.begin(), have.end(), k)) continue;
    int rc = bpf_map_update_elem(addrs_fd_, k.data(), &one, BPF_ANY);
    if (rc) return ErrnoStatus(-rc, "adding to srnic_addrs");
  }
  for (const auto& k : have) {
    if (std::binary_search(want.begin(), want.end(), k)) continue;
    int rc = bpf_map_delete_elem(addrs_fd_, k.data());
    if (rc && rc != -ENOENT) return ErrnoStatus(-rc, "removing from srnic_addrs");
  }
  return absl::OkStatus();
}

XdpStats XdpFilter::Stats() const {
  XdpStats s;
  int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return s;
  std::vector<uint64_t> v(static_cast<size_t>(ncpu));
  uint64_t sum[kNumStats] = {};
  for (uint32_t i = 0; i < kNumStats; i++) {
    if (bpf_map_lookup_elem(stats_fd_, &i, v.data()) != 0) continue;
    for (uint64_t x : v) sum[i] += x;
  }
  s.to_xsk = sum[0];
  s.pass_not_roce = sum[1];
  s.pass_not_local = sum[2];
  s.pass_malformed = sum[3];
  return s;
}

absl::Status XdpFilter::Detach() {
  auto cur = AttachedInMode(ifindex_, mode_flags_);
  if (!cur.ok()) {
    if (absl::IsNotFound(cur.status())) return absl::OkStatus();  // interface gone
    return cur.status();
  }
  if (*cur != prog_id_) return absl::OkStatus();
  int rc = DetachExpected(ifindex_, mode_flags_, prog_fd_);
  if (rc == 0 || rc == -EEXIST) return absl::OkStatus();  // EEXIST: replaced meanwhile
  return ErrnoStatus(-rc, absl::StrCat("detaching soft_rnic_xdp (id ", prog_id_, ") from ",
                                       IfName(ifindex_)));
}

std::vector<int> AfXdpSocketFds() {
  std::vector<int> out;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return out;
  const int self = dirfd(d);
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long fd = strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == self) continue;
    int dom = 0;
    socklen_t len = sizeof(dom);
    if (getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_DOMAIN, &dom, &len) == 0 && dom == AF_XDP)
      out.push_back(static_cast<int>(fd));
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<bool> XskZeroCopy(int fd) {
  xdp_options opt{};
  socklen_t len = sizeof(opt);
  if (getsockopt(fd, SOL_XDP, XDP_OPTIONS, &opt, &len) != 0) return std::nullopt;
  return (opt.flags & XDP_OPTIONS_ZEROCOPY) != 0;
}

}  // namespace roce::port
