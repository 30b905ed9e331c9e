// The uDAPL 1.2 C entry points (libdat.so): argument checks, DAT 1.2 struct
// conversion and the Status -> DAT_RETURN mapping (the one place it is
// done), over the dat_core objects.  Every call may be made from any thread.

#include <arpa/inet.h>
#include <dat/udat.h>
#include <netinet/in.h>

#include <cstring>
#include <vector>

#include "../core.hpp"
#include "../ops.hpp"
#include "dpdk/port.hpp"

using namespace dpdat::dat;  // NOLINT(google-build-using-namespace): C entry points only

#define DPDAT_FRONT_DAT2 0
#include "front/convert.inc"

extern "C" {

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
  Evd* given = nullptr;
  if (*async_evd != DAT_HANDLE_NULL) {
    given = lookup<Evd>(*async_evd, HandleType::kEvd);
    if (given == nullptr || (given->flags & evd_flag::kAsync) == 0)
      return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_ASYNC);
  }
  Ia* ia = nullptr;
  Status st = ia_open(cfg, async_qlen, given, nullptr, &ia);
  if (!st.ok()) return to_dat(st);
  if (given == nullptr) *async_evd = ia->async_evd;
  *ia_out = ia;
  return DAT_SUCCESS;
}

DAT_RETURN dat_ia_close(DAT_IA_HANDLE h, DAT_CLOSE_FLAGS flags) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  return to_dat(ia_close(ia, flags == DAT_CLOSE_GRACEFUL_FLAG));
}

DAT_RETURN dat_ia_query(DAT_IA_HANDLE h, DAT_EVD_HANDLE* async_evd, DAT_IA_ATTR_MASK ia_mask,
                        DAT_IA_ATTR* ia_attr, DAT_PROVIDER_ATTR_MASK pr_mask,
                        DAT_PROVIDER_ATTR* pr_attr) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (ia_mask != 0 && ia_attr == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  if (pr_mask != 0 && pr_attr == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG6);
  Iface* f = ia->iface;
  Lock lk(f->mu);
  if (async_evd != nullptr) *async_evd = ia->async_evd;
  if (ia_attr != nullptr && ia_mask != 0) fill_ia_attr(ia, ia_attr);
  if (pr_attr != nullptr && pr_mask != 0) fill_provider_attr(f->limits, pr_attr);
  return DAT_SUCCESS;
}

DAT_RETURN dat_set_consumer_context(DAT_HANDLE h, DAT_CONTEXT ctx) {
  Object* o = lookup_any(h);
  if (o == nullptr) return err(Type::INVALID_HANDLE);
  Lock lk(o->ia->iface->mu);
  o->context = ctx.as_64;
  o->context_set = true;
  return DAT_SUCCESS;
}

DAT_RETURN dat_get_consumer_context(DAT_HANDLE h, DAT_CONTEXT* ctx) {
  Object* o = lookup_any(h);
  if (o == nullptr) return err(Type::INVALID_HANDLE);
  if (ctx == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Lock lk(o->ia->iface->mu);
  ctx->as_64 = o->context_set ? o->context : 0;
  return DAT_SUCCESS;
}

DAT_RETURN dat_get_handle_type(DAT_HANDLE h, DAT_HANDLE_TYPE* type) {
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

// =========================================================================== PZ

DAT_RETURN dat_pz_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE* out) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Pz* pz = nullptr;
  Status st = pz_create(ia, &pz);
  if (st.ok()) *out = pz;
  return to_dat(st);
}

DAT_RETURN dat_pz_query(DAT_PZ_HANDLE h, DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM* p) {
  Pz* pz = lookup<Pz>(h, HandleType::kPz);
  if (pz == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p != nullptr) p->ia_handle = pz->ia;
  return DAT_SUCCESS;
}

DAT_RETURN dat_pz_free(DAT_PZ_HANDLE h) {
  Pz* pz = lookup<Pz>(h, HandleType::kPz);
  if (pz == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
  return to_dat(pz_free(pz));
}

// ========================================================================== EVD

DAT_RETURN dat_evd_create(DAT_IA_HANDLE h, DAT_COUNT qlen, DAT_CNO_HANDLE cno_h,
                          DAT_EVD_FLAGS flags, DAT_EVD_HANDLE* out) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  Cno* cno = nullptr;
  if (cno_h != DAT_HANDLE_NULL) {
    cno = lookup<Cno>(cno_h, HandleType::kCno);
    if (cno == nullptr || cno->ia != ia) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  }
  Evd* e = nullptr;
  Status st = evd_create(ia, qlen, cno, static_cast<uint32_t>(flags), &e);
  if (st.ok()) *out = e;
  return to_dat(st);
}

