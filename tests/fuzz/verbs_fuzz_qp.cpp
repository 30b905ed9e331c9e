// The verbs fuzzer's actions on queue pairs: creation with caps, CQs and
// SRQs of any context, destruction, and ibv_modify_qp with well-formed and
// mutated masks and values, each answer checked against the RC state table
// (verbs_rules.hpp).

#include <cerrno>

#include "verbs_run.hpp"

namespace dpdat::fuzz::verbs_world {

namespace {

constexpr uint32_t kWrClass[] = {0, 1, 16, 4096, 4097};
constexpr uint32_t kSgeClass[] = {0, 1, 2, 8, 9};
constexpr uint32_t kInlineClass[] = {0, 1, 64, 512, 513};
constexpr ibv_qp_type kTypes[] = {IBV_QPT_RC, IBV_QPT_RC,         IBV_QPT_RC,       IBV_QPT_UC,
                                  IBV_QPT_UD, IBV_QPT_RAW_PACKET, IBV_QPT_XRC_SEND, IBV_QPT_DRIVER};

template <typename T, size_t N>
T of(const T (&a)[N], uint8_t b) {
  return a[b % N];
}

bool active(ibv_qp_state s) { return s == IBV_QPS_RTR || s == IBV_QPS_RTS || s == IBV_QPS_SQD; }

// The first PSN QP slot i sends from (and its peer expects).
uint32_t psn_of(int i) { return 0x10000u * static_cast<uint32_t>(i + 1) + 0x123; }

}  // namespace

// ------------------------------------------------------------------ create / destroy

int Run::create_qp(int p, int scq, int rcq, int srq, const ibv_qp_cap& cap, bool sig_all) {
  const int i = free_slot(w_.qp, [](const QpS& s) { return s.q != nullptr; });
  if (i < 0) return -1;
  ibv_qp_init_attr init{};
  init.qp_context = &w_.qp[i];
  init.send_cq = scq >= 0 ? w_.cq[scq].cq : nullptr;
  init.recv_cq = rcq >= 0 ? w_.cq[rcq].cq : nullptr;
  init.srq = srq >= 0 ? w_.srq[srq].s : nullptr;
  init.qp_type = IBV_QPT_RC;
  init.cap = cap;
  init.sq_sig_all = sig_all ? 1 : 0;
  errno = 0;
  ibv_qp* q = ibv_create_qp(p >= 0 ? w_.pd[p].p : nullptr, &init);
  const int c = p >= 0 ? w_.pd[p].ctx : -1;
  const bool missing = p < 0 || scq < 0 || (rcq < 0 && srq < 0);
  const bool too_big = cap.max_send_wr > 4096 || cap.max_recv_wr > 4096 || cap.max_send_sge > 8 ||
                       cap.max_recv_sge > 8 || cap.max_inline_data > 512;
  // A CQ or SRQ of another context: the kernel finds no such object.
  const bool foreign =
      c >= 0 && ((scq >= 0 && w_.cq[scq].ctx != c) || (rcq >= 0 && w_.cq[rcq].ctx != c) ||
                 (srq >= 0 && w_.srq[srq].ctx != c));
  if (missing || too_big || foreign) {
    VF_CHECK(q == nullptr && errno == EINVAL);
    return -1;
  }
  // dpdat takes an SRQ's receives in its own PD only, and wants a receive
  // CQ named even with an SRQ; either may be refused, with EINVAL.
  if (q == nullptr && ((srq >= 0 && w_.srq[srq].pd != p) || rcq < 0)) {
    VF_CHECK(errno == EINVAL);
    return -1;
  }
  VF_CHECK(q != nullptr);
  VF_CHECK(q->pd == w_.pd[p].p && q->context == w_.ctx[c].c && q->qp_context == &w_.qp[i]);
  VF_CHECK(q->state == IBV_QPS_RESET && q->qp_type == IBV_QPT_RC && q->qp_num != 0);
  VF_CHECK(init.cap.max_send_wr >= cap.max_send_wr && init.cap.max_send_sge >= cap.max_send_sge);
  VF_CHECK(init.cap.max_inline_data >= cap.max_inline_data);
  // With an SRQ the receive caps are not the QP's (ibv_create_qp(3)).
  if (srq < 0)
    VF_CHECK(init.cap.max_recv_wr >= cap.max_recv_wr && init.cap.max_recv_sge >= cap.max_recv_sge);
  QpS& x = w_.qp[i];
  x = QpS{};
  x.q = q;
  x.pd = p;
  x.ctx = c;
  x.scq = scq;
  x.rcq = rcq >= 0 ? rcq : scq;
  x.srq = srq;
  x.serial = ++w_.serials;
  x.nums.push_back(q->qp_num);
  x.cap = init.cap;
  x.sig_all = sig_all;
  return i;
}

void Run::create_qp_action() {
  const int p = any_pd(in_.u8());
  const uint8_t b = in_.u8(), s = in_.u8(), k = in_.u8();
  const int scq = (b & 7) < 6 ? any_cq(b & 7) : -1;
  const int rcq = ((b >> 3) & 7) < 6 ? any_cq((b >> 3) & 7) : -1;
  const int srq = (b & 0x40) != 0 ? any_srq(b >> 7) : -1;
  ibv_qp_cap cap{};
  cap.max_send_wr = of(kWrClass, s);
  cap.max_recv_wr = of(kWrClass, s >> 3);
  cap.max_send_sge = of(kSgeClass, k);
  cap.max_recv_sge = of(kSgeClass, k >> 3);
  cap.max_inline_data = of(kInlineClass, s >> 6);
  const ibv_qp_type type = of(kTypes, k >> 5);
  if (type != IBV_QPT_RC && p >= 0 && scq >= 0) {
    // RC queue pairs are fuzzed below; a UD QP is made, taken to INIT and
    // refused a skip to RTS; the other types are not supported.
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = w_.cq[scq].cq;
    init.qp_type = type;
    init.cap = ibv_qp_cap{1, 1, 1, 1, 0};
    errno = 0;
    ibv_qp* q = ibv_create_qp(w_.pd[p].p, &init);
    if (type == IBV_QPT_UD && w_.cq[scq].ctx != w_.pd[p].ctx) {  // as for RC
      VF_CHECK(q == nullptr && errno == EINVAL);
      return;
    }
    if (type == IBV_QPT_UD) {
      VF_CHECK(q != nullptr && q->qp_type == IBV_QPT_UD && q->state == IBV_QPS_RESET);
      if (q == nullptr) return;
      ibv_qp_attr a{};
      a.qp_state = IBV_QPS_INIT;
      a.port_num = 1;
      VF_CHECK(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) ==
               0);
      a.qp_state = IBV_QPS_RTS;  // INIT -> RTS skips RTR
      VF_CHECK(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == EINVAL);
      VF_CHECK(ibv_destroy_qp(q) == 0);
      return;
    }
    VF_CHECK(q == nullptr);
    VF_CHECK(errno == EOPNOTSUPP || errno == EINVAL);
    return;
  }
  (void)create_qp(p, scq, rcq, srq, cap, (k & 0x80) != 0);
}

