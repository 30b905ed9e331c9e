#pragma once
// Interface configuration and the IA name registry.
//
// One configuration string describes one dpdat interface; the same string is
// what a DAT 2.0 dat.conf line carries as its instance data.  Keys are
// separated by ';' (a vdev's own arguments use ','):
//
//   vdev=<devargs>      a DPDK virtual device, e.g. net_memif0,role=server,socket=/tmp/m
//   port=<name>         an already probed ethdev whose name starts with <name>
//   ring=<0|1>          an end of the process's built-in net_ring link
//   ip=<a.b.c.d>        the interface's IPv4 address (required)
//   mtu=<n>             Ethernet MTU (default 1500; the PMD may refuse more)
//   pmtu=<n>            RoCE path MTU (256..4096, default: largest the MTU allows);
//                       dat_ia_open refuses one the link's MTU cannot carry
//   neighbor=<ip>@<mac> static ARP entry (repeatable), for links without broadcast
//   loss=<p>            seeded receive loss (fault injection for tests), 0..1
//   cm_drop=<msg>:<n>   the first n CM messages of kind <msg> (req, rep, rtu, rej,
//                       dreq, drep) this interface sends are lost (fault injection
//                       for tests; repeatable, one kind each)
//   progress=<busy|adaptive|inline>  passive-side progress (default adaptive;
//                       `thread` is an alias of adaptive): see ProgressMode
//   spin_us=<n>         adaptive: how long after the last traffic the progress
//                       thread keeps spinning before it backs off (default 1000)
//   idle_us=<n>         longest sleep of a backed-off progress thread (default 200)
//   node=<n>            RSMAPI node id (default: derived from ip)
//   cc=<both|dcqcn|delay|off>  congestion control of the interface's queue
//                       pairs (default both): DCQCN on CNPs (and CNPs sent for
//                       CE-marked packets received), a delay window on round
//                       trips, per-QP pacing; off: neither
//   cc_line_gbps=<n>    DCQCN's line rate, the rate a QP starts at and recovers
//                       to (default 100)
//   max_eps=<n>, max_lmrs=<n>, max_rmrs=<n>, max_evds=<n>, max_pzs=<n>
//                       limits of the interface (dat_ia_query reports them;
//                       defaults 65536, 1048576, 1048576, 131072, 65536)
//   max_pending_crs=<n>, max_pending_crs_per_sp=<n>, max_pending_crs_per_peer=<n>
//                       connection requests waiting for an answer at once, per
//                       interface / per PSP or RSP / per source IPv4 address
//                       (defaults 4096, 1024, 256); REQs beyond are rejected
//   max_key_refusals_per_peer=<n>
//                       remote keys the queue pairs may refuse to one source
//                       address within a second (default 64); past it, that
//                       address's REQs are rejected until the second ends
//   retry_time_ms=<n>   a queue pair whose requests go unanswered breaks after
//                       its retries and at least this long since the first
//                       timeout (default 1000; 1..3600000): what a peer's host
//                       may stall for before the connection is given up
//   rdmacm_timeout_ms=<n>  how long rdma_cm's rdma_connect waits for the peer's
//                       answer before RDMA_CM_EVENT_UNREACHABLE (default 0: the
//                       CM's own retries, about 12.5 s; 0..3600000)
//   rto_min_us=<n>      the least retransmission timeout (RFC 6298's SRTT +
//                       4 RTTVAR, never below this; default 1000, 1..1000000 us)
//   tlp_min_us=<n>      the least tail-loss probe timeout (2 SRTT, never below
//                       this; default 100, 1..1000000 us)
//   gbn=<0|1>           1: go-back-N recovery for every operation, as strict IBA
//                       peers expect (default 0: selective repeat, see
//                       rc::QpConfig::selective_repeat)
//   engines=<n>         protocol engines of the interface (1..16, default 1): each
//                       polls its own RX/TX queue of the link and owns the queue
//                       pairs placed on it for life (see Iface, shard.hpp); the
//                       link is opened with n queues (the PMD may allow fewer:
//                       then fewer engines run).  Both ends of net_ring and
//                       net_memif links need the same count.
//   cpus=<list>         CPUs of the engines' progress threads, one per engine in
//                       order (e.g. 2-5 or 2,4,6,8); a thread is pinned to its
//                       CPU, and an EP created on a thread running on one of
//                       these CPUs is placed on that CPU's engine
//
// IA names (dat_ia_open's first argument) resolve, in this order, from:
//   0. a configuration string handed over with the name (a DAT 2.0 dat.conf
//      line's instance data), when not empty,
//   1. the environment variable DPDAT_IA_<NAME> (name upper-cased, '-' and
//      '.' -> '_'),
//   2. the file named by DPDAT_CONF (default /etc/dpdat.conf): lines
//      "<name> <config string>", '#' comments,
//   3. the built-ins dpdat0 = "ring=0;ip=192.168.77.1" and
//      dpdat1 = "ring=1;ip=192.168.77.2": the two ends of the in-process link.
// The first source that names the IA gives its whole configuration string
// (keys are not merged across sources).  This module and settings.hpp (the
// environment) are the only readers of the configuration; the tools call
// them too (docs/config.md).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rc/cc/congestion_config.hpp"
#include "wire/cm.hpp"
#include "wire/headers.hpp"

