// rdma_cm with the application's own QP (ibv_create_qp, named by
// conn_param->qp_num), as UCX's rdmacm transport and storage programs use it:
//   - the CM exchange names that QP on both sides (CONNECT_REQUEST,
//     CONNECT_RESPONSE and ESTABLISHED report the peer's);
//   - each side moves its QP through INIT / RTR / RTS with
//     rdma_init_qp_attr + ibv_modify_qp: the passive side before accepting
//     (librdmacm's own order), the active side after CONNECT_RESPONSE;
//   - the active side ends with rdma_establish, which gives the passive side
//     ESTABLISHED; then a SEND and an RDMA WRITE go over the two QPs;
//   - errors: a qp_num naming no QP of the id's device, no conn_param,
//     responder resources beyond the device's, rdma_establish out of turn;
//   - rdma_disconnect between CONNECT_RESPONSE and rdma_establish (the peer
//     gets REJECTED, reason 28, at once), and a synchronous client;
//   - UCX's way: the id's PD (id->pd) and a UD QP that only names the
//     connection.

#include <gtest/gtest.h>
#include <poll.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "rdmacm_fixture.hpp"

namespace {

using namespace rdmacm_test;  // NOLINT(google-build-using-namespace): the tests' fixture

constexpr size_t kBuf = 64;

// A QP of the application's own on a device, with a buffer registered for
// local and remote writes.
struct OwnQp {
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  char buf[kBuf] = {};

