// SPDX-License-Identifier: MIT
// nd2_progress_peer: one side of a two-process ND2 exchange whose point is what the
// application does NOT do — it sleeps, spins on memory or exits right after an ND2 call — so
// that only a provider that progresses on its own (or sends before the call returns) lets the
// other side finish. Driven by nd2_progress_test.py over two taps on a bridge; public ND2
// headers only.
//
//   nd2_progress_peer server|client CASE ADDR[:PORT]
//
// Cases (the sleeper is the side named first; the other side checks, with a bound under the
// sleep so that the sleeper's waking up cannot be what completes it):
//   complete-sleep    client: Connect, CompleteConnect, sleep.  server: Accept completes
//   reject-sleep      server: Reject, sleep.                    client: ND_CONNECTION_REFUSED
//   disconnect-sleep  client: Disconnect (not waited), sleep.   server: NotifyDisconnect and
//                                                               the posted receive flushed
//   release-sleep     client: releases connector and QP, sleep. server: as disconnect-sleep
//   exit              client: exit(0) while connected (no release, no NdCleanup).
//                                                               server: as disconnect-sleep
//   listen-sleep      server: Listen, sleep, then accept.       client: Connect succeeds
//                                                               (ARP and the REQ answered
//                                                               while the server slept)
//   poll-memory       server: polls its buffer's last byte for the client's Writes, no ND2
//                     call meanwhile.                           client: every Write completes
//                                                               ND_SUCCESS (its ACKs come)
// Prints "CASE ROLE: ok ..." and exits 0, or "CASE ROLE: FAIL ..." and exits 1.
#include <ndsupport.h>

#include <arpa/inet.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr DWORD kSleepMs = 4000;  // the sleeper's sleep
constexpr DWORD kBoundMs = 3000;  // the checker's bound (under the sleep)
constexpr int kWrites = 200;      // poll-memory
constexpr ULONG kBuf = 4096;

const char* g_case = "";
const char* g_role = "";

[[noreturn]] void Fail(const char* what, HRESULT hr = 0) {
  std::printf("%s %s: FAIL %s (%08x)\n", g_case, g_role, what, static_cast<unsigned>(hr));
  std::fflush(stdout);
  _exit(1);
}

void Check(HRESULT hr, const char* what) {
  if (FAILED(hr)) Fail(what, hr);
}

void Nap(DWORD ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Waits up to ms for an overlapped request; its status, or ND_TIMEOUT.
HRESULT Await(IND2Overlapped* o, OVERLAPPED* ov, HRESULT h, DWORD ms) {
  if (h != ND_PENDING) return h;
  if (WaitForSingleObject(ov->hEvent, ms) != WAIT_OBJECT_0) return ND_TIMEOUT;
  return o->GetOverlappedResult(ov, FALSE);
}

struct Side {
  IND2Adapter* adapter = nullptr;
  HANDLE file = nullptr;
  IND2CompletionQueue* cq = nullptr;
  IND2QueuePair* qp = nullptr;
  IND2MemoryRegion* mr = nullptr;
  IND2Connector* conn = nullptr;
  OVERLAPPED ov{};
  std::vector<char> buf = std::vector<char>(kBuf);

  void Open(const sockaddr_in& local) {
    Check(NdOpenAdapter(IID_IND2Adapter, reinterpret_cast<const sockaddr*>(&local), sizeof local,
                        reinterpret_cast<void**>(&adapter)),
          "NdOpenAdapter");
    Check(adapter->CreateOverlappedFile(&file), "CreateOverlappedFile");
    ov.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr);
    Check(adapter->CreateCompletionQueue(IID_IND2CompletionQueue, file, 64, 0, 0, reinterpret_cast<void**>(&cq)),
          "CreateCompletionQueue");
    Check(adapter->CreateQueuePair(IID_IND2QueuePair, cq, cq, nullptr, 16, 16, 1, 1, 64, reinterpret_cast<void**>(&qp)),
          "CreateQueuePair");
    Check(adapter->CreateMemoryRegion(IID_IND2MemoryRegion, file, reinterpret_cast<void**>(&mr)),
          "CreateMemoryRegion");
    Check(Await(mr, &ov,
                mr->Register(buf.data(), kBuf,
                             ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_WRITE, &ov),
                INFINITE),
          "Register");
    Check(adapter->CreateConnector(IID_IND2Connector, file, reinterpret_cast<void**>(&conn)), "CreateConnector");
  }
  // The next completion, polling (GetResults) up to ms.
  bool Next(ND2_RESULT* r, DWORD ms) {
    const uint64_t end = NowMs() + ms;
    while (NowMs() < end)
      if (cq->GetResults(r, 1) == 1) return true;
    return false;
  }
  void PostReceive() {
    ND2_SGE sge = {buf.data(), kBuf, mr->GetLocalToken()};
    Check(qp->Receive(nullptr, &sge, 1), "Receive");
  }
};

