#pragma once
// Memory registration tables (one per IA): LMRs and RMRs, their 32-bit
// contexts, and the single routine that decides every memory access.
//
// Contexts are `index << 8 | key`.  Every LMR registration and every RMR
// bind draws a new key byte, so a stale context fails the equality check
// instead of touching memory (rxe's rkey = index << 8 | key habit).  As in
// rxe the byte is random, never 0 and never the slot's previous one: one
// context seen tells nothing of the slot's next one.  It comes from a keyed
// pseudo-random function (SipHash-2-4) under a secret each table draws from
// getrandom() when it is made; an RMR's next keys are a function of its
// slot, its bind count and the secret, so dat_rmr_bind can name the context
// of a bind still queued (rmr_predict_context).  The price of random keys: a
// context two or more registrations old matches the slot's current one with
// probability 1/254 (only the immediately previous one never does).
// Bit 31 tells the tables apart: LMR contexts have it clear, RMR contexts set.
//
// Privilege bits are the DAT_MEM_PRIV_* values of /usr/include/dat2/dat.h
// (identical in DAT 1.2) plus DAT_IB_MEM_PRIV_REMOTE_ATOMIC (dat_ib_extensions.h).
//
// Threading: register/free/bind run on the control path (one caller at a time
// per table, e.g. under the IA's lock or on the engine's lcore); check_*()
// may run concurrently on the engine lcore.  Entries live in chunks of
// kChunkEntries, allocated when the table first reaches them (an IA sized
// for a million regions costs only its chunk directory until they are
// used) and never moved or freed before the table; a chunk pointer and each
// entry's context word are published with release semantics, so a lookup
// never sees a half-written entry.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "chunked_slots.hpp"

namespace dpdat::rc {

namespace priv {
inline constexpr uint32_t kNone = 0x00;
inline constexpr uint32_t kLocalRead = 0x01;     // DAT_MEM_PRIV_LOCAL_READ_FLAG
inline constexpr uint32_t kRemoteRead = 0x02;    // DAT_MEM_PRIV_REMOTE_READ_FLAG
inline constexpr uint32_t kLocalWrite = 0x10;    // DAT_MEM_PRIV_LOCAL_WRITE_FLAG
inline constexpr uint32_t kRemoteWrite = 0x20;   // DAT_MEM_PRIV_REMOTE_WRITE_FLAG
inline constexpr uint32_t kAll = 0x33;           // DAT_MEM_PRIV_ALL_FLAG
inline constexpr uint32_t kRemoteAtomic = 0x40;  // DAT_IB_MEM_PRIV_REMOTE_ATOMIC
inline constexpr uint32_t kValidMask = kAll | kRemoteAtomic;
}  // namespace priv

// What an access wants to do with the memory.
enum class Access : uint8_t {
  kLocalRead,    // gather from a local LMR for an outgoing SEND / RDMA WRITE
  kLocalWrite,   // scatter of an incoming SEND or READ response into a local LMR
  kRemoteRead,   // incoming RDMA READ request
  kRemoteWrite,  // incoming RDMA WRITE
  kRemoteAtomic  // incoming compare-swap / fetch-add (8 bytes, 8-byte aligned)
};

// Why an access or a bind was refused.  The RC layer maps a remote refusal to
// a NAK "remote access error" (IBA 9.7.5.2.4) and a local one to a local
// protection error completion.
enum class AccessError : uint8_t {
  kOk,
  kInvalidContext,  // index out of range, wrong table, or entry not allocated
  kStaleContext,    // entry exists but the key byte differs (freed / re-bound)
  kPzMismatch,      // entry's PZ is not the queue pair's PZ
  kNoPrivilege,     // entry's privileges do not allow this access
  kOutOfBounds,     // [va, va+len) not inside the registered/bound range
  kLengthOverflow,  // va + len wraps around 2^64
  kMisaligned,      // atomic target not 8-byte aligned
  kUnbound,         // RMR exists but is not bound to any memory
  kCount
};
std::string_view access_error_name(AccessError e) noexcept;

// Why a bind was refused (check_bind); do_bind itself cannot fail.
enum class BindError : uint8_t {
  kOk,
  kInvalidRmr,           // RMR handle not allocated
  kInvalidLmr,           // LMR context invalid or stale
  kPzMismatch,           // RMR, LMR and queue pair must share one PZ
  kPrivilegeNotCovered,  // remote read needs local read; remote write needs local write
  kOutOfBounds,          // requested range not inside the LMR (overflow-safe)
  kInvalidPrivileges,    // bits outside priv::kValidMask, or local-only bits asked of an RMR
  kRmrBusy,              // a bind of this RMR is already outstanding on another queue pair
  kCount
};
std::string_view bind_error_name(BindError e) noexcept;

// A successful check: where the bytes are in this process.
struct AccessGrant {
  uint8_t* host = nullptr;  // host address of va (valid for len bytes)
};

struct LmrInfo {
  uint32_t pz = 0;
  uint64_t va = 0;  // address the consumer/peer uses (== host address for VIRTUAL; 0-based later)
  uint8_t* host = nullptr;
  uint64_t length = 0;
  uint32_t privileges = 0;
  uint32_t context = 0;     // lmr_context
  uint32_t bound_rmrs = 0;  // RMRs currently bound to this LMR
};

struct RmrInfo {
  uint32_t pz = 0;
  uint32_t context = 0;  // current rmr_context (0 when never bound)
  bool bound = false;
  uint32_t lmr_context = 0;  // bound LMR
  uint64_t va = 0;           // bound range start (peer-visible address)
  uint64_t length = 0;
  uint32_t privileges = 0;  // remote privileges granted by the bind
};

class MrTable {
 public:
  static constexpr uint32_t kRmrBit = 0x8000'0000u;
  static constexpr uint32_t kMaxEntries = 1u << 23;  // index must fit below bit 31 after << 8
  static constexpr uint32_t kChunkEntries = 1024;

