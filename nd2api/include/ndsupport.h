// SPDX-License-Identifier: MIT
// ndsupport.h: the NetworkDirect helper functions applications call to find and open adapters.
//
// Signatures: Microsoft's ndsupport.h (microsoft/NetworkDirect, the SIZE_T form of
// NdQueryAddressList used by its ndutil framework and samples); the list is
// /work/shared/nd2-reference.md ("Helper layer", "The helpers of ndsupport.h"). C linkage.
// Implemented by libnd2 (nd2api/); declared only here.
//
// Typical use: NdStartup; NdResolveAddress (client: the local address that reaches the peer);
// NdOpenAdapter(IID_IND2Adapter, local address); ...; NdCleanup.
#ifndef _NETDIRECT_H_
#define _NETDIRECT_H_

#include "ndspi.h"

#define ND_HELPER_API __stdcall

// NdQueryAddressList flags
#define ND_QUERY_EXCLUDE_EMULATOR_ADDRESSES 0x00000001
#define ND_QUERY_EXCLUDE_NDv1_ADDRESSES 0x00000002
#define ND_QUERY_EXCLUDE_NDv2_ADDRESSES 0x00000004

// ND v1's adapter interface: not provided (NdOpenV1Adapter returns ND_NOT_SUPPORTED), declared
// only so that NdOpenV1Adapter has its signature.
struct INDAdapter;

EXTERN_C_START

// Loads the provider(s) and brings up the adapters of the configuration. Call once before the
// others; every successful NdStartup is matched by one NdCleanup.
HRESULT ND_HELPER_API NdStartup(VOID);
HRESULT ND_HELPER_API NdCleanup(VOID);

// Forgets cached provider state so the next calls see adapter changes.
VOID ND_HELPER_API NdFlushProviders(VOID);

// Every local ND address (flags: ND_QUERY_EXCLUDE_*). With a NULL list or a too-small
// *pcbAddressList: ND_BUFFER_OVERFLOW and the size needed in *pcbAddressList.
HRESULT ND_HELPER_API NdQueryAddressList(
    _In_ DWORD flags,
    _Out_opt_bytecap_post_bytecount_(*pcbAddressList, *pcbAddressList)
        SOCKET_ADDRESS_LIST* pAddressList,
    _Inout_ SIZE_T* pcbAddressList);

// The local ND address to use to reach pRemoteAddress. ND_BUFFER_OVERFLOW if
// *pcbLocalAddress is too small, ND_INVALID_ADDRESS, ND_NETWORK_UNREACHABLE.
HRESULT ND_HELPER_API NdResolveAddress(
    _In_bytecount_(cbRemoteAddress) const struct sockaddr* pRemoteAddress,
    _In_ SIZE_T cbRemoteAddress, _Out_bytecap_(*pcbLocalAddress) struct sockaddr* pLocalAddress,
    _Inout_ SIZE_T* pcbLocalAddress);

// ND_SUCCESS if pAddress is a local ND address.
HRESULT ND_HELPER_API NdCheckAddress(_In_bytecount_(cbAddress) const struct sockaddr* pAddress,
                                     _In_ SIZE_T cbAddress);

// Opens the adapter that owns the local address pAddress (iid IID_IND2Adapter).
HRESULT ND_HELPER_API NdOpenAdapter(_In_ REFIID iid,
                                    _In_bytecount_(cbAddress) const struct sockaddr* pAddress,
                                    _In_ SIZE_T cbAddress, _Deref_out_ VOID** ppIAdapter);

// ND v1: not supported; returns ND_NOT_SUPPORTED.
HRESULT ND_HELPER_API NdOpenV1Adapter(_In_bytecount_(cbAddress) const struct sockaddr* pAddress,
                                      _In_ SIZE_T cbAddress, _Deref_out_ INDAdapter** ppIAdapter);

EXTERN_C_END

#endif  // _NETDIRECT_H_
