// SPDX-License-Identifier: MIT
// nd_win32_crt.h: the part of Microsoft's C runtime (MSVC's CRT) that Windows console programs
// rely on and glibc does differently or lacks. Included by windows.h (so by every Win32
// console header here); not by the ND headers, so a program that includes only <ndspi.h> /
// <ndsupport.h> keeps glibc's stdio untouched.
//
// What is here:
//   - The printf family with MSVC's formats: printf, wprintf, fprintf, fwprintf, the v* forms,
//     sprintf, swprintf, snprintf, _snprintf, _snwprintf, sprintf_s, swprintf_s (and their C++
//     array-template forms), vsprintf, vswprintf, vsnprintf, _vsnprintf, _vsnwprintf,
//     vsprintf_s, vswprintf_s, _scprintf, _scwprintf, _vscprintf, _vscwprintf. MSVC's rules:
//       %I64d / %I32u / %Id (pointer-sized), %lu / %lx / %ld 32-bit (long is 32-bit on Windows:
//       a ULONG's varargs slot is read as 32 bits), %S / %C the other width's string / char
//       (wide in printf, narrow in wprintf), %s / %c the function's own width (wide in
//       wprintf), %hs / %ls / %ws fixed widths, %Z / %wZ counted strings, %p as 16 upper-case
//       hex digits, %a with 13 hex digits, the 0 flag padding strings too; %n is refused (-1).
//     Every one prints NARROW text: wide output is converted to the locale's multibyte
//     encoding (a character it cannot encode prints as '?'), so printf and wprintf mix on one
//     stream and nothing is lost (glibc gives a stream one orientation for good). Counts are
//     in the function's characters (wchar_t for the w forms), as MSVC's.
//   - fputws, fputwc, putwc, putwchar, _putws: the same narrow conversion.
//   - _wfopen, _wfreopen (and so _tfreopen): names and modes converted to multibyte; MSVC's
//     mode letters glibc has not ('t', ",ccs=...") are dropped. _fcloseall: flushes only.
//   - errno_t, _TRUNCATE, strcpy_s / wcscpy_s / strcat_s / wcscat_s (and their array-template
//     forms), _stricmp / _strnicmp / _wcsicmp / _wcsnicmp, _strdup, _wtoi / _wtol (32-bit
//     results, as Windows' long), _wtoi64 / _atoi64 / _wcstoi64 / _wcstoui64 / _strtoi64 /
//     _strtoui64, _fileno, _isatty.
//
// How: the standard names are macros for libnd2's nd_win32_* functions (C linkage), defined
// after <stdio.h> / <wchar.h> (and in C++ <cstdio> / <cwchar> / <string>) have been included,
// so the standard headers themselves are read unchanged; in C++ the functions are also
// declared in namespace std, so std::printf(...) still compiles (and gets MSVC's formats).
// The _s functions' "invalid parameter" cases (a NULL or too-small buffer) return as if the
// program had installed an invalid-parameter handler that returns: EINVAL / ERANGE (errno or
// the errno_t result), the buffer emptied, -1 for the printf forms; MSVC's default handler
// would end the process instead.
#ifndef ND2API_ND_WIN32_CRT_H_
#define ND2API_ND_WIN32_CRT_H_

#include "nd_win32.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <wchar.h>
#include <wctype.h>

#ifdef __cplusplus
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <string>
#endif

typedef int errno_t;
#ifndef _TRUNCATE
#define _TRUNCATE ((size_t)-1)
#endif

// ---- The printf family (libnd2, C linkage) ------------------------------------------------------

EXTERN_C_START
int nd_win32_printf(const char* format, ...);
int nd_win32_wprintf(const wchar_t* format, ...);
int nd_win32_fprintf(FILE* stream, const char* format, ...);
int nd_win32_fwprintf(FILE* stream, const wchar_t* format, ...);
int nd_win32_vprintf(const char* format, va_list args);
int nd_win32_vwprintf(const wchar_t* format, va_list args);
int nd_win32_vfprintf(FILE* stream, const char* format, va_list args);
int nd_win32_vfwprintf(FILE* stream, const wchar_t* format, va_list args);

