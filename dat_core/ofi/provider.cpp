// fi_prov_ini, fi_getinfo and the fabric object.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "rdm.hpp"

namespace dpdat::ofi {

namespace {

constexpr int kOpenRetries = 100;  // 10 s
constexpr uint64_t kPrimaryCaps = FI_MSG | FI_RMA | FI_ATOMIC;
constexpr uint64_t kSecondaryCaps = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
                                    FI_REMOTE_WRITE | FI_LOCAL_COMM | FI_REMOTE_COMM |
                                    FI_MULTI_RECV;
// Offered when asked (or without hints): FI_RMA_EVENT, counters of the
// remote WRITEs and READs an endpoint serves.
constexpr uint64_t kCaps = kPrimaryCaps | kSecondaryCaps | FI_RMA_EVENT;
// Which capabilities the transmit and the receive attributes hold.
constexpr uint64_t kTxCaps = kPrimaryCaps | FI_SEND | FI_READ | FI_WRITE;
constexpr uint64_t kRxCaps =
    kPrimaryCaps | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_MULTI_RECV | FI_RMA_EVENT;
// What a consumer must accept: provider keys; offsets (no FI_MR_VIRT_ADDR)
// and virtual addresses both work.  No FI_MR_LOCAL: a buffer without a
// descriptor goes through the domain's local-only key (iov_sges), so the
// bit is never reported, even to a consumer that offers it (ofi_rxm always
// does, and copies every eager message through its own registered buffers
// when the core provider keeps it).  Descriptors are honoured when given.
constexpr uint64_t kMrRequired = FI_MR_PROV_KEY;
constexpr uint64_t kMrOptional = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED;
constexpr uint64_t kMsgOrder = FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_RAS | FI_ORDER_WAR |
                               FI_ORDER_WAW | FI_ORDER_WAS | FI_ORDER_SAR | FI_ORDER_SAW |
                               FI_ORDER_SAS;

// The reliable-datagram endpoint (rdm.hpp): messages and tagged messages,
// matched by source when asked (FI_DIRECTED_RECV), with the sender's
// address (FI_SOURCE).
constexpr uint64_t kRdmPrimaryCaps = FI_MSG | FI_TAGGED;
constexpr uint64_t kRdmAskedCaps = FI_DIRECTED_RECV | FI_SOURCE;  // only when asked
constexpr uint64_t kRdmSecondaryCaps = FI_SEND | FI_RECV | FI_LOCAL_COMM | FI_REMOTE_COMM;
constexpr uint64_t kRdmCaps = kRdmPrimaryCaps | kRdmSecondaryCaps | kRdmAskedCaps;
constexpr size_t kRdmCqDataSize = 8;
// Messages to one peer share a connection: they arrive in the order sent.
constexpr uint64_t kRdmOrder = FI_ORDER_SAS;
constexpr size_t kRdmRxSize = 1024;  // posted receives are a list: any number fits

bool str_is(const char* s, const char* want) { return s == nullptr || std::strcmp(s, want) == 0; }

// Whether the hints can be met; the reason goes to the log.
bool hints_ok(uint32_t version, const fi_info* h, const std::string& dom_name, fi_ep_type type) {
  auto no = [type](const char* why) {
    FI_INFO(&g_prov, FI_LOG_CORE, "hints not met (%s endpoint): %s\n",
            type == FI_EP_RDM ? "RDM" : "MSG", why);
    return false;
  };
  const bool rdm = type == FI_EP_RDM;
  const uint64_t caps = rdm ? kRdmCaps : kCaps;
  if ((h->caps & ~caps) != 0) return no("capabilities");
  if (h->addr_format != FI_FORMAT_UNSPEC && h->addr_format != FI_SOCKADDR_IN &&
      h->addr_format != FI_SOCKADDR)
    return no("address format");
  if (h->ep_attr != nullptr) {
    if (h->ep_attr->type != FI_EP_UNSPEC && h->ep_attr->type != type) return no("endpoint type");
    if (rdm && (h->ep_attr->tx_ctx_cnt > 1 || h->ep_attr->rx_ctx_cnt > 1))
      return no("shared or scalable contexts");
    // A shared receive context (fi_srx_context), not a shared transmit one.
    if (h->ep_attr->tx_ctx_cnt > 1 ||
        (h->ep_attr->rx_ctx_cnt > 1 && h->ep_attr->rx_ctx_cnt != FI_SHARED_CONTEXT))
      return no("shared transmit or scalable contexts");
    // A shared queue hands each receive to one endpoint whole.
    if (h->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT &&
        ((h->caps | (h->rx_attr != nullptr ? h->rx_attr->caps : 0)) & FI_MULTI_RECV) != 0)
      return no("multi-receive buffers on a shared receive context");
    if (h->ep_attr->max_msg_size > (1u << 30)) return no("message size");
  }
  if (h->fabric_attr != nullptr && !str_is(h->fabric_attr->name, kFabricName))
    return no("fabric name");
  if (h->domain_attr != nullptr) {
    const fi_domain_attr* d = h->domain_attr;
    if (!str_is(d->name, dom_name.c_str())) return no("domain name");
    if (d->cq_data_size > (rdm ? kRdmCqDataSize : kCqDataSize)) return no("remote CQ data size");
    if (d->mr_key_size > 4) return no("key size");
    if (!rdm && d->av_type != FI_AV_UNSPEC) return no("address vector");
    if (rdm && d->av_type != FI_AV_UNSPEC && d->av_type != FI_AV_MAP && d->av_type != FI_AV_TABLE)
      return no("address vector");
    // Its protocol moves on in the consumer's calls.
    if (rdm && (d->data_progress == FI_PROGRESS_AUTO || d->control_progress == FI_PROGRESS_AUTO))
      return no("automatic progress");
    if ((d->caps & ~static_cast<uint64_t>(FI_LOCAL_COMM | FI_REMOTE_COMM)) != 0)
      return no("domain capabilities");
    // mr_mode 0 from a consumer of API 1.5+ means it takes no MR mode bit;
    // FI_MR_BASIC (and FI_MR_UNSPEC of older consumers) is the basic mode,
    // which has provider keys.
    const uint64_t mr = static_cast<uint64_t>(d->mr_mode);
    const bool basic =
        mr == FI_MR_BASIC || (mr == FI_MR_UNSPEC && FI_VERSION_LT(version, FI_VERSION(1, 5)));
    // (Keys matter to RMA alone, which the RDM endpoint does not offer.)
    if (!rdm && !basic && (mr & FI_MR_PROV_KEY) == 0) return no("memory registration mode");
  }
  if (h->tx_attr != nullptr) {
    if ((h->tx_attr->caps & ~caps) != 0) return no("transmit capabilities");
    if (h->tx_attr->inject_size > kInjectSize) return no("inject size");
    if (h->tx_attr->iov_limit > rc::kMaxSge - (rdm ? 1 : 0)) return no("transmit iov limit");
    if (h->tx_attr->rma_iov_limit > 1) return no("RMA iov limit");
    if (h->tx_attr->size > dat::Limits{}.max_dto_per_ep) return no("transmit queue size");
    if ((h->tx_attr->msg_order & ~(rdm ? kRdmOrder : kMsgOrder)) != 0) return no("message order");
  }
  if (h->rx_attr != nullptr) {
    if ((h->rx_attr->caps & ~caps) != 0) return no("receive capabilities");
    if (h->rx_attr->iov_limit > rc::kMaxSge) return no("receive iov limit");
    if (h->rx_attr->total_buffered_recv > 0) return no("buffered receive");
    // A shared receive context is as deep as an SRQ may be.
    const bool shared = h->ep_attr != nullptr && h->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT;
    if (!rdm &&
        h->rx_attr->size > (shared ? dat::Limits{}.max_recv_per_srq : dat::Limits{}.max_dto_per_ep))
      return no("receive queue size");
    if ((h->rx_attr->msg_order & ~(rdm ? kRdmOrder : kMsgOrder)) != 0) return no("message order");
  }
  return true;
}

// The primary capabilities of the hints; all of them when the hints name
// none (no hints, or only secondary ones).
uint64_t hints_caps_or_all(const fi_info* h) {
  if (h == nullptr) return kCaps;
  return (h->caps & kPrimaryCaps) != 0 ? h->caps : h->caps | kCaps;
}

void* dup_sin(uint32_t ip, uint16_t port) {
  auto* s = static_cast<sockaddr_in*>(std::malloc(sizeof(sockaddr_in)));
  if (s != nullptr) *s = make_sin(ip, port);
  return s;
}

}  // namespace

namespace {

// One entry for the interface cfg; 0, -FI_ENODATA when the arguments do not
// fit it, or another negative errno.
// What an RDM entry changes of the MSG one.
void make_rdm(const fi_info* hints, fi_info* fi) {
  const uint64_t asked = hints != nullptr ? hints->caps : 0;
  uint64_t caps = (asked & kRdmPrimaryCaps) != 0 ? asked & kRdmPrimaryCaps : kRdmPrimaryCaps;
  caps |= kRdmSecondaryCaps | (hints == nullptr ? kRdmAskedCaps : asked & kRdmAskedCaps);
  fi->caps = caps;
  fi->mode = 0;
  fi->handle = nullptr;
  fi->tx_attr->caps = caps & (kRdmPrimaryCaps | FI_SEND);
  fi->tx_attr->mode = 0;
  fi->tx_attr->msg_order = kRdmOrder;
  fi->tx_attr->comp_order = FI_ORDER_NONE;
  fi->tx_attr->iov_limit = rc::kMaxSge - 1;  // the header takes a segment
  fi->tx_attr->rma_iov_limit = 0;
  fi->tx_attr->size = hints != nullptr && hints->tx_attr != nullptr && hints->tx_attr->size != 0
                          ? std::min<size_t>(hints->tx_attr->size, rdm::kTxOps)
                          : rdm::kTxOps;
  fi->rx_attr->caps = caps & (kRdmPrimaryCaps | FI_RECV | kRdmAskedCaps);
  fi->rx_attr->mode = 0;
  fi->rx_attr->msg_order = kRdmOrder;
  fi->rx_attr->comp_order = FI_ORDER_NONE;
  fi->rx_attr->size = hints != nullptr && hints->rx_attr != nullptr && hints->rx_attr->size != 0
                          ? hints->rx_attr->size
                          : kRdmRxSize;
  fi->ep_attr->type = FI_EP_RDM;
  fi->ep_attr->protocol = FI_PROTO_UNSPEC;
  fi->ep_attr->mem_tag_format = 0xAAAAAAAAAAAAAAAAULL;  // every bit of the tag matches
  fi->ep_attr->max_order_raw_size = 0;
  fi->ep_attr->max_order_war_size = 0;
  fi->ep_attr->max_order_waw_size = 0;
  fi->ep_attr->rx_ctx_cnt = 1;
  fi_domain_attr* d = fi->domain_attr;
  const fi_domain_attr* hd = hints != nullptr ? hints->domain_attr : nullptr;
  d->control_progress = FI_PROGRESS_MANUAL;
  d->data_progress = FI_PROGRESS_MANUAL;
  d->av_type = hd != nullptr ? hd->av_type : FI_AV_UNSPEC;
  d->cq_data_size = kRdmCqDataSize;
  d->max_ep_srx_ctx = 0;
  // It needs no mode bit: a consumer of API 1.5+ gets the bits it offers
  // that the provider knows (none when it offers none).
  if (hd != nullptr && d->mr_mode != FI_MR_BASIC)
    d->mr_mode = static_cast<int>(static_cast<uint64_t>(hd->mr_mode) & (kMrRequired | kMrOptional));
}

int make_info(uint32_t version, const dat::IfaceConfig& cfg, const char* node, const char* service,
              uint64_t flags, const fi_info* hints, fi_ep_type type, fi_info** out) {
  *out = nullptr;
  if (hints != nullptr && !hints_ok(version, hints, cfg.name, type)) return -FI_ENODATA;
  if (type == FI_EP_RDM && hints != nullptr && hints->handle != nullptr) return -FI_ENODATA;

  // Addresses: node/service name the source with FI_SOURCE, else the
  // destination; the hints' addresses otherwise.  A passive endpoint as the
  // hints' handle lends its bound address to the endpoints of the entry.
  uint32_t src_ip = cfg.ip, dst_ip = 0;
  uint16_t src_port = 0, dst_port = 0;
  bool have_dst = false;
  uint16_t svc = 0;
  if (service != nullptr) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(service, &end, 10);
    if (end == service || *end != '\0' || v > 0xFFFF) return -FI_ENODATA;
    svc = static_cast<uint16_t>(v);
  }
  if (node != nullptr || service != nullptr) {
    uint32_t ip = cfg.ip;
    if (node != nullptr && !dat::parse_ipv4(node, &ip)) return -FI_ENODATA;
    if ((flags & FI_SOURCE) != 0) {
      if (ip != cfg.ip && ip != 0) return -FI_ENODATA;  // not this interface
      src_port = svc;
    } else {
      dst_ip = ip;
      dst_port = svc;
      have_dst = true;
    }
  }
  fid* handle = nullptr;
  if (hints != nullptr && hints->handle != nullptr) {
    uint32_t ip = 0;
    if (!pep_address(hints->handle, &ip, &src_port)) return -FI_EINVAL;
    if (ip != cfg.ip) return -FI_ENODATA;
    handle = hints->handle;
  } else if (hints != nullptr && hints->src_addr != nullptr) {
    uint32_t ip = 0;
    if (!parse_sin(hints->src_addr, hints->src_addrlen, &ip, &src_port)) return -FI_ENODATA;
    if (ip != cfg.ip && ip != 0) return -FI_ENODATA;
  }
  if (hints != nullptr && hints->dest_addr != nullptr && !have_dst) {
    if (!parse_sin(hints->dest_addr, hints->dest_addrlen, &dst_ip, &dst_port)) return -FI_ENODATA;
    have_dst = true;
  }

