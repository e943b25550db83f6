// SPDX-License-Identifier: MIT
// The public ND2 headers (nd2api/include) against the ND2 contract: every status, flag and IID
// value, the layouts, the Win32 types, the interfaces' methods (names, signatures, vtable
// order) and the helpers' signatures. The expected values are typed here by hand from
// /work/shared/nd2-reference.md and /work/shared/nd2-spec/*.md (IIDs as the reference writes
// them, in registry string form, parsed here), not copied from the headers. Only the public
// headers are included.
#include <ndspi.h>
#include <ndsupport.h>
#include <ndstatus.h>
#include <nddef.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace {

// ---- Status codes ------------------------------------------------------------------------------

struct StatusRow {
  const char* name;
  HRESULT actual;
  uint32_t expected;  // as written in nd2-reference.md
};
#define ROW(name, value) \
  StatusRow { #name, name, value }

// nd2-reference.md, "Status codes (HRESULT = NTSTATUS value of the same name)".
const StatusRow kNdStatus[] = {
    ROW(ND_SUCCESS, 0x00000000),
    ROW(ND_TIMEOUT, 0x00000102),
    ROW(ND_PENDING, 0x00000103),
    ROW(ND_BUFFER_OVERFLOW, 0x80000005),
    ROW(ND_DEVICE_BUSY, 0x80000011),
    ROW(ND_NO_MORE_ENTRIES, 0x8000001A),
    ROW(ND_UNSUCCESSFUL, 0xC0000001),
    ROW(ND_ACCESS_VIOLATION, 0xC0000005),
    ROW(ND_INVALID_HANDLE, 0xC0000008),
    ROW(ND_INVALID_PARAMETER, 0xC000000D),
    ROW(ND_INVALID_DEVICE_REQUEST, 0xC0000010),
    ROW(ND_NO_MEMORY, 0xC0000017),
    ROW(ND_INVALID_PARAMETER_MIX, 0xC0000030),
    ROW(ND_DATA_OVERRUN, 0xC000003C),
    ROW(ND_SHARING_VIOLATION, 0xC0000043),
    ROW(ND_INSUFFICIENT_RESOURCES, 0xC000009A),
    ROW(ND_DEVICE_NOT_READY, 0xC00000A3),
    ROW(ND_INTERNAL_ERROR, 0xC00000E5),
    ROW(ND_INVALID_PARAMETER_1, 0xC00000EF),
    ROW(ND_INVALID_PARAMETER_2, 0xC00000F0),
    ROW(ND_INVALID_PARAMETER_3, 0xC00000F1),
    ROW(ND_INVALID_PARAMETER_4, 0xC00000F2),
    ROW(ND_INVALID_PARAMETER_5, 0xC00000F3),
    ROW(ND_INVALID_PARAMETER_6, 0xC00000F4),
    ROW(ND_INVALID_PARAMETER_7, 0xC00000F5),
    ROW(ND_INVALID_PARAMETER_8, 0xC00000F6),
    ROW(ND_INVALID_PARAMETER_9, 0xC00000F7),
    ROW(ND_INVALID_PARAMETER_10, 0xC00000F8),
    ROW(ND_CANCELED, 0xC0000120),
    ROW(ND_REMOTE_ERROR, 0xC000013D),
    ROW(ND_INVALID_ADDRESS, 0xC0000141),
    ROW(ND_INVALID_DEVICE_STATE, 0xC0000184),
    ROW(ND_INVALID_BUFFER_SIZE, 0xC0000206),
    ROW(ND_TOO_MANY_ADDRESSES, 0xC0000209),
    ROW(ND_ADDRESS_ALREADY_EXISTS, 0xC000020A),
    ROW(ND_CONNECTION_REFUSED, 0xC0000236),
    ROW(ND_CONNECTION_INVALID, 0xC000023A),
    ROW(ND_CONNECTION_ACTIVE, 0xC000023B),
    ROW(ND_NETWORK_UNREACHABLE, 0xC000023C),
    ROW(ND_HOST_UNREACHABLE, 0xC000023D),
    ROW(ND_CONNECTION_ABORTED, 0xC0000241),
    ROW(ND_DEVICE_REMOVED, 0xC00002B6),
    ROW(ND_IO_TIMEOUT, 0xC00000B5),
    ROW(ND_NOT_SUPPORTED, 0xC00000BB),
};

// nd2-reference.md, "Plain NTSTATUS values real ND2 providers also return".
const StatusRow kPlainNtStatus[] = {
    ROW(STATUS_ADDRESS_ALREADY_ASSOCIATED, 0xC0000238),
    ROW(STATUS_BAD_NETWORK_NAME, 0xC00000CC),
    ROW(STATUS_CONNECTION_DISCONNECTED, 0xC000020C),
    ROW(STATUS_DATA_ERROR, 0xC000003E),
    ROW(STATUS_REQUEST_ABORTED, 0xC0000240),
};

// The NTSTATUS names of the ND codes (ndstatus.h repeats them; same values by definition).
const StatusRow kNtStatusTwins[] = {
    ROW(STATUS_SUCCESS, 0x00000000),
    ROW(STATUS_TIMEOUT, 0x00000102),
    ROW(STATUS_PENDING, 0x00000103),
    ROW(STATUS_BUFFER_OVERFLOW, 0x80000005),
    ROW(STATUS_DEVICE_BUSY, 0x80000011),
    ROW(STATUS_NO_MORE_ENTRIES, 0x8000001A),
    ROW(STATUS_UNSUCCESSFUL, 0xC0000001),
    ROW(STATUS_ACCESS_VIOLATION, 0xC0000005),
    ROW(STATUS_INVALID_HANDLE, 0xC0000008),
    ROW(STATUS_INVALID_PARAMETER, 0xC000000D),
    ROW(STATUS_INVALID_DEVICE_REQUEST, 0xC0000010),
    ROW(STATUS_NO_MEMORY, 0xC0000017),
    ROW(STATUS_INVALID_PARAMETER_MIX, 0xC0000030),
    ROW(STATUS_DATA_OVERRUN, 0xC000003C),
    ROW(STATUS_SHARING_VIOLATION, 0xC0000043),
    ROW(STATUS_INSUFFICIENT_RESOURCES, 0xC000009A),
    ROW(STATUS_DEVICE_NOT_READY, 0xC00000A3),
    ROW(STATUS_IO_TIMEOUT, 0xC00000B5),
    ROW(STATUS_NOT_SUPPORTED, 0xC00000BB),
    ROW(STATUS_INTERNAL_ERROR, 0xC00000E5),
    ROW(STATUS_INVALID_PARAMETER_1, 0xC00000EF),
    ROW(STATUS_INVALID_PARAMETER_2, 0xC00000F0),
    ROW(STATUS_INVALID_PARAMETER_3, 0xC00000F1),
    ROW(STATUS_INVALID_PARAMETER_4, 0xC00000F2),
    ROW(STATUS_INVALID_PARAMETER_5, 0xC00000F3),
    ROW(STATUS_INVALID_PARAMETER_6, 0xC00000F4),
    ROW(STATUS_INVALID_PARAMETER_7, 0xC00000F5),
    ROW(STATUS_INVALID_PARAMETER_8, 0xC00000F6),
    ROW(STATUS_INVALID_PARAMETER_9, 0xC00000F7),
    ROW(STATUS_INVALID_PARAMETER_10, 0xC00000F8),
    ROW(STATUS_CANCELLED, 0xC0000120),
    ROW(STATUS_INVALID_ADDRESS, 0xC0000141),
    ROW(STATUS_INVALID_DEVICE_STATE, 0xC0000184),
    ROW(STATUS_INVALID_BUFFER_SIZE, 0xC0000206),
    ROW(STATUS_TOO_MANY_ADDRESSES, 0xC0000209),
    ROW(STATUS_ADDRESS_ALREADY_EXISTS, 0xC000020A),
    ROW(STATUS_CONNECTION_REFUSED, 0xC0000236),
    ROW(STATUS_CONNECTION_INVALID, 0xC000023A),
    ROW(STATUS_CONNECTION_ACTIVE, 0xC000023B),
    ROW(STATUS_NETWORK_UNREACHABLE, 0xC000023C),
    ROW(STATUS_HOST_UNREACHABLE, 0xC000023D),
    ROW(STATUS_CONNECTION_ABORTED, 0xC0000241),
    ROW(STATUS_DEVICE_REMOVED, 0xC00002B6),
};

// COM and Win32 codes (Windows' winerror.h values).
const StatusRow kComCodes[] = {
    ROW(S_OK, 0x00000000),          ROW(S_FALSE, 0x00000001),
    ROW(E_NOTIMPL, 0x80004001),     ROW(E_NOINTERFACE, 0x80004002),
    ROW(E_POINTER, 0x80004003),     ROW(E_ABORT, 0x80004004),
    ROW(E_FAIL, 0x80004005),        ROW(E_UNEXPECTED, 0x8000FFFF),
    ROW(E_OUTOFMEMORY, 0x8007000E), ROW(E_INVALIDARG, 0x80070057),
};
#undef ROW

void ExpectRows(const StatusRow* rows, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(static_cast<uint32_t>(rows[i].actual), rows[i].expected) << rows[i].name;
    // The sign decides FAILED: severity error (0xC...) and warning (0x8...) are failures.
    EXPECT_EQ(FAILED(rows[i].actual), (rows[i].expected & 0x80000000u) != 0) << rows[i].name;
    EXPECT_EQ(SUCCEEDED(rows[i].actual), !FAILED(rows[i].actual)) << rows[i].name;
  }
}