// sprintf / vsprintf: no bound. swprintf / vswprintf (MSVC's conforming form): at most count-1
// characters and a NUL, -1 when the output did not fit. snprintf / vsnprintf (C99): at most
// count-1 and a NUL, returns the full length. _snprintf / _snwprintf and their v forms: at
// most count characters, NUL-terminated only when shorter, -1 when longer than count.
// sprintf_s / swprintf_s: the whole output and a NUL, or (too small) an empty buffer, ERANGE
// and -1. _scprintf / _scwprintf: the length only.
int nd_win32_sprintf(char* buffer, const char* format, ...);
int nd_win32_vsprintf(char* buffer, const char* format, va_list args);
int nd_win32_swprintf(wchar_t* buffer, size_t count, const wchar_t* format, ...);
int nd_win32_vswprintf(wchar_t* buffer, size_t count, const wchar_t* format, va_list args);
int nd_win32_snprintf(char* buffer, size_t count, const char* format, ...);
int nd_win32_vsnprintf(char* buffer, size_t count, const char* format, va_list args);
int nd_win32__snprintf(char* buffer, size_t count, const char* format, ...);
int nd_win32__vsnprintf(char* buffer, size_t count, const char* format, va_list args);
int nd_win32__snwprintf(wchar_t* buffer, size_t count, const wchar_t* format, ...);
int nd_win32__vsnwprintf(wchar_t* buffer, size_t count, const wchar_t* format, va_list args);
int nd_win32_sprintf_s(char* buffer, size_t size, const char* format, ...);
int nd_win32_vsprintf_s(char* buffer, size_t size, const char* format, va_list args);
int nd_win32_swprintf_s(wchar_t* buffer, size_t size, const wchar_t* format, ...);
int nd_win32_vswprintf_s(wchar_t* buffer, size_t size, const wchar_t* format, va_list args);
int nd_win32__scprintf(const char* format, ...);
int nd_win32__vscprintf(const char* format, va_list args);
int nd_win32__scwprintf(const wchar_t* format, ...);
int nd_win32__vscwprintf(const wchar_t* format, va_list args);

// Wide output, converted to multibyte. WEOF / a negative value on error, as the originals.
int nd_win32_fputws(const wchar_t* s, FILE* stream);
wint_t nd_win32_fputwc(wchar_t c, FILE* stream);
wint_t nd_win32_putwchar(wchar_t c);
int nd_win32__putws(const wchar_t* s);  // s and a new line, on stdout

// MSVC's _fcloseall closes every stream the program opened (not stdin / stdout / stderr) and
// returns how many. glibc cannot list a program's streams: this one flushes them all (the
// program's data reaches its files as with the close), closes none and returns 0.
int nd_win32__fcloseall(void);

FILE* nd_win32__wfopen(const wchar_t* filename, const wchar_t* mode);
FILE* nd_win32__wfreopen(const wchar_t* filename, const wchar_t* mode, FILE* stream);
EXTERN_C_END

#ifdef __cplusplus
// The array forms MSVC's headers give C++ (the size taken from the array).
template <size_t N, class... Args>
inline int nd_win32_sprintf_s(char (&buffer)[N], const char* format, Args... args) {
  return nd_win32_sprintf_s(buffer, N, format, args...);
}
template <size_t N, class... Args>
inline int nd_win32_swprintf_s(wchar_t (&buffer)[N], const wchar_t* format, Args... args) {
  return nd_win32_swprintf_s(buffer, N, format, args...);
}
template <size_t N>
inline int nd_win32_vsprintf_s(char (&buffer)[N], const char* format, va_list args) {
  return nd_win32_vsprintf_s(buffer, N, format, args);
}
template <size_t N>
inline int nd_win32_vswprintf_s(wchar_t (&buffer)[N], const wchar_t* format, va_list args) {
  return nd_win32_vswprintf_s(buffer, N, format, args);
}

