#pragma once
// Two RC engines, each with its own memory tables (two "IAs"), joined by the
// simulated link, driven on a virtual clock.  Shared by the sim tests and the
// protocol benchmarks.

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "rc/engine/engine.hpp"
#include "rc/mr_table.hpp"
#include "rc/qp/qp.hpp"
#include "sim/sim_link.hpp"

namespace dpdat::rc::test {

struct Side {
  std::unique_ptr<MrTable> mr;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<CompletionQueue> scq, rcq;
  Qp* qp = nullptr;
  uint32_t pz = 1;
};

// A registered buffer on one side.
struct Buffer {
  std::vector<uint8_t> bytes;
  uint32_t lmr = 0;
  uint64_t va() const { return reinterpret_cast<uint64_t>(bytes.data()); }
  uint8_t* data() { return bytes.data(); }
};

// The first request PSN of each side of a Pair: near the 24-bit wrap, so
// every long test crosses it.
inline constexpr uint32_t kFirstPsnA = 0xFFFF00;
inline constexpr uint32_t kFirstPsnB = 0xFFFE00;

class Pair {
 public:
  static constexpr uint64_t kStepNs = 1'000;

  // `io`, when given, names the packet I/O side i's engine uses, given the
  // link end (a test's device model wrapped around it; it must outlive the Pair).
  // `engine` configures both engines (its pmtu is always 4096).
  using IoWrap = std::function<PacketIo&(int, PacketIo&)>;
  explicit Pair(uint64_t seed, const QpConfig& qcfg = {}, uint32_t cq_depth = 4096,
                const IoWrap& io = {}, const EngineConfig& engine = {})
      : link_(seed, 8192, 4096) {
    EngineConfig ecfg = engine;
    ecfg.pmtu = 4096;
    for (int i = 0; i < 2; ++i) {
      Side& s = side_[i];
      s.mr = std::make_unique<MrTable>(256, 64);
      PacketIo& end = io ? io(i, link_.end(i)) : link_.end(i);
      s.engine = std::make_unique<Engine>(end, *s.mr, ecfg);
      s.scq = std::make_unique<CompletionQueue>(cq_depth);
      s.rcq = std::make_unique<CompletionQueue>(cq_depth);
      s.qp = s.engine->create_qp(s.pz, qcfg, s.scq.get(), s.rcq.get());
    }
    PathInfo p0, p1;
    p0.local_mac = {2, 0, 0, 0, 0, 1};
    p0.peer_mac = {2, 0, 0, 0, 0, 2};
    p0.local_ip = 0x0A000001;
    p0.peer_ip = 0x0A000002;
    p0.peer_qpn = side_[1].qp->qpn();
    p1.local_mac = p0.peer_mac;
    p1.peer_mac = p0.local_mac;
    p1.local_ip = p0.peer_ip;
    p1.peer_ip = p0.local_ip;
    p1.peer_qpn = side_[0].qp->qpn();
    p1.udp_src_port = 0xC001;
    side_[0].qp->connect(p0, wire::Psn(kFirstPsnA), wire::Psn(kFirstPsnB));
    side_[1].qp->connect(p1, wire::Psn(kFirstPsnB), wire::Psn(kFirstPsnA));
  }

  Side& a() { return side_[0]; }
  Side& b() { return side_[1]; }
  Side& side(int i) { return side_[i]; }
  SimLink& link() { return link_; }
  uint64_t now() const { return now_; }

  Buffer reg(int s, size_t len, uint32_t priv, uint8_t fill = 0) {
    Buffer b;
    b.bytes.assign(len == 0 ? 1 : len, fill);
    b.bytes.resize(len == 0 ? 1 : len);
    uint32_t ctx = 0;
    side_[s].mr->mr_register(side_[s].pz, b.bytes.data(), b.va(), len, priv, &ctx);
    b.lmr = ctx;
    return b;
  }

  // One step of virtual time: both engines poll once.
  void step() {
    link_.set_now(now_);
    side_[0].engine->poll(now_);
    side_[1].engine->poll(now_);
    now_ += kStepNs;
  }

  // Runs until `done()` holds or `max_ns` of virtual time passes.  When both
  // engines are quiet, jumps to the next timer deadline instead of spinning.
  template <typename Pred>
  bool run_until(Pred done, uint64_t max_ns = 20'000'000'000ull) {
    const uint64_t end = now_ + max_ns;
    while (now_ < end) {
      if (done()) return true;
      link_.set_now(now_);
      const uint32_t work = side_[0].engine->poll(now_) + side_[1].engine->poll(now_);
      if (work == 0 && link_.pending(0) == 0 && link_.pending(1) == 0) {
        uint64_t next = 0;
        for (auto& s : side_) {
          const uint64_t d = s.engine->next_timer_deadline();
          if (d != 0 && (next == 0 || d < next)) next = d;
        }
        if (next > now_) {
          now_ = next;
          continue;
        }
      }
      now_ += kStepNs;
    }
    return done();
  }

  // Runs until both sides are idle with nothing on the wire.
  bool settle(uint64_t max_ns = 20'000'000'000ull) {
    return run_until(
        [&] {
          return side_[0].engine->idle() && side_[1].engine->idle() && link_.pending(0) == 0 &&
                 link_.pending(1) == 0;
        },
        max_ns);
  }

 private:
  SimLink link_;
  Side side_[2];
  uint64_t now_ = 1'000'000;
};

inline void fill_pattern(std::vector<uint8_t>& v, uint64_t seed) {
  std::mt19937_64 r(seed);
  for (auto& b : v) b = static_cast<uint8_t>(r());
}

// A one-segment RDMA WRITE / READ of `len` bytes between `local` and
// `remote`, at `local_off` and `remote_off` in them.
inline SendWr rdma_wr(WrOp op, const Buffer& local, const Buffer& remote, uint64_t len,
                      uint64_t cookie = 0, uint64_t local_off = 0, uint64_t remote_off = 0) {
  SendWr w;
  w.op = op;
  w.cookie = cookie;
  w.num_sge = 1;
  w.sge[0] = Sge{local.lmr, local.va() + local_off, len};
  w.remote_va = remote.va() + remote_off;
  w.rkey = remote.lmr;
  return w;
}

inline std::vector<Completion> drain(CompletionQueue& cq) {
  std::vector<Completion> out;
  Completion c;
  while (cq.pop(&c)) out.push_back(c);
  return out;
}

}  // namespace dpdat::rc::test
