// Data transfer of dat_core over the simulated link: SEND / RECV, RDMA
// WRITE, RDMA READ, on a clean wire and with loss, reordering and
// duplication (the RC retransmission brings every byte across), and the
// flush of posted receives on disconnect.

#include <chrono>

#include "proto_fixture.hpp"

namespace dpdat::proto {
namespace {

// Posts one request and waits for its successful completion on `side`.
void run_request(Side& side, const PostArgs& a) {
  ASSERT_TRUE(ep_post(side.ep, a).ok());
  const Event ev = next_event(side.req);
  ASSERT_EQ(ev.num, EventNum::kDto);
  EXPECT_EQ(ev.status, DtoStatus::kSuccess);
  EXPECT_EQ(ev.cookie, a.cookie);
}

class ProtoDtoTest : public ProtoTest {
 protected:
  void transfer_all(size_t len) {
    Mem src, dst, back;
    a_.reg(src, len);
    b_.reg(dst, len);
    a_.reg(back, len);
    fill(src.buf, 1);

    // SEND into a posted receive.
    const rc::Sge rsge = dst.sge();
    ASSERT_TRUE(ep_post_recv(b_.ep, &rsge, 1, 77, cflag::kEvdThreshold).ok());
    const rc::Sge ssge = src.sge();
    PostArgs send;
    send.op = rc::WrOp::kSend;
    send.sge = &ssge;
    send.nsge = 1;
    send.cookie = 1;
    run_request(a_, send);
    const Event rv = next_event(b_.recv);
    ASSERT_EQ(rv.num, EventNum::kDto);
    EXPECT_EQ(rv.status, DtoStatus::kSuccess);
    EXPECT_EQ(rv.cookie, 77u);
    EXPECT_EQ(rv.length, len);
    EXPECT_EQ(dst.buf, src.buf);

    // RDMA WRITE: b calls nothing (its interface is progressed by a's wait).
    fill(src.buf, 2);
    const RemoteSeg rdst = dst.remote();
    PostArgs write = send;
    write.op = rc::WrOp::kWrite;
    write.remote = &rdst;
    write.cookie = 2;
    run_request(a_, write);
    EXPECT_EQ(dst.buf, src.buf);

    // RDMA READ back from b into a third buffer.
    const rc::Sge bsge = back.sge();
    PostArgs read;
    read.op = rc::WrOp::kRead;
    read.sge = &bsge;
    read.nsge = 1;
    read.remote = &rdst;
    read.cookie = 3;
    run_request(a_, read);
    EXPECT_EQ(back.buf, src.buf);
  }
};

TEST_F(ProtoDtoTest, SendWriteReadCleanWire) {
  open_both();
  connect();
  transfer_all(64 * 1024);
  disconnect();
}

// One interface talks to itself: b_ is a second set of objects on a_'s IA,
// and a_ connects to b_'s PSP at the interface's own address; the link's
// software loopback carries every frame (none goes on the wire).
TEST_F(ProtoDtoTest, SendWriteReadToOwnAddress) {
  a_.open(config("proto_a_inline", "ring=0;ip=10.9.0.1;progress=inline"));
  ASSERT_NE(a_.ia, nullptr);
  b_.open_on(a_.ia);
  uint64_t offered = 0, looped = 0;
  wire_->with_link([&](rc::SimLink& l) {
    offered = l.stats(0).offered;
    looped = l.stats(0).looped;
  });
  connect(kIpA);
  transfer_all(64 * 1024);
  disconnect();
  wire_->with_link([&](rc::SimLink& l) {
    EXPECT_EQ(l.stats(0).offered, offered);  // nothing on the wire
    EXPECT_GT(l.stats(0).looped, looped + 64);
  });
}

TEST_F(ProtoDtoTest, SendWriteReadLossyWire) {
  open_both();
  connect();
  rc::LinkImpairment imp;
  imp.loss = 0.05;
  imp.reorder = 0.05;
  imp.duplicate = 0.02;
  wire_->with_link([&](rc::SimLink& l) {
    l.set_impairment(0, imp);
    l.set_impairment(1, imp);
  });
  transfer_all(256 * 1024);
  uint64_t dropped = 0;
  wire_->with_link([&](rc::SimLink& l) { dropped = l.stats(0).dropped + l.stats(1).dropped; });
  EXPECT_GT(dropped, 0u);  // the impairment did bite
  wire_->reset();
  disconnect();
}

// b with a background progress thread, a driven by the test thread: the
// two threads share the wire (its lock serialises them) and every byte
// still arrives where it should.
// gbn=1: the interface's queue pairs recover by go-back-N only (for peers
// that need strict IBA behaviour); a lossy, reordering wire still brings
// every byte across.
TEST_F(ProtoDtoTest, GoBackNFromConfigOnALossyWire) {
  IfaceConfig bad;
  std::string err;
  EXPECT_FALSE(parse_iface_config("ring=0;ip=10.9.0.1;gbn=2", &bad, &err));
  const IfaceConfig ca = config("proto_a_gbn", "ring=0;ip=10.9.0.1;progress=inline;gbn=1");
  const IfaceConfig cb = config("proto_b_gbn", "ring=1;ip=10.9.0.2;progress=inline;gbn=1");
  ASSERT_TRUE(ca.gbn && cb.gbn);
  Ia* ia = nullptr;
  for (const IfaceConfig* c : {&ca, &cb}) {
    const Status st = ia_open(*c, 16, nullptr, nullptr, &ia);
    if (!st.ok() && st.sub == Sub::RESOURCE_DEVICE) GTEST_SKIP() << "ring=0/1 held by this process";
    ASSERT_TRUE(st.ok());
    EXPECT_TRUE(ia_close(ia, false).ok());
  }
  a_.open(ca);
  b_.open(cb);
  connect();
  ASSERT_NE(a_.ep->qp, nullptr);
  EXPECT_FALSE(a_.ep->qp->config().selective_repeat);
  EXPECT_FALSE(b_.ep->qp->config().selective_repeat);
  rc::LinkImpairment imp;
  imp.loss = 0.03;
  imp.reorder = 0.02;
  wire_->with_link([&](rc::SimLink& l) {
    l.set_impairment(0, imp);
    l.set_impairment(1, imp);
  });
  transfer_all(128 * 1024);
  wire_->reset();
  disconnect();
}

TEST_F(ProtoDtoTest, SendWriteReadWithProgressThread) {
  if (ends_taken("inline", "thread")) GTEST_SKIP() << "ring=0/1 held by other interfaces";
  connect();
  transfer_all(64 * 1024);
  disconnect();
}

// A remote access outside the registered range fails on the requester with
// a remote access error, and the connection breaks.
TEST_F(ProtoDtoTest, WriteOutOfBoundsIsRemoteAccessError) {
  open_both();
  connect();
  Mem src, dst;
  a_.reg(src, 4096);
  b_.reg(dst, 4096);
  const rc::Sge ssge = src.sge();
  RemoteSeg past = dst.remote();
  past.va += 1024;  // 4096 bytes from 1 KiB in: 1 KiB past the end
  PostArgs write;
  write.op = rc::WrOp::kWrite;
  write.sge = &ssge;
  write.nsge = 1;
  write.remote = &past;
  write.cookie = 9;
  ASSERT_TRUE(ep_post(a_.ep, write).ok());
  const Event ev = next_event(a_.req);
  ASSERT_EQ(ev.num, EventNum::kDto);
  EXPECT_EQ(ev.status, DtoStatus::kRemoteAccess);
  EXPECT_EQ(next_event(a_.conn).num, EventNum::kBroken);
}

// Receives still posted when the connection goes complete as FLUSHED.
TEST_F(ProtoDtoTest, DisconnectFlushesPostedReceives) {
  open_both();
  connect();
  Mem dst;
  b_.reg(dst, 1024);
  const rc::Sge rsge = dst.sge();
  ASSERT_TRUE(ep_post_recv(b_.ep, &rsge, 1, 5, cflag::kEvdThreshold).ok());
  disconnect();
  const Event ev = next_event(b_.recv);
  ASSERT_EQ(ev.num, EventNum::kDto);
  EXPECT_EQ(ev.status, DtoStatus::kFlushed);
  EXPECT_EQ(ev.cookie, 5u);
}

// retry_time_ms= sets how long a queue pair keeps retrying an unanswered
// request before it breaks: with 300 ms, a WRITE into a wire that carries
// nothing completes with a transport error after 300 ms and well before the
// default second; values out of range are refused.
TEST_F(ProtoDtoTest, RetryTimeFromConfigBoundsADeadPeer) {
  IfaceConfig bad;
  std::string err;
  for (const char* v : {"retry_time_ms=0", "retry_time_ms=3600001", "retry_time_ms=x"})
    EXPECT_FALSE(parse_iface_config(std::string("ring=0;ip=10.9.0.1;") + v, &bad, &err)) << v;
  EXPECT_EQ(config("x", "ring=0;ip=10.9.0.1").retry_time_ms, 1000u);
  const IfaceConfig ca =
      config("proto_a_retry", "ring=0;ip=10.9.0.1;progress=inline;retry_time_ms=300");
  ASSERT_EQ(ca.retry_time_ms, 300u);
  const IfaceConfig cb = config("proto_b_retry", "ring=1;ip=10.9.0.2;progress=inline");
  Ia* ia = nullptr;
  for (const IfaceConfig* c : {&ca, &cb}) {
    const Status st = ia_open(*c, 16, nullptr, nullptr, &ia);
    if (!st.ok() && st.sub == Sub::RESOURCE_DEVICE) GTEST_SKIP() << "ring=0/1 held by this process";
    ASSERT_TRUE(st.ok());
    EXPECT_TRUE(ia_close(ia, false).ok());
  }
  a_.open(ca);
  b_.open(cb);
  connect();
  ASSERT_NE(a_.ep->qp, nullptr);
  EXPECT_EQ(a_.ep->qp->config().min_retry_time_ns, 300'000'000u);
  EXPECT_EQ(b_.ep->qp->config().min_retry_time_ns, 1'000'000'000u);
  Mem src, dst;
  a_.reg(src, 4096);
  b_.reg(dst, 4096);
  wire_->with_link(
      [](rc::SimLink& l) { l.set_filter([](int, const uint8_t*, uint32_t) { return false; }); });
  const rc::Sge ssge = src.sge();
  const RemoteSeg rdst = dst.remote();
  PostArgs write;
  write.op = rc::WrOp::kWrite;
  write.sge = &ssge;
  write.nsge = 1;
  write.remote = &rdst;
  write.cookie = 9;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(ep_post(a_.ep, write).ok());
  const Event ev = next_event(a_.req);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  ASSERT_EQ(ev.num, EventNum::kDto);
  EXPECT_EQ(ev.status, DtoStatus::kTransport);
  EXPECT_GE(ms, 290);
  EXPECT_LT(ms, 900);
  wire_->reset();
}

}  // namespace
}  // namespace dpdat::proto
