/*
 * dat/dat.h -- dpdat uDAPL (DAT 1.2) public API: the part shared by uDAPL and
 * kDAPL in the specification (types, attributes, events, and the calls that
 * are not user-space specific). Programs include <dat/udat.h>, which pulls
 * this file in at the right point; including <dat/dat.h> alone does the same.
 *
 * Every function here is an ordinary exported C function of libdat.so (link
 * with -ldat); there is no provider dispatch table in between. libdat is
 * thread-safe: any thread may call any function, on any handle, at any time,
 * unless the comment says otherwise. Waits (dat_evd_wait, dat_cno_wait) block
 * only the calling thread. Each declaration's comment names its main error
 * types; see <dat/dat_error.h> for how a DAT_RETURN is read.
 */
#ifndef DPDAT_DAT_DAT_H
#if !defined(DPDAT_DAT_UDAT_H)
/* Included on its own: let udat.h include this file after its prerequisites. */
#include <dat/udat.h>
#else
#define DPDAT_DAT_DAT_H

#include <dat/dat_error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Basic types                                                         */
/* ------------------------------------------------------------------ */

typedef char* DAT_NAME_PTR; /* IA names, attribute names and values */
#define DAT_NAME_MAX_LENGTH 256

/* One name/value pair of a provider-, transport- or vendor-specific attribute. */
typedef struct dat_named_attr {
  const char* name;
  const char* value;
} DAT_NAMED_ATTR;

typedef enum dat_boolean { DAT_FALSE = 0, DAT_TRUE = 1 } DAT_BOOLEAN;

/* Consumer context: whatever the consumer wants to hang on a handle or DTO. */
typedef union dat_context {
  DAT_PVOID as_ptr;
  DAT_UINT64 as_64;
  DAT_UVERYLONG as_index;
} DAT_CONTEXT;

typedef DAT_CONTEXT DAT_DTO_COOKIE; /* returned in the DTO completion event */
typedef DAT_CONTEXT DAT_RMR_COOKIE; /* returned in the RMR bind completion event */

/* Per-DTO completion flags (bitwise OR). */
typedef enum dat_completion_flags {
  DAT_COMPLETION_DEFAULT_FLAG = 0x00,        /* a completion event for every DTO */
  DAT_COMPLETION_SUPPRESS_FLAG = 0x01,       /* no event if the DTO succeeds */
  DAT_COMPLETION_SOLICITED_WAIT_FLAG = 0x02, /* send: wake the peer's solicited waiter */
  DAT_COMPLETION_UNSIGNALLED_FLAG = 0x04,    /* event queued without waking waiters */
  DAT_COMPLETION_BARRIER_FENCE_FLAG = 0x08,  /* start only after earlier RDMA Reads complete */
  DAT_COMPLETION_EVD_THRESHOLD_FLAG = 0x10   /* uDAPL EP attribute: waiters wake on threshold */
  /* (DAT 2.0 adds DAT_COMPLETION_LMR_INVALIDATE_FENCE_FLAG = 0x20; 1.2 has none.) */
} DAT_COMPLETION_FLAGS;

typedef DAT_UINT32 DAT_TIMEOUT; /* microseconds */
#define DAT_TIMEOUT_INFINITE 0xFFFFFFFFU /* (DAT_TIMEOUT)~0: wait forever */

/* Handles: opaque pointers, checked by type on every call. */
typedef DAT_PVOID DAT_HANDLE;
typedef DAT_HANDLE DAT_CR_HANDLE;
typedef DAT_HANDLE DAT_EP_HANDLE;
typedef DAT_HANDLE DAT_EVD_HANDLE;
typedef DAT_HANDLE DAT_IA_HANDLE;
typedef DAT_HANDLE DAT_LMR_HANDLE;
typedef DAT_HANDLE DAT_PSP_HANDLE;
typedef DAT_HANDLE DAT_PZ_HANDLE;
typedef DAT_HANDLE DAT_RMR_HANDLE;
typedef DAT_HANDLE DAT_RSP_HANDLE;
typedef DAT_HANDLE DAT_SRQ_HANDLE;
/* (DAT 2.0 adds DAT_CSP_HANDLE; 1.2 has no common service points.) */

#if defined(__cplusplus) && __cplusplus >= 201103L
#define DAT_HANDLE_NULL (static_cast<DAT_HANDLE>(nullptr))
#else
#define DAT_HANDLE_NULL DAT_PLATFORM_CAST(DAT_HANDLE, NULL)
#endif

typedef DAT_SOCK_ADDR* DAT_IA_ADDRESS_PTR; /* a struct sockaddr* */

typedef DAT_UINT64 DAT_CONN_QUAL; /* connection qualifier (the "port" a PSP/RSP listens on) */
typedef DAT_UINT64 DAT_PORT_QUAL;

/* Quality of service requested for a connection. */
typedef enum dat_qos {
  DAT_QOS_BEST_EFFORT = 0x00,
  DAT_QOS_HIGH_THROUGHPUT = 0x01,
  DAT_QOS_LOW_LATENCY = 0x02,
  DAT_QOS_ECONOMY = 0x04, /* neither low latency nor high throughput */
  DAT_QOS_PREMIUM = 0x08  /* both */
} DAT_QOS;

/* dat_ep_connect() flags. 1.2 has one multipath flag (2.0 splits it in two). */
typedef enum dat_connect_flags {
  DAT_CONNECT_DEFAULT_FLAG = 0x00,
  DAT_CONNECT_MULTIPATH_FLAG = 0x01
} DAT_CONNECT_FLAGS;

/* dat_ia_close() / dat_ep_disconnect() flags. */
typedef enum dat_close_flags {
  DAT_CLOSE_ABRUPT_FLAG = 0x00,  /* tear down now, flush outstanding work */
  DAT_CLOSE_GRACEFUL_FLAG = 0x01 /* let outstanding work finish first */
} DAT_CLOSE_FLAGS;
#define DAT_CLOSE_DEFAULT DAT_CLOSE_ABRUPT_FLAG

/* Event streams an EVD accepts (bitwise OR), given to dat_evd_create(). */
typedef enum dat_evd_flags {
  DAT_EVD_SOFTWARE_FLAG = 0x001,   /* dat_evd_post_se() events */
  DAT_EVD_CR_FLAG = 0x010,         /* connection requests (PSP/RSP) */
  DAT_EVD_DTO_FLAG = 0x020,        /* DTO completions */
  DAT_EVD_CONNECTION_FLAG = 0x040, /* connection established/broken/... */
  DAT_EVD_RMR_BIND_FLAG = 0x080,   /* RMR bind completions */
  DAT_EVD_ASYNC_FLAG = 0x100,      /* asynchronous errors */
  DAT_EVD_DEFAULT_FLAG = 0x1F0     /* every DAT stream, no software events */
} DAT_EVD_FLAGS;

/* Who creates the EP for a connection request arriving at a PSP. */
typedef enum dat_psp_flags {
  DAT_PSP_CONSUMER_FLAG = 0x00, /* the consumer passes its own EP to dat_cr_accept() */
  DAT_PSP_PROVIDER_FLAG = 0x01  /* the provider creates one for each request */
} DAT_PSP_FLAGS;

/* ------------------------------------------------------------------ */
/* Memory: contexts, triplets, privileges                              */
/* ------------------------------------------------------------------ */

/*
 * Addresses and lengths in triplets are 64-bit and in host byte order on
 * every platform, even where a pointer is 32 bits. A consumer that sends an
 * RMR triplet to its peer inside a message picks the byte order itself; the
 * provider converts to wire order when it builds packets.
 */
typedef DAT_UINT32 DAT_LMR_CONTEXT; /* local key: names an LMR in local_iov triplets */
typedef DAT_UINT32 DAT_RMR_CONTEXT; /* remote key: what the peer puts in remote_iov */
typedef DAT_UINT64 DAT_VLEN;
typedef DAT_UINT64 DAT_VADDR;

