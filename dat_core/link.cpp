// The installed link factory and the interfaces' clock (link.hpp).

#include "link.hpp"

#include <atomic>
#include <chrono>

#include "core.hpp"

namespace dpdat::dat {

namespace {
constinit std::atomic<const LinkFactory*> g_factory{nullptr};
}  // namespace

void set_link_factory(const LinkFactory* f) { g_factory.store(f, std::memory_order_release); }

const LinkFactory* link_factory() { return g_factory.load(std::memory_order_acquire); }

uint64_t steady_now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

uint64_t now_ns() {
  const LinkFactory* f = g_factory.load(std::memory_order_acquire);
  return f != nullptr ? f->now_ns() : steady_now_ns();
}

}  // namespace dpdat::dat
