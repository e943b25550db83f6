/* The Win32 functions of libnd2 called from C (C linkage, as nd_win32.h declares them): an
 * event, a completion port, a wait with a timeout. Prints "N passed, N failed"-style lines for
 * the failures only; exit status 0 when every check holds. */
#include "nd_win32.h"

#include <stdio.h>

static int failures = 0;

#define CHECK(cond)                                              \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                \
    }                                                            \
  } while (0)

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
  if (failures == 0) printf("win32 from C: ok\n");
  return failures == 0 ? 0 : 1;
}
