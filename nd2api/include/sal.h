// SPDX-License-Identifier: MIT
// sal.h: Microsoft's source annotations. nd_win32.h defines them all as empty (the modern
// _In_ / _Out_ / ... names, and the legacy __in / __out ones unless ND_WIN32_NO_LEGACY_SAL);
// this header only brings it, for programs that include <sal.h> by name.
#ifndef ND2API_SAL_H_
#define ND2API_SAL_H_

#include "nd_win32.h"

#endif  // ND2API_SAL_H_
