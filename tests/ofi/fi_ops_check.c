/* Checks the dpdat libfabric provider's operations beyond fi_pingpong, as a
 * consumer sees them, between two processes:
 *   fi_ops_check server PORT
 *   fi_ops_check client SERVER_IP PORT
 * CM data both ways (56 bytes each, carrying the server's buffer address and
 * key), RMA write and read back, remote CQ data through fi_writedata (a
 * receive at the server), 8-byte FI_SUM (fetch, inject) and FI_CSWAP
 * atomics, 320 injected writes (the inject slots wrap) and one with
 * FI_COMPLETION, fi_cq_sread / fi_eq_sread timeouts, a refused connection (EQ
 * error entry), an absent call (-FI_ENOSYS), unmet hints (-FI_ENODATA) and
 * a protection fault (a CQ error entry with FI_EACCES and the provider's
 * reason).  Prints "fi_ops_check <role>: ok" and exits 0 when everything
 * matched; a line naming what did not, and exit 1, otherwise. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK_PROGRAM "fi_ops_check"
#include "fi_check.h"

enum { BUF = 1 << 16, ATOMIC_OFF = 8192, CM_LEN = 56 };
struct cm_blob {
  uint64_t addr, key;
  unsigned char fill[CM_LEN - 16];
};

static const char* role = "?";
static struct fi_info *hints, *info;
static struct fid_fabric* fabric;
static struct fid_domain* domain;
static struct fid_eq* eq;
static struct fid_cq *txcq, *rxcq;
static struct fid_ep* ep;
static struct fid_mr* mr;
static unsigned char* buf;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void make_hints(void) {
  hints = fi_allocinfo();
  hints->fabric_attr->prov_name = strdup("dpdat");
  hints->ep_attr->type = FI_EP_MSG;
  hints->caps = FI_MSG | FI_RMA | FI_ATOMIC;
  hints->mode = FI_RX_CQ_DATA;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
}

/* One completion from cq (spinning, 10 s at most). */
static void wait_cq(struct fid_cq* cq, struct fi_cq_data_entry* out, const char* what) {
  double end = now_s() + 10;
  for (;;) {
    ssize_t r = fi_cq_read(cq, out, 1);
    if (r == 1) return;
    if (r == -FI_EAVAIL) {
      struct fi_cq_err_entry e = {0};
      fi_cq_readerr(cq, &e, 0);
      CHECK(0, "%s: error completion %d (%s)", what, e.err,
            fi_cq_strerror(cq, e.prov_errno, e.err_data, NULL, 0));
    }
    CHECK(r == -FI_EAGAIN, "%s: fi_cq_read = %zd", what, r);
    CHECK(now_s() < end, "%s: no completion in 10 s", what);
  }
}

static void open_common(struct fi_info* fi) {
  int ret;
  struct fi_cq_attr ca = {.size = 64, .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_NONE};
  OK(fi_domain(fabric, fi, &domain, NULL));
  OK(fi_cq_open(domain, &ca, &txcq, NULL));
  OK(fi_cq_open(domain, &ca, &rxcq, NULL));
  buf = aligned_alloc(4096, BUF);
  memset(buf, 0, BUF);
  OK(fi_mr_reg(domain, buf, BUF,
               FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0,
               &mr, NULL));
  OK(fi_endpoint(domain, fi, &ep, NULL));
  OK(fi_ep_bind(ep, &eq->fid, 0));
  OK(fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT));
  OK(fi_ep_bind(ep, &rxcq->fid, FI_RECV));
  OK(fi_enable(ep));
}

static void wait_event(uint32_t want, void* data, size_t* len) {
  unsigned char entry[sizeof(struct fi_eq_cm_entry) + 256];
  uint32_t ev = 0;
  ssize_t r = fi_eq_sread(eq, &ev, entry, sizeof(entry), 10000, 0);
  if (r == -FI_EAVAIL) {
    struct fi_eq_err_entry e = {0};
    fi_eq_readerr(eq, &e, 0);
    CHECK(0, "EQ error %d (%s)", e.err, fi_eq_strerror(eq, e.prov_errno, e.err_data, NULL, 0));
  }
  CHECK(r >= (ssize_t)sizeof(struct fi_eq_cm_entry) && ev == want, "EQ event %u (%zd), wanted %u",
        ev, r, want);
  size_t n = (size_t)r - sizeof(struct fi_eq_cm_entry);
  if (data != NULL) memcpy(data, entry + sizeof(struct fi_eq_cm_entry), n);
  if (len != NULL) *len = n;
  if (want == FI_CONNREQ) info = ((struct fi_eq_cm_entry*)entry)->info;
}

