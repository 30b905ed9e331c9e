// librsm: the RSMAPI of include/rsm/rsmapi.h, built on dpdat's public uDAPL
// 1.2 API (libdat.so.1), so segments, imports and DAT programs share one IA
// registry, one set of interfaces and one memory table per interface.
//
// Per controller (= one DAT IA): a PZ, a public service point on kRsmQual and
// one service EVD (CR + connection + DTO + software events) on which a
// service thread blocks in dat_evd_wait.  That thread evaluates every
// connection request against the segment's ACL in force at that moment,
// accepts with a reply {status, granted permission, rmr_context, address,
// length}, turns connection events into import/export state, and turns
// received SENDs into RSM signals.
//
// An import is one RC endpoint.  get/put are RDMA READ/WRITE against the
// registration the exporter chose for the granted permission (one LMR per
// permission kind, so the exporter's transport refuses an access the grant
// does not cover), staged through a registered bounce buffer, or moved
// directly for rsm_localmemory handles.  Unpublish disconnects every importer
// and frees those registrations: a stale key fails at the exporter.
//
// Node IDs: an interface's node= setting, else the low 16 bits of its IPv4
// address.  The exporter learns an importer's node from the source address
// of the connection request (the CM exchange), mapped through the IA
// registry; nothing in the request's private data names the node.

#include <arpa/inet.h>
#include <dat/udat.h>
#include <netinet/in.h>
#include <rsm/rsmapi.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "config.hpp"
#include "objects.hpp"

namespace dpdat::rsm {

std::mutex g_mu;
std::map<std::string, Controller*> g_ctls;
// Names whose controller one thread is setting up or tearing down outside
// g_mu (dat_ia_open / dat_ia_close take long); rsm_get_controller for such a
// name waits on g_ctls_cv, so one name never has two controllers.
std::set<std::string> g_busy;
std::condition_variable g_ctls_cv;
std::unordered_map<const void*, Tag> g_live;

void live_add(const void* p, Tag t) {
  std::lock_guard<std::mutex> lk(g_mu);
  g_live[p] = t;
}
void live_del(const void* p) {
  std::lock_guard<std::mutex> lk(g_mu);
  g_live.erase(p);
}

// Every DAT failure while setting up an object is a shortage of the
// interface's objects or keys as far as an RSM caller can tell.
int resource_err(DAT_RETURN) { return RSMERR_INSUFFICIENT_RESOURCES; }

unsigned creation_mode() {
  // 0666 minus the process umask (read without changing it).
  std::ifstream in("/proc/self/status");
  std::string line;
  unsigned mask = 022;
  while (std::getline(in, line))
    if (line.rfind("Umask:", 0) == 0)
      mask = static_cast<unsigned>(std::strtoul(line.c_str() + 6, nullptr, 8));
  return 0666u & ~mask;
}

// Registry look-ups: IPv4 <-> node ID over every configured interface.
rsm_node_id_t node_of_ip(uint32_t ip) {
  std::string why;
  for (const auto& n : dpdat::dat::list_ia_names()) {
    dpdat::dat::IfaceConfig c;
    if (dpdat::dat::lookup_ia(n, &c, &why) && c.ip == ip) return c.node;
  }
  return ip & 0xFFFFu;
}
bool ip_of_node(const Controller* ctl, rsm_node_id_t node, uint32_t* ip) {
  std::string why;
  for (const auto& n : dpdat::dat::list_ia_names()) {
    dpdat::dat::IfaceConfig c;
    if (dpdat::dat::lookup_ia(n, &c, &why) && c.node == node) {
      *ip = c.ip;
      return true;
    }
  }
  if (node > 0xFFFFu) return false;
  *ip = (ctl->cfg.ip & 0xFFFF0000u) | node;  // default derivation: same /16
  return true;
}

// ------------------------------------------------------------- endpoints

void free_conn_resources(Conn* k) {
  if (k->ep != DAT_HANDLE_NULL) (void)dat_ep_free(k->ep);
  if (k->req_evd != DAT_HANDLE_NULL) (void)dat_evd_free(k->req_evd);
  if (k->lmr != DAT_HANDLE_NULL) (void)dat_lmr_free(k->lmr);
  std::free(k->buf);
  delete k;
}

int post_slot_recv(Conn* k, uint32_t slot) {
  DAT_LMR_TRIPLET t{};
  t.lmr_context = k->lctx;
  t.virtual_address = reinterpret_cast<uintptr_t>(k->buf + slot * kSlotBytes);
  t.segment_length = kSlotBytes;
  DAT_DTO_COOKIE ck{};
  ck.as_64 = slot;
  return dat_ok(dat_ep_post_recv(k->ep, 1, &t, ck, DAT_COMPLETION_DEFAULT_FLAG))
             ? RSM_SUCCESS
             : RSMERR_INSUFFICIENT_RESOURCES;
}

// Endpoint, its request EVD and control slots with receives posted.
int make_conn(Controller* c, Conn** out) {
  auto* k = new (std::nothrow) Conn;
  if (k == nullptr) return RSMERR_INSUFFICIENT_MEM;
  k->ctl = c;
  DAT_RETURN r = dat_evd_create(c->ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &k->req_evd);
  if (dat_ok(r)) r = dat_ep_create(c->ia, c->pz, c->sevd, k->req_evd, c->sevd, nullptr, &k->ep);
  if (!dat_ok(r)) {
    free_conn_resources(k);
    return resource_err(r);
  }
  k->buf = static_cast<uint8_t*>(std::aligned_alloc(64, (kSlots + 1) * kSlotBytes));
  if (k->buf == nullptr) {
    free_conn_resources(k);
    return RSMERR_INSUFFICIENT_MEM;
  }
  std::memset(k->buf, 0, (kSlots + 1) * kSlotBytes);
  DAT_REGION_DESCRIPTION reg{};
  reg.for_va = k->buf;
  DAT_RMR_CONTEXT rc = 0;
  DAT_VLEN rs = 0;
  DAT_VADDR ra = 0;
  r = dat_lmr_create(
      c->ia, DAT_MEM_TYPE_VIRTUAL, reg, (kSlots + 1) * kSlotBytes, c->pz,
      static_cast<DAT_MEM_PRIV_FLAGS>(DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG),
      &k->lmr, &k->lctx, &rc, &rs, &ra);
  if (!dat_ok(r)) {
    free_conn_resources(k);
    return resource_err(r);
  }
  for (uint32_t i = 0; i < kSlots; ++i) {
    const int e = post_slot_recv(k, i);
    if (e != RSM_SUCCESS) {
      free_conn_resources(k);
      return e;
    }
  }
  *out = k;
  return RSM_SUCCESS;
}

// Waits for the next request completion of k; true when it succeeded.
bool wait_req(Conn* k) {
  DAT_EVENT ev{};
  DAT_COUNT n = 0;
  if (!dat_ok(dat_evd_wait(k->req_evd, kDtoUs, 1, &ev, &n))) return false;
  return ev.event_number == DAT_DTO_COMPLETION_EVENT &&
         ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS;
}

// SEND of one signal from k's send slot; waits for its acknowledgement.
bool send_signal(Conn* k, rsm_memseg_id_t segid, unsigned flags) {
  std::lock_guard<std::mutex> lk(k->send_mu);
  SigMsg m{kMagic, segid, flags, 0};
  uint8_t* slot = k->buf + kSlots * kSlotBytes;
  std::memcpy(slot, &m, sizeof(m));
  DAT_LMR_TRIPLET t{};
  t.lmr_context = k->lctx;
  t.virtual_address = reinterpret_cast<uintptr_t>(slot);
  t.segment_length = sizeof(m);
  DAT_DTO_COOKIE ck{};
  ck.as_64 = 0x5349;
  if (!dat_ok(dat_ep_post_send(k->ep, 1, &t, ck, DAT_COMPLETION_DEFAULT_FLAG))) return false;
  return wait_req(k);
}

// ---------------------------------------------------------- service thread

// A permission digit: 0 (nothing), 2 (write), 4 (read) or 6 (both); the
// execute bit (1, 3, 5, 7) has no meaning for a segment and is refused.
bool perm_digit_ok(unsigned d) { return (d & 1u) == 0 && d <= 6; }

// The digit of an ACL permission (or of the default mode) that applies to an
// importer running as uid/gid.
unsigned applicable_digit(unsigned mode, uint32_t uid, uint32_t gid) {
  if (uid == geteuid()) return (mode >> 6) & 7u;
  if (gid == getegid()) return (mode >> 3) & 7u;
  return mode & 7u;
}

void free_export_lmrs(ExportSeg* s) {
  for (Lmr& l : s->lmr) {
    if (l.h != DAT_HANDLE_NULL) (void)dat_lmr_free(l.h);
    l = Lmr{};
  }
}

// Decides a connection request; fills rep.  Called with c->mu held.
void evaluate(Controller* c, const ReqPdata& rq, rsm_node_id_t node, RepPdata* rep,
              ExportSeg** seg_out) {
  rep->magic = kMagic;
  *seg_out = nullptr;
  auto it = c->published.find(rq.segid);
  if (it == c->published.end()) {
    rep->status = RSMERR_SEG_NOT_PUBLISHED;
    return;
  }
  ExportSeg* s = it->second;
  if ((rq.perm & ~static_cast<uint32_t>(RSM_PERM_RDWR)) != 0) {
    rep->status = RSMERR_PERM_DENIED;  // as the importing library would have said
    return;
  }
  unsigned mode = c->default_mode;
  if (!s->acl.empty()) {
    auto e = std::lower_bound(
        s->acl.begin(), s->acl.end(), node,
        [](const rsmapi_access_entry_t& a, rsm_node_id_t n) { return a.ae_node < n; });
    if (e == s->acl.end() || e->ae_node != node) {
      rep->status = RSMERR_SEG_NOT_PUBLISHED_TO_NODE;
      return;
    }
    mode = e->ae_permissions;
  }
  const unsigned allowed = applicable_digit(mode, rq.uid, rq.gid);  // 4 read, 2 write
  const unsigned wanted = (rq.perm >> 6) & 6u;
  // A 0 digit grants nothing, not even a connection without access.
  if (allowed == 0 || (wanted & ~allowed) != 0) {
    rep->status = RSMERR_PERM_DENIED;
    return;
  }
  const int which = wanted == 4 ? 0 : wanted == 2 ? 1 : 2;
  rep->status = RSM_SUCCESS;
  rep->perm = rq.perm & RSM_PERM_RDWR;
  rep->rmr_context = wanted == 0 ? 0 : s->lmr[which].rctx;
  rep->addr = reinterpret_cast<uintptr_t>(s->vaddr);
  rep->len = s->size;
  *seg_out = s;
}

void on_cr(Controller* c, DAT_CR_HANDLE cr) {
  DAT_CR_PARAM p{};
  if (!dat_ok(dat_cr_query(cr, DAT_CR_FIELD_ALL, &p))) return;
  ReqPdata rq{};
  if (p.private_data_size < static_cast<DAT_COUNT>(sizeof(rq)) || p.private_data == nullptr ||
      p.remote_ia_address_ptr == nullptr) {
    (void)dat_cr_reject(cr);
    return;
  }
  std::memcpy(&rq, p.private_data, sizeof(rq));
  if (rq.magic != kMagic) {
    (void)dat_cr_reject(cr);
    return;
  }
  sockaddr_in sin{};
  std::memcpy(&sin, p.remote_ia_address_ptr, sizeof(sin));
  const rsm_node_id_t node = node_of_ip(ntohl(sin.sin_addr.s_addr));
  Conn* k = nullptr;
  if (make_conn(c, &k) != RSM_SUCCESS) {
    (void)dat_cr_reject(cr);
    return;
  }
  k->exporter = true;
  k->peer_node = node;
  std::lock_guard<std::mutex> lk(c->mu);
  RepPdata rep{};
  ExportSeg* s = nullptr;
  evaluate(c, rq, node, &rep, &s);
  k->seg = s;
  if (!dat_ok(dat_cr_accept(cr, k->ep, sizeof(rep), &rep))) {
    (void)dat_cr_reject(cr);  // the importer hears at once instead of timing out
    free_conn_resources(k);
    return;
  }
  c->conns[k->ep] = k;
  if (s != nullptr) s->conns.push_back(k);
}

void close_export_conn(Controller* c, Conn* k) {
  if (ExportSeg* s = k->seg; s != nullptr) {
    std::erase(s->conns, k);
    const size_t before = s->closing.size();
    std::erase(s->closing, k);
    if (s->closing.size() != before) {
      const uint64_t one = 1;
      (void)!write(s->wake_efd, &one, sizeof(one));
    }
  }
  c->conns.erase(k->ep);
  if (k->users > 0) {
    k->dead = true;
    k->seg = nullptr;
  } else {
    free_conn_resources(k);
  }
}

void on_conn_event(Controller* c, const DAT_EVENT& ev) {
  const auto& d = ev.event_data.connect_event_data;
  std::lock_guard<std::mutex> lk(c->mu);
  auto it = c->conns.find(d.ep_handle);
  if (it == c->conns.end()) return;
  Conn* k = it->second;
  if (k->exporter) {
    if (ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED) {
      k->established = true;
      // A refused request was accepted only to carry the reason: end it.
      if (k->seg == nullptr) (void)dat_ep_disconnect(k->ep, DAT_CLOSE_GRACEFUL_FLAG);
      c->cv.notify_all();
      return;
    }
    close_export_conn(c, k);
    return;
  }
  ImportSeg* im = k->imp;
  if (ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED && !k->established) {
    k->established = true;
    std::memset(&im->rep, 0, sizeof(im->rep));
    if (d.private_data != nullptr &&
        d.private_data_size >= static_cast<DAT_COUNT>(sizeof(RepPdata)))
      std::memcpy(&im->rep, d.private_data, sizeof(RepPdata));
    im->conn_result = 1;
  } else if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
    k->closed = true;
    if (im->conn_result == 1 && !im->aborted) {
      im->aborted = true;
      im->errors++;
      c->node_errors[im->node]++;
    }
    if (im->conn_result == 0) im->conn_result = -1;
    im->conn_event = ev.event_number;
  }
  c->cv.notify_all();
}

