// SPDX-License-Identifier: MIT
// Compile-only check (tests/nd2api/meson.build runs the compiler on it with -Wall -Wextra
// -Wpedantic -Werror, C++17 and C++20; it is never linked): a program written the way Windows
// ND2 programs are (Microsoft's ndping / ndtestutil style), against the Linux headers,
// unchanged. It uses the SAL annotations, HRESULT and the ND status codes, OVERLAPPED with
// events and a completion port, IIDs and QueryInterface, ND2_RESULT fields, min(), __fallthrough,
// and includes <functional> after the ND headers as ndtestutil.h does.
#include <stdio.h>
#include <stdlib.h>
#include <new>
#include <arpa/inet.h>  // inet_pton: the program's own console part (WSAStringToAddress on Windows)

#include <ndsupport.h>
#include <ndstatus.h>

#include <functional>
#include <string>

const USHORT x_DefaultPort = 54324;
const ULONG x_HdrLen = 40;
const SIZE_T x_MaxXfer = 4 * 1024 * 1024;

#define RECV_CTXT (reinterpret_cast<void*>(0x1000))
#define SEND_CTXT (reinterpret_cast<void*>(0x2000))

_Analysis_noreturn_ inline void LogErrorExit(HRESULT hr, const char* msg, int code) {
  printf("Test failed. Result:%#x, %s\n", static_cast<unsigned>(hr), msg);
  exit(code);
}

inline void LogIfErrorExit(HRESULT result, HRESULT expected, const char* msg, int code) {
  if (result != expected) {
    LogErrorExit(result, msg, code);
  }
}

// One request per OVERLAPPED, found again from a completion-port packet.
struct PendingOp {
  ULONG id;
  OVERLAPPED ov;
};

class NdTestBase {
 protected:
  IND2Adapter* m_pAdapter = nullptr;
  IND2MemoryRegion* m_pMr = nullptr;
  IND2MemoryWindow* m_pMw = nullptr;
  IND2CompletionQueue* m_pCq = nullptr;
  IND2QueuePair* m_pQp = nullptr;
  IND2Connector* m_pConnector = nullptr;
  IND2Listener* m_pListen = nullptr;
  HANDLE m_hAdapterFile = nullptr;
  HANDLE m_hIocp = nullptr;
  OVERLAPPED m_Ov;
  char* m_Buf = nullptr;
  ULONG m_inlineThreshold = 0;
  volatile LONG m_nOutstanding = 0;

 public:
  NdTestBase() { RtlZeroMemory(&m_Ov, sizeof(m_Ov)); }

  ~NdTestBase() {
    if (m_pMw != nullptr) m_pMw->Release();
    if (m_pMr != nullptr) m_pMr->Release();
    if (m_pQp != nullptr) m_pQp->Release();
    if (m_pCq != nullptr) m_pCq->Release();
    if (m_pConnector != nullptr) m_pConnector->Release();
    if (m_pListen != nullptr) m_pListen->Release();
    if (m_hIocp != nullptr) CloseHandle(m_hIocp);
    if (m_hAdapterFile != nullptr) CloseHandle(m_hAdapterFile);
    if (m_pAdapter != nullptr) m_pAdapter->Release();
    if (m_Ov.hEvent != nullptr) CloseHandle(m_Ov.hEvent);
    delete[] m_Buf;
  }

