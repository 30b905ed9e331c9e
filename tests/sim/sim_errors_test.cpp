// Error paths on the simulated link: protection failures reach their NAK and
// completion error, RNR, retry exhaustion, PSN wrap, bind and barrier fencing,
// signalling, completion-queue back-pressure.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint32_t kLocal = priv::kLocalRead | priv::kLocalWrite;

QpConfig cfg() {
  QpConfig c;
  c.pmtu = 1024;
  return c;
}

// Every frame `from_end` offered, parsed.
std::vector<wire::PacketView> frames_from(Pair& p, int from_end) {
  std::vector<wire::PacketView> out;
  for (const auto& c : p.link().captured()) {
    if (c.from_end != from_end) continue;
    wire::PacketView v;
    if (wire::parse_packet(c.bytes, wire::ParseOptions{.pmtu = 4096, .full_segments = false}, v) ==
        wire::Reject::kNone)
      out.push_back(v);
  }
  return out;
}

bool saw_nak(Pair& p, int from_end, uint8_t code) {
  for (const auto& v : frames_from(p, from_end))
    if (v.opcode == wire::Opcode::kAck &&
        v.aeth->syndrome == wire::aeth::make(wire::aeth::kNak, code))
      return true;
  return false;
}

enum class Bad {
  kWrongKey,
  kStaleAfterFree,
  kStaleAfterRebind,
  kWrongPz,
  kNoPrivilege,
  kOobLow,
  kOobHigh,
  kLengthOverflow
};

struct ProtCase {
  Bad bad;
  WrOp op;
};

class Protection : public ::testing::TestWithParam<ProtCase> {};

TEST_P(Protection, RemoteAccessErrorNakAndCompletion) {
  const ProtCase pc = GetParam();
  Pair p(5, cfg());
  p.link().set_capture(true);
  const size_t n = 4096;
  Buffer local = p.reg(0, n, kLocal, 0x11);
  // Remote memory: a plain LMR with remote read+write, or an RMR bound over it.
  std::vector<uint8_t> remote(n + 64, 0x22);
  uint8_t* base = remote.data() + 32;
  const uint64_t va = reinterpret_cast<uint64_t>(base);
  uint32_t pz = p.b().pz;
  if (pc.bad == Bad::kWrongPz) pz = p.b().pz + 1;
  uint32_t privs = kLocal | priv::kRemoteRead | priv::kRemoteWrite;
  if (pc.bad == Bad::kNoPrivilege) privs = kLocal;  // no remote rights at all
  uint32_t lmr = 0;
  ASSERT_TRUE(p.b().mr->mr_register(pz, base, va, n, privs, &lmr));
  uint32_t rkey = lmr;
  uint64_t target = va;
  uint64_t len = n;
  switch (pc.bad) {
    case Bad::kWrongKey:
      rkey = lmr ^ 0x5A00;
      break;
    case Bad::kStaleAfterFree: {
      bool in_use = true;
      ASSERT_EQ(p.b().mr->mr_free(lmr, &in_use), AccessError::kOk);
      ASSERT_FALSE(in_use);
      break;
    }
    case Bad::kStaleAfterRebind: {
      uint32_t rmr = 0;
      ASSERT_TRUE(p.b().mr->mw_alloc(p.b().pz, &rmr));
      const uint32_t rp = priv::kRemoteRead | priv::kRemoteWrite;
      ASSERT_EQ(p.b().mr->check_bind(rmr, lmr, va, n, rp, p.b().pz), BindError::kOk);
      const uint32_t old_ctx = p.b().mr->do_bind(rmr, lmr, va, n, rp);
      ASSERT_EQ(p.b().mr->check_bind(rmr, lmr, va, n / 2, rp, p.b().pz), BindError::kOk);
      const uint32_t new_ctx = p.b().mr->do_bind(rmr, lmr, va, n / 2, rp);
      ASSERT_NE(old_ctx, new_ctx);
      rkey = old_ctx;
      len = n / 2;
      break;
    }
    case Bad::kOobLow:
      target = va - 1;
      break;
    case Bad::kOobHigh:
      len = n + 1;
      break;
    case Bad::kLengthOverflow:
      target = ~uint64_t{0} - 100;
      len = 200;
      break;
    default:
      break;
  }
  SendWr wr;
  wr.op = pc.op;
  wr.cookie = 42;
  wr.num_sge = 1;
  wr.sge[0] = Sge{local.lmr, local.va(), std::min<uint64_t>(len, n)};
  if (pc.bad == Bad::kOobHigh) {
    // One byte past the end needs a longer local buffer.
    local = p.reg(0, n + 1, kLocal, 0x11);
    wr.sge[0] = Sge{local.lmr, local.va(), n + 1};
  }
  if (pc.bad == Bad::kLengthOverflow) wr.sge[0].length = len;
  wr.remote_va = target;
  wr.rkey = rkey;
  ASSERT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kOk);
  // A second WR behind it must be flushed, not executed.
  SendWr wr2 = wr;
  wr2.cookie = 43;
  wr2.rkey = lmr;
  wr2.remote_va = va;
  wr2.sge[0].length = 8;
  ASSERT_EQ(p.a().qp->post_send(wr2), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 2; }));
  auto c = drain(*p.a().scq);
  EXPECT_EQ(c[0].cookie, 42u);
  EXPECT_EQ(c[0].status, WcStatus::kRemoteAccessError) << wc_status_name(c[0].status);
  EXPECT_EQ(c[1].cookie, 43u);
  EXPECT_EQ(c[1].status, WcStatus::kFlushed);
  EXPECT_EQ(p.a().qp->state(), QpState::kError);
  EXPECT_EQ(p.a().qp->error(), QpError::kRemoteAccess);
  EXPECT_EQ(p.b().qp->state(), QpState::kError);
  EXPECT_TRUE(saw_nak(p, 1, wire::aeth::kNakRemoteAccessError));
  // Counted by reason on B's engine: one rkey error, one refused key check.
  const EngineCounters& bc = p.b().engine->counters();
  EXPECT_EQ(bc.resp_errors[static_cast<size_t>(Qp::RespState::kErrRkey) -
                           static_cast<size_t>(Qp::RespState::kErrLength)],
            1u);
  uint64_t refused = 0;
  for (uint64_t k : bc.rkey_refused) refused += k;
  EXPECT_EQ(refused, 1u);
  // Nothing outside the registered range moved, ever.  Inside it, nothing
  // moved either, except in one case: with selective repeat each WRITE packet
  // is checked on its own, so the in-bounds packets of a WRITE whose last
  // packet runs past the end are placed before the failing one is refused
  // (DAT leaves the target range undefined after a failed RDMA Write).
  for (size_t i = 0; i < 32; ++i) ASSERT_EQ(remote[i], 0x22);
  for (size_t i = 32 + n; i < remote.size(); ++i) ASSERT_EQ(remote[i], 0x22);
  const bool partial_ok = pc.bad == Bad::kOobHigh && pc.op == WrOp::kWrite;
  if (!partial_ok) {
    for (uint8_t b : remote) ASSERT_EQ(b, 0x22);
  }
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(local.bytes[i], 0x11);
}

