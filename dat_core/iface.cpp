// Interfaces: opening one (link, memory tables, its engines), the process's
// list of them, and where an EP's queue pair goes and what it connects to
// (make_qp / destroy_qp / connect_qp).

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "core.hpp"
#include "link.hpp"
#include "wire/packet.hpp"

namespace dpdat::dat {

// ------------------------------------------------------------- interfaces

namespace {

std::mutex g_ifaces_mu;
std::vector<Iface*>& ifaces() {
  static auto* v = new std::vector<Iface*>();  // interfaces live for the process (EAL does)
  return *v;
}
std::atomic<size_t> g_iface_count{0};
std::atomic<size_t> g_inline_ifaces{0};

}  // namespace

Status Iface::get(const IfaceConfig& cfg, Iface** out, std::string* why) {
  std::lock_guard<std::mutex> lk(g_ifaces_mu);
  for (Iface* f : ifaces())
    if (f->cfg.name == cfg.name) {
      *out = f;
      return kOk;
    }
  const LinkFactory* lf = link_factory();
  if (lf == nullptr) {
    *why = "no link factory installed in this process";
    return fail(Type::PROVIDER_NOT_FOUND);
  }
  auto f = std::make_unique<Iface>();
  f->cfg = cfg;
  LinkError le = LinkError::kNone;
  f->link = lf->open(cfg, &le, why);
  if (!f->link)
    return le == LinkError::kNotFound ? fail(Type::PROVIDER_NOT_FOUND)
                                      : fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_DEVICE);
  f->cm_drops = cfg.cm_drops;
  for (const auto& [ip, mac] : cfg.neighbors) f->link->add_neighbor(ip, mac);
  if (cfg.pmtu_given && cfg.pmtu > f->link->max_pmtu()) {
    // A path MTU asked for by name is carried whole or refused: frames are
    // never cut to fit, and a smaller PMTU than asked is not chosen silently.
    const std::string note = f->link->mtu_note();
    *why = "pmtu=" + std::to_string(cfg.pmtu) + ": the link carries at most PMTU " +
           std::to_string(f->link->max_pmtu()) + (note.empty() ? "" : " (" + note + ")");
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG1);
  }
  f->pmtu = std::min(cfg.pmtu, f->link->max_pmtu());
  Limits& L = f->limits;
  for (auto [set, field] : {std::pair{cfg.max_eps, &L.max_eps},
                            {cfg.max_lmrs, &L.max_lmrs},
                            {cfg.max_rmrs, &L.max_rmrs},
                            {cfg.max_evds, &L.max_evds},
                            {cfg.max_pzs, &L.max_pzs},
                            {cfg.max_pending_crs, &L.max_pending_crs},
                            {cfg.max_pending_crs_per_sp, &L.max_pending_crs_per_sp},
                            {cfg.max_pending_crs_per_peer, &L.max_pending_crs_per_peer},
                            {cfg.max_key_refusals_per_peer, &L.max_key_refusals_per_peer}})
    if (set != 0) *field = set;
  f->mr = std::make_unique<rc::MrTable>(f->limits.max_lmrs, f->limits.max_rmrs);
  // One engine per queue the link has (engines= asked for at most that many).
  const uint32_t n = std::max(1u, std::min(cfg.engines, f->link->queues()));
  if (n > 1) f->group = std::make_unique<rc::EngineGroup>(n);
  for (uint32_t i = 0; i < n; ++i) {
    rc::EngineConfig ec;
    // With several engines a QPN's bits 16..23 name its engine, which leaves
    // each 16 bits of QPNs.
    ec.max_qps = n > 1
                     ? std::min<uint32_t>(f->limits.max_eps, (1u << rc::EngineGroup::kIndexShift) -
                                                                 rc::EngineGroup::qpn_base(0))
                     : f->limits.max_eps;
    ec.pmtu = f->pmtu;
    auto s = std::make_unique<Shard>(i);
    if (i < cfg.cpus.size()) s->cpu = cfg.cpus[i];
    if (f->group) ec.qpn_base = rc::EngineGroup::qpn_base(i);
    s->engine = std::make_unique<rc::Engine>(f->link->io(i), *f->mr, ec);
    if (f->group) s->engine->join_group(f->group.get(), i);
    f->shards.push_back(std::move(s));
  }
  f->engine = f->shards[0]->engine.get();
  Iface* raw = f.get();
  f->cm_in.reserve(64);
  f->engine->set_gsi_handler(
      [raw](const wire::PacketView& v, uint64_t now) { raw->on_gsi(v, now); });
  for (auto& s : f->shards) f->link->engine_created(*s->engine, s->index);
  f->rng = now_ns() ^ (uint64_t{cfg.ip} << 32) ^ 0x9E3779B97F4A7C15ull;
  f->next_comm = f->random32() | 1u;
  ifaces().push_back(f.release());
  g_iface_count.store(ifaces().size(), std::memory_order_release);
  if (cfg.progress == ProgressMode::kInline) g_inline_ifaces.fetch_add(1);
  *out = raw;
  return kOk;
}

