// A connection event's private data outlives the EP it is about (fixture:
// api_fixture.hpp).

#include "api_fixture.hpp"

namespace {

// Its own suite name: the fixture class differs per translation unit.
class api_pdata : public api {};

// dat_evd_dequeue(3DAT): the provider owns an ESTABLISHED event's private
// data.  Here the consumer frees the EP before it dequeues the event: the
// event still carries the peer's bytes, readable after the dequeue.
TEST_F(api_pdata, ConnectionEventPrivateDataOutlivesFreedEp) {
  Side cli, srv;
  ASSERT_NO_FATAL_FAILURE(make_side(ia0_, &cli));
  ASSERT_NO_FATAL_FAILURE(make_side(ia1_, &srv));
  ASSERT_EQ(dat_psp_create(ia1_, kQual, srv.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp_), DAT_SUCCESS);
  ASSERT_EQ(connect_to(cli, "192.168.77.2", kQual), DAT_SUCCESS);
  DAT_CR_HANDLE cr = wait_cr(srv);
  ASSERT_NE(cr, DAT_HANDLE_NULL);
  uint8_t rep_pd[56];
  for (int i = 0; i < 56; ++i) rep_pd[i] = static_cast<uint8_t>(0x5A ^ (i * 3));
  ASSERT_EQ(dat_cr_accept(cr, srv.ep, 56, rep_pd), DAT_SUCCESS);
  // The client's ESTABLISHED event is queued, not dequeued.
  ASSERT_TRUE(poll_ep(cli.ep, [](DAT_EP_STATE st, bool) { return st == DAT_EP_STATE_CONNECTED; }));
  ASSERT_EQ(dat_ep_free(cli.ep), DAT_SUCCESS);

  DAT_EVENT ev;
  std::memset(&ev, 0, sizeof(ev));
  ASSERT_EQ(dat_evd_dequeue(cli.conn_evd, &ev), DAT_SUCCESS);
  ASSERT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
  const auto& d = ev.event_data.connect_event_data;
  ASSERT_EQ(d.private_data_size, 56);
  ASSERT_NE(d.private_data, nullptr);
  // Other work on the interface meanwhile (an EP created and freed) does not
  // touch the dequeued event's bytes either.
  DAT_EP_HANDLE other = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ep_create(ia0_, cli.pz, cli.recv_evd, cli.req_evd, cli.conn_evd, nullptr, &other),
            DAT_SUCCESS);
  ASSERT_EQ(dat_ep_free(other), DAT_SUCCESS);
  EXPECT_EQ(std::memcmp(d.private_data, rep_pd, 56), 0);
}

}  // namespace