void Run::destroy_qp(int i) {
  QpS& x = w_.qp[i];
  VF_CHECK(ibv_destroy_qp(x.q) == 0);
  w_.forget(Wr::kSend, x.serial);
  x = QpS{};
}

void Run::destroy_qp_action() {
  const uint8_t b = in_.u8();
  if ((b & 0x80) != 0) {
    VF_CHECK(ibv_destroy_qp(nullptr) == EINVAL);
    return;
  }
  const int i = any_qp(b);
  if (i >= 0) destroy_qp(i);
}

// ------------------------------------------------------------------ states

ibv_qp_state Run::sync_state(int i) {
  QpS& x = w_.qp[i];
  ibv_qp_attr a{};
  ibv_qp_init_attr ia{};
  VF_CHECK(ibv_query_qp(x.q, &a, IBV_QP_STATE | IBV_QP_CAP, &ia) == 0);
  if (a.qp_state != x.st) {
    VF_CHECK(a.qp_state == IBV_QPS_ERR && active(x.st));
    x.st = IBV_QPS_ERR;
  }
  VF_CHECK(x.q->qp_num == x.nums.back());
  VF_CHECK(ia.qp_type == IBV_QPT_RC && ia.qp_context == &x);
  VF_CHECK(ia.send_cq == w_.cq[x.scq].cq && ia.recv_cq == w_.cq[x.rcq].cq);
  VF_CHECK(ia.srq == (x.srq >= 0 ? w_.srq[x.srq].s : nullptr));
  VF_CHECK((ia.sq_sig_all != 0) == x.sig_all);
  VF_CHECK(ia.cap.max_send_wr == x.cap.max_send_wr && ia.cap.max_send_sge == x.cap.max_send_sge);
  VF_CHECK(ia.cap.max_recv_wr == x.cap.max_recv_wr && ia.cap.max_recv_sge == x.cap.max_recv_sge);
  VF_CHECK(a.cap.max_inline_data == x.cap.max_inline_data);
  return x.st;
}

