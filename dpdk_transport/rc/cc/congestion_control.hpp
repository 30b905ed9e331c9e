#pragma once
// Per-QP congestion control: DCQCN as RoCEv2 NICs run it (the receiver
// answers ECN CE with congestion notification packets; the sender cuts its
// rate on each and recovers on a timer and a byte counter), a Swift-like
// delay window for paths that do not mark, and the pacer that turns the
// resulting rate into send times.  Pure code: time is a parameter (ns), no
// allocation, no I/O.  One instance per QP, on the engine thread.

#include <cstdint>

#include "rc/cc/congestion_config.hpp"
#include "rc/cc/pacing.hpp"

namespace dpdat::rc {

// DCQCN notification point: which CE-marked packets are answered with a CNP.
class CnpLimiter {
 public:
  explicit CnpLimiter(uint64_t interval_ns) : interval_ns_(interval_ns) {}
  // A CE-marked packet arrived at `now`: true when a CNP goes out for it (no
  // CNP went out for this QP in the last interval).  The caller calls
  // sent() once the CNP is queued.
  bool due(uint64_t now) const { return !any_ || now - last_ns_ >= interval_ns_; }
  void sent(uint64_t now) {
    any_ = true;
    last_ns_ = now;
  }

 private:
  uint64_t interval_ns_;
  uint64_t last_ns_ = 0;
  bool any_ = false;
};

// DCQCN reaction point (the paper's figure 8 / section 3.2).  The current
// rate Rc starts at the line rate, unlimited; a CNP sets the target Rt = Rc,
// cuts Rc by alpha / 2 and raises alpha; without CNPs alpha decays every K,
// and every T (timer) and every B bytes sent (byte counter) the rate rises:
// fast recovery (Rc halfway to Rt) for the first F events of either kind,
// then additive (Rt += R_AI) and, once both counters passed F, hyper increase
// (Rt += i R_HAI).  The timers run lazily: advance(now) applies the periods
// that elapsed, so an idle QP needs no timer of its own.
class DcqcnRate {
 public:
  explicit DcqcnRate(const CcConfig& c);
  void on_cnp(uint64_t now);
  void on_sent(uint64_t bytes, uint64_t now);
  void advance(uint64_t now);
  // Whether the rate limiter is engaged (a CNP came and the rate has not
  // recovered to the line rate since).
  bool limited() const { return limited_; }
  double rate_bps() const { return rc_; }
  double target_bps() const { return rt_; }
  double alpha() const { return alpha_; }
  uint64_t cuts() const { return cuts_; }
  // When the rate timer next raises the rate (meaningful while limited()).
  uint64_t next_increase() const { return rate_t0_ + c_.rate_timer_ns; }

 private:
  void increase();

  const CcConfig& c_;
  double rc_, rt_;
  double alpha_ = 1.0;
  bool limited_ = false;
  uint32_t t_stage_ = 0, b_stage_ = 0;  // timer / byte-counter events since the cut
  uint64_t bytes_ = 0;                  // towards the next byte-counter event
  uint64_t rate_t0_ = 0, alpha_t0_ = 0;
  uint64_t cuts_ = 0;
};

// Swift-like delay window, in packets (may fall below one: then paced).
// The delay signal is the smallest of the last CcConfig::rtt_filter
// samples, so a single round trip stretched by a host stall does not cut
// the window; a queue stretches them all.  The target is a fixed delay plus
// the flow-scaling term, as in Swift: a target above a measured base RTT
// would favour the flow that came last (it measures the queue the others
// built as its base).
class DelayWindow {
 public:
  static constexpr uint32_t kMaxFilter = 16;
  DelayWindow(const CcConfig& c, uint32_t max_window);
  // One round-trip sample (at most one per round trip: the requester times
  // one packet at a time, never a retransmitted one).
  void on_rtt(uint64_t rtt_ns, uint64_t now);
  // Recovery without samples: each window timer period since the newest
  // sample (or the previous step) grows the window as a sample on target
  // would; below one packet it doubles.  No-op before the first sample.
  void advance(uint64_t now);
  // When advance() next grows the window (UINT64_MAX: not before a sample).
  uint64_t next_increase() const;
  double window() const { return cwnd_; }
  uint64_t decreases() const { return decreases_; }
  uint64_t timer_increases() const { return timer_increases_; }
  // The delay this flow aims at with its current window.
  double target_ns() const;
  // The filtered round trip (the delay signal); 0 before the first sample.
  uint64_t filtered_rtt_ns() const { return filtered_ns_; }

