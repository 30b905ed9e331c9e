#include "rc/ud/ud_qp.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <span>

#include "rc/engine/engine.hpp"

namespace dpdat::rc {

UdQp::UdQp(Engine& engine, MrTable& mr, uint32_t qpn, uint32_t pz, const UdConfig& cfg,
           CompletionQueue* send_cq, CompletionQueue* recv_cq)
    : engine_(engine),
      mr_(mr),
      qpn_(qpn),
      pz_(pz),
      cfg_(cfg),
      send_cq_(send_cq),
      recv_cq_(recv_cq),
      rq_(std::max<uint32_t>(cfg.rq_depth, 1)),
      sq_(std::max<uint32_t>(cfg.sq_depth, 1)) {}

bool UdQp::to_init(uint32_t qkey) {
  if (state_ != UdState::kReset) return false;
  qkey_ = qkey;
  state_ = UdState::kInit;
  return true;
}

bool UdQp::to_rtr() {
  if (state_ != UdState::kInit) return false;
  state_ = UdState::kRtr;
  return true;
}

bool UdQp::to_rts(const UdLocal& local, wire::Psn sq_psn) {
  if (state_ != UdState::kRtr) return false;
  local_ = local;
  sq_psn_ = sq_psn;
  state_ = UdState::kRts;
  return true;
}

void UdQp::set_error() {
  state_ = UdState::kError;
  flush_ring(sq_, &sq_head_, &sq_count_, WcOp::kSend, send_cq_);
  flush_ring(rq_, &rq_head_, &rq_count_, WcOp::kRecv, recv_cq_);
}

// Completes a ring's entries from its head as flushed while `cq` has room
// (the rest wait: flushed by the next set_error).
template <typename Entry>
void UdQp::flush_ring(const std::vector<Entry>& ring, size_t* head, size_t* count, WcOp op,
                      CompletionQueue* cq) {
  while (*count > 0) {
    Completion c;
    c.cookie = ring[*head].cookie;
    c.qpn = qpn_;
    c.op = op;
    c.status = WcStatus::kFlushed;
    if (!complete(cq, c)) break;
    *head = (*head + 1) % ring.size();
    --*count;
  }
}

void UdQp::reset() {
  state_ = UdState::kReset;
  rq_head_ = 0;
  rq_count_ = 0;
  sq_head_ = 0;
  sq_count_ = 0;
}

bool UdQp::complete(CompletionQueue* cq, const Completion& c) {
  return cq == nullptr || cq->push(c);
}

UdQp::Tx UdQp::transmit(WrOp op, uint32_t flags, uint32_t imm, const UdDest& to,
                        std::span<const std::span<const uint8_t>> pieces) {
  Frame* f = engine_.tx_frame();
  if (f == nullptr) return Tx::kNoBuffer;
  wire::BuildSpec s;
  s.src_mac = local_.mac;
  s.dst_mac = to.mac;
  s.src_ip = local_.ip;
  s.dst_ip = to.ip;
  s.src_port = local_.udp_src_port;
  s.ip_csum_offload = engine_.tx_ip_csum_offload();
  s.opcode = op == WrOp::kSendImm ? wire::Opcode::kUdSendOnlyImm : wire::Opcode::kUdSendOnly;
  s.dest_qp = to.qpn;
  s.psn = sq_psn_;
  s.se = (flags & wr_flag::kSolicited) != 0;
  s.qkey = (to.qkey & kQkeyUseOwn) != 0 ? qkey_ : to.qkey;
  s.src_qp = qpn_;
  s.imm = imm;
  s.gather = pieces;
  const auto r = wire::build_packet(std::span<uint8_t>(f->data, f->cap), s, cfg_.pmtu);
  if (!r.ok()) {  // cannot happen for a checked length; refused whole, never cut
    engine_.tx_abort(f);
    return Tx::kRefused;
  }
  engine_.tx_commit(f, static_cast<uint32_t>(r.len), s.ip_csum_offload ? kFrameTxIpCsum : 0);
  sq_psn_ = sq_psn_ + 1;
  ctr_.tx_datagrams++;
  return Tx::kSent;
}

PostResult UdQp::post_send(const SendWr& wr, const UdDest& to) {
  if (state_ != UdState::kRts) return PostResult::kInvalidState;
  if ((wr.op != WrOp::kSend && wr.op != WrOp::kSendImm) || wr.num_sge > kMaxSge)
    return PostResult::kInvalidWr;
  if (sq_count_ >= sq_.size()) return PostResult::kQueueFull;
  Completion c;
  c.cookie = wr.cookie;
  c.qpn = qpn_;
  c.op = WcOp::kSend;
  uint64_t total = 0;
  for (uint32_t i = 0; i < wr.num_sge; ++i) total += wr.sge[i].length;
  std::array<std::span<const uint8_t>, kMaxSge> pieces;
  if (total > cfg_.pmtu) {
    c.status = WcStatus::kLocalLengthError;
  } else {
    for (uint32_t i = 0; i < wr.num_sge; ++i) {
      const Sge& g = wr.sge[i];
      AccessGrant grant;
      if (g.length != 0 && mr_.check_local(g.lkey, pz_, g.va, g.length, Access::kLocalRead,
                                           &grant) != AccessError::kOk) {
        c.status = WcStatus::kLocalProtectionError;
        break;
      }
      pieces[i] = std::span<const uint8_t>(grant.host, g.length);
    }
  }
  const auto gather = std::span<const std::span<const uint8_t>>(pieces.data(), wr.num_sge);
  const bool report = c.status != WcStatus::kSuccess || (wr.flags & wr_flag::kSignaled) != 0;
  // At once, when nothing waits before it and its completion has room.
  if (sq_count_ == 0 && !(report && send_cq_ != nullptr && send_cq_->full())) {
    Tx t = Tx::kSent;
    if (c.status == WcStatus::kSuccess) t = transmit(wr.op, wr.flags, wr.imm, to, gather);
    if (t != Tx::kNoBuffer) {
      if (t == Tx::kRefused) c.status = WcStatus::kLocalLengthError;
      if (c.status == WcStatus::kSuccess) c.byte_len = static_cast<uint32_t>(total);
      if (report || t == Tx::kRefused) complete(send_cq_, c);
      return PostResult::kOk;
    }
  }
  // Else it waits, its data copied now (an inline send's buffer is reused).
  WaitingSend& w = sq_[(sq_head_ + sq_count_) % sq_.size()];
  w.cookie = wr.cookie;
  w.op = wr.op;
  w.flags = wr.flags;
  w.imm = wr.imm;
  w.to = to;
  w.status = c.status;
  w.data.clear();
  if (c.status == WcStatus::kSuccess)
    for (const auto& piece : gather) w.data.insert(w.data.end(), piece.begin(), piece.end());
  ++sq_count_;
  ctr_.tx_waited++;
  engine_.ud_sends_wait(this);
  return PostResult::kOk;
}

bool UdQp::drain_sends() {
  while (sq_count_ > 0) {
    if (state_ != UdState::kRts) return false;  // set_error() flushes them, reset() drops them
    // Room for a completion first, whether or not it will be reported.
    if (send_cq_ != nullptr && send_cq_->full()) return true;
    WaitingSend& w = sq_[sq_head_];
    Completion c;
    c.cookie = w.cookie;
    c.qpn = qpn_;
    c.op = WcOp::kSend;
    c.status = w.status;
    bool report = w.status != WcStatus::kSuccess || (w.flags & wr_flag::kSignaled) != 0;
    if (w.status == WcStatus::kSuccess) {
      const std::span<const uint8_t> piece(w.data);
      const Tx t = transmit(w.op, w.flags, w.imm, w.to,
                            std::span<const std::span<const uint8_t>>(&piece, 1));
      if (t == Tx::kNoBuffer) return true;
      if (t == Tx::kRefused) {
        c.status = WcStatus::kLocalLengthError;
        report = true;
      } else {
        c.byte_len = static_cast<uint32_t>(w.data.size());
      }
    }
    sq_head_ = (sq_head_ + 1) % sq_.size();
    --sq_count_;
    if (report) complete(send_cq_, c);  // room was checked above
  }
  return false;
}

PostResult UdQp::post_recv(const RecvWr& wr) {
  if (state_ == UdState::kReset || state_ == UdState::kError) return PostResult::kInvalidState;
  if (wr.num_sge > kMaxSge || wr.multi_min != 0) return PostResult::kInvalidWr;
  if (rq_count_ >= rq_.size()) return PostResult::kQueueFull;
  rq_[(rq_head_ + rq_count_) % rq_.size()] = wr;
  ++rq_count_;
  return PostResult::kOk;
}

bool UdQp::scatter(const RecvWr& wr, uint64_t off, const uint8_t* src, uint64_t len) {
  for (uint32_t i = 0; i < wr.num_sge && len > 0; ++i) {
    const Sge& g = wr.sge[i];
    if (off >= g.length) {
      off -= g.length;
      continue;
    }
    const uint64_t n = std::min(g.length - off, len);
    AccessGrant grant;
    if (mr_.check_local(g.lkey, pz_, g.va + off, n, Access::kLocalWrite, &grant) !=
        AccessError::kOk)
      return false;
    std::memcpy(grant.host, src, n);
    src += n;
    len -= n;
    off = 0;
  }
  return len == 0;
}

void UdQp::on_packet(const wire::PacketView& v) {
  if (state_ != UdState::kRtr && state_ != UdState::kRts) {
    ctr_.rx_state_dropped++;
    return;
  }
  if (v.deth->qkey.value() != qkey_) {
    ctr_.rx_qkey_dropped++;
    return;
  }
  if (rq_count_ == 0) {
    ctr_.rx_no_recv_dropped++;
    return;
  }
  if (recv_cq_ != nullptr && recv_cq_->full()) {
    ctr_.rx_cq_full_dropped++;
    return;
  }
  const RecvWr& wr = rq_[rq_head_];
  Completion c;
  c.cookie = wr.cookie;
  c.qpn = qpn_;
  c.op = WcOp::kRecv;
  uint64_t capacity = 0;
  for (uint32_t i = 0; i < wr.num_sge; ++i) capacity += wr.sge[i].length;
  const uint64_t need = kGrhBytes + v.payload.size();
  if (capacity < need) {
    ctr_.rx_too_long++;
    c.status = WcStatus::kLocalLengthError;
  } else {
    uint8_t grh[kGrhBytes] = {};
    std::memcpy(grh + kGrhBytes - sizeof(wire::Ipv4Hdr), v.ip, sizeof(wire::Ipv4Hdr));
    if (!scatter(wr, 0, grh, kGrhBytes) ||
        !scatter(wr, kGrhBytes, v.payload.data(), v.payload.size())) {
      c.status = WcStatus::kLocalProtectionError;
    } else {
      ctr_.rx_datagrams++;
      c.byte_len = static_cast<uint32_t>(need);
      c.src_qp = v.deth->src_qp();
      c.grh = true;
      c.solicited = v.bth->se();
      if (v.imm != nullptr) {
        c.has_imm = true;
        c.imm = v.imm->imm.value();
      }
    }
  }
  rq_head_ = (rq_head_ + 1) % rq_.size();
  --rq_count_;
  complete(recv_cq_, c);  // room was checked above
}

}  // namespace dpdat::rc