namespace {

// Attributes a careful application gives QP slot i towards QP slot `peer`.
ibv_qp_attr good_attr(const World& w, int i, int peer) {
  ibv_qp_attr a{};
  a.port_num = 1;
  a.pkey_index = 0;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  a.path_mtu = w.ctx[w.qp[i].ctx].mtu;
  a.dest_qp_num = w.qp[peer].q->qp_num;
  a.rq_psn = psn_of(peer);
  a.sq_psn = psn_of(i);
  a.max_dest_rd_atomic = 4;
  a.max_rd_atomic = 4;
  a.min_rnr_timer = 1;
  a.timeout = 10;
  a.retry_cnt = 3;
  a.rnr_retry = 3;
  a.en_sqd_async_notify = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.grh.sgid_index = 0;
  a.ah_attr.grh.dgid = w.ctx[w.qp[peer].ctx].gid;
  return a;
}

// Checks ibv_modify_qp's answer rc for QP x, which was in `cur` and was
// given (a, mask); `well_formed`: exactly the required attributes of an
// allowed transition, with good values (then it must succeed).
void check_modify(QpS& x, const World& w, ibv_qp_state cur, const ibv_qp_attr& a, int mask, int rc,
                  uint32_t num_before, bool well_formed) {
  const ibv_qp_state to = (mask & IBV_QP_STATE) != 0 ? a.qp_state : cur;
  ibv_qp_attr q{};
  ibv_qp_init_attr ia{};
  VF_CHECK(ibv_query_qp(x.q, &q, IBV_QP_STATE, &ia) == 0);
  if (rc != 0) {
    VF_CHECK(rc > 0 && verbs_rules::modify_errno_ok(rc));
    VF_CHECK(!well_formed);
    // Nothing changed (but the QP may have failed on its own meanwhile).
    VF_CHECK(x.q->qp_num == num_before);
    VF_CHECK(q.qp_state == cur || (q.qp_state == IBV_QPS_ERR && active(cur)));
    x.st = q.qp_state;
    return;
  }
  const verbs_rules::Masks m = verbs_rules::masks(cur, to);
  const int given = mask | IBV_QP_STATE;
  VF_CHECK(verbs_rules::transition_ok(cur, to));
  VF_CHECK((given & m.required) == m.required);
  VF_CHECK((given & ~(m.required | m.optional)) == 0);
  VF_CHECK(verbs_rules::values_ok(a, mask, kMaxRdAtomic, w.ctx[x.ctx].mtu));
  VF_CHECK(q.qp_state == to || (q.qp_state == IBV_QPS_ERR && active(to)));
  if (to == IBV_QPS_RESET) {
    ++x.gen;  // what was posted need not complete any more
    if (x.q->qp_num != x.nums.back()) x.nums.push_back(x.q->qp_num);
  } else {
    VF_CHECK(x.q->qp_num == num_before);
    // What was set is what ibv_query_qp reports.
    if ((mask & IBV_QP_DEST_QPN) != 0) VF_CHECK(q.dest_qp_num == a.dest_qp_num);
    if ((mask & IBV_QP_PATH_MTU) != 0) VF_CHECK(q.path_mtu == a.path_mtu);
    if ((mask & IBV_QP_SQ_PSN) != 0) VF_CHECK(q.sq_psn == (a.sq_psn & 0xFFFFFF));
    if ((mask & IBV_QP_RQ_PSN) != 0) VF_CHECK(q.rq_psn == (a.rq_psn & 0xFFFFFF));
    if ((mask & IBV_QP_ACCESS_FLAGS) != 0) VF_CHECK(q.qp_access_flags == a.qp_access_flags);
    if ((mask & IBV_QP_RETRY_CNT) != 0) VF_CHECK(q.retry_cnt == a.retry_cnt);
  }
  x.st = q.qp_state;
}

}  // namespace

bool Run::step(int i, ibv_qp_state to, int peer) {
  QpS& x = w_.qp[i];
  const ibv_qp_state cur = sync_state(i);
  if (!verbs_rules::transition_ok(cur, to)) return false;
  ibv_qp_attr a = good_attr(w_, i, peer);
  a.qp_state = to;
  const int mask = verbs_rules::masks(cur, to).required;
  const uint32_t num = x.q->qp_num;
  const int rc = ibv_modify_qp(x.q, &a, mask);
  check_modify(x, w_, cur, a, mask, rc, num, true);
  return rc == 0;
}

