/* rsmapi.h: a Solaris-style RSMAPI (remote shared memory) over dpdat.
 *
 * A node exports a page-aligned region of its memory as a segment, publishes
 * it under a segment ID with an access control list (ACL) of (node,
 * permission) pairs, and other nodes import it and read or write it.  Under
 * dpdat an import is a reliable connection to the exporting controller;
 * get/put are RDMA READ/WRITE into the exporter's registered memory, checked
 * by the exporter's transport against the permission granted at connect
 * time.  Link with -lrsm (librsm.so.1, which uses libdat.so.1).
 *
 * Numeric values: the RSMERR_* codes, the permission bits, the flag values
 * and the segment ID ranges have the values of Solaris' RSMAPI (illumos
 * usr/src/uts/common/sys/rsm/rsm_common.h and rsmapi_common.h, read for the
 * numbers only; these declarations are written for dpdat).  The publish /
 * republish / unpublish behaviour follows the Solaris "Programming Interfaces
 * Guide" text in ../shared/spec/rsm_memseg_export_publish.txt.
 *
 * Threads: every call may be made from any thread.  Calls on one import
 * handle are serialised inside the library.  No call busy-waits: waits block
 * in the kernel (poll on an eventfd) or in dat_evd_wait.
 *
 * Where dpdat differs from Solaris, the comment at the call says so. */
#ifndef DPDAT_RSM_RSMAPI_H
#define DPDAT_RSM_RSMAPI_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ return values */
#define RSM_SUCCESS 0
#define RSMERR_BAD_LIBRARY_VERSION 1
#define RSMERR_BAD_TOPOLOGY_PTR 2
#define RSMERR_BAD_CTLR_HNDL 3
#define RSMERR_CTLR_NOT_PRESENT 4
#define RSMERR_BAD_SEG_HNDL 5
#define RSMERR_SEG_ALREADY_PUBLISHED 6
#define RSMERR_SEG_NOT_PUBLISHED 7
#define RSMERR_SEG_NOT_PUBLISHED_TO_NODE 8
#define RSMERR_SEG_ALREADY_MAPPED 9
#define RSMERR_SEG_STILL_MAPPED 10
#define RSMERR_SEG_NOT_MAPPED 11
#define RSMERR_NOT_CREATOR 12
#define RSMERR_BAD_BARRIER_PTR 13
#define RSMERR_BAD_SGIO 14
#define RSMERR_BAD_LOCALMEM_HNDL 15
#define RSMERR_BAD_ADDR 16
#define RSMERR_BAD_MEM_ALIGNMENT 17
#define RSMERR_BAD_OFFSET 18
#define RSMERR_MISALIGNED_OFFSET 19
#define RSMERR_BAD_LENGTH 20
#define RSMERR_BAD_ACL 21
#define RSMERR_BAD_SEGID 22
#define RSMERR_RESERVED_SEGID 23
#define RSMERR_SEGID_IN_USE 24
#define RSMERR_BAD_MODE 25
#define RSMERR_BAD_PERMS 26
#define RSMERR_PERM_DENIED 27
#define RSMERR_LOCKS_NOT_SUPPORTED 28
#define RSMERR_LOCKS_NOT_ENABLED 29
#define RSMERR_REBIND_NOT_ALLOWED 30
#define RSMERR_INSUFFICIENT_RESOURCES 31
#define RSMERR_INSUFFICIENT_MEM 32
#define RSMERR_MAP_FAILED 33
#define RSMERR_POLLFD_IN_USE 34
#define RSMERR_BARRIER_UNINITIALIZED 35
#define RSMERR_BARRIER_OPEN_FAILED 36
#define RSMERR_BARRIER_NOT_OPENED 37
#define RSMERR_BARRIER_FAILURE 38
#define RSMERR_REMOTE_NODE_UNREACHABLE 39
#define RSMERR_CONN_ABORTED 40
#define RSMERR_INTERRUPTED 41
#define RSMERR_TIMEOUT 42
#define RSMERR_BAD_APPID 43
#define RSMERR_BAD_CONF 44
#define RSMERR_SEG_NOT_CONNECTED 45
/* The spec text lists "RSMERR_INSUFFICIENT_MEMF" for republish: a misprint of
 * RSMERR_INSUFFICIENT_MEM (no such code exists in Solaris).  Republish returns
 * RSMERR_INSUFFICIENT_MEM; the misspelt name is accepted as the same value. */
