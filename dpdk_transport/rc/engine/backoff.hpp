#pragma once
// The idle back-off of every engine loop: the product's progress threads
// (dat_core/progress.cpp) and the engine-level runner (engine_runner.hpp).
// After a poll that moved nothing, a loop asks idle() how long to sleep:
//   - 0 (keep polling) while traffic moved within spin_ns: a transfer in
//     flight is served by a spinning loop, never by a wake-up;
//   - otherwise a sleep that doubles from first_sleep_us up to max_sleep_us
//     (deep_factor times that after deep_idle_ns without traffic), and never
//     past the next timer the caller names (retransmission, ACK coalescing,
//     CM), so an engine never sleeps through its own deadlines.
// moved() after a poll that did something starts the doubling over.
// Time is a parameter (nanoseconds); nothing here reads a clock.

#include <algorithm>
#include <cstdint>

namespace dpdat::rc {

struct BackoffConfig {
  uint64_t spin_ns = 1'000'000;
  uint64_t max_sleep_us = 200;
  uint64_t deep_idle_ns = 100'000'000;
  uint64_t deep_factor = 5;
  uint64_t first_sleep_us = 1;  // the first sleep after traffic, doubling from there
};

class Backoff {
 public:
  explicit Backoff(const BackoffConfig& cfg) : cfg_(cfg), sleep_us_(cfg.first_sleep_us) {}

  void moved(uint64_t /*now*/) { sleep_us_ = cfg_.first_sleep_us; }

  // Nanoseconds to sleep before the next poll (0: poll again at once).
  // next_due: the earliest timer deadline of what the loop drives
  // (UINT64_MAX: none).
  uint64_t idle(uint64_t now, uint64_t last_traffic, uint64_t next_due,
                uint64_t next_due2 = UINT64_MAX) {
    if (now - last_traffic < cfg_.spin_ns) return 0;
    const uint64_t due = std::min(next_due, next_due2);
    const bool deep = now - last_traffic >= cfg_.deep_idle_ns;
    // A deadline already passed is taken by the next poll: the shortest
    // sleep, never a spin (a timer the poll leaves armed must not keep an
    // idle loop busy).
    const uint64_t ns = due <= now ? 1000 : std::min(sleep_us_ * 1000, due - now);
    sleep_us_ =
        std::min(sleep_us_ * 2, deep ? cfg_.max_sleep_us * cfg_.deep_factor : cfg_.max_sleep_us);
    return ns;
  }

 private:
  BackoffConfig cfg_;
  uint64_t sleep_us_;
};

}  // namespace dpdat::rc