TEST(Nd2Status, EveryNdCodeHasItsNtStatusValue) {
  ExpectRows(kNdStatus, std::size(kNdStatus));
  std::set<uint32_t> distinct;
  for (const auto& r : kNdStatus) distinct.insert(r.expected);
  EXPECT_EQ(distinct.size(), std::size(kNdStatus)) << "two ND_ names share a value";
}

TEST(Nd2Status, PlainNtStatusValuesProvidersReturn) {
  ExpectRows(kPlainNtStatus, std::size(kPlainNtStatus));
  ExpectRows(kNtStatusTwins, std::size(kNtStatusTwins));
  static_assert(std::is_same_v<decltype(STATUS_DATA_ERROR), NTSTATUS>);
  // A status from GetResults (an HRESULT) compares equal to the NTSTATUS of the same value.
  const HRESULT from_cq = static_cast<HRESULT>(0xC000003Eu);
  EXPECT_TRUE(from_cq == STATUS_DATA_ERROR);
  EXPECT_EQ(ND_CANCELED, STATUS_CANCELLED);
}

TEST(Nd2Status, TimeoutAndPendingAreSuccesses) {
  EXPECT_TRUE(SUCCEEDED(ND_TIMEOUT));
  EXPECT_TRUE(SUCCEEDED(ND_PENDING));
  EXPECT_TRUE(FAILED(ND_BUFFER_OVERFLOW));
  EXPECT_TRUE(FAILED(ND_NO_MORE_ENTRIES));
  static_assert(std::is_same_v<decltype(ND_PENDING), HRESULT>);
  // Usable as case labels (constant expressions).
  switch (ND_CANCELED) {
    case ND_SUCCESS:
      FAIL();
      break;
    case ND_CANCELED:
      break;
    default:
      FAIL();
  }
}

TEST(Nd2Status, ComCodesAndHresultFromWin32) {
  ExpectRows(kComCodes, std::size(kComCodes));
  EXPECT_EQ(HRESULT_FROM_WIN32(ERROR_SUCCESS), S_OK);
  EXPECT_EQ(static_cast<uint32_t>(HRESULT_FROM_WIN32(ERROR_INVALID_PARAMETER)), 0x80070057u);
  EXPECT_EQ(HRESULT_FROM_WIN32(ERROR_INVALID_PARAMETER), E_INVALIDARG);
  EXPECT_EQ(static_cast<uint32_t>(HRESULT_FROM_WIN32(ERROR_IO_PENDING)), 0x800703E5u);
  EXPECT_EQ(ERROR_OPERATION_ABORTED, 995u);
  EXPECT_EQ(ERROR_IO_PENDING, 997u);
  EXPECT_EQ(INFINITE, 0xFFFFFFFFu);
  EXPECT_EQ(WAIT_OBJECT_0, 0u);
  EXPECT_EQ(WAIT_TIMEOUT, 258u);
  EXPECT_EQ(WAIT_FAILED, 0xFFFFFFFFu);
}

// ---- Flags and constants -----------------------------------------------------------------------

TEST(Nd2Def, FlagsAndConstants) {
  // nd2-reference.md, "Flags".
  EXPECT_EQ(ND_VERSION_2, 0x20000);
  EXPECT_EQ(ND_VERSION_1, 0x1);
  EXPECT_EQ(NDVER, ND_VERSION_2);
  EXPECT_EQ(ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED, 0x1);
  EXPECT_EQ(ND_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED, 0x4);
  EXPECT_EQ(ND_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED, 0x8);
  EXPECT_EQ(ND_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED, 0x100);
  EXPECT_EQ(ND_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED, 0x10000);
  EXPECT_EQ(ND_CQ_NOTIFY_ERRORS, 0);
  EXPECT_EQ(ND_CQ_NOTIFY_ANY, 1);
  EXPECT_EQ(ND_CQ_NOTIFY_SOLICITED, 2);
  EXPECT_EQ(ND_MR_FLAG_ALLOW_LOCAL_WRITE, 0x1);
  EXPECT_EQ(ND_MR_FLAG_ALLOW_REMOTE_READ, 0x2);
  EXPECT_EQ(ND_MR_FLAG_ALLOW_REMOTE_WRITE, 0x5);
  EXPECT_EQ(ND_MR_FLAG_ALLOW_REMOTE_WRITE & ND_MR_FLAG_ALLOW_LOCAL_WRITE,
            ND_MR_FLAG_ALLOW_LOCAL_WRITE);  // remote write includes local write
  EXPECT_EQ(ND_MR_FLAG_RDMA_READ_SINK, 0x8);
  EXPECT_EQ(static_cast<uint32_t>(ND_MR_FLAG_DO_NOT_SECURE_VM), 0x80000000u);
  EXPECT_EQ(ND_OP_FLAG_SILENT_SUCCESS, 0x1);
  EXPECT_EQ(ND_OP_FLAG_READ_FENCE, 0x2);
  EXPECT_EQ(ND_OP_FLAG_SEND_AND_SOLICIT_EVENT, 0x4);
  EXPECT_EQ(ND_OP_FLAG_ALLOW_READ, 0x8);
  EXPECT_EQ(ND_OP_FLAG_ALLOW_WRITE, 0x10);
  EXPECT_EQ(ND_OP_FLAG_INLINE, 0x20);
  // Microsoft's ndsupport.h.
  EXPECT_EQ(ND_QUERY_EXCLUDE_EMULATOR_ADDRESSES, 0x1);
  EXPECT_EQ(ND_QUERY_EXCLUDE_NDv1_ADDRESSES, 0x2);
  EXPECT_EQ(ND_QUERY_EXCLUDE_NDv2_ADDRESSES, 0x4);
}