// Peer info a server sends for poll-memory.
struct PeerInfo {
  UINT64 address;
  UINT32 token;
  UINT32 pad;
};

sockaddr_in Parse(const char* s) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  std::string ip = s;
  uint16_t port = 54330;
  if (auto c = ip.find(':'); c != std::string::npos) {
    port = static_cast<uint16_t>(std::atoi(ip.c_str() + c + 1));
    ip.resize(c);
  }
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) {
    std::fprintf(stderr, "bad address %s\n", s);
    std::exit(2);
  }
  a.sin_port = htons(port);
  return a;
}

// The server's side up to a connection request in its connector (sleep_ms before asking).
IND2Listener* Listen(Side& s, const sockaddr_in& addr, DWORD sleep_ms = 0) {
  IND2Listener* l = nullptr;
  Check(s.adapter->CreateListener(IID_IND2Listener, s.file, reinterpret_cast<void**>(&l)), "CreateListener");
  Check(l->Bind(reinterpret_cast<const sockaddr*>(&addr), sizeof addr), "Listener Bind");
  Check(l->Listen(0), "Listen");
  std::printf("listening\n");
  std::fflush(stdout);
  if (sleep_ms) Nap(sleep_ms);
  OVERLAPPED lov{};
  lov.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr);
  Check(Await(l, &lov, l->GetConnectionRequest(s.conn, &lov), 60000), "GetConnectionRequest");
  CloseHandle(lov.hEvent);
  return l;
}

HRESULT Connect(Side& c, const sockaddr_in& server, DWORD ms) {
  return Await(c.conn, &c.ov,
               c.conn->Connect(c.qp, reinterpret_cast<const sockaddr*>(&server), sizeof server, 1, 1, nullptr, 0,
                               &c.ov),
               ms);
}

// The server's check after the client went away: NotifyDisconnect and the posted receive flushed.
void ExpectPeerGone(Side& s) {
  OVERLAPPED dov{};
  dov.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr);
  const uint64_t t0 = NowMs();
  const HRESULT h = Await(s.conn, &dov, s.conn->NotifyDisconnect(&dov), kBoundMs);
  if (h == ND_TIMEOUT) Fail("NotifyDisconnect did not complete while the client was away");
  ND2_RESULT r;
  if (!s.Next(&r, kBoundMs)) Fail("the posted receive was not flushed");
  if (r.Status != ND_CANCELED) Fail("the posted receive completed, not ND_CANCELED", r.Status);
  std::printf("%s %s: ok: the peer's disconnect arrived after %llu ms, receive flushed\n", g_case, g_role,
              static_cast<unsigned long long>(NowMs() - t0));
}

int Server(const std::string& c, const sockaddr_in& addr) {
  static Side s;  // reachable at exit: what a case leaves to the exit handler is no leak (LSan)
  s.Open(addr);
  s.PostReceive();
  if (c == "reject-sleep") {
    IND2Listener* l = Listen(s, addr);
    Check(s.conn->Reject(nullptr, 0), "Reject");
    std::printf("%s %s: ok: rejected, sleeping\n", g_case, g_role);
    std::fflush(stdout);
    Nap(kSleepMs);
    (void)l;
    return 0;
  }
  IND2Listener* l = Listen(s, addr, c == "listen-sleep" ? kSleepMs : 0);
  const uint64_t t0 = NowMs();
  HRESULT h = Await(s.conn, &s.ov, s.conn->Accept(s.qp, 1, 1, nullptr, 0, &s.ov), kBoundMs);
  if (h == ND_TIMEOUT) Fail("Accept did not complete (no RTU) while the client slept");
  Check(h, "Accept");
  if (c == "complete-sleep") {
    std::printf("%s %s: ok: accepted after %llu ms\n", g_case, g_role,
                static_cast<unsigned long long>(NowMs() - t0));
  } else if (c == "listen-sleep") {
    std::printf("%s %s: ok: accepted\n", g_case, g_role);
  } else if (c == "disconnect-sleep" || c == "release-sleep" || c == "exit") {
    ExpectPeerGone(s);
  } else if (c == "poll-memory") {
    // Tell the client where to write, then watch the last byte, making no ND2 call.
    PeerInfo info{reinterpret_cast<UINT64>(s.buf.data()), s.mr->GetRemoteToken(), 0};
    ND2_SGE sge = {&info, sizeof info, 0};
    Check(s.qp->Send(nullptr, &sge, 1, ND_OP_FLAG_INLINE), "Send");
    ND2_RESULT r;
    if (!s.Next(&r, kBoundMs) || r.Status != ND_SUCCESS) Fail("the peer info Send", r.Status);
    // The client Writes 1, 2, ... kWrites into the last byte, each after the previous one's
    // completion; a byte seen changing is a Write arrived (one may be overwritten unseen).
    volatile char* last = s.buf.data() + kBuf - 1;
    const uint64_t deadline = NowMs() + 60000;
    int seen = 0;
    for (char v = 0; v != static_cast<char>(kWrites);) {
      if (*last != v) {
        v = *last;
        seen++;
      }
      if (NowMs() > deadline) Fail("the last Write never arrived");
    }
    std::printf("%s %s: ok: the last of %d Writes seen polling memory (%d changes seen)\n", g_case, g_role,
                kWrites, seen);
    std::fflush(stdout);
    // The client ends it: its disconnect flushes our receive.
    ExpectPeerGone(s);
  } else {
    std::fprintf(stderr, "unknown case %s\n", c.c_str());
    return 2;
  }
  std::fflush(stdout);
  s.conn->Release();
  l->Release();
  return 0;
}