void Run::modify_qp_action() {
  const int i = any_qp(in_.u8());
  if (i < 0) return;
  QpS& x = w_.qp[i];
  const uint8_t how = in_.u8(), tb = in_.u8();
  const int peer_slot = any_qp(in_.u8());
  const int peer = peer_slot >= 0 ? peer_slot : i;
  const auto to = static_cast<ibv_qp_state>(tb % 8);  // SQE and UNKNOWN among them
  const ibv_qp_state cur = sync_state(i);
  const bool allowed = verbs_rules::transition_ok(cur, to);
  const verbs_rules::Masks m =
      allowed ? verbs_rules::masks(cur, to) : verbs_rules::Masks{IBV_QP_STATE, 0};
  int mask = m.required;
  switch (how % 6) {
    case 1:
      mask |= m.optional & static_cast<int>(in_.u32());
      break;
    case 2:
      mask &= ~(1 << (in_.u8() % 21));  // one required attribute missing
      break;
    case 3:
      mask |= 1 << (in_.u8() % 26);  // one more, up to IBV_QP_RATE_LIMIT
      break;
    case 4:
      mask = static_cast<int>(in_.u32() & ((1u << 26) - 1));
      break;
    case 5:
      mask &= ~IBV_QP_STATE;  // no state: the QP stays where it is
      break;
    default:
      break;
  }
  ibv_qp_attr a = good_attr(w_, i, peer);
  a.qp_state = to;
  a.cur_qp_state = cur;
  const bool good = (how & 0x80) == 0;
  for (int k = good ? 0 : 1 + (how >> 6 & 1); k > 0; --k) {
    const uint8_t f = in_.u8(), v = in_.u8();
    switch (f % 16) {
      case 0:
        a.port_num = v;
        break;
      case 1:
        a.pkey_index = v;
        break;
      case 2:
        a.retry_cnt = v;
        break;
      case 3:
        a.rnr_retry = v;
        break;
      case 4:
        a.timeout = v;
        break;
      case 5:
        a.min_rnr_timer = v;
        break;
      case 6:
        a.max_rd_atomic = v;
        break;
      case 7:
        a.max_dest_rd_atomic = v;
        break;
      case 8:
        a.path_mtu = static_cast<ibv_mtu>(v % 8);
        break;
      case 9:
        a.ah_attr.is_global = v & 1;
        a.ah_attr.port_num = v >> 1;
        break;
      case 10:
        a.ah_attr.grh.sgid_index = v;
        break;
      case 11:
        // A GID that is not an address of ours nor of anybody's: all zero,
        // link-local (not IPv4-mapped), or mapped 0.0.0.0.  (A mapped
        // address nobody holds is left out: resolving it takes seconds.)
        a.ah_attr.grh.dgid = ibv_gid{};
        if ((v & 1) != 0) a.ah_attr.grh.dgid.raw[0] = 0xFE;
        if ((v & 2) != 0) a.ah_attr.grh.dgid.raw[10] = a.ah_attr.grh.dgid.raw[11] = 0xFF;
        break;
      case 12:
        a.cur_qp_state = static_cast<ibv_qp_state>(v % 8);
        break;
      case 13:
        a.qp_access_flags = v;
        break;
      case 14:
        a.dest_qp_num = v | (uint32_t{v} << 16);
        a.rq_psn = 0xFF000000u | v;
        break;
      default:
        a.sq_psn = 0xFFFFFF00u | v;
        a.en_sqd_async_notify = v & 1;
        break;
    }
  }
  const uint32_t num = x.q->qp_num;
  const int rc = ibv_modify_qp(x.q, &a, mask);
  check_modify(x, w_, cur, a, mask, rc, num, good && how % 6 == 0 && allowed);
}

void Run::connect(int i, int j) {
  for (int k : {i, j})
    if (sync_state(k) != IBV_QPS_RESET) VF_CHECK(step(k, IBV_QPS_RESET, k));
  for (ibv_qp_state s : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
    VF_CHECK(step(i, s, j));
    if (j != i) VF_CHECK(step(j, s, i));
  }
}

void Run::connect_action() {
  const int i = any_qp(in_.u8());
  const int j = any_qp(in_.u8());
  if (i >= 0 && j >= 0) connect(i, j);
}

// Two QPs, on devices A and B, connected, each with its PD, MR, CQ (B's
// with a channel when asked).
void Run::small_world() {
  const uint8_t b = in_.u8();
  const int pa = alloc_pd(0), pb = alloc_pd((b & 8) != 0 ? 2 : 1);
  if (pa < 0 || pb < 0) return;
  const unsigned all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                       IBV_ACCESS_REMOTE_ATOMIC;
  (void)reg_mr(pa, all, 0, kRegion, 0);
  (void)reg_mr(pb, all, 0, kRegion, (b & 1) != 0 ? 1 : 0);
  const int ch = (b & 2) != 0 ? create_ch(w_.pd[pb].ctx) : -1;
  const int ca = create_cq(0, 32, -1), cb = create_cq(w_.pd[pb].ctx, 32, ch);
  if (ca < 0 || cb < 0) return;
  const ibv_qp_cap cap{16, 16, 2, 2, (b & 4) != 0 ? 64u : 0u};
  const int qa = create_qp(pa, ca, ca, -1, cap, false);
  const int qb = create_qp(pb, cb, cb, -1, cap, (b & 0x10) != 0);
  if (qa >= 0 && qb >= 0) connect(qa, qb);
}

}  // namespace dpdat::fuzz::verbs_world