TEST(Nd2Def, RequestTypes) {
  // nd2-reference.md: Receive 0, Send 1, Bind 2, Invalidate 3, Read 4, Write 5.
  EXPECT_EQ(static_cast<int>(Nd2RequestTypeReceive), 0);
  EXPECT_EQ(static_cast<int>(Nd2RequestTypeSend), 1);
  EXPECT_EQ(static_cast<int>(Nd2RequestTypeBind), 2);
  EXPECT_EQ(static_cast<int>(Nd2RequestTypeInvalidate), 3);
  EXPECT_EQ(static_cast<int>(Nd2RequestTypeRead), 4);
  EXPECT_EQ(static_cast<int>(Nd2RequestTypeWrite), 5);
}

// ---- Types and layouts -------------------------------------------------------------------------

TEST(Nd2Layout, WindowsTypesHaveWindowsSizes) {
  EXPECT_EQ(sizeof(ULONG), 4u);
  EXPECT_EQ(sizeof(LONG), 4u);
  EXPECT_EQ(sizeof(DWORD), 4u);
  EXPECT_EQ(sizeof(HRESULT), 4u);
  EXPECT_EQ(sizeof(NTSTATUS), 4u);
  EXPECT_EQ(sizeof(BOOL), 4u);
  EXPECT_EQ(sizeof(INT), 4u);
  EXPECT_EQ(sizeof(INT32), 4u);
  EXPECT_EQ(sizeof(UINT32), 4u);
  EXPECT_EQ(sizeof(USHORT), 2u);
  EXPECT_EQ(sizeof(UINT16), 2u);
  EXPECT_EQ(sizeof(BYTE), 1u);
  EXPECT_EQ(sizeof(UINT8), 1u);
  EXPECT_EQ(sizeof(UINT64), 8u);
  EXPECT_EQ(sizeof(LONGLONG), 8u);
  EXPECT_EQ(sizeof(SIZE_T), 8u);
  EXPECT_EQ(sizeof(ULONG_PTR), 8u);
  EXPECT_EQ(sizeof(KAFFINITY), 8u);
  EXPECT_EQ(sizeof(LARGE_INTEGER), 8u);
  EXPECT_TRUE(std::is_signed_v<HRESULT>);
  EXPECT_TRUE(std::is_signed_v<LONG>);
  EXPECT_TRUE(std::is_unsigned_v<ULONG>);
  EXPECT_TRUE(std::is_unsigned_v<DWORD>);
  EXPECT_TRUE(std::is_unsigned_v<SIZE_T>);
  EXPECT_TRUE((std::is_same_v<SIZE_T, size_t>));
  EXPECT_TRUE(std::is_pointer_v<HANDLE>);
  EXPECT_TRUE(std::is_pointer_v<PVOID>);
  EXPECT_TRUE(std::is_pointer_v<LPVOID>);
  EXPECT_TRUE((std::is_same_v<WCHAR, wchar_t>));
  EXPECT_TRUE((std::is_same_v<REFIID, const GUID&>));
  EXPECT_TRUE((std::is_same_v<IID, GUID>));
  EXPECT_EQ(INVALID_HANDLE_VALUE, reinterpret_cast<HANDLE>(~uintptr_t{0}));
  EXPECT_EQ(TRUE, 1);
  EXPECT_EQ(FALSE, 0);
  LARGE_INTEGER li;
  li.QuadPart = 0x1122334455667788;
  EXPECT_EQ(li.LowPart, 0x55667788u);
  EXPECT_EQ(li.u.HighPart, 0x11223344);
}

TEST(Nd2Layout, Nd2Structures) {
  EXPECT_EQ(sizeof(ND2_RESULT), 32u);
  EXPECT_EQ(offsetof(ND2_RESULT, Status), 0u);
  EXPECT_EQ(offsetof(ND2_RESULT, BytesTransferred), 4u);
  EXPECT_EQ(offsetof(ND2_RESULT, QueuePairContext), 8u);
  EXPECT_EQ(offsetof(ND2_RESULT, RequestContext), 16u);
  EXPECT_EQ(offsetof(ND2_RESULT, RequestType), 24u);

  EXPECT_EQ(sizeof(ND2_SGE), 16u);
  EXPECT_EQ(offsetof(ND2_SGE, Buffer), 0u);
  EXPECT_EQ(offsetof(ND2_SGE, BufferLength), 8u);
  EXPECT_EQ(offsetof(ND2_SGE, MemoryRegionToken), 12u);

  // ND2_ADAPTER_INFO: ULONG, two UINT16, UINT64, two SIZE_T, then 16 ULONGs.
  EXPECT_EQ(sizeof(ND2_ADAPTER_INFO), 96u);
  EXPECT_EQ(offsetof(ND2_ADAPTER_INFO, InfoVersion), 0u);
  EXPECT_EQ(offsetof(ND2_ADAPTER_INFO, VendorId), 4u);
  EXPECT_EQ(offsetof(ND2_ADAPTER_INFO, DeviceId), 6u);
  EXPECT_EQ(offsetof(ND2_ADAPTER_INFO, AdapterId), 8u);
  EXPECT_EQ(offsetof(ND2_ADAPTER_INFO, MaxRegistrationSize), 16u);
  EXPECT_EQ(offsetof(ND2_ADAPTER_INFO, MaxWindowSize), 24u);
  const size_t ulongs[] = {
      offsetof(ND2_ADAPTER_INFO, MaxInitiatorSge),
      offsetof(ND2_ADAPTER_INFO, MaxReceiveSge),
      offsetof(ND2_ADAPTER_INFO, MaxReadSge),
      offsetof(ND2_ADAPTER_INFO, MaxTransferLength),
      offsetof(ND2_ADAPTER_INFO, MaxInlineDataSize),
      offsetof(ND2_ADAPTER_INFO, MaxInboundReadLimit),
      offsetof(ND2_ADAPTER_INFO, MaxOutboundReadLimit),
      offsetof(ND2_ADAPTER_INFO, MaxReceiveQueueDepth),
      offsetof(ND2_ADAPTER_INFO, MaxInitiatorQueueDepth),
      offsetof(ND2_ADAPTER_INFO, MaxSharedReceiveQueueDepth),
      offsetof(ND2_ADAPTER_INFO, MaxCompletionQueueDepth),
      offsetof(ND2_ADAPTER_INFO, InlineRequestThreshold),
      offsetof(ND2_ADAPTER_INFO, LargeRequestThreshold),
      offsetof(ND2_ADAPTER_INFO, MaxCallerData),
      offsetof(ND2_ADAPTER_INFO, MaxCalleeData),
      offsetof(ND2_ADAPTER_INFO, AdapterFlags),
  };
  for (size_t i = 0; i < std::size(ulongs); ++i) EXPECT_EQ(ulongs[i], 32u + 4 * i) << i;

  EXPECT_TRUE((std::is_same_v<decltype(ND2_RESULT::Status), HRESULT>));
  EXPECT_TRUE((std::is_same_v<decltype(ND2_RESULT::RequestType), ND2_REQUEST_TYPE>));
  EXPECT_TRUE((std::is_same_v<decltype(ND2_SGE::MemoryRegionToken), UINT32>));
  EXPECT_TRUE((std::is_same_v<decltype(ND2_ADAPTER_INFO::MaxRegistrationSize), SIZE_T>));
  EXPECT_TRUE((std::is_same_v<decltype(ND2_ADAPTER_INFO::AdapterId), UINT64>));
}

