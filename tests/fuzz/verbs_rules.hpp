#pragma once
// What the verbs man pages and IBA allow, written down for the verbs
// call-sequence fuzzer (verbs_fuzz.cpp) independently of dpdat's front: the
// RC queue-pair state table with the attributes each transition requires and
// may carry (ibv_modify_qp(3), IBA 11.2.4.2), the attribute ranges, and the
// work-completion fields of a successful completion (ibv_poll_cq(3)).

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>

namespace dpdat::fuzz::verbs_rules {

// Whether IBA allows an RC queue pair to move from `from` to `to`.
inline bool transition_ok(ibv_qp_state from, ibv_qp_state to) {
  if (from > IBV_QPS_ERR || to > IBV_QPS_ERR) return false;
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) return true;
  switch (from) {
    case IBV_QPS_RESET:
      return to == IBV_QPS_INIT;
    case IBV_QPS_INIT:
      return to == IBV_QPS_INIT || to == IBV_QPS_RTR;
    case IBV_QPS_RTR:
      return to == IBV_QPS_RTS;
    case IBV_QPS_RTS:
      return to == IBV_QPS_RTS || to == IBV_QPS_SQD;
    case IBV_QPS_SQD:
      return to == IBV_QPS_RTS || to == IBV_QPS_SQD;
    case IBV_QPS_SQE:
      return to == IBV_QPS_RTS;
    default:
      return false;
  }
}

struct Masks {
  int required, optional;  // IBV_QP_STATE counts as required everywhere
};

// The attributes an RC transition requires and those it may carry
// (ibv_modify_qp(3)'s table for IBV_QPT_RC).
inline Masks masks(ibv_qp_state from, ibv_qp_state to) {
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) return {IBV_QP_STATE, 0};
  if (from == IBV_QPS_RESET && to == IBV_QPS_INIT)
    return {IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0};
  if (from == IBV_QPS_INIT && to == IBV_QPS_INIT)
    return {IBV_QP_STATE, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS};
  if (from == IBV_QPS_INIT && to == IBV_QPS_RTR)
    return {IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
            IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX};
  if (from == IBV_QPS_RTR && to == IBV_QPS_RTS)
    return {IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                IBV_QP_MAX_QP_RD_ATOMIC,
            IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
                IBV_QP_PATH_MIG_STATE};
  if (from == IBV_QPS_RTS && to == IBV_QPS_SQD) return {IBV_QP_STATE, IBV_QP_EN_SQD_ASYNC_NOTIFY};
  if (from == IBV_QPS_SQD && to == IBV_QPS_SQD)
    return {IBV_QP_STATE, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
                              IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE | IBV_QP_PKEY_INDEX |
                              IBV_QP_PORT | IBV_QP_AV | IBV_QP_MAX_QP_RD_ATOMIC |
                              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                              IBV_QP_RNR_RETRY};
  if (from == IBV_QPS_SQE && to == IBV_QPS_RTS)
    return {IBV_QP_STATE, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER};
  // RTS -> RTS, SQD -> RTS
  return {IBV_QP_STATE, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
                            IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE};
}

// The attribute values a successful ibv_modify_qp may have carried: one
// port, one P_Key, IBA's field widths, at most the device's read depths, a
// known MTU no larger than the port's.
inline bool values_ok(const ibv_qp_attr& a, int mask, uint32_t max_rd_atomic, ibv_mtu port_mtu) {
  if ((mask & IBV_QP_PORT) != 0 && a.port_num != 1) return false;
  if ((mask & IBV_QP_PKEY_INDEX) != 0 && a.pkey_index != 0) return false;
  if ((mask & IBV_QP_RETRY_CNT) != 0 && a.retry_cnt > 7) return false;
  if ((mask & IBV_QP_RNR_RETRY) != 0 && a.rnr_retry > 7) return false;
  if ((mask & IBV_QP_TIMEOUT) != 0 && a.timeout > 31) return false;
  if ((mask & IBV_QP_MIN_RNR_TIMER) != 0 && a.min_rnr_timer > 31) return false;
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) != 0 && a.max_rd_atomic > max_rd_atomic) return false;
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) != 0 && a.max_dest_rd_atomic > max_rd_atomic) return false;
  if ((mask & IBV_QP_PATH_MTU) != 0 &&
      (a.path_mtu < IBV_MTU_256 || a.path_mtu > IBV_MTU_4096 || a.path_mtu > port_mtu))
    return false;
  if ((mask & IBV_QP_AV) != 0 && (a.ah_attr.is_global == 0 || a.ah_attr.port_num != 1))
    return false;
  return true;
}

// The errno values a failing call may answer with.  ibv_modify_qp: EINVAL
// (invalid value or mask), EOPNOTSUPP (not supported), EBUSY (IBA: SQD
// attributes while draining), EHOSTUNREACH (no path to the GID's address),
// ENOMEM.  ibv_post_*: EINVAL, ENOMEM (queue full), EOPNOTSUPP (opcode),
// EFAULT (the man page's "invalid value in QP").
inline bool modify_errno_ok(int e) {
  return e == EINVAL || e == EOPNOTSUPP || e == EBUSY || e == EHOSTUNREACH || e == ENOMEM ||
         e == ETIMEDOUT;
}
inline bool post_errno_ok(int e) {
  return e == EINVAL || e == ENOMEM || e == EOPNOTSUPP || e == EFAULT;
}

// The completion statuses an RC provider without memory windows reports.
inline bool wc_status_ok(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_SUCCESS:
    case IBV_WC_LOC_LEN_ERR:
    case IBV_WC_LOC_QP_OP_ERR:
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_WR_FLUSH_ERR:
    case IBV_WC_REM_INV_REQ_ERR:
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_REM_OP_ERR:
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
    case IBV_WC_BAD_RESP_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
    case IBV_WC_REM_ABORT_ERR:
      return true;
    default:
      return false;
  }
}

// The completion opcode of a successful send work request.
inline bool send_wc_opcode_ok(ibv_wr_opcode op, ibv_wc_opcode wc) {
  switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      return wc == IBV_WC_RDMA_WRITE;
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
      return wc == IBV_WC_SEND;
    case IBV_WR_RDMA_READ:
      return wc == IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
      return wc == IBV_WC_COMP_SWAP;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      return wc == IBV_WC_FETCH_ADD;
    default:
      return false;
  }
}

// RC operations a provider without memory windows, TSO or send-with-
// invalidate must carry out or refuse.
inline bool rc_opcode(ibv_wr_opcode op) {
  return op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_SEND ||
         op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
         op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

}  // namespace dpdat::fuzz::verbs_rules
