#pragma once
// dpdat-perf across processes: what the two sides say to each other over
// the --oob socket (both sides run the same program: plain structs).

#include <cstdint>
#include <functional>
#include <string>

#include "oob.hpp"

namespace dpdat::perf {

inline constexpr uint32_t kMagic = 0x44504631;  // "DPF1"
enum : uint32_t { kCmdBw = 1, kCmdLat = 2, kCmdStop = 3, kCmdDone = 4 };
enum : uint32_t { kOpWrite = 0, kOpRead = 1, kOpSend = 2, kOpFadd = 3, kOpCswap = 4 };
inline constexpr size_t kMaxQps = 64;

struct Hello {
  uint32_t magic;
  uint32_t qps;
  uint64_t slice;
  uint32_t depth;
  uint32_t dat_major;  // the DAT API this side runs over: 1 (1.2) or 2 (2.0)
  uint32_t churn;      // soak: churned connections (the region holds their slices)
  uint32_t pad;
};
struct Triplet {
  uint64_t rmr_context;
  uint64_t address;
  uint64_t length;
};
struct Cmd {
  uint32_t kind;
  uint32_t op;
  uint64_t size;
  uint64_t iters;
  double duration;
  uint32_t bidirectional;
  uint32_t salt;  // bandwidth: the server's source pattern (0: its default)
};
struct Reply {
  double cpu_pct;
  uint64_t msgs;  // bidirectional: what the server moved
  double secs;
  double avg_mbs;
  double peak_mbs;
  uint64_t per_qp[kMaxQps];
  uint32_t ok;
  uint32_t pad;
  uint64_t rss_kib;         // the server's resident memory at the end of the round
  uint64_t churn_accepted;  // soak: connections the server accepted beside the measured ones
};

uint32_t op_code(const std::string& op);

// One round, client side: sends c, waits for the server's "ready", runs
// body, sends stop and receives the server's reply.  False with *err when
// the server does not answer, or body's result.
bool run_round(tools::Oob& oob, const Cmd& c, const std::function<bool()>& body, Reply* rep,
               std::string* err);

}  // namespace dpdat::perf
