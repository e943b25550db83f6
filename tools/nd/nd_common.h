// SPDX-License-Identifier: MIT
// nd_common.h: what the nd-* programs share (written for this project; see README.md here).
//
// These programs are ND2 applications like any other: they include the public ND2 headers
// (<ndsupport.h>, which brings <ndspi.h>, <nddef.h>, <ndstatus.h>, <nd_win32.h>) and the C++
// standard library, nothing else of this project, and are compiled with the flags of
// `pkg-config --cflags --libs nd2`. Their console parts (argument parsing, output, timing, the
// data pattern of --verify) are written for Linux; every ND call is made as a Windows ND2
// program makes it (overlapped requests waited on with GetOverlappedResult, completions polled
// with GetResults, the blocking mode as Notify(ND_CQ_NOTIFY_ANY) and a wait).
#pragma once

#include <ndsupport.h>

#include <arpa/inet.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace ndtool {

// ---- Constants shared with Microsoft's samples (ndping.cpp & co.) -----------------------------
constexpr ULONG kMaxXfer = 4 * 1024 * 1024;        // largest transfer (x_MaxXfer)
constexpr ULONG kHdrLen = 40;                      // SGE split and warm-up size (x_HdrLen)
constexpr uint64_t kMaxVolume = 500ull * kMaxXfer; // bytes per size (x_MaxVolume)

// ---- Failure reporting ------------------------------------------------------------------------
// Every failure prints one line naming what failed (and the ND status, by name) and exits 1.
// (Microsoft's samples exit with their source line number, which Linux truncates to 8 bits, so
// a failure at line 256 would exit 0; the line is printed instead.)
inline const char* g_prog = "nd";

inline const char* StatusName(HRESULT hr) {
  switch (static_cast<uint32_t>(hr)) {
    case 0x00000000: return "ND_SUCCESS";
    case 0x00000102: return "ND_TIMEOUT";
    case 0x00000103: return "ND_PENDING";
    case 0x80000005: return "ND_BUFFER_OVERFLOW";
    case 0x80000011: return "ND_DEVICE_BUSY";
    case 0x8000001A: return "ND_NO_MORE_ENTRIES";
    case 0xC0000001: return "ND_UNSUCCESSFUL";
    case 0xC0000005: return "ND_ACCESS_VIOLATION";
    case 0xC0000008: return "ND_INVALID_HANDLE";
    case 0xC000000D: return "ND_INVALID_PARAMETER";
    case 0xC0000010: return "ND_INVALID_DEVICE_REQUEST";
    case 0xC0000017: return "ND_NO_MEMORY";
    case 0xC0000030: return "ND_INVALID_PARAMETER_MIX";
    case 0xC000003C: return "ND_DATA_OVERRUN";
    case 0xC000003E: return "STATUS_DATA_ERROR";
    case 0xC0000043: return "ND_SHARING_VIOLATION";
    case 0xC000009A: return "ND_INSUFFICIENT_RESOURCES";
    case 0xC00000A3: return "ND_DEVICE_NOT_READY";
    case 0xC00000B5: return "ND_IO_TIMEOUT";
    case 0xC00000BB: return "ND_NOT_SUPPORTED";
    case 0xC00000CC: return "STATUS_BAD_NETWORK_NAME";
    case 0xC00000E5: return "ND_INTERNAL_ERROR";
    case 0xC0000120: return "ND_CANCELED";
    case 0xC000013D: return "ND_REMOTE_ERROR";
    case 0xC0000141: return "ND_INVALID_ADDRESS";
    case 0xC0000184: return "ND_INVALID_DEVICE_STATE";
    case 0xC0000206: return "ND_INVALID_BUFFER_SIZE";
    case 0xC0000209: return "ND_TOO_MANY_ADDRESSES";
    case 0xC000020A: return "ND_ADDRESS_ALREADY_EXISTS";
    case 0xC000020C: return "STATUS_CONNECTION_DISCONNECTED";
    case 0xC0000236: return "ND_CONNECTION_REFUSED";
    case 0xC0000238: return "STATUS_ADDRESS_ALREADY_ASSOCIATED";
    case 0xC000023A: return "ND_CONNECTION_INVALID";
    case 0xC000023B: return "ND_CONNECTION_ACTIVE";
    case 0xC000023C: return "ND_NETWORK_UNREACHABLE";
    case 0xC000023D: return "ND_HOST_UNREACHABLE";
    case 0xC0000240: return "STATUS_REQUEST_ABORTED";
    case 0xC0000241: return "ND_CONNECTION_ABORTED";
    case 0xC00002B6: return "ND_DEVICE_REMOVED";
    default: break;
  }
  if (static_cast<uint32_t>(hr) >= 0xC00000EF && static_cast<uint32_t>(hr) <= 0xC00000F8)
    return "ND_INVALID_PARAMETER_n";
  return "unknown status";
}