  fi_info* fi = fi_allocinfo();
  if (fi == nullptr) return -FI_ENOMEM;
  // The primary capabilities asked for (all without hints), with every
  // secondary one; the transmit and receive attributes carry their own
  // halves of them.
  const bool shared_rx = hints != nullptr && hints->ep_attr != nullptr &&
                         hints->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT;
  fi->caps = hints_caps_or_all(hints) | kSecondaryCaps;
  if (shared_rx) fi->caps &= ~static_cast<uint64_t>(FI_MULTI_RECV);
  fi->handle = handle;
  // Remote CQ data of an RDMA WRITE consumes a receive: offered to consumers
  // that accept FI_RX_CQ_DATA.
  const bool rx_cq_data = hints == nullptr || (hints->mode & FI_RX_CQ_DATA) != 0;
  fi->mode = rx_cq_data ? FI_RX_CQ_DATA : 0;
  fi->addr_format = FI_SOCKADDR_IN;
  fi->src_addrlen = sizeof(sockaddr_in);
  fi->src_addr = dup_sin(src_ip, src_port);
  if (have_dst) {
    fi->dest_addrlen = sizeof(sockaddr_in);
    fi->dest_addr = dup_sin(dst_ip, dst_port);
  }

  fi->tx_attr->caps = fi->caps & kTxCaps;
  fi->tx_attr->mode = fi->mode;
  fi->tx_attr->op_flags =
      hints != nullptr && hints->tx_attr != nullptr ? hints->tx_attr->op_flags : 0;
  fi->tx_attr->msg_order = kMsgOrder;
  fi->tx_attr->comp_order = FI_ORDER_STRICT;
  fi->tx_attr->inject_size = kInjectSize;
  // Queue sizes: what the hints ask for (checked against the limit above),
  // else ours.  ofi_rxm posts a receive buffer per receive slot it is given
  // (16 KiB each by default), so a larger size than asked costs it memory.
  const auto hinted = [](size_t asked, size_t ours) { return asked != 0 ? asked : ours; };
  fi->tx_attr->size =
      hinted(hints != nullptr && hints->tx_attr != nullptr ? hints->tx_attr->size : 0, kTxSize);
  fi->tx_attr->iov_limit = rc::kMaxSge;
  fi->tx_attr->rma_iov_limit = 1;
  fi->rx_attr->caps = fi->caps & kRxCaps;
  fi->rx_attr->mode = fi->mode;
  fi->rx_attr->op_flags =
      hints != nullptr && hints->rx_attr != nullptr ? hints->rx_attr->op_flags : 0;
  fi->rx_attr->msg_order = kMsgOrder;
  fi->rx_attr->comp_order = FI_ORDER_STRICT;
  fi->rx_attr->size =
      hinted(hints != nullptr && hints->rx_attr != nullptr ? hints->rx_attr->size : 0, kRxSize);
  fi->rx_attr->iov_limit = rc::kMaxSge;

