// What UCX's rc_verbs transport asks of a verbs provider beyond the usual
// (read from UCX's uct/ib sources), each through the verbs API against
// dpdat's libibverbs.so.1 on the in-process ring link: a flush by an empty
// inline RDMA WRITE that names no memory at all, and UD QPs (ud_verbs, and
// UCX's rdmacm transport names its connections by one).

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>

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

// UD QPs (UCX's ud_verbs; its rdmacm transport also makes one to name its
// connections): RESET -> INIT (P_Key index, port, Q_Key) -> RTR -> RTS (SQ
// PSN), an address handle from the peer's GID, and datagrams between two
// contexts: the receive buffer starts with the 40 GRH bytes (byte_len counts
// them), the completion carries the sender's QPN, IBV_WC_GRH and immediate
// data; a wrong Q_Key is dropped; a datagram over the path MTU is a local
// length error; posts before their states and RDMA on UD are refused.
namespace {
ibv_qp* make_ud(ibv_pd* pd, ibv_cq* cq) {
  ibv_qp_init_attr ia{};
  ia.send_cq = cq;
  ia.recv_cq = cq;
  ia.qp_type = IBV_QPT_UD;
  ia.cap = ibv_qp_cap{4, 4, 1, 1, 128};
  return ibv_create_qp(pd, &ia);
}
int ud_to_rts(ibv_qp* q, uint32_t qkey) {
  ibv_qp_attr at{};
  at.qp_state = IBV_QPS_INIT;
  at.port_num = 1;
  at.qkey = qkey;
  if (int e = ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
    return e;
  at = {};
  at.qp_state = IBV_QPS_RTR;
  if (int e = ibv_modify_qp(q, &at, IBV_QP_STATE)) return e;
  at = {};
  at.qp_state = IBV_QPS_RTS;
  at.sq_psn = 0x123;
  return ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_SQ_PSN);
}
// An address handle to the port whose GID is `dgid` (RoCE: always global).
ibv_ah_attr ah_attr_to(const ibv_gid& dgid) {
  ibv_ah_attr aa{};
  aa.is_global = 1;
  aa.port_num = 1;
  aa.grh.dgid = dgid;
  return aa;
}
}  // namespace

