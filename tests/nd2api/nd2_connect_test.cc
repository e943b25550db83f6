// SPDX-License-Identifier: MIT
// IND2Provider, the ndsupport.h helpers, IND2Connector and IND2Listener
// against their pages in nd2-spec/ (every return value) and the behaviours of
// nd2-reference.md ("Semantics real clients rely on"), through the public
// headers only: two adapters of one process over an in-process net_ring pair,
// ND2_CONFIG written by the test, in both progress modes (inline: the test's
// own waits drive the stack; thread: a progress thread per adapter). The
// nd2api README's "Conformance" table maps each status to its test here.
#include <dlfcn.h>

#include <algorithm>
#include <thread>

#include "nd2_connect_support.h"

namespace {

using namespace nd2test;

class Nd2Connect : public ::testing::TestWithParam<bool> {
 protected:
  bool thread() const { return GetParam(); }
};

constexpr uint16_t kPort = 54350;

// ---- provider and ndsupport.h ---------------------------------------------------------------------

using DllGetClassObjectFn = HRESULT (*)(const GUID&, REFIID, void**);

TEST_P(Nd2Connect, ProviderFromDllGetClassObject) {
  const std::string cfg = WriteConfig("nd2conn", thread());
  setenv("ND2_CONFIG", cfg.c_str(), 1);
  // As Windows' ndutil does with GetProcAddress: the provider library's entry point.
  auto get = reinterpret_cast<DllGetClassObjectFn>(dlsym(RTLD_DEFAULT, "DllGetClassObject"));
  ASSERT_NE(get, nullptr);
  auto can_unload = reinterpret_cast<HRESULT (*)()>(dlsym(RTLD_DEFAULT, "DllCanUnloadNow"));
  ASSERT_NE(can_unload, nullptr);
  EXPECT_HR(can_unload(), S_OK);
  void* pv = nullptr;
  EXPECT_HR(get(IID_IND2Provider, IID_IND2Adapter, &pv), E_NOINTERFACE);
  // A provider reference is a startup: the helpers work while it is held.
  IND2Provider* prov = nullptr;
  ASSERT_HR(get(IID_IND2Provider, IID_IND2Provider, reinterpret_cast<void**>(&prov)), ND_SUCCESS);
  ASSERT_NE(prov, nullptr);
  EXPECT_HR(can_unload(), S_FALSE);

  // QueryAddressList: size first, then the list (ND_BUFFER_OVERFLOW, buffer untouched).
  ULONG cb = 0;
  EXPECT_HR(prov->QueryAddressList(nullptr, &cb), ND_BUFFER_OVERFLOW);
  ASSERT_GE(cb, sizeof(SOCKET_ADDRESS_LIST));
  std::vector<char> small(cb - 1, 0x5A);
  ULONG cb_small = cb - 1;
  EXPECT_HR(prov->QueryAddressList(reinterpret_cast<SOCKET_ADDRESS_LIST*>(small.data()), &cb_small),
            ND_BUFFER_OVERFLOW);
  EXPECT_EQ(cb_small, cb);
  EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](char c) { return c == 0x5A; }));
  std::vector<char> big(cb + 64);
  ULONG cb_big = static_cast<ULONG>(big.size());
  auto* list = reinterpret_cast<SOCKET_ADDRESS_LIST*>(big.data());
  ASSERT_HR(prov->QueryAddressList(list, &cb_big), ND_SUCCESS);
  EXPECT_EQ(cb_big, cb);  // the size used
  std::vector<std::string> ips;
  for (INT i = 0; i < list->iAddressCount; i++) ips.push_back(IpOf(list->Address[i].lpSockaddr));
  std::sort(ips.begin(), ips.end());
  EXPECT_EQ(ips, (std::vector<std::string>{"10.0.0.1", "10.0.0.2", "fd00::1", "fd00::2"}));

  // ResolveAddress: the port is ignored; an address of no adapter ND_INVALID_ADDRESS.
  UINT64 id1 = 0, id1b = 0, id0 = 0;
  sockaddr_in a1 = V4("10.0.0.2", 4242), a0 = V4("10.0.0.1", 0), nobody = V4("10.0.0.9", 0);
  sockaddr_in6 a1v6 = V6("fd00::2", 0);
  ASSERT_HR(prov->ResolveAddress(Sa(a1), sizeof a1, &id1), ND_SUCCESS);
  ASSERT_HR(prov->ResolveAddress(Sa(a1v6), sizeof a1v6, &id1b), ND_SUCCESS);
  ASSERT_HR(prov->ResolveAddress(Sa(a0), sizeof a0, &id0), ND_SUCCESS);
  EXPECT_EQ(id1, id1b);  // one adapter, two addresses
  EXPECT_NE(id0, id1);
  UINT64 id_none = 77;
  EXPECT_HR(prov->ResolveAddress(Sa(nobody), sizeof nobody, &id_none), ND_INVALID_ADDRESS);

  // OpenAdapter: the adapter whose Query reports that ID; a made-up ID ND_INVALID_PARAMETER.
  Owned<IND2Adapter> ad;
  ASSERT_HR(prov->OpenAdapter(IID_IND2Adapter, id1, ad.pv()), ND_SUCCESS);
  ND2_ADAPTER_INFO info{};
  info.InfoVersion = ND_VERSION_2;
  ULONG icb = sizeof info;
  ASSERT_HR(ad->Query(&info, &icb), ND_SUCCESS);
  EXPECT_EQ(info.AdapterId, id1);
  EXPECT_EQ(info.MaxCallerData, 56u);
  EXPECT_EQ(info.MaxCalleeData, 148u);
  ad.reset();
  void* none = reinterpret_cast<void*>(1);
  EXPECT_HR(prov->OpenAdapter(IID_IND2Adapter, id0 ^ id1 ^ 0x1234, &none), ND_INVALID_PARAMETER);
  EXPECT_HR(prov->OpenAdapter(IID_IND2CompletionQueue, id1, &none), E_NOINTERFACE);

  // NdStartup nests with the provider reference; the last release tears down.
  ASSERT_HR(NdStartup(), ND_SUCCESS);
  EXPECT_EQ(prov->Release(), 1u);
  SIZE_T scb = 0;
  EXPECT_HR(NdQueryAddressList(0, nullptr, &scb), ND_BUFFER_OVERFLOW);  // still up
  EXPECT_HR(NdCleanup(), ND_SUCCESS);
  EXPECT_HR(NdQueryAddressList(0, nullptr, &scb), ND_DEVICE_NOT_READY);
  EXPECT_HR(can_unload(), S_OK);
  unlink(cfg.c_str());
}