#define RSMERR_INSUFFICIENT_MEMF RSMERR_INSUFFICIENT_MEM

/* ---------------------------------------------------------- segment IDs
 * IDs a publisher may name.  RSM_DRIVER_PRIVATE (and 0 as "generate one") are
 * not nameable: an ID in the driver-private range is refused with
 * RSMERR_RESERVED_SEGID, as is an ID in the RSM_USER_APP range, which the
 * spec reserves for IDs the library generates when the caller passes 0.  An
 * ID outside every listed range (0x500000..0x7FFFFFFF) is refused with
 * RSMERR_BAD_SEGID.  The spec text prints RSM_USER_APP_ID_END as 0xFFFFFFF,
 * which is below RSM_USER_APP_ID_BASE and would make the range empty; Solaris
 * defines it as 0xFFFFFFFF, and so does dpdat. */
#define RSM_DRIVER_PRIVATE_ID_BASE 0
#define RSM_DRIVER_PRIVATE_ID_END 0x0FFFFF
#define RSM_CLUSTER_TRANSPORT_ID_BASE 0x100000
#define RSM_CLUSTER_TRANSPORT_ID_END 0x1FFFFF
#define RSM_RSMLIB_ID_BASE 0x200000
#define RSM_RSMLIB_ID_END 0x2FFFFF
#define RSM_DLPI_ID_BASE 0x300000
#define RSM_DLPI_ID_END 0x3FFFFF
#define RSM_HPC_ID_BASE 0x400000
#define RSM_HPC_ID_END 0x4FFFFF
#define RSM_USER_APP_ID_BASE 0x80000000u
#define RSM_USER_APP_ID_END 0xFFFFFFFFu

/* ---------------------------------------------------------- permissions
 * An ACL entry's permission is three octal digits, owner / group / other,
 * each 0 (nothing: such an importer is refused with RSMERR_PERM_DENIED, even
 * for an import asking no access), 2 (write), 4 (read) or 6 (read and
 * write); so RSM_PERM_READ (0400) lets only the exporter's own user read.  An importer counts as
 * the owner when its process runs under the exporter's uid, else as group when it runs under the
 * exporter's gid, else as other (the uid/gid are the ones the importing library reports; the node
 * ID is never taken from the importer). Requested import permissions use the owner-digit bits
 * below. */
#define RSM_PERM_NONE 0
#define RSM_PERM_READ 0400
#define RSM_PERM_WRITE 0200
#define RSM_PERM_RDWR (RSM_PERM_READ | RSM_PERM_WRITE)

/* rsm_memseg_export_create flags */
#define RSM_ALLOW_REBIND 0x01
#define RSM_CREATE_SEG_DONTWAIT 0x02

/* rsm_scat_gath_t.flags and rsm_intr_signal_post flags */
#define RSM_IMPLICIT_SIGPOST 0x01
#define RSM_SIGPOST_NO_ACCUMULATE 0x02

/* rsm_iovec_t.io_type */
#define RSM_HANDLE_TYPE 0x01
#define RSM_VA_TYPE 0x02

/* Most I/O requests in one rsm_scat_gath_t. */
#define RSM_MAX_SGIOREQS 16

/* rsm_remote_cntlr_t.connection_state */
#define RSM_CONNECTION_ACTIVE 3

/* Length of controller names in the topology (Solaris uses MAXNAMELEN). */
#define RSM_MAXNAMELEN 256

/* ---------------------------------------------------------------- types */
typedef uint64_t rsm_addr_t;
typedef uint32_t rsm_node_id_t;
typedef uint32_t rsm_memseg_id_t;
typedef uint32_t rsm_permission_t;

typedef enum { RSM_DAS8 = 1, RSM_DAS16 = 2, RSM_DAS32 = 4, RSM_DAS64 = 8 } rsm_access_size_t;

