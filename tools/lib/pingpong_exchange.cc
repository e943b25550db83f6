// SPDX-License-Identifier: MIT
#include "tools/lib/pingpong_exchange.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace roce::tools {
namespace {

constexpr char kDone[kPingpongDoneSize] = {'d', 'o', 'n', 'e', '\0'};

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Exactly `digits` hex digits at text[pos..]; false otherwise.
bool ParseHexField(std::string_view text, size_t pos, size_t digits, uint32_t* out) {
  if (pos + digits > text.size()) return false;
  uint32_t v = 0;
  for (size_t i = 0; i < digits; i++) {
    int d = HexDigit(text[pos + i]);
    if (d < 0) return false;
    v = (v << 4) | static_cast<uint32_t>(d);
  }
  *out = v;
  return true;
}

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

using Clock = std::chrono::steady_clock;

// A deadline for one exchange; timeout 0 = none.
class Deadline {
 public:
  explicit Deadline(int timeout_ms)
      : none_(timeout_ms <= 0), end_(Clock::now() + std::chrono::milliseconds(timeout_ms)) {}
  // Milliseconds left for poll(): -1 = forever, 0 = expired.
  int PollMs() const {
    if (none_) return -1;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end_ - Clock::now()).count();
    return left <= 0 ? 0 : static_cast<int>(left);
  }
  bool Expired() const { return !none_ && Clock::now() >= end_; }

 private:
  bool none_;
  Clock::time_point end_;
};

// Waits until fd is readable/writable. False with *error on timeout.
bool WaitFd(int fd, short events, const Deadline& dl, const char* what, std::string* error) {
  for (;;) {
    pollfd p{fd, events, 0};
    int ms = dl.PollMs();
    int n = ::poll(&p, 1, ms);
    if (n > 0) return true;
    if (n == 0) {
      *error = std::string("timed out waiting to ") + what;
      return false;
    }
    if (errno != EINTR) {
      *error = Errno("poll");
      return false;
    }
  }
}

// Reads exactly n bytes (looping over short reads).
bool ReadFull(int fd, char* buf, size_t n, const Deadline& dl, const char* what, std::string* error) {
  size_t got = 0;
  while (got < n) {
    if (!WaitFd(fd, POLLIN, dl, what, error)) return false;
    ssize_t r = ::recv(fd, buf + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      *error = Errno(what);
      return false;
    }
    if (r == 0) {
      *error = std::string(what) + ": connection closed by peer after " + std::to_string(got) +
               " of " + std::to_string(n) + " bytes";
      return false;
    }
    got += static_cast<size_t>(r);
  }
  return true;
}

// Writes the whole message with one send() (the real peer reads it with one
// read()); loops only if the kernel takes less, which a fresh TCP socket
// never does for 52 bytes.
bool WriteFull(int fd, const char* buf, size_t n, const Deadline& dl, const char* what,
               std::string* error) {
  size_t put = 0;
  while (put < n) {
    if (!WaitFd(fd, POLLOUT, dl, what, error)) return false;
    ssize_t w = ::send(fd, buf + put, n - put, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      *error = Errno(what);
      return false;
    }
    put += static_cast<size_t>(w);
  }
  return true;
}

