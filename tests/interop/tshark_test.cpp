// One frame of every RC opcode, written to a pcap and decoded by tshark:
// each must come out as InfiniBand (RRoCE) with the opcode, QPN, PSN and
// extension-header fields we put in, no malformed or expert-error marks, and
// the ICRC tshark shows equal to an independent CRC of the frame.  tshark 4.0
// does not verify the ICRC itself, so a corrupted one is shown to be caught
// by our parser instead.  Likewise one frame of every CM message (UD SEND
// Only to QP1 with DETH and MAD) must decode with the CM fields we put in.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/reference_crc.hpp"
#include "wire/cm.hpp"
#include "wire/packet.hpp"
#include "wire/pcap.hpp"
#include "wire/sample_frames.hpp"

namespace dpdat {
namespace {

uint32_t ref_icrc(const std::vector<uint8_t>& f) { return testref::icrc(f.data(), f.size() - 4); }

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

uint64_t num(const std::string& s) { return s.empty() ? ~uint64_t{0} : std::stoull(s, nullptr, 0); }

// The bytes of `f` from `i` on in lower-case hex, as tshark prints a field.
std::string hex_from(const std::vector<uint8_t>& f, size_t i) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (; i < f.size(); ++i) {
    out += kHex[f[i] >> 4];
    out += kHex[f[i] & 15];
  }
  return out;
}

// A frame of opcode `op` from host 2 to host 1's QP 0x123 (CNP, SACK tests).
wire::BuildSpec peer_frame(wire::Opcode op, uint32_t psn) {
  wire::BuildSpec s;
  s.src_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  s.dst_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  s.src_ip = 0xC0A86402;
  s.dst_ip = 0xC0A86401;
  s.src_port = 0xC0DE;
  s.opcode = op;
  s.dest_qp = 0x000123;
  s.psn = wire::Psn(psn);
  return s;
}

class Tshark : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(std::system("command -v tshark >/dev/null 2>&1"), 0)
        << "tshark is not installed: run scripts/install-deps.sh (the interop test needs it)";
    char tmpl[] = "/tmp/dpdat-interop-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }
  std::string dir_;

  // Writes frame `f` to NAME.pcap and returns tshark's fields of it:
  // frame.protocols, opcode, dest QP, PSN, then `more` (" -e ..."), then the
  // vendor data, _ws.malformed and _ws.expert.severity.
  std::vector<std::string> vendor_fields(const std::vector<uint8_t>& f, const std::string& name,
                                         const std::string& more) {
    const std::string pcap = dir_ + "/" + name + ".pcap";
    {
      wire::PcapWriter w(pcap);
      EXPECT_TRUE(w.write(f));
    }
    const std::string out =
        run("tshark -r " + pcap +
            " --disable-protocol rpcordma -T fields -E separator=';' -E occurrence=l"
            " -e frame.protocols -e infiniband.bth.opcode -e infiniband.bth.destqp"
            " -e infiniband.bth.psn" +
            more + " -e infiniband.vendor -e _ws.malformed -e _ws.expert.severity 2>/dev/null");
    return split(split(out, '\n').at(0), ';');
  }
};

