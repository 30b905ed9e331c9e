#include "port.hpp"

#include <linux/if_packet.h>
#include <net/if.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_kvargs.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "eal.hpp"
#include "memif_client.hpp"
#include "telemetry.hpp"
#include "wire/packet.hpp"

namespace dpdat::dpdk {
namespace {

// IPv4 20 + UDP 8 + BTH 12 + the longest extension chain 28 + ICRC 4.
constexpr uint32_t kRoceOverhead = 72;
constexpr uint32_t kMinRoceMtu = 256 + kRoceOverhead;

std::string errstr(const char* what, int rc) {
  return std::string(what) + ": " + rte_strerror(rc < 0 ? -rc : rte_errno);
}

// A numeric devarg of the port's device (`dflt` when not given).
uint32_t devarg_u32(const rte_eth_dev_info& info, const char* key, uint32_t dflt) {
  uint32_t v = dflt;
  const rte_devargs* da = info.device != nullptr ? rte_dev_devargs(info.device) : nullptr;
  if (da == nullptr || da->args == nullptr) return v;
  if (rte_kvargs* kv = rte_kvargs_parse(da->args, nullptr); kv != nullptr) {
    if (const char* s = rte_kvargs_get(kv, key); s != nullptr)
      v = static_cast<uint32_t>(std::strtoul(s, nullptr, 0));
    rte_kvargs_free(kv);
  }
  return v;
}

// net_af_packet's ring frame size (its `framesz` devarg; 2048 when not given).
uint32_t af_packet_framesz(const rte_eth_dev_info& info) {
  return devarg_u32(info, "framesz", 2048);
}

// The MTU of the kernel interface a PMD is bound to (0 when unknown).
uint32_t kernel_if_mtu(unsigned if_index, std::string* ifname) {
  char name[IF_NAMESIZE] = {};
  if (if_index == 0 || if_indextoname(if_index, name) == nullptr) return 0;
  *ifname = name;
  const int s = socket(AF_INET, SOCK_DGRAM, 0);
  if (s < 0) return 0;
  ifreq ifr{};
  static_assert(sizeof(ifr.ifr_name) == IF_NAMESIZE);
  std::memcpy(ifr.ifr_name, name, IF_NAMESIZE);  // NUL-terminated by if_indextoname
  const int rc = ioctl(s, SIOCGIFMTU, &ifr);
  close(s);
  return rc == 0 && ifr.ifr_mtu > 0 ? static_cast<uint32_t>(ifr.ifr_mtu) : 0;
}

// DPDK 22.11's net_af_packet reports max_rx_pktlen 1518, so ethdev refuses
// any MTU above 1500, although the PMD copies frames of up to a ring frame
// and the kernel interface decides what the link carries.  What it can
// really move: the kernel interface's MTU, bounded by the ring frame.  On
// receive (TPACKET_V2) the kernel places a frame so that its network header
// starts at TPACKET_ALIGN(TPACKET2_HDRLEN + 16) in the ring frame, and
// truncates what does not fit; on transmit the frame starts earlier, so
// receive is the bound.
uint32_t af_packet_mtu(const rte_eth_dev_info& info, std::string* why) {
  std::string ifname;
  const uint32_t kmtu = kernel_if_mtu(info.if_index, &ifname);
  const uint32_t framesz = af_packet_framesz(info);
  constexpr uint32_t kAlign = TPACKET_ALIGNMENT;
  auto align = [](uint32_t x) { return (x + kAlign - 1) / kAlign * kAlign; };
  // TPACKET2_HDRLEN, spelt out (the macro trips -Wsign-conversion).
  const uint32_t kHdr = align(sizeof(tpacket2_hdr)) + uint32_t{sizeof(sockaddr_ll)};
  const uint32_t netoff = align(kHdr + 16);
  const uint32_t fits = framesz > netoff ? framesz - netoff : 0;
  *why = "kernel interface " + (ifname.empty() ? std::string("?") : ifname) + " MTU " +
         std::to_string(kmtu) + ", framesz=" + std::to_string(framesz) + " fits MTU " +
         std::to_string(fits);
  return std::min(kmtu, fits);
}

// DPDK 22.11's net_memif has no MTU operation (ethdev answers -ENOTSUP and
// reports 1500), yet its copy path moves frames of any length: what does not
// fit one packet buffer (the `bsize` devarg, 2048 when not given; the
// client's buffers serve both directions) it spreads over chained
// descriptors (MEMIF_DESC_FLAG_NEXT).  That chaining is not safe in 22.11:
// its TX never clears the flags of a packet's first descriptor, so a slot
// that once began a chained frame keeps NEXT when a later one-buffer frame
// (an ACK, a READ request) starts there, and the receiver runs that frame
// into the next one or, at the end of what was published, past it into
// stale descriptors (fixed upstream after 22.11.11 by "net/memif: fix
// descriptor Tx flags corruption").  Two dpdat processes over memif with
// bsize=1024 at PMTU 1024 showed it: the receiver counted four times the
// frames the sender sent and the QP failed with retry-exceeded.  So every
// frame must fit one packet buffer: the MTU is bounded by bsize less the
// Ethernet header, and a larger PMTU is had with a larger bsize (4182 bytes
// carry PMTU 4096) on both sides.
uint32_t memif_mtu(const rte_eth_dev_info& info, std::string* why) {
  const uint32_t bsize = devarg_u32(info, "bsize", 2048);
  const uint32_t fits = bsize > sizeof(wire::EthHdr) ? bsize - uint32_t{sizeof(wire::EthHdr)} : 0;
  *why = "net_memif bsize=" + std::to_string(bsize) + " (one packet buffer per frame) fits MTU " +
         std::to_string(fits);
  return fits;
}

}  // namespace

bool Port::make_ring_link(const std::string& name, uint16_t* port_a, uint16_t* port_b,
                          std::string* err, uint16_t queues) {
  const auto& eal = eal_init();
  if (!eal.ok) {
    *err = eal.error;
    return false;
  }
  if (queues == 0 || queues > 16) {
    *err = "make_ring_link: 1..16 queues";
    return false;
  }
  const unsigned flags = RING_F_SP_ENQ | RING_F_SC_DEQ;
  std::vector<rte_ring*> ab(queues), ba(queues);
  for (uint16_t q = 0; q < queues; ++q) {
    const std::string sfx = std::to_string(q);
    ab[q] = rte_ring_create((name + "_ab" + sfx).c_str(), 4096, SOCKET_ID_ANY, flags);
    ba[q] = rte_ring_create((name + "_ba" + sfx).c_str(), 4096, SOCKET_ID_ANY, flags);
    if (ab[q] == nullptr || ba[q] == nullptr) {
      *err = errstr("rte_ring_create", 0);
      return false;
    }
  }
  const int a = rte_eth_from_rings((name + "_a").c_str(), ba.data(), queues, ab.data(), queues,
                                   rte_socket_id());
  const int b = rte_eth_from_rings((name + "_b").c_str(), ab.data(), queues, ba.data(), queues,
                                   rte_socket_id());
  if (a < 0 || b < 0) {
    *err = errstr("rte_eth_from_rings", 0);
    return false;
  }
  *port_a = static_cast<uint16_t>(a);
  *port_b = static_cast<uint16_t>(b);
  return true;
}

std::unique_ptr<Port> Port::open(uint16_t port_id, const PortConfig& cfg, std::string* err) {
  const auto& eal = eal_init();
  if (!eal.ok) {
    *err = eal.error;
    return nullptr;
  }
  if (!rte_eth_dev_is_valid_port(port_id)) {
    *err = "no such ethdev port " + std::to_string(port_id);
    return nullptr;
  }
  std::unique_ptr<Port> p(new Port(port_id, cfg));
  rte_eth_dev_info info{};
  if (int rc = rte_eth_dev_info_get(port_id, &info); rc != 0) {
    *err = errstr("rte_eth_dev_info_get", rc);
    return nullptr;
  }
  auto driver_is = [&info](const char* name) {
    return info.driver_name != nullptr && std::strcmp(info.driver_name, name) == 0;
  };
  const bool af_packet = driver_is("net_af_packet");
  // net_memif unmaps its shared memory under a polling thread when the peer
  // leaves (memif_guard.hpp): its bursts are marked, its munmap waits.
  const bool memif = driver_is("net_memif");
  if (memif) memif_guard::install();
  p->memif_ = memif;
  // Size the pool from the descriptor rings plus bursts in flight on the
  // engine (built frames, cache) with headroom for per-lcore caches.
  const uint16_t nq = std::max<uint16_t>(
      1, std::min<uint16_t>({cfg.queues, info.max_rx_queues, info.max_tx_queues}));
  const uint32_t nmbufs = (uint32_t{cfg.rx_desc} + cfg.tx_desc + 2048u + kLoopDepth) * nq + 512u;
  const std::string pool_name = cfg.name + "_mp" + std::to_string(port_id);
  // Data room: a 4096-PMTU frame in one mbuf; more for a larger MTU (rounded
  // to 1 KiB, with room for a PMD's own headers); net_af_packet wants its
  // whole ring frame (less the 32-byte TPACKET_V2 header) in one mbuf.
  uint32_t room = std::max<uint32_t>(RTE_MBUF_DEFAULT_DATAROOM + 4096,
                                     (uint32_t{cfg.mtu} + 256u + 1023u) & ~1023u);
  if (af_packet) room = std::max(room, af_packet_framesz(info));
  if (room + RTE_PKTMBUF_HEADROOM > UINT16_MAX) {
    *err = "MTU " + std::to_string(cfg.mtu) + ": mbuf data room too large";
    return nullptr;
  }
  p->pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), nmbufs, 256, 0,
                                     static_cast<uint16_t>(room + RTE_PKTMBUF_HEADROOM),
                                     static_cast<int>(rte_socket_id()));
  if (p->pool_ == nullptr) {
    *err = errstr("rte_pktmbuf_pool_create", 0);
    return nullptr;
  }
  rte_eth_conf conf{};
  if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
    conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
  if (cfg.csum_offload && (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) != 0) {
    conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
    p->offloads_ |= rc::kOffloadTxIpCsum;
  }
  if (cfg.csum_offload && (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) != 0) {
    conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
    p->offloads_ |= rc::kOffloadRxIpCsum;
  }
  // RX interrupts: in DPDK 22.11 only net_tap (of the virtual PMDs) gives its
  // RX queues an interrupt descriptor (its tap fd, readable while a frame
  // waits; rte_eth_dev_rx_intr_enable itself answers -ENOTSUP everywhere).
  const bool tap = driver_is("net_tap");
  if (tap && cfg.rx_intr) conf.intr_conf.rxq = 1;
  if (int rc = rte_eth_dev_configure(port_id, nq, nq, &conf); rc != 0) {
    *err = errstr("rte_eth_dev_configure", rc);
    return nullptr;
  }
  uint16_t nrx = cfg.rx_desc, ntx = cfg.tx_desc;
  rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &nrx, &ntx);
  const int sock = rte_eth_dev_socket_id(port_id);
  const unsigned socket = sock < 0 ? rte_socket_id() : static_cast<unsigned>(sock);
  for (uint16_t q = 0; q < nq; ++q) {
    if (int rc = rte_eth_rx_queue_setup(port_id, q, nrx, socket, nullptr, p->pool_); rc != 0) {
      *err = errstr("rte_eth_rx_queue_setup", rc);
      return nullptr;
    }
    if (int rc = rte_eth_tx_queue_setup(port_id, q, ntx, socket, nullptr); rc != 0) {
      *err = errstr("rte_eth_tx_queue_setup", rc);
      return nullptr;
    }
  }
  p->q_.resize(nq);
  p->qio_.resize(nq);
  for (uint16_t q = 0; q < nq; ++q) {
    p->q_[q].rx_tmp.resize(64);
    p->q_[q].loop.resize(kLoopDepth);
    p->q_[q].rng = (cfg.loss_seed + q) * 0x9E3779B97F4A7C15ull + 1;
    if (memif) p->q_[q].guard = memif_guard::acquire_slot();
    if (q > 0) p->qio_[q] = std::make_unique<QueueIo>(*p, q);
  }
  // MTU: as asked where the PMD allows it, otherwise whatever it has (said
  // in mtu_note(); max_pmtu() follows the MTU in use).
  uint16_t pmd_mtu = 1500;
  if (rte_eth_dev_get_mtu(port_id, &pmd_mtu) != 0) pmd_mtu = 1500;
  uint16_t mtu = cfg.mtu;
  if (int rc = mtu == pmd_mtu ? 0 : rte_eth_dev_set_mtu(port_id, mtu); rc != 0) {
    mtu = pmd_mtu;
    p->mtu_note_ = std::string(info.driver_name != nullptr ? info.driver_name : "PMD") +
                   " refused MTU " + std::to_string(cfg.mtu) + " (" +
                   rte_strerror(rc < 0 ? -rc : rc) + ")";
    if (af_packet && cfg.mtu > mtu) {
      std::string why;
      const uint32_t link = std::min<uint32_t>(cfg.mtu, af_packet_mtu(info, &why));
      if (link > mtu) mtu = static_cast<uint16_t>(link);
      p->mtu_note_ += "; " + why;
    }
    if (!memif) p->mtu_note_ += "; using MTU " + std::to_string(mtu);
  }
  if (memif) {
    // As asked, up to what one packet buffer holds (memif_mtu), below 1500 too.
    std::string why;
    const uint16_t link = static_cast<uint16_t>(std::min<uint32_t>(cfg.mtu, memif_mtu(info, &why)));
    if (link != mtu || !p->mtu_note_.empty()) {
      mtu = link;
      p->mtu_note_ +=
          (p->mtu_note_.empty() ? "" : "; ") + why + "; using MTU " + std::to_string(mtu);
    }
    if (mtu < kMinRoceMtu) {
      *err = why + ", less than the smallest RoCE frame (PMTU 256) needs";
      return nullptr;
    }
  }
  p->mtu_ = mtu;
  // A memif client whose server has not made its socket yet (its process
  // opens the other end a moment later) fails to start: it waits for the
  // server below, as for one that refuses, starting again each try.  Any
  // other failure is reported at once.
  const bool memif_client = memif && memif_client::is_client(port_id);
  if (int rc = rte_eth_dev_start(port_id); rc != 0) {
    std::string why = memif_client ? memif_client::start_failure(port_id) : std::string();
    if (!memif_client || !why.empty()) {
      *err = why.empty() ? errstr("rte_eth_dev_start", rc) : "rte_eth_dev_start: " + why;
      return nullptr;
    }
  }
  if (conf.intr_conf.rxq != 0) {
    const int fd = rte_eth_dev_rx_intr_ctl_q_get_fd(port_id, 0);
    if (fd >= 0) p->rx_fd_ = fd;
  }

  p->started_ = true;
  // A memif client returns once connected: its server may refuse a first
  // connection for good (memif_client.hpp).
  if (memif_client && !memif_client::await_link(port_id, memif_client::kConnectLimitMs, err))
    return nullptr;
  rte_ether_addr mac{};
  rte_eth_macaddr_get(port_id, &mac);
  std::memcpy(p->mac_.data(), mac.addr_bytes, 6);
  if (rte_is_zero_ether_addr(&mac)) {
    // net_ring reports 00:00:00:00:00:00 for every port: both ends of a ring
    // link would share one address and the software loopback could not tell
    // a frame for the peer from one for ourselves.  Such a port gets a
    // locally administered unicast address of its own (unique in the
    // process, as net_ring ports are): 02:64:70:00:<port id>.  The PMD
    // does not filter by MAC (promiscuous mode below), so this is only the
    // address the port sends from and answers ARP with.
    p->mac_ = {0x02,
               0x64,
               0x70,
               0x00,
               static_cast<uint8_t>(port_id >> 8),
               static_cast<uint8_t>(port_id & 0xFF)};
  }
  rte_eth_promiscuous_enable(port_id);  // virtual links share segments; we filter by IP/QPN
  telemetry_init();
  telemetry_add_port(p.get());
  return p;
}

