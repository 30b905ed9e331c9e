// dpdat-wiredump: builds one RoCEv2 frame of every RC opcode, parses it back
// with the strict parser and prints the decoded headers.  With --pcap FILE it
// also writes the frames for tshark/Wireshark.

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "wire/crc32.hpp"
#include "wire/packet.hpp"
#include "wire/pcap.hpp"
#include "wire/sample_frames.hpp"

namespace {

using namespace dpdat;

void print_frame(const wire::PacketView& v) {
  const auto& b = *v.bth;
  std::printf("%-32.*s opcode=0x%02x qpn=0x%06x psn=%-8u se=%d m=%d pad=%u ackreq=%d len=%zu\n",
              static_cast<int>(v.info->name.size()), v.info->name.data(), b.opcode, b.dest_qp(),
              b.psn().value(), b.se(), b.mig(), b.pad(), b.ack_req(), v.frame.size());
  if (v.reth != nullptr)
    std::printf("    RETH va=0x%016" PRIx64 " rkey=0x%08x dma_len=%u\n", v.reth->va.value(),
                v.reth->rkey.value(), v.reth->dma_len.value());
  if (v.atomic != nullptr)
    std::printf("    AtomicETH va=0x%016" PRIx64 " rkey=0x%08x swap_add=0x%016" PRIx64
                " compare=0x%016" PRIx64 "\n",
                v.atomic->va.value(), v.atomic->rkey.value(), v.atomic->swap_add.value(),
                v.atomic->compare.value());
  if (v.aeth != nullptr)
    std::printf("    AETH syndrome=0x%02x msn=%u\n", v.aeth->syndrome, v.aeth->msn());
  if (v.atomic_ack != nullptr)
    std::printf("    AtomicAckETH orig=0x%016" PRIx64 "\n", v.atomic_ack->orig.value());
  if (v.imm != nullptr) std::printf("    ImmDt 0x%08x\n", v.imm->imm.value());
  if (v.ieth != nullptr) std::printf("    IETH rkey=0x%08x\n", v.ieth->rkey.value());
  std::printf("    payload=%zu B  icrc=0x%08x\n", v.payload.size(), v.icrc);
}

}  // namespace

int main(int argc, char** argv) {
  std::string pcap_path;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--pcap") == 0 && i + 1 < argc) {
      pcap_path = argv[++i];
    } else if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      std::printf(
          "usage: dpdat-wiredump [--pcap FILE]\n"
          "Builds one RoCEv2 frame of every RC opcode, parses it back and prints it.\n"
          "  -h,--help    print this help and exit\n"
          "  --pcap FILE  also write the frames to FILE (pcap, for Wireshark/tshark)\n");
      return 0;
    } else {
      std::fprintf(stderr, "dpdat-wiredump: unknown or incomplete option '%s' (see --help)\n",
                   argv[i]);
      return 2;
    }
  }
  wire::PcapWriter* pcap = nullptr;
  std::unique_ptr<wire::PcapWriter> pcap_owner;
  if (!pcap_path.empty()) {
    pcap_owner = std::make_unique<wire::PcapWriter>(pcap_path);
    if (!pcap_owner->ok()) {
      std::fprintf(stderr, "cannot write %s\n", pcap_path.c_str());
      return 1;
    }
    pcap = pcap_owner.get();
  }

  std::printf("dpdat wire layer: one frame per RC opcode (PMTU %u, CRC-32 path: %s)\n\n",
              wire::kSamplePmtu, wire::crc32_impl_name());
  std::vector<uint8_t> buf(8192);
  int failures = 0;
  for (const auto& f : wire::sample_frames()) {
    const auto r = wire::build_packet(buf, f.spec, wire::kSamplePmtu);
    if (!r.ok()) {
      std::fprintf(stderr, "build failed for opcode 0x%02x\n",
                   static_cast<unsigned>(f.spec.opcode));
      ++failures;
      continue;
    }
    wire::PacketView v;
    const auto rej = wire::parse_packet(std::span(buf.data(), r.len),
                                        wire::ParseOptions{.pmtu = wire::kSamplePmtu}, v);
    if (rej != wire::Reject::kNone) {
      std::fprintf(stderr, "parse rejected opcode 0x%02x: %.*s\n",
                   static_cast<unsigned>(f.spec.opcode),
                   static_cast<int>(wire::reject_name(rej).size()), wire::reject_name(rej).data());
      ++failures;
      continue;
    }
    print_frame(v);
    if (pcap != nullptr && !pcap->write(std::span(buf.data(), r.len))) {
      std::fprintf(stderr, "pcap write failed\n");
      return 1;
    }
  }
  if (pcap != nullptr) std::printf("\nwrote %s\n", pcap_path.c_str());
  return failures == 0 ? 0 : 1;
}
