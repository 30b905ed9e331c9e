// dpdat-scale-bench: scale figures of one process's dat_core over the
// simulated link (two interfaces, one thread drives both; no EAL, no DPDK):
//   1. connection set-up rate through dat_core's calls (create EP pair,
//      connect, accept, both ESTABLISHED), in batches;
//   2. heap bytes per endpoint (EP + queue pair + CM state): idle
//      connections, connections with work queued (16 receives posted on one
//      side, one SEND posted on the other, before the engine moves), and idle
//      again after that traffic (rings back in the engine's pool);
//   3. one busy connection (RDMA WRITE, --size bytes, --depth in flight)
//      alone, then next to --idle idle connections, in the same run.
// Memory is the malloc heap in use (mallinfo2), process RSS beside it.
// Usage: dpdat-scale-bench [--conns N] [--idle N] [--size B] [--depth D]
//                          [--seconds S] [--batch B] [--idle-evds N]

#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "ops.hpp"
#include "proto_many.hpp"
#include "sim_factory.hpp"

using namespace dpdat;         // NOLINT(google-build-using-namespace)
using namespace dpdat::dat;    // NOLINT(google-build-using-namespace)
using namespace dpdat::proto;  // NOLINT(google-build-using-namespace)

namespace {

constexpr uint32_t kIpA = 0x0A090001, kIpB = 0x0A090002;

size_t heap_bytes() { return mallinfo2().uordblks; }
double delta(size_t to, size_t from) { return static_cast<double>(to) - static_cast<double>(from); }
size_t rss_bytes() {
  long pages = 0, rss = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
  std::fclose(f);
  return static_cast<size_t>(rss) * 4096;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "dpdat-scale-bench: %s\n", why);
  std::exit(2);
}

uint32_t number(std::string_view opt, const char* v) {
  if (v == nullptr) usage(("missing value for " + std::string(opt)).c_str());
  char* end = nullptr;
  const unsigned long n = std::strtoul(v, &end, 10);
  if (*v == '\0' || *end != '\0' || n == 0 || n > (1ul << 30))
    usage(("bad value for " + std::string(opt) + ": " + v).c_str());
  return static_cast<uint32_t>(n);
}

IfaceConfig config(const char* name, const char* text) {
  IfaceConfig c;
  c.name = name;
  std::string err;
  if (!parse_iface_config(text, &c, &err)) usage(err.c_str());
  return c;
}

struct Reg {
  std::vector<uint8_t> buf;
  Lmr* lmr = nullptr;
};
Reg reg(Ia* ia, Pz* pz, size_t len) {
  Reg r;
  r.buf.assign(len, 1);
  LmrSpec s;
  s.host = r.buf.data();
  s.va = reinterpret_cast<uintptr_t>(r.buf.data());
  s.length = len;
  if (!lmr_create(ia, pz, s, rc::priv::kAll, &r.lmr).ok()) usage("lmr_create failed");
  return r;
}

