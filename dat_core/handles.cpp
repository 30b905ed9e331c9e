// The handle registry: every live DAT object, so a stale or foreign handle is
// refused (DAT_INVALID_HANDLE) instead of being dereferenced.

#include <shared_mutex>

#include "core.hpp"

namespace dpdat::dat {

namespace {
std::shared_mutex g_handles_mu;
std::unordered_set<const void*>& handles() {
  static auto* h = new std::unordered_set<const void*>();  // lives for the process
  return *h;
}
}  // namespace

void register_handle(Object* o) {
  // DAT 2.0: every object carries its IA's provider word from birth (the
  // IA's own is set by the plug-in once the IA is open; nullptr for 1.2).
  if (o->ia != nullptr && o->ia != o) o->provider = o->ia->provider;
  std::unique_lock lk(g_handles_mu);
  handles().insert(o);
}
void unregister_handle(Object* o) {
  std::unique_lock lk(g_handles_mu);
  handles().erase(o);
}
Object* lookup_any(const void* h) {
  if (h == nullptr) return nullptr;
  std::shared_lock lk(g_handles_mu);
  if (handles().count(h) == 0) return nullptr;
  return static_cast<Object*>(const_cast<void*>(h));
}

}  // namespace dpdat::dat
