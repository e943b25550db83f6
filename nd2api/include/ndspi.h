// SPDX-License-Identifier: MIT
// ndspi.h: the NetworkDirect 2 service provider interfaces.
//
// Each interface is an abstract struct of pure virtual methods deriving IUnknown (directly or
// through IND2Overlapped), in Microsoft's vtable order: slots 0-2 are QueryInterface, AddRef,
// Release, then the methods below in declaration order. Names, parameter order and types are
// Microsoft's (/work/shared/nd2-spec/IND2*.md; /work/shared/nd2-reference.md, "Interfaces in
// vtable order"; microsoft/NetworkDirect src/ndutil/ndspi.h where the two differ, see the note
// on const at IND2QueuePair). The comments summarise each page; the pages list every return
// value and remark, and nd2-reference.md ("Semantics real clients rely on") what real providers
// do where the pages are silent or wrong.
//
// Objects are obtained from the provider and the adapter with an IID (REFIID + VOID**) and
// released with Release; the interfaces have no public destructor.
//
// Overlapped requests (every method taking an OVERLAPPED*, which is never NULL): ND_PENDING
// means the request completes later, signalling the OVERLAPPED's event and/or queueing to the
// completion port bound to the overlapped file given at creation; the caller then reads the
// final status with GetOverlappedResult. Any other return value means the request is over and
// nothing will be signalled.
//
// Beyond Microsoft's interfaces, two extensions of ours: IND2QueuePairSendAndInvalidate and
// IND2AdapterDiagnostics (at the end of this file).
#ifndef _NDSPI_H_
#define _NDSPI_H_

#ifndef __cplusplus
#error "ndspi.h declares C++ interfaces"
#endif

#include "nd_win32.h"
#include "ndstatus.h"
#include "nddef.h"

// ---- IIDs ------------------------------------------------------------------------------------
// Values: /work/shared/nd2-reference.md ("IIDs"), identical to microsoft/NetworkDirect
// src/ndutil/ndspi.h.

// {ABF72719-B016-4a40-A6F7-622791A7044C}
DEFINE_GUID(IID_IND2Overlapped, 0xabf72719, 0xb016, 0x4a40, 0xa6, 0xf7, 0x62, 0x27, 0x91, 0xa7,
            0x04, 0x4c);
// {20CC445E-64A0-4cbb-AA75-F6A7251FDA9E}
DEFINE_GUID(IID_IND2CompletionQueue, 0x20cc445e, 0x64a0, 0x4cbb, 0xaa, 0x75, 0xf6, 0xa7, 0x25,
            0x1f, 0xda, 0x9e);
// {AABD67DC-459A-4db1-826B-56CFCC278883}
DEFINE_GUID(IID_IND2SharedReceiveQueue, 0xaabd67dc, 0x459a, 0x4db1, 0x82, 0x6b, 0x56, 0xcf, 0xcc,
            0x27, 0x88, 0x83);
// {070FE1F5-0AB5-4361-88DB-974BA704D4B9}
DEFINE_GUID(IID_IND2MemoryWindow, 0x070fe1f5, 0x0ab5, 0x4361, 0x88, 0xdb, 0x97, 0x4b, 0xa7, 0x04,
            0xd4, 0xb9);
// {55DFEA2F-BC56-4982-8A45-0301BE46C413}
DEFINE_GUID(IID_IND2MemoryRegion, 0x55dfea2f, 0xbc56, 0x4982, 0x8a, 0x45, 0x03, 0x01, 0xbe, 0x46,
            0xc4, 0x13);
// {EEF2F332-B75D-4063-BCE3-3A0BAD2D02CE}
DEFINE_GUID(IID_IND2QueuePair, 0xeef2f332, 0xb75d, 0x4063, 0xbc, 0xe3, 0x3a, 0x0b, 0xad, 0x2d,
            0x02, 0xce);
// {7DD615C4-6B4C-4866-950C-F3B1D25A5302}
DEFINE_GUID(IID_IND2Connector, 0x7dd615c4, 0x6b4c, 0x4866, 0x95, 0x0c, 0xf3, 0xb1, 0xd2, 0x5a,
            0x53, 0x02);
// {65D23D83-3A57-4E02-86A4-350165C2D130}
DEFINE_GUID(IID_IND2Listener, 0x65d23d83, 0x3a57, 0x4e02, 0x86, 0xa4, 0x35, 0x01, 0x65, 0xc2,
            0xd1, 0x30);
// {D89C798C-4823-4D69-846C-DFDCCFF9E5F3}
DEFINE_GUID(IID_IND2Adapter, 0xd89c798c, 0x4823, 0x4d69, 0x84, 0x6c, 0xdf, 0xdc, 0xcf, 0xf9, 0xe5,
            0xf3);
// {49EAE6C1-76C4-46D0-8003-5C2EAA2C9A8E}
DEFINE_GUID(IID_IND2Provider, 0x49eae6c1, 0x76c4, 0x46d0, 0x80, 0x03, 0x5c, 0x2e, 0xaa, 0x2c, 0x9a,
            0x8e);

