#pragma once
// A guard against a race in DPDK 22.11's net_memif: when the peer process
// goes away, the EAL interrupt thread runs memif_disconnect(), which clears
// the "connected" flag and then munmap()s the shared regions, with nothing
// to wait for a data-path thread that passed the flag check a moment
// earlier and is still copying to or from those regions.  That thread then
// faults (seen in about 1 of 50-130 killed-peer runs here).
//
// install() points net_memif's own import of munmap (its GOT slot, found
// through the dynamic linker's program headers) at a wrapper that first
// waits, bounded, until no thread is inside a memif burst; Burst marks a
// data-path thread as inside one.  New bursts after the flag was cleared
// return at once, so the wait is at most one burst long.  Nothing else in
// the process is affected; without net_memif loaded install() does nothing.

#include <atomic>
#include <cstdint>

namespace dpdat::dpdk::memif_guard {

// Stops and closes a net_memif ethdev port on the EAL interrupt thread (an
// EAL alarm), where the PMD's own disconnect on the peer's leaving runs, so
// the two never overlap (memif_guard.cpp says why); bounded, falls back to
// closing on the calling thread (so does DPDAT_MEMIF_GUARD=0).
void stop_close(uint16_t port_id);

// Once per process, after the EAL loaded its drivers.  True when net_memif
// is loaded and its munmap now goes through the guard.
bool install();
// Whether install() hooked net_memif (for tests and logs).
bool installed();
// munmap calls of net_memif that had to wait for a burst to end.
uint64_t waits();

// Slots for data-path threads: one per Burst user, on its own cache line.
struct alignas(64) Slot {
  std::atomic<uint32_t> inside{0};
};
// A slot for the calling queue's lifetime (a Port queue of a memif device);
// nullptr (unguarded) when the slots are used up or DPDAT_MEMIF_GUARD=0
// (to measure the guard: no difference beyond noise in memif 4 KiB WRITE
// runs here).
Slot* acquire_slot();
void release_slot(Slot* s);

// Marks the slot as inside a memif burst for its scope.
class Burst {
 public:
  explicit Burst(Slot* s) : s_(s) {
    // seq_cst (a locked exchange on x86): ordered before the PMD's read of
    // its connected flag, against the wrapper's fence and read of the slot.
    if (s_ != nullptr) s_->inside.exchange(1, std::memory_order_seq_cst);
  }
  ~Burst() {
    if (s_ != nullptr) s_->inside.store(0, std::memory_order_release);
  }
  Burst(const Burst&) = delete;
  Burst& operator=(const Burst&) = delete;

 private:
  Slot* s_;
};

}  // namespace dpdat::dpdk::memif_guard