  fi->ep_attr->type = FI_EP_MSG;
  fi->ep_attr->protocol = FI_PROTO_RDMA_CM_IB_RC;
  fi->ep_attr->protocol_version = 1;
  fi->ep_attr->max_msg_size = 1u << 30;
  fi->ep_attr->max_order_raw_size = 1u << 30;
  fi->ep_attr->max_order_war_size = 1u << 30;
  fi->ep_attr->max_order_waw_size = 1u << 30;
  fi->ep_attr->tx_ctx_cnt = 1;
  fi->ep_attr->rx_ctx_cnt = shared_rx ? FI_SHARED_CONTEXT : 1;

  fi_domain_attr* d = fi->domain_attr;
  d->name = strdup(cfg.name.c_str());
  d->threading = FI_THREAD_SAFE;
  const fi_domain_attr* hd = hints != nullptr ? hints->domain_attr : nullptr;
  // Manual progress is the interface driven from the consumer's calls
  // (progress=inline); every other mode of the interface (a progress thread,
  // adaptive or busy) is automatic progress.
  const fi_progress cfg_progress =
      cfg.text.find("progress=inline") != std::string::npos ? FI_PROGRESS_MANUAL : FI_PROGRESS_AUTO;
  d->control_progress = hd != nullptr && hd->control_progress != FI_PROGRESS_UNSPEC
                            ? hd->control_progress
                            : cfg_progress;
  d->data_progress =
      hd != nullptr && hd->data_progress != FI_PROGRESS_UNSPEC ? hd->data_progress : cfg_progress;
  d->resource_mgmt = FI_RM_ENABLED;
  d->av_type = FI_AV_UNSPEC;
  uint64_t mr = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED;
  if (hd != nullptr && hd->mr_mode != FI_MR_BASIC && hd->mr_mode != FI_MR_UNSPEC)
    mr = static_cast<uint64_t>(hd->mr_mode) & (kMrRequired | kMrOptional);
  // FI_MR_BASIC, and FI_MR_UNSPEC of a consumer older than API 1.5 (the
  // provider picks basic or scalable then): the basic mode.
  if (hd != nullptr && (hd->mr_mode == FI_MR_BASIC ||
                        (hd->mr_mode == FI_MR_UNSPEC && FI_VERSION_LT(version, FI_VERSION(1, 5)))))
    mr = FI_MR_BASIC;
  d->mr_mode = static_cast<int>(mr);
  d->mr_key_size = 4;
  d->cq_data_size = rx_cq_data ? kCqDataSize : 0;
  d->cq_cnt = 4096;
  d->ep_cnt = 1024;
  d->tx_ctx_cnt = 1024;
  d->rx_ctx_cnt = 1024;
  d->max_ep_tx_ctx = 1;
  d->max_ep_rx_ctx = 1;
  d->max_ep_stx_ctx = 0;
  d->max_ep_srx_ctx = 1;
  d->mr_iov_limit = 1;
  d->mr_cnt = 1u << 16;
  d->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
  d->max_err_data = 256;

