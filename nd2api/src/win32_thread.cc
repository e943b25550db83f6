// SPDX-License-Identifier: MIT
// win32_thread.cc: windows.h's threads (C linkage): CreateThread, ResumeThread,
// GetExitCodeThread, ExitThread, GetCurrentThreadId, GetCurrentProcessId, and process.h's
// _beginthreadex / _endthreadex / _getpid. A thread is a detached pthread; its HANDLE names a
// Thread (handle.h) in the handle table, which WaitForSingleObject / WaitForMultipleObjects wait
// on and which outlives the thread (and the thread the HANDLE).
//
// Choices:
//   - dwStackSize: 0 is glibc's default stack (the RLIMIT_STACK size, usually 8 MiB, larger
//     than Windows' 1 MiB). A larger request is honoured (rounded up to pages); a smaller one
//     gets the default, as Windows never gives less than the image's reservation.
//   - dwCreationFlags: CREATE_SUSPENDED holds the thread before its routine until ResumeThread
//     (no SuspendThread: Linux cannot stop a running thread that way);
//     STACK_SIZE_PARAM_IS_A_RESERVATION is accepted; other bits are ignored.
//   - Thread ids are Linux's thread ids (gettid), which is what GetCurrentThreadId returns; the
//     creator waits for the new thread to report it (microseconds), so *lpThreadId is set on
//     return, as on Windows.
//   - ExitThread ends the calling thread with pthread_exit (C++ destructors run: glibc unwinds);
//     a CreateThread thread's exit code is then ExitThread's argument.
#include <pthread.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <new>

#include "nd2api/src/handle.h"

// This file implements Win32 functions with glibc's: the CRT names keep their glibc meaning.
#define ND_WIN32_CRT_NO_STD_NAMES
#include "windows.h"

namespace roce::nd2 {
namespace {

thread_local DWORD t_exit_code = Thread::kStillActive;

struct StartBlock {
  std::shared_ptr<Thread> thread;
  LPTHREAD_START_ROUTINE routine;
  LPVOID parameter;
};

void* ThreadMain(void* arg) {
  StartBlock* block = static_cast<StartBlock*>(arg);
  std::shared_ptr<Thread> thread = std::move(block->thread);
  const LPTHREAD_START_ROUTINE routine = block->routine;
  LPVOID parameter = block->parameter;
  delete block;

  thread->Publish(static_cast<DWORD>(gettid()));
  thread->WaitResumed();
  // Runs on return and on ExitThread's unwinding alike.
  struct Finisher {
    Thread* thread;
    ~Finisher() { thread->Finish(t_exit_code); }
  } finisher{thread.get()};
  t_exit_code = routine(parameter);
  return nullptr;
}

size_t StackSize(SIZE_T requested, const pthread_attr_t& attr) {
  size_t fallback = 0;
  pthread_attr_getstacksize(&attr, &fallback);
  if (requested == 0) return fallback;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t rounded = (requested + page - 1) / page * page;
  return std::max(rounded, fallback);
}

}  // namespace
}  // namespace roce::nd2

using roce::nd2::Thread;

extern "C" {

HANDLE WINAPI CreateThread(LPSECURITY_ATTRIBUTES /*lpThreadAttributes*/, SIZE_T dwStackSize,
                           LPTHREAD_START_ROUTINE lpStartAddress, LPVOID lpParameter,
                           DWORD dwCreationFlags, LPDWORD lpThreadId) {
  if (lpStartAddress == nullptr) {
    roce::nd2::SetLastError(ERROR_INVALID_PARAMETER);
    return nullptr;
  }
  std::shared_ptr<Thread> thread;
  roce::nd2::StartBlock* block = nullptr;
  try {
    thread = std::make_shared<Thread>();
    block = new roce::nd2::StartBlock{thread, lpStartAddress, lpParameter};
  } catch (const std::bad_alloc&) {
    roce::nd2::SetLastError(ERROR_NOT_ENOUGH_MEMORY);
    return nullptr;
  }
  if ((dwCreationFlags & CREATE_SUSPENDED) != 0) thread->SetSuspended();
  HANDLE handle = roce::nd2::RegisterHandle(thread);
  if (handle == nullptr) {
    delete block;
    return nullptr;
  }

  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, roce::nd2::StackSize(dwStackSize, attr));
  pthread_t tid;
  const int rc = pthread_create(&tid, &attr, roce::nd2::ThreadMain, block);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    delete block;
    roce::nd2::CloseHandleObject(handle);
    roce::nd2::SetLastError(rc == EAGAIN ? ERROR_NOT_ENOUGH_MEMORY : ERROR_INVALID_PARAMETER);
    return nullptr;
  }
  const DWORD id = thread->WaitStarted();
  if (lpThreadId != nullptr) *lpThreadId = id;
  return handle;
}

DWORD WINAPI ResumeThread(HANDLE hThread) {
  std::shared_ptr<Thread> thread = roce::nd2::LookupHandleAs<Thread>(hThread);
  if (!thread) {
    roce::nd2::SetLastError(ERROR_INVALID_HANDLE);
    return static_cast<DWORD>(-1);
  }
  return thread->Resume();
}

BOOL WINAPI GetExitCodeThread(HANDLE hThread, LPDWORD lpExitCode) {
  std::shared_ptr<Thread> thread = roce::nd2::LookupHandleAs<Thread>(hThread);
  if (!thread) {
    roce::nd2::SetLastError(ERROR_INVALID_HANDLE);
    return FALSE;
  }
  if (lpExitCode == nullptr) {
    roce::nd2::SetLastError(ERROR_INVALID_PARAMETER);
    return FALSE;
  }
  *lpExitCode = thread->exit_code();
  return TRUE;
}

void WINAPI ExitThread(DWORD dwExitCode) {
  roce::nd2::t_exit_code = dwExitCode;
  pthread_exit(nullptr);
}

DWORD WINAPI GetCurrentThreadId(void) { return static_cast<DWORD>(gettid()); }

DWORD WINAPI GetCurrentProcessId(void) { return static_cast<DWORD>(getpid()); }

uintptr_t _beginthreadex(void* security, unsigned stack_size,
                         unsigned(__stdcall* start_address)(void*), void* arglist,
                         unsigned initflag, unsigned* thrdaddr) {
  static_assert(sizeof(unsigned) == sizeof(DWORD), "the routine types are the same");
  DWORD id = 0;
  HANDLE h = CreateThread(static_cast<LPSECURITY_ATTRIBUTES>(security), stack_size,
                          start_address, arglist, initflag, &id);
  if (thrdaddr != nullptr) *thrdaddr = id;
  return reinterpret_cast<uintptr_t>(h);
}

void _endthreadex(unsigned retval) { ExitThread(retval); }

int _getpid(void) { return getpid(); }

}  // extern "C"
