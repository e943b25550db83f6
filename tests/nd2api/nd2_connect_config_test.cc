// SPDX-License-Identifier: MIT
// ND2_CONFIG (nd2api/src/config.h): a missing or bad configuration makes
// NdStartup fail with ND_DEVICE_NOT_READY and one line on stderr naming the
// file, the [section] and the key; nothing is half started (the helpers still
// say ND_DEVICE_NOT_READY, and a good file then starts). Public headers only.
#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <ndspi.h>
#include <ndsupport.h>

#include "nd2_connect_support.h"

namespace {

std::string TempPath(const std::string& name) { return "/tmp/nd2cfg_" + std::to_string(getpid()) + "_" + name; }

std::string Write(const std::string& name, const std::string& text) {
  const std::string p = TempPath(name);
  std::ofstream(p) << text;
  return p;
}

// NdStartup with ND2_CONFIG = path: its status and what it printed.
std::pair<HRESULT, std::string> Start(const std::string& path) {
  setenv("ND2_CONFIG", path.c_str(), 1);
  testing::internal::CaptureStderr();
  const HRESULT h = NdStartup();
  return {h, testing::internal::GetCapturedStderr()};
}

const char kRing0[] = "profile = net_ring.ini\nport.ring = nd2cfg\nport.ring_side = a\n";
const char kRing1[] = "profile = net_ring.ini\nport.ring = nd2cfg\nport.ring_side = b\nport.mac = 02:00:00:00:00:02\n";

struct Bad {
  const char* name;
  std::string text;
  std::vector<std::string> says;  // the message names these
};

class Nd2Config : public ::testing::TestWithParam<Bad> {};

TEST_P(Nd2Config, BadFileFailsNdStartupNamingFileAndKey) {
  const Bad& b = GetParam();
  const std::string path = Write(b.name, b.text);
  auto [h, err] = Start(path);
  EXPECT_EQ(static_cast<uint32_t>(h), static_cast<uint32_t>(ND_DEVICE_NOT_READY)) << err;
  EXPECT_NE(err.find("libnd2"), std::string::npos) << err;
  EXPECT_NE(err.find(path), std::string::npos) << "the message names the file: " << err;
  for (const std::string& s : b.says) EXPECT_NE(err.find(s), std::string::npos) << "expected \"" << s << "\" in: " << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << "one line: " << err;
  // Nothing started.
  SIZE_T cb = 0;
  EXPECT_EQ(static_cast<uint32_t>(NdQueryAddressList(0, nullptr, &cb)), static_cast<uint32_t>(ND_DEVICE_NOT_READY));
  // Nothing to clean up (Microsoft's ndsupport says so too).
  EXPECT_EQ(static_cast<uint32_t>(NdCleanup()), static_cast<uint32_t>(ND_DEVICE_NOT_READY));
  unlink(path.c_str());
}

const std::string kGood0 = std::string("[adapter0]\n") + kRing0 + "ip = 10.0.0.1/24\nip6 = fd00::1/64\n";

INSTANTIATE_TEST_SUITE_P(
    Files, Nd2Config,
    ::testing::Values(
        Bad{"empty", "", {"no [adapter...] section"}},
        Bad{"comments_only", "; nothing here\n", {"no [adapter...] section"}},
        Bad{"not_ini", "this is not an INI file\n[adapter0]\n", {":1:", "not a valid INI line"}},
        Bad{"key_before_section", "ip = 10.0.0.1/24\n" + kGood0, {":1:", "before any [section]"}},
        Bad{"unclosed_section", "[adapter0\nip = 10.0.0.1/24\n", {":1:", "not a valid INI line"}},
        Bad{"section_twice", kGood0 + "[adapter0]\n", {":7:", "[adapter0] appears twice"}},
        Bad{"key_twice", kGood0 + "progress = thread\nprogress = inline\n", {":8:", "[adapter0] progress is set twice"}},
        Bad{"unknown_section", "[network]\nprofile = net_ring.ini\n", {"[network]"}},
        Bad{"unknown_key", kGood0 + "colour = blue\n", {":7:", "[adapter0]", "colour = blue", "unknown key"}},
        Bad{"no_profile", "[adapter0]\nip = 10.0.0.1/24\n", {"[adapter0]", "profile", "missing"}},
        Bad{"missing_profile", "[adapter0]\nprofile = no_such_profile.ini\nip = 10.0.0.1/24\n",
            {"[adapter0]", "profile = no_such_profile.ini", "no such profile"}},
        Bad{"no_ip", std::string("[adapter0]\n") + kRing0, {"[adapter0]", "ip", "missing"}},
        Bad{"ip_no_prefix", std::string("[adapter0]\n") + kRing0 + "ip = 10.0.0.1\n",
            {"[adapter0]", "ip = 10.0.0.1", "prefix"}},
        Bad{"ip_not_an_address", std::string("[adapter0]\n") + kRing0 + "ip = 10.0.300.1/24\n",
            {"[adapter0]", "ip = 10.0.300.1/24"}},
        Bad{"ip6_under_ip", std::string("[adapter0]\n") + kRing0 + "ip = fd00::1/64\n", {"[adapter0]", "ip = fd00::1/64"}},
        Bad{"two_ips", kGood0 + "ip = 10.0.0.5/24\n", {":7:", "[adapter0]", "ip = 10.0.0.5/24", "a second ip"}},
        Bad{"bad_progress", kGood0 + "progress = fast\n", {"[adapter0]", "progress = fast", "inline or thread"}},
        Bad{"bad_mtu", kGood0 + "mtu = big\n", {"[adapter0]", "mtu = big"}},
        Bad{"cm_retries_range", kGood0 + "cm_retries = 16\n", {"[adapter0]", "cm_retries = 16", "0..15"}},
        Bad{"cm_timeout_range", kGood0 + "cm_timeout = 40\n", {"[adapter0]", "cm_timeout = 40"}},
        Bad{"rnr_retry_range", kGood0 + "rnr_retry = 8\n", {"[adapter0]", "rnr_retry = 8"}},
        Bad{"selective_repair_word", kGood0 + "selective_repair = yes\n",
            {":7:", "[adapter0]", "selective_repair = yes", "on or off"}},
        Bad{"send_at_post_word", kGood0 + "send_at_post = 1\n",
            {":7:", "[adapter0]", "send_at_post = 1", "on or off"}},
        Bad{"progress_yield_word", kGood0 + "progress_yield = yes\n",
            {":7:", "[adapter0]", "progress_yield = yes", "auto, on or off"}},
        Bad{"ephemeral_backwards", kGood0 + "ephemeral_ports = 60000-50000\n",
            {"[adapter0]", "ephemeral_ports = 60000-50000"}},
        Bad{"bad_profile_key", kGood0 + "port.mtu = huge\n", {"[adapter0]", "port.mtu"}},
        Bad{"same_ip_twice", kGood0 + "[adapter1]\n" + kRing1 + "ip = 10.0.0.1/24\n",
            {"[adapter1]", "ip = 10.0.0.1/24", "already the address of [adapter0]"}},
        // Both adapters left with the profile's default IPv6 address (fd00::1).
        Bad{"same_default_ip6", std::string("[adapter0]\n") + kRing0 + "ip = 10.0.0.1/24\n[adapter1]\n" + kRing1 +
                                    "ip = 10.0.0.2/24\n",
            {"[adapter1]", "ip6", "fd00::1", "[adapter0]"}}),
    [](const auto& i) { return std::string(i.param.name); });

TEST(Nd2ConfigFile, MissingFileAndDefaultPath) {
  const std::string path = TempPath("does_not_exist.ini");
  auto [h, err] = Start(path);
  EXPECT_EQ(static_cast<uint32_t>(h), static_cast<uint32_t>(ND_DEVICE_NOT_READY));
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("not found"), std::string::npos) << err;
  EXPECT_NE(err.find("ND2_CONFIG"), std::string::npos) << err;  // says how to name one
  // A directory is not a configuration either.
  auto [h2, err2] = Start("/tmp");
  EXPECT_EQ(static_cast<uint32_t>(h2), static_cast<uint32_t>(ND_DEVICE_NOT_READY));
  EXPECT_NE(err2.find("/tmp: not a regular file"), std::string::npos) << err2;
  // Without ND2_CONFIG: the documented default path.
  unsetenv("ND2_CONFIG");
  struct stat st;
  if (stat("/etc/soft-rnic/nd2.ini", &st) != 0) {
    testing::internal::CaptureStderr();
    EXPECT_EQ(static_cast<uint32_t>(NdStartup()), static_cast<uint32_t>(ND_DEVICE_NOT_READY));
    const std::string e = testing::internal::GetCapturedStderr();
    EXPECT_NE(e.find("/etc/soft-rnic/nd2.ini"), std::string::npos) << e;
  }
}

