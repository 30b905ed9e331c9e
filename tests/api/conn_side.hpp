#pragma once
// One end of a test connection between two custom IA names (DPDAT_IA_<NAME>
// on the two ends of the in-process net_ring link): PZ, a DTO EVD (request
// and receive), connection and CR EVDs, one EP and a registered buffer.
// Shared by the api gtests that configure their own interfaces.

#include <dat/udat.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dpdat_test {

// The triplet naming bytes [off, off + len) of a buffer registered as `lctx`.
inline DAT_LMR_TRIPLET lmr_triplet(const std::vector<uint8_t>& buf, DAT_LMR_CONTEXT lctx,
                                   size_t off, size_t len) {
  DAT_LMR_TRIPLET t{};
  t.lmr_context = lctx;
  t.virtual_address = reinterpret_cast<DAT_VADDR>(buf.data()) + off;
  t.segment_length = len;
  return t;
}

struct ConnSide {
  explicit ConnSide(size_t buf_len) : buf(buf_len) {}
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE dto = DAT_HANDLE_NULL, conn = DAT_HANDLE_NULL, cr = DAT_HANDLE_NULL;
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  std::vector<uint8_t> buf;
  DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT lctx = 0;
  DAT_RMR_CONTEXT rctx = 0;
  const char* ip = nullptr;
  DAT_LMR_TRIPLET iov(size_t off, size_t len) const { return lmr_triplet(buf, lctx, off, len); }
};

// Opens the IA `name` and creates everything ConnSide holds (ASSERTs).
inline void open_conn_side(ConnSide* s, const char* name) {
  DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ia_open(const_cast<char*>(name), 8, &async, &s->ia), DAT_SUCCESS) << name;
  ASSERT_EQ(dat_pz_create(s->ia, &s->pz), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_create(s->ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s->dto), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &s->conn),
            DAT_SUCCESS);
  ASSERT_EQ(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &s->cr), DAT_SUCCESS);
  ASSERT_EQ(dat_ep_create(s->ia, s->pz, s->dto, s->dto, s->conn, nullptr, &s->ep), DAT_SUCCESS);
  DAT_REGION_DESCRIPTION r;
  r.for_va = s->buf.data();
  DAT_VLEN rs = 0;
  DAT_VADDR ra = 0;
  ASSERT_EQ(dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, r, s->buf.size(), s->pz,
                           DAT_MEM_PRIV_ALL_FLAG, &s->lmr, &s->lctx, &s->rctx, &rs, &ra),
            DAT_SUCCESS);
}

// Closes the IA (abruptly: everything in it goes) if it was opened.
inline void close_conn_side(ConnSide* s) {
  if (s->ia != DAT_HANDLE_NULL) {
    EXPECT_EQ(dat_ia_close(s->ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  }
}

inline DAT_DTO_COOKIE cookie_of(uint64_t v) {
  DAT_DTO_COOKIE c;
  c.as_64 = v;
  return c;
}

}  // namespace dpdat_test
