// The state names of the queue-pair roles (qp_states.hpp) and the trace hook.

#include "rc/qp/qp_states.hpp"

#include <atomic>
#include <iterator>

#include "rc/qp/qp.hpp"

namespace dpdat::rc {

namespace {

#define DPDAT_RC_STATE_NAME(e, name) name,
constexpr std::string_view kReqNames[] = {DPDAT_RC_REQ_STATES(DPDAT_RC_STATE_NAME)};
constexpr std::string_view kRespNames[] = {DPDAT_RC_RESP_STATES(DPDAT_RC_STATE_NAME)};
constexpr std::string_view kCompNames[] = {DPDAT_RC_COMP_STATES(DPDAT_RC_STATE_NAME)};
#undef DPDAT_RC_STATE_NAME
static_assert(std::size(kReqNames) == static_cast<size_t>(Qp::ReqState::kCount));
static_assert(std::size(kRespNames) == static_cast<size_t>(Qp::RespState::kCount));
static_assert(std::size(kCompNames) == static_cast<size_t>(Qp::CompState::kCount));

template <size_t N>
std::string_view name_in(const std::string_view (&names)[N], uint8_t i) {
  return i < N ? names[i] : "invalid";
}

}  // namespace

std::string_view qp_state_name(QpRole role, uint8_t state) noexcept {
  switch (role) {
    case QpRole::kRequester:
      return name_in(kReqNames, state);
    case QpRole::kResponder:
      return name_in(kRespNames, state);
    case QpRole::kCompleter:
      return name_in(kCompNames, state);
  }
  return "invalid";
}

std::string_view Qp::state_name(ReqState s) noexcept {
  return qp_state_name(QpRole::kRequester, static_cast<uint8_t>(s));
}
std::string_view Qp::state_name(RespState s) noexcept {
  return qp_state_name(QpRole::kResponder, static_cast<uint8_t>(s));
}
std::string_view Qp::state_name(CompState s) noexcept {
  return qp_state_name(QpRole::kCompleter, static_cast<uint8_t>(s));
}

#if DPDAT_QP_TRACE
namespace {
std::atomic<QpTraceFn> g_fn{nullptr};
std::atomic<void*> g_ctx{nullptr};
}  // namespace

void set_qp_trace(QpTraceFn fn, void* ctx) noexcept {
  g_ctx.store(ctx, std::memory_order_release);
  g_fn.store(fn, std::memory_order_release);
}

namespace detail {
void qp_trace(const void* qp, uint32_t qpn, QpRole role, uint8_t state, uint32_t psn,
              uint64_t now) noexcept {
  const QpTraceFn fn = g_fn.load(std::memory_order_acquire);
  if (fn != nullptr)
    fn(g_ctx.load(std::memory_order_acquire), QpTransition{qp, qpn, role, state, psn, now});
}
}  // namespace detail
#endif

}  // namespace dpdat::rc
