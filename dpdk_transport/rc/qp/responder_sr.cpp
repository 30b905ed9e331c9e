// Responder, selective repeat (IBA 9.7.5.1 leaves a responder free to keep
// what follows a hole; the wire stays plain RoCEv2): packets after a hole
// are placed where they belong and taken in order when the hole is filled.
//   - RDMA WRITE Only (the requester's selective-repeat WRITE): by its RETH;
//   - MIDDLE / LAST packets of the message in progress (SEND, WRITE with or
//     without immediate): by their PSN offset (sr_in_message);
//   - the messages after it (SrMaps::nexts): a SEND that begins right after the
//     placed LAST of the SEND before it, or a WRITE whose FIRST names
//     target and length.
// Completions and ACKs stay in order (advance_epsn); anything refused is
// judged by the in-order path when the requester resends it.

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

bool Qp::place_out_of_order(const wire::PacketView& v) {
  AccessGrant g;
  const uint64_t len = v.reth->dma_len.value();
  if (len != v.payload.size()) return false;  // not self-describing: wait for order
  if (check_rdma(v.reth->rkey.value(), v.reth->va.value(), len, Access::kRemoteWrite, &g) !=
      AccessError::kOk)
    return false;  // judged (and NAKed) when it arrives in order
  if (len != 0) std::memcpy(g.host, v.payload.data(), len);
  // Placed once (a copy sent again finds it placed): its region counts it now.
  if (!v.bth->write_more()) count_rma(g.rma_counter);
  return true;
}

// Selective repeat inside the message in progress (SEND, WRITE with or
// without immediate in FIRST / MIDDLE / LAST packets): a MIDDLE or LAST
// packet after a hole lands at its offset, (psn - resp_.epsn) PMTUs past what is
// placed; the completion follows in order once the message is whole
// (advance_epsn).  Placed only where it can belong to this message: no
// other message known to begin before it, within the RETH length for a
// WRITE (its end PSN is known), within the receive WQE for a SEND.
//
// A SEND's end is not known ahead, so a SEND packet is placed only where no
// message boundary can hide before it (sr_send_contiguous): nothing is ever
// written past a message's real length.  A SEND whose FIRST was lost
// (nothing in progress, resp_.epsn the hole) is placed the same way into the
// receive WQE the FIRST will take (the own queue's head; an SRQ hands
// receives out in arrival order, so not with an SRQ): the MIDDLE right after
// the hole proves the message began at the hole.  Anything refused here is
// judged when it arrives in order.
bool Qp::sr_in_message(const wire::PacketView& v, Psn psn) {
  const wire::OpInfo& info = *v.info;
  const bool last = info.is(wire::op::kLast);
  const bool headless = resp_.in_msg == InMsg::kNone;
  const bool ok_kind = resp_.in_msg == InMsg::kSend ? info.is(wire::op::kSend)
                       : resp_.in_msg == InMsg::kWrite
                           ? info.is(wire::op::kWrite)
                           : info.is(wire::op::kSend) && srq_ == nullptr && rq_tail_ > rq_head_;
  if (!ok_kind || info.is(wire::op::kInvalidate) || info.is(wire::op::kFirst)) return false;
  if (srr_.msg_limit && Psn::diff(*srr_.msg_limit, resp_.epsn) > 0 &&
      Psn::diff(psn, *srr_.msg_limit) >= 0)
    return false;
  if (!sr_continues(srm_ == nullptr ? nullptr : &srm_->msg, resp_.epsn, psn,
                    /*send=*/resp_.in_msg != InMsg::kWrite, /*next=*/false))
    return false;
  const size_t n = v.payload.size();
  if (n > cfg_.pmtu || (!last && n != cfg_.pmtu)) return false;
  const uint64_t off = (headless ? 0 : resp_.msg_offset) +
                       uint64_t(static_cast<uint32_t>(Psn::diff(psn, resp_.epsn))) * cfg_.pmtu;
  if (resp_.in_msg != InMsg::kWrite) {
    RecvWqe& r = rq(rq_head_);
    if ((!headless && !resp_.recv_in_use) || r.used + off + n > r.capacity) return false;
    if (headless && !grant_recv_hosts(r)) return false;  // judged in order
    scatter(r.host, r.wr.sge, r.wr.num_sge, r.used + off, v.payload);
  } else {
    if (off + n > resp_.write_len || last != (off + n == resp_.write_len)) return false;
    if (n != 0) std::memcpy(resp_.write_host + off, v.payload.data(), n);
  }
  if (last) {
    sr_unplace_msg_from(psn + 1);  // placed past the end: a later message's
    sr_lower_limit(psn + 1);
    srr_.last.take(v, psn, n);
  }
  return true;
}