typedef enum {
  RSM_BARRIER_SEGMENT = 0x01,
  RSM_BARRIER_NODE = 0x02,
  RSM_BARRIER_SEGMENT_THREAD = 0x11,
  RSM_BARRIER_NODE_THREAD = 0x12
} rsm_barrier_type_t;

typedef enum { RSM_BARRIER_MODE_EXPLICIT, RSM_BARRIER_MODE_IMPLICIT } rsm_barrier_mode_t;

typedef enum { RSM_MAP_NONE = 0x0, RSM_MAP_FIXED = 0x1, RSM_MAP_RESERVED = 0x2 } rsm_attribute_t;

typedef struct rsmapi_controller* rsmapi_controller_handle_t;
typedef struct rsm_export_seg* rsm_memseg_export_handle_t;
typedef struct rsm_import_seg* rsm_memseg_import_handle_t;
typedef struct rsm_localmemory* rsm_localmemory_handle_t;

typedef struct {
  unsigned int attr_direct_access_sizes;  /* RSM_DAS* bits get/put support */
  unsigned int attr_atomic_sizes;         /* 0: no atomic access */
  size_t attr_page_size;                  /* export alignment unit */
  size_t attr_max_export_segment_size;    /* largest one segment */
  size_t attr_tot_export_segment_size;    /* all segments of this controller */
  unsigned long attr_max_export_segments; /* published at once */
  size_t attr_max_import_map_size;        /* largest mapping (0: no mappings) */
  size_t attr_tot_import_map_size;        /* SIZE_MAX: no cap but the address space */
  unsigned long attr_max_import_segments; /* imports at once */
} rsmapi_controller_attr_t;

/* Field name as in the spec text (Solaris spells it ae_permission). */
typedef struct {
  rsm_node_id_t ae_node;           /* remote node allowed to import */
  rsm_permission_t ae_permissions; /* octal owner/group/other, digits 0, 2, 4 or 6 */
} rsmapi_access_entry_t;

typedef struct {
  void* seg;
  uint16_t gnum;
  void* privdata;
} rsmapi_barrier_t;

typedef struct {
  int io_type; /* RSM_HANDLE_TYPE or RSM_VA_TYPE */
  union {
    rsm_localmemory_handle_t handle;
    char* vaddr;
  } local;
  size_t local_offset;
  size_t remote_offset;
  size_t transfer_length;
} rsm_iovec_t;

typedef struct {
  rsm_node_id_t local_nodeid;
  unsigned long io_request_count;  /* 1..RSM_MAX_SGIOREQS */
  unsigned long io_residual_count; /* out: requests not done */
  unsigned int flags;              /* RSM_IMPLICIT_SIGPOST, RSM_SIGPOST_NO_ACCUMULATE */
  rsm_memseg_import_handle_t remote_handle;
  rsm_iovec_t* iovec;
} rsm_scat_gath_t;

/* Topology: one block, freed with rsm_free_interconnect_topology. */
typedef struct {
  rsm_node_id_t local_nodeid;
  unsigned int local_cntlr_count;
} rsm_topology_hdr_t;

typedef struct {
  char cntlr_name[RSM_MAXNAMELEN]; /* the IA name */
  rsm_addr_t local_hwaddr;         /* IPv4 address, host byte order */
  int remote_cntlr_count;
} rsm_connections_hdr_t;

typedef struct {
  rsm_node_id_t remote_nodeid;
  char remote_cntlrname[RSM_MAXNAMELEN];
  rsm_addr_t remote_hwaddr; /* IPv4 address, host byte order */
  unsigned int connection_state;
} rsm_remote_cntlr_t;

typedef struct {
  rsm_connections_hdr_t hdr;
  rsm_remote_cntlr_t remote_cntlr[1]; /* remote_cntlr_count entries */
} rsm_connections_t;

typedef struct {
  rsm_topology_hdr_t topology_hdr;
  rsm_connections_t* connections[1]; /* local_cntlr_count entries */
} rsm_topology_t;

