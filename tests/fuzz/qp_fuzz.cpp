// Stateful libFuzzer target: a connected RC queue pair (two engines over the
// simulated link) runs an honest workload while the input schedules the
// network and an attacker.
//
// Input layout (bytes; anything missing reads as 0):
//   [0]      configuration: PMTU (bits 0-1: 256 << n), selective repeat (2),
//            initial PSNs near the 24-bit wrap (3), window (4-5: 2 << n),
//            READ/atomic depth and replay cache (6-7)
//   [1]      congestion control: mode (bits 0-1: both, DCQCN, delay, off),
//            no ECN-capable marking (2), paced at the line rate (3), line
//            rate (4-5: 100 Gb/s, 10 Gb/s, 1 Gb/s, 100 Mb/s), delay target
//            (6-7: 50 us, 5 us, 500 us, 20 us); 0: the interface default
//   [2]      number of work requests (1 + n % kSlots)
//   2 per WR side (bit 0), operation (1-3), fence (4), two SGEs (5),
//            compare matches (6, compare-and-swap), through the RMR (7,
//            READ); size class
//   then     actions (see act()), until the input ends; then every frame
//            is delivered and time runs until the pair is quiet.
// Every frame an engine sends is held by the fuzzer (the link's filter) until
// an action delivers, drops, duplicates or reorders it.  Attacks: a recent
// frame mutated (opcode, PSN, QPN, rkey, VA, DMA length, AETH, atomic fields,
// payload, length, source address) or a frame built from fuzzer-chosen
// fields, its IPv4 checksum and ICRC repaired so it reaches the state
// machines, injected towards either side.  Congestion signals (a CNP for the
// queue pair from its peer's address, or the next frame on the wire marked
// CE) are not forgeries: they may slow a pair down, never change a byte or
// stop it, so the exactness invariants keep holding after them.
//
// Invariants (abort on violation):
//  - no crash, no UB, no access to a guard page (ASan/UBSan, PROT_NONE);
//  - memory nobody granted never changes: local-read-only sources, a region
//    registered for local access only, the bytes before each registration,
//    the parts of the RMR's LMR outside its window, receive buffers never
//    posted, READ/atomic result bytes outside the posted scatter lists;
//  - every posted work request completes exactly once (by cookie), with a
//    status of the enumeration, on its own queue pair; once the attacker is
//    gone, within bounded time (no livelock);
//  - when no forged frame reached a queue pair (each was refused by the
//    parser, named another QPN or came from another address): every success
//    is byte-exact (WRITE, READ, SEND, immediate data, atomics executed once
//    with the right original value), a failure leaves each byte either
//    untouched or as the transfer would have written it, and two queue pairs
//    still connected at the end have completed every request successfully.
//    A forged frame with the peer's address, the QPN and a PSN in the window
//    is indistinguishable from the peer's (RoCE has no authentication): the
//    honest packet with that PSN is then a duplicate, acknowledged, and its
//    sender sees success although the attacker's bytes were placed.  After
//    such a frame only the memory, completion and liveness invariants hold.
//  - the link's buffers all come back (no frame leaked by an engine).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "qp_attacker.hpp"
#include "qp_world.hpp"
#include "wire/packet.hpp"

using namespace dpdat;
using namespace dpdat::fuzz;
using rc::Completion;
using rc::WcStatus;
using rc::WrOp;

