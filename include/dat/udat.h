/*
 * dat/udat.h -- dpdat uDAPL (DAT 1.2) public API. The header programs include:
 *
 *     #include <dat/udat.h>        cc prog.c -ldat    (or: pkg-config --cflags --libs dat)
 *
 * It brings in the whole API: <dat/dat.h> (common types and calls) and the
 * user-space-only part below (memory types, EVD/CNO waiting, LMR creation,
 * provider attributes). Each function is a real exported symbol of libdat.so.
 * libdat is thread-safe: any thread may call any function.
 */
#ifndef DPDAT_DAT_UDAT_H
#define DPDAT_DAT_UDAT_H

#include <dat/dat_platform_specific.h>
#include <dat/udat_config.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Types that <dat/dat.h> refers to                                   */
/* ------------------------------------------------------------------ */

/* What dat_lmr_create() registers. */
typedef enum dat_mem_type {
  DAT_MEM_TYPE_VIRTUAL = 0x00,        /* a range of the consumer's virtual memory */
  DAT_MEM_TYPE_LMR = 0x01,            /* the memory of an existing LMR (by handle) */
  DAT_MEM_TYPE_SHARED_VIRTUAL = 0x02, /* shared memory named by a DAT_LMR_COOKIE */
  /*
   * Virtual memory with strong (non-relaxed) ordering: a Solaris addition
   * to 1.2 (dat_lmr_create(3DAT)); not in DAT 2.0. dpdat always orders
   * placement, so it treats this exactly like DAT_MEM_TYPE_VIRTUAL.
   */
  DAT_MEM_TYPE_SO_VIRTUAL = 0x03
} DAT_MEM_TYPE;

/* What dat_get_handle_type() reports. (2.0 appends DAT_HANDLE_TYPE_CSP.) */
typedef enum dat_handle_type {
  DAT_HANDLE_TYPE_CR,
  DAT_HANDLE_TYPE_EP,
  DAT_HANDLE_TYPE_EVD,
  DAT_HANDLE_TYPE_IA,
  DAT_HANDLE_TYPE_LMR,
  DAT_HANDLE_TYPE_PSP,
  DAT_HANDLE_TYPE_PZ,
  DAT_HANDLE_TYPE_RMR,
  DAT_HANDLE_TYPE_RSP,
  DAT_HANDLE_TYPE_CNO,
  DAT_HANDLE_TYPE_SRQ
} DAT_HANDLE_TYPE;

/*
 * EVD state: three independent parts, one value from each -- enabled or
 * disabled, waitable or unwaitable, and how waiters are woken (notify,
 * solicited, threshold).
 */
typedef enum dat_evd_state {
  DAT_EVD_STATE_ENABLED = 0x01,
  DAT_EVD_STATE_DISABLED = 0x02,
  DAT_EVD_STATE_WAITABLE = 0x04,
  DAT_EVD_STATE_UNWAITABLE = 0x08,
  DAT_EVD_STATE_CONFIG_NOTIFY = 0x10,
  DAT_EVD_STATE_CONFIG_SOLICITED = 0x20,
  DAT_EVD_STATE_CONFIG_THRESHOLD = 0x30
} DAT_EVD_STATE;

typedef enum dat_evd_param_mask {
  DAT_EVD_FIELD_IA_HANDLE = 0x01,
  DAT_EVD_FIELD_EVD_QLEN = 0x02,
  DAT_EVD_FIELD_EVD_STATE = 0x04,
  DAT_EVD_FIELD_CNO = 0x08,
  DAT_EVD_FIELD_EVD_FLAGS = 0x10,
  DAT_EVD_FIELD_ALL = 0x1F
} DAT_EVD_PARAM_MASK;

typedef DAT_UINT64 DAT_PROVIDER_ATTR_MASK;

#ifdef __cplusplus
}
#endif

#include <dat/dat.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* uDAPL-only types                                                    */
/* ------------------------------------------------------------------ */

