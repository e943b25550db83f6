// SPDX-License-Identifier: MIT
// win32_console.cc: windows.h's system services for console programs (C linkage): Sleep and
// SwitchToThread, the clocks (QueryPerformanceCounter / Frequency, GetTickCount(64),
// GetSystemTimeAsFileTime), GetSystemTimes, GetSystemInfo, SetLastError, the process heap
// (GetProcessHeap, HeapAlloc, HeapFree) and VirtualAlloc / VirtualFree. Threads are in
// win32_thread.cc, Winsock in win32_winsock.cc, the CRT's stdio in win32_stdio.cc.
//
// Choices:
//   - QueryPerformanceCounter is CLOCK_MONOTONIC in nanoseconds; QueryPerformanceFrequency is
//     therefore 1,000,000,000 (Windows' is usually 10 MHz: programs divide by it).
//   - GetTickCount64 counts milliseconds of CLOCK_BOOTTIME (time since boot, suspend included,
//     as Windows' tick count); GetTickCount is its low 32 bits.
//   - GetSystemTimes reads the "cpu" line of /proc/stat (all CPUs, in USER_HZ ticks) and gives
//     100 ns units: idle = idle + iowait; user = user + nice (guest time is already in them);
//     kernel = system + irq + softirq + steal + idle, since Windows' kernel time includes the
//     idle time. Any argument may be NULL.
//   - GetSystemInfo: dwNumberOfProcessors and dwActiveProcessorMask are the online CPUs (all of
//     the machine, what /proc/stat sums; not the process's affinity), dwPageSize the page size,
//     dwAllocationGranularity 64 KiB (what VirtualAlloc aligns reservations to, as on
//     Windows), the architecture AMD64 (x86-64) or ARM64; processor level and revision 0.
//   - The process heap is malloc: HeapAlloc returns malloc / calloc (HEAP_ZERO_MEMORY) blocks,
//     16-byte aligned; a heap handle other than GetProcessHeap()'s gives NULL (HeapAlloc) or
//     FALSE with ERROR_INVALID_HANDLE (HeapFree). HEAP_GENERATE_EXCEPTIONS raises nothing.
//   - VirtualAlloc reserves with mmap (PROT_NONE, MAP_NORESERVE) at a 64 KiB boundary and
//     commits with mprotect (committed pages are zero until written, as Windows'); PAGE_GUARD,
//     PAGE_NOCACHE and PAGE_WRITECOMBINE are accepted and have no effect. MEM_RELEASE needs the
//     reservation's base and size 0; MEM_DECOMMIT drops the pages (they read zero when
//     committed again). Reservations are remembered here, so VirtualFree checks its arguments
//     as Windows does (ERROR_INVALID_ADDRESS, ERROR_INVALID_PARAMETER).
#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>

#include "nd2api/src/handle.h"

// This file implements Win32 functions with glibc's: the CRT names keep their glibc meaning.
#define ND_WIN32_CRT_NO_STD_NAMES
#include "windows.h"

namespace roce::nd2 {
namespace {

constexpr uint64_t kNsPerSec = 1000000000ull;
constexpr uint64_t kHundredNsPerSec = 10000000ull;
constexpr uint64_t kEpoch1601To1970Secs = 11644473600ull;
constexpr uintptr_t kGranularity = 64 * 1024;

char g_process_heap;  // its address is the process heap's HANDLE

uint64_t ClockNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * kNsPerSec + static_cast<uint64_t>(ts.tv_nsec);
}

void SetFileTime(FILETIME* ft, uint64_t v) {
  if (ft == nullptr) return;
  ft->dwLowDateTime = static_cast<DWORD>(v);
  ft->dwHighDateTime = static_cast<DWORD>(v >> 32);
}

uint64_t TicksTo100Ns(uint64_t ticks, uint64_t hz) {
  return ticks / hz * kHundredNsPerSec + ticks % hz * kHundredNsPerSec / hz;
}

uintptr_t PageSize() { return static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)); }

// ---- Virtual memory --------------------------------------------------------------------------

struct Reservations {
  std::mutex mu;
  std::map<uintptr_t, size_t> regions;  // base -> size (page multiple)
};

Reservations& R() {
  static Reservations* const r = new Reservations;
  return *r;
}

