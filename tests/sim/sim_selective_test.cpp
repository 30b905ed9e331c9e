// Selective repeat beyond self-describing WRITEs: holes in SEND and in RDMA
// WRITE with immediate are resent alone while the responder keeps what
// followed them (placed by PSN offset, completed in order once whole), and
// holes in READ responses are asked for again by range.  Each test runs the
// same losses under go-back-N too, which resends the window: that difference
// is what the counters and frame counts check.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness.hpp"
#include "parse_frame.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint32_t kLocal = priv::kLocalRead | priv::kLocalWrite;
constexpr uint32_t kPmtu = 1024;

QpConfig cfg(bool sr) {
  QpConfig c;
  c.pmtu = kPmtu;
  c.selective_repeat = sr;
  return c;
}

// A pair with targeted losses: the frames numbered in `drop_a` (1-based,
// counted from arm()) that A sends, and those in `drop_b` that B sends, are
// lost once each.  Counts every frame and every READ request A sends.
struct Lossy {
  Pair p;
  std::vector<uint32_t> drop_a, drop_b;
  uint32_t sent_a = 0, sent_b = 0;
  std::vector<uint64_t> times_a;                         // when A sent each frame since arm()
  std::vector<std::pair<uint32_t, uint32_t>> read_reqs;  // (PSN offset, DMA length)
  uint32_t read_first_psn = 0;

  explicit Lossy(bool sr) : p(33, cfg(sr)) {
    p.link().set_filter([this](int from_end, const uint8_t* data, uint32_t len) {
      if (from_end == 0) {
        ++sent_a;
        times_a.push_back(p.now());
        const wire::PacketView v = parse(data, len);
        if (v.opcode == wire::Opcode::kReadRequest)
          read_reqs.emplace_back((v.bth->psn().value() - read_first_psn) & 0xFFFFFF,
                                 v.reth->dma_len.value());
        return std::find(drop_a.begin(), drop_a.end(), sent_a) == drop_a.end();
      }
      ++sent_b;
      return std::find(drop_b.begin(), drop_b.end(), sent_b) == drop_b.end();
    });
  }
  void arm(std::vector<uint32_t> a, std::vector<uint32_t> b = {}) {
    drop_a = std::move(a);
    drop_b = std::move(b);
    sent_a = sent_b = 0;
    times_a.clear();
    read_reqs.clear();
  }
  // A few lossless small READs: the round trip is measured, so the tail-loss
  // probe is armed.
  void warm_up() {
    Buffer l = p.reg(0, 64, kLocal);
    Buffer r = p.reg(1, 64, kLocal | priv::kRemoteRead);
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ(p.a().qp->post_send(rdma_wr(WrOp::kRead, l, r, 64)), Qp::PostResult::kOk);
      ASSERT_TRUE(p.settle());
    }
    ASSERT_TRUE(p.a().qp->rtt().valid());
    (void)drain(*p.a().scq);
  }
  const QpCounters& ca() { return p.a().qp->counters(); }
  const QpCounters& cb() { return p.b().qp->counters(); }
};

SendWr send_wr(WrOp op, const Buffer& src, uint64_t off, uint64_t len, uint64_t cookie) {
  SendWr w;
  w.op = op;
  w.cookie = cookie;
  w.flags = wr_flag::kSignaled;
  w.num_sge = 1;
  w.sge[0] = Sge{src.lmr, src.va() + off, len};
  w.imm = 0xC0DE0000u + static_cast<uint32_t>(cookie);
  return w;
}

void post_recv(Pair& p, const Buffer& dst, uint64_t off, uint64_t len, uint64_t cookie) {
  RecvWr r;
  r.cookie = cookie;
  r.num_sge = 1;
  r.sge[0] = Sge{dst.lmr, dst.va() + off, len};
  ASSERT_EQ(p.b().qp->post_recv(r), Qp::PostResult::kOk);
}

