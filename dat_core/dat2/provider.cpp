// The DAT 2.0 provider plug-in (libdaplodpdk.so.2): what OFED's libdat2
// loads through dat.conf.  Compiled against the system's <dat2/...> headers
// only.  Like the uDAPL 1.2 front (api/udat_api.cpp) it checks arguments,
// converts the DAT 2.0 structs and maps Status to DAT 2.0 return codes; the
// operations themselves are dat_core's (ops.hpp).  The entries both DAT
// versions share are front/entries.inc and the conversions
// front/convert.inc, both compiled here against the 2.0 headers; this file
// holds the registry glue, the IB extensions and what only 2.0 has or does
// differently.
//
// libdat2 dispatches every call through the first word of the handle, which
// core objects reserve for it: every object handed to the consumer carries
// its IA's DAT_PROVIDER pointer there.
//
// One dat.conf line = one IA name = one DAT_PROVIDER whose instance data
// (ia_params) is the dpdat interface configuration string.

#include <arpa/inet.h>
#include <netinet/in.h>

// <dat2/udat.h> first: the registry and extension headers need it.
#include <dat2/udat.h>
// (order matters)
#include <dat2/dat_ib_extensions.h>
#include <dat2/dat_registry.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <list>
#include <mutex>
#include <string>
#include <vector>

#include "core.hpp"
#include "ops.hpp"

using namespace dpdat::dat;  // NOLINT(google-build-using-namespace): C entry points only

namespace {

// ------------------------------------------------------------- providers

struct Provider {
  DAT_PROVIDER table{};
  std::string name;
  std::string config;
  DAT_BOOLEAN thread_safe = DAT_TRUE;
  // dat_ia_query's provider-specific attributes (the IB extension flags and
  // the interface's path MTU as "DAT_IB_TRANSPORT_MTU", which OFED's dtestsrq sizes its
  // buffers from); filled once under attrs_mu, a leaf lock (taken with an
  // interface's mu held, never the other way round).
  std::mutex attrs_mu;
  std::string ib_mtu;
  std::vector<DAT_NAMED_ATTR> attrs;
};

std::mutex g_mu;
std::list<Provider> g_providers;  // stable addresses; never shrinks while loaded

Provider* provider_of(const Object* o) {
  return static_cast<Provider*>(o->ia != nullptr ? o->ia->provider : nullptr);
}

// ------------------------------------------------------------- conversions

DAT_DTOS dto_op(dpdat::rc::WcOp op, bool has_imm) {
  switch (op) {
    case dpdat::rc::WcOp::kSend:
      return DAT_DTO_SEND;
    case dpdat::rc::WcOp::kWrite:
      return has_imm ? static_cast<DAT_DTOS>(DAT_IB_DTO_RDMA_WRITE_IMMED) : DAT_DTO_RDMA_WRITE;
    case dpdat::rc::WcOp::kRead:
      return DAT_DTO_RDMA_READ;
    case dpdat::rc::WcOp::kCompareSwap:
      return static_cast<DAT_DTOS>(DAT_IB_DTO_CMP_SWAP);
    case dpdat::rc::WcOp::kFetchAdd:
      return static_cast<DAT_DTOS>(DAT_IB_DTO_FETCH_ADD);
    case dpdat::rc::WcOp::kBind:
      return DAT_DTO_BIND_MW;
    case dpdat::rc::WcOp::kRecv:
      return has_imm ? static_cast<DAT_DTOS>(DAT_IB_DTO_RECV_MSG_IMMED) : DAT_DTO_RECEIVE;
    case dpdat::rc::WcOp::kRecvWriteImm:
      return static_cast<DAT_DTOS>(DAT_IB_DTO_RECV_IMMED);
  }
  return DAT_DTO_SEND;
}

static_assert(sizeof(DAT_IB_EXTENSION_EVENT_DATA) <= sizeof(DAT_EVENT::event_extension_data));

// DTO completions of the IB extension operations are DAT_IB_DTO_EVENTs whose
// extension data names the operation (and carries the immediate data).
bool extension_dto(const Event& ev, DAT_IB_EXTENSION_EVENT_DATA* x) {
  using dpdat::rc::WcOp;
  if (ev.op == WcOp::kWrite && ev.has_imm) {
    x->type = DAT_IB_RDMA_WRITE_IMMED;
  } else if (ev.op == WcOp::kRecvWriteImm) {
    x->type = DAT_IB_RDMA_WRITE_IMMED_DATA;
    x->val.immed.data = ev.imm;
  } else if (ev.op == WcOp::kRecv && ev.has_imm) {
    x->type = DAT_IB_RECV_IMMED_DATA;
    x->val.immed.data = ev.imm;
  } else if (ev.op == WcOp::kFetchAdd) {
    x->type = DAT_IB_FETCH_AND_ADD;
  } else if (ev.op == WcOp::kCompareSwap) {
    x->type = DAT_IB_CMP_AND_SWAP;
  } else {
    return false;
  }
  x->status = ev.status == DtoStatus::kSuccess ? DAT_OP_SUCCESS : DAT_IB_OP_ERR;
  return true;
}

}  // namespace

