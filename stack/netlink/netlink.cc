// SPDX-License-Identifier: MIT
// rtnetlink queries with libmnl: the query socket (sequence numbers, acks with
// extended-ack messages, 1 s receive timeout, bounded buffer), the parsers of
// link / address / neighbour / route messages (every attribute validated
// before use), and the one-shot calls of netlink.h: GetLink, GetAddrs,
// GetRoute, GetNeighbor, TriggerResolution.
#include "stack/netlink/netlink.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <absl/strings/str_cat.h>

namespace roce::netlink {
namespace {

using wire::IpAddr;

// <linux/if.h> (which has it) clashes with <net/if.h>.
constexpr unsigned kIffLowerUp = 1u << 16;

// ---- attribute tables ----------------------------------------------------------

// Attributes of one level by type; types above Max (newer kernels) are ignored.
template <int Max>
struct Attrs {
  std::array<const nlattr*, Max + 1> a{};
  const nlattr* operator[](int type) const { return type >= 0 && type <= Max ? a[type] : nullptr; }
};

template <int Max>
int Collect(const nlattr* attr, void* data) {
  auto* t = static_cast<Attrs<Max>*>(data);
  int type = mnl_attr_get_type(attr);
  if (type <= Max) t->a[type] = attr;
  return MNL_CB_OK;
}

// The attributes after a family header of hdr_len bytes; false if the message
// is shorter than the header.
template <int Max>
bool ParseMsg(const nlmsghdr* nlh, size_t hdr_len, Attrs<Max>* out) {
  if (mnl_nlmsg_get_payload_len(nlh) < hdr_len) return false;
  return mnl_attr_parse(nlh, hdr_len, Collect<Max>, out) >= 0;
}

template <int Max>
bool ParseNested(const nlattr* attr, Attrs<Max>* out) {
  if (attr == nullptr || mnl_attr_validate(attr, MNL_TYPE_NESTED) < 0) return false;
  return mnl_attr_parse_nested(attr, Collect<Max>, out) >= 0;
}

std::optional<uint32_t> U32(const nlattr* a) {
  if (a == nullptr || mnl_attr_validate(a, MNL_TYPE_U32) < 0) return std::nullopt;
  return mnl_attr_get_u32(a);
}

std::string Str(const nlattr* a) {
  if (a == nullptr || mnl_attr_validate(a, MNL_TYPE_STRING) < 0) return "";
  const char* p = static_cast<const char*>(mnl_attr_get_payload(a));
  return std::string(p, strnlen(p, mnl_attr_get_payload_len(a)));
}

// An address of `family` from a 4- or 16-byte payload.
bool IpFromBytes(int family, const void* p, size_t len, IpAddr* out) {
  if (family == AF_INET && len == 4) {
    uint32_t be;
    std::memcpy(&be, p, 4);
    *out = IpAddr::FromV4(ntohl(be));
    return true;
  }
  if (family == AF_INET6 && len == 16) {
    *out = IpAddr::FromV6(static_cast<const uint8_t*>(p));
    return true;
  }
  return false;
}

bool IpFrom(const nlattr* a, int family, IpAddr* out) {
  if (a == nullptr) return false;
  return IpFromBytes(family, mnl_attr_get_payload(a), mnl_attr_get_payload_len(a), out);
}

int FamilyOf(const IpAddr& ip) { return ip.IsV4() ? AF_INET : AF_INET6; }

void PutIp(nlmsghdr* nlh, uint16_t type, const IpAddr& ip) {
  if (ip.IsV4()) {
    uint32_t be = htonl(ip.V4());
    mnl_attr_put(nlh, type, 4, &be);
  } else {
    mnl_attr_put(nlh, type, 16, ip.b.data());
  }
}

NeighState StateFromNud(uint16_t nud) {
  if (nud & NUD_PERMANENT) return NeighState::kPermanent;
  if (nud & NUD_NOARP) return NeighState::kNoArp;
  if (nud & NUD_REACHABLE) return NeighState::kReachable;
  if (nud & NUD_STALE) return NeighState::kStale;
  if (nud & NUD_DELAY) return NeighState::kDelay;
  if (nud & NUD_PROBE) return NeighState::kProbe;
  if (nud & NUD_FAILED) return NeighState::kFailed;
  if (nud & NUD_INCOMPLETE) return NeighState::kIncomplete;
  return NeighState::kNone;
}

// A request buffer: the largest request here is a header, a family header and
// three small attributes.
struct Request {
  alignas(nlmsghdr) char buf[512] = {};  // zeroed: libmnl leaves attribute padding as it finds it
  nlmsghdr* nlh;
  Request(uint16_t type, uint16_t flags) {
    nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = type;
    nlh->nlmsg_flags = flags;
  }
  template <typename T>
  T* Extra() {
    return static_cast<T*>(mnl_nlmsg_put_extra_header(nlh, sizeof(T)));
  }
};

// Runs a dump again when the kernel says it was interrupted by a change.
absl::Status RunDump(detail::QuerySocket& s, Request& req, absl::string_view what,
                     const std::function<void()>& reset,
                     const std::function<void(const nlmsghdr*)>& on_msg) {
  absl::Status st;
  for (int attempt = 0; attempt < 4; ++attempt) {
    reset();
    st = s.Run(req.nlh, what, on_msg);
    if (!absl::IsAborted(st)) return st;
  }
  return st;
}

absl::StatusOr<LinkInfo> QueryLink(detail::QuerySocket& s, int ifindex, const std::string* name) {
  Request req(RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK);
  auto* ifi = req.Extra<ifinfomsg>();
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = ifindex;
  if (name) mnl_attr_put_strz(req.nlh, IFLA_IFNAME, name->c_str());
  mnl_attr_put_u32(req.nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
  std::optional<LinkInfo> found;
  std::string what = name ? absl::StrCat("RTM_GETLINK '", *name, "'")
                          : absl::StrCat("RTM_GETLINK ifindex ", ifindex);
  absl::Status st = s.Run(req.nlh, what, [&](const nlmsghdr* nlh) {
    LinkInfo l;
    if (!detail::ParseLink(nlh, &l) || nlh->nlmsg_type != RTM_NEWLINK) return;
    // By name the kernel matched it (an altname too); by index, check.
    if (!found && (name || l.ifindex == ifindex)) found = std::move(l);
  });
  if (!st.ok()) {
    if (s.last_error() == ENODEV) {
      return name ? absl::NotFoundError(absl::StrCat("no network interface named '", *name, "'"))
                  : absl::NotFoundError(absl::StrCat("no network interface with index ", ifindex));
    }
    return st;
  }
  if (!found) return absl::InternalError(absl::StrCat("netlink: ", what, ": no link in the reply"));
  return *found;
}

absl::StatusOr<std::unique_ptr<detail::QuerySocket>> OpenOrError() { return detail::QuerySocket::Open(); }

}  // namespace

// ---- QuerySocket ------------------------------------------------------------------

namespace detail {

QuerySocket::QuerySocket(mnl_socket* nl) : nl_(nl), buf_(new char[kRecvBufferSize]) {
  portid_ = mnl_socket_get_portid(nl_);
  seq_ = static_cast<uint32_t>(time(nullptr));
}

QuerySocket::~QuerySocket() { mnl_socket_close(nl_); }

absl::StatusOr<std::unique_ptr<QuerySocket>> QuerySocket::Open() {
  mnl_socket* nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
  if (nl == nullptr) return absl::ErrnoToStatus(errno, "netlink: socket(NETLINK_ROUTE)");
  int one = 1;
  // Both optional (kernels >= 4.12 / 4.3): error strings, and acks that do
  // not echo the whole request.
  mnl_socket_setsockopt(nl, NETLINK_EXT_ACK, &one, sizeof one);
  mnl_socket_setsockopt(nl, NETLINK_CAP_ACK, &one, sizeof one);
  timeval tv{1, 0};
  if (setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
      mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
    int e = errno;
    mnl_socket_close(nl);
    return absl::ErrnoToStatus(e, "netlink: setting up the NETLINK_ROUTE socket");
  }
  return std::unique_ptr<QuerySocket>(new QuerySocket(nl));
}

absl::Status QuerySocket::Run(nlmsghdr* req, absl::string_view what,
                              const std::function<void(const nlmsghdr*)>& on_msg) {
  last_error_ = 0;
  if (++seq_ == 0) ++seq_;
  req->nlmsg_seq = seq_;
  if (mnl_socket_sendto(nl_, req, req->nlmsg_len) < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("netlink: sending ", what));
  }
  bool interrupted = false;
  for (;;) {
    ssize_t n = mnl_socket_recvfrom(nl_, buf_.get(), kRecvBufferSize);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return absl::DeadlineExceededError(absl::StrCat("netlink: no reply to ", what, " within 1 s"));
      }
      if (errno == ENOSPC) {
        return absl::InternalError(absl::StrCat("netlink: a reply to ", what, " exceeds ",
                                                kRecvBufferSize, " bytes"));
      }
      return absl::ErrnoToStatus(errno, absl::StrCat("netlink: receiving the reply to ", what));
    }
    int len = static_cast<int>(n);
    for (const nlmsghdr* nlh = reinterpret_cast<const nlmsghdr*>(buf_.get()); mnl_nlmsg_ok(nlh, len);
         nlh = mnl_nlmsg_next(nlh, &len)) {
      // A late reply to an earlier request that timed out: not ours.
      if (nlh->nlmsg_seq != seq_ || (nlh->nlmsg_pid != 0 && nlh->nlmsg_pid != portid_)) continue;
      if (nlh->nlmsg_flags & NLM_F_DUMP_INTR) interrupted = true;
      switch (nlh->nlmsg_type) {
        case NLMSG_NOOP:
          continue;
        case NLMSG_OVERRUN:
          return absl::ResourceExhaustedError(absl::StrCat("netlink: overrun in the reply to ", what));
        case NLMSG_DONE: {
          int err = 0;
          if (mnl_nlmsg_get_payload_len(nlh) >= sizeof err) {
            std::memcpy(&err, mnl_nlmsg_get_payload(nlh), sizeof err);
          }
          if (err < 0) {
            last_error_ = -err;
            return absl::ErrnoToStatus(-err, absl::StrCat("netlink: ", what));
          }
          if (interrupted) {
            return absl::AbortedError(absl::StrCat("netlink: ", what, ": dump interrupted by a change"));
          }
          return absl::OkStatus();
        }
        case NLMSG_ERROR: {
          size_t plen = mnl_nlmsg_get_payload_len(nlh);
          if (plen < sizeof(nlmsgerr)) {
            return absl::InternalError(absl::StrCat("netlink: truncated ack to ", what));
          }
          const auto* err = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(nlh));
          if (err->error == 0) {
            if (interrupted) return absl::AbortedError(absl::StrCat("netlink: ", what, ": interrupted"));
            return absl::OkStatus();
          }
          std::string ext;
          if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
            size_t off = sizeof(nlmsgerr);
            if (!(nlh->nlmsg_flags & NLM_F_CAPPED) && err->msg.nlmsg_len > sizeof(nlmsghdr)) {
              off += err->msg.nlmsg_len - sizeof(nlmsghdr);
            }
            if (off < plen) {
              Attrs<NLMSGERR_ATTR_MAX> tb;
              mnl_attr_parse_payload(static_cast<const char*>(mnl_nlmsg_get_payload(nlh)) + off,
                                     plen - off, Collect<NLMSGERR_ATTR_MAX>, &tb);
              ext = Str(tb[NLMSGERR_ATTR_MSG]);
            }
          }
          last_error_ = -err->error;
          return absl::ErrnoToStatus(
              last_error_, absl::StrCat("netlink: ", what, ext.empty() ? "" : " (kernel: ", ext,
                                        ext.empty() ? "" : ")"));
        }
        default:
          if (nlh->nlmsg_type < NLMSG_MIN_TYPE) continue;
          on_msg(nlh);
      }
    }
  }
}

