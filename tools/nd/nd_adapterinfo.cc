// SPDX-License-Identifier: MIT
// nd-adapterinfo: Microsoft's ndadapterinfo on Linux (written here from its command line and
// output; see README.md here). Checks that <IPv4 Address> is an ND address (NdCheckAddress),
// opens its adapter and prints IND2Adapter::Query's ND2_ADAPTER_INFO, one field a line; then
// checks that every address NdQueryAddressList returns is an ND address too (what the
// original's description promises) and lists them.
//
// With no address (ours, as `ibv_devinfo` lists devices): every adapter of the configuration,
// found through NdQueryAddressList (each address opened with NdOpenAdapter, adapters told apart
// by their AdapterId), each with its port (our IND2AdapterDiagnostics::QueryPort: driver,
// kernel interface, ethdev name, identity, AF_XDP mode, queues, MTU, MAC, frame counters), its
// addresses (IND2Adapter::QueryAddressList) and its ND2 limits.
//
//   nd-adapterinfo [-l <logFile>] [<IPv4 Address>]
#include "nd_common.h"

#include <algorithm>

using namespace ndtool;

namespace {

void ShowAdapterInfoUsage() {
  printf("nd-adapterinfo [options] [<IPv4 Address>]\n"
         "Options:\n"
         "\t-l,--logFile <logFile>   Log output to a given file\n"
         "\t-h,--help                Show this message\n"
         "<IPv4 Address>: the adapter of this address (its ND2 limits and the address list);\n"
         "without it, every adapter with its port, its addresses and its limits.\n"
         "The adapters are those of the ND2 configuration file (ND2_CONFIG).\n");
}

std::string FlagsString(ULONG flags, const char* indent) {
  static const struct {
    ULONG bit;
    const char* name;
  } kFlags[] = {
      {ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED, "ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED"},
      {ND_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED, "ND_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED"},
      {ND_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED, "ND_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED"},
      {ND_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED, "ND_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED"},
      {ND_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED, "ND_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED"},
  };
  std::string s;
  ULONG known = 0;
  for (const auto& f : kFlags) {
    known |= f.bit;
    if (flags & f.bit) s += std::string("\n") + indent + "\t\t" + f.name;
  }
  if (flags & ~known) {
    char other[32];
    snprintf(other, sizeof other, "\t\t%08x", flags & ~known);
    s += std::string("\n") + indent + other;
  }
  return s;
}

std::string SockaddrString(const sockaddr* sa) {
  char ip[INET6_ADDRSTRLEN] = "?";
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, ip, sizeof ip);
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, ip, sizeof ip);
  return ip;
}

// IND2Adapter::Query's ND2_ADAPTER_INFO, one field a line, each line after `indent`.
void PrintLimits(const ND2_ADAPTER_INFO& info, const char* in) {
  printf("%sInfoVersion: %u\n", in, info.InfoVersion);
  printf("%sVendorId: %u\n", in, info.VendorId);
  printf("%sDeviceId: %u\n", in, info.DeviceId);
  printf("%sAdapterId: 0x%08llx\n", in, static_cast<unsigned long long>(info.AdapterId));
  printf("%sMaxRegistrationSize: %zu\n", in, info.MaxRegistrationSize);
  printf("%sMaxWindowSize: %zu\n", in, info.MaxWindowSize);
  printf("%sMaxInitiatorSge: %u\n", in, info.MaxInitiatorSge);
  printf("%sMaxReceiveSge: %u\n", in, info.MaxReceiveSge);
  printf("%sMaxReadSge: %u\n", in, info.MaxReadSge);
  printf("%sMaxTransferLength: %u\n", in, info.MaxTransferLength);
  printf("%sMaxInlineDataSize: %u\n", in, info.MaxInlineDataSize);
  printf("%sMaxInboundReadLimit: %u\n", in, info.MaxInboundReadLimit);
  printf("%sMaxOutboundReadLimit: %u\n", in, info.MaxOutboundReadLimit);
  printf("%sMaxReceiveQueueDepth: %u\n", in, info.MaxReceiveQueueDepth);
  printf("%sMaxInitiatorQueueDepth: %u\n", in, info.MaxInitiatorQueueDepth);
  printf("%sMaxSharedReceiveQueueDepth: %u\n", in, info.MaxSharedReceiveQueueDepth);
  printf("%sMaxCompletionQueueDepth: %u\n", in, info.MaxCompletionQueueDepth);
  printf("%sInlineRequestThreshold: %u\n", in, info.InlineRequestThreshold);
  printf("%sLargeRequestThreshold: %u\n", in, info.LargeRequestThreshold);
  printf("%sMaxCallerData: %u\n", in, info.MaxCallerData);
  printf("%sMaxCalleeData: %u\n", in, info.MaxCalleeData);
  printf("%sAdapterFlags: %s\n", in, FlagsString(info.AdapterFlags, in).c_str());
}

