#include "raw_peer.hpp"

#include <algorithm>
#include <cstring>

#include "dpdk/tsc_clock.hpp"
#include "rc/engine/packet_io.hpp"

namespace dpdat::hostile {

using wire::Opcode;
namespace aeth = wire::aeth;

uint64_t now_ns() { return dpdk::steady_now_ns(); }

namespace {
constexpr uint32_t kGsiQkey = 0x80010000u;  // IBA's well-known QP1 Q_Key
}  // namespace

RawPeer::RawPeer(dpdk::Port& port, uint32_t my_ip, uint32_t victim_ip, uint64_t service,
                 uint64_t seed)
    : port_(port), my_ip_(my_ip), victim_ip_(victim_ip), service_(service), rng_(seed) {}

bool RawPeer::resolve(int timeout_ms) {
  const uint64_t end = now_ns() + uint64_t(timeout_ms) * 1'000'000;
  uint64_t next = 0;
  std::vector<std::vector<uint8_t>> sink;
  while (now_ns() < end) {
    if (now_ns() >= next) {
      if (port_.resolve(victim_ip_, &victim_mac_)) return true;
      next = now_ns() + 20'000'000;
    }
    sink.clear();
    rx(&sink, 1);  // the port answers and learns ARP while receiving
  }
  return false;
}

bool RawPeer::send(wire::BuildSpec s, uint32_t pmtu) {
  if (s.src_ip == 0) s.src_ip = my_ip_;
  if (s.dst_ip == 0) s.dst_ip = victim_ip_;
  if (s.src_mac == wire::MacAddr{}) s.src_mac = port_.mac();
  if (s.dst_mac == wire::MacAddr{}) s.dst_mac = victim_mac_;
  rc::Frame f;
  if (port_.tx_alloc(&f, 1, static_cast<uint32_t>(wire::frame_size(s.opcode, s.payload.size()))) !=
      1)
    return false;
  const wire::BuildResult r = wire::build_packet(std::span<uint8_t>(f.data, f.cap), s, pmtu);
  if (!r.ok()) {
    port_.tx_free(&f, 1);
    return false;
  }
  f.len = static_cast<uint32_t>(r.len);
  if (port_.tx_burst(&f, 1) == 1) return true;
  port_.tx_free(&f, 1);
  return false;
}

bool RawPeer::send_cm(const wire::CmMessage& m, uint32_t src_ip) {
  wire::CmPath p;
  p.src_mac = port_.mac();
  p.dst_mac = victim_mac_;
  p.src_ip = src_ip != 0 ? src_ip : my_ip_;
  p.dst_ip = victim_ip_;
  p.udp_src_port = 0xC001;
  rc::Frame f;
  if (port_.tx_alloc(&f, 1, wire::kCmFrameSize) != 1) return false;
  const size_t n = wire::build_cm_frame(std::span<uint8_t>(f.data, f.cap), p, m);
  if (n == 0) {
    port_.tx_free(&f, 1);
    return false;
  }
  f.len = static_cast<uint32_t>(n);
  if (port_.tx_burst(&f, 1) == 1) return true;
  port_.tx_free(&f, 1);
  return false;
}

bool RawPeer::send_bad_mad() {
  // A 256-byte MAD to QP1 whose management class is not CM's (0x07), with
  // a valid ICRC: it passes the packet parser and reaches the CM's codec.
  std::vector<uint8_t> mad(wire::kMadSize);
  for (auto& b : mad) b = static_cast<uint8_t>(rng_());
  mad[0] = 1;     // base version
  mad[1] = 0x2A;  // management class: not CM
  mad[2] = 2;     // class version
  wire::BuildSpec s;
  s.opcode = Opcode::kUdSendOnly;
  s.dest_qp = wire::kGsiQpn;
  s.qkey = kGsiQkey;
  s.src_qp = wire::kGsiQpn;
  s.src_port = 0xC001;
  s.payload = mad;
  return send(s);
}

uint32_t RawPeer::rx(std::vector<std::vector<uint8_t>>* frames, int timeout_ms) {
  const uint64_t end = now_ns() + uint64_t(timeout_ms) * 1'000'000;
  uint32_t got = 0;
  do {
    rc::Frame f[32];
    const uint16_t n = port_.rx_burst(f, 32);
    for (uint16_t i = 0; i < n; ++i) frames->emplace_back(f[i].data, f[i].data + f[i].len);
    if (n > 0) port_.rx_release(f, n);
    got += n;
    if (got > 0) break;
  } while (now_ns() < end);
  return got;
}

void RawPeer::drain(int ms) {
  const uint64_t end = now_ns() + uint64_t(ms) * 1'000'000;
  std::vector<std::vector<uint8_t>> sink;
  while (now_ns() < end) {
    sink.clear();
    rx(&sink, 1);
  }
}

namespace {
bool parse(const std::vector<uint8_t>& fr, wire::PacketView* v) {
  wire::ParseOptions o;
  o.pmtu = 4096;
  o.full_segments = false;
  return wire::parse_packet(fr, o, *v) == wire::Reject::kNone;
}
}  // namespace

void RawPeer::send_req(uint64_t service, uint32_t* my_comm) {
  wire::CmMessage m;
  m.type = wire::CmMsg::kReq;
  *my_comm = static_cast<uint32_t>(rng_()) | 1u;
  m.tid = rng_();
  m.local_comm_id = *my_comm;
  m.service_id = service;
  m.ca_guid = rng_();
  m.qpn = 0x100000u | static_cast<uint32_t>(rng_() & 0xFFFFF);
  m.start_psn = static_cast<uint32_t>(rng_()) & 0xFFFFFFu;
  m.responder_resources = 16;
  m.initiator_depth = 16;
  m.path_mtu = wire::cm_mtu_enum(1024);
  m.src_ip = my_ip_;
  m.dst_ip = victim_ip_;
  (void)send_cm(m);
}

bool RawPeer::connect(Conn* c, int timeout_ms, std::string* why) {
  wire::CmMessage req;
  req.type = wire::CmMsg::kReq;
  c->my_comm = static_cast<uint32_t>(rng_()) | 1u;
  c->my_qpn = 0x100000u | static_cast<uint32_t>(rng_() & 0xFFFFF);
  const uint32_t my_psn = static_cast<uint32_t>(rng_()) & 0xFFFFFFu;
  req.tid = rng_();
  req.local_comm_id = c->my_comm;
  req.service_id = service_;
  req.ca_guid = 0x0200'00FF'FE00'0000ull | (rng_() & 0xFFFF);
  req.qpn = c->my_qpn;
  req.start_psn = my_psn;
  req.responder_resources = 16;
  req.initiator_depth = 16;
  req.path_mtu = wire::cm_mtu_enum(1024);
  req.src_ip = my_ip_;
  req.dst_ip = victim_ip_;
  const uint64_t end = now_ns() + uint64_t(timeout_ms) * 1'000'000;
  uint64_t resend = 0;
  std::vector<std::vector<uint8_t>> frames;
  while (now_ns() < end) {
    if (now_ns() >= resend) {
      (void)send_cm(req);
      resend = now_ns() + 500'000'000;
    }
    frames.clear();
    rx(&frames, 5);
    for (const auto& fr : frames) {
      wire::PacketView v;
      wire::CmMessage m;
      if (!parse(fr, &v) || !v.info->is(wire::op::kUd) ||
          wire::parse_cm_packet(v, m) != wire::CmError::kOk || m.remote_comm_id != c->my_comm)
        continue;
      if (m.type == wire::CmMsg::kRej) {
        *why = "REJ";
        return false;
      }
      if (m.type != wire::CmMsg::kRep) continue;
      c->victim_qpn = m.qpn;
      c->victim_comm = m.local_comm_id;
      c->next_psn = my_psn;
      c->pmtu = std::min<uint32_t>(1024, wire::cm_mtu_bytes(m.path_mtu));
      if (m.pdata_len >= 16) {
        std::memcpy(&c->va, m.pdata.data(), 8);
        std::memcpy(&c->rkey, m.pdata.data() + 8, 4);
        std::memcpy(&c->len, m.pdata.data() + 12, 4);
      }
      wire::CmMessage rtu;
      rtu.type = wire::CmMsg::kRtu;
      rtu.tid = m.tid;
      rtu.local_comm_id = c->my_comm;
      rtu.remote_comm_id = c->victim_comm;
      (void)send_cm(rtu);
      return true;
    }
  }
  *why = "no REP";
  return false;
}

void RawPeer::send_dreq(const Conn& c, uint32_t src_ip, uint32_t victim_comm) {
  wire::CmMessage m;
  m.type = wire::CmMsg::kDreq;
  m.tid = rng_();
  m.local_comm_id = c.my_comm;
  m.remote_comm_id = victim_comm != 0 ? victim_comm : c.victim_comm;
  m.qpn = c.victim_qpn;
  (void)send_cm(m, src_ip);
}

Answer RawPeer::await(const Conn& c, int timeout_ms) {
  const uint64_t end = now_ns() + uint64_t(timeout_ms) * 1'000'000;
  std::vector<std::vector<uint8_t>> frames;
  while (now_ns() < end) {
    frames.clear();
    rx(&frames, 5);
    for (const auto& fr : frames) {
      wire::PacketView v;
      if (!parse(fr, &v) || v.info->is(wire::op::kUd) || v.bth->dest_qp() != c.my_qpn) continue;
      Answer a;
      a.psn = v.bth->psn().value();
      switch (v.opcode) {
        case Opcode::kAck: {
          const uint8_t syn = v.aeth->syndrome;
          a.kind = aeth::type(syn) == aeth::kNak      ? Answer::kNak
                   : aeth::type(syn) == aeth::kRnrNak ? Answer::kRnr
                                                      : Answer::kAck;
          a.nak_code = aeth::value(syn);
          return a;
        }
        case Opcode::kAtomicAck:
          a.kind = Answer::kAtomicAck;
          return a;
        case Opcode::kReadRespFirst:
        case Opcode::kReadRespOnly:
          a.kind = Answer::kReadData;
          return a;
        default:
          break;
      }
    }
  }
  return Answer{};
}

}  // namespace dpdat::hostile
