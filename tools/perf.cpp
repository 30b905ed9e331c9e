// dpdat-perf: perftest-style bandwidth and latency for dpdat's RC transport.
//
// Default (no arguments): client and server in one process over the
// in-process net_ring link, engines progressed inline by this thread, RDMA
// WRITE bandwidth for 2 B .. 1 MiB, then the 8 B WRITE latency.
//
//   dpdat-perf [--op write|read|send] [--size N | --all] [--iters N]
//              [--lat | --bw] [--pmtu N] [--tx-depth N] [--window PKTS] [--gbn]
//
// Across processes, over any DPDK port (net_memif, net_af_packet on a veth,
// net_tap, a physical NIC):
//   dpdat-perf --server --vdev net_memif0,role=server,socket=/tmp/m.sock
//              --ip 10.0.0.1 --oob /tmp/dpdat-perf.sock
//   dpdat-perf --client 10.0.0.1 --vdev net_memif0,role=client,socket=/tmp/m.sock
//              --ip 10.0.0.2 --oob /tmp/dpdat-perf.sock [--verify]
// The peer's MAC is found by ARP; the QP numbers, PSNs and the target buffer
// are exchanged over the --oob Unix socket (as perftest uses a TCP side
// channel).  --verify reads every WRITE back and compares it byte for byte.

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <thread>
#include "dpdk/eal.hpp"
#include "loopback.hpp"
#include "oob.hpp"
#include "rc/engine_runner.hpp"
#include "wire/headers.hpp"

namespace {

using namespace dpdat;

struct Options {
  std::string op = "write";
  std::vector<size_t> sizes;
  uint64_t iters = 0;  // 0: pick per size
  bool lat = false;
  bool bw = false;
  uint32_t pmtu = 1024;
  uint16_t mtu = 1500;  // port MTU asked of the PMD (cross-process)
  uint32_t tx_depth = 128;
  uint32_t window = 0;  // 0: QpConfig's default
  bool gbn = false;
  // cross-process
  bool server = false;
  std::string client_of;  // server IPv4 address (client mode)
  std::string vdev;
  std::string ip;
  std::string oob = "/tmp/dpdat-perf.sock";
  bool verify = false;
  double loss = 0.0;             // injected RX loss (fault injection for tests)
  bool thread_progress = false;  // --progress thread: dedicated engine threads
};

void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--op write|read|send] [--size N | --all] [--iters N] [--lat | --bw]\n"
               "          [--pmtu 256..4096] [--tx-depth N] [--window PKTS] [--gbn]\n"
               "          [--progress inline|thread]\n"
               "       %s --server --vdev DEV,ARGS --ip A.B.C.D [--oob PATH] [--mtu N]\n"
               "       %s --client SERVER_IP --vdev DEV,ARGS --ip A.B.C.D [--oob PATH] [--mtu N]\n"
               "          [--verify]\n"
               "       (--loss P drops a fraction P of received frames, seeded: fault injection)\n",
               argv0, argv0, argv0);
}

struct Reg {
  std::vector<uint8_t> bytes;
  uint32_t lmr = 0;
  uint64_t va() const { return reinterpret_cast<uint64_t>(bytes.data()); }
};

bool reg(tools::Endpoint& e, size_t n, Reg* r) {
  r->bytes.assign(std::max<size_t>(n, 8), 0);
  return e.mr->lmr_register(e.pz, r->bytes.data(), r->va(), r->bytes.size(), rc::priv::kAll,
                            &r->lmr);
}

rc::SendWr make_wr(const Options& o, const Reg& src, const Reg& dst, size_t n, bool signaled) {
  rc::SendWr w;
  w.op = o.op == "read" ? rc::WrOp::kRead : o.op == "send" ? rc::WrOp::kSend : rc::WrOp::kWrite;
  w.flags = signaled ? rc::wr_flag::kSignaled : 0u;
  w.num_sge = 1;
  w.sge[0] = rc::Sge{src.lmr, src.va(), n};
  w.remote_va = dst.va();
  w.rkey = dst.lmr;
  return w;
}

struct BwTarget {
  uint64_t va;
  uint32_t rkey;
};

