// label `rsm`: the RSMAPI of librsm through <rsm/rsmapi.h> only, over the
// in-process net_ring link: controller dpdat0 (node 0x4D01, 192.168.77.1)
// exports, controller dpdat1 (node 0x4D02, 192.168.77.2) imports.  Each test
// runs in its own process (one EAL per process).
#include <arpa/inet.h>
#include <dat/udat.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <rsm/rsmapi.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rsm_fixture.hpp"

namespace {

using namespace rsm_test;

// ------------------------------------------------------------ data movement

TEST_F(Rsm, PutGetEverySizeByteExact) {
  const rsm_memseg_id_t id = publish();
  rsm_memseg_import_handle_t im = nullptr;
  ASSERT_EQ(connect(id, RSM_PERM_RDWR, &im), RSM_SUCCESS);
  const size_t sizes[] = {1,    2,    3,    7,     8,      63,     64,       65,
                          4095, 4096, 4097, 65536, 262144, 262149, kSegBytes};
  const size_t offs[] = {0, 1, 4093, 12345};
  std::vector<uint8_t> src(kSegBytes), dst(kSegBytes + 1);
  unsigned seed = 1;
  for (size_t n : sizes) {
    for (size_t off : offs) {
      if (off + n > kSegBytes) continue;
      ++seed;
      for (size_t i = 0; i < n; ++i) src[i] = pattern(i, seed);
      ASSERT_EQ(rsm_memseg_import_put(im, static_cast<off_t>(off), src.data(), n), RSM_SUCCESS)
          << n << "@" << off;
      ASSERT_EQ(std::memcmp(mem_ + off, src.data(), n), 0)
          << "exporter memory, " << n << "@" << off;
      for (size_t i = 0; i < n; ++i) mem_[off + i] = pattern(i, seed + 1000);
      std::memset(dst.data(), 0xEE, n + 1);
      ASSERT_EQ(rsm_memseg_import_get(im, static_cast<off_t>(off), dst.data(), n), RSM_SUCCESS);
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(dst[i], pattern(i, seed + 1000)) << i;
      ASSERT_EQ(dst[n], 0xEE) << "get wrote past its length";
    }
  }
}

TEST_F(Rsm, EveryWidthWithRepeatCounts) {
  const rsm_memseg_id_t id = publish();
  rsm_memseg_import_handle_t im = nullptr;
  ASSERT_EQ(connect(id, RSM_PERM_RDWR, &im), RSM_SUCCESS);
  for (unsigned long reps : {1ul, 2ul, 17ul, 1000ul, 40000ul}) {
    std::vector<uint8_t> a8(reps), b8(reps);
    std::vector<uint16_t> a16(reps), b16(reps);
    std::vector<uint32_t> a32(reps), b32(reps);
    std::vector<uint64_t> a64(reps), b64(reps);
    for (unsigned long i = 0; i < reps; ++i) {
      a8[i] = static_cast<uint8_t>(i * 3 + reps);
      a16[i] = static_cast<uint16_t>(i * 7919 + reps);
      a32[i] = static_cast<uint32_t>(i * 2654435761u + reps);
      a64[i] = i * 0x9E3779B97F4A7C15ull + reps;
    }
    ASSERT_EQ(rsm_memseg_import_put8(im, 3, a8.data(), reps), RSM_SUCCESS);
    ASSERT_EQ(std::memcmp(mem_ + 3, a8.data(), reps), 0);
    ASSERT_EQ(rsm_memseg_import_get8(im, 3, b8.data(), reps), RSM_SUCCESS);
    EXPECT_EQ(a8, b8);
    ASSERT_EQ(rsm_memseg_import_put16(im, 2, a16.data(), reps), RSM_SUCCESS);
    ASSERT_EQ(std::memcmp(mem_ + 2, a16.data(), reps * 2), 0);
    ASSERT_EQ(rsm_memseg_import_get16(im, 2, b16.data(), reps), RSM_SUCCESS);
    EXPECT_EQ(a16, b16);
    ASSERT_EQ(rsm_memseg_import_put32(im, 4, a32.data(), reps), RSM_SUCCESS);
    ASSERT_EQ(std::memcmp(mem_ + 4, a32.data(), reps * 4), 0);
    ASSERT_EQ(rsm_memseg_import_get32(im, 4, b32.data(), reps), RSM_SUCCESS);
    EXPECT_EQ(a32, b32);
    ASSERT_EQ(rsm_memseg_import_put64(im, 8, a64.data(), reps), RSM_SUCCESS);
    ASSERT_EQ(std::memcmp(mem_ + 8, a64.data(), reps * 8), 0);
    ASSERT_EQ(rsm_memseg_import_get64(im, 8, b64.data(), reps), RSM_SUCCESS);
    EXPECT_EQ(a64, b64);
  }
  // Element alignment of offset and buffer.
  uint32_t v[2] = {1, 2};
  EXPECT_EQ(rsm_memseg_import_put32(im, 2, v, 1), RSMERR_BAD_MEM_ALIGNMENT);
  EXPECT_EQ(rsm_memseg_import_get64(
                im, 8, reinterpret_cast<uint64_t*>(reinterpret_cast<uint8_t*>(v) + 1), 1),
            RSMERR_BAD_MEM_ALIGNMENT);
  EXPECT_EQ(rsm_memseg_import_get16(im, 0, nullptr, 1), RSMERR_BAD_ADDR);
}

TEST_F(Rsm, ScatterGatherVaAndLocalHandles) {
  const rsm_memseg_id_t id = publish();
  rsm_memseg_import_handle_t im = nullptr;
  ASSERT_EQ(connect(id, RSM_PERM_RDWR, &im), RSM_SUCCESS);
  std::vector<char> va(300000), reg(600000), back(900000);
  for (size_t i = 0; i < va.size(); ++i) va[i] = static_cast<char>(pattern(i, 5));
  for (size_t i = 0; i < reg.size(); ++i) reg[i] = static_cast<char>(pattern(i, 9));
  rsm_localmemory_handle_t lh = nullptr, lb = nullptr;
  ASSERT_EQ(rsm_create_localmemory_handle(imp_, &lh, reg.data(), reg.size()), RSM_SUCCESS);
  ASSERT_EQ(rsm_create_localmemory_handle(imp_, &lb, back.data(), back.size()), RSM_SUCCESS);
  rsm_iovec_t iov[3] = {};
  iov[0].io_type = RSM_VA_TYPE;
  iov[0].local.vaddr = va.data();
  iov[0].local_offset = 100;
  iov[0].remote_offset = 5;
  iov[0].transfer_length = 200000;
  iov[1].io_type = RSM_HANDLE_TYPE;
  iov[1].local.handle = lh;
  iov[1].local_offset = 1000;
  iov[1].remote_offset = 300000;
  iov[1].transfer_length = 500000;
  iov[2].io_type = RSM_VA_TYPE;
  iov[2].local.vaddr = va.data();
  iov[2].local_offset = 0;
  iov[2].remote_offset = kSegBytes - 7;
  iov[2].transfer_length = 7;
  rsm_scat_gath_t sg = {};
  sg.local_nodeid = kImpNode;
  sg.io_request_count = 3;
  sg.remote_handle = im;
  sg.iovec = iov;
  ASSERT_EQ(rsm_memseg_import_putv(&sg), RSM_SUCCESS);
  EXPECT_EQ(sg.io_residual_count, 0u);
  EXPECT_EQ(std::memcmp(mem_ + 5, va.data() + 100, 200000), 0);
  EXPECT_EQ(std::memcmp(mem_ + 300000, reg.data() + 1000, 500000), 0);
  EXPECT_EQ(std::memcmp(mem_ + kSegBytes - 7, va.data(), 7), 0);
  // Read the same three ranges back, into a registered and a plain buffer.
  std::vector<char> plain(200000);
  iov[0].local.vaddr = plain.data();
  iov[0].local_offset = 0;
  iov[1].local.handle = lb;
  iov[1].local_offset = 4;
  iov[2].io_type = RSM_HANDLE_TYPE;
  iov[2].local.handle = lb;
  iov[2].local_offset = 600000;
  ASSERT_EQ(rsm_memseg_import_getv(&sg), RSM_SUCCESS);
  EXPECT_EQ(sg.io_residual_count, 0u);
  EXPECT_EQ(std::memcmp(plain.data(), va.data() + 100, 200000), 0);
  EXPECT_EQ(std::memcmp(back.data() + 4, reg.data() + 1000, 500000), 0);
  EXPECT_EQ(std::memcmp(back.data() + 600000, va.data(), 7), 0);
  // Malformed lists are refused before any byte moves.
  sg.io_request_count = RSM_MAX_SGIOREQS + 1;
  EXPECT_EQ(rsm_memseg_import_getv(&sg), RSMERR_BAD_SGIO);
  sg.io_request_count = 0;
  EXPECT_EQ(rsm_memseg_import_getv(&sg), RSMERR_BAD_SGIO);
  sg.io_request_count = 1;
  iov[0].io_type = 7;
  EXPECT_EQ(rsm_memseg_import_getv(&sg), RSMERR_BAD_SGIO);
  iov[0].io_type = RSM_HANDLE_TYPE;
  iov[0].local.handle = reinterpret_cast<rsm_localmemory_handle_t>(&sg);
  EXPECT_EQ(rsm_memseg_import_getv(&sg), RSMERR_BAD_LOCALMEM_HNDL);
  iov[0].local.handle = lh;
  iov[0].local_offset = reg.size() - 10;
  iov[0].transfer_length = 11;
  EXPECT_EQ(rsm_memseg_import_putv(&sg), RSMERR_BAD_LENGTH);
  iov[0].local_offset = 0;
  iov[0].remote_offset = kSegBytes - 10;
  EXPECT_EQ(rsm_memseg_import_putv(&sg), RSMERR_BAD_LENGTH);
  EXPECT_EQ(rsm_free_localmemory_handle(imp_, lh), RSM_SUCCESS);
  EXPECT_EQ(rsm_free_localmemory_handle(imp_, lb), RSM_SUCCESS);
  EXPECT_EQ(rsm_free_localmemory_handle(imp_, lb), RSMERR_BAD_LOCALMEM_HNDL);
}

TEST_F(Rsm, OutOfRangeAccessesFail) {
  const rsm_memseg_id_t id = publish();
  rsm_memseg_import_handle_t im = nullptr;
  ASSERT_EQ(connect(id, RSM_PERM_RDWR, &im), RSM_SUCCESS);
  uint8_t b[16] = {};
  EXPECT_EQ(rsm_memseg_import_get(im, static_cast<off_t>(kSegBytes + 1), b, 1), RSMERR_BAD_OFFSET);
  EXPECT_EQ(rsm_memseg_import_put(im, -1, b, 1), RSMERR_BAD_OFFSET);
  EXPECT_EQ(rsm_memseg_import_put(im, static_cast<off_t>(kSegBytes - 8), b, 9), RSMERR_BAD_LENGTH);
  EXPECT_EQ(rsm_memseg_import_get(im, 0, b, kSegBytes + 1), RSMERR_BAD_LENGTH);
  EXPECT_EQ(rsm_memseg_import_get64(im, static_cast<off_t>(kSegBytes - 8),
                                    reinterpret_cast<uint64_t*>(b), 2),
            RSMERR_BAD_LENGTH);
  EXPECT_EQ(rsm_memseg_import_get(im, static_cast<off_t>(kSegBytes), b, 0), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_get(nullptr, 0, b, 1), RSMERR_BAD_SEG_HNDL);
  EXPECT_EQ(rsm_memseg_import_get(reinterpret_cast<rsm_memseg_import_handle_t>(seg_), 0, b, 1),
            RSMERR_BAD_SEG_HNDL);
  // The segment still works after refused accesses.
  EXPECT_EQ(rsm_memseg_import_put(im, 0, b, 16), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_unmap(im), RSMERR_SEG_NOT_MAPPED);
}

// ----------------------------------------------------------------- barriers

TEST_F(Rsm, BarriersReportWhetherAccessesArrived) {
  const rsm_memseg_id_t id = publish();
  rsm_memseg_import_handle_t im = nullptr;
  ASSERT_EQ(connect(id, RSM_PERM_RDWR, &im), RSM_SUCCESS);
  rsm_barrier_mode_t mode{};
  ASSERT_EQ(rsm_memseg_import_get_mode(im, &mode), RSM_SUCCESS);
  EXPECT_EQ(mode, RSM_BARRIER_MODE_IMPLICIT);
  ASSERT_EQ(rsm_memseg_import_set_mode(im, RSM_BARRIER_MODE_EXPLICIT), RSM_SUCCESS);
  ASSERT_EQ(rsm_memseg_import_get_mode(im, &mode), RSM_SUCCESS);
  EXPECT_EQ(mode, RSM_BARRIER_MODE_EXPLICIT);

  rsmapi_barrier_t bar{}, nbar{}, never{};
  EXPECT_EQ(rsm_memseg_import_open_barrier(&never), RSMERR_BARRIER_UNINITIALIZED);
  EXPECT_EQ(rsm_memseg_import_open_barrier(nullptr), RSMERR_BAD_BARRIER_PTR);
  ASSERT_EQ(rsm_memseg_import_init_barrier(im, RSM_BARRIER_SEGMENT, &bar), RSM_SUCCESS);
  ASSERT_EQ(rsm_memseg_import_init_barrier(im, RSM_BARRIER_NODE, &nbar), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_close_barrier(&bar), RSMERR_BARRIER_NOT_OPENED);
  ASSERT_EQ(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS);
  ASSERT_EQ(rsm_memseg_import_open_barrier(&nbar), RSM_SUCCESS);
  std::vector<uint8_t> d(100000);
  for (size_t i = 0; i < d.size(); ++i) d[i] = pattern(i, 3);
  for (int k = 0; k < 8; ++k)
    ASSERT_EQ(rsm_memseg_import_put(im, k * 100000, d.data(), d.size()), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_order_barrier(&bar), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS);
  for (int k = 0; k < 8; ++k) EXPECT_EQ(std::memcmp(mem_ + k * 100000, d.data(), d.size()), 0);

  // A barrier open across an unpublish: its accesses did not all arrive.
  ASSERT_EQ(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS);
  ASSERT_EQ(rsm_memseg_import_put(im, 0, d.data(), 64), RSM_SUCCESS);
  ASSERT_EQ(rsm_memseg_export_unpublish(seg_), RSM_SUCCESS);
  // Explicit mode: this put may be refused at once, or posted and fail in
  // flight; either way the barrier sees it.
  const int late = rsm_memseg_import_put(im, 0, d.data(), 64);
  EXPECT_TRUE(late == RSMERR_CONN_ABORTED || late == RSM_SUCCESS) << late;
  EXPECT_EQ(rsm_memseg_import_close_barrier(&bar), RSMERR_BARRIER_FAILURE);
  EXPECT_EQ(rsm_memseg_import_put(im, 0, d.data(), 64), RSMERR_CONN_ABORTED);
  EXPECT_EQ(rsm_memseg_import_close_barrier(&nbar), RSMERR_BARRIER_FAILURE);
  EXPECT_EQ(rsm_memseg_import_destroy_barrier(&bar), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_destroy_barrier(&nbar), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_open_barrier(&bar), RSMERR_BARRIER_UNINITIALIZED);
}

// Explicit mode: puts return once posted (many in flight, the staging ring
// wraps); a get, a signal and a barrier close each wait for them first.
TEST_F(Rsm, ExplicitModePutsInFlightCompleteByBarrierClose) {
  const rsm_memseg_id_t id = publish();
  rsm_memseg_import_handle_t im = nullptr;
  ASSERT_EQ(connect(id, RSM_PERM_RDWR, &im), RSM_SUCCESS);
  ASSERT_EQ(rsm_memseg_import_set_mode(im, RSM_BARRIER_MODE_EXPLICIT), RSM_SUCCESS);
  rsmapi_barrier_t bar{};
  ASSERT_EQ(rsm_memseg_import_init_barrier(im, RSM_BARRIER_SEGMENT, &bar), RSM_SUCCESS);
  std::vector<uint8_t> src(kSegBytes);
  for (unsigned round = 0; round < 3; ++round) {
    for (size_t i = 0; i < kSegBytes; ++i) src[i] = pattern(i, 300 + round);
    ASSERT_EQ(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS);
    // 3 KiB .. 24 KiB pieces: ~90 puts per MiB, more than the 64 in flight.
    size_t off = 0, n = 3072;
    while (off < kSegBytes) {
      const size_t len = std::min(n, kSegBytes - off);
      ASSERT_EQ(rsm_memseg_import_put(im, static_cast<off_t>(off), src.data() + off, len),
                RSM_SUCCESS);
      off += len;
      n = n >= 24576 ? 3072 : n * 2;
    }
    ASSERT_EQ(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS);
    ASSERT_EQ(std::memcmp(mem_, src.data(), kSegBytes), 0) << "round " << round;
  }
  // A get after puts in flight reads what they wrote.
  uint32_t w[256];
  for (uint32_t i = 0; i < 256; ++i) w[i] = i * 2654435761u;
  ASSERT_EQ(rsm_memseg_import_put32(im, 4096, w, 256), RSM_SUCCESS);
  uint32_t r[256] = {};
  ASSERT_EQ(rsm_memseg_import_get32(im, 4096, r, 256), RSM_SUCCESS);
  EXPECT_EQ(std::memcmp(r, w, sizeof(w)), 0);
  // A signal posted after puts in flight arrives after their data.
  for (uint32_t i = 0; i < 256; ++i) w[i] = ~w[i];
  ASSERT_EQ(rsm_memseg_import_put32(im, 8192, w, 256), RSM_SUCCESS);
  ASSERT_EQ(rsm_intr_signal_post(im, 0), RSM_SUCCESS);
  ASSERT_EQ(rsm_intr_signal_wait(seg_, 5000), RSM_SUCCESS);
  EXPECT_EQ(std::memcmp(mem_ + 8192, w, sizeof(w)), 0);
  EXPECT_EQ(rsm_memseg_import_destroy_barrier(&bar), RSM_SUCCESS);
}

// ------------------------------------------------------------------ signals

TEST_F(Rsm, SignalsBothWaysWithTimeoutAndPollfd) {
  const rsm_memseg_id_t id = publish();
  rsm_memseg_import_handle_t im = nullptr;
  ASSERT_EQ(connect(id, RSM_PERM_RDWR, &im), RSM_SUCCESS);
  EXPECT_EQ(rsm_intr_signal_wait(seg_, 50), RSMERR_TIMEOUT);
  // importer -> exporter, accumulated: three posts, three waits.
  for (int i = 0; i < 3; ++i) ASSERT_EQ(rsm_intr_signal_post(im, 0), RSM_SUCCESS);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(rsm_intr_signal_wait(seg_, 5000), RSM_SUCCESS) << i;
  EXPECT_EQ(rsm_intr_signal_wait(seg_, 20), RSMERR_TIMEOUT);
  // not accumulated: at most one pending.  A post returns once the exporter's
  // transport has the SEND; its service thread counts it a moment later, so
  // let all three be counted (microseconds; 200 ms of margin) before waiting.
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(rsm_intr_signal_post(im, RSM_SIGPOST_NO_ACCUMULATE), RSM_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(rsm_intr_signal_wait(seg_, 5000), RSM_SUCCESS);
  EXPECT_EQ(rsm_intr_signal_wait(seg_, 100), RSMERR_TIMEOUT);
  // exporter -> importer, while the importer blocks in the wait.
  std::thread poster([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(rsm_intr_signal_post(seg_, 0), RSM_SUCCESS);
  });
  EXPECT_EQ(rsm_intr_signal_wait(im, 10000), RSM_SUCCESS);
  poster.join();
  // pollfd: readable only while a signal is pending.
  pollfd p[2] = {};
  ASSERT_EQ(rsm_memseg_get_pollfd(seg_, &p[0]), RSM_SUCCESS);
  ASSERT_EQ(rsm_memseg_get_pollfd(im, &p[1]), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_export_destroy(seg_), RSMERR_POLLFD_IN_USE);
  EXPECT_EQ(poll(p, 2, 0), 0);
  int n = -1;
  EXPECT_EQ(rsm_intr_signal_wait_pollfd(p, 2, 30, &n), RSMERR_TIMEOUT);
  ASSERT_EQ(rsm_intr_signal_post(im, 0), RSM_SUCCESS);
  EXPECT_EQ(rsm_intr_signal_wait_pollfd(p, 2, 5000, &n), RSM_SUCCESS);
  EXPECT_EQ(n, 1);
  EXPECT_NE(p[0].revents, 0);
  EXPECT_EQ(p[1].revents, 0);
  EXPECT_EQ(poll(p, 2, 0), 0) << "the signal was consumed";
  // putv with an implicit signal post.
  uint64_t v = 0x1122334455667788ull;
  rsm_iovec_t iov{};
  iov.io_type = RSM_VA_TYPE;
  iov.local.vaddr = reinterpret_cast<char*>(&v);
  iov.remote_offset = 64;
  iov.transfer_length = 8;
  rsm_scat_gath_t sg{};
  sg.io_request_count = 1;
  sg.remote_handle = im;
  sg.iovec = &iov;
  sg.flags = RSM_IMPLICIT_SIGPOST;
  ASSERT_EQ(rsm_memseg_import_putv(&sg), RSM_SUCCESS);
  EXPECT_EQ(poll(p, 1, 5000), 1);
  EXPECT_EQ(rsm_intr_signal_wait(seg_, 0), RSM_SUCCESS);
  EXPECT_EQ(std::memcmp(mem_ + 64, &v, 8), 0);
  EXPECT_EQ(rsm_memseg_release_pollfd(seg_), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_release_pollfd(im), RSM_SUCCESS);
  EXPECT_EQ(rsm_intr_signal_post(nullptr, 0), RSMERR_BAD_SEG_HNDL);
}

// --------------------------------------------------------------- ACL matrix

TEST_F(Rsm, NoAclAdmitsEveryNodeWithCreationMode) {
  const rsm_memseg_id_t id = publish();  // umask 022: owner digit 6
  rsm_memseg_import_handle_t r = nullptr, w = nullptr, rw = nullptr;
  EXPECT_EQ(connect(id, RSM_PERM_READ, &r), RSM_SUCCESS);
  EXPECT_EQ(connect(id, RSM_PERM_WRITE, &w), RSM_SUCCESS);
  EXPECT_EQ(connect(id, RSM_PERM_RDWR, &rw), RSM_SUCCESS);
  uint8_t b = 5;
  EXPECT_EQ(rsm_memseg_import_put(r, 0, &b, 1), RSMERR_PERM_DENIED);
  EXPECT_EQ(rsm_memseg_import_get(w, 0, &b, 1), RSMERR_PERM_DENIED);
  EXPECT_EQ(rsm_memseg_import_put(w, 0, &b, 1), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_get(r, 0, &b, 1), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_get(rw, 0, &b, 1), RSM_SUCCESS);
  EXPECT_EQ(b, 5);
  rsm_memseg_import_handle_t bad = nullptr;
  EXPECT_EQ(connect(id, 01000, &bad), RSMERR_PERM_DENIED);
}

// Without an ACL every node gets the exporter's creation mode: with umask 0277
// (mode 0400) an import may read but not write.
TEST_F(Rsm, UmaskWithoutWriteMakesAclLessSegmentReadOnly) {
  ASSERT_EQ(rsm_memseg_export_destroy(seg_), RSM_SUCCESS);
  seg_ = nullptr;
  ASSERT_EQ(rsm_release_controller(exp_), RSM_SUCCESS);  // last reference: closed
  umask(0277);
  ASSERT_EQ(rsm_get_controller(const_cast<char*>("dpdat0"), &exp_), RSM_SUCCESS);
  ASSERT_EQ(rsm_memseg_export_create(exp_, &seg_, mem_, kSegBytes, 0), RSM_SUCCESS);
  const rsm_memseg_id_t id = publish();
  rsm_memseg_import_handle_t im = nullptr;
  EXPECT_EQ(connect(id, RSM_PERM_RDWR, &im), RSMERR_PERM_DENIED);
  EXPECT_EQ(connect(id, RSM_PERM_WRITE, &im), RSMERR_PERM_DENIED);
  ASSERT_EQ(connect(id, RSM_PERM_READ, &im), RSM_SUCCESS);
  mem_[9] = 0x99;
  uint8_t b = 0;
  EXPECT_EQ(rsm_memseg_import_get8(im, 9, &b, 1), RSM_SUCCESS);
  EXPECT_EQ(b, 0x99);
}

struct AclCase {
  rsm_permission_t acl_perm;
  bool read_ok, write_ok;
};

TEST_F(Rsm, AclListingImporterWith2And4And6) {
  const AclCase cases[] = {{0222, false, true}, {0444, true, false}, {0666, true, true},
                           {0246, false, true}, {0426, true, false}, {0624, true, true}};
  rsm_memseg_id_t id = 0x100000;
  for (const AclCase& c : cases) {
    SCOPED_TRACE(c.acl_perm);
    rsmapi_access_entry_t acl[2] = {{kImpNode, c.acl_perm}, {0x1234, 0666}};
    rsm_memseg_id_t sid = ++id;
    ASSERT_EQ(rsm_memseg_export_publish(seg_, &sid, acl, 2), RSM_SUCCESS);
    rsm_memseg_import_handle_t r = nullptr, w = nullptr, rw = nullptr;
    EXPECT_EQ(connect(sid, RSM_PERM_READ, &r), c.read_ok ? RSM_SUCCESS : RSMERR_PERM_DENIED);
    EXPECT_EQ(connect(sid, RSM_PERM_WRITE, &w), c.write_ok ? RSM_SUCCESS : RSMERR_PERM_DENIED);
    EXPECT_EQ(connect(sid, RSM_PERM_RDWR, &rw),
              c.read_ok && c.write_ok ? RSM_SUCCESS : RSMERR_PERM_DENIED);
    uint32_t v = 0xA5A5A5A5u ^ c.acl_perm;
    if (c.write_ok) {
      ASSERT_EQ(rsm_memseg_import_put32(w, 16, &v, 1), RSM_SUCCESS);
      EXPECT_EQ(std::memcmp(mem_ + 16, &v, 4), 0);
      EXPECT_EQ(rsm_memseg_import_get32(w, 16, &v, 1), RSMERR_PERM_DENIED);
    }
    if (c.read_ok) {
      std::memcpy(mem_ + 32, &v, 4);
      uint32_t got = 0;
      ASSERT_EQ(rsm_memseg_import_get32(r, 32, &got, 1), RSM_SUCCESS);
      EXPECT_EQ(got, v);
      EXPECT_EQ(rsm_memseg_import_put32(r, 32, &v, 1), RSMERR_PERM_DENIED);
    }
    for (auto* im : std::vector<rsm_memseg_import_handle_t>(imports_)) disconnect(im);
    ASSERT_EQ(rsm_memseg_export_unpublish(seg_), RSM_SUCCESS);
  }
}

// The importing thread takes another effective uid/gid for one connect
// (raw setresuid/setresgid change only the calling thread), so the exporter
// (root, in this process) judges it as group or other.
class AsIdentity {
 public:
  AsIdentity(uid_t uid, gid_t gid) {
    ok_ = syscall(SYS_setresgid, -1, gid, -1) == 0 && syscall(SYS_setresuid, -1, uid, -1) == 0;
  }
  ~AsIdentity() {
    EXPECT_EQ(syscall(SYS_setresuid, -1, 0, -1), 0);
    EXPECT_EQ(syscall(SYS_setresgid, -1, 0, -1), 0);
  }
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
};

enum class Who { kOwner, kGroup, kOther };

// Every digit 0, 2, 4, 6 in each of owner / group / other, the two other
// digits holding the complement (6 ^ d) so a wrong digit choice shows.
TEST_F(Rsm, AclEveryEvenDigitForOwnerGroupAndOther) {
  ASSERT_EQ(geteuid(), 0u) << "needs root to take a per-thread uid/gid";
  rsm_memseg_id_t id = 0x100100;
  for (Who who : {Who::kOwner, Who::kGroup, Who::kOther}) {
    const unsigned shift = who == Who::kOwner ? 6 : who == Who::kGroup ? 3 : 0;
    for (unsigned d : {0u, 2u, 4u, 6u}) {
      const unsigned mode = (0666u & ~(7u << shift) & (((6u ^ d) * 0111u))) | (d << shift);
      SCOPED_TRACE(::testing::Message()
                   << "digit " << d << " shift " << shift << " mode 0" << std::oct << mode);
      rsmapi_access_entry_t acl[1] = {{kImpNode, mode}};
      rsm_memseg_id_t sid = ++id;
      ASSERT_EQ(rsm_memseg_export_publish(seg_, &sid, acl, 1), RSM_SUCCESS);
      int got[4] = {};
      const rsm_permission_t asks[4] = {RSM_PERM_NONE, RSM_PERM_READ, RSM_PERM_WRITE,
                                        RSM_PERM_RDWR};
      {
        const uid_t uid = who == Who::kOwner ? 0 : 4242;
        const gid_t gid = who == Who::kOther ? 4242 : 0;
        AsIdentity as(uid, gid);
        ASSERT_TRUE(as.ok());
        for (int i = 0; i < 4; ++i) {
          rsm_memseg_import_handle_t im = nullptr;
          got[i] = connect(sid, asks[i], &im);
        }
      }
      EXPECT_EQ(got[0], d != 0 ? RSM_SUCCESS : RSMERR_PERM_DENIED);
      EXPECT_EQ(got[1], (d & 4u) != 0 ? RSM_SUCCESS : RSMERR_PERM_DENIED);
      EXPECT_EQ(got[2], (d & 2u) != 0 ? RSM_SUCCESS : RSMERR_PERM_DENIED);
      EXPECT_EQ(got[3], d == 6 ? RSM_SUCCESS : RSMERR_PERM_DENIED);
      for (auto* im : std::vector<rsm_memseg_import_handle_t>(imports_)) disconnect(im);
      ASSERT_EQ(rsm_memseg_export_unpublish(seg_), RSM_SUCCESS);
    }
  }
}

// The header's own constants as ACL permissions (owner digit only): the
// importer (same uid) gets what the constant names and nothing more; as
// another user it gets nothing.
TEST_F(Rsm, AclWithEachRsmPermConstant) {
  struct Case {
    rsm_permission_t perm;
    bool read_ok, write_ok;
  };
  const Case cases[] = {{RSM_PERM_NONE, false, false},
                        {RSM_PERM_READ, true, false},
                        {RSM_PERM_WRITE, false, true},
                        {RSM_PERM_RDWR, true, true}};
  rsm_memseg_id_t id = 0x100200;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "ACL 0" << std::oct << c.perm);
    rsmapi_access_entry_t acl[1] = {{kImpNode, c.perm}};
    rsm_memseg_id_t sid = ++id;
    ASSERT_EQ(rsm_memseg_export_publish(seg_, &sid, acl, 1), RSM_SUCCESS);
    rsm_memseg_import_handle_t r = nullptr, w = nullptr, rw = nullptr;
    EXPECT_EQ(connect(sid, RSM_PERM_READ, &r), c.read_ok ? RSM_SUCCESS : RSMERR_PERM_DENIED);
    EXPECT_EQ(connect(sid, RSM_PERM_WRITE, &w), c.write_ok ? RSM_SUCCESS : RSMERR_PERM_DENIED);
    EXPECT_EQ(connect(sid, RSM_PERM_RDWR, &rw),
              c.read_ok && c.write_ok ? RSM_SUCCESS : RSMERR_PERM_DENIED);
    if (c.write_ok) {
      uint64_t v = 0x0123456789ABCDEFull ^ c.perm;
      ASSERT_EQ(rsm_memseg_import_put64(w, 64, &v, 1), RSM_SUCCESS);
      EXPECT_EQ(std::memcmp(mem_ + 64, &v, 8), 0);
    }
    if (c.read_ok) {
      mem_[128] = static_cast<uint8_t>(c.perm);
      uint8_t b = 0;
      ASSERT_EQ(rsm_memseg_import_get8(r, 128, &b, 1), RSM_SUCCESS);
      EXPECT_EQ(b, static_cast<uint8_t>(c.perm));
    }
    {
      AsIdentity as(4242, 4242);
      ASSERT_TRUE(as.ok());
      rsm_memseg_import_handle_t other = nullptr;
      EXPECT_EQ(connect(sid, RSM_PERM_READ, &other), RSMERR_PERM_DENIED);
    }
    for (auto* im : std::vector<rsm_memseg_import_handle_t>(imports_)) disconnect(im);
    ASSERT_EQ(rsm_memseg_export_unpublish(seg_), RSM_SUCCESS);
  }
}

