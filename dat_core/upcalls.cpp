// CNO agent upcalls, made once the delivering thread holds no interface lock
// (iface.hpp, queue_upcall), and the translation of RC completion statuses.

#include <chrono>
#include <deque>
#include <mutex>
#include <thread>

#include "core.hpp"

namespace dpdat::dat {

namespace {
struct Upcall {
  Iface* f;
  Cno* cno;
  Evd* evd;
};
thread_local std::deque<Upcall> t_upcalls;
thread_local int t_iface_locks = 0;  // interface locks this thread holds (IfaceLock)
thread_local bool t_running_upcalls = false;
}  // namespace

void note_iface_locked() { ++t_iface_locks; }
void note_iface_unlocked() { --t_iface_locks; }

void queue_upcall(Iface* f, Cno* cno, Evd* evd) { t_upcalls.push_back(Upcall{f, cno, evd}); }

void run_upcalls() {
  if (t_iface_locks > 0 || t_running_upcalls || t_upcalls.empty()) return;
  t_running_upcalls = true;
  while (!t_upcalls.empty()) {
    const Upcall u = t_upcalls.front();
    t_upcalls.pop_front();
    void (*fn)(void*, void*) = nullptr;
    void* instance = nullptr;
    {
      // Not an IfaceLock: this thread is making upcalls already.
      std::lock_guard<std::mutex> g(u.f->mu);  // the CNO's agent fields change under mu
      if (Cno* c = lookup<Cno>(u.cno, HandleType::kCno); c != nullptr && c->agent_fn != nullptr) {
        fn = c->agent_fn;
        instance = c->agent_instance;
        // Counted before mu is released: a free that follows waits for it.
        u.f->upcalls_running.fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (fn != nullptr) {
      fn(instance, u.evd);
      u.f->upcalls_running.fetch_sub(1, std::memory_order_release);
    }
  }
  t_running_upcalls = false;
}

void Iface::wait_upcalls() const {
  if (t_running_upcalls) return;
  while (upcalls_running.load(std::memory_order_acquire) != 0)
    std::this_thread::sleep_for(std::chrono::microseconds(50));
}

DtoStatus dto_status(rc::WcStatus s) {
  switch (s) {
    case rc::WcStatus::kSuccess:
      return DtoStatus::kSuccess;
    case rc::WcStatus::kLocalLengthError:
      return DtoStatus::kLocalLength;
    case rc::WcStatus::kLocalProtectionError:
      return DtoStatus::kLocalProtection;
    case rc::WcStatus::kLocalQpOperationError:
      return DtoStatus::kLocalEp;
    case rc::WcStatus::kBindError:
      return DtoStatus::kRmrOperationFailed;
    case rc::WcStatus::kRemoteAccessError:
      return DtoStatus::kRemoteAccess;
    case rc::WcStatus::kRemoteInvalidRequest:
      return DtoStatus::kRemoteResponder;
    case rc::WcStatus::kRemoteOperationalError:
      return DtoStatus::kRemoteResponder;
    case rc::WcStatus::kRetryExceeded:
      return DtoStatus::kTransport;
    case rc::WcStatus::kRnrRetryExceeded:
      return DtoStatus::kReceiverNotReady;
    case rc::WcStatus::kFlushed:
      return DtoStatus::kFlushed;
    case rc::WcStatus::kCount:
      break;
  }
  return DtoStatus::kTransport;
}

}  // namespace dpdat::dat
