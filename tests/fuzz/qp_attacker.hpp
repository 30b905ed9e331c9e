#pragma once
// The attacker of the queue-pair fuzzer (qp_fuzz.cpp): frames towards one
// side, either a recent frame of the honest traffic with fields mutated, or a
// frame built from fuzzer-chosen fields; the IPv4 checksum and the ICRC are
// repaired so that they pass the parser and reach the state machines (unless
// the mutation itself is what the parser must refuse, e.g. a length).
// Addresses, keys and PSNs are drawn near what the victim really uses, so
// that guesses land: its regions (and just past them), its LMR / RMR
// contexts (and with one bit flipped), the PSNs seen recently.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#include "fuzz_bytes.hpp"
#include "qp_world.hpp"
#include "wire/packet.hpp"

namespace dpdat::fuzz {

// The side under attack.
struct AttackTarget {
  const Host* host;
  uint32_t qpn;
  uint32_t src_ip, dst_ip;  // the peer's address (spoofed), the victim's
  wire::MacAddr src_mac, dst_mac;
  uint32_t last_req_psn, last_resp_psn;             // of frames recently sent to it
  const std::vector<std::vector<uint8_t>>* recent;  // frames recently sent to it
};

class Attacker {
 public:
  Attacker(Bytes& in, uint32_t pmtu) : in_(in), pmtu_(pmtu) {}