  void make(ibv_context* c) {
    ASSERT_NE(c, nullptr);
    pd = ibv_alloc_pd(c);
    ASSERT_NE(pd, nullptr);
    cq = ibv_create_cq(c, 16, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
    ibv_qp_init_attr a = qp_attr();
    a.send_cq = cq;
    a.recv_cq = cq;
    qp = ibv_create_qp(pd, &a);
    ASSERT_NE(qp, nullptr);
    mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    ASSERT_NE(mr, nullptr);
  }
  void destroy() {
    if (qp != nullptr) {
      EXPECT_EQ(ibv_destroy_qp(qp), 0);
    }
    if (mr != nullptr) {
      EXPECT_EQ(ibv_dereg_mr(mr), 0);
    }
    if (cq != nullptr) {
      EXPECT_EQ(ibv_destroy_cq(cq), 0);
    }
    if (pd != nullptr) {
      EXPECT_EQ(ibv_dealloc_pd(pd), 0);
    }
    qp = nullptr;
    mr = nullptr;
    cq = nullptr;
    pd = nullptr;
  }
};

// rdma_init_qp_attr for state s, then ibv_modify_qp with exactly that.
ibv_qp_attr move(rdma_cm_id* id, ibv_qp* qp, ibv_qp_state s) {
  ibv_qp_attr a{};
  a.qp_state = s;
  int mask = 0;
  EXPECT_EQ(rdma_init_qp_attr(id, &a, &mask), 0) << "state " << s << " errno " << errno;
  EXPECT_EQ(ibv_modify_qp(qp, &a, mask), 0) << "state " << s;
  return a;
}

// The next completion of cq, within 5 s (IBV_WC_GENERAL_ERR with wr_id ~0
// when none came).
ibv_wc poll_one(ibv_cq* cq) {
  ibv_wc wc{};
  wc.status = IBV_WC_GENERAL_ERR;
  wc.wr_id = ~uint64_t{0};
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < end)
    if (ibv_poll_cq(cq, 1, &wc) != 0) break;
  return wc;
}

// The next event on ch, which must be `type`; its conn parameters and
// private data are copied before it is acked.
struct ConnEv {
  bool ok = false;
  rdma_cm_id* id = nullptr;
  int status = 0;
  rdma_conn_param conn{};
  std::string pdata;
};
ConnEv conn_event(rdma_event_channel* ch, rdma_cm_event_type type) {
  ConnEv c;
  rdma_cm_event* ev = next_event(ch);
  if (ev == nullptr) {
    ADD_FAILURE() << "no event, wanted " << rdma_event_str(type);
    return c;
  }
  EXPECT_EQ(ev->event, type) << rdma_event_str(ev->event) << " status " << ev->status;
  c.ok = ev->event == type;
  c.id = ev->id;
  c.status = ev->status;
  c.conn = ev->param.conn;
  if (c.conn.private_data != nullptr)
    c.pdata.assign(static_cast<const char*>(c.conn.private_data), c.conn.private_data_len);
  c.conn.private_data = nullptr;
  EXPECT_EQ(rdma_ack_cm_event(ev), 0);
  return c;
}

bool quiet(rdma_event_channel* ch, int ms) {
  pollfd p{ch->fd, POLLIN, 0};
  return poll(&p, 1, ms) == 0;
}

class RdmaCmOwnQpTest : public RdmaCmTest {
 protected:
  void TearDown() override {
    c_.destroy();
    s_.destroy();
    RdmaCmTest::TearDown();
  }
  OwnQp c_, s_;  // the client's and the server's
};

TEST_F(RdmaCmOwnQpTest, ConnectMoveEstablishSendAndWrite) {
  listen(7330);
  ASSERT_NO_FATAL_FAILURE(route_to(kServerIp, 7330));
  ASSERT_NO_FATAL_FAILURE(c_.make(cli_->verbs));
  EXPECT_EQ(cli_->qp, nullptr);
  move(cli_, c_.qp, IBV_QPS_INIT);
  const char hello[] = "own qp";
  rdma_conn_param p{};
  p.private_data = hello;
  p.private_data_len = sizeof(hello);
  p.responder_resources = 4;
  p.initiator_depth = 4;
  p.qp_num = c_.qp->qp_num;
  ASSERT_EQ(rdma_connect(cli_, &p), 0) << "errno " << errno;

  const ConnEv req = conn_event(sch_, RDMA_CM_EVENT_CONNECT_REQUEST);
  ASSERT_TRUE(req.ok);
  EXPECT_EQ(req.conn.qp_num, c_.qp->qp_num);
  EXPECT_EQ(req.pdata.substr(0, sizeof(hello)), std::string(hello, sizeof(hello)));
  child_ = req.id;
  // The passive side moves its QP as librdmacm does before accepting: INIT,
  // RTR and RTS from the request.  A receive waits for the SEND.
  ASSERT_NO_FATAL_FAILURE(s_.make(child_->verbs));
  move(child_, s_.qp, IBV_QPS_INIT);
  ibv_sge rs{reinterpret_cast<uintptr_t>(s_.buf), kBuf, s_.mr->lkey};
  ibv_recv_wr rwr{};
  rwr.wr_id = 7;
  rwr.sg_list = &rs;
  rwr.num_sge = 1;
  ibv_recv_wr* bad_r = nullptr;
  ASSERT_EQ(ibv_post_recv(s_.qp, &rwr, &bad_r), 0);
  const ibv_qp_attr s_rtr = move(child_, s_.qp, IBV_QPS_RTR);
  EXPECT_EQ(s_rtr.dest_qp_num, c_.qp->qp_num);
  const ibv_qp_attr s_rts = move(child_, s_.qp, IBV_QPS_RTS);
  const char welcome[] = "welcome";
  rdma_conn_param ap{};
  ap.private_data = welcome;
  ap.private_data_len = sizeof(welcome);
  ap.responder_resources = 4;
  ap.initiator_depth = 4;
  ap.qp_num = s_.qp->qp_num;
  ASSERT_EQ(rdma_accept(child_, &ap), 0) << "errno " << errno;

  // The active side: CONNECT_RESPONSE names the server's QP; nothing is
  // established until rdma_establish.
  const ConnEv resp = conn_event(cch_, RDMA_CM_EVENT_CONNECT_RESPONSE);
  ASSERT_TRUE(resp.ok);
  EXPECT_EQ(resp.conn.qp_num, s_.qp->qp_num);
  EXPECT_EQ(resp.conn.initiator_depth, 4);
  EXPECT_EQ(resp.pdata.substr(0, sizeof(welcome)), std::string(welcome, sizeof(welcome)));
  EXPECT_TRUE(quiet(sch_, 100)) << "the server heard of the connection before the RTU";
  const ibv_qp_attr c_rtr = move(cli_, c_.qp, IBV_QPS_RTR);
  EXPECT_EQ(c_rtr.dest_qp_num, s_.qp->qp_num);
  EXPECT_EQ(c_rtr.rq_psn, s_rts.sq_psn);  // the REP named what the request's RTS said
  const ibv_qp_attr c_rts = move(cli_, c_.qp, IBV_QPS_RTS);
  EXPECT_EQ(s_rtr.rq_psn, c_rts.sq_psn);
  EXPECT_EQ(c_rts.max_rd_atomic, 4);
  ASSERT_EQ(rdma_establish(cli_), 0) << "errno " << errno;
  EXPECT_EQ(rdma_establish(cli_), -1);  // once only
  EXPECT_EQ(errno, EINVAL);
  const ConnEv est = conn_event(sch_, RDMA_CM_EVENT_ESTABLISHED);
  ASSERT_TRUE(est.ok);
  EXPECT_EQ(est.conn.qp_num, c_.qp->qp_num);
  EXPECT_TRUE(quiet(cch_, 0));  // no ESTABLISHED on the active side

  // A SEND into the posted receive.
  std::memcpy(c_.buf, "send over my own qp", 20);
  ibv_sge ss{reinterpret_cast<uintptr_t>(c_.buf), 20, c_.mr->lkey};
  ibv_send_wr swr{};
  swr.wr_id = 11;
  swr.sg_list = &ss;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_SEND;
  swr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad_s = nullptr;
  ASSERT_EQ(ibv_post_send(c_.qp, &swr, &bad_s), 0);
  ibv_wc wc = poll_one(c_.cq);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.wr_id, 11u);
  wc = poll_one(s_.cq);
  ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.wr_id, 7u);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV);
  EXPECT_EQ(wc.byte_len, 20u);
  EXPECT_STREQ(s_.buf, "send over my own qp");

  // An RDMA WRITE into the server's buffer, past the SEND's bytes.
  std::memcpy(c_.buf, "written by rdma", 16);
  ss.length = 16;
  swr.wr_id = 12;
  swr.opcode = IBV_WR_RDMA_WRITE;
  swr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(s_.buf) + 32;
  swr.wr.rdma.rkey = s_.mr->rkey;
  ASSERT_EQ(ibv_post_send(c_.qp, &swr, &bad_s), 0);
  wc = poll_one(c_.cq);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.wr_id, 12u);
  EXPECT_STREQ(s_.buf + 32, "written by rdma");

  // The connection ends as any other: DISCONNECTED on both sides.
  ASSERT_EQ(rdma_disconnect(cli_), 0);
  EXPECT_TRUE(conn_event(cch_, RDMA_CM_EVENT_DISCONNECTED).ok);
  EXPECT_TRUE(conn_event(sch_, RDMA_CM_EVENT_DISCONNECTED).ok);
}