TEST_F(Rsm, AclNotListingImporterRefusesIt) {
  rsmapi_access_entry_t acl[2] = {{kExpNode, 0666}, {0x77, 0666}};
  rsm_memseg_id_t id = 0x200010;
  ASSERT_EQ(rsm_memseg_export_publish(seg_, &id, acl, 2), RSM_SUCCESS);
  rsm_memseg_import_handle_t im = nullptr;
  EXPECT_EQ(connect(id, RSM_PERM_READ, &im), RSMERR_SEG_NOT_PUBLISHED_TO_NODE);
  EXPECT_EQ(connect(id + 1, RSM_PERM_READ, &im), RSMERR_SEG_NOT_PUBLISHED);
}

TEST_F(Rsm, RepublishRemovingNodeKeepsGrantedImport) {
  rsmapi_access_entry_t acl[1] = {{kImpNode, 0666}};
  rsm_memseg_id_t id = 0x300001;
  ASSERT_EQ(rsm_memseg_export_publish(seg_, &id, acl, 1), RSM_SUCCESS);
  rsm_memseg_import_handle_t im = nullptr;
  ASSERT_EQ(connect(id, RSM_PERM_RDWR, &im), RSM_SUCCESS);
  rsmapi_access_entry_t other[1] = {{0x99, 0666}};
  ASSERT_EQ(rsm_memseg_export_republish(seg_, other, 1), RSM_SUCCESS);
  uint64_t v = 0x0102030405060708ull, got = 0;
  EXPECT_EQ(rsm_memseg_import_put64(im, 800, &v, 1), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_get64(im, 800, &got, 1), RSM_SUCCESS);
  EXPECT_EQ(got, v);
  rsm_memseg_import_handle_t im2 = nullptr;
  EXPECT_EQ(connect(id, RSM_PERM_READ, &im2), RSMERR_SEG_NOT_PUBLISHED_TO_NODE);
  // Republish with a read-only entry: later connects get at most read.
  rsmapi_access_entry_t ro[1] = {{kImpNode, 0444}};
  ASSERT_EQ(rsm_memseg_export_republish(seg_, ro, 1), RSM_SUCCESS);
  EXPECT_EQ(connect(id, RSM_PERM_RDWR, &im2), RSMERR_PERM_DENIED);
  EXPECT_EQ(connect(id, RSM_PERM_READ, &im2), RSM_SUCCESS);
  // An empty list admits every node again.
  ASSERT_EQ(rsm_memseg_export_republish(seg_, nullptr, 0), RSM_SUCCESS);
  rsm_memseg_import_handle_t im3 = nullptr;
  EXPECT_EQ(connect(id, RSM_PERM_RDWR, &im3), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_put64(im, 800, &v, 1), RSM_SUCCESS);
}

