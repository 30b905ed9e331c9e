// The DAT 2.0 provider plug-in (libdaplodpdk.so.2): what OFED's libdat2
// loads through dat.conf.  Compiled against the system's <dat2/...> headers
// only.  Like the uDAPL 1.2 front (api/udat_api.cpp) it checks arguments,
// converts the DAT 2.0 structs and maps Status to DAT 2.0 return codes; the
// operations themselves are dat_core's (ops.hpp).
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

DAT_RETURN ia_open_fn(const DAT_NAME_PTR name, DAT_COUNT async_qlen, DAT_EVD_HANDLE* async_evd,
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
  if (!parse_iface_config(p->config, &cfg, &why)) {
    std::fprintf(stderr, "dpdat: dat.conf entry %s: %s\n", p->name.c_str(), why.c_str());
    return err(Type::PROVIDER_NOT_FOUND);
  }
  cfg.name = p->name;
  Evd* given = nullptr;
  if (*async_evd != DAT_HANDLE_NULL) {
    given = lookup<Evd>(*async_evd, HandleType::kEvd);
    if (given == nullptr || (given->flags & evd_flag::kAsync) == 0)
      return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_ASYNC);
  }
  Ia* ia = nullptr;
  Status st = ia_open(cfg, async_qlen, given, &p->table, &ia);
  if (!st.ok()) return to_dat(st);
  if (given == nullptr) *async_evd = ia->async_evd;
  *ia_out = ia;
  return DAT_SUCCESS;
}

DAT_RETURN ia_close_fn(DAT_IA_HANDLE h, DAT_CLOSE_FLAGS flags) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  return to_dat(ia_close(ia, flags == DAT_CLOSE_GRACEFUL_FLAG));
}

DAT_NAMED_ATTR g_ib_attrs[] = {
    {DAT_IB_ATTR_FETCH_AND_ADD, "TRUE"},
    {DAT_IB_ATTR_CMP_AND_SWAP, "TRUE"},
    {DAT_IB_ATTR_IMMED_DATA, "TRUE"},
};

