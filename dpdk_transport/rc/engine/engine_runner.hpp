#pragma once
// Dedicated-thread progress for one Engine (progress mode 1 of ARCHITECTURE
// decision 5; mode 2 — inline progress — is calling Engine::poll() from the
// consumer's own thread, as dpdat-perf does by default).
//
// A consumer thread hands work requests to the engine thread through a
// lock-free SPSC inbox and takes completions from the queue pairs' SPSC
// completion queues: no lock on the datapath.  Control operations (creating
// and connecting queue pairs) run on the engine thread through call(), which
// blocks the caller.
//
// The thread runs the product's engine loop (engine_loop.hpp) with its
// back-off: kBusyPoll never sleeps (benchmarks, a core of its own); kBackoff
// spins while traffic moved within `spin_us`, then sleeps with exponential
// back-off up to `max_sleep_us` (`active_max_sleep_us` while queue pairs
// wait for the peer; never past the next timer), and wakes at once when the
// consumer posts.  Traffic that arrives while it sleeps is picked up within
// max_sleep_us (no RX interrupts on virtual PMDs).

#include <pthread.h>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "rc/engine/engine.hpp"
#include "rc/engine/engine_loop.hpp"
#include "rc/util/spsc_ring.hpp"

namespace dpdat::rc {

enum class IdlePolicy : uint8_t { kBusyPoll, kBackoff };

struct RunnerConfig {
  IdlePolicy policy = IdlePolicy::kBackoff;
  uint32_t spin_us = 1000;
  uint32_t max_sleep_us = 200;
  uint32_t active_max_sleep_us = 20;  // the same while queue pairs are in flight
  int cpu = -1;                       // pin the engine thread to this CPU (-1: leave it to the OS)
  uint32_t inbox_depth = 4096;
  // Run first on the engine thread (DPDK: register it with the EAL, so its
  // mbuf allocations use a per-lcore mempool cache, not the shared ring).
  std::function<void()> on_start;
};

// A snapshot of a runner's counts.
struct RunnerCounters {
  uint64_t polls = 0;           // turns of the engine thread's loop
  uint64_t sleeps = 0;          // sleeps it began
  uint64_t posts = 0;           // work requests handed in (consumer)
  uint64_t rejected_posts = 0;  // refused by their queue pair on the engine thread
};

class EngineRunner : private EngineLoop::Driver {
 public:
  using Clock = uint64_t (*)();  // nanoseconds, monotonic

  EngineRunner(Engine& engine, const RunnerConfig& cfg, Clock clock);
  ~EngineRunner();  // stops and joins
  EngineRunner(const EngineRunner&) = delete;
  EngineRunner& operator=(const EngineRunner&) = delete;

  void start();
  void stop();

  // Consumer side: one producer thread per runner.  false: the inbox is full
  // (back-pressure: poll completions and try again).  A work request the queue
  // pair refuses on the engine thread (QP not connected, malformed) completes
  // with WcStatus::kLocalQpOperationError; a full send/receive queue is
  // retried in order, never dropped.
  bool post_send(Qp* qp, const SendWr& wr) { return post(Cmd{qp, true, wr, {}}); }
  bool post_recv(Qp* qp, const RecvWr& wr) { return post(Cmd{qp, false, {}, wr}); }

  // Runs fn on the engine thread and waits for it (control path only).
  void call(const std::function<void()>& fn);

  RunnerCounters counters() const;
  // CPU time the engine thread has consumed so far (seconds).
  double cpu_seconds() const;
  Engine& engine() { return engine_; }

 private:
  struct Cmd {
    Qp* qp = nullptr;
    bool is_send = true;
    SendWr send;
    RecvWr recv;
  };
  bool post(const Cmd& c);
  bool drain_inbox();
  // EngineLoop::Driver
  bool turn(uint64_t now) override;
  uint64_t last_traffic(uint64_t) override { return last_traffic_; }
  uint64_t next_due(uint64_t) override;
  uint64_t sleep_cap(uint64_t ns) override;
  bool work_waiting() override { return !inbox_.empty() || call_pending_.load(); }

  Engine& engine_;
  RunnerConfig cfg_;
  EngineLoop loop_;
  SpscRing<Cmd> inbox_;
  Cmd pending_{};
  bool has_pending_ = false;
  bool pending_rejected_ = false;  // pending_ was refused; its error completion waits for CQ room
  uint64_t last_traffic_ = 0;      // engine thread
  std::thread thread_;
  pthread_t tid_{};
  // call(): one control request at a time, run by the engine thread under mu_.
  std::mutex call_mu_;
  std::mutex mu_;
  const std::function<void()>* call_fn_ = nullptr;
  std::atomic<bool> call_pending_{false};
  std::condition_variable call_done_;
  // What the consumer counts and what the engine thread counts, apart.
  alignas(64) std::atomic<uint64_t> posts_{0};
  alignas(64) std::atomic<uint64_t> rejected_posts_{0};
};

}  // namespace dpdat::rc