// The PROT_* of a PAGE_* value, or -1 for an invalid one.
int Protection(DWORD page) {
  switch (page & ~(PAGE_GUARD | PAGE_NOCACHE | PAGE_WRITECOMBINE)) {
    case PAGE_NOACCESS: return PROT_NONE;
    case PAGE_READONLY: return PROT_READ;
    case PAGE_READWRITE:
    case PAGE_WRITECOPY: return PROT_READ | PROT_WRITE;
    case PAGE_EXECUTE: return PROT_EXEC;
    case PAGE_EXECUTE_READ: return PROT_READ | PROT_EXEC;
    case PAGE_EXECUTE_READWRITE:
    case PAGE_EXECUTE_WRITECOPY: return PROT_READ | PROT_WRITE | PROT_EXEC;
    default: return -1;
  }
}

// With R().mu held: the reservation that holds [addr, addr + len), or regions.end().
std::map<uintptr_t, size_t>::iterator FindRegion(uintptr_t addr, size_t len) {
  auto& regions = R().regions;
  auto it = regions.upper_bound(addr);
  if (it == regions.begin()) return regions.end();
  --it;
  if (addr + len > it->first + it->second) return regions.end();
  return it;
}

// A new reservation of `size` bytes (page multiple) at a 64 KiB boundary, at `want` if not 0.
void* Reserve(uintptr_t want, size_t size) {
  if (want != 0) {
    void* p = mmap(reinterpret_cast<void*>(want), size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    if (reinterpret_cast<uintptr_t>(p) != want) {  // a kernel without MAP_FIXED_NOREPLACE
      munmap(p, size);
      return nullptr;
    }
    return p;
  }
  const size_t span = size + kGranularity - PageSize();
  void* p = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t base = (start + kGranularity - 1) & ~(kGranularity - 1);
  if (base > start) munmap(p, base - start);
  const uintptr_t end = start + span;
  if (end > base + size) munmap(reinterpret_cast<void*>(base + size), end - (base + size));
  return reinterpret_cast<void*>(base);
}

}  // namespace
}  // namespace roce::nd2

namespace nd = roce::nd2;

