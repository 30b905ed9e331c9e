#pragma once
// The loop of every engine thread: the product's progress threads
// (dat_core/progress.cpp, one per engine of an interface in `busy` or
// `adaptive` mode) and the engine-level runner (engine_runner.hpp, the
// micro-benchmark's engine threads).  What differs between them is the turn
// (a Driver); the loop, its back-off, its sleep and its wake-ups are this:
//
//   while not stopped:
//     the driver may take the turn off (an adaptive thread steps aside while
//       a consumer drives its engine: Driver::stand_by)
//     turn = Driver::turn(now)                 one poll of the engine and
//                                              whatever rides on it
//     busy, or the turn moved anything: go on
//     else ask the back-off (backoff.hpp) how long to sleep, never past the
//       driver's next deadline nor its sleep cap; 0: go on
//     sleep until then or until wake() (a post handed over, a frame handed
//       in, a control request, stop())
//
// A busy loop publishes a heartbeat (beating()): while it beats, the
// threads that post to its engine leave the engine to it instead of taking
// its token (dat_core/ops_post.cpp).  Time comes from the caller's clock.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "rc/engine/backoff.hpp"

namespace dpdat::rc {

// Pins the calling thread to one CPU; false when the OS refuses (cpu < 0:
// nothing to do, true).
bool pin_this_thread(int cpu);

struct EngineLoopConfig {
  bool busy = false;  // never sleeps; publishes a heartbeat
  BackoffConfig backoff;
};

class EngineLoop {
 public:
  using Clock = uint64_t (*)();  // nanoseconds, monotonic

  class Driver {
   public:
    virtual ~Driver() = default;
    // Before a turn: true when the thread should not take it now (it waited
    // meanwhile, e.g. with EngineLoop::wait_for).
    virtual bool stand_by(uint64_t /*now*/) { return false; }
    // One turn: true when anything moved (frames, posts, completions).
    virtual bool turn(uint64_t now) = 0;
    // For the back-off after a turn that moved nothing: when traffic last
    // moved, and the earliest deadline of what the turn drives (UINT64_MAX:
    // none; a second one for a second timer wheel, such as the CM's).
    virtual uint64_t last_traffic(uint64_t now) = 0;
    virtual uint64_t next_due(uint64_t now) = 0;
    virtual uint64_t next_due2(uint64_t /*now*/) { return UINT64_MAX; }
    // The longest sleep now (a loop whose queue pairs wait for a peer that
    // may share its CPU sleeps shorter, say).
    virtual uint64_t sleep_cap(uint64_t ns) { return ns; }
    // Work that ends a sleep early: checked once the loop is marked asleep,
    // so wake() after queueing work is never lost.
    virtual bool work_waiting() = 0;
    // A sleep the driver does itself (a link that wakes it on RX): true
    // when it slept.
    virtual bool sleep_on_link(uint64_t /*ns*/) { return false; }
  };

  // Heartbeat: stored every kBeatNs at most (each store costs the posters
  // that read it a cache miss); a thread silent for kBeatStaleNs (preempted
  // on a shared CPU, stopped) no longer counts as running its engine.
  static constexpr uint64_t kBeatNs = 20'000;
  static constexpr uint64_t kBeatStaleNs = 200'000;

  EngineLoop(const EngineLoopConfig& cfg, Clock clock) : cfg_(cfg), clock_(clock) {}
  EngineLoop(const EngineLoop&) = delete;
  EngineLoop& operator=(const EngineLoop&) = delete;

  void set_config(const EngineLoopConfig& cfg) { cfg_ = cfg; }
  const EngineLoopConfig& config() const { return cfg_; }

  // Runs on the calling thread until stop().
  void run(Driver& d);
  // Any thread.  Ends run() (after its current turn); a later run() starts
  // over.
  void stop();
  void restart() { stop_.store(false, std::memory_order_release); }
  bool stopping() const { return stop_.load(std::memory_order_acquire); }
  // Any thread: ends a sleep if the loop sleeps (cheap when it does not).
  void wake() {
    if (sleeping_.load(std::memory_order_acquire)) notify();
  }
  // Any thread: ends any wait of the loop's (sleep or wait_for), under the
  // loop's mutex, so a wait about to start sees what was changed before.
  void notify() {
    std::lock_guard<std::mutex> g(mu_);
    cv_.notify_all();
  }
  // The loop's thread (a driver's stand_by): waits up to ns or until
  // done() or stop().
  template <typename Pred>
  void wait_for(uint64_t ns, Pred done) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, std::chrono::nanoseconds(ns), [&] { return stopping() || done(); });
  }
  // Any thread: whether a busy loop is running its engine now.
  bool beating(uint64_t now) const {
    const uint64_t b = beat_.load(std::memory_order_relaxed);
    return b != 0 && (b >= now || now - b < kBeatStaleNs);
  }

  // Turns taken and sleeps begun (the loop's thread writes them).
  uint64_t turns() const { return turns_.load(std::memory_order_relaxed); }
  uint64_t sleeps() const { return sleeps_.load(std::memory_order_relaxed); }

 private:
  EngineLoopConfig cfg_;
  Clock clock_;
  std::atomic<bool> stop_{false};
  alignas(64) std::atomic<bool> sleeping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  alignas(64) std::atomic<uint64_t> beat_{0};
  alignas(64) std::atomic<uint64_t> turns_{0}, sleeps_{0};
};

}  // namespace dpdat::rc
