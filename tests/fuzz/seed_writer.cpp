// Writes one seed file per RC opcode (from tools/sample_frames.hpp) into the
// directory given as argv[1], for the parser fuzzer's corpus.
#include <cstdio>
#include <string>
#include <vector>

#include "sample_frames.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  int i = 0;
  for (const auto& s : dpdat::tools::sample_frames()) {
    std::vector<uint8_t> f(8192);
    const auto r = dpdat::wire::build_packet(f, s.spec, dpdat::tools::kSamplePmtu);
    if (!r.ok()) return 1;
    const std::string path = std::string(argv[1]) + "/seed" + std::to_string(i++);
    FILE* out = std::fopen(path.c_str(), "wb");
    if (out == nullptr || std::fwrite(f.data(), 1, r.len, out) != r.len) return 1;
    std::fclose(out);
  }
  return 0;
}