#define DPDAT_FRONT_DAT2 1
#include "front/convert.inc"

namespace {

// Memory privileges this front accepts: DAT's plus the IB remote atomic one.
constexpr uint32_t kLmrPrivs =
    static_cast<uint32_t>(DAT_MEM_PRIV_ALL_FLAG) | DAT_IB_MEM_PRIV_REMOTE_ATOMIC;
constexpr uint32_t kRmrPrivs = static_cast<uint32_t>(DAT_MEM_PRIV_REMOTE_READ_FLAG) |
                               DAT_MEM_PRIV_REMOTE_WRITE_FLAG | DAT_IB_MEM_PRIV_REMOTE_ATOMIC;

// ================================================================ IA

// dat_ia_query's provider attributes that are the plug-in's own: thread
// safety as the registry entry asked, and the IB extension attributes.
DAT_NAMED_ATTR g_ib_attrs[] = {
    {DAT_IB_ATTR_FETCH_AND_ADD, "TRUE"},
    {DAT_IB_ATTR_CMP_AND_SWAP, "TRUE"},
    {DAT_IB_ATTR_IMMED_DATA, "TRUE"},
};

void add_provider_specific(const Ia* ia, DAT_PROVIDER_ATTR* out) {
  DAT_PROVIDER_ATTR& pa = *out;
  Provider* pv = provider_of(ia);
  pa.is_thread_safe = pv != nullptr ? pv->thread_safe : DAT_TRUE;
  if (pv != nullptr) {
    std::lock_guard<std::mutex> g(pv->attrs_mu);
    if (pv->attrs.empty()) {
      pv->ib_mtu = std::to_string(ia->iface->pmtu);
      pv->attrs.assign(std::begin(g_ib_attrs), std::end(g_ib_attrs));
      pv->attrs.push_back(DAT_NAMED_ATTR{"DAT_IB_TRANSPORT_MTU", pv->ib_mtu.c_str()});
    }
    pa.num_provider_specific_attr = static_cast<DAT_COUNT>(pv->attrs.size());
    pa.provider_specific_attr = pv->attrs.data();
  } else {
    pa.num_provider_specific_attr = static_cast<DAT_COUNT>(std::size(g_ib_attrs));
    pa.provider_specific_attr = g_ib_attrs;
  }
}

#define DPDAT_ENTRY(name) name##_fn
#include "front/entries.inc"
#undef DPDAT_ENTRY

DAT_RETURN dat_ia_open_fn(const DAT_NAME_PTR name, DAT_COUNT async_qlen, DAT_EVD_HANDLE* async_evd,
                          DAT_IA_HANDLE* ia_out) {
  if (name == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG1);
  if (async_evd == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (ia_out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  Provider* p = nullptr;
  {
    std::lock_guard<std::mutex> g(g_mu);
    for (Provider& q : g_providers)
      if (q.name == name) p = &q;
  }
  if (p == nullptr) return err(Type::PROVIDER_NOT_FOUND);
  IfaceConfig cfg;
  std::string why;
  // Empty instance data: the entry names an interface configured as every
  // front's are (DPDAT_IA_<NAME>, the DPDAT_CONF file, the built-ins), as the
  // lines the dpdat-dapl2 package registers do.
  if (!resolve_ia(p->name, p->config, &cfg, &why)) {
    std::fprintf(stderr, "dpdat: dat.conf entry %s: %s\n", p->name.c_str(), why.c_str());
    return err(Type::PROVIDER_NOT_FOUND);
  }
  cfg.name = p->name;
  return open_ia(cfg, async_qlen, async_evd, &p->table, ia_out);
}

DAT_RETURN dat_ia_ha_related_fn(DAT_IA_HANDLE h, const DAT_NAME_PTR name, DAT_BOOLEAN* answer) {
  if (lookup<Ia>(h, HandleType::kIa) == nullptr)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (name == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (answer == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  *answer = DAT_FALSE;  // no high-availability pairing of interfaces (ha_supported = FALSE)
  return DAT_SUCCESS;
}

// ================================================================ CNO

DAT_RETURN dat_cno_fd_create_fn(DAT_IA_HANDLE h, DAT_FD* fd, DAT_CNO_HANDLE* o) {
  if (lookup<Ia>(h, HandleType::kIa) == nullptr)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (fd == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (o == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  // CNOs here are woken by dpdat's own progress, not by a kernel file
  // descriptor: the FD proxy model is not offered.
  return err(Type::MODEL_NOT_SUPPORTED);
}

// dat_cno_trigger: the EVD that triggered the CNO, without waiting.
DAT_RETURN dat_cno_trigger_fn(DAT_CNO_HANDLE h, DAT_EVD_HANDLE* evd_out) {
  Cno* c = lookup<Cno>(h, HandleType::kCno);
  if (c == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  if (evd_out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Evd* e = nullptr;
  Status st = cno_wait(c, 0, &e);
  if (st.ok()) *evd_out = e;
  return to_dat(st);
}

// ================================================================ EP

// Connects through a communicator (CSP model): not offered here.
DAT_RETURN dat_ep_common_connect_fn(DAT_EP_HANDLE h, DAT_IA_ADDRESS_PTR, DAT_TIMEOUT, DAT_COUNT,
                                    const DAT_PVOID) {
  if (lookup<Ep>(h, HandleType::kEp) == nullptr)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  return err(Type::MODEL_NOT_SUPPORTED);
}

DAT_RETURN dat_ep_post_send_with_invalidate_fn(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET* iov,
                                               DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
                                               DAT_BOOLEAN invalidate, DAT_RMR_CONTEXT) {
  if (lookup<Ep>(h, HandleType::kEp) == nullptr)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  // Remote invalidation of an RMR by a SEND is not offered.
  if (invalidate != DAT_FALSE) return err(Type::MODEL_NOT_SUPPORTED);
  return post(h, n, iov, cookie, nullptr, flags, dpdat::rc::WrOp::kSend);
}

DAT_RETURN dat_ep_post_rdma_read_to_rmr_fn(DAT_EP_HANDLE h, const DAT_RMR_TRIPLET*, DAT_DTO_COOKIE,
                                           const DAT_RMR_TRIPLET*, DAT_COMPLETION_FLAGS) {
  if (lookup<Ep>(h, HandleType::kEp) == nullptr)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  // READ into a remote-access RMR (iWARP's model): not offered
  // (rdma_read_lmr_rmr_context_exposure = FALSE).
  return err(Type::MODEL_NOT_SUPPORTED);
}

// ================================================================ CSP

// Communicator service points (DAT 2.0 CSP): not offered here.
DAT_RETURN dat_csp_create_fn(DAT_IA_HANDLE h, DAT_COMM*, DAT_IA_ADDRESS_PTR, DAT_EVD_HANDLE,
                             DAT_CSP_HANDLE*) {
  if (lookup<Ia>(h, HandleType::kIa) == nullptr)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  return err(Type::MODEL_NOT_SUPPORTED);
}
DAT_RETURN dat_csp_query_fn(DAT_CSP_HANDLE, DAT_CSP_PARAM_MASK, DAT_CSP_PARAM*) {
  return err(Type::INVALID_HANDLE);  // no CSP handle can exist
}
DAT_RETURN dat_csp_free_fn(DAT_CSP_HANDLE) { return err(Type::INVALID_HANDLE); }

// ================================================================ CR

DAT_RETURN dat_cr_reject_fn(DAT_CR_HANDLE h, DAT_COUNT pdata_size, const DAT_PVOID pdata) {
  Cr* cr = lookup<Cr>(h, HandleType::kCr);
  if (cr == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CR);
  if (pdata_size < 0 || (pdata_size > 0 && pdata == nullptr))
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  return to_dat(
      cr_reject(cr, static_cast<const uint8_t*>(pdata), static_cast<uint32_t>(pdata_size)));
}

// ================================================================ LMR

DAT_RETURN dat_lmr_create_fn(DAT_IA_HANDLE h, DAT_MEM_TYPE type, DAT_REGION_DESCRIPTION region,
                             DAT_VLEN length, DAT_PZ_HANDLE pz_h, DAT_MEM_PRIV_FLAGS privs,
                             DAT_VA_TYPE va_type, DAT_LMR_HANDLE* lmr_out, DAT_LMR_CONTEXT* lctx,
                             DAT_RMR_CONTEXT* rctx, DAT_VLEN* reg_size, DAT_VADDR* reg_addr) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  Pz* pz = lookup<Pz>(pz_h, HandleType::kPz);
  if (pz == nullptr || pz->ia->iface != ia->iface)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
  if (lmr_out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG8);
  const uint32_t pv = static_cast<uint32_t>(privs);
  if ((pv & ~kLmrPrivs) != 0) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG6);
  if (va_type != DAT_VA_TYPE_VA && va_type != DAT_VA_TYPE_ZB)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG7);
  LmrSpec s;
  if (DAT_RETURN r = lmr_spec(ia, type, region, length, &s); r != DAT_SUCCESS) return r;
  // Zero-based addressing: consumers name the region's bytes 0..length-1.
  if (va_type == DAT_VA_TYPE_ZB && s.type != MemType::kLmr) s.va = 0;
  return lmr_register(ia, pz, s, pv, lmr_out, lctx, rctx, reg_size, reg_addr);
}

// ================================================================ RMR

DAT_RETURN dat_rmr_bind_fn(DAT_RMR_HANDLE h, DAT_LMR_HANDLE lmr_h, const DAT_LMR_TRIPLET* trip,
                           DAT_MEM_PRIV_FLAGS privs, DAT_VA_TYPE va_type, DAT_EP_HANDLE ep_h,
                           DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
                           DAT_RMR_CONTEXT* ctx_out) {
  Rmr* r = lookup<Rmr>(h, HandleType::kRmr);
  if (r == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_RMR);
  Ep* ep = lookup<Ep>(ep_h, HandleType::kEp);
  if (ep == nullptr || ep->ia->iface != r->ia->iface)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (trip == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (ctx_out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG9);
  const uint32_t pv = static_cast<uint32_t>(privs);
  if ((pv & ~kRmrPrivs) != 0) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  if (va_type != DAT_VA_TYPE_VA && va_type != DAT_VA_TYPE_ZB)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  uint32_t lmr_ctx = trip->lmr_context;
  if (trip->segment_length > 0) {
    // The LMR handle names the region; its context must be the triplet's.
    Lmr* l = lookup<Lmr>(lmr_h, HandleType::kLmr);
    if (l == nullptr || l->ia->iface != r->ia->iface)
      return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_LMR);
    if (l->lmr_context != trip->lmr_context) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
    // The RMR exposes the LMR's own address space: zero-based exactly when
    // the LMR was registered zero-based.
    if ((va_type == DAT_VA_TYPE_ZB) != (l->va == 0)) return err(Type::MODEL_NOT_SUPPORTED);
    lmr_ctx = l->lmr_context;
  }
  uint32_t ctx = 0;
  Status st = rmr_bind(r, ep, lmr_ctx, trip->virtual_address, trip->segment_length, pv,
                       cookie.as_64, static_cast<uint32_t>(flags), &ctx);
  if (st.ok()) *ctx_out = ctx;
  return to_dat(st);
}

// ================================================================ IB extensions

// dat_extension_op(handle, op, ...): the arguments are those of the
// dat_ib_post_* macros of <dat2/dat_ib_extensions.h>.
DAT_RETURN dat_extendedop_fn(DAT_HANDLE h, DAT_EXTENDED_OP op, va_list args) {
  switch (static_cast<int>(op)) {
    case DAT_IB_RDMA_WRITE_IMMED_OP: {
      const DAT_COUNT n = va_arg(args, DAT_COUNT);
      const DAT_LMR_TRIPLET* lbuf = va_arg(args, DAT_LMR_TRIPLET*);
      const DAT_DTO_COOKIE cookie = va_arg(args, DAT_DTO_COOKIE);
      const DAT_RMR_TRIPLET* rbuf = va_arg(args, DAT_RMR_TRIPLET*);
      const auto imm = static_cast<uint32_t>(va_arg(args, unsigned int));
      const auto flags = static_cast<DAT_COMPLETION_FLAGS>(va_arg(args, int));
      if (rbuf == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
      return post(h, n, lbuf, cookie, rbuf, flags, dpdat::rc::WrOp::kWriteImm, imm);
    }
    case DAT_IB_FETCH_AND_ADD_OP: {
      const uint64_t add = va_arg(args, DAT_UINT64);
      const DAT_LMR_TRIPLET* lbuf = va_arg(args, DAT_LMR_TRIPLET*);
      const DAT_DTO_COOKIE cookie = va_arg(args, DAT_DTO_COOKIE);
      const DAT_RMR_TRIPLET* rbuf = va_arg(args, DAT_RMR_TRIPLET*);
      const auto flags = static_cast<DAT_COMPLETION_FLAGS>(va_arg(args, int));
      if (lbuf == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
      if (rbuf == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG6);
      return post(h, 1, lbuf, cookie, rbuf, flags, dpdat::rc::WrOp::kFetchAdd, 0, 0, add);
    }
    case DAT_IB_CMP_AND_SWAP_OP: {
      const uint64_t cmp = va_arg(args, DAT_UINT64);
      const uint64_t swap = va_arg(args, DAT_UINT64);
      const DAT_LMR_TRIPLET* lbuf = va_arg(args, DAT_LMR_TRIPLET*);
      const DAT_DTO_COOKIE cookie = va_arg(args, DAT_DTO_COOKIE);
      const DAT_RMR_TRIPLET* rbuf = va_arg(args, DAT_RMR_TRIPLET*);
      const auto flags = static_cast<DAT_COMPLETION_FLAGS>(va_arg(args, int));
      if (lbuf == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
      if (rbuf == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG7);
      return post(h, 1, lbuf, cookie, rbuf, flags, dpdat::rc::WrOp::kCompareSwap, 0, cmp, swap);
    }
    default:
      if (lookup_any(h) == nullptr) return err(Type::INVALID_HANDLE);
      // The other IB extension operations (UD sends and address handles,
      // counters, collectives) are not offered; anything else is no
      // operation at all.
      if ((op >= DAT_IB_UD_SEND_OP && op <= DAT_IB_UD_AH_FREE_OP) || op == DAT_IB_OPEN_QUERY_OP ||
          op == DAT_IB_CLOSE_QUERY_OP)
        return err(Type::MODEL_NOT_SUPPORTED);
      return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  }
}

void fill_table(DAT_PROVIDER* t, const char* name) {
  t->device_name = name;
  t->extension = nullptr;
  t->ia_open_func = dat_ia_open_fn;
  t->ia_query_func = dat_ia_query_fn;
  t->ia_close_func = dat_ia_close_fn;
  t->set_consumer_context_func = dat_set_consumer_context_fn;
  t->get_consumer_context_func = dat_get_consumer_context_fn;
  t->get_handle_type_func = dat_get_handle_type_fn;
  t->cno_create_func = dat_cno_create_fn;
  t->cno_modify_agent_func = dat_cno_modify_agent_fn;
  t->cno_query_func = dat_cno_query_fn;
  t->cno_free_func = dat_cno_free_fn;
  t->cno_wait_func = dat_cno_wait_fn;
  t->cr_query_func = dat_cr_query_fn;
  t->cr_accept_func = dat_cr_accept_fn;
  t->cr_reject_func = dat_cr_reject_fn;
  t->cr_handoff_func = dat_cr_handoff_fn;
  t->evd_create_func = dat_evd_create_fn;
  t->evd_query_func = dat_evd_query_fn;
  t->evd_modify_cno_func = dat_evd_modify_cno_fn;
  t->evd_enable_func = dat_evd_enable_fn;
  t->evd_disable_func = dat_evd_disable_fn;
  t->evd_wait_func = dat_evd_wait_fn;
  t->evd_resize_func = dat_evd_resize_fn;
  t->evd_post_se_func = dat_evd_post_se_fn;
  t->evd_dequeue_func = dat_evd_dequeue_fn;
  t->evd_free_func = dat_evd_free_fn;
  t->ep_create_func = dat_ep_create_fn;
  t->ep_query_func = dat_ep_query_fn;
  t->ep_modify_func = dat_ep_modify_fn;
  t->ep_connect_func = dat_ep_connect_fn;
  t->ep_dup_connect_func = dat_ep_dup_connect_fn;
  t->ep_disconnect_func = dat_ep_disconnect_fn;
  t->ep_post_send_func = dat_ep_post_send_fn;
  t->ep_post_recv_func = dat_ep_post_recv_fn;
  t->ep_post_rdma_read_func = dat_ep_post_rdma_read_fn;
  t->ep_post_rdma_write_func = dat_ep_post_rdma_write_fn;
  t->ep_get_status_func = dat_ep_get_status_fn;
  t->ep_free_func = dat_ep_free_fn;
  t->lmr_create_func = dat_lmr_create_fn;
  t->lmr_query_func = dat_lmr_query_fn;
  t->lmr_free_func = dat_lmr_free_fn;
  t->rmr_create_func = dat_rmr_create_fn;
  t->rmr_query_func = dat_rmr_query_fn;
  t->rmr_bind_func = dat_rmr_bind_fn;
  t->rmr_free_func = dat_rmr_free_fn;
  t->psp_create_func = dat_psp_create_fn;
  t->psp_query_func = dat_psp_query_fn;
  t->psp_free_func = dat_psp_free_fn;
  t->rsp_create_func = dat_rsp_create_fn;
  t->rsp_query_func = dat_rsp_query_fn;
  t->rsp_free_func = dat_rsp_free_fn;
  t->pz_create_func = dat_pz_create_fn;
  t->pz_query_func = dat_pz_query_fn;
  t->pz_free_func = dat_pz_free_fn;
  t->psp_create_any_func = dat_psp_create_any_fn;
  t->ep_reset_func = dat_ep_reset_fn;
  t->evd_set_unwaitable_func = dat_evd_set_unwaitable_fn;
  t->evd_clear_unwaitable_func = dat_evd_clear_unwaitable_fn;
  t->lmr_sync_rdma_read_func = lmr_sync_checked;
  t->lmr_sync_rdma_write_func = lmr_sync_checked;
  t->ep_create_with_srq_func = dat_ep_create_with_srq_fn;
  t->ep_recv_query_func = dat_ep_recv_query_fn;
  t->ep_set_watermark_func = dat_ep_set_watermark_fn;
  t->srq_create_func = dat_srq_create_fn;
  t->srq_free_func = dat_srq_free_fn;
  t->srq_post_recv_func = dat_srq_post_recv_fn;
  t->srq_query_func = dat_srq_query_fn;
  t->srq_resize_func = dat_srq_resize_fn;
  t->srq_set_lw_func = dat_srq_set_lw_fn;
  t->csp_create_func = dat_csp_create_fn;
  t->csp_query_func = dat_csp_query_fn;
  t->csp_free_func = dat_csp_free_fn;
  t->ep_common_connect_func = dat_ep_common_connect_fn;
  t->rmr_create_for_ep_func = dat_rmr_create_fn;  // RMRs are EP-scoped here anyway
  t->ep_post_send_with_invalidate_func = dat_ep_post_send_with_invalidate_fn;
  t->ep_post_rdma_read_to_rmr_func = dat_ep_post_rdma_read_to_rmr_fn;
  t->cno_fd_create_func = dat_cno_fd_create_fn;
  t->cno_trigger_func = dat_cno_trigger_fn;
  t->ia_ha_related_func = dat_ia_ha_related_fn;
  t->handle_extendedop_func = dat_extendedop_fn;
}

}  // namespace

extern "C" {

// Called by libdat2 when a dat.conf entry naming this library is first
// opened: info->ia_name is the entry's IA name, instance_data its ia_params
// (the dpdat configuration string).
__attribute__((visibility("default"))) void dat_provider_init(const DAT_PROVIDER_INFO* info,
                                                              const char* instance_data) {
  if (info == nullptr) return;
  Provider* p = nullptr;
  {
    std::lock_guard<std::mutex> g(g_mu);
    for (Provider& q : g_providers)
      if (q.name == info->ia_name) p = &q;
    if (p == nullptr) {
      p = &g_providers.emplace_back();
      p->name = info->ia_name;
    }
    p->config = instance_data != nullptr ? instance_data : "";
    p->thread_safe = info->is_thread_safe;
    fill_table(&p->table, p->name.c_str());
  }
  const DAT_RETURN r = dat_registry_add_provider(&p->table, info);
  if (r != DAT_SUCCESS)
    std::fprintf(stderr, "dpdat: dat_registry_add_provider(%s) failed: 0x%x\n", p->name.c_str(),
                 static_cast<unsigned>(r));
}

__attribute__((visibility("default"))) void dat_provider_fini(const DAT_PROVIDER_INFO* info) {
  if (info == nullptr) return;
  Provider* p = nullptr;
  {
    std::lock_guard<std::mutex> g(g_mu);
    for (Provider& q : g_providers)
      if (q.name == info->ia_name) p = &q;
  }
  // The entry stays in g_providers (the library is never unloaded: -z
  // nodelete), so a later dat_provider_init for the same name reuses it.
  if (p != nullptr) (void)dat_registry_remove_provider(&p->table, info);
}

}  // extern "C"
