// A port's data path: RX bursts (ARP taken aside, seeded receive loss,
// scattered frames made contiguous, the software loop-back ring first), TX
// buffers and bursts (frames to the port's own MAC looped back in software),
// buffer release.  Each queue is used by one thread at a time.

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "port.hpp"
#include "wire/packet.hpp"

namespace dpdat::dpdk {

uint16_t Port::rx_burst_q(uint16_t qi, rc::Frame* out, uint16_t max) {
  QueueState& qs = q_[qi];
  PortCounters& ctr_ = qs.ctr;
  if (qs.rx_tmp.size() < max) qs.rx_tmp.resize(max);
  auto& rx_tmp_ = qs.rx_tmp;
  auto& rng_ = qs.rng;
  // Looped-back frames first: they were built here, contiguous, checksummed
  // (the loop is not a device that verifies), and carry no ARP.
  uint16_t kept = 0;
  for (; kept < max && qs.loop_count > 0; ++kept) {
    rte_mbuf* m = qs.loop[qs.loop_head];
    qs.loop_head = (qs.loop_head + 1) % kLoopDepth;
    qs.loop_count--;
    ctr_.rx_looped++;
    out[kept] = rc::Frame{rte_pktmbuf_mtod(m, uint8_t*), m->data_len, m->buf_len, m, 0};
  }
  if (kept == max) return kept;
  uint16_t n;
  {
    memif_guard::Burst in(qs.guard);
    n = rte_eth_rx_burst(port_id_, qi, rx_tmp_.data(), static_cast<uint16_t>(max - kept));
  }
  if (n != 0) ctr_.rx_bursts++;
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = rx_tmp_[i];
    ctr_.rx_packets++;
    ctr_.rx_bytes += m->pkt_len;
    ctr_.rx_max_frame = std::max(ctr_.rx_max_frame, m->pkt_len);
    if (m->nb_segs != 1 && (m = make_contiguous(ctr_, m)) == nullptr) continue;
    if (handle_arp(qi, rte_pktmbuf_mtod(m, const uint8_t*), m->data_len)) {
      rte_pktmbuf_free(m);
      continue;
    }
    if (cfg_.rx_loss > 0) {
      rng_ ^= rng_ << 13;
      rng_ ^= rng_ >> 7;
      rng_ ^= rng_ << 17;
      if (static_cast<double>(rng_ >> 11) * 0x1.0p-53 < cfg_.rx_loss) {
        ctr_.rx_injected_drops++;
        rte_pktmbuf_free(m);
        continue;
      }
    }
    uint32_t flags = 0;
    if ((offloads_ & rc::kOffloadRxIpCsum) != 0) {
      // The device's verdict; UNKNOWN / NONE leave the check to software.
      const uint64_t ck = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;
      if (ck == RTE_MBUF_F_RX_IP_CKSUM_GOOD) {
        flags = rc::kFrameRxIpCsumGood;
        ctr_.rx_ip_csum_good++;
      } else if (ck == RTE_MBUF_F_RX_IP_CKSUM_BAD) {
        flags = rc::kFrameRxIpCsumBad;
        ctr_.rx_ip_csum_bad++;
      }
    }
    out[kept++] = rc::Frame{rte_pktmbuf_mtod(m, uint8_t*), m->data_len, m->buf_len, m, flags};
  }
  return kept;
}

rte_mbuf* Port::make_contiguous(PortCounters& ctr, rte_mbuf* m) {
  // In place when the first segment's tailroom takes the rest of the chain
  // (rte_pktmbuf_linearize frees the emptied segments).
  if (rte_pktmbuf_linearize(m) == 0) {
    ctr.rx_linearized++;
    return m;
  }
  // Otherwise one copy into a fresh mbuf of our pool, if the frame fits its
  // data room.  Drop (counted) when it does not or the pool is empty: the
  // sender's retransmission covers a dropped RoCE frame.
  rte_mbuf* c = m->pkt_len + RTE_PKTMBUF_HEADROOM <= uint32_t{rte_pktmbuf_data_room_size(pool_)}
                    ? rte_pktmbuf_alloc(pool_)
                    : nullptr;
  if (c == nullptr || rte_pktmbuf_tailroom(c) < m->pkt_len) {
    if (c != nullptr) rte_pktmbuf_free(c);
    ctr.rx_multiseg_dropped++;
    rte_pktmbuf_free(m);
    return nullptr;
  }
  auto* dst = rte_pktmbuf_mtod(c, uint8_t*);
  for (const rte_mbuf* s = m; s != nullptr; s = s->next) {
    std::memcpy(dst, rte_pktmbuf_mtod(s, const uint8_t*), s->data_len);
    dst += s->data_len;
  }
  c->data_len = static_cast<uint16_t>(m->pkt_len);
  c->pkt_len = m->pkt_len;
  c->port = m->port;
  rte_pktmbuf_free(m);
  ctr.rx_multiseg_copied++;
  return c;
}

void Port::rx_release(rc::Frame* frames, uint16_t n) {
  // One bulk return to the mempool (per-lcore cache) instead of one per mbuf.
  rte_mbuf* ms[64];
  while (n > 0) {
    const uint16_t k = n < 64 ? n : 64;
    for (uint16_t i = 0; i < k; ++i) ms[i] = static_cast<rte_mbuf*>(frames[i].handle);
    rte_pktmbuf_free_bulk(ms, k);
    frames += k;
    n = static_cast<uint16_t>(n - k);
  }
}

