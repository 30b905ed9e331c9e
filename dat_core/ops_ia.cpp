// IA and PZ operations, and the abrupt release of everything an IA owns.

#include "ops.hpp"

#include <netinet/in.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace dpdat::dat {

namespace {
// Longest dat_ia_close waits for the DREPs of its abrupt disconnects: the
// first DREQ and its repetitions 50, 100 and 200 ms later (cm.cpp).
constexpr uint64_t kCloseLingerUs = 250'000;
}  // namespace

void free_children(Ia* ia) {
  auto of_type = [ia](HandleType t) {
    std::vector<Object*> v;
    for (Object* o : ia->children)
      if (o->type == t) v.push_back(o);
    return v;
  };
  for (Object* o : of_type(HandleType::kCr)) ia->iface->drop_cr(static_cast<Cr*>(o));
  for (HandleType t : {HandleType::kPsp, HandleType::kRsp})
    for (Object* o : of_type(t)) free_sp(static_cast<Sp*>(o));
  for (Object* o : of_type(HandleType::kEp)) free_ep(static_cast<Ep*>(o));
  for (Object* o : of_type(HandleType::kSrq)) free_srq(static_cast<Srq*>(o));  // no EP left
  for (Object* o : of_type(HandleType::kRmr)) free_rmr(static_cast<Rmr*>(o));
  // LMRs over other LMRs first.
  for (int pass = 0; pass < 2; ++pass)
    for (Object* o : of_type(HandleType::kLmr)) {
      auto* l = static_cast<Lmr*>(o);
      if (pass == 1 || l->parent != nullptr) (void)free_lmr(l);
    }
  for (Object* o : of_type(HandleType::kEvd)) free_evd(static_cast<Evd*>(o));
  for (Object* o : of_type(HandleType::kCno)) destroy(static_cast<Cno*>(o));
  for (Object* o : of_type(HandleType::kPz)) {
    ia->iface->pz_count--;
    destroy(static_cast<Pz*>(o));
  }
}

void fill_sa(unsigned char* out, uint32_t ip) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(ip);
  static_assert(sizeof(sa) == 16);
  std::memcpy(out, &sa, sizeof(sa));
}

Status ia_open(const IfaceConfig& cfg, int64_t async_qlen, Evd* given, void* provider, Ia** out) {
  Iface* f = nullptr;
  std::string why;
  Status st = Iface::get(cfg, &f, &why);
  if (!st.ok()) {
    // The DAT return code alone does not say what is wrong with the device
    // or its configuration; the reason goes to stderr once, as EAL's do.
    if (!why.empty())
      std::fprintf(stderr, "dpdat: dat_ia_open(%s): %s\n", cfg.name.c_str(), why.c_str());
    return st;
  }
  if (given == nullptr && async_qlen <= 0) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Lock lk(f);
  // A consumer's async EVD belongs to another IA of this same interface (its
  // events are delivered under this interface's lock).
  if (given != nullptr && given->ia->iface != f)
    return fail(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_ASYNC);
  auto* ia = new Ia();
  ia->provider = provider;
  ia->iface = f;
  fill_sa(ia->local_sa, f->cfg.ip);
  register_handle(ia);
  if (given != nullptr) {
    ia->async_evd = given;
    given->refs++;  // not freed while this IA reports to it
    given->async_users.push_back(ia);
  } else {
    Evd* e = nullptr;
    st = make_evd(ia, async_qlen, nullptr, evd_flag::kAsync, &e);
    if (!st.ok()) {
      unregister_handle(ia);
      delete ia;
      return st;
    }
    ia->async_evd = e;
    ia->async_evd_created = true;
  }
  f->ias++;
  *out = ia;
  lk.unlock();
  f->start_threads();  // the first IA's open starts them
  return kOk;
}

Status ia_close(Ia* ia, bool graceful) {
  Iface* f = ia->iface;
  Lock lk(f);
  if (graceful) {
    for (Object* o : ia->children)
      if (!(ia->async_evd_created && o == ia->async_evd))
        return fail(Type::INVALID_STATE, Sub::INVALID_STATE_IA_IN_USE);
  }
  if (!ia->async_evd_created && ia->async_evd != nullptr) {  // another IA's EVD
    std::erase(ia->async_evd->async_users, ia);
    ia->async_evd->refs--;
  }
  free_children(ia);
  if (ia->link_events) std::erase(f->link_watchers, ia);
  f->ias--;
  unregister_handle(ia);
  // Linger: the DREQs of this IA's abrupt disconnects (its EPs freed just
  // now or earlier) went out behind the last ACKs of their connections.  A
  // consumer typically exits right after dat_ia_close, and with it the
  // link may go (a net_memif peer discards what it has not read yet when
  // the other process's socket closes): wait, at most kCloseLingerUs, until
  // every such DREQ is answered, which means the peer took everything sent
  // before it.  A peer that never answers costs that much, once.
  std::vector<uint32_t> waiting;
  for (auto& [comm, d] : f->pending_dreqs)
    if (d.owner == ia) {
      waiting.push_back(d.comm);
      d.owner = nullptr;
    }
  delete ia;
  if (!waiting.empty()) {
    std::condition_variable_any none;  // nothing signals it: wait_for polls and backs off
    (void)wait_for(f, lk, none, kCloseLingerUs, [f, &waiting] {
      std::erase_if(waiting, [f](uint32_t c) { return !f->dreq_pending(c); });
      return waiting.empty();
    });
  }
  lk.unlock();
  f->wait_upcalls();            // its CNOs' agents are done with their instances
  f->stop_threads_if_unused();  // the last IA's close ends them
  return kOk;
}

Status pz_create(Ia* ia, Pz** out) {
  Lock lk(ia->iface);
  if (ia->iface->pz_count >= ia->iface->limits.max_pzs)
    return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_PROTECTION_DOMAIN);
  ia->iface->pz_count++;
  auto* pz = new Pz(ia);
  pz->id = ia->iface->next_pz++;
  adopt(ia, pz);
  *out = pz;
  return kOk;
}

Status pz_free(Pz* pz) {
  Lock lk(pz->ia->iface);
  if (pz->refs > 0) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_PZ_IN_USE);
  pz->ia->iface->pz_count--;
  destroy(pz);
  return kOk;
}

}  // namespace dpdat::dat
