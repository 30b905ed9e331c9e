// rdma_cm over dpdat when the other end answers nothing, and what
// rdma_init_qp_attr gives for a connection the CM made:
//   - an address nobody answers ARP for: rdma_resolve_addr ends with
//     ADDR_ERROR (-EHOSTUNREACH) after its timeout_ms;
//   - a listener that never answers the request: rdma_connect ends with
//     UNREACHABLE (-ETIMEDOUT) after the interface's rdmacm_timeout_ms;
//   - rdma_init_qp_attr's INIT / RTR / RTS attributes against what the other
//     side was told, the request's RTR and RTS before it is accepted, EINVAL
//     for other states.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "rdmacm_fixture.hpp"

namespace {

using namespace rdmacm_test;  // NOLINT(google-build-using-namespace): the tests' fixture

constexpr const char* kNobody = "192.168.77.99";
constexpr int kConnectTimeoutMs = 1000;

// The client's interface (the built-in dpdat1) with a connect timeout of its
// own, set before any device opens; a DPDAT_IA_DPDAT1 given by the caller wins.
const bool kClientConfigured =
    setenv(
        "DPDAT_IA_DPDAT1",
        ("ring=1;ip=192.168.77.2;rdmacm_timeout_ms=" + std::to_string(kConnectTimeoutMs)).c_str(),
        0) == 0;

int64_t ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               t0)
      .count();
}

ibv_qp_attr init_attr(rdma_cm_id* id, ibv_qp_state s, int* mask) {
  ibv_qp_attr a{};
  a.qp_state = s;
  *mask = 0;
  EXPECT_EQ(rdma_init_qp_attr(id, &a, mask), 0) << "state " << s << " errno " << errno;
  EXPECT_EQ(a.qp_state, s);
  return a;
}

void expect_dgid(const ibv_qp_attr& a, const char* ip) {
  EXPECT_EQ(a.ah_attr.is_global, 1);
  EXPECT_EQ(a.ah_attr.port_num, 1);
  const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
  EXPECT_EQ(std::memcmp(a.ah_attr.grh.dgid.raw, mapped, sizeof(mapped)), 0);
  in_addr want{};
  ASSERT_EQ(inet_pton(AF_INET, ip, &want), 1);
  EXPECT_EQ(std::memcmp(&a.ah_attr.grh.dgid.raw[12], &want, 4), 0);
}

constexpr int kInitMask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                         IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRtsMask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                         IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;