/* ---------------------------------------------------------- controllers
 * rsm_get_controller: the name is a dpdat IA name, resolved like
 * dat_ia_open's (DPDAT_IA_<NAME>, the DPDAT_CONF file, the built-ins dpdat0 /
 * dpdat1 = the in-process net_ring pair).  Getting the same name again
 * returns the same controller with one more reference.  The controller's
 * node ID is the interface's node= setting, else the low 16 bits of its IPv4
 * address.  Errors: RSMERR_BAD_ADDR (NULL), RSMERR_CTLR_NOT_PRESENT (unknown
 * name or the interface cannot start), RSMERR_INSUFFICIENT_RESOURCES.
 * Environment: DPDAT_RSM_MAX_EXPORT caps published segments per controller
 * (default 1024). */
int rsm_get_controller(char* name, rsmapi_controller_handle_t* controller);
int rsm_get_controller_attr(rsmapi_controller_handle_t controller, rsmapi_controller_attr_t* attr);
/* Drops a reference.  The interface closes when the last reference and the
 * last segment made through the controller are gone. */
int rsm_release_controller(rsmapi_controller_handle_t controller);
/* Nodes known to every controller this process holds: every interface of the
 * IA registry with another address is listed as a remote controller. */
int rsm_get_interconnect_topology(rsm_topology_t** topology);
void rsm_free_interconnect_topology(rsm_topology_t* topology);

/* ---------------------------------------------------------- export side
 * rsm_memseg_export_create: vaddr and size must be multiples of the page size
 * (RSMERR_BAD_MEM_ALIGNMENT / RSMERR_BAD_LENGTH; RSMERR_BAD_ADDR for NULL or
 * memory of an import mapping).
 * Flags other than RSM_ALLOW_REBIND | RSM_CREATE_SEG_DONTWAIT: RSMERR_BAD_MODE.
 * dpdat never waits for resources, so DONTWAIT changes nothing. */
int rsm_memseg_export_create(rsmapi_controller_handle_t controller,
                             rsm_memseg_export_handle_t* memseg, void* vaddr, size_t size,
                             unsigned int flags);
/* Unpublishes first if published.  RSMERR_POLLFD_IN_USE while a pollfd is held. */
int rsm_memseg_export_destroy(rsm_memseg_export_handle_t memseg);
/* Replaces the whole backing memory (off must be 0 and size the segment's
 * size: dpdat registers a segment as one region).  Differs from Solaris:
 * refused with RSMERR_REBIND_NOT_ALLOWED while importers are connected,
 * because their remote keys name the old registration. */
int rsm_memseg_export_rebind(rsm_memseg_export_handle_t memseg, void* vaddr, off_t off,
                             size_t size);
/* Publish / republish / unpublish: the error codes are those of the spec
 * text, each returned in the situation it names:
 *   RSMERR_BAD_SEG_HNDL      not a live export handle
 *   RSMERR_NOT_CREATOR       called from a process other than the creator's
 *   RSMERR_SEG_ALREADY_PUBLISHED / RSMERR_SEG_NOT_PUBLISHED
 *   RSMERR_BAD_ADDR          segment_id is NULL
 *   RSMERR_BAD_ACL           NULL list with a length, an odd digit (1/3/5/7), bits
 *                            above 0777, or a node listed twice
 *   RSMERR_RESERVED_SEGID / RSMERR_BAD_SEGID / RSMERR_SEGID_IN_USE (see above)
 *   RSMERR_INSUFFICIENT_MEM  the ACL copy could not be allocated
 *   RSMERR_INSUFFICIENT_RESOURCES  the controller's published-segment limit,
 *                            an ACL longer than 1048576 entries, no free
 *                            generated ID, or the interface refused the
 *                            segment's registration
 *   RSMERR_INTERRUPTED       a signal arrived while unpublish/republish waited
 * republish changes the ACL for later connects only.  unpublish disconnects
 * every importer (their later accesses fail with RSMERR_CONN_ABORTED) and
 * waits until each disconnect is acknowledged or timed out; when interrupted
 * the segment is already unpublished and the disconnects finish on their own. */