std::string WireMessage(const PingpongDest& d) {
  std::string m = FormatPingpongMessage(d);
  m.push_back('\0');
  return m;
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

// Non-blocking connect to one address, bounded by the deadline.
int ConnectOne(const addrinfo* ai, const Deadline& dl, std::string* error) {
  int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
  if (fd < 0) {
    *error = Errno("socket");
    return -1;
  }
  if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) return fd;
  if (errno != EINPROGRESS) {
    *error = Errno("connect");
    ::close(fd);
    return -1;
  }
  if (!WaitFd(fd, POLLOUT, dl, "connect", error)) {
    ::close(fd);
    return -1;
  }
  int so = 0;
  socklen_t len = sizeof so;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &len);
  if (so != 0) {
    errno = so;
    *error = Errno("connect");
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

// ------------------------------------------------------------------ format

std::string GidToWire(const Gid& gid) {
  static const char kHex[] = "0123456789abcdef";
  std::string s(32, '0');
  for (size_t i = 0; i < 16; i++) {
    s[2 * i] = kHex[gid[i] >> 4];
    s[2 * i + 1] = kHex[gid[i] & 15];
  }
  return s;
}

bool GidFromWire(std::string_view hex, Gid* out) {
  if (hex.size() != 32) return false;
  Gid g{};
  for (size_t i = 0; i < 16; i++) {
    int hi = HexDigit(hex[2 * i]), lo = HexDigit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    g[i] = static_cast<uint8_t>((hi << 4) | lo);
  }
  *out = g;
  return true;
}

Gid Ipv4MappedGid(uint32_t ipv4) {
  Gid g{};
  g[10] = g[11] = 0xff;
  g[12] = static_cast<uint8_t>(ipv4 >> 24);
  g[13] = static_cast<uint8_t>(ipv4 >> 16);
  g[14] = static_cast<uint8_t>(ipv4 >> 8);
  g[15] = static_cast<uint8_t>(ipv4);
  return g;
}

bool GidToIpv4(const Gid& gid, uint32_t* ipv4) {
  for (size_t i = 0; i < 10; i++)
    if (gid[i] != 0) return false;
  if (gid[10] != 0xff || gid[11] != 0xff) return false;
  *ipv4 = (uint32_t{gid[12]} << 24) | (uint32_t{gid[13]} << 16) | (uint32_t{gid[14]} << 8) | gid[15];
  return true;
}

std::string GidToString(const Gid& gid) {
  char buf[INET6_ADDRSTRLEN];
  if (!::inet_ntop(AF_INET6, gid.data(), buf, sizeof buf)) return "?";
  return buf;
}

bool GidFromString(const std::string& text, Gid* out) {
  return ::inet_pton(AF_INET6, text.c_str(), out->data()) == 1;
}

std::string FormatPingpongMessage(const PingpongDest& d) {
  char buf[kPingpongMessageSize];
  std::snprintf(buf, sizeof buf, "%04x:%06x:%06x:%s", unsigned{d.lid}, d.qpn & 0xffffffu,
                d.psn & 0xffffffu, GidToWire(d.gid).c_str());
  return buf;
}

bool ParsePingpongMessage(std::string_view msg, PingpongDest* out, std::string* error) {
  // "LLLL:QQQQQQ:PPPPPP:" + 32 hex digits, then optionally the NUL.
  constexpr size_t kChars = kPingpongMessageSize - 1;
  if (msg.size() == kPingpongMessageSize && msg.back() == '\0') msg.remove_suffix(1);
  PingpongDest d;
  uint32_t lid = 0;
  bool ok = msg.size() == kChars && ParseHexField(msg, 0, 4, &lid) && msg[4] == ':' &&
            ParseHexField(msg, 5, 6, &d.qpn) && msg[11] == ':' &&
            ParseHexField(msg, 12, 6, &d.psn) && msg[18] == ':' &&
            GidFromWire(msg.substr(19), &d.gid);
  if (!ok) {
    std::string shown;
    for (char c : msg) shown += (c >= 0x20 && c < 0x7f) ? c : '.';
    if (error)
      *error = "malformed pingpong message (" + std::to_string(msg.size()) + " chars): \"" + shown + "\"";
    return false;
  }
  d.lid = static_cast<uint16_t>(lid);
  *out = d;
  return true;
}

std::string FormatAddressLine(bool local, const PingpongDest& d) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "  %s LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s",
                local ? "local address: " : "remote address:", unsigned{d.lid}, d.qpn, d.psn,
                GidToString(d.gid).c_str());
  return buf;
}