TEST_F(Rsm, UnpublishWhileImportedAbortsImporter) {
  const rsm_memseg_id_t id = publish();
  rsm_memseg_import_handle_t im = nullptr;
  ASSERT_EQ(connect(id, RSM_PERM_RDWR, &im), RSM_SUCCESS);
  uint8_t b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_EQ(rsm_memseg_import_put(im, 0, b, 8), RSM_SUCCESS);
  ASSERT_EQ(rsm_memseg_export_unpublish(seg_), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_get(im, 0, b, 8), RSMERR_CONN_ABORTED);
  EXPECT_EQ(rsm_memseg_import_put(im, 0, b, 8), RSMERR_CONN_ABORTED);
  EXPECT_EQ(rsm_intr_signal_post(im, 0), RSMERR_CONN_ABORTED);
  rsm_memseg_import_handle_t im2 = nullptr;
  EXPECT_EQ(connect(id, RSM_PERM_RDWR, &im2), RSMERR_SEG_NOT_PUBLISHED);
  // Publish again under the same ID: a new import works, the old stays dead.
  rsm_memseg_id_t again = id;
  ASSERT_EQ(rsm_memseg_export_publish(seg_, &again, nullptr, 0), RSM_SUCCESS);
  ASSERT_EQ(connect(id, RSM_PERM_RDWR, &im2), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_get(im2, 0, b, 8), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_get(im, 0, b, 8), RSMERR_CONN_ABORTED);
}

