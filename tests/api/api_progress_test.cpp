// Passive-side progress policies (IfaceConfig::progress), through libdat's
// public API: two custom IA names on the two ends of the process's
// in-process net_ring link.  The active side is `inline` and, once
// connected, only ever polls its own EVD with dat_evd_dequeue, which drives
// its own interface and no other; the passive side is a one-sided RDMA
// target in the mode under test and makes no call at all.
// - busy / adaptive: the passive side's progress thread serves the RDMA
//   READs and WRITEs;
// - inline: nothing serves it until a consumer call that drives the
//   process's interfaces (dat_evd_wait does) is made;
// - only busy / adaptive interfaces have a progress thread;
// - an adaptive thread falls asleep once traffic stops and still serves the
//   next request.
// (This binary never opens dpdat0/dpdat1: those are the same two ports.)

#include <arpa/inet.h>
#include <dat/udat.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "conn_side.hpp"

namespace {

using dpdat_test::ConnSide;
using dpdat_test::cookie_of;

constexpr DAT_TIMEOUT kWaitUs = 5'000'000;
constexpr DAT_CONN_QUAL kQual = 4722;
constexpr size_t kLen = 8192;

DAT_RETURN wait(DAT_EVD_HANDLE e, DAT_EVENT* ev, DAT_TIMEOUT t = kWaitUs) {
  DAT_COUNT nmore = 0;
  std::memset(ev, 0, sizeof(*ev));
  return dat_evd_wait(e, t, 1, ev, &nmore);
}

// Threads of this process named like the progress threads.
std::vector<int> progress_threads() {
  std::vector<int> tids;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return tids;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    std::getline(comm, name);
    // One per engine: dpdat-prog0, dpdat-prog1, ...
    if (name.rfind("dpdat-prog", 0) == 0) tids.push_back(std::atoi(e->d_name));
  }
  closedir(d);
  return tids;
}

// utime + stime of a thread of this process, in clock ticks.
long cpu_ticks(int tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(f, line);
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime + stime;
}

// Voluntary context switches of a thread of this process (its sleeps).
long voluntary_switches(int tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("voluntary_ctxt_switches:", 0) == 0)
      return std::stol(line.substr(line.find(':') + 1));
  return -1;
}

class api_progress : public ::testing::TestWithParam<std::string> {
 protected:
  // The active side's mode and the passive side's.
  virtual std::string active_mode() const { return "inline"; }
  virtual std::string passive_mode() const { return GetParam(); }

  void SetUp() override {
    const std::string active = "ring=0;ip=192.168.77.1;progress=" + active_mode();
    const std::string passive =
        "ring=1;ip=192.168.77.2;progress=" + passive_mode() + ";spin_us=1000;idle_us=200";
    ASSERT_EQ(setenv("DPDAT_IA_PROG_ACTIVE", active.c_str(), 1), 0);
    ASSERT_EQ(setenv("DPDAT_IA_PROG_PASSIVE", passive.c_str(), 1), 0);
    ASSERT_NO_FATAL_FAILURE(dpdat_test::open_connected(&act_, "prog-active", &pas_, "prog-passive",
                                                       "192.168.77.2", kQual, kWaitUs));
    for (size_t i = 0; i < kLen; ++i) pas_.buf[i] = static_cast<uint8_t>(i * 7 + 3);
  }
  void TearDown() override {
    dpdat_test::close_conn_side(&act_);
    dpdat_test::close_conn_side(&pas_);
  }

