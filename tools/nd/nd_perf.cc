// SPDX-License-Identifier: MIT
// nd-perf: perftest (linux-rdma/perftest: ib_send_bw, ib_write_bw, ib_read_bw, ib_send_lat,
// ib_write_lat, ib_read_lat) as one ND2 program, written for this project from perftest's
// documented options, its output and its rdma_cm (-R) exchange as seen on the wire (no code
// copied). Either side can be perftest 6.06 (Debian 12's package) run with -R:
//
//   nd-perf TEST [options]            server        TEST: send_bw write_bw read_bw
//   nd-perf TEST [options] SERVER     client              send_lat write_lat read_lat
//
// The exchange with -R (as perftest 6.06 does it; docs/tools.md, nd-perf):
// two RC connections to the same rdma_cm port (-p, 18515). A, the "communication" connection,
// carries small Sends; B carries the test. On A, the client sends each message first and the
// server answers with its own (each side posts its receives ahead):
//   version string (16 B, "6.06"), page size (4 B, big-endian), cache line (4 B), the path MTU
//   as a decimal string (2 B), an all-zero 56-byte pingpong_dest; then B is connected; another
//   zero pingpong_dest; then the real pingpong_dest {lid, out_reads, qpn, psn, rkey, vaddr, gid,
//   srqn, gid_index} (56 B, big-endian) three times (bw tests) or four times (send_bw, *_lat);
//   the test on B; then: write_bw/read_bw a pingpong_dest (the client is done), the client's
//   report (size, iterations as u64, BW peak, BW average, message rate as big-endian doubles;
//   the server answers with its own) and a last pingpong_dest; send_bw, send_lat, read_lat a
//   last pingpong_dest; write_lat nothing. Both sides disconnect B and A.
//
// ND2 only: <ndsupport.h> (through nd_common.h) and the C++ standard library; the adapters are
// those of ND2_CONFIG, or of a temporary configuration the port options write (--ip ...), or
// two adapters on an in-process net_ring pair with the server on its own thread (--pair).
//
// The files (one translation unit: tools/nd/build-nd-program compiles this file alone):
//   nd_perf_options.h  the six tests, perftest's constants, the options of a side
//   nd_perf_nd2.h      failure reporting, waits with a limit, the ND2 objects of a side
//   nd_perf_comm.h     perftest's pingpong_dest and connection A's exchange (Comm)
//   nd_perf_report.h   perftest's tables and the bandwidth figures
//   nd_perf_side.h     one side of a test (Side)
//   nd_perf.cc         the command line, the adapters (port options, --pair) and main
#include <getopt.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "nd_addr.h"
#include "nd_common.h"
#include "nd_perf_nd2.h"
#include "nd_perf_options.h"
#include "nd_perf_side.h"
#include "nd_port_options.h"

