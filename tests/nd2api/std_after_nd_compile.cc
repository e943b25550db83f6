// SPDX-License-Identifier: MIT
// Compile-only check (tests/nd2api/meson.build runs the compiler on it, C++17 and C++20):
// every standard library header still compiles when included AFTER the ND2 headers. The
// legacy SAL macros `__in` and `__out` are identifiers inside libstdc++ (nd2-reference.md,
// "Pitfalls": Microsoft's ndtestutil.h includes <functional> after ndspi.h); nd_win32.h must
// keep that working. Also includes the C library headers and the POSIX ones ND programs use.
#include <ndsupport.h>
#include <ndstatus.h>

// C++17 library headers.
#include <algorithm>
#include <any>
#include <array>
#include <atomic>
#include <bitset>
#include <cassert>
#include <cctype>
#include <cerrno>
#include <cfloat>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <clocale>
#include <cmath>
#include <codecvt>
#include <complex>
#include <condition_variable>
#include <csetjmp>
#include <csignal>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cwchar>
#include <cwctype>
#include <deque>
#include <exception>
#include <execution>
#include <filesystem>
#include <forward_list>
#include <fstream>
#include <functional>
#include <future>
#include <initializer_list>
#include <iomanip>
#include <ios>
#include <iosfwd>
#include <iostream>
#include <istream>
#include <iterator>
#include <limits>
#include <list>
#include <locale>
#include <map>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <new>
#include <numeric>
#include <optional>
#include <ostream>
#include <queue>
#include <random>
#include <ratio>
#include <regex>
#include <scoped_allocator>
#include <set>
#include <shared_mutex>
#include <sstream>
#include <stack>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <valarray>
#include <variant>
#include <vector>

// C++20 library headers (those this compiler has).
#if __cplusplus > 201703L
#include <bit>
#include <compare>
#include <concepts>
#include <numbers>
#include <ranges>
#include <span>
#if __has_include(<barrier>)
#include <barrier>
#endif
#if __has_include(<latch>)
#include <latch>
#endif
#if __has_include(<semaphore>)
#include <semaphore>
#endif
#if __has_include(<stop_token>)
#include <stop_token>
#endif
#if __has_include(<source_location>)
#include <source_location>
#endif
#if __has_include(<syncstream>)
#include <syncstream>
#endif
#if __has_include(<version>)
#include <version>
#endif
#if __has_include(<format>)
#include <format>
#endif
#endif

// C and POSIX headers.
#include <arpa/inet.h>
#include <fcntl.h>
#include <link.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

// Use a few of the templates whose text names __in / __out, so their bodies are instantiated.
int main() {
  std::pair<int, int> p(1, 2);
  std::tuple<int, long> t(3, 4);
  std::string s = "nd";
  std::istringstream in("5");
  int v = 0;
  in >> v;
  std::ostringstream out;
  out << s << v;
  std::vector<int> a{3, 1, 2}, b(3);
  std::copy(a.begin(), a.end(), b.begin());
  std::sort(b.begin(), b.end());
  std::function<int(int)> f = [](int x) { return x + 1; };
  std::thread th([] {});
  th.join();
  std::regex re("n.");
  bool m = std::regex_match(s, re);
  HRESULT hr = ND_SUCCESS;
  return (p.first + std::get<0>(t) + f(b[0]) + static_cast<int>(m) + static_cast<int>(hr) +
          static_cast<int>(out.str().size())) == 0;
}
