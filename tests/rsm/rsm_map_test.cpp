// label `rsm`: rsm_memseg_import_map over the in-process net_ring link
// (dpdat0 exports, dpdat1 imports): stores reach the exporter at a barrier's
// close, loads see the exporter's data as of the last open barrier or first
// touch, the map/unmap errors, RSM_MAP_FIXED / RSM_MAP_RESERVED, a read-only
// mapping faulting on store, and a lost segment raising SIGBUS.
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "rsm_fixture.hpp"

namespace {

using namespace rsm_test;

class RsmMap : public Rsm {
 protected:
  rsm_memseg_import_handle_t import(rsm_permission_t perm = RSM_PERM_RDWR) {
    if (id_ == 0) id_ = publish();
    rsm_memseg_import_handle_t im = nullptr;
    EXPECT_EQ(connect(id_, perm, &im), RSM_SUCCESS);
    return im;
  }
  uint8_t* map(rsm_memseg_import_handle_t im, rsm_permission_t perm = RSM_PERM_RDWR, off_t off = 0,
               size_t len = kSegBytes) {
    void* a = nullptr;
    EXPECT_EQ(rsm_memseg_import_map(im, &a, RSM_MAP_NONE, perm, off, len), RSM_SUCCESS);
    return static_cast<uint8_t*>(a);
  }
  rsm_memseg_id_t id_ = 0;
};

TEST_F(RsmMap, StoresReachExporterAtCloseAndLoadsSeeItsDataAfterOpen) {
  rsm_memseg_import_handle_t im = import();
  rsmapi_controller_attr_t attr{};
  ASSERT_EQ(rsm_get_controller_attr(imp_, &attr), RSM_SUCCESS);
  ASSERT_GE(attr.attr_max_import_map_size, kSegBytes);
  uint8_t* p = map(im);
  ASSERT_NE(p, nullptr);
  rsmapi_barrier_t bar{};
  ASSERT_EQ(rsm_memseg_import_init_barrier(im, RSM_BARRIER_SEGMENT, &bar), RSM_SUCCESS);
  for (unsigned round = 0; round < 3; ++round) {
    ASSERT_EQ(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS);
    for (size_t i = 0; i < kSegBytes; ++i) p[i] = pattern(i, round);
    ASSERT_EQ(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS);
    for (size_t i = 0; i < kSegBytes; ++i) ASSERT_EQ(mem_[i], pattern(i, round)) << i;
  }
  // The exporter changes its memory: a load before the next open barrier
  // sees the data as of the last one; after open_barrier, the new data.
  for (size_t i = 0; i < kSegBytes; ++i) mem_[i] = pattern(i, 77);
  EXPECT_EQ(p[4096], pattern(4096, 2));
  ASSERT_EQ(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS);
  for (size_t i = 0; i < kSegBytes; ++i) ASSERT_EQ(p[i], pattern(i, 77)) << i;
  ASSERT_EQ(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_destroy_barrier(&bar), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_unmap(im), RSM_SUCCESS);
}

// Only the bytes the importer changed are written back: bytes of the same
// pages that the exporter changed meanwhile survive.
TEST_F(RsmMap, WriteBackCarriesChangedRangesNotWholePages) {
  rsm_memseg_import_handle_t im = import();
  uint8_t* p = map(im);
  rsmapi_barrier_t bar{};
  ASSERT_EQ(rsm_memseg_import_init_barrier(im, RSM_BARRIER_SEGMENT, &bar), RSM_SUCCESS);
  ASSERT_EQ(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS);
  const size_t pos[] = {0, 17, 4095, 4096 * 3 + 100, 4096 * 3 + 101, 4096 * 200 + 4000};
  for (size_t q : pos) p[q] = 0xA0;  // fetches (clean) and dirties those pages
  for (size_t q : pos) mem_[q + 1 < kSegBytes ? q + 1 : q - 1] = 0x5B;
  mem_[4096 * 3 + 102] = 0x5C;  // after the two adjacent stores
  p[4096 * 3 + 101] = 0xA1;
  ASSERT_EQ(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS);
  EXPECT_EQ(mem_[0], 0xA0);
  EXPECT_EQ(mem_[1], 0x5B);
  EXPECT_EQ(mem_[17], 0xA0);
  EXPECT_EQ(mem_[18], 0x5B);
  EXPECT_EQ(mem_[4095], 0xA0);
  EXPECT_EQ(mem_[4096], 0x5B);
  EXPECT_EQ(mem_[4096 * 3 + 100], 0xA0);
  EXPECT_EQ(mem_[4096 * 3 + 101], 0xA1);
  EXPECT_EQ(mem_[4096 * 3 + 102], 0x5C);
  EXPECT_EQ(mem_[4096 * 200 + 4000], 0xA0);
  EXPECT_EQ(mem_[4096 * 200 + 4001], 0x5B);
  // order_barrier writes back too and keeps the barrier open.
  ASSERT_EQ(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS);
  p[4096 * 7] = 0x11;
  ASSERT_EQ(rsm_memseg_import_order_barrier(&bar), RSM_SUCCESS);
  EXPECT_EQ(mem_[4096 * 7], 0x11);
  p[4096 * 7 + 1] = 0x12;
  ASSERT_EQ(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS);
  EXPECT_EQ(mem_[4096 * 7 + 1], 0x12);
  // unmap writes back what no barrier has.
  p[4096 * 9] = 0x13;
  ASSERT_EQ(rsm_memseg_import_unmap(im), RSM_SUCCESS);
  EXPECT_EQ(mem_[4096 * 9], 0x13);
  EXPECT_EQ(rsm_memseg_import_destroy_barrier(&bar), RSM_SUCCESS);
}

TEST_F(RsmMap, OffsetMappingAndGetPutThroughMappedBuffers) {
  rsm_memseg_import_handle_t im = import();
  uint8_t* p = map(im, RSM_PERM_RDWR, static_cast<off_t>(2 * page_), 3 * page_ + 100);
  for (size_t i = 0; i < kSegBytes; ++i) mem_[i] = pattern(i, 5);
  for (size_t i = 0; i < 4 * page_; ++i) ASSERT_EQ(p[i], pattern(i + 2 * page_, 5)) << i;
  // get into, and put from, untouched pages of the mapping itself: the
  // mapping's faults are served while the import's own access is under way.
  ASSERT_EQ(rsm_memseg_import_unmap(im), RSM_SUCCESS);
  p = map(im, RSM_PERM_RDWR, 0, 64 * page_);
  ASSERT_EQ(rsm_memseg_import_get(im, static_cast<off_t>(40 * page_), p + 8 * page_, page_),
            RSM_SUCCESS);  // exporter's page 40 -> mapped page 8 (dirty)
  ASSERT_EQ(rsm_memseg_import_put(im, static_cast<off_t>(50 * page_), p + 20 * page_, page_),
            RSM_SUCCESS);  // mapped page 20 (fetched) -> exporter's page 50
  for (size_t i = 0; i < page_; ++i) {
    ASSERT_EQ(p[8 * page_ + i], pattern(40 * page_ + i, 5)) << i;
    ASSERT_EQ(mem_[50 * page_ + i], pattern(20 * page_ + i, 5)) << i;
  }
  ASSERT_EQ(rsm_memseg_import_unmap(im), RSM_SUCCESS);
  for (size_t i = 0; i < page_; ++i) ASSERT_EQ(mem_[8 * page_ + i], pattern(40 * page_ + i, 5));
}

TEST_F(RsmMap, Errors) {
  rsm_memseg_import_handle_t rw = import(RSM_PERM_RDWR);
  rsm_memseg_import_handle_t ro = import(RSM_PERM_READ);
  rsm_memseg_import_handle_t wo = import(RSM_PERM_WRITE);
  void* a = nullptr;
  EXPECT_EQ(rsm_memseg_import_map(nullptr, &a, RSM_MAP_NONE, RSM_PERM_READ, 0, page_),
            RSMERR_BAD_SEG_HNDL);
  EXPECT_EQ(rsm_memseg_import_map(rw, nullptr, RSM_MAP_NONE, RSM_PERM_READ, 0, page_),
            RSMERR_BAD_ADDR);
  EXPECT_EQ(rsm_memseg_import_unmap(rw), RSMERR_SEG_NOT_MAPPED);
  EXPECT_EQ(rsm_memseg_import_unmap(nullptr), RSMERR_BAD_SEG_HNDL);
  EXPECT_EQ(rsm_memseg_import_map(ro, &a, RSM_MAP_NONE, RSM_PERM_RDWR, 0, page_),
            RSMERR_PERM_DENIED);
  EXPECT_EQ(rsm_memseg_import_map(ro, &a, RSM_MAP_NONE, RSM_PERM_WRITE, 0, page_),
            RSMERR_PERM_DENIED);
  EXPECT_EQ(rsm_memseg_import_map(wo, &a, RSM_MAP_NONE, RSM_PERM_WRITE, 0, page_),
            RSMERR_PERM_DENIED);  // pages are fetched: needs the read grant
  EXPECT_EQ(rsm_memseg_import_map(rw, &a, RSM_MAP_NONE, 0, 0, page_), RSMERR_BAD_PERMS);
  EXPECT_EQ(rsm_memseg_import_map(rw, &a, RSM_MAP_NONE, 01000, 0, page_), RSMERR_BAD_PERMS);
  EXPECT_EQ(rsm_memseg_import_map(rw, &a, RSM_MAP_NONE, RSM_PERM_RDWR, 100, page_),
            RSMERR_BAD_OFFSET);
  EXPECT_EQ(rsm_memseg_import_map(rw, &a, RSM_MAP_NONE, RSM_PERM_RDWR,
                                  static_cast<off_t>(kSegBytes), page_),
            RSMERR_BAD_OFFSET);
  EXPECT_EQ(rsm_memseg_import_map(rw, &a, RSM_MAP_NONE, RSM_PERM_RDWR, -4096, page_),
            RSMERR_BAD_OFFSET);
  EXPECT_EQ(rsm_memseg_import_map(rw, &a, RSM_MAP_NONE, RSM_PERM_RDWR, 0, 0), RSMERR_BAD_LENGTH);
  EXPECT_EQ(rsm_memseg_import_map(rw, &a, RSM_MAP_NONE, RSM_PERM_RDWR, static_cast<off_t>(page_),
                                  kSegBytes),
            RSMERR_BAD_LENGTH);
  a = reinterpret_cast<void*>(uintptr_t{0x7f0000001000} + 8);
  EXPECT_EQ(rsm_memseg_import_map(rw, &a, RSM_MAP_FIXED, RSM_PERM_RDWR, 0, page_),
            RSMERR_BAD_MEM_ALIGNMENT);
  a = nullptr;
  EXPECT_EQ(rsm_memseg_import_map(rw, &a, RSM_MAP_FIXED, RSM_PERM_RDWR, 0, page_), RSMERR_BAD_ADDR);
  EXPECT_EQ(rsm_memseg_import_map(rw, &a, static_cast<rsm_attribute_t>(3), RSM_PERM_RDWR, 0, page_),
            RSMERR_BAD_MODE);
  // Mapped: a second map, and a disconnect, are refused.
  ASSERT_EQ(rsm_memseg_import_map(rw, &a, RSM_MAP_NONE, RSM_PERM_RDWR, 0, page_), RSM_SUCCESS);
  void* b = nullptr;
  EXPECT_EQ(rsm_memseg_import_map(rw, &b, RSM_MAP_NONE, RSM_PERM_READ, 0, page_),
            RSMERR_SEG_ALREADY_MAPPED);
  EXPECT_EQ(rsm_memseg_import_disconnect(rw), RSMERR_SEG_STILL_MAPPED);
  EXPECT_EQ(rsm_memseg_import_unmap(rw), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_unmap(rw), RSMERR_SEG_NOT_MAPPED);
  // A mapping's memory is never handed to the transport.
  ASSERT_EQ(rsm_memseg_import_map(rw, &a, RSM_MAP_NONE, RSM_PERM_RDWR, 0, 2 * page_), RSM_SUCCESS);
  rsm_localmemory_handle_t lm = nullptr;
  EXPECT_EQ(rsm_create_localmemory_handle(imp_, &lm, static_cast<char*>(a) + page_, 100),
            RSMERR_BAD_ADDR);
  rsm_memseg_export_handle_t ex = nullptr;
  EXPECT_EQ(rsm_memseg_export_create(exp_, &ex, a, page_, 0), RSMERR_BAD_ADDR);
  EXPECT_EQ(rsm_memseg_export_rebind(seg_, a, 0, kSegBytes), RSMERR_BAD_ADDR);
  EXPECT_EQ(rsm_memseg_import_unmap(rw), RSM_SUCCESS);
  // A read-only mapping of a read grant loads.
  mem_[3] = 0x33;
  ASSERT_EQ(rsm_memseg_import_map(ro, &a, RSM_MAP_NONE, RSM_PERM_READ, 0, page_), RSM_SUCCESS);
  EXPECT_EQ(static_cast<volatile uint8_t*>(a)[3], 0x33);
  EXPECT_EQ(rsm_memseg_import_unmap(ro), RSM_SUCCESS);
}

// A store into a read-only mapping faults (SIGSEGV), in a forked child that
// does nothing else.
TEST_F(RsmMap, ReadOnlyMappingFaultsOnStore) {
  rsm_memseg_import_handle_t im = import(RSM_PERM_RDWR);
  mem_[0] = 0x42;
  uint8_t* p = map(im, RSM_PERM_READ, 0, page_);
  ASSERT_EQ(static_cast<volatile uint8_t*>(p)[0], 0x42);  // fetched
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    sigaction(SIGSEGV, &sa, nullptr);
    static_cast<volatile uint8_t*>(p)[0] = 1;
    _exit(0);
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(st)) << "child exited with " << WEXITSTATUS(st);
  EXPECT_EQ(WTERMSIG(st), SIGSEGV);
  EXPECT_EQ(rsm_memseg_import_unmap(im), RSM_SUCCESS);
}

