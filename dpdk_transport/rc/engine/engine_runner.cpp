#include "rc/engine/engine_runner.hpp"

#include "rc/qp/qp.hpp"

#include <pthread.h>

#include <algorithm>
#include <ctime>

namespace dpdat::rc {
namespace {

EngineLoopConfig loop_config(const RunnerConfig& c) {
  EngineLoopConfig l;
  l.busy = c.policy == IdlePolicy::kBusyPoll;
  l.backoff = BackoffConfig{uint64_t{c.spin_us} * 1000, c.max_sleep_us};
  return l;
}

}  // namespace

EngineRunner::EngineRunner(Engine& engine, const RunnerConfig& cfg, Clock clock)
    : engine_(engine), cfg_(cfg), loop_(loop_config(cfg), clock), inbox_(cfg.inbox_depth) {}

EngineRunner::~EngineRunner() { stop(); }

void EngineRunner::start() {
  if (thread_.joinable()) return;
  loop_.restart();
  thread_ = std::thread([this] {
    pin_this_thread(cfg_.cpu);
    if (cfg_.on_start) cfg_.on_start();
    loop_.run(*this);
  });
  tid_ = thread_.native_handle();
}

RunnerCounters EngineRunner::counters() const {
  RunnerCounters c;
  c.polls = loop_.turns();
  c.sleeps = loop_.sleeps();
  c.posts = posts_.load(std::memory_order_relaxed);
  c.rejected_posts = rejected_posts_.load(std::memory_order_relaxed);
  return c;
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
  loop_.stop();
  thread_.join();
}

bool EngineRunner::post(const Cmd& c) {
  if (!inbox_.push(c)) return false;
  posts_.store(posts_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  // A busy loop never sleeps: nothing to wake (and no fence to pay).
  if (!loop_.config().busy) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    loop_.wake();
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
  lk.unlock();
  loop_.notify();  // a sleeping loop sees call_pending_ (work_waiting)
  lk.lock();
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
      rejected_posts_.fetch_add(1, std::memory_order_relaxed);
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

bool EngineRunner::turn(uint64_t now) {
  if (call_pending_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lk(mu_);
    (*call_fn_)();
    call_pending_.store(false);
    call_done_.notify_all();
  }
  if (last_traffic_ == 0) last_traffic_ = now;  // a new thread spins its window first
  const bool posted = drain_inbox();
  const uint32_t work = engine_.poll(now);
  const bool moved = work != 0 || posted || has_pending_;
  if (moved) last_traffic_ = now;
  return moved;
}

uint64_t EngineRunner::next_due(uint64_t) {
  const uint64_t t = engine_.next_timer_deadline();  // 0: none
  return t == 0 ? UINT64_MAX : t;
}

// Queue pairs still in flight (waiting for the peer's ACKs or responses)
// sleep shorter: the peer's engine may be the thread this one keeps from a
// CPU (more engine threads than CPUs).
uint64_t EngineRunner::sleep_cap(uint64_t ns) {
  if (engine_.idle_now()) return ns;
  return std::min<uint64_t>(ns, uint64_t{cfg_.active_max_sleep_us} * 1000);
}

}  // namespace dpdat::rc