uint16_t Port::tx_alloc_q(uint16_t qi, rc::Frame* out, uint16_t n, uint32_t size) {
  PortCounters& ctr_ = q_[qi].ctr;
  rte_mbuf* ms[64];
  if (n > 64) n = 64;
  if (rte_pktmbuf_alloc_bulk(pool_, ms, n) != 0) {
    ctr_.tx_alloc_fail++;
    return 0;
  }
  for (uint16_t i = 0; i < n; ++i) {
    if (rte_pktmbuf_tailroom(ms[i]) < size) {
      rte_pktmbuf_free_bulk(ms, n);
      return 0;
    }
    out[i] = rc::Frame{rte_pktmbuf_mtod(ms[i], uint8_t*), 0, rte_pktmbuf_tailroom(ms[i]), ms[i]};
  }
  return n;
}

bool Port::to_self(const rc::Frame& f) const {
  return f.len >= sizeof(wire::EthHdr) &&
         std::memcmp(f.data, mac_.data(), mac_.size()) == 0;  // EthHdr::dst comes first
}

uint16_t Port::tx_burst_q(uint16_t qi, rc::Frame* frames, uint16_t n) {
  // In order, as runs of frames for the wire and frames for ourselves; a run
  // that is not taken whole ends the burst (the rest stay the caller's).
  if (n > 64) n = 64;
  uint16_t done = 0;
  while (done < n) {
    const bool self = to_self(frames[done]);
    uint16_t run = 1;
    while (done + run < n && to_self(frames[done + run]) == self) ++run;
    const uint16_t took = self ? loop_tx(qi, frames + done, run) : wire_tx(qi, frames + done, run);
    done = static_cast<uint16_t>(done + took);
    if (took < run) break;
  }
  return done;
}

uint16_t Port::loop_tx(uint16_t qi, rc::Frame* frames, uint16_t n) {
  QueueState& qs = q_[qi];
  uint16_t i = 0;
  for (; i < n && qs.loop_count < kLoopDepth; ++i) {
    rte_mbuf* m = static_cast<rte_mbuf*>(frames[i].handle);
    m->data_len = static_cast<uint16_t>(frames[i].len);
    m->pkt_len = frames[i].len;
    if ((frames[i].flags & rc::kFrameTxIpCsum) != 0) {
      // No device on this path to fill the IPv4 checksum in.
      auto* ip = reinterpret_cast<wire::Ipv4Hdr*>(frames[i].data + sizeof(wire::EthHdr));
      ip->checksum = wire::Be16(0);
      ip->checksum = wire::Be16(wire::ipv4_checksum(*ip));
      frames[i].flags &= ~rc::kFrameTxIpCsum;
    }
    qs.loop[(qs.loop_head + qs.loop_count) % kLoopDepth] = m;
    qs.loop_count++;
    qs.ctr.tx_looped++;
  }
  if (i < n) qs.ctr.loop_full++;
  return i;
}

uint16_t Port::wire_tx(uint16_t qi, rc::Frame* frames, uint16_t n) {
  PortCounters& ctr_ = q_[qi].ctr;
  rte_mbuf* ms[64];
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = static_cast<rte_mbuf*>(frames[i].handle);
    m->data_len = static_cast<uint16_t>(frames[i].len);
    m->pkt_len = frames[i].len;
    if ((frames[i].flags & rc::kFrameTxIpCsum) != 0) {
      m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
      m->l2_len = sizeof(wire::EthHdr);
      m->l3_len = sizeof(wire::Ipv4Hdr);
    }
    ms[i] = m;
  }
  if ((offloads_ & rc::kOffloadTxIpCsum) != 0) {
    // The device's own preparation for offloads (a no-op for most PMDs).  The
    // frames from one it refuses on get their checksum in software instead,
    // so a refusal never wedges the queue.
    const uint16_t ok = rte_eth_tx_prepare(port_id_, qi, ms, n);
    for (uint16_t i = ok; i < n; ++i) {
      if ((frames[i].flags & rc::kFrameTxIpCsum) == 0) continue;
      auto* ip = reinterpret_cast<wire::Ipv4Hdr*>(frames[i].data + sizeof(wire::EthHdr));
      ip->checksum = wire::Be16(0);
      ip->checksum = wire::Be16(wire::ipv4_checksum(*ip));
      ms[i]->ol_flags &= ~(RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM);
      frames[i].flags &= ~rc::kFrameTxIpCsum;
      ctr_.tx_prepare_refused++;
    }
  }
  uint16_t sent;
  {
    memif_guard::Burst in(q_[qi].guard);
    sent = rte_eth_tx_burst(port_id_, qi, ms, n);
  }
  for (uint16_t i = 0; i < sent; ++i) {
    ctr_.tx_bytes += frames[i].len;
    ctr_.tx_max_frame = std::max(ctr_.tx_max_frame, frames[i].len);
    if ((frames[i].flags & rc::kFrameTxIpCsum) != 0) ctr_.tx_ip_csum_offloaded++;
  }
  ctr_.tx_packets += sent;
  if (sent != 0) ctr_.tx_bursts++;
  if (sent < n) ctr_.tx_full++;
  return sent;
}

}  // namespace dpdat::dpdk
