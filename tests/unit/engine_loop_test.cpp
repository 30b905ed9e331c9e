// The loop of every engine thread (rc/engine/engine_loop.hpp) with a driver of the
// test's: a busy loop beats while it runs and stops beating when stopped; a
// backing-off loop sleeps when nothing moves, and work handed to it (then
// wake()) ends the sleep long before its deadline; a turn taken off by
// stand_by is not run.

#include "rc/engine/engine_loop.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace {

using dpdat::rc::BackoffConfig;
using dpdat::rc::EngineLoop;
using dpdat::rc::EngineLoopConfig;

uint64_t now() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Counts turns; "work" queued by the test moves on the next turn.
class TestDriver : public EngineLoop::Driver {
 public:
  std::atomic<uint64_t> turns{0}, work{0}, done{0}, stood_by{0};
  std::atomic<bool> stand{false};
  bool stand_by(uint64_t) override {
    if (!stand.load()) return false;
    stood_by++;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    return true;
  }
  bool turn(uint64_t) override {
    turns++;
    if (work.load() == done.load()) return false;
    done.store(work.load());
    return true;
  }
  uint64_t last_traffic(uint64_t) override { return 0; }  // long idle: no spin window
  uint64_t next_due(uint64_t) override { return UINT64_MAX; }
  bool work_waiting() override { return work.load() != done.load(); }
};

template <typename Pred>
bool eventually(Pred p, std::chrono::seconds limit = std::chrono::seconds(20)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (p()) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return p();
}

TEST(EngineLoop, ABusyLoopBeatsWhileItRunsAndNotOnceStopped) {
  EngineLoopConfig cfg;
  cfg.busy = true;
  EngineLoop loop(cfg, &now);
  TestDriver d;
  EXPECT_FALSE(loop.beating(now()));
  std::thread t([&] { loop.run(d); });
  EXPECT_TRUE(eventually([&] { return loop.beating(now()); }));
  EXPECT_TRUE(eventually([&] { return d.turns.load() > 1000; }));
  loop.stop();
  t.join();
  EXPECT_FALSE(loop.beating(now()));
  EXPECT_EQ(loop.sleeps(), 0u);  // busy: never sleeps
  EXPECT_EQ(loop.turns(), d.turns.load());
}

TEST(EngineLoop, AnIdleLoopSleepsAndHandedWorkEndsTheSleep) {
  EngineLoopConfig cfg;
  // Every sleep 10 s long: a lost wake-up shows as a test that waits it
  // out, far past the 2 s allowed below.
  cfg.backoff = BackoffConfig{0, 10'000'000, UINT64_MAX, 1, 10'000'000};
  EngineLoop loop(cfg, &now);
  TestDriver d;
  std::thread t([&] { loop.run(d); });
  uint64_t slept = 0;  // sleeps begun before the last hand-off
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(eventually([&] { return loop.sleeps() > slept; }));
    slept = loop.sleeps();
    if (i % 2 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const uint64_t before = d.done.load();
    d.work++;
    loop.wake();
    EXPECT_TRUE(eventually([&] { return d.done.load() > before; }, std::chrono::seconds(2)))
        << "round " << i << ": the hand-off did not end the sleep";
  }
  EXPECT_FALSE(loop.beating(now()));  // not busy: no heartbeat
  loop.stop();
  t.join();
}

TEST(EngineLoop, ATurnTheDriverStandsByForIsNotTaken) {
  EngineLoop loop(EngineLoopConfig{}, &now);
  TestDriver d;
  d.stand = true;
  std::thread t([&] { loop.run(d); });
  ASSERT_TRUE(eventually([&] { return d.stood_by.load() > 10; }));
  EXPECT_EQ(d.turns.load(), 0u);
  d.stand = false;
  EXPECT_TRUE(eventually([&] { return d.turns.load() > 0; }));
  loop.stop();
  t.join();
}

TEST(EngineLoop, StopEndsASleepingLoopAndALaterRunStartsOver) {
  EngineLoopConfig cfg;
  cfg.backoff = BackoffConfig{0, 10'000'000, UINT64_MAX, 1, 10'000'000};
  EngineLoop loop(cfg, &now);
  TestDriver d;
  for (int round = 0; round < 2; ++round) {
    loop.restart();
    const uint64_t slept = loop.sleeps();
    std::thread t([&] { loop.run(d); });
    ASSERT_TRUE(eventually([&] { return loop.sleeps() > slept; }));
    const auto t0 = std::chrono::steady_clock::now();
    loop.stop();
    t.join();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5)) << "round " << round;
  }
}

}  // namespace