TEST_F(RsmMap, FixedReplacesAndReservedKeepsTheReservation) {
  rsm_memseg_import_handle_t im = import();
  for (size_t i = 0; i < 4 * page_; ++i) mem_[i] = pattern(i, 9);
  void* r = mmap(nullptr, 4 * page_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(r, MAP_FAILED);
  for (rsm_attribute_t attr : {RSM_MAP_RESERVED, RSM_MAP_FIXED}) {
    void* a = r;
    ASSERT_EQ(rsm_memseg_import_map(im, &a, attr, RSM_PERM_RDWR, 0, 4 * page_), RSM_SUCCESS);
    ASSERT_EQ(a, r);
    auto* p = static_cast<uint8_t*>(a);
    for (size_t i = 0; i < 4 * page_; ++i) ASSERT_EQ(p[i], pattern(i, 9));
    p[1] = 0xEE;
    ASSERT_EQ(rsm_memseg_import_unmap(im), RSM_SUCCESS);
    EXPECT_EQ(mem_[1], 0xEE);
    mem_[1] = pattern(1, 9);
    // RESERVED leaves the range reserved (a no-replace mapping there fails);
    // FIXED leaves a hole.
    void* probe =
        mmap(r, page_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (attr == RSM_MAP_RESERVED) {
      EXPECT_EQ(probe, MAP_FAILED);
    } else {
      EXPECT_EQ(probe, r);
      if (probe != MAP_FAILED) munmap(probe, page_);
    }
  }
  munmap(r, 4 * page_);
}

sigjmp_buf g_jmp;
void on_sigbus(int) { siglongjmp(g_jmp, 1); }

// Unpublished while mapped: the next fault raises SIGBUS instead of hanging,
// a barrier reports the failure, unmap reports the lost write-back.
TEST_F(RsmMap, LostSegmentFaultsWithSigbus) {
  rsm_memseg_import_handle_t im = import();
  uint8_t* p = map(im);
  rsmapi_barrier_t bar{};
  ASSERT_EQ(rsm_memseg_import_init_barrier(im, RSM_BARRIER_SEGMENT, &bar), RSM_SUCCESS);
  ASSERT_EQ(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS);
  p[0] = 1;
  ASSERT_EQ(rsm_memseg_export_unpublish(seg_), RSM_SUCCESS);
  struct sigaction sa {
  }, old{};
  sa.sa_handler = on_sigbus;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGBUS, &sa, &old), 0);
  volatile int faulted = 0;
  if (sigsetjmp(g_jmp, 1) == 0) {
    (void)static_cast<volatile uint8_t*>(p)[100 * page_];
  } else {
    faulted = 1;
  }
  sigaction(SIGBUS, &old, nullptr);
  EXPECT_EQ(faulted, 1);
  EXPECT_EQ(rsm_memseg_import_close_barrier(&bar), RSMERR_BARRIER_FAILURE);
  EXPECT_EQ(rsm_memseg_import_destroy_barrier(&bar), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_unmap(im), RSMERR_CONN_ABORTED);
  void* a = nullptr;
  EXPECT_EQ(rsm_memseg_import_map(im, &a, RSM_MAP_NONE, RSM_PERM_READ, 0, page_),
            RSMERR_CONN_ABORTED);
}

