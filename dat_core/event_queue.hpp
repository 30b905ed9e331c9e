#pragma once
// An EVD's event queue: a ring of `qlen` slots, allocated when the EVD is
// made or resized (nothing per event), plus an overflow list for events that
// arrive while the ring is full (connection and async events; DTO
// completions wait in the EVD's RC completion queue instead, see
// Iface::drain_cq).  Producers are the interface's engine-token holder
// (core.hpp); consumers are any thread dequeuing or waiting.  A spin lock of
// the queue's own, held for one slot move, orders them: no interface lock is
// taken to dequeue.

#include <atomic>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "spin_lock.hpp"

namespace dpdat::dat {

template <typename Event>
class EventQueue {
 public:
  explicit EventQueue(uint32_t cap = 1) : slots_(cap) {}

  // Ring events (the overflow list not counted); readable without the lock.
  uint32_t size() const { return count_.load(std::memory_order_acquire); }
  bool empty() const { return size() == 0; }
  uint32_t capacity() const { return static_cast<uint32_t>(slots_.size()); }

  // True when the event went into the ring, false when it waits in the
  // overflow list (the ring is full, or earlier events wait there already:
  // order is kept).
  bool push(Event&& ev) {
    LockGuard g(mu_);
    if (!overflow_.empty() || n_ == slots_.size()) {
      overflow_.push_back(std::move(ev));
      return false;
    }
    slots_[(head_ + n_) % slots_.size()] = std::move(ev);
    ++n_;
    count_.store(static_cast<uint32_t>(n_), std::memory_order_release);
    return true;
  }

  // Takes the oldest event; an overflowed one moves up into the ring.
  bool pop(Event* out) {
    if (empty()) return false;
    LockGuard g(mu_);
    if (n_ == 0) return false;
    *out = std::move(slots_[head_]);
    head_ = (head_ + 1) % slots_.size();
    --n_;
    if (!overflow_.empty()) {
      slots_[(head_ + n_) % slots_.size()] = std::move(overflow_.front());
      overflow_.pop_front();
      ++n_;
    }
    count_.store(static_cast<uint32_t>(n_), std::memory_order_release);
    return true;
  }

  size_t overflow_size() {
    LockGuard g(mu_);
    return overflow_.size();
  }

  // Removes every event pred() selects (ring and overflow), keeping order,
  // and refills the ring from the overflow list.
  template <typename Pred>
  void erase_if(Pred pred) {
    LockGuard g(mu_);
    std::vector<Event> keep;
    keep.reserve(n_ + overflow_.size());
    drain_locked(pred, &keep);
    refill_locked(std::move(keep), slots_.size());
  }

  // A new ring length; false (nothing changed) when the events held do not
  // fit into it.
  bool resize(uint32_t cap) {
    LockGuard g(mu_);
    if (cap == 0 || n_ + overflow_.size() > cap) return false;
    std::vector<Event> keep;
    keep.reserve(n_ + overflow_.size());
    drain_locked([](const Event&) { return false; }, &keep);
    refill_locked(std::move(keep), cap);
    return true;
  }

 private:
  using LockGuard = SpinLockGuard;

  template <typename Pred>
  void drain_locked(Pred pred, std::vector<Event>* keep) {
    for (size_t i = 0; i < n_; ++i) {
      Event& e = slots_[(head_ + i) % slots_.size()];
      if (!pred(e)) keep->push_back(std::move(e));
    }
    for (Event& e : overflow_)
      if (!pred(e)) keep->push_back(std::move(e));
    overflow_.clear();
  }
  void refill_locked(std::vector<Event> keep, size_t cap) {
    if (cap != slots_.size()) {
      slots_.clear();
      slots_.resize(cap);
    }
    head_ = 0;
    n_ = 0;
    for (Event& e : keep) {
      if (n_ < cap) {
        slots_[n_++] = std::move(e);
      } else {
        overflow_.push_back(std::move(e));
      }
    }
    count_.store(static_cast<uint32_t>(n_), std::memory_order_release);
  }

  SpinLock mu_;
  std::vector<Event> slots_;
  size_t head_ = 0, n_ = 0;
  std::deque<Event> overflow_;
  std::atomic<uint32_t> count_{0};
};

}  // namespace dpdat::dat
