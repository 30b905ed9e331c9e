// The data path: the context ops the inline verbs calls jump through
// (ibv_post_send, ibv_post_recv, ibv_post_srq_recv, ibv_poll_cq,
// ibv_req_notify_cq), and the completion-channel agent.

#include <arpa/inet.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "objects.hpp"

namespace dpdat::verbs {

namespace {

// A UD receive over RoCE: `sl` holds the type of the datagram's L3 header
// (the low three bits: 0 a RoCEv1 GRH, 1 IPv6, 2 IPv4), as RoCE devices
// report it in the completion's SL field, and tells how the 40 bytes of GRH
// space are to be read (an IPv4 header sits in their second half).  UCX's
// ud_verbs reads it so to find the destination address it filters on;
// ibv_wc has no network_hdr_type (only extended CQs do).  dpdat carries
// RoCEv2 over IPv4 only.
constexpr uint8_t kSlRoceL3Ipv4 = 2;

ibv_wc_status wc_status(rc::WcStatus s) {
  switch (s) {
    case rc::WcStatus::kSuccess:
      return IBV_WC_SUCCESS;
    case rc::WcStatus::kLocalLengthError:
      return IBV_WC_LOC_LEN_ERR;
    case rc::WcStatus::kLocalProtectionError:
      return IBV_WC_LOC_PROT_ERR;
    case rc::WcStatus::kLocalQpOperationError:
      return IBV_WC_LOC_QP_OP_ERR;
    case rc::WcStatus::kBindError:
      return IBV_WC_MW_BIND_ERR;
    case rc::WcStatus::kRemoteAccessError:
      return IBV_WC_REM_ACCESS_ERR;
    case rc::WcStatus::kRemoteInvalidRequest:
      return IBV_WC_REM_INV_REQ_ERR;
    case rc::WcStatus::kRemoteOperationalError:
      return IBV_WC_REM_OP_ERR;
    case rc::WcStatus::kRetryExceeded:
      return IBV_WC_RETRY_EXC_ERR;
    case rc::WcStatus::kRnrRetryExceeded:
      return IBV_WC_RNR_RETRY_EXC_ERR;
    case rc::WcStatus::kFlushed:
      return IBV_WC_WR_FLUSH_ERR;
    case rc::WcStatus::kCount:
      break;
  }
  return IBV_WC_GENERAL_ERR;
}

ibv_wc_opcode wc_opcode(rc::WcOp op) {
  switch (op) {
    case rc::WcOp::kSend:
      return IBV_WC_SEND;
    case rc::WcOp::kWrite:
      return IBV_WC_RDMA_WRITE;
    case rc::WcOp::kRead:
      return IBV_WC_RDMA_READ;
    case rc::WcOp::kCompareSwap:
      return IBV_WC_COMP_SWAP;
    case rc::WcOp::kFetchAdd:
      return IBV_WC_FETCH_ADD;
    case rc::WcOp::kBind:
      return IBV_WC_BIND_MW;
    case rc::WcOp::kRecv:
      return IBV_WC_RECV;
    case rc::WcOp::kRecvWriteImm:
      return IBV_WC_RECV_RDMA_WITH_IMM;
  }
  return IBV_WC_SEND;
}

void to_wc(const dat::Event& ev, ibv_wc* wc) {
  std::memset(wc, 0, sizeof(*wc));
  wc->wr_id = ev.cookie;
  wc->status = wc_status(ev.rc_status);
  wc->opcode = wc_opcode(ev.op);
  wc->byte_len = static_cast<uint32_t>(ev.length);
  if (ev.has_imm) {
    wc->imm_data = htonl(ev.imm);
    wc->wc_flags |= IBV_WC_WITH_IMM;
  }
  if (ev.ep == nullptr) {  // a UD queue pair's
    wc->qp_num = ev.qpn;
    if (ev.grh) {
      wc->src_qp = ev.src_qp;
      wc->wc_flags |= IBV_WC_GRH;
      wc->sl = kSlRoceL3Ipv4;
    }
    return;
  }
  // The EP may be gone (its QP destroyed): then no numbers.
  if (auto* ep = dat::lookup<dat::Ep>(ev.ep, dat::HandleType::kEp); ep != nullptr) {
    wc->qp_num = dat::qp_number(ep);
    wc->src_qp = ep->peer_qpn;
  }
}

bool is_dto(const dat::Event& ev) { return ev.num == dat::EventNum::kDto; }

// Raises the channel's eventfd for this CQ (one event per arming).
void notify(Cq* q) {
  Channel* ch = q->channel;
  std::lock_guard<std::mutex> g(ch->mu);
  ch->ready.push_back(q);
  const uint64_t one = 1;
  (void)!write(ch->ch.fd, &one, sizeof(one));
}

// The engine's operation for a work request's opcode (nullopt: one dpdat
// does not implement).
std::optional<rc::WrOp> wr_op_of(ibv_wr_opcode op) {
  switch (op) {
    case IBV_WR_SEND:
      return rc::WrOp::kSend;
    case IBV_WR_SEND_WITH_IMM:
      return rc::WrOp::kSendImm;
    case IBV_WR_RDMA_WRITE:
      return rc::WrOp::kWrite;
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      return rc::WrOp::kWriteImm;
    case IBV_WR_RDMA_READ:
      return rc::WrOp::kRead;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
      return rc::WrOp::kCompareSwap;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      return rc::WrOp::kFetchAdd;
    default:
      return std::nullopt;
  }
}

// Whether the request carries its data inline (IBV_SEND_INLINE; ignored for
// READ and atomics, which carry none).
bool wants_inline(const ibv_send_wr& wr) {
  return (wr.send_flags & IBV_SEND_INLINE) != 0 && wr.opcode != IBV_WR_RDMA_READ &&
         wr.opcode != IBV_WR_ATOMIC_CMP_AND_SWP && wr.opcode != IBV_WR_ATOMIC_FETCH_AND_ADD;
}

// A gather list the QP takes: at most max_send_sge entries, inline data no
// longer than max_inline_data (and a QP that has inline slots).  *inline_len:
// the inline data's length (0 when not inline).
dat::Status check_gather(const Qp* q, const ibv_send_wr& wr, uint64_t* inline_len) {
  *inline_len = 0;
  if (wr.num_sge < 0 || static_cast<uint32_t>(wr.num_sge) > q->cap.max_send_sge)
    return dat::fail(dat::Type::INVALID_PARAMETER);
  if (wants_inline(wr)) {
    for (int i = 0; i < wr.num_sge; ++i) *inline_len += wr.sg_list[i].length;
    if (*inline_len > q->cap.max_inline_data || q->inline_lmr == nullptr)
      return dat::fail(dat::Type::INVALID_PARAMETER);
  }
  return dat::kOk;
}

// The work request's gather list into sge[] (*nsge entries): with
// IBV_SEND_INLINE the data is copied into the QP's next inline slot, under
// *inline_lk, and one entry names it.
dat::Status gather(Qp* q, const ibv_send_wr& wr, rc::Sge* sge, uint32_t* nsge, bool* is_inline,
                   std::unique_lock<std::mutex>* inline_lk) {
  uint64_t total = 0;
  if (const dat::Status st = check_gather(q, wr, &total); !st.ok()) return st;
  const uint32_t n = static_cast<uint32_t>(wr.num_sge);
  *is_inline = wants_inline(wr);
  if (*is_inline) {
    *inline_lk = std::unique_lock<std::mutex>(q->post_mu);
    uint8_t* slot = q->inline_buf.data() + (q->inline_next % q->inline_slots) * kMaxInline;
    uint64_t off = 0;
    for (uint32_t i = 0; i < n; ++i) {
      std::memcpy(slot + off, reinterpret_cast<const void*>(wr.sg_list[i].addr),
                  wr.sg_list[i].length);
      off += wr.sg_list[i].length;
    }
    sge[0] = rc::Sge{q->inline_lmr->lmr_context, reinterpret_cast<uintptr_t>(slot), total};
    *nsge = total > 0 ? 1 : 0;
  } else {
    for (uint32_t i = 0; i < n; ++i)
      sge[i] = rc::Sge{wr.sg_list[i].lkey, wr.sg_list[i].addr, wr.sg_list[i].length};
    *nsge = n;
  }
  return dat::kOk;
}

// A UD send: one datagram to the address handle's peer.
dat::Status post_ud(Qp* q, const ibv_send_wr& wr) {
  if (wr.opcode != IBV_WR_SEND && wr.opcode != IBV_WR_SEND_WITH_IMM)
    return dat::fail(dat::Type::INVALID_PARAMETER);
  if (wr.wr.ud.ah == nullptr || wr.wr.ud.ah->context != q->qp.context)
    return dat::fail(dat::Type::INVALID_PARAMETER);
  rc::SendWr w;
  bool is_inline = false;
  std::unique_lock<std::mutex> inline_lk;
  if (const dat::Status st = gather(q, wr, w.sge, &w.num_sge, &is_inline, &inline_lk); !st.ok())
    return st;
  w.cookie = wr.wr_id;
  w.op = wr.opcode == IBV_WR_SEND_WITH_IMM ? rc::WrOp::kSendImm : rc::WrOp::kSend;
  w.imm = wr.opcode == IBV_WR_SEND_WITH_IMM ? ntohl(wr.imm_data) : 0;
  w.flags = (wr.send_flags & IBV_SEND_SIGNALED) != 0 || q->sq_sig_all ? rc::wr_flag::kSignaled : 0;
  if ((wr.send_flags & IBV_SEND_SOLICITED) != 0) w.flags |= rc::wr_flag::kSolicited;
  const auto* ah = reinterpret_cast<const Ah*>(wr.wr.ud.ah);
  const dat::UdAddr to{ah->mac, ah->ip, wr.wr.ud.remote_qpn & 0xFFFFFFu, wr.wr.ud.remote_qkey};
  const dat::Status st = dat::ud_post_send(q->udq, w, to);
  if (st.ok() && is_inline) q->inline_next++;
  return st;
}

dat::Status post_one(Qp* q, const ibv_send_wr& wr) {
  if (q->ud) return post_ud(q, wr);
  dat::PostArgs a;
  rc::Sge sge[kMaxSge];
  bool is_inline = false;
  std::unique_lock<std::mutex> inline_lk;
  uint32_t nsge = 0;
  if (const dat::Status st = gather(q, wr, sge, &nsge, &is_inline, &inline_lk); !st.ok()) return st;
  a.nsge = nsge;
  a.sge = sge;
  a.cookie = wr.wr_id;
  dat::RemoteSeg remote;
  uint64_t total = 0;
  for (uint32_t i = 0; i < a.nsge; ++i) total += sge[i].length;
  const std::optional<rc::WrOp> op = wr_op_of(wr.opcode);
  if (!op) return dat::fail(dat::Type::NOT_IMPLEMENTED);
  a.op = *op;
  if (*op == rc::WrOp::kSendImm || *op == rc::WrOp::kWriteImm) a.imm = ntohl(wr.imm_data);
  switch (*op) {
    case rc::WrOp::kWrite:
    case rc::WrOp::kWriteImm:
    case rc::WrOp::kRead:
      remote.rkey = wr.wr.rdma.rkey;
      remote.va = wr.wr.rdma.remote_addr;
      remote.length = total;
      a.remote = &remote;
      break;
    case rc::WrOp::kCompareSwap:
    case rc::WrOp::kFetchAdd:
      if ((wr.wr.atomic.remote_addr & 7) != 0) return dat::fail(dat::Type::INVALID_PARAMETER);
      remote.rkey = wr.wr.atomic.rkey;
      remote.va = wr.wr.atomic.remote_addr;
      remote.length = 8;
      a.remote = &remote;
      a.compare = wr.wr.atomic.compare_add;
      a.swap_add = *op == rc::WrOp::kCompareSwap ? wr.wr.atomic.swap : wr.wr.atomic.compare_add;
      break;
    default:
      break;
  }
  a.cflags = 0;
  if ((wr.send_flags & IBV_SEND_SIGNALED) == 0 && !q->sq_sig_all) a.cflags |= dat::cflag::kSuppress;
  if ((wr.send_flags & IBV_SEND_FENCE) != 0) a.cflags |= dat::cflag::kBarrierFence;
  if ((wr.send_flags & IBV_SEND_SOLICITED) != 0) a.cflags |= dat::cflag::kSolicitedWait;
  const dat::Status st = dat::ep_post(q->ep, a);
  if (st.ok() && is_inline) q->inline_next++;
  return st;
}

// UD receives: into the QP's own queue (INIT, RTR, RTS; the buffer takes
// the 40 GRH bytes first).
int post_recv_ud(Qp* q, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  for (ibv_recv_wr* w = wr; w != nullptr; w = w->next) {
    int e = 0;
    if (w->num_sge < 0 || static_cast<uint32_t>(w->num_sge) > q->cap.max_recv_sge) {
      e = EINVAL;
    } else {
      rc::RecvWr r;
      r.cookie = w->wr_id;
      r.num_sge = static_cast<uint32_t>(w->num_sge);
      for (int i = 0; i < w->num_sge; ++i)
        r.sge[i] = rc::Sge{w->sg_list[i].lkey, w->sg_list[i].addr, w->sg_list[i].length};
      const dat::Status st = dat::ud_post_recv(q->udq, r);
      // A QP in RESET or ERR takes no receive: EINVAL, as for RC.
      e = st.ok() ? 0 : st.type == dat::Type::INVALID_STATE ? EINVAL : to_errno(st);
    }
    if (e != 0) {
      if (bad != nullptr) *bad = w;
      return e;
    }
  }
  return 0;
}

// An RC work request posted in ERR: checked as any post is (its opcode,
// SGE count and inline size), then completed as flushed, as a device does.
int flush_send(Qp* q, const ibv_send_wr& wr) {
  const std::optional<rc::WrOp> op = wr_op_of(wr.opcode);
  if (!op) return to_errno(dat::fail(dat::Type::NOT_IMPLEMENTED));
  uint64_t inline_len = 0;
  if (const dat::Status st = check_gather(q, wr, &inline_len); !st.ok()) return to_errno(st);
  return to_errno(dat::ep_post_flushed(q->ep, rc::wc_op_of(*op), wr.wr_id));
}

}  // namespace

int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
  auto* q = reinterpret_cast<Qp*>(qp);
  const bool rts = q->ud ? dat::ud_state(q->udq) == rc::UdState::kRts
                         : dat::qp_attr_state(q->ep) == dat::QpAttrState::kRts;
  // RC in ERR: each request completes flushed (UD keeps refusing: EINVAL).
  const bool err = !rts && !q->ud && dat::qp_attr_state(q->ep) == dat::QpAttrState::kError;
  for (ibv_send_wr* w = wr; w != nullptr; w = w->next) {
    int e = 0;
    if (err) {
      e = flush_send(q, *w);
    } else if (!rts) {
      e = EINVAL;
    } else if (const dat::Status st = post_one(q, *w); !st.ok()) {
      e = to_errno(st);
    }
    if (e != 0) {
      if (bad != nullptr) *bad = w;
      return e;
    }
  }
  return 0;
}

