// libFuzzer target for the interface configuration parser (dat_core/config):
// the configuration string of DPDAT_IA_<NAME>, of a DPDAT_CONF line and of a
// DAT 2.0 dat.conf entry's ia_params (all parse_iface_config()), and the
// DPDAT_CONF file's lines (parse_conf_text()).
//
// Invariants: nothing thrown past the API, no crash or UB; a refusal says
// why; an accepted configuration satisfies the documented constraints
// (exactly one source, an address, valid MTUs) and, written back as a
// configuration string, parses to the same configuration.
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "config.hpp"

using namespace dpdat::dat;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

std::string ip_text(uint32_t ip) {
  char b[16];
  std::snprintf(b, sizeof b, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 0xFF, (ip >> 8) & 0xFF,
                ip & 0xFF);
  return b;
}

std::string cm_kind(dpdat::wire::CmMsg m) {
  switch (m) {
    case dpdat::wire::CmMsg::kReq:
      return "req";
    case dpdat::wire::CmMsg::kRep:
      return "rep";
    case dpdat::wire::CmMsg::kRtu:
      return "rtu";
    case dpdat::wire::CmMsg::kRej:
      return "rej";
    case dpdat::wire::CmMsg::kDreq:
      return "dreq";
    case dpdat::wire::CmMsg::kDrep:
      return "drep";
    default:
      std::abort();  // the parser accepted a kind config.hpp does not name
  }
}

// The configuration string that describes `c` (config.hpp's syntax).
std::string serialise(const IfaceConfig& c) {
  std::string s;
  if (!c.vdev.empty()) s += "vdev=" + c.vdev + ";";
  if (!c.port.empty()) s += "port=" + c.port + ";";
  if (c.ring_end >= 0) s += "ring=" + std::to_string(c.ring_end) + ";";
  s += "ip=" + ip_text(c.ip) + ";mtu=" + std::to_string(c.mtu) + ";pmtu=" + std::to_string(c.pmtu);
  for (const auto& [ip, mac] : c.neighbors) {
    char m[18];
    std::snprintf(m, sizeof m, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                  mac[4], mac[5]);
    s += ";neighbor=" + ip_text(ip) + "@" + m;
  }
  char loss[40];
  std::snprintf(loss, sizeof loss, "%.17g", c.loss);
  s += std::string(";loss=") + loss;
  for (const auto& [kind, n] : c.cm_drops)
    s += ";cm_drop=" + cm_kind(kind) + ":" + std::to_string(n);
  s += ";progress=";
  s += c.progress == ProgressMode::kBusy       ? "busy"
       : c.progress == ProgressMode::kAdaptive ? "adaptive"
                                               : "inline";
  s += ";spin_us=" + std::to_string(c.spin_us) + ";idle_us=" + std::to_string(c.idle_us) +
       ";node=" + std::to_string(c.node);
  return s;
}

bool same(const IfaceConfig& a, const IfaceConfig& b) {
  return a.name == b.name && a.vdev == b.vdev && a.port == b.port && a.ring_end == b.ring_end &&
         a.ip == b.ip && a.mtu == b.mtu && a.pmtu == b.pmtu && a.neighbors == b.neighbors &&
         a.loss == b.loss && a.cm_drops == b.cm_drops && a.progress == b.progress &&
         a.spin_us == b.spin_us && a.idle_us == b.idle_us && a.node == b.node;
}

void one_config(std::string_view text) {
  IfaceConfig c;
  c.name = "fuzz";
  std::string err;
  if (!parse_iface_config(text, &c, &err)) {
    check(!err.empty());
    check(c.name == "fuzz" && c.text.empty());  // untouched on failure
    return;
  }
  check(c.name == "fuzz" && c.text == text);
  const int sources = (c.vdev.empty() ? 0 : 1) + (c.port.empty() ? 0 : 1) + (c.ring_end >= 0);
  check(sources == 1 && (c.ring_end == -1 || c.ring_end == 0 || c.ring_end == 1));
  check(c.ip != 0 && c.mtu >= 576 && c.idle_us > 0);
  check(c.pmtu == 256 || c.pmtu == 512 || c.pmtu == 1024 || c.pmtu == 2048 || c.pmtu == 4096);
  check(c.loss >= 0.0 && c.loss < 1.0);
  for (const auto& d : c.cm_drops) check(d.second > 0);

  const std::string again = serialise(c);
  IfaceConfig c2;
  c2.name = "fuzz";
  std::string err2;
  check(parse_iface_config(again, &c2, &err2));
  check(same(c, c2));
  check(serialise(c2) == again);
}

void run(std::string_view in) {
  // Configuration strings come from C strings (environment, dat.conf,
  // fi_getinfo): they hold no NUL.
  in = in.substr(0, in.find('\0'));
  one_config(in);
  // The same bytes as a DPDAT_CONF file: every entry's string.
  const auto entries = parse_conf_text(in);
  check(entries.size() <= in.size());
  for (const auto& [name, text] : entries) {
    check(!name.empty() && name.front() != '#');
    check(name.find_first_of(" \t\n") == std::string::npos);
    check(text.find('\n') == std::string::npos);
    one_config(text);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    run(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const std::exception&) {
    std::abort();  // the parser reports errors, it never throws them
  }
  return 0;
}