// ---- parsers ------------------------------------------------------------------------

bool ParseLink(const nlmsghdr* nlh, LinkInfo* out) {
  if (nlh->nlmsg_type != RTM_NEWLINK && nlh->nlmsg_type != RTM_DELLINK) return false;
  Attrs<IFLA_MAX> tb;
  if (!ParseMsg(nlh, sizeof(ifinfomsg), &tb)) return false;
  const auto* ifi = static_cast<const ifinfomsg*>(mnl_nlmsg_get_payload(nlh));
  if (ifi->ifi_family != AF_UNSPEC || ifi->ifi_index <= 0) return false;
  LinkInfo l;
  l.ifindex = ifi->ifi_index;
  l.admin_up = ifi->ifi_flags & IFF_UP;
  l.oper_up = l.admin_up && (ifi->ifi_flags & IFF_RUNNING) && (ifi->ifi_flags & kIffLowerUp);
  l.name = Str(tb[IFLA_IFNAME]);
  if (const nlattr* a = tb[IFLA_ADDRESS]; a && mnl_attr_get_payload_len(a) == 6) {
    std::memcpy(l.mac.b.data(), mnl_attr_get_payload(a), 6);
  }
  l.mtu = U32(tb[IFLA_MTU]).value_or(0);
  if (Attrs<IFLA_XDP_MAX> xdp; ParseNested(tb[IFLA_XDP], &xdp)) {
    l.xdp_prog_id = U32(xdp[IFLA_XDP_PROG_ID])
                        .value_or(U32(xdp[IFLA_XDP_DRV_PROG_ID])
                                      .value_or(U32(xdp[IFLA_XDP_SKB_PROG_ID]).value_or(0)));
  }
  if (Attrs<IFLA_INFO_MAX> info; ParseNested(tb[IFLA_LINKINFO], &info)) {
    l.kind = Str(info[IFLA_INFO_KIND]);
  }
  *out = std::move(l);
  return true;
}

