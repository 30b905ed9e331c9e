#pragma once
// Storage for the per-queue-pair rings that only matter while traffic flows
// (send and receive work requests, queued responder output): a queue pair
// holds no ring while it has nothing queued, takes one from its engine's
// BlockPool when work arrives, doubles it (up to the configured depth) when
// it fills, and gives it back once it is empty again.  The pool keeps the
// blocks it gets back by size class, so after warm-up a queue pair going
// active / idle costs a free-list pop / push, never a malloc; an idle
// connection costs only its Qp object.  Engine thread only.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <type_traits>
#include <vector>

namespace dpdat::rc {

// Free lists of power-of-two blocks (64 B .. 2^31 B), per engine.  Blocks
// come from malloc when a list is empty and go back to it when more than
// `keep_bytes` would be pooled; everything pooled is freed with the pool.
class BlockPool {
 public:
  static constexpr size_t kClasses = 26;  // 2^6 .. 2^31 bytes
  explicit BlockPool(size_t keep_bytes = size_t{64} << 20) : keep_(keep_bytes) {}
  ~BlockPool() {
    for (auto& l : free_)
      for (void* p : l) std::free(p);
  }
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  static size_t class_of(size_t bytes) {
    const size_t b = std::bit_ceil(std::max<size_t>(bytes, 64));
    return static_cast<size_t>(std::countr_zero(b)) - 6;
  }
  static size_t class_bytes(size_t cls) { return size_t{64} << cls; }

  // A block of class_bytes(class_of(bytes)) bytes; nullptr when malloc fails.
  void* take(size_t bytes) {
    const size_t c = class_of(bytes);
    if (c >= kClasses) return nullptr;
    in_use_ += class_bytes(c);
    if (!free_[c].empty()) {
      void* p = free_[c].back();
      free_[c].pop_back();
      pooled_ -= class_bytes(c);
      return p;
    }
    void* p = std::malloc(class_bytes(c));
    if (p == nullptr) in_use_ -= class_bytes(c);
    return p;
  }
  void give(void* p, size_t bytes) {
    if (p == nullptr) return;
    const size_t c = class_of(bytes);
    in_use_ -= class_bytes(c);
    if (pooled_ + class_bytes(c) > keep_) {
      std::free(p);
      return;
    }
    free_[c].push_back(p);  // amortised: the list only grows while the pool does
    pooled_ += class_bytes(c);
  }
  // Bytes held by queue pairs / kept for reuse.
  size_t bytes_in_use() const { return in_use_; }
  size_t bytes_pooled() const { return pooled_; }

 private:
  size_t keep_;
  size_t in_use_ = 0, pooled_ = 0;
  std::vector<void*> free_[kClasses];
};

// A ring of T indexed by a running 64-bit position (entry i at i mod size),
// whose storage comes from a BlockPool: none while empty, doubled from
// kMinEntries up to `max_entries` (a power of two) as the live range
// [head, tail) grows.  T is copied bytewise when the ring grows.
template <typename T>
class PoolRing {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  static constexpr uint32_t kMinEntries = 4;

  PoolRing() = default;
  PoolRing(const PoolRing&) = delete;
  PoolRing& operator=(const PoolRing&) = delete;

  T& operator[](uint64_t i) { return data_[i & mask_]; }
  const T& operator[](uint64_t i) const { return data_[i & mask_]; }
  // Entries the storage holds now (0: none).
  uint32_t size() const { return data_ == nullptr ? 0 : mask_ + 1; }
  bool allocated() const { return data_ != nullptr; }

  // Room for one more entry after the live range [head, tail) (tail - head
  // < max_entries); false when the pool has no memory.
  bool reserve_one(BlockPool& pool, uint64_t head, uint64_t tail, uint32_t max_entries) {
    const uint64_t live = tail - head;
    if (data_ != nullptr && live < uint64_t{mask_} + 1) return true;
    uint32_t n = data_ == nullptr ? std::max(kMinEntries, hint_) : (mask_ + 1) * 2;
    n = std::min<uint32_t>(n, std::bit_ceil(std::max<uint32_t>(max_entries, 1)));
    if (n <= live) return false;
    T* fresh = static_cast<T*>(pool.take(sizeof(T) * n));
    if (fresh == nullptr) return false;
    // No construction: every entry is written whole before it is read
    // (T is an implicit-lifetime aggregate), so taking a ring touches only
    // the live entries copied here.
    for (uint64_t i = head; i < tail; ++i) fresh[i & (n - 1)] = data_[i & mask_];
    release(pool);
    data_ = fresh;
    mask_ = n - 1;
    hint_ = n;  // taken at this size next time: no regrowth per burst
    return true;
  }
  // Gives the storage back (the ring must be empty).
  void release(BlockPool& pool) {
    if (data_ == nullptr) return;
    pool.give(data_, sizeof(T) * (uint64_t{mask_} + 1));
    data_ = nullptr;
    mask_ = 0;
  }

 private:
  T* data_ = nullptr;
  uint32_t mask_ = 0;
  uint32_t hint_ = 0;  // size it had when last released
};

}  // namespace dpdat::rc
