/*
 * dat/dat_error.h -- dpdat uDAPL (DAT 1.2) public API: return codes.
 *
 * How a DAT_RETURN is built
 * -------------------------
 * Every DAT call returns a 32-bit DAT_RETURN made of three fields:
 *
 *    bits 31..30  class     DAT_CLASS_ERROR (0x80000000) or DAT_CLASS_WARNING
 *                           (0x40000000); both clear means success
 *    bits 29..16  type      the major code: DAT_INVALID_HANDLE, DAT_QUEUE_EMPTY...
 *                           (the DAT_RETURN_TYPE values below already sit in
 *                           these bits, e.g. DAT_INVALID_HANDLE = 0x00050000)
 *    bits 15..0   subtype   the detail: which handle, which argument, which state
 *                           (DAT_RETURN_SUBTYPE, a plain small number)
 *
 * The "high 16 bits" of a return are therefore class bits + major type, and
 * the low 16 bits the subtype. dpdat reports a failure as
 *     DAT_CLASS_ERROR | <type> | <subtype>
 * e.g. a stale EP handle in dat_ep_post_send() returns
 *     DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EP.
 * So never compare a failed return with a type directly; take it apart:
 *
 *     DAT_GET_TYPE(ret)    == DAT_INVALID_HANDLE     (class bits masked off)
 *     DAT_GET_SUBTYPE(ret) == DAT_INVALID_HANDLE_EP
 *
 * DAT_SUCCESS is 0 with no class bit, so "ret == DAT_SUCCESS" is the success
 * test. dat_strerror() turns any return into two readable strings.
 *
 * Where DAT 1.2 differs from DAT 2.0 (Debian's /usr/include/dat2):
 *  - DAT_NOT_IMPLEMENTED is 0x0FFF0000 in 1.2 (2.0: 0x3FFF0000). dpdat
 *    implements every 1.2 call and never returns it; it is here because the
 *    specification lists it.
 *  - 1.2 has no DAT_RESERVED_LMR, DAT_PORT_IN_USE, DAT_COMM_NOT_SUPPORTED or
 *    extension range.
 *  - The subtype list of 1.2 has no DAT_INVALID_HANDLE_CSP (after
 *    DAT_INVALID_HANDLE_SRQ) and no DAT_INVALID_STATE_SRQ_SHUTDOWN (after
 *    DAT_INVALID_STATE_SRQ_IN_USE), so every subtype from DAT_INVALID_HANDLE1
 *    on has a smaller number than in 2.0 (1.2: DAT_INVALID_HANDLE1 = 26).
 */
#ifndef DPDAT_DAT_ERROR_H
#define DPDAT_DAT_ERROR_H

#include <dat/dat_platform_specific.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Class bits (31..30). */
#define DAT_CLASS_ERROR 0x80000000
#define DAT_CLASS_WARNING 0x40000000
#define DAT_CLASS_SUCCESS 0x00000000

/* Field masks. */
#define DAT_TYPE_MASK 0x3fff0000    /* bits 29..16: DAT_RETURN_TYPE */
#define DAT_SUBTYPE_MASK 0x0000FFFF /* bits 15..0: DAT_RETURN_SUBTYPE */

#define DAT_IS_WARNING(status) (DAT_PLATFORM_CAST(DAT_UINT32, status) & DAT_CLASS_WARNING)
#define DAT_GET_TYPE(status) (DAT_PLATFORM_CAST(DAT_UINT32, status) & DAT_TYPE_MASK)
#define DAT_GET_SUBTYPE(status) (DAT_PLATFORM_CAST(DAT_UINT32, status) & DAT_SUBTYPE_MASK)

