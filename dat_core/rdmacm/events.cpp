// rdma_cm event channels and events: the channel's eventfd, getting and
// acking events, the synchronous ids' waits, and the agent that turns
// dat_core's CR and connection events into rdma_cm events.

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "state.hpp"

namespace dpdat::rdmacm {

namespace {

// IBA REJ reasons the events report in `status` (as the kernel's CM does).
constexpr int kRejInvalidServiceId = 8;
constexpr int kRejConsumer = 28;

void raise(Chan* c) {
  const uint64_t one = 1;
  (void)!write(c->ch.fd, &one, sizeof(one));
}

Id* new_child(Id* l, Dev* d, dat::Cr* cr) {
  auto* c = new Id{};
  c->sync = l->sync;
  if (c->sync) {
    c->chan = new Chan{};
    c->chan->internal = true;
    c->chan->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
  } else {
    c->chan = l->chan;
  }
  c->dev = d;
  c->st = St::kRequest;
  c->cr = cr;
  c->src_ip = d->ip;
  c->src_port = l->src_port;
  c->dst_ip = cr->peer_ip;
  c->dst_port = cr->req.src_port;  // 0 from a DAT or libfabric peer
  c->req_qpn = cr->req.qpn;
  c->req_psn = cr->req.start_psn;
  c->req_mtu = cr->req.path_mtu;
  c->req_rd = cr->req.initiator_depth;
  c->req_rr = cr->req.responder_resources;
  rdma_cm_id& v = c->id;
  v.verbs = d->ctx;
  v.pd = d->pd;
  v.channel = &c->chan->ch;
  v.context = l->id.context;
  v.ps = l->id.ps;
  v.port_num = 1;
  v.qp_type = IBV_QPT_RC;
  auto& s = v.route.addr.src_sin;
  s.sin_family = AF_INET;
  s.sin_addr.s_addr = htonl(c->src_ip);
  s.sin_port = htons(c->src_port);
  auto& t = v.route.addr.dst_sin;
  t.sin_family = AF_INET;
  t.sin_addr.s_addr = htonl(c->dst_ip);
  t.sin_port = htons(c->dst_port);
  return c;
}

// One dat_core event of device d (mu not held).
void handle(Dev* d, const dat::Event& e) {
  using N = dat::EventNum;
  // What the connection agreed, for ESTABLISHED.  dat_core is called without
  // mu; the EP, still its id's, is kept from ibv_destroy_qp meanwhile.
  dat::QpCmPath path;
  bool have_path = false;
  if ((e.num == N::kEstablished || e.num == N::kConnResponse) && e.ep != nullptr) {
    {
      std::lock_guard<std::mutex> lk(g().mu);
      if (g().by_ep.count(e.ep) == 0) return;  // its id is gone
      g().agent_eps.insert(e.ep);
    }
    have_path = dat::qp_cm_path(e.ep, &path).ok();
    {
      std::lock_guard<std::mutex> lk(g().mu);
      g().agent_eps.erase(g().agent_eps.find(e.ep));
    }
    g().acked.notify_all();
  }
  std::unique_lock<std::mutex> lk(g().mu);
  if (e.num == N::kConnRequest) {
    auto it = g().by_sp.find(e.sp);
    if (it == g().by_sp.end() || e.cr == nullptr) {
      lk.unlock();
      if (e.cr != nullptr) (void)dat::cr_reject(e.cr, nullptr, 0);
      return;
    }
    Id* l = it->second;
    Id* c = new_child(l, d, e.cr);
    const auto& req = e.cr->req;
    push_event(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0, e.cr->pdata.data(),
               static_cast<uint32_t>(e.cr->pdata.size()), l);
    Ev* ev = l->chan->q.back();
    ev->ev.param.conn.responder_resources = req.initiator_depth;
    ev->ev.param.conn.initiator_depth = req.responder_resources;
    ev->ev.param.conn.retry_count = 7;
    ev->ev.param.conn.rnr_retry_count = 7;
    ev->ev.param.conn.qp_num = req.qpn;
    return;
  }
  auto it = g().by_ep.find(e.ep);
  if (it == g().by_ep.end()) return;  // its id is gone
  Id* id = it->second;
  switch (e.num) {
    case N::kEstablished:
    case N::kConnResponse:  // the application's own QP: rdma_establish ends it
      if (e.num == N::kEstablished) id->st = St::kConnected;
      push_event(
          id, e.num == N::kEstablished ? RDMA_CM_EVENT_ESTABLISHED : RDMA_CM_EVENT_CONNECT_RESPONSE,
          0, e.pdata, e.pdata_len);
      if (have_path) {
        rdma_conn_param& p = id->chan->q.back()->ev.param.conn;
        p.responder_resources = static_cast<uint8_t>(std::min(path.responder_resources, 255u));
        p.initiator_depth = static_cast<uint8_t>(std::min(path.initiator_depth, 255u));
        p.retry_count = 7;
        p.rnr_retry_count = 7;
        p.qp_num = path.peer_qpn;
      }
      break;
    case N::kPeerRejected:
      id->st = St::kDisconnected;
      push_event(id, RDMA_CM_EVENT_REJECTED, e.reason != 0 ? int(e.reason) : kRejConsumer, e.pdata,
                 e.pdata_len);
      break;
    case N::kNonPeerRejected:
      id->st = St::kDisconnected;
      push_event(id, RDMA_CM_EVENT_REJECTED, e.reason != 0 ? int(e.reason) : kRejInvalidServiceId,
                 e.pdata, e.pdata_len);
      break;
    case N::kUnreachable:
      id->st = St::kDisconnected;
      push_event(id, RDMA_CM_EVENT_UNREACHABLE, -EHOSTUNREACH, nullptr, 0);
      break;
    case N::kTimedOut:
      id->st = St::kDisconnected;
      push_event(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, nullptr, 0);
      break;
    case N::kAcceptCompletionError:
      // The active side refused the REP (a REJ), or never answered it (as
      // the kernel's CM reports an unanswered REP: unreachable).
      id->st = St::kDisconnected;
      if (e.reason != 0)
        push_event(id, RDMA_CM_EVENT_REJECTED, int(e.reason), e.pdata, e.pdata_len);
      else
        push_event(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, nullptr, 0);
      break;
    case N::kDisconnected:
    case N::kBroken:
      id->st = St::kDisconnected;
      push_event(id, RDMA_CM_EVENT_DISCONNECTED, 0, e.pdata, e.pdata_len);
      // dpdat keeps no timewait: a queue pair leaves the network with its
      // disconnection (its packets are refused from then on).
      if (ep_of(id) != nullptr) push_event(id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, nullptr, 0);
      break;
    default:
      break;
  }
}

}  // namespace

void push_event(Id* id, rdma_cm_event_type type, int status, const uint8_t* pdata, uint32_t len,
                Id* listen) {
  auto* ev = new Ev{};
  ev->owner = id;
  ev->ev.id = &id->id;
  ev->ev.listen_id = listen != nullptr ? &listen->id : nullptr;
  ev->ev.event = type;
  ev->ev.status = status;
  if (len > 0 && pdata != nullptr) {
    ev->pdata.assign(pdata, pdata + len);
    ev->ev.param.conn.private_data = ev->pdata.data();
    ev->ev.param.conn.private_data_len = static_cast<uint8_t>(std::min<uint32_t>(len, 255));
  }
  id->unacked++;
  Chan* c = listen != nullptr ? listen->chan : id->chan;
  c->q.push_back(ev);
  raise(c);
}

void cm_agent(void* dev, void* /*evd*/) {
  auto* d = static_cast<Dev*>(dev);
  dat::Event e;
  while (dat::pop_event(d->evd, &e)) handle(d, e);
}

void drop_unseen_child(Id* c) {
  if (c->chan->internal) {
    close(c->chan->ch.fd);
    delete c->chan;
  }
  delete c;
}

int wait_sync(Id* id, rdma_cm_event_type want) {
  if (id->id.event != nullptr) {
    (void)dpdat_rdma_ack_cm_event(id->id.event);
    id->id.event = nullptr;
  }
  rdma_cm_event* ev = nullptr;
  if (dpdat_rdma_get_cm_event(&id->chan->ch, &ev) != 0) return -1;
  id->id.event = ev;
  if (ev->event == want) return 0;
  if (ev->event == RDMA_CM_EVENT_REJECTED) return fail(ECONNREFUSED);
  return fail(ev->status < 0 ? -ev->status : EIO);
}

int fail(int e) {
  errno = e;
  return -1;
}

}  // namespace dpdat::rdmacm

