// Import side: connect (one RC endpoint per import, judged by the
// exporter), disconnect, the barrier mode, and the map/unmap entry points
// (the mapping itself is import_map.cpp).
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

namespace dpdat::rsm {

int check_import(rsm_memseg_import_handle_t h, ImportSeg** out) {
  ImportSeg* im = live<ImportSeg>(h, Tag::kImport);
  if (im == nullptr) return RSMERR_BAD_SEG_HNDL;
  *out = im;
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
  ReqPdata rq{kMagic,
              segment_id,
              perm,
              static_cast<uint32_t>(geteuid()),
              static_cast<uint32_t>(getegid()),
              hidden ? kReqMapping : 0u};
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

}  // namespace dpdat::rsm

using namespace dpdat::rsm;

extern "C" {

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

}  // extern "C"
