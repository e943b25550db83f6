// SPDX-License-Identifier: MIT
// nd_win32.h: the part of Win32 and COM that the NetworkDirect 2 contract is built on, for
// Linux (x86-64 and other LP64 targets). ndstatus.h, nddef.h, ndspi.h and ndsupport.h include
// it; an ND2 program written for Windows compiles against it unchanged.
//
// What is here: the list in /work/shared/nd2-reference.md ("Source compatibility"), plus the
// few COM result codes, Win32 error codes and pointer types that list's functions and macros
// need in their signatures; no other part of Windows. In short:
//   - Windows' fixed-width types with their Windows (LLP64) sizes: ULONG, LONG, DWORD and
//     HRESULT are 32-bit, SIZE_T and the *_PTR types 64-bit; HANDLE is a pointer; WCHAR is
//     wchar_t.
//   - GUID / IID / REFIID, DEFINE_GUID (INITGUID accepted), IsEqualGUID and operator==.
//   - IUnknown and the COM declaration macros (STDMETHOD, PURE, THIS_, DECLARE_INTERFACE_...);
//     the COM result codes and SUCCEEDED / FAILED / HRESULT_FROM_WIN32.
//   - SAL annotations, all defined empty.
//   - OVERLAPPED (32 bytes), SOCKADDR over the POSIX socket types, SOCKET_ADDRESS (16 bytes)
//     and SOCKET_ADDRESS_LIST (24 bytes).
//   - The overlapped contract: events, waits and I/O completion ports. These functions are
//     only DECLARED here: libnd2 implements them (see "Functions implemented by libnd2").
//   - Interlocked* (32-bit, 64-bit, pointers), MemoryBarrier, YieldProcessor, RtlZeroMemory,
//     CONTAINING_RECORD, _countof / ARRAYSIZE, UNREFERENCED_PARAMETER, min / max: inline, here.
//   - MSVC's declaration specifiers: __declspec(align(n) / noinline / novtable / ...),
//     __forceinline, the calling conventions (__cdecl, __stdcall, ...: empty).
//
// The Windows console layer (windows.h, tchar.h, winsock2.h, ...: threads, time, memory,
// Winsock's startup and address parsing, MSVC's printf) is NOT here: it has its own headers,
// which include this one. A program that includes only the ND headers keeps glibc's stdio.
//
// Legacy SAL names. `__in` and `__out` are also ordinary identifiers inside libstdc++ (for
// example in <tuple>, <algorithm>, <istream>, <thread>). Once they are empty macros, a standard
// header included afterwards no longer compiles. So, in C++, this header first includes every
// standard header that uses those names, then defines the macros: a later #include of those
// headers is a no-op. That costs about 1.5 s of compile time per translation unit. Define
// ND_WIN32_NO_LEGACY_SAL before including any ND header to skip both (no legacy `__in` /
// `__out` family, nothing extra included): code that uses only the modern names (`_In_`,
// `_Out_`, ..., always defined), such as libnd2 itself, should.
#ifndef ND2API_ND_WIN32_H_
#define ND2API_ND_WIN32_H_

#if defined(__cplusplus) && __cplusplus < 201703L
#error "the ND2 headers need C++17 or later"
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <wchar.h>
#include <netinet/in.h>
#include <sys/socket.h>

#ifdef __cplusplus
#include <type_traits>
#if !defined(ND_WIN32_NO_LEGACY_SAL)
// Every standard header whose text uses `__in` or `__out` as an identifier (libstdc++ 12,
// outside the ext/ tr1/ tr2/ experimental/ parallel/ extensions), so that they are read
// before those names become macros.
#include <algorithm>
#include <functional>
#include <istream>
#include <locale>
#include <memory>
#include <ostream>
#include <regex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#endif
#endif

// ---- Language glue ---------------------------------------------------------------------

#ifdef __cplusplus
#define EXTERN_C extern "C"
#define EXTERN_C_START extern "C" {
#define EXTERN_C_END }
#define ND_WIN32_CAST_(type, value) static_cast<type>(value)
#define ND_WIN32_STATIC_ASSERT_(cond, msg) static_assert(cond, msg)
#define ND_WIN32_INLINE_ inline
#else
#define EXTERN_C extern
#define EXTERN_C_START
#define EXTERN_C_END
#define ND_WIN32_CAST_(type, value) ((type)(value))
#define ND_WIN32_STATIC_ASSERT_(cond, msg) _Static_assert(cond, msg)
#define ND_WIN32_INLINE_ static inline
#endif

// Calling conventions: meaningless on x86-64 Linux (one convention), kept for source.
#define __stdcall
#define __cdecl
#define __fastcall
#define __thiscall
#define __vectorcall
#define WINAPI
#define WINAPIV
#define APIENTRY
#define CALLBACK
#define STDMETHODCALLTYPE

