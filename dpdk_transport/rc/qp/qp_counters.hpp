#pragma once
// A queue pair's counters, defined once.  DPDAT_QP_COUNTERS(X) calls
// X(name) for each; the struct's fields, its sum and telemetry's names
// ("qp_" + name, summed over an engine's queue pairs) all come from it.

#include <cstddef>
#include <cstdint>

// clang-format off
#define DPDAT_QP_COUNTERS(X)                                                  \
  /* packets sent and received (requests, responses, ACKs) */                 \
  X(tx_packets) X(rx_packets)                                                 \
  /* go-back-N resends, retransmission timeouts, tail-loss probes */          \
  X(retransmits) X(timeouts) X(tlp_probes)                                    \
  /* NAKs received / sent: receiver not ready, PSN sequence error */          \
  X(rnr_naks_rx) X(rnr_naks_tx) X(seq_naks_rx) X(seq_naks_tx)                 \
  /* request packets received again, or after a hole */                       \
  X(duplicates_rx) X(out_of_order_rx)                                         \
  X(acks_tx) X(acks_rx)                                                       \
  /* READ and atomic responses sent again for a duplicate request */          \
  X(read_replays) X(atomic_replays)                                           \
  /* responses that fit no outstanding request */                             \
  X(bad_responses)                                                            \
  /* steps that found the completion queue full / no TX buffer */             \
  X(cq_stalls) X(tx_backpressure)                                             \
  X(rtt_samples)                                                              \
  /* selective repeat: request packets placed ahead of a hole, packets */     \
  /* resent one by one, frames kept after a hole and later taken in order, */ \
  /* selective acknowledgements sent / received, and those of them sent */  \
  /* again while a hole stayed open (Qp::kSackRefresh) */                     \
  X(sr_placed_ahead) X(sr_resends) X(sr_kept) X(sr_kept_taken)                \
  X(sacks_tx) X(sacks_rx) X(sack_refreshes)                                   \
  /* selective repeat: stops of the requester a kHeldSpan past una (the */    \
  /* hole not repaired in time), NAKs repeated for an overdue resend, */     \
  /* NAKs not sent for a hole a SACK had already shown missing */             \
  X(sr_span_stalls) X(seq_nak_repeats) X(seq_naks_spared)                    \
  /* congestion control: CE-marked packets received, CNPs sent / received, */ \
  /* DCQCN rate cuts, delay-window decreases, sends held by the pacer */      \
  X(ce_rx) X(cnp_tx) X(cnp_rx) X(cc_rate_cuts) X(cc_window_cuts) X(cc_paced)  \
  /* remote key checks this queue pair's responder refused (the engine */     \
  /* counts them by reason: EngineCounters::rkey_refused) */                  \
  X(rkey_refused)
// clang-format on

namespace dpdat::rc {

struct QpCounters {
#define DPDAT_QP_COUNTER_FIELD(name) uint64_t name = 0;
  DPDAT_QP_COUNTERS(DPDAT_QP_COUNTER_FIELD)
#undef DPDAT_QP_COUNTER_FIELD
#define DPDAT_QP_COUNTER_ONE(name) +1
  static constexpr size_t kCount = 0 DPDAT_QP_COUNTERS(DPDAT_QP_COUNTER_ONE);
#undef DPDAT_QP_COUNTER_ONE

  QpCounters& operator+=(const QpCounters& o) {
#define DPDAT_QP_COUNTER_ADD(name) name += o.name;
    DPDAT_QP_COUNTERS(DPDAT_QP_COUNTER_ADD)
#undef DPDAT_QP_COUNTER_ADD
    return *this;
  }

  // fn(name, value) for every counter, in the order above.
  template <typename Fn>
  void for_each(Fn&& fn) const {
#define DPDAT_QP_COUNTER_VISIT(name) fn(#name, name);
    DPDAT_QP_COUNTERS(DPDAT_QP_COUNTER_VISIT)
#undef DPDAT_QP_COUNTER_VISIT
  }
};

// Every field is one of the list (none added beside it, which the sum and
// telemetry would miss).
static_assert(sizeof(QpCounters) == QpCounters::kCount * sizeof(uint64_t));

}  // namespace dpdat::rc