typedef struct dat_provider_attr DAT_PROVIDER_ATTR; /* defined in udat.h */
typedef struct dat_evd_param DAT_EVD_PARAM;         /* defined in udat.h */
typedef struct dat_lmr_param DAT_LMR_PARAM;         /* defined in udat.h */

/*
 * One local buffer segment: bytes [virtual_address, +segment_length) of the
 * LMR named by lmr_context. A segment_length of 0 makes the other fields
 * irrelevant. The pad keeps the 64-bit fields 8-byte aligned: 24 bytes,
 * virtual_address at offset 8, segment_length at 16.
 * DAT 1.2 layout; DAT 2.0 reordered it to {virtual_address, 32-bit
 * segment_length, lmr_context} (16 bytes).
 */
typedef struct dat_lmr_triplet {
  DAT_LMR_CONTEXT lmr_context;
  DAT_UINT32 pad;
  DAT_VADDR virtual_address;
  DAT_VLEN segment_length;
} DAT_LMR_TRIPLET;

/*
 * One remote buffer segment: bytes [target_address, +segment_length) of the
 * peer memory that rmr_context (from the peer's dat_rmr_bind() or
 * dat_lmr_create()) grants. Same 24-byte 1.2 layout as DAT_LMR_TRIPLET;
 * DAT 2.0 renamed target_address to virtual_address and reordered.
 */
typedef struct dat_rmr_triplet {
  DAT_RMR_CONTEXT rmr_context;
  DAT_UINT32 pad;
  DAT_VADDR target_address;
  DAT_VLEN segment_length;
} DAT_RMR_TRIPLET;

/* Memory access privileges (bitwise OR). */
typedef enum dat_mem_priv_flags {
  DAT_MEM_PRIV_NONE_FLAG = 0x00,
  DAT_MEM_PRIV_LOCAL_READ_FLAG = 0x01,
  DAT_MEM_PRIV_REMOTE_READ_FLAG = 0x02,
  DAT_MEM_PRIV_LOCAL_WRITE_FLAG = 0x10,
  DAT_MEM_PRIV_REMOTE_WRITE_FLAG = 0x20,
  DAT_MEM_PRIV_ALL_FLAG = 0x33
} DAT_MEM_PRIV_FLAGS;

/* DAT 1.0 names, still defined by 1.2. */
#define DAT_MEM_PRIV_READ_FLAG (DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_REMOTE_READ_FLAG)
#define DAT_MEM_PRIV_WRITE_FLAG (DAT_MEM_PRIV_LOCAL_WRITE_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG)

/* dat_lmr_query() field selection. 1.2 values (2.0 inserts VA_TYPE at 0x040). */
typedef enum dat_lmr_param_mask {
  DAT_LMR_FIELD_IA_HANDLE = 0x001,
  DAT_LMR_FIELD_MEM_TYPE = 0x002,
  DAT_LMR_FIELD_REGION_DESC = 0x004,
  DAT_LMR_FIELD_LENGTH = 0x008,
  DAT_LMR_FIELD_PZ_HANDLE = 0x010,
  DAT_LMR_FIELD_MEM_PRIV = 0x020,
  DAT_LMR_FIELD_LMR_CONTEXT = 0x040,
  DAT_LMR_FIELD_RMR_CONTEXT = 0x080,
  DAT_LMR_FIELD_REGISTERED_SIZE = 0x100,
  DAT_LMR_FIELD_REGISTERED_ADDRESS = 0x200,
  DAT_LMR_FIELD_ALL = 0x3FF
} DAT_LMR_PARAM_MASK;

/* What dat_rmr_query() reports. 1.2 has no rmr_scope / va_type (2.0 does). */
typedef struct dat_rmr_param {
  DAT_IA_HANDLE ia_handle;
  DAT_PZ_HANDLE pz_handle;
  DAT_LMR_TRIPLET lmr_triplet; /* the range currently bound */
  DAT_MEM_PRIV_FLAGS mem_priv;
  DAT_RMR_CONTEXT rmr_context;
} DAT_RMR_PARAM;

typedef enum dat_rmr_param_mask {
  DAT_RMR_FIELD_IA_HANDLE = 0x01,
  DAT_RMR_FIELD_PZ_HANDLE = 0x02,
  DAT_RMR_FIELD_LMR_TRIPLET = 0x04,
  DAT_RMR_FIELD_MEM_PRIV = 0x08,
  DAT_RMR_FIELD_RMR_CONTEXT = 0x10,
  DAT_RMR_FIELD_ALL = 0x1F
} DAT_RMR_PARAM_MASK;

/* ------------------------------------------------------------------ */
/* Interface Adapter attributes                                        */
/* ------------------------------------------------------------------ */

/* Whether the provider may modify a posted iov before the DTO completes. */
typedef enum dat_iov_ownership {
  DAT_IOV_CONSUMER = 0x0,       /* the provider never touches it */
  DAT_IOV_PROVIDER_NOMOD = 0x1, /* the provider reads it but does not modify it */
  DAT_IOV_PROVIDER_MOD = 0x2    /* the provider may modify it until completion */
} DAT_IOV_OWNERSHIP;

typedef enum dat_ep_creator_for_psp {
  DAT_PSP_CREATES_EP_NEVER,
  DAT_PSP_CREATES_EP_IFASKED,
  DAT_PSP_CREATES_EP_ALWAYS
} DAT_EP_CREATOR_FOR_PSP;

/* Limits and identity of an IA, filled by dat_ia_query(). */
typedef struct dat_ia_attr {
  char adapter_name[DAT_NAME_MAX_LENGTH];
  char vendor_name[DAT_NAME_MAX_LENGTH];
  DAT_UINT32 hardware_version_major;
  DAT_UINT32 hardware_version_minor;
  DAT_UINT32 firmware_version_major;
  DAT_UINT32 firmware_version_minor;
  DAT_IA_ADDRESS_PTR ia_address_ptr;
  DAT_COUNT max_eps;
  DAT_COUNT max_dto_per_ep;
  DAT_COUNT max_rdma_read_per_ep_in;
  DAT_COUNT max_rdma_read_per_ep_out;
  DAT_COUNT max_evds;
  DAT_COUNT max_evd_qlen;
  DAT_COUNT max_iov_segments_per_dto;
  DAT_COUNT max_lmrs;
  DAT_VLEN max_lmr_block_size;
  DAT_VADDR max_lmr_virtual_address;
  DAT_COUNT max_pzs;
  DAT_VLEN max_message_size;
  DAT_VLEN max_rdma_size;
  DAT_COUNT max_rmrs;
  DAT_VADDR max_rmr_target_address;
  DAT_COUNT max_srqs;
  DAT_COUNT max_ep_per_srq;
  DAT_COUNT max_recv_per_srq;
  DAT_COUNT max_iov_segments_per_rdma_read;
  DAT_COUNT max_iov_segments_per_rdma_write;
  DAT_COUNT max_rdma_read_in;
  DAT_COUNT max_rdma_read_out;
  DAT_BOOLEAN max_rdma_read_per_ep_in_guaranteed;
  DAT_BOOLEAN max_rdma_read_per_ep_out_guaranteed;
  DAT_COUNT num_transport_attr;
  DAT_NAMED_ATTR* transport_attr;
  DAT_COUNT num_vendor_attr;
  DAT_NAMED_ATTR* vendor_attr;
} DAT_IA_ATTR;

/*
 * DAT 1.0/1.1 field names. The specification spells them as macros on the
 * lower-case member names, which would rename any identifier of the same
 * name in the consumer's program; define DAT_LEGACY_FIELD_NAMES to get them.
 */
#ifdef DAT_LEGACY_FIELD_NAMES
#define max_rdma_read_per_ep max_rdma_read_per_ep_in
#define max_mtu_size max_message_size
#endif
#define DAT_IA_FIELD_IA_MAX_MTU_SIZE DAT_IA_FIELD_IA_MAX_MESSAGE_SIZE