// __declspec(x): each MSVC specifier becomes its GCC attribute (align(n), noinline, noreturn,
// nothrow, thread, selectany, deprecated) or nothing where it only tunes MSVC's code or has no
// Linux meaning (novtable: MSVC then skips setting the vtable pointer in the constructor, which
// changes no behaviour; restrict, noalias: optimisation hints; dllimport; uuid(...), allocator,
// safebuffers, empty_bases); dllexport is the default visibility. Any other specifier is a
// compile error naming ND_WIN32_DECLSPEC_<specifier>, not silently dropped.
#define __declspec(x) ND_WIN32_DECLSPEC_##x
#define ND_WIN32_DECLSPEC_align(n) __attribute__((aligned(n)))
#define ND_WIN32_DECLSPEC_noinline __attribute__((noinline))
#define ND_WIN32_DECLSPEC_noreturn __attribute__((noreturn))
#define ND_WIN32_DECLSPEC_nothrow __attribute__((nothrow))
#define ND_WIN32_DECLSPEC_thread __thread
#define ND_WIN32_DECLSPEC_selectany __attribute__((weak))
#define ND_WIN32_DECLSPEC_deprecated __attribute__((deprecated))
#define ND_WIN32_DECLSPEC_restrict
#define ND_WIN32_DECLSPEC_noalias
#define ND_WIN32_DECLSPEC_novtable
#define ND_WIN32_DECLSPEC_dllimport
#define ND_WIN32_DECLSPEC_dllexport __attribute__((visibility("default")))
#define ND_WIN32_DECLSPEC_uuid(x)
#define ND_WIN32_DECLSPEC_allocator
#define ND_WIN32_DECLSPEC_safebuffers
#define ND_WIN32_DECLSPEC_empty_bases
#define DECLSPEC_NOVTABLE
#define DECLSPEC_NOINLINE __attribute__((noinline))
#define DECLSPEC_NORETURN __attribute__((noreturn))
#define DECLSPEC_ALIGN(n) __attribute__((aligned(n)))
#define DECLSPEC_SELECTANY __attribute__((weak))
#define DECLSPEC_NOTHROW __attribute__((nothrow))
#define DECLSPEC_UUID(x)

// Inlining keywords. __forceinline is `inline` that GCC must honour (always_inline).
#define __forceinline inline __attribute__((always_inline))
#define FORCEINLINE __forceinline

// ---- Types -----------------------------------------------------------------------------
// Windows is LLP64: `long` is 32-bit there. Never use `long` for these on Linux.

#ifndef VOID
#define VOID void
#endif
typedef char CHAR;
typedef signed char INT8;
typedef unsigned char UCHAR;
typedef unsigned char UINT8;
typedef unsigned char BYTE;
typedef int16_t SHORT;
typedef int16_t INT16;
typedef uint16_t USHORT;
typedef uint16_t UINT16;
typedef uint16_t WORD;
typedef int INT;
typedef int32_t INT32;
typedef unsigned int UINT;
typedef uint32_t UINT32;
typedef int32_t LONG;
typedef uint32_t ULONG;
typedef uint32_t DWORD;
typedef int64_t INT64;
typedef uint64_t UINT64;
typedef int64_t LONG64;
typedef uint64_t ULONG64;
typedef int64_t LONGLONG;
typedef uint64_t ULONGLONG;
typedef int BOOL;  // 32-bit, TRUE / FALSE
typedef wchar_t WCHAR;

typedef intptr_t INT_PTR;
typedef uintptr_t UINT_PTR;
typedef intptr_t LONG_PTR;
typedef uintptr_t ULONG_PTR;
typedef uintptr_t DWORD_PTR;
typedef size_t SIZE_T;   // 64-bit; identical to size_t
typedef ULONG_PTR KAFFINITY;

typedef void* PVOID;
typedef void* LPVOID;
typedef const void* LPCVOID;
typedef void* HANDLE;  // a pointer, as on Windows
typedef LONG HRESULT;
typedef LONG NTSTATUS;

typedef CHAR* LPSTR;
typedef const CHAR* LPCSTR;
typedef WCHAR* LPWSTR;
typedef const WCHAR* LPCWSTR;
typedef ULONG* PULONG;
typedef DWORD* LPDWORD;
typedef ULONG_PTR* PULONG_PTR;

#ifndef TRUE
#define TRUE 1
#endif
#ifndef FALSE
#define FALSE 0
#endif

#ifdef __cplusplus
#define INVALID_HANDLE_VALUE reinterpret_cast<HANDLE>(static_cast<LONG_PTR>(-1))
#else
#define INVALID_HANDLE_VALUE ((HANDLE)(LONG_PTR)-1)
#endif

#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wnested-anon-types"
#pragma clang diagnostic ignored "-Wgnu-anonymous-struct"
#endif

