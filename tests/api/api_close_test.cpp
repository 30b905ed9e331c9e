// Leaving connections abruptly and closing the IA at once, as OFED's
// dtestsrq client does before it exits: through libdat's public API, two
// custom IA names (DPDAT_IA_<NAME>) on the two ends of the process's
// in-process net_ring link, both without the background progress thread, so
// that nothing moves the passive side unless a call drives it.  The active
// side loses its first DREQ (cm_drop=dreq:1).  (This binary never opens
// dpdat0/dpdat1: those are the same two ports.)
//
// Why it matters: a consumer typically exits right after dat_ia_close, and
// its link may go with it (a net_memif peer discards what it has not read
// when the other process's socket closes: the PMD unmaps the rings).
// dat_ia_close therefore returns only once the peer has answered the DREQs
// of the IA's abrupt disconnects, i.e. has taken everything sent ahead of
// them, the last ACKs included; an abrupt disconnect's DREQ is repeated
// until then.

#include <arpa/inet.h>
#include <dat/udat.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "conn_side.hpp"

namespace {

using dpdat_test::Mem;
using dpdat_test::reg;

constexpr DAT_TIMEOUT kWaitUs = 5'000'000;
constexpr DAT_CONN_QUAL kQual = 4721;
constexpr int kConns = 2;     // connections, each with an SRQ EP on the active side
constexpr int kBurst = 8;     // SENDs per connection from the passive side
constexpr size_t kLen = 256;  // bytes per SEND

using dpdat_test::cookie_of;

DAT_RETURN wait(DAT_EVD_HANDLE e, DAT_EVENT* ev, DAT_TIMEOUT t = kWaitUs) {
  DAT_COUNT nmore = 0;
  std::memset(ev, 0, sizeof(*ev));
  return dat_evd_wait(e, t, 1, ev, &nmore);
}

// dat_ep_query's state: unlike dat_ep_get_status it does not progress the
// interface, so it shows what the passive side has taken in so far.
DAT_EP_STATE queried_state(DAT_EP_HANDLE ep) {
  DAT_EP_PARAM p{};
  EXPECT_EQ(dat_ep_query(ep, DAT_EP_FIELD_EP_STATE, &p), DAT_SUCCESS);
  return p.ep_state;
}

class api_close : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(
        setenv("DPDAT_IA_CLOSE_ACTIVE", "ring=0;ip=192.168.77.1;progress=inline;cm_drop=dreq:1", 1),
        0);
    ASSERT_EQ(setenv("DPDAT_IA_CLOSE_PASSIVE", "ring=1;ip=192.168.77.2;progress=inline", 1), 0);
    ASSERT_NO_FATAL_FAILURE(open_active());
    ASSERT_NO_FATAL_FAILURE(open_passive());
    ASSERT_NO_FATAL_FAILURE(connect_all());
  }
  void TearDown() override {
    for (DAT_IA_HANDLE* ia : {&act_ia_, &pas_ia_}) {
      if (*ia != DAT_HANDLE_NULL) {
        EXPECT_EQ(dat_ia_close(*ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
      }
    }
  }

  // The active side as dtestsrq's client has it: its EPs take their
  // receives from one SRQ, all buffers posted up front.
  void open_active() {
    ASSERT_EQ(dat_ia_open(const_cast<char*>("close-active"), 8, &act_async_, &act_ia_),
              DAT_SUCCESS);
    ASSERT_EQ(dat_pz_create(act_ia_, &act_pz_), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(act_ia_, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &act_recv_),
              DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(act_ia_, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &act_req_),
              DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(act_ia_, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &act_conn_),
              DAT_SUCCESS);
    DAT_SRQ_ATTR a{};
    a.max_recv_dtos = kConns * kBurst;
    a.max_recv_iov = 1;
    a.low_watermark = 0;
    ASSERT_EQ(dat_srq_create(act_ia_, act_pz_, &a, &act_srq_), DAT_SUCCESS);
    ASSERT_EQ(reg(act_ia_, act_pz_, kConns * kBurst * kLen, DAT_MEM_PRIV_ALL_FLAG, &act_mem_),
              DAT_SUCCESS);
    for (auto& ep : act_ep_) {
      ASSERT_EQ(dat_ep_create_with_srq(act_ia_, act_pz_, act_recv_, act_req_, act_conn_, act_srq_,
                                       nullptr, &ep),
                DAT_SUCCESS);
    }
    for (uint64_t i = 0; i < kConns * kBurst; ++i) {
      DAT_LMR_TRIPLET t = act_mem_.iov(i * kLen, kLen);
      ASSERT_EQ(dat_srq_post_recv(act_srq_, 1, &t, cookie_of(i)), DAT_SUCCESS);
    }
  }

  void open_passive() {
    ASSERT_EQ(dat_ia_open(const_cast<char*>("close-passive"), 8, &pas_async_, &pas_ia_),
              DAT_SUCCESS);
    ASSERT_EQ(dat_pz_create(pas_ia_, &pas_pz_), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(pas_ia_, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &pas_dto_),
              DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(pas_ia_, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &pas_conn_),
              DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(pas_ia_, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &pas_cr_), DAT_SUCCESS);
    ASSERT_EQ(reg(pas_ia_, pas_pz_, kBurst * kLen, DAT_MEM_PRIV_ALL_FLAG, &pas_mem_), DAT_SUCCESS);
    for (size_t i = 0; i < pas_mem_.buf.size(); ++i)
      pas_mem_.buf[i] = static_cast<uint8_t>(i * 13 + 5);
    for (auto& ep : pas_ep_) {
      ASSERT_EQ(dat_ep_create(pas_ia_, pas_pz_, pas_dto_, pas_dto_, pas_conn_, nullptr, &ep),
                DAT_SUCCESS);
    }
    ASSERT_EQ(dat_psp_create(pas_ia_, kQual, pas_cr_, DAT_PSP_CONSUMER_FLAG, &psp_), DAT_SUCCESS);
  }

  void connect_all() {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    inet_pton(AF_INET, "192.168.77.2", &sa.sin_addr);
    for (int i = 0; i < kConns; ++i) {
      ASSERT_EQ(dat_ep_connect(act_ep_[i], reinterpret_cast<DAT_IA_ADDRESS_PTR>(&sa), kQual,
                               kWaitUs, 0, nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
                DAT_SUCCESS);
      DAT_EVENT ev;
      ASSERT_EQ(wait(pas_cr_, &ev), DAT_SUCCESS);
      ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
      ASSERT_EQ(
          dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, pas_ep_[i], 0, nullptr),
          DAT_SUCCESS);
      ASSERT_EQ(wait(act_conn_, &ev), DAT_SUCCESS);
      ASSERT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
      ASSERT_EQ(wait(pas_conn_, &ev), DAT_SUCCESS);
      ASSERT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
    }
  }

  // The passive side sends kBurst messages on every connection; the active
  // side takes them all from its SRQ (its waits drive the passive side).
  void burst() {
    for (uint64_t i = 0; i < kConns; ++i)
      for (size_t k = 0; k < kBurst; ++k) {
        DAT_LMR_TRIPLET t = pas_mem_.iov(k * kLen, kLen);
        ASSERT_EQ(dat_ep_post_send(pas_ep_[i], 1, &t, cookie_of(100 + uint64_t{kBurst} * i + k),
                                   DAT_COMPLETION_DEFAULT_FLAG),
                  DAT_SUCCESS);
      }
    for (int n = 0; n < kConns * kBurst; ++n) {
      DAT_EVENT ev;
      ASSERT_EQ(wait(act_recv_, &ev), DAT_SUCCESS) << "receive " << n;
      ASSERT_EQ(ev.event_number, DAT_DTO_COMPLETION_EVENT);
      EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
      EXPECT_EQ(ev.event_data.dto_completion_event_data.transfered_length, kLen);
    }
  }

  // dtestsrq's teardown: per EP an abrupt disconnect, its DISCONNECTED event,
  // the async EP_BROKEN of an SRQ EP, then the free.
  void leave_and_free(int i) {
    ASSERT_EQ(dat_ep_disconnect(act_ep_[i], DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    DAT_EVENT ev;
    ASSERT_EQ(wait(act_conn_, &ev), DAT_SUCCESS);
    ASSERT_EQ(ev.event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
    ASSERT_EQ(wait(act_async_, &ev), DAT_SUCCESS);
    ASSERT_EQ(ev.event_number, DAT_ASYNC_ERROR_EP_BROKEN);
    ASSERT_EQ(ev.event_data.asynch_error_event_data.dat_handle, act_ep_[i]);
    ASSERT_EQ(dat_ep_free(act_ep_[i]), DAT_SUCCESS);
    act_ep_[i] = DAT_HANDLE_NULL;
  }

  // What the passive side has, once it looks: every SEND completed
  // successfully (the active side's last ACKs arrived before its DREQs) and
  // every connection ended DISCONNECTED (not BROKEN by a retry budget).
  void expect_passive_done() {
    for (int n = 0; n < kConns * kBurst; ++n) {
      DAT_EVENT ev;
      ASSERT_EQ(wait(pas_dto_, &ev), DAT_SUCCESS) << "send completion " << n;
      ASSERT_EQ(ev.event_number, DAT_DTO_COMPLETION_EVENT);
      EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS) << n;
    }
    for (int i = 0; i < kConns; ++i) {
      DAT_EVENT ev;
      ASSERT_EQ(wait(pas_conn_, &ev, 2'000'000), DAT_SUCCESS) << "no disconnect " << i;
      EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_DISCONNECTED) << std::hex << ev.event_number;
    }
  }

  DAT_IA_HANDLE act_ia_ = DAT_HANDLE_NULL, pas_ia_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE act_async_ = DAT_HANDLE_NULL, pas_async_ = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE act_pz_ = DAT_HANDLE_NULL, pas_pz_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE act_recv_ = DAT_HANDLE_NULL, act_req_ = DAT_HANDLE_NULL,
                 act_conn_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE pas_dto_ = DAT_HANDLE_NULL, pas_conn_ = DAT_HANDLE_NULL, pas_cr_ = DAT_HANDLE_NULL;
  DAT_SRQ_HANDLE act_srq_ = DAT_HANDLE_NULL;
  DAT_PSP_HANDLE psp_ = DAT_HANDLE_NULL;
  DAT_EP_HANDLE act_ep_[kConns] = {}, pas_ep_[kConns] = {};
  Mem act_mem_, pas_mem_;
};

// dtestsrq's client end: receive everything, leave every connection
// abruptly, free the EPs and the rest, close the IA.  When dat_ia_close
// returns the passive side must already have taken the DREQs (the first one
// lost and repeated), without having been asked to look since.
TEST_F(api_close, IaCloseReturnsOnceThePeerTookTheDisconnects) {
  ASSERT_NO_FATAL_FAILURE(burst());
  for (int i = 0; i < kConns; ++i) ASSERT_NO_FATAL_FAILURE(leave_and_free(i));
  ASSERT_EQ(dat_srq_free(act_srq_), DAT_SUCCESS);
  ASSERT_EQ(dat_lmr_free(act_mem_.lmr), DAT_SUCCESS);
  for (DAT_EVD_HANDLE e : {act_recv_, act_req_, act_conn_}) ASSERT_EQ(dat_evd_free(e), DAT_SUCCESS);
  ASSERT_EQ(dat_pz_free(act_pz_), DAT_SUCCESS);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(dat_ia_close(act_ia_, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  const auto took = std::chrono::steady_clock::now() - t0;
  act_ia_ = DAT_HANDLE_NULL;
  EXPECT_LT(took, std::chrono::milliseconds(250)) << "the peer answers: no full linger";
  for (int i = 0; i < kConns; ++i)
    EXPECT_EQ(queried_state(pas_ep_[i]), DAT_EP_STATE_DISCONNECTED) << "connection " << i;
  ASSERT_NO_FATAL_FAILURE(expect_passive_done());
}

// The same teardown through dat_ia_close alone (it frees the connected EPs).
TEST_F(api_close, IaCloseWithConnectedEpsReturnsOnceThePeerTookTheDisconnects) {
  ASSERT_NO_FATAL_FAILURE(burst());
  ASSERT_EQ(dat_ia_close(act_ia_, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  act_ia_ = DAT_HANDLE_NULL;
  for (int i = 0; i < kConns; ++i)
    EXPECT_EQ(queried_state(pas_ep_[i]), DAT_EP_STATE_DISCONNECTED) << "connection " << i;
  ASSERT_NO_FATAL_FAILURE(expect_passive_done());
}

// With the IA left open, an abrupt disconnect whose DREQ was lost still
// reaches the peer: the DREQ is repeated until the peer's DREP.
TEST_F(api_close, LostDreqOfAnAbruptDisconnectIsRepeated) {
  ASSERT_NO_FATAL_FAILURE(burst());
  for (int i = 0; i < kConns; ++i) ASSERT_NO_FATAL_FAILURE(leave_and_free(i));
  ASSERT_NO_FATAL_FAILURE(expect_passive_done());
}

}  // namespace