// ------------------------------------------- publish / republish / unpublish

TEST_F(Rsm, PublishSegmentIdRules) {
  rsm_memseg_id_t id = 0;
  ASSERT_EQ(rsm_memseg_export_publish(seg_, &id, nullptr, 0), RSM_SUCCESS);
  EXPECT_GE(id, RSM_USER_APP_ID_BASE) << "generated in the user-application range";
  EXPECT_EQ(rsm_memseg_export_publish(seg_, &id, nullptr, 0), RSMERR_SEG_ALREADY_PUBLISHED);
  ASSERT_EQ(rsm_memseg_export_unpublish(seg_), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_export_unpublish(seg_), RSMERR_SEG_NOT_PUBLISHED);
  EXPECT_EQ(rsm_memseg_export_republish(seg_, nullptr, 0), RSMERR_SEG_NOT_PUBLISHED);
  for (rsm_memseg_id_t bad : {1u, 0x0FFFFFu, 0x80000000u, 0x80000001u, 0xFFFFFFFFu}) {
    rsm_memseg_id_t v = bad;
    EXPECT_EQ(rsm_memseg_export_publish(seg_, &v, nullptr, 0), RSMERR_RESERVED_SEGID)
        << std::hex << bad;
  }
  for (rsm_memseg_id_t bad : {0x500000u, 0x5FFFFFu, 0x7FFFFFFFu}) {
    rsm_memseg_id_t v = bad;
    EXPECT_EQ(rsm_memseg_export_publish(seg_, &v, nullptr, 0), RSMERR_BAD_SEGID) << std::hex << bad;
  }
  for (rsm_memseg_id_t ok : {0x100000u, 0x1FFFFFu, 0x2ABCDEu, 0x3FFFFFu, 0x4FFFFFu}) {
    rsm_memseg_id_t v = ok;
    EXPECT_EQ(rsm_memseg_export_publish(seg_, &v, nullptr, 0), RSM_SUCCESS) << std::hex << ok;
    EXPECT_EQ(v, ok);
    EXPECT_EQ(rsm_memseg_export_unpublish(seg_), RSM_SUCCESS);
  }
  // An ID another segment holds.
  rsm_memseg_export_handle_t s2 = nullptr;
  ASSERT_EQ(rsm_memseg_export_create(exp_, &s2, mem_, page_, 0), RSM_SUCCESS);
  rsm_memseg_id_t v = 0x400123;
  ASSERT_EQ(rsm_memseg_export_publish(s2, &v, nullptr, 0), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_export_publish(seg_, &v, nullptr, 0), RSMERR_SEGID_IN_USE);
  EXPECT_EQ(rsm_memseg_export_destroy(s2), RSM_SUCCESS);  // unpublishes
  EXPECT_EQ(rsm_memseg_export_publish(seg_, &v, nullptr, 0), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_export_publish(seg_, nullptr, nullptr, 0), RSMERR_BAD_ADDR);
}

