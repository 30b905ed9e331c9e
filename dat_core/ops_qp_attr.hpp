#pragma once
// Queue pairs connected by attributes exchanged out of band, without the
// connection manager: what the verbs API does (ibv_modify_qp through RESET,
// INIT, RTR, RTS), each side having learnt the other's QP number, first PSN,
// path MTU and address some other way (a TCP socket, typically).
//
// The EP is made by ep_create (its queue pair exists at once, in RESET, so
// its number is known before any exchange); these operations then move its
// queue pair through the states below.  The CM never touches such an EP: no
// connection events, no DREQ when it goes.  Every operation takes the
// interface lock itself.

#include <cstdint>

#include "ops.hpp"

namespace dpdat::dat {

// The verbs queue-pair states (IBA 10.3.1), in the order of enum ibv_qp_state.
enum class QpAttrState : uint8_t { kReset, kInit, kRtr, kRts, kSqd, kSqe, kError };

// Whether IBA allows moving a queue pair from `from` to `to` (any state may
// go to RESET or ERROR; RESET->INIT->RTR->RTS; INIT->INIT, RTS->RTS,
// RTS->SQD->RTS, SQE->RTS).
bool qp_transition_ok(QpAttrState from, QpAttrState to);

// The state of an EP's queue pair: the last one set, or kError once the
// queue pair failed on its own (retry exhaustion, a NAK, a protection error).
QpAttrState qp_attr_state(const Ep* ep);

// What the peer told out of band (INIT -> RTR): its address, QP number, the
// first PSN it will send, the path MTU (an IBA size, at most the interface's).
struct QpPeer {
  uint32_t ip = 0;  // host byte order
  uint32_t qpn = 0;
  uint32_t rq_psn = 0;
  uint32_t pmtu = 1024;
};
// What the requester starts with (RTR -> RTS).  ack_timeout_ns 0: the
// interface's default retransmission timeout.  rnr_retry 7 retries for as
// long as the peer answers RNR.
struct QpRequester {
  uint32_t sq_psn = 0;
  uint32_t retry_count = 7;
  uint32_t rnr_retry = 7;
  uint64_t ack_timeout_ns = 0;
};

// RESET -> INIT, INIT -> INIT.
Status qp_to_init(Ep* ep);
// The remote operations the queue pair's responder takes (rc::priv::
// kRemoteRead, kRemoteWrite, kRemoteAtomic; all until set): verbs'
// qp_access_flags.  INVALID_STATE without a queue pair.
Status qp_set_remote_access(Ep* ep, uint32_t privs);
// INIT -> RTR: resolves the peer's MAC through the link's neighbour
// resolution (progressing the interface meanwhile, at most resolve_us), then
// the queue pair receives from the peer.  INVALID_ADDRESS/UNREACHABLE when
// nobody answers; INVALID_PARAMETER for a path MTU the interface cannot carry.
Status qp_to_rtr(Ep* ep, const QpPeer& peer, uint64_t resolve_us);
// RTR -> RTS: the queue pair sends from sq_psn on.  RTS -> RTS, SQE -> RTS,
// SQD -> RTS: nothing changes but the state (SQD -> RTS ends a drain still
// under way, with no notification).  Leaving RTR, a queue pair that
// received a packet in RTR is told so (below) if no pass told it yet.
Status qp_to_rts(Ep* ep, const QpRequester& req);
// RTS -> SQD: the send queue drains.  The state alone refuses new sends (the
// front checks it, as it refuses sends before RTS); receives go on.  Once
// every send request posted before has left the queue pair (completed,
// signalled or not), the queue pair stops draining (qp_sq_draining) and,
// with `notify`, the IA's async EVD gets kProviderInternal with
// kQpSqDrainedReason, within a housekeeping pass (about a millisecond).
// SQD -> SQD: nothing changes.
Status qp_to_sqd(Ep* ep, bool notify);
// In SQD with send requests still in the queue pair.
bool qp_sq_draining(Ep* ep);
// A queue pair in RTR that receives a packet (its peer reached RTS first)
// is told once: kProviderInternal with kQpCommEstReason on the IA's async
// EVD, within a housekeeping pass or when it moves to RTS.
// Any -> ERROR: every posted receive and outstanding request completes as
// flushed (IBV_WC_WR_FLUSH_ERR).
Status qp_to_error(Ep* ep);
// Any -> RESET: the queue pair is replaced by a new one (a new QP number,
// *qpn), with nothing posted; what the old one held completes as flushed.
Status qp_to_reset(Ep* ep, uint32_t* qpn);
// A queue pair made this way, connected through the CM instead (verbs'
// connection manager, rdma_cm): from now on its EP reports connection events
// to `conn` (an EVD with DAT_EVD_CONNECTION_FLAG), and ep_connect / cr_accept
// connect its queue pair as they connect any EP's; once connected it is in
// RTS.  The EP must be unconnected, in RESET or INIT, with no connection EVD
// yet (INVALID_STATE otherwise).  src_port: the IP port its REQ names as the
// source (rdma_cm's; the passive side reads it in the request's Cr::req), 0
// for none.
Status qp_cm_attach(Ep* ep, Evd* conn, uint16_t src_port);

// A CM-only EP: an EP with no queue pair of its own that speaks in the CM
// for queue pair `qpn`, one the application made (ep_create) and moves
// through INIT / RTR / RTS itself with qp_cm_path's values, as verbs'
// connection manager does with a QP it did not create (conn_param->qp_num).
// ep_connect / cr_accept exchange REQ / REP / RTU naming qpn; the active side
// gets kConnResponse (with the REP's private data) instead of kEstablished
// and sends the RTU with ep_establish; the passive side gets kEstablished
// with the RTU.  Disconnection and freeing (qp_free) work as for any EP;
// the CM never touches the application's queue pair.  Connection events go
// to `conn`; rd_in / rd_out: the RDMA reads / atomics outstanding at once
// that the REQ or REP offers in each direction (responder resources,
// initiator depth).  src_port as for qp_cm_attach.
Status cm_ep_create(Ia* ia, Evd* conn, uint32_t qpn, uint32_t rd_in, uint32_t rd_out,
                    uint16_t src_port, Ep** out);
// A CM-only EP's REP came (kConnResponse): the RTU goes, the EP is
// CONNECTED; the peer gets kEstablished.  INVALID_STATE in any other state.
Status ep_establish(Ep* ep);

// What the CM agreed for a queue pair it connected (qp_cm_attach), as verbs'
// RTR / RTS attributes: the peer, both first PSNs, the path MTU, and the
// RDMA reads / atomics outstanding at once in each direction (ours, capped
// by what the peer offered).  Also for a CM-only EP.  INVALID_STATE until
// the REP was sent or received.
struct QpCmPath {
  uint32_t peer_ip = 0;  // host byte order
  uint32_t peer_qpn = 0;
  uint32_t sq_psn = 0;               // the first PSN this side sends
  uint32_t rq_psn = 0;               // the first PSN the peer sends
  uint32_t pmtu = 0;                 // bytes
  uint32_t responder_resources = 0;  // reads the peer may have outstanding here
  uint32_t initiator_depth = 0;      // reads this side may have outstanding there
};
Status qp_cm_path(Ep* ep, QpCmPath* out);

// Resolves ip's link-layer address on the IA's link (neighbour resolution,
// progressing the interface meanwhile, at most timeout_us): kOk once it is
// known (with the address in *mac when given), INVALID_ADDRESS/UNREACHABLE
// when nobody answered in time.
Status ia_resolve(Ia* ia, uint32_t ip, uint64_t timeout_us, wire::MacAddr* mac = nullptr);

// The number of the EP's queue pair (0: none).
uint32_t qp_number(const Ep* ep);

// What a device query reports of the IA's interface: its path MTU, address,
// and the frames its engine sent and received so far.
struct IaLinkInfo {
  uint32_t pmtu = 0;
  uint32_t ip = 0;
  wire::MacAddr mac{};
  uint64_t tx_frames = 0, rx_frames = 0;
  bool up = true;  // the link's state now
};
Status ia_link_info(Ia* ia, IaLinkInfo* out);
// From now on (on: true) the IA's async EVD gets kProviderInternal with
// kLinkDownReason / kLinkUpReason (the IA as handle) each time the
// interface's link goes down / up, as its housekeeping sees it (every
// kLinkPollNs, so within about 100 ms).  Off by default: DAT consumers
// never asked for such events.
Status ia_link_events(Ia* ia, bool on);

// Frees an EP connected this way (no DREQ to the peer; one connected
// through the CM, qp_cm_attach, sends its DREQ as any EP freed connected).  Its queue pair goes
// to error first; its completions, flushed or not, leave its EVDs with it
// (as for every EP freed: no event names an EP that is gone).
Status qp_free(Ep* ep);

}  // namespace dpdat::dat
