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

#include "api_mem.hpp"

namespace dpdat_test {

struct ConnSide : Mem {
  explicit ConnSide(size_t len) : buf_len(len) {}
  size_t buf_len;  // registered by open_conn_side
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE dto = DAT_HANDLE_NULL, conn = DAT_HANDLE_NULL, cr = DAT_HANDLE_NULL;
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  const char* ip = nullptr;
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
  ASSERT_EQ(reg(s->ia, s->pz, s->buf_len, DAT_MEM_PRIV_ALL_FLAG, s), DAT_SUCCESS);
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