TEST_F(VerbsTest, UdQpCarriesDatagrams) {
  ibv_qp* u = make_ud(a_.pd, a_.cq);
  ASSERT_NE(u, nullptr) << "errno " << errno;
  ibv_qp* v = make_ud(b_.pd, b_.cq);
  ASSERT_NE(v, nullptr) << "errno " << errno;
  EXPECT_EQ(u->qp_type, IBV_QPT_UD);
  EXPECT_NE(u->qp_num, 0u);
  EXPECT_NE(u->qp_num, a_.qp->qp_num);
  EXPECT_EQ(u->state, IBV_QPS_RESET);
  ibv_sge sge{reinterpret_cast<uintptr_t>(b_.buf.data()), 40 + 256, b_.mr->lkey};
  ibv_recv_wr rwr{};
  rwr.wr_id = 21;
  rwr.sg_list = &sge;
  rwr.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  EXPECT_EQ(ibv_post_recv(v, &rwr, &rbad), EINVAL);  // RESET
  // RTR needs INIT first; INIT needs the Q_Key.
  ibv_qp_attr at{};
  at.qp_state = IBV_QPS_INIT;
  at.port_num = 1;
  EXPECT_EQ(ibv_modify_qp(v, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), EINVAL);
  at.qp_state = IBV_QPS_RTR;
  EXPECT_EQ(ibv_modify_qp(v, &at, IBV_QP_STATE), EINVAL);
  ASSERT_EQ(ud_to_rts(u, 0x11111111), 0);
  ASSERT_EQ(ud_to_rts(v, 0x11111111), 0);
  ibv_qp_init_attr qi{};
  ASSERT_EQ(ibv_query_qp(v, &at, IBV_QP_STATE, &qi), 0);
  EXPECT_EQ(at.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(at.qkey, 0x11111111u);
  EXPECT_EQ(qi.qp_type, IBV_QPT_UD);
  ASSERT_EQ(ibv_post_recv(v, &rwr, &rbad), 0);
  rwr.wr_id = 22;
  ASSERT_EQ(ibv_post_recv(v, &rwr, &rbad), 0);

  ibv_ah_attr aa = ah_attr_to(b_.gid);
  ibv_ah* ah = ibv_create_ah(a_.pd, &aa);
  ASSERT_NE(ah, nullptr) << "errno " << errno;
  ibv_ah_attr bad_aa = aa;
  bad_aa.is_global = 0;
  errno = 0;
  EXPECT_EQ(ibv_create_ah(a_.pd, &bad_aa), nullptr);
  EXPECT_EQ(errno, EINVAL);

  for (size_t i = 0; i < 100; ++i) a_.buf[i] = static_cast<uint8_t>(i * 7);
  ibv_sge ssge{reinterpret_cast<uintptr_t>(a_.buf.data()), 100, a_.mr->lkey};
  ibv_send_wr swr{};
  swr.wr_id = 11;
  swr.sg_list = &ssge;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_SEND_WITH_IMM;
  swr.imm_data = htonl(0xCAFE);
  swr.send_flags = IBV_SEND_SIGNALED;
  swr.wr.ud.ah = ah;
  swr.wr.ud.remote_qpn = v->qp_num;
  swr.wr.ud.remote_qkey = 0x11111111;
  ibv_send_wr* sbad = nullptr;
  ASSERT_EQ(ibv_post_send(u, &swr, &sbad), 0);
  auto wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].wr_id, 11u);
  EXPECT_EQ(wa[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wa[0].opcode, IBV_WC_SEND);
  EXPECT_EQ(wa[0].qp_num, u->qp_num);
  auto wb = poll_n(b_.cq, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].wr_id, 21u);
  EXPECT_EQ(wb[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wb[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(wb[0].byte_len, 40u + 100u);
  EXPECT_EQ(wb[0].qp_num, v->qp_num);
  EXPECT_EQ(wb[0].src_qp, u->qp_num);
  EXPECT_NE(wb[0].wc_flags & IBV_WC_GRH, 0u);
  EXPECT_NE(wb[0].wc_flags & IBV_WC_WITH_IMM, 0u);
  EXPECT_EQ(ntohl(wb[0].imm_data), 0xCAFEu);
  EXPECT_EQ(b_.buf[20], 0x45);  // the GRH space holds the IPv4 header after 20 zeros
  EXPECT_EQ(std::memcmp(b_.buf.data() + 40, a_.buf.data(), 100), 0);

  // Inline and unsignalled, with the Q_Key's high bit: the QP's own goes.
  swr.wr_id = 12;
  swr.opcode = IBV_WR_SEND;
  swr.send_flags = IBV_SEND_INLINE;
  swr.wr.ud.remote_qkey = 0x80000000;
  ASSERT_EQ(ibv_post_send(u, &swr, &sbad), 0);
  wb = poll_n(b_.cq, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].wr_id, 22u);
  EXPECT_EQ(wb[0].byte_len, 40u + 100u);
  EXPECT_EQ(wb[0].wc_flags & IBV_WC_WITH_IMM, 0u);

  // A wrong Q_Key: dropped (the receive stays for the next datagram).
  rwr.wr_id = 23;
  ASSERT_EQ(ibv_post_recv(v, &rwr, &rbad), 0);
  swr.wr_id = 13;
  swr.send_flags = IBV_SEND_SIGNALED;
  swr.wr.ud.remote_qkey = 0x2222;
  ASSERT_EQ(ibv_post_send(u, &swr, &sbad), 0);
  wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, IBV_WC_SUCCESS);
  ibv_wc none{};
  for (int i = 0; i < 200; ++i) ASSERT_EQ(ibv_poll_cq(b_.cq, 1, &none), 0);
  // The next datagram with the right Q_Key takes that receive.
  swr.wr_id = 15;
  swr.wr.ud.remote_qkey = 0x11111111;
  a_.buf[0] = 0x5A;
  ASSERT_EQ(ibv_post_send(u, &swr, &sbad), 0);
  wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  wb = poll_n(b_.cq, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].wr_id, 23u);
  EXPECT_EQ(b_.buf[40], 0x5A);
  rwr.wr_id = 24;
  ASSERT_EQ(ibv_post_recv(v, &rwr, &rbad), 0);

  // Longer than the path MTU: a local length error.
  ibv_port_attr pa{};
  ASSERT_EQ(ibv_query_port(a_.ctx, 1, &pa), 0);
  const uint32_t mtu = 128u << pa.active_mtu;
  ASSERT_LT(mtu + 1, a_.buf.size());
  ibv_sge big{reinterpret_cast<uintptr_t>(a_.buf.data()), mtu + 1, a_.mr->lkey};
  swr.wr_id = 14;
  swr.sg_list = &big;
  swr.wr.ud.remote_qkey = 0x11111111;
  ASSERT_EQ(ibv_post_send(u, &swr, &sbad), 0);
  wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].wr_id, 14u);
  EXPECT_EQ(wa[0].status, IBV_WC_LOC_LEN_ERR);

  // UD carries SENDs only.
  swr.opcode = IBV_WR_RDMA_WRITE;
  swr.sg_list = &ssge;
  EXPECT_EQ(ibv_post_send(u, &swr, &sbad), EINVAL);
  EXPECT_EQ(ibv_destroy_ah(ah), 0);
  at = {};
  at.qp_state = IBV_QPS_ERR;
  EXPECT_EQ(ibv_modify_qp(v, &at, IBV_QP_STATE), 0);
  wb = poll_n(b_.cq, 1);  // the receive left posted is flushed
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].wr_id, 24u);
  EXPECT_EQ(wb[0].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(ibv_destroy_qp(v), 0);
  EXPECT_EQ(ibv_destroy_qp(u), 0);
  // The RC QP of the fixture is untouched.
  connect();
  ASSERT_EQ(post(&a_, IBV_WR_RDMA_WRITE, 0, 64, &b_, 0, 1), 0);
  wa = poll_n(a_.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, IBV_WC_SUCCESS);
}

