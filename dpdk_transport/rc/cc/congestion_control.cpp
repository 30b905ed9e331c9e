#include "rc/cc/congestion_control.hpp"

#include <algorithm>
#include <cmath>

namespace dpdat::rc {

// ------------------------------------------------------------------ DCQCN

DcqcnRate::DcqcnRate(const CcConfig& c)
    : c_(c), rc_(static_cast<double>(c.line_rate_bps)), rt_(static_cast<double>(c.line_rate_bps)) {}

void DcqcnRate::on_cnp(uint64_t now) {
  advance(now);
  // Rt = Rc, Rc = Rc (1 - alpha / 2), alpha = (1 - g) alpha + g (the paper's
  // rate decrease, with the alpha the previous CNPs left).
  rt_ = rc_;
  rc_ = std::max(rc_ * (1 - alpha_ / 2), static_cast<double>(c_.min_rate_bps));
  alpha_ = (1 - c_.g) * alpha_ + c_.g;
  limited_ = true;
  t_stage_ = b_stage_ = 0;
  bytes_ = 0;
  rate_t0_ = alpha_t0_ = now;
  ++cuts_;
}

void DcqcnRate::increase() {
  const double line = static_cast<double>(c_.line_rate_bps);
  const uint32_t hi = std::max(t_stage_, b_stage_), lo = std::min(t_stage_, b_stage_);
  if (hi < c_.fast_recovery) {
    // fast recovery: Rt unchanged
  } else if (lo > c_.fast_recovery) {
    rt_ += static_cast<double>(lo - c_.fast_recovery) * static_cast<double>(c_.rate_hai_bps);
  } else {
    rt_ += static_cast<double>(c_.rate_ai_bps);
  }
  rt_ = std::min(rt_, line);
  rc_ = std::min((rt_ + rc_) / 2, line);
  // Back at the line rate (within 0.1 %): the limiter disengages.
  if (rc_ >= line * 0.999) {
    rc_ = rt_ = line;
    limited_ = false;
  }
}

void DcqcnRate::advance(uint64_t now) {
  if (!limited_) return;
  if (c_.alpha_timer_ns != 0 && now - alpha_t0_ >= c_.alpha_timer_ns) {
    const uint64_t n = (now - alpha_t0_) / c_.alpha_timer_ns;
    alpha_ *= std::pow(1 - c_.g, static_cast<double>(n));
    alpha_t0_ += n * c_.alpha_timer_ns;
  }
  if (c_.rate_timer_ns == 0) return;
  // Timer events one by one (each is a stage); bounded, the rest skipped
  // once the rate is back at the line rate.
  for (uint32_t k = 0; k < 100'000 && limited_ && now - rate_t0_ >= c_.rate_timer_ns; ++k) {
    rate_t0_ += c_.rate_timer_ns;
    ++t_stage_;
    increase();
  }
  if (now - rate_t0_ >= c_.rate_timer_ns) rate_t0_ = now;
}

void DcqcnRate::on_sent(uint64_t bytes, uint64_t now) {
  if (!limited_) return;
  advance(now);
  if (c_.byte_counter == 0) return;
  bytes_ += bytes;
  while (limited_ && bytes_ >= c_.byte_counter) {
    bytes_ -= c_.byte_counter;
    ++b_stage_;
    increase();
  }
}

// ------------------------------------------------------------------ delay

DelayWindow::DelayWindow(const CcConfig& c, uint32_t max_window)
    : c_(c), max_(std::max<double>(max_window, 1)), cwnd_(max_) {
  // fs(w) = alpha / sqrt(w) + beta: fs_range at fs_min_window, 0 at fs_max_window.
  if (c.fs_range_ns != 0 && c.fs_max_window > c.fs_min_window && c.fs_min_window > 0) {
    fs_alpha_ = static_cast<double>(c.fs_range_ns) /
                (1 / std::sqrt(c.fs_min_window) - 1 / std::sqrt(c.fs_max_window));
    fs_beta_ = -fs_alpha_ / std::sqrt(c.fs_max_window);
  }
}

double DelayWindow::target_ns() const {
  const double fs = fs_alpha_ == 0 ? 0
                                   : std::clamp(fs_alpha_ / std::sqrt(cwnd_) + fs_beta_, 0.0,
                                                static_cast<double>(c_.fs_range_ns));
  return static_cast<double>(c_.target_delay_ns) + fs;
}

void DelayWindow::on_rtt(uint64_t rtt_ns, uint64_t now) {
  rtt_ns = std::max<uint64_t>(rtt_ns, 1);
  const uint32_t n = std::clamp<uint32_t>(c_.rtt_filter, 1, kMaxFilter);
  ring_[ring_pos_ % n] = rtt_ns;
  ring_pos_ = (ring_pos_ + 1) % n;
  ring_n_ = std::min(ring_n_ + 1, n);
  filtered_ns_ = *std::min_element(ring_, ring_ + ring_n_);
  last_event_ns_ = now;
  const double target = target_ns();
  const auto rtt = static_cast<double>(filtered_ns_);
  if (rtt <= target) {
    // Swift: cwnd += ai / cwnd per packet acknowledged, i.e. ai per round
    // trip (one sample each); below one packet (one packet per round trip
    // or fewer), ai per packet acknowledged.
    cwnd_ += c_.ai;
  } else if (!decreased_ || now - last_decrease_ns_ >= filtered_ns_) {
    // At most once per round trip: cwnd *= max(1 - beta (rtt - target) / rtt, 1 - max_mdf).
    cwnd_ *= std::max(1 - c_.beta * (rtt - target) / rtt, 1 - c_.max_mdf);
    last_decrease_ns_ = now;
    decreased_ = true;
    ++decreases_;
  }
  // A floor above 0 keeps a sub-packet window paced (0 would mean unpaced).
  cwnd_ = std::clamp(cwnd_, std::max(c_.min_window, 1e-3), max_);
}

uint64_t DelayWindow::timer_period_ns() const {
  // Two expected gaps between samples (a sub-packet window's pacing gap,
  // at most max_pace_gap_ns, and the round trip), at least the timer.
  double gap = static_cast<double>(filtered_ns_) / std::min(cwnd_, 1.0);
  if (c_.max_pace_gap_ns != 0) gap = std::min(gap, static_cast<double>(c_.max_pace_gap_ns));
  return std::max(c_.window_timer_ns, 2 * (static_cast<uint64_t>(gap) + filtered_ns_));
}

uint64_t DelayWindow::next_increase() const {
  if (filtered_ns_ == 0 || c_.window_timer_ns == 0 || cwnd_ >= max_) return UINT64_MAX;
  return last_event_ns_ + timer_period_ns();
}

void DelayWindow::advance(uint64_t now) {
  if (filtered_ns_ == 0 || c_.window_timer_ns == 0) return;
  // Bounded: from the smallest window, 64 steps reach any window.
  for (uint32_t k = 0; k < 64 && cwnd_ < max_; ++k) {
    const uint64_t period = timer_period_ns();
    if (now - last_event_ns_ < period) return;
    last_event_ns_ += period;
    cwnd_ = std::min(cwnd_ < 1 ? 2 * cwnd_ : cwnd_ + c_.ai, max_);
    ++timer_increases_;
  }
  if (now - last_event_ns_ >= c_.window_timer_ns) last_event_ns_ = now;
}

// ------------------------------------------------------------------ both

CongestionControl::CongestionControl(const CcConfig& c, uint32_t max_window)
    : c_(c),
      np_(c.cnp_interval_ns),
      rp_(c_),
      delay_win_(c_, max_window),
      pacer_(c.pace_burst_bytes) {
  update_rate(0);
}

void CongestionControl::update_rate(uint64_t now) {
  double rate = c_.pace_line_rate ? static_cast<double>(c_.line_rate_bps) : 0;
  if (dcqcn() && rp_.limited()) rate = rp_.rate_bps();
  const uint64_t rtt = delay_win_.filtered_rtt_ns();
  if (delay() && delay_win_.window() < 1 && rtt != 0 && frame_bytes_ != 0) {
    // One frame per rtt / window, at most max_pace_gap_ns apart.
    const double frame_bits = static_cast<double>(frame_bytes_) * 8e9;
    double r = frame_bits * delay_win_.window() / static_cast<double>(rtt);
    if (c_.max_pace_gap_ns != 0)
      r = std::max(r, frame_bits / static_cast<double>(c_.max_pace_gap_ns));
    rate = rate == 0 ? r : std::min(rate, r);
  }
  if (rate != 0) rate = std::max(rate, static_cast<double>(c_.min_rate_bps));
  pacer_.set_max_ahead(frame_bytes_);
  pacer_.set_rate(rate, now);
}

void CongestionControl::on_cnp(uint64_t now) {
  if (!dcqcn()) return;
  rp_.on_cnp(now);
  update_rate(now);
}

void CongestionControl::on_rtt(uint64_t rtt_ns, uint64_t now) {
  if (!delay()) return;
  delay_win_.on_rtt(rtt_ns, now);
  update_rate(now);
}

void CongestionControl::on_sent(uint32_t bytes, uint64_t now) {
  if (c_.mode == CcMode::kOff && !c_.pace_line_rate) return;
  const bool bigger = bytes > frame_bytes_;
  frame_bytes_ = std::max(frame_bytes_, bytes);
  if (bigger) update_rate(now);
  pacer_.on_sent(bytes, now);
  if (dcqcn() && rp_.limited()) {
    rp_.on_sent(bytes, now);
    update_rate(now);
  }
}

void CongestionControl::on_timeout(uint64_t now) {
  if (c_.mode == CcMode::kOff && !c_.pace_line_rate) return;
  advance(now);
  pacer_.release(now);
}

void CongestionControl::advance(uint64_t now) {
  bool changed = false;
  if (dcqcn() && rp_.limited()) {
    rp_.advance(now);  // timer-driven recovery since the last packet
    changed = true;
  }
  if (delay()) {
    const double before = delay_win_.window();
    delay_win_.advance(now);  // recovery without round-trip samples
    changed = changed || (before < 1 && delay_win_.window() != before);
  }
  if (changed) update_rate(now);
}

uint32_t CongestionControl::window(uint32_t cfg_window) const {
  if (!delay()) return cfg_window;
  const auto w = static_cast<uint32_t>(std::max(delay_win_.window(), 1.0));
  return std::min(w, cfg_window);
}

uint64_t CongestionControl::recheck_time(uint64_t at) const {
  if (dcqcn() && rp_.limited() && c_.rate_timer_ns != 0) at = std::min(at, rp_.next_increase());
  if (delay() && delay_win_.window() < 1) at = std::min(at, delay_win_.next_increase());
  return at;
}

uint64_t CongestionControl::send_time(uint64_t now) {
  advance(now);
  return pacer_.send_time(now);
}

}  // namespace dpdat::rc