extern "C" {

// ---- Time ------------------------------------------------------------------------------------

void WINAPI Sleep(DWORD dwMilliseconds) {
  if (dwMilliseconds == 0) {
    sched_yield();
    return;
  }
  if (dwMilliseconds == INFINITE) {
    for (;;) pause();
  }
  timespec ts{static_cast<time_t>(dwMilliseconds / 1000),
              static_cast<long>(dwMilliseconds % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
  }
}

BOOL WINAPI SwitchToThread(void) {
  sched_yield();
  return TRUE;
}

BOOL WINAPI QueryPerformanceCounter(LARGE_INTEGER* lpPerformanceCount) {
  if (lpPerformanceCount == nullptr) {
    nd::SetLastError(ERROR_INVALID_PARAMETER);
    return FALSE;
  }
  lpPerformanceCount->QuadPart = static_cast<LONGLONG>(nd::ClockNs(CLOCK_MONOTONIC));
  return TRUE;
}

BOOL WINAPI QueryPerformanceFrequency(LARGE_INTEGER* lpFrequency) {
  if (lpFrequency == nullptr) {
    nd::SetLastError(ERROR_INVALID_PARAMETER);
    return FALSE;
  }
  lpFrequency->QuadPart = static_cast<LONGLONG>(nd::kNsPerSec);
  return TRUE;
}

ULONGLONG WINAPI GetTickCount64(void) { return nd::ClockNs(CLOCK_BOOTTIME) / 1000000ull; }

DWORD WINAPI GetTickCount(void) { return static_cast<DWORD>(GetTickCount64()); }

void WINAPI GetSystemTimeAsFileTime(LPFILETIME lpSystemTimeAsFileTime) {
  const uint64_t ns = nd::ClockNs(CLOCK_REALTIME);
  nd::SetFileTime(lpSystemTimeAsFileTime,
                  (ns / nd::kNsPerSec + nd::kEpoch1601To1970Secs) * nd::kHundredNsPerSec +
                      ns % nd::kNsPerSec / 100);
}

BOOL WINAPI GetSystemTimes(PFILETIME lpIdleTime, PFILETIME lpKernelTime, PFILETIME lpUserTime) {
  FILE* f = fopen("/proc/stat", "re");
  if (f == nullptr) {
    nd::SetLastError(ERROR_NOT_SUPPORTED);
    return FALSE;
  }
  unsigned long long v[10] = {};  // user nice system idle iowait irq softirq steal guest gnice
  const int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                       &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
  fclose(f);
  if (n < 4) {
    nd::SetLastError(ERROR_NOT_SUPPORTED);
    return FALSE;
  }
  long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0) hz = 100;
  const uint64_t h = static_cast<uint64_t>(hz);
  const uint64_t idle = v[3] + v[4];
  const uint64_t user = v[0] + v[1];
  const uint64_t kernel = v[2] + v[5] + v[6] + v[7] + idle;
  nd::SetFileTime(lpIdleTime, nd::TicksTo100Ns(idle, h));
  nd::SetFileTime(lpKernelTime, nd::TicksTo100Ns(kernel, h));
  nd::SetFileTime(lpUserTime, nd::TicksTo100Ns(user, h));
  return TRUE;
}

// ---- System ----------------------------------------------------------------------------------

void WINAPI GetSystemInfo(LPSYSTEM_INFO lpSystemInfo) {
  if (lpSystemInfo == nullptr) return;
  *lpSystemInfo = SYSTEM_INFO{};
#if defined(__aarch64__)
  lpSystemInfo->wProcessorArchitecture = PROCESSOR_ARCHITECTURE_ARM64;
#else
  lpSystemInfo->wProcessorArchitecture = PROCESSOR_ARCHITECTURE_AMD64;
  lpSystemInfo->dwProcessorType = PROCESSOR_AMD_X8664;
#endif
  lpSystemInfo->dwPageSize = static_cast<DWORD>(nd::PageSize());
  lpSystemInfo->lpMinimumApplicationAddress = reinterpret_cast<LPVOID>(uintptr_t{0x10000});
  lpSystemInfo->lpMaximumApplicationAddress =
      reinterpret_cast<LPVOID>((uintptr_t{1} << 47) - nd::kGranularity - 1);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 1) cpus = 1;
  lpSystemInfo->dwNumberOfProcessors = static_cast<DWORD>(cpus);
  lpSystemInfo->dwActiveProcessorMask =
      cpus >= 64 ? ~DWORD_PTR{0} : (DWORD_PTR{1} << cpus) - 1;
  lpSystemInfo->dwAllocationGranularity = static_cast<DWORD>(nd::kGranularity);
}

void WINAPI GetNativeSystemInfo(LPSYSTEM_INFO lpSystemInfo) { GetSystemInfo(lpSystemInfo); }

void WINAPI SetLastError(DWORD dwErrCode) { nd::SetLastError(dwErrCode); }

// ---- The process heap ------------------------------------------------------------------------

HANDLE WINAPI GetProcessHeap(void) { return &nd::g_process_heap; }

LPVOID WINAPI HeapAlloc(HANDLE hHeap, DWORD dwFlags, SIZE_T dwBytes) {
  if (hHeap != &nd::g_process_heap) return nullptr;
  const size_t n = dwBytes == 0 ? 1 : dwBytes;
  return (dwFlags & HEAP_ZERO_MEMORY) != 0 ? calloc(1, n) : malloc(n);
}

BOOL WINAPI HeapFree(HANDLE hHeap, DWORD /*dwFlags*/, LPVOID lpMem) {
  if (hHeap != &nd::g_process_heap) {
    nd::SetLastError(ERROR_INVALID_HANDLE);
    return FALSE;
  }
  free(lpMem);
  return TRUE;
}

// ---- Virtual memory --------------------------------------------------------------------------

