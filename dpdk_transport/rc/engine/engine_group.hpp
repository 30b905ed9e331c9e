#pragma once
// Several engines (one per lcore / per RX-TX queue) serving one interface.
// Queue pairs are spread across the engines; QPN bits 16..23 name the owning
// engine.  Frames are demultiplexed in software: an engine that receives a
// frame for another engine's queue pair (no flow steering on virtual
// devices, or RSS that hashed it elsewhere) hands it over through a
// lock-free SPSC ring for that (from, to) pair; the owner processes it on
// its own thread and releases the buffer.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "rc/engine/packet_io.hpp"
#include "rc/util/spsc_ring.hpp"

namespace dpdat::rc {

class Engine;

class EngineGroup {
 public:
  static constexpr uint32_t kIndexShift = 16;
  static constexpr uint32_t kMaxEngines = 16;

  explicit EngineGroup(size_t engines, size_t ring_depth = 1024) : n_(engines) {
    rings_.reserve(n_ * n_);
    for (size_t i = 0; i < n_ * n_; ++i)
      rings_.push_back(std::make_unique<SpscRing<Frame>>(ring_depth));
  }
  size_t size() const { return n_; }
  // First QPN handed out by engine `index` (QPNs 0 and 1 are special in IBA).
  static uint32_t qpn_base(size_t index) {
    return (static_cast<uint32_t>(index) << kIndexShift) | 0x11u;
  }
  static size_t owner(uint32_t qpn) { return qpn >> kIndexShift; }
  SpscRing<Frame>& ring(size_t from, size_t to) { return *rings_[from * n_ + to]; }
  const SpscRing<Frame>& ring(size_t from, size_t to) const { return *rings_[from * n_ + to]; }

 private:
  size_t n_;
  std::vector<std::unique_ptr<SpscRing<Frame>>> rings_;
};

}  // namespace dpdat::rc
