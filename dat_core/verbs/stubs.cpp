// Every exported verbs call dpdat does not offer: it fails cleanly
// (EOPNOTSUPP, as an error code, in errno, or a NULL object), never crashes.
// Binaries are linked with BIND_NOW against the whole libibverbs ABI
// (libibverbs.map), so each of these must exist even though nothing dpdat
// runs reaches most of them.  The driver interface (IBVERBS_PRIVATE_34:
// ibv_cmd_*, verbs_*) serves kernel providers, which this library never
// loads.
//
// No verbs header here: the definitions below take no arguments (C
// linkage, the callers' arguments are simply not read), which the
// prototypes of <infiniband/verbs.h> would not allow.

#include <cerrno>
#include <cstdint>

#define DPDAT_EXPORT extern "C" __attribute__((visibility("default")))

// Calls that return an error code (0 on success).
#define DPDAT_STUB_ERR(name) \
  DPDAT_EXPORT int name() {  \
    errno = EOPNOTSUPP;      \
    return EOPNOTSUPP;       \
  }
// Calls that return an object (NULL with errno on failure).
#define DPDAT_STUB_PTR(name)  \
  DPDAT_EXPORT void* name() { \
    errno = EOPNOTSUPP;       \
    return nullptr;           \
  }
// Calls that return nothing.
#define DPDAT_STUB_VOID(name) \
  DPDAT_EXPORT void name() {}

// Public calls without RoCE-RC meaning in dpdat (UD address handles,
// multicast, imported objects, dma-buf, ECE, kernel struct conversions).

DPDAT_STUB_PTR(ibv_create_ah_from_wc)

DPDAT_STUB_ERR(ibv_init_ah_from_wc)
DPDAT_STUB_ERR(ibv_attach_mcast)
DPDAT_STUB_ERR(ibv_detach_mcast)
DPDAT_STUB_ERR(ibv_resolve_eth_l2_from_gid)
DPDAT_STUB_PTR(ibv_import_device)
DPDAT_STUB_PTR(ibv_import_mr)
DPDAT_STUB_PTR(ibv_import_pd)
DPDAT_STUB_PTR(ibv_import_dm)
DPDAT_STUB_VOID(ibv_unimport_mr)
DPDAT_STUB_VOID(ibv_unimport_pd)
DPDAT_STUB_VOID(ibv_unimport_dm)
DPDAT_STUB_ERR(ibv_query_ece)
DPDAT_STUB_ERR(ibv_set_ece)
DPDAT_STUB_PTR(ibv_reg_dmabuf_mr)
DPDAT_STUB_VOID(ibv_copy_ah_attr_from_kern)
DPDAT_STUB_VOID(ibv_copy_path_rec_from_kern)
DPDAT_STUB_VOID(ibv_copy_path_rec_to_kern)
DPDAT_STUB_VOID(ibv_copy_qp_attr_from_kern)

// ibv_rereg_mr answers with enum ibv_rereg_mr_err_code: -1 (INPUT) leaves
// the old MR valid.
DPDAT_EXPORT int ibv_rereg_mr() {
  errno = EOPNOTSUPP;
  return -1;
}

// The driver interface.
DPDAT_STUB_ERR(execute_ioctl)
DPDAT_EXPORT unsigned int __ioctl_final_num_attrs() { return 0; }
DPDAT_STUB_VOID(__verbs_log)
DPDAT_STUB_PTR(_verbs_init_and_alloc_context)
DPDAT_STUB_PTR(verbs_open_device)
DPDAT_STUB_ERR(verbs_init_cq)
DPDAT_STUB_VOID(verbs_register_driver_34)
DPDAT_STUB_VOID(verbs_set_ops)
DPDAT_STUB_VOID(verbs_uninit_context)
extern "C" {
__attribute__((visibility("default"))) bool verbs_allow_disassociate_destroy = false;
}

