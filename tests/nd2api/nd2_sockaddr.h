// SPDX-License-Identifier: MIT
// An IPv4 sockaddr for the ND2 tests' calls (NdOpenAdapter, Bind, Connect).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>

namespace nd2t {

inline sockaddr_in Addr(const char* ip, uint16_t port = 0) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

}  // namespace nd2t