// ---- IND2Overlapped ----------------------------------------------------------------------------
// Base of the objects on which overlapped requests are made.
struct DECLSPEC_NOVTABLE IND2Overlapped : public IUnknown {
  // Completes every outstanding overlapped request of this object with ND_CANCELED.
  // ND_SUCCESS, or ND_UNSUCCESSFUL if not all could be cancelled.
  virtual HRESULT STDMETHODCALLTYPE CancelOverlappedRequests() = 0;

  // The final ND status of the request started with pOverlapped: its result, or ND_PENDING
  // while it is outstanding and wait is FALSE. wait == TRUE blocks until it completes (the
  // OVERLAPPED must then carry an event). Clients call this even after learning of the
  // completion from an event or a port.
  virtual HRESULT STDMETHODCALLTYPE GetOverlappedResult(_In_ OVERLAPPED* pOverlapped,
                                                        BOOL wait) = 0;

 protected:
  ~IND2Overlapped() = default;
};

// ---- IND2CompletionQueue -----------------------------------------------------------------------
struct DECLSPEC_NOVTABLE IND2CompletionQueue : public IND2Overlapped {
  // The processor group and affinity on which notifications are processed.
  virtual HRESULT STDMETHODCALLTYPE GetNotifyAffinity(_Out_ USHORT* pGroup,
                                                      _Out_ KAFFINITY* pAffinity) = 0;

  // Changes the number of completions the queue can hold. ND_INVALID_PARAMETER above the
  // hardware's limit, ND_INSUFFICIENT_RESOURCES.
  virtual HRESULT STDMETHODCALLTYPE Resize(ULONG queueDepth) = 0;

  // Arms the queue: pOverlapped completes on the next completion of the given type
  // (ND_CQ_NOTIFY_ERRORS / _ANY / _SOLICITED; errors always satisfy it; ANY overrides SOLICITED).
  // Every outstanding Notify completes on that event. ND_PENDING normally.
  virtual HRESULT STDMETHODCALLTYPE Notify(ULONG type, _Inout_ OVERLAPPED* pOverlapped) = 0;

  // Copies up to nResults completions, oldest first, into results; returns how many.
  virtual ULONG STDMETHODCALLTYPE GetResults(_Out_writes_to_(nResults, return)
                                                 ND2_RESULT results[],
                                             ULONG nResults) = 0;

 protected:
  ~IND2CompletionQueue() = default;
};

// ---- IND2SharedReceiveQueue --------------------------------------------------------------------
struct DECLSPEC_NOVTABLE IND2SharedReceiveQueue : public IND2Overlapped {
  virtual HRESULT STDMETHODCALLTYPE GetNotifyAffinity(_Out_ USHORT* pGroup,
                                                      _Out_ KAFFINITY* pAffinity) = 0;

  // New depth and notify threshold; 0 leaves a value unchanged.
  virtual HRESULT STDMETHODCALLTYPE Modify(ULONG queueDepth, ULONG notifyThreshold) = 0;

  // pOverlapped completes when fewer receives than the notify threshold remain posted.
  virtual HRESULT STDMETHODCALLTYPE Notify(_Inout_ OVERLAPPED* pOverlapped) = 0;

  // Posts a receive shared by the queue pairs created with this queue.
  virtual HRESULT STDMETHODCALLTYPE Receive(_In_opt_ VOID* requestContext,
                                            _In_reads_opt_(nSge) const ND2_SGE sge[],
                                            ULONG nSge) = 0;

 protected:
  ~IND2SharedReceiveQueue() = default;
};

// ---- IND2MemoryWindow --------------------------------------------------------------------------
// Created unbound; IND2QueuePair::Bind binds it to part of a region, Invalidate unbinds it.
struct DECLSPEC_NOVTABLE IND2MemoryWindow : public IUnknown {
  // The token a peer uses to Read / Write the bound window (valid as soon as Bind returns).
  virtual UINT32 STDMETHODCALLTYPE GetRemoteToken() = 0;

 protected:
  ~IND2MemoryWindow() = default;
};

// ---- IND2MemoryRegion --------------------------------------------------------------------------
struct DECLSPEC_NOVTABLE IND2MemoryRegion : public IND2Overlapped {
  // Registers [pBuffer, pBuffer + cbBuffer) with ND_MR_FLAG_* access (remote flags imply local
  // write). ND_PENDING, ND_SUCCESS, ND_INSUFFICIENT_RESOURCES, ND_ACCESS_VIOLATION,
  // ND_INVALID_PARAMETER (NULL buffer or above MaxRegistrationSize), ND_INVALID_BUFFER_SIZE
  // (size 0).
  virtual HRESULT STDMETHODCALLTYPE Register(_In_reads_bytes_(cbBuffer) const VOID* pBuffer,
                                             SIZE_T cbBuffer, ULONG flags,
                                             _Inout_ OVERLAPPED* pOverlapped) = 0;