static int server(const char* port) {
  int ret;
  role = "server";
  OK(fi_getinfo(FI_VERSION(1, 17), NULL, port, FI_SOURCE, hints, &info));
  struct fi_eq_attr ea = {.size = 16, .wait_obj = FI_WAIT_UNSPEC};
  OK(fi_fabric(info->fabric_attr, &fabric, NULL));
  OK(fi_eq_open(fabric, &ea, &eq, NULL));
  struct fid_pep* pep;
  OK(fi_passive_ep(fabric, info, &pep, NULL));
  OK(fi_pep_bind(pep, &eq->fid, 0));
  OK(fi_listen(pep));
  printf("fi_ops_check server: listening\n");
  fflush(stdout);

  struct cm_blob in;
  size_t n = 0;
  wait_event(FI_CONNREQ, &in, &n);
  CHECK(n == CM_LEN, "connection request carried %zu bytes of CM data", n);
  for (int i = 0; i < CM_LEN - 16; ++i) CHECK(in.fill[i] == (unsigned char)(i + 1), "CM data");
  open_common(info);
  uint64_t init = 5;
  memcpy(buf + ATOMIC_OFF, &init, 8);
  for (int i = 0; i < 4; ++i)
    OK((int)fi_recv(ep, buf + 32768 + i * 1024, 1024, fi_mr_desc(mr), 0, NULL));
  struct cm_blob out = {.addr = (uintptr_t)buf, .key = fi_mr_key(mr)};
  for (int i = 0; i < CM_LEN - 16; ++i) out.fill[i] = (unsigned char)(200 - i);
  OK(fi_accept(ep, &out, CM_LEN));
  wait_event(FI_CONNECTED, NULL, NULL);

  /* the client's fi_writedata: a receive completion with the data */
  struct fi_cq_data_entry c;
  wait_cq(rxcq, &c, "remote CQ data");
  CHECK((c.flags & FI_REMOTE_CQ_DATA) && c.data == 0xABCD1234u, "remote CQ data %#llx flags %#llx",
        (unsigned long long)c.data, (unsigned long long)c.flags);
  for (int i = 0; i < 64; ++i) CHECK(buf[16384 + i] == (unsigned char)(i ^ 0x5A), "written data");
  /* tell the client, then wait for its last message (a send with data) */
  strcpy((char*)buf + 40000, "seen");
  OK((int)fi_send(ep, buf + 40000, 5, fi_mr_desc(mr), 0, NULL));
  wait_cq(txcq, &c, "ack send");
  wait_cq(rxcq, &c, "final message");
  CHECK((c.flags & FI_RECV) && (c.flags & FI_REMOTE_CQ_DATA) && c.data == 77 && c.len == 5,
        "final message flags %#llx data %llu len %zu", (unsigned long long)c.flags,
        (unsigned long long)c.data, c.len);
  /* the client's protection fault breaks the connection: FI_SHUTDOWN */
  wait_event(FI_SHUTDOWN, NULL, NULL);
  OK(fi_close(&ep->fid));
  OK(fi_close(&mr->fid));
  OK(fi_close(&txcq->fid));
  OK(fi_close(&rxcq->fid));
  OK(fi_close(&pep->fid));
  OK(fi_close(&domain->fid));
  OK(fi_close(&eq->fid));
  OK(fi_close(&fabric->fid));
  printf("fi_ops_check server: ok\n");
  return 0;
}

