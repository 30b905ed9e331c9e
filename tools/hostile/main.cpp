// dpdat-hostile: a hostile RoCEv2 peer.  It sends raw frames, built with
// dpdat's wire builder (valid ICRC), to a live dpdat process over a DPDK
// port (net_af_packet on a veth in the tests) and reports what the victim
// answered, one JSON object per attack.
//
// What it knows of the victim is what an attacker on the network has
// without sniffing: the victim's IPv4 address and service (connection
// qualifier), the honest peer's IPv4 address, and the QPN range dpdat hands
// out (it sweeps it).  Attacks that need a live connection make their own
// through the CM, as any client may, and learn the region the victim grants
// them from the REP's private data; what they then send breaks only that
// connection.  PSNs of connections it did not make are guessed.
//
//   dpdat-hostile --vdev net_af_packet0,iface=h-c --ip 10.79.0.3
//                 --victim 10.79.0.1 --honest 10.79.0.2 [--attacks a,b,...]
// Exit 0 when every attack ran (its verdicts are in the JSON), 1 when one
// could not run (e.g. no connection to the victim), 2 on a bad command line.

#include <arpa/inet.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "dpdk/eal.hpp"
#include "raw_peer.hpp"

namespace dpdat::hostile {
namespace {

using nlohmann::json;
using wire::Opcode;
namespace aeth = wire::aeth;

double us(uint64_t ns) { return static_cast<double>(ns) / 1e3; }

std::string answer_name(const Answer& a) {
  switch (a.kind) {
    case Answer::kNone:
      return "none";
    case Answer::kAck:
      return "ack";
    case Answer::kRnr:
      return "rnr-nak";
    case Answer::kReadData:
      return "read-data";
    case Answer::kAtomicAck:
      return "atomic-ack";
    case Answer::kNak:
      switch (a.nak_code) {
        case aeth::kNakPsnSeqError:
          return "nak-psn-sequence-error";
        case aeth::kNakInvalidRequest:
          return "nak-invalid-request";
        case aeth::kNakRemoteAccessError:
          return "nak-remote-access-error";
        case aeth::kNakRemoteOperationalError:
          return "nak-remote-operational-error";
        default:
          return "nak-" + std::to_string(a.nak_code);
      }
  }
  return "?";
}

struct Options {
  std::string vdev, ip, victim, honest, spoof = "10.79.0.99";
  uint64_t service = 4791;
  uint32_t qpn_lo = 0x11, qpn_span = 128, guesses = 16, flood = 64;
  uint64_t seed = 0;  // 0: from std::random_device
  std::vector<std::string> attacks;
};

class Attacks {
 public:
  Attacks(RawPeer& p, const Options& o, uint32_t honest_ip, uint32_t spoof_ip)
      : p_(p), o_(o), honest_ip_(honest_ip), spoof_ip_(spoof_ip) {}

  // An RC request on `c` at PSN `psn` (default: the expected one).
  wire::BuildSpec req(const Conn& c, Opcode op, uint32_t psn) {
    wire::BuildSpec s;
    s.opcode = op;
    s.dest_qp = c.victim_qpn;
    s.psn = wire::Psn(psn);
    s.ack_req = true;
    s.src_port = static_cast<uint16_t>(0xC000u | (c.my_qpn & 0x3FFFu));
    return s;
  }
  bool connect(Conn* c, json* out) {
    std::string why;
    const uint64_t t0 = now_ns();
    if (!p_.connect(c, 3000, &why)) {
      (*out)["error"] = "could not connect: " + why;
      return false;
    }
    connect_ns_.push_back(now_ns() - t0);
    return true;
  }
  void close(const Conn& c) {
    p_.send_dreq(c);
    p_.drain(5);
  }

  json spoofed_source() {
    // WRITEs to every QPN of the range: from an address that is no peer's,
    // and from the honest peer's address with guessed PSNs.  In rounds 20 ms
    // apart: a peer that reconnects often (the test's honest one, every few
    // tens of ms) may have no live QPN in the range during one round's
    // millisecond, and then every frame of it is only for an unknown QPN.
    std::vector<uint8_t> pay(64, 0xEE);
    uint32_t sent = 0;
    for (uint32_t round = 0; round < kSpoofRounds; ++round) {
      for (uint32_t q = o_.qpn_lo; q < o_.qpn_lo + o_.qpn_span; ++q) {
        for (const uint32_t src : {spoof_ip_, honest_ip_}) {
          wire::BuildSpec s;
          s.opcode = Opcode::kWriteOnly;
          s.dest_qp = q;
          s.psn = wire::Psn(static_cast<uint32_t>(p_.rng()()));
          s.src_ip = src;
          s.va = p_.rng()();
          s.rkey = static_cast<uint32_t>(p_.rng()());
          s.dma_len = 64;
          s.payload = pay;
          sent += p_.send(s) ? 1u : 0u;
        }
      }
      p_.drain(20);
    }
    return {{"frames", sent},
            {"qpns", o_.qpn_span},
            {"rounds", kSpoofRounds},
            {"sources", {"unrelated", "honest-peer"}}};
  }
  static constexpr uint32_t kSpoofRounds = 4;