namespace dpdat::dat {

// Who moves an interface when its consumer calls nothing (a passive RDMA
// target, a connection request arriving while the consumer sleeps).  In every
// mode a consumer that posts, polls or waits drives the interface itself.
enum class ProgressMode : uint8_t {
  kBusy,      // a progress thread busy-polls: dedicated cores, latency benchmarks
  kAdaptive,  // a progress thread spins while traffic is recent, then sleeps
  kInline,    // no thread: only consumer calls progress
};

struct IfaceConfig {
  std::string name;  // IA name
  std::string text;  // the configuration string as given
  std::string vdev;
  std::string port;
  int ring_end = -1;
  uint32_t ip = 0;  // host byte order
  uint16_t mtu = 1500;
  uint32_t pmtu = 4096;
  bool pmtu_given = false;  // pmtu= was in the string: the link must carry it
  std::vector<std::pair<uint32_t, wire::MacAddr>> neighbors;
  double loss = 0.0;
  std::vector<std::pair<wire::CmMsg, uint32_t>> cm_drops;  // kind, how many
  ProgressMode progress = ProgressMode::kAdaptive;
  uint32_t spin_us = 1000;
  uint32_t idle_us = 200;
  uint32_t node = 0;
  rc::CcMode cc = rc::CcMode::kBoth;
  uint32_t cc_line_gbps = 100;
  uint32_t retry_time_ms = 1000;
  uint32_t rdmacm_timeout_ms = 0;
  // Above a host's scheduling jitter: a lossless link sees no timeout, and a
  // lossy one loses nothing by it, the probes and the peer's NAKs finding
  // losses before a timeout is due (docs/engines.md has the figures).
  uint32_t rto_min_us = 1000;
  uint32_t tlp_min_us = 100;
  // Limits (0: the default of dat::Limits).
  uint32_t max_eps = 0, max_lmrs = 0, max_rmrs = 0, max_evds = 0, max_pzs = 0;
  uint32_t max_pending_crs = 0, max_pending_crs_per_sp = 0, max_pending_crs_per_peer = 0;
  uint32_t max_key_refusals_per_peer = 0;
  bool gbn = false;
  uint32_t engines = 1;
  std::vector<int> cpus;  // empty: threads not pinned
};

// Parses a CPU list ("2-5", "1,3,5", "0-1,4"): false on anything else, on a
// CPU above 1023 or on a repeated CPU.
bool parse_cpu_list(std::string_view s, std::vector<int>* out);

// Parses a configuration string.  False with *err naming the bad key.
bool parse_iface_config(std::string_view text, IfaceConfig* out, std::string* err);

// One definition of an IA name, and where it was found.
struct IaEntry {
  std::string name;
  std::string source;  // "DPDAT_IA_X", "/etc/dpdat.conf:3", "built-in", "/etc/dat.conf:2 (DAT 2.0)"
  std::string text;    // the configuration string ("" for a file line without one)
};

// Resolves an IA name in the order above, `given` first when not empty.
// False when the name is unknown or its configuration does not parse (*err
// says which); *source (when not null) names where the configuration came
// from.
bool resolve_ia(std::string_view name, std::string_view given, IfaceConfig* out, std::string* err,
                std::string* source = nullptr);

// The definition resolve_ia() uses for `name` when nothing is given (steps
// 1-3 above); nothing when the name is unknown.
std::optional<IaEntry> find_ia(std::string_view name);

// resolve_ia() with nothing given.
bool lookup_ia(std::string_view name, IfaceConfig* out, std::string* err);

// The entries of a DPDAT_CONF file's text, in file order: one
// "<name> <config string>" per line, blank lines and '#' comments skipped, a
// line without a blank after the name ignored.
std::vector<std::pair<std::string, std::string>> parse_conf_text(std::string_view text);

// The DPDAT_CONF file in use: DPDAT_CONF, else /etc/dpdat.conf.
std::string conf_path();

// Every definition of an IA name, in the order resolve_ia() looks (the
// environment, the DPDAT_CONF file, the built-ins): a name defined twice
// appears twice, the first one the one in use.  File lines without a
// configuration are included (with an empty text) so that tools can report
// them; resolve_ia() skips them.
std::vector<IaEntry> ia_entries();

// The lines of the DAT 2.0 registry (DAT_OVERRIDE, else /etc/dat.conf) whose
// library is dpdat's plug-in: name and instance data (empty: the name is
// resolved by resolve_ia()).
std::vector<IaEntry> dat2_entries();

// Every IA name the registry knows (built-ins, file entries, environment).
std::vector<std::string> list_ia_names();

bool parse_ipv4(std::string_view s, uint32_t* ip);
bool parse_mac(std::string_view s, wire::MacAddr* mac);

}  // namespace dpdat::dat
