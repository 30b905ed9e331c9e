// The configuration module's resolution of interface names: a configuration
// handed over with the name (a DAT 2.0 dat.conf line's instance data) beats
// DPDAT_IA_<NAME>, which beats the DPDAT_CONF file, which beats the
// built-ins (dpdat.conf(5)); the first source gives the whole string.  And
// the environment reader under it (settings.hpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dat_core/config.hpp"
#include "settings/settings.hpp"

namespace {

using dpdat::dat::IfaceConfig;
namespace settings = dpdat::settings;
using settings::Var;

std::string ipv4(uint32_t ip) {
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 255) + "." +
         std::to_string((ip >> 8) & 255) + "." + std::to_string(ip & 255);
}

// Sets environment variables for one test and restores them after it.
class ConfigResolve : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/dpdat-config-test-" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    // Nothing of the user's: an empty interface file and registry.
    set("DPDAT_CONF", write("empty.conf", ""));
    set("DAT_OVERRIDE", write("empty-dat.conf", ""));
    unset("DPDAT_IA_DPDAT0");
    unset("DPDAT_IA_MY_IF_X");
  }
  void TearDown() override {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->had)
        setenv(it->name.c_str(), it->value.c_str(), 1);
      else
        unsetenv(it->name.c_str());
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void save(const std::string& name) {
    const char* v = std::getenv(name.c_str());
    saved_.push_back({name, v != nullptr, v != nullptr ? v : ""});
  }
  void set(const std::string& name, const std::string& value) {
    save(name);
    setenv(name.c_str(), value.c_str(), 1);
  }
  void unset(const std::string& name) {
    save(name);
    unsetenv(name.c_str());
  }
  std::string write(const std::string& file, const std::string& text) {
    const std::string path = dir_ + "/" + file;
    std::ofstream(path) << text;
    return path;
  }

  struct Saved {
    std::string name;
    bool had;
    std::string value;
  };
  std::vector<Saved> saved_;
  std::string dir_;
};

TEST_F(ConfigResolve, GivenBeatsEnvironmentBeatsFileBeatsBuiltIn) {
  const std::string conf = write("dpdat.conf", "# comment\ndpdat0 ring=0;ip=10.0.0.3\n");
  set("DPDAT_CONF", conf);
  set("DPDAT_IA_DPDAT0", "ring=0;ip=10.0.0.2");
  IfaceConfig c;
  std::string err, source;
  ASSERT_TRUE(dpdat::dat::resolve_ia("dpdat0", "ring=0;ip=10.0.0.1", &c, &err, &source)) << err;
  EXPECT_EQ(ipv4(c.ip), "10.0.0.1");
  EXPECT_EQ(source, "given");
  EXPECT_EQ(c.name, "dpdat0");
  // Nothing given: the environment.
  ASSERT_TRUE(dpdat::dat::resolve_ia("dpdat0", "", &c, &err, &source)) << err;
  EXPECT_EQ(ipv4(c.ip), "10.0.0.2");
  EXPECT_EQ(source, "DPDAT_IA_DPDAT0");
  // An empty variable counts as unset: the file (line 2).
  set("DPDAT_IA_DPDAT0", "");
  ASSERT_TRUE(dpdat::dat::resolve_ia("dpdat0", "", &c, &err, &source)) << err;
  EXPECT_EQ(ipv4(c.ip), "10.0.0.3");
  EXPECT_EQ(source, conf + ":2");
  // No file entry: the built-in.
  set("DPDAT_CONF", write("other.conf", "other ring=1;ip=10.0.0.9\n"));
  ASSERT_TRUE(dpdat::dat::lookup_ia("dpdat0", &c, &err)) << err;
  EXPECT_EQ(ipv4(c.ip), "192.168.77.1");
  ASSERT_TRUE(dpdat::dat::resolve_ia("dpdat0", "", &c, &err, &source)) << err;
  EXPECT_EQ(source, "built-in");
}

TEST_F(ConfigResolve, TheFirstSourceGivesTheWholeString) {
  // Keys are not merged: the environment's string has no mtu=, the file's
  // mtu=9000 does not apply.
  set("DPDAT_CONF", write("dpdat.conf", "dpdat0 ring=0;ip=10.0.0.3;mtu=9000\n"));
  set("DPDAT_IA_DPDAT0", "ring=0;ip=10.0.0.2");
  IfaceConfig c;
  std::string err;
  ASSERT_TRUE(dpdat::dat::lookup_ia("dpdat0", &c, &err)) << err;
  EXPECT_EQ(c.mtu, 1500);
  // A bad string in the first source is an error, not a fall-through.
  set("DPDAT_IA_DPDAT0", "ring=0;ip=10.0.0.2;bogus=1");
  EXPECT_FALSE(dpdat::dat::lookup_ia("dpdat0", &c, &err));
  EXPECT_NE(err.find("bogus"), std::string::npos) << err;
}

TEST_F(ConfigResolve, NamesMapToTheirVariableAndUnknownNamesFail) {
  EXPECT_EQ(settings::ia_var("my-if.x"), "DPDAT_IA_MY_IF_X");
  set("DPDAT_IA_MY_IF_X", "ring=1;ip=10.0.0.5");
  IfaceConfig c;
  std::string err;
  ASSERT_TRUE(dpdat::dat::lookup_ia("my-if.x", &c, &err)) << err;
  EXPECT_EQ(ipv4(c.ip), "10.0.0.5");
  const auto names = dpdat::dat::list_ia_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "my_if_x"), names.end());
  EXPECT_FALSE(dpdat::dat::lookup_ia("nowhere", &c, &err));
  EXPECT_NE(err.find("unknown IA name 'nowhere'"), std::string::npos) << err;
}

