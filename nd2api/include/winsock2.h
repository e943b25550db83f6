// SPDX-License-Identifier: MIT
// winsock2.h: the part of Winsock 2 that ND programs use, over the POSIX sockets API that
// nd_win32.h already maps SOCKADDR & co. onto. Includes windows.h (and windows.h this file).
//
// What is here:
//   - WSADATA, WSAStartup / WSACleanup (a reference count: WSACleanup without a matching
//     WSAStartup fails with WSANOTINITIALISED), WSAGetLastError / WSASetLastError (the
//     thread's last error, as on Windows), MAKEWORD (windows.h).
//   - WSAStringToAddressA / W, and WSAStringToAddress (W under UNICODE). Windows' parsing:
//       AF_INET: "a.b.c.d" and the inet_addr forms "a.b.c" / "a.b" / "a" (each part decimal,
//         0x hex or 0 octal, the last one filling the remaining bytes), then optionally
//         ":port" (a number in the same notations, at most 65535);
//       AF_INET6: "addr", "addr%scope", "[addr]", "[addr]:port", "[addr%scope]:port" (addr
//         as inet_pton reads it, including an embedded IPv4 tail; scope and port decimal).
//     The whole string must be used: anything else (spaces, a trailing dot, an empty port, a
//     part out of range, the other family, a NULL string) fails with SOCKET_ERROR and
//     WSAEINVAL; a buffer smaller than the family's sockaddr with WSAEFAULT and the size
//     needed in *lpAddressLength; an AddressFamily other than AF_INET / AF_INET6 with
//     WSAEINVAL. On success the sockaddr is zeroed, then family, port (network order), address
//     (and scope id) are set, and *lpAddressLength is its size (16 or 28). lpProtocolInfo is
//     ignored. WSAStartup is not required first (Windows would say WSANOTINITIALISED).
//   - SOCKET (a descriptor widened to UINT_PTR), INVALID_SOCKET, SOCKET_ERROR, closesocket,
//     and the WSAE* codes of the functions above.
#ifndef ND2API_WINSOCK2_H_
#define ND2API_WINSOCK2_H_

#include "windows.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

typedef UINT_PTR SOCKET;
#define INVALID_SOCKET ND_WIN32_CAST_(SOCKET, ~ND_WIN32_CAST_(UINT_PTR, 0))
#define SOCKET_ERROR (-1)
ND_WIN32_INLINE_ int closesocket(SOCKET s) { return close(ND_WIN32_CAST_(int, s)); }

#define WSADESCRIPTION_LEN 256
#define WSASYS_STATUS_LEN 128

// The x64 layout (Windows' _WIN64 order of the fields).
typedef struct WSAData {
  WORD wVersion;
  WORD wHighVersion;
  unsigned short iMaxSockets;
  unsigned short iMaxUdpDg;
  char* lpVendorInfo;
  char szDescription[WSADESCRIPTION_LEN + 1];
  char szSystemStatus[WSASYS_STATUS_LEN + 1];
} WSADATA, *LPWSADATA;

// Only named: WSAStringToAddress ignores it.
typedef struct _WSAPROTOCOL_INFOA WSAPROTOCOL_INFOA, *LPWSAPROTOCOL_INFOA;
typedef struct _WSAPROTOCOL_INFOW WSAPROTOCOL_INFOW, *LPWSAPROTOCOL_INFOW;

#define WSABASEERR 10000
#define WSAEFAULT 10014
#define WSAEINVAL 10022
#define WSAEAFNOSUPPORT 10047
#define WSASYSNOTREADY 10091
#define WSAVERNOTSUPPORTED 10092
#define WSANOTINITIALISED 10093

EXTERN_C_START
// 0, or a WSA* error code (returned, not set): WSAVERNOTSUPPORTED for a requested version
// below 1.0 (wVersion then tells the highest, 2.2), WSAEFAULT for a NULL lpWSAData. wVersion is
// the lower of the request and 2.2.
int WINAPI WSAStartup(WORD wVersionRequested, LPWSADATA lpWSAData);
int WINAPI WSACleanup(void);
int WINAPI WSAGetLastError(void);
void WINAPI WSASetLastError(int iError);
INT WINAPI WSAStringToAddressA(LPSTR AddressString, INT AddressFamily,
                               LPWSAPROTOCOL_INFOA lpProtocolInfo, LPSOCKADDR lpAddress,
                               LPINT lpAddressLength);
INT WINAPI WSAStringToAddressW(LPWSTR AddressString, INT AddressFamily,
                               LPWSAPROTOCOL_INFOW lpProtocolInfo, LPSOCKADDR lpAddress,
                               LPINT lpAddressLength);
EXTERN_C_END

#ifdef UNICODE
#define WSAStringToAddress WSAStringToAddressW
#else
#define WSAStringToAddress WSAStringToAddressA
#endif

#endif  // ND2API_WINSOCK2_H_
