#pragma once
// A deterministic simulated Ethernet link between two endpoints, for tests
// and benchmarks of the RC engine without DPDK.  Everything is driven by a
// seeded PRNG and by the caller's clock, so a (seed, schedule) pair replays
// exactly.  Impairments per direction: loss, duplication, reordering,
// bit corruption (which the receiver's ICRC check must catch), fixed delay.
// Capture mode records every frame offered for transmission and lets a test
// inject hand-made frames at either end.

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "rc/engine/packet_io.hpp"

namespace dpdat::rc {

struct LinkImpairment {
  double loss = 0.0;          // probability a frame is dropped
  double duplicate = 0.0;     // probability a frame is delivered twice
  double reorder = 0.0;       // probability a frame is held back behind later ones
  double corrupt = 0.0;       // probability one random bit of the frame is flipped
  uint64_t delay_ns = 0;      // one-way latency
  uint32_t reorder_hold = 3;  // a reordered frame waits for this many later frames
  // Bottleneck: frames leave at `rate_bps` (0: no limit) through a FIFO of
  // at most `queue_bytes` (0: unbounded); a frame that does not fit is
  // dropped (overflow), and an ECN-capable frame (IPv4 ECN field ECT(0) or
  // ECT(1)) that finds at least `ecn_threshold_bytes` queued is marked CE
  // (0: never marked).  The ICRC does not cover the ECN field.
  uint64_t rate_bps = 0;
  uint64_t queue_bytes = 0;
  uint64_t ecn_threshold_bytes = 0;
  // RED-style marking, as RoCE switches are set up for DCQCN (Kmin, Kmax,
  // Pmax): with ecn_max_bytes above ecn_threshold_bytes, a frame that finds
  // a backlog b between the two is marked with probability
  // ecn_pmax (b - Kmin) / (Kmax - Kmin), and every frame from Kmax on.
  // ecn_max_bytes 0: step marking at the threshold.
  uint64_t ecn_max_bytes = 0;
  double ecn_pmax = 0.0;
  // A loaded receiving host: it is descheduled for stall_ns out of every
  // stall_period_ns (from time 0; 0: never), and a frame that arrives
  // meanwhile waits until it runs again.  Round trips through it stretch
  // by up to stall_ns, as a busy CPU's scheduling stretches them.
  uint64_t stall_period_ns = 0;
  uint64_t stall_ns = 0;
};

struct LinkStats {
  uint64_t offered = 0, delivered = 0, dropped = 0, duplicated = 0, reordered = 0, corrupted = 0,
           injected = 0, tx_full = 0;
  // Frames an end sent to itself (loop_back): never on the wire.
  uint64_t looped = 0;
  // Bottleneck (LinkImpairment::rate_bps): frames dropped for a full queue,
  // frames marked CE, and the queueing delay frames met (histogram in
  // kDelayBucketNs buckets, the last one open-ended).
  static constexpr uint64_t kDelayBucketNs = 1'000;
  static constexpr size_t kDelayBuckets = 4096;
  uint64_t overflow_drops = 0, ecn_marked = 0, queue_delay_max_ns = 0;
  std::array<uint64_t, kDelayBuckets> queue_delay_hist{};
  // The queueing delay below which a fraction `q` of the queued frames stayed
  // (bucket upper bound; 0 when none was queued).
  uint64_t queue_delay_quantile(double q) const;
};

class SimLink {
 public:
  static constexpr uint32_t kBufSize = 9216;

  SimLink(uint64_t seed, size_t pool_frames = 4096, size_t queue_limit = 2048);
  ~SimLink();
  SimLink(const SimLink&) = delete;
  SimLink& operator=(const SimLink&) = delete;

  // Endpoint 0 and 1 of the link.
  PacketIo& end(int i);
  void set_impairment(int from_end, const LinkImpairment& imp);
  // The link's clock: frames become receivable at tx time + delay.
  void set_now(uint64_t now_ns) { now_ns_ = now_ns; }
  uint64_t now() const { return now_ns_; }

  // Capture: every frame offered by `from_end` is copied to the capture list.
  void set_capture(bool on) { capture_ = on; }
  struct Captured {
    int from_end;
    std::vector<uint8_t> bytes;
  };
  const std::vector<Captured>& captured() const { return captured_; }
  void clear_captured() { captured_.clear(); }
  // Optional filter run on every offered frame before impairments: return
  // false to drop it (tests use it for targeted losses).
  void set_filter(std::function<bool(int from_end, const uint8_t* data, uint32_t len)> f) {
    filter_ = std::move(f);
  }
  // Delivers a hand-made frame to endpoint `to_end` (no impairments).
  void inject(int to_end, const uint8_t* data, uint32_t len);
  // Software loopback: frames [0, n) from end `end`'s tx_alloc go to its own
  // receive queue, without impairments, as far as the queue limit allows
  // (returned; the rest stay the caller's, counted tx_full).
  uint16_t loop_back(int end, Frame* frames, uint16_t n);
  // Frames waiting to be received by `to_end` (for quiescence checks).
  size_t pending(int to_end) const;

  const LinkStats& stats(int from_end) const;
  size_t buffers_in_use() const { return bufs_.size() - free_.size(); }

 private:
  class End;
  struct Buf {
    uint8_t data[kBufSize];
  };
  struct InFlight {
    Buf* buf;
    uint32_t len;
    uint64_t ready_ns;
  };
  Buf* get_buf();
  void put_buf(Buf* b);
  void offer(int from_end, Buf* b, uint32_t len);
  // False (the frame released) when the bottleneck queue overflowed.
  bool enqueue(int to_end, Buf* b, uint32_t len);
  // The bottleneck towards `to_end`: false when the frame overflows the
  // queue; else *ready_ns is when it has left it.
  bool through_bottleneck(int to_end, Buf* b, uint32_t len, uint64_t* ready_ns);
  // Whether an ECN-capable frame finding `backlog` bytes (at least the
  // threshold) queued is marked: always for step marking, else RED's odds.
  bool red_marks(const LinkImpairment& imp, uint64_t backlog);

  std::mt19937_64 rng_;
  std::vector<std::unique_ptr<Buf>> bufs_;
  std::vector<Buf*> free_;
  size_t bufs_total_ = 0;
  size_t queue_limit_;
  uint64_t now_ns_ = 0;
  bool capture_ = false;
  std::vector<Captured> captured_;
  std::function<bool(int, const uint8_t*, uint32_t)> filter_;
  LinkImpairment imp_[2];
  LinkStats stats_[2];
  std::deque<InFlight> queue_[2];  // to_end -> frames
  std::deque<InFlight> held_[2];   // reordered frames, by destination
  uint32_t held_countdown_[2] = {0, 0};
  uint64_t busy_until_ns_[2] = {0, 0};  // by destination: the bottleneck is free from then
  std::unique_ptr<End> ends_[2];
};

}  // namespace dpdat::rc