// `n` SENDs (or WRITEs with immediate) of `len` bytes back to back, with A's
// frames in `drops` lost; every message byte-exact, completions in order.
// Returns the frames A sent.
uint32_t messages(Lossy& f, WrOp op, uint32_t n, uint64_t len, std::vector<uint32_t> drops) {
  Buffer src = f.p.reg(0, n * len, kLocal);
  Buffer dst = f.p.reg(1, n * len, kLocal | priv::kRemoteWrite);
  fill_pattern(src.bytes, 77);
  for (uint32_t i = 0; i < n; ++i) post_recv(f.p, dst, i * len, len, 100 + i);
  f.arm(std::move(drops));
  for (uint32_t i = 0; i < n; ++i) {
    SendWr w = send_wr(op, src, i * len, len, 1 + i);
    w.remote_va = dst.va() + i * len;
    w.rkey = dst.lmr;
    EXPECT_EQ(f.p.a().qp->post_send(w), Qp::PostResult::kOk);
  }
  EXPECT_TRUE(f.p.run_until([&] { return f.p.a().scq->size() == n && f.p.b().rcq->size() == n; }));
  EXPECT_TRUE(f.p.settle());
  const auto sc = drain(*f.p.a().scq);
  const auto rc = drain(*f.p.b().rcq);
  EXPECT_EQ(sc.size(), n);
  EXPECT_EQ(rc.size(), n);
  for (uint32_t i = 0; i < n && i < sc.size() && i < rc.size(); ++i) {
    EXPECT_EQ(sc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(sc[i].cookie, 1u + i);
    EXPECT_EQ(rc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(rc[i].cookie, 100u + i);  // in order
    EXPECT_EQ(rc[i].byte_len, len);
    if (op == WrOp::kWriteImm) {
      EXPECT_EQ(rc[i].op, WcOp::kRecvWriteImm);
      EXPECT_TRUE(rc[i].has_imm);
      EXPECT_EQ(rc[i].imm, 0xC0DE0001u + i);
    } else {
      EXPECT_EQ(rc[i].op, WcOp::kRecv);
    }
  }
  EXPECT_EQ(src.bytes, dst.bytes);
  EXPECT_EQ(f.p.a().qp->state(), QpState::kRts);
  return f.sent_a;
}

// One 64 KiB message (64 packets) losing two middle packets: only those two
// go out again.
TEST(SelectiveRepeat, SendHolesResentAlone) {
  for (bool sr : {true, false}) {
    Lossy f(sr);
    const uint32_t sent = messages(f, WrOp::kSend, 1, 65536, {10, 30});
    if (sr) {
      EXPECT_EQ(f.ca().retransmits, 0u);  // no go-back-N rewind
      EXPECT_EQ(f.ca().sr_resends, 2u);
      EXPECT_EQ(f.cb().sr_placed_ahead, 62u - 9u);  // after the first hole, all but the second
      EXPECT_EQ(sent, 66u);
      EXPECT_EQ(f.ca().timeouts, 0u);
    } else {
      EXPECT_GE(f.ca().retransmits, 1u);
      EXPECT_GE(sent, 64u + 55u);  // the window from packet 10 on, again
    }
  }
}

TEST(SelectiveRepeat, WriteImmHolesResentAlone) {
  for (bool sr : {true, false}) {
    Lossy f(sr);
    const uint32_t sent = messages(f, WrOp::kWriteImm, 1, 65536, {2, 40, 63});
    if (sr) {
      EXPECT_EQ(f.ca().retransmits, 0u);
      EXPECT_EQ(f.ca().sr_resends, 3u);
      EXPECT_EQ(f.cb().sr_placed_ahead, 62u - 2u);  // after the first hole, all but two
      EXPECT_EQ(sent, 67u);
      EXPECT_EQ(f.ca().timeouts, 0u);
    } else {
      EXPECT_GE(sent, 64u + 62u);
    }
  }
}

// A SEND whose FIRST is lost: the responder places the rest into the
// receive WQE the FIRST will take (the MIDDLE right after the hole proves
// the message began there), so only the FIRST goes out again.
TEST(SelectiveRepeat, SendWithLostFirstResentAlone) {
  for (bool sr : {true, false}) {
    Lossy f(sr);
    const uint32_t sent = messages(f, WrOp::kSend, 1, 65536, {1});
    if (sr) {
      EXPECT_EQ(f.ca().retransmits, 0u);
      EXPECT_EQ(f.ca().sr_resends, 1u);
      EXPECT_EQ(f.cb().sr_placed_ahead, 63u);
      EXPECT_EQ(sent, 65u);
      EXPECT_EQ(f.ca().timeouts, 0u);
    } else {
      EXPECT_GE(sent, 128u);  // the whole message again
    }
  }
}

// Several SENDs in flight, holes in three of them.  While a hole is open the
// responder places the message in progress and the ones after it (each
// SEND's receive WQE is the one after the previous SEND's, known once the
// previous LAST and this FIRST arrived): every hole is resent alone.
TEST(SelectiveRepeat, SeveralHolesAcrossMessages) {
  for (bool sr : {true, false}) {
    Lossy f(sr);
    f.warm_up();
    // 6 SENDs of 16 packets; holes at packets 4 and 10 of message 0, in
    // messages 2 and 4.
    const uint32_t sent = messages(f, WrOp::kSend, 6, 16 * kPmtu, {5, 11, 38, 72});
    EXPECT_EQ(f.ca().timeouts, 0u);
    if (sr) {
      EXPECT_EQ(f.ca().retransmits, 0u);  // no go-back-N
      EXPECT_EQ(f.ca().sr_resends, 4u);
      EXPECT_EQ(f.cb().sr_placed_ahead, 96u - 5u - 3u);  // all after the first hole
      EXPECT_EQ(sent, 96u + 4u);
    } else {
      EXPECT_GE(sent, 96u + 92u);  // from packet 4 on, again
    }
  }
}

// Two messages in flight, a hole in each: the second message (the SEND
// that begins right after the first's placed LAST, or a WRITE with
// immediate, whose FIRST names its target) is placed while the first hole is
// open, so only the two holes go out again.
TEST(SelectiveRepeat, NextMessagePlacedWhileAHoleIsOpen) {
  for (WrOp op : {WrOp::kSend, WrOp::kWriteImm}) {
    for (bool sr : {true, false}) {
      Lossy f(sr);
      f.warm_up();
      const uint32_t sent = messages(f, op, 2, 32 * kPmtu, {5, 40});
      EXPECT_EQ(f.ca().timeouts, 0u);
      if (sr) {
        EXPECT_EQ(f.ca().retransmits, 0u) << static_cast<int>(op);
        EXPECT_EQ(f.ca().sr_resends, 2u);
        EXPECT_EQ(sent, 64u + 2u);
        EXPECT_EQ(f.cb().sr_placed_ahead, 64u - 4u - 2u);
      } else {
        EXPECT_GE(sent, 64u + 59u);  // from packet 4 on, again
      }
    }
  }
}

// WRITE without immediate is self-describing per packet: holes in several
// WRITEs at once are all resent alone.
TEST(SelectiveRepeat, SeveralHolesAcrossWrites) {
  Lossy f(true);
  f.warm_up();
  Buffer src = f.p.reg(0, 6 * 16 * kPmtu, kLocal);
  Buffer dst = f.p.reg(1, 6 * 16 * kPmtu, kLocal | priv::kRemoteWrite);
  fill_pattern(src.bytes, 12);
  f.arm({5, 38, 72});
  for (uint64_t i = 0; i < 6; ++i) {
    SendWr w = rdma_wr(WrOp::kWrite, src, dst, 16 * kPmtu, 1 + i);
    w.sge[0].va += i * 16 * kPmtu;
    w.remote_va += i * 16 * kPmtu;
    w.flags = wr_flag::kSignaled;
    ASSERT_EQ(f.p.a().qp->post_send(w), Qp::PostResult::kOk);
  }
  ASSERT_TRUE(f.p.run_until([&] { return f.p.a().scq->size() == 6; }));
  ASSERT_TRUE(f.p.settle());
  EXPECT_EQ(src.bytes, dst.bytes);
  EXPECT_EQ(f.ca().retransmits, 0u);
  EXPECT_EQ(f.ca().timeouts, 0u);
  EXPECT_EQ(f.sent_a, 96u + 3u);
}

// The LAST of one SEND and the FIRST of the next are both lost: the
// responder cannot tell where the first message ends, so it must not place
// the second's MIDDLE packets as the first's (they would stay in its receive
// buffer past its end).  They wait for the resend; nothing past the first
// message's 4 KiB changes.  A single lost packet inside a SEND is still
// placed around (SendHolesResentAlone).
TEST(SelectiveRepeat, SendNotPlacedPastItsEnd) {
  Lossy f(true);
  // Receive buffers larger than the messages, so a misplacement would fit.
  Buffer src = f.p.reg(0, 2 * 4096, kLocal);
  Buffer dst = f.p.reg(1, 2 * 16384, kLocal | priv::kRemoteWrite, 0xA5);
  fill_pattern(src.bytes, 9);
  post_recv(f.p, dst, 0, 16384, 1);
  post_recv(f.p, dst, 16384, 16384, 2);
  f.arm({4, 5});  // LAST of message 1, FIRST of message 2
  ASSERT_EQ(f.p.a().qp->post_send(send_wr(WrOp::kSend, src, 0, 4096, 11)), Qp::PostResult::kOk);
  ASSERT_EQ(f.p.a().qp->post_send(send_wr(WrOp::kSend, src, 4096, 4096, 12)), Qp::PostResult::kOk);
  ASSERT_TRUE(f.p.run_until([&] { return f.p.b().rcq->size() == 2; }));
  ASSERT_TRUE(f.p.settle());
  const auto rc = drain(*f.p.b().rcq);
  ASSERT_EQ(rc.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(rc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(rc[i].cookie, 1u + i);
    EXPECT_EQ(rc[i].byte_len, 4096u);
    const auto from = static_cast<std::ptrdiff_t>(i * 4096);
    const auto at = dst.bytes.begin() + static_cast<std::ptrdiff_t>(i * 16384);
    EXPECT_TRUE(std::equal(src.bytes.begin() + from, src.bytes.begin() + from + 4096, at));
    EXPECT_TRUE(std::all_of(at + 4096, at + 16384, [](uint8_t b) { return b == 0xA5; }))
        << "receive buffer " << i << " written past the message's end";
  }
  EXPECT_EQ(f.cb().sr_placed_ahead, 0u);  // message 2's packets 2 and 3 waited
  EXPECT_EQ(f.p.a().qp->state(), QpState::kRts);
  EXPECT_EQ(f.p.b().qp->state(), QpState::kRts);
}

// Three holes in one 64-packet WRITE, a 2 us link each way: the responder's
// NAK for the first hole, and its repeats on the packets that ask for an
// answer, come with a selective acknowledgement (wire::Opcode::kSack) that
// shows every hole seen so far, so all three go out again together and the
// WRITE completes about one round trip after the first NAK, not one round
// trip per hole.
TEST(SelectiveRepeat, SeveralHolesRepairedInOneRoundTrip) {
  Lossy f(true);
  LinkImpairment imp;
  imp.delay_ns = 2'000;
  f.p.link().set_impairment(0, imp);
  f.p.link().set_impairment(1, imp);
  f.warm_up();
  Buffer src = f.p.reg(0, 65536, kLocal);
  Buffer dst = f.p.reg(1, 65536, kLocal | priv::kRemoteWrite);
  fill_pattern(src.bytes, 21);
  f.arm({5, 20, 40});
  SendWr w = rdma_wr(WrOp::kWrite, src, dst, 65536, 7);
  w.flags = wr_flag::kSignaled;
  const uint64_t t0 = f.p.now();
  ASSERT_EQ(f.p.a().qp->post_send(w), Qp::PostResult::kOk);
  ASSERT_TRUE(f.p.run_until([&] { return f.p.a().scq->size() == 1; }));
  const uint64_t took = f.p.now() - t0;
  ASSERT_TRUE(f.p.settle());
  EXPECT_EQ(src.bytes, dst.bytes);
  EXPECT_EQ(f.ca().retransmits, 0u);
  EXPECT_EQ(f.ca().timeouts, 0u);
  EXPECT_EQ(f.ca().sr_resends, 3u);
  EXPECT_GE(f.ca().sacks_rx, 1u);
  ASSERT_EQ(f.sent_a, 64u + 3u);
  // The three resends leave within one simulator step (1 us) of each other ...
  EXPECT_LE(f.times_a[66] - f.times_a[64], 1'000u);
  // ... and the WRITE takes two round trips (4 us each): its packets and
  // the NAK, the resends and their ACK; one hole after the other takes four.
  EXPECT_LT(took, 3 * 4'000u);
}

// A 64 KiB READ whose responses 5, 6 and 20 are lost: the requester places
// the rest as they come and asks again for [4, 6) and [19, 20) only.
TEST(SelectiveRepeat, ReadResponseHolesReRequestedByRange) {
  for (bool sr : {true, false}) {
    Lossy f(sr);
    Buffer local = f.p.reg(0, 65536, kLocal);
    Buffer remote = f.p.reg(1, 65536, kLocal | priv::kRemoteRead);
    fill_pattern(remote.bytes, 4);
    f.arm({}, {5, 6, 20});
    f.read_first_psn = kFirstPsnA;
    SendWr w = rdma_wr(WrOp::kRead, local, remote, 65536, 5);
    w.flags = wr_flag::kSignaled;
    ASSERT_EQ(f.p.a().qp->post_send(w), Qp::PostResult::kOk);
    ASSERT_TRUE(f.p.run_until([&] { return f.p.a().scq->size() == 1; }));
    ASSERT_TRUE(f.p.settle());
    const auto sc = drain(*f.p.a().scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
    EXPECT_EQ(local.bytes, remote.bytes);
    if (sr) {
      ASSERT_EQ(f.read_reqs.size(), 3u);
      EXPECT_EQ(f.read_reqs[0], std::make_pair(0u, 65536u));
      EXPECT_EQ(f.read_reqs[1], std::make_pair(4u, 2u * kPmtu));
      EXPECT_EQ(f.read_reqs[2], std::make_pair(19u, kPmtu));
      EXPECT_EQ(f.sent_b, 64u + 3u);  // every response once, the three lost ones twice
      EXPECT_EQ(f.ca().sr_placed_ahead, 64u - 4u - 3u);
      EXPECT_EQ(f.ca().timeouts, 0u);
    } else {
      EXPECT_GE(f.sent_b, 64u + 60u);  // from response 5 to the end, again
    }
  }
}

// Holes in several READs at once, and a re-requested range lost again: the
// answer to a re-request sent after it shows it lost, and it is asked for
// again without a tail-loss probe.
TEST(SelectiveRepeat, SeveralReadsWithHolesAndALostReRequest) {
  Lossy f(true);
  f.warm_up();
  Buffer local = f.p.reg(0, 4 * 16384, kLocal);
  Buffer remote = f.p.reg(1, 4 * 16384, kLocal | priv::kRemoteRead);
  fill_pattern(remote.bytes, 8);
  // Responses: 16 per READ.  Lose response 3 of READ 1 and its first resend
  // (the 65th frame B sends: after all 64 first responses), 20 (READ 2), 50 (READ 4).
  f.arm({}, {3, 20, 50, 65});
  for (uint64_t i = 0; i < 4; ++i) {
    SendWr w = rdma_wr(WrOp::kRead, local, remote, 16384, 1 + i);
    w.sge[0].va += i * 16384;
    w.remote_va += i * 16384;
    w.flags = wr_flag::kSignaled;
    ASSERT_EQ(f.p.a().qp->post_send(w), Qp::PostResult::kOk);
  }
  ASSERT_TRUE(f.p.run_until([&] { return f.p.a().scq->size() == 4; }));
  ASSERT_TRUE(f.p.settle());
  const auto sc = drain(*f.p.a().scq);
  ASSERT_EQ(sc.size(), 4u);
  for (uint64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(sc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(sc[i].cookie, 1 + i);
  }
  EXPECT_EQ(local.bytes, remote.bytes);
  EXPECT_EQ(f.ca().retransmits, 0u);
  EXPECT_EQ(f.ca().timeouts, 0u);
  EXPECT_EQ(f.ca().tlp_probes, 0u);  // the lost resend: judged by order
  EXPECT_LE(f.sent_b, 64u + 6u);
}

}  // namespace
}  // namespace dpdat::rc::test

namespace dpdat::rc::test {
namespace {

// Selective repeat at PMTU 1024 with room for a batch of 64 KiB messages,
// over a 25 Gb/s link with 2 us each way and 1 % random loss.
QpConfig nak_test_config() {
  QpConfig c;
  c.pmtu = 1024;
  c.selective_repeat = true;
  c.sq_depth = 512;
  c.rq_depth = 512;
  c.retry_count = 30;
  return c;
}
LinkImpairment nak_test_link() {
  LinkImpairment imp;
  imp.loss = 0.01;
  imp.delay_ns = 2'000;
  imp.rate_bps = 25'000'000'000ull;
  return imp;
}

// A stream of 64 KiB SENDs at 1 % random loss each way into a receiving host
// that is descheduled now and then (LinkImpairment::stall_ns), so the time
// from a NAK to the resend it asks for varies with the queue in front of it.
// The responder repeats a NAK (on a packet asking for an answer) only once
// the resend is overdue by that time's spread, not merely past its mean:
// repeats stay a small share of the NAKs, and the data is exact.
TEST(SelectiveRepeatNaks, RepeatedOnlyWhenTheResendIsOverdue) {
  Pair p(43, nak_test_config(), 8192);
  LinkImpairment imp = nak_test_link();
  p.link().set_impairment(0, imp);
  imp.stall_period_ns = 97'000;
  imp.stall_ns = 23'000;
  p.link().set_impairment(1, imp);
  constexpr size_t kMsg = 65536, kBatch = 64, kRounds = 8;
  Buffer a = p.reg(0, kMsg * kBatch, priv::kLocalRead | priv::kLocalWrite);
  Buffer b = p.reg(1, kMsg * kBatch, priv::kLocalRead | priv::kLocalWrite);
  for (size_t round = 0; round < kRounds; ++round) {
    fill_pattern(a.bytes, static_cast<uint32_t>(round + 1));
    for (size_t i = 0; i < kBatch; ++i) {
      RecvWr r;
      r.cookie = i;
      r.num_sge = 1;
      r.sge[0] = Sge{b.lmr, b.va() + i * kMsg, kMsg};
      ASSERT_EQ(p.b().qp->post_recv(r), Qp::PostResult::kOk);
      SendWr w;
      w.op = WrOp::kSend;
      w.cookie = i;
      w.num_sge = 1;
      w.sge[0] = Sge{a.lmr, a.va() + i * kMsg, kMsg};
      ASSERT_EQ(p.a().qp->post_send(w), Qp::PostResult::kOk);
    }
    ASSERT_TRUE(p.run_until([&] { return p.b().rcq->size() == kBatch; }));
    for (const Completion& wc : drain(*p.b().rcq)) ASSERT_EQ(wc.status, WcStatus::kSuccess);
    (void)drain(*p.a().scq);
    ASSERT_EQ(a.bytes, b.bytes) << "round " << round;
  }
  const QpCounters& rb = p.b().qp->counters();
  const uint64_t lost = p.link().stats(0).dropped;
  ASSERT_GT(lost, 100u);
  // With the repeat due at the mean repair time (no spread, no backoff)
  // this run repeated 7 NAKs per loss; due as now, under 3.
  EXPECT_LT(rb.seq_nak_repeats, 4 * lost) << rb.seq_naks_tx << " NAKs for " << lost << " losses";
}

// A loss seen while an earlier hole is open is reported at once (a NAK with
// its SACK); when the earlier hole is repaired and the later one becomes
// the next expected PSN, the SACK that showed it missing stands for the
// NAK.  Without that this run sent 1.7 first NAKs (repeats aside) per loss,
// with it under one.
TEST(SelectiveRepeatNaks, HoleShownBySackIsNotNakedAgain) {
  Pair p(44, nak_test_config(), 8192);
  p.link().set_impairment(0, nak_test_link());
  p.link().set_impairment(1, nak_test_link());
  constexpr size_t kMsg = 65536, kBatch = 64, kRounds = 8;
  Buffer a = p.reg(0, kMsg * kBatch, priv::kLocalRead | priv::kLocalWrite);
  Buffer b = p.reg(1, kMsg * kBatch, priv::kLocalRead | priv::kLocalWrite | priv::kRemoteWrite);
  for (size_t round = 0; round < kRounds; ++round) {
    fill_pattern(a.bytes, static_cast<uint32_t>(round + 7));
    for (size_t i = 0; i < kBatch; ++i) {
      SendWr w = rdma_wr(WrOp::kWrite, a, b, kMsg, i, i * kMsg, i * kMsg);
      w.flags = i + 1 == kBatch ? wr_flag::kSignaled : 0u;
      ASSERT_EQ(p.a().qp->post_send(w), Qp::PostResult::kOk);
    }
    ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
    for (const Completion& wc : drain(*p.a().scq)) ASSERT_EQ(wc.status, WcStatus::kSuccess);
    ASSERT_EQ(a.bytes, b.bytes) << "round " << round;
  }
  const QpCounters& rb = p.b().qp->counters();
  const uint64_t lost = p.link().stats(0).dropped;
  ASSERT_GT(lost, 100u);
  EXPECT_GT(rb.seq_naks_spared, 0u);
  EXPECT_LT(rb.seq_naks_tx - rb.seq_nak_repeats, lost + lost / 5)
      << rb.seq_naks_tx << " NAKs (" << rb.seq_nak_repeats << " repeats, " << rb.seq_naks_spared
      << " spared) for " << lost << " losses";
}

// A link that delivers a whole window at once (as net_memif does between
// two polling processes): the requester is always a window ahead.  While the
// hole it lost is repaired, the responder SACKs again every
// Qp::kSackRefresh packets that arrive after it, so the requester counts
// them out of its window and goes on sending up to 256 PSNs past the hole.
// With only the SACK that came with the NAK it would stop a window (128)
// past the hole until the repair is acknowledged.  (A first SEND, alone,
// loses its first packet: that repair teaches the responder how long one
// takes, so it does not repeat its NAK, with a SACK, while the second hole
// is repaired.)
TEST(SelectiveRepeat, SackRefreshKeepsTheRequesterSendingWhileAHoleIsRepaired) {
  Pair p(35, cfg(true));
  LinkImpairment imp;
  imp.delay_ns = 2'000;
  p.link().set_impairment(0, imp);
  p.link().set_impairment(1, imp);
  constexpr uint32_t kMsgs = 12;
  constexpr uint64_t kLen = 65536;
  Buffer src = p.reg(0, kMsgs * kLen, kLocal);
  Buffer dst = p.reg(1, (kMsgs + 1) * kLen, kLocal | priv::kRemoteWrite);
  fill_pattern(src.bytes, 35);
  for (uint32_t i = 0; i <= kMsgs; ++i) post_recv(p, dst, i * kLen, kLen, 100 + i);
  // PSN offsets of the packets lost: the first SEND's first (it has two),
  // and one in the stream after it.
  constexpr uint32_t kFirstHole = 0, kHole = 2 + 300;
  uint32_t a_frames = 0;          // request frames A sent so far
  uint32_t frames_at_ack = 0;     // ... when B first acknowledged the hole
  std::vector<uint32_t> offsets;  // PSN offset of each request frame A sent
  bool dropped = false, dropped_first = false;
  p.link().set_filter([&](int from_end, const uint8_t* data, uint32_t len) {
    const wire::PacketView v = parse(data, len);
    const uint32_t off = (v.bth->psn().value() - kFirstPsnA) & 0xFFFFFF;
    if (from_end == 0) {
      ++a_frames;
      offsets.push_back(off);
      if (off == kFirstHole && !dropped_first) {
        dropped_first = true;
        return false;
      }
      if (off == kHole && !dropped) {
        dropped = true;
        return false;
      }
    } else if (frames_at_ack == 0 && v.opcode == wire::Opcode::kAck && v.aeth != nullptr &&
               wire::aeth::type(v.aeth->syndrome) == wire::aeth::kAck && off >= kHole &&
               off < (1u << 23)) {
      frames_at_ack = a_frames;
    }
    return true;
  });
  ASSERT_EQ(p.a().qp->post_send(send_wr(WrOp::kSend, src, 0, 2 * kPmtu, 100)), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1 && p.b().rcq->size() == 1; }));
  ASSERT_TRUE(p.settle());
  EXPECT_EQ(p.b().qp->counters().seq_nak_repeats, 0u);
  for (uint32_t i = 0; i < kMsgs; ++i)
    ASSERT_EQ(p.a().qp->post_send(send_wr(WrOp::kSend, src, i * kLen, kLen, 1 + i)),
              Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until(
      [&] { return p.a().scq->size() == kMsgs + 1 && p.b().rcq->size() == kMsgs + 1; }));
  ASSERT_TRUE(p.settle());
  const auto rc = drain(*p.b().rcq);
  for (const Completion& wc : rc) EXPECT_EQ(wc.status, WcStatus::kSuccess);
  for (const Completion& wc : drain(*p.a().scq)) EXPECT_EQ(wc.status, WcStatus::kSuccess);
  EXPECT_TRUE(std::equal(src.bytes.begin(), src.bytes.begin() + 2 * kPmtu, dst.bytes.begin()));
  EXPECT_TRUE(std::equal(src.bytes.begin(), src.bytes.end(), dst.bytes.begin() + kLen));
  ASSERT_TRUE(dropped);
  ASSERT_GT(frames_at_ack, 0u);
  const uint32_t reach =
      *std::max_element(offsets.begin(), offsets.begin() + frames_at_ack) - kHole;
  EXPECT_GT(reach, cfg(true).window + 32u)
      << "the requester stopped " << reach << " PSNs past the hole";
  EXPECT_LT(reach, 256u);
  EXPECT_GT(p.b().qp->counters().sack_refreshes, 0u);
  EXPECT_EQ(p.a().qp->counters().sr_resends, 2u);
  EXPECT_EQ(p.a().qp->counters().timeouts, 0u);
}

}  // namespace
}  // namespace dpdat::rc::test