// Whether a SEND MIDDLE / LAST at `psn` certainly belongs to the message
// whose packets from `from` on are not in order yet (the message in
// progress, from the hole at resp_.epsn; or a next one, from its FIRST): a message
// boundary needs a LAST followed by a FIRST, and a packet placed as one of
// this message's MIDDLEs is neither, so the message cannot have ended
// before `psn` unless two PSNs next to each other in [from, psn) are both
// unknown (lost, or not placed).
bool Qp::sr_send_contiguous(Psn from, Psn psn, bool next) const {
  const int32_t n = Psn::diff(psn, from);
  if (srm_ == nullptr) return n <= (next ? 2 : 1);  // nothing placed: all unknown
  const SrBits& m = next ? srm_->next : srm_->msg;
  bool carry = false;  // the PSN before this chunk is unknown
  for (int32_t d = 0; d < n; d += 64) {
    const int32_t len = std::min(n - d, int32_t{64});
    uint64_t known = m.chunk(from + d);
    if (next && d == 0) known |= 1;  // `from`: the message's FIRST, placed
    const uint64_t u = ~known & SrBits::first_bits(len);
    if ((u & (u >> 1)) != 0 || (carry && (u & 1))) return false;
    carry = ((u >> (len - 1)) & 1) != 0;
  }
  return true;
}

// Whether a packet at `psn` can belong to the message whose packets after
// `from` are marked in `mine` (the message in progress from the hole; a next
// message from its FIRST): no message of its own (a self-describing WRITE)
// placed between, and for a SEND no boundary that can hide before it.  A
// packet right after one of its own passed both when that one was placed, and
// anything placed outside since took that one back (sr_lower_limit,
// sr_next_lower_limit): no scan then.
bool Qp::sr_continues(const SrBits* mine, Psn from, Psn psn, bool send, bool next) const {
  if (mine != nullptr && Psn::diff(psn - 1, from) > 0 && mine->test(psn - 1)) return true;
  return !sr_placed_outside(mine, from + 1, psn) && (!send || sr_send_contiguous(from, psn, next));
}

// Whether a packet in [from, to) was placed but is not in `mine` (nullptr:
// none is): a message of its own placed between.
bool Qp::sr_placed_outside(const SrBits* mine, Psn from, Psn to) const {
  if (srm_ == nullptr) return false;
  for (int32_t d = 0, n = Psn::diff(to, from); d < n; d += 64) {
    const uint64_t other = srm_->placed.chunk(from + d) & ~(mine ? mine->chunk(from + d) : 0);
    if ((other & SrBits::first_bits(n - d)) != 0) return true;
  }
  return false;
}

// Checks receive `r`'s lkeys for local write and fills in their host
// addresses: when a SEND's FIRST takes it in order (check_keys), or for
// placement ahead of the in-order path (which checks them again then).  Only
// the SGEs that bytes [0, end) reach: a message of one packet knows its end
// (a 0-byte SEND into a receive whose buffer is no memory at all completes);
// one of several packets does not yet, and has every SGE checked.
bool Qp::grant_recv_hosts(RecvWqe& r, uint64_t end) {
  uint64_t at = 0;
  for (uint32_t i = 0; i < r.wr.num_sge && at < end; ++i) {
    const Sge& g = r.wr.sge[i];
    at += g.length;
    if (g.length == 0) continue;
    AccessGrant grant;
    if (mr_.check_local(g.lkey, pz_, g.va, g.length, Access::kLocalWrite, &grant) !=
        AccessError::kOk)
      return false;
    r.host[i] = grant.host;
  }
  return true;
}

void Qp::sr_lower_limit(Psn psn) {
  if (!srr_.msg_limit || Psn::diff(*srr_.msg_limit, resp_.epsn) <= 0 ||
      Psn::diff(psn, *srr_.msg_limit) < 0) {
    srr_.msg_limit = psn;
  }
  sr_unplace_msg_from(psn);
}

