#pragma once
// dpdat's rdma_cm: the objects behind rdma_event_channel and rdma_cm_id, and
// how a connection maps onto dat_core's connection manager (the same REQ /
// REP / RTU / REJ / DREQ / DREP exchange DAT and libfabric connections use):
//
//   device      -> the dpdat verbs context of one interface, opened once for
//                  the process; its EVD (CR and connection events) has a CNO
//                  whose agent turns each dat_core event into an rdma_cm event
//   listen      -> a PSP per device, conn_qual = the port
//   connect     -> ep_connect of the id's QP (conn_qual = the port)
//   accept      -> cr_accept of the request with the id's QP
//   an id with no QP (the application's own, conn_param->qp_num)
//               -> a CM-only EP (cm_ep_create) naming that QP; the
//                  application moves its QP with rdma_init_qp_attr, and the
//                  active side ends with rdma_establish (ep_establish)
//   reject      -> cr_reject (private data delivered in the REJ)
//   disconnect  -> ep_disconnect (DREQ / DREP)
//
// An id with no event channel is synchronous: it gets a channel of its own,
// and each call waits there for the event that ends it (as librdmacm does).

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../verbs/objects.hpp"
#include "funcs.hpp"

namespace dpdat::rdmacm {

namespace dat = dpdat::dat;

struct Id;

// An event as the application holds it: rdma_cm_event first.
struct Ev {
  rdma_cm_event ev{};
  std::vector<uint8_t> pdata;  // what ev.param.conn.private_data points at
  Id* owner = nullptr;         // the id whose rdma_destroy_id waits for the ack
};

struct Chan {
  rdma_event_channel ch{};  // first: the application's pointer; fd an eventfd
  std::deque<Ev*> q;        // one eventfd count per queued event (at least)
  bool internal = false;    // a synchronous id's own
};

struct Dev {
  verbs::Device* device = nullptr;
  ibv_context* ctx = nullptr;
  dat::Ia* ia = nullptr;
  dat::Evd* evd = nullptr;
  dat::Cno* cno = nullptr;
  uint32_t ip = 0;       // host order
  ibv_pd* pd = nullptr;  // the default PD (rdma_create_qp with none)
};

enum class St : uint8_t {
  kIdle,
  kBound,
  kAddrQuery,   // rdma_resolve_addr: asking the link for the peer's MAC
  kAddr,        // address resolved
  kRoute,       // route resolved
  kConnecting,  // REQ sent
  kListen,
  kRequest,    // a connection request not answered yet
  kAccepting,  // REP sent
  kConnected,
  kDisconnected,
};

struct Id {
  rdma_cm_id id{};  // first: the application's pointer
  Chan* chan = nullptr;
  bool sync = false;
  Dev* dev = nullptr;
  St st = St::kIdle;
  uint32_t src_ip = 0, dst_ip = 0;                             // host order
  uint16_t src_port = 0, dst_port = 0;                         // host order
  bool port_held = false;                                      // src_port taken from the port table
  std::vector<std::pair<Dev*, dat::Sp*>> sps;                  // listening
  dat::Cr* cr = nullptr;                                       // kRequest: the request
  uint32_t req_qpn = 0, req_psn = 0, req_mtu = 0, req_rd = 0;  // from the REQ
  uint32_t req_rr = 0;                                         // the REQ's responder resources
  // The CM-only EP of an id whose connection names the application's own QP
  // (conn_param->qp_num); freed with the id.
  dat::Ep* cm_ep = nullptr;
  int ack_timeout = -1;    // RDMA_OPTION_ID_ACK_TIMEOUT (-1: not set)
  uint32_t resolving = 0;  // address queries in flight (rdma_destroy_id waits for them)
  bool destroying = false;
  uint32_t unacked = 0;  // events handed out (or queued) and not acked
  bool own_send_cq = false, own_recv_cq = false, own_srq = false;
  ibv_sa_path_rec path{};
  // rdma_create_ep on a passive id: what each request's id gets a QP with.
  bool child_qp = false;
  ibv_qp_init_attr child_attr{};
  ibv_pd* child_pd = nullptr;
};

struct Global {
  std::mutex mu;  // everything here and in the ids; never held across dat_core calls
  std::condition_variable acked;
  std::vector<Dev*> devs;  // by device index; nullptr until opened
  std::unordered_map<dat::Ep*, Id*> by_ep;
  std::unordered_map<dat::Sp*, Id*> by_sp;
  std::unordered_set<uint16_t> ports;  // bound or listening
  // EPs an agent reads from dat_core without mu (ESTABLISHED's agreed
  // path): ibv_destroy_qp waits until none names its EP (on `acked`).
  std::unordered_multiset<dat::Ep*> agent_eps;
  uint16_t next_port = 0;
};
Global& g();

// errno = e, returns -1 (the rdma_cm convention).
int fail(int e);
// Opens device `index` (once); nullptr and errno when it cannot be opened.
Dev* open_dev(size_t index);
// The device whose interface has this address (host order), opened; nullptr
// when none.
Dev* dev_for_ip(uint32_t ip);
// A free port (host order) taken into the port table; 0 when none is left.
uint16_t take_port();

// Queues an event for `id` on its channel (mu held).
void push_event(Id* id, rdma_cm_event_type type, int status, const uint8_t* pdata, uint32_t len,
                Id* listen = nullptr);
// A synchronous id: waits for the event ending an operation on its own
// channel and keeps it in id->event; -1 and an errno from the event when it
// is not `want`.
int wait_sync(Id* id, rdma_cm_event_type want);
// Dequeues every dat_core event of a device and turns it into rdma_cm events.
void cm_agent(void* dev, void* evd);
// Frees a request's id that was never handed to the application (mu held).
void drop_unseen_child(Id* child);

Id* id_of(rdma_cm_id* id);
// Destroys the CQs (and completion channels) made for the id's QP.
void free_cqs(Id* id);
// The dat_core EP of the id's connection: its QP's, or its CM-only EP
// (nullptr: neither).
inline dat::Ep* ep_of(Id* id) {
  return id->id.qp != nullptr ? reinterpret_cast<verbs::Qp*>(id->id.qp)->ep : id->cm_ep;
}

}  // namespace dpdat::rdmacm