TEST_F(Rsm, BadHandlesAndBadAcls) {
  rsm_memseg_id_t id = 0x400002;
  EXPECT_EQ(rsm_memseg_export_publish(nullptr, &id, nullptr, 0), RSMERR_BAD_SEG_HNDL);
  EXPECT_EQ(rsm_memseg_export_republish(nullptr, nullptr, 0), RSMERR_BAD_SEG_HNDL);
  EXPECT_EQ(rsm_memseg_export_unpublish(nullptr), RSMERR_BAD_SEG_HNDL);
  auto* not_seg = reinterpret_cast<rsm_memseg_export_handle_t>(&id);
  EXPECT_EQ(rsm_memseg_export_publish(not_seg, &id, nullptr, 0), RSMERR_BAD_SEG_HNDL);
  rsm_memseg_export_handle_t gone = nullptr;
  ASSERT_EQ(rsm_memseg_export_create(exp_, &gone, mem_, page_, 0), RSM_SUCCESS);
  ASSERT_EQ(rsm_memseg_export_destroy(gone), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_export_publish(gone, &id, nullptr, 0), RSMERR_BAD_SEG_HNDL);
  EXPECT_EQ(rsm_memseg_export_unpublish(gone), RSMERR_BAD_SEG_HNDL);

  EXPECT_EQ(rsm_memseg_export_publish(seg_, &id, nullptr, 3), RSMERR_BAD_ACL);
  for (rsm_permission_t bad : {0111u, 0777u, 0601u, 0610u, 0106u, 0003u, 0050u, 0700u,
                               0644u | 01000u, 0646u | 04000u, 0600u | 0200000u}) {
    rsmapi_access_entry_t acl[1] = {{kImpNode, bad}};
    EXPECT_EQ(rsm_memseg_export_publish(seg_, &id, acl, 1), RSMERR_BAD_ACL) << std::oct << bad;
  }
  rsmapi_access_entry_t dup[2] = {{kImpNode, 0666}, {kImpNode, 0444}};
  EXPECT_EQ(rsm_memseg_export_publish(seg_, &id, dup, 2), RSMERR_BAD_ACL);
  rsmapi_access_entry_t good[1] = {{kImpNode, 0642}};
  ASSERT_EQ(rsm_memseg_export_publish(seg_, &id, good, 1), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_export_republish(seg_, dup, 2), RSMERR_BAD_ACL);
  EXPECT_EQ(rsm_memseg_export_republish(seg_, nullptr, 1), RSMERR_BAD_ACL);
  rsmapi_access_entry_t odd[1] = {{kImpNode, 0601}};
  EXPECT_EQ(rsm_memseg_export_republish(seg_, odd, 1), RSMERR_BAD_ACL);
  // The refused republishes left the ACL as published.
  rsm_memseg_import_handle_t im = nullptr;
  EXPECT_EQ(connect(id, RSM_PERM_RDWR, &im), RSM_SUCCESS);
}

