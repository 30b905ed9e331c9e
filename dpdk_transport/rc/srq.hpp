#pragma once
// A shared receive queue: receive work requests posted once and consumed by
// whichever attached queue pair receives the next message (a SEND or an RDMA
// WRITE with immediate data).  A queue pair takes a request when a message
// starts and keeps it until the message completes; the completion goes to
// that queue pair's receive CQ.  Same threading as Qp: owned and driven by
// one Engine.

#include <cstdint>
#include <vector>

#include "rc/types.hpp"

namespace dpdat::rc {

class Srq {
 public:
  explicit Srq(uint32_t depth) : ring_(depth == 0 ? 1 : depth) {}
  Srq(const Srq&) = delete;
  Srq& operator=(const Srq&) = delete;

  enum class PostResult : uint8_t { kOk, kQueueFull, kInvalidWr };
  PostResult post(const RecvWr& wr) {
    if (wr.num_sge > kMaxSge) return PostResult::kInvalidWr;
    for (uint32_t i = 0; i < wr.num_sge; ++i)
      if (wr.sge[i].length > (uint64_t{1} << 31)) return PostResult::kInvalidWr;
    if (available() >= ring_.size()) return PostResult::kQueueFull;
    ring_[tail_++ % ring_.size()] = wr;
    return PostResult::kOk;
  }

  // Hands the oldest posted request to a queue pair (false: none posted).
  // Crossing below the armed low watermark raises limit_reached().
  bool take(RecvWr* out) {
    if (head_ == tail_) return false;
    *out = ring_[head_++ % ring_.size()];
    ++outstanding_;
    if (lw_armed_ && available() < low_watermark_) {
      lw_armed_ = false;
      lw_reached_ = true;
    }
    return true;
  }
  // A request taken by a queue pair completed (successfully or not).
  void retire() {
    if (outstanding_ > 0) --outstanding_;
  }

  // Requests posted and not yet taken / taken and not yet completed.
  uint64_t available() const { return tail_ - head_; }
  uint64_t outstanding() const { return outstanding_; }
  uint64_t capacity() const { return ring_.size(); }

  // Changes the capacity; refused (false) below the number still posted.
  bool resize(uint32_t depth) {
    if (depth == 0 || depth < available()) return false;
    std::vector<RecvWr> n(depth);
    for (uint64_t i = 0; head_ + i < tail_; ++i) n[i] = ring_[(head_ + i) % ring_.size()];
    tail_ = available();
    head_ = 0;
    ring_ = std::move(n);
    return true;
  }

  // One-shot low-watermark notification: armed by set_low_watermark(), fired
  // when a take() leaves fewer than `lw` requests posted (at once when that
  // is already so).  limit_reached() reports and clears it.
  void set_low_watermark(uint32_t lw) {
    low_watermark_ = lw;
    lw_armed_ = lw > 0;
    lw_reached_ = false;
    if (lw_armed_ && available() < lw) {
      lw_armed_ = false;
      lw_reached_ = true;
    }
  }
  uint32_t low_watermark() const { return low_watermark_; }
  bool limit_reached() {
    const bool r = lw_reached_;
    lw_reached_ = false;
    return r;
  }

  // The requests never taken, oldest first (the SRQ is being destroyed).
  std::vector<RecvWr> drain() {
    std::vector<RecvWr> out;
    for (; head_ < tail_; ++head_) out.push_back(ring_[head_ % ring_.size()]);
    return out;
  }

 private:
  std::vector<RecvWr> ring_;
  uint64_t head_ = 0, tail_ = 0;
  uint64_t outstanding_ = 0;
  uint32_t low_watermark_ = 0;
  bool lw_armed_ = false;
  bool lw_reached_ = false;
};

}  // namespace dpdat::rc