/* Major return types (already shifted into bits 29..16). */
typedef enum dat_return_type {
  DAT_SUCCESS = 0x00000000,
  DAT_ABORT = 0x00010000,                  /* IA closed or EVD freed under the call */
  DAT_CONN_QUAL_IN_USE = 0x00020000,       /* connection qualifier already bound */
  DAT_INSUFFICIENT_RESOURCES = 0x00030000, /* out of memory, queue entries, keys... */
  DAT_INTERNAL_ERROR = 0x00040000,         /* provider fault, not the consumer's */
  DAT_INVALID_HANDLE = 0x00050000,         /* wrong, freed or mistyped handle */
  DAT_INVALID_PARAMETER = 0x00060000,      /* subtype names the argument */
  DAT_INVALID_STATE = 0x00070000,          /* object in the wrong state for the call */
  DAT_LENGTH_ERROR = 0x00080000,           /* buffer too small for the data */
  DAT_MODEL_NOT_SUPPORTED = 0x00090000,    /* requested model not offered */
  DAT_PROVIDER_NOT_FOUND = 0x000A0000,     /* no IA of that name / version */
  DAT_PRIVILEGES_VIOLATION = 0x000B0000,   /* memory privileges forbid the access */
  DAT_PROTECTION_VIOLATION = 0x000C0000,   /* protection zone mismatch */
  DAT_QUEUE_EMPTY = 0x000D0000,            /* dat_evd_dequeue found nothing */
  DAT_QUEUE_FULL = 0x000E0000,             /* EVD or work queue full */
  DAT_TIMEOUT_EXPIRED = 0x000F0000,        /* a wait timed out (uDAPL only) */
  DAT_PROVIDER_ALREADY_REGISTERED = 0x00100000,
  DAT_PROVIDER_IN_USE = 0x00110000,
  DAT_INVALID_ADDRESS = 0x00120000,       /* remote address unusable or unreachable */
  DAT_INTERRUPTED_CALL = 0x00130000,      /* a wait was interrupted (signal, unwaitable) */
  DAT_CONN_QUAL_UNAVAILABLE = 0x00140000, /* dat_psp_create_any found no free qualifier */
  DAT_NOT_IMPLEMENTED = 0x0FFF0000        /* 1.2 value (2.0: 0x3FFF0000); never returned */
} DAT_RETURN_TYPE;

typedef DAT_UINT32 DAT_RETURN;

/* DAT 1.0 spelling, kept by the specification. */
#define DAT_NAME_NOT_FOUND DAT_PROVIDER_NOT_FOUND

