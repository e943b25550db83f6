// SPDX-License-Identifier: MIT
// MSVC's printf as nd_win32_crt.h gives it to a program that includes <windows.h>: every
// format rule against the exact bytes MSVC prints (%I64d at INT64_MIN, %I32, %Id, 32-bit %lu
// with a dirty upper half in the varargs slot, %S / %s / %C / %c in both families, %p, %Z,
// flags, width and precision, %a), the sprintf-style functions' truncation contracts, printf
// and wprintf mixed on stdout itself (captured through a file), a stream glibc made
// wide-oriented, wide text in a UTF-8 and in the "C" locale, the wide output functions,
// _wfopen / _wfreopen, and std::printf reaching the same functions.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <locale.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include <windows.h>

namespace {

// snprintf with MSVC's rules, into a std::string.
template <class... A>
std::string F(const char* fmt, A... args) {
  char buf[512];
  const int n = snprintf(buf, sizeof(buf), fmt, args...);
  EXPECT_GE(n, 0) << fmt;
  return std::string(buf, n < 0 ? 0 : static_cast<size_t>(n));
}

// swprintf with MSVC's rules, converted to a std::string (ASCII cases only).
template <class... A>
std::string W(const wchar_t* fmt, A... args) {
  wchar_t buf[512];
  const int n = swprintf(buf, 512, fmt, args...);
  EXPECT_GE(n, 0);
  std::string out;
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>(buf[i]));
  return out;
}

// Calls `fn` with stdout redirected to a temporary file; what it printed.
template <class Fn>
std::string CaptureStdout(Fn fn) {
  fflush(stdout);
  char path[] = "/tmp/nd2_win32_printf.XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  const int saved = dup(STDOUT_FILENO);
  dup2(fd, STDOUT_FILENO);
  fn();
  fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  std::string out;
  lseek(fd, 0, SEEK_SET);
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  unlink(path);
  return out;
}

// A ULONG whose varargs slot carries garbage in its upper half, as a 32-bit value in a 64-bit
// register may on x86-64 (nothing zero-extends it): the whole 64-bit slot is passed, and MSVC's
// %lu must read only its low 32 bits.
std::string DirtySlot(const char* fmt, uint32_t value) {
  const unsigned long long slot = 0xDEADBEEF00000000ull | value;
  char buf[64];
  const int n = snprintf(buf, sizeof(buf), fmt, slot);
  return std::string(buf, n < 0 ? 0 : static_cast<size_t>(n));
}

TEST(Win32Printf, SizedIntegers) {
  EXPECT_EQ(F("%I64d", INT64_MIN), "-9223372036854775808");
  EXPECT_EQ(F("%I64d", INT64_MAX), "9223372036854775807");
  EXPECT_EQ(F("%I64u", UINT64_MAX), "18446744073709551615");
  EXPECT_EQ(F("%I64x|%I64X", 0x123456789abcdef0ull, 0xfedcba9876543210ull),
            "123456789abcdef0|FEDCBA9876543210");
  EXPECT_EQ(F("%I32u %I32d", 4294967295u, -7), "4294967295 -7");
  EXPECT_EQ(F("%Id|%Iu|%9Id|%Ix", static_cast<ptrdiff_t>(-5), SIZE_MAX, static_cast<SIZE_T>(42),
              static_cast<SIZE_T>(0x1234567890ull)),
            "-5|18446744073709551615|       42|1234567890");
  EXPECT_EQ(F("%lld %llu", LLONG_MIN, ULLONG_MAX), "-9223372036854775808 18446744073709551615");
  EXPECT_EQ(F("%zu %zd %jd %td", static_cast<size_t>(1) << 40, static_cast<ssize_t>(-1),
              static_cast<intmax_t>(INT64_MIN), static_cast<ptrdiff_t>(3)),
            "1099511627776 -1 -9223372036854775808 3");
  EXPECT_EQ(F("%hu %hd %hhu %hhx", 0x12345, 0x18000, 0x1ff, 0x1ab), "9029 -32768 255 ab");
  EXPECT_EQ(F("%u %d %x", 4000000000u, -1, 0xbeefu), "4000000000 -1 beef");
}

