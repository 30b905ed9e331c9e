// get/put/getv/putv: RDMA READ/WRITE against the exporter's registration for
// the granted permission, staged through the import's registered bounce
// buffer (or moved directly for rsm_localmemory handles); explicit barrier
// mode keeps up to kMaxInFlight puts in flight in a staging ring.
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

}  // namespace dpdat::rsm

using namespace dpdat::rsm;

extern "C" {

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

}  // extern "C"
