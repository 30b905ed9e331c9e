#pragma once
// Shared fixture of the libdat API tests (tests/api/*_test.cpp): the two ends
// of the in-process net_ring link, dpdat0 (192.168.77.1) and dpdat1
// (192.168.77.2), opened per test and closed abruptly at the end.  One thread
// drives both sides: waits use dat_evd_wait with a timeout (the library
// progresses the process's other interface while waiting).  Return values
// are asserted exactly: DAT_SUCCESS and DAT_QUEUE_EMPTY by value, errors by
// DAT_GET_TYPE.

#include <arpa/inet.h>
#include <dat/udat.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "api_mem.hpp"

namespace {

using dpdat_test::Mem;
using dpdat_test::reg;

constexpr DAT_TIMEOUT kWaitUs = 5'000'000;  // generous: events normally take microseconds
constexpr DAT_CONN_QUAL kQual = 1234;
constexpr DAT_EVD_FLAGS kReqFlags =
    static_cast<DAT_EVD_FLAGS>(DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG);

inline uint32_t type_of(DAT_RETURN r) { return DAT_GET_TYPE(r); }

inline DAT_RETURN open_ia(const char* name, DAT_IA_HANDLE* ia, DAT_EVD_HANDLE* async) {
  *async = DAT_HANDLE_NULL;
  return dat_ia_open(const_cast<char*>(name), 8, async, ia);
}

inline sockaddr_in ipv4(const char* a) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  inet_pton(AF_INET, a, &sa.sin_addr);
  return sa;
}

inline std::string ip_of(const DAT_IA_ADDRESS_PTR p) {
  if (p == nullptr || p->sa_family != AF_INET) return "<not AF_INET>";
  sockaddr_in sa{};
  std::memcpy(&sa, p, sizeof(sa));
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &sa.sin_addr, buf, sizeof(buf));
  return buf;
}

inline DAT_DTO_COOKIE cookie(uint64_t v) {
  DAT_DTO_COOKIE c;
  c.as_64 = v;
  return c;
}

inline void fill(std::vector<uint8_t>& v, uint32_t seed) {
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<uint8_t>((i * 131 + seed * 7 + (i >> 9)) & 0xFF);
}

// One end of a connection: PZ, EVDs (receive, request, connection, CR) and an EP.
struct Side {
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE recv_evd = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE req_evd = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE conn_evd = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE cr_evd = DAT_HANDLE_NULL;
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
};

// Drives the EP's interface (dat_ep_get_status progresses it) until `done`
// holds for its state / request-queue idleness, or 5 s pass.
template <typename Pred>
bool poll_ep(DAT_EP_HANDLE ep, Pred done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < end) {
    DAT_EP_STATE st = DAT_EP_STATE_UNCONFIGURED_UNCONNECTED;
    DAT_BOOLEAN recv_idle = DAT_FALSE, req_idle = DAT_FALSE;
    if (dat_ep_get_status(ep, &st, &recv_idle, &req_idle) != DAT_SUCCESS) return false;
    if (done(st, req_idle == DAT_TRUE)) return true;
  }
  return false;
}