  json unknown_qpn() {
    std::vector<uint8_t> pay(32, 0xAB);
    uint32_t sent = 0;
    for (uint32_t i = 0; i < 64; ++i) {
      wire::BuildSpec s;
      s.opcode = Opcode::kSendOnly;
      s.dest_qp = 0xF00000u + i;
      s.psn = wire::Psn(i);
      s.payload = pay;
      sent += p_.send(s) ? 1u : 0u;
    }
    p_.drain(10);
    return {{"frames", sent}};
  }

  json psn_out_of_window() {
    json out;
    Conn c;
    if (!connect(&c, &out)) return out;
    std::vector<uint8_t> pay(16, 0x11);
    auto w = [&](uint32_t psn) {
      wire::BuildSpec s = req(c, Opcode::kWriteOnly, psn);
      s.va = c.va;
      s.rkey = c.rkey;
      s.dma_len = 16;
      s.payload = pay;
      p_.send(s, c.pmtu);
      return p_.await(c, 500);
    };
    out["far_ahead"] = answer_name(w(c.next_psn + (1u << 22)));
    out["far_behind"] = answer_name(w(c.next_psn - (1u << 22)));
    out["in_sequence_after"] = answer_name(w(c.next_psn));  // the connection survived?
    close(c);
    return out;
  }

  json length_mismatch() {
    json out;
    Conn c;
    if (!connect(&c, &out)) return out;
    std::vector<uint8_t> pay(64, 0x22);
    wire::BuildSpec s = req(c, Opcode::kWriteOnly, c.next_psn);
    s.va = c.va;
    s.rkey = c.rkey;
    s.dma_len = 128;  // the RETH says 128, the packet carries 64
    s.payload = pay;
    p_.send(s, c.pmtu);
    out["write_only_dma_len_128_payload_64"] = answer_name(p_.await(c, 500));
    Conn d;
    if (!connect(&d, &out)) return out;
    // A FIRST packet must carry one full PMTU of the connection (1024):
    // this one carries 256, built as if the PMTU were 256.
    std::vector<uint8_t> quarter(256, 0x44);
    wire::BuildSpec f = req(d, Opcode::kWriteFirst, d.next_psn);
    f.va = d.va;
    f.rkey = d.rkey;
    f.dma_len = 4096;
    f.payload = quarter;
    p_.send(f, 256);
    out["write_first_short_payload"] = answer_name(p_.await(d, 500));
    return out;
  }

  json huge_read() {
    json out;
    Conn c;
    if (!connect(&c, &out)) return out;
    wire::BuildSpec s = req(c, Opcode::kReadRequest, c.next_psn);
    s.va = c.va;
    s.rkey = c.rkey;
    s.dma_len = 0x7FFF'FFFFu;  // 2 GiB from a 64 KiB grant
    p_.send(s, c.pmtu);
    out["read_2GiB"] = answer_name(p_.await(c, 500));
    return out;
  }

  json misaligned_atomic() {
    json out;
    Conn c;
    if (!connect(&c, &out)) return out;
    wire::BuildSpec s = req(c, Opcode::kCompareSwap, c.next_psn);
    s.va = c.va + 4;
    s.rkey = c.rkey;
    s.compare = 0;
    s.swap_add = ~uint64_t{0};
    p_.send(s, c.pmtu);
    out["cmp_swap_at_va_plus_4"] = answer_name(p_.await(c, 500));
    return out;
  }

  json rkey_flood() {
    // Key guesses from this address as fast as it can make them, a
    // connection each (a wrong key breaks the connection that used it):
    // once the victim refused its cap of keys to this address within a
    // second, it refuses the address's connection requests (REJ) until the
    // second ends.
    std::map<std::string, uint32_t> answers;
    uint32_t connected = 0, refused = 0, failed = 0;
    const uint64_t t0 = now_ns();
    for (uint32_t g = 0; g < o_.flood; ++g) {
      Conn c;
      std::string why;
      if (!p_.connect(&c, 1000, &why)) {
        ++(why == "REJ" ? refused : failed);
        continue;
      }
      ++connected;
      wire::BuildSpec s = req(c, Opcode::kReadRequest, c.next_psn);
      s.va = c.va;
      s.rkey = c.rkey ^ (0x100u << (g % 8));
      s.dma_len = 8;
      p_.send(s, c.pmtu);
      answers[answer_name(p_.await(c, 500))]++;
    }
    return {{"attempts", o_.flood}, {"connected", connected}, {"refused", refused},
            {"no_answer", failed},  {"answers", answers},     {"ms", us(now_ns() - t0) / 1000}};
  }

