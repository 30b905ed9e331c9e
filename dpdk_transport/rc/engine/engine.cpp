#include "rc/engine/engine.hpp"

#include "rc/qp/qp.hpp"

#include <algorithm>

namespace dpdat::rc {

namespace {
// Largest frame any QP builds: L2-L4 + BTH + the longest extension chain
// (RETH + ImmDt = 20, AtomicETH = 28, AETH + AtomicAckETH = 12) + PMTU + pad + ICRC.
constexpr uint32_t kFrameOverhead = 14 + 20 + 8 + 12 + 28 + 4 + 4;
// TX buffers hold pmtu + kFrameOverhead bytes, pmtu >= 256: a CM frame fits.
static_assert(wire::kCmFrameSize <= 256 + kFrameOverhead);
// Owner of QP1 in an EngineGroup.
constexpr size_t kGsiEngine = 0;
}  // namespace

Engine::Engine(PacketIo& io, MrTable& mr, const EngineConfig& cfg) : io_(io), mr_(mr), cfg_(cfg) {
  rx_.resize(cfg_.burst);
  tx_ready_.reserve(cfg_.burst);
  tx_cache_.reserve(cfg_.burst);
  touched_.reserve(cfg_.burst);
  release_.reserve(cfg_.burst * EngineGroup::kMaxEngines);
  tx_ip_csum_offload_ = (io_.offloads() & kOffloadTxIpCsum) != 0;
}

Engine::~Engine() {
  if (building_) tx_abort(&tx_building_);
  if (!tx_ready_.empty()) io_.tx_free(tx_ready_.data(), static_cast<uint16_t>(tx_ready_.size()));
  if (!tx_cache_.empty()) io_.tx_free(tx_cache_.data(), static_cast<uint16_t>(tx_cache_.size()));
}

Qp* Engine::create_qp(uint32_t pz, const QpConfig& cfg, CompletionQueue* send_cq,
                      CompletionQueue* recv_cq) {
  if (cfg.pmtu > cfg_.pmtu) return nullptr;  // the parser would reject its packets
  if (live_qps_ >= cfg_.max_qps) return nullptr;
  // The per-QP tables of the data path keep room for every queue pair that
  // exists (amortised growth here, on the control path, never in poll()).
  const size_t n = size_t{live_qps_} + 1;
  if (active_.capacity() < n) {
    const size_t want = std::min<size_t>(std::max<size_t>(2 * n, 64), cfg_.max_qps);
    active_.reserve(want);
    active_next_.reserve(want);
    errored_.reserve(want);
    errored_swap_.reserve(want);
    timers_.reserve(want * static_cast<size_t>(QpTimer::kCount));
  }
  uint32_t i;
  if (!free_slots_.empty()) {
    i = free_slots_.back();
  } else {
    i = static_cast<uint32_t>(qps_.size());
    // QPNs are 24 bits; in a group, bits 16..23 name the owning engine.
    const uint32_t qpn = cfg_.qpn_base + i;
    if (qpn > 0xFFFFFFu || (group_ != nullptr && EngineGroup::owner(qpn) != group_index_) ||
        qpn >= ud_qpn_base())  // UD queue pairs' numbers
      return nullptr;
    qps_.emplace_back();
  }
  qps_[i] = std::make_unique<Qp>(*this, mr_, cfg_.qpn_base + i, pz, cfg, send_cq, recv_cq);
  if (!free_slots_.empty() && free_slots_.back() == i) free_slots_.pop_back();
  ++live_qps_;
  return qps_[i].get();
}

void Engine::destroy_qp(Qp* qp) {
  if (qp == nullptr) return;
  qp->release_srq();
  for (const uint32_t slot : qp->timer_slot_)
    if (slot != Qp::kNoTimerSlot) heap_remove(slot);
  std::erase(active_, qp);
  std::erase(touched_, qp);
  const uint32_t i = qp->qpn() - cfg_.qpn_base;
  if (i < qps_.size() && qps_[i].get() == qp) {
    qps_[i].reset();
    free_slots_.push_back(i);
    --live_qps_;
  }
}

Qp* Engine::find_qp(uint32_t qpn) const {
  const uint32_t i = qpn - cfg_.qpn_base;
  return i < qps_.size() ? qps_[i].get() : nullptr;
}

UdQp* Engine::create_ud_qp(uint32_t pz, const UdConfig& cfg, CompletionQueue* send_cq,
                           CompletionQueue* recv_cq) {
  if (cfg.pmtu > cfg_.pmtu || cfg.pmtu == 0) return nullptr;
  uint32_t i;
  if (!free_uds_.empty()) {
    i = free_uds_.back();
    free_uds_.pop_back();
  } else {
    if (uds_.size() >= kMaxUdQps) return nullptr;
    i = static_cast<uint32_t>(uds_.size());
    uds_.emplace_back();
  }
  uds_[i] = std::make_unique<UdQp>(*this, mr_, ud_qpn_base() + i, pz, cfg, send_cq, recv_cq);
  return uds_[i].get();
}

void Engine::destroy_ud_qp(UdQp* qp) {
  if (qp == nullptr) return;
  std::erase(ud_waiting_, qp);
  const uint32_t i = qp->qpn() - ud_qpn_base();
  if (i < uds_.size() && uds_[i].get() == qp) {
    uds_[i].reset();
    free_uds_.push_back(i);
  }
}

void Engine::ud_sends_wait(UdQp* qp) {
  if (std::find(ud_waiting_.begin(), ud_waiting_.end(), qp) == ud_waiting_.end())
    ud_waiting_.push_back(qp);
}

void Engine::activate(Qp* qp) {
  if (qp->on_active_list_) return;
  qp->on_active_list_ = true;
  active_.push_back(qp);
}

void Engine::heap_place(size_t i, const TimerEntry& e) {
  timers_[i] = e;
  if (i == 0) next_deadline_.store(e.deadline, std::memory_order_relaxed);
  e.qp->timer_slot_[static_cast<size_t>(e.kind)] = static_cast<uint32_t>(i);
}

void Engine::heap_up(size_t i) {
  const TimerEntry e = timers_[i];
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
    if (timers_[parent].deadline <= e.deadline) break;
    heap_place(i, timers_[parent]);
    i = parent;
  }
  heap_place(i, e);
}

