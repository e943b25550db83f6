// SPDX-License-Identifier: MIT
// ws2tcpip.h: Winsock 2's TCP/IP additions. On Linux they are POSIX's (getaddrinfo,
// inet_pton, inet_ntop, sockaddr_in6, socklen_t from <netdb.h> and <arpa/inet.h>); this header
// brings those and winsock2.h (so windows.h), nothing of its own.
#ifndef ND2API_WS2TCPIP_H_
#define ND2API_WS2TCPIP_H_

#include "winsock2.h"

#include <arpa/inet.h>
#include <netdb.h>

#endif  // ND2API_WS2TCPIP_H_
