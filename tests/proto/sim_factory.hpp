#pragma once
// dat_core's link seam (dat_core/link.hpp) over the deterministic simulated
// link (sim/sim_link.hpp): the configurations ring=0 and ring=1 (the built-in
// IA names dpdat0 / dpdat1 among them) are the two ends of one simulated
// wire in this process, so the DAT objects, the connection manager and
// progress run without EAL, hugepages or DPDK.
//   - loss=<p> in an end's configuration: that fraction of the frames it
//     receives is lost (seeded by the wire's seed);
//   - neighbour resolution answers like ARP: the first lookup of the other
//     end's address misses (a request "on the wire"), the next one hits;
//     addresses nobody holds never resolve;
//   - an end talks to itself: its own address resolves to its own MAC at
//     once, and frames to that MAC come back on its own receive queue
//     (SimLink::loop_back), as dpdk::Port's software loopback does;
//   - wait_rx() sleeps until the other end sends (rx_wakeups() is true);
//   - the clock is steady_clock.
// The wire's lock serialises every call into the SimLink, so interfaces
// driven by different threads (a progress thread, a consumer) share it safely.

#include <cstdint>
#include <functional>

#include "link.hpp"
#include "sim/sim_link.hpp"

namespace dpdat::proto {

class SimWire {
 public:
  // Runs fn(link) under the wire's lock: impairments, filters, capture,
  // statistics.  fn must not call into dat_core.
  void with_link(const std::function<void(rc::SimLink&)>& fn);
  // Back to a clean wire: no impairments, no filter, no capture (the open
  // ends' loss= settings are applied again), both ends' links up.
  void reset();
  // What end 0 or 1 reports as its link's state (Link::link_up); frames
  // still flow either way.
  void set_link_up(int end, bool up);
  // Moves the interfaces' clock (the factory's now_ns) on by `ns`, for good:
  // timers far away fire without the test waiting for them.
  void advance_clock(uint64_t ns);
};

// Installs the simulated-link factory (dat::set_link_factory) with a wire
// seeded by `seed`, made on the first call; later calls return the same wire.
SimWire& install_sim_link(uint64_t seed = 1);

// The factory itself (for code that installs it on its own).
const dat::LinkFactory& sim_link_factory();

}  // namespace dpdat::proto