  // Addresses: mostly near the edges of the victim's regions (and of its RMR
  // window), where an off-by-some check would let an access through: an
  // access of `len` bytes that starts up to 16 bytes before or after a start,
  // or ends up to 16 bytes before or after an end; else anywhere within
  // 32 KiB of the start; sometimes anything.
  uint64_t pick_va(const AttackTarget& t, uint64_t len) {
    const Host& h = *t.host;
    const Region* rs[] = {&h.tgt, &h.win, &h.src, &h.secret, &h.rcv, &h.res};
    const uint8_t k = in_.u8();
    const Region& r = *rs[k % 6];
    const bool end = (k & 0x20) != 0;
    uint64_t edge = end ? r.va() + r.len() : r.va();
    if (&r == &h.win && (k & 0x40) != 0) edge = end ? edge - kWinPad : edge + kWinPad;  // the RMR's
    const uint64_t near = (end ? edge - len : edge) - 16 + uint64_t{in_.u8()} % 33;
    switch (k >> 6) {
      case 0:
      case 1:
        return near;
      case 2:
        return r.va() +
               static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(in_.u16())));
      default:
        return in_.u64();
    }
  }
  uint32_t pick_rkey(const AttackTarget& t) {
    const Host& h = *t.host;
    const uint32_t keys[] = {h.tgt_lmr, h.win_rkey, h.src_lmr, h.secret_lmr, h.win_lmr, h.rcv_lmr};
    const uint8_t k = in_.u8();
    if (k >= 224) return in_.u32();
    const uint32_t key = keys[k % 6];
    return k & 0x80 ? key ^ (1u << (in_.u8() % 32)) : key;
  }
  uint32_t pick_len() {
    static constexpr uint32_t kLens[] = {0,    1,    7,       8,          256,         1024,
                                         2048, 4096, 0x10000, 0x7FFFFFFF, 0x80000000u, 0xFFFFFFFFu};
    const uint8_t k = in_.u8();
    if (k < 64) return k % 33;  // a few bytes: across an edge
    return k >= 240 ? in_.u32() : kLens[k % std::size(kLens)];
  }
  uint32_t pick_psn(const AttackTarget& t, bool request) {
    const uint8_t k = in_.u8();
    if (k == 255) return in_.u32() & 0xFFFFFFu;
    const uint32_t base = request ? t.last_req_psn : t.last_resp_psn;
    return (base + static_cast<uint32_t>(static_cast<int8_t>(in_.u8()))) & 0xFFFFFFu;
  }

  static void repair(std::vector<uint8_t>& f, bool fix_lengths) {
    constexpr size_t kIpOff = sizeof(wire::EthHdr);
    if (f.size() < kIpOff + sizeof(wire::Ipv4Hdr)) return;
    auto* ip = reinterpret_cast<wire::Ipv4Hdr*>(f.data() + kIpOff);
    if (fix_lengths) {
      ip->total_length = wire::Be16(static_cast<uint16_t>(f.size() - kIpOff));
      if (f.size() >= wire::kL2L3L4Size) {
        auto* udp = reinterpret_cast<wire::UdpHdr*>(f.data() + kIpOff + sizeof(wire::Ipv4Hdr));
        udp->length = wire::Be16(static_cast<uint16_t>(f.size() - kIpOff - sizeof(wire::Ipv4Hdr)));
      }
    }
    ip->checksum = wire::Be16(0);
    ip->checksum = wire::Be16(wire::ipv4_checksum(*ip));
    const size_t tot = kIpOff + ip->total_length.value();
    if (tot <= f.size() && tot >= wire::kL2L3L4Size + sizeof(wire::Bth) + wire::kIcrcSize) {
      const uint32_t c = wire::icrc_compute(f.data(), tot - wire::kIcrcSize);
      for (size_t i = 0; i < 4; ++i) f[tot - 4 + i] = static_cast<uint8_t>(c >> (8 * i));
    }
  }

  // A recent frame towards the target, mutated and repaired; empty when
  // there is none.
  std::vector<uint8_t> mutated(const AttackTarget& t) {
    const auto& rec = *t.recent;
    if (rec.empty()) return {};
    std::vector<uint8_t> f = rec[in_.u8() % rec.size()];
    wire::PacketView v;
    if (wire::parse_packet(f, wire::ParseOptions{.pmtu = 4096, .full_segments = false}, v) !=
        wire::Reject::kNone)
      return {};
    auto at = [&](const void* p) {
      return f.data() + (static_cast<const uint8_t*>(p) - v.frame.data());
    };
    auto* bth = reinterpret_cast<wire::Bth*>(at(v.bth));
    bool fix_lengths = true;
    const int n = 1 + in_.u8() % 3;
    for (int k = 0; k < n; ++k) {
      switch (in_.u8() % 12) {
        case 0:
          bth->opcode = in_.u8();
          break;
        case 1:
          bth->set_psn(wire::Psn(pick_psn(t, v.info->is(wire::op::kRequest))));
          break;
        case 2:
          bth->set_dest_qp(bth->dest_qp() + in_.u8());
          break;
        case 3:
          if (v.reth != nullptr) {
            auto* r = reinterpret_cast<wire::Reth*>(at(v.reth));
            r->rkey = wire::Be32(pick_rkey(t));
            r->va = wire::Be64(pick_va(t, r->dma_len.value()));
          }
          break;
        case 4:
          if (v.reth != nullptr)
            reinterpret_cast<wire::Reth*>(at(v.reth))->dma_len = wire::Be32(pick_len());
          break;
        case 5:
          if (v.atomic != nullptr) {
            auto* a = reinterpret_cast<wire::AtomicEth*>(at(v.atomic));
            a->rkey = wire::Be32(pick_rkey(t));
            a->va = wire::Be64(pick_va(t, 8));
            a->swap_add = wire::Be64(in_.u64());
          }
          break;
        case 6:
          if (v.aeth != nullptr) {
            auto* a = reinterpret_cast<wire::Aeth*>(at(v.aeth));
            a->syndrome = in_.u8();
            a->set_msn(in_.u32());
          }
          break;
        case 7:
          if (!v.payload.empty()) {
            const size_t i = in_.u16() % v.payload.size();
            at(v.payload.data())[i] ^= static_cast<uint8_t>(in_.u8() | 1u);
          }
          break;
        case 8:  // shorter or longer than the headers say
          if (in_.u8() & 1)
            f.resize(f.size() - std::min<size_t>(f.size() - wire::kL2L3L4Size, in_.u8() * 4u));
          else
            f.resize(f.size() + in_.u8() * 4u, in_.u8());
          fix_lengths = (in_.u8() & 1) != 0;
          repair(f, fix_lengths);
          return f;
        case 9:  // pad count and flags
          bth->flags = in_.u8();
          break;
        case 10:  // spoofed source address
          reinterpret_cast<wire::Ipv4Hdr*>(at(v.ip))->src = wire::Be32(t.src_ip ^ in_.u8());
          break;
        case 11:
          if (v.atomic_ack != nullptr)
            reinterpret_cast<wire::AtomicAckEth*>(at(v.atomic_ack))->orig = wire::Be64(in_.u64());
          break;
      }
    }
    repair(f, fix_lengths);
    return f;
  }

  // A frame built from fuzzer-chosen fields, towards the target; empty when
  // the builder refuses the fields.
  std::vector<uint8_t> built(const AttackTarget& t) {
    static constexpr wire::Opcode kRc[] = {
        wire::Opcode::kSendFirst,    wire::Opcode::kSendMiddle,    wire::Opcode::kSendLast,
        wire::Opcode::kSendLastImm,  wire::Opcode::kSendOnly,      wire::Opcode::kSendOnlyImm,
        wire::Opcode::kWriteFirst,   wire::Opcode::kWriteMiddle,   wire::Opcode::kWriteLast,
        wire::Opcode::kWriteLastImm, wire::Opcode::kWriteOnly,     wire::Opcode::kWriteOnlyImm,
        wire::Opcode::kReadRequest,  wire::Opcode::kReadRespFirst, wire::Opcode::kReadRespMiddle,
        wire::Opcode::kReadRespLast, wire::Opcode::kReadRespOnly,  wire::Opcode::kAck,
        wire::Opcode::kAtomicAck,    wire::Opcode::kCompareSwap,   wire::Opcode::kFetchAdd,
        wire::Opcode::kSendLastInv,  wire::Opcode::kSendOnlyInv};
    wire::BuildSpec s;
    s.src_mac = t.src_mac;
    s.dst_mac = t.dst_mac;
    s.src_ip = t.src_ip;
    s.dst_ip = t.dst_ip;
    s.src_port = 0xC000;
    s.opcode = kRc[in_.u8() % std::size(kRc)];
    const uint8_t qk = in_.u8();
    s.dest_qp = qk < 240 ? t.qpn : (t.qpn + qk) & 0xFFFFFFu;
    s.psn = wire::Psn(pick_psn(t, wire::op_info(s.opcode).is(wire::op::kRequest)));
    const uint8_t fl = in_.u8();
    s.ack_req = (fl & 1) != 0;
    s.se = (fl & 2) != 0;
    s.rkey = pick_rkey(t);
    s.dma_len = pick_len();
    s.swap_add = in_.u64();
    s.compare = in_.u64();
    s.syndrome = in_.u8();
    s.msn = in_.u32() & 0xFFFFFFu;
    s.atomic_orig = in_.u64();
    s.imm = in_.u32();
    s.inv_rkey = pick_rkey(t);
    std::vector<uint8_t> payload;
    if (wire::op_info(s.opcode).is(wire::op::kPayload)) {
      const uint16_t pl = in_.u16();
      payload.assign((fl & 4) != 0 ? pmtu_ : pl % (pmtu_ + 1), in_.u8());
      // Mostly a RETH that agrees with the payload (a WRITE Only the length
      // check lets through).
      if ((fl & 8) == 0 && payload.size() <= pmtu_)
        s.dma_len = static_cast<uint32_t>(payload.size());
    }
    s.payload = payload;
    const bool atomic =
        s.opcode == wire::Opcode::kCompareSwap || s.opcode == wire::Opcode::kFetchAdd;
    s.va = pick_va(t, atomic ? 8 : s.dma_len);
    std::vector<uint8_t> f(rc::SimLink::kBufSize);
    const auto r = wire::build_packet(f, s, pmtu_);
    if (!r.ok()) return {};
    f.resize(r.len);
    return f;
  }

 private:
  Bytes& in_;
  uint32_t pmtu_;
};

}  // namespace dpdat::fuzz
