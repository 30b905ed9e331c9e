#pragma once
// Shared fixture of the `proto` tests: two interfaces of dat_core in this
// process, the ends of the simulated wire (sim_factory.hpp), driven through
// ops.hpp only — no EAL, no hugepages, no DPDK.  Side a is ring=0
// (10.9.0.1), side b ring=1 (10.9.0.2); both without a progress thread
// (progress=inline), so one test thread drives both: a wait on one
// interface progresses the other too (ops.hpp wait_for).

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "ops.hpp"
#include "rc/qp/qp.hpp"  // the tests look at the protocol's state
#include "sim_factory.hpp"

namespace dpdat::proto {

using namespace dat;  // NOLINT(google-build-using-namespace): test code over ops.hpp

inline constexpr uint32_t kIpA = 0x0A090001;  // 10.9.0.1
inline constexpr uint32_t kIpB = 0x0A090002;  // 10.9.0.2
inline constexpr uint64_t kQual = 4321;
inline constexpr uint64_t kWaitUs = 5'000'000;  // generous: events take microseconds

inline IfaceConfig config(const std::string& name, const std::string& text) {
  IfaceConfig c;
  c.name = name;
  std::string err;
  EXPECT_TRUE(parse_iface_config(text, &c, &err)) << err;
  return c;
}

// The IAs the fixture has open, each with the serial it was opened under:
// a Mem frees its registration only while the IA it was made on is open
// (closing an IA frees its LMRs; an address may be reused by a later IA).
inline std::map<const Ia*, uint64_t>& live_ias() {
  static std::map<const Ia*, uint64_t> m;
  return m;
}
inline uint64_t next_ia_serial() {
  static uint64_t n = 0;
  return ++n;
}

// Registered memory of one IA.  The registration is freed before the buffer
// goes: a responder may replay a READ from it after the test has its data.
struct Mem {
  std::vector<uint8_t> buf;
  Lmr* lmr = nullptr;
  const Ia* ia = nullptr;
  uint64_t ia_serial = 0;

  Mem() = default;
  Mem(const Mem&) = delete;
  Mem& operator=(const Mem&) = delete;
  ~Mem() { release(); }
  void release() {
    if (lmr != nullptr) {
      const auto it = live_ias().find(ia);
      if (it != live_ias().end() && it->second == ia_serial) {
        EXPECT_TRUE(lmr_free(lmr).ok());
      }
    }
    lmr = nullptr;
  }
  rc::Sge sge(uint64_t off = 0, uint64_t len = UINT64_MAX) const {
    return rc::Sge{lmr->lmr_context, lmr->va + off, len == UINT64_MAX ? buf.size() - off : len};
  }
  RemoteSeg remote(uint64_t off = 0) const {
    return RemoteSeg{lmr->rmr_context, lmr->va + off, buf.size() - off};
  }
};

// One end: IA, PZ, EVDs (receive, request, connection, CR) and one EP.
struct Side {
  Ia* ia = nullptr;
  Pz* pz = nullptr;
  Evd* recv = nullptr;
  Evd* req = nullptr;
  Evd* conn = nullptr;
  Evd* cr = nullptr;
  Ep* ep = nullptr;
  Sp* psp = nullptr;

  bool owns_ia = true;  // false: the IA is another Side's (open_on)

