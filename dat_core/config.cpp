#include "config.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "settings/settings.hpp"

namespace dpdat::dat {
namespace {

// Engines per interface at most (rc::EngineGroup::kMaxEngines).
constexpr uint32_t kMaxEngines = 16;

constexpr const char* kBuiltin[][2] = {
    {"dpdat0", "ring=0;ip=192.168.77.1"},
    {"dpdat1", "ring=1;ip=192.168.77.2"},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

template <typename T>
bool parse_num(std::string_view s, T* v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

constexpr const char* kBuiltinSource = "built-in";

// A DPDAT_CONF file's lines: name, configuration ("" when the line has
// none) and line number, in file order; blank lines and '#' comments skipped.
struct ConfLine {
  std::string name, text;
  int line;
};
std::vector<ConfLine> conf_lines(std::string_view text) {
  std::vector<ConfLine> out;
  for (int n = 1; !text.empty(); ++n) {
    const size_t nl = text.find('\n');
    std::string_view l = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (l.empty() || l.front() == '#') continue;
    const size_t sp = l.find_first_of(" \t");
    if (sp == std::string_view::npos) {
      out.push_back({std::string(l), "", n});
      continue;
    }
    out.push_back({std::string(l.substr(0, sp)), std::string(trim(l.substr(sp))), n});
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// DPDAT_IA_MY_IF -> my_if: the name list_ia_names() reports.
std::string name_of_var(std::string_view var) {
  std::string n(var.substr(9));
  for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return n;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> parse_conf_text(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& l : conf_lines(text))
    if (!l.text.empty()) out.emplace_back(std::move(l.name), std::move(l.text));
  return out;
}

std::string conf_path() { return settings::get_or(settings::Var::kConf, "/etc/dpdat.conf"); }

std::vector<IaEntry> ia_entries() {
  std::vector<IaEntry> out;
  for (auto& [var, value] : settings::ia_vars()) out.push_back({name_of_var(var), var, value});
  const std::string path = conf_path();
  for (auto& l : conf_lines(read_file(path)))
    out.push_back({std::move(l.name), path + ":" + std::to_string(l.line), std::move(l.text)});
  for (const auto& b : kBuiltin) out.push_back({b[0], kBuiltinSource, b[1]});
  return out;
}

std::vector<IaEntry> dat2_entries() {
  std::vector<IaEntry> out;
  const std::string path = settings::get_or(settings::Var::kDatOverride, "/etc/dat.conf");
  std::istringstream in(read_file(path));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string_view l = trim(line);
    if (l.empty() || l.front() == '#' || l.find("libdaplodpdk") == std::string_view::npos) continue;
    // name api threadsafety default library version "ia_params" "platform_params"
    const size_t q1 = l.find('"'), q2 = l.find('"', q1 + 1);
    const std::string_view name = l.substr(0, l.find_first_of(" \t"));
    const std::string_view text = q1 == std::string_view::npos || q2 == std::string_view::npos
                                      ? std::string_view{}
                                      : l.substr(q1 + 1, q2 - q1 - 1);
    out.push_back(
        {std::string(name), path + ":" + std::to_string(n) + " (DAT 2.0)", std::string(text)});
  }
  return out;
}

bool parse_ipv4(std::string_view s, uint32_t* ip) {
  const std::string str(s);
  in_addr a{};
  if (inet_pton(AF_INET, str.c_str(), &a) != 1) return false;
  *ip = ntohl(a.s_addr);
  return true;
}

bool parse_mac(std::string_view s, wire::MacAddr* mac) {
  if (s.size() != 17) return false;
  for (size_t i = 0; i < 6; ++i) {
    if (i > 0 && s[i * 3 - 1] != ':') return false;
    uint8_t b = 0;
    const auto r = std::from_chars(s.data() + i * 3, s.data() + i * 3 + 2, b, 16);
    if (r.ec != std::errc() || r.ptr != s.data() + i * 3 + 2) return false;
    (*mac)[i] = b;
  }
  return true;
}

bool parse_cpu_list(std::string_view s, std::vector<int>* out) {
  std::vector<int> cpus;
  while (!s.empty()) {
    const size_t comma = s.find(',');
    const std::string_view item = trim(s.substr(0, comma));
    s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
    const size_t dash = item.find('-');
    int lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!parse_num(item, &lo)) return false;
      hi = lo;
    } else if (!parse_num(item.substr(0, dash), &lo) || !parse_num(item.substr(dash + 1), &hi)) {
      return false;
    }
    if (lo < 0 || hi < lo || hi > 1023) return false;
    for (int c = lo; c <= hi; ++c) {
      if (std::find(cpus.begin(), cpus.end(), c) != cpus.end()) return false;
      cpus.push_back(c);
    }
  }
  if (cpus.empty()) return false;
  *out = std::move(cpus);
  return true;
}

bool parse_iface_config(std::string_view text, IfaceConfig* out, std::string* err) {
  IfaceConfig c;
  c.name = out->name;
  c.text = std::string(text);
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t semi = rest.find(';');
    std::string_view item = trim(rest.substr(0, semi));
    rest = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      *err = "expected key=value, got '" + std::string(item) + "'";
      return false;
    }
    const std::string_view key = trim(item.substr(0, eq));
    const std::string_view val = trim(item.substr(eq + 1));
    bool ok = true;
    if (key == "vdev") {
      c.vdev = std::string(val);
      ok = !val.empty();
    } else if (key == "port") {
      c.port = std::string(val);
    } else if (key == "ring") {
      ok = parse_num(val, &c.ring_end) && (c.ring_end == 0 || c.ring_end == 1);
    } else if (key == "ip") {
      ok = parse_ipv4(val, &c.ip);
    } else if (key == "mtu") {
      ok = parse_num(val, &c.mtu) && c.mtu >= 576;
    } else if (key == "pmtu") {
      ok = parse_num(val, &c.pmtu) &&
           (c.pmtu == 256 || c.pmtu == 512 || c.pmtu == 1024 || c.pmtu == 2048 || c.pmtu == 4096);
      c.pmtu_given = true;
    } else if (key == "neighbor") {
      const size_t at = val.find('@');
      std::pair<uint32_t, wire::MacAddr> n{};
      ok = at != std::string_view::npos && parse_ipv4(val.substr(0, at), &n.first) &&
           parse_mac(val.substr(at + 1), &n.second);
      if (ok) c.neighbors.push_back(n);
    } else if (key == "loss") {
      const std::string v(val);
      char* end = nullptr;
      c.loss = std::strtod(v.c_str(), &end);
      ok = end != nullptr && *end == '\0' && c.loss >= 0.0 && c.loss < 1.0;
    } else if (key == "cm_drop") {
      static constexpr std::pair<std::string_view, wire::CmMsg> kKinds[] = {
          {"req", wire::CmMsg::kReq}, {"rep", wire::CmMsg::kRep},   {"rtu", wire::CmMsg::kRtu},
          {"rej", wire::CmMsg::kRej}, {"dreq", wire::CmMsg::kDreq}, {"drep", wire::CmMsg::kDrep}};
      const size_t colon = val.find(':');
      uint32_t n = 0;
      ok = colon != std::string_view::npos && parse_num(val.substr(colon + 1), &n) && n > 0;
      bool known = false;
      for (const auto& [word, kind] : kKinds)
        if (ok && val.substr(0, colon) == word) {
          c.cm_drops.emplace_back(kind, n);
          known = true;
        }
      ok = ok && known;
    } else if (key == "progress") {
      if (val == "busy") {
        c.progress = ProgressMode::kBusy;
      } else if (val == "adaptive" || val == "thread") {
        c.progress = ProgressMode::kAdaptive;
      } else if (val == "inline") {
        c.progress = ProgressMode::kInline;
      } else {
        ok = false;
      }
    } else if (key == "spin_us") {
      ok = parse_num(val, &c.spin_us);
    } else if (key == "idle_us") {
      ok = parse_num(val, &c.idle_us) && c.idle_us > 0;
    } else if (key == "node") {
      ok = parse_num(val, &c.node);
    } else if (key == "cc") {
      const auto m = rc::parse_cc_mode(val);
      ok = m.has_value();
      if (ok) c.cc = *m;
    } else if (key == "retry_time_ms") {
      ok = parse_num(val, &c.retry_time_ms) && c.retry_time_ms > 0 && c.retry_time_ms <= 3'600'000;
    } else if (key == "rdmacm_timeout_ms") {
      ok = parse_num(val, &c.rdmacm_timeout_ms) && c.rdmacm_timeout_ms <= 3'600'000;
    } else if (key == "rto_min_us") {
      ok = parse_num(val, &c.rto_min_us) && c.rto_min_us > 0 && c.rto_min_us <= 1'000'000;
    } else if (key == "tlp_min_us") {
      ok = parse_num(val, &c.tlp_min_us) && c.tlp_min_us > 0 && c.tlp_min_us <= 1'000'000;
    } else if (key == "cc_line_gbps") {
      ok = parse_num(val, &c.cc_line_gbps) && c.cc_line_gbps > 0 && c.cc_line_gbps <= 100'000;
    } else if (key == "max_eps") {
      ok = parse_num(val, &c.max_eps) && c.max_eps > 0 && c.max_eps <= (1u << 20);
    } else if (key == "max_lmrs") {
      ok = parse_num(val, &c.max_lmrs) && c.max_lmrs > 0 && c.max_lmrs <= (1u << 23);
    } else if (key == "max_rmrs") {
      ok = parse_num(val, &c.max_rmrs) && c.max_rmrs > 0 && c.max_rmrs <= (1u << 23);
    } else if (key == "max_evds") {
      ok = parse_num(val, &c.max_evds) && c.max_evds > 0 && c.max_evds <= (1u << 24);
    } else if (key == "max_pzs") {
      ok = parse_num(val, &c.max_pzs) && c.max_pzs > 0 && c.max_pzs <= (1u << 24);
    } else if (key == "max_pending_crs") {
      ok = parse_num(val, &c.max_pending_crs) && c.max_pending_crs > 0;
    } else if (key == "max_pending_crs_per_sp") {
      ok = parse_num(val, &c.max_pending_crs_per_sp) && c.max_pending_crs_per_sp > 0;
    } else if (key == "engines") {
      ok = parse_num(val, &c.engines) && c.engines >= 1 && c.engines <= kMaxEngines;
    } else if (key == "cpus") {
      ok = parse_cpu_list(val, &c.cpus);
    } else if (key == "max_key_refusals_per_peer") {
      ok = parse_num(val, &c.max_key_refusals_per_peer) && c.max_key_refusals_per_peer > 0;
    } else if (key == "max_pending_crs_per_peer") {
      ok = parse_num(val, &c.max_pending_crs_per_peer) && c.max_pending_crs_per_peer > 0;
    } else if (key == "gbn") {
      ok = val == "0" || val == "1";
      c.gbn = val == "1";
    } else {
      *err = "unknown key '" + std::string(key) + "'";
      return false;
    }
    if (!ok) {
      *err = "bad value for '" + std::string(key) + "': '" + std::string(val) + "'";
      return false;
    }
  }
  const int sources =
      (c.vdev.empty() ? 0 : 1) + (c.port.empty() ? 0 : 1) + (c.ring_end >= 0 ? 1 : 0);
  if (sources != 1) {
    *err = "exactly one of vdev=, port=, ring= is needed";
    return false;
  }
  if (!c.cpus.empty() && c.cpus.size() < c.engines) {
    *err = "cpus= names " + std::to_string(c.cpus.size()) + " CPUs for " +
           std::to_string(c.engines) + " engines";
    return false;
  }
  if (c.ip == 0) {
    *err = "ip= is needed";
    return false;
  }
  if (c.node == 0) c.node = c.ip & 0xFFFFu;  // RSM node id: low half of the address
  *out = std::move(c);
  return true;
}

bool resolve_ia(std::string_view name, std::string_view given, IfaceConfig* out, std::string* err,
                std::string* source) {
  out->name = std::string(name);
  auto use = [&](std::string_view text, std::string from) {
    if (source != nullptr) *source = std::move(from);
    return parse_iface_config(text, out, err);
  };
  if (!given.empty()) return use(given, "given");
  if (auto e = find_ia(name)) return use(e->text, std::move(e->source));
  *err = "unknown IA name '" + std::string(name) + "'";
  return false;
}

std::optional<IaEntry> find_ia(std::string_view name) {
  const std::string n(name);
  if (auto env = settings::ia_config(name)) return IaEntry{n, settings::ia_var(name), *env};
  const std::string path = conf_path();
  for (auto& l : conf_lines(read_file(path)))
    if (l.name == name && !l.text.empty())
      return IaEntry{n, path + ":" + std::to_string(l.line), std::move(l.text)};
  for (const auto& b : kBuiltin)
    if (name == b[0]) return IaEntry{n, kBuiltinSource, b[1]};
  return std::nullopt;
}

bool lookup_ia(std::string_view name, IfaceConfig* out, std::string* err) {
  return resolve_ia(name, {}, out, err);
}

std::vector<std::string> list_ia_names() {
  std::vector<std::string> names;
  auto add = [&names](const std::string& n) {
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  };
  for (const auto& b : kBuiltin) add(b[0]);
  for (const auto& e : parse_conf_text(read_file(conf_path()))) add(e.first);
  for (const auto& [var, value] : settings::ia_vars()) add(name_of_var(var));
  return names;
}

}  // namespace dpdat::dat
