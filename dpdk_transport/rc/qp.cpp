#include "qp.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "engine.hpp"

namespace dpdat::rc {

using wire::Opcode;
using wire::Psn;
namespace aeth = wire::aeth;

namespace {

uint32_t pkts_for(uint64_t len, uint32_t pmtu) {
  return len == 0 ? 1u : static_cast<uint32_t>((len + pmtu - 1) / pmtu);
}

bool is_rd_atomic(WrOp op) {
  return op == WrOp::kRead || op == WrOp::kCompareSwap || op == WrOp::kFetchAdd;
}
bool is_send_write(WrOp op) {
  return op == WrOp::kSend || op == WrOp::kSendImm || op == WrOp::kWrite || op == WrOp::kWriteImm;
}

WcOp wc_op_of(WrOp op) {
  switch (op) {
    case WrOp::kSend:
    case WrOp::kSendImm:
      return WcOp::kSend;
    case WrOp::kWrite:
    case WrOp::kWriteImm:
      return WcOp::kWrite;
    case WrOp::kRead:
      return WcOp::kRead;
    case WrOp::kCompareSwap:
      return WcOp::kCompareSwap;
    case WrOp::kFetchAdd:
      return WcOp::kFetchAdd;
    case WrOp::kBind:
      return WcOp::kBind;
  }
  return WcOp::kSend;
}

// A work request without the SGEs past num_sge (at most kMaxSge: checked at
// posting): a whole-struct copy moved all kMaxSge of them.
template <typename Wr>
void copy_wr(Wr& d, const Wr& s) {
  static_assert(std::is_trivially_copyable_v<Wr> && std::is_standard_layout_v<Wr>);
  constexpr size_t kSgeBegin = offsetof(Wr, sge), kSgeEnd = kSgeBegin + sizeof(s.sge);
  auto* dp = reinterpret_cast<unsigned char*>(&d);
  const auto* sp = reinterpret_cast<const unsigned char*>(&s);
  std::memcpy(dp, sp, kSgeBegin);
  std::memcpy(dp + kSgeEnd, sp + kSgeEnd, sizeof(Wr) - kSgeEnd);
  const uint32_t n = s.num_sge < kMaxSge ? s.num_sge : kMaxSge;
  for (uint32_t i = 0; i < n; ++i) d.sge[i] = s.sge[i];
}

// Position of packet `idx` of `n` in a message.
enum class Pos : uint8_t { kOnly, kFirst, kMiddle, kLast };
Pos pos_of(uint32_t idx, uint32_t n) {
  if (n == 1) return Pos::kOnly;
  if (idx == 0) return Pos::kFirst;
  return idx + 1 == n ? Pos::kLast : Pos::kMiddle;
}

// Segment opcodes by message kind, position and immediate data, indexed
// [kind][pos][imm] with Pos order {only, first, middle, last}.
enum class Seg : uint8_t { kSend, kWrite, kReadResp };
constexpr Opcode kSegOpcode[3][4][2] = {{{Opcode::kSendOnly, Opcode::kSendOnlyImm},
                                         {Opcode::kSendFirst, Opcode::kSendFirst},
                                         {Opcode::kSendMiddle, Opcode::kSendMiddle},
                                         {Opcode::kSendLast, Opcode::kSendLastImm}},
                                        {{Opcode::kWriteOnly, Opcode::kWriteOnlyImm},
                                         {Opcode::kWriteFirst, Opcode::kWriteFirst},
                                         {Opcode::kWriteMiddle, Opcode::kWriteMiddle},
                                         {Opcode::kWriteLast, Opcode::kWriteLastImm}},
                                        {{Opcode::kReadRespOnly, Opcode::kReadRespOnly},
                                         {Opcode::kReadRespFirst, Opcode::kReadRespFirst},
                                         {Opcode::kReadRespMiddle, Opcode::kReadRespMiddle},
                                         {Opcode::kReadRespLast, Opcode::kReadRespLast}}};
constexpr Opcode seg_opcode(Seg k, Pos p, bool imm = false) {
  return kSegOpcode[static_cast<size_t>(k)][static_cast<size_t>(p)][imm ? 1 : 0];
}
static_assert(seg_opcode(Seg::kWrite, Pos::kLast, true) == Opcode::kWriteLastImm);
static_assert(seg_opcode(Seg::kSend, Pos::kOnly, true) == Opcode::kSendOnlyImm);

// IBA 9.7.5.2.4/9.9: a NAK code received maps to a requester completion status.
WcStatus status_of_nak(uint8_t code) {
  switch (code) {
    case aeth::kNakRemoteAccessError:
      return WcStatus::kRemoteAccessError;
    case aeth::kNakRemoteOperationalError:
      return WcStatus::kRemoteOperationalError;
    default:
      return WcStatus::kRemoteInvalidRequest;
  }
}
QpError qp_error_of_nak(uint8_t code) {
  switch (code) {
    case aeth::kNakRemoteAccessError:
      return QpError::kRemoteAccess;
    case aeth::kNakRemoteOperationalError:
      return QpError::kRemoteOperational;
    default:
      return QpError::kRemoteInvalidRequest;
  }
}

}  // namespace

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
      sq_(std::bit_ceil(uint64_t{sq_cap_})),
      rq_(std::bit_ceil(uint64_t{rq_cap_})),
      replay_(std::max<uint32_t>({cfg.replay_depth, cfg.max_rd_atomic, 1})) {}

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
  next_psn_ = sq_psn;
  acked_psn_ = sq_psn - 1;
  epsn_ = rq_psn;
  retries_left_ = cfg_.retry_count;
  first_timeout_ns_ = 0;
  rnr_retries_left_ = cfg_.rnr_retry;
  state_ = QpState::kRts;
  engine_.activate(this);  // receives may already be posted
  return true;
}

// ============================================================== posting

