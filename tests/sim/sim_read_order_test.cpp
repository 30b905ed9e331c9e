// READ responses judged lost by order (selective repeat): the requester
// numbers the READ requests it sends, the responder answers them in the
// order they came (a re-requested range ahead of READs that have not begun)
// and each range in PSN order, so a response shows every response asked for
// before it either arrived or was lost.  What is missing is asked for again
// at once — several holes back to back — without a tail-loss probe or a
// timeout.  Losses are chosen by response PSN and by which sending of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "harness.hpp"
#include "parse_frame.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint32_t kLocal = priv::kLocalRead | priv::kLocalWrite;
constexpr uint32_t kPmtu = 1024;

// A pair on a 25 Gb/s link with 2 us of delay each way.  B's READ responses
// are lost by (PSN offset from the first READ after arm(), sending): {5, 1}
// loses the first sending of response 5, {5, 2} the second.  Logs A's READ
// requests (PSN offset, length in packets, when).
struct Rig {
  Pair p;
  std::set<std::pair<uint32_t, uint32_t>> drop;
  std::map<uint32_t, uint32_t> sends;  // response PSN offset -> times sent
  bool based = false;
  uint32_t base = 0;
  struct Req {
    uint32_t off, npkts;
    uint64_t at;
  };
  std::vector<Req> reqs;
  uint32_t sent_b = 0;

  std::vector<uint32_t> order_b;  // response PSN offsets in the order B sent them

  static QpConfig cfg(uint32_t budget) {
    QpConfig c;
    c.pmtu = kPmtu;
    c.selective_repeat = true;
    c.window = 1024;
    c.read_resp_budget = budget;
    return c;
  }
  // `budget`: READ response packets the responder sends per poll.
  explicit Rig(uint32_t budget = 32) : p(61, cfg(budget)) {
    LinkImpairment imp;
    imp.delay_ns = 2'000;
    imp.rate_bps = 25'000'000'000ull;
    p.link().set_impairment(0, imp);
    p.link().set_impairment(1, imp);
    p.link().set_filter([this](int from_end, const uint8_t* data, uint32_t len) {
      const wire::PacketView v = parse(data, len);
      if (v.bth == nullptr) return true;
      const uint32_t psn = v.bth->psn().value();
      if (from_end == 0) {
        if (v.opcode != wire::Opcode::kReadRequest) return true;
        if (!based) {
          based = true;
          base = psn;
        }
        reqs.push_back(
            {(psn - base) & 0xFFFFFF, (v.reth->dma_len.value() + kPmtu - 1) / kPmtu, p.now()});
        return true;
      }
      if (!based || v.opcode < wire::Opcode::kReadRespFirst ||
          v.opcode > wire::Opcode::kReadRespOnly)
        return true;
      ++sent_b;
      const uint32_t off = (psn - base) & 0xFFFFFF;
      order_b.push_back(off);
      return drop.count({off, ++sends[off]}) == 0;
    });
  }
  // A few lossless small READs (the round trip is measured, so the
  // tail-loss probe is armed: what it would do, it is not needed for).
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
  void arm(std::set<std::pair<uint32_t, uint32_t>> d) {
    drop = std::move(d);
    sends.clear();
    reqs.clear();
    based = false;
    sent_b = 0;
    order_b.clear();
  }
  // `n` READs of `pkts` packets each, signaled; runs until all complete and
  // checks their status, order and data.  Returns the virtual time taken.
  uint64_t reads(uint32_t n, uint32_t pkts) {
    const uint64_t len = uint64_t{pkts} * kPmtu;
    Buffer local = p.reg(0, n * len, kLocal);
    Buffer remote = p.reg(1, n * len, kLocal | priv::kRemoteRead);
    fill_pattern(remote.bytes, 21);
    const uint64_t t0 = p.now();
    for (uint64_t i = 0; i < n; ++i) {
      SendWr w = rdma_wr(WrOp::kRead, local, remote, len, 1 + i);
      w.sge[0].va += i * len;
      w.remote_va += i * len;
      w.flags = wr_flag::kSignaled;
      EXPECT_EQ(p.a().qp->post_send(w), Qp::PostResult::kOk);
    }
    EXPECT_TRUE(p.run_until([&] { return p.a().scq->size() == n; }));
    const uint64_t took = p.now() - t0;
    EXPECT_TRUE(p.settle());
    const auto sc = drain(*p.a().scq);
    EXPECT_EQ(sc.size(), n);
    for (size_t i = 0; i < sc.size(); ++i) {
      EXPECT_EQ(sc[i].status, WcStatus::kSuccess);
      EXPECT_EQ(sc[i].cookie, 1 + i);
    }
    EXPECT_EQ(local.bytes, remote.bytes);
    EXPECT_EQ(p.a().qp->state(), QpState::kRts);
    return took;
  }
  // The re-requests (every READ request after the first `n` ones), as
  // (PSN offset, packets).
  std::vector<std::pair<uint32_t, uint32_t>> rereqs(size_t n) const {
    std::vector<std::pair<uint32_t, uint32_t>> out;
    for (size_t i = n; i < reqs.size(); ++i) out.emplace_back(reqs[i].off, reqs[i].npkts);
    return out;
  }
  const QpCounters& ca() { return p.a().qp->counters(); }
};

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