namespace std {
using ::nd_win32_fprintf;
using ::nd_win32_fputwc;
using ::nd_win32_fputws;
using ::nd_win32_fwprintf;
using ::nd_win32_printf;
using ::nd_win32_putwchar;
using ::nd_win32_snprintf;
using ::nd_win32_sprintf;
using ::nd_win32_swprintf;
using ::nd_win32_vfprintf;
using ::nd_win32_vfwprintf;
using ::nd_win32_vprintf;
using ::nd_win32_vsnprintf;
using ::nd_win32_vsprintf;
using ::nd_win32_vswprintf;
using ::nd_win32_vwprintf;
using ::nd_win32_wprintf;
}  // namespace std
#endif

// The names. Each is #undef'd first: glibc may define some as macros (fortified builds).
// ND_WIN32_CRT_NO_STD_NAMES (libnd2's own sources, which implement these functions with
// glibc's) declares the nd_win32_* functions without mapping the names onto them.
#ifndef ND_WIN32_CRT_NO_STD_NAMES
#undef printf
#undef wprintf
#undef fprintf
#undef fwprintf
#undef vprintf
#undef vwprintf
#undef vfprintf
#undef vfwprintf
#undef sprintf
#undef vsprintf
#undef swprintf
#undef vswprintf
#undef snprintf
#undef vsnprintf
#undef fputws
#undef fputwc
#undef putwc
#undef putwchar
#define printf nd_win32_printf
#define wprintf nd_win32_wprintf
#define fprintf nd_win32_fprintf
#define fwprintf nd_win32_fwprintf
#define vprintf nd_win32_vprintf
#define vwprintf nd_win32_vwprintf
#define vfprintf nd_win32_vfprintf
#define vfwprintf nd_win32_vfwprintf
#define sprintf nd_win32_sprintf
#define vsprintf nd_win32_vsprintf
#define swprintf nd_win32_swprintf
#define vswprintf nd_win32_vswprintf
#define snprintf nd_win32_snprintf
#define vsnprintf nd_win32_vsnprintf
#define _snprintf nd_win32__snprintf
#define _vsnprintf nd_win32__vsnprintf
#define _snwprintf nd_win32__snwprintf
#define _vsnwprintf nd_win32__vsnwprintf
#define sprintf_s nd_win32_sprintf_s
#define vsprintf_s nd_win32_vsprintf_s
#define swprintf_s nd_win32_swprintf_s
#define vswprintf_s nd_win32_vswprintf_s
#define _scprintf nd_win32__scprintf
#define _vscprintf nd_win32__vscprintf
#define _scwprintf nd_win32__scwprintf
#define _vscwprintf nd_win32__vscwprintf
#define fputws nd_win32_fputws
#define fputwc nd_win32_fputwc
#define putwc nd_win32_fputwc
#define putwchar nd_win32_putwchar
#define _putws nd_win32__putws
#define _wfopen nd_win32__wfopen
#define _wfreopen nd_win32__wfreopen
#define _fcloseall nd_win32__fcloseall
#endif  // ND_WIN32_CRT_NO_STD_NAMES

// ---- Strings and numbers (inline) ---------------------------------------------------------------

#define _stricmp strcasecmp
#define _strnicmp strncasecmp
// _wcsicmp / _wcsnicmp: towlower of each character, the difference of the first that differ
// (C99's <wctype.h> only, so strict C compiles them as well as C++).
ND_WIN32_INLINE_ int _wcsnicmp(const wchar_t* a, const wchar_t* b, size_t n) {
  for (; n != 0; ++a, ++b, --n) {
    const wint_t ca = towlower(ND_WIN32_CAST_(wint_t, *a));
    const wint_t cb = towlower(ND_WIN32_CAST_(wint_t, *b));
    if (ca != cb || ca == 0) return ND_WIN32_CAST_(int, ca) - ND_WIN32_CAST_(int, cb);
  }
  return 0;
}
ND_WIN32_INLINE_ int _wcsicmp(const wchar_t* a, const wchar_t* b) {
  return _wcsnicmp(a, b, ND_WIN32_CAST_(size_t, -1));
}
#define _strdup strdup
#define _wcsdup wcsdup
#define _fileno fileno
#define _isatty isatty
#define _atoi64(s) strtoll((s), NULL, 10)
#define _wtoi64(s) wcstoll((s), NULL, 10)
#define _strtoi64 strtoll
#define _strtoui64 strtoull
#define _wcstoi64 wcstoll
#define _wcstoui64 wcstoull