TEST_P(Nd2Connect, NdSupportHelpers) {
  SIZE_T cb = 0;
  EXPECT_HR(NdQueryAddressList(0, nullptr, &cb), ND_DEVICE_NOT_READY);  // before NdStartup
  Process p("nd2conn", thread());
  ASSERT_TRUE(p.started());
  NdFlushProviders();  // nothing cached to forget; callable

  // NdQueryAddressList: ND_BUFFER_OVERFLOW and the size, then the list.
  cb = 0;
  EXPECT_HR(NdQueryAddressList(0, nullptr, &cb), ND_BUFFER_OVERFLOW);
  std::vector<char> buf(cb);
  ASSERT_HR(NdQueryAddressList(0, reinterpret_cast<SOCKET_ADDRESS_LIST*>(buf.data()), &cb), ND_SUCCESS);
  EXPECT_EQ(reinterpret_cast<SOCKET_ADDRESS_LIST*>(buf.data())->iAddressCount, 4);
  SIZE_T cb2 = buf.size();
  ASSERT_HR(NdQueryAddressList(ND_QUERY_EXCLUDE_NDv2_ADDRESSES, reinterpret_cast<SOCKET_ADDRESS_LIST*>(buf.data()),
                               &cb2),
            ND_SUCCESS);
  EXPECT_EQ(reinterpret_cast<SOCKET_ADDRESS_LIST*>(buf.data())->iAddressCount, 0);  // every address is ND2

  // NdResolveAddress: the local address that reaches the remote.
  sockaddr_in6 local{};
  SIZE_T llen = sizeof local;
  sockaddr_in peer = V4("10.0.0.77", 5);
  ASSERT_HR(NdResolveAddress(Sa(peer), sizeof peer, reinterpret_cast<sockaddr*>(&local), &llen), ND_SUCCESS);
  EXPECT_EQ(llen, sizeof(sockaddr_in));
  EXPECT_EQ(IpOf(reinterpret_cast<sockaddr*>(&local)), "10.0.0.1");
  sockaddr_in self = V4("10.0.0.2", 0);  // an address of ours: itself (loopback)
  llen = sizeof local;
  ASSERT_HR(NdResolveAddress(Sa(self), sizeof self, reinterpret_cast<sockaddr*>(&local), &llen), ND_SUCCESS);
  EXPECT_EQ(IpOf(reinterpret_cast<sockaddr*>(&local)), "10.0.0.2");
  sockaddr_in6 peer6 = V6("fd00::99", 0);
  llen = sizeof local;
  ASSERT_HR(NdResolveAddress(Sa(peer6), sizeof peer6, reinterpret_cast<sockaddr*>(&local), &llen), ND_SUCCESS);
  EXPECT_EQ(llen, sizeof(sockaddr_in6));
  EXPECT_EQ(IpOf(reinterpret_cast<sockaddr*>(&local)), "fd00::1");
  llen = 4;
  EXPECT_HR(NdResolveAddress(Sa(peer), sizeof peer, reinterpret_cast<sockaddr*>(&local), &llen), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(llen, sizeof(sockaddr_in));
  sockaddr_in far = V4("192.168.7.7", 0);
  llen = sizeof local;
  EXPECT_HR(NdResolveAddress(Sa(far), sizeof far, reinterpret_cast<sockaddr*>(&local), &llen),
            ND_NETWORK_UNREACHABLE);
  EXPECT_HR(NdResolveAddress(Sa(far), 3, reinterpret_cast<sockaddr*>(&local), &llen), ND_INVALID_PARAMETER_1);

  // NdCheckAddress / NdOpenAdapter / NdOpenV1Adapter.
  sockaddr_in mine = V4("10.0.0.1", 99), other = V4("10.0.0.3", 0);
  EXPECT_HR(NdCheckAddress(Sa(mine), sizeof mine), ND_SUCCESS);
  EXPECT_HR(NdCheckAddress(Sa(other), sizeof other), ND_INVALID_ADDRESS);
  Owned<IND2Adapter> ad;
  EXPECT_HR(NdOpenAdapter(IID_IND2Adapter, Sa(other), sizeof other, ad.pv()),
            ND_INVALID_ADDRESS);
  ASSERT_HR(NdOpenAdapter(IID_IND2Adapter, Sa(mine), sizeof mine, ad.pv()), ND_SUCCESS);
  INDAdapter* v1 = reinterpret_cast<INDAdapter*>(1);
  EXPECT_HR(NdOpenV1Adapter(Sa(mine), sizeof mine, &v1), ND_NOT_SUPPORTED);
  EXPECT_EQ(v1, nullptr);

  // NdCleanup while an adapter is still referenced: S_OK, as Microsoft's
  // ndsupport (it drops its reference; the objects keep the provider loaded).
  // The helpers answer ND_DEVICE_NOT_READY from then on; the adapter and what
  // is made from it keep working until released.
  ASSERT_HR(NdStartup(), ND_SUCCESS);  // nested
  EXPECT_HR(NdCleanup(), ND_SUCCESS);  // the nested one
  EXPECT_HR(NdCheckAddress(Sa(mine), sizeof mine), ND_SUCCESS);
  EXPECT_HR(NdCleanup(), ND_SUCCESS);  // the last, with the adapter alive
  EXPECT_HR(NdCheckAddress(Sa(mine), sizeof mine), ND_DEVICE_NOT_READY);
  Owned<IND2Adapter> again;
  EXPECT_HR(NdOpenAdapter(IID_IND2Adapter, Sa(mine), sizeof mine, again.pv()), ND_DEVICE_NOT_READY);
  HANDLE f = nullptr;
  EXPECT_HR(ad->CreateOverlappedFile(&f), ND_SUCCESS);  // still usable
  CloseHandle(f);
  EXPECT_HR(NdCleanup(), ND_DEVICE_NOT_READY);  // nothing left to drop
  // A closed provider whose objects live is opened again by NdStartup, and
  // the objects still work in it.
  ASSERT_HR(NdStartup(), ND_SUCCESS);
  EXPECT_HR(NdCheckAddress(Sa(mine), sizeof mine), ND_SUCCESS);
  EXPECT_HR(ad->CreateOverlappedFile(&f), ND_SUCCESS);
  CloseHandle(f);
  ad.reset();
  // ~Process: its NdCleanup is the last and tears the provider down.
}

// ---- connector: Bind, addresses --------------------------------------------------------------------

TEST_P(Nd2Connect, BindAndAddresses) {
  Process p("nd2conn", thread());
  ASSERT_TRUE(p.started());
  Side c;
  ASSERT_NO_FATAL_FAILURE(c.Open("10.0.0.1"));
  sockaddr_in6 got{};
  ULONG len = sizeof got;
  EXPECT_HR(c.conn->GetLocalAddress(reinterpret_cast<sockaddr*>(&got), &len), ND_CONNECTION_INVALID);
  len = sizeof got;
  EXPECT_HR(c.conn->GetPeerAddress(reinterpret_cast<sockaddr*>(&got), &len), ND_CONNECTION_INVALID);

  // Port 0: an ephemeral port (49152-65535).
  sockaddr_in any = V4("0.0.0.0", 0);
  ASSERT_HR(c.conn->Bind(Sa(any), sizeof any), ND_SUCCESS);
  len = sizeof got;
  ASSERT_HR(c.conn->GetLocalAddress(reinterpret_cast<sockaddr*>(&got), &len), ND_SUCCESS);
  EXPECT_EQ(len, sizeof(sockaddr_in));
  EXPECT_EQ(IpOf(reinterpret_cast<sockaddr*>(&got)), "10.0.0.1");  // the wildcard became the adapter's address
  const uint16_t port = PortOf(reinterpret_cast<sockaddr*>(&got));
  EXPECT_GE(port, 49152);
  EXPECT_LE(port, 65535);
  // Too small a buffer: ND_BUFFER_OVERFLOW, the size, the buffer untouched.
  char tiny[8];
  std::memset(tiny, 0x77, sizeof tiny);
  len = sizeof tiny;
  EXPECT_HR(c.conn->GetLocalAddress(reinterpret_cast<sockaddr*>(tiny), &len), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(len, sizeof(sockaddr_in));
  EXPECT_TRUE(std::all_of(tiny, tiny + sizeof tiny, [](char x) { return x == 0x77; }));
  len = 0;
  EXPECT_HR(c.conn->GetLocalAddress(nullptr, &len), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(len, sizeof(sockaddr_in));

  // A second Bind: STATUS_ADDRESS_ALREADY_ASSOCIATED (0xC0000238).
  sockaddr_in again = V4("10.0.0.1", 0);
  EXPECT_HR(c.conn->Bind(Sa(again), sizeof again), STATUS_ADDRESS_ALREADY_ASSOCIATED);
  EXPECT_HR(c.conn->Bind(Sa(again), sizeof again), static_cast<HRESULT>(0xC0000238));
  // The port taken: ND_SHARING_VIOLATION for another connector and for a listener.
  Owned<IND2Connector> c2;
  ASSERT_HR(c.adapter->CreateConnector(IID_IND2Connector, c.file, c2.pv()), ND_SUCCESS);
  sockaddr_in same = V4("10.0.0.1", port);
  EXPECT_HR(c2->Bind(Sa(same), sizeof same), ND_SHARING_VIOLATION);
  Owned<IND2Listener> l;
  ASSERT_HR(c.adapter->CreateListener(IID_IND2Listener, c.file, l.pv()), ND_SUCCESS);
  EXPECT_HR(l->Bind(Sa(same), sizeof same), ND_SHARING_VIOLATION);
  // Not an address of this adapter (10.0.0.2 is the other adapter's).
  sockaddr_in foreign = V4("10.0.0.2", 0);
  EXPECT_HR(c2->Bind(Sa(foreign), sizeof foreign), ND_INVALID_ADDRESS);
  // The failed Binds left c2 usable: an explicit port, IPv6.
  sockaddr_in6 six = V6("fd00::1", 40000);
  ASSERT_HR(c2->Bind(Sa(six), sizeof six), ND_SUCCESS);
  len = sizeof got;
  ASSERT_HR(c2->GetLocalAddress(reinterpret_cast<sockaddr*>(&got), &len), ND_SUCCESS);
  EXPECT_EQ(len, sizeof(sockaddr_in6));
  EXPECT_EQ(IpOf(reinterpret_cast<sockaddr*>(&got)), "fd00::1");
  EXPECT_EQ(PortOf(reinterpret_cast<sockaddr*>(&got)), 40000);
  // Released connectors free their ports.
  c2.reset();
  c.conn->Release();
  c.conn = nullptr;
  EXPECT_HR(l->Bind(Sa(same), sizeof same), ND_SUCCESS);
  l.reset();
  c.Close();
}

TEST_P(Nd2Connect, NoEphemeralPortLeftIsTooManyAddresses) {
  Process p("nd2conn", thread(), "ephemeral_ports = 60000-60001\n");
  ASSERT_TRUE(p.started());
  Side c, s;
  ASSERT_NO_FATAL_FAILURE(c.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s.Open("10.0.0.2"));
  auto l = Listen(s, "10.0.0.2", kPort);
  std::vector<Owned<IND2Connector>> cs;
  for (int i = 0; i < 3; i++) {
    Owned<IND2Connector> x;
    ASSERT_HR(c.adapter->CreateConnector(IID_IND2Connector, c.file, x.pv()), ND_SUCCESS);
    cs.push_back(std::move(x));
  }
  sockaddr_in any = V4("10.0.0.1", 0);
  ASSERT_HR(cs[0]->Bind(Sa(any), sizeof any), ND_SUCCESS);
  ASSERT_HR(cs[1]->Bind(Sa(any), sizeof any), ND_SUCCESS);
  for (int i = 0; i < 2; i++) {
    sockaddr_in got{};
    ULONG len = sizeof got;
    ASSERT_HR(cs[i]->GetLocalAddress(reinterpret_cast<sockaddr*>(&got), &len), ND_SUCCESS);
    EXPECT_GE(PortOf(reinterpret_cast<sockaddr*>(&got)), 60000);
    EXPECT_LE(PortOf(reinterpret_cast<sockaddr*>(&got)), 60001);
  }
  EXPECT_HR(cs[2]->Bind(Sa(any), sizeof any), ND_TOO_MANY_ADDRESSES);
  Owned<IND2Listener> l2;
  ASSERT_HR(c.adapter->CreateListener(IID_IND2Listener, c.file, l2.pv()), ND_SUCCESS);
  EXPECT_HR(l2->Bind(Sa(any), sizeof any), ND_TOO_MANY_ADDRESSES);
  // Connect without Bind takes an ephemeral port too.
  sockaddr_in dest = V4("10.0.0.2", kPort);
  EXPECT_HR(cs[2]->Connect(c.qp, Sa(dest), sizeof dest, 0, 0, nullptr, 0, &c.ov), ND_TOO_MANY_ADDRESSES);
  // One freed: the same connector binds now, and connects.
  cs[0].reset();
  ASSERT_HR(cs[2]->Bind(Sa(any), sizeof any), ND_SUCCESS);
  c.conn->Release();
  c.conn = cs[2].release();
  ASSERT_NO_FATAL_FAILURE(Establish(c, s, l, Sa(dest), sizeof dest));
  cs[1].reset();
  l2.reset();
  l.reset();
  c.Close();
  s.Close();
}

// ---- a connection, every getter, both sides --------------------------------------------------------

TEST_P(Nd2Connect, ConnectAcceptAndEveryGetter) {
  Process p("nd2conn", thread());
  ASSERT_TRUE(p.started());
  Side c, s;
  ASSERT_NO_FATAL_FAILURE(c.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s.Open("10.0.0.2"));
  ULONG in = 0, out = 0, len = 0;
  OVERLAPPED x{};
  // Nothing to complete, read or disconnect before a connection.
  EXPECT_HR(c.conn->CompleteConnect(&x), ND_CONNECTION_INVALID);
  EXPECT_HR(c.conn->GetReadLimits(&in, &out), ND_CONNECTION_INVALID);
  EXPECT_HR(c.conn->GetPrivateData(nullptr, &len), ND_CONNECTION_INVALID);
  EXPECT_HR(c.conn->NotifyDisconnect(&x), ND_CONNECTION_INVALID);
  EXPECT_HR(c.conn->Disconnect(&x), ND_CONNECTION_INVALID);
  EXPECT_HR(s.conn->Accept(s.qp, 1, 1, nullptr, 0, &x), ND_CONNECTION_INVALID);
  EXPECT_HR(s.conn->Reject(nullptr, 0), ND_CONNECTION_INVALID);

  auto l = Listen(s, "10.0.0.2", kPort);
  OVERLAPPED lov{};
  ASSERT_HR(l->GetConnectionRequest(s.conn, &lov), ND_PENDING);
  EXPECT_HR(l->GetOverlappedResult(&lov, FALSE), ND_PENDING);
  ASSERT_HR(s.Recv(&s, 0, 4096), ND_SUCCESS);  // before Accept (the iWARP rule)
  ASSERT_HR(c.Recv(&c, 0, 4096), ND_SUCCESS);

  // Private data above MaxCallerData: ND_INVALID_BUFFER_SIZE, then the maximum
  // on the same connector; a missing buffer ND_ACCESS_VIOLATION.
  sockaddr_in dest = V4("10.0.0.2", kPort);
  std::vector<uint8_t> pd(200);
  for (size_t i = 0; i < pd.size(); i++) pd[i] = static_cast<uint8_t>(i * 3 + 1);
  EXPECT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 100, 3, pd.data(), 57, &c.ov), ND_INVALID_BUFFER_SIZE);
  EXPECT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 100, 3, nullptr, 8, &c.ov), ND_ACCESS_VIOLATION);
  ASSERT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 100, 3, pd.data(), 56, &c.ov), ND_PENDING);
  // While connecting: the local address is known (an ephemeral port), a second Connect is refused.
  sockaddr_in cl{};
  len = sizeof cl;
  ASSERT_HR(c.conn->GetLocalAddress(reinterpret_cast<sockaddr*>(&cl), &len), ND_SUCCESS);
  EXPECT_GE(PortOf(Sa(cl)), 49152);
  OVERLAPPED x2{};
  EXPECT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &x2), ND_CONNECTION_ACTIVE);

  ASSERT_HR(Await(l, &lov, ND_PENDING), ND_SUCCESS);
  // Server side, before Accept: the request's private data (56 bytes on the wire).
  len = 0;
  EXPECT_HR(s.conn->GetPrivateData(nullptr, &len), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(len, 56u);
  uint8_t part[10] = {};
  len = sizeof part;
  EXPECT_HR(s.conn->GetPrivateData(part, &len), ND_BUFFER_OVERFLOW);  // partial data, the size needed
  EXPECT_EQ(len, 56u);
  EXPECT_EQ(std::memcmp(part, pd.data(), sizeof part), 0);
  uint8_t got[256] = {};
  len = sizeof got;
  ASSERT_HR(s.conn->GetPrivateData(got, &len), ND_SUCCESS);
  EXPECT_EQ(len, 56u);
  EXPECT_EQ(std::memcmp(got, pd.data(), 56), 0);
  // Read limits, from the server's side: the client's outbound is its inbound
  // (3); the client's inbound 100 was clamped to the adapter's 16.
  ASSERT_HR(s.conn->GetReadLimits(&in, &out), ND_SUCCESS);
  EXPECT_EQ(in, 3u);
  EXPECT_EQ(out, 16u);
  EXPECT_HR(s.conn->GetReadLimits(nullptr, nullptr), ND_SUCCESS);  // both optional
  sockaddr_in6 a{};
  len = sizeof a;
  ASSERT_HR(s.conn->GetPeerAddress(reinterpret_cast<sockaddr*>(&a), &len), ND_SUCCESS);
  EXPECT_EQ(IpOf(reinterpret_cast<sockaddr*>(&a)), "10.0.0.1");
  EXPECT_EQ(PortOf(reinterpret_cast<sockaddr*>(&a)), PortOf(Sa(cl)));
  len = sizeof a;
  ASSERT_HR(s.conn->GetLocalAddress(reinterpret_cast<sockaddr*>(&a), &len), ND_SUCCESS);
  EXPECT_EQ(IpOf(reinterpret_cast<sockaddr*>(&a)), "10.0.0.2");
  EXPECT_EQ(PortOf(reinterpret_cast<sockaddr*>(&a)), kPort);
  len = 3;
  EXPECT_HR(s.conn->GetPeerAddress(reinterpret_cast<sockaddr*>(&a), &len), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(len, sizeof(sockaddr_in));

  // Accept: above MaxCalleeData ND_INVALID_BUFFER_SIZE, then the maximum.
  EXPECT_HR(s.conn->Accept(s.qp, 2, 20, pd.data(), 149, &s.ov), ND_INVALID_BUFFER_SIZE);
  EXPECT_HR(s.conn->Accept(s.qp, 2, 20, nullptr, 1, &s.ov), ND_ACCESS_VIOLATION);
  ASSERT_HR(s.conn->Accept(s.qp, 2, 20, pd.data() + 1, 148, &s.ov), ND_PENDING);
  EXPECT_HR(s.conn->Accept(s.qp, 2, 20, nullptr, 0, &x2), ND_CONNECTION_INVALID);  // already accepting

  // Client: Connect completes; the REP's private data (196 bytes on the wire)
  // and the negotiated limits: the server's 20 clamped to 16, its 2 kept.
  ASSERT_HR(Await(c.conn, &c.ov, ND_PENDING), ND_SUCCESS);
  len = sizeof got;
  ASSERT_HR(c.conn->GetPrivateData(got, &len), ND_SUCCESS);
  EXPECT_EQ(len, 196u);
  EXPECT_EQ(std::memcmp(got, pd.data() + 1, 148), 0);
  ASSERT_HR(c.conn->GetReadLimits(&in, &out), ND_SUCCESS);
  EXPECT_EQ(in, 16u);
  EXPECT_EQ(out, 2u);
  len = sizeof a;
  ASSERT_HR(c.conn->GetPeerAddress(reinterpret_cast<sockaddr*>(&a), &len), ND_SUCCESS);
  EXPECT_EQ(IpOf(reinterpret_cast<sockaddr*>(&a)), "10.0.0.2");
  EXPECT_EQ(PortOf(reinterpret_cast<sockaddr*>(&a)), kPort);
  // CompleteConnect: its outcome through the overlapped; a second one ND_CONNECTION_INVALID.
  ASSERT_HR(Await(c.conn, &c.ov, c.conn->CompleteConnect(&c.ov)), ND_SUCCESS);
  EXPECT_HR(c.conn->CompleteConnect(&x2), ND_CONNECTION_INVALID);
  ASSERT_HR(Await(s.conn, &s.ov, ND_PENDING), ND_SUCCESS);

  // Connected: Connect again ND_CONNECTION_ACTIVE, Bind 0xC0000238; the
  // connected QP on another connector ND_CONNECTION_ACTIVE.
  EXPECT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &x2), ND_CONNECTION_ACTIVE);
  sockaddr_in any = V4("10.0.0.1", 0);
  EXPECT_HR(c.conn->Bind(Sa(any), sizeof any), STATUS_ADDRESS_ALREADY_ASSOCIATED);
  Owned<IND2Connector> c2;
  ASSERT_HR(c.adapter->CreateConnector(IID_IND2Connector, c.file, c2.pv()), ND_SUCCESS);
  EXPECT_HR(c2->Connect(c.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &x2), ND_CONNECTION_ACTIVE);

  // A second request: Accept with the connected QP ND_CONNECTION_ACTIVE; Reject
  // (above MaxCalleeData first) refuses it with private data.
  Owned<IND2QueuePair> qp2;
  ASSERT_HR(c.adapter->CreateQueuePair(IID_IND2QueuePair, c.cq, c.cq, nullptr, 4, 4, 1, 1, 0,
                                       qp2.pv()),
            ND_SUCCESS);
  Owned<IND2Connector> s2;
  ASSERT_HR(s.adapter->CreateConnector(IID_IND2Connector, s.file, s2.pv()), ND_SUCCESS);
  OVERLAPPED lov2{}, cov2{};
  ASSERT_HR(l->GetConnectionRequest(s2, &lov2), ND_PENDING);
  ASSERT_HR(c2->Connect(qp2, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &cov2), ND_PENDING);
  ASSERT_HR(Await(l, &lov2, ND_PENDING), ND_SUCCESS);
  OVERLAPPED sov2{};
  EXPECT_HR(s2->Accept(s.qp, 1, 1, nullptr, 0, &sov2), ND_CONNECTION_ACTIVE);
  EXPECT_HR(s2->Reject(pd.data(), 149), ND_INVALID_BUFFER_SIZE);
  EXPECT_HR(s2->Reject(nullptr, 5), ND_ACCESS_VIOLATION);
  ASSERT_HR(s2->Reject(pd.data() + 2, 148), ND_SUCCESS);
  EXPECT_HR(s2->Reject(nullptr, 0), ND_CONNECTION_INVALID);  // once
  EXPECT_HR(Await(c2, &cov2, ND_PENDING), ND_CONNECTION_REFUSED);
  len = sizeof got;
  ASSERT_HR(c2->GetPrivateData(got, &len), ND_SUCCESS);  // the REJ's
  EXPECT_EQ(len, 148u);
  EXPECT_EQ(std::memcmp(got, pd.data() + 2, 148), 0);
  s2.reset();
  c2.reset();
  qp2.reset();

  // Data flows both ways.
  std::strcpy(c.buf.data() + 8192, "from the client");
  ASSERT_HR(c.Send(nullptr, 8192, 16), ND_SUCCESS);
  auto r = c.Next();
  ASSERT_TRUE(r);
  EXPECT_HR(r->Status, ND_SUCCESS);
  r = s.Next();
  ASSERT_TRUE(r);
  EXPECT_HR(r->Status, ND_SUCCESS);
  EXPECT_EQ(r->RequestContext, &s);
  EXPECT_STREQ(s.buf.data(), "from the client");

  // NotifyDisconnect does not flush: pending, then cancelled (ND_CANCELED),
  // and the receive posted meanwhile is still there for the next Send.
  OVERLAPPED nov{};
  nov.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr);
  ASSERT_HR(s.conn->NotifyDisconnect(&nov), ND_PENDING);
  ASSERT_HR(s.Recv(&s, 0, 4096), ND_SUCCESS);
  EXPECT_TRUE(s.Quiet(50));
  ASSERT_HR(s.conn->CancelOverlappedRequests(), ND_SUCCESS);
  EXPECT_HR(Await(s.conn, &nov, ND_PENDING, 0), ND_CANCELED);
  EXPECT_TRUE(s.Quiet(50));  // nothing flushed
  ASSERT_HR(c.Send(nullptr, 8192, 16), ND_SUCCESS);
  r = c.Next();
  ASSERT_TRUE(r);
  EXPECT_HR(r->Status, ND_SUCCESS);
  r = s.Next();
  ASSERT_TRUE(r);
  EXPECT_HR(r->Status, ND_SUCCESS);

  // The client disconnects: its Disconnect completes ND_SUCCESS and flushes
  // its own posted receive (ND_CANCELED); the server's NotifyDisconnect
  // completes STATUS_CONNECTION_DISCONNECTED (0xC000020C).
  ASSERT_HR(s.conn->NotifyDisconnect(&nov), ND_PENDING);
  ASSERT_HR(c.conn->Disconnect(&c.ov), ND_PENDING);
  EXPECT_HR(Await(c.conn, &c.ov, ND_PENDING), ND_SUCCESS);
  r = c.Next();
  ASSERT_TRUE(r);
  EXPECT_HR(r->Status, ND_CANCELED);
  EXPECT_EQ(r->RequestType, Nd2RequestTypeReceive);
  EXPECT_EQ(r->RequestContext, &c);
  EXPECT_HR(Await(s.conn, &nov, ND_PENDING), static_cast<HRESULT>(0xC000020C));
  // The server's Disconnect after the peer's: done (ND_SUCCESS).
  EXPECT_HR(Await(s.conn, &s.ov, s.conn->Disconnect(&s.ov)), ND_SUCCESS);
  // NotifyDisconnect after the fact completes at once.
  EXPECT_HR(Await(s.conn, &nov, s.conn->NotifyDisconnect(&nov)), STATUS_CONNECTION_DISCONNECTED);
  EXPECT_HR(Await(c.conn, &nov, c.conn->NotifyDisconnect(&nov)), STATUS_CONNECTION_DISCONNECTED);
  CloseHandle(nov.hEvent);
  l.reset();
  c.Close();
  s.Close();
}