  // Removes the registration. ND_DEVICE_BUSY while a window is bound to it.
  virtual HRESULT STDMETHODCALLTYPE Deregister(_Inout_ OVERLAPPED* pOverlapped) = 0;

  // The token to put in ND2_SGE.MemoryRegionToken.
  virtual UINT32 STDMETHODCALLTYPE GetLocalToken() = 0;

  // The token a peer uses to Read / Write the region.
  virtual UINT32 STDMETHODCALLTYPE GetRemoteToken() = 0;

 protected:
  ~IND2MemoryRegion() = default;
};

// ---- IND2QueuePair -----------------------------------------------------------------------------
// Requests complete in the queue pair's completion queues (Receive in the receive queue, the
// others in the initiator queue), in posting order. A request that fails to post changes
// nothing; a completion with an error status terminates the connection and every later request
// completes ND_CANCELED.
//
// Note on const: the documentation pages show Receive's and Read's sge[] without const;
// Microsoft's ndspi.h and nd2-reference.md have `const ND2_SGE sge[]` for Send, Receive, Read
// and Write, which is what is declared here (programs pass const arrays to all four).
struct DECLSPEC_NOVTABLE IND2QueuePair : public IUnknown {
  // Completes every outstanding request of this queue pair with ND_CANCELED.
  virtual HRESULT STDMETHODCALLTYPE Flush() = 0;

  // Sends the gathered buffers to the peer's next receive. Flags: ND_OP_FLAG_SILENT_SUCCESS,
  // READ_FENCE, SEND_AND_SOLICIT_EVENT, INLINE. ND_CONNECTION_INVALID, ND_BUFFER_OVERFLOW,
  // ND_NO_MORE_ENTRIES, ND_DATA_OVERRUN (too many SGEs), ND_INVALID_PARAMETER_4 (flags).
  virtual HRESULT STDMETHODCALLTYPE Send(_In_opt_ VOID* requestContext,
                                         _In_reads_opt_(nSge) const ND2_SGE sge[], ULONG nSge,
                                         ULONG flags) = 0;

  // Posts a receive (the queue pair need not be connected).
  virtual HRESULT STDMETHODCALLTYPE Receive(_In_opt_ VOID* requestContext,
                                            _In_reads_opt_(nSge) const ND2_SGE sge[],
                                            ULONG nSge) = 0;

  // Binds pMemoryWindow to [pBuffer, pBuffer + cbBuffer) inside pMemoryRegion with remote
  // access ND_OP_FLAG_ALLOW_READ and/or ALLOW_WRITE (plus SILENT_SUCCESS, READ_FENCE).
  virtual HRESULT STDMETHODCALLTYPE Bind(_In_opt_ VOID* requestContext,
                                         _In_ IUnknown* pMemoryRegion,
                                         _Inout_ IUnknown* pMemoryWindow,
                                         _In_reads_bytes_(cbBuffer) const VOID* pBuffer,
                                         SIZE_T cbBuffer, ULONG flags) = 0;

  // Unbinds pMemoryWindow; later remote accesses with its token fail.
  virtual HRESULT STDMETHODCALLTYPE Invalidate(_In_opt_ VOID* requestContext,
                                               _In_ IUnknown* pMemoryWindow, ULONG flags) = 0;

  // RDMA Read of the peer's memory at remoteAddress (a virtual address, host order) with
  // remoteToken into the scattered buffers. Flags: SILENT_SUCCESS, READ_FENCE.
  virtual HRESULT STDMETHODCALLTYPE Read(_In_opt_ VOID* requestContext,
                                         _In_reads_opt_(nSge) const ND2_SGE sge[], ULONG nSge,
                                         UINT64 remoteAddress, UINT32 remoteToken,
                                         ULONG flags) = 0;

  // RDMA Write of the gathered buffers to the peer's memory. Flags: SILENT_SUCCESS, READ_FENCE,
  // INLINE. ND_INVALID_PARAMETER_6 (flags).
  virtual HRESULT STDMETHODCALLTYPE Write(_In_opt_ VOID* requestContext,
                                          _In_reads_opt_(nSge) const ND2_SGE sge[], ULONG nSge,
                                          UINT64 remoteAddress, UINT32 remoteToken,
                                          ULONG flags) = 0;

 protected:
  ~IND2QueuePair() = default;
};

// ---- IND2Connector -----------------------------------------------------------------------------
// Active side: Bind, Connect, (GetReadLimits / GetPrivateData), CompleteConnect. Passive side:
// IND2Listener::GetConnectionRequest, (GetReadLimits / GetPrivateData), Accept or Reject.
struct DECLSPEC_NOVTABLE IND2Connector : public IND2Overlapped {
  // Binds to a local address; port 0 picks an ephemeral port (ND_TOO_MANY_ADDRESSES if none).
  // ND_SHARING_VIOLATION, ND_ADDRESS_ALREADY_EXISTS.
  virtual HRESULT STDMETHODCALLTYPE Bind(
      _In_reads_bytes_(cbAddress) const struct sockaddr* pAddress, ULONG cbAddress) = 0;