[[noreturn]] inline void Fail(int line, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
[[noreturn]] inline void Fail(int line, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fflush(stdout);
  fprintf(stderr, "%s: %s  Line: %d\n", g_prog, msg, line);
  fflush(stderr);
  _exit(1);  // at once, also from --loopback's server thread
}
#define ND_FAIL(...) ::ndtool::Fail(__LINE__, __VA_ARGS__)

[[noreturn]] inline void FailHr(int line, HRESULT hr, const char* what) {
  Fail(line, "%s failed with %08x (%s)", what, static_cast<unsigned>(hr), StatusName(hr));
}
// Fails unless `expr` (an HRESULT) succeeded.
#define ND_CHECK(expr, what)                                                                 \
  do {                                                                                       \
    const HRESULT nd_check_hr_ = (expr);                                                     \
    if (FAILED(nd_check_hr_)) ::ndtool::FailHr(__LINE__, nd_check_hr_, what);                \
  } while (0)

// ---- Command line -------------------------------------------------------------------------------
// Microsoft's: `<prog> [options] <ip>[:<port>]`, the address last; -s / -c (exactly one),
// -p / -b (at most one; polling is the default), -n <nSge>, -q <n>, -l <logFile>, -h; the
// single-letter options in either case (-S, -C, ...). Ours adds long options (README.md here);
// unlike the originals, an unknown option or a bad number is an error, not ignored.
struct Options {
  bool server = false, client = false;
  bool polling = false, blocking = false;
  bool op_read = false, op_write = false;  // nd-rping: -r / -w
  ULONG nsge = 1;
  ULONG pipeline = 0;  // -q (0: not given)
  sockaddr_in addr{};
  // Extensions.
  bool verify = false;
  bool loopback = false;
  uint32_t seed = 1;
  uint64_t iters = 0;      // 0: Microsoft's schedule
  uint32_t warmup = 1000;  // warm-up iterations of kHdrLen bytes (then a 1 s pause)
  uint32_t min_size = 1, max_size = kMaxXfer;
  uint32_t timeout_s = 0;

  // Transfer sizes, as the originals: min_size doubling up to max_size.
  std::vector<uint32_t> Sizes() const {
    std::vector<uint32_t> v;
    for (uint64_t s = min_size; s <= max_size; s <<= 1) v.push_back(static_cast<uint32_t>(s));
    return v;
  }
  // Iterations at one size: min(maxIterations, maxVolume / size), capped by --iters.
  uint32_t Iterations(uint32_t size, uint64_t max_iterations) const {
    uint64_t n = std::min<uint64_t>(max_iterations, kMaxVolume / size);
    if (iters != 0) n = std::min<uint64_t>(n, iters);
    return static_cast<uint32_t>(std::max<uint64_t>(n, 1));
  }
};

struct ProgramInfo {
  const char* name;       // "nd-ping"
  const char* what;       // one line
  USHORT default_port;    // 0: no role/port (nd-adapterinfo)
  bool has_read_write;    // -r / -w
  bool has_pipeline;      // -q
};

inline void ShowUsage(const ProgramInfo& p) {
  printf("%s [options] <ip>[:<port>]\n%s\nOptions:\n", p.name, p.what);
  printf("\t-s            - Start as server (listen on IP/Port)\n"
         "\t-c            - Start as client (connect to server IP/Port)\n"
         "\t-b            - Blocking I/O (wait for CQ notification)\n"
         "\t-p            - Polling I/O (poll on the CQ) (default)\n");
  if (p.has_read_write)
    printf("\t-w            - Use RMA Write (client only, default)\n"
           "\t-r            - Use RMA Read (client; give the server -r too)\n");
  printf("\t-n <nSge>     - Number of scatter/gather entries per transfer (default: 1)\n");
  if (p.has_pipeline) printf("\t-q <pipeline> - Pipeline limit of <pipeline> requests\n");
  printf("\t-l <logFile>  - Log output to a file named <logFile>\n"
         "\t-h            - Show this message\n"
         "<ip>            - IPv4 Address\n"
         "<port>          - Port number, (default: %hu)\n",
         p.default_port);
  printf("Extensions (not in Microsoft's version; give the same ones to both sides):\n"
         "\t--verify          - fill and check every payload (data pattern); a mismatch fails\n"
         "\t--seed <n>        - data pattern seed (default 1)\n"
         "\t--iters <n>       - at most <n> iterations per size\n"
         "\t--warmup <n>      - warm-up iterations (default 1000; 0: none and no pause)\n"
         "\t--min-size <n>    - first transfer size (default 1)\n"
         "\t--max-size <n>    - last transfer size (default 4194304)\n"
         "\t--loopback        - server and client in this process, on the adapter of <ip>\n"
         "\t--timeout <s>     - fail if the program runs longer than <s> seconds\n"
         "The adapters are those of the ND2 configuration file (ND2_CONFIG).\n");
}

[[noreturn]] inline void UsageError(const ProgramInfo& p, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
[[noreturn]] inline void UsageError(const ProgramInfo& p, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n\n");
  ShowUsage(p);
  fflush(stdout);
  exit(2);
}

// A decimal number in [lo, hi], or a usage error naming the option.
inline uint64_t ParseNumber(const ProgramInfo& p, const char* opt, const char* s, uint64_t lo,
                            uint64_t hi) {
  if (!s || !*s) UsageError(p, "Missing value for %s.", opt);
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || s[0] == '-' || v < lo || v > hi)
    UsageError(p, "Bad value '%s' for %s (expected %llu..%llu).", s, opt,
               static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi));
  return v;
}