// The three calls from a process that did not create the segment.
TEST_F(Rsm, NotCreatorInForkedChild) {
  rsm_memseg_id_t id = 0x400003;
  ASSERT_EQ(rsm_memseg_export_publish(seg_, &id, nullptr, 0), RSM_SUCCESS);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rsm_memseg_id_t other = 0x400004;
    int code = 0;
    if (rsm_memseg_export_publish(seg_, &other, nullptr, 0) != RSMERR_NOT_CREATOR) code |= 1;
    if (rsm_memseg_export_republish(seg_, nullptr, 0) != RSMERR_NOT_CREATOR) code |= 2;
    if (rsm_memseg_export_unpublish(seg_) != RSMERR_NOT_CREATOR) code |= 4;
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // Still published here.
  rsm_memseg_import_handle_t im = nullptr;
  EXPECT_EQ(connect(id, RSM_PERM_READ, &im), RSM_SUCCESS);
}

TEST_F(Rsm, InsufficientResourcesAtPublishedSegmentLimit) {
  // This test's own process: a controller capped at 3 published segments.
  ASSERT_EQ(rsm_memseg_export_destroy(seg_), RSM_SUCCESS);
  seg_ = nullptr;
  ASSERT_EQ(rsm_release_controller(exp_), RSM_SUCCESS);
  setenv("DPDAT_RSM_MAX_EXPORT", "3", 1);
  ASSERT_EQ(rsm_get_controller(const_cast<char*>("dpdat0"), &exp_), RSM_SUCCESS);
  rsmapi_controller_attr_t attr{};
  ASSERT_EQ(rsm_get_controller_attr(exp_, &attr), RSM_SUCCESS);
  EXPECT_EQ(attr.attr_max_export_segments, 3u);
  EXPECT_EQ(attr.attr_page_size, page_);
  std::vector<rsm_memseg_export_handle_t> segs(4);
  for (auto& s : segs) ASSERT_EQ(rsm_memseg_export_create(exp_, &s, mem_, page_, 0), RSM_SUCCESS);
  for (size_t i = 0; i < 3; ++i) {
    rsm_memseg_id_t id = 0;
    ASSERT_EQ(rsm_memseg_export_publish(segs[i], &id, nullptr, 0), RSM_SUCCESS);
  }
  rsm_memseg_id_t id = 0x400010;
  EXPECT_EQ(rsm_memseg_export_publish(segs[3], &id, nullptr, 0), RSMERR_INSUFFICIENT_RESOURCES);
  ASSERT_EQ(rsm_memseg_export_unpublish(segs[0]), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_export_publish(segs[3], &id, nullptr, 0), RSM_SUCCESS);
  // An ACL longer than a segment may carry.
  std::vector<rsmapi_access_entry_t> huge((1u << 20) + 1);
  for (size_t i = 0; i < huge.size(); ++i) huge[i] = {static_cast<rsm_node_id_t>(i), 0666};
  EXPECT_EQ(rsm_memseg_export_republish(segs[3], huge.data(), static_cast<unsigned>(huge.size())),
            RSMERR_INSUFFICIENT_RESOURCES);
  rsm_memseg_id_t id2 = 0x400011;
  EXPECT_EQ(
      rsm_memseg_export_publish(segs[0], &id2, huge.data(), static_cast<unsigned>(huge.size())),
      RSMERR_INSUFFICIENT_RESOURCES);
  for (auto& s : segs) EXPECT_EQ(rsm_memseg_export_destroy(s), RSM_SUCCESS);
}

size_t vm_size_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;
  return 0;
}

// Publish and republish copy the ACL; with the address space capped just above
// what the process uses, a 1 Mi-entry (8 MiB) copy cannot be allocated.
TEST_F(Rsm, InsufficientMemoryForAclCopy) {
  std::vector<rsmapi_access_entry_t> big(1u << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = {static_cast<rsm_node_id_t>(i), 0666};
  rsm_memseg_id_t id = 0x400020;
  ASSERT_EQ(rsm_memseg_export_publish(seg_, &id, nullptr, 0), RSM_SUCCESS);
  rsm_memseg_export_handle_t s2 = nullptr;
  ASSERT_EQ(rsm_memseg_export_create(exp_, &s2, mem_, page_, 0), RSM_SUCCESS);
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &old), 0);
  const size_t vm = vm_size_bytes();
  ASSERT_GT(vm, 0u);
  rlimit cap = old;
  cap.rlim_cur = vm + (2u << 20);
  ASSERT_EQ(setrlimit(RLIMIT_AS, &cap), 0);
  rsm_memseg_id_t id2 = 0x400021;
  const int pub =
      rsm_memseg_export_publish(s2, &id2, big.data(), static_cast<unsigned>(big.size()));
  const int rep = rsm_memseg_export_republish(seg_, big.data(), static_cast<unsigned>(big.size()));
  ASSERT_EQ(setrlimit(RLIMIT_AS, &old), 0);
  EXPECT_EQ(pub, RSMERR_INSUFFICIENT_MEM);
  EXPECT_EQ(rep, RSMERR_INSUFFICIENT_MEM);
  // With memory back, the same list is accepted.
  EXPECT_EQ(rsm_memseg_export_republish(seg_, big.data(), static_cast<unsigned>(big.size())),
            RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_export_destroy(s2), RSM_SUCCESS);
}

