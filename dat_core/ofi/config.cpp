// Which dpdat interface a libfabric process uses, addresses and the mapping
// of dat_core statuses to libfabric errnos.

#include <arpa/inet.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "objects.hpp"
#include "settings/settings.hpp"

namespace dpdat::ofi {

bool process_iface(dat::IfaceConfig* out, std::string* why) {
  std::string name = settings::get_or(settings::Var::kFiIa, "fi%r");
  const std::string rank = settings::get_or(settings::Var::kMpiLocalRank, "0");
  for (size_t p = name.find("%r"); p != std::string::npos; p = name.find("%r", p + rank.size()))
    name.replace(p, 2, rank);
  if (!dat::lookup_ia(name, out, why)) {
    *why = "interface '" + name + "' (DPDAT_FI_IA): " + *why;
    return false;
  }
  return true;
}

bool process_ifaces(std::vector<dat::IfaceConfig>* out, std::string* why) {
  out->clear();
  dat::IfaceConfig cfg;
  if (process_iface(&cfg, why)) {
    out->push_back(std::move(cfg));
    return true;
  }
  if (settings::get(settings::Var::kFiIa)) return false;
  // No interface named and none under the default name: every interface
  // the registry knows (the built-ins at least).
  for (const std::string& name : dat::list_ia_names()) {
    std::string err;
    if (dat::lookup_ia(name, &cfg, &err)) out->push_back(cfg);
  }
  if (out->empty()) *why += "; no other interface configured";
  return !out->empty();
}

bool stats_wanted() { return settings::on(settings::Var::kFiStats); }

sockaddr_in make_sin(uint32_t ip, uint16_t port) {
  sockaddr_in s{};
  s.sin_family = AF_INET;
  s.sin_port = htons(port);
  s.sin_addr.s_addr = htonl(ip);
  return s;
}

bool parse_sin(const void* addr, size_t len, uint32_t* ip, uint16_t* port) {
  if (addr == nullptr || len < sizeof(sockaddr_in)) return false;
  sockaddr_in s;
  std::memcpy(&s, addr, sizeof(s));
  if (s.sin_family != AF_INET) return false;
  *ip = ntohl(s.sin_addr.s_addr);
  *port = ntohs(s.sin_port);
  return true;
}

int to_fi(dat::Status st) {
  using dat::Type;
  if (!st.ok())
    FI_INFO(&g_prov, FI_LOG_CORE, "dat_core status type %u subtype %u\n",
            static_cast<unsigned>(st.type), static_cast<unsigned>(st.sub));
  switch (st.type) {
    case Type::SUCCESS:
      return 0;
    case Type::CONN_QUAL_IN_USE:
      return -FI_EADDRINUSE;
    case Type::INSUFFICIENT_RESOURCES:
      return st.sub == dat::Sub::RESOURCE_TEP ? -FI_EAGAIN : -FI_ENOMEM;
    case Type::INVALID_HANDLE:
    case Type::INVALID_PARAMETER:
      return -FI_EINVAL;
    case Type::INVALID_STATE:
      return st.sub == dat::Sub::INVALID_STATE_EP_UNCONNECTED ||
                     st.sub == dat::Sub::INVALID_STATE_EP_DISCONNECTED
                 ? -FI_ENOTCONN
                 : -FI_EOPBADSTATE;
    case Type::LENGTH_ERROR:
      return -FI_EMSGSIZE;
    case Type::MODEL_NOT_SUPPORTED:
    case Type::NOT_IMPLEMENTED:
      return -FI_ENOSYS;
    case Type::PROVIDER_NOT_FOUND:
      return -FI_ENODEV;
    case Type::PRIVILEGES_VIOLATION:
    case Type::PROTECTION_VIOLATION:
      return -FI_EACCES;
    case Type::QUEUE_EMPTY:
    case Type::QUEUE_FULL:
      return -FI_EAGAIN;
    case Type::TIMEOUT_EXPIRED:
      return -FI_ETIMEDOUT;
    case Type::INVALID_ADDRESS:
      return st.sub == dat::Sub::INVALID_ADDRESS_UNREACHABLE ? -FI_EHOSTUNREACH : -FI_EADDRNOTAVAIL;
    case Type::INTERRUPTED_CALL:
      return -FI_EINTR;
    case Type::ABORT:
      return -FI_ECANCELED;
    case Type::INTERNAL_ERROR:
      return -FI_EOTHER;
  }
  return -FI_EOTHER;
}

int no_bind(fid*, fid*, uint64_t) { return -FI_ENOSYS; }
int no_control(fid*, int, void*) { return -FI_ENOSYS; }
int no_ops_open(fid*, const char*, uint64_t, void**, void*) { return -FI_ENOSYS; }
int no_tostr(const fid*, char*, size_t) { return -FI_ENOSYS; }
int no_ops_set(fid*, const char*, uint64_t, void*, void*) { return -FI_ENOSYS; }

}  // namespace dpdat::ofi