namespace {

constexpr std::array<uint32_t, 16> kSizes = {0,   1,   3,   8,    31,   64,   255,  256,
                                             257, 511, 512, 1000, 1024, 1025, 1536, 2048};
constexpr WrOp kOps[8] = {WrOp::kWrite, WrOp::kWriteImm,    WrOp::kSend,     WrOp::kSendImm,
                          WrOp::kRead,  WrOp::kCompareSwap, WrOp::kFetchAdd, WrOp::kWrite};

struct OpSpec {
  int side = 0;
  WrOp op = WrOp::kWrite;
  bool via_rmr = false;  // WRITE / READ through the peer's RMR window
  bool fence = false, two_sge = false, cas_match = false;
  uint64_t len = 0;
  uint64_t compare = 0, swap_add = 0;
  uint32_t imm = 0;
  bool atomic() const { return op == WrOp::kCompareSwap || op == WrOp::kFetchAdd; }
  bool write() const { return op == WrOp::kWrite || op == WrOp::kWriteImm; }
  bool send() const { return op == WrOp::kSend || op == WrOp::kSendImm; }
  bool needs_recv() const { return send() || op == WrOp::kWriteImm; }
  bool has_imm() const { return op == WrOp::kSendImm || op == WrOp::kWriteImm; }
};

struct WrRec {
  bool posted = false;
  int completions = 0;
  Completion c;
};

constexpr uint64_t kSendCookie = 1ull << 32, kRecvCookie = 2ull << 32;
constexpr uint64_t kStepNs = 1'000;

// QP_FUZZ_VERBOSE=1: one line per input on how it ended (for reading seeds).
bool verbose() {
  static const bool v = std::getenv("QP_FUZZ_VERBOSE") != nullptr;
  return v;
}

bool trace() {
  static const bool v = std::getenv("QP_FUZZ_TRACE") != nullptr;
  return v;
}

uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// The process-wide parts: the link (its buffer pool is large) and the
// guarded regions, made once.
struct Static {
  rc::SimLink link{1, 1024, 512};
  Host host[2] = {Host(100), Host(200)};
};
Static& statics() {
  static Static* s = new Static();  // never destroyed: libFuzzer may exit from any thread
  return *s;
}

class Run {
 public:
  explicit Run(Bytes& in)
      : in_(in),
        st_(statics()),
        link_(st_.link),
        cfg_(in.u8()),
        attacker_(in, 256u << (cfg_ & 3u)) {
    const uint8_t cfg = cfg_;
    qcfg_.pmtu = 256u << (cfg & 3u);
    qcfg_.selective_repeat = (cfg & 4u) != 0;
    qcfg_.window = 2u << ((cfg >> 4) & 3u);
    static constexpr uint32_t kDepth[4] = {1, 2, 4, 8};
    qcfg_.max_rd_atomic = kDepth[cfg >> 6];
    qcfg_.replay_depth = kDepth[cfg >> 6] * 2;
    qcfg_.sq_depth = 16;
    qcfg_.rq_depth = 16;
    qcfg_.ack_every = 4;
    qcfg_.retransmit_timeout_ns = 200'000;
    qcfg_.rto_min_ns = 20'000;
    qcfg_.tlp_min_ns = 10'000;
    qcfg_.retry_count = 3;
    qcfg_.rnr_retry = 2;
    qcfg_.rnr_delay_ns = 20'000;
    qcfg_.ack_delay_ns = 5'000;
    const uint32_t psn0 = (cfg & 8u) != 0 ? 0xFFFFF0u : 0u;
    const uint8_t cc = in_.u8();
    static constexpr rc::CcMode kModes[4] = {rc::CcMode::kBoth, rc::CcMode::kDcqcn,
                                             rc::CcMode::kDelay, rc::CcMode::kOff};
    static constexpr uint64_t kRates[4] = {100'000'000'000, 10'000'000'000, 1'000'000'000,
                                           100'000'000};
    static constexpr uint64_t kTargets[4] = {50'000, 5'000, 500'000, 20'000};
    qcfg_.cc.mode = kModes[cc & 3u];
    qcfg_.ecn_capable = (cc & 4u) == 0;
    qcfg_.cc.pace_line_rate = (cc & 8u) != 0;
    qcfg_.cc.line_rate_bps = kRates[(cc >> 4) & 3u];
    qcfg_.cc.target_delay_ns = kTargets[cc >> 6];

    nops_ = 1 + in_.u8() % kSlots;
    for (uint32_t i = 0; i < nops_; ++i) {
      const uint8_t b = in_.u8();
      OpSpec& o = ops_[i];
      o.side = b & 1;
      o.op = kOps[(b >> 1) & 7u];
      o.via_rmr = ((b >> 1) & 7u) == 7 || (o.op == WrOp::kRead && (b & 0x80u) != 0);
      o.fence = (b & 0x10u) != 0;
      o.two_sge = (b & 0x20u) != 0;
      o.cas_match = (b & 0x40u) != 0;
      o.len = o.atomic() ? 8 : kSizes[in_.u8() % kSizes.size()];
      const Host& peer = st_.host[1 - o.side];
      const uint64_t orig = orig_at(peer, i);
      o.compare = o.cas_match ? orig : orig ^ 1u;
      o.swap_add = 0x0101010101010101ull * (i + 1);
      o.imm = 0xABC00000u | i;
    }

    for (Host& h : st_.host) h.reset();
    rc::EngineConfig ecfg;
    ecfg.max_qps = 2;
    ecfg.pmtu = 4096;
    ecfg.burst = 8;
    for (int s = 0; s < 2; ++s) {
      Side& sd = side_[s];
      // Fixed key secrets: an input replays the same way in every run.
      sd.mr = std::make_unique<rc::MrTable>(8, 2, 0x5eed0000u + static_cast<uint64_t>(s),
                                            0x0123456789abcdefull);
      register_host(*sd.mr, st_.host[s]);
      sd.engine = std::make_unique<rc::Engine>(link_.end(s), *sd.mr, ecfg);
      sd.scq = std::make_unique<rc::CompletionQueue>(64);
      sd.rcq = std::make_unique<rc::CompletionQueue>(64);
      sd.qp = sd.engine->create_qp(kPz, qcfg_, sd.scq.get(), sd.rcq.get());
      QP_CHECK(sd.qp != nullptr);
    }
    for (int s = 0; s < 2; ++s) {
      rc::PathInfo p;
      p.local_mac = kMac[s];
      p.peer_mac = kMac[1 - s];
      p.local_ip = kIp[s];
      p.peer_ip = kIp[1 - s];
      p.udp_src_port = static_cast<uint16_t>(0xC000 + s);
      p.peer_qpn = side_[1 - s].qp->qpn();
      QP_CHECK(side_[s].qp->connect(p, wire::Psn(psn0 + static_cast<uint32_t>(s) * 0x100),
                                    wire::Psn(psn0 + static_cast<uint32_t>(1 - s) * 0x100)));
    }
    link_.set_now(now_);
    link_.set_filter([this](int from, const uint8_t* d, uint32_t len) {
      hold(1 - from, d, len);
      return false;
    });
    // Receives for every SEND / WRITE with immediate, in WR order.
    for (uint32_t i = 0; i < nops_; ++i) {
      if (!ops_[i].needs_recv()) continue;
      const int p = 1 - ops_[i].side;
      rc::RecvWr r;
      r.cookie = kRecvCookie | i;
      r.num_sge = 1;
      r.sge[0] = rc::Sge{st_.host[p].rcv_lmr, st_.host[p].rcv.va() + i * kSlot, kSlot};
      QP_CHECK(side_[p].qp->post_recv(r) == rc::Qp::PostResult::kOk);
      recv_[i].posted = true;
    }
  }

