#pragma once
// One side of a dpdat-perf run through the public DAT API (uDAPL 1.2, or
// DAT 2.0: dat_api.hpp): an IA, a PZ, one registered region, a CR EVD with a
// PSP (passive side), and N EPs each with its own request, receive and
// connection EVDs.

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dat_api.hpp"

namespace dpdat::perf {

// "dat_xxx failed: DAT_TYPE DAT_SUBTYPE" for a failed call.
std::string dat_error(const char* call, DAT_RETURN r);

struct Conn {
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE req = DAT_HANDLE_NULL;  // request completions
  DAT_EVD_HANDLE rcv = DAT_HANDLE_NULL;  // receive completions
  DAT_EVD_HANDLE conn = DAT_HANDLE_NULL;
  bool connected = false;
};

// What a DTO completion says.
struct Done {
  uint64_t cookie = 0;
  uint64_t length = 0;
};

class Side {
 public:
  Side() = default;
  Side(const Side&) = delete;
  Side& operator=(const Side&) = delete;
  ~Side() { close(); }

  // Opens IA `name` and creates everything: `qps` EPs of `depth` request
  // DTOs each, and a region of `region_len` bytes registered for every
  // access.  False with *err on failure.
  bool open(const std::string& name, uint32_t qps, uint32_t depth, size_t region_len,
            std::string* err);
  // Disconnects the EPs gracefully (bounded) and closes the IA.
  void close();

  // Connection management, in steps so one thread can drive both sides.
  bool listen(uint32_t conn_qual, std::string* err);
  bool connect(size_t k, const sockaddr_in& peer, uint32_t conn_qual, std::string* err);
  bool accept(size_t k, uint64_t timeout_us, std::string* err);
  bool established(size_t k, uint64_t timeout_us, std::string* err);

  // EPs beside the --qps ones (churned connections): create_conn makes one
  // with its three EVDs (`depth` DTOs each way), free_conn frees them (an EP
  // still connected is torn down abruptly).  The caller connects or accepts.
  bool create_conn(Conn* c, uint32_t depth, std::string* err);
  static void free_conn(Conn* c);
  // The PSP's connection-request EVD (passive side).
  DAT_EVD_HANDLE cr_evd() const { return cr_; }
  // A local triplet over [off, off + len) of the region.
  DAT_LMR_TRIPLET local(size_t off, size_t len) const;

  // Posts.  signal = false suppresses the completion event of a success.
  DAT_RETURN write(size_t k, size_t off, size_t len, const DAT_RMR_TRIPLET& to, size_t to_off,
                   uint64_t cookie, bool signal);
  DAT_RETURN read(size_t k, size_t off, size_t len, const DAT_RMR_TRIPLET& from, size_t from_off,
                  uint64_t cookie, bool signal);
  DAT_RETURN send(size_t k, size_t off, size_t len, uint64_t cookie, bool signal);
  DAT_RETURN recv(size_t k, size_t off, size_t len, uint64_t cookie);
  // The IB extensions' atomics (DAT 2.0 only; DAT 1.2 has none: the
  // 1.2 build answers DAT_MODEL_NOT_SUPPORTED): the 8-byte word at `to_off` of the peer's
  // region; its previous value lands at `off` of ours.
  DAT_RETURN fetch_add(size_t k, size_t off, const DAT_RMR_TRIPLET& to, size_t to_off, uint64_t add,
                       uint64_t cookie, bool signal);
  DAT_RETURN cmp_swap(size_t k, size_t off, const DAT_RMR_TRIPLET& to, size_t to_off, uint64_t cmp,
                      uint64_t swap, uint64_t cookie, bool signal);

  // Dequeues every event on `evd` (each dequeue also drives the interface).
  // Returns the number of DTO completions appended to *out, or -1 with *err
  // on an error completion or an unexpected event.
  int reap(DAT_EVD_HANDLE evd, std::vector<Done>* out, std::string* err);

  // The triplet a peer needs to reach [0, region_len) of the region.
  DAT_RMR_TRIPLET triplet() const;
  uint8_t* data() { return region_.data(); }
  size_t region_len() const { return region_.size(); }
  const sockaddr_in& address() const { return addr_; }
  Conn& conn(size_t k) { return conns_[k]; }
  size_t qps() const { return conns_.size(); }
  DAT_IA_HANDLE ia() const { return ia_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  DAT_IA_HANDLE ia_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_ = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE cr_ = DAT_HANDLE_NULL;
  DAT_PSP_HANDLE psp_ = DAT_HANDLE_NULL;
  DAT_LMR_HANDLE lmr_ = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT lctx_ = 0;
  DAT_RMR_CONTEXT rctx_ = 0;
  std::vector<uint8_t> region_;
  std::vector<Conn> conns_;
  sockaddr_in addr_{};
};

// Reads a byte (a word) the interface may be placing from another thread.
uint8_t peek(const uint8_t* p);
uint64_t peek64(const uint8_t* p);

}  // namespace dpdat::perf
