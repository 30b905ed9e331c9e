// Path MTU agreement between two interfaces configured with different
// `pmtu=` caps, through libdat's public API only.
//
// The two IA names here are custom ones (DPDAT_IA_<NAME>) on the two ends of
// the process's in-process net_ring link: pmtu-small caps its path MTU at 256
// bytes, pmtu-large keeps the largest its 1500-byte MTU allows (1024).  The
// REQ names the active side's PMTU, the passive side takes the smaller and
// names it in the REP; both queue pairs must use that one, or the responder
// refuses the other side's packets (a middle packet must be exactly one PMTU)
// and the connection breaks.  Each direction moves a multi-packet SEND, RDMA
// WRITE and RDMA READ and checks every byte.  (This binary never opens
// dpdat0/dpdat1: those are the same two ports.)

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
constexpr DAT_CONN_QUAL kQual = 4712;
constexpr size_t kLen = 200'000;  // 782 packets at 256, 196 at 1024

using Side = dpdat_test::ConnSide;

DAT_DTO_COOKIE cookie(uint64_t v) { return dpdat_test::cookie_of(v); }

class api_pmtu : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(setenv("DPDAT_IA_PMTU_SMALL", "ring=0;ip=192.168.77.1;pmtu=256", 1), 0);
    ASSERT_EQ(setenv("DPDAT_IA_PMTU_LARGE", "ring=1;ip=192.168.77.2", 1), 0);
    small_.ip = "192.168.77.1";
    large_.ip = "192.168.77.2";
    ASSERT_NO_FATAL_FAILURE(open(&small_, "pmtu-small"));
    ASSERT_NO_FATAL_FAILURE(open(&large_, "pmtu-large"));
  }
  void TearDown() override {
    dpdat_test::close_conn_side(&small_);
    dpdat_test::close_conn_side(&large_);
  }

  static void open(Side* s, const char* name) { dpdat_test::open_conn_side(s, name); }

  static DAT_EVENT wait(DAT_EVD_HANDLE e) {
    DAT_EVENT ev;
    DAT_COUNT nmore = 0;
    std::memset(&ev, 0, sizeof(ev));
    EXPECT_EQ(dat_evd_wait(e, kWaitUs, 1, &ev, &nmore), DAT_SUCCESS);
    return ev;
  }

  static void expect_dto(DAT_EVD_HANDLE e, uint64_t ck, DAT_VLEN len) {
    DAT_EVENT ev = wait(e);
    ASSERT_EQ(ev.event_number, DAT_DTO_COMPLETION_EVENT);
    const auto& d = ev.event_data.dto_completion_event_data;
    EXPECT_EQ(d.user_cookie.as_64, ck);
    ASSERT_EQ(d.status, DAT_DTO_SUCCESS) << "cookie " << ck;
    EXPECT_EQ(d.transfered_length, len);
  }

  // a connects to b; then SEND a->b, SEND b->a, a WRITEs into b and READs back.
  static void connect_and_move(Side* a, Side* b) {
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_psp_create(b->ia, kQual, b->cr, DAT_PSP_CONSUMER_FLAG, &psp), DAT_SUCCESS);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    inet_pton(AF_INET, b->ip, &sa.sin_addr);
    ASSERT_EQ(dat_ep_connect(a->ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&sa), kQual, kWaitUs, 0,
                             nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
              DAT_SUCCESS);
    DAT_EVENT ev = wait(b->cr);
    ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
    ASSERT_EQ(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, b->ep, 0, nullptr),
              DAT_SUCCESS);
    ASSERT_EQ(wait(a->conn).event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
    ASSERT_EQ(wait(b->conn).event_number, DAT_CONNECTION_EVENT_ESTABLISHED);

    for (size_t i = 0; i < kLen; ++i) {
      a->buf[i] = static_cast<uint8_t>(i * 7 + 3);
      b->buf[i] = static_cast<uint8_t>(i * 11 + 5);
    }
    // SEND both ways, each into the far half of the other's buffer.
    for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
      DAT_LMR_TRIPLET r = to->iov(kLen, kLen), s = from->iov(0, kLen);
      ASSERT_EQ(dat_ep_post_recv(to->ep, 1, &r, cookie(1), DAT_COMPLETION_DEFAULT_FLAG),
                DAT_SUCCESS);
      ASSERT_EQ(dat_ep_post_send(from->ep, 1, &s, cookie(2), DAT_COMPLETION_DEFAULT_FLAG),
                DAT_SUCCESS);
      ASSERT_NO_FATAL_FAILURE(expect_dto(from->dto, 2, kLen));
      ASSERT_NO_FATAL_FAILURE(expect_dto(to->dto, 1, kLen));
      EXPECT_EQ(std::memcmp(to->buf.data() + kLen, from->buf.data(), kLen), 0);
    }
    // RDMA WRITE a's first half over b's first half, READ it back into a's far half.
    DAT_RMR_TRIPLET rt{};
    rt.rmr_context = b->rctx;
    rt.target_address = reinterpret_cast<DAT_VADDR>(b->buf.data());
    rt.segment_length = kLen;
    DAT_LMR_TRIPLET l = a->iov(0, kLen);
    ASSERT_EQ(dat_ep_post_rdma_write(a->ep, 1, &l, cookie(3), &rt, DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(expect_dto(a->dto, 3, kLen));
    EXPECT_EQ(std::memcmp(b->buf.data(), a->buf.data(), kLen), 0);
    std::memset(a->buf.data() + kLen, 0, kLen);
    l = a->iov(kLen, kLen);
    ASSERT_EQ(dat_ep_post_rdma_read(a->ep, 1, &l, cookie(4), &rt, DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(expect_dto(a->dto, 4, kLen));
    EXPECT_EQ(std::memcmp(a->buf.data() + kLen, a->buf.data(), kLen), 0);

    DAT_EP_STATE st = DAT_EP_STATE_UNCONNECTED;
    EXPECT_EQ(dat_ep_get_status(a->ep, &st, nullptr, nullptr), DAT_SUCCESS);
    EXPECT_EQ(st, DAT_EP_STATE_CONNECTED);
    EXPECT_EQ(dat_ep_disconnect(a->ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
    EXPECT_EQ(wait(a->conn).event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
    EXPECT_EQ(wait(b->conn).event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
    EXPECT_EQ(dat_psp_free(psp), DAT_SUCCESS);
  }

  Side small_{2 * kLen}, large_{2 * kLen};
};

TEST_F(api_pmtu, SmallerActiveSideWins) { connect_and_move(&small_, &large_); }

TEST_F(api_pmtu, SmallerPassiveSideWins) { connect_and_move(&large_, &small_); }

}  // namespace
