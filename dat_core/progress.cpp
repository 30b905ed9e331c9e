// Passive-side progress: one thread per engine (shard) of an interface in
// `busy` or `adaptive` mode (IfaceConfig::progress; `inline` has none),
// pinned to its CPU when the interface names CPUs (cpus=).  The threads
// start with the interface's first IA and end with its last.
//
// busy      polls without pause: a passive RDMA target is served within a
//           poll, at the price of a core per engine.  Consumers leave the
//           engine to it while it runs (Shard::served): their posts are
//           handed over, their waits watch the EVD.
// adaptive  steps aside while a consumer drives the engine (it polled,
//           posted or waited within the last idle_us), looking again after
//           idle_us and then after doubling intervals up to 5 * idle_us
//           while the consumer keeps driving (or at once when it says it
//           stopped: a blocking wait), spins while traffic
//           moved within the last spin_us, and otherwise sleeps with a
//           doubling back-off (rc::Backoff) capped at idle_us (5 * idle_us
//           after 100 ms without traffic) and never past the engine's next
//           timer, so an idle connected process costs about one wake-up per
//           ms and a packet arriving while it sleeps waits at most that
//           long.  An engine that hands received frames to other engines
//           (the link spread them over its queues by its own hash) counts
//           their traffic as its own while it does.  A single-engine
//           interface on a link that wakes it on RX (Link::rx_wakeups: RX
//           interrupts, the simulated link) sleeps until a frame arrives
//           instead, at most 1 ms (timers).
//
// A thread only ever tries its engine's token (Iface::drive_shard): a
// consumer driving the engine itself is never waited for.  Engine 0's thread
// also runs the connection manager: when the control work falls due and its
// step could not take the interface lock without waiting, it takes it
// (IfaceLock: mu, then every token), so CM messages and timers never wait
// for a consumer call.

#include <pthread.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>

#include "core.hpp"
#include "rc/engine/engine_loop.hpp"

namespace dpdat::dat {
namespace {

// Longest sleep of an adaptive thread on a link that wakes it on RX.
constexpr uint64_t kRxWaitNs = 1'000'000;

// A progress thread's turn in the engine loop (rc::EngineLoop): its
// engine's step, and engine 0's control work.
class ProgressDriver final : public rc::EngineLoop::Driver {
 public:
  ProgressDriver(Iface* f, Shard* s)
      : f_(f),
        s_(s),
        busy_(f->cfg.progress == ProgressMode::kBusy),
        grace_ns_(uint64_t{f->cfg.idle_us} * 1000),
        spin_ns_(uint64_t{f->cfg.spin_us} * 1000),
        rx_wait_(f->link->rx_wakeups() && f->shards.size() == 1) {}

  // Adaptive: a consumer drives; out of its way until it has not for
  // idle_us, or says it stopped (Iface::consumer_stopped).  Each look is a
  // wake-up on the CPU the consumer may share (on a virtual machine it costs
  // that consumer 15-20 us), so while the consumer keeps driving the looks
  // come at doubling intervals, up to the longest sleep of an idle thread
  // (5 * idle_us).  A pause of the consumer shorter than the stand-by it
  // had reached (a time slice lost to the host) keeps that length; a longer
  // one starts over from idle_us.
  bool stand_by(uint64_t now) override {
    const uint64_t quiet = now - s_->last_consumer_progress.load(std::memory_order_relaxed);
    if (busy_ || quiet >= grace_ns_) {
      if (quiet >= standby_ns_) standby_ns_ = grace_ns_;
      return false;
    }
    s_->loop.wait_for(standby_ns_, [this] {
      return now_ns() - s_->last_consumer_progress.load(std::memory_order_relaxed) >= grace_ns_;
    });
    standby_ns_ = std::min(standby_ns_ * 2, kStandbyMax * grace_ns_);
    return true;
  }