TEST(Nd2Layout, Win32Structures) {
  EXPECT_EQ(sizeof(OVERLAPPED), 32u);
  EXPECT_EQ(offsetof(OVERLAPPED, Internal), 0u);
  EXPECT_EQ(offsetof(OVERLAPPED, InternalHigh), 8u);
  EXPECT_EQ(offsetof(OVERLAPPED, Offset), 16u);
  EXPECT_EQ(offsetof(OVERLAPPED, OffsetHigh), 20u);
  EXPECT_EQ(offsetof(OVERLAPPED, Pointer), 16u);
  EXPECT_EQ(offsetof(OVERLAPPED, hEvent), 24u);
  EXPECT_TRUE((std::is_same_v<LPOVERLAPPED, OVERLAPPED*>));

  EXPECT_EQ(sizeof(SOCKET_ADDRESS), 16u);
  EXPECT_EQ(offsetof(SOCKET_ADDRESS, lpSockaddr), 0u);
  EXPECT_EQ(offsetof(SOCKET_ADDRESS, iSockaddrLength), 8u);
  EXPECT_EQ(sizeof(SOCKET_ADDRESS_LIST), 24u);
  EXPECT_EQ(offsetof(SOCKET_ADDRESS_LIST, iAddressCount), 0u);
  EXPECT_EQ(offsetof(SOCKET_ADDRESS_LIST, Address), 8u);
  EXPECT_TRUE((std::is_same_v<SOCKADDR, struct sockaddr>));
  EXPECT_TRUE((std::is_same_v<SOCKADDR_IN, struct sockaddr_in>));
  EXPECT_TRUE((std::is_same_v<SOCKADDR_IN6, struct sockaddr_in6>));

  EXPECT_EQ(sizeof(GUID), 16u);
  EXPECT_EQ(offsetof(GUID, Data1), 0u);
  EXPECT_EQ(offsetof(GUID, Data2), 4u);
  EXPECT_EQ(offsetof(GUID, Data3), 6u);
  EXPECT_EQ(offsetof(GUID, Data4), 8u);
}

// ---- IIDs --------------------------------------------------------------------------------------

// "{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}" -> GUID (Data4 is the last 8 bytes in order).
GUID ParseGuid(const std::string& s) {
  GUID g{};
  unsigned d1 = 0, d2 = 0, d3 = 0, b[8] = {};
  const int n = std::sscanf(s.c_str(), "{%8x-%4x-%4x-%2x%2x-%2x%2x%2x%2x%2x%2x}", &d1, &d2, &d3,
                            &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &b[7]);
  EXPECT_EQ(n, 11) << s;
  EXPECT_EQ(s.size(), 38u) << s;
  g.Data1 = d1;
  g.Data2 = static_cast<uint16_t>(d2);
  g.Data3 = static_cast<uint16_t>(d3);
  for (int i = 0; i < 8; ++i) g.Data4[i] = static_cast<uint8_t>(b[i]);
  return g;
}

struct IidRow {
  const char* name;
  const GUID& actual;
  const char* expected;
};

TEST(Nd2Iid, EveryIidAsTheReferenceWritesIt) {
  const IidRow rows[] = {
      // nd2-reference.md, "IIDs".
      {"IID_IND2Overlapped", IID_IND2Overlapped, "{ABF72719-B016-4a40-A6F7-622791A7044C}"},
      {"IID_IND2CompletionQueue", IID_IND2CompletionQueue,
       "{20CC445E-64A0-4cbb-AA75-F6A7251FDA9E}"},
      {"IID_IND2SharedReceiveQueue", IID_IND2SharedReceiveQueue,
       "{AABD67DC-459A-4db1-826B-56CFCC278883}"},
      {"IID_IND2MemoryWindow", IID_IND2MemoryWindow, "{070FE1F5-0AB5-4361-88DB-974BA704D4B9}"},
      {"IID_IND2MemoryRegion", IID_IND2MemoryRegion, "{55DFEA2F-BC56-4982-8A45-0301BE46C413}"},
      {"IID_IND2QueuePair", IID_IND2QueuePair, "{EEF2F332-B75D-4063-BCE3-3A0BAD2D02CE}"},
      {"IID_IND2Connector", IID_IND2Connector, "{7DD615C4-6B4C-4866-950C-F3B1D25A5302}"},
      {"IID_IND2Listener", IID_IND2Listener, "{65D23D83-3A57-4E02-86A4-350165C2D130}"},
      {"IID_IND2Adapter", IID_IND2Adapter, "{D89C798C-4823-4D69-846C-DFDCCFF9E5F3}"},
      {"IID_IND2Provider", IID_IND2Provider, "{49EAE6C1-76C4-46D0-8003-5C2EAA2C9A8E}"},
      // COM.
      {"IID_IUnknown", IID_IUnknown, "{00000000-0000-0000-C000-000000000046}"},
      // Ours (ndspi.h).
      {"IID_IND2QueuePairSendAndInvalidate", IID_IND2QueuePairSendAndInvalidate,
       "{997513D1-7692-446F-9C0A-A4B1DB34DB45}"},
  };
  std::vector<GUID> seen;
  for (const auto& r : rows) {
    const GUID want = ParseGuid(r.expected);
    EXPECT_TRUE(r.actual == want) << r.name;
    EXPECT_FALSE(r.actual != want) << r.name;
    EXPECT_TRUE(IsEqualGUID(r.actual, want)) << r.name;
    EXPECT_TRUE(IsEqualIID(r.actual, want)) << r.name;
    EXPECT_EQ(std::memcmp(&r.actual, &want, sizeof(GUID)), 0) << r.name;
    for (const GUID& other : seen) EXPECT_TRUE(r.actual != other) << r.name << " is not unique";
    seen.push_back(r.actual);
  }
  // Our IID is a random (version 4, RFC 4122 variant) GUID.
  EXPECT_EQ(IID_IND2QueuePairSendAndInvalidate.Data3 >> 12, 4);
  EXPECT_EQ(IID_IND2QueuePairSendAndInvalidate.Data4[0] >> 6, 2);
}

TEST(Nd2Iid, DefineGuidGivesOneObject) {
  // DEFINE_GUID makes an inline constexpr variable: usable in constant expressions, and the
  // same address in every translation unit (no INITGUID needed).
  static_assert(IID_IND2Adapter.Data1 == 0xD89C798C);
  const GUID* a = &IID_IND2Adapter;
  EXPECT_EQ(a, &IID_IND2Adapter);
}

// ---- Interfaces --------------------------------------------------------------------------------
// Each interface is implemented below with `override` on every method, typed from the spec
// pages: a method missing, misnamed or with another signature fails to compile; instantiating
// the `final` class proves there is no other pure method. The vtable test then checks the order.

using Sge = ND2_SGE;

#define IMPLEMENT_IUNKNOWN                                                  \
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID, void** ppv) override {   \
    *ppv = nullptr;                                                         \
    return E_NOINTERFACE;                                                   \
  }                                                                         \
  ULONG STDMETHODCALLTYPE AddRef() override { return 1; }                   \
  ULONG STDMETHODCALLTYPE Release() override { return 1; }