int rsm_memseg_export_publish(rsm_memseg_export_handle_t memseg, rsm_memseg_id_t* segment_id,
                              rsmapi_access_entry_t access_list[], unsigned int access_list_length);
int rsm_memseg_export_republish(rsm_memseg_export_handle_t memseg,
                                rsmapi_access_entry_t access_list[],
                                unsigned int access_list_length);
int rsm_memseg_export_unpublish(rsm_memseg_export_handle_t memseg);

/* ---------------------------------------------------------- import side
 * rsm_memseg_import_connect: checked by the exporter against the ACL in force
 * when the request arrives.  Errors: RSMERR_BAD_CTLR_HNDL, RSMERR_BAD_ADDR,
 * RSMERR_PERM_DENIED (perm has bits beyond RSM_PERM_RDWR, or asks for more
 * than the ACL grants this node), RSMERR_SEG_NOT_PUBLISHED,
 * RSMERR_SEG_NOT_PUBLISHED_TO_NODE, RSMERR_REMOTE_NODE_UNREACHABLE,
 * RSMERR_INSUFFICIENT_RESOURCES. */
int rsm_memseg_import_connect(rsmapi_controller_handle_t controller, rsm_node_id_t node_id,
                              rsm_memseg_id_t segment_id, rsm_permission_t perm,
                              rsm_memseg_import_handle_t* im_memseg);
int rsm_memseg_import_disconnect(rsm_memseg_import_handle_t im_memseg);

/* get/put: offset and length in bytes (the 8..64 variants move rep_cnt
 * elements).  Errors: RSMERR_BAD_SEG_HNDL, RSMERR_BAD_ADDR (NULL buffer),
 * RSMERR_BAD_MEM_ALIGNMENT (buffer or offset not aligned to the element),
 * RSMERR_BAD_OFFSET (offset outside the segment), RSMERR_BAD_LENGTH (the
 * access runs past the end), RSMERR_PERM_DENIED (not granted at connect),
 * RSMERR_CONN_ABORTED (the segment was unpublished or the connection broke).
 * In RSM_BARRIER_MODE_IMPLICIT (the default) each access has completed (the
 * exporter acknowledged it) when the call returns.  In
 * RSM_BARRIER_MODE_EXPLICIT, put and put8..put64 of up to 1 MiB return once the
 * data is staged and posted (up to 64 in flight); a barrier's order/close, a
 * get, a getv/putv, a signal post and disconnect wait for them first, and a put
 * that fails in flight makes the barrier report RSMERR_BARRIER_FAILURE (later
 * accesses return RSMERR_CONN_ABORTED).  getv/putv are always synchronous. */
int rsm_memseg_import_get8(rsm_memseg_import_handle_t im_memseg, off_t offset, uint8_t* datap,
                           unsigned long rep_cnt);
int rsm_memseg_import_get16(rsm_memseg_import_handle_t im_memseg, off_t offset, uint16_t* datap,
                            unsigned long rep_cnt);
int rsm_memseg_import_get32(rsm_memseg_import_handle_t im_memseg, off_t offset, uint32_t* datap,
                            unsigned long rep_cnt);
int rsm_memseg_import_get64(rsm_memseg_import_handle_t im_memseg, off_t offset, uint64_t* datap,
                            unsigned long rep_cnt);
int rsm_memseg_import_get(rsm_memseg_import_handle_t im_memseg, off_t offset, void* dst_addr,
                          size_t length);
int rsm_memseg_import_getv(rsm_scat_gath_t* sg);
int rsm_memseg_import_put8(rsm_memseg_import_handle_t im_memseg, off_t offset, uint8_t* datap,
                           unsigned long rep_cnt);
int rsm_memseg_import_put16(rsm_memseg_import_handle_t im_memseg, off_t offset, uint16_t* datap,
                            unsigned long rep_cnt);
int rsm_memseg_import_put32(rsm_memseg_import_handle_t im_memseg, off_t offset, uint32_t* datap,
                            unsigned long rep_cnt);
int rsm_memseg_import_put64(rsm_memseg_import_handle_t im_memseg, off_t offset, uint64_t* datap,
                            unsigned long rep_cnt);