  json rkey_guess() {
    // One connection per guess (a wrong key breaks the connection that
    // used it).  Half the guesses keep the index of the key the victim gave
    // this connection and guess its key byte; half guess index and byte.
    json out;
    std::map<std::string, uint32_t> answers;
    std::vector<uint64_t> per_guess;
    uint32_t accepted = 0;
    for (uint32_t g = 0; g < o_.guesses; ++g) {
      const uint64_t t0 = now_ns();
      Conn c;
      if (!connect(&c, &out)) return out;
      uint32_t key;
      if (g % 2 == 0) {
        do {
          key = (c.rkey & ~0xFFu) | static_cast<uint32_t>(p_.rng()() & 0xFF);
        } while (key == c.rkey);
      } else {
        key = static_cast<uint32_t>((p_.rng()() % 64) << 8 | (p_.rng()() & 0xFF));
      }
      wire::BuildSpec s = req(c, Opcode::kReadRequest, c.next_psn);
      s.va = c.va;
      s.rkey = key;
      s.dma_len = 8;
      p_.send(s, c.pmtu);
      const Answer a = p_.await(c, 500);
      per_guess.push_back(now_ns() - t0);
      answers[answer_name(a)]++;
      if (a.kind == Answer::kReadData) {
        ++accepted;
        close(c);
      }
    }
    std::sort(per_guess.begin(), per_guess.end());
    out["guesses"] = o_.guesses;
    out["answers"] = answers;
    out["accepted"] = accepted;
    out["per_guess_us_median"] = per_guess.empty() ? 0.0 : us(per_guess[per_guess.size() / 2]);
    out["per_guess_us_min"] = per_guess.empty() ? 0.0 : us(per_guess.front());
    return out;
  }

  json forged_dreq() {
    json out;
    // Comm IDs guessed: names no connection.
    for (int i = 0; i < 16; ++i) {
      Conn fake;
      fake.my_comm = static_cast<uint32_t>(p_.rng()());
      fake.victim_comm = static_cast<uint32_t>(p_.rng()());
      fake.victim_qpn = o_.qpn_lo + static_cast<uint32_t>(i);
      p_.send_dreq(fake, honest_ip_);
    }
    // Right comm IDs, wrong source: a DREQ for our own connection claiming
    // to come from an unrelated address.  The connection must survive it.
    Conn c;
    if (!connect(&c, &out)) return out;
    p_.send_dreq(c, spoof_ip_);
    p_.drain(50);
    std::vector<uint8_t> pay(8, 0x33);
    wire::BuildSpec s = req(c, Opcode::kWriteOnly, c.next_psn);
    s.va = c.va;
    s.rkey = c.rkey;
    s.dma_len = 8;
    s.payload = pay;
    p_.send(s, c.pmtu);
    out["guessed_comm_ids"] = 16;
    out["write_after_spoofed_dreq"] = answer_name(p_.await(c, 500));
    close(c);
    return out;
  }

  json cm_flood() {
    // Malformed MADs, REQs for a service nobody listens on, then REQs for
    // the victim's service that are never completed (no RTU).
    for (int i = 0; i < 16; ++i) p_.send_bad_mad();
    uint32_t comm;
    for (uint32_t i = 0; i < o_.flood; ++i) p_.send_req(o_.service + 1, &comm);
    p_.drain(20);
    for (uint32_t i = 0; i < o_.flood; ++i) {
      p_.send_req(o_.service, &comm);
      if (i % 16 == 15) p_.drain(5);
    }
    p_.drain(50);
    return {
        {"bad_mads", 16}, {"reqs_unknown_service", o_.flood}, {"reqs_never_completed", o_.flood}};
  }

  const std::vector<uint64_t>& connect_ns() const { return connect_ns_; }

