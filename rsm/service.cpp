// The service thread of a controller, its endpoints and the ACL decisions:
// every connection request is judged against the segment's ACL in force when
// it arrives (node from the request's source address, owner/group/other
// digit from the importer's reported uid/gid), accepted with a reply
// {status, granted permission, rmr_context, address, length}; connection
// events become import/export state and received SENDs become RSM signals.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "objects.hpp"

namespace dpdat::rsm {

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
  // flags, the last word, is optional (a request without it asks for none).
  if (p.private_data_size < static_cast<DAT_COUNT>(offsetof(ReqPdata, flags)) ||
      p.private_data == nullptr || p.remote_ia_address_ptr == nullptr) {
    (void)dat_cr_reject(cr);
    return;
  }
  std::memcpy(&rq, p.private_data, std::min(sizeof(rq), static_cast<size_t>(p.private_data_size)));
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
  k->mapping = (rq.flags & kReqMapping) != 0;
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

}  // namespace dpdat::rsm