void on_dto(Controller* c, const DAT_EVENT& ev) {
  const auto& d = ev.event_data.dto_completion_event_data;
  std::lock_guard<std::mutex> lk(c->mu);
  auto it = c->conns.find(d.ep_handle);
  if (it == c->conns.end()) return;
  Conn* k = it->second;
  if (d.status != DAT_DTO_SUCCESS) return;  // flushed at disconnect
  const uint64_t slot = d.user_cookie.as_64;
  if (slot >= kSlots) return;
  SigMsg m{};
  if (d.transfered_length >= sizeof(m)) std::memcpy(&m, k->buf + slot * kSlotBytes, sizeof(m));
  if (m.magic == kMagic) {
    const bool acc = (m.flags & RSM_SIGPOST_NO_ACCUMULATE) == 0;
    if (k->exporter && k->seg != nullptr) k->seg->sig.add(acc);
    if (!k->exporter && k->imp != nullptr) k->imp->sig.add(acc);
  }
  (void)post_slot_recv(k, static_cast<uint32_t>(slot));
}

void service_loop(Controller* c) {
  for (;;) {
    DAT_EVENT ev{};
    DAT_COUNT n = 0;
    const DAT_RETURN r = dat_evd_wait(c->sevd, DAT_TIMEOUT_INFINITE, 1, &ev, &n);
    if (!dat_ok(r)) {
      {
        std::lock_guard<std::mutex> lk(c->mu);
        if (c->stopping) return;
      }
      // Not expected (the EVD lives as long as this thread); never spin on it.
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    switch (ev.event_number) {
      case DAT_SOFTWARE_EVENT: {
        std::lock_guard<std::mutex> lk(c->mu);
        if (c->stopping) return;
        break;
      }
      case DAT_CONNECTION_REQUEST_EVENT:
        on_cr(c, ev.event_data.cr_arrival_event_data.cr_handle);
        break;
      case DAT_DTO_COMPLETION_EVENT:
        on_dto(c, ev);
        break;
      case DAT_CONNECTION_EVENT_ESTABLISHED:
      case DAT_CONNECTION_EVENT_PEER_REJECTED:
      case DAT_CONNECTION_EVENT_NON_PEER_REJECTED:
      case DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR:
      case DAT_CONNECTION_EVENT_DISCONNECTED:
      case DAT_CONNECTION_EVENT_BROKEN:
      case DAT_CONNECTION_EVENT_TIMED_OUT:
      case DAT_CONNECTION_EVENT_UNREACHABLE:
        on_conn_event(c, ev);
        break;
      default:
        break;
    }
  }
}

// ------------------------------------------------------------ controllers

void teardown(Controller* c) {
  {
    std::lock_guard<std::mutex> lk(c->mu);
    c->stopping = true;
  }
  DAT_EVENT se{};
  se.event_number = DAT_SOFTWARE_EVENT;
  for (int tries = 0; c->service.joinable(); ++tries) {
    if (dat_ok(dat_evd_post_se(c->sevd, &se))) {
      c->service.join();
      break;
    }
    if (tries == 5000) {
      // The wake-up cannot be queued: leave the thread and its IA alone
      // rather than close what it still waits on.
      c->service.detach();
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // queue full: let it drain
  }
  for (auto& [ep, k] : c->conns) free_conn_resources(k);
  c->conns.clear();
  (void)dat_ia_close(c->ia, DAT_CLOSE_ABRUPT_FLAG);
  delete c;
}

// Drops one reference of either kind; closes the controller at zero.
void unref(Controller* c, bool user) {
  bool last = false;
  const std::string name = c->name;
  {
    std::lock_guard<std::mutex> g(g_mu);
    std::lock_guard<std::mutex> lk(c->mu);
    (user ? c->user_refs : c->seg_refs)--;
    if (c->user_refs == 0 && c->seg_refs == 0) {
      last = true;
      g_ctls.erase(c->name);
      g_live.erase(c);
      g_busy.insert(name);  // a new controller of this name waits for the IA to close
    }
  }
  if (!last) return;
  teardown(c);
  std::lock_guard<std::mutex> g(g_mu);
  g_busy.erase(name);
  g_ctls_cv.notify_all();
}

// Sets a controller up: its IA, PZ, service EVD, listener and service
// thread.  Called without g_mu (the name is in g_busy meanwhile).
int open_controller(const std::string& name, Controller** out) {
  auto* c = new (std::nothrow) Controller;
  if (c == nullptr) return RSMERR_INSUFFICIENT_MEM;
  std::string why;
  c->name = name;
  if (!dpdat::dat::lookup_ia(c->name, &c->cfg, &why)) {
    delete c;
    return RSMERR_CTLR_NOT_PRESENT;
  }
  c->node = c->cfg.node;
  c->page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  c->default_mode = creation_mode();
  if (const char* m = std::getenv("DPDAT_RSM_MAX_EXPORT"); m != nullptr && *m != '\0') {
    char* end = nullptr;
    const unsigned long v = std::strtoul(m, &end, 10);
    if (end != nullptr && *end == '\0' && v > 0) c->max_export = v;
  }
  DAT_RETURN r = dat_ia_open(const_cast<char*>(c->name.c_str()), 16, &c->async_evd, &c->ia);
  if (!dat_ok(r)) {
    delete c;
    return RSMERR_CTLR_NOT_PRESENT;
  }
  r = dat_ia_query(c->ia, nullptr, DAT_IA_ALL, &c->attr, 0, nullptr);
  if (dat_ok(r)) r = dat_pz_create(c->ia, &c->pz);
  if (dat_ok(r))
    r = dat_evd_create(c->ia, 4096, DAT_HANDLE_NULL,
                       static_cast<DAT_EVD_FLAGS>(DAT_EVD_CR_FLAG | DAT_EVD_CONNECTION_FLAG |
                                                  DAT_EVD_DTO_FLAG | DAT_EVD_SOFTWARE_FLAG),
                       &c->sevd);
  if (dat_ok(r)) r = dat_psp_create(c->ia, kRsmQual, c->sevd, DAT_PSP_CONSUMER_FLAG, &c->psp);
  if (!dat_ok(r)) {
    (void)dat_ia_close(c->ia, DAT_CLOSE_ABRUPT_FLAG);
    delete c;
    return RSMERR_INSUFFICIENT_RESOURCES;
  }
  c->user_refs = 1;
  c->service = std::thread(service_loop, c);
  *out = c;
  return RSM_SUCCESS;
}

Controller* ctl_ref(rsmapi_controller_handle_t h) {
  Controller* c = live<Controller>(h, Tag::kCtl);
  if (c == nullptr) return nullptr;
  std::lock_guard<std::mutex> lk(c->mu);
  c->seg_refs++;
  return c;
}

// ---------------------------------------------------------------- imports

int check_import(rsm_memseg_import_handle_t h, ImportSeg** out) {
  ImportSeg* im = live<ImportSeg>(h, Tag::kImport);
  if (im == nullptr) return RSMERR_BAD_SEG_HNDL;
  *out = im;
  return RSM_SUCCESS;
}

// Range and permission checks shared by every access.
int check_access(ImportSeg* im, off_t offset, size_t len, uint32_t need) {
  if ((im->perm & need) != need) return RSMERR_PERM_DENIED;
  if (offset < 0 || static_cast<uint64_t>(offset) > im->size) return RSMERR_BAD_OFFSET;
  if (len > im->size - static_cast<uint64_t>(offset)) return RSMERR_BAD_LENGTH;
  return RSM_SUCCESS;
}

// Records a failed access of im: counted for barriers, and the connection is
// over (an RC error ends it).
void access_failed(ImportSeg* im) {
  Controller* c = im->ctl;
  std::lock_guard<std::mutex> lk(c->mu);
  im->errors++;
  c->node_errors[im->node]++;
  if (!im->aborted) {
    im->aborted = true;
    (void)dat_ep_disconnect(im->conn->ep, DAT_CLOSE_ABRUPT_FLAG);
  }
}

bool is_aborted(ImportSeg* im) {
  std::lock_guard<std::mutex> lk(im->ctl->mu);
  return im->aborted;
}

// Completes the oldest put in flight (completions arrive in posting order).
// Called with op_mu held.
void reap_one(ImportSeg* im) {
  DAT_EVENT ev{};
  DAT_COUNT n = 0;
  const bool got = dat_ok(dat_evd_wait(im->conn->req_evd, kDtoUs, 1, &ev, &n));
  const bool ok =
      got && ev.event_number == DAT_DTO_COMPLETION_EVENT &&
      ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS &&
      ev.event_data.dto_completion_event_data.user_cookie.as_64 == im->in_flight.front().cookie;
  if (!got) {
    // No completion within kDtoUs: give the whole window up.
    access_failed(im);
    im->in_flight.clear();
    return;
  }
  im->in_flight.pop_front();
  if (!ok) access_failed(im);
}

// Waits until every put in flight has completed.  Called with op_mu held.
void drain(ImportSeg* im) {
  while (!im->in_flight.empty()) reap_one(im);
}

// One RDMA op between [local, local+len) (registered under lctx) and the
// segment at offset; waits for its completion (after those in flight).
// Called with op_mu held.
int rdma(ImportSeg* im, bool write, uint64_t offset, DAT_LMR_CONTEXT lctx, uint8_t* local,
         size_t len) {
  drain(im);
  if (is_aborted(im)) return RSMERR_CONN_ABORTED;
  DAT_LMR_TRIPLET l{};
  l.lmr_context = lctx;
  l.virtual_address = reinterpret_cast<uintptr_t>(local);
  l.segment_length = len;
  DAT_RMR_TRIPLET r{};
  r.rmr_context = im->rctx;
  r.target_address = im->raddr + offset;
  r.segment_length = len;
  DAT_DTO_COOKIE ck{};
  ck.as_64 = 0;
  const DAT_RETURN pr =
      write ? dat_ep_post_rdma_write(im->conn->ep, 1, &l, ck, &r, DAT_COMPLETION_DEFAULT_FLAG)
            : dat_ep_post_rdma_read(im->conn->ep, 1, &l, ck, &r, DAT_COMPLETION_DEFAULT_FLAG);
  if (dat_ok(pr) && wait_req(im->conn)) return RSM_SUCCESS;
  access_failed(im);
  return RSMERR_CONN_ABORTED;
}

// Explicit barrier mode: a put is copied into the ring and posted; it
// completes in the background and a barrier's close (or any synchronous
// access) waits for it and reports its failure.  Called with op_mu held.
int put_async(ImportSeg* im, uint64_t offset, const uint8_t* user, size_t len) {
  if (is_aborted(im)) return RSMERR_CONN_ABORTED;
  uint8_t* ring = im->bounce + kBounceBytes;
  size_t off = 0;
  for (;;) {
    if (im->in_flight.empty()) im->ring_tail = 0;
    off = im->ring_tail + len <= kRingBytes ? im->ring_tail : 0;
    bool free_here = im->in_flight.size() < kMaxInFlight;
    for (const auto& f : im->in_flight)
      if (off < f.off + f.len && f.off < off + len) free_here = false;
    if (free_here) break;
    reap_one(im);
    if (is_aborted(im)) return RSMERR_CONN_ABORTED;
  }
  std::memcpy(ring + off, user, len);
  DAT_LMR_TRIPLET l{};
  l.lmr_context = im->bounce_lctx;
  l.virtual_address = reinterpret_cast<uintptr_t>(ring + off);
  l.segment_length = len;
  DAT_RMR_TRIPLET r{};
  r.rmr_context = im->rctx;
  r.target_address = im->raddr + offset;
  r.segment_length = len;
  DAT_DTO_COOKIE ck{};
  ck.as_64 = im->next_cookie++;
  if (!dat_ok(dat_ep_post_rdma_write(im->conn->ep, 1, &l, ck, &r, DAT_COMPLETION_DEFAULT_FLAG))) {
    access_failed(im);
    return RSMERR_CONN_ABORTED;
  }
  im->in_flight.push_back({ck.as_64, off, len});
  im->ring_tail = off + len;
  return RSM_SUCCESS;
}

// Copying access through the bounce buffer.
int access_va(ImportSeg* im, bool write, uint64_t offset, uint8_t* user, size_t len) {
  while (len > 0) {
    const size_t n = std::min(len, kBounceBytes);
    if (write) std::memcpy(im->bounce, user, n);
    const int e = rdma(im, write, offset, im->bounce_lctx, im->bounce, n);
    if (e != RSM_SUCCESS) return e;
    if (!write) std::memcpy(user, im->bounce, n);
    user += n;
    offset += n;
    len -= n;
  }
  return RSM_SUCCESS;
}

int access_elems(rsm_memseg_import_handle_t h, off_t offset, void* datap, unsigned long count,
                 size_t width, bool write) {
  ImportSeg* im = nullptr;
  if (int e = check_import(h, &im); e != RSM_SUCCESS) return e;
  if (datap == nullptr) return RSMERR_BAD_ADDR;
  if ((reinterpret_cast<uintptr_t>(datap) & (width - 1)) != 0 ||
      (static_cast<uint64_t>(offset) & (width - 1)) != 0)
    return RSMERR_BAD_MEM_ALIGNMENT;
  if (count > SIZE_MAX / width) return RSMERR_BAD_LENGTH;
  const size_t len = count * width;
  if (int e = check_access(im, offset, len, write ? RSM_PERM_WRITE : RSM_PERM_READ);
      e != RSM_SUCCESS)
    return e;
  std::lock_guard<std::mutex> op(im->op_mu);
  bool explicit_mode = false;
  {
    std::lock_guard<std::mutex> lk(im->ctl->mu);
    explicit_mode = im->mode == RSM_BARRIER_MODE_EXPLICIT;
  }
  if (write && explicit_mode && len > 0 && len <= kRingBytes)
    return put_async(im, static_cast<uint64_t>(offset), static_cast<uint8_t*>(datap), len);
  return access_va(im, write, static_cast<uint64_t>(offset), static_cast<uint8_t*>(datap), len);
}

int access_sg(rsm_scat_gath_t* sg, bool write) {
  if (sg == nullptr) return RSMERR_BAD_SGIO;
  ImportSeg* im = nullptr;
  if (int e = check_import(sg->remote_handle, &im); e != RSM_SUCCESS) return e;
  if (sg->io_request_count == 0 || sg->io_request_count > RSM_MAX_SGIOREQS || sg->iovec == nullptr)
    return RSMERR_BAD_SGIO;
  sg->io_residual_count = sg->io_request_count;
  // Validate every request before moving a byte.
  for (unsigned long i = 0; i < sg->io_request_count; ++i) {
    const rsm_iovec_t& v = sg->iovec[i];
    if (v.io_type == RSM_HANDLE_TYPE) {
      LocalMem* m = live<LocalMem>(v.local.handle, Tag::kLocal);
      if (m == nullptr || m->ctl != im->ctl) return RSMERR_BAD_LOCALMEM_HNDL;
      if (v.local_offset > m->len || v.transfer_length > m->len - v.local_offset)
        return RSMERR_BAD_LENGTH;
    } else if (v.io_type == RSM_VA_TYPE) {
      if (v.local.vaddr == nullptr) return RSMERR_BAD_ADDR;
    } else {
      return RSMERR_BAD_SGIO;
    }
    if (v.remote_offset > static_cast<size_t>(INT64_MAX)) return RSMERR_BAD_OFFSET;
    if (int e = check_access(im, static_cast<off_t>(v.remote_offset), v.transfer_length,
                             write ? RSM_PERM_WRITE : RSM_PERM_READ);
        e != RSM_SUCCESS)
      return e;
  }
  std::lock_guard<std::mutex> op(im->op_mu);
  for (unsigned long i = 0; i < sg->io_request_count; ++i) {
    const rsm_iovec_t& v = sg->iovec[i];
    int e = RSM_SUCCESS;
    if (v.io_type == RSM_HANDLE_TYPE) {
      auto* m = static_cast<LocalMem*>(static_cast<void*>(v.local.handle));
      size_t done = 0;
      while (e == RSM_SUCCESS && done < v.transfer_length) {
        const size_t n = std::min(v.transfer_length - done, kDirectChunk);
        e = rdma(im, write, v.remote_offset + done, m->lctx,
                 reinterpret_cast<uint8_t*>(m->vaddr) + v.local_offset + done, n);
        done += n;
      }
    } else {
      e = access_va(im, write, v.remote_offset,
                    reinterpret_cast<uint8_t*>(v.local.vaddr) + v.local_offset, v.transfer_length);
    }
    if (e != RSM_SUCCESS) return e;
    sg->io_residual_count--;
  }
  if ((sg->flags & RSM_IMPLICIT_SIGPOST) != 0) {
    drain(im);
    if (is_aborted(im) || !send_signal(im->conn, im->segid, sg->flags & RSM_SIGPOST_NO_ACCUMULATE))
      return RSMERR_CONN_ABORTED;
  }
  return RSM_SUCCESS;
}

void free_import(ImportSeg* im) {
  Controller* c = im->ctl;
  live_del(im);
  {
    std::lock_guard<std::mutex> lk(c->mu);
    std::erase(c->imports, im);
  }
  if (im->conn != nullptr) {
    {
      std::lock_guard<std::mutex> lk(c->mu);
      c->conns.erase(im->conn->ep);
    }
    free_conn_resources(im->conn);
  }
  if (im->bounce_lmr != DAT_HANDLE_NULL) (void)dat_lmr_free(im->bounce_lmr);
  std::free(im->bounce);
  if (im->sig.efd >= 0) close(im->sig.efd);
  delete im;
  unref(c, false);
}

int map_conn_failure(DAT_EVENT_NUMBER n) {
  switch (n) {
    case DAT_CONNECTION_EVENT_NON_PEER_REJECTED:
    case DAT_CONNECTION_EVENT_PEER_REJECTED:
      return RSMERR_SEG_NOT_PUBLISHED;  // reachable, but nothing published there
    default:
      return RSMERR_REMOTE_NODE_UNREACHABLE;
  }
}

// Export side helpers.
int check_export(rsm_memseg_export_handle_t h, ExportSeg** out) {
  ExportSeg* s = live<ExportSeg>(h, Tag::kExport);
  if (s == nullptr) return RSMERR_BAD_SEG_HNDL;
  if (s->creator != getpid()) return RSMERR_NOT_CREATOR;
  *out = s;
  return RSM_SUCCESS;
}

// Copies and validates an ACL; sorted by node.
int copy_acl(const rsmapi_access_entry_t* acl, unsigned n, Acl* out) {
  if (n > 0 && acl == nullptr) return RSMERR_BAD_ACL;
  if (n > kMaxAcl) return RSMERR_INSUFFICIENT_RESOURCES;
  try {
    out->assign(acl, acl + n);
  } catch (const std::bad_alloc&) {
    return RSMERR_INSUFFICIENT_MEM;
  }
  for (const auto& e : *out) {
    const unsigned p = e.ae_permissions;
    if ((p & ~0777u) != 0 || !perm_digit_ok((p >> 6) & 7u) || !perm_digit_ok((p >> 3) & 7u) ||
        !perm_digit_ok(p & 7u))
      return RSMERR_BAD_ACL;
  }
  std::sort(out->begin(), out->end(),
            [](const rsmapi_access_entry_t& a, const rsmapi_access_entry_t& b) {
              return a.ae_node < b.ae_node;
            });
  for (size_t i = 1; i < out->size(); ++i)
    if ((*out)[i].ae_node == (*out)[i - 1].ae_node) return RSMERR_BAD_ACL;
  return RSM_SUCCESS;
}

int register_export(Controller* c, ExportSeg* s) {
  const uint32_t remote[3] = {DAT_MEM_PRIV_REMOTE_READ_FLAG, DAT_MEM_PRIV_REMOTE_WRITE_FLAG,
                              DAT_MEM_PRIV_REMOTE_READ_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG};
  for (int i = 0; i < 3; ++i) {
    DAT_REGION_DESCRIPTION reg{};
    reg.for_va = s->vaddr;
    DAT_LMR_CONTEXT lc = 0;
    DAT_VLEN rs = 0;
    DAT_VADDR ra = 0;
    const DAT_RETURN r =
        dat_lmr_create(c->ia, DAT_MEM_TYPE_VIRTUAL, reg, s->size, c->pz,
                       static_cast<DAT_MEM_PRIV_FLAGS>(DAT_MEM_PRIV_LOCAL_READ_FLAG |
                                                       DAT_MEM_PRIV_LOCAL_WRITE_FLAG | remote[i]),
                       &s->lmr[i].h, &lc, &s->lmr[i].rctx, &rs, &ra);
    if (!dat_ok(r)) {
      s->lmr[i] = Lmr{};
      free_export_lmrs(s);
      return resource_err(r);
    }
  }
  return RSM_SUCCESS;
}

// Unpublishes s (c->mu held): importers are disconnected, keys invalidated.
void do_unpublish(Controller* c, ExportSeg* s) {
  c->published.erase(s->segid);
  s->published = false;
  for (Conn* k : s->conns) {
    (void)dat_ep_disconnect(k->ep, DAT_CLOSE_GRACEFUL_FLAG);
    s->closing.push_back(k);
  }
  s->conns.clear();
  free_export_lmrs(s);
}

// Waits until every disconnect started by unpublish finished: the CM reports
// each one (acknowledged, or timed out after its retries) well within
// kClosingWait; past that the remaining endpoints are cut loose from s.
int wait_closing(ExportSeg* s, bool interruptible) {
  Controller* c = s->ctl;
  const auto deadline = std::chrono::steady_clock::now() + kClosingWait;
  for (;;) {
    {
      std::lock_guard<std::mutex> lk(c->mu);
      if (s->closing.empty()) return RSM_SUCCESS;
      if (std::chrono::steady_clock::now() >= deadline) {
        for (Conn* k : s->closing) k->seg = nullptr;
        s->closing.clear();
        return RSM_SUCCESS;
      }
    }
    pollfd p{s->wake_efd, POLLIN, 0};
    const int r = poll(&p, 1, 1000);
    if (r < 0 && errno == EINTR && interruptible) return RSMERR_INTERRUPTED;
    if (r > 0) {
      uint64_t v = 0;
      (void)!read(s->wake_efd, &v, sizeof(v));
    }
  }
}

Signals* signals_of(void* memseg, Controller** ctl) {
  if (ExportSeg* s = live<ExportSeg>(memseg, Tag::kExport); s != nullptr) {
    *ctl = s->ctl;
    return &s->sig;
  }
  if (ImportSeg* im = live<ImportSeg>(memseg, Tag::kImport); im != nullptr) {
    *ctl = im->ctl;
    return &im->sig;
  }
  return nullptr;
}

// Takes over the caller's controller reference (dropped on failure).
int connect_import(Controller* c, rsm_node_id_t node_id, rsm_memseg_id_t segment_id,
                   rsm_permission_t perm, bool hidden, ImportSeg** out) {
  uint32_t ip = 0;
  if (!ip_of_node(c, node_id, &ip)) {
    unref(c, false);
    return RSMERR_REMOTE_NODE_UNREACHABLE;
  }
  auto* im = new (std::nothrow) ImportSeg;
  if (im == nullptr) {
    unref(c, false);
    return RSMERR_INSUFFICIENT_MEM;
  }
  im->ctl = c;
  im->hidden = hidden;
  im->node = node_id;
  im->segid = segment_id;
  im->sig.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  im->bounce = static_cast<uint8_t*>(std::aligned_alloc(4096, kBounceBytes + kRingBytes));
  if (im->sig.efd < 0 || im->bounce == nullptr) {
    free_import(im);
    return RSMERR_INSUFFICIENT_RESOURCES;
  }
  DAT_REGION_DESCRIPTION reg{};
  reg.for_va = im->bounce;
  DAT_RMR_CONTEXT rc = 0;
  DAT_VLEN rs = 0;
  DAT_VADDR ra = 0;
  if (!dat_ok(dat_lmr_create(c->ia, DAT_MEM_TYPE_VIRTUAL, reg, kBounceBytes + kRingBytes, c->pz,
                             static_cast<DAT_MEM_PRIV_FLAGS>(DAT_MEM_PRIV_LOCAL_READ_FLAG |
                                                             DAT_MEM_PRIV_LOCAL_WRITE_FLAG),
                             &im->bounce_lmr, &im->bounce_lctx, &rc, &rs, &ra))) {
    im->bounce_lmr = DAT_HANDLE_NULL;
    free_import(im);
    return RSMERR_INSUFFICIENT_RESOURCES;
  }
  Conn* k = nullptr;
  if (int e = make_conn(c, &k); e != RSM_SUCCESS) {
    free_import(im);
    return e;
  }
  k->imp = im;
  k->peer_node = node_id;
  im->conn = k;
  {
    std::lock_guard<std::mutex> lk(c->mu);
    c->conns[k->ep] = k;
  }
  ReqPdata rq{kMagic, segment_id, perm, static_cast<uint32_t>(geteuid()),
              static_cast<uint32_t>(getegid())};
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(ip);
  if (!dat_ok(dat_ep_connect(k->ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&sin), kRsmQual,
                             kConnectUs, sizeof(rq), &rq, DAT_QOS_BEST_EFFORT,
                             DAT_CONNECT_DEFAULT_FLAG))) {
    free_import(im);
    return RSMERR_REMOTE_NODE_UNREACHABLE;
  }
  int result = 0;
  {
    std::unique_lock<std::mutex> lk(c->mu);
    // The CM reports within kConnectUs (timeout event); the cap is a backstop.
    c->cv.wait_for(lk, std::chrono::microseconds(kConnectUs) * 2,
                   [im] { return im->conn_result != 0; });
    result = im->conn_result;
  }
  int status = RSM_SUCCESS;
  if (result == 0) {
    status = RSMERR_REMOTE_NODE_UNREACHABLE;
  } else if (result < 0) {
    status = map_conn_failure(im->conn_event);
  } else if (im->rep.magic != kMagic) {
    status = RSMERR_REMOTE_NODE_UNREACHABLE;
  } else if (im->rep.status != RSM_SUCCESS) {
    status = im->rep.status;
  }
  if (status != RSM_SUCCESS) {
    if (result > 0) {
      (void)dat_ep_disconnect(k->ep, DAT_CLOSE_GRACEFUL_FLAG);
      std::unique_lock<std::mutex> lk(c->mu);
      c->cv.wait_for(lk, std::chrono::seconds(20), [k] { return k->closed; });
    }
    free_import(im);
    return status;
  }
  im->perm = im->rep.perm;
  im->rctx = im->rep.rmr_context;
  im->raddr = im->rep.addr;
  im->size = im->rep.len;
  if (!hidden) {
    std::lock_guard<std::mutex> lk(c->mu);
    c->imports.push_back(im);
  }
  *out = im;
  return RSM_SUCCESS;
}

void disconnect_import(ImportSeg* im) {
  Controller* c = im->ctl;
  {
    std::lock_guard<std::mutex> op(im->op_mu);
    drain(im);
    std::unique_lock<std::mutex> lk(c->mu);
    if (!im->conn->closed) {
      (void)dat_ep_disconnect(im->conn->ep, DAT_CLOSE_GRACEFUL_FLAG);
      Conn* k = im->conn;
      c->cv.wait_for(lk, std::chrono::seconds(20), [k] { return k->closed; });
    }
  }
  free_import(im);
}

// Publishes s under *idp (0: a generated ID, stored back) with acl.
int publish_locked(Controller* c, ExportSeg* s, Acl* acl, rsm_memseg_id_t* idp) {
  std::lock_guard<std::mutex> lk(c->mu);
  if (s->published) return RSMERR_SEG_ALREADY_PUBLISHED;
  rsm_memseg_id_t id = *idp;
  if (id != 0) {
    if (id <= RSM_DRIVER_PRIVATE_ID_END || id >= RSM_USER_APP_ID_BASE) return RSMERR_RESERVED_SEGID;
    if (id > kHpcEnd) return RSMERR_BAD_SEGID;
    if (c->published.count(id) != 0) return RSMERR_SEGID_IN_USE;
  }
  if (c->published.size() >= c->max_export) return RSMERR_INSUFFICIENT_RESOURCES;
  if (id == 0) {
    // Next free ID of the user-application range, wrapping within it.
    const uint64_t span = uint64_t{RSM_USER_APP_ID_END} - RSM_USER_APP_ID_BASE + 1;
    for (uint64_t tries = 0; tries < span && id == 0; ++tries) {
      const rsm_memseg_id_t cand = c->next_id;
      c->next_id = cand == RSM_USER_APP_ID_END ? RSM_USER_APP_ID_BASE : cand + 1;
      if (c->published.count(cand) == 0) id = cand;
    }
    if (id == 0) return RSMERR_INSUFFICIENT_RESOURCES;
  }
  if (int e = register_export(c, s); e != RSM_SUCCESS) return e;
  s->acl = std::move(*acl);
  s->segid = id;
  s->published = true;
  c->published[id] = s;
  *idp = id;
  return RSM_SUCCESS;
}

}  // namespace dpdat::rsm