// "a.b.c.d" or "a.b.c.d:port" (what WSAStringToAddress accepts for AF_INET). False if bad.
inline bool ParseAddress(const char* s, sockaddr_in* out) {
  std::string host(s);
  unsigned long port = 0;
  if (const size_t colon = host.find(':'); colon != std::string::npos) {
    const std::string ps = host.substr(colon + 1);
    host.resize(colon);
    if (ps.empty() || ps.size() > 5 || ps.find_first_not_of("0123456789") != std::string::npos)
      return false;
    port = strtoul(ps.c_str(), nullptr, 10);
    if (port > 65535) return false;
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) return false;
  a.sin_port = htons(static_cast<uint16_t>(port));
  *out = a;
  return true;
}

inline std::string AddrString(const sockaddr_in& a) {
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

inline bool ArgIs(const char* a, const char* s, const char* alt = nullptr) {
  return strcmp(a, s) == 0 || (alt && strcmp(a, alt) == 0);
}

// --timeout: the whole run's limit; the message of its alarm names what the program was waiting
// for then (set by each of Endpoint's waits; a string literal, read by the signal handler).
inline uint32_t g_timeout_s = 0;
inline std::atomic<const char*> g_waiting_for{"the start-up"};
inline void WaitingFor(const char* what) { g_waiting_for.store(what, std::memory_order_relaxed); }

inline void OnAlarm(int);

inline Options ParseArgs(const ProgramInfo& p, int argc, char** argv) {
  g_prog = p.name;
  Options o;
  if (argc < 2) {
    ShowUsage(p);
    exit(2);
  }
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const bool last = i == argc - 1;
    auto value = [&](const char* opt) -> const char* {
      // The address is always the last argument: an option's value never is.
      if (i + 1 >= argc - 1) UsageError(p, "Missing value for %s.", opt);
      return argv[++i];
    };
    if (ArgIs(a, "-h", "--help")) {
      ShowUsage(p);
      exit(0);
    }
    if (last && a[0] != '-') break;  // the address
    if (ArgIs(a, "-s", "-S")) {
      o.server = true;
    } else if (ArgIs(a, "-c", "-C")) {
      o.client = true;
    } else if (ArgIs(a, "-p", "-P")) {
      o.polling = true;
    } else if (ArgIs(a, "-b", "-B")) {
      o.blocking = true;
    } else if (p.has_read_write && ArgIs(a, "-r", "--read")) {
      o.op_read = true;
    } else if (p.has_read_write && ArgIs(a, "-w", "--write")) {
      o.op_write = true;
    } else if (ArgIs(a, "-n", "-N")) {
      o.nsge = static_cast<ULONG>(ParseNumber(p, a, value(a), 0, 1u << 20));
    } else if (ArgIs(a, "-q", "-Q")) {
      o.pipeline = static_cast<ULONG>(ParseNumber(p, a, value(a), 1, 1u << 24));
    } else if (ArgIs(a, "-l", "--logFile")) {
      const char* f = value(a);
      if (!freopen(f, "w", stdout) || !freopen(f, "a", stderr)) {
        fprintf(stderr, "%s: cannot open log file %s: %s\n", p.name, f, strerror(errno));
        exit(1);
      }
    } else if (ArgIs(a, "--verify")) {
      o.verify = true;
    } else if (ArgIs(a, "--loopback")) {
      o.loopback = true;
    } else if (ArgIs(a, "--seed")) {
      o.seed = static_cast<uint32_t>(ParseNumber(p, a, value(a), 0, 0xffffffffu));
    } else if (ArgIs(a, "--iters")) {
      o.iters = ParseNumber(p, a, value(a), 1, 1ull << 40);
    } else if (ArgIs(a, "--warmup")) {
      o.warmup = static_cast<uint32_t>(ParseNumber(p, a, value(a), 0, 100000000));
    } else if (ArgIs(a, "--min-size")) {
      o.min_size = static_cast<uint32_t>(ParseNumber(p, a, value(a), 1, kMaxXfer));
    } else if (ArgIs(a, "--max-size")) {
      o.max_size = static_cast<uint32_t>(ParseNumber(p, a, value(a), 1, kMaxXfer));
    } else if (ArgIs(a, "--timeout")) {
      o.timeout_s = static_cast<uint32_t>(ParseNumber(p, a, value(a), 1, 86400));
    } else {
      UsageError(p, "Unknown option '%s'.", a);
    }
  }
  if (p.default_port == 0) return o;  // nd-adapterinfo: -l/-h and the address only

  // The checks of the originals, in their order and with their messages.
  if (o.loopback) o.server = o.client = false;
  if (!o.loopback && (o.server == o.client))
    UsageError(p, "Exactly one of client (c) or server (s) must be specified.");
  if (o.op_read && o.op_write) UsageError(p, "Exactly one of read (r) or write (w) op must be specified");
  if (!ParseAddress(argv[argc - 1], &o.addr) || o.addr.sin_addr.s_addr == 0)
    UsageError(p, "Bad address.");
  if (o.addr.sin_port == 0) o.addr.sin_port = htons(p.default_port);
  if (o.polling && o.blocking)
    UsageError(p, "Exactly one of blocking (b) or polling (p) must be specified.");
  if (o.nsge == 0) UsageError(p, "Invalid or missing SGE length.");
  if (o.min_size > o.max_size) UsageError(p, "--min-size is above --max-size.");
  if (o.timeout_s) {
    g_timeout_s = o.timeout_s;
    signal(SIGALRM, OnAlarm);
    alarm(o.timeout_s);
  }
  return o;
}