#define IMPLEMENT_IND2OVERLAPPED                                                 \
  HRESULT STDMETHODCALLTYPE CancelOverlappedRequests() override { return ND_SUCCESS; } \
  HRESULT STDMETHODCALLTYPE GetOverlappedResult(OVERLAPPED*, BOOL) override { return ND_SUCCESS; }

class Overlapped final : public IND2Overlapped {
 public:
  IMPLEMENT_IUNKNOWN
  IMPLEMENT_IND2OVERLAPPED
};

class Cq final : public IND2CompletionQueue {
 public:
  IMPLEMENT_IUNKNOWN
  IMPLEMENT_IND2OVERLAPPED
  HRESULT STDMETHODCALLTYPE GetNotifyAffinity(USHORT*, KAFFINITY*) override { return 0; }
  HRESULT STDMETHODCALLTYPE Resize(ULONG) override { return 0; }
  HRESULT STDMETHODCALLTYPE Notify(ULONG, OVERLAPPED*) override { return ND_PENDING; }
  ULONG STDMETHODCALLTYPE GetResults(ND2_RESULT results[], ULONG n) override {
    for (ULONG i = 0; i < n; ++i) results[i] = ND2_RESULT{};
    return n;
  }
};

class Srq final : public IND2SharedReceiveQueue {
 public:
  IMPLEMENT_IUNKNOWN
  IMPLEMENT_IND2OVERLAPPED
  HRESULT STDMETHODCALLTYPE GetNotifyAffinity(USHORT*, KAFFINITY*) override { return 0; }
  HRESULT STDMETHODCALLTYPE Modify(ULONG, ULONG) override { return 0; }
  HRESULT STDMETHODCALLTYPE Notify(OVERLAPPED*) override { return 0; }
  HRESULT STDMETHODCALLTYPE Receive(VOID*, const Sge[], ULONG) override { return 0; }
};

class Mw final : public IND2MemoryWindow {
 public:
  IMPLEMENT_IUNKNOWN
  UINT32 STDMETHODCALLTYPE GetRemoteToken() override { return 7; }
};

class Mr final : public IND2MemoryRegion {
 public:
  IMPLEMENT_IUNKNOWN
  IMPLEMENT_IND2OVERLAPPED
  HRESULT STDMETHODCALLTYPE Register(const VOID*, SIZE_T, ULONG, OVERLAPPED*) override {
    return 0;
  }
  HRESULT STDMETHODCALLTYPE Deregister(OVERLAPPED*) override { return 0; }
  UINT32 STDMETHODCALLTYPE GetLocalToken() override { return 1; }
  UINT32 STDMETHODCALLTYPE GetRemoteToken() override { return 2; }
};

class Connector final : public IND2Connector {
 public:
  IMPLEMENT_IUNKNOWN
  IMPLEMENT_IND2OVERLAPPED
  HRESULT STDMETHODCALLTYPE Bind(const sockaddr*, ULONG) override { return 0; }
  HRESULT STDMETHODCALLTYPE Connect(IUnknown*, const sockaddr*, ULONG, ULONG, ULONG, const VOID*,
                                    ULONG, OVERLAPPED*) override {
    return 0;
  }
  HRESULT STDMETHODCALLTYPE CompleteConnect(OVERLAPPED*) override { return 0; }
  HRESULT STDMETHODCALLTYPE Accept(IUnknown*, ULONG, ULONG, const VOID*, ULONG,
                                   OVERLAPPED*) override {
    return 0;
  }
  HRESULT STDMETHODCALLTYPE Reject(const VOID*, ULONG) override { return 0; }
  HRESULT STDMETHODCALLTYPE GetReadLimits(ULONG*, ULONG*) override { return 0; }
  HRESULT STDMETHODCALLTYPE GetPrivateData(VOID*, ULONG*) override { return 0; }
  HRESULT STDMETHODCALLTYPE GetLocalAddress(sockaddr*, ULONG*) override { return 0; }
  HRESULT STDMETHODCALLTYPE GetPeerAddress(sockaddr*, ULONG*) override { return 0; }
  HRESULT STDMETHODCALLTYPE NotifyDisconnect(OVERLAPPED*) override { return 0; }
  HRESULT STDMETHODCALLTYPE Disconnect(OVERLAPPED*) override { return 0; }
};

class Listener final : public IND2Listener {
 public:
  IMPLEMENT_IUNKNOWN
  IMPLEMENT_IND2OVERLAPPED
  HRESULT STDMETHODCALLTYPE Bind(const sockaddr*, ULONG) override { return 0; }
  HRESULT STDMETHODCALLTYPE Listen(ULONG) override { return 0; }
  HRESULT STDMETHODCALLTYPE GetLocalAddress(sockaddr*, ULONG*) override { return 0; }
  HRESULT STDMETHODCALLTYPE GetConnectionRequest(IUnknown*, OVERLAPPED*) override { return 0; }
};

class Adapter final : public IND2Adapter {
 public:
  IMPLEMENT_IUNKNOWN
  HRESULT STDMETHODCALLTYPE CreateOverlappedFile(HANDLE*) override { return 0; }
  HRESULT STDMETHODCALLTYPE Query(ND2_ADAPTER_INFO*, ULONG*) override { return 0; }
  HRESULT STDMETHODCALLTYPE QueryAddressList(SOCKET_ADDRESS_LIST*, ULONG*) override { return 0; }
  HRESULT STDMETHODCALLTYPE CreateCompletionQueue(REFIID, HANDLE, ULONG, USHORT, KAFFINITY,
                                                  VOID**) override {
    return 0;
  }
  HRESULT STDMETHODCALLTYPE CreateMemoryRegion(REFIID, HANDLE, VOID**) override { return 0; }
  HRESULT STDMETHODCALLTYPE CreateMemoryWindow(REFIID, VOID**) override { return 0; }
  HRESULT STDMETHODCALLTYPE CreateSharedReceiveQueue(REFIID, HANDLE, ULONG, ULONG, ULONG, USHORT,
                                                     KAFFINITY, VOID**) override {
    return 0;
  }
  HRESULT STDMETHODCALLTYPE CreateQueuePair(REFIID, IUnknown*, IUnknown*, VOID*, ULONG, ULONG,
                                            ULONG, ULONG, ULONG, VOID**) override {
    return 0;
  }
  HRESULT STDMETHODCALLTYPE CreateQueuePairWithSrq(REFIID, IUnknown*, IUnknown*, IUnknown*, VOID*,
                                                   ULONG, ULONG, ULONG, VOID**) override {
    return 0;
  }
  HRESULT STDMETHODCALLTYPE CreateConnector(REFIID, HANDLE, VOID**) override { return 0; }
  HRESULT STDMETHODCALLTYPE CreateListener(REFIID, HANDLE, VOID**) override { return 0; }
};

class Provider final : public IND2Provider {
 public:
  IMPLEMENT_IUNKNOWN
  HRESULT STDMETHODCALLTYPE QueryAddressList(SOCKET_ADDRESS_LIST*, ULONG*) override { return 0; }
  HRESULT STDMETHODCALLTYPE ResolveAddress(const sockaddr*, ULONG, UINT64*) override { return 0; }
  HRESULT STDMETHODCALLTYPE OpenAdapter(REFIID, UINT64, VOID**) override { return 0; }
};

