// UD queue pairs on the simulated link: datagrams between two engines land
// in posted receives after the 40 GRH bytes (zeros, then the IPv4 header),
// with the sender's QPN and immediate data; a wrong Q_Key, no posted
// receive, a too-small receive and a datagram over the path MTU are handled
// as IBA says (dropped and counted, or a local length error), and UD packets
// for a number no queue pair holds count as rx_no_qp; sends that find no TX
// buffer wait in the send queue.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "harness.hpp"
#include "rc/ud/ud_qp.hpp"

namespace dpdat::rc::test {
namespace {

const wire::MacAddr kMac[2] = {{2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 2}};
const uint32_t kIp[2] = {0x0A000001, 0x0A000002};
constexpr uint32_t kQkey = 0x11112222;

struct UdSides {
  Pair p{7};
  std::unique_ptr<CompletionQueue> scq[2], rcq[2];
  UdQp* qp[2] = {};

  explicit UdSides(uint32_t pmtu = 1024, uint32_t qkey_b = kQkey, const Pair::IoWrap& io = {},
                   uint32_t sq_depth = 256)
      : p(7, QpConfig{}, 4096, io) {
    for (int i = 0; i < 2; ++i) {
      scq[i] = std::make_unique<CompletionQueue>(64);
      rcq[i] = std::make_unique<CompletionQueue>(64);
      UdConfig cfg;
      cfg.pmtu = pmtu;
      cfg.rq_depth = 16;
      cfg.sq_depth = sq_depth;
      qp[i] = p.side(i).engine->create_ud_qp(p.side(i).pz, cfg, scq[i].get(), rcq[i].get());
      EXPECT_NE(qp[i], nullptr);
      EXPECT_TRUE(qp[i]->to_init(i == 1 ? qkey_b : kQkey));
      EXPECT_TRUE(qp[i]->to_rtr());
      EXPECT_TRUE(qp[i]->to_rts(UdLocal{kMac[i], kIp[i], static_cast<uint16_t>(0xC200 + i)},
                                wire::Psn(0x100)));
    }
  }
  UdDest to(int i, uint32_t qkey = kQkey) const {
    return UdDest{kMac[i], kIp[i], qp[i]->qpn(), qkey};
  }
  SendWr send(const Buffer& b, uint64_t len, uint64_t cookie, bool imm = false) const {
    SendWr w;
    w.op = imm ? WrOp::kSendImm : WrOp::kSend;
    w.cookie = cookie;
    w.imm = 0xA1B2C3D4;
    w.num_sge = 1;
    w.sge[0] = Sge{b.lmr, b.va(), len};
    return w;
  }
  RecvWr recv(const Buffer& b, uint64_t len, uint64_t cookie) const {
    RecvWr r;
    r.cookie = cookie;
    r.num_sge = 1;
    r.sge[0] = Sge{b.lmr, b.va(), len};
    return r;
  }
  void run() {
    for (int i = 0; i < 20; ++i) p.step();
  }
};

TEST(SimUd, DatagramLandsAfterTheGrhWithSourceQpAndImmediate) {
  UdSides u;
  Buffer src = u.p.reg(0, 1000, priv::kLocalRead | priv::kLocalWrite);
  fill_pattern(src.bytes, 3);
  Buffer dst = u.p.reg(1, kGrhBytes + 1000, priv::kLocalWrite, 0xEE);
  ASSERT_EQ(u.qp[1]->post_recv(u.recv(dst, dst.bytes.size(), 77)), PostResult::kOk);
  ASSERT_EQ(u.qp[0]->post_send(u.send(src, 1000, 55, true), u.to(1)), PostResult::kOk);
  u.run();
  auto sc = drain(*u.scq[0]);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].cookie, 55u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(sc[0].op, WcOp::kSend);
  auto rc = drain(*u.rcq[1]);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].cookie, 77u);
  EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(rc[0].op, WcOp::kRecv);
  EXPECT_EQ(rc[0].byte_len, kGrhBytes + 1000);
  EXPECT_EQ(rc[0].src_qp, u.qp[0]->qpn());
  EXPECT_EQ(rc[0].qpn, u.qp[1]->qpn());
  EXPECT_TRUE(rc[0].grh);
  EXPECT_TRUE(rc[0].has_imm);
  EXPECT_EQ(rc[0].imm, 0xA1B2C3D4u);
  // GRH space: 20 zero bytes, then the IPv4 header the datagram came with.
  for (uint32_t i = 0; i < 20; ++i) EXPECT_EQ(dst.bytes[i], 0) << i;
  EXPECT_EQ(dst.bytes[20], 0x45);
  uint32_t ip_src = 0;
  std::memcpy(&ip_src, &dst.bytes[20 + 12], 4);
  EXPECT_EQ(__builtin_bswap32(ip_src), kIp[0]);
  EXPECT_EQ(dst.bytes[20 + 9], wire::kIpProtoUdp);
  EXPECT_EQ(std::memcmp(dst.data() + kGrhBytes, src.data(), 1000), 0);
  EXPECT_EQ(u.qp[0]->counters().tx_datagrams, 1u);
  EXPECT_EQ(u.qp[1]->counters().rx_datagrams, 1u);
  // The UD QPN range is the engine's, apart from its RC queue pairs'.
  EXPECT_EQ(u.p.a().engine->find_qp(u.qp[0]->qpn()), nullptr);
  EXPECT_EQ(u.p.a().engine->find_ud_qp(u.qp[0]->qpn()), u.qp[0]);
  EXPECT_EQ(u.p.a().engine->find_ud_qp(u.p.a().qp->qpn()), nullptr);
}

