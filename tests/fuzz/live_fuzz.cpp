// Stateful libFuzzer target over dat_core: two live interfaces (the proto
// tier's simulated wire, two engines each, progress inline) with three
// connections open — one whose passive EP takes its receives from a shared
// receive queue, one through which the passive side binds a memory window —
// while the input posts verified transfers and injects connection-manager
// frames into the interfaces.
//
// Per input: the two IAs are opened; a first connection is made and closed
// (its CM frames are the stale ones); the three connections are made; the
// passive side binds an RMR over part of its region through connection 2's
// EP (a bind work request).  Every CM frame either side sent so far is kept
// as the attacker's material.  Then each input byte is an action:
//   low 3 bits: 0 WRITE, 1 SEND, 2 READ, 3 WRITE through the bound window
//               (connection = next byte % 3, size class = next byte), each
//               waited for and checked;
//               4 a kept CM frame replayed as it was (to its destination, or
//               with bit 3 set to the other side);
//               5 a kept CM frame with one byte changed;
//               6 a kept CM frame with four bytes at one offset taken from
//               another kept frame (communication IDs, QPNs, PSNs spliced
//               into another message);
//               7 the window bound again over another range (or unbound).
// Mutated and spliced frames get their IPv4 checksum and ICRC repaired so
// they reach the CM.  A connection request the attacker causes is rejected.
//
// Invariants (abort on violation):
//  - no crash, no UB, no leak (ASan/UBSan, libFuzzer's leak check);
//  - a transfer that succeeds is byte-exact (a CM frame carries no data);
//  - every transfer completes within bounded time, exactly once: in
//    success, or in error only on a connection that reported its end
//    (DISCONNECTED / BROKEN on its connection EVD, which a forged DREQ
//    naming its live IDs may legitimately cause: the CM has no
//    authentication); a connection that reported nothing still moves data
//    exactly at the end;
//  - once every object is freed, the interfaces hold nothing of the input:
//    no EP by QPN or communication ID, no listener, no LMR, no SRQ, no
//    completion-queue EVD, no pending connection request of any peer, no EP
//    on any engine.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "iface.hpp"
#include "ops.hpp"
#include "qp_attacker.hpp"
#include "sim_factory.hpp"
#include "wire/packet.hpp"

using namespace dpdat;
using namespace dpdat::dat;

