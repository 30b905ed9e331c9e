// Completer (IBA 9.7.5.2): ACKs, NAKs, READ responses, atomic ACKs and SACKs
// move the requester's acknowledged PSN and complete work requests in
// order.  Every response walks CompState through check_* steps, as
// rxe_comp.c does; a NAK that ends the connection maps to its completion
// status in kNakOutcome.

#include <algorithm>
#include <bit>
#include <cstring>

#include "rc/engine/engine.hpp"
#include "rc/qp/qp.hpp"
#include "rc/qp/qp_util.hpp"

namespace dpdat::rc {

using wire::Opcode;
using wire::Psn;
namespace aeth = wire::aeth;
using namespace detail;

namespace {

using CS = Qp::CompState;

// IBA 9.7.5.2.4 / 9.9: a NAK code received completes the WQE it names with
// this status and moves the QP to error.  Codes not listed (reserved, and
// 4 "invalid RD request", which has no meaning on RC) count as invalid
// request.
struct NakOutcome {
  uint8_t code;
  WcStatus status;
  QpError error;
  std::string_view rule;
};
constexpr NakOutcome kNakOutcome[] = {
    {aeth::kNakInvalidRequest, WcStatus::kRemoteInvalidRequest, QpError::kRemoteInvalidRequest,
     "9.7.5.2.4: invalid request"},
    {aeth::kNakRemoteAccessError, WcStatus::kRemoteAccessError, QpError::kRemoteAccess,
     "9.7.5.2.4: remote access error"},
    {aeth::kNakRemoteOperationalError, WcStatus::kRemoteOperationalError,
     QpError::kRemoteOperational, "9.7.5.2.4: remote operational error"},
};
const NakOutcome& nak_outcome(uint8_t code) {
  for (const NakOutcome& o : kNakOutcome)
    if (o.code == code) return o;
  return kNakOutcome[0];
}

}  // namespace

// Every response packet walks CompState: the opcode picks the check, checks
// validate (and fill in `c`), steps act and say what follows.
void Qp::on_response(const wire::PacketView& v, uint64_t now) {
  CompCtx c{v, v.bth->psn()};
  CompState s = CompState::kCheckOpcode;
  for (;;) {
    DPDAT_QP_TRACE_POINT(QpRole::kCompleter, s, c.psn, now);
    switch (s) {
      case CompState::kCheckOpcode:
        s = check_response_opcode(v);
        break;
      case CompState::kCheckSyndrome:
        ctr_.acks_rx++;
        s = check_syndrome(v.aeth->syndrome);
        break;
      case CompState::kAck:
        note_acked(c.psn, now);
        return;
      case CompState::kRnrNak:
        ctr_.rnr_naks_rx++;
        s = check_nak_psn(c.psn, CS::kRnrNak);
        if (s == CS::kRnrNak) s = do_rnr_nak(c.psn, now);
        break;
      case CompState::kSeqNak:
        s = check_nak_psn(c.psn, CS::kSeqNak);
        if (s == CS::kSeqNak) s = do_seq_nak(c.psn, now);
        break;
      case CompState::kFatalNak: {
        s = check_nak_psn(c.psn, CS::kFatalNak);
        if (s != CS::kFatalNak) break;
        note_acked(c.psn - 1, now);
        const NakOutcome& o = nak_outcome(aeth::value(v.aeth->syndrome));
        fail_wqe_at(c.psn, o.status, o.error, now);
        return;
      }
      case CompState::kRnrExceeded:
        fail_wqe_at(c.psn, WcStatus::kRnrRetryExceeded, QpError::kRnrRetryExceeded, now);
        return;
      case CompState::kCheckRead:
        s = check_read_response(c);
        break;
      case CompState::kReadInOrder:
        do_read_in_order(c, now);
        return;
      case CompState::kReadAhead:
        s = do_read_ahead(c, now);
        break;
      case CompState::kReadGap:
        do_read_gap(c, now);
        return;
      case CompState::kCheckAtomic:
        s = check_atomic_ack(c);
        break;
      case CompState::kAtomicAck:
        do_atomic_ack(c, now);
        return;
      case CompState::kSack:
        on_sack(v, now);
        return;
      case CompState::kDuplicate:
        ctr_.duplicates_rx++;  // no outstanding request expects it: a late duplicate
        return;
      case CompState::kBadResponse:
        ctr_.bad_responses++;
        return;
      case CompState::kStale:
      case CompState::kDone:
      case CompState::kCount:
        return;
    }
  }
}

CS Qp::check_response_opcode(const wire::PacketView& v) const {
  switch (v.opcode) {
    case Opcode::kAck:
      return CS::kCheckSyndrome;
    case Opcode::kAtomicAck:
      return CS::kCheckAtomic;
    case Opcode::kReadRespFirst:
    case Opcode::kReadRespMiddle:
    case Opcode::kReadRespLast:
    case Opcode::kReadRespOnly:
      return CS::kCheckRead;
    case Opcode::kSack:
      return CS::kSack;
    default:
      return CS::kBadResponse;
  }
}

CS Qp::check_syndrome(uint8_t syn) const {
  switch (aeth::type(syn)) {
    case aeth::kAck:
      return CS::kAck;
    case aeth::kRnrNak:
      return CS::kRnrNak;
    case aeth::kNak:
      return aeth::value(syn) == aeth::kNakPsnSeqError ? CS::kSeqNak : CS::kFatalNak;
    default:
      return CS::kBadResponse;  // reserved syndrome type
  }
}

// A NAK names the first PSN not executed: everything before it was (its
// step acknowledges them).  One outside [una, next) is stale (a NAK
// overtaken by later progress).
CS Qp::check_nak_psn(Psn psn, CompState next) const {
  if (Psn::diff(psn, una_psn()) < 0 || Psn::diff(psn, req_.next_psn) >= 0) return CS::kStale;
  return next;
}

CS Qp::do_rnr_nak(Psn psn, uint64_t now) {
  note_acked(psn - 1, now);
  if (cfg_.rnr_retry != kRnrRetryInfinite) {
    if (comp_.rnr_retries_left == 0) return CS::kRnrExceeded;
    comp_.rnr_retries_left--;
  }
  req_.rnr_waiting = true;
  req_.rnr_psn = psn;
  clear_timer(TimerKind::kRetransmit);
  set_timer(TimerKind::kRnr, now + cfg_.rnr_delay_ns);
  return CS::kDone;
}

CS Qp::do_seq_nak(Psn psn, uint64_t now) {
  const Psn acked_before = comp_.acked_psn;
  note_acked(psn - 1, now);
  ctr_.seq_naks_rx++;
  if (cfg_.selective_repeat && sr_nak_in_flight(psn, now)) return CS::kDone;
  // A sequence NAK that acknowledges nothing new is a retry like a timeout
  // (as rxe counts it): without the budget, a responder whose expected PSN a
  // forged packet moved past a request keeps NAKing its retransmission and
  // the two ends exchange packets forever while the request never completes.
  // At most one retry per retransmission timeout, though: the responder
  // repeats its NAK while a hole stays open, and a hole resent more than
  // once within one timeout is one retry, as a timeout would be.  And, as
  // for timeouts, the peer is not given up before comp_.dead_after_ns since the
  // first retry without progress (a host that stalls is no dead peer).
  if (comp_.acked_psn == acked_before && now - comp_.nak_retry_ns >= rtt_.rto_ns()) {
    if (comp_.first_timeout_ns == 0) comp_.first_timeout_ns = now;
    if (comp_.retries_left == 0 && now - comp_.first_timeout_ns >= comp_.dead_after_ns) {
      fail_wqe_at(psn, WcStatus::kRetryExceeded, QpError::kRetryExceeded, now);
      return CS::kDone;
    }
    if (comp_.retries_left > 0) comp_.retries_left--;
    comp_.nak_retry_ns = now;
  }
  if (cfg_.selective_repeat) {
    const uint64_t i = wqe_from(psn);
    // The responder took our single resend of the packet before and still
    // lacks this one: it kept nothing after them (a SEND's packets after two
    // adjacent losses, where a message boundary could hide): go back N.
    const bool kept_nothing = srs_.single && srs_.single->psn + 1 == psn && wqe_holds(i, psn) &&
                              (sq(i).wr.op == WrOp::kSend || sq(i).wr.op == WrOp::kSendImm);
    if (wqe_holds(i, psn) && !kept_nothing &&
        sr_resendable(sq(i), static_cast<uint32_t>(Psn::diff(psn, sq(i).first_psn)))) {
      // The responder kept what followed the hole: resend the hole only.
      srs_.hole = psn;
      sr_queue_resend(psn);
      engine_.activate(this);
      return CS::kDone;
    }
  }
  rewind_to(psn, now);
  arm_retransmit(now);
  return CS::kDone;
}

// A sequence NAK for a packet already resent within a round trip (alone, or
// by the newest rewind): the responder sent it before the resend arrived
// (it repeats its NAK while the hole stays open).  Nothing to do, and no
// retry is spent.
bool Qp::sr_nak_in_flight(Psn psn, uint64_t now) const {
  const uint64_t recent = sr_in_flight_ns();
  if (sr_recently_resent(psn, now)) return true;
  if (srs_.rewind && Psn::diff(psn, srs_.rewind->psn) >= 0 && now - srs_.rewind->ns < recent) {
    const uint64_t i = wqe_from(psn);
    // Rewound over and sent again since.
    return wqe_holds(i, psn) && Psn::diff(psn, sq(i).first_psn) < static_cast<int32_t>(sq(i).sent);
  }
  return false;
}

bool Qp::sr_recently_resent(Psn psn, uint64_t now) const {
  if (srs_.resent_at.empty()) return false;
  const auto& [p, t] = srs_.resent_at[psn.value() & (srs_.resent_at.size() - 1)];
  if (!(p == psn)) return false;
  // Resent, and nothing sent after it is known to have arrived: on its way.
  // (A packet sent later did arrive: the resend was lost.)
  const uint64_t seq = sent_seq_of(psn);
  if (seq != 0 && srs_.delivered_seq != 0) return seq > srs_.delivered_seq;
  return now - t < sr_in_flight_ns();
}

void Qp::sr_queue_resend(Psn psn) {
  const bool queued = srs_.resend_tail != srs_.resend_head &&
                      srs_.resend[(srs_.resend_tail - 1) & (srs_.resend.size() - 1)] == psn;
  if (queued || srs_.resend_tail - srs_.resend_head >= cfg_.window) return;
  // Sized at the first hole (a lossless QP never needs it).
  if (srs_.resend.empty())
    srs_.resend.resize(std::bit_ceil(uint64_t{std::max<uint32_t>(cfg_.window, 1)}));
  srs_.resend[srs_.resend_tail & (srs_.resend.size() - 1)] = psn;
  ++srs_.resend_tail;
}

// A selective acknowledgement (Qp::send_seq_nak): every PSN it shows
// missing below its span that can be resent alone and was not resent within
// a round trip goes out again now, so several holes cost one round trip.
// (The NAK before it already acknowledged everything before its PSN and
// deals with a hole that has to go back N.)
void Qp::on_sack(const wire::PacketView& v, uint64_t now) {
  const std::span<const uint8_t> b = v.payload;
  if (!cfg_.selective_repeat || state_ != QpState::kRts) return;
  if (b.size() < 4) {
    ctr_.bad_responses++;
    return;
  }
  const uint32_t span =
      (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
  if (span > static_cast<uint32_t>(kSrSpan) || b.size() < 4 + size_t{(span + 31) / 32} * 4) {
    ctr_.bad_responses++;
    return;
  }
  ctr_.sacks_rx++;
  srs_.sack_seen = true;
  if (srs_.sent_seq.empty()) srs_.sent_seq.resize(kSentSeqSize);
  const Psn from = v.bth->psn();
  if (Psn::diff(from, una_psn()) < 0 || Psn::diff(from, req_.next_psn) >= 0) return;  // stale
  // The span ends at the newest packet the responder saw after the hole.
  if (span > 0) note_delivered(from + static_cast<int32_t>(span - 1));
  bool any = false;
  SrBits& sacked = sr_maps().sacked;
  // Up to the newest packet sent, 64 PSNs at a time (bit i of the map,
  // least significant first in each byte, is PSN from + i).
  const int32_t n = std::min(static_cast<int32_t>(span), Psn::diff(req_.max_sent_psn, from) + 1);
  for (int32_t d = 0; d < n; d += 64) {
    uint64_t map = 0;
    const size_t at = 4 + static_cast<size_t>(d) / 8;
    for (size_t j = 0; j < 8 && at + j < b.size(); ++j) map |= uint64_t{b[at + j]} << (8 * j);
    const uint64_t valid = SrBits::first_bits(n - d);
    const Psn base = from + d;
    // Held there: no longer in flight (in_flight_at), room for a new packet.
    if (const uint64_t fresh = map & valid & ~sacked.chunk(base); fresh != 0) {
      sacked.set_chunk(base, fresh);
      srs_.sacked_n += static_cast<uint32_t>(std::popcount(fresh));
      any = true;
    }
    for (uint64_t holes = ~map & valid; holes != 0; holes &= holes - 1) {
      const Psn psn = base + std::countr_zero(holes);
      const uint64_t k = wqe_from(psn);
      if (!wqe_holds(k, psn)) continue;
      const SendWqe& w = sq(k);
      const auto idx = static_cast<uint32_t>(Psn::diff(psn, w.first_psn));
      if (idx >= w.sent || !sr_resendable(w, idx) || sr_recently_resent(psn, now)) continue;
      sr_queue_resend(psn);
      any = true;
    }
  }
  if (any) engine_.activate(this);
}

void Qp::note_acked(Psn psn, uint64_t now) {
  if (Psn::diff(psn, comp_.acked_psn) <= 0) return;  // old news
  if (Psn::diff(psn, req_.next_psn) >= 0) return;    // acks something never sent
  note_delivered(psn);
  if (srm_ != nullptr) {  // what the SACKs showed held is acknowledged now
    const int32_t n = Psn::diff(psn, comp_.acked_psn);
    if (n >= kSrSpan) {
      srm_->sacked = SrBits{};
      srs_.sacked_n = 0;
    } else {
      for (int32_t d = 0; srs_.sacked_n > 0 && d < n; d += 64) {
        const Psn base = comp_.acked_psn + 1 + d;
        const uint64_t c = srm_->sacked.chunk(base) & SrBits::first_bits(n - d);
        if (c == 0) continue;
        srm_->sacked.clear_chunk(base, c);
        srs_.sacked_n -= static_cast<uint32_t>(std::popcount(c));
      }
    }
  }
  comp_.acked_psn = psn;
  if (req_.rtt_timing && Psn::diff(psn, req_.rtt_psn) >= 0) {
    req_.rtt_timing = false;
    rtt_.sample(now - req_.rtt_t0);
    ctr_.rtt_samples++;
    cc_on_rtt(now - req_.rtt_t0, now);
  }
  req_.tlp_sent = false;  // progress: a new tail may be probed
  req_.span_stalled = false;
  if (srs_.hole && Psn::diff(*srs_.hole, psn) <= 0) srs_.hole.reset();
  comp_.retries_left = cfg_.retry_count;
  comp_.first_timeout_ns = 0;
  comp_.backoff = 0;
  comp_.rnr_retries_left = cfg_.rnr_retry;
  // An ACK beyond a READ / atomic whose response is missing means the
  // response was lost (IBA 9.7.5.1.5 "implied NAK"): ask again.
  for (uint64_t i = sq_head_; i < sq_tail_; ++i) {
    SendWqe& w = sq(i);
    if (!w.started) break;
    if (w.done || !is_rd_atomic(w.wr.op)) continue;
    const Psn last = w.first_psn + static_cast<int32_t>(w.npkts - 1);
    if (Psn::diff(psn, last) < 0) break;
    if (w.wr.op == WrOp::kRead && cfg_.selective_repeat && w.resp_seen > 0) {
      // Responses in PSN order: the tail after the newest one seen is lost
      // (holes before it were re-requested when they showed).
      if (w.resp_seen < w.npkts) {
        const uint32_t from = w.resp_seen;
        w.resp_seen = w.npkts;
        (void)emit_packet(w, from, now, /*probe=*/false, w.npkts - from);
      }
      break;
    }
    rewind_to(w.first_psn + static_cast<int32_t>(w.resp_pkts), now);
    break;
  }
  complete_in_order(now);
  arm_retransmit(now);
  engine_.activate(this);
}

void Qp::fail_wqe_at(Psn psn, WcStatus st, QpError why, uint64_t now) {
  const uint64_t i = wqe_from(psn);
  if (i < sq_tail_) {
    SendWqe& w = sq(i);
    w.done = true;
    w.status = st;
    if (is_rd_atomic(w.wr.op) && req_.rd_atomic_outstanding > 0) req_.rd_atomic_outstanding--;
  }
  set_error(why, now);
}

// A READ response: the READ it answers (by PSN), and whether it is the next
// one that READ expects, one after a missing one, or a duplicate.  Every
// response packet but the last of the READ carries one PMTU.  The opcode is
// not checked against the position: a re-request for a range is answered
// FIRST..LAST over that range (IBA 9.7.5.1.3).
CS Qp::check_read_response(CompCtx& c) const {
  c.wqe = wqe_from(c.psn);
  if (!wqe_holds(c.wqe, c.psn) || sq(c.wqe).wr.op != WrOp::kRead) return CS::kDuplicate;
  const SendWqe& w = sq(c.wqe);
  c.expected = w.first_psn + static_cast<int32_t>(w.resp_pkts);
  const int32_t gap = Psn::diff(c.psn, c.expected);
  if (gap < 0) return CS::kDuplicate;
  c.idx = static_cast<uint32_t>(Psn::diff(c.psn, w.first_psn));
  c.off = uint64_t{c.idx} * cfg_.pmtu;
  const uint64_t want_len = std::min<uint64_t>(cfg_.pmtu, w.total_len - c.off);
  if (c.v.payload.size() != want_len) return CS::kBadResponse;
  if (gap == 0) return CS::kReadInOrder;
  return cfg_.selective_repeat && gap < kSrSpan ? CS::kReadAhead : CS::kReadGap;
}

// Selective repeat: placed by its offset now; only the responses the order
// shows lost before it are asked for again (several ranges may be
// outstanding).
CS Qp::do_read_ahead(const CompCtx& c, uint64_t now) {
  ctr_.out_of_order_rx++;
  if (rd_bit(c.psn)) return CS::kDuplicate;
  SendWqe& w = sq(c.wqe);
  scatter(w.host, w.wr.sge, w.wr.num_sge, c.off, c.v.payload);
  rd_set(c.psn, true);
  ctr_.sr_placed_ahead++;
  w.resp_seen = std::max({w.resp_seen, w.resp_pkts, c.idx + 1});
  rd_judge(c.wqe, c.idx, now);  // asks again for what the order shows lost
  note_acked(w.first_psn - 1, now);
  comp_.retries_left = cfg_.retry_count;
  comp_.first_timeout_ns = 0;
  comp_.backoff = 0;
  arm_retransmit(now);
  return CS::kDone;
}

// Responses were lost (no selective repeat, or too far ahead): re-request
// from the first missing one, once.
void Qp::do_read_gap(const CompCtx& c, uint64_t now) {
  ctr_.out_of_order_rx++;
  const SendWqe& w = sq(c.wqe);
  if (req_.read_gap_pending && req_.read_gap_psn == c.expected) return;
  req_.read_gap_pending = true;
  req_.read_gap_psn = c.expected;
  note_acked(w.first_psn - 1, now);
  rewind_to(c.expected, now);
}

void Qp::do_read_in_order(const CompCtx& c, uint64_t now) {
  SendWqe& w = sq(c.wqe);
  scatter(w.host, w.wr.sge, w.wr.num_sge, c.off, c.v.payload);
  w.resp_pkts++;
  while (w.resp_pkts < w.npkts && rd_bit(w.first_psn + static_cast<int32_t>(w.resp_pkts))) {
    rd_set(w.first_psn + static_cast<int32_t>(w.resp_pkts), false);  // placed earlier
    w.resp_pkts++;
  }
  w.resp_seen = std::max(w.resp_seen, w.resp_pkts);
  req_.read_gap_pending = false;
  if (cfg_.selective_repeat) rd_judge(c.wqe, c.idx, now);
  if (w.resp_pkts == w.npkts) finish_rd_atomic(w);
  after_response(w.first_psn + static_cast<int32_t>(w.resp_pkts - 1), now);
}

void Qp::rd_note_request(const SendWqe& w, uint32_t from, uint32_t to) {
  const uint64_t i = wqe_from(w.first_psn);
  if (!wqe_holds(i, w.first_psn) || &sq(i) != &w || from >= to) return;
  if (srs_.rd_reqs.size() >= kRdReqMax)
    srs_.rd_reqs.erase(srs_.rd_reqs.begin());  // left to the timers
  srs_.rd_reqs.push_back({++srs_.rd_tx, i, w.rd_seq, from, to});
}

bool Qp::rd_req_live(const RdReq& r) const {
  if (r.wqe < sq_head_ || r.wqe >= sq_tail_) return false;
  const SendWqe& w = sq(r.wqe);
  return w.started && !w.done && w.wr.op == WrOp::kRead && w.rd_seq == r.rd_seq;
}

void Qp::rd_judge(uint64_t wi, uint32_t idx, uint64_t now) {
  // The request the response came from: the newest one that asked for it
  // (a response is never asked for again while a request for it is out,
  // but by a probe or a timeout).
  const uint64_t rd_seq = sq(wi).rd_seq;
  size_t k = srs_.rd_reqs.size();
  for (size_t r = 0; r < srs_.rd_reqs.size(); ++r) {
    const RdReq& q = srs_.rd_reqs[r];
    if (q.wqe == wi && q.rd_seq == rd_seq && q.from <= idx && idx < q.to) k = r;
  }
  if (k == srs_.rd_reqs.size()) return;
  // A response still asked for by a request after r: not judged by r.
  const auto asked_later = [&](size_t r, uint64_t wqe, uint32_t q) {
    for (size_t n = r + 1; n < srs_.rd_reqs.size(); ++n) {
      const RdReq& x = srs_.rd_reqs[n];
      if (x.wqe == wqe && x.from <= q && q < x.to) return true;
    }
    return false;
  };
  srs_.rd_lost.clear();
  for (size_t r = 0; r <= k; ++r) {
    RdReq& x = srs_.rd_reqs[r];
    if (!rd_req_live(x)) {
      x.to = x.from;  // dropped below
      continue;
    }
    const SendWqe& w = sq(x.wqe);
    // Requests before k: every response they asked for is judged; a READ
    // with no response yet waits (see RdReq).  Request k: those before idx.
    if (r < k && w.resp_seen == 0) continue;
    const uint32_t end = r < k ? x.to : idx;
    for (uint32_t q = std::max(x.from, w.resp_pkts); q < end; ++q) {
      if (q - w.resp_pkts >= static_cast<uint32_t>(kSrSpan)) break;  // beyond the bitmap
      if (rd_placed(w, q) || asked_later(r, x.wqe, q)) continue;
      if (!srs_.rd_lost.empty() && srs_.rd_lost.back().wqe == x.wqe && srs_.rd_lost.back().to == q)
        ++srs_.rd_lost.back().to;
      else
        srs_.rd_lost.push_back({x.wqe, q, q + 1});
    }
    if (r < k)
      x.to = x.from;  // judged
    else
      x.from = idx + 1;
  }
  // Only requests up to k changed: those judged whole, or gone, leave.
  // (A request after k whose READ has gone leaves when a later response
  // reaches it; rd_req_live() keeps it from being judged before.)
  const auto upto = srs_.rd_reqs.begin() + static_cast<std::ptrdiff_t>(k) + 1;
  srs_.rd_reqs.erase(
      std::remove_if(srs_.rd_reqs.begin(), upto, [](const RdReq& x) { return x.from >= x.to; }),
      upto);
  // Every hole at once, one READ request per run, back to back.  A run
  // that finds no TX room is judged again at the next response (as if asked
  // for before every request out).
  for (size_t n = 0; n < srs_.rd_lost.size(); ++n) {
    const RdRun& run = srs_.rd_lost[n];
    SendWqe& w = sq(run.wqe);
    if (emit_packet(w, run.from, now, /*probe=*/false, run.to - run.from)) {
      ctr_.sr_resends++;
      if (run.to == w.npkts) w.resp_seen = w.npkts;  // the tail is asked for (see note_acked)
      continue;
    }
    for (size_t m = srs_.rd_lost.size(); m-- > n;) {
      const RdRun& u = srs_.rd_lost[m];
      srs_.rd_reqs.insert(srs_.rd_reqs.begin(), RdReq{0, u.wqe, sq(u.wqe).rd_seq, u.from, u.to});
    }
    break;
  }
}

void Qp::finish_rd_atomic(SendWqe& w) {
  w.done = true;
  if (req_.rd_atomic_outstanding > 0) req_.rd_atomic_outstanding--;
}

// A READ response or atomic ACK made progress; it also acknowledges every
// earlier request (IBA 9.7.5.1.3), and makes room for more READs / atomics.
void Qp::after_response(Psn psn, uint64_t now) {
  if (Psn::diff(psn, comp_.acked_psn) > 0) {
    note_acked(psn, now);
  } else {
    complete_in_order(now);
    arm_retransmit(now);
  }
  comp_.retries_left = cfg_.retry_count;
  comp_.first_timeout_ns = 0;
  comp_.backoff = 0;
  engine_.activate(this);
}

CS Qp::check_atomic_ack(CompCtx& c) const {
  c.wqe = wqe_from(c.psn);
  if (!wqe_holds(c.wqe, c.psn) || !is_atomic(sq(c.wqe).wr.op) || !(sq(c.wqe).first_psn == c.psn))
    return CS::kDuplicate;
  return CS::kAtomicAck;
}

void Qp::do_atomic_ack(const CompCtx& c, uint64_t now) {
  SendWqe& w = sq(c.wqe);
  const uint64_t orig = c.v.atomic_ack->orig.value();
  std::memcpy(w.host[0], &orig, sizeof orig);
  finish_rd_atomic(w);
  after_response(c.psn, now);
}

void Qp::complete_in_order(uint64_t now) {
  (void)now;
  while (sq_head_ < sq_tail_) {
    SendWqe& w = sq(sq_head_);
    if (!w.done) {
      if (!w.started || !is_send_write(w.wr.op)) break;
      const Psn last = w.first_psn + static_cast<int32_t>(w.npkts - 1);
      if (Psn::diff(last, comp_.acked_psn) > 0) break;
      w.done = true;
    }
    const bool report = (w.wr.flags & wr_flag::kSignaled) != 0 || w.status != WcStatus::kSuccess;
    if (report) {
      Completion c;
      c.cookie = w.wr.cookie;
      c.qpn = qpn_;
      c.op = wc_op_of(w.wr.op);
      c.status = w.status;
      c.byte_len = static_cast<uint32_t>(w.total_len);
      // A requester completion says whether its request carried immediate
      // data (DAT 2.0 reports RDMA WRITE with immediate as its own event).
      c.has_imm = w.wr.op == WrOp::kWriteImm || w.wr.op == WrOp::kSendImm;
      c.imm = c.has_imm ? w.wr.imm : 0;
      c.rkey = w.result_rkey;
      if (send_cq_ == nullptr || !send_cq_->push(c)) {
        ctr_.cq_stalls++;
        return;  // retried on the next progress(): nothing is lost
      }
    }
    ++sq_head_;
    if (req_.emit < sq_head_) req_.emit = sq_head_;
  }
}

}  // namespace dpdat::rc
