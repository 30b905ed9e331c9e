// dpdat-engine-perf across processes: one side's port, engines and QPs, and
// the bootstrap that connects them to the peer's.

#include <arpa/inet.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <string_view>

#include "dpdk/eal.hpp"
#include "remote.hpp"
#include "wire/headers.hpp"

namespace dpdat::engine_perf {

namespace {

bool parse_ip(const std::string& s, uint32_t* ip) {
  in_addr a{};
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return false;
  *ip = ntohl(a.s_addr);
  return true;
}

// The DPDK port named by --vdev, opened with `queues` RX/TX queue pairs
// (EAL first); says what the port did with the MTU asked for.
std::unique_ptr<dpdk::Port> open_remote_port(const Options& o, uint16_t queues, uint32_t* my_ip) {
  const auto& eal = dpdk::eal_init({"--vdev=" + o.vdev});
  if (!eal.ok) {
    std::fprintf(stderr, "dpdat-engine-perf: %s\n", eal.error.c_str());
    return nullptr;
  }
  if (!parse_ip(o.ip, my_ip)) {
    std::fprintf(stderr, "dpdat-engine-perf: --ip needs this side's IPv4 address\n");
    return nullptr;
  }
  const std::string devname = o.vdev.substr(0, o.vdev.find(','));
  uint16_t port_id = 0;
  if (!dpdk::Port::find(devname, &port_id)) {
    std::fprintf(stderr, "dpdat-engine-perf: no DPDK port named %s\n", devname.c_str());
    return nullptr;
  }
  dpdk::PortConfig pc;
  pc.name = "perf";
  pc.ip = *my_ip;
  pc.rx_loss = o.loss;
  pc.loss_seed = *my_ip;
  pc.mtu = o.mtu;
  pc.queues = queues;
  std::string err;
  auto port = dpdk::Port::open(port_id, pc, &err);
  if (!port) {
    std::fprintf(stderr, "dpdat-engine-perf: %s\n", err.c_str());
    return nullptr;
  }
  if (!port->mtu_note().empty()) std::printf("dpdat-engine-perf: %s\n", port->mtu_note().c_str());
  return port;
}

// The queue pair settings the options ask for, at `pmtu`.
rc::QpConfig qp_config(const Options& o, uint32_t pmtu) {
  rc::QpConfig q;
  q.pmtu = pmtu;
  q.selective_repeat = !o.gbn;
  q.cc.mode = o.cc;
  q.sq_depth = std::max<uint32_t>(o.tx_depth * 2, 256);
  if (o.window != 0) q.window = o.window;
  if (o.rto_us != 0) q.retransmit_timeout_ns = o.rto_us * 1000;
  q.min_retry_time_ns = 1'000'000'000;  // as dat_core: a stalled peer host is not dead
  return q;
}

// The peer's MAC by ARP within 5 s, progressing (and answering its ARP)
// through `poll` meanwhile.
template <typename Poll>
bool resolve_peer(dpdk::Port& port, uint32_t ip, Poll poll, wire::MacAddr* mac) {
  const uint64_t deadline = now_ns() + 5'000'000'000ull;
  uint64_t next_try = 0;
  while (now_ns() < deadline) {
    poll();
    if (now_ns() >= next_try) {
      if (port.resolve(ip, mac)) return true;
      next_try = now_ns() + 20'000'000;
    }
  }
  std::fprintf(stderr, "dpdat-engine-perf: no ARP answer from the peer within 5 s\n");
  return false;
}

}  // namespace

Multi::~Multi() {
  runners.clear();  // joins the engine threads
  for (const auto& n : names) dpdk::telemetry_remove_engine(n);
  engines.clear();  // their mbufs go back before the port's pool
  port.reset();
}

void Multi::drain(uint64_t timeout_ns) {
  const uint64_t end = now_ns() + timeout_ns;
  for (;;) {
    bool idle = true;
    for (size_t e = 0; e < engines.size(); ++e) {
      if (runners.empty()) {
        idle = idle && engines[e]->idle();
      } else {
        bool i = false;
        runners[e]->call([&] { i = engines[e]->idle(); });
        idle = idle && i;
      }
    }
    if (idle || now_ns() > end) return;
    if (runners.empty()) {
      poll_inline();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
}

bool Multi::report(const char* who) {
  runners.clear();
  std::printf("%s: %zu engines, %zu QPs\n", who, engines.size(), qps.size());
  for (uint16_t q = 0; q < port->queues(); ++q) {
    const dpdk::PortCounters c = port->queue_counters(q);
    std::printf(" queue %u: rx %" PRIu64 " tx %" PRIu64 "  engine %u: rx %" PRIu64
                " handed in %" PRIu64 " handed off %" PRIu64 "\n",
                q, c.rx_packets, c.tx_packets, q, engines[q]->counters().rx_frames,
                engines[q]->counters().handed_in, engines[q]->counters().handed_off);
  }
  const dpdk::PortCounters pc = port->counters();
  std::printf(" port: link %s tx_full %" PRIu64 " tx_alloc_fail %" PRIu64 " free mbufs %u\n",
              port->link_up() ? "up" : "DOWN", pc.tx_full, pc.tx_alloc_fail,
              port->pool_available());
  std::printf(" wire: tx %" PRIu64 " frames %" PRIu64 " B largest %u  rx %" PRIu64
              " frames %" PRIu64 " B largest %u\n",
              pc.tx_packets, pc.tx_bytes, pc.tx_max_frame, pc.rx_packets, pc.rx_bytes,
              pc.rx_max_frame);
  std::printf(" IPv4 checksum by the device: tx %" PRIu64 " rx good %" PRIu64 " rx bad %" PRIu64
              "\n",
              pc.tx_ip_csum_offloaded, pc.rx_ip_csum_good, pc.rx_ip_csum_bad);
  for (size_t k = 0; k < qps.size(); ++k) {
    const rc::QpCounters& c = qps[k]->counters();
    std::printf(" QP %zu: tx %" PRIu64 " rx %" PRIu64 " retransmits %" PRIu64 " timeouts %" PRIu64
                " seq-NAKs rx %" PRIu64 " tx %" PRIu64 " SACKs rx %" PRIu64 " tx %" PRIu64
                " probes %" PRIu64 " duplicates %" PRIu64 " out-of-order %" PRIu64
                " (placed %" PRIu64 " kept %" PRIu64 ") srtt %.1f us rto %.1f us\n",
                k, c.tx_packets, c.rx_packets, c.retransmits + c.sr_resends, c.timeouts,
                c.seq_naks_rx, c.seq_naks_tx, c.sacks_rx, c.sacks_tx, c.tlp_probes, c.duplicates_rx,
                c.out_of_order_rx, c.sr_placed_ahead, c.sr_kept,
                static_cast<double>(qps[k]->rtt().srtt_ns()) / 1e3,
                static_cast<double>(qps[k]->rtt().rto_ns()) / 1e3);
    const std::string_view mode = rc::cc_mode_name(qps[k]->config().cc.mode);
    std::printf(
        " QP %zu cc %.*s: CE rx %" PRIu64 " CNPs tx %" PRIu64 " rx %" PRIu64 " rate cuts %" PRIu64
        " window cuts %" PRIu64 " paced %" PRIu64 " pace rate %.2f Gb/s (0: none) window %.2f\n",
        k, static_cast<int>(mode.size()), mode.data(), c.ce_rx, c.cnp_tx, c.cnp_rx, c.cc_rate_cuts,
        c.cc_window_cuts, c.cc_paced, static_cast<double>(qps[k]->cc().pace_rate_bps()) / 1e9,
        qps[k]->cc().window_pkts());
  }
  bool ok = true;
  for (size_t k = 0; k < qps.size(); ++k)
    if (qps[k]->state() != rc::QpState::kRts) {
      std::fprintf(stderr, "%s: QP %zu error: %.*s\n", who, k,
                   static_cast<int>(rc::qp_error_name(qps[k]->error()).size()),
                   rc::qp_error_name(qps[k]->error()).data());
      ok = false;
    }
  return ok;
}

bool multi_setup(const Options& o, size_t max_size, Multi* m, tools::Oob* oob) {
  std::string err;
  uint32_t my_ip = 0;
  m->port = open_remote_port(o, o.engines, &my_ip);
  if (!m->port) return false;
  const std::string devname = o.vdev.substr(0, o.vdev.find(','));
  if (m->port->queues() != o.engines) {
    std::fprintf(stderr, "dpdat-engine-perf: %s offers %u RX/TX queue pairs, %u engines asked\n",
                 devname.c_str(), m->port->queues(), o.engines);
    return false;
  }
  if (o.pmtu_given && o.pmtu > m->port->max_pmtu()) {
    // Never a smaller PMTU than asked without saying so: refuse.
    std::fprintf(stderr, "dpdat-engine-perf: --pmtu %u: %s carries at most PMTU %u (%s)\n", o.pmtu,
                 devname.c_str(), m->port->max_pmtu(),
                 m->port->mtu_note().empty() ? ("MTU " + std::to_string(m->port->mtu())).c_str()
                                             : m->port->mtu_note().c_str());
    return false;
  }
  const uint32_t pmtu = std::min(o.pmtu, m->port->max_pmtu());
  m->mr = std::make_unique<rc::MrTable>(64, 16);
  const size_t n_eng = o.engines;
  if (n_eng > 1) m->group = std::make_unique<rc::EngineGroup>(n_eng);
  for (size_t e = 0; e < n_eng; ++e) {
    rc::EngineConfig ec;
    ec.pmtu = 4096;
    ec.qpn_base = rc::EngineGroup::qpn_base(e);
    m->engines.push_back(
        std::make_unique<rc::Engine>(m->port->queue(static_cast<uint16_t>(e)), *m->mr, ec));
    if (m->group) m->engines.back()->join_group(m->group.get(), e);
    m->names.push_back(std::string(o.server ? "perf-server" : "perf-client") + "-e" +
                       std::to_string(e));
    dpdk::telemetry_add_engine(m->names.back(), m->engines.back().get());
  }
  const rc::QpConfig q = qp_config(o, pmtu);
  for (size_t k = 0; k < o.qps; ++k) {
    m->scq.push_back(std::make_unique<rc::CompletionQueue>(8192));
    m->rcq.push_back(std::make_unique<rc::CompletionQueue>(8192));
    rc::Qp* qp =
        m->engines[m->engine_of(k)]->create_qp(1, q, m->scq.back().get(), m->rcq.back().get());
    if (qp == nullptr) {
      std::fprintf(stderr, "dpdat-engine-perf: create_qp failed\n");
      return false;
    }
    m->qps.push_back(qp);
  }
  if (!reg(*m->mr, 1, 2 * max_size, &m->buf) || !reg(*m->mr, 1, max_size, &m->aux)) {
    std::fprintf(stderr, "dpdat-engine-perf: memory registration failed\n");
    return false;
  }
  for (size_t i = 0; i < m->buf.bytes.size(); ++i) m->buf.bytes[i] = pattern_byte(i);
  if (o.server ? !oob->serve(o.oob, 120'000, &err) : !oob->connect(o.oob, 30'000, &err)) {
    std::fprintf(stderr, "dpdat-engine-perf: %s\n", err.c_str());
    return false;
  }
  const uint32_t psn = o.server ? 0x123456u : 0xABCDEFu;
  const Hello me{my_ip,       m->qps[0]->qpn(),    psn,  m->buf.lmr,
                 m->buf.va(), m->buf.bytes.size(), pmtu, static_cast<uint16_t>(n_eng),
                 o.qps};
  if (!oob->send(me) || !oob->recv(&m->peer)) {
    std::fprintf(stderr, "dpdat-engine-perf: bootstrap exchange failed\n");
    return false;
  }
  if (m->peer.engines != n_eng || m->peer.qps != o.qps) {
    std::fprintf(
        stderr, "dpdat-engine-perf: the peer runs %u engines / %u QPs, we %zu / %u: use the same\n",
        m->peer.engines, m->peer.qps, n_eng, o.qps);
    return false;
  }
  std::vector<uint32_t> peer_qpn(o.qps);
  for (size_t k = 0; k < o.qps; ++k)
    if (!oob->send(m->qps[k]->qpn())) return false;
  for (size_t k = 0; k < o.qps; ++k)
    if (!oob->recv(&peer_qpn[k])) return false;
  wire::MacAddr peer_mac{};
  if (!resolve_peer(
          *m->port, m->peer.ip, [m] { m->poll_inline(); }, &peer_mac))
    return false;
  for (size_t k = 0; k < o.qps; ++k) {
    rc::Qp* qp = m->qps[k];
    if (m->peer.pmtu < pmtu && !qp->set_pmtu(m->peer.pmtu)) {
      std::fprintf(stderr, "dpdat-engine-perf: the peer's PMTU %u is not usable\n", m->peer.pmtu);
      return false;
    }
    rc::PathInfo path;
    path.local_mac = m->port->mac();
    path.peer_mac = peer_mac;
    path.local_ip = my_ip;
    path.peer_ip = m->peer.ip;
    path.peer_qpn = peer_qpn[k];
    // Distinct per QP (engines reuse the low QPN bits): RSS / af_packet
    // fanout may hash flows apart.
    path.udp_src_port = static_cast<uint16_t>(0xC000 | ((qp->qpn() & 0x3FFF) ^ (qp->qpn() >> 16)));
    const uint32_t off = static_cast<uint32_t>(k) * 0x1000u;
    const uint32_t peer_psn = o.server ? 0xABCDEFu : 0x123456u;
    if (!qp->connect(path, wire::Psn(psn + off), wire::Psn(peer_psn + off))) {
      std::fprintf(stderr, "dpdat-engine-perf: connect failed\n");
      return false;
    }
  }
  const uint32_t ready = 0x52454459;
  uint32_t got = 0;
  if (!oob->send(ready)) return false;
  while (!oob->readable()) m->poll_inline();
  if (!oob->recv(&got) || got != ready) return false;
  // --threads: the bandwidth threads drive the engines (remote_client.cpp).
  if (o.server || !o.per_engine_threads) m->start_runners();
  return true;
}

void refill_recvs(Multi& m, uint64_t size, uint64_t* recv_errors) {
  const size_t nq = m.qps.size();
  const size_t share = Multi::recv_slice(m.buf.bytes.size(), nq);
  for (size_t k = 0; k < nq; ++k) {
    rc::RecvWr rw;
    rw.num_sge = 1;
    rw.sge[0] = rc::Sge{m.buf.lmr, m.buf.va() + k * share, share};
    const Poster p = m.poster(k);
    while (m.qps[k]->recv_queue_used() < m.qps[k]->config().rq_depth && p.recv(m.qps[k], rw)) {
    }
    rc::Completion c;
    while (m.rcq[k]->pop(&c))
      if (c.status != rc::WcStatus::kSuccess || c.byte_len != size) ++*recv_errors;
  }
}

}  // namespace dpdat::engine_perf
