// Error completions and shared receive queues through dpdat's verbs API: RNR
// retry exhaustion (and rnr_retry 7 waiting for a receive), transport retry
// exhaustion against a peer that vanished (its QP destroyed), the flush that
// follows, and several QPs taking their receives from one SRQ; the
// asynchronous events these raise (ibv_get_async_event).

#include <gtest/gtest.h>

#include <thread>

#include "verbs_fixture.hpp"

namespace verbs_test {

using Clock = std::chrono::steady_clock;

// A SEND to a QP with no receive posted: the responder answers RNR NAKs;
// after rnr_retry retries the requester fails it and its QP goes to ERR.
TEST_F(VerbsTest, RnrRetryExceeded) {
  connect(Retry{.timeout = 14, .retry_cnt = 7, .rnr_retry = 1});
  ASSERT_EQ(post(&a_, IBV_WR_SEND, 0, 32, nullptr, 0, 11), 0);
  ASSERT_EQ(post(&a_, IBV_WR_SEND, 0, 32, nullptr, 0, 12), 0);
  auto wa = poll_n(a_.cq, 2);
  ASSERT_EQ(wa.size(), 2u);
  EXPECT_EQ(wa[0].wr_id, 11u);
  EXPECT_EQ(wa[0].status, IBV_WC_RNR_RETRY_EXC_ERR);
  EXPECT_EQ(wa[0].qp_num, a_.qp->qp_num);
  EXPECT_EQ(wa[1].wr_id, 12u);
  EXPECT_EQ(wa[1].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(state(&a_), IBV_QPS_ERR);
  EXPECT_EQ(state(&b_), IBV_QPS_RTS);  // the responder did nothing wrong
  // The QP failed on its own: IBV_EVENT_QP_FATAL on its context, none on b's.
  ibv_async_event ev{};
  ASSERT_TRUE(next_async(a_.ctx, &ev, 2000));
  EXPECT_EQ(ev.event_type, IBV_EVENT_QP_FATAL);
  EXPECT_EQ(ev.element.qp, a_.qp);
  ibv_ack_async_event(&ev);
  EXPECT_FALSE(next_async(a_.ctx, &ev, 50));
  EXPECT_FALSE(next_async(b_.ctx, &ev, 0));
}

// rnr_retry 7: the requester retries for as long as the peer answers RNR, and
// the SEND lands once a receive is posted.
TEST_F(VerbsTest, RnrRetrySevenWaitsForTheReceive) {
  connect(Retry{.timeout = 14, .retry_cnt = 7, .rnr_retry = 7});
  std::memcpy(a_.buf.data(), "late receive", 13);
  ASSERT_EQ(post(&a_, IBV_WR_SEND, 0, 13, nullptr, 0, 21), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  ibv_wc wc{};
  EXPECT_EQ(ibv_poll_cq(a_.cq, 1, &wc), 0);  // still waiting
  ASSERT_EQ(post_recv(&b_, 4096, 64, 22), 0);
  auto wa = poll_n(a_.cq, 1);
  auto wb = poll_n(b_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wa[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wa[0].wr_id, 21u);
  EXPECT_EQ(wb[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wb[0].byte_len, 13u);
  EXPECT_EQ(std::memcmp(b_.buf.data() + 4096, "late receive", 13), 0);
  EXPECT_EQ(state(&a_), IBV_QPS_RTS);
}

// The peer's QP is destroyed: nothing answers.  The requester retransmits
// retry_cnt times, each after the local ACK timeout (4.096 us * 2^timeout),
// then fails the request with RETRY_EXC_ERR, flushes the rest and is in ERR.
TEST_F(VerbsTest, RetryExceededAgainstAVanishedPeer) {
  constexpr uint8_t kTimeout = 12;  // 16.8 ms
  constexpr uint8_t kRetries = 2;
  connect(Retry{.timeout = kTimeout, .retry_cnt = kRetries, .rnr_retry = 7});
  ASSERT_EQ(ibv_destroy_qp(b_.qp), 0);
  b_.qp = nullptr;
  const auto t0 = Clock::now();
  ASSERT_EQ(post(&a_, IBV_WR_SEND, 0, 32, nullptr, 0, 31), 0);
  ASSERT_EQ(post(&a_, IBV_WR_RDMA_WRITE, 0, 64, nullptr, 0, 32), 0);
  ASSERT_EQ(post(&a_, IBV_WR_SEND, 0, 32, nullptr, 0, 33), 0);
  auto wa = poll_n(a_.cq, 3);
  const auto took = Clock::now() - t0;
  ASSERT_EQ(wa.size(), 3u);
  EXPECT_EQ(wa[0].wr_id, 31u);
  EXPECT_EQ(wa[0].status, IBV_WC_RETRY_EXC_ERR);
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(wa[i].wr_id, 31u + i);
    EXPECT_EQ(wa[i].status, IBV_WC_WR_FLUSH_ERR);
  }
  // The first transmission and kRetries retransmissions, each waited for.
  const double timeout_ms = 4.096e-3 * (1u << kTimeout);
  const double took_ms = std::chrono::duration<double, std::milli>(took).count();
  EXPECT_GE(took_ms, 0.9 * timeout_ms * (kRetries + 1));
  // ... and no longer than those timeouts backed off (x2 each), with a margin
  // for a loaded host: the application's timeout, not a floor of dpdat's.
  EXPECT_LT(took_ms, 12 * timeout_ms * (kRetries + 1));
  RecordProperty("took_ms", std::to_string(took_ms));
  EXPECT_EQ(state(&a_), IBV_QPS_ERR);
  ibv_qp_attr at{};
  ibv_qp_init_attr ia{};
  ASSERT_EQ(ibv_query_qp(a_.qp, &at, IBV_QP_STATE | IBV_QP_RETRY_CNT | IBV_QP_TIMEOUT, &ia), 0);
  EXPECT_EQ(at.qp_state, IBV_QPS_ERR);
  EXPECT_EQ(at.retry_cnt, kRetries);
  EXPECT_EQ(at.timeout, kTimeout);
  ibv_async_event ev{};
  ASSERT_TRUE(next_async(a_.ctx, &ev, 2000));
  EXPECT_EQ(ev.event_type, IBV_EVENT_QP_FATAL);
  EXPECT_EQ(ev.element.qp, a_.qp);
  ibv_ack_async_event(&ev);
  // Posting to a QP in ERR completes as flushed (or is refused): never sent.
  const int rc = post(&a_, IBV_WR_SEND, 0, 8, nullptr, 0, 34);
  if (rc == 0) {
    wa = poll_n(a_.cq, 1);
    ASSERT_EQ(wa.size(), 1u);
    EXPECT_EQ(wa[0].status, IBV_WC_WR_FLUSH_ERR);
  }
}

// Three QPs on b share one SRQ; SENDs from three QPs on a each take the next
// receive of the SRQ, and wc.qp_num tells which QP it arrived on.  The SRQ's
// limit raises IBV_EVENT_SRQ_LIMIT_REACHED once; a QP of it moved to ERR
// raises IBV_EVENT_QP_LAST_WQE_REACHED.
TEST_F(VerbsTest, SrqSharedByThreeQps) {
  constexpr size_t kQps = 3;
  ibv_srq_init_attr si{};
  si.attr.max_wr = 16;
  si.attr.max_sge = 1;
  si.srq_context = &b_;
  ibv_srq* srq = ibv_create_srq(b_.pd, &si);
  ASSERT_NE(srq, nullptr);
  EXPECT_EQ(srq->srq_context, &b_);
  ibv_srq_attr sa{};
  ASSERT_EQ(ibv_query_srq(srq, &sa), 0);
  EXPECT_GE(sa.max_wr, 16u);
  EXPECT_EQ(sa.srq_limit, 0u);
  std::array<ibv_qp*, kQps> qa{}, qb{};
  for (size_t i = 0; i < kQps; ++i) {
    ibv_qp_init_attr ia{};
    ia.send_cq = a_.cq;
    ia.recv_cq = a_.cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = 8;
    ia.cap.max_recv_wr = 8;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    qa[i] = ibv_create_qp(a_.pd, &ia);
    ASSERT_NE(qa[i], nullptr);
    ia.send_cq = b_.cq;
    ia.recv_cq = b_.cq;
    ia.srq = srq;
    qb[i] = ibv_create_qp(b_.pd, &ia);
    ASSERT_NE(qb[i], nullptr);
    EXPECT_EQ(qb[i]->srq, srq);
    connect_qps(qa[i], &a_, qb[i], &b_);
  }
  // A QP with an SRQ takes no receives of its own.
  ibv_sge sge{reinterpret_cast<uintptr_t>(b_.buf.data()), 64, b_.mr->lkey};
  ibv_recv_wr rw{};
  rw.sg_list = &sge;
  rw.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_recv(qb[0], &rw, &bad), EINVAL);
  for (uint64_t i = 0; i < 2 * kQps; ++i) {
    sge.addr = reinterpret_cast<uintptr_t>(b_.buf.data()) + i * 128;
    rw.wr_id = 100 + i;
    ASSERT_EQ(ibv_post_srq_recv(srq, &rw, &bad), 0);
  }
  for (size_t i = 0; i < kQps; ++i) {
    uint8_t* msg = a_.buf.data() + i * 64;
    std::snprintf(reinterpret_cast<char*>(msg), 64, "from qp %zu", i);
    ibv_sge s{reinterpret_cast<uintptr_t>(msg), 10, a_.mr->lkey};
    ibv_send_wr w{};
    w.wr_id = i;
    w.sg_list = &s;
    w.num_sge = 1;
    w.opcode = IBV_WR_SEND;
    w.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* sbad = nullptr;
    ASSERT_EQ(ibv_post_send(qa[i], &w, &sbad), 0);
    auto wa = poll_n(a_.cq, 1);  // one at a time: the SRQ's order is the sends'
    ASSERT_EQ(wa.size(), 1u);
    EXPECT_EQ(wa[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wa[0].qp_num, qa[i]->qp_num);
  }
  auto wb = poll_n(b_.cq, static_cast<int>(kQps));
  ASSERT_EQ(wb.size(), kQps);
  for (size_t i = 0; i < kQps; ++i) {
    EXPECT_EQ(wb[i].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wb[i].opcode, IBV_WC_RECV);
    EXPECT_EQ(wb[i].wr_id, 100u + i);
    EXPECT_EQ(wb[i].qp_num, qb[i]->qp_num);
    EXPECT_EQ(wb[i].src_qp, qa[i]->qp_num);
    EXPECT_EQ(wb[i].byte_len, 10u);
    char want[16];
    std::snprintf(want, sizeof(want), "from qp %zu", i);
    EXPECT_EQ(std::memcmp(b_.buf.data() + wb[i].wr_id % 100 * 128, want, 10), 0);
  }
  // srq_limit 2 with 3 receives left: armed, queried back, no event yet.
  // Above max_wr: refused.
  sa = {};
  sa.srq_limit = 1000;
  EXPECT_NE(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0);
  sa.srq_limit = 2;
  ASSERT_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0);
  sa = {};
  ASSERT_EQ(ibv_query_srq(srq, &sa), 0);
  EXPECT_EQ(sa.srq_limit, 2u);
  ibv_async_event ev{};
  EXPECT_FALSE(next_async(b_.ctx, &ev, 50));
  // Two more SENDs leave 1 receive: below the limit, the event comes and the
  // SRQ is disarmed (limit 0).
  for (int k = 0; k < 2; ++k) {
    ibv_sge s{reinterpret_cast<uintptr_t>(a_.buf.data()), 4, a_.mr->lkey};
    ibv_send_wr w{};
    w.sg_list = &s;
    w.num_sge = 1;
    w.opcode = IBV_WR_SEND;
    w.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* sbad = nullptr;
    ASSERT_EQ(ibv_post_send(qa[1], &w, &sbad), 0);
  }
  EXPECT_EQ(poll_n(a_.cq, 2).size(), 2u);
  EXPECT_EQ(poll_n(b_.cq, 2).size(), 2u);
  ASSERT_TRUE(next_async(b_.ctx, &ev, 2000));
  EXPECT_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
  EXPECT_EQ(ev.element.srq, srq);
  ibv_ack_async_event(&ev);
  ASSERT_EQ(ibv_query_srq(srq, &sa), 0);
  EXPECT_EQ(sa.srq_limit, 0u);
  EXPECT_FALSE(next_async(b_.ctx, &ev, 50));  // once per arming
  // A QP of the SRQ moved to ERR by the application: "last WQE reached" for
  // it, and no QP_FATAL (nothing failed).
  ibv_qp_attr at{};
  at.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(qb[2], &at, IBV_QP_STATE), 0);
  ASSERT_TRUE(next_async(b_.ctx, &ev, 2000));
  EXPECT_EQ(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
  EXPECT_EQ(ev.element.qp, qb[2]);
  ibv_ack_async_event(&ev);
  EXPECT_FALSE(next_async(b_.ctx, &ev, 50));
  EXPECT_EQ(ibv_destroy_srq(srq), EBUSY);  // its QPs still use it
  for (size_t i = 0; i < kQps; ++i) {
    EXPECT_EQ(ibv_destroy_qp(qa[i]), 0);
    EXPECT_EQ(ibv_destroy_qp(qb[i]), 0);
  }
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
}

// The application moving a QP to ERR is no fatal error: no async event.
TEST_F(VerbsTest, ErrorByTheApplicationRaisesNoAsyncEvent) {
  connect();
  ibv_qp_attr at{};
  at.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(a_.qp, &at, IBV_QP_STATE), 0);
  ibv_async_event ev{};
  EXPECT_FALSE(next_async(a_.ctx, &ev, 100));
  EXPECT_FALSE(next_async(b_.ctx, &ev, 0));
}

}  // namespace verbs_test