void Engine::heap_down(size_t i) {
  const TimerEntry e = timers_[i];
  const size_t n = timers_.size();
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && timers_[child + 1].deadline < timers_[child].deadline) ++child;
    if (e.deadline <= timers_[child].deadline) break;
    heap_place(i, timers_[child]);
    i = child;
  }
  heap_place(i, e);
}

void Engine::heap_remove(size_t i) {
  TimerEntry& gone = timers_[i];
  gone.qp->timer_slot_[static_cast<size_t>(gone.kind)] = Qp::kNoTimerSlot;
  const TimerEntry last = timers_.back();
  timers_.pop_back();
  if (timers_.empty()) next_deadline_.store(0, std::memory_order_relaxed);
  if (i == timers_.size()) return;
  heap_place(i, last);
  heap_up(i);
  heap_down(last.qp->timer_slot_[static_cast<size_t>(last.kind)]);
}

void Engine::arm_timer(Qp* qp, QpTimer kind, uint64_t deadline) {
  const uint32_t slot = qp->timer_slot_[static_cast<size_t>(kind)];
  if (slot != Qp::kNoTimerSlot) {
    // A later deadline leaves the entry: it re-checks the QP's on expiry.
    if (timers_[slot].deadline <= deadline) return;
    timers_[slot].deadline = deadline;
    heap_up(slot);
    return;
  }
  timers_.push_back(TimerEntry{deadline, qp, kind});
  heap_up(timers_.size() - 1);
}

void Engine::run_timers(uint64_t now, bool rx_drained) {
  while (!timers_.empty() && timers_.front().deadline <= now) {
    const TimerEntry e = timers_.front();
    const uint64_t want = e.qp->timer_deadline(e.kind);
    if (want > now) {  // pushed back since: move the entry
      timers_.front().deadline = want;
      heap_down(0);
      continue;
    }
    // A retransmission or probe judged while answers may still wait unread
    // (RX not drained, at most timer_lag_max_ns past due), or before a peer
    // that may have been away with us had a round trip to answer (once, how
    // long the gap was), would be spurious: judge it later.
    const bool judges_loss = e.kind == QpTimer::kRetransmit || e.kind == QpTimer::kProbe;
    if (judges_loss && want != 0) {
      uint64_t until = 0;
      if (!rx_drained && now - want < cfg_.timer_lag_max_ns) {
        until = now + 1;
      } else if (e.deadline <= want && want < back_from_gap_ns_ &&
                 now < back_from_gap_ns_ + cfg_.gap_grace_ns) {
        until = back_from_gap_ns_ + cfg_.gap_grace_ns;  // once: the entry is marked deferred
      }
      if (until != 0) {
        ctr_.timers_deferred++;
        timers_.front().deadline = until;
        heap_down(0);
        continue;
      }
    }
    heap_remove(0);
    if (want == 0) continue;  // cancelled
    ctr_.timers_fired++;
    e.qp->on_timer(e.kind, now);
    activate(e.qp);
  }
}