LPVOID WINAPI VirtualAlloc(LPVOID lpAddress, SIZE_T dwSize, DWORD flAllocationType,
                           DWORD flProtect) {
  const uintptr_t page = nd::PageSize();
  const uintptr_t addr = reinterpret_cast<uintptr_t>(lpAddress);
  if (dwSize == 0) {
    nd::SetLastError(ERROR_INVALID_PARAMETER);
    return nullptr;
  }
  if (flAllocationType == MEM_RESET) {  // the contents may be dropped; the pages stay
    const uintptr_t start = addr & ~(page - 1);
    const uintptr_t end = (addr + dwSize + page - 1) & ~(page - 1);
    std::lock_guard<std::mutex> lk(nd::R().mu);
    if (nd::FindRegion(start, end - start) == nd::R().regions.end()) {
      nd::SetLastError(ERROR_INVALID_ADDRESS);
      return nullptr;
    }
    madvise(reinterpret_cast<void*>(start), end - start, MADV_FREE);
    return lpAddress;
  }
  const int prot = nd::Protection(flProtect);
  const DWORD kinds = flAllocationType & (MEM_COMMIT | MEM_RESERVE);
  if (prot < 0 || kinds == 0 ||
      (flAllocationType & ~(MEM_COMMIT | MEM_RESERVE | MEM_TOP_DOWN | MEM_LARGE_PAGES)) != 0) {
    nd::SetLastError(ERROR_INVALID_PARAMETER);
    return nullptr;
  }
  std::lock_guard<std::mutex> lk(nd::R().mu);
  if (addr == 0 || (flAllocationType & MEM_RESERVE) != 0) {
    // A new region (MEM_COMMIT alone with no address reserves too, as on Windows).
    const uintptr_t base = addr & ~(nd::kGranularity - 1);
    const size_t size = (addr + dwSize - base + page - 1) & ~(page - 1);
    void* p = nd::Reserve(base, size);
    if (p == nullptr) {
      nd::SetLastError(addr != 0 ? ERROR_INVALID_ADDRESS : ERROR_NOT_ENOUGH_MEMORY);
      return nullptr;
    }
    if ((flAllocationType & MEM_COMMIT) != 0 && mprotect(p, size, prot) != 0) {
      munmap(p, size);
      nd::SetLastError(ERROR_NOT_ENOUGH_MEMORY);
      return nullptr;
    }
    try {
      nd::R().regions[reinterpret_cast<uintptr_t>(p)] = size;
    } catch (...) {
      munmap(p, size);
      nd::SetLastError(ERROR_NOT_ENOUGH_MEMORY);
      return nullptr;
    }
    return p;
  }
  // MEM_COMMIT inside an existing reservation: the pages that hold the range.
  const uintptr_t start = addr & ~(page - 1);
  const uintptr_t end = (addr + dwSize + page - 1) & ~(page - 1);
  if (nd::FindRegion(start, end - start) == nd::R().regions.end()) {
    nd::SetLastError(ERROR_INVALID_ADDRESS);
    return nullptr;
  }
  if (mprotect(reinterpret_cast<void*>(start), end - start, prot) != 0) {
    nd::SetLastError(ERROR_NOT_ENOUGH_MEMORY);
    return nullptr;
  }
  return reinterpret_cast<LPVOID>(start);
}

BOOL WINAPI VirtualFree(LPVOID lpAddress, SIZE_T dwSize, DWORD dwFreeType) {
  const uintptr_t page = nd::PageSize();
  const uintptr_t addr = reinterpret_cast<uintptr_t>(lpAddress);
  std::lock_guard<std::mutex> lk(nd::R().mu);
  auto& regions = nd::R().regions;
  if (dwFreeType == MEM_RELEASE) {
    if (dwSize != 0) {
      nd::SetLastError(ERROR_INVALID_PARAMETER);
      return FALSE;
    }
    auto it = regions.find(addr);
    if (it == regions.end()) {
      nd::SetLastError(ERROR_INVALID_ADDRESS);
      return FALSE;
    }
    munmap(lpAddress, it->second);
    regions.erase(it);
    return TRUE;
  }
  if (dwFreeType == MEM_DECOMMIT) {
    uintptr_t start = addr & ~(page - 1);
    uintptr_t end = (addr + dwSize + page - 1) & ~(page - 1);
    auto it = nd::FindRegion(start, dwSize == 0 ? 1 : end - start);
    if (it == regions.end()) {
      nd::SetLastError(ERROR_INVALID_ADDRESS);
      return FALSE;
    }
    if (dwSize == 0) {  // from lpAddress, which must be the base, to the end of the region
      if (it->first != addr) {
        nd::SetLastError(ERROR_INVALID_ADDRESS);
        return FALSE;
      }
      start = it->first;
      end = it->first + it->second;
    }
    void* p = mmap(reinterpret_cast<void*>(start), end - start, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    if (p == MAP_FAILED) {
      nd::SetLastError(ERROR_NOT_ENOUGH_MEMORY);
      return FALSE;
    }
    return TRUE;
  }
  nd::SetLastError(ERROR_INVALID_PARAMETER);
  return FALSE;
}

}  // extern "C"
