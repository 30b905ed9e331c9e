// Neighbour resolution below the engine (RFC 826 ARP for IPv4 over
// Ethernet, on DPDK's rte_arp_hdr): requests for the port's address are
// answered on the queue that received them, senders are learnt, and
// resolve() asks the network on queue 0.  The engine never sees ARP.

#include <rte_arp.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <cstring>

#include "port.hpp"

namespace dpdat::dpdk {
namespace {

wire::MacAddr mac_of(const rte_ether_addr& a) {
  wire::MacAddr m;
  std::memcpy(m.data(), a.addr_bytes, m.size());
  return m;
}
void put_mac(rte_ether_addr* a, const wire::MacAddr& m) {
  std::memcpy(a->addr_bytes, m.data(), m.size());
}

}  // namespace

bool Port::handle_arp(uint16_t qi, const uint8_t* data, uint32_t len) {
  PortCounters& ctr = q_[qi].ctr;
  if (len < sizeof(rte_ether_hdr)) return false;
  const auto* eth = reinterpret_cast<const rte_ether_hdr*>(data);
  if (rte_be_to_cpu_16(eth->ether_type) != RTE_ETHER_TYPE_ARP) return false;
  ctr.rx_arp++;
  if (len < sizeof(rte_ether_hdr) + sizeof(rte_arp_hdr)) return true;
  rte_arp_hdr a;  // unaligned in the frame: copied out
  std::memcpy(&a, data + sizeof(rte_ether_hdr), sizeof a);
  if (rte_be_to_cpu_16(a.arp_hardware) != RTE_ARP_HRD_ETHER ||
      rte_be_to_cpu_16(a.arp_protocol) != RTE_ETHER_TYPE_IPV4 || a.arp_hlen != RTE_ETHER_ADDR_LEN ||
      a.arp_plen != 4)
    return true;
  const uint32_t sip = rte_be_to_cpu_32(a.arp_data.arp_sip);
  const wire::MacAddr sha = mac_of(a.arp_data.arp_sha);
  {
    std::lock_guard<std::mutex> lk(arp_mu_);
    arp_[sip] = sha;  // learn the sender
  }
  if (rte_be_to_cpu_16(a.arp_opcode) == RTE_ARP_OP_REQUEST &&
      rte_be_to_cpu_32(a.arp_data.arp_tip) == cfg_.ip && cfg_.ip != 0)
    send_arp(qi, RTE_ARP_OP_REPLY, sha, sip);
  return true;
}

void Port::send_arp(uint16_t qi, uint16_t op, const wire::MacAddr& dst_mac, uint32_t dst_ip) {
  PortCounters& ctr = q_[qi].ctr;
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (m == nullptr) {
    ctr.tx_alloc_fail++;
    return;
  }
  constexpr uint16_t kLen = RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN;  // 60: no FCS
  auto* p = rte_pktmbuf_mtod(m, uint8_t*);
  std::memset(p, 0, kLen);
  rte_ether_hdr eth{};
  const wire::MacAddr bcast = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  put_mac(&eth.dst_addr, op == RTE_ARP_OP_REQUEST ? bcast : dst_mac);
  put_mac(&eth.src_addr, mac_);
  eth.ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
  rte_arp_hdr a{};
  a.arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
  a.arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
  a.arp_hlen = RTE_ETHER_ADDR_LEN;
  a.arp_plen = 4;
  a.arp_opcode = rte_cpu_to_be_16(op);
  put_mac(&a.arp_data.arp_sha, mac_);
  a.arp_data.arp_sip = rte_cpu_to_be_32(cfg_.ip);
  put_mac(&a.arp_data.arp_tha, op == RTE_ARP_OP_REQUEST ? wire::MacAddr{} : dst_mac);
  a.arp_data.arp_tip = rte_cpu_to_be_32(dst_ip);
  std::memcpy(p, &eth, sizeof eth);
  std::memcpy(p + sizeof eth, &a, sizeof a);
  m->data_len = kLen;
  m->pkt_len = kLen;
  uint16_t sent;
  {
    memif_guard::Burst in(q_[qi].guard);
    sent = rte_eth_tx_burst(port_id_, qi, &m, 1);
  }
  if (sent != 1) {
    rte_pktmbuf_free(m);
    ctr.tx_full++;
    return;
  }
  ctr.tx_arp++;
}

bool Port::resolve(uint32_t ip, wire::MacAddr* mac) {
  if (ip == cfg_.ip && ip != 0) {  // ourselves: the software loopback carries it
    *mac = mac_;
    return true;
  }
  {
    std::lock_guard<std::mutex> lk(arp_mu_);
    if (auto it = arp_.find(ip); it != arp_.end()) {
      *mac = it->second;
      return true;
    }
  }
  send_arp(0, RTE_ARP_OP_REQUEST, wire::MacAddr{}, ip);
  return false;
}

}  // namespace dpdat::dpdk