/* dat_ia_query() field selection (64 bits). 1.2 values: 2.0 differs from bit 31 up. */
typedef DAT_UINT64 DAT_IA_ATTR_MASK;
#define DAT_IA_FIELD_IA_ADAPTER_NAME UINT64_C(0x000000001)
#define DAT_IA_FIELD_IA_VENDOR_NAME UINT64_C(0x000000002)
#define DAT_IA_FIELD_IA_HARDWARE_MAJOR_VERSION UINT64_C(0x000000004)
#define DAT_IA_FIELD_IA_HARDWARE_MINOR_VERSION UINT64_C(0x000000008)
#define DAT_IA_FIELD_IA_FIRMWARE_MAJOR_VERSION UINT64_C(0x000000010)
#define DAT_IA_FIELD_IA_FIRMWARE_MINOR_VERSION UINT64_C(0x000000020)
#define DAT_IA_FIELD_IA_ADDRESS_PTR UINT64_C(0x000000040)
#define DAT_IA_FIELD_IA_MAX_EPS UINT64_C(0x000000080)
#define DAT_IA_FIELD_IA_MAX_DTO_PER_EP UINT64_C(0x000000100)
#define DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN UINT64_C(0x000000200)
#define DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT UINT64_C(0x000000400)
#define DAT_IA_FIELD_IA_MAX_EVDS UINT64_C(0x000000800)
#define DAT_IA_FIELD_IA_MAX_EVD_QLEN UINT64_C(0x000001000)
#define DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_DTO UINT64_C(0x000002000)
#define DAT_IA_FIELD_IA_MAX_LMRS UINT64_C(0x000004000)
#define DAT_IA_FIELD_IA_MAX_LMR_BLOCK_SIZE UINT64_C(0x000008000)
#define DAT_IA_FIELD_IA_MAX_LMR_VIRTUAL_ADDRESS UINT64_C(0x000010000)
#define DAT_IA_FIELD_IA_MAX_PZS UINT64_C(0x000020000)
#define DAT_IA_FIELD_IA_MAX_MESSAGE_SIZE UINT64_C(0x000040000)
#define DAT_IA_FIELD_IA_MAX_RDMA_SIZE UINT64_C(0x000080000)
#define DAT_IA_FIELD_IA_MAX_RMRS UINT64_C(0x000100000)
#define DAT_IA_FIELD_IA_MAX_RMR_TARGET_ADDRESS UINT64_C(0x000200000)
#define DAT_IA_FIELD_IA_MAX_SRQS UINT64_C(0x000400000)
#define DAT_IA_FIELD_IA_MAX_EP_PER_SRQ UINT64_C(0x000800000)
#define DAT_IA_FIELD_IA_MAX_RECV_PER_SRQ UINT64_C(0x001000000)
#define DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_RDMA_READ UINT64_C(0x002000000)
#define DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_RDMA_WRITE UINT64_C(0x004000000)
#define DAT_IA_FIELD_IA_MAX_RDMA_READ_IN UINT64_C(0x008000000)
#define DAT_IA_FIELD_IA_MAX_RDMA_READ_OUT UINT64_C(0x010000000)
#define DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN_GUARANTEED UINT64_C(0x020000000)
#define DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT_GUARANTEED UINT64_C(0x040000000)
#define DAT_IA_FIELD_IA_NUM_TRANSPORT_ATTR UINT64_C(0x080000000)
#define DAT_IA_FIELD_IA_TRANSPORT_ATTR UINT64_C(0x100000000)
#define DAT_IA_FIELD_IA_NUM_VENDOR_ATTR UINT64_C(0x200000000)
#define DAT_IA_FIELD_IA_VENDOR_ATTR UINT64_C(0x400000000)
#define DAT_IA_FIELD_ALL UINT64_C(0x7FFFFFFFF)
#define DAT_IA_FIELD_NONE UINT64_C(0x0)
#define DAT_IA_ALL DAT_IA_FIELD_ALL                  /* DAT 1.0/1.1 name */

/* ------------------------------------------------------------------ */
/* Endpoints                                                           */
/* ------------------------------------------------------------------ */

typedef enum dat_service_type {
  DAT_SERVICE_TYPE_RC /* reliable connection: the only service DAT 1.2 defines */
} DAT_SERVICE_TYPE;

/* EP attributes: given to dat_ep_create() (NULL = provider defaults), reported by dat_ep_query().
 */
typedef struct dat_ep_attr {
  DAT_SERVICE_TYPE service_type;
  DAT_VLEN max_message_size; /* 64-bit in 1.2 (2.0: 32-bit DAT_SEG_LENGTH) */
  DAT_VLEN max_rdma_size;    /* 64-bit in 1.2 (2.0: 32-bit DAT_SEG_LENGTH) */
  DAT_QOS qos;
  DAT_COMPLETION_FLAGS recv_completion_flags;
  DAT_COMPLETION_FLAGS request_completion_flags;
  DAT_COUNT max_recv_dtos;
  DAT_COUNT max_request_dtos;
  DAT_COUNT max_recv_iov;
  DAT_COUNT max_request_iov;
  DAT_COUNT max_rdma_read_in;
  DAT_COUNT max_rdma_read_out;
  DAT_COUNT srq_soft_hw;
  DAT_COUNT max_rdma_read_iov;
  DAT_COUNT max_rdma_write_iov;
  DAT_COUNT ep_transport_specific_count;
  DAT_NAMED_ATTR* ep_transport_specific;
  DAT_COUNT ep_provider_specific_count;
  DAT_NAMED_ATTR* ep_provider_specific;
} DAT_EP_ATTR;

/* EP states, in 1.2 order (2.0 appends CONNECTED_SINGLE_PATH/MULTI_PATH). */
typedef enum dat_ep_state {
  DAT_EP_STATE_UNCONNECTED,
  DAT_EP_STATE_UNCONFIGURED_UNCONNECTED,
  DAT_EP_STATE_RESERVED,
  DAT_EP_STATE_UNCONFIGURED_RESERVED,
  DAT_EP_STATE_PASSIVE_CONNECTION_PENDING,
  DAT_EP_STATE_UNCONFIGURED_PASSIVE,
  DAT_EP_STATE_ACTIVE_CONNECTION_PENDING,
  DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING,
  DAT_EP_STATE_UNCONFIGURED_TENTATIVE,
  DAT_EP_STATE_CONNECTED,
  DAT_EP_STATE_DISCONNECT_PENDING,
  DAT_EP_STATE_DISCONNECTED,
  DAT_EP_STATE_COMPLETION_PENDING
} DAT_EP_STATE;
#define DAT_EP_STATE_ERROR DAT_EP_STATE_DISCONNECTED /* earlier name */

/* What dat_ep_query() reports and dat_ep_modify() changes. 1.2 has no "comm" member (2.0 does). */
typedef struct dat_ep_param {
  DAT_IA_HANDLE ia_handle;
  DAT_EP_STATE ep_state;
  DAT_IA_ADDRESS_PTR local_ia_address_ptr;
  DAT_PORT_QUAL local_port_qual;
  DAT_IA_ADDRESS_PTR remote_ia_address_ptr;
  DAT_PORT_QUAL remote_port_qual;
  DAT_PZ_HANDLE pz_handle;
  DAT_EVD_HANDLE recv_evd_handle;
  DAT_EVD_HANDLE request_evd_handle;
  DAT_EVD_HANDLE connect_evd_handle;
  DAT_SRQ_HANDLE srq_handle;
  DAT_EP_ATTR ep_attr;
} DAT_EP_PARAM;

/*
 * dat_ep_query()/dat_ep_modify() field selection (64 bits). 1.2 values: the
 * EP_PARAM fields 0x001..0x400 (2.0 inserts COMM at 0x004 and shifts the
 * rest); the EP_ATTR fields from 0x1000 are the same in both.
 */
