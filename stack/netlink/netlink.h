// SPDX-License-Identifier: MIT
// The kernel's view of one network interface through rtnetlink (libmnl):
// its link (name, MAC, MTU, up/down, XDP program, kind), its IPv4/IPv6
// addresses, the route the kernel would take to a destination, its neighbour
// (ARP/NDP) entries, and a way to make the kernel resolve a neighbour without
// sending RoCE traffic. An adapter sitting beside the kernel on an interface
// (AF_XDP) takes its identity and its neighbours from here, as rdma-core does
// for RoCE. No DPDK, no logging. watcher.h follows the same state by events.
//
// Every call opens its own NETLINK_ROUTE socket in the network namespace of
// the calling thread (a netlink socket belongs to the namespace of the thread
// that opened it), sends one request with a sequence number, checks the
// kernel's ack (NLMSG_ERROR, with the extended-ack message when the kernel
// gives one) and never waits more than 1 s for a reply (SO_RCVTIMEO:
// DeadlineExceeded). Attributes are validated (mnl_attr_validate) before use;
// a malformed message is skipped, never trusted. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>

#include "stack/wire/headers.h"

struct nlmsghdr;
struct mnl_socket;

namespace roce::netlink {

struct LinkInfo {
  int ifindex = 0;
  std::string name;
  wire::MacAddr mac;          // IFLA_ADDRESS (zero if the link has no 6-byte address)
  uint32_t mtu = 0;
  bool admin_up = false;      // IFF_UP
  bool oper_up = false;       // IFF_UP and IFF_RUNNING and IFF_LOWER_UP (carrier)
  uint32_t xdp_prog_id = 0;   // IFLA_XDP / IFLA_XDP_PROG_ID (or the DRV/SKB one), 0 if none
  std::string kind;           // IFLA_INFO_KIND ("veth", "bridge", ...) or ""
  bool operator==(const LinkInfo&) const = default;
};

// NotFoundError("no network interface named 'x'") / ("... with index N").
absl::StatusOr<LinkInfo> GetLink(const std::string& ifname);
absl::StatusOr<LinkInfo> GetLink(int ifindex);

struct IfAddr {
  wire::IpAddr addr;          // IPv4: IFA_LOCAL (IFA_ADDRESS if absent); IPv6: IFA_ADDRESS
  uint8_t prefix_len = 0;
  bool ipv6 = false;
  uint8_t scope = 0;          // RT_SCOPE_UNIVERSE (0), RT_SCOPE_LINK (253: fe80::/10), RT_SCOPE_HOST (254)
  uint32_t flags = 0;         // IFA_F_* (IFA_FLAGS when present): IFA_F_TENTATIVE, IFA_F_DADFAILED, ...
  std::string ToString() const;  // "10.0.0.1/24", "fd00::1/64"
  bool operator==(const IfAddr&) const = default;
};

// Every IPv4 and IPv6 address of the interface (link-local included: scope
// says which), in the kernel's order.
absl::StatusOr<std::vector<IfAddr>> GetAddrs(int ifindex);

struct Route {
  int oif = 0;
  std::optional<wire::IpAddr> gateway;   // RTA_GATEWAY (or RTA_VIA); none when on-link
  std::optional<wire::IpAddr> prefsrc;   // RTA_PREFSRC: the source the kernel would use
  uint32_t mtu = 0;                      // RTAX_MTU if the route has one, else 0
  wire::IpAddr NextHop(const wire::IpAddr& dst) const { return gateway ? *gateway : dst; }
};

// RTM_GETROUTE for dst, as `ip route get dst [oif N]`. An error naming dst when
// the kernel has no route (Unavailable: "Network is unreachable") or the
// route is an unreachable/prohibit/blackhole one. Note: for IPv4 with oif set,
// the kernel assumes a destination it has no route for is on-link on oif.
absl::StatusOr<Route> GetRoute(const wire::IpAddr& dst, int oif = 0);

enum class NeighState { kNone, kIncomplete, kReachable, kStale, kDelay, kProbe, kFailed, kNoArp, kPermanent };
const char* NeighStateName(NeighState s);  // "REACHABLE", ... as `ip neigh` prints them

struct Neighbor {
  wire::IpAddr ip;
  wire::MacAddr mac;
  bool has_mac = false;       // NDA_LLADDR present (6 bytes)
  NeighState state = NeighState::kNone;
  int ifindex = 0;
  bool operator==(const Neighbor&) const = default;
};

// A MAC the kernel would send to: reachable, stale, delay, probe, permanent, noarp.
bool Usable(NeighState s);

// The kernel's entry for ip on ifindex (RTM_GETNEIGH with NDA_DST; if the
// kernel has no get of one entry, a dump filtered here), nullopt if none.
absl::StatusOr<std::optional<Neighbor>> GetNeighbor(int ifindex, const wire::IpAddr& ip);

// Asks the kernel to resolve ip on ifindex without sending RoCE traffic. An
// existing entry with a usable MAC, or one already INCOMPLETE (being
// resolved), is left alone. Otherwise RTM_NEWNEIGH with NTF_USE, state
// NUD_NONE, NLM_F_CREATE|NLM_F_REPLACE (as `ip neigh replace IP dev D use nud
// none`): the kernel creates the entry if needed and starts probing (ARP
// request / neighbour solicitation). (With NTF_USE the kernel keeps the
// entry's state minus NUD_PERMANENT and ignores the one sent: on a permanent
// entry it would drop its MAC, hence the check first.) If the kernel
// refuses that, a UDP datagram to port 9 (discard) of ip from a socket bound
// to the device (SO_BINDTODEVICE) makes it resolve. Returns once the request
// is made; poll GetNeighbor (or a Watcher) for the result.
absl::Status TriggerResolution(int ifindex, const wire::IpAddr& ip);

// Internals shared with watcher.cc and the tests.
namespace detail {

// Replies are received into a buffer of this size (the kernel never puts more
// than 32 KiB in one dump datagram).
inline constexpr size_t kRecvBufferSize = 32768;

// A NETLINK_ROUTE socket for synchronous requests, opened in the calling
// thread's network namespace, with a 1 s receive timeout. Not thread-safe.
class QuerySocket {
 public:
  static absl::StatusOr<std::unique_ptr<QuerySocket>> Open();
  ~QuerySocket();
  QuerySocket(const QuerySocket&) = delete;
  QuerySocket& operator=(const QuerySocket&) = delete;