// "<prog>: timed out after N s (--timeout) waiting for <what>", exit 1 (async-signal-safe: no
// stdio, no allocation).
inline void OnAlarm(int) {
  char line[256];
  size_t n = 0;
  auto put = [&](const char* s) {
    while (*s && n < sizeof line - 1) line[n++] = *s++;
  };
  char digits[12];
  size_t d = sizeof digits;
  digits[--d] = 0;
  uint32_t v = g_timeout_s;
  do {
    digits[--d] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v && d > 0);
  put(g_prog);
  put(": timed out after ");
  put(digits + d);
  put(" s (--timeout) waiting for ");
  put(g_waiting_for.load(std::memory_order_relaxed));
  line[n++] = '\n';
  if (write(2, line, n) < 0) {
  }
  _exit(1);
}

// ---- Timing (QueryPerformanceCounter / GetSystemTimes on Windows) ------------------------------
class Timer {
 public:
  void Start() { t0_ = std::chrono::steady_clock::now(); }
  void End() { t1_ = std::chrono::steady_clock::now(); }
  double Micros() const { return std::chrono::duration<double, std::micro>(t1_ - t0_).count(); }
  static long long Frequency() { return 1000000000LL; }  // steady_clock ticks: ns

 private:
  std::chrono::steady_clock::time_point t0_{}, t1_{};
};