  ~Run() { link_.set_filter(nullptr); }

  void go() {
    while (!in_.empty()) act(in_.u8());
    finish();
  }

 private:
  static uint64_t orig_at(const Host& h, uint32_t i) {
    uint8_t b[8];
    for (int k = 0; k < 8; ++k) b[k] = h.tgt.pristine(static_cast<int64_t>(i * kSlot) + k);
    return load64(b);
  }

  // ---------------------------------------------------------------- network
  void hold(int to, const uint8_t* d, uint32_t len) {
    wire_[to].emplace_back(d, d + len);
    auto& rec = recent_[to];
    if (rec.size() == 16) rec.erase(rec.begin());
    rec.emplace_back(d, d + len);
    if (len >= wire::kL2L3L4Size + sizeof(wire::Bth)) {
      const uint8_t* bth = d + wire::kL2L3L4Size;
      const uint32_t psn = (uint32_t{bth[9]} << 16) | (uint32_t{bth[10]} << 8) | bth[11];
      if (wire::op_info(bth[0]).is(wire::op::kRequest))
        last_req_psn_[to] = psn;
      else
        last_resp_psn_[to] = psn;
    }
  }
  void deliver(int to) {
    if (wire_[to].empty()) return;
    const auto& f = wire_[to].front();
    if (trace()) {
      wire::PacketView v;
      const auto r =
          wire::parse_packet(f, wire::ParseOptions{.pmtu = 4096, .full_segments = false}, v);
      if (r == wire::Reject::kNone)
        std::fprintf(stderr, "  t=%llu -> %d %s psn %06x%s", static_cast<unsigned long long>(now_),
                     to, std::string(v.info->name).c_str(), v.bth->psn().value(),
                     v.bth->ack_req() ? " AR" : "");
      if (r == wire::Reject::kNone && v.aeth != nullptr)
        std::fprintf(stderr, " syn %02x msn %u", v.aeth->syndrome, v.aeth->msn());
      if (r == wire::Reject::kNone && v.reth != nullptr)
        std::fprintf(stderr, " len %u", v.reth->dma_len.value());
      std::fprintf(stderr, "\n");
    }
    link_.inject(to, f.data(), static_cast<uint32_t>(f.size()));
    wire_[to].pop_front();
  }
  void deliver_all() {
    for (int to = 0; to < 2; ++to)
      while (!wire_[to].empty()) deliver(to);
  }
  // A forged frame: injected; noted when the engine would hand it to the
  // queue pair (it passes the parser as the engine runs it, names the queue
  // pair and comes from its peer's address).  Anything else must be as
  // harmless as if it had never been sent.
  void forge(int to, const std::vector<uint8_t>& f) {
    wire::PacketView v;
    const wire::ParseOptions opts{.pmtu = 4096, .full_segments = false};
    if (wire::parse_packet(f, opts, v) == wire::Reject::kNone &&
        v.bth->dest_qp() == side_[to].qp->qpn() && v.ip->src.value() == kIp[1 - to]) {
      reached_ = true;
      if (trace())
        std::fprintf(stderr, "  t=%llu FORGED -> %d %s psn %06x qpn %x\n",
                     static_cast<unsigned long long>(now_), to, std::string(v.info->name).c_str(),
                     v.bth->psn().value(), v.bth->dest_qp());
    }
    link_.inject(to, f.data(), static_cast<uint32_t>(f.size()));
  }