TEST_F(Tshark, EveryOpcodeDecodesCleanly) {
  const auto samples = wire::sample_frames();
  std::vector<std::vector<uint8_t>> frames;
  const std::string pcap = dir_ + "/all.pcap";
  {
    wire::PcapWriter w(pcap);
    ASSERT_TRUE(w.ok());
    for (const auto& s : samples) {
      std::vector<uint8_t> f(8192);
      const auto r = wire::build_packet(f, s.spec, wire::kSamplePmtu);
      ASSERT_TRUE(r.ok());
      f.resize(r.len);
      ASSERT_TRUE(w.write(f));
      frames.push_back(std::move(f));
    }
  }
  const std::string fields =
      " -e frame.number -e frame.protocols -e infiniband.bth.opcode -e infiniband.bth.destqp"
      " -e infiniband.bth.psn -e infiniband.bth.a -e infiniband.bth.padcnt -e infiniband.reth.va"
      " -e infiniband.reth.r_key -e infiniband.reth.dmalen -e infiniband.aeth.syndrome"
      " -e infiniband.aeth.msn -e infiniband.immdt -e infiniband.ieth"
      " -e infiniband.atomiceth.swapdt -e infiniband.atomiceth.cmpdt"
      " -e infiniband.atomicacketh.origremdt -e data.len -e infiniband.invariant.crc"
      " -e _ws.malformed -e _ws.expert.severity";
  const std::string out =
      run("tshark -r " + pcap +
          " --disable-protocol rpcordma -T fields -E separator=';' -E occurrence=f" + fields +
          " 2>/dev/null");
  const auto lines = split(out, '\n');
  ASSERT_GE(lines.size(), samples.size()) << out;
  for (size_t i = 0; i < samples.size(); ++i) {
    const auto& s = samples[i].spec;
    const auto& info = wire::op_info(s.opcode);
    SCOPED_TRACE(std::string(info.name) + ": " + lines[i]);
    const auto c = split(lines[i], ';');
    ASSERT_EQ(c.size(), 21u);
    EXPECT_EQ(num(c[0]), i + 1);
    EXPECT_NE(c[1].find("infiniband"), std::string::npos);
    EXPECT_EQ(num(c[2]), static_cast<uint64_t>(s.opcode));
    EXPECT_EQ(num(c[3]), s.dest_qp);
    EXPECT_EQ(num(c[4]), s.psn.value());
    EXPECT_EQ(num(c[5]), s.ack_req ? 1u : 0u);
    const size_t plen = samples[i].payload.size();
    EXPECT_EQ(num(c[6]), wire::pad_for(plen));
    if (info.has(wire::Ext::kReth)) {
      EXPECT_EQ(num(c[7]), s.va);
      EXPECT_EQ(num(c[8]), s.rkey);
      EXPECT_EQ(num(c[9]), s.dma_len);
    } else if (info.has(wire::Ext::kAtomicEth)) {
      // Wireshark shows the AtomicETH address and key under the reth.* names.
      EXPECT_EQ(num(c[7]), s.va);
      EXPECT_EQ(num(c[8]), s.rkey);
      EXPECT_TRUE(c[9].empty());
    } else {
      EXPECT_TRUE(c[7].empty());
    }
    if (info.has(wire::Ext::kAeth)) {
      EXPECT_EQ(num(c[10]), s.syndrome);
      EXPECT_EQ(num(c[11]), s.msn);
    } else {
      EXPECT_TRUE(c[10].empty());
    }
    if (info.has(wire::Ext::kImmDt)) {
      EXPECT_EQ(std::stoull(c[12], nullptr, 16), s.imm);
    }
    if (info.has(wire::Ext::kIeth)) {
      EXPECT_EQ(std::stoull(c[13], nullptr, 16), s.inv_rkey);
    }
    if (info.has(wire::Ext::kAtomicEth)) {
      EXPECT_EQ(num(c[14]), s.swap_add);
      EXPECT_EQ(num(c[15]), s.compare);
    }
    if (info.has(wire::Ext::kAtomicAckEth)) {
      EXPECT_EQ(num(c[16]), s.atomic_orig);
    }
    // Payload plus pad is what follows the headers.
    if (plen > 0) {
      EXPECT_EQ(num(c[17]), plen + wire::pad_for(plen));
    } else {
      EXPECT_TRUE(c[17].empty());
    }
    // tshark prints the ICRC as a big-endian number of the four wire bytes;
    // RoCEv2 stores the CRC little-endian, so byte-swap to compare.
    EXPECT_EQ(num(c[18]), __builtin_bswap32(ref_icrc(frames[i])));
    EXPECT_TRUE(c[19].empty()) << "malformed";
    EXPECT_TRUE(c[20].empty() || c[20].find("error") == std::string::npos) << "expert: " << c[20];
  }
  // And the whole capture has no expert error or warning at all.
  const std::string expert =
      run("tshark -r " + pcap + " --disable-protocol rpcordma -q -z expert 2>&1");
  EXPECT_EQ(expert.find("Errors"), std::string::npos) << expert;
  EXPECT_EQ(expert.find("Malformed"), std::string::npos) << expert;
}

