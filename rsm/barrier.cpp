// Import barriers.  A barrier covers its segment's import, or for a node
// barrier every import from the same node through the same controller.
// Closing (or ordering) completes the puts in flight it covers and writes
// back the dirty pages of the mappings it covers; opening (and init) drops
// the clean pages of those mappings, so the next loads fetch the exporter's
// data as of then.
#include "objects.hpp"

namespace dpdat::rsm {
namespace {

Barrier* barrier_of(rsmapi_barrier_t* b) {
  if (b == nullptr) return nullptr;
  return live<Barrier>(b->privdata, Tag::kBarrier);
}

bool node_wide(const Barrier* b) {
  return b->type == RSM_BARRIER_NODE || b->type == RSM_BARRIER_NODE_THREAD;
}

std::vector<ImportSeg*> covered(const Barrier* b) {
  std::vector<ImportSeg*> out;
  if (node_wide(b)) {
    Controller* c = b->imp->ctl;
    std::lock_guard<std::mutex> lk(c->mu);
    for (ImportSeg* im : c->imports)
      if (im->node == b->imp->node) out.push_back(im);
  } else {
    out.push_back(b->imp);
  }
  return out;
}

// Completes the puts the barrier covers and writes back its mappings' dirty
// pages; false when a write-back failed.
bool barrier_drain(const Barrier* b) {
  bool ok = true;
  for (ImportSeg* im : covered(b)) {
    if (live<ImportSeg>(im, Tag::kImport) == nullptr) continue;
    std::lock_guard<std::mutex> op(im->op_mu);
    drain(im);
    if (im->map != nullptr && map_flush(im) != RSM_SUCCESS) ok = false;
  }
  return ok;
}

void barrier_invalidate(const Barrier* b) {
  for (ImportSeg* im : covered(b)) {
    if (live<ImportSeg>(im, Tag::kImport) == nullptr) continue;
    std::lock_guard<std::mutex> op(im->op_mu);
    if (im->map != nullptr) (void)map_invalidate(im);
  }
}

uint64_t barrier_count(const Barrier* b) {
  Controller* c = b->imp->ctl;
  std::lock_guard<std::mutex> lk(c->mu);
  if (node_wide(b)) return c->node_errors[b->imp->node];
  return b->imp->errors;
}

}  // namespace
}  // namespace dpdat::rsm

using namespace dpdat::rsm;

extern "C" {

int rsm_memseg_import_init_barrier(rsm_memseg_import_handle_t h, rsm_barrier_type_t type,
                                   rsmapi_barrier_t* barrier) {
  ImportSeg* im = nullptr;
  if (int e = check_import(h, &im); e != RSM_SUCCESS) return e;
  if (barrier == nullptr) return RSMERR_BAD_BARRIER_PTR;
  if (type != RSM_BARRIER_SEGMENT && type != RSM_BARRIER_NODE &&
      type != RSM_BARRIER_SEGMENT_THREAD && type != RSM_BARRIER_NODE_THREAD)
    return RSMERR_BAD_MODE;
  auto* b = new (std::nothrow) Barrier;
  if (b == nullptr) return RSMERR_INSUFFICIENT_MEM;
  b->imp = im;
  b->type = type;
  live_add(b, Tag::kBarrier);
  barrier->seg = im;
  barrier->gnum = 0;
  barrier->privdata = b;
  barrier_invalidate(b);
  return RSM_SUCCESS;
}

int rsm_memseg_import_open_barrier(rsmapi_barrier_t* barrier) {
  if (barrier == nullptr) return RSMERR_BAD_BARRIER_PTR;
  Barrier* b = barrier_of(barrier);
  if (b == nullptr) return RSMERR_BARRIER_UNINITIALIZED;
  if (live<ImportSeg>(b->imp, Tag::kImport) == nullptr) return RSMERR_BAD_SEG_HNDL;
  barrier_invalidate(b);
  b->snap = barrier_count(b);
  b->open = true;
  return RSM_SUCCESS;
}

int rsm_memseg_import_order_barrier(rsmapi_barrier_t* barrier) {
  if (barrier == nullptr) return RSMERR_BAD_BARRIER_PTR;
  Barrier* b = barrier_of(barrier);
  if (b == nullptr) return RSMERR_BARRIER_UNINITIALIZED;
  if (!b->open) return RSMERR_BARRIER_NOT_OPENED;
  if (live<ImportSeg>(b->imp, Tag::kImport) == nullptr) return RSMERR_BAD_SEG_HNDL;
  // Every access since open has completed once the puts in flight have and
  // the mappings' dirty pages are written back.
  const bool written = barrier_drain(b);
  return written && barrier_count(b) == b->snap ? RSM_SUCCESS : RSMERR_BARRIER_FAILURE;
}

int rsm_memseg_import_close_barrier(rsmapi_barrier_t* barrier) {
  const int e = rsm_memseg_import_order_barrier(barrier);
  if (e == RSM_SUCCESS || e == RSMERR_BARRIER_FAILURE) barrier_of(barrier)->open = false;
  return e;
}

int rsm_memseg_import_destroy_barrier(rsmapi_barrier_t* barrier) {
  if (barrier == nullptr) return RSMERR_BAD_BARRIER_PTR;
  Barrier* b = barrier_of(barrier);
  if (b == nullptr) return RSMERR_BARRIER_UNINITIALIZED;
  live_del(b);
  delete b;
  barrier->privdata = nullptr;
  return RSM_SUCCESS;
}

}  // extern "C"