using namespace dpdat::rsm;

// =============================================================== C entry points
extern "C" {

int rsm_get_controller(char* name, rsmapi_controller_handle_t* controller) {
  if (name == nullptr || controller == nullptr) return RSMERR_BAD_ADDR;
  const std::string key = name;
  {
    std::unique_lock<std::mutex> g(g_mu);
    for (;;) {
      if (auto it = g_ctls.find(key); it != g_ctls.end()) {
        std::lock_guard<std::mutex> lk(it->second->mu);
        it->second->user_refs++;
        *controller = reinterpret_cast<rsmapi_controller_handle_t>(it->second);
        return RSM_SUCCESS;
      }
      if (g_busy.count(key) == 0) break;
      g_ctls_cv.wait(g);  // another thread opens or closes this name's controller
    }
    g_busy.insert(key);  // this thread opens it
  }
  Controller* c = nullptr;
  const int e = open_controller(key, &c);
  std::lock_guard<std::mutex> g(g_mu);
  g_busy.erase(key);
  g_ctls_cv.notify_all();
  if (e != RSM_SUCCESS) return e;
  g_ctls[key] = c;
  g_live[c] = Tag::kCtl;
  *controller = reinterpret_cast<rsmapi_controller_handle_t>(c);
  return RSM_SUCCESS;
}

int rsm_get_controller_attr(rsmapi_controller_handle_t h, rsmapi_controller_attr_t* attr) {
  Controller* c = live<Controller>(h, Tag::kCtl);
  if (c == nullptr) return RSMERR_BAD_CTLR_HNDL;
  if (attr == nullptr) return RSMERR_BAD_ADDR;
  std::memset(attr, 0, sizeof(*attr));
  attr->attr_direct_access_sizes = RSM_DAS8 | RSM_DAS16 | RSM_DAS32 | RSM_DAS64;
  attr->attr_atomic_sizes = 0;
  attr->attr_page_size = c->page;
  attr->attr_max_export_segment_size = static_cast<size_t>(c->attr.max_lmr_block_size);
  attr->attr_tot_export_segment_size = static_cast<size_t>(c->attr.max_lmr_block_size);
  attr->attr_max_export_segments = c->max_export;
  attr->attr_max_import_map_size = map_max_size(c);
  attr->attr_tot_import_map_size = attr->attr_max_import_map_size == 0 ? 0 : SIZE_MAX;
  attr->attr_max_import_segments = static_cast<unsigned long>(c->attr.max_eps);
  return RSM_SUCCESS;
}

int rsm_release_controller(rsmapi_controller_handle_t h) {
  Controller* c = live<Controller>(h, Tag::kCtl);
  if (c == nullptr) return RSMERR_BAD_CTLR_HNDL;
  {
    std::lock_guard<std::mutex> lk(c->mu);
    if (c->user_refs == 0) return RSMERR_BAD_CTLR_HNDL;
  }
  unref(c, true);
  return RSM_SUCCESS;
}

int rsm_get_interconnect_topology(rsm_topology_t** topology) {
  if (topology == nullptr) return RSMERR_BAD_TOPOLOGY_PTR;
  struct Remote {
    std::string name;
    uint32_t ip, node;
  };
  std::vector<Remote> all;
  std::string why;
  for (const auto& n : dpdat::dat::list_ia_names()) {
    dpdat::dat::IfaceConfig cfg;
    if (dpdat::dat::lookup_ia(n, &cfg, &why)) all.push_back({n, cfg.ip, cfg.node});
  }
  std::vector<Controller*> locals;
  {
    std::lock_guard<std::mutex> g(g_mu);
    for (auto& [n, c] : g_ctls) locals.push_back(c);
  }
  // One block: header, pointer array, then each controller's connections.
  size_t bytes = sizeof(rsm_topology_t) + locals.size() * sizeof(rsm_connections_t*);
  std::vector<size_t> offs;
  std::vector<std::vector<const Remote*>> rem(locals.size());
  for (size_t i = 0; i < locals.size(); ++i) {
    for (const Remote& r : all)
      if (r.ip != locals[i]->cfg.ip) rem[i].push_back(&r);
    bytes = (bytes + 7) & ~size_t{7};
    offs.push_back(bytes);
    bytes += sizeof(rsm_connections_t) + rem[i].size() * sizeof(rsm_remote_cntlr_t);
  }
  auto* blk = static_cast<uint8_t*>(std::calloc(1, bytes));
  if (blk == nullptr) return RSMERR_INSUFFICIENT_MEM;
  auto* t = reinterpret_cast<rsm_topology_t*>(blk);
  t->topology_hdr.local_nodeid = locals.empty() ? 0 : locals.front()->node;
  t->topology_hdr.local_cntlr_count = static_cast<unsigned>(locals.size());
  for (size_t i = 0; i < locals.size(); ++i) {
    auto* cn = reinterpret_cast<rsm_connections_t*>(blk + offs[i]);
    t->connections[i] = cn;
    std::snprintf(cn->hdr.cntlr_name, sizeof(cn->hdr.cntlr_name), "%s", locals[i]->name.c_str());
    cn->hdr.local_hwaddr = locals[i]->cfg.ip;
    cn->hdr.remote_cntlr_count = static_cast<int>(rem[i].size());
    for (size_t j = 0; j < rem[i].size(); ++j) {
      rsm_remote_cntlr_t& rc = cn->remote_cntlr[j];
      rc.remote_nodeid = rem[i][j]->node;
      std::snprintf(rc.remote_cntlrname, sizeof(rc.remote_cntlrname), "%s",
                    rem[i][j]->name.c_str());
      rc.remote_hwaddr = rem[i][j]->ip;
      rc.connection_state = RSM_CONNECTION_ACTIVE;
    }
  }
  *topology = t;
  return RSM_SUCCESS;
}

void rsm_free_interconnect_topology(rsm_topology_t* topology) { std::free(topology); }

// ------------------------------------------------------------------ export

int rsm_memseg_export_create(rsmapi_controller_handle_t h, rsm_memseg_export_handle_t* memseg,
                             void* vaddr, size_t size, unsigned int flags) {
  if (live<Controller>(h, Tag::kCtl) == nullptr) return RSMERR_BAD_CTLR_HNDL;
  if (memseg == nullptr || vaddr == nullptr) return RSMERR_BAD_ADDR;
  if ((flags & ~static_cast<unsigned>(RSM_ALLOW_REBIND | RSM_CREATE_SEG_DONTWAIT)) != 0)
    return RSMERR_BAD_MODE;
  Controller* c = ctl_ref(h);
  if (c == nullptr) return RSMERR_BAD_CTLR_HNDL;
  if ((reinterpret_cast<uintptr_t>(vaddr) & (c->page - 1)) != 0) {
    unref(c, false);
    return RSMERR_BAD_MEM_ALIGNMENT;
  }
  if (size == 0 || (size & (c->page - 1)) != 0 || size > c->attr.max_lmr_block_size) {
    unref(c, false);
    return RSMERR_BAD_LENGTH;
  }
  auto* s = new (std::nothrow) ExportSeg;
  if (s == nullptr) {
    unref(c, false);
    return RSMERR_INSUFFICIENT_MEM;
  }
  s->ctl = c;
  s->creator = getpid();
  s->vaddr = static_cast<uint8_t*>(vaddr);
  s->size = size;
  s->flags = flags;
  s->wake_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  s->sig.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->wake_efd < 0 || s->sig.efd < 0) {
    if (s->wake_efd >= 0) close(s->wake_efd);
    if (s->sig.efd >= 0) close(s->sig.efd);
    delete s;
    unref(c, false);
    return RSMERR_INSUFFICIENT_RESOURCES;
  }
  live_add(s, Tag::kExport);
  *memseg = reinterpret_cast<rsm_memseg_export_handle_t>(s);
  return RSM_SUCCESS;
}