// In-message packets placed at or after `psn` belong to a later message:
// take them back (they are asked for again when resp_.epsn reaches them).
void Qp::sr_unplace_msg_from(Psn psn) {
  // Nothing of the message in progress is placed (a stream of selective-
  // repeat WRITE Only packets, say): no bitmap to scan.
  if (srm_ == nullptr || srr_.msg_count == 0) return;
  for (int32_t d = srm_->msg.next_set(resp_.epsn, std::max(Psn::diff(psn, resp_.epsn), 0), kSrSpan);
       srr_.msg_count > 0 && d < kSrSpan; d = srm_->msg.next_set(resp_.epsn, d + 1, kSrSpan)) {
    const Psn p = resp_.epsn + d;
    sr_msg_set(p, false);
    sr_set(p, false);
    --srr_.msg_count;
    --srr_.count;
    if (srr_.last.valid && srr_.last.psn == p) {
      srr_.last.valid = false;
      // A SEND placed as the next message began right after this LAST.
      if (srr_.next_n > 0 && sr_nexts()[0].send) sr_drop_next();
    }
  }
}

// The message in progress ended (in order, or its placed LAST was taken)
// before `next`.
void Qp::sr_message_ended(Psn next) {
  if (srr_.msg_count > 0) sr_unplace_msg_from(resp_.epsn);
  srr_.last.valid = false;
  srr_.msg_limit.reset();
  if (srr_.next_n > 0 && sr_nexts()[0].send && !(sr_nexts()[0].first == next)) sr_drop_next();
}

uint32_t Qp::sr_next_of(Psn psn) const {
  for (uint32_t i = srr_.next_n; i > 0; --i)
    if (Psn::diff(psn, sr_nexts()[i - 1].first) >= 0) return i - 1;
  return srr_.next_n;
}

// A FIRST (or ONLY) packet after a hole that begins a later message: placed
// at its start, appending an entry to the next messages (see qp.hpp).
bool Qp::sr_open_next(const wire::PacketView& v, Psn psn) {
  if (srr_.next_n == kSrNextMax) return false;
  const wire::OpInfo& info = *v.info;
  const bool last = info.is(wire::op::kLast);
  const size_t n = v.payload.size();
  if (n > cfg_.pmtu || (!last && n != cfg_.pmtu)) return false;
  const SrNext* prev = srr_.next_n > 0 ? &sr_nexts()[srr_.next_n - 1] : nullptr;
  // After the newest entry (whose limit the caller lowered to this FIRST).
  if (prev != nullptr && (!prev->limit || Psn::diff(psn, *prev->limit) < 0)) return false;
  SrNext x;
  x.first = psn;
  if (info.is(wire::op::kSend)) {
    // Only right after a SEND whose LAST is placed: then it takes the
    // receive WQE after that one's (the own queue's; an SRQ hands out
    // receives in arrival order).  (The SEND in progress may be one whose
    // FIRST is still missing: it takes the queue's head all the same.)
    // Or right after a SEND whose LAST is missing but whose packet before
    // that is known (sr_send_ends_before): that LAST is the only packet
    // between.
    if (info.is(wire::op::kInvalidate) || srq_ != nullptr) return false;
    if (prev != nullptr) {
      if (!prev->send) return false;
      if (prev->last.valid ? !(prev->last.psn + 1 == psn) : !sr_send_ends_before(psn, prev))
        return false;
      x.rq_index = prev->rq_index + 1;
    } else {
      if (resp_.in_msg == InMsg::kWrite) return false;
      if (srr_.last.valid ? !(srr_.last.psn + 1 == psn) : !sr_send_ends_before(psn, nullptr))
        return false;
      x.rq_index = rq_head_ + 1;
    }
    if (rq_tail_ <= x.rq_index) return false;
    // Where a message lands in a multi-receive depends on the length of
    // the one before: only the in-order path places into one.
    if (rq(x.rq_index).wr.multi_min != 0 || rq(x.rq_index - 1).wr.multi_min != 0) return false;
    RecvWqe& r = rq(x.rq_index);
    if (n > r.capacity || !grant_recv_hosts(r, last ? n : UINT64_MAX))
      return false;  // judged in order
    scatter(r.host, r.wr.sge, r.wr.num_sge, 0, v.payload);
    x.send = true;
    x.len = r.capacity;
  } else if (info.is(wire::op::kWrite) && v.reth != nullptr) {
    const uint64_t len = v.reth->dma_len.value();
    if (last ? n != len : len <= n) return false;
    if (prev == nullptr && resp_.in_msg == InMsg::kWrite) {
      // Not inside the WRITE in progress (its end is known).
      const uint32_t rest = pkts_for(resp_.write_len - resp_.msg_offset, cfg_.pmtu);
      if (Psn::diff(psn, resp_.epsn) < static_cast<int32_t>(rest)) return false;
    }
    AccessGrant g;
    if (check_rdma(v.reth->rkey.value(), v.reth->va.value(), len, Access::kRemoteWrite, &g) !=
        AccessError::kOk)
      return false;  // judged (and NAKed) in order
    if (n != 0) std::memcpy(g.host, v.payload.data(), n);
    x.host = g.host;
    x.counter = g.rma_counter;
    x.len = len;
    x.limit = psn + static_cast<int32_t>(pkts_for(len, cfg_.pmtu));
  } else {
    return false;
  }
  if (last) {
    x.last.take(v, psn, n);
    x.limit = psn + 1;
  }
  sr_maps().nexts[srr_.next_n++] = x;
  return true;
}