// A queue pair with the SendAndInvalidate extension: one object, two interfaces, COM identity
// through QueryInterface.
class Qp final : public IND2QueuePair, public IND2QueuePairSendAndInvalidate {
 public:
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void** ppv) override {
    if (riid == IID_IUnknown || riid == IID_IND2QueuePair) {
      *ppv = static_cast<IND2QueuePair*>(this);
    } else if (riid == IID_IND2QueuePairSendAndInvalidate) {
      *ppv = static_cast<IND2QueuePairSendAndInvalidate*>(this);
    } else {
      *ppv = nullptr;
      return E_NOINTERFACE;
    }
    ++refs;
    return S_OK;
  }
  ULONG STDMETHODCALLTYPE AddRef() override { return ++refs; }
  ULONG STDMETHODCALLTYPE Release() override { return --refs; }

  HRESULT STDMETHODCALLTYPE Flush() override { return 0; }
  HRESULT STDMETHODCALLTYPE Send(VOID*, const Sge[], ULONG, ULONG) override { return 0; }
  HRESULT STDMETHODCALLTYPE Receive(VOID*, const Sge[], ULONG) override { return 0; }
  HRESULT STDMETHODCALLTYPE Bind(VOID*, IUnknown*, IUnknown*, const VOID*, SIZE_T,
                                 ULONG) override {
    return 0;
  }
  HRESULT STDMETHODCALLTYPE Invalidate(VOID*, IUnknown*, ULONG) override { return 0; }
  HRESULT STDMETHODCALLTYPE Read(VOID*, const Sge[], ULONG, UINT64, UINT32, ULONG) override {
    return 0;
  }
  HRESULT STDMETHODCALLTYPE Write(VOID*, const Sge[], ULONG, UINT64, UINT32, ULONG) override {
    return 0;
  }
  HRESULT STDMETHODCALLTYPE SendAndInvalidate(VOID* ctx, const Sge sge[], ULONG n, UINT32 token,
                                              ULONG flags) override {
    last_ctx = ctx;
    last_sge = sge;
    last_n = n;
    last_token = token;
    last_flags = flags;
    return ND_SUCCESS;
  }

  ULONG refs = 1;
  VOID* last_ctx = nullptr;
  const Sge* last_sge = nullptr;
  ULONG last_n = 0;
  UINT32 last_token = 0;
  ULONG last_flags = 0;
};

class SendAndInvalidateOnly final : public IND2QueuePairSendAndInvalidate {
 public:
  IMPLEMENT_IUNKNOWN
  HRESULT STDMETHODCALLTYPE SendAndInvalidate(VOID*, const Sge[], ULONG, UINT32, ULONG) override {
    return 0;
  }
};

TEST(Nd2Interfaces, EachIsImplementableAndAbstract) {
  // Instantiating proves each interface has no pure method beyond those overridden above.
  Overlapped ov;
  Cq cq;
  Srq srq;
  Mw mw;
  Mr mr;
  Connector conn;
  Listener listener;
  Adapter adapter;
  Provider provider;
  Qp qp;
  SendAndInvalidateOnly sai;
  IUnknown* all[] = {&ov,      &cq,       &srq, &mw, &mr, &conn, &listener, &adapter,
                     &provider, static_cast<IND2QueuePair*>(&qp), &sai};
  for (IUnknown* u : all) EXPECT_GE(u->AddRef(), 1u);

  EXPECT_TRUE(std::is_abstract_v<IUnknown>);
  EXPECT_TRUE(std::is_abstract_v<IND2Overlapped>);
  EXPECT_TRUE(std::is_abstract_v<IND2CompletionQueue>);
  EXPECT_TRUE(std::is_abstract_v<IND2SharedReceiveQueue>);
  EXPECT_TRUE(std::is_abstract_v<IND2MemoryWindow>);
  EXPECT_TRUE(std::is_abstract_v<IND2MemoryRegion>);
  EXPECT_TRUE(std::is_abstract_v<IND2QueuePair>);
  EXPECT_TRUE(std::is_abstract_v<IND2Connector>);
  EXPECT_TRUE(std::is_abstract_v<IND2Listener>);
  EXPECT_TRUE(std::is_abstract_v<IND2Adapter>);
  EXPECT_TRUE(std::is_abstract_v<IND2Provider>);
  EXPECT_TRUE(std::is_abstract_v<IND2QueuePairSendAndInvalidate>);
}

TEST(Nd2Interfaces, Inheritance) {
  // Spec: CompletionQueue, SharedReceiveQueue, MemoryRegion, Connector, Listener derive
  // IND2Overlapped; MemoryWindow, QueuePair, Adapter, Provider derive IUnknown directly.
  EXPECT_TRUE((std::is_base_of_v<IUnknown, IND2Overlapped>));
  EXPECT_TRUE((std::is_base_of_v<IND2Overlapped, IND2CompletionQueue>));
  EXPECT_TRUE((std::is_base_of_v<IND2Overlapped, IND2SharedReceiveQueue>));
  EXPECT_TRUE((std::is_base_of_v<IND2Overlapped, IND2MemoryRegion>));
  EXPECT_TRUE((std::is_base_of_v<IND2Overlapped, IND2Connector>));
  EXPECT_TRUE((std::is_base_of_v<IND2Overlapped, IND2Listener>));
  EXPECT_FALSE((std::is_base_of_v<IND2Overlapped, IND2MemoryWindow>));
  EXPECT_FALSE((std::is_base_of_v<IND2Overlapped, IND2QueuePair>));
  EXPECT_FALSE((std::is_base_of_v<IND2Overlapped, IND2Adapter>));
  EXPECT_FALSE((std::is_base_of_v<IND2Overlapped, IND2Provider>));
  EXPECT_FALSE((std::is_base_of_v<IND2Overlapped, IND2QueuePairSendAndInvalidate>));
  EXPECT_TRUE((std::is_base_of_v<IUnknown, IND2MemoryWindow>));
  EXPECT_TRUE((std::is_base_of_v<IUnknown, IND2QueuePair>));
  EXPECT_TRUE((std::is_base_of_v<IUnknown, IND2Adapter>));
  EXPECT_TRUE((std::is_base_of_v<IUnknown, IND2Provider>));
  EXPECT_TRUE((std::is_base_of_v<IUnknown, IND2QueuePairSendAndInvalidate>));
  EXPECT_FALSE((std::is_base_of_v<IND2QueuePair, IND2QueuePairSendAndInvalidate>));
  // No data: one vtable pointer. Not deletable through the interface (Release destroys).
  EXPECT_EQ(sizeof(IND2Adapter), sizeof(void*));
  EXPECT_EQ(sizeof(IND2Connector), sizeof(void*));
  EXPECT_FALSE(std::is_destructible_v<IUnknown>);
  EXPECT_FALSE(std::is_destructible_v<IND2QueuePair>);
  EXPECT_FALSE(std::is_destructible_v<IND2Connector>);
}

// Vtable slot of a virtual member function, from its pointer-to-member representation (the
// Itanium C++ ABI: {ptr, adj}; for a virtual function ptr is 1 + the byte offset in the vtable,
// or, on ARM, adj's low bit marks it virtual and ptr is the offset).
template <class F>
long Slot(F pmf) {
  struct Rep {
    intptr_t ptr;
    ptrdiff_t adj;
  };
  static_assert(sizeof(F) == sizeof(Rep));
  Rep r;
  std::memcpy(&r, &pmf, sizeof r);
#if defined(__arm__) || defined(__aarch64__)
  if ((r.adj & 1) == 0) return -1;
  return static_cast<long>(r.ptr / static_cast<intptr_t>(sizeof(void*)));
#else
  if ((r.ptr & 1) == 0) return -1;  // not virtual
  return static_cast<long>((r.ptr - 1) / static_cast<intptr_t>(sizeof(void*)));
#endif
}