  fi->fabric_attr->name = strdup(kFabricName);
  fi->fabric_attr->prov_version = kProvVersion;
  fi->fabric_attr->api_version = kApiVersion;
  if (type == FI_EP_RDM) make_rdm(hints, fi);
  *out = fi;
  return 0;
}

}  // namespace

int getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
            const fi_info* hints, fi_info** info) {
  *info = nullptr;
  std::vector<dat::IfaceConfig> cfgs;
  std::string why;
  if (!process_ifaces(&cfgs, &why)) {
    FI_INFO(&g_prov, FI_LOG_CORE, "%s\n", why.c_str());
    return -FI_ENODATA;
  }
  fi_info* tail = nullptr;
  int err = -FI_ENODATA;
  // Connected endpoints first, then reliable-datagram ones, per interface.
  for (const dat::IfaceConfig& cfg : cfgs) {
    for (fi_ep_type type : {FI_EP_MSG, FI_EP_RDM}) {
      fi_info* fi = nullptr;
      const int r = make_info(version, cfg, node, service, flags, hints, type, &fi);
      if (r != 0) {
        if (r != -FI_ENODATA) err = r;
        continue;
      }
      (tail == nullptr ? *info : tail->next) = fi;
      tail = fi;
    }
  }
  return *info != nullptr ? 0 : err;
}