using namespace dpdat::rdmacm;  // NOLINT(google-build-using-namespace): the C entry points

extern "C" rdma_event_channel* dpdat_rdma_create_event_channel(void) {
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
  if (fd < 0) return nullptr;
  auto* c = new Chan{};
  c->ch.fd = fd;
  return &c->ch;
}

extern "C" void dpdat_rdma_destroy_event_channel(rdma_event_channel* ch) {
  if (ch == nullptr) return;
  auto* c = reinterpret_cast<Chan*>(ch);
  {
    std::lock_guard<std::mutex> lk(g().mu);
    for (Ev* e : c->q) delete e;  // the application destroyed its ids first
    c->q.clear();
  }
  close(c->ch.fd);
  delete c;
}

extern "C" int dpdat_rdma_get_cm_event(rdma_event_channel* ch, rdma_cm_event** out) {
  if (ch == nullptr || out == nullptr) return fail(EINVAL);
  auto* c = reinterpret_cast<Chan*>(ch);
  for (;;) {
    // A count per queued event; a count without one (its id was destroyed
    // meanwhile) is passed over.  A non-blocking fd gives EAGAIN.
    uint64_t v = 0;
    const ssize_t n = read(c->ch.fd, &v, sizeof(v));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    std::lock_guard<std::mutex> lk(g().mu);
    if (c->q.empty()) continue;
    Ev* e = c->q.front();
    c->q.pop_front();
    *out = &e->ev;
    return 0;
  }
}