typedef DAT_UINT64 DAT_EP_PARAM_MASK;
#define DAT_EP_FIELD_IA_HANDLE UINT64_C(0x00000001)
#define DAT_EP_FIELD_EP_STATE UINT64_C(0x00000002)
#define DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR UINT64_C(0x00000004)
#define DAT_EP_FIELD_LOCAL_PORT_QUAL UINT64_C(0x00000008)
#define DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR UINT64_C(0x00000010)
#define DAT_EP_FIELD_REMOTE_PORT_QUAL UINT64_C(0x00000020)
#define DAT_EP_FIELD_PZ_HANDLE UINT64_C(0x00000040)
#define DAT_EP_FIELD_RECV_EVD_HANDLE UINT64_C(0x00000080)
#define DAT_EP_FIELD_REQUEST_EVD_HANDLE UINT64_C(0x00000100)
#define DAT_EP_FIELD_CONNECT_EVD_HANDLE UINT64_C(0x00000200)
#define DAT_EP_FIELD_SRQ_HANDLE UINT64_C(0x00000400)
#define DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE UINT64_C(0x00001000)
#define DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE UINT64_C(0x00002000)
#define DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE UINT64_C(0x00004000)
#define DAT_EP_FIELD_EP_ATTR_QOS UINT64_C(0x00008000)
#define DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS UINT64_C(0x00010000)
#define DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS UINT64_C(0x00020000)
#define DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS UINT64_C(0x00040000)
#define DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS UINT64_C(0x00080000)
#define DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV UINT64_C(0x00100000)
#define DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV UINT64_C(0x00200000)
#define DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN UINT64_C(0x00400000)
#define DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT UINT64_C(0x00800000)
#define DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW UINT64_C(0x01000000)
#define DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV UINT64_C(0x02000000)
#define DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV UINT64_C(0x04000000)
#define DAT_EP_FIELD_EP_ATTR_NUM_TRANSPORT_ATTR UINT64_C(0x08000000)
#define DAT_EP_FIELD_EP_ATTR_TRANSPORT_SPECIFIC_ATTR UINT64_C(0x10000000)
#define DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR UINT64_C(0x20000000)
#define DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR UINT64_C(0x40000000)
#define DAT_EP_FIELD_EP_ATTR_ALL UINT64_C(0x7FFFF000)
#define DAT_EP_FIELD_ALL UINT64_C(0x7FFFF7FF) /* 1.2 (2.0: 0x7FFFFFFF) */

/* Watermarks (dat_ep_set_watermark, dat_srq_set_lw). */
#define DAT_WATERMARK_INFINITE (-1)           /* (DAT_COUNT)~0 */
#define DAT_HW_DEFAULT DAT_WATERMARK_INFINITE
#define DAT_SRQ_LW_DEFAULT 0x0

/* "Not known" for counts a query cannot report. */
#define DAT_VALUE_UNKNOWN (-2) /* ((DAT_COUNT)~0) - 1 */

/* ------------------------------------------------------------------ */
/* Shared receive queues                                               */
/* ------------------------------------------------------------------ */

/* 1.2 order: OPERATIONAL = 0, ERROR = 1 (2.0: ERROR = 0, OPERATIONAL = 1, SHUTDOWN = 2). */
typedef enum dat_srq_state { DAT_SRQ_STATE_OPERATIONAL, DAT_SRQ_STATE_ERROR } DAT_SRQ_STATE;

typedef struct dat_srq_attr {
  DAT_COUNT max_recv_dtos;
  DAT_COUNT max_recv_iov;
  DAT_COUNT low_watermark;
} DAT_SRQ_ATTR;

typedef struct dat_srq_param {
  DAT_IA_HANDLE ia_handle;
  DAT_SRQ_STATE srq_state;
  DAT_PZ_HANDLE pz_handle;
  DAT_COUNT max_recv_dtos;
  DAT_COUNT max_recv_iov;
  DAT_COUNT low_watermark;
  DAT_COUNT available_dto_count;
  DAT_COUNT outstanding_dto_count;
} DAT_SRQ_PARAM;

typedef enum dat_srq_param_mask {
  DAT_SRQ_FIELD_IA_HANDLE = 0x001,
  DAT_SRQ_FIELD_SRQ_STATE = 0x002,
  DAT_SRQ_FIELD_PZ_HANDLE = 0x004,
  DAT_SRQ_FIELD_MAX_RECV_DTO = 0x008,
  DAT_SRQ_FIELD_MAX_RECV_IOV = 0x010,
  DAT_SRQ_FIELD_LOW_WATERMARK = 0x020,
  DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT = 0x040,
  DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT = 0x080,
  DAT_SRQ_FIELD_ALL = 0x0FF
} DAT_SRQ_PARAM_MASK;

/* ------------------------------------------------------------------ */
/* Protection zones, service points, connection requests               */
/* ------------------------------------------------------------------ */

typedef struct dat_pz_param {
  DAT_IA_HANDLE ia_handle;
} DAT_PZ_PARAM;

typedef enum dat_pz_param_mask {
  DAT_PZ_FIELD_IA_HANDLE = 0x01,
  DAT_PZ_FIELD_ALL = 0x01
} DAT_PZ_PARAM_MASK;

typedef struct dat_psp_param {
  DAT_IA_HANDLE ia_handle;
  DAT_CONN_QUAL conn_qual;
  DAT_EVD_HANDLE evd_handle;
  DAT_PSP_FLAGS psp_flags;
} DAT_PSP_PARAM;

typedef enum dat_psp_param_mask {
  DAT_PSP_FIELD_IA_HANDLE = 0x01,
  DAT_PSP_FIELD_CONN_QUAL = 0x02,
  DAT_PSP_FIELD_EVD_HANDLE = 0x04,
  DAT_PSP_FIELD_PSP_FLAGS = 0x08,
  DAT_PSP_FIELD_ALL = 0x0F
} DAT_PSP_PARAM_MASK;

typedef struct dat_rsp_param {
  DAT_IA_HANDLE ia_handle;
  DAT_CONN_QUAL conn_qual;
  DAT_EVD_HANDLE evd_handle;
  DAT_EP_HANDLE ep_handle;
} DAT_RSP_PARAM;

typedef enum dat_rsp_param_mask {
  DAT_RSP_FIELD_IA_HANDLE = 0x01,
  DAT_RSP_FIELD_CONN_QUAL = 0x02,
  DAT_RSP_FIELD_EVD_HANDLE = 0x04,
  DAT_RSP_FIELD_EP_HANDLE = 0x08,
  DAT_RSP_FIELD_ALL = 0x0F
} DAT_RSP_PARAM_MASK;

/*
 * A pending connection request, as dat_cr_query() reports it. The remote EP's
 * attributes are not part of it: peers that need them send them as private data.
 */
typedef struct dat_cr_param {
  DAT_IA_ADDRESS_PTR remote_ia_address_ptr; /* the requesting IA */
  DAT_PORT_QUAL remote_port_qual;
  DAT_COUNT private_data_size;
  DAT_PVOID private_data;        /* as sent by the peer's dat_ep_connect() */
  DAT_EP_HANDLE local_ep_handle; /* RSP/provider-created EP, else DAT_HANDLE_NULL */
} DAT_CR_PARAM;

typedef enum dat_cr_param_mask {
  DAT_CR_FIELD_REMOTE_IA_ADDRESS_PTR = 0x01,
  DAT_CR_FIELD_REMOTE_PORT_QUAL = 0x02,
  DAT_CR_FIELD_PRIVATE_DATA_SIZE = 0x04,
  DAT_CR_FIELD_PRIVATE_DATA = 0x08,
  DAT_CR_FIELD_LOCAL_EP_HANDLE = 0x10,
  DAT_CR_FIELD_ALL = 0x1F
} DAT_CR_PARAM_MASK;

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

