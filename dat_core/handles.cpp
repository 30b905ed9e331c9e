// The handle registry: every live DAT object, so a stale or foreign handle is
// refused (DAT_INVALID_HANDLE) instead of being dereferenced.  The check on
// every DAT call only loads memory (handle_set.hpp).

#include "core.hpp"
#include "handle_set.hpp"

namespace dpdat::dat {

namespace {
HandleSet& handles() {
  static auto* h = new HandleSet();  // lives for the process
  return *h;
}
}  // namespace

void register_handle(Object* o) {
  // DAT 2.0: every object carries its IA's provider word from birth (the
  // IA's own is set by the plug-in once the IA is open; nullptr for 1.2).
  if (o->ia != nullptr && o->ia != o) o->provider = o->ia->provider;
  handles().insert(o);
}
void unregister_handle(Object* o) { handles().erase(o); }
Object* lookup_any(const void* h) {
  if (!handles().contains(h)) return nullptr;
  return static_cast<Object*>(const_cast<void*>(h));
}

}  // namespace dpdat::dat
