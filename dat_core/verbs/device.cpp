// Devices and contexts: one device per configured dpdat interface, opened as
// an IA; device, port, GID and P_Key queries; async events.

#include <arpa/inet.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "objects.hpp"
#include "settings/settings.hpp"

#define DPDAT_EXPORT extern "C" __attribute__((visibility("default")))

namespace dpdat::verbs {

namespace {

// Node GUID: an EUI-64 made of dpdat's tag and the interface's IPv4 address,
// known before the interface is opened (ibv_devices lists it unopened).
uint64_t guid_for(uint32_t ip) {
  const uint64_t host = (uint64_t{0x02D9DA} << 40) | (uint64_t{0xFE} << 32) | ip;
  return htobe64(host);
}

void fill_gid(uint32_t ip, ibv_gid* gid) {
  std::memset(gid, 0, sizeof(*gid));
  gid->raw[10] = 0xFF;
  gid->raw[11] = 0xFF;
  const uint32_t be = htonl(ip);
  std::memcpy(&gid->raw[12], &be, 4);
}

ibv_mtu mtu_enum(uint32_t bytes) {
  switch (bytes) {
    case 256:
      return IBV_MTU_256;
    case 512:
      return IBV_MTU_512;
    case 2048:
      return IBV_MTU_2048;
    case 4096:
      return IBV_MTU_4096;
    default:
      return IBV_MTU_1024;
  }
}

void fill_device_attr(const Device* d, ibv_device_attr* a) {
  std::memset(a, 0, sizeof(*a));
  std::snprintf(a->fw_ver, sizeof(a->fw_ver), "dpdat");
  a->node_guid = d->guid;
  a->sys_image_guid = d->guid;
  a->max_mr_size = uint64_t{1} << 40;
  a->page_size_cap = 4096;
  a->vendor_id = 0;  // no vendor's code paths match
  a->vendor_part_id = 0xD0DA;
  a->hw_ver = 1;
  a->max_qp = 1 << 16;
  a->max_qp_wr = static_cast<int>(kMaxWr);
  a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT;
  a->max_sge = static_cast<int>(kMaxSge);
  a->max_sge_rd = static_cast<int>(kMaxSge);
  a->max_cq = 1 << 16;
  a->max_cqe = kMaxCqe;
  a->max_mr = 1 << 20;
  a->max_pd = 1 << 16;
  a->max_qp_rd_atom = static_cast<int>(kMaxRdAtomic);
  a->max_qp_init_rd_atom = static_cast<int>(kMaxRdAtomic);
  a->max_res_rd_atom = static_cast<int>(kMaxRdAtomic) * (1 << 16);
  a->atomic_cap = IBV_ATOMIC_HCA;
  a->max_srq = 1024;
  a->max_srq_wr = 1 << 16;
  a->max_srq_sge = static_cast<int>(kMaxSge);
  a->max_pkeys = 1;
  a->phys_port_cnt = 1;
}

}  // namespace

std::vector<Device*>& devices() {
  // The devices live for the process (programs keep the pointers
  // ibv_get_device_list gave them), and so does the list that holds them: a
  // static vector's destructor at exit would leave them unreferenced.
  static auto& list = *new std::vector<Device*>();
  static std::once_flag once;
  std::call_once(once, [] {
    int index = 0;
    // DPDAT_VERBS_DEVICES=a,b: only these interfaces, in this order (the
    // first is the one programs take without -d); default: every name known.
    std::vector<std::string> names;
    if (const auto only = settings::get(settings::Var::kVerbsDevices)) {
      const std::string& s = *only;
      for (size_t b = 0; b <= s.size();) {
        size_t e = s.find(',', b);
        if (e == std::string::npos) e = s.size();
        if (e > b) names.push_back(s.substr(b, e - b));
        b = e + 1;
      }
    } else {
      names = dat::list_ia_names();
    }
    for (const std::string& name : names) {
      dat::IfaceConfig cfg;
      std::string why;
      if (!dat::lookup_ia(name, &cfg, &why) || name.size() >= IBV_SYSFS_NAME_MAX) continue;
      auto* d = new Device{};
      d->cfg = cfg;
      d->guid = guid_for(cfg.ip);
      d->index = index++;
      d->dev.node_type = IBV_NODE_CA;
      d->dev.transport_type = IBV_TRANSPORT_IB;
      std::snprintf(d->dev.name, sizeof(d->dev.name), "%s", name.c_str());
      std::snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "%s", name.c_str());
      std::snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/sys/class/infiniband_verbs/%s",
                    name.c_str());
      std::snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/%s",
                    name.c_str());
      list.push_back(d);
    }
  });
  return list;
}