INSTANTIATE_TEST_SUITE_P(
    All, Protection,
    ::testing::Values(
        ProtCase{Bad::kWrongKey, WrOp::kWrite}, ProtCase{Bad::kWrongKey, WrOp::kRead},
        ProtCase{Bad::kStaleAfterFree, WrOp::kWrite}, ProtCase{Bad::kStaleAfterFree, WrOp::kRead},
        ProtCase{Bad::kStaleAfterRebind, WrOp::kWrite},
        ProtCase{Bad::kStaleAfterRebind, WrOp::kRead}, ProtCase{Bad::kWrongPz, WrOp::kWrite},
        ProtCase{Bad::kWrongPz, WrOp::kRead}, ProtCase{Bad::kNoPrivilege, WrOp::kWrite},
        ProtCase{Bad::kNoPrivilege, WrOp::kRead}, ProtCase{Bad::kOobLow, WrOp::kWrite},
        ProtCase{Bad::kOobLow, WrOp::kRead}, ProtCase{Bad::kOobHigh, WrOp::kWrite},
        ProtCase{Bad::kOobHigh, WrOp::kRead}, ProtCase{Bad::kLengthOverflow, WrOp::kWrite},
        ProtCase{Bad::kLengthOverflow, WrOp::kRead}));

TEST(Errors, AtomicWithoutAtomicPrivilegeAndMisaligned) {
  for (int variant = 0; variant < 2; ++variant) {
    Pair p(6, cfg());
    p.link().set_capture(true);
    Buffer target = p.reg(1, 32,
                          kLocal | priv::kRemoteRead | priv::kRemoteWrite |
                              (variant == 1 ? priv::kRemoteAtomic : 0u));
    Buffer res = p.reg(0, 8, kLocal);
    SendWr wr;
    wr.op = WrOp::kFetchAdd;
    wr.num_sge = 1;
    wr.sge[0] = Sge{res.lmr, res.va(), 8};
    wr.remote_va = target.va() + (variant == 1 ? 4 : 0);  // variant 1: misaligned
    wr.rkey = target.lmr;
    ASSERT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kOk);
    ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
    auto c = drain(*p.a().scq);
    EXPECT_EQ(c[0].status,
              variant == 0 ? WcStatus::kRemoteAccessError : WcStatus::kRemoteInvalidRequest);
    EXPECT_TRUE(saw_nak(
        p, 1, variant == 0 ? wire::aeth::kNakRemoteAccessError : wire::aeth::kNakInvalidRequest));
    const EngineCounters& bc = p.b().engine->counters();
    EXPECT_EQ(bc.rkey_refused[static_cast<size_t>(AccessError::kNoPrivilege)],
              variant == 0 ? 1u : 0u);
    EXPECT_EQ(bc.resp_errors[static_cast<size_t>(Qp::RespState::kErrMisaligned) -
                             static_cast<size_t>(Qp::RespState::kErrLength)],
              variant == 1 ? 1u : 0u);
    for (uint8_t b : target.bytes) EXPECT_EQ(b, 0);
  }
}

TEST(Errors, LocalProtectionErrorOnBadLocalKey) {
  Pair p(7, cfg());
  Buffer local = p.reg(0, 64, priv::kLocalWrite);  // no local read: cannot be a SEND source
  SendWr wr;
  wr.op = WrOp::kSend;
  wr.cookie = 1;
  wr.num_sge = 1;
  wr.sge[0] = Sge{local.lmr, local.va(), 64};
  ASSERT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kOk);
  wr.cookie = 2;
  wr.sge[0].lkey = local.lmr + 1;  // wrong key byte
  ASSERT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 2; }));
  auto c = drain(*p.a().scq);
  EXPECT_EQ(c[0].status, WcStatus::kLocalProtectionError);
  EXPECT_EQ(c[1].status, WcStatus::kFlushed);
  EXPECT_EQ(p.a().qp->error(), QpError::kLocalProtection);
  EXPECT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kInvalidState);
}

TEST(Errors, ReceiveTooSmallIsInvalidRequest) {
  Pair p(8, cfg());
  p.link().set_capture(true);
  Buffer src = p.reg(0, 3000, kLocal);
  Buffer dst = p.reg(1, 100, kLocal);
  RecvWr rw;
  rw.cookie = 9;
  rw.num_sge = 1;
  rw.sge[0] = Sge{dst.lmr, dst.va(), 100};
  ASSERT_EQ(p.b().qp->post_recv(rw), Qp::PostResult::kOk);
  SendWr wr;
  wr.num_sge = 1;
  wr.sge[0] = Sge{src.lmr, src.va(), 3000};
  ASSERT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1 && p.b().rcq->size() == 1; }));
  EXPECT_EQ(drain(*p.a().scq)[0].status, WcStatus::kRemoteInvalidRequest);
  EXPECT_EQ(drain(*p.b().rcq)[0].status, WcStatus::kLocalLengthError);
  EXPECT_TRUE(saw_nak(p, 1, wire::aeth::kNakInvalidRequest));
}