  void poll() {
    link_.set_now(now_);
    side_[0].engine->poll(now_);
    side_[1].engine->poll(now_);
    now_ += kStepNs;
    drain();
  }
  uint64_t next_deadline() const {
    uint64_t next = 0;
    for (const Side& s : side_) {
      const uint64_t d = s.engine->next_timer_deadline();
      if (d != 0 && (next == 0 || d < next)) next = d;
    }
    return next;
  }

  // ---------------------------------------------------------------- work
  void post_next() {
    if (next_op_ >= nops_) return;
    const uint32_t i = next_op_++;
    const OpSpec& o = ops_[i];
    const Host& h = st_.host[o.side];
    const Host& p = st_.host[1 - o.side];
    rc::SendWr w;
    w.cookie = kSendCookie | i;
    w.op = o.op;
    w.flags = rc::wr_flag::kSignaled | (o.fence ? rc::wr_flag::kFence : 0u);
    const bool local_is_res = o.op == WrOp::kRead || o.atomic();
    const uint32_t lkey = local_is_res ? h.res_lmr : h.src_lmr;
    const uint64_t lva = (local_is_res ? h.res.va() : h.src.va()) + i * kSlot;
    if (o.two_sge && o.len >= 2) {
      const uint64_t half = o.len / 2;
      w.num_sge = 2;
      w.sge[0] = rc::Sge{lkey, lva, half};
      w.sge[1] = rc::Sge{lkey, lva + half, o.len - half};
    } else {
      w.num_sge = 1;
      w.sge[0] = rc::Sge{lkey, lva, o.len};
    }
    if (o.via_rmr) {
      w.remote_va = p.win.va() + kWinPad + i * kSlot;
      w.rkey = p.win_rkey;
    } else {
      w.remote_va = p.tgt.va() + i * kSlot;
      w.rkey = p.tgt_lmr;
    }
    w.imm = o.imm;
    w.compare = o.compare;
    w.swap_add = o.swap_add;
    const auto r = side_[o.side].qp->post_send(w);
    // Refused only once the queue pair is in error (the attacker broke it).
    QP_CHECK(r == rc::Qp::PostResult::kOk || (r == rc::Qp::PostResult::kInvalidState &&
                                              side_[o.side].qp->state() == rc::QpState::kError));
    send_[i].posted = r == rc::Qp::PostResult::kOk;
  }