bool any_inline_iface() { return g_inline_ifaces.load(std::memory_order_relaxed) != 0; }

void progress_others(Iface* except) {
  const size_t n = g_iface_count.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i) {
    Iface* f = nullptr;
    {
      std::lock_guard<std::mutex> lk(g_ifaces_mu);
      f = ifaces()[i];
    }
    if (f != except) f->drive(now_ns(), true);
  }
}

uint32_t Iface::random32() {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return static_cast<uint32_t>(rng >> 16);
}

Status Iface::make_qp(Ep* ep, Shard* where) {
  rc::QpConfig qc;
  qc.sq_depth = std::max(ep->attr.max_request_dtos, 1u) + 1;
  // With an SRQ the QP's own queue only holds the receive of the message in
  // progress.
  qc.rq_depth = ep->srq != nullptr ? 2 : std::max(ep->attr.max_recv_dtos, 1u);
  qc.pmtu = pmtu;
  qc.selective_repeat = !cfg.gbn;
  qc.max_rd_atomic = std::max(1u, ep->attr.max_rdma_read_out);
  // A dead peer is declared after 7 retries and at least retry_time_ms
  // (default 1 s: a peer process starved of CPU for a few hundred ms is not
  // dead).
  qc.min_retry_time_ns = uint64_t{cfg.retry_time_ms} * 1'000'000;
  qc.rto_min_ns = uint64_t{cfg.rto_min_us} * 1000;
  qc.retransmit_timeout_ns = std::max(qc.retransmit_timeout_ns, qc.rto_min_ns);
  qc.tlp_min_ns = uint64_t{cfg.tlp_min_us} * 1000;
  qc.cc.mode = cfg.cc;
  qc.cc.line_rate_bps = uint64_t{cfg.cc_line_gbps} * 1'000'000'000;
  Shard& s = where != nullptr ? *where : pick_shard(ep);
  rc::CompletionQueue* scq = ep->req_evd != nullptr ? cq_for(ep->req_evd, s) : &s.sink_cq;
  rc::CompletionQueue* rcq = ep->recv_evd != nullptr ? cq_for(ep->recv_evd, s) : &s.sink_cq;
  ep->qp = s.engine->create_qp(ep->pz->id, qc, scq, rcq);
  if (ep->qp == nullptr) return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_TEP);
  ep->shard = &s;
  s.eps++;
  if (ep->rma_writes != nullptr || ep->rma_reads != nullptr)
    rc::qp::set_rma_counters(*ep->qp, ep->rma_writes, ep->rma_reads);
  rc::qp::set_remote_access(*ep->qp, ep->remote_access);
  if (ep->srq != nullptr) {
    if (ep->srq->shard == nullptr) ep->srq->shard = &s;
    (void)rc::qp::attach_srq(*ep->qp, ep->srq->rq.get());  // new QP: in RESET
  }
  ep_by_qpn[rc::qp::number(*ep->qp)] = ep;
  return kOk;
}

