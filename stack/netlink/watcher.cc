// SPDX-License-Identifier: MIT
// Watcher: the event socket (subscribed before the initial dump, so nothing
// between the two is missed: events queued meanwhile are applied after the
// dump and converge on the kernel's state), the watcher thread (poll() on the
// socket and a stop eventfd), applying link/address/neighbour events to the
// snapshot, and the re-dump after an overrun.
#include "stack/netlink/watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <absl/strings/str_cat.h>
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

namespace roce::netlink {

Watcher::Watcher(int ifindex, mnl_socket* events, std::unique_ptr<detail::QuerySocket> query, int stop_fd)
    : ifindex_(ifindex), events_(events), query_(std::move(query)), stop_fd_(stop_fd) {}

absl::StatusOr<std::unique_ptr<Watcher>> Watcher::Start(int ifindex, Options opts) {
  if (ifindex <= 0) return absl::NotFoundError(absl::StrCat("no network interface with index ", ifindex));
  mnl_socket* ev = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (ev == nullptr) return absl::ErrnoToStatus(errno, "netlink: socket(NETLINK_ROUTE)");
  int fd = mnl_socket_get_fd(ev);
  int size = opts.rcvbuf_bytes;
  // FORCE goes past net.core.rmem_max (needs CAP_NET_ADMIN); else what the sysctl allows.
  if (size > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) < 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  }
  unsigned groups = RTMGRP_LINK | RTMGRP_NEIGH | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
  if (mnl_socket_bind(ev, groups, MNL_SOCKET_AUTOPID) < 0) {
    int e = errno;
    mnl_socket_close(ev);
    return absl::ErrnoToStatus(e, "netlink: subscribing to link/address/neighbour events");
  }
  auto query = detail::QuerySocket::Open();
  if (!query.ok()) {
    mnl_socket_close(ev);
    return query.status();
  }
  int stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop < 0) {
    int e = errno;
    mnl_socket_close(ev);
    return absl::ErrnoToStatus(e, "eventfd");
  }
  std::unique_ptr<Watcher> w(new Watcher(ifindex, ev, std::move(*query), stop));
  auto snap = w->Dump();
  if (!snap.ok()) return snap.status();
  if (!snap->present) return absl::NotFoundError(absl::StrCat("no network interface with index ", ifindex));
  {
    absl::MutexLock l(&w->mu_);
    w->snap_ = std::move(*snap);
  }
  w->generation_.store(1, std::memory_order_release);
  w->thread_ = std::thread([p = w.get()] { p->Run(); });
  return w;
}

Watcher::~Watcher() {
  Stop();
  mnl_socket_close(events_);
  close(stop_fd_);
}

