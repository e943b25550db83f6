// SPDX-License-Identifier: MIT
// IND2AdapterDiagnostics (our extension, ndspi.h) through the public headers:
// what an adapter holds follows the objects an ND2 program creates and
// releases (queue pairs, memory regions and windows, bound ports,
// connections until their time-wait ends); the CM counters and a connector's
// REJ reason follow what happened on the wire between two adapters of one
// process over a net_ring pair (8: nobody listens; 28: the peer's
// IND2Connector::Reject, whose private data GetPrivateData returns); the
// port beneath each adapter (QueryPort) is the configured one and counts the
// frames of a connection; bad arguments get their documented statuses.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <ndspi.h>
#include <ndsupport.h>

#include "nd2_sockaddr.h"

namespace {

std::string WriteConfig(const std::string& extra0) {
  const std::string path = "/tmp/nd2_diag_test_" + std::to_string(getpid()) + ".ini";
  std::ofstream f(path);
  f << "[adapter0]\nprofile = net_ring.ini\nport.ring = nd2diag\nport.ring_side = a\nip = 10.0.2.1/24\n"
       "ip6 = fd00:2::1/64\n" << extra0
    << "[adapter1]\nprofile = net_ring.ini\nport.ring = nd2diag\nport.ring_side = b\nip = 10.0.2.2/24\n"
       "ip6 = fd00:2::2/64\n"
       "port.mac = 02:00:00:00:02:02\n";
  return path;
}

using nd2t::Addr;

class Nd2Diag : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg_ = WriteConfig(Extra0());
    setenv("ND2_CONFIG", cfg_.c_str(), 1);
    ASSERT_EQ(NdStartup(), ND_SUCCESS);
    for (int i = 0; i < 2; i++) {
      sockaddr_in a = Addr(i ? "10.0.2.2" : "10.0.2.1", 0);
      ASSERT_EQ(NdOpenAdapter(IID_IND2Adapter, reinterpret_cast<sockaddr*>(&a), sizeof a,
                              reinterpret_cast<void**>(&ad_[i])),
                ND_SUCCESS);
      ASSERT_EQ(ad_[i]->CreateOverlappedFile(&file_[i]), ND_SUCCESS);
      ASSERT_EQ(ad_[i]->QueryInterface(IID_IND2AdapterDiagnostics, reinterpret_cast<void**>(&diag_[i])), S_OK);
      ASSERT_NE(diag_[i], nullptr);
    }
    ov_.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr);
  }
  void TearDown() override {
    if (ov_.hEvent) CloseHandle(ov_.hEvent);
    for (int i = 0; i < 2; i++) {
      if (diag_[i]) diag_[i]->Release();
      if (file_[i]) CloseHandle(file_[i]);
      if (ad_[i]) ad_[i]->Release();
    }
    EXPECT_EQ(NdCleanup(), ND_SUCCESS);
    unlink(cfg_.c_str());
  }
  virtual std::string Extra0() { return ""; }  // more keys for [adapter0]
  ND2_ADAPTER_DIAGNOSTICS Query(int i) {
    ND2_ADAPTER_DIAGNOSTICS d{};
    d.InfoVersion = ND2_DIAGNOSTICS_VERSION_1;
    ULONG cb = sizeof d;
    EXPECT_EQ(diag_[i]->QueryAdapter(&d, &cb), ND_SUCCESS);
    EXPECT_EQ(cb, sizeof d);
    return d;
  }
  ND2_CONNECTOR_DIAGNOSTICS QueryConn(int i, IND2Connector* c, HRESULT want = ND_SUCCESS) {
    ND2_CONNECTOR_DIAGNOSTICS d{};
    d.InfoVersion = ND2_DIAGNOSTICS_VERSION_1;
    ULONG cb = sizeof d;
    EXPECT_EQ(diag_[i]->QueryConnector(c, &d, &cb), want);
    return d;
  }
  HRESULT Wait(IND2Overlapped* o, HRESULT h) { return h == ND_PENDING ? o->GetOverlappedResult(&ov_, TRUE) : h; }
  // Lets `ms` pass inside a wait (which drives the inline adapters).
  void PassTime(DWORD ms) {
    HANDLE e = CreateEvent(nullptr, FALSE, FALSE, nullptr);
    WaitForSingleObject(e, ms);
    CloseHandle(e);
  }
  IND2CompletionQueue* NewCq(int i) {
    IND2CompletionQueue* cq = nullptr;
    EXPECT_EQ(ad_[i]->CreateCompletionQueue(IID_IND2CompletionQueue, file_[i], 16, 0, 0,
                                            reinterpret_cast<void**>(&cq)),
              ND_SUCCESS);
    return cq;
  }
  IND2QueuePair* NewQp(int i, IND2CompletionQueue* cq) {
    IND2QueuePair* qp = nullptr;
    EXPECT_EQ(ad_[i]->CreateQueuePair(IID_IND2QueuePair, cq, cq, nullptr, 4, 4, 1, 1, 0,
                                      reinterpret_cast<void**>(&qp)),
              ND_SUCCESS);
    return qp;
  }
  IND2Connector* NewConnector(int i) {
    IND2Connector* c = nullptr;
    EXPECT_EQ(ad_[i]->CreateConnector(IID_IND2Connector, file_[i], reinterpret_cast<void**>(&c)), ND_SUCCESS);
    return c;
  }

  // A connection from adapter0 (cc on cqp) to a listener of adapter1 on
  // `port` (sc on sqp); l is the listener.
  struct Conn {
    IND2CompletionQueue *ccq = nullptr, *scq = nullptr;
    IND2QueuePair *cqp = nullptr, *sqp = nullptr;
    IND2Connector *cc = nullptr, *sc = nullptr;
    IND2Listener* l = nullptr;
    OVERLAPPED lov{}, sov{};
  };
  void Connect(Conn* k, uint16_t port) {
    k->ccq = NewCq(0);
    k->scq = NewCq(1);
    k->cqp = NewQp(0, k->ccq);
    k->sqp = NewQp(1, k->scq);
    k->cc = NewConnector(0);
    k->sc = NewConnector(1);
    ASSERT_EQ(ad_[1]->CreateListener(IID_IND2Listener, file_[1], reinterpret_cast<void**>(&k->l)), ND_SUCCESS);
    sockaddr_in la = Addr("10.0.2.2", port);
    ASSERT_EQ(k->l->Bind(reinterpret_cast<sockaddr*>(&la), sizeof la), ND_SUCCESS);
    ASSERT_EQ(k->l->Listen(0), ND_SUCCESS);
    k->lov.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr);
    k->sov.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr);
    ASSERT_EQ(k->l->GetConnectionRequest(k->sc, &k->lov), ND_PENDING);
    ASSERT_EQ(k->cc->Connect(k->cqp, reinterpret_cast<sockaddr*>(&la), sizeof la, 1, 1, nullptr, 0, &ov_),
              ND_PENDING);
    ASSERT_EQ(k->l->GetOverlappedResult(&k->lov, TRUE), ND_SUCCESS);
    HRESULT h = k->sc->Accept(k->sqp, 1, 1, nullptr, 0, &k->sov);
    ASSERT_TRUE(h == ND_PENDING || h == ND_SUCCESS);
    ASSERT_EQ(k->cc->GetOverlappedResult(&ov_, TRUE), ND_SUCCESS);
    ASSERT_EQ(Wait(k->cc, k->cc->CompleteConnect(&ov_)), ND_SUCCESS);
    ASSERT_EQ(k->sc->GetOverlappedResult(&k->sov, TRUE), ND_SUCCESS);
  }
  void Close(Conn* k) {
    for (IUnknown* u : {static_cast<IUnknown*>(k->cc), static_cast<IUnknown*>(k->sc),
                        static_cast<IUnknown*>(k->l), static_cast<IUnknown*>(k->cqp),
                        static_cast<IUnknown*>(k->sqp), static_cast<IUnknown*>(k->ccq),
                        static_cast<IUnknown*>(k->scq)})
      if (u) u->Release();
    if (k->lov.hEvent) CloseHandle(k->lov.hEvent);
    if (k->sov.hEvent) CloseHandle(k->sov.hEvent);
    *k = Conn{};
  }

  std::string cfg_;
  IND2Adapter* ad_[2] = {};
  HANDLE file_[2] = {};
  IND2AdapterDiagnostics* diag_[2] = {};
  OVERLAPPED ov_{};
};

