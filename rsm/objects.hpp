// librsm: the RSMAPI of include/rsm/rsmapi.h, built on dpdat's public uDAPL
// 1.2 API (libdat.so.1), so segments, imports and DAT programs share one IA
// registry, one set of interfaces and one memory table per interface.
//
// Per controller (= one DAT IA): a PZ, a public service point on kRsmQual and
// one service EVD (CR + connection + DTO + software events) on which a
// service thread blocks in dat_evd_wait.  That thread evaluates every
// connection request against the segment's ACL in force at that moment,
// accepts with a reply {status, granted permission, rmr_context, address,
// length}, turns connection events into import/export state, and turns
// received SENDs into RSM signals.
//
// An import is one RC endpoint.  get/put are RDMA READ/WRITE against the
// registration the exporter chose for the granted permission (one LMR per
// permission kind, so the exporter's transport refuses an access the grant
// does not cover), staged through a registered bounce buffer, or moved
// directly for rsm_localmemory handles.  Unpublish disconnects every importer
// and frees those registrations: a stale key fails at the exporter.
//
// Node IDs: an interface's node= setting, else the low 16 bits of its IPv4
// address.  The exporter learns an importer's node from the source address
// of the connection request (the CM exchange), mapped through the IA
// registry; nothing in the request's private data names the node.
//
// Files: controller, service (ACL decisions), export, import, import_io,
// import_map, barrier, signals; this header holds what they share.
#pragma once

#include <dat/udat.h>
#include <rsm/rsmapi.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "config.hpp"

