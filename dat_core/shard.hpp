#pragma once
// One engine of an interface and what only its driver touches.  An interface
// runs IfaceConfig::engines of them (one per RX/TX queue of its link); each
// owns the queue pairs placed on it for life (Iface::make_qp says where an EP
// goes), is driven by whoever holds its token (a progress thread of its own,
// or a consumer posting to or polling one of its EPs), and shares nothing
// written on the data path with the others:
//   - posts to one of its EPs reach it through its own hand-off ring;
//   - its queue pairs' completions go to completion queues of its own (each
//     EVD has one per engine that feeds it, Evd::cqs), which its driver moves
//     into the EVDs' event queues;
//   - frames that arrive on its queue for another engine's queue pair are
//     handed over through the rc::EngineGroup's SPSC ring for that pair.
// Engine 0 also owns QP1: every CM message is received there (the others
// hand such frames to it) and the connection manager sends from it.

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#include "link.hpp"
#include "mpsc_ring.hpp"
#include "rc/engine/engine.hpp"
#include "rc/engine/engine_loop.hpp"
#include "spin_lock.hpp"

namespace dpdat::dat {

struct Ep;

// A work request handed to the holder of an engine's token (ep_post /
// ep_post_recv while another thread drives that engine).  Written in place
// by Handoff::fill: only the scatter-gather entries in use are, so a 64 B
// post moves a few cache lines to the engine's CPU, not the whole cell.
struct Handoff {
  // User-provided: the implicit one is deleted (a union member's non-trivial
  // default constructor); `send` starts value-initialised.
  Handoff() {}

  Ep* ep = nullptr;
  rc::Qp* qp = nullptr;
  bool is_send = true;
  // The request: `send` when is_send, else `recv` (one cell holds either).
  union {
    rc::SendWr send{};
    rc::RecvWr recv;
  };

  void fill(Ep* e, rc::Qp* q, const rc::SendWr* swr, const rc::RecvWr* rwr) {
    ep = e;
    qp = q;
    is_send = swr != nullptr;
    if (is_send) {
      copy_used(&send, *swr);
    } else {
      copy_used(&recv, *rwr);
    }
  }
  // Every field of a work request but the entries of `sge` past num_sge.
  template <typename Wr>
  static void copy_used(Wr* to, const Wr& from) {
    static_assert(std::is_trivially_copyable_v<Wr> && std::is_standard_layout_v<Wr>);
    constexpr size_t kAt = offsetof(Wr, sge), kEnd = kAt + sizeof(from.sge);
    const size_t used = std::min<size_t>(from.num_sge, rc::kMaxSge);
    auto* dst = reinterpret_cast<unsigned char*>(to);
    const auto* src = reinterpret_cast<const unsigned char*>(&from);
    std::memcpy(dst, src, kAt);
    std::memcpy(dst + kAt, src + kAt, used * sizeof(rc::Sge));
    std::memcpy(dst + kEnd, src + kEnd, sizeof(Wr) - kEnd);
  }
};

struct Shard {
  explicit Shard(uint32_t i) : index(i) {}
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  const uint32_t index;
  int cpu = -1;  // its progress thread's CPU (IfaceConfig::cpus), -1: not pinned
  // Whoever drives the engine (data path: try only; control path: IfaceLock).
  alignas(64) EngineToken token;
  std::unique_ptr<rc::Engine> engine;
  MpscRing<Handoff> handoff{1024};
  // Completion queues of this engine with entries (rc::CompletionQueue::
  // watch): step() visits these, not every EVD.  Token held.
  std::vector<rc::CompletionQueue*> ready_cqs, ready_pass;
  rc::CompletionQueue sink_cq{1024};  // completions of EPs without an EVD
  // Queue pairs placed here (control path).
  uint32_t eps = 0;
  // When traffic last moved on this engine, and when a consumer last drove
  // it (an adaptive progress thread stays out of its way meanwhile).
  alignas(64) std::atomic<uint64_t> last_traffic{0};
  std::atomic<uint64_t> last_consumer_progress{0};
  // Frames this engine had handed to others as of its last step (a step that
  // handed some wakes their progress threads), and when it last handed one:
  // while it does, its RX queue carries other engines' traffic (a link that
  // does not steer by queue pair), and its progress thread spins while they
  // have traffic instead of sleeping on their answers.
  uint64_t handed_off_seen = 0;
  std::atomic<uint64_t> last_handoff{0};
  // Shard 0: no try for the interface lock from the data path before this
  // time (the last one found another token held).  Written with shard 0's
  // token held; read by consumers deciding whether to take shard 0 up.
  std::atomic<uint64_t> control_retry_ns{0};
  // The progress thread (busy / adaptive) and its loop (rc::EngineLoop,
  // progress.cpp): asleep in it while stepping aside for a consumer or
  // backing off; stop() ends it (the last IA of the interface closed).
  rc::EngineLoop loop{rc::EngineLoopConfig{}, &now_ns};
  std::thread thread;

  void unwatch_cq(rc::CompletionQueue* cq) {
    std::erase(ready_cqs, cq);
    std::erase(ready_pass, cq);
  }
  // Wakes its progress thread if it sleeps (a post handed off, a frame
  // handed over, a consumer stopped driving).
  void wake() { loop.wake(); }
  // Wakes its progress thread whatever it waits for (stepping aside, backing
  // off).
  void notify() { loop.notify(); }
  // Busy progress: whether its thread runs the engine now (its loop's
  // heartbeat).  While it does, consumers leave the engine to it: a post is
  // handed over and a waiter only watches its EVD, instead of taking the
  // token from the thread and pulling the engine's state to their CPU.  A
  // thread that stops beating (descheduled on a shared CPU) is driven for
  // by consumers as in the other modes.
  bool served(uint64_t now) const { return loop.beating(now); }
};

}  // namespace dpdat::dat