// _wtol / _wtoi: Windows' long is 32-bit: out-of-range values saturate at its limits.
ND_WIN32_INLINE_ LONG ND_Win32Wtol_(const wchar_t* s) {
  const long long v = wcstoll(s, NULL, 10);
  if (v > 0x7FFFFFFFLL) return 0x7FFFFFFF;
  if (v < -0x80000000LL) return -0x7FFFFFFF - 1;
  return ND_WIN32_CAST_(LONG, v);
}
#define _wtol ND_Win32Wtol_
#define _wtoi ND_Win32Wtol_

// strcpy_s & co: 0, or EINVAL (NULL argument, size 0) / ERANGE (does not fit) with the
// destination emptied when there is one.
#define ND_WIN32_STRCPY_S_(name, C, len)                                                    \
  ND_WIN32_INLINE_ errno_t name(C* dest, size_t size, const C* src) {                      \
    if (dest == NULL || size == 0) return EINVAL;                                           \
    if (src == NULL) {                                                                      \
      dest[0] = 0;                                                                          \
      return EINVAL;                                                                        \
    }                                                                                       \
    const size_t n = len(src);                                                              \
    if (n >= size) {                                                                        \
      dest[0] = 0;                                                                          \
      return ERANGE;                                                                        \
    }                                                                                       \
    memcpy(dest, src, (n + 1) * sizeof(C));                                                 \
    return 0;                                                                               \
  }                                                                                         \
  ND_WIN32_INLINE_ errno_t name##_cat_(C* dest, size_t size, const C* src) {               \
    if (dest == NULL || size == 0) return EINVAL;                                           \
    size_t have = 0;                                                                        \
    while (have < size && dest[have] != 0) ++have;                                          \
    if (have == size || src == NULL) {                                                      \
      dest[0] = 0;                                                                          \
      return EINVAL;                                                                        \
    }                                                                                       \
    const size_t n = len(src);                                                              \
    if (have + n >= size) {                                                                 \
      dest[0] = 0;                                                                          \
      return ERANGE;                                                                        \
    }                                                                                       \
    memcpy(dest + have, src, (n + 1) * sizeof(C));                                          \
    return 0;                                                                               \
  }
ND_WIN32_STRCPY_S_(ND_Win32StrcpyS_, char, strlen)
ND_WIN32_STRCPY_S_(ND_Win32WcscpyS_, wchar_t, wcslen)
#undef ND_WIN32_STRCPY_S_

#ifdef __cplusplus
inline errno_t strcpy_s(char* dest, size_t size, const char* src) {
  return ND_Win32StrcpyS_(dest, size, src);
}
inline errno_t wcscpy_s(wchar_t* dest, size_t size, const wchar_t* src) {
  return ND_Win32WcscpyS_(dest, size, src);
}
inline errno_t strcat_s(char* dest, size_t size, const char* src) {
  return ND_Win32StrcpyS__cat_(dest, size, src);
}
inline errno_t wcscat_s(wchar_t* dest, size_t size, const wchar_t* src) {
  return ND_Win32WcscpyS__cat_(dest, size, src);
}
template <size_t N>
inline errno_t strcpy_s(char (&dest)[N], const char* src) {
  return ND_Win32StrcpyS_(dest, N, src);
}
template <size_t N>
inline errno_t wcscpy_s(wchar_t (&dest)[N], const wchar_t* src) {
  return ND_Win32WcscpyS_(dest, N, src);
}
template <size_t N>
inline errno_t strcat_s(char (&dest)[N], const char* src) {
  return ND_Win32StrcpyS__cat_(dest, N, src);
}
template <size_t N>
inline errno_t wcscat_s(wchar_t (&dest)[N], const wchar_t* src) {
  return ND_Win32WcscpyS__cat_(dest, N, src);
}
#else
#define strcpy_s ND_Win32StrcpyS_
#define wcscpy_s ND_Win32WcscpyS_
#define strcat_s ND_Win32StrcpyS__cat_
#define wcscat_s ND_Win32WcscpyS__cat_
#endif

#endif  // ND2API_ND_WIN32_CRT_H_
