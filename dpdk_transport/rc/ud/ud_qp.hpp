#pragma once
// An unreliable datagram (UD) queue pair (IBA 9.8, RoCEv2 framing): each
// send is one UD SEND Only (with Immediate) packet of at most one path MTU,
// carrying a DETH with the Q_Key and the sender's QPN, addressed per work
// request; no acknowledgements, no retransmission, no sequence checks.  A
// datagram is taken into the next posted receive, whose buffer gets the 40
// bytes of the GRH first (20 bytes of zeros, then the datagram's IPv4
// header, as RoCEv2 devices place it); one whose Q_Key is not the queue
// pair's, or that finds no receive posted, is dropped and counted.
//
// Sends have a send queue of their own, as a device's: a send posted when
// no TX buffer is free (the port's TX ring is full) waits there, with its
// data copied, and leaves from the engine's poll() in order, its completion
// reported then; a post fails only when that queue (sq_depth sends) is
// full.  Programs that count their own send-queue room (UCX's ud_verbs
// aborts on a refused post) depend on it.
//
// The engine owns UD queue pairs beside its RC ones (Engine::create_ud_qp)
// and steers UD packets to them by destination QPN; they share the engine's
// TX buffers, memory table and completion queues' types, and add nothing to
// the RC path.  Engine thread only, as the RC queue pair.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "rc/mr_table.hpp"
#include "rc/qp/qp_api.hpp"
#include "rc/types.hpp"
#include "wire/packet.hpp"

namespace dpdat::rc {

class Engine;

inline constexpr uint32_t kGrhBytes = 40;

// IBA 10.2.4.1: a send whose Q_Key has the high-order bit set uses the
// queue pair's own Q_Key instead (the controlled Q_Keys a consumer may not
// claim).
inline constexpr uint32_t kQkeyUseOwn = 0x80000000u;

struct UdConfig {
  uint32_t rq_depth = 256;
  uint32_t sq_depth = 256;  // sends that may wait for a TX buffer
  uint32_t pmtu = 1024;     // the largest datagram payload
};

// Where one datagram goes (an address handle's resolved path and the
// work request's remote QPN and Q_Key).
struct UdDest {
  wire::MacAddr mac{};
  uint32_t ip = 0;  // host byte order
  uint32_t qpn = 0;
  uint32_t qkey = 0;
};

// The sending side's own addresses.
struct UdLocal {
  wire::MacAddr mac{};
  uint32_t ip = 0;
  uint16_t udp_src_port = 0xC000;
};

// IBA's UD states: receives may be posted from INIT, datagrams are taken
// from RTR, sent from RTS.
enum class UdState : uint8_t { kReset, kInit, kRtr, kRts, kError };

struct UdCounters {
  uint64_t tx_datagrams = 0;
  uint64_t tx_waited = 0;           // sends that waited in the send queue for a TX buffer
  uint64_t rx_datagrams = 0;        // placed into a receive
  uint64_t rx_qkey_dropped = 0;     // Q_Key not the queue pair's
  uint64_t rx_no_recv_dropped = 0;  // no receive posted
  uint64_t rx_state_dropped = 0;    // queue pair not in RTR or RTS
  uint64_t rx_cq_full_dropped = 0;  // no room for the receive's completion
  uint64_t rx_too_long = 0;         // receive too small: local length error
};

class UdQp {
 public:
  UdQp(Engine& engine, MrTable& mr, uint32_t qpn, uint32_t pz, const UdConfig& cfg,
       CompletionQueue* send_cq, CompletionQueue* recv_cq);
  UdQp(const UdQp&) = delete;
  UdQp& operator=(const UdQp&) = delete;

  uint32_t qpn() const { return qpn_; }
  UdState state() const { return state_; }
  uint32_t qkey() const { return qkey_; }
  const UdConfig& config() const { return cfg_; }
  const UdCounters& counters() const { return ctr_; }
  size_t recv_queue_used() const { return rq_count_; }
  size_t send_queue_used() const { return sq_count_; }

  // RESET -> INIT (with its Q_Key), INIT -> RTR, RTR -> RTS (its own
  // addresses and first PSN).  False, unchanged, from another state.  The
  // Q_Key may be changed again in INIT, RTR and RTS (set_qkey).
  bool to_init(uint32_t qkey);
  bool to_rtr();
  bool to_rts(const UdLocal& local, wire::Psn sq_psn);
  void set_qkey(uint32_t qkey) { qkey_ = qkey; }
  // To ERROR: the sends still waiting and the posted receives complete as
  // flushed.
  void set_error();
  // Back to RESET: the waiting sends and posted receives are dropped
  // unreported.
  void reset();

  // kSend / kSendImm only.  A datagram longer than the path MTU, or whose
  // gather list the memory table refuses, completes with a local length /
  // protection error (always reported).  The data is read at the post; a
  // send that finds no TX buffer, or no room for its completion, or sends
  // waiting before it, waits in the send queue.  kQueueFull when that queue
  // is full: nothing was posted, try again.
  PostResult post_send(const SendWr& wr, const UdDest& to);
  // Sends what waits in the send queue while TX buffers and completion room
  // last (the engine's poll()); true when sends still wait.
  bool drain_sends();
  PostResult post_recv(const RecvWr& wr);

  // A parsed UD packet for this queue pair (from the engine's dispatch).
  void on_packet(const wire::PacketView& v);

 private:
  // A send waiting in the send queue: its datagram's payload copied at the
  // post, or the error it completes with.
  struct WaitingSend {
    uint64_t cookie = 0;
    WrOp op = WrOp::kSend;
    uint32_t flags = 0;
    uint32_t imm = 0;
    UdDest to;
    WcStatus status = WcStatus::kSuccess;
    std::vector<uint8_t> data;  // keeps its capacity from one use to the next
  };

  enum class Tx : uint8_t { kSent, kNoBuffer, kRefused };

  bool complete(CompletionQueue* cq, const Completion& c);
  template <typename Entry>
  void flush_ring(const std::vector<Entry>& ring, size_t* head, size_t* count, WcOp op,
                  CompletionQueue* cq);
  // One datagram into a TX buffer: kNoBuffer (nothing built) when none is
  // free now, kRefused when the packet cannot be built.
  Tx transmit(WrOp op, uint32_t flags, uint32_t imm, const UdDest& to,
              std::span<const std::span<const uint8_t>> pieces);
  // Copies `len` bytes from `src` into the receive's buffers at `off`;
  // false when the memory table refuses a piece.
  bool scatter(const RecvWr& wr, uint64_t off, const uint8_t* src, uint64_t len);

  Engine& engine_;
  MrTable& mr_;
  const uint32_t qpn_;
  const uint32_t pz_;
  UdConfig cfg_;
  CompletionQueue* send_cq_;
  CompletionQueue* recv_cq_;
  UdState state_ = UdState::kReset;
  uint32_t qkey_ = 0;
  UdLocal local_;
  wire::Psn sq_psn_;
  std::vector<RecvWr> rq_;  // a ring of cfg_.rq_depth entries
  size_t rq_head_ = 0, rq_count_ = 0;
  std::vector<WaitingSend> sq_;  // a ring of cfg_.sq_depth entries
  size_t sq_head_ = 0, sq_count_ = 0;
  UdCounters ctr_;
};

}  // namespace dpdat::rc
