#pragma once
// A DPDK ethdev port as the RC engine's packet I/O: PMD-agnostic set-up
// (queue counts, MTU, offloads as the device reports them), a mempool sized
// from the queue depths, and neighbour resolution (ARP replies for our
// address, an ARP cache with static entries) handled below the engine, so
// the engine only ever sees RoCEv2 frames.
//
// One Port is used by one thread at a time (its engine's lcore, or the
// consumer thread in inline mode).  Mbuf exhaustion is back-pressure:
// tx_alloc() returns fewer buffers, nothing is dropped silently.

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "rc/packet_io.hpp"
#include "wire/headers.hpp"

struct rte_mempool;
struct rte_mbuf;
struct rte_ring;

namespace dpdat::dpdk {

struct PortConfig {
  std::string name = "dpdat";  // names the mempool
  uint16_t rx_desc = 1024;
  uint16_t tx_desc = 1024;
  uint16_t mtu = 1500;
  uint32_t ip = 0;  // host byte order
  // Fault injection: drop this fraction of received RoCE frames (seeded, so
  // a run replays).  0 in production; tests use it for loss on real PMDs.
  double rx_loss = 0.0;
  uint64_t loss_seed = 1;
};

struct PortCounters {
  uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0, rx_arp = 0, tx_arp = 0,
           rx_multiseg_dropped = 0, rx_not_ip_dropped = 0, tx_alloc_fail = 0, tx_full = 0,
           rx_injected_drops = 0;
};

class Port final : public rc::PacketIo {
 public:
  // Configures and starts an already probed ethdev port.
  static std::unique_ptr<Port> open(uint16_t port_id, const PortConfig& cfg, std::string* err);
  // Creates the in-process link: two net_ring ports joined by two rte_rings
  // (what one sends, the other receives).  Needs eal_init() first.
  static bool make_ring_link(const std::string& name, uint16_t* port_a, uint16_t* port_b,
                             std::string* err);
  // The port whose device name starts with `prefix` ("" = the first port).
  static bool find(const std::string& prefix, uint16_t* port_id);
  ~Port() override;

  uint16_t rx_burst(rc::Frame* out, uint16_t max) override;
  void rx_release(rc::Frame* frames, uint16_t n) override;
  uint16_t tx_alloc(rc::Frame* out, uint16_t n, uint32_t size) override;
  uint16_t tx_burst(rc::Frame* frames, uint16_t n) override;
  void tx_free(rc::Frame* frames, uint16_t n) override;

  uint16_t port_id() const { return port_id_; }
  const wire::MacAddr& mac() const { return mac_; }
  uint32_t ip() const { return cfg_.ip; }
  uint16_t mtu() const { return mtu_; }
  // Largest RoCE path MTU that fits this port's MTU (IBA sizes 256..4096).
  uint32_t max_pmtu() const;
  const PortCounters& counters() const { return ctr_; }

  // Neighbours.  resolve() answers from the cache; on a miss it sends an ARP
  // request (at most one per call) and returns false: call again later.
  void add_neighbor(uint32_t ip, const wire::MacAddr& mac) { arp_[ip] = mac; }
  bool resolve(uint32_t ip, wire::MacAddr* mac);

 private:
  Port(uint16_t port_id, const PortConfig& cfg) : port_id_(port_id), cfg_(cfg) {}
  bool handle_arp(const uint8_t* data, uint32_t len);
  void send_arp(uint16_t op, const wire::MacAddr& dst_mac, uint32_t dst_ip);

  uint16_t port_id_;
  PortConfig cfg_;
  uint16_t mtu_ = 1500;
  wire::MacAddr mac_{};
  rte_mempool* pool_ = nullptr;
  bool started_ = false;
  PortCounters ctr_;
  std::unordered_map<uint32_t, wire::MacAddr> arp_;
  std::vector<rte_mbuf*> rx_tmp_;
  uint64_t rng_ = 0;  // xorshift state for rx_loss
};

}  // namespace dpdat::dpdk