bool ParseAddr(const nlmsghdr* nlh, IfAddr* out, int* ifindex) {
  if (nlh->nlmsg_type != RTM_NEWADDR && nlh->nlmsg_type != RTM_DELADDR) return false;
  Attrs<IFA_MAX> tb;
  if (!ParseMsg(nlh, sizeof(ifaddrmsg), &tb)) return false;
  const auto* ifa = static_cast<const ifaddrmsg*>(mnl_nlmsg_get_payload(nlh));
  int family = ifa->ifa_family;
  if (family != AF_INET && family != AF_INET6) return false;
  IfAddr a;
  a.ipv6 = family == AF_INET6;
  a.prefix_len = ifa->ifa_prefixlen;
  a.scope = ifa->ifa_scope;
  a.flags = U32(tb[IFA_FLAGS]).value_or(ifa->ifa_flags);
  // IPv4: IFA_LOCAL is the interface's own address (IFA_ADDRESS is the peer
  // on a point-to-point link). IPv6 puts its address in IFA_ADDRESS.
  int first = a.ipv6 ? IFA_ADDRESS : IFA_LOCAL;
  int second = a.ipv6 ? IFA_LOCAL : IFA_ADDRESS;
  if (!IpFrom(tb[first], family, &a.addr) && !IpFrom(tb[second], family, &a.addr)) return false;
  *out = a;
  *ifindex = static_cast<int>(ifa->ifa_index);
  return true;
}

