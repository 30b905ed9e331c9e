#pragma once
// The DAT objects (IA, PZ, EVD, CNO, EP, PSP/RSP/CR, LMR, RMR, SRQ), their
// events and the handle registry.  Threading rules: core.hpp.

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "config.hpp"
#include "event_queue.hpp"
#include "link.hpp"
#include "mpsc_ring.hpp"
#include "rc/engine/engine.hpp"
#include "rc/mr_table.hpp"
#include "rc/srq.hpp"
#include "spin_lock.hpp"
#include "status.hpp"
#include "wire/cm.hpp"

namespace dpdat::dat {

enum class HandleType : uint8_t { kIa, kEp, kLmr, kRmr, kPz, kPsp, kRsp, kCr, kCno, kEvd, kSrq };

struct Ia;
struct Iface;
struct Evd;
struct Ep;
struct Cr;
struct Sp;
struct Rmr;
struct Cno;
struct Srq;
struct Object;
struct Shard;

// Values of DAT_EVENT_NUMBER (identical in DAT 1.2 and 2.0).
enum class EventNum : uint32_t {
  kDto = 0x00001,
  kRmrBind = 0x01001,
  kConnRequest = 0x02001,
  kEstablished = 0x04001,
  kPeerRejected = 0x04002,
  kNonPeerRejected = 0x04003,
  kAcceptCompletionError = 0x04004,
  kDisconnected = 0x04005,
  kBroken = 0x04006,
  kTimedOut = 0x04007,
  kUnreachable = 0x04008,
  kEvdOverflow = 0x08001,
  kIaCatastrophic = 0x08002,
  kEpBroken = 0x08003,
  kAsyncTimedOut = 0x08004,
  kProviderInternal = 0x08005,  // also carries the SRQ / EP watermark notifications
  kSoftware = 0x10001,
  // dpdat's own, not a DAT event: the REP came for a CM-only EP (cm_ep_create,
  // ops_qp_attr.hpp), whose application connects its queue pair and then
  // calls ep_establish.  Only verbs' connection manager makes such EPs.
  kConnResponse = 0x14001,
};

// Values of DAT_DTO_COMPLETION_STATUS (identical in DAT 1.2 and 2.0).
enum class DtoStatus : uint32_t {
  kSuccess = 0,
  kFlushed = 1,
  kLocalLength = 2,
  kLocalEp = 3,
  kLocalProtection = 4,
  kBadResponse = 5,
  kRemoteAccess = 6,
  kRemoteResponder = 7,
  kTransport = 8,
  kReceiverNotReady = 9,
  kPartialPacket = 10,
  kRmrOperationFailed = 11,
};

// DAT_EVD_*_FLAG, DAT_COMPLETION_*_FLAG, DAT_MEM_TYPE_*, DAT_CLOSE_* values
// (identical in DAT 1.2 and 2.0).
namespace evd_flag {
inline constexpr uint32_t kSoftware = 0x001, kCr = 0x010, kDto = 0x020, kConnection = 0x040,
                          kRmrBind = 0x080, kAsync = 0x100;
}
namespace cflag {
inline constexpr uint32_t kSuppress = 0x01, kSolicitedWait = 0x02, kUnsignalled = 0x04,
                          kBarrierFence = 0x08, kEvdThreshold = 0x10;
}

struct Event {
  EventNum num = EventNum::kSoftware;
  Evd* evd = nullptr;
  // DTO and RMR bind completions
  Ep* ep = nullptr;
  uint64_t cookie = 0;
  DtoStatus status = DtoStatus::kSuccess;
  uint64_t length = 0;
  rc::WcOp op = rc::WcOp::kSend;
  uint32_t imm = 0;
  bool has_imm = false;
  // The RC engine's own words for a DTO completion (`status` is DAT's
  // coarser one): a verbs front reports them as work-completion statuses and
  // honours solicited-only notification with them.
  rc::WcStatus rc_status = rc::WcStatus::kSuccess;
  bool solicited = false;
  // A receive posted as a multi-receive (ep_post_recv's multi_min): where
  // in it this message begins, and whether it retired with this event.
  bool multi = false;
  bool released = false;
  uint64_t offset = 0;
  // The queue pair's number (a UD queue pair's completions name no EP); a
  // UD receive: the sender's QPN, and the 40 GRH bytes that lead the buffer
  // (counted in `length`).
  uint32_t qpn = 0;
  uint32_t src_qp = 0;
  bool grh = false;
  Rmr* rmr = nullptr;
  uint32_t rmr_context = 0;
  // connection request
  Sp* sp = nullptr;
  uint64_t conn_qual = 0;
  Cr* cr = nullptr;
  // connection events: the peer's private data, a copy the event owns, so
  // that it outlives the EP (the consumer may free the EP before it
  // dequeues the event).  Once dequeued it is kept by the EVD until the
  // next dequeue on that EVD or the EVD is freed (Evd::dequeued_pdata).
  uint32_t pdata_len = 0;
  const uint8_t* pdata = nullptr;  // into pdata_buf
  std::unique_ptr<const std::vector<uint8_t>> pdata_buf;
  // async and software events: `handle` is the object the event concerns
  // (nullptr: the IA), `reason` the object's DAT_*_ASYNC_ERROR_REASON value;
  // a connection event that a REJ caused: `reason` is the REJ's (IBA)
  Ia* ia = nullptr;
  Object* handle = nullptr;
  uint32_t reason = 0;
  const void* sw_pointer = nullptr;
};

// Every handle's first word is reserved for the DAT 2.0 provider pointer; no
// virtual functions (a vtable pointer would take that word).
struct Object {
  void* provider = nullptr;
  HandleType type;
  Ia* ia = nullptr;
  uint64_t context = 0;  // consumer context (pointer or 64-bit value)
  bool context_set = false;
  Object(HandleType t, Ia* owner) : type(t), ia(owner) {}
};

// Handle registry.  lookup() returns nullptr for anything that is not a live
// object of that type.
void register_handle(Object* o);
void unregister_handle(Object* o);
Object* lookup_any(const void* h);
template <typename T>
T* lookup(const void* h, HandleType t) {
  Object* o = lookup_any(h);
  return o != nullptr && o->type == t ? static_cast<T*>(o) : nullptr;
}

uint64_t now_ns();

// ------------------------------------------------------------------ objects

struct Pz : Object {
  uint32_t id = 0;
  uint32_t refs = 0;  // EPs, LMRs, RMRs in this PZ
  explicit Pz(Ia* a) : Object(HandleType::kPz, a) {}
};

enum class MemType : uint32_t {
  kVirtual = 0,
  kLmr = 1,
  kSharedVirtual = 2,
  kSoVirtual = 3,
};
inline constexpr size_t kCookieSize = 40;  // DAT_LMR_COOKIE

struct Lmr : Object {
  Pz* pz = nullptr;
  MemType mem_type = MemType::kVirtual;
  uint8_t* host = nullptr;
  uint64_t va = 0;
  uint64_t length = 0;
  uint32_t privileges = 0;
  uint32_t lmr_context = 0;
  uint32_t rmr_context = 0;  // only when remote privileges were asked
  Lmr* parent = nullptr;     // MemType::kLmr
  uint32_t children = 0;     // LMRs created over this one
  std::array<uint8_t, kCookieSize> cookie{};
  explicit Lmr(Ia* a) : Object(HandleType::kLmr, a) {}
};

struct Rmr : Object {
  Pz* pz = nullptr;
  uint32_t slot = 0;     // MrTable handle
  uint32_t context = 0;  // context of the newest bind posted
  struct PendingBind {
    uint64_t cookie = 0;
    Lmr* lmr = nullptr;
    uint64_t va = 0, length = 0;
    uint32_t privileges = 0;
  };
  std::deque<PendingBind> binds;  // posted, not yet completed (one EP at a time)
  uint32_t bind_qpn = 0;          // queue pair of the pending binds
  // as of the newest successful bind completion
  Lmr* lmr = nullptr;
  uint64_t va = 0, length = 0;
  uint32_t privileges = 0;
  explicit Rmr(Ia* a) : Object(HandleType::kRmr, a) {}
};

struct Cno : Object {
  std::condition_variable_any cv;        // waited on with an IfaceLock
  std::atomic<Evd*> triggered{nullptr};  // set by event delivery (token held)
  bool waiter = false;
  uint32_t evds = 0;  // EVDs feeding it
  void* agent_instance = nullptr;
  void (*agent_fn)(void*, void*) = nullptr;  // DAT_AGENT_FUNC(instance, cno or evd handle)
  explicit Cno(Ia* a) : Object(HandleType::kCno, a) {}
};

struct Evd : Object {
  uint32_t flags = 0;
  uint32_t qlen = 0;
  Cno* cno = nullptr;
  std::atomic<bool> enabled{true};
  std::atomic<bool> waitable{true};
  EventQueue<Event> q;  // qlen slots; see event_queue.hpp
  // Private data of the event dequeued last: the consumer reads it through
  // the DAT_EVENT it was given, until its next dequeue here (or the EVD's
  // destruction), whatever became of the EP meanwhile.
  std::unique_ptr<const std::vector<uint8_t>> dequeued_pdata;
  std::atomic<bool> overflow_reported{false};
  // DTO / RMR bind EVDs: one RC completion queue per shard whose queue pairs
  // feed it (Iface::cq_for), so each engine writes only its own; the shards
  // with one, for consumers that drive what feeds this EVD.
  bool dto = false;
  std::vector<std::unique_ptr<rc::CompletionQueue>> cqs;  // by shard index
  std::atomic<uint64_t> shard_mask{0};
  // dat_evd_wait: one waiter at a time, asleep on wait_cv (under wait_mu)
  // once its spin is over; event delivery wakes it when `threshold` events
  // are queued.
  std::atomic<bool> waiter{false};
  std::atomic<uint32_t> threshold{1};
  std::mutex wait_mu;
  std::condition_variable wait_cv;
  uint32_t refs = 0;             // EPs / service points / other IAs using it
  std::vector<Ia*> async_users;  // IAs other than its own reporting to it

