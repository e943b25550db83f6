// SPDX-License-Identifier: MIT
// The out-of-band exchange of rdma-core's `ibv_rc_pingpong` (libibverbs/
// examples/rc_pingpong.c + pingpong.c), both sides, byte-compatible on the
// wire, plus the facts the rc-pingpong tool needs to behave like the real
// program once the exchange is done. Plain POSIX TCP sockets, no DPDK.
//
// Checked against ibv_rc_pingpong of rdma-core 44.0 (Debian 12) running on
// kernel Soft-RoCE in the rxe-peer guests (tests/interop/): the golden bytes
// in tests/interop/pingpong_exchange_test.cc are what that program put on the
// wire, and pingpong_exchange_interop_test.cc runs both sides against it.
//
// ---------------------------------------------------------------- the wire
// TCP, default port 18515 (-p). One connection, three messages:
//
//   client -> server   52 bytes  "LLLL:QQQQQQ:PPPPPP:GGGG...32 hex...GGGG\0"
//   server -> client   52 bytes  the same format
//   client -> server    5 bytes  "done\0"
//
// Format "%04x:%06x:%06x:%s" = LID : QPN : PSN : GID, lower-case hex, then the
// terminating NUL: the program sends `sizeof msg` where msg is
// char[sizeof "0000:000000:000000:" + 32 zeros] = 52 (51 characters + NUL).
// The GID's wire form is its 16 raw bytes in order as 32 hex digits (four
// "%08x" of htonl() of each 32-bit word), e.g. ::ffff:198.18.0.2 is
// "00000000000000000000ffffc6120002". LID is 0 on RoCE (the port has none).
//
// Order of operations (the real program; our functions do the same):
//   server: getaddrinfo(NULL, port, AI_PASSIVE, AF_UNSPEC), first address that
//           binds (SO_REUSEADDR), listen(backlog 1), accept ONE connection,
//           close the listener; read the client's 52 bytes; *connect its QP*
//           (INIT->RTR->RTS, see below) with the client's values; only then
//           write its own 52 bytes; read "done" (expects exactly 5 bytes);
//           close. If connecting the QP fails it closes without replying.
//   client: getaddrinfo(server, port), connect (no retry: "Couldn't connect"
//           if nothing listens yet); write its 52 bytes; read 52; write
//           "done\0"; close; then connect its QP with the server's values and
//           post the first send.
// The real program does each read() once and treats a short read as an
// error, so our writes are single send() calls of the whole message (a
// kernel TCP socket on a LAN delivers 52 bytes in one segment). Our reads
// loop until the whole message arrived (more tolerant, same bytes).
// Parsing in the real program is sscanf("%x:%x:%x:%s"), then the GID's 32
// hex digits; ours accepts exactly the format above and rejects the rest.
//
// ------------------------------------------- TCP address vs RoCE address
// The exchange runs over the *kernel's* TCP/IP stack, the RoCE traffic over
// ours. In the rxe-peer set-up the tool runs inside the netns (`rxe-peer exec`
// / `ip netns exec`), so its TCP endpoint is the netns kernel address on the
// bridge (198.18.0.1): as client it connects to the guest's IP (198.18.0.2),
// as server the guest's client connects to 198.18.0.1. The RoCE address is
// the one the DPDK stack owns (e.g. 198.18.0.10, answers ARP itself) and is
// carried only inside the message, as the IPv4-mapped GID ::ffff:198.18.0.10.
// The peer takes the destination IP of its RoCE packets from that GID, never
// from the TCP connection. Its own GID (-g index; rxe: index 1 =
// ::ffff:<guest IP>, RoCE v2) comes back the same way.
//
// ------------------------------------------------ what the peer needs (rxe)
// * Both sides must pass -g: without it the GID sent is all zeros, and the
//   receiver then makes an AH without GRH, which a RoCE port refuses ("Failed
//   to modify QP to RTR"). is_global is set iff the remote GID's low 8 bytes
//   (interface id) are non-zero.
// * A kernel RoCE peer resolves the MAC of the IPv4 in our GID when it moves
//   its QP to RTR, and that fails at once (ENODATA -> "Failed to modify QP to
//   RTR", the server then closes without replying) unless its neighbour table
//   already has a valid (even STALE) entry. Receiving an ARP *request* from
//   that IP creates one. So the DPDK stack must have ARP-requested the peer's
//   IP (or answered its ARP) before the peer's RTR: as client, before
//   connecting TCP (ARP for the server's RoCE IP, which in the rxe-peer set-up
//   is the TCP address too); as server, between reading the client's message
//   and writing the reply (the `connect_qp` callback of PingpongServer is the
//   place). It must keep answering ARP (broadcast and unicast probes) for the
//   life of the QP: the peer's kernel routes every RoCE packet through its
//   neighbour table.
// * rxe sends RoCEv2 from our GID's point of view with IPv4 TTL 64 (the
//   kernel overwrites the GRH hop limit 1 that ibv_rc_pingpong sets with the
//   route's), DSCP 0, DF, UDP checksum 0, source port 0xC000 | hash(QPN).
// * rxe treats retry_cnt 7 as infinite: a peer whose sends are never ACKed
//   retransmits every ~68 ms (timeout 14) forever, busy-polling its CQ. Kill
//   it (the harness does).
//
// --------------------------------------- what ibv_rc_pingpong does after it
// Options: -p port 18515, -d device, -i ib port 1, -s size 4096, -m path MTU
// 1024, -r rx depth 500, -n iters 1000, -l SL 0, -e (CQ events), -g GID index
// (none), -c validate, plus -o/-O/-P/-t/-j/-N (ODP, timestamps, device
// memory, new send API: no effect on the wire).
//  - Path MTU: -m if given, else 1024. NOT the port's active MTU: on a 4096
//    port without -m the packets still carry 1024-byte payloads (seen in a
//    capture); pass -m 4096 for 4096.
//  - Starting PSN: srand48(getpid() * time(NULL)) at start, then
//    lrand48() & 0xffffff (RcPingpongStartPsn below computes the same).
//  - QP: RC, max_send_wr 1, max_recv_wr rx_depth, 1 SGE each way; one CQ of
//    rx_depth + 1 entries for both; one buffer of `size` bytes, filled with
//    0x7b, registered with LOCAL_WRITE only, used for every send AND every
//    receive (so the server sends back what it last received). Sends are
//    SIGNALED (+INLINE if the device's max_inline_data >= size).
//  - INIT: pkey_index 0, port, qp_access_flags 0 (no remote access).
//  - RTR: path_mtu, dest_qp_num = remote QPN, rq_psn = remote PSN,
//    max_dest_rd_atomic 1, min_rnr_timer 12 (0.64 ms), AH: dlid = remote LID,
//    sl, src_path_bits 0, port; if remote GID interface id != 0: is_global,
//    hop_limit 1, dgid = remote GID, sgid_index = own -g.
//  - RTS: timeout 14 (4.096 us * 2^14 = 67 ms), retry_cnt 7, rnr_retry 7
//    (infinite), sq_psn = own PSN, max_rd_atomic 1.
//  - Our PSN goes out as our sq_psn; the PSN we send in the message is the
//    one the peer expects on our first packet (its rq_psn), and vice versa.
//  - Before the exchange each side posts rx_depth receives. Loop (both
//    sides): pending = RECV; the client posts one SEND (pending |= SEND).
//    Poll up to 2 WCs at a time; any status != success ends the program with
//    exit 1. RECV completion: rcnt++, and when outstanding receives drop to
//    <= 1 repost up to rx_depth. SEND completion: scnt++. After each WC:
//    pending &= ~wr_id; if scnt < iters and nothing pending, post the next
//    SEND and pending = RECV | SEND. Ends when rcnt >= iters and
//    scnt >= iters. So messages strictly alternate client, server, client...;
//    each side sends its next one only after its previous SEND was ACKed and
//    the peer's message arrived. iters messages each way; the last message is
//    the server's, and the client exits right after receiving it, so its
//    ACK must already be on the wire when the completion is reported (a host
//    stack must not hold back that ACK until a later poll).
//  - Prints "  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s"
//    before the exchange and "  remote address: ..." after it (GID via
//    inet_ntop(AF_INET6)), then "%lld bytes in %.2f seconds = %.2f Mbit/sec"
//    (bytes = size * iters * 2) and "%d iters in %.2f seconds = %.2f
//    usec/iter". Exit 0. No disconnect message: each side just destroys its
//    QP.
//  - -c: the client, before its first send, sets buf[i] = 0 for every
//    i = 0, page_size, 2*page_size, ... < size (the source writes
//    i / page_size % sizeof(char), which is always 0); the rest stays 0x7b.
//    The server, after the loop, prints "invalid data in page %d" for each
//    page whose first byte is not 0 (exit status unchanged). The client does
//    not check anything.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace roce::tools {

