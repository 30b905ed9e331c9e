#include "rc/mr_table.hpp"

#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace dpdat::rc {

// Entry layout.  `lkey` / `rkey` is the publication word: 0 while the slot is free
// (no valid key is 0: index 0 is never handed out... see key_for()), the
// live context otherwise.  Fields are written before a release store of
// `context`; check_*() loads it with acquire and compares first.
struct MrTable::Mr {
  std::atomic<uint32_t> lkey{0};
  uint32_t pz = 0;
  uint64_t va = 0;
  uint8_t* host = nullptr;
  uint64_t length = 0;
  uint32_t privileges = 0;
  uint32_t bound_mws = 0;
  bool local_only = false;
  uint8_t key = 0;
  uint32_t next_free = 0;
  std::atomic<std::atomic<uint64_t>*> rma_writes{nullptr}, rma_reads{nullptr};
};

struct MrTable::Mw {
  std::atomic<uint32_t> rkey{0};  // current rkey while bound, else 0
  bool allocated = false;
  bool bound = false;
  uint32_t pz = 0;
  uint32_t mr_lkey = 0;
  uint64_t va = 0;
  uint8_t* host = nullptr;
  uint64_t length = 0;
  uint32_t privileges = 0;
  uint32_t last_rkey = 0;   // last rkey handed out (0: never bound)
  uint32_t pending_qp = 0;  // queue pair with an outstanding bind, or 0
  bool pending = false;
  uint8_t key = 0;
  uint32_t next_free = 0;
  uint32_t binds = 0;  // binds executed on this slot: the input of its next key
};