bool stats_wanted() { return settings::on(settings::Var::kVerbsStats); }

int to_errno(dat::Status st) {
  using dat::Type;
  switch (st.type) {
    case Type::SUCCESS:
      return 0;
    case Type::INSUFFICIENT_RESOURCES:
      return ENOMEM;
    case Type::QUEUE_FULL:
      return ENOMEM;
    case Type::INVALID_STATE:
    case Type::INVALID_HANDLE:
    case Type::INVALID_PARAMETER:
    case Type::LENGTH_ERROR:
      return EINVAL;
    case Type::INVALID_ADDRESS:
      return st.sub == dat::Sub::INVALID_ADDRESS_UNREACHABLE ? EHOSTUNREACH : EINVAL;
    case Type::MODEL_NOT_SUPPORTED:
    case Type::NOT_IMPLEMENTED:
      return EOPNOTSUPP;
    case Type::PROVIDER_NOT_FOUND:
      return ENODEV;
    case Type::PRIVILEGES_VIOLATION:
    case Type::PROTECTION_VIOLATION:
      return EACCES;
    case Type::TIMEOUT_EXPIRED:
      return ETIMEDOUT;
    case Type::QUEUE_EMPTY:
      return EAGAIN;
    case Type::INTERRUPTED_CALL:
      return EINTR;
    default:
      return EIO;
  }
}

int query_port_ex(ibv_context* c, uint8_t port, ibv_port_attr* attr, size_t len) {
  if (port != 1) return EINVAL;
  Context* ctx = ctx_of(c);
  dat::IaLinkInfo li;
  if (const dat::Status st = dat::ia_link_info(ctx->ia, &li); !st.ok()) return to_errno(st);
  ibv_port_attr a{};
  a.state = li.up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
  a.max_mtu = IBV_MTU_4096;
  a.active_mtu = mtu_enum(li.pmtu);
  a.gid_tbl_len = 1;
  a.port_cap_flags = 0;
  a.max_msg_sz = 1u << 30;
  a.pkey_tbl_len = 1;
  a.max_vl_num = 1;
  a.active_width = 2;            // 4X
  a.active_speed = 32;           // EDR (25 Gb/s per lane): a software link has no rate of its own
  a.phys_state = li.up ? 5 : 3;  // LinkUp, Disabled
  a.link_layer = IBV_LINK_LAYER_ETHERNET;
  std::memset(attr, 0, len);
  std::memcpy(attr, &a, std::min(len, sizeof(a)));
  return 0;
}

int query_device_ex(ibv_context* c, const ibv_query_device_ex_input* in, ibv_device_attr_ex* attr,
                    size_t len) {
  if (in != nullptr && in->comp_mask != 0) return EINVAL;
  if (len < sizeof(ibv_device_attr)) return EINVAL;
  ibv_device_attr_ex a{};
  fill_device_attr(ctx_of(c)->dev, &a.orig_attr);
  std::memset(attr, 0, len);
  std::memcpy(attr, &a, std::min(len, sizeof(a)));
  return 0;
}

}  // namespace dpdat::verbs

using namespace dpdat::verbs;  // NOLINT(google-build-using-namespace): the C entry points
namespace dat = dpdat::dat;

