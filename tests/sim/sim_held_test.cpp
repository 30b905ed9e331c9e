// Selective repeat with request frames kept whole (responder_hold.cpp): what
// the placement ahead of a hole refuses — SEND packets a message boundary may
// precede, FIRSTs beyond the 8 next messages, READ and atomic requests — is
// kept by the responder and run in order once the hole is filled, so the
// requester resends only what was lost.  Also: the engine's cap on kept bytes,
// kept frames given back with their queue pair, and the requester's window
// leaving out what the SACKs show kept.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "harness.hpp"
#include "parse_frame.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint32_t kLocal = priv::kLocalRead | priv::kLocalWrite;
constexpr uint32_t kPmtu = 1024;

QpConfig cfg(bool sr = true) {
  QpConfig c;
  c.pmtu = kPmtu;
  c.selective_repeat = sr;
  return c;
}

// The pool block one kept request frame of `payload` bytes takes.
size_t held_block(wire::Opcode op, size_t payload) {
  return BlockPool::class_bytes(
      BlockPool::class_of(sizeof(wire::PacketView) + wire::frame_size(op, payload)));
}

// A pair whose link loses chosen frames of A: those numbered in `drop`
// (1-based, counted from arm()) once each, and with `drop_from` every frame
// from that number on.  Logs every frame either side sends.
struct Rig {
  struct Sent {
    int from;
    wire::Opcode op;
    uint32_t psn_off;  // PSN minus kFirstPsnA (24-bit): A's request PSNs count from 0
    uint8_t syndrome;  // ACK / NAK from B
  };
  Pair p;
  std::vector<uint32_t> drop;
  uint32_t drop_from = 0;
  uint32_t sent_a = 0;
  std::vector<Sent> log;
  // Checked at every frame: the most B's engine held at once.
  size_t b_held_peak = 0;

  explicit Rig(const QpConfig& c = cfg(), const EngineConfig& e = {}) : p(47, c, 4096, {}, e) {
    p.link().set_filter([this](int from_end, const uint8_t* data, uint32_t len) {
      const wire::PacketView v = parse(data, len);
      if (v.bth == nullptr) return true;
      b_held_peak = std::max(b_held_peak, p.b().engine->held_bytes());
      log.push_back({from_end, v.opcode, (v.bth->psn().value() - kFirstPsnA) & 0xFFFFFF,
                     v.aeth != nullptr ? v.aeth->syndrome : uint8_t{0}});
      if (from_end != 0) return true;
      ++sent_a;
      if (drop_from != 0 && sent_a >= drop_from) return false;
      return std::find(drop.begin(), drop.end(), sent_a) == drop.end();
    });
  }
  void arm(std::vector<uint32_t> d, uint32_t from = 0) {
    drop = std::move(d);
    drop_from = from;
    sent_a = 0;
    log.clear();
  }
  const QpCounters& ca() { return p.a().qp->counters(); }
  const QpCounters& cb() { return p.b().qp->counters(); }

  void post_recv(const Buffer& dst, uint64_t off, uint64_t len, uint64_t cookie) {
    RecvWr r;
    r.cookie = cookie;
    r.num_sge = 1;
    r.sge[0] = Sge{dst.lmr, dst.va() + off, len};
    ASSERT_EQ(p.b().qp->post_recv(r), Qp::PostResult::kOk);
  }
  void post_send(WrOp op, const Buffer& src, uint64_t off, uint64_t len, uint64_t cookie) {
    SendWr w;
    w.op = op;
    w.cookie = cookie;
    w.num_sge = 1;
    w.sge[0] = Sge{src.lmr, src.va() + off, len};
    ASSERT_EQ(p.a().qp->post_send(w), Qp::PostResult::kOk);
  }
};

constexpr uint64_t kMsg = 8 * kPmtu;
constexpr uint64_t kRecvLen = 2 * kMsg;