// A UD receive tells how its 40 bytes of GRH space are laid out: over
// RoCEv2 on IPv4 the completion's sl holds the L3 header type 2 (IPv4), and
// the IPv4 header fills the second half, so that its destination address
// is the buffer's last four bytes.  UCX's ud_verbs reads the destination
// GID so (ud_iface.h, uct_ud_iface_check_grh) and drops every datagram
// whose address is not one of its device's GIDs: with sl 0 it took the
// last 16 bytes as an IPv6 GID and dropped them all.
TEST_F(VerbsTest, UdReceiveTellsItsIpv4Header) {
  ibv_qp* u = make_ud(a_.pd, a_.cq);
  ASSERT_NE(u, nullptr) << "errno " << errno;
  ibv_qp* v = make_ud(b_.pd, b_.cq);
  ASSERT_NE(v, nullptr) << "errno " << errno;
  ASSERT_EQ(ud_to_rts(u, 0x1ee7a330), 0);
  ASSERT_EQ(ud_to_rts(v, 0x1ee7a330), 0);
  std::memset(b_.buf.data(), 0xEE, 40);
  ibv_sge sge{reinterpret_cast<uintptr_t>(b_.buf.data()), 40 + 64, b_.mr->lkey};
  ibv_recv_wr rwr{};
  rwr.wr_id = 31;
  rwr.sg_list = &sge;
  rwr.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_recv(v, &rwr, &rbad), 0);
  ibv_ah_attr aa = ah_attr_to(b_.gid);
  ibv_ah* ah = ibv_create_ah(a_.pd, &aa);
  ASSERT_NE(ah, nullptr) << "errno " << errno;
  ibv_sge ssge{reinterpret_cast<uintptr_t>(a_.buf.data()), 8, a_.mr->lkey};
  ibv_send_wr swr{};
  swr.wr_id = 32;
  swr.sg_list = &ssge;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_SEND;
  swr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
  swr.wr.ud.ah = ah;
  swr.wr.ud.remote_qpn = v->qp_num;
  swr.wr.ud.remote_qkey = 0x1ee7a330;
  ibv_send_wr* sbad = nullptr;
  ASSERT_EQ(ibv_post_send(u, &swr, &sbad), 0);
  ASSERT_EQ(poll_n(a_.cq, 1).size(), 1u);
  auto wb = poll_n(b_.cq, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wb[0].byte_len, 40u + 8u);
  EXPECT_NE(wb[0].wc_flags & IBV_WC_GRH, 0u);
  EXPECT_EQ(wb[0].sl & 0x7, 2) << "the L3 header type: IPv4";
  // The IPv4 header at 20: version 4, UDP, from a's address to b's (the
  // last four bytes of each one's IPv4-mapped GID); the first 20 bytes are
  // written (zeros), not left as they were.
  const uint8_t* grh = b_.buf.data();
  EXPECT_EQ(grh[20], 0x45);
  EXPECT_EQ(grh[20 + 9], IPPROTO_UDP);
  EXPECT_EQ(std::memcmp(grh + 32, a_.gid.raw + 12, 4), 0) << "source address";
  EXPECT_EQ(std::memcmp(grh + 36, b_.gid.raw + 12, 4), 0) << "destination address";
  for (int i = 0; i < 20; ++i) EXPECT_EQ(grh[i], 0) << "byte " << i;
  EXPECT_EQ(ibv_destroy_ah(ah), 0);
  EXPECT_EQ(ibv_destroy_qp(v), 0);
  EXPECT_EQ(ibv_destroy_qp(u), 0);
}

}  // namespace verbs_test
