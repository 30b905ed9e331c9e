// Passive-side progress: one thread per engine (shard) of an interface in
// `busy` or `adaptive` mode (IfaceConfig::progress; `inline` has none),
// pinned to its CPU when the interface names CPUs (cpus=).  The threads
// start with the interface's first IA and end with its last.
//
// busy      polls without pause: a passive RDMA target is served within a
//           poll, at the price of a core per engine.  Consumers leave the
//           engine to it while it runs (Shard::beat): their posts are
//           handed over, their waits watch the EVD.
// adaptive  steps aside while a consumer drives the engine (it polled,
//           posted or waited within the last idle_us), spins while traffic
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
#include <sched.h>
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "core.hpp"
#include "rc/backoff.hpp"

namespace dpdat::dat {
namespace {

// Longest sleep of an adaptive thread on a link that wakes it on RX.
constexpr uint64_t kRxWaitNs = 1'000'000;

void pin(Shard* s) {
  if (s->cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<size_t>(s->cpu), &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
    std::fprintf(stderr, "dpdat: engine %u: cannot pin its progress thread to CPU %d\n", s->index,
                 s->cpu);
}

void progress_main(Iface* f, Shard* s) {
  // Sleeps as short as asked: the default slack (50 us) would stretch every
  // back-off step and the wake-ups of a thread stepping aside.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  pin(s);
  f->link->register_thread();
  const bool busy = f->cfg.progress == ProgressMode::kBusy;
  const uint64_t grace_ns = uint64_t{f->cfg.idle_us} * 1000;
  const bool rx_wait = f->link->rx_wakeups() && f->shards.size() == 1;
  const uint64_t spin_ns = uint64_t{f->cfg.spin_us} * 1000;
  rc::Backoff backoff(rc::BackoffConfig{spin_ns, f->cfg.idle_us});
  uint64_t beat = 0;
  while (!s->stop.load(std::memory_order_acquire)) {
    uint64_t now = now_ns();
    if (busy && now - beat >= Shard::kBeatNs) {
      beat = now;
      s->beat.store(now, std::memory_order_relaxed);
    }
    if (!busy && now - s->last_consumer_progress.load(std::memory_order_relaxed) < grace_ns) {
      // A consumer drives: out of its way until it has not for idle_us, or
      // says it stopped (Iface::consumer_stopped).
      std::unique_lock<std::mutex> lk(s->prog_mu);
      s->prog_cv.wait_for(lk, std::chrono::microseconds(f->cfg.idle_us), [s, grace_ns] {
        return s->stop.load(std::memory_order_relaxed) ||
               now_ns() - s->last_consumer_progress.load(std::memory_order_relaxed) >= grace_ns;
      });
      continue;
    }
    bool moved = f->drive_shard(*s, now, false);
    if (s->index == 0 && f->control_due(now_ns())) {
      // The step could not take the interface lock without waiting (another
      // engine's driver held its token, or a control call ran): wait for it.
      IfaceLock lk(f);
      moved |= f->step(*s, now_ns(), true);
    }
    run_upcalls();
    if (moved || busy) {
      backoff.moved(now);
      continue;
    }
    now = now_ns();
    const uint64_t timer = s->engine->next_timer_deadline();  // 0: none
    uint64_t traffic = s->last_traffic.load(std::memory_order_relaxed);
    // This engine's RX queue carries frames of other engines' queue pairs
    // (it handed some over lately): their traffic keeps it awake too.
    if (f->group != nullptr && now - s->last_handoff.load(std::memory_order_relaxed) < spin_ns)
      traffic = std::max(traffic, f->last_traffic(f->all_shards()));
    const uint64_t sleep_ns = backoff.idle(
        now, traffic, timer == 0 ? UINT64_MAX : timer,
        s->index == 0 ? f->next_housekeeping.load(std::memory_order_relaxed) : UINT64_MAX);
    if (sleep_ns == 0) {
      cpu_relax();
      continue;
    }
    if (rx_wait) {
      // A frame ends the sleep (RX interrupt): the timer only bounds it, for
      // the engine's and the CM's timers.
      f->link->wait_rx(std::min(sleep_ns, kRxWaitNs));
      continue;
    }
    // A post handed to this engine, or frames another engine handed over,
    // end the sleep early (Shard::wake).
    s->sleeping.store(true, std::memory_order_seq_cst);
    if (!s->handoff.pending() && !s->engine->has_handed_in()) {
      std::unique_lock<std::mutex> lk(s->prog_mu);
      s->prog_cv.wait_for(lk, std::chrono::nanoseconds(sleep_ns));
    }
    s->sleeping.store(false, std::memory_order_relaxed);
  }
  s->beat.store(0, std::memory_order_relaxed);  // consumers drive it from now on
}

}  // namespace

void Iface::start_threads() {
  std::lock_guard<std::mutex> g(threads_mu);
  if (threads_running || cfg.progress == ProgressMode::kInline) return;
  for (auto& s : shards) {
    s->stop.store(false);
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
  for (auto& s : shards) {
    s->stop.store(true, std::memory_order_release);
    s->notify();
  }
  link->wake();
  for (auto& s : shards)
    if (s->thread.joinable()) s->thread.join();
  threads_running = false;
}

}  // namespace dpdat::dat
