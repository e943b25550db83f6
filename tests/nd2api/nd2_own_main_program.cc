// SPDX-License-Identifier: MIT
// A program with its own main that includes the Win32 console headers (tchar.h without
// UNICODE, so _tmain is main): nd2_wmain_test.sh links it with pkg-config's Libs before the
// source too, so that the nd2_wmain archive is pulled in, and checks that this main still runs.
#include <tchar.h>

int _tmain(int argc, TCHAR* argv[]) {
  _tprintf(_T("own main: %d %s %I64d\n"), argc, argv[argc - 1], -1ll);
  return 3;
}