// A FIRST at `psn` follows a SEND (the message in progress, or next entry
// `prev`) whose LAST is not here: that LAST is `psn` - 1 when `psn` - 2 is
// known to be one of that SEND's packets other than its LAST (taken in
// order, or placed as its FIRST or a MIDDLE): a MIDDLE is followed by a
// MIDDLE or the LAST, and a FIRST only follows a LAST.
bool Qp::sr_send_ends_before(Psn psn, const SrNext* prev) const {
  const Psn before = psn - 2;
  if (sr_bit(psn - 1)) return false;
  if (prev == nullptr && resp_.in_msg == InMsg::kSend && psn - 1 == resp_.epsn)
    return true;  // the hole itself
  if (srm_ == nullptr) return false;
  if (prev != nullptr) {
    return Psn::diff(before, prev->first) >= 0 && srm_->next.test(before) &&
           sr_next_of(before) == srr_.next_n - 1;
  }
  // The SEND in progress, taken in order (kSend) or placed from its missing
  // FIRST on (kNone with packets placed).
  const bool send_in_progress =
      resp_.in_msg == InMsg::kSend || (resp_.in_msg == InMsg::kNone && srr_.msg_count > 0);
  return send_in_progress && Psn::diff(before, resp_.epsn) > 0 && srm_->msg.test(before);
}

// A MIDDLE / LAST packet of a next message, placed by its offset from the
// FIRST (a SEND only where no boundary can hide before it, as for the
// message in progress).
bool Qp::sr_place_next(const wire::PacketView& v, Psn psn) {
  const uint32_t i = sr_next_of(psn);
  if (i == srr_.next_n) return false;
  SrNext& e = sr_nexts()[i];
  if (Psn::diff(psn, e.first) <= 0) return false;
  if (e.limit && Psn::diff(psn, *e.limit) >= 0) return false;
  const wire::OpInfo& info = *v.info;
  if (!(e.send ? info.is(wire::op::kSend) : info.is(wire::op::kWrite)) ||
      info.is(wire::op::kInvalidate) || info.is(wire::op::kFirst))
    return false;
  if (!sr_continues(&srm_->next, e.first, psn, e.send, /*next=*/true)) return false;
  const bool last = info.is(wire::op::kLast);
  const size_t n = v.payload.size();
  if (n > cfg_.pmtu || (!last && n != cfg_.pmtu)) return false;
  const uint64_t off = uint64_t{static_cast<uint32_t>(Psn::diff(psn, e.first))} * cfg_.pmtu;
  if (e.send) {
    if (off + n > e.len) return false;
    const RecvWqe& r = rq(e.rq_index);
    scatter(r.host, r.wr.sge, r.wr.num_sge, off, v.payload);
  } else {
    if (off + n > e.len || last != (off + n == e.len)) return false;
    if (n != 0) std::memcpy(e.host + off, v.payload.data(), n);
  }
  if (last) {
    sr_next_lower_limit(psn + 1);  // placed past its end: a later message's
    if (!e.limit || Psn::diff(psn + 1, *e.limit) < 0) {
      e.limit = psn + 1;
    }
    e.last.take(v, psn, n);
  }
  return true;
}

