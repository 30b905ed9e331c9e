#include "sim_factory.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace dpdat::proto {
namespace {

struct EndState {
  bool open = false;
  uint32_t ip = 0;
  wire::MacAddr mac{};
  double loss = 0.0;  // of the frames this end receives
  bool woken = false;
  bool up = true;  // the link's state as this end reports it (SimWire::set_link_up)
};

std::atomic<uint64_t> g_skew{0};  // SimWire::advance_clock

// The interfaces' clock: steady time, plus what tests moved it on.
uint64_t sim_now_ns() { return dat::steady_now_ns() + g_skew.load(std::memory_order_relaxed); }

struct Wire {
  explicit Wire(uint64_t seed) : link(seed) {}
  std::mutex mu;
  std::condition_variable cv;  // a frame was sent, or an end was woken
  rc::SimLink link;
  EndState ends[2];

  void apply_loss(int end) {
    rc::LinkImpairment imp;
    imp.loss = ends[end].loss;
    link.set_impairment(1 - end, imp);
  }
  void step_clock() {
    // Monotonic under mu: the link's clock only decides when delayed frames
    // become receivable.
    link.set_now(std::max(link.now(), sim_now_ns()));
  }
};

Wire* g_wire = nullptr;  // made by install_sim_link, lives for the process

// One end's packet I/O: the SimLink end, every call under the wire's lock.
// An end opened with several queues (engines=) sends on all of them and
// receives on queue 0 only, as a link that cannot steer does: the engines
// hand each other what is theirs.
class EndIo final : public rc::PacketIo {
 public:
  EndIo(Wire& w, int end, bool rx = true) : w_(w), end_(end), io_(w.link.end(end)), rx_(rx) {}
  uint16_t rx_burst(rc::Frame* out, uint16_t max) override {
    if (!rx_) return 0;
    std::lock_guard<std::mutex> lk(w_.mu);
    w_.step_clock();
    return io_.rx_burst(out, max);
  }
  void rx_release(rc::Frame* frames, uint16_t n) override {
    std::lock_guard<std::mutex> lk(w_.mu);
    io_.rx_release(frames, n);
  }
  uint16_t tx_alloc(rc::Frame* out, uint16_t n, uint32_t size) override {
    std::lock_guard<std::mutex> lk(w_.mu);
    return io_.tx_alloc(out, n, size);
  }
  uint16_t tx_burst(rc::Frame* frames, uint16_t n) override {
    uint16_t sent = 0;
    {
      std::lock_guard<std::mutex> lk(w_.mu);
      w_.step_clock();
      // In order, as runs for the other end and runs for this end itself
      // (the software loopback of dpdk::Port); a run not taken whole ends
      // the burst.
      const wire::MacAddr& own = w_.ends[end_].mac;
      auto to_self = [&own](const rc::Frame& f) {
        return f.len >= sizeof(wire::EthHdr) && std::memcmp(f.data, own.data(), own.size()) == 0;
      };
      while (sent < n) {
        const bool self = to_self(frames[sent]);
        uint16_t run = 1;
        while (sent + run < n && to_self(frames[sent + run]) == self) ++run;
        const uint16_t took =
            self ? w_.link.loop_back(end_, frames + sent, run) : io_.tx_burst(frames + sent, run);
        sent = static_cast<uint16_t>(sent + took);
        if (took < run) break;
      }
    }
    if (sent > 0) w_.cv.notify_all();
    return sent;
  }
  void tx_free(rc::Frame* frames, uint16_t n) override {
    std::lock_guard<std::mutex> lk(w_.mu);
    io_.tx_free(frames, n);
  }

 private:
  Wire& w_;
  int end_;
  rc::PacketIo& io_;
  bool rx_;
};

// Largest RoCE path MTU within an Ethernet MTU (the rule of dpdk::Port:
// IPv4 20 + UDP 8 + BTH 12 + the longest extension chain 28 + ICRC 4).
uint32_t pmtu_for(uint32_t mtu) {
  const uint32_t room = mtu > 72 ? mtu - 72u : 0u;
  for (uint32_t p = 4096; p >= 256; p /= 2)
    if (p <= room) return p;
  return 256;
}

class SimEndLink final : public dat::Link {
 public:
  SimEndLink(Wire& w, int end, uint32_t mtu, uint32_t queues)
      : w_(w), end_(end), io_(w, end), mtu_(mtu) {
    for (uint32_t q = 1; q < queues; ++q) more_.push_back(std::make_unique<EndIo>(w, end, false));
  }
  ~SimEndLink() override {
    std::lock_guard<std::mutex> lk(w_.mu);
    w_.ends[end_] = EndState{};
    w_.apply_loss(end_);
  }
  SimEndLink(const SimEndLink&) = delete;
  SimEndLink& operator=(const SimEndLink&) = delete;