  // An RDMA READ of the passive buffer's first half into the active buffer
  // and an RDMA WRITE of the active buffer's second half into the passive
  // one's, posted by the active side.
  void post_read_and_write(uint64_t tag) {
    DAT_LMR_TRIPLET local = act_.iov(0, kLen / 2);
    DAT_RMR_TRIPLET remote{};
    remote.rmr_context = pas_.rctx;
    remote.target_address = pas_.va();
    remote.segment_length = kLen / 2;
    ASSERT_EQ(dat_ep_post_rdma_read(act_.ep, 1, &local, cookie_of(tag), &remote,
                                    DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
    for (size_t i = kLen / 2; i < kLen; ++i) act_.buf[i] = static_cast<uint8_t>(i ^ tag);
    local = act_.iov(kLen / 2, kLen / 2);
    remote.target_address = pas_.va() + kLen / 2;
    ASSERT_EQ(dat_ep_post_rdma_write(act_.ep, 1, &local, cookie_of(tag + 1), &remote,
                                     DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
  }

  // Polls the active side's EVD (drives the active interface only) until
  // both completions arrived or `for_ms` passed; returns how many arrived.
  int poll_completions(int for_ms) {
    int done = 0;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(for_ms);
    DAT_EVENT ev;
    while (done < 2 && std::chrono::steady_clock::now() < end) {
      if (dat_evd_dequeue(act_.dto, &ev) == DAT_SUCCESS) {
        EXPECT_EQ(ev.event_number, DAT_DTO_COMPLETION_EVENT);
        EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
        ++done;
      }
    }
    return done;
  }

  void expect_data(uint64_t tag) {
    for (size_t i = 0; i < kLen / 2; ++i)
      ASSERT_EQ(act_.buf[i], static_cast<uint8_t>(i * 7 + 3)) << "read byte " << i;
    for (size_t i = kLen / 2; i < kLen; ++i)
      ASSERT_EQ(pas_.buf[i], static_cast<uint8_t>(i ^ tag)) << "written byte " << i;
  }

  ConnSide act_{kLen};
  ConnSide pas_{kLen};
};

TEST_P(api_progress, PassiveTargetIsServedWithoutItsConsumer) {
  ASSERT_NO_FATAL_FAILURE(post_read_and_write(0x10));
  if (GetParam() == "inline") {
    // No thread: polling the active side alone moves nothing on the target.
    EXPECT_EQ(poll_completions(100), 0);
    // dat_evd_wait drives the process's other interfaces while it spins.
    DAT_EVENT ev;
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(wait(act_.dto, &ev), DAT_SUCCESS);
      EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
    }
  } else {
    ASSERT_EQ(poll_completions(5000), 2);
  }
  expect_data(0x10);
}

TEST_P(api_progress, OnlyThreadedModesHaveAProgressThread) {
  const size_t expected = GetParam() == "inline" ? 0 : 1;  // the active side is inline
  EXPECT_EQ(progress_threads().size(), expected);
}

TEST_P(api_progress, AdaptiveThreadSleepsWhenIdleAndServesTheNextRequest) {
  if (GetParam() != "adaptive") GTEST_SKIP() << "adaptive only";
  const std::vector<int> tids = progress_threads();
  ASSERT_EQ(tids.size(), 1u);
  // Traffic, then silence: past the 1 ms spin window the thread sleeps.
  ASSERT_NO_FATAL_FAILURE(post_read_and_write(0x20));
  ASSERT_EQ(poll_completions(5000), 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const long before = cpu_ticks(tids[0]);
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const long ticks = cpu_ticks(tids[0]) - before;
  const double wall_ticks =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() *
      static_cast<double>(sysconf(_SC_CLK_TCK));
  // A spinning thread would take (nearly) every tick of the window.
  EXPECT_LT(static_cast<double>(ticks), wall_ticks / 2) << ticks << " ticks of " << wall_ticks;
  // Asleep, it still serves the next one-sided request.
  ASSERT_NO_FATAL_FAILURE(post_read_and_write(0x30));
  ASSERT_EQ(poll_completions(5000), 2);
  expect_data(0x30);
}

// While a consumer keeps polling, the adaptive thread stands by and looks
// again after idle_us (200 us here), then at doubling intervals up to
// 5 * idle_us, not every idle_us (each look a wake-up on the CPU the consumer
// may share).  Measured on a 2-CPU VM, voluntary switches of the thread in
// the 300 ms: 429-674 (quiet or beside two CPU hogs); with a look every
// idle_us 997-1,134 quiet, 790-1,134 beside the hogs.  When the consumer
// stops, the thread serves the next request by itself.
TEST_P(api_progress, AdaptiveThreadLooksRarelyWhileAConsumerPolls) {
  if (GetParam() != "adaptive") GTEST_SKIP() << "adaptive only";
  const std::vector<int> tids = progress_threads();
  ASSERT_EQ(tids.size(), 1u);
  DAT_EVENT ev;
  EXPECT_EQ(dat_evd_dequeue(pas_.dto, &ev), DAT_QUEUE_EMPTY);  // the consumer drives from now on
  std::this_thread::sleep_for(std::chrono::microseconds(100));
  const long before = voluntary_switches(tids[0]);
  ASSERT_GE(before, 0);
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (std::chrono::steady_clock::now() < end)
    ASSERT_EQ(DAT_GET_TYPE(dat_evd_dequeue(pas_.dto, &ev)), DAT_QUEUE_EMPTY);
  const long looks = voluntary_switches(tids[0]) - before;
  EXPECT_LT(looks, 900) << "the thread woke " << looks << " times in 300 ms of polling";
  // The consumer stopped: the thread serves the passive side again.
  ASSERT_NO_FATAL_FAILURE(post_read_and_write(0x40));
  ASSERT_EQ(poll_completions(5000), 2);
  expect_data(0x40);
}

// The posting side in the mode under test (busy: its thread holds the
// engine nearly always, so posts are handed over to it), the target
// adaptive.  Many more RDMA WRITEs than the send queue holds: a post refused
// for a full queue is retried after a dequeue; every one completes once, in
// posting order, and lands where it was aimed.
class api_progress_post : public api_progress {
 protected:
  std::string active_mode() const override { return GetParam(); }
  std::string passive_mode() const override { return "adaptive"; }
};

TEST_P(api_progress_post, HandedOffWritesCompleteOnceInOrder) {
  constexpr uint64_t kWrites = 1024;
  constexpr size_t kPiece = kLen / kWrites;
  for (size_t i = 0; i < kLen; ++i) act_.buf[i] = static_cast<uint8_t>(i * 13 + 5);
  uint64_t posted = 0, done = 0, refused = 0;
  DAT_EVENT ev;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (done < kWrites && std::chrono::steady_clock::now() < end) {
    if (posted < kWrites) {
      DAT_LMR_TRIPLET local = act_.iov(posted * kPiece, kPiece);
      DAT_RMR_TRIPLET remote{};
      remote.rmr_context = pas_.rctx;
      remote.target_address = pas_.va() + posted * kPiece;
      remote.segment_length = kPiece;
      const DAT_RETURN r = dat_ep_post_rdma_write(act_.ep, 1, &local, cookie_of(posted), &remote,
                                                  DAT_COMPLETION_DEFAULT_FLAG);
      if (r == DAT_SUCCESS) {
        ++posted;
        continue;
      }
      ASSERT_EQ(DAT_GET_TYPE(r), DAT_INSUFFICIENT_RESOURCES);
      ++refused;
    }
    if (dat_evd_dequeue(act_.dto, &ev) == DAT_SUCCESS) {
      ASSERT_EQ(ev.event_number, DAT_DTO_COMPLETION_EVENT);
      const DAT_DTO_COMPLETION_EVENT_DATA& d = ev.event_data.dto_completion_event_data;
      ASSERT_EQ(d.status, DAT_DTO_SUCCESS);
      ASSERT_EQ(d.user_cookie.as_64, done) << "completions out of order";
      ++done;
    }
  }
  ASSERT_EQ(done, kWrites) << posted << " posted, " << refused << " refused for a full queue";
  EXPECT_NE(dat_evd_dequeue(act_.dto, &ev), DAT_SUCCESS) << "a completion too many";
  for (size_t i = 0; i < kLen; ++i)
    ASSERT_EQ(pas_.buf[i], static_cast<uint8_t>(i * 13 + 5)) << "byte " << i;
}

INSTANTIATE_TEST_SUITE_P(modes, api_progress_post, ::testing::Values("busy", "adaptive", "inline"),
                         [](const auto& p) { return p.param; });

INSTANTIATE_TEST_SUITE_P(modes, api_progress, ::testing::Values("busy", "adaptive", "inline"),
                         [](const auto& p) { return p.param; });

}  // namespace