namespace {

using namespace ndperf;

// ---- Command line --------------------------------------------------------------------------------
void Usage(FILE* f) {
  fprintf(f,
          "Usage: nd-perf TEST [options]            start a server and wait for a connection\n"
          "       nd-perf TEST [options] <server>   connect to the server at <server>\n"
          "TEST: send_bw write_bw read_bw send_lat write_lat read_lat (perftest's ib_<TEST>)\n"
          "perftest's options:\n"
          "  -s, --size=<bytes>       message size (default 65536 bw, 2 lat)\n"
          "  -n, --iters=<n>          iterations (default 5000 bw, 1000 lat)\n"
          "  -a, --all                sizes 2 .. 2^23\n"
          "  -D, --duration=<s>       bw tests: run for <s> seconds instead of -n\n"
          "  -p, --port=<port>        rdma_cm port of the server (default 18515)\n"
          "  -R, --rdma_cm            connect with rdma_cm (always: ND2 connects through its CM)\n"
          "  -m, --mtu=<mtu>          path MTU 256..4096 (with the port options: the adapter's MTU)\n"
          "  -t, --tx-depth=<n>       requests in flight (default 128 bw, 1 lat)\n"
          "  -r, --rx-depth=<n>       receives posted (default 512)\n"
          "  -o, --outs=<n>           outstanding reads (capped at the adapter's read limits)\n"
          "  -Q, --cq-mod=<n>         a completion every <n> requests (default 100)\n"
          "  -I, --inline_size=<n>    inline sends and writes up to <n> bytes\n"
          "  -e, --events             wait for completions (Notify) instead of polling\n"
          "  -N, --noPeak             no BW peak\n"
          "      --report_gbits       BW in Gb/s\n"
          "  -F, --CPU-freq  -d, --ib-dev=<dev>  -i, --ib-port=<port>  -x, --gid-index=<i>\n"
          "  -c, --connection=RC  -q, --qp=1  -u, --qp-timeout  -S, --sl  -T, --tos\n"
          "                           accepted; ND2 has one kind of adapter and connection\n"
          "      --source_ip=<ip>     the server's bind address / the client's local address\n"
          "  -h, --help  -V, --version\n"
          "The adapters are those of ND2_CONFIG, unless these port options make one:\n"
          "      --ip=<addr/len>      the adapter's address (repeatable: IPv4 and IPv6)\n"
          "      --profile=<P>        a drivers-cfg profile, a path or a name (default net_tap.ini)\n"
          "      --iface=<name>       the driver's interface (tap name, veth, ...)\n"
          "      --set=<k=v>          a profile key (section.key=value) or an ND2 adapter key\n"
          "      --capture=<file>     a pcap of every frame\n"
          "      --pair               server and client in this process: two adapters on an\n"
          "                           in-process net_ring pair (10.0.0.1 serves, 10.0.0.2 runs\n"
          "                           the test and prints); no peer, no root; --set keys\n"
          "                           apply to both (e.g. --set progress=thread)\n"
          "      --timeout=<s>        give up on any wait for the peer after <s> seconds (default 60;\n"
          "                           without it, a server waits for its first client forever)\n");
}

enum LongOpt : int {
  kOptGbits = 0x2000,
  kOptSourceIp,
  kOptIp,
  kOptProfile,
  kOptIface,
  kOptSet,
  kOptCapture,
  kOptPair,
  kOptTimeout,
  kOptPairProfile,
};

uint64_t Num(const char* opt, const char* s, uint64_t lo, uint64_t hi) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = strtoull(s, &end, 0);
  if (!*s || errno || *end || s[0] == '-' || v < lo || v > hi) {
    fprintf(stderr, "nd-perf: bad value '%s' for %s (expected %llu..%llu)\n", s, opt,
            static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi));
    exit(2);
  }
  return v;
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    Usage(argc < 2 ? stderr : stdout);
    exit(argc < 2 ? 2 : 0);
  }
  if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
    printf("Version: %s (nd-perf, ND2)\n", kVersion);
    exit(0);
  }
  for (const TestInfo& t : kTests)
    if (!strcmp(argv[1], t.name) || (!strncmp(argv[1], "ib_", 3) && !strcmp(argv[1] + 3, t.name))) o.test = &t;
  if (!o.test) {
    fprintf(stderr, "nd-perf: unknown test '%s' (send_bw write_bw read_bw send_lat write_lat read_lat)\n", argv[1]);
    exit(2);
  }
  const option longopts[] = {
      {"size", required_argument, nullptr, 's'},      {"iters", required_argument, nullptr, 'n'},
      {"all", no_argument, nullptr, 'a'},             {"duration", required_argument, nullptr, 'D'},
      {"port", required_argument, nullptr, 'p'},      {"rdma_cm", no_argument, nullptr, 'R'},
      {"mtu", required_argument, nullptr, 'm'},       {"tx-depth", required_argument, nullptr, 't'},
      {"rx-depth", required_argument, nullptr, 'r'},  {"outs", required_argument, nullptr, 'o'},
      {"cq-mod", required_argument, nullptr, 'Q'},    {"inline_size", required_argument, nullptr, 'I'},
      {"events", no_argument, nullptr, 'e'},          {"noPeak", no_argument, nullptr, 'N'},
      {"CPU-freq", no_argument, nullptr, 'F'},        {"ib-dev", required_argument, nullptr, 'd'},
      {"ib-port", required_argument, nullptr, 'i'},   {"gid-index", required_argument, nullptr, 'x'},
      {"connection", required_argument, nullptr, 'c'}, {"qp", required_argument, nullptr, 'q'},
      {"qp-timeout", required_argument, nullptr, 'u'}, {"sl", required_argument, nullptr, 'S'},
      {"tos", required_argument, nullptr, 'T'},       {"help", no_argument, nullptr, 'h'},
      {"version", no_argument, nullptr, 'V'},         {"bidirectional", no_argument, nullptr, 'b'},
      {"report_gbits", no_argument, nullptr, kOptGbits}, {"source_ip", required_argument, nullptr, kOptSourceIp},
      {"ip", required_argument, nullptr, kOptIp},     {"profile", required_argument, nullptr, kOptProfile},
      {"iface", required_argument, nullptr, kOptIface}, {"set", required_argument, nullptr, kOptSet},
      {"capture", required_argument, nullptr, kOptCapture}, {"pair", no_argument, nullptr, kOptPair},
      {"pair-profile", required_argument, nullptr, kOptPairProfile},
      {"timeout", required_argument, nullptr, kOptTimeout}, {nullptr, 0, nullptr, 0}};
  optind = 2;
  int c;
  while ((c = getopt_long(argc, argv, "s:n:aD:p:Rm:t:r:o:Q:I:eNFd:i:x:c:q:u:S:T:hVb", longopts, nullptr)) != -1) {
    switch (c) {
      case 's': o.size = Num("-s", optarg, 1, kMaxSize * 16); break;
      case 'n': o.iters = Num("-n", optarg, 5, 100000000); break;
      case 'a': o.all = true; break;
      case 'D': o.duration = static_cast<uint32_t>(Num("-D", optarg, 1, 86400)); break;
      case 'p': o.port = static_cast<uint16_t>(Num("-p", optarg, 1, 65535)); break;
      case 'R': break;
      case 'm': {
        o.mtu = static_cast<uint32_t>(Num("-m", optarg, 256, 4096));
        if (o.mtu & (o.mtu - 1)) {
          fprintf(stderr, "nd-perf: -m must be 256, 512, 1024, 2048 or 4096\n");
          exit(2);
        }
        break;
      }
      case 't': o.tx_depth = static_cast<uint32_t>(Num("-t", optarg, 1, 16384)); break;
      case 'r': o.rx_depth = static_cast<uint32_t>(Num("-r", optarg, 1, 16384)); break;
      case 'o': o.out_reads = static_cast<uint32_t>(Num("-o", optarg, 1, 65536)); break;
      case 'Q': o.cq_mod = static_cast<uint32_t>(Num("-Q", optarg, 1, 1024)); break;
      case 'I': o.inline_size = static_cast<uint32_t>(Num("-I", optarg, 0, 65536)); break;
      case 'e': o.events = true; break;
      case 'N': o.no_peak = true; break;
      case 'F': break;
      case 'd': o.dev = optarg; break;
      case 'i': case 'x': case 'u': case 'S': case 'T': break;
      case 'q':
        if (Num("-q", optarg, 1, 1) != 1) exit(2);
        break;
      case 'c':
        if (strcmp(optarg, "RC") != 0) {
          fprintf(stderr, "nd-perf: -c %s: ND2 connections are RC\n", optarg);
          exit(2);
        }
        break;
      case 'b':
        fprintf(stderr, "nd-perf: -b (bidirectional) is not supported\n");
        exit(2);
      case 'h': Usage(stdout); exit(0);
      case 'V': printf("Version: %s (nd-perf, ND2)\n", kVersion); exit(0);
      case kOptGbits: o.gbits = true; break;
      case kOptSourceIp: o.source_ip = optarg; break;
      case kOptIp: o.adapter.ips.push_back(optarg); o.port_options = true; o.port_only_sets = false; break;
      case kOptProfile: o.adapter.profile = optarg; o.port_options = true; o.port_only_sets = false; break;
      case kOptIface: o.adapter.iface = optarg; o.port_options = true; o.port_only_sets = false; break;
      case kOptSet: o.adapter.sets.push_back(optarg); o.port_options = true; break;
      case kOptCapture: o.adapter.capture = optarg; o.port_options = true; o.port_only_sets = false; break;
      case kOptPair: o.pair = true; break;
      case kOptPairProfile: o.pair_profile = optarg; break;
      case kOptTimeout: o.timeout_s = static_cast<uint32_t>(Num("--timeout", optarg, 1, 86400)); break;
      default: Usage(stderr); exit(2);
    }
  }
  if (optind < argc) {
    o.server = false;
    o.server_name = argv[optind++];
  }
  if (optind < argc) {
    fprintf(stderr, "nd-perf: unexpected argument '%s'\n", argv[optind]);
    exit(2);
  }
  if (!o.size) o.size = o.bw() ? 65536 : 2;
  if (!o.iters) o.iters = o.bw() ? 5000 : 1000;
  if (o.duration && o.lat()) {
    fprintf(stderr, "nd-perf: -D is supported by the bandwidth tests\n");
    exit(2);
  }
  if (o.duration && o.all) {
    fprintf(stderr, "nd-perf: -D and -a together are not supported\n");
    exit(2);
  }
  if (o.pair && (!o.server || !o.port_only_sets)) {
    fprintf(stderr, "nd-perf: --pair takes no server address and no port options but --set\n");
    exit(2);
  }
  if (o.pair) o.port_options = false;  // its --set keys go to both of its adapters
  // A net_af_xdp adapter takes its interface's addresses (identity = kernel).
  if (o.port_options && o.adapter.ips.empty() && o.adapter.profile.find("af_xdp") == std::string::npos) {
    fprintf(stderr, "nd-perf: the port options need --ip addr/len (the adapter's address)\n");
    exit(2);
  }
  if (o.mtu && o.port_options) o.adapter.sets.push_back("mtu=" + std::to_string(o.mtu + 80));
  return o;
}

