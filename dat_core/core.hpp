#pragma once
// dat_core: the DAT objects (IA, PZ, EVD, CNO, EP, PSP/RSP/CR, LMR, RMR) over
// one dpdat interface (link + memory tables + RC engine + connection
// manager).  The uDAPL 1.2 C API (api/) and the DAT 2.0 plug-in are thin
// fronts over these objects; they convert their own structs and map Status
// to their DAT_RETURN encoding.
//
// Threading: one execution model for every front.
// - The data path (posting a work request, dequeuing or waiting for an
//   event) takes no interface-wide lock.  The engine of an interface is
//   driven by whoever holds its engine token (Iface::token, spin_lock.hpp),
//   which the data path only ever tries: a consumer that gets it posts into
//   the queue pair and progresses inline on its own thread; one that does not
//   hands its work request to the holder through a lock-free ring
//   (Iface::handoff) and returns.  Completions reach consumers through each
//   EVD's event ring (event_queue.hpp), which the token holder fills.
// - The control path (CM messages and timers, creating / modifying / freeing
//   objects) holds the interface mutex `Iface::mu` and, while it touches
//   objects the data path reads, the token too: IfaceLock takes both.  So a
//   field the data path reads is written only under both (readers hold
//   either); one the data path writes under the token alone is read under
//   the token (or is atomic).
// - Passive-side progress is a policy per interface (IfaceConfig::progress):
//   `busy` and `adaptive` run a progress thread of the interface's own
//   (progress.cpp); `inline` runs none.  A consumer that polls or waits
//   drives the interface itself in every mode, and an adaptive thread steps
//   aside while it does.
//
// Handles: every object starts with one pointer-sized word reserved for the
// DAT 2.0 provider pointer (libdat2 dispatches through a handle's first
// word), then its type tag.  Live handles are kept in a registry, so a stale
// or foreign handle is reported as DAT_INVALID_HANDLE instead of being
// dereferenced.

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
#include "rc/engine.hpp"
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
  std::shared_ptr<const std::vector<uint8_t>> pdata_buf;
  // async and software events: `handle` is the object the event concerns
  // (nullptr: the IA), `reason` the object's DAT_*_ASYNC_ERROR_REASON value
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
  std::shared_ptr<const std::vector<uint8_t>> dequeued_pdata;
  std::atomic<bool> overflow_reported{false};
  std::unique_ptr<rc::CompletionQueue> cq;  // DTO / RMR bind EVDs
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
  kRepSent,
  kEstablished,
  kDraining,  // graceful disconnect: outstanding requests finish before the DREQ
  kDreqSent,
  kDone
};

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
  // Work requests accepted for this EP (posting threads) and those retired
  // from its queue pair as of the last completion delivered (token holder):
  // a request handed over while another thread drives the engine is refused
  // for a full queue on these counts (see ep_post).
  std::atomic<uint64_t> sends_posted{0}, sends_retired{0};
  std::atomic<uint64_t> recvs_posted{0}, recvs_retired{0};
  uint64_t sends_into_qp = 0, recvs_into_qp = 0;  // token holder
  Srq* srq = nullptr;  // receives come from this SRQ (dat_ep_create_with_srq)
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
  uint64_t conn_qual = 0;
  uint32_t my_psn = 0;
  wire::CmMessage out_msg;  // REQ / REP / DREQ being retransmitted
  uint64_t next_retx = 0, retx_interval = 0, deadline = 0;
  uint32_t retries = 0;
  Sp* sp = nullptr;                             // RSP that reserved it, or the PSP that created it
  alignas(8) unsigned char remote_sa[16] = {};  // front's sockaddr of the peer
  bool provider_created = false;
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

struct Srq : Object {
  Pz* pz = nullptr;
  std::unique_ptr<rc::Srq> rq;
  uint32_t max_recv_iov = rc::kMaxSge;
  std::vector<Ep*> eps;  // EPs taking receives from it
  explicit Srq(Ia* a) : Object(HandleType::kSrq, a) {}
};

// (SRQ operations: ops.hpp, srq.cpp.)

