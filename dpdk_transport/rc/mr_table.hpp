#pragma once
// Memory registration tables (one per IA): memory regions (MR) and memory
// windows (MW), their 32-bit keys, and the single routine that decides every
// memory access.  IBA words throughout (MR, MW, lkey, rkey); dat_core maps
// DAT's LMR and RMR (lmr_context, rmr_context) onto them.
//
// Keys are `index << 8 | key byte`.  Every MR registration and every MW
// bind draws a new key byte, so a stale key fails the equality check
// instead of touching memory (rxe's rkey = index << 8 | key habit).  As in
// rxe the byte is random, never 0 and never the slot's previous one: one
// key seen tells nothing of the slot's next one.  It comes from a keyed
// pseudo-random function (SipHash-2-4) under a secret each table draws from
// getrandom() when it is made; an MW's next rkeys are a function of its
// slot, its bind count and the secret, so dat_rmr_bind can name the rkey
// of a bind still queued (mw_predict_rkey).  The price of random keys: a
// key two or more registrations old matches the slot's current one with
// probability 1/254 (only the immediately previous one never does).
// Bit 31 tells the tables apart: MR keys have it clear, MW rkeys set.
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
// entry's key word are published with release semantics, so a lookup
// never sees a half-written entry.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "rc/util/chunked_slots.hpp"

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
  kLocalRead,    // gather from a local MR for an outgoing SEND / RDMA WRITE
  kLocalWrite,   // scatter of an incoming SEND or READ response into a local MR
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
  kUnbound,         // MW exists but is not bound to any memory
  kCount
};
std::string_view access_error_name(AccessError e) noexcept;

// Why a bind was refused (check_bind); do_bind itself cannot fail.
enum class BindError : uint8_t {
  kOk,
  kInvalidMw,            // MW handle not allocated
  kInvalidMr,            // lkey invalid or stale
  kPzMismatch,           // MW, MR and queue pair must share one PZ
  kPrivilegeNotCovered,  // remote read needs local read; remote write needs local write
  kOutOfBounds,          // requested range not inside the MR (overflow-safe)
  kInvalidPrivileges,    // bits outside priv::kValidMask, or local-only bits asked of an MW
  kMwBusy,               // a bind of this MW is already outstanding on another queue pair
  kCount
};
std::string_view bind_error_name(BindError e) noexcept;

// A successful check: where the bytes are in this process.
struct AccessGrant {
  uint8_t* host = nullptr;  // host address of va (valid for len bytes)
  // check_remote through an MR: its counter of the kind of access checked
  // (remote WRITE / READ; mr_set_rma_counters), nullptr when none.
  std::atomic<uint64_t>* rma_counter = nullptr;
};

struct MrInfo {
  uint32_t pz = 0;
  uint64_t va = 0;  // address the consumer/peer uses (== host address for VIRTUAL; 0-based later)
  uint8_t* host = nullptr;
  uint64_t length = 0;
  uint32_t privileges = 0;
  uint32_t lkey = 0;        // also its rkey when registered with remote privileges
  uint32_t bound_mws = 0;   // MWs currently bound to this MR
  bool local_only = false;  // mr_register_local_only: no MW binds to it
};

struct MwInfo {
  uint32_t pz = 0;
  uint32_t rkey = 0;  // current rkey (0 when never bound)
  bool bound = false;
  uint32_t mr_lkey = 0;  // lkey of the MR it is bound to
  uint64_t va = 0;       // bound range start (peer-visible address)
  uint64_t length = 0;
  uint32_t privileges = 0;  // remote privileges granted by the bind
};

class MrTable {
 public:
  static constexpr uint32_t kMwBit = 0x8000'0000u;
  static constexpr uint32_t kMaxEntries = 1u << 23;  // index must fit below bit 31 after << 8
  static constexpr uint32_t kChunkEntries = 1024;

  MrTable(uint32_t max_mrs, uint32_t max_mws);
  // Keys from a given secret instead of getrandom(): the same registrations
  // then get the same keys in every run (fuzzing needs replayable inputs).
  MrTable(uint32_t max_mrs, uint32_t max_mws, uint64_t secret0, uint64_t secret1);
  ~MrTable();
  MrTable(const MrTable&) = delete;
  MrTable& operator=(const MrTable&) = delete;