int rsm_memseg_export_destroy(rsm_memseg_export_handle_t h) {
  ExportSeg* s = nullptr;
  if (int e = check_export(h, &s); e != RSM_SUCCESS) return e;
  Controller* c = s->ctl;
  {
    std::lock_guard<std::mutex> lk(c->mu);
    if (s->sig.pollfd_refs > 0) return RSMERR_POLLFD_IN_USE;
    if (s->published) do_unpublish(c, s);
  }
  (void)wait_closing(s, false);  // the service thread still names s until then
  live_del(s);
  close(s->wake_efd);
  close(s->sig.efd);
  delete s;
  unref(c, false);
  return RSM_SUCCESS;
}

int rsm_memseg_export_rebind(rsm_memseg_export_handle_t h, void* vaddr, off_t off, size_t size) {
  ExportSeg* s = nullptr;
  if (int e = check_export(h, &s); e != RSM_SUCCESS) return e;
  if (vaddr == nullptr) return RSMERR_BAD_ADDR;
  Controller* c = s->ctl;
  if ((s->flags & RSM_ALLOW_REBIND) == 0) return RSMERR_REBIND_NOT_ALLOWED;
  if ((reinterpret_cast<uintptr_t>(vaddr) & (c->page - 1)) != 0) return RSMERR_BAD_MEM_ALIGNMENT;
  if (off != 0) return RSMERR_BAD_OFFSET;
  if (size != s->size) return RSMERR_BAD_LENGTH;
  std::lock_guard<std::mutex> lk(c->mu);
  if (!s->conns.empty() || !s->closing.empty()) return RSMERR_REBIND_NOT_ALLOWED;
  uint8_t* old = s->vaddr;
  s->vaddr = static_cast<uint8_t*>(vaddr);
  if (s->published) {
    free_export_lmrs(s);
    if (int e = register_export(c, s); e != RSM_SUCCESS) {
      s->vaddr = old;
      if (register_export(c, s) != RSM_SUCCESS) do_unpublish(c, s);
      return e;
    }
  }
  return RSM_SUCCESS;
}

