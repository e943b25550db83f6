// SPDX-License-Identifier: MIT
// nd_addr.h: the socket address the ND2 programs parse, print and hand to
// IND2Listener::Bind / IND2Connector::Connect, and the first address of the
// process's adapters (written for this project; see README.md here). Like
// nd_common.h it uses the public ND2 headers and the C, socket and C++
// standard headers only.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <ndspi.h>
#include <ndsupport.h>

namespace ndtool {

// An address (IPv4 or IPv6, an IPv6 "%scope" suffix ignored) and port.
struct Addr {
  sockaddr_storage ss{};
  ULONG len = 0;
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&ss); }
  sockaddr* sa() { return reinterpret_cast<sockaddr*>(&ss); }
  bool v4() const { return ss.ss_family == AF_INET; }
  bool any() const {
    if (v4()) return reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr.s_addr == 0;
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr;
    return IN6_IS_ADDR_UNSPECIFIED(&a);
  }
  void set_port(uint16_t p) {
    if (v4()) reinterpret_cast<sockaddr_in*>(&ss)->sin_port = htons(p);
    else reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = htons(p);
  }
  uint16_t port() const {
    return ntohs(v4() ? reinterpret_cast<const sockaddr_in*>(&ss)->sin_port
                      : reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
  }
  std::string ip() const {
    char b[INET6_ADDRSTRLEN] = "?";
    if (v4()) inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, b, sizeof b);
    else inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, b, sizeof b);
    return b;
  }
  std::string str() const { return (v4() ? ip() : "[" + ip() + "]") + ":" + std::to_string(port()); }
  // The GID of this address as RoCEv2 puts it (IPv4: ::ffff:a.b.c.d).
  void Gid(uint8_t gid[16]) const {
    std::memset(gid, 0, 16);
    if (v4()) {
      gid[10] = gid[11] = 0xff;
      std::memcpy(gid + 12, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, 4);
    } else {
      std::memcpy(gid, &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, 16);
    }
  }

  static bool Parse(const std::string& text, uint16_t port, Addr* out) {
    Addr a;
    const std::string host = text.substr(0, text.find('%'));
    auto* s4 = reinterpret_cast<sockaddr_in*>(&a.ss);
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&a.ss);
    if (inet_pton(AF_INET, host.c_str(), &s4->sin_addr) == 1) {
      s4->sin_family = AF_INET;
      a.len = sizeof(sockaddr_in);
    } else if (inet_pton(AF_INET6, host.c_str(), &s6->sin6_addr) == 1) {
      s6->sin6_family = AF_INET6;
      a.len = sizeof(sockaddr_in6);
    } else {
      return false;
    }
    a.set_port(port);
    *out = a;
    return true;
  }
  static Addr From(const sockaddr* s, ULONG len) {
    Addr a;
    std::memcpy(&a.ss, s, std::min<size_t>(len, sizeof a.ss));
    a.len = len;
    return a;
  }
};

// The first address of this process's adapters (NdQueryAddressList, after NdStartup): where
// rping and nd-perf open their adapter when no address says which. False if there is none.
inline bool FirstAddress(Addr* out) {
  SIZE_T cb = 0;
  NdQueryAddressList(0, nullptr, &cb);
  std::vector<char> buf(cb ? cb : 1);
  auto* list = reinterpret_cast<SOCKET_ADDRESS_LIST*>(buf.data());
  if (NdQueryAddressList(0, list, &cb) != ND_SUCCESS || list->iAddressCount < 1) return false;
  *out = Addr::From(list->Address[0].lpSockaddr, static_cast<ULONG>(list->Address[0].iSockaddrLength));
  return true;
}

}  // namespace ndtool
