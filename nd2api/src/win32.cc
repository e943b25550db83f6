// SPDX-License-Identifier: MIT
// win32.cc: the Win32 functions nd_win32.h declares (C linkage), on the objects of handle.h,
// plus the thread's last error and the NTSTATUS -> Win32 error mapping.
//
// Choices where Win32 leaves room or ND programs need less:
//   - CreateEvent: lpEventAttributes is ignored (nothing is inherited on Linux); a non-empty
//     name fails with ERROR_INVALID_PARAMETER (named events are cross-process; ND programs do
//     not use them). Success sets the last error to 0, as Windows does for unnamed events.
//   - WaitForSingleObject and WaitForMultipleObjects wait on events and threads only: any other
//     handle is WAIT_FAILED with ERROR_INVALID_HANDLE. An object closed while a thread waits on
//     it ends that wait with WAIT_FAILED / ERROR_INVALID_HANDLE (Windows would go on waiting on
//     a nameless object nobody can signal any more).
//   - GetQueuedCompletionStatus on a port closed while it waits: FALSE, *lpOverlapped NULL,
//     ERROR_ABANDONED_WAIT_0 (735), as Windows documents. lpNumberOfBytesTransferred,
//     lpCompletionKey and lpOverlapped are required: NULL ones give ERROR_INVALID_PARAMETER.
//     A failed request's error is NtStatusToWin32Error of its status (Windows'
//     RtlNtStatusToDosError); "failed" is !NT_SUCCESS, so warnings such as ND_BUFFER_OVERFLOW
//     (ERROR_MORE_DATA) return FALSE too, as on Windows. Packets from
//     PostQueuedCompletionStatus always return TRUE.
//   - CreateIoCompletionPort ignores NumberOfConcurrentThreads. A file already bound to a port
//     cannot be bound again (ERROR_INVALID_PARAMETER).
//   - Handles: the low two bits are ignored everywhere (Windows' tag bits; ndmrlat closes
//     OVERLAPPED::hEvent with its "no port" bit set).
#include <new>

#include "nd2api/src/handle.h"

