// Completions still queued when the consumer frees their EP (fixture:
// api_fixture.hpp).

#include "api_fixture.hpp"

namespace {

// Its own suite name: the fixture class differs per translation unit.
class api_ep_free : public api {};

// dat_ep_free(3DAT): completions of a freed EP not yet dequeued may be gone,
// but none may be reported as another EP's.  A new EP takes the freed EP's
// queue pair number (the engine reuses the lowest free one), so completions
// still queued by QPN would otherwise name it.
TEST_F(api_ep_free, FreedEpCompletionsNeverNameTheNextEp) {
  Side cli, srv;
  cli.ia = ia0_;
  ASSERT_EQ(dat_pz_create(ia0_, &cli.pz), DAT_SUCCESS);
  cli.recv_evd = evd(ia0_, DAT_EVD_DTO_FLAG, 16);
  // Room for one event: the second completion stays in the RC queue.
  cli.req_evd = evd(ia0_, kReqFlags, 1);
  cli.conn_evd = evd(ia0_, DAT_EVD_CONNECTION_FLAG);
  ASSERT_EQ(dat_ep_create(ia0_, cli.pz, cli.recv_evd, cli.req_evd, cli.conn_evd, nullptr, &cli.ep),
            DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(make_side(ia1_, &srv));
  ASSERT_EQ(dat_psp_create(ia1_, kQual, srv.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp_), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(reconnect(&cli, &srv));

  Mem src, dst;
  ASSERT_EQ(reg(ia0_, cli.pz, 256, DAT_MEM_PRIV_ALL_FLAG, &src), DAT_SUCCESS);
  ASSERT_EQ(reg(ia1_, srv.pz, 256, DAT_MEM_PRIV_ALL_FLAG, &dst), DAT_SUCCESS);
  for (uint64_t i = 0; i < 2; ++i) {
    DAT_LMR_TRIPLET r = dst.iov(i * 128, 128);
    ASSERT_EQ(dat_ep_post_recv(srv.ep, 1, &r, cookie(10 + i), DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
  }
  for (uint64_t i = 0; i < 2; ++i) {
    DAT_LMR_TRIPLET s = src.iov(i * 128, 128);
    ASSERT_EQ(dat_ep_post_send(cli.ep, 1, &s, cookie(20 + i), DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
  }
  ASSERT_NO_FATAL_FAILURE(expect_dto(srv.recv_evd, 10, DAT_DTO_SUCCESS, 128));
  ASSERT_NO_FATAL_FAILURE(expect_dto(srv.recv_evd, 11, DAT_DTO_SUCCESS, 128));
  // Both sends complete (one event queued, one completion behind it); none
  // is dequeued.
  ASSERT_TRUE(poll_ep(cli.ep, [](DAT_EP_STATE, bool req_idle) { return req_idle; }));

  ASSERT_EQ(dat_ep_free(cli.ep), DAT_SUCCESS);
  DAT_EP_HANDLE next = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ep_create(ia0_, cli.pz, cli.recv_evd, cli.req_evd, cli.conn_evd, nullptr, &next),
            DAT_SUCCESS);

  DAT_EVENT ev;
  int n = 0;
  while (dat_evd_dequeue(cli.req_evd, &ev) == DAT_SUCCESS) {
    ++n;
    EXPECT_EQ(ev.event_number, DAT_DTO_COMPLETION_EVENT);
    EXPECT_NE(ev.event_data.dto_completion_event_data.ep_handle, next)
        << "a completion of the freed EP (cookie "
        << ev.event_data.dto_completion_event_data.user_cookie.as_64 << ") names the new EP";
  }
  // The freed EP's completions are gone with it (dat_ep_free(3DAT) allows
  // either; dpdat drops them, so no handle, stale or reused, is reported).
  EXPECT_EQ(n, 0);

  // The new EP is a working EP on the same EVDs: connect and send.
  cli.ep = next;
  ASSERT_EQ(dat_ep_free(srv.ep), DAT_SUCCESS);
  srv.conn_evd = evd(ia1_, DAT_EVD_CONNECTION_FLAG);  // the old one may hold DISCONNECTED
  ASSERT_EQ(dat_ep_create(ia1_, srv.pz, srv.recv_evd, srv.req_evd, srv.conn_evd, nullptr, &srv.ep),
            DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(reconnect(&cli, &srv));
  DAT_LMR_TRIPLET r = dst.iov(0, 128);
  ASSERT_EQ(dat_ep_post_recv(srv.ep, 1, &r, cookie(30), DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  DAT_LMR_TRIPLET s = src.iov(0, 128);
  ASSERT_EQ(dat_ep_post_send(cli.ep, 1, &s, cookie(31), DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  DAT_EVENT got;
  ASSERT_EQ(wait(cli.req_evd, &got), DAT_SUCCESS);
  ASSERT_EQ(got.event_number, DAT_DTO_COMPLETION_EVENT);
  EXPECT_EQ(got.event_data.dto_completion_event_data.ep_handle, next);
  EXPECT_EQ(got.event_data.dto_completion_event_data.user_cookie.as_64, 31u);
  EXPECT_EQ(got.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
}

}  // namespace
