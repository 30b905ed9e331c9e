#pragma once
// The rdma_cm entry points dpdat implements (<rdma/rdma_cma.h>), as one list:
// librdmacm.so.1 (exports.cpp) exports each under its own name and forwards
// it to dpdat_<name> in dpdat's libibverbs.so.1 (the other files here), where the verbs
// objects and dat_core live (one copy of each in a process).  The dpdat_*
// names are in libibverbs's private version node DPDAT_PRIVATE_1.
//   X(return type, name, (parameters), (arguments))

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define DPDAT_RDMACM_FUNCS(X)                                                                      \
  X(rdma_event_channel*, rdma_create_event_channel, (void), ())                                    \
  X(void, rdma_destroy_event_channel, (rdma_event_channel * ch), (ch))                             \
  X(int, rdma_create_id,                                                                           \
    (rdma_event_channel * ch, rdma_cm_id * *id, void* ctx, rdma_port_space ps), (ch, id, ctx, ps)) \
  X(int, rdma_create_ep,                                                                           \
    (rdma_cm_id * *id, rdma_addrinfo * res, ibv_pd * pd, ibv_qp_init_attr * qia),                  \
    (id, res, pd, qia))                                                                            \
  X(void, rdma_destroy_ep, (rdma_cm_id * id), (id))                                                \
  X(int, rdma_destroy_id, (rdma_cm_id * id), (id))                                                 \
  X(int, rdma_bind_addr, (rdma_cm_id * id, sockaddr * addr), (id, addr))                           \
  X(int, rdma_resolve_addr, (rdma_cm_id * id, sockaddr * src, sockaddr * dst, int timeout_ms),     \
    (id, src, dst, timeout_ms))                                                                    \
  X(int, rdma_resolve_route, (rdma_cm_id * id, int timeout_ms), (id, timeout_ms))                  \
  X(int, rdma_create_qp, (rdma_cm_id * id, ibv_pd * pd, ibv_qp_init_attr * qia), (id, pd, qia))    \
  X(int, rdma_create_qp_ex, (rdma_cm_id * id, ibv_qp_init_attr_ex * qia), (id, qia))               \
  X(void, rdma_destroy_qp, (rdma_cm_id * id), (id))                                                \
  X(int, rdma_connect, (rdma_cm_id * id, rdma_conn_param * p), (id, p))                            \
  X(int, rdma_establish, (rdma_cm_id * id), (id))                                                  \
  X(int, rdma_listen, (rdma_cm_id * id, int backlog), (id, backlog))                               \
  X(int, rdma_get_request, (rdma_cm_id * listen, rdma_cm_id * *id), (listen, id))                  \
  X(int, rdma_accept, (rdma_cm_id * id, rdma_conn_param * p), (id, p))                             \
  X(int, rdma_reject, (rdma_cm_id * id, const void* pdata, uint8_t len), (id, pdata, len))         \
  X(int, rdma_reject_ece, (rdma_cm_id * id, const void* pdata, uint8_t len), (id, pdata, len))     \
  X(int, rdma_notify, (rdma_cm_id * id, ibv_event_type ev), (id, ev))                              \
  X(int, rdma_disconnect, (rdma_cm_id * id), (id))                                                 \
  X(int, rdma_join_multicast, (rdma_cm_id * id, sockaddr * addr, void* ctx), (id, addr, ctx))      \
  X(int, rdma_leave_multicast, (rdma_cm_id * id, sockaddr * addr), (id, addr))                     \
  X(int, rdma_join_multicast_ex, (rdma_cm_id * id, rdma_cm_join_mc_attr_ex * a, void* ctx),        \
    (id, a, ctx))                                                                                  \
  X(int, rdma_get_cm_event, (rdma_event_channel * ch, rdma_cm_event * *ev), (ch, ev))              \
  X(int, rdma_ack_cm_event, (rdma_cm_event * ev), (ev))                                            \
  X(__be16, rdma_get_src_port, (rdma_cm_id * id), (id))                                            \
  X(__be16, rdma_get_dst_port, (rdma_cm_id * id), (id))                                            \
  X(ibv_context**, rdma_get_devices, (int* n), (n))                                                \
  X(void, rdma_free_devices, (ibv_context * *list), (list))                                        \
  X(const char*, rdma_event_str, (rdma_cm_event_type ev), (ev))                                    \
  X(int, rdma_set_option, (rdma_cm_id * id, int level, int name, void* val, size_t len),           \
    (id, level, name, val, len))                                                                   \
  X(int, rdma_migrate_id, (rdma_cm_id * id, rdma_event_channel * ch), (id, ch))                    \
  X(int, rdma_getaddrinfo,                                                                         \
    (const char* node, const char* service, const rdma_addrinfo* hints, rdma_addrinfo** res),      \
    (node, service, hints, res))                                                                   \
  X(void, rdma_freeaddrinfo, (rdma_addrinfo * res), (res))                                         \
  X(int, rdma_init_qp_attr, (rdma_cm_id * id, ibv_qp_attr * attr, int* mask), (id, attr, mask))    \
  X(int, rdma_set_local_ece, (rdma_cm_id * id, ibv_ece * ece), (id, ece))                          \
  X(int, rdma_get_remote_ece, (rdma_cm_id * id, ibv_ece * ece), (id, ece))                         \
  X(int, rdma_create_srq, (rdma_cm_id * id, ibv_pd * pd, ibv_srq_init_attr * a), (id, pd, a))      \
  X(int, rdma_create_srq_ex, (rdma_cm_id * id, ibv_srq_init_attr_ex * a), (id, a))                 \
  X(void, rdma_destroy_srq, (rdma_cm_id * id), (id))

#define DPDAT_RDMACM_DECLARE(ret, name, params, args) \
  extern "C" __attribute__((visibility("default"))) ret dpdat_##name params;
DPDAT_RDMACM_FUNCS(DPDAT_RDMACM_DECLARE)
#undef DPDAT_RDMACM_DECLARE