TEST_F(Tshark, CorruptedIcrcIsOursToCatch) {
  const auto all = wire::sample_frames();  // owns the payloads the specs point at
  const auto& s = all.front();
  std::vector<uint8_t> f(8192);
  const auto r = wire::build_packet(f, s.spec, wire::kSamplePmtu);
  ASSERT_TRUE(r.ok());
  f.resize(r.len);
  f[f.size() - 1] ^= 0x01;
  wire::PacketView v;
  EXPECT_EQ(wire::parse_packet(f, wire::ParseOptions{.pmtu = wire::kSamplePmtu}, v),
            wire::Reject::kBadIcrc);
  const std::string pcap = dir_ + "/bad.pcap";
  {
    wire::PcapWriter w(pcap);
    ASSERT_TRUE(w.write(f));
  }
  // tshark decodes it all the same (it has no ICRC check to fail).
  const std::string out =
      run("tshark -r " + pcap +
          " --disable-protocol rpcordma -T fields -e infiniband.bth.opcode 2>/dev/null");
  EXPECT_EQ(num(split(out, '\n').at(0)), static_cast<uint64_t>(s.spec.opcode));
}

// The RoCEv2 congestion notification packet (annex A17.9.3).  tshark 4.0
// has no name for BTH opcode 0x81: it decodes the frame as InfiniBand with
// that opcode, the dest QP and PSN, and shows what follows the BTH (the 16
// reserved bytes, then the ICRC) as vendor-specific data, with no malformed
// or expert mark.
TEST_F(Tshark, CnpDecodes) {
  wire::BuildSpec s = peer_frame(wire::Opcode::kCnp, 0);
  std::vector<uint8_t> f(256);
  const auto r = wire::build_packet(f, s, wire::kSamplePmtu);
  ASSERT_TRUE(r.ok());
  f.resize(r.len);
  ASSERT_EQ(f.size(), 14u + 20 + 8 + 12 + 16 + 4);
  const auto c = vendor_fields(f, "cnp", " -e infiniband.bth.a");
  ASSERT_EQ(c.size(), 8u);
  EXPECT_NE(c[0].find("infiniband"), std::string::npos);
  EXPECT_EQ(num(c[1]), 0x81u);
  EXPECT_EQ(num(c[2]), 0x123u);
  EXPECT_EQ(num(c[3]), 0u);
  EXPECT_EQ(num(c[4]), 0u);
  const std::string tail = hex_from(f, 54);  // reserved bytes and ICRC
  EXPECT_EQ(c[5], tail);
  EXPECT_EQ(tail.substr(0, 32), std::string(32, '0'));
  EXPECT_EQ(std::stoull(c[5].substr(32), nullptr, 16), __builtin_bswap32(ref_icrc(f)));
  EXPECT_TRUE(c[6].empty()) << "malformed";
  EXPECT_TRUE(c[7].empty() || c[7].find("error") == std::string::npos) << "expert: " << c[7];
  wire::PacketView v;
  EXPECT_EQ(wire::parse_packet(f, wire::ParseOptions{.pmtu = wire::kSamplePmtu}, v),
            wire::Reject::kNone);
}

