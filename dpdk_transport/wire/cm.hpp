#pragma once
// InfiniBand connection-management (CM) messages as RoCEv2 carries them: a UD
// SEND Only packet to the GSI (BTH dest QP 1, P_Key 0xFFFF), a DETH (Q_Key
// 0x80010000, source QP 1), then one 256-byte MAD:
//
//   MAD common header (IBA 13.4.2), 24 bytes
//     0 base version 1   1 mgmt class 0x07 (CM)   2 class version 2   3 method 0x03 (Send)
//     4 status (16 b, 0)  6 class specific (16 b, 0)  8 transaction ID (64 b)
//     16 attribute ID = message type (16 b)  18 reserved (16 b)  20 attribute modifier (32 b, 0)
//   CM message (IBA 12.6), 232 bytes; offsets below are from its first byte
//   (add 24 for the MAD offset).  Only what dpdat uses is named.
//     REQ  0 local comm ID  8 service ID  16 local CA GUID  28 local Q_Key (0)
//          32 local QPN(24) | responder resources(8)  36 local EECN(24, 0) | initiator depth(8)
//          40 remote EECN(24, 0) | remote CM response timeout(5) transport service type(2, RC 0)
//             end-to-end flow control(1, 0: we advertise no credits)
//          44 starting PSN(24) | local CM response timeout(5) retry count(3)
//          48 P_Key 0xFFFF  50 path MTU(4) RDC exists(1) RNR retry count(3)
//          51 max CM retries(4) SRQ(1) extended transport(3)
//          52 primary local LID (0)  54 primary remote LID (0)
//          56 primary local GID  72 primary remote GID (IPv4-mapped ::ffff:a.b.c.d)
//          88 flow label(20, 0) reserved(6) packet rate(6, 0)  92 traffic class (0)
//          93 hop limit (64)  94 SL(4, 0) subnet local(1, 0)  95 local ACK timeout(5)
//          96..139 alternate path (all zero)  140 private data (92)
//     MRA  0 local comm ID  4 remote comm ID  8 message MRAed(2)  9 service timeout(5)
//          10 private data (222)
//     REJ  0 local comm ID  4 remote comm ID  8 message rejected(2)  9 reject info length(7)
//          10 reason (16)  12 ARI (72)  84 private data (148)
//     REP  0 local comm ID  4 remote comm ID  8 local Q_Key (0)  12 local QPN(24)
//          16 local EECN(24, 0)  20 starting PSN(24)  24 responder resources
//          25 initiator depth  26 target ACK delay(5) failover(2) e2e flow control(1), all 0
//          27 RNR retry count(3) SRQ(1) reserved(4)  28 local CA GUID  36 private data (196)
//     RTU  0 local comm ID  4 remote comm ID  8 private data (224)
//     DREQ 0 local comm ID  4 remote comm ID  8 remote QPN(24)  12 private data (220)
//     DREP 0 local comm ID  4 remote comm ID  8 private data (224)
// These offsets are the ones Wireshark's InfiniBand dissector decodes
// (epan/dissectors/packet-infiniband.c, parse_CM_Req .. parse_CM_DRsp); the
// interop test checks every message type with tshark.
//
// Private-data length.  IB CM has no length field (the private data area is
// always whole), but DAT reports the exact size the peer sent.  dpdat keeps it
// in a byte the IBA reserves, so standard decoders show the message unchanged:
//   REQ  byte 4 of the CM message (first byte of the reserved word after the
//        local comm ID)
//   REP  byte 15 (the reserved byte after the local QPN)
//   REJ  ARI byte 0 (CM byte 12), with the reject info length left 0 so that
//        decoders ignore the ARI
//   DREQ byte 11 (the reserved byte after the remote QPN)
//   MRA, RTU, DREP (no reserved byte in the message): the low byte of the MAD
//        header's reserved field (MAD byte 19)
// Path MTU in the REP.  IB CM has none there (both ends take the REQ's, which
// came from a path record); dpdat lets the passive side lower it to what its
// own interface allows and says which it chose in the REP's reserved low four
// bits of byte 27 (same IBA enumeration as the REQ's field; 0 = not stated,
// the active side then keeps the REQ's).
// Source port in the REQ.  IBA's REQ has no IP port; rdma_cm (IBA annex A11)
// carries the active side's port in a header at the start of the private
// data.  dpdat keeps it in bytes 6-7 of the CM message (the rest of the
// reserved word after the local comm ID, big-endian; 0 = not stated: DAT
// and libfabric connections), so the consumer keeps the whole private-data
// area and standard decoders show the message unchanged.
// A REJ from a peer that does send ARI (reject info length != 0) carries no
// length: it is decoded with the whole 148-byte private-data area.
//
// Pure code: no allocation, no DPDK, no exceptions.  The parser never reads
// outside the span it is given.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "headers.hpp"
#include "packet.hpp"

