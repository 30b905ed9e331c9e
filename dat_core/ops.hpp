#pragma once
// The DAT operations over the dat_core objects, shared by every front end
// (the uDAPL 1.2 C API in api/, the DAT 2.0 plug-in in dat2/).  A front looks
// its handles up, checks the arguments only it can check (its own structs,
// NULL pointers, signed counts), converts its structs to the core types
// used here and maps the returned Status to its DAT_RETURN encoding.
//
// Every operation below takes the interface lock itself unless its comment
// says "lock held".  Timeouts are in microseconds, kInfinite waits forever.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "core.hpp"

namespace dpdat::dat {

using Lock = IfaceLock;  // makes the CNO agent upcalls on release (core.hpp)
inline constexpr uint64_t kInfinite = UINT64_MAX;

// ------------------------------------------------------------- helpers

template <typename T>
void adopt(Ia* ia, T* o) {
  register_handle(o);
  ia->children.insert(o);
}
template <typename T>
void destroy(T* o) {
  unregister_handle(o);
  if (o->ia != nullptr && o->ia != static_cast<Object*>(o)) o->ia->children.erase(o);
  delete o;
}

// Control-path waits (CNO, IA close): spin briefly (driving this and the
// process's other interfaces), then sleep on `cv` with doubling back-off,
// driving the interface at every wake-up.  pred() is checked under the
// interface lock.  Returns false on timeout.  The back-off is capped by the
// interface's idle_us, so a waiter neither burns a core nor sleeps past a
// due event by more than that.
// The steady-clock deadline `timeout_us` after `start` (kInfinite, or one
// too long to add: none).
inline uint64_t deadline_after(uint64_t start, uint64_t timeout_us) {
  return timeout_us == kInfinite || timeout_us > UINT64_MAX / 2000 ? UINT64_MAX
                                                                   : start + timeout_us * 1000;
}

template <typename Pred>
bool wait_for(Iface* f, Lock& lk, std::condition_variable_any& cv, uint64_t timeout_us, Pred pred) {
  const uint64_t start = now_ns();
  const uint64_t deadline = deadline_after(start, timeout_us);
  constexpr uint64_t kSpinNs = 50'000;
  uint64_t sleep_us = 1;
  for (;;) {
    uint64_t now = now_ns();
    f->progress(now, true);
    if (pred()) return true;
    now = now_ns();
    if (now >= deadline) return false;
    if (now - start < kSpinNs) {
      lk.unlock();
      progress_others(f);
      std::this_thread::yield();
      lk.lock();
      continue;
    }
    const uint64_t left_us = (deadline - now) / 1000 + 1;
    cv.wait_for(lk, std::chrono::microseconds(std::min<uint64_t>(sleep_us, left_us)));
    sleep_us = std::min<uint64_t>(sleep_us * 2, f->cfg.idle_us);
    if (pred()) return true;
    lk.unlock();
    progress_others(f);
    lk.lock();
  }
}

Sub ep_state_sub(EpState s);

// A sockaddr_in (16 bytes) of an IPv4 address (host byte order).
void fill_sa(unsigned char* out, uint32_t ip);

// An EVD role for an EP: NULL is allowed; otherwise it must be an EVD of the
// same interface with the stream's flag.
bool evd_ok(Ia* ia, const void* h, uint32_t flag, Evd** out);

// The sizes an EP is granted (the interface's limits; ops_ep.cpp).
void grant_sizes(const Iface* f, EpAttr* a);

// A DAT completion-flags word as RC work-request flags; the status of a
// post into a queue pair as the DAT status (ops_post.cpp; `ep` may be null:
// a UD queue pair, no EP state to name).
Status request_flags(const Ep* ep, uint32_t f, uint32_t* wr_flags);
Status post_result(rc::PostResult r, const Ep* ep);

// Limits of an EP's attributes against the interface (negative counts of a
// front arrive here as huge values and fail the same checks).
Status check_ep_attr(const Iface* f, const EpAttr& a);

// Takes the oldest event (no lock: the EVD's queue has its own).
bool pop_event(Evd* evd, Event* out);

// Lock held.
Status make_evd(Ia* ia, int64_t qlen, Cno* cno, uint32_t flags, Evd** out);
void free_evd(Evd* e);
void free_ep(Ep* ep);
void free_sp(Sp* sp);
Status free_lmr(Lmr* l);
void free_rmr(Rmr* r);
// Releases everything an IA owns (abrupt close), children before parents.
void free_children(Ia* ia);
// A queue pair connected by attributes (ops_qp_attr.hpp) went to error: the
// IA's async EVD learns that it failed on its own (not by the consumer's
// hand) and, if it takes receives from an SRQ, that it takes no more.
void qp_attr_errored(Ep* ep);
// The housekeeping pass over Iface::qp_attr_watch: a queue pair in RTR that
// received a packet is told (COMM_EST), one in SQD whose send queue drained
// stops draining and is told if it asked (SQ_DRAINED).
void qp_attr_pass(Iface* f);

// ------------------------------------------------------------- IA / PZ

// Opens an IA on the interface `cfg` describes.  `given` is the consumer's
// async EVD or nullptr (then one of async_qlen entries is created).
// `provider`: the DAT 2.0 DAT_PROVIDER every object of this IA carries in its
// first word (nullptr for the 1.2 API).
Status ia_open(const IfaceConfig& cfg, int64_t async_qlen, Evd* given, void* provider, Ia** out);
Status ia_close(Ia* ia, bool graceful);
Status pz_create(Ia* ia, Pz** out);
Status pz_free(Pz* pz);

// ------------------------------------------------------------- EVD / CNO

Status evd_create(Ia* ia, int64_t qlen, Cno* cno, uint32_t flags, Evd** out);
Status evd_modify_cno(Evd* e, Cno* cno);
Status evd_set_enabled(Evd* e, bool enabled);
Status evd_set_waitable(Evd* e, bool waitable);
// *nmore (may be null) is the number of events left after the call.
Status evd_wait(Evd* e, uint64_t timeout_us, int64_t threshold, Event* ev, uint32_t* nmore);
Status evd_dequeue(Evd* e, Event* ev);
Status evd_resize(Evd* e, int64_t qlen);
Status evd_post_se(Evd* e, const void* pointer);
Status evd_free(Evd* e);

using AgentFn = void (*)(void*, void*);
Status cno_create(Ia* ia, void* instance, AgentFn fn, Cno** out);
Status cno_modify_agent(Cno* c, void* instance, AgentFn fn);
Status cno_wait(Cno* c, uint64_t timeout_us, Evd** out);
Status cno_free(Cno* c);

// ------------------------------------------------------------- EP

// attr nullptr: the defaults of EpAttr.  The EVDs are already checked
// (evd_ok).  srq: receives come from it (same PZ as the EP).
Status ep_create(Ia* ia, Pz* pz, Evd* recv, Evd* req, Evd* conn, const EpAttr* attr, Ep** out,
                 Srq* srq = nullptr);

// The EP's new settings, resolved by the front under the lock (after the
// state check), starting from the current ones.
struct EpSettings {
  Pz* pz = nullptr;
  Evd* recv = nullptr;
  Evd* req = nullptr;
  Evd* conn = nullptr;
  EpAttr attr;
};
Status ep_modify(Ep* ep, const std::function<Status(Ep*, EpSettings*)>& resolve);

Status ep_connect(Ep* ep, uint32_t ip, uint64_t conn_qual, uint64_t timeout_us,
                  const uint8_t* pdata, uint32_t pdata_len);
// The address and connection qualifier of a connected EP (dat_ep_dup_connect).
Status ep_peer(Ep* src, uint32_t* ip, uint64_t* conn_qual);
Status ep_disconnect(Ep* ep, bool abrupt);

// The remote side of an RDMA / atomic request.
struct RemoteSeg {
  uint32_t rkey = 0;
  uint64_t va = 0;
  uint64_t length = 0;
};
// A request: SEND, RDMA WRITE / READ (with immediate data: `imm`), atomics
// (`compare`, `swap_add`, result into sge[0]).  cflags are DAT completion
// flags.  remote is required for everything but SEND.
struct PostArgs {
  rc::WrOp op = rc::WrOp::kSend;
  const rc::Sge* sge = nullptr;
  uint32_t nsge = 0;
  uint64_t cookie = 0;
  const RemoteSeg* remote = nullptr;
  uint32_t cflags = 0;
  uint32_t imm = 0;
  uint64_t compare = 0, swap_add = 0;
};
Status ep_post(Ep* ep, const PostArgs& a);
// multi_min > 0: a multi-receive (rc::RecvWr::multi_min): its events carry
// `multi`, the message's `offset` in it, and `released` on the last.
Status ep_post_recv(Ep* ep, const rc::Sge* sge, uint32_t nsge, uint64_t cookie, uint32_t cflags,
                    uint64_t multi_min = 0);
// A request posted to a queue pair in error completes at once as flushed
// (verbs: a work request posted in ERR gets IBV_WC_WR_FLUSH_ERR), on the
// EP's request EVD (`op` a send-queue opcode) or receive EVD (kRecv), after
// every completion of the queue pair before it.  INVALID_STATE when the
// queue pair is not in error; INSUFFICIENT_RESOURCES when its EVD's queue
// is full or requests handed over before it cannot be ordered yet.
Status ep_post_flushed(Ep* ep, rc::WcOp op, uint64_t cookie);

struct EpStatus {
  EpState state = EpState::kUnconnected;
  bool recv_idle = true, req_idle = true;
};
Status ep_get_status(Ep* ep, EpStatus* out);
Status ep_reset(Ep* ep);
Status ep_free(Ep* ep);
// Moves the completions of the EP's queue pair still in the engine onto its
// EVDs (ep_free drops every completion of the EP, those already on its EVDs
// too): a consumer that must report what completed before it freed the EP
// settles it, takes the events off, then frees it.
Status ep_settle(Ep* ep);
Status ep_recv_query(Ep* ep, uint32_t* nbufs);
// Receives in progress from the EP's SRQ at which the soft mark notifies
// and the hard mark breaks the connection; -1 (DAT_WATERMARK_INFINITE): not
// set, other negatives INVALID_PARAMETER.  MODEL_NOT_SUPPORTED for an EP
// without an SRQ.
Status ep_set_watermark(Ep* ep, int64_t soft_hw, int64_t hard_hw);
// Counters of the remote accesses the EP's responder serves (libfabric's
// FI_RMA_EVENT): each RDMA WRITE adds one to *writes, each RDMA READ one to
// *reads, exactly once (rc::Qp::set_rma_counters); nullptr: not counted.
// They hold for the queue pairs the EP has now and later, and must outlive
// the EP or be unset first.
Status ep_set_rma_counters(Ep* ep, std::atomic<uint64_t>* writes, std::atomic<uint64_t>* reads);

// ------------------------------------------------------------- SRQ (srq.cpp)

Status srq_create(Ia* ia, Pz* pz, uint32_t max_recv_dtos, uint32_t max_recv_iov,
                  uint32_t low_watermark, Srq** out);
Status srq_free(Srq* srq);  // INVALID_STATE while an EP uses it
void free_srq(Srq* srq);    // lock held, no EP uses it
Status srq_post_recv(Srq* srq, const rc::Sge* sge, uint32_t nsge, uint64_t cookie);
// n receives of one segment each (sge[i], cookies[i]) under one lock and one
// engine step; *posted of them went in (the rest: the status says why).
Status srq_post_recv_many(Srq* srq, const rc::Sge* sge, const uint64_t* cookies, uint32_t n,
                          uint32_t* posted);
struct SrqInfo {
  uint32_t max_recv_dtos = 0, max_recv_iov = 0, low_watermark = 0;
  uint64_t available = 0, outstanding = 0;
};
Status srq_query(Srq* srq, SrqInfo* out);
Status srq_resize(Srq* srq, uint32_t max_recv_dtos);
Status srq_set_lw(Srq* srq, uint32_t low_watermark);
// Lock held: the EP (being created) takes its receives from srq / stops.
Status srq_attach(Ep* ep, Srq* srq);
void srq_detach(Ep* ep);

// ------------------------------------------------------------- PSP / RSP / CR

// evd_h is the consumer's (unchecked) CR EVD handle.
Status psp_create(Ia* ia, uint64_t qual, const void* evd_h, uint32_t flags, Sp** out);
Status psp_create_any(Ia* ia, uint64_t* qual, const void* evd_h, uint32_t flags, Sp** out);
Status rsp_create(Ia* ia, uint64_t qual, Ep* ep, const void* evd_h, Sp** out);
Status sp_free(Sp* sp);

// ep nullptr: the CR's own EP (RSP or provider-created).
Status cr_accept(Cr* cr, Ep* ep, const uint8_t* pdata, uint32_t pdata_len);
Status cr_reject(Cr* cr, const uint8_t* pdata, uint32_t pdata_len);
Status cr_handoff(Cr* cr, uint64_t qual);

// ------------------------------------------------------------- LMR / RMR

// What an LMR registers.  host is where the bytes live; va is the address
// consumers name them by (host's address, or 0 for zero-based addressing);
// parent for MemType::kLmr; cookie (kCookieSize bytes) for kSharedVirtual.
struct LmrSpec {
  MemType type = MemType::kVirtual;
  uint8_t* host = nullptr;
  uint64_t va = 0;
  uint64_t length = 0;
  Lmr* parent = nullptr;
  const uint8_t* cookie = nullptr;
};
Status lmr_create(Ia* ia, Pz* pz, const LmrSpec& spec, uint32_t privileges, Lmr** out);
// The part of the address space a local-only LMR covers: every address a
// Linux process can map (5-level paging: below 2^56) but the first page.
inline constexpr uint64_t kLocalOnlyBase = 4096;
inline constexpr uint64_t kLocalOnlyEnd = uint64_t{1} << 56;
// A local-only LMR over [kLocalOnlyBase, kLocalOnlyEnd) of pz, by host
// address (rc::MrTable::mr_register_local_only): its lmr_context is the lkey
// of any of the process's own bytes, as a NIC's reserved local DMA key is.
// No rmr_context, no RMR binds to it: the wire never reaches its bytes.
// For a front whose consumer may name unregistered buffers (libfabric
// without FI_MR_LOCAL); DAT and verbs consumers never get one.  Not bound
// by max_lmr_size.  An address in it that is not mapped faults in the
// thread that copies it (the engine's), as the consumer's own access would.
Status lmr_create_local_only(Ia* ia, Pz* pz, Lmr** out);
Status lmr_free(Lmr* l);
// Counters of the remote WRITEs into and READs out of the LMR (libfabric's
// fi_mr_bind with FI_RMA_EVENT; rc::MrTable::mr_set_rma_counters); nullptr:
// not counted.  They must outlive the LMR or be unset first.
Status lmr_set_rma_counters(Lmr* l, std::atomic<uint64_t>* writes, std::atomic<uint64_t>* reads);
// Every segment inside its LMR; then a full fence.
// seg(i) converts the front's i-th segment (n comes from the consumer: nothing
// of its size is allocated).
Status lmr_sync(Ia* ia, uint64_t n, const std::function<rc::Sge(uint64_t)>& seg);

Status rmr_create(Pz* pz, Rmr** out);
// Binds (length > 0) or unbinds the RMR to [va, va + length) of the LMR whose
// context is lmr_context, through ep's send queue.  *ctx_out: the RMR context
// the bind will produce.
Status rmr_bind(Rmr* r, Ep* ep, uint32_t lmr_context, uint64_t va, uint64_t length,
                uint32_t privileges, uint64_t cookie, uint32_t cflags, uint32_t* ctx_out);
Status rmr_free(Rmr* r);

}  // namespace dpdat::dat
