// Responder (IBA 9.7.5.1): every request packet walks RespState through
// small check_* steps, each returning the next state, as rxe_resp.c does.
// Error states end in one table (kRespError) that names the NAK code, the
// QP error and the receive completion status, with the IBA rule.

#include <algorithm>
#include <atomic>
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

using RS = Qp::RespState;

struct RespError {
  RS state;
  uint8_t nak_code;      // AETH NAK code sent to the requester
  QpError qp_error;      // why this QP goes to error
  WcStatus recv_status;  // completion of the receive WQE in use (kSuccess: none)
  std::string_view rule;
};
constexpr RespError kRespError[] = {
    {RS::kErrLength, aeth::kNakInvalidRequest, QpError::kProtocol, WcStatus::kSuccess,
     "C9-88..C9-90: FIRST/MIDDLE carry one PMTU, LAST/ONLY at most one"},
    {RS::kErrOpSeq, aeth::kNakInvalidRequest, QpError::kProtocol, WcStatus::kSuccess,
     "9.7.5.1.6 / C9-93: opcode out of sequence within a message"},
    {RS::kErrRecvProtection, aeth::kNakRemoteOperationalError, QpError::kLocalProtection,
     WcStatus::kLocalProtectionError, "9.7.5.2.4 / 10.8.3: the receive WQE's lkey check failed"},
    {RS::kErrRecvLength, aeth::kNakInvalidRequest, QpError::kLocalLength,
     WcStatus::kLocalLengthError, "9.7.5.2.4: the message is longer than the receive WQE"},
    {RS::kErrRkey, aeth::kNakRemoteAccessError, QpError::kRemoteAccess, WcStatus::kSuccess,
     "9.7.5.2.4 / C9-96: rkey, PD, access right or bounds refused"},
    {RS::kErrWriteLength, aeth::kNakInvalidRequest, QpError::kProtocol, WcStatus::kSuccess,
     "9.7.5.1.6: RDMA WRITE payload differs from the RETH DMA length"},
    {RS::kErrMisaligned, aeth::kNakInvalidRequest, QpError::kRemoteInvalidRequest,
     WcStatus::kSuccess, "9.4.5: atomic address not 8-byte aligned"},
    {RS::kErrUnsupported, aeth::kNakInvalidRequest, QpError::kProtocol, WcStatus::kSuccess,
     "9.7.5.1.6: opcode not supported on an RC responder"},
};
constexpr size_t kNumRespErrors =
    static_cast<size_t>(RS::kCount) - static_cast<size_t>(RS::kErrLength);
static_assert(std::size(kRespError) == kNumRespErrors);
constexpr bool resp_table_in_order() {
  for (size_t i = 0; i < std::size(kRespError); ++i)
    if (static_cast<size_t>(kRespError[i].state) != static_cast<size_t>(RS::kErrLength) + i)
      return false;
  return true;
}
static_assert(resp_table_in_order());
static_assert(kNumRespErrors == EngineCounters::kRespErrorKinds);

}  // namespace

void Qp::on_request(const wire::PacketView& v, uint64_t now) {
  const Psn before = resp_.epsn;
  respond(v, now);
  // resp_.epsn reached frames kept after a hole (responder_hold.cpp).
  if (srr_.held_n > 0) held_drain(now, Psn::diff(resp_.epsn, before) > 1);
}

void Qp::respond(const wire::PacketView& v, uint64_t now) {
  RespCtx c{v, v.bth->psn()};
  RespState s = RespState::kCheckPsn;
  for (;;) {
    DPDAT_QP_TRACE_POINT(QpRole::kResponder, s, c.psn, now);
    switch (s) {
      case RespState::kCheckPsn:
        s = check_psn(c);
        break;
      case RespState::kInSequence:
        s = take_in_sequence(c, now);
        break;
      case RespState::kDuplicate:
        handle_duplicate(v, now);
        return;
      case RespState::kOutOfSequence:
        on_out_of_sequence(c, now);
        return;
      case RespState::kCheckLength:
        s = check_length(c);
        break;
      case RespState::kCheckOpSeq:
        s = check_op_seq(c);
        break;
      case RespState::kCheckResources:
        s = check_resources(c);
        break;
      case RespState::kCheckKeys:
        s = check_keys(c);
        break;
      case RespState::kExecSend:
        s = exec_send(c);
        break;
      case RespState::kExecWrite:
        s = exec_write(c);
        break;
      case RespState::kExecRead:
        s = exec_read(c, now);
        break;
      case RespState::kExecAtomic:
        s = exec_atomic(c, now);
        break;
      case RespState::kAcknowledge:
        acknowledge(c, now);
        return;
      case RespState::kQueued:
        return;
      case RespState::kRnrCqFull:
      case RespState::kRnrNoRecv:
        send_rnr_nak(c.psn, s == RespState::kRnrCqFull, now);
        return;
      default:
        responder_error(s, c.psn, now);
        return;
    }
  }
}

