// SPDX-License-Identifier: MIT
// windows.h: the Windows console layer of libnd2, for ND programs written for Windows (such as
// Microsoft's ND2 samples and tests) to compile unchanged on Linux. Every other Win32 console
// header here (tchar.h, winsock2.h, ws2tcpip.h, process.h) includes this one, so whichever a
// program includes first, it gets all of it (on Windows the same names reach such programs
// through windows.h, precompiled headers or the SDK's ND headers).
//
// What is here, on top of nd_win32.h (types, COM, SAL, events, waits, completion ports,
// Interlocked) and nd_win32_crt.h (MSVC's printf formats and CRT helpers):
//   - More Windows types: BOOLEAN, the P* / LP* pointer names, TCHAR / LPTSTR / LPCTSTR and
//     TEXT() (wide when UNICODE or _UNICODE is defined), ULARGE_INTEGER, FILETIME,
//     SYSTEM_INFO, LPTHREAD_START_ROUTINE; MAKEWORD, MAKELONG, LOWORD, HIWORD, LOBYTE, HIBYTE;
//     ZeroMemory, CopyMemory, MoveMemory, FillMemory, SecureZeroMemory; MAX_PATH.
//   - The STATUS_* values winnt.h has (STATUS_WAIT_0, STATUS_TIMEOUT, STATUS_PENDING,
//     STATUS_ACCESS_VIOLATION, ...), unless WIN32_NO_STATUS is defined, as Windows does: a
//     program that wants all of them includes <ntstatus.h>.
//   - Functions implemented by libnd2 (C linkage), Win32's semantics:
//       threads: CreateThread (a HANDLE that WaitForSingleObject / WaitForMultipleObjects wait
//         on and CloseHandle closes), ResumeThread, GetExitCodeThread, ExitThread,
//         GetCurrentThreadId, GetCurrentProcessId, SwitchToThread;
//       time: Sleep, QueryPerformanceCounter / QueryPerformanceFrequency (CLOCK_MONOTONIC in
//         nanoseconds: the frequency is 1e9), GetTickCount / GetTickCount64 (milliseconds of
//         CLOCK_BOOTTIME, which counts suspended time as Windows does),
//         GetSystemTimeAsFileTime, GetSystemTimes (idle, kernel and user time of all CPUs in
//         100 ns units, from /proc/stat; kernel time includes idle time, as on Windows);
//       system: GetSystemInfo / GetNativeSystemInfo, SetLastError;
//       memory: GetProcessHeap, HeapAlloc (HEAP_ZERO_MEMORY), HeapFree, VirtualAlloc
//         (MEM_RESERVE / MEM_COMMIT, PAGE_*), VirtualFree (MEM_RELEASE, MEM_DECOMMIT).
//     Winsock (WSAStartup, WSAStringToAddress, ...) is in winsock2.h, included at the end.
// Not here: the rest of Windows (files, registry, GUI, processes, named objects, mutexes,
// semaphores, critical sections, TLS, SuspendThread). nd2api/README.md ("The Windows console
// layer") lists the choices and what is missing.
#ifndef ND2API_WINDOWS_H_
#define ND2API_WINDOWS_H_

#include "nd_win32.h"
#include "nd_win32_crt.h"

// ---- Types -------------------------------------------------------------------------------------

typedef UCHAR BOOLEAN;
typedef BOOLEAN* PBOOLEAN;
typedef BOOL* PBOOL;
typedef BOOL* LPBOOL;
typedef BYTE* PBYTE;
typedef BYTE* LPBYTE;
typedef CHAR* PCHAR;
typedef UCHAR* PUCHAR;
typedef WCHAR* PWCHAR;
typedef SHORT* PSHORT;
typedef USHORT* PUSHORT;
typedef WORD* PWORD;
typedef WORD* LPWORD;
typedef INT* PINT;
typedef INT* LPINT;
typedef UINT* PUINT;
typedef LONG* PLONG;
typedef LONG* LPLONG;
typedef DWORD* PDWORD;
typedef LONG64* PLONG64;
typedef ULONG64* PULONG64;
typedef LONGLONG* PLONGLONG;
typedef ULONGLONG* PULONGLONG;
typedef INT64* PINT64;
typedef UINT64* PUINT64;
typedef uint64_t DWORD64;
typedef DWORD64* PDWORD64;
typedef SIZE_T* PSIZE_T;
typedef intptr_t SSIZE_T;
typedef float FLOAT;
typedef HANDLE* PHANDLE;
typedef HANDLE* LPHANDLE;
typedef HANDLE HMODULE;
typedef HANDLE HINSTANCE;
typedef CHAR* PSTR;
typedef const CHAR* PCSTR;
typedef WCHAR* PWSTR;
typedef const WCHAR* PCWSTR;
typedef void* PVOID64;