int Client(const std::string& c, const sockaddr_in& server) {
  sockaddr_in local{};
  SIZE_T len = sizeof local;
  Check(NdResolveAddress(reinterpret_cast<const sockaddr*>(&server), sizeof server,
                         reinterpret_cast<sockaddr*>(&local), &len),
        "NdResolveAddress");
  static Side s;  // reachable at exit: what a case leaves to the exit handler is no leak (LSan)
  s.Open(local);
  s.PostReceive();
  if (c == "reject-sleep") {
    const HRESULT h = Connect(s, server, kBoundMs);
    if (h == ND_TIMEOUT) Fail("Connect did not complete (no REJ) while the server slept");
    if (h != ND_CONNECTION_REFUSED) Fail("Connect did not get ND_CONNECTION_REFUSED", h);
    std::printf("%s %s: ok: ND_CONNECTION_REFUSED\n", g_case, g_role);
    return 0;
  }
  // listen-sleep: the server is asleep; its address must answer ARP and its CM the REQ.
  const HRESULT h = Connect(s, server, c == "listen-sleep" ? 20000 : 10000);
  Check(h, "Connect");
  Check(Await(s.conn, &s.ov, s.conn->CompleteConnect(&s.ov), 10000), "CompleteConnect");
  if (c == "complete-sleep") {
    std::printf("%s %s: ok: connected, sleeping\n", g_case, g_role);
    std::fflush(stdout);
    Nap(kSleepMs);
    return 0;
  }
  if (c == "listen-sleep") {
    std::printf("%s %s: ok: connected to a sleeping server\n", g_case, g_role);
    return 0;
  }
  if (c == "disconnect-sleep") {
    const HRESULT d = s.conn->Disconnect(&s.ov);
    if (FAILED(d)) Fail("Disconnect", d);
    std::printf("%s %s: ok: disconnect called, sleeping\n", g_case, g_role);
    std::fflush(stdout);
    Nap(kSleepMs);
    return 0;
  }
  if (c == "release-sleep") {
    s.conn->Release();
    s.qp->Release();
    std::printf("%s %s: ok: released, sleeping\n", g_case, g_role);
    std::fflush(stdout);
    Nap(kSleepMs);
    return 0;
  }
  if (c == "exit") {
    std::printf("%s %s: ok: exiting connected\n", g_case, g_role);
    std::fflush(stdout);
    std::exit(0);
  }
  if (c == "poll-memory") {
    ND2_RESULT r;
    if (!s.Next(&r, kBoundMs) || r.Status != ND_SUCCESS) Fail("no peer info", r.Status);
    PeerInfo info;
    std::memcpy(&info, s.buf.data(), sizeof info);
    for (int i = 1; i <= kWrites; i++) {
      s.buf[kBuf - 1] = static_cast<char>(i);
      ND2_SGE sge = {s.buf.data() + kBuf - 64, 64, s.mr->GetLocalToken()};
      Check(s.qp->Write(nullptr, &sge, 1, info.address + kBuf - 64, info.token, 0), "Write");
      // A peer that does not ACK makes this ND_IO_TIMEOUT (retries exhausted) after a while.
      if (!s.Next(&r, 20000)) Fail("a Write did not complete");
      if (r.Status != ND_SUCCESS) Fail("a Write failed", r.Status);
    }
    std::printf("%s %s: ok: %d Writes acknowledged by a peer polling memory\n", g_case, g_role, kWrites);
    Check(Await(s.conn, &s.ov, s.conn->Disconnect(&s.ov), 10000), "Disconnect");
    return 0;
  }
  std::fprintf(stderr, "unknown case %s\n", c.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || (std::strcmp(argv[1], "server") != 0 && std::strcmp(argv[1], "client") != 0)) {
    std::fprintf(stderr, "usage: %s server|client CASE ADDR[:PORT]\n", argv[0]);
    return 2;
  }
  g_role = argv[1];
  g_case = argv[2];
  const sockaddr_in addr = Parse(argv[3]);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  Check(NdStartup(), "NdStartup");
  const int rc = g_role[0] == 's' ? Server(g_case, addr) : Client(g_case, addr);
  // The objects the cases leave are left to NdCleanup and the exit (as Microsoft's tests do).
  NdCleanup();
  return rc;
}