  // Asks the listener at pDestAddress to connect pQueuePair. Completes when the peer accepts
  // (ND_SUCCESS: call CompleteConnect or Reject) or rejects / is absent
  // (ND_CONNECTION_REFUSED). ND_INVALID_BUFFER_SIZE: private data above MaxCallerData.
  virtual HRESULT STDMETHODCALLTYPE Connect(
      _In_ IUnknown* pQueuePair,
      _In_reads_bytes_(cbDestAddress) const struct sockaddr* pDestAddress, ULONG cbDestAddress,
      ULONG inboundReadLimit, ULONG outboundReadLimit,
      _In_reads_bytes_opt_(cbPrivateData) const VOID* pPrivateData, ULONG cbPrivateData,
      _Inout_ OVERLAPPED* pOverlapped) = 0;

  // Finishes the connection the completed Connect started.
  virtual HRESULT STDMETHODCALLTYPE CompleteConnect(_Inout_ OVERLAPPED* pOverlapped) = 0;

  // Accepts the connection request this connector received, with pQueuePair. Private data up
  // to MaxCalleeData.
  virtual HRESULT STDMETHODCALLTYPE Accept(_In_ IUnknown* pQueuePair, ULONG inboundReadLimit,
                                           ULONG outboundReadLimit,
                                           _In_reads_bytes_opt_(cbPrivateData)
                                               const VOID* pPrivateData,
                                           ULONG cbPrivateData,
                                           _Inout_ OVERLAPPED* pOverlapped) = 0;

  // Rejects the request received (passive side) or the accepted connection (active side,
  // after Connect completed). Private data up to MaxCalleeData.
  virtual HRESULT STDMETHODCALLTYPE Reject(_In_reads_bytes_opt_(cbPrivateData)
                                               const VOID* pPrivateData,
                                           ULONG cbPrivateData) = 0;

  // The read limits the peer asked for (its outbound limit is our inbound one), clamped.
  virtual HRESULT STDMETHODCALLTYPE GetReadLimits(_Out_opt_ ULONG* pInboundReadLimit,
                                                  _Out_opt_ ULONG* pOutboundReadLimit) = 0;

  // The peer's private data; ND_BUFFER_OVERFLOW with the needed size in *pcbPrivateData.
  virtual HRESULT STDMETHODCALLTYPE GetPrivateData(_Out_writes_bytes_opt_(*pcbPrivateData)
                                                       VOID* pPrivateData,
                                                   _Inout_ ULONG* pcbPrivateData) = 0;

  // Local / peer address; ND_BUFFER_OVERFLOW with the needed size in *pcbAddress.
  virtual HRESULT STDMETHODCALLTYPE GetLocalAddress(_Out_writes_bytes_to_opt_(*pcbAddress,
                                                                            *pcbAddress)
                                                        struct sockaddr* pAddress,
                                                    _Inout_ ULONG* pcbAddress) = 0;
  virtual HRESULT STDMETHODCALLTYPE GetPeerAddress(_Out_writes_bytes_to_opt_(*pcbAddress,
                                                                           *pcbAddress)
                                                       struct sockaddr* pAddress,
                                                   _Inout_ ULONG* pcbAddress) = 0;

  // Completes when the peer disconnects. Does not flush the queue pair.
  virtual HRESULT STDMETHODCALLTYPE NotifyDisconnect(_Inout_ OVERLAPPED* pOverlapped) = 0;

  // Disconnects; the queue pair's outstanding requests complete ND_CANCELED.
  virtual HRESULT STDMETHODCALLTYPE Disconnect(_Inout_ OVERLAPPED* pOverlapped) = 0;

 protected:
  ~IND2Connector() = default;
};

// ---- IND2Listener ------------------------------------------------------------------------------
struct DECLSPEC_NOVTABLE IND2Listener : public IND2Overlapped {
  // Binds to a local address (port 0: ephemeral). ND_SHARING_VIOLATION if in use.
  virtual HRESULT STDMETHODCALLTYPE Bind(
      _In_reads_bytes_(cbAddress) const struct sockaddr* pAddress, ULONG cbAddress) = 0;

  // Starts listening; backlog 0 means no limit.
  virtual HRESULT STDMETHODCALLTYPE Listen(ULONG backlog) = 0;

  // The bound address. ND_INVALID_DEVICE_STATE when not listening.
  virtual HRESULT STDMETHODCALLTYPE GetLocalAddress(_Out_writes_bytes_to_opt_(*pcbAddress,
                                                                            *pcbAddress)
                                                        struct sockaddr* pAddress,
                                                    _Inout_ ULONG* pcbAddress) = 0;

  // Completes when a connection request arrives; it is then held by pConnector (from
  // IND2Adapter::CreateConnector), which accepts or rejects it.
  virtual HRESULT STDMETHODCALLTYPE GetConnectionRequest(_Inout_ IUnknown* pConnector,
                                                         _Inout_ OVERLAPPED* pOverlapped) = 0;

