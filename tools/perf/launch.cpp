#include "launch.hpp"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "config.hpp"
#include "settings/settings.hpp"

#ifndef DPDAT_DAT2_PLUGIN
#define DPDAT_DAT2_PLUGIN "libdaplodpdk.so.2"
#endif

namespace dpdat::perf {

std::string ia_config(const Options& o) {
  std::string c = "vdev=" + o.vdev + ";ip=" + o.ip;
  if (o.mtu != 0) c += ";mtu=" + std::to_string(o.mtu);
  if (o.pmtu != 0) c += ";pmtu=" + std::to_string(o.pmtu);
  if (!o.progress.empty()) c += ";progress=" + o.progress;
  if (!o.ia_params.empty()) c += ";" + o.ia_params;
  return c;
}

int exec_dat2(char** argv) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::string why;
  if (!ec) {
    const std::string sibling = (self.parent_path() / "dpdat-perf-dat2").string();
    execv(sibling.c_str(), argv);
    why = sibling + ": " + std::strerror(errno);
  }
  execvp("dpdat-perf-dat2", argv);
  std::fprintf(stderr,
               "dpdat-perf: atomics run over DAT 2.0 in dpdat-perf-dat2, which cannot be "
               "started (%s; on PATH: %s); it is built where libdat2 is installed "
               "(Debian libdapl-dev)\n",
               why.c_str(), std::strerror(errno));
  return 1;
}

namespace {

// The configuration of IA `name` in one process, as the configuration
// module resolves it ("" when unknown).
std::string local_config(const std::string& name, const Options& o) {
  const auto e = dat::find_ia(name);
  std::string cfg = e ? e->text : "";
  if (!cfg.empty() && !o.progress.empty()) cfg += ";progress=" + o.progress;
  return cfg;
}

}  // namespace

bool dat2_registry(const Options& o, std::string* path, std::string* err) {
  path->clear();
  if (settings::is_set(settings::Var::kDatOverride)) return true;  // the user's registry
  std::string plugin = DPDAT_DAT2_PLUGIN;
  if (!std::filesystem::exists(plugin)) plugin = "libdaplodpdk.so.2";  // the loader's search
  std::string text;
  auto entry = [&](const std::string& name, const std::string& cfg) {
    text += name + " u2.0 nonthreadsafe default " + plugin + " dapl.2.0 \"" + cfg + "\" \"\"\n";
  };
  if (o.remote()) {
    entry("perf", ia_config(o));
  } else {
    for (const std::string& name : {o.ia_a, o.ia_b}) {
      const std::string cfg = local_config(name, o);
      if (cfg.empty() || cfg.find('"') != std::string::npos) {
        *err = "IA " + name + " has no configuration: set " + settings::ia_var(name) +
               ", add it to " + dat::conf_path() + " or set DAT_OVERRIDE";
        return false;
      }
      entry(name, cfg);
    }
  }
  char tmpl[] = "/tmp/dpdat-perf-dat.conf.XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd < 0) {
    *err = std::string("cannot create a dat.conf: ") + std::strerror(errno);
    return false;
  }
  *path = tmpl;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (close(fd) != 0 || !ok) {
    *err = "cannot write " + *path;
    return false;
  }
  setenv("DAT_OVERRIDE", path->c_str(), 1);
  return true;
}

}  // namespace dpdat::perf
