// Shared receive queues through the uDAPL 1.2 API: two server EPs on one SRQ
// receive SENDs from two clients in the SRQ's posting order, each completion
// on the receiving EP's EVD; query counts, resize, low watermark and soft
// high watermark notifications on the async EVD, free while in use, and the
// documented errors.

#include "api_fixture.hpp"

namespace {

class api_srq : public api {
 protected:
  // Two clients on dpdat0, two server EPs on dpdat1 taking receives from srq_.
  void SetUp() override {
    api::SetUp();
    ASSERT_NO_FATAL_FAILURE(make_side(ia0_, &cli_[0]));
    ASSERT_NO_FATAL_FAILURE(make_side(ia0_, &cli_[1]));
    ASSERT_EQ(dat_pz_create(ia1_, &spz_), DAT_SUCCESS);
    DAT_SRQ_ATTR a{};
    a.max_recv_dtos = 16;
    a.max_recv_iov = 2;
    a.low_watermark = 0;
    ASSERT_EQ(dat_srq_create(ia1_, spz_, &a, &srq_), DAT_SUCCESS);
    for (Side& s : srv_) {
      s.ia = ia1_;
      s.pz = spz_;
      s.recv_evd = evd(ia1_, DAT_EVD_DTO_FLAG, 64);
      s.req_evd = evd(ia1_, kReqFlags, 64);
      s.conn_evd = evd(ia1_, DAT_EVD_CONNECTION_FLAG);
      s.cr_evd = evd(ia1_, DAT_EVD_CR_FLAG);
      ASSERT_EQ(dat_ep_create_with_srq(ia1_, spz_, s.recv_evd, s.req_evd, s.conn_evd, srq_, nullptr,
                                       &s.ep),
                DAT_SUCCESS);
    }
    ASSERT_EQ(dat_psp_create(ia1_, kQual, srv_[0].cr_evd, DAT_PSP_CONSUMER_FLAG, &psp_),
              DAT_SUCCESS);
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(connect_to(cli_[i], "192.168.77.2", kQual), DAT_SUCCESS);
      DAT_CR_HANDLE cr = wait_cr(srv_[0]);
      ASSERT_EQ(dat_cr_accept(cr, srv_[i].ep, 0, nullptr), DAT_SUCCESS);
      ASSERT_NO_FATAL_FAILURE(expect_conn_event(cli_[i], DAT_CONNECTION_EVENT_ESTABLISHED));
      ASSERT_NO_FATAL_FAILURE(expect_conn_event(srv_[i], DAT_CONNECTION_EVENT_ESTABLISHED));
    }
    ASSERT_EQ(reg(ia1_, spz_, 16 * 256, DAT_MEM_PRIV_ALL_FLAG, &dst_), DAT_SUCCESS);
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(reg(ia0_, cli_[i].pz, 256, DAT_MEM_PRIV_ALL_FLAG, &src_[i]), DAT_SUCCESS);
      fill(src_[i].buf, static_cast<uint32_t>(10 + i));
    }
  }

  // Receive slot i: 256 bytes at i * 256 of dst_.
  DAT_RETURN post_srq(uint32_t i) {
    DAT_LMR_TRIPLET t = dst_.iov(i * 256, 256);
    return dat_srq_post_recv(srq_, 1, &t, cookie(100 + i));
  }
  void send(int c, uint32_t len, uint64_t ck) {
    DAT_LMR_TRIPLET t = src_[c].iov(0, len);
    ASSERT_EQ(dat_ep_post_send(cli_[c].ep, 1, &t, cookie(ck), DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
    expect_dto(cli_[c].req_evd, ck, DAT_DTO_SUCCESS, len);
  }
  DAT_SRQ_PARAM query() {
    DAT_SRQ_PARAM p{};
    EXPECT_EQ(dat_srq_query(srq_, DAT_SRQ_FIELD_ALL, &p), DAT_SUCCESS);
    return p;
  }
  // The next async event must be a watermark notification about `h`.
  void expect_async(DAT_HANDLE h, DAT_COUNT reason) {
    DAT_EVENT ev;
    ASSERT_EQ(wait(async1_, &ev, 2'000'000), DAT_SUCCESS) << "no async event";
    EXPECT_EQ(ev.event_number, DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR);
    EXPECT_EQ(ev.event_data.asynch_error_event_data.dat_handle, h);
    EXPECT_EQ(ev.event_data.asynch_error_event_data.reason, reason);
  }

  Side cli_[2], srv_[2];
  DAT_PZ_HANDLE spz_ = DAT_HANDLE_NULL;
  DAT_SRQ_HANDLE srq_ = DAT_HANDLE_NULL;
  Mem dst_, src_[2];
};

TEST_F(api_srq, ReceivesAreTakenInPostingOrderByWhicheverEpReceives) {
  for (uint32_t i = 0; i < 4; ++i) ASSERT_EQ(post_srq(i), DAT_SUCCESS);
  EXPECT_EQ(query().available_dto_count, 4);
  send(1, 100, 1);  // server EP 1 takes receive 0
  expect_dto(srv_[1].recv_evd, 100, DAT_DTO_SUCCESS, 100);
  send(0, 200, 2);  // server EP 0 takes receive 1
  expect_dto(srv_[0].recv_evd, 101, DAT_DTO_SUCCESS, 200);
  send(1, 7, 3);  // receive 2
  expect_dto(srv_[1].recv_evd, 102, DAT_DTO_SUCCESS, 7);
  EXPECT_EQ(std::memcmp(dst_.buf.data(), src_[1].buf.data(), 100), 0);
  EXPECT_EQ(std::memcmp(dst_.buf.data() + 256, src_[0].buf.data(), 200), 0);
  EXPECT_EQ(std::memcmp(dst_.buf.data() + 512, src_[1].buf.data(), 7), 0);
  const DAT_SRQ_PARAM p = query();
  EXPECT_EQ(p.available_dto_count, 1);
  EXPECT_EQ(p.outstanding_dto_count, 0);
  EXPECT_EQ(p.max_recv_dtos, 16);
  EXPECT_EQ(p.max_recv_iov, 2);
  EXPECT_EQ(p.ia_handle, ia1_);
  EXPECT_EQ(p.pz_handle, spz_);
  EXPECT_EQ(p.srq_state, DAT_SRQ_STATE_OPERATIONAL);

  DAT_EP_PARAM ep{};
  ASSERT_EQ(dat_ep_query(srv_[0].ep, DAT_EP_FIELD_SRQ_HANDLE, &ep), DAT_SUCCESS);
  EXPECT_EQ(ep.srq_handle, srq_);
  DAT_IA_ATTR ia{};
  DAT_PROVIDER_ATTR pr{};
  ASSERT_EQ(dat_ia_query(ia1_, nullptr, DAT_IA_FIELD_ALL, &ia, DAT_PROVIDER_FIELD_ALL, &pr),
            DAT_SUCCESS);
  EXPECT_EQ(pr.srq_supported, DAT_TRUE);
  EXPECT_GT(ia.max_srqs, 0);
  EXPECT_GE(ia.max_recv_per_srq, 16);
}

TEST_F(api_srq, SenderWaitsForAnSrqReceive) {
  DAT_LMR_TRIPLET t = src_[0].iov(0, 64);
  ASSERT_EQ(dat_ep_post_send(cli_[0].ep, 1, &t, cookie(9), DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  DAT_EVENT ev;
  EXPECT_EQ(type_of(wait(srv_[0].recv_evd, &ev, 20'000)), DAT_TIMEOUT_EXPIRED);
  ASSERT_EQ(post_srq(3), DAT_SUCCESS);  // the receiver-not-ready retry now lands
  expect_dto(srv_[0].recv_evd, 103, DAT_DTO_SUCCESS, 64);
  expect_dto(cli_[0].req_evd, 9, DAT_DTO_SUCCESS, 64);
}

TEST_F(api_srq, TooLongMessageFailsTheReceiveAndBreaksTheConnection) {
  ASSERT_EQ(post_srq(0), DAT_SUCCESS);
  ASSERT_EQ(reg(ia0_, cli_[0].pz, 1024, DAT_MEM_PRIV_ALL_FLAG, &src_[0]), DAT_SUCCESS);
  DAT_LMR_TRIPLET t = src_[0].iov(0, 1000);  // receive slots hold 256
  ASSERT_EQ(dat_ep_post_send(cli_[0].ep, 1, &t, cookie(5), DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  expect_dto(srv_[0].recv_evd, 100, DAT_DTO_ERR_LOCAL_LENGTH, 0, false);
  EXPECT_EQ(query().outstanding_dto_count, 0);
}

TEST_F(api_srq, LowWatermarkAndSoftHighWatermarkNotify) {
  for (uint32_t i = 0; i < 3; ++i) ASSERT_EQ(post_srq(i), DAT_SUCCESS);
  ASSERT_EQ(dat_srq_set_lw(srq_, 3), DAT_SUCCESS);
  send(0, 10, 1);  // 3 -> 2 available: below 3
  expect_dto(srv_[0].recv_evd, 100, DAT_DTO_SUCCESS, 10);
  ASSERT_NO_FATAL_FAILURE(expect_async(srq_, DAT_SRQ_LOW_WATERMARK_EVENT));
  DAT_EVENT ev;
  send(0, 10, 2);  // one-shot: no second notification
  expect_dto(srv_[0].recv_evd, 101, DAT_DTO_SUCCESS, 10);
  EXPECT_EQ(dat_evd_dequeue(async1_, &ev), DAT_QUEUE_EMPTY);
  EXPECT_EQ(query().low_watermark, 3);

  // Soft high watermark 1: the EP's first receive in progress notifies.
  ASSERT_EQ(dat_ep_set_watermark(srv_[1].ep, 1, DAT_WATERMARK_INFINITE), DAT_SUCCESS);
  send(1, 10, 3);
  expect_dto(srv_[1].recv_evd, 102, DAT_DTO_SUCCESS, 10);
  ASSERT_NO_FATAL_FAILURE(expect_async(srv_[1].ep, DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT));
}

TEST_F(api_srq, HardHighWatermarkBreaksTheConnection) {
  ASSERT_EQ(post_srq(0), DAT_SUCCESS);
  ASSERT_EQ(dat_ep_set_watermark(srv_[0].ep, DAT_WATERMARK_INFINITE, 1), DAT_SUCCESS);
  DAT_LMR_TRIPLET t = src_[0].iov(0, 10);
  ASSERT_EQ(dat_ep_post_send(cli_[0].ep, 1, &t, cookie(1), DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_conn_event(srv_[0], DAT_CONNECTION_EVENT_BROKEN));
}

TEST_F(api_srq, LeavingTheConnectionIsReportedOnTheAsyncEvd) {
  // Like verbs' "last WQE reached": once an SRQ EP's connection is over it
  // takes no more receives, and the consumer may free it.
  ASSERT_EQ(dat_ep_disconnect(cli_[1].ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_conn_event(srv_[1], DAT_CONNECTION_EVENT_DISCONNECTED));
  DAT_EVENT ev;
  ASSERT_EQ(wait(async1_, &ev, 2'000'000), DAT_SUCCESS) << "no async event";
  EXPECT_EQ(ev.event_number, DAT_ASYNC_ERROR_EP_BROKEN);
  EXPECT_EQ(ev.event_data.asynch_error_event_data.dat_handle, srv_[1].ep);
  EXPECT_EQ(ev.event_data.asynch_error_event_data.reason, DAT_EP_TRANSFER_TO_ERROR);
  EXPECT_EQ(dat_evd_dequeue(async1_, &ev), DAT_QUEUE_EMPTY);  // only the SRQ EP's
  ASSERT_EQ(dat_ep_free(srv_[1].ep), DAT_SUCCESS);
  // The other EP still takes receives.
  ASSERT_EQ(post_srq(0), DAT_SUCCESS);
  send(0, 33, 1);
  expect_dto(srv_[0].recv_evd, 100, DAT_DTO_SUCCESS, 33);
}

TEST_F(api_srq, ResizeFreeAndErrors) {
  for (uint32_t i = 0; i < 5; ++i) ASSERT_EQ(post_srq(i), DAT_SUCCESS);
  EXPECT_EQ(type_of(dat_srq_resize(srq_, 4)), DAT_INVALID_STATE);  // 5 posted
  EXPECT_EQ(type_of(dat_srq_resize(srq_, 0)), DAT_INVALID_PARAMETER);
  ASSERT_EQ(dat_srq_resize(srq_, 32), DAT_SUCCESS);
  EXPECT_EQ(query().max_recv_dtos, 32);
  EXPECT_EQ(query().available_dto_count, 5);

  // Posting to the EP directly is refused: its receives come from the SRQ.
  DAT_LMR_TRIPLET t = dst_.iov(0, 16);
  EXPECT_EQ(type_of(dat_ep_post_recv(srv_[0].ep, 1, &t, cookie(1), DAT_COMPLETION_DEFAULT_FLAG)),
            DAT_MODEL_NOT_SUPPORTED);
  // Watermarks only for SRQ EPs.
  EXPECT_EQ(type_of(dat_ep_set_watermark(cli_[0].ep, 1, 2)), DAT_MODEL_NOT_SUPPORTED);
  EXPECT_EQ(type_of(dat_ep_set_watermark(srv_[0].ep, -5, 2)), DAT_INVALID_PARAMETER);

  DAT_LMR_TRIPLET three[3] = {t, t, t};  // max_recv_iov is 2
  EXPECT_EQ(type_of(dat_srq_post_recv(srq_, 3, three, cookie(1))), DAT_INVALID_PARAMETER);
  EXPECT_EQ(type_of(dat_srq_post_recv(srq_, 1, nullptr, cookie(1))), DAT_INVALID_PARAMETER);
  EXPECT_EQ(type_of(dat_srq_set_lw(srq_, 33)), DAT_INVALID_PARAMETER);
  EXPECT_EQ(type_of(dat_srq_query(srq_, DAT_SRQ_FIELD_ALL, nullptr)), DAT_INVALID_PARAMETER);

  DAT_SRQ_ATTR bad{};
  bad.max_recv_dtos = 0;
  bad.max_recv_iov = 1;
  DAT_SRQ_HANDLE s2 = DAT_HANDLE_NULL;
  EXPECT_EQ(type_of(dat_srq_create(ia1_, spz_, &bad, &s2)), DAT_INVALID_PARAMETER);
  bad.max_recv_dtos = 4;
  EXPECT_EQ(type_of(dat_srq_create(ia1_, ia1_, &bad, &s2)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_srq_create(ia1_, spz_, nullptr, &s2)), DAT_INVALID_PARAMETER);
  // An EP in another PZ than its SRQ.
  DAT_PZ_HANDLE other = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_pz_create(ia1_, &other), DAT_SUCCESS);
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  EXPECT_EQ(type_of(dat_ep_create_with_srq(ia1_, other, srv_[0].recv_evd, srv_[0].req_evd,
                                           DAT_HANDLE_NULL, srq_, nullptr, &ep)),
            DAT_INVALID_PARAMETER);
  EXPECT_EQ(type_of(dat_ep_create_with_srq(ia1_, spz_, srv_[0].recv_evd, srv_[0].req_evd,
                                           DAT_HANDLE_NULL, other, nullptr, &ep)),
            DAT_INVALID_HANDLE);

  // An unconnected SRQ EP cannot be moved to another PZ than its SRQ's.
  DAT_EP_HANDLE fresh = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ep_create_with_srq(ia1_, spz_, srv_[0].recv_evd, srv_[0].req_evd, DAT_HANDLE_NULL,
                                   srq_, nullptr, &fresh),
            DAT_SUCCESS);
  DAT_EP_PARAM mp{};
  mp.pz_handle = other;
  EXPECT_EQ(type_of(dat_ep_modify(fresh, DAT_EP_FIELD_PZ_HANDLE, &mp)), DAT_INVALID_PARAMETER);
  mp.pz_handle = spz_;
  EXPECT_EQ(dat_ep_modify(fresh, DAT_EP_FIELD_PZ_HANDLE, &mp), DAT_SUCCESS);
  ASSERT_EQ(dat_ep_free(fresh), DAT_SUCCESS);

  // In use by two EPs: free refused until both are gone; the PZ is in use too.
  EXPECT_EQ(type_of(dat_srq_free(srq_)), DAT_INVALID_STATE);
  EXPECT_EQ(type_of(dat_pz_free(spz_)), DAT_INVALID_STATE);
  ASSERT_EQ(dat_ep_free(srv_[0].ep), DAT_SUCCESS);
  EXPECT_EQ(type_of(dat_srq_free(srq_)), DAT_INVALID_STATE);
  ASSERT_EQ(dat_ep_free(srv_[1].ep), DAT_SUCCESS);  // connected: freed without an event
  DAT_EVENT ev;
  EXPECT_EQ(dat_evd_dequeue(async1_, &ev), DAT_QUEUE_EMPTY);
  DAT_HANDLE_TYPE ht;
  ASSERT_EQ(dat_get_handle_type(srq_, &ht), DAT_SUCCESS);
  EXPECT_EQ(ht, DAT_HANDLE_TYPE_SRQ);
  ASSERT_EQ(dat_srq_free(srq_), DAT_SUCCESS);
  EXPECT_EQ(type_of(dat_srq_free(srq_)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_srq_post_recv(srq_, 1, &t, cookie(1))), DAT_INVALID_HANDLE);
  srq_ = DAT_HANDLE_NULL;
}

}  // namespace