// A receive's lkeys are judged for the bytes a message writes into it: a
// one-packet SEND that stops before a bad SGE (a 0-byte one, a short one)
// completes; one that reaches the bad SGE is a local protection error at the
// receiver (and a remote operational error at the sender).
TEST(Errors, ReceiveKeysAreJudgedForTheBytesAMessageWrites) {
  Pair p(11, cfg());
  Buffer src = p.reg(0, 200, kLocal);
  fill_pattern(src.bytes, 11);
  Buffer dst = p.reg(1, 256, kLocal);
  auto post_bad_tail = [&](uint64_t cookie) {
    RecvWr rw;
    rw.cookie = cookie;
    rw.num_sge = 2;
    rw.sge[0] = Sge{dst.lmr, dst.va(), 100};
    rw.sge[1] = Sge{dst.lmr + 1, 0, 64};  // no region: no byte may land here
    ASSERT_EQ(p.b().qp->post_recv(rw), Qp::PostResult::kOk);
  };
  post_bad_tail(1);
  post_bad_tail(2);
  post_bad_tail(3);
  for (uint32_t len : {0u, 100u, 101u}) {
    SendWr wr;
    wr.cookie = len;
    wr.num_sge = 1;
    wr.sge[0] = Sge{src.lmr, src.va(), len};
    ASSERT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kOk);
  }
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 3 && p.b().rcq->size() == 3; }));
  auto s = drain(*p.a().scq);
  auto r = drain(*p.b().rcq);
  EXPECT_EQ(s[0].status, WcStatus::kSuccess);
  EXPECT_EQ(s[1].status, WcStatus::kSuccess);
  EXPECT_EQ(s[2].status, WcStatus::kRemoteOperationalError);
  EXPECT_EQ(r[0].status, WcStatus::kSuccess);
  EXPECT_EQ(r[0].byte_len, 0u);
  EXPECT_EQ(r[1].status, WcStatus::kSuccess);
  EXPECT_EQ(r[1].byte_len, 100u);
  EXPECT_EQ(r[2].status, WcStatus::kLocalProtectionError);
  EXPECT_TRUE(std::equal(src.bytes.begin(), src.bytes.begin() + 100, dst.bytes.begin()));
}

TEST(Rnr, SendWaitsForReceiveThenSucceeds) {
  QpConfig c = cfg();
  c.rnr_retry = 7;
  c.rnr_delay_ns = 100'000;
  Pair p(9, c);
  p.link().set_capture(true);
  Buffer src = p.reg(0, 2000, kLocal);
  fill_pattern(src.bytes, 9);
  Buffer dst = p.reg(1, 2000, kLocal);
  SendWr wr;
  wr.num_sge = 1;
  wr.sge[0] = Sge{src.lmr, src.va(), 2000};
  ASSERT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kOk);
  // rnr_retry 7 is "forever": far more than 7 RNR rounds pass with no
  // receive posted, and the send still waits.
  ASSERT_TRUE(p.run_until([&] { return p.a().qp->counters().rnr_naks_rx >= 30; }, 1'000'000'000));
  EXPECT_EQ(p.a().qp->state(), QpState::kRts);
  EXPECT_EQ(p.a().scq->size(), 0u);
  RecvWr rw;
  rw.num_sge = 1;
  rw.sge[0] = Sge{dst.lmr, dst.va(), 2000};
  ASSERT_EQ(p.b().qp->post_recv(rw), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1 && p.b().rcq->size() == 1; }));
  EXPECT_EQ(drain(*p.a().scq)[0].status, WcStatus::kSuccess);
  EXPECT_EQ(drain(*p.b().rcq)[0].byte_len, 2000u);
  EXPECT_EQ(src.bytes, dst.bytes);
  bool saw_rnr = false;
  for (const auto& v : frames_from(p, 1))
    if (v.opcode == wire::Opcode::kAck && wire::aeth::type(v.aeth->syndrome) == wire::aeth::kRnrNak)
      saw_rnr = true;
  EXPECT_TRUE(saw_rnr);
}

TEST(Rnr, FailsAfterRetryBudget) {
  QpConfig c = cfg();
  c.rnr_retry = 3;
  Pair p(10, c);
  Buffer src = p.reg(0, 10, kLocal);
  SendWr wr;
  wr.op = WrOp::kSendImm;
  wr.num_sge = 1;
  wr.sge[0] = Sge{src.lmr, src.va(), 10};
  ASSERT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
  EXPECT_EQ(drain(*p.a().scq)[0].status, WcStatus::kRnrRetryExceeded);
  EXPECT_EQ(p.a().qp->counters().rnr_naks_rx, 4u);  // first try + 3 retries
  EXPECT_EQ(p.a().qp->error(), QpError::kRnrRetryExceeded);
}

TEST(Retry, PeerVanishesQpBreaksWithinBudget) {
  QpConfig c = cfg();
  c.retry_count = 4;
  c.retransmit_timeout_ns = 500'000;
  Pair p(11, c);
  Buffer src = p.reg(0, 5000, kLocal);
  Buffer dst = p.reg(1, 5000, kLocal | priv::kRemoteWrite);
  // The peer is gone: nothing it would send arrives.
  p.link().set_filter([](int from_end, const uint8_t*, uint32_t) { return from_end == 0; });
  for (uint64_t i = 0; i < 3; ++i)
    ASSERT_EQ(p.a().qp->post_send(rdma_wr(WrOp::kWrite, src, dst, 5000, i)), Qp::PostResult::kOk);
  const uint64_t t0 = p.now();
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 3; }));
  // 1 original timeout + 4 retries, backing off 0.5, 1, 2, 4, 8 ms: broken
  // after 15.5 ms (+ a step of slack), not earlier and not much later.
  EXPECT_GE(p.now() - t0, 15'500'000u);
  EXPECT_LT(p.now() - t0, 16'000'000u);
  auto cs = drain(*p.a().scq);
  EXPECT_EQ(cs[0].status, WcStatus::kRetryExceeded);
  EXPECT_EQ(cs[1].status, WcStatus::kFlushed);
  EXPECT_EQ(cs[2].status, WcStatus::kFlushed);
  EXPECT_EQ(p.a().qp->counters().timeouts, 5u);
  EXPECT_EQ(p.a().qp->error(), QpError::kRetryExceeded);
  EXPECT_TRUE(p.settle());  // nothing keeps running afterwards
}

