// SPDX-License-Identifier: MIT
// Shared by the port tests (and later the engine tests): one EAL per test
// binary, initialized by a gtest Environment with the embedded default
// (--no-huge --no-shconf --no-pci -l 0: no hugepages, no files, parallel
// binaries never collide), plus helpers to build frames and to run commands
// in network namespaces the test creates.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stack/port/port.h"

namespace roce::port::testing {

// Registers the EAL environment; include this header and call nothing else.
// (A static initializer in port_test_env.cc adds it to gtest.)
class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override;
  void TearDown() override;
};

// A profile for an in-process ring pair with a unique ring name per call.
PortProfile RingProfile(uint16_t queues = 1);

// Both ends of an in-process ring pair opened from `p` (both null, with a
// test failure recorded, if that fails).
struct Pair {
  std::unique_ptr<Port> a, b;
};
Pair OpenPair(PortProfile p);

// A UDP/IPv4 frame of exactly `len` bytes (>= 42) whose payload carries `seq`
// then a pattern derived from it; dst port 4791.
std::vector<uint8_t> TestFrame(uint32_t len, uint32_t seq, const wire::MacAddr& src,
                               const wire::MacAddr& dst);
// The seq stored by TestFrame (reads across segments).
uint32_t FrameSeq(const rte_mbuf* m);
// The frame as bytes.
std::vector<uint8_t> Bytes(const rte_mbuf* m);
// An mbuf (chained if it exceeds one segment) holding `bytes`.
rte_mbuf* MbufFrom(rte_mempool* pool, const std::vector<uint8_t>& bytes);

// Sends all frames through `tx` and collects everything `rx` delivers until
// `expect` frames arrived or `polls` passes found nothing more.
std::vector<rte_mbuf*> Exchange(Port& tx, Port& rx, std::vector<rte_mbuf*> frames, size_t expect,
                                int idle_polls = 4);
void FreeAll(std::vector<rte_mbuf*>& v);

bool IsRoot();
// Runs a shell command; returns its exit status (stdout+stderr in *out if given).
int Sh(const std::string& cmd, std::string* out = nullptr);

// A network namespace the test creates (ip netns add), deleted on
// destruction even if the test fails (with everything inside it).
class Netns {
 public:
  explicit Netns(const std::string& tag);
  ~Netns();
  const std::string& name() const { return name_; }
  bool ok() const { return ok_; }
  // "ip netns exec <ns> cmd".
  int Exec(const std::string& cmd, std::string* out = nullptr) const;

  // While alive, the calling thread is inside the namespace: devices and
  // sockets DPDK creates now (tap, af_packet, pcap live) belong to it and stay
  // there (their sockets keep the namespace after the thread leaves).
  class Enter {
   public:
    explicit Enter(const Netns& ns);
    ~Enter();
    bool ok() const { return ok_; }

   private:
    int self_ = -1;
    bool ok_ = false;
  };

 private:
  std::string name_;
  bool ok_ = false;
};

}  // namespace roce::port::testing
