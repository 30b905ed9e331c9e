// rdma_cm ids: devices, ports, addresses and routes, moving an id to another
// channel, destroying it.  Connections: conn.cpp.

#include <arpa/inet.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

#include "state.hpp"

namespace dpdat::rdmacm {

namespace {

// Ephemeral ports, as the kernel's default range.
constexpr uint16_t kPortLo = 32768, kPortHi = 60999;

bool is_connection_ps(rdma_port_space ps) { return ps == RDMA_PS_TCP || ps == RDMA_PS_IB; }

void set_src(Id* id) {
  auto& s = id->id.route.addr.src_sin;
  s.sin_family = AF_INET;
  s.sin_addr.s_addr = htonl(id->src_ip);
  s.sin_port = htons(id->src_port);
}

void set_dst(Id* id) {
  auto& s = id->id.route.addr.dst_sin;
  s.sin_family = AF_INET;
  s.sin_addr.s_addr = htonl(id->dst_ip);
  s.sin_port = htons(id->dst_port);
}

void fill_gid(uint32_t ip, ibv_gid* gid) {
  std::memset(gid, 0, sizeof(*gid));
  gid->raw[10] = 0xFF;
  gid->raw[11] = 0xFF;
  const uint32_t be = htonl(ip);
  std::memcpy(&gid->raw[12], &be, 4);
}

// rdma_resolve_addr's wait when the caller gives none.
constexpr int kDefaultResolveMs = 2000;

// The end of an address query (mu held): ADDR_RESOLVED, or ADDR_ERROR with
// the id bound as before (it may resolve again).
void addr_query_done(Id* id, bool resolved) {
  if (id->destroying || id->st != St::kAddrQuery) return;
  if (resolved) {
    id->st = St::kAddr;
    push_event(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, nullptr, 0);
  } else {
    id->st = St::kBound;
    push_event(id, RDMA_CM_EVENT_ADDR_ERROR, -EHOSTUNREACH, nullptr, 0);
  }
}

// Binds the id to device d (mu held).
void bind_dev(Id* id, Dev* d) {
  id->dev = d;
  id->id.verbs = d->ctx;
  id->id.pd = d->pd;
  id->id.port_num = 1;
  if (id->src_ip == 0) id->src_ip = d->ip;
}

}  // namespace

Global& g() {
  static auto& x = *new Global();  // ids may outlive static destruction
  return x;
}

Id* id_of(rdma_cm_id* id) { return reinterpret_cast<Id*>(id); }

Dev* open_dev(size_t index) {
  auto& list = verbs::devices();
  if (index >= list.size()) {
    errno = ENODEV;
    return nullptr;
  }
  {
    std::lock_guard<std::mutex> lk(g().mu);
    if (g().devs.size() < list.size()) g().devs.resize(list.size());
    if (g().devs[index] != nullptr) return g().devs[index];
  }
  // Opened without mu (dat_core calls); a second opener keeps the first's.
  auto* d = new Dev{};
  d->device = list[index];
  d->ip = d->device->cfg.ip;
  d->ctx = ibv_open_device(&d->device->dev);
  if (d->ctx == nullptr) {
    delete d;
    return nullptr;
  }
  d->ia = verbs::ctx_of(d->ctx)->ia;
  // The device's PD, every id's on it (id->pd) from when it is bound, as
  // librdmacm gives one: programs allocate on it (UCX's rdmacm transport
  // creates a QP on id->pd).
  d->pd = ibv_alloc_pd(d->ctx);
  dat::Status st = d->pd == nullptr ? dat::fail(dat::Type::INSUFFICIENT_RESOURCES)
                                    : dat::cno_create(d->ia, d, cm_agent, &d->cno);
  if (st.ok())
    st = dat::evd_create(d->ia, 4096, d->cno, dat::evd_flag::kCr | dat::evd_flag::kConnection,
                         &d->evd);
  if (!st.ok()) {
    if (d->cno != nullptr) (void)dat::cno_free(d->cno);
    if (d->pd != nullptr) (void)ibv_dealloc_pd(d->pd);
    (void)ibv_close_device(d->ctx);
    delete d;
    errno = verbs::to_errno(st);
    return nullptr;
  }
  std::lock_guard<std::mutex> lk(g().mu);
  if (g().devs[index] != nullptr) {
    // Lost the race: the first stays open for the process, this one goes.
    (void)dat::evd_free(d->evd);
    (void)dat::cno_free(d->cno);
    (void)ibv_dealloc_pd(d->pd);
    (void)ibv_close_device(d->ctx);
    delete d;
    return g().devs[index];
  }
  g().devs[index] = d;
  return d;
}

Dev* dev_for_ip(uint32_t ip) {
  auto& list = verbs::devices();
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i]->cfg.ip == ip) return open_dev(i);
  errno = EADDRNOTAVAIL;
  return nullptr;
}