DAT_RETURN dat_evd_query(DAT_EVD_HANDLE h, DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM* p) {
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

DAT_RETURN dat_evd_modify_cno(DAT_EVD_HANDLE h, DAT_CNO_HANDLE cno_h) {
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

DAT_RETURN dat_evd_enable(DAT_EVD_HANDLE h) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  return to_dat(evd_set_enabled(e, true));
}

DAT_RETURN dat_evd_disable(DAT_EVD_HANDLE h) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  return to_dat(evd_set_enabled(e, false));
}

DAT_RETURN dat_evd_set_unwaitable(DAT_EVD_HANDLE h) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  return to_dat(evd_set_waitable(e, false));
}

DAT_RETURN dat_evd_clear_unwaitable(DAT_EVD_HANDLE h) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  return to_dat(evd_set_waitable(e, true));
}

DAT_RETURN dat_evd_wait(DAT_EVD_HANDLE h, DAT_TIMEOUT timeout, DAT_COUNT threshold,
                        DAT_EVENT* event, DAT_COUNT* nmore) {
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

DAT_RETURN dat_evd_dequeue(DAT_EVD_HANDLE h, DAT_EVENT* event) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  if (event == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Event ev;
  Status st = evd_dequeue(e, &ev);
  if (st.ok()) to_dat_event(ev, event);
  return to_dat(st);
}

DAT_RETURN dat_evd_resize(DAT_EVD_HANDLE h, DAT_COUNT qlen) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  return to_dat(evd_resize(e, qlen));
}

DAT_RETURN dat_evd_post_se(DAT_EVD_HANDLE h, const DAT_EVENT* event) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  if (event == nullptr || event->event_number != DAT_SOFTWARE_EVENT)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  return to_dat(evd_post_se(e, event->event_data.software_event_data.pointer));
}

DAT_RETURN dat_evd_free(DAT_EVD_HANDLE h) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  return to_dat(evd_free(e));
}

// ========================================================================== CNO

DAT_RETURN dat_cno_create(DAT_IA_HANDLE h, DAT_OS_WAIT_PROXY_AGENT agent, DAT_CNO_HANDLE* out) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  Cno* c = nullptr;
  Status st =
      cno_create(ia, agent.instance_data, reinterpret_cast<AgentFn>(agent.proxy_agent_func), &c);
  if (st.ok()) *out = c;
  return to_dat(st);
}

DAT_RETURN dat_cno_modify_agent(DAT_CNO_HANDLE h, DAT_OS_WAIT_PROXY_AGENT agent) {
  Cno* c = lookup<Cno>(h, HandleType::kCno);
  if (c == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  return to_dat(
      cno_modify_agent(c, agent.instance_data, reinterpret_cast<AgentFn>(agent.proxy_agent_func)));
}

DAT_RETURN dat_cno_query(DAT_CNO_HANDLE h, DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM* p) {
  Cno* c = lookup<Cno>(h, HandleType::kCno);
  if (c == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p == nullptr) return DAT_SUCCESS;
  Lock lk(c->ia->iface->mu);
  p->ia_handle = c->ia;
  p->agent.instance_data = c->agent_instance;
  p->agent.proxy_agent_func = reinterpret_cast<DAT_AGENT_FUNC>(c->agent_fn);
  return DAT_SUCCESS;
}

DAT_RETURN dat_cno_wait(DAT_CNO_HANDLE h, DAT_TIMEOUT timeout, DAT_EVD_HANDLE* evd_out) {
  Cno* c = lookup<Cno>(h, HandleType::kCno);
  if (c == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  if (evd_out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  Evd* e = nullptr;
  Status st = cno_wait(c, to_us(timeout), &e);
  if (st.ok()) *evd_out = e;
  return to_dat(st);
}

DAT_RETURN dat_cno_free(DAT_CNO_HANDLE h) {
  Cno* c = lookup<Cno>(h, HandleType::kCno);
  if (c == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  return to_dat(cno_free(c));
}

// =========================================================================== EP

static DAT_RETURN ep_create_common(DAT_IA_HANDLE h, DAT_PZ_HANDLE pz_h, DAT_EVD_HANDLE recv_h,
                                   DAT_EVD_HANDLE req_h, DAT_EVD_HANDLE conn_h,
                                   const DAT_EP_ATTR* attr, DAT_EP_HANDLE* out,
                                   DAT_SRQ_HANDLE srq_h = DAT_HANDLE_NULL) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  Srq* srq = nullptr;
  if (srq_h != DAT_HANDLE_NULL) {
    srq = lookup<Srq>(srq_h, HandleType::kSrq);
    if (srq == nullptr || srq->ia->iface != ia->iface)
      return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_SRQ);
  }
  if (out == nullptr)
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
  if (st.ok()) *out = ep;
  return to_dat(st);
}

DAT_RETURN dat_ep_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv, DAT_EVD_HANDLE req,
                         DAT_EVD_HANDLE conn, const DAT_EP_ATTR* attr, DAT_EP_HANDLE* out) {
  return ep_create_common(h, pz, recv, req, conn, attr, out);
}

DAT_RETURN dat_ep_create_with_srq(DAT_IA_HANDLE h, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv,
                                  DAT_EVD_HANDLE req, DAT_EVD_HANDLE conn, DAT_SRQ_HANDLE srq,
                                  const DAT_EP_ATTR* attr, DAT_EP_HANDLE* out) {
  if (lookup<Srq>(srq, HandleType::kSrq) == nullptr && lookup<Ia>(h, HandleType::kIa) != nullptr)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_SRQ);
  return ep_create_common(h, pz, recv, req, conn, attr, out, srq);
}

