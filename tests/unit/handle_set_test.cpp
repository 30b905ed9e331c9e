// The handle registry's set (dat_core/handle_set.hpp): answers, growth,
// memory under churn, and readers racing a writer.

#include "dat_core/handle_set.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

using dpdat::dat::HandleSet;

// Addresses are only compared, never dereferenced.
const void* addr(uintptr_t i) { return reinterpret_cast<const void*>(0x100000 + i * 16); }

TEST(HandleSet, AnswersForInsertedErasedAndForeignPointers) {
  HandleSet s;
  EXPECT_FALSE(s.contains(nullptr));
  EXPECT_FALSE(s.insert(nullptr));
  EXPECT_FALSE(s.insert(reinterpret_cast<const void*>(0x1001)));  // not an object address
  EXPECT_TRUE(s.insert(addr(1)));
  EXPECT_FALSE(s.insert(addr(1)));  // already there
  EXPECT_TRUE(s.contains(addr(1)));
  EXPECT_FALSE(s.contains(addr(2)));
  EXPECT_FALSE(s.contains(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(addr(1)) | 1)));
  EXPECT_EQ(s.size(), 1u);
  EXPECT_TRUE(s.erase(addr(1)));
  EXPECT_FALSE(s.erase(addr(1)));  // gone already
  EXPECT_FALSE(s.erase(addr(2)));  // never there
  EXPECT_FALSE(s.contains(addr(1)));
  EXPECT_TRUE(s.insert(addr(1)));  // the allocator gave the address out again
  EXPECT_TRUE(s.contains(addr(1)));
  EXPECT_EQ(s.size(), 1u);
}

TEST(HandleSet, GrowsAndKeepsEveryLiveEntry) {
  HandleSet s;
  const size_t first = s.capacity();
  constexpr uintptr_t kN = 100000;
  for (uintptr_t i = 0; i < kN; ++i) ASSERT_TRUE(s.insert(addr(i)));
  for (uintptr_t i = 1; i < kN; i += 2) ASSERT_TRUE(s.erase(addr(i)));
  for (uintptr_t i = kN; i < 2 * kN; ++i) ASSERT_TRUE(s.insert(addr(i)));
  EXPECT_GT(s.capacity(), first);
  EXPECT_EQ(s.size(), kN / 2 + kN);
  size_t missing = 0, wrong = 0;
  for (uintptr_t i = 0; i < 2 * kN; ++i) {
    const bool live = i >= kN || i % 2 == 0;
    if (live && !s.contains(addr(i))) ++missing;
    if (!live && s.contains(addr(i))) ++wrong;
  }
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(wrong, 0u);
  // The retired tables together are smaller than the current one.
  EXPECT_LT(s.slots_allocated(), 2 * s.capacity());
}

TEST(HandleSet, ChurnOverReusedAddressesDoesNotGrow) {
  // Objects made and freed all day: the allocator hands the same blocks
  // out again, so the set must not grow with the number of operations.
  HandleSet s;
  for (uintptr_t i = 0; i < 64; ++i) ASSERT_TRUE(s.insert(addr(1000000 + i)));  // long-lived
  const size_t first = s.capacity();
  for (int round = 0; round < 2000; ++round) {
    for (uintptr_t i = 0; i < 256; ++i) ASSERT_TRUE(s.insert(addr(i)));
    for (uintptr_t i = 0; i < 256; ++i) ASSERT_TRUE(s.erase(addr(i)));
  }
  EXPECT_EQ(s.capacity(), first);
  EXPECT_EQ(s.slots_allocated(), first);
  EXPECT_EQ(s.size(), 64u);
  for (uintptr_t i = 0; i < 64; ++i) EXPECT_TRUE(s.contains(addr(1000000 + i)));
}

TEST(HandleSet, ReadersAlwaysSeeLiveEntriesWhileAWriterGrowsAndChurns) {
  HandleSet s;
  constexpr uintptr_t kStable = 512;
  for (uintptr_t i = 0; i < kStable; ++i) ASSERT_TRUE(s.insert(addr(i)));
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> missed{0}, phantom{0}, checks{0};
  auto reader = [&] {
    uint64_t n = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      for (uintptr_t i = 0; i < kStable; ++i) {
        if (!s.contains(addr(i))) missed.fetch_add(1);
        // Never inserted by anybody.
        if (s.contains(addr(10000000 + i))) phantom.fetch_add(1);
      }
      n += kStable;
    }
    checks.fetch_add(n);
  };
  std::thread r1(reader), r2(reader);
  // Growth several times over, with erases marking slots dead between.
  for (uintptr_t i = 0; i < 200000; ++i) {
    ASSERT_TRUE(s.insert(addr(kStable + i)));
    if (i % 3 == 0) {
      ASSERT_TRUE(s.erase(addr(kStable + i)));
    }
  }
  stop = true;
  r1.join();
  r2.join();
  EXPECT_GT(checks.load(), 0u);
  EXPECT_EQ(missed.load(), 0u);
  EXPECT_EQ(phantom.load(), 0u);
}

}  // namespace
