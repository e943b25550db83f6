// SPDX-License-Identifier: MIT
// hello_nd2: a small ND2 program — nothing but <ndspi.h>, <ndsupport.h> and
// libnd2 (built with `pkg-config --cflags --libs nd2`). One adapter (the local
// address given, default 10.0.0.1) connects to itself: a listener and a
// connector, a 64-byte Send into a posted Receive, Disconnect. Waits are
// GetOverlappedResult(wait = TRUE), as in Microsoft's samples. Prints the
// received text and which libnd2 it ran on; exit status 0 on success.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include <arpa/inet.h>

#include <ndspi.h>
#include <ndsupport.h>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    HRESULT hr_ = (call);                                                               \
    if (FAILED(hr_)) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s failed: %08x\n", __FILE__, __LINE__, #call,       \
                   static_cast<unsigned>(hr_));                                         \
      return 1;                                                                         \
    }                                                                                   \
  } while (0)

// Waits for an overlapped request that returned ND_PENDING.
static HRESULT Wait(IND2Overlapped* o, OVERLAPPED* ov, HRESULT hr) {
  return hr == ND_PENDING ? o->GetOverlappedResult(ov, TRUE) : hr;
}

int main(int argc, char** argv) {
  const char* ip = argc > 1 ? argv[1] : "10.0.0.1";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (inet_pton(AF_INET, ip, &addr.sin_addr) != 1) return 2;
  CHECK(NdStartup());

  IND2Adapter* adapter = nullptr;
  CHECK(NdOpenAdapter(IID_IND2Adapter, reinterpret_cast<sockaddr*>(&addr), sizeof addr,
                      reinterpret_cast<void**>(&adapter)));
  HANDLE file = nullptr;
  CHECK(adapter->CreateOverlappedFile(&file));
  OVERLAPPED ov{}, sov{};
  ov.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr);
  sov.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr);

  IND2CompletionQueue* cq = nullptr;
  CHECK(adapter->CreateCompletionQueue(IID_IND2CompletionQueue, file, 16, 0, 0, reinterpret_cast<void**>(&cq)));
  IND2QueuePair *client_qp = nullptr, *server_qp = nullptr;
  CHECK(adapter->CreateQueuePair(IID_IND2QueuePair, cq, cq, nullptr, 4, 4, 1, 1, 0,
                                 reinterpret_cast<void**>(&client_qp)));
  CHECK(adapter->CreateQueuePair(IID_IND2QueuePair, cq, cq, nullptr, 4, 4, 1, 1, 0,
                                 reinterpret_cast<void**>(&server_qp)));
  static char buf[128];
  IND2MemoryRegion* mr = nullptr;
  CHECK(adapter->CreateMemoryRegion(IID_IND2MemoryRegion, file, reinterpret_cast<void**>(&mr)));
  CHECK(Wait(mr, &ov, mr->Register(buf, sizeof buf, ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov)));

  // The server: a listener on port 54321 and a receive posted before Accept.
  IND2Listener* listener = nullptr;
  CHECK(adapter->CreateListener(IID_IND2Listener, file, reinterpret_cast<void**>(&listener)));
  addr.sin_port = htons(54321);
  CHECK(listener->Bind(reinterpret_cast<sockaddr*>(&addr), sizeof addr));
  CHECK(listener->Listen(0));
  IND2Connector *client = nullptr, *server = nullptr;
  CHECK(adapter->CreateConnector(IID_IND2Connector, file, reinterpret_cast<void**>(&client)));
  CHECK(adapter->CreateConnector(IID_IND2Connector, file, reinterpret_cast<void**>(&server)));
  HRESULT pending_request = listener->GetConnectionRequest(server, &sov);
  CHECK(pending_request);
  ND2_SGE rsge = {buf + 64, 64, mr->GetLocalToken()};
  CHECK(server_qp->Receive(nullptr, &rsge, 1));

  // The client connects to it (same adapter: loopback).
  CHECK(client->Connect(client_qp, reinterpret_cast<sockaddr*>(&addr), sizeof addr, 0, 0, nullptr, 0, &ov));
  CHECK(Wait(listener, &sov, pending_request));
  CHECK(server->Accept(server_qp, 0, 0, nullptr, 0, &sov));
  CHECK(Wait(client, &ov, ND_PENDING));  // Connect done: the server accepted
  CHECK(Wait(client, &ov, client->CompleteConnect(&ov)));
  CHECK(Wait(server, &sov, ND_PENDING));  // Accept done

  std::snprintf(buf, 64, "hello over ND2");
  ND2_SGE ssge = {buf, 64, mr->GetLocalToken()};
  CHECK(client_qp->Send(nullptr, &ssge, 1, 0));
  int done = 0;
  for (long spins = 0; done < 2 && spins < 100000000; spins++) {  // the Send and the Receive
    ND2_RESULT r;
    if (cq->GetResults(&r, 1) == 1) {
      CHECK(r.Status);
      done++;
    }
  }
  if (done < 2) return 3;
  std::printf("received: %s\n", buf + 64);

  CHECK(Wait(client, &ov, client->Disconnect(&ov)));
  server->Release();
  client->Release();
  listener->Release();
  server_qp->Release();
  client_qp->Release();
  CHECK(Wait(mr, &ov, mr->Deregister(&ov)));
  mr->Release();
  cq->Release();
  CloseHandle(file);
  CloseHandle(ov.hEvent);
  CloseHandle(sov.hEvent);
  adapter->Release();
  Dl_info where{};
  if (dladdr(reinterpret_cast<void*>(&NdStartup), &where) && where.dli_fname)
    std::printf("libnd2: %s\n", where.dli_fname);
  CHECK(NdCleanup());
  return 0;
}
