#pragma once
// dat_core's seam to the network.  An interface (Iface) reaches its link
// only through a Link: packet I/O bursts for its RC engine, its own MAC and
// IPv4 address, neighbour resolution, the path MTU the link carries, and
// optionally a way to sleep until a frame arrives.  The clock of every
// interface comes from the same place.  dat_core itself never sees DPDK: a
// LinkFactory, installed by whatever links dat_core, opens the links.
//   - link_dpdk/link_factory: DPDK ethdev ports (EAL bootstrap,
//     net_ring / vdev / probed ports, ARP, the TSC clock); libdat.so, the
//     DAT 2.0 plug-in (and through libdat, librsm) install it when loaded.
//   - tests/proto/sim_factory: the deterministic simulated link (sim/sim_link)
//     with seeded impairments, so the DAT objects, the connection manager and
//     progress run in tests without EAL.

#include <cstdint>
#include <memory>
#include <string>

#include "config.hpp"
#include "rc/engine/packet_io.hpp"
#include "wire/headers.hpp"

namespace dpdat::rc {
class Engine;
}

namespace dpdat::dat {

// One interface's link.  Each queue's packet I/O is used by one thread at a
// time (the holder of that queue's engine token); the rest by the control
// path (the interface lock), except wake(), which any thread may call.
class Link {
 public:
  virtual ~Link() = default;

  // The packet I/O the interface's first RC engine runs on (lives as long as
  // the Link): queue 0.
  virtual rc::PacketIo& io() = 0;
  // RX/TX queue pairs the link was opened with (IfaceConfig::engines, or
  // fewer when the device allows fewer); engine i runs on io(i).  A frame may
  // arrive on any queue (the link steers by destination where it can, see
  // rx_steered()); an engine hands frames for another engine's queue pairs to
  // it (rc::EngineGroup).
  virtual uint32_t queues() const { return 1; }
  virtual rc::PacketIo& io(uint32_t q) {
    (void)q;
    return io();
  }
  virtual const wire::MacAddr& mac() const = 0;
  virtual uint32_t ip() const = 0;  // host byte order
  // Largest RoCE path MTU (IBA sizes 256..4096) the link's MTU carries.
  virtual uint32_t max_pmtu() const = 0;
  // Why the link's MTU is not the one configured, and what bounds it ("" when
  // it is); dat_ia_open's refusal of a pmtu= the link cannot carry says it.
  virtual std::string mtu_note() const { return {}; }

  // Neighbours.  resolve() answers from the link's cache; on a miss it asks
  // the network (an ARP request on DPDK, at most one per call) and returns
  // false: call again later.
  virtual void add_neighbor(uint32_t ip, const wire::MacAddr& mac) = 0;
  virtual bool resolve(uint32_t ip, wire::MacAddr* mac) = 0;

  // Frames the link looped back to this interface itself (a frame to its
  // own address never goes on the wire: dpdk::Port's software loopback),
  // received so far.  Statistics only.
  virtual uint64_t looped_frames() const { return 0; }

  // Whether the link is up now (DPDK: the port's link status, without
  // waiting; a port whose link was never up yet counts as up).  The
  // interface asks every kLinkPollNs (cm.hpp) from its housekeeping and
  // tells the IAs that asked (ia_link_events) of each change.
  virtual bool link_up() const { return true; }

  // Sleeping until traffic.  rx_wakeups(): whether wait_rx() returns when a
  // frame arrives (RX interrupts, the simulated link's signal); otherwise
  // wait_rx() returns at once and the caller's sleep must stay bounded.
  // wait_rx() returns when a frame may be waiting on io(), wake() was
  // called, or timeout_ns passed (spurious returns are allowed).
  virtual bool rx_wakeups() const { return false; }
  virtual void wait_rx(uint64_t timeout_ns) { (void)timeout_ns; }
  virtual void wake() {}

  // Called once on each thread before it drives the link: a progress thread,
  // or a consumer's thread the first time it drives an engine (DPDK:
  // registers it with the EAL, so its mbuf allocations use a per-lcore
  // mempool cache instead of the shared ring; idempotent).
  virtual void register_thread() {}

  // Told once per engine, when it exists (DPDK: telemetry lists it under
  // /dpdat/engine,<name> for engine 0 and <name>.<index> for the others).
  // The engines go before their Link does.
  virtual void engine_created(const rc::Engine& engine, uint32_t index) {
    (void)engine;
    (void)index;
  }
};

// Why a link did not open.
enum class LinkError : uint8_t {
  kNone,
  kNotFound,  // the device the configuration names does not exist
  kDevice,    // it exists (or could be made) but could not be set up
};

struct LinkFactory {
  const char* name;  // "dpdk", "sim": for messages
  // Opens the link `cfg` describes (vdev= / port= / ring= / ip= / mtu= /
  // loss=), or nullptr with *err and *why saying why.
  std::unique_ptr<Link> (*open)(const IfaceConfig& cfg, LinkError* err, std::string* why);
  // Monotonic nanoseconds: the clock of every interface's engine, connection
  // manager and waits.  Callable from any thread, before any link is open.
  uint64_t (*now_ns)();
};

// Installs the factory interfaces are opened with from now on (nullptr:
// none).  The factory must live for the process (a static object).  Safe
// from a static initialiser: the slot is constant-initialised.
void set_link_factory(const LinkFactory* f);
const LinkFactory* link_factory();

// The clock of every interface: the installed factory's now_ns, or
// steady_clock in nanoseconds (steady_now_ns) while none is installed.
uint64_t now_ns();
uint64_t steady_now_ns();

}  // namespace dpdat::dat