// dpdat's selective acknowledgement (wire::Opcode::kSack, manufacturer-
// specific opcode 0xC0, IBA table 35): tshark decodes the frame as
// InfiniBand with that opcode, the dest QP and PSN, and shows the payload
// (span and bitmap) and the ICRC as vendor-specific data, with no malformed
// or expert mark.
TEST_F(Tshark, SackDecodes) {
  const std::vector<uint8_t> sack = {0, 0, 0, 40, 0xF6, 0xFF, 0xFF, 0x7F, 0x01, 0, 0, 0};
  wire::BuildSpec s = peer_frame(wire::Opcode::kSack, 0x10);
  s.payload = sack;
  std::vector<uint8_t> f(256);
  const auto r = wire::build_packet(f, s, wire::kSamplePmtu);
  ASSERT_TRUE(r.ok());
  f.resize(r.len);
  ASSERT_EQ(f.size(), 14u + 20 + 8 + 12 + sack.size() + 4);
  const auto c = vendor_fields(f, "sack", "");
  ASSERT_EQ(c.size(), 7u);
  EXPECT_NE(c[0].find("infiniband"), std::string::npos);
  EXPECT_EQ(num(c[1]), 0xC0u);
  EXPECT_EQ(num(c[2]), 0x123u);
  EXPECT_EQ(num(c[3]), 0x10u);
  const std::string tail = hex_from(f, 54);  // payload and ICRC
  EXPECT_EQ(c[4], tail);
  EXPECT_EQ(std::stoull(c[4].substr(2 * sack.size()), nullptr, 16), __builtin_bswap32(ref_icrc(f)));
  EXPECT_TRUE(c[5].empty()) << "malformed";
  EXPECT_TRUE(c[6].empty() || c[6].find("error") == std::string::npos) << "expert: " << c[6];
  wire::PacketView v;
  ASSERT_EQ(wire::parse_packet(f, wire::ParseOptions{.pmtu = wire::kSamplePmtu}, v),
            wire::Reject::kNone);
  EXPECT_EQ(v.opcode, wire::Opcode::kSack);
  EXPECT_TRUE(std::equal(sack.begin(), sack.end(), v.payload.begin(), v.payload.end()));
}

