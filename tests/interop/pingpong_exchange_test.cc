// SPDX-License-Identifier: MIT
// The ibv_rc_pingpong exchange (tools/lib/pingpong_exchange.h) without a
// guest: golden bytes that rdma-core 44.0's ibv_rc_pingpong put on the wire
// (captured on the rxe-peer bridge, vm2 client -> vm1 server), the lines it
// printed, its PSN derivation (checked against libc's srand48/lrand48), and
// both of our sides over loopback against peers that do exactly what the real
// program's code does (one write per message, one read that must return the
// whole message).
#include "tools/lib/pingpong_exchange.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace roce::tools {
namespace {

std::string Unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// tshark -T fields -e tcp.payload of the three TCP segments of one exchange.
const std::string kClientMsg = Unhex(
    "303030303a3030303031363a3766313637313a303030303030303030303030303030303030303066666666633631323030303300");
const std::string kServerMsg = Unhex(
    "303030303a3030303031363a6339663937323a303030303030303030303030303030303030303066666666633631323030303200");
const std::string kDoneMsg = Unhex("646f6e6500");
// What the client printed in the same run.
const char kClientOutput[] =
    "  local address:  LID 0x0000, QPN 0x000016, PSN 0x7f1671, GID ::ffff:198.18.0.3\n"
    "  remote address: LID 0x0000, QPN 0x000016, PSN 0xc9f972, GID ::ffff:198.18.0.2\n"
    "256 bytes in 0.01 seconds = 205.13 Mbit/sec\n";

constexpr uint32_t kIp = 0xC6120003;  // 198.18.0.3

TEST(PingpongMessage, GoldenSizes) {
  EXPECT_EQ(kClientMsg.size(), kPingpongMessageSize);
  EXPECT_EQ(kServerMsg.size(), kPingpongMessageSize);
  EXPECT_EQ(kDoneMsg.size(), kPingpongDoneSize);
  EXPECT_EQ(sizeof "0000:000000:000000:00000000000000000000000000000000", kPingpongMessageSize);
}

TEST(PingpongMessage, ParsesGoldenBytes) {
  PingpongDest d;
  std::string err;
  ASSERT_TRUE(ParsePingpongMessage(kClientMsg, &d, &err)) << err;
  EXPECT_EQ(d.lid, 0);
  EXPECT_EQ(d.qpn, 0x16u);
  EXPECT_EQ(d.psn, 0x7f1671u);
  EXPECT_EQ(d.gid, Ipv4MappedGid(kIp));
  EXPECT_EQ(GidToString(d.gid), "::ffff:198.18.0.3");
  ASSERT_TRUE(ParsePingpongMessage(kServerMsg, &d, &err)) << err;
  EXPECT_EQ(d.psn, 0xc9f972u);
  EXPECT_EQ(GidToString(d.gid), "::ffff:198.18.0.2");
}

TEST(PingpongMessage, FormatsGoldenBytes) {
  PingpongDest d{0, 0x16, 0x7f1671, Ipv4MappedGid(kIp)};
  std::string m = FormatPingpongMessage(d);
  EXPECT_EQ(m.size(), kPingpongMessageSize - 1);
  EXPECT_EQ(m + '\0', kClientMsg);
}

TEST(PingpongMessage, WireGidIsRawByteOrder) {
  Gid g;
  ASSERT_TRUE(GidFromString("fe80::5054:ff:fec6:1202", &g));  // rxe's GID 0 of vm1
  EXPECT_EQ(GidToWire(g), "fe800000000000005054" "00fffec61202");
  Gid back;
  ASSERT_TRUE(GidFromWire(GidToWire(g), &back));
  EXPECT_EQ(back, g);
  uint32_t ip = 0;
  EXPECT_FALSE(GidToIpv4(g, &ip));
  ASSERT_TRUE(GidToIpv4(Ipv4MappedGid(kIp), &ip));
  EXPECT_EQ(ip, kIp);
}

TEST(PingpongMessage, RejectsMalformed) {
  PingpongDest d;
  std::string err;
  const std::string good = kClientMsg.substr(0, 51);
  EXPECT_TRUE(ParsePingpongMessage(good, &d, &err));
  EXPECT_FALSE(ParsePingpongMessage(good.substr(0, 50), &d, &err));
  EXPECT_FALSE(ParsePingpongMessage(good + "0", &d, &err));
  EXPECT_FALSE(ParsePingpongMessage(good + '\0' + '\0', &d, &err));
  std::string bad = good;
  bad[4] = '-';
  EXPECT_FALSE(ParsePingpongMessage(bad, &d, &err));
  bad = good;
  bad[30] = 'g';
  EXPECT_FALSE(ParsePingpongMessage(bad, &d, &err));
  EXPECT_NE(err.find("malformed"), std::string::npos);
  EXPECT_FALSE(ParsePingpongMessage(std::string(52, '\0'), &d, &err));
}

TEST(PingpongMessage, AddressLinesLikeTheProgram) {
  PingpongDest local, remote;
  ASSERT_TRUE(FindAddressLine(kClientOutput, true, &local));
  ASSERT_TRUE(FindAddressLine(kClientOutput, false, &remote));
  PingpongDest want_local;
  ASSERT_TRUE(ParsePingpongMessage(kClientMsg, &want_local, nullptr));
  PingpongDest want_remote;
  ASSERT_TRUE(ParsePingpongMessage(kServerMsg, &want_remote, nullptr));
  EXPECT_EQ(local, want_local);
  EXPECT_EQ(remote, want_remote);
  std::string out = kClientOutput;
  EXPECT_EQ(FormatAddressLine(true, local) + "\n", out.substr(0, out.find('\n') + 1));
  EXPECT_EQ(FormatAddressLine(false, remote),
            "  remote address: LID 0x0000, QPN 0x000016, PSN 0xc9f972, GID ::ffff:198.18.0.2");
  EXPECT_FALSE(FindAddressLine("nothing here", true, &local));
}

TEST(PingpongPsn, MatchesLibcDrand48) {
  for (long seed : {0L, 1L, 12345L, 0x7fffffffL, -1L, 1234567L * 1763000000L}) {
    srand48(seed);
    uint32_t want = static_cast<uint32_t>(lrand48()) & 0xffffff;
    EXPECT_EQ(RcPingpongStartPsn(seed), want) << "seed " << seed;
  }
  EXPECT_LE(RcPingpongStartPsn(PingpongSeed()), 0xffffffu);
}

// ---------------------------------------------------------------- loopback

int ConnectLoopback(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A listener on 127.0.0.1, free port.
int ListenLoopback(uint16_t* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::listen(fd, 1);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

// Our server against a client that does what pp_client_exch_dest does.
TEST(PingpongExchange, OurServerWithProgramLikeClient) {
  PingpongServer server;
  std::string err;
  ASSERT_TRUE(server.Listen(0, &err, "127.0.0.1")) << err;
  PingpongDest ours{0, 0xabcde, 0x123456, Ipv4MappedGid(0xC612000A)};
  PingpongDest seen_in_callback;
  auto fut = std::async(std::launch::async, [&] {
    return server.Exchange(ours, [&](const PingpongDest& r, std::string*) {
      seen_in_callback = r;
      return true;
    }, {.timeout_ms = 5000});
  });
  int fd = ConnectLoopback(server.port());
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, kClientMsg.data(), kClientMsg.size()), 52);
  char msg[52];
  ASSERT_EQ(::read(fd, msg, sizeof msg), 52);  // one read, like the program
  ASSERT_EQ(::write(fd, "done", sizeof "done"), 5);
  ::close(fd);
  ExchangeResult r = fut.get();
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(std::string(msg, 52), FormatPingpongMessage(ours) + '\0');
  PingpongDest client;
  ASSERT_TRUE(ParsePingpongMessage(kClientMsg, &client, nullptr));
  EXPECT_EQ(r.remote, client);
  EXPECT_EQ(seen_in_callback, client);
}

// Our client against a server that does what pp_server_exch_dest does.
TEST(PingpongExchange, OurClientWithProgramLikeServer) {
  uint16_t port = 0;
  int lfd = ListenLoopback(&port);
  PingpongDest ours{0, 0x000bcd, 0xfedcba, Ipv4MappedGid(0xC612000A)};
  auto fut = std::async(std::launch::async, [&] {
    return PingpongClientExchange("127.0.0.1", port, ours, {.timeout_ms = 5000});
  });
  int cfd = ::accept(lfd, nullptr, nullptr);
  ::close(lfd);
  char msg[52];
  ASSERT_EQ(::read(cfd, msg, sizeof msg), 52);
  EXPECT_EQ(std::string(msg, 52), FormatPingpongMessage(ours) + '\0');
  ASSERT_EQ(::write(cfd, kServerMsg.data(), kServerMsg.size()), 52);
  char done[52];
  ASSERT_EQ(::read(cfd, done, sizeof done), 5);  // the program checks for sizeof "done"
  EXPECT_EQ(std::string(done, 5), kDoneMsg);
  ::close(cfd);
  ExchangeResult r = fut.get();
  ASSERT_TRUE(r.ok()) << r.error;
  PingpongDest server;
  ASSERT_TRUE(ParsePingpongMessage(kServerMsg, &server, nullptr));
  EXPECT_EQ(r.remote, server);
}

TEST(PingpongExchange, ServerThatCannotConnectClosesWithoutReply) {
  PingpongServer server;
  std::string err;
  ASSERT_TRUE(server.Listen(0, &err, "127.0.0.1")) << err;
  auto fut = std::async(std::launch::async, [&] {
    return server.Exchange({}, [](const PingpongDest&, std::string* why) {
      *why = "Failed to modify QP to RTR";
      return false;
    }, {.timeout_ms = 5000});
  });
  ExchangeResult c = PingpongClientExchange("127.0.0.1", server.port(), {}, {.timeout_ms = 5000});
  EXPECT_FALSE(c.ok());
  EXPECT_NE(c.error.find("closed"), std::string::npos) << c.error;
  ExchangeResult s = fut.get();
  EXPECT_NE(s.error.find("RTR"), std::string::npos) << s.error;
}

TEST(PingpongExchange, ClientRetriesUntilServerListens) {
  // Find a free port, close it, start the server on it later.
  uint16_t port = 0;
  ::close(ListenLoopback(&port));
  auto fut = std::async(std::launch::async, [&] {
    return PingpongClientExchange("127.0.0.1", port, {}, {.timeout_ms = 5000, .connect_retry_ms = 4000});
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  PingpongServer server;
  std::string err;
  ASSERT_TRUE(server.Listen(port, &err, "127.0.0.1")) << err;
  ExchangeResult s = server.Exchange({0, 7, 8, {}}, nullptr, {.timeout_ms = 5000});
  EXPECT_TRUE(s.ok()) << s.error;
  ExchangeResult c = fut.get();
  ASSERT_TRUE(c.ok()) << c.error;
  EXPECT_EQ(c.remote.qpn, 7u);
  EXPECT_EQ(c.remote.psn, 8u);
  // Without retry a refused connect fails at once, as in the real program.
  ExchangeResult once = PingpongClientExchange("127.0.0.1", port, {}, {.timeout_ms = 1000});
  EXPECT_FALSE(once.ok());
  EXPECT_NE(once.error.find("couldn't connect"), std::string::npos) << once.error;
}

TEST(PingpongExchange, Timeouts) {
  PingpongServer server;
  std::string err;
  ASSERT_TRUE(server.Listen(0, &err, "127.0.0.1")) << err;
  ExchangeResult s = server.Exchange({}, nullptr, {.timeout_ms = 200});
  EXPECT_NE(s.error.find("timed out"), std::string::npos) << s.error;

  // A server that accepts and never answers.
  uint16_t port = 0;
  int lfd = ListenLoopback(&port);
  ExchangeResult c = PingpongClientExchange("127.0.0.1", port, {}, {.timeout_ms = 300});
  EXPECT_NE(c.error.find("timed out"), std::string::npos) << c.error;
  ::close(lfd);
}

}  // namespace
}  // namespace roce::tools
