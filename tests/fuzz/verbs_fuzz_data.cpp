// The verbs fuzzer's data path: lists of send and receive requests with
// keys, addresses and lengths of every kind (stale, foreign, oversized,
// unaligned), posted in any state; polls of odd sizes; and the final drain,
// where every QP goes to ERR and what must complete does.

#include <chrono>
#include <cstdio>
#include <vector>

#include "verbs_run.hpp"

namespace dpdat::fuzz::verbs_world {

namespace {

constexpr uint32_t kLen[] = {0,    1,    8,     64,       512,        1024,
                             4096, 4097, 65536, 1u << 30, 0x7FFFFFFF, 0xFFFFFFFF};
constexpr int kPollN[] = {-1, 0, 1, 2, 3, 8, 16, 64};

template <typename T, size_t N>
T of(const T (&a)[N], uint8_t b) {
  return a[b % N];
}

bool reads_host(ibv_wr_opcode op) {
  return op != IBV_WR_RDMA_READ && op != IBV_WR_ATOMIC_CMP_AND_SWP &&
         op != IBV_WR_ATOMIC_FETCH_AND_ADD;
}

}  // namespace

// One scatter/gather entry.  `host`: for inline data, an address the
// program can read for its whole length (the key is not looked at); else an
// address in a region's iova space (or past it, or anywhere) with a key of
// that region, of another, stale or made up.
ibv_sge Run::sge(bool host) {
  const uint8_t k = in_.u8(), o = in_.u8(), l = in_.u8();
  const int m = (k & 7) % kMr;
  const MrS& x = w_.mr[m];
  uint32_t key = x.key;
  switch ((k >> 3) & 3) {
    case 1:
      key = w_.mr[(m + 1) % kMr].key;
      break;
    case 2:
      key = in_.u32();
      break;
    case 3:
      key ^= 0x100;
      break;
    default:
      break;
  }
  uint32_t len = of(kLen, l);
  if (host) {
    const uint64_t off = (o % 64) * 64;
    if (len > kRegion - off) len = static_cast<uint32_t>(kRegion - off);
    return ibv_sge{reinterpret_cast<uintptr_t>(w_.buf[m].data() + off), len, key};
  }
  const uint64_t base = x.m != nullptr ? x.iova : reinterpret_cast<uintptr_t>(w_.buf[m].data());
  const uint64_t size = x.m != nullptr ? x.m->length : kRegion;
  uint64_t addr = base;
  switch (o % 8) {
    case 1:
      addr += (o >> 3) * 8;
      break;
    case 2:
      addr += size - 8;
      break;
    case 3:
      addr += size;
      break;
    case 4:
      addr -= 8;
      break;
    case 5:
      addr += uint64_t{1} << 40;
      break;
    case 6:
      addr = in_.u64();
      break;
    case 7:
      addr += size / 2;
      break;
    default:
      break;
  }
  return ibv_sge{addr, len, key};
}

void Run::post_send() {
  const int i = any_qp(in_.u8());
  if (i < 0) return;
  QpS& x = w_.qp[i];
  const size_t n = 1 + in_.u8() % 3;
  std::vector<ibv_send_wr> wrs(n);
  std::vector<std::vector<ibv_sge>> sges(n);
  size_t first_bad = n;  // none
  for (size_t k = 0; k < n; ++k) {
    ibv_send_wr& wr = wrs[k];
    const uint8_t ob = in_.u8(), fb = in_.u8(), nb = in_.u8(), rb = in_.u8();
    wr.opcode = static_cast<ibv_wr_opcode>(ob % 16);
    wr.send_flags = fb;  // FENCE, SIGNALED, SOLICITED, INLINE, IP_CSUM, and unknown bits
    const bool inl = (fb & IBV_SEND_INLINE) != 0 && reads_host(wr.opcode);
    const int num = nb == 0xFF ? -1 : static_cast<int>(nb % (x.cap.max_send_sge + 2));
    uint64_t total = 0;
    for (int s = 0; s < num; ++s) {
      sges[k].push_back(sge(inl));
      total += sges[k].back().length;
    }
    wr.wr_id = w_.next_id();
    wr.next = k + 1 < n ? &wrs[k + 1] : nullptr;
    wr.sg_list = num > 0 ? sges[k].data() : nullptr;
    wr.num_sge = num;
    wr.imm_data = 0xC0DE0000u | ob;
    // The remote side: a region's key (or another's, made up, one bit off)
    // and an address in, at the end of, before, or far from it; atomics
    // aligned or not.
    const MrS& r = w_.mr[(rb & 7) % kMr];
    uint32_t rkey = r.m != nullptr ? r.m->rkey : r.key;
    if (((rb >> 3) & 3) == 1) rkey = w_.mr[((rb & 7) + 1) % kMr].key;
    if (((rb >> 3) & 3) == 2) rkey ^= 1;
    const uint64_t rbase = r.m != nullptr ? r.iova : 0;
    const uint64_t rsize = r.m != nullptr ? r.m->length : kRegion;
    const uint64_t roff[] = {0, 8, rsize - 8, rsize, ~uint64_t{7}, 1, rsize / 2, 3};
    const uint64_t raddr = rbase + roff[rb >> 5];
    if (wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
      wr.wr.atomic.remote_addr = raddr;
      wr.wr.atomic.rkey = rkey;
      wr.wr.atomic.compare_add = ob;
      wr.wr.atomic.swap = fb;
    } else {
      wr.wr.rdma.remote_addr = raddr;
      wr.wr.rdma.rkey = rkey;
    }
    // What ibv_post_send must refuse whatever the QP's state.
    const bool bad = num < 0 || static_cast<uint32_t>(num) > x.cap.max_send_sge ||
                     !verbs_rules::rc_opcode(wr.opcode) || (inl && total > x.cap.max_inline_data);
    if (bad && first_bad == n) first_bad = k;
  }
  const ibv_qp_state st = sync_state(i);
  ibv_send_wr* badwr = nullptr;
  const int rc = ibv_post_send(x.q, wrs.data(), &badwr);
  // Before RTS and in SQD nothing is posted.
  if (st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_RTR || st == IBV_QPS_SQD)
    VF_CHECK(rc != 0 && badwr == wrs.data());
  size_t posted = n;
  if (rc != 0) {
    VF_CHECK(verbs_rules::post_errno_ok(rc));
    VF_CHECK(badwr >= wrs.data() && badwr < wrs.data() + n);
    posted = static_cast<size_t>(badwr - wrs.data());
    VF_CHECK(posted <= first_bad);
  } else {
    VF_CHECK(first_bad == n);
  }
  for (size_t k = 0; k < posted; ++k) {
    Wr w;
    w.kind = Wr::kSend;
    w.owner = x.serial;
    w.gen = x.gen;
    w.op = wrs[k].opcode;
    w.signaled = x.sig_all || (wrs[k].send_flags & IBV_SEND_SIGNALED) != 0;
    w_.posted(wrs[k].wr_id, w);
  }
}

void Run::post_recv() {
  const int i = any_qp(in_.u8());
  if (i < 0) return;
  QpS& x = w_.qp[i];
  const size_t n = 1 + in_.u8() % 3;
  std::vector<ibv_recv_wr> wrs(n);
  std::vector<std::vector<ibv_sge>> sges(n);
  std::vector<uint64_t> lens(n);
  size_t first_bad = n;  // none
  for (size_t k = 0; k < n; ++k) {
    const uint8_t nb = in_.u8();
    const int num = nb == 0xFF ? -1 : static_cast<int>(nb % (x.cap.max_recv_sge + 2));
    for (int s = 0; s < num; ++s) {
      sges[k].push_back(sge(false));
      lens[k] += sges[k].back().length;
    }
    wrs[k].wr_id = w_.next_id();
    wrs[k].next = k + 1 < n ? &wrs[k + 1] : nullptr;
    wrs[k].sg_list = num > 0 ? sges[k].data() : nullptr;
    wrs[k].num_sge = num;
    const bool bad = num < 0 || static_cast<uint32_t>(num) > x.cap.max_recv_sge;
    if (bad && first_bad == n) first_bad = k;
  }
  const ibv_qp_state st = sync_state(i);
  ibv_recv_wr* badwr = nullptr;
  const int rc = ibv_post_recv(x.q, wrs.data(), &badwr);
  // A QP with an SRQ takes no receives of its own; one in RESET none at all.
  if (x.srq >= 0 || st == IBV_QPS_RESET) VF_CHECK(rc != 0 && badwr == wrs.data());
  size_t posted = n;
  if (rc != 0) {
    VF_CHECK(verbs_rules::post_errno_ok(rc));
    VF_CHECK(badwr >= wrs.data() && badwr < wrs.data() + n);
    posted = static_cast<size_t>(badwr - wrs.data());
    VF_CHECK(posted <= first_bad);
  } else {
    VF_CHECK(first_bad == n);
  }
  for (size_t k = 0; k < posted; ++k) {
    Wr w;
    w.kind = Wr::kRecv;
    w.owner = x.serial;
    w.gen = x.gen;
    w.recv_len = lens[k];
    w_.posted(wrs[k].wr_id, w);
  }
}

void Run::post_srq_recv() {
  const int i = any_srq(in_.u8());
  if (i < 0) return;
  SrqS& x = w_.srq[i];
  const size_t n = 1 + in_.u8() % 3;
  std::vector<ibv_recv_wr> wrs(n);
  std::vector<std::vector<ibv_sge>> sges(n);
  std::vector<uint64_t> lens(n);
  size_t first_bad = n;  // none
  for (size_t k = 0; k < n; ++k) {
    const uint8_t nb = in_.u8();
    const int num = nb == 0xFF ? -1 : static_cast<int>(nb % (x.attr.max_sge + 2));
    for (int s = 0; s < num; ++s) {
      sges[k].push_back(sge(false));
      lens[k] += sges[k].back().length;
    }
    wrs[k].wr_id = w_.next_id();
    wrs[k].next = k + 1 < n ? &wrs[k + 1] : nullptr;
    wrs[k].sg_list = num > 0 ? sges[k].data() : nullptr;
    wrs[k].num_sge = num;
    const bool bad = num < 0 || static_cast<uint32_t>(num) > x.attr.max_sge;
    if (bad && first_bad == n) first_bad = k;
  }
  ibv_recv_wr* badwr = nullptr;
  const int rc = ibv_post_srq_recv(x.s, wrs.data(), &badwr);
  size_t posted = n;
  if (rc != 0) {
    VF_CHECK(verbs_rules::post_errno_ok(rc));
    VF_CHECK(badwr >= wrs.data() && badwr < wrs.data() + n);
    posted = static_cast<size_t>(badwr - wrs.data());
    VF_CHECK(posted <= first_bad);
  } else {
    VF_CHECK(first_bad == n);
  }
  for (size_t k = 0; k < posted; ++k) {
    Wr w;
    w.kind = Wr::kSrqRecv;
    w.owner = x.serial;
    w.recv_len = lens[k];
    w_.posted(wrs[k].wr_id, w);
  }
}

// Polls CQ slot c for at most n completions into an array of exactly n
// entries; checks each.  A negative n is refused with a negative answer.
int Run::poll_cq(int c, int n) {
  std::vector<ibv_wc> wc(n > 0 ? static_cast<size_t>(n) : 1);
  const int got = ibv_poll_cq(w_.cq[c].cq, n, wc.data());
  if (n < 0) {
    VF_CHECK(got < 0);
    return 0;
  }
  VF_CHECK(got >= 0 && got <= n);
  for (size_t k = 0; k < static_cast<size_t>(got); ++k) w_.completed(c, wc[k]);
  return got;
}

void Run::poll(uint8_t how) {
  const int c = any_cq(how);
  if (c >= 0) (void)poll_cq(c, of(kPollN, how >> 2));
}

// Every QP to ERR: whatever must complete does, flushed or not, within a
// bounded time (the CQs polled meanwhile drive both devices).
void Run::drain() {
  for (QpS& x : w_.qp) {
    if (x.q == nullptr) continue;
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    VF_CHECK(ibv_modify_qp(x.q, &a, IBV_QP_STATE) == 0);
    x.st = IBV_QPS_ERR;
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    for (int c = 0; c < kCq; ++c)
      if (w_.cq[c].cq != nullptr)
        while (poll_cq(c, 16) > 0) {
        }
    if (w_.must_left() == 0) break;
    if (std::chrono::steady_clock::now() > end) {
      std::fprintf(stderr, "verbs_fuzz: %zu requests never completed after ERR\n", w_.must_left());
      VF_CHECK(w_.must_left() == 0);
    }
  }
}

}  // namespace dpdat::fuzz::verbs_world
