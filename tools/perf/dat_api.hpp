#pragma once
// The DAT API dpdat-perf is compiled against.  The same sources build two
// programs: dpdat-perf over dpdat's uDAPL 1.2 library (libdat), and
// dpdat-perf-dat2 over OFED's DAT 2.0 registry (libdat2, which loads dpdat's
// plug-in libdaplodpdk.so.2 through dat.conf) for what only DAT 2.0 offers:
// the IB extensions' atomics.  The two cannot share a process (each carries
// its own engine and DPDK EAL).  The few places the two APIs differ are
// spelled here.

#include <netinet/in.h>  // the DAT headers name sockaddr_in6

#ifdef DPDAT_PERF_DAT2
#include <dat2/udat.h>
// (order matters)
#include <dat2/dat_ib_extensions.h>
#else
#include <dat/udat.h>
#endif

#include <cstdint>

namespace dpdat::perf {

#ifdef DPDAT_PERF_DAT2
inline constexpr bool kDat2 = true;
inline constexpr const char* kApiName = "DAT 2.0 (libdat2, IB extensions)";
inline DAT_VADDR& rmr_address(DAT_RMR_TRIPLET& t) { return t.virtual_address; }
inline DAT_VADDR rmr_address(const DAT_RMR_TRIPLET& t) { return t.virtual_address; }
// DAT 2.0 segments are 32 bits long.
inline DAT_SEG_LENGTH seg_length(uint64_t n) { return static_cast<DAT_SEG_LENGTH>(n); }
inline constexpr DAT_MEM_PRIV_FLAGS kRegionPrivileges =
    static_cast<DAT_MEM_PRIV_FLAGS>(static_cast<uint32_t>(DAT_MEM_PRIV_ALL_FLAG) |
                                    static_cast<uint32_t>(DAT_IB_MEM_PRIV_REMOTE_ATOMIC));
#else
inline constexpr bool kDat2 = false;
inline constexpr const char* kApiName = "uDAPL 1.2 (libdat)";
inline DAT_VADDR& rmr_address(DAT_RMR_TRIPLET& t) { return t.target_address; }
inline DAT_VADDR rmr_address(const DAT_RMR_TRIPLET& t) { return t.target_address; }
inline DAT_VLEN seg_length(uint64_t n) { return n; }
inline constexpr DAT_MEM_PRIV_FLAGS kRegionPrivileges = DAT_MEM_PRIV_ALL_FLAG;
#endif

}  // namespace dpdat::perf
