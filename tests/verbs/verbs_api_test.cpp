// dpdat's libibverbs.so.1 through the verbs API itself (linked against it,
// compiled against Debian's <infiniband/verbs.h>): two RC queue pairs on the
// process's two built-in interfaces (dpdat0 and dpdat1, the ends of the
// in-process net_ring link), connected by ibv_modify_qp with each other's
// numbers as an application would exchange them.  Completions (opcode, byte
// count, immediate data, status), the error paths (bad lkey, bad rkey,
// access beyond an MR or without the privilege, invalid state transitions,
// flush on error), completion channels, the calls dpdat does not offer, and
// the misuse the verbs call-sequence fuzzer (tests/fuzz/verbs_fuzz) found
// answered wrongly.

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "verbs_fixture.hpp"

namespace verbs_test {

TEST_F(VerbsTest, DeviceAndPort) {
  ibv_device_attr da{};
  ASSERT_EQ(ibv_query_device(a_.ctx, &da), 0);
  EXPECT_EQ(da.phys_port_cnt, 1);
  EXPECT_GE(da.max_qp_wr, 32);
  ibv_port_attr pa{};
  ASSERT_EQ(ibv_query_port(a_.ctx, 1, &pa), 0);
  EXPECT_EQ(pa.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_GE(pa.active_mtu, IBV_MTU_1024);
  EXPECT_EQ(a_.gid.raw[10], 0xFF);
  EXPECT_EQ(a_.gid.raw[12], 192);
  ibv_gid_entry e{};
  ASSERT_EQ(ibv_query_gid_ex(a_.ctx, 1, 0, &e, 0), 0);
  EXPECT_EQ(e.gid_type, IBV_GID_TYPE_ROCE_V2);
  EXPECT_EQ(ibv_query_gid_ex(a_.ctx, 1, 1, &e, 0), ENODATA);
  EXPECT_NE(ibv_query_port(a_.ctx, 2, &pa), 0);
}

TEST_F(VerbsTest, SendWriteReadAtomics) {
  connect();
  EXPECT_EQ(state(&a_), IBV_QPS_RTS);
  // SEND with immediate into a posted receive.
  std::memcpy(a_.buf.data(), "hello verbs", 12);
  ASSERT_EQ(post_recv(&b_, 100, 64, 7), 0);
  ASSERT_EQ(post(&a_, IBV_WR_SEND_WITH_IMM, 0, 12, nullptr, 0, 1), 0);
  auto wa = poll_n(a_.cq, 1);
  auto wb = poll_n(b_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wa[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wa[0].opcode, IBV_WC_SEND);
  EXPECT_EQ(wa[0].wr_id, 1u);
  EXPECT_EQ(wb[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wb[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(wb[0].wr_id, 7u);
  EXPECT_EQ(wb[0].byte_len, 12u);
  EXPECT_TRUE(wb[0].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(ntohl(wb[0].imm_data), 0xC0FFEEu);
  EXPECT_EQ(wb[0].qp_num, b_.qp->qp_num);
  EXPECT_EQ(wb[0].src_qp, a_.qp->qp_num);
  EXPECT_EQ(std::memcmp(b_.buf.data() + 100, "hello verbs", 12), 0);

  // RDMA WRITE with immediate: data placed, the receive reports its length.
  for (size_t i = 0; i < 5000; ++i) a_.buf[1000 + i] = static_cast<uint8_t>(i * 7);
  ASSERT_EQ(post_recv(&b_, 0, 0, 8), 0);
  ASSERT_EQ(post(&a_, IBV_WR_RDMA_WRITE_WITH_IMM, 1000, 5000, &b_, 20000, 2), 0);
  wa = poll_n(a_.cq, 1);
  wb = poll_n(b_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wa[0].opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(wb[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_EQ(wb[0].byte_len, 5000u);
  EXPECT_EQ(std::memcmp(b_.buf.data() + 20000, a_.buf.data() + 1000, 5000), 0);

  // Unsignalled WRITE, then a signalled READ back: one completion, the READ's.
  for (size_t i = 0; i < 3000; ++i) b_.buf[30000 + i] = static_cast<uint8_t>(i * 3 + 1);
  ASSERT_EQ(post(&a_, IBV_WR_RDMA_WRITE, 1000, 100, &b_, 40000, 3, 0), 0);
  ASSERT_EQ(post(&a_, IBV_WR_RDMA_READ, 8000, 3000, &b_, 30000, 4), 0);
  wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].wr_id, 4u);
  EXPECT_EQ(wa[0].opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(wa[0].byte_len, 3000u);
  EXPECT_EQ(std::memcmp(a_.buf.data() + 8000, b_.buf.data() + 30000, 3000), 0);

  // Fetch-and-add and compare-and-swap on an 8-byte word of b.
  uint64_t v = 40;
  std::memcpy(b_.buf.data() + 512, &v, 8);
  ibv_sge sge{reinterpret_cast<uintptr_t>(a_.buf.data()) + 600, 8, a_.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = 5;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.atomic.remote_addr = reinterpret_cast<uintptr_t>(b_.buf.data()) + 512;
  wr.wr.atomic.rkey = b_.mr->rkey;
  wr.wr.atomic.compare_add = 2;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_.qp, &wr, &bad), 0);
  wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].opcode, IBV_WC_FETCH_ADD);
  std::memcpy(&v, a_.buf.data() + 600, 8);
  EXPECT_EQ(v, 40u);
  wr.wr_id = 6;
  wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
  wr.wr.atomic.compare_add = 42;
  wr.wr.atomic.swap = 99;
  ASSERT_EQ(ibv_post_send(a_.qp, &wr, &bad), 0);
  wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].opcode, IBV_WC_COMP_SWAP);
  std::memcpy(&v, a_.buf.data() + 600, 8);
  EXPECT_EQ(v, 42u);
  std::memcpy(&v, b_.buf.data() + 512, 8);
  EXPECT_EQ(v, 99u);
}

TEST_F(VerbsTest, InlineSendCopiesAtPost) {
  connect();
  ASSERT_EQ(post_recv(&b_, 0, 64, 1), 0);
  std::memcpy(a_.buf.data(), "inline!", 8);
  ASSERT_EQ(post(&a_, IBV_WR_SEND, 0, 8, nullptr, 0, 1, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
  std::memcpy(a_.buf.data(), "changed", 8);  // the post already took the bytes
  auto wb = poll_n(b_.cq, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(std::memcmp(b_.buf.data(), "inline!", 8), 0);
  // More than the QP's inline limit is refused at post.
  EXPECT_EQ(post(&a_, IBV_WR_SEND, 0, 4096, nullptr, 0, 2, IBV_SEND_INLINE), EINVAL);
}

TEST_F(VerbsTest, BadLkeyIsLocalProtectionError) {
  connect();
  ASSERT_EQ(post(&a_, IBV_WR_RDMA_WRITE, 0, 64, &b_, 0, 9, IBV_SEND_SIGNALED, a_.mr->lkey + 0x1000),
            0);
  auto wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].wr_id, 9u);
  EXPECT_EQ(wa[0].status, IBV_WC_LOC_PROT_ERR);
  EXPECT_EQ(state(&a_), IBV_QPS_ERR);
}

TEST_F(VerbsTest, BadRkeyIsRemoteAccessError) {
  connect();
  ASSERT_EQ(
      post(&a_, IBV_WR_RDMA_WRITE, 0, 64, &b_, 0, 9, IBV_SEND_SIGNALED, 0, b_.mr->rkey ^ 0x5500),
      0);
  auto wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(state(&a_), IBV_QPS_ERR);
}

TEST_F(VerbsTest, AccessBeyondTheMrIsRemoteAccessError) {
  connect();
  ASSERT_EQ(post(&a_, IBV_WR_RDMA_READ, 0, 256, &b_, kBuf - 128, 3), 0);
  auto wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, IBV_WC_REM_ACCESS_ERR);
}

TEST_F(VerbsTest, ReadWithoutRemoteReadIsRemoteAccessError) {
  connect();
  ibv_mr* local_only = ibv_reg_mr(b_.pd, b_.buf.data(), 4096, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(local_only, nullptr);
  ASSERT_EQ(post(&a_, IBV_WR_RDMA_READ, 0, 64, &b_, 0, 3, IBV_SEND_SIGNALED, 0, local_only->rkey),
            0);
  auto wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(ibv_dereg_mr(local_only), 0);
}

// The target QP's qp_access_flags limit what its responder takes, whatever
// the memory region allows (set here on RTS -> RTS).
TEST_F(VerbsTest, QpAccessFlagsLimitTheResponder) {
  connect();
  auto allow = [this](unsigned flags) {
    ibv_qp_attr at{};
    at.qp_state = IBV_QPS_RTS;
    at.qp_access_flags = flags;
    return ibv_modify_qp(b_.qp, &at, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS);
  };
  ASSERT_EQ(allow(IBV_ACCESS_REMOTE_WRITE), 0);
  ibv_qp_attr q{};
  ibv_qp_init_attr qi{};
  ASSERT_EQ(ibv_query_qp(b_.qp, &q, IBV_QP_ACCESS_FLAGS, &qi), 0);
  EXPECT_EQ(q.qp_access_flags, static_cast<unsigned>(IBV_ACCESS_REMOTE_WRITE));
  // A WRITE still lands; a READ does not.
  std::memset(a_.buf.data(), 0x3C, 64);
  ASSERT_EQ(post(&a_, IBV_WR_RDMA_WRITE, 0, 64, &b_, 0, 1, IBV_SEND_SIGNALED), 0);
  auto wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(a_.buf.data(), b_.buf.data(), 64), 0);
  ASSERT_EQ(post(&a_, IBV_WR_RDMA_READ, 128, 64, &b_, 0, 2, IBV_SEND_SIGNALED), 0);
  wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, IBV_WC_REM_ACCESS_ERR);
}

TEST_F(VerbsTest, WriteToAQpWithoutRemoteWriteIsRemoteAccessError) {
  connect();
  ibv_qp_attr at{};
  at.qp_state = IBV_QPS_RTS;
  at.qp_access_flags = IBV_ACCESS_REMOTE_READ;
  ASSERT_EQ(ibv_modify_qp(b_.qp, &at, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS), 0);
  std::memset(b_.buf.data(), 0, 64);
  std::memset(a_.buf.data(), 0x77, 64);
  ASSERT_EQ(post(&a_, IBV_WR_RDMA_WRITE, 0, 64, &b_, 0, 3, IBV_SEND_SIGNALED), 0);
  auto wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(b_.buf[0], 0) << "the WRITE landed";
}

TEST_F(VerbsTest, RegMrChecksAccessFlags) {
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(a_.pd, a_.buf.data(), 4096, IBV_ACCESS_REMOTE_WRITE), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ibv_mr* m = ibv_reg_mr_iova2(a_.pd, a_.buf.data(), 4096, 0x100000,
                               IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(ibv_dereg_mr(m), 0);
}

TEST_F(VerbsTest, InvalidTransitionsAndPostsInTheWrongState) {
  ibv_qp_attr at{};
  at.qp_state = IBV_QPS_RTS;
  EXPECT_EQ(ibv_modify_qp(a_.qp, &at, IBV_QP_STATE), EINVAL);  // RESET -> RTS
  EXPECT_EQ(to_rtr(&a_, &b_, 0), EINVAL);                      // RESET -> RTR
  EXPECT_EQ(post_recv(&a_, 0, 64, 1), EINVAL);                 // receives from INIT on
  at.qp_state = IBV_QPS_INIT;
  EXPECT_EQ(ibv_modify_qp(a_.qp, &at, IBV_QP_STATE), EINVAL);  // INIT needs port, pkey, access
  ASSERT_EQ(to_init(&a_), 0);
  EXPECT_EQ(state(&a_), IBV_QPS_INIT);
  EXPECT_EQ(post(&a_, IBV_WR_SEND, 0, 8, nullptr, 0, 1), EINVAL);  // no sends before RTS
  EXPECT_EQ(to_rts(&a_, 0), EINVAL);                               // INIT -> RTS
  at = {};
  at.qp_state = IBV_QPS_RTR;
  EXPECT_EQ(ibv_modify_qp(a_.qp, &at, IBV_QP_STATE), EINVAL);  // RTR needs the path
  ibv_qp_attr bad{};
  bad.qp_state = IBV_QPS_RTR;
  bad.path_mtu = IBV_MTU_1024;
  bad.dest_qp_num = b_.qp->qp_num;
  bad.ah_attr.is_global = 0;  // RoCE: a GRH is required
  bad.ah_attr.port_num = 1;
  EXPECT_EQ(ibv_modify_qp(a_.qp, &bad,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                              IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
            EINVAL);
  ASSERT_EQ(to_rtr(&a_, &b_, 5), 0);
  EXPECT_EQ(post(&a_, IBV_WR_SEND, 0, 8, nullptr, 0, 1), EINVAL);  // RTR: still no sends
  EXPECT_EQ(to_init(&a_), EINVAL);                                 // RTR -> INIT
  ASSERT_EQ(to_rts(&a_, 9), 0);
  ibv_qp_attr q{};
  ibv_qp_init_attr qi{};
  ASSERT_EQ(ibv_query_qp(a_.qp, &q, IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_SQ_PSN, &qi), 0);
  EXPECT_EQ(q.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(q.dest_qp_num, b_.qp->qp_num);
  EXPECT_EQ(q.sq_psn, 9u);
  EXPECT_EQ(q.rq_psn, 5u);
  EXPECT_EQ(q.path_mtu, IBV_MTU_1024);
  EXPECT_EQ(q.timeout, 14);
  EXPECT_EQ(q.retry_cnt, 7);
  EXPECT_EQ(std::memcmp(q.ah_attr.grh.dgid.raw, b_.gid.raw, 16), 0);
  // Back to RESET (any state may): a fresh queue pair, INIT works again.
  at = {};
  at.qp_state = IBV_QPS_RESET;
  ASSERT_EQ(ibv_modify_qp(a_.qp, &at, IBV_QP_STATE), 0);
  EXPECT_EQ(state(&a_), IBV_QPS_RESET);
  EXPECT_EQ(to_init(&a_), 0);
}

TEST_F(VerbsTest, ErrorStateFlushesEveryReceive) {
  connect();
  for (uint64_t i = 0; i < 5; ++i) ASSERT_EQ(post_recv(&b_, i * 64, 64, 100 + i), 0);
  ibv_qp_attr at{};
  at.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(b_.qp, &at, IBV_QP_STATE), 0);
  auto wb = poll_n(b_.cq, 5);
  ASSERT_EQ(wb.size(), 5u);
  for (uint64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(wb[i].wr_id, 100 + i);
    EXPECT_EQ(wb[i].status, IBV_WC_WR_FLUSH_ERR);
  }
  EXPECT_EQ(state(&b_), IBV_QPS_ERR);
  EXPECT_EQ(ibv_modify_qp(b_.qp, &at, IBV_QP_STATE), 0);  // ERR -> ERR
  at.qp_state = IBV_QPS_RTS;
  EXPECT_EQ(ibv_modify_qp(b_.qp, &at, IBV_QP_STATE), EINVAL);
}

// Work requests posted in ERR are taken and complete flushed, signalled or
// not, in the order posted (as devices do, and as UCX and MPI expect when
// they clean up a broken connection); a malformed one is still refused.
TEST_F(VerbsTest, PostsInErrorCompleteFlushed) {
  connect();
  ASSERT_EQ(post_recv(&b_, 0, 64, 300), 0);
  ibv_qp_attr at{};
  at.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(b_.qp, &at, IBV_QP_STATE), 0);
  ASSERT_EQ(post_recv(&b_, 64, 64, 301), 0);
  ASSERT_EQ(post(&b_, IBV_WR_SEND, 0, 8, nullptr, 0, 302), 0);
  ASSERT_EQ(post(&b_, IBV_WR_RDMA_WRITE, 0, 8, &a_, 0, 303, 0), 0);  // unsignalled
  ASSERT_EQ(post(&b_, IBV_WR_RDMA_READ, 0, 8, &a_, 0, 304), 0);
  ASSERT_EQ(post_recv(&b_, 128, 64, 305), 0);
  ibv_sge sge{reinterpret_cast<uintptr_t>(b_.buf.data()), 8, b_.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = 306;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_TSO;  // no RC opcode: refused as in RTS
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(b_.qp, &wr, &bad), EOPNOTSUPP);
  EXPECT_EQ(bad, &wr);
  wr.opcode = IBV_WR_SEND;
  wr.num_sge = 99;  // more than the QP's max_send_sge
  EXPECT_EQ(ibv_post_send(b_.qp, &wr, &bad), EINVAL);
  auto wb = poll_n(b_.cq, 6);  // b's one CQ takes sends and receives
  ASSERT_EQ(wb.size(), 6u);
  const uint64_t order[] = {300, 301, 302, 303, 304, 305};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(wb[i].wr_id, order[i]) << i;
    EXPECT_EQ(wb[i].status, IBV_WC_WR_FLUSH_ERR) << i;
    EXPECT_EQ(wb[i].qp_num, b_.qp->qp_num) << i;
  }
  ibv_wc more{};
  EXPECT_EQ(ibv_poll_cq(b_.cq, 1, &more), 0);  // nothing for the refused ones
}

// ibv_destroy_qp takes the pair's completions out of its CQs (as hardware
// providers clean their CQs of a destroyed QP's entries): none refers to a
// QP that no longer exists, whether it completed before the destroy or was
// flushed by it.
TEST_F(VerbsTest, DestroyLeavesNothingOfThePairInItsCq) {
  connect();
  for (uint64_t i = 0; i < 3; ++i) ASSERT_EQ(post_recv(&b_, i * 64, 64, 200 + i), 0);
  ASSERT_EQ(post(&a_, IBV_WR_SEND, 0, 8, nullptr, 0, 1), 0);
  ASSERT_EQ(poll_n(a_.cq, 1).size(), 1u);  // acknowledged: b's first receive completed
  ASSERT_EQ(ibv_destroy_qp(b_.qp), 0);
  b_.qp = nullptr;
  ibv_wc wc[8];
  EXPECT_EQ(ibv_poll_cq(b_.cq, 8, wc), 0);
  EXPECT_EQ(ibv_destroy_cq(b_.cq), 0);  // no queue pair uses it any more
  b_.cq = nullptr;
}

TEST_F(VerbsTest, CompletionChannelSignalsOncePerArming) {
  connect();
  ASSERT_EQ(ibv_req_notify_cq(b_.cq, 0), 0);
  ASSERT_EQ(post_recv(&b_, 0, 64, 1), 0);
  ASSERT_EQ(post(&a_, IBV_WR_SEND, 0, 8, nullptr, 0, 1), 0);
  pollfd p{b_.ch->fd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  ibv_cq* cq = nullptr;
  void* cq_ctx = nullptr;
  ASSERT_EQ(ibv_get_cq_event(b_.ch, &cq, &cq_ctx), 0);
  EXPECT_EQ(cq, b_.cq);
  EXPECT_EQ(cq_ctx, &b_);
  ibv_ack_cq_events(cq, 1);
  EXPECT_EQ(poll_n(b_.cq, 1).size(), 1u);
  // Solicited only: an ordinary SEND raises nothing, a solicited one does.
  ASSERT_EQ(ibv_req_notify_cq(b_.cq, 1), 0);
  ASSERT_EQ(post_recv(&b_, 0, 64, 2), 0);
  ASSERT_EQ(post_recv(&b_, 64, 64, 3), 0);
  ASSERT_EQ(post(&a_, IBV_WR_SEND, 0, 8, nullptr, 0, 2), 0);
  EXPECT_EQ(poll_n(a_.cq, 2).size(), 2u);  // both sends, the first one too
  EXPECT_EQ(poll(&p, 1, 100), 0);
  ASSERT_EQ(post(&a_, IBV_WR_SEND, 0, 8, nullptr, 0, 3, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED), 0);
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  ASSERT_EQ(ibv_get_cq_event(b_.ch, &cq, &cq_ctx), 0);
  ibv_ack_cq_events(cq, 1);
  auto wb = poll_n(b_.cq, 2);
  ASSERT_EQ(wb.size(), 2u);
  EXPECT_EQ(wb[0].wr_id, 2u);  // in order, the staged unsolicited one first
  EXPECT_EQ(wb[1].wr_id, 3u);
}

TEST_F(VerbsTest, WhatDpdatDoesNotOfferFailsCleanly) {
  ibv_ah_attr ah{};  // RoCE: an address without a GRH names no peer
  errno = 0;
  EXPECT_EQ(ibv_create_ah(a_.pd, &ah), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ibv_qp_init_attr ia{};
  ia.send_cq = a_.cq;
  ia.recv_cq = a_.cq;
  ia.qp_type = IBV_QPT_UC;
  ia.cap.max_send_wr = 1;
  ia.cap.max_recv_wr = 1;
  errno = 0;
  EXPECT_EQ(ibv_create_qp(a_.pd, &ia), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(ibv_qp_to_qp_ex(a_.qp), nullptr);
  EXPECT_EQ(ibv_attach_mcast(a_.qp, &a_.gid, 0), EOPNOTSUPP);
  EXPECT_EQ(ibv_fork_init(), 0);
  // Busy objects are refused, not freed under their users.
  EXPECT_EQ(ibv_dealloc_pd(a_.pd), EBUSY);
  EXPECT_EQ(ibv_destroy_cq(a_.cq), EBUSY);
}

// Another context's objects are no objects of this one: refused, whatever
// interface that context is on.
TEST_F(VerbsTest, ObjectsOfAnotherContextAreRefused) {
  ibv_qp_init_attr ia{};
  ia.send_cq = b_.cq;
  ia.recv_cq = b_.cq;
  ia.qp_type = IBV_QPT_RC;
  ia.cap = ibv_qp_cap{4, 4, 1, 1, 0};
  errno = 0;
  EXPECT_EQ(ibv_create_qp(a_.pd, &ia), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ia.send_cq = a_.cq;  // the receive CQ still b's
  errno = 0;
  EXPECT_EQ(ibv_create_qp(a_.pd, &ia), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 4;
  sa.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(b_.pd, &sa);
  ASSERT_NE(srq, nullptr);
  ia.recv_cq = a_.cq;
  ia.srq = srq;
  errno = 0;
  EXPECT_EQ(ibv_create_qp(a_.pd, &ia), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
  errno = 0;
  EXPECT_EQ(ibv_create_cq(a_.ctx, 4, nullptr, b_.ch, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

// srq_limit is no attribute of creation (ibv_create_srq(3)): neither
// checked nor armed; what was made is told back.  A modification with an
// invalid attribute changes nothing (ibv_modify_srq(3)).
TEST_F(VerbsTest, SrqAttributesOfCreationAndModification) {
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 16;
  sa.attr.max_sge = 0;
  sa.attr.srq_limit = 100;
  ibv_srq* srq = ibv_create_srq(a_.pd, &sa);
  ASSERT_NE(srq, nullptr);
  ibv_srq_attr q{};
  ASSERT_EQ(ibv_query_srq(srq, &q), 0);
  EXPECT_EQ(q.srq_limit, 0u);
  EXPECT_EQ(sa.attr.srq_limit, 0u);
  EXPECT_GE(sa.attr.max_wr, 16u);
  EXPECT_EQ(sa.attr.max_wr, q.max_wr);
  EXPECT_EQ(sa.attr.max_sge, q.max_sge);
  ibv_async_event ev{};
  EXPECT_FALSE(next_async(a_.ctx, &ev, 50));  // not armed: no SRQ_LIMIT_REACHED
  ibv_srq_attr m{};
  m.max_wr = 4;
  m.srq_limit = 5;  // more than the new size
  EXPECT_EQ(ibv_modify_srq(srq, &m, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT), EINVAL);
  ASSERT_EQ(ibv_query_srq(srq, &q), 0);
  EXPECT_EQ(q.max_wr, sa.attr.max_wr);
  EXPECT_EQ(q.srq_limit, 0u);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
}

// A region's end (iova + length) must fit in 64 bits: one past it is an
// invalid argument, not a lack of resources; one ending at 2^64 - 1 is fine.
TEST_F(VerbsTest, MrWhoseEndPassesTwoToTheSixtyFourIsInvalid) {
  errno = 0;
  EXPECT_EQ(ibv_reg_mr_iova(a_.pd, a_.buf.data(), 4096, ~uint64_t{0} - 64, IBV_ACCESS_LOCAL_WRITE),
            nullptr);
  EXPECT_EQ(errno, EINVAL);
  ibv_mr* mr =
      ibv_reg_mr_iova(a_.pd, a_.buf.data(), 4096, ~uint64_t{0} - 4096, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
}

// A completion the channel agent staged for solicited-only arming (here a
// flushed receive, which wakes such an arming) goes with its QP.
TEST_F(VerbsTest, DestroyedQpLeavesNoStagedCompletion) {
  connect();
  ASSERT_EQ(ibv_req_notify_cq(b_.cq, 1), 0);
  ASSERT_EQ(post_recv(&b_, 0, 64, 7), 0);
  ibv_qp_attr at{};
  at.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(b_.qp, &at, IBV_QP_STATE), 0);
  pollfd p{b_.ch->fd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);  // the flushed receive was staged
  ibv_cq* cq = nullptr;
  void* cq_ctx = nullptr;
  ASSERT_EQ(ibv_get_cq_event(b_.ch, &cq, &cq_ctx), 0);
  ibv_ack_cq_events(cq, 1);
  ASSERT_EQ(ibv_destroy_qp(b_.qp), 0);
  b_.qp = nullptr;
  ibv_wc wc[4];
  EXPECT_EQ(ibv_poll_cq(b_.cq, 4, wc), 0);
}

// ibv_get_pkey_index(3): the index, or -1 (with errno) for a P_Key the port
// does not have or a port the device does not have.
TEST_F(VerbsTest, PkeyIndexOrMinusOne) {
  EXPECT_EQ(ibv_get_pkey_index(a_.ctx, 1, htons(0xFFFF)), 0);
  errno = 0;
  EXPECT_EQ(ibv_get_pkey_index(a_.ctx, 1, htons(0x1234)), -1);
  EXPECT_EQ(errno, ENOENT);
  errno = 0;
  EXPECT_EQ(ibv_get_pkey_index(a_.ctx, 2, htons(0xFFFF)), -1);
  EXPECT_EQ(errno, EINVAL);
}

}  // namespace verbs_test