 protected:
  ~IND2Listener() = default;
};

// ---- IND2Adapter -------------------------------------------------------------------------------
struct DECLSPEC_NOVTABLE IND2Adapter : public IUnknown {
  // A handle for the overlapped requests of the objects created with it; it can be bound to a
  // completion port (CreateIoCompletionPort).
  virtual HRESULT STDMETHODCALLTYPE CreateOverlappedFile(_Deref_out_ HANDLE* phOverlappedFile) = 0;

  // Capabilities and limits. pInfo->InfoVersion must be ND_VERSION_2. ND_BUFFER_OVERFLOW with
  // the needed size in *pcbInfo when the buffer is too small (or pInfo NULL).
  virtual HRESULT STDMETHODCALLTYPE Query(_Inout_updates_bytes_opt_(*pcbInfo)
                                              ND2_ADAPTER_INFO* pInfo,
                                          _Inout_ ULONG* pcbInfo) = 0;

  // The adapter's local addresses; ND_BUFFER_OVERFLOW with the needed size.
  virtual HRESULT STDMETHODCALLTYPE QueryAddressList(_Out_writes_bytes_to_opt_(*pcbAddressList,
                                                                             *pcbAddressList)
                                                         SOCKET_ADDRESS_LIST* pAddressList,
                                                     _Inout_ ULONG* pcbAddressList) = 0;

  // Creates a completion queue (iid IID_IND2CompletionQueue) of queueDepth entries.
  // ND_INVALID_PARAMETER_3: depth above the adapter's limit.
  virtual HRESULT STDMETHODCALLTYPE CreateCompletionQueue(_In_ REFIID iid,
                                                          _In_ HANDLE hOverlappedFile,
                                                          ULONG queueDepth, USHORT group,
                                                          KAFFINITY affinity,
                                                          _Deref_out_ VOID** ppCompletionQueue) = 0;

  // Creates an unregistered memory region (iid IID_IND2MemoryRegion).
  virtual HRESULT STDMETHODCALLTYPE CreateMemoryRegion(_In_ REFIID iid,
                                                       _In_ HANDLE hOverlappedFile,
                                                       _Deref_out_ VOID** ppMemoryRegion) = 0;

  // Creates an unbound memory window (iid IID_IND2MemoryWindow).
  virtual HRESULT STDMETHODCALLTYPE CreateMemoryWindow(_In_ REFIID iid,
                                                       _Deref_out_ VOID** ppMemoryWindow) = 0;

  // Creates a shared receive queue (iid IID_IND2SharedReceiveQueue).
  virtual HRESULT STDMETHODCALLTYPE CreateSharedReceiveQueue(
      _In_ REFIID iid, _In_ HANDLE hOverlappedFile, ULONG queueDepth, ULONG maxRequestSge,
      ULONG notifyThreshold, USHORT group, KAFFINITY affinity,
      _Deref_out_ VOID** ppSharedReceiveQueue) = 0;

  // Creates a queue pair (iid IID_IND2QueuePair); context comes back as
  // ND2_RESULT.QueuePairContext. ND_INVALID_PARAMETER_n names the parameter above its limit.
  virtual HRESULT STDMETHODCALLTYPE CreateQueuePair(
      _In_ REFIID iid, _In_ IUnknown* pReceiveCompletionQueue,
      _In_ IUnknown* pInitiatorCompletionQueue, _In_opt_ VOID* context, ULONG receiveQueueDepth,
      ULONG initiatorQueueDepth, ULONG maxReceiveRequestSge, ULONG maxInitiatorRequestSge,
      ULONG inlineDataSize, _Deref_out_ VOID** ppQueuePair) = 0;

  // Creates a queue pair whose receives come from pSharedReceiveQueue.
  virtual HRESULT STDMETHODCALLTYPE CreateQueuePairWithSrq(
      _In_ REFIID iid, _In_ IUnknown* pReceiveCompletionQueue,
      _In_ IUnknown* pInitiatorCompletionQueue, _In_ IUnknown* pSharedReceiveQueue,
      _In_opt_ VOID* context, ULONG initiatorQueueDepth, ULONG maxInitiatorRequestSge,
      ULONG inlineDataSize, _Deref_out_ VOID** ppQueuePair) = 0;

  // Creates a connector (iid IID_IND2Connector).
  virtual HRESULT STDMETHODCALLTYPE CreateConnector(_In_ REFIID iid, _In_ HANDLE hOverlappedFile,
                                                    _Deref_out_ VOID** ppConnector) = 0;

  // Creates a listener (iid IID_IND2Listener).
  virtual HRESULT STDMETHODCALLTYPE CreateListener(_In_ REFIID iid, _In_ HANDLE hOverlappedFile,
                                                   _Deref_out_ VOID** ppListener) = 0;

 protected:
  ~IND2Adapter() = default;
};