bool Iface::rehome_qp(Ep* ep, Shard& to) {
  if (ep->qp == nullptr || ep->shard == &to || ep->srq != nullptr || ep->sends_into_qp != 0)
    return false;
  Shard& from = *ep->shard;
  drain_handoff(from);  // receives posted from other threads reach the old queue pair first
  bool waiting = false;
  from.handoff.for_each([ep, &waiting](Handoff& h) { waiting |= h.ep == ep; });
  if (waiting) return false;
  rc::Qp* old = ep->qp;
  ep->qp = nullptr;
  ep->shard = nullptr;
  if (!make_qp(ep, &to).ok()) {
    ep->qp = old;
    ep->shard = &from;
    return false;
  }
  std::vector<rc::RecvWr> recvs;
  rc::qp::take_recvs(*old, &recvs);
  for (const rc::RecvWr& r : recvs) (void)rc::qp::post_recv(*ep->qp, r);  // same depth: they fit
  ep->recvs_into_qp = recvs.size();
  ep_by_qpn.erase(rc::qp::number(*old));
  from.engine->destroy_qp(old);
  from.eps--;
  return true;
}

bool Iface::connect_qp(Ep* ep, const wire::MacAddr& peer_mac, uint32_t peer_ip, uint32_t peer_qpn,
                       uint32_t path_pmtu, wire::Psn sq_psn, wire::Psn rq_psn) {
  rc::PathInfo path;
  path.local_mac = link->mac();
  path.peer_mac = peer_mac;
  path.local_ip = cfg.ip;
  path.peer_ip = peer_ip;
  path.udp_src_port = wire::roce_src_port(rc::qp::number(*ep->qp));
  path.peer_qpn = peer_qpn;
  return rc::qp::set_pmtu(*ep->qp, path_pmtu) && rc::qp::connect(*ep->qp, path, sq_psn, rq_psn);
}

Shard& Iface::pick_shard(const Ep* ep) const {
  if (ep->srq != nullptr && ep->srq->shard != nullptr) return *ep->srq->shard;
  if (shards.size() == 1) return *shards[0];
  // Only a thread pinned to one CPU says where it runs: a floating one that
  // happens to be on an engine's CPU would put every EP it creates there.
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) == 0 && CPU_COUNT(&mine) == 1) {
    const int cpu = sched_getcpu();
    for (const auto& s : shards)
      if (s->cpu >= 0 && s->cpu == cpu) return *s;
  }
  Shard* best = shards[0].get();
  for (const auto& s : shards)
    if (s->eps < best->eps) best = s.get();
  return *best;
}

rc::CompletionQueue* Iface::cq_for(Evd* evd, Shard& s) {
  if (evd->cqs.size() < shards.size()) evd->cqs.resize(shards.size());
  auto& cq = evd->cqs[s.index];
  if (!cq) {
    cq = std::make_unique<rc::CompletionQueue>(evd->qlen);
    s.ready_cqs.reserve(cq_evds.size() + 1);
    s.ready_pass.reserve(cq_evds.size() + 1);
    cq->watch(&s.ready_cqs, evd);
    evd->shard_mask.fetch_or(uint64_t{1} << s.index, std::memory_order_relaxed);
  }
  return cq.get();
}

void Iface::destroy_qp(Ep* ep) {
  if (ep->qp == nullptr) return;
  // Requests handed off for it reach it first (and are flushed with it);
  // those that cannot (a full queue) go with it.
  Shard& s = *ep->shard;
  drain_handoff(s);
  s.handoff.for_each([ep](Handoff& h) {
    if (h.ep == ep) h.qp = nullptr;
  });
  settle_completions(ep);
  ep_by_qpn.erase(rc::qp::number(*ep->qp));
  s.engine->destroy_qp(ep->qp);
  s.eps--;
  ep->qp = nullptr;
  ep->shard = nullptr;
  // Everything it held is settled: a later queue pair starts from a full
  // send / receive queue on these counts.
  ep->sends_into_qp = ep->recvs_into_qp = 0;
  ep->sends_posted.store(0);
  ep->sends_retired.store(0);
  ep->signaled_into_qp = ep->send_completions = 0;
  ep->recvs_posted.store(0);
  ep->recvs_retired.store(0);
}

}  // namespace dpdat::dat