extern "C" int dpdat_rdma_ack_cm_event(rdma_cm_event* event) {
  if (event == nullptr) return fail(EINVAL);
  auto* e = reinterpret_cast<Ev*>(event);
  {
    std::lock_guard<std::mutex> lk(g().mu);
    if (e->owner != nullptr && e->owner->unacked > 0) e->owner->unacked--;
  }
  g().acked.notify_all();
  delete e;
  return 0;
}

extern "C" const char* dpdat_rdma_event_str(rdma_cm_event_type ev) {
  switch (ev) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      return "RDMA_CM_EVENT_ADDR_RESOLVED";
    case RDMA_CM_EVENT_ADDR_ERROR:
      return "RDMA_CM_EVENT_ADDR_ERROR";
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
      return "RDMA_CM_EVENT_ROUTE_RESOLVED";
    case RDMA_CM_EVENT_ROUTE_ERROR:
      return "RDMA_CM_EVENT_ROUTE_ERROR";
    case RDMA_CM_EVENT_CONNECT_REQUEST:
      return "RDMA_CM_EVENT_CONNECT_REQUEST";
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
      return "RDMA_CM_EVENT_CONNECT_RESPONSE";
    case RDMA_CM_EVENT_CONNECT_ERROR:
      return "RDMA_CM_EVENT_CONNECT_ERROR";
    case RDMA_CM_EVENT_UNREACHABLE:
      return "RDMA_CM_EVENT_UNREACHABLE";
    case RDMA_CM_EVENT_REJECTED:
      return "RDMA_CM_EVENT_REJECTED";
    case RDMA_CM_EVENT_ESTABLISHED:
      return "RDMA_CM_EVENT_ESTABLISHED";
    case RDMA_CM_EVENT_DISCONNECTED:
      return "RDMA_CM_EVENT_DISCONNECTED";
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      return "RDMA_CM_EVENT_DEVICE_REMOVAL";
    case RDMA_CM_EVENT_MULTICAST_JOIN:
      return "RDMA_CM_EVENT_MULTICAST_JOIN";
    case RDMA_CM_EVENT_MULTICAST_ERROR:
      return "RDMA_CM_EVENT_MULTICAST_ERROR";
    case RDMA_CM_EVENT_ADDR_CHANGE:
      return "RDMA_CM_EVENT_ADDR_CHANGE";
    case RDMA_CM_EVENT_TIMEWAIT_EXIT:
      return "RDMA_CM_EVENT_TIMEWAIT_EXIT";
  }
  return "UNKNOWN EVENT";
}