int rsm_memseg_export_publish(rsm_memseg_export_handle_t h, rsm_memseg_id_t* segment_id,
                              rsmapi_access_entry_t access_list[],
                              unsigned int access_list_length) {
  ExportSeg* s = nullptr;
  if (int e = check_export(h, &s); e != RSM_SUCCESS) return e;
  if (segment_id == nullptr) return RSMERR_BAD_ADDR;
  Acl acl;
  if (int e = copy_acl(access_list, access_list_length, &acl); e != RSM_SUCCESS) return e;
  Controller* c = s->ctl;
  rsm_memseg_id_t id = *segment_id;  // user memory: read and written without c->mu
  const int e = publish_locked(c, s, &acl, &id);
  if (e == RSM_SUCCESS) *segment_id = id;
  return e;
}

int rsm_memseg_export_republish(rsm_memseg_export_handle_t h, rsmapi_access_entry_t access_list[],
                                unsigned int access_list_length) {
  ExportSeg* s = nullptr;
  if (int e = check_export(h, &s); e != RSM_SUCCESS) return e;
  Controller* c = s->ctl;
  {
    std::lock_guard<std::mutex> lk(c->mu);
    if (!s->published) return RSMERR_SEG_NOT_PUBLISHED;
  }
  Acl acl;
  if (int e = copy_acl(access_list, access_list_length, &acl); e != RSM_SUCCESS) return e;
  std::lock_guard<std::mutex> lk(c->mu);
  if (!s->published) return RSMERR_SEG_NOT_PUBLISHED;
  // Connection requests are judged under c->mu: every one judged after this
  // point sees the new list; granted imports are left alone.
  s->acl.swap(acl);
  return RSM_SUCCESS;
}

