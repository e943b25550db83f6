// SPDX-License-Identifier: MIT
// tchar.h without UNICODE / _UNICODE: TCHAR and _TCHAR are char, _T("x") is a narrow literal,
// the _t functions are the narrow ones (with MSVC's printf formats), and the generic Win32
// names are the A forms. win32_tchar_wide_test.cc is the wide counterpart.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <unistd.h>

#include <string>
#include <type_traits>

#include <tchar.h>

namespace tchar_narrow {
namespace {

static_assert(std::is_same_v<TCHAR, char>, "TCHAR without UNICODE");
static_assert(std::is_same_v<_TCHAR, char>, "_TCHAR without _UNICODE");
static_assert(std::is_same_v<LPCTSTR, const char*>, "LPCTSTR");
static_assert(std::is_same_v<decltype(_T("ab")), const char(&)[3]>, "_T is \"\"");
static_assert(std::is_same_v<decltype(TEXT("ab")), const char(&)[3]>, "TEXT is \"\"");

TEST(Win32TcharNarrow, FunctionsAreTheNarrowOnes) {
  const TCHAR* arg = _T("-S");
  EXPECT_EQ(_tcsicmp(arg, _T("-s")), 0);
  EXPECT_NE(_tcsicmp(arg, _T("-c")), 0);
  EXPECT_EQ(_ttol(_T("4096")), 4096);
  EXPECT_EQ(_ttoi(_T("-3")), -3);
  EXPECT_EQ(_tcslen(_T("abc")), 3u);
  TCHAR buf[32];
  EXPECT_EQ(_stprintf_s(buf, _T("%s=%I64d"), _T("v"), -1ll), 4);
  EXPECT_EQ(std::string(buf), "v=-1");
  EXPECT_EQ(_sntprintf(buf, 32, _T("%S"), L"wide"), 4);
  EXPECT_EQ(std::string(buf), "wide");
}

TEST(Win32TcharNarrow, TfreopenAndTprintf) {
  char path[] = "/tmp/nd2_tchar_narrow.XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  FILE* f = fopen("/dev/null", "w");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(_tfreopen(path, _T("w"), f), f);
  EXPECT_EQ(_ftprintf(f, _T("%s %lu"), _T("line"), 7ul), 6);
  fclose(f);
  f = fopen(path, "r");
  char got[32] = {};
  ASSERT_NE(fgets(got, sizeof(got), f), nullptr);
  fclose(f);
  unlink(path);
  EXPECT_STREQ(got, "line 7");
}

TEST(Win32TcharNarrow, GenericWin32NamesAreTheAForms) {
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
}  // namespace tchar_narrow