DPDAT_EXPORT ibv_device** ibv_get_device_list(int* num) {
  std::vector<Device*>& list = devices();
  auto** out = static_cast<ibv_device**>(std::calloc(list.size() + 1, sizeof(ibv_device*)));
  if (out == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  for (size_t i = 0; i < list.size(); ++i) out[i] = &list[i]->dev;
  if (num != nullptr) *num = static_cast<int>(list.size());
  return out;
}

DPDAT_EXPORT void ibv_free_device_list(ibv_device** list) { std::free(list); }

DPDAT_EXPORT const char* ibv_get_device_name(ibv_device* d) {
  return d != nullptr ? d->name : nullptr;
}

DPDAT_EXPORT __be64 ibv_get_device_guid(ibv_device* d) {
  return d != nullptr ? reinterpret_cast<Device*>(d)->guid : 0;
}

DPDAT_EXPORT int ibv_get_device_index(ibv_device* d) {
  return d != nullptr ? reinterpret_cast<Device*>(d)->index : -1;
}

DPDAT_EXPORT ibv_context* ibv_open_device(ibv_device* d) {
  if (d == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  auto* dev = reinterpret_cast<Device*>(d);
  auto* ctx = new Context{};
  const dat::Status st = dat::ia_open(dev->cfg, 64, nullptr, nullptr, &ctx->ia);
  if (!st.ok()) {
    delete ctx;
    errno = to_errno(st) == EINVAL ? ENODEV : to_errno(st);
    return nullptr;
  }
  const int afd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
  if (afd < 0) {
    const int e = errno;
    (void)dat::ia_close(ctx->ia, false);
    delete ctx;
    errno = e;
    return nullptr;
  }
  ctx->dev = dev;
  dat::Status ast = dat::cno_create(ctx->ia, ctx, async_agent, &ctx->async_cno);
  if (ast.ok()) ast = dat::evd_modify_cno(ctx->ia->async_evd, ctx->async_cno);
  if (ast.ok()) ast = dat::ia_link_events(ctx->ia, true);  // PORT_ACTIVE, PORT_ERR
  if (!ast.ok()) {
    close(afd);
    (void)dat::ia_close(ctx->ia, false);
    delete ctx;
    errno = to_errno(ast);
    return nullptr;
  }
  verbs_context& v = ctx->vctx;
  v.sz = sizeof(verbs_context);
  v.query_port = query_port_ex;
  v.query_device_ex = query_device_ex;
  ibv_context& c = v.context;
  c.device = d;
  c.cmd_fd = -1;
  c.async_fd = afd;
  c.num_comp_vectors = 1;
  pthread_mutex_init(&c.mutex, nullptr);
  c.abi_compat = __VERBS_ABI_IS_EXTENDED;
  c.ops.poll_cq = poll_cq;
  c.ops.req_notify_cq = req_notify_cq;
  c.ops.post_send = post_send;
  c.ops.post_recv = post_recv;
  c.ops.post_srq_recv = post_srq_recv;
  return &c;
}

DPDAT_EXPORT int ibv_close_device(ibv_context* c) {
  if (c == nullptr) return EINVAL;
  Context* ctx = ctx_of(c);
  if (stats_wanted()) {
    dat::IaLinkInfo li;
    if (dat::ia_link_info(ctx->ia, &li).ok())
      std::fprintf(stderr, "dpdat-verbs: %s tx_frames %llu rx_frames %llu\n", ctx->dev->dev.name,
                   static_cast<unsigned long long>(li.tx_frames),
                   static_cast<unsigned long long>(li.rx_frames));
  }
  // Abrupt: whatever the application left is released with the IA.
  (void)dat::ia_close(ctx->ia, false);
  close(c->async_fd);
  pthread_mutex_destroy(&c->mutex);
  delete ctx;
  return 0;
}

DPDAT_EXPORT int ibv_query_device(ibv_context* c, ibv_device_attr* a) {
  if (c == nullptr || a == nullptr) return EINVAL;
  fill_device_attr(ctx_of(c)->dev, a);
  return 0;
}

#undef ibv_query_port
// The exported (compat) ibv_query_port: the header's inline wrapper goes to
// verbs_context::query_port; old binaries come here with the shorter struct.
extern "C" __attribute__((visibility("default"))) int ibv_query_port(ibv_context* c, uint8_t port,
                                                                     _compat_ibv_port_attr* a) {
  if (c == nullptr || a == nullptr) return EINVAL;
  return query_port_ex(c, port, reinterpret_cast<ibv_port_attr*>(a),
                       offsetof(ibv_port_attr, link_layer));
}

DPDAT_EXPORT int ibv_query_gid(ibv_context* c, uint8_t port, int index, ibv_gid* gid) {
  if (c == nullptr || gid == nullptr || port != 1 || index != 0) {
    errno = EINVAL;
    return -1;
  }
  fill_gid(ctx_of(c)->dev->cfg.ip, gid);
  return 0;
}

DPDAT_EXPORT int _ibv_query_gid_ex(ibv_context* c, uint32_t port, uint32_t index,
                                   ibv_gid_entry* entry, uint32_t flags, size_t entry_size) {
  if (c == nullptr || entry == nullptr || flags != 0 || entry_size < sizeof(ibv_gid_entry))
    return EINVAL;
  if (port != 1) return EINVAL;
  if (index != 0) return ENODATA;
  ibv_gid_entry e{};
  fill_gid(ctx_of(c)->dev->cfg.ip, &e.gid);
  e.gid_index = 0;
  e.port_num = 1;
  e.gid_type = IBV_GID_TYPE_ROCE_V2;
  e.ndev_ifindex = 0;
  std::memset(entry, 0, entry_size);
  std::memcpy(entry, &e, sizeof(e));
  return 0;
}

DPDAT_EXPORT ssize_t _ibv_query_gid_table(ibv_context* c, ibv_gid_entry* entries, size_t max,
                                          uint32_t flags, size_t entry_size) {
  if (c == nullptr || (max > 0 && entries == nullptr) || flags != 0 ||
      entry_size < sizeof(ibv_gid_entry))
    return -EINVAL;
  if (max < 1) return -EINVAL;
  const int r = _ibv_query_gid_ex(c, 1, 0, entries, 0, entry_size);
  return r == 0 ? 1 : -r;
}

// rdma-core's private query (enum ibv_gid_type_sysfs: 0 IB/RoCE v1, 1 RoCE v2).
DPDAT_EXPORT int ibv_query_gid_type(ibv_context* c, uint8_t port, unsigned int index, int* type) {
  if (c == nullptr || type == nullptr || port != 1 || index != 0) {
    errno = EINVAL;
    return -1;
  }
  *type = 1;
  return 0;
}

DPDAT_EXPORT int ibv_query_pkey(ibv_context* c, uint8_t port, int index, __be16* pkey) {
  if (c == nullptr || pkey == nullptr || port != 1 || index != 0) {
    errno = EINVAL;
    return -1;
  }
  *pkey = htons(0xFFFF);
  return 0;
}

// The index, or -1 with errno (ibv_get_pkey_index(3)).
DPDAT_EXPORT int ibv_get_pkey_index(ibv_context* c, uint8_t port, __be16 pkey) {
  if (c == nullptr || port != 1) {
    errno = EINVAL;
    return -1;
  }
  if ((ntohs(pkey) & 0x7FFF) == 0x7FFF) return 0;
  errno = ENOENT;
  return -1;
}

// Asynchronous events: queued on the context, counted on its eventfd (which
// blocks, or says EAGAIN when the application made it non-blocking).  A count
// whose event went with its QP or SRQ (async_forget) is passed over.
DPDAT_EXPORT int ibv_get_async_event(ibv_context* c, ibv_async_event* ev) {
  if (c == nullptr || ev == nullptr) {
    errno = EINVAL;
    return -1;
  }
  Context* ctx = ctx_of(c);
  for (;;) {
    uint64_t one = 0;
    if (read(c->async_fd, &one, sizeof(one)) != sizeof(one)) return -1;  // errno from read
    std::lock_guard<std::mutex> g(ctx->async_mu);
    if (ctx->async_q.empty()) continue;
    *ev = ctx->async_q.front();
    ctx->async_q.pop_front();
    return 0;
  }
}

DPDAT_EXPORT void ibv_ack_async_event(ibv_async_event*) {}

namespace dpdat::verbs {

void async_agent(void* instance, void* /*evd*/) {
  auto* ctx = static_cast<Context*>(instance);
  dat::Event ev;
  while (dat::pop_event(ctx->ia->async_evd, &ev)) {
    ibv_async_event out{};
    std::lock_guard<std::mutex> g(ctx->async_mu);
    if (ev.num == dat::EventNum::kEpBroken) {
      auto it = ctx->qps.find(ev.handle);
      if (it == ctx->qps.end()) continue;  // destroyed meanwhile
      out.element.qp = &it->second->qp;
      out.event_type =
          ev.reason == dat::kEpLastWqeReason ? IBV_EVENT_QP_LAST_WQE_REACHED : IBV_EVENT_QP_FATAL;
    } else if (ev.num == dat::EventNum::kProviderInternal &&
               (ev.reason == dat::kQpSqDrainedReason || ev.reason == dat::kQpCommEstReason)) {
      auto it = ctx->qps.find(ev.handle);
      if (it == ctx->qps.end()) continue;  // destroyed meanwhile
      out.element.qp = &it->second->qp;
      out.event_type =
          ev.reason == dat::kQpSqDrainedReason ? IBV_EVENT_SQ_DRAINED : IBV_EVENT_COMM_EST;
    } else if (ev.num == dat::EventNum::kProviderInternal &&
               (ev.reason == dat::kLinkUpReason || ev.reason == dat::kLinkDownReason)) {
      out.element.port_num = 1;
      out.event_type = ev.reason == dat::kLinkUpReason ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR;
    } else if (ev.num == dat::EventNum::kEvdOverflow) {
      // A CQ overrun: completions found it full.  Nothing is lost: they wait
      // in the engine, and the queue pairs with them, until it is polled.
      auto it = ctx->cqs.find(ev.handle);
      if (it == ctx->cqs.end()) continue;
      out.element.cq = &it->second->cq;
      out.event_type = IBV_EVENT_CQ_ERR;
    } else if (ev.num == dat::EventNum::kProviderInternal &&
               ev.reason == dat::kSrqLowWatermarkReason) {
      auto it = ctx->srqs.find(ev.handle);
      if (it == ctx->srqs.end()) continue;  // an EP's watermark: not a verbs event
      it->second->limit = 0;                // the SRQ is disarmed (ibv_modify_srq(3))
      out.element.srq = &it->second->srq;
      out.event_type = IBV_EVENT_SRQ_LIMIT_REACHED;
    } else {
      continue;
    }
    ctx->async_q.push_back(out);
    const uint64_t one = 1;
    (void)!write(ctx->vctx.context.async_fd, &one, sizeof(one));
  }
}

void async_register(Context* ctx, const dat::Object* o, Qp* qp, Srq* srq, Cq* cq) {
  std::lock_guard<std::mutex> g(ctx->async_mu);
  if (qp != nullptr) ctx->qps[o] = qp;
  if (srq != nullptr) ctx->srqs[o] = srq;
  if (cq != nullptr) ctx->cqs[o] = cq;
}

void async_forget(Context* ctx, const dat::Object* o, const void* element) {
  std::lock_guard<std::mutex> g(ctx->async_mu);
  ctx->qps.erase(o);
  ctx->srqs.erase(o);
  ctx->cqs.erase(o);
  // Its events not yet read go with it (ibv_get_async_event passes over
  // their counts on the eventfd).
  std::erase_if(ctx->async_q, [element](const ibv_async_event& e) {
    return e.element.qp == element || e.element.srq == element || e.element.cq == element;
  });
}

}  // namespace dpdat::verbs

// Registered memory is never given to the kernel's DMA: fork needs nothing.
DPDAT_EXPORT int ibv_fork_init() { return 0; }
DPDAT_EXPORT ibv_fork_status ibv_is_fork_initialized() { return IBV_FORK_UNNEEDED; }
DPDAT_EXPORT int ibv_dontfork_range(void*, size_t) { return 0; }
DPDAT_EXPORT int ibv_dofork_range(void*, size_t) { return 0; }

// No sysfs behind dpdat's devices.
DPDAT_EXPORT int ibv_read_sysfs_file(const char*, const char*, char*, size_t) { return -1; }
DPDAT_EXPORT int ibv_read_ibdev_sysfs_file(char*, size_t, const char*, const char*, ...) {
  return -1;
}
DPDAT_EXPORT const char* ibv_get_sysfs_path() { return "/sys"; }