TEST(SimUd, WrongQkeyIsDroppedAndCountedTheHighBitSendsTheQpsOwn) {
  UdSides u(1024, 0x5555);
  Buffer src = u.p.reg(0, 64, priv::kLocalRead);
  Buffer dst = u.p.reg(1, kGrhBytes + 64, priv::kLocalWrite);
  ASSERT_EQ(u.qp[1]->post_recv(u.recv(dst, dst.bytes.size(), 1)), PostResult::kOk);
  ASSERT_EQ(u.qp[0]->post_send(u.send(src, 64, 2), u.to(1, kQkey)), PostResult::kOk);
  u.run();
  EXPECT_TRUE(drain(*u.rcq[1]).empty());
  EXPECT_EQ(u.qp[1]->counters().rx_qkey_dropped, 1u);
  EXPECT_EQ(u.qp[1]->recv_queue_used(), 1u);  // the receive stays posted
  // A Q_Key with the high-order bit set: the sender's own Q_Key goes out.
  u.qp[0]->set_qkey(0x5555);
  ASSERT_EQ(u.qp[0]->post_send(u.send(src, 64, 3), u.to(1, kQkeyUseOwn | 0x1234)), PostResult::kOk);
  u.run();
  auto rc = drain(*u.rcq[1]);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(rc[0].byte_len, kGrhBytes + 64);
  EXPECT_FALSE(rc[0].has_imm);
  EXPECT_EQ(u.qp[1]->counters().rx_qkey_dropped, 1u);
}

TEST(SimUd, NoPostedReceiveDropsTheDatagram) {
  UdSides u;
  Buffer src = u.p.reg(0, 16, priv::kLocalRead);
  for (uint64_t i = 0; i < 3; ++i)
    ASSERT_EQ(u.qp[0]->post_send(u.send(src, 16, i), u.to(1)), PostResult::kOk);
  u.run();
  EXPECT_EQ(drain(*u.scq[0]).size(), 3u);  // sent: UD knows nothing of the receiver
  EXPECT_TRUE(drain(*u.rcq[1]).empty());
  EXPECT_EQ(u.qp[1]->counters().rx_no_recv_dropped, 3u);
  // A receive posted later takes the next datagram, not the dropped ones.
  Buffer dst = u.p.reg(1, kGrhBytes + 16, priv::kLocalWrite);
  ASSERT_EQ(u.qp[1]->post_recv(u.recv(dst, dst.bytes.size(), 9)), PostResult::kOk);
  ASSERT_EQ(u.qp[0]->post_send(u.send(src, 16, 4), u.to(1)), PostResult::kOk);
  u.run();
  EXPECT_EQ(drain(*u.rcq[1]).size(), 1u);
}

TEST(SimUd, OverThePathMtuIsALocalLengthErrorAndNothingIsSent) {
  UdSides u(256);
  Buffer src = u.p.reg(0, 300, priv::kLocalRead);
  SendWr w = u.send(src, 257, 5);
  w.flags = 0;  // unsignalled: an error is reported all the same
  ASSERT_EQ(u.qp[0]->post_send(w, u.to(1)), PostResult::kOk);
  auto sc = drain(*u.scq[0]);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kLocalLengthError);
  EXPECT_EQ(u.qp[0]->counters().tx_datagrams, 0u);
  // Exactly one path MTU goes, unsignalled: no completion.
  w.sge[0].length = 256;
  ASSERT_EQ(u.qp[0]->post_send(w, u.to(1)), PostResult::kOk);
  EXPECT_TRUE(drain(*u.scq[0]).empty());
  EXPECT_EQ(u.qp[0]->counters().tx_datagrams, 1u);
}