Addr ParseOrDie(const std::string& s, uint16_t port) {
  Addr a;
  if (!Addr::Parse(s, port, &a)) {
    fprintf(stderr, "nd-perf: bad address '%s' (an IPv4 or IPv6 address)\n", s.c_str());
    exit(2);
  }
  return a;
}

int RunOne(const Options& o) {
  if (o.server) {
    Addr bind;
    if (!o.source_ip.empty()) {
      bind = ParseOrDie(o.source_ip, o.port);
    } else if (!ndtool::FirstAddress(&bind)) {
      Die("the ND2 configuration has no adapter address");
    }
    bind.set_port(o.port);
    Addr local = bind;
    local.set_port(0);
    Side s(o, false);
    s.Run(local, bind, nullptr);
    return 0;
  }
  const Addr server = ParseOrDie(o.server_name, o.port);
  Addr local;
  if (!o.source_ip.empty()) {
    local = ParseOrDie(o.source_ip, 0);
  } else {
    SIZE_T ll = sizeof local.ss;
    Check(NdResolveAddress(server.sa(), server.len, local.sa(), &ll), "NdResolveAddress (no local address for the server's)");
    local.len = static_cast<ULONG>(ll);
    local.set_port(0);
  }
  Side s(o, true);
  s.Run(local, server, nullptr);
  return 0;
}