  // Sends req (its sequence number is set here) and calls on_msg for every
  // reply message (not NLMSG_ERROR/DONE) until the ack or NLMSG_DONE. An
  // error ack becomes a status with errno's code, `what` and the kernel's
  // extended-ack message. A dump the kernel marks interrupted
  // (NLM_F_DUMP_INTR) is Aborted (callers retry).
  absl::Status Run(nlmsghdr* req, absl::string_view what,
                   const std::function<void(const nlmsghdr*)>& on_msg);
  // The kernel's errno for the last Run (0 if it succeeded or failed locally).
  int last_error() const { return last_error_; }

 private:
  explicit QuerySocket(mnl_socket* nl);
  mnl_socket* nl_;
  uint32_t portid_ = 0;
  uint32_t seq_ = 0;
  int last_error_ = 0;
  std::unique_ptr<char[]> buf_;
};

// Parsers: false (nothing written) when the message is not of that kind or is
// malformed.
bool ParseLink(const nlmsghdr* nlh, LinkInfo* out);  // RTM_NEWLINK/DELLINK, AF_UNSPEC
bool ParseAddr(const nlmsghdr* nlh, IfAddr* out, int* ifindex);  // RTM_NEWADDR/DELADDR
bool ParseNeighbor(const nlmsghdr* nlh, Neighbor* out);  // RTM_NEWNEIGH/DELNEIGH, AF_INET/6, not proxy

absl::StatusOr<LinkInfo> GetLinkOn(QuerySocket& s, int ifindex);
absl::StatusOr<std::vector<IfAddr>> GetAddrsOn(QuerySocket& s, int ifindex);
// Every IPv4 and IPv6 neighbour entry of ifindex (one RTM_GETNEIGH dump).
absl::StatusOr<std::vector<Neighbor>> DumpNeighborsOn(QuerySocket& s, int ifindex);

// The two halves of GetNeighbor / TriggerResolution, for the tests.
absl::StatusOr<std::optional<Neighbor>> GetNeighborByDump(int ifindex, const wire::IpAddr& ip);
absl::Status TriggerByNtfUse(int ifindex, const wire::IpAddr& ip);
absl::Status TriggerByUdp(int ifindex, const wire::IpAddr& ip);

}  // namespace detail
}  // namespace roce::netlink
