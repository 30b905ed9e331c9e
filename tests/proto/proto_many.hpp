#pragma once
// Many connections between two dat_core interfaces of this process over the
// simulated link (proto tier): endpoints created and connected in batches
// (the REQs of one batch stay within the per-PSP pending-request limit),
// shared EVDs.  Used by proto_scale_test and bench/scale.

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ops.hpp"
#include "rc/qp/qp.hpp"

namespace dpdat::proto {

struct ManySide {
  dat::Ia* ia = nullptr;
  dat::Pz* pz = nullptr;
  dat::Evd* recv = nullptr;
  dat::Evd* req = nullptr;
  dat::Evd* conn = nullptr;
  dat::Evd* cr = nullptr;
  dat::Sp* psp = nullptr;
  std::vector<dat::Ep*> eps;

  // EVDs of `qlen` entries (the connection / CR EVDs hold one batch).
  bool make(dat::Ia* on, uint32_t qlen) {
    using namespace dat;  // NOLINT(google-build-using-namespace)
    ia = on;
    return pz_create(ia, &pz).ok() && evd_create(ia, qlen, nullptr, evd_flag::kDto, &recv).ok() &&
           evd_create(ia, qlen, nullptr, evd_flag::kDto, &req).ok() &&
           evd_create(ia, qlen, nullptr, evd_flag::kConnection, &conn).ok() &&
           evd_create(ia, qlen, nullptr, evd_flag::kCr, &cr).ok();
  }
};

// Connects `n` more endpoint pairs a -> b (b listening on `qual`), `batch`
// connection attempts at a time.  EP attributes: `attr` (nullptr: default).
// Returns an empty string, or what failed.
inline std::string connect_many(ManySide& a, ManySide& b, uint32_t ip_b, uint64_t qual, uint32_t n,
                                uint32_t batch, const dat::EpAttr* attr = nullptr) {
  using namespace dat;  // NOLINT(google-build-using-namespace)
  constexpr uint64_t kManyWaitUs = 10'000'000;
  if (b.psp == nullptr && !psp_create(b.ia, qual, b.cr, 0, &b.psp).ok()) return "psp_create";
  for (uint32_t done = 0; done < n;) {
    const uint32_t k = std::min(batch, n - done);
    const size_t first = a.eps.size();
    for (uint32_t i = 0; i < k; ++i) {
      Ep* ea = nullptr;
      Ep* eb = nullptr;
      if (!ep_create(a.ia, a.pz, a.recv, a.req, a.conn, attr, &ea).ok()) return "ep_create a";
      if (!ep_create(b.ia, b.pz, b.recv, b.req, b.conn, attr, &eb).ok()) return "ep_create b";
      a.eps.push_back(ea);
      b.eps.push_back(eb);
      if (!ep_connect(ea, ip_b, qual, kManyWaitUs, nullptr, 0).ok()) return "ep_connect";
    }
    // Requests may arrive in any order: b.eps[i] accepts the one from a.eps[i]
    // (a's QPNs of one batch are consecutive or at least distinct).
    std::unordered_map<uint32_t, size_t> by_qpn;
    for (size_t i = first; i < a.eps.size(); ++i) by_qpn[a.eps[i]->qp->qpn()] = i;
    for (uint32_t i = 0; i < k; ++i) {
      Event ev;
      if (!evd_wait(b.cr, kManyWaitUs, 1, &ev, nullptr).ok() || ev.num != EventNum::kConnRequest)
        return "no connection request";
      const auto it = by_qpn.find(ev.cr->req.qpn);
      if (it == by_qpn.end()) return "request from an unknown QPN";
      if (!cr_accept(ev.cr, b.eps[it->second], nullptr, 0).ok()) return "cr_accept";
    }
    for (Evd* e : {a.conn, b.conn})
      for (uint32_t i = 0; i < k; ++i) {
        Event ev;
        if (!evd_wait(e, kManyWaitUs, 1, &ev, nullptr).ok() || ev.num != EventNum::kEstablished)
          return "not established";
      }
    done += k;
  }
  return {};
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace dpdat::proto