Frame* Engine::tx_frame() {
  if (building_) return nullptr;  // one frame at a time
  if (tx_ready_.size() >= cfg_.burst) {
    flush_tx();
    if (tx_ready_.size() >= cfg_.burst) return nullptr;
  }
  if (tx_cache_.empty()) {
    tx_cache_.resize(cfg_.burst);
    const uint16_t got = io_.tx_alloc(tx_cache_.data(), cfg_.burst, cfg_.pmtu + kFrameOverhead);
    tx_cache_.resize(got);
    if (got == 0) {
      ctr_.tx_alloc_fail++;
      return nullptr;
    }
  }
  tx_building_ = tx_cache_.back();
  tx_cache_.pop_back();
  building_ = true;
  return &tx_building_;
}

void Engine::tx_commit(Frame* f, uint32_t len, uint32_t flags) {
  // Built from the fields, not by storing len into *f and copying *f: a
  // 16-byte load over the fresh 4-byte store cannot be forwarded and stalls.
  tx_ready_.push_back(Frame{f->data, len, f->cap, f->handle, flags});
  building_ = false;
}

void Engine::tx_abort(Frame* f) {
  tx_cache_.push_back(*f);
  building_ = false;
}

uint32_t Engine::flush_tx() {
  uint32_t sent_total = 0;
  uint16_t attempts = 0;
  while (!tx_ready_.empty() && attempts < cfg_.tx_retries) {
    const uint16_t sent = io_.tx_burst(tx_ready_.data(), static_cast<uint16_t>(tx_ready_.size()));
    if (sent == 0) {
      ++attempts;
      continue;
    }
    tx_ready_.erase(tx_ready_.begin(), tx_ready_.begin() + sent);
    sent_total += sent;
  }
  if (!tx_ready_.empty()) ctr_.tx_backpressure++;  // kept, in order, for the next poll
  ctr_.tx_frames += sent_total;
  return sent_total;
}

bool Engine::send_gsi(const wire::CmPath& path, const wire::CmMessage& m) {
  Frame* f = tx_frame();
  if (f == nullptr) {
    ctr_.gsi_tx_backpressure++;
    return false;
  }
  const size_t len = wire::build_cm_frame(std::span<uint8_t>(f->data, f->cap), path, m);
  if (len == 0) {
    tx_abort(f);
    ctr_.gsi_tx_invalid++;
    return false;
  }
  tx_commit(f, static_cast<uint32_t>(len));
  ctr_.gsi_tx++;
  return true;
}

// Gives a frame to engine `owner` of the group.  True when it took it (and
// now owns the buffer); false when its ring is full.
bool Engine::hand_off(const Frame& f, size_t owner) {
  if (group_->ring(group_index_, owner).push(f)) {
    ctr_.handed_off++;
    return true;
  }
  ctr_.handoff_full++;  // the owner is behind: drop, the sender retransmits
  return false;
}

// A UD packet: for the GSI or a UD queue pair (RC queue pairs never see UD
// opcodes).
bool Engine::dispatch_ud(const Frame& f, const wire::PacketView& v, uint64_t now,
                         bool icrc_checked) {
  const uint32_t qpn = v.bth->dest_qp();
  if (qpn != wire::kGsiQpn) {
    if (UdQp* ud = find_ud_qp(qpn); ud != nullptr) {
      ud->on_packet(v);
      return true;
    }
    if (group_ != nullptr && !icrc_checked) {
      const size_t owner = EngineGroup::owner(qpn);
      if (owner < group_->size() && owner != group_index_) return !hand_off(f, owner);
    }
    ctr_.rx_no_qp++;
    return true;
  }
  if (group_ != nullptr && group_index_ != kGsiEngine && !icrc_checked)
    return !hand_off(f, kGsiEngine);
  if (!gsi_handler_) {
    ctr_.rx_gsi_dropped++;
    return true;
  }
  ctr_.gsi_rx++;
  gsi_handler_(v, now);
  return true;
}

