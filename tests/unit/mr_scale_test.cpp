// Memory registration tables at scale: a table sized for a million regions
// allocates entry storage only as entries are handed out (chunks), holds
// exactly its limit, refuses the next, and reuses freed slots.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "rc/mr_table.hpp"

namespace dpdat::rc {
namespace {

TEST(MrScale, UnusedMillionEntryTableHoldsNoEntryStorage) {
  MrTable t(1u << 20, 1u << 20);
  EXPECT_EQ(t.storage_bytes(), 0u);
  uint8_t b[64] = {};
  uint32_t ctx = 0;
  ASSERT_TRUE(t.mr_register(1, b, 0x1000, sizeof(b), priv::kAll, &ctx));
  EXPECT_GT(t.storage_bytes(), 0u);
  EXPECT_LE(t.storage_bytes(), size_t{256} << 10);  // one chunk, not a million entries
}

TEST(MrScale, MillionLmrsAndRmrsThenTheNextRefused) {
  constexpr uint32_t kN = 1u << 20;
  MrTable t(kN, kN);
  uint8_t b[64] = {};
  std::vector<uint32_t> lctx(kN);
  for (uint32_t i = 0; i < kN; ++i)
    ASSERT_TRUE(t.mr_register(1, b, 0x1000, sizeof(b), priv::kAll, &lctx[i])) << i;
  uint32_t extra = 0;
  EXPECT_FALSE(t.mr_register(1, b, 0x1000, sizeof(b), priv::kAll, &extra));
  EXPECT_EQ(t.mr_count(), kN);
  std::vector<uint32_t> rh(kN);
  for (uint32_t i = 0; i < kN; ++i) ASSERT_TRUE(t.mw_alloc(1, &rh[i])) << i;
  EXPECT_FALSE(t.mw_alloc(1, &extra));
  // The last of each is usable: a local access through the last LMR, a bind
  // of the last RMR to it.
  AccessGrant g;
  EXPECT_EQ(t.check_local(lctx.back(), 1, 0x1000, 8, Access::kLocalRead, &g), AccessError::kOk);
  EXPECT_EQ(g.host, b);
  ASSERT_EQ(t.check_bind(rh.back(), lctx.back(), 0x1000, 8, priv::kRemoteRead, 1), BindError::kOk);
  const uint32_t rkey = t.do_bind(rh.back(), lctx.back(), 0x1000, 8, priv::kRemoteRead);
  EXPECT_EQ(t.check_remote(rkey, 1, 0x1000, 8, Access::kRemoteRead, &g), AccessError::kOk);
  // A freed slot is taken again; a context of its earlier life stays dead.
  bool in_use = false;
  EXPECT_EQ(t.mr_free(lctx[12345], &in_use), AccessError::kOk);
  EXPECT_EQ(t.mr_count(), kN - 1);
  uint32_t again = 0;
  ASSERT_TRUE(t.mr_register(1, b, 0x1000, sizeof(b), priv::kAll, &again));
  EXPECT_EQ(again >> 8, lctx[12345] >> 8);
  EXPECT_NE(t.check_local(lctx[12345], 1, 0x1000, 8, Access::kLocalRead, &g), AccessError::kOk);
  EXPECT_TRUE(t.mw_free(rh[7]));
  EXPECT_TRUE(t.mw_alloc(1, &extra));
  EXPECT_EQ(extra, rh[7]);
}

TEST(MrScale, ContextsBeyondTheHandedOutOnesAreInvalid) {
  MrTable t(1u << 20, 1u << 20);
  uint8_t b[8] = {};
  uint32_t ctx = 0;
  ASSERT_TRUE(t.mr_register(1, b, 0x1000, sizeof(b), priv::kAll, &ctx));
  AccessGrant g;
  // An index in a chunk never allocated, and one past the table.
  EXPECT_EQ(t.check_local((500000u << 8) | 1u, 1, 0x1000, 1, Access::kLocalRead, &g),
            AccessError::kInvalidContext);
  EXPECT_EQ(
      t.check_remote(MrTable::kMwBit | (900000u << 8) | 1u, 1, 0x1000, 1, Access::kRemoteRead, &g),
      AccessError::kInvalidContext);
  EXPECT_EQ(t.check_local((2000000u << 8) | 1u, 1, 0x1000, 1, Access::kLocalRead, &g),
            AccessError::kInvalidContext);
}

}  // namespace
}  // namespace dpdat::rc
