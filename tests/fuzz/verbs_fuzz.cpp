// Stateful libFuzzer target over dpdat's verbs front (dat_core/verbs, built
// into this program) on the proto tier's simulated wire: the input is a
// sequence of verbs calls — create, modify, post, poll, destroy — in any
// order and with invalid arguments, over a small table of live objects in
// three contexts (device A, device B, a second context on device A; see
// verbs_world.hpp).  Both devices progress inline, in the calls themselves.
//
// Each input byte chooses an action (byte % kActions); the bytes after it
// are its operands (which slot, which variant, which size class):
//    0 alloc PD            1 dealloc PD (or NULL)   2 register MR (iova, access)
//    3 deregister MR       4 create channel         5 destroy channel
//    6 create CQ           7 destroy CQ             8 resize CQ
//    9 create SRQ         10 destroy SRQ           11 modify SRQ
//   12 create QP          13 destroy QP            14 modify QP (masks, values)
//   15 connect two QPs    16 post send (1-3 WRs)   17 post receive
//   18 post SRQ receive   19 poll CQ (odd sizes)   20 arm CQ, read channel
//   21 queries, async events, address handles      22 a small world
//   23 close and reopen the third context
//
// Invariants (abort on violation), each from the verbs man pages:
//  - no crash, no UB, no leak (ASan/UBSan, LeakSanitizer after each input);
//  - every failing call answers with an errno the man page allows, and a
//    failed ibv_modify_qp leaves the QP's state and number unchanged; a
//    transition IBA forbids, one without its required attributes, with one
//    it does not take, or with a value out of range never succeeds; a
//    well-formed one (required attributes, good values) always does;
//  - destroying a PD, CQ, channel or SRQ still in use answers EBUSY and
//    leaves it usable; one not in use is destroyed;
//  - objects of another context are refused (EINVAL);
//  - a send posted before RTS, in SQD, or with more SGEs than the QP's cap,
//    too much inline data or an opcode RC has not, fails with bad_wr on the
//    first request not posted, and the requests before it are posted;
//  - every completion names a request that was posted and not yet
//    completed, on the CQ its QP sends or receives to, with its QP's
//    number; an unsignalled send completes only in error; success carries
//    the request's opcode, and a receive no more bytes than it scattered;
//    no completion of a destroyed QP's requests;
//  - async events name live objects of their context;
//  - at the end every QP goes to ERR and every receive and signalled send
//    still outstanding completes (flushed); then everything is destroyed,
//    the front's tables and the IAs hold nothing of the input, and the
//    file descriptors are as before.

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "fuzz_bytes.hpp"
#include "objects.hpp"
#include "sim_factory.hpp"
#include "verbs_run.hpp"