 private:
  uint64_t timer_period_ns() const;

  const CcConfig& c_;
  double max_;
  double cwnd_;
  double fs_alpha_ = 0, fs_beta_ = 0;
  uint64_t last_decrease_ns_ = 0;
  bool decreased_ = false;
  uint64_t decreases_ = 0, timer_increases_ = 0;
  uint64_t ring_[kMaxFilter] = {};
  uint32_t ring_n_ = 0, ring_pos_ = 0;
  uint64_t filtered_ns_ = 0;
  uint64_t last_event_ns_ = 0;  // newest sample or timer step
};

class CongestionControl {
 public:
  CongestionControl(const CcConfig& c, uint32_t max_window);
  CongestionControl(const CongestionControl&) = delete;
  CongestionControl& operator=(const CongestionControl&) = delete;

  bool dcqcn() const { return c_.mode == CcMode::kDcqcn || c_.mode == CcMode::kBoth; }
  bool delay() const { return c_.mode == CcMode::kDelay || c_.mode == CcMode::kBoth; }

  // ---- notification point (receiver of data) ----
  // A data packet with CE arrived: true when a CNP is to be sent now; call
  // cnp_sent() once it is queued.  Always false with DCQCN off.
  bool on_ce(uint64_t now) const { return dcqcn() && np_.due(now); }
  void cnp_sent(uint64_t now) { np_.sent(now); }

  // ---- reaction point (sender of data) ----
  void on_cnp(uint64_t now);
  void on_rtt(uint64_t rtt_ns, uint64_t now);
  // A data packet of `bytes` (whole frame) went out.
  void on_sent(uint32_t bytes, uint64_t now);
  // The retransmission timer fired: the resend it triggers is not held by
  // the pacer (the timer already waited longer than any pacing gap).
  void on_timeout(uint64_t now);
  // Packets the requester may have unacknowledged: the delay window (at
  // least one), never more than `cfg_window`.
  uint32_t window(uint32_t cfg_window) const;
  // The time the next data packet may leave: <= now means now.  Never more
  // than one largest data frame at the current rate after `now` (with a
  // sub-packet window: at most max_pace_gap_ns).
  uint64_t send_time(uint64_t now);
  // When a QP held until `at` (send_time) is to look again: `at`, or sooner
  // when DCQCN's rate timer or the window timer raises the rate (and so
  // shortens the wait) first.
  uint64_t recheck_time(uint64_t at) const;
  // The rate the pacer enforces (0: not paced) and the delay window.
  uint64_t pace_rate_bps() const { return static_cast<uint64_t>(pacer_.rate_bps()); }
  double window_pkts() const { return delay_win_.window(); }
  const DcqcnRate& rp() const { return rp_; }
  const DelayWindow& delay_window() const { return delay_win_; }

 private:
  void update_rate(uint64_t now);
  // The timers of both controls (rate and window recovery) up to `now`.
  void advance(uint64_t now);

  const CcConfig c_;
  CnpLimiter np_;
  DcqcnRate rp_;
  DelayWindow delay_win_;
  Pacer pacer_;
  // The largest data frame sent: a sub-packet window paces one such frame
  // per round trip / window (a small READ request then costs little).
  uint32_t frame_bytes_ = 0;
};

}  // namespace dpdat::rc