uint16_t take_port() {
  Global& G = g();
  if (G.next_port == 0) {
    std::random_device rd;
    G.next_port = static_cast<uint16_t>(kPortLo + rd() % (kPortHi - kPortLo + 1));
  }
  for (uint32_t n = 0; n <= kPortHi - kPortLo; ++n) {
    const uint16_t p = G.next_port;
    G.next_port = p == kPortHi ? kPortLo : static_cast<uint16_t>(p + 1);
    if (G.ports.insert(p).second) return p;
  }
  return 0;
}

}  // namespace dpdat::rdmacm

using namespace dpdat::rdmacm;  // NOLINT(google-build-using-namespace): the C entry points
namespace verbs = dpdat::verbs;

extern "C" int dpdat_rdma_create_id(rdma_event_channel* ch, rdma_cm_id** out, void* ctx,
                                    rdma_port_space ps) {
  if (out == nullptr) return fail(EINVAL);
  // Datagram port spaces (UDP, IPoIB) need UD queue pairs, which dpdat lacks.
  if (!is_connection_ps(ps)) return fail(EOPNOTSUPP);
  auto* id = new Id{};
  if (ch == nullptr) {
    const int fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
    if (fd < 0) {
      delete id;
      return -1;
    }
    id->sync = true;
    id->chan = new Chan{};
    id->chan->internal = true;
    id->chan->ch.fd = fd;
  } else {
    id->chan = reinterpret_cast<Chan*>(ch);
  }
  id->id.channel = &id->chan->ch;
  id->id.context = ctx;
  id->id.ps = ps;
  id->id.qp_type = IBV_QPT_RC;
  *out = &id->id;
  return 0;
}

extern "C" int dpdat_rdma_bind_addr(rdma_cm_id* cid, sockaddr* addr) {
  if (cid == nullptr || addr == nullptr) return fail(EINVAL);
  if (addr->sa_family != AF_INET) return fail(EAFNOSUPPORT);
  Id* id = id_of(cid);
  const auto* sin = reinterpret_cast<const sockaddr_in*>(addr);
  const uint32_t ip = ntohl(sin->sin_addr.s_addr);
  uint16_t port = ntohs(sin->sin_port);
  Dev* d = nullptr;
  if (ip != INADDR_ANY) {
    d = dev_for_ip(ip);
    if (d == nullptr) return fail(EADDRNOTAVAIL);
  }
  std::lock_guard<std::mutex> lk(g().mu);
  if (id->st != St::kIdle) return fail(EINVAL);
  if (port == 0) {
    port = take_port();
    if (port == 0) return fail(EADDRINUSE);
  } else if (!g().ports.insert(port).second) {
    return fail(EADDRINUSE);
  }
  id->port_held = true;
  id->src_port = port;
  id->src_ip = ip;
  if (d != nullptr) bind_dev(id, d);
  set_src(id);
  id->st = St::kBound;
  return 0;
}

