#include "link_dpdk/link_factory.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_lcore.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "dpdk/eal.hpp"
#include "dpdk/port.hpp"
#include "dpdk/telemetry.hpp"
#include "dpdk/tsc_clock.hpp"

namespace dpdat::dpdk {
namespace {

// Once the EAL knows the TSC rate (the first link opened), the clock of
// every poll is read from the TSC: ~15 ns against ~50 ns for steady_clock in
// this VM, and every consumer call that progresses reads it.  Anchored to
// steady_clock, so times taken before the switch stay comparable.
constinit std::atomic<const TscClock*> g_tsc{nullptr};

void use_tsc_clock() {
  static std::once_flag once;
  std::call_once(once, [] {
    static const TscClock clock;
    if (clock.uses_tsc()) g_tsc.store(&clock, std::memory_order_release);
  });
}

uint64_t clock_now_ns() {
  const TscClock* c = g_tsc.load(std::memory_order_acquire);
  return c != nullptr ? c->now() : steady_now_ns();
}

// The built-in in-process link: two net_ring ports, made once (on the first
// open of either end, with that end's queue count; a failed attempt is
// retried by the next open).  TX queue i of one end feeds RX queue i of the
// other, so both ends need the same count (engines=).
bool ring_link(uint16_t queues, uint16_t ids[2], std::string* why) {
  static std::mutex mu;
  static bool made = false;
  static uint16_t a = 0, b = 0, made_queues = 0;
  std::lock_guard<std::mutex> lk(mu);
  if (!made) {
    if (!Port::make_ring_link("dpdat_ia", &a, &b, why, queues)) return false;
    made = true;
    made_queues = queues;
  }
  if (queues != made_queues) {
    *why = "ring=: the in-process link was made with " + std::to_string(made_queues) +
           " queue(s) by its other end; both ends need the same engines= (asked " +
           std::to_string(queues) + ")";
    return false;
  }
  ids[0] = a;
  ids[1] = b;
  return true;
}

class DpdkLink final : public dat::Link {
 public:
  DpdkLink(std::unique_ptr<Port> port, std::string name)
      : port_(std::move(port)),
        name_(std::move(name)),
        wake_fd_(port_->rx_fd() >= 0 ? eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC) : -1) {}
  ~DpdkLink() override {
    for (uint32_t i = 0; i < engines_listed_; ++i) telemetry_remove_engine(engine_name(i));
    if (wake_fd_ >= 0) close(wake_fd_);
  }
  DpdkLink(const DpdkLink&) = delete;
  DpdkLink& operator=(const DpdkLink&) = delete;

  rc::PacketIo& io() override { return *port_; }
  uint32_t queues() const override { return port_->queues(); }
  rc::PacketIo& io(uint32_t q) override { return port_->queue(static_cast<uint16_t>(q)); }
  const wire::MacAddr& mac() const override { return port_->mac(); }
  uint32_t ip() const override { return port_->ip(); }
  uint32_t max_pmtu() const override { return port_->max_pmtu(); }
  std::string mtu_note() const override {
    return port_->mtu_note().empty() ? "MTU " + std::to_string(port_->mtu()) : port_->mtu_note();
  }
  void add_neighbor(uint32_t ip, const wire::MacAddr& mac) override {
    port_->add_neighbor(ip, mac);
  }
  bool resolve(uint32_t ip, wire::MacAddr* mac) override { return port_->resolve(ip, mac); }
  uint64_t looped_frames() const override { return port_->counters().rx_looped; }
  // A port whose link has never been up counts as up: a net_memif server's
  // link is down until its peer connects, and verbs servers (perftest) that
  // check the port before they wait for that peer refuse to start on a
  // port that is down.  Once up, the port's own status.
  bool link_up() const override {
    const bool up = port_->link_up();
    if (up) seen_up_.store(true, std::memory_order_relaxed);
    return up || !seen_up_.load(std::memory_order_relaxed);
  }
  // Where the port has an RX interrupt descriptor (net_tap) the interface's
  // progress thread sleeps on it; wake() ends such a sleep early.
  bool rx_wakeups() const override { return port_->rx_fd() >= 0 && wake_fd_ >= 0; }
  void wait_rx(uint64_t timeout_ns) override {
    if (!rx_wakeups()) return;
    if (port_->loop_pending() > 0) return;  // looped back frames raise no interrupt
    pollfd fds[2] = {{port_->rx_fd(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(timeout_ns / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(timeout_ns % 1'000'000'000);
    if (ppoll(fds, 2, &ts, nullptr) > 0 && (fds[1].revents & POLLIN) != 0) {
      uint64_t n = 0;
      (void)!read(wake_fd_, &n, sizeof n);
    }
  }
  void wake() override {
    if (wake_fd_ < 0) return;
    const uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
  }
  void register_thread() override { (void)dpdk::register_thread(); }  // none left: no cache
  void engine_created(const rc::Engine& engine, uint32_t index) override {
    telemetry_add_engine(engine_name(index), &engine);
    engines_listed_ = std::max(engines_listed_, index + 1);
  }

 private:
  std::string engine_name(uint32_t index) const {
    return index == 0 ? name_ : name_ + "." + std::to_string(index);
  }
  std::unique_ptr<Port> port_;
  std::string name_;
  uint32_t engines_listed_ = 0;
  int wake_fd_ = -1;                          // eventfd: wake()
  mutable std::atomic<bool> seen_up_{false};  // link_up(): the port's link was up once
};

std::unique_ptr<dat::Link> open_link(const dat::IfaceConfig& cfg, dat::LinkError* err,
                                     std::string* why) {
  *err = dat::LinkError::kDevice;
  const EalStatus& eal = eal_init();
  if (!eal.ok) {
    *why = eal.error;
    return nullptr;
  }
  use_tsc_clock();
  uint16_t port_id = 0;
  if (cfg.ring_end >= 0) {
    uint16_t ids[2];
    if (!ring_link(static_cast<uint16_t>(cfg.engines), ids, why)) return nullptr;
    port_id = ids[cfg.ring_end];
  } else if (!cfg.vdev.empty()) {
    if (!probe_vdev(cfg.vdev, &port_id, why)) return nullptr;
  } else if (!Port::find(cfg.port, &port_id)) {
    *why = "no ethdev port named " + cfg.port;
    *err = dat::LinkError::kNotFound;
    return nullptr;
  }
  PortConfig pc;
  pc.name = "dpdat_" + cfg.name;
  pc.ip = cfg.ip;
  pc.mtu = cfg.mtu;
  pc.rx_loss = cfg.loss;
  pc.loss_seed = cfg.ip;
  pc.queues = static_cast<uint16_t>(cfg.engines);
  std::unique_ptr<Port> port = Port::open(port_id, pc, why);
  if (!port) return nullptr;
  *err = dat::LinkError::kNone;
  return std::make_unique<DpdkLink>(std::move(port), pc.name);
}

constexpr dat::LinkFactory kFactory{"dpdk", &open_link, &clock_now_ns};

// Installed when this object is linked in (dpdat_link_dpdk is an object
// library, so its object is always part of what links it).  The slot
// set_link_factory() writes is constant-initialised: no order to mind.
[[maybe_unused]] const bool g_installed = (dat::set_link_factory(&kFactory), true);

}  // namespace

const dat::LinkFactory& link_factory() { return kFactory; }

}  // namespace dpdat::dpdk
