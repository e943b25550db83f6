// SPDX-License-Identifier: MIT
// win32_winsock.cc: winsock2.h's functions (C linkage): WSAStartup / WSACleanup (a reference
// count), WSAGetLastError / WSASetLastError (the thread's last error), and WSAStringToAddressA /
// W, which parse an address (and port) as Windows does: IPv4 with the inet_addr forms and an
// optional ":port", IPv6 with an optional scope and "[...]:port" (winsock2.h has the rules).
#include <arpa/inet.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>

#include "nd2api/src/handle.h"

// This file implements Win32 functions with glibc's: the CRT names keep their glibc meaning.
#define ND_WIN32_CRT_NO_STD_NAMES
#include "winsock2.h"

namespace roce::nd2 {
namespace {

std::atomic<int> g_wsa_started{0};

constexpr WORD kHighVersion = 0x0202;  // 2.2

// One number at *p, in C notation (0x hex, leading-0 octal, else decimal) or decimal only;
// advances *p. False when there is no digit or the value exceeds `max`.
bool ParseNumber(const char** p, bool c_notation, uint64_t max, uint64_t* out) {
  const char* s = *p;
  unsigned base = 10;
  if (c_notation && s[0] == '0') {
    if (s[1] == 'x' || s[1] == 'X') {
      base = 16;
      s += 2;
    } else {
      base = 8;
    }
  }
  uint64_t v = 0;
  const char* digits = s;
  for (;; ++s) {
    unsigned d;
    if (*s >= '0' && *s <= '9') {
      d = static_cast<unsigned>(*s - '0');
    } else if (base == 16 && *s >= 'a' && *s <= 'f') {
      d = static_cast<unsigned>(*s - 'a' + 10);
    } else if (base == 16 && *s >= 'A' && *s <= 'F') {
      d = static_cast<unsigned>(*s - 'A' + 10);
    } else {
      break;
    }
    if (d >= base) return false;  // 8 or 9 in an octal part
    v = v * base + d;
    if (v > max) return false;
  }
  if (s == digits && base != 8) return false;  // "0x" alone; a lone "0" is octal zero
  *out = v;
  *p = s;
  return true;
}

bool ParsePort(const char** p, bool c_notation, uint16_t* port) {
  uint64_t v;
  if (!ParseNumber(p, c_notation, 0xFFFF, &v)) return false;
  *port = static_cast<uint16_t>(v);
  return true;
}

// "a.b.c.d" (or a.b.c, a.b, a) then optionally ":port", the whole string.
bool ParseIpv4(const char* s, in_addr* addr, uint16_t* port) {
  uint64_t parts[4];
  int n = 0;
  for (;;) {
    if (n == 4 || !ParseNumber(&s, true, 0xFFFFFFFFull, &parts[n])) return false;
    ++n;
    if (*s != '.') break;
    ++s;
  }
  uint64_t value = 0;
  for (int i = 0; i < n - 1; ++i) {
    if (parts[i] > 0xFF) return false;
    value |= parts[i] << (8 * (3 - i));
  }
  const uint64_t last_max = 0xFFFFFFFFull >> (8 * (n - 1));
  if (parts[n - 1] > last_max) return false;
  value |= parts[n - 1];
  *port = 0;
  if (*s == ':') {
    ++s;
    if (!ParsePort(&s, true, port)) return false;
  }
  if (*s != '\0') return false;
  addr->s_addr = htonl(static_cast<uint32_t>(value));
  return true;
}

// "addr", "addr%scope", "[addr]", "[addr]:port", "[addr%scope]:port".
bool ParseIpv6(const char* s, in6_addr* addr, uint32_t* scope, uint16_t* port) {
  const bool bracket = *s == '[';
  if (bracket) ++s;
  const char* end = s;
  while (*end != '\0' && *end != '%' && *end != ']') ++end;
  const std::string text(s, end);
  if (text.empty() || inet_pton(AF_INET6, text.c_str(), addr) != 1) return false;
  s = end;
  *scope = 0;
  *port = 0;
  if (*s == '%') {
    ++s;
    uint64_t v;
    if (!ParseNumber(&s, false, 0xFFFFFFFFull, &v)) return false;
    *scope = static_cast<uint32_t>(v);
  }
  if (bracket) {
    if (*s != ']') return false;
    ++s;
    if (*s == ':') {
      ++s;
      if (!ParsePort(&s, false, port)) return false;
    }
  }
  return *s == '\0';
}

INT StringToAddress(const char* text, INT family, LPSOCKADDR out, LPINT length) {
  if (family != AF_INET && family != AF_INET6) {
    SetLastError(WSAEINVAL);
    return SOCKET_ERROR;
  }
  if (length == nullptr) {
    SetLastError(WSAEFAULT);
    return SOCKET_ERROR;
  }
  const INT need = family == AF_INET ? static_cast<INT>(sizeof(sockaddr_in))
                                     : static_cast<INT>(sizeof(sockaddr_in6));
  if (out == nullptr || *length < need) {
    *length = need;
    SetLastError(WSAEFAULT);
    return SOCKET_ERROR;
  }
  if (text == nullptr) {
    SetLastError(WSAEINVAL);
    return SOCKET_ERROR;
  }
  if (family == AF_INET) {
    sockaddr_in sin{};
    uint16_t port;
    if (!ParseIpv4(text, &sin.sin_addr, &port)) {
      SetLastError(WSAEINVAL);
      return SOCKET_ERROR;
    }
    sin.sin_family = AF_INET;
    sin.sin_port = htons(port);
    memcpy(out, &sin, sizeof(sin));
  } else {
    sockaddr_in6 sin6{};
    uint16_t port;
    uint32_t scope;
    if (!ParseIpv6(text, &sin6.sin6_addr, &scope, &port)) {
      SetLastError(WSAEINVAL);
      return SOCKET_ERROR;
    }
    sin6.sin6_family = AF_INET6;
    sin6.sin6_port = htons(port);
    sin6.sin6_scope_id = scope;
    memcpy(out, &sin6, sizeof(sin6));
  }
  *length = need;
  return 0;
}

}  // namespace
}  // namespace roce::nd2