namespace dpdat::rsm {

struct Mapping;  // import_map.cpp

constexpr DAT_CONN_QUAL kRsmQual = 0x52534D31;  // "RSM1": the controller's PSP
constexpr uint32_t kMagic = 0x52534D31;
constexpr uint32_t kSlots = 8;               // receive slots per endpoint (signals)
constexpr size_t kSlotBytes = 64;            // one slot; slot kSlots is the send slot
constexpr size_t kBounceBytes = 256 * 1024;  // staging for synchronous accesses
constexpr size_t kRingBytes = 1024 * 1024;   // staging for puts in flight (explicit mode)
constexpr size_t kMaxInFlight = 64;          // puts in flight per import
constexpr size_t kDirectChunk = size_t{1} << 24;
constexpr unsigned kMaxAcl = 1u << 20;  // longest ACL a segment may carry
constexpr DAT_TIMEOUT kConnectUs = 10'000'000;
constexpr DAT_TIMEOUT kDtoUs = 30'000'000;
constexpr auto kClosingWait = std::chrono::seconds(60);
constexpr auto kEstablishWait = std::chrono::seconds(5);
constexpr uint32_t kHpcEnd = RSM_HPC_ID_END;

// Connection request private data (importer -> exporter), <= 92 bytes.
struct ReqPdata {
  uint32_t magic;
  uint32_t segid;
  uint32_t perm;  // RSM_PERM_* bits
  uint32_t uid;   // selects the owner / group / other digit
  uint32_t gid;
  uint32_t flags;  // kReqMapping
};
// ReqPdata::flags: the connection of a mapping (import_map.cpp), which
// takes no signals.
constexpr uint32_t kReqMapping = 1;
// Accept private data (exporter -> importer), <= 196 bytes.
struct RepPdata {
  uint32_t magic;
  int32_t status;  // RSM_SUCCESS or the RSMERR_* refusing the import
  uint32_t perm;   // granted RSM_PERM_* bits
  uint32_t rmr_context;
  uint64_t addr;
  uint64_t len;
};
// A SEND carrying one RSM signal.
struct SigMsg {
  uint32_t magic;
  uint32_t segid;
  uint32_t flags;
  uint32_t pad;
};

// ACL storage allocated with malloc, so a failed allocation is an ordinary
// std::bad_alloc (RSMERR_INSUFFICIENT_MEM) under sanitizers as well, whose
// operator new reports and aborts instead.
template <typename T>
struct MallocAlloc {
  using value_type = T;
  MallocAlloc() = default;
  template <typename U>
  explicit MallocAlloc(const MallocAlloc<U>&) {}
  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    void* p = std::malloc(n * sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  bool operator==(const MallocAlloc&) const { return true; }
};
using Acl = std::vector<rsmapi_access_entry_t, MallocAlloc<rsmapi_access_entry_t>>;

enum class Tag : uint32_t { kCtl = 0x43544c31, kExport, kImport, kLocal, kBarrier };

struct Controller;
struct ExportSeg;
struct ImportSeg;

// Pending-signal count mirrored by a non-semaphore eventfd holding 1 while
// count > 0.  Guarded by Controller::mu.
struct Signals {
  int efd = -1;
  uint64_t pending = 0;
  int pollfd_refs = 0;
  void add(bool accumulate) {
    const bool was_empty = pending == 0;
    pending = accumulate ? pending + 1 : std::max<uint64_t>(pending, 1);
    if (was_empty) {
      const uint64_t one = 1;
      (void)!write(efd, &one, sizeof(one));
    }
  }
  bool take() {
    if (pending == 0) return false;
    if (--pending == 0) {
      uint64_t v = 0;
      (void)!read(efd, &v, sizeof(v));
    }
    return true;
  }
};

// One RC endpoint of either side, with its control slots (receives for
// signals and one send slot).
struct Conn {
  bool exporter = false;
  Controller* ctl = nullptr;
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE req_evd = DAT_HANDLE_NULL;
  uint8_t* buf = nullptr;
  DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT lctx = 0;
  ExportSeg* seg = nullptr;  // exporter side; null for a refused request
  ImportSeg* imp = nullptr;  // importer side
  rsm_node_id_t peer_node = 0;
  bool established = false;
  bool mapping = false;  // exporter side: a mapping's connection (no signals)
  bool closed = false;
  std::mutex send_mu;  // one SEND in flight from the send slot
  int users = 0;       // signal posts using it outside Controller::mu
  bool dead = false;   // closed while in use: the last user frees it
};

struct Lmr {
  DAT_LMR_HANDLE h = DAT_HANDLE_NULL;
  DAT_RMR_CONTEXT rctx = 0;
};

struct ExportSeg {
  Tag tag = Tag::kExport;
  Controller* ctl = nullptr;
  pid_t creator = 0;
  uint8_t* vaddr = nullptr;
  size_t size = 0;
  unsigned flags = 0;
  bool published = false;
  rsm_memseg_id_t segid = 0;
  Acl acl;                     // sorted by node; empty = every node
  Lmr lmr[3];                  // read, write, read+write
  std::vector<Conn*> conns;    // granted importers
  std::vector<Conn*> closing;  // being disconnected by unpublish
  int wake_efd = -1;           // written when closing shrinks
  Signals sig;
};

struct ImportSeg {
  Tag tag = Tag::kImport;
  Controller* ctl = nullptr;
  std::mutex op_mu;  // one access at a time on this handle
  Conn* conn = nullptr;
  rsm_node_id_t node = 0;
  rsm_memseg_id_t segid = 0;
  uint32_t perm = 0;
  uint32_t rctx = 0;
  uint64_t raddr = 0;
  uint64_t size = 0;
  int conn_result = 0;  // set by the service thread: 1 established, <0 failed
  DAT_EVENT_NUMBER conn_event = DAT_CONNECTION_EVENT_ESTABLISHED;
  RepPdata rep{};
  bool aborted = false;  // the exporter went away / unpublished
  uint64_t errors = 0;   // failed accesses (barriers compare)
  rsm_barrier_mode_t mode = RSM_BARRIER_MODE_IMPLICIT;
  // bounce: kBounceBytes of synchronous staging, then the kRingBytes ring
  // holding puts in flight (explicit barrier mode), in posting order.
  uint8_t* bounce = nullptr;
  DAT_LMR_HANDLE bounce_lmr = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT bounce_lctx = 0;
  struct InFlight {
    uint64_t cookie;
    size_t off, len;
  };
  std::deque<InFlight> in_flight;  // under op_mu
  size_t ring_tail = 0;
  uint64_t next_cookie = 1;
  Signals sig;
  Mapping* map = nullptr;  // rsm_memseg_import_map, under op_mu
  bool hidden = false;     // a mapping's own connection: no handle of its own
};

struct LocalMem {
  Tag tag = Tag::kLocal;
  Controller* ctl = nullptr;
  char* vaddr = nullptr;
  size_t len = 0;
  DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT lctx = 0;
};

struct Barrier {
  Tag tag = Tag::kBarrier;
  ImportSeg* imp = nullptr;
  rsm_barrier_type_t type = RSM_BARRIER_SEGMENT;
  bool open = false;
  uint64_t snap = 0;
};

struct Controller {
  Tag tag = Tag::kCtl;
  std::string name;
  dpdat::dat::IfaceConfig cfg;
  rsm_node_id_t node = 0;
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE sevd = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
  DAT_IA_ATTR attr{};
  std::thread service;
  bool stopping = false;
  std::mutex mu;
  std::condition_variable cv;
  int user_refs = 0;
  int seg_refs = 0;  // export, import and local-memory handles alive
  std::map<rsm_memseg_id_t, ExportSeg*> published;
  std::unordered_map<DAT_EP_HANDLE, Conn*> conns;
  std::vector<ImportSeg*> imports;  // connected imports (node barriers)
  std::map<rsm_node_id_t, uint64_t> node_errors;
  unsigned long max_export = 1024;
  uint32_t next_id = RSM_USER_APP_ID_BASE;
  size_t page = 4096;
  unsigned default_mode = 0644;
};

// Live handles of every kind, so a stale or foreign pointer is refused.
extern std::mutex g_mu;
extern std::map<std::string, Controller*> g_ctls;
extern std::set<std::string> g_busy;
extern std::condition_variable g_ctls_cv;
extern std::unordered_map<const void*, Tag> g_live;

void live_add(const void* p, Tag t);
void live_del(const void* p);
template <typename T>
T* live(const void* p, Tag t) {
  if (p == nullptr) return nullptr;
  std::lock_guard<std::mutex> lk(g_mu);
  auto it = g_live.find(p);
  if (it == g_live.end() || it->second != t) return nullptr;
  return static_cast<T*>(const_cast<void*>(p));
}

inline bool dat_ok(DAT_RETURN r) { return r == DAT_SUCCESS; }

// controller.cpp
// Every DAT failure while setting up an object is a shortage of the
// interface's objects or keys as far as an RSM caller can tell.
int resource_err(DAT_RETURN r);
unsigned creation_mode();
rsm_node_id_t node_of_ip(uint32_t ip);
bool ip_of_node(const Controller* ctl, rsm_node_id_t node, uint32_t* ip);
void teardown(Controller* c);
void unref(Controller* c, bool user);
int open_controller(const std::string& name, Controller** out);
Controller* ctl_ref(rsmapi_controller_handle_t h);

// service.cpp
void free_conn_resources(Conn* k);
int post_slot_recv(Conn* k, uint32_t slot);
int make_conn(Controller* c, Conn** out);
bool wait_req(Conn* k);
bool send_signal(Conn* k, rsm_memseg_id_t segid, unsigned flags);
// An ACL digit: 0, 2, 4 or 6.
bool perm_digit_ok(unsigned d);
unsigned applicable_digit(unsigned mode, uint32_t uid, uint32_t gid);
void evaluate(Controller* c, const ReqPdata& rq, rsm_node_id_t node, RepPdata* rep,
              ExportSeg** seg_out);
void on_cr(Controller* c, DAT_CR_HANDLE cr);
void close_export_conn(Controller* c, Conn* k);
void on_conn_event(Controller* c, const DAT_EVENT& ev);
void on_dto(Controller* c, const DAT_EVENT& ev);
void service_loop(Controller* c);

// export.cpp
void free_export_lmrs(ExportSeg* s);
int check_export(rsm_memseg_export_handle_t h, ExportSeg** out);
int copy_acl(const rsmapi_access_entry_t* acl, unsigned n, Acl* out);
int register_export(Controller* c, ExportSeg* s);
void do_unpublish(Controller* c, ExportSeg* s);
int wait_closing(ExportSeg* s, bool interruptible);
int publish_locked(Controller* c, ExportSeg* s, Acl* acl, rsm_memseg_id_t* idp);

// import.cpp
int check_import(rsm_memseg_import_handle_t h, ImportSeg** out);
void free_import(ImportSeg* im);
int map_conn_failure(DAT_EVENT_NUMBER n);
// Connects an import of segment_id at node_id with perm, taking over the
// caller's controller reference; *out is not yet a live handle (hidden: a
// mapping's own connection, never one).
int connect_import(Controller* c, rsm_node_id_t node_id, rsm_memseg_id_t segment_id,
                   rsm_permission_t perm, bool hidden, ImportSeg** out);
// Drains, disconnects (bounded wait) and frees an import; no lock held.
void disconnect_import(ImportSeg* im);

// import_io.cpp
int check_access(ImportSeg* im, off_t offset, size_t len, uint32_t need);
void access_failed(ImportSeg* im);
bool is_aborted(ImportSeg* im);
void reap_one(ImportSeg* im);
void drain(ImportSeg* im);
int rdma(ImportSeg* im, bool write, uint64_t offset, DAT_LMR_CONTEXT lctx, uint8_t* local,
         size_t len);
int put_async(ImportSeg* im, uint64_t offset, const uint8_t* user, size_t len);
int access_va(ImportSeg* im, bool write, uint64_t offset, uint8_t* user, size_t len);
int access_elems(rsm_memseg_import_handle_t h, off_t offset, void* datap, unsigned long count,
                 size_t width, bool write);
int access_sg(rsm_scat_gath_t* sg, bool write);

// signals.cpp
Signals* signals_of(void* memseg, Controller** ctl);

// import_map.cpp.  map_* are called with the import's op_mu held.
int map_create(ImportSeg* im, void** address, rsm_attribute_t attr, rsm_permission_t perm,
               off_t offset, size_t length);
int map_destroy(ImportSeg* im);
int map_flush(ImportSeg* im);
int map_invalidate(ImportSeg* im);
// Whether [p, p+len) overlaps a mapping: such memory is refused for
// registration (export segments, local memory handles).
bool map_overlaps(const void* p, size_t len);
// Largest mapping this process can make (0 when userfaultfd with
// write-protect faults is not available).
size_t map_max_size(const Controller* c);

}  // namespace dpdat::rsm
