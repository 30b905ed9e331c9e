// dpdat-info: the dpdat interfaces a user has configured, as ibv_devinfo
// lists devices.  Sources, in the order dat_ia_open resolves names:
// DPDAT_IA_<NAME> in the environment, the DPDAT_CONF file (default
// /etc/dpdat.conf), and dat.conf entries (DAT_OVERRIDE or /etc/dat.conf)
// whose library is dpdat's DAT 2.0 plug-in.  The built-ins dpdat0/dpdat1
// are shown when nothing is configured (with how to add an interface) or
// when named with -d.
// For each: the configuration (PMD, IPv4, MTU/PMTU cap, progress mode), and
// unless --no-open what opening it through libdat shows: the DPDK port (MAC,
// MTU, queues, link state, from this process's DPDK telemetry) and the
// limits dat_ia_query reports.  -v adds the live counters of every running
// dpdat process (its DPDK telemetry socket).  A configuration that does not
// parse is reported with its source (file:line or variable) and the key at
// fault; the exit status is then 1.

#include <dat/udat.h>
#include <dirent.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "config.hpp"
#include "telemetry_client.hpp"

namespace {

struct Entry {
  std::string name;
  std::string source;    // "DPDAT_IA_X", "/etc/dpdat.conf:3", "built-in", "dat.conf:2 (DAT 2.0)"
  std::string text;      // the configuration string
  bool by_name = false;  // a dat.conf entry with empty instance data: configured by its name
};

constexpr const char* kBuiltinSource = "built-in";

std::string conf_path() { return dpdat::dat::conf_path(); }

// Every definition, as the configuration module finds them (the environment,
// the DPDAT_CONF file, the built-ins), then the DAT 2.0 registry's dpdat lines.
std::vector<Entry> gather() {
  std::vector<Entry> out;
  for (auto& e : dpdat::dat::ia_entries())
    out.push_back({std::move(e.name), std::move(e.source), std::move(e.text)});
  for (auto& e : dpdat::dat::dat2_entries()) {
    const bool by_name = e.text.empty();
    out.push_back({std::move(e.name), std::move(e.source), std::move(e.text), by_name});
  }
  return out;
}

// The value of `key` in a configuration string ("" when absent).
std::string value_of(const std::string& text, const std::string& key) {
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find(';', pos), text.size());
    const std::string kv = text.substr(pos, end - pos);
    if (kv.rfind(key + "=", 0) == 0) return kv.substr(key.size() + 1);
    pos = end + 1;
  }
  return "";
}

