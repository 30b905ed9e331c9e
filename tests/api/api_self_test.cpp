// A process talks to itself on ONE interface: an EP connects to a PSP on the
// same IA's own address, moves a multi-packet SEND each way, an RDMA WRITE and
// an RDMA READ (every byte checked), then disconnects.  The IA is a net_memif
// server whose peer never appears (its link stays down, nothing comes back
// from the wire), so only the port's software loopback can carry the frames:
// without it the connect times out (FI_EHOSTUNREACH in the libfabric
// provider).  Through libdat's public API only.

#include <arpa/inet.h>
#include <dat/udat.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "conn_side.hpp"

namespace {

constexpr DAT_TIMEOUT kWaitUs = 5'000'000;
constexpr DAT_CONN_QUAL kQual = 4713;
constexpr size_t kLen = 100'000;  // ~100 packets at the 1024-byte PMTU
constexpr const char* kIp = "10.79.0.1";

using Side = dpdat_test::ConnSide;

DAT_EVENT wait(DAT_EVD_HANDLE e) {
  DAT_EVENT ev;
  DAT_COUNT nmore = 0;
  std::memset(&ev, 0, sizeof(ev));
  EXPECT_EQ(dat_evd_wait(e, kWaitUs, 1, &ev, &nmore), DAT_SUCCESS);
  return ev;
}

void expect_dto(DAT_EVD_HANDLE e, uint64_t ck, DAT_VLEN len) {
  DAT_EVENT ev = wait(e);
  ASSERT_EQ(ev.event_number, DAT_DTO_COMPLETION_EVENT);
  const auto& d = ev.event_data.dto_completion_event_data;
  EXPECT_EQ(d.user_cookie.as_64, ck);
  ASSERT_EQ(d.status, DAT_DTO_SUCCESS) << "cookie " << ck;
  EXPECT_EQ(d.transfered_length, len);
}

void fill(uint8_t* p, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; ++i)
    p[i] = static_cast<uint8_t>((i * 131 + seed * 7 + (i >> 9)) & 0xFF);
}

// Everything of a Side but the IA, on an IA another Side opened.
void open_on(Side* s, DAT_IA_HANDLE ia) {
  s->ia = ia;
  ASSERT_EQ(dat_pz_create(s->ia, &s->pz), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_create(s->ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s->dto), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &s->conn),
            DAT_SUCCESS);
  ASSERT_EQ(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &s->cr), DAT_SUCCESS);
  ASSERT_EQ(dat_ep_create(s->ia, s->pz, s->dto, s->dto, s->conn, nullptr, &s->ep), DAT_SUCCESS);
  ASSERT_EQ(dpdat_test::reg(s->ia, s->pz, s->buf_len, DAT_MEM_PRIV_ALL_FLAG, s), DAT_SUCCESS);
}

class api_self : public ::testing::Test {
 protected:
  void SetUp() override {
    sock_ = "/tmp/dpdat_api_self_" + std::to_string(getpid()) + ".sock";
    const std::string cfg =
        "vdev=net_memif0,role=server,socket=" + sock_ + ",socket-abstract=no;ip=" + kIp;
    ASSERT_EQ(setenv("DPDAT_IA_SELF", cfg.c_str(), 1), 0);
    a_.ip = b_.ip = kIp;
    ASSERT_NO_FATAL_FAILURE(dpdat_test::open_conn_side(&a_, "self"));
    ASSERT_NO_FATAL_FAILURE(open_on(&b_, a_.ia));
  }
  void TearDown() override {
    dpdat_test::close_conn_side(&a_);  // b_ lives in the same IA
    unlink(sock_.c_str());
  }
  std::string sock_;
  Side a_{kLen}, b_{kLen};
};