DAT_RETURN ia_query_fn(DAT_IA_HANDLE h, DAT_EVD_HANDLE* async_evd, DAT_IA_ATTR_MASK ia_mask,
                       DAT_IA_ATTR* ia_attr, DAT_PROVIDER_ATTR_MASK pr_mask,
                       DAT_PROVIDER_ATTR* pr_attr) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (ia_mask != 0 && ia_attr == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  if (pr_mask != 0 && pr_attr == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG6);
  Iface* f = ia->iface;
  const Provider* p = provider_of(ia);
  Lock lk(f->mu);
  if (async_evd != nullptr) *async_evd = ia->async_evd;
  if (ia_attr != nullptr && ia_mask != 0) fill_ia_attr(ia, ia_attr);
  if (pr_attr != nullptr && pr_mask != 0) {
    fill_provider_attr(f->limits, pr_attr);
    DAT_PROVIDER_ATTR& pa = *pr_attr;
    pa.is_thread_safe = p != nullptr ? p->thread_safe : DAT_TRUE;
    if (Provider* pv = provider_of(ia); pv != nullptr) {
      std::lock_guard<std::mutex> g(pv->attrs_mu);
      if (pv->attrs.empty()) {
        pv->ib_mtu = std::to_string(f->pmtu);
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
  return DAT_SUCCESS;
}

DAT_RETURN set_consumer_context_fn(DAT_HANDLE h, DAT_CONTEXT ctx) {
  Object* o = lookup_any(h);
  if (o == nullptr) return err(Type::INVALID_HANDLE);
  Lock lk(o->ia->iface->mu);
  o->context = ctx.as_64;
  o->context_set = true;
  return DAT_SUCCESS;
}

DAT_RETURN get_consumer_context_fn(DAT_HANDLE h, DAT_CONTEXT* ctx) {
  Object* o = lookup_any(h);
  if (o == nullptr) return err(Type::INVALID_HANDLE);
  if (ctx == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Lock lk(o->ia->iface->mu);
  ctx->as_64 = o->context_set ? o->context : 0;
  return DAT_SUCCESS;
}

DAT_RETURN get_handle_type_fn(DAT_HANDLE h, DAT_HANDLE_TYPE* type) {
  Object* o = lookup_any(h);
  if (o == nullptr) return err(Type::INVALID_HANDLE);
  if (type == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  switch (o->type) {
    case HandleType::kIa:
      *type = DAT_HANDLE_TYPE_IA;
      break;
    case HandleType::kEp:
      *type = DAT_HANDLE_TYPE_EP;
      break;
    case HandleType::kLmr:
      *type = DAT_HANDLE_TYPE_LMR;
      break;
    case HandleType::kRmr:
      *type = DAT_HANDLE_TYPE_RMR;
      break;
    case HandleType::kPz:
      *type = DAT_HANDLE_TYPE_PZ;
      break;
    case HandleType::kPsp:
      *type = DAT_HANDLE_TYPE_PSP;
      break;
    case HandleType::kRsp:
      *type = DAT_HANDLE_TYPE_RSP;
      break;
    case HandleType::kCr:
      *type = DAT_HANDLE_TYPE_CR;
      break;
    case HandleType::kCno:
      *type = DAT_HANDLE_TYPE_CNO;
      break;
    case HandleType::kEvd:
      *type = DAT_HANDLE_TYPE_EVD;
      break;
    case HandleType::kSrq:
      *type = DAT_HANDLE_TYPE_SRQ;
      break;
  }
  return DAT_SUCCESS;
}

DAT_RETURN ia_ha_related_fn(DAT_IA_HANDLE h, const DAT_NAME_PTR name, DAT_BOOLEAN* answer) {
  if (lookup<Ia>(h, HandleType::kIa) == nullptr)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (name == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (answer == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  *answer = DAT_FALSE;  // no high-availability pairing of interfaces (ha_supported = FALSE)
  return DAT_SUCCESS;
}

// ================================================================ PZ

DAT_RETURN pz_create_fn(DAT_IA_HANDLE h, DAT_PZ_HANDLE* o) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (o == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Pz* pz = nullptr;
  Status st = pz_create(ia, &pz);
  if (st.ok()) *o = pz;
  return to_dat(st);
}

DAT_RETURN pz_query_fn(DAT_PZ_HANDLE h, DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM* p) {
  Pz* pz = lookup<Pz>(h, HandleType::kPz);
  if (pz == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p != nullptr) p->ia_handle = pz->ia;
  return DAT_SUCCESS;
}

DAT_RETURN pz_free_fn(DAT_PZ_HANDLE h) {
  Pz* pz = lookup<Pz>(h, HandleType::kPz);
  if (pz == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
  return to_dat(pz_free(pz));
}

// ================================================================ EVD

DAT_RETURN evd_create_fn(DAT_IA_HANDLE h, DAT_COUNT qlen, DAT_CNO_HANDLE cno_h, DAT_EVD_FLAGS flags,
                         DAT_EVD_HANDLE* o) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (o == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  Cno* cno = nullptr;
  if (cno_h != DAT_HANDLE_NULL) {
    cno = lookup<Cno>(cno_h, HandleType::kCno);
    if (cno == nullptr || cno->ia != ia) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  }
  // DAT_IB_EVD_EXTENSION_FLAG: extension events arrive on DTO EVDs anyway.
  uint32_t fl = static_cast<uint32_t>(flags) & ~static_cast<uint32_t>(DAT_IB_EVD_EXTENSION_FLAG);
  if ((static_cast<uint32_t>(flags) & DAT_IB_EVD_EXTENSION_FLAG) != 0) fl |= evd_flag::kDto;
  Evd* e = nullptr;
  Status st = evd_create(ia, qlen, cno, fl, &e);
  if (st.ok()) *o = e;
  return to_dat(st);
}

DAT_RETURN evd_query_fn(DAT_EVD_HANDLE h, DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM* p) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p == nullptr) return DAT_SUCCESS;
  Lock lk(e->ia->iface->mu);
  p->ia_handle = e->ia;
  p->evd_qlen = static_cast<DAT_COUNT>(e->qlen);
  p->evd_state =
      static_cast<DAT_EVD_STATE>((e->enabled ? DAT_EVD_STATE_ENABLED : DAT_EVD_STATE_DISABLED) |
                                 (e->waitable ? DAT_EVD_STATE_WAITABLE : DAT_EVD_STATE_UNWAITABLE));
  p->cno_handle = e->cno;
  p->evd_flags = static_cast<DAT_EVD_FLAGS>(e->flags);
  return DAT_SUCCESS;
}

DAT_RETURN evd_modify_cno_fn(DAT_EVD_HANDLE h, DAT_CNO_HANDLE cno_h) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  Cno* cno = nullptr;
  if (cno_h != DAT_HANDLE_NULL) {
    cno = lookup<Cno>(cno_h, HandleType::kCno);
    if (cno == nullptr || cno->ia != e->ia)
      return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  }
  return to_dat(evd_modify_cno(e, cno));
}

DAT_RETURN evd_enable_fn(DAT_EVD_HANDLE h) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  return to_dat(evd_set_enabled(e, true));
}

DAT_RETURN evd_disable_fn(DAT_EVD_HANDLE h) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  return to_dat(evd_set_enabled(e, false));
}

DAT_RETURN evd_set_unwaitable_fn(DAT_EVD_HANDLE h) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  return to_dat(evd_set_waitable(e, false));
}

DAT_RETURN evd_clear_unwaitable_fn(DAT_EVD_HANDLE h) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  return to_dat(evd_set_waitable(e, true));
}

DAT_RETURN evd_wait_fn(DAT_EVD_HANDLE h, DAT_TIMEOUT timeout, DAT_COUNT threshold, DAT_EVENT* event,
                       DAT_COUNT* nmore) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  if (event == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  Event ev;
  uint32_t left = 0;
  Status st = evd_wait(e, to_us(timeout), threshold, &ev, &left);
  if (st.ok()) to_dat_event(ev, event);
  if ((st.ok() || st.type == Type::TIMEOUT_EXPIRED) && nmore != nullptr)
    *nmore = static_cast<DAT_COUNT>(left);
  return to_dat(st);
}

DAT_RETURN evd_dequeue_fn(DAT_EVD_HANDLE h, DAT_EVENT* event) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  if (event == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Event ev;
  Status st = evd_dequeue(e, &ev);
  if (st.ok()) to_dat_event(ev, event);
  return to_dat(st);
}

DAT_RETURN evd_resize_fn(DAT_EVD_HANDLE h, DAT_COUNT qlen) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  return to_dat(evd_resize(e, qlen));
}

DAT_RETURN evd_post_se_fn(DAT_EVD_HANDLE h, const DAT_EVENT* event) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  if (event == nullptr || event->event_number != DAT_SOFTWARE_EVENT)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  return to_dat(evd_post_se(e, event->event_data.software_event_data.pointer));
}

DAT_RETURN evd_free_fn(DAT_EVD_HANDLE h) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  return to_dat(evd_free(e));
}

// ================================================================ CNO

DAT_RETURN cno_create_fn(DAT_IA_HANDLE h, DAT_OS_WAIT_PROXY_AGENT agent, DAT_CNO_HANDLE* o) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (o == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  Cno* c = nullptr;
  Status st =
      cno_create(ia, agent.instance_data, reinterpret_cast<AgentFn>(agent.proxy_agent_func), &c);
  if (st.ok()) *o = c;
  return to_dat(st);
}