#define LIVE_CHECK(c)                                                                       \
  do {                                                                                      \
    if (!(c)) {                                                                             \
      std::fprintf(stderr, "live_fuzz: %s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)

namespace {

constexpr uint32_t kIpB = 0x0A090002;  // 10.9.0.2
constexpr uint64_t kQual = 0x4C495645;
constexpr size_t kConns = 3;
constexpr size_t kSrqConn = 1, kBindConn = 2;
constexpr size_t kSlot = 4096;
constexpr size_t kWinOff = 512;  // the window's first offset within its slot
constexpr std::array<uint32_t, 8> kSizes = {1, 8, 255, 1024, 1025, 2049, 3000, 4096};
constexpr uint64_t kWaitUs = 3'000'000;
constexpr size_t kMaxKept = 64;

bool verbose() {
  static const bool v = std::getenv("LIVE_FUZZ_VERBOSE") != nullptr;
  return v;
}

IfaceConfig config(const char* name, const char* text) {
  IfaceConfig c;
  std::string err;
  LIVE_CHECK(parse_iface_config(text, &c, &err));
  c.name = name;
  return c;
}

struct Mem {
  std::vector<uint8_t> buf;
  Lmr* lmr = nullptr;
  rc::Sge sge(uint64_t off, uint64_t len) const {
    return rc::Sge{lmr->lmr_context, lmr->va + off, len};
  }
};

struct End {
  Ia* ia = nullptr;
  Pz* pz = nullptr;
  Evd* req = nullptr;
  Evd* recv = nullptr;
  Evd* cr = nullptr;
  std::array<Evd*, kConns> conn{};
  std::array<Ep*, kConns> ep{};
  Mem mem;
};

class Run {
 public:
  explicit Run(fuzz::Bytes& in) : in_(in) {}

  void go() {
    open();
    while (!in_.empty()) act(in_.u8());
    finish();
  }

 private:
  // ------------------------------------------------------------ set-up
  void open() {
    static const IfaceConfig ca = config("live_a", "ring=0;ip=10.9.0.1;progress=inline;engines=2");
    static const IfaceConfig cb = config("live_b", "ring=1;ip=10.9.0.2;progress=inline;engines=2");
    wire_ = &proto::install_sim_link(0x11FE);
    wire_->reset();
    LIVE_CHECK(ia_open(ca, 16, nullptr, nullptr, &a_.ia).ok());
    LIVE_CHECK(ia_open(cb, 16, nullptr, nullptr, &b_.ia).ok());
    for (End* e : {&a_, &b_}) {
      LIVE_CHECK(pz_create(e->ia, &e->pz).ok());
      LIVE_CHECK(
          evd_create(e->ia, 256, nullptr, evd_flag::kDto | evd_flag::kRmrBind, &e->req).ok());
      LIVE_CHECK(evd_create(e->ia, 256, nullptr, evd_flag::kDto, &e->recv).ok());
      LIVE_CHECK(evd_create(e->ia, 16, nullptr, evd_flag::kCr, &e->cr).ok());
      for (Evd*& c : e->conn)
        LIVE_CHECK(evd_create(e->ia, 16, nullptr, evd_flag::kConnection, &c).ok());
      e->mem.buf.assign(2 * kConns * kSlot, 0);
      LmrSpec spec;
      spec.host = e->mem.buf.data();
      spec.va = reinterpret_cast<uintptr_t>(e->mem.buf.data());
      spec.length = e->mem.buf.size();
      LIVE_CHECK(lmr_create(e->ia, e->pz, spec, rc::priv::kAll, &e->mem.lmr).ok());
    }
    LIVE_CHECK(srq_create(b_.ia, b_.pz, 16, 1, 0, &srq_).ok());
    LIVE_CHECK(psp_create(b_.ia, kQual, b_.cr, 0, &psp_).ok());
    wire_->with_link([](rc::SimLink& l) {
      l.clear_captured();
      l.set_capture(true);
    });
    // A connection made and closed first: its CM frames are stale ones.
    {
      Ep *ea = nullptr, *eb = nullptr;
      LIVE_CHECK(ep_create(a_.ia, a_.pz, a_.recv, a_.req, a_.conn[0], nullptr, &ea).ok());
      LIVE_CHECK(ep_create(b_.ia, b_.pz, b_.recv, b_.req, b_.conn[0], nullptr, &eb).ok());
      connect(ea, eb, 0);
      LIVE_CHECK(ep_disconnect(ea, false).ok());
      LIVE_CHECK(next(a_.conn[0]).num == EventNum::kDisconnected);
      LIVE_CHECK(next(b_.conn[0]).num == EventNum::kDisconnected);
      LIVE_CHECK(ep_free(ea).ok());
      LIVE_CHECK(ep_free(eb).ok());
    }
    for (size_t k = 0; k < kConns; ++k) {
      LIVE_CHECK(ep_create(a_.ia, a_.pz, a_.recv, a_.req, a_.conn[k], nullptr, &a_.ep[k]).ok());
      LIVE_CHECK(ep_create(b_.ia, b_.pz, b_.recv, b_.req, b_.conn[k], nullptr, &b_.ep[k],
                           k == kSrqConn ? srq_ : nullptr)
                     .ok());
      connect(a_.ep[k], b_.ep[k], k);
    }
    LIVE_CHECK(rmr_create(b_.pz, &rmr_).ok());
    bind(kWinOff, kSlot - 2 * kWinOff);
    keep_captured();
  }

  void connect(Ep* ea, Ep* eb, size_t k) {
    LIVE_CHECK(ep_connect(ea, kIpB, kQual, kWaitUs, nullptr, 0).ok());
    const Event req = next(b_.cr);
    LIVE_CHECK(req.num == EventNum::kConnRequest && req.cr != nullptr);
    LIVE_CHECK(cr_accept(req.cr, eb, nullptr, 0).ok());
    LIVE_CHECK(next(a_.conn[k]).num == EventNum::kEstablished);
    LIVE_CHECK(next(b_.conn[k]).num == EventNum::kEstablished);
  }

  // The passive side binds its window over [off, off + len) of slot
  // kBindConn through that connection's EP; len 0 unbinds.
  void bind(uint64_t off, uint64_t len) {
    if (ended_[kBindConn]) return;
    const uint64_t va = b_.mem.lmr->va + kBindConn * kSlot + off;
    uint32_t ctx = 0;
    const Status st = rmr_bind(rmr_, b_.ep[kBindConn], b_.mem.lmr->lmr_context, va, len,
                               rc::priv::kRemoteWrite | rc::priv::kRemoteRead, 0xB1, 0, &ctx);
    if (!st.ok()) {
      // Refused only once the EP left the connected state.
      LIVE_CHECK(note_ends(kBindConn));
      return;
    }
    const Event ev = next(b_.req);
    LIVE_CHECK(ev.num == EventNum::kRmrBind && ev.cookie == 0xB1);
    if (ev.status != DtoStatus::kSuccess) {
      LIVE_CHECK(note_ends(kBindConn));
      win_len_ = 0;
      return;
    }
    win_ctx_ = ctx;
    win_off_ = off;
    win_len_ = len;
  }

  // ------------------------------------------------------------ events
  Event next(Evd* e, uint64_t timeout_us = kWaitUs) {
    Event ev;
    const Status st = evd_wait(e, timeout_us, 1, &ev, nullptr);
    LIVE_CHECK(st.ok());
    return ev;
  }
  // Connection requests the attacker caused (a replayed REQ after its
  // connection went): rejected.
  void reject_strays() {
    Event ev;
    while (evd_dequeue(b_.cr, &ev).ok())
      if (ev.num == EventNum::kConnRequest && ev.cr != nullptr) (void)cr_reject(ev.cr, nullptr, 0);
    while (evd_dequeue(a_.cr, &ev).ok())
      if (ev.num == EventNum::kConnRequest && ev.cr != nullptr) (void)cr_reject(ev.cr, nullptr, 0);
  }
  // Whether connection k reported its end on either side (read now).
  bool note_ends(size_t k) {
    for (size_t side = 0; side < 2; ++side) {
      End& e = side == 0 ? a_ : b_;
      Event ev;
      while (evd_dequeue(e.conn[k], &ev).ok()) {
        LIVE_CHECK(ev.num != EventNum::kEstablished);
        ended_[k] = true;
        reported_[side][k] = true;
      }
    }
    return ended_[k];
  }

  // ------------------------------------------------------------ transfers
  void fill(End& e, size_t off, size_t len) {
    ++salt_;
    for (size_t i = 0; i < len; ++i)
      e.mem.buf[off + i] = static_cast<uint8_t>((i * 13 + salt_ * 7 + (i >> 8)) ^ 0x5A);
  }
  bool same(const End& x, size_t xoff, const End& y, size_t yoff, size_t len) const {
    return std::memcmp(x.mem.buf.data() + xoff, y.mem.buf.data() + yoff, len) == 0;
  }
  // Waits for the completion `cookie` on `evd`; false when it failed (then
  // its connection must have reported its end).
  bool complete(Evd* evd, uint64_t cookie, size_t k, uint64_t len) {
    const Event ev = next(evd);
    LIVE_CHECK(ev.num == EventNum::kDto && ev.cookie == cookie);
    if (ev.status != DtoStatus::kSuccess) {
      // An error completes once the connection broke: its event follows
      // within the CM's time (a DREQ the attacker got in, a broken QP).
      for (int i = 0; i < 300 && !note_ends(k); ++i) {
        Event idle;
        (void)evd_wait(a_.recv, 10'000, 1, &idle, nullptr);  // progresses both
      }
      LIVE_CHECK(ended_[k]);
      return false;
    }
    if (len != UINT64_MAX) LIVE_CHECK(ev.length == len);
    return true;
  }

  void transfer(int what, size_t k, uint32_t len) {
    if (note_ends(k)) return;
    const size_t slot = k * kSlot;
    const size_t back = kConns * kSlot + slot;  // a's read-back slice
    const uint64_t cookie = ++cookie_;
    PostArgs p;
    p.cookie = cookie;
    p.nsge = 1;
    rc::Sge sge{};
    RemoteSeg remote{};
    p.sge = &sge;
    switch (what) {
      case 0:    // WRITE into b's slot k
      case 3: {  // ... or through the window
        if (what == 3 && (k != kBindConn || win_len_ == 0)) return;
        const bool via = what == 3;
        if (via) len = static_cast<uint32_t>(std::min<uint64_t>(len, win_len_));
        const size_t dst = via ? slot + win_off_ : slot;
        fill(a_, slot, len);
        sge = a_.mem.sge(slot, len);
        remote = via ? RemoteSeg{win_ctx_, b_.mem.lmr->va + dst, len}
                     : RemoteSeg{b_.mem.lmr->rmr_context, b_.mem.lmr->va + dst, len};
        p.op = rc::WrOp::kWrite;
        p.remote = &remote;
        if (!post(a_.ep[k], p, k)) return;
        if (complete(a_.req, cookie, k, UINT64_MAX)) LIVE_CHECK(same(a_, slot, b_, dst, len));
        return;
      }
      case 1: {  // SEND into a receive of b (its own queue, or the SRQ)
        const rc::Sge rs = b_.mem.sge(slot, kSlot);
        const Status rst = k == kSrqConn ? srq_post_recv(srq_, &rs, 1, cookie)
                                         : ep_post_recv(b_.ep[k], &rs, 1, cookie, 0);
        if (!rst.ok()) {
          LIVE_CHECK(k == kSrqConn || note_ends(k));
          return;
        }
        fill(a_, slot, len);
        sge = a_.mem.sge(slot, len);
        p.op = rc::WrOp::kSend;
        if (!post(a_.ep[k], p, k)) {
          if (k == kSrqConn) srq_recvs_++;  // left in the SRQ
          return;
        }
        const bool sent = complete(a_.req, cookie, k, UINT64_MAX);
        if (!sent) {
          if (k == kSrqConn) srq_recvs_++;
          return;
        }
        // The receive: of this SEND, or (SRQ) any receive left in it.
        const Event rv = next(b_.recv);
        LIVE_CHECK(rv.num == EventNum::kDto && rv.status == DtoStatus::kSuccess);
        LIVE_CHECK(rv.length == len);
        if (k == kSrqConn) {
          // A receive an earlier, failed SEND left in the SRQ may take it
          // (its buffer is the same slot); this one is then left instead.
          LIVE_CHECK(rv.cookie == cookie || srq_recvs_ > 0);
        } else {
          LIVE_CHECK(rv.cookie == cookie);
        }
        LIVE_CHECK(same(a_, slot, b_, slot, len));
        return;
      }
      case 2: {  // READ b's slot k into a's read-back slice
        fill(b_, slot, len);
        std::memset(a_.mem.buf.data() + back, 0, len);
        sge = a_.mem.sge(back, len);
        remote = RemoteSeg{b_.mem.lmr->rmr_context, b_.mem.lmr->va + slot, len};
        p.op = rc::WrOp::kRead;
        p.remote = &remote;
        if (!post(a_.ep[k], p, k)) return;
        if (complete(a_.req, cookie, k, UINT64_MAX)) LIVE_CHECK(same(b_, slot, a_, back, len));
        return;
      }
      default:
        return;
    }
  }
  bool post(Ep* ep, const PostArgs& p, size_t k) {
    const Status st = ep_post(ep, p);
    if (st.ok()) return true;
    LIVE_CHECK(note_ends(k));  // refused only once the connection ended
    return false;
  }

  // ------------------------------------------------------------ attacks
  void keep_captured() {
    wire_->with_link([&](rc::SimLink& l) {
      for (const auto& c : l.captured()) {
        if (c.bytes.size() < wire::kL2L3L4Size + sizeof(wire::Bth)) continue;
        const auto* bth = reinterpret_cast<const wire::Bth*>(c.bytes.data() + wire::kL2L3L4Size);
        if (bth->dest_qp() != 1) continue;  // CM MADs go to QP 1
        if (kept_.size() == kMaxKept) kept_.erase(kept_.begin());
        kept_.push_back(c);
      }
      l.clear_captured();
    });
  }
  void inject(int to, const std::vector<uint8_t>& f) {
    wire_->with_link(
        [&](rc::SimLink& l) { l.inject(to, f.data(), static_cast<uint32_t>(f.size())); });
    ++injected_;
  }
  void attack(uint8_t a) {
    keep_captured();
    if (kept_.empty()) return;
    const auto& src = kept_[in_.u8() % kept_.size()];
    std::vector<uint8_t> f = src.bytes;
    const int to = ((a & 8u) != 0) ? src.from_end : 1 - src.from_end;
    const size_t body = f.size() > wire::kL2L3L4Size + 4 ? f.size() - 4 : 0;
    switch (a & 7u) {
      case 4:  // replayed as it was
        break;
      case 5: {  // one byte changed, mostly in the MAD
        if (body == 0) return;
        const size_t from = (in_.u8() & 1) != 0 ? 0 : wire::kL2L3L4Size;
        const size_t at = from + in_.u16() % (body - from);
        f[at] = static_cast<uint8_t>(f[at] ^ (in_.u8() | 1u));
        fuzz::Attacker::repair(f, false);
        break;
      }
      case 6: {  // four bytes spliced in from another frame
        const auto& other = kept_[in_.u8() % kept_.size()].bytes;
        const size_t n = std::min(f.size(), other.size());
        if (n < wire::kL2L3L4Size + 8) return;
        const size_t at = wire::kL2L3L4Size + in_.u16() % (n - 4 - 4 - wire::kL2L3L4Size);
        std::memcpy(f.data() + at, other.data() + at, 4);
        fuzz::Attacker::repair(f, false);
        break;
      }
      default:
        return;
    }
    inject(to, f);
    // Let both interfaces take it in (and answer it).
    for (int i = 0; i < 4; ++i) {
      Event ev;
      (void)evd_wait(a_.recv, 200, 1, &ev, nullptr);
      LIVE_CHECK(ev.num == EventNum::kSoftware);  // nothing arrives on a's receive EVD
    }
    reject_strays();
  }

  // ------------------------------------------------------------ schedule
  void act(uint8_t a) {
    const int what = a & 7;
    if (what <= 3) {
      const size_t k = in_.u8() % kConns;
      transfer(what, k, kSizes[in_.u8() % kSizes.size()]);
    } else if (what == 7) {
      const uint8_t r = in_.u8();
      const uint64_t off = (r & 0x0Fu) * 64;
      const uint64_t len = (r & 0xF0u) == 0 ? 0 : ((r >> 4) * 200) % (kSlot - off) + 1;
      bind(off, len);
    } else {
      attack(a);
    }
  }

  // ------------------------------------------------------------ the end
  void finish() {
    // The attacker is gone.  Every connection that reported nothing still
    // moves data exactly.
    keep_captured();
    reject_strays();
    int alive = 0;
    for (size_t k = 0; k < kConns; ++k) {
      if (note_ends(k)) continue;
      transfer(0, k, 4096);
      transfer(2, k, 2049);
      if (!note_ends(k)) ++alive;
    }
    if (verbose())
      std::fprintf(stderr,
                   "live_fuzz: %d of %d connections up at the end, %llu CM frames injected\n",
                   alive, static_cast<int>(kConns), static_cast<unsigned long long>(injected_));
    // Free everything, in the consumer's order.
    // Both ends of every connection report its end (a DISCONNECTED, or the
    // BROKEN the attacker caused) before the EPs are freed.
    for (size_t k = 0; k < kConns; ++k) {
      if (!ended_[k]) LIVE_CHECK(ep_disconnect(a_.ep[k], false).ok());
      for (int i = 0; i < 500 && !(reported_[0][k] && reported_[1][k]); ++i) {
        Event ev;
        (void)evd_wait(b_.recv, 2'000, 1, &ev, nullptr);
        note_ends(k);
      }
      LIVE_CHECK(reported_[0][k] && reported_[1][k]);
    }
    LIVE_CHECK(rmr_free(rmr_).ok());
    for (End* e : {&a_, &b_})
      for (Ep* ep : e->ep) LIVE_CHECK(ep_free(ep).ok());
    LIVE_CHECK(srq_free(srq_).ok());
    LIVE_CHECK(sp_free(psp_).ok());
    reject_strays();
    for (End* e : {&a_, &b_}) {
      LIVE_CHECK(lmr_free(e->mem.lmr).ok());
      for (Evd* c : e->conn) LIVE_CHECK(evd_free(c).ok());
      LIVE_CHECK(evd_free(e->cr).ok());
      LIVE_CHECK(evd_free(e->req).ok());
      LIVE_CHECK(evd_free(e->recv).ok());
      LIVE_CHECK(pz_free(e->pz).ok());
      const Iface& f = *e->ia->iface;
      LIVE_CHECK(f.ep_by_qpn.empty());
      LIVE_CHECK(f.ep_by_comm.empty());
      LIVE_CHECK(f.listeners.empty());
      LIVE_CHECK(f.lmr_by_ctx.empty());
      LIVE_CHECK(f.srqs.empty());
      LIVE_CHECK(f.cq_evds.empty());
      LIVE_CHECK(f.pending_by_peer.empty());
      for (const auto& s : f.shards) LIVE_CHECK(s->eps == 0);
    }
    LIVE_CHECK(ia_close(a_.ia, false).ok());
    LIVE_CHECK(ia_close(b_.ia, false).ok());
    wire_->with_link([](rc::SimLink& l) {
      l.set_capture(false);
      l.clear_captured();
    });
    wire_->reset();
  }

  fuzz::Bytes& in_;
  proto::SimWire* wire_ = nullptr;
  End a_, b_;
  Srq* srq_ = nullptr;
  Sp* psp_ = nullptr;
  Rmr* rmr_ = nullptr;
  uint32_t win_ctx_ = 0;
  uint64_t win_off_ = 0, win_len_ = 0;
  std::array<bool, kConns> ended_{};
  std::array<std::array<bool, kConns>, 2> reported_{};  // [side][connection]
  std::vector<rc::SimLink::Captured> kept_;
  uint64_t cookie_ = 0, injected_ = 0;
  uint32_t salt_ = 0;
  uint32_t srq_recvs_ = 0;  // receives left in the SRQ by SENDs that failed
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 512) return 0;
  fuzz::Bytes in(data, size);
  Run(in).go();
  return 0;
}