typedef union _LARGE_INTEGER {
  __extension__ struct {
    DWORD LowPart;
    LONG HighPart;
  };
  struct {
    DWORD LowPart;
    LONG HighPart;
  } u;
  LONGLONG QuadPart;
} LARGE_INTEGER, *PLARGE_INTEGER;

// ---- OVERLAPPED --------------------------------------------------------------------------
// Identifies one asynchronous request. Only a request that returned ND_PENDING completes later:
// it then signals hEvent (when not NULL) and queues a packet to the completion port bound to
// the adapter's overlapped file, unless the low bit of hEvent is set. That bit is the Win32
// convention for "do not queue to the port" (the handle is hEvent with the bit cleared):
// anything that uses hEvent must mask it. A request that returned ND_SUCCESS signals nothing.
// Internal / InternalHigh belong to the provider while the request is outstanding.
typedef struct _OVERLAPPED {
  ULONG_PTR Internal;
  ULONG_PTR InternalHigh;
  union {
    __extension__ struct {
      DWORD Offset;
      DWORD OffsetHigh;
    };
    PVOID Pointer;
  };
  HANDLE hEvent;
} OVERLAPPED, *LPOVERLAPPED;

#ifdef __clang__
#pragma clang diagnostic pop
#endif

typedef struct _SECURITY_ATTRIBUTES {
  DWORD nLength;
  LPVOID lpSecurityDescriptor;
  BOOL bInheritHandle;
} SECURITY_ATTRIBUTES, *PSECURITY_ATTRIBUTES, *LPSECURITY_ATTRIBUTES;

// ---- Socket addresses ------------------------------------------------------------------
// The address structures are the POSIX ones (struct sockaddr, sockaddr_in, sockaddr_in6 from
// <netinet/in.h>); the Windows names are aliases. Port and address fields are in network order,
// as on Windows.
typedef struct sockaddr SOCKADDR, *PSOCKADDR, *LPSOCKADDR;
typedef struct sockaddr_in SOCKADDR_IN, *PSOCKADDR_IN, *LPSOCKADDR_IN;
typedef struct sockaddr_in6 SOCKADDR_IN6, *PSOCKADDR_IN6, *LPSOCKADDR_IN6;

typedef struct _SOCKET_ADDRESS {
  LPSOCKADDR lpSockaddr;
  INT iSockaddrLength;
} SOCKET_ADDRESS, *PSOCKET_ADDRESS, *LPSOCKET_ADDRESS;

// A count followed by that many SOCKET_ADDRESS entries (the array is declared with one); the
// sockaddrs they point to usually follow in the same buffer.
typedef struct _SOCKET_ADDRESS_LIST {
  INT iAddressCount;
  SOCKET_ADDRESS Address[1];
} SOCKET_ADDRESS_LIST, *PSOCKET_ADDRESS_LIST, *LPSOCKET_ADDRESS_LIST;

// ---- GUIDs -------------------------------------------------------------------------------

typedef struct _GUID {
  uint32_t Data1;
  uint16_t Data2;
  uint16_t Data3;
  uint8_t Data4[8];
} GUID;
typedef GUID IID;
typedef GUID* LPGUID;

// DEFINE_GUID(name, l, w1, w2, b1, ..., b8). In C++ every use defines the GUID (an inline
// constexpr variable, one object per program), so INITGUID is accepted and not needed. In C it
// declares the GUID, and defines it where INITGUID is defined (the Windows rule).
#ifdef __cplusplus
#define DEFINE_GUID(name, l, w1, w2, b1, b2, b3, b4, b5, b6, b7, b8) \
  inline constexpr GUID name = {l, w1, w2, {b1, b2, b3, b4, b5, b6, b7, b8}}
#elif defined(INITGUID)
#define DEFINE_GUID(name, l, w1, w2, b1, b2, b3, b4, b5, b6, b7, b8) \
  const GUID name = {l, w1, w2, {b1, b2, b3, b4, b5, b6, b7, b8}}
#else
#define DEFINE_GUID(name, l, w1, w2, b1, b2, b3, b4, b5, b6, b7, b8) \
  extern const GUID name
#endif

#ifdef __cplusplus
typedef const GUID& REFGUID;
typedef const IID& REFIID;

inline bool IsEqualGUID(REFGUID a, REFGUID b) {
  return memcmp(&a, &b, sizeof(GUID)) == 0;
}
inline bool operator==(REFGUID a, REFGUID b) { return IsEqualGUID(a, b); }
inline bool operator!=(REFGUID a, REFGUID b) { return !IsEqualGUID(a, b); }
#else
typedef const GUID* REFGUID;
typedef const IID* REFIID;

static inline int IsEqualGUID(REFGUID a, REFGUID b) {
  return memcmp(a, b, sizeof(GUID)) == 0;
}
#endif
#define IsEqualIID(a, b) IsEqualGUID(a, b)

