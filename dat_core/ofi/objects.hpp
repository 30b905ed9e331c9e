#pragma once
// The libfabric objects of the dpdat provider (libdpdat-fi.so) and how each
// sits on the dat_core objects of ops.hpp — the same objects libdat and the
// DAT 2.0 plug-in use:
//
//   fabric   -> one IA on the process's dpdat interface (opened on first use)
//   domain   -> a PZ of that IA
//   EQ       -> an EVD with the CR and connection streams
//   CQ       -> an EVD with the DTO stream
//   MR       -> an LMR (its context is the key)
//   PEP      -> a PSP whose connection qualifier is the sockaddr's port
//   EP       -> an EP, created at fi_enable from the bound CQs and EQ
//
// Every libfabric struct (fid_*) is the first member of its object, so the
// fid pointer libfabric hands back converts to the object.  The DAT EP's and
// PSP's consumer context point back at the provider's object.

#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ops.hpp"
#include "spin_lock.hpp"

namespace dpdat::ofi {

inline constexpr const char* kProvName = "dpdat";
inline constexpr const char* kFabricName = "dpdat";
inline constexpr uint32_t kProvVersion = FI_VERSION(0, 1);
inline constexpr uint32_t kApiVersion = FI_VERSION(1, 17);
inline constexpr size_t kInjectSize = 256;
inline constexpr size_t kInjectSlots = 64;
// One inject slot in this many asks for a completion (any other only when
// its consumer wants one): completions come in order, so one frees the
// slots posted before it too, and a full ring always holds some that will.
inline constexpr uint64_t kInjectSignalEvery = 16;
inline constexpr size_t kCqDataSize = 4;
inline constexpr size_t kCmDataSize = 92;  // what a CM REQ carries (wire::kCmReqPdata)
inline constexpr size_t kTxSize = 256;
inline constexpr size_t kRxSize = 256;
inline constexpr uint64_t kConnectTimeoutUs = 30'000'000;
// FI_OPT_MIN_MULTI_RECV until the consumer sets it.
inline constexpr size_t kMinMultiRecv = 64;

extern fi_provider g_prov;

// The dpdat interface this process uses (config.cpp): the IA named by
// DPDAT_FI_IA, where "%r" stands for the local rank (Open MPI's
// OMPI_COMM_WORLD_LOCAL_RANK, else 0); default "fi%r".  The name resolves as
// every IA name does (DPDAT_IA_<NAME>, the DPDAT_CONF file, the built-ins).
bool process_iface(dat::IfaceConfig* out, std::string* why);
// The interfaces fi_getinfo offers: the process's one; when DPDAT_FI_IA is
// unset and the default name is unknown, every interface the registry knows
// (each a domain of its own name).  False when there is none.
bool process_ifaces(std::vector<dat::IfaceConfig>* out, std::string* why);

// DPDAT_FI_STATS=1: closing a fabric prints its interface's frame counters
// to stderr ("dpdat-fi: <name> tx_frames N rx_frames M"), so a job can show
// that dpdat carried its traffic.
bool stats_wanted();

// A sockaddr_in of an address (host byte order) and port.
sockaddr_in make_sin(uint32_t ip, uint16_t port);
// The IPv4 address and port of a FI_SOCKADDR_IN / FI_SOCKADDR address;
// false for anything else.
bool parse_sin(const void* addr, size_t len, uint32_t* ip, uint16_t* port);

// fi_getname's answer: the address into (addr, *addrlen) (ep.cpp).
int put_name(const sockaddr_in& s, void* addr, size_t* addrlen);
// fi_control's FI_GETOPSFLAG / FI_SETOPSFLAG on an endpoint's transmit and
// receive operation flags; -FI_ENOSYS for other commands.
int ops_flags_control(int command, void* arg, uint64_t* tx, uint64_t* rx);

// Status of a dat_core operation -> negative libfabric errno.
int to_fi(dat::Status st);

// --------------------------------------------------------------- wait objects

// An FD wait object (wait.cpp): an eventfd written by the CNO of the
// object's EVD while armed by fi_trywait.
struct WaitFd {
  int fd = -1;
  std::atomic<bool> armed{false};
  dat::Cno* cno = nullptr;
};
// Makes the eventfd (0 or -errno).
int waitfd_open(WaitFd* w);
// Makes the CNO on ia (once; nothing without an eventfd), its agent
// signalling w alone (an EQ's; a CQ's CNO runs cq_agent).
int waitfd_attach(WaitFd* w, dat::Ia* ia);
// Makes the descriptor readable when armed (and disarms).
void waitfd_signal(WaitFd* w);
// Empties the descriptor and arms it; the caller then checks its queue.
void waitfd_arm(WaitFd* w);
// Disarms (the consumer reads its queue before it sleeps): a late agent
// call for an event already read then writes nothing.
void waitfd_disarm(WaitFd* w);
void waitfd_close(WaitFd* w);
// fi_control's FI_GETWAIT / FI_GETWAITOBJ.
int waitfd_control(WaitFd* w, fi_wait_obj obj, int command, void* arg);
// Whether *obj is a wait object the provider offers on fab (0, -FI_ENOSYS);
// FI_WAIT_UNSPEC becomes the one it picks.
int check_wait_obj(fi_wait_obj* obj, const struct Fabric* fab);
// fi_trywait over CQs and EQs.
int trywait(fid_fabric* fabric, fid** fids, int count);

// --------------------------------------------------------------- objects

struct Fabric {
  fid_fabric fabric{};
  dat::IfaceConfig cfg;  // empty name: picked by the first domain or passive EP
  std::mutex mu;
  dat::Ia* ia = nullptr;  // opened by the first domain or passive EP
  uint32_t refs = 0;      // domains, EQs, passive EPs
};
// Opens the fabric's IA (progress as the info asks) on first use.
int fabric_ia(Fabric* f, const fi_info* info, dat::Ia** out);
// Settles the fabric's interface: the one the info's domain names (or the
// first offered) when none is yet; -FI_EINVAL when it names another.
int fabric_pick(Fabric* f, const fi_info* info);
// The address a passive endpoint is bound to; false when f is not one.
bool pep_address(const fid* f, uint32_t* ip, uint16_t* port);

struct RdmEp;

struct Domain {
  fid_domain domain{};
  Fabric* fab = nullptr;
  dat::Pz* pz = nullptr;
  // Its lmr_context is the lkey of a buffer without a descriptor: a
  // local-only LMR over the process's address space
  // (dat::lmr_create_local_only).
  dat::Lmr* any_lmr = nullptr;
  uint64_t mr_mode = 0;
  std::atomic<uint32_t> refs{0};  // CQs, MRs, EPs
  // Its enabled RDM endpoints: each one's progress also answers the
  // others' connection requests.
  dat::SpinLock rdm_mu;
  std::vector<RdmEp*> rdm_eps;
};

struct Cntr;
struct Mr {
  fid_mr mr{};
  Domain* dom = nullptr;
  dat::Lmr* lmr = nullptr;
  uintptr_t base = 0;  // host address of the registered bytes
  // fi_mr_bind: counters of the remote WRITEs into / READs out of it.
  Cntr* cntr_rem_write = nullptr;
  Cntr* cntr_rem_read = nullptr;
};

// An EQ entry waiting to be read: a completed event (struct bytes after the
// event number) or an error entry.
struct EqEntry {
  uint32_t event = 0;
  std::vector<uint8_t> bytes;  // fi_eq_entry / fi_eq_cm_entry (+ CM data)
  bool is_err = false;
  fi_eq_err_entry err{};
  std::vector<uint8_t> err_data;
};

struct Eq {
  fid_eq eq{};
  Fabric* fab = nullptr;
  size_t size = 0;
  std::mutex mu;
  dat::Evd* evd = nullptr;  // created when the first EP / PEP binds
  std::deque<EqEntry> entries;
  std::vector<uint8_t> last_err_data;  // valid until the next read
  std::atomic<uint32_t> refs{0};       // bound EPs / PEPs
  fi_wait_obj wait_obj = FI_WAIT_NONE;
  WaitFd wait;
};
// fi_trywait on an EQ: 0 when it is empty (and armed), -FI_EAGAIN if not.
int eq_trywait(Eq* eq);
// Converts every event waiting in the EQ's EVD (before an EP goes: its
// connection events name it by address, which a new EP may take over).
void eq_drain(Eq* eq);
// Drops the entries about a closed endpoint, so that a consumer never reads
// an event naming a freed fid (ofi_rxm relies on this).
void eq_forget(Eq* eq, const fid* f);
// Creates the EQ's EVD on ia (first bind).
int eq_attach(Eq* eq, dat::Ia* ia);

// An inject / bounce slot: bytes the provider owns, sent from its own
// registration; `report` when the consumer asked for a completion.
struct Slot {
  bool report = false;
  void* context = nullptr;
  uint64_t flags = 0;
  size_t len = 0;
};

// A DTO event taken off a CQ's EVD; an inject slot's completion frees the
// slot when it is taken off, and carries what the slot said.  `unreported`:
// a transfer signalled only for a counter (its success makes no entry).
struct CqEvent {
  dat::Event ev;
  bool slotted = false;
  bool unreported = false;
  Slot slot;
};

struct Ep;
struct RdmEp;

// An entry of a CQ bound to reliable-datagram endpoints (rdm_cq.cpp): made
// by their protocol rather than read off an EVD; `src` is the sender's
// address for fi_cq_readfrom (FI_ADDR_NOTAVAIL when it is in no AV entry).
struct RdmEntry {
  fi_cq_tagged_entry e{};
  fi_addr_t src = FI_ADDR_NOTAVAIL;
  bool is_err = false;
  int err = 0;
  size_t olen = 0;
};

struct Cq {
  fid_cq cq{};
  Domain* dom = nullptr;
  fi_cq_format format = FI_CQ_FORMAT_CONTEXT;
  size_t size = 0;
  dat::Evd* evd = nullptr;
  dat::SpinLock mu;           // held for one read (the data path: no futex)
  std::deque<CqEvent> stash;  // taken off the EVD while reclaiming inject slots
  CqEvent scratch;            // the event a read converts (under mu)
  std::optional<fi_cq_err_entry> err;
  std::atomic<uint32_t> refs{0};  // bound EPs
  fi_wait_obj wait_obj = FI_WAIT_NONE;
  WaitFd wait;
  std::atomic<bool> counting{false};  // a bound EP has counters: receives are counted
  bool internal = false;              // made for an EP's counters, never read by a consumer
  // The wait objects of FD counters that count this CQ's completions: the
  // CQ's CNO (made for them when the CQ has no descriptor of its own)
  // signals them too.
  std::mutex listen_mu;
  std::vector<WaitFd*> listeners;
  // Bound to reliable-datagram endpoints (then to no other kind): reads
  // progress them and take their entries.
  std::atomic<bool> rdm{false};
  bool msg_bound = false;  // a connected endpoint was bound to it
  dat::SpinLock rdm_mu;    // the two below
  std::vector<RdmEp*> rdm_eps;
  std::deque<RdmEntry> rdm_q;
  // fi_cq_signal: the next (or current) fi_cq_sread returns at once.
  std::atomic<bool> signaled{false};
};
// The fi_errno of a failed DTO (cq.cpp).
int dto_errno(dat::DtoStatus s, rc::WcOp op);
// The agent of a CQ's CNO: signals the CQ's descriptor and its listeners'.
void cq_agent(void* instance, void* evd);
// Registers / removes a counter's wait object as a listener of cq (once per
// binding: a counter counting two kinds of completion on it listens twice).
int cq_listen(Cq* cq, WaitFd* w);
void cq_unlisten(Cq* cq, WaitFd* w);
// fi_trywait on a CQ: 0 when it is empty (and armed), -FI_EAGAIN if not.
int cq_trywait(Cq* cq);
// Takes every event off the CQ's EVD (counting what bound counters count)
// into its stash; an internal CQ's successes are dropped.
void cq_progress(Cq* cq);
// A CQ of the domain for an EP's counters alone (the EP has no CQ there).
int cq_internal(Domain* d, Cq** out);
void cq_internal_close(Cq* cq);

// A counter (cntr.cpp): completions of the bound EPs' transfers, taken off
// their CQs' EVDs whenever the counter or a CQ is read; and the remote
// WRITEs and READs they serve (FI_REMOTE_WRITE, FI_REMOTE_READ), which
// their queue pairs' responders add to `value` themselves.
struct Cntr {
  fid_cntr cntr{};
  Domain* dom = nullptr;
  std::atomic<uint64_t> value{0}, errs{0};
  fi_wait_obj wait_obj = FI_WAIT_NONE;
  WaitFd wait;  // FI_WAIT_FD: written when a bound EP's CQ gets a completion
  std::mutex mu;
  std::vector<Ep*> eps;         // bound EPs (their CQs are progressed by reads)
  std::vector<RdmEp*> rdm_eps;  // bound RDM endpoints (progressed by reads)
  std::atomic<uint32_t> refs{0};
};
// fi_trywait on a counter: 0 when no completion waits to be counted (and
// it is armed), -FI_EAGAIN if one does.
int cntr_trywait(Cntr* c);
// The CQs an enabled EP's counters count from listen for the FD counters
// (ep_enable), and stop at its close.
int cntr_listen_ep(Ep* ep);
void cntr_unlisten_ep(Ep* ep);
int cntr_open(fid_domain* domain, fi_cntr_attr* attr, fid_cntr** out, void* context);
void cntr_bump(Cntr* c, bool ok);
void cntr_unbind(Cntr* c, Ep* ep);
void cntr_unbind_rdm(Cntr* c, RdmEp* ep);
// Takes what the bound endpoints completed (their CQs' events, their
// protocol's progress) so that the counter counts it.
void cntr_progress(Cntr* c);
int poll_open(fid_domain* domain, fi_poll_attr* attr, fid_poll** out);
// Takes events off the CQ's EVD into its stash until one of them freed an
// inject slot; false when the EVD ran dry first.
bool reclaim_slots(Cq* cq);

// fi_info::handle of a FI_CONNREQ event.
struct ConnReq {
  fid fid_{};
  dat::Cr* cr = nullptr;
};

struct Pep {
  fid_pep pep{};
  Fabric* fab = nullptr;
  fi_info* info = nullptr;
  Eq* eq = nullptr;
  dat::Sp* sp = nullptr;
  uint16_t port = 0;
};

// A buffer posted with FI_MULTI_RECV (multi_recv.cpp): its DAT cookie, so
// that each message's completion can say where in it the message landed.
struct MultiRecv {
  void* context = nullptr;
  iovec iov[rc::kMaxSge] = {};
  size_t count = 0;
};

// A shared receive context (srx.cpp): a DAT SRQ of the domain's PZ; the
// endpoints bound to it take their receives from it, and each reports the
// messages it received on its own receive CQ.
struct Srx {
  fid_ep ep{};
  Domain* dom = nullptr;
  dat::Srq* srq = nullptr;
  uint64_t op_flags = 0;
  std::atomic<uint32_t> refs{0};  // bound EPs
};
int srx_open(fid_domain* domain, fi_rx_attr* attr, fid_ep** out, void* context);

struct Ep {
  fid_ep ep{};
  Domain* dom = nullptr;
  fi_info* info = nullptr;
  Eq* eq = nullptr;
  Cq* txcq = nullptr;
  Cq* rxcq = nullptr;
  Srx* srx = nullptr;  // receives come from it
  bool tx_selective = false;
  bool rx_selective = false;
  uint64_t tx_op_flags = 0;
  uint64_t rx_op_flags = 0;
  dat::Ep* dep = nullptr;
  ConnReq* creq = nullptr;  // passive side: the request fi_accept answers
  uint16_t src_port = 0;    // the bound source address's port (fi_getname)
  uint16_t peer_port = 0;
  uint32_t peer_ip = 0;
  // The inject slots are a ring, taken in the order their requests are
  // posted (slot_mu is held from taking one to posting it): slot_head is
  // the next to take, slot_tail the oldest still in flight.
  dat::SpinLock slot_mu;
  uint64_t slot_head = 0, slot_tail = 0;
  // Counters bound (FI_SEND, FI_RECV, FI_READ, FI_WRITE); a transfer whose
  // completion only a counter wants carries &no_report as its cookie.
  Cntr* cntr_send = nullptr;
  Cntr* cntr_recv = nullptr;
  Cntr* cntr_read = nullptr;
  Cntr* cntr_write = nullptr;
  // FI_REMOTE_WRITE / FI_REMOTE_READ: the responder adds to their values.
  Cntr* cntr_rem_write = nullptr;
  Cntr* cntr_rem_read = nullptr;
  bool listened = false;  // its FD counters listen to its CQs (cntr_listen_ep)
  uint8_t no_report = 0;
  std::vector<uint8_t> bounce;
  std::vector<Slot> slots;
  dat::Lmr* bounce_lmr = nullptr;
  // Multi-receive buffers posted and not yet released (their nodes are
  // the cookies); FI_OPT_MIN_MULTI_RECV.
  dat::SpinLock multi_mu;
  std::list<MultiRecv> multi;
  size_t min_multi_recv = kMinMultiRecv;
};

// fi_recvmsg with FI_MULTI_RECV: posts the buffer as one multi-receive.
ssize_t multi_recv_post(Ep* ep, const iovec* iov, const rc::Sge* sge, size_t count, void* context);
// What a multi-receive's event reports: the buffer's context, where the
// message landed, and (released) FI_MULTI_RECV; the buffer is forgotten
// with its last event.  False when the event is not one of ep's (the
// endpoint was closed).
struct MultiHit {
  void* context = nullptr;
  void* buf = nullptr;
  bool released = false;
};
bool multi_recv_event(Ep* ep, const dat::Event& ev, MultiHit* out);

// The local segments of the consumer's iovecs and descriptors (0, or
// -FI_EINVAL for a value that is no descriptor, or a source buffer without
// one that no process can map: in the first page, wrapping around, past the
// address space).  A buffer without a descriptor (desc or desc[i] NULL)
// goes through the domain's local-only key; a receive buffer (`recv`) is
// judged by the engine for the bytes a message writes, so a receive at NULL
// takes empty messages (as fabtests' fi_shared_ctx posts them).
int iov_sges(const Domain* d, const iovec* iov, void* const* desc, size_t count, rc::Sge* sge,
             uint64_t* total, bool recv);

// Whether `cookie` names one of ep's inject slots; frees it (and the slots
// taken before it, which completed first) and reports what the consumer
// asked for.
bool slot_of(Ep* ep, uint64_t cookie, Slot* out);

// --------------------------------------------------------------- entry points

int getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
            const fi_info* hints, fi_info** info);