// TCHAR: wchar_t when UNICODE or _UNICODE is defined (Windows: winnt.h follows UNICODE,
// tchar.h _UNICODE; a program defines both or neither), else char.
#if defined(UNICODE) || defined(_UNICODE)
typedef WCHAR TCHAR;
#define ND_WIN32_TEXT_(s) L##s
#else
typedef char TCHAR;
#define ND_WIN32_TEXT_(s) s
#endif
typedef TCHAR* PTCHAR;
typedef TCHAR* LPTSTR;
typedef TCHAR* PTSTR;
typedef const TCHAR* LPCTSTR;
typedef const TCHAR* PCTSTR;
#define __TEXT(s) ND_WIN32_TEXT_(s)
#define TEXT(s) __TEXT(s)

#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wnested-anon-types"
#pragma clang diagnostic ignored "-Wgnu-anonymous-struct"
#endif
typedef union _ULARGE_INTEGER {
  __extension__ struct {
    DWORD LowPart;
    DWORD HighPart;
  };
  struct {
    DWORD LowPart;
    DWORD HighPart;
  } u;
  ULONGLONG QuadPart;
} ULARGE_INTEGER, *PULARGE_INTEGER;

// A count of 100 ns intervals in two halves (GetSystemTimes' results are durations; a point in
// time counts from 1601-01-01 UTC).
typedef struct _FILETIME {
  DWORD dwLowDateTime;
  DWORD dwHighDateTime;
} FILETIME, *PFILETIME, *LPFILETIME;

typedef struct _SYSTEM_INFO {
  union {
    DWORD dwOemId;
    __extension__ struct {
      WORD wProcessorArchitecture;
      WORD wReserved;
    };
  };
  DWORD dwPageSize;
  LPVOID lpMinimumApplicationAddress;
  LPVOID lpMaximumApplicationAddress;
  DWORD_PTR dwActiveProcessorMask;
  DWORD dwNumberOfProcessors;
  DWORD dwProcessorType;
  DWORD dwAllocationGranularity;
  WORD wProcessorLevel;
  WORD wProcessorRevision;
} SYSTEM_INFO, *LPSYSTEM_INFO;
#ifdef __clang__
#pragma clang diagnostic pop
#endif

typedef DWORD(WINAPI* PTHREAD_START_ROUTINE)(LPVOID lpThreadParameter);
typedef PTHREAD_START_ROUTINE LPTHREAD_START_ROUTINE;

ND_WIN32_STATIC_ASSERT_(sizeof(FILETIME) == 8, "FILETIME is 8 bytes");
ND_WIN32_STATIC_ASSERT_(sizeof(ULARGE_INTEGER) == 8, "ULARGE_INTEGER is 8 bytes");
ND_WIN32_STATIC_ASSERT_(sizeof(SYSTEM_INFO) == 48, "SYSTEM_INFO is 48 bytes (x64)");

// ---- Macros ------------------------------------------------------------------------------------

#ifndef MAX_PATH
#define MAX_PATH 260
#endif
#define MAKEWORD(low, high)                                        \
  ND_WIN32_CAST_(WORD, (ND_WIN32_CAST_(DWORD_PTR, low) & 0xff) |   \
                           ((ND_WIN32_CAST_(DWORD_PTR, high) & 0xff) << 8))
#define MAKELONG(low, high)                                           \
  ND_WIN32_CAST_(LONG, (ND_WIN32_CAST_(DWORD_PTR, low) & 0xffff) |    \
                           ((ND_WIN32_CAST_(DWORD_PTR, high) & 0xffff) << 16))
#define LOWORD(l) ND_WIN32_CAST_(WORD, ND_WIN32_CAST_(DWORD_PTR, l) & 0xffff)
#define HIWORD(l) ND_WIN32_CAST_(WORD, (ND_WIN32_CAST_(DWORD_PTR, l) >> 16) & 0xffff)
#define LOBYTE(w) ND_WIN32_CAST_(BYTE, ND_WIN32_CAST_(DWORD_PTR, w) & 0xff)
#define HIBYTE(w) ND_WIN32_CAST_(BYTE, (ND_WIN32_CAST_(DWORD_PTR, w) >> 8) & 0xff)

