// The interface configuration's congestion-control keys (config.hpp): cc=
// picks the mode of every queue pair the interface creates, cc_line_gbps=
// DCQCN's line rate; bad values are refused naming the key.
#include <gtest/gtest.h>

#include <string>

#include "config.hpp"

namespace dpdat::dat {
namespace {

IfaceConfig parse_ok(const std::string& text) {
  IfaceConfig c;
  std::string err;
  EXPECT_TRUE(parse_iface_config(text, &c, &err)) << text << ": " << err;
  return c;
}

TEST(ProtoCcConfig, DefaultIsBothAt100Gbps) {
  const IfaceConfig c = parse_ok("ring=0;ip=10.9.0.1");
  EXPECT_EQ(c.cc, rc::CcMode::kBoth);
  EXPECT_EQ(c.cc_line_gbps, 100u);
}

TEST(ProtoCcConfig, EveryModeByName) {
  EXPECT_EQ(parse_ok("ring=0;ip=10.9.0.1;cc=off").cc, rc::CcMode::kOff);
  EXPECT_EQ(parse_ok("ring=0;ip=10.9.0.1;cc=dcqcn").cc, rc::CcMode::kDcqcn);
  EXPECT_EQ(parse_ok("ring=0;ip=10.9.0.1;cc=delay").cc, rc::CcMode::kDelay);
  EXPECT_EQ(parse_ok("ring=0;ip=10.9.0.1;cc=both").cc, rc::CcMode::kBoth);
  EXPECT_EQ(parse_ok("ring=0;ip=10.9.0.1;cc_line_gbps=25").cc_line_gbps, 25u);
}

TEST(ProtoCcConfig, BadValuesAreRefusedByName) {
  for (const char* bad :
       {"cc=fast", "cc=", "cc=DCQCN", "cc_line_gbps=0", "cc_line_gbps=x", "cc_line_gbps=100001"}) {
    IfaceConfig c;
    std::string err;
    EXPECT_FALSE(parse_iface_config(std::string("ring=0;ip=10.9.0.1;") + bad, &c, &err)) << bad;
    EXPECT_NE(err.find(std::string(bad).substr(0, std::string(bad).find('='))), std::string::npos)
        << err;
  }
}

// The recovery timers' floors: defaults, values, refusals by name.
TEST(ProtoCcConfig, TimerFloorsParse) {
  const IfaceConfig d = parse_ok("ring=0;ip=10.9.0.1");
  EXPECT_EQ(d.rto_min_us, 1000u);
  EXPECT_EQ(d.tlp_min_us, 100u);
  const IfaceConfig c = parse_ok("ring=0;ip=10.9.0.1;rto_min_us=800;tlp_min_us=150");
  EXPECT_EQ(c.rto_min_us, 800u);
  EXPECT_EQ(c.tlp_min_us, 150u);
  for (const char* bad : {"rto_min_us=0", "rto_min_us=1000001", "tlp_min_us=0", "tlp_min_us=x"}) {
    IfaceConfig x;
    std::string err;
    EXPECT_FALSE(parse_iface_config(std::string("ring=0;ip=10.9.0.1;") + bad, &x, &err)) << bad;
    EXPECT_NE(err.find(std::string(bad).substr(0, std::string(bad).find('='))), std::string::npos)
        << err;
  }
}

}  // namespace
}  // namespace dpdat::dat
