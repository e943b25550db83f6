// SPDX-License-Identifier: MIT
// win32_stdio.cc: the MSVC CRT stdio of nd_win32_crt.h (C linkage, nd_win32_* names that the
// header maps the standard names onto): one formatter with MSVC's printf rules for the narrow
// and wide families, the output functions that print its text narrow (so printf and wprintf
// mix on one stream), the sprintf-style copies with each function's own truncation contract,
// and _wfopen / _wfreopen.
//
// The formatter walks the format itself and reads each argument with the type MSVC's rule
// gives it (a 32-bit int for %ld / %lu / %lx: the varargs slot's upper half is never read),
// then has glibc's snprintf print that one number with an explicit glibc length ("ll" or "L"),
// so flags, width and precision mean what they mean in both. Strings and characters are
// placed here: narrow text goes through unchanged into narrow output and is decoded with
// mbrtowc into wide output; wide text is encoded with wcrtomb into narrow output; a character
// the locale cannot convert becomes '?'. Width and precision of %s / %c count the argument's
// characters.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <string>

// The functions below are written with glibc's: the names must keep their glibc meaning here.
#ifndef ND_WIN32_NO_LEGACY_SAL
#define ND_WIN32_NO_LEGACY_SAL
#endif
#define ND_WIN32_CRT_NO_STD_NAMES
#include "nd_win32_crt.h"