/* Status of a completed DTO (and of an RMR bind). */
typedef enum dat_dto_completion_status {
  DAT_DTO_SUCCESS = 0,
  DAT_DTO_ERR_FLUSHED = 1,          /* flushed: the EP left the connected state */
  DAT_DTO_ERR_LOCAL_LENGTH = 2,     /* receive buffers too small for the message */
  DAT_DTO_ERR_LOCAL_EP = 3,         /* local EP error */
  DAT_DTO_ERR_LOCAL_PROTECTION = 4, /* a local_iov segment failed key/PZ/privilege/bounds checks */
  DAT_DTO_ERR_BAD_RESPONSE = 5,     /* unexpected response from the peer */
  DAT_DTO_ERR_REMOTE_ACCESS = 6,    /* the peer rejected the RMR context, range or right */
  DAT_DTO_ERR_REMOTE_RESPONDER = 7, /* the peer failed the operation */
  DAT_DTO_ERR_TRANSPORT = 8,        /* retries exhausted / transport failure */
  DAT_DTO_ERR_RECEIVER_NOT_READY = 9, /* RNR retries exhausted */
  DAT_DTO_ERR_PARTIAL_PACKET = 10,
  DAT_RMR_OPERATION_FAILED = 11
  /* (DAT 2.0 adds DAT_DTO_ERR_LOCAL_MM_ERROR = 12, kDAPL only.) */
} DAT_DTO_COMPLETION_STATUS;

/* Earlier names. */
#define DAT_DTO_LENGTH_ERROR DAT_DTO_ERR_LOCAL_LENGTH
#define DAT_DTO_FAILURE DAT_DTO_ERR_FLUSHED
#define DAT_RMR_BIND_SUCCESS DAT_DTO_SUCCESS
#define DAT_RMR_BIND_FAILURE DAT_DTO_ERR_FLUSHED
#define DAT_RMR_BIND_COMPLETION_STATUS DAT_DTO_COMPLETION_STATUS

/*
 * DAT_DTO_COMPLETION_EVENT: one posted send/recv/RDMA completed.
 * transfered_length (the specification's spelling) is valid only when status
 * is DAT_DTO_SUCCESS. DAT 1.2 layout: no operation / rmr_context members, and
 * the length is a 64-bit DAT_VLEN (2.0: 32-bit DAT_SEG_LENGTH).
 */
typedef struct dat_dto_completion_event_data {
  DAT_EP_HANDLE ep_handle;
  DAT_DTO_COOKIE user_cookie;
  DAT_DTO_COMPLETION_STATUS status;
  DAT_VLEN transfered_length;
} DAT_DTO_COMPLETION_EVENT_DATA;

/* DAT_RMR_BIND_COMPLETION_EVENT: a dat_rmr_bind() completed. */
typedef struct dat_rmr_bind_completion_event_data {
  DAT_RMR_HANDLE rmr_handle;
  DAT_RMR_COOKIE user_cookie;
  DAT_RMR_BIND_COMPLETION_STATUS status;
} DAT_RMR_BIND_COMPLETION_EVENT_DATA;

/* The service point a connection request arrived at (1.2: PSP or RSP only). */
typedef union dat_sp_handle {
  DAT_RSP_HANDLE rsp_handle;
  DAT_PSP_HANDLE psp_handle;
} DAT_SP_HANDLE;

/*
 * DAT_CONNECTION_REQUEST_EVENT: a peer asked to connect. sp_handle is
 * DAT_HANDLE_NULL for an RSP (an RSP is consumed by its first request).
 * The consumer answers with dat_cr_accept(), dat_cr_reject() or dat_cr_handoff().
 * (2.0 appends a truncate_flag member; 1.2 has none.)
 */
typedef struct dat_cr_arrival_event_data {
  DAT_SP_HANDLE sp_handle;
  DAT_IA_ADDRESS_PTR local_ia_address_ptr;
  DAT_CONN_QUAL conn_qual;
  DAT_CR_HANDLE cr_handle;
} DAT_CR_ARRIVAL_EVENT_DATA;

/* DAT_CONNECTION_EVENT_*: connection state change of ep_handle. */
typedef struct dat_connection_event_data {
  DAT_EP_HANDLE ep_handle;
  DAT_COUNT private_data_size;
  DAT_PVOID private_data; /* the peer's accept/reject private data, if any */
} DAT_CONNECTION_EVENT_DATA;

/*
 * DAT_ASYNC_ERROR_*: dat_handle is the IA (unaffiliated errors), or the EP,
 * EVD, SRQ, LMR, RMR or PZ the error concerns; reason is one of the
 * object-specific enums below.
 */
typedef struct dat_asynch_error_event_data {
  DAT_HANDLE dat_handle;
  DAT_COUNT reason;
} DAT_ASYNCH_ERROR_EVENT_DATA;

typedef enum ia_async_error_reason {
  DAT_IA_CATASTROPHIC_ERROR,
  DAT_IA_OTHER_ERROR
} DAT_IA_ASYNC_ERROR_REASON;

typedef enum ep_async_error_reason {
  DAT_EP_TRANSFER_TO_ERROR,
  DAT_EP_OTHER_ERROR,
  DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT
} DAT_EP_ASYNC_ERROR_REASON;

typedef enum ep_evd_error_reason {
  DAT_EVD_OVERFLOW_ERROR,
  DAT_EVD_OTHER_ERROR
} DAT_EVD_ASYNC_ERROR_REASON;

typedef enum ep_srq_error_reason {
  DAT_SRQ_TRANSFER_TO_ERROR,
  DAT_SRQ_OTHER_ERROR,
  DAT_SRQ_LOW_WATERMARK_EVENT
} DAT_SRQ_ASYNC_ERROR_REASON;

typedef enum lmr_async_error_reason { DAT_LMR_OTHER_ERROR } DAT_LMR_ASYNC_ERROR_REASON;
typedef enum rmr_async_error_reason { DAT_RMR_OTHER_ERROR } DAT_RMR_ASYNC_ERROR_REASON;
typedef enum pz_async_error_reason { DAT_PZ_OTHER_ERROR } DAT_PZ_ASYNC_ERROR_REASON;

/* DAT_SOFTWARE_EVENT: posted with dat_evd_post_se(). */
typedef struct dat_software_event_data {
  DAT_PVOID pointer;
} DAT_SOFTWARE_EVENT_DATA;

/* Event numbers: the high bits give the stream (DTO, RMR bind, CR, connection, async, software). */
typedef enum dat_event_number {
  DAT_DTO_COMPLETION_EVENT = 0x00001,

  DAT_RMR_BIND_COMPLETION_EVENT = 0x01001,

  DAT_CONNECTION_REQUEST_EVENT = 0x02001,

  DAT_CONNECTION_EVENT_ESTABLISHED = 0x04001,
  DAT_CONNECTION_EVENT_PEER_REJECTED = 0x04002,
  DAT_CONNECTION_EVENT_NON_PEER_REJECTED = 0x04003,
  DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR = 0x04004,
  DAT_CONNECTION_EVENT_DISCONNECTED = 0x04005,
  DAT_CONNECTION_EVENT_BROKEN = 0x04006,
  DAT_CONNECTION_EVENT_TIMED_OUT = 0x04007,
  DAT_CONNECTION_EVENT_UNREACHABLE = 0x04008,

  DAT_ASYNC_ERROR_EVD_OVERFLOW = 0x08001,
  DAT_ASYNC_ERROR_IA_CATASTROPHIC = 0x08002,
  DAT_ASYNC_ERROR_EP_BROKEN = 0x08003,
  DAT_ASYNC_ERROR_TIMED_OUT = 0x08004,
  DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR = 0x08005,

  DAT_SOFTWARE_EVENT = 0x10001
  /* (2.0 adds DAT_HA_* and extension event numbers; 1.2 has none.) */
} DAT_EVENT_NUMBER;

typedef union dat_event_data {
  DAT_DTO_COMPLETION_EVENT_DATA dto_completion_event_data;
  DAT_RMR_BIND_COMPLETION_EVENT_DATA rmr_completion_event_data;
  DAT_CR_ARRIVAL_EVENT_DATA cr_arrival_event_data;
  DAT_CONNECTION_EVENT_DATA connect_event_data;
  DAT_ASYNCH_ERROR_EVENT_DATA asynch_error_event_data;
  DAT_SOFTWARE_EVENT_DATA software_event_data;
} DAT_EVENT_DATA;

