// Passive-side progress: the progress thread of an interface in `busy` or
// `adaptive` mode (IfaceConfig::progress; `inline` has none).
//
// busy      polls without pause: a passive RDMA target is served within a
//           poll, at the price of a core.
// adaptive  steps aside while a consumer drives the interface (it polled,
//           posted or waited within the last idle_us), spins while traffic
//           moved within the last spin_us, and otherwise sleeps with a
//           doubling back-off capped at idle_us (5 * idle_us after 100 ms
//           without traffic), so an idle connected process costs about one
//           wake-up per ms and a packet arriving while it sleeps waits at
//           most that long.  On a
//           link that wakes it on RX (Link::rx_wakeups: RX interrupts, the
//           simulated link) it sleeps until a frame arrives instead, at most
//           1 ms (timers).
//
// The thread only ever tries the engine token (Iface::drive): a consumer
// driving the interface itself is never waited for.

#include <pthread.h>
#include <sys/prctl.h>

#include <chrono>
#include <ctime>
#include <mutex>
#include <thread>

#include "core.hpp"

namespace dpdat::dat {
namespace {

// After this long without traffic an adaptive thread's sleeps may grow to
// kDeepIdleFactor * idle_us.
constexpr uint64_t kDeepIdleNs = 100'000'000;
constexpr uint64_t kDeepIdleFactor = 5;
// Longest sleep of an adaptive thread on a link that wakes it on RX.
constexpr uint64_t kRxWaitNs = 1'000'000;

void sleep_us(uint64_t us) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(us / 1'000'000);
  ts.tv_nsec = static_cast<long>((us % 1'000'000) * 1000);
  nanosleep(&ts, nullptr);
}

void progress_main(Iface* f) {
  // Sleeps as short as asked: the default slack (50 us) would stretch every
  // back-off step and the wake-ups of a thread stepping aside.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  f->link->register_thread();
  const bool busy = f->cfg.progress == ProgressMode::kBusy;
  const uint64_t idle_us = f->cfg.idle_us;
  const uint64_t spin_ns = uint64_t{f->cfg.spin_us} * 1000;
  const uint64_t grace_ns = idle_us * 1000;
  uint64_t backoff_us = 1;
  for (;;) {
    const uint64_t now = now_ns();
    if (!busy && now - f->last_consumer_progress.load(std::memory_order_relaxed) < grace_ns) {
      // A consumer drives: out of its way until it has not for idle_us, or
      // says it stopped (Iface::consumer_stopped).
      std::unique_lock<std::mutex> lk(f->prog_mu);
      f->prog_cv.wait_for(lk, std::chrono::microseconds(idle_us), [f, grace_ns] {
        return now_ns() - f->last_consumer_progress.load(std::memory_order_relaxed) >= grace_ns;
      });
      continue;
    }
    if (f->drive(now, false) || busy) {
      backoff_us = 1;
      continue;
    }
    if (now - f->last_traffic.load(std::memory_order_relaxed) < spin_ns) {
      cpu_relax();
      continue;
    }
    if (f->link->rx_wakeups()) {
      // A frame ends the sleep (RX interrupt): the timer only bounds it, for
      // the engine's and the CM's timers.
      f->link->wait_rx(kRxWaitNs);
    } else {
      sleep_us(backoff_us);
      // Long idle (no traffic for kDeepIdleNs): the cap grows kDeepIdleFactor
      // times, so an idle connected process costs about one wake-up per ms.
      const bool deep = now - f->last_traffic.load(std::memory_order_relaxed) >= kDeepIdleNs;
      backoff_us = std::min<uint64_t>(backoff_us * 2, deep ? idle_us * kDeepIdleFactor : idle_us);
    }
  }
}

}  // namespace

void start_progress(Iface* f) {
  if (f->cfg.progress == ProgressMode::kInline) return;
  std::thread t(progress_main, f);
  // Named before the interface is handed out, so it is seen by that name.
  pthread_setname_np(t.native_handle(), "dpdat-progress");
  t.detach();  // interfaces live for the process
}

}  // namespace dpdat::dat
