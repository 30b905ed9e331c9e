// dpdat's librdmacm.so.1 through the rdma_cm API itself (linked against it,
// compiled against Debian's <rdma/rdma_cma.h>): a listener on the process's
// built-in interface dpdat0 (192.168.77.1) and clients on dpdat1
// (192.168.77.2), the two ends of the in-process ring link.  Every event and
// error path: no listener (REJECTED), an address nobody answers
// (UNREACHABLE), reject with private data, disconnect from either side,
// destroy with the connection open, the event channel's fd, synchronous ids,
// and what dpdat does not offer.

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr const char* kServerIp = "192.168.77.1";
constexpr const char* kClientIp = "192.168.77.2";
constexpr const char* kNobody = "192.168.77.99";

sockaddr_in addr(const char* ip, uint16_t port) {
  sockaddr_in s{};
  s.sin_family = AF_INET;
  s.sin_port = htons(port);
  inet_pton(AF_INET, ip, &s.sin_addr);
  return s;
}
sockaddr* sa(sockaddr_in* s) { return reinterpret_cast<sockaddr*>(s); }

// The next event on ch within timeout_ms (nullptr when none came).
rdma_cm_event* next_event(rdma_event_channel* ch, int timeout_ms = 10000) {
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
Got expect_event(rdma_event_channel* ch, rdma_cm_event_type type, int timeout_ms = 10000) {
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

ibv_qp_init_attr qp_attr() {
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

  // A client id with its route resolved and a QP, towards ip:port.
  void client_to(const char* ip, uint16_t port) {
    ASSERT_EQ(rdma_create_id(cch_, &cli_, nullptr, RDMA_PS_TCP), 0);
    sockaddr_in src = addr(kClientIp, 0);
    sockaddr_in dst = addr(ip, port);
    ASSERT_EQ(rdma_resolve_addr(cli_, sa(&src), sa(&dst), 2000), 0);
    ASSERT_TRUE(expect_event(cch_, RDMA_CM_EVENT_ADDR_RESOLVED).ok);
    ASSERT_NE(cli_->verbs, nullptr);
    ASSERT_EQ(rdma_resolve_route(cli_, 2000), 0);
    ASSERT_TRUE(expect_event(cch_, RDMA_CM_EVENT_ROUTE_RESOLVED).ok);
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

TEST_F(RdmaCmTest, ConnectSendAndAddresses) {
  connect_pair(7301);
  send_one(cli_, child_);
  send_one(child_, cli_);
  EXPECT_EQ(ntohs(rdma_get_dst_port(cli_)), 7301);
  EXPECT_NE(rdma_get_src_port(cli_), 0);
  EXPECT_EQ(ntohs(rdma_get_src_port(child_)), 7301);
  char buf[32];
  auto* peer = reinterpret_cast<sockaddr_in*>(rdma_get_peer_addr(child_));
  EXPECT_STREQ(inet_ntop(AF_INET, &peer->sin_addr, buf, sizeof(buf)), kClientIp);
  auto* local = reinterpret_cast<sockaddr_in*>(rdma_get_local_addr(cli_));
  EXPECT_STREQ(inet_ntop(AF_INET, &local->sin_addr, buf, sizeof(buf)), kClientIp);
  ibv_qp_attr qa{};
  ibv_qp_init_attr qi{};
  ASSERT_EQ(ibv_query_qp(cli_->qp, &qa, IBV_QP_STATE, &qi), 0);
  EXPECT_EQ(qa.qp_state, IBV_QPS_RTS);
}

TEST_F(RdmaCmTest, NoListenerIsRejected) {
  // The server's interface is up (an id bound to its port, not listening):
  // it answers ARP, then refuses the REQ.
  ASSERT_EQ(rdma_create_id(sch_, &listen_, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in s = addr(kServerIp, 7302);
  ASSERT_EQ(rdma_bind_addr(listen_, sa(&s)), 0);
  client_to(kServerIp, 7302);
  ASSERT_EQ(rdma_connect(cli_, nullptr), 0);
  Got g = expect_event(cch_, RDMA_CM_EVENT_REJECTED);
  EXPECT_TRUE(g.ok) << rdma_event_str(g.type);
  EXPECT_EQ(g.status, 8);  // IBA REJ reason: invalid service ID
}

TEST_F(RdmaCmTest, NobodyAnswersIsUnreachable) {
  client_to(kNobody, 7303);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(rdma_connect(cli_, nullptr), 0);
  Got g = expect_event(cch_, RDMA_CM_EVENT_UNREACHABLE, 10000);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_TRUE(g.ok) << rdma_event_str(g.type);
  EXPECT_LT(g.status, 0);
  // Documented: ARP gives up after 1 s.
  EXPECT_GE(ms, 900);
  EXPECT_LT(ms, 5000);
}

TEST_F(RdmaCmTest, RejectWithPrivateData) {
  listen(7304);
  client_to(kServerIp, 7304);
  ASSERT_EQ(rdma_connect(cli_, nullptr), 0);
  Got req = expect_event(sch_, RDMA_CM_EVENT_CONNECT_REQUEST);
  ASSERT_TRUE(req.ok);
  const char why[] = "not today";
  ASSERT_EQ(rdma_reject(req.id, why, sizeof(why)), 0);
  EXPECT_EQ(rdma_destroy_id(req.id), 0);
  Got g = expect_event(cch_, RDMA_CM_EVENT_REJECTED);
  EXPECT_TRUE(g.ok) << rdma_event_str(g.type);
  EXPECT_EQ(g.status, 28);  // IBA REJ reason: consumer defined
  EXPECT_EQ(g.pdata.substr(0, sizeof(why)), std::string(why, sizeof(why)));
}

TEST_F(RdmaCmTest, ClientDisconnects) {
  connect_pair(7305);
  ASSERT_EQ(rdma_disconnect(cli_), 0);
  EXPECT_TRUE(expect_event(sch_, RDMA_CM_EVENT_DISCONNECTED).ok);
  EXPECT_TRUE(expect_event(sch_, RDMA_CM_EVENT_TIMEWAIT_EXIT).ok);
  EXPECT_TRUE(expect_event(cch_, RDMA_CM_EVENT_DISCONNECTED).ok);
  EXPECT_TRUE(expect_event(cch_, RDMA_CM_EVENT_TIMEWAIT_EXIT).ok);
  EXPECT_EQ(rdma_disconnect(child_), 0);  // already gone: nothing to do
}

TEST_F(RdmaCmTest, ServerDisconnects) {
  connect_pair(7306);
  ASSERT_EQ(rdma_disconnect(child_), 0);
  EXPECT_TRUE(expect_event(cch_, RDMA_CM_EVENT_DISCONNECTED).ok);
  EXPECT_TRUE(expect_event(sch_, RDMA_CM_EVENT_DISCONNECTED).ok);
  // Flushed: the QP is in error once disconnected.
  ibv_qp_attr qa{};
  ibv_qp_init_attr qi{};
  ASSERT_EQ(ibv_query_qp(cli_->qp, &qa, IBV_QP_STATE, &qi), 0);
  EXPECT_EQ(qa.qp_state, IBV_QPS_ERR);
}

TEST_F(RdmaCmTest, DestroyWithConnectionOpen) {
  connect_pair(7307);
  // The client goes without disconnecting: the server hears of it.
  rdma_destroy_qp(cli_);
  ASSERT_EQ(rdma_destroy_id(cli_), 0);
  cli_ = nullptr;
  EXPECT_TRUE(expect_event(sch_, RDMA_CM_EVENT_DISCONNECTED).ok);
  // The server's side and the listener go too; the port is free again.
  rdma_destroy_qp(child_);
  ASSERT_EQ(rdma_destroy_id(child_), 0);
  child_ = nullptr;
  ASSERT_EQ(rdma_destroy_id(listen_), 0);
  listen_ = nullptr;
  connect_pair(7307);
  send_one(cli_, child_);
}

// rping's way: the QP goes with ibv_destroy_qp, then the id with
// rdma_destroy_id; and the other way round (the QP outlives its id).
TEST_F(RdmaCmTest, QpDestroyedWithVerbs) {
  connect_pair(7312);
  ASSERT_EQ(ibv_destroy_qp(cli_->qp), 0);
  EXPECT_EQ(cli_->qp, nullptr);  // the id forgets it
  EXPECT_TRUE(expect_event(sch_, RDMA_CM_EVENT_DISCONNECTED).ok);
  ASSERT_EQ(rdma_destroy_id(cli_), 0);
  cli_ = nullptr;
  ibv_qp* qp = child_->qp;
  ASSERT_EQ(rdma_destroy_id(child_), 0);
  child_ = nullptr;
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
}

TEST_F(RdmaCmTest, DestroyListenerWithRequestPending) {
  listen(7308);
  client_to(kServerIp, 7308);
  ASSERT_EQ(rdma_connect(cli_, nullptr), 0);
  // Wait until the request is queued on the server's channel, unread.
  pollfd p{sch_->fd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  ASSERT_EQ(rdma_destroy_id(listen_), 0);
  listen_ = nullptr;
  Got g = expect_event(cch_, RDMA_CM_EVENT_REJECTED);
  EXPECT_TRUE(g.ok) << rdma_event_str(g.type);
}

TEST_F(RdmaCmTest, ChannelFdIsPollableAndNonBlocking) {
  ASSERT_EQ(rdma_create_id(cch_, &cli_, nullptr, RDMA_PS_TCP), 0);
  ASSERT_EQ(fcntl(cch_->fd, F_SETFL, fcntl(cch_->fd, F_GETFL) | O_NONBLOCK), 0);
  rdma_cm_event* ev = nullptr;
  EXPECT_EQ(rdma_get_cm_event(cch_, &ev), -1);
  EXPECT_EQ(errno, EAGAIN);
  sockaddr_in dst = addr(kServerIp, 7309);
  ASSERT_EQ(rdma_resolve_addr(cli_, nullptr, sa(&dst), 2000), 0);
  pollfd p{cch_->fd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  ASSERT_EQ(rdma_get_cm_event(cch_, &ev), 0);
  EXPECT_EQ(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
  EXPECT_EQ(ev->id, cli_);
  EXPECT_EQ(rdma_ack_cm_event(ev), 0);
  EXPECT_EQ(rdma_get_cm_event(cch_, &ev), -1);
  EXPECT_EQ(errno, EAGAIN);
}

TEST(RdmaCmSync, CreateEpGetRequestAndConnect) {
  rdma_addrinfo hints{};
  hints.ai_flags = RAI_PASSIVE;
  hints.ai_port_space = RDMA_PS_TCP;
  rdma_addrinfo* res = nullptr;
  ASSERT_EQ(rdma_getaddrinfo(kServerIp, "7310", &hints, &res), 0);
  ibv_qp_init_attr a = qp_attr();
  rdma_cm_id* listen = nullptr;
  ASSERT_EQ(rdma_create_ep(&listen, res, nullptr, &a), 0);
  rdma_freeaddrinfo(res);
  ASSERT_EQ(rdma_listen(listen, 1), 0);
  rdma_cm_id* server = nullptr;
  std::thread t([&] {
    ASSERT_EQ(rdma_get_request(listen, &server), 0);
    ASSERT_NE(server->qp, nullptr);  // from rdma_create_ep's attributes
    ASSERT_EQ(rdma_accept(server, nullptr), 0);
  });
  rdma_addrinfo ch{};
  ch.ai_port_space = RDMA_PS_TCP;
  ASSERT_EQ(rdma_getaddrinfo(kServerIp, "7310", &ch, &res), 0);
  rdma_cm_id* client = nullptr;
  ibv_qp_init_attr b = qp_attr();
  ASSERT_EQ(rdma_create_ep(&client, res, nullptr, &b), 0);
  rdma_freeaddrinfo(res);
  ASSERT_EQ(rdma_connect(client, nullptr), 0);
  t.join();
  ASSERT_NE(server, nullptr);
  ASSERT_EQ(rdma_disconnect(client), 0);
  rdma_destroy_ep(client);
  rdma_destroy_ep(server);
  rdma_destroy_ep(listen);
}

TEST(RdmaCmSync, ConnectToNoListenerFails) {
  // Every device open (the server's interface answers ARP, then refuses).
  int n = 0;
  ibv_context** devs = rdma_get_devices(&n);
  ASSERT_NE(devs, nullptr);
  rdma_free_devices(devs);
  rdma_addrinfo hints{};
  hints.ai_port_space = RDMA_PS_TCP;
  sockaddr_in src = addr(kClientIp, 0);
  hints.ai_src_addr = sa(&src);
  hints.ai_src_len = sizeof(src);
  rdma_addrinfo* res = nullptr;
  ASSERT_EQ(rdma_getaddrinfo(kServerIp, "7311", &hints, &res), 0);
  ibv_qp_init_attr a = qp_attr();
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_ep(&id, res, nullptr, &a), 0);
  rdma_freeaddrinfo(res);
  char buf[32];
  auto* local = reinterpret_cast<sockaddr_in*>(rdma_get_local_addr(id));
  EXPECT_STREQ(inet_ntop(AF_INET, &local->sin_addr, buf, sizeof(buf)), kClientIp);
  EXPECT_EQ(rdma_connect(id, nullptr), -1);
  EXPECT_EQ(errno, ECONNREFUSED);
  rdma_destroy_ep(id);
}

TEST(RdmaCmUnsupported, FailWithErrno) {
  rdma_cm_id* id = nullptr;
  EXPECT_EQ(rdma_create_id(nullptr, &id, nullptr, RDMA_PS_UDP), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ASSERT_EQ(rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in6 six{};
  six.sin6_family = AF_INET6;
  EXPECT_EQ(rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&six)), -1);
  EXPECT_EQ(errno, EAFNOSUPPORT);
  sockaddr_in mc = addr("239.1.1.1", 0);
  EXPECT_EQ(rdma_join_multicast(id, sa(&mc), nullptr), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  sockaddr_in none = addr("10.200.0.1", 0);
  EXPECT_EQ(rdma_bind_addr(id, sa(&none)), -1);
  EXPECT_EQ(errno, EADDRNOTAVAIL);
  EXPECT_EQ(rdma_destroy_id(id), 0);
  int n = 0;
  ibv_context** devs = rdma_get_devices(&n);
  ASSERT_NE(devs, nullptr);
  EXPECT_GE(n, 2);  // dpdat0 and dpdat1 at least
  EXPECT_EQ(devs[n], nullptr);
  rdma_free_devices(devs);
}

}  // namespace