#define ZeroMemory RtlZeroMemory
#define RtlCopyMemory(dest, src, length) memcpy((dest), (src), (length))
#define RtlMoveMemory(dest, src, length) memmove((dest), (src), (length))
#define RtlFillMemory(dest, length, fill) memset((dest), (fill), (length))
#define CopyMemory RtlCopyMemory
#define MoveMemory RtlMoveMemory
#define FillMemory RtlFillMemory
// Zeroes memory with stores the compiler may not remove (the buffer is about to be freed).
ND_WIN32_INLINE_ PVOID SecureZeroMemory(PVOID ptr, SIZE_T cnt) {
  volatile char* p = ND_WIN32_CAST_(volatile char*, ptr);
  while (cnt-- != 0) *p++ = 0;
  return ptr;
}

// Win32 error codes beyond nd_win32.h's.
#define ERROR_FILE_NOT_FOUND 2u
#define ERROR_ACCESS_DENIED 5u
#define ERROR_OUTOFMEMORY 14u
#define ERROR_NOT_SUPPORTED 50u
#define ERROR_INSUFFICIENT_BUFFER 122u
#define ERROR_INVALID_ADDRESS 487u

// Threads.
#define CREATE_SUSPENDED 0x00000004u
#define STACK_SIZE_PARAM_IS_A_RESERVATION 0x00010000u
#define STILL_ACTIVE 259u

// Memory.
#define HEAP_NO_SERIALIZE 0x00000001u
#define HEAP_GENERATE_EXCEPTIONS 0x00000004u
#define HEAP_ZERO_MEMORY 0x00000008u
#define MEM_COMMIT 0x00001000u
#define MEM_RESERVE 0x00002000u
#define MEM_DECOMMIT 0x00004000u
#define MEM_RELEASE 0x00008000u
#define MEM_RESET 0x00080000u
#define MEM_TOP_DOWN 0x00100000u
#define MEM_LARGE_PAGES 0x20000000u
#define PAGE_NOACCESS 0x01u
#define PAGE_READONLY 0x02u
#define PAGE_READWRITE 0x04u
#define PAGE_WRITECOPY 0x08u
#define PAGE_EXECUTE 0x10u
#define PAGE_EXECUTE_READ 0x20u
#define PAGE_EXECUTE_READWRITE 0x40u
#define PAGE_EXECUTE_WRITECOPY 0x80u
#define PAGE_GUARD 0x100u
#define PAGE_NOCACHE 0x200u
#define PAGE_WRITECOMBINE 0x400u

// System information.
#define PROCESSOR_ARCHITECTURE_INTEL 0
#define PROCESSOR_ARCHITECTURE_ARM 5
#define PROCESSOR_ARCHITECTURE_AMD64 9
#define PROCESSOR_ARCHITECTURE_ARM64 12
#define PROCESSOR_ARCHITECTURE_UNKNOWN 0xffff
#define PROCESSOR_AMD_X8664 8664

