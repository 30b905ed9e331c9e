#include "telemetry.hpp"

#include <rte_telemetry.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "rc/qp/qp.hpp"

namespace dpdat::dpdk {
namespace {

std::mutex g_mu;
std::map<uint16_t, const Port*> g_ports;
std::map<std::string, const rc::Engine*> g_engines;

void fill(rte_tel_data* d, const std::map<std::string, uint64_t>& m) {
  rte_tel_data_start_dict(d);
  // DPDK telemetry refuses names with characters other than letters,
  // digits, '_' and '/': reason names ("out-of-bounds") are written with '_'.
  for (const auto& [k, v] : m) {
    std::string name = k;
    std::replace(name.begin(), name.end(), '-', '_');
    rte_tel_data_add_dict_u64(d, name.c_str(), v);
  }
}

int cmd_ports(const char*, const char*, rte_tel_data* d) {
  std::lock_guard<std::mutex> lk(g_mu);
  rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
  for (const auto& [id, p] : g_ports) rte_tel_data_add_array_int(d, id);
  return 0;
}

int cmd_port(const char*, const char* params, rte_tel_data* d) {
  if (params == nullptr || *params == '\0') return -1;
  char* end = nullptr;
  const unsigned long id = std::strtoul(params, &end, 10);
  std::lock_guard<std::mutex> lk(g_mu);
  auto it = g_ports.find(static_cast<uint16_t>(id));
  if (*end != '\0' || it == g_ports.end()) return -1;
  fill(d, port_counters(*it->second));
  return 0;
}

int cmd_engines(const char*, const char*, rte_tel_data* d) {
  std::lock_guard<std::mutex> lk(g_mu);
  rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
  for (const auto& [name, e] : g_engines) rte_tel_data_add_array_string(d, name.c_str());
  return 0;
}

int cmd_engine(const char*, const char* params, rte_tel_data* d) {
  if (params == nullptr) return -1;
  std::lock_guard<std::mutex> lk(g_mu);
  auto it = g_engines.find(params);
  if (it == g_engines.end()) return -1;
  fill(d, engine_counters(*it->second));
  return 0;
}

}  // namespace

bool telemetry_init() {
  static bool ok = [] {
    return rte_telemetry_register_cmd("/dpdat/ports", cmd_ports, "dpdat port ids") == 0 &&
           rte_telemetry_register_cmd("/dpdat/port", cmd_port,
                                      "dpdat port counters. Parameters: int port_id") == 0 &&
           rte_telemetry_register_cmd("/dpdat/engines", cmd_engines, "dpdat engine names") == 0 &&
           rte_telemetry_register_cmd("/dpdat/engine", cmd_engine,
                                      "dpdat engine and queue-pair counters. Parameters: name") ==
               0;
  }();
  return ok;
}

void telemetry_add_port(const Port* port) {
  std::lock_guard<std::mutex> lk(g_mu);
  g_ports[port->port_id()] = port;
}
void telemetry_remove_port(const Port* port) {
  std::lock_guard<std::mutex> lk(g_mu);
  auto it = g_ports.find(port->port_id());
  if (it != g_ports.end() && it->second == port) g_ports.erase(it);
}
void telemetry_add_engine(const std::string& name, const rc::Engine* engine) {
  std::lock_guard<std::mutex> lk(g_mu);
  g_engines[name] = engine;
}
void telemetry_remove_engine(const std::string& name) {
  std::lock_guard<std::mutex> lk(g_mu);
  g_engines.erase(name);
}

std::map<std::string, uint64_t> port_counters(const Port& p) {
  const PortCounters& c = p.counters();
  std::map<std::string, uint64_t> m = {{"rx_max_frame", c.rx_max_frame},
                                       {"tx_max_frame", c.tx_max_frame},
                                       {"mtu", p.mtu()},
                                       {"max_pmtu", p.max_pmtu()},
                                       {"queues", p.queues()}};
  c.for_each([&](const char* name, uint64_t v) { m[name] = v; });
  // Per RX/TX queue pair (one per engine): which queues carry the traffic.
  // Read unsynchronised from the telemetry thread, as the sums above.
  for (uint16_t q = 0; q < p.queues(); ++q) {
    const PortCounters& qc = p.queue_counters(q);
    std::string k = "q";  // appended, not "q" + to_string(): GCC 12 -Wrestrict false positive
    k += std::to_string(q);
    k += '_';
    m[k + "rx_packets"] = qc.rx_packets;
    m[k + "tx_packets"] = qc.tx_packets;
    m[k + "tx_full"] = qc.tx_full;
  }
  return m;
}

std::map<std::string, uint64_t> engine_counters(const rc::Engine& e) {
  const rc::EngineCounters& c = e.counters();
  std::map<std::string, uint64_t> m;
  c.for_each([&](const char* name, uint64_t v) { m[name] = v; });
  for (size_t r = 1; r < static_cast<size_t>(wire::Reject::kCount); ++r)
    m["rx_reject_" + std::string(wire::reject_name(static_cast<wire::Reject>(r)))] = c.rx_reject[r];
  // Refusals by reason (what a hostile peer's attacks count in).
  for (size_t i = 0; i < rc::EngineCounters::kRespErrorKinds; ++i)
    m["resp_" + std::string(rc::Qp::state_name(static_cast<rc::Qp::RespState>(
                    static_cast<size_t>(rc::Qp::RespState::kErrLength) + i)))] = c.resp_errors[i];
  for (size_t i = 1; i < static_cast<size_t>(rc::AccessError::kCount); ++i)
    m["rkey_refused_" + std::string(rc::access_error_name(static_cast<rc::AccessError>(i)))] =
        c.rkey_refused[i];
  // Connection requests refused for a pending-request limit: in all and by
  // the limit (the names of dat::ReqLimit).
  static constexpr const char* kReqLimitNames[rc::EngineCounters::kReqLimits] = {
      "per_listener", "per_interface", "per_peer", "key_refusals"};
  uint64_t refused = 0;
  for (size_t i = 0; i < rc::EngineCounters::kReqLimits; ++i) {
    m["reqs_refused_" + std::string(kReqLimitNames[i])] = c.reqs_refused[i];
    refused += c.reqs_refused[i];
  }
  m["reqs_refused"] = refused;
  rc::QpCounters sum;
  uint64_t qps = 0;
  // Congestion control gauges: QPs paced now, the lowest paced rate among
  // them and the smallest delay window (packets x 1000).
  uint64_t cc_paced_qps = 0, cc_min_rate_bps = 0, cc_min_window_milli = 0;
  e.for_each_qp([&](const rc::Qp& qp) {
    const uint64_t rate = qp.cc().pace_rate_bps();
    if (rate != 0) {
      ++cc_paced_qps;
      cc_min_rate_bps = cc_min_rate_bps == 0 ? rate : std::min(cc_min_rate_bps, rate);
    }
    const auto win = static_cast<uint64_t>(qp.cc().window_pkts() * 1000);
    cc_min_window_milli = qps == 0 ? win : std::min(cc_min_window_milli, win);
    sum += qp.counters();
    ++qps;
  });
  m["qps"] = qps;
  sum.for_each([&](const char* name, uint64_t v) { m[std::string("qp_") + name] = v; });
  // qp_retransmits counts every resent packet, go-back-N and selective
  // (qp_sr_resends alone).
  m["qp_retransmits"] += sum.sr_resends;
  m["sr_kept_bytes"] = e.held_bytes();
  m["qp_cc_paced_qps"] = cc_paced_qps;
  m["qp_cc_min_rate_bps"] = cc_min_rate_bps;
  m["qp_cc_min_window_milli"] = cc_min_window_milli;
  return m;
}

}  // namespace dpdat::dpdk
