// rc::PsnBitmap's word-at-a-time queries (chunk, next_set) against the bit
// at a time answer, across word edges and the 24-bit PSN wrap.
#include "rc/util/psn_bitmap.hpp"

#include <gtest/gtest.h>

#include <random>

namespace {

using dpdat::rc::PsnBitmap;
using dpdat::wire::Psn;
using Bits = PsnBitmap<4>;  // 256 PSNs

int32_t next_by_bits(const Bits& b, Psn base, int32_t d, int32_t end) {
  for (; d < end; ++d)
    if (b.test(base + d)) return d;
  return end;
}

TEST(PsnBitmap, ChunkAndNextSetAgreeWithSingleBits) {
  std::mt19937 rng(7);
  for (const uint32_t start : {0u, 60u, 0xFFFFC0u, 0xFFFFFEu, 0x123457u}) {
    for (int round = 0; round < 50; ++round) {
      Bits b;
      const Psn base(start);
      // Sparse and dense patterns inside the window.
      const int32_t density = 1 + round % 20;
      for (int32_t d = 0; d < Bits::kSpan; ++d)
        if (static_cast<int32_t>(rng() % 64) < density) b.set(base + d, true);
      for (int32_t d = 0; d < Bits::kSpan; d += 1 + static_cast<int32_t>(rng() % 7)) {
        uint64_t want = 0;
        for (int j = 0; j < 64; ++j)
          if (b.test(base + d + j)) want |= uint64_t{1} << j;
        ASSERT_EQ(b.chunk(base + d), want) << start << " d " << d;
        const int32_t end =
            d + static_cast<int32_t>(rng() % static_cast<uint32_t>(Bits::kSpan - d + 1));
        ASSERT_EQ(b.next_set(base, d, end), next_by_bits(b, base, d, end))
            << start << " d " << d << " end " << end;
      }
    }
  }
}

TEST(PsnBitmap, NextSetOnEmptyAndFullRanges) {
  Bits b;
  const Psn base(0xFFFFF0u);  // the window wraps the PSN space
  EXPECT_EQ(b.next_set(base, 0, Bits::kSpan), Bits::kSpan);
  b.set(base + 200, true);
  EXPECT_EQ(b.next_set(base, 0, Bits::kSpan), 200);
  EXPECT_EQ(b.next_set(base, 0, 200), 200);  // end is exclusive
  EXPECT_EQ(b.next_set(base, 201, Bits::kSpan), Bits::kSpan);
  EXPECT_EQ(Bits::first_bits(64), ~uint64_t{0});
  EXPECT_EQ(Bits::first_bits(3), uint64_t{7});
}

// set_chunk / clear_chunk set / clear exactly the bits given, at any offset
// within a word and across the window's wrap, and leave the others.
TEST(PsnBitmap, SetAndClearChunkMatchBitBySet) {
  std::mt19937_64 rng(7);
  for (const uint32_t start : {0u, 37u, 0xFFFFC0u, 0xFFFFFFu}) {
    Bits got, want;
    const Psn base(start);
    for (int round = 0; round < 200; ++round) {
      const auto d = static_cast<int32_t>(rng() % Bits::kSpan);
      const uint64_t bits = rng() & rng();
      const bool clear = round % 3 == 2;
      if (clear)
        got.clear_chunk(base + d, bits);
      else
        got.set_chunk(base + d, bits);
      for (int j = 0; j < 64; ++j)
        if ((bits >> j) & 1u) want.set(base + d + j, !clear);
      for (int32_t e = 0; e < Bits::kSpan; e += 64)
        ASSERT_EQ(got.chunk(base + e), want.chunk(base + e)) << start << " round " << round;
    }
  }
}

}  // namespace
