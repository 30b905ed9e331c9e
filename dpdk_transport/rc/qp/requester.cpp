// Requester (IBA 9.7.4): turns send-queue WQEs into request packets within
// the window, the fences and the READ / atomic depth, as rxe_req.c does;
// rewinds for go-back-N and resends single holes for selective repeat.
// emit_requests() walks ReqState through check steps that return the next
// state.

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>

#include "rc/engine/engine.hpp"
#include "rc/qp/qp.hpp"
#include "rc/qp/qp_util.hpp"

namespace dpdat::rc {

using wire::Opcode;
using wire::Psn;
using namespace detail;

Psn Qp::una_psn() const {
  for (uint64_t i = sq_head_; i < sq_tail_; ++i) {
    const SendWqe& w = sq(i);
    if (w.done) continue;
    if (!w.started) return req_.next_psn;
    switch (w.wr.op) {
      case WrOp::kRead:
        return w.first_psn + static_cast<int32_t>(w.resp_pkts);
      case WrOp::kCompareSwap:
      case WrOp::kFetchAdd:
        return w.first_psn;
      case WrOp::kBind:
        continue;
      default: {
        const Psn a = comp_.acked_psn + 1;
        return a > w.first_psn ? a : w.first_psn;
      }
    }
  }
  return req_.next_psn;
}

bool Qp::has_outstanding() const {
  for (uint64_t i = sq_head_; i < sq_tail_; ++i) {
    const SendWqe& w = sq(i);
    if (!w.started) return false;
    if (!w.done && w.wr.op != WrOp::kBind) return true;
  }
  return false;
}

uint64_t Qp::wqe_from(Psn psn) const {
  for (uint64_t i = sq_head_; i < sq_tail_; ++i) {
    const SendWqe& w = sq(i);
    if (!w.started) break;
    if (w.done || w.wr.op == WrOp::kBind) continue;
    if (Psn::diff(psn, w.first_psn) < static_cast<int32_t>(w.npkts)) return i;
  }
  return sq_tail_;
}

void Qp::arm_retransmit(uint64_t now) {
  // Nothing unacknowledged on the wire (a WQE half sent, its next packet
  // held by the pacer): no timer; the next packet sent arms it again.
  if (state_ != QpState::kRts || !has_outstanding() ||
      Psn::diff(una_psn(), req_.max_sent_psn) > 0) {
    clear_timer(TimerKind::kRetransmit);
    clear_timer(TimerKind::kProbe);
    return;
  }
  // Exponential back-off over consecutive timeouts without progress (capped
  // at 64x), so a slow peer or a slow host is not buried in retransmissions.
  uint64_t deadline = now + (rtt_.rto_ns() << std::min<uint32_t>(comp_.backoff, 6));
  // The retries are spent: time out no later than the moment the peer is
  // declared dead.
  if (comp_.retries_left == 0 && comp_.first_timeout_ns != 0)
    deadline = std::min(deadline, std::max(comp_.first_timeout_ns + comp_.dead_after_ns, now + 1));
  set_timer(TimerKind::kRetransmit, deadline);
  if (cfg_.tail_loss_probe && rtt_.valid() && !req_.tlp_sent)
    set_timer(TimerKind::kProbe, now + probe_timeout());
}

uint64_t Qp::probe_timeout() const { return std::max(2 * rtt_.srtt_ns(), cfg_.tlp_min_ns); }

void Qp::on_retransmit_timeout(uint64_t now) {
  if (!has_outstanding() || req_.rnr_waiting) return;
  ctr_.timeouts++;
  const Psn una = una_psn();
  if (comp_.first_timeout_ns == 0) comp_.first_timeout_ns = now;
  if (comp_.retries_left == 0 && now - comp_.first_timeout_ns >= comp_.dead_after_ns) {
    fail_wqe_at(una, WcStatus::kRetryExceeded, QpError::kRetryExceeded, now);
    return;
  }
  if (comp_.retries_left > 0) comp_.retries_left--;
  ++comp_.backoff;
  req_.read_gap_pending = false;
  req_.rtt_timing = false;  // Karn: what is resent now is not timed
  cc_on_timeout(now);       // the resend is not held by the pacer
  if (!sr_timeout_resend(una, now)) rewind_to(una, now);
  arm_retransmit(now);
}

// A timeout when the oldest unacknowledged packet belongs to a
// selective-repeat WRITE: the responder keeps what it placed, so only that
// packet and the newest one go out again (both with AckReq), not the window.
// A live responder answers either with an ACK or with a NAK naming the next
// hole, so recovery continues selectively; a spurious timeout (a peer slow
// to answer, e.g. a descheduled process) costs two packets instead of a
// window.  Everything else goes back N.
bool Qp::sr_timeout_resend(Psn una, uint64_t now) {
  const uint64_t i = wqe_from(una);
  if (!cfg_.selective_repeat || !wqe_holds(i, una)) return false;
  const SendWqe& w = sq(i);
  const auto d = static_cast<uint32_t>(Psn::diff(una, w.first_psn));
  if (!sr_resendable(w, d) || d >= w.sent || !emit_packet(w, d, now, /*probe=*/true)) return false;
  ctr_.sr_resends++;
  if (!(req_.max_sent_psn == una)) send_probe(req_.max_sent_psn, now);
  return true;
}

// Tail-loss probe: the newest packet sent goes out once more, with AckReq.
// If the tail was lost the responder now sees a hole and NAKs it (or, when
// only this packet was lost, takes it and ACKs): recovery within a round trip.
//
// A hole the responder reported (selective repeat) and that is still not
// acknowledged is probed instead: its resend, or the NAK, was lost.
void Qp::send_probe(Psn psn, uint64_t now) {
  uint64_t i = wqe_from(psn);
  if (!wqe_holds(i, psn)) {
    // The newest request is answered (READs completing out of order with
    // an older one's re-requested responses lost): probe the oldest one.
    psn = una_psn();
    i = wqe_from(psn);
    if (!wqe_holds(i, psn)) return;
  }
  const SendWqe& w = sq(i);
  uint32_t idx = 0;
  if (w.wr.op == WrOp::kRead && cfg_.selective_repeat) {
    // Only the responses not placed are asked for again.
    if (!rd_request_holes(w, now, /*probe=*/true)) return;
    req_.tlp_sent = true;
    req_.rtt_timing = false;
    ctr_.tlp_probes++;
    return;
  }
  if (w.wr.op == WrOp::kRead) {
    idx = w.resp_pkts;  // re-request from the first response not placed
  } else if (!is_rd_atomic(w.wr.op)) {
    idx = static_cast<uint32_t>(Psn::diff(psn, w.first_psn));
    if (idx >= w.sent) return;  // rewound meanwhile: goes out again anyway
  }
  if (!emit_packet(w, idx, now, /*probe=*/true)) return;
  req_.tlp_sent = true;
  req_.rtt_timing = false;
  ctr_.tlp_probes++;
}

bool Qp::start_wqe(SendWqe& w, uint64_t now) {
  const Access acc = is_rd_atomic(w.wr.op) ? Access::kLocalWrite : Access::kLocalRead;
  for (uint32_t i = 0; i < w.wr.num_sge; ++i) {
    const Sge& g = w.wr.sge[i];
    if (g.length == 0) continue;
    AccessGrant grant;
    if (mr_.check_local(g.lkey, pz_, g.va, g.length, acc, &grant) != AccessError::kOk) {
      // IBA 10.8.3: a local protection error completes the WR in error and
      // moves the QP to the error state.
      w.started = true;
      w.done = true;
      w.status = WcStatus::kLocalProtectionError;
      set_error(QpError::kLocalProtection, now);
      return false;
    }
    w.host[i] = grant.host;
  }
  w.first_psn = req_.next_psn;
  req_.next_psn += static_cast<int32_t>(w.npkts);
  w.started = true;
  w.sent = 0;
  if (is_rd_atomic(w.wr.op)) {
    req_.rd_atomic_outstanding++;
    w.rd_seq = req_.rd_seq_next++;
  }
  return true;
}

// At most max_rd_atomic READs / atomics from the oldest unfinished one to the
// newest: the responder's replay cache (as deep) then still holds every
// request the requester may have to repeat (IBA 9.7.4.1.3, "initiator depth").
bool Qp::rd_atomic_room() const {
  for (uint64_t i = sq_head_; i < sq_tail_; ++i) {
    const SendWqe& w = sq(i);
    if (!w.started) break;
    if (!w.done && is_rd_atomic(w.wr.op)) return req_.rd_seq_next - w.rd_seq < cfg_.max_rd_atomic;
  }
  return true;
}

bool Qp::sr_packet(const SendWqe& w) const {
  return cfg_.selective_repeat && w.wr.op == WrOp::kWrite;
}

bool Qp::sr_resendable(const SendWqe& w, uint32_t idx) const {
  if (sr_packet(w)) return true;
  if (!cfg_.selective_repeat) return false;
  // A peer that sends SACKs keeps what it cannot place after a hole
  // (responder_hold.cpp): any request packet is resent alone — a READ or
  // atomic its request, not the PSNs of its response.
  if (srs_.sack_seen) return !is_rd_atomic(w.wr.op) || idx == 0;
  // SEND and WRITE with immediate: once the responder has the first packet
  // it places later ones of the message by their offset (responder.cpp), so
  // a hole after the first is resent alone.  It places a SEND's packets
  // after a lost first one too (into the receive WQE that one will take);
  // a WRITE with immediate's need the first packet's RETH: that goes back N.
  if (!is_send_write(w.wr.op)) return false;
  return idx > 0 || w.wr.op == WrOp::kSend || w.wr.op == WrOp::kSendImm;
}

bool Qp::rd_request_holes(const SendWqe& w, uint64_t now, bool probe) {
  uint32_t i = w.resp_pkts;
  while (i < w.npkts) {
    if (rd_placed(w, i)) {
      ++i;
      continue;
    }
    uint32_t j = i + 1;
    while (j < w.npkts && !rd_placed(w, j)) ++j;
    if (!emit_packet(w, i, now, probe, j - i)) return false;
    i = j;
  }
  return true;
}

bool Qp::emit_packet(const SendWqe& w, uint32_t idx, uint64_t now, bool probe, uint32_t rd_n) {
  const uint32_t pmtu = cfg_.pmtu;
  const Psn psn = w.first_psn + static_cast<int32_t>(idx);
  wire::BuildSpec* sp = nullptr;
  bool last = true;
  switch (w.wr.op) {
    case WrOp::kSend:
    case WrOp::kSendImm:
    case WrOp::kWrite:
    case WrOp::kWriteImm: {
      const bool imm = w.wr.op == WrOp::kSendImm || w.wr.op == WrOp::kWriteImm;
      const bool is_send = w.wr.op == WrOp::kSend || w.wr.op == WrOp::kSendImm;
      const Pos p = pos_of(idx, w.npkts);
      const uint64_t off = uint64_t{idx} * pmtu;
      const uint64_t len = std::min<uint64_t>(pmtu, w.total_len - off);
      if (sr_packet(w)) {
        // Self-describing: every packet is an RDMA WRITE Only with its own RETH.
        sp = &base_spec(Opcode::kWriteOnly, psn);
        sp->va = w.wr.remote_va + off;
        sp->dma_len = static_cast<uint32_t>(len);
        sp->write_more = idx + 1 < w.npkts;
      } else {
        sp = &base_spec(is_send ? seg_opcode(Seg::kSend, p, imm) : seg_opcode(Seg::kWrite, p, imm),
                        psn);
        sp->va = w.wr.remote_va;
        sp->dma_len = static_cast<uint32_t>(w.total_len);
      }
      wire::BuildSpec& s = *sp;
      s.gather = std::span(tx_pieces_.data(), gather(w, off, len, tx_pieces_));
      s.imm = w.wr.imm;
      s.rkey = w.wr.rkey;
      last = p == Pos::kOnly || p == Pos::kLast;
      s.se = last && is_send && (w.wr.flags & wr_flag::kSolicited) != 0;
      break;
    }
    case WrOp::kRead: {
      // (Re-)request from the first response not yet placed (IBA 9.7.4.1.4),
      // to the end or, for selective repeat, `rd_n` responses: a new READ
      // request with the va, length and PSN of the first response wanted.
      const uint64_t off = uint64_t{idx} * pmtu;
      const uint64_t end =
          rd_n == 0 ? w.total_len : std::min<uint64_t>(w.total_len, uint64_t{idx + rd_n} * pmtu);
      sp = &base_spec(Opcode::kReadRequest, psn);
      sp->va = w.wr.remote_va + off;
      sp->rkey = w.wr.rkey;
      sp->dma_len = static_cast<uint32_t>(end - off);
      break;
    }
    case WrOp::kCompareSwap:
    case WrOp::kFetchAdd:
      sp =
          &base_spec(w.wr.op == WrOp::kCompareSwap ? Opcode::kCompareSwap : Opcode::kFetchAdd, psn);
      sp->va = w.wr.remote_va;
      sp->rkey = w.wr.rkey;
      sp->swap_add = w.wr.swap_add;
      sp->compare = w.wr.compare;
      break;
    case WrOp::kBind:
      return true;
  }
  if (sp == nullptr) return true;  // unreachable: every op is handled above
  wire::BuildSpec& s = *sp;
  // The last packet of a message asks for its ACK when the message's
  // completion is reported (signalled) or its answer is a response (READ,
  // atomic).  An unsignalled WRITE or SEND retires with a later ACK, which
  // the responder sends every ack_every packets or ack_delay_ns after the
  // first unacknowledged one: a stream of small unsignalled messages is not
  // answered with one ACK per message (docs/engines.md has the figures).
  const bool wants_ack =
      last && (!is_send_write(w.wr.op) || (w.wr.flags & wr_flag::kSignaled) != 0);
  s.ack_req = wants_ack || probe || ++req_.since_ack_req >= cfg_.ack_every ||
              in_flight_at(psn) >= static_cast<int32_t>(cc_window()) - 1;
  if (!transmit(s, now)) return false;
  if (s.ack_req) req_.since_ack_req = 0;
  if (w.wr.op == WrOp::kRead && cfg_.selective_repeat)
    rd_note_request(w, idx, rd_n == 0 ? w.npkts : std::min(w.npkts, idx + rd_n));
  if (!srs_.sent_seq.empty()) srs_.sent_seq[psn.value() % kSentSeqSize] = {psn, ++srs_.tx_seq};
  // The newest PSN this packet covers (a READ request: its whole response).
  const Psn top = w.wr.op == WrOp::kRead ? w.first_psn + static_cast<int32_t>(w.npkts - 1) : psn;
  if (Psn::diff(top, req_.max_sent_psn) > 0) {
    req_.max_sent_psn = top;
    if (s.ack_req && !req_.rtt_timing) {  // time one fresh AckReq packet per round trip
      req_.rtt_timing = true;
      req_.rtt_psn = psn;
      req_.rtt_t0 = now;
    }
  } else if (!probe) {
    req_.rtt_timing = false;  // Karn: a retransmission makes the running sample ambiguous
  }
  if (timer_deadline(TimerKind::kRetransmit) == 0) {
    arm_retransmit(now);
  } else if (cfg_.tail_loss_probe && rtt_.valid() && !req_.tlp_sent && !probe) {
    set_timer(TimerKind::kProbe, now + probe_timeout());  // ~2 RTT after the newest packet
  }
  return true;
}

bool Qp::emit_one(SendWqe& w, uint64_t now) {
  if (w.wr.op == WrOp::kRead && cfg_.selective_repeat && w.resp_seen > 0) {
    // Asked again after responses arrived: only the ranges still missing.
    if (!rd_request_holes(w, now, /*probe=*/false)) return false;
    w.sent = w.npkts;
    return true;
  }
  if (!emit_packet(w, w.sent, now)) return false;
  w.sent = w.wr.op == WrOp::kRead ? w.npkts : w.sent + 1;
  return true;
}

// Selective repeat: resend single packets the responder reported missing.
bool Qp::emit_sr_resends(uint64_t now) {
  while (srs_.resend_head != srs_.resend_tail) {
    const Psn psn = srs_.resend[srs_.resend_head & (srs_.resend.size() - 1)];
    const uint64_t i = wqe_from(psn);
    if (wqe_holds(i, psn) &&
        sr_resendable(sq(i), static_cast<uint32_t>(Psn::diff(psn, sq(i).first_psn)))) {
      const SendWqe& w = sq(i);
      const auto d = static_cast<uint32_t>(Psn::diff(psn, w.first_psn));
      // Not sent yet (goes out in order anyway) or acknowledged meanwhile: skip.
      if (d < w.sent && Psn::diff(psn, comp_.acked_psn) > 0 && !sr_recently_resent(psn, now)) {
        req_.since_ack_req = cfg_.ack_every;  // AckReq: the responder answers at once
        if (!emit_packet(w, d, now)) return false;
        ctr_.sr_resends++;
        srs_.single = Resent{psn, now};
        if (srs_.resent_at.empty()) srs_.resent_at.resize(srs_.resend.size());
        srs_.resent_at[psn.value() & (srs_.resent_at.size() - 1)] = {psn, now};
      }
    }
    ++srs_.resend_head;
  }
  return true;
}

int32_t Qp::in_flight_at(Psn psn) const {
  const Psn una = una_psn();
  const int32_t span = Psn::diff(psn, una);
  if (span < static_cast<int32_t>(cc_window()) || srm_ == nullptr) return span;
  // READ responses placed ahead of a hole are here already: not in flight
  // either (no peer support needed for those).
  if (!srs_.sack_seen && srs_.rd_n == 0) return span;
  if (span >= kHeldSpan) return INT32_MAX;  // beyond what the responder keeps
  // Every PSN a SACK showed held lies in (acked_psn, max_sent_psn]: for a
  // new packet, with una right after acked_psn and no READ responses
  // placed, all of them are in [una, psn).
  const bool counted =
      srs_.rd_n == 0 && Psn::diff(psn, req_.max_sent_psn) > 0 && una == comp_.acked_psn + 1;
#ifdef NDEBUG
  if (counted) return span - static_cast<int32_t>(srs_.sacked_n);
#endif
  int32_t held = 0;
  for (int32_t d = 0; d < span; d += 64) {
    const uint64_t sacked = srs_.sack_seen ? srm_->sacked.chunk(una + d) : 0;
    held += std::popcount((sacked | srm_->rd.chunk(una + d)) & SrBits::first_bits(span - d));
  }
  // Debug builds (the sanitizer runs) check the count against the bitmaps.
  assert(!counted || held == static_cast<int32_t>(srs_.sacked_n));
  return span - held;
}

Qp::ReqState Qp::req_get_wqe() const {
  if (state_ != QpState::kRts) return ReqState::kError;
  if (req_.rnr_waiting || req_.emit >= sq_tail_) return ReqState::kDone;
  return sq(req_.emit).started ? ReqState::kEmit : ReqState::kCheckFence;
}

Qp::ReqState Qp::check_fence(const SendWqe& w) const {
  // Every WR after a memory-window bind waits until the bind has completed
  // (dat_rmr_bind: the bind completes in order and fences later DTOs).
  if (req_.last_bind_end > sq_head_) return ReqState::kBlocked;
  if (w.wr.op == WrOp::kBind) return ReqState::kExecBind;
  if ((w.wr.flags & wr_flag::kFence) != 0 && req_.rd_atomic_outstanding > 0)
    return ReqState::kBlocked;
  if (is_rd_atomic(w.wr.op) && !rd_atomic_room()) return ReqState::kBlocked;
  if (!window_room(req_.next_psn)) return ReqState::kBlocked;
  return ReqState::kStartWqe;
}

void Qp::exec_bind(SendWqe& w, uint64_t now) {
  w.started = true;
  w.done = true;
  const BindError be = mr_.check_bind(w.wr.mw_handle, w.wr.bind_lkey, w.wr.bind_va, w.wr.bind_len,
                                      w.wr.bind_privileges, pz_, qpn_);
  if (be == BindError::kOk) {
    w.result_rkey = mr_.do_bind(w.wr.mw_handle, w.wr.bind_lkey, w.wr.bind_va, w.wr.bind_len,
                                w.wr.bind_privileges);
  } else {
    mr_.clear_bind_pending(w.wr.mw_handle);
    w.status = WcStatus::kBindError;
  }
  req_.last_bind_end = req_.emit + 1;
  ++req_.emit;
  complete_in_order(now);
}

Qp::ReqState Qp::req_emit(SendWqe& w, uint64_t now) {
  if (w.done) return ReqState::kNextWqe;
  while (w.sent < w.npkts) {
    const Psn psn = w.first_psn + static_cast<int32_t>(w.sent);
    if (const int32_t in_flight = in_flight_at(psn);
        in_flight >= static_cast<int32_t>(cc_window())) {
      // INT32_MAX: a kHeldSpan past una, beyond what the responder keeps.
      if (in_flight == INT32_MAX && !req_.span_stalled) {
        req_.span_stalled = true;
        ctr_.sr_span_stalls++;
      }
      return ReqState::kBlocked;
    }
    if (!cc_may_send(now)) return ReqState::kBlocked;  // the pace timer resumes it
    if (!emit_one(w, now)) return ReqState::kBackpressure;
  }
  return ReqState::kNextWqe;
}

bool Qp::emit_requests(uint64_t now) {
  if (state_ == QpState::kRts && !req_.rnr_waiting && !emit_sr_resends(now)) return true;
  ReqState s = ReqState::kGetWqe;
  for (;;) {
    DPDAT_QP_TRACE_POINT(QpRole::kRequester, s, req_.next_psn, now);
    switch (s) {
      case ReqState::kGetWqe:
        s = req_get_wqe();
        break;
      case ReqState::kCheckFence:
        s = check_fence(sq(req_.emit));
        break;
      case ReqState::kExecBind:
        exec_bind(sq(req_.emit), now);
        s = ReqState::kGetWqe;
        break;
      case ReqState::kStartWqe:
        s = start_wqe(sq(req_.emit), now) ? ReqState::kEmit : ReqState::kError;
        break;
      case ReqState::kEmit:
        s = req_emit(sq(req_.emit), now);
        break;
      case ReqState::kNextWqe:
        ++req_.emit;
        s = ReqState::kGetWqe;
        break;
      case ReqState::kBackpressure:
        return state_ == QpState::kRts;
      case ReqState::kDone:
      case ReqState::kBlocked:
      case ReqState::kError:
      case ReqState::kCount:
        return false;
    }
  }
}

void Qp::rewind_to(Psn psn, uint64_t now) {
  // Go-back-N: resend from the WQE that holds `psn`.
  srs_.resend_head = srs_.resend_tail;
  const uint64_t i = wqe_from(psn);
  if (i == sq_tail_) return;
  SendWqe& w = sq(i);
  const int32_t d = Psn::diff(psn, w.first_psn);
  if (w.wr.op == WrOp::kRead) {
    w.sent = w.resp_pkts;
  } else if (is_rd_atomic(w.wr.op)) {
    w.sent = 0;
  } else {
    w.sent = d > 0 ? static_cast<uint32_t>(d) : 0;
  }
  for (uint64_t j = i + 1; j < sq_tail_; ++j) {
    SendWqe& x = sq(j);
    if (!x.started) break;
    if (!x.done) x.sent = x.wr.op == WrOp::kRead ? x.resp_pkts : 0;
  }
  req_.emit = std::min(req_.emit, i);
  ctr_.retransmits++;
  srs_.single.reset();
  srs_.rewind = Resent{w.first_psn + static_cast<int32_t>(w.sent), now};
  engine_.activate(this);
}

}  // namespace dpdat::rc