DAT_RETURN cno_fd_create_fn(DAT_IA_HANDLE h, DAT_FD* fd, DAT_CNO_HANDLE* o) {
  if (lookup<Ia>(h, HandleType::kIa) == nullptr)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (fd == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (o == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  // CNOs here are woken by dpdat's own progress, not by a kernel file
  // descriptor: the FD proxy model is not offered.
  return err(Type::MODEL_NOT_SUPPORTED);
}

DAT_RETURN cno_modify_agent_fn(DAT_CNO_HANDLE h, DAT_OS_WAIT_PROXY_AGENT agent) {
  Cno* c = lookup<Cno>(h, HandleType::kCno);
  if (c == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  return to_dat(
      cno_modify_agent(c, agent.instance_data, reinterpret_cast<AgentFn>(agent.proxy_agent_func)));
}

DAT_RETURN cno_query_fn(DAT_CNO_HANDLE h, DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM* p) {
  Cno* c = lookup<Cno>(h, HandleType::kCno);
  if (c == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p == nullptr) return DAT_SUCCESS;
  Lock lk(c->ia->iface->mu);
  p->ia_handle = c->ia;
  p->proxy_type = DAT_PROXY_TYPE_AGENT;
  p->proxy.agent.instance_data = c->agent_instance;
  p->proxy.agent.proxy_agent_func = reinterpret_cast<DAT_AGENT_FUNC>(c->agent_fn);
  return DAT_SUCCESS;
}

DAT_RETURN cno_wait_fn(DAT_CNO_HANDLE h, DAT_TIMEOUT timeout, DAT_EVD_HANDLE* evd_out) {
  Cno* c = lookup<Cno>(h, HandleType::kCno);
  if (c == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  if (evd_out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  Evd* e = nullptr;
  Status st = cno_wait(c, to_us(timeout), &e);
  if (st.ok()) *evd_out = e;
  return to_dat(st);
}

// dat_cno_trigger: the EVD that triggered the CNO, without waiting.
DAT_RETURN cno_trigger_fn(DAT_CNO_HANDLE h, DAT_EVD_HANDLE* evd_out) {
  Cno* c = lookup<Cno>(h, HandleType::kCno);
  if (c == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  if (evd_out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Evd* e = nullptr;
  Status st = cno_wait(c, 0, &e);
  if (st.ok()) *evd_out = e;
  return to_dat(st);
}

DAT_RETURN cno_free_fn(DAT_CNO_HANDLE h) {
  Cno* c = lookup<Cno>(h, HandleType::kCno);
  if (c == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  return to_dat(cno_free(c));
}

// ================================================================ EP

// srq: dat_ep_create_with_srq's SRQ (checked), nullptr for dat_ep_create.
DAT_RETURN ep_create_common(DAT_IA_HANDLE h, DAT_PZ_HANDLE pz_h, DAT_EVD_HANDLE recv_h,
                            DAT_EVD_HANDLE req_h, DAT_EVD_HANDLE conn_h, const DAT_EP_ATTR* attr,
                            DAT_EP_HANDLE* o, Srq* srq) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (srq != nullptr && srq->ia->iface != ia->iface)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_SRQ);
  if (o == nullptr)
    return err(Type::INVALID_PARAMETER, srq != nullptr ? Sub::INVALID_ARG8 : Sub::INVALID_ARG7);
  Pz* pz = lookup<Pz>(pz_h, HandleType::kPz);
  if (pz == nullptr || pz->ia->iface != ia->iface)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
  Evd *recv = nullptr, *req = nullptr, *conn = nullptr;
  if (!evd_ok(ia, recv_h, evd_flag::kDto, &recv))
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_RECV);
  if (!evd_ok(ia, req_h, evd_flag::kDto | evd_flag::kRmrBind, &req))
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_REQUEST);
  if (!evd_ok(ia, conn_h, evd_flag::kConnection, &conn))
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_CONN);
  EpAttr a;
  if (attr != nullptr) {
    if (attr->service_type != DAT_SERVICE_TYPE_RC)
      return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG6);
    a = from_dat(*attr);
  }
  Ep* ep = nullptr;
  Status st = ep_create(ia, pz, recv, req, conn, attr != nullptr ? &a : nullptr, &ep, srq);
  if (st.ok()) *o = ep;
  return to_dat(st);
}

DAT_RETURN ep_create_fn(DAT_IA_HANDLE h, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv, DAT_EVD_HANDLE req,
                        DAT_EVD_HANDLE conn, const DAT_EP_ATTR* attr, DAT_EP_HANDLE* o) {
  return ep_create_common(h, pz, recv, req, conn, attr, o, nullptr);
}

DAT_RETURN ep_create_with_srq_fn(DAT_IA_HANDLE h, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv,
                                 DAT_EVD_HANDLE req, DAT_EVD_HANDLE conn, DAT_SRQ_HANDLE srq_h,
                                 const DAT_EP_ATTR* attr, DAT_EP_HANDLE* o) {
  if (lookup<Ia>(h, HandleType::kIa) == nullptr)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  Srq* srq = lookup<Srq>(srq_h, HandleType::kSrq);
  if (srq == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_SRQ);
  return ep_create_common(h, pz, recv, req, conn, attr, o, srq);
}

DAT_RETURN ep_query_fn(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK mask, DAT_EP_PARAM* p) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p == nullptr) return DAT_SUCCESS;
  Lock lk(ep->ia->iface->mu);
  std::memset(p, 0, sizeof(*p));
  p->ia_handle = ep->ia;
  p->ep_state = to_dat(ep->state);
  p->local_ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(ep->ia->local_sa);
  p->local_port_qual = ep->qp != nullptr ? ep->qp->qpn() : 0;
  fill_sa(ep->remote_sa, ep->peer_ip);
  p->remote_ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(ep->remote_sa);
  p->remote_port_qual = ep->conn_qual;
  p->pz_handle = ep->pz;
  p->recv_evd_handle = ep->recv_evd;
  p->request_evd_handle = ep->req_evd;
  p->connect_evd_handle = ep->conn_evd;
  p->srq_handle = ep->srq;
  to_dat(ep->attr, &p->ep_attr);
  return DAT_SUCCESS;
}