namespace {

// The interface's frame counters (DPDAT_FI_STATS), printed at every
// fi_close of the fabric, also one refused because objects are still open.
void print_stats(dat::Iface* iface) {
  dat::Lock lk(iface);
  const dat::Iface::Frames fr = iface->frames();
  // looped_frames: of rx_frames, those the link looped back (sends to the
  // interface's own address); pmtu: the path MTU its connections use.
  std::fprintf(stderr, "dpdat-fi: %s tx_frames %llu rx_frames %llu looped_frames %llu pmtu %u\n",
               iface->cfg.name.c_str(), static_cast<unsigned long long>(fr.tx),
               static_cast<unsigned long long>(fr.rx),
               static_cast<unsigned long long>(iface->link->looped_frames()), iface->pmtu);
}

int fabric_close(fid* f) {
  auto* fab = reinterpret_cast<Fabric*>(f);
  std::unique_lock lk(fab->mu);
  if (fab->ia != nullptr && stats_wanted()) print_stats(fab->ia->iface);
  if (fab->refs > 0) return -FI_EBUSY;
  // A graceful close waits for the IA's connections to go; abrupt otherwise.
  if (fab->ia != nullptr && !dat::ia_close(fab->ia, false).ok() &&
      !dat::ia_close(fab->ia, true).ok())
    FI_WARN(&g_prov, FI_LOG_FABRIC, "interface %s did not close\n", fab->cfg.name.c_str());
  fab->ia = nullptr;
  lk.unlock();
  delete fab;
  return 0;
}

int fabric_wait_open(fid_fabric*, fi_wait_attr*, fid_wait**) { return -FI_ENOSYS; }
int fabric_domain2(fid_fabric* fabric, fi_info* info, fid_domain** dom, uint64_t flags,
                   void* context) {
  if (flags != 0) return -FI_EINVAL;
  return domain_open(fabric, info, dom, context);
}

fi_ops g_fabric_fi_ops = {sizeof(fi_ops), fabric_close, no_bind,   no_control,
                          no_ops_open,    no_tostr,     no_ops_set};
fi_ops_fabric g_fabric_ops = {sizeof(fi_ops_fabric), domain_open, pep_open,      eq_open,
                              fabric_wait_open,      trywait,     fabric_domain2};

}  // namespace