// A GID as its 16 raw bytes (the same layout as wire::IpAddr::b).
using Gid = std::array<uint8_t, 16>;

inline constexpr uint16_t kPingpongDefaultPort = 18515;
inline constexpr size_t kPingpongMessageSize = 52;  // 51 characters + NUL
inline constexpr size_t kPingpongDoneSize = 5;      // "done" + NUL

// Defaults and fixed QP attributes of ibv_rc_pingpong (see above).
namespace rc_pingpong {
inline constexpr uint32_t kDefaultSize = 4096;
inline constexpr uint32_t kDefaultIters = 1000;
inline constexpr uint32_t kDefaultRxDepth = 500;
inline constexpr uint32_t kDefaultPathMtu = 1024;  // without -m, whatever the port says
inline constexpr int kDefaultIbPort = 1;
inline constexpr uint32_t kMaxSendWr = 1;
inline constexpr uint8_t kBufferFill = 0x7b;
inline constexpr uint16_t kPkeyIndex = 0;
inline constexpr uint32_t kQpAccessFlags = 0;
inline constexpr uint8_t kMinRnrTimer = 12;     // 0.64 ms
inline constexpr uint8_t kMaxDestRdAtomic = 1;
inline constexpr uint8_t kGrhHopLimit = 1;      // set by the app; rxe sends TTL 64 anyway
inline constexpr uint8_t kTimeout = 14;         // 4.096 us << 14 = 67 ms
inline constexpr uint8_t kRetryCnt = 7;
inline constexpr uint8_t kRnrRetry = 7;         // infinite
inline constexpr uint8_t kMaxRdAtomic = 1;
inline constexpr uint64_t kRecvWrId = 1;
inline constexpr uint64_t kSendWrId = 2;
}  // namespace rc_pingpong