namespace roce::nd2 {
namespace {

thread_local DWORD t_last_error = ERROR_SUCCESS;

// Win32 error codes used by the mapping (winerror.h values).
enum : DWORD {
  kErrInvalidFunction = 1,
  kErrInvalidHandle = 6,
  kErrNotEnoughMemory = 8,
  kErrNotReady = 21,
  kErrBadCommand = 22,
  kErrCrc = 23,
  kErrGenFailure = 31,
  kErrSharingViolation = 32,
  kErrNotSupported = 50,
  kErrRemNotList = 51,
  kErrDupName = 52,
  kErrUnexpNetErr = 59,
  kErrNetnameDeleted = 64,
  kErrBadNetName = 67,
  kErrTooManyNames = 68,
  kErrInvalidParameter = 87,
  kErrSemTimeout = 121,
  kErrBusy = 170,
  kErrMoreData = 234,
  kErrNoMoreItems = 259,
  kErrOperationAborted = 995,
  kErrNoAccess = 998,
  kErrIoPending = 997,
  kErrIoDevice = 1117,
  kErrConnectionRefused = 1225,
  kErrAddressAlreadyAssociated = 1227,
  kErrConnectionInvalid = 1229,
  kErrConnectionActive = 1230,
  kErrNetworkUnreachable = 1231,
  kErrHostUnreachable = 1232,
  kErrRequestAborted = 1235,
  kErrConnectionAborted = 1236,
  kErrInternalError = 1359,
  kErrNoSystemResources = 1450,
  kErrTimeout = 1460,
  kErrDeviceRemoved = 1617,
  kErrInvalidUserBuffer = 1784,
};

HANDLE CreateEventCommon(BOOL manual_reset, BOOL initial_state, bool named) {
  if (named) {
    SetLastError(ERROR_INVALID_PARAMETER);
    return nullptr;
  }
  std::shared_ptr<Event> event;
  try {
    event = std::make_shared<Event>(manual_reset != FALSE, initial_state != FALSE);
  } catch (const std::bad_alloc&) {
    SetLastError(ERROR_NOT_ENOUGH_MEMORY);
    return nullptr;
  }
  HANDLE h = RegisterHandle(std::move(event));
  if (h != nullptr) SetLastError(ERROR_SUCCESS);
  return h;
}

}  // namespace

void SetLastError(DWORD error) { t_last_error = error; }

DWORD NtStatusToWin32Error(HRESULT status) {
  uint32_t s = static_cast<uint32_t>(status);
  if (s == 0) return ERROR_SUCCESS;
  if ((s & 0x20000000u) != 0) return s;                          // customer codes: as they are
  if ((s & 0xF0000000u) == 0xD0000000u) s &= ~0x10000000u;       // 0xD... is 0xC...
  switch (s) {
    case 0x00000102: return kErrTimeout;                          // STATUS_TIMEOUT
    case 0x00000103: return kErrIoPending;                        // STATUS_PENDING
    case 0x80000005: return kErrMoreData;                         // ND_BUFFER_OVERFLOW
    case 0x80000011: return kErrBusy;                             // ND_DEVICE_BUSY
    case 0x8000001A: return kErrNoMoreItems;                      // ND_NO_MORE_ENTRIES
    case 0xC0000001: return kErrGenFailure;                       // ND_UNSUCCESSFUL
    case 0xC0000005: return kErrNoAccess;                         // ND_ACCESS_VIOLATION
    case 0xC0000008: return kErrInvalidHandle;                    // ND_INVALID_HANDLE
    case 0xC000000D: return kErrInvalidParameter;                 // ND_INVALID_PARAMETER
    case 0xC0000010: return kErrInvalidFunction;                  // ND_INVALID_DEVICE_REQUEST
    case 0xC0000017: return kErrNotEnoughMemory;                  // ND_NO_MEMORY
    case 0xC0000030: return kErrInvalidParameter;                 // ND_INVALID_PARAMETER_MIX
    case 0xC000003C: return kErrIoDevice;                         // ND_DATA_OVERRUN
    case 0xC000003E: return kErrCrc;                              // STATUS_DATA_ERROR
    case 0xC0000043: return kErrSharingViolation;                 // ND_SHARING_VIOLATION
    case 0xC000009A: return kErrNoSystemResources;                // ND_INSUFFICIENT_RESOURCES
    case 0xC00000A3: return kErrNotReady;                         // ND_DEVICE_NOT_READY
    case 0xC00000B5: return kErrSemTimeout;                       // ND_IO_TIMEOUT
    case 0xC00000BB: return kErrNotSupported;                     // ND_NOT_SUPPORTED
    case 0xC00000CC: return kErrBadNetName;                       // STATUS_BAD_NETWORK_NAME
    case 0xC00000E5: return kErrInternalError;                    // ND_INTERNAL_ERROR
    case 0xC0000120: return kErrOperationAborted;                 // ND_CANCELED
    case 0xC000013D: return kErrRemNotList;                       // ND_REMOTE_ERROR
    case 0xC0000141: return kErrUnexpNetErr;                      // ND_INVALID_ADDRESS
    case 0xC0000184: return kErrBadCommand;                       // ND_INVALID_DEVICE_STATE
    case 0xC0000206: return kErrInvalidUserBuffer;                // ND_INVALID_BUFFER_SIZE
    case 0xC0000209: return kErrTooManyNames;                     // ND_TOO_MANY_ADDRESSES
    case 0xC000020A: return kErrDupName;                          // ND_ADDRESS_ALREADY_EXISTS
    case 0xC000020C: return kErrNetnameDeleted;                   // STATUS_CONNECTION_DISCONNECTED
    case 0xC0000236: return kErrConnectionRefused;                // ND_CONNECTION_REFUSED
    case 0xC0000238: return kErrAddressAlreadyAssociated;         // STATUS_ADDRESS_ALREADY_ASSOCIATED
    case 0xC000023A: return kErrConnectionInvalid;                // ND_CONNECTION_INVALID
    case 0xC000023B: return kErrConnectionActive;                 // ND_CONNECTION_ACTIVE
    case 0xC000023C: return kErrNetworkUnreachable;               // ND_NETWORK_UNREACHABLE
    case 0xC000023D: return kErrHostUnreachable;                  // ND_HOST_UNREACHABLE
    case 0xC0000240: return kErrRequestAborted;                   // STATUS_REQUEST_ABORTED
    case 0xC0000241: return kErrConnectionAborted;                // ND_CONNECTION_ABORTED
    case 0xC00002B6: return kErrDeviceRemoved;                    // ND_DEVICE_REMOVED
    default: break;
  }
  if (s >= 0xC00000EFu && s <= 0xC00000FAu) return kErrInvalidParameter;  // _PARAMETER_1..12
  if ((s >> 16) == 0x8007u || (s >> 16) == 0xC007u) return s & 0xFFFFu;   // wrapped Win32 codes
  return kErrorMrMidNotFound;
}

}  // namespace roce::nd2

