#pragma once
// Unreliable datagram queue pairs on an interface: dat_core's side of a
// verbs UD QP.  A UdEp holds one rc::UdQp of the interface's first engine,
// whose completions go to the given EVDs as DTO events naming no EP (the
// event's qpn, src_qp and grh say whose they are).  Every call takes the
// interface lock: datagrams are posted straight into the queue pair (no
// hand-off to a progress thread), and a send leaves before the call returns.

#include <cstdint>

#include "ops.hpp"
#include "rc/ud/ud_qp.hpp"

namespace dpdat::dat {

struct UdEp {
  Ia* ia = nullptr;
  Pz* pz = nullptr;
  Evd* recv_evd = nullptr;
  Evd* req_evd = nullptr;
  Shard* shard = nullptr;
  rc::UdQp* qp = nullptr;
  uint32_t qpn = 0;
};

// A datagram's destination: the IPv4 address (host order) and MAC of the
// peer (an address handle), its QPN and the Q_Key to send with.
struct UdAddr {
  wire::MacAddr mac{};
  uint32_t ip = 0;
  uint32_t qpn = 0;
  uint32_t qkey = 0;
};

Status ud_create(Ia* ia, Pz* pz, Evd* recv_evd, Evd* req_evd, uint32_t max_recv, uint32_t max_send,
                 UdEp** out);
// Its completions still in the EVDs' queues stay there (they name its QPN).
Status ud_free(UdEp* u);
// RESET -> INIT (Q_Key), INIT -> RTR, RTR -> RTS (first PSN); INVALID_STATE
// from another state.
Status ud_to_init(UdEp* u, uint32_t qkey);
Status ud_to_rtr(UdEp* u);
Status ud_to_rts(UdEp* u, uint32_t sq_psn);
Status ud_set_qkey(UdEp* u, uint32_t qkey);
Status ud_to_error(UdEp* u);
Status ud_to_reset(UdEp* u);
rc::UdState ud_state(const UdEp* u);
// INSUFFICIENT_RESOURCES when no TX buffer or completion room is free now.
Status ud_post_send(UdEp* u, const rc::SendWr& wr, const UdAddr& to);
Status ud_post_recv(UdEp* u, const rc::RecvWr& wr);
rc::UdCounters ud_counters(const UdEp* u);

}  // namespace dpdat::dat
