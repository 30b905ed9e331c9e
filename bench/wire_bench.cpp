// Wire layer micro-benchmarks: build and parse (with ICRC check) of 64 B and
// 4 KiB RDMA WRITE Only packets, ICRC of 1 KiB and 4 KiB frames, each CRC-32
// path forced at 48 B / 1 KiB / 4 KiB / 64 KiB, and memcpy baselines (4 KiB
// copied twice, cache-hot and rotating through 64 MiB) to state the
// parse+ICRC cost as a ratio of the copies it must stay under.  With ISA-L
// (libisal-dev), its CRC-32 (crc32_gzip_refl: the same reflected IEEE CRC)
// beside each hand-written path, plain, as the masked ICRC and after a copy.
#include <benchmark/benchmark.h>

#if defined(DPDAT_BENCH_ISAL)
#include <isa-l/crc.h>
#endif

#include <cstring>
#include <span>
#include <vector>

#include "wire/crc32.hpp"
#include "wire/packet.hpp"

namespace dpdat::wire {
namespace {

constexpr uint32_t kPmtu = 4096;

BuildSpec write_spec(std::span<const uint8_t> payload) {
  BuildSpec s;
  s.src_mac = {2, 0, 0, 0, 0, 1};
  s.dst_mac = {2, 0, 0, 0, 0, 2};
  s.src_ip = 0x0A000001;
  s.dst_ip = 0x0A000002;
  s.opcode = Opcode::kWriteOnly;
  s.dest_qp = 0x12;
  s.psn = Psn(77);
  s.va = 0x1000;
  s.rkey = 0x1234;
  s.dma_len = static_cast<uint32_t>(payload.size());
  s.payload = payload;
  return s;
}

// Builds `s` into `frame` once per iteration; st.range(0) payload bytes each.
void build_loop(benchmark::State& st, std::span<uint8_t> frame, const BuildSpec& s) {
  for (auto _ : st) {
    auto r = build_packet(frame, s, kPmtu);
    benchmark::DoNotOptimize(r);
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(st.iterations());
  st.SetBytesProcessed(st.iterations() * st.range(0));
}

void BM_Build(benchmark::State& st) {
  std::vector<uint8_t> pay(static_cast<size_t>(st.range(0)), 0x5A), frame(9000);
  build_loop(st, frame, write_spec(pay));
}
BENCHMARK(BM_Build)->Arg(64)->Arg(1024)->Arg(4096);

// The same frame gathered from two pieces, as ofi_rxm's direct send posts
// it: its 64-byte header, then the consumer's data.
void BM_BuildGather(benchmark::State& st) {
  std::vector<uint8_t> pay(static_cast<size_t>(st.range(0)), 0x5A), frame(9000);
  BuildSpec s = write_spec(pay);
  const std::span<const uint8_t> pieces[2] = {std::span(pay).first(64), std::span(pay).subspan(64)};
  s.payload = {};
  s.gather = pieces;
  build_loop(st, frame, s);
}
BENCHMARK(BM_BuildGather)->Arg(1024)->Arg(4096);

void BM_Parse(benchmark::State& st) {
  std::vector<uint8_t> pay(static_cast<size_t>(st.range(0)), 0x5A), frame(9000);
  const auto r = build_packet(frame, write_spec(pay), kPmtu);
  frame.resize(r.len);
  for (auto _ : st) {
    PacketView v;
    auto rej = parse_packet(frame, ParseOptions{.pmtu = kPmtu}, v);
    benchmark::DoNotOptimize(rej);
    benchmark::DoNotOptimize(v);
  }
  st.SetItemsProcessed(st.iterations());
  st.SetBytesProcessed(st.iterations() * st.range(0));
}
BENCHMARK(BM_Parse)->Arg(64)->Arg(4096);

// RFC 791 header checksum of one 20-byte IPv4 header (builder and parser
// each run it once per frame), cycling through 64 prepared headers that
// differ in their IP ID.
void BM_Ipv4Checksum(benchmark::State& st) {
  std::vector<uint8_t> pay(64, 0x5A), frame(9000);
  (void)build_packet(frame, write_spec(pay), kPmtu);
  std::vector<Ipv4Hdr> hdrs(64);
  for (size_t i = 0; i < hdrs.size(); ++i) {
    std::memcpy(&hdrs[i], frame.data() + sizeof(EthHdr), sizeof(Ipv4Hdr));
    hdrs[i].id = Be16(static_cast<uint16_t>(i * 977));
  }
  size_t i = 0;
  for (auto _ : st) {
    benchmark::DoNotOptimize(ipv4_checksum(hdrs[i]));
    i = (i + 1) & 63;
  }
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_Ipv4Checksum);

// ICRC of a whole RDMA WRITE Only frame with `payload` bytes (0: a 74-byte
// header-only frame, about an ACK's size; 1 KiB: the 1098-byte frame of a
// 1024 PMTU; 4 KiB: a 4096 PMTU), through the active path.
void BM_Icrc(benchmark::State& st) {
  std::vector<uint8_t> pay(static_cast<size_t>(st.range(0)), 0x5A), frame(9000);
  const auto r = build_packet(frame, write_spec(pay), kPmtu);
  for (auto _ : st) benchmark::DoNotOptimize(icrc_compute(frame.data(), r.len - kIcrcSize));
  st.SetItemsProcessed(st.iterations());
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * static_cast<int64_t>(r.len)));
  st.SetLabel(crc32_impl_name());
}
BENCHMARK(BM_Icrc)->Arg(0)->Arg(1024)->Arg(4096);

// One CRC-32 path forced, over a cache-hot buffer at an odd offset (48 B is
// the masked IPv4+UDP+BTH block of the ICRC; 1 KiB, 4 KiB, 64 KiB payloads).
void BM_Crc32(benchmark::State& st, Crc32Path path) {
  if (!crc32_path_supported(path)) {
    st.SkipWithError("CPU lacks the instructions for this path");
    return;
  }
  const auto len = static_cast<size_t>(st.range(0));
  std::vector<uint8_t> buf(len + 64, 0x33);
  const uint8_t* p = buf.data() + 3;
  uint32_t crc = 0;
  for (auto _ : st) {
    crc = crc32_update_with(path, crc, p, len);
    benchmark::DoNotOptimize(crc);
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * st.range(0));
}
void crc_sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {48, 1024, 4096, 65536}) b->Arg(n);
}
BENCHMARK_CAPTURE(BM_Crc32, portable, Crc32Path::kPortable)->Apply(crc_sizes);
BENCHMARK_CAPTURE(BM_Crc32, pclmul, Crc32Path::kPclmul)->Apply(crc_sizes);
BENCHMARK_CAPTURE(BM_Crc32, vpclmul256, Crc32Path::kVpclmul256)->Apply(crc_sizes);
BENCHMARK_CAPTURE(BM_Crc32, vpclmul512, Crc32Path::kVpclmul512)->Apply(crc_sizes);

