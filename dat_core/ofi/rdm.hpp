#pragma once
// The reliable-datagram endpoint (FI_EP_RDM) of the dpdat provider and its
// address vector.  An RDM endpoint is connectionless to its consumer; below
// it, each peer it sends to gets a DAT connection of its own, made on the
// first send (the peer's endpoint accepts every request on its listening
// port), and messages travel over it as SENDs with a small header:
//
//   eager   header + payload, up to the eager limit: the payload lands in
//           one of the endpoint's receive buffers (a DAT SRQ shared by all
//           its connections) and is copied to the matching receive, or kept
//           as an unexpected message until one is posted;
//   RTS     header + the sender's buffer (address, key of a registration
//           made for this message): the receiver READs the payload straight
//           into the matching receive, then sends
//   FIN     which completes the send and releases the registration.
//
// Replies (READ, FIN) travel on the connection the message came on.  Tags
// and sources are matched in software (FI_TAGGED, FI_DIRECTED_RECV); FI_MSG
// messages have a queue of their own.  Progress is manual: fi_cq_read (and
// every call on the endpoint) moves the connections and the protocol on.

#include <deque>
#include <list>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "objects.hpp"

namespace dpdat::ofi {

// An address vector: FI_SOCKADDR_IN entries; an fi_addr_t is the entry's
// index for FI_AV_TABLE and FI_AV_MAP alike.
struct Av {
  fid_av av{};
  Domain* dom = nullptr;
  fi_av_type type = FI_AV_TABLE;
  std::mutex mu;
  struct Entry {
    uint32_t ip = 0;
    uint16_t port = 0;
    bool valid = false;
  };
  std::vector<Entry> table;
  std::unordered_map<uint64_t, fi_addr_t> by_addr;  // (ip << 16 | port) -> index
  std::atomic<uint32_t> refs{0};                    // bound endpoints
};
int av_open(fid_domain* domain, fi_av_attr* attr, fid_av** out, void* context);
// The entry with that address, or FI_ADDR_NOTAVAIL.
fi_addr_t av_find(Av* av, uint32_t ip, uint16_t port);
// The address of an entry; false when there is none.
bool av_get(Av* av, fi_addr_t a, uint32_t* ip, uint16_t* port);

namespace rdm {

// The header that leads every message of the protocol (host byte order:
// both ends are this provider on x86-64 hosts of one link).
inline constexpr uint8_t kEager = 1, kRts = 2, kFin = 3;
inline constexpr uint8_t kTagged = 1, kHasData = 2;
inline constexpr uint8_t kFinFailed = 4;  // FIN: the receiver's READ failed
struct Hdr {
  uint8_t op = 0;
  uint8_t flags = 0;
  uint16_t rsv = 0;
  uint32_t rsv2 = 0;
  uint64_t data = 0;
  uint64_t tag = 0;
  uint64_t len = 0;  // the message's length
  uint64_t id = 0;   // RTS / FIN: the sender's operation (generation << 32 | index)
};
struct Rts {
  Hdr h;
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t rsv = 0;
};
// What a connection request carries: the requester's listening address,
// which names it in its peer's address vector (fi_cq_readfrom,
// FI_DIRECTED_RECV).
struct Hello {
  uint32_t magic = 0;
  uint32_t ip = 0;
  uint16_t port = 0;
  uint16_t rsv = 0;
};
inline constexpr uint32_t kHelloMagic = 0x52444d31;  // "RDM1"
// Payloads up to the eager limit travel with their header (DPDAT_FI_EAGER
// sets it, up to kEagerMax); larger ones are READ by the receiver.
inline constexpr size_t kEagerDefault = 16384;
inline constexpr size_t kEagerMax = 65536;
// The SRQ's receive buffers.  They are taken in turn, so each message lands
// in the buffer used kRxBufs messages ago: few enough that those stay in
// the cache (with 512, a 4 KiB ping-pong took 0.5 us more a message), enough
// for bursts of unexpected messages (more wait for the receiver's RNR NAK).
inline constexpr uint32_t kRxBufs = 64;
inline constexpr uint32_t kTxOps = 256;      // sends in flight
inline constexpr uint32_t kFinReserve = 16;  // of them, kept for FINs
inline constexpr size_t kSlotSize = sizeof(Rts) + kInjectSize;
inline constexpr uint8_t kConnectTries = 5;
inline constexpr size_t kReqPool = 1024;  // free receive records kept
// Receive buffers go back to the SRQ in batches (each post takes the
// interface and steps the engine once).
inline constexpr uint32_t kRepostBatch = 16;
// Connection events are looked for on one progress pass in this many while
// no connection is being made.
inline constexpr uint32_t kCmEvery = 16;

}  // namespace rdm

struct RdmEp;

// A DAT connection to a peer's endpoint: outbound (made by a send to an AV
// entry; new messages go out on it) or inbound (accepted; messages come in
// on it).  Replies go back on the connection their message came on.
struct Conn {
  RdmEp* ep = nullptr;
  dat::Ep* dep = nullptr;
  uint32_t ip = 0;  // the peer endpoint's listening address
  uint16_t port = 0;
  bool outbound = false;
  bool up = false;
  bool dead = false;
  fi_addr_t addr = FI_ADDR_NOTAVAIL;  // its AV entry, once found
};

// A send in flight (or an internal FIN), with its header slot.
struct TxOp {
  bool busy = false;
  bool report = false;  // a completion was asked for
  bool tagged = false;
  bool send_done = false;
  bool fin_done = false;
  bool fin_failed = false;  // the FIN said the receiver's READ failed
  bool silent = false;      // an inject: no context to report with
  uint8_t kind = 0;         // rdm::kEager / kRts / kFin
  uint32_t gen = 0;
  void* context = nullptr;
  uint64_t tag = 0;
  Conn* conn = nullptr;
  dat::Lmr* lmr = nullptr;       // an RTS's registration of the source
  std::vector<uint8_t> staging;  // an RTS's copy of a several-iovec source
};

// A posted receive (and, while its READ runs, that READ's state).
struct RecvReq {
  void* context = nullptr;
  bool tagged = false;
  bool report = true;
  uint64_t tag = 0, ignore = 0;
  fi_addr_t src = FI_ADDR_UNSPEC;
  iovec iov[rc::kMaxSge] = {};
  void* desc[rc::kMaxSge] = {};
  size_t count = 0;
  size_t total = 0;
  // the message it took
  rdm::Hdr h;
  Conn* conn = nullptr;
  uint64_t taken = 0;  // bytes the receive holds (the rest is truncated)
  uint64_t va = 0;     // an RTS's source, while its READ waits for room
  uint32_t rkey = 0;
};

// A message that came before its receive: an eager one's payload, or an
// RTS's source.
struct Unexp {
  Conn* conn = nullptr;
  rdm::Hdr h;
  uint64_t va = 0;
  uint32_t rkey = 0;
  std::vector<uint8_t> payload;
  void* claim = nullptr;  // FI_PEEK | FI_CLAIM: the context that owns it
};

struct RdmEp {
  fid_ep ep{};
  Domain* dom = nullptr;
  fi_info* info = nullptr;
  Av* av = nullptr;
  Cq* txcq = nullptr;
  Cq* rxcq = nullptr;
  bool tx_selective = false;
  bool rx_selective = false;
  uint64_t tx_op_flags = 0;
  uint64_t rx_op_flags = 0;
  bool directed = false;  // FI_DIRECTED_RECV: receives match their source
  uint32_t ip = 0;
  uint16_t port = 0;  // the listening port (fi_getname)
  bool enabled = false;
  Cq* waker = nullptr;             // the CQ whose CNO its EVDs have (FD wait objects)
  std::vector<WaitFd*> listening;  // the other descriptors, listening to it
  Cntr* cntr_send = nullptr;       // counters of the sends / receives completed
  Cntr* cntr_recv = nullptr;
  dat::SpinLock mu;  // everything below
  dat::Evd* dto = nullptr;
  dat::Evd* cm = nullptr;
  dat::Srq* srq = nullptr;
  dat::Sp* sp = nullptr;
  size_t eager = rdm::kEagerDefault;
  size_t rxbuf_size = 0;
  std::vector<uint8_t> rxmem;
  dat::Lmr* rx_lmr = nullptr;
  std::vector<uint8_t> txmem;
  dat::Lmr* tx_lmr = nullptr;
  std::vector<TxOp> tx;
  std::vector<uint32_t> tx_free;
  std::vector<Conn*> out;          // by fi_addr: the outbound connection
  std::vector<uint8_t> out_fails;  // by fi_addr: connections that failed in a row
  std::list<std::unique_ptr<Conn>> conns;
  std::list<RecvReq*> posted[2];  // [0] FI_MSG, [1] FI_TAGGED
  std::list<Unexp*> unexp[2];
  struct PendingFin {
    Conn* conn = nullptr;
    uint64_t id = 0;
    bool failed = false;
  };
  std::deque<PendingFin> fins;           // FINs waiting for a slot
  std::list<RecvReq*> reads;             // READs waiting for room
  std::unordered_set<RecvReq*> reading;  // READs posted
  std::vector<RecvReq*> req_pool;
  std::vector<uint32_t> repost;  // receive buffers free, not yet given back
  uint32_t connecting = 0;       // outbound connections not yet up
  uint32_t passes = 0;           // progress passes (paces the connection events' looks)
};

// rdm_ep.cpp
// Moves the endpoint's connections and messages on (mu held).
void rdm_progress(RdmEp* ep);
// The same, taking mu.
void rdm_poll(RdmEp* ep);
// Whether a CQ of RDM endpoints has an entry, after progressing them.
bool rdm_cq_ready(Cq* cq);
// fi_trywait on such a CQ with an FD wait object.
int rdm_cq_trywait(Cq* cq);
// Whether events wait on the endpoint's EVDs (no lock: a hint for
// fi_trywait, taken after the descriptor is armed).
bool rdm_evds_pending(RdmEp* ep);
// The outbound connection to an AV entry (mu held): 0 when it is up,
// -FI_EAGAIN while it is being made (the first call starts it), or an error.
int rdm_conn_for(RdmEp* ep, fi_addr_t a, Conn** out);
// The AV entry of a connection's peer, or FI_ADDR_NOTAVAIL.
fi_addr_t rdm_conn_addr(RdmEp* ep, Conn* c);
// Gives receive buffer i back to the SRQ (in batches; flush: now).
void rdm_repost(RdmEp* ep, uint32_t i);
void rdm_repost_flush(RdmEp* ep);
// Appends an entry to a CQ (none: dropped, the side counts with a counter
// alone).
void rdm_deliver(Cq* cq, const RdmEntry& e);

// rdm_proto.cpp
void rdm_on_recv(RdmEp* ep, Conn* c, uint32_t buf, const dat::Event& ev);
void rdm_on_send_done(RdmEp* ep, uint32_t txi, const dat::Event& ev);
void rdm_on_read_done(RdmEp* ep, RecvReq* r, const dat::Event& ev);
// Retries the FINs and READs that found no room (mu held).
void rdm_retry(RdmEp* ep);
// A connection went down: the RTSs on it waiting for their FIN fail.
void rdm_conn_failed(RdmEp* ep, Conn* c);
// Frees what the protocol holds (at close; mu held).
void rdm_release(RdmEp* ep);
ssize_t rdm_cancel(fid_t f, void* context);
extern fi_ops_msg g_rdm_msg_ops;
extern fi_ops_tagged g_rdm_tagged_ops;

int rdm_ep_open(fid_domain* domain, fi_info* info, fid_ep** out, void* context);
// fi_cq_read / fi_cq_readfrom / fi_cq_readerr of a CQ bound to RDM
// endpoints: progresses them, then hands out their entries.
ssize_t rdm_cq_read(Cq* cq, void* buf, size_t count, fi_addr_t* src);
ssize_t rdm_cq_readerr(Cq* cq, fi_cq_err_entry* buf);

}  // namespace dpdat::ofi