  void Init(_In_ const struct sockaddr_in& v4Src) {
    HRESULT hr = NdOpenAdapter(IID_IND2Adapter, reinterpret_cast<const struct sockaddr*>(&v4Src),
                               sizeof(v4Src), reinterpret_cast<void**>(&m_pAdapter));
    if (FAILED(hr)) {
      LogErrorExit(hr, "Failed open adapter.", __LINE__);
    }
    m_Ov.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr);
    if (m_Ov.hEvent == nullptr) {
      LogErrorExit(HRESULT_FROM_WIN32(GetLastError()), "CreateEvent failed", __LINE__);
    }
    hr = m_pAdapter->CreateOverlappedFile(&m_hAdapterFile);
    LogIfErrorExit(hr, ND_SUCCESS, "IND2Adapter::CreateOverlappedFile failed", __LINE__);
    m_hIocp = CreateIoCompletionPort(m_hAdapterFile, nullptr, 0, 0);
    if (m_hIocp == nullptr) {
      LogErrorExit(E_FAIL, "CreateIoCompletionPort failed", __LINE__);
    }
  }

  void GetAdapterInfo(ND2_ADAPTER_INFO* pInfo) {
    memset(pInfo, 0, sizeof(*pInfo));
    pInfo->InfoVersion = ND_VERSION_2;
    ULONG cbInfo = sizeof(*pInfo);
    HRESULT hr = m_pAdapter->Query(pInfo, &cbInfo);
    if (hr == ND_BUFFER_OVERFLOW || FAILED(hr)) {
      LogErrorExit(hr, "IND2Adapter::Query failed", __LINE__);
    }
    m_inlineThreshold = pInfo->InlineRequestThreshold;
    if ((pInfo->AdapterFlags & ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED) == 0) {
      LogErrorExit(ND_NOT_SUPPORTED, "Adapter does not support in-order RDMA", __LINE__);
    }
  }

  void CreateObjects(ULONG queueDepth, ULONG nSge) {
    HRESULT hr = m_pAdapter->CreateCompletionQueue(IID_IND2CompletionQueue, m_hAdapterFile,
                                                   queueDepth, 0, 0,
                                                   reinterpret_cast<VOID**>(&m_pCq));
    LogIfErrorExit(hr, ND_SUCCESS, "IND2Adapter::CreateCompletionQueue failed", __LINE__);

    hr = m_pAdapter->CreateMemoryRegion(IID_IND2MemoryRegion, m_hAdapterFile,
                                        reinterpret_cast<VOID**>(&m_pMr));
    LogIfErrorExit(hr, ND_SUCCESS, "IND2Adapter::CreateMemoryRegion failed", __LINE__);

    m_Buf = new (std::nothrow) char[x_MaxXfer + x_HdrLen];
    hr = m_pMr->Register(m_Buf, x_MaxXfer + x_HdrLen,
                         ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_WRITE, &m_Ov);
    if (hr == ND_PENDING) {
      hr = m_pMr->GetOverlappedResult(&m_Ov, TRUE);
    }
    LogIfErrorExit(hr, ND_SUCCESS, "IND2MemoryRegion::Register failed", __LINE__);

    hr = m_pAdapter->CreateConnector(IID_IND2Connector, m_hAdapterFile,
                                     reinterpret_cast<VOID**>(&m_pConnector));
    LogIfErrorExit(hr, ND_SUCCESS, "IND2Adapter::CreateConnector failed", __LINE__);

    hr = m_pAdapter->CreateQueuePair(IID_IND2QueuePair, m_pCq, m_pCq, nullptr, queueDepth,
                                     queueDepth, nSge, nSge, m_inlineThreshold,
                                     reinterpret_cast<VOID**>(&m_pQp));
    LogIfErrorExit(hr, ND_SUCCESS, "IND2Adapter::CreateQueuePair failed", __LINE__);

    hr = m_pAdapter->CreateMemoryWindow(IID_IND2MemoryWindow, reinterpret_cast<VOID**>(&m_pMw));
    LogIfErrorExit(hr, ND_SUCCESS, "IND2Adapter::CreateMemoryWindow failed", __LINE__);
  }

  void Connect(_In_ const sockaddr_in& v4Src, _In_ const sockaddr_in& v4Dst, _In_opt_
               const VOID* pPrivateData, DWORD cbPrivateData) {
    HRESULT hr =
        m_pConnector->Bind(reinterpret_cast<const sockaddr*>(&v4Src), sizeof(v4Src));
    LogIfErrorExit(hr, ND_SUCCESS, "Bind failed", __LINE__);
    hr = m_pConnector->Connect(m_pQp, reinterpret_cast<const sockaddr*>(&v4Dst), sizeof(v4Dst),
                               0, 0, pPrivateData, cbPrivateData, &m_Ov);
    if (hr == ND_PENDING) {
      hr = m_pConnector->GetOverlappedResult(&m_Ov, TRUE);
    }
    if (hr == ND_CONNECTION_REFUSED || hr == STATUS_BAD_NETWORK_NAME) {
      LogErrorExit(hr, "no listener", __LINE__);
    }
    ULONG len = 0;
    if (m_pConnector->GetPrivateData(nullptr, &len) != ND_BUFFER_OVERFLOW && len != 0) {
      LogErrorExit(E_UNEXPECTED, "GetPrivateData", __LINE__);
    }
    ULONG inbound = 0;
    ULONG outbound = 0;
    hr = m_pConnector->GetReadLimits(&inbound, &outbound);
    hr = m_pConnector->CompleteConnect(&m_Ov);
    if (hr == ND_PENDING) {
      hr = m_pConnector->GetOverlappedResult(&m_Ov, TRUE);
    }
    LogIfErrorExit(hr, ND_SUCCESS, "IND2Connector::CompleteConnect failed", __LINE__);
  }

  void Listen(_In_ const sockaddr_in& v4Src) {
    HRESULT hr = m_pAdapter->CreateListener(IID_IND2Listener, m_hAdapterFile,
                                            reinterpret_cast<VOID**>(&m_pListen));
    LogIfErrorExit(hr, ND_SUCCESS, "IND2Adapter::CreateListener failed", __LINE__);
    hr = m_pListen->Bind(reinterpret_cast<const sockaddr*>(&v4Src), sizeof(v4Src));
    if (hr == STATUS_ADDRESS_ALREADY_ASSOCIATED) {
      LogErrorExit(hr, "already bound", __LINE__);
    }
    hr = m_pListen->Listen(0);
    hr = m_pListen->GetConnectionRequest(m_pConnector, &m_Ov);
    if (hr == ND_PENDING) {
      hr = m_pListen->GetOverlappedResult(&m_Ov, TRUE);
    }
    ULONG peerQueueDepth = 0;
    hr = m_pConnector->Accept(m_pQp, 0, 0, &peerQueueDepth, sizeof(peerQueueDepth), &m_Ov);
    if (hr == ND_PENDING) {
      hr = m_pConnector->GetOverlappedResult(&m_Ov, TRUE);
    }
    LogIfErrorExit(hr, ND_SUCCESS, "IND2Connector::Accept failed", __LINE__);
  }

  ULONG PrepareSge(ND2_SGE* pSge, const ULONG nSge, char* buff, ULONG buffSize, ULONG hdrSize) {
    ULONG currSge = 0;
    ULONG buffIdx = 0;
    while (buffSize != 0 && currSge < nSge) {
      pSge[currSge].Buffer = buff + buffIdx;
      ULONG currLen = min(buffSize, hdrSize);
      pSge[currSge].BufferLength = currLen;
      pSge[currSge].MemoryRegionToken = m_pMr->GetLocalToken();
      buffSize -= currLen;
      buffIdx += currLen;
      currSge++;
    }
    return currSge;
  }

  void WaitForEventNotification() {
    HRESULT hr = m_pCq->Notify(ND_CQ_NOTIFY_ANY, &m_Ov);
    if (hr == ND_PENDING) {
      hr = m_pCq->GetOverlappedResult(&m_Ov, TRUE);
    }
  }

  void WaitForCompletion(const std::function<void(ND2_RESULT*)>& process, bool bBlocking) {
    for (;;) {
      ND2_RESULT ndRes;
      if (m_pCq->GetResults(&ndRes, 1) == 1) {
        process(&ndRes);
        break;
      }
      if (bBlocking) {
        WaitForEventNotification();
      }
    }
  }

  // Drains the CQ like ndping's server: returns the first failure.
  HRESULT ReceivePings(ND2_SGE* sgl, ULONG nSge) {
    HRESULT hr = ND_SUCCESS;
    do {
      ND2_RESULT results[8];
      ULONG n = m_pCq->GetResults(results, 8);
      for (ULONG i = 0; i < n && hr == ND_SUCCESS; ++i) {
        hr = results[i].Status;
        switch (hr) {
          case ND_SUCCESS:
            if (results[i].RequestType == Nd2RequestTypeSend) {
              InterlockedDecrement(&m_nOutstanding);
              break;
            }
            if (results[i].RequestType == Nd2RequestTypeReceive &&
                results[i].RequestContext == RECV_CTXT && results[i].BytesTransferred == 0) {
              hr = m_pQp->Send(SEND_CTXT, nullptr, 0, 0);
              InterlockedIncrement(&m_nOutstanding);
            }
            hr = m_pQp->Receive(RECV_CTXT, sgl, nSge);
            __fallthrough;
          case ND_CANCELED:
            break;
          default:
            printf("GetResults returned %08x for context %p of queue pair %p\n",
                   static_cast<unsigned>(hr), results[i].RequestContext,
                   results[i].QueuePairContext);
        }
      }
      if (n == 0) {
        WaitForEventNotification();
      }
    } while (hr == ND_SUCCESS);
    return hr;
  }

  void RdmaWithWindow(UINT64 remoteAddress, UINT32 remoteToken) {
    HRESULT hr = m_pQp->Bind(nullptr, m_pMr, m_pMw, m_Buf, x_MaxXfer,
                             ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE);
    UINT32 token = m_pMw->GetRemoteToken();
    ND2_SGE sge = {m_Buf, x_HdrLen, m_pMr->GetLocalToken()};
    hr = m_pQp->Write(nullptr, &sge, 1, remoteAddress, remoteToken,
                      sge.BufferLength < m_inlineThreshold ? ND_OP_FLAG_INLINE : 0);
    hr = m_pQp->Read(nullptr, &sge, 1, remoteAddress, remoteToken, ND_OP_FLAG_READ_FENCE);
    hr = m_pQp->Invalidate(nullptr, m_pMw, 0);

    // The ND v1 SendAndInvalidate, as this provider's extension of the queue pair.
    IND2QueuePairSendAndInvalidate* pSai = nullptr;
    hr = m_pQp->QueryInterface(IID_IND2QueuePairSendAndInvalidate,
                               reinterpret_cast<void**>(&pSai));
    if (SUCCEEDED(hr)) {
      hr = pSai->SendAndInvalidate(SEND_CTXT, &sge, 1, token, ND_OP_FLAG_SEND_AND_SOLICIT_EVENT);
      pSai->Release();
    } else if (hr != E_NOINTERFACE) {
      LogErrorExit(hr, "QueryInterface", __LINE__);
    }
    LogIfErrorExit(hr, ND_SUCCESS, "rdma", __LINE__);
  }

  // Completion-port mode: wait for the port packet of an overlapped request.
  HRESULT WaitOnPort(DWORD timeoutMs) {
    DWORD bytes = 0;
    ULONG_PTR key = 0;
    OVERLAPPED* pOv = nullptr;
    BOOL ok = GetQueuedCompletionStatus(m_hIocp, &bytes, &key, &pOv, timeoutMs);
    if (!ok && pOv == nullptr) {
      return GetLastError() == WAIT_TIMEOUT ? ND_TIMEOUT : ND_UNSUCCESSFUL;
    }
    PendingOp* op = CONTAINING_RECORD(pOv, PendingOp, ov);
    printf("op %u done\n", op->id);
    return m_pCq->GetOverlappedResult(pOv, FALSE);
  }

  void Shutdown() {
    PendingOp op;
    RtlZeroMemory(&op, sizeof(op));
    op.id = 1;
    // Low bit of hEvent: do not queue this completion to the port.
    op.ov.hEvent = reinterpret_cast<HANDLE>(reinterpret_cast<ULONG_PTR>(m_Ov.hEvent) | 1);
    HRESULT hr = m_pConnector->Disconnect(&op.ov);
    if (hr == ND_PENDING) {
      if (WaitForSingleObject(m_Ov.hEvent, INFINITE) != WAIT_OBJECT_0) {
        LogErrorExit(E_FAIL, "wait", __LINE__);
      }
      hr = m_pConnector->GetOverlappedResult(&op.ov, FALSE);
    }
    hr = m_pMr->Deregister(&m_Ov);
    if (hr == ND_PENDING) {
      hr = m_pMr->GetOverlappedResult(&m_Ov, TRUE);
    }
    PostQueuedCompletionStatus(m_hIocp, 0, 0, nullptr);
    SetEvent(m_Ov.hEvent);
    ResetEvent(m_Ov.hEvent);
  }
};

