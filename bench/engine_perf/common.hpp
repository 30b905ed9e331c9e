#pragma once
// dpdat-engine-perf: the engine-level micro-benchmark.  It drives dpdat's RC
// engine directly (no DAT layer: the execution model below libdat), so
// dpdat-perf's API figures can be printed beside it as a ratio
// (bench/api_table.sh).  --json FILE writes every figure.
//
// Default (no arguments): client and server in one process over the
// in-process net_ring link, engines progressed inline by this thread, RDMA
// WRITE bandwidth for 2 B .. 1 MiB, then the 8 B WRITE latency.
//
//   dpdat-engine-perf [--op write|read|send] [--size N | --all] [--iters N]
//              [--lat | --bw] [--pmtu N] [--tx-depth N] [--window PKTS] [--gbn]
//
// Across processes, over any DPDK port (net_memif, net_af_packet on a veth,
// net_tap, a physical NIC):
//   dpdat-engine-perf --server --vdev net_memif0,role=server,socket=/tmp/m.sock
//              --ip 10.0.0.1 --oob /tmp/dpdat-engine-perf.sock
//   dpdat-engine-perf --client 10.0.0.1 --vdev net_memif0,role=client,socket=/tmp/m.sock
//              --ip 10.0.0.2 --oob /tmp/dpdat-engine-perf.sock [--verify]
// The peer's MAC is found by ARP; the QP numbers, PSNs and the target buffer
// are exchanged over the --oob Unix socket (as perftest uses a TCP side
// channel).  --verify reads every WRITE back and compares it byte for byte.
// --mtu N asks the PMD for a larger MTU (PMTU up to 4096); --engines N runs N
// engines on N RX/TX queue pairs of the port (a thread each, idle back-off)
// with --qps M queue pairs spread over them.  One cross-process path for
// every N >= 1 and M >= 1: bandwidth (WRITE, READ, SEND) on every QP, the
// latency on QP 0.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dpdk/loopback.hpp"
#include "dpdk/tsc_clock.hpp"
#include "rc/engine/engine_runner.hpp"
#include "rc/qp/qp.hpp"

namespace dpdat::engine_perf {

using namespace dpdat;

// The clock of every engine here: the product's (dat_core's DPDK link reads
// the TSC where the EAL measured its rate, steady_clock otherwise), so the
// engine level pays what the product pays for time.  On a 16-CPU KVM guest
// the vDSO's clock_gettime was a fifth of the engine-level 64 B profile.
// Before the EAL is up the TSC's rate is unknown: steady_clock for good.
inline uint64_t now_ns() {
  static const dpdk::TscClock clock;
  return clock.now();
}

// Every figure printed, for --json (main.cpp).
extern nlohmann::json g_bw;
extern nlohmann::json g_lat;

struct Options {
  std::string op = "write";
  std::vector<size_t> sizes;
  uint64_t iters = 0;  // 0: pick per size
  bool lat = false;
  bool bw = false;
  uint32_t pmtu = 1024;
  bool pmtu_given = false;  // --pmtu: the port must carry it (refused otherwise)
  uint16_t mtu = 1500;      // port MTU asked of the PMD (cross-process)
  uint32_t tx_depth = 128;
  uint32_t window = 0;  // 0: QpConfig's default
  bool gbn = false;
  rc::CcMode cc = rc::CcMode::kBoth;  // --cc: congestion control of the QPs
  // cross-process
  bool server = false;
  std::string client_of;  // server IPv4 address (client mode)
  std::string vdev;
  std::string ip;
  std::string oob = "/tmp/dpdat-engine-perf.sock";
  bool verify = false;
  double loss = 0.0;             // injected RX loss (fault injection for tests)
  uint16_t engines = 1;          // cross-process: engines = RX/TX queue pairs of the port
  uint16_t qps = 0;              // cross-process: queue pairs (0: one per engine)
  uint64_t rto_us = 0;           // retransmission timeout (0: QpConfig's default)
  bool thread_progress = false;  // --progress thread: dedicated engine threads
  // --threads (client, across processes): a thread per engine posts to, reaps
  // and drives its own engine, run to completion; none posts for another's.
  bool per_engine_threads = false;
  std::string json;  // --json FILE
};

struct Reg {
  std::vector<uint8_t> bytes;
  uint32_t lmr = 0;
  uint64_t va() const { return reinterpret_cast<uint64_t>(bytes.data()); }
};

inline bool reg(rc::MrTable& mr, uint32_t pz, size_t n, Reg* r) {
  r->bytes.assign(std::max<size_t>(n, 8), 0);
  return mr.mr_register(pz, r->bytes.data(), r->va(), r->bytes.size(), rc::priv::kAll, &r->lmr);
}
inline bool reg(dpdk::Endpoint& e, size_t n, Reg* r) { return reg(*e.mr, e.pz, n, r); }

struct BwTarget {
  uint64_t va;
  uint32_t rkey;
};

// A one-segment RDMA WR: n bytes at `off` in `local` and in the peer's `remote`.
inline rc::SendWr rdma_wr(rc::WrOp op, const Reg& local, BwTarget remote, size_t off, size_t n) {
  rc::SendWr w;
  w.op = op;
  w.num_sge = 1;
  w.sge[0] = rc::Sge{local.lmr, local.va() + off, n};
  w.remote_va = remote.va + off;
  w.rkey = remote.rkey;
  return w;
}

// The operation --op names.
inline rc::WrOp op_of(const Options& o) {
  return o.op == "read" ? rc::WrOp::kRead : o.op == "send" ? rc::WrOp::kSend : rc::WrOp::kWrite;
}

inline rc::SendWr make_wr(const Options& o, const Reg& src, const Reg& dst, size_t n,
                          bool signaled) {
  rc::SendWr w = rdma_wr(op_of(o), src, {dst.va(), dst.lmr}, 0, n);
  w.flags = signaled ? rc::wr_flag::kSignaled : 0u;
  return w;
}

// How work reaches an engine: straight into the QP (inline progress), or
// through an EngineRunner's inbox (dedicated engine thread).
struct Poster {
  rc::EngineRunner* runner = nullptr;
  bool send(rc::Qp* qp, const rc::SendWr& w) const {
    return runner != nullptr ? runner->post_send(qp, w)
                             : qp->post_send(w) == rc::Qp::PostResult::kOk;
  }
  bool recv(rc::Qp* qp, const rc::RecvWr& w) const {
    return runner != nullptr ? runner->post_recv(qp, w)
                             : qp->post_recv(w) == rc::Qp::PostResult::kOk;
  }
};

// Reads a byte another thread (an engine thread) may be writing.
inline uint8_t peek(const uint8_t& b) {
  return std::atomic_ref<const uint8_t>(b).load(std::memory_order_acquire);
}

// Prints one latency row and records it for --json (sorts `samples`).
void print_lat(size_t n, uint64_t iters, std::vector<double>& samples);

// Client and server in one process over the in-process net_ring link.
int run_local(const Options& o);
// One side across processes over o.vdev (one path for N >= 1 QPs).
int run_remote(const Options& o);
// Writes --json (if asked) and passes `rc` through.
int finish(const Options& o, int rc);

}  // namespace dpdat::engine_perf
