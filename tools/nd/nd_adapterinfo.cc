// nd-adapterinfo: Microsoft's ndadapterinfo on Linux (written here from its command line and
// output; see README.md here). Checks that <IPv4 Address> is an ND address (NdCheckAddress),
// opens its adapter and prints IND2Adapter::Query's ND2_ADAPTER_INFO, one field a line; then
// checks that every address NdQueryAddressList returns is an ND address too (what the
// original's description promises) and lists them.
//
//   nd-adapterinfo [-l <logFile>] <IPv4 Address>
#include "nd_common.h"

using namespace ndtool;

namespace {

void ShowAdapterInfoUsage() {
  printf("nd-adapterinfo [options] <IPv4 Address>\n"
         "Options:\n"
         "\t-l,--logFile <logFile>   Log output to a given file\n"
         "\t-h,--help                Show this message\n"
         "The adapters are those of the ND2 configuration file (ND2_CONFIG).\n");
}

std::string FlagsString(ULONG flags) {
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
    if (flags & f.bit) s += std::string("\n\t\t") + f.name;
  }
  if (flags & ~known) {
    char other[32];
    snprintf(other, sizeof other, "\n\t\t%08x", flags & ~known);
    s += other;
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

}  // namespace

int main(int argc, char** argv) {
  g_prog = "nd-adapterinfo";
  if (argc < 2) {
    ShowAdapterInfoUsage();
    return 2;
  }
  for (int i = 1; i < argc - 1; i++) {
    const char* a = argv[i];
    if (ArgIs(a, "-l", "--logFile")) {
      if (i + 1 >= argc - 1) {
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
    } else {
      printf("Unknown option '%s'.\n\n", a);
      ShowAdapterInfoUsage();
      return 2;
    }
  }
  if (ArgIs(argv[argc - 1], "-h", "--help")) {
    ShowAdapterInfoUsage();
    return 0;
  }
  sockaddr_in v4{};
  if (!ParseAddress(argv[argc - 1], &v4) || v4.sin_addr.s_addr == 0) {
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
  ND2_ADAPTER_INFO info{};
  info.InfoVersion = ND_VERSION_2;
  ULONG len = sizeof info;
  ND_CHECK(adapter->Query(&info, &len), "IND2Adapter::Query");

  printf("InfoVersion: %u\n", info.InfoVersion);
  printf("VendorId: %u\n", info.VendorId);
  printf("DeviceId: %u\n", info.DeviceId);
  printf("AdapterId: 0x%08llx\n", static_cast<unsigned long long>(info.AdapterId));
  printf("MaxRegistrationSize: %zu\n", info.MaxRegistrationSize);
  printf("MaxWindowSize: %zu\n", info.MaxWindowSize);
  printf("MaxInitiatorSge: %u\n", info.MaxInitiatorSge);
  printf("MaxReceiveSge: %u\n", info.MaxReceiveSge);
  printf("MaxReadSge: %u\n", info.MaxReadSge);
  printf("MaxTransferLength: %u\n", info.MaxTransferLength);
  printf("MaxInlineDataSize: %u\n", info.MaxInlineDataSize);
  printf("MaxInboundReadLimit: %u\n", info.MaxInboundReadLimit);
  printf("MaxOutboundReadLimit: %u\n", info.MaxOutboundReadLimit);
  printf("MaxReceiveQueueDepth: %u\n", info.MaxReceiveQueueDepth);
  printf("MaxInitiatorQueueDepth: %u\n", info.MaxInitiatorQueueDepth);
  printf("MaxSharedReceiveQueueDepth: %u\n", info.MaxSharedReceiveQueueDepth);
  printf("MaxCompletionQueueDepth: %u\n", info.MaxCompletionQueueDepth);
  printf("InlineRequestThreshold: %u\n", info.InlineRequestThreshold);
  printf("LargeRequestThreshold: %u\n", info.LargeRequestThreshold);
  printf("MaxCallerData: %u\n", info.MaxCallerData);
  printf("MaxCalleeData: %u\n", info.MaxCalleeData);
  printf("AdapterFlags: %s\n", FlagsString(info.AdapterFlags).c_str());
  adapter->Release();

  // Every address of the list must be an ND address; the input address must be among them.
  SIZE_T cb = 0;
  hr = NdQueryAddressList(0, nullptr, &cb);
  if (hr != ND_BUFFER_OVERFLOW || cb == 0) FailHr(__LINE__, hr, "NdQueryAddressList (size)");
  std::vector<char> storage(cb);
  auto* list = reinterpret_cast<SOCKET_ADDRESS_LIST*>(storage.data());
  ND_CHECK(NdQueryAddressList(0, list, &cb), "NdQueryAddressList");
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