// ---- Result codes ----------------------------------------------------------------------
// An HRESULT is negative on failure. The ND status codes are in ndstatus.h.

// An NTSTATUS constant. ndstatus.h, ntstatus.h and windows.h spell every STATUS_* value with it
// (token for token the same definition), so that a value defined by two of them is an
// identical, warning-free redefinition.
#define ND_NTSTATUS_(value) ND_WIN32_CAST_(NTSTATUS, value)

#define SUCCEEDED(hr) (ND_WIN32_CAST_(HRESULT, hr) >= 0)
#define FAILED(hr) (ND_WIN32_CAST_(HRESULT, hr) < 0)
#define NT_SUCCESS(status) (ND_WIN32_CAST_(NTSTATUS, status) >= 0)

#define FACILITY_WIN32 7

#define S_OK ND_WIN32_CAST_(HRESULT, 0x00000000)
#define S_FALSE ND_WIN32_CAST_(HRESULT, 0x00000001)
#define E_NOTIMPL ND_WIN32_CAST_(HRESULT, 0x80004001)
#define E_NOINTERFACE ND_WIN32_CAST_(HRESULT, 0x80004002)
#define E_POINTER ND_WIN32_CAST_(HRESULT, 0x80004003)
#define E_ABORT ND_WIN32_CAST_(HRESULT, 0x80004004)
#define E_FAIL ND_WIN32_CAST_(HRESULT, 0x80004005)
#define E_UNEXPECTED ND_WIN32_CAST_(HRESULT, 0x8000FFFF)
#define E_OUTOFMEMORY ND_WIN32_CAST_(HRESULT, 0x8007000E)
#define E_INVALIDARG ND_WIN32_CAST_(HRESULT, 0x80070057)

// Win32 error codes (GetLastError) that the declared functions report.
#define ERROR_SUCCESS 0u
#define ERROR_INVALID_HANDLE 6u
#define ERROR_NOT_ENOUGH_MEMORY 8u
#define ERROR_INVALID_PARAMETER 87u
#define ERROR_OPERATION_ABORTED 995u
#define ERROR_IO_INCOMPLETE 996u
#define ERROR_IO_PENDING 997u

// A Win32 error code as an HRESULT (facility WIN32, severity error; 0 stays S_OK).
#ifdef __cplusplus
constexpr HRESULT HRESULT_FROM_WIN32(DWORD x) {
  return static_cast<HRESULT>(x) <= 0
             ? static_cast<HRESULT>(x)
             : static_cast<HRESULT>((x & 0x0000FFFFu) | (FACILITY_WIN32 << 16) | 0x80000000u);
}
#else
static inline HRESULT HRESULT_FROM_WIN32(DWORD x) {
  return (HRESULT)x <= 0 ? (HRESULT)x
                         : (HRESULT)((x & 0x0000FFFFu) | (FACILITY_WIN32 << 16) | 0x80000000u);
}
#endif

// ---- Waits -------------------------------------------------------------------------------

#define INFINITE 0xFFFFFFFFu
#define WAIT_OBJECT_0 0x00000000u
#define WAIT_ABANDONED 0x00000080u  // (mutexes; never returned here)
#define WAIT_ABANDONED_0 0x00000080u
#define WAIT_IO_COMPLETION 0x000000C0u  // (alertable waits; never returned here)
#define WAIT_TIMEOUT 0x00000102u  // also GetLastError() after a timed-out port wait
#define WAIT_FAILED 0xFFFFFFFFu
#define MAXIMUM_WAIT_OBJECTS 64  // WaitForMultipleObjects' limit

// ---- COM ---------------------------------------------------------------------------------
// Interfaces are structs of pure virtual functions, no data, single inheritance: slots 0-2 are
// QueryInterface, AddRef, Release, then each interface's methods in declaration order. Their
// destructors are protected and not virtual (a virtual destructor would add vtable slots);
// objects are destroyed by their last Release.

#ifdef __cplusplus
#define PURE = 0
#define THIS_
#define THIS void
#define STDMETHOD(method) virtual HRESULT STDMETHODCALLTYPE method
#define STDMETHOD_(type, method) virtual type STDMETHODCALLTYPE method
#define STDMETHODIMP HRESULT STDMETHODCALLTYPE
#define STDMETHODIMP_(type) type STDMETHODCALLTYPE
#define IFACEMETHOD(method) STDMETHOD(method)
#define IFACEMETHOD_(type, method) STDMETHOD_(type, method)
#define IFACEMETHODIMP STDMETHODIMP
#define IFACEMETHODIMP_(type) STDMETHODIMP_(type)
#define DECLARE_INTERFACE(iface) struct DECLSPEC_NOVTABLE iface
#define DECLARE_INTERFACE_(iface, baseiface) struct DECLSPEC_NOVTABLE iface : public baseiface