ND2_ADAPTER_INFO QueryInfo(IND2Adapter* adapter) {
  ND2_ADAPTER_INFO info{};
  info.InfoVersion = ND_VERSION_2;
  ULONG len = sizeof info;
  ND_CHECK(adapter->Query(&info, &len), "IND2Adapter::Query");
  return info;
}

// NdQueryAddressList's list (its storage in *storage).
SOCKET_ADDRESS_LIST* QueryAllAddresses(std::vector<char>* storage) {
  SIZE_T cb = 0;
  const HRESULT hr = NdQueryAddressList(0, nullptr, &cb);
  if (hr != ND_BUFFER_OVERFLOW || cb == 0) FailHr(__LINE__, hr, "NdQueryAddressList (size)");
  storage->assign(cb, 0);
  auto* list = reinterpret_cast<SOCKET_ADDRESS_LIST*>(storage->data());
  ND_CHECK(NdQueryAddressList(0, list, &cb), "NdQueryAddressList");
  return list;
}

// An address list of one adapter (IND2Adapter::QueryAddressList), its storage in *storage.
SOCKET_ADDRESS_LIST* QueryAdapterAddresses(IND2Adapter* adapter, std::vector<char>* storage) {
  ULONG cb = 0;
  HRESULT hr = adapter->QueryAddressList(nullptr, &cb);
  if (hr != ND_BUFFER_OVERFLOW || cb == 0) FailHr(__LINE__, hr, "IND2Adapter::QueryAddressList (size)");
  storage->assign(cb, 0);
  auto* list = reinterpret_cast<SOCKET_ADDRESS_LIST*>(storage->data());
  ND_CHECK(adapter->QueryAddressList(list, &cb), "IND2Adapter::QueryAddressList");
  return list;
}

const char* IdentityString(ULONG identity) {
  switch (identity) {
    case ND2_PORT_IDENTITY_OWN: return "own (the profile's addresses, our ARP/ND)";
    case ND2_PORT_IDENTITY_KERNEL: return "kernel (the interface's addresses, routes and neighbours)";
    default: return "unknown";
  }
}

const char* XdpModeString(ULONG mode) {
  switch (mode) {
    case ND2_PORT_XDP_NONE: return "none (not AF_XDP)";
    case ND2_PORT_XDP_COPY: return "copy";
    case ND2_PORT_XDP_ZERO_COPY: return "zero-copy";
    default: return "unknown";
  }
}

// The port beneath an adapter, through our extension; false if the provider has none.
bool QueryPort(IND2Adapter* adapter, ND2_PORT_DIAGNOSTICS* port) {
  IND2AdapterDiagnostics* diag = nullptr;
  if (adapter->QueryInterface(IID_IND2AdapterDiagnostics, reinterpret_cast<void**>(&diag)) != S_OK || !diag)
    return false;
  *port = {};
  port->InfoVersion = ND2_DIAGNOSTICS_VERSION_1;
  ULONG cb = sizeof *port;
  const HRESULT hr = diag->QueryPort(port, &cb);
  diag->Release();
  if (FAILED(hr)) FailHr(__LINE__, hr, "IND2AdapterDiagnostics::QueryPort");
  return true;
}

