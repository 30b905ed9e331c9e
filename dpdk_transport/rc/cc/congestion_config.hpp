#pragma once
// Per-QP congestion control settings (QpConfig::cc).  The mechanisms live in
// congestion_control.hpp; this header only carries the knobs, so types.hpp
// stays light.

#include <cstdint>
#include <optional>
#include <string_view>

namespace dpdat::rc {

// Which controls run.  DCQCN reacts to ECN (CNPs from the receiver); the
// delay control to the measured round trip, for paths that do not mark.
enum class CcMode : uint8_t { kOff, kDcqcn, kDelay, kBoth };

// Header-only: the configuration parser (also compiled into librsm, which
// does not link rc) uses them.
constexpr std::string_view cc_mode_name(CcMode m) noexcept {
  switch (m) {
    case CcMode::kOff:
      return "off";
    case CcMode::kDcqcn:
      return "dcqcn";
    case CcMode::kDelay:
      return "delay";
    case CcMode::kBoth:
      return "both";
  }
  return "invalid";
}
// "off", "dcqcn", "delay", "both"; nullopt for anything else.
constexpr std::optional<CcMode> parse_cc_mode(std::string_view s) noexcept {
  for (CcMode m : {CcMode::kOff, CcMode::kDcqcn, CcMode::kDelay, CcMode::kBoth})
    if (s == cc_mode_name(m)) return m;
  return std::nullopt;
}

struct CcConfig {
  // Both controls by default: DCQCN where switches mark, the delay window
  // where they do not.
  CcMode mode = CcMode::kBoth;
  // The rate a sender starts at and returns to (DCQCN's line rate); at this
  // rate and without a delay window below one packet, nothing is paced ...
  uint64_t line_rate_bps = 100'000'000'000;
  // ... unless this is set: then every data packet is paced at the line rate
  // at most, as a NIC's port would send it, whatever the mode (the
  // simulated link has no sender-side port rate of its own).
  bool pace_line_rate = false;
  uint64_t min_rate_bps = 10'000'000;

  // ---- DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA
  // Deployments", SIGCOMM 2015), names as in the paper ----
  // Notification point: at most one CNP per QP per this interval (N).
  uint64_t cnp_interval_ns = 50'000;
  // Reaction point: alpha gain g, alpha decay period K without CNPs, rate
  // increase timer T, byte counter B, fast-recovery stages F, additive and
  // hyper increase steps R_AI / R_HAI.
  double g = 1.0 / 256;
  uint64_t alpha_timer_ns = 55'000;
  uint64_t rate_timer_ns = 55'000;
  uint64_t byte_counter = 10ull << 20;
  uint32_t fast_recovery = 5;
  uint64_t rate_ai_bps = 40'000'000;
  uint64_t rate_hai_bps = 200'000'000;

  // ---- delay control (Swift-like window; Kumar et al., SIGCOMM 2020) ----
  // Round trips above target_delay_ns shrink the window multiplicatively
  // (by beta x the excess fraction, at most max_mdf, once per round trip);
  // below it the window grows by ai packets per round trip.  A window under
  // one packet paces one packet per (filtered) round trip / window.
  uint64_t target_delay_ns = 50'000;
  // Swift's flow scaling: a flow with a small window aims at a larger delay,
  // by up to fs_range_ns at fs_min_window packets and none from
  // fs_max_window on (alpha / sqrt(window) + beta between), so the flows
  // sharing a queue converge to equal windows instead of starving the
  // smallest.  fs_range_ns 0: off.
  uint64_t fs_range_ns = 100'000;
  double fs_min_window = 0.1;
  double fs_max_window = 100;
  double ai = 1.0;
  double beta = 0.8;
  double max_mdf = 0.5;
  double min_window = 0.01;
  // Host noise: a descheduled process (ours or the peer's) stretches single
  // round trips by milliseconds, a queue stretches every one.  The delay
  // signal is the smallest of the last rtt_filter samples.
  uint32_t rtt_filter = 4;
  // Liveness of a small window.  A sub-packet window never spaces data
  // packets more than max_pace_gap_ns apart, and without round-trip samples
  // (no ACKs: a dead or stalled peer, an idle QP) the window recovers on a
  // timer: every max(window_timer_ns, two expected sample gaps: pacing gap
  // and round trip) it doubles
  // below one packet and grows by ai above, as if a sample at the target
  // had come.  A retransmission timeout releases the pacer, so the resend
  // leaves at once.
  uint64_t max_pace_gap_ns = 500'000;
  uint64_t window_timer_ns = 1'000'000;

  // Pacing: bytes a paced QP may send back to back after an idle period.
  uint32_t pace_burst_bytes = 16 * 1024;
};

}  // namespace dpdat::rc