// A node barrier covers the mappings of every import from that node: its
// close writes back a mapping of another import, its open drops that
// mapping's clean pages.
TEST_F(RsmMap, NodeBarrierCoversOtherImportsMappings) {
  rsm_memseg_import_handle_t a = import(), b = import();
  uint8_t* pb = map(b, RSM_PERM_RDWR, 0, 8 * page_);
  rsmapi_barrier_t bar{};
  ASSERT_EQ(rsm_memseg_import_init_barrier(a, RSM_BARRIER_NODE, &bar), RSM_SUCCESS);
  ASSERT_EQ(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS);
  pb[5 * page_ + 3] = 0x77;
  ASSERT_EQ(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS);
  EXPECT_EQ(mem_[5 * page_ + 3], 0x77);
  mem_[5 * page_ + 4] = 0x78;
  ASSERT_EQ(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS);
  EXPECT_EQ(static_cast<volatile uint8_t*>(pb)[5 * page_ + 4], 0x78);
  ASSERT_EQ(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_destroy_barrier(&bar), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_unmap(b), RSM_SUCCESS);
  // The exporter's signals reach the imports, not the mappings' connections.
  uint8_t* pa = map(a, RSM_PERM_RDWR, 0, page_);
  ASSERT_NE(pa, nullptr);
  ASSERT_EQ(rsm_intr_signal_post(seg_, 0), RSM_SUCCESS);
  EXPECT_EQ(rsm_intr_signal_wait(a, 5000), RSM_SUCCESS);
  EXPECT_EQ(rsm_intr_signal_wait(b, 5000), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_unmap(a), RSM_SUCCESS);
}