namespace nd = roce::nd2;

extern "C" {

int WINAPI WSAStartup(WORD wVersionRequested, LPWSADATA lpWSAData) {
  if (lpWSAData == nullptr) return WSAEFAULT;
  *lpWSAData = WSADATA{};
  const BYTE major = LOBYTE(wVersionRequested);
  const BYTE minor = HIBYTE(wVersionRequested);
  lpWSAData->wHighVersion = nd::kHighVersion;
  if (major == 0) {
    lpWSAData->wVersion = nd::kHighVersion;
    return WSAVERNOTSUPPORTED;
  }
  lpWSAData->wVersion =
      (major > 2 || (major == 2 && minor > 2)) ? nd::kHighVersion : wVersionRequested;
  std::strcpy(lpWSAData->szDescription, "WinSock 2.0");
  std::strcpy(lpWSAData->szSystemStatus, "Running");
  nd::g_wsa_started.fetch_add(1);
  return 0;
}

int WINAPI WSACleanup(void) {
  int n = nd::g_wsa_started.load();
  while (n > 0 && !nd::g_wsa_started.compare_exchange_weak(n, n - 1)) {
  }
  if (n <= 0) {
    nd::SetLastError(WSANOTINITIALISED);
    return SOCKET_ERROR;
  }
  return 0;
}

int WINAPI WSAGetLastError(void) { return static_cast<int>(GetLastError()); }

void WINAPI WSASetLastError(int iError) { nd::SetLastError(static_cast<DWORD>(iError)); }

INT WINAPI WSAStringToAddressA(LPSTR AddressString, INT AddressFamily,
                               LPWSAPROTOCOL_INFOA /*lpProtocolInfo*/, LPSOCKADDR lpAddress,
                               LPINT lpAddressLength) {
  return nd::StringToAddress(AddressString, AddressFamily, lpAddress, lpAddressLength);
}

INT WINAPI WSAStringToAddressW(LPWSTR AddressString, INT AddressFamily,
                               LPWSAPROTOCOL_INFOW /*lpProtocolInfo*/, LPSOCKADDR lpAddress,
                               LPINT lpAddressLength) {
  // An address is ASCII: any other character makes the string invalid.
  std::string narrow;
  bool ascii = true;
  if (AddressString != nullptr) {
    for (const wchar_t* p = AddressString; *p != L'\0'; ++p) {
      if (*p < 0x20 || *p > 0x7E) {
        ascii = false;
        break;
      }
      narrow.push_back(static_cast<char>(*p));
    }
  }
  const char* text = AddressString == nullptr ? nullptr
                     : ascii                   ? narrow.c_str()
                                               : "!";  // parses as nothing: WSAEINVAL
  return nd::StringToAddress(text, AddressFamily, lpAddress, lpAddressLength);
}

}  // extern "C"
