#pragma once
// Per-QP round-trip estimation for the retransmission timeout and the
// tail-loss probe: smoothed RTT and its variance as RFC 6298 computes them
// for TCP (alpha 1/8, beta 1/4, RTO = SRTT + 4 RTTVAR), in nanoseconds,
// bounded by a floor suited to microsecond links and a cap.  Samples follow
// Karn's rule (the caller never times a retransmitted packet).  Pure code.

#include <algorithm>
#include <cstdint>

namespace dpdat::rc {

class RttEstimator {
 public:
  // `initial_ns` is the RTO before the first sample; [min_ns, max_ns] bound it.
  RttEstimator(uint64_t initial_ns, uint64_t min_ns, uint64_t max_ns)
      : min_ns_(std::min(min_ns, max_ns)), max_ns_(max_ns), rto_ns_(initial_ns) {}

  void sample(uint64_t r) {
    if (!valid_) {
      srtt_ns_ = r;
      rttvar_ns_ = r / 2;
      valid_ = true;
    } else {
      const uint64_t err = srtt_ns_ > r ? srtt_ns_ - r : r - srtt_ns_;
      rttvar_ns_ = (3 * rttvar_ns_ + err) / 4;
      srtt_ns_ = (7 * srtt_ns_ + r) / 8;
    }
    rto_ns_ = std::clamp(srtt_ns_ + 4 * rttvar_ns_, min_ns_, max_ns_);
  }

  bool valid() const { return valid_; }
  uint64_t srtt_ns() const { return srtt_ns_; }
  uint64_t rttvar_ns() const { return rttvar_ns_; }
  uint64_t rto_ns() const { return rto_ns_; }

 private:
  uint64_t min_ns_, max_ns_;
  uint64_t rto_ns_;
  uint64_t srtt_ns_ = 0, rttvar_ns_ = 0;
  bool valid_ = false;
};

}  // namespace dpdat::rc
