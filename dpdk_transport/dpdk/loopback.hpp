#pragma once
// Two dpdat endpoints in one process over the default in-process link (two
// net_ring ports), each with its own memory tables and RC engine, progressed
// inline by the calling thread.  A fixture of the in-process DPDK tests and
// the engine micro-benchmark (bench/engine_perf).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "dpdk/port.hpp"
#include "dpdk/telemetry.hpp"
#include "dpdk/tsc_clock.hpp"
#include "rc/engine/engine.hpp"
#include "rc/mr_table.hpp"
#include "rc/qp/qp.hpp"

namespace dpdat::dpdk {

struct Endpoint {
  std::unique_ptr<Port> port;
  std::unique_ptr<rc::MrTable> mr;
  std::unique_ptr<rc::Engine> engine;
  std::unique_ptr<rc::CompletionQueue> scq, rcq;
  rc::Qp* qp = nullptr;
  uint32_t pz = 1;
  std::string name;  // telemetry name of its engine
};

class Loopback {
 public:
  // Opens both ports and connects one QP pair.  False with *err on failure.
  bool open(const rc::QpConfig& qcfg, std::string* err, uint32_t cq_depth = 8192) {
    uint16_t pa = 0, pb = 0;
    static int instance = 0;
    const std::string name = "dpdat_lo" + std::to_string(instance++);
    if (!Port::make_ring_link(name, &pa, &pb, err)) return false;
    const uint16_t ids[2] = {pa, pb};
    for (int i = 0; i < 2; ++i) {
      Endpoint& e = ep_[i];
      PortConfig pc;
      pc.name = name + (i == 0 ? "a" : "b");
      pc.ip = 0xC0A80001u + static_cast<uint32_t>(i);  // 192.168.0.1/2: never leaves the process
      e.port = Port::open(ids[i], pc, err);
      if (!e.port) return false;
      e.mr = std::make_unique<rc::MrTable>(1024, 256);
      rc::EngineConfig ec;
      ec.pmtu = 4096;
      e.engine = std::make_unique<rc::Engine>(*e.port, *e.mr, ec);
      e.name = pc.name;
      telemetry_add_engine(e.name, e.engine.get());
      e.scq = std::make_unique<rc::CompletionQueue>(cq_depth);
      e.rcq = std::make_unique<rc::CompletionQueue>(cq_depth);
      rc::QpConfig q = qcfg;
      if (q.pmtu > e.port->max_pmtu()) q.pmtu = e.port->max_pmtu();
      e.qp = e.engine->create_qp(e.pz, q, e.scq.get(), e.rcq.get());
      if (e.qp == nullptr) {
        *err = "create_qp failed";
        return false;
      }
    }
    for (int i = 0; i < 2; ++i) {
      Endpoint& me = ep_[i];
      Endpoint& peer = ep_[1 - i];
      rc::PathInfo path;
      path.local_mac = me.port->mac();
      path.peer_mac = peer.port->mac();
      path.local_ip = me.port->ip();
      path.peer_ip = peer.port->ip();
      path.peer_qpn = peer.qp->qpn();
      path.udp_src_port = static_cast<uint16_t>(0xC000 + i);
      if (!me.qp->connect(path, wire::Psn(0x100000u * static_cast<uint32_t>(i + 1)),
                          wire::Psn(0x100000u * static_cast<uint32_t>(2 - i)))) {
        *err = "connect failed";
        return false;
      }
    }
    return true;
  }

  Endpoint& a() { return ep_[0]; }
  Endpoint& b() { return ep_[1]; }

  // Drives both engines once; returns frames moved.
  uint32_t poll() {
    const uint64_t t = clock_.now();
    return ep_[0].engine->poll(t) + ep_[1].engine->poll(t);
  }

  // Polls until pred() holds or timeout_ns passes (wall clock).
  template <typename Pred>
  bool run_until(Pred pred, uint64_t timeout_ns = 10'000'000'000ull) {
    const uint64_t end = steady_now_ns() + timeout_ns;
    while (!pred()) {
      if (steady_now_ns() > end) return false;
      poll();
    }
    return true;
  }

  ~Loopback() {
    for (auto& e : ep_) {
      if (!e.name.empty()) telemetry_remove_engine(e.name);
      e.engine.reset();  // returns its mbufs before the port's pool goes
      e.port.reset();
    }
  }

 private:
  Endpoint ep_[2];
  TscClock clock_;  // made after main() initialised the EAL, before open()
};

}  // namespace dpdat::dpdk
