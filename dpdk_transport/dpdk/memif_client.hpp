#pragma once
// The client end of a net_memif link connects to its server once, when its
// port starts, and DPDK 22.11 never tries again.  A server whose socket
// exists (bound when its device was probed) but whose port has not started
// yet answers the client's INIT with "ID not found" and drops the
// connection; a server still busy with an earlier connection answers
// "Already connected".  Either way both links stay down for good.  Two
// processes opening the two ends at once (the ranks of an MPI job) meet
// this whenever the server is slow between probe and start, as on a loaded
// machine: every frame is then refused (tx_full) and the job hangs.
//
// A client whose server's process has not probed its device yet finds no
// listener (no socket file yet, or a file nobody listens on) and fails to
// start at all; Port::open then waits here too.  Any other reason a client
// cannot start (its socket's directory missing, a path that is no socket,
// no permission to connect) fails the open at once (start_failure).
//
// await_link() waits after the client's port started until its link is up,
// stopping and starting the port (a fresh connection and handshake) each
// time a try did not bring it up; the tries grow from 250 ms to 2 s.  A
// connection still in the server's accept queue is never closed: the
// server would take it, fail to send its HELLO and leave a closed socket
// registered with the EAL interrupt thread, which then panics.

#include <cstdint>
#include <string>

namespace dpdat::dpdk::memif_client {

// How long a client waits for its server before its open fails.
inline constexpr uint64_t kConnectLimitMs = 20'000;

// Whether port_id is a net_memif device with role=client.
bool is_client(uint16_t port_id);

// Why the client port's rte_eth_dev_start failed, when a wait cannot cure it;
// empty when no server listens at its socket yet (the file absent from an
// existing directory, or a socket that nobody listens on): the server's
// process has not probed its device yet.  DPDK's memif client answers -1
// for every failed connect and keeps no errno, so the path is examined here
// (without connecting: a connection a server takes and the client then
// closes crashes the server's PMD, see await_link).
std::string start_failure(uint16_t port_id);

// Waits until the started client port's link is up, reconnecting as above;
// false (and why) when it is not up within limit_ms, or at once when a
// fresh start fails for a reason other than a missing listener.
bool await_link(uint16_t port_id, uint64_t limit_ms, std::string* err);

// Reconnections await_link made in this process (for tests and logs).
uint64_t reconnects();

}  // namespace dpdat::dpdk::memif_client