// One side's values.
struct PingpongDest {
  uint16_t lid = 0;  // 0 on RoCE
  uint32_t qpn = 0;  // 24 bits
  uint32_t psn = 0;  // 24 bits
  Gid gid{};
  bool operator==(const PingpongDest&) const = default;
};

// GID <-> its 32-hex-digit wire form.
std::string GidToWire(const Gid& gid);
bool GidFromWire(std::string_view hex, Gid* out);
// ::ffff:a.b.c.d for an IPv4 address given in host order.
Gid Ipv4MappedGid(uint32_t ipv4);
// True (and *ipv4 in host order) if gid is IPv4-mapped.
bool GidToIpv4(const Gid& gid, uint32_t* ipv4);
// inet_ntop(AF_INET6) form, as ibv_rc_pingpong prints it ("::ffff:198.18.0.2").
std::string GidToString(const Gid& gid);
bool GidFromString(const std::string& text, Gid* out);  // inet_pton(AF_INET6)

// The 51 characters of a message (the NUL is added when it is sent).
std::string FormatPingpongMessage(const PingpongDest& d);
// Parses a received message: exactly the format above, optionally followed by
// the NUL (and nothing else). False (with *error set) otherwise.
bool ParsePingpongMessage(std::string_view msg, PingpongDest* out, std::string* error = nullptr);

// "  local address:  LID 0x0000, QPN 0x000011, PSN 0x03eac5, GID ::ffff:198.18.0.2"
// (remote: "  remote address: ..."), the lines ibv_rc_pingpong prints.
std::string FormatAddressLine(bool local, const PingpongDest& d);
// Parses such a line out of a program's output (the first one of that kind).
bool FindAddressLine(std::string_view output, bool local, PingpongDest* out);

// The starting PSN ibv_rc_pingpong derives from a seed: srand48(seed), then
// lrand48() & 0xffffff. The program's seed is getpid() * time(NULL)
// (PingpongSeed()). Pure: computes the drand48 sequence itself.
uint32_t RcPingpongStartPsn(long seed);
long PingpongSeed();

struct ExchangeOptions {
  // Deadline for the whole call (connect/accept included); 0 = wait forever,
  // as the real program does.
  int timeout_ms = 0;
  // Client only: keep retrying a refused connect for this long (the real
  // client gives up at once; useful when the server may not listen yet).
  int connect_retry_ms = 0;
};

struct ExchangeResult {
  std::string error;  // empty on success
  PingpongDest remote;
  bool ok() const { return error.empty(); }
};

// The client side: connect to server:port, send `local`, receive the
// server's values, send "done". The caller then connects its QP with
// result.remote and posts the first send.
ExchangeResult PingpongClientExchange(const std::string& server, uint16_t port,
                                      const PingpongDest& local,
                                      const ExchangeOptions& opts = {});

// The server side, in two steps so that the caller knows when it listens.
class PingpongServer {
 public:
  // Called with the client's values after they were read and before ours are
  // written: connect the QP (and make the peer's kernel able to resolve our
  // MAC, see above). Returning false closes the connection without a reply,
  // as the real server does when pp_connect_ctx fails.
  using ConnectQp = std::function<bool(const PingpongDest& remote, std::string* error)>;

  PingpongServer() = default;
  PingpongServer(const PingpongServer&) = delete;
  PingpongServer& operator=(const PingpongServer&) = delete;
  ~PingpongServer();

  // Binds like the real server (AI_PASSIVE, AF_UNSPEC, first address that
  // binds, SO_REUSEADDR) unless bind_host names an address; listen(1).
  // Port 0 picks a free one (tests); port() tells which.
  bool Listen(uint16_t port, std::string* error, const char* bind_host = nullptr);
  uint16_t port() const { return port_; }

  // Accepts one client, closes the listener and runs the exchange.
  ExchangeResult Exchange(const PingpongDest& local, const ConnectQp& connect_qp,
                          const ExchangeOptions& opts = {});

 private:
  int listen_fd_ = -1;
  uint16_t port_ = 0;
};

}  // namespace roce::tools
