// rsm_memseg_import_map: load/store access to an imported segment without
// remote load/store hardware.  The mapping is private anonymous memory
// registered with userfaultfd; a fault thread per mapping resolves
//   - a missing-page fault by an RDMA READ of the page (and following
//     missing pages: kFetchPages, doubling while faults continue the last
//     fetch, up to the staging buffer's 64) into the mapping's staging
//     buffer, installed with UFFDIO_COPY, write-protected when the mapping is
//     writable so the first store to the page faults again;
//   - a write-protect fault by keeping a twin (the page as fetched), marking
//     the page dirty and lifting the protection, for the faulting page and
//     the clean pages after it (up to kFetchPages in all);
//   - a store to a missing page as a load followed by that write-protect
//     fault, in one step.
// A barrier's order/close and unmap write the dirty pages back: each is
// write-protected again, compared with its twin, and the changed byte ranges
// are RDMA WRITEs (merged across adjacent pages up to kMaxWrite).  A
// barrier's init/open drops the clean pages, so the next load fetches the
// exporter's data as of then.
//
// The mapping talks to the exporter over its own connection (an import with
// no handle of its own, `Mapping::io`), so the fault thread never waits for
// the import's op_mu: a get/put whose buffer lies in the mapping, or a
// consumer thread inside a barrier, can fault without deadlock.  Lock order:
// the import's op_mu, then io->op_mu (state of the pages), then the
// controller's mu.  Every network wait is bounded (kDtoUs per RDMA).
//
// When the connection is gone (unpublished segment, exporter lost) the next
// fault replaces the whole mapping by a mapping of an empty memfd: that access
// and every later one raise SIGBUS, as a truncated mapped file does.
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "objects.hpp"

