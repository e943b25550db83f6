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

}  // namespace roce::mem