namespace {

// SipHash-2-4 (Aumasson & Bernstein) of two 64-bit words under the table's
// 128-bit secret: a keyed pseudo-random function, so key bytes seen by a peer
// say nothing about the next ones (a plain PRNG's state can be recovered
// from enough outputs; this cannot without the secret).
uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

void sip_round(uint64_t& v0, uint64_t& v1, uint64_t& v2, uint64_t& v3) {
  v0 += v1;
  v1 = rotl(v1, 13);
  v1 ^= v0;
  v0 = rotl(v0, 32);
  v2 += v3;
  v3 = rotl(v3, 16);
  v3 ^= v2;
  v0 += v3;
  v3 = rotl(v3, 21);
  v3 ^= v0;
  v2 += v1;
  v1 = rotl(v1, 17);
  v1 ^= v2;
  v2 = rotl(v2, 32);
}

uint64_t siphash24(const uint64_t k[2], uint64_t m0, uint64_t m1) {
  uint64_t v0 = k[0] ^ 0x736f6d6570736575ull, v1 = k[1] ^ 0x646f72616e646f6dull;
  uint64_t v2 = k[0] ^ 0x6c7967656e657261ull, v3 = k[1] ^ 0x7465646279746573ull;
  for (const uint64_t m : {m0, m1, uint64_t{16} << 56}) {  // last word: the length, 16 bytes
    v3 ^= m;
    sip_round(v0, v1, v2, v3);
    sip_round(v0, v1, v2, v3);
    v0 ^= m;
  }
  v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) sip_round(v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

// The key byte after `prev` for draw `r` (a PRF output): uniform over 1..255
// without `prev` (rxe's rule: never the slot's previous key, never 0, so
// key 0 = index 0 key byte 0 never exists and a zeroed structure never matches).
uint8_t next_key(uint8_t prev, uint64_t r) {
  if (prev == 0) return static_cast<uint8_t>(1 + r % 255);
  return static_cast<uint8_t>(1 + (prev - 1 + 1 + r % 254) % 255);
}

// PRF inputs: which table and slot, and the slot's (MW) or the table's
// (MR) draw count.
constexpr uint64_t kMrDomain = uint64_t{1} << 32, kMwDomain = uint64_t{2} << 32;

uint32_t make_key(uint32_t index, uint8_t key, bool mw) {
  return (mw ? MrTable::kMwBit : 0u) | (index << 8) | key;
}

bool range_inside(uint64_t base, uint64_t length, uint64_t va, uint64_t len, AccessError* err) {
  // Overflow-safe [va, va+len) within [base, base+length).  A zero-length
  // access is inside when base <= va <= base + length.
  if (len != 0 && va + len < va) {
    *err = AccessError::kLengthOverflow;
    return false;
  }
  if (va < base || va - base > length || len > length - (va - base)) {
    *err = AccessError::kOutOfBounds;
    return false;
  }
  return true;
}
}  // namespace

std::string_view access_error_name(AccessError e) noexcept {
  static constexpr std::array<std::string_view, static_cast<size_t>(AccessError::kCount)> kNames = {
      "ok",           "invalid-context", "stale-context",   "pz-mismatch",
      "no-privilege", "out-of-bounds",   "length-overflow", "misaligned",
      "unbound"};
  const auto i = static_cast<size_t>(e);
  return i < kNames.size() ? kNames[i] : "invalid";
}

std::string_view bind_error_name(BindError e) noexcept {
  static constexpr std::array<std::string_view, static_cast<size_t>(BindError::kCount)> kNames = {
      "ok",
      "invalid-mw",
      "invalid-mr",
      "pz-mismatch",
      "privilege-not-covered",
      "out-of-bounds",
      "invalid-privileges",
      "mw-busy"};
  const auto i = static_cast<size_t>(e);
  return i < kNames.size() ? kNames[i] : "invalid";
}

namespace {
uint32_t clamp_entries(uint32_t n) { return n == 0 ? 1 : std::min(n, MrTable::kMaxEntries); }
}  // namespace

MrTable::MrTable(uint32_t max_mrs, uint32_t max_mws)
    : mrs_(clamp_entries(max_mrs)), mws_(clamp_entries(max_mws)) {
  seed_keys();
}

MrTable::MrTable(uint32_t max_mrs, uint32_t max_mws, uint64_t secret0, uint64_t secret1)
    : mrs_(clamp_entries(max_mrs)), mws_(clamp_entries(max_mws)), secret_{secret0, secret1} {}

void MrTable::seed_keys() {
  // The kernel's entropy pool; getrandom() of 16 bytes does not block once
  // the pool is initialised (any time after early boot) and is not
  // interrupted by signals for requests this small.
  uint8_t* p = reinterpret_cast<uint8_t*>(secret_);
  size_t got = 0;
  while (got < sizeof secret_) {
    const ssize_t n = getrandom(p + got, sizeof secret_ - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      // No getrandom (pre-3.17 kernel or seccomp): the clock and this
      // table's address, unpredictable to a remote peer only in part.
      const auto t = static_cast<uint64_t>(
          std::chrono::high_resolution_clock::now().time_since_epoch().count());
      secret_[0] ^= t;
      secret_[1] ^= reinterpret_cast<uintptr_t>(this) * 0x9e3779b97f4a7c15ull;
      break;
    }
  }
}

uint8_t MrTable::draw_mr_key(uint32_t slot, uint8_t prev) {
  return next_key(prev, siphash24(secret_, kMrDomain | slot, mr_draws_++));
}

uint8_t MrTable::mw_key_after(uint32_t slot, uint8_t prev, uint32_t bind) const {
  return next_key(prev, siphash24(secret_, kMwDomain | slot, bind));
}

MrTable::~MrTable() = default;

size_t MrTable::storage_bytes() const { return mrs_.storage_bytes() + mws_.storage_bytes(); }
MrTable::Mr* MrTable::mr_at(uint32_t i) const { return mrs_.at(i); }
MrTable::Mw* MrTable::mw_at(uint32_t i) const { return mws_.at(i); }

bool MrTable::mr_register(uint32_t pz, uint8_t* host, uint64_t va, uint64_t length,
                          uint32_t privileges, uint32_t* lkey) {
  if ((privileges & ~priv::kValidMask) != 0) return false;
  return register_entry(pz, host, va, length, privileges, false, lkey);
}

bool MrTable::mr_register_local_only(uint32_t pz, uint8_t* host, uint64_t va, uint64_t length,
                                     uint32_t* lkey) {
  return register_entry(pz, host, va, length, priv::kLocalRead | priv::kLocalWrite, true, lkey);
}

bool MrTable::register_entry(uint32_t pz, uint8_t* host, uint64_t va, uint64_t length,
                             uint32_t privileges, bool local_only, uint32_t* lkey) {
  if (length != 0 && va + length < va) return false;
  const uint32_t i = mrs_.take();
  if (i == mrs_.kNone) return false;
  Mr& e = *mr_at(i);
  e.local_only = local_only;
  e.pz = pz;
  e.va = va;
  e.host = host;
  e.length = length;
  e.privileges = privileges;
  e.bound_mws = 0;
  e.rma_writes.store(nullptr, std::memory_order_relaxed);
  e.rma_reads.store(nullptr, std::memory_order_relaxed);
  e.key = draw_mr_key(i, e.key);
  const uint32_t ctx = make_key(i, e.key, false);
  e.lkey.store(ctx, std::memory_order_release);
  *lkey = ctx;
  return true;
}

AccessError MrTable::mr_free(uint32_t lkey, bool* in_use) {
  *in_use = false;
  if ((lkey & kMwBit) != 0) return AccessError::kInvalidContext;
  const uint32_t i = lkey >> 8;
  Mr* ep = mr_at(i);
  if (ep == nullptr) return AccessError::kInvalidContext;
  Mr& e = *ep;
  const uint32_t cur = e.lkey.load(std::memory_order_acquire);
  if (cur == 0) return AccessError::kInvalidContext;
  if (cur != lkey) return AccessError::kStaleContext;
  if (e.bound_mws > 0) {
    *in_use = true;
    return AccessError::kOk;
  }
  e.lkey.store(0, std::memory_order_release);
  mrs_.give_back(i);
  return AccessError::kOk;
}

bool MrTable::mr_set_rma_counters(uint32_t lkey, std::atomic<uint64_t>* writes,
                                  std::atomic<uint64_t>* reads) {
  Mr* ep = (lkey & kMwBit) != 0 ? nullptr : mr_at(lkey >> 8);
  if (ep == nullptr || lkey == 0 || ep->lkey.load(std::memory_order_acquire) != lkey) return false;
  ep->rma_writes.store(writes, std::memory_order_release);
  ep->rma_reads.store(reads, std::memory_order_release);
  return true;
}

bool MrTable::mr_query(uint32_t lkey, MrInfo* out) const {
  const Mr* ep = (lkey & kMwBit) != 0 ? nullptr : mr_at(lkey >> 8);
  if (ep == nullptr) return false;
  const Mr& e = *ep;
  if (e.lkey.load(std::memory_order_acquire) != lkey || lkey == 0) return false;
  *out = MrInfo{e.pz, e.va, e.host, e.length, e.privileges, lkey, e.bound_mws, e.local_only};
  return true;
}

bool MrTable::mw_alloc(uint32_t pz, uint32_t* mw_handle) {
  const uint32_t i = mws_.take();
  if (i == mws_.kNone) return false;
  Mw& r = *mw_at(i);
  r.allocated = true;
  r.bound = false;
  r.pz = pz;
  r.pending = false;
  r.last_rkey = 0;
  r.rkey.store(0, std::memory_order_release);
  *mw_handle = i;
  return true;
}

bool MrTable::mw_free(uint32_t mw_handle) {
  Mw* rp = mw_at(mw_handle);
  if (rp == nullptr || !rp->allocated) return false;
  Mw& r = *rp;
  r.rkey.store(0, std::memory_order_release);
  if (r.bound) {
    Mr* l = mr_at(r.mr_lkey >> 8);
    if (l != nullptr && l->bound_mws > 0) l->bound_mws--;
  }
  r.bound = false;
  r.allocated = false;
  // r.key stays: the slot's next bind draws a key byte other than its last one,
  // so the last rkey never matches the slot's next life.
  mws_.give_back(mw_handle);
  return true;
}

bool MrTable::mw_query(uint32_t mw_handle, MwInfo* out) const {
  const Mw* rp = mw_at(mw_handle);
  if (rp == nullptr || !rp->allocated) return false;
  const Mw& r = *rp;
  *out = MwInfo{r.pz, r.last_rkey, r.bound, r.mr_lkey, r.va, r.length, r.privileges};
  return true;
}

uint32_t MrTable::mw_predict_rkey(uint32_t mw_handle, uint32_t binds_ahead) const {
  const Mw* rp = mw_at(mw_handle);
  if (rp == nullptr || !rp->allocated) return 0;
  uint8_t key = rp->key;
  for (uint32_t i = 0; i <= binds_ahead; ++i) key = mw_key_after(mw_handle, key, rp->binds + i);
  return make_key(mw_handle, key, true);
}

BindError MrTable::check_bind(uint32_t mw_handle, uint32_t lkey, uint64_t va, uint64_t length,
                              uint32_t privileges, uint32_t qp_pz, uint32_t qp) const {
  const Mw* rp = mw_at(mw_handle);
  if (rp == nullptr || !rp->allocated) return BindError::kInvalidMw;
  const Mw& r = *rp;
  if (r.pz != qp_pz) return BindError::kPzMismatch;
  if (r.pending && qp != 0 && r.pending_qp != qp) return BindError::kMwBusy;
  if (length == 0) return BindError::kOk;  // unbind
  if ((privileges & ~(priv::kRemoteRead | priv::kRemoteWrite | priv::kRemoteAtomic)) != 0)
    return BindError::kInvalidPrivileges;
  MrInfo l;
  if (!mr_query(lkey, &l) || l.local_only) return BindError::kInvalidMr;
  if (l.pz != qp_pz) return BindError::kPzMismatch;
  if ((privileges & priv::kRemoteRead) && !(l.privileges & priv::kLocalRead))
    return BindError::kPrivilegeNotCovered;
  if ((privileges & priv::kRemoteWrite) && !(l.privileges & priv::kLocalWrite))
    return BindError::kPrivilegeNotCovered;
  if ((privileges & priv::kRemoteAtomic) &&
      (l.privileges & (priv::kLocalRead | priv::kLocalWrite)) !=
          (priv::kLocalRead | priv::kLocalWrite))
    return BindError::kPrivilegeNotCovered;
  AccessError e;
  if (!range_inside(l.va, l.length, va, length, &e)) return BindError::kOutOfBounds;
  return BindError::kOk;
}

uint32_t MrTable::do_bind(uint32_t mw_handle, uint32_t lkey, uint64_t va, uint64_t length,
                          uint32_t privileges) {
  assert(mw_at(mw_handle) != nullptr && mw_at(mw_handle)->allocated);
  Mw& r = *mw_at(mw_handle);
  r.rkey.store(0, std::memory_order_release);  // the old rkey dies first
  if (r.bound) {
    Mr* old = mr_at(r.mr_lkey >> 8);
    if (old != nullptr && old->bound_mws > 0) old->bound_mws--;
  }
  r.key = mw_key_after(mw_handle, r.key, r.binds++);
  const uint32_t ctx = make_key(mw_handle, r.key, true);
  r.last_rkey = ctx;
  r.pending = false;
  if (length == 0) {
    r.bound = false;
    r.length = 0;
    return ctx;  // matches nothing: the rkey word stays 0
  }
  Mr& l = *mr_at(lkey >> 8);
  l.bound_mws++;
  r.bound = true;
  r.mr_lkey = lkey;
  r.va = va;
  r.host = l.host + (va - l.va);
  r.length = length;
  r.privileges = privileges;
  r.rkey.store(ctx, std::memory_order_release);
  return ctx;
}

bool MrTable::mark_bind_pending(uint32_t mw_handle, uint32_t qp) {
  Mw* rp = mw_at(mw_handle);
  if (rp == nullptr || !rp->allocated) return false;
  Mw& r = *rp;
  if (r.pending && r.pending_qp != qp) return false;
  r.pending = true;
  r.pending_qp = qp;
  return true;
}

void MrTable::clear_bind_pending(uint32_t mw_handle) {
  if (Mw* r = mw_at(mw_handle); r != nullptr) r->pending = false;
}

AccessError MrTable::check_local(uint32_t lkey, uint32_t qp_pz, uint64_t va, uint64_t len,
                                 Access access, AccessGrant* grant) const {
  const Mr* ep = (lkey & kMwBit) != 0 ? nullptr : mr_at(lkey >> 8);
  if (ep == nullptr) return AccessError::kInvalidContext;
  const Mr& e = *ep;
  const uint32_t cur = e.lkey.load(std::memory_order_acquire);
  if (cur == 0 || lkey == 0) return AccessError::kInvalidContext;
  if (cur != lkey) return AccessError::kStaleContext;
  if (e.pz != qp_pz) return AccessError::kPzMismatch;
  const uint32_t need = access == Access::kLocalRead    ? priv::kLocalRead
                        : access == Access::kLocalWrite ? priv::kLocalWrite
                                                        : 0u;
  if (need == 0 || (e.privileges & need) == 0) return AccessError::kNoPrivilege;
  AccessError err;
  if (!range_inside(e.va, e.length, va, len, &err)) return err;
  grant->host = e.host + (va - e.va);
  return AccessError::kOk;
}

AccessError MrTable::check_remote(uint32_t rkey, uint32_t qp_pz, uint64_t va, uint64_t len,
                                  Access access, AccessGrant* grant) const {
  uint32_t need = 0;
  switch (access) {
    case Access::kRemoteRead:
      need = priv::kRemoteRead;
      break;
    case Access::kRemoteWrite:
      need = priv::kRemoteWrite;
      break;
    case Access::kRemoteAtomic:
      need = priv::kRemoteAtomic;
      break;
    default:
      return AccessError::kNoPrivilege;
  }
  uint32_t pz, privileges;
  uint64_t base, length;
  uint8_t* host;
  if ((rkey & kMwBit) != 0) {
    const uint32_t i = (rkey & ~kMwBit) >> 8;
    const Mw* rp = mw_at(i);
    if (rp == nullptr) return AccessError::kInvalidContext;
    const Mw& r = *rp;
    const uint32_t cur = r.rkey.load(std::memory_order_acquire);
    if (cur != rkey) {
      if (!r.allocated) return AccessError::kInvalidContext;
      return cur == 0 && !r.bound && r.last_rkey == rkey ? AccessError::kUnbound
                                                         : AccessError::kStaleContext;
    }
    pz = r.pz;
    privileges = r.privileges;
    base = r.va;
    length = r.length;
    host = r.host;
  } else {
    const uint32_t i = rkey >> 8;
    const Mr* ep = rkey == 0 ? nullptr : mr_at(i);
    if (ep == nullptr) return AccessError::kInvalidContext;
    const Mr& e = *ep;
    const uint32_t cur = e.lkey.load(std::memory_order_acquire);
    if (cur == 0) return AccessError::kInvalidContext;
    if (cur != rkey) return AccessError::kStaleContext;
    pz = e.pz;
    privileges = e.privileges;
    base = e.va;
    length = e.length;
    host = e.host;
    if (access != Access::kRemoteAtomic)
      grant->rma_counter = (access == Access::kRemoteWrite ? e.rma_writes : e.rma_reads)
                               .load(std::memory_order_acquire);
  }
  if (pz != qp_pz) return AccessError::kPzMismatch;
  if ((privileges & need) == 0) return AccessError::kNoPrivilege;
  if (access == Access::kRemoteAtomic && (len != 8 || (va & 7u) != 0))
    return AccessError::kMisaligned;
  AccessError err;
  if (!range_inside(base, length, va, len, &err)) return err;
  grant->host = host + (va - base);
  return AccessError::kOk;
}

}  // namespace dpdat::rc