// After failures, a good file starts (and the configuration's keys take effect).
TEST(Nd2ConfigFile, GoodFileAfterBadOnesStarts) {
  const std::string bad = Write("bad.ini", kGood0 + "colour = blue\n");
  EXPECT_EQ(Start(bad).first, ND_DEVICE_NOT_READY);
  const std::string good =
      Write("good.ini", kGood0 + "progress = thread\ncm_timeout = 14\ncm_retries = 3\nephemeral_ports = 61000-61000\n"
                                 "rnr_retry = 2\nrnr_timer = 1\nmtu = 1500\n[adapter1]\n" + kRing1 +
                                 "ip = 10.0.0.2/24\nip6 = fd00::2/64\n");
  auto [h, err] = Start(good);
  ASSERT_EQ(h, ND_SUCCESS) << err;
  EXPECT_EQ(err, "");
  SIZE_T cb = 0;
  EXPECT_EQ(static_cast<uint32_t>(NdQueryAddressList(0, nullptr, &cb)), static_cast<uint32_t>(ND_BUFFER_OVERFLOW));
  // ephemeral_ports = 61000-61000: one port, then ND_TOO_MANY_ADDRESSES.
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, "10.0.0.1", &a.sin_addr);
  IND2Adapter* ad = nullptr;
  ASSERT_EQ(NdOpenAdapter(IID_IND2Adapter, reinterpret_cast<sockaddr*>(&a), sizeof a, reinterpret_cast<void**>(&ad)),
            ND_SUCCESS);
  HANDLE f = nullptr;
  ASSERT_EQ(ad->CreateOverlappedFile(&f), ND_SUCCESS);
  IND2Connector *c1 = nullptr, *c2 = nullptr;
  ASSERT_EQ(ad->CreateConnector(IID_IND2Connector, f, reinterpret_cast<void**>(&c1)), ND_SUCCESS);
  ASSERT_EQ(ad->CreateConnector(IID_IND2Connector, f, reinterpret_cast<void**>(&c2)), ND_SUCCESS);
  ASSERT_EQ(c1->Bind(reinterpret_cast<sockaddr*>(&a), sizeof a), ND_SUCCESS);
  sockaddr_in got{};
  ULONG len = sizeof got;
  ASSERT_EQ(c1->GetLocalAddress(reinterpret_cast<sockaddr*>(&got), &len), ND_SUCCESS);
  EXPECT_EQ(ntohs(got.sin_port), 61000);
  EXPECT_EQ(static_cast<uint32_t>(c2->Bind(reinterpret_cast<sockaddr*>(&a), sizeof a)),
            static_cast<uint32_t>(ND_TOO_MANY_ADDRESSES));
  c1->Release();
  c2->Release();
  CloseHandle(f);
  ad->Release();
  EXPECT_EQ(NdCleanup(), ND_SUCCESS);
  unlink(bad.c_str());
  unlink(good.c_str());
}

