// SPDX-License-Identifier: MIT
// Memory table: token layout (index + key), stale / invalidated / guessed
// tokens, local tokens never valid remotely, overflow-safe bounds, rights
// (READ_SINK for a Read's target), ND2's registration rules, windows (token
// valid only once the bind executes, rebind changes it, Deregister refused
// while bound), and a full table.
#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "stack/mem/memory_table.h"

namespace roce::mem {
namespace {

constexpr uint64_t kAddr = 0x7f0000001000ull;
constexpr uint32_t kAll = kLocalWrite | kRemoteRead | kRemoteWrite;

RegionInfo Reg(MemoryTable& t, uint64_t addr = kAddr, uint64_t len = 4096, uint32_t access = kAll) {
  RegionInfo r;
  EXPECT_EQ(t.RegisterRegion(addr, len, access, &r), Result::kOk);
  return r;
}

uint32_t BoundWindow(MemoryTable& t, const RegionInfo& r, uint64_t addr, uint64_t len,
                     uint32_t access, uint32_t* mw_out = nullptr) {
  uint32_t mw = 0;
  EXPECT_EQ(t.CreateWindow(&mw), Result::kOk);
  const uint32_t tok = t.AllocateWindowToken(mw);
  EXPECT_EQ(t.BindWindow(mw, tok, r.handle, addr, len, access), Result::kOk);
  if (mw_out) *mw_out = mw;
  return tok;
}

TEST(MemTable, TokenIsIndexAndKey) {
  MemoryTable t(1);
  for (int i = 0; i < 50; i++) {
    RegionInfo r = Reg(t, kAddr + static_cast<uint64_t>(i) * 4096);
    EXPECT_NE(r.handle, 0u);  // slot 0 is never used: token 0 is never valid
    EXPECT_EQ(TokenIndex(r.local_token), r.handle);
    EXPECT_EQ(TokenIndex(r.remote_token), r.handle);
    EXPECT_NE(r.local_token & kKeyMask, r.remote_token & kKeyMask);
  }
  EXPECT_EQ(t.live_regions(), 50u);
}

TEST(MemTable, LocalTokenNeverValidRemotelyAndViceVersa) {
  MemoryTable t(2, 64);
  std::vector<RegionInfo> live;
  for (int round = 0; round < 3000; round++) {
    RegionInfo r = Reg(t, kAddr, 4096, kAll | kReadSink);
    EXPECT_EQ(t.CheckRemote(r.local_token, kAddr, 1, kRemoteRead), Result::kBadToken);
    EXPECT_EQ(t.CheckRemote(r.local_token, kAddr, 1, 0), Result::kBadToken);
    EXPECT_EQ(t.CheckLocal(r.remote_token, kAddr, 1, 0), Result::kBadToken);
    EXPECT_EQ(t.CheckRemote(r.remote_token, kAddr, 1, kRemoteRead), Result::kOk);
    EXPECT_EQ(t.CheckLocal(r.local_token, kAddr, 1, kLocalWrite), Result::kOk);
    live.push_back(r);
    if (live.size() > 40) {  // churn: slots get reused with new keys
      const size_t k = static_cast<size_t>(round) % live.size();
      EXPECT_EQ(t.DeregisterRegion(live[k].handle), Result::kOk);
      live.erase(live.begin() + static_cast<long>(k));
    }
  }
}

TEST(MemTable, GuessedKeysFail) {
  MemoryTable t(3, 16);
  RegionInfo r = Reg(t);
  int remote_ok = 0, local_ok = 0;
  for (uint32_t key = 0; key <= kKeyMask; key++) {
    const uint32_t tok = (r.handle << kKeyBits) | key;
    remote_ok += t.CheckRemote(tok, kAddr, 8, kRemoteRead) == Result::kOk;
    local_ok += t.CheckLocal(tok, kAddr, 8, 0) == Result::kOk;
  }
  EXPECT_EQ(remote_ok, 1);
  EXPECT_EQ(local_ok, 1);
  // Other indices: 0, a free slot, beyond the table, all ones.
  for (uint32_t idx : {0u, 17u, 1000u, (1u << 20) - 1}) {
    for (uint32_t key : {0u, r.remote_token & kKeyMask, kKeyMask}) {
      const uint32_t tok = (idx << kKeyBits) | key;
      EXPECT_EQ(t.CheckRemote(tok, kAddr, 8, kRemoteRead), Result::kBadToken) << std::hex << tok;
      EXPECT_EQ(t.CheckLocal(tok, kAddr, 8, 0), Result::kBadToken) << std::hex << tok;
    }
  }
  for (uint32_t idx = 1; idx < 16; idx++) {
    if (idx == r.handle) continue;
    const uint32_t tok = (idx << kKeyBits) | (r.remote_token & kKeyMask);
    EXPECT_EQ(t.CheckRemote(tok, kAddr, 8, kRemoteRead), Result::kBadToken);
  }
}

// One slot, reused over and over: a deregistered region's tokens stay
// invalid for the next 255 reuses (the key moves by 1..16 each time, 12 bits).
TEST(MemTable, StaleRegionTokensStayInvalidFor255Reuses) {
  MemoryTable t(4, 2);  // a single usable slot
  for (int start = 0; start < 20; start++) {
    RegionInfo old = Reg(t);
    ASSERT_EQ(t.DeregisterRegion(old.handle), Result::kOk);
    EXPECT_EQ(t.CheckRemote(old.remote_token, kAddr, 1, 0), Result::kBadToken);
    for (int reuse = 0; reuse < 255; reuse++) {
      RegionInfo r = Reg(t);
      ASSERT_EQ(r.handle, old.handle);
      ASSERT_EQ(t.CheckRemote(old.remote_token, kAddr, 1, 0), Result::kBadToken) << reuse;
      ASSERT_EQ(t.CheckLocal(old.local_token, kAddr, 1, 0), Result::kBadToken) << reuse;
      // Nor does the old local token become the new remote one.
      ASSERT_EQ(t.CheckRemote(old.local_token, kAddr, 1, 0), Result::kBadToken) << reuse;
      ASSERT_EQ(t.DeregisterRegion(r.handle), Result::kOk);
    }
  }
}

// The same slot used alternately by regions and windows (bound to a
// long-lived region elsewhere): no token that was ever valid remotely comes
// back while the slot is reused fewer than 255 times.
TEST(MemTable, StaleTokensStayInvalidAcrossRegionAndWindowReuse) {
  int violations = 0;
  for (uint64_t seed = 1; seed <= 64; seed++) {
  MemoryTable t(seed, 3);  // slots 1 and 2
  RegionInfo keep = Reg(t, kAddr + 0x100000, 4096);
  std::vector<uint32_t> issued;  // every token that was valid remotely, in order
  for (int round = 0; round < 600; round++) {
    if (round % 2 == 0) {
      RegionInfo r = Reg(t);
      issued.push_back(r.remote_token);
      ASSERT_EQ(t.DeregisterRegion(r.handle), Result::kOk);
    } else {
      uint32_t mw;
      ASSERT_EQ(t.CreateWindow(&mw), Result::kOk);
      for (int k = 0; k < 1 + round % 3; k++) {  // one to three binds
        const uint32_t tok = t.AllocateWindowToken(mw);
        ASSERT_EQ(t.BindWindow(mw, tok, keep.handle, kAddr + 0x100000, 4096, kRemoteRead), Result::kOk);
        issued.push_back(tok);
      }
      ASSERT_EQ(t.DestroyWindow(mw), Result::kOk);
    }
    // The newest token must differ from every token of the last 255 reuses.
    const uint32_t newest = issued.back();
    const size_t from = issued.size() > 256 ? issued.size() - 256 : 0;
    for (size_t i = from; i + 1 < issued.size(); i++) {
      if (issued[i] == newest) {
        if (violations++ < 5)
          ADD_FAILURE() << "seed " << seed << ": token " << std::hex << newest << " issued again after "
                        << std::dec << (issued.size() - 1 - i) << " issues (round " << round << ")";
      }
    }
  }
  }
  EXPECT_EQ(violations, 0);
}

TEST(MemTable, BoundsAreOverflowSafe) {
  MemoryTable t(6);
  RegionInfo r = Reg(t, kAddr, 0x1000);
  const uint32_t tok = r.remote_token;
  EXPECT_EQ(t.CheckRemote(tok, kAddr, 0x1000, 0), Result::kOk);
  EXPECT_EQ(t.CheckRemote(tok, kAddr + 0xFFF, 1, 0), Result::kOk);
  EXPECT_EQ(t.CheckRemote(tok, kAddr + 0x1000, 1, 0), Result::kOutOfBounds);
  EXPECT_EQ(t.CheckRemote(tok, kAddr + 1, 0x1000, 0), Result::kOutOfBounds);
  EXPECT_EQ(t.CheckRemote(tok, kAddr - 1, 2, 0), Result::kOutOfBounds);
  EXPECT_EQ(t.CheckRemote(tok, kAddr, 0x1001, 0), Result::kOutOfBounds);
  // Lengths that wrap the address space.
  EXPECT_EQ(t.CheckRemote(tok, kAddr, UINT64_MAX, 0), Result::kOutOfBounds);
  EXPECT_EQ(t.CheckRemote(tok, kAddr + 0x800, UINT64_MAX - kAddr - 0x7FF, 0), Result::kOutOfBounds);
  EXPECT_EQ(t.CheckRemote(tok, kAddr + 0x800, 0 - (kAddr + 0x800), 0), Result::kOutOfBounds);
  EXPECT_EQ(t.CheckRemote(tok, UINT64_MAX, 2, 0), Result::kOutOfBounds);
  EXPECT_EQ(t.CheckRemote(tok, UINT64_MAX - 0x7FF, 0x1000, 0), Result::kOutOfBounds);
  EXPECT_EQ(t.CheckLocal(r.local_token, kAddr + 0x10, UINT64_MAX - 0xF, 0), Result::kOutOfBounds);
  // Zero length: valid whatever the token and address (IBTA).
  EXPECT_EQ(t.CheckRemote(0, 0, 0, kRemoteWrite), Result::kOk);
  EXPECT_EQ(t.CheckRemote(0xDEADBEEF, UINT64_MAX, 0, kRemoteRead), Result::kOk);
  EXPECT_EQ(t.CheckLocal(0xDEADBEEF, UINT64_MAX, 0, kLocalWrite), Result::kOk);

  // A region in the last pages of the address space.
  const uint64_t top = 0 - uint64_t{0x2000};  // 2^64 - 8 KiB
  RegionInfo hi = Reg(t, top, 0x1000);
  EXPECT_EQ(t.CheckRemote(hi.remote_token, top + 0xFFF, 1, 0), Result::kOk);
  EXPECT_EQ(t.CheckRemote(hi.remote_token, top + 0xFFF, 2, 0), Result::kOutOfBounds);
  EXPECT_EQ(t.CheckRemote(hi.remote_token, top, UINT64_MAX, 0), Result::kOutOfBounds);
  EXPECT_EQ(t.CheckRemote(hi.remote_token, top + 0x1000, 0x1000, 0), Result::kOutOfBounds);
  RegionInfo out;
  EXPECT_EQ(t.RegisterRegion(top, 0x2001, kAll, &out), Result::kInvalidParameter);  // wraps
  EXPECT_EQ(t.RegisterRegion(0x1000, UINT64_MAX, kAll, &out), Result::kInvalidParameter);
  EXPECT_EQ(t.RegisterRegion(UINT64_MAX, 2, kAll, &out), Result::kInvalidParameter);
  // A region as long as can be: any in-range access works, nothing past it.
  RegionInfo huge = Reg(t, 1, UINT64_MAX - 1);
  EXPECT_EQ(t.CheckRemote(huge.remote_token, 1, UINT64_MAX - 1, 0), Result::kOk);
  EXPECT_EQ(t.CheckRemote(huge.remote_token, 0, 1, 0), Result::kOutOfBounds);
  EXPECT_EQ(t.CheckRemote(huge.remote_token, 2, UINT64_MAX - 1, 0), Result::kOutOfBounds);
  EXPECT_EQ(t.CheckRemote(huge.remote_token, UINT64_MAX - 1, 1, 0), Result::kOk);
  EXPECT_EQ(t.CheckRemote(huge.remote_token, UINT64_MAX, 1, 0), Result::kOutOfBounds);
}

TEST(MemTable, RegistrationRules) {
  MemoryTable t(7);
  RegionInfo r;
  EXPECT_EQ(t.RegisterRegion(0, 0, kAll, &r), Result::kInvalidParameter);      // Register(NULL, 0)
  EXPECT_EQ(t.RegisterRegion(kAddr, 0, kAll, &r), Result::kInvalidBufferSize);  // Register(buf, 0)
  EXPECT_EQ(t.RegisterRegion(kAddr, 64, kRemoteWrite, &r), Result::kInvalidParameter);  // needs local write
  EXPECT_EQ(t.RegisterRegion(kAddr, 64, 0x10, &r), Result::kInvalidParameter);  // unknown right
  EXPECT_EQ(t.live_regions(), 0u);
  EXPECT_EQ(t.RegisterRegion(kAddr, 64, 0, &r), Result::kOk);  // no rights: a send source
  EXPECT_EQ(t.DeregisterRegion(r.handle), Result::kOk);
  EXPECT_EQ(t.DeregisterRegion(r.handle), Result::kInvalidHandle);
  EXPECT_EQ(t.DeregisterRegion(0), Result::kInvalidHandle);
  EXPECT_EQ(t.DeregisterRegion(1u << 20), Result::kInvalidHandle);
  uint32_t mw;
  ASSERT_EQ(t.CreateWindow(&mw), Result::kOk);
  EXPECT_EQ(t.DeregisterRegion(mw), Result::kInvalidHandle);
  EXPECT_EQ(t.DestroyWindow(mw), Result::kOk);
  EXPECT_EQ(t.DestroyWindow(mw), Result::kInvalidHandle);
}

TEST(MemTable, Rights) {
  MemoryTable t(8);
  RegionInfo sink = Reg(t, kAddr, 64, kReadSink);
  RegionInfo lw = Reg(t, kAddr, 64, kLocalWrite);
  RegionInfo none = Reg(t, kAddr, 64, 0);
  RegionInfo rr = Reg(t, kAddr, 64, kRemoteRead);
  RegionInfo rw = Reg(t, kAddr, 64, kLocalWrite | kRemoteWrite);
  // A Read's local target: local write or READ_SINK.
  EXPECT_EQ(t.CheckLocal(sink.local_token, kAddr, 64, kReadSink), Result::kOk);
  EXPECT_EQ(t.CheckLocal(lw.local_token, kAddr, 64, kReadSink), Result::kOk);
  EXPECT_EQ(t.CheckLocal(none.local_token, kAddr, 64, kReadSink), Result::kNoAccess);
  EXPECT_EQ(t.CheckLocal(rr.local_token, kAddr, 64, kReadSink), Result::kNoAccess);
  // READ_SINK is not local write (a receive cannot land there).
  EXPECT_EQ(t.CheckLocal(sink.local_token, kAddr, 64, kLocalWrite), Result::kNoAccess);
  // Any region is a send source.
  for (const RegionInfo* r : {&sink, &lw, &none, &rr, &rw})
    EXPECT_EQ(t.CheckLocal(r->local_token, kAddr, 64, 0), Result::kOk);
  // Remote rights.
  EXPECT_EQ(t.CheckRemote(rr.remote_token, kAddr, 64, kRemoteRead), Result::kOk);
  EXPECT_EQ(t.CheckRemote(rr.remote_token, kAddr, 64, kRemoteWrite), Result::kNoAccess);
  EXPECT_EQ(t.CheckRemote(rw.remote_token, kAddr, 64, kRemoteWrite), Result::kOk);
  EXPECT_EQ(t.CheckRemote(rw.remote_token, kAddr, 64, kRemoteRead), Result::kNoAccess);
  EXPECT_EQ(t.CheckRemote(lw.remote_token, kAddr, 64, kRemoteRead), Result::kNoAccess);
  EXPECT_EQ(t.CheckRemote(sink.remote_token, kAddr, 64, kRemoteWrite), Result::kNoAccess);
  // Out of bounds is reported before rights.
  EXPECT_EQ(t.CheckRemote(rr.remote_token, kAddr, 65, kRemoteWrite), Result::kOutOfBounds);
}

TEST(MemTable, WindowTokenValidOnlyAfterBindExecutes) {
  MemoryTable t(9);
  RegionInfo r = Reg(t, kAddr, 8192);
  uint32_t mw;
  ASSERT_EQ(t.CreateWindow(&mw), Result::kOk);
  EXPECT_EQ(t.live_windows(), 1u);
  const uint32_t tok = t.AllocateWindowToken(mw);
  EXPECT_EQ(TokenIndex(tok), mw);
  EXPECT_EQ(t.WindowToken(mw), tok);  // what the application is told
  EXPECT_EQ(t.CheckRemote(tok, kAddr, 8, kRemoteRead), Result::kBadToken);  // not bound yet
  ASSERT_EQ(t.BindWindow(mw, tok, r.handle, kAddr + 4096, 1024, kRemoteRead | kRemoteWrite), Result::kOk);
  EXPECT_EQ(t.CheckRemote(tok, kAddr + 4096, 1024, kRemoteRead | kRemoteWrite), Result::kOk);
  EXPECT_EQ(t.CheckRemote(tok, kAddr + 4095, 2, kRemoteRead), Result::kOutOfBounds);
  EXPECT_EQ(t.CheckRemote(tok, kAddr + 4096 + 1023, 2, kRemoteRead), Result::kOutOfBounds);
  // A window token is never a local token.
  EXPECT_EQ(t.CheckLocal(tok, kAddr + 4096, 8, 0), Result::kBadToken);
  // Rebind: a new token; the old one works until the new bind executes.
  const uint32_t tok2 = t.AllocateWindowToken(mw);
  EXPECT_NE(tok2, tok);
  EXPECT_EQ(TokenIndex(tok2), mw);
  EXPECT_EQ(t.CheckRemote(tok, kAddr + 4096, 8, kRemoteRead), Result::kOk);
  EXPECT_EQ(t.CheckRemote(tok2, kAddr, 8, kRemoteRead), Result::kBadToken);
  ASSERT_EQ(t.BindWindow(mw, tok2, r.handle, kAddr, 100, kRemoteRead), Result::kOk);
  EXPECT_EQ(t.CheckRemote(tok, kAddr + 4096, 8, kRemoteRead), Result::kBadToken);
  EXPECT_EQ(t.CheckRemote(tok2, kAddr, 100, kRemoteRead), Result::kOk);
  EXPECT_EQ(t.CheckRemote(tok2, kAddr, 8, kRemoteWrite), Result::kNoAccess);
  EXPECT_EQ(t.WindowToken(mw), tok2);
  // Invalidate: the token dies; the window can be bound again with a new one.
  ASSERT_EQ(t.InvalidateWindow(mw), Result::kOk);
  EXPECT_EQ(t.CheckRemote(tok2, kAddr, 8, kRemoteRead), Result::kBadToken);
  const uint32_t tok3 = t.AllocateWindowToken(mw);
  EXPECT_NE(tok3, tok2);
  EXPECT_NE(tok3, tok);
  ASSERT_EQ(t.BindWindow(mw, tok3, r.handle, kAddr, 100, kRemoteRead), Result::kOk);
  EXPECT_EQ(t.CheckRemote(tok3, kAddr, 8, kRemoteRead), Result::kOk);
  EXPECT_EQ(t.CheckRemote(tok2, kAddr, 8, kRemoteRead), Result::kBadToken);
}

TEST(MemTable, BindRules) {
  MemoryTable t(10);
  RegionInfo r = Reg(t, kAddr, 4096, kLocalWrite | kRemoteRead);
  RegionInfo ro = Reg(t, kAddr + 8192, 4096, kRemoteRead);  // no local write
  uint32_t mw, other;
  ASSERT_EQ(t.CreateWindow(&mw), Result::kOk);
  ASSERT_EQ(t.CreateWindow(&other), Result::kOk);
  const uint32_t tok = t.AllocateWindowToken(mw);
  EXPECT_EQ(t.BindWindow(mw, tok, r.handle, kAddr + 1, 4096, kRemoteRead), Result::kOutOfBounds);
  EXPECT_EQ(t.BindWindow(mw, tok, r.handle, kAddr - 1, 2, kRemoteRead), Result::kOutOfBounds);
  EXPECT_EQ(t.BindWindow(mw, tok, ro.handle, kAddr + 8192, 64, kRemoteWrite), Result::kNoAccess);
  EXPECT_EQ(t.BindWindow(mw, tok, r.handle, kAddr, 64, kLocalWrite), Result::kInvalidParameter);
  EXPECT_EQ(t.BindWindow(other, tok, r.handle, kAddr, 64, kRemoteRead), Result::kInvalidHandle);  // token of mw
  EXPECT_EQ(t.BindWindow(mw, tok, mw, kAddr, 64, kRemoteRead), Result::kInvalidHandle);  // not a region
  EXPECT_EQ(t.BindWindow(r.handle, tok, r.handle, kAddr, 64, kRemoteRead), Result::kInvalidHandle);
  EXPECT_EQ(t.CheckRemote(tok, kAddr, 8, kRemoteRead), Result::kBadToken);  // nothing got bound
  // A window may grant remote write over a region with local write only
  // (the region itself has no remote write).
  EXPECT_EQ(t.BindWindow(mw, tok, r.handle, kAddr, 64, kRemoteWrite), Result::kOk);
  EXPECT_EQ(t.CheckRemote(tok, kAddr, 64, kRemoteWrite), Result::kOk);
}

TEST(MemTable, DeregisterBusyWhileWindowBound) {
  MemoryTable t(11);
  RegionInfo r = Reg(t);
  uint32_t mw1, mw2;
  const uint32_t t1 = BoundWindow(t, r, kAddr, 64, kRemoteRead, &mw1);
  BoundWindow(t, r, kAddr + 64, 64, kRemoteRead, &mw2);
  EXPECT_EQ(t.DeregisterRegion(r.handle), Result::kBusy);
  EXPECT_EQ(t.CheckRemote(r.remote_token, kAddr, 8, kRemoteRead), Result::kOk);  // still registered
  ASSERT_EQ(t.InvalidateWindow(mw1), Result::kOk);
  EXPECT_EQ(t.DeregisterRegion(r.handle), Result::kBusy);  // mw2 still bound
  ASSERT_EQ(t.DestroyWindow(mw2), Result::kOk);             // destroy unbinds
  EXPECT_EQ(t.DeregisterRegion(r.handle), Result::kOk);
  EXPECT_EQ(t.CheckRemote(r.remote_token, kAddr, 8, kRemoteRead), Result::kBadToken);
  EXPECT_EQ(t.CheckRemote(t1, kAddr, 8, kRemoteRead), Result::kBadToken);
  // Rebinding a window moves its hold from one region to the other.
  RegionInfo a = Reg(t), b = Reg(t);
  uint32_t mw;
  BoundWindow(t, a, kAddr, 64, kRemoteRead, &mw);
  const uint32_t tk = t.AllocateWindowToken(mw);
  ASSERT_EQ(t.BindWindow(mw, tk, b.handle, kAddr, 64, kRemoteRead), Result::kOk);
  EXPECT_EQ(t.DeregisterRegion(a.handle), Result::kOk);
  EXPECT_EQ(t.DeregisterRegion(b.handle), Result::kBusy);
}

TEST(MemTable, RemoteInvalidate) {
  MemoryTable t(12);
  RegionInfo r = Reg(t);
  uint32_t mw;
  const uint32_t tok = BoundWindow(t, r, kAddr, 64, kRemoteRead, &mw);
  EXPECT_EQ(t.InvalidateRemote(r.remote_token), Result::kBadToken);  // a region is not a window
  EXPECT_EQ(t.InvalidateRemote(tok ^ 1), Result::kBadToken);         // wrong key
  EXPECT_EQ(t.InvalidateRemote(0), Result::kBadToken);
  EXPECT_EQ(t.CheckRemote(tok, kAddr, 8, kRemoteRead), Result::kOk);
  EXPECT_EQ(t.InvalidateRemote(tok), Result::kOk);
  EXPECT_EQ(t.CheckRemote(tok, kAddr, 8, kRemoteRead), Result::kBadToken);
  EXPECT_EQ(t.InvalidateRemote(tok), Result::kBadToken);  // already invalid
  EXPECT_EQ(t.DeregisterRegion(r.handle), Result::kOk);   // no longer bound
}

TEST(MemTable, TableFull) {
  MemoryTable t(13, 4);  // slots 1..3
  RegionInfo r1 = Reg(t), r2 = Reg(t);
  uint32_t mw;
  ASSERT_EQ(t.CreateWindow(&mw), Result::kOk);
  RegionInfo r;
  EXPECT_EQ(t.RegisterRegion(kAddr, 64, kAll, &r), Result::kNoResources);
  uint32_t mw2;
  EXPECT_EQ(t.CreateWindow(&mw2), Result::kNoResources);
  EXPECT_EQ(t.live_regions(), 2u);
  EXPECT_EQ(t.live_windows(), 1u);
  ASSERT_EQ(t.DeregisterRegion(r1.handle), Result::kOk);
  EXPECT_EQ(t.RegisterRegion(kAddr, 64, kAll, &r), Result::kOk);
  EXPECT_EQ(r.handle, r1.handle);
  EXPECT_NE(r.remote_token, r1.remote_token);
  (void)r2;
}

TEST(MemTable, SeedMakesKeysDeterministic) {
  MemoryTable a(42), b(42), c(43);
  RegionInfo ra = Reg(a), rb = Reg(b), rc = Reg(c);
  EXPECT_EQ(ra.remote_token, rb.remote_token);
  EXPECT_EQ(ra.local_token, rb.local_token);
  EXPECT_NE(ra.remote_token, rc.remote_token);
}

}  // namespace
}  // namespace roce::mem
