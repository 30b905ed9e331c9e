#include "sim_link.hpp"

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
  bufs_.reserve(pool_frames);
  free_.reserve(pool_frames);
  for (size_t i = 0; i < pool_frames; ++i) {
    bufs_.push_back(std::make_unique<Buf>());
    free_.push_back(bufs_.back().get());
  }
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
  if (free_.empty()) return nullptr;
  Buf* b = free_.back();
  free_.pop_back();
  return b;
}

void SimLink::put_buf(Buf* b) { free_.push_back(b); }

void SimLink::enqueue(int to_end, Buf* b, uint32_t len) {
  auto& q = queue_[to_end];
  auto& held = held_[to_end];
  q.push_back(InFlight{b, len, now_ns_ + imp_[1 - to_end].delay_ns});
  if (!held.empty() && --held_countdown_[to_end] == 0) {
    for (auto& h : held) {
      h.ready_ns = now_ns_ + imp_[1 - to_end].delay_ns;
      q.push_back(h);
    }
    held.clear();
  }
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
  st.delivered++;
  enqueue(to, b, len);
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
