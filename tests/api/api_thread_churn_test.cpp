// Threads that drive an interface and then end, through libdat's public API:
// two custom IAs (progress=inline on both ends of the in-process net_ring
// link), so every wait of a consumer thread runs both engines on that thread.
// A thread that drives an engine is given a DPDK lcore and with it a
// per-thread cache of each frame pool it touches; when such a thread ends,
// the frames in its caches go back to their pools and its lcore is released.
// Without that, every ended thread keeps up to a cache's worth of frames of
// each pool for good, and after a few dozen threads an interface has no
// frame left to send: its requests time out (DAT_DTO_ERR_TRANSPORT).
// (This binary never opens dpdat0/dpdat1: those are the same two ports.)

#include <dat/udat.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include "conn_side.hpp"

namespace {

using dpdat_test::ConnSide;
using dpdat_test::cookie_of;

constexpr DAT_TIMEOUT kWaitUs = 10'000'000;
constexpr DAT_CONN_QUAL kQual = 4733;
constexpr size_t kLen = 1 << 20;  // ~256 frames of 4 KiB per READ
// More threads than the frame pools (5120 frames each) could lose to the
// caches of ended threads (up to 384 frames of each pool per thread), fewer
// than DPDK's lcores (128).
constexpr int kThreads = 40;
constexpr int kReadsPerThread = 4;

DAT_RETURN wait(DAT_EVD_HANDLE e, DAT_EVENT* ev) {
  DAT_COUNT nmore = 0;
  std::memset(ev, 0, sizeof(*ev));
  return dat_evd_wait(e, kWaitUs, 1, ev, &nmore);
}

class api_thread_churn : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(setenv("DPDAT_IA_CHURN_ACTIVE", "ring=0;ip=192.168.77.1;progress=inline", 1), 0);
    ASSERT_EQ(setenv("DPDAT_IA_CHURN_PASSIVE", "ring=1;ip=192.168.77.2;progress=busy", 1), 0);
    ASSERT_NO_FATAL_FAILURE(dpdat_test::open_connected(
        &act_, "churn-active", &pas_, "churn-passive", "192.168.77.2", kQual, kWaitUs));
  }
  void TearDown() override {
    dpdat_test::close_conn_side(&act_);
    dpdat_test::close_conn_side(&pas_);
  }

  ConnSide act_{kLen};
  ConnSide pas_{kLen};
};

TEST_F(api_thread_churn, EndedThreadsGiveTheirFramesBack) {
  for (int t = 0; t < kThreads; ++t) {
    // The passive buffer changes before each thread: every READ must bring
    // this thread's bytes, not an earlier one's.
    for (size_t i = 0; i < kLen; ++i)
      pas_.buf[i] = static_cast<uint8_t>(i * 13 + static_cast<size_t>(t));
    std::string failure;
    std::thread worker([&] {
      for (int r = 0; r < kReadsPerThread && failure.empty(); ++r) {
        DAT_LMR_TRIPLET local = act_.iov(0, kLen);
        DAT_RMR_TRIPLET remote{};
        remote.rmr_context = pas_.rctx;
        remote.target_address = pas_.va();
        remote.segment_length = kLen;
        std::memset(act_.buf.data(), 0, kLen);
        if (dat_ep_post_rdma_read(act_.ep, 1, &local, cookie_of(static_cast<uint64_t>(r)), &remote,
                                  DAT_COMPLETION_DEFAULT_FLAG) != DAT_SUCCESS) {
          failure = "post refused";
          break;
        }
        DAT_EVENT ev;
        if (wait(act_.dto, &ev) != DAT_SUCCESS) {
          failure = "no completion";
          break;
        }
        const auto& d = ev.event_data.dto_completion_event_data;
        if (ev.event_number != DAT_DTO_COMPLETION_EVENT || d.status != DAT_DTO_SUCCESS) {
          failure = "completion status " + std::to_string(d.status);
          break;
        }
        if (std::memcmp(act_.buf.data(), pas_.buf.data(), kLen) != 0) failure = "data differs";
      }
    });
    worker.join();
    ASSERT_EQ(failure, "") << "thread " << t << " of " << kThreads;
  }
}

}  // namespace