RS Qp::check_psn(RespCtx& c) const {
  const int32_t d = Psn::diff(c.psn, resp_.epsn);
  if (d > EngineCounters::kPsnFar || d < -EngineCounters::kPsnFar)
    engine_.counters().psn_out_of_window++;
  if (d < 0) return RS::kDuplicate;
  if (d > 0) return RS::kOutOfSequence;
  const wire::OpInfo& info = *c.v.info;
  c.first = info.is(wire::op::kFirst);
  c.last = info.is(wire::op::kLast);
  c.is_send = info.is(wire::op::kSend);
  c.is_write = info.is(wire::op::kWrite);
  return RS::kInSequence;
}

// The expected PSN arrived: the timing of the NAK that asked for it ends, and
// what selective repeat kept or assumed for it is let go.
RS Qp::take_in_sequence(const RespCtx& c, uint64_t now) {
  if (resp_.nak_timed && resp_.nak_timed_psn == resp_.epsn) {
    resp_.nak_timed = false;
    if (resp_.nak_timed_once) {
      // (A stalled requester's sample would silence the repeats: capped.)
      const uint64_t t = std::min(now - resp_.nak_timed_ns, cfg_.retransmit_timeout_ns);
      if (resp_.nak_repair_ns == 0) {
        resp_.nak_repair_ns = t;
        resp_.nak_repair_dev_ns = 0;
      } else {
        const uint64_t err =
            t > resp_.nak_repair_ns ? t - resp_.nak_repair_ns : resp_.nak_repair_ns - t;
        resp_.nak_repair_dev_ns = (3 * resp_.nak_repair_dev_ns + err) / 4;
        resp_.nak_repair_ns = (7 * resp_.nak_repair_ns + t) / 8;
      }
    }
  }
  if (srm_ != nullptr) srm_->seen.set(resp_.epsn, false);
  // Sent again though kept (the requester went back N): this copy is the one.
  if (held_at(resp_.epsn) != nullptr) held_release(resp_.epsn.value() % kHeldSpan);
  if (srr_.seen_top && Psn::diff(*srr_.seen_top, resp_.epsn) <= 0) srr_.seen_top.reset();
  if (srr_.sack_top && Psn::diff(*srr_.sack_top, resp_.epsn) <= 0) srr_.sack_top.reset();
  // Packets were placed for a SEND whose FIRST was missing (sr_in_message):
  // anything but that FIRST here means they were not what they seemed.
  if (resp_.in_msg == InMsg::kNone && srr_.msg_count > 0 && !(c.is_send && c.first && !c.last))
    sr_unplace_msg_from(resp_.epsn);
  return RS::kCheckLength;
}

// A packet of the message in progress (or, `next`, of the one after it) was
// placed ahead of the hole at `psn`.
void Qp::sr_mark_placed(Psn psn, bool next) {
  sr_set(psn, true);
  if (next) {
    sr_next_set(psn, true);
    ++sr_nexts()[sr_next_of(psn)].count;
  } else {
    sr_msg_set(psn, true);
    ++srr_.msg_count;
  }
  ++srr_.count;
  ctr_.sr_placed_ahead++;
}