int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  auto* q = reinterpret_cast<Qp*>(qp);
  if (q->ud) return post_recv_ud(q, wr, bad);
  const dat::QpAttrState s = dat::qp_attr_state(q->ep);
  for (ibv_recv_wr* w = wr; w != nullptr; w = w->next) {
    int e = 0;
    if (q->srq != nullptr || s == dat::QpAttrState::kReset) {
      e = EINVAL;
    } else if (w->num_sge < 0 || static_cast<uint32_t>(w->num_sge) > q->cap.max_recv_sge) {
      e = EINVAL;
    } else if (s == dat::QpAttrState::kError) {  // completes flushed, as a device does
      e = to_errno(dat::ep_post_flushed(q->ep, rc::WcOp::kRecv, w->wr_id));
    } else {
      rc::Sge sge[kMaxSge];
      for (int i = 0; i < w->num_sge; ++i)
        sge[i] = rc::Sge{w->sg_list[i].lkey, w->sg_list[i].addr, w->sg_list[i].length};
      const dat::Status st =
          dat::ep_post_recv(q->ep, sge, static_cast<uint32_t>(w->num_sge), w->wr_id, 0);
      e = to_errno(st);
    }
    if (e != 0) {
      if (bad != nullptr) *bad = w;
      return e;
    }
  }
  return 0;
}

