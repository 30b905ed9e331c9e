// The post hand-off (dat_core/shard.hpp, mpsc_ring.hpp): a handed-off work
// request arrives whole though only its used scatter-gather entries are
// written, and the ring keeps each producer's order under concurrent pushes.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "dat_core/mpsc_ring.hpp"
#include "dat_core/shard.hpp"

namespace {

using dpdat::dat::Handoff;
using dpdat::dat::MpscRing;
namespace rc = dpdat::rc;

TEST(Handoff, ASendArrivesWholeAndOnlyItsUsedEntriesAreWritten) {
  rc::SendWr wr;
  wr.cookie = 0x1122334455667788ull;
  wr.op = rc::WrOp::kCompareSwap;
  wr.flags = rc::wr_flag::kFence;
  wr.num_sge = 2;
  wr.sge[0] = {7, 0x1000, 8};
  wr.sge[1] = {9, 0x2000, 16};
  wr.remote_va = 0xabcdef;
  wr.rkey = 42;
  wr.imm = 43;
  wr.compare = 44;
  wr.swap_add = 45;
  wr.mw_handle = 46;
  wr.bind_lkey = 47;
  wr.bind_va = 48;
  wr.bind_len = 49;
  wr.bind_privileges = 50;
  Handoff h;
  std::memset(static_cast<void*>(&h.send), 0xAB, sizeof h.send);  // an older request's bytes
  h.fill(nullptr, nullptr, &wr, nullptr);
  EXPECT_TRUE(h.is_send);
  EXPECT_EQ(h.send.cookie, wr.cookie);
  EXPECT_EQ(h.send.op, wr.op);
  EXPECT_EQ(h.send.flags, wr.flags);
  EXPECT_EQ(h.send.num_sge, 2u);
  for (uint32_t i = 0; i < 2; ++i) {
    EXPECT_EQ(h.send.sge[i].lkey, wr.sge[i].lkey);
    EXPECT_EQ(h.send.sge[i].va, wr.sge[i].va);
    EXPECT_EQ(h.send.sge[i].length, wr.sge[i].length);
  }
  EXPECT_EQ(h.send.sge[2].lkey, 0xABABABABu);  // not written
  EXPECT_EQ(h.send.remote_va, wr.remote_va);
  EXPECT_EQ(h.send.rkey, wr.rkey);
  EXPECT_EQ(h.send.imm, wr.imm);
  EXPECT_EQ(h.send.compare, wr.compare);
  EXPECT_EQ(h.send.swap_add, wr.swap_add);
  EXPECT_EQ(h.send.mw_handle, wr.mw_handle);
  EXPECT_EQ(h.send.bind_lkey, wr.bind_lkey);
  EXPECT_EQ(h.send.bind_va, wr.bind_va);
  EXPECT_EQ(h.send.bind_len, wr.bind_len);
  EXPECT_EQ(h.send.bind_privileges, wr.bind_privileges);
}

TEST(Handoff, AReceiveArrivesWhole) {
  rc::RecvWr wr;
  wr.cookie = 5;
  wr.num_sge = 1;
  wr.sge[0] = {3, 0x3000, 4096};
  wr.multi_min = 128;
  Handoff h;
  std::memset(static_cast<void*>(&h.recv), 0xCD, sizeof h.recv);
  h.fill(nullptr, nullptr, nullptr, &wr);
  EXPECT_FALSE(h.is_send);
  EXPECT_EQ(h.recv.cookie, 5u);
  EXPECT_EQ(h.recv.num_sge, 1u);
  EXPECT_EQ(h.recv.sge[0].va, 0x3000u);
  EXPECT_EQ(h.recv.sge[0].length, 4096u);
  EXPECT_EQ(h.recv.multi_min, 128u);
}

TEST(Handoff, ASendAndAReceiveShareOneCell) {
  // A cell is as large as the larger request, not both together.
  EXPECT_LT(sizeof(Handoff), std::max(sizeof(rc::SendWr), sizeof(rc::RecvWr)) + 4 * sizeof(void*));
  EXPECT_LT(sizeof(Handoff), sizeof(rc::SendWr) + sizeof(rc::RecvWr));
}

TEST(MpscRing, ConcurrentProducersKeepTheirOrderAndLoseNothing) {
  constexpr uint64_t kEach = 200'000;
  constexpr int kProducers = 3;
  MpscRing<uint64_t> ring(64);
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p)
    producers.emplace_back([&ring, p] {
      for (uint64_t i = 0; i < kEach; ++i) {
        const uint64_t v = (uint64_t(p) << 32) | i;
        while (!ring.push_with([v](uint64_t& cell) { cell = v; })) std::this_thread::yield();
      }
    });
  std::vector<uint64_t> next(kProducers, 0);
  uint64_t got = 0;
  while (got < kEach * kProducers) {
    const uint64_t* v = ring.front();
    if (v == nullptr) {
      std::this_thread::yield();
      continue;
    }
    const auto p = static_cast<size_t>(*v >> 32);
    ASSERT_LT(p, next.size());
    ASSERT_EQ(*v & 0xffffffffu, next[p]) << "producer " << p << " out of order";
    ++next[p];
    ring.pop_front();
    ++got;
  }
  for (auto& t : producers) t.join();
  EXPECT_FALSE(ring.pending());
  EXPECT_EQ(ring.front(), nullptr);
}

}  // namespace