Qp::PostResult Qp::post_send(const SendWr& wr) {
  if (state_ != QpState::kRts) return PostResult::kInvalidState;
  if (sq_tail_ - sq_head_ >= sq_cap_) return PostResult::kQueueFull;
  if (wr.num_sge > kMaxSge) return PostResult::kInvalidWr;
  uint64_t total = 0;
  for (uint32_t i = 0; i < wr.num_sge; ++i) {
    if (wr.sge[i].length > (uint64_t{1} << 31) || total + wr.sge[i].length > (uint64_t{1} << 31))
      return PostResult::kInvalidWr;  // messages are limited to 2 GiB
    total += wr.sge[i].length;
  }
  uint32_t npkts = 0;
  switch (wr.op) {
    case WrOp::kSend:
    case WrOp::kSendImm:
    case WrOp::kWrite:
    case WrOp::kWriteImm:
    case WrOp::kRead:
      npkts = pkts_for(total, cfg_.pmtu);
      break;
    case WrOp::kCompareSwap:
    case WrOp::kFetchAdd:
      if (total != 8) return PostResult::kInvalidWr;  // the original value lands here
      npkts = 1;
      break;
    case WrOp::kBind:
      // The RMR is ours until the bind executes (do_bind clears the mark).
      if (!mr_.mark_bind_pending(wr.rmr_handle, qpn_)) return PostResult::kInvalidState;
      npkts = 0;
      break;
    default:
      return PostResult::kInvalidWr;
  }
  SendWqe& w = sq(sq_tail_);
  // Field by field: 'w = SendWqe{}; w.wr = wr' zeroed and then copied ~400
  // bytes per work request (a 'rep stos' and a 'rep movsq').
  copy_wr(w.wr, wr);
  w.total_len = total;
  w.first_psn = Psn{};
  w.npkts = npkts;
  w.sent = 0;
  w.resp_pkts = 0;
  w.started = false;
  w.rd_seq = 0;
  w.done = false;
  w.status = WcStatus::kSuccess;
  w.result_rmr_context = 0;
  w.host.fill(nullptr);
  ++sq_tail_;
  engine_.activate(this);
  return PostResult::kOk;
}

Qp::PostResult Qp::post_recv(const RecvWr& wr) {
  if (state_ == QpState::kError || srq_ != nullptr) return PostResult::kInvalidState;
  if (rq_tail_ - rq_head_ >= rq_cap_) return PostResult::kQueueFull;
  if (wr.num_sge > kMaxSge) return PostResult::kInvalidWr;
  uint64_t capacity = 0;
  for (uint32_t i = 0; i < wr.num_sge; ++i) {
    if (wr.sge[i].length > (uint64_t{1} << 31)) return PostResult::kInvalidWr;
    capacity += wr.sge[i].length;
  }
  RecvWqe& r = rq(rq_tail_);
  copy_wr(r.wr, wr);
  r.capacity = capacity;
  r.host.fill(nullptr);
  ++rq_tail_;
  return PostResult::kOk;
}

bool Qp::attach_srq(Srq* srq) {
  if (state_ != QpState::kReset || rq_head_ != rq_tail_) return false;
  srq_ = srq;
  return true;
}

bool Qp::have_recv() {
  if (rq_head_ != rq_tail_) return true;
  if (srq_ == nullptr) return false;
  RecvWr wr;
  if (!srq_->take(&wr)) return false;
  RecvWqe& r = rq(rq_tail_);
  copy_wr(r.wr, wr);
  r.capacity = 0;
  for (uint32_t i = 0; i < wr.num_sge; ++i) r.capacity += wr.sge[i].length;
  r.host.fill(nullptr);
  ++rq_tail_;
  srq_peak_ = std::max(srq_peak_, static_cast<uint32_t>(rq_tail_ - rq_head_));
  return true;
}

bool Qp::complete_rejected(bool is_send, uint64_t cookie) {
  Completion c;
  c.cookie = cookie;
  c.qpn = qpn_;
  c.op = is_send ? WcOp::kSend : WcOp::kRecv;
  c.status = WcStatus::kLocalQpOperationError;
  CompletionQueue* cq = is_send ? send_cq_ : recv_cq_;
  if (cq == nullptr) return true;  // nobody to tell
  if (cq->push(c)) return true;
  ctr_.cq_stalls++;
  return false;
}

// ========================================================= shared helpers

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
  s.se = false;
  s.payload = {};
  s.gather = {};
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

// ============================================================ requester

Psn Qp::una_psn() const {
  for (uint64_t i = sq_head_; i < sq_tail_; ++i) {
    const SendWqe& w = sq(i);
    if (w.done) continue;
    if (!w.started) return next_psn_;
    switch (w.wr.op) {
      case WrOp::kRead:
        return w.first_psn + static_cast<int32_t>(w.resp_pkts);
      case WrOp::kCompareSwap:
      case WrOp::kFetchAdd:
        return w.first_psn;
      case WrOp::kBind:
        continue;
      default: {
        const Psn a = acked_psn_ + 1;
        return a > w.first_psn ? a : w.first_psn;
      }
    }
  }
  return next_psn_;
}

bool Qp::has_outstanding() const {
  for (uint64_t i = sq_head_; i < sq_tail_; ++i) {
    const SendWqe& w = sq(i);
    if (!w.started) return false;
    if (!w.done && w.wr.op != WrOp::kBind) return true;
  }
  return false;
}

void Qp::arm_retransmit(uint64_t now) {
  if (state_ == QpState::kRts && has_outstanding())
    // Exponential back-off over consecutive timeouts without progress (capped
    // at 64x), so a slow peer or a slow host is not buried in retransmissions.
    set_timer(TimerKind::kRetransmit,
              now + (cfg_.retransmit_timeout_ns << std::min<uint32_t>(backoff_, 6)));
  else
    clear_timer(TimerKind::kRetransmit);
}