  void open(const IfaceConfig& cfg) {
    ASSERT_TRUE(ia_open(cfg, 16, nullptr, nullptr, &ia).ok());
    live_ias()[ia] = next_ia_serial();
    create_objects();
  }
  // Everything but the IA, on an IA another Side opened and closes.
  void open_on(Ia* shared) {
    ia = shared;
    owns_ia = false;
    create_objects();
  }
  void create_objects() {
    ASSERT_TRUE(pz_create(ia, &pz).ok());
    ASSERT_TRUE(evd_create(ia, 256, nullptr, evd_flag::kDto, &recv).ok());
    ASSERT_TRUE(evd_create(ia, 256, nullptr, evd_flag::kDto | evd_flag::kRmrBind, &req).ok());
    ASSERT_TRUE(evd_create(ia, 16, nullptr, evd_flag::kConnection, &conn).ok());
    ASSERT_TRUE(evd_create(ia, 16, nullptr, evd_flag::kCr, &cr).ok());
    ASSERT_TRUE(ep_create(ia, pz, recv, req, conn, nullptr, &ep).ok());
  }
  // Abrupt close: frees everything the IA owns (nothing when it is another
  // Side's: that Side's close frees this one's objects).
  void close() {
    if (ia != nullptr && owns_ia) {
      live_ias().erase(ia);
      EXPECT_TRUE(ia_close(ia, false).ok());
    }
    *this = Side{};
  }
  void reg(Mem& m, size_t len, uint32_t privileges = rc::priv::kAll) {
    m.release();
    m.buf.assign(len, 0);
    LmrSpec spec;
    spec.host = m.buf.data();
    spec.va = reinterpret_cast<uintptr_t>(m.buf.data());
    spec.length = len;
    ASSERT_TRUE(lmr_create(ia, pz, spec, privileges, &m.lmr).ok());
    const auto it = live_ias().find(ia);
    m.ia = ia;
    m.ia_serial = it == live_ias().end() ? 0 : it->second;
  }
};

// The next event of `e` (fails the test on a timeout).
inline Event next_event(Evd* e, uint64_t timeout_us = kWaitUs) {
  Event ev;
  const Status st = evd_wait(e, timeout_us, 1, &ev, nullptr);
  EXPECT_TRUE(st.ok()) << "evd_wait: type " << static_cast<int>(st.type) << " sub "
                       << static_cast<int>(st.sub);
  return ev;
}

inline void fill(std::vector<uint8_t>& v, uint32_t seed) {
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<uint8_t>((i * 131 + seed * 7 + (i >> 9)) & 0xFF);
}

class ProtoTest : public ::testing::Test {
 protected:
  // Both ends without a progress thread unless a test says otherwise.
  void SetUp() override {
    wire_ = &install_sim_link(0x5EED);
    wire_->reset();
  }
  void TearDown() override {
    a_.close();
    b_.close();
    wire_->reset();
  }
  // progress_a / progress_b: each end's progress= setting.  An interface
  // lives for the process, so an end this process opened before with
  // another setting cannot be opened again: true when so (skip the test;
  // under ctest every test is a process of its own).
  bool ends_taken(const std::string& progress_a = "inline",
                  const std::string& progress_b = "inline") {
    const IfaceConfig ca =
        config("proto_a_" + progress_a, "ring=0;ip=10.9.0.1;progress=" + progress_a);
    const IfaceConfig cb =
        config("proto_b_" + progress_b, "ring=1;ip=10.9.0.2;progress=" + progress_b);
    Ia* ia = nullptr;
    for (const IfaceConfig* c : {&ca, &cb}) {
      const Status st = ia_open(*c, 16, nullptr, nullptr, &ia);
      if (!st.ok()) return st.sub == Sub::RESOURCE_DEVICE;
      EXPECT_TRUE(ia_close(ia, false).ok());
    }
    a_.open(ca);
    b_.open(cb);
    return false;
  }
  void open_both() { ASSERT_FALSE(ends_taken()) << "ring=0/1 held by other interfaces"; }
  // a connects to b's PSP at b_ip; b accepts on its own EP.  Private data
  // both ways.
  void connect(uint32_t b_ip = kIpB) {
    ASSERT_TRUE(psp_create(b_.ia, kQual, b_.cr, 0, &b_.psp).ok());
    const uint8_t hello[] = {'h', 'i'};
    ASSERT_TRUE(ep_connect(a_.ep, b_ip, kQual, kWaitUs, hello, sizeof(hello)).ok());
    const Event req = next_event(b_.cr);
    ASSERT_EQ(req.num, EventNum::kConnRequest);
    ASSERT_NE(req.cr, nullptr);
    ASSERT_EQ(req.cr->pdata.size() >= 2 ? std::memcmp(req.cr->pdata.data(), hello, 2) : -1, 0);
    const uint8_t ok[] = {'o', 'k', '!'};
    ASSERT_TRUE(cr_accept(req.cr, b_.ep, ok, sizeof(ok)).ok());
    const Event ea = next_event(a_.conn);
    ASSERT_EQ(ea.num, EventNum::kEstablished);
    ASSERT_GE(ea.pdata_len, 3u);
    EXPECT_EQ(std::memcmp(ea.pdata, ok, 3), 0);
    const Event eb = next_event(b_.conn);
    ASSERT_EQ(eb.num, EventNum::kEstablished);
  }
  // Graceful disconnect from a; both sides see DISCONNECTED.
  void disconnect() {
    ASSERT_TRUE(ep_disconnect(a_.ep, false).ok());
    EXPECT_EQ(next_event(a_.conn).num, EventNum::kDisconnected);
    EXPECT_EQ(next_event(b_.conn).num, EventNum::kDisconnected);
  }

  SimWire* wire_ = nullptr;
  Side a_, b_;
};

}  // namespace dpdat::proto
