// rdma_cm addresses (rdma_getaddrinfo), devices, options, and what dpdat
// does not offer (multicast, ECE), which fails with an errno.

#include <arpa/inet.h>
#include <netdb.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "state.hpp"

using namespace dpdat::rdmacm;  // NOLINT(google-build-using-namespace): the C entry points

namespace {

sockaddr* copy_sin(const sockaddr_in& s) {
  auto* p = static_cast<sockaddr_in*>(std::calloc(1, sizeof(sockaddr_in)));
  if (p != nullptr) *p = s;
  return reinterpret_cast<sockaddr*>(p);
}

}  // namespace

// IPv4 only, RC only (RDMA_PS_TCP / RDMA_PS_IB): one result.
extern "C" int dpdat_rdma_getaddrinfo(const char* node, const char* service,
                                      const rdma_addrinfo* hints, rdma_addrinfo** res) {
  if (res == nullptr || (node == nullptr && service == nullptr)) return fail(EINVAL);
  const int flags = hints != nullptr ? hints->ai_flags : 0;
  if (hints != nullptr && hints->ai_family != 0 && hints->ai_family != AF_INET)
    return fail(EAFNOSUPPORT);
  if (hints != nullptr && hints->ai_qp_type != 0 && hints->ai_qp_type != IBV_QPT_RC)
    return fail(EOPNOTSUPP);
  if (hints != nullptr && hints->ai_port_space != 0 && hints->ai_port_space != RDMA_PS_TCP &&
      hints->ai_port_space != RDMA_PS_IB)
    return fail(EOPNOTSUPP);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  if (node != nullptr) {
    addrinfo h{};
    h.ai_family = AF_INET;
    addrinfo* ai = nullptr;
    const int r = getaddrinfo(node, nullptr, &h, &ai);
    if (r != 0 || ai == nullptr) return fail(r == EAI_SYSTEM ? errno : EADDRNOTAVAIL);
    sin.sin_addr = reinterpret_cast<const sockaddr_in*>(ai->ai_addr)->sin_addr;
    freeaddrinfo(ai);
  } else {
    sin.sin_addr.s_addr = htonl(INADDR_ANY);
  }
  if (service != nullptr) {
    char* end = nullptr;
    const long p = std::strtol(service, &end, 10);
    if (end == service || *end != '\0' || p < 0 || p > 65535) return fail(EINVAL);
    sin.sin_port = htons(static_cast<uint16_t>(p));
  }
  auto* r = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
  if (r == nullptr) return fail(ENOMEM);
  r->ai_flags = flags;
  r->ai_family = AF_INET;
  r->ai_qp_type = IBV_QPT_RC;
  r->ai_port_space =
      hints != nullptr && hints->ai_port_space != 0 ? hints->ai_port_space : RDMA_PS_TCP;
  if ((flags & RAI_PASSIVE) != 0) {
    r->ai_src_addr = copy_sin(sin);
    r->ai_src_len = sizeof(sockaddr_in);
  } else {
    r->ai_dst_addr = copy_sin(sin);
    r->ai_dst_len = sizeof(sockaddr_in);
    if (hints != nullptr && hints->ai_src_addr != nullptr &&
        hints->ai_src_addr->sa_family == AF_INET) {
      r->ai_src_addr = copy_sin(*reinterpret_cast<const sockaddr_in*>(hints->ai_src_addr));
      r->ai_src_len = sizeof(sockaddr_in);
    }
  }
  *res = r;
  return 0;
}

extern "C" void dpdat_rdma_freeaddrinfo(rdma_addrinfo* res) {
  while (res != nullptr) {
    rdma_addrinfo* next = res->ai_next;
    std::free(res->ai_src_addr);
    std::free(res->ai_dst_addr);
    std::free(res->ai_src_canonname);
    std::free(res->ai_dst_canonname);
    std::free(res->ai_route);
    std::free(res->ai_connect);
    std::free(res);
    res = next;
  }
}

// Every device, opened (they stay open for the process, shared with the ids).
extern "C" ibv_context** dpdat_rdma_get_devices(int* n) {
  const size_t count = dpdat::verbs::devices().size();
  auto** list = static_cast<ibv_context**>(std::calloc(count + 1, sizeof(ibv_context*)));
  if (list == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  int k = 0;
  for (size_t i = 0; i < count; ++i)
    if (Dev* d = open_dev(i); d != nullptr) list[k++] = d->ctx;
  if (n != nullptr) *n = k;
  return list;
}

extern "C" void dpdat_rdma_free_devices(ibv_context** list) { std::free(list); }

extern "C" int dpdat_rdma_set_option(rdma_cm_id* cid, int level, int name, void* val, size_t len) {
  if (cid == nullptr || (val == nullptr && len > 0)) return fail(EINVAL);
  if (level != RDMA_OPTION_ID) return fail(ENOSYS);  // no IB path records to set
  switch (name) {
    case RDMA_OPTION_ID_TOS:        // one traffic class on a dpdat link
    case RDMA_OPTION_ID_REUSEADDR:  // ports are free again as soon as an id goes
    case RDMA_OPTION_ID_AFONLY:     // IPv4 only
      return 0;
    case RDMA_OPTION_ID_ACK_TIMEOUT: {
      // What rdma_init_qp_attr gives for RTS (a QP of rdma_create_qp keeps
      // the interface's retransmission timer).
      if (len != sizeof(uint8_t)) return fail(EINVAL);
      const uint8_t t = *static_cast<const uint8_t*>(val);
      if (t > 31) return fail(EINVAL);
      std::lock_guard<std::mutex> lk(g().mu);
      id_of(cid)->ack_timeout = t;
      return 0;
    }
    default:
      return fail(ENOSYS);
  }
}

extern "C" int dpdat_rdma_join_multicast(rdma_cm_id*, sockaddr*, void*) { return fail(EOPNOTSUPP); }
extern "C" int dpdat_rdma_leave_multicast(rdma_cm_id*, sockaddr*) { return fail(EOPNOTSUPP); }
extern "C" int dpdat_rdma_join_multicast_ex(rdma_cm_id*, rdma_cm_join_mc_attr_ex*, void*) {
  return fail(EOPNOTSUPP);
}
extern "C" int dpdat_rdma_set_local_ece(rdma_cm_id*, ibv_ece*) { return fail(EOPNOTSUPP); }
extern "C" int dpdat_rdma_get_remote_ece(rdma_cm_id*, ibv_ece*) { return fail(EOPNOTSUPP); }
