// SPDX-License-Identifier: MIT
/* The Win32 functions of libnd2 called from C (C linkage, as nd_win32.h declares them): an
 * event, a completion port, a wait with a timeout; and the console layer's headers compiled as
 * C (windows.h, winsock2.h, ws2tcpip.h, tchar.h, process.h, sal.h, ntstatus.h): a thread and
 * WaitForMultipleObjects, Interlocked64, WSAStringToAddressA, MSVC's printf formats, the CRT
 * helpers' C forms. Prints the failures only; exit status 0 when every check holds. */
#include "nd_win32.h"

#include <stdio.h>

#define WIN32_NO_STATUS
#include <windows.h>
#undef WIN32_NO_STATUS
#include <ntstatus.h>
#include <process.h>
#include <sal.h>
#include <tchar.h>
#include <winsock2.h>
#include <ws2tcpip.h>

static int failures = 0;

#define CHECK(cond)                                              \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                \
    }                                                            \
  } while (0)

static DWORD WINAPI Worker(LPVOID p) {
  InterlockedIncrement64((volatile LONG64*)p);
  return 5;
}

int main(void) {
  HANDLE ev = CreateEventA(NULL, FALSE, FALSE, NULL);
  HANDLE port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
  DWORD bytes = 0;
  ULONG_PTR key = 0;
  OVERLAPPED ov;
  LPOVERLAPPED got = NULL;

  CHECK(ev != NULL);
  CHECK(port != NULL);
  CHECK(WaitForSingleObject(ev, 10) == WAIT_TIMEOUT);
  CHECK(SetEvent(ev));
  CHECK(WaitForSingleObject(ev, INFINITE) == WAIT_OBJECT_0);
  CHECK(ResetEvent(ev));

  RtlZeroMemory(&ov, sizeof(ov));
  CHECK(PostQueuedCompletionStatus(port, 3, 4, &ov));
  CHECK(GetQueuedCompletionStatus(port, &bytes, &key, &got, 0));
  CHECK(bytes == 3 && key == 4 && got == &ov);
  CHECK(!GetQueuedCompletionStatus(port, &bytes, &key, &got, 0));
  CHECK(got == NULL && GetLastError() == WAIT_TIMEOUT);

  CHECK(CloseHandle(ev));
  CHECK(CloseHandle(port));
  CHECK(!CloseHandle(ev));
  CHECK(GetLastError() == ERROR_INVALID_HANDLE);
  {
    /* The console layer from C. */
    static volatile LONG64 v64 = 0xFFFFFFFFll;
    HANDLE t = CreateThread(NULL, 0, Worker, (LPVOID)&v64, 0, NULL);
    HANDLE e = CreateEventA(NULL, TRUE, TRUE, NULL);
    HANDLE both[2];
    DWORD code = 0;
    struct sockaddr_in sin;
    INT len = sizeof(sin);
    char addr[] = "10.0.0.2:4791";
    char buf[64];
    wchar_t wbuf[8];
    int arr[5];
    both[0] = t;
    both[1] = e;
    CHECK(t != NULL && e != NULL);
    CHECK(WaitForMultipleObjects(2, both, TRUE, 10000) == WAIT_OBJECT_0);
    CHECK(GetExitCodeThread(t, &code) && code == 5);
    CHECK(v64 == 0x100000000ll);
    CHECK(InterlockedCompareExchange64(&v64, 1, 0x100000000ll) == 0x100000000ll && v64 == 1);
    CHECK(CloseHandle(t) && CloseHandle(e));
    CHECK(WSAStringToAddressA(addr, AF_INET, NULL, (LPSOCKADDR)&sin, &len) == 0);
    CHECK(len == (INT)sizeof(sin) && sin.sin_port == htons(4791));
    CHECK(sprintf_s(buf, sizeof(buf), "%I64d|%lu|%S", (long long)INT64_MIN, 0xFFFFFFFFul, L"w") ==
          33);
    CHECK(strcmp(buf, "-9223372036854775808|4294967295|w") == 0);
    CHECK(_snwprintf(wbuf, 8, L"%s", L"abc") == 3 && wcscmp(wbuf, L"abc") == 0);
    CHECK(wcscpy_s(wbuf, 8, L"ok") == 0 && _wcsicmp(wbuf, L"OK") == 0);
    CHECK(_countof(arr) == 5);
    CHECK(STATUS_DATA_ERROR == (NTSTATUS)0xC000003E && STATUS_PENDING == 0x103);
    CHECK(_tcslen(_T("abc")) == 3);
  }
  if (failures == 0) printf("win32 from C: ok\n");
  return failures == 0 ? 0 : 1;
}
