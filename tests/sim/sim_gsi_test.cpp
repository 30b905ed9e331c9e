// The engine's GSI hook on the simulated link: CM messages sent with
// send_gsi() reach the peer engine's handler intact (a whole REQ/REP/RTU
// exchange, the replies sent from inside the handlers), an engine without a
// handler counts them dropped, a UD packet never reaches an RC queue pair,
// and in an EngineGroup QP1 belongs to engine 0.
#include <gtest/gtest.h>

#include <vector>

#include "harness.hpp"
#include "wire/cm.hpp"

namespace dpdat::rc::test {
namespace {

wire::CmPath path_from(int side) {
  wire::CmPath p;
  const wire::MacAddr mac[2] = {{2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 2}};
  const uint32_t ip[2] = {0x0A000001, 0x0A000002};
  p.src_mac = mac[side];
  p.dst_mac = mac[1 - side];
  p.src_ip = ip[side];
  p.dst_ip = ip[1 - side];
  p.udp_src_port = static_cast<uint16_t>(0xC100 + side);
  return p;
}

wire::CmMessage make_req() {
  wire::CmMessage m;
  m.type = wire::CmMsg::kReq;
  m.tid = 0x1122334455667788ull;
  m.local_comm_id = 0xCAFE0001;
  m.service_id = 0x0000000000004242ull;
  m.ca_guid = 0x0002C903000A0B0Cull;
  m.qpn = 0x000011;
  m.start_psn = 0xFFFF00;
  m.responder_resources = 4;
  m.initiator_depth = 4;
  m.path_mtu = 5;
  m.retry_count = 6;
  m.rnr_retry = 5;
  m.src_ip = 0x0A000001;
  m.dst_ip = 0x0A000002;
  m.pdata_len = 92;
  for (size_t i = 0; i < 92; ++i) m.pdata[i] = static_cast<uint8_t>(i ^ 0x5A);
  return m;
}

// Collects what a handler decodes.
struct Inbox {
  std::vector<wire::CmMessage> msgs;
  std::vector<uint32_t> src_ips;
  size_t bad = 0;
  void take(const wire::PacketView& v) {
    wire::CmMessage m;
    if (wire::parse_cm_packet(v, m) != wire::CmError::kOk) {
      ++bad;
      return;
    }
    msgs.push_back(m);
    src_ips.push_back(v.ip->src.value());
  }
};

TEST(SimGsi, ReqRepRtuThroughTheHandlers) {
  Pair p(11);
  Inbox at_a, at_b;
  // B answers a REQ with a REP from inside its handler; A answers with RTU.
  p.b().engine->set_gsi_handler([&](const wire::PacketView& v, uint64_t) {
    at_b.take(v);
    if (at_b.msgs.empty() || at_b.msgs.back().type != wire::CmMsg::kReq) return;
    wire::CmMessage rep;
    rep.type = wire::CmMsg::kRep;
    rep.tid = at_b.msgs.back().tid;
    rep.local_comm_id = 0xBEEF0002;
    rep.remote_comm_id = at_b.msgs.back().local_comm_id;
    rep.qpn = p.b().qp->qpn();
    rep.start_psn = 0x000123;
    rep.pdata_len = 5;
    EXPECT_TRUE(p.b().engine->send_gsi(path_from(1), rep));
  });
  p.a().engine->set_gsi_handler([&](const wire::PacketView& v, uint64_t) {
    at_a.take(v);
    if (at_a.msgs.empty() || at_a.msgs.back().type != wire::CmMsg::kRep) return;
    wire::CmMessage rtu;
    rtu.type = wire::CmMsg::kRtu;
    rtu.tid = at_a.msgs.back().tid;
    rtu.local_comm_id = at_a.msgs.back().remote_comm_id;
    rtu.remote_comm_id = at_a.msgs.back().local_comm_id;
    EXPECT_TRUE(p.a().engine->send_gsi(path_from(0), rtu));
  });

  const wire::CmMessage req = make_req();
  ASSERT_TRUE(p.a().engine->send_gsi(path_from(0), req));
  ASSERT_TRUE(p.run_until([&] { return at_b.msgs.size() == 2; }, 10'000'000));

  ASSERT_EQ(at_b.msgs[0].type, wire::CmMsg::kReq);
  EXPECT_TRUE(at_b.msgs[0] == req);  // every field, all 92 bytes of private data
  EXPECT_EQ(at_b.src_ips[0], 0x0A000001u);
  ASSERT_EQ(at_a.msgs.size(), 1u);
  EXPECT_EQ(at_a.msgs[0].type, wire::CmMsg::kRep);
  EXPECT_EQ(at_a.msgs[0].remote_comm_id, req.local_comm_id);
  EXPECT_EQ(at_a.msgs[0].qpn, p.b().qp->qpn());
  EXPECT_EQ(at_a.msgs[0].pdata_len, 5);
  EXPECT_EQ(at_b.msgs[1].type, wire::CmMsg::kRtu);
  EXPECT_EQ(at_b.msgs[1].local_comm_id, req.local_comm_id);
  EXPECT_EQ(at_b.msgs[1].remote_comm_id, 0xBEEF0002u);
  EXPECT_EQ(at_a.bad + at_b.bad, 0u);

  const EngineCounters& ca = p.a().engine->counters();
  const EngineCounters& cb = p.b().engine->counters();
  EXPECT_EQ(ca.gsi_tx, 2u);
  EXPECT_EQ(ca.gsi_rx, 1u);
  EXPECT_EQ(cb.gsi_tx, 1u);
  EXPECT_EQ(cb.gsi_rx, 2u);
  EXPECT_EQ(ca.rx_gsi_dropped + cb.rx_gsi_dropped, 0u);
  EXPECT_EQ(ca.rx_dropped_parse + cb.rx_dropped_parse, 0u);
  EXPECT_EQ(ca.rx_no_qp + cb.rx_no_qp, 0u);
  // The RC queue pairs saw none of it.
  EXPECT_EQ(p.a().qp->counters().rx_packets, 0u);
  EXPECT_EQ(p.b().qp->counters().rx_packets, 0u);
}

TEST(SimGsi, NoHandlerCountsDropped) {
  Pair p(12);
  ASSERT_TRUE(p.a().engine->send_gsi(path_from(0), make_req()));
  EXPECT_TRUE(p.settle(10'000'000));
  const EngineCounters& cb = p.b().engine->counters();
  EXPECT_EQ(cb.rx_gsi_dropped, 1u);
  EXPECT_EQ(cb.gsi_rx, 0u);
  EXPECT_EQ(cb.rx_frames, 1u);
  EXPECT_EQ(cb.rx_no_qp, 0u);
  EXPECT_EQ(p.b().qp->counters().rx_packets, 0u);
  EXPECT_EQ(p.a().engine->counters().gsi_tx, 1u);
}

TEST(SimGsi, InvalidMessageIsRefusedAndCounted) {
  Pair p(13);
  wire::CmMessage m = make_req();
  m.pdata_len = 93;  // one past the REQ's area
  EXPECT_FALSE(p.a().engine->send_gsi(path_from(0), m));
  EXPECT_EQ(p.a().engine->counters().gsi_tx_invalid, 1u);
  EXPECT_EQ(p.a().engine->counters().gsi_tx, 0u);
  EXPECT_TRUE(p.settle(10'000'000));
  EXPECT_EQ(p.a().engine->counters().tx_frames, 0u);  // nothing was queued
  EXPECT_EQ(p.b().engine->counters().rx_frames, 0u);
}

TEST(SimGsi, BackPressureIsCountedNotSpun) {
  Pair p(14);
  // Nobody polls: the TX queue fills to one burst, then send_gsi refuses.
  size_t sent = 0;
  while (p.a().engine->send_gsi(path_from(0), make_req()) && sent < 10'000) ++sent;
  EXPECT_GT(sent, 0u);
  EXPECT_LT(sent, 10'000u);
  const EngineCounters& ca = p.a().engine->counters();
  EXPECT_EQ(ca.gsi_tx, sent);
  EXPECT_EQ(ca.gsi_tx_backpressure, 1u);
  size_t got = 0;
  p.b().engine->set_gsi_handler([&](const wire::PacketView&, uint64_t) { ++got; });
  ASSERT_TRUE(p.run_until([&] { return got == sent; }, 10'000'000));
  // Once flushed, sending works again.
  EXPECT_TRUE(p.a().engine->send_gsi(path_from(0), make_req()));
}

TEST(SimGsi, UdPacketNeverReachesAnRcQueuePair) {
  Pair p(15);
  size_t handled = 0;
  p.b().engine->set_gsi_handler([&](const wire::PacketView&, uint64_t) { ++handled; });
  // A UD SEND Only addressed to B's RC queue pair, with a valid ICRC.
  std::array<uint8_t, wire::kMadSize> mad;
  ASSERT_TRUE(wire::write_cm_mad(make_req(), mad));
  wire::BuildSpec s;
  s.src_mac = {2, 0, 0, 0, 0, 1};
  s.dst_mac = {2, 0, 0, 0, 0, 2};
  s.src_ip = 0x0A000001;
  s.dst_ip = 0x0A000002;
  s.opcode = wire::Opcode::kUdSendOnly;
  s.dest_qp = p.b().qp->qpn();
  s.qkey = wire::kGsiQkey;
  s.src_qp = wire::kGsiQpn;
  s.payload = mad;
  std::vector<uint8_t> f(wire::kCmFrameSize);
  ASSERT_TRUE(wire::build_packet(f, s, 256).ok());
  p.link().inject(1, f.data(), static_cast<uint32_t>(f.size()));
  EXPECT_TRUE(p.settle(10'000'000));
  EXPECT_EQ(p.b().engine->counters().rx_no_qp, 1u);
  EXPECT_EQ(p.b().engine->counters().gsi_rx, 0u);
  EXPECT_EQ(handled, 0u);
  EXPECT_EQ(p.b().qp->counters().rx_packets, 0u);
}

// A PacketIo with no RX of its own that transmits and releases through
// another one: a second queue of the same port, whose RX queue RSS never
// picks (so every frame arrives at the other engine).
class TxOnlyIo final : public PacketIo {
 public:
  explicit TxOnlyIo(PacketIo& real) : real_(real) {}
  uint16_t rx_burst(Frame*, uint16_t) override { return 0; }
  void rx_release(Frame* f, uint16_t n) override { real_.rx_release(f, n); }
  uint16_t tx_alloc(Frame* out, uint16_t n, uint32_t size) override {
    return real_.tx_alloc(out, n, size);
  }
  uint16_t tx_burst(Frame* f, uint16_t n) override { return real_.tx_burst(f, n); }
  void tx_free(Frame* f, uint16_t n) override { real_.tx_free(f, n); }

 private:
  PacketIo& real_;
};

TEST(SimGsi, GroupHandsQp1ToEngineZero) {
  SimLink link(21, 4096, 2048);
  MrTable mr_a(16, 4), mr_b(16, 4);
  Engine a(link.end(0), mr_a);
  // Side B: engine 1 receives everything; engine 0 owns QP1.
  TxOnlyIo b0_io(link.end(1));
  EngineGroup group(2);
  EngineConfig c0, c1;
  c0.qpn_base = EngineGroup::qpn_base(0);
  c1.qpn_base = EngineGroup::qpn_base(1);
  Engine b0(b0_io, mr_b, c0);
  Engine b1(link.end(1), mr_b, c1);
  b0.join_group(&group, 0);
  b1.join_group(&group, 1);

  Inbox at_a, at_b0;
  size_t at_b1 = 0;
  b1.set_gsi_handler([&](const wire::PacketView&, uint64_t) { ++at_b1; });  // never: not its QP
  b0.set_gsi_handler([&](const wire::PacketView& v, uint64_t) {
    at_b0.take(v);
    if (at_b0.msgs.empty()) return;
    wire::CmMessage rej;
    rej.type = wire::CmMsg::kRej;
    rej.tid = at_b0.msgs.back().tid;
    rej.remote_comm_id = at_b0.msgs.back().local_comm_id;
    rej.rej_reason = wire::CmRejReason::kInvalidServiceId;
    EXPECT_TRUE(b0.send_gsi(path_from(1), rej));
  });
  a.set_gsi_handler([&](const wire::PacketView& v, uint64_t) { at_a.take(v); });

  const wire::CmMessage req = make_req();
  ASSERT_TRUE(a.send_gsi(path_from(0), req));
  uint64_t now = 1'000'000;
  for (int i = 0; i < 100 && at_a.msgs.empty(); ++i, now += 1'000) {
    link.set_now(now);
    a.poll(now);
    b1.poll(now);
    b0.poll(now);
  }
  ASSERT_EQ(at_b0.msgs.size(), 1u);
  EXPECT_TRUE(at_b0.msgs[0] == req);
  EXPECT_EQ(at_b1, 0u);
  ASSERT_EQ(at_a.msgs.size(), 1u);
  EXPECT_EQ(at_a.msgs[0].type, wire::CmMsg::kRej);
  EXPECT_EQ(at_a.msgs[0].rej_reason, wire::CmRejReason::kInvalidServiceId);
  EXPECT_EQ(at_a.msgs[0].remote_comm_id, req.local_comm_id);
  EXPECT_EQ(b1.counters().handed_off, 1u);
  EXPECT_EQ(b1.counters().gsi_rx, 0u);
  EXPECT_EQ(b0.counters().handed_in, 1u);
  EXPECT_EQ(b0.counters().gsi_rx, 1u);
  EXPECT_EQ(b0.counters().gsi_tx, 1u);
  EXPECT_EQ(a.counters().gsi_rx, 1u);
}

}  // namespace
}  // namespace dpdat::rc::test