TEST_F(RdmaCmTest, NobodyAnswersArpIsAddrError) {
  ASSERT_TRUE(kClientConfigured);
  listen(7320);  // the server's interface up, to answer the second query
  ASSERT_EQ(rdma_create_id(cch_, &cli_, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in src = addr(kClientIp, 0);
  sockaddr_in dst = addr(kNobody, 7320);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(rdma_resolve_addr(cli_, sa(&src), sa(&dst), 300), 0);
  Got g = expect_event(cch_, RDMA_CM_EVENT_ADDR_ERROR);
  const int64_t ms = ms_since(t0);
  EXPECT_TRUE(g.ok) << rdma_event_str(g.type);
  EXPECT_EQ(g.status, -EHOSTUNREACH);
  EXPECT_GE(ms, 250);  // timeout_ms
  EXPECT_LT(ms, 5000);
  // The id stays bound: it may resolve another address.
  sockaddr_in there = addr(kServerIp, 7320);
  ASSERT_EQ(rdma_resolve_addr(cli_, nullptr, sa(&there), 2000), 0);
  Got again = expect_event(cch_, RDMA_CM_EVENT_ADDR_RESOLVED);
  EXPECT_TRUE(again.ok) << rdma_event_str(again.type);
}

TEST(RdmaCmSyncPaths, NobodyAnswersArpFailsResolveAddr) {
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in src = addr(kClientIp, 0);
  sockaddr_in dst = addr(kNobody, 7321);
  EXPECT_EQ(rdma_resolve_addr(id, sa(&src), sa(&dst), 300), -1);
  EXPECT_EQ(errno, EHOSTUNREACH);
  EXPECT_EQ(rdma_destroy_id(id), 0);
}

TEST_F(RdmaCmTest, SilentListenerIsUnreachable) {
  // The server's interface answers ARP and its listener gets the request,
  // but nobody accepts or rejects it: no REP comes.
  listen(7322);
  client_to(kServerIp, 7322);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(rdma_connect(cli_, nullptr), 0);
  Got req = expect_event(sch_, RDMA_CM_EVENT_CONNECT_REQUEST);
  ASSERT_TRUE(req.ok);
  child_ = req.id;  // rejected when the fixture destroys it
  Got g = expect_event(cch_, RDMA_CM_EVENT_UNREACHABLE);
  const int64_t ms = ms_since(t0);
  EXPECT_TRUE(g.ok) << rdma_event_str(g.type);
  EXPECT_EQ(g.status, -ETIMEDOUT);
  EXPECT_GE(ms, kConnectTimeoutMs - 50);
  EXPECT_LT(ms, kConnectTimeoutMs + 3000);
}

TEST_F(RdmaCmTest, InitQpAttrIsWhatTheCmAgreed) {
  connect_pair(7323);
  const uint8_t ack_timeout = 18;
  ASSERT_EQ(rdma_set_option(cli_, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
                            const_cast<uint8_t*>(&ack_timeout), sizeof(ack_timeout)),
            0);
  int mask = 0;
  for (rdma_cm_id* id : {cli_, child_}) {
    const ibv_qp_attr init = init_attr(id, IBV_QPS_INIT, &mask);
    EXPECT_EQ(mask, kInitMask);
    EXPECT_EQ(init.port_num, 1);
    EXPECT_EQ(init.pkey_index, 0);
    EXPECT_EQ(init.qp_access_flags, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                                        IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
  }
  const ibv_qp_attr c_rtr = init_attr(cli_, IBV_QPS_RTR, &mask);
  EXPECT_EQ(mask, kRtrMask);
  const ibv_qp_attr s_rtr = init_attr(child_, IBV_QPS_RTR, &mask);
  EXPECT_EQ(mask, kRtrMask);
  const ibv_qp_attr c_rts = init_attr(cli_, IBV_QPS_RTS, &mask);
  EXPECT_EQ(mask, kRtsMask);
  const ibv_qp_attr s_rts = init_attr(child_, IBV_QPS_RTS, &mask);
  EXPECT_EQ(mask, kRtsMask);
  // Each side's receive attributes name the other's QP and the PSN the other
  // sends from (the client learnt them from the REP, the server from the REQ).
  EXPECT_EQ(c_rtr.dest_qp_num, child_->qp->qp_num);
  EXPECT_EQ(s_rtr.dest_qp_num, cli_->qp->qp_num);
  EXPECT_EQ(c_rtr.rq_psn, s_rts.sq_psn);
  EXPECT_EQ(s_rtr.rq_psn, c_rts.sq_psn);
  EXPECT_LE(c_rts.sq_psn, 0xFFFFFFu);
  expect_dgid(c_rtr, kServerIp);
  expect_dgid(s_rtr, kClientIp);
  // One path MTU for both, the ports' (the same interface settings on both ends).
  ibv_port_attr pa{};
  ASSERT_EQ(ibv_query_port(cli_->verbs, 1, &pa), 0);
  EXPECT_EQ(c_rtr.path_mtu, pa.active_mtu);
  EXPECT_EQ(s_rtr.path_mtu, pa.active_mtu);
  // Reads outstanding: what one side may issue the other accepts.
  EXPECT_GT(c_rts.max_rd_atomic, 0);
  EXPECT_EQ(c_rts.max_rd_atomic, s_rtr.max_dest_rd_atomic);
  EXPECT_EQ(s_rts.max_rd_atomic, c_rtr.max_dest_rd_atomic);
  EXPECT_EQ(c_rtr.min_rnr_timer, 12);
  // The REQ's ACK timeout (14) unless the id's option says otherwise; retries 7.
  EXPECT_EQ(c_rts.timeout, ack_timeout);
  EXPECT_EQ(s_rts.timeout, 14);
  EXPECT_EQ(c_rts.retry_cnt, 7);
  EXPECT_EQ(c_rts.rnr_retry, 7);
}

TEST_F(RdmaCmTest, InitQpAttrOfARequestAndBadStates) {
  listen(7324);
  client_to(kServerIp, 7324);
  int mask = 0;
  ibv_qp_attr a{};
  // No REP yet: nothing agreed on the client's side beyond INIT.
  a.qp_state = IBV_QPS_RTR;
  EXPECT_EQ(rdma_init_qp_attr(cli_, &a, &mask), -1);
  EXPECT_EQ(errno, EINVAL);
  ASSERT_EQ(rdma_connect(cli_, nullptr), 0);
  Got req = expect_event(sch_, RDMA_CM_EVENT_CONNECT_REQUEST);
  ASSERT_TRUE(req.ok);
  child_ = req.id;
  // The request's RTR comes from its REQ: the client's QP.
  const ibv_qp_attr rtr = init_attr(child_, IBV_QPS_RTR, &mask);
  EXPECT_EQ(mask, kRtrMask);
  EXPECT_EQ(rtr.dest_qp_num, cli_->qp->qp_num);
  expect_dgid(rtr, kClientIp);
  // RTS too: this side's first PSN is chosen with the request (the REP
  // names it), the reads those the client offered.
  const ibv_qp_attr rts = init_attr(child_, IBV_QPS_RTS, &mask);
  EXPECT_EQ(mask, kRtsMask);
  EXPECT_EQ(init_attr(child_, IBV_QPS_RTS, &mask).sq_psn, rts.sq_psn);
  EXPECT_EQ(rts.max_rd_atomic, rtr.max_dest_rd_atomic);  // both 16, as dpdat's QPs offer
  for (ibv_qp_state s : {IBV_QPS_RESET, IBV_QPS_SQD, IBV_QPS_SQE, IBV_QPS_ERR, IBV_QPS_UNKNOWN}) {
    a = ibv_qp_attr{};
    a.qp_state = s;
    errno = 0;
    EXPECT_EQ(rdma_init_qp_attr(cli_, &a, &mask), -1) << "state " << s;
    EXPECT_EQ(errno, EINVAL) << "state " << s;
  }
  ASSERT_EQ(rdma_reject(child_, nullptr, 0), 0);
  EXPECT_TRUE(expect_event(cch_, RDMA_CM_EVENT_REJECTED).ok);
}

TEST_F(RdmaCmTest, EstablishedTellsTheAgreedReads) {
  listen(7325);
  client_to(kServerIp, 7325);
  ASSERT_EQ(rdma_connect(cli_, nullptr), 0);
  Got req = expect_event(sch_, RDMA_CM_EVENT_CONNECT_REQUEST);
  ASSERT_TRUE(req.ok);
  child_ = req.id;
  ibv_qp_init_attr qa = qp_attr();
  ASSERT_EQ(rdma_create_qp(child_, nullptr, &qa), 0);
  ASSERT_EQ(rdma_accept(child_, nullptr), 0);
  rdma_cm_event* ev = next_event(cch_);
  ASSERT_NE(ev, nullptr);
  ASSERT_EQ(ev->event, RDMA_CM_EVENT_ESTABLISHED);
  const rdma_conn_param p = ev->param.conn;
  ASSERT_EQ(rdma_ack_cm_event(ev), 0);
  int mask = 0;
  const ibv_qp_attr rts = init_attr(cli_, IBV_QPS_RTS, &mask);
  const ibv_qp_attr rtr = init_attr(cli_, IBV_QPS_RTR, &mask);
  EXPECT_GT(p.initiator_depth, 0);
  EXPECT_EQ(p.initiator_depth, rts.max_rd_atomic);
  EXPECT_EQ(p.responder_resources, rtr.max_dest_rd_atomic);
  EXPECT_EQ(p.qp_num, child_->qp->qp_num);
  EXPECT_TRUE(expect_event(sch_, RDMA_CM_EVENT_ESTABLISHED).ok);
}

}  // namespace