static int client(const char* ip, const char* port) {
  int ret;
  role = "client";
  /* unmet hints */
  struct fi_info *h2 = fi_dupinfo(hints), *none = NULL;
  h2->ep_attr->type = FI_EP_DGRAM;
  CHECK(fi_getinfo(FI_VERSION(1, 17), ip, port, 0, h2, &none) == -FI_ENODATA, "dgram hints met");
  h2->ep_attr->type = FI_EP_MSG;
  h2->caps |= FI_TAGGED;
  CHECK(fi_getinfo(FI_VERSION(1, 17), ip, port, 0, h2, &none) == -FI_ENODATA, "tagged hints met");
  h2->caps = hints->caps | FI_TRIGGER;
  CHECK(fi_getinfo(FI_VERSION(1, 17), ip, port, 0, h2, &none) == -FI_ENODATA,
        "FI_TRIGGER hints met");
  /* remote access counters are offered when asked */
  h2->caps = hints->caps | FI_RMA_EVENT;
  OK(fi_getinfo(FI_VERSION(1, 17), ip, port, 0, h2, &none));
  CHECK((none->caps & FI_RMA_EVENT) && (none->rx_attr->caps & FI_RMA_EVENT),
        "FI_RMA_EVENT asked: caps %#llx", (unsigned long long)none->caps);
  fi_freeinfo(none);
  none = NULL;
  h2->caps = hints->caps;
  h2->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
  CHECK(fi_getinfo(FI_VERSION(1, 17), ip, port, 0, h2, &none) == -FI_ENODATA,
        "shared transmit context hints met");
  h2->ep_attr->tx_ctx_cnt = 1;
  h2->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
  h2->caps |= FI_MULTI_RECV;
  CHECK(fi_getinfo(FI_VERSION(1, 17), ip, port, 0, h2, &none) == -FI_ENODATA,
        "multi-receive on a shared receive context met");
  fi_freeinfo(h2);

  OK(fi_getinfo(FI_VERSION(1, 17), ip, port, 0, hints, &info));
  struct fi_eq_attr ea = {.size = 16, .wait_obj = FI_WAIT_UNSPEC};
  OK(fi_fabric(info->fabric_attr, &fabric, NULL));
  OK(fi_eq_open(fabric, &ea, &eq, NULL));
  open_common(info);

  /* absent calls and timeouts */
  struct fi_cntr_attr cattr = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_MUTEX_COND};
  struct fid_cntr* cntr;
  CHECK(fi_cntr_open(domain, &cattr, &cntr, NULL) == -FI_ENOSYS,
        "counter with FI_WAIT_MUTEX_COND not ENOSYS");
  /* a CQ without a wait object has no descriptor to give; FI_WAIT_UNSPEC
   * (the EQ) is the provider's pick, a descriptor under automatic progress */
  {
    int fd = -1;
    CHECK(fi_control(&txcq->fid, FI_GETWAIT, &fd) == -FI_ENODATA, "CQ FI_GETWAIT not ENODATA");
    CHECK(fi_control(&eq->fid, FI_GETWAIT, &fd) == 0 && fd >= 0, "EQ FI_GETWAIT gave no fd");
  }
  /* no shared transmit contexts; no multi-receive on a shared receive one */
  {
    struct fi_rx_attr rxa = {.caps = FI_MSG | FI_RECV | FI_MULTI_RECV};
    struct fi_tx_attr txa = {0};
    struct fid_ep* srx;
    struct fid_stx* stx;
    CHECK(fi_srx_context(domain, &rxa, &srx, NULL) == -FI_EINVAL,
          "fi_srx_context with FI_MULTI_RECV not EINVAL");
    CHECK(fi_stx_context(domain, &txa, &stx, NULL) == -FI_ENOSYS, "fi_stx_context not ENOSYS");
  }
  struct fi_cq_data_entry c;
  double t0 = now_s();
  ssize_t r = fi_cq_sread(rxcq, &c, 1, NULL, 200);
  double took = now_s() - t0;
  CHECK(r == -FI_EAGAIN && took >= 0.19 && took < 5, "fi_cq_sread timeout: %zd after %.3f s", r,
        took);
  uint32_t ev;
  unsigned char entry[256];
  t0 = now_s();
  r = fi_eq_sread(eq, &ev, entry, sizeof(entry), 200, 0);
  took = now_s() - t0;
  CHECK(r == -FI_EAGAIN && took >= 0.19 && took < 5, "fi_eq_sread timeout: %zd after %.3f s", r,
        took);
  size_t optlen = sizeof(size_t);
  size_t cm_size = 0;
  OK(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &cm_size, &optlen));
  CHECK(cm_size >= CM_LEN, "FI_OPT_CM_DATA_SIZE %zu", cm_size);

  /* a refused connection: nobody listens on port+1 */
  {
    struct fid_ep* ep2;
    struct fi_info* i2 = fi_dupinfo(info);
    OK(fi_endpoint(domain, i2, &ep2, NULL));
    OK(fi_ep_bind(ep2, &eq->fid, 0));
    OK(fi_ep_bind(ep2, &txcq->fid, FI_TRANSMIT));
    OK(fi_ep_bind(ep2, &rxcq->fid, FI_RECV));
    struct sockaddr_in* sa = (struct sockaddr_in*)i2->dest_addr;
    sa->sin_port = htons((uint16_t)(atoi(port) + 1));
    OK(fi_connect(ep2, sa, NULL, 0));
    r = fi_eq_sread(eq, &ev, entry, sizeof(entry), 10000, 0);
    CHECK(r == -FI_EAVAIL, "refused connect: fi_eq_sread = %zd", r);
    struct fi_eq_err_entry e = {0};
    CHECK(fi_eq_readerr(eq, &e, 0) == sizeof(e) && e.err == FI_ECONNREFUSED && e.fid == &ep2->fid,
          "refused connect: err %d", e.err);
    OK(fi_close(&ep2->fid));
    fi_freeinfo(i2);
  }

  struct cm_blob out, in;
  memset(&out, 0, sizeof(out));
  for (int i = 0; i < CM_LEN - 16; ++i) out.fill[i] = (unsigned char)(i + 1);
  for (int i = 0; i < 2; ++i)
    OK((int)fi_recv(ep, buf + 32768 + i * 1024, 1024, fi_mr_desc(mr), 0, NULL));
  OK(fi_connect(ep, info->dest_addr, &out, CM_LEN));
  size_t n = 0;
  wait_event(FI_CONNECTED, &in, &n);
  CHECK(n == CM_LEN, "accept carried %zu bytes of CM data", n);
  for (int i = 0; i < CM_LEN - 16; ++i) CHECK(in.fill[i] == (unsigned char)(200 - i), "CM data");
  void* desc = fi_mr_desc(mr);

  /* RMA write, read back */
  for (int i = 0; i < 4096; ++i) buf[i] = (unsigned char)(i * 7 + 3);
  OK((int)fi_write(ep, buf, 4096, desc, 0, in.addr + 4096, in.key, buf));
  wait_cq(txcq, &c, "write");
  CHECK(c.op_context == buf && (c.flags & FI_WRITE) && (c.flags & FI_RMA), "write completion");
  OK((int)fi_read(ep, buf + 8192, 4096, desc, 0, in.addr + 4096, in.key, buf + 8192));
  wait_cq(txcq, &c, "read");
  CHECK(c.op_context == buf + 8192 && (c.flags & FI_READ), "read completion");
  CHECK(memcmp(buf, buf + 8192, 4096) == 0, "read-back differs from what was written");

  /* atomics on the server's u64 (5): +10 -> 15, CSWAP 15 -> 99, inject +1 -> 100 */
  uint64_t *op = (uint64_t*)(buf + 12288), *res = (uint64_t*)(buf + 12296),
           *cmp = (uint64_t*)(buf + 12304);
  *op = 10;
  OK((int)fi_fetch_atomic(ep, op, 1, desc, res, desc, 0, in.addr + ATOMIC_OFF, in.key, FI_UINT64,
                          FI_SUM, res));
  wait_cq(txcq, &c, "fetch-add");
  CHECK(*res == 5 && (c.flags & FI_ATOMIC), "fetch-add returned %llu", (unsigned long long)*res);
  *op = 99;
  *cmp = 15;
  OK((int)fi_compare_atomic(ep, op, 1, desc, cmp, desc, res, desc, 0, in.addr + ATOMIC_OFF, in.key,
                            FI_UINT64, FI_CSWAP, res));
  wait_cq(txcq, &c, "compare-swap");
  CHECK(*res == 15, "compare-swap returned %llu", (unsigned long long)*res);
  *op = 1;
  OK((int)fi_inject_atomic(ep, op, 1, 0, in.addr + ATOMIC_OFF, in.key, FI_UINT64, FI_SUM));
  OK((int)fi_read(ep, res, 8, desc, 0, in.addr + ATOMIC_OFF, in.key, res));
  wait_cq(txcq, &c, "read atomic target");
  CHECK(*res == 100, "atomic target holds %llu, want 100", (unsigned long long)*res);
  size_t cnt = 0;
  CHECK(fi_atomicvalid(ep, FI_UINT64, FI_SUM, &cnt) == 0 && cnt == 1, "atomicvalid SUM");
  CHECK(fi_atomicvalid(ep, FI_UINT64, FI_PROD, &cnt) != 0, "atomicvalid PROD accepted");

  /* injected writes, five times the provider's 64 inject slots (which
   * complete one in 16, freeing the ones before): each lands, none leaves a
   * completion, and FI_INJECT | FI_COMPLETION gets its own */
  {
    enum { N = 320, OFF = 45056 };
    uint64_t v;
    double end = now_s() + 10;
    for (int i = 0; i < N; ++i) {
      v = 0x1000000ull * (uint64_t)i + 0x77;
      for (;;) {
        r = fi_inject_write(ep, &v, 8, 0, in.addr + OFF + 8 * (uint64_t)i, in.key);
        if (r != -FI_EAGAIN) break;
        CHECK(fi_cq_read(txcq, &c, 1) == -FI_EAGAIN, "an inject left a completion");
        CHECK(now_s() < end, "inject %d: slots never freed", i);
      }
      CHECK(r == 0, "fi_inject_write %d = %zd", i, r);
    }
    v = 0x5151;
    struct iovec iv = {&v, 8};
    struct fi_rma_iov ri = {in.addr + OFF + 8 * N, 8, in.key};
    struct fi_msg_rma m = {&iv, NULL, 1, 0, &ri, 1, &v, 0};
    OK((int)fi_writemsg(ep, &m, FI_INJECT | FI_COMPLETION));
    wait_cq(txcq, &c, "inject write with completion");
    CHECK(c.op_context == &v && (c.flags & FI_WRITE), "inject completion context %p", c.op_context);
    OK((int)fi_read(ep, buf + 24576, 8 * (N + 1), desc, 0, in.addr + OFF, in.key, buf + 24576));
    wait_cq(txcq, &c, "read injected");
    CHECK(c.op_context == buf + 24576, "read completion after injects: context %p", c.op_context);
    for (int i = 0; i < N; ++i) {
      memcpy(&v, buf + 24576 + 8 * i, 8);
      CHECK(v == 0x1000000ull * (uint64_t)i + 0x77, "injected write %d holds %#llx", i,
            (unsigned long long)v);
    }
    memcpy(&v, buf + 24576 + 8 * N, 8);
    CHECK(v == 0x5151, "inject write with completion holds %#llx", (unsigned long long)v);
    CHECK(fi_cq_read(txcq, &c, 1) == -FI_EAGAIN, "a stray completion after the injects");
  }

  /* remote CQ data: write 64 bytes with data, the server checks and acks */
  for (int i = 0; i < 64; ++i) buf[20000 + i] = (unsigned char)(i ^ 0x5A);
  OK((int)fi_writedata(ep, buf + 20000, 64, desc, 0xABCD1234u, 0, in.addr + 16384, in.key, NULL));
  wait_cq(txcq, &c, "writedata");
  wait_cq(rxcq, &c, "server's ack");
  CHECK(strcmp((char*)buf + 32768, "seen") == 0 && c.len == 5, "ack '%s' len %zu",
        (char*)buf + 32768, c.len);
  strcpy((char*)buf + 40000, "done");
  OK((int)fi_senddata(ep, buf + 40000, 5, desc, 77, 0, NULL));
  wait_cq(txcq, &c, "final send");

  /* protection fault: a key the server never gave */
  OK((int)fi_write(ep, buf, 64, desc, 0, in.addr, in.key + 1000, buf));
  double end = now_s() + 10;
  do {
    r = fi_cq_read(txcq, &c, 1);
  } while (r == -FI_EAGAIN && now_s() < end);
  CHECK(r == -FI_EAVAIL, "protection fault: fi_cq_read = %zd", r);
  struct fi_cq_err_entry e = {0};
  CHECK(fi_cq_readerr(txcq, &e, 0) == 1, "no error entry");
  const char* why = fi_cq_strerror(txcq, e.prov_errno, e.err_data, NULL, 0);
  CHECK(e.err == FI_EACCES && e.op_context == buf && strstr(why, "remote access") != NULL,
        "protection fault: err %d context %p reason '%s'", e.err, e.op_context, why);
  printf("fi_ops_check client: protection fault reported as %s: %s\n", fi_strerror(e.err), why);

  OK(fi_close(&ep->fid));
  OK(fi_close(&mr->fid));
  OK(fi_close(&txcq->fid));
  OK(fi_close(&rxcq->fid));
  OK(fi_close(&domain->fid));
  OK(fi_close(&eq->fid));
  OK(fi_close(&fabric->fid));
  printf("fi_ops_check client: ok\n");
  return 0;
}

int main(int argc, char** argv) {
  make_hints();
  if (argc == 3 && strcmp(argv[1], "server") == 0) return server(argv[2]);
  if (argc == 4 && strcmp(argv[1], "client") == 0) return client(argv[2], argv[3]);
  fprintf(stderr, "usage: fi_ops_check server PORT | client SERVER_IP PORT\n");
  return 2;
}