// The same for every operation whose recovery differs (READ re-requests
// ranges, SEND / WRITE with immediate resend holes): a silent peer still
// breaks the QP within the budget, after an RDMA READ too (the two-process
// kill-client test found a server's READ probe retrying forever).
class RetryByOp : public ::testing::TestWithParam<WrOp> {};

TEST_P(RetryByOp, PeerVanishesQpBreaksWithinBudget) {
  QpConfig c = cfg();
  c.retry_count = 4;
  c.retransmit_timeout_ns = 500'000;
  Pair p(12, c);
  Buffer src = p.reg(0, 5000, kLocal | priv::kRemoteRead);
  Buffer dst = p.reg(1, 5000, kLocal | priv::kRemoteWrite | priv::kRemoteRead);
  p.link().set_filter([](int from_end, const uint8_t*, uint32_t) { return from_end == 0; });
  if (GetParam() == WrOp::kSend) {
    RecvWr rw;
    rw.num_sge = 1;
    rw.sge[0] = Sge{dst.lmr, dst.va(), 5000};
    ASSERT_EQ(p.b().qp->post_recv(rw), Qp::PostResult::kOk);
  }
  ASSERT_EQ(p.a().qp->post_send(rdma_wr(GetParam(), src, dst, 5000, 1)), Qp::PostResult::kOk);
  const uint64_t t0 = p.now();
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }, 100'000'000));
  EXPECT_GE(p.now() - t0, 15'500'000u);
  EXPECT_LT(p.now() - t0, 16'000'000u);
  EXPECT_EQ(drain(*p.a().scq)[0].status, WcStatus::kRetryExceeded);
  EXPECT_EQ(p.a().qp->error(), QpError::kRetryExceeded);
  EXPECT_TRUE(p.settle());
}

INSTANTIATE_TEST_SUITE_P(Ops, RetryByOp,
                         ::testing::Values(WrOp::kWrite, WrOp::kRead, WrOp::kSend,
                                           WrOp::kWriteImm));

// With a minimum retry time, a silent peer is declared dead only once the
// retries are spent AND that long has passed since the first timeout; a peer
// that comes back within it (a stalled host) loses nothing.
TEST(RetryBudget, MinimumRetryTimeOutlastsAStalledPeer) {
  QpConfig c = cfg();
  c.retry_count = 4;
  c.retransmit_timeout_ns = 500'000;
  c.min_retry_time_ns = 100'000'000;  // 100 ms, against 15.5 ms of retries
  for (bool comes_back : {false, true}) {
    Pair p(13, c);
    Buffer src = p.reg(0, 5000, kLocal);
    Buffer dst = p.reg(1, 5000, kLocal | priv::kRemoteWrite);
    fill_pattern(src.bytes, 9);
    bool silent = true;  // the peer's host stalls: nothing it sends arrives
    p.link().set_filter(
        [&](int from_end, const uint8_t*, uint32_t) { return from_end == 0 || !silent; });
    ASSERT_EQ(p.a().qp->post_send(rdma_wr(WrOp::kWrite, src, dst, 5000)), Qp::PostResult::kOk);
    const uint64_t t0 = p.now();
    if (comes_back) {
      // Silent for 60 ms (four times the count-only budget), then back.
      ASSERT_FALSE(p.run_until([&] { return p.a().scq->size() == 1; }, 60'000'000));
      silent = false;
      ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
      EXPECT_EQ(drain(*p.a().scq)[0].status, WcStatus::kSuccess);
      EXPECT_EQ(src.bytes, dst.bytes);
      EXPECT_EQ(p.a().qp->state(), QpState::kRts);
    } else {
      ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
      // The first timeout comes 0.5 ms after the send; the QP breaks 100 ms
      // later at the earliest, and within one more 32 ms interval (the 64x
      // back-off cap) after that.
      EXPECT_GE(p.now() - t0, 100'500'000u);
      EXPECT_LT(p.now() - t0, 100'500'000u + 32'000'000u + 1'000'000u);
      EXPECT_EQ(drain(*p.a().scq)[0].status, WcStatus::kRetryExceeded);
      EXPECT_EQ(p.a().qp->error(), QpError::kRetryExceeded);
    }
  }
}

TEST(PsnWrap, TransferCrossesZero) {
  Pair p(12, cfg());
  p.link().set_capture(true);
  const size_t n = 600 * 1024;  // 600 packets from PSN 0xFFFF00: crosses 2^24
  Buffer src = p.reg(0, n, kLocal);
  fill_pattern(src.bytes, 12);
  Buffer dst = p.reg(1, n, kLocal | priv::kRemoteWrite);
  SendWr wr;
  wr.op = WrOp::kWrite;
  wr.num_sge = 1;
  wr.sge[0] = Sge{src.lmr, src.va(), n};
  wr.remote_va = dst.va();
  wr.rkey = dst.lmr;
  ASSERT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
  EXPECT_EQ(drain(*p.a().scq)[0].status, WcStatus::kSuccess);
  EXPECT_EQ(src.bytes, dst.bytes);
  bool high = false, low = false;
  for (const auto& v : frames_from(p, 0)) {
    high |= v.bth->psn().value() == 0xFFFFFF;
    low |= v.bth->psn().value() == 0x000001;
  }
  EXPECT_TRUE(high && low);
}

