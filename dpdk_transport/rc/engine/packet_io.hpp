#pragma once
// The datapath seam between the RC engine and a packet transport (DPDK ethdev
// or the simulated link).  Burst-shaped: one virtual call per burst, never per
// packet.  A Frame is a view of a transport-owned buffer.

#include <cstdint>

namespace dpdat::rc {

struct Frame {
  uint8_t* data = nullptr;
  uint32_t len = 0;        // bytes of valid frame data
  uint32_t cap = 0;        // buffer capacity (TX frames)
  void* handle = nullptr;  // transport's own buffer object (e.g. rte_mbuf*)
  uint32_t flags = 0;      // kFrame* below
};

// Frame::flags.  RX: what the device found checking the IPv4 header checksum
// (neither flag: not checked, the engine checks in software).  TX: the IPv4
// header checksum was left 0 for the device to fill in.
inline constexpr uint32_t kFrameRxIpCsumGood = 1u << 0;
inline constexpr uint32_t kFrameRxIpCsumBad = 1u << 1;
inline constexpr uint32_t kFrameTxIpCsum = 1u << 2;

// PacketIo::offloads(): checksum work the device does (the ICRC never is).
inline constexpr uint32_t kOffloadTxIpCsum = 1u << 0;
inline constexpr uint32_t kOffloadRxIpCsum = 1u << 1;

class PacketIo {
 public:
  virtual ~PacketIo() = default;
  // Up to `max` received frames.  The caller hands every one back through
  // rx_release() once it is done with it (payload already placed).
  virtual uint16_t rx_burst(Frame* out, uint16_t max) = 0;
  virtual void rx_release(Frame* frames, uint16_t n) = 0;
  // Up to `n` empty TX buffers of at least `size` bytes; fewer (maybe 0) when
  // the pool is exhausted: that is back-pressure, not an error.
  virtual uint16_t tx_alloc(Frame* out, uint16_t n, uint32_t size) = 0;
  // Queues frames for transmission; returns how many were taken (a prefix).
  // Frames not taken still belong to the caller (retry them or tx_free them).
  virtual uint16_t tx_burst(Frame* frames, uint16_t n) = 0;
  virtual void tx_free(Frame* frames, uint16_t n) = 0;
  // kOffload* bits; fixed once the transport is set up.
  virtual uint32_t offloads() const { return 0; }
};

}  // namespace dpdat::rc
