// One frame of every RC opcode, written to a pcap and decoded by tshark:
// each must come out as InfiniBand (RRoCE) with the opcode, QPN, PSN and
// extension-header fields we put in, no malformed or expert-error marks, and
// the ICRC tshark shows equal to an independent CRC of the frame.  tshark 4.0
// does not verify the ICRC itself, so a corrupted one is shown to be caught
// by our parser instead.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "common/reference_crc.hpp"
#include "pcap.hpp"
#include "sample_frames.hpp"
#include "wire/packet.hpp"

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
};

TEST_F(Tshark, EveryOpcodeDecodesCleanly) {
  const auto samples = tools::sample_frames();
  std::vector<std::vector<uint8_t>> frames;
  const std::string pcap = dir_ + "/all.pcap";
  {
    tools::PcapWriter w(pcap);
    ASSERT_TRUE(w.ok());
    for (const auto& s : samples) {
      std::vector<uint8_t> f(8192);
      const auto r = wire::build_packet(f, s.spec, tools::kSamplePmtu);
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
  const auto all = tools::sample_frames();  // owns the payloads the specs point at
  const auto& s = all.front();
  std::vector<uint8_t> f(8192);
  const auto r = wire::build_packet(f, s.spec, tools::kSamplePmtu);
  ASSERT_TRUE(r.ok());
  f.resize(r.len);
  f[f.size() - 1] ^= 0x01;
  wire::PacketView v;
  EXPECT_EQ(wire::parse_packet(f, wire::ParseOptions{.pmtu = tools::kSamplePmtu}, v),
            wire::Reject::kBadIcrc);
  const std::string pcap = dir_ + "/bad.pcap";
  {
    tools::PcapWriter w(pcap);
    ASSERT_TRUE(w.write(f));
  }
  // tshark decodes it all the same (it has no ICRC check to fail).
  const std::string out =
      run("tshark -r " + pcap +
          " --disable-protocol rpcordma -T fields -e infiniband.bth.opcode 2>/dev/null");
  EXPECT_EQ(num(split(out, '\n').at(0)), static_cast<uint64_t>(s.spec.opcode));
}

}  // namespace
}  // namespace dpdat