TEST_F(api_self, connect_to_own_address_send_write_read_disconnect) {
  // b listens; its receives are posted before the connection exists.
  DAT_LMR_TRIPLET b_rx = b_.iov(0, kLen / 2);
  ASSERT_EQ(
      dat_ep_post_recv(b_.ep, 1, &b_rx, dpdat_test::cookie_of(21), DAT_COMPLETION_DEFAULT_FLAG),
      DAT_SUCCESS);
  DAT_LMR_TRIPLET a_rx = a_.iov(kLen / 2, kLen / 2);
  ASSERT_EQ(
      dat_ep_post_recv(a_.ep, 1, &a_rx, dpdat_test::cookie_of(11), DAT_COMPLETION_DEFAULT_FLAG),
      DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(dpdat_test::connect_and_accept(&a_, &b_, kIp, kQual, kWaitUs));
  DAT_EVENT ev = wait(a_.conn);
  ASSERT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
  ev = wait(b_.conn);
  ASSERT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);

  // SEND a -> b and b -> a.
  fill(a_.buf.data(), kLen / 2, 1);
  DAT_LMR_TRIPLET a_tx = a_.iov(0, kLen / 2);
  ASSERT_EQ(
      dat_ep_post_send(a_.ep, 1, &a_tx, dpdat_test::cookie_of(12), DAT_COMPLETION_DEFAULT_FLAG),
      DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_dto(a_.dto, 12, kLen / 2));
  ASSERT_NO_FATAL_FAILURE(expect_dto(b_.dto, 21, kLen / 2));
  EXPECT_EQ(std::memcmp(a_.buf.data(), b_.buf.data(), kLen / 2), 0);

  fill(b_.buf.data() + kLen / 2, kLen / 2, 2);
  DAT_LMR_TRIPLET b_tx = b_.iov(kLen / 2, kLen / 2);
  ASSERT_EQ(
      dat_ep_post_send(b_.ep, 1, &b_tx, dpdat_test::cookie_of(22), DAT_COMPLETION_DEFAULT_FLAG),
      DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_dto(b_.dto, 22, kLen / 2));
  ASSERT_NO_FATAL_FAILURE(expect_dto(a_.dto, 11, kLen / 2));
  EXPECT_EQ(std::memcmp(a_.buf.data() + kLen / 2, b_.buf.data() + kLen / 2, kLen / 2), 0);

  // RDMA WRITE a -> b (the whole buffer), then READ it back into a's second half.
  fill(a_.buf.data(), kLen, 3);
  DAT_LMR_TRIPLET w = a_.iov(0, kLen);
  DAT_RMR_TRIPLET rw{};
  rw.rmr_context = b_.rctx;
  rw.target_address = reinterpret_cast<DAT_VADDR>(b_.buf.data());
  rw.segment_length = kLen;
  ASSERT_EQ(dat_ep_post_rdma_write(a_.ep, 1, &w, dpdat_test::cookie_of(13), &rw,
                                   DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_dto(a_.dto, 13, kLen));
  EXPECT_EQ(std::memcmp(a_.buf.data(), b_.buf.data(), kLen), 0);

  fill(b_.buf.data(), kLen / 2, 4);
  DAT_LMR_TRIPLET r = a_.iov(kLen / 2, kLen / 2);
  DAT_RMR_TRIPLET rr{};
  rr.rmr_context = b_.rctx;
  rr.target_address = reinterpret_cast<DAT_VADDR>(b_.buf.data());
  rr.segment_length = kLen / 2;
  ASSERT_EQ(dat_ep_post_rdma_read(a_.ep, 1, &r, dpdat_test::cookie_of(14), &rr,
                                  DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_dto(a_.dto, 14, kLen / 2));
  EXPECT_EQ(std::memcmp(a_.buf.data() + kLen / 2, b_.buf.data(), kLen / 2), 0);

  // Graceful disconnect from a: both sides see DISCONNECTED.
  ASSERT_EQ(dat_ep_disconnect(a_.ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
  ev = wait(a_.conn);
  EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
  ev = wait(b_.conn);
  EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
}

}  // namespace