DAT_RETURN ep_modify_fn(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM* p) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  constexpr DAT_EP_PARAM_MASK kModifiable =
      DAT_EP_FIELD_PZ_HANDLE | DAT_EP_FIELD_RECV_EVD_HANDLE | DAT_EP_FIELD_REQUEST_EVD_HANDLE |
      DAT_EP_FIELD_CONNECT_EVD_HANDLE | DAT_EP_FIELD_EP_ATTR_ALL;
  if ((mask & ~kModifiable) != 0) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  return to_dat(ep_modify(ep, [mask, p](Ep* e, EpSettings* s) {
    if ((mask & DAT_EP_FIELD_PZ_HANDLE) != 0) {
      s->pz = lookup<Pz>(p->pz_handle, HandleType::kPz);
      if (s->pz == nullptr) return fail(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
    }
    if ((mask & DAT_EP_FIELD_RECV_EVD_HANDLE) != 0 &&
        !evd_ok(e->ia, p->recv_evd_handle, evd_flag::kDto, &s->recv))
      return fail(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_RECV);
    if ((mask & DAT_EP_FIELD_REQUEST_EVD_HANDLE) != 0 &&
        !evd_ok(e->ia, p->request_evd_handle, evd_flag::kDto | evd_flag::kRmrBind, &s->req))
      return fail(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_REQUEST);
    if ((mask & DAT_EP_FIELD_CONNECT_EVD_HANDLE) != 0 &&
        !evd_ok(e->ia, p->connect_evd_handle, evd_flag::kConnection, &s->conn))
      return fail(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_CONN);
    if ((mask & DAT_EP_FIELD_EP_ATTR_ALL) != 0) {
      DAT_EP_ATTR a;
      to_dat(s->attr, &a);
      const DAT_EP_ATTR& n = p->ep_attr;
      if (mask & DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE) a.max_message_size = n.max_message_size;
      if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE) a.max_rdma_size = n.max_rdma_size;
      if (mask & DAT_EP_FIELD_EP_ATTR_QOS) a.qos = n.qos;
      if (mask & DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS)
        a.recv_completion_flags = n.recv_completion_flags;
      if (mask & DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS)
        a.request_completion_flags = n.request_completion_flags;
      if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS) a.max_recv_dtos = n.max_recv_dtos;
      if (mask & DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS) a.max_request_dtos = n.max_request_dtos;
      if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV) a.max_recv_iov = n.max_recv_iov;
      if (mask & DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV) a.max_request_iov = n.max_request_iov;
      if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN) a.max_rdma_read_in = n.max_rdma_read_in;
      if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT) a.max_rdma_read_out = n.max_rdma_read_out;
      if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV) a.max_rdma_read_iov = n.max_rdma_read_iov;
      if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV)
        a.max_rdma_write_iov = n.max_rdma_write_iov;
      s->attr = from_dat(a);
    }
    return kOk;
  }));
}

DAT_RETURN ep_connect_fn(DAT_EP_HANDLE h, DAT_IA_ADDRESS_PTR addr, DAT_CONN_QUAL qual,
                         DAT_TIMEOUT timeout, DAT_COUNT pdata_size, const DAT_PVOID pdata,
                         DAT_QOS qos, DAT_CONNECT_FLAGS flags) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (addr == nullptr) return err(Type::INVALID_ADDRESS, Sub::INVALID_ADDRESS_MALFORMED);
  if (addr->sa_family != AF_INET)
    return err(Type::INVALID_ADDRESS, Sub::INVALID_ADDRESS_UNSUPPORTED);
  if (pdata_size < 0 || (pdata_size > 0 && pdata == nullptr))
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  if ((static_cast<uint32_t>(qos) & ~0x0Fu) != 0)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG7);
  if (flags != DAT_CONNECT_DEFAULT_FLAG && flags != DAT_CONNECT_MULTIPATH_FLAG)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG8);
  sockaddr_in sin{};
  std::memcpy(&sin, addr, sizeof(sin));
  return to_dat(ep_connect(ep, ntohl(sin.sin_addr.s_addr), qual, to_us(timeout),
                           static_cast<const uint8_t*>(pdata), static_cast<uint32_t>(pdata_size)));
}

// Connects through a communicator (CSP model): not offered here.
DAT_RETURN ep_common_connect_fn(DAT_EP_HANDLE h, DAT_IA_ADDRESS_PTR, DAT_TIMEOUT, DAT_COUNT,
                                const DAT_PVOID) {
  if (lookup<Ep>(h, HandleType::kEp) == nullptr)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  return err(Type::MODEL_NOT_SUPPORTED);
}

DAT_RETURN ep_dup_connect_fn(DAT_EP_HANDLE h, DAT_EP_HANDLE dup, DAT_TIMEOUT timeout,
                             DAT_COUNT pdata_size, const DAT_PVOID pdata, DAT_QOS qos) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  Ep* src = lookup<Ep>(dup, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (src == nullptr || src->ia->iface != ep->ia->iface)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  uint32_t ip = 0;
  uint64_t qual = 0;
  Status st = ep_peer(src, &ip, &qual);
  if (!st.ok()) return to_dat(st);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(ip);
  return ep_connect_fn(h, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&sin), qual, timeout, pdata_size,
                       pdata, qos, DAT_CONNECT_DEFAULT_FLAG);
}

DAT_RETURN ep_disconnect_fn(DAT_EP_HANDLE h, DAT_CLOSE_FLAGS flags) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  return to_dat(ep_disconnect(ep, flags == DAT_CLOSE_ABRUPT_FLAG));
}

// Every request: argument checks and triplet conversion, then ops::ep_post.
DAT_RETURN post(DAT_EP_HANDLE h, DAT_COUNT n, const DAT_LMR_TRIPLET* iov, DAT_DTO_COOKIE cookie,
                const DAT_RMR_TRIPLET* remote, DAT_COMPLETION_FLAGS flags, dpdat::rc::WrOp op,
                uint32_t imm = 0, uint64_t compare = 0, uint64_t swap_add = 0) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (n < 0 || static_cast<uint32_t>(n) > dpdat::rc::kMaxSge)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (n > 0 && iov == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  dpdat::rc::Sge sge[dpdat::rc::kMaxSge];
  to_sge(iov, n, sge);
  RemoteSeg r;
  PostArgs a;
  a.op = op;
  a.sge = sge;
  a.nsge = static_cast<uint32_t>(n);
  a.cookie = cookie.as_64;
  a.cflags = static_cast<uint32_t>(flags);
  a.imm = imm;
  a.compare = compare;
  a.swap_add = swap_add;
  if (remote != nullptr) {
    r = to_remote(*remote);
    a.remote = &r;
  }
  return to_dat(ep_post(ep, a));
}

DAT_RETURN ep_post_send_fn(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET* iov,
                           DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) {
  return post(h, n, iov, cookie, nullptr, flags, dpdat::rc::WrOp::kSend);
}