// {00000000-0000-0000-C000-000000000046}: COM's IUnknown.
DEFINE_GUID(IID_IUnknown, 0x00000000, 0x0000, 0x0000, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x46);

struct IUnknown {
  // On success stores an AddRef'd pointer to the requested interface in *ppvObject and
  // returns S_OK; otherwise stores NULL and returns E_NOINTERFACE (E_POINTER when ppvObject is
  // NULL). Asking any interface of an object for IID_IUnknown gives the same pointer.
  virtual HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void** ppvObject) = 0;
  // Return the new reference count (for diagnostics only).
  virtual ULONG STDMETHODCALLTYPE AddRef() = 0;
  virtual ULONG STDMETHODCALLTYPE Release() = 0;

 protected:
  ~IUnknown() = default;
};
typedef IUnknown* LPUNKNOWN;
#endif

// ---- SAL annotations: all empty --------------------------------------------------------
// Modern SAL (sal.h, 2.0 and the 1.x "_In_bytecount_" forms).
#define _In_
#define _In_opt_
#define _In_z_
#define _In_opt_z_
#define _In_reads_(n)
#define _In_reads_opt_(n)
#define _In_reads_bytes_(n)
#define _In_reads_bytes_opt_(n)
#define _In_reads_z_(n)
#define _In_range_(lo, hi)
#define _In_count_(n)
#define _In_opt_count_(n)
#define _In_bytecount_(n)
#define _In_opt_bytecount_(n)
#define _Out_
#define _Out_opt_
#define _Out_writes_(n)
#define _Out_writes_opt_(n)
#define _Out_writes_bytes_(n)
#define _Out_writes_bytes_opt_(n)
#define _Out_writes_to_(n, c)
#define _Out_writes_to_opt_(n, c)
#define _Out_writes_bytes_to_(n, c)
#define _Out_writes_bytes_to_opt_(n, c)
#define _Out_writes_all_(n)
#define _Out_writes_bytes_all_(n)
#define _Out_writes_z_(n)
#define _Out_range_(lo, hi)
#define _Out_cap_(n)
#define _Out_opt_cap_(n)
#define _Out_bytecap_(n)
#define _Out_opt_bytecap_(n)
#define _Out_bytecap_post_bytecount_(c, n)
#define _Out_opt_bytecap_post_bytecount_(c, n)
#define _Out_cap_post_count_(c, n)
#define _Inout_
#define _Inout_opt_
#define _Inout_z_
#define _Inout_updates_(n)
#define _Inout_updates_opt_(n)
#define _Inout_updates_bytes_(n)
#define _Inout_updates_bytes_opt_(n)
#define _Inout_bytecount_(n)
#define _Inout_opt_bytecount_(n)
#define _Outptr_
#define _Outptr_opt_
#define _Outptr_result_maybenull_
#define _Outptr_opt_result_maybenull_
#define _Outptr_result_buffer_(n)
#define _Outptr_result_bytebuffer_(n)
#define _Deref_out_
#define _Deref_out_opt_
#define _Deref_out_range_(lo, hi)
#define _Deref_in_range_(lo, hi)
#define _Deref_inout_range_(lo, hi)
#define _Ret_maybenull_
#define _Ret_notnull_
#define _Ret_z_
#define _Ret_range_(lo, hi)
#define _Must_inspect_result_
#define _Check_return_
#define _Success_(expr)
#define _Return_type_success_(expr)
#define _Use_decl_annotations_
#define _Printf_format_string_
#define _Null_terminated_
#define _Field_size_(n)
#define _Field_size_opt_(n)
#define _Field_size_bytes_(n)
#define _Field_size_bytes_opt_(n)
#define _Field_range_(lo, hi)
#define _Pre_notnull_
#define _Pre_maybenull_
#define _Post_invalid_
#define _Post_z_
#define _Post_writable_byte_size_(n)
#define _Frees_ptr_
#define _Frees_ptr_opt_
#define _Reserved_
#define _When_(cond, annotes)
#define _Always_(annotes)
#define _On_failure_(annotes)
#define _Analysis_noreturn_
#define _Analysis_assume_(expr)
#define _Interlocked_operand_
#define _Acquires_lock_(lock)
#define _Releases_lock_(lock)
#define _Requires_lock_held_(lock)
#define _Requires_lock_not_held_(lock)
#define _Guarded_by_(lock)
#define _Function_class_(name)
#define _IRQL_requires_max_(irql)