// crc32_update() as the datapath calls it (through the dispatch pointer).
void BM_Crc32Active(benchmark::State& st) {
  const auto len = static_cast<size_t>(st.range(0));
  std::vector<uint8_t> buf(len + 64, 0x33);
  uint32_t crc = 0;
  for (auto _ : st) {
    crc = crc32_update(crc, buf.data() + 3, len);
    benchmark::DoNotOptimize(crc);
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * st.range(0));
  st.SetLabel(crc32_impl_name());
}
BENCHMARK(BM_Crc32Active)->Apply(crc_sizes);

// crc32_copy_masked(): a payload copied behind 64 bytes of headers with the
// CRC over both (the builder's ICRC), against its parts done one after the
// other (memcpy, then crc32_update_masked); 1 KiB and 4 KiB payloads.
void BM_Crc32CopyMasked(benchmark::State& st) {
  const auto n = static_cast<size_t>(st.range(0));
  std::vector<uint8_t> src(n + 64, 0x42), frame(n + 128, 0);
  uint8_t mask[64] = {0xFF, 0xFF};
  uint32_t crc = 0;
  for (auto _ : st) {
    crc = crc32_copy_masked(crc, frame.data() + 6, 64, mask, src.data() + 3, n);
    benchmark::DoNotOptimize(crc);
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * st.range(0));
  st.SetLabel(crc32_impl_name());
}
BENCHMARK(BM_Crc32CopyMasked)->Arg(1024)->Arg(4096);