class api : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(open_ia("dpdat0", &ia0_, &async0_), DAT_SUCCESS);
    ASSERT_EQ(open_ia("dpdat1", &ia1_, &async1_), DAT_SUCCESS);
  }
  void TearDown() override {
    if (ia0_ != DAT_HANDLE_NULL) {
      EXPECT_EQ(dat_ia_close(ia0_, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    }
    if (ia1_ != DAT_HANDLE_NULL) {
      EXPECT_EQ(dat_ia_close(ia1_, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    }
  }

  static DAT_EVD_HANDLE evd(DAT_IA_HANDLE ia, DAT_EVD_FLAGS flags, DAT_COUNT qlen = 64) {
    DAT_EVD_HANDLE e = DAT_HANDLE_NULL;
    EXPECT_EQ(dat_evd_create(ia, qlen, DAT_HANDLE_NULL, flags, &e), DAT_SUCCESS);
    return e;
  }

  static void make_side(DAT_IA_HANDLE ia, Side* s) {
    s->ia = ia;
    ASSERT_EQ(dat_pz_create(ia, &s->pz), DAT_SUCCESS);
    s->recv_evd = evd(ia, DAT_EVD_DTO_FLAG, 256);
    s->req_evd = evd(ia, kReqFlags, 256);
    s->conn_evd = evd(ia, DAT_EVD_CONNECTION_FLAG);
    s->cr_evd = evd(ia, DAT_EVD_CR_FLAG);
    ASSERT_EQ(dat_ep_create(ia, s->pz, s->recv_evd, s->req_evd, s->conn_evd, nullptr, &s->ep),
              DAT_SUCCESS);
  }

  static DAT_RETURN wait(DAT_EVD_HANDLE e, DAT_EVENT* ev, DAT_TIMEOUT t = kWaitUs) {
    DAT_COUNT nmore = 0;
    std::memset(ev, 0, sizeof(*ev));
    return dat_evd_wait(e, t, 1, ev, &nmore);
  }

  // Waits for a connection event on s's connect EVD and checks its number.
  static void expect_conn_event(const Side& s, DAT_EVENT_NUMBER want, DAT_EVENT* out = nullptr) {
    DAT_EVENT ev;
    ASSERT_EQ(wait(s.conn_evd, &ev), DAT_SUCCESS)
        << "no connection event, wanted 0x" << std::hex << want;
    EXPECT_EQ(ev.event_number, want) << std::hex << "got 0x" << ev.event_number;
    EXPECT_EQ(ev.event_data.connect_event_data.ep_handle, s.ep);
    if (out != nullptr) *out = ev;
  }

  static DAT_RETURN connect_to(const Side& c, const char* ip, DAT_CONN_QUAL q,
                               DAT_TIMEOUT t = kWaitUs, DAT_COUNT pdlen = 0, void* pd = nullptr) {
    sockaddr_in sa = ipv4(ip);
    return dat_ep_connect(c.ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&sa), q, t, pdlen, pd,
                          DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
  }

  // Waits for a connection request on s's CR EVD; returns its CR handle.
  static DAT_CR_HANDLE wait_cr(const Side& s, DAT_EVENT* out = nullptr) {
    DAT_EVENT ev;
    EXPECT_EQ(wait(s.cr_evd, &ev), DAT_SUCCESS) << "no connection request";
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
    if (out != nullptr) *out = ev;
    return ev.event_data.cr_arrival_event_data.cr_handle;
  }

  // cli (dpdat0) connects to srv (dpdat1) on kQual; both end up CONNECTED.
  void establish(Side* cli, Side* srv, bool listen = true) {
    make_side(ia0_, cli);
    make_side(ia1_, srv);
    if (listen) {
      ASSERT_EQ(dat_psp_create(ia1_, kQual, srv->cr_evd, DAT_PSP_CONSUMER_FLAG, &psp_),
                DAT_SUCCESS);
    }
    reconnect(cli, srv);
  }
  static void reconnect(Side* cli, Side* srv) {
    ASSERT_EQ(connect_to(*cli, "192.168.77.2", kQual), DAT_SUCCESS);
    DAT_CR_HANDLE cr = wait_cr(*srv);
    ASSERT_NE(cr, DAT_HANDLE_NULL);
    ASSERT_EQ(dat_cr_accept(cr, srv->ep, 0, nullptr), DAT_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(expect_conn_event(*cli, DAT_CONNECTION_EVENT_ESTABLISHED));
    ASSERT_NO_FATAL_FAILURE(expect_conn_event(*srv, DAT_CONNECTION_EVENT_ESTABLISHED));
  }

  static DAT_EP_STATE ep_state(DAT_EP_HANDLE ep) {
    DAT_EP_STATE st = DAT_EP_STATE_UNCONFIGURED_UNCONNECTED;
    DAT_BOOLEAN ri = DAT_FALSE, qi = DAT_FALSE;
    EXPECT_EQ(dat_ep_get_status(ep, &st, &ri, &qi), DAT_SUCCESS);
    return st;
  }

  // Waits for one DTO completion on e and checks cookie, status and length.
  static void expect_dto(DAT_EVD_HANDLE e, uint64_t ck, DAT_DTO_COMPLETION_STATUS status,
                         DAT_VLEN len, bool check_len = true) {
    DAT_EVENT ev;
    ASSERT_EQ(wait(e, &ev), DAT_SUCCESS) << "no DTO completion for cookie " << ck;
    ASSERT_EQ(ev.event_number, DAT_DTO_COMPLETION_EVENT) << std::hex << "got 0x" << ev.event_number;
    const auto& d = ev.event_data.dto_completion_event_data;
    EXPECT_EQ(d.user_cookie.as_64, ck);
    EXPECT_EQ(d.status, status);
    if (check_len && status == DAT_DTO_SUCCESS) {
      EXPECT_EQ(d.transfered_length, len) << "cookie " << ck;
    }
  }

  DAT_IA_HANDLE ia0_ = DAT_HANDLE_NULL, ia1_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async0_ = DAT_HANDLE_NULL, async1_ = DAT_HANDLE_NULL;
  DAT_PSP_HANDLE psp_ = DAT_HANDLE_NULL;
};

}  // namespace