int rsm_memseg_export_unpublish(rsm_memseg_export_handle_t h) {
  ExportSeg* s = nullptr;
  if (int e = check_export(h, &s); e != RSM_SUCCESS) return e;
  Controller* c = s->ctl;
  {
    std::lock_guard<std::mutex> lk(c->mu);
    if (!s->published) return RSMERR_SEG_NOT_PUBLISHED;
    do_unpublish(c, s);
  }
  return wait_closing(s, true);
}

// ------------------------------------------------------------------ import

int rsm_memseg_import_connect(rsmapi_controller_handle_t h, rsm_node_id_t node_id,
                              rsm_memseg_id_t segment_id, rsm_permission_t perm,
                              rsm_memseg_import_handle_t* im_memseg) {
  if (live<Controller>(h, Tag::kCtl) == nullptr) return RSMERR_BAD_CTLR_HNDL;
  if (im_memseg == nullptr) return RSMERR_BAD_ADDR;
  if ((perm & ~static_cast<rsm_permission_t>(RSM_PERM_RDWR)) != 0) return RSMERR_PERM_DENIED;
  Controller* c = ctl_ref(h);
  if (c == nullptr) return RSMERR_BAD_CTLR_HNDL;
  ImportSeg* im = nullptr;
  if (int e = connect_import(c, node_id, segment_id, perm, false, &im); e != RSM_SUCCESS) return e;
  live_add(im, Tag::kImport);
  *im_memseg = reinterpret_cast<rsm_memseg_import_handle_t>(im);
  return RSM_SUCCESS;
}