// B binds an RMR, then SENDs the new context to A; A writes through it.
// The SEND must not leave before the bind completed, and the bind waits for
// B's earlier (delayed) WRITE to complete.
TEST(Fence, BindThenSendCarryingNewContext) {
  Pair p(13, cfg());
  p.link().set_capture(true);
  Buffer win = p.reg(1, 8192, kLocal);
  Buffer other = p.reg(0, 8192, kLocal | priv::kRemoteWrite);
  Buffer wsrc = p.reg(1, 8192, kLocal);
  uint32_t rmr = 0;
  ASSERT_TRUE(p.b().mr->mw_alloc(p.b().pz, &rmr));
  // Drop B's first WRITE packet once, so the WRITE completes late.
  int dropped = 0;
  p.link().set_filter([&](int from_end, const uint8_t* d, uint32_t len) {
    wire::PacketView v;
    if (from_end == 1 && dropped == 0 &&
        wire::parse_packet(std::span(d, len), {.pmtu = 4096, .full_segments = false}, v) ==
            wire::Reject::kNone &&
        v.info->is(wire::op::kWrite)) {
      ++dropped;
      return false;
    }
    return true;
  });
  SendWr w;
  w.op = WrOp::kWrite;
  w.cookie = 1;
  w.num_sge = 1;
  w.sge[0] = Sge{wsrc.lmr, wsrc.va(), 8192};
  w.remote_va = other.va();
  w.rkey = other.lmr;
  ASSERT_EQ(p.b().qp->post_send(w), Qp::PostResult::kOk);
  SendWr bind;
  bind.op = WrOp::kBind;
  bind.cookie = 2;
  bind.mw_handle = rmr;
  bind.bind_lkey = win.lmr;
  bind.bind_va = win.va() + 4096;
  bind.bind_len = 4096;
  bind.bind_privileges = priv::kRemoteWrite;
  ASSERT_EQ(p.b().qp->post_send(bind), Qp::PostResult::kOk);
  // The SEND's payload would carry the context; its WR is posted before the
  // bind completes, so we send a marker and check the ordering on the wire.
  Buffer msg = p.reg(1, 4, kLocal);
  SendWr s;
  s.cookie = 3;
  s.num_sge = 1;
  s.sge[0] = Sge{msg.lmr, msg.va(), 4};
  ASSERT_EQ(p.b().qp->post_send(s), Qp::PostResult::kOk);
  Buffer inbox = p.reg(0, 4, kLocal);
  RecvWr rw;
  rw.num_sge = 1;
  rw.sge[0] = Sge{inbox.lmr, inbox.va(), 4};
  ASSERT_EQ(p.a().qp->post_recv(rw), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.b().scq->size() == 3; }));
  auto c = drain(*p.b().scq);
  ASSERT_EQ(c[0].cookie, 1u);
  ASSERT_EQ(c[1].cookie, 2u);
  EXPECT_EQ(c[1].status, WcStatus::kSuccess);
  EXPECT_EQ(c[1].op, WcOp::kBind);
  ASSERT_EQ(c[2].cookie, 3u);
  // On the wire: the SEND left B only after A acknowledged the whole WRITE.
  size_t send_at = 0, write_acked_at = 0, i = 0;
  for (const auto& cap : p.link().captured()) {
    wire::PacketView v;
    if (wire::parse_packet(cap.bytes, {.pmtu = 4096, .full_segments = false}, v) ==
        wire::Reject::kNone) {
      if (cap.from_end == 1 && v.info->is(wire::op::kSend) && send_at == 0) send_at = i;
      if (cap.from_end == 0 && v.opcode == wire::Opcode::kAck &&
          wire::aeth::type(v.aeth->syndrome) == wire::aeth::kAck)
        write_acked_at = i;  // last ACK from A before the SEND
    }
    if (send_at != 0) break;
    ++i;
  }
  ASSERT_NE(send_at, 0u);
  EXPECT_LT(write_acked_at, send_at);
  // A writes through the new context: lands inside the bound window.
  const uint32_t ctx = c[1].rkey;
  Buffer asrc = p.reg(0, 4096, kLocal, 0x77);
  SendWr aw;
  aw.op = WrOp::kWrite;
  aw.num_sge = 1;
  aw.sge[0] = Sge{asrc.lmr, asrc.va(), 4096};
  aw.remote_va = win.va() + 4096;
  aw.rkey = ctx;
  ASSERT_EQ(p.a().qp->post_send(aw), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
  EXPECT_EQ(drain(*p.a().scq)[0].status, WcStatus::kSuccess);
  for (size_t k = 0; k < 4096; ++k) ASSERT_EQ(win.bytes[k], 0);
  for (size_t k = 4096; k < 8192; ++k) ASSERT_EQ(win.bytes[k], 0x77);
}

TEST(Fence, BindErrorCompletesInError) {
  Pair p(14, cfg());
  Buffer ro = p.reg(1, 4096, priv::kLocalRead);  // no local write: cannot grant remote write
  uint32_t rmr = 0;
  ASSERT_TRUE(p.b().mr->mw_alloc(p.b().pz, &rmr));
  SendWr bind;
  bind.op = WrOp::kBind;
  bind.mw_handle = rmr;
  bind.bind_lkey = ro.lmr;
  bind.bind_va = ro.va();
  bind.bind_len = 4096;
  bind.bind_privileges = priv::kRemoteWrite;
  ASSERT_EQ(p.b().qp->post_send(bind), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.b().scq->size() == 1; }));
  EXPECT_EQ(drain(*p.b().scq)[0].status, WcStatus::kBindError);
}

