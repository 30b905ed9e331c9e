#pragma once
// One input of the verbs call-sequence fuzzer (verbs_fuzz.cpp): the actions
// over the world's objects (verbs_fuzz_objects.cpp: PDs, MRs, channels, CQs,
// SRQs, queries; verbs_fuzz_qp.cpp: QPs and their states;
// verbs_fuzz_data.cpp: posts, polls and the final drain).

#include <array>
#include <vector>

#include "fuzz_bytes.hpp"
#include "verbs_world.hpp"

namespace dpdat::fuzz::verbs_world {

class Run {
 public:
  explicit Run(Bytes& in) : in_(in) {}
  void go();

 private:
  // verbs_fuzz.cpp
  void act(uint8_t op);
  void open_ctx(int c);
  void close_ctx(int c);
  void reopen();
  void finish();
  // verbs_fuzz_objects.cpp
  int alloc_pd(int c);
  void dealloc_pd();
  int reg_mr(int p, unsigned access, uint64_t off, uint64_t len, int iova_kind);
  void reg_mr_action();
  void dereg_mr();
  int create_ch(int c);
  void destroy_ch();
  int create_cq(int c, int cqe, int ch);
  void create_cq_action();
  void destroy_cq();
  void resize_cq();
  void create_srq();
  void destroy_srq();
  void modify_srq();
  void notify();
  void query();
  void async_events(int c);
  // verbs_fuzz_qp.cpp
  int create_qp(int p, int scq, int rcq, int srq, const ibv_qp_cap& cap, bool sig_all);
  void create_qp_action();
  void destroy_qp(int i);
  void destroy_qp_action();
  void modify_qp_action();
  // Moves QP i to `to` with exactly the required attributes and good values
  // (peer: the QP slot whose number and address RTR takes); true if it did.
  bool step(int i, ibv_qp_state to, int peer);
  void connect(int i, int j);
  void connect_action();
  // Refreshes the model's state of QP i from ibv_query_qp: a QP may have
  // gone to ERR on its own (retries exhausted, a NAK, a protection error).
  ibv_qp_state sync_state(int i);
  void small_world();
  // verbs_fuzz_data.cpp
  void post_send();
  void post_recv();
  void post_srq_recv();
  ibv_sge sge(bool host);
  void poll(uint8_t how);
  int poll_cq(int c, int n);
  void drain();

  // The (b % N)-th slot, or the next live one after it; -1 when none is.
  template <typename S, size_t N, typename F>
  static int pick(uint8_t b, const std::array<S, N>& a, F is_live) {
    for (size_t k = 0; k < N; ++k) {
      const size_t i = (b + k) % N;
      if (is_live(a[i])) return static_cast<int>(i);
    }
    return -1;
  }
  template <typename S, size_t N, typename F>
  static int free_slot(const std::array<S, N>& a, F is_live) {
    for (size_t i = 0; i < N; ++i)
      if (!is_live(a[i])) return static_cast<int>(i);
    return -1;
  }
  int any_pd(uint8_t b) const {
    return pick(b, w_.pd, [](const PdS& s) { return s.p != nullptr; });
  }
  int any_mr(uint8_t b) const {
    return pick(b, w_.mr, [](const MrS& s) { return s.m != nullptr; });
  }
  int any_ch(uint8_t b) const {
    return pick(b, w_.ch, [](const ChS& s) { return s.ch != nullptr; });
  }
  int any_cq(uint8_t b) const {
    return pick(b, w_.cq, [](const CqS& s) { return s.cq != nullptr; });
  }
  int any_srq(uint8_t b) const {
    return pick(b, w_.srq, [](const SrqS& s) { return s.s != nullptr; });
  }
  int any_qp(uint8_t b) const {
    return pick(b, w_.qp, [](const QpS& s) { return s.q != nullptr; });
  }

  Bytes& in_;
  World w_;
  Slots<std::vector<const void*>, kCtx> base_;  // the objects of an IA alone (sorted)
  size_t fds_ = 0;
};

}  // namespace dpdat::fuzz::verbs_world