bool ParseNeighbor(const nlmsghdr* nlh, Neighbor* out) {
  if (nlh->nlmsg_type != RTM_NEWNEIGH && nlh->nlmsg_type != RTM_DELNEIGH) return false;
  Attrs<NDA_MAX> tb;
  if (!ParseMsg(nlh, sizeof(ndmsg), &tb)) return false;
  const auto* ndm = static_cast<const ndmsg*>(mnl_nlmsg_get_payload(nlh));
  int family = ndm->ndm_family;
  if ((family != AF_INET && family != AF_INET6) || (ndm->ndm_flags & NTF_PROXY)) return false;
  Neighbor n;
  if (!IpFrom(tb[NDA_DST], family, &n.ip)) return false;
  n.ifindex = ndm->ndm_ifindex;
  n.state = StateFromNud(ndm->ndm_state);
  if (const nlattr* a = tb[NDA_LLADDR]; a && mnl_attr_get_payload_len(a) == 6) {
    std::memcpy(n.mac.b.data(), mnl_attr_get_payload(a), 6);
    n.has_mac = true;
  }
  *out = n;
  return true;
}

// ---- queries on a given socket --------------------------------------------------------

absl::StatusOr<LinkInfo> GetLinkOn(QuerySocket& s, int ifindex) {
  if (ifindex <= 0) return absl::NotFoundError(absl::StrCat("no network interface with index ", ifindex));
  return QueryLink(s, ifindex, nullptr);
}

