// SPDX-License-Identifier: MIT
/* Compile-only check (tests/nd2api/meson.build, C11): the headers that are plain C on Windows
 * (nd_win32.h, ndstatus.h, nddef.h; ndspi.h and ndsupport.h are C++) compile from C, strictly,
 * and their checks hold there too. */
#include <initguid.h>
#include <ndstatus.h>
#include <nddef.h>

DEFINE_GUID(IID_Example, 0x997513d1, 0x7692, 0x446f, 0x9c, 0x0a, 0xa4, 0xb1, 0xdb, 0x34, 0xdb,
            0x45);

_Static_assert(sizeof(ND2_RESULT) == 32, "ND2_RESULT");
_Static_assert(sizeof(ND2_SGE) == 16, "ND2_SGE");
_Static_assert(sizeof(ND2_ADAPTER_INFO) == 96, "ND2_ADAPTER_INFO");
_Static_assert(sizeof(OVERLAPPED) == 32, "OVERLAPPED");
_Static_assert(sizeof(SOCKET_ADDRESS_LIST) == 24, "SOCKET_ADDRESS_LIST");

int example(ND2_RESULT* results, ULONG n);

int example(ND2_RESULT* results, ULONG n) {
  OVERLAPPED ov;
  LONG refs = 0;
  int failures = 0;
  ULONG i;
  RtlZeroMemory(&ov, sizeof ov);
  ov.Offset = 1;
  InterlockedIncrement(&refs);
  for (i = 0; i < n; ++i) {
    switch (results[i].Status) {
      case ND_SUCCESS:
        if (results[i].RequestType == Nd2RequestTypeReceive) ++refs;
        __fallthrough;
      case ND_CANCELED:
        break;
      default:
        if (FAILED(results[i].Status) || results[i].Status == STATUS_DATA_ERROR) ++failures;
    }
  }
  return failures + (int)IsEqualGUID(&IID_Example, &IID_Example) +
         (int)(HRESULT_FROM_WIN32(ERROR_IO_PENDING) < 0) + (int)ov.OffsetHigh + (int)refs;
}