DPDAT_STUB_ERR(ibv_cmd_advise_mr)
DPDAT_STUB_ERR(ibv_cmd_alloc_dm)
DPDAT_STUB_ERR(ibv_cmd_alloc_mw)
DPDAT_STUB_ERR(ibv_cmd_alloc_pd)
DPDAT_STUB_ERR(ibv_cmd_attach_mcast)
DPDAT_STUB_ERR(ibv_cmd_close_xrcd)
DPDAT_STUB_ERR(ibv_cmd_create_ah)
DPDAT_STUB_ERR(ibv_cmd_create_counters)
DPDAT_STUB_ERR(ibv_cmd_create_cq)
DPDAT_STUB_ERR(ibv_cmd_create_cq_ex)
DPDAT_STUB_ERR(ibv_cmd_create_flow)
DPDAT_STUB_ERR(ibv_cmd_create_flow_action_esp)
DPDAT_STUB_ERR(ibv_cmd_create_qp)
DPDAT_STUB_ERR(ibv_cmd_create_qp_ex)
DPDAT_STUB_ERR(ibv_cmd_create_qp_ex2)
DPDAT_STUB_ERR(ibv_cmd_create_rwq_ind_table)
DPDAT_STUB_ERR(ibv_cmd_create_srq)
DPDAT_STUB_ERR(ibv_cmd_create_srq_ex)
DPDAT_STUB_ERR(ibv_cmd_create_wq)
DPDAT_STUB_ERR(ibv_cmd_dealloc_mw)
DPDAT_STUB_ERR(ibv_cmd_dealloc_pd)
DPDAT_STUB_ERR(ibv_cmd_dereg_mr)
DPDAT_STUB_ERR(ibv_cmd_destroy_ah)
DPDAT_STUB_ERR(ibv_cmd_destroy_counters)
DPDAT_STUB_ERR(ibv_cmd_destroy_cq)
DPDAT_STUB_ERR(ibv_cmd_destroy_flow)
DPDAT_STUB_ERR(ibv_cmd_destroy_flow_action)
DPDAT_STUB_ERR(ibv_cmd_destroy_qp)
DPDAT_STUB_ERR(ibv_cmd_destroy_rwq_ind_table)
DPDAT_STUB_ERR(ibv_cmd_destroy_srq)
DPDAT_STUB_ERR(ibv_cmd_destroy_wq)
DPDAT_STUB_ERR(ibv_cmd_detach_mcast)
DPDAT_STUB_ERR(ibv_cmd_free_dm)
DPDAT_STUB_ERR(ibv_cmd_get_context)
DPDAT_STUB_ERR(ibv_cmd_modify_cq)
DPDAT_STUB_ERR(ibv_cmd_modify_flow_action_esp)
DPDAT_STUB_ERR(ibv_cmd_modify_qp)
DPDAT_STUB_ERR(ibv_cmd_modify_qp_ex)
DPDAT_STUB_ERR(ibv_cmd_modify_srq)
DPDAT_STUB_ERR(ibv_cmd_modify_wq)
DPDAT_STUB_ERR(ibv_cmd_open_qp)
DPDAT_STUB_ERR(ibv_cmd_open_xrcd)
DPDAT_STUB_ERR(ibv_cmd_poll_cq)
DPDAT_STUB_ERR(ibv_cmd_post_recv)
DPDAT_STUB_ERR(ibv_cmd_post_send)
DPDAT_STUB_ERR(ibv_cmd_post_srq_recv)
DPDAT_STUB_ERR(ibv_cmd_query_context)
DPDAT_STUB_ERR(ibv_cmd_query_device_any)
DPDAT_STUB_ERR(ibv_cmd_query_mr)
DPDAT_STUB_ERR(ibv_cmd_query_port)
DPDAT_STUB_ERR(ibv_cmd_query_qp)
DPDAT_STUB_ERR(ibv_cmd_query_srq)
DPDAT_STUB_ERR(ibv_cmd_read_counters)
DPDAT_STUB_ERR(ibv_cmd_reg_dm_mr)
DPDAT_STUB_ERR(ibv_cmd_reg_dmabuf_mr)
DPDAT_STUB_ERR(ibv_cmd_reg_mr)
DPDAT_STUB_ERR(ibv_cmd_req_notify_cq)
DPDAT_STUB_ERR(ibv_cmd_rereg_mr)
DPDAT_STUB_ERR(ibv_cmd_resize_cq)

// The IBVERBS_1.0 entry points of the pre-1.1 ABI (other struct layouts,
// binaries from 2006): present, refusing.  Each is bound to its old version
// with .symver, beside today's default version of the same name.
#define DPDAT_COMPAT(kind, name)                                                                 \
  DPDAT_STUB_##kind(dpdat_compat_1_0_##name) __asm__(".symver dpdat_compat_1_0_" #name "," #name \
                                                     "@IBVERBS_1.0");

DPDAT_COMPAT(VOID, ibv_ack_async_event)
DPDAT_COMPAT(VOID, ibv_ack_cq_events)
DPDAT_COMPAT(PTR, ibv_alloc_pd)
DPDAT_COMPAT(ERR, ibv_attach_mcast)
DPDAT_COMPAT(ERR, ibv_close_device)
DPDAT_COMPAT(PTR, ibv_create_ah)
DPDAT_COMPAT(PTR, ibv_create_cq)
DPDAT_COMPAT(PTR, ibv_create_qp)
DPDAT_COMPAT(PTR, ibv_create_srq)
DPDAT_COMPAT(ERR, ibv_dealloc_pd)
DPDAT_COMPAT(ERR, ibv_dereg_mr)
DPDAT_COMPAT(ERR, ibv_destroy_ah)
DPDAT_COMPAT(ERR, ibv_destroy_cq)
DPDAT_COMPAT(ERR, ibv_destroy_qp)
DPDAT_COMPAT(ERR, ibv_destroy_srq)
DPDAT_COMPAT(ERR, ibv_detach_mcast)
DPDAT_COMPAT(VOID, ibv_free_device_list)
DPDAT_COMPAT(ERR, ibv_get_async_event)
DPDAT_COMPAT(ERR, ibv_get_cq_event)
DPDAT_COMPAT(ERR, ibv_get_device_guid)
DPDAT_COMPAT(PTR, ibv_get_device_list)
DPDAT_COMPAT(PTR, ibv_get_device_name)
DPDAT_COMPAT(ERR, ibv_modify_qp)
DPDAT_COMPAT(ERR, ibv_modify_srq)
DPDAT_COMPAT(PTR, ibv_open_device)
DPDAT_COMPAT(ERR, ibv_query_device)
DPDAT_COMPAT(ERR, ibv_query_gid)
DPDAT_COMPAT(ERR, ibv_query_pkey)
DPDAT_COMPAT(ERR, ibv_query_port)
DPDAT_COMPAT(ERR, ibv_query_qp)
DPDAT_COMPAT(ERR, ibv_query_srq)
DPDAT_COMPAT(PTR, ibv_reg_mr)
DPDAT_COMPAT(ERR, ibv_resize_cq)

// A provider registering itself with the pre-34 interface: nothing to do.
DPDAT_STUB_VOID(dpdat_compat_register_driver)
__asm__(".symver dpdat_compat_register_driver,ibv_register_driver@IBVERBS_1.1");
