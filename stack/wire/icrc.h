// SPDX-License-Identifier: MIT
// RoCEv2 invariant CRC (IBTA Annex A17.3.3): CRC-32 (Ethernet polynomial,
// reflected, as zlib's crc32) over 8 bytes of 0xFF standing in for the LRH,
// then the IP header, UDP header and BTH with their variant fields set to all
// ones, then everything after the BTH up to the ICRC. Stored least-significant
// byte first. The variant fields: IPv4 TOS, TTL, header checksum; IPv6
// traffic class, flow label, hop limit (not the version nibble); UDP checksum;
// BTH byte 4 (FECN, BECN, resv6).
//
// The computation is chained: Begin() hashes IP+UDP+BTH, Update() continues
// over further spans — extension headers, payload segments of an mbuf chain,
// pad. Nothing is copied: the masked fields become a change of the CRC's seed
// (CRC-32 is affine in its input; icrc.cc), so the bytes are hashed where they
// lie, and a contiguous packet costs one pass. ISA-L's crc32_gzip_refl does
// the hashing (it takes a seed; rte_net_crc does not), except for spans
// shorter than 256 bytes (IPv4 without options, IPv6) on a CPU with
// PCLMULQDQ: there a 16-byte-block fold
// applies the mask with one OR per block as it loads, so a 64-byte packet
// costs what a raw CRC-32 of it does (the seed change cost it ~25% more).
#pragma once

#include <isa-l/crc.h>

#include <cstdint>

#include "stack/wire/bytes.h"

namespace roce::wire {

class Icrc {
 public:
  // `ip_udp_bth` starts at the IP header and holds at least IP + UDP + BTH;
  // only those bytes are consumed. Returns false (and leaves the state
  // unusable) if the span is too short or not IPv4/IPv6.
  bool Begin(ByteSpan ip_udp_bth);
  // Like Begin, but hashes the whole span (IP + UDP + BTH + whatever follows:
  // extension headers, an inline payload) in one pass; begun() is its size.
  bool BeginAll(ByteSpan l3);
  // Number of bytes Begin consumed (IP header + 8 + 12), or BeginAll's span size.
  size_t begun() const { return begun_; }
  void Update(ByteSpan more);
  uint32_t Value() const { return crc_; }
  // What Update does, from a Value(): the ICRC continued over `more`.
  static uint32_t Extend(uint32_t value, ByteSpan more);

 private:
  uint32_t crc_ = 0;
  size_t begun_ = 0;
};

// The code that hashes a short frame (see above): kAuto follows the CPU —
// the fold in VEX encoding where there is AVX, else in legacy SSE encoding
// (a legacy-SSE instruction pays a state-transition penalty while the upper
// halves of the vector registers are in use, as ISA-L's AVX-512 fold leaves
// them; icrc.cc), else the seed change + ISA-L. After a call into ISA-L the
// upper halves are cleared (VZEROUPPER) on CPUs with AVX. For tests, which
// compare every code the CPU can run: returns false (and changes nothing) if
// it cannot run `c`. Not thread-safe; the data path never calls it.
enum class IcrcCode : uint8_t { kAuto, kSeedIsal, kClmulSse, kClmulAvx };  // in order of what they need
bool SelectIcrcCode(IcrcCode c);

// Raw CRC-32 (zlib-compatible, chainable) as ISA-L computes it: the upper
// vector state is left as ISA-L leaves it (a baseline for the benchmarks).
// Inline, so that the baseline's loop calls ISA-L from the benchmark's own
// code: a wrapper in the library took 1.15x the time in the PGO build, whose
// training never runs it (tools/build-pgo).
inline uint32_t Crc32(uint32_t seed, ByteSpan data) { return crc32_gzip_refl(seed, data.data(), data.size()); }

// VZEROUPPER on a CPU with AVX, else nothing: what the stack does after its
// own ISA-L calls, for callers of Crc32 (the benchmarks' raw baseline).
void ClearUpperVectorState();

// ICRC of a whole packet from the IP header to just before the ICRC.
// Returns 0 and sets *ok=false if the span cannot hold IP+UDP+BTH.
uint32_t ComputeIcrc(ByteSpan l3_without_icrc, bool* ok = nullptr);

}  // namespace roce::wire