void Qp::on_out_of_sequence(const RespCtx& c, uint64_t now) {
  const wire::PacketView& v = c.v;
  const int32_t d = Psn::diff(c.psn, resp_.epsn);
  ctr_.out_of_order_rx++;
  bool again = false;
  const uint64_t placed_before = ctr_.sr_placed_ahead;
  bool placed_already = false;
  if (cfg_.selective_repeat && d < kSrSpan) {
    if (sr_bit(c.psn) || held_at(c.psn) != nullptr) {
      // Sent again although placed: the requester probes a tail it thinks
      // lost, so our NAK for the hole did not reach it.  Repeat it.  Not
      // after an RNR NAK: the requester resends the window behind the packet
      // it was told to wait for, which shows nothing lost, and a sequence
      // NAK then would spend its transport retries while the consumer keeps
      // its receive CQ full.
      ctr_.duplicates_rx++;
      again = resp_.nak_sent == NakSent::kSeq;
      placed_already = true;
    } else if (v.opcode == Opcode::kWriteOnly) {
      // A message of its own: the ones being placed ended before.
      sr_lower_limit(c.psn);
      sr_next_lower_limit(c.psn);
      if (place_out_of_order(v)) {
        sr_maps().wr_more.set(c.psn, v.bth->write_more());  // counted when taken
        sr_set(c.psn, true);
        ++srr_.count;
        ctr_.sr_placed_ahead++;
      }
    } else if (v.info->is(wire::op::kFirst)) {
      sr_lower_limit(c.psn);  // a later message begins here
      sr_next_lower_limit(c.psn);
      if (sr_open_next(v, c.psn)) sr_mark_placed(c.psn, /*next=*/true);
    } else if (sr_in_message(v, c.psn)) {
      sr_mark_placed(c.psn, /*next=*/false);
    } else if (sr_place_next(v, c.psn)) {
      sr_mark_placed(c.psn, /*next=*/true);
    }
    // Not placed: kept whole, taken in order (responder_hold.cpp).
    const bool held = !placed_already && ctr_.sr_placed_ahead == placed_before && sr_hold(v, c.psn);
    // A gap after the newest packet seen: a loss the requester has not been
    // told of yet.  Say it now (the SACK shows it).
    if (srr_.seen_top && Psn::diff(c.psn, *srr_.seen_top) > 1 && resp_.nak_sent == NakSent::kSeq)
      again = true;
    if (!srr_.seen_top || Psn::diff(c.psn, *srr_.seen_top) > 0) {
      srr_.seen_top = c.psn;
    }
    // A SACK shows it as held when kept whole; one neither placed nor kept
    // (beyond kHeldSpan, or the engine's held_max_bytes reached) shows
    // missing, and the requester sends it again.
    if (held) sr_maps().seen.set(c.psn, true);
    // Not placed: remember how far such packets reach (advance_epsn).
    if (!placed_already && !held && ctr_.sr_placed_ahead == placed_before &&
        (!srr_.drop_top || Psn::diff(c.psn, *srr_.drop_top) > 0)) {
      srr_.drop_top = c.psn;
    }
    // The hole is still open while the requester goes on (it asks for an
    // answer about every ack_every packets): the NAK or the resend may be
    // lost.  Say it again once the resend is overdue (resp_.nak_repair_ns); the
    // requester ignores a NAK for a packet it resent within a round trip.
    if (v.bth->ack_req() && resp_.nak_sent == NakSent::kSeq && nak_repeat_due(now)) {
      if (!again) {
        ctr_.seq_nak_repeats++;
        ++resp_.nak_repeats;
      }
      again = true;
    } else if (!again && resp_.nak_sent == NakSent::kSeq && srr_.sack_top &&
               Psn::diff(c.psn, *srr_.sack_top) >= kSackRefresh) {
      ctr_.sack_refreshes++;
      send_sack(now);
    }
  }
  if (resp_.nak_sent == NakSent::kNone || again) {
    // One sequence-error NAK per gap (IBA C9-110), repeated only when the
    // requester shows it missed it.
    send_seq_nak(now);
  }
}

RS Qp::check_length(const RespCtx& c) const {
  // FIRST / MIDDLE packets carry exactly one PMTU, LAST / ONLY at most one
  // (IBA C9-88..C9-90); the engine parsed with its largest PMTU.
  const size_t n = c.v.payload.size();
  if (n > cfg_.pmtu || (!c.last && n != cfg_.pmtu)) return RS::kErrLength;
  return RS::kCheckOpSeq;
}

