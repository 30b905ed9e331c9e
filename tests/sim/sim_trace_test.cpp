// The queue-pair trace hook (built with DPDAT_QP_TRACE): every state each
// role enters is reported, and every response packet the requester's side
// receives walks the completer's machine from check-opcode.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "harness.hpp"
#include "parse_frame.hpp"
#include "rc/qp/qp_states.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint32_t kLocal = priv::kLocalRead | priv::kLocalWrite;
constexpr uint32_t kPmtu = 1024;

struct Recorder {
  std::vector<QpTransition> seen;
  static void hook(void* ctx, const QpTransition& t) {
    static_cast<Recorder*>(ctx)->seen.push_back(t);
  }
  Recorder() { set_qp_trace(&Recorder::hook, this); }
  ~Recorder() { set_qp_trace(nullptr, nullptr); }
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  std::vector<std::string> names(const Qp* qp, QpRole role) const {
    std::vector<std::string> out;
    for (const QpTransition& t : seen)
      if (t.qp == qp && t.role == role) {
        EXPECT_EQ(t.qpn, qp->qpn());
        out.emplace_back(qp_state_name(role, t.state));
      }
    return out;
  }
};

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

QpConfig cfg() {
  QpConfig c;
  c.pmtu = kPmtu;
  c.selective_repeat = true;
  return c;
}

// A WRITE and a READ of 16 packets each with one packet of each lost, then
// an atomic: every role walks its states, and A's completer walks one
// machine per response B's frames delivered.
TEST(SimTrace, EveryRoleReportsItsStatesAndEveryResponseWalksTheCompleter) {
  Recorder rec;
  Pair p(71, cfg());
  // A loses its 4th WRITE packet, B its 5th READ response.
  uint32_t from_b_delivered = 0, writes = 0, read_resps = 0;
  p.link().set_filter([&](int from_end, const uint8_t* data, uint32_t len) {
    const wire::Opcode op = parse(data, len).opcode;
    if (from_end == 0)
      return !(op >= wire::Opcode::kWriteFirst && op <= wire::Opcode::kWriteOnlyImm &&
               ++writes == 4);
    if (op >= wire::Opcode::kReadRespFirst && op <= wire::Opcode::kReadRespOnly &&
        ++read_resps == 5)
      return false;
    if (op != wire::Opcode::kCnp) ++from_b_delivered;
    return true;
  });

  const uint64_t len = 16 * kPmtu;
  Buffer src = p.reg(0, len, kLocal);
  Buffer dst = p.reg(1, len, kLocal | priv::kRemoteWrite | priv::kRemoteRead);
  Buffer back = p.reg(0, len, kLocal);
  fill_pattern(src.bytes, 5);
  ASSERT_EQ(p.a().qp->post_send(rdma_wr(WrOp::kWrite, src, dst, len, 1)), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
  ASSERT_EQ(p.a().qp->post_send(rdma_wr(WrOp::kRead, back, dst, len, 2)), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 2; }));
  Buffer target = p.reg(1, 8, kLocal | priv::kRemoteAtomic);
  Buffer res = p.reg(0, 8, kLocal);
  SendWr fa = rdma_wr(WrOp::kFetchAdd, res, target, 8, 3);
  fa.swap_add = 1;
  ASSERT_EQ(p.a().qp->post_send(fa), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 3; }));
  ASSERT_TRUE(p.settle());
  for (const Completion& c : drain(*p.a().scq)) EXPECT_EQ(c.status, WcStatus::kSuccess);
  EXPECT_EQ(src.bytes, back.bytes);
  ASSERT_EQ(writes, 17u) << "one WRITE packet lost and resent";
  ASSERT_GE(read_resps, 17u) << "one READ response lost and resent";

  const Qp* a = p.a().qp;
  const Qp* b = p.b().qp;
  for (const QpTransition& t : rec.seen)
    EXPECT_NE(qp_state_name(t.role, t.state), "invalid") << static_cast<int>(t.role);

  const auto req = rec.names(a, QpRole::kRequester);
  for (const char* s : {"get-wqe", "check-fence", "start-wqe", "emit", "next-wqe", "done"})
    EXPECT_TRUE(has(req, s)) << s;
  const auto resp = rec.names(b, QpRole::kResponder);
  for (const char* s : {"check-psn", "out-of-sequence", "in-sequence", "check-keys", "exec-write",
                        "exec-read", "exec-atomic", "acknowledge", "queued"})
    EXPECT_TRUE(has(resp, s)) << s;
  const auto comp = rec.names(a, QpRole::kCompleter);
  for (const char* s : {"check-opcode", "check-syndrome", "ack", "seq-nak", "check-read",
                        "read-in-order", "read-ahead", "check-atomic", "atomic-ack"})
    EXPECT_TRUE(has(comp, s)) << s;

  // One walk per delivered response, each going past check-opcode.
  const auto walks = std::count(comp.begin(), comp.end(), "check-opcode");
  EXPECT_EQ(walks, static_cast<long>(from_b_delivered));
  for (size_t i = 0; i < comp.size(); ++i)
    if (comp[i] == "check-opcode") {
      ASSERT_LT(i + 1, comp.size());
      EXPECT_NE(comp[i + 1], "check-opcode") << "a walk stopped at check-opcode";
    }
  // B only responds and A only requests.
  EXPECT_TRUE(rec.names(a, QpRole::kResponder).empty());
  EXPECT_TRUE(rec.names(b, QpRole::kCompleter).empty());
}

TEST(SimTrace, NoHookNoReports) {
  Recorder rec;
  set_qp_trace(nullptr, nullptr);
  Pair p(72, cfg());
  Buffer src = p.reg(0, 64, kLocal);
  Buffer dst = p.reg(1, 64, kLocal | priv::kRemoteWrite);
  ASSERT_EQ(p.a().qp->post_send(rdma_wr(WrOp::kWrite, src, dst, 64, 1)), Qp::PostResult::kOk);
  ASSERT_TRUE(p.settle());
  EXPECT_GT(p.b().qp->counters().rx_packets, 0u);
  EXPECT_TRUE(rec.seen.empty());
}

}  // namespace
}  // namespace dpdat::rc::test