// With no address: every adapter, as `ibv_devinfo` lists devices.
int ListAdapters() {
  std::vector<char> storage;
  const SOCKET_ADDRESS_LIST* all = QueryAllAddresses(&storage);
  if (all->iAddressCount <= 0) ND_FAIL("NdQueryAddressList returned no address");
  std::vector<UINT64> seen;
  for (INT i = 0; i < all->iAddressCount; i++) {
    const SOCKET_ADDRESS& a = all->Address[i];
    IND2Adapter* adapter = nullptr;
    ND_CHECK(NdOpenAdapter(IID_IND2Adapter, a.lpSockaddr, static_cast<SIZE_T>(a.iSockaddrLength),
                           reinterpret_cast<void**>(&adapter)),
             "NdOpenAdapter for an address of NdQueryAddressList");
    const ND2_ADAPTER_INFO info = QueryInfo(adapter);
    if (std::find(seen.begin(), seen.end(), info.AdapterId) != seen.end()) {
      adapter->Release();  // another address of an adapter listed already
      continue;
    }
    seen.push_back(info.AdapterId);
    ND2_PORT_DIAGNOSTICS port{};
    const bool have_port = QueryPort(adapter, &port);
    printf("%sadapter: %zu\n", seen.size() > 1 ? "\n" : "", seen.size() - 1);
    if (have_port) {
      printf("\tdriver: %s\n", port.Driver);
      printf("\tinterface: %s\n", port.Interface[0] ? port.Interface : "-");
      printf("\tname: %s\n", port.Name);
      printf("\tidentity: %s\n", IdentityString(port.Identity));
      printf("\txdp_mode: %s\n", XdpModeString(port.XdpMode));
      printf("\trx_queues: %u\n", port.RxQueues);
      printf("\ttx_queues: %u\n", port.TxQueues);
      printf("\tmtu: %u\n", port.Mtu);
      if (port.InterfaceMtu) printf("\tinterface_mtu: %u\n", port.InterfaceMtu);
      else printf("\tinterface_mtu: -\n");
      printf("\tmac: %02x:%02x:%02x:%02x:%02x:%02x\n", port.Mac[0], port.Mac[1], port.Mac[2], port.Mac[3],
             port.Mac[4], port.Mac[5]);
      printf("\tframes: rx %llu, tx %llu, rx drops %llu, tx drops %llu\n",
             static_cast<unsigned long long>(port.RxPackets), static_cast<unsigned long long>(port.TxPackets),
             static_cast<unsigned long long>(port.RxDrops), static_cast<unsigned long long>(port.TxDrops));
    } else {
      printf("\tdriver: ? (the provider has no IND2AdapterDiagnostics)\n");
    }
    std::vector<char> own;
    const SOCKET_ADDRESS_LIST* addrs = QueryAdapterAddresses(adapter, &own);
    for (INT k = 0; k < addrs->iAddressCount; k++)
      printf("\taddress: %s\n", SockaddrString(addrs->Address[k].lpSockaddr).c_str());
    PrintLimits(info, "\t");
    adapter->Release();
  }
  printf("\n%zu adapter%s\n", seen.size(), seen.size() == 1 ? "" : "s");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  g_prog = "nd-adapterinfo";
  const char* address = nullptr;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (ArgIs(a, "-l", "--logFile")) {
      if (i + 1 >= argc) {
        printf("Missing value for %s.\n\n", a);
        ShowAdapterInfoUsage();
        return 2;
      }
      const char* f = argv[++i];
      if (!freopen(f, "w", stdout) || !freopen(f, "a", stderr)) {
        fprintf(stderr, "nd-adapterinfo: cannot open log file %s: %s\n", f, strerror(errno));
        return 1;
      }
    } else if (ArgIs(a, "-h", "--help")) {
      ShowAdapterInfoUsage();
      return 0;
    } else if (i == argc - 1 && a[0] != '-') {
      address = a;  // the address is the last argument
    } else {
      printf("Unknown option '%s'.\n\n", a);
      ShowAdapterInfoUsage();
      return 2;
    }
  }
  if (!address) {
    ND_CHECK(NdStartup(), "NdStartup");
    const int rc = ListAdapters();
    ND_CHECK(NdCleanup(), "NdCleanup");
    return rc;
  }
  sockaddr_in v4{};
  if (!ParseAddress(address, &v4) || v4.sin_addr.s_addr == 0) {
    printf("Bad address.\n");
    ShowAdapterInfoUsage();
    return 2;
  }

  ND_CHECK(NdStartup(), "NdStartup");
  HRESULT hr = NdCheckAddress(reinterpret_cast<const sockaddr*>(&v4), sizeof v4);
  if (FAILED(hr)) FailHr(__LINE__, hr, "NdCheckAddress for the input address");

  IND2Adapter* adapter = nullptr;
  ND_CHECK(NdOpenAdapter(IID_IND2Adapter, reinterpret_cast<const sockaddr*>(&v4), sizeof v4,
                         reinterpret_cast<void**>(&adapter)),
           "NdOpenAdapter");
  PrintLimits(QueryInfo(adapter), "");
  adapter->Release();

  // Every address of the list must be an ND address; the input address must be among them.
  std::vector<char> storage;
  const SOCKET_ADDRESS_LIST* list = QueryAllAddresses(&storage);
  if (list->iAddressCount <= 0) ND_FAIL("NdQueryAddressList returned no address");
  bool found = false;
  for (INT i = 0; i < list->iAddressCount; i++) {
    const SOCKET_ADDRESS& a = list->Address[i];
    hr = NdCheckAddress(a.lpSockaddr, static_cast<SIZE_T>(a.iSockaddrLength));
    printf("Address %d: %s%s\n", i, SockaddrString(a.lpSockaddr).c_str(), FAILED(hr) ? " (not an ND address)" : "");
    if (FAILED(hr)) FailHr(__LINE__, hr, "NdCheckAddress for an address of NdQueryAddressList");
    if (a.lpSockaddr->sa_family == AF_INET &&
        reinterpret_cast<const sockaddr_in*>(a.lpSockaddr)->sin_addr.s_addr == v4.sin_addr.s_addr)
      found = true;
  }
  if (!found) ND_FAIL("the input address is not in NdQueryAddressList's list");

  ND_CHECK(NdCleanup(), "NdCleanup");
  return 0;
}