namespace dpdat::wire {

// MAD attribute ID of each CM message (IBA 12.6, CM attributes).
enum class CmMsg : uint16_t {
  kReq = 0x0010,
  kMra = 0x0011,
  kRej = 0x0012,
  kRep = 0x0013,
  kRtu = 0x0014,
  kDreq = 0x0015,
  kDrep = 0x0016,
};
inline constexpr std::array<CmMsg, 7> kAllCmMsgs = {
    CmMsg::kReq, CmMsg::kMra, CmMsg::kRej, CmMsg::kRep, CmMsg::kRtu, CmMsg::kDreq, CmMsg::kDrep};

inline constexpr uint32_t kGsiQpn = 1;
inline constexpr uint32_t kGsiQkey = 0x80010000u;  // the well-known Q_Key of QP1
inline constexpr size_t kMadSize = 256;
inline constexpr size_t kMadHdrSize = 24;
inline constexpr size_t kCmDataSize = kMadSize - kMadHdrSize;  // 232
inline constexpr uint8_t kMadBaseVersion = 1;
inline constexpr uint8_t kMgmtClassCm = 0x07;
inline constexpr uint8_t kCmClassVersion = 2;
inline constexpr uint8_t kMadMethodSend = 0x03;

// Private-data area of each message (IBA 12.6): the most a consumer may send.
inline constexpr size_t kCmReqPdata = 92, kCmMraPdata = 222, kCmRejPdata = 148, kCmRepPdata = 196,
                        kCmRtuPdata = 224, kCmDreqPdata = 220, kCmDrepPdata = 224;
inline constexpr size_t kCmMaxPdata = 224;
// 0 for a value that is not a CM message type.
size_t cm_pdata_max(CmMsg m) noexcept;
std::string_view cm_msg_name(CmMsg m) noexcept;  // "REQ", "REP", ...; "unknown"

// REJ reason codes (IBA table 103; the same numbers as Linux ib_cm_rej_reason).
enum class CmRejReason : uint16_t {
  kNoQp = 1,
  kNoEec = 2,
  kNoResources = 3,
  kTimeout = 4,
  kUnsupported = 5,
  kInvalidCommId = 6,
  kInvalidCommInstance = 7,
  kInvalidServiceId = 8,
  kInvalidTransportType = 9,
  kStaleConn = 10,
  kRdcNotExist = 11,
  kInvalidGid = 12,
  kInvalidLid = 13,
  kInvalidSl = 14,
  kInvalidTrafficClass = 15,
  kInvalidHopLimit = 16,
  kInvalidPacketRate = 17,
  kInvalidAltGid = 18,
  kInvalidAltLid = 19,
  kInvalidAltSl = 20,
  kInvalidAltTrafficClass = 21,
  kInvalidAltHopLimit = 22,
  kInvalidAltPacketRate = 23,
  kPortCmRedirect = 24,
  kPortRedirect = 25,
  kInvalidMtu = 26,
  kInsufficientRespResources = 27,
  kConsumerReject = 28,
  kInvalidRnrRetry = 29,
  kDuplicateLocalCommId = 30,
  kInvalidClassVersion = 31,
  kInvalidFlowLabel = 32,
  kInvalidAltFlowLabel = 33,
};

// REJ "message rejected" and MRA "message MRAed" values (IBA 12.6.7, 12.6.6).
inline constexpr uint8_t kCmMsgReq = 0, kCmMsgRep = 1, kCmMsgOther = 2;

// IBA path MTU enumeration (1 = 256 .. 5 = 4096); 0 for a size that is not one.
constexpr uint8_t cm_mtu_enum(uint32_t bytes) {
  for (uint8_t e = 1; e <= 5; ++e)
    if (bytes == (128u << e)) return e;
  return 0;
}
// Bytes for an IBA path MTU enumeration value; 0 for an invalid value.
constexpr uint32_t cm_mtu_bytes(uint8_t e) { return e >= 1 && e <= 5 ? 128u << e : 0; }
static_assert(cm_mtu_enum(256) == 1 && cm_mtu_enum(4096) == 5 && cm_mtu_bytes(3) == 1024);

// One CM message, decoded, host byte order.  Fields a message type does not
// carry are ignored by write_cm_mad() and left at their defaults by parse_cm().
struct CmMessage {
  CmMsg type = CmMsg::kReq;
  uint64_t tid = 0;  // MAD transaction ID (a REP/REJ/RTU answers with the REQ's)
  uint32_t local_comm_id = 0, remote_comm_id = 0;  // all types (REQ: local only)
  uint64_t service_id = 0;                         // REQ
  uint64_t ca_guid = 0;                            // REQ, REP: sender's CA GUID
  uint32_t qpn = 0;        // REQ, REP: sender's QPN; DREQ: the receiver's QPN (24 bits)
  uint32_t start_psn = 0;  // REQ, REP: the PSN the sender starts sending with (24 bits)
  uint8_t responder_resources = 0, initiator_depth = 0;  // REQ, REP
  uint8_t path_mtu = 3;                                  // REQ, REP: IBA enum 1=256 .. 5=4096
  uint8_t retry_count = 7;                               // REQ (3 bits)
  uint8_t rnr_retry = 7;                                 // REQ, REP (3 bits)
  uint8_t local_cm_resp_timeout = 20;                    // REQ (5 bits): 4.096 us * 2^value
  uint8_t remote_cm_resp_timeout = 20;                   // REQ (5 bits)
  uint8_t max_cm_retries = 15;                           // REQ (4 bits)
  uint8_t ack_timeout = 14;                              // REQ primary local ACK timeout (5 bits)
  uint32_t src_ip = 0, dst_ip = 0;  // REQ primary path local / remote GID (IPv4-mapped)
  uint16_t src_port = 0;            // REQ: the sender's IP port (rdma_cm); 0 none
  CmRejReason rej_reason = CmRejReason::kConsumerReject;  // REJ
  uint8_t rej_msg = kCmMsgReq;  // REJ: message rejected; MRA: message MRAed (kCmMsg*)
  uint8_t service_timeout = 0;  // MRA (5 bits)
  uint8_t pdata_len = 0;        // <= cm_pdata_max(type)
  std::array<uint8_t, kCmMaxPdata> pdata{};