  // ---- MR (control path) ----
  // Registers [host, host+length) visible at address `va`.  Returns false when
  // the table is full (*lkey untouched) or privileges has unknown bits.
  // length 0 is allowed (a zero-length MR matches only zero-length accesses).
  bool mr_register(uint32_t pz, uint8_t* host, uint64_t va, uint64_t length, uint32_t privileges,
                   uint32_t* lkey);
  // A local-only MR (a NIC's reserved local DMA key): local read and write,
  // never an rkey (no remote privilege) and never the MR of an MW bind
  // (check_bind: kInvalidMr), so no peer reaches its bytes.  A front makes
  // one over the whole user address space to serve buffers its consumer did
  // not register.  False when the table is full.
  bool mr_register_local_only(uint32_t pz, uint8_t* host, uint64_t va, uint64_t length,
                              uint32_t* lkey);
  // Frees an MR.  Returns kInvalidContext/kStaleContext for a bad lkey;
  // refuses (returns false via *in_use = true) while MWs are bound to it.
  AccessError mr_free(uint32_t lkey, bool* in_use);
  bool mr_query(uint32_t lkey, MrInfo* out) const;
  // Counters of the remote WRITEs / READs into / out of the MR (libfabric's
  // fi_mr_bind with FI_RMA_EVENT): check_remote hands them to the responder,
  // which counts each operation once (Qp::set_rma_counters).  nullptr: not
  // counted.  False for a bad lkey.  They must outlive the MR or be unset.
  bool mr_set_rma_counters(uint32_t lkey, std::atomic<uint64_t>* writes,
                           std::atomic<uint64_t>* reads);

  // ---- MW (control path) ----
  // Allocates an unbound MW in PZ `pz`; the handle is the MW's table slot
  // (stable for its life, unlike its rkey which changes on every bind).
  bool mw_alloc(uint32_t pz, uint32_t* mw_handle);
  // Frees an MW (unbinding it); its last rkey stops matching.
  bool mw_free(uint32_t mw_handle);
  bool mw_query(uint32_t mw_handle, MwInfo* out) const;

  // Pure check for binding `mw_handle` to [va, va+length) of MR `lkey`
  // with remote `privileges`, for a queue pair in PZ `qp_pz`.  length 0 means
  // unbind (only the MW handle and PZ are checked).  Changes nothing.
  // `qp` (0: any) is the queue pair the bind is posted on: an MW with a
  // bind outstanding on another queue pair is busy (kMwBusy).
  BindError check_bind(uint32_t mw_handle, uint32_t lkey, uint64_t va, uint64_t length,
                       uint32_t privileges, uint32_t qp_pz, uint32_t qp = 0) const;
  // Applies a bind that check_bind accepted.  Cannot fail.  Returns the new
  // rkey (new key byte: every previous rkey of this MW is now
  // stale); for length 0 the MW is unbound and the returned rkey matches
  // nothing.  Maintains the MR's bound_mws count.
  uint32_t do_bind(uint32_t mw_handle, uint32_t lkey, uint64_t va, uint64_t length,
                   uint32_t privileges);
  // The rkey the bind after `binds_ahead` still-pending binds of this MW
  // will produce (dat_rmr_bind returns it before the bind executes; each
  // executed bind draws the next key of the slot's sequence).  0 for an
  // unallocated handle.
  uint32_t mw_predict_rkey(uint32_t mw_handle, uint32_t binds_ahead) const;
  // Marks a bind outstanding on queue pair `qp` (kMwBusy for others) / done.
  bool mark_bind_pending(uint32_t mw_handle, uint32_t qp);
  void clear_bind_pending(uint32_t mw_handle);

  uint32_t max_mrs() const { return mrs_.max(); }
  uint32_t max_mws() const { return mws_.max(); }
  // Entries in use now.
  uint32_t mr_count() const { return mrs_.live(); }
  uint32_t mw_count() const { return mws_.live(); }
  // Bytes of entry storage allocated so far (chunks).
  size_t storage_bytes() const;

  // ---- access checks (data path; no allocation, no locks) ----
  // Local access through an lkey (SEND/WRITE gather, RECV/READ scatter).
  AccessError check_local(uint32_t lkey, uint32_t qp_pz, uint64_t va, uint64_t len, Access access,
                          AccessGrant* grant) const;
  // Remote access through an rkey: either an MW's rkey or the rkey of
  // an MR registered with remote privileges (the MR's own lkey value
  // doubles as its rkey).  Atomic accesses must be 8 bytes, 8-aligned.
  AccessError check_remote(uint32_t rkey, uint32_t qp_pz, uint64_t va, uint64_t len, Access access,
                           AccessGrant* grant) const;

 private:
  struct Mr;
  struct Mw;
  Mr* mr_at(uint32_t i) const;
  Mw* mw_at(uint32_t i) const;
  bool register_entry(uint32_t pz, uint8_t* host, uint64_t va, uint64_t length, uint32_t privileges,
                      bool local_only, uint32_t* lkey);
  ChunkedSlots<Mr, kChunkEntries> mrs_;
  ChunkedSlots<Mw, kChunkEntries> mws_;
  // Key bytes (see the top of this file).
  void seed_keys();
  uint8_t draw_mr_key(uint32_t slot, uint8_t prev);
  uint8_t mw_key_after(uint32_t slot, uint8_t prev, uint32_t bind) const;
  uint64_t secret_[2] = {};
  uint64_t mr_draws_ = 0;
};

}  // namespace dpdat::rc
