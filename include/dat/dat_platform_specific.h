/*
 * dat/dat_platform_specific.h -- dpdat uDAPL (DAT 1.2) public API.
 *
 * Basic scalar types of the DAT API for the platforms dpdat builds on
 * (Linux and other POSIX systems with 64-bit capable compilers).
 * Everything else in <dat/...> is built from these names.
 */
#ifndef DPDAT_DAT_PLATFORM_SPECIFIC_H
#define DPDAT_DAT_PLATFORM_SPECIFIC_H

#include <netinet/in.h> /* struct sockaddr_in6 */
#include <stddef.h>
#include <stdint.h>     /* uint32_t, uint64_t and UINT64_C() for the 64-bit masks */
#include <sys/socket.h> /* struct sockaddr */
#include <sys/types.h>

/* Buffers aligned to this many bytes give the best transfer rate. */
#ifndef DAT_OPTIMAL_ALIGNMENT
#define DAT_OPTIMAL_ALIGNMENT 256
#endif

typedef uint32_t DAT_UINT32;              /* host byte order */
typedef uint64_t DAT_UINT64;              /* host byte order */
typedef unsigned long long DAT_UVERYLONG; /* widest native unsigned integer */
typedef void* DAT_PVOID;
typedef int DAT_COUNT;
typedef DAT_UINT64 DAT_PADDR;

/* Addresses are ordinary socket addresses (IPv4 for the RoCEv2 transport). */
typedef struct sockaddr DAT_SOCK_ADDR;
typedef struct sockaddr_in6 DAT_SOCK_ADDR6;
#define DAT_AF_INET AF_INET
#define DAT_AF_INET6 AF_INET6

/*
 * DAT_PLATFORM_CAST / DAT_PLATFORM_PTR_CAST: the casts the public macros
 * need, spelled so that C++ consumers built with -Wold-style-cast stay quiet.
 */
#ifdef __cplusplus
#define DAT_PLATFORM_CAST(type, value) (static_cast<type>(value))
#define DAT_PLATFORM_PTR_CAST(type, value) (reinterpret_cast<type>(value))
#else
#define DAT_PLATFORM_CAST(type, value) ((type)(value))
#define DAT_PLATFORM_PTR_CAST(type, value) ((type)(value))
#endif

/* Handle <-> integer helpers kept for programs written against other DAT libraries. */
#define DAT_IA_HANDLE_TO_UL(a) DAT_PLATFORM_PTR_CAST(unsigned long, a)
#define DAT_UL_TO_IA_HANDLE(a) DAT_PLATFORM_PTR_CAST(DAT_IA_HANDLE, a)

/* Calling-convention and export decorations: empty on POSIX systems. */
#define DAT_API
#define DAT_EXPORT extern

/*
 * The specification writes parameter directions as IN / OUT / INOUT; many
 * DAT programs (dtest, dapltest) use them in their own code, so they exist.
 */
#ifndef IN
#define IN
#endif
#ifndef OUT
#define OUT
#endif
#ifndef INOUT
#define INOUT
#endif

#endif /* DPDAT_DAT_PLATFORM_SPECIFIC_H */