// Parses and delivers one received frame.  Returns false when the frame was
// handed to another engine of the group (which then owns its buffer).
bool Engine::dispatch(const Frame& f, uint64_t now, bool icrc_checked) {
  wire::PacketView& v = rx_view_;  // parse_packet() sets every field: no per-packet zeroing
  // The device's verdict on the IPv4 header checksum, where it gave one.
  const wire::ParseOptions opts{
      .pmtu = cfg_.pmtu,
      .full_segments = false,
      .check_ip_checksum = !icrc_checked && (f.flags & kFrameRxIpCsumGood) == 0,
      .check_icrc = !icrc_checked};
  const wire::Reject r = (f.flags & kFrameRxIpCsumBad) != 0 && !icrc_checked
                             ? wire::Reject::kBadIpChecksum
                             : wire::parse_packet(std::span<const uint8_t>(f.data, f.len), opts, v);
  if (r != wire::Reject::kNone) {
    ctr_.rx_dropped_parse++;
    ctr_.rx_reject[static_cast<size_t>(r)]++;
    return true;
  }
  if (v.info->is(wire::op::kUd)) return dispatch_ud(f, v, now, icrc_checked);
  const uint32_t qpn = v.bth->dest_qp();
  Qp* qp = find_qp(qpn);
  if (qp == nullptr) {
    if (group_ != nullptr && !icrc_checked) {
      const size_t owner = EngineGroup::owner(qpn);
      if (owner < group_->size() && owner != group_index_) return !hand_off(f, owner);
    }
    ctr_.rx_no_qp++;
    return true;
  }
  qp->on_packet(v, now);
  if (std::find(touched_.begin(), touched_.end(), qp) == touched_.end()) touched_.push_back(qp);
  return true;
}

uint32_t Engine::poll(uint64_t now) {
  // Frames other engines of the group received for our queue pairs.
  uint32_t moved = 0;
  bool handed_in_full = false;  // a ring still held frames after a burst
  if (group_ != nullptr) {
    release_.clear();
    for (size_t from = 0; from < group_->size(); ++from) {
      if (from == group_index_) continue;
      Frame f;
      auto& ring = group_->ring(from, group_index_);
      uint16_t k = 0;
      for (; k < cfg_.burst && ring.pop(&f); ++k) {
        ctr_.handed_in++;
        dispatch(f, now, /*icrc_checked=*/true);
        release_.push_back(f);
      }
      handed_in_full |= k == cfg_.burst;
    }
    moved += static_cast<uint32_t>(release_.size());
    if (!release_.empty()) io_.rx_release(release_.data(), static_cast<uint16_t>(release_.size()));
  }
  if (last_poll_ns_ != 0 && now - last_poll_ns_ >= cfg_.poll_gap_ns) back_from_gap_ns_ = now;
  last_poll_ns_ = now;
  // RX before timers: an ACK already waiting in the RX queue must be seen
  // before a retransmission timer for the packets it acknowledges fires.
  const uint16_t n = io_.rx_burst(rx_.data(), cfg_.burst);
  release_.clear();
  for (uint16_t i = 0; i < n; ++i) {
    if (i + 1 < n) {  // the next frame's headers while this one is parsed
      __builtin_prefetch(rx_[i + 1].data);
      __builtin_prefetch(rx_[i + 1].data + 64);
    }
    ctr_.rx_frames++;
    if (dispatch(rx_[i], now, /*icrc_checked=*/false)) release_.push_back(rx_[i]);
  }
  if (!release_.empty()) io_.rx_release(release_.data(), static_cast<uint16_t>(release_.size()));
  for (Qp* qp : touched_) qp->end_of_burst(now);
  touched_.clear();

  const bool rx_drained = !handed_in_full && n < cfg_.burst;
  run_timers(now, rx_drained);

  progress_active(now);
  const uint32_t sent = flush_tx();
  return n + moved + sent;
}

void Engine::progress_active(uint64_t now) {
  active_next_.clear();
  std::swap(active_, active_next_);
  for (Qp* qp : active_next_) {
    qp->on_active_list_ = false;
    if (qp->progress(now)) activate(qp);
  }
  std::erase_if(ud_waiting_, [](UdQp* ud) { return !ud->drain_sends(); });
}

bool Engine::idle() const {
  if (!active_.empty() || !tx_ready_.empty() || !ud_waiting_.empty()) return false;
  for (const auto& qp : qps_)
    if (qp != nullptr && qp->has_pending_work()) return false;
  return true;
}

}  // namespace dpdat::rc