typedef DAT_HANDLE DAT_CNO_HANDLE;

/* What dat_evd_query() reports. */
struct dat_evd_param {
  DAT_IA_HANDLE ia_handle;
  DAT_COUNT evd_qlen;
  DAT_EVD_STATE evd_state;
  DAT_CNO_HANDLE cno_handle;
  DAT_EVD_FLAGS evd_flags;
};

/*
 * Shared-memory registration: every consumer of the same shared region names
 * it with the same 40-byte identifier, which the provider compares in full
 * (it is not a string). As dat_lmr_create(3DAT) specifies, DAT_LMR_COOKIE is
 * a *pointer* to that consumer-owned 40-byte array:
 *     char id[DAT_LMR_COOKIE_SIZE];  desc.for_shared_memory.shared_memory_id = &id;
 */
#define DAT_LMR_COOKIE_SIZE 40
typedef char (*DAT_LMR_COOKIE)[DAT_LMR_COOKIE_SIZE];

/*
 * OS wait proxy agent of a CNO: when an EVD attached to the CNO gets an
 * event and no thread is waiting in dat_cno_wait(), the provider calls
 * proxy_agent_func(instance_data, evd_handle) (from a provider thread).
 */
typedef void (*DAT_AGENT_FUNC)(DAT_PVOID instance_data, DAT_EVD_HANDLE evd_handle);

typedef struct dat_os_wait_proxy_agent {
  DAT_PVOID instance_data;
  DAT_AGENT_FUNC proxy_agent_func;
} DAT_OS_WAIT_PROXY_AGENT;

/* "No agent". A C99 compound literal in C, a braced temporary in C++11. */
#if defined(__cplusplus)
#if __cplusplus >= 201103L
#define DAT_OS_WAIT_PROXY_AGENT_NULL (DAT_OS_WAIT_PROXY_AGENT{nullptr, nullptr})
#endif
#else
#define DAT_OS_WAIT_PROXY_AGENT_NULL \
  ((DAT_OS_WAIT_PROXY_AGENT){(DAT_PVOID)NULL, (DAT_AGENT_FUNC)NULL})
#endif

/*
 * async_evd_handle value for dat_ia_open(): this process already opened the
 * IA and its one async EVD serves this instance too; don't create another.
 */
#define DAT_EVD_ASYNC_EXISTS DAT_PLATFORM_PTR_CAST(DAT_EVD_HANDLE, 0x1)

/* What dat_ia_query() returns as async EVD for an instance opened with DAT_EVD_ASYNC_EXISTS. */
#define DAT_EVD_OUT_OF_SCOPE DAT_PLATFORM_PTR_CAST(DAT_EVD_HANDLE, 0x2)

/* DAT_MEM_TYPE_SHARED_VIRTUAL region description. */
typedef struct dat_shared_memory {
  DAT_PVOID virtual_address;
  DAT_LMR_COOKIE shared_memory_id;
} DAT_SHARED_MEMORY;

/* What dat_lmr_create() registers; which member is read depends on the DAT_MEM_TYPE. */
typedef union dat_region_description {
  DAT_PVOID for_va;                    /* VIRTUAL, SO_VIRTUAL */
  DAT_LMR_HANDLE for_lmr_handle;       /* LMR */
  DAT_SHARED_MEMORY for_shared_memory; /* SHARED_VIRTUAL */
} DAT_REGION_DESCRIPTION;

/* What dat_lmr_query() reports. (1.2: no va_type member, unlike 2.0.) */
struct dat_lmr_param {
  DAT_IA_HANDLE ia_handle;
  DAT_MEM_TYPE mem_type;
  DAT_REGION_DESCRIPTION region_desc;
  DAT_VLEN length;
  DAT_PZ_HANDLE pz_handle;
  DAT_MEM_PRIV_FLAGS mem_priv;
  DAT_LMR_CONTEXT lmr_context;
  DAT_RMR_CONTEXT rmr_context;
  DAT_VLEN registered_size;
  DAT_VADDR registered_address;
};