// ---- IND2Provider ------------------------------------------------------------------------------
struct DECLSPEC_NOVTABLE IND2Provider : public IUnknown {
  // Every local address of every adapter; ND_BUFFER_OVERFLOW with the needed size.
  virtual HRESULT STDMETHODCALLTYPE QueryAddressList(_Out_writes_bytes_to_opt_(*pcbAddressList,
                                                                             *pcbAddressList)
                                                         SOCKET_ADDRESS_LIST* pAddressList,
                                                     _Inout_ ULONG* pcbAddressList) = 0;

  // The adapter that owns a local address (the port is ignored). ND_INVALID_ADDRESS.
  virtual HRESULT STDMETHODCALLTYPE ResolveAddress(_In_reads_bytes_(cbAddress)
                                                       const struct sockaddr* pAddress,
                                                   ULONG cbAddress,
                                                   _Out_ UINT64* pAdapterId) = 0;

  // Opens that adapter (iid IID_IND2Adapter).
  virtual HRESULT STDMETHODCALLTYPE OpenAdapter(_In_ REFIID iid, UINT64 adapterId,
                                                _Deref_out_ VOID** ppAdapter) = 0;

 protected:
  ~IND2Provider() = default;
};

// ---- Extension (ours): IND2QueuePairSendAndInvalidate -------------------------------------------
// ND v1's INDEndpoint::SendAndInvalidate (/work/shared/nd2-spec/INDEndpoint-SendAndInvalidate.txt)
// brought to ND2. Not part of Microsoft's ND2: this interface and its IID are this project's.
//
// {997513D1-7692-446F-9C0A-A4B1DB34DB45}: a random (version 4) GUID generated for this project.
DEFINE_GUID(IID_IND2QueuePairSendAndInvalidate, 0x997513d1, 0x7692, 0x446f, 0x9c, 0x0a, 0xa4,
            0xb1, 0xdb, 0x34, 0xdb, 0x45);

// Obtained from a queue pair: qp->QueryInterface(IID_IND2QueuePairSendAndInvalidate, &p)
// (E_NOINTERFACE from a provider without the extension). It is the same object as the queue
// pair: QueryInterface on it for IID_IND2QueuePair gives the queue pair back, and it holds a
// reference on it like any interface pointer (Release it).
struct DECLSPEC_NOVTABLE IND2QueuePairSendAndInvalidate : public IUnknown {
  // Sends the gathered buffers to the peer, exactly as IND2QueuePair::Send, and asks the peer's
  // adapter to invalidate the peer's memory window whose remote token is remoteToken (the
  // value the peer got from IND2MemoryWindow::GetRemoteToken and sent us), so that the peer
  // need not call Invalidate itself once we are done with the window.
  //
  //   requestContext  returned in the sender's ND2_RESULT.RequestContext.
  //   sge, nSge       the data to send, as for Send (nSge may be 0: a zero-byte send; sge may
  //                   then be NULL; the array is only read during the call).
  //   remoteToken     the peer's window to invalidate (v1 passed an ND_MW_DESCRIPTOR; in ND2
  //                   a window is named by its token, which is the R_Key on the wire).
  //   flags           ND_OP_FLAG_SILENT_SUCCESS, ND_OP_FLAG_READ_FENCE,
  //                   ND_OP_FLAG_SEND_AND_SOLICIT_EVENT, ND_OP_FLAG_INLINE, as for Send.
  //
  // On the wire: a SEND_ONLY_WITH_INVALIDATE (or SEND_FIRST ... SEND_LAST_WITH_INVALIDATE)
  // message whose IETH carries remoteToken.
  //
  // Results. The sender gets ONE result, in its initiator completion queue, as for a Send:
  // RequestType Nd2RequestTypeSend and its requestContext (and, as for a Send, no result when
  // it succeeds with ND_OP_FLAG_SILENT_SUCCESS). The receiver gets TWO, in its receive
  // completion queue, in this order: first the invalidate result (Status ND_SUCCESS,
  // RequestType Nd2RequestTypeInvalidate, BytesTransferred 0, QueuePairContext its queue
  // pair's context, RequestContext the window's IND2MemoryWindow pointer as its
  // CreateMemoryWindow returned it, not AddRef'd), then the result of the receive that took
  // the data (Nd2RequestTypeReceive, exactly as for a Send; SILENT_SUCCESS does not apply). The
  // window is then unbound, as after the peer's own Invalidate, and can be bound again. The
  // message needs a posted receive at the peer, as a Send does; the receiver's completion queue
  // needs room for both results. A remoteToken that names no window bound on the peer's queue
  // pair fails the request like a Send that the peer cannot take: the sender's result is an
  // error and the connection is torn down.
  //
  // Returns (the request is not posted on failure; the queue pair stays usable):
  //   ND_SUCCESS               posted; the result comes through the initiator queue.
  //   ND_CONNECTION_INVALID    the queue pair is not connected.
  //   ND_BUFFER_OVERFLOW       more data than the hardware supports.
  //   ND_NO_MORE_ENTRIES       the initiator queue is full.
  //   ND_DATA_OVERRUN          more SGEs than the queue pair's maxInitiatorRequestSge.
  //   ND_INVALID_PARAMETER_5   a flag this method does not take.
  virtual HRESULT STDMETHODCALLTYPE SendAndInvalidate(_In_opt_ VOID* requestContext,
                                                      _In_reads_opt_(nSge) const ND2_SGE sge[],
                                                      ULONG nSge, UINT32 remoteToken,
                                                      ULONG flags) = 0;