// The number of a QP made on c and destroyed again: it names no QP there.
uint32_t gone_qp_num(ibv_context* c) {
  OwnQp q;
  q.make(c);
  const uint32_t n = q.qp != nullptr ? q.qp->qp_num : 0;
  q.destroy();
  return n;
}

TEST_F(RdmaCmOwnQpTest, BadQpNumAndEstablishOutOfTurn) {
  listen(7331);
  ASSERT_NO_FATAL_FAILURE(route_to(kServerIp, 7331));
  ASSERT_NO_FATAL_FAILURE(c_.make(cli_->verbs));
  // No QP on the id and no conn_param to name one.
  EXPECT_EQ(rdma_connect(cli_, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  rdma_conn_param p{};
  for (const uint32_t bad : {gone_qp_num(cli_->verbs), 0u, 0xFFFFFFu}) {
    p.qp_num = bad;
    errno = 0;
    EXPECT_EQ(rdma_connect(cli_, &p), -1) << "qp_num " << bad;
    EXPECT_EQ(errno, EINVAL) << "qp_num " << bad;
  }
  p.qp_num = c_.qp->qp_num;
  p.responder_resources = 17;  // more than the device's 16
  errno = 0;
  EXPECT_EQ(rdma_connect(cli_, &p), -1);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(rdma_establish(cli_), -1);  // nothing to establish
  EXPECT_EQ(errno, EINVAL);

  // The id still connects; RDMA_MAX_RESP_RES asks for the device's most.
  p.responder_resources = RDMA_MAX_RESP_RES;
  ASSERT_EQ(rdma_connect(cli_, &p), 0) << "errno " << errno;
  errno = 0;
  EXPECT_EQ(rdma_establish(cli_), -1);  // no CONNECT_RESPONSE yet
  EXPECT_EQ(errno, EINVAL);
  const ConnEv req = conn_event(sch_, RDMA_CM_EVENT_CONNECT_REQUEST);
  ASSERT_TRUE(req.ok);
  EXPECT_EQ(req.conn.qp_num, c_.qp->qp_num);
  EXPECT_EQ(req.conn.initiator_depth, 16);  // the client's responder resources
  child_ = req.id;
  EXPECT_EQ(rdma_accept(child_, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  rdma_conn_param ap{};
  ap.qp_num = gone_qp_num(child_->verbs);
  errno = 0;
  EXPECT_EQ(rdma_accept(child_, &ap), -1);
  EXPECT_EQ(errno, EINVAL);
  // The request is still there to answer.
  ASSERT_EQ(rdma_reject(child_, nullptr, 0), 0);
  EXPECT_TRUE(conn_event(cch_, RDMA_CM_EVENT_REJECTED).ok);
  errno = 0;
  EXPECT_EQ(rdma_establish(cli_), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(RdmaCmOwnQpTest, DisconnectBeforeEstablishRejectsTheRep) {
  listen(7332);
  ASSERT_NO_FATAL_FAILURE(route_to(kServerIp, 7332));
  ASSERT_NO_FATAL_FAILURE(c_.make(cli_->verbs));
  rdma_conn_param p{};
  p.qp_num = c_.qp->qp_num;
  ASSERT_EQ(rdma_connect(cli_, &p), 0) << "errno " << errno;
  const ConnEv req = conn_event(sch_, RDMA_CM_EVENT_CONNECT_REQUEST);
  ASSERT_TRUE(req.ok);
  child_ = req.id;
  ASSERT_NO_FATAL_FAILURE(s_.make(child_->verbs));
  rdma_conn_param ap{};
  ap.qp_num = s_.qp->qp_num;
  ASSERT_EQ(rdma_accept(child_, &ap), 0) << "errno " << errno;
  ASSERT_TRUE(conn_event(cch_, RDMA_CM_EVENT_CONNECT_RESPONSE).ok);
  // The client gives up instead of establishing: its REP is rejected, so the
  // server knows at once (not after its REP's retries), as the kernel's CM
  // reports a REJ: REJECTED, with the REJ's reason (consumer reject).
  ASSERT_EQ(rdma_disconnect(cli_), 0);
  EXPECT_TRUE(conn_event(cch_, RDMA_CM_EVENT_DISCONNECTED).ok);
  const ConnEv rej = conn_event(sch_, RDMA_CM_EVENT_REJECTED);
  EXPECT_TRUE(rej.ok);
  EXPECT_EQ(rej.status, 28);
  errno = 0;
  EXPECT_EQ(rdma_establish(cli_), -1);
  EXPECT_EQ(errno, EINVAL);
}

// A synchronous client (no event channel): rdma_connect returns with
// CONNECT_RESPONSE in id->event, rdma_establish acks it.
TEST_F(RdmaCmOwnQpTest, SynchronousClient) {
  listen(7333);
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP), 0);
  cli_ = id;  // destroyed by the fixture
  sockaddr_in src = addr(kClientIp, 0);
  sockaddr_in dst = addr(kServerIp, 7333);
  ASSERT_EQ(rdma_resolve_addr(id, sa(&src), sa(&dst), 2000), 0);
  ASSERT_EQ(rdma_resolve_route(id, 2000), 0);
  ASSERT_NO_FATAL_FAILURE(c_.make(id->verbs));
  // The server answers from a thread of its own (the client's call waits).
  std::thread server([this] {
    const ConnEv req = conn_event(sch_, RDMA_CM_EVENT_CONNECT_REQUEST);
    if (!req.ok) return;
    child_ = req.id;
    s_.make(child_->verbs);
    if (s_.qp == nullptr) return;
    rdma_conn_param ap{};
    ap.qp_num = s_.qp->qp_num;
    EXPECT_EQ(rdma_accept(child_, &ap), 0) << "errno " << errno;
  });
  rdma_conn_param p{};
  p.qp_num = c_.qp->qp_num;
  const int r = rdma_connect(id, &p);
  server.join();
  ASSERT_EQ(r, 0) << "errno " << errno;
  ASSERT_NE(id->event, nullptr);
  EXPECT_EQ(id->event->event, RDMA_CM_EVENT_CONNECT_RESPONSE);
  EXPECT_EQ(id->event->param.conn.qp_num, s_.qp->qp_num);
  ASSERT_EQ(rdma_establish(id), 0) << "errno " << errno;
  EXPECT_EQ(id->event, nullptr);  // acked
  EXPECT_TRUE(conn_event(sch_, RDMA_CM_EVENT_ESTABLISHED).ok);
}

// UCX's rdmacm transport: it names the connection by a UD QP made on the
// id's PD (id->pd, which librdmacm gives every id bound to a device) only to
// hold a unique number, and connects its RC QPs by numbers it sends in the
// private data.  Both ids have the device's PD; the UD QP names the
// connection on either side, and the CM exchange completes.
TEST_F(RdmaCmOwnQpTest, IdPdAndAUdQpNamingTheConnection) {
  listen(7334);
  ASSERT_NO_FATAL_FAILURE(route_to(kServerIp, 7334));
  ASSERT_NE(cli_->pd, nullptr);
  EXPECT_EQ(cli_->pd->context, cli_->verbs);
  ibv_cq* ccq = ibv_create_cq(cli_->verbs, 1, nullptr, nullptr, 0);
  ASSERT_NE(ccq, nullptr);
  ibv_qp_init_attr ua{};
  ua.send_cq = ccq;
  ua.recv_cq = ccq;
  ua.qp_type = IBV_QPT_UD;
  ua.cap = ibv_qp_cap{2, 2, 1, 1, 0};
  ibv_qp* cud = ibv_create_qp(cli_->pd, &ua);
  ASSERT_NE(cud, nullptr) << "errno " << errno;
  rdma_conn_param p{};
  p.qp_num = cud->qp_num;
  ASSERT_EQ(rdma_connect(cli_, &p), 0) << "errno " << errno;

  const ConnEv req = conn_event(sch_, RDMA_CM_EVENT_CONNECT_REQUEST);
  ASSERT_TRUE(req.ok);
  EXPECT_EQ(req.conn.qp_num, cud->qp_num);
  child_ = req.id;
  ASSERT_NE(child_->pd, nullptr);
  EXPECT_EQ(child_->pd->context, child_->verbs);
  ibv_cq* scq = ibv_create_cq(child_->verbs, 1, nullptr, nullptr, 0);
  ASSERT_NE(scq, nullptr);
  ua.send_cq = scq;
  ua.recv_cq = scq;
  ibv_qp* sud = ibv_create_qp(child_->pd, &ua);
  ASSERT_NE(sud, nullptr) << "errno " << errno;
  rdma_conn_param ap{};
  ap.qp_num = sud->qp_num;
  ASSERT_EQ(rdma_accept(child_, &ap), 0) << "errno " << errno;
  const ConnEv resp = conn_event(cch_, RDMA_CM_EVENT_CONNECT_RESPONSE);
  ASSERT_TRUE(resp.ok);
  EXPECT_EQ(resp.conn.qp_num, sud->qp_num);
  ASSERT_EQ(rdma_establish(cli_), 0) << "errno " << errno;
  const ConnEv est = conn_event(sch_, RDMA_CM_EVENT_ESTABLISHED);
  ASSERT_TRUE(est.ok);
  EXPECT_EQ(est.conn.qp_num, cud->qp_num);
  ASSERT_EQ(rdma_disconnect(cli_), 0);
  EXPECT_TRUE(conn_event(cch_, RDMA_CM_EVENT_DISCONNECTED).ok);
  EXPECT_TRUE(conn_event(sch_, RDMA_CM_EVENT_DISCONNECTED).ok);
  EXPECT_EQ(ibv_destroy_qp(sud), 0);
  EXPECT_EQ(ibv_destroy_qp(cud), 0);
  EXPECT_EQ(ibv_destroy_cq(scq), 0);
  EXPECT_EQ(ibv_destroy_cq(ccq), 0);
}

}  // namespace
