// SPDX-License-Identifier: MIT
// Which adapters an ND2 process has: an INI file (read with rte_cfgfile)
// named by the environment variable ND2_CONFIG, else kDefaultConfigPath
// (/etc/soft-rnic/nd2.ini).
//
//   ; one section per adapter; its name starts with "adapter"
//   [adapter0]
//   profile  = net_tap.ini           ; a drivers-cfg profile: a path, relative to
//                                    ; this file's folder, or a name in drivers-cfg/
//   iface    = dtap0                 ; the driver's interface (tap name, veth, ...)
//   ip       = 198.18.0.10/24        ; the adapter's IPv4 address (ND address) and
//   ip6      = fd00::10/64           ;   IPv6 address; at least one of them (with
//                                    ;   its prefix: the on-link subnet)
//   mtu      = 1500                  ; port.mtu (IP MTU, 576..9600)
//   capture  = /tmp/adapter0.pcap    ; every frame sent and received
//   progress = thread                ; thread (default): a progress thread of its own runs
//                                    ; the protocol (ACKs, timers, ARP/NDP, CM) whatever the
//                                    ; application does — sleeps, spins on memory, exits;
//                                    ; it naps when idle (nd2_idle: a few % of a core).
//                                    ; inline: only the application's threads drive the
//                                    ; engine, in GetResults and in every wait (no thread;
//                                    ; for benchmarks and single-threaded tests): while the
//                                    ; application makes no ND2 call nothing is ACKed or
//                                    ; answered — a peer polling memory for our Write never
//                                    ; sees its ACK, our address answers no ARP, CM
//                                    ; retransmissions go unanswered (nd2api/README.md)
//   ; connection manager and transport (defaults shown):
//   cm_timeout      = 18             ; CM response timeout, 4.096 us * 2^n (8..31): 1.07 s
//   cm_retries      = 15             ; CM retransmissions before a timeout (0..15)
//   cm_mra_timeout  = 24             ; the wait our MRA asks of a peer while the application
//                                    ; has not called Accept / CompleteConnect (0..31): 69 s
//   ephemeral_ports = 49152-65535    ; ports Bind(port 0) and Connect choose from
//   rnr_retry       = 6              ; RNR retries before a Send with no receive posted at
//                                    ; the peer completes ND_IO_TIMEOUT (0..7; 7 = forever)
//   rnr_timer       = 28             ; the RNR NAK timer we ask peers to wait (IB code
//                                    ; 1..31: 28 = 164 ms; 0 = 655 ms). With rnr_retry 6
//                                    ; a receiver may be ~1.1 s late posting a receive
//                                    ; before the Send fails; a later Send waits 164 ms
//   selective_repair = on            ; offer and accept selective repair (ECE in the REQ/REP;
//                                    ; used only when the peer is this stack): a lost packet
//                                    ; is resent alone, not the window after it; off: go-back-N
//   cm_drop_rx_dreqs = 0             ; CM fault injection for tests: the first N DREQs
//   cm_drop_tx_dreqs = 0             ;   received are ignored / sent leave nothing on the
//                                    ;   wire (retransmitted later), as if lost
//   burst = 32                       ; frames one engine pass receives (and sends) at most
//                                    ; (1..64); 1: a pass reads one frame, so the caller
//                                    ; sees each frame's effect before the next is read
//   send_at_post = on                ; inline progress: a request posted to a queue pair
//                                    ; with nothing outstanding leaves in the post call
//                                    ; (lowest latency); off: at the next GetResults or
//                                    ; wait. A progress thread's adapter ignores it
//   progress_yield = auto            ; progress = thread: an idle progress thread gives its
//                                    ; CPU away (sched_yield) instead of spinning in place,
//                                    ; and so does a GetResults that finds nothing.
//                                    ; auto: always when the process's progress threads and
//                                    ; one polling application thread outnumber the CPUs it
//                                    ; may run on (two threaded adapters on two cores), else
//                                    ; while the progress thread finds itself preempted
//                                    ; (another process spinning too); on; off
//   fault.rx_drop = 0.01             ; any other key "section.key" overrides that
//                                    ; profile key (as rc-pingpong's --set)
//
// Errors name the file, the section and the key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <absl/status/statusor.h>

namespace roce::nd2 {

inline constexpr char kDefaultConfigPath[] = "/etc/soft-rnic/nd2.ini";

struct AdapterConfig {
  std::string name;       // the section
  std::string profile;    // resolved path
  std::string iface;
  std::vector<std::string> ips;
  std::string capture;
  std::vector<std::string> overrides;  // "section.key=value"
  bool progress_thread = true;  // progress = thread (default) or inline
  // Connection manager.
  uint8_t cm_timeout = 18;
  uint8_t cm_retries = 15;
  uint8_t cm_mra_timeout = 24;
  uint16_t ephemeral_first = 49152, ephemeral_last = 65535;
  // Transport (what the CM negotiates for our QPs).
  uint8_t rnr_retry = 6;
  uint8_t rnr_timer = 28;
  int8_t selective_repair = -1;  // -1: the CM's default; 0 off; 1 on
  // Fault injection (tests): DREQs lost on receive / on send.
  uint32_t cm_drop_rx_dreqs = 0, cm_drop_tx_dreqs = 0;
  uint16_t burst = 32;  // the engine's RX/TX burst
  bool send_at_post = true;  // EngineOptions::tx_on_post
  int8_t progress_yield = -1;  // EngineOptions::idle_yield: -1 auto (ProgressYields), 0 off, 1 on
};

// Whether a progress thread yields its CPU when idle (EngineOptions::
// idle_yield), for a `setting` of -1 (auto), 0 (off) or 1 (on), in a process
// with `progress_threads` progress threads that may run on `cpus` CPUs. Auto
// assumes one application thread that polls (GetResults in a loop): yield when
// the spinning threads would outnumber the CPUs.
bool ProgressYields(int8_t setting, size_t progress_threads, size_t cpus);
// The CPUs this process may run on (its affinity mask; at least 1).
size_t UsableCpus();

struct Nd2Config {
  std::string path;
  std::vector<AdapterConfig> adapters;
};

// Reads the file ND2_CONFIG names (or the default). NotFound when the file
// does not exist, InvalidArgument with "file: [section] key = value: why"
// for a bad one.
absl::StatusOr<Nd2Config> LoadNd2Config();
absl::StatusOr<Nd2Config> LoadNd2Config(const std::string& path);

}  // namespace roce::nd2