absl::StatusOr<std::vector<IfAddr>> GetAddrsOn(QuerySocket& s, int ifindex) {
  Request req(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP);
  auto* ifa = req.Extra<ifaddrmsg>();
  ifa->ifa_family = AF_UNSPEC;
  ifa->ifa_index = static_cast<uint32_t>(ifindex);  // a filter only with strict checking: filtered here too
  std::vector<IfAddr> out;
  absl::Status st = RunDump(
      s, req, absl::StrCat("RTM_GETADDR dump (ifindex ", ifindex, ")"), [&] { out.clear(); },
      [&](const nlmsghdr* nlh) {
        IfAddr a;
        int idx = 0;
        if (nlh->nlmsg_type == RTM_NEWADDR && ParseAddr(nlh, &a, &idx) && idx == ifindex) out.push_back(a);
      });
  if (!st.ok()) return st;
  return out;
}

namespace {
absl::StatusOr<std::vector<Neighbor>> DumpNeighborsFamily(QuerySocket& s, int ifindex, int family) {
  Request req(RTM_GETNEIGH, NLM_F_REQUEST | NLM_F_DUMP);
  auto* ndm = req.Extra<ndmsg>();
  ndm->ndm_family = static_cast<uint8_t>(family);
  // The kernel filters on NDA_IFINDEX (the header's ifindex must be 0 under
  // strict checking); filtered here as well.
  mnl_attr_put_u32(req.nlh, NDA_IFINDEX, static_cast<uint32_t>(ifindex));
  std::vector<Neighbor> out;
  absl::Status st = RunDump(
      s, req, absl::StrCat("RTM_GETNEIGH dump (ifindex ", ifindex, ")"), [&] { out.clear(); },
      [&](const nlmsghdr* nlh) {
        Neighbor n;
        if (nlh->nlmsg_type == RTM_NEWNEIGH && ParseNeighbor(nlh, &n) && n.ifindex == ifindex) {
          out.push_back(n);
        }
      });
  if (!st.ok()) return st;
  return out;
}
}  // namespace

absl::StatusOr<std::vector<Neighbor>> DumpNeighborsOn(QuerySocket& s, int ifindex) {
  return DumpNeighborsFamily(s, ifindex, AF_UNSPEC);
}

absl::StatusOr<std::optional<Neighbor>> GetNeighborByDump(int ifindex, const IpAddr& ip) {
  auto s = OpenOrError();
  if (!s.ok()) return s.status();
  auto all = DumpNeighborsFamily(**s, ifindex, FamilyOf(ip));
  if (!all.ok()) return all.status();
  for (const Neighbor& n : *all) {
    if (n.ip == ip) return std::optional<Neighbor>(n);
  }
  return std::optional<Neighbor>();
}

absl::Status TriggerByNtfUse(int ifindex, const IpAddr& ip) {
  auto s = OpenOrError();
  if (!s.ok()) return s.status();
  Request req(RTM_NEWNEIGH, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE);
  auto* ndm = req.Extra<ndmsg>();
  ndm->ndm_family = static_cast<uint8_t>(FamilyOf(ip));
  ndm->ndm_ifindex = ifindex;
  ndm->ndm_state = NUD_NONE;  // with NTF_USE the kernel keeps the entry's state and MAC
  ndm->ndm_flags = NTF_USE;
  PutIp(req.nlh, NDA_DST, ip);
  return (*s)->Run(req.nlh, absl::StrCat("RTM_NEWNEIGH NTF_USE ", ip.ToString(), " ifindex ", ifindex),
                   [](const nlmsghdr*) {});
}