// ------------------------------------------------------- controller, export

TEST_F(Rsm, ControllerAttrTopologyAndExportCreateChecks) {
  rsmapi_controller_attr_t a{};
  ASSERT_EQ(rsm_get_controller_attr(exp_, &a), RSM_SUCCESS);
  EXPECT_EQ(a.attr_page_size, page_);
  EXPECT_GE(a.attr_max_export_segment_size, kSegBytes);
  EXPECT_EQ(a.attr_max_export_segments, 1024u);
  EXPECT_EQ(a.attr_direct_access_sizes, unsigned{RSM_DAS8 | RSM_DAS16 | RSM_DAS32 | RSM_DAS64});
  EXPECT_GT(a.attr_max_import_segments, 0u);
  EXPECT_EQ(rsm_get_controller_attr(nullptr, &a), RSMERR_BAD_CTLR_HNDL);
  rsmapi_controller_handle_t none = nullptr;
  EXPECT_EQ(rsm_get_controller(const_cast<char*>("no-such-ia"), &none), RSMERR_CTLR_NOT_PRESENT);
  rsmapi_controller_handle_t again = nullptr;
  ASSERT_EQ(rsm_get_controller(const_cast<char*>("dpdat0"), &again), RSM_SUCCESS);
  EXPECT_EQ(again, exp_);
  EXPECT_EQ(rsm_release_controller(again), RSM_SUCCESS);

  rsm_topology_t* t = nullptr;
  EXPECT_EQ(rsm_get_interconnect_topology(nullptr), RSMERR_BAD_TOPOLOGY_PTR);
  ASSERT_EQ(rsm_get_interconnect_topology(&t), RSM_SUCCESS);
  ASSERT_EQ(t->topology_hdr.local_cntlr_count, 2u);
  bool saw_pair = false;
  for (unsigned i = 0; i < 2; ++i) {
    const rsm_connections_t* c = t->connections[i];
    const bool is0 = std::string(c->hdr.cntlr_name) == "dpdat0";
    for (int j = 0; j < c->hdr.remote_cntlr_count; ++j) {
      const rsm_remote_cntlr_t& r = c->remote_cntlr[j];
      if (is0 && std::string(r.remote_cntlrname) == "dpdat1") {
        EXPECT_EQ(r.remote_nodeid, kImpNode);
        EXPECT_EQ(r.remote_hwaddr, 0xC0A84D02u);
        EXPECT_EQ(r.connection_state, unsigned{RSM_CONNECTION_ACTIVE});
        saw_pair = true;
      }
    }
  }
  EXPECT_TRUE(saw_pair);
  rsm_free_interconnect_topology(t);

  rsm_memseg_export_handle_t s = nullptr;
  EXPECT_EQ(rsm_memseg_export_create(exp_, &s, mem_ + 1, page_, 0), RSMERR_BAD_MEM_ALIGNMENT);
  EXPECT_EQ(rsm_memseg_export_create(exp_, &s, mem_, page_ + 1, 0), RSMERR_BAD_LENGTH);
  EXPECT_EQ(rsm_memseg_export_create(exp_, &s, mem_, 0, 0), RSMERR_BAD_LENGTH);
  EXPECT_EQ(rsm_memseg_export_create(exp_, &s, nullptr, page_, 0), RSMERR_BAD_ADDR);
  EXPECT_EQ(rsm_memseg_export_create(exp_, &s, mem_, page_, 0x80), RSMERR_BAD_MODE);
  EXPECT_EQ(rsm_memseg_export_create(nullptr, &s, mem_, page_, 0), RSMERR_BAD_CTLR_HNDL);
  ASSERT_EQ(
      rsm_memseg_export_create(exp_, &s, mem_, page_, RSM_ALLOW_REBIND | RSM_CREATE_SEG_DONTWAIT),
      RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_export_destroy(s), RSM_SUCCESS);
}

TEST_F(Rsm, RebindMovesPublishedSegment) {
  const rsm_memseg_id_t id = publish();
  uint8_t* other = static_cast<uint8_t*>(aligned_alloc(page_, kSegBytes));
  ASSERT_NE(other, nullptr);
  for (size_t i = 0; i < kSegBytes; ++i) other[i] = pattern(i, 77);
  ASSERT_EQ(rsm_memseg_export_rebind(seg_, other, 0, kSegBytes), RSM_SUCCESS);
  rsm_memseg_import_handle_t im = nullptr;
  ASSERT_EQ(connect(id, RSM_PERM_RDWR, &im), RSM_SUCCESS);
  std::vector<uint8_t> got(4096);
  ASSERT_EQ(rsm_memseg_import_get(im, 8192, got.data(), got.size()), RSM_SUCCESS);
  EXPECT_EQ(std::memcmp(got.data(), other + 8192, got.size()), 0);
  EXPECT_EQ(rsm_memseg_export_rebind(seg_, mem_, 0, kSegBytes), RSMERR_REBIND_NOT_ALLOWED)
      << "importers hold keys of the current registration";
  EXPECT_EQ(rsm_memseg_export_rebind(seg_, other, 0, kSegBytes / 2), RSMERR_BAD_LENGTH);
  EXPECT_EQ(rsm_memseg_export_rebind(seg_, other, 4096, kSegBytes), RSMERR_BAD_OFFSET);
  disconnect(im);
  rsm_memseg_export_handle_t fixed = nullptr;
  ASSERT_EQ(rsm_memseg_export_create(exp_, &fixed, mem_, page_, 0), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_export_rebind(fixed, other, 0, page_), RSMERR_REBIND_NOT_ALLOWED);
  EXPECT_EQ(rsm_memseg_export_destroy(fixed), RSM_SUCCESS);
  ASSERT_EQ(rsm_memseg_export_destroy(seg_), RSM_SUCCESS);
  seg_ = nullptr;
  free(other);
}

TEST_F(Rsm, ConnectToUnknownNodeOrUnpublishedId) {
  rsm_memseg_import_handle_t im = nullptr;
  EXPECT_EQ(rsm_memseg_import_connect(imp_, kExpNode, 0x400055, RSM_PERM_READ, &im),
            RSMERR_SEG_NOT_PUBLISHED);
  EXPECT_EQ(rsm_memseg_import_connect(imp_, 0x12345678u, 0x400055, RSM_PERM_READ, &im),
            RSMERR_REMOTE_NODE_UNREACHABLE);
  EXPECT_EQ(rsm_memseg_import_connect(nullptr, kExpNode, 1, RSM_PERM_READ, &im),
            RSMERR_BAD_CTLR_HNDL);
  EXPECT_EQ(rsm_memseg_import_connect(imp_, kExpNode, 1, RSM_PERM_READ, nullptr), RSMERR_BAD_ADDR);
}