int fabric_open(fi_fabric_attr* attr, fid_fabric** fabric, void* context);
int domain_open(fid_fabric* fabric, fi_info* info, fid_domain** dom, void* context);
int eq_open(fid_fabric* fabric, fi_eq_attr* attr, fid_eq** eq, void* context);
int cq_open(fid_domain* domain, fi_cq_attr* attr, fid_cq** cq, void* context);
int mr_reg(fid* fid, const void* buf, size_t len, uint64_t access, uint64_t offset,
           uint64_t requested_key, uint64_t flags, fid_mr** mr, void* context);
int mr_regv(fid* fid, const iovec* iov, size_t count, uint64_t access, uint64_t offset,
            uint64_t requested_key, uint64_t flags, fid_mr** mr, void* context);
int mr_regattr(fid* fid, const fi_mr_attr* attr, uint64_t flags, fid_mr** mr);
int pep_open(fid_fabric* fabric, fi_info* info, fid_pep** pep, void* context);
int ep_open(fid_domain* domain, fi_info* info, fid_ep** ep, void* context);
int query_atomic(fid_domain* domain, fi_datatype datatype, fi_op op, fi_atomic_attr* attr,
                 uint64_t flags);

// EQ events from the DAT connection events (eq.cpp).
void eq_convert(Eq* eq, const dat::Event& ev);

// Stubs for calls the provider does not offer (-FI_ENOSYS).
int no_bind(fid*, fid*, uint64_t);
int no_control(fid*, int, void*);
int no_ops_open(fid*, const char*, uint64_t, void**, void*);
int no_tostr(const fid*, char*, size_t);
int no_ops_set(fid*, const char*, uint64_t, void*, void*);

// The fid's object, or nullptr when it is not of that class.
template <typename T>
T* object_of(fid* f, size_t fclass) {
  return f != nullptr && f->fclass == fclass ? reinterpret_cast<T*>(f) : nullptr;
}

}  // namespace dpdat::ofi