  void record(int s, const Completion& c, bool is_send) {
    QP_CHECK(static_cast<size_t>(c.status) < static_cast<size_t>(WcStatus::kCount));
    QP_CHECK(c.qpn == side_[s].qp->qpn());
    const uint64_t tag = is_send ? kSendCookie : kRecvCookie;
    QP_CHECK((c.cookie & ~0xFFFFFFFFull) == tag);
    const uint64_t i = c.cookie & 0xFFFFFFFFull;
    QP_CHECK(i < nops_);
    const OpSpec& o = ops_[i];
    WrRec& r = is_send ? send_[i] : recv_[i];
    QP_CHECK(r.posted && r.completions == 0);
    QP_CHECK(is_send ? o.side == s : (o.side != s && o.needs_recv()));
    r.completions++;
    r.c = c;
    if (is_send) QP_CHECK(c.op == rc::wc_op_of(o.op));
  }
  void drain() {
    for (int s = 0; s < 2; ++s) {
      Completion c;
      while (side_[s].scq->pop(&c)) record(s, c, true);
      while (side_[s].rcq->pop(&c)) record(s, c, false);
    }
  }

  // ---------------------------------------------------------------- attacks
  AttackTarget target(int to) const {
    return AttackTarget{&st_.host[to],     side_[to].qp->qpn(), kIp[1 - to],
                        kIp[to],           kMac[1 - to],        kMac[to],
                        last_req_psn_[to], last_resp_psn_[to],  &recent_[to]};
  }
  void inject_mutated(int to) {
    if (auto f = attacker_.mutated(target(to)); !f.empty()) forge(to, f);
  }
  void inject_built(int to) {
    if (auto f = attacker_.built(target(to)); !f.empty()) forge(to, f);
  }
  // A congestion signal towards side `to`: a CNP for its queue pair from its
  // peer's address, or (ce) the next frame on the wire to it marked CE.
  void congestion(int to, bool ce) {
    if (ce) {
      if (wire_[to].empty()) return;
      auto& f = wire_[to].front();
      if (f.size() < sizeof(wire::EthHdr) + sizeof(wire::Ipv4Hdr)) return;
      // IPv4 ECN field: CE, as a switch marks it: the IPv4 checksum is
      // made again, the ICRC (which does not cover the field) is left as it
      // is, so a frame corrupted on the wire stays refused.
      auto* ip = reinterpret_cast<wire::Ipv4Hdr*>(f.data() + sizeof(wire::EthHdr));
      ip->tos = static_cast<uint8_t>(ip->tos | 3u);
      ip->checksum = wire::Be16(0);
      ip->checksum = wire::Be16(wire::ipv4_checksum(*ip));
      return;
    }
    wire::BuildSpec s;
    s.src_mac = kMac[1 - to];
    s.dst_mac = kMac[to];
    s.src_ip = kIp[1 - to];
    s.dst_ip = kIp[to];
    s.src_port = 0xC000;
    s.opcode = wire::Opcode::kCnp;
    s.dest_qp = side_[to].qp->qpn();
    std::vector<uint8_t> f(rc::SimLink::kBufSize);
    const auto r = wire::build_packet(f, s, 4096);
    QP_CHECK(r.ok());
    link_.inject(to, f.data(), static_cast<uint32_t>(r.len));
  }