struct Ia : Object {
  Iface* iface = nullptr;
  Evd* async_evd = nullptr;
  bool async_evd_created = false;  // we made it (freed with the IA)
  std::unordered_set<Object*> children;
  alignas(8) unsigned char local_sa[16] = {};  // front's sockaddr of the interface
  explicit Ia() : Object(HandleType::kIa, nullptr) { ia = this; }
};

// ---------------------------------------------------------------- interface

// Limits an interface reports (DAT IA / EP attributes are filled from these).
struct Limits {
  uint32_t max_eps = 1024;
  uint32_t max_dto_per_ep = 4096;
  uint32_t max_evds = 4096;
  uint32_t max_evd_qlen = 1u << 16;
  uint32_t max_iov = rc::kMaxSge;
  uint32_t max_lmrs = 1u << 16;
  uint32_t max_rmrs = 1u << 14;
  uint32_t max_pzs = 1u << 16;
  uint64_t max_lmr_size = uint64_t{1} << 40;
  uint64_t max_message_size = 1u << 30;
  uint32_t max_rdma_read_per_ep = 16;
  uint32_t max_cm_pdata = static_cast<uint32_t>(wire::kCmReqPdata);
  uint32_t max_srqs = 1024;
  uint32_t max_recv_per_srq = 1u << 16;
  uint32_t max_ep_per_srq = 1024;
};

struct PassiveRec {
  Cr* cr = nullptr;  // pending request
  Ep* ep = nullptr;  // accepted
  bool rejected = false;
  wire::CmMessage rej;
  uint64_t expires = 0;
};

// The DREQ of a connection this side left abruptly (dat_ep_disconnect with
// DAT_CLOSE_ABRUPT_FLAG, dat_ep_free, dat_ia_close): the EP is DISCONNECTED
// at once, but the DREQ (and the ACK sent ahead of it) is repeated until
// the peer answers with a DREP, so that a peer whose first DREQ was lost
// still learns of the disconnect, and dat_ia_close can wait (bounded) until
// the peer has taken everything this side sent (see ia_close).
struct PendingDreq {
  uint32_t comm = 0;  // our communication ID (the DREP's remote_comm_id)
  wire::MacAddr mac{};
  uint32_t ip = 0;
  wire::CmMessage dreq;
  uint64_t next_retx = 0, retx_interval = 0;
  uint32_t retries = 0;
  const Ia* owner = nullptr;  // the IA whose EP sent it (compared, never read)
};

// A work request handed to the engine-token holder (ep_post / ep_post_recv
// while another thread drives the engine).
struct Handoff {
  Ep* ep = nullptr;
  rc::Qp* qp = nullptr;
  bool is_send = true;
  rc::SendWr send;
  rc::RecvWr recv;
};

// A CM MAD received by the engine (GSI), decoded, waiting for the CM.
struct CmIn {
  wire::CmMessage m;
  wire::MacAddr mac{};
  uint32_t ip = 0;
  uint16_t udp_port = 0;
};

struct Iface {
  std::mutex mu;      // control path (IfaceLock: with the token)
  EngineToken token;  // whoever drives the engine (see the top of this file)
  IfaceConfig cfg;
  Limits limits;
  std::unique_ptr<Link> link;  // the engine's packet I/O: destroyed after the engine
  std::unique_ptr<rc::MrTable> mr;
  std::unique_ptr<rc::Engine> engine;
  uint32_t pmtu = 1024;
  rc::CompletionQueue sink_cq{1024};  // completions of EPs without an EVD
  std::unordered_map<uint32_t, Ep*> ep_by_qpn;
  std::unordered_map<uint32_t, Ep*> ep_by_comm;
  std::unordered_map<uint64_t, Sp*> listeners;
  std::unordered_map<uint64_t, PassiveRec> passive;  // (peer ip << 32 | peer comm id)
  std::vector<Evd*> cq_evds;
  std::unordered_map<uint32_t, Lmr*> lmr_by_ctx;
  std::vector<Srq*> srqs;
  std::unordered_set<Ep*> watched;         // EPs with CM timers or a connection to watch
  std::vector<PendingDreq> pending_dreqs;  // abrupt disconnects awaiting their DREP
  std::vector<std::pair<wire::CmMsg, uint32_t>> cm_drops;  // cfg.cm_drop: still to lose
  MpscRing<Handoff> handoff{1024};
  std::vector<CmIn> cm_in;  // token held
  // When a consumer last drove the interface (an adaptive progress thread
  // stays out of its way meanwhile) and when traffic last moved.
  std::atomic<uint64_t> last_consumer_progress{0};
  std::atomic<uint64_t> last_traffic{0};
  // CM timers due at (0: at the next progress); lowered by the data path when
  // a failed completion may mean a broken connection.
  std::atomic<uint64_t> next_housekeeping{0};
  uint32_t next_pz = 1;
  uint32_t next_comm = 1;
  uint64_t rng = 0;
  uint32_t ias = 0;

