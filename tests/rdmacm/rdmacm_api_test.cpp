// dpdat's librdmacm.so.1 through the rdma_cm API itself (linked against it,
// compiled against Debian's <rdma/rdma_cma.h>): a listener on the process's
// built-in interface dpdat0 (192.168.77.1) and clients on dpdat1
// (192.168.77.2), the two ends of the in-process ring link.  Every event and
// error path: no listener (REJECTED), reject with private data, disconnect
// from either side, destroy with the connection open, the event channel's
// fd, synchronous ids, and what dpdat does not offer.  Addresses and peers
// that answer nothing, and rdma_init_qp_attr: rdmacm_paths_test.cpp.

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

#include "rdmacm_fixture.hpp"

namespace {

using namespace rdmacm_test;  // NOLINT(google-build-using-namespace): the tests' fixture

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
  // The passive side knows the client's port (dpdat's REQ carries it).
  EXPECT_EQ(rdma_get_dst_port(child_), rdma_get_src_port(cli_));
  EXPECT_EQ(peer->sin_port, rdma_get_src_port(cli_));
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