namespace dpdat::fuzz::verbs_world {

namespace {

constexpr int kActions = 24;

size_t open_fds() {
  DIR* d = opendir("/proc/self/fd");
  VF_CHECK(d != nullptr);
  size_t n = 0;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

ibv_device* device(int i) {
  static ibv_device** list = ibv_get_device_list(nullptr);  // lives for the process
  VF_CHECK(list != nullptr && list[0] != nullptr && list[1] != nullptr);
  return list[i];
}

verbs::Context* front(ibv_context* c) { return verbs::ctx_of(c); }

// The objects the context's IA holds, sorted.
std::vector<const void*> children(ibv_context* c) {
  std::vector<const void*> v(front(c)->ia->children.begin(), front(c)->ia->children.end());
  std::sort(v.begin(), v.end());
  return v;
}

constexpr const char* kStateNames[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR", "?"};

bool trace() {
  static const bool v = std::getenv("VERBS_FUZZ_TRACE") != nullptr;
  return v;
}
bool verbose() {
  static const bool v = std::getenv("VERBS_FUZZ_VERBOSE") != nullptr || trace();
  return v;
}

}  // namespace

void Run::go() {
  w_.trace = trace();
  fds_ = open_fds();
  for (int c = 0; c < kCtx; ++c) open_ctx(c);
  for (int i = 0; i < kMr; ++i) w_.buf[i].assign(kRegion, static_cast<uint8_t>(i));
  int n = 0;
  while (!in_.empty()) {
    g_action = n++;
    act(in_.u8());
  }
  g_action = -1;
  finish();
}

void Run::act(uint8_t op) {
  static constexpr const char* kNames[kActions] = {
      "alloc PD",      "dealloc PD", "reg MR",    "dereg MR",   "create channel", "destroy channel",
      "create CQ",     "destroy CQ", "resize CQ", "create SRQ", "destroy SRQ",    "modify SRQ",
      "create QP",     "destroy QP", "modify QP", "connect",    "post send",      "post recv",
      "post SRQ recv", "poll",       "notify",    "query",      "small world",    "reopen"};
  if (trace()) std::fprintf(stderr, "verbs_fuzz: action %d: %s\n", g_action, kNames[op % kActions]);
  switch (op % kActions) {
    case 0:
      (void)alloc_pd(in_.u8() % kCtx);
      break;
    case 1:
      dealloc_pd();
      break;
    case 2:
      reg_mr_action();
      break;
    case 3:
      dereg_mr();
      break;
    case 4:
      (void)create_ch(in_.u8() % kCtx);
      break;
    case 5:
      destroy_ch();
      break;
    case 6:
      create_cq_action();
      break;
    case 7:
      destroy_cq();
      break;
    case 8:
      resize_cq();
      break;
    case 9:
      create_srq();
      break;
    case 10:
      destroy_srq();
      break;
    case 11:
      modify_srq();
      break;
    case 12:
      create_qp_action();
      break;
    case 13:
      destroy_qp_action();
      break;
    case 14:
      modify_qp_action();
      break;
    case 15:
      connect_action();
      break;
    case 16:
      post_send();
      break;
    case 17:
      post_recv();
      break;
    case 18:
      post_srq_recv();
      break;
    case 19:
      poll(in_.u8());
      break;
    case 20:
      notify();
      break;
    case 21:
      query();
      break;
    case 22:
      small_world();
      break;
    default:
      reopen();
      break;
  }
}

void Run::open_ctx(int c) {
  CtxS& x = w_.ctx[c];
  x.c = ibv_open_device(device(c == 1 ? 1 : 0));
  VF_CHECK(x.c != nullptr);
  VF_CHECK(fcntl(x.c->async_fd, F_SETFL, fcntl(x.c->async_fd, F_GETFL) | O_NONBLOCK) == 0);
  VF_CHECK(ibv_query_gid(x.c, 1, 0, &x.gid) == 0);
  ibv_port_attr pa{};
  VF_CHECK(ibv_query_port(x.c, 1, &pa) == 0);
  x.mtu = pa.active_mtu;
  base_[c] = children(x.c);
}

void Run::close_ctx(int c) {
  CtxS& x = w_.ctx[c];
  verbs::Context* f = front(x.c);
  async_events(c);
  // Nothing of the input is left: the front's tables, the IA's objects.
  VF_CHECK(f->qps.empty() && f->srqs.empty() && f->cqs.empty());
  VF_CHECK(children(x.c) == base_[c]);
  VF_CHECK(ibv_close_device(x.c) == 0);
  x.c = nullptr;
}

// The third context (a second one on device A), closed once it holds
// nothing and opened again.
void Run::reopen() {
  if (!w_.ctx_empty(2)) return;
  close_ctx(2);
  open_ctx(2);
}

void Run::finish() {
  if (verbose()) {
    std::fprintf(stderr, "verbs_fuzz: %llu completions polled (%llu successful) before the end;",
                 static_cast<unsigned long long>(w_.completions),
                 static_cast<unsigned long long>(w_.successes));
    for (int i = 0; i < kQp; ++i)
      if (w_.qp[i].q != nullptr) std::fprintf(stderr, " QP%d %s", i, kStateNames[w_.qp[i].st % 8]);
    std::fprintf(stderr, "\n");
  }
  drain();
  for (int i = 0; i < kQp; ++i)
    if (w_.qp[i].q != nullptr) destroy_qp(i);
  for (SrqS& s : w_.srq)
    if (s.s != nullptr) {
      VF_CHECK(ibv_destroy_srq(s.s) == 0);
      w_.forget(Wr::kSrqRecv, s.serial);
      s = SrqS{};
    }
  for (CqS& q : w_.cq)
    if (q.cq != nullptr) {
      VF_CHECK(ibv_destroy_cq(q.cq) == 0);
      q = CqS{};
    }
  for (MrS& m : w_.mr)
    if (m.m != nullptr) {
      VF_CHECK(ibv_dereg_mr(m.m) == 0);
      m = MrS{};
    }
  for (ChS& h : w_.ch)
    if (h.ch != nullptr) {
      VF_CHECK(ibv_destroy_comp_channel(h.ch) == 0);
      h = ChS{};
    }
  for (PdS& p : w_.pd)
    if (p.p != nullptr) {
      VF_CHECK(ibv_dealloc_pd(p.p) == 0);
      p = PdS{};
    }
  for (int c = 0; c < kCtx; ++c) close_ctx(c);
  // Every interface of the input holds no queue pair, memory region, SRQ or
  // completion queue any more, and no descriptor is left open.
  VF_CHECK(open_fds() == fds_);
  w_.clear_ledger();
}

}  // namespace dpdat::fuzz::verbs_world

using dpdat::fuzz::verbs_world::Run;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Two devices on the two ends of the simulated wire, progressing inline.
  setenv("DPDAT_VERBS_DEVICES", "vfa,vfb", 1);
  setenv("DPDAT_IA_VFA", "ring=0;ip=10.77.0.1;progress=inline", 1);
  setenv("DPDAT_IA_VFB", "ring=1;ip=10.77.0.2;progress=inline", 1);
  dpdat::proto::install_sim_link(0x7E4B5);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1024) return 0;
  dpdat::fuzz::Bytes in(data, size);
  Run(in).go();
  return 0;
}