int rsm_memseg_import_put(rsm_memseg_import_handle_t im_memseg, off_t offset, void* src_addr,
                          size_t length);
int rsm_memseg_import_putv(rsm_scat_gath_t* sg);

/* Load/store mappings.  dpdat has no remote load/store hardware: a mapping
 * is local memory of the importer whose pages are copies of the segment's,
 * kept coherent at barriers (userfaultfd; see rsm/import_map.cpp):
 *   - a page is fetched (RDMA READ, with following untouched pages: 16 pages
 *     in all, doubling up to 64 while faults continue the last fetch) on its
 *     first load or store, and again after a barrier dropped it;
 *   - stores are tracked per page; a dirty page is written back (RDMA WRITE
 *     of the byte ranges that differ from the page as fetched: runs of
 *     changed aligned 8-byte words trimmed to the first and last changed
 *     byte; a page with more than 16 such runs as one span from its first to
 *     its last changed byte) by rsm_memseg_import_close_barrier,
 *     rsm_memseg_import_order_barrier (barriers covering the import) and
 *     rsm_memseg_import_unmap;
 *   - rsm_memseg_import_init_barrier and rsm_memseg_import_open_barrier drop
 *     the clean pages of the mappings they cover (dirty pages stay).
 * What is coherent when: a store is in the exporter's memory when a closing
 * (or order) barrier covering it returns RSM_SUCCESS, or unmap returns
 * RSM_SUCCESS; a load sees the exporter's data as of the last init/open
 * barrier covering the mapping or, for a page not loaded since, as of its
 * first touch after that.  Without barriers, stores reach the exporter at
 * unmap only.  get/put on the import and loads/stores through its mapping
 * are two paths to the exporter, ordered only by barriers: a put into a
 * range the mapping holds is seen by the mapping after the next open
 * barrier, and a dirty page written back at a barrier overwrites the bytes
 * it changed.  Importers storing concurrently into the same segment must keep
 * to disjoint ranges that share no aligned 8-byte word (and no page with more
 * than 16 changed runs); the exporter's own stores to a page an importer
 * dirtied survive outside the ranges written back.
 * rsm_memseg_import_map: perm RSM_PERM_READ, RSM_PERM_WRITE or RSM_PERM_RDWR
 * (else RSMERR_BAD_PERMS), within the import's grant, which must include read
 * since pages are fetched (else RSMERR_PERM_DENIED); a store into a mapping
 * without RSM_PERM_WRITE raises SIGSEGV.  offset page-aligned and inside the
 * segment (RSMERR_BAD_OFFSET), length > 0 and within the segment
 * (RSMERR_BAD_LENGTH; rounded up to whole pages).  attr: RSM_MAP_NONE (the
 * library chooses the address), RSM_MAP_FIXED (at *address, page-aligned
 * (RSMERR_BAD_MEM_ALIGNMENT), NULL RSMERR_BAD_ADDR; replaces what is mapped
 * there, as mmap's MAP_FIXED), RSM_MAP_RESERVED (as RSM_MAP_FIXED, over a
 * range the caller reserved; unmap leaves it reserved (PROT_NONE) instead of
 * unmapped); anything else RSMERR_BAD_MODE.  One mapping per import:
 * RSMERR_SEG_ALREADY_MAPPED.  The mapping uses a second connection to the
 * exporter, judged against the ACL in force at map time (its refusals are
 * those of rsm_memseg_import_connect).  RSMERR_CONN_ABORTED when the
 * connection is gone, RSMERR_MAP_FAILED when userfaultfd is unavailable
 * (attr_max_import_map_size is then 0) or the address range cannot be
 * mapped.
 * When the segment is unpublished or the exporter is lost, the next access
 * that needs the network (a fetch) replaces the whole mapping so that it and
 * every later access raise SIGBUS (as a truncated mapped file); barriers
 * covering it return RSMERR_BARRIER_FAILURE; unmapping it returns
 * RSMERR_CONN_ABORTED (the mapping is gone all the same).
 * rsm_memseg_import_unmap writes back and unmaps: RSMERR_SEG_NOT_MAPPED when
 * not mapped, RSMERR_CONN_ABORTED when the write-back failed.
 * rsm_memseg_import_disconnect of a mapped import: RSMERR_SEG_STILL_MAPPED.
 * A mapping's memory cannot be exported or made a local memory handle
 * (RSMERR_BAD_ADDR): the transport never touches it.  A writable mapping
 * keeps a copy of each page it dirtied, so it may use twice its size.  A
 * forked child's copy of a mapping is plain memory, not kept coherent.
 * Threads: any thread may load and store; faults are served by a thread of
 * the mapping, so a get/put whose buffer lies in a mapping works, and a store
 * made while a barrier writes back waits for it (then dirties the page for
 * the next barrier). */
