// Scattered (multi-segment) received frames: a PMD may hand a frame over as
// an mbuf chain (net_memif copies into chained mbufs once a frame exceeds
// the data room; a NIC with RX scatter does the same).  The port must make
// them contiguous — in place when the first segment has the tailroom,
// otherwise by one copy — and drop (counted) only what cannot fit.
//
// The frames are real: engine A's RDMA WRITE requests are taken off the
// net_ring between the two ports, re-cut into three-segment chains, and put
// back for engine B, which must place them byte-exact.
#include <gtest/gtest.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <cstring>
#include <random>

#include "dpdk/eal.hpp"
#include "dpdk/loopback.hpp"

namespace dpdat {
namespace {

struct PoolDeleter {
  void operator()(rte_mempool* p) const { rte_mempool_free(p); }
};

// Where the first segment's data ends: with tailroom (the port can
// linearise in place) or flush with the buffer's end (it has to copy).
enum class Head { kTailroom, kFlush };

// Appends `len` bytes as a new segment of `pool` to `head`.
bool append_seg(rte_mempool* pool, rte_mbuf* head, const uint8_t* src, uint16_t len) {
  rte_mbuf* s = rte_pktmbuf_alloc(pool);
  if (s == nullptr) return false;
  void* d = rte_pktmbuf_append(s, len);
  if (d == nullptr || rte_pktmbuf_chain(head, s) != 0) {
    rte_pktmbuf_free(s);
    return false;
  }
  std::memcpy(d, src, len);
  return true;
}

// The frame in m re-cut into three segments [0,a) [a,b) [b,len) (a splits
// the Ethernet/IP headers from the rest, b the payload); m is consumed.
rte_mbuf* scatter(rte_mempool* pool, rte_mbuf* m, Head mode) {
  const uint32_t len = m->pkt_len;
  const uint16_t a = 30, b = static_cast<uint16_t>(a + (len - a) / 2);
  EXPECT_EQ(m->nb_segs, 1);
  std::vector<uint8_t> bytes(rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_mtod(m, uint8_t*) + len);
  rte_mbuf* h = m;
  if (mode == Head::kTailroom) {
    // Keep m as the head; scribble over what is no longer its data so that
    // a port which ignored the chain would deliver garbage.
    std::memset(rte_pktmbuf_mtod(m, uint8_t*) + a, 0xEE, len - a);
    m->data_len = a;
    m->pkt_len = a;
  } else {
    rte_pktmbuf_free(m);
    h = rte_pktmbuf_alloc(pool);
    if (h == nullptr) return nullptr;
    h->data_off = static_cast<uint16_t>(h->buf_len - a);  // no tailroom at all
    h->data_len = a;
    h->pkt_len = a;
    std::memcpy(rte_pktmbuf_mtod(h, uint8_t*), bytes.data(), a);
    EXPECT_EQ(rte_pktmbuf_tailroom(h), 0u);
  }
  if (!append_seg(pool, h, bytes.data() + a, static_cast<uint16_t>(b - a)) ||
      !append_seg(pool, h, bytes.data() + b, static_cast<uint16_t>(len - b))) {
    rte_pktmbuf_free(h);
    return nullptr;
  }
  EXPECT_EQ(h->nb_segs, 3);
  EXPECT_EQ(h->pkt_len, len);
  return h;
}

class MultiSeg : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dpdk::eal_init().ok);
    static int inst = 0;
    pool_.reset(rte_pktmbuf_pool_create(("dpdat_ms" + std::to_string(inst++)).c_str(), 2047, 0, 0,
                                        RTE_MBUF_DEFAULT_BUF_SIZE,
                                        static_cast<int>(rte_socket_id())));
    ASSERT_NE(pool_, nullptr);
    rc::QpConfig q;
    q.pmtu = 1024;
    std::string err;
    lo_ = std::make_unique<dpdk::Loopback>();
    ASSERT_TRUE(lo_->open(q, &err)) << err;
    // B's port "net_ring_<link>_b" receives from the ring "<link>_ab0".
    char name[RTE_ETH_NAME_MAX_LEN];
    ASSERT_EQ(rte_eth_dev_get_name_by_port(lo_->b().port->port_id(), name), 0);
    std::string link(name);
    if (link.rfind("net_ring_", 0) == 0) link = link.substr(9);
    ASSERT_EQ(link.substr(link.size() - 2), "_b");
    a_to_b_ = rte_ring_lookup((link.substr(0, link.size() - 2) + "_ab0").c_str());
    ASSERT_NE(a_to_b_, nullptr);
  }
  void TearDown() override {
    lo_.reset();  // every mbuf of ours is back before the pool goes
    pool_.reset();
  }
  // Polls A, re-cuts everything it sent to B (alternating the head mode),
  // polls B.
  void step() {
    const uint64_t t = dpdk::steady_now_ns();
    lo_->a().engine->poll(t);
    // Everything A queued (some of it already at post time), in order.
    std::vector<void*> objs(rte_ring_count(a_to_b_));
    const unsigned n =
        rte_ring_dequeue_bulk(a_to_b_, objs.data(), static_cast<unsigned>(objs.size()), nullptr);
    ASSERT_EQ(n, objs.size());
    for (unsigned i = 0; i < n; ++i) {
      const Head mode = cut_++ % 2 == 0 ? Head::kTailroom : Head::kFlush;
      objs[i] = scatter(pool_.get(), static_cast<rte_mbuf*>(objs[i]), mode);
      ASSERT_NE(objs[i], nullptr) << "test pool exhausted";
    }
    ASSERT_EQ(rte_ring_enqueue_bulk(a_to_b_, objs.data(), n, nullptr), n);
    // B takes them all before A sends more, so nothing is re-cut twice.
    for (int i = 0; i < 1000 && rte_ring_count(a_to_b_) > 0; ++i) lo_->b().engine->poll(t);
    ASSERT_EQ(rte_ring_count(a_to_b_), 0u);
  }

  std::unique_ptr<rte_mempool, PoolDeleter> pool_;
  std::unique_ptr<dpdk::Loopback> lo_;
  rte_ring* a_to_b_ = nullptr;
  uint64_t cut_ = 0;
};

