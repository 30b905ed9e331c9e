#pragma once
// The two small locks of dat_core's data path.
//
// SpinLock: held for a few instructions (one event slot, one hand-off
// entry); a waiter spins, then yields, so a holder preempted on a busy CPU is
// not spun against for its whole time slice.
//
// EngineToken: whoever holds it drives an interface's engine — its queue
// pairs, their completion queues, the delivery of completions to EVDs.  The
// data path only ever tries it (a consumer that finds it taken hands its work
// request over and goes on); the control path (CM, create / free, under the
// interface mutex) waits for it, and while it waits the data path stops
// taking it, so a busy-polling progress thread cannot starve a control call.

#include <sched.h>

#include <atomic>
#include <cstdint>

#include "rc/engine/cpu_relax.hpp"

namespace dpdat::dat {

using rc::cpu_relax;

class SpinLock {
 public:
  void lock() noexcept {
    for (uint32_t spins = 0; held_.exchange(true, std::memory_order_acquire);) {
      while (held_.load(std::memory_order_relaxed)) {
        if (++spins < 64) {
          cpu_relax();
        } else {
          sched_yield();
        }
      }
    }
  }
  bool try_lock() noexcept {
    return !held_.load(std::memory_order_relaxed) &&
           !held_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

class SpinLockGuard {
 public:
  explicit SpinLockGuard(SpinLock& l) : l_(l) { l_.lock(); }
  ~SpinLockGuard() { l_.unlock(); }
  SpinLockGuard(const SpinLockGuard&) = delete;
  SpinLockGuard& operator=(const SpinLockGuard&) = delete;

 private:
  SpinLock& l_;
};

class EngineToken {
 public:
  // Data path: never waits.
  bool try_lock() noexcept {
    if (control_waiting_.load(std::memory_order_relaxed) != 0) return false;
    return lock_.try_lock();
  }
  // Control path: waits (spin, then yield).
  void lock() noexcept {
    control_waiting_.fetch_add(1, std::memory_order_relaxed);
    lock_.lock();
    control_waiting_.fetch_sub(1, std::memory_order_relaxed);
  }
  void unlock() noexcept { lock_.unlock(); }

 private:
  SpinLock lock_;
  std::atomic<uint32_t> control_waiting_{0};
};

}  // namespace dpdat::dat