extern "C" int dpdat_rdma_resolve_addr(rdma_cm_id* cid, sockaddr* src, sockaddr* dst,
                                       int timeout_ms) {
  if (cid == nullptr || dst == nullptr) return fail(EINVAL);
  if (dst->sa_family != AF_INET) return fail(EAFNOSUPPORT);
  Id* id = id_of(cid);
  if (src != nullptr && src->sa_family == AF_INET && id->st == St::kIdle &&
      dpdat_rdma_bind_addr(cid, src) != 0)
    return -1;
  const auto* sin = reinterpret_cast<const sockaddr_in*>(dst);
  const uint32_t dip = ntohl(sin->sin_addr.s_addr);
  if (dip == INADDR_ANY || dip == INADDR_BROADCAST) return fail(EINVAL);
  // The device: the bound one, else the first whose interface is on the
  // destination's /24, else the first (dpdat-run -i lists the chosen first).
  Dev* d = id->dev;
  if (d == nullptr) {
    auto& list = verbs::devices();
    size_t pick = list.empty() ? 0 : list.size();
    for (size_t i = 0; i < list.size() && pick == list.size(); ++i)
      if (((list[i]->cfg.ip ^ dip) & 0xFFFFFF00u) == 0) pick = i;
    if (pick == list.size()) pick = 0;
    d = open_dev(pick);
    if (d == nullptr) return fail(errno == 0 ? ENODEV : errno);
  }
  {
    std::lock_guard<std::mutex> lk(g().mu);
    if (id->st != St::kIdle && id->st != St::kBound) return fail(EINVAL);
    if (!id->port_held) {
      id->src_port = take_port();
      if (id->src_port == 0) return fail(EADDRINUSE);
      id->port_held = true;
    }
    bind_dev(id, d);
    id->src_ip = d->ip;
    set_src(id);
    id->dst_ip = dip;
    id->dst_port = ntohs(sin->sin_port);
    set_dst(id);
    id->st = St::kAddrQuery;
  }
  // The peer's MAC (ARP): known already, or asked for by a thread of the
  // query's own, which ends it within timeout_ms.
  dat::Ia* ia = d->ia;
  if (dat::ia_resolve(ia, dip, 0).ok()) {
    std::lock_guard<std::mutex> lk(g().mu);
    addr_query_done(id, true);
  } else {
    const uint64_t us = uint64_t(timeout_ms > 0 ? timeout_ms : kDefaultResolveMs) * 1000;
    {
      std::lock_guard<std::mutex> lk(g().mu);
      id->resolving++;
    }
    std::thread([id, ia, dip, us] {
      const bool ok = dat::ia_resolve(ia, dip, us).ok();
      {
        std::lock_guard<std::mutex> lk(g().mu);
        addr_query_done(id, ok);
        id->resolving--;
      }
      g().acked.notify_all();
    }).detach();
  }
  return id->sync ? wait_sync(id, RDMA_CM_EVENT_ADDR_RESOLVED) : 0;
}

extern "C" int dpdat_rdma_resolve_route(rdma_cm_id* cid, int /*timeout_ms*/) {
  if (cid == nullptr) return fail(EINVAL);
  Id* id = id_of(cid);
  {
    std::lock_guard<std::mutex> lk(g().mu);
    if (id->st != St::kAddr) return fail(EINVAL);
    // One path: the interface's, GRH from our address to the peer's.
    ibv_sa_path_rec& p = id->path;
    p = ibv_sa_path_rec{};
    fill_gid(id->src_ip, &p.sgid);
    fill_gid(id->dst_ip, &p.dgid);
    p.pkey = 0xFFFF;
    p.hop_limit = 64;
    p.mtu = IBV_MTU_1024;
    p.reversible = 1;
    p.numb_path = 1;
    ibv_port_attr pa{};
    if (ibv_query_port(id->dev->ctx, 1, &pa) == 0) p.mtu = pa.active_mtu;
    id->id.route.path_rec = &p;
    id->id.route.num_paths = 1;
    id->st = St::kRoute;
    push_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, nullptr, 0);
  }
  return id->sync ? wait_sync(id, RDMA_CM_EVENT_ROUTE_RESOLVED) : 0;
}

extern "C" int dpdat_rdma_migrate_id(rdma_cm_id* cid, rdma_event_channel* ch) {
  if (cid == nullptr) return fail(EINVAL);
  Id* id = id_of(cid);
  Chan* to = nullptr;
  if (ch == nullptr) {
    const int fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
    if (fd < 0) return -1;
    to = new Chan{};
    to->internal = true;
    to->ch.fd = fd;
  } else {
    to = reinterpret_cast<Chan*>(ch);
  }
  std::lock_guard<std::mutex> lk(g().mu);
  Chan* from = id->chan;
  // The id's queued events go with it (their counts are left behind, which
  // the old channel's readers pass over).
  for (auto it = from->q.begin(); it != from->q.end();) {
    if ((*it)->owner == id) {
      to->q.push_back(*it);
      const uint64_t one = 1;
      (void)!write(to->ch.fd, &one, sizeof(one));
      it = from->q.erase(it);
    } else {
      ++it;
    }
  }
  id->chan = to;
  id->sync = ch == nullptr;
  id->id.channel = &to->ch;
  if (from->internal) {
    for (Ev* e : from->q) delete e;
    close(from->ch.fd);
    delete from;
  }
  return 0;
}