bool FindAddressLine(std::string_view output, bool local, PingpongDest* out) {
  const std::string_view key = local ? "local address:  LID 0x" : "remote address: LID 0x";
  size_t pos = output.find(key);
  if (pos == std::string_view::npos) return false;
  size_t end = output.find('\n', pos);
  std::string line(output.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
  unsigned lid = 0, qpn = 0, psn = 0;
  char gid[INET6_ADDRSTRLEN + 1] = {};
  const char* fmt = local ? "local address:  LID 0x%x, QPN 0x%x, PSN 0x%x, GID %46s"
                          : "remote address: LID 0x%x, QPN 0x%x, PSN 0x%x, GID %46s";
  if (std::sscanf(line.c_str(), fmt, &lid, &qpn, &psn, gid) != 4) return false;
  PingpongDest d;
  if (!GidFromString(gid, &d.gid)) return false;
  d.lid = static_cast<uint16_t>(lid);
  d.qpn = qpn;
  d.psn = psn;
  *out = d;
  return true;
}

uint32_t RcPingpongStartPsn(long seed) {
  // drand48 family: X(n+1) = (a X(n) + c) mod 2^48; srand48 sets X = seed's
  // low 32 bits << 16 | 0x330E; lrand48 returns the top 31 bits of X.
  constexpr uint64_t kA = 0x5DEECE66DULL, kC = 0xB, kMask = (uint64_t{1} << 48) - 1;
  uint64_t x = ((static_cast<uint64_t>(seed) & 0xffffffffULL) << 16) | 0x330E;
  x = (kA * x + kC) & kMask;
  return static_cast<uint32_t>(x >> 17) & 0xffffff;
}

long PingpongSeed() { return static_cast<long>(::getpid()) * static_cast<long>(::time(nullptr)); }

// ------------------------------------------------------------------ client

ExchangeResult PingpongClientExchange(const std::string& server, uint16_t port,
                                      const PingpongDest& local, const ExchangeOptions& opts) {
  ExchangeResult res;
  Deadline dl(opts.timeout_ms);
  Deadline retry(opts.connect_retry_ms);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* ai = nullptr;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(server.c_str(), service.c_str(), &hints, &ai);
  if (rc != 0) {
    res.error = std::string(::gai_strerror(rc)) + " for " + server + ":" + service;
    return res;
  }
  Fd fd;
  std::string err;
  for (;;) {
    for (addrinfo* t = ai; t && fd.get() < 0; t = t->ai_next) fd.Reset(ConnectOne(t, dl, &err));
    if (fd.get() >= 0 || opts.connect_retry_ms <= 0 || retry.Expired() || dl.Expired()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::freeaddrinfo(ai);
  if (fd.get() < 0) {
    res.error = "couldn't connect to " + server + ":" + service + " (" + err + ")";
    return res;
  }
  std::string mine = WireMessage(local);
  char theirs[kPingpongMessageSize];
  if (!WriteFull(fd.get(), mine.data(), mine.size(), dl, "send local address", &res.error) ||
      !ReadFull(fd.get(), theirs, sizeof theirs, dl, "read remote address", &res.error) ||
      !WriteFull(fd.get(), kDone, sizeof kDone, dl, "send done", &res.error))
    return res;
  if (!ParsePingpongMessage(std::string_view(theirs, sizeof theirs), &res.remote, &res.error))
    return res;
  return res;
}

// ------------------------------------------------------------------ server

PingpongServer::~PingpongServer() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

bool PingpongServer::Listen(uint16_t port, std::string* error, const char* bind_host) {
  addrinfo hints{};
  hints.ai_flags = AI_PASSIVE;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* ai = nullptr;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(bind_host, service.c_str(), &hints, &ai);
  if (rc != 0) {
    *error = std::string(::gai_strerror(rc)) + " for port " + service;
    return false;
  }
  int fd = -1;
  for (addrinfo* t = ai; t; t = t->ai_next) {
    fd = ::socket(t->ai_family, t->ai_socktype | SOCK_CLOEXEC, t->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, t->ai_addr, t->ai_addrlen) == 0) break;
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(ai);
  if (fd < 0 || ::listen(fd, 1) != 0) {
    *error = Errno(("couldn't listen to port " + service).c_str());
    if (fd >= 0) ::close(fd);
    return false;
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                         : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = fd;
  return true;
}

ExchangeResult PingpongServer::Exchange(const PingpongDest& local, const ConnectQp& connect_qp,
                                        const ExchangeOptions& opts) {
  ExchangeResult res;
  if (listen_fd_ < 0) {
    res.error = "not listening";
    return res;
  }
  Deadline dl(opts.timeout_ms);
  if (!WaitFd(listen_fd_, POLLIN, dl, "accept a client", &res.error)) return res;
  Fd conn(::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC));
  ::close(listen_fd_);  // one client, like the real server
  listen_fd_ = -1;
  if (conn.get() < 0) {
    res.error = Errno("accept");
    return res;
  }
  char theirs[kPingpongMessageSize];
  if (!ReadFull(conn.get(), theirs, sizeof theirs, dl, "read remote address", &res.error) ||
      !ParsePingpongMessage(std::string_view(theirs, sizeof theirs), &res.remote, &res.error))
    return res;
  if (connect_qp) {
    std::string why;
    if (!connect_qp(res.remote, &why)) {
      res.error = "couldn't connect to remote QP" + (why.empty() ? std::string() : ": " + why);
      return res;  // closes without replying, as the real server does
    }
  }
  std::string mine = WireMessage(local);
  char done[kPingpongDoneSize];
  if (!WriteFull(conn.get(), mine.data(), mine.size(), dl, "send local address", &res.error) ||
      !ReadFull(conn.get(), done, sizeof done, dl, "read done", &res.error))
    return res;
  if (std::memcmp(done, kDone, sizeof kDone) != 0) res.error = "client did not send \"done\"";
  return res;
}

}  // namespace roce::tools
