// SPDX-License-Identifier: MIT
// In-order placement: copying received payload into application memory so
// that the bytes become visible to other threads in ascending address order.
//
// ND2 adapters announce ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED, and programs
// rely on it: ndrpingpong (and MPI's eager protocols) poll the last byte of an
// RDMA Write's target and then read the rest of it. memcpy gives no such
// order: glibc's stores the tail before the head (for 512 B it stores the
// first 32 bytes last), so a poller on another core can see the last byte of
// a message while its first bytes are still the old ones (seen: nd-rpingpong
// --loopback under load, "data mismatch in a ping ... byte 0").
//
// PlaceInOrder stores ascending, never with a store that crosses a 16-byte
// boundary of the destination: a head of 1/2/4/8-byte stores up to 16-byte
// alignment, aligned 16-byte stores (32-byte with AVX2), then a tail of
// 8/4/2/1-byte stores. Each is one store instruction, naturally aligned, and
// the compiler may not reorder or merge them (volatile asm on x86-64); x86's
// total store order then makes them visible in that order. Another thread
// that sees byte k of the destination sees every byte before k.
// Other architectures: volatile byte stores after a release fence per chunk
// (correct, slower).
#pragma once

#include <cstddef>
#include <cstdint>

namespace roce::mem {

void PlaceInOrder(void* dst, const void* src, size_t len);

// PlaceInOrder, and the CRC-32 of the bytes placed (zlib's crc32: the
// reflected Ethernet polynomial, continued from `crc`; chainable) — what a
// receive path needs to place a payload before it knows the packet's ICRC is
// good (stack/rc: only where every byte placed lies inside a message that
// must be written again in full before it completes). On CPUs with AVX-512F
// and VPCLMULQDQ, spans of kPlaceCrcOnePassMin bytes and more are copied and
// folded in one pass over the source (64-byte loads folded by carry-less
// multiplies while their halves are stored, ascending and 32-byte aligned);
// elsewhere and for shorter spans it is ISA-L's CRC, then PlaceInOrder. The
// same bytes are stored in the same order either way. Leaves the upper halves
// of the vector registers clean (VZEROUPPER).
uint32_t PlaceInOrderCrc32(void* dst, const void* src, size_t len, uint32_t crc);
inline constexpr size_t kPlaceCrcOnePassMin = 512;
// PlaceInOrderCrc32 of pieces placed one after another from dst (a payload
// a NIC's receive segments cut, gathered into one buffer): the same bytes,
// the same order, the CRC of them all. With the one-pass code, a dst aligned
// to 32 bytes and kPlaceCrcOnePassMin bytes or more in up to
// kPlaceGatherMax non-empty pieces, the fold runs through the pieces as one
// stream (a 64-byte block that straddles two is assembled first) with one
// tail and one reduction in all, instead of a head, a tail and a reduction
// per piece; otherwise PlaceInOrderCrc32 piece by piece.
struct Piece {
  const void* p;
  size_t len;
};
inline constexpr size_t kPlaceGatherMax = 16;
uint32_t PlaceGatherCrc32(void* dst, const Piece* pieces, size_t n, uint32_t crc);
// Whether PlaceInOrderCrc32 takes one pass on this CPU. For tests: force the
// two-pass code (false) or back to what the CPU can do (true); returns the
// previous setting. Not thread-safe; the data path never calls it.
bool PlaceCrcOnePass();
bool SetPlaceCrcOnePass(bool on);

}  // namespace roce::mem