// The exporter's transport, not the importing library, enforces a grant: a
// client speaking the RSM connect protocol over plain uDAPL, granted read
// only, can RDMA READ the segment but its RDMA WRITE with the same key fails
// and leaves the memory alone.  (The request layout is librsm's wire format:
// magic "RSM1", segment ID, permission, uid, gid, and optional flags.)
TEST_F(Rsm, ExporterTransportEnforcesTheGrant) {
  rsmapi_access_entry_t acl[1] = {{kImpNode, 0444}};
  rsm_memseg_id_t id = 0x400321;
  ASSERT_EQ(rsm_memseg_export_publish(seg_, &id, acl, 1), RSM_SUCCESS);
  for (size_t i = 0; i < 4096; ++i) mem_[i] = pattern(i, 44);

  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async = DAT_HANDLE_NULL, dto = DAT_HANDLE_NULL, conn = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ia_open(const_cast<char*>("dpdat1"), 8, &async, &ia), DAT_SUCCESS);
  ASSERT_EQ(dat_pz_create(ia, &pz), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn), DAT_SUCCESS);
  ASSERT_EQ(dat_ep_create(ia, pz, dto, dto, conn, nullptr, &ep), DAT_SUCCESS);
  std::vector<uint8_t> local(4096, 0);
  DAT_REGION_DESCRIPTION reg{};
  reg.for_va = local.data();
  DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT lctx = 0;
  DAT_RMR_CONTEXT unused = 0;
  DAT_VLEN rs = 0;
  DAT_VADDR ra = 0;
  ASSERT_EQ(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, reg, local.size(), pz,
                           static_cast<DAT_MEM_PRIV_FLAGS>(DAT_MEM_PRIV_LOCAL_READ_FLAG |
                                                           DAT_MEM_PRIV_LOCAL_WRITE_FLAG),
                           &lmr, &lctx, &unused, &rs, &ra),
            DAT_SUCCESS);
  const uint32_t req[5] = {0x52534D31u, id, RSM_PERM_READ, static_cast<uint32_t>(geteuid()),
                           static_cast<uint32_t>(getegid())};
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(0xC0A84D01u);
  ASSERT_EQ(dat_ep_connect(ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&sin), 0x52534D31u, 5000000,
                           sizeof(req), const_cast<uint32_t*>(req), DAT_QOS_BEST_EFFORT,
                           DAT_CONNECT_DEFAULT_FLAG),
            DAT_SUCCESS);
  DAT_EVENT ev{};
  DAT_COUNT nmore = 0;
  ASSERT_EQ(dat_evd_wait(conn, 5000000, 1, &ev, &nmore), DAT_SUCCESS);
  ASSERT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
  struct {
    uint32_t magic;
    int32_t status;
    uint32_t perm, rmr_context;
    uint64_t addr, len;
  } rep{};
  ASSERT_GE(ev.event_data.connect_event_data.private_data_size,
            static_cast<DAT_COUNT>(sizeof(rep)));
  std::memcpy(&rep, ev.event_data.connect_event_data.private_data, sizeof(rep));
  ASSERT_EQ(rep.status, RSM_SUCCESS);
  EXPECT_EQ(rep.perm, unsigned{RSM_PERM_READ});
  EXPECT_EQ(rep.addr, reinterpret_cast<uintptr_t>(mem_));
  EXPECT_EQ(rep.len, kSegBytes);

  DAT_LMR_TRIPLET l{};
  l.lmr_context = lctx;
  l.virtual_address = reinterpret_cast<uintptr_t>(local.data());
  l.segment_length = 4096;
  DAT_RMR_TRIPLET r{};
  r.rmr_context = rep.rmr_context;
  r.target_address = rep.addr;
  r.segment_length = 4096;
  DAT_DTO_COOKIE ck{};
  ASSERT_EQ(dat_ep_post_rdma_read(ep, 1, &l, ck, &r, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_wait(dto, 5000000, 1, &ev, &nmore), DAT_SUCCESS);
  EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
  EXPECT_EQ(std::memcmp(local.data(), mem_, 4096), 0);

  std::fill(local.begin(), local.end(), 0xFF);
  ASSERT_EQ(dat_ep_post_rdma_write(ep, 1, &l, ck, &r, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_wait(dto, 10000000, 1, &ev, &nmore), DAT_SUCCESS);
  EXPECT_NE(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
  for (size_t i = 0; i < 4096; ++i) ASSERT_EQ(mem_[i], pattern(i, 44)) << i;
  EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

// rsm_get_controller must not hold the library's global lock while it sets a
// controller up (dat_ia_open and the rest), or every other RSM call of the
// process waits for that; and still only one controller may come of any
// number of concurrent calls for one name.  The set-up is held up here at
// will: DPDAT_CONF names a FIFO, which every IA-name look-up of the set-up
// reads (the file is read before the built-in names), and each reader is
// answered only after a probe call that needs the global lock has been given
// 2 s to return.  Meanwhile five more threads ask for the same name.
TEST(RsmController, ConcurrentGetsOfOneNameOpenItOnceWithoutTheGlobalLock) {
  const std::string fifo = "/tmp/dpdat_rsm_conf_" + std::to_string(getpid());
  (void)unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(setenv("DPDAT_CONF", fifo.c_str(), 1), 0);
  std::signal(SIGPIPE, SIG_IGN);  // a reader may close before a repeated answer

  constexpr int kOthers = 5;
  std::atomic<int> done{0};
  std::vector<rsmapi_controller_handle_t> got(kOthers + 1, nullptr);
  std::vector<int> rc(kOthers + 1, -1);
  auto get = [&](int i) {
    rc[static_cast<size_t>(i)] =
        rsm_get_controller(const_cast<char*>("dpdat1"), &got[static_cast<size_t>(i)]);
    done++;
  };
  std::vector<std::thread> threads;
  threads.emplace_back(get, 0);

  int readers = 0, stalled_probes = 0;
  std::vector<std::thread> probes;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (done < kOthers + 1 && std::chrono::steady_clock::now() < deadline) {
    // Succeeds only while a reader has the FIFO open: a look-up is under way.
    const int w = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (w < 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    if (readers++ == 0)
      for (int i = 1; i <= kOthers; ++i) threads.emplace_back(get, i);
    // The look-up is stuck until we write: a call that takes the global lock
    // must still return.
    auto probe_done = std::make_shared<std::atomic<bool>>(false);
    probes.emplace_back([probe_done] {
      int not_a_controller = 0;
      rsmapi_controller_attr_t a{};
      (void)rsm_get_controller_attr(reinterpret_cast<rsmapi_controller_handle_t>(&not_a_controller),
                                    &a);
      *probe_done = true;
    });
    for (int i = 0; i < 2000 && !*probe_done; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!*probe_done) stalled_probes++;
    const std::string line = "dpdat1 ring=1;ip=192.168.77.2\n";
    (void)!write(w, line.data(), line.size());
    close(w);
  }
  for (auto& t : threads) t.join();
  for (auto& t : probes) t.join();
  ASSERT_EQ(unsetenv("DPDAT_CONF"), 0);
  (void)unlink(fifo.c_str());

  EXPECT_GE(readers, 1) << "the set-up never read DPDAT_CONF";
  EXPECT_EQ(stalled_probes, 0) << "rsm_get_controller_attr waited for another thread's "
                                  "rsm_get_controller set-up (the global lock was held)";
  for (int i = 0; i <= kOthers; ++i) {
    ASSERT_EQ(rc[static_cast<size_t>(i)], RSM_SUCCESS) << "thread " << i;
    EXPECT_EQ(got[static_cast<size_t>(i)], got[0]) << "thread " << i << ": a second controller";
  }
  rsmapi_controller_attr_t a{};
  EXPECT_EQ(rsm_get_controller_attr(got[0], &a), RSM_SUCCESS);
  for (int i = 0; i <= kOthers; ++i) {
    EXPECT_EQ(rsm_release_controller(got[static_cast<size_t>(i)]), RSM_SUCCESS) << i;
  }
  // Balanced: the last release closed it.
  EXPECT_EQ(rsm_release_controller(got[0]), RSMERR_BAD_CTLR_HNDL);
  EXPECT_EQ(rsm_get_controller_attr(got[0], &a), RSMERR_BAD_CTLR_HNDL);
  rsmapi_controller_handle_t again = nullptr;
  ASSERT_EQ(rsm_get_controller(const_cast<char*>("dpdat1"), &again), RSM_SUCCESS);
  EXPECT_EQ(rsm_get_controller_attr(again, &a), RSM_SUCCESS);
  EXPECT_EQ(rsm_release_controller(again), RSM_SUCCESS);
}

}  // namespace