int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  auto* s = reinterpret_cast<Srq*>(srq);
  for (ibv_recv_wr* w = wr; w != nullptr; w = w->next) {
    int e = 0;
    if (w->num_sge < 0 || static_cast<uint32_t>(w->num_sge) > s->max_sge) {
      e = EINVAL;
    } else {
      rc::Sge sge[kMaxSge];
      for (int i = 0; i < w->num_sge; ++i)
        sge[i] = rc::Sge{w->sg_list[i].lkey, w->sg_list[i].addr, w->sg_list[i].length};
      e = to_errno(dat::srq_post_recv(s->s, sge, static_cast<uint32_t>(w->num_sge), w->wr_id));
    }
    if (e != 0) {
      if (bad != nullptr) *bad = w;
      return e;
    }
  }
  return 0;
}

int poll_cq(ibv_cq* cq, int n, ibv_wc* wc) {
  if (n < 0 || (n > 0 && wc == nullptr)) return -EINVAL;
  auto* q = reinterpret_cast<Cq*>(cq);
  std::unique_lock<std::recursive_mutex> lk;
  if (q->channel != nullptr) lk = std::unique_lock<std::recursive_mutex>(q->mu);
  int got = 0;
  dat::Event ev;
  while (got < n) {
    if (!q->staged.empty()) {
      ev = std::move(q->staged.front());
      q->staged.pop_front();
    } else if (!dat::evd_dequeue(q->evd, &ev).ok()) {
      if (!q->staged.empty()) continue;  // the agent took them meanwhile
      break;
    }
    if (is_dto(ev)) to_wc(ev, &wc[got++]);
  }
  return got;
}

int req_notify_cq(ibv_cq* cq, int solicited_only) {
  auto* q = reinterpret_cast<Cq*>(cq);
  if (q->channel == nullptr) return EINVAL;
  q->armed.store(solicited_only != 0 ? 2 : 1);
  return 0;
}

void cq_agent(void* instance, void* /*evd*/) {
  auto* q = static_cast<Cq*>(instance);
  int armed = q->armed.load();
  if (armed == 0) return;
  if (armed == 2) {
    // Solicited only: the next solicited receive or any failed completion.
    std::lock_guard<std::recursive_mutex> g(q->mu);
    bool hit = false;
    dat::Event ev;
    while (dat::pop_event(q->evd, &ev)) {
      hit |= is_dto(ev) && (ev.solicited || ev.rc_status != rc::WcStatus::kSuccess);
      q->staged.push_back(std::move(ev));
    }
    if (!hit) return;
  }
  if (q->armed.compare_exchange_strong(armed, 0)) notify(q);
}

}  // namespace dpdat::verbs