  MrTable(uint32_t max_lmrs, uint32_t max_rmrs);
  // Keys from a given secret instead of getrandom(): the same registrations
  // then get the same keys in every run (fuzzing needs replayable inputs).
  MrTable(uint32_t max_lmrs, uint32_t max_rmrs, uint64_t secret0, uint64_t secret1);
  ~MrTable();
  MrTable(const MrTable&) = delete;
  MrTable& operator=(const MrTable&) = delete;

  // ---- LMR (control path) ----
  // Registers [host, host+length) visible at address `va`.  Returns false when
  // the table is full (*ctx untouched) or privileges has unknown bits.
  // length 0 is allowed (a zero-length LMR matches only zero-length accesses).
  bool lmr_register(uint32_t pz, uint8_t* host, uint64_t va, uint64_t length, uint32_t privileges,
                    uint32_t* lmr_context);
  // Frees an LMR.  Returns kInvalidContext/kStaleContext for a bad context;
  // refuses (returns false via *in_use = true) while RMRs are bound to it.
  AccessError lmr_free(uint32_t lmr_context, bool* in_use);
  bool lmr_query(uint32_t lmr_context, LmrInfo* out) const;

  // ---- RMR (control path) ----
  // Allocates an unbound RMR in PZ `pz`; the handle is the RMR's table slot
  // (stable for its life, unlike its context which changes on every bind).
  bool rmr_alloc(uint32_t pz, uint32_t* rmr_handle);
  // Frees an RMR (unbinding it); its last context stops matching.
  bool rmr_free(uint32_t rmr_handle);
  bool rmr_query(uint32_t rmr_handle, RmrInfo* out) const;

  // Pure check for binding `rmr_handle` to [va, va+length) of LMR `lmr_context`
  // with remote `privileges`, for a queue pair in PZ `qp_pz`.  length 0 means
  // unbind (only the RMR handle and PZ are checked).  Changes nothing.
  // `qp` (0: any) is the queue pair the bind is posted on: an RMR with a
  // bind outstanding on another queue pair is busy (kRmrBusy).
  BindError check_bind(uint32_t rmr_handle, uint32_t lmr_context, uint64_t va, uint64_t length,
                       uint32_t privileges, uint32_t qp_pz, uint32_t qp = 0) const;
  // Applies a bind that check_bind accepted.  Cannot fail.  Returns the new
  // rmr_context (new key byte: every previous context of this RMR is now
  // stale); for length 0 the RMR is unbound and the returned context matches
  // nothing.  Maintains the LMR's bound_rmrs count.
  uint32_t do_bind(uint32_t rmr_handle, uint32_t lmr_context, uint64_t va, uint64_t length,
                   uint32_t privileges);
  // The context the bind after `binds_ahead` still-pending binds of this RMR
  // will produce (dat_rmr_bind returns it before the bind executes; each
  // executed bind draws the next key of the slot's sequence).  0 for an
  // unallocated handle.
  uint32_t rmr_predict_context(uint32_t rmr_handle, uint32_t binds_ahead) const;
  // Marks a bind outstanding on queue pair `qp` (kRmrBusy for others) / done.
  bool mark_bind_pending(uint32_t rmr_handle, uint32_t qp);
  void clear_bind_pending(uint32_t rmr_handle);

  uint32_t max_lmrs() const { return lmrs_.max(); }
  uint32_t max_rmrs() const { return rmrs_.max(); }
  // Entries in use now.
  uint32_t lmr_count() const { return lmrs_.live(); }
  uint32_t rmr_count() const { return rmrs_.live(); }
  // Bytes of entry storage allocated so far (chunks).
  size_t storage_bytes() const;

  // ---- access checks (data path; no allocation, no locks) ----
  // Local access through an LMR context (SEND/WRITE gather, RECV/READ scatter).
  AccessError check_local(uint32_t lmr_context, uint32_t qp_pz, uint64_t va, uint64_t len,
                          Access access, AccessGrant* grant) const;
  // Remote access through an rkey: either an RMR context or the rmr_context of
  // an LMR registered with remote privileges (the LMR's own lmr_context value
  // doubles as its rmr_context).  Atomic accesses must be 8 bytes, 8-aligned.
  AccessError check_remote(uint32_t rkey, uint32_t qp_pz, uint64_t va, uint64_t len, Access access,
                           AccessGrant* grant) const;

 private:
  struct Lmr;
  struct Rmr;
  Lmr* lmr_at(uint32_t i) const;
  Rmr* rmr_at(uint32_t i) const;
  ChunkedSlots<Lmr, kChunkEntries> lmrs_;
  ChunkedSlots<Rmr, kChunkEntries> rmrs_;
  // Key bytes (see the top of this file).
  void seed_keys();
  uint8_t draw_lmr_key(uint32_t slot, uint8_t prev);
  uint8_t rmr_key_after(uint32_t slot, uint8_t prev, uint32_t bind) const;
  uint64_t secret_[2] = {};
  uint64_t lmr_draws_ = 0;
};

}  // namespace dpdat::rc
