// SPDX-License-Identifier: MIT
// tchar.h: MSVC's generic-text mappings. With _UNICODE (or UNICODE) defined, _TCHAR / TCHAR is
// wchar_t, _T("x") is L"x", and each _t name is the wide function; otherwise char, "x" and the
// narrow one. Includes windows.h, so a program that includes only <tchar.h> (as Microsoft's ND
// samples do, with <process.h> and the ND headers) gets the whole console layer.
//
// _tmain is wmain(int, wchar_t**) under _UNICODE, else main. glibc starts programs at main:
// libnd2's pkg-config Libs end with the nd2_wmain archive, whose main (pulled in only when the
// program defines none) calls setlocale(LC_CTYPE, ""), converts argv with mbstowcs (bytes the
// locale cannot decode become the wchar_t of the same value) and returns wmain's result; the
// other locale categories stay "C", as a Windows program starts.
//
// The printf names (_tprintf, _ftprintf, _stprintf_s, ...) reach nd_win32_crt.h's MSVC-format
// functions; the string and number names are glibc's (wcs*, wcsto*, ...) or the CRT helpers.
#ifndef ND2API_TCHAR_H_
#define ND2API_TCHAR_H_

#include "windows.h"

#include <ctype.h>
#include <wctype.h>

#if defined(_UNICODE) || defined(UNICODE)
typedef wchar_t _TCHAR;
typedef wchar_t _TSCHAR;
typedef wchar_t _TUCHAR;
typedef wchar_t _TXCHAR;
typedef wint_t _TINT;
#define _TEOF WEOF
#define __T(x) L##x

#define _tmain wmain

#define _tprintf wprintf
#define _ftprintf fwprintf
#define _stprintf swprintf
#define _sntprintf _snwprintf
#define _stprintf_s swprintf_s
#define _vtprintf vwprintf
#define _vftprintf vfwprintf
#define _vstprintf vswprintf
#define _vsntprintf _vsnwprintf
#define _vstprintf_s vswprintf_s
#define _sctprintf _scwprintf
#define _vsctprintf _vscwprintf
#define _fputts fputws
#define _fputtc fputwc
#define _puttc fputwc
#define _puttchar putwchar
#define _putts _putws
#define _tfopen _wfopen
#define _tfreopen _wfreopen

#define _tcslen wcslen
#define _tcsnlen wcsnlen
#define _tcscpy wcscpy
#define _tcsncpy wcsncpy
#define _tcscpy_s wcscpy_s
#define _tcscat wcscat
#define _tcsncat wcsncat
#define _tcscat_s wcscat_s
#define _tcscmp wcscmp
#define _tcsncmp wcsncmp
#define _tcsicmp _wcsicmp
#define _tcsnicmp _wcsnicmp
#define _tcschr wcschr
#define _tcsrchr wcsrchr
#define _tcsstr wcsstr
#define _tcsspn wcsspn
#define _tcscspn wcscspn
#define _tcspbrk wcspbrk
#define _tcstok wcstok
#define _tcsdup _wcsdup
#define _tcstol wcstol
#define _tcstoul wcstoul
#define _tcstoi64 _wcstoi64
#define _tcstoui64 _wcstoui64
#define _tcstod wcstod
#define _ttoi _wtoi
#define _ttol _wtol
#define _ttoi64 _wtoi64
#define _istalpha iswalpha
#define _istdigit iswdigit
#define _istxdigit iswxdigit
#define _istspace iswspace
#define _istalnum iswalnum
#define _istupper iswupper
#define _istlower iswlower
#define _istprint iswprint
#define _totupper towupper
#define _totlower towlower
#else
typedef char _TCHAR;
typedef signed char _TSCHAR;
typedef unsigned char _TUCHAR;
typedef char _TXCHAR;
typedef int _TINT;
#define _TEOF EOF
#define __T(x) x

#define _tmain main

#define _tprintf printf
#define _ftprintf fprintf
#define _stprintf sprintf
#define _sntprintf _snprintf
#define _stprintf_s sprintf_s
#define _vtprintf vprintf
#define _vftprintf vfprintf
#define _vstprintf vsprintf
#define _vsntprintf _vsnprintf
#define _vstprintf_s vsprintf_s
#define _sctprintf _scprintf
#define _vsctprintf _vscprintf
#define _fputts fputs
#define _fputtc fputc
#define _puttc putc
#define _puttchar putchar
#define _putts puts
#define _tfopen fopen
#define _tfreopen freopen

#define _tcslen strlen
#define _tcsnlen strnlen
#define _tcscpy strcpy
#define _tcsncpy strncpy
#define _tcscpy_s strcpy_s
#define _tcscat strcat
#define _tcsncat strncat
#define _tcscat_s strcat_s
#define _tcscmp strcmp
#define _tcsncmp strncmp
#define _tcsicmp _stricmp
#define _tcsnicmp _strnicmp
#define _tcschr strchr
#define _tcsrchr strrchr
#define _tcsstr strstr
#define _tcsspn strspn
#define _tcscspn strcspn
#define _tcspbrk strpbrk
#define _tcstok strtok
#define _tcsdup _strdup
#define _tcstol strtol
#define _tcstoul strtoul
#define _tcstoi64 _strtoi64
#define _tcstoui64 _strtoui64
#define _tcstod strtod
#define _ttoi atoi
#define _ttol atol
#define _ttoi64 _atoi64
#define _istalpha isalpha
#define _istdigit isdigit
#define _istxdigit isxdigit
#define _istspace isspace
#define _istalnum isalnum
#define _istupper isupper
#define _istlower islower
#define _istprint isprint
#define _totupper toupper
#define _totlower tolower
#endif

#define _T(x) __T(x)
#define _TEXT(x) __T(x)

#endif  // ND2API_TCHAR_H_