struct Mem {
  std::vector<uint8_t> bytes;
  uint32_t lmr = 0;
  uint64_t va() const { return reinterpret_cast<uint64_t>(bytes.data()); }
};

TEST_F(MultiSeg, ScatteredFramesArePlacedByteExact) {
  Mem src, dst;
  src.bytes.resize(200 * 1024);
  dst.bytes.assign(src.bytes.size(), 0);
  std::mt19937 r(42);
  for (auto& b : src.bytes) b = static_cast<uint8_t>(r());
  auto& a = lo_->a();
  auto& b = lo_->b();
  ASSERT_TRUE(a.mr->mr_register(a.pz, src.bytes.data(), src.va(), src.bytes.size(), rc::priv::kAll,
                                &src.lmr));
  ASSERT_TRUE(b.mr->mr_register(b.pz, dst.bytes.data(), dst.va(), dst.bytes.size(), rc::priv::kAll,
                                &dst.lmr));
  rc::SendWr w;
  w.op = rc::WrOp::kWrite;
  w.flags = rc::wr_flag::kSignaled;
  w.num_sge = 1;
  w.sge[0] = rc::Sge{src.lmr, src.va(), src.bytes.size()};
  w.remote_va = dst.va();
  w.rkey = dst.lmr;
  ASSERT_EQ(a.qp->post_send(w), rc::Qp::PostResult::kOk);
  const uint64_t end = dpdk::steady_now_ns() + 10'000'000'000ull;
  while (a.scq->size() == 0 && dpdk::steady_now_ns() < end) {
    step();
    if (HasFatalFailure()) return;
  }
  rc::Completion c;
  ASSERT_TRUE(a.scq->pop(&c)) << "the WRITE never completed";
  EXPECT_EQ(c.status, rc::WcStatus::kSuccess);
  EXPECT_EQ(src.bytes, dst.bytes);
  const dpdk::PortCounters pc = b.port->counters();
  // 200 KiB at PMTU 1024: 200 request frames, each one scattered.
  EXPECT_GE(pc.rx_linearized, 100u);
  EXPECT_GE(pc.rx_multiseg_copied, 100u);
  EXPECT_EQ(pc.rx_multiseg_dropped, 0u);
  // Nothing was lost on the way: no retransmission was needed.
  EXPECT_EQ(a.qp->counters().retransmits, 0u);
  EXPECT_EQ(a.qp->counters().timeouts, 0u);
}

TEST_F(MultiSeg, FrameLargerThanTheDataRoomIsDroppedAndCounted) {
  // Three 2000-byte segments, no tailroom in the first: 6000 bytes do not
  // fit one mbuf of the port's pool once that is smaller.  The port's pool
  // data room is at least 2048; build the chain larger than it.
  auto& b = lo_->b();
  rte_mempool* bp = nullptr;
  {
    // The port's pool data room, read through an mbuf it hands out for TX.
    rc::Frame f;
    ASSERT_EQ(b.port->tx_alloc(&f, 1, 64), 1);
    bp = static_cast<rte_mbuf*>(f.handle)->pool;
    b.port->tx_free(&f, 1);
  }
  const uint32_t room = rte_pktmbuf_data_room_size(bp) - RTE_PKTMBUF_HEADROOM;
  const uint16_t seg = 2000;
  const uint32_t nseg = room / seg + 1;
  std::vector<uint8_t> junk(seg, 0x5A);
  rte_mbuf* h = rte_pktmbuf_alloc(pool_.get());
  ASSERT_NE(h, nullptr);
  h->data_off = static_cast<uint16_t>(h->buf_len - seg);
  h->data_len = seg;
  h->pkt_len = seg;
  for (uint32_t i = 1; i < nseg; ++i) ASSERT_TRUE(append_seg(pool_.get(), h, junk.data(), seg));
  ASSERT_GT(h->pkt_len, room);
  const uint64_t before = b.port->counters().rx_multiseg_dropped;
  void* obj = h;
  ASSERT_EQ(rte_ring_enqueue_burst(a_to_b_, &obj, 1, nullptr), 1u);
  rc::Frame out[4];
  const uint16_t got = b.port->rx_burst(out, 4);
  b.port->rx_release(out, got);
  EXPECT_EQ(got, 0u);
  EXPECT_EQ(b.port->counters().rx_multiseg_dropped, before + 1);
  EXPECT_EQ(rte_mempool_in_use_count(pool_.get()), 0u) << "the dropped chain leaked";
}

}  // namespace
}  // namespace dpdat