// RDMA WRITEs of `size` bytes over one connection, `depth` in flight, for
// `seconds`: messages per second.
double busy_rate(Ep* ep, Evd* req, const Reg& src, const Reg& dst, uint32_t size, uint32_t depth,
                 double seconds) {
  const rc::Sge sge{src.lmr->lmr_context, src.lmr->va, size};
  const RemoteSeg remote{dst.lmr->rmr_context, dst.lmr->va, size};
  PostArgs pa;
  pa.op = rc::WrOp::kWrite;
  pa.sge = &sge;
  pa.nsge = 1;
  pa.remote = &remote;
  uint64_t posted = 0, done = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double t = 0;
  while ((t = seconds_since(t0)) < seconds || done < posted) {
    while (t < seconds && posted - done < depth) {
      pa.cookie = posted;
      const Status st = ep_post(ep, pa);
      if (st.type == Type::INSUFFICIENT_RESOURCES) break;  // queue full: take completions
      if (!st.ok()) usage("ep_post failed");
      ++posted;
    }
    Event ev;
    if (!evd_wait(req, 5'000'000, 1, &ev, nullptr).ok()) usage("no completion within 5 s");
    if (ev.status != DtoStatus::kSuccess) usage("a WRITE failed");
    ++done;
  }
  return static_cast<double>(done) / seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t conns = 10'000, idle = 50'000, size = 4096, depth = 32, batch = 512, idle_evds = 0;
  double seconds = 2.0;
  for (int i = 1; i < argc; ++i) {
    const std::string_view o = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (o == "--conns") {
      conns = number(o, v);
    } else if (o == "--idle") {
      idle = number(o, v);
    } else if (o == "--size") {
      size = number(o, v);
    } else if (o == "--depth") {
      depth = number(o, v);
    } else if (o == "--batch") {
      batch = number(o, v);
    } else if (o == "--idle-evds") {
      idle_evds = number(o, v);
    } else if (o == "--seconds") {
      seconds = number(o, v);
    } else if (o == "--help") {
      std::printf(
          "usage: dpdat-scale-bench [--conns N (10000)] [--idle N (50000)] [--size B (4096)]\n"
          "                         [--depth D (32)] [--seconds S (2)] [--batch B (512)]\n"
          "                         [--idle-evds N (0): DTO EVDs per side next to the idle\n"
          "                          connections, as programs with an EVD per endpoint have]\n");
      return 0;
    } else {
      usage(("unknown option " + std::string(o)).c_str());
    }
    ++i;
  }
  if (conns + idle + 1 > 65536) usage("--conns + --idle must stay below 65536");
  install_sim_link(0x5CA1E);
  Ia* ia_a = nullptr;
  Ia* ia_b = nullptr;
  if (!ia_open(config("scale_a", "ring=0;ip=10.9.0.1;progress=inline"), 64, nullptr, nullptr, &ia_a)
           .ok() ||
      !ia_open(config("scale_b", "ring=1;ip=10.9.0.2;progress=inline"), 64, nullptr, nullptr, &ia_b)
           .ok())
    usage("ia_open failed");
  ManySide a, b;
  if (!a.make(ia_a, 1024) || !b.make(ia_b, 1024)) usage("EVD / PZ creation failed");
  std::printf("dpdat-scale-bench: dat_core over the simulated link, one process, one thread\n");
  std::printf("sizeof: rc::Qp %zu B, dat::Ep %zu B\n", sizeof(rc::Qp), sizeof(Ep));

  // 3a. One busy connection alone.
  ManySide ba, bb;  // the busy connection's own EVDs
  if (!ba.make(ia_a, 256) || !bb.make(ia_b, 256)) usage("EVD creation failed");
  ba.pz = a.pz;
  bb.pz = b.pz;
  std::string err = connect_many(ba, bb, kIpB, 7001, 1, 1);
  if (!err.empty()) usage(err.c_str());
  const Reg src = reg(ia_a, a.pz, size), dst = reg(ia_b, b.pz, size);
  (void)busy_rate(ba.eps[0], ba.req, src, dst, size, depth, 0.5);  // warm-up
  const double alone = busy_rate(ba.eps[0], ba.req, src, dst, size, depth, seconds);

  // 1 + 2. Set-up rate and bytes per idle endpoint.
  const size_t heap0 = heap_bytes(), rss0 = rss_bytes();
  auto t0 = std::chrono::steady_clock::now();
  err = connect_many(a, b, kIpB, 7000, conns, batch);
  if (!err.empty()) usage(err.c_str());
  const double setup_s = seconds_since(t0);
  const size_t heap1 = heap_bytes(), rss1 = rss_bytes();
  const double eps = 2.0 * conns;  // both ends are in this process
  std::printf("connections: %u set up in %.3f s = %.0f connections/s (batches of %u)\n", conns,
              setup_s, conns / setup_s, batch);
  std::printf("idle connected endpoint: %.0f B heap (%.0f B RSS) per endpoint (EP + QP + CM)\n",
              delta(heap1, heap0) / eps, delta(rss1, rss0) / eps);

  // Work queued: 16 receives on every b endpoint, one SEND on every a
  // endpoint, measured before the engines move.
  const Reg rbuf = reg(ia_b, b.pz, 64), sbuf = reg(ia_a, a.pz, 64);
  const rc::Sge rs{rbuf.lmr->lmr_context, rbuf.lmr->va, 64};
  const rc::Sge ss{sbuf.lmr->lmr_context, sbuf.lmr->va, 64};
  for (Ep* ep : b.eps)
    for (int k = 0; k < 16; ++k)
      if (!ep_post_recv(ep, &rs, 1, 0, 0).ok()) usage("ep_post_recv failed");
  const size_t heap_rq = heap_bytes();
  std::printf(
      "endpoint with 16 receives posted: %.0f B heap per endpoint (+%.0f B for the rings)\n",
      delta(heap1, heap0) / eps + delta(heap_rq, heap1) / conns, delta(heap_rq, heap1) / conns);
  // One SEND on every a endpoint, `batch` endpoints at a time (thousands of
  // first transmissions at once overflow the simulated wire's queue and the
  // retransmissions of all of them keep it full); the ring bytes are taken
  // over the first batch, before the engines move.
  PostArgs pa;
  pa.op = rc::WrOp::kSend;
  pa.sge = &ss;
  pa.nsge = 1;
  double ring_bytes = 0;
  for (size_t first = 0; first < a.eps.size(); first += batch) {
    const size_t last = std::min(a.eps.size(), first + batch);
    const size_t before = heap_bytes();
    for (size_t i = first; i < last; ++i)
      if (!ep_post(a.eps[i], pa).ok()) usage("ep_post failed");
    if (first == 0) ring_bytes = delta(heap_bytes(), before) / static_cast<double>(last);
    for (size_t i = first; i < last; ++i)
      for (Evd* e : {a.req, b.recv}) {
        Event ev;
        if (!evd_wait(e, 5'000'000, 1, &ev, nullptr).ok() || ev.status != DtoStatus::kSuccess)
          usage("a SEND did not complete");
      }
  }
  std::printf("endpoint with 1 SEND posted:      %.0f B heap per endpoint (+%.0f B for the ring)\n",
              delta(heap1, heap0) / eps + ring_bytes, ring_bytes);
  const size_t heap3 = heap_bytes();
  const rc::BlockPool& pool = ia_a->iface->engine->pool();
  std::printf(
      "after the traffic: %.0f B heap per endpoint (sender rings back in the pool: %zu B in use, "
      "%zu B pooled on a)\n",
      delta(heap3, heap0) / eps, pool.bytes_in_use(), pool.bytes_pooled());

  // 3b. The busy connection next to `idle` idle ones (more connections).
  t0 = std::chrono::steady_clock::now();
  if (idle > conns) {
    err = connect_many(a, b, kIpB, 7000, idle - conns, batch);
    if (!err.empty()) usage(err.c_str());
  }
  for (Ia* ia : {ia_a, ia_b})
    for (uint32_t k = 0; k < idle_evds; ++k) {
      Evd* e = nullptr;
      if (!evd_create(ia, 8, nullptr, evd_flag::kDto, &e).ok()) usage("evd_create failed");
    }
  if (idle_evds > 0) std::printf("%u idle DTO EVDs on each side\n", idle_evds);
  const uint32_t total_idle = std::max(idle, conns);
  std::printf("%u idle connections in place (%.3f s more set-up)\n", total_idle, seconds_since(t0));
  const double crowded = busy_rate(ba.eps[0], ba.req, src, dst, size, depth, seconds);
  std::printf(
      "busy connection, RDMA WRITE %u B x %u in flight: alone %.0f msg/s (%.1f MB/s), "
      "next to %u idle connections %.0f msg/s (%.1f MB/s) = %.1f %%\n",
      size, depth, alone, alone * size / 1e6, total_idle, crowded, crowded * size / 1e6,
      100.0 * crowded / alone);
  // The busy connection alone again, once the idle ones are freed (the
  // figures above were taken in that order: this one brackets them).
  for (ManySide* m : {&a, &b})
    for (Ep* ep : m->eps)
      if (!ep_free(ep).ok()) usage("ep_free failed");
  (void)busy_rate(ba.eps[0], ba.req, src, dst, size, depth, 1.0);  // the DREQs settle meanwhile
  const double again = busy_rate(ba.eps[0], ba.req, src, dst, size, depth, seconds);
  std::printf(
      "busy connection alone again after freeing the idle ones: %.0f msg/s (%.1f MB/s); "
      "next to %u idle = %.1f %% of the mean of the two alone figures\n",
      again, again * size / 1e6, total_idle, 200.0 * crowded / (alone + again));
  (void)ia_close(ia_a, false);
  (void)ia_close(ia_b, false);
  return 0;
}
