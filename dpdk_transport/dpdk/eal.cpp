#include "eal.hpp"

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mempool.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "settings/settings.hpp"

namespace dpdat::dpdk {
namespace {

bool hugepages_usable() {
  std::ifstream nr("/proc/sys/vm/nr_hugepages");
  long pages = 0;
  if (!(nr >> pages) || pages < 64) return false;  // 128 MiB at least
  std::ifstream mounts("/proc/mounts");
  std::string line;
  while (std::getline(mounts, line))
    if (line.find(" hugetlbfs ") != std::string::npos) return true;
  return false;
}

}  // namespace

std::string affinity_cpu_list() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::string out;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  // Runs of consecutive CPUs as "a-b", joined by commas: the --lcores syntax.
  constexpr size_t kMax = CPU_SETSIZE;
  for (size_t c = 0; c < kMax; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    size_t e = c;
    while (e + 1 < kMax && CPU_ISSET(e + 1, &set)) ++e;
    if (!out.empty()) out += ',';
    out += std::to_string(c);
    if (e > c) out += '-' + std::to_string(e);
    c = e;
  }
  return out;
}

std::vector<std::string> eal_default_args(bool* hugepages) {
  std::vector<std::string> a;
  if (const auto env = settings::get(settings::Var::kEalArgs)) {
    std::istringstream in(*env);
    std::string tok;
    while (in >> tok) a.push_back(tok);
    *hugepages = std::find(a.begin(), a.end(), "--no-huge") == a.end();
    return a;
  }
  // The main lcore may run on the CPUs this process was started on (taskset,
  // cgroups): EAL would otherwise re-pin it to every CPU and undo a
  // deliberate placement (two pollers must not share a CPU).
  std::string cpus = affinity_cpu_list();
  if (cpus.empty())
    cpus = "0-" + std::to_string(std::max(1u, std::thread::hardware_concurrency()) - 1);
  a = {"--no-pci",
       "--lcores",
       "0@(" + cpus + ")",
       "--file-prefix",
       "dpdat" + std::to_string(getpid()),
       "--log-level",
       "lib.eal:error",
       "--log-level",
       "lib.telemetry:error"};
  *hugepages = hugepages_usable();
  if (*hugepages) {
    a.push_back("--in-memory");
  } else {
    // DPDK 22.11 rejects --in-memory together with --no-huge.
    a.insert(a.end(), {"--no-huge", "--no-shconf", "-m", "512"});
  }
  return a;
}

const EalStatus& eal_init(const std::vector<std::string>& extra) {
  static EalStatus status;
  static std::once_flag once;
  std::call_once(once, [&extra] {
    status.args = eal_default_args(&status.hugepages);
    status.args.insert(status.args.end(), extra.begin(), extra.end());
    std::vector<std::string> store;
    store.push_back("dpdat");
    store.insert(store.end(), status.args.begin(), status.args.end());
    std::vector<char*> argv;
    for (auto& s : store) argv.push_back(s.data());
    argv.push_back(nullptr);
    const int rc = rte_eal_init(static_cast<int>(store.size()), argv.data());
    if (rc >= 0) {
      status.ok = true;
    } else if (rte_errno == EALREADY) {
      status.ok = true;  // somebody else in this process initialised the EAL: reuse it
    } else {
      status.error = std::string("rte_eal_init failed: ") + rte_strerror(rte_errno);
    }
  });
  return status;
}

bool probe_vdev(const std::string& devargs, uint16_t* port_id, std::string* err) {
  const std::string name = devargs.substr(0, devargs.find(','));
  static std::mutex mu;  // probe and lookup as one step per process
  std::lock_guard<std::mutex> lk(mu);
  if (rte_eth_dev_get_port_by_name(name.c_str(), port_id) == 0) return true;
  const size_t comma = devargs.find(',');
  const std::string args = comma == std::string::npos ? "" : devargs.substr(comma + 1);
  const int rc = rte_eal_hotplug_add("vdev", name.c_str(), args.c_str());
  if (rc < 0) {
    *err = "rte_eal_hotplug_add(" + devargs + ") failed: " + rte_strerror(-rc);
    return false;
  }
  if (rte_eth_dev_get_port_by_name(name.c_str(), port_id) != 0) {
    *err = "device " + name + " probed but has no ethdev port";
    return false;
  }
  return true;
}

namespace {

// Armed on a thread register_thread() gave an lcore id; its destructor runs
// when that thread ends.
struct LcoreRelease {
  bool armed = false;
  ~LcoreRelease() {
    unsigned lcore = rte_lcore_id();
    if (!armed || lcore == LCORE_ID_ANY) return;
    // Every pool of the process: a thread frees the frames of whichever
    // port they came from (net_ring, net_memif hand them across).
    rte_mempool_walk(
        [](rte_mempool* mp, void* arg) {
          const unsigned id = *static_cast<const unsigned*>(arg);
          if (rte_mempool_cache* c = rte_mempool_default_cache(mp, id); c != nullptr)
            rte_mempool_cache_flush(c, mp);
        },
        &lcore);
    rte_thread_unregister();
  }
};

thread_local LcoreRelease t_lcore_release;

}  // namespace

bool register_thread() {
  if (rte_lcore_id() != LCORE_ID_ANY) return true;  // an EAL lcore, or registered before
  if (rte_thread_register() != 0) return false;
  t_lcore_release.armed = true;
  return true;
}

}  // namespace dpdat::dpdk