TEST(SimUd, ReceiveWithoutRoomForGrhAndDataIsALocalLengthError) {
  UdSides u;
  Buffer src = u.p.reg(0, 100, priv::kLocalRead);
  Buffer dst = u.p.reg(1, 200, priv::kLocalWrite);
  ASSERT_EQ(u.qp[1]->post_recv(u.recv(dst, 100 + kGrhBytes - 1, 6)), PostResult::kOk);
  ASSERT_EQ(u.qp[0]->post_send(u.send(src, 100, 7), u.to(1)), PostResult::kOk);
  u.run();
  auto rc = drain(*u.rcq[1]);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, WcStatus::kLocalLengthError);
  EXPECT_EQ(u.qp[1]->counters().rx_too_long, 1u);
}

// A port whose TX buffers can be withheld (a full TX ring).
class TxGate final : public PacketIo {
 public:
  explicit TxGate(PacketIo& link) : link_(link) {}
  uint16_t rx_burst(Frame* out, uint16_t max) override { return link_.rx_burst(out, max); }
  void rx_release(Frame* f, uint16_t n) override { link_.rx_release(f, n); }
  uint16_t tx_alloc(Frame* out, uint16_t n, uint32_t size) override {
    return closed ? 0 : link_.tx_alloc(out, n, size);
  }
  uint16_t tx_burst(Frame* f, uint16_t n) override { return link_.tx_burst(f, n); }
  void tx_free(Frame* f, uint16_t n) override { link_.tx_free(f, n); }
  bool closed = false;

 private:
  PacketIo& link_;
};

// A send posted while the port has no TX buffer is taken, not refused
// (a device queues it in its send queue; UCX's ud_verbs aborts on a
// refused post): it waits with its data copied at the post, and leaves in
// order once buffers are free, each completion reported then.  Only a
// full send queue refuses a post.
TEST(SimUd, SendsWaitForTxBuffersInTheSendQueue) {
  std::unique_ptr<TxGate> gate;
  UdSides u(
      1024, kQkey,
      [&](int i, PacketIo& end) -> PacketIo& {
        if (i != 0) return end;
        gate = std::make_unique<TxGate>(end);
        return *gate;
      },
      /*sq_depth=*/3);
  Buffer src = u.p.reg(0, 64, priv::kLocalRead | priv::kLocalWrite);
  Buffer dst = u.p.reg(1, 3 * (kGrhBytes + 64), priv::kLocalWrite);
  for (uint64_t i = 0; i < 3; ++i) {
    RecvWr r = u.recv(dst, kGrhBytes + 64, 10 + i);
    r.sge[0].va += i * (kGrhBytes + 64);
    ASSERT_EQ(u.qp[1]->post_recv(r), PostResult::kOk);
  }
  gate->closed = true;
  for (uint64_t i = 0; i < 3; ++i) {
    std::memset(src.data(), static_cast<int>(0xA0 + i), 64);
    SendWr w = u.send(src, 64, i);
    if (i == 1) w.flags = 0;  // unsignalled
    ASSERT_EQ(u.qp[0]->post_send(w, u.to(1)), PostResult::kOk) << i;
  }
  std::memset(src.data(), 0xFF, 64);  // the buffer is free again: the data was taken
  EXPECT_EQ(u.qp[0]->post_send(u.send(src, 64, 3), u.to(1)), PostResult::kQueueFull);
  EXPECT_EQ(u.qp[0]->send_queue_used(), 3u);
  u.run();
  EXPECT_TRUE(drain(*u.scq[0]).empty());
  EXPECT_TRUE(drain(*u.rcq[1]).empty());
  EXPECT_FALSE(u.p.a().engine->idle());
  EXPECT_EQ(u.qp[0]->counters().tx_datagrams, 0u);

  gate->closed = false;
  u.run();
  auto sc = drain(*u.scq[0]);
  ASSERT_EQ(sc.size(), 2u);
  EXPECT_EQ(sc[0].cookie, 0u);
  EXPECT_EQ(sc[1].cookie, 2u);
  for (const auto& c : sc) {
    EXPECT_EQ(c.status, WcStatus::kSuccess);
    EXPECT_EQ(c.byte_len, 64u);
  }
  auto rc = drain(*u.rcq[1]);
  ASSERT_EQ(rc.size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(rc[i].cookie, 10 + i);
    EXPECT_EQ(rc[i].status, WcStatus::kSuccess);
    const uint8_t* d = dst.data() + i * (kGrhBytes + 64) + kGrhBytes;
    EXPECT_EQ(d[0], 0xA0 + i);
    EXPECT_EQ(d[63], 0xA0 + i);
  }
  EXPECT_EQ(u.qp[0]->counters().tx_datagrams, 3u);
  EXPECT_EQ(u.qp[0]->counters().tx_waited, 3u);
  EXPECT_EQ(u.qp[0]->send_queue_used(), 0u);
  EXPECT_TRUE(u.p.a().engine->idle());
}