// A later message begins at `psn`: the entry it falls in ends before it.
void Qp::sr_next_lower_limit(Psn psn) {
  const uint32_t i = sr_next_of(psn);
  if (i == srr_.next_n || Psn::diff(psn, sr_nexts()[i].first) <= 0) return;
  SrNext& e = sr_nexts()[i];
  if (!e.limit || Psn::diff(psn, *e.limit) < 0) {
    e.limit = psn;
  }
  // Its packets from `psn` on (up to the next entry) are a later message's.
  const Psn end = i + 1 < srr_.next_n ? sr_nexts()[i + 1].first : resp_.epsn + kSrSpan;
  bool lost_last = false;
  const int32_t span = Psn::diff(end, psn);
  for (int32_t d = srm_->next.next_set(psn, 0, span); e.count > 0 && d < span;
       d = srm_->next.next_set(psn, d + 1, span)) {
    const Psn p = psn + d;
    sr_next_set(p, false);
    sr_set(p, false);
    --e.count;
    --srr_.count;
    if (e.last.valid && e.last.psn == p) {
      e.last.valid = false;
      lost_last = true;
    }
  }
  if (lost_last && i + 1 < srr_.next_n) sr_unplace_next_from(sr_nexts()[i + 1].first);
}

void Qp::sr_unplace_next_from(Psn psn) {
  if (srr_.next_n == 0) return;
  if (srm_ == nullptr) return;
  for (int32_t d =
           srm_->next.next_set(resp_.epsn, std::max(Psn::diff(psn, resp_.epsn), 0), kSrSpan);
       d < kSrSpan; d = srm_->next.next_set(resp_.epsn, d + 1, kSrSpan)) {
    const Psn p = resp_.epsn + d;
    sr_next_set(p, false);
    sr_set(p, false);
    --srr_.count;
    const uint32_t i = sr_next_of(p);
    if (i < srr_.next_n) --sr_nexts()[i].count;
  }
  while (srr_.next_n > 0 && Psn::diff(sr_nexts()[srr_.next_n - 1].first, psn) >= 0) --srr_.next_n;
  for (uint32_t i = 0; i < srr_.next_n; ++i)
    if (sr_nexts()[i].last.valid && Psn::diff(sr_nexts()[i].last.psn, psn) >= 0)
      sr_nexts()[i].last.valid = false;
}

// resp_.epsn reached the first entry's first packet: it becomes the message in
// progress.
bool Qp::sr_take_next() {
  if (resp_.in_msg != InMsg::kNone || srr_.next_n == 0) return false;
  const SrNext& e = sr_nexts()[0];
  if (e.send) {
    if (rq_head_ != e.rq_index || srq_ != nullptr || rq_tail_ <= rq_head_) return false;
    resp_.recv_in_use = true;
    resp_.in_msg = InMsg::kSend;
  } else {
    resp_.in_msg = InMsg::kWrite;
    resp_.write_host = e.host;
    resp_.write_counter = e.counter;
    resp_.write_len = e.len;
  }
  resp_.msg_offset = 0;
  // Its packets move from the next bitmap to the message's, 64 PSNs at a time.
  const Psn end = srr_.next_n > 1 ? sr_nexts()[1].first : resp_.epsn + kSrSpan;
  uint32_t moved = 0;
  const int32_t span = Psn::diff(end, e.first);
  for (int32_t d = 0; moved < e.count && d < span; d += 64) {
    const Psn base = e.first + d;
    const uint64_t bits = srm_->next.chunk(base) & SrBits::first_bits(span - d);
    if (bits == 0) continue;
    srm_->next.clear_chunk(base, bits);
    srm_->msg.set_chunk(base, bits);
    moved += static_cast<uint32_t>(std::popcount(bits));
  }
  srr_.msg_count += moved;
  srr_.last = e.last;
  srr_.msg_limit = e.limit;
  for (uint32_t i = 1; i < srr_.next_n; ++i) sr_nexts()[i - 1] = sr_nexts()[i];
  --srr_.next_n;
  return true;
}