void BM_Crc32CopyThenMasked(benchmark::State& st) {
  const auto n = static_cast<size_t>(st.range(0));
  std::vector<uint8_t> src(n + 64, 0x42), frame(n + 128, 0);
  uint8_t mask[64] = {0xFF, 0xFF};
  uint32_t crc = 0;
  for (auto _ : st) {
    std::memcpy(frame.data() + 6 + 64, src.data() + 3, n);
    crc = crc32_update_masked(crc, frame.data() + 6, 64 + n, mask);
    benchmark::DoNotOptimize(crc);
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * st.range(0));
  st.SetLabel(crc32_impl_name());
}
BENCHMARK(BM_Crc32CopyThenMasked)->Arg(1024)->Arg(4096);

#if defined(DPDAT_BENCH_ISAL)
// ISA-L's CRC-32 entry points: its own CPU dispatch, and the kernels it
// dispatches between (exported by libisal, not declared in crc.h): by8 =
// PCLMULQDQ (SSE), by8_02 = the same with AVX encoding, by16_10 =
// VPCLMULQDQ on 512-bit registers; base = one table lookup per byte.
extern "C" uint32_t crc32_gzip_refl_by8(uint32_t, const unsigned char*, uint64_t);
extern "C" uint32_t crc32_gzip_refl_by8_02(uint32_t, const unsigned char*, uint64_t);
extern "C" uint32_t crc32_gzip_refl_by16_10(uint32_t, const unsigned char*, uint64_t);
using IsalFn = uint32_t (*)(uint32_t, const unsigned char*, uint64_t);
uint32_t isal_base(uint32_t crc, const unsigned char* p, uint64_t n) {
  return crc32_gzip_refl_base(crc, const_cast<unsigned char*>(p), n);
}

void BM_Crc32Isal(benchmark::State& st, IsalFn fn) {
  const auto len = static_cast<size_t>(st.range(0));
  std::vector<uint8_t> buf(len + 64, 0x33);
  const uint8_t* p = buf.data() + 3;
  // The library computes the CRC this code does (zlib semantics).
  if (fn(0x1234, p, len) != crc32_update(0x1234, p, len)) {
    st.SkipWithError("ISA-L CRC differs from crc32_update");
    return;
  }
  uint32_t crc = 0;
  for (auto _ : st) {
    crc = fn(crc, p, len);
    benchmark::DoNotOptimize(crc);
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * st.range(0));
}
BENCHMARK_CAPTURE(BM_Crc32Isal, dispatch, &crc32_gzip_refl)->Apply(crc_sizes);
BENCHMARK_CAPTURE(BM_Crc32Isal, base, &isal_base)->Apply(crc_sizes);
BENCHMARK_CAPTURE(BM_Crc32Isal, by8, &crc32_gzip_refl_by8)->Apply(crc_sizes);
BENCHMARK_CAPTURE(BM_Crc32Isal, by8_02, &crc32_gzip_refl_by8_02)->Apply(crc_sizes);
BENCHMARK_CAPTURE(BM_Crc32Isal, by16_10, &crc32_gzip_refl_by16_10)->Apply(crc_sizes);

