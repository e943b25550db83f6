// SPDX-License-Identifier: MIT
// nddef.h: NetworkDirect 2 constants and structures.
//
// Values, field order and types: /work/shared/nd2-reference.md ("Flags", "Structures"), which
// takes them from Microsoft's nddef.h (microsoft/NetworkDirect); the structures' meaning is in
// /work/shared/nd2-spec/ (IND2Adapter.md: ND2_ADAPTER_INFO; IND2CompletionQueue.md: ND2_RESULT;
// IND2QueuePair.md: ND2_SGE). The layouts are checked at the end of this file.
#ifndef _NDDEF_H_
#define _NDDEF_H_

#include "nd_win32.h"

// The InfoVersion every client puts in ND2_ADAPTER_INFO before IND2Adapter::Query. (The
// IND2Adapter page says 1; real clients and providers use ND_VERSION_2.)
#define ND_VERSION_1 0x1
#define ND_VERSION_2 0x20000
#ifndef NDVER
#define NDVER ND_VERSION_2
#endif

// ND2_ADAPTER_INFO.AdapterFlags
#define ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED 0x00000001
#define ND_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED 0x00000004
#define ND_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED 0x00000008
#define ND_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED 0x00000100
#define ND_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED 0x00010000

// IND2CompletionQueue::Notify types
#define ND_CQ_NOTIFY_ERRORS 0
#define ND_CQ_NOTIFY_ANY 1
#define ND_CQ_NOTIFY_SOLICITED 2

// IND2MemoryRegion::Register flags. The remote-write flag includes local write (0x5 = 0x4 |
// ALLOW_LOCAL_WRITE).
#define ND_MR_FLAG_ALLOW_LOCAL_WRITE 0x00000001
#define ND_MR_FLAG_ALLOW_REMOTE_READ 0x00000002
#define ND_MR_FLAG_ALLOW_REMOTE_WRITE 0x00000005
#define ND_MR_FLAG_RDMA_READ_SINK 0x00000008
#define ND_MR_FLAG_DO_NOT_SECURE_VM 0x80000000

// IND2QueuePair request flags (Send, Bind, Invalidate, Read, Write; each method's page says
// which of them it takes). ALLOW_READ / ALLOW_WRITE are Bind's access rights.
#define ND_OP_FLAG_SILENT_SUCCESS 0x00000001
#define ND_OP_FLAG_READ_FENCE 0x00000002
#define ND_OP_FLAG_SEND_AND_SOLICIT_EVENT 0x00000004
#define ND_OP_FLAG_ALLOW_READ 0x00000008
#define ND_OP_FLAG_ALLOW_WRITE 0x00000010
#define ND_OP_FLAG_INLINE 0x00000020

// What IND2Adapter::Query fills in: the adapter's capabilities and limits.
typedef struct _ND2_ADAPTER_INFO {
  ULONG InfoVersion;  // set by the caller: ND_VERSION_2
  UINT16 VendorId;
  UINT16 DeviceId;
  UINT64 AdapterId;
  SIZE_T MaxRegistrationSize;
  SIZE_T MaxWindowSize;
  ULONG MaxInitiatorSge;
  ULONG MaxReceiveSge;
  ULONG MaxReadSge;
  ULONG MaxTransferLength;
  ULONG MaxInlineDataSize;
  ULONG MaxInboundReadLimit;
  ULONG MaxOutboundReadLimit;
  ULONG MaxReceiveQueueDepth;
  ULONG MaxInitiatorQueueDepth;
  ULONG MaxSharedReceiveQueueDepth;
  ULONG MaxCompletionQueueDepth;
  ULONG InlineRequestThreshold;
  ULONG LargeRequestThreshold;
  ULONG MaxCallerData;  // private data of Connect
  ULONG MaxCalleeData;  // private data of Accept and Reject
  ULONG AdapterFlags;   // ND_ADAPTER_FLAG_*
} ND2_ADAPTER_INFO;

