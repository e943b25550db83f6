// SPDX-License-Identifier: MIT
// tchar.h under UNICODE / _UNICODE: TCHAR and _TCHAR are wchar_t, _T("x") is a wide literal, the
// _t functions are the wide ones (compare, convert, print, reopen), and the generic Win32
// names (WSAStringToAddress, CreateEvent) are the W forms. win32_tchar_narrow_test.cc is the
// same program text without the macros.
#define UNICODE
#define _UNICODE
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <unistd.h>

#include <string>
#include <type_traits>

#include <tchar.h>

namespace tchar_wide {
namespace {

static_assert(std::is_same_v<TCHAR, wchar_t>, "TCHAR under UNICODE");
static_assert(std::is_same_v<_TCHAR, wchar_t>, "_TCHAR under _UNICODE");
static_assert(std::is_same_v<LPCTSTR, const wchar_t*>, "LPCTSTR");
static_assert(std::is_same_v<decltype(_T("ab")), const wchar_t(&)[3]>, "_T is L\"\"");
static_assert(std::is_same_v<decltype(TEXT("ab")), const wchar_t(&)[3]>, "TEXT is L\"\"");

TEST(Win32TcharWide, FunctionsAreTheWideOnes) {
  const TCHAR* arg = _T("-S");
  EXPECT_EQ(_tcsicmp(arg, _T("-s")), 0);
  EXPECT_NE(_tcsicmp(arg, _T("-c")), 0);
  EXPECT_EQ(_ttol(_T("4096")), 4096);
  EXPECT_EQ(_ttoi(_T("-3")), -3);
  EXPECT_EQ(_tcslen(_T("abc")), 3u);
  EXPECT_EQ(_tcscmp(_T("a"), _T("a")), 0);
  TCHAR buf[32];
  EXPECT_EQ(_stprintf_s(buf, _T("%s=%I64d"), _T("v"), -1ll), 4);
  EXPECT_EQ(std::wstring(buf), L"v=-1");
  EXPECT_EQ(_sntprintf(buf, 32, _T("%S"), "narrow"), 6);
  EXPECT_EQ(std::wstring(buf), L"narrow");
}

TEST(Win32TcharWide, TfreopenAndTprintf) {
  char path[] = "/tmp/nd2_tchar_wide.XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  TCHAR wpath[64];
  ASSERT_GT(_stprintf_s(wpath, _T("%S"), path), 0);
  FILE* f = fopen("/dev/null", "w");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(_tfreopen(wpath, _T("w"), f), f);
  EXPECT_EQ(_ftprintf(f, _T("%s %lu"), _T("line"), 7ul), 6);
  fclose(f);
  f = fopen(path, "r");
  char got[32] = {};
  ASSERT_NE(fgets(got, sizeof(got), f), nullptr);
  fclose(f);
  unlink(path);
  EXPECT_STREQ(got, "line 7");
}

TEST(Win32TcharWide, GenericWin32NamesAreTheWForms) {
  sockaddr_in sin{};
  INT len = sizeof(sin);
  TCHAR text[] = _T("10.9.8.7:54331");
  ASSERT_EQ(WSAStringToAddress(text, AF_INET, nullptr, reinterpret_cast<sockaddr*>(&sin), &len),
            0);
  EXPECT_EQ(sin.sin_addr.s_addr, htonl(0x0A090807u));
  EXPECT_EQ(ntohs(sin.sin_port), 54331);
  HANDLE ev = CreateEvent(nullptr, TRUE, FALSE, _T(""));
  ASSERT_NE(ev, nullptr);
  CloseHandle(ev);
}

}  // namespace
}  // namespace tchar_wide
