#pragma once
// The rdma_cm tests' fixture: a listener on the process's built-in interface
// dpdat0 (192.168.77.1) and clients on dpdat1 (192.168.77.2), the two ends
// of the in-process ring link; event helpers; one SEND through rdma_verbs.h.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <cstring>
#include <string>

namespace rdmacm_test {

constexpr const char* kServerIp = "192.168.77.1";
constexpr const char* kClientIp = "192.168.77.2";
constexpr const char* kNobody = "192.168.77.99";

inline sockaddr_in addr(const char* ip, uint16_t port) {
  sockaddr_in s{};
  s.sin_family = AF_INET;
  s.sin_port = htons(port);
  inet_pton(AF_INET, ip, &s.sin_addr);
  return s;
}
inline sockaddr* sa(sockaddr_in* s) { return reinterpret_cast<sockaddr*>(s); }

// The next event on ch within timeout_ms (nullptr when none came).
inline rdma_cm_event* next_event(rdma_event_channel* ch, int timeout_ms = 10000) {
  pollfd p{ch->fd, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) != 1) return nullptr;
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(ch, &ev) != 0) return nullptr;
  return ev;
}

// Waits for an event of `type`; copies its private data and status.
struct Got {
  bool ok = false;
  int status = 0;
  rdma_cm_id* id = nullptr;
  rdma_cm_id* listen_id = nullptr;
  std::string pdata;
  rdma_cm_event_type type = RDMA_CM_EVENT_ADDR_ERROR;
};
inline Got expect_event(rdma_event_channel* ch, rdma_cm_event_type type, int timeout_ms = 10000) {
  Got g;
  rdma_cm_event* ev = next_event(ch, timeout_ms);
  if (ev == nullptr) return g;
  g.type = ev->event;
  g.ok = ev->event == type;
  g.status = ev->status;
  g.id = ev->id;
  g.listen_id = ev->listen_id;
  if (ev->param.conn.private_data != nullptr)
    g.pdata.assign(static_cast<const char*>(ev->param.conn.private_data),
                   ev->param.conn.private_data_len);
  EXPECT_EQ(rdma_ack_cm_event(ev), 0);
  return g;
}

inline ibv_qp_init_attr qp_attr() {
  ibv_qp_init_attr a{};
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = 8;
  a.cap.max_recv_wr = 8;
  a.cap.max_send_sge = 1;
  a.cap.max_recv_sge = 1;
  return a;
}

class RdmaCmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sch_ = rdma_create_event_channel();
    cch_ = rdma_create_event_channel();
    ASSERT_NE(sch_, nullptr);
    ASSERT_NE(cch_, nullptr);
  }
  void TearDown() override {
    for (rdma_cm_id* id : {cli_, child_, listen_}) {
      if (id == nullptr) continue;
      if (id->qp != nullptr) rdma_destroy_qp(id);
      EXPECT_EQ(rdma_destroy_id(id), 0);
    }
    rdma_destroy_event_channel(sch_);
    rdma_destroy_event_channel(cch_);
  }

  void listen(uint16_t port) {
    ASSERT_EQ(rdma_create_id(sch_, &listen_, nullptr, RDMA_PS_TCP), 0);
    sockaddr_in s = addr(kServerIp, port);
    ASSERT_EQ(rdma_bind_addr(listen_, sa(&s)), 0);
    ASSERT_EQ(rdma_listen(listen_, 4), 0);
    EXPECT_EQ(ntohs(rdma_get_src_port(listen_)), port);
  }

  // A client id with its route resolved towards ip:port, no QP.
  void route_to(const char* ip, uint16_t port) {
    ASSERT_EQ(rdma_create_id(cch_, &cli_, nullptr, RDMA_PS_TCP), 0);
    sockaddr_in src = addr(kClientIp, 0);
    sockaddr_in dst = addr(ip, port);
    ASSERT_EQ(rdma_resolve_addr(cli_, sa(&src), sa(&dst), 2000), 0);
    ASSERT_TRUE(expect_event(cch_, RDMA_CM_EVENT_ADDR_RESOLVED).ok);
    ASSERT_NE(cli_->verbs, nullptr);
    ASSERT_EQ(rdma_resolve_route(cli_, 2000), 0);
    ASSERT_TRUE(expect_event(cch_, RDMA_CM_EVENT_ROUTE_RESOLVED).ok);
  }

  // A client id with its route resolved and a QP, towards ip:port.
  void client_to(const char* ip, uint16_t port) {
    ASSERT_NO_FATAL_FAILURE(route_to(ip, port));
    ibv_qp_init_attr a = qp_attr();
    ASSERT_EQ(rdma_create_qp(cli_, nullptr, &a), 0);
    ASSERT_NE(cli_->qp, nullptr);
    EXPECT_NE(cli_->send_cq, nullptr);  // made for the id, as librdmacm does
  }

  // Connects cli_ to the listener; the child is accepted with its own QP.
  void connect_pair(uint16_t port) {
    listen(port);
    client_to(kServerIp, port);
    const char hello[] = "hello";
    rdma_conn_param p{};
    p.private_data = hello;
    p.private_data_len = sizeof(hello);
    ASSERT_EQ(rdma_connect(cli_, &p), 0);
    Got req = expect_event(sch_, RDMA_CM_EVENT_CONNECT_REQUEST);
    ASSERT_TRUE(req.ok);
    EXPECT_EQ(req.listen_id, listen_);
    EXPECT_EQ(req.pdata.substr(0, sizeof(hello)), std::string(hello, sizeof(hello)));
    child_ = req.id;
    ASSERT_NE(child_->verbs, nullptr);
    ibv_qp_init_attr a = qp_attr();
    ASSERT_EQ(rdma_create_qp(child_, nullptr, &a), 0);
    const char welcome[] = "welcome";
    rdma_conn_param ap{};
    ap.private_data = welcome;
    ap.private_data_len = sizeof(welcome);
    ASSERT_EQ(rdma_accept(child_, &ap), 0);
    Got est = expect_event(cch_, RDMA_CM_EVENT_ESTABLISHED);
    ASSERT_TRUE(est.ok);
    EXPECT_EQ(est.pdata.substr(0, sizeof(welcome)), std::string(welcome, sizeof(welcome)));
    ASSERT_TRUE(expect_event(sch_, RDMA_CM_EVENT_ESTABLISHED).ok);
  }

  // One SEND from a to b through rdma_verbs.h's helpers.
  static void send_one(rdma_cm_id* a, rdma_cm_id* b) {
    char out[32] = "ping over rdma_cm";
    char in[32] = {};
    ibv_mr* mo = rdma_reg_msgs(a, out, sizeof(out));
    ibv_mr* mi = rdma_reg_msgs(b, in, sizeof(in));
    ASSERT_NE(mo, nullptr);
    ASSERT_NE(mi, nullptr);
    ASSERT_EQ(rdma_post_recv(b, nullptr, in, sizeof(in), mi), 0);
    ASSERT_EQ(rdma_post_send(a, nullptr, out, sizeof(out), mo, IBV_SEND_SIGNALED), 0);
    ibv_wc wc{};
    ASSERT_EQ(rdma_get_send_comp(a, &wc), 1);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    ASSERT_EQ(rdma_get_recv_comp(b, &wc), 1);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.byte_len, sizeof(out));
    EXPECT_STREQ(in, out);
    EXPECT_EQ(rdma_dereg_mr(mo), 0);
    EXPECT_EQ(rdma_dereg_mr(mi), 0);
  }

  rdma_event_channel* sch_ = nullptr;
  rdma_event_channel* cch_ = nullptr;
  rdma_cm_id* listen_ = nullptr;
  rdma_cm_id* child_ = nullptr;
  rdma_cm_id* cli_ = nullptr;
};

}  // namespace rdmacm_test