// RDMA READ followed by a fenced WRITE to the same remote bytes: the READ
// returns the old contents, and the WRITE's first packet leaves only after
// the last READ response arrived.
TEST(Fence, ReadThenFencedWrite) {
  for (bool fence : {true, false}) {
    Pair p(15, cfg());
    p.link().set_capture(true);
    const size_t n = 64 * 1024;
    Buffer remote = p.reg(1, n, kLocal | priv::kRemoteRead | priv::kRemoteWrite, 0xA0);
    Buffer readback = p.reg(0, n, kLocal);
    Buffer newdata = p.reg(0, n, kLocal, 0xB0);
    SendWr r;
    r.op = WrOp::kRead;
    r.cookie = 1;
    r.num_sge = 1;
    r.sge[0] = Sge{readback.lmr, readback.va(), n};
    r.remote_va = remote.va();
    r.rkey = remote.lmr;
    ASSERT_EQ(p.a().qp->post_send(r), Qp::PostResult::kOk);
    SendWr w;
    w.op = WrOp::kWrite;
    w.cookie = 2;
    w.flags = wr_flag::kSignaled | (fence ? wr_flag::kFence : 0u);
    w.num_sge = 1;
    w.sge[0] = Sge{newdata.lmr, newdata.va(), n};
    w.remote_va = remote.va();
    w.rkey = remote.lmr;
    ASSERT_EQ(p.a().qp->post_send(w), Qp::PostResult::kOk);
    ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 2; }));
    for (auto& c : drain(*p.a().scq)) EXPECT_EQ(c.status, WcStatus::kSuccess);
    for (uint8_t b : remote.bytes) ASSERT_EQ(b, 0xB0);
    size_t last_resp = 0, first_write = 0, i = 0;
    for (const auto& cap : p.link().captured()) {
      wire::PacketView v;
      ++i;
      if (wire::parse_packet(cap.bytes, {.pmtu = 4096, .full_segments = false}, v) !=
          wire::Reject::kNone)
        continue;
      if (cap.from_end == 1 && v.info->is(wire::op::kRead)) last_resp = i;
      if (cap.from_end == 0 && v.info->is(wire::op::kWrite) && first_write == 0) first_write = i;
    }
    if (fence) {
      EXPECT_LT(last_resp, first_write);
      for (uint8_t b : readback.bytes) ASSERT_EQ(b, 0xA0);
    } else {
      // Unfenced, the WRITE goes out right behind the READ request.
      EXPECT_GT(last_resp, first_write);
    }
  }
}

TEST(Signalling, UnsignalledSuccessesAreSilentErrorsAreNot) {
  Pair p(16, cfg());
  Buffer src = p.reg(0, 64, kLocal);
  Buffer dst = p.reg(1, 64, kLocal | priv::kRemoteWrite);
  for (uint64_t i = 0; i < 4; ++i) {
    SendWr wr;
    wr.op = WrOp::kWrite;
    wr.cookie = i;
    wr.flags = i == 3 ? wr_flag::kSignaled : 0u;
    wr.num_sge = 1;
    wr.sge[0] = Sge{src.lmr, src.va(), 64};
    wr.remote_va = dst.va();
    wr.rkey = dst.lmr;
    ASSERT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kOk);
  }
  ASSERT_TRUE(p.settle());
  auto c = drain(*p.a().scq);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].cookie, 3u);
  // An unsignalled WR that fails is still reported.
  SendWr bad;
  bad.op = WrOp::kWrite;
  bad.cookie = 9;
  bad.flags = 0;
  bad.num_sge = 1;
  bad.sge[0] = Sge{src.lmr, src.va(), 64};
  bad.remote_va = dst.va() + 1;  // one byte past the end
  bad.rkey = dst.lmr;
  ASSERT_EQ(p.a().qp->post_send(bad), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
  EXPECT_EQ(drain(*p.a().scq)[0].status, WcStatus::kRemoteAccessError);
}

TEST(Completions, FullQueueStallsWithoutLoss) {
  Pair p(17, cfg(), /*cq_depth=*/2);
  Buffer src = p.reg(0, 64, kLocal);
  Buffer dst = p.reg(1, 64, kLocal | priv::kRemoteWrite);
  for (uint64_t i = 0; i < 7; ++i) {
    SendWr wr;
    wr.op = WrOp::kWrite;
    wr.cookie = i;
    wr.num_sge = 1;
    wr.sge[0] = Sge{src.lmr, src.va(), 64};
    wr.remote_va = dst.va();
    wr.rkey = dst.lmr;
    ASSERT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kOk);
  }
  std::vector<uint64_t> seen;
  for (int round = 0; round < 10 && seen.size() < 7; ++round) {
    p.run_until([&] { return p.a().scq->full(); }, 50'000'000);
    for (auto& c : drain(*p.a().scq)) seen.push_back(c.cookie);
  }
  ASSERT_EQ(seen.size(), 7u);
  for (uint64_t i = 0; i < 7; ++i) EXPECT_EQ(seen[i], i);
  EXPECT_GT(p.a().qp->counters().cq_stalls, 0u);
}

TEST(Posting, QueueFullAndInvalidWr) {
  QpConfig c = cfg();
  c.sq_depth = 2;
  Pair p(18, c);
  Buffer src = p.reg(0, 8, kLocal);
  SendWr wr;
  wr.num_sge = 1;
  wr.sge[0] = Sge{src.lmr, src.va(), 8};
  EXPECT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kOk);
  EXPECT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kOk);
  EXPECT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kQueueFull);
  SendWr atomic = wr;
  atomic.op = WrOp::kFetchAdd;
  atomic.sge[0].length = 4;  // the result needs 8 bytes
  Pair q(19, cfg());
  EXPECT_EQ(q.a().qp->post_send(atomic), Qp::PostResult::kInvalidWr);
  SendWr many = wr;
  many.num_sge = kMaxSge + 1;
  EXPECT_EQ(q.a().qp->post_send(many), Qp::PostResult::kInvalidWr);
}

}  // namespace
}  // namespace dpdat::rc::test

