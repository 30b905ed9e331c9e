// Responder, selective repeat (IBA 9.7.5.1 leaves a responder free to keep
// what follows a hole; the wire stays plain RoCEv2): packets after a hole
// are placed where they belong and taken in order when the hole is filled.
//   - RDMA WRITE Only (the requester's selective-repeat WRITE): by its RETH;
//   - MIDDLE / LAST packets of the message in progress (SEND, WRITE with or
//     without immediate): by their PSN offset (sr_in_message);
//   - the message after it (sr_next_): a SEND that begins right after the
//     placed LAST of the SEND in progress, or a WRITE whose FIRST names
//     target and length.
// Completions and ACKs stay in order (advance_epsn); anything refused is
// judged by the in-order path when the requester resends it.

#include <cstring>

#include "engine.hpp"
#include "qp.hpp"
#include "qp_util.hpp"

namespace dpdat::rc {

using wire::Opcode;
using wire::Psn;
namespace aeth = wire::aeth;
using namespace detail;

bool Qp::place_out_of_order(const wire::PacketView& v) {
  AccessGrant g;
  const uint64_t len = v.reth->dma_len.value();
  if (len != v.payload.size()) return false;  // not self-describing: wait for order
  if (mr_.check_remote(v.reth->rkey.value(), pz_, v.reth->va.value(), len, Access::kRemoteWrite,
                       &g) != AccessError::kOk)
    return false;  // judged (and NAKed) when it arrives in order
  if (len != 0) std::memcpy(g.host, v.payload.data(), len);
  return true;
}

// Selective repeat inside the message in progress (SEND, WRITE with or
// without immediate in FIRST / MIDDLE / LAST packets): a MIDDLE or LAST
// packet after a hole lands at its offset, (psn - epsn_) PMTUs past what is
// placed; the completion follows in order once the message is whole
// (advance_epsn).  Placed only where it can belong to this message: no
// other message known to begin before it, within the RETH length for a
// WRITE (its end PSN is known), within the receive WQE for a SEND and only
// where it surely continues the SEND (sr_send_follows).  Anything refused
// here is judged when it arrives in order.
bool Qp::sr_in_message(const wire::PacketView& v, Psn psn) {
  const wire::OpInfo& info = *v.info;
  const bool last = info.is(wire::op::kLast);
  const bool ok_kind = in_msg_ == InMsg::kSend    ? info.is(wire::op::kSend)
                       : in_msg_ == InMsg::kWrite ? info.is(wire::op::kWrite)
                                                  : false;
  if (!ok_kind || info.is(wire::op::kInvalidate)) return false;
  if (sr_msg_limit_valid_ && Psn::diff(sr_msg_limit_, epsn_) > 0 &&
      Psn::diff(psn, sr_msg_limit_) >= 0)
    return false;
  // A self-describing WRITE placed between: a message of its own ends this one.
  for (Psn p = epsn_ + 1; Psn::diff(p, psn) < 0; ++p)
    if (sr_bit(p) && !sr_msg_bit(p)) return false;
  const size_t n = v.payload.size();
  if (n > cfg_.pmtu || (!last && n != cfg_.pmtu)) return false;
  const uint64_t off =
      msg_offset_ + uint64_t(static_cast<uint32_t>(Psn::diff(psn, epsn_))) * cfg_.pmtu;
  if (in_msg_ == InMsg::kSend) {
    if (!sr_send_follows(psn)) return false;
    const RecvWqe& r = rq(rq_head_);
    if (!recv_in_use_ || off + n > r.capacity) return false;
    scatter(r.host, r.wr.sge, r.wr.num_sge, off, v.payload);
  } else {
    if (off + n > write_len_ || last != (off + n == write_len_)) return false;
    if (n != 0) std::memcpy(write_host_ + off, v.payload.data(), n);
  }
  if (last) {
    sr_unplace_msg_from(psn + 1);  // placed past the end: a later message's
    sr_lower_limit(psn + 1);
    sr_last_valid_ = true;
    sr_last_psn_ = psn;
    sr_last_len_ = static_cast<uint32_t>(n);
    sr_last_has_imm_ = v.imm != nullptr;
    sr_last_imm_ = v.imm != nullptr ? v.imm->imm.value() : 0;
    sr_last_se_ = v.bth->se();
  }
  return true;
}

// A SEND's length is not known ahead, and a MIDDLE or LAST packet does not
// say which message it belongs to: with this SEND's LAST and the next SEND's
// FIRST both lost, the next one's MIDDLE packets would land in this receive
// buffer past the message's end, where nothing overwrites them.  So a packet
// after a hole continues the SEND in progress only when the packet before it
// does (received in order or placed), or when just that one packet is
// missing and the one before it does: the missing one cannot be this SEND's
// LAST, for a LAST is followed by a FIRST or an ONLY.
bool Qp::sr_send_follows(Psn psn) const {
  const auto ours = [this](Psn p) { return Psn::diff(p, epsn_) < 0 || sr_msg_bit(p); };
  return ours(psn - 1) || ours(psn - 2);
}

void Qp::sr_lower_limit(Psn psn) {
  if (!sr_msg_limit_valid_ || Psn::diff(sr_msg_limit_, epsn_) <= 0 ||
      Psn::diff(psn, sr_msg_limit_) < 0) {
    sr_msg_limit_valid_ = true;
    sr_msg_limit_ = psn;
  }
  sr_unplace_msg_from(psn);
}

// In-message packets placed at or after `psn` belong to a later message:
// take them back (they are asked for again when epsn_ reaches them).
void Qp::sr_unplace_msg_from(Psn psn) {
  for (int32_t d = Psn::diff(psn, epsn_); sr_msg_count_ > 0 && d < kSrSpan; ++d) {
    const Psn p = epsn_ + d;
    if (!sr_msg_bit(p)) continue;
    sr_msg_set(p, false);
    sr_set(p, false);
    --sr_msg_count_;
    --sr_count_;
    if (sr_last_valid_ && sr_last_psn_ == p) {
      sr_last_valid_ = false;
      // A SEND placed as the next message began right after this LAST.
      if (sr_next_.valid && sr_next_.send) sr_drop_next();
    }
  }
}

// The message in progress ended (in order, or its placed LAST was taken)
// before `next`.
void Qp::sr_message_ended(Psn next) {
  if (sr_msg_count_ > 0) sr_unplace_msg_from(epsn_);
  sr_last_valid_ = false;
  sr_msg_limit_valid_ = false;
  if (sr_next_.valid && sr_next_.send && !(sr_next_.first == next)) sr_drop_next();
}

// A FIRST (or ONLY) packet after a hole that begins the next message: placed
// at its start, opening sr_next_ (see qp.hpp).
bool Qp::sr_open_next(const wire::PacketView& v, Psn psn) {
  const wire::OpInfo& info = *v.info;
  const bool last = info.is(wire::op::kLast);
  const size_t n = v.payload.size();
  if (n > cfg_.pmtu || (!last && n != cfg_.pmtu)) return false;
  SrNext x;
  x.valid = true;
  x.first = psn;
  if (info.is(wire::op::kSend)) {
    // Only right after the SEND in progress, whose LAST is placed: then it
    // takes the next receive WQE (the own queue's; an SRQ hands out
    // receives in arrival order).
    if (info.is(wire::op::kInvalidate) || in_msg_ != InMsg::kSend || !sr_last_valid_ ||
        !(sr_last_psn_ + 1 == psn) || srq_ != nullptr || rq_tail_ - rq_head_ < 2)
      return false;
    RecvWqe& r = rq(rq_head_ + 1);
    if (n > r.capacity) return false;
    for (uint32_t i = 0; i < r.wr.num_sge; ++i) {
      const Sge& g = r.wr.sge[i];
      if (g.length == 0) continue;
      AccessGrant grant;
      if (mr_.check_local(g.lkey, pz_, g.va, g.length, Access::kLocalWrite, &grant) !=
          AccessError::kOk)
        return false;  // judged in order
      r.host[i] = grant.host;
    }
    scatter(r.host, r.wr.sge, r.wr.num_sge, 0, v.payload);
    x.send = true;
    x.len = r.capacity;
    x.rq_index = rq_head_ + 1;
  } else if (info.is(wire::op::kWrite) && v.reth != nullptr) {
    const uint64_t len = v.reth->dma_len.value();
    if (last ? n != len : len <= n) return false;
    if (in_msg_ == InMsg::kWrite) {
      // Not inside the WRITE in progress (its end is known).
      const uint32_t rest = pkts_for(write_len_ - msg_offset_, cfg_.pmtu);
      if (Psn::diff(psn, epsn_) < static_cast<int32_t>(rest)) return false;
    }
    AccessGrant g;
    if (mr_.check_remote(v.reth->rkey.value(), pz_, v.reth->va.value(), len, Access::kRemoteWrite,
                         &g) != AccessError::kOk)
      return false;  // judged (and NAKed) in order
    if (n != 0) std::memcpy(g.host, v.payload.data(), n);
    x.host = g.host;
    x.len = len;
    x.limit_valid = true;  // its last PSN is known
    x.limit = psn + static_cast<int32_t>(pkts_for(len, cfg_.pmtu));
  } else {
    return false;
  }
  if (last) {
    x.last_valid = true;
    x.last_psn = psn;
    x.last_len = static_cast<uint32_t>(n);
    x.last_has_imm = v.imm != nullptr;
    x.last_imm = v.imm != nullptr ? v.imm->imm.value() : 0;
    x.last_se = v.bth->se();
    x.limit_valid = true;
    x.limit = psn + 1;
  }
  sr_next_ = x;
  return true;
}

// A MIDDLE / LAST packet of sr_next_, placed by its offset from the FIRST
// (a SEND's end is not known ahead: as for the message in progress, what
// lands past it is taken back).
bool Qp::sr_place_next(const wire::PacketView& v, Psn psn) {
  if (!sr_next_.valid || Psn::diff(psn, sr_next_.first) <= 0) return false;
  if (sr_next_.limit_valid && Psn::diff(psn, sr_next_.limit) >= 0) return false;
  const wire::OpInfo& info = *v.info;
  if (!(sr_next_.send ? info.is(wire::op::kSend) : info.is(wire::op::kWrite)) ||
      info.is(wire::op::kInvalidate) || info.is(wire::op::kFirst))
    return false;
  for (Psn p = sr_next_.first + 1; Psn::diff(p, psn) < 0; ++p)
    if (sr_bit(p) && !sr_next_bit(p)) return false;
  const bool last = info.is(wire::op::kLast);
  const size_t n = v.payload.size();
  if (n > cfg_.pmtu || (!last && n != cfg_.pmtu)) return false;
  const uint64_t off = uint64_t{static_cast<uint32_t>(Psn::diff(psn, sr_next_.first))} * cfg_.pmtu;
  if (sr_next_.send) {
    if (off + n > sr_next_.len) return false;
    const RecvWqe& r = rq(sr_next_.rq_index);
    scatter(r.host, r.wr.sge, r.wr.num_sge, off, v.payload);
  } else {
    if (off + n > sr_next_.len || last != (off + n == sr_next_.len)) return false;
    if (n != 0) std::memcpy(sr_next_.host + off, v.payload.data(), n);
  }
  if (last) {
    sr_unplace_next_from(psn + 1);
    sr_next_lower_limit(psn + 1);
    sr_next_.last_valid = true;
    sr_next_.last_psn = psn;
    sr_next_.last_len = static_cast<uint32_t>(n);
    sr_next_.last_has_imm = v.imm != nullptr;
    sr_next_.last_imm = v.imm != nullptr ? v.imm->imm.value() : 0;
    sr_next_.last_se = v.bth->se();
  }
  return true;
}

void Qp::sr_next_lower_limit(Psn psn) {
  if (!sr_next_.valid || Psn::diff(psn, sr_next_.first) <= 0) return;
  if (!sr_next_.limit_valid || Psn::diff(psn, sr_next_.limit) < 0) {
    sr_next_.limit_valid = true;
    sr_next_.limit = psn;
  }
  sr_unplace_next_from(psn);
}

// Packets of sr_next_ placed at or after `psn` are taken back (from its
// first packet: the whole message is given up).
void Qp::sr_unplace_next_from(Psn psn) {
  if (!sr_next_.valid) return;
  for (int32_t d = Psn::diff(psn, epsn_); sr_next_count_ > 0 && d < kSrSpan; ++d) {
    const Psn p = epsn_ + d;
    if (!sr_next_bit(p)) continue;
    sr_next_set(p, false);
    sr_set(p, false);
    --sr_next_count_;
    --sr_count_;
    if (sr_next_.last_valid && sr_next_.last_psn == p) sr_next_.last_valid = false;
  }
  if (psn == sr_next_.first) sr_next_.valid = false;
}

// epsn_ reached sr_next_'s first packet: it becomes the message in progress.
bool Qp::sr_take_next() {
  if (in_msg_ != InMsg::kNone) return false;
  if (sr_next_.send) {
    if (rq_head_ != sr_next_.rq_index || srq_ != nullptr || rq_tail_ <= rq_head_) return false;
    recv_in_use_ = true;
    in_msg_ = InMsg::kSend;
  } else {
    in_msg_ = InMsg::kWrite;
    write_host_ = sr_next_.host;
    write_len_ = sr_next_.len;
  }
  msg_offset_ = 0;
  if (srm_ != nullptr) srm_->msg.take_all(srm_->next);
  sr_msg_count_ += sr_next_count_;
  sr_next_count_ = 0;
  sr_last_valid_ = sr_next_.last_valid;
  sr_last_psn_ = sr_next_.last_psn;
  sr_last_len_ = sr_next_.last_len;
  sr_last_imm_ = sr_next_.last_imm;
  sr_last_has_imm_ = sr_next_.last_has_imm;
  sr_last_se_ = sr_next_.last_se;
  sr_msg_limit_valid_ = sr_next_.limit_valid;
  sr_msg_limit_ = sr_next_.limit;
  sr_next_.valid = false;
  return true;
}

// epsn_ holds a packet of the message in progress placed earlier: take it in
// order.  False when that cannot be yet (the LAST's completion finds no room,
// or a WRITE with immediate no receive): the caller takes it back, it is
// asked for again and the in-order path answers with an RNR NAK.
bool Qp::sr_advance_in_message() {
  if (!(sr_last_valid_ && sr_last_psn_ == epsn_)) {
    msg_offset_ += cfg_.pmtu;
    return true;
  }
  const bool is_send = in_msg_ == InMsg::kSend;
  if (is_send || sr_last_has_imm_) {
    if (!recv_cq_room() || (!is_send && !have_recv())) return false;
    const RecvWqe& r = rq(rq_head_);
    Completion wc;
    wc.cookie = r.wr.cookie;
    wc.qpn = qpn_;
    wc.op = is_send ? WcOp::kRecv : WcOp::kRecvWriteImm;
    wc.byte_len = static_cast<uint32_t>(is_send ? msg_offset_ + sr_last_len_ : write_len_);
    wc.has_imm = sr_last_has_imm_;
    wc.imm = sr_last_imm_;
    wc.solicited = is_send && sr_last_se_;
    (void)push_recv_completion(wc);  // room checked above
    retire_recv();
    recv_in_use_ = false;
  }
  msg_offset_ += sr_last_len_;
  in_msg_ = InMsg::kNone;
  ++msn_;
  return true;
}

// Moves epsn_ over packets that selective repeat already placed; if a hole
// remains in front of placed packets, reports it at once (one NAK per hole).
void Qp::advance_epsn(uint64_t now) {
  if (sr_count_ == 0) return;
  bool moved = false;
  while (sr_count_ > 0 && sr_bit(epsn_)) {
    if (sr_next_.valid && sr_next_.first == epsn_ && !sr_take_next()) {
      sr_drop_next();  // not where it was expected: judged in order
      break;
    }
    if (sr_msg_bit(epsn_)) {
      const bool last = sr_last_valid_ && sr_last_psn_ == epsn_;
      if (!sr_advance_in_message()) {
        sr_unplace_msg_from(epsn_);
        break;
      }
      sr_msg_set(epsn_, false);
      sr_set(epsn_, false);
      --sr_msg_count_;
      --sr_count_;
      ++epsn_;
      if (last) sr_message_ended(epsn_);
    } else {
      sr_set(epsn_, false);
      --sr_count_;
      if (in_msg_ != InMsg::kNone) break;  // a WRITE Only inside a message: judged in order
      ++epsn_;
      ++msn_;
    }
    ++unacked_;
    ack_owed_ = true;
    moved = true;
  }
  // The requester waits for the hole it resent to be acknowledged.
  if (moved) ack_req_seen_ = true;
  if (sr_drop_valid_ && Psn::diff(sr_drop_top_, epsn_) < 0) sr_drop_valid_ = false;
  // A hole remains in front of placed packets, or (after moving over placed
  // ones) in front of packets that arrived and could not be placed: report
  // it now rather than leave the requester to its tail-loss probe.  Not
  // while the requester goes back N (nothing placed: `moved` stays false).
  if ((sr_count_ > 0 || (moved && sr_drop_valid_)) && nak_sent_ == NakSent::kNone) {
    nak_sent_ = NakSent::kSeq;
    ctr_.seq_naks_tx++;
    send_ack(aeth::make(aeth::kNak, aeth::kNakPsnSeqError), epsn_, now);
  }
}

}  // namespace dpdat::rc
