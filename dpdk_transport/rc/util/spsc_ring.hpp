#pragma once
// Bounded single-producer / single-consumer ring, lock-free: the hand-off
// between a consumer thread and the engine lcore (work requests one way,
// completions the other).  Capacity is fixed at construction; push() on a
// full ring returns false (back-pressure), nothing is overwritten.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace dpdat::rc {

template <typename T>
class SpscRing {
 public:
  explicit SpscRing(size_t capacity) : slots_(capacity == 0 ? 2 : capacity + 1) {}
  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;

  bool push(const T& v) {  // producer only
    const size_t t = tail_.load(std::memory_order_relaxed);
    const size_t next = t + 1 == slots_.size() ? 0 : t + 1;
    if (next == head_cache_) {
      head_cache_ = head_.load(std::memory_order_acquire);
      if (next == head_cache_) return false;
    }
    slots_[t] = v;
    tail_.store(next, std::memory_order_release);
    return true;
  }
  bool pop(T* out) {  // consumer only
    const size_t h = head_.load(std::memory_order_relaxed);
    if (h == tail_cache_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (h == tail_cache_) return false;
    }
    *out = slots_[h];
    head_.store(h + 1 == slots_.size() ? 0 : h + 1, std::memory_order_release);
    return true;
  }
  // Approximate from either side; exact when the other side is quiet.
  size_t size() const {
    const size_t h = head_.load(std::memory_order_acquire);
    const size_t t = tail_.load(std::memory_order_acquire);
    return t >= h ? t - h : t + slots_.size() - h;
  }
  size_t capacity() const { return slots_.size() - 1; }
  bool full() const { return size() == capacity(); }
  bool empty() const { return size() == 0; }

 private:
  std::vector<T> slots_;
  alignas(64) std::atomic<size_t> head_{0};
  size_t tail_cache_ = 0;  // consumer's view of tail_
  alignas(64) std::atomic<size_t> tail_{0};
  size_t head_cache_ = 0;  // producer's view of head_
};

}  // namespace dpdat::rc