RS Qp::check_op_seq(const RespCtx& c) const {
  // Opcode sequence (IBA 9.7.5.1.6 / C9-93).
  const bool ok = resp_.in_msg == InMsg::kSend    ? (c.is_send && !c.first)
                  : resp_.in_msg == InMsg::kWrite ? (c.is_write && !c.first)
                                                  : c.first;
  return ok ? RS::kCheckResources : RS::kErrOpSeq;
}

RS Qp::check_resources(const RespCtx& c) {
  if (c.is_send) {
    // The message completes with this packet but the receive completion
    // queue has no room: the packet is refused with an RNR NAK (not placed,
    // not acknowledged) and the requester resends it after the RNR delay, so
    // a full queue stalls the connection and no completion is lost
    // (CompletionQueue, types.hpp).
    if (c.last && !recv_cq_room()) return RS::kRnrCqFull;
    if (c.first && !have_recv()) return RS::kRnrNoRecv;
  } else if (c.is_write && c.v.info->is(wire::op::kImm)) {
    // WRITE with immediate consumes a receive: none posted, or no room for
    // its completion -> RNR, before anything of this packet is placed.
    if (!recv_cq_room()) return RS::kRnrNoRecv;
    if (!have_recv()) return RS::kRnrNoRecv;
  }
  return RS::kCheckKeys;
}

RS Qp::check_keys(RespCtx& c) {
  const wire::PacketView& v = c.v;
  if (c.is_send) {
    if (c.first) {
      RecvWqe& r = rq(rq_head_);
      if (!grant_recv_hosts(r, c.last ? r.used + v.payload.size() : UINT64_MAX))
        return RS::kErrRecvProtection;
      resp_.msg_offset = 0;
      resp_.recv_in_use = true;
    }
    return RS::kExecSend;
  }
  if (c.is_write) {
    if (c.first) {
      if ((remote_access_ & priv::kRemoteWrite) == 0) return RS::kErrRkey;
      AccessGrant g;
      c.va = v.reth->va.value();
      c.len = v.reth->dma_len.value();
      if (!remote_ok(check_rdma(v.reth->rkey.value(), c.va, c.len, Access::kRemoteWrite, &g)))
        return RS::kErrRkey;
      resp_.write_host = g.host;
      resp_.write_counter = g.rma_counter;
      resp_.write_len = c.len;
      resp_.msg_offset = 0;
    }
    return RS::kExecWrite;
  }
  if (v.opcode == Opcode::kReadRequest) {
    if ((remote_access_ & priv::kRemoteRead) == 0) return RS::kErrRkey;
    c.va = v.reth->va.value();
    c.len = v.reth->dma_len.value();
    c.rkey = v.reth->rkey.value();
    AccessGrant g;
    if (!remote_ok(check_rdma(c.rkey, c.va, c.len, Access::kRemoteRead, &g))) return RS::kErrRkey;
    c.mr_counter = g.rma_counter;
    return RS::kExecRead;
  }
  if (v.opcode == Opcode::kCompareSwap || v.opcode == Opcode::kFetchAdd) {
    c.va = v.atomic->va.value();
    c.rkey = v.atomic->rkey.value();
    c.len = 8;
    // A misaligned target is a malformed request (IBA 9.4.5: NAK invalid
    // request) whatever the key: refused before any key is looked at.
    if ((c.va & 7u) != 0) return RS::kErrMisaligned;
    if ((remote_access_ & priv::kRemoteAtomic) == 0) return RS::kErrRkey;
    AccessGrant g;
    const AccessError e = mr_.check_remote(c.rkey, pz_, c.va, 8, Access::kRemoteAtomic, &g);
    if (e == AccessError::kMisaligned) return RS::kErrMisaligned;
    if (!remote_ok(e)) return RS::kErrRkey;
    if ((reinterpret_cast<uintptr_t>(g.host) & 7u) != 0) return RS::kErrMisaligned;
    c.host = g.host;
    return RS::kExecAtomic;
  }
  return RS::kErrUnsupported;
}

