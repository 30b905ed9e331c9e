#include "packet.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstring>

#include "crc32.hpp"

namespace dpdat::wire {

uint16_t ipv4_checksum(const Ipv4Hdr& ip) noexcept {
  // The one's-complement sum does not depend on byte order (RFC 1071 2(B)):
  // add the header as five host-order 32-bit words, fold to 16 bits, and
  // swap the bytes of the result once instead of every word.
  const auto* p = reinterpret_cast<const uint8_t*>(&ip);
  uint64_t sum = 0;
  for (size_t i = 0; i < sizeof(Ipv4Hdr); i += 4) {
    uint32_t w;
    std::memcpy(&w, p + i, 4);
    sum += w;
  }
  sum = (sum & 0xFFFFFFFFu) + (sum >> 32);  // <= 2^32 + 4: one more fold below
  sum = (sum & 0xFFFFFFFFu) + (sum >> 32);
  sum = (sum & 0xFFFFu) + (sum >> 16);
  sum = (sum & 0xFFFFu) + (sum >> 16);
  auto folded = static_cast<uint16_t>(~sum & 0xFFFFu);
  if constexpr (std::endian::native == std::endian::little)
    folded = static_cast<uint16_t>((folded >> 8) | (folded << 8));
  return folded;
}

uint32_t icrc_begin(const Ipv4Hdr& ip, const UdpHdr& udp, const Bth& bth) noexcept {
  // 8 bytes of ones stand in for the LRH/GRH-sized prefix (RoCEv2 annex A17.8).
  std::array<uint8_t, 8 + sizeof(Ipv4Hdr) + sizeof(UdpHdr) + sizeof(Bth)> m;
  std::memset(m.data(), 0xFF, 8);
  auto* mip = reinterpret_cast<Ipv4Hdr*>(m.data() + 8);
  auto* mudp = reinterpret_cast<UdpHdr*>(m.data() + 8 + sizeof(Ipv4Hdr));
  auto* mbth = reinterpret_cast<Bth*>(m.data() + 8 + sizeof(Ipv4Hdr) + sizeof(UdpHdr));
  std::memcpy(mip, &ip, sizeof(ip));
  std::memcpy(mudp, &udp, sizeof(udp));
  std::memcpy(mbth, &bth, sizeof(bth));
  mip->tos = 0xFF;
  mip->ttl = 0xFF;
  mip->checksum = Be16(0xFFFF);
  mudp->checksum = Be16(0xFFFF);
  mbth->resv8a = 0xFF;
  return crc32_update(0, m.data(), m.size());
}

namespace {
// The ICRC's input, laid over the frame from byte 6 on: its 8-byte prefix of
// ones falls on the last 8 bytes of the Ethernet header, then come IPv4
// (TOS, TTL, checksum as ones), UDP (checksum as ones) and the BTH (byte 4
// as ones), then everything up to the ICRC unmasked.
constexpr size_t kIcrcFrom = sizeof(EthHdr) - 8;
constexpr std::array<uint8_t, 64> make_icrc_mask() {
  std::array<uint8_t, 64> m{};
  for (size_t i = 0; i < 8; ++i) m[i] = 0xFF;
  constexpr size_t kIp = 8, kUdp = kIp + sizeof(Ipv4Hdr), kBth = kUdp + sizeof(UdpHdr);
  m[kIp + offsetof(Ipv4Hdr, tos)] = 0xFF;
  m[kIp + offsetof(Ipv4Hdr, ttl)] = 0xFF;
  m[kIp + offsetof(Ipv4Hdr, checksum)] = m[kIp + offsetof(Ipv4Hdr, checksum) + 1] = 0xFF;
  m[kUdp + offsetof(UdpHdr, checksum)] = m[kUdp + offsetof(UdpHdr, checksum) + 1] = 0xFF;
  m[kBth + offsetof(Bth, resv8a)] = 0xFF;
  return m;
}
constexpr std::array<uint8_t, 64> kIcrcMask = make_icrc_mask();
static_assert(8 + sizeof(Ipv4Hdr) + sizeof(UdpHdr) + sizeof(Bth) <= kIcrcMask.size());
}  // namespace

uint32_t icrc_compute(const uint8_t* frame, size_t len) noexcept {
  // One pass over the frame, the masked fields OR'ed in on the fly (formerly
  // a masked copy of the headers and a second CRC run, each with its own
  // final reduction).
  return crc32_update_masked(0, frame + kIcrcFrom, len - kIcrcFrom, kIcrcMask.data());
}

BuildResult build_packet(std::span<uint8_t> out, const BuildSpec& s, uint32_t pmtu) noexcept {
  const OpInfo& info = op_info(s.opcode);
  if (!info.valid) return {0, BuildError::kInvalidOpcode};
  if (!is_valid_pmtu(pmtu)) return {0, BuildError::kInvalidPmtu};
  const size_t plen = s.payload_size();
  if (plen != 0 && !info.is(op::kPayload)) return {0, BuildError::kPayloadNotAllowed};
  if (plen > pmtu) return {0, BuildError::kPmtuExceeded};
  const bool full = info.is(op::kMiddle) || (info.is(op::kFirst) && !info.is(op::kLast));
  if (full && plen != pmtu) return {0, BuildError::kNotFullPmtu};
  if (info.is(op::kLast) && !info.is(op::kFirst) && info.is(op::kPayload) && plen == 0)
    return {0, BuildError::kEmptyLast};
  const size_t total = frame_size(s.opcode, plen);
  if (out.size() < total) return {0, BuildError::kBufferTooSmall};

  uint8_t* p = out.data();
  auto* eth = reinterpret_cast<EthHdr*>(p);
  eth->dst = s.dst_mac;
  eth->src = s.src_mac;
  eth->ether_type = Be16(kEtherTypeIpv4);

  auto* ip = reinterpret_cast<Ipv4Hdr*>(p + sizeof(EthHdr));
  const size_t ip_len = total - sizeof(EthHdr);
  ip->version_ihl = 0x45;
  ip->tos = s.tos;
  ip->total_length = Be16(static_cast<uint16_t>(ip_len));
  ip->id = Be16(s.ip_id);
  ip->frag_off = Be16(Ipv4Hdr::kFlagDf);
  ip->ttl = s.ttl;
  ip->protocol = kIpProtoUdp;
  ip->src = Be32(s.src_ip);
  ip->dst = Be32(s.dst_ip);
  if (s.ip_csum_offload) {
    ip->checksum = Be16(0);  // the device fills it in (the ICRC masks it anyway)
  } else {
    // The checksum from the field values, not by reading back the bytes just
    // stored (a load spanning several fresh narrow stores stalls the pipeline).
    uint32_t sum = (0x4500u | s.tos) + static_cast<uint32_t>(ip_len) + s.ip_id + Ipv4Hdr::kFlagDf +
                   ((uint32_t{s.ttl} << 8) | kIpProtoUdp) + (s.src_ip >> 16) +
                   (s.src_ip & 0xFFFFu) + (s.dst_ip >> 16) + (s.dst_ip & 0xFFFFu);
    sum = (sum & 0xFFFFu) + (sum >> 16);
    sum = (sum & 0xFFFFu) + (sum >> 16);
    ip->checksum = Be16(static_cast<uint16_t>(~sum & 0xFFFFu));
  }

  auto* udp = reinterpret_cast<UdpHdr*>(p + sizeof(EthHdr) + sizeof(Ipv4Hdr));
  udp->src_port = Be16(s.src_port);
  udp->dst_port = Be16(kRoceV2Port);
  udp->length = Be16(static_cast<uint16_t>(ip_len - sizeof(Ipv4Hdr)));
  udp->checksum = Be16(0);  // RoCEv2: UDP checksum 0, integrity is the ICRC

  uint8_t* t = p + kL2L3L4Size;
  auto* bth = reinterpret_cast<Bth*>(t);
  const uint8_t pad = pad_for(plen);
  bth->opcode = static_cast<uint8_t>(s.opcode);
  bth->flags = 0;
  bth->set_se(s.se);
  bth->set_mig(s.mig);
  bth->set_pad(pad);
  bth->set_tver(0);
  bth->pkey = Be16(s.pkey);
  bth->resv8a = 0;
  bth->set_dest_qp(s.dest_qp);
  bth->ack_resv = s.write_more ? Bth::kWriteMore : 0;
  bth->set_ack_req(s.ack_req);
  bth->set_psn(s.psn);

  if (info.has(Ext::kDeth)) {
    auto* d = reinterpret_cast<Deth*>(t + info.off(Ext::kDeth));
    d->qkey = Be32(s.qkey);
    d->resv = 0;
    d->set_src_qp(s.src_qp);
  }
  if (info.has(Ext::kReth)) {
    auto* r = reinterpret_cast<Reth*>(t + info.off(Ext::kReth));
    r->va = Be64(s.va);
    r->rkey = Be32(s.rkey);
    r->dma_len = Be32(s.dma_len);
  }
  if (info.has(Ext::kAtomicEth)) {
    auto* a = reinterpret_cast<AtomicEth*>(t + info.off(Ext::kAtomicEth));
    a->va = Be64(s.va);
    a->rkey = Be32(s.rkey);
    a->swap_add = Be64(s.swap_add);
    a->compare = Be64(s.compare);
  }
  if (info.has(Ext::kAeth)) {
    auto* a = reinterpret_cast<Aeth*>(t + info.off(Ext::kAeth));
    a->syndrome = s.syndrome;
    a->set_msn(s.msn);
  }
  if (info.has(Ext::kAtomicAckEth)) {
    reinterpret_cast<AtomicAckEth*>(t + info.off(Ext::kAtomicAckEth))->orig = Be64(s.atomic_orig);
  }
  if (info.has(Ext::kImmDt)) reinterpret_cast<ImmDt*>(t + info.off(Ext::kImmDt))->imm = Be32(s.imm);
  if (info.has(Ext::kIeth))
    reinterpret_cast<Ieth*>(t + info.off(Ext::kIeth))->rkey = Be32(s.inv_rkey);
  if (info.has(Ext::kCnpResv)) std::memset(t + info.off(Ext::kCnpResv), 0, sizeof(CnpResv));

  // The payload goes in behind the headers and the ICRC is computed in the
  // same pass where the CRC path can (crc32_copy_masked: each payload byte
  // loaded once, folded and stored).  Of several gather pieces the largest
  // takes that pass (ofi_rxm's direct send: a 64-byte header, then the
  // data): the pieces before it are copied first and folded with the
  // headers, the ones after it copied and then folded behind it.
  uint8_t* pay = t + info.hdr_len;
  uint8_t* const from = p + kIcrcFrom;
  const auto hlen = static_cast<size_t>(pay - from);
  uint32_t icrc = 0;
  if (s.gather.size() <= 1) {
    const std::span<const uint8_t> src = s.gather.empty() ? s.payload : s.gather[0];
    icrc = crc32_copy_masked(0, from, hlen, kIcrcMask.data(), src.data(), plen);
  } else {
    const auto big = static_cast<size_t>(
        std::max_element(s.gather.begin(), s.gather.end(),
                         [](const auto& x, const auto& y) { return x.size() < y.size(); }) -
        s.gather.begin());
    uint8_t* w = pay;
    const auto copy = [&](size_t from_i, size_t to_i) {
      for (size_t i = from_i; i < to_i; ++i) {
        if (!s.gather[i].empty()) std::memcpy(w, s.gather[i].data(), s.gather[i].size());
        w += s.gather[i].size();
      }
    };
    copy(0, big);
    const std::span<const uint8_t> b = s.gather[big];
    icrc = crc32_copy_masked(0, from, hlen + static_cast<size_t>(w - pay), kIcrcMask.data(),
                             b.data(), b.size());
    w += b.size();
    uint8_t* const after = w;
    copy(big + 1, s.gather.size());
    if (w != after) icrc = crc32_update(icrc, after, static_cast<size_t>(w - after));
  }
  if (pad != 0) {
    std::memset(pay + plen, 0, pad);
    icrc = crc32_update(icrc, pay + plen, pad);
  }
  const size_t crc_len = total - kIcrcSize;
  // The ICRC is transmitted least-significant byte first (as rxe stores it).
  for (size_t i = 0; i < kIcrcSize; ++i) p[crc_len + i] = static_cast<uint8_t>(icrc >> (8 * i));
  return {total, BuildError::kOk};
}

std::string_view reject_name(Reject r) noexcept {
  static constexpr std::array<std::string_view, static_cast<size_t>(Reject::kCount)> kNames = {
      "none",           "truncated",      "not-ipv4",        "bad-ip-version",  "bad-ip-ihl",
      "bad-ip-length",  "ip-fragment",    "bad-ip-checksum", "not-udp",         "not-roce-port",
      "bad-udp-length", "unknown-opcode", "bad-tver",        "length-mismatch", "bad-pad-count",
      "pmtu-exceeded",  "bad-icrc"};
  const auto i = static_cast<size_t>(r);
  return i < kNames.size() ? kNames[i] : "invalid";
}

Reject parse_packet(std::span<const uint8_t> frame, const ParseOptions& opts,
                    PacketView& out) noexcept {
  const uint8_t* p = frame.data();
  const size_t n = frame.size();
  if (n < sizeof(EthHdr)) return Reject::kTruncated;
  const auto* eth = reinterpret_cast<const EthHdr*>(p);
  if (eth->ether_type.value() != kEtherTypeIpv4) return Reject::kNotIpv4;

  if (n < sizeof(EthHdr) + sizeof(Ipv4Hdr)) return Reject::kTruncated;
  const auto* ip = reinterpret_cast<const Ipv4Hdr*>(p + sizeof(EthHdr));
  if (ip->version() != 4) return Reject::kBadIpVersion;
  if (ip->ihl() != 5) return Reject::kBadIpIhl;
  const size_t ip_len = ip->total_length.value();
  if (ip_len < sizeof(Ipv4Hdr) + sizeof(UdpHdr)) return Reject::kBadIpLength;
  // Frames may carry trailing bytes (Ethernet padding); the IPv4 length rules.
  if (sizeof(EthHdr) + ip_len > n) return Reject::kTruncated;
  const uint16_t frag = ip->frag_off.value();
  if ((frag & Ipv4Hdr::kFlagMf) != 0 || (frag & Ipv4Hdr::kOffsetMask) != 0)
    return Reject::kIpFragment;
  if (opts.check_ip_checksum && ipv4_checksum(*ip) != 0) return Reject::kBadIpChecksum;
  if (ip->protocol != kIpProtoUdp) return Reject::kNotUdp;

  const auto* udp = reinterpret_cast<const UdpHdr*>(p + sizeof(EthHdr) + sizeof(Ipv4Hdr));
  if (udp->dst_port.value() != kRoceV2Port) return Reject::kNotRocePort;
  if (udp->length.value() != ip_len - sizeof(Ipv4Hdr)) return Reject::kBadUdpLength;

  const size_t end = sizeof(EthHdr) + ip_len;  // first byte after the ICRC
  const size_t t_off = kL2L3L4Size;
  if (end < t_off + sizeof(Bth)) return Reject::kTruncated;
  const auto* bth = reinterpret_cast<const Bth*>(p + t_off);
  const OpInfo& info = op_info(bth->opcode);
  if (!info.valid) return Reject::kUnknownOpcode;
  if (bth->tver() != 0) return Reject::kBadTver;
  if (end < t_off + info.hdr_len + kIcrcSize) return Reject::kLengthMismatch;

  const size_t body = end - t_off - info.hdr_len - kIcrcSize;  // payload + pad
  const uint8_t pad = bth->pad();
  if (!info.is(op::kPayload)) {
    if (body != 0) return Reject::kLengthMismatch;
    if (pad != 0) return Reject::kBadPadCount;
  } else {
    if ((body & 3) != 0) return Reject::kLengthMismatch;  // pad makes the body 4-aligned
    if (pad > body) return Reject::kBadPadCount;
  }
  const size_t plen = body - pad;
  if (plen > opts.pmtu) return Reject::kPmtuExceeded;
  // FIRST and MIDDLE packets carry exactly one PMTU (IBA C9-88/C9-89); LAST
  // packets carry 1..PMTU bytes.
  const bool full = info.is(op::kMiddle) || (info.is(op::kFirst) && !info.is(op::kLast));
  if (full && opts.full_segments && plen != opts.pmtu) return Reject::kLengthMismatch;
  if (full && plen == 0) return Reject::kLengthMismatch;
  if (full && pad != 0) return Reject::kBadPadCount;
  if (info.is(op::kLast) && !info.is(op::kFirst) && info.is(op::kPayload) && plen == 0)
    return Reject::kLengthMismatch;

  const uint8_t* icrc_p = p + end - kIcrcSize;
  const uint32_t icrc = uint32_t{icrc_p[0]} | (uint32_t{icrc_p[1]} << 8) |
                        (uint32_t{icrc_p[2]} << 16) | (uint32_t{icrc_p[3]} << 24);
  if (opts.check_icrc && icrc_compute(p, end - kIcrcSize) != icrc) return Reject::kBadIcrc;

  // Every field assigned once (no zeroing of the whole view first: ~130
  // bytes per packet, a 'rep stos' with a slow start-up on some CPUs).
  const uint8_t* t = p + t_off;
  auto ext = [&](Ext e) { return info.has(e) ? t + info.off(e) : nullptr; };
  out.frame = frame.first(end);
  out.eth = eth;
  out.ip = ip;
  out.udp = udp;
  out.bth = bth;
  out.deth = reinterpret_cast<const Deth*>(ext(Ext::kDeth));
  out.reth = reinterpret_cast<const Reth*>(ext(Ext::kReth));
  out.atomic = reinterpret_cast<const AtomicEth*>(ext(Ext::kAtomicEth));
  out.aeth = reinterpret_cast<const Aeth*>(ext(Ext::kAeth));
  out.atomic_ack = reinterpret_cast<const AtomicAckEth*>(ext(Ext::kAtomicAckEth));
  out.imm = reinterpret_cast<const ImmDt*>(ext(Ext::kImmDt));
  out.ieth = reinterpret_cast<const Ieth*>(ext(Ext::kIeth));
  out.opcode = static_cast<Opcode>(bth->opcode);
  out.info = &info;
  out.payload = std::span<const uint8_t>(t + info.hdr_len, plen);
  out.pad = pad;
  out.icrc = icrc;
  return Reject::kNone;
}

PacketView rebase_view(const PacketView& v, std::span<const uint8_t> copy) noexcept {
  const uint8_t* from = v.frame.data();
  const auto move = [&]<typename T>(const T* p) -> const T* {
    if (p == nullptr) return nullptr;
    return reinterpret_cast<const T*>(copy.data() + (reinterpret_cast<const uint8_t*>(p) - from));
  };
  PacketView out = v;
  out.frame = copy.first(v.frame.size());
  out.eth = move(v.eth);
  out.ip = move(v.ip);
  out.udp = move(v.udp);
  out.bth = move(v.bth);
  out.deth = move(v.deth);
  out.reth = move(v.reth);
  out.atomic = move(v.atomic);
  out.aeth = move(v.aeth);
  out.atomic_ack = move(v.atomic_ack);
  out.imm = move(v.imm);
  out.ieth = move(v.ieth);
  out.payload = copy.subspan(static_cast<size_t>(v.payload.data() - from), v.payload.size());
  return out;
}

}  // namespace dpdat::wire
