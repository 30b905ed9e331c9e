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
//
// Software loopback: a frame whose destination MAC is the port's own never
// reaches the PMD (a NIC or virtual link does not hand it back); tx_burst
// puts it on the sending queue's loop ring (kLoopDepth slots, made at open)
// and the next rx_burst of that same queue returns it before the PMD's
// frames.  resolve() of the port's own IPv4 answers its own MAC.  With
// several queues a looped frame comes back on the queue that sent it; an
// rc::EngineGroup hands a frame for another engine's queue pair over to its
// owner, as it does for frames the PMD delivered to the wrong queue.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "memif_guard.hpp"
#include "rc/engine/packet_io.hpp"
#include "wire/headers.hpp"

struct rte_mempool;
struct rte_mbuf;
struct rte_ring;

namespace dpdat::dpdk {

struct PortConfig {
  std::string name = "dpdat";  // names the mempool
  uint16_t rx_desc = 1024;
  uint16_t tx_desc = 1024;
  uint16_t mtu = 1500;  // asked for; Port::mtu() says what the PMD took
  uint16_t queues = 1;  // RX/TX queue pairs (one per engine lcore), as the PMD allows
  uint32_t ip = 0;      // host byte order
  // Fault injection: drop this fraction of received RoCE frames (seeded, so
  // a run replays).  0 in production; tests use it for loss on real PMDs.
  double rx_loss = 0.0;
  uint64_t loss_seed = 1;
  // Let the device compute / verify the IPv4 header checksum where it offers
  // to (net_tap and physical NICs do; net_ring, net_memif, net_af_packet do
  // not).  false: always in software.
  bool csum_offload = true;
  // Ask for RX interrupts where the PMD has them (rx_fd()).
  bool rx_intr = true;
};

// A port's counters, per RX/TX queue pair and summed over them.
// DPDAT_PORT_COUNTERS(X) calls X(name) for each count; the fields, the sum
// and telemetry's names come from it.
// clang-format off
#define DPDAT_PORT_COUNTERS(X)                                                \
  X(rx_packets) X(rx_bytes) X(tx_packets) X(tx_bytes) X(rx_arp) X(tx_arp)    \
  X(rx_not_ip_dropped) X(tx_alloc_fail) X(tx_full) X(rx_injected_drops)       \
  /* Scattered (multi-segment) received frames: made contiguous in the */    \
  /* first segment's tailroom (rx_linearized), copied into a fresh mbuf */   \
  /* when that has no room (rx_multiseg_copied), or dropped when neither */  \
  /* can hold them (pool empty, or the frame exceeds the pool's data room). */ \
  X(rx_linearized) X(rx_multiseg_copied) X(rx_multiseg_dropped)              \
  /* IPv4 header checksums the device filled in / verified good / found */   \
  /* bad; rte_eth_tx_prepare refusals (those frames were checksummed in */   \
  /* software). */                                                           \
  X(tx_ip_csum_offloaded) X(rx_ip_csum_good) X(rx_ip_csum_bad)               \
  X(tx_prepare_refused)                                                      \
  /* Frames to the port's own MAC, looped back in software instead of */     \
  /* going to the PMD (tx_looped, received as rx_looped by the same queue), */ \
  /* and bursts cut short because the queue's loop ring was full */          \
  /* (back-pressure: the frames stayed the caller's).  Not in tx_/ */        \
  /* rx_packets, which are the wire. */                                      \
  X(tx_looped) X(rx_looped) X(loop_full)                                    \
  /* Device bursts that moved at least one frame: rx_packets / rx_bursts */  \
  /* is the mean receive burst (1 when the poller keeps pace with single */  \
  /* frames, up to the burst size when frames wait for it). */               \
  X(rx_bursts) X(tx_bursts)
// clang-format on

struct PortCounters {
#define DPDAT_PORT_COUNTER_FIELD(name) uint64_t name = 0;
  DPDAT_PORT_COUNTERS(DPDAT_PORT_COUNTER_FIELD)
#undef DPDAT_PORT_COUNTER_FIELD
#define DPDAT_PORT_COUNTER_ONE(name) +1
  static constexpr size_t kCount = 0 DPDAT_PORT_COUNTERS(DPDAT_PORT_COUNTER_ONE);
#undef DPDAT_PORT_COUNTER_ONE
  // The longest frame (bytes, Ethernet header on) received from / handed to
  // the PMD: what the link really carried, e.g. whether PMTU 4096 was used.
  // Gauges: the sum over queues takes the largest.
  uint32_t rx_max_frame = 0, tx_max_frame = 0;

