#include "settings.hpp"

#include <unistd.h>

#include <cctype>
#include <cstdlib>

namespace dpdat::settings {

const VarInfo kVars[static_cast<size_t>(Var::kCount)] = {
    {Var::kConf, "DPDAT_CONF", "the interface file (default /etc/dpdat.conf)"},
    {Var::kEalArgs, "DPDAT_EAL_ARGS",
     "DPDK EAL arguments, blank-separated, instead of the built-in default"},
    {Var::kMemifGuard, "DPDAT_MEMIF_GUARD",
     "0: net_memif bursts unmarked and closes on the caller's thread (to measure the guard)"},
    {Var::kCrc32, "DPDAT_CRC32", "the ICRC implementation, by name, where the CPU has it"},
    {Var::kRsmMaxExport, "DPDAT_RSM_MAX_EXPORT",
     "segments an RSMAPI process may publish at once (default 1024)"},
    {Var::kFiIa, "DPDAT_FI_IA",
     "the interface of a libfabric process (default fi%r, %r the local MPI rank)"},
    {Var::kFiStats, "DPDAT_FI_STATS", "1: the libfabric provider prints frame counters"},
    {Var::kVerbsDevices, "DPDAT_VERBS_DEVICES",
     "the verbs devices, comma-separated, in order (default every interface name known)"},
    {Var::kVerbsStats, "DPDAT_VERBS_STATS", "1: the verbs library prints frame counters"},
    {Var::kMpiLocalRank, "OMPI_COMM_WORLD_LOCAL_RANK", "the local MPI rank (%r in DPDAT_FI_IA)"},
    {Var::kDatOverride, "DAT_OVERRIDE", "the DAT 2.0 registry (default /etc/dat.conf)"},
    {Var::kPerfDatConf, "DPDAT_PERF_DAT_CONF",
     "dpdat-perf's own DAT 2.0 registry, handed to its restarted self"},
};

namespace {

const char* raw(Var v) { return std::getenv(name_of(v)); }

}  // namespace

std::optional<std::string> get(Var v) {
  const char* s = raw(v);
  if (s == nullptr || *s == '\0') return std::nullopt;
  return std::string(s);
}

std::string get_or(Var v, std::string_view dflt) {
  auto s = get(v);
  return s ? *s : std::string(dflt);
}

bool is_set(Var v) { return raw(v) != nullptr; }

bool on(Var v) {
  const auto s = get(v);
  return s && *s != "0";
}

std::string ia_var(std::string_view ia) {
  std::string n = "DPDAT_IA_";
  for (char c : ia)
    n.push_back(c == '-' || c == '.'
                    ? '_'
                    : static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  return n;
}

std::optional<std::string> ia_config(std::string_view ia) {
  const char* s = std::getenv(ia_var(ia).c_str());
  if (s == nullptr || *s == '\0') return std::nullopt;
  return std::string(s);
}

std::vector<std::pair<std::string, std::string>> ia_vars() {
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    if (kv.substr(0, 9) != "DPDAT_IA_") continue;
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    out.emplace_back(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return out;
}

}  // namespace dpdat::settings