/* What dat_cno_query() reports. (1.2: the agent itself; 2.0 has proxy types.) */
typedef struct dat_cno_param {
  DAT_IA_HANDLE ia_handle;
  DAT_OS_WAIT_PROXY_AGENT agent;
} DAT_CNO_PARAM;

typedef enum dat_cno_param_mask {
  DAT_CNO_FIELD_IA_HANDLE = 0x1,
  DAT_CNO_FIELD_AGENT = 0x2,
  DAT_CNO_FIELD_ALL = 0x3
} DAT_CNO_PARAM_MASK;

/* How PZs relate to one another. 1.2 has three values (2.0 drops DAT_PZ_SAME, so its
 * DAT_PZ_SHAREABLE is 1). */
typedef enum dat_pz_support { DAT_PZ_UNIQUE, DAT_PZ_SAME, DAT_PZ_SHAREABLE } DAT_PZ_SUPPORT;

/*
 * Provider attributes, filled by dat_ia_query().
 * evd_stream_merging_supported[i][j] says whether event streams i and j may
 * feed one EVD, streams numbered in DAT_EVD_FLAGS order: 0 software,
 * 1 connection request, 2 DTO, 3 connection, 4 RMR bind, 5 async.
 * The specification declares that matrix const; it is plain DAT_BOOLEAN here
 * (same layout) so the struct can be declared and filled in C++.
 */
struct dat_provider_attr {
  char provider_name[DAT_NAME_MAX_LENGTH];
  DAT_UINT32 provider_version_major;
  DAT_UINT32 provider_version_minor;
  DAT_UINT32 dapl_version_major;
  DAT_UINT32 dapl_version_minor;
  DAT_MEM_TYPE lmr_mem_types_supported;
  DAT_IOV_OWNERSHIP iov_ownership_on_return;
  DAT_QOS dat_qos_supported;
  DAT_COMPLETION_FLAGS completion_flags_supported;
  DAT_BOOLEAN is_thread_safe;
  DAT_COUNT max_private_data_size;
  DAT_BOOLEAN supports_multipath;
  DAT_EP_CREATOR_FOR_PSP ep_creator;
  DAT_PZ_SUPPORT pz_support;
  DAT_UINT32 optimal_buffer_alignment;
  DAT_BOOLEAN evd_stream_merging_supported[6][6];
  DAT_BOOLEAN srq_supported;
  DAT_COUNT srq_watermarks_supported;
  DAT_BOOLEAN srq_ep_pz_difference_supported;
  DAT_COUNT srq_info_supported;
  DAT_COUNT ep_recv_info_supported;
  DAT_BOOLEAN lmr_sync_req;
  DAT_BOOLEAN dto_async_return_guaranteed;
  DAT_BOOLEAN rdma_write_for_rdma_read_req;
  DAT_COUNT num_provider_specific_attr;
  DAT_NAMED_ATTR* provider_specific_attr;
};

/* dat_ia_query() provider field selection. 1.2 values (2.0 inserts five fields before
 * NUM_PROVIDER_SPECIFIC_ATTR). */