  // ---------------------------------------------------------------- schedule
  void act(uint8_t a) {
    const int to = (a >> 4) & 1;
    switch (a & 15u) {
      case 0:
        deliver(to);
        break;
      case 1:  // lost
        if (!wire_[to].empty()) wire_[to].pop_front();
        break;
      case 2:  // duplicated
        if (!wire_[to].empty()) wire_[to].push_back(wire_[to].front());
        break;
      case 3:  // reordered: the head goes behind the next (a >> 5) frames
        if (wire_[to].size() > 1) {
          auto f = std::move(wire_[to].front());
          wire_[to].pop_front();
          const size_t pos = std::min<size_t>(a >> 5, wire_[to].size());
          wire_[to].insert(wire_[to].begin() + static_cast<std::ptrdiff_t>(pos), std::move(f));
        }
        break;
      case 4:
        deliver_all();
        break;
      case 5:
        poll();
        break;
      case 6:  // time jumps to the next timer
        if (const uint64_t d = next_deadline(); d > now_) now_ = d;
        poll();
        break;
      case 7:
        now_ += uint64_t{in_.u8()} * 10'000;
        poll();
        break;
      case 8:
        inject_mutated(to);
        break;
      case 9:
        inject_built(to);
        break;
      case 10:  // a bit flipped on the wire, not repaired: the ICRC check drops it
        if (!wire_[to].empty()) {
          auto& f = wire_[to].front();
          const size_t bit = in_.u16() % (f.size() * 8);
          f[bit / 8] = static_cast<uint8_t>(f[bit / 8] ^ (1u << (bit % 8)));
        }
        break;
      case 11:
      case 12:
        post_next();
        break;
      case 15:
        congestion(to, (a & 0x20u) != 0);
        break;
      default:
        deliver_all();
        poll();
        break;
    }
  }

  bool all_sends_done() const {
    for (uint32_t i = 0; i < nops_; ++i)
      if (send_[i].posted && send_[i].completions == 0) return false;
    return true;
  }
  bool quiet() const {
    return wire_[0].empty() && wire_[1].empty() && link_.pending(0) == 0 && link_.pending(1) == 0 &&
           side_[0].engine->idle() && side_[1].engine->idle();
  }

  void finish() {
    while (next_op_ < nops_) post_next();
    const uint64_t end = now_ + 2'000'000'000ull;
    int iter = 0;
    for (; iter < 20000 && now_ < end; ++iter) {
      deliver_all();
      poll();
      if (all_sends_done() && quiet()) break;
      if (wire_[0].empty() && wire_[1].empty() && link_.pending(0) == 0 && link_.pending(1) == 0) {
        const uint64_t d = next_deadline();
        if (d == 0 && quiet()) break;
        if (d > now_) now_ = d;
      }
    }
    if (verbose()) {
      int ok = 0;
      for (uint32_t i = 0; i < nops_; ++i)
        ok += send_[i].completions == 1 && send_[i].c.status == WcStatus::kSuccess;
      std::fprintf(stderr,
                   "qp_fuzz: %u WRs, %d succeeded before teardown, QP states %d/%d (%s/%s), "
                   "forged frame reached: %s, virtual time %.3f ms, %d final iterations\n",
                   nops_, ok, static_cast<int>(side_[0].qp->state()),
                   static_cast<int>(side_[1].qp->state()),
                   std::string(rc::qp_error_name(side_[0].qp->error())).c_str(),
                   std::string(rc::qp_error_name(side_[1].qp->error())).c_str(),
                   reached_ ? "yes" : "no", static_cast<double>(now_) / 1e6, iter);
    }
    // With the attacker gone, every request ends within bounded time:
    // completed, or failed by the retry budgets (a forged frame may have
    // desynchronised the PSNs, but must not leave the pair exchanging packets
    // forever while requests hang).
    QP_CHECK(all_sends_done());
    const bool connected =
        side_[0].qp->state() == rc::QpState::kRts && side_[1].qp->state() == rc::QpState::kRts;
    if (!reached_ && connected) {
      // Nothing forged got in and nothing broke: everything succeeded.
      for (uint32_t i = 0; i < nops_; ++i) {
        QP_CHECK(send_[i].completions == 1 && send_[i].c.status == WcStatus::kSuccess);
        if (recv_[i].posted)
          QP_CHECK(recv_[i].completions == 1 && recv_[i].c.status == WcStatus::kSuccess);
      }
    }
    // Tear down as a disconnect does: what is left flushes.
    for (Side& s : side_) s.qp->set_error(rc::QpError::kDestroyed, now_);
    for (int k = 0; k < 4; ++k) {
      deliver_all();
      poll();
    }
    for (uint32_t i = 0; i < nops_; ++i) {
      QP_CHECK(send_[i].completions == (send_[i].posted ? 1 : 0));
      QP_CHECK(recv_[i].completions == (recv_[i].posted ? 1 : 0));
    }
    check_memory();
    if (!reached_) check_exact();
    for (Side& s : side_) {
      s.engine.reset();
      s.mr.reset();
    }
    // Frames still on the link go back to its pool; none may be missing.
    link_.set_now(UINT64_MAX);
    for (int e = 0; e < 2; ++e) {
      rc::Frame fr[32];
      while (const uint16_t n = link_.end(e).rx_burst(fr, 32)) link_.end(e).rx_release(fr, n);
    }
    QP_CHECK(link_.buffers_in_use() == 0);
    link_.set_now(0);
  }

