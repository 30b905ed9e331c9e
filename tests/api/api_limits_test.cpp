// Interface limits through libdat's public API: set per IA name (config keys
// max_eps=, max_lmrs=, max_rmrs=, max_evds=, max_pzs=), reported by
// dat_ia_query exactly, each reached cleanly and the next request refused
// with DAT_INSUFFICIENT_RESOURCES and the resource's subtype; a freed object
// makes room again.  The default limits are reported too (65,536 endpoints,
// 1 M memory regions).  One custom IA name on end 0 of the process's
// in-process net_ring link (never opens dpdat0/dpdat1).

#include <dat/udat.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

constexpr DAT_COUNT kEps = 3, kLmrs = 4, kRmrs = 2, kEvds = 5, kPzs = 2;

class api_limits : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(setenv("DPDAT_IA_LIMITS_SMALL",
                     "ring=0;ip=192.168.77.1;progress=inline;max_eps=3;max_lmrs=4;max_rmrs=2;"
                     "max_evds=5;max_pzs=2",
                     1),
              0);
    ASSERT_EQ(dat_ia_open(const_cast<char*>("limits-small"), 8, &async_, &ia_), DAT_SUCCESS);
  }
  void TearDown() override {
    if (ia_ != DAT_HANDLE_NULL) {
      EXPECT_EQ(dat_ia_close(ia_, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    }
  }
  static void expect_refused(DAT_RETURN r, DAT_RETURN subtype) {
    EXPECT_EQ(DAT_GET_TYPE(r), DAT_INSUFFICIENT_RESOURCES) << std::hex << r;
    EXPECT_EQ(DAT_GET_SUBTYPE(r), subtype) << std::hex << r;
  }

  DAT_IA_HANDLE ia_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_ = DAT_HANDLE_NULL;
};

TEST_F(api_limits, QueryReportsTheConfiguredLimits) {
  DAT_IA_ATTR a;
  ASSERT_EQ(dat_ia_query(ia_, nullptr, DAT_IA_FIELD_ALL, &a, 0, nullptr), DAT_SUCCESS);
  EXPECT_EQ(a.max_eps, kEps);
  EXPECT_EQ(a.max_lmrs, kLmrs);
  EXPECT_EQ(a.max_rmrs, kRmrs);
  EXPECT_EQ(a.max_evds, kEvds);
  EXPECT_EQ(a.max_pzs, kPzs);
}

TEST_F(api_limits, EachLimitReachedThenTheNextRefused) {
  // PZs.
  std::vector<DAT_PZ_HANDLE> pzs(kPzs);
  for (auto& pz : pzs) ASSERT_EQ(dat_pz_create(ia_, &pz), DAT_SUCCESS);
  DAT_PZ_HANDLE extra_pz = DAT_HANDLE_NULL;
  expect_refused(dat_pz_create(ia_, &extra_pz), DAT_RESOURCE_PROTECTION_DOMAIN);
  ASSERT_EQ(dat_pz_free(pzs[1]), DAT_SUCCESS);
  ASSERT_EQ(dat_pz_create(ia_, &pzs[1]), DAT_SUCCESS);

  // EVDs: the IA's own async EVD is one of them.
  std::vector<DAT_EVD_HANDLE> evds(kEvds - 1);
  for (auto& e : evds)
    ASSERT_EQ(dat_evd_create(ia_, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &e), DAT_SUCCESS);
  DAT_EVD_HANDLE extra_evd = DAT_HANDLE_NULL;
  expect_refused(dat_evd_create(ia_, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &extra_evd),
                 DAT_RESOURCE_TEVD);

  // EPs.
  std::vector<DAT_EP_HANDLE> eps(kEps);
  for (auto& ep : eps)
    ASSERT_EQ(dat_ep_create(ia_, pzs[0], evds[0], evds[1], DAT_HANDLE_NULL, nullptr, &ep),
              DAT_SUCCESS);
  DAT_EP_HANDLE extra_ep = DAT_HANDLE_NULL;
  expect_refused(dat_ep_create(ia_, pzs[0], evds[0], evds[1], DAT_HANDLE_NULL, nullptr, &extra_ep),
                 DAT_RESOURCE_TEP);
  ASSERT_EQ(dat_ep_free(eps[0]), DAT_SUCCESS);
  ASSERT_EQ(dat_ep_create(ia_, pzs[0], evds[0], evds[1], DAT_HANDLE_NULL, nullptr, &eps[0]),
            DAT_SUCCESS);

  // LMRs.
  std::vector<uint8_t> buf(4096);
  std::vector<DAT_LMR_HANDLE> lmrs(kLmrs);
  DAT_LMR_CONTEXT lctx = 0;
  DAT_RMR_CONTEXT rctx = 0;
  DAT_VLEN reg_len = 0;
  DAT_VADDR reg_va = 0;
  auto reg = [&](DAT_LMR_HANDLE* out) {
    DAT_REGION_DESCRIPTION r;
    r.for_va = buf.data();
    return dat_lmr_create(ia_, DAT_MEM_TYPE_VIRTUAL, r, buf.size(), pzs[0], DAT_MEM_PRIV_ALL_FLAG,
                          out, &lctx, &rctx, &reg_len, &reg_va);
  };
  for (auto& l : lmrs) ASSERT_EQ(reg(&l), DAT_SUCCESS);
  DAT_LMR_HANDLE extra_lmr = DAT_HANDLE_NULL;
  expect_refused(reg(&extra_lmr), DAT_RESOURCE_MEMORY_REGION);
  ASSERT_EQ(dat_lmr_free(lmrs[2]), DAT_SUCCESS);
  ASSERT_EQ(reg(&lmrs[2]), DAT_SUCCESS);

  // RMRs.
  std::vector<DAT_RMR_HANDLE> rmrs(kRmrs);
  for (auto& r : rmrs) ASSERT_EQ(dat_rmr_create(pzs[0], &r), DAT_SUCCESS);
  DAT_RMR_HANDLE extra_rmr = DAT_HANDLE_NULL;
  expect_refused(dat_rmr_create(pzs[0], &extra_rmr), DAT_RESOURCE_MEMORY_REGION);
  ASSERT_EQ(dat_rmr_free(rmrs[0]), DAT_SUCCESS);
  ASSERT_EQ(dat_rmr_create(pzs[0], &rmrs[0]), DAT_SUCCESS);
  // dat_ia_close (abrupt, TearDown) frees everything.
}

TEST(api_limits_default, DefaultLimitsAre64KEndpointsAnd1MRegions) {
  ASSERT_EQ(setenv("DPDAT_IA_LIMITS_DEFAULT", "ring=1;ip=192.168.77.2;progress=inline", 1), 0);
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ia_open(const_cast<char*>("limits-default"), 8, &async, &ia), DAT_SUCCESS);
  DAT_IA_ATTR a;
  ASSERT_EQ(dat_ia_query(ia, nullptr, DAT_IA_FIELD_ALL, &a, 0, nullptr), DAT_SUCCESS);
  EXPECT_EQ(a.max_eps, 65536);
  EXPECT_EQ(a.max_lmrs, 1 << 20);
  EXPECT_EQ(a.max_rmrs, 1 << 20);
  EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

}  // namespace
