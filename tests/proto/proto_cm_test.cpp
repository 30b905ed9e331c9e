// Connection management of dat_core over the simulated link: connect,
// accept, reject, disconnect, unreachable peers, and CM messages lost on
// the wire (REQ, REP, RTU, DREQ dropped by a filter on the link), and how
// long a connect asks (its timeout against the CM's retries).

#include <atomic>
#include <memory>

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

// A connect's timeout governs, not the CM's retry count: a peer that
// answers only after the IBA's 15 REQ retries (about 12.5 s, as when its
// host gives it no CPU that long) is still connected to within the timeout
// the consumer gave.  Here every REQ is lost for 20 s of the interfaces'
// clock.
TEST_F(ProtoTest, ConnectTimeoutOutlastsTheCmRetries) {
  open_both();
  ASSERT_TRUE(psp_create(b_.ia, kQual, b_.cr, 0, &b_.psp).ok());
  auto reqs = std::make_shared<std::atomic<int>>(0);
  auto drop = std::make_shared<std::atomic<bool>>(true);
  wire_->with_link([reqs, drop](rc::SimLink& l) {
    l.set_filter([reqs, drop](int, const uint8_t* d, uint32_t len) {
      if (static_cast<wire::CmMsg>(cm_kind(d, len)) != wire::CmMsg::kReq) return true;
      ++*reqs;
      return !drop->load();
    });
  });
  ASSERT_TRUE(ep_connect(a_.ep, kIpB, kQual, 60'000'000, nullptr, 0).ok());
  for (int ms = 250; ms <= 20'000; ms += 250) {
    wire_->advance_clock(250'000'000);
    Event ev;
    const Status st = evd_wait(a_.conn, 2'000, 1, &ev, nullptr);  // drives the CM's timers
    ASSERT_FALSE(st.ok()) << "event " << static_cast<int>(ev.num) << " at " << ms << " ms";
  }
  EXPECT_GT(reqs->load(), 16);  // the first REQ and more than 15 retries
  drop->store(false);
  wire_->advance_clock(1'000'000'000);  // the next REQ goes through
  const Event req = next_event(b_.cr);
  ASSERT_EQ(req.num, EventNum::kConnRequest);
  ASSERT_TRUE(cr_accept(req.cr, b_.ep, nullptr, 0).ok());
  EXPECT_EQ(next_event(a_.conn).num, EventNum::kEstablished);
  EXPECT_EQ(next_event(b_.conn).num, EventNum::kEstablished);
}

// Without a timeout the REQ gives up after those retries: TIMED_OUT.
TEST_F(ProtoTest, ConnectWithoutTimeoutEndsAfterTheCmRetries) {
  open_both();
  ASSERT_TRUE(psp_create(b_.ia, kQual, b_.cr, 0, &b_.psp).ok());
  wire_->with_link([](rc::SimLink& l) {
    l.set_filter([](int, const uint8_t* d, uint32_t len) {
      return static_cast<wire::CmMsg>(cm_kind(d, len)) != wire::CmMsg::kReq;
    });
  });
  ASSERT_TRUE(ep_connect(a_.ep, kIpB, kQual, UINT64_MAX, nullptr, 0).ok());
  Event ev;
  Status st;
  int ms = 0;
  for (; ms <= 20'000; ms += 250) {
    wire_->advance_clock(250'000'000);
    st = evd_wait(a_.conn, 2'000, 1, &ev, nullptr);
    if (st.ok()) break;
  }
  ASSERT_TRUE(st.ok()) << "no event after 20 s";
  EXPECT_EQ(ev.num, EventNum::kTimedOut);
  EXPECT_GE(ms, 11'000);  // 50 ms doubling to 1 s, 15 times: about 12.5 s
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
