// Queue pair: construction, connection, dispatch of received packets to the
// roles, progress, timers and the error state.  The roles live in
// requester.cpp, responder.cpp, responder_replay.cpp and completer.cpp.

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
namespace aeth = wire::aeth;
using namespace detail;

std::string_view wc_status_name(WcStatus s) noexcept {
  static constexpr std::string_view kNames[] = {"success",
                                                "local-length-error",
                                                "local-protection-error",
                                                "local-qp-operation-error",
                                                "bind-error",
                                                "remote-access-error",
                                                "remote-invalid-request",
                                                "remote-operational-error",
                                                "retry-exceeded",
                                                "rnr-retry-exceeded",
                                                "flushed"};
  const auto i = static_cast<size_t>(s);
  return i < std::size(kNames) ? kNames[i] : "invalid";
}

std::string_view qp_error_name(QpError e) noexcept {
  static constexpr std::string_view kNames[] = {"none",
                                                "retry-exceeded",
                                                "rnr-retry-exceeded",
                                                "remote-access",
                                                "remote-invalid-request",
                                                "remote-operational",
                                                "local-protection",
                                                "local-length",
                                                "protocol",
                                                "destroyed"};
  const auto i = static_cast<size_t>(e);
  return i < std::size(kNames) ? kNames[i] : "invalid";
}

namespace {
// From the first timeout to the one that breaks the QP when every timeout
// waits retransmit_timeout_ns backed off (x2 per timeout, at most x64).
constexpr uint8_t kEct0 = 0x02;  // IPv4 ECN field: ECN-capable transport (0)

uint64_t fixed_retry_time(const QpConfig& cfg) {
  uint64_t t = 0;
  for (uint32_t k = 1; k <= cfg.retry_count; ++k)
    t += cfg.retransmit_timeout_ns << std::min<uint32_t>(k, 6);
  return t;
}
}  // namespace

Qp::Qp(Engine& engine, MrTable& mr, uint32_t qpn, uint32_t pz, const QpConfig& cfg,
       CompletionQueue* send_cq, CompletionQueue* recv_cq)
    : engine_(engine),
      mr_(mr),
      qpn_(qpn),
      pz_(pz),
      cfg_(cfg),
      send_cq_(send_cq),
      recv_cq_(recv_cq),
      sq_cap_(std::max<uint32_t>(cfg.sq_depth, 1)),
      rq_cap_(std::max<uint32_t>(cfg.rq_depth, 1)),
      rtt_(cfg.retransmit_timeout_ns, cfg.adaptive_rto ? cfg.rto_min_ns : cfg.retransmit_timeout_ns,
           cfg.retransmit_timeout_ns),
      cc_(cfg.cc, std::max<uint32_t>(cfg.window, 1)) {
  comp_.dead_after_ns = std::max(cfg.min_retry_time_ns, fixed_retry_time(cfg));
  // Responses in the queue at once: one per READ / atomic the peer may have
  // outstanding (its initiator depth, bounded by our replay cache) plus as
  // many replays of them.
  resp_.job_cap = static_cast<uint32_t>(std::bit_ceil(2 * replay_depth(cfg)));
}

Qp::~Qp() {
  held_sweep(/*all=*/true);
  BlockPool& pool = engine_.pool();
  sq_.release(pool);
  rq_.release(pool);
  resp_.jobs.release(pool);
}

void Qp::release_idle_rings() {
  BlockPool& pool = engine_.pool();
  if (sq_head_ == sq_tail_) sq_.release(pool);
  if (rq_head_ == rq_tail_) rq_.release(pool);
  if (resp_empty()) resp_.jobs.release(pool);
}

void Qp::resp_push(const RespJob& j) {
  if (!resp_.jobs.reserve_one(engine_.pool(), resp_.job_head, resp_.job_tail, resp_.job_cap))
    return;
  resp_at(resp_.job_tail) = j;
  ++resp_.job_tail;
}

bool Qp::set_pmtu(uint32_t pmtu) {
  if (state_ != QpState::kReset || !wire::is_valid_pmtu(pmtu)) return false;
  cfg_.pmtu = pmtu;
  return true;
}

bool Qp::connect(const PathInfo& path, Psn sq_psn, Psn rq_psn) {
  if (state_ != QpState::kReset || !wire::is_valid_pmtu(cfg_.pmtu)) return false;
  path_ = path;
  tx_spec_ = wire::BuildSpec{};
  tx_spec_.src_mac = path_.local_mac;
  tx_spec_.dst_mac = path_.peer_mac;
  tx_spec_.src_ip = path_.local_ip;
  tx_spec_.dst_ip = path_.peer_ip;
  tx_spec_.src_port = path_.udp_src_port;
  tx_spec_.dest_qp = path_.peer_qpn;
  tx_spec_.ip_csum_offload = engine_.tx_ip_csum_offload();
  req_.next_psn = sq_psn;
  comp_.acked_psn = sq_psn - 1;
  req_.max_sent_psn = sq_psn - 1;
  resp_.epsn = rq_psn;
  comp_.retries_left = cfg_.retry_count;
  comp_.first_timeout_ns = 0;
  comp_.rnr_retries_left = cfg_.rnr_retry;
  state_ = QpState::kRts;
  engine_.activate(this);  // receives may already be posted
  return true;
}