namespace dpdat::rsm {

namespace {

constexpr size_t kFetchPages = 16;        // read-ahead of a missing-page fault
constexpr size_t kMaxWrite = 256 * 1024;  // one write-back RDMA WRITE at most
constexpr size_t kMaxRangesPerPage = 16;  // more: the page's changed span as one write
constexpr int kCopyRetries = 1000;        // UFFDIO_COPY -EAGAIN (address space changing)

enum class Page : uint8_t { kMissing, kClean, kDirty };

}  // namespace

struct Mapping {
  ImportSeg* io = nullptr;  // the mapping's own connection
  uint8_t* base = nullptr;
  size_t len = 0;  // multiple of page
  size_t page = 4096;
  uint64_t off = 0;  // segment offset of base
  bool writable = false;
  bool reserved = false;  // RSM_MAP_RESERVED: unmap leaves the range reserved
  int uffd = -1;
  int stop_efd = -1;
  uint8_t* twin = nullptr;       // each dirty page as fetched (writable mappings)
  std::vector<Page> state;       // under io->op_mu
  bool poisoned = false;         // under io->op_mu
  size_t next_fetch = SIZE_MAX;  // page after the last fetch (sequential detection)
  size_t window = 0;             // pages of the last fetch
  std::thread thread;
};

namespace {

// Address ranges of every mapping of the process: memory the transport must
// never be handed (its engine would fault on a page only it can fetch).
std::mutex g_ranges_mu;
std::vector<std::pair<uintptr_t, size_t>> g_ranges;

void ranges_add(const Mapping* m) {
  std::lock_guard<std::mutex> lk(g_ranges_mu);
  g_ranges.emplace_back(reinterpret_cast<uintptr_t>(m->base), m->len);
}

void ranges_del(const Mapping* m) {
  std::lock_guard<std::mutex> lk(g_ranges_mu);
  std::erase(g_ranges, std::pair<uintptr_t, size_t>(reinterpret_cast<uintptr_t>(m->base), m->len));
}

int open_uffd() {
  int fd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
  if (fd < 0)  // without CAP_SYS_PTRACE and vm.unprivileged_userfaultfd
    fd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
  if (fd < 0) return -1;
  uffdio_api api{};
  api.api = UFFD_API;
  api.features = UFFD_FEATURE_PAGEFAULT_FLAG_WP;
  if (ioctl(fd, UFFDIO_API, &api) != 0 || (api.ioctls & (uint64_t{1} << _UFFDIO_REGISTER)) == 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool uffd_usable() {
  static const bool ok = [] {
    const int fd = open_uffd();
    if (fd < 0) return false;
    close(fd);
    return true;
  }();
  return ok;
}

uint8_t* page_at(const Mapping* m, size_t i) { return m->base + i * m->page; }

void wake(const Mapping* m, size_t i, size_t n) {
  uffdio_range r{reinterpret_cast<uintptr_t>(page_at(m, i)), n * m->page};
  (void)ioctl(m->uffd, UFFDIO_WAKE, &r);
}

// Sets (wp) or lifts write protection of pages [i, i+n); lifting wakes the
// faulting threads.
bool protect(const Mapping* m, size_t i, size_t n, bool wp) {
  uffdio_writeprotect w{};
  w.range = {reinterpret_cast<uintptr_t>(page_at(m, i)), n * m->page};
  w.mode = wp ? UFFDIO_WRITEPROTECT_MODE_WP : 0;
  return ioctl(m->uffd, UFFDIO_WRITEPROTECT, &w) == 0;
}

// Every later access to the mapping raises SIGBUS (an empty memfd mapped over
// it); threads waiting on a fault retry and get it too.
void poison(Mapping* m) {
  if (m->poisoned) return;
  const int prot = PROT_READ | (m->writable ? PROT_WRITE : 0);
  const int fd = memfd_create("rsm-segment-lost", MFD_CLOEXEC);
  void* p = MAP_FAILED;
  if (fd >= 0) {
    p = mmap(m->base, m->len, prot, MAP_SHARED | MAP_FIXED, fd, 0);
    close(fd);
  }
  if (p == MAP_FAILED)  // then at least SIGSEGV rather than a hang
    (void)mmap(m->base, m->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  m->poisoned = true;
  wake(m, 0, m->len / m->page);
}

// Installs n pages from src at page i; false when the kernel refused.
bool install(const Mapping* m, size_t i, size_t n, const uint8_t* src, bool wp) {
  size_t done = 0;
  for (int tries = 0; done < n * m->page && tries < kCopyRetries; ++tries) {
    uffdio_copy c{};
    c.dst = reinterpret_cast<uintptr_t>(page_at(m, i)) + done;
    c.src = reinterpret_cast<uintptr_t>(src) + done;
    c.len = n * m->page - done;
    c.mode = wp ? UFFDIO_COPY_MODE_WP : 0;
    if (ioctl(m->uffd, UFFDIO_COPY, &c) == 0) return true;
    if (c.copy > 0) done += static_cast<size_t>(c.copy);
    if (errno == EEXIST) return true;  // already there (cannot happen under io->op_mu)
    if (errno != EAGAIN) return false;
  }
  return done == n * m->page;
}

void on_fault(Mapping* m, uintptr_t addr, uint64_t flags) {
  const uintptr_t b = reinterpret_cast<uintptr_t>(m->base);
  if (addr < b || addr >= b + m->len) return;
  const size_t i = (addr - b) / m->page;
  ImportSeg* io = m->io;
  std::lock_guard<std::mutex> op(io->op_mu);
  if (m->poisoned) {
    wake(m, i, 1);
    return;
  }
  if ((flags & UFFD_PAGEFAULT_FLAG_WP) != 0) {
    // Stores come in runs: the clean pages that follow are opened for
    // writing too (twin and all), so a streaming store takes one fault per
    // kFetchPages pages; a page opened but never stored to diffs empty.
    size_t n = 0;
    while (n < kFetchPages && i + n < m->state.size() && m->state[i + n] == Page::kClean) {
      std::memcpy(m->twin + (i + n) * m->page, page_at(m, i + n), m->page);
      m->state[i + n] = Page::kDirty;
      ++n;
    }
    if (!protect(m, i, std::max<size_t>(n, 1), false)) poison(m);
    return;
  }
  if (m->state[i] != Page::kMissing) {
    wake(m, i, 1);
    return;
  }
  if (is_aborted(io)) {
    poison(m);
    return;
  }
  // Read-ahead: kFetchPages, doubled for each fault that continues the last
  // fetch, up to the staging buffer.
  const size_t want = i == m->next_fetch ? std::min(m->window * 2, kBounceBytes / m->page)
                                         : std::min(kFetchPages, kBounceBytes / m->page);
  size_t n = 1;
  while (n < want && i + n < m->state.size() && m->state[i + n] == Page::kMissing) ++n;
  m->window = want;
  m->next_fetch = i + n;
  if (rdma(io, false, m->off + i * m->page, io->bounce_lctx, io->bounce, n * m->page) !=
      RSM_SUCCESS) {
    poison(m);
    return;
  }
  // A store installs the whole read-ahead writable and dirty (as a
  // write-protect fault does), a load installs it clean and write-protected.
  const bool store = (flags & UFFD_PAGEFAULT_FLAG_WRITE) != 0;
  if (store) std::memcpy(m->twin + i * m->page, io->bounce, n * m->page);
  if (!install(m, i, n, io->bounce, m->writable && !store)) {
    poison(m);
    return;
  }
  for (size_t j = 0; j < n; ++j) m->state[i + j] = store ? Page::kDirty : Page::kClean;
}

void fault_loop(Mapping* m) {
  for (;;) {
    pollfd p[2] = {{m->uffd, POLLIN, 0}, {m->stop_efd, POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents != 0) return;
    uffd_msg msg[16];
    const ssize_t r = read(m->uffd, msg, sizeof(msg));
    if (r <= 0) continue;  // EAGAIN: another wake-up raced this one
    for (size_t k = 0; k < static_cast<size_t>(r) / sizeof(uffd_msg); ++k)
      if (msg[k].event == UFFD_EVENT_PAGEFAULT)
        on_fault(m, static_cast<uintptr_t>(msg[k].arg.pagefault.address),
                 msg[k].arg.pagefault.flags);
  }
}

// A changed byte range [start, end) of the segment.
struct Range {
  uint64_t start = 0, end = 0;
};

// The changed ranges of dirty page i: runs of aligned 8-byte words that
// differ from the twin, trimmed to their first and last differing byte;
// more than kMaxRangesPerPage of them are written as one span.
void diff_page(const Mapping* m, size_t i, std::vector<Range>* out) {
  const uint8_t* cur = page_at(m, i);
  const uint8_t* old = m->twin + i * m->page;
  const uint64_t seg = m->off + i * m->page;
  const size_t first = out->size();
  size_t w = 0;
  const size_t words = m->page / 8;
  while (w < words) {
    if (std::memcmp(cur + w * 8, old + w * 8, 8) == 0) {
      ++w;
      continue;
    }
    size_t e = w + 1;
    while (e < words && std::memcmp(cur + e * 8, old + e * 8, 8) != 0) ++e;
    size_t lo = w * 8, hi = e * 8;
    while (cur[lo] == old[lo]) ++lo;
    while (cur[hi - 1] == old[hi - 1]) --hi;
    out->push_back({seg + lo, seg + hi});
    w = e;
  }
  if (out->size() - first > kMaxRangesPerPage) {
    const Range span{(*out)[first].start, out->back().end};
    out->resize(first);
    out->push_back(span);
  }
}

// Writes the dirty pages back; io->op_mu held.
int flush_locked(Mapping* m) {
  if (m->poisoned) return RSMERR_CONN_ABORTED;
  if (!m->writable) return RSM_SUCCESS;
  ImportSeg* io = m->io;
  const size_t pages = m->state.size();
  // Protect first: a store made from now on faults and dirties the page
  // again (it waits for io->op_mu, held here).
  std::vector<size_t> dirty;
  for (size_t i = 0; i < pages;) {
    if (m->state[i] != Page::kDirty) {
      ++i;
      continue;
    }
    size_t n = 1;
    while (i + n < pages && m->state[i + n] == Page::kDirty) ++n;
    if (!protect(m, i, n, true)) {
      poison(m);
      return RSMERR_CONN_ABORTED;
    }
    for (size_t j = 0; j < n; ++j) dirty.push_back(i + j);
    i += n;
  }
  if (dirty.empty()) return RSM_SUCCESS;
  std::vector<Range> ranges;
  for (size_t i : dirty) {
    diff_page(m, i, &ranges);
    m->state[i] = Page::kClean;
  }
  const uint64_t errors_before = [&] {
    std::lock_guard<std::mutex> lk(io->ctl->mu);
    return io->errors;
  }();
  int e = RSM_SUCCESS;
  for (size_t k = 0; k < ranges.size() && e == RSM_SUCCESS;) {
    Range r = ranges[k++];
    while (k < ranges.size() && ranges[k].start == r.end && ranges[k].end - r.start <= kMaxWrite)
      r.end = ranges[k++].end;
    // A single range never exceeds a page, so r.end - r.start <= kMaxWrite
    // unless merged, and merging stops there.
    e = put_async(io, r.start, m->base + (r.start - m->off), static_cast<size_t>(r.end - r.start));
  }
  drain(io);
  std::lock_guard<std::mutex> lk(io->ctl->mu);
  if (e != RSM_SUCCESS || io->aborted || io->errors != errors_before) return RSMERR_CONN_ABORTED;
  return RSM_SUCCESS;
}

}  // namespace

bool map_overlaps(const void* p, size_t len) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lk(g_ranges_mu);
  for (const auto& [b, n] : g_ranges)
    if (a < b + n && b < a + len) return true;
  return false;
}

size_t map_max_size(const Controller* c) {
  return uffd_usable() ? static_cast<size_t>(c->attr.max_lmr_block_size) : 0;
}

int map_create(ImportSeg* im, void** address, rsm_attribute_t attr, rsm_permission_t perm,
               off_t offset, size_t length) {
  Controller* c = im->ctl;
  const unsigned a = static_cast<unsigned>(attr);
  if (a != RSM_MAP_NONE && a != RSM_MAP_FIXED && a != RSM_MAP_RESERVED) return RSMERR_BAD_MODE;
  if (perm == 0 || (perm & ~static_cast<rsm_permission_t>(RSM_PERM_RDWR)) != 0)
    return RSMERR_BAD_PERMS;
  // Pages are fetched on first touch: the grant must include read.
  if ((perm & ~im->perm) != 0 || (im->perm & RSM_PERM_READ) == 0) return RSMERR_PERM_DENIED;
  if (offset < 0 || static_cast<uint64_t>(offset) >= im->size ||
      (static_cast<uint64_t>(offset) & (c->page - 1)) != 0)
    return RSMERR_BAD_OFFSET;
  if (length == 0 || length > im->size - static_cast<uint64_t>(offset)) return RSMERR_BAD_LENGTH;
  const size_t len = (length + c->page - 1) & ~(c->page - 1);  // the segment is whole pages
  const bool fixed = (a & (RSM_MAP_FIXED | RSM_MAP_RESERVED)) != 0;
  if (fixed && *address == nullptr) return RSMERR_BAD_ADDR;
  if (fixed && (reinterpret_cast<uintptr_t>(*address) & (c->page - 1)) != 0)
    return RSMERR_BAD_MEM_ALIGNMENT;
  if (is_aborted(im)) return RSMERR_CONN_ABORTED;

  auto* m = new (std::nothrow) Mapping;
  if (m == nullptr) return RSMERR_INSUFFICIENT_MEM;
  m->page = c->page;
  m->len = len;
  m->off = static_cast<uint64_t>(offset);
  m->writable = (perm & RSM_PERM_WRITE) != 0;
  m->reserved = (a & RSM_MAP_RESERVED) != 0;
  auto fail = [m](int e) {
    if (m->thread.joinable()) {
      const uint64_t one = 1;
      (void)!write(m->stop_efd, &one, sizeof(one));
      m->thread.join();
    }
    if (m->twin != nullptr) munmap(m->twin, m->len);
    if (m->uffd >= 0) close(m->uffd);
    if (m->stop_efd >= 0) close(m->stop_efd);
    if (m->io != nullptr) disconnect_import(m->io);
    delete m;
    return e;
  };
  m->uffd = open_uffd();
  m->stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (m->uffd < 0 || m->stop_efd < 0) return fail(RSMERR_MAP_FAILED);
  try {
    m->state.assign(len / m->page, Page::kMissing);
  } catch (const std::bad_alloc&) {
    return fail(RSMERR_INSUFFICIENT_MEM);
  }
  if (m->writable) {
    void* t = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (t == MAP_FAILED) return fail(RSMERR_INSUFFICIENT_MEM);
    m->twin = static_cast<uint8_t*>(t);
  }
  // The mapping's own connection, judged against the ACL in force now.
  {
    std::lock_guard<std::mutex> lk(c->mu);
    c->seg_refs++;  // connect_import takes it over
  }
  if (int e = connect_import(c, im->node, im->segid, im->perm, true, &m->io); e != RSM_SUCCESS) {
    m->io = nullptr;
    return fail(e);
  }
  // Everything that can fail for want of resources is done: only now touch
  // the caller's address range (RSM_MAP_FIXED replaces what is there).
  const int prot = PROT_READ | (m->writable ? PROT_WRITE : 0);
  void* p = mmap(fixed ? *address : nullptr, len, prot,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (fixed ? MAP_FIXED : 0), -1, 0);
  if (p == MAP_FAILED) return fail(RSMERR_MAP_FAILED);
  m->base = static_cast<uint8_t*>(p);
  uffdio_register reg{};
  reg.range = {reinterpret_cast<uintptr_t>(p), len};
  reg.mode = UFFDIO_REGISTER_MODE_MISSING | (m->writable ? UFFDIO_REGISTER_MODE_WP : 0);
  if (ioctl(m->uffd, UFFDIO_REGISTER, &reg) != 0) {
    if (m->reserved)
      (void)mmap(p, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    else
      munmap(p, len);
    return fail(RSMERR_MAP_FAILED);
  }
  try {
    m->thread = std::thread(fault_loop, m);
  } catch (const std::system_error&) {
    munmap(p, len);
    return fail(RSMERR_INSUFFICIENT_RESOURCES);
  }
  ranges_add(m);
  im->map = m;
  *address = p;
  return RSM_SUCCESS;
}

int map_flush(ImportSeg* im) {
  Mapping* m = im->map;
  std::lock_guard<std::mutex> op(m->io->op_mu);
  return flush_locked(m);
}

int map_invalidate(ImportSeg* im) {
  Mapping* m = im->map;
  std::lock_guard<std::mutex> op(m->io->op_mu);
  if (m->poisoned) return RSMERR_CONN_ABORTED;
  if (is_aborted(m->io)) {
    poison(m);
    return RSMERR_CONN_ABORTED;
  }
  const size_t pages = m->state.size();
  for (size_t i = 0; i < pages;) {
    if (m->state[i] != Page::kClean) {
      ++i;
      continue;
    }
    size_t n = 1;
    while (i + n < pages && m->state[i + n] == Page::kClean) ++n;
    if (madvise(page_at(m, i), n * m->page, MADV_DONTNEED) != 0) {
      poison(m);
      return RSMERR_CONN_ABORTED;
    }
    for (size_t j = 0; j < n; ++j) m->state[i + j] = Page::kMissing;
    i += n;
  }
  return RSM_SUCCESS;
}

int map_destroy(ImportSeg* im) {
  Mapping* m = im->map;
  int e = RSM_SUCCESS;
  {
    std::lock_guard<std::mutex> op(m->io->op_mu);
    e = flush_locked(m);
  }
  const uint64_t one = 1;
  (void)!write(m->stop_efd, &one, sizeof(one));
  m->thread.join();
  ranges_del(m);
  if (m->reserved)
    (void)mmap(m->base, m->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
               -1, 0);
  else
    munmap(m->base, m->len);
  close(m->uffd);  // wakes any thread still faulting on the range
  close(m->stop_efd);
  if (m->twin != nullptr) munmap(m->twin, m->len);
  disconnect_import(m->io);
  im->map = nullptr;
  delete m;
  return e;
}

}  // namespace dpdat::rsm
