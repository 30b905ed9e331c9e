// Connection management with CM messages lost on the way, through libdat's
// public API: two custom IA names (DPDAT_IA_<NAME>) on the two ends of the
// process's in-process net_ring link, the active one configured with
// `cm_drop=` to lose some of the CM messages it sends.  (This binary never
// opens dpdat0/dpdat1: those are the same two ports.)

#include <arpa/inet.h>
#include <dat/udat.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "conn_side.hpp"

namespace {

constexpr DAT_TIMEOUT kWaitUs = 5'000'000;
constexpr DAT_CONN_QUAL kQual = 4713;

using Side = dpdat_test::ConnSide;

DAT_DTO_COOKIE cookie(uint64_t v) { return dpdat_test::cookie_of(v); }

class api_cm_loss : public ::testing::Test {
 protected:
  void SetUp() override {
    // The active side loses its first three RTUs: the one answering the
    // REP, and those answering the passive side's first two REP
    // retransmissions (50 and 150 ms after the accept).
    ASSERT_EQ(setenv("DPDAT_IA_CM_LOSS_ACTIVE", "ring=0;ip=192.168.77.1;cm_drop=rtu:3", 1), 0);
    ASSERT_EQ(setenv("DPDAT_IA_CM_LOSS_PASSIVE", "ring=1;ip=192.168.77.2", 1), 0);
    ASSERT_NO_FATAL_FAILURE(open(&act_, "cm-loss-active"));
    ASSERT_NO_FATAL_FAILURE(open(&pas_, "cm-loss-passive"));
  }
  void TearDown() override {
    dpdat_test::close_conn_side(&act_);
    dpdat_test::close_conn_side(&pas_);
  }

  static void open(Side* s, const char* name) { dpdat_test::open_conn_side(s, name); }

  static DAT_RETURN wait(DAT_EVD_HANDLE e, DAT_EVENT* ev, DAT_TIMEOUT t = kWaitUs) {
    DAT_COUNT nmore = 0;
    std::memset(ev, 0, sizeof(*ev));
    return dat_evd_wait(e, t, 1, ev, &nmore);
  }

  static void expect_conn(const Side& s, DAT_EVENT_NUMBER want, DAT_TIMEOUT t = kWaitUs) {
    DAT_EVENT ev;
    ASSERT_EQ(wait(s.conn, &ev, t), DAT_SUCCESS)
        << "no connection event, wanted 0x" << std::hex << want;
    EXPECT_EQ(ev.event_number, want) << std::hex << "got 0x" << ev.event_number;
  }

  static DAT_EP_STATE state(const Side& s) {
    DAT_EP_STATE st = DAT_EP_STATE_UNCONNECTED;
    EXPECT_EQ(dat_ep_get_status(s.ep, &st, nullptr, nullptr), DAT_SUCCESS);
    return st;
  }

  Side act_{4096}, pas_{4096};
};

// The passive side keeps retransmitting its REP until an RTU arrives; the
// active side answers every repeated REP with the same RTU, also once it
// drains for a graceful disconnect (DISCONNECT_PENDING: a SEND the passive
// side has no receive for yet keeps the drain going).  The passive side
// must then see ESTABLISHED, take the SEND, and both sides close normally.
TEST_F(api_cm_loss, LostRtuIsRepeatedWhileActiveSideDrains) {
  ASSERT_NO_FATAL_FAILURE(
      dpdat_test::connect_and_accept(&act_, &pas_, "192.168.77.2", kQual, kWaitUs));
  DAT_EVENT ev;
  ASSERT_NO_FATAL_FAILURE(expect_conn(act_, DAT_CONNECTION_EVENT_ESTABLISHED));

  DAT_LMR_TRIPLET snd = act_.iov(0, 64);
  for (size_t i = 0; i < 64; ++i) act_.buf[i] = static_cast<uint8_t>(i * 7 + 3);
  ASSERT_EQ(dat_ep_post_send(act_.ep, 1, &snd, cookie(1), DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  // Valid only while the passive side still waits for an RTU (the drops
  // cover its REP retransmissions for 350 ms).
  ASSERT_EQ(state(pas_), DAT_EP_STATE_PASSIVE_CONNECTION_PENDING)
      << "an RTU arrived before the drain began";
  ASSERT_EQ(dat_ep_disconnect(act_.ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
  ASSERT_EQ(state(act_), DAT_EP_STATE_DISCONNECT_PENDING);

  // The passive side's REP retransmission at 350 ms is answered (the drain
  // gives up only after 2 s).
  ASSERT_NO_FATAL_FAILURE(expect_conn(pas_, DAT_CONNECTION_EVENT_ESTABLISHED, 1'500'000));
  DAT_LMR_TRIPLET rcv = pas_.iov(0, 64);
  ASSERT_EQ(dat_ep_post_recv(pas_.ep, 1, &rcv, cookie(2), DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  ASSERT_EQ(wait(pas_.dto, &ev), DAT_SUCCESS);
  EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64, 2u);
  EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
  EXPECT_EQ(ev.event_data.dto_completion_event_data.transfered_length, 64u);
  EXPECT_EQ(std::memcmp(pas_.buf.data(), act_.buf.data(), 64), 0);
  ASSERT_EQ(wait(act_.dto, &ev), DAT_SUCCESS);
  EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64, 1u);
  EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_conn(act_, DAT_CONNECTION_EVENT_DISCONNECTED));
  ASSERT_NO_FATAL_FAILURE(expect_conn(pas_, DAT_CONNECTION_EVENT_DISCONNECTED));
}

}  // namespace