bool Qp::set_requester(Psn sq_psn, uint32_t retry_count, uint32_t rnr_retry, uint64_t timeout_ns) {
  if (state_ != QpState::kRts || sq_head_ != sq_tail_ || req_.max_sent_psn != req_.next_psn - 1 ||
      comp_.acked_psn != req_.next_psn - 1)
    return false;
  req_.next_psn = sq_psn;
  comp_.acked_psn = sq_psn - 1;
  req_.max_sent_psn = sq_psn - 1;
  cfg_.retry_count = retry_count;
  cfg_.rnr_retry = rnr_retry;
  if (timeout_ns != 0) {
    // The consumer chose the ACK timeout (verbs' local ACK timeout): its
    // retry budget alone says when the peer is dead, with no floor.
    cfg_.retransmit_timeout_ns = timeout_ns;
    cfg_.min_retry_time_ns = 0;
  }
  comp_.dead_after_ns = std::max(cfg_.min_retry_time_ns, fixed_retry_time(cfg_));
  comp_.retries_left = cfg_.retry_count;
  comp_.rnr_retries_left = cfg_.rnr_retry;
  comp_.first_timeout_ns = 0;
  return true;
}

void Qp::set_timer(TimerKind k, uint64_t deadline) {
  timer_[static_cast<size_t>(k)] = deadline;
  engine_.arm_timer(this, k, deadline);
}

wire::BuildSpec& Qp::base_spec(Opcode op, Psn psn) {
  // The path fields were set once by connect().  The builder reads only the
  // extension fields its opcode table names, and every caller sets those it
  // needs, so stale values in the others are never read; the per-packet flags
  // and the payload are reset here.  (A fresh BuildSpec per packet cost a
  // zeroing and a copy of ~130 bytes, and wide loads over the copy's narrow
  // stores stalled in build_packet().)
  wire::BuildSpec& s = tx_spec_;
  s.opcode = op;
  s.psn = psn;
  s.ack_req = false;
  s.write_more = false;
  s.se = false;
  s.payload = {};
  s.gather = {};
  s.tos = cfg_.ecn_capable && op != Opcode::kAck && op != Opcode::kAtomicAck &&
                  op != Opcode::kCnp && op != Opcode::kSack
              ? kEct0
              : 0;
  return s;
}

bool Qp::transmit(const wire::BuildSpec& spec, uint64_t now) {
  Frame* f = engine_.tx_frame();
  if (f == nullptr) {
    ctr_.tx_backpressure++;
    return false;
  }
  const auto r = wire::build_packet(std::span<uint8_t>(f->data, f->cap), spec, cfg_.pmtu);
  if (!r.ok()) {
    // Only reachable through an internal inconsistency: never loop on it.
    engine_.tx_abort(f);
    assert(false && "build_packet refused a frame the QP built");
    set_error(QpError::kProtocol, now);
    return false;
  }
  engine_.tx_commit(f, static_cast<uint32_t>(r.len), spec.ip_csum_offload ? kFrameTxIpCsum : 0);
  ctr_.tx_packets++;
  cc_on_sent(spec, static_cast<uint32_t>(r.len), now);
  return true;
}

size_t Qp::gather(const SendWqe& w, uint64_t offset, uint64_t len,
                  std::array<std::span<const uint8_t>, kMaxSge>& out) const {
  size_t n = 0;
  for (uint32_t i = 0; i < w.wr.num_sge && len > 0; ++i) {
    const uint64_t sl = w.wr.sge[i].length;
    if (offset >= sl) {
      offset -= sl;
      continue;
    }
    const uint64_t take = std::min(sl - offset, len);
    out[n++] = std::span<const uint8_t>(w.host[i] + offset, take);
    len -= take;
    offset = 0;
  }
  return n;
}

void Qp::scatter(const std::array<uint8_t*, kMaxSge>& host, const Sge* sge, uint32_t nsge,
                 uint64_t offset, std::span<const uint8_t> data) {
  const uint8_t* src = data.data();
  uint64_t len = data.size();
  for (uint32_t i = 0; i < nsge && len > 0; ++i) {
    const uint64_t sl = sge[i].length;
    if (offset >= sl) {
      offset -= sl;
      continue;
    }
    const uint64_t take = std::min(sl - offset, len);
    std::memcpy(host[i] + offset, src, take);
    src += take;
    len -= take;
    offset = 0;
  }
}

// ============================================================ dispatch