 protected:
  ~IND2QueuePairSendAndInvalidate() = default;
};

// ---- Extension (ours): IND2AdapterDiagnostics --------------------------------------------------
// What an adapter's stack holds now and what its connection manager has counted, for programs
// that must show that they leaked nothing (build/tools/rping --cycles) or that must see what the
// wire did where ND2 reports less (the reason code of a peer's REJ, which ND2 folds into
// ND_CONNECTION_REFUSED; a disconnect that crossed the peer's), and the port beneath the adapter
// (its driver, kernel interface, queues, MTU, MAC, frame counters: nd-adapterinfo with no
// address). Read-only: nothing here changes the adapter. Not part of Microsoft's ND2: these
// types and this IID are this project's.
//
// {ED25C650-31B3-4555-A59A-9F796E2D2F03}: a random (version 4) GUID generated for this project.
DEFINE_GUID(IID_IND2AdapterDiagnostics, 0xed25c650, 0x31b3, 0x4555, 0xa5, 0x9a, 0x9f, 0x79, 0x6e,
            0x2d, 0x2f, 0x03);

#define ND2_DIAGNOSTICS_VERSION_1 1

typedef struct _ND2_ADAPTER_DIAGNOSTICS {
  ULONG InfoVersion;  // in: ND2_DIAGNOSTICS_VERSION_1
  ULONG Reserved;     // out: 0
  // Held now (a released IND2QueuePair's queue pair is destroyed at once; its number then
  // waits in quarantine before a new queue pair may use it, 2 s).
  UINT64 QueuePairs;          // queue pairs in use
  UINT64 QuarantinedQpns;     // numbers of destroyed queue pairs held back from reuse (those
                              // whose 2 s are over leave when a queue pair is next created)
  UINT64 Connections;         // connections the connection manager tracks (time-wait included)
  UINT64 BoundPorts;          // ND ports bound (connectors, listeners, connections)
  UINT64 MemoryRegions;       // registered memory regions
  UINT64 MemoryWindows;       // memory windows
  UINT64 PacketBuffersInUse;  // the port's packet buffers (DPDK mbufs) out of its pool
  // Counted since NdStartup: CM messages (MADs on QP 1) sent and received.
  UINT64 CmRequestsSent, CmRequestsReceived;                      // REQ
  UINT64 CmRepliesSent, CmRepliesReceived;                        // REP
  UINT64 CmRejectsSent, CmRejectsReceived;                        // REJ
  UINT64 CmDisconnectRequestsSent, CmDisconnectRequestsReceived;  // DREQ
  UINT64 CmDisconnectRepliesSent, CmDisconnectRepliesReceived;    // DREP
  UINT64 CmRetransmits;         // CM messages sent again (no answer in time)
  UINT64 CmTimeouts;            // connections the CM gave up on (REQ, REP or DREQ unanswered)
  UINT64 CmCrossedDisconnects;  // the peer's DREQ arrived while ours was outstanding
} ND2_ADAPTER_DIAGNOSTICS;
static_assert(sizeof(ND2_ADAPTER_DIAGNOSTICS) == 8 + 7 * 8 + 13 * 8,
              "ND2_ADAPTER_DIAGNOSTICS layout");

typedef struct _ND2_CONNECTOR_DIAGNOSTICS {
  ULONG InfoVersion;       // in: ND2_DIAGNOSTICS_VERSION_1
  ULONG RejectReason;      // the IBTA CM REJ reason of the connection's REJ, received or sent
                           // (0: none). E.g. 8 invalid service ID (nobody listens on the port),
                           // 28 consumer reject (the peer's application: IND2Connector::Reject,
                           // rdma_reject)
  ULONG TimedOut;          // 1: the CM gave up waiting for the peer
  ULONG PeerDisconnected;  // 1: the peer sent a DREQ
  ULONG LocalQpn;          // the queue pair numbers on the wire (0: not known yet)
  ULONG PeerQpn;
  ULONG LocalCommId;       // the CM communication IDs
  ULONG PeerCommId;
} ND2_CONNECTOR_DIAGNOSTICS;
static_assert(sizeof(ND2_CONNECTOR_DIAGNOSTICS) == 32, "ND2_CONNECTOR_DIAGNOSTICS layout");