absl::Status TriggerByUdp(int ifindex, const IpAddr& ip) {
  char name[IF_NAMESIZE] = {};
  if (if_indextoname(static_cast<unsigned>(ifindex), name) == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("no network interface with index ", ifindex));
  }
  int family = FamilyOf(ip);
  int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return absl::ErrnoToStatus(errno, "socket(SOCK_DGRAM)");
  absl::Status st;
  if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, name, static_cast<socklen_t>(strlen(name) + 1)) < 0) {
    st = absl::ErrnoToStatus(errno, absl::StrCat("SO_BINDTODEVICE ", name));
  } else {
    static constexpr char kPayload[] = "roce-netlink neighbour probe";
    sockaddr_storage ss{};
    socklen_t sl;
    if (family == AF_INET) {
      auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
      sin->sin_family = AF_INET;
      sin->sin_port = htons(9);  // discard
      sin->sin_addr.s_addr = htonl(ip.V4());
      sl = sizeof *sin;
    } else {
      auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
      sin6->sin6_family = AF_INET6;
      sin6->sin6_port = htons(9);
      std::memcpy(&sin6->sin6_addr, ip.b.data(), 16);
      sin6->sin6_scope_id = static_cast<uint32_t>(ifindex);  // used for link-local only
      sl = sizeof *sin6;
    }
    if (sendto(fd, kPayload, sizeof kPayload - 1, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&ss), sl) < 0 &&
        errno != EAGAIN) {
      st = absl::ErrnoToStatus(errno, absl::StrCat("UDP probe to ", ip.ToString(), " on ", name));
    }
  }
  close(fd);
  return st;
}

}  // namespace detail

// ---- public calls -----------------------------------------------------------------------

std::string IfAddr::ToString() const { return absl::StrCat(addr.ToString(), "/", prefix_len); }

const char* NeighStateName(NeighState s) {
  switch (s) {
    case NeighState::kNone: return "NONE";
    case NeighState::kIncomplete: return "INCOMPLETE";
    case NeighState::kReachable: return "REACHABLE";
    case NeighState::kStale: return "STALE";
    case NeighState::kDelay: return "DELAY";
    case NeighState::kProbe: return "PROBE";
    case NeighState::kFailed: return "FAILED";
    case NeighState::kNoArp: return "NOARP";
    case NeighState::kPermanent: return "PERMANENT";
  }
  return "?";
}

