// SPDX-License-Identifier: MIT
// initguid.h: on Windows, including this before a header makes its DEFINE_GUIDs definitions
// instead of declarations. In C++ the ND2 headers' DEFINE_GUID always defines (an inline
// variable), so this file only sets INITGUID, for C code and for programs that include it
// out of habit (ND providers do, before ndspi.h).
#ifndef INITGUID
#define INITGUID
#endif