// The ICRC as the datapath needs it (64 bytes of headers OR'ed with a mask,
// then the payload) through ISA-L: the masked head in a stack copy, then the
// library over it and over the rest.  Against crc32_update_masked_with().
const uint8_t kBenchMask[64] = {0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0xFF, 0, 0xFF, 0xFF};
uint32_t isal_masked(IsalFn fn, uint32_t crc, const uint8_t* p, size_t len) {
  uint8_t head[64];
  const size_t h = len < 64 ? len : 64;
  for (size_t i = 0; i < h; ++i) head[i] = static_cast<uint8_t>(p[i] | kBenchMask[i]);
  crc = fn(crc, head, h);
  return fn(crc, p + h, len - h);
}
void BM_IcrcMaskedIsal(benchmark::State& st, IsalFn fn) {
  const auto n = static_cast<size_t>(st.range(0));
  std::vector<uint8_t> frame(n + 128, 0x42);
  if (isal_masked(fn, 0, frame.data() + 6, 64 + n) !=
      crc32_update_masked(0, frame.data() + 6, 64 + n, kBenchMask)) {
    st.SkipWithError("ISA-L masked CRC differs");
    return;
  }
  uint32_t crc = 0;
  for (auto _ : st) {
    crc = isal_masked(fn, crc, frame.data() + 6, 64 + n);
    benchmark::DoNotOptimize(crc);
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * (64 + st.range(0)));
}
void BM_IcrcMaskedOurs(benchmark::State& st, Crc32Path path) {
  if (!crc32_path_supported(path)) {
    st.SkipWithError("CPU lacks the instructions for this path");
    return;
  }
  const auto n = static_cast<size_t>(st.range(0));
  std::vector<uint8_t> frame(n + 128, 0x42);
  uint32_t crc = 0;
  for (auto _ : st) {
    crc = crc32_update_masked_with(path, crc, frame.data() + 6, 64 + n, kBenchMask);
    benchmark::DoNotOptimize(crc);
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * (64 + st.range(0)));
}
void icrc_sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {0, 1024, 4096}) b->Arg(n);
}
BENCHMARK_CAPTURE(BM_IcrcMaskedOurs, pclmul, Crc32Path::kPclmul)->Apply(icrc_sizes);
BENCHMARK_CAPTURE(BM_IcrcMaskedIsal, by8, &crc32_gzip_refl_by8)->Apply(icrc_sizes);
BENCHMARK_CAPTURE(BM_IcrcMaskedOurs, vpclmul256, Crc32Path::kVpclmul256)->Apply(icrc_sizes);
BENCHMARK_CAPTURE(BM_IcrcMaskedOurs, vpclmul512, Crc32Path::kVpclmul512)->Apply(icrc_sizes);
BENCHMARK_CAPTURE(BM_IcrcMaskedIsal, by16_10, &crc32_gzip_refl_by16_10)->Apply(icrc_sizes);
BENCHMARK_CAPTURE(BM_IcrcMaskedIsal, dispatch, &crc32_gzip_refl)->Apply(icrc_sizes);

// A payload copied behind its headers, then the ICRC through ISA-L (against
// BM_Crc32CopyMasked, the fused loop, and BM_Crc32CopyThenMasked).
void BM_Crc32CopyThenIsal(benchmark::State& st) {
  const auto n = static_cast<size_t>(st.range(0));
  std::vector<uint8_t> src(n + 64, 0x42), frame(n + 128, 0);
  uint32_t crc = 0;
  for (auto _ : st) {
    std::memcpy(frame.data() + 6 + 64, src.data() + 3, n);
    crc = isal_masked(&crc32_gzip_refl, crc, frame.data() + 6, 64 + n);
    benchmark::DoNotOptimize(crc);
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * st.range(0));
}
BENCHMARK(BM_Crc32CopyThenIsal)->Arg(1024)->Arg(4096);
#endif  // DPDAT_BENCH_ISAL

// 4 KiB copied twice (source -> a, a -> b), all cache-hot.
void BM_Memcpy4KTwiceHot(benchmark::State& st) {
  std::vector<uint8_t> src(4096, 1), a(4096), b(4096);
  for (auto _ : st) {
    std::memcpy(a.data(), src.data(), 4096);
    benchmark::ClobberMemory();
    std::memcpy(b.data(), a.data(), 4096);
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(st.iterations() * 4096);
}
BENCHMARK(BM_Memcpy4KTwiceHot);

// The same, rotating through 64 MiB so the data is not in cache.
void BM_Memcpy4KTwiceCold(benchmark::State& st) {
  constexpr size_t kSet = 64u << 20;
  std::vector<uint8_t> src(kSet, 1), a(kSet), b(kSet);
  size_t off = 0;
  for (auto _ : st) {
    std::memcpy(a.data() + off, src.data() + off, 4096);
    benchmark::ClobberMemory();
    std::memcpy(b.data() + off, a.data() + off, 4096);
    benchmark::ClobberMemory();
    off = (off + 4096) % kSet;
  }
  st.SetBytesProcessed(st.iterations() * 4096);
}
BENCHMARK(BM_Memcpy4KTwiceCold);

}  // namespace
}  // namespace dpdat::wire

BENCHMARK_MAIN();