#define DAT_PROVIDER_FIELD_PROVIDER_NAME UINT64_C(0x0000001)
#define DAT_PROVIDER_FIELD_PROVIDER_VERSION_MAJOR UINT64_C(0x0000002)
#define DAT_PROVIDER_FIELD_PROVIDER_VERSION_MINOR UINT64_C(0x0000004)
#define DAT_PROVIDER_FIELD_DAPL_VERSION_MAJOR UINT64_C(0x0000008)
#define DAT_PROVIDER_FIELD_DAPL_VERSION_MINOR UINT64_C(0x0000010)
#define DAT_PROVIDER_FIELD_LMR_MEM_TYPE_SUPPORTED UINT64_C(0x0000020)
#define DAT_PROVIDER_FIELD_IOV_OWNERSHIP UINT64_C(0x0000040)
#define DAT_PROVIDER_FIELD_DAT_QOS_SUPPORTED UINT64_C(0x0000080)
#define DAT_PROVIDER_FIELD_COMPLETION_FLAGS_SUPPORTED UINT64_C(0x0000100)
#define DAT_PROVIDER_FIELD_IS_THREAD_SAFE UINT64_C(0x0000200)
#define DAT_PROVIDER_FIELD_MAX_PRIVATE_DATA_SIZE UINT64_C(0x0000400)
#define DAT_PROVIDER_FIELD_SUPPORTS_MULTIPATH UINT64_C(0x0000800)
#define DAT_PROVIDER_FIELD_EP_CREATOR UINT64_C(0x0001000)
#define DAT_PROVIDER_FIELD_PZ_SUPPORT UINT64_C(0x0002000)
#define DAT_PROVIDER_FIELD_OPTIMAL_BUFFER_ALIGNMENT UINT64_C(0x0004000)
#define DAT_PROVIDER_FIELD_EVD_STREAM_MERGING_SUPPORTED UINT64_C(0x0008000)
#define DAT_PROVIDER_FIELD_SRQ_SUPPORTED UINT64_C(0x0010000)
#define DAT_PROVIDER_FIELD_SRQ_WATERMARKS_SUPPORTED UINT64_C(0x0020000)
#define DAT_PROVIDER_FIELD_SRQ_EP_PZ_DIFFERENCE_SUPPORTED UINT64_C(0x0040000)
#define DAT_PROVIDER_FIELD_SRQ_INFO_SUPPORTED UINT64_C(0x0080000)
#define DAT_PROVIDER_FIELD_EP_RECV_INFO_SUPPORTED UINT64_C(0x0100000)
#define DAT_PROVIDER_FIELD_LMR_SYNC_REQ UINT64_C(0x0200000)
#define DAT_PROVIDER_FIELD_DTO_ASYNC_RETURN_GUARANTEED UINT64_C(0x0400000)
#define DAT_PROVIDER_FIELD_RDMA_WRITE_FOR_RDMA_READ_REQ UINT64_C(0x0800000)
#define DAT_PROVIDER_FIELD_NUM_PROVIDER_SPECIFIC_ATTR UINT64_C(0x1000000)
#define DAT_PROVIDER_FIELD_PROVIDER_SPECIFIC_ATTR UINT64_C(0x2000000)
#define DAT_PROVIDER_FIELD_ALL UINT64_C(0x3FFFFFF)
#define DAT_PROVIDER_FIELD_NONE UINT64_C(0x0)

#ifdef __cplusplus
}
#endif

#include <dat/udat_vendor_specific.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* uDAPL-only functions. Every one may be called from any thread.      */
/* ------------------------------------------------------------------ */

/* Registers memory (pinned by the provider) and returns its LMR handle, lmr_context, rmr_context
 * (if remote privileges were asked) and the range actually registered; any thread; errors:
 * DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER, DAT_INVALID_STATE, DAT_INSUFFICIENT_RESOURCES,
 * DAT_MODEL_NOT_SUPPORTED. */
extern DAT_RETURN dat_lmr_create(IN DAT_IA_HANDLE ia_handle, IN DAT_MEM_TYPE mem_type,
                                 IN DAT_REGION_DESCRIPTION region_description, IN DAT_VLEN length,
                                 IN DAT_PZ_HANDLE pz_handle, IN DAT_MEM_PRIV_FLAGS mem_privileges,
                                 OUT DAT_LMR_HANDLE* lmr_handle, OUT DAT_LMR_CONTEXT* lmr_context,
                                 OUT DAT_RMR_CONTEXT* rmr_context, OUT DAT_VLEN* registered_size,
                                 OUT DAT_VADDR* registered_address);

/* Creates an EVD of at least evd_min_qlen entries for the streams in evd_flags, optionally attached
 * to a CNO; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER,
 * DAT_INSUFFICIENT_RESOURCES, DAT_MODEL_NOT_SUPPORTED. */
