// Across processes: each side opens one IA named "perf", configured through
// DPDAT_IA_PERF (vdev, ip, mtu, pmtu, progress) before dat_ia_open.  The
// server listens on a PSP, the client connects --qps EPs; the RMR triplet of
// each side's region and the test commands travel over the --oob Unix socket
// (perftest's TCP side channel); every byte measured moves over dpdat.

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "churn.hpp"
#include "launch.hpp"
#include "modes.hpp"
#include "oob.hpp"
#include "remote.hpp"
#include "runs.hpp"
#include "soak.hpp"
#include "sysinfo.hpp"

namespace dpdat::perf {

uint32_t op_code(const std::string& op) {
  return op == "read"           ? kOpRead
         : op == "send"         ? kOpSend
         : op == "atomic-fadd"  ? kOpFadd
         : op == "atomic-cswap" ? kOpCswap
                                : kOpWrite;
}
bool run_round(tools::Oob& oob, const Cmd& c, const std::function<bool()>& body, Reply* rep,
               std::string* err) {
  uint32_t ready = 0;
  if (!oob.send(c) || !oob.recv(&ready) || ready != kMagic) {
    *err = "the server did not answer";
    return false;
  }
  const bool ok = body();
  const Cmd stop{kCmdStop, 0, 0, 0, 0, 0, 0};
  if (!oob.send(stop) || !oob.recv(rep)) {
    // The run's own failure says more than the server's silence after it.
    if (ok) *err = "the server did not answer";
    return false;
  }
  return ok;
}

namespace {

std::string op_name(uint32_t c) {
  return c == kOpRead    ? "read"
         : c == kOpSend  ? "send"
         : c == kOpFadd  ? "atomic-fadd"
         : c == kOpCswap ? "atomic-cswap"
                         : "write";
}

int fail(const std::string& what) {
  std::fprintf(stderr, "dpdat-perf: %s\n", what.c_str());
  return 1;
}
bool failed(const std::string& what) { return fail(what) == 0; }

// Waits for the next command.  The passive side of a one-sided test calls
// nothing meanwhile (its interface's progress policy serves the peer, as a
// passive RDMA target's would), unless `drive`: with progress=inline nothing
// but a consumer call progresses it, so it dequeues.  For SEND rounds the
// receive queues are kept full (the consumer's work).  A soak's churned
// connections are accepted and freed meanwhile (`churn`), between naps of
// 50 µs when nothing else calls for spinning.
bool wait_cmd(Side& s, tools::Oob& oob, const Layout& L, bool recvs, bool drive, ServerChurn* churn,
              Cmd* c, std::string* err) {
  uint32_t spins = 0;
  while (recvs || drive || churn != nullptr) {
    if (recvs)
      for (size_t k = 0; k < s.qps(); ++k)
        while (s.recv(k, L.landing(k), L.slice, 0) == DAT_SUCCESS) {
        }
    if ((recvs || drive) && !drive_side(s, err)) return false;
    if (churn != nullptr && !churn->step(err)) return false;
    if (recvs || drive) {
      if ((++spins & 1023u) == 0 && oob.readable()) break;
    } else {
      if (oob.readable()) break;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  if (!oob.recv(c)) {
    *err = "the client went away";
    return false;
  }
  return true;
}

// A text over the socket: its length, then 1 KiB chunks.
using Chunk = std::array<char, 1024>;
bool send_text(tools::Oob& oob, const std::string& t) {
  const auto len = static_cast<uint32_t>(t.size());
  if (!oob.send(len)) return false;
  for (size_t off = 0; off < t.size(); off += sizeof(Chunk)) {
    Chunk c{};
    std::memcpy(c.data(), t.data() + off, std::min(sizeof(Chunk), t.size() - off));
    if (!oob.send(c)) return false;
  }
  return true;
}
bool recv_text(tools::Oob& oob, std::string* t) {
  uint32_t len = 0;
  if (!oob.recv(&len) || len > (16u << 20)) return false;
  t->clear();
  while (t->size() < len) {
    Chunk c{};
    if (!oob.recv(&c)) return false;
    t->append(c.data(), std::min<size_t>(sizeof(Chunk), len - t->size()));
  }
  return true;
}

int serve(Side& s, tools::Oob& oob, const Layout& L, const DAT_RMR_TRIPLET& peer,
          const Options& o) {
  std::string err;
  Cmd c{};
  bool recvs = false;
  const bool inline_progress = o.progress == "inline";
  std::unique_ptr<ServerChurn> churn;
  if (o.churn != 0) churn = std::make_unique<ServerChurn>(s);
  for (;;) {
    if (!wait_cmd(s, oob, L, recvs, inline_progress, churn.get(), &c, &err)) return fail(err);
    if (c.kind == kCmdDone) break;
    if (c.kind == kCmdStop) continue;  // stray
    Options ro = o;
    ro.op = op_name(c.op);
    ro.iters = c.iters;
    ro.duration = c.duration;
    const CpuMark cpu0 = CpuMark::now();
    Reply rep{};
    rep.ok = 1;
    recvs = c.kind == kCmdBw && ro.op == "send";
    const uint32_t ready = kMagic;
    if (c.kind == kCmdLat) {
      if (!lat_prepare(s, ro.op, L, &err) || !oob.send(ready)) return fail(err);
      if (ro.half_round_trip())
        for (uint64_t i = 0; i < c.iters + kLatWarmup; ++i)
          if (!echo_once(s, ro.op, L, i % L.qps, c.size, lat_tag(i), peer, dequeue_while_polling(o),
                         &err))
            return fail(err + " (iteration " + std::to_string(i) + ")");
    } else {
      fill_pattern(s, L, c.size, c.salt != 0 ? static_cast<uint8_t>(c.salt) : 0x22);
      if (!oob.send(ready)) return fail("oob send");
      if (c.bidirectional != 0) {
        std::vector<Flow> flows;
        for (size_t k = 0; k < L.qps; ++k) flows.push_back(Flow{&s, k, peer});
        BwFigures f;
        if (!run_bw(flows, ro, L, c.size, c.iters, {}, &f, &err)) return fail(err);
        rep.msgs = f.iters;
        rep.secs = f.secs;
        rep.avg_mbs = f.avg_mbs;
        rep.peak_mbs = f.peak_mbs;
        for (size_t k = 0; k < f.per_qp_msgs.size() && k < kMaxQps; ++k)
          rep.per_qp[k] = f.per_qp_msgs[k];
      }
    }
    if (!wait_cmd(s, oob, L, recvs, inline_progress, churn.get(), &c, &err)) return fail(err);
    rep.cpu_pct = CpuMark::now().pct_since(cpu0);
    rep.rss_kib = rss_kib();
    rep.churn_accepted = churn ? churn->accepted() : 0;
    if (!oob.send(rep)) return fail("oob send");
    if (c.kind == kCmdDone) break;
  }
  const uint32_t bye = kMagic;
  oob.send(bye);
  // Our counters, for the client's report (its peer.* entries).
  send_text(oob, nlohmann::json(telemetry_counters()).dump());
  std::printf("dpdat-perf server: done\n");
  return 0;
}

// The bandwidth and latency rounds of a client, reported as they end.
bool measure(Side& s, tools::Oob& oob, const Layout& L, const DAT_RMR_TRIPLET& peer,
             const Options& o, Run* run) {
  std::string err;
  if (o.bw) {
    print_bw_header(o);
    for (size_t n : o.sizes) {
      std::vector<Flow> flows;
      for (size_t k = 0; k < o.qps; ++k) flows.push_back(Flow{&s, k, peer});
      fill_pattern(s, L, n, 0x11);
      BwFigures f;
      Reply rep{};
      const uint64_t iters = o.duration > 0 ? 0 : bw_iters(o, n);
      const Cmd c{kCmdBw, op_code(o.op), n, iters, o.duration, o.bidirectional ? 1u : 0u, 0};
      if (!run_round(
              oob, c, [&] { return run_bw(flows, o, L, n, iters, {}, &f, &err); }, &rep, &err))
        return failed(err);
      f.cpu_peer = rep.cpu_pct;
      if (o.bidirectional) {
        f.iters += rep.msgs;
        f.avg_mbs += rep.avg_mbs;
        f.peak_mbs += rep.peak_mbs;
        f.msg_rate_mpps = static_cast<double>(f.iters) / std::max(f.secs, rep.secs) / 1e6;
        for (size_t k = 0; k < o.qps; ++k) f.per_qp_msgs.push_back(rep.per_qp[k]);
      }
      if (o.verify && o.op != "read" && !o.atomic()) {
        if (!verify_slices(s, L, n, peer, {}, &err)) return failed(err);
        f.verified = true;
      }
      print_bw(o, f);
      run->bw.push_back(f);
    }
  }
  if (o.lat) {
    print_lat_header(o, o.half_round_trip());
    const std::vector<uint64_t> sizes =
        o.sizes.size() == 1 || !o.bw ? o.sizes : std::vector<uint64_t>{8};
    for (size_t n : sizes) {
      LatFigures f;
      Reply rep{};
      const uint64_t iters = o.iters != 0 ? o.iters : 10000;
      if (!lat_prepare(s, o.op, L, &err)) return failed(err);
      const Cmd c{kCmdLat, op_code(o.op), n, iters, o.duration, 0, 0};
      if (!run_round(
              oob, c, [&] { return run_lat(s, o, L, n, iters, peer, {}, {}, &f, &err); }, &rep,
              &err))
        return failed(err);
      f.cpu_peer = rep.cpu_pct;
      print_lat(f);
      if (!o.histogram.empty() && !write_histogram(o.histogram, f))
        return failed("cannot write " + o.histogram);
      run->lat.push_back(std::move(f));
    }
  }
  if (o.linger > 0) {
    std::printf("dpdat-perf: lingering %.1f s connected and idle\n", o.linger);
    std::this_thread::sleep_for(std::chrono::duration<double>(o.linger));
  }
  return true;
}

}  // namespace

int run_remote(const Options& o) {
  if (o.qps > kMaxQps) return fail("--qps: at most 64 across processes");
  if (o.bidirectional && o.op == "send")
    return fail("--bidirectional with --op send runs in one process only");
  setenv("DPDAT_IA_PERF", ia_config(o).c_str(), 1);
  std::string err;
  tools::Oob oob;
  // Each side waits as long for the other: on a loaded host the server may
  // take tens of seconds to reach its socket.
  if (o.server ? !oob.serve(o.oob, 120'000, &err) : !oob.connect(o.oob, 120'000, &err))
    return fail(err);
  Layout L = layout_for(o);
  const Hello me{
      kMagic, o.qps, L.slice, o.tx_depth, kDat2 ? 2u : 1u, o.churn, o.soak > 0 ? 1u : 0u};
  Hello peer_hello{};
  if (!oob.send(me) || !oob.recv(&peer_hello) || peer_hello.magic != kMagic)
    return fail("bootstrap exchange over " + o.oob + " failed");
  if (peer_hello.qps != o.qps)
    return fail("the peer runs " + std::to_string(peer_hello.qps) + " QPs, we " +
                std::to_string(o.qps) + ": give both the same --qps");
  if (peer_hello.churn != o.churn || (o.soak > 0) != (peer_hello.pad != 0))
    return fail("give both sides the same --soak and --churn");
  if (o.atomic() && peer_hello.dat_major != 2)
    return fail(std::string("atomics need both sides over DAT 2.0: start the ") +
                (o.server ? "client" : "server") + " with --op " + o.op + " too");
  L.slice = std::max<size_t>(L.slice, peer_hello.slice);
  // The server's IA first: a net_memif client needs the server's socket.
  Side s;
  const uint32_t listening = kMagic;
  uint32_t got = 0;
  if (o.server) {
    if (!s.open("perf", o.qps, o.tx_depth, L.total(), &err) || !s.listen(o.conn_qual, &err) ||
        !oob.send(listening))
      return fail(err);
    for (size_t k = 0; k < o.qps; ++k)
      if (!s.accept(k, 30'000'000, &err) || !s.established(k, 10'000'000, &err)) return fail(err);
  } else {
    if (!oob.recv(&got) || got != kMagic) return fail("the server did not start listening");
    if (!s.open("perf", o.qps, o.tx_depth, L.total(), &err)) return fail(err);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    if (inet_pton(AF_INET, o.client_of.c_str(), &a.sin_addr) != 1) return fail("--client");
    for (size_t k = 0; k < o.qps; ++k)
      if (!s.connect(k, a, o.conn_qual, &err) || !s.established(k, 10'000'000, &err))
        return fail(err);
  }
  const DAT_RMR_TRIPLET mine = s.triplet();
  const Triplet tm{mine.rmr_context, rmr_address(mine), mine.segment_length};
  Triplet tp{};
  if (!oob.send(tm) || !oob.recv(&tp)) return fail("triplet exchange failed");
  DAT_RMR_TRIPLET peer{};
  peer.rmr_context = static_cast<DAT_RMR_CONTEXT>(tp.rmr_context);
  rmr_address(peer) = tp.address;
  peer.segment_length = seg_length(tp.length);
  if (o.server) {
    std::printf("dpdat-perf server: %u EP%s connected over %s, serving\n", o.qps,
                o.qps > 1 ? "s" : "", o.vdev.c_str());
    return serve(s, oob, L, peer, o);
  }

  Run run;
  run.link = o.vdev;
  run.pmd = o.vdev.substr(0, o.vdev.find_first_of("0123456789,"));
  run.cpus = affinity();
  std::printf("dpdat-perf: %s to %s over the %s API, %s, %u EP%s, progress %s\n", o.op.c_str(),
              o.client_of.c_str(), kApiName, o.vdev.c_str(), o.qps, o.qps > 1 ? "s" : "",
              o.progress.empty() ? "default" : o.progress.c_str());
  // A failed soak still collects and prints both sides' counters (what
  // explains the failure), then exits 1.
  bool soak_ok = true;
  if (o.soak > 0) {
    soak_ok = soak_client(s, oob, L, peer, o, &run);
  } else if (!measure(s, oob, L, peer, o, &run)) {
    return 1;
  }
  const Cmd done{kCmdDone, 0, 0, 0, 0, 0, 0};
  uint32_t bye = 0;
  std::string peer_counters;
  if (oob.send(done) && oob.recv(&bye) && recv_text(oob, &peer_counters)) {
    const auto j = nlohmann::json::parse(peer_counters, nullptr, false);
    if (j.is_object())
      for (const auto& [k, v] : j.items())
        if (v.is_number_unsigned()) run.counters["peer." + k] = v.get<uint64_t>();
  }
  for (const auto& [k, v] : telemetry_counters()) run.counters[k] = v;
  const int rc = finish_run(o, run);
  return soak_ok ? rc : 1;
}

}  // namespace dpdat::perf
