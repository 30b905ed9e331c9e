#include <cstring>

#include "runs.hpp"
#include "sysinfo.hpp"

namespace dpdat::perf {

namespace {

// Waits for one receive completion on QP k's receive EVD and posts the
// receive again.
bool await_recv(Side& s, const Layout& L, size_t k, const std::function<void()>& drive,
                std::string* err) {
  std::vector<Done> d;
  bool failed = false;
  if (!spin_until(
          [&] {
            if (s.reap(s.conn(k).rcv, &d, err) < 0) failed = true;
            if (!failed && drive) drive();
            return failed || !d.empty();
          },
          [] {}) ||
      failed) {
    if (!failed) *err = "latency: a SEND never arrived";
    return false;
  }
  const DAT_RETURN r = s.recv(k, L.landing(k), L.slice, 0);
  if (r != DAT_SUCCESS) {
    *err = dat_error("dat_ep_post_recv", r);
    return false;
  }
  return true;
}

// Waits for the last byte of landing slice k to read `tag`.
bool await_tag(Side& s, const Layout& L, size_t k, size_t n, uint8_t tag, bool dequeue,
               const std::function<void()>& drive, std::string* err) {
  const uint8_t* p = s.data() + L.landing(k) + n - 1;
  std::vector<Done> d;
  bool failed = false;
  if (!spin_until([&] { return failed || peek(p) == tag; },
                  [&] {
                    // Dequeueing drives this side's interface (and reaps
                    // nothing: the WRITEs are unsignalled).
                    if (dequeue && s.reap(s.conn(k).req, &d, err) < 0) failed = true;
                    d.clear();
                    if (drive) drive();
                  }) ||
      failed) {
    if (!failed) *err = "latency: a WRITE never landed";
    return false;
  }
  return true;
}

// Posts by `post` on QP k.  An unsignalled WR keeps its send-queue slot
// until the peer's ACK is processed, which may come after the peer's answer:
// while the queue is full, dequeue (which drives this side) and `drive`,
// then post again (bounded by spin_until).  False with *err on failure.
bool post_with_room(Side& s, size_t k, const std::function<DAT_RETURN()>& post,
                    const std::function<void()>& drive, const char* what, std::string* err) {
  DAT_RETURN r = post();
  std::vector<Done> d;
  std::string reap_err;
  if (DAT_GET_TYPE(r) == DAT_INSUFFICIENT_RESOURCES &&
      !spin_until(
          [&] {
            r = post();
            return !reap_err.empty() || DAT_GET_TYPE(r) != DAT_INSUFFICIENT_RESOURCES;
          },
          [&] {
            (void)s.reap(s.conn(k).req, &d, &reap_err);
            d.clear();
            if (drive) drive();
          })) {
    *err = std::string(what) + ": the send queue stayed full";
    return false;
  }
  if (!reap_err.empty()) {
    *err = reap_err;
    return false;
  }
  if (r != DAT_SUCCESS) {
    *err = dat_error(what, r);
    return false;
  }
  return true;
}

}  // namespace

bool dequeue_while_polling(const Options& o) { return !o.poll_mem || o.progress == "inline"; }

bool lat_prepare(Side& s, const std::string& op, const Layout& L, std::string* err) {
  std::memset(s.data() + L.landing(0), 0, L.area());
  if (op != "send") return true;
  for (size_t k = 0; k < L.qps; ++k) {
    const DAT_RETURN r = s.recv(k, L.landing(k), L.slice, 0);
    if (r != DAT_SUCCESS) {
      *err = dat_error("dat_ep_post_recv", r);
      return false;
    }
  }
  return true;
}

bool echo_once(Side& s, const std::string& op, const Layout& L, size_t k, size_t n, uint8_t tag,
               const DAT_RMR_TRIPLET& initiator, bool dequeue, std::string* err) {
  // The source is written only once the initiator's message came: by then
  // the previous answer, from the same source, has reached the initiator.
  // Earlier, that answer may still wait for a progress thread to send it
  // (the provider reads the source as it builds the packet), and would carry
  // this tag instead of its own.
  if (op == "send") {
    if (!await_recv(s, L, k, {}, err)) return false;
    s.data()[L.src(k) + n - 1] = tag;
    return post_with_room(
        s, k, [&] { return s.send(k, L.src(k), n, 0, false); }, {}, "dat_ep_post_send (echo)", err);
  }
  if (!await_tag(s, L, k, n, tag, dequeue, {}, err)) return false;
  s.data()[L.src(k) + n - 1] = tag;
  return post_with_room(
      s, k, [&] { return s.write(k, L.src(k), n, initiator, L.landing(k), 0, false); }, {},
      "dat_ep_post_rdma_write (echo)", err);
}

bool run_lat(Side& s, const Options& o, const Layout& L, size_t n, uint64_t iters,
             const DAT_RMR_TRIPLET& peer, const std::function<bool(size_t, uint8_t)>& peer_step,
             const std::function<void()>& drive, LatFigures* out, std::string* err) {
  out->size = n;
  out->half_round_trip = o.half_round_trip();
  out->samples.clear();
  out->samples.reserve(iters);
  std::vector<Done> d;
  // Atomics: the value each QP's next WR must fetch from its word.
  std::vector<uint64_t> expect;
  if (o.atomic()) {
    std::vector<Flow> words;
    for (size_t k = 0; k < L.qps; ++k) words.push_back(Flow{&s, k, peer});
    if (!atomic_words(words, L, drive, &expect, err)) return false;
  }
  CpuMark cpu0 = CpuMark::now();
  for (uint64_t i = 0; i < iters + kLatWarmup; ++i) {
    if (i == kLatWarmup) cpu0 = CpuMark::now();
    const size_t k = i % L.qps;
    const uint8_t tag = lat_tag(i);
    s.data()[L.src(k) + n - 1] = tag;
    const uint64_t t0 = now_ns();
    auto post = [&]() -> DAT_RETURN {
      if (o.op == "read") return s.read(k, L.landing(k), n, peer, L.src(k), i + 1, true);
      if (o.op == "atomic-fadd")
        return s.fetch_add(k, L.scratch(k), peer, L.landing(k), 1, i + 1, true);
      if (o.op == "atomic-cswap")
        return s.cmp_swap(k, L.scratch(k), peer, L.landing(k), expect[k], expect[k] + 1, i + 1,
                          true);
      if (o.op == "send") return s.send(k, L.src(k), n, 0, false);
      return s.write(k, L.src(k), n, peer, L.landing(k), 0, false);
    };
    if (!post_with_room(s, k, post, drive, "dat_ep_post", err)) return false;
    if (!o.half_round_trip()) {
      bool failed = false;
      d.clear();
      if (!spin_until(
              [&] {
                if (s.reap(s.conn(k).req, &d, err) < 0) failed = true;
                return failed || !d.empty();
              },
              [&] {
                if (drive) drive();
              }) ||
          failed) {
        if (!failed) *err = "latency: the " + o.op + " never completed";
        return false;
      }
    } else {
      if (peer_step && !peer_step(k, tag)) return false;
      if (o.op == "send" ? !await_recv(s, L, k, drive, err)
                         : !await_tag(s, L, k, n, tag, dequeue_while_polling(o), drive, err))
        return false;
    }
    const uint64_t t1 = now_ns();
    if (o.atomic()) {
      const uint64_t got = peek64(s.data() + L.scratch(k));
      if (got != expect[k]) {
        *err = o.op + " latency: QP " + std::to_string(k) + " fetched " + std::to_string(got) +
               ", expected " + std::to_string(expect[k]);
        return false;
      }
      ++expect[k];
    }
    if (i >= kLatWarmup)
      out->samples.push_back(static_cast<double>(t1 - t0) / (out->half_round_trip ? 2e3 : 1e3));
  }
  out->cpu_local = CpuMark::now().pct_since(cpu0);
  finish_lat(out);
  return true;
}

}  // namespace dpdat::perf