extern "C" int dpdat_rdma_destroy_id(rdma_cm_id* cid) {
  if (cid == nullptr) return fail(EINVAL);
  Id* id = id_of(cid);
  if (id->id.event != nullptr) {
    (void)dpdat_rdma_ack_cm_event(id->id.event);
    id->id.event = nullptr;
  }
  std::vector<std::pair<Dev*, dat::Sp*>> sps;
  std::vector<dat::Cr*> rejects;
  dat::Ep* ep = ep_of(id);
  bool disconnect = false;
  {
    std::unique_lock<std::mutex> lk(g().mu);
    Global& G = g();
    id->destroying = true;
    // No event for the id from now on: its requests and its QP's connection
    // events find no id (a request is then rejected).
    sps = id->sps;
    for (auto& [d, sp] : sps) G.by_sp.erase(sp);
    if (id->id.qp != nullptr) {
      // The QP outlives the id (the application destroys it later, or the
      // device's close does): it forgets the id.
      reinterpret_cast<verbs::Qp*>(id->id.qp)->cm_id = nullptr;
      G.by_ep.erase(ep);
      disconnect =
          id->st == St::kConnected || id->st == St::kConnecting || id->st == St::kAccepting;
    } else if (ep != nullptr) {
      G.by_ep.erase(ep);  // a CM-only EP: freed below (a DREQ if connected)
    }
    if (id->cr != nullptr) rejects.push_back(id->cr);
    id->cr = nullptr;
    if (id->port_held) G.ports.erase(id->src_port);
    // Events queued and not yet got go with the id; a listener's unseen
    // requests are rejected with it.
    Chan* c = id->chan;
    for (auto it = c->q.begin(); it != c->q.end();) {
      Ev* e = *it;
      if (e->owner == id) {
        id->unacked--;
        it = c->q.erase(it);
        delete e;
      } else if (e->ev.listen_id == &id->id) {
        Id* child = e->owner;
        if (child->cr != nullptr) rejects.push_back(child->cr);
        it = c->q.erase(it);
        delete e;
        drop_unseen_child(child);
      } else {
        ++it;
      }
    }
    // Events handed out must come back first (rdma_destroy_id(3)).
    // An address query still running ends first (it queues nothing now).
    // The agent no longer reads a CM-only EP (ESTABLISHED's path).
    G.acked.wait(lk, [id] {
      return id->unacked == 0 && id->resolving == 0 &&
             (id->cm_ep == nullptr || g().agent_eps.count(id->cm_ep) == 0);
    });
  }
  if (id->cm_ep != nullptr) (void)dat::qp_free(id->cm_ep);
  for (auto& [d, sp] : sps) (void)dat::sp_free(sp);
  for (dat::Cr* cr : rejects) (void)dat::cr_reject(cr, nullptr, 0);
  // A QP left on the id (the application should have destroyed it) is
  // disconnected: the peer gets its DREQ.
  if (disconnect) (void)dat::ep_disconnect(ep, true);
  // CQs made for a QP the application destroyed with ibv_destroy_qp.
  if (id->id.qp == nullptr) free_cqs(id);
  if (id->chan->internal) {
    std::lock_guard<std::mutex> lk(g().mu);
    for (Ev* e : id->chan->q) delete e;
    close(id->chan->ch.fd);
    delete id->chan;
  }
  delete id;
  return 0;
}

extern "C" __be16 dpdat_rdma_get_src_port(rdma_cm_id* cid) {
  return cid == nullptr ? 0 : htons(id_of(cid)->src_port);
}

extern "C" __be16 dpdat_rdma_get_dst_port(rdma_cm_id* cid) {
  return cid == nullptr ? 0 : htons(id_of(cid)->dst_port);
}