DAT_RETURN ep_post_send_with_invalidate_fn(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET* iov,
                                           DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
                                           DAT_BOOLEAN invalidate, DAT_RMR_CONTEXT) {
  if (lookup<Ep>(h, HandleType::kEp) == nullptr)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  // Remote invalidation of an RMR by a SEND is not offered.
  if (invalidate != DAT_FALSE) return err(Type::MODEL_NOT_SUPPORTED);
  return post(h, n, iov, cookie, nullptr, flags, dpdat::rc::WrOp::kSend);
}

DAT_RETURN ep_post_rdma_write_fn(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET* iov,
                                 DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote,
                                 DAT_COMPLETION_FLAGS flags) {
  if (remote == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  return post(h, n, iov, cookie, remote, flags, dpdat::rc::WrOp::kWrite);
}

DAT_RETURN ep_post_rdma_read_fn(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET* iov,
                                DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote,
                                DAT_COMPLETION_FLAGS flags) {
  if (remote == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  return post(h, n, iov, cookie, remote, flags, dpdat::rc::WrOp::kRead);
}

DAT_RETURN ep_post_rdma_read_to_rmr_fn(DAT_EP_HANDLE h, const DAT_RMR_TRIPLET*, DAT_DTO_COOKIE,
                                       const DAT_RMR_TRIPLET*, DAT_COMPLETION_FLAGS) {
  if (lookup<Ep>(h, HandleType::kEp) == nullptr)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  // READ into a remote-access RMR (iWARP's model): not offered
  // (rdma_read_lmr_rmr_context_exposure = FALSE).
  return err(Type::MODEL_NOT_SUPPORTED);
}

DAT_RETURN ep_post_recv_fn(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET* iov,
                           DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if ((static_cast<uint32_t>(flags) & ~0x1Fu) != 0)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  if (n < 0 || static_cast<uint32_t>(n) > dpdat::rc::kMaxSge)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (n > 0 && iov == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  dpdat::rc::Sge sge[dpdat::rc::kMaxSge];
  to_sge(iov, n, sge);
  return to_dat(
      ep_post_recv(ep, sge, static_cast<uint32_t>(n), cookie.as_64, static_cast<uint32_t>(flags)));
}

DAT_RETURN ep_get_status_fn(DAT_EP_HANDLE h, DAT_EP_STATE* state, DAT_BOOLEAN* recv_idle,
                            DAT_BOOLEAN* req_idle) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  EpStatus s;
  Status st = ep_get_status(ep, &s);
  if (!st.ok()) return to_dat(st);
  if (state != nullptr) *state = to_dat(s.state);
  if (recv_idle != nullptr) *recv_idle = s.recv_idle ? DAT_TRUE : DAT_FALSE;
  if (req_idle != nullptr) *req_idle = s.req_idle ? DAT_TRUE : DAT_FALSE;
  return DAT_SUCCESS;
}

DAT_RETURN ep_reset_fn(DAT_EP_HANDLE h) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  return to_dat(ep_reset(ep));
}

DAT_RETURN ep_free_fn(DAT_EP_HANDLE h) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  return to_dat(ep_free(ep));
}

DAT_RETURN ep_recv_query_fn(DAT_EP_HANDLE h, DAT_COUNT* nbufs, DAT_COUNT* span) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  uint32_t n = 0;
  Status st = ep_recv_query(ep, &n);
  if (nbufs != nullptr) *nbufs = static_cast<DAT_COUNT>(n);
  if (span != nullptr) *span = static_cast<DAT_COUNT>(n);  // consumed in order: span = count
  return to_dat(st);
}

DAT_RETURN ep_set_watermark_fn(DAT_EP_HANDLE h, DAT_COUNT soft_hw, DAT_COUNT hard_hw) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  return to_dat(ep_set_watermark(ep, soft_hw, hard_hw));
}

// ================================================================ PSP / RSP / CSP

DAT_RETURN psp_create_fn(DAT_IA_HANDLE h, DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd,
                         DAT_PSP_FLAGS flags, DAT_PSP_HANDLE* o) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (o == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  if (flags != DAT_PSP_CONSUMER_FLAG && flags != DAT_PSP_PROVIDER_FLAG)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  Sp* sp = nullptr;
  Status st = psp_create(ia, qual, evd, static_cast<uint32_t>(flags), &sp);
  if (st.ok()) *o = sp;
  return to_dat(st);
}

DAT_RETURN psp_create_any_fn(DAT_IA_HANDLE h, DAT_CONN_QUAL* qual, DAT_EVD_HANDLE evd,
                             DAT_PSP_FLAGS flags, DAT_PSP_HANDLE* o) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (qual == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (o == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  if (flags != DAT_PSP_CONSUMER_FLAG && flags != DAT_PSP_PROVIDER_FLAG)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  Sp* sp = nullptr;
  uint64_t q = 0;
  Status st = psp_create_any(ia, &q, evd, static_cast<uint32_t>(flags), &sp);
  if (st.ok()) {
    *qual = q;
    *o = sp;
  }
  return to_dat(st);
}

DAT_RETURN psp_query_fn(DAT_PSP_HANDLE h, DAT_PSP_PARAM_MASK mask, DAT_PSP_PARAM* p) {
  Sp* sp = lookup<Sp>(h, HandleType::kPsp);
  if (sp == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PSP);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p == nullptr) return DAT_SUCCESS;
  Lock lk(sp->ia->iface->mu);
  p->ia_handle = sp->ia;
  p->conn_qual = sp->conn_qual;
  p->evd_handle = sp->evd;
  p->psp_flags = static_cast<DAT_PSP_FLAGS>(sp->flags);
  return DAT_SUCCESS;
}

DAT_RETURN psp_free_fn(DAT_PSP_HANDLE h) {
  Sp* sp = lookup<Sp>(h, HandleType::kPsp);
  if (sp == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PSP);
  return to_dat(sp_free(sp));
}