TEST_F(ConfigResolve, EntriesListEverySourceInOrderWithLines) {
  const std::string conf =
      write("dpdat.conf", "# c\n\nfile0 ring=0;ip=10.0.0.3\nnoconfig\ndpdat1 ring=1;ip=10.0.0.4\n");
  set("DPDAT_CONF", conf);
  set("DPDAT_IA_DPDAT0", "ring=0;ip=10.0.0.2");
  const auto entries = dpdat::dat::ia_entries();
  std::vector<std::string> seen;
  for (const auto& e : entries)
    if (e.source.rfind("DPDAT_IA_DPDAT0", 0) == 0 || e.source.rfind(conf, 0) == 0 ||
        e.source == "built-in")
      seen.push_back(e.name + "@" + e.source + "=" + e.text);
  const std::vector<std::string> want = {
      "dpdat0@DPDAT_IA_DPDAT0=ring=0;ip=10.0.0.2",
      "file0@" + conf + ":3=ring=0;ip=10.0.0.3",
      "noconfig@" + conf + ":4=",
      "dpdat1@" + conf + ":5=ring=1;ip=10.0.0.4",
      "dpdat0@built-in=ring=0;ip=192.168.77.1",
      "dpdat1@built-in=ring=1;ip=192.168.77.2",
  };
  EXPECT_EQ(seen, want);
  // The line without a configuration is listed but resolves to nothing.
  IfaceConfig c;
  std::string err;
  EXPECT_FALSE(dpdat::dat::lookup_ia("noconfig", &c, &err));
  EXPECT_EQ(dpdat::dat::conf_path(), conf);
}

TEST_F(ConfigResolve, Dat2RegistryLinesOfThePlugIn) {
  const std::string reg = write(
      "dat.conf",
      "ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"ib0 0\" \"\"\n"
      "# dpdat-x u2.0 nonthreadsafe default libdaplodpdk.so.2 dapl.2.0 \"ring=0\" \"\"\n"
      "dpdat-a u2.0 nonthreadsafe default libdaplodpdk.so.2 dapl.2.0 \"ring=0;ip=10.0.0.7\" \"\"\n"
      "dpdat0 u2.0 nonthreadsafe default libdaplodpdk.so.2 dapl.2.0 \"\" \"\"\n");
  set("DAT_OVERRIDE", reg);
  const auto e = dpdat::dat::dat2_entries();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].name, "dpdat-a");
  EXPECT_EQ(e[0].text, "ring=0;ip=10.0.0.7");
  EXPECT_EQ(e[0].source, reg + ":3 (DAT 2.0)");
  EXPECT_EQ(e[1].name, "dpdat0");
  EXPECT_EQ(e[1].text, "");
}

TEST_F(ConfigResolve, SettingsTreatEmptyAsUnsetAndZeroAsOff) {
  unset("DPDAT_FI_STATS");
  EXPECT_FALSE(settings::is_set(Var::kFiStats));
  EXPECT_FALSE(settings::on(Var::kFiStats));
  unset("DPDAT_FI_IA");
  EXPECT_EQ(settings::get_or(Var::kFiIa, "fi%r"), "fi%r");
  set("DPDAT_FI_IA", "mine");
  EXPECT_EQ(settings::get_or(Var::kFiIa, "fi%r"), "mine");
  set("DPDAT_FI_STATS", "");
  EXPECT_TRUE(settings::is_set(Var::kFiStats));
  EXPECT_FALSE(settings::get(Var::kFiStats).has_value());
  EXPECT_FALSE(settings::on(Var::kFiStats));
  set("DPDAT_FI_STATS", "0");
  EXPECT_FALSE(settings::on(Var::kFiStats));
  set("DPDAT_FI_STATS", "1");
  EXPECT_TRUE(settings::on(Var::kFiStats));
  // Every variable has its name and meaning, in Var order.
  for (size_t i = 0; i < static_cast<size_t>(Var::kCount); ++i) {
    EXPECT_EQ(static_cast<size_t>(settings::kVars[i].var), i);
    EXPECT_NE(std::string(settings::kVars[i].name), "");
    EXPECT_NE(std::string(settings::kVars[i].meaning), "");
  }
}

// rdma_cm's connect timeout: off by default, milliseconds up to an hour.
TEST(ConfigKeys, RdmacmTimeoutMs) {
  IfaceConfig c;
  std::string err;
  ASSERT_TRUE(dpdat::dat::parse_iface_config("ring=0;ip=10.9.0.1", &c, &err)) << err;
  EXPECT_EQ(c.rdmacm_timeout_ms, 0u);
  ASSERT_TRUE(dpdat::dat::parse_iface_config("ring=0;ip=10.9.0.1;rdmacm_timeout_ms=1500", &c, &err))
      << err;
  EXPECT_EQ(c.rdmacm_timeout_ms, 1500u);
  for (const char* bad :
       {"rdmacm_timeout_ms=3600001", "rdmacm_timeout_ms=x", "rdmacm_timeout_ms="}) {
    IfaceConfig x;
    EXPECT_FALSE(dpdat::dat::parse_iface_config(std::string("ring=0;ip=10.9.0.1;") + bad, &x, &err))
        << bad;
    EXPECT_NE(err.find("rdmacm_timeout_ms"), std::string::npos) << err;
  }
}

}  // namespace
