#pragma once
// The process's settings from its environment: the one place in dpdat's
// libraries and tools that reads environment variables.  Every variable
// dpdat reads is a Var here, with its name and meaning (kVars); the callers
// ask for a Var, never for a name.  The interface names built on it
// (DPDAT_IA_<NAME>, then the DPDAT_CONF file, then the built-ins) are
// resolved by dat_core's configuration module (config.hpp); the order is
// documented in dpdat.conf(5) and docs/config.md.
//
// No DPDK, no dat_core: every layer may use it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dpdat::settings {

enum class Var : uint8_t {
  kConf,          // DPDAT_CONF: the interface file (default /etc/dpdat.conf)
  kEalArgs,       // DPDAT_EAL_ARGS: EAL arguments instead of the built-in default
  kMemifGuard,    // DPDAT_MEMIF_GUARD: 0 turns the net_memif unmap guard off
  kCrc32,         // DPDAT_CRC32: the ICRC implementation to use, by name
  kRsmMaxExport,  // DPDAT_RSM_MAX_EXPORT: segments an RSMAPI process may publish
  kFiIa,          // DPDAT_FI_IA: the libfabric provider's interface (default fi%r)
  kFiStats,       // DPDAT_FI_STATS: the libfabric provider prints frame counters
  kVerbsDevices,  // DPDAT_VERBS_DEVICES: the verbs devices, in order
  kVerbsStats,    // DPDAT_VERBS_STATS: the verbs library prints frame counters
  kMpiLocalRank,  // OMPI_COMM_WORLD_LOCAL_RANK: %r in DPDAT_FI_IA
  kDatOverride,   // DAT_OVERRIDE: the DAT 2.0 registry (default /etc/dat.conf)
  kPerfDatConf,   // DPDAT_PERF_DAT_CONF: dpdat-perf's own registry, for its restart
  kCount,
};

struct VarInfo {
  Var var;
  const char* name;
  const char* meaning;
};

// Every variable, in Var order.
extern const VarInfo kVars[static_cast<size_t>(Var::kCount)];

inline const char* name_of(Var v) { return kVars[static_cast<size_t>(v)].name; }

// The variable's value when it is set and not empty.
std::optional<std::string> get(Var v);

// The value, or `dflt` when it is unset or empty.
std::string get_or(Var v, std::string_view dflt);

// Whether it is set at all (an empty value too).
bool is_set(Var v);

// A switch: set to anything but "" and "0".
bool on(Var v);

// The variable that configures IA `ia`: DPDAT_IA_ and the name upper-cased,
// '-' and '.' written as '_'.
std::string ia_var(std::string_view ia);

// The configuration string in ia_var(ia) when it is set and not empty.
std::optional<std::string> ia_config(std::string_view ia);

// Every DPDAT_IA_* variable set: (variable, value), in the environment's order.
std::vector<std::pair<std::string, std::string>> ia_vars();

}  // namespace dpdat::settings