// Sends waiting in the send queue of a queue pair put in ERROR complete as
// flushed, unsignalled ones too, and leave nothing for the engine to do.
TEST(SimUd, WaitingSendsOfAnErrorQpAreFlushed) {
  std::unique_ptr<TxGate> gate;
  UdSides u(1024, kQkey, [&](int i, PacketIo& end) -> PacketIo& {
    if (i != 0) return end;
    gate = std::make_unique<TxGate>(end);
    return *gate;
  });
  Buffer src = u.p.reg(0, 64, priv::kLocalRead);
  gate->closed = true;
  SendWr w = u.send(src, 64, 20);
  ASSERT_EQ(u.qp[0]->post_send(w, u.to(1)), PostResult::kOk);
  w.cookie = 21;
  w.flags = 0;
  ASSERT_EQ(u.qp[0]->post_send(w, u.to(1)), PostResult::kOk);
  EXPECT_EQ(u.qp[0]->send_queue_used(), 2u);
  u.qp[0]->set_error();
  auto sc = drain(*u.scq[0]);
  ASSERT_EQ(sc.size(), 2u);
  EXPECT_EQ(sc[0].cookie, 20u);
  EXPECT_EQ(sc[1].cookie, 21u);
  EXPECT_EQ(sc[0].status, WcStatus::kFlushed);
  EXPECT_EQ(sc[1].status, WcStatus::kFlushed);
  EXPECT_EQ(u.qp[0]->send_queue_used(), 0u);
  gate->closed = false;
  u.run();
  EXPECT_TRUE(u.p.a().engine->idle());
  EXPECT_EQ(u.qp[0]->counters().tx_datagrams, 0u);
}

TEST(SimUd, StatesUnknownQpnAndBadLkey) {
  Pair p(9);
  CompletionQueue scq(8), rcq(8);
  UdQp* q = p.a().engine->create_ud_qp(p.a().pz, UdConfig{}, &scq, &rcq);
  ASSERT_NE(q, nullptr);
  Buffer b = p.reg(0, 64, priv::kLocalRead | priv::kLocalWrite);
  RecvWr r;
  r.num_sge = 1;
  r.sge[0] = Sge{b.lmr, b.va(), 64};
  SendWr w;
  w.num_sge = 1;
  w.sge[0] = Sge{b.lmr, b.va(), 8};
  EXPECT_EQ(q->post_recv(r), PostResult::kInvalidState);  // RESET
  EXPECT_FALSE(q->to_rtr());
  ASSERT_TRUE(q->to_init(1));
  EXPECT_EQ(q->post_recv(r), PostResult::kOk);  // INIT takes receives
  EXPECT_EQ(q->post_send(w, UdDest{}), PostResult::kInvalidState);
  ASSERT_TRUE(q->to_rtr());
  EXPECT_EQ(q->post_send(w, UdDest{}), PostResult::kInvalidState);
  ASSERT_TRUE(q->to_rts(UdLocal{}, wire::Psn(0)));
  w.op = WrOp::kWrite;
  EXPECT_EQ(q->post_send(w, UdDest{}), PostResult::kInvalidWr);  // SEND only on UD
  w.op = WrOp::kSend;
  w.sge[0].lkey ^= 0x100;
  EXPECT_EQ(q->post_send(w, UdDest{}), PostResult::kOk);
  auto sc = drain(scq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kLocalProtectionError);
  q->set_error();
  auto rc = drain(rcq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, WcStatus::kFlushed);
  // A datagram for a UD number nobody holds counts as rx_no_qp.
  CompletionQueue scq_b(8), rcq_b(8);
  UdQp* qb = p.b().engine->create_ud_qp(p.b().pz, UdConfig{}, &scq_b, &rcq_b);
  ASSERT_NE(qb, nullptr);
  ASSERT_TRUE(qb->to_init(1) && qb->to_rtr() && qb->to_rts(UdLocal{kMac[1], kIp[1]}, wire::Psn(0)));
  Buffer bb = p.reg(1, 8, priv::kLocalRead);
  SendWr wb;
  wb.num_sge = 1;
  wb.sge[0] = Sge{bb.lmr, bb.va(), 8};
  const uint64_t before = p.a().engine->counters().rx_no_qp;
  ASSERT_EQ(qb->post_send(wb, UdDest{kMac[0], kIp[0], q->qpn() + 1, 1}), PostResult::kOk);
  for (int i = 0; i < 20; ++i) p.step();
  EXPECT_EQ(p.a().engine->counters().rx_no_qp, before + 1);
  const uint32_t qpn = q->qpn();
  p.a().engine->destroy_ud_qp(q);
  EXPECT_EQ(p.a().engine->find_ud_qp(qpn), nullptr);
}

}  // namespace
}  // namespace dpdat::rc::test