  bool turn(uint64_t now) override {
    bool moved = f_->drive_shard(*s_, now, false);
    if (s_->index == 0 && f_->control_due(now_ns())) {
      // The step could not take the interface lock without waiting (another
      // engine's driver held its token, or a control call ran): wait for it.
      const uint64_t wait_from = now_ns();
      IfaceLock lk(f_);
      s_->engine->counters().control_wait_ns += now_ns() - wait_from;
      moved |= f_->step(*s_, now_ns(), true);
    }
    run_upcalls();
    return moved;
  }

  uint64_t last_traffic(uint64_t now) override {
    uint64_t t = s_->last_traffic.load(std::memory_order_relaxed);
    // This engine's RX queue carries frames of other engines' queue pairs
    // (it handed some over lately): their traffic keeps it awake too.
    if (f_->group != nullptr && now - s_->last_handoff.load(std::memory_order_relaxed) < spin_ns_)
      t = std::max(t, f_->last_traffic(f_->all_shards()));
    return t;
  }
  uint64_t next_due(uint64_t) override {
    const uint64_t t = s_->engine->next_timer_deadline();  // 0: none
    return t == 0 ? UINT64_MAX : t;
  }
  uint64_t next_due2(uint64_t) override {
    return s_->index == 0 ? f_->next_housekeeping.load(std::memory_order_relaxed) : UINT64_MAX;
  }
  // A post handed to this engine, or frames another engine handed over,
  // end the sleep early (Shard::wake).
  bool work_waiting() override { return s_->handoff.pending() || s_->engine->has_handed_in(); }
  // A frame ends the sleep (RX interrupt): the timer only bounds it, for the
  // engine's and the CM's timers.
  bool sleep_on_link(uint64_t ns) override {
    if (!rx_wait_) return false;
    f_->link->wait_rx(std::min(ns, kRxWaitNs));
    return true;
  }

 private:
  Iface* f_;
  Shard* s_;
  const bool busy_;
  const uint64_t grace_ns_, spin_ns_;
  const bool rx_wait_;
  // The longest stand-by, in idle_us: the longest sleep of rc::Backoff.
  static constexpr uint64_t kStandbyMax = rc::BackoffConfig{}.deep_factor;
  uint64_t standby_ns_ = grace_ns_;
};

void progress_main(Iface* f, Shard* s) {
  // Sleeps as short as asked: the default slack (50 us) would stretch every
  // back-off step and the wake-ups of a thread stepping aside.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  if (!rc::pin_this_thread(s->cpu))
    std::fprintf(stderr, "dpdat: engine %u: cannot pin its progress thread to CPU %d\n", s->index,
                 s->cpu);
  f->link->register_thread();
  ProgressDriver driver(f, s);
  s->loop.run(driver);
}

}  // namespace

void Iface::start_threads() {
  std::lock_guard<std::mutex> g(threads_mu);
  if (threads_running || cfg.progress == ProgressMode::kInline) return;
  rc::EngineLoopConfig lc;
  lc.busy = cfg.progress == ProgressMode::kBusy;
  lc.backoff = rc::BackoffConfig{uint64_t{cfg.spin_us} * 1000, cfg.idle_us};
  for (auto& s : shards) {
    s->loop.set_config(lc);
    s->loop.restart();
    s->thread = std::thread(progress_main, this, s.get());
    // Named before the interface is handed out, so it is seen by that name.
    const std::string name = "dpdat-prog" + std::to_string(s->index);
    pthread_setname_np(s->thread.native_handle(), name.c_str());
  }
  threads_running = true;
}

void Iface::stop_threads_if_unused() {
  std::lock_guard<std::mutex> g(threads_mu);
  {
    std::lock_guard<std::mutex> m(mu);
    if (ias != 0 || !threads_running) return;
  }
  for (auto& s : shards) s->loop.stop();
  link->wake();
  for (auto& s : shards)
    if (s->thread.joinable()) s->thread.join();
  threads_running = false;
}

}  // namespace dpdat::dat
