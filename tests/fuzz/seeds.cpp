// Writes the seed corpus of one fuzz target into a directory:
//   fuzz_seeds <cm|config|qp|live|verbs> <dir>
// cm: one MAD per CM message type; config: configuration strings and a
// DPDAT_CONF file; qp: workloads of every operation with honest, lossy and
// hostile schedules (see the input layout in qp_fuzz.cpp); live: transfers
// and CM frames replayed, changed and spliced (live_fuzz.cpp); verbs: verbs
// call sequences (verbs_fuzz.cpp).
#include <array>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "wire/cm.hpp"

namespace {

int g_n = 0;
std::string g_dir;

bool write(const void* data, size_t len) {
  const std::string path = g_dir + "/seed" + std::to_string(g_n++);
  FILE* out = std::fopen(path.c_str(), "wb");
  if (out == nullptr) return false;
  const bool ok = std::fwrite(data, 1, len, out) == len;
  return std::fclose(out) == 0 && ok;
}

bool cm_seeds() {
  using namespace dpdat::wire;
  for (const auto t : kAllCmMsgs) {
    CmMessage m;
    m.type = t;
    m.tid = 0x0102030405060708ull;
    m.local_comm_id = 0x11223344;
    m.remote_comm_id = 0x55667788;
    m.service_id = 0x1000;
    m.qpn = 0x000011;
    m.start_psn = 0xFFFF00;
    m.src_ip = 0xC0A86401;
    m.dst_ip = 0xC0A86402;
    m.pdata_len = static_cast<uint8_t>(cm_pdata_max(t));
    for (size_t i = 0; i < m.pdata_len; ++i) m.pdata[i] = static_cast<uint8_t>(i);
    std::array<uint8_t, kMadSize> mad;
    if (!write_cm_mad(m, mad) || !write(mad.data(), mad.size())) return false;
    m.pdata_len = 3;
    if (!write_cm_mad(m, mad) || !write(mad.data(), mad.size())) return false;
  }
  return true;
}

bool config_seeds() {
  static const char* const kSeeds[] = {
      "ring=0;ip=192.168.77.1",
      "vdev=net_memif0,role=server,socket=/tmp/m;ip=10.0.0.1;mtu=9000;pmtu=4096",
      "port=0000:01:00.0; ip = 10.1.2.3 ;neighbor=10.1.2.4@02:00:00:00:00:02;"
      "neighbor=10.1.2.5@0A:0b:0C:0d:0E:0f",
      "ring=1;ip=192.168.77.2;loss=0.25;cm_drop=req:2;cm_drop=drep:1;progress=busy;spin_us=5;"
      "idle_us=7;node=42",
      "vdev=net_af_packet0,iface=veth0;ip=1.2.3.4;progress=inline;pmtu=256",
      "ring=0;ip=1.1.1.1;progress=thread;loss=1e-3",
      "ring=0;ip=1.1.1.1;retry_time_ms=60000",
      "ring=0;ip=1.1.1.1;retry_time_ms=0",
      "# comment\ndpdat0 ring=0;ip=192.168.77.1\n  dpdat1\tring=1;ip=192.168.77.2\r\n\nbad\n",
      "ring=2;ip=1.2.3.4",
      "vdev=;ip=1.2.3.4",
      "ring=0;port=x;ip=1.2.3.4",
      "ring=0;ip=256.1.1.1",
      "ring=0;ip=1.2.3.4;mtu=575",
      "ring=0;ip=1.2.3.4;pmtu=300",
      "ring=0;ip=1.2.3.4;neighbor=1.2.3.5@02:00:00:00:00",
      "ring=0;ip=1.2.3.4;cm_drop=mra:1",
      "ring=0;ip=1.2.3.4;bogus=1",
      "ring=0;ip=1.2.3.4;noequals",
      // Lookups: name \x01 DPDAT_IA_<NAME> \x01 DPDAT_CONF file (an empty
      // name is "fi0"; a first byte with its low 3 bits clear, a built-in).
      "\x01ring=0;ip=10.0.0.1;max_pending_crs_per_peer=4\x01"
      "fi0 ring=1;ip=10.0.0.2\n",
      "\x01\x01# ranks\nfi0 ring=0;ip=10.0.0.1\nfi0 ring=1;ip=9.9.9.9\n",
      "\x08\x01\x01"
      "dpdat0 ring=1;ip=10.0.0.9\n",
      "\x80\x01\x01"
      "fi0 ring=0;ip=10.0.0.1\n",
      "zz\x01\x01"
      "fi0 ring=0;ip=10.0.0.1\n",
  };
  for (const char* s : kSeeds)
    if (!write(s, std::strlen(s))) return false;
  return true;
}

bool qp_seeds() {
  // Workload: configuration byte, congestion-control byte, WR count, then
  // (op byte, size class) per WR.
  // Op byte: side (bit 0), operation (bits 1-3: WRITE, WRITE-imm, SEND,
  // SEND-imm, READ, CMP-SWAP, FETCH-ADD, WRITE to the RMR), fence (4), two
  // SGEs (5), compare matches (6), READ through the RMR (7).
  const std::vector<uint8_t> all_ops = {
      0x2D, 0x00, 11,        // PMTU 512, SR, near wrap, window 8, depth 1 (cfg 0x2D); CC default
      0x00, 12,   0x03, 7,   // A WRITE 1024;  B WRITE-imm 256
      0x04, 13,   0x07, 1,   // A SEND 1025;   B SEND-imm 1
      0x08, 15,   0x89, 14,  // A READ 2048;   B READ 1536 via RMR
      0x4A, 0,    0x0D, 0,   // A CMP-SWAP (matching); B FETCH-ADD
      0x3E, 10,   0x21, 9,   // A WRITE to the RMR, fenced, 2 SGEs; B WRITE 511
      0x0C, 0,               // A FETCH-ADD
  };
  auto with = [&](std::vector<uint8_t> tail, uint8_t cfg = 0x2D, uint8_t cc = 0x00) {
    std::vector<uint8_t> v = all_ops;
    v[0] = cfg;
    v[1] = cc;
    v.insert(v.end(), tail.begin(), tail.end());
    return write(v.data(), v.size());
  };
  // Actions: low nibble = action, bit 4 = direction (to side 1 when set).
  // 0 deliver, 1 drop, 2 duplicate, 3 reorder, 4 deliver all, 5 poll,
  // 6 jump to timer, 7 advance time, 8 inject mutated, 9 inject built,
  // 10 corrupt, 11/12 post next WR, 13/14 deliver all + poll, 15 a CNP
  // (bit 5: a CE mark on the next frame instead).
  const bool ok =
      with({}) && with({}, 0x00) && with({}, 0xF3) && with({}, 0x6E) &&
      with({0x0B, 0x0B, 0x0B, 0x05, 0x11, 0x05, 0x01, 0x05, 0x0D, 0x12,
            0x05, 0x13, 0x05, 0x06, 0x0D, 0x1A, 0x00, 0x0D, 0x06, 0x06}) &&
      with({0x0B, 0x0B, 0x0B, 0x0B, 0x05, 0x05, 0x33, 0x73, 0x0D, 0x0D, 0x11, 0x11, 0x06, 0x06,
            0x06, 0x0D}) &&
      // Hostile: mutated recent frames (PSN, rkey/VA, length) and built ones.
      with({0x0B, 0x0B, 0x05, 0x0D, 0x18, 0x00, 0x01, 0x01, 0x05, 0x0D, 0x18, 0x01,
            0x02, 0x03, 0x01, 0x00, 0x10, 0x0D, 0x08, 0x02, 0x02, 0x08, 0x20, 0x0D}) &&
      with({0x0B, 0x0B, 0x05, 0x19, 0x0A, 0xF0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
            0x00, 0x05, 0x0D, 0x19, 0x0C, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x0D}) &&
      with({0x0B, 0x0B, 0x0B, 0x05, 0x0D, 0x09, 0x11, 0x00, 0x00, 0x00, 0x00, 0x06, 0x0D}) &&
      // Congestion: CNPs and CE marks under each mode, at low line rates
      // and short delay targets (the controls bite within the run).
      with({0x0B, 0x0F, 0x1F, 0x0B, 0x2F, 0x05, 0x3F, 0x0D, 0x0F, 0x0F, 0x0B, 0x2F, 0x0D, 0x06},
           0x2D, 0x61) &&
      with({0x0B, 0x0B, 0x0F, 0x2F, 0x05, 0x0D, 0x1F, 0x3F, 0x06, 0x0D, 0x0F}, 0x2D, 0x32) &&
      with({0x0B, 0x0B, 0x0B, 0x2F, 0x2F, 0x05, 0x0F, 0x0D, 0x01, 0x06, 0x0D}, 0x6E, 0x7A) &&
      with({0x0B, 0x0F, 0x0F, 0x0F, 0x05, 0x0D, 0x06, 0x06, 0x0D}, 0x00, 0x23);
  return ok;
}

bool live_seeds() {
  // Actions (live_fuzz.cpp): 0 WRITE, 1 SEND, 2 READ, 3 WRITE through the
  // window (each: connection, size class), 4 replay, 5 one byte changed,
  // 6 four bytes spliced (each: the kept frame [, offset, value / other
  // frame]; bit 3: towards the frame's sender), 7 rebind (range byte).
  const std::vector<std::vector<uint8_t>> seeds = {
      {0x00, 0, 7, 0x01, 1, 5, 0x02, 2, 3, 0x03, 2, 6},
      {0x00, 1, 3, 0x04, 0, 0x04, 1, 0x04, 2, 0x04, 3, 0x01, 1, 4, 0x00, 0, 7},
      {0x0C, 0, 0x0C, 1, 0x04, 5, 0x04, 6, 0x01, 0, 2, 0x02, 1, 7, 0x03, 2, 5},
      {0x05, 0, 0x20, 0x00, 0x11, 0x05, 1,    0x24, 0x00, 0x40, 0x00,
       0,    6, 0x05, 2,    0x30, 0x00, 0x01, 0x01, 1,    3},
      {0x06, 0, 3, 0x00, 0x06, 4, 7, 0x00, 0x06, 2, 9, 0x00, 0x02, 0, 6, 0x01, 1, 1},
      {0x07, 0x35, 0x03, 2, 7, 0x07, 0x00, 0x03, 2, 3, 0x07, 0xF2, 0x03, 2, 6, 0x00, 2, 6},
      {0x0E, 3, 0x10, 0x00, 0x0D, 2, 0x18, 0x00, 0x08, 0x01, 1, 7, 0x04, 8, 0x04, 9, 0x02, 0, 7},
  };
  for (const auto& v : seeds)
    if (!write(v.data(), v.size())) return false;
  return true;
}

bool verbs_seeds() {
  // Actions (verbs_fuzz.cpp): byte % 24, then its operands.  22 is a small
  // world (QP 0 on device A and QP 1 on device B, connected; PD, MR and CQ
  // slots 0 and 1); 16 post send (QP, count-1, then per request: opcode,
  // flags, SGE count, remote choice, and per SGE: region/key, offset, length
  // class); 17 post receive (QP, count-1, per request: SGE count, SGEs);
  // 19 poll (CQ | size class << 2); 14 modify QP (QP, how, state, peer,
  // [mutations]); 15 connect (QP, QP).
  const std::vector<uint8_t> poll_all = {19, 24, 19, 25, 19, 26, 19, 27, 19, 24, 19, 25};
  auto with = [&](std::vector<uint8_t> v) {
    v.insert(v.end(), poll_all.begin(), poll_all.end());
    return write(v.data(), v.size());
  };
  return
      // A SEND into a posted receive.
      with({22, 0, 17, 1, 0, 1, 1, 0, 5, 16, 0, 0, 2, 2, 1, 1, 0, 0, 3}) &&
      // WRITE, READ, compare-and-swap, fetch-and-add, WRITE with immediate,
      // an inline SEND (the world's QPs take 64 bytes inline).
      with({22, 4, 17, 1, 1,  1, 1, 0, 5, 1, 1,  1, 4, 16, 0,  2,  0, 2, 1, 1, 0, 0,
            6,  4, 2,  1, 33, 0, 7, 3, 5, 2, 1,  1, 0, 0,  2,  16, 0, 1, 6, 2, 1, 33,
            0,  1, 2,  1, 2,  1, 1, 0, 0, 4, 16, 0, 0, 2,  10, 1,  0, 0, 0, 3}) &&
      // An SRQ on device B: PDs, MRs with every access, CQs, the SRQ, QP 0
      // on A and QP 1 on B taking its receives from the SRQ; connected;
      // two SRQ receives, a SEND, the SRQ armed; B's async events.
      with({0, 0, 0,  1, 2, 0,  15, 0,  0, 2,  1,  15, 0,  0, 6, 0,  4, 6,  1,  4, 9,
            1, 9, 12, 0, 0, 17, 17, 12, 1, 73, 17, 17, 15, 0, 1, 18, 0, 1,  1,  1, 0,
            5, 1, 1,  1, 4, 16, 0,  0,  2, 2,  1,  0,  0,  0, 3, 11, 0, 26, 21, 15}) &&
      // The state machine: RTS -> SQD, a send refused there, back to RTS,
      // RTS -> RTS without a state, to RESET (a send refused), INIT with a
      // required attribute missing, with one too many, a random mask, a
      // bad port; connected again; to ERR and back to RESET.
      with({22, 0,  14,   0, 0, 4, 1,  16, 0, 0, 2,  2,  1,  1, 0, 0,  3, 14, 0, 0, 3,
            1,  14, 0,    5, 3, 1, 14, 0,  0, 0, 1,  16, 0,  0, 2, 2,  1, 1,  0, 0, 3,
            14, 0,  2,    1, 1, 4, 14, 0,  3, 1, 1,  9,  14, 0, 4, 2,  1, 7,  0, 0, 0,
            14, 0,  0x84, 1, 1, 0, 2,  15, 0, 1, 14, 0,  0,  6, 1, 14, 0, 0,  0, 1}) &&
      // Objects of another context (B's PD on the second context of A):
      // a QP with that context's CQs, a CQ with B's channel; PDs, CQs and
      // channels destroyed while busy; NULL objects.
      with({22,   8, 12,   0, 9,    17, 17,   4,  1,    6, 0,    0x14, 6, 1, 0x14,
            5,    0, 1,    0, 7,    0,  13,   0,  1,    0, 3,    0,    1, 0, 3,
            0x80, 5, 0x80, 7, 0x80, 10, 0x80, 13, 0x80, 1, 0x80, 21,   5}) &&
      // Completion channel: B's CQ armed, a SEND from A, the event read.
      with({22, 2, 17, 1, 0, 1, 1,  0,  5,  20, 1,  16, 0,  0, 2,
            2,  1, 1,  0, 0, 3, 19, 24, 19, 25, 20, 1,  20, 17}) &&
      // Unsignalled sends, a CQ resized, polls of -1, 0, 1 and 64 entries.
      with({22, 16, 16, 0, 2, 2, 0, 1,  1, 0,  0, 3,  2, 0,  1,  1, 0, 0, 3,
            0,  8,  0,  2, 8, 0, 3, 19, 0, 19, 4, 19, 8, 19, 28, 8, 1, 4}) &&
      // Every query, then the third context closed and opened again.
      with({21, 0, 21, 1, 21, 0x21, 21, 2, 21, 3, 21, 0x23, 21, 4, 21, 5, 21, 6, 21, 7,
            0,  2, 1,  2, 23, 0,    2,  4, 2,  6, 2,  4,    7,  2, 5,  0, 1,  2, 23});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fuzz_seeds <cm|config|qp|live|verbs> <dir>\n");
    return 2;
  }
  g_dir = argv[2];
  const std::string t = argv[1];
  bool ok = false;
  if (t == "cm") {
    ok = cm_seeds();
  } else if (t == "config") {
    ok = config_seeds();
  } else if (t == "live") {
    ok = live_seeds();
  } else if (t == "verbs") {
    ok = verbs_seeds();
  } else if (t == "qp") {
    ok = qp_seeds();
  } else {
    std::fprintf(stderr, "fuzz_seeds: unknown target '%s'\n", t.c_str());
    return 2;
  }
  if (!ok) std::fprintf(stderr, "fuzz_seeds: cannot write into %s\n", g_dir.c_str());
  return ok ? 0 : 1;
}
