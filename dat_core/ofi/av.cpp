// Address vectors (fi_av_*) of the reliable-datagram endpoints.

#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rdm.hpp"

namespace dpdat::ofi {

namespace {

uint64_t key_of(uint32_t ip, uint16_t port) { return (uint64_t{ip} << 16) | port; }

Av* av_cast(fid_av* a) { return reinterpret_cast<Av*>(a); }

// Inserts one address (mu held); its index.
fi_addr_t insert_one(Av* av, uint32_t ip, uint16_t port) {
  if (auto it = av->by_addr.find(key_of(ip, port)); it != av->by_addr.end()) return it->second;
  const auto i = static_cast<fi_addr_t>(av->table.size());
  av->table.push_back(Av::Entry{ip, port, true});
  av->by_addr.emplace(key_of(ip, port), i);
  return i;
}

int av_insert(fid_av* a, const void* addr, size_t count, fi_addr_t* fi_addr, uint64_t flags,
              void* /*context*/) {
  Av* av = av_cast(a);
  if ((flags & ~static_cast<uint64_t>(FI_MORE)) != 0) return -FI_EBADFLAGS;
  if (count > 0 && addr == nullptr) return -FI_EINVAL;
  std::lock_guard lk(av->mu);
  int n = 0;
  const auto* sin = static_cast<const sockaddr_in*>(addr);
  for (size_t i = 0; i < count; ++i) {
    uint32_t ip = 0;
    uint16_t port = 0;
    fi_addr_t out = FI_ADDR_NOTAVAIL;
    if (parse_sin(&sin[i], sizeof(sockaddr_in), &ip, &port) && ip != 0 && port != 0) {
      out = insert_one(av, ip, port);
      ++n;
    }
    if (fi_addr != nullptr) fi_addr[i] = out;
  }
  return n;
}

int av_insertsvc(fid_av* a, const char* node, const char* service, fi_addr_t* fi_addr,
                 uint64_t flags, void* context) {
  if (node == nullptr || service == nullptr) return -FI_EINVAL;
  uint32_t ip = 0;
  char* end = nullptr;
  const unsigned long port = std::strtoul(service, &end, 10);
  if (!dat::parse_ipv4(node, &ip) || end == service || *end != '\0' || port == 0 || port > 0xFFFF)
    return -FI_EINVAL;
  const sockaddr_in s = make_sin(ip, static_cast<uint16_t>(port));
  return av_insert(a, &s, 1, fi_addr, flags, context);
}

int av_insertsym(fid_av*, const char*, size_t, const char*, size_t, fi_addr_t*, uint64_t, void*) {
  return -FI_ENOSYS;
}

int av_remove(fid_av* a, fi_addr_t* fi_addr, size_t count, uint64_t flags) {
  Av* av = av_cast(a);
  if (flags != 0) return -FI_EBADFLAGS;
  if (count > 0 && fi_addr == nullptr) return -FI_EINVAL;
  std::lock_guard lk(av->mu);
  for (size_t i = 0; i < count; ++i) {
    if (fi_addr[i] >= av->table.size() || !av->table[fi_addr[i]].valid) return -FI_EINVAL;
  }
  for (size_t i = 0; i < count; ++i) {
    Av::Entry& e = av->table[fi_addr[i]];
    av->by_addr.erase(key_of(e.ip, e.port));
    e.valid = false;
  }
  return 0;
}

int av_lookup(fid_av* a, fi_addr_t fi_addr, void* addr, size_t* addrlen) {
  uint32_t ip = 0;
  uint16_t port = 0;
  if (addrlen == nullptr) return -FI_EINVAL;
  if (!av_get(av_cast(a), fi_addr, &ip, &port)) return -FI_ENOENT;
  const sockaddr_in s = make_sin(ip, port);
  const size_t have = *addrlen;
  *addrlen = sizeof(s);
  if (addr != nullptr) std::memcpy(addr, &s, std::min(have, sizeof(s)));
  return have < sizeof(s) ? -FI_ETOOSMALL : 0;
}

const char* av_straddr(fid_av*, const void* addr, char* buf, size_t* len) {
  uint32_t ip = 0;
  uint16_t port = 0;
  char text[64] = "fi_addr_format_unknown";
  if (addr != nullptr && parse_sin(addr, sizeof(sockaddr_in), &ip, &port)) {
    const in_addr ia{htonl(ip)};
    char dotted[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &ia, dotted, sizeof(dotted));
    std::snprintf(text, sizeof(text), "fi_sockaddr_in://%s:%u", dotted, unsigned{port});
  }
  const size_t need = std::strlen(text) + 1;
  if (buf != nullptr && len != nullptr && *len > 0) std::snprintf(buf, *len, "%s", text);
  if (len != nullptr) *len = need;
  return buf;
}

int av_set_none(fid_av*, fi_av_set_attr*, fid_av_set**, void*) { return -FI_ENOSYS; }

int av_close(fid* f) {
  auto* av = reinterpret_cast<Av*>(f);
  if (av->refs > 0) return -FI_EBUSY;
  av->dom->refs--;
  delete av;
  return 0;
}

int av_bind(fid*, fid*, uint64_t) { return -FI_ENOSYS; }  // no asynchronous inserts

fi_ops g_av_fi_ops = {sizeof(fi_ops), av_close, av_bind,   no_control,
                      no_ops_open,    no_tostr, no_ops_set};
fi_ops_av g_av_ops = {sizeof(fi_ops_av), av_insert, av_insertsvc, av_insertsym,
                      av_remove,         av_lookup, av_straddr,   av_set_none};

}  // namespace

fi_addr_t av_find(Av* av, uint32_t ip, uint16_t port) {
  std::lock_guard lk(av->mu);
  auto it = av->by_addr.find(key_of(ip, port));
  return it == av->by_addr.end() ? FI_ADDR_NOTAVAIL : it->second;
}

bool av_get(Av* av, fi_addr_t a, uint32_t* ip, uint16_t* port) {
  std::lock_guard lk(av->mu);
  if (a >= av->table.size() || !av->table[a].valid) return false;
  *ip = av->table[a].ip;
  *port = av->table[a].port;
  return true;
}

int av_open(fid_domain* domain, fi_av_attr* attr, fid_av** out, void* context) {
  auto* d = object_of<Domain>(&domain->fid, FI_CLASS_DOMAIN);
  if (d == nullptr || attr == nullptr || out == nullptr) return -FI_EINVAL;
  if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP && attr->type != FI_AV_TABLE)
    return -FI_EINVAL;
  // Named (shared) vectors, asynchronous inserts and symmetric ones are not
  // offered.
  if (attr->name != nullptr || (attr->flags & (FI_EVENT | FI_SYMMETRIC)) != 0) return -FI_ENOSYS;
  if (attr->rx_ctx_bits != 0) return -FI_ENOSYS;  // no scalable endpoints
  auto* av = new Av();
  av->dom = d;
  av->type = attr->type == FI_AV_UNSPEC ? FI_AV_TABLE : attr->type;
  attr->type = av->type;
  av->table.reserve(attr->count);
  av->av.fid.fclass = FI_CLASS_AV;
  av->av.fid.context = context;
  av->av.fid.ops = &g_av_fi_ops;
  av->av.ops = &g_av_ops;
  d->refs++;
  *out = &av->av;
  return 0;
}

}  // namespace dpdat::ofi
