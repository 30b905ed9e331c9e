// Responder output that must leave in PSN order (IBA 9.7.5.1.4): READ
// responses and atomic ACKs from the response ring, and the replay cache
// that answers duplicate READ / atomic requests (IBA 9.7.5.1.3): a READ is
// re-executed from the requested PSN, an atomic's recorded result is sent
// again (it executes exactly once).

#include <algorithm>

#include "rc/engine/engine.hpp"
#include "rc/qp/qp.hpp"
#include "rc/qp/qp_util.hpp"

namespace dpdat::rc {

using wire::Opcode;
using wire::Psn;
namespace aeth = wire::aeth;
using namespace detail;

void Qp::remember(const ReplayEntry& e) {
  // Sized at the first READ / atomic served (most QPs never serve one).
  if (resp_.replay.empty()) resp_.replay.resize(replay_depth(cfg_));
  resp_.replay[resp_.replay_next] = e;
  resp_.replay_next = (resp_.replay_next + 1) % static_cast<uint32_t>(resp_.replay.size());
}

void Qp::handle_duplicate(const wire::PacketView& v, uint64_t now) {
  ctr_.duplicates_rx++;
  const Psn psn = v.bth->psn();
  const bool is_read = v.opcode == Opcode::kReadRequest;
  const bool is_atom = v.opcode == Opcode::kCompareSwap || v.opcode == Opcode::kFetchAdd;
  if (!is_read && !is_atom) {
    // SEND / WRITE already placed: acknowledge again, never place twice.
    resp_.ack_owed = true;
    resp_.ack_req_seen = true;
    return;
  }
  for (const ReplayEntry& e : resp_.replay) {
    if (!e.valid || e.is_read != is_read) continue;
    const int32_t d = Psn::diff(psn, e.psn);
    if (d < 0 || d >= static_cast<int32_t>(e.npkts)) continue;
    if (is_atom) {
      for (uint64_t i = resp_.job_head; i < resp_.job_tail; ++i)
        if (!resp_at(i).is_read && resp_at(i).psn == psn) return;  // its ACK is still queued
      if (resp_full()) return;  // dropped: the requester repeats it
      RespJob j;
      j.psn = psn;
      j.first_psn = psn;
      j.atomic_orig = e.atomic_orig;
      resp_push(j);
      ctr_.atomic_replays++;
    } else {
      // Re-execute the READ from the requested PSN on (IBA 9.7.5.1.3), over
      // the range the request names when it lies within the original (a
      // selective re-request), else to the original's end.
      const auto from = static_cast<uint32_t>(d);
      uint32_t to = e.npkts;
      const uint64_t off = uint64_t{from} * cfg_.pmtu;
      const uint64_t rlen = v.reth->dma_len.value();
      if (v.reth->va.value() == e.va + off && off + rlen <= e.len &&
          (rlen % cfg_.pmtu == 0 || off + rlen == e.len))
        to = std::min(e.npkts, from + pkts_for(rlen, cfg_.pmtu));
      AccessGrant g;
      if (check_rdma(e.rkey, e.va, e.len, Access::kRemoteRead, &g) != AccessError::kOk) {
        DPDAT_QP_TRACE_POINT(QpRole::kResponder, RespState::kErrRkey, psn, now);
        responder_error(RespState::kErrRkey, psn, now);
        return;
      }
      for (uint64_t i = resp_.job_head; i < resp_.job_tail; ++i) {
        const RespJob& j = resp_at(i);
        // A queued job that has still to send the whole range answers it.
        if (j.is_read && j.first_psn == e.psn && j.next_pkt <= from && to <= j.end_pkt) return;
      }
      if (resp_full()) return;  // dropped: the requester repeats it
      RespJob j;
      j.is_read = true;
      j.first_psn = e.psn;
      j.psn = psn;
      j.next_pkt = from;
      j.start_pkt = from;
      j.end_pkt = to;
      j.npkts = e.npkts;
      j.len = e.len;
      j.va = e.va;
      j.rkey = e.rkey;
      j.replay = true;
      if (cfg_.selective_repeat)
        resp_push_replay(j);
      else
        resp_push(j);
      ctr_.read_replays++;
    }
    engine_.activate(this);
    return;
  }
  // Older than the replay cache: let the requester time out and give up.
}

// Served in arrival order, a re-requested range would wait behind every
// READ queued after the one that lost it (up to max_rd_atomic of them), and
// the requester's oldest READ — which holds up its later ones — with it.  It
// goes first instead, but never before a job that has begun to send: the
// requester judges a response missing once a response to a later request
// arrived (Qp::rd_judge), which holds as long as a job, once begun, is sent
// whole before the jobs behind it, and re-requests keep their order.  A
// fresh READ that has not begun has sent nothing the requester could judge.
void Qp::resp_push_replay(const RespJob& j) {
  const uint64_t before = resp_.job_tail;
  resp_push(j);
  if (resp_.job_tail == before) return;  // dropped: the requester repeats it
  uint64_t k = resp_.job_head;
  for (; k < before; ++k) {
    const RespJob& q = resp_at(k);
    const bool begun = q.is_read && q.next_pkt > q.start_pkt;
    if (!begun && !q.replay) break;
  }
  for (uint64_t i = before; i > k; --i) resp_at(i) = resp_at(i - 1);
  resp_at(k) = j;
}

bool Qp::respond_emit(uint64_t now) {
  uint32_t budget = cfg_.read_resp_budget;
  while (!resp_empty() && state_ == QpState::kRts) {
    RespJob& j = resp_at(resp_.job_head);
    if (!j.is_read) {
      wire::BuildSpec& s = base_spec(Opcode::kAtomicAck, j.psn);
      s.syndrome = kAckSyndrome;
      s.msn = resp_.msn;
      s.atomic_orig = j.atomic_orig;
      if (!transmit(s, now)) return true;
      ++resp_.job_head;
      continue;
    }
    while (j.next_pkt < j.end_pkt) {
      if (budget == 0) return true;
      if (!cc_may_send(now)) return false;  // the pace timer resumes it
      const Pos p = pos_of(j.next_pkt - j.start_pkt, j.end_pkt - j.start_pkt);
      const uint64_t off = uint64_t{j.next_pkt} * cfg_.pmtu;
      const uint64_t len = std::min<uint64_t>(cfg_.pmtu, j.len - off);
      wire::BuildSpec& s = base_spec(seg_opcode(Seg::kReadResp, p), j.psn);
      s.syndrome = kAckSyndrome;
      s.msn = resp_.msn;
      // Re-check the rkey every packet: a READ response may be emitted (or
      // replayed) long after the request, and the region may have been freed
      // or re-bound since; never read memory the key no longer grants.
      AccessGrant g;
      if (check_rdma(j.rkey, j.va + off, len, Access::kRemoteRead, &g) != AccessError::kOk) {
        if (j.replay) {
          // A replay for a requester that may already hold every byte (its
          // consumer then freed the region): drop it; if the requester still
          // waits, its retry budget ends the connection.  (Popped below.)
          break;
        }
        DPDAT_QP_TRACE_POINT(QpRole::kResponder, RespState::kErrRkey, j.psn, now);
        responder_error(RespState::kErrRkey, j.psn, now);
        return false;
      }
      s.payload = std::span<const uint8_t>(g.host, len);
      if (!transmit(s, now)) return true;
      --budget;
      ++j.next_pkt;
      ++j.psn;
    }
    ++resp_.job_head;
  }
  if (resp_.ack_owed && state_ == QpState::kRts &&
      (resp_.ack_req_seen || resp_.unacked >= cfg_.ack_every)) {
    send_ack(kAckSyndrome, resp_.epsn - 1, now);
    if (resp_.ack_owed) return true;
  }
  return false;
}

}  // namespace dpdat::rc
