// Controllers: the registry of live handles, one controller per IA name (its
// IA, PZ, service EVD, listener and service thread), node IDs, the topology
// and local memory handles.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "objects.hpp"
#include "settings/settings.hpp"

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
  if (const auto m = settings::get(settings::Var::kRsmMaxExport)) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(m->c_str(), &end, 10);
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

}  // namespace dpdat::rsm

using namespace dpdat::rsm;

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

int rsm_create_localmemory_handle(rsmapi_controller_handle_t h, rsm_localmemory_handle_t* handle,
                                  char* vaddr, size_t length) {
  if (live<Controller>(h, Tag::kCtl) == nullptr) return RSMERR_BAD_CTLR_HNDL;
  if (handle == nullptr || vaddr == nullptr) return RSMERR_BAD_ADDR;
  if (length == 0) return RSMERR_BAD_LENGTH;
  if (map_overlaps(vaddr, length)) return RSMERR_BAD_ADDR;
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
