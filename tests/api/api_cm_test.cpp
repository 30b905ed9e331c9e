// Connection management through libdat's public API: what happens to the
// DTOs an EP holds when it leaves CONNECTED or never gets there.
//
// dat_ep_disconnect(3DAT): "Upon disconnect, all outstanding and in-progress
// DTOs and RMR Binds must be completed"; for an abrupt disconnect (and for a
// connection that fails or is torn down by the peer) they complete
// unsuccessfully, i.e. DAT_DTO_ERR_FLUSHED on the EP's recv / request EVD, in
// posting order.  Every path out of a connection attempt (peer reject,
// non-peer reject, unreachable, timed out) and out of a connection (graceful
// and abrupt disconnect, either side) is checked for that here, over the
// in-process net_ring link (dpdat0 = 192.168.77.1, dpdat1 = 192.168.77.2).

#include <arpa/inet.h>
#include <dat/udat.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "api_mem.hpp"

namespace {

using dpdat_test::Mem;
using dpdat_test::reg;

constexpr DAT_TIMEOUT kWaitUs = 5'000'000;
constexpr DAT_CONN_QUAL kQual = 4711;
constexpr uint64_t kRecvCookie = 100;  // recvs get kRecvCookie + i

DAT_DTO_COOKIE cookie(uint64_t v) {
  DAT_DTO_COOKIE c;
  c.as_64 = v;
  return c;
}

struct Side : Mem {  // buf: 1 MiB, registered by make()
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE recv_evd = DAT_HANDLE_NULL, req_evd = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE conn_evd = DAT_HANDLE_NULL, cr_evd = DAT_HANDLE_NULL;
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
};

class api_cm : public ::testing::Test {
 protected:
  void SetUp() override {
    DAT_EVD_HANDLE a0 = DAT_HANDLE_NULL, a1 = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_ia_open(const_cast<char*>("dpdat0"), 8, &a0, &cli_.ia), DAT_SUCCESS);
    ASSERT_EQ(dat_ia_open(const_cast<char*>("dpdat1"), 8, &a1, &srv_.ia), DAT_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(make(&cli_));
    ASSERT_NO_FATAL_FAILURE(make(&srv_));
  }
  void TearDown() override {
    for (Side* s : {&cli_, &srv_}) {
      if (s->ia != DAT_HANDLE_NULL) {
        EXPECT_EQ(dat_ia_close(s->ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
      }
    }
  }

  static void make(Side* s) {
    ASSERT_EQ(dat_pz_create(s->ia, &s->pz), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(s->ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s->recv_evd),
              DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(s->ia, 64, DAT_HANDLE_NULL,
                             static_cast<DAT_EVD_FLAGS>(DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG),
                             &s->req_evd),
              DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &s->conn_evd),
              DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &s->cr_evd), DAT_SUCCESS);
    ASSERT_EQ(dat_ep_create(s->ia, s->pz, s->recv_evd, s->req_evd, s->conn_evd, nullptr, &s->ep),
              DAT_SUCCESS);
    ASSERT_EQ(reg(s->ia, s->pz, 1 << 20, DAT_MEM_PRIV_ALL_FLAG, s), DAT_SUCCESS);
  }

  static DAT_RETURN wait(DAT_EVD_HANDLE e, DAT_EVENT* ev, DAT_TIMEOUT t = kWaitUs) {
    DAT_COUNT nmore = 0;
    std::memset(ev, 0, sizeof(*ev));
    return dat_evd_wait(e, t, 1, ev, &nmore);
  }

  static DAT_RETURN connect(const Side& c, const char* ip, DAT_CONN_QUAL q, DAT_TIMEOUT t) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    inet_pton(AF_INET, ip, &sa.sin_addr);
    return dat_ep_connect(c.ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&sa), q, t, 0, nullptr,
                          DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
  }

  static void expect_conn(const Side& s, DAT_EVENT_NUMBER want, DAT_TIMEOUT t = kWaitUs) {
    DAT_EVENT ev;
    ASSERT_EQ(wait(s.conn_evd, &ev, t), DAT_SUCCESS)
        << "no connection event, wanted 0x" << std::hex << want;
    EXPECT_EQ(ev.event_number, want) << std::hex << "got 0x" << ev.event_number;
    EXPECT_EQ(ev.event_data.connect_event_data.ep_handle, s.ep);
  }

