#pragma once
// Per-QP pacing: a token bucket in time.  next_ns_ is the earliest time the
// next packet may leave; sending `bytes` moves it on by their serialisation
// time at the paced rate, and a QP idle for a while may send up to
// `burst_bytes` back to back (next_ns_ never lags now by more than that).
// The debt is bounded too: next_ns_ never leads now by more than the time of
// max_ahead bytes (set_max_ahead; 0: unbounded), so packets that went out
// unpaced (a probe, a resend) or a rate cut that rescales what is owed can
// never hold the next packet for longer than one frame at the current rate.
// Rate 0: not paced.  Pure code; time in ns.

#include <algorithm>
#include <cstdint>

namespace dpdat::rc {

class Pacer {
 public:
  explicit Pacer(uint32_t burst_bytes) : burst_bytes_(burst_bytes) {}

  // A new rate applies to what is still owed too: a wait the old rate
  // imposed (next_ns_ ahead of now) is rescaled, so a rate that recovers
  // shortens it and a cut lengthens it.
  void set_rate(double bps, uint64_t now) {
    const double r = bps > 0 ? bps : 0;
    if (r == rate_bps_) return;
    if (r > 0 && rate_bps_ > 0 && next_ns_ > now)
      next_ns_ = now + static_cast<uint64_t>(static_cast<double>(next_ns_ - now) * rate_bps_ / r);
    rate_bps_ = r;
    bound(0, now);
  }
  void set_max_ahead(uint64_t bytes) { max_ahead_bytes_ = bytes; }
  // What is owed is forgiven: the next packet may leave at `now`.
  void release(uint64_t now) { next_ns_ = std::min(next_ns_, now); }
  double rate_bps() const { return rate_bps_; }
  bool paced() const { return rate_bps_ > 0; }

  // The earliest time a packet may leave (<= now: now).
  uint64_t send_time(uint64_t now) const {
    if (!paced()) return now;
    return std::max(next_ns_, now);
  }
  void on_sent(uint64_t bytes, uint64_t now) {
    if (!paced()) return;
    const uint64_t slack = ns_for(burst_bytes_);
    const uint64_t from = now > slack ? std::max(next_ns_, now - slack) : next_ns_;
    next_ns_ = from + ns_for(bytes);
    bound(bytes, now);
  }

 private:
  uint64_t ns_for(uint64_t bytes) const {
    return static_cast<uint64_t>(static_cast<double>(bytes) * 8e9 / rate_bps_);
  }

  void bound(uint64_t bytes, uint64_t now) {
    if (!paced() || max_ahead_bytes_ == 0) return;
    next_ns_ = std::min(next_ns_, now + ns_for(std::max(bytes, max_ahead_bytes_)));
  }

  uint32_t burst_bytes_;
  uint64_t max_ahead_bytes_ = 0;
  double rate_bps_ = 0;
  uint64_t next_ns_ = 0;
};

}  // namespace dpdat::rc