void Qp::on_packet(const wire::PacketView& v, uint64_t now) {
  ctr_.rx_packets++;
  if (v.ip->src.value() != path_.peer_ip) {  // not our peer: spoofed or stray
    engine_.counters().rx_foreign_src++;
    return;
  }
  if (state_ != QpState::kRts) {
    // A requester retransmitting the request we refused lost our NAK: repeat it.
    if (state_ == QpState::kError && resp_.fatal_nak && v.info->is(wire::op::kRequest) &&
        v.bth->psn() == resp_.fatal_nak->psn)
      send_ack(resp_.fatal_nak->syndrome, resp_.fatal_nak->psn, now);
    return;
  }
  if ((v.ip->tos & 3u) == 3u) cc_on_ce(now);  // ECN CE (RFC 3168)
  const wire::OpInfo& info = *v.info;
  if (info.is(wire::op::kRequest)) {
    on_request(v, now);
    return;
  }
  if (v.opcode == Opcode::kCnp) {
    cc_on_cnp(now);
    return;
  }
  on_response(v, now);
}

bool Qp::progress(uint64_t now) {
  complete_in_order(now);
  if (state_ != QpState::kRts) {
    flush_recvs();
    release_idle_rings();
    return sq_head_ != sq_tail_ || rq_head_ != rq_tail_;  // stalled flushes
  }
  bool more = respond_emit(now);
  more = emit_requests(now) || more;
  release_idle_rings();
  return more || (sq_head_ != sq_tail_ && sq(sq_head_).done);
}

void Qp::on_timer(TimerKind kind, uint64_t now) {
  const auto k = static_cast<size_t>(kind);
  timer_[k] = 0;
  if (state_ != QpState::kRts) return;
  switch (kind) {
    case TimerKind::kRetransmit:
      on_retransmit_timeout(now);
      return;
    case TimerKind::kProbe:
      if (has_outstanding() && !req_.rnr_waiting && !req_.tlp_sent)
        send_probe(srs_.hole.value_or(req_.max_sent_psn), now);
      return;
    case TimerKind::kRnr:
      req_.rnr_waiting = false;
      rewind_to(req_.rnr_psn, now);
      arm_retransmit(now);
      engine_.activate(this);
      return;
    case TimerKind::kAck:
      if (resp_.ack_owed && resp_empty()) send_ack(kAckSyndrome, resp_.epsn - 1, now);
      if (resp_.ack_owed) engine_.activate(this);
      return;
    case TimerKind::kPace:  // the engine activates the QP: it emits again
    case TimerKind::kCount:
      return;
  }
}

bool Qp::take_recv(Completion* wc, uint64_t len) {
  RecvWqe& r = rq(rq_head_);
  if (r.wr.multi_min == 0) return true;
  wc->multi = true;
  wc->offset = static_cast<uint32_t>(r.used);
  r.used += len;
  wc->released = r.capacity - r.used < r.wr.multi_min;
  return wc->released;
}

void Qp::flush_recvs() {
  while (rq_head_ < rq_tail_) {
    Completion c;
    c.cookie = rq(rq_head_).wr.cookie;
    c.qpn = qpn_;
    c.op = WcOp::kRecv;
    c.status = WcStatus::kFlushed;
    c.multi = c.released = rq(rq_head_).wr.multi_min != 0;
    c.offset = static_cast<uint32_t>(rq(rq_head_).used);
    if (recv_cq_ != nullptr && !recv_cq_->push(c)) {
      ctr_.cq_stalls++;
      return;  // CQ full: progress() retries, nothing is dropped
    }
    retire_recv();
  }
}

bool Qp::has_pending_work() const {
  return sq_head_ != sq_tail_ || !resp_empty() || resp_.ack_owed;
}

void Qp::ack_received(uint64_t now) {
  if (state_ != QpState::kRts || !resp_empty() || resp_.msn == 0) return;  // nothing / in order
  send_ack(kAckSyndrome, resp_.epsn - 1, now);
}

void Qp::set_error(QpError why, uint64_t now) {
  if (state_ == QpState::kError) return;
  // Torn down locally (disconnect, free): acknowledge what was received and
  // completed here first, or the peer, whose ACK was being coalesced, would
  // retransmit into a closed queue pair and fail a request that succeeded.
  if (why == QpError::kDestroyed && state_ == QpState::kRts && resp_.ack_owed && resp_empty())
    send_ack(kAckSyndrome, resp_.epsn - 1, now);
  state_ = QpState::kError;
  error_ = why;
  held_sweep(/*all=*/true);
  engine_.note_error(qpn_);
  for (uint64_t i = sq_head_; i < sq_tail_; ++i) {
    SendWqe& w = sq(i);
    if (!w.done) {
      w.done = true;
      w.status = WcStatus::kFlushed;
      // A flushed bind never executes: release the MW it had reserved.
      if (w.wr.op == WrOp::kBind) mr_.clear_bind_pending(w.wr.mw_handle);
    }
  }
  req_.rd_atomic_outstanding = 0;
  flush_recvs();
  resp_.job_head = resp_.job_tail;
  resp_.ack_owed = false;
  for (auto& t : timer_) t = 0;
  complete_in_order(now);
  engine_.activate(this);
}

}  // namespace dpdat::rc
