// Writes one seed file per RC opcode (from tools/sample_frames.hpp) and one
// per CM message type (a UD SEND Only to the GSI) into the directory given as
// argv[1], for the parser fuzzer's corpus.
#include <cstdio>
#include <string>
#include <vector>

#include "wire/cm.hpp"
#include "wire/sample_frames.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  int i = 0;
  auto write = [&](const std::vector<uint8_t>& f, size_t len) {
    const std::string path = std::string(argv[1]) + "/seed" + std::to_string(i++);
    FILE* out = std::fopen(path.c_str(), "wb");
    if (out == nullptr) return false;
    const bool ok = std::fwrite(f.data(), 1, len, out) == len;
    std::fclose(out);
    return ok;
  };
  for (const auto& s : dpdat::tools::sample_frames()) {
    std::vector<uint8_t> f(8192);
    const auto r = dpdat::wire::build_packet(f, s.spec, dpdat::tools::kSamplePmtu);
    if (!r.ok() || !write(f, r.len)) return 1;
  }
  for (const auto t : dpdat::wire::kAllCmMsgs) {
    dpdat::wire::CmMessage m;
    m.type = t;
    m.tid = 0x0102030405060708ull;
    m.local_comm_id = 0x11223344;
    m.remote_comm_id = 0x55667788;
    m.qpn = 0x000011;
    m.src_ip = 0xC0A86401;
    m.dst_ip = 0xC0A86402;
    m.pdata_len = 5;
    std::vector<uint8_t> f(dpdat::wire::kCmFrameSize);
    const size_t len = dpdat::wire::build_cm_frame(f, dpdat::wire::CmPath{}, m);
    if (len == 0 || !write(f, len)) return 1;
  }
  return 0;
}
