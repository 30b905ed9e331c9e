// dpdat-engine-perf across processes: N >= 1 engines on the port's RX/TX
// queue pairs, M >= 1 QPs spread over them, the bootstrap over the --oob
// Unix socket.

#include <arpa/inet.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

#include "common.hpp"
#include "dpdk/eal.hpp"
#include "oob.hpp"
#include "rc/engine_group.hpp"
#include "wire/headers.hpp"

namespace dpdat::engine_perf {

namespace {

// ------------------------------------------------------------ across processes

struct Hello {
  uint32_t ip;
  uint32_t qpn;
  uint32_t psn;
  uint32_t rkey;
  uint64_t buf_va;
  uint64_t buf_len;
  uint32_t pmtu;     // the largest this side can use; both take the smaller
  uint16_t engines;  // --engines and --qps: both sides must agree
  uint16_t qps;
};
enum : uint32_t { kCmdBw = 1, kCmdLat = 2, kCmdDone = 3 };
enum : uint32_t { kOpWrite = 0, kOpRead = 1, kOpSend = 2 };  // Cmd::pad for kCmdBw
struct Cmd {
  uint32_t kind;
  uint32_t pad;
  uint64_t size;
  uint64_t iters;
};

bool parse_ip(const std::string& s, uint32_t* ip) {
  in_addr a{};
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return false;
  *ip = ntohl(a.s_addr);
  return true;
}

// Byte i of the server's initial buffer (READ verification).
uint8_t pattern_byte(size_t i) { return static_cast<uint8_t>(i * 131 + 7); }

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
  const uint64_t deadline = tools::now_ns() + 5'000'000'000ull;
  uint64_t next_try = 0;
  while (tools::now_ns() < deadline) {
    poll();
    if (tools::now_ns() >= next_try) {
      if (port.resolve(ip, mac)) return true;
      next_try = tools::now_ns() + 20'000'000;
    }
  }
  std::fprintf(stderr, "dpdat-engine-perf: no ARP answer from the peer within 5 s\n");
  return false;
}

// ------------------------------------------- several engines, several QPs
// --engines N: the port gets N RX/TX queue pairs, one engine each, grouped
// (QPN bits 16..23 name the owner; a frame arriving on another engine's
// queue is handed over in software).  N > 1: each engine runs on its own
// EngineRunner thread with idle back-off (never pinned: the threads sleep
// when idle, so they can share this machine's CPUs); this thread only posts
// and reaps.  N = 1: progressed inline by this thread.
// --qps M: M queue pairs, QP k on engine k % N, each writing/reading its own
// n-byte slice of the peer's buffer.
struct Multi {
  ~Multi() {
    runners.clear();  // joins the engine threads
    for (const auto& n : names) dpdk::telemetry_remove_engine(n);
    engines.clear();  // their mbufs go back before the port's pool
    port.reset();
  }
  std::unique_ptr<dpdk::Port> port;
  std::unique_ptr<rc::MrTable> mr;
  std::unique_ptr<rc::EngineGroup> group;
  std::vector<std::unique_ptr<rc::Engine>> engines;
  std::vector<std::unique_ptr<rc::EngineRunner>> runners;      // empty: inline
  std::vector<std::unique_ptr<rc::CompletionQueue>> scq, rcq;  // per QP
  std::vector<rc::Qp*> qps;
  std::vector<std::string> names;
  Reg buf;  // the region the peer writes into / reads from
  Reg aux;  // latency: the pong source
  Hello peer{};
  size_t engine_of(size_t k) const { return k % engines.size(); }
  // Where QP k's receives land (SEND): its share of the buffer.
  static size_t recv_slice(size_t buf_len, size_t nq) { return buf_len / nq; }
  // Inline progress, or (engine threads) a yield.
  void poll_or_yield() {
    if (runners.empty()) {
      poll_inline();
    } else {
      std::this_thread::yield();
    }
  }
  Poster poster(size_t k) const {
    return Poster{runners.empty() ? nullptr : runners[engine_of(k)].get()};
  }
  // Inline progress (before the runners start, or N = 1).  Engines use
  // tools::now_ns, the runners' clock, throughout.
  void poll_inline() {
    const uint64_t t = tools::now_ns();
    for (auto& e : engines) e->poll(t);
  }
  void start_runners() {
    if (engines.size() < 2) return;
    rc::RunnerConfig rcfg;
    rcfg.policy = rc::IdlePolicy::kBackoff;
    for (auto& e : engines) {
      runners.push_back(std::make_unique<rc::EngineRunner>(*e, rcfg, &tools::now_ns));
      runners.back()->start();
    }
  }
  // Until every engine is idle or timeout_ns passes.
  void drain(uint64_t timeout_ns) {
    const uint64_t end = tools::now_ns() + timeout_ns;
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
      if (idle || tools::now_ns() > end) return;
      if (runners.empty()) {
        poll_inline();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
  }
  // After the runners stopped: every QP still connected, per-queue traffic.
  bool report(const char* who) {
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
    std::printf(" IPv4 checksum by the device: tx %" PRIu64 " rx good %" PRIu64 " rx bad %" PRIu64
                "\n",
                pc.tx_ip_csum_offloaded, pc.rx_ip_csum_good, pc.rx_ip_csum_bad);
    for (size_t k = 0; k < qps.size(); ++k) {
      const rc::QpCounters& c = qps[k]->counters();
      std::printf(" QP %zu: tx %" PRIu64 " rx %" PRIu64 " retransmits %" PRIu64 " timeouts %" PRIu64
                  " seq-NAKs rx %" PRIu64 " tx %" PRIu64 " duplicates %" PRIu64
                  " out-of-order %" PRIu64 "\n",
                  k, c.tx_packets, c.rx_packets, c.retransmits + c.sr_resends, c.timeouts,
                  c.seq_naks_rx, c.seq_naks_tx, c.duplicates_rx, c.out_of_order_rx);
      std::printf(
          " QP %zu cc %.*s: CE rx %" PRIu64 " CNPs tx %" PRIu64 " rx %" PRIu64 " rate cuts %" PRIu64
          " window cuts %" PRIu64 " paced %" PRIu64 " pace rate %.2f Gb/s (0: none) window %.2f\n",
          k, static_cast<int>(rc::cc_mode_name(qps[k]->config().cc.mode).size()),
          rc::cc_mode_name(qps[k]->config().cc.mode).data(), c.ce_rx, c.cnp_tx, c.cnp_rx,
          c.cc_rate_cuts, c.cc_window_cuts, c.cc_paced,
          static_cast<double>(qps[k]->cc().pace_rate_bps()) / 1e9, qps[k]->cc().window_pkts());
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
};

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
  m->start_runners();
  return true;
}

// Keeps every QP's receive queue full (SEND rounds): receives of QP k land
// in its share of the buffer, full-share long so ones left over from a
// smaller round still fit.  Counts receive completions in error.
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

// The server's half of the latency test on QP 0: each time the client's
// tag lands in our buffer, WRITE it back into the client's pong area.
bool echo(Multi& m, size_t n, uint64_t iters) {
  const size_t last = n - 1;
  for (uint64_t i = 0; i < iters; ++i) {
    const uint8_t tag = static_cast<uint8_t>(i % 250 + 1);
    const uint64_t end = tools::now_ns() + 2'000'000'000ull;
    uint32_t polls = 0;
    while (peek(m.buf.bytes[last]) != tag) {
      m.poll_or_yield();
      if ((++polls & 255u) == 0 && tools::now_ns() > end) {
        std::fprintf(stderr, "dpdat-engine-perf server: ping %" PRIu64 " never arrived\n", i);
        return false;
      }
    }
    m.aux.bytes[last] = tag;
    rc::SendWr w =
        rdma_wr(rc::WrOp::kWrite, m.aux, {m.peer.buf_va + m.peer.buf_len / 2, m.peer.rkey}, 0, n);
    w.flags = 0;
    while (!m.poster(0).send(m.qps[0], w)) m.poll_or_yield();
    rc::Completion cc;
    while (m.scq[0]->pop(&cc)) {
    }
  }
  return true;
}

int run_multi_server(const Options& o, size_t max_size) {
  Multi m;
  tools::Oob oob;
  if (!multi_setup(o, max_size, &m, &oob)) return 1;
  std::printf("dpdat-engine-perf server: %zu QPs on %zu engines over %s, waiting for the client\n",
              m.qps.size(), m.engines.size(), o.vdev.c_str());
  // Passive side: the engines answer WRITEs and READs on their own; this
  // thread waits for the client's commands, keeps receive queues full for
  // SEND rounds and echoes latency pings.
  Cmd c{};
  uint64_t recv_errors = 0;
  int rc_ = 0;
  for (;;) {
    const bool recv_mode = c.kind == kCmdBw && c.pad == kOpSend;
    uint32_t spins = 0;
    // The next command is looked for every 1024 passes: a recv() per poll
    // would cost a system call per burst on the data path.
    while ((++spins & 1023u) != 0 || !oob.readable()) {
      if (recv_mode) refill_recvs(m, c.size, &recv_errors);
      if (m.runners.empty()) {
        m.poll_inline();
      } else if ((spins & 1023u) == 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(recv_mode ? 20 : 500));
      }
    }
    if (recv_mode) refill_recvs(m, c.size, &recv_errors);  // this round's last completions
    if (recv_errors != 0) {
      std::fprintf(stderr, "dpdat-engine-perf server: %" PRIu64 " receive completions in error\n",
                   recv_errors);
      rc_ = 1;
      break;
    }
    if (!oob.recv(&c) || c.kind == kCmdDone) break;
    if (c.kind == kCmdLat) std::memset(m.buf.bytes.data(), 0, std::max<uint64_t>(c.size, 1));
    if (c.kind == kCmdBw && c.pad == kOpSend) refill_recvs(m, c.size, &recv_errors);
    const uint32_t ready = 1;  // prepared: the client may start
    if (!oob.send(ready)) break;
    if (c.kind == kCmdLat && !echo(m, std::max<uint64_t>(c.size, 1), c.iters)) {
      rc_ = 1;
      break;
    }
  }
  // The client has stopped its engines.  Stop ours before saying so: a
  // net_memif peer that closes its end while this side still polls the
  // shared rings can crash the poller (the PMD unmaps them underneath).
  m.drain(200'000'000);
  const bool ok = m.report("dpdat-engine-perf server");
  const uint32_t bye = 2;
  oob.send(bye);
  if (!ok || rc_ != 0) return 1;
  std::printf("dpdat-engine-perf server: done\n");
  return 0;
}

// M QPs, each moving `iters / M` messages of n bytes into its own slice.
bool run_multi_bw(Multi& m, const Reg& src, size_t n, uint64_t iters, const Options& o) {
  const size_t nq = m.qps.size();
  const uint32_t kSig = 16;
  const uint32_t depth = std::max<uint32_t>(o.tx_depth / static_cast<uint32_t>(nq), kSig);
  std::vector<uint64_t> quota(nq, iters / nq), posted(nq, 0), completed(nq, 0);
  quota[0] += iters % nq;
  const uint64_t t0 = tools::now_ns();
  const uint64_t deadline = t0 + 60'000'000'000ull;
  uint64_t done = 0;
  std::vector<std::pair<uint64_t, uint64_t>> stamps;  // (time, messages done)
  stamps.reserve(iters / kSig + 2);
  uint32_t idle_passes = 0;
  while (done < iters) {
    bool progress = false;
    for (size_t k = 0; k < nq; ++k) {
      rc::SendWr w = rdma_wr(op_of(o), src, {m.peer.buf_va, m.peer.rkey}, k * n, n);
      const Poster p = m.poster(k);
      while (posted[k] < quota[k] && posted[k] - completed[k] < depth) {
        w.flags = ((posted[k] + 1) % kSig == 0 || posted[k] + 1 == quota[k])
                      ? rc::wr_flag::kSignaled
                      : 0u;
        if (!p.send(m.qps[k], w)) break;
        ++posted[k];
      }
    }
    if (m.runners.empty()) m.poll_inline();
    for (size_t k = 0; k < nq; ++k) {
      rc::Completion c;
      while (m.scq[k]->pop(&c)) {
        if (c.status != rc::WcStatus::kSuccess) {
          std::fprintf(stderr, "completion error on QP %zu: %.*s\n", k,
                       static_cast<int>(rc::wc_status_name(c.status).size()),
                       rc::wc_status_name(c.status).data());
          return false;
        }
        const uint64_t before = completed[k];
        completed[k] = std::min(quota[k], (completed[k] / kSig + 1) * kSig);
        done += completed[k] - before;
        stamps.emplace_back(tools::now_ns(), done);
        progress = true;
      }
    }
    if (tools::now_ns() > deadline) {
      std::fprintf(stderr, "timed out\n");
      return false;
    }
    // Engine threads do the work: back off rather than compete for a CPU.
    if (!m.runners.empty() && !progress && ++idle_passes > 64) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      idle_passes = 0;
    }
  }
  const uint64_t total_ns = tools::now_ns() - t0;
  const double secs = static_cast<double>(total_ns) / 1e9;
  // Peak: the best rate over any span of at least 1/20 of the run (and 100 us).
  const uint64_t span = std::max<uint64_t>(total_ns / 20, 100'000);
  double peak = 0;
  for (size_t i = 0, j = 0; i < stamps.size(); ++i) {
    while (j < stamps.size() && stamps[j].first - stamps[i].first < span) ++j;
    if (j == stamps.size()) break;
    const double dt = static_cast<double>(stamps[j].first - stamps[i].first) / 1e9;
    peak = std::max(peak, static_cast<double>((stamps[j].second - stamps[i].second) * n) / dt);
  }
  const double avg = static_cast<double>(iters * n) / secs;
  peak = std::max(peak, avg);
  std::printf(" %-10zu %-12" PRIu64 " %-16.2f %-16.2f %-14.2f %-12.4f\n", n, iters, peak * 8 / 1e9,
              avg * 8 / 1e9, avg / 1e6, static_cast<double>(iters) / secs / 1e6);
  g_bw.push_back({{"size", n},
                  {"iters", iters},
                  {"avg_mbs", avg / 1048576.0},
                  {"peak_mbs", peak / 1048576.0},
                  {"msg_rate_mpps", static_cast<double>(iters) / secs / 1e6}});
  return true;
}

// Reads n bytes at remote_off of the peer's buffer back through QP k into
// slice k of `into`.
bool multi_read_back(Multi& m, Reg& into, size_t n, size_t k, size_t remote_off) {
  rc::SendWr w = rdma_wr(rc::WrOp::kRead, into, {m.peer.buf_va, m.peer.rkey}, k * n, n);
  w.remote_va = m.peer.buf_va + remote_off;
  w.flags = rc::wr_flag::kSignaled;
  const uint64_t end = tools::now_ns() + 10'000'000'000ull;
  while (!m.poster(k).send(m.qps[k], w)) {
    if (tools::now_ns() > end) return false;
    std::this_thread::yield();
  }
  rc::Completion c;
  while (!m.scq[k]->pop(&c)) {
    if (tools::now_ns() > end) return false;
    if (m.runners.empty()) {
      m.poll_inline();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  return c.status == rc::WcStatus::kSuccess;
}

// The client's latency test on QP 0: WRITE a tag into the server's buffer,
// wait for the server's WRITE of it into our pong area.
bool run_multi_lat(Multi& m, Reg& src, size_t n, uint64_t iters) {
  const size_t last = n - 1;
  uint8_t* pong = m.buf.bytes.data() + m.buf.bytes.size() / 2;
  std::memset(pong, 0, n);
  std::vector<double> samples;
  samples.reserve(iters);
  rc::SendWr w = rdma_wr(rc::WrOp::kWrite, src, {m.peer.buf_va, m.peer.rkey}, 0, n);
  w.flags = 0;
  for (uint64_t i = 0; i < iters + 100; ++i) {  // 100 warm-up rounds
    const uint8_t tag = static_cast<uint8_t>(i % 250 + 1);
    src.bytes[last] = tag;
    const uint64_t t0 = tools::now_ns();
    while (!m.poster(0).send(m.qps[0], w)) m.poll_or_yield();
    const uint64_t end = t0 + 2'000'000'000ull;
    uint32_t spins = 0;
    while (peek(pong[last]) != tag) {
      m.poll_or_yield();
      if ((++spins & 255u) == 0 && tools::now_ns() > end) {
        std::fprintf(stderr, "dpdat-engine-perf: pong %" PRIu64 " never arrived\n", i);
        return false;
      }
    }
    if (i >= 100) samples.push_back(static_cast<double>(tools::now_ns() - t0) / 2e3);
    rc::Completion cc;
    while (m.scq[0]->pop(&cc)) {
    }
  }
  std::printf("\n %-10s %-12s %-10s %-10s %-10s %-10s %-10s\n", "#bytes", "#iterations",
              "t_min[us]", "t_median", "t_avg", "t_p99", "t_max");
  print_lat(n, iters, samples);
  return true;
}

// One path for N >= 1 QPs on M >= 1 engines: bandwidth of every size on
// every QP, then the latency on QP 0.
int run_multi_client(const Options& o, size_t max_size) {
  Multi m;
  tools::Oob oob;
  if (!multi_setup(o, max_size, &m, &oob)) return 1;
  std::printf("dpdat-engine-perf: RDMA %s to %s over %s, PMTU %u, %zu QPs on %zu engines (%s)\n",
              o.op.c_str(), o.client_of.c_str(), o.vdev.c_str(), m.qps[0]->config().pmtu,
              m.qps.size(), m.engines.size(),
              m.runners.empty() ? "inline progress" : "engine threads, idle back-off");
  Reg src, back;
  if (!reg(*m.mr, 1, max_size, &src) || !reg(*m.mr, 1, max_size, &back)) return 1;
  int rc_ = 0;
  const size_t nq = m.qps.size();
  uint32_t ready = 0;
  if (o.bw) {
    std::printf("\n %-10s %-12s %-16s %-16s %-14s %-12s\n", "#bytes", "#iterations",
                "BW peak[Gb/s]", "BW average[Gb/s]", "BW avg[MB/s]", "MsgRate[Mpps]");
    for (size_t n : o.sizes) {
      const size_t share = Multi::recv_slice(m.peer.buf_len, nq);
      if (n * nq > max_size || (o.op == "send" && n > share)) {
        std::fprintf(stderr, "dpdat-engine-perf: %zu QPs x %zu B exceed the %zu-byte buffers\n", nq,
                     n, max_size);
        rc_ = 1;
        break;
      }
      // Each QP's slice differs from the others', so a frame placed in the
      // wrong slice shows.
      for (size_t i = 0; i < nq * n; ++i)
        src.bytes[i] = static_cast<uint8_t>((i * 7 + 3) ^ (i / std::max<size_t>(n, 1) * 0x5B + 1));
      const Cmd c{kCmdBw, o.op == "send" ? kOpSend : o.op == "read" ? kOpRead : kOpWrite, n, 0};
      if (!oob.send(c) || !oob.recv(&ready)) return 1;  // the server is prepared
      const uint64_t it =
          o.iters != 0 ? o.iters
                       : std::clamp<uint64_t>((256ull << 20) / std::max<size_t>(n, 64), 200, 50000);
      if (!run_multi_bw(m, src, n, it, o)) rc_ = 1;
      if (rc_ == 0 && o.verify) {
        bool ok = true;
        for (size_t k = 0; k < nq && ok; ++k) {
          // WRITE: slice k of the peer; SEND: QP k's share, where its
          // receives land; READ: slice k, the server's initial pattern.
          ok = multi_read_back(m, back, n, k, o.op == "send" ? k * share : k * n);
          for (size_t i = k * n; i < (k + 1) * n && ok; ++i)
            ok = back.bytes[i] == (o.op == "read" ? pattern_byte(i) : src.bytes[i]);
          if (ok && o.op == "read")  // what the READs brought in
            for (size_t i = k * n; i < (k + 1) * n && ok; ++i) ok = src.bytes[i] == pattern_byte(i);
        }
        std::printf("   verify %zu B on %zu QPs: %s\n", n, nq, ok ? "byte-exact" : "MISMATCH");
        if (!ok) rc_ = 1;
      }
      if (rc_ != 0) break;
    }
  }
  if (o.lat && rc_ == 0) {
    const size_t n = std::max<size_t>(o.sizes.size() == 1 ? o.sizes[0] : 8, 1);
    const uint64_t iters = o.iters != 0 ? o.iters : 10000;
    if (nq > 1) std::printf("\n(latency on QP 0 of %zu)\n", nq);
    const Cmd c{kCmdLat, 0, n, iters + 100};
    if (!oob.send(c) || !oob.recv(&ready)) return 1;  // the server cleared its buffer
    if (!run_multi_lat(m, src, n, iters)) rc_ = 1;
  }
  // Engines stopped before the server is told we are done; its own are
  // stopped before it answers (see run_multi_server), and we keep our port
  // open until then.
  m.drain(200'000'000);
  if (!m.report("dpdat-engine-perf")) rc_ = 1;
  const Cmd done{kCmdDone, 0, 0, 0};
  uint32_t bye = 0;
  if (oob.send(done)) oob.recv(&bye);  // returns on the answer or the server's exit
  return rc_;
}

}  // namespace

int run_remote(const Options& in) {
  Options o = in;
  if (o.vdev.empty() || o.ip.empty()) {
    std::fprintf(stderr, "dpdat-engine-perf: --server/--client need --vdev and --ip\n");
    return 2;
  }
  size_t max_size = 4096;
  for (size_t n : o.sizes) max_size = std::max(max_size, n);
  if (o.qps == 0) o.qps = o.engines;
  if (o.engines == 0 || o.engines > rc::EngineGroup::kMaxEngines || o.qps > 64) {
    std::fprintf(stderr, "dpdat-engine-perf: --engines 1..%u, --qps 1..64\n",
                 rc::EngineGroup::kMaxEngines);
    return 2;
  }
  if (o.server) return run_multi_server(o, std::max<size_t>(max_size, 8u << 20));
  return finish(o, run_multi_client(o, std::max<size_t>(max_size, 8u << 20)));
}

}  // namespace dpdat::engine_perf
