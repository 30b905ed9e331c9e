// Service points (PSP, RSP) and connection requests.

#include "ops.hpp"

namespace dpdat::dat {

namespace {

Status sp_listen(Ia* ia, uint64_t qual, const void* evd_h, HandleType t, uint32_t flags, Ep* ep,
                 Sp** out) {
  Evd* evd = lookup<Evd>(evd_h, HandleType::kEvd);
  if (evd == nullptr || evd->ia->iface != ia->iface || (evd->flags & evd_flag::kCr) == 0)
    return fail(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_CR);
  Iface* f = ia->iface;
  if (f->listeners.count(qual) != 0) return fail(Type::CONN_QUAL_IN_USE);
  auto* sp = new Sp(t, ia);
  sp->conn_qual = qual;
  sp->evd = evd;
  sp->flags = flags;
  sp->ep = ep;
  evd->refs++;
  f->listeners[qual] = sp;
  adopt(ia, sp);
  *out = sp;
  return kOk;
}

}  // namespace

void free_sp(Sp* sp) {
  Iface* f = sp->ia->iface;
  auto it = f->listeners.find(sp->conn_qual);
  if (it != f->listeners.end() && it->second == sp) f->listeners.erase(it);
  for (Object* o : sp->ia->children)
    if (o->type == HandleType::kCr && static_cast<Cr*>(o)->sp == sp)
      static_cast<Cr*>(o)->sp = nullptr;
  if (sp->ep != nullptr && sp->ep->state == EpState::kReserved)
    sp->ep->state = EpState::kUnconnected;
  if (sp->ep != nullptr && sp->ep->sp == sp) sp->ep->sp = nullptr;
  if (sp->evd != nullptr) sp->evd->refs--;
  destroy(sp);
}

Status psp_create(Ia* ia, uint64_t qual, const void* evd_h, uint32_t flags, Sp** out) {
  Lock lk(ia->iface);
  return sp_listen(ia, qual, evd_h, HandleType::kPsp, flags, nullptr, out);
}

Status psp_create_any(Ia* ia, uint64_t* qual, const void* evd_h, uint32_t flags, Sp** out) {
  Lock lk(ia->iface);
  uint64_t q = 0x10000;  // above the range consumers usually pick by hand
  while (ia->iface->listeners.count(q) != 0) ++q;
  Status st = sp_listen(ia, q, evd_h, HandleType::kPsp, flags, nullptr, out);
  if (st.ok()) *qual = q;
  return st;
}

Status rsp_create(Ia* ia, uint64_t qual, Ep* ep, const void* evd_h, Sp** out) {
  Lock lk(ia->iface);
  if (ep->state != EpState::kUnconnected) return fail(Type::INVALID_STATE, ep_state_sub(ep->state));
  Sp* sp = nullptr;
  Status st = sp_listen(ia, qual, evd_h, HandleType::kRsp, 0, ep, &sp);
  if (!st.ok()) return st;
  ep->state = EpState::kReserved;
  ep->sp = sp;
  *out = sp;
  return kOk;
}

Status sp_free(Sp* sp) {
  Lock lk(sp->ia->iface);
  free_sp(sp);
  return kOk;
}

Status cr_accept(Cr* cr, Ep* ep, const uint8_t* pdata, uint32_t pdata_len) {
  Iface* f = cr->ia->iface;
  Lock lk(f);
  if (ep == nullptr) ep = cr->ep;
  if (ep == nullptr) return fail(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  const bool own = ep == cr->ep;
  if (!own && ep->state != EpState::kUnconnected)
    return fail(Type::INVALID_STATE, ep_state_sub(ep->state));
  if (ep->conn_evd == nullptr) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EP_NOTREADY);
  if (!own && cr->ep != nullptr && cr->ep->state == EpState::kPassivePending && cr->sp != nullptr &&
      cr->sp->type == HandleType::kRsp)
    cr->ep->state = EpState::kReserved;  // RSP's own EP not used: back to reserved
  Status st = f->accept(cr, ep, pdata, pdata_len);
  if (st.ok()) f->progress(now_ns(), true);
  return st;
}

Status cr_reject(Cr* cr, const uint8_t* pdata, uint32_t pdata_len) {
  Iface* f = cr->ia->iface;
  Lock lk(f);
  Status st = f->reject(cr, pdata, pdata_len);
  if (st.ok()) f->progress(now_ns(), true);
  return st;
}

Status cr_handoff(Cr* cr, uint64_t qual) {
  Iface* f = cr->ia->iface;
  Lock lk(f);
  auto it = f->listeners.find(qual);
  if (it == f->listeners.end() || it->second->type != HandleType::kPsp)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Sp* to = it->second;
  if (cr->sp != nullptr && cr->sp->crs > 0) cr->sp->crs--;
  cr->sp = to;
  cr->conn_qual = qual;
  to->crs++;
  Event ev;
  ev.num = EventNum::kConnRequest;
  ev.evd = to->evd;
  ev.sp = to;
  ev.conn_qual = qual;
  ev.cr = cr;
  f->deliver(to->evd, std::move(ev));
  return kOk;
}

}  // namespace dpdat::dat