/* One event as dequeued from an EVD. (1.2: no event_extension_data[] as in 2.0.) */
typedef struct dat_event {
  DAT_EVENT_NUMBER event_number;
  DAT_EVD_HANDLE evd_handle;
  DAT_EVENT_DATA event_data;
} DAT_EVENT;

/* One entry of dat_registry_list_providers(). */
typedef struct dat_provider_info {
  char ia_name[DAT_NAME_MAX_LENGTH];
  DAT_UINT32 dapl_version_major;
  DAT_UINT32 dapl_version_minor;
  DAT_BOOLEAN is_thread_safe;
} DAT_PROVIDER_INFO;

/* ------------------------------------------------------------------ */
/* Functions. Every one may be called from any thread.                 */
/* ------------------------------------------------------------------ */

/* Interface Adapter */

/* Opens the IA named ia_name (creating its async EVD unless DAT_EVD_ASYNC_EXISTS is passed); any
 * thread; errors: DAT_PROVIDER_NOT_FOUND (subtype: name/major/minor/thread safety),
 * DAT_INVALID_PARAMETER, DAT_INVALID_HANDLE, DAT_INSUFFICIENT_RESOURCES. */
extern DAT_RETURN dat_ia_openv(IN const DAT_NAME_PTR ia_name, IN DAT_COUNT async_evd_min_qlen,
                               INOUT DAT_EVD_HANDLE* async_evd_handle, OUT DAT_IA_HANDLE* ia_handle,
                               IN DAT_UINT32 dat_major, IN DAT_UINT32 dat_minor,
                               IN DAT_BOOLEAN thread_safety);

/* The specified way to open an IA: passes this header's version and DAT_THREADSAFE. */
#define dat_ia_open(name, qlen, async_evd, ia)                                          \
  dat_ia_openv((name), (qlen), (async_evd), (ia), DAT_VERSION_MAJOR, DAT_VERSION_MINOR, \
               DAT_THREADSAFE)

/* Reports IA and provider attributes selected by the two masks; any thread; errors:
 * DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER. */
extern DAT_RETURN dat_ia_query(IN DAT_IA_HANDLE ia_handle, OUT DAT_EVD_HANDLE* async_evd_handle,
                               IN DAT_IA_ATTR_MASK ia_attr_mask, OUT DAT_IA_ATTR* ia_attr,
                               IN DAT_PROVIDER_ATTR_MASK provider_attr_mask,
                               OUT DAT_PROVIDER_ATTR* provider_attr);

/* Closes the IA (abruptly destroying its objects, or gracefully if none remain); any thread;
 * errors: DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER, DAT_INVALID_STATE, DAT_INSUFFICIENT_RESOURCES.
 */
extern DAT_RETURN dat_ia_close(IN DAT_IA_HANDLE ia_handle, IN DAT_CLOSE_FLAGS close_flags);

/* Consumer context and handle type */

/* Attaches a consumer context to any DAT handle; any thread; errors: DAT_INVALID_HANDLE. */
extern DAT_RETURN dat_set_consumer_context(IN DAT_HANDLE dat_handle, IN DAT_CONTEXT context);

/* Returns the consumer context of any DAT handle; any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_PARAMETER. */
extern DAT_RETURN dat_get_consumer_context(IN DAT_HANDLE dat_handle, OUT DAT_CONTEXT* context);

/* Returns which kind of object a handle names; any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_PARAMETER. */
extern DAT_RETURN dat_get_handle_type(IN DAT_HANDLE dat_handle, OUT DAT_HANDLE_TYPE* handle_type);

/* Connection requests */

/* Reports a pending connection request; any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_PARAMETER. */
extern DAT_RETURN dat_cr_query(IN DAT_CR_HANDLE cr_handle, IN DAT_CR_PARAM_MASK cr_param_mask,
                               OUT DAT_CR_PARAM* cr_param);

/* Accepts a connection request on ep_handle, sending private data back; any thread; errors:
 * DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER, DAT_INVALID_STATE, DAT_INSUFFICIENT_RESOURCES. */
extern DAT_RETURN dat_cr_accept(IN DAT_CR_HANDLE cr_handle, IN DAT_EP_HANDLE ep_handle,
                                IN DAT_COUNT private_data_size, IN const DAT_PVOID private_data);

/* Rejects a connection request (1.2: no private data, unlike 2.0); any thread; errors:
 * DAT_INVALID_HANDLE. */
extern DAT_RETURN dat_cr_reject(IN DAT_CR_HANDLE cr_handle);

/* Passes a connection request on to the service point listening on another qualifier; any thread;
 * errors: DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER. */
extern DAT_RETURN dat_cr_handoff(IN DAT_CR_HANDLE cr_handle, IN DAT_CONN_QUAL handoff);

/* Event dispatchers (the uDAPL-only EVD calls are in udat.h) */

/* Changes the queue length of an EVD; any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_PARAMETER, DAT_INVALID_STATE, DAT_INSUFFICIENT_RESOURCES. */
extern DAT_RETURN dat_evd_resize(IN DAT_EVD_HANDLE evd_handle, IN DAT_COUNT evd_min_qlen);

/* Posts a software event to an EVD created with DAT_EVD_SOFTWARE_FLAG; any thread; errors:
 * DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER, DAT_QUEUE_FULL. */
extern DAT_RETURN dat_evd_post_se(IN DAT_EVD_HANDLE evd_handle, IN const DAT_EVENT* event);

/* Takes the oldest event without waiting; any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_PARAMETER, DAT_QUEUE_EMPTY. */
extern DAT_RETURN dat_evd_dequeue(IN DAT_EVD_HANDLE evd_handle, OUT DAT_EVENT* event);

/* Reports EVD parameters; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER. */
extern DAT_RETURN dat_evd_query(IN DAT_EVD_HANDLE evd_handle, IN DAT_EVD_PARAM_MASK evd_param_mask,
                                OUT DAT_EVD_PARAM* evd_param);

/* Destroys an EVD no object still feeds; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_STATE.
 */
extern DAT_RETURN dat_evd_free(IN DAT_EVD_HANDLE evd_handle);

/* Endpoints */

/* Creates an EP; NULL ep_attributes selects provider defaults; any thread; errors:
 * DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER, DAT_INSUFFICIENT_RESOURCES, DAT_MODEL_NOT_SUPPORTED.
 */
extern DAT_RETURN dat_ep_create(IN DAT_IA_HANDLE ia_handle, IN DAT_PZ_HANDLE pz_handle,
                                IN DAT_EVD_HANDLE recv_evd_handle,
                                IN DAT_EVD_HANDLE request_evd_handle,
                                IN DAT_EVD_HANDLE connect_evd_handle,
                                IN const DAT_EP_ATTR* ep_attributes, OUT DAT_EP_HANDLE* ep_handle);

/* Reports EP parameters and state; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER.
 */
extern DAT_RETURN dat_ep_query(IN DAT_EP_HANDLE ep_handle, IN DAT_EP_PARAM_MASK ep_param_mask,
                               OUT DAT_EP_PARAM* ep_param);

/* Changes EP parameters selected by the mask; any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_PARAMETER, DAT_INVALID_STATE, DAT_INSUFFICIENT_RESOURCES. */
extern DAT_RETURN dat_ep_modify(IN DAT_EP_HANDLE ep_handle, IN DAT_EP_PARAM_MASK ep_param_mask,
                                IN const DAT_EP_PARAM* ep_param);

/* Starts an active connection to remote_ia_address:remote_conn_qual; the result arrives on the
 * connect EVD; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER, DAT_INVALID_STATE,
 * DAT_INVALID_ADDRESS, DAT_INSUFFICIENT_RESOURCES, DAT_MODEL_NOT_SUPPORTED. */
