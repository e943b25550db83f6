// SPDX-License-Identifier: MIT
// A Windows console program's entry point (tchar.h's _tmain under UNICODE / _UNICODE, which is
// wmain): built by nd2_wmain_test.sh with nothing but `pkg-config --cflags --libs nd2`, so that
// its main comes from libnd2's nd2_wmain archive. It prints what wmain received, and mixes
// printf and wprintf on stdout as Windows programs do.
#include <locale.h>
#include <stdio.h>

#include <tchar.h>

int __cdecl _tmain(int argc, TCHAR* argv[]) {
  wprintf(L"argc=%d\n", argc);
  for (int i = 1; i < argc; ++i) {
    printf("argv[%d] len=%u first=%04X ", i, static_cast<unsigned>(_tcslen(argv[i])),
           argv[i][0] == 0 ? 0u : static_cast<unsigned>(argv[i][0]));
    wprintf(L"text=[%s] ", argv[i]);
    printf("again=[%S]\n", argv[i]);
  }
  printf("argv[argc]=%s\n", argv[argc] == nullptr ? "NULL" : "set");
  printf("LC_NUMERIC=%s %.1f\n", setlocale(LC_NUMERIC, nullptr), 1.5);
  return argc + 40;
}