  // Posts n receives of 4 KiB each, cookies kRecvCookie + i.
  static void post_recvs(const Side& s, int n) {
    for (int i = 0; i < n; ++i) {
      DAT_LMR_TRIPLET t = s.iov(static_cast<size_t>(i) * 4096, 4096);
      ASSERT_EQ(dat_ep_post_recv(s.ep, 1, &t, cookie(kRecvCookie + static_cast<uint64_t>(i)),
                                 DAT_COMPLETION_DEFAULT_FLAG),
                DAT_SUCCESS);
    }
  }

  // Exactly n flushed completions, cookies first, first+1, ... in order, then nothing.
  static void expect_flushed(DAT_EVD_HANDLE evd, DAT_EP_HANDLE ep, uint64_t first, int n) {
    for (int i = 0; i < n; ++i) {
      DAT_EVENT ev;
      ASSERT_EQ(wait(evd, &ev), DAT_SUCCESS) << "no completion for posted DTO " << i;
      ASSERT_EQ(ev.event_number, DAT_DTO_COMPLETION_EVENT);
      const auto& d = ev.event_data.dto_completion_event_data;
      EXPECT_EQ(d.ep_handle, ep);
      EXPECT_EQ(d.user_cookie.as_64, first + static_cast<uint64_t>(i));
      EXPECT_EQ(d.status, DAT_DTO_ERR_FLUSHED);
    }
    DAT_EVENT ev;
    EXPECT_EQ(DAT_GET_TYPE(wait(evd, &ev, 20'000)), DAT_TIMEOUT_EXPIRED) << "one event too many";
  }

  static DAT_EP_STATE state(const Side& s) {
    DAT_EP_STATE st = DAT_EP_STATE_UNCONNECTED;
    EXPECT_EQ(dat_ep_get_status(s.ep, &st, nullptr, nullptr), DAT_SUCCESS);
    return st;
  }

  // After a failed attempt the EP is DISCONNECTED, resettable, and reusable
  // for a real connection that carries data.
  void expect_reusable() {
    EXPECT_EQ(state(cli_), DAT_EP_STATE_DISCONNECTED);
    ASSERT_EQ(dat_ep_reset(cli_.ep), DAT_SUCCESS);
    EXPECT_EQ(state(cli_), DAT_EP_STATE_UNCONNECTED);
    ASSERT_NO_FATAL_FAILURE(establish());
    DAT_LMR_TRIPLET r = srv_.iov(0, 64), s = cli_.iov(0, 64);
    ASSERT_EQ(dat_ep_post_recv(srv_.ep, 1, &r, cookie(1), DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
    ASSERT_EQ(dat_ep_post_send(cli_.ep, 1, &s, cookie(2), DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
    DAT_EVENT ev;
    ASSERT_EQ(wait(srv_.recv_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64, 1u);
  }

  void listen() {
    ASSERT_EQ(dat_psp_create(srv_.ia, kQual, srv_.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp_),
              DAT_SUCCESS);
  }

  DAT_CR_HANDLE wait_cr() {
    DAT_EVENT ev;
    EXPECT_EQ(wait(srv_.cr_evd, &ev), DAT_SUCCESS) << "no connection request";
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
    return ev.event_data.cr_arrival_event_data.cr_handle;
  }

  void establish() {
    if (psp_ == DAT_HANDLE_NULL) {
      ASSERT_NO_FATAL_FAILURE(listen());
    }
    ASSERT_EQ(connect(cli_, "192.168.77.2", kQual, kWaitUs), DAT_SUCCESS);
    DAT_CR_HANDLE cr = wait_cr();
    ASSERT_NE(cr, DAT_HANDLE_NULL);
    ASSERT_EQ(dat_cr_accept(cr, srv_.ep, 0, nullptr), DAT_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(expect_conn(cli_, DAT_CONNECTION_EVENT_ESTABLISHED));
    ASSERT_NO_FATAL_FAILURE(expect_conn(srv_, DAT_CONNECTION_EVENT_ESTABLISHED));
  }

  Side cli_, srv_;
  DAT_PSP_HANDLE psp_ = DAT_HANDLE_NULL;
};

TEST_F(api_cm, PeerRejectFlushesPostedRecvs) {
  ASSERT_NO_FATAL_FAILURE(listen());
  ASSERT_NO_FATAL_FAILURE(post_recvs(cli_, 3));
  ASSERT_EQ(connect(cli_, "192.168.77.2", kQual, kWaitUs), DAT_SUCCESS);
  DAT_CR_HANDLE cr = wait_cr();
  ASSERT_NE(cr, DAT_HANDLE_NULL);
  ASSERT_EQ(dat_cr_reject(cr), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_conn(cli_, DAT_CONNECTION_EVENT_PEER_REJECTED));
  ASSERT_NO_FATAL_FAILURE(expect_flushed(cli_.recv_evd, cli_.ep, kRecvCookie, 3));
  ASSERT_NO_FATAL_FAILURE(expect_reusable());
}

TEST_F(api_cm, NonPeerRejectFlushesPostedRecvs) {
  ASSERT_NO_FATAL_FAILURE(post_recvs(cli_, 2));
  ASSERT_EQ(connect(cli_, "192.168.77.2", kQual + 1, kWaitUs), DAT_SUCCESS);  // no listener
  ASSERT_NO_FATAL_FAILURE(expect_conn(cli_, DAT_CONNECTION_EVENT_NON_PEER_REJECTED));
  ASSERT_NO_FATAL_FAILURE(expect_flushed(cli_.recv_evd, cli_.ep, kRecvCookie, 2));
  ASSERT_NO_FATAL_FAILURE(expect_reusable());
}

TEST_F(api_cm, UnreachableFlushesPostedRecvs) {
  ASSERT_NO_FATAL_FAILURE(post_recvs(cli_, 2));
  // Nobody answers ARP for .9; the connect timeout is longer than the ARP
  // give-up (1 s), so the attempt ends UNREACHABLE, not TIMED_OUT.
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(connect(cli_, "192.168.77.9", kQual, 10'000'000), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_conn(cli_, DAT_CONNECTION_EVENT_UNREACHABLE, 5'000'000));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(3000));
  ASSERT_NO_FATAL_FAILURE(expect_flushed(cli_.recv_evd, cli_.ep, kRecvCookie, 2));
  ASSERT_NO_FATAL_FAILURE(expect_reusable());
}

TEST_F(api_cm, TimeoutFlushesPostedRecvs) {
  ASSERT_NO_FATAL_FAILURE(listen());
  ASSERT_NO_FATAL_FAILURE(post_recvs(cli_, 4));
  // The server holds the request without deciding: the connect times out.
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(connect(cli_, "192.168.77.2", kQual, 200'000), DAT_SUCCESS);
  DAT_CR_HANDLE cr = wait_cr();
  ASSERT_NE(cr, DAT_HANDLE_NULL);
  ASSERT_NO_FATAL_FAILURE(expect_conn(cli_, DAT_CONNECTION_EVENT_TIMED_OUT));
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, std::chrono::milliseconds(190));
  EXPECT_LT(took, std::chrono::milliseconds(2000));
  ASSERT_NO_FATAL_FAILURE(expect_flushed(cli_.recv_evd, cli_.ep, kRecvCookie, 4));
  ASSERT_EQ(dat_cr_reject(cr), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_reusable());
}

TEST_F(api_cm, GracefulDisconnectFlushesRecvsOnBothSides) {
  ASSERT_NO_FATAL_FAILURE(establish());
  ASSERT_NO_FATAL_FAILURE(post_recvs(cli_, 2));
  ASSERT_NO_FATAL_FAILURE(post_recvs(srv_, 3));
  ASSERT_EQ(dat_ep_disconnect(cli_.ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_conn(cli_, DAT_CONNECTION_EVENT_DISCONNECTED));
  ASSERT_NO_FATAL_FAILURE(expect_conn(srv_, DAT_CONNECTION_EVENT_DISCONNECTED));
  ASSERT_NO_FATAL_FAILURE(expect_flushed(cli_.recv_evd, cli_.ep, kRecvCookie, 2));
  ASSERT_NO_FATAL_FAILURE(expect_flushed(srv_.recv_evd, srv_.ep, kRecvCookie, 3));
  EXPECT_EQ(state(srv_), DAT_EP_STATE_DISCONNECTED);
}

TEST_F(api_cm, AbruptDisconnectByPassiveSideFlushesBothSides) {
  ASSERT_NO_FATAL_FAILURE(establish());
  ASSERT_NO_FATAL_FAILURE(post_recvs(cli_, 3));
  ASSERT_NO_FATAL_FAILURE(post_recvs(srv_, 1));
  ASSERT_EQ(dat_ep_disconnect(srv_.ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  // Abrupt: DISCONNECTED at once on the calling side.
  EXPECT_EQ(state(srv_), DAT_EP_STATE_DISCONNECTED);
  ASSERT_NO_FATAL_FAILURE(expect_conn(srv_, DAT_CONNECTION_EVENT_DISCONNECTED));
  ASSERT_NO_FATAL_FAILURE(expect_conn(cli_, DAT_CONNECTION_EVENT_DISCONNECTED));
  ASSERT_NO_FATAL_FAILURE(expect_flushed(srv_.recv_evd, srv_.ep, kRecvCookie, 1));
  ASSERT_NO_FATAL_FAILURE(expect_flushed(cli_.recv_evd, cli_.ep, kRecvCookie, 3));
}

TEST_F(api_cm, DisconnectOfPendingConnectFlushes) {
  ASSERT_NO_FATAL_FAILURE(listen());
  ASSERT_NO_FATAL_FAILURE(post_recvs(cli_, 2));
  ASSERT_EQ(connect(cli_, "192.168.77.2", kQual, kWaitUs), DAT_SUCCESS);
  DAT_CR_HANDLE cr = wait_cr();
  ASSERT_NE(cr, DAT_HANDLE_NULL);
  EXPECT_EQ(state(cli_), DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
  ASSERT_EQ(dat_ep_disconnect(cli_.ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_conn(cli_, DAT_CONNECTION_EVENT_DISCONNECTED));
  ASSERT_NO_FATAL_FAILURE(expect_flushed(cli_.recv_evd, cli_.ep, kRecvCookie, 2));
  ASSERT_EQ(dat_cr_reject(cr), DAT_SUCCESS);
}

// Graceful: requests posted before dat_ep_disconnect complete successfully
// (DISCONNECT_PENDING meanwhile, no new DTOs accepted), then the connection
// closes; only then are the receives still posted flushed.
TEST_F(api_cm, GracefulDisconnectCompletesOutstandingRequestsFirst) {
  ASSERT_NO_FATAL_FAILURE(establish());
  constexpr size_t kWrite = 768 * 1024;
  for (size_t i = 0; i < kWrite; ++i) cli_.buf[i] = static_cast<uint8_t>(i * 13 + 1);
  std::fill(srv_.buf.begin(), srv_.buf.end(), 0);
  // Two receives on the server: the first takes the SEND, the second is flushed.
  DAT_LMR_TRIPLET r0 = srv_.iov(kWrite, 4096), r1 = srv_.iov(kWrite + 4096, 4096);
  ASSERT_EQ(dat_ep_post_recv(srv_.ep, 1, &r0, cookie(kRecvCookie), DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  ASSERT_EQ(dat_ep_post_recv(srv_.ep, 1, &r1, cookie(kRecvCookie + 1), DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  DAT_RMR_TRIPLET rt{};
  rt.rmr_context = srv_.rctx;
  rt.target_address = reinterpret_cast<DAT_VADDR>(srv_.buf.data());
  rt.segment_length = kWrite;
  DAT_LMR_TRIPLET w = cli_.iov(0, kWrite), snd = cli_.iov(0, 4096);
  ASSERT_EQ(dat_ep_post_rdma_write(cli_.ep, 1, &w, cookie(1), &rt, DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  ASSERT_EQ(dat_ep_post_send(cli_.ep, 1, &snd, cookie(2), DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  ASSERT_EQ(dat_ep_disconnect(cli_.ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
  // 768 KiB cannot have left in the one progress step the call made.
  EXPECT_EQ(state(cli_), DAT_EP_STATE_DISCONNECT_PENDING);
  EXPECT_EQ(
      DAT_GET_TYPE(dat_ep_post_send(cli_.ep, 1, &snd, cookie(3), DAT_COMPLETION_DEFAULT_FLAG)),
      DAT_INVALID_STATE);
  EXPECT_EQ(dat_ep_disconnect(cli_.ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);  // no effect
  for (uint64_t ck : {uint64_t{1}, uint64_t{2}}) {
    DAT_EVENT ev;
    ASSERT_EQ(wait(cli_.req_evd, &ev), DAT_SUCCESS);
    ASSERT_EQ(ev.event_number, DAT_DTO_COMPLETION_EVENT);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64, ck);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS) << "cookie " << ck;
  }
  DAT_EVENT ev;
  ASSERT_EQ(wait(srv_.recv_evd, &ev), DAT_SUCCESS);
  EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64, kRecvCookie);
  EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
  EXPECT_EQ(ev.event_data.dto_completion_event_data.transfered_length, 4096u);
  ASSERT_NO_FATAL_FAILURE(expect_conn(cli_, DAT_CONNECTION_EVENT_DISCONNECTED));
  ASSERT_NO_FATAL_FAILURE(expect_conn(srv_, DAT_CONNECTION_EVENT_DISCONNECTED));
  ASSERT_NO_FATAL_FAILURE(expect_flushed(srv_.recv_evd, srv_.ep, kRecvCookie + 1, 1));
  EXPECT_EQ(std::memcmp(srv_.buf.data(), cli_.buf.data(), kWrite), 0);
  EXPECT_EQ(std::memcmp(srv_.buf.data() + kWrite, cli_.buf.data(), 4096), 0);
}

// Abrupt while a graceful disconnect drains: DISCONNECTED at once, what is
// still outstanding completes (successfully if it already had, else flushed).
TEST_F(api_cm, AbruptDuringGracefulDrainFlushesTheRest) {
  ASSERT_NO_FATAL_FAILURE(establish());
  constexpr size_t kWrite = 512 * 1024;
  DAT_RMR_TRIPLET rt{};
  rt.rmr_context = srv_.rctx;
  rt.target_address = reinterpret_cast<DAT_VADDR>(srv_.buf.data());
  rt.segment_length = kWrite;
  DAT_LMR_TRIPLET w = cli_.iov(0, kWrite);
  for (uint64_t ck : {uint64_t{1}, uint64_t{2}}) {
    ASSERT_EQ(dat_ep_post_rdma_write(cli_.ep, 1, &w, cookie(ck), &rt, DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
  }
  ASSERT_EQ(dat_ep_disconnect(cli_.ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
  EXPECT_EQ(state(cli_), DAT_EP_STATE_DISCONNECT_PENDING);
  ASSERT_EQ(dat_ep_disconnect(cli_.ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  EXPECT_EQ(state(cli_), DAT_EP_STATE_DISCONNECTED);
  ASSERT_NO_FATAL_FAILURE(expect_conn(cli_, DAT_CONNECTION_EVENT_DISCONNECTED));
  bool flushed = false;
  for (uint64_t ck : {uint64_t{1}, uint64_t{2}}) {
    DAT_EVENT ev;
    ASSERT_EQ(wait(cli_.req_evd, &ev), DAT_SUCCESS);
    const auto& d = ev.event_data.dto_completion_event_data;
    EXPECT_EQ(d.user_cookie.as_64, ck);
    EXPECT_TRUE(d.status == DAT_DTO_SUCCESS || d.status == DAT_DTO_ERR_FLUSHED) << d.status;
    if (flushed) {
      EXPECT_EQ(d.status, DAT_DTO_ERR_FLUSHED) << "a success after a flush";
    }
    flushed = flushed || d.status == DAT_DTO_ERR_FLUSHED;
  }
  EXPECT_TRUE(flushed) << "1 MiB cannot have completed within one progress step";
  ASSERT_NO_FATAL_FAILURE(expect_conn(srv_, DAT_CONNECTION_EVENT_DISCONNECTED));
}

// A provider-created EP (DAT_PSP_PROVIDER_FLAG) belongs to its connection
// request until the consumer accepts or rejects it: dat_ep_free is refused
// in TENTATIVE_CONNECTION_PENDING (it once freed the EP under the CR, which
// then touched and freed it again when rejected), and the request is still
// the consumer's to answer.
TEST_F(api_cm, FreeOfProviderEpWithUnansweredRequestIsInvalidState) {
  ASSERT_EQ(dat_psp_create(srv_.ia, kQual, srv_.cr_evd, DAT_PSP_PROVIDER_FLAG, &psp_), DAT_SUCCESS);
  ASSERT_EQ(connect(cli_, "192.168.77.2", kQual, kWaitUs), DAT_SUCCESS);
  DAT_CR_HANDLE cr = wait_cr();
  ASSERT_NE(cr, DAT_HANDLE_NULL);
  DAT_CR_PARAM crp{};
  ASSERT_EQ(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp), DAT_SUCCESS);
  DAT_EP_HANDLE ep = crp.local_ep_handle;
  ASSERT_NE(ep, DAT_HANDLE_NULL);
  DAT_EP_STATE st = DAT_EP_STATE_UNCONNECTED;
  ASSERT_EQ(dat_ep_get_status(ep, &st, nullptr, nullptr), DAT_SUCCESS);
  ASSERT_EQ(st, DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING);
  const DAT_RETURN r = dat_ep_free(ep);
  EXPECT_EQ(DAT_GET_TYPE(r), DAT_INVALID_STATE);
  EXPECT_EQ(DAT_GET_SUBTYPE(r), DAT_INVALID_STATE_EP_TENTCONNPENDING);
  ASSERT_EQ(dat_cr_reject(cr), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_conn(cli_, DAT_CONNECTION_EVENT_PEER_REJECTED));
  // The rejected request took its EP with it.
  EXPECT_EQ(DAT_GET_TYPE(dat_ep_get_status(ep, &st, nullptr, nullptr)), DAT_INVALID_HANDLE);
}

}  // namespace

// dat_psp_free(3DAT) ends listening; connection requests that already arrived
// stay with the consumer (their CR handles must still be accepted or
// rejected), so a CONNECTION_REQUEST event still queued on the CR EVD must
// remain dequeueable after the PSP is gone.  Two requests arrive; the wait
// with threshold 2 takes the first and leaves the second queued.
TEST_F(api_cm, ConnRequestEventQueuedWhenPspIsFreed) {
  ASSERT_NO_FATAL_FAILURE(listen());
  DAT_EP_HANDLE ep2 = DAT_HANDLE_NULL;
  ASSERT_EQ(
      dat_ep_create(cli_.ia, cli_.pz, cli_.recv_evd, cli_.req_evd, cli_.conn_evd, nullptr, &ep2),
      DAT_SUCCESS);
  ASSERT_EQ(connect(cli_, "192.168.77.2", kQual, kWaitUs), DAT_SUCCESS);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  inet_pton(AF_INET, "192.168.77.2", &sa.sin_addr);
  ASSERT_EQ(dat_ep_connect(ep2, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&sa), kQual, kWaitUs, 0,
                           nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
            DAT_SUCCESS);
  DAT_EVENT ev;
  DAT_COUNT nmore = 0;
  ASSERT_EQ(dat_evd_wait(srv_.cr_evd, kWaitUs, 2, &ev, &nmore), DAT_SUCCESS);
  ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
  ASSERT_EQ(nmore, 1);
  ASSERT_EQ(dat_cr_reject(ev.event_data.cr_arrival_event_data.cr_handle), DAT_SUCCESS);
  const DAT_PSP_HANDLE old_psp = psp_;
  ASSERT_EQ(dat_psp_free(psp_), DAT_SUCCESS);
  psp_ = DAT_HANDLE_NULL;
  // Make the freed PSP's memory someone else's.
  std::vector<std::vector<uint8_t>> churn;
  for (int i = 0; i < 64; ++i) churn.emplace_back(256, 0xA5);
  std::memset(&ev, 0, sizeof(ev));
  ASSERT_EQ(dat_evd_dequeue(srv_.cr_evd, &ev), DAT_SUCCESS);
  ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
  const auto& d = ev.event_data.cr_arrival_event_data;
  EXPECT_EQ(d.sp_handle.psp_handle, old_psp);
  EXPECT_EQ(d.conn_qual, kQual);
  ASSERT_NE(d.local_ia_address_ptr, nullptr);
  EXPECT_EQ(d.local_ia_address_ptr->sa_family, AF_INET);
  ASSERT_NE(d.cr_handle, DAT_HANDLE_NULL);
  EXPECT_EQ(dat_cr_reject(d.cr_handle), DAT_SUCCESS);
  EXPECT_EQ(dat_ep_free(ep2), DAT_SUCCESS);
}

// A graceful disconnect waits for outstanding requests, but not without
// bound: a SEND to a peer that never posts a receive is retried after every
// RNR NAK for as long as it takes, so the drain must give up at some point,
// send the DREQ and flush what is left.  The peer here stays CONNECTED and
// idle (it waits for the disconnect), as a consumer ending a connection would.
TEST_F(api_cm, GracefulDisconnectEndsWhenPeerNeverPostsReceive) {
  ASSERT_NO_FATAL_FAILURE(establish());
  DAT_LMR_TRIPLET snd = cli_.iov(0, 64);
  ASSERT_EQ(dat_ep_post_send(cli_.ep, 1, &snd, cookie(7), DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  ASSERT_EQ(dat_ep_disconnect(cli_.ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_conn(cli_, DAT_CONNECTION_EVENT_DISCONNECTED, 10'000'000));
  ASSERT_NO_FATAL_FAILURE(expect_conn(srv_, DAT_CONNECTION_EVENT_DISCONNECTED));
  DAT_EVENT ev;
  ASSERT_EQ(wait(cli_.req_evd, &ev), DAT_SUCCESS) << "the SEND never completed";
  EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64, 7u);
  EXPECT_NE(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
  EXPECT_EQ(state(cli_), DAT_EP_STATE_DISCONNECTED);
}

// dat_ia_open(3DAT) may be given an existing async EVD; while an IA reports
// its asynchronous events there the EVD is in use, and dat_evd_free must
// refuse it (DAT_INVALID_STATE), or the IA's next async event (here the SRQ
// low watermark, reported at once when set above what is posted) is
// delivered into freed memory.
TEST_F(api_cm, AsyncEvdGivenToAnotherIaIsInUse) {
  DAT_EVD_HANDLE shared = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_evd_create(cli_.ia, 8, DAT_HANDLE_NULL, DAT_EVD_ASYNC_FLAG, &shared), DAT_SUCCESS);
  DAT_IA_HANDLE ia2 = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE given = shared;
  ASSERT_EQ(dat_ia_open(const_cast<char*>("dpdat0"), 8, &given, &ia2), DAT_SUCCESS);
  EXPECT_EQ(given, shared);
  const DAT_RETURN fr = dat_evd_free(shared);
  EXPECT_EQ(DAT_GET_TYPE(fr), DAT_INVALID_STATE) << "freed an EVD another IA reports to";
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_pz_create(ia2, &pz), DAT_SUCCESS);
  DAT_SRQ_ATTR sa{};
  sa.max_recv_dtos = 4;
  sa.max_recv_iov = 1;
  sa.low_watermark = 0;
  DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_srq_create(ia2, pz, &sa, &srq), DAT_SUCCESS);
  ASSERT_EQ(dat_srq_set_lw(srq, 2), DAT_SUCCESS);  // nothing posted: reported at once
  if (fr == DAT_SUCCESS) {
    ADD_FAILURE() << "the low-watermark event went to a freed EVD";
  } else {
    DAT_EVENT ev;
    ASSERT_EQ(wait(shared, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_data.asynch_error_event_data.dat_handle, srq);
  }
  EXPECT_EQ(dat_ia_close(ia2, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  if (fr != DAT_SUCCESS) {
    EXPECT_EQ(dat_evd_free(shared), DAT_SUCCESS);  // no IA uses it any more
  }
}

// dat_ep_disconnect(3DAT): "Disconnecting an Endpoint in ...
// DAT_EP_STATE_PASSIVE_CONNECTION_PENDING ... is disallowed" (and dat_ep_free
// refuses that state too: the consumer first accepts or rejects the CR).  An
// RSP's EP is in that state from the request's arrival until the consumer
// answers; it has no connection of its own yet, only what an earlier
// connection left in it, so a DREQ from it would go to that old peer.  Here
// the EP first carries a connection (PSP), is reset, then is reserved by an
// RSP; both disconnect flags and dat_ep_free must be refused without any
// connection event, and the request must still be acceptable afterwards.
TEST_F(api_cm, DisconnectOfRspEpWithUnansweredRequestIsInvalidState) {
  ASSERT_NO_FATAL_FAILURE(establish());
  ASSERT_EQ(dat_ep_disconnect(cli_.ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_conn(cli_, DAT_CONNECTION_EVENT_DISCONNECTED));
  ASSERT_NO_FATAL_FAILURE(expect_conn(srv_, DAT_CONNECTION_EVENT_DISCONNECTED));
  ASSERT_EQ(dat_ep_reset(cli_.ep), DAT_SUCCESS);
  ASSERT_EQ(dat_ep_reset(srv_.ep), DAT_SUCCESS);
  ASSERT_EQ(dat_psp_free(psp_), DAT_SUCCESS);
  psp_ = DAT_HANDLE_NULL;

  DAT_RSP_HANDLE rsp = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_rsp_create(srv_.ia, kQual + 2, srv_.ep, srv_.cr_evd, &rsp), DAT_SUCCESS);
  EXPECT_EQ(state(srv_), DAT_EP_STATE_RESERVED);
  ASSERT_EQ(connect(cli_, "192.168.77.2", kQual + 2, kWaitUs), DAT_SUCCESS);
  DAT_CR_HANDLE cr = wait_cr();
  ASSERT_NE(cr, DAT_HANDLE_NULL);
  ASSERT_EQ(state(srv_), DAT_EP_STATE_PASSIVE_CONNECTION_PENDING);

  EXPECT_EQ(DAT_GET_TYPE(dat_ep_disconnect(srv_.ep, DAT_CLOSE_GRACEFUL_FLAG)), DAT_INVALID_STATE);
  EXPECT_EQ(state(srv_), DAT_EP_STATE_PASSIVE_CONNECTION_PENDING);
  EXPECT_EQ(DAT_GET_TYPE(dat_ep_disconnect(srv_.ep, DAT_CLOSE_ABRUPT_FLAG)), DAT_INVALID_STATE);
  EXPECT_EQ(state(srv_), DAT_EP_STATE_PASSIVE_CONNECTION_PENDING);
  EXPECT_EQ(DAT_GET_TYPE(dat_ep_free(srv_.ep)), DAT_INVALID_STATE);
  // Longer than a DREQ's retries (50 + 100 + 200 + 400 ms) would take.
  DAT_EVENT ev;
  EXPECT_EQ(DAT_GET_TYPE(wait(srv_.conn_evd, &ev, 1'000'000)), DAT_TIMEOUT_EXPIRED)
      << std::hex << "connection event 0x" << ev.event_number << " for an EP never connected";
  EXPECT_EQ(state(srv_), DAT_EP_STATE_PASSIVE_CONNECTION_PENDING);

  // The request is still the consumer's to answer.
  ASSERT_EQ(dat_cr_accept(cr, srv_.ep, 0, nullptr), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_conn(cli_, DAT_CONNECTION_EVENT_ESTABLISHED));
  ASSERT_NO_FATAL_FAILURE(expect_conn(srv_, DAT_CONNECTION_EVENT_ESTABLISHED));
  DAT_LMR_TRIPLET r = srv_.iov(0, 64), s = cli_.iov(0, 64);
  ASSERT_EQ(dat_ep_post_recv(srv_.ep, 1, &r, cookie(1), DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  ASSERT_EQ(dat_ep_post_send(cli_.ep, 1, &s, cookie(2), DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  ASSERT_EQ(wait(srv_.recv_evd, &ev), DAT_SUCCESS);
  EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
  EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64, 1u);
  ASSERT_EQ(dat_ep_disconnect(srv_.ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_conn(srv_, DAT_CONNECTION_EVENT_DISCONNECTED));
  ASSERT_NO_FATAL_FAILURE(expect_conn(cli_, DAT_CONNECTION_EVENT_DISCONNECTED));
}