DAT_RETURN dat_ep_query(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK mask, DAT_EP_PARAM* p) {
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

DAT_RETURN dat_ep_modify(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM* p) {
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

DAT_RETURN dat_ep_connect(DAT_EP_HANDLE h, DAT_IA_ADDRESS_PTR addr, DAT_CONN_QUAL qual,
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
  return to_dat(ep_connect(ep, ntohl(sin.sin_addr.s_addr), qual,
                           timeout == DAT_TIMEOUT_INFINITE ? UINT64_MAX : timeout,
                           static_cast<const uint8_t*>(pdata), static_cast<uint32_t>(pdata_size)));
}

DAT_RETURN dat_ep_dup_connect(DAT_EP_HANDLE h, DAT_EP_HANDLE dup, DAT_TIMEOUT timeout,
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
  return dat_ep_connect(h, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&sin), qual, timeout, pdata_size,
                        pdata, qos, DAT_CONNECT_DEFAULT_FLAG);
}

DAT_RETURN dat_ep_disconnect(DAT_EP_HANDLE h, DAT_CLOSE_FLAGS flags) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  return to_dat(ep_disconnect(ep, flags == DAT_CLOSE_ABRUPT_FLAG));
}

static DAT_RETURN post_send_like(DAT_EP_HANDLE h, DAT_COUNT n, const DAT_LMR_TRIPLET* iov,
                                 DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote,
                                 DAT_COMPLETION_FLAGS flags, dpdat::rc::WrOp op) {
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
  if (remote != nullptr) {
    r = to_remote(*remote);
    a.remote = &r;
  }
  return to_dat(ep_post(ep, a));
}

DAT_RETURN dat_ep_post_send(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET* iov,
                            DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) {
  return post_send_like(h, n, iov, cookie, nullptr, flags, dpdat::rc::WrOp::kSend);
}

DAT_RETURN dat_ep_post_rdma_write(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET* iov,
                                  DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote,
                                  DAT_COMPLETION_FLAGS flags) {
  if (remote == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  return post_send_like(h, n, iov, cookie, remote, flags, dpdat::rc::WrOp::kWrite);
}

DAT_RETURN dat_ep_post_rdma_read(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET* iov,
                                 DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote,
                                 DAT_COMPLETION_FLAGS flags) {
  if (remote == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  return post_send_like(h, n, iov, cookie, remote, flags, dpdat::rc::WrOp::kRead);
}

DAT_RETURN dat_ep_post_recv(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET* iov,
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

DAT_RETURN dat_ep_get_status(DAT_EP_HANDLE h, DAT_EP_STATE* state, DAT_BOOLEAN* recv_idle,
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

DAT_RETURN dat_ep_reset(DAT_EP_HANDLE h) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  return to_dat(ep_reset(ep));
}

DAT_RETURN dat_ep_free(DAT_EP_HANDLE h) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  return to_dat(ep_free(ep));
}

DAT_RETURN dat_ep_recv_query(DAT_EP_HANDLE h, DAT_COUNT* nbufs, DAT_COUNT* span) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  uint32_t n = 0;
  Status st = ep_recv_query(ep, &n);
  if (nbufs != nullptr) *nbufs = static_cast<DAT_COUNT>(n);
  if (span != nullptr) *span = static_cast<DAT_COUNT>(n);  // consumed in order: span = count
  return to_dat(st);
}

DAT_RETURN dat_ep_set_watermark(DAT_EP_HANDLE h, DAT_COUNT soft_hw, DAT_COUNT hard_hw) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  return to_dat(ep_set_watermark(ep, soft_hw, hard_hw));
}

