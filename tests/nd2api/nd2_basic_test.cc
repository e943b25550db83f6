// SPDX-License-Identifier: MIT
// ND2 through the public headers only, on two adapters of one process over
// an in-process net_ring pair (ND2_CONFIG written by the test) and on one
// adapter talking to its own address (loopback): connect, Send/Receive,
// Write, Read, disconnect, with overlapped requests waited on by
// GetOverlappedResult (inline progress: the waiting thread drives the engine).
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <ndspi.h>
#include <ndsupport.h>

#include "nd2_sockaddr.h"

namespace {

std::string WriteConfig(const char* progress) {
  const std::string path = "/tmp/nd2_basic_test_" + std::to_string(getpid()) + ".ini";
  std::ofstream f(path);
  f << "[adapter0]\nprofile = net_ring.ini\nport.ring = nd2basic\nport.ring_side = a\nip = 10.0.0.1/24\n"
       "port.ipv6 = fd00::1/64\nprogress = " << progress << "\n"
    << "[adapter1]\nprofile = net_ring.ini\nport.ring = nd2basic\nport.ring_side = b\nip = 10.0.0.2/24\n"
       "port.ipv6 = fd00::2/64\nport.mac = 02:00:00:00:00:02\nprogress = " << progress << "\n";
  return path;
}

using nd2t::Addr;

struct Side {
  IND2Adapter* adapter = nullptr;
  HANDLE file = nullptr;
  IND2CompletionQueue* cq = nullptr;
  IND2QueuePair* qp = nullptr;
  IND2MemoryRegion* mr = nullptr;
  IND2Connector* conn = nullptr;
  std::vector<char> buf = std::vector<char>(65536);
  OVERLAPPED ov{};

  void Open(const char* ip) {
    sockaddr_in a = Addr(ip, 0);
    ASSERT_EQ(NdOpenAdapter(IID_IND2Adapter, reinterpret_cast<sockaddr*>(&a), sizeof a,
                            reinterpret_cast<void**>(&adapter)),
              ND_SUCCESS);
    ASSERT_EQ(adapter->CreateOverlappedFile(&file), ND_SUCCESS);
    ASSERT_EQ(adapter->CreateCompletionQueue(IID_IND2CompletionQueue, file, 64, 0, 0,
                                             reinterpret_cast<void**>(&cq)),
              ND_SUCCESS);
    ASSERT_EQ(adapter->CreateQueuePair(IID_IND2QueuePair, cq, cq, this, 16, 16, 4, 4, 64,
                                       reinterpret_cast<void**>(&qp)),
              ND_SUCCESS);
    ASSERT_EQ(adapter->CreateMemoryRegion(IID_IND2MemoryRegion, file, reinterpret_cast<void**>(&mr)), ND_SUCCESS);
    ov.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr);
    HRESULT h = mr->Register(buf.data(), buf.size(),
                             ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ | ND_MR_FLAG_ALLOW_REMOTE_WRITE,
                             &ov);
    if (h == ND_PENDING) h = mr->GetOverlappedResult(&ov, TRUE);
    ASSERT_EQ(h, ND_SUCCESS);
    ASSERT_EQ(adapter->CreateConnector(IID_IND2Connector, file, reinterpret_cast<void**>(&conn)), ND_SUCCESS);
  }
  HRESULT Wait(IND2Overlapped* o, HRESULT h) {
    if (h == ND_PENDING) h = o->GetOverlappedResult(&ov, TRUE);
    return h;
  }
  // Polls the CQ until a result arrives (the poll drives the engine).
  ND2_RESULT Next() {
    ND2_RESULT r{};
    for (int i = 0; i < 50'000'000; i++)
      if (cq->GetResults(&r, 1) == 1) return r;
    ADD_FAILURE() << "no completion";
    return r;
  }
  void Close() {
    if (conn) conn->Release();
    if (mr) {
      HRESULT h = mr->Deregister(&ov);
      if (h == ND_PENDING) mr->GetOverlappedResult(&ov, TRUE);
      mr->Release();
    }
    if (qp) qp->Release();
    if (cq) cq->Release();
    if (ov.hEvent) CloseHandle(ov.hEvent);
    if (file) CloseHandle(file);
    if (adapter) adapter->Release();
  }
};

class Nd2Basic : public ::testing::TestWithParam<bool> {};

