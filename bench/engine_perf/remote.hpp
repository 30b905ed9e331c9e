#pragma once
// dpdat-engine-perf across processes (one path for N >= 1 engines and
// M >= 1 QPs): the bootstrap protocol over the --oob Unix socket, the
// engines/QPs of one side (Multi), and the two roles (remote_server.cpp,
// remote_client.cpp).

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "dpdk/eal.hpp"
#include "oob.hpp"
#include "rc/engine/engine_group.hpp"

namespace dpdat::engine_perf {

struct Hello {
  uint32_t ip;
  uint32_t qpn;
  uint32_t psn;
  uint32_t rkey;
  uint64_t buf_va;
  uint64_t buf_len;
  uint32_t pmtu;     // the largest this side can use; both take the smaller
  uint16_t engines;  // --engines and --qps: both sides must agree
  uint16_t qps;
};
enum : uint32_t { kCmdBw = 1, kCmdLat = 2, kCmdDone = 3 };
enum : uint32_t { kOpWrite = 0, kOpRead = 1, kOpSend = 2 };  // Cmd::pad for kCmdBw
struct Cmd {
  uint32_t kind;
  uint32_t pad;
  uint64_t size;
  uint64_t iters;
};

// Byte i of the server's initial buffer (READ verification).
inline uint8_t pattern_byte(size_t i) { return static_cast<uint8_t>(i * 131 + 7); }

// ------------------------------------------- several engines, several QPs
// --engines N: the port gets N RX/TX queue pairs, one engine each, grouped
// (QPN bits 16..23 name the owner; a frame arriving on another engine's
// queue is handed over in software).  N > 1: each engine runs on its own
// EngineRunner thread with idle back-off (never pinned: the threads sleep
// when idle, so they can share this machine's CPUs); this thread only posts
// and reaps.  N = 1: progressed inline by this thread.
// --qps M: M queue pairs, QP k on engine k % N, each writing/reading its own
// n-byte slice of the peer's buffer.
struct Multi {
  ~Multi();
  std::unique_ptr<dpdk::Port> port;
  std::unique_ptr<rc::MrTable> mr;
  std::unique_ptr<rc::EngineGroup> group;
  std::vector<std::unique_ptr<rc::Engine>> engines;
  std::vector<std::unique_ptr<rc::EngineRunner>> runners;      // empty: inline
  std::vector<std::unique_ptr<rc::CompletionQueue>> scq, rcq;  // per QP
  std::vector<rc::Qp*> qps;
  std::vector<std::string> names;
  Reg buf;  // the region the peer writes into / reads from
  Reg aux;  // latency: the pong source
  Hello peer{};
  size_t engine_of(size_t k) const { return k % engines.size(); }
  // Where QP k's receives land (SEND): its share of the buffer.
  static size_t recv_slice(size_t buf_len, size_t nq) { return buf_len / nq; }
  // Inline progress, or (engine threads) a yield.
  void poll_or_yield() {
    if (runners.empty()) {
      poll_inline();
    } else {
      std::this_thread::yield();
    }
  }
  Poster poster(size_t k) const {
    return Poster{runners.empty() ? nullptr : runners[engine_of(k)].get()};
  }
  // Inline progress (before the runners start, or N = 1).  Engines use
  // now_ns, the runners' clock, throughout.
  void poll_inline() {
    const uint64_t t = now_ns();
    for (auto& e : engines) e->poll(t);
  }
  void start_runners() {
    if (engines.size() < 2) return;
    rc::RunnerConfig rcfg;
    rcfg.policy = rc::IdlePolicy::kBackoff;
    rcfg.on_start = [] { (void)dpdk::register_thread(); };
    for (auto& e : engines) {
      runners.push_back(std::make_unique<rc::EngineRunner>(*e, rcfg, &now_ns));
      runners.back()->start();
    }
  }
  // Until every engine is idle or timeout_ns passes.
  void drain(uint64_t timeout_ns);
  // After the runners stopped: every QP still connected, per-queue traffic.
  // Prints the counters; false if a QP broke.
  bool report(const char* who);
};

// Opens the port, creates the engines and QPs, registers the buffers,
// exchanges Hellos and QP numbers over *oob, resolves the peer and connects
// every QP; starts the engine threads (N > 1).  False after a message.
bool multi_setup(const Options& o, size_t max_size, Multi* m, tools::Oob* oob);

// Keeps every QP's receive queue full (SEND rounds): receives of QP k land
// in its share of the buffer, full-share long so ones left over from a
// smaller round still fit.  Counts receive completions in error.
void refill_recvs(Multi& m, uint64_t size, uint64_t* recv_errors);

// The two roles, each one path for N >= 1 engines and M >= 1 QPs; buffers
// of max_size bytes.  Exit status.
int run_multi_server(const Options& o, size_t max_size);
int run_multi_client(const Options& o, size_t max_size);

}  // namespace dpdat::engine_perf
