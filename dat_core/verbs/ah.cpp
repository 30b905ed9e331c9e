// Address handles (ibv_create_ah, ibv_destroy_ah): a RoCEv2 GID names the
// peer by its IPv4 address (IPv4-mapped); its MAC is resolved once, when the
// handle is made, through the interface's neighbour resolution, as an RC
// QP's path is at RTR.

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>

#include "objects.hpp"

#define DPDAT_EXPORT extern "C" __attribute__((visibility("default")))

namespace dpdat::verbs {

namespace {

// ::ffff:a.b.c.d -> a.b.c.d (host order).
bool mapped_ipv4(const ibv_gid& g, uint32_t* ip) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
  if (std::memcmp(g.raw, kPrefix, sizeof kPrefix) != 0) return false;
  uint32_t be = 0;
  std::memcpy(&be, g.raw + 12, 4);
  *ip = ntohl(be);
  return *ip != 0;
}

ibv_ah* fail_ah(int e) {
  errno = e;
  return nullptr;
}

}  // namespace

DPDAT_EXPORT ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  if (pd == nullptr || attr == nullptr) return fail_ah(EINVAL);
  // RoCE: every address has a GRH, whose destination GID names the peer.
  if (attr->is_global == 0 || attr->port_num != 1 || attr->grh.sgid_index != 0)
    return fail_ah(EINVAL);
  uint32_t ip = 0;
  if (!mapped_ipv4(attr->grh.dgid, &ip)) return fail_ah(EINVAL);
  auto* p = reinterpret_cast<Pd*>(pd);
  wire::MacAddr mac{};
  const dat::Status st = dat::ia_resolve(p->pz->ia, ip, kResolveUs, &mac);
  if (!st.ok()) return fail_ah(st.type == dat::Type::INVALID_ADDRESS ? EHOSTUNREACH : to_errno(st));
  auto* a = new Ah;
  a->ah.context = pd->context;
  a->ah.pd = pd;
  a->ah.handle = 0;
  a->mac = mac;
  a->ip = ip;
  return &a->ah;
}

DPDAT_EXPORT int ibv_destroy_ah(ibv_ah* ah) {
  if (ah == nullptr) return EINVAL;
  delete reinterpret_cast<Ah*>(ah);
  return 0;
}

}  // namespace dpdat::verbs