 private:
  RawPeer& p_;
  const Options& o_;
  uint32_t honest_ip_, spoof_ip_;
  std::vector<uint64_t> connect_ns_;
};

bool parse_ip(const std::string& s, uint32_t* ip) {
  in_addr a{};
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return false;
  *ip = ntohl(a.s_addr);
  return true;
}

int run(const Options& o) {
  uint32_t my_ip, victim_ip, honest_ip, spoof_ip;
  if (!parse_ip(o.ip, &my_ip) || !parse_ip(o.victim, &victim_ip) ||
      !parse_ip(o.honest, &honest_ip) || !parse_ip(o.spoof, &spoof_ip)) {
    std::fprintf(stderr, "dpdat-hostile: bad IPv4 address\n");
    return 2;
  }
  const auto& eal = dpdk::eal_init({"--vdev=" + o.vdev});
  if (!eal.ok) {
    std::fprintf(stderr, "dpdat-hostile: %s\n", eal.error.c_str());
    return 1;
  }
  uint16_t port_id = 0;
  const std::string devname = o.vdev.substr(0, o.vdev.find(','));
  if (!dpdk::Port::find(devname, &port_id)) {
    std::fprintf(stderr, "dpdat-hostile: no DPDK port named %s\n", devname.c_str());
    return 1;
  }
  dpdk::PortConfig pc;
  pc.name = "hostile";
  pc.ip = my_ip;
  pc.csum_offload = false;
  pc.rx_intr = false;
  std::string err;
  auto port = dpdk::Port::open(port_id, pc, &err);
  if (!port) {
    std::fprintf(stderr, "dpdat-hostile: %s\n", err.c_str());
    return 1;
  }
  // Comm IDs, QPNs and PSNs differ from run to run: a REQ repeating an
  // earlier run's comm ID is (rightly) taken for a retransmission.
  const uint64_t seed =
      o.seed != 0 ? o.seed : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  RawPeer peer(*port, my_ip, victim_ip, o.service, seed);
  if (!peer.resolve(5000)) {
    std::fprintf(stderr, "dpdat-hostile: no ARP answer from the victim\n");
    return 1;
  }
  Attacks a(peer, o, honest_ip, spoof_ip);
  const std::vector<std::pair<std::string, std::function<json()>>> all = {
      {"spoofed-source", [&] { return a.spoofed_source(); }},
      {"unknown-qpn", [&] { return a.unknown_qpn(); }},
      {"psn-out-of-window", [&] { return a.psn_out_of_window(); }},
      {"length-mismatch", [&] { return a.length_mismatch(); }},
      {"huge-read", [&] { return a.huge_read(); }},
      {"misaligned-atomic", [&] { return a.misaligned_atomic(); }},
      {"rkey-guess", [&] { return a.rkey_guess(); }},
      {"rkey-flood", [&] { return a.rkey_flood(); }},
      {"forged-dreq", [&] { return a.forged_dreq(); }},
      {"cm-flood", [&] { return a.cm_flood(); }}};
  int rc = 0;
  json report = json::object();
  for (const auto& [name, fn] : all) {
    if (!o.attacks.empty() &&
        std::find(o.attacks.begin(), o.attacks.end(), name) == o.attacks.end())
      continue;
    json r = fn();
    if (r.contains("error")) rc = 1;
    std::printf("dpdat-hostile: %s: %s\n", name.c_str(), r.dump().c_str());
    std::fflush(stdout);
    report[name] = r;
  }
  std::vector<uint64_t> cn = a.connect_ns();
  std::sort(cn.begin(), cn.end());
  report["connect_us_median"] = cn.empty() ? 0.0 : us(cn[cn.size() / 2]);
  report["connections_made"] = cn.size();
  std::printf("hostile-json: %s\n", report.dump().c_str());
  return rc;
}

}  // namespace
}  // namespace dpdat::hostile

int main(int argc, char** argv) {
  CLI::App app{"dpdat-hostile: a hostile RoCEv2 peer for testing a live dpdat process"};
  dpdat::hostile::Options o;
  app.add_option("--vdev", o.vdev, "DPDK device to send from (net_af_packet0,iface=...)")
      ->required();
  app.add_option("--ip", o.ip, "this side's IPv4 address")->required();
  app.add_option("--victim", o.victim, "the victim's IPv4 address")->required();
  app.add_option("--honest", o.honest, "the honest peer's IPv4 address (spoofed)")->required();
  app.add_option("--spoof", o.spoof, "an unrelated IPv4 source to spoof");
  app.add_option("--service", o.service, "the victim's connection qualifier");
  app.add_option("--qpn-lo", o.qpn_lo, "first QPN of the swept range");
  app.add_option("--qpn-span", o.qpn_span, "QPNs swept")->check(CLI::Range(1u, 1u << 20));
  app.add_option("--guesses", o.guesses, "rkey guesses (one connection each)")
      ->check(CLI::Range(1u, 100000u));
  app.add_option("--flood", o.flood,
                 "REQs per flood (cm-flood), key-guess connections (rkey-flood)")
      ->check(CLI::Range(1u, 100000u));
  app.add_option("--seed", o.seed, "random seed (0: a fresh one)");
  app.add_option("--attacks", o.attacks, "only these attacks")
      ->delimiter(',')
      ->check(CLI::IsMember({"spoofed-source", "unknown-qpn", "psn-out-of-window",
                             "length-mismatch", "huge-read", "misaligned-atomic", "rkey-guess",
                             "rkey-flood", "forged-dreq", "cm-flood"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "dpdat-hostile: %s\n", e.what());
    return 2;
  }
  return dpdat::hostile::run(o);
}