// SLOT(iface, method, signature, index): the method has exactly that type and vtable slot.
#define SLOT(iface, method, sig, index)                                         \
  do {                                                                          \
    static_assert(std::is_same_v<decltype(&iface::method), sig>, #iface "::" #method); \
    EXPECT_EQ(Slot(&iface::method), index) << #iface "::" #method;              \
  } while (0)

TEST(Nd2Interfaces, VtableOrderAndSignatures) {
  // nd2-reference.md, "Interfaces in vtable order", and the nd2-spec pages for the types.
  SLOT(IUnknown, QueryInterface, HRESULT (IUnknown::*)(REFIID, void**), 0);
  SLOT(IUnknown, AddRef, ULONG (IUnknown::*)(), 1);
  SLOT(IUnknown, Release, ULONG (IUnknown::*)(), 2);

  SLOT(IND2Overlapped, CancelOverlappedRequests, HRESULT (IND2Overlapped::*)(), 3);
  SLOT(IND2Overlapped, GetOverlappedResult, HRESULT (IND2Overlapped::*)(OVERLAPPED*, BOOL), 4);

  using CQ = IND2CompletionQueue;
  SLOT(CQ, GetNotifyAffinity, HRESULT (CQ::*)(USHORT*, KAFFINITY*), 5);
  SLOT(CQ, Resize, HRESULT (CQ::*)(ULONG), 6);
  SLOT(CQ, Notify, HRESULT (CQ::*)(ULONG, OVERLAPPED*), 7);
  SLOT(CQ, GetResults, ULONG (CQ::*)(ND2_RESULT*, ULONG), 8);

  using SRQ = IND2SharedReceiveQueue;
  SLOT(SRQ, GetNotifyAffinity, HRESULT (SRQ::*)(USHORT*, KAFFINITY*), 5);
  SLOT(SRQ, Modify, HRESULT (SRQ::*)(ULONG, ULONG), 6);
  SLOT(SRQ, Notify, HRESULT (SRQ::*)(OVERLAPPED*), 7);
  SLOT(SRQ, Receive, HRESULT (SRQ::*)(VOID*, const ND2_SGE*, ULONG), 8);

  SLOT(IND2MemoryWindow, GetRemoteToken, UINT32 (IND2MemoryWindow::*)(), 3);

  using MR = IND2MemoryRegion;
  SLOT(MR, Register, HRESULT (MR::*)(const VOID*, SIZE_T, ULONG, OVERLAPPED*), 5);
  SLOT(MR, Deregister, HRESULT (MR::*)(OVERLAPPED*), 6);
  SLOT(MR, GetLocalToken, UINT32 (MR::*)(), 7);
  SLOT(MR, GetRemoteToken, UINT32 (MR::*)(), 8);

  using QP = IND2QueuePair;
  SLOT(QP, Flush, HRESULT (QP::*)(), 3);
  SLOT(QP, Send, HRESULT (QP::*)(VOID*, const ND2_SGE*, ULONG, ULONG), 4);
  SLOT(QP, Receive, HRESULT (QP::*)(VOID*, const ND2_SGE*, ULONG), 5);
  SLOT(QP, Bind, HRESULT (QP::*)(VOID*, IUnknown*, IUnknown*, const VOID*, SIZE_T, ULONG), 6);
  SLOT(QP, Invalidate, HRESULT (QP::*)(VOID*, IUnknown*, ULONG), 7);
  SLOT(QP, Read, HRESULT (QP::*)(VOID*, const ND2_SGE*, ULONG, UINT64, UINT32, ULONG), 8);
  SLOT(QP, Write, HRESULT (QP::*)(VOID*, const ND2_SGE*, ULONG, UINT64, UINT32, ULONG), 9);

  using CONN = IND2Connector;
  SLOT(CONN, Bind, HRESULT (CONN::*)(const sockaddr*, ULONG), 5);
  SLOT(CONN, Connect,
       HRESULT (CONN::*)(IUnknown*, const sockaddr*, ULONG, ULONG, ULONG, const VOID*, ULONG,
                         OVERLAPPED*),
       6);
  SLOT(CONN, CompleteConnect, HRESULT (CONN::*)(OVERLAPPED*), 7);
  SLOT(CONN, Accept, HRESULT (CONN::*)(IUnknown*, ULONG, ULONG, const VOID*, ULONG, OVERLAPPED*),
       8);
  SLOT(CONN, Reject, HRESULT (CONN::*)(const VOID*, ULONG), 9);
  SLOT(CONN, GetReadLimits, HRESULT (CONN::*)(ULONG*, ULONG*), 10);
  SLOT(CONN, GetPrivateData, HRESULT (CONN::*)(VOID*, ULONG*), 11);
  SLOT(CONN, GetLocalAddress, HRESULT (CONN::*)(sockaddr*, ULONG*), 12);
  SLOT(CONN, GetPeerAddress, HRESULT (CONN::*)(sockaddr*, ULONG*), 13);
  SLOT(CONN, NotifyDisconnect, HRESULT (CONN::*)(OVERLAPPED*), 14);
  SLOT(CONN, Disconnect, HRESULT (CONN::*)(OVERLAPPED*), 15);

  using LIS = IND2Listener;
  SLOT(LIS, Bind, HRESULT (LIS::*)(const sockaddr*, ULONG), 5);
  SLOT(LIS, Listen, HRESULT (LIS::*)(ULONG), 6);
  SLOT(LIS, GetLocalAddress, HRESULT (LIS::*)(sockaddr*, ULONG*), 7);
  SLOT(LIS, GetConnectionRequest, HRESULT (LIS::*)(IUnknown*, OVERLAPPED*), 8);

  using AD = IND2Adapter;
  SLOT(AD, CreateOverlappedFile, HRESULT (AD::*)(HANDLE*), 3);
  SLOT(AD, Query, HRESULT (AD::*)(ND2_ADAPTER_INFO*, ULONG*), 4);
  SLOT(AD, QueryAddressList, HRESULT (AD::*)(SOCKET_ADDRESS_LIST*, ULONG*), 5);
  SLOT(AD, CreateCompletionQueue,
       HRESULT (AD::*)(const GUID&, HANDLE, ULONG, USHORT, KAFFINITY, VOID**), 6);
  SLOT(AD, CreateMemoryRegion, HRESULT (AD::*)(const GUID&, HANDLE, VOID**), 7);
  SLOT(AD, CreateMemoryWindow, HRESULT (AD::*)(const GUID&, VOID**), 8);
  SLOT(AD, CreateSharedReceiveQueue,
       HRESULT (AD::*)(const GUID&, HANDLE, ULONG, ULONG, ULONG, USHORT, KAFFINITY, VOID**), 9);
  SLOT(AD, CreateQueuePair,
       HRESULT (AD::*)(const GUID&, IUnknown*, IUnknown*, VOID*, ULONG, ULONG, ULONG, ULONG,
                       ULONG, VOID**),
       10);
  SLOT(AD, CreateQueuePairWithSrq,
       HRESULT (AD::*)(const GUID&, IUnknown*, IUnknown*, IUnknown*, VOID*, ULONG, ULONG, ULONG,
                       VOID**),
       11);
  SLOT(AD, CreateConnector, HRESULT (AD::*)(const GUID&, HANDLE, VOID**), 12);
  SLOT(AD, CreateListener, HRESULT (AD::*)(const GUID&, HANDLE, VOID**), 13);

  using PR = IND2Provider;
  SLOT(PR, QueryAddressList, HRESULT (PR::*)(SOCKET_ADDRESS_LIST*, ULONG*), 3);
  SLOT(PR, ResolveAddress, HRESULT (PR::*)(const sockaddr*, ULONG, UINT64*), 4);
  SLOT(PR, OpenAdapter, HRESULT (PR::*)(const GUID&, UINT64, VOID**), 5);

  using SAI = IND2QueuePairSendAndInvalidate;
  SLOT(SAI, SendAndInvalidate, HRESULT (SAI::*)(VOID*, const ND2_SGE*, ULONG, UINT32, ULONG), 3);
}
#undef SLOT

TEST(Nd2Interfaces, SendAndInvalidateThroughQueryInterface) {
  Qp impl;
  IND2QueuePair* qp = &impl;
  IND2QueuePairSendAndInvalidate* sai = nullptr;
  ASSERT_EQ(qp->QueryInterface(IID_IND2QueuePairSendAndInvalidate, reinterpret_cast<void**>(&sai)),
            S_OK);
  ASSERT_NE(sai, nullptr);
  ND2_SGE sge = {&impl, 8, 0x1234};
  int ctx = 0;
  EXPECT_EQ(sai->SendAndInvalidate(&ctx, &sge, 1, 0xABCD0001u, ND_OP_FLAG_SEND_AND_SOLICIT_EVENT),
            ND_SUCCESS);
  EXPECT_EQ(impl.last_ctx, &ctx);
  EXPECT_EQ(impl.last_sge, &sge);
  EXPECT_EQ(impl.last_n, 1u);
  EXPECT_EQ(impl.last_token, 0xABCD0001u);
  EXPECT_EQ(impl.last_flags, static_cast<ULONG>(ND_OP_FLAG_SEND_AND_SOLICIT_EVENT));
  // COM identity: back to the queue pair, and the same IUnknown from both.
  IND2QueuePair* back = nullptr;
  ASSERT_EQ(sai->QueryInterface(IID_IND2QueuePair, reinterpret_cast<void**>(&back)), S_OK);
  EXPECT_EQ(back, qp);
  IUnknown* u1 = nullptr;
  IUnknown* u2 = nullptr;
  ASSERT_EQ(qp->QueryInterface(IID_IUnknown, reinterpret_cast<void**>(&u1)), S_OK);
  ASSERT_EQ(sai->QueryInterface(IID_IUnknown, reinterpret_cast<void**>(&u2)), S_OK);
  EXPECT_EQ(u1, u2);
  void* none = &impl;
  EXPECT_EQ(qp->QueryInterface(IID_IND2Adapter, &none), E_NOINTERFACE);
  EXPECT_EQ(none, nullptr);
}

// ---- Helpers and functions ---------------------------------------------------------------------

TEST(Nd2Support, FunctionSignatures) {
  // Microsoft's ndsupport.h signatures (SIZE_T sizes, REFIID, VOID**), C linkage.
  EXPECT_TRUE((std::is_same_v<decltype(NdStartup), HRESULT()>));
  EXPECT_TRUE((std::is_same_v<decltype(NdCleanup), HRESULT()>));
  EXPECT_TRUE((std::is_same_v<decltype(NdFlushProviders), void()>));
  EXPECT_TRUE(
      (std::is_same_v<decltype(NdQueryAddressList),
                      HRESULT(DWORD, SOCKET_ADDRESS_LIST*, SIZE_T*)>));
  EXPECT_TRUE((std::is_same_v<decltype(NdResolveAddress),
                              HRESULT(const sockaddr*, SIZE_T, sockaddr*, SIZE_T*)>));
  EXPECT_TRUE((std::is_same_v<decltype(NdCheckAddress), HRESULT(const sockaddr*, SIZE_T)>));
  EXPECT_TRUE((std::is_same_v<decltype(NdOpenAdapter),
                              HRESULT(const GUID&, const sockaddr*, SIZE_T, VOID**)>));
  EXPECT_TRUE((std::is_same_v<decltype(NdOpenV1Adapter),
                              HRESULT(const sockaddr*, SIZE_T, INDAdapter**)>));
}

TEST(Nd2Support, Win32FunctionSignatures) {
  EXPECT_TRUE((std::is_same_v<decltype(CreateEventW),
                              HANDLE(SECURITY_ATTRIBUTES*, BOOL, BOOL, const wchar_t*)>));
  EXPECT_TRUE((std::is_same_v<decltype(CreateEventA),
                              HANDLE(SECURITY_ATTRIBUTES*, BOOL, BOOL, const char*)>));
  EXPECT_TRUE((std::is_same_v<decltype(SetEvent), BOOL(HANDLE)>));
  EXPECT_TRUE((std::is_same_v<decltype(ResetEvent), BOOL(HANDLE)>));
  EXPECT_TRUE((std::is_same_v<decltype(WaitForSingleObject), DWORD(HANDLE, DWORD)>));
  EXPECT_TRUE((std::is_same_v<decltype(CloseHandle), BOOL(HANDLE)>));
  EXPECT_TRUE(
      (std::is_same_v<decltype(CreateIoCompletionPort), HANDLE(HANDLE, HANDLE, ULONG_PTR, DWORD)>));
  EXPECT_TRUE((std::is_same_v<decltype(GetQueuedCompletionStatus),
                              BOOL(HANDLE, DWORD*, ULONG_PTR*, OVERLAPPED**, DWORD)>));
  EXPECT_TRUE((std::is_same_v<decltype(PostQueuedCompletionStatus),
                              BOOL(HANDLE, DWORD, ULONG_PTR, OVERLAPPED*)>));
  EXPECT_TRUE((std::is_same_v<decltype(GetLastError), DWORD()>));
}

TEST(Nd2Support, InlineHelpers) {
  volatile LONG n = 5;
  EXPECT_EQ(InterlockedIncrement(&n), 6);
  EXPECT_EQ(InterlockedDecrement(&n), 5);
  EXPECT_EQ(InterlockedCompareExchange(&n, 9, 4), 5);  // no exchange: returns the old value
  EXPECT_EQ(n, 5);
  EXPECT_EQ(InterlockedCompareExchange(&n, 9, 5), 5);
  EXPECT_EQ(n, 9);
  volatile LONG64 big = LONG64{1} << 40;
  EXPECT_EQ(InterlockedExchangeAdd64(&big, 3), LONG64{1} << 40);
  EXPECT_EQ(big, (LONG64{1} << 40) + 3);

  OVERLAPPED ov;
  std::memset(&ov, 0xAB, sizeof ov);
  RtlZeroMemory(&ov, sizeof ov);
  EXPECT_EQ(ov.hEvent, nullptr);
  EXPECT_EQ(ov.Internal, 0u);
  ov.Offset = 1;
  ov.OffsetHigh = 2;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ov.Pointer), (uintptr_t{2} << 32) | 1);

  struct Request {
    int tag;
    OVERLAPPED ov;
  } req{};
  req.tag = 42;
  OVERLAPPED* p = &req.ov;
  EXPECT_EQ(CONTAINING_RECORD(p, Request, ov), &req);
  EXPECT_EQ(CONTAINING_RECORD(p, Request, ov)->tag, 42);

  const ULONG a = 7;
  const DWORD b = 3;
  EXPECT_EQ(min(a, b), 3u);
  EXPECT_EQ(max(a, b), 7u);
  EXPECT_EQ(min(SIZE_T{10}, ULONG{4}), 4u);
  static_assert(std::is_same_v<decltype(min(SIZE_T{10}, ULONG{4})), SIZE_T>);
}

}  // namespace
