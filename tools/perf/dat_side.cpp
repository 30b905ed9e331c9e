#include "dat_side.hpp"

#include <atomic>
#include <cstring>

namespace dpdat::perf {

std::string dat_error(const char* call, DAT_RETURN r) {
  const char* major = "?";
  const char* minor = "?";
  dat_strerror(r, &major, &minor);
  return std::string(call) + " failed: " + major + " " + minor;
}

uint8_t peek(const uint8_t* p) {
  return std::atomic_ref<const uint8_t>(*p).load(std::memory_order_acquire);
}

uint64_t peek64(const uint8_t* p) {
  std::atomic_thread_fence(std::memory_order_acquire);
  uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}

namespace {

DAT_DTO_COOKIE cookie_of(uint64_t v) {
  DAT_DTO_COOKIE c;
  c.as_64 = v;
  return c;
}

DAT_COMPLETION_FLAGS flags_of(bool signal) {
  return signal ? DAT_COMPLETION_DEFAULT_FLAG : DAT_COMPLETION_SUPPRESS_FLAG;
}

const char* event_name(DAT_EVENT_NUMBER n) {
  switch (n) {
    case DAT_CONNECTION_EVENT_ESTABLISHED:
      return "ESTABLISHED";
    case DAT_CONNECTION_EVENT_PEER_REJECTED:
      return "PEER_REJECTED";
    case DAT_CONNECTION_EVENT_NON_PEER_REJECTED:
      return "NON_PEER_REJECTED";
    case DAT_CONNECTION_EVENT_DISCONNECTED:
      return "DISCONNECTED";
    case DAT_CONNECTION_EVENT_BROKEN:
      return "BROKEN";
    case DAT_CONNECTION_EVENT_TIMED_OUT:
      return "TIMED_OUT";
    case DAT_CONNECTION_EVENT_UNREACHABLE:
      return "UNREACHABLE";
    default:
      return "(other)";
  }
}

}  // namespace

#define DPDAT_TRY(call)                           \
  do {                                            \
    const DAT_RETURN r_ = (call);                 \
    if (r_ != DAT_SUCCESS) {                      \
      *err = dat_error(#call, r_).substr(0, 200); \
      return false;                               \
    }                                             \
  } while (0)

bool Side::open(const std::string& name, uint32_t qps, uint32_t depth, size_t region_len,
                std::string* err) {
  name_ = name;
  std::string n = name;
  if (const DAT_RETURN r = dat_ia_open(n.data(), 16, &async_, &ia_); r != DAT_SUCCESS) {
    *err = dat_error(("dat_ia_open(" + name + ")").c_str(), r) +
           " (is the IA configured, and does its configuration parse? dpdat-info shows)";
    ia_ = DAT_HANDLE_NULL;
    return false;
  }
  DAT_IA_ATTR ia_attr{};
  DAT_PROVIDER_ATTR prov{};
  DPDAT_TRY(dat_ia_query(ia_, &async_, DAT_IA_FIELD_ALL, &ia_attr, 0, &prov));
  if (ia_attr.ia_address_ptr == nullptr || ia_attr.ia_address_ptr->sa_family != AF_INET) {
    *err = "dat_ia_query: the IA has no IPv4 address";
    return false;
  }
  std::memcpy(&addr_, ia_attr.ia_address_ptr, sizeof addr_);
  DPDAT_TRY(dat_pz_create(ia_, &pz_));
  DPDAT_TRY(dat_evd_create(ia_, 16, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_));
  conns_.resize(qps);
  for (Conn& c : conns_)
    if (!create_conn(&c, depth, err)) return false;
  region_.assign(region_len, 0);
  DAT_REGION_DESCRIPTION r;
  r.for_va = region_.data();
  DAT_VLEN rsize = 0;
  DAT_VADDR raddr = 0;
#ifdef DPDAT_PERF_DAT2
  DPDAT_TRY(dat_lmr_create(ia_, DAT_MEM_TYPE_VIRTUAL, r, region_.size(), pz_, kRegionPrivileges,
                           DAT_VA_TYPE_VA, &lmr_, &lctx_, &rctx_, &rsize, &raddr));
#else
  DPDAT_TRY(dat_lmr_create(ia_, DAT_MEM_TYPE_VIRTUAL, r, region_.size(), pz_, kRegionPrivileges,
                           &lmr_, &lctx_, &rctx_, &rsize, &raddr));
#endif
  return true;
}

bool Side::create_conn(Conn* c, uint32_t depth, std::string* err) {
  const auto qlen = static_cast<DAT_COUNT>(2 * depth + 64);
  DPDAT_TRY(dat_evd_create(ia_, qlen, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &c->req));
  DPDAT_TRY(dat_evd_create(ia_, qlen, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &c->rcv));
  DPDAT_TRY(dat_evd_create(ia_, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &c->conn));
  DAT_EP_ATTR a{};
  a.service_type = DAT_SERVICE_TYPE_RC;
  a.max_message_size = 0;  // no preference: the interface's limits
  a.max_rdma_size = 0;
  a.qos = DAT_QOS_BEST_EFFORT;
  a.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  a.request_completion_flags = DAT_COMPLETION_SUPPRESS_FLAG;
  a.max_recv_dtos = static_cast<DAT_COUNT>(depth);
  a.max_request_dtos = static_cast<DAT_COUNT>(depth);
  a.max_recv_iov = 1;
  a.max_request_iov = 1;
  a.max_rdma_read_in = 16;
  a.max_rdma_read_out = 16;
  a.max_rdma_read_iov = 1;
  a.max_rdma_write_iov = 1;
  DPDAT_TRY(dat_ep_create(ia_, pz_, c->rcv, c->req, c->conn, &a, &c->ep));
  c->connected = false;
  return true;
}

void Side::free_conn(Conn* c) {
  if (c->ep != DAT_HANDLE_NULL) (void)dat_ep_free(c->ep);
  for (DAT_EVD_HANDLE* e : {&c->req, &c->rcv, &c->conn})
    if (*e != DAT_HANDLE_NULL) (void)dat_evd_free(*e);
  *c = Conn{};
}

void Side::close() {
  if (ia_ == DAT_HANDLE_NULL) return;
  for (Conn& c : conns_) {
    if (!c.connected) continue;
    if (dat_ep_disconnect(c.ep, DAT_CLOSE_GRACEFUL_FLAG) == DAT_SUCCESS) {
      DAT_EVENT ev;
      DAT_COUNT more = 0;
      (void)dat_evd_wait(c.conn, 500'000, 1, &ev, &more);  // DISCONNECTED, or give up
    }
    c.connected = false;
  }
  dat_ia_close(ia_, DAT_CLOSE_ABRUPT_FLAG);  // frees every object of the IA
  ia_ = DAT_HANDLE_NULL;
  conns_.clear();
}

bool Side::listen(uint32_t conn_qual, std::string* err) {
  DPDAT_TRY(dat_psp_create(ia_, conn_qual, cr_, DAT_PSP_CONSUMER_FLAG, &psp_));
  return true;
}

bool Side::connect(size_t k, const sockaddr_in& peer, uint32_t conn_qual, std::string* err) {
  sockaddr_in a = peer;
  DPDAT_TRY(dat_ep_connect(conns_[k].ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&a), conn_qual,
                           10'000'000, 0, nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
  return true;
}

bool Side::accept(size_t k, uint64_t timeout_us, std::string* err) {
  DAT_EVENT ev;
  DAT_COUNT more = 0;
  DPDAT_TRY(dat_evd_wait(cr_, static_cast<DAT_TIMEOUT>(timeout_us), 1, &ev, &more));
  if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT) {
    *err = "CR EVD: unexpected event";
    return false;
  }
  DPDAT_TRY(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, conns_[k].ep, 0, nullptr));
  return true;
}

bool Side::established(size_t k, uint64_t timeout_us, std::string* err) {
  DAT_EVENT ev;
  DAT_COUNT more = 0;
  DPDAT_TRY(dat_evd_wait(conns_[k].conn, static_cast<DAT_TIMEOUT>(timeout_us), 1, &ev, &more));
  if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
    *err = std::string("connection ") + std::to_string(k) + ": DAT_CONNECTION_EVENT_" +
           event_name(ev.event_number);
    return false;
  }
  conns_[k].connected = true;
  return true;
}

DAT_LMR_TRIPLET Side::local(size_t off, size_t len) const {
  DAT_LMR_TRIPLET t{};
  t.lmr_context = lctx_;
  t.virtual_address = reinterpret_cast<DAT_VADDR>(region_.data() + off);
  t.segment_length = seg_length(len);
  return t;
}

DAT_RMR_TRIPLET Side::triplet() const {
  DAT_RMR_TRIPLET t{};
  t.rmr_context = rctx_;
  rmr_address(t) = reinterpret_cast<DAT_VADDR>(region_.data());
  t.segment_length = seg_length(region_.size());
  return t;
}

DAT_RETURN Side::write(size_t k, size_t off, size_t len, const DAT_RMR_TRIPLET& to, size_t to_off,
                       uint64_t cookie, bool signal) {
  DAT_LMR_TRIPLET l = local(off, len);
  DAT_RMR_TRIPLET r = to;
  rmr_address(r) += to_off;
  r.segment_length = seg_length(len);
  return dat_ep_post_rdma_write(conns_[k].ep, 1, &l, cookie_of(cookie), &r, flags_of(signal));
}

DAT_RETURN Side::read(size_t k, size_t off, size_t len, const DAT_RMR_TRIPLET& from,
                      size_t from_off, uint64_t cookie, bool signal) {
  DAT_LMR_TRIPLET l = local(off, len);
  DAT_RMR_TRIPLET r = from;
  rmr_address(r) += from_off;
  r.segment_length = seg_length(len);
  return dat_ep_post_rdma_read(conns_[k].ep, 1, &l, cookie_of(cookie), &r, flags_of(signal));
}

DAT_RETURN Side::send(size_t k, size_t off, size_t len, uint64_t cookie, bool signal) {
  DAT_LMR_TRIPLET l = local(off, len);
  return dat_ep_post_send(conns_[k].ep, 1, &l, cookie_of(cookie), flags_of(signal));
}

DAT_RETURN Side::recv(size_t k, size_t off, size_t len, uint64_t cookie) {
  DAT_LMR_TRIPLET l = local(off, len);
  return dat_ep_post_recv(conns_[k].ep, 1, &l, cookie_of(cookie), DAT_COMPLETION_DEFAULT_FLAG);
}

DAT_RETURN Side::fetch_add(size_t k, size_t off, const DAT_RMR_TRIPLET& to, size_t to_off,
                           uint64_t add, uint64_t cookie, bool signal) {
#ifdef DPDAT_PERF_DAT2
  DAT_LMR_TRIPLET l = local(off, 8);
  DAT_RMR_TRIPLET r = to;
  rmr_address(r) += to_off;
  r.segment_length = 8;
  return dat_ib_post_fetch_and_add(conns_[k].ep, add, &l, cookie_of(cookie), &r, flags_of(signal));
#else
  (void)k, (void)off, (void)to, (void)to_off, (void)add, (void)cookie, (void)signal;
  return DAT_MODEL_NOT_SUPPORTED;
#endif
}

DAT_RETURN Side::cmp_swap(size_t k, size_t off, const DAT_RMR_TRIPLET& to, size_t to_off,
                          uint64_t cmp, uint64_t swap, uint64_t cookie, bool signal) {
#ifdef DPDAT_PERF_DAT2
  DAT_LMR_TRIPLET l = local(off, 8);
  DAT_RMR_TRIPLET r = to;
  rmr_address(r) += to_off;
  r.segment_length = 8;
  return dat_ib_post_cmp_and_swap(conns_[k].ep, cmp, swap, &l, cookie_of(cookie), &r,
                                  flags_of(signal));
#else
  (void)k, (void)off, (void)to, (void)to_off, (void)cmp, (void)swap, (void)cookie, (void)signal;
  return DAT_MODEL_NOT_SUPPORTED;
#endif
}

int Side::reap(DAT_EVD_HANDLE evd, std::vector<Done>* out, std::string* err) {
  int n = 0;
  DAT_EVENT ev;
  for (;;) {
    const DAT_RETURN r = dat_evd_dequeue(evd, &ev);
    if (DAT_GET_TYPE(r) == DAT_QUEUE_EMPTY) return n;
    if (r != DAT_SUCCESS) {
      *err = dat_error("dat_evd_dequeue", r);
      return -1;
    }
    // DAT 2.0 reports the IB extensions' DTOs as DAT_IB_DTO_EVENTs with the
    // same completion data (and the operation in the extension data).
    bool dto = ev.event_number == DAT_DTO_COMPLETION_EVENT;
#ifdef DPDAT_PERF_DAT2
    if (static_cast<int>(ev.event_number) == static_cast<int>(DAT_IB_DTO_EVENT)) {
      const auto* x = reinterpret_cast<const DAT_IB_EXTENSION_EVENT_DATA*>(ev.event_extension_data);
      if (x->status != DAT_OP_SUCCESS) {
        *err = "extended DTO completion in error, status " +
               std::to_string(static_cast<int>(x->status));
        return -1;
      }
      dto = true;
    }
#endif
    if (!dto) {
      *err = "unexpected event on a DTO EVD";
      return -1;
    }
    const DAT_DTO_COMPLETION_EVENT_DATA& d = ev.event_data.dto_completion_event_data;
    if (d.status != DAT_DTO_SUCCESS) {
      *err = "DTO completion in error, status " + std::to_string(static_cast<int>(d.status));
      return -1;
    }
    out->push_back(Done{d.user_cookie.as_64, d.transfered_length});
    ++n;
  }
}

}  // namespace dpdat::perf
