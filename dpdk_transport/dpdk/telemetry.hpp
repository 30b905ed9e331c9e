#pragma once
// Counters of dpdat's ports and engines, readable by a function call and
// exported through DPDK telemetry (dpdk-telemetry.py, or the
// dpdk_telemetry.v2 socket) under a /dpdat/ prefix:
//   /dpdat/ports            ids of registered ports
//   /dpdat/port,<id>        that port's counters
//   /dpdat/engines          names of registered engines
//   /dpdat/engine,<name>    that engine's counters, summed over its QPs too
// Objects register while they live and must unregister before they go.
// Reads from the telemetry thread are unsynchronised snapshots of 64-bit
// counters (monotonic, written by one thread): values may be a poll behind.

#include <map>
#include <string>

#include "port.hpp"
#include "rc/engine/engine.hpp"

namespace dpdat::dpdk {

// Registers the /dpdat/ commands (once per process; needs eal_init()).
bool telemetry_init();

void telemetry_add_port(const Port* port);
void telemetry_remove_port(const Port* port);
void telemetry_add_engine(const std::string& name, const rc::Engine* engine);
void telemetry_remove_engine(const std::string& name);

// The same counters as telemetry shows, as name -> value.
std::map<std::string, uint64_t> port_counters(const Port& port);
std::map<std::string, uint64_t> engine_counters(const rc::Engine& engine);

}  // namespace dpdat::dpdk
