// SPDX-License-Identifier: MIT
// process.h: MSVC's thread and process functions, _beginthreadex, _endthreadex and _getpid,
// which windows.h declares (libnd2 implements them on CreateThread / ExitThread / getpid).
// Includes windows.h, so it brings the whole console layer, as tchar.h does.
#ifndef ND2API_PROCESS_H_
#define ND2API_PROCESS_H_

#include "windows.h"

#endif  // ND2API_PROCESS_H_