TEST(Win32Printf, LongIsThirtyTwoBitsEvenWithADirtySlot) {
  EXPECT_EQ(DirtySlot("%lu", 7), "7");
  EXPECT_EQ(DirtySlot("%lx", 0xabcdef01u), "abcdef01");
  EXPECT_EQ(DirtySlot("%ld", 0xFFFFFFFFu), "-1");
  EXPECT_EQ(DirtySlot("%08lX", 0x1234u), "00001234");
  EXPECT_EQ(DirtySlot("%u", 5), "5");
  EXPECT_EQ(DirtySlot("%I32x", 0x10u), "10");
  // The same slot read as 64 bits shows the garbage was there.
  EXPECT_EQ(DirtySlot("%llx", 7), "deadbeef00000007");
  ULONG ul = 4294967295u;
  DWORD dw = 123456789;
  EXPECT_EQ(F("%lu %lu %9ul", ul, dw, dw), "4294967295 123456789 123456789l");
}

TEST(Win32Printf, StringsAndCharactersByFunctionWidth) {
  const wchar_t* wide = L"wide";
  const char* narrow = "narrow";
  EXPECT_EQ(F("%s|%S|%hs|%ls|%ws", narrow, wide, narrow, wide, wide),
            "narrow|wide|narrow|wide|wide");
  EXPECT_EQ(W(L"%s|%S|%hs|%ls|%ws", wide, narrow, narrow, wide, wide),
            "wide|narrow|narrow|wide|wide");
  EXPECT_EQ(F("%c%C%hc%lc%wc", 'a', static_cast<wint_t>(L'b'), 'c', static_cast<wint_t>(L'd'),
              static_cast<wint_t>(L'e')),
            "abcde");
  EXPECT_EQ(W(L"%c%C%hc%lc%wc", static_cast<wint_t>(L'a'), 'b', 'c', static_cast<wint_t>(L'd'),
              static_cast<wint_t>(L'e')),
            "abcde");
  EXPECT_EQ(F("%s|%S", static_cast<const char*>(nullptr), static_cast<const wchar_t*>(nullptr)),
            "(null)|(null)");
  EXPECT_EQ(W(L"%s", static_cast<const wchar_t*>(nullptr)), "(null)");
  EXPECT_EQ(F("[%5s|%-5s|%.2s|%05s|%*s|%-*S|%3c]", "ab", "ab", "abcdef", "ab", 4, "x", 3, L"y",
              'z'),
            "[   ab|ab   |ab|000ab|   x|y  |  z]");
  EXPECT_EQ(W(L"[%5s|%.1S]", L"ab", "xyz"), "[   ab|x]");
  // MSVC's counted strings.
  struct {
    USHORT Length, MaximumLength;
    const void* Buffer;
  } ansi{3, 8, "abcdef"}, uni{2 * sizeof(WCHAR), 8 * sizeof(WCHAR), L"UVWXYZ"};  // bytes
  EXPECT_EQ(F("%Z|%wZ", &ansi, &uni), "abc|UV");
}

TEST(Win32Printf, PointersFloatsFlagsAndPercent) {
  EXPECT_EQ(F("%p", reinterpret_cast<void*>(uintptr_t{0x1234abcd})), "000000001234ABCD");
  EXPECT_EQ(F("%p", static_cast<void*>(nullptr)), "0000000000000000");
  EXPECT_EQ(F("[%20p]", reinterpret_cast<void*>(uintptr_t{0xff})), "[    00000000000000FF]");
  EXPECT_EQ(F("%08x %#x %#o %+d % d %-6d|", 0xbeefu, 255u, 8u, 5, 5, 42),
            "0000beef 0xff 010 +5  5 42    |");
  EXPECT_EQ(F("%9.2f|%7.2f|%11.0f|%f", 3.14159, -2.5, 12345678.9, 0.5),
            "     3.14|  -2.50|   12345679|0.500000");
  EXPECT_EQ(F("%e|%E|%g|%G", 12345.678, 0.000123, 0.0001, 1e20),
            "1.234568e+04|1.230000E-04|0.0001|1E+20");
  EXPECT_EQ(F("%a|%.1a", 1.0, 1.5), "0x1.0000000000000p+0|0x1.8p+0");
  EXPECT_EQ(F("%*d|%-*d|%.*f|%.*d", 5, 42, 4, 7, 2, 3.14159, 4, 9), "   42|7   |3.14|0009");
  EXPECT_EQ(F("%*d", -4, 1), "1   ") << "a negative * width left-justifies";
  EXPECT_EQ(F("100%% %d%%", 5), "100% 5%");
  EXPECT_EQ(F("%Lf", 2.5L), "2.500000");
  EXPECT_EQ(F("%lf", 2.5), "2.500000") << "%lf is a double";
  char buf[32];
  EXPECT_EQ(snprintf(buf, sizeof(buf), "a%nb", static_cast<int*>(nullptr)), -1)
      << "%n is refused, as MSVC does by default";
  EXPECT_EQ(snprintf(buf, sizeof(buf), "%y"), -1) << "an unknown conversion";
  EXPECT_EQ(snprintf(buf, sizeof(buf), "abc%"), -1) << "a truncated spec";
}

