// SPDX-License-Identifier: MIT
// Compile-only (-Wall -Wextra -Wpedantic -Werror): the STATUS_* values of ntstatus.h, windows.h
// and ndstatus.h in every include order Windows code uses, WIN32_NO_STATUS honoured as on
// Windows, with no macro redefinition warning; then the values agree. ORDER picks the order.
#if ORDER == 1  // the documented Windows idiom
#define WIN32_NO_STATUS
#include <windows.h>
#undef WIN32_NO_STATUS
#include <ntstatus.h>
#include <ndsupport.h>
#elif ORDER == 2  // ndmval.cpp / ndmemorytest.h: ntstatus.h first, then the console and ND headers
#include <ntstatus.h>
#define WIN32_NO_STATUS
#include <stdio.h>
#include <tchar.h>
#include <process.h>
#include <sal.h>
#include <ndsupport.h>
#include <ndstatus.h>
#elif ORDER == 3  // no WIN32_NO_STATUS: windows.h's subset, then ndstatus.h and ntstatus.h
#include <windows.h>
#include <ndstatus.h>
#include <ntstatus.h>
#ifndef STATUS_TIMEOUT
#error "windows.h defines winnt.h's STATUS_* values without WIN32_NO_STATUS"
#endif
#elif ORDER == 4  // the ND headers first
#include <ndspi.h>
#include <windows.h>
#include <ntstatus.h>
#elif ORDER == 5  // ntstatus.h, ndstatus.h, windows.h
#include <ntstatus.h>
#include <ndstatus.h>
#include <windows.h>
#elif ORDER == 6  // WIN32_NO_STATUS: windows.h defines none of them
#define WIN32_NO_STATUS
#include <windows.h>
#ifdef STATUS_WAIT_0
#error "windows.h defined STATUS_WAIT_0 under WIN32_NO_STATUS"
#endif
#ifdef STATUS_TIMEOUT
#error "windows.h defined STATUS_TIMEOUT under WIN32_NO_STATUS"
#endif
#include <ntstatus.h>
#include <ndstatus.h>
#else
#error "ORDER must be 1 to 6"
#endif

static_assert(STATUS_SUCCESS == ND_SUCCESS, "");
static_assert(STATUS_TIMEOUT == ND_TIMEOUT && STATUS_PENDING == ND_PENDING, "");
static_assert(STATUS_BUFFER_OVERFLOW == ND_BUFFER_OVERFLOW, "");
static_assert(STATUS_CANCELLED == ND_CANCELED, "");
static_assert(STATUS_DATA_OVERRUN == ND_DATA_OVERRUN, "");
static_assert(STATUS_CONNECTION_REFUSED == ND_CONNECTION_REFUSED, "");
static_assert(STATUS_ACCESS_VIOLATION == ND_ACCESS_VIOLATION, "");
static_assert(STATUS_DATA_ERROR == static_cast<NTSTATUS>(0xC000003E), "");
static_assert(STATUS_BAD_NETWORK_NAME == static_cast<NTSTATUS>(0xC00000CC), "");
static_assert(STATUS_ADDRESS_ALREADY_ASSOCIATED == static_cast<NTSTATUS>(0xC0000238), "");
static_assert(STATUS_WAIT_0 == 0 && STATUS_ABANDONED_WAIT_0 == 0x80, "");
static_assert(STATUS_REMOTE_RESOURCES == ND_REMOTE_ERROR, "");
static_assert(STATUS_INVALID_PARAMETER_12 == static_cast<NTSTATUS>(0xC00000FA), "");

int main() { return 0; }