bool Usable(NeighState s) {
  switch (s) {
    case NeighState::kReachable:
    case NeighState::kStale:
    case NeighState::kDelay:
    case NeighState::kProbe:
    case NeighState::kPermanent:
    case NeighState::kNoArp:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<LinkInfo> GetLink(const std::string& ifname) {
  if (ifname.empty() || ifname.size() >= IFNAMSIZ || ifname.find('\0') != std::string::npos) {
    return absl::NotFoundError(absl::StrCat("no network interface named '", ifname, "'"));
  }
  auto s = OpenOrError();
  if (!s.ok()) return s.status();
  return QueryLink(**s, 0, &ifname);
}

absl::StatusOr<LinkInfo> GetLink(int ifindex) {
  auto s = OpenOrError();
  if (!s.ok()) return s.status();
  return detail::GetLinkOn(**s, ifindex);
}

absl::StatusOr<std::vector<IfAddr>> GetAddrs(int ifindex) {
  auto s = OpenOrError();
  if (!s.ok()) return s.status();
  return detail::GetAddrsOn(**s, ifindex);
}

absl::StatusOr<Route> GetRoute(const IpAddr& dst, int oif) {
  auto s = OpenOrError();
  if (!s.ok()) return s.status();
  int family = FamilyOf(dst);
  Request req(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_ACK);
  auto* rtm = req.Extra<rtmsg>();
  rtm->rtm_family = static_cast<uint8_t>(family);
  rtm->rtm_dst_len = family == AF_INET ? 32 : 128;
  PutIp(req.nlh, RTA_DST, dst);
  if (oif > 0) mnl_attr_put_u32(req.nlh, RTA_OIF, static_cast<uint32_t>(oif));
  std::string what = absl::StrCat("route to ", dst.ToString(), oif > 0 ? absl::StrCat(" via ifindex ", oif) : "");
  std::optional<Route> found;
  int type = -1;
  absl::Status st = (*s)->Run(req.nlh, what, [&](const nlmsghdr* nlh) {
    if (nlh->nlmsg_type != RTM_NEWROUTE || found) return;
    Attrs<RTA_MAX> tb;
    if (!ParseMsg(nlh, sizeof(rtmsg), &tb)) return;
    const auto* r = static_cast<const rtmsg*>(mnl_nlmsg_get_payload(nlh));
    if (r->rtm_family != family) return;
    Route route;
    type = r->rtm_type;
    route.oif = static_cast<int>(U32(tb[RTA_OIF]).value_or(0));
    IpAddr a;
    if (IpFrom(tb[RTA_GATEWAY], family, &a)) {
      route.gateway = a;
    } else if (const nlattr* via = tb[RTA_VIA]; via && mnl_attr_get_payload_len(via) >= sizeof(rtvia)) {
      // An IPv4 route through an IPv6 next hop (RFC 5549).
      const auto* v = static_cast<const rtvia*>(mnl_attr_get_payload(via));
      if (IpFromBytes(v->rtvia_family, v->rtvia_addr, mnl_attr_get_payload_len(via) - sizeof(rtvia), &a)) {
        route.gateway = a;
      }
    }
    if (IpFrom(tb[RTA_PREFSRC], family, &a)) route.prefsrc = a;
    if (Attrs<RTAX_MAX> mx; ParseNested(tb[RTA_METRICS], &mx)) route.mtu = U32(mx[RTAX_MTU]).value_or(0);
    found = route;
  });
  if (!st.ok()) return st;
  if (!found) return absl::InternalError(absl::StrCat("netlink: ", what, ": no route in the reply"));
  if (type == RTN_UNREACHABLE || type == RTN_PROHIBIT || type == RTN_BLACKHOLE || type == RTN_THROW) {
    static constexpr const char* kNames[] = {"", "", "", "", "", "", "blackhole", "unreachable", "prohibit",
                                             "throw"};
    return absl::UnavailableError(
        absl::StrCat("netlink: no route to ", dst.ToString(), " (", kNames[type], " route)"));
  }
  return *found;
}

absl::StatusOr<std::optional<Neighbor>> GetNeighbor(int ifindex, const IpAddr& ip) {
  auto s = OpenOrError();
  if (!s.ok()) return s.status();
  Request req(RTM_GETNEIGH, NLM_F_REQUEST | NLM_F_ACK);
  auto* ndm = req.Extra<ndmsg>();
  ndm->ndm_family = static_cast<uint8_t>(FamilyOf(ip));
  ndm->ndm_ifindex = ifindex;
  PutIp(req.nlh, NDA_DST, ip);
  std::optional<Neighbor> found;
  absl::Status st = (*s)->Run(req.nlh, absl::StrCat("RTM_GETNEIGH ", ip.ToString(), " ifindex ", ifindex),
                              [&](const nlmsghdr* nlh) {
                                Neighbor n;
                                if (detail::ParseNeighbor(nlh, &n) && n.ip == ip && n.ifindex == ifindex) found = n;
                              });
  if (st.ok()) return found;
  switch ((*s)->last_error()) {
    case ENOENT:
      return std::optional<Neighbor>();
    case ENODEV:
      return absl::NotFoundError(absl::StrCat("no network interface with index ", ifindex));
    case EINVAL:
    case EOPNOTSUPP:
      // Kernels before 5.0 have no get of one entry: dump and filter.
      return detail::GetNeighborByDump(ifindex, ip);
    default:
      return st;
  }
}

absl::Status TriggerResolution(int ifindex, const IpAddr& ip) {
  auto cur = GetNeighbor(ifindex, ip);
  if (!cur.ok()) return cur.status();
  if (*cur && (((*cur)->has_mac && Usable((*cur)->state)) || (*cur)->state == NeighState::kIncomplete)) {
    return absl::OkStatus();  // valid, or already being resolved: nothing to do
  }
  absl::Status use = detail::TriggerByNtfUse(ifindex, ip);
  if (use.ok()) return use;
  absl::Status udp = detail::TriggerByUdp(ifindex, ip);
  if (udp.ok()) return udp;
  return absl::Status(udp.code(), absl::StrCat(use.message(), "; then ", udp.message()));
}

}  // namespace roce::netlink
