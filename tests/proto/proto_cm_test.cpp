// Connection management of dat_core over the simulated link: connect,
// accept, reject, disconnect, unreachable peers, and CM messages lost on
// the wire (REQ, REP, RTU, DREQ dropped by a filter on the link).

#include "proto_fixture.hpp"
#include "wire/cm.hpp"
#include "wire/packet.hpp"

namespace dpdat::proto {
namespace {

// The CM message kind a frame carries, or 0 when it is not a CM MAD.
uint16_t cm_kind(const uint8_t* data, uint32_t len) {
  wire::PacketView v;
  if (wire::parse_packet(std::span<const uint8_t>(data, len), wire::ParseOptions{}, v) !=
      wire::Reject::kNone)
    return 0;
  if (v.opcode != wire::Opcode::kUdSendOnly) return 0;
  wire::CmMessage m;
  if (wire::parse_cm_packet(v, m) != wire::CmError::kOk) return 0;
  return static_cast<uint16_t>(m.type);
}

TEST_F(ProtoTest, ConnectAcceptDisconnect) {
  open_both();
  connect();
  EpStatus sa, sb;
  ASSERT_TRUE(ep_get_status(a_.ep, &sa).ok());
  ASSERT_TRUE(ep_get_status(b_.ep, &sb).ok());
  EXPECT_EQ(sa.state, EpState::kConnected);
  EXPECT_EQ(sb.state, EpState::kConnected);
  uint32_t ip = 0;
  uint64_t qual = 0;
  ASSERT_TRUE(ep_peer(a_.ep, &ip, &qual).ok());
  EXPECT_EQ(ip, kIpB);
  EXPECT_EQ(qual, kQual);
  disconnect();
  ASSERT_TRUE(ep_get_status(b_.ep, &sb).ok());
  EXPECT_EQ(sb.state, EpState::kDisconnected);
}

TEST_F(ProtoTest, RejectCarriesPrivateData) {
  open_both();
  ASSERT_TRUE(psp_create(b_.ia, kQual, b_.cr, 0, &b_.psp).ok());
  ASSERT_TRUE(ep_connect(a_.ep, kIpB, kQual, kWaitUs, nullptr, 0).ok());
  const Event req = next_event(b_.cr);
  ASSERT_EQ(req.num, EventNum::kConnRequest);
  const uint8_t no[] = {'n', 'o'};
  ASSERT_TRUE(cr_reject(req.cr, no, sizeof(no)).ok());
  const Event ev = next_event(a_.conn);
  EXPECT_EQ(ev.num, EventNum::kPeerRejected);
  ASSERT_EQ(ev.pdata_len, 2u);
  EXPECT_EQ(std::memcmp(ev.pdata, no, 2), 0);
  EpStatus s;
  ASSERT_TRUE(ep_get_status(a_.ep, &s).ok());
  EXPECT_EQ(s.state, EpState::kDisconnected);
}

TEST_F(ProtoTest, NoListenerIsNonPeerRejected) {
  open_both();
  ASSERT_TRUE(ep_connect(a_.ep, kIpB, kQual + 1, kWaitUs, nullptr, 0).ok());
  EXPECT_EQ(next_event(a_.conn).num, EventNum::kNonPeerRejected);
}

// Nobody holds the address: neighbour resolution never answers, and the
// connect times out as UNREACHABLE at its deadline.
TEST_F(ProtoTest, UnresolvedPeerIsUnreachable) {
  open_both();
  ASSERT_TRUE(ep_connect(a_.ep, 0x0A0900FE, kQual, 100'000, nullptr, 0).ok());
  EXPECT_EQ(next_event(a_.conn).num, EventNum::kUnreachable);
}

// The first REQ, REP, RTU and DREQ are lost on the wire: retransmissions
// (REQ, REP, DREQ) and the answers they draw (a repeated REP draws the RTU
// again) still bring both sides to ESTABLISHED and back to DISCONNECTED.
TEST_F(ProtoTest, CmMessagesLostOnTheWire) {
  open_both();
  struct Drops {
    int req = 1, rep = 1, rtu = 1, dreq = 1;
    int dropped = 0;
  };
  auto drops = std::make_shared<Drops>();
  wire_->with_link([drops](rc::SimLink& l) {
    l.set_filter([drops](int, const uint8_t* d, uint32_t len) {
      int* left = nullptr;
      switch (static_cast<wire::CmMsg>(cm_kind(d, len))) {
        case wire::CmMsg::kReq:
          left = &drops->req;
          break;
        case wire::CmMsg::kRep:
          left = &drops->rep;
          break;
        case wire::CmMsg::kRtu:
          left = &drops->rtu;
          break;
        case wire::CmMsg::kDreq:
          left = &drops->dreq;
          break;
        default:
          return true;
      }
      if (*left == 0) return true;
      --*left;
      ++drops->dropped;
      return false;
    });
  });
  connect();
  disconnect();
  int dropped = 0;
  wire_->with_link([&](rc::SimLink&) { dropped = drops->dropped; });
  EXPECT_EQ(dropped, 4);
}

// b's DREP is lost and b frees its EP at once: a's repeated DREQ then names
// a connection b no longer has.  b answers it again (a completes its
// disconnect) and counts it as repeated, not as forged; a DREQ naming a
// connection b never had still counts as forged.
TEST_F(ProtoTest, RepeatedDreqForAFreedConnectionIsNotForged) {
  open_both();
  auto dreps = std::make_shared<int>(1);
  wire_->with_link([dreps](rc::SimLink& l) {
    l.set_filter([dreps](int, const uint8_t* d, uint32_t len) {
      if (static_cast<wire::CmMsg>(cm_kind(d, len)) != wire::CmMsg::kDrep || *dreps == 0)
        return true;
      --*dreps;
      return false;
    });
  });
  connect();
  ASSERT_TRUE(ep_disconnect(a_.ep, false).ok());
  EXPECT_EQ(next_event(b_.conn).num, EventNum::kDisconnected);
  ASSERT_TRUE(ep_free(b_.ep).ok());
  b_.ep = nullptr;
  EXPECT_EQ(next_event(a_.conn).num, EventNum::kDisconnected);
  EXPECT_EQ(*dreps, 0);  // the DREP was lost
  Iface* fb = b_.ia->iface;
  const rc::EngineCounters& c = fb->engine->counters();
  EXPECT_GE(c.cm_dreq_repeated, 1u);
  EXPECT_EQ(c.cm_forged_ignored, 0u);
  // A DREQ for comm IDs b never used.
  CmIn forged;
  forged.m.type = wire::CmMsg::kDreq;
  forged.m.local_comm_id = 0x7777;
  forged.m.remote_comm_id = 0x8888;
  forged.ip = kIpA;
  forged.mac = {0x02, 0, 0, 0, 0, 0x42};
  forged.udp_port = 0xC001;
  {
    IfaceLock lk(fb);
    fb->on_cm(forged, now_ns());
  }
  EXPECT_EQ(c.cm_forged_ignored, 1u);
}

// Random loss both ways (40 %, seeded) while connecting; the disconnect
// runs on a clean wire (a DREQ is repeated 3 times only).
TEST_F(ProtoTest, ConnectsOverLossyWire) {
  open_both();
  rc::LinkImpairment imp;
  imp.loss = 0.4;
  wire_->with_link([&](rc::SimLink& l) {
    l.set_impairment(0, imp);
    l.set_impairment(1, imp);
  });
  connect();
  uint64_t dropped = 0;
  wire_->with_link([&](rc::SimLink& l) { dropped = l.stats(0).dropped + l.stats(1).dropped; });
  EXPECT_GT(dropped, 0u);  // the impairment did bite
  wire_->reset();
  disconnect();
}

}  // namespace
}  // namespace dpdat::proto