inline unsigned CpuCount() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<unsigned>(n) : 1;
}

// Machine-wide CPU use over an interval, in percent of one CPU (as the samples' CpuMonitor:
// 100% per busy CPU), from /proc/stat.
class CpuMonitor {
 public:
  void Start() { Read(&busy0_, &total0_); }
  void End() { Read(&busy1_, &total1_); }
  double Report() const {
    const double total = static_cast<double>(total1_ - total0_);
    return total > 0 ? 100.0 * static_cast<double>(busy1_ - busy0_) / total * CpuCount() : 0.0;
  }

 private:
  static void Read(unsigned long long* busy, unsigned long long* total) {
    *busy = *total = 0;
    FILE* f = fopen("/proc/stat", "r");
    if (!f) return;
    unsigned long long v[8] = {};
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
               &v[4], &v[5], &v[6], &v[7]) == 8) {
      for (unsigned long long x : v) *total += x;
      *busy = *total - v[3] - v[4];  // minus idle and iowait
    }
    fclose(f);
  }
  unsigned long long busy0_ = 0, total0_ = 0, busy1_ = 0, total1_ = 0;
};

inline void PrintTableHeader() {
  printf("Using %u processors. Sender Frequency is %lld\n\n %9s %9s %9s %7s %11s\n", CpuCount(),
         Timer::Frequency(), "Size", "Iter", "Latency", "CPU", "Bytes/Sec");
  fflush(stdout);
}

inline void PrintTableRow(ULONG size, ULONG iters, double latency_us, double cpu, double bytes_per_s) {
  printf(" %9u %9u %9.2f %7.2f %11.0f\n", size, iters, latency_us, cpu, bytes_per_s);
  fflush(stdout);
}

// ---- The data pattern of --verify ------------------------------------------------------------
// Byte `off` of the payload number `seq` of size `size`: a hash of (seed, size, seq, off / 64)
// plus off, with the top bit set. Never an ASCII byte, so never one of nd-rpingpong's markers
// ('A', 'B', 'X', 'Y'); depends on the size, so a truncated or stale payload does not match.
inline uint8_t PatternByte(uint32_t seed, uint32_t size, uint32_t seq, size_t off) {
  uint64_t h = (static_cast<uint64_t>(seed) << 32 | size) * 0x9E3779B97F4A7C15ull;
  h ^= (static_cast<uint64_t>(seq) << 32 | static_cast<uint32_t>(off >> 6)) * 0xC2B2AE3D27D4EB4Full;
  h ^= h >> 29;
  return static_cast<uint8_t>(0x80 | (((h >> 24) + off) & 0x7f));
}

inline void FillPattern(void* buf, size_t len, uint32_t seed, uint32_t size, uint32_t seq) {
  auto* b = static_cast<uint8_t*>(buf);
  for (size_t off = 0; off < len; off++) b[off] = PatternByte(seed, size, seq, off);
}

// Checks len bytes at buf against the pattern; fails naming the first bad byte.
inline void CheckPattern(const char* what, const void* buf, size_t len, uint32_t seed, uint32_t size,
                         uint32_t seq) {
  const auto* b = static_cast<const volatile uint8_t*>(buf);
  for (size_t off = 0; off < len; off++) {
    const uint8_t want = PatternByte(seed, size, seq, off);
    if (b[off] != want)
      ND_FAIL("data mismatch in %s (size %u, iteration %u): byte %zu is 0x%02x, expected 0x%02x",
              what, size, seq, off, b[off], want);
  }
}

// A buffer for registration: page aligned, zeroed.
inline char* AllocBuffer(size_t len) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, len) != 0 || !p) ND_FAIL("Failed to allocate data buffer.");
  memset(p, 0, len);
  return static_cast<char*>(p);
}

// Splits `len` bytes at buf into at most nSge entries of kHdrLen bytes, the rest in the last
// one (the samples' SGE layout; a peer sees the same bytes whatever the split). Returns the
// number of entries used.
inline ULONG PrepareSge(ND2_SGE* sge, ULONG nsge, char* buf, ULONG len, UINT32 token) {
  ULONG n = 0, off = 0;
  while (len > 0 && n < nsge) {
    const ULONG l = std::min(len, kHdrLen);
    sge[n].Buffer = buf + off;
    sge[n].BufferLength = l;
    sge[n].MemoryRegionToken = token;
    len -= l;
    off += l;
    n++;
  }
  if (len > 0 && n > 0) sge[n - 1].BufferLength += len;
  return n;
}