// `n` SENDs of 8 packets each into receive buffers twice their size, the
// frames in `lost` lost once: every message byte-exact, in order, with its
// length and nothing written past it.
void sends_losing(Rig& f, uint32_t n, std::vector<uint32_t> lost) {
  Buffer src = f.p.reg(0, n * kMsg, kLocal);
  Buffer dst = f.p.reg(1, n * kRecvLen, kLocal | priv::kRemoteWrite, 0xA5);
  fill_pattern(src.bytes, 5);
  for (uint32_t i = 0; i < n; ++i) f.post_recv(dst, i * kRecvLen, kRecvLen, 1 + i);
  f.arm(std::move(lost));
  for (uint32_t i = 0; i < n; ++i) f.post_send(WrOp::kSend, src, i * kMsg, kMsg, 11 + i);
  ASSERT_TRUE(f.p.run_until([&] { return f.p.a().scq->size() == n && f.p.b().rcq->size() == n; }));
  ASSERT_TRUE(f.p.settle());
  const auto sc = drain(*f.p.a().scq);
  const auto rc = drain(*f.p.b().rcq);
  ASSERT_EQ(sc.size(), n);
  ASSERT_EQ(rc.size(), n);
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_EQ(sc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(sc[i].cookie, 11u + i);
    EXPECT_EQ(rc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(rc[i].cookie, 1u + i);
    EXPECT_EQ(rc[i].byte_len, kMsg);
    const auto from = src.bytes.begin() + static_cast<std::ptrdiff_t>(i * kMsg);
    const auto at = dst.bytes.begin() + static_cast<std::ptrdiff_t>(i * kRecvLen);
    EXPECT_TRUE(std::equal(from, from + kMsg, at)) << "message " << i;
    EXPECT_TRUE(std::all_of(at + kMsg, at + kRecvLen, [](uint8_t b) { return b == 0xA5; }))
        << "receive buffer " << i << " written past the message's end";
  }
  EXPECT_EQ(f.p.a().qp->state(), QpState::kRts);
  EXPECT_EQ(f.p.b().qp->state(), QpState::kRts);
  EXPECT_EQ(f.p.b().engine->held_bytes(), 0u);
}

// Two SENDs of 8 packets each into receive buffers twice their size; the
// LAST of the first and the FIRST of the second (frames 8 and 9) lost once.
// Returns the frames A sent.
uint32_t two_sends_losing_the_boundary(Rig& f) {
  sends_losing(f, 2, {8, 9});
  return f.sent_a;
}

// (a) The second SEND's 7 MIDDLE / LAST packets cannot be placed (a message
// boundary may hide in the two adjacent holes): they are kept and taken in
// order, so only the two lost packets go out again (refused, they would
// be sent again from the second hole on).
TEST(SelectiveRepeatHeld, SendsAfterALostBoundaryKeptNotResent) {
  Rig f;
  const uint32_t sent = two_sends_losing_the_boundary(f);
  EXPECT_EQ(f.cb().sr_placed_ahead, 0u);  // nothing could be placed ...
  EXPECT_EQ(f.cb().sr_kept, 7u);          // ... all 7 kept
  EXPECT_EQ(f.cb().sr_kept_taken, 7u);
  EXPECT_EQ(f.ca().retransmits, 0u);  // no go-back-N rewind
  EXPECT_EQ(f.ca().sr_resends, 2u);
  EXPECT_EQ(f.ca().timeouts, 0u);
  EXPECT_EQ(sent, 16u + 2u);
  EXPECT_EQ(f.p.b().engine->held_bytes(), 0u);
  EXPECT_EQ(f.p.b().engine->counters().sr_kept_refused, 0u);
  EXPECT_EQ(f.b_held_peak, 7 * held_block(wire::Opcode::kSendMiddle, kPmtu));
}

// Only the LAST of a SEND is lost: the FIRST after it shows that the one
// packet between is that LAST (a MIDDLE came before it), so the next SEND
// is placed into the receive after this one's, not kept.
TEST(SelectiveRepeatHeld, SendAfterALostLastPlacedNotKept) {
  Rig f;
  sends_losing(f, 2, {8});
  EXPECT_EQ(f.cb().sr_placed_ahead, 8u);  // the second SEND whole
  EXPECT_EQ(f.cb().sr_kept, 0u);
  EXPECT_EQ(f.ca().sr_resends, 1u);
  EXPECT_EQ(f.ca().retransmits, 0u);
  EXPECT_EQ(f.ca().timeouts, 0u);
  EXPECT_EQ(f.sent_a, 16u + 1u);
}

// The same behind an earlier hole: the first SEND loses a MIDDLE (frame
// 3), the second, placed as the next message, its LAST (frame 16); the
// third begins after that LAST, the second's packet before it placed.
// Then a SEND whose LAST is lost right after its FIRST was placed ahead
// (frames 18 and 26: the fourth's packets but one follow the third's FIRST).
TEST(SelectiveRepeatHeld, SendsAfterLostLastsBehindAHolePlacedNotKept) {
  Rig f;
  sends_losing(f, 4, {3, 16, 26});
  EXPECT_EQ(f.cb().sr_kept, 0u);
  EXPECT_EQ(f.ca().sr_resends, 3u);
  EXPECT_EQ(f.ca().retransmits, 0u);
  EXPECT_EQ(f.ca().timeouts, 0u);
  EXPECT_EQ(f.sent_a, 32u + 3u);
}

// A kMsg WRITE with immediate from src to dst whose FIRST is lost once
// (`none`: B's 1-byte buffer for the immediate's receive): the receive
// completes with the immediate and the whole message, and dst equals src.
void write_imm_losing_its_first(Rig& f, const Buffer& src, const Buffer& dst, const Buffer& none,
                                uint32_t imm) {
  f.post_recv(none, 0, 0, 1);  // the immediate's receive
  f.arm({1});
  SendWr w = rdma_wr(WrOp::kWriteImm, src, dst, kMsg, 7);
  w.imm = imm;
  ASSERT_EQ(f.p.a().qp->post_send(w), Qp::PostResult::kOk);
  ASSERT_TRUE(f.p.run_until([&] { return f.p.b().rcq->size() == 1; }));
  ASSERT_TRUE(f.p.settle());
  const auto rc = drain(*f.p.b().rcq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(rc[0].op, WcOp::kRecvWriteImm);
  EXPECT_TRUE(rc[0].has_imm);
  EXPECT_EQ(rc[0].imm, imm);
  EXPECT_EQ(rc[0].byte_len, kMsg);
  EXPECT_EQ(src.bytes, dst.bytes);
}

// A WRITE with immediate whose FIRST (the packet with the RETH) is lost: its
// MIDDLE and LAST packets do not say where they go, so they are kept and
// written once the FIRST, resent alone, comes.  (A first WRITE loses a
// packet, so this runs on a connection that recovered before; the counters
// are differences.)  With nothing kept (the engine's cap 0) the SACK with
// the NAK for the packet after the FIRST shows nothing held, and the rest
// goes out again, without waiting for a timeout.
TEST(SelectiveRepeatHeld, WriteImmAfterItsLostFirstKept) {
  for (bool keep : {true, false}) {
    SCOPED_TRACE(keep ? "kept" : "cap 0");
    EngineConfig e;
    if (!keep) e.held_max_bytes = 0;
    Rig f(cfg(), e);
    Buffer src = f.p.reg(0, kMsg, kLocal);
    Buffer dst = f.p.reg(1, kMsg, kLocal | priv::kRemoteWrite);
    Buffer none = f.p.reg(1, 1, kLocal);
    fill_pattern(src.bytes, 13);
    f.arm({1});
    ASSERT_EQ(f.p.a().qp->post_send(rdma_wr(WrOp::kWrite, src, dst, 2 * kPmtu, 6)),
              Qp::PostResult::kOk);
    ASSERT_TRUE(f.p.run_until([&] { return f.p.a().scq->size() == 1; }));
    ASSERT_TRUE(f.p.settle());
    ASSERT_GE(f.ca().sacks_rx, 1u);
    (void)drain(*f.p.a().scq);
    std::fill(dst.bytes.begin(), dst.bytes.end(), uint8_t{0});
    const QpCounters a0 = f.ca(), b0 = f.cb();

    write_imm_losing_its_first(f, src, dst, none, 0xABCD0123);
    EXPECT_EQ(f.cb().sr_placed_ahead - b0.sr_placed_ahead, 0u);
    EXPECT_EQ(f.ca().retransmits - a0.retransmits, 0u);  // no go-back-N
    EXPECT_EQ(f.ca().timeouts - a0.timeouts, 0u);
    EXPECT_EQ(f.p.b().engine->held_bytes(), 0u);
    if (keep) {
      EXPECT_EQ(f.cb().sr_kept - b0.sr_kept, 7u);
      EXPECT_EQ(f.cb().sr_kept_taken - b0.sr_kept_taken, 7u);
      EXPECT_EQ(f.ca().sr_resends - a0.sr_resends, 1u);  // the FIRST alone
      EXPECT_EQ(f.sent_a, 8u + 1u);
    } else {
      EXPECT_EQ(f.cb().sr_kept - b0.sr_kept, 0u);
      EXPECT_EQ(f.p.b().engine->counters().sr_kept_refused, 7u);
      EXPECT_EQ(f.ca().sr_resends - a0.sr_resends, 8u);  // the FIRST, then the rest
      EXPECT_EQ(f.sent_a, 8u + 8u);
    }
  }
}

// The first hole of a connection: the responder's SACK goes before its NAK,
// so the requester knows the responder keeps frames when it acts on the
// NAK, and resends the lost FIRST of a WRITE with immediate alone.
TEST(SelectiveRepeatHeld, FirstHoleOfAConnectionResentAlone) {
  Rig f;
  Buffer src = f.p.reg(0, kMsg, kLocal);
  Buffer dst = f.p.reg(1, kMsg, kLocal | priv::kRemoteWrite);
  Buffer none = f.p.reg(1, 1, kLocal);
  fill_pattern(src.bytes, 17);
  write_imm_losing_its_first(f, src, dst, none, 0x5EED);
  EXPECT_EQ(f.ca().retransmits, 0u);  // no go-back-N
  EXPECT_EQ(f.ca().sr_resends, 1u);   // the FIRST alone
  EXPECT_EQ(f.cb().sr_kept, 7u);
  EXPECT_EQ(f.sent_a, 8u + 1u);
}

// (b) A 4-packet SEND losing its second packet, then 20 one-packet SENDs:
// the responder places the first message's rest and the 8 next messages
// (kSrNextMax), and keeps the 12 beyond.  Nothing but the hole is resent.
TEST(SelectiveRepeatHeld, MessagesBeyondTheNextEightKept) {
  Rig f;
  constexpr uint64_t kSmall = 256;
  constexpr uint32_t kN = 20;
  const uint64_t total = 4 * kPmtu + kN * kSmall;
  Buffer src = f.p.reg(0, total, kLocal);
  Buffer dst = f.p.reg(1, total, kLocal | priv::kRemoteWrite);
  fill_pattern(src.bytes, 8);
  f.post_recv(dst, 0, 4 * kPmtu, 100);
  for (uint32_t i = 0; i < kN; ++i) f.post_recv(dst, 4 * kPmtu + i * kSmall, kSmall, 101 + i);
  f.arm({2});
  f.post_send(WrOp::kSend, src, 0, 4 * kPmtu, 1);
  for (uint32_t i = 0; i < kN; ++i)
    f.post_send(WrOp::kSend, src, 4 * kPmtu + i * kSmall, kSmall, 2 + i);
  ASSERT_TRUE(f.p.run_until([&] { return f.p.b().rcq->size() == kN + 1; }));
  ASSERT_TRUE(f.p.settle());
  const auto rc = drain(*f.p.b().rcq);
  ASSERT_EQ(rc.size(), kN + 1);
  for (uint32_t i = 0; i <= kN; ++i) {
    EXPECT_EQ(rc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(rc[i].cookie, 100u + i);  // in order
    EXPECT_EQ(rc[i].byte_len, i == 0 ? 4 * kPmtu : kSmall);
  }
  EXPECT_EQ(src.bytes, dst.bytes);
  EXPECT_EQ(drain(*f.p.a().scq).size(), kN + 1);
  EXPECT_EQ(f.cb().sr_placed_ahead, 2u + 8u);  // the first message's rest, the next 8
  EXPECT_EQ(f.cb().sr_kept, kN - 8u);
  EXPECT_EQ(f.cb().sr_kept_taken, kN - 8u);
  EXPECT_EQ(f.ca().retransmits, 0u);
  EXPECT_EQ(f.ca().sr_resends, 1u);
  EXPECT_EQ(f.sent_a, 4u + kN + 1u);
  EXPECT_EQ(f.p.b().engine->held_bytes(), 0u);
}

// (c) A READ, two fetch-and-adds and a SEND after a hole in a WRITE: kept,
// run once each, in order, when the hole is filled.  The READ returns the
// WRITE's data, lost packet included; the atomics' results and the final
// value show each ran exactly once.
TEST(SelectiveRepeatHeld, ReadAndAtomicsAfterAHoleKeptAndRunOnceInOrder) {
  Rig f;
  constexpr uint64_t kW = 4 * kPmtu;
  Buffer src = f.p.reg(0, kW, kLocal);
  Buffer remote = f.p.reg(1, kW, kLocal | priv::kRemoteWrite | priv::kRemoteRead);
  Buffer back = f.p.reg(0, kW, kLocal);
  Buffer counter = f.p.reg(1, 8, kLocal | priv::kRemoteAtomic);
  Buffer res = f.p.reg(0, 16, kLocal, 0xFF);
  Buffer msg = f.p.reg(0, 64, kLocal, 0x3C);
  Buffer rbuf = f.p.reg(1, 64, kLocal | priv::kRemoteWrite);
  fill_pattern(src.bytes, 17);
  const uint64_t init = 1000;
  std::memcpy(counter.data(), &init, 8);
  f.post_recv(rbuf, 0, 64, 50);
  f.arm({2});  // the WRITE's second packet
  ASSERT_EQ(f.p.a().qp->post_send(rdma_wr(WrOp::kWrite, src, remote, kW, 1)), Qp::PostResult::kOk);
  ASSERT_EQ(f.p.a().qp->post_send(rdma_wr(WrOp::kRead, back, remote, kW, 2)), Qp::PostResult::kOk);
  for (uint64_t i = 0; i < 2; ++i) {
    SendWr fa;
    fa.op = WrOp::kFetchAdd;
    fa.cookie = 3 + i;
    fa.num_sge = 1;
    fa.sge[0] = Sge{res.lmr, res.va() + 8 * i, 8};
    fa.remote_va = counter.va();
    fa.rkey = counter.lmr;
    fa.swap_add = 5;
    ASSERT_EQ(f.p.a().qp->post_send(fa), Qp::PostResult::kOk);
  }
  f.post_send(WrOp::kSend, msg, 0, 64, 5);
  ASSERT_TRUE(f.p.run_until([&] { return f.p.a().scq->size() == 5 && f.p.b().rcq->size() == 1; }));
  ASSERT_TRUE(f.p.settle());
  const auto sc = drain(*f.p.a().scq);
  ASSERT_EQ(sc.size(), 5u);
  for (uint64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(sc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(sc[i].cookie, 1 + i);
  }
  const auto rc = drain(*f.p.b().rcq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].byte_len, 64u);
  EXPECT_EQ(rbuf.bytes, msg.bytes);
  EXPECT_EQ(remote.bytes, src.bytes);
  EXPECT_EQ(back.bytes, src.bytes);  // the READ ran after the hole was filled
  uint64_t r0 = 0, r1 = 0, fin = 0;
  std::memcpy(&r0, res.data(), 8);
  std::memcpy(&r1, res.data() + 8, 8);
  std::memcpy(&fin, counter.data(), 8);
  EXPECT_EQ(r0, 1000u);
  EXPECT_EQ(r1, 1005u);
  EXPECT_EQ(fin, 1010u);
  EXPECT_EQ(f.cb().sr_placed_ahead, 2u);  // the WRITE's packets 3 and 4
  EXPECT_EQ(f.cb().sr_kept, 4u);          // READ, two atomics, SEND
  EXPECT_EQ(f.cb().sr_kept_taken, 4u);
  EXPECT_EQ(f.cb().read_replays, 0u);
  EXPECT_EQ(f.cb().atomic_replays, 0u);
  EXPECT_EQ(f.cb().duplicates_rx, 0u);
  EXPECT_EQ(f.ca().retransmits, 0u);
  EXPECT_EQ(f.ca().sr_resends, 1u);
  EXPECT_EQ(f.sent_a, 8u + 1u);  // 4 WRITE packets, READ, 2 atomics, SEND; the hole again
  EXPECT_EQ(f.p.b().engine->held_bytes(), 0u);
}

// (d) The engine may keep two frames: the rest is refused (counted) and the
// requester sends it again; the transfer still completes exactly, and the
// engine never holds more than its cap.
TEST(SelectiveRepeatHeld, CapOnKeptBytesRefusesTheRest) {
  EngineConfig e;
  const size_t block = held_block(wire::Opcode::kSendMiddle, kPmtu);
  e.held_max_bytes = 2 * block;
  Rig f(cfg(), e);
  const uint32_t sent = two_sends_losing_the_boundary(f);
  EXPECT_EQ(f.p.b().engine->counters().sr_kept_refused, 5u);  // frames 12..16
  EXPECT_EQ(f.cb().sr_kept, 2u);                              // frames 10 and 11
  EXPECT_EQ(f.cb().sr_kept_taken, 2u);
  EXPECT_EQ(f.b_held_peak, 2 * block);
  EXPECT_EQ(f.p.b().engine->held_bytes(), 0u);
  // The SACK shows the refused frames missing: each goes out once more,
  // with the holes, and no retransmission timeout is waited for.
  EXPECT_EQ(f.ca().timeouts, 0u);
  EXPECT_EQ(sent, 16u + 2u + 5u);
}

// (e) Kept frames go back to the engine's pool with their queue pair: when
// it goes to error, and when it is destroyed.  The resends never arrive, so
// the frames stay kept until then.
TEST(SelectiveRepeatHeld, KeptFramesGivenBackOnErrorAndDestroy) {
  for (bool destroy : {false, true}) {
    SCOPED_TRACE(destroy ? "destroy" : "error");
    Rig f;
    Buffer src = f.p.reg(0, 2 * kMsg, kLocal);
    Buffer dst = f.p.reg(1, 2 * kMsg, kLocal | priv::kRemoteWrite);
    f.post_recv(dst, 0, kMsg, 1);
    f.post_recv(dst, kMsg, kMsg, 2);
    f.arm({8, 9}, 17);  // the boundary lost, and everything after the first 16 frames
    f.post_send(WrOp::kSend, src, 0, kMsg, 11);
    f.post_send(WrOp::kSend, src, kMsg, kMsg, 12);
    ASSERT_TRUE(f.p.run_until([&] { return f.cb().sr_kept == 7; }, 1'000'000));
    Engine& eb = *f.p.b().engine;
    EXPECT_EQ(eb.held_bytes(), 7 * held_block(wire::Opcode::kSendMiddle, kPmtu));
    if (destroy) {
      eb.destroy_qp(f.p.b().qp);
      f.p.b().qp = nullptr;
    } else {
      f.p.b().qp->set_error(QpError::kProtocol, f.p.now());
      EXPECT_EQ(f.cb().sr_kept_taken, 0u);
    }
    EXPECT_EQ(eb.held_bytes(), 0u);
  }
}

// The second SEND's FIRST, resent, finds no receive (RNR NAK) while its
// MIDDLE and LAST packets are kept: they stay kept until the receive is
// posted and the FIRST is taken, and none is left behind afterwards.
TEST(SelectiveRepeatHeld, KeptFramesWaitOutAnRnr) {
  Rig f;
  Buffer src = f.p.reg(0, 2 * kMsg, kLocal);
  Buffer dst = f.p.reg(1, 2 * kMsg, kLocal | priv::kRemoteWrite);
  fill_pattern(src.bytes, 31);
  f.post_recv(dst, 0, kMsg, 1);  // none for the second message yet
  f.arm({8, 9});
  f.post_send(WrOp::kSend, src, 0, kMsg, 11);
  f.post_send(WrOp::kSend, src, kMsg, kMsg, 12);
  ASSERT_TRUE(f.p.run_until([&] { return f.cb().rnr_naks_tx >= 1; }, 1'000'000));
  EXPECT_EQ(f.cb().sr_kept, 7u);
  EXPECT_EQ(f.p.b().engine->held_bytes(), 7 * held_block(wire::Opcode::kSendMiddle, kPmtu));
  f.post_recv(dst, kMsg, kMsg, 2);
  ASSERT_TRUE(f.p.run_until([&] { return f.p.b().rcq->size() == 2; }));
  ASSERT_TRUE(f.p.settle());
  const auto rc = drain(*f.p.b().rcq);
  ASSERT_EQ(rc.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(rc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(rc[i].cookie, 1u + i);
    EXPECT_EQ(rc[i].byte_len, kMsg);
  }
  EXPECT_EQ(src.bytes, dst.bytes);
  EXPECT_GE(f.ca().rnr_naks_rx, 1u);
  EXPECT_EQ(f.p.a().qp->state(), QpState::kRts);
  EXPECT_EQ(f.p.b().qp->state(), QpState::kRts);
  EXPECT_EQ(f.p.b().engine->held_bytes(), 0u);
}

// (f) One 384-packet WRITE with its third packet lost, 10 us each way, the
// default window (128 packets).  While the hole is open the requester's
// oldest unacknowledged PSN stays at the hole; the SACKs show the responder
// has what followed, so the requester goes on beyond hole + window (up to
// kHeldSpan past it) instead of waiting a round trip for the repair.  The
// proof: PSNs A sent before B's first ACK that covers the hole.
TEST(SelectiveRepeatHeld, WindowLeavesOutWhatTheSacksShowKept) {
  Rig f;
  LinkImpairment imp;
  imp.delay_ns = 10'000;
  f.p.link().set_impairment(0, imp);
  f.p.link().set_impairment(1, imp);
  constexpr uint32_t kPkts = 384;
  Buffer src = f.p.reg(0, kPkts * kPmtu, kLocal);
  Buffer dst = f.p.reg(1, kPkts * kPmtu, kLocal | priv::kRemoteWrite);
  fill_pattern(src.bytes, 29);
  f.arm({3});
  const uint32_t hole = 2;  // PSN offset of the third packet
  ASSERT_EQ(f.p.a().qp->post_send(rdma_wr(WrOp::kWrite, src, dst, kPkts * kPmtu, 1)),
            Qp::PostResult::kOk);
  ASSERT_TRUE(f.p.run_until([&] { return f.p.a().scq->size() == 1; }));
  ASSERT_TRUE(f.p.settle());
  EXPECT_EQ(src.bytes, dst.bytes);
  EXPECT_EQ(f.ca().retransmits, 0u);
  EXPECT_EQ(f.ca().sr_resends, 1u);
  EXPECT_GE(f.ca().sacks_rx, 1u);
  EXPECT_EQ(f.sent_a, kPkts + 1);
  const uint32_t window = QpConfig{}.window;
  uint32_t max_sent = 0;
  bool covered = false;
  for (const Rig::Sent& s : f.log) {
    if (s.from == 1 && s.op == wire::Opcode::kAck &&
        wire::aeth::type(s.syndrome) == wire::aeth::kAck && s.psn_off >= hole &&
        s.psn_off < (1u << 23)) {
      covered = true;
      break;
    }
    if (s.from == 0) max_sent = std::max(max_sent, s.psn_off);
  }
  ASSERT_TRUE(covered);
  EXPECT_GE(max_sent, hole + window) << "the requester stopped at una + window";
  EXPECT_LT(max_sent, hole + 256u);  // kHeldSpan past the hole at most
}

}  // namespace
}  // namespace dpdat::rc::test