int rsm_memseg_import_disconnect(rsm_memseg_import_handle_t h) {
  ImportSeg* im = nullptr;
  if (int e = check_import(h, &im); e != RSM_SUCCESS) return e;
  {
    std::lock_guard<std::mutex> op(im->op_mu);
    if (im->map != nullptr) return RSMERR_SEG_STILL_MAPPED;
    std::lock_guard<std::mutex> lk(im->ctl->mu);
    if (im->sig.pollfd_refs > 0) return RSMERR_POLLFD_IN_USE;
  }
  disconnect_import(im);
  return RSM_SUCCESS;
}

int rsm_memseg_import_get(rsm_memseg_import_handle_t h, off_t offset, void* dst, size_t length) {
  return access_elems(h, offset, dst, length, 1, false);
}
int rsm_memseg_import_get8(rsm_memseg_import_handle_t h, off_t o, uint8_t* d, unsigned long n) {
  return access_elems(h, o, d, n, 1, false);
}
int rsm_memseg_import_get16(rsm_memseg_import_handle_t h, off_t o, uint16_t* d, unsigned long n) {
  return access_elems(h, o, d, n, 2, false);
}
int rsm_memseg_import_get32(rsm_memseg_import_handle_t h, off_t o, uint32_t* d, unsigned long n) {
  return access_elems(h, o, d, n, 4, false);
}
int rsm_memseg_import_get64(rsm_memseg_import_handle_t h, off_t o, uint64_t* d, unsigned long n) {
  return access_elems(h, o, d, n, 8, false);
}
int rsm_memseg_import_put(rsm_memseg_import_handle_t h, off_t offset, void* src, size_t length) {
  return access_elems(h, offset, src, length, 1, true);
}
int rsm_memseg_import_put8(rsm_memseg_import_handle_t h, off_t o, uint8_t* d, unsigned long n) {
  return access_elems(h, o, d, n, 1, true);
}
int rsm_memseg_import_put16(rsm_memseg_import_handle_t h, off_t o, uint16_t* d, unsigned long n) {
  return access_elems(h, o, d, n, 2, true);
}
int rsm_memseg_import_put32(rsm_memseg_import_handle_t h, off_t o, uint32_t* d, unsigned long n) {
  return access_elems(h, o, d, n, 4, true);
}
int rsm_memseg_import_put64(rsm_memseg_import_handle_t h, off_t o, uint64_t* d, unsigned long n) {
  return access_elems(h, o, d, n, 8, true);
}
int rsm_memseg_import_getv(rsm_scat_gath_t* sg) { return access_sg(sg, false); }
int rsm_memseg_import_putv(rsm_scat_gath_t* sg) { return access_sg(sg, true); }

int rsm_memseg_import_map(rsm_memseg_import_handle_t h, void** address, rsm_attribute_t attr,
                          rsm_permission_t perm, off_t offset, size_t length) {
  ImportSeg* im = nullptr;
  if (int e = check_import(h, &im); e != RSM_SUCCESS) return e;
  if (address == nullptr) return RSMERR_BAD_ADDR;
  std::lock_guard<std::mutex> op(im->op_mu);
  if (im->map != nullptr) return RSMERR_SEG_ALREADY_MAPPED;
  drain(im);
  return map_create(im, address, attr, perm, offset, length);
}

int rsm_memseg_import_unmap(rsm_memseg_import_handle_t h) {
  ImportSeg* im = nullptr;
  if (int e = check_import(h, &im); e != RSM_SUCCESS) return e;
  std::lock_guard<std::mutex> op(im->op_mu);
  if (im->map == nullptr) return RSMERR_SEG_NOT_MAPPED;
  return map_destroy(im);
}