// ---- The ND objects of one side ----------------------------------------------------------------
// An overlapped request's final status: waited for (GetOverlappedResult(TRUE)) if it pended;
// the wait drives an inline-progress adapter.
inline HRESULT FinishOverlapped(IND2Overlapped* o, OVERLAPPED* ov, HRESULT hr) {
  if (hr == ND_PENDING) hr = o->GetOverlappedResult(ov, TRUE);
  return hr;
}

// One adapter, overlapped file, event, CQ, QP, MR, connector (and listener, window) per side;
// every overlapped request on one OVERLAPPED at a time, waited for with GetOverlappedResult.
class Endpoint {
 public:
  explicit Endpoint(bool blocking) : blocking_(blocking) {}
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;
  ~Endpoint() { Release(); }

  // NdOpenAdapter on the local address, the overlapped file, the event; Query.
  void Open(const sockaddr_in& local) {
    ND_CHECK(NdOpenAdapter(IID_IND2Adapter, reinterpret_cast<const sockaddr*>(&local), sizeof local,
                           reinterpret_cast<void**>(&adapter_)),
             "NdOpenAdapter");
    ov_.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr);
    if (!ov_.hEvent) ND_FAIL("Failed to allocate event for overlapped operations.");
    ND_CHECK(adapter_->CreateOverlappedFile(&file_), "IND2Adapter::CreateOverlappedFile");
    info_ = {};
    info_.InfoVersion = ND_VERSION_2;
    ULONG len = sizeof info_;
    ND_CHECK(adapter_->Query(&info_, &len), "IND2Adapter::Query");
  }
  const ND2_ADAPTER_INFO& info() const { return info_; }

  void RequireInOrderDma() {
    if (!(info_.AdapterFlags & ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED))
      ND_FAIL("Adapter does not support in-order RDMA.");
  }

  void CreateCq(ULONG depth) {
    ND_CHECK(adapter_->CreateCompletionQueue(IID_IND2CompletionQueue, file_, depth, 0, 0,
                                             reinterpret_cast<void**>(&cq_)),
             "IND2Adapter::CreateCompletionQueue");
  }
  // The CQ of a queue pair whose two queues complete into it: room for both
  // (a flush completes every posted receive at once while sends may still be
  // queued; a CQ of the receive depth alone overran there, and the next
  // Notify failed ND_BUFFER_OVERFLOW).
  void CreateCqFor(ULONG rq_depth, ULONG iq_depth) {
    CreateCq(static_cast<ULONG>(std::min<uint64_t>(info_.MaxCompletionQueueDepth, uint64_t{rq_depth} + iq_depth)));
  }
  void CreateQp(ULONG depth, ULONG nsge, ULONG inline_size) {
    ND_CHECK(adapter_->CreateQueuePair(IID_IND2QueuePair, cq_, cq_, nullptr, depth, depth, nsge, nsge,
                                       inline_size, reinterpret_cast<void**>(&qp_)),
             "IND2Adapter::CreateQueuePair");
  }
  void CreateConnector() {
    ND_CHECK(adapter_->CreateConnector(IID_IND2Connector, file_, reinterpret_cast<void**>(&conn_)),
             "IND2Adapter::CreateConnector");
  }
  void Register(void* buf, size_t len, ULONG flags) {
    if (!mr_)
      ND_CHECK(adapter_->CreateMemoryRegion(IID_IND2MemoryRegion, file_, reinterpret_cast<void**>(&mr_)),
               "IND2Adapter::CreateMemoryRegion");
    WaitingFor("the memory registration");
    ND_CHECK(Wait(mr_, mr_->Register(buf, len, flags, &ov_)), "IND2MemoryRegion::Register");
    registered_ = true;
  }
  UINT32 LocalToken() { return mr_->GetLocalToken(); }

  // Server: listener bound to `addr`, Listen(0), then the connection request.
  void Listen(const sockaddr_in& addr) {
    ND_CHECK(adapter_->CreateListener(IID_IND2Listener, file_, reinterpret_cast<void**>(&listener_)),
             "IND2Adapter::CreateListener");
    ND_CHECK(listener_->Bind(reinterpret_cast<const sockaddr*>(&addr), sizeof addr), "IND2Listener::Bind");
    ND_CHECK(listener_->Listen(0), "IND2Listener::Listen");
  }
  void GetConnectionRequest() {
    WaitingFor("a client to connect (GetConnectionRequest)");
    ND_CHECK(Wait(listener_, listener_->GetConnectionRequest(conn_, &ov_)),
             "IND2Listener::GetConnectionRequest");
  }
  void Accept(ULONG in_rl, ULONG out_rl, const void* pd = nullptr, ULONG pd_len = 0) {
    WaitingFor("the client's answer to our accept (Accept)");
    ND_CHECK(Wait(conn_, conn_->Accept(qp_, in_rl, out_rl, pd, pd_len, &ov_)), "IND2Connector::Accept");
  }
  // Client: Bind to the local address, Connect (waits for the peer's answer).
  void Connect(const sockaddr_in& local, const sockaddr_in& remote, ULONG in_rl, ULONG out_rl) {
    ND_CHECK(conn_->Bind(reinterpret_cast<const sockaddr*>(&local), sizeof local), "IND2Connector::Bind");
    WaitingFor("the server's answer to our connection request (Connect)");
    ND_CHECK(Wait(conn_, conn_->Connect(qp_, reinterpret_cast<const sockaddr*>(&remote), sizeof remote,
                                        in_rl, out_rl, nullptr, 0, &ov_)),
             "IND2Connector::Connect");
  }
  void CompleteConnect() {
    WaitingFor("CompleteConnect");
    ND_CHECK(Wait(conn_, conn_->CompleteConnect(&ov_)), "IND2Connector::CompleteConnect");
  }
  IND2Connector* connector() { return conn_; }

  // Memory window over buf, bound through the QP (the Bind completes in the CQ).
  void BindWindow(const void* buf, size_t len, ULONG flags) {
    ND_CHECK(adapter_->CreateMemoryWindow(IID_IND2MemoryWindow, reinterpret_cast<void**>(&mw_)),
             "IND2Adapter::CreateMemoryWindow");
    void* const ctx = &mw_;
    ND_CHECK(qp_->Bind(ctx, mr_, mw_, buf, len, flags), "IND2QueuePair::Bind");
    WaitingFor("the memory window Bind's completion");
    ND2_RESULT r;
    WaitForCompletion(&r);
    if (r.Status != ND_SUCCESS) FailHr(__LINE__, r.Status, "the memory window Bind");
    if (r.RequestContext != ctx) ND_FAIL("Bind completed with a foreign context");
  }
  UINT32 WindowToken() { return mw_->GetRemoteToken(); }

  void PostReceive(const ND2_SGE* sge, ULONG n, void* ctx) {
    ND_CHECK(qp_->Receive(ctx, sge, n), "IND2QueuePair::Receive");
  }
  void Send(const ND2_SGE* sge, ULONG n, ULONG flags, void* ctx) {
    ND_CHECK(qp_->Send(ctx, sge, n, flags), "IND2QueuePair::Send");
  }
  void Write(const ND2_SGE* sge, ULONG n, UINT64 addr, UINT32 token, ULONG flags, void* ctx) {
    ND_CHECK(qp_->Write(ctx, sge, n, addr, token, flags), "IND2QueuePair::Write");
  }
  void Read(const ND2_SGE* sge, ULONG n, UINT64 addr, UINT32 token, ULONG flags, void* ctx) {
    ND_CHECK(qp_->Read(ctx, sge, n, addr, token, flags), "IND2QueuePair::Read");
  }

  // One completion if there is one (a poll drives an inline-progress adapter).
  bool Poll(ND2_RESULT* r) {
    WaitingFor("a completion (the peer's data or its acknowledgement)");
    return cq_->GetResults(r, 1) == 1;
  }
  // The blocking mode's wait: Notify(ANY) and wait on the overlapped.
  void WaitForNotify() {
    ND_CHECK(Wait(cq_, cq_->Notify(ND_CQ_NOTIFY_ANY, &ov_)), "IND2CompletionQueue::Notify");
  }
  // The next completion: polling, or (blocking) Notify + wait whenever the CQ is empty.
  void WaitForCompletion(ND2_RESULT* r) {
    for (;;) {
      if (Poll(r)) return;
      if (blocking_) WaitForNotify();
    }
  }
  // The next completion, which must be a success with this context.
  void WaitForSuccess(void* ctx, const char* what) {
    ND2_RESULT r;
    for (;;) {  // as WaitForCompletion, naming `what` for --timeout
      WaitingFor(what);
      if (cq_->GetResults(&r, 1) == 1) break;
      if (blocking_) WaitForNotify();
    }
    if (r.Status != ND_SUCCESS) FailHr(__LINE__, r.Status, what);
    if (r.RequestContext != ctx) ND_FAIL("%s: unexpected completion (context %p)", what, r.RequestContext);
  }
  bool blocking() const { return blocking_; }

  // Disconnect (waited for), window released, memory deregistered (waited for).
  void Shutdown() {
    if (conn_) {
      WaitingFor("the disconnect (Disconnect)");
      const HRESULT hr = Wait(conn_, conn_->Disconnect(&ov_));
      if (FAILED(hr)) FailHr(__LINE__, hr, "IND2Connector::Disconnect");
    }
    if (mw_) {
      mw_->Release();
      mw_ = nullptr;
    }
    if (mr_ && registered_) {
      registered_ = false;
      WaitingFor("the memory deregistration");
      ND_CHECK(Wait(mr_, mr_->Deregister(&ov_)), "IND2MemoryRegion::Deregister");
    }
  }

  // Releases every object (the adapter last).
  void Release() {
    if (mw_) mw_->Release();
    if (conn_) conn_->Release();
    if (listener_) listener_->Release();
    if (qp_) qp_->Release();
    if (mr_) mr_->Release();
    if (cq_) cq_->Release();
    if (file_) CloseHandle(file_);
    if (ov_.hEvent) CloseHandle(ov_.hEvent);
    if (adapter_) adapter_->Release();
    mw_ = nullptr;
    conn_ = nullptr;
    listener_ = nullptr;
    qp_ = nullptr;
    mr_ = nullptr;
    cq_ = nullptr;
    file_ = nullptr;
    ov_.hEvent = nullptr;
    adapter_ = nullptr;
  }

 private:
  // An overlapped request's final status: waited for if it pended.
  HRESULT Wait(IND2Overlapped* o, HRESULT hr) { return FinishOverlapped(o, &ov_, hr); }

  bool blocking_;
  IND2Adapter* adapter_ = nullptr;
  HANDLE file_ = nullptr;
  OVERLAPPED ov_{};
  ND2_ADAPTER_INFO info_{};
  IND2CompletionQueue* cq_ = nullptr;
  IND2QueuePair* qp_ = nullptr;
  IND2MemoryRegion* mr_ = nullptr;
  IND2MemoryWindow* mw_ = nullptr;
  IND2Connector* conn_ = nullptr;
  IND2Listener* listener_ = nullptr;
  bool registered_ = false;
};

