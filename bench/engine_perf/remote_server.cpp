// dpdat-engine-perf across processes, the passive side: the engines answer
// WRITEs and READs on their own; this thread keeps receive queues full for
// SEND rounds and echoes the latency pings.

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "remote.hpp"

namespace dpdat::engine_perf {

namespace {

// The server's half of the latency test on QP 0: each time the client's
// tag lands in our buffer, WRITE it back into the client's pong area.
bool echo(Multi& m, size_t n, uint64_t iters) {
  const size_t last = n - 1;
  for (uint64_t i = 0; i < iters; ++i) {
    const uint8_t tag = static_cast<uint8_t>(i % 250 + 1);
    const uint64_t end = now_ns() + 2'000'000'000ull;
    uint32_t polls = 0;
    while (peek(m.buf.bytes[last]) != tag) {
      m.poll_or_yield();
      if ((++polls & 255u) == 0 && now_ns() > end) {
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

}  // namespace

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

}  // namespace dpdat::engine_perf