DAT_RETURN rsp_create_fn(DAT_IA_HANDLE h, DAT_CONN_QUAL qual, DAT_EP_HANDLE ep_h,
                         DAT_EVD_HANDLE evd, DAT_RSP_HANDLE* o) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  Ep* ep = lookup<Ep>(ep_h, HandleType::kEp);
  if (ep == nullptr || ep->ia->iface != ia->iface)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (o == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  Sp* sp = nullptr;
  Status st = rsp_create(ia, qual, ep, evd, &sp);
  if (st.ok()) *o = sp;
  return to_dat(st);
}

DAT_RETURN rsp_query_fn(DAT_RSP_HANDLE h, DAT_RSP_PARAM_MASK mask, DAT_RSP_PARAM* p) {
  Sp* sp = lookup<Sp>(h, HandleType::kRsp);
  if (sp == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_RSP);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p == nullptr) return DAT_SUCCESS;
  Lock lk(sp->ia->iface->mu);
  p->ia_handle = sp->ia;
  p->conn_qual = sp->conn_qual;
  p->evd_handle = sp->evd;
  p->ep_handle = sp->ep;
  return DAT_SUCCESS;
}

DAT_RETURN rsp_free_fn(DAT_RSP_HANDLE h) {
  Sp* sp = lookup<Sp>(h, HandleType::kRsp);
  if (sp == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_RSP);
  return to_dat(sp_free(sp));
}

// Communicator service points (DAT 2.0 CSP): not offered here.
DAT_RETURN csp_create_fn(DAT_IA_HANDLE h, DAT_COMM*, DAT_IA_ADDRESS_PTR, DAT_EVD_HANDLE,
                         DAT_CSP_HANDLE*) {
  if (lookup<Ia>(h, HandleType::kIa) == nullptr)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  return err(Type::MODEL_NOT_SUPPORTED);
}
DAT_RETURN csp_query_fn(DAT_CSP_HANDLE, DAT_CSP_PARAM_MASK, DAT_CSP_PARAM*) {
  return err(Type::INVALID_HANDLE);  // no CSP handle can exist
}
DAT_RETURN csp_free_fn(DAT_CSP_HANDLE) { return err(Type::INVALID_HANDLE); }

// ================================================================ CR

DAT_RETURN cr_query_fn(DAT_CR_HANDLE h, DAT_CR_PARAM_MASK mask, DAT_CR_PARAM* p) {
  Cr* cr = lookup<Cr>(h, HandleType::kCr);
  if (cr == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CR);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p == nullptr) return DAT_SUCCESS;
  Lock lk(cr->ia->iface->mu);
  fill_sa(cr->remote_sa, cr->peer_ip);
  p->remote_ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(cr->remote_sa);
  p->remote_port_qual = cr->req.qpn;
  p->private_data_size = static_cast<DAT_COUNT>(cr->pdata.size());
  p->private_data = cr->pdata.empty() ? nullptr : cr->pdata.data();  // writable, as dtest expects
  p->local_ep_handle = cr->ep;
  return DAT_SUCCESS;
}

DAT_RETURN cr_accept_fn(DAT_CR_HANDLE h, DAT_EP_HANDLE ep_h, DAT_COUNT pdata_size,
                        const DAT_PVOID pdata) {
  Cr* cr = lookup<Cr>(h, HandleType::kCr);
  if (cr == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CR);
  if (pdata_size < 0 || (pdata_size > 0 && pdata == nullptr))
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  Ep* ep = nullptr;
  if (ep_h != DAT_HANDLE_NULL) {
    ep = lookup<Ep>(ep_h, HandleType::kEp);
    if (ep == nullptr || ep->ia->iface != cr->ia->iface)
      return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  }
  return to_dat(
      cr_accept(cr, ep, static_cast<const uint8_t*>(pdata), static_cast<uint32_t>(pdata_size)));
}

DAT_RETURN cr_reject_fn(DAT_CR_HANDLE h, DAT_COUNT pdata_size, const DAT_PVOID pdata) {
  Cr* cr = lookup<Cr>(h, HandleType::kCr);
  if (cr == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CR);
  if (pdata_size < 0 || (pdata_size > 0 && pdata == nullptr))
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  return to_dat(
      cr_reject(cr, static_cast<const uint8_t*>(pdata), static_cast<uint32_t>(pdata_size)));
}

DAT_RETURN cr_handoff_fn(DAT_CR_HANDLE h, DAT_CONN_QUAL qual) {
  Cr* cr = lookup<Cr>(h, HandleType::kCr);
  if (cr == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CR);
  return to_dat(cr_handoff(cr, qual));
}

// ================================================================ LMR

DAT_RETURN lmr_create_fn(DAT_IA_HANDLE h, DAT_MEM_TYPE type, DAT_REGION_DESCRIPTION region,
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
  switch (type) {
    case DAT_MEM_TYPE_VIRTUAL:
      if (region.for_va == nullptr && length > 0)
        return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
      s.type = MemType::kVirtual;
      s.host = static_cast<uint8_t*>(region.for_va);
      s.va = reinterpret_cast<uintptr_t>(region.for_va);
      s.length = length;
      break;
    case DAT_MEM_TYPE_SHARED_VIRTUAL:
      if (region.for_shared_memory.virtual_address == nullptr ||
          region.for_shared_memory.shared_memory_id == nullptr)
        return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
      s.type = MemType::kSharedVirtual;
      s.host = static_cast<uint8_t*>(region.for_shared_memory.virtual_address);
      s.va = reinterpret_cast<uintptr_t>(s.host);
      s.length = length;
      s.cookie = reinterpret_cast<const uint8_t*>(*region.for_shared_memory.shared_memory_id);
      break;
    case DAT_MEM_TYPE_LMR:
      s.type = MemType::kLmr;
      s.parent = lookup<Lmr>(region.for_lmr_handle, HandleType::kLmr);
      if (s.parent == nullptr || s.parent->ia->iface != ia->iface)
        return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_LMR);
      break;
    default:
      return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  }
  // Zero-based addressing: consumers name the region's bytes 0..length-1.
  if (va_type == DAT_VA_TYPE_ZB && s.type != MemType::kLmr) s.va = 0;
  Lmr* l = nullptr;
  Status st = lmr_create(ia, pz, s, pv, &l);
  if (!st.ok()) return to_dat(st);
  if (lctx != nullptr) *lctx = l->lmr_context;
  if (rctx != nullptr) *rctx = l->rmr_context;
  if (reg_size != nullptr) *reg_size = l->length;
  if (reg_addr != nullptr) *reg_addr = l->va;
  *lmr_out = l;
  return DAT_SUCCESS;
}