  // Opens (first use) or returns the process's interface for this IA name.
  static Status get(const IfaceConfig& cfg, Iface** out, std::string* why);

  // Drives the interface once if its engine token is free (the data path:
  // no wait).  The control work that falls due (CM messages and timers) is
  // done too when the interface mutex is free, else left to the next
  // caller.  consumer: called on behalf of a consumer (post, poll, wait).
  // Returns true when anything moved.
  bool drive(uint64_t now, bool consumer);

  // All below: caller holds mu and the token (IfaceLock) unless noted.
  // One progress step: hand-offs, engine poll, CM messages, completions to
  // EVDs, CM timers.  Returns true when anything moved.
  bool progress(uint64_t now, bool consumer);
  // Token held.  The data part of a step; the CM part only when `ctl`
  // (mu held too).
  bool step(uint64_t now, bool ctl);
  // Token held: gives the handed-off work requests to their queue pairs.
  bool drain_handoff();
  // Token held: a send / receive straight into the EP's queue pair, behind
  // what was handed off before it.
  rc::Qp::PostResult post_send_now(Ep* ep, const rc::SendWr& wr);
  rc::Qp::PostResult post_recv_now(Ep* ep, const rc::RecvWr& wr);
  void housekeep_by(uint64_t t) {
    uint64_t cur = next_housekeeping.load(std::memory_order_relaxed);
    while (t < cur && !next_housekeeping.compare_exchange_weak(cur, t)) {
    }
  }
  // Token held (every producer holds it).
  void deliver(Evd* evd, Event&& ev);
  uint32_t random32();

  // connection manager (cm.cpp)
  // Engine's GSI handler (token held): decodes the MAD into cm_in.
  void on_gsi(const wire::PacketView& v, uint64_t now);
  // Handles the queued MADs (mu and token held).
  void process_cm_in(uint64_t now);
  void on_cm(const CmIn& in, uint64_t now);
  Status connect(Ep* ep, uint32_t ip, uint64_t conn_qual, uint64_t timeout_us, const uint8_t* pdata,
                 uint32_t pdata_len);
  Status accept(Cr* cr, Ep* ep, const uint8_t* pdata, uint32_t pdata_len);
  Status reject(Cr* cr, const uint8_t* pdata, uint32_t pdata_len);
  Status disconnect(Ep* ep, bool abrupt);
  void cm_timers(uint64_t now);
  void drop_ep(Ep* ep);  // forget an EP in every CM table (EP freed / reset)
  // Whether a DREQ in pending_dreqs with this communication ID still waits.
  bool dreq_pending(uint32_t comm) const;
  void drop_cr(Cr* cr);

  // SRQ watermark notifications (srq.cpp).
  void check_srqs();
  // Delivers an asynchronous event about `handle` to the IA's async EVD.
  void async_event(Ia* ia, EventNum n, Object* handle, uint32_t reason);

  // EP queue pair management
  Status make_qp(Ep* ep);
  void destroy_qp(Ep* ep);