// resp_.epsn holds a packet of the message in progress placed earlier: take it in
// order.  False when that cannot be yet (the LAST's completion finds no room,
// or a WRITE with immediate no receive): the caller takes it back, it is
// asked for again and the in-order path answers with an RNR NAK.
bool Qp::sr_advance_in_message() {
  if (!(srr_.last.valid && srr_.last.psn == resp_.epsn)) {
    resp_.msg_offset += cfg_.pmtu;
    return true;
  }
  const bool is_send = resp_.in_msg == InMsg::kSend;
  if (is_send || srr_.last.has_imm) {
    if (!recv_cq_room() || (!is_send && !have_recv())) return false;
    const RecvWqe& r = rq(rq_head_);
    Completion wc;
    wc.cookie = r.wr.cookie;
    wc.qpn = qpn_;
    wc.op = is_send ? WcOp::kRecv : WcOp::kRecvWriteImm;
    wc.byte_len =
        static_cast<uint32_t>(is_send ? resp_.msg_offset + srr_.last.len : resp_.write_len);
    wc.has_imm = srr_.last.has_imm;
    wc.imm = srr_.last.imm;
    wc.solicited = is_send && srr_.last.se;
    const bool retire = take_recv(&wc, is_send ? wc.byte_len : 0);
    (void)push_recv_completion(wc);  // room checked above
    if (retire) retire_recv();
    resp_.recv_in_use = false;
  }
  resp_.msg_offset += srr_.last.len;
  if (!is_send) {
    count_rma(rma_writes_);
    count_rma(resp_.write_counter);
  }
  resp_.in_msg = InMsg::kNone;
  ++resp_.msn;
  return true;
}

// Moves resp_.epsn over packets that selective repeat already placed; if a hole
// remains in front of placed packets, reports it at once (one NAK per hole).
void Qp::advance_epsn(uint64_t now, bool ack_req) {
  if (srr_.count == 0 && !srr_.drop_top && srr_.held_n == 0) return;
  bool moved = false;
  while (srr_.count > 0 && sr_bit(resp_.epsn)) {
    if (srr_.next_n > 0 && sr_nexts()[0].first == resp_.epsn && !sr_take_next()) {
      sr_drop_next();  // not where it was expected: judged in order
      break;
    }
    if (sr_msg_bit(resp_.epsn)) {
      const bool last = srr_.last.valid && srr_.last.psn == resp_.epsn;
      if (!sr_advance_in_message()) {
        sr_unplace_msg_from(resp_.epsn);
        break;
      }
      sr_msg_set(resp_.epsn, false);
      sr_set(resp_.epsn, false);
      srm_->seen.set(resp_.epsn, false);
      --srr_.msg_count;
      --srr_.count;
      ++resp_.epsn;
      if (last) sr_message_ended(resp_.epsn);
    } else {
      sr_set(resp_.epsn, false);
      srm_->seen.set(resp_.epsn, false);
      --srr_.count;
      if (resp_.in_msg != InMsg::kNone) break;  // a WRITE Only inside a message: judged in order
      // A WRITE Only placed ahead: the last packet of its WRITE counts it.
      if (!srm_->wr_more.test(resp_.epsn)) count_rma(rma_writes_);
      ++resp_.epsn;
      ++resp_.msn;
    }
    ++resp_.unacked;
    resp_.ack_owed = true;
    moved = true;
  }
  // The requester waits for the hole it resent to be acknowledged.
  if (moved) resp_.ack_req_seen = true;
  if (srr_.drop_top && Psn::diff(*srr_.drop_top, resp_.epsn) < 0) srr_.drop_top.reset();
  // A hole remains in front of placed packets, or (after moving over placed
  // ones, or when the requester asks for an answer: a packet it resent
  // alone) in front of packets that arrived and could not be placed: report
  // it now rather than leave the requester to its tail-loss probe.  (While
  // the requester goes back N it knows these NAKs for what they are.)
  // (A frame kept for resp_.epsn is no hole: on_request takes it next.)
  if ((srr_.count > 0 || srr_.held_n > 0 || ((moved || ack_req) && srr_.drop_top)) &&
      resp_.nak_sent == NakSent::kNone && held_at(resp_.epsn) == nullptr &&
      !(moved && sack_reported_hole())) {
    send_seq_nak(now);
  }
}

