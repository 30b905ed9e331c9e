#pragma once
// The fixture of the verbs API tests: two RC queue pairs on the process's two
// built-in interfaces (dpdat0 and dpdat1, the ends of the in-process net_ring
// link), connected by ibv_modify_qp with each other's numbers as an
// application would exchange them.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <poll.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

namespace verbs_test {

constexpr size_t kBuf = 64 * 1024;

inline ibv_device* find_device(ibv_device** list, const char* name) {
  for (int i = 0; list[i] != nullptr; ++i)
    if (std::strcmp(ibv_get_device_name(list[i]), name) == 0) return list[i];
  return nullptr;
}

// The requester's timeout, retry count and RNR retry count (RTR -> RTS).
struct Retry {
  uint8_t timeout = 14, retry_cnt = 7, rnr_retry = 7;
};

struct Side {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_comp_channel* ch = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  std::vector<uint8_t> buf = std::vector<uint8_t>(kBuf);
  ibv_mr* mr = nullptr;
  ibv_gid gid{};
};

// Polls until n completions arrived (or 5 s passed).
inline std::vector<ibv_wc> poll_n(ibv_cq* cq, int n) {
  std::vector<ibv_wc> out;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (static_cast<int>(out.size()) < n && std::chrono::steady_clock::now() < end) {
    ibv_wc wc[8];
    const int got = ibv_poll_cq(cq, 8, wc);
    if (got < 0) break;
    out.insert(out.end(), wc, wc + got);
  }
  return out;
}

// The next asynchronous event of the context, waiting at most ms on its
// async fd (a pollable eventfd); false when none came.
inline bool next_async(ibv_context* c, ibv_async_event* ev, int ms) {
  pollfd p{c->async_fd, POLLIN, 0};
  if (poll(&p, 1, ms) != 1) return false;
  return ibv_get_async_event(c, ev) == 0;
}

class VerbsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    list_ = ibv_get_device_list(&n);
    ASSERT_NE(list_, nullptr);
    ibv_device* da = find_device(list_, "dpdat0");
    ibv_device* db = find_device(list_, "dpdat1");
    ASSERT_NE(da, nullptr);
    ASSERT_NE(db, nullptr);
    open(da, &a_);
    open(db, &b_);
  }
  void TearDown() override {
    for (Side* s : {&a_, &b_}) {
      if (s->qp != nullptr) {
        EXPECT_EQ(ibv_destroy_qp(s->qp), 0);
      }
      if (s->mr != nullptr) {
        EXPECT_EQ(ibv_dereg_mr(s->mr), 0);
      }
      if (s->cq != nullptr) {
        EXPECT_EQ(ibv_destroy_cq(s->cq), 0);
      }
      if (s->ch != nullptr) {
        EXPECT_EQ(ibv_destroy_comp_channel(s->ch), 0);
      }
      if (s->pd != nullptr) {
        EXPECT_EQ(ibv_dealloc_pd(s->pd), 0);
      }
      if (s->ctx != nullptr) {
        EXPECT_EQ(ibv_close_device(s->ctx), 0);
      }
    }
    ibv_free_device_list(list_);
  }

  static void open(ibv_device* d, Side* s,
                   unsigned access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC) {
    s->ctx = ibv_open_device(d);
    ASSERT_NE(s->ctx, nullptr);
    s->pd = ibv_alloc_pd(s->ctx);
    ASSERT_NE(s->pd, nullptr);
    s->ch = ibv_create_comp_channel(s->ctx);
    ASSERT_NE(s->ch, nullptr);
    s->cq = ibv_create_cq(s->ctx, 64, s, s->ch, 0);
    ASSERT_NE(s->cq, nullptr);
    s->mr = ibv_reg_mr(s->pd, s->buf.data(), s->buf.size(), access);
    ASSERT_NE(s->mr, nullptr);
    ibv_qp_init_attr ia{};
    ia.send_cq = s->cq;
    ia.recv_cq = s->cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = 32;
    ia.cap.max_recv_wr = 32;
    ia.cap.max_send_sge = 2;
    ia.cap.max_recv_sge = 2;
    ia.cap.max_inline_data = 64;
    s->qp = ibv_create_qp(s->pd, &ia);
    ASSERT_NE(s->qp, nullptr);
    EXPECT_GE(ia.cap.max_inline_data, 64u);
    ASSERT_EQ(ibv_query_gid(s->ctx, 1, 0, &s->gid), 0);
  }

  static int to_init(ibv_qp* qp) {
    ibv_qp_attr at{};
    at.qp_state = IBV_QPS_INIT;
    at.port_num = 1;
    at.qp_access_flags =
        IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    return ibv_modify_qp(qp, &at,
                         IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  }
  static int to_init(Side* s) { return to_init(s->qp); }
  static int to_rtr(ibv_qp* qp, uint32_t dest_qpn, const ibv_gid& dgid, uint32_t rq_psn) {
    ibv_qp_attr at{};
    at.qp_state = IBV_QPS_RTR;
    at.path_mtu = IBV_MTU_1024;
    at.dest_qp_num = dest_qpn;
    at.rq_psn = rq_psn;
    at.max_dest_rd_atomic = 4;
    at.min_rnr_timer = 12;
    at.ah_attr.is_global = 1;
    at.ah_attr.grh.dgid = dgid;
    at.ah_attr.grh.hop_limit = 1;
    at.ah_attr.port_num = 1;
    return ibv_modify_qp(qp, &at,
                         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                             IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  }
  static int to_rtr(Side* s, const Side* peer, uint32_t rq_psn) {
    return to_rtr(s->qp, peer->qp->qp_num, peer->gid, rq_psn);
  }
  static int to_rts(ibv_qp* qp, uint32_t sq_psn, Retry r = {}) {
    ibv_qp_attr at{};
    at.qp_state = IBV_QPS_RTS;
    at.sq_psn = sq_psn;
    at.timeout = r.timeout;
    at.retry_cnt = r.retry_cnt;
    at.rnr_retry = r.rnr_retry;
    at.max_rd_atomic = 4;
    return ibv_modify_qp(qp, &at,
                         IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                             IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
  }
  static int to_rts(Side* s, uint32_t sq_psn, Retry r = {}) { return to_rts(s->qp, sq_psn, r); }
  // The first PSN each side sends (the other's expected PSN from RTR on).
  static constexpr uint32_t kPsnA = 0x111, kPsnB = 0x222;
  // Moves qp (on side s, sending from kPsnA) and peer_qp (on side p, from
  // kPsnB) one step on, both to `to`: INIT, RTR (each with the other's number
  // and GID) or RTS.
  static void both_to(ibv_qp* qp, const Side* s, ibv_qp* peer_qp, const Side* p, ibv_qp_state to,
                      Retry r = {}) {
    switch (to) {
      case IBV_QPS_INIT:
        ASSERT_EQ(to_init(qp), 0);
        ASSERT_EQ(to_init(peer_qp), 0);
        break;
      case IBV_QPS_RTR:
        ASSERT_EQ(to_rtr(qp, peer_qp->qp_num, p->gid, kPsnB), 0);
        ASSERT_EQ(to_rtr(peer_qp, qp->qp_num, s->gid, kPsnA), 0);
        break;
      case IBV_QPS_RTS:
        ASSERT_EQ(to_rts(qp, kPsnA, r), 0);
        ASSERT_EQ(to_rts(peer_qp, kPsnB, r), 0);
        break;
      default:
        FAIL() << "both_to: INIT, RTR or RTS, not state " << to;
    }
  }
  // The fixture's two QPs one step on.
  void both_to(ibv_qp_state to, Retry r = {}) { both_to(a_.qp, &a_, b_.qp, &b_, to, r); }
  // Connects qp (on side s) with peer_qp (on side p): INIT, RTR, RTS each.
  static void connect_qps(ibv_qp* qp, const Side* s, ibv_qp* peer_qp, const Side* p, Retry r = {}) {
    for (const ibv_qp_state to : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
      ASSERT_NO_FATAL_FAILURE(both_to(qp, s, peer_qp, p, to, r));
    }
  }
  void connect(Retry r = {}) { connect_qps(a_.qp, &a_, b_.qp, &b_, r); }

  static int post(Side* s, ibv_wr_opcode op, uint64_t off, uint32_t len, const Side* peer,
                  uint64_t roff, uint64_t wr_id, unsigned flags = IBV_SEND_SIGNALED,
                  uint32_t lkey = 0, uint32_t rkey = 0) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(s->buf.data()) + off, len,
                lkey != 0 ? lkey : s->mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = flags;
    wr.imm_data = htonl(0xC0FFEE);
    if (peer != nullptr) {
      wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(peer->buf.data()) + roff;
      wr.wr.rdma.rkey = rkey != 0 ? rkey : peer->mr->rkey;
    }
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(s->qp, &wr, &bad);
  }
  static int post_recv(Side* s, uint64_t off, uint32_t len, uint64_t wr_id) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(s->buf.data()) + off, len, s->mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    return ibv_post_recv(s->qp, &wr, &bad);
  }
  static ibv_qp_state state(Side* s) {
    ibv_qp_attr at{};
    ibv_qp_init_attr ia{};
    EXPECT_EQ(ibv_query_qp(s->qp, &at, IBV_QP_STATE, &ia), 0);
    return at.qp_state;
  }

  ibv_device** list_ = nullptr;
  Side a_, b_;
};

}  // namespace verbs_test
