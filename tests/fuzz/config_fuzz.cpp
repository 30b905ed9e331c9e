// libFuzzer target for the interface configuration parser (dat_core/config):
// the configuration string of DPDAT_IA_<NAME>, of a DPDAT_CONF line and of a
// DAT 2.0 dat.conf entry's ia_params (all parse_iface_config()), the
// DPDAT_CONF file's lines (parse_conf_text()), and the lookup of an IA name
// through the environment, the file and the built-ins (lookup_ia(),
// list_ia_names()): the input, split at 0x01 bytes, gives an IA name, the
// value of its DPDAT_IA_<NAME> variable and the DPDAT_CONF file's text.
//
// Invariants: nothing thrown past the API, no crash or UB; a refusal says
// why; an accepted configuration satisfies the documented constraints
// (exactly one source, an address, valid MTUs) and, written back as a
// configuration string, parses to the same configuration.
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

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
       ";node=" + std::to_string(c.node) + ";retry_time_ms=" + std::to_string(c.retry_time_ms);
  return s;
}

bool same(const IfaceConfig& a, const IfaceConfig& b) {
  return a.name == b.name && a.vdev == b.vdev && a.port == b.port && a.ring_end == b.ring_end &&
         a.ip == b.ip && a.mtu == b.mtu && a.pmtu == b.pmtu && a.neighbors == b.neighbors &&
         a.loss == b.loss && a.cm_drops == b.cm_drops && a.progress == b.progress &&
         a.spin_us == b.spin_us && a.idle_us == b.idle_us && a.node == b.node &&
         a.retry_time_ms == b.retry_time_ms;
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
  check(c.retry_time_ms >= 1 && c.retry_time_ms <= 3'600'000);
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

const char* const kBuiltins[] = {"dpdat0", "dpdat1"};

// The variable lookup_ia reads for `name` (config.hpp: the name upper-cased,
// '-' as '_'); names are drawn from [a-z0-9_-].
std::string env_of(const std::string& name) {
  std::string n = "DPDAT_IA_";
  for (char ch : name) n.push_back(ch == '-' ? '_' : static_cast<char>(std::toupper(ch)));
  return n;
}

// An IA name from fuzz bytes: letters, digits, '-' and '_' (what a user
// types), 1..16 of them; sometimes a built-in's name.
std::string ia_name(std::string_view b) {
  if (!b.empty() && (static_cast<uint8_t>(b[0]) & 7) == 0)
    return kBuiltins[static_cast<uint8_t>(b[0]) >> 7];
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string n;
  for (size_t i = 1; i < b.size() && n.size() < 16; ++i)
    n.push_back(kChars[static_cast<uint8_t>(b[i]) % (sizeof kChars - 1)]);
  return n.empty() ? "fi0" : n;
}

// lookup_ia() and list_ia_names() with DPDAT_IA_<NAME> = env (unset when
// empty) and DPDAT_CONF naming a file holding conf: the first source that
// has the name decides, as config.hpp orders them.
void lookup(const std::string& name, std::string_view env, std::string_view conf) {
  static const std::string path = "/tmp/dpdat-config-fuzz-" + std::to_string(getpid()) + ".conf";
  FILE* f = std::fopen(path.c_str(), "wb");
  check(f != nullptr);
  check(std::fwrite(conf.data(), 1, conf.size(), f) == conf.size());
  check(std::fclose(f) == 0);
  check(setenv("DPDAT_CONF", path.c_str(), 1) == 0);
  const std::string var = env_of(name);
  const std::string value(env);
  if (value.empty()) {
    check(unsetenv(var.c_str()) == 0);
  } else {
    check(setenv(var.c_str(), value.c_str(), 1) == 0);
  }
  // What the sources say, in order.
  const auto entries = parse_conf_text(conf);
  const std::string* text = nullptr;
  std::string builtin;
  if (!value.empty()) {
    text = &value;
  } else {
    for (const auto& [n, t] : entries)
      if (n == name) {
        text = &t;
        break;
      }
    if (text == nullptr && name == "dpdat0") builtin = "ring=0;ip=192.168.77.1";
    if (text == nullptr && name == "dpdat1") builtin = "ring=1;ip=192.168.77.2";
    if (!builtin.empty()) text = &builtin;
  }
  IfaceConfig got;
  std::string err;
  const bool ok = lookup_ia(name, &got, &err);
  if (text == nullptr) {
    check(!ok && !err.empty());
  } else {
    IfaceConfig want;
    want.name = name;
    std::string err2;
    const bool want_ok = parse_iface_config(*text, &want, &err2);
    check(ok == want_ok);
    check(ok ? same(got, want) && got.text == *text : err == err2);
  }
  // Every name of the file and the built-ins is listed, each once; the
  // variable's name is listed lower-cased.
  const std::vector<std::string> names = list_ia_names();
  for (size_t i = 0; i < names.size(); ++i)
    check(std::find(names.begin() + static_cast<std::ptrdiff_t>(i) + 1, names.end(), names[i]) ==
          names.end());
  auto listed = [&names](const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  for (const auto& e : entries) check(listed(e.first));
  for (const char* b : kBuiltins) check(listed(b));
  if (!value.empty()) {
    std::string lower = var.substr(9);
    for (char& ch : lower) ch = static_cast<char>(std::tolower(ch));
    check(listed(lower));
  }
  check(unsetenv(var.c_str()) == 0);
}

void run(std::string_view in) {
  // name \x01 variable value \x01 file text (the variable holds no NUL).
  {
    const size_t a = in.find('\x01');
    const size_t b = a == std::string_view::npos ? a : in.find('\x01', a + 1);
    if (b != std::string_view::npos) {
      std::string_view env = in.substr(a + 1, b - a - 1);
      env = env.substr(0, env.find('\0'));
      lookup(ia_name(in.substr(0, a)), env, in.substr(b + 1));
    }
  }
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
