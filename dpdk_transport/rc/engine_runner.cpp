#include "engine_runner.hpp"

#include "backoff.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <ctime>

namespace dpdat::rc {

EngineRunner::EngineRunner(Engine& engine, const RunnerConfig& cfg, Clock clock)
    : engine_(engine), cfg_(cfg), clock_(clock), inbox_(cfg.inbox_depth) {}

EngineRunner::~EngineRunner() { stop(); }

void EngineRunner::start() {
  if (thread_.joinable()) return;
  stop_.store(false);
  thread_ = std::thread([this] {
    if (cfg_.cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(static_cast<unsigned>(cfg_.cpu), &set);
      pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    if (cfg_.on_start) cfg_.on_start();
    loop();
  });
  tid_ = thread_.native_handle();
}

double EngineRunner::cpu_seconds() const {
  if (!thread_.joinable()) return 0;
  clockid_t cid;
  timespec ts{};
  if (pthread_getcpuclockid(tid_, &cid) != 0 || clock_gettime(cid, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

void EngineRunner::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lk(mu_);
    cv_.notify_all();
  }
  thread_.join();
}

bool EngineRunner::post(const Cmd& c) {
  if (!inbox_.push(c)) return false;
  ctr_.posts++;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lk(mu_);
    cv_.notify_one();
  }
  return true;
}

void EngineRunner::call(const std::function<void()>& fn) {
  if (!thread_.joinable()) {  // not started: the caller is the only thread
    fn();
    return;
  }
  std::lock_guard<std::mutex> one(call_mu_);
  std::unique_lock<std::mutex> lk(mu_);
  call_fn_ = &fn;
  call_pending_.store(true);
  cv_.notify_all();
  call_done_.wait(lk, [&] { return !call_pending_.load(); });
}

// Hands queued work requests to their queue pairs, in order.
bool EngineRunner::drain_inbox() {
  bool did = false;
  for (;;) {
    if (!has_pending_) {
      if (!inbox_.pop(&pending_)) break;
      has_pending_ = true;
    }
    Qp* qp = pending_.qp;
    const uint64_t cookie = pending_.is_send ? pending_.send.cookie : pending_.recv.cookie;
    if (pending_rejected_) {
      // Refused earlier; its error completion waits for room in the CQ.
      if (!qp->complete_rejected(pending_.is_send, cookie)) break;
      pending_rejected_ = false;
      has_pending_ = false;
      did = true;
      continue;
    }
    const Qp::PostResult r =
        pending_.is_send ? qp->post_send(pending_.send) : qp->post_recv(pending_.recv);
    if (r == Qp::PostResult::kQueueFull) break;  // keep order: retry after progress
    if (r != Qp::PostResult::kOk) {
      ctr_.rejected_posts++;
      if (!qp->complete_rejected(pending_.is_send, cookie)) {
        // CQ full: keep the error completion (and the order behind it) until
        // the consumer makes room; nothing is dropped.
        pending_rejected_ = true;
        break;
      }
    }
    has_pending_ = false;
    did = true;
  }
  return did;
}

void EngineRunner::loop() {
  // The same back-off as the product's progress threads (backoff.hpp).
  Backoff backoff(BackoffConfig{uint64_t{cfg_.spin_us} * 1000, cfg_.max_sleep_us});
  uint64_t last_traffic = clock_();
  while (!stop_.load(std::memory_order_relaxed)) {
    if (call_pending_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lk(mu_);
      (*call_fn_)();
      call_pending_.store(false);
      call_done_.notify_all();
    }
    const bool posted = drain_inbox();
    const uint64_t now = clock_();
    const uint32_t work = engine_.poll(now);
    ctr_.polls++;
    if (work != 0 || posted || has_pending_) {
      last_traffic = now;
      backoff.moved(now);
      continue;
    }
    if (cfg_.policy == IdlePolicy::kBusyPoll) continue;
    const uint64_t timer = engine_.next_timer_deadline();  // 0: none
    uint64_t ns = backoff.idle(now, last_traffic, timer == 0 ? UINT64_MAX : timer);
    if (ns == 0) continue;
    // Queue pairs still in flight (waiting for the peer's ACKs or responses)
    // sleep shorter: the peer's engine may be the thread this one keeps from
    // a CPU (more engine threads than CPUs).
    if (!engine_.idle_now()) ns = std::min<uint64_t>(ns, uint64_t{cfg_.active_max_sleep_us} * 1000);
    std::unique_lock<std::mutex> lk(mu_);
    sleeping_.store(true);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    ctr_.sleeps++;
    const bool woke = cv_.wait_for(lk, std::chrono::nanoseconds(ns), [&] {
      return !inbox_.empty() || stop_.load() || call_pending_.load();
    });
    sleeping_.store(false);
    if (woke) ctr_.wakeups_by_post++;
  }
}

}  // namespace dpdat::rc
