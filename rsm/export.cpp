// Export side: segments, their registrations (one LMR per permission kind,
// so the exporter's transport refuses what a grant does not cover), ACL
// copies, publish / republish / unpublish.
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

void free_export_lmrs(ExportSeg* s) {
  for (Lmr& l : s->lmr) {
    if (l.h != DAT_HANDLE_NULL) (void)dat_lmr_free(l.h);
    l = Lmr{};
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

extern "C" {

int rsm_memseg_export_create(rsmapi_controller_handle_t h, rsm_memseg_export_handle_t* memseg,
                             void* vaddr, size_t size, unsigned int flags) {
  if (live<Controller>(h, Tag::kCtl) == nullptr) return RSMERR_BAD_CTLR_HNDL;
  if (memseg == nullptr || vaddr == nullptr || map_overlaps(vaddr, size)) return RSMERR_BAD_ADDR;
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
  if (vaddr == nullptr || map_overlaps(vaddr, s->size)) return RSMERR_BAD_ADDR;
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

}  // extern "C"
