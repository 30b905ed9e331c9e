// The uDAPL 1.2 C entry points (libdat.so), over the dat_core objects: the
// entries both DAT versions share are front/entries.inc, the conversions,
// checks and the Status -> DAT_RETURN mapping front/convert.inc, both
// compiled here against the 1.2 headers (include/dat/); this file holds what
// only 1.2 has or does differently.  Every call may be made from any thread.

#include <arpa/inet.h>
#include <dat/udat.h>
#include <netinet/in.h>

#include <cstring>
#include <vector>

#include "../core.hpp"
#include "../ops.hpp"

using namespace dpdat::dat;  // NOLINT(google-build-using-namespace): C entry points only

#define DPDAT_FRONT_DAT2 0
#include "front/convert.inc"

extern "C" {

#define DPDAT_ENTRY(name) name
#include "front/entries.inc"
#undef DPDAT_ENTRY

// =========================================================================== IA

DAT_RETURN dat_ia_openv(const DAT_NAME_PTR name, DAT_COUNT async_qlen, DAT_EVD_HANDLE* async_evd,
                        DAT_IA_HANDLE* ia_out, DAT_UINT32 major, DAT_UINT32 minor,
                        DAT_BOOLEAN thread_safety) {
  (void)minor;
  (void)thread_safety;
  if (name == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG1);
  if (async_evd == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (ia_out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  if (major != DAT_VERSION_MAJOR) return err(Type::PROVIDER_NOT_FOUND);
  IfaceConfig cfg;
  std::string why;
  if (!lookup_ia(name, &cfg, &why)) return err(Type::PROVIDER_NOT_FOUND);
  return open_ia(cfg, async_qlen, async_evd, nullptr, ia_out);
}

DAT_RETURN dat_registry_list_providers(DAT_COUNT max, DAT_COUNT* returned,
                                       DAT_PROVIDER_INFO*(list[])) {
  if (returned == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  const std::vector<std::string> names = list_ia_names();
  if (max <= 0 || list == nullptr) {
    *returned = static_cast<DAT_COUNT>(names.size());
    if (max < 0) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG1);
    return DAT_SUCCESS;
  }
  DAT_COUNT n = 0;
  for (const std::string& nm : names) {
    if (n >= max) break;
    DAT_PROVIDER_INFO* p = list[n];
    if (p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
    std::memset(p, 0, sizeof(*p));
    std::snprintf(p->ia_name, sizeof(p->ia_name), "%s", nm.c_str());
    p->dapl_version_major = DAT_VERSION_MAJOR;
    p->dapl_version_minor = DAT_VERSION_MINOR;
    p->is_thread_safe = DAT_TRUE;
    ++n;
  }
  *returned = n;
  return DAT_SUCCESS;
}

DAT_RETURN dat_strerror(DAT_RETURN v, const char** major, const char** minor) {
  if (major == nullptr || minor == nullptr) return err(Type::INVALID_PARAMETER);
  const uint32_t type = DAT_GET_TYPE(v);
  const uint32_t sub = DAT_GET_SUBTYPE(v);
  const char* mj = nullptr;
  const char* mn = nullptr;
#define DPDAT_NAME_TYPE(n) \
  if (mj == nullptr && type == static_cast<uint32_t>(DAT_##n)) mj = "DAT_" #n;
  DPDAT_RETURN_TYPES(DPDAT_NAME_TYPE)
#undef DPDAT_NAME_TYPE
#define DPDAT_NAME_SUB(n) \
  if (mn == nullptr && sub == static_cast<uint32_t>(DAT_##n)) mn = "DAT_" #n;
  DPDAT_RETURN_SUBTYPES(DPDAT_NAME_SUB)
#undef DPDAT_NAME_SUB
  if (mj == nullptr || mn == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG1);
  *major = mj;
  *minor = mn;
  return DAT_SUCCESS;
}

// =========================================================================== CR

// (1.2 rejects without private data.)
DAT_RETURN dat_cr_reject(DAT_CR_HANDLE h) {
  return on_handle<HandleType::kCr>(h, cr_reject, nullptr, 0);
}

// ========================================================================== LMR

DAT_RETURN dat_lmr_create(DAT_IA_HANDLE h, DAT_MEM_TYPE type, DAT_REGION_DESCRIPTION region,
                          DAT_VLEN length, DAT_PZ_HANDLE pz_h, DAT_MEM_PRIV_FLAGS privs,
                          DAT_LMR_HANDLE* lmr_out, DAT_LMR_CONTEXT* lctx, DAT_RMR_CONTEXT* rctx,
                          DAT_VLEN* reg_size, DAT_VADDR* reg_addr) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  Pz* pz = lookup<Pz>(pz_h, HandleType::kPz);
  if (pz == nullptr || pz->ia->iface != ia->iface)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
  if (lmr_out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG7);
  const uint32_t pv = static_cast<uint32_t>(privs);
  if ((pv & ~static_cast<uint32_t>(DAT_MEM_PRIV_ALL_FLAG)) != 0)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG6);
  LmrSpec s;
  if (DAT_RETURN r = lmr_spec(ia, type, region, length, &s); r != DAT_SUCCESS) return r;
  return lmr_register(ia, pz, s, pv, lmr_out, lctx, rctx, reg_size, reg_addr);
}

DAT_RETURN dat_lmr_sync_rdma_read(DAT_IA_HANDLE h, const DAT_LMR_TRIPLET* seg, DAT_VLEN n) {
  return lmr_sync_checked(h, seg, n);
}

DAT_RETURN dat_lmr_sync_rdma_write(DAT_IA_HANDLE h, const DAT_LMR_TRIPLET* seg, DAT_VLEN n) {
  return lmr_sync_checked(h, seg, n);
}

// ========================================================================== RMR

DAT_RETURN dat_rmr_bind(DAT_RMR_HANDLE h, const DAT_LMR_TRIPLET* trip, DAT_MEM_PRIV_FLAGS privs,
                        DAT_EP_HANDLE ep_h, DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
                        DAT_RMR_CONTEXT* ctx_out) {
  Rmr* r = lookup<Rmr>(h, HandleType::kRmr);
  if (r == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_RMR);
  Ep* ep = lookup<Ep>(ep_h, HandleType::kEp);
  if (ep == nullptr || ep->ia->iface != r->ia->iface)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (trip == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (ctx_out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG7);
  const uint32_t pv = static_cast<uint32_t>(privs);
  if ((pv &
       ~static_cast<uint32_t>(DAT_MEM_PRIV_REMOTE_READ_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG)) != 0)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  uint32_t ctx = 0;
  Status st = rmr_bind(r, ep, trip->lmr_context, trip->virtual_address, trip->segment_length, pv,
                       cookie.as_64, static_cast<uint32_t>(flags), &ctx);
  if (st.ok()) *ctx_out = ctx;
  return to_dat(st);
}

}  // extern "C"
