#pragma once
// A table of up to `max` entries addressed by index, allocated a chunk of
// Chunk entries at a time when an index in it is first handed out, with a
// free list threaded through the entries' `next_free`.  An unused table of a
// million entries holds only its chunk pointers.  Entries never move, so a
// pointer from at() stays valid until the table dies; at() may run on
// another thread than take() (the chunk pointer is published with release).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace dpdat::rc {

template <typename E, uint32_t Chunk>
class ChunkedSlots {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  explicit ChunkedSlots(uint32_t max) : max_(max), chunks_(new std::atomic<E*>[chunks()]) {
    for (uint32_t c = 0; c < chunks(); ++c) chunks_[c].store(nullptr);
  }
  ~ChunkedSlots() {
    for (uint32_t c = 0; c < chunks(); ++c) delete[] chunks_[c].load();
  }
  ChunkedSlots(const ChunkedSlots&) = delete;
  ChunkedSlots& operator=(const ChunkedSlots&) = delete;

  // Entry i, or nullptr when i is beyond the table or its chunk was never
  // allocated (no entry there was ever handed out).
  E* at(uint32_t i) const {
    if (i >= max_) return nullptr;
    E* c = chunks_[i / Chunk].load(std::memory_order_acquire);
    return c == nullptr ? nullptr : &c[i % Chunk];
  }
  // A slot for a new entry: the free list first, then the next never-used
  // index (allocating its chunk); kNone when full or out of memory.
  uint32_t take() {
    uint32_t i = free_head_;
    if (i != kNone) {
      free_head_ = at(i)->next_free;
    } else {
      if (next_new_ >= max_) return kNone;
      i = next_new_;
      std::atomic<E*>& chunk = chunks_[i / Chunk];
      if (chunk.load(std::memory_order_relaxed) == nullptr) {
        E* fresh = new (std::nothrow) E[Chunk];
        if (fresh == nullptr) return kNone;
        chunk.store(fresh, std::memory_order_release);
      }
      ++next_new_;
    }
    ++live_;
    return i;
  }
  // Slot i (taken before) goes back onto the free list.
  void give_back(uint32_t i) {
    at(i)->next_free = free_head_;
    free_head_ = i;
    --live_;
  }

  uint32_t max() const { return max_; }
  uint32_t live() const { return live_; }
  size_t storage_bytes() const {
    size_t n = 0;
    for (uint32_t c = 0; c < chunks(); ++c)
      if (chunks_[c].load(std::memory_order_relaxed) != nullptr) n += sizeof(E) * Chunk;
    return n;
  }

 private:
  uint32_t chunks() const { return (max_ + Chunk - 1) / Chunk; }
  uint32_t max_;
  std::unique_ptr<std::atomic<E*>[]> chunks_;
  uint32_t free_head_ = kNone;
  uint32_t next_new_ = 0;  // indices below were handed out at least once
  uint32_t live_ = 0;
};

}  // namespace dpdat::rc