int rsm_memseg_import_map(rsm_memseg_import_handle_t im_memseg, void** address,
                          rsm_attribute_t attr, rsm_permission_t perm, off_t offset, size_t length);
int rsm_memseg_import_unmap(rsm_memseg_import_handle_t im_memseg);

/* Barriers: a barrier of type RSM_BARRIER_SEGMENT covers accesses to its
 * segment, RSM_BARRIER_NODE accesses to every segment imported from the same
 * node through the same controller.  close_barrier waits for the puts in
 * flight it covers and writes back the dirty pages of the mappings it covers,
 * then returns RSMERR_BARRIER_FAILURE when any access made since open_barrier
 * failed, a write-back failed or the connection was lost, else 0 (every
 * access reached the exporter).  order_barrier does the same without closing.
 * init_barrier and open_barrier drop the clean pages of the mappings they
 * cover (see the mappings above). */
int rsm_memseg_import_init_barrier(rsm_memseg_import_handle_t im_memseg, rsm_barrier_type_t type,
                                   rsmapi_barrier_t* barrier);
int rsm_memseg_import_open_barrier(rsmapi_barrier_t* barrier);
int rsm_memseg_import_close_barrier(rsmapi_barrier_t* barrier);
int rsm_memseg_import_order_barrier(rsmapi_barrier_t* barrier);
int rsm_memseg_import_destroy_barrier(rsmapi_barrier_t* barrier);
int rsm_memseg_import_get_mode(rsm_memseg_import_handle_t im_memseg, rsm_barrier_mode_t* mode);
int rsm_memseg_import_set_mode(rsm_memseg_import_handle_t im_memseg, rsm_barrier_mode_t mode);

/* Signals: memseg is an import handle (signals the exporter's segment) or an
 * export handle (signals every importer connected to it; an importer that
 * disconnects meanwhile misses it, which is not an error).  Posts accumulate
 * (each is consumed by one wait) unless RSM_SIGPOST_NO_ACCUMULATE, which
 * leaves at most one pending.  rsm_intr_signal_wait: timeout in ms, -1 waits
 * for ever; RSMERR_TIMEOUT, RSMERR_INTERRUPTED (a signal handler ran).
 * rsm_memseg_get_pollfd fills a pollfd (events POLLIN | POLLRDNORM) whose fd
 * becomes readable (POLLIN) while a signal is pending; rsm_intr_signal_wait_pollfd polls such fds
 * (and any others), consumes one signal for each ready RSM fd, and returns the number of ready fds
 * in *numfdsp. */
int rsm_intr_signal_post(void* memseg, unsigned int flags);
int rsm_intr_signal_wait(void* memseg, int timeout);
int rsm_memseg_get_pollfd(void* memseg, struct pollfd* fd);
int rsm_memseg_release_pollfd(void* memseg);
int rsm_intr_signal_wait_pollfd(struct pollfd fds[], nfds_t nfds, int timeout, int* numfdsp);

/* Registered local memory for getv/putv (RSM_HANDLE_TYPE): moved without a copy. */
int rsm_create_localmemory_handle(rsmapi_controller_handle_t controller,
                                  rsm_localmemory_handle_t* handle, char* vaddr, size_t length);
int rsm_free_localmemory_handle(rsmapi_controller_handle_t controller,
                                rsm_localmemory_handle_t handle);

#ifdef __cplusplus
}
#endif

#endif /* DPDAT_RSM_RSMAPI_H */