// winnt.h's STATUS_* values (the rest are in ntstatus.h), skipped under WIN32_NO_STATUS as on
// Windows. Each is guarded: ndstatus.h and ntstatus.h define some with the same values.
#ifndef WIN32_NO_STATUS
#ifndef STATUS_WAIT_0
#define STATUS_WAIT_0 ND_NTSTATUS_(0x00000000)
#endif
#ifndef STATUS_ABANDONED_WAIT_0
#define STATUS_ABANDONED_WAIT_0 ND_NTSTATUS_(0x00000080)
#endif
#ifndef STATUS_USER_APC
#define STATUS_USER_APC ND_NTSTATUS_(0x000000C0)
#endif
#ifndef STATUS_TIMEOUT
#define STATUS_TIMEOUT ND_NTSTATUS_(0x00000102)
#endif
#ifndef STATUS_PENDING
#define STATUS_PENDING ND_NTSTATUS_(0x00000103)
#endif
#ifndef STATUS_BREAKPOINT
#define STATUS_BREAKPOINT ND_NTSTATUS_(0x80000003)
#endif
#ifndef STATUS_ACCESS_VIOLATION
#define STATUS_ACCESS_VIOLATION ND_NTSTATUS_(0xC0000005)
#endif
#ifndef STATUS_INVALID_HANDLE
#define STATUS_INVALID_HANDLE ND_NTSTATUS_(0xC0000008)
#endif
#ifndef STATUS_INVALID_PARAMETER
#define STATUS_INVALID_PARAMETER ND_NTSTATUS_(0xC000000D)
#endif
#ifndef STATUS_NO_MEMORY
#define STATUS_NO_MEMORY ND_NTSTATUS_(0xC0000017)
#endif
#ifndef STATUS_ILLEGAL_INSTRUCTION
#define STATUS_ILLEGAL_INSTRUCTION ND_NTSTATUS_(0xC000001D)
#endif
#ifndef STATUS_INTEGER_DIVIDE_BY_ZERO
#define STATUS_INTEGER_DIVIDE_BY_ZERO ND_NTSTATUS_(0xC0000094)
#endif
#ifndef STATUS_STACK_OVERFLOW
#define STATUS_STACK_OVERFLOW ND_NTSTATUS_(0xC00000FD)
#endif
#ifndef STATUS_CONTROL_C_EXIT
#define STATUS_CONTROL_C_EXIT ND_NTSTATUS_(0xC000013A)
#endif
#endif  // WIN32_NO_STATUS

// ---- Functions implemented by libnd2 -----------------------------------------------------------

EXTERN_C_START
// Threads.
HANDLE WINAPI CreateThread(LPSECURITY_ATTRIBUTES lpThreadAttributes, SIZE_T dwStackSize,
                           LPTHREAD_START_ROUTINE lpStartAddress, LPVOID lpParameter,
                           DWORD dwCreationFlags, LPDWORD lpThreadId);
DWORD WINAPI ResumeThread(HANDLE hThread);
BOOL WINAPI GetExitCodeThread(HANDLE hThread, LPDWORD lpExitCode);  // STILL_ACTIVE if running
__attribute__((noreturn)) void WINAPI ExitThread(DWORD dwExitCode);
DWORD WINAPI GetCurrentThreadId(void);
DWORD WINAPI GetCurrentProcessId(void);
BOOL WINAPI SwitchToThread(void);

// Time.
void WINAPI Sleep(DWORD dwMilliseconds);  // 0: yields; INFINITE: forever
BOOL WINAPI QueryPerformanceCounter(LARGE_INTEGER* lpPerformanceCount);
BOOL WINAPI QueryPerformanceFrequency(LARGE_INTEGER* lpFrequency);
DWORD WINAPI GetTickCount(void);
ULONGLONG WINAPI GetTickCount64(void);
void WINAPI GetSystemTimeAsFileTime(LPFILETIME lpSystemTimeAsFileTime);
BOOL WINAPI GetSystemTimes(PFILETIME lpIdleTime, PFILETIME lpKernelTime, PFILETIME lpUserTime);

// System.
void WINAPI GetSystemInfo(LPSYSTEM_INFO lpSystemInfo);
void WINAPI GetNativeSystemInfo(LPSYSTEM_INFO lpSystemInfo);
void WINAPI SetLastError(DWORD dwErrCode);

// Memory. The process heap is malloc's; HeapAlloc returns 16-byte aligned blocks.
HANDLE WINAPI GetProcessHeap(void);
LPVOID WINAPI HeapAlloc(HANDLE hHeap, DWORD dwFlags, SIZE_T dwBytes);
BOOL WINAPI HeapFree(HANDLE hHeap, DWORD dwFlags, LPVOID lpMem);
LPVOID WINAPI VirtualAlloc(LPVOID lpAddress, SIZE_T dwSize, DWORD flAllocationType,
                           DWORD flProtect);
BOOL WINAPI VirtualFree(LPVOID lpAddress, SIZE_T dwSize, DWORD dwFreeType);

// process.h's threads (declared there too).
uintptr_t _beginthreadex(void* security, unsigned stack_size,
                         unsigned(__stdcall* start_address)(void*), void* arglist,
                         unsigned initflag, unsigned* thrdaddr);
void _endthreadex(unsigned retval);
int _getpid(void);

// _tmain with _UNICODE: libnd2's entry point (the nd2_wmain archive that pkg-config's Libs
// names) calls it with the command line converted to wide strings.
int wmain(int argc, wchar_t** argv);
EXTERN_C_END

#include "winsock2.h"

#endif  // ND2API_WINDOWS_H_