 private:
  bool drain_cq(Evd* evd);
  // The event for RC completion `c` of `ep` on `evd` (a bind's also moves
  // its RMR's FIFO of pending binds on).
  Event cq_event(Evd* evd, const rc::Completion& c, Ep* ep);
  // Before the EP's queue pair goes: its completions still queued by QPN.
  void settle_completions(Ep* ep);
  void report_overflow(Evd* evd);
  void conn_event(Ep* ep, EventNum n, const uint8_t* pdata, uint32_t len);
  void finish_disconnect(Ep* ep, EventNum n, const uint8_t* pdata = nullptr, uint32_t len = 0);
  void send_cm(const wire::MacAddr& mac, uint32_t ip, const wire::CmMessage& m);
  void send_rej(const wire::MacAddr& mac, uint32_t ip, const wire::CmMessage& req,
                wire::CmRejReason why, const uint8_t* pdata, uint32_t len);
  void on_req(const wire::CmMessage& m, const wire::MacAddr& mac, uint32_t ip, uint16_t port,
              uint64_t now);
  void on_rep(const wire::CmMessage& m, uint64_t now);
  void on_rtu(const wire::CmMessage& m);
  void on_rej(const wire::CmMessage& m);
  void on_dreq(const wire::CmMessage& m, const wire::MacAddr& mac, uint32_t ip);
  void on_drep(const wire::CmMessage& m);
  // Builds and sends the EP's DREQ (retransmitted from then on: kDreqSent).
  void send_dreq(Ep* ep, uint64_t now);
  // (Re)sends the EP's out_msg (REQ, REP or DREQ) and backs its timer off.
  void send_out(Ep* ep, uint64_t now);
  // Moves the EP's DREQ (sent, unanswered) to pending_dreqs.
  void keep_dreq(const Ep* ep);
  void pending_dreq_timers(uint64_t now, uint64_t* next);
};

// CNO agent upcalls (DAT_OS_WAIT_PROXY_AGENT).  An agent may call back into
// DAT (typically dat_evd_dequeue on the EVD it is told about), so it never
// runs under an interface lock: Iface::deliver() queues the upcall on the
// delivering thread, and that thread makes it once it holds no interface
// lock any more (IfaceLock releases; the progress paths likewise), in
// delivery order.  The CNO may be freed, or given another agent, meanwhile:
// the upcall looks the CNO handle up again and calls the agent the CNO has
// then, or nothing when the CNO is gone.  The EVD handle given to the agent
// is only a handle: one freed meanwhile is refused as DAT_INVALID_HANDLE.
void queue_upcall(Iface* f, Cno* cno, Evd* evd);
// Makes this thread's queued upcalls; nothing while it holds an interface
// lock or is already making them (an agent's own calls into DAT: the outer
// loop makes what they queue, after the agent returns).
void run_upcalls();
void note_iface_locked();
void note_iface_unlocked();

// The control path's lock: the interface mutex, then the engine token
// (BasicLockable, so condition_variable_any waits on it, releasing both).
// Counts the interface locks this thread holds and makes the queued agent
// upcalls when the last one is released.
class IfaceLock {
 public:
  explicit IfaceLock(Iface* f) : f_(f) { lock(); }
  IfaceLock(const IfaceLock&) = delete;
  IfaceLock& operator=(const IfaceLock&) = delete;
  ~IfaceLock() {
    if (owns_) unlock();
  }
  void lock() {
    f_->mu.lock();
    f_->token.lock();
    owns_ = true;
    note_iface_locked();
  }
  void unlock() {
    owns_ = false;
    f_->token.unlock();
    f_->mu.unlock();
    note_iface_unlocked();
    run_upcalls();
  }
  bool owns_lock() const { return owns_; }

 private:
  Iface* f_;
  bool owns_ = false;
};

// Drives every other interface of the process once (try-lock: an interface
// some other thread is driving is skipped).  For waits on one interface of
// an in-process pair whose peer must move too.
void progress_others(Iface* except);

// Whether the process has an interface without a progress thread (its
// waiters then drive the others: an in-process peer may be inline).
bool any_inline_iface();

// Starts the interface's progress thread (busy / adaptive; progress.cpp).
void start_progress(Iface* f);

// Translates an RC completion status to the DAT DTO status.
DtoStatus dto_status(rc::WcStatus s);

}  // namespace dpdat::dat