// Two imports of one segment, each mapped, stored into by its own thread
// over disjoint interleaved 512-byte ranges (sharing every page), each
// closing its barrier: the exporter sees both.
TEST_F(RsmMap, ConcurrentImportersOfDisjointRanges) {
  rsm_memseg_import_handle_t a = import(), b = import();
  uint8_t* pa = map(a);
  uint8_t* pb = map(b);
  std::atomic<int> failures{0};
  auto run = [&](rsm_memseg_import_handle_t im, uint8_t* p, size_t parity) {
    rsmapi_barrier_t bar{};
    if (rsm_memseg_import_init_barrier(im, RSM_BARRIER_SEGMENT, &bar) != RSM_SUCCESS ||
        rsm_memseg_import_open_barrier(&bar) != RSM_SUCCESS) {
      failures++;
      return;
    }
    for (size_t i = 0; i < kSegBytes; ++i)
      if ((i / 512) % 2 == parity) p[i] = pattern(i, 40 + static_cast<unsigned>(parity));
    if (rsm_memseg_import_close_barrier(&bar) != RSM_SUCCESS) failures++;
    (void)rsm_memseg_import_destroy_barrier(&bar);
  };
  std::thread ta(run, a, pa, 0), tb(run, b, pb, 1);
  ta.join();
  tb.join();
  ASSERT_EQ(failures.load(), 0);
  for (size_t i = 0; i < kSegBytes; ++i)
    ASSERT_EQ(mem_[i], pattern(i, 40 + static_cast<unsigned>((i / 512) % 2))) << i;
  EXPECT_EQ(rsm_memseg_import_unmap(a), RSM_SUCCESS);
  EXPECT_EQ(rsm_memseg_import_unmap(b), RSM_SUCCESS);
}

// A consumer thread closes barriers while another keeps storing: no
// deadlock, and after the last close every store is at the exporter.
TEST_F(RsmMap, StoresDuringBarrierCloseAreNotLost) {
  rsm_memseg_import_handle_t im = import();
  uint8_t* p = map(im, RSM_PERM_RDWR, 0, 64 * page_);
  rsmapi_barrier_t bar{};
  ASSERT_EQ(rsm_memseg_import_init_barrier(im, RSM_BARRIER_SEGMENT, &bar), RSM_SUCCESS);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (uint32_t v = 1; !stop.load(); ++v)
      for (size_t pg = 0; pg < 64; ++pg) std::memcpy(p + pg * page_ + (v % 500) * 8, &v, 4);
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  int closes = 0;
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS);
    ASSERT_EQ(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS);
    ++closes;
  }
  stop = true;
  writer.join();
  ASSERT_EQ(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS);
  ASSERT_EQ(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS);
  EXPECT_GT(closes, 1);
  EXPECT_EQ(std::memcmp(mem_, p, 64 * page_), 0);
  EXPECT_EQ(rsm_memseg_import_destroy_barrier(&bar), RSM_SUCCESS);
}

}  // namespace