TEST(Win32Printf, BufferFunctionsTruncateEachTheirOwnWay) {
  char b[8];
  memset(b, 'X', sizeof(b));
  EXPECT_EQ(snprintf(b, 5, "%d", 123456), 6) << "C99: the full length";
  EXPECT_STREQ(b, "1234");

  memset(b, 'X', sizeof(b));
  EXPECT_EQ(_snprintf(b, 5, "%d", 123456), -1) << "longer than count";
  EXPECT_EQ(std::string(b, 6), "12345X") << "count characters, no NUL";
  memset(b, 'X', sizeof(b));
  EXPECT_EQ(_snprintf(b, 5, "%d", 12345), 5) << "exactly count: its length, no NUL";
  EXPECT_EQ(std::string(b, 6), "12345X");
  EXPECT_EQ(_snprintf(b, 5, "%d", 12), 2);
  EXPECT_STREQ(b, "12");

  errno = 0;
  EXPECT_EQ(sprintf_s(b, 4, "%s", "abcd"), -1);
  EXPECT_EQ(errno, ERANGE);
  EXPECT_EQ(b[0], '\0') << "sprintf_s empties a buffer that is too small";
  EXPECT_EQ(sprintf_s(b, "%I64u", 1234567ull), 7) << "the array form takes the size";
  EXPECT_STREQ(b, "1234567");
  EXPECT_EQ(sprintf_s(b, "%s", "12345678"), -1) << "8 characters and a NUL do not fit in 8";

  wchar_t w[8];
  EXPECT_EQ(swprintf(w, 4, L"%s", L"abcdef"), -1) << "MSVC's swprintf: -1 when truncated";
  EXPECT_EQ(std::wstring(w), L"abc");
  EXPECT_EQ(swprintf(w, 8, L"%S", "abc"), 3);
  EXPECT_EQ(std::wstring(w), L"abc");
  wmemset(w, L'X', 8);
  EXPECT_EQ(_snwprintf(w, 3, L"%d", 1234), -1);
  EXPECT_EQ(std::wstring(w, 4), L"123X");
  EXPECT_EQ(swprintf_s(w, L"%ls", L"ok"), 2);
  EXPECT_EQ(std::wstring(w), L"ok");
  EXPECT_EQ(_scprintf("%I64d|%S", INT64_MIN, L"ab"), 23);
  EXPECT_EQ(_scwprintf(L"%s", L"abc"), 3);
  char big[16];
  EXPECT_EQ(sprintf(big, "%lu", 4294967295u), 10);
  EXPECT_STREQ(big, "4294967295");
}

TEST(Win32Printf, PrintfAndWprintfMixOnStdout) {
  const std::string out = CaptureStdout([] {
    printf("a%d", 1);
    wprintf(L"b%s", L"c");
    printf("%S", L"d");
    wprintf(L"%S|%c\n", "e", static_cast<wint_t>(L'f'));
    fwprintf(stdout, L"%I64d ", INT64_MIN);
    fprintf(stdout, "%lu\n", 4294967295u);
    fputws(L"g", stdout);
    putwchar(L'h');
    fputwc(L'i', stdout);
    _putws(L"j");
  });
  EXPECT_EQ(out, "a1bcde|f\n-9223372036854775808 4294967295\nghij\n");
}

TEST(Win32Printf, ReturnValuesCountTheFunctionsCharacters) {
  const char* saved = setlocale(LC_CTYPE, nullptr);
  const std::string restore = saved != nullptr ? saved : "C";
  if (setlocale(LC_CTYPE, "C.UTF-8") == nullptr) GTEST_SKIP() << "no C.UTF-8 locale";
  int narrow_count = 0, wide_count = 0;
  const std::string out = CaptureStdout([&] {
    wide_count = wprintf(L"%s", L"\u00e9t\u00e9");
    narrow_count = printf("%S", L"\u00e9t\u00e9");
  });
  setlocale(LC_CTYPE, restore.c_str());
  EXPECT_EQ(out, "\xc3\xa9t\xc3\xa9\xc3\xa9t\xc3\xa9") << "wide text in the locale's UTF-8";
  EXPECT_EQ(wide_count, 3) << "wprintf counts wide characters";
  EXPECT_EQ(narrow_count, 5) << "printf counts bytes";
}