  // ---------------------------------------------------------------- checks
  // What no grant covers, checked whatever the attacker did.
  void check_memory() const {
    for (int s = 0; s < 2; ++s) {
      const Host& h = st_.host[s];
      for (const Region* r : {&h.src, &h.tgt, &h.win, &h.rcv, &h.res, &h.secret})
        QP_CHECK(r->prefix_unchanged());
      QP_CHECK(h.src.unchanged(0, h.src.len()));
      QP_CHECK(h.secret.unchanged(0, h.secret.len()));
      QP_CHECK(h.win.unchanged(0, kWinPad));
      QP_CHECK(h.win.unchanged(kWinPad + kSlotsBytes, kWinPad));
      for (uint32_t i = 0; i < kSlots; ++i) {
        const auto off = static_cast<int64_t>(i * kSlot);
        const bool mine = i < nops_ && ops_[i].side == s;
        // Receive buffers: only those posted here.
        if (!(i < nops_ && recv_[i].posted && ops_[i].side != s))
          QP_CHECK(h.rcv.unchanged(off, kSlot));
        // Results: only the scatter list of a READ / atomic posted here.
        uint64_t granted = 0;
        if (mine && send_[i].posted && (ops_[i].op == WrOp::kRead || ops_[i].atomic()))
          granted = ops_[i].len;
        QP_CHECK(h.res.unchanged(off + static_cast<int64_t>(granted), kSlot - granted));
      }
    }
  }

  // Each byte of [off, off + n) of `r` is the pattern or `want`.
  static bool pattern_or(const Region& r, int64_t off, const uint8_t* want, uint64_t n) {
    for (uint64_t k = 0; k < n; ++k) {
      const uint8_t b = r.base()[off + static_cast<int64_t>(k)];
      if (b != r.pristine(off + static_cast<int64_t>(k)) && b != want[k]) return false;
    }
    return true;
  }
  static bool equal(const Region& r, int64_t off, const uint8_t* want, uint64_t n) {
    return n == 0 || std::memcmp(r.base() + off, want, n) == 0;
  }
  static std::vector<uint8_t> pristine_bytes(const Region& r, int64_t off, uint64_t n) {
    std::vector<uint8_t> v(n);
    for (uint64_t k = 0; k < n; ++k) v[k] = r.pristine(off + static_cast<int64_t>(k));
    return v;
  }

