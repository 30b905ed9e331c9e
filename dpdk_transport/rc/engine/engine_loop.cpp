#include "rc/engine/engine_loop.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>

#include "rc/engine/cpu_relax.hpp"

namespace dpdat::rc {

bool pin_this_thread(int cpu) {
  if (cpu < 0) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<size_t>(cpu), &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

void EngineLoop::stop() {
  stop_.store(true, std::memory_order_release);
  notify();
}

void EngineLoop::run(Driver& d) {
  Backoff backoff(cfg_.backoff);
  uint64_t beat = 0;
  while (!stopping()) {
    uint64_t now = clock_();
    if (cfg_.busy && now - beat >= kBeatNs) {
      beat = now;
      beat_.store(now, std::memory_order_relaxed);
    }
    if (d.stand_by(now)) continue;
    const bool moved = d.turn(now);
    turns_.store(turns_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (moved || cfg_.busy) {
      backoff.moved(now);
      continue;
    }
    now = clock_();
    uint64_t ns = backoff.idle(now, d.last_traffic(now), d.next_due(now), d.next_due2(now));
    if (ns == 0) {
      cpu_relax();
      continue;
    }
    ns = d.sleep_cap(ns);
    if (d.sleep_on_link(ns)) continue;
    sleeps_.store(sleeps_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    // Marked asleep before the last look for work: a producer that queues
    // work and then sees the mark wakes this loop (wake()); one that saw no
    // mark queued its work before this look.
    sleeping_.store(true, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // the mark before the look
    if (!d.work_waiting() && !stopping()) {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait_for(lk, std::chrono::nanoseconds(ns),
                   [&] { return stopping() || d.work_waiting(); });
    }
    sleeping_.store(false, std::memory_order_relaxed);
  }
  beat_.store(0, std::memory_order_relaxed);  // the posters drive the engine from now on
}

}  // namespace dpdat::rc