bool Port::find(const std::string& prefix, uint16_t* port_id) {
  for (uint16_t id = 0; id < RTE_MAX_ETHPORTS; ++id) {
    if (!rte_eth_dev_is_valid_port(id)) continue;
    char name[RTE_ETH_NAME_MAX_LEN];
    if (rte_eth_dev_get_name_by_port(id, name) != 0) continue;
    if (std::strncmp(name, prefix.c_str(), prefix.size()) == 0) {
      *port_id = id;
      return true;
    }
  }
  return false;
}

Port::~Port() {
  telemetry_remove_port(this);
  for (auto& q : q_) {
    for (; q.loop_count > 0; --q.loop_count) {
      rte_pktmbuf_free(q.loop[q.loop_head]);
      q.loop_head = (q.loop_head + 1) % kLoopDepth;
    }
  }
  if (started_) {
    if (memif_) {
      memif_guard::stop_close(port_id_);
    } else {
      rte_eth_dev_stop(port_id_);
      rte_eth_dev_close(port_id_);
    }
  }
  for (auto& q : q_) memif_guard::release_slot(q.guard);
  if (pool_ != nullptr) rte_mempool_free(pool_);
}

uint32_t Port::max_pmtu() const {
  const uint32_t room = mtu_ > kRoceOverhead ? mtu_ - kRoceOverhead : 0u;
  for (uint32_t p = 4096; p >= 256; p /= 2)
    if (p <= room) return p;
  return 256;
}

bool Port::link_up() const {
  rte_eth_link link{};
  return rte_eth_link_get_nowait(port_id_, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
}

unsigned Port::pool_available() const { return rte_mempool_avail_count(pool_); }

PortCounters Port::counters() const {
  PortCounters s;
  for (const auto& q : q_) s += q.ctr;
  return s;
}

}  // namespace dpdat::dpdk