  PortCounters& operator+=(const PortCounters& o) {
#define DPDAT_PORT_COUNTER_ADD(name) name += o.name;
    DPDAT_PORT_COUNTERS(DPDAT_PORT_COUNTER_ADD)
#undef DPDAT_PORT_COUNTER_ADD
    rx_max_frame = rx_max_frame > o.rx_max_frame ? rx_max_frame : o.rx_max_frame;
    tx_max_frame = tx_max_frame > o.tx_max_frame ? tx_max_frame : o.tx_max_frame;
    return *this;
  }
  // fn(name, value) for every count (not the gauges), in the order above.
  template <typename Fn>
  void for_each(Fn&& fn) const {
#define DPDAT_PORT_COUNTER_VISIT(name) fn(#name, name);
    DPDAT_PORT_COUNTERS(DPDAT_PORT_COUNTER_VISIT)
#undef DPDAT_PORT_COUNTER_VISIT
  }
};

// Every count is one of the list (the two gauges aside).
static_assert(sizeof(PortCounters) == PortCounters::kCount * sizeof(uint64_t) + 8);

class Port final : public rc::PacketIo {
 public:
  // Configures and starts an already probed ethdev port.
  static std::unique_ptr<Port> open(uint16_t port_id, const PortConfig& cfg, std::string* err);
  // Creates the in-process link: two net_ring ports joined by two rte_rings
  // (what one sends, the other receives).  Needs eal_init() first.
  // With `queues` > 1, TX queue i of one port feeds RX queue i of the other.
  static bool make_ring_link(const std::string& name, uint16_t* port_a, uint16_t* port_b,
                             std::string* err, uint16_t queues = 1);
  // The port whose device name starts with `prefix` ("" = the first port).
  static bool find(const std::string& prefix, uint16_t* port_id);
  ~Port() override;

  // The Port itself is the packet I/O of queue 0; queue(q) of any queue.
  // Each queue is used by one thread at a time (its engine's).
  uint16_t rx_burst(rc::Frame* out, uint16_t max) override { return rx_burst_q(0, out, max); }
  void rx_release(rc::Frame* frames, uint16_t n) override;
  uint16_t tx_alloc(rc::Frame* out, uint16_t n, uint32_t size) override {
    return tx_alloc_q(0, out, n, size);
  }
  uint16_t tx_burst(rc::Frame* frames, uint16_t n) override { return tx_burst_q(0, frames, n); }
  void tx_free(rc::Frame* frames, uint16_t n) override { rx_release(frames, n); }
  uint32_t offloads() const override { return offloads_; }

  class QueueIo final : public rc::PacketIo {
   public:
    QueueIo(Port& p, uint16_t q) : p_(p), q_(q) {}
    uint16_t rx_burst(rc::Frame* out, uint16_t max) override { return p_.rx_burst_q(q_, out, max); }
    void rx_release(rc::Frame* f, uint16_t n) override { p_.rx_release(f, n); }
    uint16_t tx_alloc(rc::Frame* out, uint16_t n, uint32_t size) override {
      return p_.tx_alloc_q(q_, out, n, size);
    }
    uint16_t tx_burst(rc::Frame* f, uint16_t n) override { return p_.tx_burst_q(q_, f, n); }
    void tx_free(rc::Frame* f, uint16_t n) override { p_.rx_release(f, n); }
    uint32_t offloads() const override { return p_.offloads_; }

   private:
    Port& p_;
    uint16_t q_;
  };
  uint16_t queues() const { return static_cast<uint16_t>(q_.size()); }
  rc::PacketIo& queue(uint16_t q) { return q == 0 ? static_cast<rc::PacketIo&>(*this) : *qio_[q]; }