int fabric_open(fi_fabric_attr* attr, fid_fabric** fabric, void* context) {
  if (attr == nullptr || !str_is(attr->name, kFabricName)) return -FI_ENODATA;
  auto* f = new Fabric();
  std::vector<dat::IfaceConfig> cfgs;
  std::string why;
  if (!process_ifaces(&cfgs, &why)) {
    FI_WARN(&g_prov, FI_LOG_FABRIC, "%s\n", why.c_str());
    delete f;
    return -FI_ENODEV;
  }
  if (cfgs.size() == 1) f->cfg = cfgs.front();
  f->fabric.fid.fclass = FI_CLASS_FABRIC;
  f->fabric.fid.context = context;
  f->fabric.fid.ops = &g_fabric_fi_ops;
  f->fabric.ops = &g_fabric_ops;
  f->fabric.api_version = attr->api_version;
  *fabric = &f->fabric;
  return 0;
}

int fabric_pick(Fabric* f, const fi_info* info) {
  const char* want =
      info != nullptr && info->domain_attr != nullptr ? info->domain_attr->name : nullptr;
  std::lock_guard lk(f->mu);
  if (!f->cfg.name.empty()) return want == nullptr || f->cfg.name == want ? 0 : -FI_EINVAL;
  std::vector<dat::IfaceConfig> cfgs;
  std::string why;
  if (!process_ifaces(&cfgs, &why)) return -FI_ENODEV;
  for (const dat::IfaceConfig& c : cfgs) {
    if (want == nullptr || c.name == want) {
      f->cfg = c;
      return 0;
    }
  }
  return -FI_EINVAL;
}

