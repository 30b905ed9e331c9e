// Every CRC-32 path (portable, PCLMULQDQ, 256- and 512-bit VPCLMULQDQ), forced
// one at a time through crc32_update_with(), against zlib's crc32(): every
// length 0..9000 at aligned and odd offsets, non-zero initial values, chained
// updates and exactly-sized buffers.  A path the CPU lacks is skipped (and the
// skip names the missing instructions).
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "wire/crc32.hpp"

namespace dpdat::wire {
namespace {

constexpr size_t kMaxLen = 9000;
constexpr std::array<size_t, 6> kOffsets = {0, 1, 3, 7, 13, 63};

uint32_t zcrc(uint32_t crc, const uint8_t* p, size_t n) {
  return static_cast<uint32_t>(crc32(crc, p, static_cast<uInt>(n)));
}

const std::vector<uint8_t>& random_bytes() {
  static const std::vector<uint8_t> buf = [] {
    std::vector<uint8_t> b(kMaxLen + 128);
    std::mt19937 rng(4791);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    return b;
  }();
  return buf;
}

// zlib's CRC of every prefix buf[off .. off+len), len = 0..kMaxLen, from one
// initial value, built one byte at a time (zlib chained is still zlib).
std::vector<uint32_t> zlib_prefixes(size_t off, uint32_t init) {
  const uint8_t* p = random_bytes().data() + off;
  std::vector<uint32_t> r(kMaxLen + 1);
  r[0] = zcrc(init, p, 0);
  for (size_t len = 1; len <= kMaxLen; ++len) r[len] = zcrc(r[len - 1], p + len - 1, 1);
  return r;
}

const char* required_isa(Crc32Path p) {
  switch (p) {
    case Crc32Path::kPortable:
      return "none";
    case Crc32Path::kPclmul:
      return "PCLMULQDQ + SSE4.1";
    case Crc32Path::kVpclmul256:
      return "AVX2 + VPCLMULQDQ (and OS YMM state)";
    case Crc32Path::kVpclmul512:
      return "AVX-512F + VPCLMULQDQ (and OS ZMM state)";
  }
  return "?";
}

class Crc32PathTest : public ::testing::TestWithParam<Crc32Path> {
 protected:
  void SetUp() override {
    if (!crc32_path_supported(GetParam()))
      GTEST_SKIP() << "CPU lacks " << required_isa(GetParam()) << " for path "
                   << crc32_path_name(GetParam());
  }
  uint32_t run(uint32_t crc, const uint8_t* p, size_t n) const {
    return crc32_update_with(GetParam(), crc, p, n);
  }
};

TEST_P(Crc32PathTest, EveryLengthAtAlignedAndOddOffsetsMatchesZlib) {
  for (size_t off : kOffsets) {
    const auto ref = zlib_prefixes(off, 0);
    const uint8_t* p = random_bytes().data() + off;
    for (size_t len = 0; len <= kMaxLen; ++len)
      ASSERT_EQ(run(0, p, len), ref[len]) << "offset " << off << " length " << len;
  }
}

TEST_P(Crc32PathTest, NonZeroInitialValueMatchesZlib) {
  for (uint32_t init : {0x12345678u, 0xFFFFFFFFu}) {
    const auto ref = zlib_prefixes(5, init);
    const uint8_t* p = random_bytes().data() + 5;
    for (size_t len = 0; len <= kMaxLen; ++len)
      ASSERT_EQ(run(init, p, len), ref[len]) << "init " << init << " length " << len;
  }
}

TEST_P(Crc32PathTest, ChainedUpdatesEqualOneUpdate) {
  const uint8_t* p = random_bytes().data() + 3;
  for (size_t total : {size_t{64}, size_t{300}, size_t{1040}, size_t{4096}, size_t{9000}}) {
    const uint32_t whole = zcrc(0, p, total);
    for (size_t a = 0; a <= total; a += 1 + a / 5) {
      ASSERT_EQ(run(run(0, p, a), p + a, total - a), whole) << total << " split " << a;
      // Three pieces: [0, a) [a, b) [b, total) with b an odd distance on.
      const size_t b = std::min(total, a + 17 + (a % 250));
      ASSERT_EQ(run(run(run(0, p, a), p + a, b - a), p + b, total - b), whole)
          << total << " splits " << a << "," << b;
    }
  }
  // The shape the ICRC uses: a 48-byte masked header, then RETH + payload.
  const uint32_t hdr = run(0, p, 48);
  EXPECT_EQ(run(hdr, p + 48, 16 + 1024), zcrc(0, p, 48 + 16 + 1024));
}

TEST_P(Crc32PathTest, ExactlySizedBuffersAreNotOverread) {
  // Heap copies of exactly `len` bytes: ASan reports a read past the end.
  for (size_t len = 0; len <= 1100; ++len) {
    std::unique_ptr<uint8_t[]> b(new uint8_t[len == 0 ? 1 : len]);
    std::memcpy(b.get(), random_bytes().data(), len);
    ASSERT_EQ(run(0, b.get(), len), zcrc(0, random_bytes().data(), len)) << len;
  }
}

// crc32_update_masked(): the first 64 bytes OR'ed with a mask, against zlib
// over a masked copy; every length 0..2100 and the frame sizes around the
// PMTUs, several offsets and initial values, a random and the ICRC-like mask.
TEST_P(Crc32PathTest, MaskedHeadMatchesZlibOverAMaskedCopy) {
  std::array<uint8_t, 64> rnd{}, icrc_like{};
  std::mt19937 rng(1071);
  for (auto& b : rnd) b = static_cast<uint8_t>(rng() & rng());  // about a quarter of the bits
  for (size_t i = 0; i < 8; ++i) icrc_like[i] = 0xFF;
  icrc_like[9] = icrc_like[16] = icrc_like[18] = icrc_like[19] = 0xFF;
  icrc_like[34] = icrc_like[35] = icrc_like[40] = 0xFF;
  std::vector<size_t> lens;
  for (size_t n = 0; n <= 2100; ++n) lens.push_back(n);
  for (size_t n : {4150u, 4152u, 4164u, 8230u, 9000u}) lens.push_back(n);
  std::vector<uint8_t> copy(kMaxLen + 64);
  for (const auto* mask : {rnd.data(), icrc_like.data()}) {
    for (size_t off : {size_t{0}, size_t{6}, size_t{13}}) {
      const uint8_t* p = random_bytes().data() + off;
      for (uint32_t init : {0u, 0x9E3779B9u}) {
        for (size_t len : lens) {
          std::memcpy(copy.data(), p, len);
          for (size_t i = 0; i < std::min<size_t>(len, 64); ++i) copy[i] |= mask[i];
          ASSERT_EQ(crc32_update_masked_with(GetParam(), init, p, len, mask),
                    zcrc(init, copy.data(), len))
              << "offset " << off << " length " << len << " init " << init;
        }
      }
    }
  }
}

// crc32_copy_masked(): the payload lands behind the headers byte for byte,
// nothing past it is written, and the CRC equals zlib over the masked copy.
TEST_P(Crc32PathTest, CopyMaskedCopiesAndMatchesZlib) {
  std::array<uint8_t, 64> mask{};
  std::mt19937 rng(4792);
  for (auto& b : mask) b = static_cast<uint8_t>(rng() & rng() & rng());
  std::vector<size_t> ns;
  for (size_t n = 0; n <= 1300; n += (n < 300 ? 1 : 7)) ns.push_back(n);
  for (size_t n : {1024u, 1040u, 2048u, 4096u, 4100u, 4111u, 8192u}) ns.push_back(n);
  const auto& rnd = random_bytes();
  constexpr size_t kGuard = 64;
  for (size_t h : {size_t{0}, size_t{1}, size_t{17}, size_t{40}, size_t{48}, size_t{52}, size_t{63},
                   size_t{64}, size_t{65}, size_t{76}, size_t{104}, size_t{120}, size_t{200}}) {
    for (size_t n : ns) {
      const size_t src_off = 1 + (n % 13), head_off = 3 + (h % 5);
      std::vector<uint8_t> frame(head_off + h + n + kGuard, 0xA5);
      std::memcpy(frame.data() + head_off, rnd.data() + 100, h);  // the "headers"
      const uint8_t* src = rnd.data() + src_off;
      std::vector<uint8_t> want(h + n + 1);  // masked reference input (+1: never null)
      std::memcpy(want.data(), rnd.data() + 100, h);
      std::memcpy(want.data() + h, src, n);
      for (size_t i = 0; i < std::min<size_t>(h + n, 64); ++i) want[i] |= mask[i];
      const uint32_t got =
          crc32_copy_masked_with(GetParam(), 7, frame.data() + head_off, h, mask.data(), src, n);
      ASSERT_EQ(got, zcrc(7, want.data(), h + n)) << "h " << h << " n " << n;
      ASSERT_EQ(0, std::memcmp(frame.data() + head_off + h, src, n)) << "h " << h << " n " << n;
      ASSERT_EQ(0, std::memcmp(frame.data() + head_off, rnd.data() + 100, h)) << "headers changed";
      for (size_t i = head_off + h + n; i < frame.size(); ++i)
        ASSERT_EQ(frame[i], 0xA5) << "written past the payload: h " << h << " n " << n;
    }
  }
}

TEST_P(Crc32PathTest, CheckValue) {
  const auto* s = reinterpret_cast<const uint8_t*>("123456789");
  EXPECT_EQ(run(0, s, 9), 0xCBF43926u);
  std::vector<uint8_t> zeros(4096, 0), ones(4096, 0xFF);
  EXPECT_EQ(run(0, zeros.data(), zeros.size()), zcrc(0, zeros.data(), zeros.size()));
  EXPECT_EQ(run(0, ones.data(), ones.size()), zcrc(0, ones.data(), ones.size()));
}

INSTANTIATE_TEST_SUITE_P(Crc32, Crc32PathTest,
                         ::testing::Values(Crc32Path::kPortable, Crc32Path::kPclmul,
                                           Crc32Path::kVpclmul256, Crc32Path::kVpclmul512),
                         [](const ::testing::TestParamInfo<Crc32Path>& i) {
                           return std::string(crc32_path_name(i.param));
                         });

TEST(Crc32Dispatch, ActivePathIsSupportedAndNamed) {
  EXPECT_TRUE(crc32_path_supported(Crc32Path::kPortable));
  EXPECT_TRUE(crc32_path_supported(crc32_active_path()));
  EXPECT_STREQ(crc32_impl_name(), crc32_path_name(crc32_active_path()));
  std::string have;
  for (size_t i = 0; i < kCrc32PathCount; ++i)
    if (crc32_path_supported(static_cast<Crc32Path>(i)))
      have += std::string(have.empty() ? "" : " ") + crc32_path_name(static_cast<Crc32Path>(i));
  RecordProperty("crc32_paths", have);
  RecordProperty("crc32_active", crc32_impl_name());
  // Without DPDAT_CRC32 in the environment, the widest supported path wins.
  if (std::getenv("DPDAT_CRC32") == nullptr) {
    size_t widest = 0;
    for (size_t i = 0; i < kCrc32PathCount; ++i)
      if (crc32_path_supported(static_cast<Crc32Path>(i))) widest = i;
    EXPECT_EQ(static_cast<size_t>(crc32_active_path()), widest);
  }
}

TEST(Crc32Dispatch, UnsupportedPathFallsBackInsteadOfFaulting) {
  // Whatever this CPU lacks, forcing it must still give the right CRC.
  const auto* p = random_bytes().data();
  for (size_t i = 0; i < kCrc32PathCount; ++i)
    EXPECT_EQ(crc32_update_with(static_cast<Crc32Path>(i), 0, p, 1000), zcrc(0, p, 1000));
  EXPECT_EQ(crc32_update_with(static_cast<Crc32Path>(200), 0, p, 1000), zcrc(0, p, 1000));
  EXPECT_STREQ(crc32_path_name(static_cast<Crc32Path>(200)), "invalid");
}

}  // namespace
}  // namespace dpdat::wire