extern DAT_RETURN dat_ep_connect(IN DAT_EP_HANDLE ep_handle,
                                 IN DAT_IA_ADDRESS_PTR remote_ia_address,
                                 IN DAT_CONN_QUAL remote_conn_qual, IN DAT_TIMEOUT timeout,
                                 IN DAT_COUNT private_data_size, IN const DAT_PVOID private_data,
                                 IN DAT_QOS quality_of_service, IN DAT_CONNECT_FLAGS connect_flags);

/* Connects ep_handle to the same peer that ep_dup_handle is connected to; any thread; errors:
 * DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER, DAT_INVALID_STATE, DAT_INSUFFICIENT_RESOURCES,
 * DAT_MODEL_NOT_SUPPORTED. */
extern DAT_RETURN dat_ep_dup_connect(IN DAT_EP_HANDLE ep_handle, IN DAT_EP_HANDLE ep_dup_handle,
                                     IN DAT_TIMEOUT timeout, IN DAT_COUNT private_data_size,
                                     IN const DAT_PVOID private_data,
                                     IN DAT_QOS quality_of_service);

/* Disconnects (abrupt: flushes outstanding DTOs; graceful: lets them finish); any thread; errors:
 * DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER, DAT_INVALID_STATE. */
extern DAT_RETURN dat_ep_disconnect(IN DAT_EP_HANDLE ep_handle, IN DAT_CLOSE_FLAGS close_flags);

/* Posts a Send of the local_iov segments; any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_PARAMETER, DAT_INVALID_STATE, DAT_INSUFFICIENT_RESOURCES, DAT_LENGTH_ERROR,
 * DAT_PROTECTION_VIOLATION, DAT_PRIVILEGES_VIOLATION. */
extern DAT_RETURN dat_ep_post_send(IN DAT_EP_HANDLE ep_handle, IN DAT_COUNT num_segments,
                                   IN DAT_LMR_TRIPLET* local_iov, IN DAT_DTO_COOKIE user_cookie,
                                   IN DAT_COMPLETION_FLAGS completion_flags);

/* Posts a receive buffer made of the local_iov segments; any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_PARAMETER, DAT_INVALID_STATE, DAT_INSUFFICIENT_RESOURCES, DAT_PROTECTION_VIOLATION,
 * DAT_PRIVILEGES_VIOLATION. */
extern DAT_RETURN dat_ep_post_recv(IN DAT_EP_HANDLE ep_handle, IN DAT_COUNT num_segments,
                                   IN DAT_LMR_TRIPLET* local_iov, IN DAT_DTO_COOKIE user_cookie,
                                   IN DAT_COMPLETION_FLAGS completion_flags);

/* Posts an RDMA Read of remote_iov into the local_iov segments; any thread; errors:
 * DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER, DAT_INVALID_STATE, DAT_INSUFFICIENT_RESOURCES,
 * DAT_LENGTH_ERROR, DAT_PROTECTION_VIOLATION, DAT_PRIVILEGES_VIOLATION. */
extern DAT_RETURN dat_ep_post_rdma_read(IN DAT_EP_HANDLE ep_handle, IN DAT_COUNT num_segments,
                                        IN DAT_LMR_TRIPLET* local_iov,
                                        IN DAT_DTO_COOKIE user_cookie,
                                        IN const DAT_RMR_TRIPLET* remote_iov,
                                        IN DAT_COMPLETION_FLAGS completion_flags);

/* Posts an RDMA Write of the local_iov segments to remote_iov; any thread; errors:
 * DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER, DAT_INVALID_STATE, DAT_INSUFFICIENT_RESOURCES,
 * DAT_LENGTH_ERROR, DAT_PROTECTION_VIOLATION, DAT_PRIVILEGES_VIOLATION. */
extern DAT_RETURN dat_ep_post_rdma_write(IN DAT_EP_HANDLE ep_handle, IN DAT_COUNT num_segments,
                                         IN DAT_LMR_TRIPLET* local_iov,
                                         IN DAT_DTO_COOKIE user_cookie,
                                         IN const DAT_RMR_TRIPLET* remote_iov,
                                         IN DAT_COMPLETION_FLAGS completion_flags);

/* Reports the EP state and whether its receive and request queues are idle; any thread; errors:
 * DAT_INVALID_HANDLE. */
extern DAT_RETURN dat_ep_get_status(IN DAT_EP_HANDLE ep_handle, OUT DAT_EP_STATE* ep_state,
                                    OUT DAT_BOOLEAN* recv_idle, OUT DAT_BOOLEAN* request_idle);

/* Destroys an EP, abruptly disconnecting it first; any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_STATE. */
extern DAT_RETURN dat_ep_free(IN DAT_EP_HANDLE ep_handle);

/* Returns a disconnected EP to the unconnected state for reuse; any thread; errors:
 * DAT_INVALID_HANDLE, DAT_INVALID_STATE. */
extern DAT_RETURN dat_ep_reset(IN DAT_EP_HANDLE ep_handle);

/* Local memory regions (dat_lmr_create is in udat.h) */

/* Reports LMR parameters; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER. */
extern DAT_RETURN dat_lmr_query(IN DAT_LMR_HANDLE lmr_handle, IN DAT_LMR_PARAM_MASK lmr_param_mask,
                                OUT DAT_LMR_PARAM* lmr_param);

/* Deregisters an LMR (its contexts become invalid at once); any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_STATE. */
extern DAT_RETURN dat_lmr_free(IN DAT_LMR_HANDLE lmr_handle);

/* Makes local writes to the segments visible to incoming RDMA Reads; any thread; errors:
 * DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER. */
extern DAT_RETURN dat_lmr_sync_rdma_read(IN DAT_IA_HANDLE ia_handle,
                                         IN const DAT_LMR_TRIPLET* local_segments,
                                         IN DAT_VLEN num_segments);

/* Makes data placed by incoming RDMA Writes visible to local reads; any thread; errors:
 * DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER. */
extern DAT_RETURN dat_lmr_sync_rdma_write(IN DAT_IA_HANDLE ia_handle,
                                          IN const DAT_LMR_TRIPLET* local_segments,
                                          IN DAT_VLEN num_segments);

/* Remote memory regions */

/* Creates an unbound RMR in a PZ; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER,
 * DAT_INSUFFICIENT_RESOURCES. */
extern DAT_RETURN dat_rmr_create(IN DAT_PZ_HANDLE pz_handle, OUT DAT_RMR_HANDLE* rmr_handle);

/* Reports RMR parameters; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER. */
extern DAT_RETURN dat_rmr_query(IN DAT_RMR_HANDLE rmr_handle, IN DAT_RMR_PARAM_MASK rmr_param_mask,
                                OUT DAT_RMR_PARAM* rmr_param);

/* Binds (or, with a zero-length triplet, unbinds) an RMR to an LMR range through ep_handle's
 * request queue, returning the new rmr_context at once; any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_PARAMETER, DAT_INVALID_STATE, DAT_INSUFFICIENT_RESOURCES, DAT_MODEL_NOT_SUPPORTED,
 * DAT_PRIVILEGES_VIOLATION, DAT_PROTECTION_VIOLATION. */
extern DAT_RETURN dat_rmr_bind(IN DAT_RMR_HANDLE rmr_handle, IN const DAT_LMR_TRIPLET* lmr_triplet,
                               IN DAT_MEM_PRIV_FLAGS mem_privileges, IN DAT_EP_HANDLE ep_handle,
                               IN DAT_RMR_COOKIE user_cookie,
                               IN DAT_COMPLETION_FLAGS completion_flags,
                               OUT DAT_RMR_CONTEXT* rmr_context);

/* Destroys an RMR (its rmr_context becomes invalid); any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_STATE. */
extern DAT_RETURN dat_rmr_free(IN DAT_RMR_HANDLE rmr_handle);

/* Public service points */