// A sequence-error NAK for resp_.epsn; with selective repeat, just before it, a
// selective acknowledgement (wire::Opcode::kSack, a manufacturer-specific
// opcode an IBA requester drops): BTH PSN = resp_.epsn, then a big-endian 32-bit
// span and a bitmap, bit i (byte i / 8, bit i % 8) set when PSN resp_.epsn + i
// is held here (placed, or kept whole), for i < span (rounded up to whole
// 32-bit words).  The span reaches the newest packet seen after the hole:
// every clear bit below it is a packet to be sent again (lost on the way,
// or one that arrived and could be neither placed nor kept).
void Qp::send_seq_nak(uint64_t now) {
  ctr_.seq_naks_tx++;
  note_seq_nak(now);
  // The SACK goes first: a requester that takes it learns that this peer
  // keeps what follows a hole before the NAK asks it to act (its first hole
  // is then resent alone too, whatever the operation).
  send_sack(now);
  send_ack(aeth::make(aeth::kNak, aeth::kNakPsnSeqError), resp_.epsn, now);
}

// The hole at resp_.epsn was reported at `at` (a NAK, or a SACK standing for
// one): the repeat waits from then, and the repair is timed from the first
// report of this hole.
void Qp::note_seq_nak(uint64_t at) {
  resp_.nak_sent = NakSent::kSeq;
  resp_.nak_sent_ns = at;
  if (!resp_.nak_timed || !(resp_.nak_timed_psn == resp_.epsn)) {
    resp_.nak_timed = true;
    resp_.nak_timed_once = true;
    resp_.nak_timed_psn = resp_.epsn;
    resp_.nak_timed_ns = at;
    resp_.nak_repeats = 0;
  } else {
    resp_.nak_timed_once = false;  // said again: which one the resend answers is unknown
  }
}

void Qp::send_sack(uint64_t now) {
  if (!cfg_.selective_repeat || !srr_.seen_top) return;
  const int32_t top = Psn::diff(*srr_.seen_top, resp_.epsn);
  if (top <= 0) {
    srr_.seen_top.reset();
    return;
  }
  const auto span = static_cast<uint32_t>(std::min<int32_t>(top + 1, kSackMaxSpan));
  SrMaps& m = sr_maps();
  std::array<uint8_t, kSackBytes>& b = m.sack;
  const uint32_t words = (span + 31) / 32;
  std::memset(b.data(), 0, 4 + 4 * size_t{words});
  b[0] = static_cast<uint8_t>(span >> 24);
  b[1] = static_cast<uint8_t>(span >> 16);
  b[2] = static_cast<uint8_t>(span >> 8);
  b[3] = static_cast<uint8_t>(span);
  // A word of 64 PSNs at a time (placed or kept), bit i of the bitmap in
  // byte i / 8: the word's bytes in little-endian order.
  for (uint32_t i = 0; i < span; i += 64) {
    const Psn p = resp_.epsn + static_cast<int32_t>(i);
    uint64_t w = (m.placed.chunk(p) | m.seen.chunk(p)) &
                 SrBits::first_bits(static_cast<int32_t>(std::min<uint32_t>(span - i, 64)));
    if (i == 0) w &= ~uint64_t{1};  // resp_.epsn itself: the hole
    for (uint32_t k = 0; k < 8 && i / 8 + k < 4 * words; ++k)
      b[4 + i / 8 + k] = static_cast<uint8_t>(w >> (8 * k));
  }
  wire::BuildSpec& s = base_spec(Opcode::kSack, resp_.epsn);
  s.payload = std::span<const uint8_t>(b.data(), 4 + 4 * size_t{words});
  if (transmit(s, now)) {
    ctr_.sacks_tx++;
    srr_.sack_top = resp_.epsn + static_cast<int32_t>(span - 1);
    srr_.sack_ns = now;
  }
}

// The hole at resp_.epsn is one the newest SACK showed missing (it reached
// past it, and every PSN it showed neither placed nor kept the requester
// sends again): reported then, as a NAK would have been.  Timed and repeated
// from then on like one.
bool Qp::sack_reported_hole() {
  if (!srr_.sack_top || Psn::diff(*srr_.sack_top, resp_.epsn) <= 0) return false;
  note_seq_nak(srr_.sack_ns);
  ctr_.seq_naks_spared++;
  return true;
}

}  // namespace dpdat::rc
