// What UCX's rc_verbs transport asks of a verbs provider beyond the usual
// (read from UCX's uct/ib sources), each through the verbs API against
// dpdat's libibverbs.so.1 on the in-process ring link: a flush by an empty
// inline RDMA WRITE that names no memory at all, and a UD QP made only for
// its number (UCX's rdmacm transport names its connections by one).

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "verbs_fixture.hpp"

namespace verbs_test {

// A zero-length RDMA WRITE touches no memory of the responder's, so its
// R_Key and address are not checked (UCX flushes an endpoint with one whose
// rkey and address are 0, no scatter/gather list, inline).
TEST_F(VerbsTest, EmptyWriteNeedsNoRkey) {
  connect();
  ibv_send_wr wr{};
  wr.wr_id = 7;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_.qp, &wr, &bad), 0);
  auto wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].wr_id, 7u);
  EXPECT_EQ(wa[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wa[0].opcode, IBV_WC_RDMA_WRITE);
  // Not inline either, and the queue pair is still good afterwards.
  wr.wr_id = 8;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.rkey = 0x1234;
  wr.wr.rdma.remote_addr = 0x10;
  ASSERT_EQ(ibv_post_send(a_.qp, &wr, &bad), 0);
  wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, IBV_WC_SUCCESS);
  // An empty READ the same way.
  wr.wr_id = 9;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.wr.rdma.rkey = 0;
  wr.wr.rdma.remote_addr = 0;
  ASSERT_EQ(ibv_post_send(a_.qp, &wr, &bad), 0);
  wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wa[0].opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(wa[0].byte_len, 0u);
  EXPECT_EQ(state(&a_), IBV_QPS_RTS);
  EXPECT_EQ(state(&b_), IBV_QPS_RTS);
  ASSERT_EQ(post(&a_, IBV_WR_RDMA_WRITE, 0, 64, &b_, 0, 10), 0);
  wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, IBV_WC_SUCCESS);
}

// A UD QP is a queue pair number only: created on a PD with CQs as any, of
// type UD, unique among the context's QPs, in RESET; it goes no further
// (dpdat carries no datagrams: INIT is EOPNOTSUPP), posts are refused, and
// it can be destroyed.
TEST_F(VerbsTest, UdQpHoldsItsNumberOnly) {
  ibv_qp_init_attr ia{};
  ia.send_cq = a_.cq;
  ia.recv_cq = a_.cq;
  ia.qp_type = IBV_QPT_UD;
  ia.cap = ibv_qp_cap{2, 2, 1, 1, 0};
  ibv_qp* u = ibv_create_qp(a_.pd, &ia);
  ASSERT_NE(u, nullptr) << "errno " << errno;
  ibv_qp* u2 = ibv_create_qp(a_.pd, &ia);
  ASSERT_NE(u2, nullptr);
  EXPECT_EQ(u->qp_type, IBV_QPT_UD);
  EXPECT_NE(u->qp_num, 0u);
  EXPECT_NE(u->qp_num, u2->qp_num);
  EXPECT_NE(u->qp_num, a_.qp->qp_num);
  EXPECT_EQ(u->state, IBV_QPS_RESET);
  ibv_qp_attr at{};
  ibv_qp_init_attr qi{};
  ASSERT_EQ(ibv_query_qp(u, &at, IBV_QP_STATE, &qi), 0);
  EXPECT_EQ(at.qp_state, IBV_QPS_RESET);
  EXPECT_EQ(qi.qp_type, IBV_QPT_UD);
  at = {};
  at.qp_state = IBV_QPS_INIT;
  at.port_num = 1;
  at.qkey = 0x11111111;
  EXPECT_EQ(ibv_modify_qp(u, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY),
            EOPNOTSUPP);
  ibv_sge sge{reinterpret_cast<uintptr_t>(a_.buf.data()), 64, a_.mr->lkey};
  ibv_recv_wr rwr{};
  rwr.sg_list = &sge;
  rwr.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  EXPECT_EQ(ibv_post_recv(u, &rwr, &rbad), EINVAL);
  ibv_send_wr swr{};
  swr.sg_list = &sge;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_SEND;
  ibv_send_wr* sbad = nullptr;
  EXPECT_EQ(ibv_post_send(u, &swr, &sbad), EINVAL);
  at = {};
  at.qp_state = IBV_QPS_ERR;
  EXPECT_EQ(ibv_modify_qp(u, &at, IBV_QP_STATE), 0);
  EXPECT_EQ(ibv_destroy_qp(u2), 0);
  EXPECT_EQ(ibv_destroy_qp(u), 0);
  // The RC QP of the fixture is untouched.
  connect();
  ASSERT_EQ(post(&a_, IBV_WR_RDMA_WRITE, 0, 64, &b_, 0, 1), 0);
  auto wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, IBV_WC_SUCCESS);
}

}  // namespace verbs_test
