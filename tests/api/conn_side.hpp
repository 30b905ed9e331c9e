#pragma once
// One end of a test connection between two custom IA names (DPDAT_IA_<NAME>
// on the two ends of the in-process net_ring link): PZ, a DTO EVD (request
// and receive), connection and CR EVDs, one EP and a registered buffer.
// Shared by the api gtests that configure their own interfaces.

#include <arpa/inet.h>
#include <dat/udat.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
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

// pas listens on `qual` (a PSP on its CR EVD), act connects to it at
// pas_ip, and pas accepts the request on its EP (ASSERTs).  Each side's
// ESTABLISHED event is left for the caller to take.
inline void connect_and_accept(ConnSide* act, ConnSide* pas, const char* pas_ip, DAT_CONN_QUAL qual,
                               DAT_TIMEOUT wait_us) {
  DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_psp_create(pas->ia, qual, pas->cr, DAT_PSP_CONSUMER_FLAG, &psp), DAT_SUCCESS);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  inet_pton(AF_INET, pas_ip, &sa.sin_addr);
  ASSERT_EQ(dat_ep_connect(act->ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&sa), qual, wait_us, 0,
                           nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
            DAT_SUCCESS);
  DAT_EVENT ev;
  std::memset(&ev, 0, sizeof(ev));
  DAT_COUNT nmore = 0;
  ASSERT_EQ(dat_evd_wait(pas->cr, wait_us, 1, &ev, &nmore), DAT_SUCCESS);
  ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
  ASSERT_EQ(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, pas->ep, 0, nullptr),
            DAT_SUCCESS);
}

// Opens both sides (IA names act_name, pas_name), connects act to pas at
// pas_ip and takes each side's ESTABLISHED event (ASSERTs).
inline void open_connected(ConnSide* act, const char* act_name, ConnSide* pas, const char* pas_name,
                           const char* pas_ip, DAT_CONN_QUAL qual, DAT_TIMEOUT wait_us) {
  ASSERT_NO_FATAL_FAILURE(open_conn_side(act, act_name));
  ASSERT_NO_FATAL_FAILURE(open_conn_side(pas, pas_name));
  ASSERT_NO_FATAL_FAILURE(connect_and_accept(act, pas, pas_ip, qual, wait_us));
  for (ConnSide* s : {act, pas}) {
    DAT_EVENT ev;
    std::memset(&ev, 0, sizeof(ev));
    DAT_COUNT nmore = 0;
    ASSERT_EQ(dat_evd_wait(s->conn, wait_us, 1, &ev, &nmore), DAT_SUCCESS);
    ASSERT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
  }
}

inline DAT_DTO_COOKIE cookie_of(uint64_t v) {
  DAT_DTO_COOKIE c;
  c.as_64 = v;
  return c;
}

}  // namespace dpdat_test