void Watcher::Stop() {
  absl::MutexLock l(&stop_mu_);
  stopped_.store(true, std::memory_order_release);
  uint64_t one = 1;
  ssize_t r = write(stop_fd_, &one, sizeof one);
  (void)r;
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

absl::StatusOr<Watcher::Snapshot> Watcher::Dump() {
  Snapshot s;
  auto link = detail::GetLinkOn(*query_, ifindex_);
  if (absl::IsNotFound(link.status())) {
    s.present = false;
    return s;
  }
  if (!link.ok()) return link.status();
  s.link = std::move(*link);
  auto addrs = detail::GetAddrsOn(*query_, ifindex_);
  if (!addrs.ok()) return addrs.status();
  s.addrs = std::move(*addrs);
  auto neigh = detail::DumpNeighborsOn(*query_, ifindex_);
  if (!neigh.ok()) return neigh.status();
  for (const Neighbor& n : *neigh) s.neighbors[n.ip.b] = n;
  return s;
}

absl::Status Watcher::Resync(bool count) {
  auto snap = Dump();
  absl::MutexLock l(&mu_);
  if (!snap.ok()) {
    ++counters_.resync_errors;
    return snap.status();
  }
  if (count) ++counters_.resyncs;
  if (!(*snap == snap_)) {
    snap_ = std::move(*snap);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  return absl::OkStatus();
}

bool Watcher::Apply(const nlmsghdr* nlh) {
  switch (nlh->nlmsg_type) {
    case RTM_NEWLINK:
    case RTM_DELLINK: {
      LinkInfo l;
      if (!detail::ParseLink(nlh, &l) || l.ifindex != ifindex_) return false;
      ++counters_.events;
      if (nlh->nlmsg_type == RTM_DELLINK) {
        if (!snap_.present) return false;
        snap_.present = false;
        snap_.link.admin_up = snap_.link.oper_up = false;
        snap_.addrs.clear();
        snap_.neighbors.clear();
        ++counters_.link_changes;
        return true;
      }
      if (snap_.present && l == snap_.link) return false;
      snap_.present = true;
      snap_.link = std::move(l);
      ++counters_.link_changes;
      return true;
    }
    case RTM_NEWADDR:
    case RTM_DELADDR: {
      IfAddr a;
      int idx = 0;
      if (!detail::ParseAddr(nlh, &a, &idx) || idx != ifindex_) return false;
      ++counters_.events;
      auto it = std::find_if(snap_.addrs.begin(), snap_.addrs.end(), [&](const IfAddr& x) {
        return x.addr == a.addr && x.prefix_len == a.prefix_len && x.ipv6 == a.ipv6;
      });
      if (nlh->nlmsg_type == RTM_DELADDR) {
        if (it == snap_.addrs.end()) return false;
        snap_.addrs.erase(it);
        ++counters_.addr_removed;
        return true;
      }
      if (it != snap_.addrs.end()) {  // flags or scope changed (e.g. DAD finished)
        if (*it == a) return false;
        *it = a;
        return true;
      }
      snap_.addrs.push_back(a);
      ++counters_.addr_added;
      return true;
    }
    case RTM_NEWNEIGH:
    case RTM_DELNEIGH: {
      Neighbor n;
      if (!detail::ParseNeighbor(nlh, &n) || n.ifindex != ifindex_) return false;
      ++counters_.events;
      if (nlh->nlmsg_type == RTM_DELNEIGH) {
        if (snap_.neighbors.erase(n.ip.b) == 0) return false;
        ++counters_.neigh_updates;
        return true;
      }
      auto [it, inserted] = snap_.neighbors.try_emplace(n.ip.b, n);
      if (!inserted) {
        if (it->second == n) return false;
        it->second = n;
      }
      ++counters_.neigh_updates;
      return true;
    }
    default:
      return false;
  }
}

void Watcher::Run() {
  std::unique_ptr<char[]> buf(new char[detail::kRecvBufferSize]);
  pollfd fds[2] = {{mnl_socket_get_fd(events_), POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  bool resync_pending = false;
  while (!stopped_.load(std::memory_order_acquire)) {
    // A failed re-dump is retried after 1 s even if no event comes.
    int r = poll(fds, 2, resync_pending ? 1000 : -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents != 0) break;
    uint64_t before = generation();
    bool overrun = false;
    if (fds[0].revents != 0) {
      for (;;) {
        ssize_t n = mnl_socket_recvfrom(events_, buf.get(), detail::kRecvBufferSize);
        if (n < 0) {
          if (errno == EINTR) continue;
          // ENOBUFS: the kernel dropped events. ENOSPC: a message larger
          // than the buffer (truncated). Either way the snapshot is re-dumped.
          if (errno == ENOBUFS || errno == ENOSPC) {
            overrun = true;
            continue;
          }
          break;  // EAGAIN: drained
        }
        int len = static_cast<int>(n);
        absl::MutexLock l(&mu_);
        for (const nlmsghdr* nlh = reinterpret_cast<const nlmsghdr*>(buf.get()); mnl_nlmsg_ok(nlh, len);
             nlh = mnl_nlmsg_next(nlh, &len)) {
          if (Apply(nlh)) generation_.fetch_add(1, std::memory_order_acq_rel);
        }
      }
    }
    if (overrun || resync_pending) resync_pending = !Resync(overrun).ok();
    if (generation() != before) {
      std::function<void()> cb;
      {
        absl::MutexLock l(&cb_mu_);
        cb = cb_;
      }
      if (cb) cb();
    }
  }
}

bool Watcher::present() const {
  absl::MutexLock l(&mu_);
  return snap_.present;
}

LinkInfo Watcher::link() const {
  absl::MutexLock l(&mu_);
  return snap_.link;
}

std::vector<IfAddr> Watcher::addrs() const {
  absl::MutexLock l(&mu_);
  return snap_.addrs;
}

std::optional<Neighbor> Watcher::neighbor(const wire::IpAddr& ip) const {
  absl::MutexLock l(&mu_);
  auto it = snap_.neighbors.find(ip.b);
  if (it == snap_.neighbors.end()) return std::nullopt;
  return it->second;
}

std::vector<Neighbor> Watcher::neighbors() const {
  absl::MutexLock l(&mu_);
  std::vector<Neighbor> out;
  out.reserve(snap_.neighbors.size());
  for (const auto& [k, n] : snap_.neighbors) out.push_back(n);
  return out;
}

void Watcher::SetCallback(std::function<void()> cb) {
  absl::MutexLock l(&cb_mu_);
  cb_ = std::move(cb);
}

Watcher::Counters Watcher::counters() const {
  absl::MutexLock l(&mu_);
  return counters_;
}

}  // namespace roce::netlink
