// dat_headers.layout: include/dat matches DAT 1.2 where it must (struct
// layouts, 1.2-only values) and Debian's DAT 2.0 headers wherever the two
// versions agree.
#include <dat/udat.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <map>
#include <string>

#include "named_value.h"

namespace {

// --- Memory triplets: the 1.2 layout with the pad word --------------------------
static_assert(sizeof(DAT_LMR_TRIPLET) == 24);
static_assert(offsetof(DAT_LMR_TRIPLET, lmr_context) == 0);
static_assert(offsetof(DAT_LMR_TRIPLET, pad) == 4);
static_assert(offsetof(DAT_LMR_TRIPLET, virtual_address) == 8);
static_assert(offsetof(DAT_LMR_TRIPLET, segment_length) == 16);
static_assert(sizeof(DAT_RMR_TRIPLET) == 24);
static_assert(offsetof(DAT_RMR_TRIPLET, rmr_context) == 0);
static_assert(offsetof(DAT_RMR_TRIPLET, pad) == 4);
static_assert(offsetof(DAT_RMR_TRIPLET, target_address) == 8);
static_assert(offsetof(DAT_RMR_TRIPLET, segment_length) == 16);

// --- Scalar types ----------------------------------------------------------------
static_assert(sizeof(DAT_UINT32) == 4 && sizeof(DAT_UINT64) == 8);
static_assert(sizeof(DAT_LMR_CONTEXT) == 4 && sizeof(DAT_RMR_CONTEXT) == 4);
static_assert(sizeof(DAT_VADDR) == 8 && sizeof(DAT_VLEN) == 8);
static_assert(sizeof(DAT_CONN_QUAL) == 8 && sizeof(DAT_TIMEOUT) == 4);
static_assert(sizeof(DAT_RETURN) == 4);
static_assert(sizeof(DAT_CONTEXT) == 8);
static_assert(sizeof(DAT_IA_ATTR_MASK) == 8 && sizeof(DAT_EP_PARAM_MASK) == 8 &&
              sizeof(DAT_PROVIDER_ATTR_MASK) == 8);
static_assert(sizeof(DAT_LMR_COOKIE) == sizeof(void*));  // a pointer to the 40-byte id
static_assert(sizeof(*DAT_LMR_COOKIE{}) == 40);

// --- 1.2-only values (from the DAT 1.2 headers; 2.0 differs) -----------------------
static_assert(DAT_VERSION_MAJOR == 1 && DAT_VERSION_MINOR == 2);
static_assert(DAT_NOT_IMPLEMENTED == 0x0FFF0000);
static_assert(DAT_INVALID_HANDLE_SRQ == 25 && DAT_INVALID_HANDLE1 == 26);
static_assert(DAT_INVALID_ARG1 == 36 && DAT_INVALID_STATE_EP_UNCONNECTED == 46);
static_assert(DAT_INVALID_STATE_SRQ_IN_USE == 86 && DAT_PRIVILEGES_READ == 87);
static_assert(DAT_THREAD_SAFETY_NOT_FOUND == 101);
static_assert(DAT_MEM_TYPE_SO_VIRTUAL == 3);
static_assert(DAT_SRQ_STATE_OPERATIONAL == 0 && DAT_SRQ_STATE_ERROR == 1);
static_assert(DAT_PZ_SAME == 1 && DAT_PZ_SHAREABLE == 2);
static_assert(DAT_CONNECT_MULTIPATH_FLAG == 1);
static_assert(DAT_EP_FIELD_SRQ_HANDLE == 0x400 && DAT_EP_FIELD_ALL == 0x7FFFF7FF);
static_assert(DAT_LMR_FIELD_LMR_CONTEXT == 0x040 && DAT_LMR_FIELD_ALL == 0x3FF);
static_assert(DAT_RMR_FIELD_ALL == 0x1F && DAT_CNO_FIELD_ALL == 0x3);
static_assert(DAT_IA_FIELD_IA_VENDOR_ATTR == 0x400000000ULL && DAT_IA_FIELD_ALL == 0x7FFFFFFFFULL);
static_assert(DAT_PROVIDER_FIELD_PROVIDER_SPECIFIC_ATTR == 0x2000000 &&
              DAT_PROVIDER_FIELD_ALL == 0x3FFFFFF);

// --- Return-code helpers -----------------------------------------------------------
static_assert(DAT_GET_TYPE(DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EP) ==
              DAT_INVALID_HANDLE);
static_assert(DAT_GET_SUBTYPE(DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EP) ==
              DAT_INVALID_HANDLE_EP);
static_assert(DAT_GET_TYPE(DAT_NOT_IMPLEMENTED) == DAT_NOT_IMPLEMENTED);

// --- Structures whose member order programs rely on ----------------------------------
static_assert(offsetof(DAT_DTO_COMPLETION_EVENT_DATA, ep_handle) == 0);
static_assert(offsetof(DAT_DTO_COMPLETION_EVENT_DATA, user_cookie) == 8);
static_assert(offsetof(DAT_DTO_COMPLETION_EVENT_DATA, status) == 16);
static_assert(offsetof(DAT_DTO_COMPLETION_EVENT_DATA, transfered_length) == 24);
static_assert(sizeof(DAT_DTO_COMPLETION_EVENT_DATA) == 32);
static_assert(offsetof(DAT_EVENT, event_number) == 0);
static_assert(offsetof(DAT_EVENT, evd_handle) == 8);
static_assert(offsetof(DAT_EVENT, event_data) == 16);
static_assert(sizeof(DAT_EVENT) == 16 + sizeof(DAT_EVENT_DATA));  // no extension data in 1.2
static_assert(offsetof(DAT_SHARED_MEMORY, virtual_address) == 0);
static_assert(offsetof(DAT_SHARED_MEMORY, shared_memory_id) == 8);
static_assert(offsetof(DAT_PROVIDER_INFO, dapl_version_major) == DAT_NAME_MAX_LENGTH);
// ia_handle, ep_state, padding: no "comm" member as in 2.0 (which puts this at 24)
static_assert(offsetof(DAT_EP_PARAM, local_ia_address_ptr) == 16);
static_assert(offsetof(DAT_RMR_PARAM, lmr_triplet) == 16);

TEST(DatHeaders, TripletFieldsRoundTrip) {
  DAT_LMR_TRIPLET lmr{};
  lmr.lmr_context = 0x01020304U;
  lmr.virtual_address = 0x1122334455667788ULL;
  lmr.segment_length = 4096;
  unsigned char bytes[sizeof lmr];
  std::memcpy(bytes, &lmr, sizeof lmr);
  DAT_VADDR va = 0;
  std::memcpy(&va, bytes + 8, sizeof va);
  EXPECT_EQ(va, 0x1122334455667788ULL);
  DAT_VLEN len = 0;
  std::memcpy(&len, bytes + 16, sizeof len);
  EXPECT_EQ(len, 4096U);
}

TEST(DatHeaders, SharedConstantsMatchDebianDat2) {
#ifndef DPDAT_HAVE_DAT2
  GTEST_SKIP() << "dat2/udat.h (libdapl-dev) not installed";
#else
  ASSERT_EQ(dpdat_ours_shared_count, dpdat_dat2_shared_count);
  ASSERT_GT(dpdat_ours_shared_count, 250);
  for (int i = 0; i < dpdat_ours_shared_count; ++i) {
    ASSERT_STREQ(dpdat_ours_shared[i].name, dpdat_dat2_shared[i].name);
    EXPECT_EQ(dpdat_ours_shared[i].value, dpdat_dat2_shared[i].value)
        << dpdat_ours_shared[i].name << ": DAT 1.2 and DAT 2.0 should agree";
  }
#endif
}

TEST(DatHeaders, VersionSpecificConstantsDifferFromDebianDat2) {
#ifndef DPDAT_HAVE_DAT2
  GTEST_SKIP() << "dat2/udat.h (libdapl-dev) not installed";
#else
  for (int i = 0; i < dpdat_differing_count; ++i) {
    EXPECT_NE(dpdat_ours_differing[i].value, dpdat_dat2_differing[i].value)
        << dpdat_ours_differing[i].name << " is a known 1.2/2.0 difference";
  }
#endif
}

TEST(DatHeaders, NamesAreUnique) {
  std::map<std::string, int> seen;
  for (int i = 0; i < dpdat_ours_shared_count; ++i) {
    EXPECT_EQ(++seen[dpdat_ours_shared[i].name], 1) << dpdat_ours_shared[i].name;
  }
}

}  // namespace
