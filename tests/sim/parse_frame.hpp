#pragma once
// A frame the simulated link carries, parsed for a test's link filter: every
// frame the engines send must parse.

#include <gtest/gtest.h>

#include <cstdint>
#include <span>

#include "wire/packet.hpp"

namespace dpdat::rc::test {

inline wire::PacketView parse(const uint8_t* data, uint32_t len) {
  wire::PacketView v;
  EXPECT_EQ(wire::parse_packet(std::span<const uint8_t>(data, len),
                               wire::ParseOptions{.pmtu = 4096, .full_segments = false}, v),
            wire::Reject::kNone);
  return v;
}

}  // namespace dpdat::rc::test