  friend bool operator==(const CmMessage&, const CmMessage&) = default;
};

enum class CmError : uint8_t {
  kOk,
  kTooShort,     // fewer than 256 bytes
  kTooLong,      // more than 256 bytes (a MAD is exactly 256)
  kNotCm,        // management class is not CM
  kBadVersion,   // base version != 1 or CM class version != 2
  kBadMethod,    // method is not Send
  kUnknownAttr,  // attribute ID is not one of the CM messages above
  kBadPdataLen,  // private-data length beyond the message's area
  kNotGsi,       // parse_cm_packet: not a UD SEND Only from/to the GSI with its Q_Key
  kCount
};
std::string_view cm_error_name(CmError e) noexcept;

// Decodes one MAD (the UD payload, exactly kMadSize bytes).  Validates the MAD
// header (base/class version, class, method, attribute ID) and the stored
// private-data length.  On error `out` is unspecified.
CmError parse_cm(std::span<const uint8_t> mad, CmMessage& out) noexcept;

// parse_cm() on a parsed frame, after checking that it is a UD SEND Only to
// the GSI with a DETH from the GSI and the GSI Q_Key (else kNotGsi).
CmError parse_cm_packet(const PacketView& v, CmMessage& out) noexcept;

// Encodes `m` into a zero-filled MAD.  Refuses (returns false, `out` all
// zero) a message whose type is not a CM message or whose pdata_len exceeds
// cm_pdata_max(type): private data is never silently truncated.  Values wider
// than their field are masked to it.
bool write_cm_mad(const CmMessage& m, std::span<uint8_t, kMadSize> out) noexcept;

// Addressing of one CM frame (host byte order).
struct CmPath {
  MacAddr src_mac{}, dst_mac{};
  uint32_t src_ip = 0, dst_ip = 0;
  uint16_t udp_src_port = 0xC000;
};

inline constexpr size_t kCmFrameSize = frame_size(Opcode::kUdSendOnly, kMadSize);
static_assert(kCmFrameSize == 14 + 20 + 8 + 12 + 8 + 256 + 4);

// A complete frame (Ethernet / IPv4 / UDP / BTH UD SEND Only to QP1 / DETH /
// MAD / ICRC) into `out`.  Returns its length (kCmFrameSize), or 0 when `out`
// is smaller than kCmFrameSize or write_cm_mad() refuses `m`.
size_t build_cm_frame(std::span<uint8_t> out, const CmPath& path, const CmMessage& m) noexcept;

}  // namespace dpdat::wire