// ND2_PORT_DIAGNOSTICS::Identity: where the adapter's MAC, MTU, addresses and neighbours come from.
#define ND2_PORT_IDENTITY_OWN 0     // the profile's addresses; the stack's own ARP / ND
#define ND2_PORT_IDENTITY_KERNEL 1  // the kernel interface's addresses, routes and neighbours
// ND2_PORT_DIAGNOSTICS::XdpMode.
#define ND2_PORT_XDP_NONE 0       // not an AF_XDP port
#define ND2_PORT_XDP_COPY 1       // AF_XDP, copy mode (some socket is not zero-copy)
#define ND2_PORT_XDP_ZERO_COPY 2  // AF_XDP, every socket zero-copy
#define ND2_PORT_XDP_UNKNOWN 3    // AF_XDP, the mode not known

// The port (DPDK ethdev) beneath an adapter, as `ibv_devinfo` shows a device: its driver, the
// Linux interface it sits on, its queues, MTU and MAC, and its frame counters since NdStartup.
// The strings are NUL-terminated (cut to fit).
typedef struct _ND2_PORT_DIAGNOSTICS {
  ULONG InfoVersion;    // in: ND2_DIAGNOSTICS_VERSION_1
  char Driver[32];      // the DPDK driver: net_af_xdp, net_tap, net_ring, mlx5, ...
  char Interface[16];   // the kernel interface the port sits on (IFNAMSIZ), or ""
  char Name[48];        // the ethdev name
  ULONG Identity;       // ND2_PORT_IDENTITY_*
  ULONG XdpMode;        // ND2_PORT_XDP_*
  ULONG RxQueues, TxQueues;
  ULONG Mtu;            // the IP MTU the stack uses on the port
  ULONG InterfaceMtu;   // the kernel interface's MTU (0: no interface, or not known)
  UCHAR Mac[6];
  UCHAR Reserved[2];    // out: 0
  ULONG Reserved2;      // out: 0 (the counters below start 8-aligned)
  // The port's frames: received from the device, sent to it, and dropped on the way (RX: the
  // device's ring overflowed or had no buffer, a copy found the pool empty; TX: the device and
  // the backlog were full, a frame was longer than the MTU, or no buffer to linearize it).
  UINT64 RxPackets, TxPackets, RxDrops, TxDrops;
} ND2_PORT_DIAGNOSTICS;
static_assert(sizeof(ND2_PORT_DIAGNOSTICS) == 4 + 32 + 16 + 48 + 6 * 4 + 8 + 4 + 4 * 8,
              "ND2_PORT_DIAGNOSTICS layout");

// Obtained from an adapter: adapter->QueryInterface(IID_IND2AdapterDiagnostics, &d) (E_NOINTERFACE
// from a provider without the extension). A separate object holding a reference on the adapter:
// QueryInterface on it for IID_IND2Adapter gives the adapter back; Release it when done.
struct DECLSPEC_NOVTABLE IND2AdapterDiagnostics : public IUnknown {
  // Fills *pInfo (*pcbInfo in: its size; out: the size written or needed).
  //   ND_SUCCESS, ND_BUFFER_OVERFLOW (pInfo NULL or *pcbInfo too small: *pcbInfo = the size),
  //   ND_INVALID_PARAMETER_1 (InfoVersion not ND2_DIAGNOSTICS_VERSION_1),
  //   ND_INVALID_PARAMETER_2 (pcbInfo NULL).
  virtual HRESULT STDMETHODCALLTYPE QueryAdapter(_Out_opt_ ND2_ADAPTER_DIAGNOSTICS* pInfo,
                                                 _Inout_ ULONG* pcbInfo) = 0;

  // The connection of one of this adapter's connectors, as the connection manager knows it; still
  // there after the connection failed (a Connect completed ND_CONNECTION_REFUSED: RejectReason
  // says why), until the connector is released.
  //   ND_SUCCESS, ND_BUFFER_OVERFLOW, ND_INVALID_PARAMETER_1 (not a connector of this adapter),
  //   ND_INVALID_PARAMETER_2 (InfoVersion), ND_INVALID_PARAMETER_3 (pcbInfo NULL),
  //   ND_CONNECTION_INVALID (the connector has no connection: no REQ sent, no request taken).
  virtual HRESULT STDMETHODCALLTYPE QueryConnector(_In_ IUnknown* pConnector,
                                                   _Out_opt_ ND2_CONNECTOR_DIAGNOSTICS* pInfo,
                                                   _Inout_ ULONG* pcbInfo) = 0;

  // The adapter's port (ND2_PORT_DIAGNOSTICS), read now.
  //   ND_SUCCESS, ND_BUFFER_OVERFLOW (pInfo NULL or *pcbInfo too small: *pcbInfo = the size),
  //   ND_INVALID_PARAMETER_1 (InfoVersion not ND2_DIAGNOSTICS_VERSION_1),
  //   ND_INVALID_PARAMETER_2 (pcbInfo NULL).
  virtual HRESULT STDMETHODCALLTYPE QueryPort(_Out_opt_ ND2_PORT_DIAGNOSTICS* pInfo,
                                              _Inout_ ULONG* pcbInfo) = 0;

 protected:
  ~IND2AdapterDiagnostics() = default;
};

#endif  // _NDSPI_H_