// Legacy SAL 1 names. Object-like ones are defined only after the standard headers that use
// the same identifiers (see the top of this file). Not defined: names that Linux headers use
// as identifiers, such as __reserved (struct fields in <linux/*.h>), __success, __range.
#if !defined(ND_WIN32_NO_LEGACY_SAL)
#define __in
#define __out
#define __inout
#define __in_opt
#define __out_opt
#define __inout_opt
#define __in_z
#define __in_opt_z
#define __out_z
#define __deref_out
#define __deref_out_opt
#define __deref_inout
#define __deref_in
#define __callback
#define __checkReturn
#define __nullterminated
#define __in_bcount(n)
#define __in_bcount_opt(n)
#define __in_ecount(n)
#define __in_ecount_opt(n)
#define __in_range(lo, hi)
#define __out_bcount(n)
#define __out_bcount_opt(n)
#define __out_ecount(n)
#define __out_ecount_opt(n)
#define __out_bcount_part(n, c)
#define __out_bcount_part_opt(n, c)
#define __out_ecount_part(n, c)
#define __out_ecount_part_opt(n, c)
#define __out_bcount_full(n)
#define __out_ecount_full(n)
#define __out_range(lo, hi)
#define __inout_bcount(n)
#define __inout_bcount_opt(n)
#define __inout_ecount(n)
#define __inout_ecount_opt(n)
#define __inout_bcount_part(n, c)
#define __inout_ecount_part(n, c)
#define __deref_out_ecount(n)
#define __deref_out_bcount(n)
#define __deref_out_range(lo, hi)
#define __field_ecount(n)
#define __field_bcount(n)
#define __field_ecount_opt(n)
#define __field_bcount_opt(n)
#define __bcount(n)
#define __ecount(n)
#endif

// `__fallthrough;` marks an intended fall through to the next case label.
#ifdef __cplusplus
#define __fallthrough [[fallthrough]]
#else
#define __fallthrough __attribute__((fallthrough))
#endif

// ---- Inline helpers ------------------------------------------------------------------------

#define RtlZeroMemory(dest, length) memset((dest), 0, (length))

// The address of the structure of type `type` whose member `field` is at `address`.
#ifdef __cplusplus
#define CONTAINING_RECORD(address, type, field) \
  reinterpret_cast<type*>(reinterpret_cast<ULONG_PTR>(address) - offsetof(type, field))
#else
#define CONTAINING_RECORD(address, type, field) \
  ((type*)((ULONG_PTR)(address) - offsetof(type, field)))
#endif

// Interlocked operations: full barriers (sequentially consistent), as on Windows, on 32-bit
// (LONG), 64-bit (LONG64) and pointer operands. What each returns is Windows' rule:
//   - Increment / Decrement / Add: the NEW value;
//   - Exchange / ExchangeAdd / CompareExchange / And / Or / Xor: the value BEFORE the operation
//     (CompareExchange stores `exchange` only when the old value equals `comparand`).
#define ND_WIN32_INTERLOCKED_(suffix, T)                                                        \
  ND_WIN32_INLINE_ T InterlockedIncrement##suffix(T volatile* addend) {                        \
    return __atomic_add_fetch(addend, 1, __ATOMIC_SEQ_CST);                                    \
  }                                                                                            \
  ND_WIN32_INLINE_ T InterlockedDecrement##suffix(T volatile* addend) {                        \
    return __atomic_sub_fetch(addend, 1, __ATOMIC_SEQ_CST);                                    \
  }                                                                                            \
  ND_WIN32_INLINE_ T InterlockedAdd##suffix(T volatile* addend, T value) {                     \
    return __atomic_add_fetch(addend, value, __ATOMIC_SEQ_CST);                                \
  }                                                                                            \
  ND_WIN32_INLINE_ T InterlockedExchange##suffix(T volatile* target, T value) {                \
    return __atomic_exchange_n(target, value, __ATOMIC_SEQ_CST);                               \
  }                                                                                            \
  ND_WIN32_INLINE_ T InterlockedExchangeAdd##suffix(T volatile* addend, T value) {             \
    return __atomic_fetch_add(addend, value, __ATOMIC_SEQ_CST);                                \
  }                                                                                            \
  ND_WIN32_INLINE_ T InterlockedCompareExchange##suffix(T volatile* destination, T exchange,   \
                                                        T comparand) {                         \
    __atomic_compare_exchange_n(destination, &comparand, exchange, 0, __ATOMIC_SEQ_CST,        \
                                __ATOMIC_SEQ_CST);                                             \
    return comparand;                                                                          \
  }                                                                                            \
  ND_WIN32_INLINE_ T InterlockedAnd##suffix(T volatile* destination, T value) {                \
    return __atomic_fetch_and(destination, value, __ATOMIC_SEQ_CST);                           \
  }                                                                                            \
  ND_WIN32_INLINE_ T InterlockedOr##suffix(T volatile* destination, T value) {                 \
    return __atomic_fetch_or(destination, value, __ATOMIC_SEQ_CST);                            \
  }                                                                                            \
  ND_WIN32_INLINE_ T InterlockedXor##suffix(T volatile* destination, T value) {                \
    return __atomic_fetch_xor(destination, value, __ATOMIC_SEQ_CST);                           \
  }