// The kind of request an ND2_RESULT reports.
typedef enum _ND2_REQUEST_TYPE {
  Nd2RequestTypeReceive = 0,
  Nd2RequestTypeSend = 1,
  Nd2RequestTypeBind = 2,
  Nd2RequestTypeInvalidate = 3,
  Nd2RequestTypeRead = 4,
  Nd2RequestTypeWrite = 5
} ND2_REQUEST_TYPE;

// One completion, as IND2CompletionQueue::GetResults returns it.
typedef struct _ND2_RESULT {
  HRESULT Status;
  ULONG BytesTransferred;  // Receive only; undefined for the other requests
  VOID* QueuePairContext;  // the context given to CreateQueuePair / CreateQueuePairWithSrq
  VOID* RequestContext;    // the context given to the request
  ND2_REQUEST_TYPE RequestType;
} ND2_RESULT;

// One scatter/gather entry: a buffer inside the registered memory whose local token
// (IND2MemoryRegion::GetLocalToken) is MemoryRegionToken. With ND_OP_FLAG_INLINE the buffer
// may be outside any region and the token is ignored.
typedef struct _ND2_SGE {
  VOID* Buffer;
  ULONG BufferLength;
  UINT32 MemoryRegionToken;
} ND2_SGE;

// ---- Layout checks ----------------------------------------------------------------------------
ND_WIN32_STATIC_ASSERT_(sizeof(ND2_REQUEST_TYPE) == 4, "ND2_REQUEST_TYPE is 4 bytes");

ND_WIN32_STATIC_ASSERT_(sizeof(ND2_RESULT) == 32, "ND2_RESULT is 32 bytes");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_RESULT, Status) == 0, "ND2_RESULT.Status");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_RESULT, BytesTransferred) == 4,
                        "ND2_RESULT.BytesTransferred");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_RESULT, QueuePairContext) == 8,
                        "ND2_RESULT.QueuePairContext");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_RESULT, RequestContext) == 16, "ND2_RESULT.RequestContext");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_RESULT, RequestType) == 24, "ND2_RESULT.RequestType");

ND_WIN32_STATIC_ASSERT_(sizeof(ND2_SGE) == 16, "ND2_SGE is 16 bytes");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_SGE, Buffer) == 0, "ND2_SGE.Buffer");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_SGE, BufferLength) == 8, "ND2_SGE.BufferLength");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_SGE, MemoryRegionToken) == 12, "ND2_SGE.MemoryRegionToken");

ND_WIN32_STATIC_ASSERT_(sizeof(ND2_ADAPTER_INFO) == 96, "ND2_ADAPTER_INFO is 96 bytes");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_ADAPTER_INFO, InfoVersion) == 0, "InfoVersion");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_ADAPTER_INFO, VendorId) == 4, "VendorId");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_ADAPTER_INFO, DeviceId) == 6, "DeviceId");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_ADAPTER_INFO, AdapterId) == 8, "AdapterId");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_ADAPTER_INFO, MaxRegistrationSize) == 16,
                        "MaxRegistrationSize");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_ADAPTER_INFO, MaxWindowSize) == 24, "MaxWindowSize");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_ADAPTER_INFO, MaxInitiatorSge) == 32, "MaxInitiatorSge");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_ADAPTER_INFO, MaxTransferLength) == 44,
                        "MaxTransferLength");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_ADAPTER_INFO, MaxCompletionQueueDepth) == 72,
                        "MaxCompletionQueueDepth");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_ADAPTER_INFO, MaxCallerData) == 84, "MaxCallerData");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_ADAPTER_INFO, MaxCalleeData) == 88, "MaxCalleeData");
ND_WIN32_STATIC_ASSERT_(offsetof(ND2_ADAPTER_INFO, AdapterFlags) == 92, "AdapterFlags");

#endif  // _NDDEF_H_