namespace roce::nd2 {
namespace {

// ---- Output accumulators ---------------------------------------------------------------------

class NarrowOut {
 public:
  using Char = char;
  void Narrow(const char* s, size_t n) { text.append(s, n); }
  void Wide(const wchar_t* s, size_t n) {
    mbstate_t st{};
    char buf[MB_LEN_MAX];
    for (size_t i = 0; i < n; ++i) {
      const size_t k = wcrtomb(buf, s[i], &st);
      if (k == static_cast<size_t>(-1)) {
        text.push_back('?');
        st = mbstate_t{};
      } else {
        text.append(buf, k);
      }
    }
  }
  void Ascii(const char* s, size_t n) { text.append(s, n); }
  void Fill(char c, size_t n) { text.append(n, c); }
  std::string text;
};

class WideOut {
 public:
  using Char = wchar_t;
  void Narrow(const char* s, size_t n) {
    mbstate_t st{};
    size_t i = 0;
    while (i < n) {
      wchar_t wc;
      const size_t k = mbrtowc(&wc, s + i, n - i, &st);
      if (k == static_cast<size_t>(-1) || k == static_cast<size_t>(-2)) {
        text.push_back(L'?');
        st = mbstate_t{};
        ++i;
      } else if (k == 0) {  // an embedded NUL (a %c of 0)
        text.push_back(L'\0');
        ++i;
      } else {
        text.push_back(wc);
        i += k;
      }
    }
  }
  void Wide(const wchar_t* s, size_t n) { text.append(s, n); }
  void Ascii(const char* s, size_t n) {
    for (size_t i = 0; i < n; ++i) text.push_back(static_cast<unsigned char>(s[i]));
  }
  void Fill(char c, size_t n) { text.append(n, static_cast<wchar_t>(c)); }
  std::wstring text;
};

// ---- The formatter ---------------------------------------------------------------------------

enum class Size { kNone, kHH, kH, kL, kLL, kBigL, kI32, kI64, kPtr, kW, kT };

struct Spec {
  bool minus = false, plus = false, space = false, hash = false, zero = false;
  int width = -1;
  int precision = -1;
  Size size = Size::kNone;
};

template <class C>
bool IsDigit(C c) {
  return c >= C('0') && c <= C('9');
}

std::string NumberSpec(const Spec& sp, const char* length, char conv) {
  std::string f = "%";
  if (sp.minus) f += '-';
  if (sp.plus) f += '+';
  if (sp.space) f += ' ';
  if (sp.hash) f += '#';
  if (sp.zero) f += '0';
  if (sp.width >= 0) f += std::to_string(sp.width);
  if (sp.precision >= 0) f += '.' + std::to_string(sp.precision);
  f += length;
  f += conv;
  return f;
}

// snprintf of one value into `out` (as ASCII: numbers never need the locale's characters
// beyond its decimal point, which is "." in the "C" numeric locale programs start in).
template <class Out, class T>
void PrintOne(Out& out, const std::string& spec, T value) {
  char small[128];
  const int n = snprintf(small, sizeof(small), spec.c_str(), value);
  if (n < 0) return;
  if (static_cast<size_t>(n) < sizeof(small)) {
    out.Ascii(small, static_cast<size_t>(n));
    return;
  }
  std::string big(static_cast<size_t>(n) + 1, '\0');
  snprintf(&big[0], big.size(), spec.c_str(), value);
  out.Ascii(big.data(), static_cast<size_t>(n));
}

// Pads `len` characters of text placed by `put` to the spec's width.
template <class Out, class Put>
void Padded(Out& out, const Spec& sp, size_t len, Put put) {
  const size_t width = sp.width > 0 ? static_cast<size_t>(sp.width) : 0;
  const size_t pad = width > len ? width - len : 0;
  if (!sp.minus) out.Fill(sp.zero ? '0' : ' ', pad);
  put();
  if (sp.minus) out.Fill(' ', pad);
}

template <class Out>
void PutString(Out& out, const Spec& sp, const char* s) {
  if (s == nullptr) s = "(null)";
  size_t len = 0;
  const size_t max = sp.precision >= 0 ? static_cast<size_t>(sp.precision) : SIZE_MAX;
  while (len < max && s[len] != '\0') ++len;
  Padded(out, sp, len, [&] { out.Narrow(s, len); });
}

template <class Out>
void PutString(Out& out, const Spec& sp, const wchar_t* s) {
  if (s == nullptr) s = L"(null)";
  size_t len = 0;
  const size_t max = sp.precision >= 0 ? static_cast<size_t>(sp.precision) : SIZE_MAX;
  while (len < max && s[len] != L'\0') ++len;
  Padded(out, sp, len, [&] { out.Wide(s, len); });
}

// MSVC's counted strings (%Z: ANSI_STRING, %wZ: UNICODE_STRING): Length in bytes.
struct CountedString {
  USHORT Length;
  USHORT MaximumLength;
  void* Buffer;
};

// Formats `fmt` (its characters C: char for the printf family, wchar_t for wprintf's) with
// MSVC's rules into `out`. False at a conversion MSVC rejects (%n, an unknown letter, a
// truncated spec): `out` then holds the text up to it.
template <class C, class Out>
bool Format(const C* fmt, va_list args, Out& out) {
  constexpr bool kWideFormat = sizeof(C) == sizeof(wchar_t);
  va_list ap;
  va_copy(ap, args);
  bool ok = true;
  const C* p = fmt;
  while (*p != C('\0')) {
    if (*p != C('%')) {
      const C* run = p;
      while (*p != C('\0') && *p != C('%')) ++p;
      if constexpr (kWideFormat) {
        out.Wide(reinterpret_cast<const wchar_t*>(run), static_cast<size_t>(p - run));
      } else {
        out.Narrow(reinterpret_cast<const char*>(run), static_cast<size_t>(p - run));
      }
      continue;
    }
    ++p;
    Spec sp;
    for (;; ++p) {
      if (*p == C('-')) sp.minus = true;
      else if (*p == C('+')) sp.plus = true;
      else if (*p == C(' ')) sp.space = true;
      else if (*p == C('#')) sp.hash = true;
      else if (*p == C('0')) sp.zero = true;
      else break;
    }
    if (*p == C('*')) {
      const int w = va_arg(ap, int);
      if (w < 0) {
        sp.minus = true;
        sp.width = w == INT32_MIN ? INT32_MAX : -w;
      } else {
        sp.width = w;
      }
      ++p;
    } else {
      while (IsDigit(*p)) {
        sp.width = (sp.width < 0 ? 0 : sp.width) * 10 + static_cast<int>(*p - C('0'));
        if (sp.width > 1 << 24) sp.width = 1 << 24;
        ++p;
      }
    }
    if (*p == C('.')) {
      ++p;
      sp.precision = 0;
      if (*p == C('*')) {
        const int pr = va_arg(ap, int);
        sp.precision = pr < 0 ? -1 : pr;
        ++p;
      } else {
        while (IsDigit(*p)) {
          sp.precision = sp.precision * 10 + static_cast<int>(*p - C('0'));
          if (sp.precision > 1 << 24) sp.precision = 1 << 24;
          ++p;
        }
      }
    }
    switch (*p) {
      case C('h'):
        ++p;
        if (*p == C('h')) {
          sp.size = Size::kHH;
          ++p;
        } else {
          sp.size = Size::kH;
        }
        break;
      case C('l'):
        ++p;
        if (*p == C('l')) {
          sp.size = Size::kLL;
          ++p;
        } else {
          sp.size = Size::kL;
        }
        break;
      case C('L'): sp.size = Size::kBigL; ++p; break;
      case C('w'): sp.size = Size::kW; ++p; break;
      case C('T'): sp.size = Size::kT; ++p; break;
      case C('j'):
      case C('z'):
      case C('t'): sp.size = Size::kI64; ++p; break;
      case C('I'):
        ++p;
        if (p[0] == C('3') && p[1] == C('2')) {
          sp.size = Size::kI32;
          p += 2;
        } else if (p[0] == C('6') && p[1] == C('4')) {
          sp.size = Size::kI64;
          p += 2;
        } else {
          sp.size = Size::kPtr;
        }
        break;
      default: break;
    }
    const C conv = *p;
    if (conv == C('\0')) {
      ok = false;
      break;
    }
    ++p;
    const bool wide64 = sp.size == Size::kLL || sp.size == Size::kBigL ||
                        sp.size == Size::kI64 || sp.size == Size::kPtr;
    switch (conv) {
      case C('%'):
        out.Ascii("%", 1);
        break;
      case C('d'):
      case C('i'): {
        long long v;
        if (wide64) v = va_arg(ap, long long);
        else if (sp.size == Size::kHH) v = static_cast<signed char>(va_arg(ap, int));
        else if (sp.size == Size::kH) v = static_cast<short>(va_arg(ap, int));
        else v = va_arg(ap, int);
        PrintOne(out, NumberSpec(sp, "ll", 'd'), v);
        break;
      }
      case C('u'):
      case C('o'):
      case C('x'):
      case C('X'): {
        unsigned long long v;
        if (wide64) v = va_arg(ap, unsigned long long);
        else if (sp.size == Size::kHH) v = static_cast<unsigned char>(va_arg(ap, unsigned));
        else if (sp.size == Size::kH) v = static_cast<unsigned short>(va_arg(ap, unsigned));
        else v = va_arg(ap, unsigned);
        PrintOne(out, NumberSpec(sp, "ll", static_cast<char>(conv)), v);
        break;
      }
      case C('e'):
      case C('E'):
      case C('f'):
      case C('F'):
      case C('g'):
      case C('G'):
      case C('a'):
      case C('A'): {
        const bool hex = conv == C('a') || conv == C('A');
        if (sp.size == Size::kBigL) {
          const long double v = va_arg(ap, long double);
          PrintOne(out, NumberSpec(sp, "L", static_cast<char>(conv)), v);
        } else {
          if (hex && sp.precision < 0) sp.precision = 13;  // MSVC: every hex digit of a double
          const double v = va_arg(ap, double);
          PrintOne(out, NumberSpec(sp, "", static_cast<char>(conv)), v);
        }
        break;
      }
      case C('p'): {
        const uintptr_t v = reinterpret_cast<uintptr_t>(va_arg(ap, void*));
        Spec pp;
        pp.minus = sp.minus;
        pp.width = sp.width;
        pp.precision = 2 * static_cast<int>(sizeof(void*));
        PrintOne(out, NumberSpec(pp, "ll", 'X'), static_cast<unsigned long long>(v));
        break;
      }
      case C('c'):
      case C('C'):
      case C('s'):
      case C('S'):
      case C('Z'): {
        // Wide or narrow argument: the size prefix decides; without one, %s / %c are the
        // function's own width and %S / %C the other one (%Z is narrow without 'w').
        bool wide;
        if (sp.size == Size::kH) wide = false;
        else if (sp.size == Size::kL || sp.size == Size::kW) wide = true;
        else if (sp.size == Size::kT || conv == C('s') || conv == C('c')) wide = kWideFormat;
        else if (conv == C('Z')) wide = false;
        else wide = !kWideFormat;
        if (conv == C('c') || conv == C('C')) {
          sp.precision = -1;
          if (wide) {
            const wchar_t c = static_cast<wchar_t>(va_arg(ap, wint_t));
            Padded(out, sp, 1, [&] { out.Wide(&c, 1); });
          } else {
            const char c = static_cast<char>(va_arg(ap, int));
            Padded(out, sp, 1, [&] { out.Narrow(&c, 1); });
          }
        } else if (conv == C('Z')) {
          const CountedString* cs = va_arg(ap, const CountedString*);
          if (cs == nullptr || cs->Buffer == nullptr) {
            PutString(out, sp, "(null)");
          } else if (wide) {
            const std::wstring w(static_cast<const wchar_t*>(cs->Buffer),
                                 cs->Length / sizeof(WCHAR));
            PutString(out, sp, w.c_str());
          } else {
            const std::string n(static_cast<const char*>(cs->Buffer), cs->Length);
            PutString(out, sp, n.c_str());
          }
        } else if (wide) {
          PutString(out, sp, va_arg(ap, const wchar_t*));
        } else {
          PutString(out, sp, va_arg(ap, const char*));
        }
        break;
      }
      default:  // %n (MSVC refuses it by default) and anything unknown
        ok = false;
        break;
    }
    if (!ok) break;
  }
  va_end(ap);
  return ok;
}

// ---- Streams ---------------------------------------------------------------------------------

std::string ToMultibyte(const std::wstring& w) {
  NarrowOut n;
  n.Wide(w.data(), w.size());
  return std::move(n.text);
}

// Writes narrow text to `stream` in one call. A stream some other code made wide-oriented
// (glibc's own wide functions) gets it as wide characters, so nothing is dropped either way.
bool Write(FILE* stream, const std::string& text) {
  if (stream == nullptr) {
    errno = EINVAL;
    return false;
  }
  if (text.empty()) return true;
  if (fwide(stream, 0) > 0) {
    WideOut w;
    w.Narrow(text.data(), text.size());
    return fputws(w.text.c_str(), stream) >= 0;
  }
  return fwrite(text.data(), 1, text.size(), stream) == text.size();
}

int PrintNarrow(FILE* stream, const char* fmt, va_list args) {
  if (fmt == nullptr) {
    errno = EINVAL;
    return -1;
  }
  NarrowOut out;
  const bool ok = Format(fmt, args, out);
  if (!Write(stream, out.text)) return -1;
  if (!ok) {
    errno = EINVAL;
    return -1;
  }
  return static_cast<int>(out.text.size());
}

int PrintWide(FILE* stream, const wchar_t* fmt, va_list args) {
  if (fmt == nullptr) {
    errno = EINVAL;
    return -1;
  }
  WideOut out;
  const bool ok = Format(fmt, args, out);
  if (!Write(stream, ToMultibyte(out.text))) return -1;
  if (!ok) {
    errno = EINVAL;
    return -1;
  }
  return static_cast<int>(out.text.size());
}

// ---- Buffers ---------------------------------------------------------------------------------

enum class Bound {
  kNone,      // sprintf: all of it
  kC99,       // snprintf: count-1 and a NUL; returns the full length
  kSwprintf,  // swprintf (MSVC conforming): count-1 and a NUL; -1 when it did not fit
  kMsvc,      // _snprintf: count, NUL only if shorter; -1 when longer than count
  kSecure,    // sprintf_s: all and a NUL, or an empty buffer, ERANGE and -1
  kCount,     // _scprintf: nothing written
};

template <class C>
int ToBuffer(C* buffer, size_t count, const C* fmt, va_list args, Bound bound) {
  if (fmt == nullptr || (bound == Bound::kSecure && (buffer == nullptr || count == 0)) ||
      (bound != Bound::kCount && bound != Bound::kC99 && bound != Bound::kMsvc &&
       bound != Bound::kSwprintf && buffer == nullptr)) {
    errno = EINVAL;
    return -1;
  }
  std::basic_string<C> text;
  bool ok;
  if constexpr (sizeof(C) == sizeof(wchar_t)) {
    WideOut out;
    ok = Format(fmt, args, out);
    text = std::move(out.text);
  } else {
    NarrowOut out;
    ok = Format(fmt, args, out);
    text = std::move(out.text);
  }
  if (!ok) {
    if (buffer != nullptr && count > 0 && bound != Bound::kCount && bound != Bound::kNone) {
      buffer[0] = C('\0');
    }
    errno = EINVAL;
    return -1;
  }
  const size_t len = text.size();
  const int result = len > static_cast<size_t>(INT32_MAX) ? -1 : static_cast<int>(len);
  switch (bound) {
    case Bound::kCount:
      return result;
    case Bound::kNone:
      memcpy(buffer, text.c_str(), (len + 1) * sizeof(C));
      return result;
    case Bound::kC99:
      if (buffer != nullptr && count > 0) {
        const size_t n = len < count - 1 ? len : count - 1;
        memcpy(buffer, text.data(), n * sizeof(C));
        buffer[n] = C('\0');
      }
      return result;
    case Bound::kSwprintf:
      if (buffer == nullptr || count == 0) {
        errno = EINVAL;
        return -1;
      } else {
        const size_t n = len < count - 1 ? len : count - 1;
        memcpy(buffer, text.data(), n * sizeof(C));
        buffer[n] = C('\0');
        return len < count ? result : -1;
      }
    case Bound::kMsvc:
      if (buffer == nullptr) return count == 0 ? result : -1;
      if (len < count) {
        memcpy(buffer, text.c_str(), (len + 1) * sizeof(C));
        return result;
      }
      memcpy(buffer, text.data(), count * sizeof(C));
      return len == count ? result : -1;
    case Bound::kSecure:
      if (len >= count) {
        buffer[0] = C('\0');
        errno = ERANGE;
        return -1;
      }
      memcpy(buffer, text.c_str(), (len + 1) * sizeof(C));
      return result;
  }
  return -1;
}

// ---- Files -----------------------------------------------------------------------------------

// A wide name or mode in the locale's multibyte encoding; false if a character has none.
bool Encode(const wchar_t* w, std::string* out) {
  mbstate_t st{};
  char buf[MB_LEN_MAX];
  out->clear();
  for (; *w != L'\0'; ++w) {
    const size_t k = wcrtomb(buf, *w, &st);
    if (k == static_cast<size_t>(-1)) return false;
    out->append(buf, k);
  }
  return true;
}

// MSVC's mode without what glibc does not have or means otherwise: 't' (text: every Linux
// file is binary), ",ccs=..." (glibc would make the stream wide-oriented), MSVC's hint letters
// (c, n, N, S, R, T, D, which glibc reads differently or not at all).
std::string PortableMode(const std::string& mode) {
  std::string m;
  for (char c : mode) {
    if (c == ',') break;
    if (c == 'r' || c == 'w' || c == 'a' || c == '+' || c == 'b' || c == 'x') m += c;
  }
  return m;
}

}  // namespace
}  // namespace roce::nd2