RS Qp::exec_send(const RespCtx& c) {
  const wire::PacketView& v = c.v;
  RecvWqe& r = rq(rq_head_);
  if (r.used + resp_.msg_offset + v.payload.size() > r.capacity) return RS::kErrRecvLength;
  scatter(r.host, r.wr.sge, r.wr.num_sge, r.used + resp_.msg_offset, v.payload);
  resp_.msg_offset += v.payload.size();
  if (!c.last) {
    resp_.in_msg = InMsg::kSend;
    return RS::kAcknowledge;
  }
  Completion wc;
  wc.cookie = r.wr.cookie;
  wc.qpn = qpn_;
  wc.op = WcOp::kRecv;
  wc.byte_len = static_cast<uint32_t>(resp_.msg_offset);
  wc.has_imm = v.imm != nullptr;
  wc.imm = v.imm != nullptr ? v.imm->imm.value() : 0;
  wc.solicited = v.bth->se();
  const bool retire = take_recv(&wc, resp_.msg_offset);
  (void)push_recv_completion(wc);  // room checked before this packet was taken
  if (retire) retire_recv();
  resp_.recv_in_use = false;
  resp_.in_msg = InMsg::kNone;
  ++resp_.msn;
  sr_message_ended(resp_.epsn + 1);
  return RS::kAcknowledge;
}

RS Qp::exec_write(const RespCtx& c) {
  const wire::PacketView& v = c.v;
  if (resp_.msg_offset + v.payload.size() > resp_.write_len ||
      (c.last && resp_.msg_offset + v.payload.size() != resp_.write_len))
    return RS::kErrWriteLength;
  if (!v.payload.empty())
    std::memcpy(resp_.write_host + resp_.msg_offset, v.payload.data(), v.payload.size());
  resp_.msg_offset += v.payload.size();
  if (!c.last) {
    resp_.in_msg = InMsg::kWrite;
    return RS::kAcknowledge;
  }
  if (v.info->is(wire::op::kImm)) {
    RecvWqe& r = rq(rq_head_);
    Completion wc;
    wc.cookie = r.wr.cookie;
    wc.qpn = qpn_;
    wc.op = WcOp::kRecvWriteImm;
    wc.byte_len = static_cast<uint32_t>(resp_.write_len);
    wc.has_imm = true;
    wc.imm = v.imm->imm.value();
    const bool retire = take_recv(&wc, 0);  // takes no room of a multi-receive
    (void)push_recv_completion(wc);         // room checked before this packet was taken
    if (retire) retire_recv();
  }
  if (!v.bth->write_more()) {
    count_rma(rma_writes_);
    count_rma(resp_.write_counter);
  }
  resp_.in_msg = InMsg::kNone;
  ++resp_.msn;
  sr_message_ended(resp_.epsn + 1);
  return RS::kAcknowledge;
}

RS Qp::exec_read(const RespCtx& c, uint64_t now) {
  if (resp_full()) return RS::kQueued;  // dropped: the requester repeats it
  RespJob j;
  j.is_read = true;
  j.first_psn = c.psn;
  j.psn = c.psn;
  j.npkts = pkts_for(c.len, cfg_.pmtu);
  j.end_pkt = j.npkts;
  j.len = c.len;
  j.va = c.va;
  j.rkey = c.rkey;
  resp_push(j);
  remember(ReplayEntry{true, true, c.psn, j.npkts, c.va, c.rkey, c.len, 0});
  count_rma(rma_reads_);
  count_rma(c.mr_counter);
  resp_.epsn = c.psn + static_cast<int32_t>(j.npkts);
  ++resp_.msn;
  resp_.nak_sent = NakSent::kNone;
  advance_epsn(now);
  engine_.activate(this);
  return RS::kQueued;
}