TEST_F(Nd2Diag, ArgumentsAndIdentity) {
  ND2_ADAPTER_DIAGNOSTICS d{};
  ULONG cb = 8;
  d.InfoVersion = ND2_DIAGNOSTICS_VERSION_1;
  EXPECT_EQ(diag_[0]->QueryAdapter(&d, &cb), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(cb, sizeof(ND2_ADAPTER_DIAGNOSTICS));
  cb = 0;
  EXPECT_EQ(diag_[0]->QueryAdapter(nullptr, &cb), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(cb, sizeof(ND2_ADAPTER_DIAGNOSTICS));
  EXPECT_EQ(diag_[0]->QueryAdapter(&d, nullptr), ND_INVALID_PARAMETER_2);
  d.InfoVersion = 2;
  cb = sizeof d;
  EXPECT_EQ(diag_[0]->QueryAdapter(&d, &cb), ND_INVALID_PARAMETER_1);

  // The tear-off answers for the adapter it came from.
  IND2Adapter* back = nullptr;
  ASSERT_EQ(diag_[0]->QueryInterface(IID_IND2Adapter, reinterpret_cast<void**>(&back)), S_OK);
  EXPECT_EQ(back, ad_[0]);
  back->Release();
  IND2AdapterDiagnostics* again = nullptr;
  ASSERT_EQ(diag_[0]->QueryInterface(IID_IND2AdapterDiagnostics, reinterpret_cast<void**>(&again)), S_OK);
  again->Release();
  void* none = &d;
  EXPECT_EQ(diag_[0]->QueryInterface(IID_IND2QueuePair, &none), E_NOINTERFACE);
  EXPECT_EQ(none, nullptr);

  // QueryConnector: a connector of this adapter, with a connection.
  IND2Connector* c0 = NewConnector(0);
  IND2Connector* c1 = NewConnector(1);
  QueryConn(0, c0, ND_CONNECTION_INVALID);  // nothing sent yet
  QueryConn(0, c1, ND_INVALID_PARAMETER_1);  // adapter1's
  IND2CompletionQueue* cq = NewCq(0);
  QueryConn(0, reinterpret_cast<IND2Connector*>(cq), ND_INVALID_PARAMETER_1);  // not a connector
  ND2_CONNECTOR_DIAGNOSTICS cd{};
  cd.InfoVersion = ND2_DIAGNOSTICS_VERSION_1;
  EXPECT_EQ(diag_[0]->QueryConnector(nullptr, &cd, &cb), ND_INVALID_PARAMETER_1);
  EXPECT_EQ(diag_[0]->QueryConnector(c0, &cd, nullptr), ND_INVALID_PARAMETER_3);
  cq->Release();
  c1->Release();
  c0->Release();
}

TEST_F(Nd2Diag, CountsFollowTheObjects) {
  const ND2_ADAPTER_DIAGNOSTICS before = Query(0);
  EXPECT_EQ(before.InfoVersion, static_cast<ULONG>(ND2_DIAGNOSTICS_VERSION_1));
  EXPECT_EQ(before.Reserved, 0u);

  IND2CompletionQueue* cq = NewCq(0);
  IND2QueuePair* qp = NewQp(0, cq);
  IND2MemoryRegion* mr = nullptr;
  ASSERT_EQ(ad_[0]->CreateMemoryRegion(IID_IND2MemoryRegion, file_[0], reinterpret_cast<void**>(&mr)), ND_SUCCESS);
  std::vector<char> buf(4096);
  ASSERT_EQ(Wait(mr, mr->Register(buf.data(), buf.size(), ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov_)), ND_SUCCESS);
  IND2MemoryWindow* mw = nullptr;
  ASSERT_EQ(ad_[0]->CreateMemoryWindow(IID_IND2MemoryWindow, reinterpret_cast<void**>(&mw)), ND_SUCCESS);
  IND2Listener* l = nullptr;
  ASSERT_EQ(ad_[0]->CreateListener(IID_IND2Listener, file_[0], reinterpret_cast<void**>(&l)), ND_SUCCESS);
  sockaddr_in la = Addr("10.0.2.1", 7001);
  ASSERT_EQ(l->Bind(reinterpret_cast<sockaddr*>(&la), sizeof la), ND_SUCCESS);

  ND2_ADAPTER_DIAGNOSTICS d = Query(0);
  EXPECT_EQ(d.QueuePairs, before.QueuePairs + 1);
  EXPECT_EQ(d.MemoryRegions, before.MemoryRegions + 1);
  EXPECT_EQ(d.MemoryWindows, before.MemoryWindows + 1);
  EXPECT_EQ(d.BoundPorts, before.BoundPorts + 1);
  EXPECT_EQ(Query(1).QueuePairs, 0u);  // the other adapter's stack is its own

  l->Release();
  mw->Release();
  ASSERT_EQ(Wait(mr, mr->Deregister(&ov_)), ND_SUCCESS);
  mr->Release();
  qp->Release();
  cq->Release();
  d = Query(0);
  EXPECT_EQ(d.QueuePairs, before.QueuePairs);
  EXPECT_EQ(d.QuarantinedQpns, before.QuarantinedQpns + 1);  // the released QP's number
  EXPECT_EQ(d.MemoryRegions, before.MemoryRegions);
  EXPECT_EQ(d.MemoryWindows, before.MemoryWindows);
  EXPECT_EQ(d.BoundPorts, before.BoundPorts);
}

TEST_F(Nd2Diag, ConnectionCountersAndTimeWait) {
  const ND2_ADAPTER_DIAGNOSTICS c0 = Query(0), s0 = Query(1);
  Conn k;
  ASSERT_NO_FATAL_FAILURE(Connect(&k, 7002));
  IND2Connector *cc = k.cc, *sc = k.sc;
  ND2_ADAPTER_DIAGNOSTICS c = Query(0), s = Query(1);
  EXPECT_EQ(c.Connections, c0.Connections + 1);
  EXPECT_EQ(s.Connections, s0.Connections + 1);
  EXPECT_EQ(c.CmRequestsSent, c0.CmRequestsSent + 1);
  EXPECT_EQ(s.CmRequestsReceived, s0.CmRequestsReceived + 1);
  EXPECT_EQ(s.CmRepliesSent, s0.CmRepliesSent + 1);
  EXPECT_EQ(c.CmRepliesReceived, c0.CmRepliesReceived + 1);
  // Both ends name the same queue pairs and comm IDs, crosswise.
  const ND2_CONNECTOR_DIAGNOSTICS cd = QueryConn(0, cc), sd = QueryConn(1, sc);
  EXPECT_NE(cd.LocalQpn, 0u);
  EXPECT_EQ(cd.LocalQpn, sd.PeerQpn);
  EXPECT_EQ(cd.PeerQpn, sd.LocalQpn);
  EXPECT_EQ(cd.LocalCommId, sd.PeerCommId);
  EXPECT_EQ(cd.PeerCommId, sd.LocalCommId);
  EXPECT_EQ(cd.RejectReason, 0u);
  EXPECT_EQ(sd.PeerDisconnected, 0u);

  ASSERT_EQ(Wait(cc, cc->Disconnect(&ov_)), ND_SUCCESS);
  PassTime(50);
  EXPECT_EQ(QueryConn(1, sc).PeerDisconnected, 1u);
  c = Query(0);
  s = Query(1);
  EXPECT_EQ(c.CmDisconnectRequestsSent, c0.CmDisconnectRequestsSent + 1);
  EXPECT_EQ(s.CmDisconnectRequestsReceived, s0.CmDisconnectRequestsReceived + 1);
  EXPECT_EQ(s.CmDisconnectRepliesSent, s0.CmDisconnectRepliesSent + 1);
  EXPECT_EQ(c.CmDisconnectRepliesReceived, c0.CmDisconnectRepliesReceived + 1);
  EXPECT_EQ(c.CmCrossedDisconnects, c0.CmCrossedDisconnects);

  Close(&k);
  // Released, the connections wait out their time-wait (2 s), then nothing is left.
  for (int i = 0; i < 100 && (Query(0).Connections != c0.Connections || Query(1).Connections != s0.Connections);
       i++)
    PassTime(50);
  for (int i = 0; i < 2; i++) {
    const ND2_ADAPTER_DIAGNOSTICS d = Query(i), b = i ? s0 : c0;
    EXPECT_EQ(d.Connections, b.Connections) << "adapter " << i;
    EXPECT_EQ(d.QueuePairs, b.QueuePairs) << "adapter " << i;
    EXPECT_EQ(d.BoundPorts, b.BoundPorts) << "adapter " << i;
  }
}

TEST_F(Nd2Diag, RejectReasons) {
  const ND2_ADAPTER_DIAGNOSTICS c0 = Query(0), s0 = Query(1);
  // Nobody listens on the port: REJ 8 (invalid service ID).
  {
    IND2CompletionQueue* cq = NewCq(0);
    IND2QueuePair* qp = NewQp(0, cq);
    IND2Connector* c = NewConnector(0);
    sockaddr_in to = Addr("10.0.2.2", 7999);
    EXPECT_EQ(Wait(c, c->Connect(qp, reinterpret_cast<sockaddr*>(&to), sizeof to, 1, 1, nullptr, 0, &ov_)),
              ND_CONNECTION_REFUSED);
    const ND2_CONNECTOR_DIAGNOSTICS d = QueryConn(0, c);
    EXPECT_EQ(d.RejectReason, 8u);
    EXPECT_EQ(d.TimedOut, 0u);
    c->Release();
    qp->Release();
    cq->Release();
  }
  // The peer's application rejects, with private data: REJ 28.
  {
    IND2CompletionQueue* cq = NewCq(0);
    IND2QueuePair* qp = NewQp(0, cq);
    IND2Connector* c = NewConnector(0);
    IND2Connector* sc = NewConnector(1);
    IND2Listener* l = nullptr;
    ASSERT_EQ(ad_[1]->CreateListener(IID_IND2Listener, file_[1], reinterpret_cast<void**>(&l)), ND_SUCCESS);
    sockaddr_in la = Addr("10.0.2.2", 7003);
    ASSERT_EQ(l->Bind(reinterpret_cast<sockaddr*>(&la), sizeof la), ND_SUCCESS);
    ASSERT_EQ(l->Listen(0), ND_SUCCESS);
    OVERLAPPED lov{};
    lov.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr);
    ASSERT_EQ(l->GetConnectionRequest(sc, &lov), ND_PENDING);
    ASSERT_EQ(c->Connect(qp, reinterpret_cast<sockaddr*>(&la), sizeof la, 1, 1, nullptr, 0, &ov_), ND_PENDING);
    ASSERT_EQ(l->GetOverlappedResult(&lov, TRUE), ND_SUCCESS);
    const char no[] = "no thanks";
    ASSERT_EQ(sc->Reject(no, sizeof no), ND_SUCCESS);
    EXPECT_EQ(c->GetOverlappedResult(&ov_, TRUE), ND_CONNECTION_REFUSED);
    char pd[160] = {};
    ULONG pdl = sizeof pd;
    ASSERT_EQ(c->GetPrivateData(pd, &pdl), ND_SUCCESS);
    EXPECT_STREQ(pd, no);
    EXPECT_EQ(QueryConn(0, c).RejectReason, 28u);
    EXPECT_EQ(QueryConn(1, sc).RejectReason, 28u);  // the one it sent
    CloseHandle(lov.hEvent);
    l->Release();
    sc->Release();
    c->Release();
    qp->Release();
    cq->Release();
  }
  const ND2_ADAPTER_DIAGNOSTICS c = Query(0), s = Query(1);
  EXPECT_EQ(c.CmRequestsSent, c0.CmRequestsSent + 2);
  EXPECT_EQ(c.CmRejectsReceived, c0.CmRejectsReceived + 2);
  EXPECT_EQ(s.CmRejectsSent, s0.CmRejectsSent + 2);
  EXPECT_EQ(c.CmTimeouts, c0.CmTimeouts);
}

// QueryPort: the net_ring ports of the configuration (net_ring.ini: MTU 4200,
// one queue each way; adapter1's MAC given), no kernel interface, not AF_XDP;
// the frame counters follow a connection; the statuses of QueryAdapter's
// contract.
TEST_F(Nd2Diag, QueryPort) {
  ND2_PORT_DIAGNOSTICS p{};
  ULONG cb = 0;
  EXPECT_EQ(diag_[0]->QueryPort(nullptr, &cb), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(cb, sizeof(ND2_PORT_DIAGNOSTICS));
  p.InfoVersion = ND2_DIAGNOSTICS_VERSION_1;
  cb = sizeof p - 1;
  EXPECT_EQ(diag_[0]->QueryPort(&p, &cb), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(cb, sizeof(ND2_PORT_DIAGNOSTICS));
  EXPECT_EQ(diag_[0]->QueryPort(&p, nullptr), ND_INVALID_PARAMETER_2);
  p.InfoVersion = 2;
  cb = sizeof p;
  EXPECT_EQ(diag_[0]->QueryPort(&p, &cb), ND_INVALID_PARAMETER_1);

  auto query = [&](int i) {
    ND2_PORT_DIAGNOSTICS d;
    std::memset(&d, 0xa5, sizeof d);  // every byte written, the reserved ones 0
    d.InfoVersion = ND2_DIAGNOSTICS_VERSION_1;
    ULONG n = sizeof d + 8;  // a larger buffer: the size written comes back
    EXPECT_EQ(diag_[i]->QueryPort(&d, &n), ND_SUCCESS);
    EXPECT_EQ(n, sizeof d);
    return d;
  };
  const ND2_PORT_DIAGNOSTICS a = query(0), b = query(1);
  for (const ND2_PORT_DIAGNOSTICS* d : {&a, &b}) {
    EXPECT_EQ(d->InfoVersion, static_cast<ULONG>(ND2_DIAGNOSTICS_VERSION_1));
    EXPECT_STREQ(d->Driver, "net_ring");
    EXPECT_STREQ(d->Interface, "");
    EXPECT_EQ(d->Identity, static_cast<ULONG>(ND2_PORT_IDENTITY_OWN));
    EXPECT_EQ(d->XdpMode, static_cast<ULONG>(ND2_PORT_XDP_NONE));
    EXPECT_EQ(d->RxQueues, 1u);
    EXPECT_EQ(d->TxQueues, 1u);
    EXPECT_EQ(d->Mtu, 4200u);
    EXPECT_EQ(d->InterfaceMtu, 0u);
    EXPECT_EQ(d->Reserved[0], 0);
    EXPECT_EQ(d->Reserved[1], 0);
    EXPECT_EQ(d->Reserved2, 0u);
    EXPECT_EQ(d->RxDrops, 0u);
    EXPECT_EQ(d->TxDrops, 0u);
  }
  EXPECT_STREQ(a.Name, "net_ring_nd2diag_a");
  EXPECT_STREQ(b.Name, "net_ring_nd2diag_b");
  const UCHAR mac1[6] = {0x02, 0x00, 0x00, 0x00, 0x02, 0x02};
  EXPECT_EQ(std::memcmp(b.Mac, mac1, 6), 0);
  EXPECT_NE(std::memcmp(a.Mac, b.Mac, 6), 0);

  // A connection: frames both ways, counted on both ports.
  Conn k;
  ASSERT_NO_FATAL_FAILURE(Connect(&k, 7005));
  const ND2_PORT_DIAGNOSTICS a2 = query(0), b2 = query(1);
  EXPECT_GT(a2.TxPackets, a.TxPackets);  // REQ, RTU
  EXPECT_GT(a2.RxPackets, a.RxPackets);  // REP
  EXPECT_GT(b2.TxPackets, b.TxPackets);
  EXPECT_GT(b2.RxPackets, b.RxPackets);
  EXPECT_EQ(a2.RxDrops + a2.TxDrops + b2.RxDrops + b2.TxDrops, 0u);
  EXPECT_EQ(Wait(k.cc, k.cc->Disconnect(&ov_)), ND_SUCCESS);
  Close(&k);
}

// cm_drop_tx_dreqs = 1 on adapter0 (the configuration key rping's
// --cm-drop-tx-dreqs writes): its first DREQ leaves nothing on the wire, so
// adapter1's DREQ finds it outstanding — a crossed disconnect, counted on
// adapter0; both Disconnects complete. (adapter0 also reads one frame per
// engine pass, burst = 1, as rping's crossed-DREQ interop case runs it.)
class Nd2DiagDropTx : public Nd2Diag {
 protected:
  std::string Extra0() override { return "cm_drop_tx_dreqs = 1\nburst = 1\n"; }
};

TEST_F(Nd2DiagDropTx, CrossedDisconnect) {
  const ND2_ADAPTER_DIAGNOSTICS c0 = Query(0), s0 = Query(1);
  Conn k;
  ASSERT_NO_FATAL_FAILURE(Connect(&k, 7004));
  ASSERT_EQ(k.cc->Disconnect(&ov_), ND_PENDING);  // its DREQ is lost
  PassTime(50);
  EXPECT_EQ(Query(1).CmDisconnectRequestsReceived, s0.CmDisconnectRequestsReceived);
  EXPECT_EQ(Wait(k.sc, k.sc->Disconnect(&k.sov)), ND_SUCCESS);
  EXPECT_EQ(k.cc->GetOverlappedResult(&ov_, TRUE), ND_SUCCESS);
  EXPECT_EQ(Query(0).CmCrossedDisconnects, c0.CmCrossedDisconnects + 1);
  EXPECT_EQ(Query(1).CmCrossedDisconnects, s0.CmCrossedDisconnects);
  Close(&k);
}

}  // namespace