namespace nd = roce::nd2;

extern "C" {

int nd_win32_vprintf(const char* format, va_list args) {
  return nd::PrintNarrow(stdout, format, args);
}
int nd_win32_vwprintf(const wchar_t* format, va_list args) {
  return nd::PrintWide(stdout, format, args);
}
int nd_win32_vfprintf(FILE* stream, const char* format, va_list args) {
  return nd::PrintNarrow(stream, format, args);
}
int nd_win32_vfwprintf(FILE* stream, const wchar_t* format, va_list args) {
  return nd::PrintWide(stream, format, args);
}

#define ND_WIN32_VARIADIC_(call) \
  va_list args;                  \
  va_start(args, format);        \
  const int r = call;            \
  va_end(args);                  \
  return r

int nd_win32_printf(const char* format, ...) {
  ND_WIN32_VARIADIC_(nd::PrintNarrow(stdout, format, args));
}
int nd_win32_wprintf(const wchar_t* format, ...) {
  ND_WIN32_VARIADIC_(nd::PrintWide(stdout, format, args));
}
int nd_win32_fprintf(FILE* stream, const char* format, ...) {
  ND_WIN32_VARIADIC_(nd::PrintNarrow(stream, format, args));
}
int nd_win32_fwprintf(FILE* stream, const wchar_t* format, ...) {
  ND_WIN32_VARIADIC_(nd::PrintWide(stream, format, args));
}

int nd_win32_vsprintf(char* buffer, const char* format, va_list args) {
  return nd::ToBuffer(buffer, 0, format, args, nd::Bound::kNone);
}
int nd_win32_sprintf(char* buffer, const char* format, ...) {
  ND_WIN32_VARIADIC_(nd::ToBuffer(buffer, 0, format, args, nd::Bound::kNone));
}
int nd_win32_vswprintf(wchar_t* buffer, size_t count, const wchar_t* format, va_list args) {
  return nd::ToBuffer(buffer, count, format, args, nd::Bound::kSwprintf);
}
int nd_win32_swprintf(wchar_t* buffer, size_t count, const wchar_t* format, ...) {
  ND_WIN32_VARIADIC_(nd::ToBuffer(buffer, count, format, args, nd::Bound::kSwprintf));
}
int nd_win32_vsnprintf(char* buffer, size_t count, const char* format, va_list args) {
  return nd::ToBuffer(buffer, count, format, args, nd::Bound::kC99);
}
int nd_win32_snprintf(char* buffer, size_t count, const char* format, ...) {
  ND_WIN32_VARIADIC_(nd::ToBuffer(buffer, count, format, args, nd::Bound::kC99));
}
int nd_win32__vsnprintf(char* buffer, size_t count, const char* format, va_list args) {
  return nd::ToBuffer(buffer, count, format, args, nd::Bound::kMsvc);
}
int nd_win32__snprintf(char* buffer, size_t count, const char* format, ...) {
  ND_WIN32_VARIADIC_(nd::ToBuffer(buffer, count, format, args, nd::Bound::kMsvc));
}
int nd_win32__vsnwprintf(wchar_t* buffer, size_t count, const wchar_t* format, va_list args) {
  return nd::ToBuffer(buffer, count, format, args, nd::Bound::kMsvc);
}
int nd_win32__snwprintf(wchar_t* buffer, size_t count, const wchar_t* format, ...) {
  ND_WIN32_VARIADIC_(nd::ToBuffer(buffer, count, format, args, nd::Bound::kMsvc));
}
int nd_win32_vsprintf_s(char* buffer, size_t size, const char* format, va_list args) {
  return nd::ToBuffer(buffer, size, format, args, nd::Bound::kSecure);
}
int nd_win32_sprintf_s(char* buffer, size_t size, const char* format, ...) {
  ND_WIN32_VARIADIC_(nd::ToBuffer(buffer, size, format, args, nd::Bound::kSecure));
}
int nd_win32_vswprintf_s(wchar_t* buffer, size_t size, const wchar_t* format, va_list args) {
  return nd::ToBuffer(buffer, size, format, args, nd::Bound::kSecure);
}
int nd_win32_swprintf_s(wchar_t* buffer, size_t size, const wchar_t* format, ...) {
  ND_WIN32_VARIADIC_(nd::ToBuffer(buffer, size, format, args, nd::Bound::kSecure));
}
int nd_win32__vscprintf(const char* format, va_list args) {
  return nd::ToBuffer<char>(nullptr, 0, format, args, nd::Bound::kCount);
}
int nd_win32__scprintf(const char* format, ...) {
  ND_WIN32_VARIADIC_(nd::ToBuffer<char>(nullptr, 0, format, args, nd::Bound::kCount));
}
int nd_win32__vscwprintf(const wchar_t* format, va_list args) {
  return nd::ToBuffer<wchar_t>(nullptr, 0, format, args, nd::Bound::kCount);
}
int nd_win32__scwprintf(const wchar_t* format, ...) {
  ND_WIN32_VARIADIC_(nd::ToBuffer<wchar_t>(nullptr, 0, format, args, nd::Bound::kCount));
}
#undef ND_WIN32_VARIADIC_

int nd_win32_fputws(const wchar_t* s, FILE* stream) {
  if (s == nullptr) {
    errno = EINVAL;
    return -1;
  }
  return nd::Write(stream, nd::ToMultibyte(s)) ? 0 : -1;
}

wint_t nd_win32_fputwc(wchar_t c, FILE* stream) {
  return nd::Write(stream, nd::ToMultibyte(std::wstring(1, c))) ? static_cast<wint_t>(c) : WEOF;
}

wint_t nd_win32_putwchar(wchar_t c) { return nd_win32_fputwc(c, stdout); }

int nd_win32__putws(const wchar_t* s) {
  if (s == nullptr) {
    errno = EINVAL;
    return -1;
  }
  return nd::Write(stdout, nd::ToMultibyte(s) + "\n") ? 0 : -1;
}

int nd_win32__fcloseall(void) { return fflush(nullptr) == 0 ? 0 : EOF; }

FILE* nd_win32__wfopen(const wchar_t* filename, const wchar_t* mode) {
  std::string name, m;
  if (filename == nullptr || mode == nullptr || !nd::Encode(filename, &name) ||
      !nd::Encode(mode, &m)) {
    errno = EINVAL;
    return nullptr;
  }
  return fopen(name.c_str(), nd::PortableMode(m).c_str());
}

FILE* nd_win32__wfreopen(const wchar_t* filename, const wchar_t* mode, FILE* stream) {
  std::string name, m;
  if (mode == nullptr || stream == nullptr || !nd::Encode(mode, &m) ||
      (filename != nullptr && !nd::Encode(filename, &name))) {
    errno = EINVAL;
    return nullptr;
  }
  return freopen(filename != nullptr ? name.c_str() : nullptr, nd::PortableMode(m).c_str(),
                 stream);
}

}  // extern "C"