std::string ipv4(uint32_t ip) {
  char b[32];
  std::snprintf(b, sizeof b, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
  return b;
}

std::set<int64_t> ports(dpdat::tools::TelemetryClient& t) {
  std::set<int64_t> s;
  const auto l = t.query("/ethdev/list");
  if (l.is_array())
    for (const auto& p : l)
      if (p.is_number_integer()) s.insert(p.get<int64_t>());
  return s;
}

void show_port(dpdat::tools::TelemetryClient& t, int64_t id) {
  const auto info = t.query("/ethdev/info," + std::to_string(id));
  const auto link = t.query("/ethdev/link_status," + std::to_string(id));
  std::printf("    port %" PRId64 ":", id);
  if (info.is_object()) {
    for (const char* k : {"name", "mac_addr", "mtu", "nb_rx_queues", "nb_tx_queues"})
      if (info.contains(k)) std::printf(" %s=%s", k, info[k].dump().c_str());
  }
  if (link.is_object() && link.contains("status"))
    std::printf(" link=%s", link["status"].get<std::string>().c_str());
  if (link.is_object() && link.contains("speed"))
    std::printf(" speed=%s", link["speed"].dump().c_str());
  std::printf("\n");
}

void show_limits(DAT_IA_HANDLE ia) {
  DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
  DAT_IA_ATTR a{};
  DAT_PROVIDER_ATTR p{};
  if (dat_ia_query(ia, &async, DAT_IA_FIELD_ALL, &a, 0, &p) != DAT_SUCCESS) {
    std::printf("    dat_ia_query failed\n");
    return;
  }
  std::printf("    adapter: %s (%s)\n", a.adapter_name, a.vendor_name);
  std::printf(
      "    limits: max_eps=%d max_dto_per_ep=%d max_rdma_read_per_ep_in=%d max_srqs=%d max_evds=%d "
      "max_evd_qlen=%d max_iov_segments_per_dto=%d max_lmrs=%d max_lmr_block_size=%" PRIu64
      " max_pzs=%d max_message_size=%" PRIu64 " max_rdma_size=%" PRIu64 " max_rmrs=%d\n",
      a.max_eps, a.max_dto_per_ep, a.max_rdma_read_per_ep_in, a.max_srqs, a.max_evds,
      a.max_evd_qlen, a.max_iov_segments_per_dto, a.max_lmrs,
      static_cast<uint64_t>(a.max_lmr_block_size), a.max_pzs,
      static_cast<uint64_t>(a.max_message_size), static_cast<uint64_t>(a.max_rdma_size),
      a.max_rmrs);
}

// -v: every live dpdat process's counters.
void show_running() {
  DIR* d = opendir("/var/run/dpdk");
  if (d == nullptr) {
    std::printf("\nno running dpdat process (no /var/run/dpdk)\n");
    return;
  }
  int shown = 0;
  while (const dirent* e = readdir(d)) {
    long pid = 0;
    char tail = 0;
    if (std::sscanf(e->d_name, "dpdat%ld%c", &pid, &tail) != 1 || pid == getpid()) continue;
    if (kill(static_cast<pid_t>(pid), 0) != 0) continue;  // gone (a stale directory)
    dpdat::tools::TelemetryClient t;
    if (!t.open(dpdat::tools::TelemetryClient::socket_of(pid))) continue;
    ++shown;
    std::printf("\nprocess %ld:\n", pid);
    const auto engines = t.query("/dpdat/engines");
    if (engines.is_array())
      for (const auto& n : engines) {
        const auto c = t.query("/dpdat/engine," + n.get<std::string>());
        std::printf("  engine %s: %s\n", n.get<std::string>().c_str(), c.dump().c_str());
      }
    const auto ps = t.query("/dpdat/ports");
    if (ps.is_array())
      for (const auto& p : ps)
        std::printf("  port %s: %s\n", p.dump().c_str(),
                    t.query("/dpdat/port," + p.dump()).dump().c_str());
  }
  closedir(d);
  if (shown == 0) std::printf("\nno running dpdat process with a telemetry socket\n");
}

int run(int argc, char** argv) {
  CLI::App app{"dpdat-info: the dpdat interfaces configured here, as ibv_devinfo lists devices",
               "dpdat-info"};
  bool verbose = false, no_open = false;
  std::vector<std::string> only;
  app.add_flag("-v,--verbose", verbose, "also the live counters of running dpdat processes");
  app.add_flag("--no-open", no_open, "do not open the interfaces (configuration only)");
  app.add_option("-d,--ia", only, "only these IA names");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "dpdat-info: %s\n", e.what());
    return 2;
  }
  int rc = 0;
  std::set<std::string> seen;
  std::set<int> rings_opened;
  const std::vector<Entry> entries = gather();
  // Configured: an interface of one's own (a dat.conf line that only names
  // one refers to the others or to a built-in).
  const bool configured = std::any_of(entries.begin(), entries.end(), [](const Entry& e) {
    return e.source != kBuiltinSource && !e.by_name;
  });
  if (!configured && only.empty())
    std::printf(
        "No dpdat interface is configured here; the built-in in-process interfaces follow.\n"
        "To add one, write a line \"<name> vdev=<devargs>;ip=<address>\" (or "
        "\"port=<pci address>;ip=...\") in %s, or set DPDAT_IA_<NAME> to the same string; "
        "see dpdat.conf(5).\n\n",
        conf_path().c_str());
  for (const Entry& e : entries) {
    if (!only.empty() && std::find(only.begin(), only.end(), e.name) == only.end()) continue;
    if (only.empty() && configured && e.source == kBuiltinSource) continue;
    const bool shadowed = !seen.insert(e.name).second;
    std::printf("%s  (%s%s)\n", e.name.c_str(), e.source.c_str(),
                shadowed ? "; an earlier source defines this name and wins" : "");
    if (e.by_name) {
      std::printf("    config: by name (DPDAT_IA_%s, %s or a built-in)\n\n", e.name.c_str(),
                  conf_path().c_str());
      continue;
    }
    std::printf("    config: %s\n", e.text.c_str());
    dpdat::dat::IfaceConfig c;
    std::string err;
    if (!dpdat::dat::parse_iface_config(e.text, &c, &err)) {
      std::fprintf(stderr, "dpdat-info: %s: %s: %s\n", e.source.c_str(), e.name.c_str(),
                   err.c_str());
      std::printf("    BAD CONFIGURATION: %s\n\n", err.c_str());
      rc = 1;
      continue;
    }
    const std::string pmd =
        !c.vdev.empty()   ? c.vdev.substr(0, c.vdev.find_first_of("0123456789,"))
        : c.ring_end >= 0 ? "net_ring (in-process link, end " + std::to_string(c.ring_end) + ")"
                          : "ethdev " + c.port;
    const std::string progress = value_of(e.text, "progress");
    std::printf("    pmd: %s  ipv4: %s  mtu: %u  pmtu cap: %u  progress: %s\n", pmd.c_str(),
                ipv4(c.ip).c_str(), c.mtu, c.pmtu, progress.empty() ? "default" : progress.c_str());
    if (no_open || shadowed || e.source.find("DAT 2.0") != std::string::npos) {
      std::printf("\n");
      continue;
    }
    // An end of the in-process link opens once per process.
    if (c.ring_end >= 0 && !rings_opened.insert(c.ring_end).second) {
      std::printf("    (not opened: in-process link end %d was opened above)\n\n", c.ring_end);
      continue;
    }
    // Ports before and after the open: the new ones are this interface's.
    dpdat::tools::TelemetryClient t;
    const bool have_t = t.open(dpdat::tools::TelemetryClient::socket_of(getpid()));
    const std::set<int64_t> before = have_t ? ports(t) : std::set<int64_t>{};
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    std::string n = e.name;
    const DAT_RETURN r = dat_ia_open(n.data(), 8, &async, &ia);
    if (r != DAT_SUCCESS) {
      const char *major = "?", *minor = "?";
      dat_strerror(r, &major, &minor);
      std::printf("    dat_ia_open: %s %s%s\n\n", major, minor,
                  c.vdev.find("role=client") != std::string::npos
                      ? " (a net_memif client needs its server running)"
                      : "");
      continue;
    }
    dpdat::tools::TelemetryClient t2;  // the EAL (and its socket) may be new now
    if (t2.open(dpdat::tools::TelemetryClient::socket_of(getpid()))) {
      for (int64_t id : ports(t2))
        if (before.count(id) == 0) show_port(t2, id);
    } else {
      std::printf("    (no DPDK telemetry socket: port details unavailable)\n");
    }
    show_limits(ia);
    dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
    std::printf("\n");
  }
  if (only.empty() && configured)
    std::printf(
        "Also built in: dpdat0, dpdat1, the two ends of an in-process link "
        "(dpdat-info -d dpdat0 shows one).\n");
  if (verbose) show_running();
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dpdat-info: %s\n", e.what());
    return 1;
  }
}
