// The send-queue drain state (SQD) and the asynchronous events it and the
// other QP, CQ and port conditions raise through dpdat's verbs API:
// SQ_DRAINED, COMM_EST, CQ_ERR, PORT_ERR and PORT_ACTIVE
// (ibv_get_async_event), in one process over the ring link.

#include <gtest/gtest.h>
#include <rte_ethdev.h>

#include "verbs_fixture.hpp"

namespace verbs_test {

namespace {

int to_sqd(ibv_qp* qp, bool notify) {
  ibv_qp_attr at{};
  at.qp_state = IBV_QPS_SQD;
  at.en_sqd_async_notify = notify ? 1 : 0;
  return ibv_modify_qp(qp, &at, IBV_QP_STATE | (notify ? IBV_QP_EN_SQD_ASYNC_NOTIFY : 0));
}

int to_state(ibv_qp* qp, ibv_qp_state s) {
  ibv_qp_attr at{};
  at.qp_state = s;
  return ibv_modify_qp(qp, &at, IBV_QP_STATE);
}

ibv_qp_attr query(ibv_qp* qp) {
  ibv_qp_attr at{};
  ibv_qp_init_attr ia{};
  EXPECT_EQ(ibv_query_qp(qp, &at, IBV_QP_STATE, &ia), 0);
  return at;
}

}  // namespace

// A SEND waits for a receive (RNR, rnr_retry 7) while its QP enters SQD: new
// sends are refused, receives go on, attributes wait for the drain; once the
// SEND completes, SQ_DRAINED comes and the QP can go back to RTS.
TEST_F(VerbsTest, SqdRefusesSendsDrainsAndNotifies) {
  connect();
  ASSERT_EQ(post(&a_, IBV_WR_SEND, 0, 64, nullptr, 0, 1), 0);  // b has no receive yet
  ASSERT_EQ(to_sqd(a_.qp, true), 0);
  ibv_qp_attr at = query(a_.qp);
  EXPECT_EQ(at.qp_state, IBV_QPS_SQD);
  EXPECT_EQ(at.sq_draining, 1);
  EXPECT_EQ(a_.qp->state, IBV_QPS_SQD);
  // New sends are refused, the bad WR named.
  ibv_sge sge{reinterpret_cast<uintptr_t>(a_.buf.data()), 8, a_.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = 2;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(b_.buf.data());
  wr.wr.rdma.rkey = b_.mr->rkey;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a_.qp, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
  // Attributes change only once drained; a new path or retry budget never.
  ibv_qp_attr mod{};
  mod.qp_state = IBV_QPS_SQD;
  mod.min_rnr_timer = 14;
  EXPECT_EQ(ibv_modify_qp(a_.qp, &mod, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER), EBUSY);
  EXPECT_EQ(to_state(a_.qp, IBV_QPS_SQD), 0);  // SQD -> SQD, nothing else
  ibv_async_event ev{};
  EXPECT_FALSE(next_async(a_.ctx, &ev, 50));  // still draining
  // Receives still work in SQD: b's SEND lands in a's receive.
  ASSERT_EQ(post_recv(&a_, 1024, 64, 7), 0);
  ASSERT_EQ(post(&b_, IBV_WR_SEND, 4096, 16, nullptr, 0, 8), 0);
  std::vector<ibv_wc> wc = poll_n(a_.cq, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 7u);
  EXPECT_EQ(wc[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  wc = poll_n(b_.cq, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(query(a_.qp).sq_draining, 1);  // a's SEND still waits
  // b posts its receive: a's SEND completes, the send queue has drained.
  ASSERT_EQ(post_recv(&b_, 0, 64, 9), 0);
  wc = poll_n(a_.cq, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  ASSERT_TRUE(next_async(a_.ctx, &ev, 2000));
  EXPECT_EQ(ev.event_type, IBV_EVENT_SQ_DRAINED);
  EXPECT_EQ(ev.element.qp, a_.qp);
  ibv_ack_async_event(&ev);
  EXPECT_FALSE(next_async(a_.ctx, &ev, 20));  // once
  EXPECT_FALSE(next_async(b_.ctx, &ev, 0));
  at = query(a_.qp);
  EXPECT_EQ(at.qp_state, IBV_QPS_SQD);
  EXPECT_EQ(at.sq_draining, 0);
  EXPECT_EQ(poll_n(b_.cq, 1).size(), 1u);  // b's receive
  // Drained: SQD -> SQD may change attributes now, but not the requester's.
  EXPECT_EQ(ibv_modify_qp(a_.qp, &mod, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER), 0);
  EXPECT_EQ(query(a_.qp).min_rnr_timer, 14);
  mod.timeout = 10;
  EXPECT_EQ(ibv_modify_qp(a_.qp, &mod, IBV_QP_STATE | IBV_QP_TIMEOUT), EOPNOTSUPP);
  // SQD allows neither INIT, RTR nor a required attribute it does not take.
  EXPECT_EQ(to_state(a_.qp, IBV_QPS_INIT), EINVAL);
  EXPECT_EQ(to_state(a_.qp, IBV_QPS_RTR), EINVAL);
  mod.sq_psn = 5;
  EXPECT_EQ(ibv_modify_qp(a_.qp, &mod, IBV_QP_STATE | IBV_QP_SQ_PSN), EINVAL);
  // Back to RTS: sends go again.
  ASSERT_EQ(to_state(a_.qp, IBV_QPS_RTS), 0);
  EXPECT_EQ(query(a_.qp).qp_state, IBV_QPS_RTS);
  ASSERT_EQ(ibv_post_send(a_.qp, &wr, &bad), 0);
  wc = poll_n(a_.cq, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 2u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
}

// SQD is entered from RTS only; without en_sqd_async_notify the drain is
// silent, with it an idle send queue is drained at once.
TEST_F(VerbsTest, SqdTransitionsAndTheNotifyFlag) {
  EXPECT_EQ(to_sqd(a_.qp, false), EINVAL);  // RESET -> SQD
  ASSERT_NO_FATAL_FAILURE(both_to(IBV_QPS_INIT));
  EXPECT_EQ(to_sqd(a_.qp, false), EINVAL);  // INIT -> SQD
  ASSERT_NO_FATAL_FAILURE(both_to(IBV_QPS_RTR));
  EXPECT_EQ(to_sqd(a_.qp, false), EINVAL);  // RTR -> SQD
  ASSERT_NO_FATAL_FAILURE(both_to(IBV_QPS_RTS));
  // RTS -> SQD takes no attribute but the notify flag.
  ibv_qp_attr at{};
  at.qp_state = IBV_QPS_SQD;
  at.min_rnr_timer = 12;
  EXPECT_EQ(ibv_modify_qp(a_.qp, &at, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER), EINVAL);
  ASSERT_EQ(to_sqd(a_.qp, false), 0);
  ibv_async_event ev{};
  EXPECT_FALSE(next_async(a_.ctx, &ev, 50));
  EXPECT_EQ(query(a_.qp).sq_draining, 0);  // nothing was outstanding
  ASSERT_EQ(to_state(a_.qp, IBV_QPS_RTS), 0);
  ASSERT_EQ(post(&a_, IBV_WR_RDMA_WRITE, 0, 64, &b_, 0, 3), 0);
  ASSERT_EQ(poll_n(a_.cq, 1).size(), 1u);
  ASSERT_EQ(to_sqd(a_.qp, true), 0);
  ASSERT_TRUE(next_async(a_.ctx, &ev, 2000));
  EXPECT_EQ(ev.event_type, IBV_EVENT_SQ_DRAINED);
  EXPECT_EQ(ev.element.qp, a_.qp);
  ibv_ack_async_event(&ev);
  // ERR from SQD: no drain event follows, and the QP is in ERR.
  ASSERT_EQ(to_state(a_.qp, IBV_QPS_ERR), 0);
  EXPECT_EQ(query(a_.qp).qp_state, IBV_QPS_ERR);
  EXPECT_FALSE(next_async(a_.ctx, &ev, 20));
}

// A QP in RTR that receives its first packet (its peer reached RTS first
// and wrote to it) raises COMM_EST once, whether or not it moved to RTS
// before the event was raised; the writer, which received nothing in RTR,
// raises none.
TEST_F(VerbsTest, FirstPacketInRtrRaisesCommEst) {
  ASSERT_NO_FATAL_FAILURE(both_to(IBV_QPS_INIT));
  ASSERT_NO_FATAL_FAILURE(both_to(IBV_QPS_RTR));
  ASSERT_EQ(to_rts(&a_, kPsnA), 0);
  ibv_async_event ev{};
  EXPECT_FALSE(next_async(b_.ctx, &ev, 20));  // nothing received yet
  ASSERT_EQ(post(&a_, IBV_WR_RDMA_WRITE, 0, 64, &b_, 0, 1), 0);
  const std::vector<ibv_wc> wc = poll_n(a_.cq, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  ASSERT_TRUE(next_async(b_.ctx, &ev, 2000));
  EXPECT_EQ(ev.event_type, IBV_EVENT_COMM_EST);
  EXPECT_EQ(ev.element.qp, b_.qp);
  ibv_ack_async_event(&ev);
  ASSERT_EQ(to_rts(&b_, kPsnB), 0);
  ASSERT_EQ(post(&a_, IBV_WR_RDMA_WRITE, 0, 64, &b_, 0, 2), 0);
  ASSERT_EQ(poll_n(a_.cq, 1).size(), 1u);
  EXPECT_FALSE(next_async(b_.ctx, &ev, 20));  // once
  EXPECT_FALSE(next_async(a_.ctx, &ev, 0));
}

// The same when the receiver moves to RTS right after the packet, before
// any housekeeping pass saw it: the move itself tells.
TEST_F(VerbsTest, CommEstIsToldWhenLeavingRtr) {
  ASSERT_NO_FATAL_FAILURE(both_to(IBV_QPS_INIT));
  ASSERT_NO_FATAL_FAILURE(both_to(IBV_QPS_RTR));
  ASSERT_EQ(to_rts(&a_, kPsnA), 0);
  ASSERT_EQ(post(&a_, IBV_WR_RDMA_WRITE, 0, 64, &b_, 0, 1), 0);
  ASSERT_EQ(poll_n(a_.cq, 1).size(), 1u);
  ASSERT_EQ(to_rts(&b_, kPsnB), 0);
  ibv_async_event ev{};
  ASSERT_TRUE(next_async(b_.ctx, &ev, 2000));
  EXPECT_EQ(ev.event_type, IBV_EVENT_COMM_EST);
  EXPECT_EQ(ev.element.qp, b_.qp);
  ibv_ack_async_event(&ev);
  EXPECT_FALSE(next_async(b_.ctx, &ev, 20));
}

// More completions than the CQ holds: CQ_ERR names the CQ, once.  dpdat
// loses nothing: the completions wait and are all polled afterwards.
TEST_F(VerbsTest, CqOverrunRaisesCqErr) {
  ibv_cq* small = ibv_create_cq(a_.ctx, 2, nullptr, nullptr, 0);
  ASSERT_NE(small, nullptr);
  ibv_qp_init_attr ia{};
  ia.send_cq = small;
  ia.recv_cq = small;
  ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_wr = 16;
  ia.cap.max_recv_wr = 1;
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  ibv_qp* qa = ibv_create_qp(a_.pd, &ia);
  ASSERT_NE(qa, nullptr);
  ia.send_cq = b_.cq;
  ia.recv_cq = b_.cq;
  ibv_qp* qb = ibv_create_qp(b_.pd, &ia);
  ASSERT_NE(qb, nullptr);
  connect_qps(qa, &a_, qb, &b_);
  constexpr int kWrites = 8;
  for (int i = 0; i < kWrites; ++i) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(a_.buf.data()), 64, a_.mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = static_cast<uint64_t>(i);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(b_.buf.data());
    wr.wr.rdma.rkey = b_.mr->rkey;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(qa, &wr, &bad), 0);
  }
  ibv_async_event ev{};
  ASSERT_TRUE(next_async(a_.ctx, &ev, 2000));
  EXPECT_EQ(ev.event_type, IBV_EVENT_CQ_ERR);
  EXPECT_EQ(ev.element.cq, small);
  ibv_ack_async_event(&ev);
  const std::vector<ibv_wc> wc = poll_n(small, kWrites);
  ASSERT_EQ(wc.size(), static_cast<size_t>(kWrites));
  for (size_t i = 0; i < wc.size(); ++i) {
    EXPECT_EQ(wc[i].wr_id, i);
    EXPECT_EQ(wc[i].status, IBV_WC_SUCCESS);
  }
  EXPECT_FALSE(next_async(a_.ctx, &ev, 20));  // once per CQ
  EXPECT_EQ(ibv_destroy_qp(qa), 0);
  EXPECT_EQ(ibv_destroy_qp(qb), 0);
  EXPECT_EQ(ibv_destroy_cq(small), 0);
}

// The ring link's dpdat0 end goes down, then up again (its net_ring port,
// set through DPDK): the device's port reports it, and each change is an
// async event of that device only.
TEST_F(VerbsTest, LinkDownAndUpArePortEvents) {
  uint16_t port = 0;
  ASSERT_EQ(rte_eth_dev_get_port_by_name("net_ring_dpdat_ia_a", &port), 0);
  ibv_port_attr pa{};
  ASSERT_EQ(ibv_query_port(a_.ctx, 1, &pa), 0);
  EXPECT_EQ(pa.state, IBV_PORT_ACTIVE);
  ASSERT_EQ(rte_eth_dev_set_link_down(port), 0);
  ASSERT_EQ(ibv_query_port(a_.ctx, 1, &pa), 0);
  EXPECT_EQ(pa.state, IBV_PORT_DOWN);
  ibv_async_event ev{};
  ASSERT_TRUE(next_async(a_.ctx, &ev, 2000)) << "no PORT_ERR";
  EXPECT_EQ(ev.event_type, IBV_EVENT_PORT_ERR);
  EXPECT_EQ(ev.element.port_num, 1);
  ibv_ack_async_event(&ev);
  ASSERT_EQ(rte_eth_dev_set_link_up(port), 0);
  ASSERT_TRUE(next_async(a_.ctx, &ev, 2000)) << "no PORT_ACTIVE";
  EXPECT_EQ(ev.event_type, IBV_EVENT_PORT_ACTIVE);
  EXPECT_EQ(ev.element.port_num, 1);
  ibv_ack_async_event(&ev);
  ASSERT_EQ(ibv_query_port(a_.ctx, 1, &pa), 0);
  EXPECT_EQ(pa.state, IBV_PORT_ACTIVE);
  EXPECT_FALSE(next_async(b_.ctx, &ev, 0));  // the other end's link never changed
}

}  // namespace verbs_test