namespace dpdat::rc::test {
namespace {

TEST(Link, InjectedFramesAreJudgedByTheParser) {
  Pair p(20, cfg());
  // A hand-made SEND ONLY for B's QP with a corrupted ICRC, and the same
  // frame intact: the first is dropped and counted, the second delivered.
  Buffer dst = p.reg(1, 16, kLocal);
  RecvWr rw;
  rw.num_sge = 1;
  rw.sge[0] = Sge{dst.lmr, dst.va(), 16};
  ASSERT_EQ(p.b().qp->post_recv(rw), Qp::PostResult::kOk);
  std::vector<uint8_t> payload = {1, 2, 3, 4, 5};
  wire::BuildSpec s;
  s.src_mac = {2, 0, 0, 0, 0, 1};
  s.dst_mac = {2, 0, 0, 0, 0, 2};
  s.src_ip = 0x0A000001;
  s.dst_ip = 0x0A000002;
  s.opcode = wire::Opcode::kSendOnly;
  s.dest_qp = p.b().qp->qpn();
  s.psn = wire::Psn(kFirstPsnA);  // what B expects first
  s.ack_req = true;
  s.payload = payload;
  std::vector<uint8_t> frame(256);
  const auto r = wire::build_packet(frame, s, 1024);
  ASSERT_TRUE(r.ok());
  std::vector<uint8_t> bad(frame.begin(), frame.begin() + static_cast<long>(r.len));
  bad[bad.size() - 6] ^= 0x40;  // a payload bit: only the ICRC can tell
  p.link().inject(1, bad.data(), static_cast<uint32_t>(bad.size()));
  p.step();
  EXPECT_EQ(p.b().engine->counters().rx_reject[static_cast<size_t>(wire::Reject::kBadIcrc)], 1u);
  EXPECT_EQ(p.b().rcq->size(), 0u);
  p.link().inject(1, frame.data(), static_cast<uint32_t>(r.len));
  ASSERT_TRUE(p.run_until([&] { return p.b().rcq->size() == 1; }, 1'000'000));
  EXPECT_EQ(drain(*p.b().rcq)[0].byte_len, 5u);
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), dst.bytes.begin()));
  // A frame for a QPN nobody owns is counted, not delivered.
  s.dest_qp = 0xABCDE;
  const auto r2 = wire::build_packet(frame, s, 1024);
  p.link().inject(1, frame.data(), static_cast<uint32_t>(r2.len));
  p.step();
  EXPECT_EQ(p.b().engine->counters().rx_no_qp, 1u);
  // The right QPN and PSN from an address that is not B's peer: dropped and
  // counted, nothing placed.
  s.dest_qp = p.b().qp->qpn();
  s.psn = wire::Psn(0xFFFF01);
  s.src_ip = 0x0A000009;
  const auto r3 = wire::build_packet(frame, s, 1024);
  ASSERT_TRUE(p.b().qp->post_recv(rw) == Qp::PostResult::kOk);
  p.link().inject(1, frame.data(), static_cast<uint32_t>(r3.len));
  p.step();
  EXPECT_EQ(p.b().engine->counters().rx_foreign_src, 1u);
  EXPECT_EQ(p.b().rcq->size(), 0u);
}

TEST(Link, DelayedLossyLinkStillExact) {
  for (bool sr : {true, false}) {
    QpConfig c = cfg();
    c.selective_repeat = sr;
    c.retry_count = 20;
    Pair p(21, c);
    LinkImpairment imp;
    imp.loss = 0.03;
    imp.delay_ns = 20'000;
    imp.reorder = 0.02;
    imp.duplicate = 0.02;
    p.link().set_impairment(0, imp);
    p.link().set_impairment(1, imp);
    const size_t n = 256 * 1024;
    Buffer src = p.reg(0, n, kLocal);
    fill_pattern(src.bytes, 21);
    Buffer dst = p.reg(1, n, kLocal | priv::kRemoteWrite | priv::kRemoteRead);
    Buffer back = p.reg(0, n, kLocal);
    SendWr w;
    w.op = WrOp::kWrite;
    w.num_sge = 1;
    w.sge[0] = Sge{src.lmr, src.va(), n};
    w.remote_va = dst.va();
    w.rkey = dst.lmr;
    ASSERT_EQ(p.a().qp->post_send(w), Qp::PostResult::kOk);
    SendWr r = w;
    r.op = WrOp::kRead;
    r.sge[0] = Sge{back.lmr, back.va(), n};
    ASSERT_EQ(p.a().qp->post_send(r), Qp::PostResult::kOk);
    ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 2; }));
    for (auto& cc : drain(*p.a().scq)) EXPECT_EQ(cc.status, WcStatus::kSuccess);
    EXPECT_EQ(src.bytes, dst.bytes);
    EXPECT_EQ(src.bytes, back.bytes);
    EXPECT_GT(p.link().stats(0).dropped + p.link().stats(1).dropped, 0u);
  }
}

TEST(Acks, CoalescedButAtLeastOnePerWindow) {
  QpConfig c = cfg();
  c.ack_every = 16;
  c.window = 64;
  Pair p(22, c);
  const size_t n = 256 * 1024;  // 256 packets
  Buffer src = p.reg(0, n, kLocal);
  Buffer dst = p.reg(1, n, kLocal | priv::kRemoteWrite);
  SendWr w;
  w.op = WrOp::kWrite;
  w.num_sge = 1;
  w.sge[0] = Sge{src.lmr, src.va(), n};
  w.remote_va = dst.va();
  w.rkey = dst.lmr;
  ASSERT_EQ(p.a().qp->post_send(w), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
  const uint64_t acks = p.b().qp->counters().acks_tx;
  EXPECT_LE(acks, 256u / 8);   // coalesced
  EXPECT_GE(acks, 256u / 64);  // but at least one per window
  EXPECT_EQ(p.a().qp->counters().timeouts, 0u);
}

}  // namespace
}  // namespace dpdat::rc::test