using roce::nd2::CompletionPacket;
using roce::nd2::Event;
using roce::nd2::LookupHandleAs;
using roce::nd2::OverlappedFile;
using roce::nd2::SetLastError;
using roce::nd2::Waitable;
using roce::nd2::WaitOutcome;

extern "C" {

DWORD WINAPI GetLastError(void) { return roce::nd2::t_last_error; }

HANDLE WINAPI CreateEventA(LPSECURITY_ATTRIBUTES /*lpEventAttributes*/, BOOL bManualReset,
                           BOOL bInitialState, LPCSTR lpName) {
  return roce::nd2::CreateEventCommon(bManualReset, bInitialState,
                                      lpName != nullptr && lpName[0] != '\0');
}

HANDLE WINAPI CreateEventW(LPSECURITY_ATTRIBUTES /*lpEventAttributes*/, BOOL bManualReset,
                           BOOL bInitialState, LPCWSTR lpName) {
  return roce::nd2::CreateEventCommon(bManualReset, bInitialState,
                                      lpName != nullptr && lpName[0] != L'\0');
}

BOOL WINAPI SetEvent(HANDLE hEvent) {
  std::shared_ptr<Event> event = LookupHandleAs<Event>(hEvent);
  if (!event) {
    SetLastError(ERROR_INVALID_HANDLE);
    return FALSE;
  }
  event->Set();
  return TRUE;
}

BOOL WINAPI ResetEvent(HANDLE hEvent) {
  std::shared_ptr<Event> event = LookupHandleAs<Event>(hEvent);
  if (!event) {
    SetLastError(ERROR_INVALID_HANDLE);
    return FALSE;
  }
  event->Reset();
  return TRUE;
}

DWORD WINAPI WaitForSingleObject(HANDLE hHandle, DWORD dwMilliseconds) {
  std::shared_ptr<Waitable> object = LookupHandleAs<Waitable>(hHandle);
  if (!object) {
    SetLastError(ERROR_INVALID_HANDLE);
    return WAIT_FAILED;
  }
  switch (object->Wait(dwMilliseconds)) {
    case WaitOutcome::kReady:
      return WAIT_OBJECT_0;
    case WaitOutcome::kTimeout:
      return WAIT_TIMEOUT;
    case WaitOutcome::kClosed:
      break;
  }
  SetLastError(ERROR_INVALID_HANDLE);
  return WAIT_FAILED;
}

DWORD WINAPI WaitForMultipleObjects(DWORD nCount, const HANDLE* lpHandles, BOOL bWaitAll,
                                    DWORD dwMilliseconds) {
  if (nCount == 0 || nCount > MAXIMUM_WAIT_OBJECTS || lpHandles == nullptr) {
    SetLastError(ERROR_INVALID_PARAMETER);
    return WAIT_FAILED;
  }
  std::shared_ptr<Waitable> objects[MAXIMUM_WAIT_OBJECTS];
  for (DWORD i = 0; i < nCount; ++i) {
    objects[i] = LookupHandleAs<Waitable>(lpHandles[i]);
    if (!objects[i]) {
      SetLastError(ERROR_INVALID_HANDLE);
      return WAIT_FAILED;
    }
    if (bWaitAll) {
      for (DWORD j = 0; j < i; ++j) {
        if (objects[j] == objects[i]) {
          SetLastError(ERROR_INVALID_PARAMETER);  // Windows: a duplicate in a wait-all
          return WAIT_FAILED;
        }
      }
    }
  }
  return roce::nd2::WaitForMultiple(objects, nCount, bWaitAll != FALSE, dwMilliseconds);
}

BOOL WINAPI CloseHandle(HANDLE hObject) {
  return roce::nd2::CloseHandleObject(hObject) ? TRUE : FALSE;
}

HANDLE WINAPI CreateIoCompletionPort(HANDLE FileHandle, HANDLE ExistingCompletionPort,
                                     ULONG_PTR CompletionKey,
                                     DWORD /*NumberOfConcurrentThreads*/) {
  std::shared_ptr<OverlappedFile> file;
  if (FileHandle != INVALID_HANDLE_VALUE) {
    file = LookupHandleAs<OverlappedFile>(FileHandle);
    if (!file) {
      SetLastError(ERROR_INVALID_HANDLE);
      return nullptr;
    }
  } else if (ExistingCompletionPort != nullptr) {
    SetLastError(ERROR_INVALID_PARAMETER);  // nothing to bind to an existing port
    return nullptr;
  }

  std::shared_ptr<roce::nd2::CompletionPort> port;
  HANDLE port_handle = ExistingCompletionPort;
  if (ExistingCompletionPort != nullptr) {
    port = LookupHandleAs<roce::nd2::CompletionPort>(ExistingCompletionPort);
    if (!port) {
      SetLastError(ERROR_INVALID_HANDLE);
      return nullptr;
    }
  } else {
    try {
      port = std::make_shared<roce::nd2::CompletionPort>();
    } catch (const std::bad_alloc&) {
      SetLastError(ERROR_NOT_ENOUGH_MEMORY);
      return nullptr;
    }
    port_handle = roce::nd2::RegisterHandle(port);
    if (port_handle == nullptr) return nullptr;
  }

  if (file && !file->Associate(port, CompletionKey)) {
    if (ExistingCompletionPort == nullptr) roce::nd2::CloseHandleObject(port_handle);
    SetLastError(ERROR_INVALID_PARAMETER);
    return nullptr;
  }
  return port_handle;
}

BOOL WINAPI GetQueuedCompletionStatus(HANDLE CompletionPort, LPDWORD lpNumberOfBytesTransferred,
                                      PULONG_PTR lpCompletionKey, LPOVERLAPPED* lpOverlapped,
                                      DWORD dwMilliseconds) {
  if (lpOverlapped != nullptr) *lpOverlapped = nullptr;
  if (lpNumberOfBytesTransferred == nullptr || lpCompletionKey == nullptr ||
      lpOverlapped == nullptr) {
    SetLastError(ERROR_INVALID_PARAMETER);
    return FALSE;
  }
  std::shared_ptr<roce::nd2::CompletionPort> port =
      LookupHandleAs<roce::nd2::CompletionPort>(CompletionPort);
  if (!port) {
    SetLastError(ERROR_INVALID_HANDLE);
    return FALSE;
  }
  CompletionPacket packet;
  switch (port->Dequeue(dwMilliseconds, &packet)) {
    case WaitOutcome::kReady:
      break;
    case WaitOutcome::kTimeout:
      SetLastError(WAIT_TIMEOUT);
      return FALSE;
    case WaitOutcome::kClosed:
      SetLastError(roce::nd2::kErrorAbandonedWait0);
      return FALSE;
  }
  *lpNumberOfBytesTransferred = packet.bytes;
  *lpCompletionKey = packet.key;
  *lpOverlapped = packet.overlapped;
  if (NT_SUCCESS(packet.status)) return TRUE;
  SetLastError(roce::nd2::NtStatusToWin32Error(packet.status));
  return FALSE;
}

BOOL WINAPI PostQueuedCompletionStatus(HANDLE CompletionPort, DWORD dwNumberOfBytesTransferred,
                                       ULONG_PTR dwCompletionKey, LPOVERLAPPED lpOverlapped) {
  std::shared_ptr<roce::nd2::CompletionPort> port =
      LookupHandleAs<roce::nd2::CompletionPort>(CompletionPort);
  if (!port) {
    SetLastError(ERROR_INVALID_HANDLE);
    return FALSE;
  }
  try {
    port->Post(CompletionPacket{dwNumberOfBytesTransferred, dwCompletionKey, lpOverlapped, 0});
  } catch (const std::bad_alloc&) {
    SetLastError(ERROR_NOT_ENOUGH_MEMORY);
    return FALSE;
  }
  return TRUE;
}

}  // extern "C"
