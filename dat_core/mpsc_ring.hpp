#pragma once
// A bounded lock-free ring with many producers and one consumer at a time:
// consumer threads hand work requests to whoever holds an interface's engine
// token (the consumer side is serialised by that token).  Each cell carries a
// sequence number: a producer claims a cell by advancing the tail with a CAS,
// fills it and publishes it by storing the sequence; the consumer takes cells
// in tail order once published (D. Vyukov's bounded queue, with a single
// consumer).  Capacity is rounded up to a power of two; full is
// back-pressure, reported to the producer.

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace dpdat::dat {

template <typename T>
class MpscRing {
 public:
  explicit MpscRing(size_t capacity)
      : mask_(std::bit_ceil(capacity < 2 ? size_t{2} : capacity) - 1),
        cells_(std::make_unique<Cell[]>(mask_ + 1)) {
    for (size_t i = 0; i <= mask_; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
  }

  // Any thread.  False when full.
  bool push(const T& v) {
    return push_with([&v](T& cell) { cell = v; });
  }
  // Any thread: fill(T&) writes the claimed cell in place (a part of it,
  // say, where the rest is unused), then it is published.  False when full.
  template <typename Fill>
  bool push_with(Fill fill) {
    uint64_t pos = tail_.load(std::memory_order_relaxed);
    Cell* c = nullptr;
    for (;;) {
      c = &cells_[pos & mask_];
      const uint64_t seq = c->seq.load(std::memory_order_acquire);
      const auto diff = static_cast<int64_t>(seq - pos);
      if (diff == 0) {
        if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
      } else if (diff < 0) {
        return false;
      } else {
        pos = tail_.load(std::memory_order_relaxed);
      }
    }
    fill(c->value);
    c->seq.store(pos + 1, std::memory_order_release);
    return true;
  }

  // The one consumer (token holder).  The oldest published entry, if any;
  // an entry claimed but not yet published stops the consumer (order kept).
  T* front() {
    const uint64_t h = head_.load(std::memory_order_relaxed);
    Cell& c = cells_[h & mask_];
    if (c.seq.load(std::memory_order_acquire) != h + 1) return nullptr;
    return &c.value;
  }
  void pop_front() {
    const uint64_t h = head_.load(std::memory_order_relaxed);
    cells_[h & mask_].seq.store(h + mask_ + 1, std::memory_order_release);
    head_.store(h + 1, std::memory_order_release);
  }

  // The consumer: visits the published entries, oldest first, up to the
  // first one claimed but not yet published.
  template <typename Fn>
  void for_each(Fn fn) {
    for (uint64_t h = head_.load(std::memory_order_relaxed);; ++h) {
      Cell& c = cells_[h & mask_];
      if (c.seq.load(std::memory_order_acquire) != h + 1) return;
      fn(c.value);
    }
  }

  // Any thread: whether entries were claimed that the consumer has not taken.
  bool pending() const {
    return tail_.load(std::memory_order_acquire) != head_.load(std::memory_order_acquire);
  }

 private:
  struct Cell {
    std::atomic<uint64_t> seq{0};
    T value{};
  };
  const size_t mask_;
  std::unique_ptr<Cell[]> cells_;
  alignas(64) std::atomic<uint64_t> tail_{0};
  alignas(64) std::atomic<uint64_t> head_{0};
};

}  // namespace dpdat::dat
