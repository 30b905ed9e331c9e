#include "sim/sim_link.hpp"

#include <algorithm>
#include <cstring>

namespace dpdat::rc {

class SimLink::End final : public PacketIo {
 public:
  End(SimLink& link, int id) : link_(link), id_(id) {}

  uint16_t rx_burst(Frame* out, uint16_t max) override {
    auto& q = link_.queue_[id_];
    auto& held = link_.held_[id_];
    if (q.empty() && !held.empty()) {
      // Nothing overtook the held frames: let them through now.
      for (auto& h : held) q.push_back(h);
      held.clear();
    }
    uint16_t n = 0;
    while (n < max && !q.empty() && q.front().ready_ns <= link_.now_ns_) {
      const InFlight f = q.front();
      q.pop_front();
      out[n].data = f.buf->data;
      out[n].len = f.len;
      out[n].cap = kBufSize;
      out[n].handle = f.buf;
      ++n;
    }
    return n;
  }
  void rx_release(Frame* frames, uint16_t n) override {
    for (uint16_t i = 0; i < n; ++i) link_.put_buf(static_cast<Buf*>(frames[i].handle));
  }
  uint16_t tx_alloc(Frame* out, uint16_t n, uint32_t size) override {
    if (size > kBufSize) return 0;
    uint16_t got = 0;
    for (; got < n; ++got) {
      Buf* b = link_.get_buf();
      if (b == nullptr) break;
      out[got] = Frame{b->data, 0, kBufSize, b};
    }
    return got;
  }
  uint16_t tx_burst(Frame* frames, uint16_t n) override {
    const int to = 1 - id_;
    uint16_t i = 0;
    for (; i < n; ++i) {
      if (link_.queue_[to].size() + link_.held_[to].size() >= link_.queue_limit_) {
        link_.stats_[id_].tx_full++;
        break;  // back-pressure: the caller keeps the rest
      }
      link_.offer(id_, static_cast<Buf*>(frames[i].handle), frames[i].len);
    }
    return i;
  }
  void tx_free(Frame* frames, uint16_t n) override { rx_release(frames, n); }

