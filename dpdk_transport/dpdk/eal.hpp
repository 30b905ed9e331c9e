#pragma once
// EAL bootstrap from inside the library.  A consumer program (a DAT
// application) never calls DPDK itself: the first interface that needs DPDK
// calls eal_init(), later calls reuse the running EAL, and an EAL some other
// code already initialised in this process is detected and reused too.
// Never calls rte_exit(): failures return false with DPDK's reason.
//
// Arguments: DPDAT_EAL_ARGS (whitespace-separated, without argv[0]) when set,
// otherwise a default that needs nothing:
//   --no-pci --lcores 0@(0-N) --file-prefix dpdat<pid>
//   + --in-memory         when 2 MiB hugepages are reserved and mounted
//   + --no-huge --no-shconf -m 512   otherwise
// (--lcores maps lcore 0 onto every CPU, so the library never pins the
// consumer's thread.)

#include <cstdint>
#include <string>
#include <vector>

namespace dpdat::dpdk {

struct EalStatus {
  bool ok = false;
  bool hugepages = false;
  std::vector<std::string> args;  // as passed to rte_eal_init (after argv[0])
  std::string error;
};

// Idempotent and thread-safe.  Returns the status of the first call.
// `extra` (e.g. "--vdev=net_memif0,role=server") is appended to the
// arguments of the first call only; later calls reuse the running EAL.
const EalStatus& eal_init(const std::vector<std::string>& extra = {});

// Makes the virtual device `devargs` ("net_memif0,role=server,...") exist
// and returns its ethdev port: an existing port of that name is reused, a new
// one is hot-plugged (rte_eal_hotplug_add), so a process can open several vdevs
// after the EAL started.  Needs eal_init() first.  False with DPDK's reason.
bool probe_vdev(const std::string& devargs, uint16_t* port_id, std::string* err);

// The CPUs the calling thread may run on, in --lcores list syntax ("1",
// "0-3,6"); "" if the kernel does not say.  The default main lcore is bound to
// them, so a process started under taskset stays where it was put.
std::string affinity_cpu_list();

// Gives the calling thread an lcore id (rte_thread_register) when it has
// none, so its frame allocations and frees go through the mempools'
// per-lcore caches.  When the thread ends, the frames in its caches go back
// to their pools and its lcore id is released: otherwise each ended thread
// would keep up to a cache and a half of every pool it freed frames into,
// and its lcore id, for as long as the process lives.  False when the thread
// has no lcore id after the call (none left: it works without caches).
bool register_thread();

// The arguments eal_init() would use (for logging and tests).
std::vector<std::string> eal_default_args(bool* hugepages);

}  // namespace dpdat::dpdk