int ListAddresses() {
  SIZE_T len = 0;
  HRESULT hr = NdQueryAddressList(0, nullptr, &len);
  if (hr != ND_BUFFER_OVERFLOW) {
    return -1;
  }
  SOCKET_ADDRESS_LIST* pList = static_cast<SOCKET_ADDRESS_LIST*>(malloc(len));
  hr = NdQueryAddressList(ND_QUERY_EXCLUDE_EMULATOR_ADDRESSES, pList, &len);
  if (FAILED(hr)) {
    free(pList);
    return -1;
  }
  int count = 0;
  for (INT i = 0; i < pList->iAddressCount; ++i) {
    const SOCKET_ADDRESS& a = pList->Address[i];
    if (a.lpSockaddr->sa_family == AF_INET && a.iSockaddrLength >= INT(sizeof(sockaddr_in))) {
      hr = NdCheckAddress(a.lpSockaddr, a.iSockaddrLength);
      count += SUCCEEDED(hr) ? 1 : 0;
    }
  }
  free(pList);
  return count;
}

int __cdecl main(int argc, char* argv[]) {
  struct sockaddr_in v4Server = {};
  v4Server.sin_family = AF_INET;
  v4Server.sin_port = htons(x_DefaultPort);
  if (argc > 1 && inet_pton(AF_INET, argv[1], &v4Server.sin_addr) != 1) {
    return 1;
  }

  HRESULT hr = NdStartup();
  if (FAILED(hr)) {
    LogErrorExit(hr, "NdStartup failed", __LINE__);
  }
  struct sockaddr_in v4Src = {};
  SIZE_T len = sizeof(v4Src);
  hr = NdResolveAddress(reinterpret_cast<const sockaddr*>(&v4Server), sizeof(v4Server),
                        reinterpret_cast<sockaddr*>(&v4Src), &len);
  if (FAILED(hr)) {
    LogErrorExit(hr, "NdResolveAddress failed", __LINE__);
  }

  {
    NdTestBase test;
    test.Init(v4Src);
    ND2_ADAPTER_INFO info;
    test.GetAdapterInfo(&info);
    ULONG depth = min(info.MaxCompletionQueueDepth, info.MaxReceiveQueueDepth);
    depth = min(depth, 128u);
    test.CreateObjects(depth, 1);
    ULONG queueDepth = depth;
    test.Connect(v4Src, v4Server, &queueDepth, sizeof(queueDepth));
    ND2_SGE sgl[4];
    ULONG nSge = test.PrepareSge(sgl, 4, nullptr, x_MaxXfer, x_HdrLen);
    hr = test.ReceivePings(sgl, nSge);
    test.WaitForCompletion([](ND2_RESULT* r) { printf("%u bytes\n", r->BytesTransferred); }, true);
    test.RdmaWithWindow(0x1000, 0x42);
    hr = test.WaitOnPort(100);
    test.Shutdown();
  }

  printf("%d addresses\n", ListAddresses());
  std::string done = "done";
  printf("%s\n", done.c_str());
  NdFlushProviders();
  return FAILED(NdCleanup()) ? 1 : 0;
}
