// SPDX-License-Identifier: MIT
/* wmain_entry.c: the program entry point of tchar.h's _tmain under _UNICODE, alone in the
 * nd2_wmain static archive that libnd2's pkg-config Libs name after -lnd2.
 *
 * glibc starts a program at main; a Windows program compiled with _UNICODE defines wmain
 * instead. The linker takes this object from the archive only when `main` is still undefined,
 * i.e. for a program without a main of its own. Both symbols are weak, so that the archive
 * never changes a program that has its main: even when the archive comes first on the link
 * line (and so is pulled in), the program's main wins and the reference to wmain stays empty.
 *
 * What it does: setlocale(LC_CTYPE, "") (the other categories stay "C", as a Windows program
 * starts, so "%f" keeps its '.'), each argument converted with mbstowcs (an argument the locale
 * cannot decode is widened byte by byte, each byte the wchar_t of its value), argv[argc] NULL,
 * then wmain's result is the exit status. */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

extern int wmain(int argc, wchar_t** argv) __attribute__((weak));

static wchar_t* Widen(const char* s) {
  const size_t n = mbstowcs(NULL, s, 0);
  wchar_t* w;
  if (n != (size_t)-1) {
    w = malloc((n + 1) * sizeof(wchar_t));
    if (w != NULL) mbstowcs(w, s, n + 1);
    return w;
  }
  const size_t len = strlen(s);
  w = malloc((len + 1) * sizeof(wchar_t));
  if (w == NULL) return NULL;
  for (size_t i = 0; i < len; ++i) w[i] = (wchar_t)(unsigned char)s[i];
  w[len] = L'\0';
  return w;
}

__attribute__((weak)) int main(int argc, char** argv) {
  if (wmain == NULL) {
    fputs("nd2_wmain: this program defines neither main nor wmain\n", stderr);
    return 127;
  }
  setlocale(LC_CTYPE, "");
  wchar_t** wargv = calloc((size_t)argc + 1, sizeof(wchar_t*));
  if (wargv == NULL) {
    fputs("nd2_wmain: out of memory\n", stderr);
    return 127;
  }
  for (int i = 0; i < argc; ++i) {
    wargv[i] = Widen(argv[i]);
    if (wargv[i] == NULL) {
      fputs("nd2_wmain: out of memory\n", stderr);
      return 127;
    }
  }
  return wmain(argc, wargv);
}