extern DAT_RETURN dat_evd_create(IN DAT_IA_HANDLE ia_handle, IN DAT_COUNT evd_min_qlen,
                                 IN DAT_CNO_HANDLE cno_handle, IN DAT_EVD_FLAGS evd_flags,
                                 OUT DAT_EVD_HANDLE* evd_handle);

/* Attaches an EVD to another CNO, or detaches it with DAT_HANDLE_NULL; any thread; errors:
 * DAT_INVALID_HANDLE. */
extern DAT_RETURN dat_evd_modify_cno(IN DAT_EVD_HANDLE evd_handle, IN DAT_CNO_HANDLE cno_handle);

/* Creates a CNO with an optional OS wait proxy agent; any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_PARAMETER, DAT_INSUFFICIENT_RESOURCES. */
extern DAT_RETURN dat_cno_create(IN DAT_IA_HANDLE ia_handle, IN DAT_OS_WAIT_PROXY_AGENT agent,
                                 OUT DAT_CNO_HANDLE* cno_handle);

/* Replaces a CNO's proxy agent; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER. */
extern DAT_RETURN dat_cno_modify_agent(IN DAT_CNO_HANDLE cno_handle,
                                       IN DAT_OS_WAIT_PROXY_AGENT agent);

/* Reports CNO parameters; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER. */
extern DAT_RETURN dat_cno_query(IN DAT_CNO_HANDLE cno_handle, IN DAT_CNO_PARAM_MASK cno_param_mask,
                                OUT DAT_CNO_PARAM* cno_param);

/* Destroys a CNO no EVD is attached to; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_STATE.
 */
extern DAT_RETURN dat_cno_free(IN DAT_CNO_HANDLE cno_handle);

/* Blocks the calling thread until an attached EVD has an event (returning that EVD) or timeout
 * microseconds pass; any thread; errors: DAT_INVALID_HANDLE, DAT_TIMEOUT_EXPIRED,
 * DAT_INTERRUPTED_CALL, DAT_ABORT. */
extern DAT_RETURN dat_cno_wait(IN DAT_CNO_HANDLE cno_handle, IN DAT_TIMEOUT timeout,
                               OUT DAT_EVD_HANDLE* evd_handle);

/* Enables an EVD (events trigger its CNO again); any thread; errors: DAT_INVALID_HANDLE. */
extern DAT_RETURN dat_evd_enable(IN DAT_EVD_HANDLE evd_handle);

/* Blocks the calling thread until the EVD holds threshold events or timeout microseconds pass, then
 * dequeues one and reports how many remain; one waiter per EVD; any thread; errors:
 * DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER, DAT_INVALID_STATE, DAT_TIMEOUT_EXPIRED,
 * DAT_INTERRUPTED_CALL, DAT_ABORT. */
extern DAT_RETURN dat_evd_wait(IN DAT_EVD_HANDLE evd_handle, IN DAT_TIMEOUT timeout,
                               IN DAT_COUNT threshold, OUT DAT_EVENT* event, OUT DAT_COUNT* nmore);

/* Disables an EVD (events still queue but do not trigger its CNO); any thread; errors:
 * DAT_INVALID_HANDLE. */
extern DAT_RETURN dat_evd_disable(IN DAT_EVD_HANDLE evd_handle);

/* Makes an EVD unwaitable: blocked and future dat_evd_wait calls return DAT_INVALID_STATE (events
 * still arrive and can be dequeued); any thread; errors: DAT_INVALID_HANDLE. */
extern DAT_RETURN dat_evd_set_unwaitable(IN DAT_EVD_HANDLE evd_handle);

/* Makes an EVD waitable again; any thread; errors: DAT_INVALID_HANDLE. */
extern DAT_RETURN dat_evd_clear_unwaitable(IN DAT_EVD_HANDLE evd_handle);

#ifdef __cplusplus
}
#endif

#endif /* DPDAT_DAT_UDAT_H */