// Bandwidth: keep tx_depth WRs in flight, every 16th signalled.  `resp` is
// the receiving endpoint when it lives in this process (SEND needs receives,
// which land in the target buffer).
// How work reaches an engine: straight into the QP (inline progress), or
// through an EngineRunner's inbox (dedicated engine thread).
struct Poster {
  rc::EngineRunner* runner = nullptr;
  bool send(rc::Qp* qp, const rc::SendWr& w) const {
    return runner != nullptr ? runner->post_send(qp, w)
                             : qp->post_send(w) == rc::Qp::PostResult::kOk;
  }
  bool recv(rc::Qp* qp, const rc::RecvWr& w) const {
    return runner != nullptr ? runner->post_recv(qp, w)
                             : qp->post_recv(w) == rc::Qp::PostResult::kOk;
  }
};

template <typename Poll>
bool run_bw_to(tools::Endpoint& req, tools::Endpoint* resp, const Reg& src, BwTarget dst,
               uint32_t dst_lmr, size_t n, uint64_t iters, const Options& o, Poll poll,
               Poster preq = {}, Poster presp = {}) {
  const bool send = o.op == "send";
  // SEND needs receives: posted here when the receiver is in this process,
  // by the peer (dpdat-perf --server keeps its receive queue full) otherwise.
  const bool local_recvs = send && resp != nullptr;
  uint64_t posted = 0, completed = 0, recvs = 0;
  const uint32_t kSig = 16;
  std::vector<uint64_t> stamps;
  stamps.reserve(iters / kSig + 2);
  const uint64_t t0 = tools::now_ns();
  const uint64_t deadline = t0 + 60'000'000'000ull;
  rc::SendWr w;
  w.op = o.op == "read" ? rc::WrOp::kRead : send ? rc::WrOp::kSend : rc::WrOp::kWrite;
  w.num_sge = 1;
  w.sge[0] = rc::Sge{src.lmr, src.va(), n};
  w.remote_va = dst.va;
  w.rkey = dst.rkey;
  uint32_t spins = 0;
  while (completed < iters) {
    if (local_recvs) {
      while (recvs < iters && recvs < posted + o.tx_depth && recvs - posted < 200) {
        rc::RecvWr r;
        r.num_sge = 1;
        r.sge[0] = rc::Sge{dst_lmr, dst.va, n};
        if (!presp.recv(resp->qp, r)) break;
        ++recvs;
      }
    }
    while (posted < iters && posted - completed < o.tx_depth && (!local_recvs || posted < recvs)) {
      w.flags = ((posted + 1) % kSig == 0 || posted + 1 == iters) ? rc::wr_flag::kSignaled : 0u;
      if (!preq.send(req.qp, w)) break;
      ++posted;
    }
    poll();
    rc::Completion c;
    while (req.scq->pop(&c)) {
      if (c.status != rc::WcStatus::kSuccess) {
        std::fprintf(stderr, "completion error: %.*s\n",
                     static_cast<int>(rc::wc_status_name(c.status).size()),
                     rc::wc_status_name(c.status).data());
        return false;
      }
      completed = std::min(iters, (completed / kSig + 1) * kSig);
      stamps.push_back(tools::now_ns());
    }
    if (resp != nullptr)
      while (resp->rcq->pop(&c)) {
      }
    if ((++spins & 1023u) == 0 && tools::now_ns() > deadline) {  // a clock read per 1024 polls
      std::fprintf(stderr, "timed out\n");
      return false;
    }
  }
  const uint64_t total_ns = tools::now_ns() - t0;
  const double secs = static_cast<double>(total_ns) / 1e9;
  // Peak: the best rate over any span of at least 1/20 of the run (and
  // 100 us), so single polls that happen to complete a batch do not count.
  const uint64_t span = std::max<uint64_t>(total_ns / 20, 100'000);
  double peak = 0;
  for (size_t i = 0, j = 0; i < stamps.size(); ++i) {
    while (j < stamps.size() && stamps[j] - stamps[i] < span) ++j;
    if (j == stamps.size()) break;
    const double dt = static_cast<double>(stamps[j] - stamps[i]) / 1e9;
    peak = std::max(peak, static_cast<double>((j - i) * kSig * n) / dt);
  }
  const double avg = static_cast<double>(iters * n) / secs;
  if (peak < avg) peak = avg;
  std::printf(" %-10zu %-12" PRIu64 " %-16.2f %-16.2f %-14.2f %-12.4f\n", n, iters, peak * 8 / 1e9,
              avg * 8 / 1e9, avg / 1e6, static_cast<double>(iters) / secs / 1e6);
  return true;
}

bool run_bw(tools::Loopback& lo, const Options& o, size_t n, uint64_t iters,
            rc::EngineRunner* ra = nullptr, rc::EngineRunner* rb = nullptr) {
  Reg src, dst;
  if (!reg(lo.a(), n, &src) || !reg(lo.b(), n, &dst)) return false;
  if (ra != nullptr)
    return run_bw_to(
        lo.a(), &lo.b(), src, BwTarget{dst.va(), dst.lmr}, dst.lmr, n, iters, o,
        [] { std::this_thread::yield(); }, Poster{ra}, Poster{rb});
  return run_bw_to(lo.a(), &lo.b(), src, BwTarget{dst.va(), dst.lmr}, dst.lmr, n, iters, o,
                   [&] { lo.poll(); });
}

void print_lat(size_t n, uint64_t iters, std::vector<double>& samples) {
  std::sort(samples.begin(), samples.end());
  auto pct = [&](double p) {
    return samples[static_cast<size_t>(p * static_cast<double>(samples.size() - 1))];
  };
  double sum = 0;
  for (double v : samples) sum += v;
  std::printf(" %-10zu %-12" PRIu64 " %-10.2f %-10.2f %-10.2f %-10.2f %-10.2f\n", n, iters,
              samples.front(), pct(0.5), sum / static_cast<double>(samples.size()), pct(0.99),
              samples.back());
}

// Latency: ping-pong of RDMA WRITEs; each side waits for the peer's write to
// land in memory (polling the last byte), as perftest's write_lat does.
// Reads a byte another thread (an engine thread) may be writing.
uint8_t peek(const uint8_t& b) {
  return std::atomic_ref<const uint8_t>(b).load(std::memory_order_acquire);
}

bool run_lat(tools::Loopback& lo, const Options& o, size_t n, uint64_t iters,
             rc::EngineRunner* ra = nullptr, rc::EngineRunner* rb = nullptr) {
  (void)o;
  Reg a_src, a_dst, b_src, b_dst;
  if (!reg(lo.a(), n, &a_src) || !reg(lo.a(), n, &a_dst) || !reg(lo.b(), n, &b_src) ||
      !reg(lo.b(), n, &b_dst))
    return false;
  const Poster pa{ra}, pb{rb};
  auto wait = [&](auto pred) {
    const uint64_t end = tools::now_ns() + 1'000'000'000;
    while (!pred()) {
      if (tools::now_ns() > end) return false;
      if (ra != nullptr) {
        std::this_thread::yield();
      } else {
        lo.poll();
      }
    }
    return true;
  };
  const size_t last = n == 0 ? 0 : n - 1;
  std::vector<double> samples;
  samples.reserve(iters);
  rc::Completion c;
  for (uint64_t i = 0; i < iters + 100; ++i) {  // 100 warm-up rounds
    const uint8_t tag = static_cast<uint8_t>(i % 250 + 1);
    a_src.bytes[last] = tag;
    const uint64_t t0 = tools::now_ns();
    if (!pa.send(lo.a().qp, make_wr(Options{}, a_src, b_dst, std::max<size_t>(n, 1), false)))
      return false;
    if (!wait([&] { return peek(b_dst.bytes[last]) == tag; })) return false;
    b_src.bytes[last] = tag;
    if (!pb.send(lo.b().qp, make_wr(Options{}, b_src, a_dst, std::max<size_t>(n, 1), false)))
      return false;
    if (!wait([&] { return peek(a_dst.bytes[last]) == tag; })) return false;
    const uint64_t t1 = tools::now_ns();
    if (i >= 100) samples.push_back(static_cast<double>(t1 - t0) / 2e3);  // half round trip, us
    while (lo.a().scq->pop(&c) || lo.b().scq->pop(&c)) {
    }
  }
  if (ra == nullptr)  // let the unsignalled WRITEs' ACKs drain before the next size
    lo.run_until([&] { return lo.a().engine->idle() && lo.b().engine->idle(); }, 1'000'000'000);
  print_lat(n, iters, samples);
  return true;
}

// ------------------------------------------------------------ across processes

struct Hello {
  uint32_t ip;
  uint32_t qpn;
  uint32_t psn;
  uint32_t rkey;
  uint64_t buf_va;
  uint64_t buf_len;
  uint32_t pmtu;  // the largest this side can use; both take the smaller
  uint32_t pad;
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

struct Remote {
  ~Remote() {
    if (!ep.name.empty()) dpdk::telemetry_remove_engine(ep.name);
    ep.engine.reset();  // its mbufs go back before the port's pool
  }
  tools::Endpoint ep;
  Reg buf;  // the region the peer writes into / reads from
  Reg aux;  // latency: our outgoing pong source
  Hello peer{};
  tools::TscClock clock;  // re-made once the EAL knows the TSC rate
  void poll() { ep.engine->poll(clock.now()); }
};

// Byte i of the server's initial buffer (READ verification).
uint8_t pattern_byte(size_t i) { return static_cast<uint8_t>(i * 131 + 7); }

bool remote_setup(const Options& o, size_t max_size, Remote* r, tools::Oob* oob) {
  std::string err;
  const auto& eal = dpdk::eal_init({"--vdev=" + o.vdev});
  if (!eal.ok) {
    std::fprintf(stderr, "dpdat-perf: %s\n", eal.error.c_str());
    return false;
  }
  r->clock = tools::TscClock();
  uint32_t my_ip = 0;
  if (!parse_ip(o.ip, &my_ip)) {
    std::fprintf(stderr, "dpdat-perf: --ip needs this side's IPv4 address\n");
    return false;
  }
  const std::string devname = o.vdev.substr(0, o.vdev.find(','));
  uint16_t port_id = 0;
  if (!dpdk::Port::find(devname, &port_id)) {
    std::fprintf(stderr, "dpdat-perf: no DPDK port named %s\n", devname.c_str());
    return false;
  }
  dpdk::PortConfig pc;
  pc.name = "perf";
  pc.ip = my_ip;
  pc.rx_loss = o.loss;
  pc.loss_seed = my_ip;
  pc.mtu = o.mtu;
  r->ep.port = dpdk::Port::open(port_id, pc, &err);
  if (!r->ep.port) {
    std::fprintf(stderr, "dpdat-perf: %s\n", err.c_str());
    return false;
  }
  const dpdk::Port& port = *r->ep.port;
  if (!port.mtu_note().empty()) std::printf("dpdat-perf: %s\n", port.mtu_note().c_str());
  if (o.pmtu > port.max_pmtu())
    std::printf("dpdat-perf: PMTU %u asked, port MTU %u allows %u: using %u\n", o.pmtu, port.mtu(),
                port.max_pmtu(), port.max_pmtu());
  r->ep.mr = std::make_unique<rc::MrTable>(64, 16);
  rc::EngineConfig ec;
  ec.pmtu = 4096;
  r->ep.engine = std::make_unique<rc::Engine>(*r->ep.port, *r->ep.mr, ec);
  r->ep.name = o.server ? "perf-server" : "perf-client";
  dpdk::telemetry_add_engine(r->ep.name, r->ep.engine.get());  // /dpdat/engine,<name>
  r->ep.scq = std::make_unique<rc::CompletionQueue>(8192);
  r->ep.rcq = std::make_unique<rc::CompletionQueue>(8192);
  rc::QpConfig q;
  q.pmtu = std::min(o.pmtu, r->ep.port->max_pmtu());
  q.selective_repeat = !o.gbn;
  q.sq_depth = std::max<uint32_t>(o.tx_depth * 2, 256);
  if (o.window != 0) q.window = o.window;
  r->ep.qp = r->ep.engine->create_qp(r->ep.pz, q, r->ep.scq.get(), r->ep.rcq.get());
  if (r->ep.qp == nullptr || !reg(r->ep, 2 * max_size, &r->buf) || !reg(r->ep, max_size, &r->aux)) {
    std::fprintf(stderr, "dpdat-perf: resource set-up failed\n");
    return false;
  }
  for (size_t i = 0; i < r->buf.bytes.size(); ++i) r->buf.bytes[i] = pattern_byte(i);
  if (o.server ? !oob->serve(o.oob, 120'000, &err) : !oob->connect(o.oob, 30'000, &err)) {
    std::fprintf(stderr, "dpdat-perf: %s\n", err.c_str());
    return false;
  }
  const uint32_t psn = o.server ? 0x123456u : 0xABCDEFu;
  const Hello me{my_ip,       r->ep.qp->qpn(),     psn,    r->buf.lmr,
                 r->buf.va(), r->buf.bytes.size(), q.pmtu, 0};
  if (!oob->send(me) || !oob->recv(&r->peer)) {
    std::fprintf(stderr, "dpdat-perf: bootstrap exchange failed\n");
    return false;
  }
  if (r->peer.pmtu < q.pmtu && !r->ep.qp->set_pmtu(r->peer.pmtu)) {
    std::fprintf(stderr, "dpdat-perf: the peer's PMTU %u is not usable\n", r->peer.pmtu);
    return false;
  }
  // Resolve the peer's MAC by ARP (answering its ARP meanwhile).
  wire::MacAddr peer_mac{};
  const uint64_t deadline = tools::now_ns() + 5'000'000'000ull;
  uint64_t next_try = 0;
  bool found = false;
  while (!found && tools::now_ns() < deadline) {
    r->poll();
    if (tools::now_ns() >= next_try) {
      found = r->ep.port->resolve(r->peer.ip, &peer_mac);
      next_try = tools::now_ns() + 20'000'000;
    }
  }
  if (!found) {
    std::fprintf(stderr, "dpdat-perf: no ARP answer from the peer within 5 s\n");
    return false;
  }
  rc::PathInfo path;
  path.local_mac = r->ep.port->mac();
  path.peer_mac = peer_mac;
  path.local_ip = my_ip;
  path.peer_ip = r->peer.ip;
  path.peer_qpn = r->peer.qpn;
  path.udp_src_port = static_cast<uint16_t>(0xC000 | (r->ep.qp->qpn() & 0x3FFF));
  if (!r->ep.qp->connect(path, wire::Psn(psn), wire::Psn(r->peer.psn))) {
    std::fprintf(stderr, "dpdat-perf: connect failed\n");
    return false;
  }
  // Both sides ready before traffic (the peer keeps answering ARP meanwhile).
  const uint32_t ready = 0x52454459;
  uint32_t got = 0;
  if (!oob->send(ready)) return false;
  while (!oob->readable()) r->poll();
  return oob->recv(&got) && got == ready;
}

int run_server(const Options& o, size_t max_size) {
  Remote r;
  tools::Oob oob;
  if (!remote_setup(o, max_size, &r, &oob)) return 1;
  std::printf("dpdat-perf server: QP 0x%x on %s, waiting for the client's tests\n", r.ep.qp->qpn(),
              o.vdev.c_str());
  Cmd c{};
  for (;;) {
    // Passive side of bandwidth tests; for SEND keep the receive queue full
    // (every message lands at the start of our buffer, the client reads it
    // back to verify).
    const bool recv_mode = c.kind == kCmdBw && c.pad == kOpSend;
    uint64_t recv_errors = 0;
    // The next command is looked for every 1024 polls: a recv() per poll
    // would cost a system call per burst on the data path.
    uint32_t spins = 0;
    while ((++spins & 1023u) != 0 || !oob.readable()) {
      if (recv_mode) {
        rc::RecvWr rw;
        rw.num_sge = 1;
        // Full-size receives: ones left over from a smaller round still fit.
        rw.sge[0] = rc::Sge{r.buf.lmr, r.buf.va(), r.buf.bytes.size() / 2};
        while (r.ep.qp->recv_queue_used() < r.ep.qp->config().rq_depth &&
               r.ep.qp->post_recv(rw) == rc::Qp::PostResult::kOk) {
        }
        rc::Completion rc_;
        while (r.ep.rcq->pop(&rc_))
          if (rc_.status != rc::WcStatus::kSuccess || rc_.byte_len != c.size) ++recv_errors;
      }
      r.poll();
    }
    if (recv_mode) {  // completions of this round that arrived with the next command
      rc::Completion rc_;
      while (r.ep.rcq->pop(&rc_))
        if (rc_.status != rc::WcStatus::kSuccess || rc_.byte_len != c.size) ++recv_errors;
    }
    if (recv_errors != 0) {
      std::fprintf(stderr, "dpdat-perf server: %" PRIu64 " receive completions in error\n",
                   recv_errors);
      return 1;
    }
    if (!oob.recv(&c) || c.kind == kCmdDone) break;
    if (c.kind == kCmdLat) {
      // Echo: every time the client's tag lands in our buffer, write it back.
      const size_t n = std::max<size_t>(c.size, 1), last = n - 1;
      std::memset(r.buf.bytes.data(), 0, n);
      for (uint64_t i = 0; i < c.iters; ++i) {
        const uint8_t tag = static_cast<uint8_t>(i % 250 + 1);
        const uint64_t end = tools::now_ns() + 2'000'000'000ull;
        uint32_t polls = 0;
        while (r.buf.bytes[last] != tag) {
          r.poll();
          if ((++polls & 255u) == 0 && tools::now_ns() > end) {
            std::fprintf(stderr, "dpdat-perf server: ping %" PRIu64 " never arrived\n", i);
            return 1;
          }
        }
        r.aux.bytes[last] = tag;
        rc::SendWr w;
        w.op = rc::WrOp::kWrite;
        w.flags = 0;
        w.num_sge = 1;
        w.sge[0] = rc::Sge{r.aux.lmr, r.aux.va(), n};
        w.remote_va = r.peer.buf_va + r.peer.buf_len / 2;  // the client's pong area
        w.rkey = r.peer.rkey;
        while (r.ep.qp->post_send(w) == rc::Qp::PostResult::kQueueFull) r.poll();
        rc::Completion cc;
        while (r.ep.scq->pop(&cc)) {
        }
      }
    }
    const uint32_t ack = 1;
    if (!oob.send(ack)) break;
  }
  // Let the last ACKs leave before the port goes.
  const uint64_t end = tools::now_ns() + 200'000'000;
  while (tools::now_ns() < end && !r.ep.engine->idle()) r.poll();
  if (r.ep.qp->state() != rc::QpState::kRts) {
    std::fprintf(stderr, "dpdat-perf server: QP error: %.*s\n",
                 static_cast<int>(rc::qp_error_name(r.ep.qp->error()).size()),
                 rc::qp_error_name(r.ep.qp->error()).data());
    return 1;
  }
  std::printf("dpdat-perf server: done\n");
  return 0;
}

// RDMA READ of the peer's [0, n) back into `into`, for --verify.
bool read_back(Remote& r, Reg& into, size_t n) {
  rc::SendWr w;
  w.op = rc::WrOp::kRead;
  w.num_sge = 1;
  w.sge[0] = rc::Sge{into.lmr, into.va(), n};
  w.remote_va = r.peer.buf_va;
  w.rkey = r.peer.rkey;
  if (r.ep.qp->post_send(w) != rc::Qp::PostResult::kOk) return false;
  const uint64_t end = tools::now_ns() + 10'000'000'000ull;
  rc::Completion c;
  while (!r.ep.scq->pop(&c)) {
    r.poll();
    if (tools::now_ns() > end) return false;
  }
  return c.status == rc::WcStatus::kSuccess;
}

int run_client(const Options& o, size_t max_size) {
  Remote r;
  tools::Oob oob;
  if (!remote_setup(o, max_size, &r, &oob)) return 1;
  std::printf("dpdat-perf: RDMA %s to %s over %s, PMTU %u, inline progress\n", o.op.c_str(),
              o.client_of.c_str(), o.vdev.c_str(), r.ep.qp->config().pmtu);
  Reg src, back;
  if (!reg(r.ep, max_size, &src) || !reg(r.ep, max_size, &back)) return 1;
  for (size_t i = 0; i < src.bytes.size(); ++i) src.bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  uint32_t ack = 0;
  int rc_ = 0;
  if (o.bw) {
    std::printf("\n %-10s %-12s %-16s %-16s %-14s %-12s\n", "#bytes", "#iterations",
                "BW peak[Gb/s]", "BW average[Gb/s]", "BW avg[MB/s]", "MsgRate[Mpps]");
    for (size_t n : o.sizes) {
      const Cmd c{kCmdBw, o.op == "send" ? kOpSend : o.op == "read" ? kOpRead : kOpWrite, n, 0};
      if (!oob.send(c)) return 1;
      const uint64_t it =
          o.iters != 0 ? o.iters
                       : std::clamp<uint64_t>((256ull << 20) / std::max<size_t>(n, 64), 200, 50000);
      const BwTarget t{r.peer.buf_va, r.peer.rkey};
      if (!run_bw_to(r.ep, nullptr, src, t, 0, n, it, o, [&] { r.poll(); })) rc_ = 1;
      if (rc_ == 0 && o.verify) {
        bool ok = read_back(r, back, n);
        if (ok && (o.op == "write" || o.op == "send"))
          ok = std::equal(src.bytes.begin(), src.bytes.begin() + static_cast<long>(n),
                          back.bytes.begin());
        if (ok && o.op == "read") {
          for (size_t i = 0; i < n && ok; ++i) ok = back.bytes[i] == pattern_byte(i);
        }
        std::printf("   verify %zu B: %s\n", n, ok ? "byte-exact" : "MISMATCH");
        if (!ok) rc_ = 1;
      }
      if (!oob.recv(&ack) || rc_ != 0) break;
    }
  }
  if (o.lat && rc_ == 0) {
    const size_t n = o.sizes.size() == 1 ? o.sizes[0] : 8;
    const uint64_t iters = o.iters != 0 ? o.iters : 10000;
    const Cmd c{kCmdLat, 0, n, iters + 100};
    if (!oob.send(c)) return 1;
    const size_t m = std::max<size_t>(n, 1), last = m - 1;
    uint8_t* pong = r.buf.bytes.data() + r.buf.bytes.size() / 2;
    std::memset(pong, 0, m);
    std::vector<double> samples;
    for (uint64_t i = 0; i < iters + 100 && rc_ == 0; ++i) {
      const uint8_t tag = static_cast<uint8_t>(i % 250 + 1);
      src.bytes[last] = tag;
      const uint64_t t0 = tools::now_ns();
      rc::SendWr w;
      w.op = rc::WrOp::kWrite;
      w.flags = 0;
      w.num_sge = 1;
      w.sge[0] = rc::Sge{src.lmr, src.va(), m};
      w.remote_va = r.peer.buf_va;
      w.rkey = r.peer.rkey;
      while (r.ep.qp->post_send(w) == rc::Qp::PostResult::kQueueFull) r.poll();
      const uint64_t end = t0 + 2'000'000'000ull;
      uint32_t spins = 0;
      while (pong[last] != tag) {
        r.poll();
        if ((++spins & 255u) == 0 && tools::now_ns() > end) {
          std::fprintf(stderr, "dpdat-perf: pong %" PRIu64 " never arrived\n", i);
          rc_ = 1;
          break;
        }
      }
      if (i >= 100) samples.push_back(static_cast<double>(tools::now_ns() - t0) / 2e3);
      rc::Completion cc;
      while (r.ep.scq->pop(&cc)) {
      }
    }
    if (rc_ == 0 && oob.recv(&ack)) {
      std::printf("\n %-10s %-12s %-10s %-10s %-10s %-10s %-10s\n", "#bytes", "#iterations",
                  "t_min[us]", "t_median", "t_avg", "t_p99", "t_max");
      print_lat(n, iters, samples);
    }
  }
  const Cmd done{kCmdDone, 0, 0, 0};
  oob.send(done);
  const uint64_t end = tools::now_ns() + 200'000'000;
  while (tools::now_ns() < end && !r.ep.engine->idle()) r.poll();
  if (r.ep.qp->state() != rc::QpState::kRts) rc_ = 1;
  const auto& qc = r.ep.qp->counters();
  std::printf("\n counters: tx %" PRIu64 " rx %" PRIu64 " retransmits %" PRIu64 " timeouts %" PRIu64
              " seq-NAKs %" PRIu64 " injected drops %" PRIu64 "\n",
              qc.tx_packets, qc.rx_packets, qc.retransmits + qc.sr_resends, qc.timeouts,
              qc.seq_naks_rx, r.ep.port->counters().rx_injected_drops);
  return rc_;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows in logs as it happens
  Options o;
  bool all = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--op" && i + 1 < argc) {
      o.op = next();
    } else if (a == "--size" && i + 1 < argc) {
      o.sizes = {std::stoul(next())};
    } else if (a == "--all") {
      all = true;
    } else if (a == "--iters" && i + 1 < argc) {
      o.iters = std::stoull(next());
    } else if (a == "--lat") {
      o.lat = true;
    } else if (a == "--bw") {
      o.bw = true;
    } else if (a == "--pmtu" && i + 1 < argc) {
      o.pmtu = static_cast<uint32_t>(std::stoul(next()));
    } else if (a == "--mtu" && i + 1 < argc) {
      o.mtu = static_cast<uint16_t>(std::stoul(next()));
    } else if (a == "--tx-depth" && i + 1 < argc) {
      o.tx_depth = static_cast<uint32_t>(std::stoul(next()));
    } else if (a == "--window" && i + 1 < argc) {
      o.window = static_cast<uint32_t>(std::stoul(next()));
    } else if (a == "--gbn") {
      o.gbn = true;
    } else if (a == "--server") {
      o.server = true;
    } else if (a == "--client" && i + 1 < argc) {
      o.client_of = next();
    } else if (a == "--vdev" && i + 1 < argc) {
      o.vdev = next();
    } else if (a == "--ip" && i + 1 < argc) {
      o.ip = next();
    } else if (a == "--oob" && i + 1 < argc) {
      o.oob = next();
    } else if (a == "--verify") {
      o.verify = true;
    } else if (a == "--progress" && i + 1 < argc) {
      const std::string m = next();
      if (m != "inline" && m != "thread") {
        usage(argv[0]);
        return 2;
      }
      o.thread_progress = m == "thread";
    } else if (a == "--loss" && i + 1 < argc) {
      o.loss = std::stod(next());
    } else {
      usage(argv[0]);
      return 2;
    }
  }
  if (o.op != "write" && o.op != "read" && o.op != "send") {
    usage(argv[0]);
    return 2;
  }
  if (!o.lat && !o.bw) o.lat = o.bw = true;
  if (o.sizes.empty()) {
    if (all) {
      for (size_t s = 2; s <= (8u << 20); s *= 2) o.sizes.push_back(s);
    } else {
      o.sizes = {2, 64, 1024, 4096, 65536, 1u << 20};
    }
  }

  if (o.server || !o.client_of.empty()) {
    if (o.vdev.empty() || o.ip.empty()) {
      std::fprintf(stderr, "dpdat-perf: --server/--client need --vdev and --ip\n");
      return 2;
    }
    size_t max_size = 4096;
    for (size_t n : o.sizes) max_size = std::max(max_size, n);
    if (o.server) return run_server(o, std::max<size_t>(max_size, 8u << 20));
    return run_client(o, std::max<size_t>(max_size, 8u << 20));
  }
  const auto& eal = dpdk::eal_init();
  if (!eal.ok) {
    std::fprintf(stderr, "dpdat-perf: %s\n", eal.error.c_str());
    return 1;
  }
  tools::Loopback lo;
  rc::QpConfig q;
  q.pmtu = o.pmtu;
  q.selective_repeat = !o.gbn;
  q.sq_depth = std::max<uint32_t>(o.tx_depth * 2, 256);
  q.rq_depth = 512;
  if (o.window != 0) q.window = o.window;
  std::string err;
  if (!lo.open(q, &err)) {
    std::fprintf(stderr, "dpdat-perf: %s\n", err.c_str());
    return 1;
  }
  std::unique_ptr<rc::EngineRunner> ra, rb;
  if (o.thread_progress) {
    // One engine thread per endpoint; this thread only posts and reaps.
    rc::RunnerConfig rcfg;
    rcfg.policy = rc::IdlePolicy::kBackoff;
    ra = std::make_unique<rc::EngineRunner>(*lo.a().engine, rcfg, &tools::now_ns);
    rb = std::make_unique<rc::EngineRunner>(*lo.b().engine, rcfg, &tools::now_ns);
    ra->start();
    rb->start();
  }
  std::printf("dpdat-perf: RDMA %s, in-process net_ring link, %s progress, PMTU %u, %s\n",
              o.op.c_str(), o.thread_progress ? "engine-thread" : "inline",
              lo.a().qp->config().pmtu, eal.hugepages ? "hugepages" : "no hugepages (--no-huge)");
  if (o.bw) {
    std::printf("\n %-10s %-12s %-16s %-16s %-14s %-12s\n", "#bytes", "#iterations",
                "BW peak[Gb/s]", "BW average[Gb/s]", "BW avg[MB/s]", "MsgRate[Mpps]");
    for (size_t n : o.sizes) {
      const uint64_t it =
          o.iters != 0
              ? o.iters
              : std::clamp<uint64_t>((512ull << 20) / std::max<size_t>(n, 64), 1000, 100000);
      if (!run_bw(lo, o, n, it, ra.get(), rb.get())) return 1;
    }
  }
  if (o.lat) {
    if (o.op != "write") {
      std::printf("\n(latency is measured with RDMA WRITE ping-pong only)\n");
    }
    std::printf("\n %-10s %-12s %-10s %-10s %-10s %-10s %-10s\n", "#bytes", "#iterations",
                "t_min[us]", "t_median", "t_avg", "t_p99", "t_max");
    const std::vector<size_t> lat_sizes = o.sizes.size() == 1 ? o.sizes : std::vector<size_t>{8};
    for (size_t n : lat_sizes)
      if (!run_lat(lo, o, n, o.iters != 0 ? o.iters : 10000, ra.get(), rb.get())) return 1;
  }
  return 0;
}