// The last response of the first of two READs is lost.  The second READ's
// responses show it lost: asked for again then, not after a probe.
TEST(ReadOrder, TailOfAReadJudgedByTheNextOne) {
  Rig f;
  f.warm_up();
  const QpCounters c0 = f.ca();
  f.arm({{15, 1}});
  const uint64_t took = f.reads(2, 16);
  EXPECT_EQ(f.rereqs(2), (Ranges{{15, 1}}));
  EXPECT_LT(took, 100'000u) << "virtual ns";
  EXPECT_EQ(f.ca().tlp_probes - c0.tlp_probes, 0u);
  EXPECT_EQ(f.ca().timeouts - c0.timeouts, 0u);
  EXPECT_EQ(f.sent_b, 32u + 1u);
}

// A hole inside a re-requested range: responses 10..12 are lost, asked for
// again as one range, and that range's second packet is lost too.  Its
// third packet shows it: 11 is asked for again at once.
TEST(ReadOrder, HoleInsideAReRequestedRange) {
  Rig f;
  f.warm_up();
  const QpCounters c0 = f.ca();
  f.arm({{10, 1}, {11, 1}, {12, 1}, {11, 2}});
  f.reads(1, 64);
  EXPECT_EQ(f.rereqs(1), (Ranges{{10, 3}, {11, 1}}));
  EXPECT_EQ(f.ca().tlp_probes - c0.tlp_probes, 0u);
  EXPECT_EQ(f.ca().timeouts - c0.timeouts, 0u);
  EXPECT_EQ(f.sent_b, 64u + 4u);
}

// A re-request's response lost again: the response to a re-request sent
// after it shows it (four READs of 16; 2 lost twice, 20 and 50 once).  The
// responder put all 64 first responses on the link before the re-requests
// came, so the answers to [20] and [50] follow them, and the one to [20]
// shows [2] lost again.
TEST(ReadOrder, LostReRequestJudgedByALaterOne) {
  Rig f;
  f.warm_up();
  const QpCounters c0 = f.ca();
  f.arm({{2, 1}, {2, 2}, {20, 1}, {50, 1}});
  f.reads(4, 16);
  EXPECT_EQ(f.rereqs(4), (Ranges{{2, 1}, {20, 1}, {50, 1}, {2, 1}}));
  EXPECT_EQ(f.ca().tlp_probes - c0.tlp_probes, 0u);
  EXPECT_EQ(f.ca().timeouts - c0.timeouts, 0u);
  EXPECT_EQ(f.sent_b, 64u + 4u);
}

// Two holes whose re-requests are both lost are judged by one later
// response and asked for again together: two READ requests back to back.
TEST(ReadOrder, SeveralHolesAskedForAgainTogether) {
  Rig f;
  f.warm_up();
  const QpCounters c0 = f.ca();
  f.arm({{5, 1}, {5, 2}, {10, 1}, {10, 2}, {13, 1}});
  f.reads(2, 16);
  EXPECT_EQ(f.rereqs(2), (Ranges{{5, 1}, {10, 1}, {13, 1}, {5, 1}, {10, 1}}));
  ASSERT_EQ(f.reqs.size(), 7u);
  EXPECT_EQ(f.reqs[5].at, f.reqs[6].at);  // in the same step
  EXPECT_EQ(f.ca().tlp_probes - c0.tlp_probes, 0u);
  EXPECT_EQ(f.ca().timeouts - c0.timeouts, 0u);
}

// A re-requested range is answered before READs queued at the responder
// that have not begun: sixteen 16-packet READs outstanding, a responder that
// sends one response a microsecond (its queue holds the backlog, not the
// link), and the hole in the first READ is answered right after the READ
// in progress, not after the fifteen behind it.
TEST(ReadOrder, ReRequestAnsweredAheadOfQueuedReads) {
  Rig f(/*budget=*/1);
  f.warm_up();
  f.arm({{3, 1}});
  f.reads(16, 16);
  ASSERT_EQ(f.rereqs(16), (Ranges{{3, 1}}));
  ASSERT_EQ(f.sent_b, 256u + 1u);
  const auto first = std::find(f.order_b.begin(), f.order_b.end(), 3u);
  const auto again = std::find(first + 1, f.order_b.end(), 3u);
  ASSERT_NE(again, f.order_b.end());
  // Within the first three READs' responses (in arrival order: after the 256th).
  EXPECT_LT(again - f.order_b.begin(), 3 * 16);
}

}  // namespace
}  // namespace dpdat::rc::test
