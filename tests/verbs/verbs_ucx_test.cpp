// What UCX's rc_verbs transport asks of a verbs provider beyond the usual
// (read from UCX's uct/ib sources), each through the verbs API against
// dpdat's libibverbs.so.1 on the in-process ring link: a flush by an empty
// inline RDMA WRITE that names no memory at all.

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

}  // namespace verbs_test