  rc::PacketIo& io() override { return io_; }
  uint32_t queues() const override { return static_cast<uint32_t>(more_.size() + 1); }
  rc::PacketIo& io(uint32_t q) override { return q == 0 ? io_ : *more_[q - 1]; }
  const wire::MacAddr& mac() const override { return w_.ends[end_].mac; }
  uint32_t ip() const override { return w_.ends[end_].ip; }
  uint32_t max_pmtu() const override { return pmtu_for(mtu_); }
  void add_neighbor(uint32_t ip, const wire::MacAddr& mac) override { cache_[ip] = mac; }
  bool resolve(uint32_t ip, wire::MacAddr* mac) override {
    if (ip == w_.ends[end_].ip && ip != 0) {  // ourselves: the loopback carries it
      *mac = w_.ends[end_].mac;
      return true;
    }
    if (auto it = cache_.find(ip); it != cache_.end()) {
      *mac = it->second;
      return true;
    }
    // The request goes out; the other end answers if the address is its.
    std::lock_guard<std::mutex> lk(w_.mu);
    const EndState& peer = w_.ends[1 - end_];
    if (peer.open && peer.ip == ip) cache_[ip] = peer.mac;
    return false;
  }
  bool link_up() const override {
    std::lock_guard<std::mutex> lk(w_.mu);
    return w_.ends[end_].up;
  }
  uint64_t looped_frames() const override {
    std::lock_guard<std::mutex> lk(w_.mu);
    return w_.link.stats(end_).looped;
  }
  bool rx_wakeups() const override { return true; }
  void wait_rx(uint64_t timeout_ns) override {
    std::unique_lock<std::mutex> lk(w_.mu);
    w_.cv.wait_for(lk, std::chrono::nanoseconds(timeout_ns),
                   [this] { return w_.link.pending(end_) > 0 || w_.ends[end_].woken; });
    w_.ends[end_].woken = false;
  }
  void wake() override {
    {
      std::lock_guard<std::mutex> lk(w_.mu);
      w_.ends[end_].woken = true;
    }
    w_.cv.notify_all();
  }

 private:
  Wire& w_;
  int end_;
  EndIo io_;
  std::vector<std::unique_ptr<EndIo>> more_;  // queues 1.. (send only)
  uint32_t mtu_;
  std::unordered_map<uint32_t, wire::MacAddr> cache_;
};

std::unique_ptr<dat::Link> open_sim(const dat::IfaceConfig& cfg, dat::LinkError* err,
                                    std::string* why) {
  *err = dat::LinkError::kNotFound;
  if (g_wire == nullptr) {
    *why = "simulated link: no wire (install_sim_link)";
    return nullptr;
  }
  if (cfg.ring_end != 0 && cfg.ring_end != 1) {
    *why = "simulated link: only ring=0 and ring=1 exist";
    return nullptr;
  }
  const int end = cfg.ring_end;
  std::lock_guard<std::mutex> lk(g_wire->mu);
  EndState& e = g_wire->ends[end];
  if (e.open) {
    *err = dat::LinkError::kDevice;
    *why = "simulated link: ring=" + std::to_string(end) + " is open already";
    return nullptr;
  }
  e.open = true;
  e.ip = cfg.ip;
  e.mac = wire::MacAddr{0x02,
                        0x51,
                        static_cast<uint8_t>(cfg.ip >> 24),
                        static_cast<uint8_t>(cfg.ip >> 16),
                        static_cast<uint8_t>(cfg.ip >> 8),
                        static_cast<uint8_t>(cfg.ip)};
  e.loss = cfg.loss;
  e.woken = false;
  g_wire->apply_loss(end);
  *err = dat::LinkError::kNone;
  return std::make_unique<SimEndLink>(*g_wire, end, cfg.mtu, cfg.engines);
}

constexpr dat::LinkFactory kSimFactory{"sim", &open_sim, &sim_now_ns};

SimWire g_handle;

}  // namespace

void SimWire::with_link(const std::function<void(rc::SimLink&)>& fn) {
  std::lock_guard<std::mutex> lk(g_wire->mu);
  fn(g_wire->link);
}

void SimWire::reset() {
  std::lock_guard<std::mutex> lk(g_wire->mu);
  g_wire->link.set_filter(nullptr);
  g_wire->link.set_capture(false);
  g_wire->link.clear_captured();
  g_wire->apply_loss(0);
  g_wire->apply_loss(1);
  g_wire->ends[0].up = g_wire->ends[1].up = true;
}

void SimWire::advance_clock(uint64_t ns) { g_skew.fetch_add(ns, std::memory_order_relaxed); }

void SimWire::set_link_up(int end, bool up) {
  std::lock_guard<std::mutex> lk(g_wire->mu);
  g_wire->ends[end].up = up;
}

SimWire& install_sim_link(uint64_t seed) {
  static std::once_flag once;
  std::call_once(once, [seed] { g_wire = new Wire(seed); });
  dat::set_link_factory(&kSimFactory);
  return g_handle;
}

const dat::LinkFactory& sim_link_factory() { return kSimFactory; }

}  // namespace dpdat::proto