 private:
  SimLink& link_;
  int id_;
};

SimLink::SimLink(uint64_t seed, size_t pool_frames, size_t queue_limit)
    : rng_(seed), queue_limit_(queue_limit) {
  // Frames are made on first use (get_buf), up to pool_frames: a test pair
  // that moves a few frames does not pay for the whole pool.
  bufs_.reserve(pool_frames);
  free_.reserve(pool_frames);
  bufs_total_ = pool_frames;
  ends_[0] = std::make_unique<End>(*this, 0);
  ends_[1] = std::make_unique<End>(*this, 1);
}

SimLink::~SimLink() = default;

PacketIo& SimLink::end(int i) { return *ends_[i & 1]; }

void SimLink::set_impairment(int from_end, const LinkImpairment& imp) { imp_[from_end & 1] = imp; }

const LinkStats& SimLink::stats(int from_end) const { return stats_[from_end & 1]; }

size_t SimLink::pending(int to_end) const {
  return queue_[to_end & 1].size() + held_[to_end & 1].size();
}

SimLink::Buf* SimLink::get_buf() {
  if (free_.empty()) {
    if (bufs_.size() >= bufs_total_) return nullptr;
    bufs_.push_back(std::make_unique_for_overwrite<Buf>());
    return bufs_.back().get();
  }
  Buf* b = free_.back();
  free_.pop_back();
  return b;
}

void SimLink::put_buf(Buf* b) { free_.push_back(b); }

uint64_t LinkStats::queue_delay_quantile(double q) const {
  uint64_t total = 0;
  for (const uint64_t n : queue_delay_hist) total += n;
  if (total == 0) return 0;
  const auto want = static_cast<uint64_t>(q * static_cast<double>(total));
  uint64_t seen = 0;
  for (size_t i = 0; i < kDelayBuckets; ++i) {
    seen += queue_delay_hist[i];
    if (seen > want || seen == total) return (i + 1) * kDelayBucketNs;
  }
  return kDelayBuckets * kDelayBucketNs;
}

bool SimLink::red_marks(const LinkImpairment& imp, uint64_t backlog) {
  if (imp.ecn_max_bytes <= imp.ecn_threshold_bytes || backlog >= imp.ecn_max_bytes) return true;
  const double p = imp.ecn_pmax * static_cast<double>(backlog - imp.ecn_threshold_bytes) /
                   static_cast<double>(imp.ecn_max_bytes - imp.ecn_threshold_bytes);
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < p;
}

bool SimLink::through_bottleneck(int to_end, Buf* b, uint32_t len, uint64_t* ready_ns) {
  const LinkImpairment& imp = imp_[1 - to_end];
  LinkStats& st = stats_[1 - to_end];
  *ready_ns = now_ns_ + imp.delay_ns;
  if (imp.rate_bps == 0) return true;
  uint64_t& busy = busy_until_ns_[to_end];
  const uint64_t wait_ns = busy > now_ns_ ? busy - now_ns_ : 0;
  // Bytes still queued: what the link has not yet sent of the backlog.
  const auto backlog =
      static_cast<uint64_t>(static_cast<double>(wait_ns) * static_cast<double>(imp.rate_bps) / 8e9);
  if (imp.queue_bytes != 0 && backlog + len > imp.queue_bytes) {
    st.overflow_drops++;
    return false;
  }
  constexpr size_t kTos = 14 + 1;  // Ethernet header, then the IPv4 TOS byte
  if (imp.ecn_threshold_bytes != 0 && backlog >= imp.ecn_threshold_bytes && len > kTos + 20 &&
      (b->data[kTos] & 3u) != 0 && (b->data[kTos] & 3u) != 3u && red_marks(imp, backlog)) {
    // CE, and the IPv4 header checksum follows (RFC 1624: ~HC' = ~HC + ~m + m').
    const uint16_t old_word = static_cast<uint16_t>((b->data[14] << 8) | b->data[kTos]);
    b->data[kTos] = static_cast<uint8_t>(b->data[kTos] | 3u);
    const uint16_t new_word = static_cast<uint16_t>((b->data[14] << 8) | b->data[kTos]);
    uint32_t sum = static_cast<uint16_t>(~((b->data[24] << 8) | b->data[25]) & 0xFFFF);
    sum += static_cast<uint16_t>(~old_word & 0xFFFF);
    sum += new_word;
    while (sum > 0xFFFF) sum = (sum & 0xFFFF) + (sum >> 16);
    const auto csum = static_cast<uint16_t>(~sum & 0xFFFF);
    b->data[24] = static_cast<uint8_t>(csum >> 8);
    b->data[25] = static_cast<uint8_t>(csum & 0xFF);
    st.ecn_marked++;
  }
  st.queue_delay_max_ns = std::max(st.queue_delay_max_ns, wait_ns);
  st.queue_delay_hist[std::min<uint64_t>(wait_ns / LinkStats::kDelayBucketNs,
                                         LinkStats::kDelayBuckets - 1)]++;
  const uint64_t tx_ns = (uint64_t{len} * 8 * 1'000'000'000 + imp.rate_bps - 1) / imp.rate_bps;
  busy = std::max(busy, now_ns_) + tx_ns;
  *ready_ns = busy + imp.delay_ns;
  return true;
}

bool SimLink::enqueue(int to_end, Buf* b, uint32_t len) {
  auto& q = queue_[to_end];
  auto& held = held_[to_end];
  uint64_t ready = 0;
  if (!through_bottleneck(to_end, b, len, &ready)) {
    put_buf(b);
    return false;
  }
  if (const LinkImpairment& imp = imp_[1 - to_end]; imp.stall_period_ns != 0) {
    const uint64_t phase = ready % imp.stall_period_ns;
    if (phase < imp.stall_ns) ready += imp.stall_ns - phase;  // the receiver is descheduled
  }
  q.push_back(InFlight{b, len, ready});
  if (!held.empty() && --held_countdown_[to_end] == 0) {
    for (auto& h : held) {
      h.ready_ns = now_ns_ + imp_[1 - to_end].delay_ns;
      q.push_back(h);
    }
    held.clear();
  }
  return true;
}

void SimLink::offer(int from_end, Buf* b, uint32_t len) {
  const int to = 1 - from_end;
  LinkStats& st = stats_[from_end];
  const LinkImpairment& imp = imp_[from_end];
  st.offered++;
  if (capture_)
    captured_.push_back(Captured{from_end, std::vector<uint8_t>(b->data, b->data + len)});
  if (filter_ && !filter_(from_end, b->data, len)) {
    st.dropped++;
    put_buf(b);
    return;
  }
  std::uniform_real_distribution<double> u(0.0, 1.0);
  if (imp.loss > 0 && u(rng_) < imp.loss) {
    st.dropped++;
    put_buf(b);
    return;
  }
  if (imp.corrupt > 0 && u(rng_) < imp.corrupt && len > 0) {
    const uint64_t bit = rng_() % (uint64_t{len} * 8);
    b->data[bit / 8] = static_cast<uint8_t>(b->data[bit / 8] ^ (1u << (bit % 8)));
    st.corrupted++;
  }
  if (imp.duplicate > 0 && u(rng_) < imp.duplicate) {
    if (Buf* d = get_buf(); d != nullptr) {
      std::memcpy(d->data, b->data, len);
      st.duplicated++;
      enqueue(to, d, len);
    }
  }
  if (imp.reorder > 0 && u(rng_) < imp.reorder) {
    st.reordered++;
    if (held_[to].empty()) held_countdown_[to] = imp.reorder_hold == 0 ? 1 : imp.reorder_hold;
    held_[to].push_back(InFlight{b, len, 0});
    return;
  }
  if (enqueue(to, b, len)) st.delivered++;
}

uint16_t SimLink::loop_back(int end, Frame* frames, uint16_t n) {
  end &= 1;
  uint16_t i = 0;
  for (; i < n; ++i) {
    if (queue_[end].size() + held_[end].size() >= queue_limit_) {
      stats_[end].tx_full++;
      break;
    }
    queue_[end].push_back(InFlight{static_cast<Buf*>(frames[i].handle), frames[i].len, now_ns_});
    stats_[end].looped++;
  }
  return i;
}

void SimLink::inject(int to_end, const uint8_t* data, uint32_t len) {
  Buf* b = get_buf();
  if (b == nullptr || len > kBufSize) {
    if (b != nullptr) put_buf(b);
    return;
  }
  std::memcpy(b->data, data, len);
  stats_[1 - (to_end & 1)].injected++;
  queue_[to_end & 1].push_back(InFlight{b, len, now_ns_});
}

}  // namespace dpdat::rc