int rsm_memseg_import_get_mode(rsm_memseg_import_handle_t h, rsm_barrier_mode_t* mode) {
  ImportSeg* im = nullptr;
  if (int e = check_import(h, &im); e != RSM_SUCCESS) return e;
  if (mode == nullptr) return RSMERR_BAD_ADDR;
  rsm_barrier_mode_t m = RSM_BARRIER_MODE_IMPLICIT;
  {
    std::lock_guard<std::mutex> lk(im->ctl->mu);
    m = im->mode;
  }
  *mode = m;  // user memory (perhaps a mapping's page) is touched without a lock held
  return RSM_SUCCESS;
}

int rsm_memseg_import_set_mode(rsm_memseg_import_handle_t h, rsm_barrier_mode_t mode) {
  ImportSeg* im = nullptr;
  if (int e = check_import(h, &im); e != RSM_SUCCESS) return e;
  if (mode != RSM_BARRIER_MODE_EXPLICIT && mode != RSM_BARRIER_MODE_IMPLICIT)
    return RSMERR_BAD_MODE;
  std::lock_guard<std::mutex> lk(im->ctl->mu);
  im->mode = mode;
  return RSM_SUCCESS;
}

// ----------------------------------------------------------------- signals

int rsm_intr_signal_post(void* memseg, unsigned int flags) {
  const unsigned f = flags & RSM_SIGPOST_NO_ACCUMULATE;
  if (ImportSeg* im = live<ImportSeg>(memseg, Tag::kImport); im != nullptr) {
    std::lock_guard<std::mutex> op(im->op_mu);
    drain(im);  // puts in flight reach the exporter before the signal
    if (is_aborted(im)) return RSMERR_CONN_ABORTED;
    return send_signal(im->conn, im->segid, f) ? RSM_SUCCESS : RSMERR_CONN_ABORTED;
  }
  if (ExportSeg* s = live<ExportSeg>(memseg, Tag::kExport); s != nullptr) {
    // Every granted importer, once its connection is up (an accept is
    // complete when the importer's RTU arrives).  Sends run outside c->mu so
    // a slow importer holds up only this call; an importer that goes away
    // meanwhile simply misses the signal.
    Controller* c = s->ctl;
    std::vector<Conn*> to;
    rsm_memseg_id_t segid = 0;
    {
      std::unique_lock<std::mutex> lk(c->mu);
      if (!s->published) return RSMERR_SEG_NOT_PUBLISHED;
      c->cv.wait_for(lk, kEstablishWait, [s] {
        return std::all_of(s->conns.begin(), s->conns.end(),
                           [](const Conn* k) { return k->established; });
      });
      for (Conn* k : s->conns) {
        if (!k->established) continue;
        k->users++;
        to.push_back(k);
      }
      segid = s->segid;
    }
    for (Conn* k : to) (void)send_signal(k, segid, f);
    std::lock_guard<std::mutex> lk(c->mu);
    for (Conn* k : to)
      if (--k->users == 0 && k->dead) free_conn_resources(k);
    return RSM_SUCCESS;
  }
  return RSMERR_BAD_SEG_HNDL;
}

int rsm_intr_signal_wait(void* memseg, int timeout) {
  Controller* c = nullptr;
  Signals* sg = signals_of(memseg, &c);
  if (sg == nullptr) return RSMERR_BAD_SEG_HNDL;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout);
  for (;;) {
    int fd = -1;
    {
      std::lock_guard<std::mutex> lk(c->mu);
      if (sg->take()) return RSM_SUCCESS;
      fd = sg->efd;
    }
    int ms = -1;
    if (timeout >= 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return RSMERR_TIMEOUT;
      ms = static_cast<int>(left.count());
    }
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) return RSMERR_INTERRUPTED;
    if (r == 0 && timeout >= 0) {
      std::lock_guard<std::mutex> lk(c->mu);
      return sg->take() ? RSM_SUCCESS : RSMERR_TIMEOUT;
    }
  }
}

int rsm_memseg_get_pollfd(void* memseg, struct pollfd* fd) {
  Controller* c = nullptr;
  Signals* sg = signals_of(memseg, &c);
  if (sg == nullptr) return RSMERR_BAD_SEG_HNDL;
  if (fd == nullptr) return RSMERR_BAD_ADDR;
  int efd = -1;
  {
    std::lock_guard<std::mutex> lk(c->mu);
    sg->pollfd_refs++;
    efd = sg->efd;
  }
  fd->fd = efd;
  fd->events = POLLIN | POLLRDNORM;  // an eventfd reports POLLIN
  fd->revents = 0;
  return RSM_SUCCESS;
}

int rsm_memseg_release_pollfd(void* memseg) {
  Controller* c = nullptr;
  Signals* sg = signals_of(memseg, &c);
  if (sg == nullptr) return RSMERR_BAD_SEG_HNDL;
  std::lock_guard<std::mutex> lk(c->mu);
  if (sg->pollfd_refs > 0) sg->pollfd_refs--;
  return RSM_SUCCESS;
}

int rsm_intr_signal_wait_pollfd(struct pollfd fds[], nfds_t nfds, int timeout, int* numfdsp) {
  if (fds == nullptr && nfds > 0) return RSMERR_BAD_ADDR;
  const int r = poll(fds, nfds, timeout);
  if (r < 0) return errno == EINTR ? RSMERR_INTERRUPTED : RSMERR_BAD_ADDR;
  if (r == 0) {
    if (numfdsp != nullptr) *numfdsp = 0;
    return RSMERR_TIMEOUT;
  }
  // Consume one signal for each ready fd that belongs to a segment.
  std::vector<std::pair<Controller*, Signals*>> segs;
  {
    std::lock_guard<std::mutex> g(g_mu);
    for (auto& [p, t] : g_live) {
      if (t == Tag::kExport) {
        auto* s = static_cast<ExportSeg*>(const_cast<void*>(p));
        segs.emplace_back(s->ctl, &s->sig);
      } else if (t == Tag::kImport) {
        auto* im = static_cast<ImportSeg*>(const_cast<void*>(p));
        segs.emplace_back(im->ctl, &im->sig);
      }
    }
    int ready = 0;
    for (nfds_t i = 0; i < nfds; ++i) {
      if (fds[i].revents == 0) continue;
      for (auto& [c, sg] : segs) {
        if (sg->efd != fds[i].fd) continue;
        std::lock_guard<std::mutex> lk(c->mu);
        if (!sg->take()) fds[i].revents = 0;  // another waiter took it
      }
      if (fds[i].revents != 0) ready++;
    }
    if (numfdsp != nullptr) *numfdsp = ready;
  }
  return RSM_SUCCESS;
}

// ------------------------------------------------------------ local memory

int rsm_create_localmemory_handle(rsmapi_controller_handle_t h, rsm_localmemory_handle_t* handle,
                                  char* vaddr, size_t length) {
  if (live<Controller>(h, Tag::kCtl) == nullptr) return RSMERR_BAD_CTLR_HNDL;
  if (handle == nullptr || vaddr == nullptr) return RSMERR_BAD_ADDR;
  if (length == 0) return RSMERR_BAD_LENGTH;
  Controller* c = ctl_ref(h);
  if (c == nullptr) return RSMERR_BAD_CTLR_HNDL;
  auto* m = new (std::nothrow) LocalMem;
  if (m == nullptr) {
    unref(c, false);
    return RSMERR_INSUFFICIENT_MEM;
  }
  m->ctl = c;
  m->vaddr = vaddr;
  m->len = length;
  DAT_REGION_DESCRIPTION reg{};
  reg.for_va = vaddr;
  DAT_RMR_CONTEXT rc = 0;
  DAT_VLEN rs = 0;
  DAT_VADDR ra = 0;
  const DAT_RETURN r = dat_lmr_create(
      c->ia, DAT_MEM_TYPE_VIRTUAL, reg, length, c->pz,
      static_cast<DAT_MEM_PRIV_FLAGS>(DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG),
      &m->lmr, &m->lctx, &rc, &rs, &ra);
  if (!dat_ok(r)) {
    delete m;
    unref(c, false);
    return resource_err(r);
  }
  live_add(m, Tag::kLocal);
  *handle = reinterpret_cast<rsm_localmemory_handle_t>(m);
  return RSM_SUCCESS;
}

int rsm_free_localmemory_handle(rsmapi_controller_handle_t h, rsm_localmemory_handle_t handle) {
  if (live<Controller>(h, Tag::kCtl) == nullptr) return RSMERR_BAD_CTLR_HNDL;
  LocalMem* m = live<LocalMem>(handle, Tag::kLocal);
  if (m == nullptr || m->ctl != reinterpret_cast<Controller*>(h)) return RSMERR_BAD_LOCALMEM_HNDL;
  live_del(m);
  (void)dat_lmr_free(m->lmr);
  Controller* c = m->ctl;
  delete m;
  unref(c, false);
  return RSM_SUCCESS;
}

}  // extern "C"