ND_WIN32_INTERLOCKED_(, LONG)
ND_WIN32_INTERLOCKED_(64, LONG64)
#undef ND_WIN32_INTERLOCKED_

ND_WIN32_INLINE_ PVOID InterlockedExchangePointer(PVOID volatile* target, PVOID value) {
  return __atomic_exchange_n(target, value, __ATOMIC_SEQ_CST);
}
ND_WIN32_INLINE_ PVOID InterlockedCompareExchangePointer(PVOID volatile* destination,
                                                         PVOID exchange, PVOID comparand) {
  __atomic_compare_exchange_n(destination, &comparand, exchange, 0, __ATOMIC_SEQ_CST,
                              __ATOMIC_SEQ_CST);
  return comparand;
}

// A full memory barrier; a spin-wait hint.
#define MemoryBarrier() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#if defined(__x86_64__) || defined(__i386__)
#define YieldProcessor() __builtin_ia32_pause()
#else
#define YieldProcessor() ((void)0)
#endif

// The number of elements of an array. In C++ only an array compiles (a pointer is an error,
// as with MSVC's template); in C it is the sizeof ratio.
#ifdef __cplusplus
template <class T, size_t N>
char (*ND_Win32CountofHelper_(T (&)[N]))[N];
#define _countof(array) (sizeof(*ND_Win32CountofHelper_(array)))
#else
#define _countof(array) (sizeof(array) / sizeof((array)[0]))
#endif
#ifndef ARRAYSIZE
#define ARRAYSIZE(array) _countof(array)
#endif

#define UNREFERENCED_PARAMETER(p) ((void)(p))
#define UNREFERENCED_LOCAL_VARIABLE(v) ((void)(v))

// min / max as on Windows (windef.h has them as macros unless NOMINMAX): here they are
// function templates, so std::min / std::max and <algorithm> keep working. Arguments of
// different arithmetic types compare in their common type, as the macros do.
#if defined(__cplusplus) && !defined(NOMINMAX)
template <class A, class B>
constexpr std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(b) < static_cast<C>(a) ? static_cast<C>(b) : static_cast<C>(a);
}
template <class A, class B>
constexpr std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b) : static_cast<C>(a);
}
#endif

// ---- Functions implemented by libnd2 -------------------------------------------------------
// DECLARED ONLY. These are not implemented in this header: libnd2 (nd2api/) implements them on
// Linux objects (events and completion ports are its own; the HANDLE that
// IND2Adapter::CreateOverlappedFile returns can be bound to a port). A program that calls them
// links libnd2. Semantics are Win32's, restricted to what ND programs use:
//   - CreateEvent(lpEventAttributes, bManualReset, bInitialState, lpName): an unnamed event
//     (attributes and name must be NULL); NULL on failure (GetLastError says why).
//     SetEvent / ResetEvent: TRUE on success.
//   - WaitForSingleObject(handle, ms): waits on an event or a thread (windows.h's CreateThread).
//     WAIT_OBJECT_0 when signalled (an auto-reset event is reset by the wait that returns; a
//     thread is signalled once it has exited), WAIT_TIMEOUT after `ms` milliseconds (INFINITE:
//     never), WAIT_FAILED (ERROR_INVALID_HANDLE) for a handle of another kind, or one closed
//     while the wait runs.
//   - WaitForMultipleObjects(n, handles, waitAll, ms): 1 to MAXIMUM_WAIT_OBJECTS events and
//     threads, mixed. waitAll FALSE: WAIT_OBJECT_0 + i for the lowest i signalled (only that one
//     is consumed). waitAll TRUE: WAIT_OBJECT_0 once all are signalled at the same time, every
//     auto-reset event among them consumed at once (none while any is not). WAIT_TIMEOUT, or
//     WAIT_FAILED: ERROR_INVALID_PARAMETER for a bad count or, with waitAll, one object named
//     twice; ERROR_INVALID_HANDLE as for WaitForSingleObject.
//   - CloseHandle: events, completion ports, threads (windows.h) and the adapter's overlapped
//     file. TRUE on success. Closing a thread's handle does not stop the thread.
//   - CreateIoCompletionPort(file, existingPort, key, threads): with file ==
//     INVALID_HANDLE_VALUE and existingPort == NULL creates a port; with an overlapped file
//     binds it to existingPort (or a new port) under `key`. Returns the port, NULL on failure.
//   - GetQueuedCompletionStatus(port, &bytes, &key, &pOverlapped, ms): dequeues one packet.
//     TRUE for a request that succeeded; FALSE with *pOverlapped set for one that failed
//     (GetLastError gives the Win32 error; IND2Overlapped::GetOverlappedResult the ND status);
//     FALSE with *pOverlapped == NULL and GetLastError() == WAIT_TIMEOUT on timeout.
//   - PostQueuedCompletionStatus(port, bytes, key, pOverlapped): queues a packet; TRUE.
//   - GetLastError: the calling thread's last Win32 error code.
EXTERN_C_START
HANDLE WINAPI CreateEventA(LPSECURITY_ATTRIBUTES lpEventAttributes, BOOL bManualReset,
                           BOOL bInitialState, LPCSTR lpName);