int fabric_ia(Fabric* f, const fi_info* info, dat::Ia** out) {
  if (int r = fabric_pick(f, info); r != 0) return r;
  std::lock_guard lk(f->mu);
  if (f->ia == nullptr) {
    dat::IfaceConfig cfg = f->cfg;
    // The first opener picks the interface's progress mode, unless the
    // configuration names one.
    if (cfg.text.find("progress=") == std::string::npos && info != nullptr &&
        info->domain_attr != nullptr) {
      const bool manual = info->domain_attr->data_progress == FI_PROGRESS_MANUAL;
      std::string err;
      dat::IfaceConfig c2;
      if (dat::parse_iface_config(cfg.text + (manual ? ";progress=inline" : ";progress=adaptive"),
                                  &c2, &err)) {
        c2.name = cfg.name;
        cfg = c2;
      }
    }
    dat::Ia* ia = nullptr;
    dat::Status st = dat::ia_open(cfg, 64, nullptr, nullptr, &ia);
    // A net_memif client started before its server finds no socket yet:
    // it tries again for a while (ranks of one job start in any order).
    for (int i = 0;
         i < kOpenRetries && !st.ok() && cfg.vdev.find("role=client") != std::string::npos; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      st = dat::ia_open(cfg, 64, nullptr, nullptr, &ia);
    }
    if (!st.ok()) {
      FI_WARN(&g_prov, FI_LOG_FABRIC, "cannot open interface %s (%s)\n", cfg.name.c_str(),
              cfg.text.c_str());
      return to_fi(st) == -FI_EINVAL ? -FI_ENODEV : to_fi(st);
    }
    f->ia = ia;
    // The configuration it runs with (check_wait_obj reads its progress mode).
    f->cfg = cfg;
  }
  *out = f->ia;
  return 0;
}

void provider_cleanup() {}

fi_provider g_prov = {
    kProvVersion, kApiVersion, {}, kProvName, getinfo, fabric_open, provider_cleanup,
};

}  // namespace dpdat::ofi

extern "C" __attribute__((visibility("default"))) fi_provider* fi_prov_ini(void) {
  return &dpdat::ofi::g_prov;
}