// --pair: the server on a thread (quiet) on 10.0.0.1, the client here on 10.0.0.2.
int RunPair(const Options& o) {
  Options so = o;
  so.quiet = true;
  Options co = o;
  co.server = false;
  Addr bind = ParseOrDie("10.0.0.1", o.port), local_s = ParseOrDie("10.0.0.1", 0), local_c = ParseOrDie("10.0.0.2", 0);
  std::atomic<bool> listening{false};
  std::thread t([&] {
    g_role = "server: ";
    Side s(so, false);
    s.Run(local_s, bind, &listening);
  });
  while (!listening.load()) ndtool::SleepMs(1);
  {
    Side c(co, true);
    c.Run(local_c, bind, nullptr);
  }
  t.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = ParseArgs(argc, argv);
  ndtool::g_prog = "nd-perf";
  // A vhost-user or memif peer that exits first closes its socket under our port: a write to
  // it must fail (EPIPE), not kill us after the test.
  signal(SIGPIPE, SIG_IGN);
  std::string cfg;
  if (o.port_options || o.pair) {
    std::vector<ndtool::PortOptions> adapters;
    if (o.pair) {
      // Two adapters on one in-process net_ring pair (a name of our own per process).
      const std::string ring = "ndperf" + std::to_string(getpid() % 100000);
      ndtool::PortOptions a, b;
      a.profile = b.profile = o.pair_profile;
      a.ips = {"10.0.0.1/24", "fd00::1/64"};
      b.ips = {"10.0.0.2/24", "fd00::2/64"};
      a.sets = {"port.ring=" + ring, "port.ring_side=a"};
      b.sets = {"port.ring=" + ring, "port.ring_side=b", "port.mac=02:00:00:00:00:02"};
      if (o.mtu) {
        a.sets.push_back("mtu=" + std::to_string(o.mtu + 80));
        b.sets.push_back("mtu=" + std::to_string(o.mtu + 80));
      }
      for (const std::string& kv : o.adapter.sets) {  // --set: both adapters
        a.sets.push_back(kv);
        b.sets.push_back(kv);
      }
      adapters = {a, b};
    } else {
      adapters = {o.adapter};
    }
    std::string err;
    if (!ndtool::WriteNd2Config(adapters, "nd-perf", &cfg, &err)) {
      fprintf(stderr, "nd-perf: %s\n", err.c_str());
      return 2;
    }
    setenv("ND2_CONFIG", cfg.c_str(), 1);
  }
  const HRESULT h = NdStartup();
  if (!cfg.empty()) unlink(cfg.c_str());
  if (FAILED(h)) {
    fprintf(stderr, "nd-perf: NdStartup failed with %08x (%s): the adapters of ND2_CONFIG could not be brought up\n",
            static_cast<unsigned>(h), ndtool::StatusName(h));
    return 1;
  }
  const int rc = o.pair ? RunPair(o) : RunOne(o);
  fflush(stdout);
  const HRESULT ch = NdCleanup();
  if (FAILED(ch)) {
    fprintf(stderr, "nd-perf: NdCleanup failed with %08x (%s): an ND2 object was not released\n",
            static_cast<unsigned>(ch), ndtool::StatusName(ch));
    return 1;
  }
  return rc;
}