bool Qp::start_wqe(SendWqe& w, uint64_t now) {
  const Access acc =
      (w.wr.op == WrOp::kRead || w.wr.op == WrOp::kCompareSwap || w.wr.op == WrOp::kFetchAdd)
          ? Access::kLocalWrite
          : Access::kLocalRead;
  for (uint32_t i = 0; i < w.wr.num_sge; ++i) {
    const Sge& g = w.wr.sge[i];
    if (g.length == 0) continue;
    AccessGrant grant;
    if (mr_.check_local(g.lmr_context, pz_, g.va, g.length, acc, &grant) != AccessError::kOk) {
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
  w.first_psn = next_psn_;
  next_psn_ += static_cast<int32_t>(w.npkts);
  w.started = true;
  w.sent = 0;
  if (is_rd_atomic(w.wr.op)) {
    rd_atomic_outstanding_++;
    w.rd_seq = rd_seq_next_++;
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
    if (!w.done && is_rd_atomic(w.wr.op)) return rd_seq_next_ - w.rd_seq < cfg_.max_rd_atomic;
  }
  return true;
}

bool Qp::sr_packet(const SendWqe& w) const {
  return cfg_.selective_repeat && w.wr.op == WrOp::kWrite;
}

bool Qp::emit_packet(const SendWqe& w, uint32_t idx, uint64_t now) {
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
      // (Re-)request from the first response not yet placed (IBA 9.7.4.1.4).
      const uint64_t off = uint64_t{idx} * pmtu;
      sp = &base_spec(Opcode::kReadRequest, psn);
      sp->va = w.wr.remote_va + off;
      sp->rkey = w.wr.rkey;
      sp->dma_len = static_cast<uint32_t>(w.total_len - off);
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
  const int32_t in_flight = Psn::diff(psn, una_psn()) + 1;
  s.ack_req =
      last || ++since_ack_req_ >= cfg_.ack_every || in_flight >= static_cast<int32_t>(cfg_.window);
  if (!transmit(s, now)) return false;
  if (s.ack_req) since_ack_req_ = 0;
  if (timer_deadline(TimerKind::kRetransmit) == 0) arm_retransmit(now);
  return true;
}

bool Qp::emit_one(SendWqe& w, uint64_t now) {
  if (!emit_packet(w, w.sent, now)) return false;
  w.sent = w.wr.op == WrOp::kRead ? w.npkts : w.sent + 1;
  return true;
}

// Selective repeat: resend single packets the responder reported missing.
bool Qp::emit_sr_resends(uint64_t now) {
  while (!sr_resend_.empty()) {
    const Psn psn = sr_resend_.front();
    bool found = false;
    for (uint64_t i = sq_head_; i < sq_tail_ && !found; ++i) {
      const SendWqe& w = sq(i);
      if (!w.started) break;
      if (w.done || !sr_packet(w)) continue;
      const int32_t d = Psn::diff(psn, w.first_psn);
      if (d < 0 || d >= static_cast<int32_t>(w.npkts)) continue;
      found = true;
      if (static_cast<uint32_t>(d) >= w.sent) break;  // not sent yet: goes out in order anyway
      if (Psn::diff(psn, acked_psn_) <= 0) break;     // acknowledged meanwhile
      if (!emit_packet(w, static_cast<uint32_t>(d), now)) return false;
      ctr_.sr_resends++;
    }
    sr_resend_.erase(sr_resend_.begin());
  }
  return true;
}

bool Qp::emit_requests(uint64_t now) {
  if (state_ == QpState::kRts && !rnr_waiting_ && !emit_sr_resends(now)) return true;
  while (state_ == QpState::kRts && !rnr_waiting_ && sq_emit_ < sq_tail_) {
    SendWqe& w = sq(sq_emit_);
    if (!w.started) {
      // Every WR after an RMR bind waits until the bind has completed
      // (dat_rmr_bind: the bind completes in order and fences later DTOs).
      if (last_bind_end_ > sq_head_) return false;
      if (w.wr.op == WrOp::kBind) {
        w.started = true;
        w.done = true;
        const BindError be = mr_.check_bind(w.wr.rmr_handle, w.wr.bind_lmr, w.wr.bind_va,
                                            w.wr.bind_len, w.wr.bind_privileges, pz_, qpn_);
        if (be == BindError::kOk) {
          w.result_rmr_context = mr_.do_bind(w.wr.rmr_handle, w.wr.bind_lmr, w.wr.bind_va,
                                             w.wr.bind_len, w.wr.bind_privileges);
        } else {
          mr_.clear_bind_pending(w.wr.rmr_handle);
          w.status = WcStatus::kBindError;
        }
        last_bind_end_ = sq_emit_ + 1;
        ++sq_emit_;
        complete_in_order(now);
        continue;
      }
      if ((w.wr.flags & wr_flag::kFence) != 0 && rd_atomic_outstanding_ > 0) return false;
      if (is_rd_atomic(w.wr.op) && !rd_atomic_room()) return false;
      if (Psn::diff(next_psn_, una_psn()) >= static_cast<int32_t>(cfg_.window)) return false;
      if (!start_wqe(w, now)) return false;
    }
    if (!w.done) {
      while (w.sent < w.npkts) {
        const Psn psn = w.first_psn + static_cast<int32_t>(w.sent);
        if (Psn::diff(psn, una_psn()) >= static_cast<int32_t>(cfg_.window)) return false;
        if (!emit_one(w, now)) return state_ == QpState::kRts;  // TX back-pressure
      }
    }
    ++sq_emit_;
  }
  return false;
}

void Qp::rewind_to(Psn psn, uint64_t now) {
  // Go-back-N: resend from the WR that holds `psn`.
  sr_resend_.clear();
  for (uint64_t i = sq_head_; i < sq_tail_; ++i) {
    SendWqe& w = sq(i);
    if (!w.started) break;
    if (w.done || w.wr.op == WrOp::kBind) continue;
    const int32_t d = Psn::diff(psn, w.first_psn);
    if (d >= static_cast<int32_t>(w.npkts)) continue;
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
    sq_emit_ = std::min(sq_emit_, i);
    ctr_.retransmits++;
    engine_.activate(this);
    (void)now;
    return;
  }
}

void Qp::note_acked(Psn psn, uint64_t now) {
  if (Psn::diff(psn, acked_psn_) <= 0) return;  // old news
  if (Psn::diff(psn, next_psn_) >= 0) return;   // acks something never sent
  acked_psn_ = psn;
  retries_left_ = cfg_.retry_count;
  first_timeout_ns_ = 0;
  backoff_ = 0;
  rnr_retries_left_ = cfg_.rnr_retry;
  // An ACK beyond a READ / atomic whose response is missing means the
  // response was lost (IBA 9.7.5.1.5 "implied NAK"): ask again.
  for (uint64_t i = sq_head_; i < sq_tail_; ++i) {
    SendWqe& w = sq(i);
    if (!w.started) break;
    if (w.done || !is_rd_atomic(w.wr.op)) continue;
    const Psn last = w.first_psn + static_cast<int32_t>(w.npkts - 1);
    if (Psn::diff(psn, last) >= 0) rewind_to(w.first_psn + static_cast<int32_t>(w.resp_pkts), now);
    break;
  }
  complete_in_order(now);
  arm_retransmit(now);
  engine_.activate(this);
}

void Qp::fail_wqe_at(Psn psn, WcStatus st, QpError why, uint64_t now) {
  for (uint64_t i = sq_head_; i < sq_tail_; ++i) {
    SendWqe& w = sq(i);
    if (!w.started) break;
    if (w.done || w.wr.op == WrOp::kBind) continue;
    if (Psn::diff(psn, w.first_psn) < static_cast<int32_t>(w.npkts)) {
      w.done = true;
      w.status = st;
      if (is_rd_atomic(w.wr.op) && rd_atomic_outstanding_ > 0) rd_atomic_outstanding_--;
      break;
    }
  }
  set_error(why, now);
}

void Qp::on_ack_packet(const wire::PacketView& v, uint64_t now) {
  const Psn psn = v.bth->psn();
  const uint8_t syn = v.aeth->syndrome;
  ctr_.acks_rx++;
  switch (aeth::type(syn)) {
    case aeth::kAck:
      note_acked(psn, now);
      return;
    case aeth::kRnrNak:
      ctr_.rnr_naks_rx++;
      if (Psn::diff(psn, una_psn()) < 0 || Psn::diff(psn, next_psn_) >= 0) return;  // stale
      note_acked(psn - 1, now);
      if (cfg_.rnr_retry != kRnrRetryInfinite) {
        if (rnr_retries_left_ == 0) {
          fail_wqe_at(psn, WcStatus::kRnrRetryExceeded, QpError::kRnrRetryExceeded, now);
          return;
        }
        rnr_retries_left_--;
      }
      rnr_waiting_ = true;
      rnr_psn_ = psn;
      clear_timer(TimerKind::kRetransmit);
      set_timer(TimerKind::kRnr, now + cfg_.rnr_delay_ns);
      return;
    case aeth::kNak: {
      const uint8_t code = aeth::value(syn);
      if (Psn::diff(psn, una_psn()) < 0 || Psn::diff(psn, next_psn_) >= 0) return;  // stale
      note_acked(psn - 1, now);
      if (code == aeth::kNakPsnSeqError) {
        ctr_.seq_naks_rx++;
        if (cfg_.selective_repeat) {
          for (uint64_t i = sq_head_; i < sq_tail_; ++i) {
            const SendWqe& w = sq(i);
            if (!w.started) break;
            if (w.done || w.wr.op == WrOp::kBind) continue;
            const int32_t d = Psn::diff(psn, w.first_psn);
            if (d < 0 || d >= static_cast<int32_t>(w.npkts)) continue;
            if (sr_packet(w)) {
              // The responder kept what followed the hole: resend the hole only.
              if (sr_resend_.size() < cfg_.window) sr_resend_.push_back(psn);
              engine_.activate(this);
              return;
            }
            break;
          }
        }
        rewind_to(psn, now);
        arm_retransmit(now);
        return;
      }
      fail_wqe_at(psn, status_of_nak(code), qp_error_of_nak(code), now);
      return;
    }
    default:
      ctr_.bad_responses++;
      return;  // reserved syndrome type
  }
}

void Qp::on_read_response(const wire::PacketView& v, uint64_t now) {
  const Psn psn = v.bth->psn();
  for (uint64_t i = sq_head_; i < sq_tail_; ++i) {
    SendWqe& w = sq(i);
    if (!w.started) break;
    if (w.done || w.wr.op != WrOp::kRead) continue;
    const int32_t d = Psn::diff(psn, w.first_psn);
    if (d < 0 || d >= static_cast<int32_t>(w.npkts)) continue;
    const Psn expected = w.first_psn + static_cast<int32_t>(w.resp_pkts);
    const int32_t gap = Psn::diff(psn, expected);
    if (gap < 0) {
      ctr_.duplicates_rx++;
      return;
    }
    if (gap > 0) {
      // Responses were lost: re-request from the first missing one, once.
      ctr_.out_of_order_rx++;
      if (!read_gap_pending_ || !(read_gap_psn_ == expected)) {
        read_gap_pending_ = true;
        read_gap_psn_ = expected;
        note_acked(w.first_psn - 1, now);
        rewind_to(expected, now);
      }
      return;
    }
    const Pos p = pos_of(w.resp_pkts, w.npkts);
    const Opcode want = seg_opcode(Seg::kReadResp, p);
    const uint64_t off = uint64_t{w.resp_pkts} * cfg_.pmtu;
    const uint64_t want_len = std::min<uint64_t>(cfg_.pmtu, w.total_len - off);
    if (v.opcode != want || v.payload.size() != want_len) {
      ctr_.bad_responses++;
      return;
    }
    scatter(w.host, w.wr.sge, w.wr.num_sge, off, v.payload);
    w.resp_pkts++;
    read_gap_pending_ = false;
    if (w.resp_pkts == w.npkts) finish_rd_atomic(w);
    after_response(psn, now);
    return;
  }
  ctr_.duplicates_rx++;  // no READ expects it: a late duplicate
}

void Qp::finish_rd_atomic(SendWqe& w) {
  w.done = true;
  if (rd_atomic_outstanding_ > 0) rd_atomic_outstanding_--;
}

// A READ response or atomic ACK made progress; it also acknowledges every
// earlier request (IBA 9.7.5.1.3), and makes room for more READs / atomics.
void Qp::after_response(Psn psn, uint64_t now) {
  if (Psn::diff(psn, acked_psn_) > 0) {
    note_acked(psn, now);
  } else {
    complete_in_order(now);
    arm_retransmit(now);
  }
  retries_left_ = cfg_.retry_count;
  first_timeout_ns_ = 0;
  backoff_ = 0;
  engine_.activate(this);
}

void Qp::on_atomic_ack(const wire::PacketView& v, uint64_t now) {
  const Psn psn = v.bth->psn();
  for (uint64_t i = sq_head_; i < sq_tail_; ++i) {
    SendWqe& w = sq(i);
    if (!w.started) break;
    if (w.done || (w.wr.op != WrOp::kCompareSwap && w.wr.op != WrOp::kFetchAdd)) continue;
    if (!(w.first_psn == psn)) continue;
    const uint64_t orig = v.atomic_ack->orig.value();
    std::memcpy(w.host[0], &orig, sizeof orig);
    finish_rd_atomic(w);
    after_response(psn, now);
    return;
  }
  ctr_.duplicates_rx++;
}

void Qp::complete_in_order(uint64_t now) {
  (void)now;
  while (sq_head_ < sq_tail_) {
    SendWqe& w = sq(sq_head_);
    if (!w.done) {
      if (!w.started || !is_send_write(w.wr.op)) break;
      const Psn last = w.first_psn + static_cast<int32_t>(w.npkts - 1);
      if (Psn::diff(last, acked_psn_) > 0) break;
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
      c.rmr_context = w.result_rmr_context;
      if (send_cq_ == nullptr || !send_cq_->push(c)) {
        ctr_.cq_stalls++;
        return;  // retried on the next progress(): nothing is lost
      }
    }
    ++sq_head_;
    if (sq_emit_ < sq_head_) sq_emit_ = sq_head_;
  }
}

// ============================================================ responder

void Qp::send_ack(uint8_t syndrome, Psn psn, uint64_t now) {
  wire::BuildSpec& s = base_spec(Opcode::kAck, psn);
  s.syndrome = syndrome;
  s.msn = msn_;
  if (!transmit(s, now)) return;
  ctr_.acks_tx++;
  if (aeth::type(syndrome) == aeth::kAck) {
    ack_owed_ = false;
    ack_req_seen_ = false;
    unacked_ = 0;
    clear_timer(TimerKind::kAck);
  }
}

void Qp::responder_fatal(uint8_t nak_code, Psn psn, QpError why, uint64_t now) {
  fatal_nak_valid_ = true;
  fatal_nak_syndrome_ = aeth::make(aeth::kNak, nak_code);
  fatal_nak_psn_ = psn;
  send_ack(fatal_nak_syndrome_, psn, now);
  set_error(why, now);
}

void Qp::remember(const ReplayEntry& e) {
  replay_[replay_next_] = e;
  replay_next_ = (replay_next_ + 1) % static_cast<uint32_t>(replay_.size());
}

void Qp::handle_duplicate(const wire::PacketView& v, uint64_t now) {
  ctr_.duplicates_rx++;
  const Psn psn = v.bth->psn();
  const bool is_read = v.opcode == Opcode::kReadRequest;
  const bool is_atomic = v.opcode == Opcode::kCompareSwap || v.opcode == Opcode::kFetchAdd;
  if (!is_read && !is_atomic) {
    // SEND / WRITE already placed: acknowledge again, never place twice.
    ack_owed_ = true;
    ack_req_seen_ = true;
    return;
  }
  for (const ReplayEntry& e : replay_) {
    if (!e.valid || e.is_read != is_read) continue;
    const int32_t d = Psn::diff(psn, e.psn);
    if (d < 0 || d >= static_cast<int32_t>(e.npkts)) continue;
    if (is_atomic) {
      // Replay the recorded result: an atomic executes exactly once.
      for (const RespJob& j : resp_q_)
        if (!j.is_read && j.psn == psn) return;  // its ACK is still queued
      RespJob j;
      j.psn = psn;
      j.first_psn = psn;
      j.atomic_orig = e.atomic_orig;
      resp_q_.push_back(j);
      ctr_.atomic_replays++;
    } else {
      // Re-execute the READ from the requested PSN on (IBA 9.7.5.1.3).
      const uint64_t off = static_cast<uint64_t>(d) * cfg_.pmtu;
      AccessGrant g;
      if (mr_.check_remote(e.rkey, pz_, e.va, e.len, Access::kRemoteRead, &g) != AccessError::kOk) {
        responder_fatal(aeth::kNakRemoteAccessError, psn, QpError::kRemoteAccess, now);
        return;
      }
      for (RespJob& j : resp_q_) {
        if (j.is_read && j.first_psn == e.psn) {
          if (Psn::diff(j.psn, psn) > 0) {
            j.psn = psn;
            j.next_pkt = static_cast<uint32_t>(d);
          }
          return;
        }
      }
      RespJob j;
      j.is_read = true;
      j.first_psn = e.psn;
      j.psn = psn;
      j.next_pkt = static_cast<uint32_t>(d);
      j.npkts = e.npkts;
      j.len = e.len;
      j.va = e.va;
      j.rkey = e.rkey;
      j.replay = true;
      (void)off;
      resp_q_.push_back(j);
      ctr_.read_replays++;
    }
    engine_.activate(this);
    return;
  }
  // Older than the replay cache: let the requester time out and give up.
}

void Qp::on_request(const wire::PacketView& v, uint64_t now) {
  const Psn psn = v.bth->psn();
  const int32_t d = Psn::diff(psn, epsn_);
  if (d < 0) {
    handle_duplicate(v, now);
    return;
  }
  if (d > 0) {
    ctr_.out_of_order_rx++;
    if (cfg_.selective_repeat && d < kSrSpan && v.opcode == Opcode::kWriteOnly) {
      if (sr_bit(psn)) {
        ctr_.duplicates_rx++;
      } else if (place_out_of_order(v, d)) {
        sr_set(psn, true);
        ++sr_count_;
        ctr_.sr_placed_ooo++;
      }
    }
    if (!nak_sent_) {
      // One sequence-error NAK per gap (IBA C9-110).
      nak_sent_ = true;
      ctr_.seq_naks_tx++;
      send_ack(aeth::make(aeth::kNak, aeth::kNakPsnSeqError), epsn_, now);
    }
    return;
  }
  const wire::OpInfo& info = *v.info;
  const bool first = info.is(wire::op::kFirst);
  const bool last = info.is(wire::op::kLast);
  // FIRST / MIDDLE packets carry exactly one PMTU, LAST / ONLY at most one
  // (IBA C9-88..C9-90); the engine parsed with its largest PMTU.
  if (v.payload.size() > cfg_.pmtu || (!last && v.payload.size() != cfg_.pmtu)) {
    responder_fatal(aeth::kNakInvalidRequest, psn, QpError::kProtocol, now);
    return;
  }

  // Opcode sequence (IBA 9.7.5.1.6 / C9-93).
  const bool is_send = info.is(wire::op::kSend);
  const bool is_write = info.is(wire::op::kWrite);
  if ((in_msg_ == InMsg::kSend && !(is_send && !first)) ||
      (in_msg_ == InMsg::kWrite && !(is_write && !first)) || (in_msg_ == InMsg::kNone && !first)) {
    responder_fatal(aeth::kNakInvalidRequest, psn, QpError::kProtocol, now);
    return;
  }

  if (is_send) {
    // The message completes with this packet but the receive completion
    // queue has no room: the packet is refused with an RNR NAK (not placed,
    // not acknowledged) and the requester resends it after the RNR delay, so
    // a full queue stalls the connection and no completion is lost
    // (CompletionQueue, types.hpp).
    if (last && !recv_cq_room()) {
      ctr_.rnr_naks_tx++;
      ctr_.cq_stalls++;
      nak_sent_ = true;
      send_ack(aeth::make(aeth::kRnrNak, 0x0E), psn, now);
      return;
    }
    if (first) {
      if (!have_recv()) {
        ctr_.rnr_naks_tx++;
        nak_sent_ = true;  // later packets of the burst are not sequence errors
        send_ack(aeth::make(aeth::kRnrNak, 0x0E), psn, now);
        return;
      }
      RecvWqe& r = rq(rq_head_);
      for (uint32_t i = 0; i < r.wr.num_sge; ++i) {
        const Sge& g = r.wr.sge[i];
        if (g.length == 0) continue;
        AccessGrant grant;
        if (mr_.check_local(g.lmr_context, pz_, g.va, g.length, Access::kLocalWrite, &grant) !=
            AccessError::kOk) {
          Completion c;
          c.cookie = r.wr.cookie;
          c.qpn = qpn_;
          c.op = WcOp::kRecv;
          c.status = WcStatus::kLocalProtectionError;
          // No room: the receive stays queued and is flushed (stalling
          // until there is room) when the queue pair goes to error.
          if (push_recv_completion(c)) retire_recv();
          responder_fatal(aeth::kNakRemoteOperationalError, psn, QpError::kLocalProtection, now);
          return;
        }
        r.host[i] = grant.host;
      }
      msg_offset_ = 0;
      recv_in_use_ = true;
    }
    RecvWqe& r = rq(rq_head_);
    if (msg_offset_ + v.payload.size() > r.capacity) {
      Completion c;
      c.cookie = r.wr.cookie;
      c.qpn = qpn_;
      c.op = WcOp::kRecv;
      c.status = WcStatus::kLocalLengthError;
      if (push_recv_completion(c)) retire_recv();  // else flushed, as above
      recv_in_use_ = false;
      responder_fatal(aeth::kNakInvalidRequest, psn, QpError::kLocalLength, now);
      return;
    }
    scatter(r.host, r.wr.sge, r.wr.num_sge, msg_offset_, v.payload);
    msg_offset_ += v.payload.size();
    if (last) {
      Completion c;
      c.cookie = r.wr.cookie;
      c.qpn = qpn_;
      c.op = WcOp::kRecv;
      c.byte_len = static_cast<uint32_t>(msg_offset_);
      c.has_imm = v.imm != nullptr;
      c.imm = v.imm != nullptr ? v.imm->imm.value() : 0;
      c.solicited = v.bth->se();
      (void)push_recv_completion(c);  // room checked before this packet was taken
      retire_recv();
      recv_in_use_ = false;
      in_msg_ = InMsg::kNone;
      ++msn_;
    } else {
      in_msg_ = InMsg::kSend;
    }
  } else if (is_write) {
    const bool imm = info.is(wire::op::kImm);
    if (imm && (!recv_cq_room() || !have_recv())) {
      // WRITE with immediate consumes a receive: none posted, or no room for
      // its completion -> RNR, before anything of this packet is placed.
      ctr_.rnr_naks_tx++;
      nak_sent_ = true;
      send_ack(aeth::make(aeth::kRnrNak, 0x0E), psn, now);
      return;
    }
    if (first) {
      AccessGrant g;
      const uint64_t va = v.reth->va.value();
      const uint64_t len = v.reth->dma_len.value();
      const AccessError e =
          mr_.check_remote(v.reth->rkey.value(), pz_, va, len, Access::kRemoteWrite, &g);
      if (e != AccessError::kOk) {
        responder_fatal(aeth::kNakRemoteAccessError, psn, QpError::kRemoteAccess, now);
        return;
      }
      write_host_ = g.host;
      write_len_ = len;
      msg_offset_ = 0;
    }
    if (msg_offset_ + v.payload.size() > write_len_ ||
        (last && msg_offset_ + v.payload.size() != write_len_)) {
      responder_fatal(aeth::kNakInvalidRequest, psn, QpError::kProtocol, now);
      return;
    }
    if (!v.payload.empty())
      std::memcpy(write_host_ + msg_offset_, v.payload.data(), v.payload.size());
    msg_offset_ += v.payload.size();
    if (last) {
      if (imm) {
        RecvWqe& r = rq(rq_head_);
        Completion c;
        c.cookie = r.wr.cookie;
        c.qpn = qpn_;
        c.op = WcOp::kRecvWriteImm;
        c.byte_len = static_cast<uint32_t>(write_len_);
        c.has_imm = true;
        c.imm = v.imm->imm.value();
        (void)push_recv_completion(c);  // room checked before this packet was taken
        retire_recv();
      }
      in_msg_ = InMsg::kNone;
      ++msn_;
    } else {
      in_msg_ = InMsg::kWrite;
    }
  } else if (v.opcode == Opcode::kReadRequest) {
    const uint64_t va = v.reth->va.value();
    const uint64_t len = v.reth->dma_len.value();
    const uint32_t rkey = v.reth->rkey.value();
    AccessGrant g;
    if (mr_.check_remote(rkey, pz_, va, len, Access::kRemoteRead, &g) != AccessError::kOk) {
      responder_fatal(aeth::kNakRemoteAccessError, psn, QpError::kRemoteAccess, now);
      return;
    }
    RespJob j;
    j.is_read = true;
    j.first_psn = psn;
    j.psn = psn;
    j.npkts = pkts_for(len, cfg_.pmtu);
    j.len = len;
    j.va = va;
    j.rkey = rkey;
    resp_q_.push_back(j);
    remember(ReplayEntry{true, true, psn, j.npkts, va, rkey, len, 0});
    epsn_ = psn + static_cast<int32_t>(j.npkts);
    ++msn_;
    nak_sent_ = false;
    advance_epsn(now);
    engine_.activate(this);
    return;
  } else if (v.opcode == Opcode::kCompareSwap || v.opcode == Opcode::kFetchAdd) {
    const uint64_t va = v.atomic->va.value();
    AccessGrant g;
    const AccessError e =
        mr_.check_remote(v.atomic->rkey.value(), pz_, va, 8, Access::kRemoteAtomic, &g);
    if (e != AccessError::kOk || (reinterpret_cast<uintptr_t>(g.host) & 7u) != 0) {
      // IBA 9.4.5: a misaligned atomic is an invalid request.
      const bool misaligned = e == AccessError::kMisaligned || e == AccessError::kOk;
      responder_fatal(misaligned ? aeth::kNakInvalidRequest : aeth::kNakRemoteAccessError, psn,
                      misaligned ? QpError::kRemoteInvalidRequest : QpError::kRemoteAccess, now);
      return;
    }
    std::atomic_ref<uint64_t> target(*reinterpret_cast<uint64_t*>(g.host));
    uint64_t orig;
    if (v.opcode == Opcode::kCompareSwap) {
      orig = v.atomic->compare.value();
      target.compare_exchange_strong(orig, v.atomic->swap_add.value());
      // On success orig still holds the compare value, which equals the old one.
    } else {
      orig = target.fetch_add(v.atomic->swap_add.value());
    }
    RespJob j;
    j.psn = psn;
    j.first_psn = psn;
    j.atomic_orig = orig;
    resp_q_.push_back(j);
    remember(ReplayEntry{true, false, psn, 1, va, v.atomic->rkey.value(), 8, orig});
    epsn_ = psn + 1;
    ++msn_;
    nak_sent_ = false;
    advance_epsn(now);
    engine_.activate(this);
    return;
  } else {
    responder_fatal(aeth::kNakInvalidRequest, psn, QpError::kProtocol, now);
    return;
  }
  // SEND / WRITE packet accepted.
  ++epsn_;
  nak_sent_ = false;
  ++unacked_;
  ack_owed_ = true;
  if (v.bth->ack_req()) ack_req_seen_ = true;
  advance_epsn(now);
}

bool Qp::place_out_of_order(const wire::PacketView& v, int32_t ahead) {
  (void)ahead;
  AccessGrant g;
  const uint64_t len = v.reth->dma_len.value();
  if (len != v.payload.size()) return false;  // not self-describing: wait for order
  if (mr_.check_remote(v.reth->rkey.value(), pz_, v.reth->va.value(), len, Access::kRemoteWrite,
                       &g) != AccessError::kOk)
    return false;  // judged (and NAKed) when it arrives in order
  if (len != 0) std::memcpy(g.host, v.payload.data(), len);
  return true;
}

// Moves epsn_ over packets that selective repeat already placed; if a hole
// remains in front of placed packets, reports it at once (one NAK per hole).
void Qp::advance_epsn(uint64_t now) {
  if (sr_count_ == 0) return;
  while (sr_count_ > 0 && sr_bit(epsn_)) {
    sr_set(epsn_, false);
    --sr_count_;
    ++epsn_;
    ++msn_;
    ++unacked_;
    ack_owed_ = true;
  }
  if (sr_count_ > 0 && !nak_sent_) {
    nak_sent_ = true;
    ctr_.seq_naks_tx++;
    send_ack(aeth::make(aeth::kNak, aeth::kNakPsnSeqError), epsn_, now);
  }
}

void Qp::end_of_burst(uint64_t now) {
  if (!ack_owed_ || state_ != QpState::kRts) return;
  if (!resp_q_.empty()) return;  // the ACK follows the queued responses
  if (ack_req_seen_ || unacked_ >= cfg_.ack_every) {
    send_ack(aeth::make(aeth::kAck, aeth::kCreditsInvalid), epsn_ - 1, now);
  } else if (timer_deadline(TimerKind::kAck) == 0) {
    set_timer(TimerKind::kAck, now + cfg_.ack_delay_ns);
  }
  if (ack_owed_) engine_.activate(this);  // TX was full: retry from progress()
}

bool Qp::respond_emit(uint64_t now) {
  uint32_t budget = cfg_.read_resp_budget;
  while (!resp_q_.empty() && state_ == QpState::kRts) {
    RespJob& j = resp_q_.front();
    if (!j.is_read) {
      wire::BuildSpec& s = base_spec(Opcode::kAtomicAck, j.psn);
      s.syndrome = aeth::make(aeth::kAck, aeth::kCreditsInvalid);
      s.msn = msn_;
      s.atomic_orig = j.atomic_orig;
      if (!transmit(s, now)) return true;
      resp_q_.pop_front();
      continue;
    }
    while (j.next_pkt < j.npkts) {
      if (budget == 0) return true;
      const Pos p = pos_of(j.next_pkt, j.npkts);
      const uint64_t off = uint64_t{j.next_pkt} * cfg_.pmtu;
      const uint64_t len = std::min<uint64_t>(cfg_.pmtu, j.len - off);
      wire::BuildSpec& s = base_spec(seg_opcode(Seg::kReadResp, p), j.psn);
      s.syndrome = aeth::make(aeth::kAck, aeth::kCreditsInvalid);
      s.msn = msn_;
      // Re-check every packet: a READ response may be emitted (or replayed)
      // long after the request, and the region may have been freed or
      // re-bound since; never read memory the key no longer grants.
      AccessGrant g;
      if (mr_.check_remote(j.rkey, pz_, j.va + off, len, Access::kRemoteRead, &g) !=
          AccessError::kOk) {
        if (j.replay) {
          // A replay for a requester that may already hold every byte (its
          // consumer then freed the region): drop it; if the requester still
          // waits, its retry budget ends the connection.  (Popped below.)
          break;
        }
        responder_fatal(aeth::kNakRemoteAccessError, j.psn, QpError::kRemoteAccess, now);
        return false;
      }
      s.payload = std::span<const uint8_t>(g.host, len);
      if (!transmit(s, now)) return true;
      --budget;
      ++j.next_pkt;
      ++j.psn;
    }
    resp_q_.pop_front();
  }
  if (ack_owed_ && state_ == QpState::kRts && (ack_req_seen_ || unacked_ >= cfg_.ack_every)) {
    send_ack(aeth::make(aeth::kAck, aeth::kCreditsInvalid), epsn_ - 1, now);
    if (ack_owed_) return true;
  }
  return false;
}

// ============================================================ dispatch

void Qp::on_packet(const wire::PacketView& v, uint64_t now) {
  ctr_.rx_packets++;
  if (v.ip->src.value() != path_.peer_ip) return;  // not our peer
  if (state_ != QpState::kRts) {
    // A requester retransmitting the request we refused lost our NAK: repeat it.
    if (state_ == QpState::kError && fatal_nak_valid_ && v.info->is(wire::op::kRequest) &&
        v.bth->psn() == fatal_nak_psn_)
      send_ack(fatal_nak_syndrome_, fatal_nak_psn_, now);
    return;
  }
  const wire::OpInfo& info = *v.info;
  if (info.is(wire::op::kRequest)) {
    on_request(v, now);
    return;
  }
  switch (v.opcode) {
    case Opcode::kAck:
      on_ack_packet(v, now);
      break;
    case Opcode::kAtomicAck:
      on_atomic_ack(v, now);
      break;
    case Opcode::kReadRespFirst:
    case Opcode::kReadRespMiddle:
    case Opcode::kReadRespLast:
    case Opcode::kReadRespOnly:
      on_read_response(v, now);
      break;
    default:
      ctr_.bad_responses++;
      break;
  }
}

bool Qp::progress(uint64_t now) {
  complete_in_order(now);
  if (state_ != QpState::kRts) {
    flush_recvs();
    return sq_head_ != sq_tail_ || rq_head_ != rq_tail_;  // stalled flushes
  }
  bool more = respond_emit(now);
  more = emit_requests(now) || more;
  return more || (sq_head_ != sq_tail_ && sq(sq_head_).done);
}

void Qp::on_timer(TimerKind kind, uint64_t now) {
  const auto k = static_cast<size_t>(kind);
  timer_[k] = 0;
  if (state_ != QpState::kRts) return;
  switch (kind) {
    case TimerKind::kRetransmit: {
      if (!has_outstanding() || rnr_waiting_) return;
      ctr_.timeouts++;
      const Psn una = una_psn();
      if (first_timeout_ns_ == 0) first_timeout_ns_ = now;
      if (retries_left_ == 0 && now - first_timeout_ns_ >= cfg_.min_retry_time_ns) {
        fail_wqe_at(una, WcStatus::kRetryExceeded, QpError::kRetryExceeded, now);
        return;
      }
      if (retries_left_ > 0) retries_left_--;
      ++backoff_;
      read_gap_pending_ = false;
      rewind_to(una, now);
      arm_retransmit(now);
      return;
    }
    case TimerKind::kRnr:
      rnr_waiting_ = false;
      rewind_to(rnr_psn_, now);
      arm_retransmit(now);
      engine_.activate(this);
      return;
    case TimerKind::kAck:
      if (ack_owed_ && resp_q_.empty())
        send_ack(aeth::make(aeth::kAck, aeth::kCreditsInvalid), epsn_ - 1, now);
      if (ack_owed_) engine_.activate(this);
      return;
    case TimerKind::kCount:
      return;
  }
}

void Qp::flush_recvs() {
  while (rq_head_ < rq_tail_) {
    Completion c;
    c.cookie = rq(rq_head_).wr.cookie;
    c.qpn = qpn_;
    c.op = WcOp::kRecv;
    c.status = WcStatus::kFlushed;
    if (recv_cq_ != nullptr && !recv_cq_->push(c)) {
      ctr_.cq_stalls++;
      return;  // CQ full: progress() retries, nothing is dropped
    }
    retire_recv();
  }
}

bool Qp::has_pending_work() const { return sq_head_ != sq_tail_ || !resp_q_.empty() || ack_owed_; }

void Qp::ack_received(uint64_t now) {
  if (state_ != QpState::kRts || !resp_q_.empty() || msn_ == 0) return;  // nothing / in order
  send_ack(aeth::make(aeth::kAck, aeth::kCreditsInvalid), epsn_ - 1, now);
}

void Qp::set_error(QpError why, uint64_t now) {
  if (state_ == QpState::kError) return;
  // Torn down locally (disconnect, free): acknowledge what was received and
  // completed here first, or the peer, whose ACK was being coalesced, would
  // retransmit into a closed queue pair and fail a request that succeeded.
  if (why == QpError::kDestroyed && state_ == QpState::kRts && ack_owed_ && resp_q_.empty())
    send_ack(aeth::make(aeth::kAck, aeth::kCreditsInvalid), epsn_ - 1, now);
  state_ = QpState::kError;
  error_ = why;
  for (uint64_t i = sq_head_; i < sq_tail_; ++i) {
    SendWqe& w = sq(i);
    if (!w.done) {
      w.done = true;
      w.status = WcStatus::kFlushed;
      // A flushed bind never executes: release the RMR it had reserved.
      if (w.wr.op == WrOp::kBind) mr_.clear_bind_pending(w.wr.rmr_handle);
    }
  }
  rd_atomic_outstanding_ = 0;
  flush_recvs();
  resp_q_.clear();
  ack_owed_ = false;
  for (auto& t : timer_) t = 0;
  complete_in_order(now);
  engine_.activate(this);
}

}  // namespace dpdat::rc
