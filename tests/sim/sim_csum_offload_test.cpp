// IPv4 header checksum offload as the engine uses it when the packet I/O
// offers it (dpdk::Port on net_tap or a NIC): frames leave with the checksum
// for the device to fill in, and a device's verdict on received frames
// replaces the software check (a "bad" verdict drops the frame).
#include <gtest/gtest.h>

#include "harness.hpp"
#include "wire/headers.hpp"
#include "wire/packet.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint32_t kRw = priv::kLocalRead | priv::kLocalWrite;

// A device model over a link end: fills in the checksum of frames handed to
// it for that, and checks every received frame's checksum the way a NIC
// reports it (optionally calling the next few frames bad regardless).
class CsumDevice final : public PacketIo {
 public:
  explicit CsumDevice(PacketIo& link) : link_(link) {}
  uint16_t rx_burst(Frame* out, uint16_t max) override {
    const uint16_t n = link_.rx_burst(out, max);
    for (uint16_t i = 0; i < n; ++i) {
      const auto* ip = reinterpret_cast<const wire::Ipv4Hdr*>(out[i].data + sizeof(wire::EthHdr));
      const bool good = wire::ipv4_checksum(*ip) == 0;
      if (call_bad > 0) {
        --call_bad;
        out[i].flags = kFrameRxIpCsumBad;
      } else {
        out[i].flags = good ? kFrameRxIpCsumGood : kFrameRxIpCsumBad;
        rx_good += good ? 1 : 0;
      }
    }
    return n;
  }
  void rx_release(Frame* f, uint16_t n) override { link_.rx_release(f, n); }
  uint16_t tx_alloc(Frame* out, uint16_t n, uint32_t size) override {
    return link_.tx_alloc(out, n, size);
  }
  uint16_t tx_burst(Frame* f, uint16_t n) override {
    for (uint16_t i = 0; i < n; ++i) {
      auto* ip = reinterpret_cast<wire::Ipv4Hdr*>(f[i].data + sizeof(wire::EthHdr));
      if ((f[i].flags & kFrameTxIpCsum) == 0) {
        ++tx_software;
        continue;
      }
      if (ip->checksum.value() != 0) ++tx_not_zeroed;
      ip->checksum = wire::Be16(wire::ipv4_checksum(*ip));
      ++tx_filled;
    }
    return link_.tx_burst(f, n);
  }
  void tx_free(Frame* f, uint16_t n) override { link_.tx_free(f, n); }
  uint32_t offloads() const override { return kOffloadTxIpCsum | kOffloadRxIpCsum; }

  uint64_t tx_filled = 0, tx_software = 0, tx_not_zeroed = 0, rx_good = 0;
  int call_bad = 0;

 private:
  PacketIo& link_;
};

struct Devices {
  std::unique_ptr<CsumDevice> dev[2];
  Pair::IoWrap wrap() {
    return [this](int i, PacketIo& end) -> PacketIo& {
      dev[i] = std::make_unique<CsumDevice>(end);
      return *dev[i];
    };
  }
};

TEST(SimCsumOffload, FramesLeaveForTheDeviceAndItsVerdictIsUsed) {
  Devices d;
  Pair p(41, {}, 4096, d.wrap());
  const size_t n = 200'000;
  Buffer src = p.reg(0, n, kRw);
  Buffer dst = p.reg(1, n, kRw | priv::kRemoteWrite);
  fill_pattern(src.bytes, 5);
  ASSERT_EQ(p.a().qp->post_send(rdma_wr(WrOp::kWrite, src, dst, n, 1)), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
  EXPECT_EQ(drain(*p.a().scq)[0].status, WcStatus::kSuccess);
  EXPECT_EQ(src.bytes, dst.bytes);
  for (auto& dev : d.dev) {
    EXPECT_GT(dev->tx_filled, 0u);
    EXPECT_EQ(dev->tx_software, 0u);    // every RC frame left it to the device
    EXPECT_EQ(dev->tx_not_zeroed, 0u);  // ... with the field zeroed
    EXPECT_GT(dev->rx_good, 0u);
  }
  EXPECT_EQ(p.b().engine->counters().rx_reject[static_cast<size_t>(wire::Reject::kBadIpChecksum)],
            0u);
}

TEST(SimCsumOffload, FramesTheDeviceCallsBadAreDroppedAndResent) {
  Devices d;
  Pair p(42, {}, 4096, d.wrap());
  d.dev[1]->call_bad = 3;  // the responder's device rejects the first three frames
  const size_t n = 64 * 1024;
  Buffer src = p.reg(0, n, kRw);
  Buffer dst = p.reg(1, n, kRw | priv::kRemoteWrite);
  fill_pattern(src.bytes, 6);
  ASSERT_EQ(p.a().qp->post_send(rdma_wr(WrOp::kWrite, src, dst, n, 1)), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
  EXPECT_EQ(drain(*p.a().scq)[0].status, WcStatus::kSuccess);
  EXPECT_EQ(src.bytes, dst.bytes);
  EXPECT_EQ(p.b().engine->counters().rx_reject[static_cast<size_t>(wire::Reject::kBadIpChecksum)],
            3u);
  EXPECT_GT(p.a().qp->counters().retransmits + p.a().qp->counters().sr_resends, 0u);
}

}  // namespace
}  // namespace dpdat::rc::test