// ==================================================================== PSP / RSP

DAT_RETURN dat_psp_create(DAT_IA_HANDLE h, DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd,
                          DAT_PSP_FLAGS flags, DAT_PSP_HANDLE* out) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  if (flags != DAT_PSP_CONSUMER_FLAG && flags != DAT_PSP_PROVIDER_FLAG)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  Sp* sp = nullptr;
  Status st = psp_create(ia, qual, evd, static_cast<uint32_t>(flags), &sp);
  if (st.ok()) *out = sp;
  return to_dat(st);
}

DAT_RETURN dat_psp_create_any(DAT_IA_HANDLE h, DAT_CONN_QUAL* qual, DAT_EVD_HANDLE evd,
                              DAT_PSP_FLAGS flags, DAT_PSP_HANDLE* out) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (qual == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  if (flags != DAT_PSP_CONSUMER_FLAG && flags != DAT_PSP_PROVIDER_FLAG)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  Sp* sp = nullptr;
  uint64_t q = 0;
  Status st = psp_create_any(ia, &q, evd, static_cast<uint32_t>(flags), &sp);
  if (st.ok()) {
    *qual = q;
    *out = sp;
  }
  return to_dat(st);
}

DAT_RETURN dat_psp_query(DAT_PSP_HANDLE h, DAT_PSP_PARAM_MASK mask, DAT_PSP_PARAM* p) {
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

DAT_RETURN dat_psp_free(DAT_PSP_HANDLE h) {
  Sp* sp = lookup<Sp>(h, HandleType::kPsp);
  if (sp == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PSP);
  return to_dat(sp_free(sp));
}

DAT_RETURN dat_rsp_create(DAT_IA_HANDLE h, DAT_CONN_QUAL qual, DAT_EP_HANDLE ep_h,
                          DAT_EVD_HANDLE evd, DAT_RSP_HANDLE* out) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  Ep* ep = lookup<Ep>(ep_h, HandleType::kEp);
  if (ep == nullptr || ep->ia->iface != ia->iface)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  Sp* sp = nullptr;
  Status st = rsp_create(ia, qual, ep, evd, &sp);
  if (st.ok()) *out = sp;
  return to_dat(st);
}