  uint16_t port_id() const { return port_id_; }
  const wire::MacAddr& mac() const { return mac_; }
  uint32_t ip() const { return cfg_.ip; }
  uint16_t mtu() const { return mtu_; }
  // Empty when PortConfig::mtu was applied; otherwise why not and which MTU
  // is used instead (the PMD's own, or for net_af_packet what its kernel
  // interface and ring frame size carry).
  const std::string& mtu_note() const { return mtu_note_; }
  // Largest RoCE path MTU that fits this port's MTU (IBA sizes 256..4096).
  uint32_t max_pmtu() const;
  // Summed over the queues (each queue counts on its own thread).
  PortCounters counters() const;
  // A descriptor that polls readable while queue 0 has a frame waiting (RX
  // interrupts; net_tap), or -1 when the PMD has none.  Any thread may
  // poll(2) it; it is not read from.
  int rx_fd() const { return rx_fd_; }
  // Frames on queue q's loop ring, waiting for its next rx_burst (they make
  // no RX interrupt: check before sleeping on rx_fd()).  Queue q's thread.
  uint32_t loop_pending(uint16_t q = 0) const { return q_[q].loop_count; }
  // The PMD's link status (net_memif: connected to its peer).
  bool link_up() const;
  // Free mbufs in the port's pool (a leak or a stuck consumer shows here).
  unsigned pool_available() const;
  // One queue's (read it from that queue's thread, or once it is quiet).
  const PortCounters& queue_counters(uint16_t q) const { return q_[q].ctr; }

  // Neighbours.  resolve() answers from the cache; on a miss it sends an ARP
  // request on queue 0 (at most one per call; call it from queue 0's thread)
  // and returns false: call again later.  The cache is shared by all queues.
  void add_neighbor(uint32_t ip, const wire::MacAddr& mac) {
    std::lock_guard<std::mutex> lk(arp_mu_);
    arp_[ip] = mac;
  }
  bool resolve(uint32_t ip, wire::MacAddr* mac);

 private:
  Port(uint16_t port_id, const PortConfig& cfg) : port_id_(port_id), cfg_(cfg) {}
  struct QueueState {
    PortCounters ctr;
    std::vector<rte_mbuf*> rx_tmp;
    uint64_t rng = 0;                    // xorshift state for rx_loss
    memif_guard::Slot* guard = nullptr;  // net_memif only: marks this queue's bursts
    // Loop ring (software loopback): kLoopDepth slots, head/count.
    std::vector<rte_mbuf*> loop;
    uint32_t loop_head = 0, loop_count = 0;
  };
  static constexpr uint32_t kLoopDepth = 512;
  bool to_self(const rc::Frame& f) const;
  // Frames [0, n) onto queue qi's loop ring, as many as fit (returned).
  uint16_t loop_tx(uint16_t qi, rc::Frame* frames, uint16_t n);
  // Frames [0, n) to the PMD (returned: how many it took).
  uint16_t wire_tx(uint16_t qi, rc::Frame* frames, uint16_t n);
  uint16_t rx_burst_q(uint16_t q, rc::Frame* out, uint16_t max);
  uint16_t tx_alloc_q(uint16_t q, rc::Frame* out, uint16_t n, uint32_t size);
  uint16_t tx_burst_q(uint16_t q, rc::Frame* frames, uint16_t n);
  bool handle_arp(uint16_t q, const uint8_t* data, uint32_t len);
  // A scattered frame as one contiguous mbuf (m itself or a copy; m is
  // consumed either way), or nullptr when it cannot be made so (counted).
  rte_mbuf* make_contiguous(PortCounters& ctr, rte_mbuf* m);
  void send_arp(uint16_t q, uint16_t op, const wire::MacAddr& dst_mac, uint32_t dst_ip);

  uint16_t port_id_;
  PortConfig cfg_;
  uint16_t mtu_ = 1500;
  uint32_t offloads_ = 0;  // rc::kOffload*
  int rx_fd_ = -1;
  std::string mtu_note_;
  wire::MacAddr mac_{};
  rte_mempool* pool_ = nullptr;
  bool started_ = false;
  bool memif_ = false;  // net_memif: closed on the EAL interrupt thread
  std::vector<QueueState> q_;
  std::vector<std::unique_ptr<QueueIo>> qio_;  // [0] unused: the Port is queue 0
  std::mutex arp_mu_;
  std::unordered_map<uint32_t, wire::MacAddr> arp_;
};

}  // namespace dpdat::dpdk
