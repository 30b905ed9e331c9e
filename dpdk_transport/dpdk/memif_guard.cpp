#include "memif_guard.hpp"

#include <elf.h>
#include <link.h>
#include <rte_alarm.h>
#include <rte_ethdev.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "settings/settings.hpp"

namespace dpdat::dpdk::memif_guard {
namespace {

constexpr size_t kSlots = 64;
Slot g_slots[kSlots];
std::atomic<bool> g_used[kSlots];
std::atomic<uint64_t> g_waits{0};
bool g_installed = false;

using MunmapFn = int (*)(void*, size_t);
MunmapFn g_real_munmap = nullptr;

bool any_inside() {
  for (const Slot& s : g_slots)
    if (s.inside.load(std::memory_order_seq_cst) != 0) return true;
  return false;
}

// Runs where net_memif calls munmap: on the EAL interrupt thread when the
// peer left, or on the thread stopping / closing the port.
int guarded_munmap(void* addr, size_t len) {
  // The PMD cleared its connected flag (a plain store) before this call:
  // the fence orders that store before the reads of the slots.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (any_inside()) {
    g_waits.fetch_add(1, std::memory_order_relaxed);
    // A burst is a few microseconds; a thread preempted inside one may take
    // a scheduler slice.  Bounded: never hang the interrupt thread.
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (any_inside() && std::chrono::steady_clock::now() < end) sched_yield();
  }
  return g_real_munmap(addr, len);
}

// The dynamic section's address-valued entries, relocated or not.
uintptr_t dyn_ptr(const ElfW(Dyn) * d, ElfW(Addr) base) {
  const uintptr_t p = d->d_un.d_ptr;
  return p < base ? p + base : p;
}

int hook_object(dl_phdr_info* info, size_t, void*) {
  if (info->dlpi_name == nullptr || std::strstr(info->dlpi_name, "librte_net_memif") == nullptr)
    return 0;
  const ElfW(Addr) base = info->dlpi_addr;
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = reinterpret_cast<const ElfW(Dyn)*>(base + info->dlpi_phdr[i].p_vaddr);
  if (dyn == nullptr) return 1;
  uintptr_t jmprel = 0, symtab = 0, strtab = 0;
  size_t pltrelsz = 0;
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_JMPREL:
        jmprel = dyn_ptr(d, base);
        break;
      case DT_PLTRELSZ:
        pltrelsz = d->d_un.d_val;
        break;
      case DT_SYMTAB:
        symtab = dyn_ptr(d, base);
        break;
      case DT_STRTAB:
        strtab = dyn_ptr(d, base);
        break;
      default:
        break;
    }
  }
  if (jmprel == 0 || symtab == 0 || strtab == 0) return 1;
  const auto* rel = reinterpret_cast<const ElfW(Rela)*>(jmprel);
  const auto* syms = reinterpret_cast<const ElfW(Sym)*>(symtab);
  const auto* strs = reinterpret_cast<const char*>(strtab);
  for (size_t i = 0; i < pltrelsz / sizeof(ElfW(Rela)); ++i) {
    if (ELF64_R_TYPE(rel[i].r_info) != R_X86_64_JUMP_SLOT) continue;
    const char* name = strs + syms[ELF64_R_SYM(rel[i].r_info)].st_name;
    if (std::strcmp(name, "munmap") != 0) continue;
    auto* slot = reinterpret_cast<MunmapFn*>(base + rel[i].r_offset);
    // The slot sits in RELRO (read-only after relocation): open its page
    // for the one store, then close it again.
    const long page = sysconf(_SC_PAGESIZE);
    auto* pg = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(slot) &
                                       ~(static_cast<uintptr_t>(page) - 1));
    if (mprotect(pg, static_cast<size_t>(page), PROT_READ | PROT_WRITE) != 0) return 1;
    g_real_munmap = *slot;
    *slot = &guarded_munmap;
    mprotect(pg, static_cast<size_t>(page), PROT_READ);
    g_installed = true;
    return 1;
  }
  return 1;
}

}  // namespace

bool install() {
  static std::once_flag once;
  std::call_once(once, [] { dl_iterate_phdr(hook_object, nullptr); });
  return g_installed;
}

bool installed() { return g_installed; }

uint64_t waits() { return g_waits.load(std::memory_order_relaxed); }

// DPDAT_MEMIF_GUARD=0: no marking, closes on the caller's thread (to
// measure what the guard costs, and to show the races it closes).
bool guard_off() { return settings::get(settings::Var::kMemifGuard) == "0"; }

Slot* acquire_slot() {
  if (guard_off()) return nullptr;
  for (size_t i = 0; i < kSlots; ++i) {
    bool f = false;
    if (g_used[i].compare_exchange_strong(f, true)) return &g_slots[i];
  }
  return nullptr;  // more memif queues than slots: those run unguarded
}

void release_slot(Slot* s) {
  if (s == nullptr) return;
  s->inside.store(0, std::memory_order_release);
  g_used[static_cast<size_t>(s - g_slots)].store(false, std::memory_order_release);
}

namespace {

// net_memif's control channel lives on the EAL interrupt thread: when the
// peer leaves, memif_disconnect() runs there (closes the queues' interrupt
// descriptors, unmaps the shared regions, clears the connection state) under
// no lock against the same function run by rte_eth_dev_stop() on another
// thread, and rte_eth_dev_close() frees the queues it walks.  Both ends of a link close at about
// the same time at the end of every run, so a memif port is stopped and closed by an EAL alarm,
// which runs on the interrupt thread, between its other callbacks.  Bounded:
// if the alarm has not run within 5 s (no interrupt thread) it is cancelled
// and the port closed here.
struct CloseJob {
  uint16_t port_id;
  std::atomic<bool> done{false};
};

void stop_close_here(uint16_t port_id) {
  rte_eth_dev_stop(port_id);
  rte_eth_dev_close(port_id);
}

void close_job(void* arg) {
  auto* j = static_cast<CloseJob*>(arg);
  stop_close_here(j->port_id);
  j->done.store(true, std::memory_order_release);
}

}  // namespace

void stop_close(uint16_t port_id) {
  CloseJob job{port_id};
  if (!guard_off() && rte_eal_alarm_set(1, close_job, &job) == 0) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!job.done.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    // Takes a pending alarm back; waits for one that is running.
    rte_eal_alarm_cancel(close_job, &job);
    if (job.done.load(std::memory_order_acquire)) return;
  }
  stop_close_here(port_id);
}

}  // namespace dpdat::dpdk::memif_guard