namespace dpdat::rc::test {
namespace {

// RMR bind under loss: B binds, tells A the new context with a SEND, A
// writes through it; a re-bind kills the old context for A's next WRITE.
TEST(Fence, BindAndRebindUnderLoss) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    QpConfig c = cfg();
    c.retry_count = 20;
    Pair p(seed * 77, c);
    LinkImpairment imp;
    imp.loss = 0.05;
    imp.duplicate = 0.02;
    imp.reorder = 0.02;
    p.link().set_impairment(0, imp);
    p.link().set_impairment(1, imp);
    Buffer win = p.reg(1, 16384, kLocal);
    uint32_t rmr = 0;
    ASSERT_TRUE(p.b().mr->mw_alloc(p.b().pz, &rmr));
    Buffer box_b = p.reg(1, 4, kLocal);
    Buffer box_a = p.reg(0, 4, kLocal);
    Buffer src = p.reg(0, 8192, kLocal);
    fill_pattern(src.bytes, seed);
    uint32_t ctx[2] = {0, 0};
    for (int round = 0; round < 2; ++round) {
      SendWr bind;
      bind.op = WrOp::kBind;
      bind.cookie = 10 + static_cast<uint64_t>(round);
      bind.mw_handle = rmr;
      bind.bind_lkey = win.lmr;
      bind.bind_va = win.va() + static_cast<uint64_t>(round) * 8192;
      bind.bind_len = 8192;
      bind.bind_privileges = priv::kRemoteWrite;
      ASSERT_EQ(p.b().qp->post_send(bind), Qp::PostResult::kOk);
      RecvWr rw;
      rw.num_sge = 1;
      rw.sge[0] = Sge{box_a.lmr, box_a.va(), 4};
      ASSERT_EQ(p.a().qp->post_recv(rw), Qp::PostResult::kOk);
      ASSERT_TRUE(p.run_until([&] { return p.b().scq->size() == 1; }));
      Completion bc;
      ASSERT_TRUE(p.b().scq->pop(&bc));
      ASSERT_EQ(bc.status, WcStatus::kSuccess);
      ctx[round] = bc.rkey;
      std::memcpy(box_b.data(), &ctx[round], 4);
      SendWr s;
      s.num_sge = 1;
      s.sge[0] = Sge{box_b.lmr, box_b.va(), 4};
      ASSERT_EQ(p.b().qp->post_send(s), Qp::PostResult::kOk);
      ASSERT_TRUE(p.run_until([&] { return p.a().rcq->size() == 1 && p.b().scq->size() == 1; }));
      drain(*p.a().rcq);
      drain(*p.b().scq);
      uint32_t got = 0;
      std::memcpy(&got, box_a.data(), 4);
      ASSERT_EQ(got, ctx[round]);
      SendWr w;
      w.op = WrOp::kWrite;
      w.num_sge = 1;
      w.sge[0] = Sge{src.lmr, src.va(), 8192};
      w.remote_va = win.va() + static_cast<uint64_t>(round) * 8192;
      w.rkey = got;
      ASSERT_EQ(p.a().qp->post_send(w), Qp::PostResult::kOk);
      ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
      EXPECT_EQ(drain(*p.a().scq)[0].status, WcStatus::kSuccess) << "seed " << seed;
      EXPECT_TRUE(std::equal(src.bytes.begin(), src.bytes.end(),
                             win.bytes.begin() + static_cast<long>(round) * 8192));
    }
    EXPECT_NE(ctx[0], ctx[1]);
    // The first context is stale now: A's WRITE through it is refused.
    SendWr stale;
    stale.op = WrOp::kWrite;
    stale.num_sge = 1;
    stale.sge[0] = Sge{src.lmr, src.va(), 64};
    stale.remote_va = win.va();
    stale.rkey = ctx[0];
    std::vector<uint8_t> before(win.bytes.begin(), win.bytes.begin() + 64);
    std::fill(win.bytes.begin(), win.bytes.begin() + 64, 0xCC);
    ASSERT_EQ(p.a().qp->post_send(stale), Qp::PostResult::kOk);
    ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
    EXPECT_EQ(drain(*p.a().scq)[0].status, WcStatus::kRemoteAccessError);
    for (size_t i = 0; i < 64; ++i) ASSERT_EQ(win.bytes[i], 0xCC);
  }
}

}  // namespace
}  // namespace dpdat::rc::test

namespace dpdat::rc::test {
namespace {

// A bind flushed by a QP error releases its RMR: another QP may bind it.
TEST(Fence, FlushedBindReleasesItsRmr) {
  Pair p(23, cfg());
  Buffer local = p.reg(0, 64, kLocal);
  Buffer target = p.reg(1, 64, kLocal | priv::kRemoteWrite);
  Buffer win = p.reg(0, 4096, kLocal);
  uint32_t rmr1 = 0, rmr2 = 0;
  ASSERT_TRUE(p.a().mr->mw_alloc(p.a().pz, &rmr1));
  ASSERT_TRUE(p.a().mr->mw_alloc(p.a().pz, &rmr2));
  SendWr bad;
  bad.op = WrOp::kWrite;
  bad.cookie = 1;
  bad.num_sge = 1;
  bad.sge[0] = Sge{local.lmr, local.va(), 64};
  bad.remote_va = target.va() + 1;  // one byte past the end: NAK, QP error
  bad.rkey = target.lmr;
  ASSERT_EQ(p.a().qp->post_send(bad), Qp::PostResult::kOk);
  SendWr b1;
  b1.op = WrOp::kBind;
  b1.cookie = 2;
  b1.bind_lkey = win.lmr;
  b1.bind_va = win.va();
  b1.bind_len = 4096;
  b1.bind_privileges = priv::kRemoteRead;
  b1.mw_handle = rmr1;
  SendWr b2 = b1;
  b2.cookie = 3;
  b2.mw_handle = rmr2;
  ASSERT_EQ(p.a().qp->post_send(b1), Qp::PostResult::kOk);
  ASSERT_EQ(p.a().qp->post_send(b2), Qp::PostResult::kOk);  // waits for b1 to complete
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 3; }));
  auto c = drain(*p.a().scq);
  EXPECT_EQ(c[0].status, WcStatus::kRemoteAccessError);
  EXPECT_EQ(c[2].cookie, 3u);
  EXPECT_EQ(c[2].status, WcStatus::kFlushed);
  // rmr2 was reserved by b2 and never bound: it is free for another QP now.
  EXPECT_TRUE(p.a().mr->mark_bind_pending(rmr2, 0x999));
}

}  // namespace
}  // namespace dpdat::rc::test