RS Qp::exec_atomic(const RespCtx& c, uint64_t now) {
  if (resp_full()) return RS::kQueued;  // dropped before it executes: repeated
  const wire::PacketView& v = c.v;
  std::atomic_ref<uint64_t> target(*reinterpret_cast<uint64_t*>(c.host));
  uint64_t orig;
  if (v.opcode == Opcode::kCompareSwap) {
    orig = v.atomic->compare.value();
    target.compare_exchange_strong(orig, v.atomic->swap_add.value());
    // On success orig still holds the compare value, which equals the old one.
  } else {
    orig = target.fetch_add(v.atomic->swap_add.value());
  }
  RespJob j;
  j.psn = c.psn;
  j.first_psn = c.psn;
  j.atomic_orig = orig;
  resp_push(j);
  remember(ReplayEntry{true, false, c.psn, 1, c.va, c.rkey, 8, orig});
  resp_.epsn = c.psn + 1;
  ++resp_.msn;
  resp_.nak_sent = NakSent::kNone;
  advance_epsn(now);
  engine_.activate(this);
  return RS::kQueued;
}

void Qp::acknowledge(const RespCtx& c, uint64_t now) {
  ++resp_.epsn;
  resp_.nak_sent = NakSent::kNone;
  ++resp_.unacked;
  resp_.ack_owed = true;
  if (c.v.bth->ack_req()) resp_.ack_req_seen = true;
  advance_epsn(now, cfg_.selective_repeat && c.v.bth->ack_req());
}

bool Qp::remote_ok(AccessError e) {
  if (e == AccessError::kOk) return true;
  engine_.counters().rkey_refused[static_cast<size_t>(e)]++;
  ctr_.rkey_refused++;
  return false;
}

void Qp::responder_error(RespState s, Psn psn, uint64_t now) {
  const size_t i = static_cast<size_t>(s) - static_cast<size_t>(kRespErrFirst);
  const RespError& e = kRespError[i < std::size(kRespError) ? i : std::size(kRespError) - 1];
  engine_.counters().resp_errors[i < std::size(kRespError) ? i : std::size(kRespError) - 1]++;
  if (e.recv_status != WcStatus::kSuccess) {
    Completion wc;
    wc.cookie = rq(rq_head_).wr.cookie;
    wc.qpn = qpn_;
    wc.op = WcOp::kRecv;
    wc.status = e.recv_status;
    wc.multi = wc.released = rq(rq_head_).wr.multi_min != 0;
    wc.offset = static_cast<uint32_t>(rq(rq_head_).used);
    // No room: the receive stays queued and is flushed (stalling until there
    // is room) when the queue pair goes to error.
    if (push_recv_completion(wc)) retire_recv();
    resp_.recv_in_use = false;
  }
  resp_.fatal_nak = FatalNak{aeth::make(aeth::kNak, e.nak_code), psn};
  send_ack(resp_.fatal_nak->syndrome, psn, now);
  set_error(e.qp_error, now);
}

void Qp::send_rnr_nak(Psn psn, bool cq_full, uint64_t now) {
  ctr_.rnr_naks_tx++;
  if (cq_full) ctr_.cq_stalls++;
  resp_.nak_sent = NakSent::kRnr;
  send_ack(aeth::make(aeth::kRnrNak, 0x0E), psn, now);
}

void Qp::send_ack(uint8_t syndrome, Psn psn, uint64_t now) {
  wire::BuildSpec& s = base_spec(Opcode::kAck, psn);
  s.syndrome = syndrome;
  s.msn = resp_.msn;
  if (!transmit(s, now)) return;
  ctr_.acks_tx++;
  if (aeth::type(syndrome) == aeth::kAck) {
    resp_.ack_owed = false;
    resp_.ack_req_seen = false;
    resp_.unacked = 0;
    clear_timer(TimerKind::kAck);
  }
}

void Qp::end_of_burst(uint64_t now) {
  if (!resp_.ack_owed || state_ != QpState::kRts) return;
  if (!resp_empty()) return;  // the ACK follows the queued responses
  if (resp_.ack_req_seen || resp_.unacked >= cfg_.ack_every) {
    send_ack(kAckSyndrome, resp_.epsn - 1, now);
  } else if (timer_deadline(TimerKind::kAck) == 0) {
    set_timer(TimerKind::kAck, now + cfg_.ack_delay_ns);
  }
  if (resp_.ack_owed) engine_.activate(this);  // TX was full: retry from progress()
}

}  // namespace dpdat::rc
