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
// Idle policy: kBusyPoll never sleeps (benchmarks, a core of its own);
// kBackoff is rc::Backoff (backoff.hpp), the back-off of the product's
// progress threads: it spins while traffic moved within `spin_us`, then
// sleeps with exponential back-off up to `max_sleep_us`
// (`active_max_sleep_us` while queue pairs wait for the peer; never past the
// next timer), and wakes at once when the consumer posts.  Traffic that arrives while it sleeps is
// picked up within max_sleep_us (no RX interrupts on virtual PMDs).

#include <pthread.h>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "engine.hpp"
#include "spsc_ring.hpp"

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

// Written by one thread each (posts: consumer; the rest: engine thread),
// readable from any thread.
struct RunnerCounters {
  std::atomic<uint64_t> polls{0}, sleeps{0}, wakeups_by_post{0}, posts{0}, rejected_posts{0};
};

class EngineRunner {
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

  const RunnerCounters& counters() const { return ctr_; }
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
  void loop();
  bool drain_inbox();

  Engine& engine_;
  RunnerConfig cfg_;
  Clock clock_;
  SpscRing<Cmd> inbox_;
  Cmd pending_{};
  bool has_pending_ = false;
  bool pending_rejected_ = false;  // pending_ was refused; its error completion waits for CQ room
  std::thread thread_;
  pthread_t tid_{};
  std::atomic<bool> stop_{false};
  std::atomic<bool> sleeping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  // call(): one control request at a time.
  std::mutex call_mu_;
  const std::function<void()>* call_fn_ = nullptr;
  std::atomic<bool> call_pending_{false};
  std::condition_variable call_done_;
  RunnerCounters ctr_;
};

}  // namespace dpdat::rc