// Client on adapter0 (10.0.0.1) connects to a listener on `server_ip`.
void RunConnection(const char* server_ip, bool same_adapter) {
  Side c, s;
  ASSERT_NO_FATAL_FAILURE(c.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s.Open(same_adapter ? "10.0.0.1" : server_ip));
  IND2Listener* l = nullptr;
  ASSERT_EQ(s.adapter->CreateListener(IID_IND2Listener, s.file, reinterpret_cast<void**>(&l)), ND_SUCCESS);
  sockaddr_in la = Addr(server_ip, 54321);
  ASSERT_EQ(l->Bind(reinterpret_cast<sockaddr*>(&la), sizeof la), ND_SUCCESS);
  ASSERT_EQ(l->Listen(0), ND_SUCCESS);
  OVERLAPPED lov{};
  lov.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr);
  ASSERT_EQ(l->GetConnectionRequest(s.conn, &lov), ND_PENDING);
  // The server's receive before the connection.
  ND2_SGE rs{s.buf.data(), 4096, s.mr->GetLocalToken()};
  ASSERT_EQ(s.qp->Receive(&s, &rs, 1), ND_SUCCESS);

  const char hello[] = "hello nd2";
  // Connect completes once the server accepts: not waited for yet.
  ASSERT_EQ(c.conn->Connect(c.qp, reinterpret_cast<sockaddr*>(&la), sizeof la, 4, 4, hello, sizeof hello, &c.ov),
            ND_PENDING);
  ASSERT_EQ(l->GetOverlappedResult(&lov, TRUE), ND_SUCCESS);
  char pd[64] = {};
  ULONG pdl = sizeof pd;
  ASSERT_EQ(s.conn->GetPrivateData(pd, &pdl), ND_SUCCESS);
  EXPECT_STREQ(pd, hello);
  ULONG in = 0, out = 0;
  ASSERT_EQ(s.conn->GetReadLimits(&in, &out), ND_SUCCESS);
  EXPECT_EQ(in, 4u);
  EXPECT_EQ(out, 4u);
  HRESULT h = s.conn->Accept(s.qp, 4, 4, "ok", 3, &s.ov);
  ASSERT_TRUE(h == ND_PENDING || h == ND_SUCCESS) << std::hex << h;
  ASSERT_EQ(c.conn->GetOverlappedResult(&c.ov, TRUE), ND_SUCCESS);
  ASSERT_EQ(c.Wait(c.conn, c.conn->CompleteConnect(&c.ov)), ND_SUCCESS);
  ASSERT_EQ(s.conn->GetOverlappedResult(&s.ov, TRUE), ND_SUCCESS);

  // Send / Receive.
  std::strcpy(c.buf.data(), "ping over nd2");
  ND2_SGE cs{c.buf.data(), 14, c.mr->GetLocalToken()};
  ASSERT_EQ(c.qp->Send(&c, &cs, 1, 0), ND_SUCCESS);
  ND2_RESULT r = c.Next();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  EXPECT_EQ(r.RequestType, Nd2RequestTypeSend);
  EXPECT_EQ(r.RequestContext, &c);
  EXPECT_EQ(r.QueuePairContext, &c);
  r = s.Next();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  EXPECT_EQ(r.RequestType, Nd2RequestTypeReceive);
  EXPECT_EQ(r.BytesTransferred, 14u);
  EXPECT_STREQ(s.buf.data(), "ping over nd2");
  // Write into the server's buffer, Read it back.
  for (int i = 0; i < 30000; i++) c.buf[i] = static_cast<char>(i * 7);
  ND2_SGE ws{c.buf.data(), 30000, c.mr->GetLocalToken()};
  ASSERT_EQ(c.qp->Write(nullptr, &ws, 1, reinterpret_cast<UINT64>(s.buf.data()) + 8192, s.mr->GetRemoteToken(), 0),
            ND_SUCCESS);
  EXPECT_EQ(c.Next().Status, ND_SUCCESS);
  EXPECT_EQ(std::memcmp(s.buf.data() + 8192, c.buf.data(), 30000), 0);
  ND2_SGE rd{c.buf.data() + 32768, 30000, c.mr->GetLocalToken()};
  ASSERT_EQ(c.qp->Read(nullptr, &rd, 1, reinterpret_cast<UINT64>(s.buf.data()) + 8192, s.mr->GetRemoteToken(), 0),
            ND_SUCCESS);
  r = c.Next();
  EXPECT_EQ(r.Status, ND_SUCCESS);
  EXPECT_EQ(r.RequestType, Nd2RequestTypeRead);
  EXPECT_EQ(std::memcmp(c.buf.data() + 32768, c.buf.data(), 30000), 0);
  // A wrong token: ND_ACCESS_VIOLATION at the initiator.
  ASSERT_EQ(c.qp->Write(nullptr, &ws, 1, reinterpret_cast<UINT64>(s.buf.data()), s.mr->GetRemoteToken() ^ 0x100, 0),
            ND_SUCCESS);
  EXPECT_EQ(c.Next().Status, ND_ACCESS_VIOLATION);

  // The peer disconnects: NotifyDisconnect completes at the other side, with
  // STATUS_CONNECTION_DISCONNECTED (what real providers report).
  OVERLAPPED nov{};
  nov.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr);
  h = s.conn->NotifyDisconnect(&nov);
  ASSERT_TRUE(h == ND_PENDING || h == ND_SUCCESS);
  h = c.conn->Disconnect(&c.ov);
  ASSERT_TRUE(h == ND_PENDING || h == ND_SUCCESS) << std::hex << h;
  EXPECT_EQ(c.conn->GetOverlappedResult(&c.ov, TRUE), ND_SUCCESS);
  EXPECT_EQ(s.conn->GetOverlappedResult(&nov, TRUE), STATUS_CONNECTION_DISCONNECTED);
  CloseHandle(nov.hEvent);
  CloseHandle(lov.hEvent);
  l->Release();
  c.Close();
  s.Close();
}

TEST_P(Nd2Basic, TwoAdaptersOverTheRing) {
  const std::string cfg = WriteConfig(GetParam() ? "thread" : "inline");
  setenv("ND2_CONFIG", cfg.c_str(), 1);
  ASSERT_EQ(NdStartup(), ND_SUCCESS);
  RunConnection("10.0.0.2", false);
  EXPECT_EQ(NdCleanup(), ND_SUCCESS);
  unlink(cfg.c_str());
}

TEST_P(Nd2Basic, LoopbackOnOneAdapter) {
  const std::string cfg = WriteConfig(GetParam() ? "thread" : "inline");
  setenv("ND2_CONFIG", cfg.c_str(), 1);
  ASSERT_EQ(NdStartup(), ND_SUCCESS);
  RunConnection("10.0.0.1", true);
  EXPECT_EQ(NdCleanup(), ND_SUCCESS);
  unlink(cfg.c_str());
}

INSTANTIATE_TEST_SUITE_P(Progress, Nd2Basic, ::testing::Values(false, true),
                         [](const auto& i) { return i.param ? "ProgressThread" : "Inline"; });

}  // namespace