TEST(Win32Printf, WideTextTheLocaleCannotEncodeBecomesAQuestionMark) {
  const char* saved = setlocale(LC_CTYPE, nullptr);
  const std::string restore = saved != nullptr ? saved : "C";
  setlocale(LC_CTYPE, "C");
  const std::string out = F("[%S]", L"a\u00e9b");
  char raw[8] = "x\xc3\xa9y";
  wchar_t w[16];
  const int n = swprintf(w, 16, L"%S", raw);
  setlocale(LC_CTYPE, restore.c_str());
  EXPECT_EQ(out, "[a?b]") << "nothing after the character is lost";
  EXPECT_EQ(n, 4);
  EXPECT_EQ(std::wstring(w, 4), L"x??y");
}

TEST(Win32Printf, AWideOrientedStreamStillGetsEverything) {
  FILE* f = tmpfile();
  ASSERT_NE(f, nullptr);
  ASSERT_GT(fwide(f, 1), 0) << "glibc made it wide-oriented";
  EXPECT_EQ(fprintf(f, "%s=%I64u;", "x", 18446744073709551615ull), 23);
  EXPECT_EQ(fwprintf(f, L"%s", L"wide"), 4);
  rewind(f);
  wchar_t back[64] = {};
  ASSERT_NE(fgetws(back, 64, f), nullptr);
  EXPECT_EQ(std::wstring(back), L"x=18446744073709551615;wide");
  fclose(f);
}

TEST(Win32Printf, WfopenAndWfreopenConvertNamesAndModes) {
  char path[] = "/tmp/nd2_win32_wfopen.XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  wchar_t wpath[64];
  ASSERT_GT(swprintf(wpath, 64, L"%S", path), 0);
  FILE* f = _wfopen(wpath, L"wt");
  ASSERT_NE(f, nullptr) << "'t' is MSVC's text mode: accepted";
  fwprintf(f, L"%s:%d", L"one", 1);
  fclose(f);
  f = fopen(path, "r");
  ASSERT_NE(f, nullptr);
  ASSERT_NE(_wfreopen(wpath, L"a+, ccs=UTF-8", f), nullptr);
  fprintf(f, ";%S", L"two");
  fclose(f);
  f = fopen(path, "r");
  char buf[64] = {};
  ASSERT_NE(fgets(buf, sizeof(buf), f), nullptr);
  fclose(f);
  unlink(path);
  EXPECT_STREQ(buf, "one:1;two");
  EXPECT_EQ(_wfopen(L"/nonexistent/dir/x", L"r"), nullptr);
}

TEST(Win32Printf, StdPrintfNamesReachTheSameFunctions) {
  char buf[64];
  EXPECT_EQ(std::snprintf(buf, sizeof(buf), "%I64d|%S", INT64_MIN, L"w"), 22);
  EXPECT_STREQ(buf, "-9223372036854775808|w");
  const std::string out = CaptureStdout([] { std::printf("%lu", 4294967295u); });
  EXPECT_EQ(out, "4294967295");
}

TEST(Win32Crt, StringHelpers) {
  EXPECT_EQ(_stricmp("ABC", "abc"), 0);
  EXPECT_LT(_stricmp("abc", "ABD"), 0);
  EXPECT_EQ(_wcsicmp(L"-S", L"-s"), 0);
  EXPECT_NE(_wcsicmp(L"-S", L"-c"), 0);
  EXPECT_EQ(_wcsnicmp(L"SERVERx", L"servery", 6), 0);
  EXPECT_EQ(_wtol(L"123"), 123);
  EXPECT_EQ(_wtol(L"-42xyz"), -42);
  EXPECT_EQ(_wtol(L"99999999999"), 0x7FFFFFFF) << "Windows' long saturates at 32 bits";
  EXPECT_EQ(_wtoi(L"-99999999999"), INT32_MIN);
  EXPECT_EQ(_wtoi64(L"99999999999"), 99999999999ll);
  wchar_t d[4];
  EXPECT_EQ(wcscpy_s(d, L"abc"), 0);
  EXPECT_EQ(std::wstring(d), L"abc");
  EXPECT_EQ(wcscpy_s(d, L"abcd"), ERANGE);
  EXPECT_EQ(d[0], L'\0');
  char s[6];
  EXPECT_EQ(strcpy_s(s, sizeof(s), "ab"), 0);
  EXPECT_EQ(strcat_s(s, "cd"), 0);
  EXPECT_STREQ(s, "abcd");
  EXPECT_EQ(strcat_s(s, "ef"), ERANGE);
  EXPECT_EQ(s[0], '\0');
  EXPECT_EQ(strcpy_s(nullptr, 4, "x"), EINVAL);
}

}  // namespace
