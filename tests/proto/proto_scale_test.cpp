// Scale of one interface over the simulated link: 65,536 live connected
// endpoints per interface (the default max_eps), the next endpoint refused
// with DAT_INSUFFICIENT_RESOURCES; a flood of connection requests beyond the
// pending-request limit refused (REJ "no resources", counted) while an
// established connection keeps moving.

#include <chrono>
#include <cstdio>

#include "proto_fixture.hpp"
#include "proto_many.hpp"

namespace dpdat::proto {
namespace {

// SEND a -> b over one connection, checked byte for byte.
void send_once(ManySide& a, ManySide& b, Ep* ea, Ep* eb, Mem& ma, Mem& mb, uint32_t seed) {
  fill(ma.buf, seed);
  const rc::Sge rs = mb.sge();
  ASSERT_TRUE(ep_post_recv(eb, &rs, 1, seed, 0).ok());
  const rc::Sge ss = ma.sge();
  PostArgs pa;
  pa.op = rc::WrOp::kSend;
  pa.sge = &ss;
  pa.nsge = 1;
  pa.cookie = seed;
  ASSERT_TRUE(ep_post(ea, pa).ok());
  Event ev;
  const Status w = evd_wait(b.recv, kWaitUs, 1, &ev, nullptr);
  ASSERT_TRUE(w.ok()) << static_cast<int>(w.type) << " " << static_cast<int>(w.sub) << " ep state "
                      << static_cast<int>(ea->state.load()) << "/"
                      << static_cast<int>(eb->state.load()) << " qp "
                      << static_cast<int>(ea->qp->state()) << " sent "
                      << ea->qp->counters().tx_packets << " rx " << eb->qp->counters().rx_packets;
  EXPECT_EQ(ev.status, DtoStatus::kSuccess);
  EXPECT_EQ(ev.cookie, seed);
  ASSERT_TRUE(evd_wait(a.req, kWaitUs, 1, &ev, nullptr).ok());
  EXPECT_EQ(ev.status, DtoStatus::kSuccess);
  EXPECT_EQ(mb.buf, ma.buf);
}

TEST_F(ProtoTest, SixtyFiveThousandConnectedEndpointsThenTheNextRefused) {
  open_both();  // default limits: 65,536 EPs per interface; each side has one EP
  ASSERT_EQ(a_.ia->iface->limits.max_eps, 65536u);
  ManySide a, b;
  ASSERT_TRUE(a.make(a_.ia, 1024));
  ASSERT_TRUE(b.make(b_.ia, 1024));
  const auto t0 = std::chrono::steady_clock::now();
  const uint32_t n = 65536 - 1;
  const std::string err = connect_many(a, b, kIpB, kQual, n, 512);
  ASSERT_EQ(err, "") << "after " << a.eps.size() << " endpoints";
  const double secs = seconds_since(t0);
  std::printf("%u connections in %.2f s (%.0f/s), 65,536 live EPs per interface\n", n, secs,
              n / secs);
  EXPECT_EQ(a_.ia->iface->engine->qp_count(), 65536u);
  EXPECT_EQ(b_.ia->iface->engine->qp_count(), 65536u);

  Ep* extra = nullptr;
  const Status st = ep_create(a_.ia, a.pz, a.recv, a.req, a.conn, nullptr, &extra);
  EXPECT_EQ(st.type, Type::INSUFFICIENT_RESOURCES);
  EXPECT_EQ(st.sub, Sub::RESOURCE_TEP);

  // The first and the last connection still carry data.
  Mem ma, mb;
  Side ra, rb;  // registration helpers on the shared PZs
  ra.ia = a_.ia;
  ra.pz = a.pz;
  rb.ia = b_.ia;
  rb.pz = b.pz;
  ra.reg(ma, 3000);
  rb.reg(mb, 3000);
  send_once(a, b, a.eps.front(), b.eps.front(), ma, mb, 1);
  send_once(a, b, a.eps.back(), b.eps.back(), ma, mb, 2);
}

TEST_F(ProtoTest, ReqFloodBeyondThePendingLimitIsRefusedAndCounted) {
  // b admits 8 unanswered requests on its PSP; 40 arrive, nobody answers.
  const IfaceConfig ca = config("flood_a", "ring=0;ip=10.9.0.1;progress=inline");
  const IfaceConfig cb =
      config("flood_b", "ring=1;ip=10.9.0.2;progress=inline;max_pending_crs_per_sp=8");
  a_.open(ca);
  b_.open(cb);
  connect();  // an established connection (pending requests: none)
  ManySide a, b;
  ASSERT_TRUE(a.make(a_.ia, 64));
  ASSERT_TRUE(b.make(b_.ia, 64));
  constexpr uint64_t kFloodQual = kQual + 1;
  ASSERT_TRUE(psp_create(b_.ia, kFloodQual, b.cr, 0, &b.psp).ok());
  constexpr uint32_t kFlood = 40, kAdmitted = 8;
  for (uint32_t i = 0; i < kFlood; ++i) {
    Ep* ea = nullptr;
    ASSERT_TRUE(ep_create(a_.ia, a.pz, a.recv, a.req, a.conn, nullptr, &ea).ok());
    a.eps.push_back(ea);
    ASSERT_TRUE(ep_connect(ea, kIpB, kFloodQual, kWaitUs, nullptr, 0).ok());
  }
  // Every refused attempt ends NON_PEER_REJECTED on a; the admitted ones wait.
  for (uint32_t i = 0; i < kFlood - kAdmitted; ++i) {
    const Event ev = next_event(a.conn);
    EXPECT_EQ(ev.num, EventNum::kNonPeerRejected);
  }
  EXPECT_EQ(b_.ia->iface->reqs_refused, kFlood - kAdmitted);
  EXPECT_EQ(b.psp->crs, kAdmitted);
  // The established connection keeps moving meanwhile.
  Mem ma, mb;
  a_.reg(ma, 5000);
  b_.reg(mb, 5000);
  ManySide sa, sb;
  sa.recv = a_.recv;
  sa.req = a_.req;
  sb.recv = b_.recv;
  sb.req = b_.req;
  send_once(sa, sb, a_.ep, b_.ep, ma, mb, 7);
  // Answering makes room: one rejected, the next REQ is admitted again.
  Event cr_ev = next_event(b.cr);
  ASSERT_EQ(cr_ev.num, EventNum::kConnRequest);
  ASSERT_TRUE(cr_reject(cr_ev.cr, nullptr, 0).ok());
  EXPECT_EQ(next_event(a.conn).num, EventNum::kPeerRejected);
  Ep* late = nullptr;
  ASSERT_TRUE(ep_create(a_.ia, a.pz, a.recv, a.req, a.conn, nullptr, &late).ok());
  ASSERT_TRUE(ep_connect(late, kIpB, kFloodQual, kWaitUs, nullptr, 0).ok());
  cr_ev = next_event(b.cr);
  EXPECT_EQ(cr_ev.num, EventNum::kConnRequest);
  EXPECT_EQ(b_.ia->iface->reqs_refused, kFlood - kAdmitted);
}

TEST_F(ProtoTest, PendingRequestsCappedPerInterfaceAcrossListeners) {
  // b admits 5 unanswered requests in all; 3 arrive at each of two PSPs.
  a_.open(config("cap_a", "ring=0;ip=10.9.0.1;progress=inline"));
  b_.open(config("cap_b", "ring=1;ip=10.9.0.2;progress=inline;max_pending_crs=5"));
  ASSERT_EQ(b_.ia->iface->limits.max_pending_crs, 5u);
  ManySide a, b1, b2;
  ASSERT_TRUE(a.make(a_.ia, 64));
  ASSERT_TRUE(b1.make(b_.ia, 64));
  ASSERT_TRUE(b2.make(b_.ia, 64));
  ASSERT_TRUE(psp_create(b_.ia, kQual + 1, b1.cr, 0, &b1.psp).ok());
  ASSERT_TRUE(psp_create(b_.ia, kQual + 2, b2.cr, 0, &b2.psp).ok());
  for (uint64_t qual : {kQual + 1, kQual + 2})
    for (int i = 0; i < 3; ++i) {
      Ep* ea = nullptr;
      ASSERT_TRUE(ep_create(a_.ia, a.pz, a.recv, a.req, a.conn, nullptr, &ea).ok());
      ASSERT_TRUE(ep_connect(ea, kIpB, qual, kWaitUs, nullptr, 0).ok());
    }
  // Whichever came sixth was refused (after five were admitted: all six
  // were handled by then).
  EXPECT_EQ(next_event(a.conn).num, EventNum::kNonPeerRejected);
  EXPECT_EQ(b_.ia->iface->pending_crs, 5u);
  EXPECT_EQ(b_.ia->iface->reqs_refused, 1u);
  EXPECT_EQ(b1.psp->crs + b2.psp->crs, 5u);
}

}  // namespace
}  // namespace dpdat::proto