// Lower-case hex of `n` bytes of private data padded with zeros to `area`, as
// tshark prints a byte field.
std::string pdata_hex(const wire::CmMessage& m, size_t area) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < area; ++i) {
    const uint8_t b = i < m.pdata_len ? m.pdata[i] : 0;
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

TEST_F(Tshark, CmMessagesDecode) {
  // A connection's worth of CM traffic, one frame per message type.
  wire::CmPath ab;
  ab.src_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  ab.dst_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  ab.src_ip = 0xC0A86401;  // 192.168.100.1 (documentation only: never sent)
  ab.dst_ip = 0xC0A86402;
  wire::CmPath ba = ab;
  std::swap(ba.src_mac, ba.dst_mac);
  std::swap(ba.src_ip, ba.dst_ip);
  ba.udp_src_port = 0xC001;

  std::vector<wire::CmMessage> msgs;
  std::vector<const wire::CmPath*> paths;
  auto add = [&](wire::CmMsg t, const wire::CmPath& p, size_t pdata) {
    wire::CmMessage m;
    m.type = t;
    m.tid = 0x0000AB0000000000ull + msgs.size();
    const bool from_a = &p == &ab;
    m.local_comm_id = from_a ? 0x1A2B3C4D : 0x5E6F7081;
    m.remote_comm_id = from_a ? 0x5E6F7081 : 0x1A2B3C4D;
    m.service_id = 0x0000000000AB1234ull;
    m.ca_guid = from_a ? 0x0002C9030000000Aull : 0x0002C9030000000Bull;
    m.qpn = from_a ? 0x000011 : 0x010012;
    m.start_psn = from_a ? 0xFFFF00 : 0x00ABCD;
    m.responder_resources = 4;
    m.initiator_depth = 3;
    m.path_mtu = 3;
    m.retry_count = 6;
    m.rnr_retry = 5;
    m.src_ip = p.src_ip;
    m.dst_ip = p.dst_ip;
    m.rej_reason = wire::CmRejReason::kConsumerReject;
    m.rej_msg = wire::kCmMsgRep;
    m.service_timeout = 12;
    m.pdata_len = static_cast<uint8_t>(pdata);
    for (size_t i = 0; i < pdata; ++i) m.pdata[i] = static_cast<uint8_t>(0x30 + i);
    msgs.push_back(m);
    paths.push_back(&p);
  };
  add(wire::CmMsg::kReq, ab, 92);
  add(wire::CmMsg::kMra, ba, 0);
  add(wire::CmMsg::kRep, ba, 17);
  add(wire::CmMsg::kRtu, ab, 3);
  add(wire::CmMsg::kRej, ba, 148);
  add(wire::CmMsg::kDreq, ab, 9);
  add(wire::CmMsg::kDrep, ba, 224);

  std::vector<std::vector<uint8_t>> frames;
  const std::string pcap = dir_ + "/cm.pcap";
  {
    wire::PcapWriter w(pcap);
    ASSERT_TRUE(w.ok());
    for (size_t i = 0; i < msgs.size(); ++i) {
      std::vector<uint8_t> f(wire::kCmFrameSize);
      ASSERT_EQ(wire::build_cm_frame(f, *paths[i], msgs[i]), wire::kCmFrameSize);
      ASSERT_TRUE(w.write(f));
      frames.push_back(std::move(f));
    }
  }
  const std::vector<std::string> names = {
      "frame.number", "frame.protocols", "infiniband.bth.opcode", "infiniband.bth.destqp",
      "infiniband.bth.p_key", "infiniband.deth.q_key", "infiniband.deth.srcqp",
      "infiniband.mad.baseversion", "infiniband.mad.mgmtclass", "infiniband.mad.classversion",
      "infiniband.mad.method", "infiniband.mad.transactionid", "infiniband.mad.attributeid",
      // REQ
      "infiniband.cm.req", "infiniband.cm.req.serviceid", "infiniband.cm.req.localcaguid",
      "infiniband.cm.req.localqpn", "infiniband.cm.req.responderres", "infiniband.cm.req.initdepth",
      "infiniband.cm.req.transpsvctype", "infiniband.cm.req.startpsn",
      "infiniband.cm.req.retrcount", "infiniband.cm.req.pkey", "infiniband.cm.req.pppmtu",
      "infiniband.cm.req.rnrretrcount", "infiniband.cm.req.prim_localgid_ipv4",
      "infiniband.cm.req.prim_remotegid_ipv4", "infiniband.cm.req.private",
      // REP
      "infiniband.cm.rep", "infiniband.cm.rep.remotecommid", "infiniband.cm.rep.localqpn",
      "infiniband.cm.rep.startpsn", "infiniband.cm.rep.respres", "infiniband.cm.rep.initdepth",
      "infiniband.cm.rep.rnrretrcount", "infiniband.cm.rep.localcaguid",
      "infiniband.cm.rep.private",
      // RTU
      "infiniband.cm.rtu.localcommid", "infiniband.cm.rtu.remotecommid",
      "infiniband.cm.rtu.private",
      // REJ
      "infiniband.cm.rej.localcommid", "infiniband.cm.rej.remotecommid", "infiniband.cm.rej.msgrej",
      "infiniband.cm.rej.rejinfolen", "infiniband.cm.rej.reason", "infiniband.cm.rej.private",
      // DREQ (Wireshark files its remote QPN under the REQ's name)
      "infiniband.cm.dreq.localcommid", "infiniband.cm.dreq.remotecommid",
      "infiniband.cm.req.remoteqpneecn", "infiniband.cm.dreq.private",
      // DREP
      "infiniband.cm.drsp.localcommid", "infiniband.cm.drsp.remotecommid",
      "infiniband.cm.drsp.private",
      // integrity
      "infiniband.invariant.crc", "_ws.malformed", "_ws.expert.severity"};
  std::map<std::string, size_t> col;
  std::string fields;
  for (size_t i = 0; i < names.size(); ++i) {
    col[names[i]] = i;
    fields += " -e " + names[i];
  }
  // The Sockets Direct Protocol heuristic claims the private data of every CM
  // message after a REQ (it is not SDP): keep it, and RPC-over-RDMA, out.
  const std::string disable = " --disable-protocol rpcordma --disable-protocol infiniband_sdp";
  const std::string out =
      run("tshark -r " + pcap + disable + " -T fields -E separator=';' -E occurrence=f" + fields +
          " 2>/dev/null");
  const auto lines = split(out, '\n');
  ASSERT_GE(lines.size(), msgs.size()) << out;
  for (size_t i = 0; i < msgs.size(); ++i) {
    const wire::CmMessage& m = msgs[i];
    SCOPED_TRACE(std::string(wire::cm_msg_name(m.type)) + ": " + lines[i]);
    const auto c = split(lines[i], ';');
    ASSERT_EQ(c.size(), names.size());
    auto f = [&](const char* name) -> const std::string& { return c.at(col.at(name)); };
    auto n = [&](const char* name) { return num(f(name)); };
    EXPECT_EQ(n("frame.number"), i + 1);
    EXPECT_NE(f("frame.protocols").find("infiniband"), std::string::npos);
    EXPECT_EQ(n("infiniband.bth.opcode"), 0x64u);
    EXPECT_EQ(n("infiniband.bth.destqp"), 1u);
    EXPECT_EQ(n("infiniband.bth.p_key"), 0xFFFFu);
    EXPECT_EQ(n("infiniband.deth.q_key"), 0x80010000u);
    EXPECT_EQ(n("infiniband.deth.srcqp"), 1u);
    EXPECT_EQ(n("infiniband.mad.baseversion"), 1u);
    EXPECT_EQ(n("infiniband.mad.mgmtclass"), 0x07u);
    EXPECT_EQ(n("infiniband.mad.classversion"), 2u);
    EXPECT_EQ(n("infiniband.mad.method"), 0x03u);
    EXPECT_EQ(n("infiniband.mad.transactionid"), m.tid);
    EXPECT_EQ(n("infiniband.mad.attributeid"), static_cast<uint64_t>(m.type));
    switch (m.type) {
      case wire::CmMsg::kReq:
        EXPECT_EQ(n("infiniband.cm.req"), m.local_comm_id);
        EXPECT_EQ(n("infiniband.cm.req.serviceid"), m.service_id);
        EXPECT_EQ(n("infiniband.cm.req.localcaguid"), m.ca_guid);
        EXPECT_EQ(n("infiniband.cm.req.localqpn"), m.qpn);
        EXPECT_EQ(n("infiniband.cm.req.responderres"), m.responder_resources);
        EXPECT_EQ(n("infiniband.cm.req.initdepth"), m.initiator_depth);
        EXPECT_EQ(n("infiniband.cm.req.transpsvctype"), 0u);  // RC
        EXPECT_EQ(n("infiniband.cm.req.startpsn"), m.start_psn);
        EXPECT_EQ(n("infiniband.cm.req.retrcount"), m.retry_count);
        EXPECT_EQ(n("infiniband.cm.req.pkey"), 0xFFFFu);
        EXPECT_EQ(n("infiniband.cm.req.pppmtu"), m.path_mtu);
        EXPECT_EQ(n("infiniband.cm.req.rnrretrcount"), m.rnr_retry);
        EXPECT_EQ(f("infiniband.cm.req.prim_localgid_ipv4"), "192.168.100.1");
        EXPECT_EQ(f("infiniband.cm.req.prim_remotegid_ipv4"), "192.168.100.2");
        EXPECT_EQ(f("infiniband.cm.req.private"), pdata_hex(m, 92));
        break;
      case wire::CmMsg::kMra:  // tshark 4.0 names MRA but does not decode it
        EXPECT_TRUE(f("infiniband.cm.req").empty());
        break;
      case wire::CmMsg::kRep:
        EXPECT_EQ(n("infiniband.cm.rep"), m.local_comm_id);
        EXPECT_EQ(n("infiniband.cm.rep.remotecommid"), m.remote_comm_id);
        EXPECT_EQ(n("infiniband.cm.rep.localqpn"), m.qpn);
        EXPECT_EQ(n("infiniband.cm.rep.startpsn"), m.start_psn);
        EXPECT_EQ(n("infiniband.cm.rep.respres"), m.responder_resources);
        EXPECT_EQ(n("infiniband.cm.rep.initdepth"), m.initiator_depth);
        EXPECT_EQ(n("infiniband.cm.rep.rnrretrcount"), m.rnr_retry);
        EXPECT_EQ(n("infiniband.cm.rep.localcaguid"), m.ca_guid);
        EXPECT_EQ(f("infiniband.cm.rep.private"), pdata_hex(m, 196));
        break;
      case wire::CmMsg::kRtu:
        EXPECT_EQ(n("infiniband.cm.rtu.localcommid"), m.local_comm_id);
        EXPECT_EQ(n("infiniband.cm.rtu.remotecommid"), m.remote_comm_id);
        EXPECT_EQ(f("infiniband.cm.rtu.private"), pdata_hex(m, 224));
        break;
      case wire::CmMsg::kRej:
        EXPECT_EQ(n("infiniband.cm.rej.localcommid"), m.local_comm_id);
        EXPECT_EQ(n("infiniband.cm.rej.remotecommid"), m.remote_comm_id);
        EXPECT_EQ(n("infiniband.cm.rej.msgrej"), m.rej_msg);
        EXPECT_EQ(n("infiniband.cm.rej.rejinfolen"), 0u);
        EXPECT_EQ(n("infiniband.cm.rej.reason"), static_cast<uint64_t>(m.rej_reason));
        EXPECT_EQ(f("infiniband.cm.rej.private"), pdata_hex(m, 148));
        break;
      case wire::CmMsg::kDreq:
        EXPECT_EQ(n("infiniband.cm.dreq.localcommid"), m.local_comm_id);
        EXPECT_EQ(n("infiniband.cm.dreq.remotecommid"), m.remote_comm_id);
        EXPECT_EQ(n("infiniband.cm.req.remoteqpneecn"), m.qpn);
        EXPECT_EQ(f("infiniband.cm.dreq.private"), pdata_hex(m, 220));
        break;
      case wire::CmMsg::kDrep:
        EXPECT_EQ(n("infiniband.cm.drsp.localcommid"), m.local_comm_id);
        EXPECT_EQ(n("infiniband.cm.drsp.remotecommid"), m.remote_comm_id);
        EXPECT_EQ(f("infiniband.cm.drsp.private"), pdata_hex(m, 224));
        break;
    }
    EXPECT_EQ(n("infiniband.invariant.crc"), __builtin_bswap32(ref_icrc(frames[i])));
    EXPECT_TRUE(f("_ws.malformed").empty()) << "malformed";
    const std::string& sev = f("_ws.expert.severity");
    EXPECT_TRUE(sev.empty() || sev.find("error") == std::string::npos) << "expert: " << sev;
  }
  const std::string expert = run("tshark -r " + pcap + disable + " -q -z expert 2>&1");
  EXPECT_EQ(expert.find("Errors"), std::string::npos) << expert;
  EXPECT_EQ(expert.find("Malformed"), std::string::npos) << expert;
  // The column view names every message as CM.
  const std::string info =
      run("tshark -r " + pcap + disable + " -T fields -e _ws.col.Info 2>/dev/null");
  for (const char* label :
       {"CM: ConnectRequest", "CM: MsgRcptAck", "CM: ConnectReply", "CM: ReadyToUse",
        "CM: ConnectReject", "CM: DisconnectRequest", "CM: DisconnectReply"})
    EXPECT_NE(info.find(label), std::string::npos) << label << " in\n" << info;
}

}  // namespace
}  // namespace dpdat