// The client's local address: the one the provider resolves for the server's.
inline sockaddr_in ResolveLocal(const sockaddr_in& server) {
  sockaddr_in local{};
  SIZE_T len = sizeof local;
  ND_CHECK(NdResolveAddress(reinterpret_cast<const sockaddr*>(&server), sizeof server,
                            reinterpret_cast<sockaddr*>(&local), &len),
           "NdResolveAddress");
  local.sin_port = 0;
  return local;
}

// ---- Process frame -----------------------------------------------------------------------------
// Set once the server listens: --loopback's client waits for it; a test waiting for the server
// reads the line printed with it.
inline std::atomic<bool> g_listening{false};

inline void AnnounceListening(const sockaddr_in& a) {
  printf("%s: listening on %s\n", g_prog, AddrString(a).c_str());
  fflush(stdout);
  g_listening.store(true);
}

inline void SleepMs(unsigned ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// Runs the program: NdStartup, the server and/or the client (--loopback: the server on a thread
// and the client connecting to it through the same adapter), NdCleanup.
template <class ServerFn, class ClientFn>
int RunProgram(const Options& o, ServerFn server, ClientFn client) {
  printf("Beginning test: %s\n", g_prog);
  fflush(stdout);
  ND_CHECK(NdStartup(), "NdStartup");
  if (o.loopback) {
    std::thread t([&] { server(); });
    while (!g_listening.load()) SleepMs(1);
    client();
    t.join();
  } else if (o.server) {
    server();
  } else {
    client();
  }
  ND_CHECK(NdCleanup(), "NdCleanup");
  printf("End of test: %s\n", g_prog);
  fflush(stdout);
  return 0;
}

}  // namespace ndtool