DAT_RETURN dat_rsp_query(DAT_RSP_HANDLE h, DAT_RSP_PARAM_MASK mask, DAT_RSP_PARAM* p) {
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

DAT_RETURN dat_rsp_free(DAT_RSP_HANDLE h) {
  Sp* sp = lookup<Sp>(h, HandleType::kRsp);
  if (sp == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_RSP);
  return to_dat(sp_free(sp));
}

// =========================================================================== CR

DAT_RETURN dat_cr_query(DAT_CR_HANDLE h, DAT_CR_PARAM_MASK mask, DAT_CR_PARAM* p) {
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

DAT_RETURN dat_cr_accept(DAT_CR_HANDLE h, DAT_EP_HANDLE ep_h, DAT_COUNT pdata_size,
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

DAT_RETURN dat_cr_reject(DAT_CR_HANDLE h) {
  Cr* cr = lookup<Cr>(h, HandleType::kCr);
  if (cr == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CR);
  return to_dat(cr_reject(cr, nullptr, 0));
}

DAT_RETURN dat_cr_handoff(DAT_CR_HANDLE h, DAT_CONN_QUAL qual) {
  Cr* cr = lookup<Cr>(h, HandleType::kCr);
  if (cr == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CR);
  return to_dat(cr_handoff(cr, qual));
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
  switch (type) {
    case DAT_MEM_TYPE_VIRTUAL:
    case DAT_MEM_TYPE_SO_VIRTUAL:
      if (region.for_va == nullptr && length > 0)
        return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
      s.type = type == DAT_MEM_TYPE_VIRTUAL ? MemType::kVirtual : MemType::kSoVirtual;
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

DAT_RETURN dat_lmr_query(DAT_LMR_HANDLE h, DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM* p) {
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
  p->lmr_context = l->lmr_context;
  p->rmr_context = l->rmr_context;
  p->registered_size = l->length;
  p->registered_address = l->va;
  return DAT_SUCCESS;
}

DAT_RETURN dat_lmr_free(DAT_LMR_HANDLE h) {
  Lmr* l = lookup<Lmr>(h, HandleType::kLmr);
  if (l == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_LMR);
  return to_dat(lmr_free(l));
}

// Lengths and ranges of a sync call: every segment inside its LMR.
static DAT_RETURN lmr_sync_front(DAT_IA_HANDLE h, const DAT_LMR_TRIPLET* seg, DAT_VLEN n) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (n > 0 && seg == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  return to_dat(lmr_sync(ia, n, [seg](uint64_t i) { return to_sge(seg[i]); }));
}

DAT_RETURN dat_lmr_sync_rdma_read(DAT_IA_HANDLE h, const DAT_LMR_TRIPLET* seg, DAT_VLEN n) {
  return lmr_sync_front(h, seg, n);
}

DAT_RETURN dat_lmr_sync_rdma_write(DAT_IA_HANDLE h, const DAT_LMR_TRIPLET* seg, DAT_VLEN n) {
  return lmr_sync_front(h, seg, n);
}

// ========================================================================== RMR

DAT_RETURN dat_rmr_create(DAT_PZ_HANDLE pz_h, DAT_RMR_HANDLE* out) {
  Pz* pz = lookup<Pz>(pz_h, HandleType::kPz);
  if (pz == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
  if (out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Rmr* r = nullptr;
  Status st = rmr_create(pz, &r);
  if (st.ok()) *out = r;
  return to_dat(st);
}

DAT_RETURN dat_rmr_query(DAT_RMR_HANDLE h, DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM* p) {
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
  p->lmr_triplet.segment_length = r->length;
  p->mem_priv = static_cast<DAT_MEM_PRIV_FLAGS>(r->privileges);
  p->rmr_context = r->context;
  return DAT_SUCCESS;
}

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

DAT_RETURN dat_rmr_free(DAT_RMR_HANDLE h) {
  Rmr* r = lookup<Rmr>(h, HandleType::kRmr);
  if (r == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_RMR);
  return to_dat(rmr_free(r));
}

// ========================================================================== SRQ
// Receives posted to an SRQ are taken by whichever of its EPs receives the
// next message; the completion goes to that EP's receive EVD (srq.cpp).

DAT_RETURN dat_srq_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE pz_h, DAT_SRQ_ATTR* attr,
                          DAT_SRQ_HANDLE* out) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  Pz* pz = lookup<Pz>(pz_h, HandleType::kPz);
  if (pz == nullptr || pz->ia->iface != ia->iface)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
  if (attr == nullptr || attr->max_recv_dtos <= 0 || attr->max_recv_iov <= 0 ||
      attr->low_watermark < 0)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  Srq* s = nullptr;
  const Status st = srq_create(ia, pz, static_cast<uint32_t>(attr->max_recv_dtos),
                               static_cast<uint32_t>(attr->max_recv_iov),
                               static_cast<uint32_t>(attr->low_watermark), &s);
  if (st.ok()) *out = s;
  return to_dat(st);
}

DAT_RETURN dat_srq_free(DAT_SRQ_HANDLE h) {
  Srq* s = lookup<Srq>(h, HandleType::kSrq);
  if (s == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_SRQ);
  return to_dat(srq_free(s));
}

DAT_RETURN dat_srq_post_recv(DAT_SRQ_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET* iov,
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

DAT_RETURN dat_srq_query(DAT_SRQ_HANDLE h, DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM* p) {
  Srq* s = lookup<Srq>(h, HandleType::kSrq);
  if (s == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_SRQ);
  if ((static_cast<uint32_t>(mask) & ~static_cast<uint32_t>(DAT_SRQ_FIELD_ALL)) != 0)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
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

DAT_RETURN dat_srq_resize(DAT_SRQ_HANDLE h, DAT_COUNT max_recv_dtos) {
  Srq* s = lookup<Srq>(h, HandleType::kSrq);
  if (s == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_SRQ);
  if (max_recv_dtos <= 0) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  return to_dat(srq_resize(s, static_cast<uint32_t>(max_recv_dtos)));
}

DAT_RETURN dat_srq_set_lw(DAT_SRQ_HANDLE h, DAT_COUNT low_watermark) {
  Srq* s = lookup<Srq>(h, HandleType::kSrq);
  if (s == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_SRQ);
  if (low_watermark < 0) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  return to_dat(srq_set_lw(s, static_cast<uint32_t>(low_watermark)));
}

}  // extern "C"