  explicit Evd(Ia* a) : Object(HandleType::kEvd, a) {}
};

enum class EpState : uint8_t {
  kUnconnected,
  kActivePending,
  kPassivePending,
  kTentativePending,
  kConnected,
  kDisconnectPending,
  kDisconnected,
  kReserved,
};
struct EpAttr {
  uint64_t max_message_size = 1u << 30;
  uint64_t max_rdma_size = 1u << 30;
  uint32_t qos = 0;
  uint32_t recv_completion_flags = cflag::kEvdThreshold;
  uint32_t request_completion_flags = cflag::kEvdThreshold;
  uint32_t max_recv_dtos = 256;
  uint32_t max_request_dtos = 256;
  uint32_t max_recv_iov = rc::kMaxSge;
  uint32_t max_request_iov = rc::kMaxSge;
  uint32_t max_rdma_read_in = 16;
  uint32_t max_rdma_read_out = 16;
  uint32_t srq_soft_hw = 0;
  uint32_t max_rdma_read_iov = rc::kMaxSge;
  uint32_t max_rdma_write_iov = rc::kMaxSge;
};

enum class CmState : uint8_t {
  kIdle,
  kResolving,
  kReqSent,
  kRepRcvd,  // a CM-only EP's REP came: the RTU waits for ep_establish
  kRepSent,
  kEstablished,
  kDraining,  // graceful disconnect: outstanding requests finish before the DREQ
  kDreqSent,
  kDone
};

inline constexpr uint8_t kQpAttrRts = 3;  // QpAttrState::kRts

struct Ep : Object {
  Pz* pz = nullptr;
  Evd* recv_evd = nullptr;
  Evd* req_evd = nullptr;
  Evd* conn_evd = nullptr;
  EpAttr attr;
  // Read by posting threads without a lock: qp is set before the state
  // becomes CONNECTED and stays until the EP is reset or freed.
  std::atomic<EpState> state{EpState::kUnconnected};
  rc::Qp* qp = nullptr;
  Shard* shard = nullptr;  // the engine its queue pair lives on (with qp)
  // What its queue pairs count remote WRITEs and READs on (ep_set_rma_counters).
  std::atomic<uint64_t>* rma_writes = nullptr;
  std::atomic<uint64_t>* rma_reads = nullptr;
  // The remote operations its queue pairs serve (qp_set_remote_access).
  uint32_t remote_access = rc::priv::kRemoteRead | rc::priv::kRemoteWrite | rc::priv::kRemoteAtomic;
  // Work requests accepted for this EP (posting threads) and those retired
  // from its queue pair as of the last completion delivered (token holder):
  // a request handed over while another thread drives the engine is refused
  // for a full queue on these counts (see ep_post).  What posters write and
  // what the engine writes sit on lines of their own, so a post does not
  // pull the line the engine just wrote for the post before.
  alignas(64) std::atomic<uint64_t> sends_posted{0};
  std::atomic<uint64_t> recvs_posted{0};
  alignas(64) std::atomic<uint64_t> sends_retired{0};
  std::atomic<uint64_t> recvs_retired{0};
  uint64_t sends_into_qp = 0, recvs_into_qp = 0;  // token holder
  // Signalled sends taken into the queue pair, and send completions delivered
  // to the request EVD (token holder): while an earlier signalled send's
  // completion is still to come, the consumer must poll for it, and a post
  // without a progress thread leaves its frames for that poll (ops_post.cpp).
  uint64_t signaled_into_qp = 0, send_completions = 0;
  alignas(64) Srq* srq = nullptr;  // receives come from this SRQ (dat_ep_create_with_srq)
  // dat_ep_set_watermark: receives in progress from the SRQ at which the
  // soft mark raises an async event (once per setting) and the hard mark
  // breaks the connection; 0 = not set (DAT_WATERMARK_INFINITE).
  uint32_t soft_hw = 0;
  uint32_t hard_hw = 0;
  bool freeing = false;  // being freed: no more events about it
  // connection
  CmState cm = CmState::kIdle;
  uint32_t local_comm = 0, remote_comm = 0;
  uint32_t peer_ip = 0;
  wire::MacAddr peer_mac{};
  uint32_t peer_qpn = 0;
  uint64_t key_refusals_counted = 0;  // of its queue pair's, in Iface::key_refusals_by_peer
  uint64_t conn_qual = 0;
  uint32_t my_psn = 0;
  // What the connection agreed (set with its REP, sent or received): the
  // peer's first PSN, the path MTU, the peer's responder resources and
  // initiator depth.  ops_qp_attr.hpp's qp_cm_path reports them.
  uint32_t peer_psn = 0, path_pmtu = 0;
  uint8_t peer_resp_res = 0, peer_init_depth = 0;
  uint16_t cm_src_port = 0;  // the IP port its REQ names as the source (rdma_cm); 0 none
  wire::CmMessage out_msg;   // REQ / REP / DREQ being retransmitted
  uint64_t next_retx = 0, retx_interval = 0, deadline = 0;
  uint32_t retries = 0;
  Sp* sp = nullptr;                             // RSP that reserved it, or the PSP that created it
  alignas(8) unsigned char remote_sa[16] = {};  // front's sockaddr of the peer
  bool provider_created = false;
  // The verbs state of its queue pair (QpAttrState, ops_qp_attr.hpp): set
  // by attributes exchanged out of band, or by the CM, which moves a queue
  // pair it connects to RTS (kQpAttrRts) as verbs' connection manager does.
  uint8_t qp_attr_state = 0;
  // A verbs queue pair handed to the CM (qp_cm_attach, rdma_cm): its
  // broken connection and its leaving an SRQ are also told as verbs'
  // asynchronous events (QP_FATAL, LAST_WQE_REACHED); a DAT EP's are not.
  bool cm_attached = false;
  // A CM-only EP (cm_ep_create): it has no queue pair; its REQ / REP name
  // this number, of a queue pair the application moves by attributes.
  uint32_t cm_qpn = 0;
  // Connected by attributes (ops_qp_attr.hpp; interface lock): in SQD, its
  // send queue still holds requests, and whether SQ_DRAINED is told once it
  // holds none; in RTR, whether COMM_EST (the first packet) was told.
  bool sq_draining = false;
  bool sqd_notify = false;
  bool comm_est_told = false;
  explicit Ep(Ia* a) : Object(HandleType::kEp, a) {}
};

struct Sp : Object {  // PSP or RSP
  uint64_t conn_qual = 0;
  Evd* evd = nullptr;
  uint32_t flags = 0;  // PSP: DAT_PSP_CONSUMER_FLAG 0 / DAT_PSP_PROVIDER_FLAG 1
  Ep* ep = nullptr;    // RSP: the reserved EP
  uint32_t crs = 0;    // pending connection requests
  Sp(HandleType t, Ia* a) : Object(t, a) {}
};

struct Cr : Object {
  Sp* sp = nullptr;
  uint64_t conn_qual = 0;
  wire::CmMessage req;
  wire::MacAddr peer_mac{};
  uint32_t peer_ip = 0;
  uint16_t peer_udp_port = 0;
  Ep* ep = nullptr;            // RSP's EP or the provider-created EP
  std::vector<uint8_t> pdata;  // writable copy for the consumer
  // The first PSN this side sends if it accepts (the REP names it), chosen
  // with the request: verbs' RTS attributes may be asked for before accept.
  uint32_t start_psn = 0;
  alignas(8) unsigned char remote_sa[16] = {};
  explicit Cr(Ia* a) : Object(HandleType::kCr, a) {}
};

// Reasons carried by watermark notifications (DAT_SRQ_LOW_WATERMARK_EVENT of
// DAT_SRQ_ASYNC_ERROR_REASON, DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT of
// DAT_EP_ASYNC_ERROR_REASON; the same in DAT 1.2 and 2.0).
inline constexpr uint32_t kSrqLowWatermarkReason = 2;
inline constexpr uint32_t kEpSoftHighWatermarkReason = 2;
inline constexpr uint32_t kEvdOverflowReason = 0;        // DAT_EVD_OVERFLOW_ERROR
inline constexpr uint32_t kEpTransferToErrorReason = 0;  // DAT_EP_TRANSFER_TO_ERROR
// A verbs queue pair (ops_qp_attr.hpp) that went to error and takes
// receives from an SRQ: it takes no more (verbs' "last WQE reached").  With
// kEpTransferToErrorReason, a verbs queue pair failed on its own (QP_FATAL).
inline constexpr uint32_t kEpLastWqeReason = 0x100;
// Notifications (kProviderInternal) about such a queue pair: it entered SQD
// asking to be told, and its send queue has drained (verbs' SQ_DRAINED); it
// received its first packet while in RTR (verbs' COMM_EST).
inline constexpr uint32_t kQpSqDrainedReason = 0x101;
inline constexpr uint32_t kQpCommEstReason = 0x102;
// Notifications (kProviderInternal, the IA as handle) to an IA that asked
// for them (ia_link_events): the interface's link went up / down (verbs'
// PORT_ACTIVE / PORT_ERR).
inline constexpr uint32_t kLinkUpReason = 0x103;
inline constexpr uint32_t kLinkDownReason = 0x104;

struct Srq : Object {
  Pz* pz = nullptr;
  std::unique_ptr<rc::Srq> rq;
  uint32_t max_recv_iov = rc::kMaxSge;
  std::vector<Ep*> eps;    // EPs taking receives from it
  Shard* shard = nullptr;  // its queue's engine: its EPs' (set by the first)
  explicit Srq(Ia* a) : Object(HandleType::kSrq, a) {}
};

// (SRQ operations: ops.hpp, srq.cpp.)

struct Ia : Object {
  Iface* iface = nullptr;
  Evd* async_evd = nullptr;
  bool async_evd_created = false;  // we made it (freed with the IA)
  bool link_events = false;        // ia_link_events: told of the link's changes
  std::unordered_set<Object*> children;
  alignas(8) unsigned char local_sa[16] = {};  // front's sockaddr of the interface
  explicit Ia() : Object(HandleType::kIa, nullptr) { ia = this; }
};

}  // namespace dpdat::dat