DAT_RETURN lmr_query_fn(DAT_LMR_HANDLE h, DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM* p) {
  Lmr* l = lookup<Lmr>(h, HandleType::kLmr);
  if (l == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_LMR);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p == nullptr) return DAT_SUCCESS;
  Lock lk(l->ia->iface->mu);
  std::memset(p, 0, sizeof(*p));
  p->ia_handle = l->ia;
  p->mem_type = static_cast<DAT_MEM_TYPE>(l->mem_type);
  if (l->mem_type == MemType::kLmr)
    p->region_desc.for_lmr_handle = l->parent;
  else if (l->mem_type == MemType::kSharedVirtual)
    p->region_desc.for_shared_memory.virtual_address = l->host;
  else
    p->region_desc.for_va = l->host;
  p->length = l->length;
  p->pz_handle = l->pz;
  p->mem_priv = static_cast<DAT_MEM_PRIV_FLAGS>(l->privileges);
  p->va_type = l->va == 0 && l->host != nullptr ? DAT_VA_TYPE_ZB : DAT_VA_TYPE_VA;
  p->lmr_context = l->lmr_context;
  p->rmr_context = l->rmr_context;
  p->registered_size = l->length;
  p->registered_address = l->va;
  return DAT_SUCCESS;
}

DAT_RETURN lmr_free_fn(DAT_LMR_HANDLE h) {
  Lmr* l = lookup<Lmr>(h, HandleType::kLmr);
  if (l == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_LMR);
  return to_dat(lmr_free(l));
}

DAT_RETURN lmr_sync_fn(DAT_IA_HANDLE h, const DAT_LMR_TRIPLET* seg, DAT_VLEN n) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (n > 0 && seg == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  return to_dat(lmr_sync(ia, n, [seg](uint64_t i) { return to_sge(seg[i]); }));
}

// ================================================================ RMR