// send_at_post: adapter0 (inline) Sends to adapter1 (its own progress
// thread) while this thread makes no ND call at all — nothing drives
// adapter0's engine. With the key on (also its default) the Send left in the
// Send call: adapter1's thread receives it and completes the Notify on its
// queue. With it off the Send waits for adapter0's next pass: the Notify stays
// pending until a GetResults drives adapter0.
class Nd2SendAtPost : public ::testing::TestWithParam<const char*> {};

TEST_P(Nd2SendAtPost, KeyDecidesWhetherTheSendLeavesInTheCall) {
  const std::string key = GetParam();
  const bool at_post = key != "send_at_post = off\n";
  const std::string path =
      Write("send_at_post.ini",
            kGood0 + "progress = inline\n" + key + "[adapter1]\n" + kRing1 +
                "ip = 10.0.0.2/24\nip6 = fd00::2/64\nprogress = thread\n");
  auto [h, err] = Start(path);
  ASSERT_EQ(h, ND_SUCCESS) << err;
  {
    nd2test::Side a, b;
    ASSERT_NO_FATAL_FAILURE(a.Open("10.0.0.1"));
    ASSERT_NO_FATAL_FAILURE(b.Open("10.0.0.2"));
    auto l = nd2test::Listen(b, "10.0.0.2", 7300);
    ASSERT_TRUE(l);
    const sockaddr_in dest = nd2test::V4("10.0.0.2", 7300);
    ASSERT_NO_FATAL_FAILURE(nd2test::Establish(a, b, l.get(), nd2test::Sa(dest), sizeof dest));
    for (int round = 0; round < 2; round++) {
      ASSERT_HR(b.Recv(nullptr, 0, 64), ND_SUCCESS);
      OVERLAPPED nov{};
      nov.hEvent = CreateEvent(nullptr, FALSE, FALSE, nullptr);
      ASSERT_HR(b.cq->Notify(ND_CQ_NOTIFY_ANY, &nov), ND_PENDING);
      std::memcpy(a.buf.data() + 128, "at post", 8);
      ASSERT_HR(a.Send(nullptr, 128, 8, ND_OP_FLAG_INLINE), ND_SUCCESS);
      // No ND call (no GetResults, no wait) until the Notify completes or 1 s passes.
      auto pending = [&] { return __atomic_load_n(&nov.Internal, __ATOMIC_ACQUIRE) == ND_PENDING; };
      for (int i = 0; i < 100 && pending(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      EXPECT_EQ(!pending(), at_post) << "round " << round << ": the Notify "
                                     << (pending() ? "was still pending" : "completed");
      // Either way the Send arrives once adapter0 is driven.
      auto r = b.Next();
      ASSERT_TRUE(r.has_value());
      EXPECT_HR(r->Status, ND_SUCCESS);
      EXPECT_EQ(std::memcmp(b.buf.data(), "at post", 8), 0);
      auto s = a.Next();  // the Send's own completion (and its ACK): the queue pair is idle again
      ASSERT_TRUE(s.has_value());
      EXPECT_HR(s->Status, ND_SUCCESS);
      EXPECT_HR(b.cq->GetOverlappedResult(&nov, TRUE), ND_SUCCESS);
      CloseHandle(nov.hEvent);
      std::memset(b.buf.data(), 0, 8);
    }
  }
  EXPECT_EQ(NdCleanup(), ND_SUCCESS);
  unlink(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Keys, Nd2SendAtPost, ::testing::Values("", "send_at_post = on\n", "send_at_post = off\n"),
                         [](const testing::TestParamInfo<const char*>& i) {
                           return std::string(i.index == 0 ? "Default" : i.index == 1 ? "On" : "Off");
                         });

}  // namespace