  // Honest runs: every slot holds exactly what its work request did.
  void check_exact() const {
    for (uint32_t i = 0; i < kSlots; ++i) {
      const auto off = static_cast<int64_t>(i * kSlot);
      const auto woff = static_cast<int64_t>(kWinPad) + off;
      if (i >= nops_) {
        for (const Host& h : st_.host) {
          QP_CHECK(h.tgt.unchanged(off, kSlot) && h.win.unchanged(woff, kSlot));
          QP_CHECK(h.rcv.unchanged(off, kSlot) && h.res.unchanged(off, kSlot));
        }
        continue;
      }
      const OpSpec& o = ops_[i];
      const Host& h = st_.host[o.side];
      const Host& p = st_.host[1 - o.side];
      const bool ok = send_[i].posted && send_[i].c.status == WcStatus::kSuccess;
      const uint64_t n = o.len;
      // Regions op i does not touch keep slot i.
      QP_CHECK(h.tgt.unchanged(off, kSlot) && h.win.unchanged(woff, kSlot));
      QP_CHECK(h.rcv.unchanged(off, kSlot));
      if (!(o.op == WrOp::kRead || o.atomic())) QP_CHECK(h.res.unchanged(off, kSlot));
      if (!o.send()) QP_CHECK(p.rcv.unchanged(off, kSlot));
      QP_CHECK(p.res.unchanged(off, kSlot));
      const Region& remote = o.via_rmr ? p.win : p.tgt;
      const Region& other = o.via_rmr ? p.tgt : p.win;
      const int64_t roff = o.via_rmr ? woff : off;
      QP_CHECK(other.unchanged(o.via_rmr ? off : woff, kSlot));
      const uint8_t* src = h.src.base() + off;

      if (o.write()) {
        QP_CHECK(remote.unchanged(roff + static_cast<int64_t>(n), kSlot - n));
        QP_CHECK(ok ? equal(remote, roff, src, n) : pattern_or(remote, roff, src, n));
      } else if (o.send()) {
        QP_CHECK(remote.unchanged(roff, kSlot));
        const WrRec& rv = recv_[i];
        if (ok) QP_CHECK(rv.c.status == WcStatus::kSuccess);
        if (rv.c.status == WcStatus::kSuccess) {
          QP_CHECK(rv.c.byte_len == n && equal(p.rcv, off, src, n));
          QP_CHECK(rv.c.has_imm == o.has_imm() && (!o.has_imm() || rv.c.imm == o.imm));
        } else {
          QP_CHECK(pattern_or(p.rcv, off, src, n));
        }
        QP_CHECK(p.rcv.unchanged(off + static_cast<int64_t>(n), kSlot - n));
      } else if (o.op == WrOp::kRead) {
        QP_CHECK(remote.unchanged(roff, kSlot));
        const auto want = pristine_bytes(remote, roff, n);
        QP_CHECK(ok ? equal(h.res, off, want.data(), n) : pattern_or(h.res, off, want.data(), n));
        QP_CHECK(h.res.unchanged(off + static_cast<int64_t>(n), kSlot - n));
      } else {  // atomics: executed at most once, exactly once when successful
        QP_CHECK(remote.unchanged(roff + 8, kSlot - 8));
        const uint64_t orig = orig_at(p, i);
        const uint64_t now_val =
            o.op == WrOp::kFetchAdd ? orig + o.swap_add : (orig == o.compare ? o.swap_add : orig);
        const uint64_t got_target = load64(remote.base() + roff);
        const uint64_t got_result = load64(h.res.base() + off);
        if (ok) {
          QP_CHECK(got_target == now_val && got_result == orig);
        } else {
          QP_CHECK(got_target == now_val || got_target == orig);
          uint8_t o8[8];
          std::memcpy(o8, &orig, 8);
          QP_CHECK(pattern_or(h.res, off, o8, 8));
        }
        QP_CHECK(h.res.unchanged(off + 8, kSlot - 8));
      }
      if (o.op == WrOp::kWriteImm) {
        const WrRec& rv = recv_[i];
        if (ok) QP_CHECK(rv.c.status == WcStatus::kSuccess);
        if (rv.c.status == WcStatus::kSuccess)
          QP_CHECK(rv.c.has_imm && rv.c.imm == o.imm && rv.c.op == rc::WcOp::kRecvWriteImm);
      }
    }
  }

  Bytes& in_;
  Static& st_;
  rc::SimLink& link_;
  uint8_t cfg_;  // the input's first byte
  Attacker attacker_;
  rc::QpConfig qcfg_;
  Side side_[2];
  uint64_t now_ = 1'000'000;
  uint32_t nops_ = 0, next_op_ = 0;
  std::array<OpSpec, kSlots> ops_{};
  std::array<WrRec, kSlots> send_{}, recv_{};
  std::deque<std::vector<uint8_t>> wire_[2];  // held frames, by destination
  std::vector<std::vector<uint8_t>> recent_[2];
  uint32_t last_req_psn_[2] = {0, 0}, last_resp_psn_[2] = {0, 0};
  bool reached_ = false;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  Run run(in);
  run.go();
  return 0;
}
