#pragma once
// The states each queue-pair role walks, defined once: each list below
// yields its role's enum (Qp::ReqState, Qp::RespState, Qp::CompState) and
// the names traces and telemetry print.  X(enumerator, "name") /* meaning */
//
// With the CMake option DPDAT_QP_TRACE, every state a role enters is
// reported to the hook set_qp_trace() installs; without it the trace points
// compile to nothing.

#include <cstdint>
#include <string_view>

// Requester: where emit_requests() stands with the WQE at req_.emit.
#define DPDAT_RC_REQ_STATES(X)                                                         \
  X(kGetWqe, "get-wqe")            /* next WQE to work on (or none) */                 \
  X(kCheckFence, "check-fence")    /* bind fence, kFence, READ/atomic depth, window */ \
  X(kExecBind, "exec-bind")        /* a memory-window bind runs locally, in order */   \
  X(kStartWqe, "start-wqe")        /* assign PSNs, check the lkeys */                  \
  X(kEmit, "emit")                 /* send packets while the window allows */          \
  X(kNextWqe, "next-wqe")          /* this WQE is all sent */                          \
  X(kDone, "done")                 /* nothing more to send now */                      \
  X(kBlocked, "blocked")           /* fence / window / READ-atomic depth: wait */      \
  X(kBackpressure, "backpressure") /* no TX buffer */                                  \
  X(kError, "error")               /* the QP went to error on the way */

// Responder: one request packet through its checks (responder.cpp).  The
// error states, from kErrLength on, each send a NAK and move the QP to error
// (kRespError in responder.cpp).
#define DPDAT_RC_RESP_STATES(X)                                                         \
  X(kCheckPsn, "check-psn")                                                             \
  X(kDuplicate, "duplicate")           /* PSN before the expected one */                \
  X(kOutOfSequence, "out-of-sequence") /* after it: a hole (selective repeat) */        \
  X(kInSequence, "in-sequence")        /* the expected one: what waited for it ends */  \
  X(kCheckLength, "check-length")                                                       \
  X(kCheckOpSeq, "check-op-seq")                                                        \
  X(kCheckResources, "check-resources") /* a receive WQE, room for its completion */    \
  X(kCheckKeys, "check-keys")           /* lkeys of the receive, rkey of RDMA/atomic */ \
  X(kExecSend, "exec-send")                                                             \
  X(kExecWrite, "exec-write")                                                           \
  X(kExecRead, "exec-read")                                                             \
  X(kExecAtomic, "exec-atomic")                                                         \
  X(kAcknowledge, "acknowledge") /* SEND / WRITE packet accepted */                     \
  X(kQueued, "queued")           /* READ / atomic response queued */                    \
  X(kRnrCqFull, "rnr-cq-full")   /* RNR NAK: no room for the completion */              \
  X(kRnrNoRecv, "rnr-no-recv")   /* RNR NAK: no receive WQE */                          \
  X(kErrLength, "err-length")                                                           \
  X(kErrOpSeq, "err-op-seq")                                                            \
  X(kErrRecvProtection, "err-recv-protection")                                          \
  X(kErrRecvLength, "err-recv-length")                                                  \
  X(kErrRkey, "err-rkey")                                                               \
  X(kErrWriteLength, "err-write-length")                                                \
  X(kErrMisaligned, "err-misaligned")                                                   \
  X(kErrUnsupported, "err-unsupported")

// Completer: one response packet (ACK, NAK, READ response, atomic ACK, SACK)
// through its checks (completer.cpp).
#define DPDAT_RC_COMP_STATES(X)                                                      \
  X(kCheckOpcode, "check-opcode")     /* which response it is */                     \
  X(kCheckSyndrome, "check-syndrome") /* ACK / RNR NAK / sequence NAK / fatal NAK */ \
  X(kAck, "ack")                                                                     \
  X(kRnrNak, "rnr-nak")                                                              \
  X(kSeqNak, "seq-nak")                                                              \
  X(kFatalNak, "fatal-nak") /* remote access / invalid request / operational */      \
  X(kRnrExceeded, "rnr-exceeded")                                                    \
  X(kCheckRead, "check-read")      /* a READ response: which READ, where it goes */  \
  X(kReadInOrder, "read-in-order") /* the next response the READ expects */          \
  X(kReadAhead, "read-ahead")      /* after a missing one: placed by offset */       \
  X(kReadGap, "read-gap")          /* after a missing one: ask again from it */      \
  X(kCheckAtomic, "check-atomic")                                                    \
  X(kAtomicAck, "atomic-ack")                                                        \
  X(kSack, "sack")                /* what the responder holds after a hole */        \
  X(kDuplicate, "duplicate")      /* no outstanding request expects it */            \
  X(kStale, "stale")              /* a NAK overtaken by later progress */            \
  X(kBadResponse, "bad-response") /* reserved syndrome, wrong length, bad opcode */  \
  X(kDone, "done")

#define DPDAT_RC_STATE_ENUM(e, name) e,

namespace dpdat::rc {

enum class QpRole : uint8_t { kRequester, kResponder, kCompleter };

// The name of state `state` (an enumerator of the role's enum) of `role`;
// "invalid" for a value outside the list.
std::string_view qp_state_name(QpRole role, uint8_t state) noexcept;

// One state a role entered: the queue pair (its address, unique while it
// lives, and its number, unique within its engine), the role, the state, the
// PSN the role works on (the packet's for the responder and completer, the
// next request's for the requester) and the engine's clock.
struct QpTransition {
  const void* qp;
  uint32_t qpn;
  QpRole role;
  uint8_t state;
  uint32_t psn;
  uint64_t now;
};
using QpTraceFn = void (*)(void* ctx, const QpTransition& t);

#if DPDAT_QP_TRACE
// Installs the process-wide trace hook (nullptr: none).  Install, change or
// clear it only while no engine runs: the function and its context are read
// one after the other, not as one.  The hook runs on the engine thread of the queue
// pair, for every engine: it must be thread-safe when several engines run.
void set_qp_trace(QpTraceFn fn, void* ctx) noexcept;
namespace detail {
void qp_trace(const void* qp, uint32_t qpn, QpRole role, uint8_t state, uint32_t psn,
              uint64_t now) noexcept;
}
#define DPDAT_QP_TRACE_POINT(role, state, psn, now) \
  ::dpdat::rc::detail::qp_trace(this, qpn_, role, static_cast<uint8_t>(state), (psn).value(), now)
#else
#define DPDAT_QP_TRACE_POINT(role, state, psn, now) ((void)0)
#endif

}  // namespace dpdat::rc