/* Starts listening on conn_qual; requests arrive on evd_handle; any thread; errors:
 * DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER, DAT_CONN_QUAL_IN_USE, DAT_INSUFFICIENT_RESOURCES,
 * DAT_MODEL_NOT_SUPPORTED. */
extern DAT_RETURN dat_psp_create(IN DAT_IA_HANDLE ia_handle, IN DAT_CONN_QUAL conn_qual,
                                 IN DAT_EVD_HANDLE evd_handle, IN DAT_PSP_FLAGS psp_flags,
                                 OUT DAT_PSP_HANDLE* psp_handle);

/* Like dat_psp_create on a free qualifier the provider picks and returns; any thread; errors:
 * DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER, DAT_CONN_QUAL_UNAVAILABLE, DAT_INSUFFICIENT_RESOURCES,
 * DAT_MODEL_NOT_SUPPORTED. */
extern DAT_RETURN dat_psp_create_any(IN DAT_IA_HANDLE ia_handle, OUT DAT_CONN_QUAL* conn_qual,
                                     IN DAT_EVD_HANDLE evd_handle, IN DAT_PSP_FLAGS psp_flags,
                                     OUT DAT_PSP_HANDLE* psp_handle);

/* Reports PSP parameters; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER. */
extern DAT_RETURN dat_psp_query(IN DAT_PSP_HANDLE psp_handle, IN DAT_PSP_PARAM_MASK psp_param_mask,
                                OUT DAT_PSP_PARAM* psp_param);

/* Stops listening; requests already delivered stay valid; any thread; errors: DAT_INVALID_HANDLE.
 */
extern DAT_RETURN dat_psp_free(IN DAT_PSP_HANDLE psp_handle);

/* Reserved service points */

/* Listens on conn_qual for one request, for the given EP; any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_PARAMETER, DAT_INVALID_STATE, DAT_CONN_QUAL_IN_USE, DAT_INSUFFICIENT_RESOURCES,
 * DAT_MODEL_NOT_SUPPORTED. */
extern DAT_RETURN dat_rsp_create(IN DAT_IA_HANDLE ia_handle, IN DAT_CONN_QUAL conn_qual,
                                 IN DAT_EP_HANDLE ep_handle, IN DAT_EVD_HANDLE evd_handle,
                                 OUT DAT_RSP_HANDLE* rsp_handle);

/* Reports RSP parameters; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER. */
extern DAT_RETURN dat_rsp_query(IN DAT_RSP_HANDLE rsp_handle, IN DAT_RSP_PARAM_MASK rsp_param_mask,
                                OUT DAT_RSP_PARAM* rsp_param);

/* Destroys an RSP that has not yet received its request; any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_STATE. */
extern DAT_RETURN dat_rsp_free(IN DAT_RSP_HANDLE rsp_handle);

/* Protection zones */

/* Creates a protection zone; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER,
 * DAT_INSUFFICIENT_RESOURCES. */
extern DAT_RETURN dat_pz_create(IN DAT_IA_HANDLE ia_handle, OUT DAT_PZ_HANDLE* pz_handle);

/* Reports PZ parameters; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER. */
extern DAT_RETURN dat_pz_query(IN DAT_PZ_HANDLE pz_handle, IN DAT_PZ_PARAM_MASK pz_param_mask,
                               OUT DAT_PZ_PARAM* pz_param);

/* Destroys a PZ no EP, LMR, RMR or SRQ still uses; any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_STATE. */
extern DAT_RETURN dat_pz_free(IN DAT_PZ_HANDLE pz_handle);

/* Shared receive queues */

/* Creates an EP whose receives come from srq_handle; any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_PARAMETER, DAT_INSUFFICIENT_RESOURCES, DAT_MODEL_NOT_SUPPORTED. */
extern DAT_RETURN dat_ep_create_with_srq(IN DAT_IA_HANDLE ia_handle, IN DAT_PZ_HANDLE pz_handle,
                                         IN DAT_EVD_HANDLE recv_evd_handle,
                                         IN DAT_EVD_HANDLE request_evd_handle,
                                         IN DAT_EVD_HANDLE connect_evd_handle,
                                         IN DAT_SRQ_HANDLE srq_handle,
                                         IN const DAT_EP_ATTR* ep_attributes,
                                         OUT DAT_EP_HANDLE* ep_handle);

/* Reports how many receive buffers an EP holds and how they span; any thread; errors:
 * DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER, DAT_MODEL_NOT_SUPPORTED. */
extern DAT_RETURN dat_ep_recv_query(IN DAT_EP_HANDLE ep_handle, OUT DAT_COUNT* nbufs_allocated,
                                    OUT DAT_COUNT* bufs_alloc_span);

/* Sets an SRQ-attached EP's soft and hard high watermarks; any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_PARAMETER, DAT_MODEL_NOT_SUPPORTED. */
extern DAT_RETURN dat_ep_set_watermark(IN DAT_EP_HANDLE ep_handle, IN DAT_COUNT soft_high_watermark,
                                       IN DAT_COUNT hard_high_watermark);

/* Creates a shared receive queue; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER,
 * DAT_INSUFFICIENT_RESOURCES, DAT_MODEL_NOT_SUPPORTED. */
extern DAT_RETURN dat_srq_create(IN DAT_IA_HANDLE ia_handle, IN DAT_PZ_HANDLE pz_handle,
                                 IN DAT_SRQ_ATTR* srq_attr, OUT DAT_SRQ_HANDLE* srq_handle);

/* Destroys an SRQ no EP uses any more; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_STATE.
 */
extern DAT_RETURN dat_srq_free(IN DAT_SRQ_HANDLE srq_handle);

/* Posts a receive buffer to an SRQ; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER,
 * DAT_INSUFFICIENT_RESOURCES, DAT_PROTECTION_VIOLATION, DAT_PRIVILEGES_VIOLATION. */
extern DAT_RETURN dat_srq_post_recv(IN DAT_SRQ_HANDLE srq_handle, IN DAT_COUNT num_segments,
                                    IN DAT_LMR_TRIPLET* local_iov, IN DAT_DTO_COOKIE user_cookie);

/* Reports SRQ parameters; any thread; errors: DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER. */
extern DAT_RETURN dat_srq_query(IN DAT_SRQ_HANDLE srq_handle, IN DAT_SRQ_PARAM_MASK srq_param_mask,
                                OUT DAT_SRQ_PARAM* srq_param);

/* Changes the number of receives an SRQ can hold; any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_PARAMETER, DAT_INVALID_STATE, DAT_INSUFFICIENT_RESOURCES. */
extern DAT_RETURN dat_srq_resize(IN DAT_SRQ_HANDLE srq_handle, IN DAT_COUNT srq_max_recv_dto);

/* Arms the SRQ low-watermark asynchronous event; any thread; errors: DAT_INVALID_HANDLE,
 * DAT_INVALID_PARAMETER, DAT_MODEL_NOT_SUPPORTED. */
extern DAT_RETURN dat_srq_set_lw(IN DAT_SRQ_HANDLE srq_handle, IN DAT_COUNT low_watermark);

/* Registry and error strings */

/* Lists up to max_to_return IAs dat_ia_open() accepts (the caller supplies the entries); any
 * thread; errors: DAT_INVALID_PARAMETER. */
extern DAT_RETURN dat_registry_list_providers(IN DAT_COUNT max_to_return,
                                              OUT DAT_COUNT* entries_returned,
                                              OUT DAT_PROVIDER_INFO*(dat_provider_list[]));

/* Gives static strings naming a return's type and subtype; any thread; errors:
 * DAT_INVALID_PARAMETER (unknown code). */
extern DAT_RETURN dat_strerror(IN DAT_RETURN return_value, OUT const char** major_message,
                               OUT const char** minor_message);

#ifdef __cplusplus
}
#endif

#endif /* DPDAT_DAT_UDAT_H defined */
#endif /* DPDAT_DAT_DAT_H */