// ---- refused, unreachable, timed out: and retried ----------------------------------------------------

TEST_P(Nd2Connect, RefusedThenRetriedOnTheSameConnectorAndQp) {
  Process p("nd2conn", thread());
  ASSERT_TRUE(p.started());
  Side c, s;
  ASSERT_NO_FATAL_FAILURE(c.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s.Open("10.0.0.2"));
  ASSERT_HR(c.Recv(&c, 0, 4096), ND_SUCCESS);  // posted before: must survive the refusal
  sockaddr_in dest = V4("10.0.0.2", kPort);
  // No listener: ND_CONNECTION_REFUSED.
  ASSERT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  EXPECT_HR(Await(c.conn, &c.ov, ND_PENDING), ND_CONNECTION_REFUSED);
  EXPECT_TRUE(c.Quiet(20));  // the QP was not touched: no flush
  // A listener that was closed: refused as well.
  auto gone = Listen(s, "10.0.0.2", kPort);
  gone.reset();
  ASSERT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  EXPECT_HR(Await(c.conn, &c.ov, ND_PENDING), ND_CONNECTION_REFUSED);
  // A backlog of 1 with one request waiting: the next is refused.
  auto l = Listen(s, "10.0.0.2", kPort, 1);
  Owned<IND2QueuePair> qp2;
  ASSERT_HR(c.adapter->CreateQueuePair(IID_IND2QueuePair, c.cq, c.cq, nullptr, 4, 4, 1, 1, 0,
                                       qp2.pv()),
            ND_SUCCESS);
  Owned<IND2Connector> first;
  ASSERT_HR(c.adapter->CreateConnector(IID_IND2Connector, c.file, first.pv()), ND_SUCCESS);
  OVERLAPPED fov{};
  ASSERT_HR(first->Connect(qp2, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &fov), ND_PENDING);
  Pump(300);  // its request waits at the listener
  EXPECT_HR(first->GetOverlappedResult(&fov, FALSE), ND_PENDING);
  ASSERT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  EXPECT_HR(Await(c.conn, &c.ov, ND_PENDING), ND_CONNECTION_REFUSED);
  // Abandoning the first (CancelOverlappedRequests): ND_CANCELED.
  ASSERT_HR(first->CancelOverlappedRequests(), ND_SUCCESS);
  EXPECT_HR(Await(first, &fov, ND_PENDING, 0), ND_CANCELED);
  first.reset();
  qp2.reset();
  Pump(300);  // its REJ reaches the listener: the abandoned request is not handed out
  // The peer's Reject: ND_CONNECTION_REFUSED. (The abandoned request no
  // longer fills the backlog: this one waits instead of being refused.)
  OVERLAPPED lov{};
  ASSERT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  Pump(300);
  EXPECT_HR(c.conn->GetOverlappedResult(&c.ov, FALSE), ND_PENDING);
  ASSERT_HR(l->GetConnectionRequest(s.conn, &lov), ND_PENDING);
  ASSERT_HR(Await(l, &lov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(s.conn->Reject(nullptr, 0), ND_SUCCESS);
  EXPECT_HR(Await(c.conn, &c.ov, ND_PENDING), ND_CONNECTION_REFUSED);
  // The same connector and QP, once more: connected; the receive posted at the
  // start takes the server's first Send.
  ASSERT_NO_FATAL_FAILURE(s.NewConnector());
  ASSERT_NO_FATAL_FAILURE(Establish(c, s, l, Sa(dest), sizeof dest));
  std::strcpy(s.buf.data() + 100, "after three refusals");
  ASSERT_HR(s.Send(nullptr, 100, 21), ND_SUCCESS);
  auto r = s.Next();
  ASSERT_TRUE(r);
  EXPECT_HR(r->Status, ND_SUCCESS);
  r = c.Next();
  ASSERT_TRUE(r);
  EXPECT_HR(r->Status, ND_SUCCESS);
  EXPECT_EQ(r->RequestContext, &c);
  EXPECT_STREQ(c.buf.data(), "after three refusals");
  l.reset();
  c.Close();
  s.Close();
}

TEST_P(Nd2Connect, UnreachableAndInvalidDestinations) {
  Process p("nd2conn", thread());
  ASSERT_TRUE(p.started());
  Side c, s;
  ASSERT_NO_FATAL_FAILURE(c.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s.Open("10.0.0.2"));
  // Addresses no connection goes to: STATUS_BAD_NETWORK_NAME (0xC00000CC), at once.
  for (const char* bad : {"0.0.0.0", "255.255.255.255", "224.0.0.1", "127.0.0.1"}) {
    sockaddr_in d = V4(bad, kPort);
    EXPECT_HR(c.conn->Connect(c.qp, Sa(d), sizeof d, 1, 1, nullptr, 0, &c.ov), static_cast<HRESULT>(0xC00000CC))
        << bad;
  }
  sockaddr_in port0 = V4("10.0.0.2", 0);
  EXPECT_HR(c.conn->Connect(c.qp, Sa(port0), sizeof port0, 1, 1, nullptr, 0, &c.ov), STATUS_BAD_NETWORK_NAME);
  sockaddr_in6 mc6 = V6("ff02::1", kPort);
  EXPECT_HR(c.conn->Connect(c.qp, Sa(mc6), sizeof mc6, 1, 1, nullptr, 0, &c.ov), STATUS_BAD_NETWORK_NAME);
  EXPECT_HR(c.conn->Connect(c.qp, Sa(port0), 2, 1, 1, nullptr, 0, &c.ov), ND_INVALID_PARAMETER_2);
  // Off every subnet of the adapter: ND_NETWORK_UNREACHABLE, at once.
  sockaddr_in far = V4("192.168.9.9", kPort);
  EXPECT_HR(c.conn->Connect(c.qp, Sa(far), sizeof far, 1, 1, nullptr, 0, &c.ov), ND_NETWORK_UNREACHABLE);
  // On the subnet, nobody answers ARP: ND_HOST_UNREACHABLE, within seconds.
  sockaddr_in nobody = V4("10.0.0.77", kPort);
  const uint64_t t0 = NowMs();
  ASSERT_HR(c.conn->Connect(c.qp, Sa(nobody), sizeof nobody, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  EXPECT_HR(Await(c.conn, &c.ov, ND_PENDING), ND_HOST_UNREACHABLE);
  EXPECT_LT(NowMs() - t0, 5000u);
  // A connector bound to IPv4 cannot reach an IPv6 peer.
  sockaddr_in6 six = V6("fd00::2", kPort);
  EXPECT_HR(c.conn->Connect(c.qp, Sa(six), sizeof six, 1, 1, nullptr, 0, &c.ov), ND_INVALID_ADDRESS);
  // After those the same connector (and QP) connects (the spec's "may be retried").
  auto l = Listen(s, "0.0.0.0", kPort);
  sockaddr_in dest = V4("10.0.0.2", kPort);
  ASSERT_NO_FATAL_FAILURE(Establish(c, s, l, Sa(dest), sizeof dest));
  l.reset();
  c.Close();
  s.Close();
}

TEST_P(Nd2Connect, Ipv6Connection) {
  Process p("nd2conn", thread());
  ASSERT_TRUE(p.started());
  Side c, s;
  ASSERT_NO_FATAL_FAILURE(c.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s.Open("10.0.0.2"));
  Owned<IND2Listener> l;
  ASSERT_HR(s.adapter->CreateListener(IID_IND2Listener, s.file, l.pv()), ND_SUCCESS);
  sockaddr_in6 la = V6("fd00::2", kPort);
  ASSERT_HR(l->Bind(Sa(la), sizeof la), ND_SUCCESS);
  ASSERT_HR(l->Listen(0), ND_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(Establish(c, s, l, Sa(la), sizeof la));
  sockaddr_in6 a{};
  ULONG len = sizeof a;
  ASSERT_HR(c.conn->GetLocalAddress(reinterpret_cast<sockaddr*>(&a), &len), ND_SUCCESS);
  EXPECT_EQ(len, sizeof(sockaddr_in6));
  EXPECT_EQ(IpOf(reinterpret_cast<sockaddr*>(&a)), "fd00::1");
  len = sizeof a;
  ASSERT_HR(s.conn->GetPeerAddress(reinterpret_cast<sockaddr*>(&a), &len), ND_SUCCESS);
  EXPECT_EQ(IpOf(reinterpret_cast<sockaddr*>(&a)), "fd00::1");
  ASSERT_HR(s.Recv(&s), ND_SUCCESS);
  ASSERT_HR(c.Send(nullptr, 0, 100), ND_SUCCESS);
  auto r = s.Next();
  ASSERT_TRUE(r);
  EXPECT_HR(r->Status, ND_SUCCESS);
  EXPECT_EQ(r->BytesTransferred, 100u);
  l.reset();
  c.Close();
  s.Close();
}

// The CM gets no answer: the peer's MRA asks for 1 ms only (cm_mra_timeout = 8)
// and ours gives up after 2 retries of 16 ms (cm_timeout = 12): ND_IO_TIMEOUT.
TEST_P(Nd2Connect, NoAnswerIsIoTimeout) {
  Process p("nd2conn", thread(), "cm_timeout = 12\ncm_retries = 2\n", "cm_mra_timeout = 8\n");
  ASSERT_TRUE(p.started());
  Side c, s;
  ASSERT_NO_FATAL_FAILURE(c.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s.Open("10.0.0.2"));
  auto l = Listen(s, "10.0.0.2", kPort);  // nobody takes the request
  sockaddr_in dest = V4("10.0.0.2", kPort);
  const uint64_t t0 = NowMs();
  ASSERT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  EXPECT_HR(Await(c.conn, &c.ov, ND_PENDING), ND_IO_TIMEOUT);
  EXPECT_LT(NowMs() - t0, 5000u);
  // The connector retries, with the same QP: to a listener of its own adapter
  // this time (loopback), whose MRA asks the default 69 s, so the short CM
  // timeouts above cannot race the test's Accept.
  Owned<IND2Listener> own;
  ASSERT_HR(c.adapter->CreateListener(IID_IND2Listener, c.file, own.pv()), ND_SUCCESS);
  sockaddr_in self = V4("10.0.0.1", kPort);
  ASSERT_HR(own->Bind(Sa(self), sizeof self), ND_SUCCESS);
  ASSERT_HR(own->Listen(0), ND_SUCCESS);
  Owned<IND2Connector> sc;
  Owned<IND2QueuePair> sqp;
  ASSERT_HR(c.adapter->CreateConnector(IID_IND2Connector, c.file, sc.pv()), ND_SUCCESS);
  ASSERT_HR(c.adapter->CreateQueuePair(IID_IND2QueuePair, c.cq, c.cq, nullptr, 4, 4, 1, 1, 0, sqp.pv()),
            ND_SUCCESS);
  OVERLAPPED lov{}, sov{};
  ASSERT_HR(own->GetConnectionRequest(sc, &lov), ND_PENDING);
  ASSERT_HR(c.conn->Connect(c.qp, Sa(self), sizeof self, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  ASSERT_HR(Await(own, &lov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(sc->Accept(sqp, 1, 1, nullptr, 0, &sov), ND_PENDING);
  ASSERT_HR(Await(c.conn, &c.ov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(Await(c.conn, &c.ov, c.conn->CompleteConnect(&c.ov)), ND_SUCCESS);
  ASSERT_HR(Await(sc, &sov, ND_PENDING), ND_SUCCESS);
  sc.reset();
  sqp.reset();
  own.reset();
  l.reset();
  c.Close();
  s.Close();
}

// No provider timeout while the application has not called Accept or
// CompleteConnect: with a CM that gives up after ~0.4 s without an answer
// (cm_timeout = 15: 134 ms, 3 tries), the application waits 1.2 s before each.
TEST_P(Nd2Connect, NoTimeoutBeforeAcceptOrCompleteConnect) {
  Process p("nd2conn", thread(), "cm_timeout = 15\ncm_retries = 2\n", "cm_timeout = 15\ncm_retries = 2\n");
  ASSERT_TRUE(p.started());
  Side c, s;
  ASSERT_NO_FATAL_FAILURE(c.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s.Open("10.0.0.2"));
  auto l = Listen(s, "10.0.0.2", kPort);
  sockaddr_in dest = V4("10.0.0.2", kPort);
  OVERLAPPED lov{};
  ASSERT_HR(l->GetConnectionRequest(s.conn, &lov), ND_PENDING);
  ASSERT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  ASSERT_HR(Await(l, &lov, ND_PENDING), ND_SUCCESS);
  Pump(1200);  // the server thinks it over
  EXPECT_HR(c.conn->GetOverlappedResult(&c.ov, FALSE), ND_PENDING);
  ASSERT_HR(s.Recv(&s), ND_SUCCESS);
  ASSERT_HR(s.conn->Accept(s.qp, 1, 1, nullptr, 0, &s.ov), ND_PENDING);
  ASSERT_HR(Await(c.conn, &c.ov, ND_PENDING), ND_SUCCESS);
  Pump(1200);  // and so does the client
  EXPECT_HR(s.conn->GetOverlappedResult(&s.ov, FALSE), ND_PENDING);
  ASSERT_HR(Await(c.conn, &c.ov, c.conn->CompleteConnect(&c.ov)), ND_SUCCESS);
  ASSERT_HR(Await(s.conn, &s.ov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(c.Send(nullptr, 0, 64), ND_SUCCESS);
  auto r = s.Next();
  ASSERT_TRUE(r);
  EXPECT_HR(r->Status, ND_SUCCESS);
  l.reset();
  c.Close();
  s.Close();
}

// A passive side that does not wait (cm_retries = 0: one REP, no MRA heard)
// for a client that never calls CompleteConnect: Accept ND_IO_TIMEOUT, and
// the client's late CompleteConnect ND_IO_TIMEOUT.
TEST_P(Nd2Connect, AcceptAndCompleteConnectTimeOut) {
  Process p("nd2conn", thread(), "", "cm_timeout = 12\ncm_retries = 0\n");
  ASSERT_TRUE(p.started());
  Side c, s;
  ASSERT_NO_FATAL_FAILURE(c.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s.Open("10.0.0.2"));
  auto l = Listen(s, "10.0.0.2", kPort);
  sockaddr_in dest = V4("10.0.0.2", kPort);
  OVERLAPPED lov{};
  ASSERT_HR(l->GetConnectionRequest(s.conn, &lov), ND_PENDING);
  ASSERT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  ASSERT_HR(Await(l, &lov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(s.conn->Accept(s.qp, 1, 1, nullptr, 0, &s.ov), ND_PENDING);
  ASSERT_HR(Await(c.conn, &c.ov, ND_PENDING), ND_SUCCESS);
  EXPECT_HR(Await(s.conn, &s.ov, ND_PENDING), ND_IO_TIMEOUT);
  Pump(300);  // the REJ (timeout), sent with the Accept's completion, reaches the client
  EXPECT_HR(c.conn->CompleteConnect(&c.ov), ND_IO_TIMEOUT);
  l.reset();
  c.Close();
  s.Close();
}

// ---- abandoned attempts ----------------------------------------------------------------------------

TEST_P(Nd2Connect, AbandonedAttempts) {
  Process p("nd2conn", thread());
  ASSERT_TRUE(p.started());
  Side c, s;
  ASSERT_NO_FATAL_FAILURE(c.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s.Open("10.0.0.2"));
  auto l = Listen(s, "10.0.0.2", kPort);
  sockaddr_in dest = V4("10.0.0.2", kPort);
  OVERLAPPED lov{};

  // 1. The client cancels its Connect after the server took the request: the
  //    server's Accept and Reject then ND_CONNECTION_ABORTED.
  ASSERT_HR(l->GetConnectionRequest(s.conn, &lov), ND_PENDING);
  ASSERT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  ASSERT_HR(Await(l, &lov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(c.conn->CancelOverlappedRequests(), ND_SUCCESS);
  EXPECT_HR(Await(c.conn, &c.ov, ND_PENDING, 0), ND_CANCELED);
  Pump(300);  // the REJ reaches the server
  EXPECT_HR(s.conn->Accept(s.qp, 1, 1, nullptr, 0, &s.ov), ND_CONNECTION_ABORTED);
  EXPECT_HR(s.conn->Reject(nullptr, 0), ND_CONNECTION_ABORTED);

  // 2. The client Rejects the server's acceptance (after Connect completed):
  //    Accept completes ND_CONNECTION_REFUSED; CompleteConnect is then invalid.
  ASSERT_NO_FATAL_FAILURE(c.NewConnector());
  ASSERT_NO_FATAL_FAILURE(s.NewConnector());
  ASSERT_HR(l->GetConnectionRequest(s.conn, &lov), ND_PENDING);
  ASSERT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  ASSERT_HR(Await(l, &lov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(s.conn->Accept(s.qp, 1, 1, nullptr, 0, &s.ov), ND_PENDING);
  ASSERT_HR(Await(c.conn, &c.ov, ND_PENDING), ND_SUCCESS);
  ULONG in = 9, out = 9;
  ASSERT_HR(c.conn->GetReadLimits(&in, &out), ND_SUCCESS);  // what a client judges before Reject
  EXPECT_EQ(in, 1u);
  EXPECT_EQ(out, 1u);
  ASSERT_HR(c.conn->Reject(nullptr, 0), ND_SUCCESS);
  EXPECT_HR(Await(s.conn, &s.ov, ND_PENDING), ND_CONNECTION_REFUSED);
  OVERLAPPED x{};
  EXPECT_HR(c.conn->CompleteConnect(&x), ND_CONNECTION_INVALID);

  // 3. The client releases its connector after Connect completed (ndmemorytest's
  //    NdConnClose): Accept completes ND_CONNECTION_REFUSED.
  ASSERT_NO_FATAL_FAILURE(c.NewQp());  // the refused REP left the old one in RTR
  ASSERT_NO_FATAL_FAILURE(c.NewConnector());
  ASSERT_NO_FATAL_FAILURE(s.NewQp());
  ASSERT_NO_FATAL_FAILURE(s.NewConnector());
  ASSERT_HR(l->GetConnectionRequest(s.conn, &lov), ND_PENDING);
  ASSERT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  ASSERT_HR(Await(l, &lov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(s.conn->Accept(s.qp, 1, 1, nullptr, 0, &s.ov), ND_PENDING);
  ASSERT_HR(Await(c.conn, &c.ov, ND_PENDING), ND_SUCCESS);
  c.conn->Release();
  c.conn = nullptr;
  EXPECT_HR(Await(s.conn, &s.ov, ND_PENDING), ND_CONNECTION_REFUSED);

  // 4. The server cancels its pending Accept: ND_CANCELED; the client's
  //    CompleteConnect then ND_CONNECTION_ABORTED.
  ASSERT_NO_FATAL_FAILURE(c.NewQp());
  ASSERT_NO_FATAL_FAILURE(c.NewConnector());
  ASSERT_NO_FATAL_FAILURE(s.NewQp());
  ASSERT_NO_FATAL_FAILURE(s.NewConnector());
  ASSERT_HR(l->GetConnectionRequest(s.conn, &lov), ND_PENDING);
  ASSERT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  ASSERT_HR(Await(l, &lov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(s.conn->Accept(s.qp, 1, 1, nullptr, 0, &s.ov), ND_PENDING);
  ASSERT_HR(Await(c.conn, &c.ov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(s.conn->CancelOverlappedRequests(), ND_SUCCESS);
  EXPECT_HR(Await(s.conn, &s.ov, ND_PENDING, 0), ND_CANCELED);
  Pump(300);  // the DREQ reaches the client
  EXPECT_HR(c.conn->CompleteConnect(&x), ND_CONNECTION_ABORTED);

  // 5. The client releases its QP while Connect is pending: ND_CANCELED
  //    ("the queue pair was removed"), and the server's request is abandoned.
  ASSERT_NO_FATAL_FAILURE(c.NewQp());
  ASSERT_NO_FATAL_FAILURE(c.NewConnector());
  ASSERT_NO_FATAL_FAILURE(s.NewQp());
  ASSERT_NO_FATAL_FAILURE(s.NewConnector());
  ASSERT_HR(l->GetConnectionRequest(s.conn, &lov), ND_PENDING);
  ASSERT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  ASSERT_HR(Await(l, &lov, ND_PENDING), ND_SUCCESS);
  c.qp->Release();
  c.qp = nullptr;
  EXPECT_HR(Await(c.conn, &c.ov, ND_PENDING, 0), ND_CANCELED);
  Pump(300);
  EXPECT_HR(s.conn->Accept(s.qp, 1, 1, nullptr, 0, &s.ov), ND_CONNECTION_ABORTED);

  // 6. The server releases its QP while Accept is pending: ND_CANCELED.
  ASSERT_NO_FATAL_FAILURE(c.NewQp());
  ASSERT_NO_FATAL_FAILURE(c.NewConnector());
  ASSERT_NO_FATAL_FAILURE(s.NewQp());
  ASSERT_NO_FATAL_FAILURE(s.NewConnector());
  ASSERT_HR(l->GetConnectionRequest(s.conn, &lov), ND_PENDING);
  ASSERT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  ASSERT_HR(Await(l, &lov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(s.conn->Accept(s.qp, 1, 1, nullptr, 0, &s.ov), ND_PENDING);
  s.qp->Release();
  s.qp = nullptr;
  EXPECT_HR(Await(s.conn, &s.ov, ND_PENDING, 0), ND_CANCELED);

  // Still a working listener and adapters after all that.
  ASSERT_NO_FATAL_FAILURE(c.NewQp());
  ASSERT_NO_FATAL_FAILURE(c.NewConnector());
  ASSERT_NO_FATAL_FAILURE(s.NewQp());
  ASSERT_NO_FATAL_FAILURE(s.NewConnector());
  ASSERT_NO_FATAL_FAILURE(Establish(c, s, l, Sa(dest), sizeof dest));
  l.reset();
  c.Close();
  s.Close();
}

// Releasing a connected QP disconnects it: the peer's NotifyDisconnect
// completes and its receive is flushed; the connector's Disconnect is then
// ND_CANCELED (the queue pair was removed).
TEST_P(Nd2Connect, ReleasingAConnectedQpDisconnects) {
  Process p("nd2conn", thread());
  ASSERT_TRUE(p.started());
  Side c, s;
  ASSERT_NO_FATAL_FAILURE(c.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s.Open("10.0.0.2"));
  auto l = Listen(s, "10.0.0.2", kPort);
  sockaddr_in dest = V4("10.0.0.2", kPort);
  ASSERT_NO_FATAL_FAILURE(Establish(c, s, l, Sa(dest), sizeof dest));
  OVERLAPPED nov{};
  ASSERT_HR(s.conn->NotifyDisconnect(&nov), ND_PENDING);
  ASSERT_HR(s.Recv(&s), ND_SUCCESS);
  c.qp->Release();
  c.qp = nullptr;
  EXPECT_HR(Await(s.conn, &nov, ND_PENDING), STATUS_CONNECTION_DISCONNECTED);
  auto r = s.Next();
  ASSERT_TRUE(r);
  EXPECT_HR(r->Status, ND_CANCELED);
  EXPECT_EQ(r->RequestContext, &s);
  EXPECT_HR(c.conn->Disconnect(&c.ov), ND_CANCELED);
  l.reset();
  c.Close();
  s.Close();
}

// ---- listener ------------------------------------------------------------------------------------------

TEST_P(Nd2Connect, Listener) {
  Process p("nd2conn", thread());
  ASSERT_TRUE(p.started());
  Side c, s;
  ASSERT_NO_FATAL_FAILURE(c.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s.Open("10.0.0.2"));
  Owned<IND2Listener> l;
  ASSERT_HR(s.adapter->CreateListener(IID_IND2Listener, s.file, l.pv()), ND_SUCCESS);
  sockaddr_in a{};
  ULONG len = sizeof a;
  EXPECT_HR(l->GetLocalAddress(reinterpret_cast<sockaddr*>(&a), &len), ND_INVALID_DEVICE_STATE);  // not listening
  EXPECT_HR(l->Listen(0), ND_INVALID_DEVICE_STATE);                                               // not bound
  OVERLAPPED lov{};
  EXPECT_HR(l->GetConnectionRequest(s.conn, &lov), ND_INVALID_DEVICE_STATE);
  sockaddr_in any = V4("0.0.0.0", 0);  // every address, an ephemeral port
  ASSERT_HR(l->Bind(Sa(any), sizeof any), ND_SUCCESS);
  EXPECT_HR(l->Bind(Sa(any), sizeof any), STATUS_ADDRESS_ALREADY_ASSOCIATED);
  len = sizeof a;
  EXPECT_HR(l->GetLocalAddress(reinterpret_cast<sockaddr*>(&a), &len), ND_INVALID_DEVICE_STATE);  // bound only
  ASSERT_HR(l->Listen(0), ND_SUCCESS);
  EXPECT_HR(l->Listen(0), ND_INVALID_DEVICE_STATE);
  len = 0;
  EXPECT_HR(l->GetLocalAddress(nullptr, &len), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(len, sizeof(sockaddr_in));
  len = sizeof a;
  ASSERT_HR(l->GetLocalAddress(reinterpret_cast<sockaddr*>(&a), &len), ND_SUCCESS);
  EXPECT_EQ(IpOf(Sa(a)), "0.0.0.0");
  const uint16_t port = PortOf(Sa(a));
  EXPECT_GE(port, 49152);

  // GetConnectionRequest: cancelled (ND_CANCELED), then the listener closed
  // under a pending one (ND_CANCELED: "the listen request was closed").
  ASSERT_HR(l->GetConnectionRequest(s.conn, &lov), ND_PENDING);
  EXPECT_HR(l->GetConnectionRequest(s.conn, &lov), ND_CONNECTION_ACTIVE);  // that connector already waits
  ASSERT_HR(l->CancelOverlappedRequests(), ND_SUCCESS);
  EXPECT_HR(Await(l, &lov, ND_PENDING, 0), ND_CANCELED);

  // Several requests outstanding complete one per connection request, in order.
  Owned<IND2Connector> sc[2];
  OVERLAPPED sov[2] = {};
  for (int i = 0; i < 2; i++) {
    ASSERT_HR(s.adapter->CreateConnector(IID_IND2Connector, s.file, sc[i].pv()), ND_SUCCESS);
    ASSERT_HR(l->GetConnectionRequest(sc[i], &sov[i]), ND_PENDING);
  }
  sockaddr_in dest = V4("10.0.0.2", port);
  ASSERT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 1, 1, "one", 4, &c.ov), ND_PENDING);
  ASSERT_HR(Await(l, &sov[0], ND_PENDING), ND_SUCCESS);
  EXPECT_HR(l->GetOverlappedResult(&sov[1], FALSE), ND_PENDING);
  char pd[64] = {};
  len = sizeof pd;
  ASSERT_HR(sc[0]->GetPrivateData(pd, &len), ND_SUCCESS);
  EXPECT_STREQ(pd, "one");
  // A connector that holds a request cannot take another.
  OVERLAPPED x{};
  EXPECT_HR(l->GetConnectionRequest(sc[0], &x), ND_CONNECTION_ACTIVE);
  ASSERT_HR(sc[0]->Accept(s.qp, 1, 1, nullptr, 0, &s.ov), ND_PENDING);
  ASSERT_HR(Await(c.conn, &c.ov, ND_PENDING), ND_SUCCESS);
  ASSERT_HR(Await(c.conn, &c.ov, c.conn->CompleteConnect(&c.ov)), ND_SUCCESS);
  ASSERT_HR(Await(sc[0], &s.ov, ND_PENDING), ND_SUCCESS);
  // Releasing a waiting connector takes it off the listener (its request: ND_CANCELED).
  sc[1].reset();
  EXPECT_HR(Await(l, &sov[1], ND_PENDING, 0), ND_CANCELED);

  // The listener released under a pending request: the request completes ND_CANCELED.
  Owned<IND2Connector> sc3;
  ASSERT_HR(s.adapter->CreateConnector(IID_IND2Connector, s.file, sc3.pv()), ND_SUCCESS);
  OVERLAPPED lov3{};
  lov3.hEvent = CreateEvent(nullptr, TRUE, FALSE, nullptr);
  ASSERT_HR(l->GetConnectionRequest(sc3, &lov3), ND_PENDING);
  l.reset();
  EXPECT_EQ(WaitForSingleObject(lov3.hEvent, kLongWaitMs), WAIT_OBJECT_0);
  EXPECT_HR(sc3->GetOverlappedResult(&lov3, FALSE), ND_CANCELED);
  CloseHandle(lov3.hEvent);
  sc3.reset();
  sc[0].reset();
  c.Close();
  s.Close();
}

// ---- waits: a client whose only calls are WaitForSingleObject or GetQueuedCompletionStatus -----------

TEST_P(Nd2Connect, EventAndCompletionPortWaitsComplete) {
  Process p("nd2conn", thread());
  ASSERT_TRUE(p.started());
  Side c, s;
  ASSERT_NO_FATAL_FAILURE(c.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s.Open("10.0.0.2"));
  // The server's overlapped file on a completion port; the client's requests
  // on events. Each side waits only with those.
  HANDLE port = CreateIoCompletionPort(s.file, nullptr, 7, 0);
  ASSERT_NE(port, nullptr);
  auto from_port = [&](OVERLAPPED* want) -> HRESULT {
    DWORD bytes = 0;
    ULONG_PTR key = 0;
    OVERLAPPED* got = nullptr;
    const BOOL ok = GetQueuedCompletionStatus(port, &bytes, &key, &got, kLongWaitMs);
    if (!got) return ND_PENDING;  // timed out
    EXPECT_EQ(got, want);
    EXPECT_EQ(key, 7u);
    const HRESULT h = static_cast<HRESULT>(got->Internal);
    EXPECT_EQ(ok != FALSE, SUCCEEDED(h));  // FALSE with the OVERLAPPED of a failed request
    return h;
  };
  auto by_event = [&](OVERLAPPED* ov) -> HRESULT {
    if (WaitForSingleObject(ov->hEvent, kLongWaitMs) != WAIT_OBJECT_0) return ND_PENDING;
    return static_cast<HRESULT>(ov->Internal);
  };
  ResetEvent(c.ov.hEvent);  // Open's Register completed through it (auto-reset, never waited on)
  Owned<IND2Listener> l;
  ASSERT_HR(s.adapter->CreateListener(IID_IND2Listener, s.file, l.pv()), ND_SUCCESS);
  sockaddr_in la = V4("10.0.0.2", kPort);
  ASSERT_HR(l->Bind(Sa(la), sizeof la), ND_SUCCESS);
  ASSERT_HR(l->Listen(0), ND_SUCCESS);
  OVERLAPPED lov{}, sov{}, snov{};
  // A refused Connect first: the failure reaches the event too.
  sockaddr_in nolistener = V4("10.0.0.2", kPort + 1);
  ASSERT_HR(c.conn->Connect(c.qp, Sa(nolistener), sizeof nolistener, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  EXPECT_HR(by_event(&c.ov), ND_CONNECTION_REFUSED);
  ASSERT_HR(l->GetConnectionRequest(s.conn, &lov), ND_PENDING);
  ASSERT_HR(c.conn->Connect(c.qp, Sa(la), sizeof la, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  ASSERT_HR(from_port(&lov), ND_SUCCESS);
  ASSERT_HR(s.conn->Accept(s.qp, 1, 1, nullptr, 0, &sov), ND_PENDING);
  ASSERT_HR(by_event(&c.ov), ND_SUCCESS);
  ASSERT_HR(c.conn->CompleteConnect(&c.ov), ND_PENDING);
  ASSERT_HR(by_event(&c.ov), ND_SUCCESS);
  ASSERT_HR(from_port(&sov), ND_SUCCESS);
  ASSERT_HR(s.conn->NotifyDisconnect(&snov), ND_PENDING);
  ASSERT_HR(c.conn->Disconnect(&c.ov), ND_PENDING);
  ASSERT_HR(by_event(&c.ov), ND_SUCCESS);
  EXPECT_HR(from_port(&snov), STATUS_CONNECTION_DISCONNECTED);  // a failure status: FALSE
  // Nothing else was queued to the port (the client's requests used events only).
  DWORD bytes;
  ULONG_PTR key;
  OVERLAPPED* none = nullptr;
  EXPECT_FALSE(GetQueuedCompletionStatus(port, &bytes, &key, &none, 0));
  EXPECT_EQ(none, nullptr);
  l.reset();
  c.Close();
  s.Close();
  CloseHandle(port);
}

// GetOverlappedResult: ND_PENDING while outstanding (wait = FALSE); wait = TRUE
// blocks until done, also when another thread makes the peer's move.
TEST_P(Nd2Connect, GetOverlappedResultWaits) {
  Process p("nd2conn", thread());
  ASSERT_TRUE(p.started());
  Side c, s;
  ASSERT_NO_FATAL_FAILURE(c.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s.Open("10.0.0.2"));
  auto l = Listen(s, "10.0.0.2", kPort);
  sockaddr_in dest = V4("10.0.0.2", kPort);
  OVERLAPPED lov{};
  ASSERT_HR(l->GetConnectionRequest(s.conn, &lov), ND_PENDING);
  EXPECT_HR(l->GetOverlappedResult(&lov, FALSE), ND_PENDING);
  std::thread server([&] {
    // Blocks until the client's request arrives, accepts, waits for the RTU.
    EXPECT_HR(l->GetOverlappedResult(&lov, TRUE), ND_SUCCESS);
    EXPECT_HR(s.conn->Accept(s.qp, 1, 1, nullptr, 0, &s.ov), ND_PENDING);
    EXPECT_HR(s.conn->GetOverlappedResult(&s.ov, TRUE), ND_SUCCESS);
  });
  Pump(50);
  ASSERT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 1, 1, nullptr, 0, &c.ov), ND_PENDING);
  EXPECT_HR(c.conn->GetOverlappedResult(&c.ov, TRUE), ND_SUCCESS);
  EXPECT_HR(c.conn->CompleteConnect(&c.ov), ND_PENDING);
  EXPECT_HR(c.conn->GetOverlappedResult(&c.ov, TRUE), ND_SUCCESS);
  server.join();
  EXPECT_HR(c.conn->GetOverlappedResult(&c.ov, FALSE), ND_SUCCESS);  // done stays done
  l.reset();
  c.Close();
  s.Close();
}

// Bad arguments get a status, never a crash: NULL pointers where the pages
// require one, a sockaddr too short or of another family, objects of the other
// adapter or of the wrong kind.
TEST_P(Nd2Connect, BadArgumentsGetTheirStatus) {
  Process p("nd2conn", thread());
  ASSERT_TRUE(p.started());
  Side c, s;
  ASSERT_NO_FATAL_FAILURE(c.Open("10.0.0.1"));
  ASSERT_NO_FATAL_FAILURE(s.Open("10.0.0.2"));
  sockaddr_in a = V4("10.0.0.1", 0), dest = V4("10.0.0.2", kPort);
  sockaddr un{};
  un.sa_family = AF_UNIX;
  OVERLAPPED ov{};
  ULONG len = 64;
  char buf[64];
  // Connector.
  EXPECT_HR(c.conn->Bind(nullptr, sizeof a), ND_INVALID_PARAMETER_1);
  EXPECT_HR(c.conn->Bind(Sa(a), 4), ND_INVALID_PARAMETER_1);
  EXPECT_HR(c.conn->Bind(&un, sizeof un), ND_INVALID_PARAMETER_1);
  EXPECT_HR(c.conn->Connect(nullptr, Sa(dest), sizeof dest, 0, 0, nullptr, 0, &ov), ND_INVALID_PARAMETER_1);
  EXPECT_HR(c.conn->Connect(s.qp, Sa(dest), sizeof dest, 0, 0, nullptr, 0, &ov), ND_INVALID_PARAMETER_1);  // other adapter
  EXPECT_HR(c.conn->Connect(c.cq, Sa(dest), sizeof dest, 0, 0, nullptr, 0, &ov), ND_INVALID_PARAMETER_1);  // not a QP
  EXPECT_HR(c.conn->Connect(c.qp, nullptr, sizeof dest, 0, 0, nullptr, 0, &ov), ND_INVALID_PARAMETER_2);
  EXPECT_HR(c.conn->Connect(c.qp, Sa(dest), sizeof dest, 0, 0, nullptr, 0, nullptr), ND_INVALID_PARAMETER_8);
  EXPECT_HR(c.conn->CompleteConnect(nullptr), ND_INVALID_PARAMETER_1);
  EXPECT_HR(c.conn->Accept(nullptr, 0, 0, nullptr, 0, &ov), ND_INVALID_PARAMETER_1);
  EXPECT_HR(c.conn->Accept(c.qp, 0, 0, nullptr, 0, nullptr), ND_INVALID_PARAMETER_6);
  EXPECT_HR(c.conn->NotifyDisconnect(nullptr), ND_INVALID_PARAMETER_1);
  EXPECT_HR(c.conn->Disconnect(nullptr), ND_INVALID_PARAMETER_1);
  EXPECT_HR(c.conn->GetPrivateData(buf, nullptr), ND_INVALID_PARAMETER_2);
  EXPECT_HR(c.conn->GetLocalAddress(reinterpret_cast<sockaddr*>(buf), nullptr), ND_INVALID_PARAMETER_2);
  EXPECT_HR(c.conn->GetPeerAddress(reinterpret_cast<sockaddr*>(buf), nullptr), ND_INVALID_PARAMETER_2);
  EXPECT_HR(c.conn->GetOverlappedResult(nullptr, FALSE), ND_INVALID_PARAMETER);
  void* pv = nullptr;
  EXPECT_HR(c.conn->QueryInterface(IID_IND2Listener, &pv), E_NOINTERFACE);
  EXPECT_EQ(pv, nullptr);
  EXPECT_HR(c.conn->QueryInterface(IID_IND2Overlapped, nullptr), E_POINTER);
  ASSERT_HR(c.conn->QueryInterface(IID_IND2Overlapped, &pv), ND_SUCCESS);
  EXPECT_EQ(pv, static_cast<void*>(static_cast<IND2Overlapped*>(c.conn)));
  static_cast<IND2Overlapped*>(pv)->Release();
  // Listener.
  Owned<IND2Listener> l;
  ASSERT_HR(c.adapter->CreateListener(IID_IND2Listener, c.file, l.pv()), ND_SUCCESS);
  EXPECT_HR(l->Bind(nullptr, sizeof a), ND_INVALID_PARAMETER_1);
  EXPECT_HR(l->Bind(&un, sizeof un), ND_INVALID_PARAMETER_1);
  sockaddr_in la = V4("10.0.0.1", kPort);
  ASSERT_HR(l->Bind(Sa(la), sizeof la), ND_SUCCESS);
  ASSERT_HR(l->Listen(0), ND_SUCCESS);
  EXPECT_HR(l->GetConnectionRequest(nullptr, &ov), ND_INVALID_PARAMETER_1);
  EXPECT_HR(l->GetConnectionRequest(s.conn, &ov), ND_INVALID_PARAMETER_1);  // other adapter
  EXPECT_HR(l->GetConnectionRequest(c.qp, &ov), ND_INVALID_PARAMETER_1);    // not a connector
  EXPECT_HR(l->GetConnectionRequest(c.conn, nullptr), ND_INVALID_PARAMETER_2);
  EXPECT_HR(l->GetLocalAddress(reinterpret_cast<sockaddr*>(buf), nullptr), ND_INVALID_PARAMETER_2);
  EXPECT_HR(l->QueryInterface(IID_IND2Connector, &pv), E_NOINTERFACE);
  // The helpers and the provider.
  EXPECT_HR(NdQueryAddressList(0, nullptr, nullptr), ND_INVALID_PARAMETER_3);
  EXPECT_HR(NdResolveAddress(Sa(dest), sizeof dest, reinterpret_cast<sockaddr*>(buf), nullptr),
            ND_INVALID_PARAMETER_4);
  EXPECT_HR(NdResolveAddress(nullptr, sizeof dest, reinterpret_cast<sockaddr*>(buf), nullptr),
            ND_INVALID_PARAMETER_1);
  EXPECT_HR(NdCheckAddress(nullptr, 0), ND_INVALID_PARAMETER_1);
  EXPECT_HR(NdOpenAdapter(IID_IND2Adapter, Sa(a), sizeof a, nullptr), ND_INVALID_PARAMETER_3);
  auto get = reinterpret_cast<DllGetClassObjectFn>(dlsym(RTLD_DEFAULT, "DllGetClassObject"));
  ASSERT_NE(get, nullptr);
  EXPECT_HR(get(IID_IND2Provider, IID_IND2Provider, nullptr), E_POINTER);
  Owned<IND2Provider> prov;
  ASSERT_HR(get(IID_IND2Provider, IID_IND2Provider, prov.pv()), ND_SUCCESS);
  EXPECT_HR(prov->QueryAddressList(nullptr, nullptr), ND_INVALID_PARAMETER);
  EXPECT_HR(prov->ResolveAddress(Sa(a), sizeof a, nullptr), ND_INVALID_PARAMETER_3);
  EXPECT_HR(prov->ResolveAddress(nullptr, sizeof a, nullptr), ND_INVALID_PARAMETER_1);
  EXPECT_HR(prov->OpenAdapter(IID_IND2Adapter, 1, nullptr), ND_INVALID_PARAMETER_3);
  (void)len;
}

INSTANTIATE_TEST_SUITE_P(Progress, Nd2Connect, ::testing::Values(false, true),
                         [](const auto& i) { return i.param ? "ProgressThread" : "Inline"; });

}  // namespace
