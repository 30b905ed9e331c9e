#pragma once
// dpdat's libibverbs.so.1: the verbs objects and how each sits on the
// dat_core objects of ops.hpp (the same ones libdat, the DAT 2.0 plug-in and
// the libfabric provider use):
//
//   device        -> one configured dpdat interface (an IA name)
//   context       -> an IA on that interface
//   PD            -> a PZ
//   MR            -> an LMR (lkey = its context, rkey = its RMR context)
//   CQ            -> an EVD with the DTO stream; with a completion channel,
//                    also a CNO whose agent raises the channel's eventfd
//   QP (RC)       -> an EP whose queue pair is connected by attributes
//                    exchanged out of band (ops_qp_attr.hpp)
//   QP (UD)       -> a UdEp (ops_ud.hpp)
//   AH            -> the peer's IPv4 address and MAC (resolved once)
//   SRQ           -> an SRQ
//
// Every verbs struct (ibv_*) is the first member of its object, so the
// pointer the application holds converts to the object.  Compiled against
// Debian's <infiniband/verbs.h>, so the structs are the applications' own.

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ops.hpp"
#include "ops_qp_attr.hpp"
#include "ops_ud.hpp"

namespace dpdat::verbs {

inline constexpr uint32_t kMaxInline = 512;
inline constexpr uint32_t kMaxRdAtomic = 16;
inline constexpr int kMaxCqe = 1 << 16;
inline constexpr uint32_t kMaxWr = 4096;
inline constexpr uint32_t kMaxSge = 8;
// How long INIT -> RTR waits for the peer's MAC (neighbour resolution).
inline constexpr uint64_t kResolveUs = 3'000'000;

struct Device {
  ibv_device dev;  // first: the application's pointer
  dat::IfaceConfig cfg;
  uint64_t guid = 0;  // network order, as ibv_get_device_guid returns it
  int index = 0;
};

struct Qp;
struct Srq;
struct Cq;

struct Context {
  verbs_context vctx;  // first; its `context` is the application's pointer
  Device* dev = nullptr;
  dat::Ia* ia = nullptr;
  // Asynchronous events: the IA's async EVD raises this CNO, whose agent
  // (async_agent) turns its events into ibv_async_events, queued here and
  // counted on async_fd.  The QPs and SRQs of the context by their dat_core
  // object, for that translation.  All under async_mu.
  dat::Cno* async_cno = nullptr;
  std::mutex async_mu;
  std::deque<ibv_async_event> async_q;
  std::unordered_map<const dat::Object*, Qp*> qps;
  std::unordered_map<const dat::Object*, Srq*> srqs;
  std::unordered_map<const dat::Object*, Cq*> cqs;  // by their EVD
  std::vector<Qp*> ud_qps;                          // UD QPs (no dat_core object)
};

inline Context* ctx_of(ibv_context* c) {
  return reinterpret_cast<Context*>(reinterpret_cast<uint8_t*>(c) -
                                    offsetof(verbs_context, context));
}

struct Pd {
  ibv_pd pd;
  dat::Pz* pz = nullptr;
};

struct Mr {
  ibv_mr mr;
  dat::Lmr* lmr = nullptr;
};

struct Channel {
  ibv_comp_channel ch;
  std::mutex mu;
  std::deque<Cq*> ready;  // one entry per event written to the eventfd
  uint32_t cqs = 0;       // CQs using it
};

struct Cq {
  ibv_cq cq;
  Context* ctx = nullptr;
  dat::Evd* evd = nullptr;
  dat::Cno* cno = nullptr;  // with a completion channel
  Channel* channel = nullptr;
  // Events taken from the EVD by the notification agent (solicited-only
  // arming looks at them) and not yet polled.  Guarded by mu; only CQs with
  // a channel use it.
  std::recursive_mutex mu;
  std::deque<dat::Event> staged;
  // ibv_req_notify_cq: 0 not armed, 1 next completion, 2 next solicited one.
  std::atomic<int> armed{0};
  uint32_t events_got = 0;  // ibv_get_cq_event results (under the channel's mu)
  uint32_t qps = 0;
};

struct Srq {
  ibv_srq srq;
  dat::Srq* s = nullptr;
  uint32_t max_wr = 0, max_sge = 0;
  std::atomic<uint32_t> limit{0};  // 0 again once IBV_EVENT_SRQ_LIMIT_REACHED was raised
};

struct Qp {
  ibv_qp qp;
  dat::Ep* ep = nullptr;
  Pd* pd = nullptr;
  Cq* scq = nullptr;
  Cq* rcq = nullptr;
  Srq* srq = nullptr;
  ibv_qp_cap cap{};
  bool sq_sig_all = false;
  // A UD QP: its datagram queue pair instead of an EP (ep is nullptr).
  bool ud = false;
  dat::UdEp* udq = nullptr;
  ibv_qp_attr attr{};  // as last set (ibv_query_qp)
  // IBV_SEND_INLINE: the data is copied into a slot of this registered
  // buffer (more slots than requests can be outstanding).
  std::vector<uint8_t> inline_buf;
  dat::Lmr* inline_lmr = nullptr;
  uint32_t inline_slots = 0;
  uint64_t inline_next = 0;
  std::mutex post_mu;  // inline slots
  // A QP made by dpdat's rdma_cm (rdma_create_qp): ibv_destroy_qp tells it
  // first, since applications may destroy such a QP with ibv_destroy_qp.
  void (*cm_gone)(Qp*) = nullptr;
  void* cm_id = nullptr;
};

struct Ah {
  ibv_ah ah;  // first: the application's pointer
  wire::MacAddr mac{};
  uint32_t ip = 0;  // host order
};

// dat_core status -> errno (positive).
int to_errno(dat::Status st);
// The devices of this process (every configured interface), made once.
std::vector<Device*>& devices();

// Context ops (data.cpp).
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad);
int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad);
int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad);
int poll_cq(ibv_cq* cq, int n, ibv_wc* wc);
int req_notify_cq(ibv_cq* cq, int solicited_only);
// The CNO agent of a CQ with a completion channel.
void cq_agent(void* instance, void* evd);

// The CNO agent of a context's async EVD (device.cpp).
void async_agent(void* instance, void* evd);
// A QP or SRQ is made or destroyed: what the async agent may name
// (device.cpp).  Forgetting one also drops its events not yet read.
void async_register(Context* ctx, const dat::Object* o, Qp* qp, Srq* srq, Cq* cq = nullptr);
void async_forget(Context* ctx, const dat::Object* o, const void* element);

// Context ops (device.cpp).
int query_port_ex(ibv_context* c, uint8_t port, ibv_port_attr* attr, size_t len);
int query_device_ex(ibv_context* c, const ibv_query_device_ex_input* in, ibv_device_attr_ex* attr,
                    size_t len);

bool stats_wanted();

}  // namespace dpdat::verbs