HANDLE WINAPI CreateEventW(LPSECURITY_ATTRIBUTES lpEventAttributes, BOOL bManualReset,
                           BOOL bInitialState, LPCWSTR lpName);
BOOL WINAPI SetEvent(HANDLE hEvent);
BOOL WINAPI ResetEvent(HANDLE hEvent);
DWORD WINAPI WaitForSingleObject(HANDLE hHandle, DWORD dwMilliseconds);
DWORD WINAPI WaitForMultipleObjects(DWORD nCount, const HANDLE* lpHandles, BOOL bWaitAll,
                                    DWORD dwMilliseconds);
BOOL WINAPI CloseHandle(HANDLE hObject);
HANDLE WINAPI CreateIoCompletionPort(HANDLE FileHandle, HANDLE ExistingCompletionPort,
                                     ULONG_PTR CompletionKey, DWORD NumberOfConcurrentThreads);
BOOL WINAPI GetQueuedCompletionStatus(HANDLE CompletionPort, LPDWORD lpNumberOfBytesTransferred,
                                      PULONG_PTR lpCompletionKey, LPOVERLAPPED* lpOverlapped,
                                      DWORD dwMilliseconds);
BOOL WINAPI PostQueuedCompletionStatus(HANDLE CompletionPort, DWORD dwNumberOfBytesTransferred,
                                       ULONG_PTR dwCompletionKey, LPOVERLAPPED lpOverlapped);
DWORD WINAPI GetLastError(void);
EXTERN_C_END

#ifdef UNICODE
#define CreateEvent CreateEventW
#else
#define CreateEvent CreateEventA
#endif

// ---- Layout checks ---------------------------------------------------------------------------
ND_WIN32_STATIC_ASSERT_(sizeof(ULONG) == 4 && sizeof(LONG) == 4 && sizeof(DWORD) == 4,
                        "ULONG, LONG, DWORD are 32-bit (Windows is LLP64)");
ND_WIN32_STATIC_ASSERT_(sizeof(HRESULT) == 4 && sizeof(BOOL) == 4, "HRESULT, BOOL are 32-bit");
ND_WIN32_STATIC_ASSERT_(sizeof(SIZE_T) == 8 && sizeof(ULONG_PTR) == 8 && sizeof(HANDLE) == 8,
                        "SIZE_T, ULONG_PTR, HANDLE are 64-bit");
ND_WIN32_STATIC_ASSERT_(sizeof(LARGE_INTEGER) == 8, "LARGE_INTEGER is 8 bytes");
ND_WIN32_STATIC_ASSERT_(sizeof(GUID) == 16, "GUID is 16 bytes");
ND_WIN32_STATIC_ASSERT_(sizeof(OVERLAPPED) == 32, "OVERLAPPED is 32 bytes");
ND_WIN32_STATIC_ASSERT_(offsetof(OVERLAPPED, Internal) == 0, "OVERLAPPED.Internal");
ND_WIN32_STATIC_ASSERT_(offsetof(OVERLAPPED, InternalHigh) == 8, "OVERLAPPED.InternalHigh");
ND_WIN32_STATIC_ASSERT_(offsetof(OVERLAPPED, Offset) == 16, "OVERLAPPED.Offset");
ND_WIN32_STATIC_ASSERT_(offsetof(OVERLAPPED, OffsetHigh) == 20, "OVERLAPPED.OffsetHigh");
ND_WIN32_STATIC_ASSERT_(offsetof(OVERLAPPED, Pointer) == 16, "OVERLAPPED.Pointer");
ND_WIN32_STATIC_ASSERT_(offsetof(OVERLAPPED, hEvent) == 24, "OVERLAPPED.hEvent");
ND_WIN32_STATIC_ASSERT_(sizeof(SOCKET_ADDRESS) == 16, "SOCKET_ADDRESS is 16 bytes");
ND_WIN32_STATIC_ASSERT_(sizeof(SOCKET_ADDRESS_LIST) == 24, "SOCKET_ADDRESS_LIST is 24 bytes");
ND_WIN32_STATIC_ASSERT_(offsetof(SOCKET_ADDRESS_LIST, Address) == 8,
                        "SOCKET_ADDRESS_LIST.Address");

#endif  // ND2API_ND_WIN32_H_
