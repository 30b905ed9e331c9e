// Queue pair: the hooks of congestion control (congestion_control.hpp) —
// the notification point's CNPs on CE, the reaction point's rate cut on a
// CNP, the delay window's round-trip samples, and the pacer's hold on data
// packets through the kPace timer.

#include <algorithm>

#include "rc/engine/engine.hpp"
#include "rc/qp/qp.hpp"

namespace dpdat::rc {

bool Qp::cc_may_send(uint64_t now) {
  const uint64_t at = cc_.send_time(now);
  if (at <= now) return true;
  ctr_.cc_paced++;
  set_timer(TimerKind::kPace, std::max(cc_.recheck_time(at), now + 1));
  return false;
}

// RoCEv2 annex A17.9.3: the receiver of a CE-marked packet sends a CNP to the
// sending queue pair (BTH dest QP = its QPN, PSN 0, 16 reserved bytes);
// DCQCN's notification point sends at most one per QP per interval.
void Qp::cc_on_ce(uint64_t now) {
  ctr_.ce_rx++;
  if (!cc_.on_ce(now)) return;
  wire::BuildSpec& s = base_spec(wire::Opcode::kCnp, wire::Psn(0));
  // Not counted as a data packet for our own rate (cc_on_sent skips CNPs).
  if (!transmit(s, now)) return;  // no TX room: the next CE tries again
  cc_.cnp_sent(now);
  ctr_.cnp_tx++;
}

void Qp::cc_on_cnp(uint64_t now) {
  ctr_.cnp_rx++;
  const uint64_t before = cc_.rp().cuts();
  cc_.on_cnp(now);
  ctr_.cc_rate_cuts += cc_.rp().cuts() - before;
}

void Qp::cc_on_rtt(uint64_t rtt_ns, uint64_t now) {
  const uint64_t before = cc_.delay_window().decreases();
  cc_.on_rtt(rtt_ns, now);
  ctr_.cc_window_cuts += cc_.delay_window().decreases() - before;
}

// The retransmission timer fired: what it resends is not held by the pacer.
void Qp::cc_on_timeout(uint64_t now) { cc_.on_timeout(now); }

// Data is what the pacer and DCQCN's byte counter account: request packets
// and READ responses (the other direction's data), not ACKs, CNPs or SACKs
// (whose bitmap is a payload, but an acknowledgement's).
bool Qp::cc_counts_as_data(wire::Opcode op) {
  const wire::OpInfo& info = wire::op_info(op);
  if (info.is(wire::op::kSack)) return false;
  return info.is(wire::op::kRequest) || info.is(wire::op::kPayload);
}

void Qp::cc_on_sent(const wire::BuildSpec& spec, uint32_t frame_len, uint64_t now) {
  if (cc_counts_as_data(spec.opcode)) cc_.on_sent(frame_len, now);
}

}  // namespace dpdat::rc
