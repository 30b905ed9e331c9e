#pragma once
// A set of live pointers that readers test without writing shared memory.
//
// Every DAT call checks its handle.  A process-wide reader-writer lock did
// that with two atomic read-modify-writes on one cache line per call, which
// every thread posting on every engine then pulled back and forth.  Here a
// reader hashes the pointer and loads slots of an open-addressing table
// (acquire loads only); writers (object create and destroy, the control
// path) serialise on a mutex.
//
// DAT handles stay plain pointers: DAT 2.0's registry reads the provider
// from a handle's first word, so a handle must point at its object and
// cannot carry an index and a generation of its own.
//
// An erased pointer stays in its slot, marked dead in its low bit (objects
// are at least 8-byte aligned), so no probe chain is ever cut under a
// reader, and the same address inserted again (the allocator reuses freed
// blocks) takes its old slot back.  When new addresses fill half the table
// it is replaced by one twice as large holding only the live entries.  The
// old table is retired, not freed, since a reader may still be probing it;
// tables double, so the retired ones together are never larger than the
// current one.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace dpdat::dat {

class HandleSet {
 public:
  HandleSet() { cur_.store(install(kInitialSlots), std::memory_order_release); }
  HandleSet(const HandleSet&) = delete;
  HandleSet& operator=(const HandleSet&) = delete;

  // True if `p` was inserted and not erased since.  Readers only load
  // (acquire); the table is never more than half full, so a probe ends at an
  // empty slot.
  bool contains(const void* p) const {
    const uintptr_t key = reinterpret_cast<uintptr_t>(p);
    if (key == 0 || (key & kDead) != 0) return false;
    const Table* t = cur_.load(std::memory_order_acquire);
    for (size_t i = hash(key) & t->mask, n = 0; n <= t->mask; i = (i + 1) & t->mask, ++n) {
      const uintptr_t v = t->slots[i].load(std::memory_order_acquire);
      if (v == key) return true;
      if (v == 0 || v == (key | kDead)) return false;
    }
    return false;
  }

  // False if `p` is null, misaligned or already present.
  bool insert(const void* p) {
    const uintptr_t key = reinterpret_cast<uintptr_t>(p);
    if (key == 0 || (key & kDead) != 0) return false;
    std::lock_guard lk(mu_);
    std::atomic<uintptr_t>* slot = find_locked(key);
    if (slot == nullptr) {
      Table* t = cur_.load(std::memory_order_relaxed);
      if ((used_ + 1) * 2 > t->mask + 1) t = grow_locked();
      size_t i = hash(key) & t->mask;
      while (t->slots[i].load(std::memory_order_relaxed) != 0) i = (i + 1) & t->mask;
      slot = &t->slots[i];
      ++used_;
    } else if (slot->load(std::memory_order_relaxed) == key) {
      return false;
    }
    slot->store(key, std::memory_order_release);
    ++live_;
    return true;
  }

  // False if `p` was not present.
  bool erase(const void* p) {
    const uintptr_t key = reinterpret_cast<uintptr_t>(p);
    if (key == 0 || (key & kDead) != 0) return false;
    std::lock_guard lk(mu_);
    std::atomic<uintptr_t>* slot = find_locked(key);
    if (slot == nullptr || slot->load(std::memory_order_relaxed) != key) return false;
    slot->store(key | kDead, std::memory_order_release);
    --live_;
    return true;
  }

  size_t size() const {
    std::lock_guard lk(mu_);
    return live_;
  }
  // Slots in the current table, and in all tables including the retired
  // ones (tests; the memory it takes is 8 bytes a slot).
  size_t capacity() const { return cur_.load(std::memory_order_acquire)->mask + 1; }
  size_t slots_allocated() const {
    std::lock_guard lk(mu_);
    size_t n = 0;
    for (const auto& t : tables_) n += t->mask + 1;
    return n;
  }

 private:
  static constexpr size_t kInitialSlots = 1024;
  static constexpr uintptr_t kDead = 1;

  struct Table {
    size_t mask = 0;
    std::unique_ptr<std::atomic<uintptr_t>[]> slots;
  };

  static size_t hash(uintptr_t key) {
    // Fibonacci hashing: the multiply moves every address bit into the high
    // half, which is folded down (the low bits are alignment).
    const uint64_t x = static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(x >> 32 ^ x >> 48);
  }

  // The slot holding `key`, live or dead; nullptr if it has none.
  std::atomic<uintptr_t>* find_locked(uintptr_t key) const {
    Table* t = cur_.load(std::memory_order_relaxed);
    for (size_t i = hash(key) & t->mask;; i = (i + 1) & t->mask) {
      const uintptr_t v = t->slots[i].load(std::memory_order_relaxed);
      if ((v & ~kDead) == key) return &t->slots[i];
      if (v == 0) return nullptr;
    }
  }

  Table* install(size_t slots) {
    auto t = std::make_unique<Table>();
    t->mask = slots - 1;
    t->slots = std::make_unique<std::atomic<uintptr_t>[]>(slots);  // value-initialised: 0
    Table* raw = t.get();
    tables_.push_back(std::move(t));
    return raw;
  }

  // A table twice the size holding the live entries, published for readers.
  Table* grow_locked() {
    const Table* old = cur_.load(std::memory_order_relaxed);
    Table* t = install((old->mask + 1) * 2);
    for (size_t i = 0; i <= old->mask; ++i) {
      const uintptr_t v = old->slots[i].load(std::memory_order_relaxed);
      if (v == 0 || (v & kDead) != 0) continue;
      size_t j = hash(v) & t->mask;
      while (t->slots[j].load(std::memory_order_relaxed) != 0) j = (j + 1) & t->mask;
      t->slots[j].store(v, std::memory_order_relaxed);
    }
    used_ = live_;
    cur_.store(t, std::memory_order_release);
    return t;
  }

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Table>> tables_;  // the current one last; the others retired
  std::atomic<Table*> cur_{nullptr};
  size_t used_ = 0;  // slots of the current table holding a pointer, live or dead
  size_t live_ = 0;
};

}  // namespace dpdat::dat
