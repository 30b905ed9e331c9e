// Memory registration tables: contexts, the access check's every verdict,
// bind rules, unbind, frees, and a randomized run against a reference model.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "rc/mr_table.hpp"

namespace dpdat::rc {
namespace {

constexpr uint32_t kL = priv::kLocalRead | priv::kLocalWrite;

struct Fixture : ::testing::Test {
  MrTable t{8, 4};
  std::vector<uint8_t> mem = std::vector<uint8_t>(4096);
  uint8_t* host = mem.data();
  uint64_t va = 0x10000;  // zero-based style: va differs from the host address
  uint32_t reg(uint32_t privs, uint32_t pz = 1, uint64_t len = 4096) {
    uint32_t ctx = 0;
    EXPECT_TRUE(t.mr_register(pz, host, va, len, privs, &ctx));
    return ctx;
  }
  AccessError remote(uint32_t key, uint64_t a, uint64_t n, Access acc, uint32_t pz = 1,
                     AccessGrant* g = nullptr) {
    AccessGrant tmp;
    return t.check_remote(key, pz, a, n, acc, g ? g : &tmp);
  }
  AccessError local(uint32_t key, uint64_t a, uint64_t n, Access acc, uint32_t pz = 1) {
    AccessGrant g;
    return t.check_local(key, pz, a, n, acc, &g);
  }
};

using MrCore = Fixture;

TEST_F(MrCore, ContextsEncodeTableAndNeverZero) {
  const uint32_t l = reg(priv::kAll);
  EXPECT_NE(l, 0u);
  EXPECT_EQ(l & MrTable::kMwBit, 0u);
  uint32_t r = 0;
  ASSERT_TRUE(t.mw_alloc(1, &r));
  ASSERT_EQ(t.check_bind(r, l, va, 100, priv::kRemoteRead, 1), BindError::kOk);
  const uint32_t rc = t.do_bind(r, l, va, 100, priv::kRemoteRead);
  EXPECT_NE(rc & MrTable::kMwBit, 0u);
  EXPECT_EQ(remote(0, va, 1, Access::kRemoteRead), AccessError::kInvalidContext);
}

TEST_F(MrCore, LocalChecks) {
  const uint32_t l = reg(kL);
  EXPECT_EQ(local(l, va, 4096, Access::kLocalRead), AccessError::kOk);
  EXPECT_EQ(local(l, va - 1, 1, Access::kLocalRead), AccessError::kOutOfBounds);
  EXPECT_EQ(local(l, va, 4097, Access::kLocalRead), AccessError::kOutOfBounds);
  EXPECT_EQ(local(l, va + 4096, 1, Access::kLocalWrite), AccessError::kOutOfBounds);
  EXPECT_EQ(local(l, va + 4096, 0, Access::kLocalWrite),
            AccessError::kOk);  // zero-length at the end
  EXPECT_EQ(local(l, va, 1, Access::kLocalRead, 2), AccessError::kPzMismatch);
  EXPECT_EQ(local(l, va, 1, Access::kRemoteRead), AccessError::kNoPrivilege);
  EXPECT_EQ(local(l ^ 0x2, va, 1, Access::kLocalRead),
            AccessError::kStaleContext);  // other key byte
  EXPECT_EQ(local(l | MrTable::kMwBit, va, 1, Access::kLocalRead), AccessError::kInvalidContext);
  EXPECT_EQ(local(0x7FFF'FF01u, va, 1, Access::kLocalRead), AccessError::kInvalidContext);
  const uint32_t ro = reg(priv::kLocalRead);
  EXPECT_EQ(local(ro, va, 1, Access::kLocalWrite), AccessError::kNoPrivilege);
  const uint32_t wo = reg(priv::kLocalWrite);
  EXPECT_EQ(local(wo, va, 1, Access::kLocalRead), AccessError::kNoPrivilege);
}

TEST_F(MrCore, RemoteChecksThroughTheLmrContext) {
  const uint32_t l = reg(kL | priv::kRemoteRead);
  AccessGrant g;
  EXPECT_EQ(remote(l, va + 10, 20, Access::kRemoteRead, 1, &g), AccessError::kOk);
  EXPECT_EQ(g.host, host + 10);
  EXPECT_EQ(remote(l, va, 8, Access::kRemoteWrite), AccessError::kNoPrivilege);
  EXPECT_EQ(remote(l, va, 8, Access::kRemoteAtomic), AccessError::kNoPrivilege);
  EXPECT_EQ(remote(l, va, 8, Access::kRemoteRead, 7), AccessError::kPzMismatch);
  EXPECT_EQ(remote(l, ~uint64_t{0} - 3, 8, Access::kRemoteRead), AccessError::kLengthOverflow);
  EXPECT_EQ(remote(l, va - 1, 8, Access::kRemoteRead), AccessError::kOutOfBounds);
  EXPECT_EQ(remote(l, va + 4089, 8, Access::kRemoteRead), AccessError::kOutOfBounds);
  EXPECT_EQ(remote(l, va + 4088, 8, Access::kRemoteRead), AccessError::kOk);
  const uint32_t at = reg(kL | priv::kRemoteAtomic);
  EXPECT_EQ(remote(at, va + 8, 8, Access::kRemoteAtomic), AccessError::kOk);
  EXPECT_EQ(remote(at, va + 4, 8, Access::kRemoteAtomic), AccessError::kMisaligned);
  EXPECT_EQ(remote(at, va + 8, 4, Access::kRemoteAtomic), AccessError::kMisaligned);
  EXPECT_EQ(remote(at, va, 8, Access::kLocalRead), AccessError::kNoPrivilege);
}

// A local-only MR over the whole user address space (libfabric's buffers
// without a descriptor): any local access inside, no remote access through
// its key, no MW bound to it, freed like any other.
TEST_F(MrCore, LocalOnlyServesLocalAccessesAndNothingRemote) {
  constexpr uint64_t kBase = 4096, kEnd = uint64_t{1} << 56;
  uint32_t l = 0;
  ASSERT_TRUE(
      t.mr_register_local_only(1, reinterpret_cast<uint8_t*>(kBase), kBase, kEnd - kBase, &l));
  AccessGrant g;
  const auto a = reinterpret_cast<uintptr_t>(host);
  ASSERT_EQ(t.check_local(l, 1, a, 4096, Access::kLocalRead, &g), AccessError::kOk);
  EXPECT_EQ(g.host, host);
  EXPECT_EQ(local(l, a, 4096, Access::kLocalWrite), AccessError::kOk);
  EXPECT_EQ(local(l, 0, 1, Access::kLocalRead), AccessError::kOutOfBounds);
  EXPECT_EQ(local(l, kEnd - 1, 2, Access::kLocalRead), AccessError::kOutOfBounds);
  EXPECT_EQ(local(l, a, 1, Access::kLocalRead, 2), AccessError::kPzMismatch);
  for (Access acc : {Access::kRemoteRead, Access::kRemoteWrite, Access::kRemoteAtomic})
    EXPECT_EQ(remote(l, a, 8, acc), AccessError::kNoPrivilege);
  MrInfo info;
  ASSERT_TRUE(t.mr_query(l, &info));
  EXPECT_TRUE(info.local_only);
  uint32_t r = 0;
  ASSERT_TRUE(t.mw_alloc(1, &r));
  EXPECT_EQ(t.check_bind(r, l, a, 8, priv::kRemoteRead, 1), BindError::kInvalidMr);
  // An ordinary MR of the same table still binds.
  const uint32_t m = reg(kL);
  ASSERT_TRUE(t.mr_query(m, &info));
  EXPECT_FALSE(info.local_only);
  EXPECT_EQ(t.check_bind(r, m, va, 8, priv::kRemoteRead, 1), BindError::kOk);
  bool in_use = true;
  EXPECT_EQ(t.mr_free(l, &in_use), AccessError::kOk);
  EXPECT_FALSE(in_use);
  EXPECT_EQ(local(l, a, 1, Access::kLocalRead), AccessError::kInvalidContext);
}

TEST_F(MrCore, StaleAfterFreeAndSlotReuse) {
  const uint32_t l = reg(priv::kAll);
  bool in_use = true;
  ASSERT_EQ(t.mr_free(l, &in_use), AccessError::kOk);
  EXPECT_FALSE(in_use);
  EXPECT_EQ(remote(l, va, 1, Access::kRemoteRead), AccessError::kInvalidContext);
  EXPECT_EQ(t.mr_free(l, &in_use), AccessError::kInvalidContext);
  const uint32_t l2 = reg(priv::kAll);
  EXPECT_EQ(l2 >> 8, l >> 8);  // same slot ...
  EXPECT_NE(l2, l);            // ... new key
  EXPECT_EQ(remote(l, va, 1, Access::kRemoteRead), AccessError::kStaleContext);
  EXPECT_EQ(t.mr_free(l, &in_use), AccessError::kStaleContext);
  EXPECT_EQ(remote(l2, va, 1, Access::kRemoteRead), AccessError::kOk);
  MrInfo info;
  ASSERT_TRUE(t.mr_query(l2, &info));
  EXPECT_EQ(info.length, 4096u);
  EXPECT_FALSE(t.mr_query(l, &info));
}

TEST_F(MrCore, TableFullAndBadPrivileges) {
  std::vector<uint32_t> c;
  for (int i = 0; i < 8; ++i) c.push_back(reg(kL));
  uint32_t x = 0;
  EXPECT_FALSE(t.mr_register(1, host, va, 1, kL, &x));
  EXPECT_FALSE(MrTable(2, 2).mr_register(1, host, va, 1, 0x100, &x));  // unknown bit
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(t.mw_alloc(1, &r));
  EXPECT_FALSE(t.mw_alloc(1, &r));
}

TEST_F(MrCore, BindRules) {
  const uint32_t rw = reg(kL);
  const uint32_t ro = reg(priv::kLocalRead);
  const uint32_t wo = reg(priv::kLocalWrite);
  const uint32_t other_pz = reg(kL, 2);
  uint32_t r = 0;
  ASSERT_TRUE(t.mw_alloc(1, &r));
  EXPECT_EQ(t.check_bind(r + 3, rw, va, 8, priv::kRemoteRead, 1), BindError::kInvalidMw);
  EXPECT_EQ(t.check_bind(r, rw ^ 1, va, 8, priv::kRemoteRead, 1), BindError::kInvalidMr);
  EXPECT_EQ(t.check_bind(r, rw, va, 8, priv::kRemoteRead, 2), BindError::kPzMismatch);
  EXPECT_EQ(t.check_bind(r, other_pz, va, 8, priv::kRemoteRead, 1), BindError::kPzMismatch);
  EXPECT_EQ(t.check_bind(r, wo, va, 8, priv::kRemoteRead, 1), BindError::kPrivilegeNotCovered);
  EXPECT_EQ(t.check_bind(r, ro, va, 8, priv::kRemoteWrite, 1), BindError::kPrivilegeNotCovered);
  EXPECT_EQ(t.check_bind(r, ro, va, 8, priv::kRemoteAtomic, 1), BindError::kPrivilegeNotCovered);
  EXPECT_EQ(t.check_bind(r, rw, va, 8, priv::kLocalRead, 1), BindError::kInvalidPrivileges);
  EXPECT_EQ(t.check_bind(r, rw, va - 1, 8, priv::kRemoteRead, 1), BindError::kOutOfBounds);
  EXPECT_EQ(t.check_bind(r, rw, va + 4090, 8, priv::kRemoteRead, 1), BindError::kOutOfBounds);
  EXPECT_EQ(t.check_bind(r, rw, ~uint64_t{0}, 8, priv::kRemoteRead, 1), BindError::kOutOfBounds);
  EXPECT_EQ(t.check_bind(r, ro, va, 8, priv::kRemoteRead, 1), BindError::kOk);
  EXPECT_EQ(t.check_bind(r, rw, va, 8, priv::kRemoteAtomic | priv::kRemoteWrite, 1),
            BindError::kOk);
  // check_bind is pure: nothing changed.
  MwInfo ri;
  ASSERT_TRUE(t.mw_query(r, &ri));
  EXPECT_FALSE(ri.bound);
  // A bind outstanding on another queue pair makes the RMR busy.
  ASSERT_TRUE(t.mark_bind_pending(r, 5));
  EXPECT_FALSE(t.mark_bind_pending(r, 6));
  EXPECT_EQ(t.check_bind(r, rw, va, 8, priv::kRemoteRead, 1, 6), BindError::kMwBusy);
  EXPECT_EQ(t.check_bind(r, rw, va, 8, priv::kRemoteRead, 1, 5), BindError::kOk);
  t.clear_bind_pending(r);
  EXPECT_EQ(t.check_bind(r, rw, va, 8, priv::kRemoteRead, 1, 6), BindError::kOk);
  EXPECT_TRUE(t.mark_bind_pending(r, 6));
  t.do_bind(r, rw, va, 8, priv::kRemoteRead);  // executing the bind releases the RMR
  EXPECT_TRUE(t.mark_bind_pending(r, 5));
}

TEST_F(MrCore, RebindUnbindAndLmrFreeWhileBound) {
  const uint32_t l = reg(kL);
  uint32_t r = 0;
  ASSERT_TRUE(t.mw_alloc(1, &r));
  // Never bound: a made-up RMR context for the slot is unbound or invalid.
  const uint32_t c1 = t.do_bind(r, l, va + 100, 200, priv::kRemoteRead | priv::kRemoteWrite);
  AccessGrant g;
  EXPECT_EQ(remote(c1, va + 100, 200, Access::kRemoteWrite, 1, &g), AccessError::kOk);
  EXPECT_EQ(g.host, host + 100);
  EXPECT_EQ(remote(c1, va + 99, 2, Access::kRemoteWrite), AccessError::kOutOfBounds);
  EXPECT_EQ(remote(c1, va + 299, 2, Access::kRemoteWrite), AccessError::kOutOfBounds);
  EXPECT_EQ(remote(c1, va + 100, 8, Access::kRemoteAtomic), AccessError::kNoPrivilege);
  EXPECT_EQ(remote(c1, va + 100, 8, Access::kRemoteRead, 3), AccessError::kPzMismatch);
  MrInfo li;
  ASSERT_TRUE(t.mr_query(l, &li));
  EXPECT_EQ(li.bound_mws, 1u);
  bool in_use = false;
  EXPECT_EQ(t.mr_free(l, &in_use), AccessError::kOk);
  EXPECT_TRUE(in_use);  // refused while bound
  // Re-bind: the old context is dead, the new one works.
  const uint32_t c2 = t.do_bind(r, l, va, 50, priv::kRemoteRead);
  EXPECT_NE(c1, c2);
  EXPECT_EQ(remote(c1, va + 100, 8, Access::kRemoteRead), AccessError::kStaleContext);
  EXPECT_EQ(remote(c2, va, 50, Access::kRemoteRead), AccessError::kOk);
  ASSERT_TRUE(t.mr_query(l, &li));
  EXPECT_EQ(li.bound_mws, 1u);
  // Unbind (length 0): nothing matches, the LMR can go.
  ASSERT_EQ(t.check_bind(r, 0, 0, 0, 0, 1), BindError::kOk);
  const uint32_t c3 = t.do_bind(r, 0, 0, 0, 0);
  EXPECT_EQ(remote(c2, va, 1, Access::kRemoteRead), AccessError::kStaleContext);
  EXPECT_EQ(remote(c3, va, 1, Access::kRemoteRead), AccessError::kUnbound);
  ASSERT_TRUE(t.mr_query(l, &li));
  EXPECT_EQ(li.bound_mws, 0u);
  EXPECT_EQ(t.mr_free(l, &in_use), AccessError::kOk);
  EXPECT_FALSE(in_use);
  // rmr_free: its last context never matches again.
  const uint32_t l2 = reg(kL);
  const uint32_t c4 = t.do_bind(r, l2, va, 8, priv::kRemoteRead);
  EXPECT_TRUE(t.mw_free(r));
  EXPECT_EQ(remote(c4, va, 8, Access::kRemoteRead), AccessError::kInvalidContext);
  ASSERT_TRUE(t.mr_query(l2, &li));
  EXPECT_EQ(li.bound_mws, 0u);
  EXPECT_FALSE(t.mw_free(r));
  EXPECT_EQ(t.check_bind(r, l2, va, 8, priv::kRemoteRead, 1), BindError::kInvalidMw);
}

// Key bytes of one slot's successive registrations: never 0, never the
// previous one, and spread: the step from one key to the next is not a
// constant (a counter's step is always 1), nor a few values.  With 2000
// draws uniform over 254 steps each step is seen ~8 times; a counter puts
// all 2000 on one.  The bounds fail by chance with probability < 1e-20.
std::vector<uint8_t> slot_keys(MrTable& t, int n, bool rmr) {
  std::vector<uint8_t> keys;
  std::vector<uint8_t> mem(64);
  uint32_t l = 0, r = 0;
  if (rmr) {
    EXPECT_TRUE(t.mr_register(1, mem.data(), 0, 64, kL, &l));
    EXPECT_TRUE(t.mw_alloc(1, &r));
  }
  for (int i = 0; i < n; ++i) {
    uint32_t ctx = 0;
    if (rmr) {
      const uint32_t want = t.mw_predict_rkey(r, 0);
      ctx = t.do_bind(r, l, 0, 8, priv::kRemoteRead);
      EXPECT_EQ(ctx, want);
    } else {
      bool in_use = false;
      EXPECT_TRUE(t.mr_register(1, mem.data(), 0, 64, kL, &ctx));
      EXPECT_EQ(t.mr_free(ctx, &in_use), AccessError::kOk);
    }
    EXPECT_EQ((ctx & ~MrTable::kMwBit) >> 8, rmr ? r : 0u);  // the same slot every time
    keys.push_back(static_cast<uint8_t>(ctx & 0xFF));
  }
  return keys;
}

void expect_unpredictable(const std::vector<uint8_t>& keys) {
  std::map<int, int> steps;
  std::map<int, int> values;
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_NE(keys[i], 0);
    values[keys[i]]++;
    if (i == 0) continue;
    ASSERT_NE(keys[i], keys[i - 1]) << i;
    steps[(keys[i] - keys[i - 1] + 255) % 255]++;
  }
  int top = 0;
  for (auto& [d, n] : steps) top = std::max(top, n);
  EXPECT_LT(top, 60) << "one step from key to key dominates: predictable";
  EXPECT_GT(steps.size(), 200u);
  EXPECT_GT(values.size(), 240u);  // all of 1..255 in use
}

TEST(MrKeys, ReRegistrationsOfOneSlotAreUnpredictable) {
  MrTable t(1, 1);
  expect_unpredictable(slot_keys(t, 2000, false));
  expect_unpredictable(slot_keys(t, 2000, true));
}

TEST(MrKeys, EachTableDrawsItsOwnSequence) {
  // Two tables put through the same operations give other keys: the
  // sequence is seeded per table, not fixed.  Equal by chance: 254^-31.
  MrTable a(1, 1), b(1, 1);
  EXPECT_NE(slot_keys(a, 32, false), slot_keys(b, 32, false));
}

TEST(MrKeys, AGivenSecretReplaysTheSameKeys) {
  // The fuzzing seam: one secret, the same keys; another secret, others.
  MrTable a(1, 1, 7, 9), b(1, 1, 7, 9), c(1, 1, 8, 9);
  const auto ka = slot_keys(a, 32, false);
  EXPECT_EQ(ka, slot_keys(b, 32, false));
  EXPECT_NE(ka, slot_keys(c, 32, false));
  expect_unpredictable(slot_keys(a, 2000, true));
}

TEST(MrKeys, PredictedRmrContextsMatchTheBindsThatFollowAndOldOnesAreRefused) {
  MrTable t(2, 2);
  std::vector<uint8_t> mem(64);
  uint32_t l = 0, r = 0;
  ASSERT_TRUE(t.mr_register(1, mem.data(), 0, 64, kL, &l));
  ASSERT_TRUE(t.mw_alloc(1, &r));
  std::vector<uint32_t> want;
  for (uint32_t i = 0; i < 5; ++i) want.push_back(t.mw_predict_rkey(r, i));
  uint32_t prev = 0;
  for (uint32_t i = 0; i < 5; ++i) {
    const uint32_t ctx = t.do_bind(r, l, 0, 8, priv::kRemoteRead);
    EXPECT_EQ(ctx, want[i]);
    AccessGrant g;
    EXPECT_EQ(t.check_remote(ctx, 1, 0, 8, Access::kRemoteRead, &g), AccessError::kOk);
    if (prev != 0) {
      EXPECT_EQ(t.check_remote(prev, 1, 0, 8, Access::kRemoteRead, &g), AccessError::kStaleContext);
    }
    prev = ctx;
  }
  // Freed and allocated again: the slot's next bind is not its last context.
  ASSERT_TRUE(t.mw_free(r));
  uint32_t r2 = 0;
  ASSERT_TRUE(t.mw_alloc(1, &r2));
  ASSERT_EQ(r2, r);
  const uint32_t next = t.do_bind(r2, l, 0, 8, priv::kRemoteRead);
  EXPECT_NE(next, prev);
  AccessGrant g;
  EXPECT_EQ(t.check_remote(prev, 1, 0, 8, Access::kRemoteRead, &g), AccessError::kStaleContext);
}

TEST_F(MrCore, NamesCoverEveryValue) {
  for (size_t i = 0; i < static_cast<size_t>(AccessError::kCount); ++i)
    EXPECT_NE(access_error_name(static_cast<AccessError>(i)), "invalid");
  for (size_t i = 0; i < static_cast<size_t>(BindError::kCount); ++i)
    EXPECT_NE(bind_error_name(static_cast<BindError>(i)), "invalid");
}

// Randomized operations against a plain reference model.
TEST(MrCoreRandom, AgreesWithReferenceModel) {
  MrTable t(16, 8);
  std::vector<uint8_t> mem(1 << 16);
  struct RefLmr {
    uint32_t pz;
    uint64_t va, len;
    uint32_t privs;
    int bound = 0;
  };
  struct RefRmr {
    uint32_t pz;
    bool bound = false;
    uint32_t lmr = 0;
    uint64_t va = 0, len = 0;
    uint32_t privs = 0;
    uint32_t ctx = 0;
  };
  std::map<uint32_t, RefLmr> lmrs;  // live contexts
  std::map<uint32_t, RefRmr> rmrs;  // by handle
  std::vector<uint32_t> dead;       // contexts that must never match again
  std::mt19937_64 rng(2024);
  auto pick = [&](auto& m) {
    auto it = m.begin();
    std::advance(it, static_cast<long>(rng() % m.size()));
    return it;
  };
  for (int step = 0; step < 5000; ++step) {
    const auto op = static_cast<unsigned>(rng() % 6);
    if (op == 0 && lmrs.size() < 16) {
      const auto pz = static_cast<uint32_t>(1 + rng() % 2);
      const uint64_t va = rng() % 30000, len = rng() % 30000;
      const uint32_t privs = static_cast<uint32_t>(rng()) & priv::kValidMask;
      uint32_t ctx = 0;
      ASSERT_TRUE(t.mr_register(pz, mem.data() + va, va, len, privs, &ctx));
      ASSERT_EQ(lmrs.count(ctx), 0u);
      lmrs[ctx] = RefLmr{pz, va, len, privs};
      std::erase(dead, ctx);  // a dead context drawn again is live now
    } else if (op == 1 && !lmrs.empty()) {
      auto it = pick(lmrs);
      bool in_use = false;
      ASSERT_EQ(t.mr_free(it->first, &in_use), AccessError::kOk);
      ASSERT_EQ(in_use, it->second.bound > 0);
      if (!in_use) {
        dead.push_back(it->first);
        lmrs.erase(it);
      }
    } else if (op == 2 && rmrs.size() < 8) {
      uint32_t h = 0;
      const auto pz = static_cast<uint32_t>(1 + rng() % 2);
      ASSERT_TRUE(t.mw_alloc(pz, &h));
      rmrs[h] = RefRmr{pz};
    } else if (op == 3 && !rmrs.empty() && !lmrs.empty()) {
      auto r = pick(rmrs);
      auto l = pick(lmrs);
      const uint64_t va = l->second.va + rng() % (l->second.len + 2);
      const uint64_t len = rng() % 4 == 0 ? 0 : rng() % 2000;
      const uint32_t privs = static_cast<uint32_t>(rng()) &
                             (priv::kRemoteRead | priv::kRemoteWrite | priv::kRemoteAtomic);
      const uint32_t pz = r->second.pz;
      const BindError e = t.check_bind(r->first, l->first, va, len, privs, pz);
      // Reference verdict.
      BindError want = BindError::kOk;
      const auto& L = l->second;
      if (len != 0) {
        if (L.pz != pz)
          want = BindError::kPzMismatch;
        else if (((privs & priv::kRemoteRead) && !(L.privs & priv::kLocalRead)) ||
                 ((privs & priv::kRemoteWrite) && !(L.privs & priv::kLocalWrite)) ||
                 ((privs & priv::kRemoteAtomic) && (L.privs & kL) != kL))
          want = BindError::kPrivilegeNotCovered;
        else if (va < L.va || va + len > L.va + L.len)
          want = BindError::kOutOfBounds;
      }
      ASSERT_EQ(e, want) << step;
      if (e == BindError::kOk) {
        if (r->second.bound) lmrs[r->second.lmr].bound--;
        if (r->second.ctx) dead.push_back(r->second.ctx);
        const uint32_t ctx = t.do_bind(r->first, l->first, va, len, privs);
        r->second = RefRmr{pz, len != 0, l->first, va, len, privs, ctx};
        if (len != 0) std::erase(dead, ctx);
        if (len != 0) l->second.bound++;
      }
    } else if (op == 4 && !rmrs.empty()) {
      auto r = pick(rmrs);
      if (r->second.bound) lmrs[r->second.lmr].bound--;
      if (r->second.ctx) dead.push_back(r->second.ctx);
      ASSERT_TRUE(t.mw_free(r->first));
      rmrs.erase(r);
    } else {
      // Check random accesses through live LMR and RMR contexts.
      for (auto& [ctx, L] : lmrs) {
        const uint64_t va = L.va + rng() % (L.len + 4);
        const uint64_t n = rng() % 64;
        AccessGrant g;
        const AccessError e = t.check_remote(ctx, L.pz, va, n, Access::kRemoteRead, &g);
        const bool ok = (L.privs & priv::kRemoteRead) && va >= L.va && va + n <= L.va + L.len;
        ASSERT_EQ(e == AccessError::kOk, ok) << step;
        if (ok) {
          ASSERT_EQ(g.host, mem.data() + va);
        }
      }
      for (auto& [h, R] : rmrs) {
        if (!R.bound) continue;
        AccessGrant g;
        const AccessError e = t.check_remote(R.ctx, R.pz, R.va, R.len, Access::kRemoteWrite, &g);
        ASSERT_EQ(e == AccessError::kOk, (R.privs & priv::kRemoteWrite) != 0) << step;
      }
      for (uint32_t d : dead) {
        // Random key bytes: a context two or more lives old may be the
        // slot's current one again (probability 1/254); any other must fail.
        bool live = lmrs.count(d) != 0;
        for (auto& [h, R] : rmrs) live = live || (R.bound && R.ctx == d);
        if (live) continue;
        AccessGrant g;
        ASSERT_NE(t.check_remote(d, 1, 0, 0, Access::kRemoteRead, &g), AccessError::kOk);
        ASSERT_NE(t.check_remote(d, 2, 0, 0, Access::kRemoteRead, &g), AccessError::kOk);
      }
    }
  }
}

}  // namespace
}  // namespace dpdat::rc