/* Subtypes (bits 15..0): numbered consecutively from 0 in this order. */
typedef enum dat_return_subtype {
  DAT_NO_SUBTYPE,

  /* DAT_ABORT */
  DAT_SUB_INTERRUPTED,

  /* DAT_INSUFFICIENT_RESOURCES: which resource ran out */
  DAT_RESOURCE_MEMORY,
  DAT_RESOURCE_DEVICE,
  DAT_RESOURCE_TEP,  /* transport endpoint (queue pair) */
  DAT_RESOURCE_TEVD, /* transport event queue (completion queue) */
  DAT_RESOURCE_PROTECTION_DOMAIN,
  DAT_RESOURCE_MEMORY_REGION, /* memory-key table entries for LMR/RMR */
  DAT_RESOURCE_ERROR_HANDLER,
  DAT_RESOURCE_CREDITS, /* e.g. RDMA Read credits as responder */
  DAT_RESOURCE_SRQ,

  /* DAT_INVALID_HANDLE: which handle */
  DAT_INVALID_HANDLE_IA,
  DAT_INVALID_HANDLE_EP,
  DAT_INVALID_HANDLE_LMR,
  DAT_INVALID_HANDLE_RMR,
  DAT_INVALID_HANDLE_PZ,
  DAT_INVALID_HANDLE_PSP,
  DAT_INVALID_HANDLE_RSP,
  DAT_INVALID_HANDLE_CR,
  DAT_INVALID_HANDLE_CNO,
  DAT_INVALID_HANDLE_EVD_CR,
  DAT_INVALID_HANDLE_EVD_REQUEST,
  DAT_INVALID_HANDLE_EVD_RECV,
  DAT_INVALID_HANDLE_EVD_CONN,
  DAT_INVALID_HANDLE_EVD_ASYNC,
  DAT_INVALID_HANDLE_SRQ,
  /* (DAT 2.0 inserts DAT_INVALID_HANDLE_CSP here; 1.2 does not.) */
  DAT_INVALID_HANDLE1, /* the n-th handle argument of the call */
  DAT_INVALID_HANDLE2,
  DAT_INVALID_HANDLE3,
  DAT_INVALID_HANDLE4,
  DAT_INVALID_HANDLE5,
  DAT_INVALID_HANDLE6,
  DAT_INVALID_HANDLE7,
  DAT_INVALID_HANDLE8,
  DAT_INVALID_HANDLE9,
  DAT_INVALID_HANDLE10,

  /* DAT_INVALID_PARAMETER: which argument (1-based) */
  DAT_INVALID_ARG1,
  DAT_INVALID_ARG2,
  DAT_INVALID_ARG3,
  DAT_INVALID_ARG4,
  DAT_INVALID_ARG5,
  DAT_INVALID_ARG6,
  DAT_INVALID_ARG7,
  DAT_INVALID_ARG8,
  DAT_INVALID_ARG9,
  DAT_INVALID_ARG10,

  /* DAT_INVALID_STATE: endpoint states */
  DAT_INVALID_STATE_EP_UNCONNECTED,
  DAT_INVALID_STATE_EP_ACTCONNPENDING,
  DAT_INVALID_STATE_EP_PASSCONNPENDING,
  DAT_INVALID_STATE_EP_TENTCONNPENDING,
  DAT_INVALID_STATE_EP_CONNECTED,
  DAT_INVALID_STATE_EP_DISCONNECTED,
  DAT_INVALID_STATE_EP_RESERVED,
  DAT_INVALID_STATE_EP_COMPLPENDING,
  DAT_INVALID_STATE_EP_DISCPENDING,
  DAT_INVALID_STATE_EP_PROVIDERCONTROL,
  DAT_INVALID_STATE_EP_NOTREADY,
  DAT_INVALID_STATE_EP_RECV_WATERMARK,
  DAT_INVALID_STATE_EP_PZ,
  DAT_INVALID_STATE_EP_EVD_REQUEST,
  DAT_INVALID_STATE_EP_EVD_RECV,
  DAT_INVALID_STATE_EP_EVD_CONNECT,
  DAT_INVALID_STATE_EP_UNCONFIGURED,
  DAT_INVALID_STATE_EP_UNCONFRESERVED,
  DAT_INVALID_STATE_EP_UNCONFPASSIVE,
  DAT_INVALID_STATE_EP_UNCONFTENTATIVE,

  /* DAT_INVALID_STATE: CNO states */
  DAT_INVALID_STATE_CNO_IN_USE,
  DAT_INVALID_STATE_CNO_DEAD,

  /*
   * DAT_INVALID_STATE: EVD states. An EVD is independently enabled or
   * disabled, waitable or unwaitable, and configured for notify, solicited
   * or threshold (uDAPL) wake-ups.
   */
  DAT_INVALID_STATE_EVD_OPEN,
  DAT_INVALID_STATE_EVD_ENABLED,
  DAT_INVALID_STATE_EVD_DISABLED,
  DAT_INVALID_STATE_EVD_WAITABLE,
  DAT_INVALID_STATE_EVD_UNWAITABLE,
  DAT_INVALID_STATE_EVD_IN_USE, /* still feeding or fed by other objects */
  DAT_INVALID_STATE_EVD_CONFIG_NOTIFY,
  DAT_INVALID_STATE_EVD_CONFIG_SOLICITED,
  DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD,
  DAT_INVALID_STATE_EVD_WAITER, /* another thread is already waiting */
  DAT_INVALID_STATE_EVD_ASYNC,  /* an asynchronous-event EVD was required */

  /* DAT_INVALID_STATE: IA, LMR, PZ states */
  DAT_INVALID_STATE_IA_IN_USE,
  DAT_INVALID_STATE_LMR_IN_USE,
  DAT_INVALID_STATE_LMR_FREE,
  DAT_INVALID_STATE_PZ_IN_USE,
  DAT_INVALID_STATE_PZ_FREE,

  /* DAT_INVALID_STATE: SRQ states */
  DAT_INVALID_STATE_SRQ_OPERATIONAL,
  DAT_INVALID_STATE_SRQ_ERROR,
  DAT_INVALID_STATE_SRQ_IN_USE,
  /* (DAT 2.0 inserts DAT_INVALID_STATE_SRQ_SHUTDOWN here; 1.2 does not.) */

  /* DAT_PRIVILEGES_VIOLATION: which access lacked the privilege */
  DAT_PRIVILEGES_READ,
  DAT_PRIVILEGES_WRITE,
  DAT_PRIVILEGES_RDMA_READ,
  DAT_PRIVILEGES_RDMA_WRITE,

  /* DAT_PROTECTION_VIOLATION: which access crossed a protection zone */
  DAT_PROTECTION_READ,
  DAT_PROTECTION_WRITE,
  DAT_PROTECTION_RDMA_READ,
  DAT_PROTECTION_RDMA_WRITE,

  /* DAT_INVALID_ADDRESS */
  DAT_INVALID_ADDRESS_UNSUPPORTED, /* well formed but not usable (multicast, broadcast) */
  DAT_INVALID_ADDRESS_UNREACHABLE, /* known to have no route */
  DAT_INVALID_ADDRESS_MALFORMED,   /* never valid */

  /* DAT_PROVIDER_NOT_FOUND (1.1 errata) */
  DAT_NAME_NOT_REGISTERED,
  DAT_MAJOR_NOT_FOUND,
  DAT_MINOR_NOT_FOUND,
  DAT_THREAD_SAFETY_NOT_FOUND
} DAT_RETURN_SUBTYPE;

#ifdef __cplusplus
}
#endif

#endif /* DPDAT_DAT_ERROR_H */