DAT_RETURN rmr_create_fn(DAT_PZ_HANDLE pz_h, DAT_RMR_HANDLE* o) {
  Pz* pz = lookup<Pz>(pz_h, HandleType::kPz);
  if (pz == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
  if (o == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Rmr* r = nullptr;
  Status st = rmr_create(pz, &r);
  if (st.ok()) *o = r;
  return to_dat(st);
}

DAT_RETURN rmr_query_fn(DAT_RMR_HANDLE h, DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM* p) {
  Rmr* r = lookup<Rmr>(h, HandleType::kRmr);
  if (r == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_RMR);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p == nullptr) return DAT_SUCCESS;
  Lock lk(r->ia->iface->mu);
  std::memset(p, 0, sizeof(*p));
  p->ia_handle = r->ia;
  p->pz_handle = r->pz;
  p->lmr_triplet.lmr_context = r->lmr != nullptr ? r->lmr->lmr_context : 0;
  p->lmr_triplet.virtual_address = r->va;
  put_clamped(p->lmr_triplet.segment_length, r->length);
  p->mem_priv = static_cast<DAT_MEM_PRIV_FLAGS>(r->privileges);
  p->rmr_context = r->context;
  p->rmr_scope = DAT_RMR_SCOPE_EP;
  p->va_type = r->lmr != nullptr && r->lmr->va == 0 ? DAT_VA_TYPE_ZB : DAT_VA_TYPE_VA;
  return DAT_SUCCESS;
}

DAT_RETURN rmr_bind_fn(DAT_RMR_HANDLE h, DAT_LMR_HANDLE lmr_h, const DAT_LMR_TRIPLET* trip,
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

DAT_RETURN rmr_free_fn(DAT_RMR_HANDLE h) {
  Rmr* r = lookup<Rmr>(h, HandleType::kRmr);
  if (r == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_RMR);
  return to_dat(rmr_free(r));
}

// ================================================================ SRQ
// (srq.cpp; limits and negative counts are checked there.)

DAT_RETURN srq_create_fn(DAT_IA_HANDLE h, DAT_PZ_HANDLE pz_h, DAT_SRQ_ATTR* attr,
                         DAT_SRQ_HANDLE* o) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  Pz* pz = lookup<Pz>(pz_h, HandleType::kPz);
  if (pz == nullptr || pz->ia->iface != ia->iface)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
  if (attr == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (o == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  Srq* s = nullptr;
  const Status st = srq_create(ia, pz, static_cast<uint32_t>(attr->max_recv_dtos),
                               static_cast<uint32_t>(attr->max_recv_iov),
                               static_cast<uint32_t>(attr->low_watermark), &s);
  if (st.ok()) *o = s;
  return to_dat(st);
}

DAT_RETURN srq_free_fn(DAT_SRQ_HANDLE h) {
  Srq* s = lookup<Srq>(h, HandleType::kSrq);
  if (s == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_SRQ);
  return to_dat(srq_free(s));
}

DAT_RETURN srq_post_recv_fn(DAT_SRQ_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET* iov,
                            DAT_DTO_COOKIE cookie) {
  Srq* s = lookup<Srq>(h, HandleType::kSrq);
  if (s == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_SRQ);
  if (n < 0 || static_cast<uint32_t>(n) > dpdat::rc::kMaxSge)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (n > 0 && iov == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  dpdat::rc::Sge sge[dpdat::rc::kMaxSge];
  to_sge(iov, n, sge);
  return to_dat(srq_post_recv(s, sge, static_cast<uint32_t>(n), cookie.as_64));
}

DAT_RETURN srq_query_fn(DAT_SRQ_HANDLE h, DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM* p) {
  Srq* s = lookup<Srq>(h, HandleType::kSrq);
  if (s == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_SRQ);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p == nullptr) return DAT_SUCCESS;
  SrqInfo in;
  const Status st = srq_query(s, &in);
  if (!st.ok()) return to_dat(st);
  std::memset(p, 0, sizeof(*p));
  p->ia_handle = s->ia;
  p->srq_state = DAT_SRQ_STATE_OPERATIONAL;
  p->pz_handle = s->pz;
  p->max_recv_dtos = static_cast<DAT_COUNT>(in.max_recv_dtos);
  p->max_recv_iov = static_cast<DAT_COUNT>(in.max_recv_iov);
  p->low_watermark = static_cast<DAT_COUNT>(in.low_watermark);
  p->available_dto_count = static_cast<DAT_COUNT>(in.available);
  p->outstanding_dto_count = static_cast<DAT_COUNT>(in.outstanding);
  return DAT_SUCCESS;
}

DAT_RETURN srq_resize_fn(DAT_SRQ_HANDLE h, DAT_COUNT max_recv_dtos) {
  Srq* s = lookup<Srq>(h, HandleType::kSrq);
  if (s == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_SRQ);
  return to_dat(srq_resize(s, static_cast<uint32_t>(max_recv_dtos)));
}

DAT_RETURN srq_set_lw_fn(DAT_SRQ_HANDLE h, DAT_COUNT low_watermark) {
  Srq* s = lookup<Srq>(h, HandleType::kSrq);
  if (s == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_SRQ);
  return to_dat(srq_set_lw(s, static_cast<uint32_t>(low_watermark)));
}

// ================================================================ IB extensions

// dat_extension_op(handle, op, ...): the arguments are those of the
// dat_ib_post_* macros of <dat2/dat_ib_extensions.h>.
DAT_RETURN extendedop_fn(DAT_HANDLE h, DAT_EXTENDED_OP op, va_list args) {
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
  t->ia_open_func = ia_open_fn;
  t->ia_query_func = ia_query_fn;
  t->ia_close_func = ia_close_fn;
  t->set_consumer_context_func = set_consumer_context_fn;
  t->get_consumer_context_func = get_consumer_context_fn;
  t->get_handle_type_func = get_handle_type_fn;
  t->cno_create_func = cno_create_fn;
  t->cno_modify_agent_func = cno_modify_agent_fn;
  t->cno_query_func = cno_query_fn;
  t->cno_free_func = cno_free_fn;
  t->cno_wait_func = cno_wait_fn;
  t->cr_query_func = cr_query_fn;
  t->cr_accept_func = cr_accept_fn;
  t->cr_reject_func = cr_reject_fn;
  t->cr_handoff_func = cr_handoff_fn;
  t->evd_create_func = evd_create_fn;
  t->evd_query_func = evd_query_fn;
  t->evd_modify_cno_func = evd_modify_cno_fn;
  t->evd_enable_func = evd_enable_fn;
  t->evd_disable_func = evd_disable_fn;
  t->evd_wait_func = evd_wait_fn;
  t->evd_resize_func = evd_resize_fn;
  t->evd_post_se_func = evd_post_se_fn;
  t->evd_dequeue_func = evd_dequeue_fn;
  t->evd_free_func = evd_free_fn;
  t->ep_create_func = ep_create_fn;
  t->ep_query_func = ep_query_fn;
  t->ep_modify_func = ep_modify_fn;
  t->ep_connect_func = ep_connect_fn;
  t->ep_dup_connect_func = ep_dup_connect_fn;
  t->ep_disconnect_func = ep_disconnect_fn;
  t->ep_post_send_func = ep_post_send_fn;
  t->ep_post_recv_func = ep_post_recv_fn;
  t->ep_post_rdma_read_func = ep_post_rdma_read_fn;
  t->ep_post_rdma_write_func = ep_post_rdma_write_fn;
  t->ep_get_status_func = ep_get_status_fn;
  t->ep_free_func = ep_free_fn;
  t->lmr_create_func = lmr_create_fn;
  t->lmr_query_func = lmr_query_fn;
  t->lmr_free_func = lmr_free_fn;
  t->rmr_create_func = rmr_create_fn;
  t->rmr_query_func = rmr_query_fn;
  t->rmr_bind_func = rmr_bind_fn;
  t->rmr_free_func = rmr_free_fn;
  t->psp_create_func = psp_create_fn;
  t->psp_query_func = psp_query_fn;
  t->psp_free_func = psp_free_fn;
  t->rsp_create_func = rsp_create_fn;
  t->rsp_query_func = rsp_query_fn;
  t->rsp_free_func = rsp_free_fn;
  t->pz_create_func = pz_create_fn;
  t->pz_query_func = pz_query_fn;
  t->pz_free_func = pz_free_fn;
  t->psp_create_any_func = psp_create_any_fn;
  t->ep_reset_func = ep_reset_fn;
  t->evd_set_unwaitable_func = evd_set_unwaitable_fn;
  t->evd_clear_unwaitable_func = evd_clear_unwaitable_fn;
  t->lmr_sync_rdma_read_func = lmr_sync_fn;
  t->lmr_sync_rdma_write_func = lmr_sync_fn;
  t->ep_create_with_srq_func = ep_create_with_srq_fn;
  t->ep_recv_query_func = ep_recv_query_fn;
  t->ep_set_watermark_func = ep_set_watermark_fn;
  t->srq_create_func = srq_create_fn;
  t->srq_free_func = srq_free_fn;
  t->srq_post_recv_func = srq_post_recv_fn;
  t->srq_query_func = srq_query_fn;
  t->srq_resize_func = srq_resize_fn;
  t->srq_set_lw_func = srq_set_lw_fn;
  t->csp_create_func = csp_create_fn;
  t->csp_query_func = csp_query_fn;
  t->csp_free_func = csp_free_fn;
  t->ep_common_connect_func = ep_common_connect_fn;
  t->rmr_create_for_ep_func = rmr_create_fn;  // RMRs are EP-scoped here anyway
  t->ep_post_send_with_invalidate_func = ep_post_send_with_invalidate_fn;
  t->ep_post_rdma_read_to_rmr_func = ep_post_rdma_read_to_rmr_fn;
  t->cno_fd_create_func = cno_fd_create_fn;
  t->cno_trigger_func = cno_trigger_fn;
  t->ia_ha_related_func = ia_ha_related_fn;
  t->handle_extendedop_func = extendedop_fn;
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
