/* Receive-side capabilities of the dpdat provider, between two processes:
 *   fi_rx_check server PORT MODE
 *   fi_rx_check client SERVER_IP PORT MODE
 * MODE multi: FI_MULTI_RECV.  The server sets FI_OPT_MIN_MULTI_RECV (and
 *   reads it back), posts two buffers with fi_recvmsg(FI_MULTI_RECV) and
 *   accepts; the client sends nine messages of different lengths back to
 *   back, each with remote CQ data.  Every completion must name its
 *   buffer's context, point `buf` where the message landed (right after
 *   the one before, in the first buffer until less than the minimum is
 *   left, then in the second), carry its length, data and bytes, and have
 *   FI_MULTI_RECV exactly on the message that released its buffer.
 * MODE srx: a shared receive context.  The server asks for
 *   rx_ctx_cnt = FI_SHARED_CONTEXT, opens fi_srx_context, posts four
 *   receives to it and binds both endpoints it accepts to it (each with a
 *   CQ of its own); the client connects two endpoints and sends two
 *   messages on each.  Every message must land in one of the context's
 *   buffers (each once) and complete on the CQ of the endpoint it came in
 *   on, in the order sent there; a receive posted to such an endpoint
 *   itself, and closing the context while endpoints use it, are refused.
 * MODE cntr: a counter with an FD wait object.  The server counts its
 *   endpoint's receives with a counter opened with FI_WAIT_FD (no receive
 *   CQ: the endpoint gets an internal one), takes its descriptor through
 *   fi_control(FI_GETWAIT) into an epoll set and waits there, after
 *   fi_trywait said nothing is pending, while the client sends three
 *   messages 100 ms apart; it must be woken, the counter reach 3 and the
 *   descriptor stay quiet once nothing is pending.
 * MODE rma: remote access counters (FI_RMA_EVENT).  The server asks for
 *   FI_RMA_EVENT, binds one counter with FI_REMOTE_WRITE and another with
 *   FI_REMOTE_READ to its endpoint (an FD counter is refused for them) and
 *   binds a third to its buffer's region (fi_mr_bind, FI_REMOTE_WRITE |
 *   FI_REMOTE_READ) and sends the client the buffer's address and key; the
 *   client does RDMA WRITEs (of one packet and of many), WRITEs with
 *   remote CQ data and READs, then a message.  When that message arrives
 *   the endpoint's counters must hold exactly the WRITEs (with data
 *   included) and the READs, the region's their sum, still after a pause,
 *   and the bytes must have moved.
 * MODE nodesc: buffers without descriptors.  Both ends ask for no
 *   FI_MR_LOCAL (every mode checks that fi_getinfo never reports it, even
 *   to hints that offer it).  The server posts receives into unregistered
 *   heap and stack memory with NULL descriptors (one iovec, two iovecs, a
 *   descriptor array mixing NULL and a registered region's); the client
 *   sends from unregistered memory (one and two iovecs, zero bytes from
 *   NULL), WRITEs from and READs into it, and fetches an atomic into it,
 *   all without descriptors; every byte must land.  Buffers no process can
 *   map (the first page, wrapping around, past the address space) are
 *   refused with -FI_EINVAL at post, on both the send and receive side.
 * MODE close: completions that precede fi_close.  The server accepts, sends
 *   one message and, without reading its CQ, waits for the client's
 *   disconnect (the client shuts down as soon as the message arrived) and
 *   closes its endpoint; the send's completion (acknowledged before the
 *   disconnect) must then still be on the CQ, successful and naming the
 *   send's context.  ofi_rxm closes a connection's endpoint when its peer
 *   disconnects and reads the CQ afterwards; fabtests' fi_rdm_multi_client
 *   waited for ever for such a send.
 * Prints "fi_rx_check <role>: ok" and exits 0 when everything matched; a
 * line naming what did not, and exit 1, otherwise. */
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
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define CHECK_PROGRAM "fi_rx_check"
#include "fi_check.h"

enum { BUF = 1 << 16, MULTI = 4096, MIN_MULTI = 256 };
static const char* role = "?";
static struct fid_fabric* fabric;
static struct fid_domain* domain;
static struct fid_eq* eq;
static struct fid_cq* cq;
static struct fid_ep* srx;
static struct fid_mr* mr;
static struct fid_cntr* mr_cntr; /* MODE rma: bound to mr, closed after it */
static char* buf;

/* The messages of the multi-receive exchange: buffer A takes 0..5 (3907
 * bytes: 189 left, below 256, released by 5), B takes 6..8 (4001 bytes). */
static const size_t kLens[] = {1000, 7, 500, 1200, 1000, 200, 3000, 1, 1000};
enum { NMSG = sizeof(kLens) / sizeof(kLens[0]) };

static unsigned char pattern(size_t msg, size_t i) { return (unsigned char)(msg * 31 + i * 7 + 1); }

static struct fi_info* make_hints(uint64_t caps) {
  struct fi_info* h = fi_allocinfo();
  h->fabric_attr->prov_name = strdup("dpdat");
  h->ep_attr->type = FI_EP_MSG;
  h->caps = FI_MSG | caps;
  h->mode = FI_RX_CQ_DATA | FI_LOCAL_MR;
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  return h;
}

static void open_common(struct fi_info* fi) {
  int ret;
  struct fi_eq_attr ea = {.size = 16, .wait_obj = FI_WAIT_UNSPEC};
  OK(fi_fabric(fi->fabric_attr, &fabric, NULL));
  OK(fi_eq_open(fabric, &ea, &eq, NULL));
  OK(fi_domain(fabric, fi, &domain, NULL));
  struct fi_cq_attr ca = {.size = 256, .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_NONE};
  OK(fi_cq_open(domain, &ca, &cq, NULL));
  buf = aligned_alloc(4096, BUF);
  memset(buf, 0, BUF);
  OK(fi_mr_reg(domain, buf, BUF,
               FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0,
               &mr, NULL));
}

/* An endpoint on `q` (the common CQ when NULL), on the shared receive
 * context when one is open. */
static struct fid_ep* open_ep_on(struct fi_info* fi, struct fid_cq* q) {
  int ret;
  struct fid_ep* ep;
  if (srx != NULL) fi->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
  OK(fi_endpoint(domain, fi, &ep, NULL));
  OK(fi_ep_bind(ep, &eq->fid, 0));
  OK(fi_ep_bind(ep, &(q != NULL ? q : cq)->fid, FI_TRANSMIT | FI_RECV));
  if (srx != NULL) OK(fi_ep_bind(ep, &srx->fid, 0));
  OK(fi_enable(ep));
  return ep;
}

static struct fid_ep* open_ep(struct fi_info* fi) { return open_ep_on(fi, NULL); }

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static uint32_t eq_event(struct fi_eq_cm_entry* entry) {
  uint32_t event = 0;
  ssize_t r = fi_eq_sread(eq, &event, entry, sizeof(*entry), 10000, 0);
  if (r == -FI_EAVAIL) {
    struct fi_eq_err_entry e = {0};
    fi_eq_readerr(eq, &e, 0);
    CHECK(0, "EQ error %d", e.err);
  }
  CHECK(r == (ssize_t)sizeof(*entry), "fi_eq_sread = %zd", r);
  return event;
}

/* q's next completion (10 s at most). */
static void cq_next_on(struct fid_cq* q, struct fi_cq_data_entry* c, const char* what) {
  const double end = now_s() + 10;
  ssize_t r;
  while ((r = fi_cq_read(q, c, 1)) == -FI_EAGAIN && now_s() < end) {
  }
  if (r == -FI_EAVAIL) {
    struct fi_cq_err_entry e = {0};
    fi_cq_readerr(q, &e, 0);
    CHECK(0, "%s: CQ error %d (%s) flags %#llx", what, e.err, fi_strerror(e.err),
          (unsigned long long)e.flags);
  }
  CHECK(r == 1, "%s: fi_cq_read = %zd", what, r);
}

static void cq_next(struct fi_cq_data_entry* c, const char* what) { cq_next_on(cq, c, what); }

/* ------------------------------------------------------------ multi-receive */

static void multi_post(struct fid_ep* ep) {
  int ret;
  size_t min = MIN_MULTI, got = 0, len = sizeof(got);
  OK(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)));
  OK(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &got, &len));
  CHECK(got == MIN_MULTI && len == sizeof(got), "FI_OPT_MIN_MULTI_RECV reads back %zu", got);
  for (int b = 0; b < 2; ++b) {
    struct iovec iov = {buf + b * MULTI, MULTI};
    void* desc = fi_mr_desc(mr);
    struct fi_msg m = {&iov, &desc, 1, 0, buf + b * MULTI, 0};
    OK((int)fi_recvmsg(ep, &m, FI_MULTI_RECV));
  }
}

static void multi_server(struct fid_ep* ep) {
  (void)ep;
  size_t off[2] = {0, 0};
  for (size_t i = 0; i < NMSG; ++i) {
    const int b = i < 6 ? 0 : 1;
    struct fi_cq_data_entry c;
    cq_next(&c, "multi-receive");
    char* want = buf + b * MULTI + off[b];
    const int release = i == 5 || i == NMSG - 1;
    CHECK(c.op_context == buf + b * MULTI, "message %zu: context %p, wanted buffer %d", i,
          c.op_context, b);
    CHECK(c.buf == want, "message %zu: buf at offset %td, wanted %zu", i,
          (char*)c.buf - (buf + b * MULTI), off[b]);
    CHECK(c.len == kLens[i], "message %zu: len %zu, wanted %zu", i, c.len, kLens[i]);
    CHECK((c.flags & (FI_RECV | FI_MSG)) == (FI_RECV | FI_MSG), "message %zu: flags %#llx", i,
          (unsigned long long)c.flags);
    CHECK(!!(c.flags & FI_MULTI_RECV) == release, "message %zu: FI_MULTI_RECV %s", i,
          release ? "missing on the releasing message" : "before the buffer is used up");
    CHECK((c.flags & FI_REMOTE_CQ_DATA) && c.data == i, "message %zu: data %llu", i,
          (unsigned long long)c.data);
    for (size_t j = 0; j < kLens[i]; ++j)
      CHECK((unsigned char)want[j] == pattern(i, j), "message %zu: byte %zu is %u, wanted %u", i, j,
            (unsigned char)want[j], pattern(i, j));
    off[b] += kLens[i];
  }
  printf(
      "fi_rx_check server: %d messages in 2 multi-receive buffers, released at %zu and %zu "
      "bytes\n",
      NMSG, off[0], off[1]);
}

static void multi_client(struct fid_ep* ep) {
  int ret;
  size_t at = 2 * MULTI;
  for (size_t i = 0; i < NMSG; ++i) {
    for (size_t j = 0; j < kLens[i]; ++j) buf[at + j] = (char)pattern(i, j);
    OK((int)fi_senddata(ep, buf + at, kLens[i], fi_mr_desc(mr), i, 0, buf + at));
    at += kLens[i];
  }
  for (size_t i = 0; i < NMSG; ++i) {
    struct fi_cq_data_entry c;
    cq_next(&c, "send");
    CHECK(c.flags & FI_SEND, "send completion flags %#llx", (unsigned long long)c.flags);
  }
}

/* ------------------------------------------------------------ shared receive context */

enum { SRX_BUFS = 4, SRX_LEN = 256 };

static void srx_open(struct fi_info* fi) {
  int ret;
  CHECK(fi->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT && fi->domain_attr->max_ep_srx_ctx >= 1,
        "entry: rx_ctx_cnt %zu, max_ep_srx_ctx %zu", fi->ep_attr->rx_ctx_cnt,
        fi->domain_attr->max_ep_srx_ctx);
  OK(fi_srx_context(domain, fi->rx_attr, &srx, NULL));
  for (int i = 0; i < SRX_BUFS; ++i)
    OK((int)fi_recv(srx, buf + i * SRX_LEN, SRX_LEN, fi_mr_desc(mr), 0, buf + i * SRX_LEN));
}

static void srx_server(struct fid_pep* pep) {
  int ret;
  (void)pep;
  struct fid_cq* cqs[2];
  struct fid_ep* eps[2];
  for (int k = 0; k < 2; ++k) {
    struct fi_cq_attr ca = {.size = 64, .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_NONE};
    OK(fi_cq_open(domain, &ca, &cqs[k], NULL));
    struct fi_eq_cm_entry entry;
    CHECK(eq_event(&entry) == FI_CONNREQ, "no connection request %d", k);
    eps[k] = open_ep_on(entry.info, cqs[k]);
    CHECK(fi_recv(eps[k], buf + 2048, 64, fi_mr_desc(mr), 0, NULL) != 0,
          "a receive posted to an endpoint on a shared context");
    OK(fi_accept(eps[k], NULL, 0));
    CHECK(eq_event(&entry) == FI_CONNECTED && entry.fid == &eps[k]->fid,
          "endpoint %d: not connected", k);
    fi_freeinfo(entry.info);
  }
  CHECK(fi_close(&srx->fid) == -FI_EBUSY, "the shared context closed under its endpoints");
  int used[SRX_BUFS] = {0};
  for (int k = 0; k < 2; ++k) {
    for (int n = 0; n < 2; ++n) {
      struct fi_cq_data_entry c;
      cq_next_on(cqs[k], &c, "shared receive");
      const ptrdiff_t at = (char*)c.op_context - buf;
      CHECK(at >= 0 && at % SRX_LEN == 0 && at / SRX_LEN < SRX_BUFS, "context %p not a buffer",
            c.op_context);
      CHECK(!used[at / SRX_LEN]++, "buffer %td completed twice", at / SRX_LEN);
      char want[32];
      snprintf(want, sizeof(want), "endpoint %d message %d", k, n);
      CHECK((c.flags & FI_RECV) && c.len == strlen(want) + 1 && strcmp(buf + at, want) == 0,
            "endpoint %d's CQ: '%.*s' (%zu bytes), wanted '%s'", k, (int)c.len, buf + at, c.len,
            want);
    }
  }
  struct fi_cq_data_entry c;
  CHECK(fi_cq_read(cqs[0], &c, 1) == -FI_EAGAIN && fi_cq_read(cqs[1], &c, 1) == -FI_EAGAIN,
        "more completions than messages");
  for (int k = 0; k < 2; ++k) {
    struct fi_eq_cm_entry entry;
    CHECK(eq_event(&entry) == FI_SHUTDOWN, "no shutdown %d", k);
  }
  for (int k = 0; k < 2; ++k) {
    OK(fi_close(&eps[k]->fid));
    OK(fi_close(&cqs[k]->fid));
  }
  OK(fi_close(&srx->fid));
  srx = NULL;
  printf("fi_rx_check server: 4 messages of 2 endpoints through one shared receive context\n");
}

static void srx_client(struct fi_info* info) {
  int ret;
  struct fid_ep* eps[2];
  for (int k = 0; k < 2; ++k) {
    eps[k] = open_ep(info);
    OK(fi_connect(eps[k], info->dest_addr, NULL, 0));
    struct fi_eq_cm_entry entry;
    CHECK(eq_event(&entry) == FI_CONNECTED && entry.fid == &eps[k]->fid,
          "endpoint %d: not connected", k);
  }
  for (int n = 0; n < 2; ++n) {
    for (int k = 0; k < 2; ++k) {
      char* m = buf + 4096 + (2 * n + k) * 64;
      snprintf(m, 64, "endpoint %d message %d", k, n);
      OK((int)fi_send(eps[k], m, strlen(m) + 1, fi_mr_desc(mr), 0, m));
    }
  }
  for (int i = 0; i < 4; ++i) {
    struct fi_cq_data_entry c;
    cq_next(&c, "send");
  }
  for (int k = 0; k < 2; ++k) {
    OK(fi_shutdown(eps[k], 0));
    OK(fi_close(&eps[k]->fid));
  }
}

/* ------------------------------------------------------------ counter with a descriptor */

enum { CNTR_MSGS = 3 };

static void cntr_server(void) {
  int ret;
  struct fi_cntr_attr na = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_FD};
  struct fid_cntr* cntr;
  OK(fi_cntr_open(domain, &na, &cntr, NULL));
  int fd = -1;
  enum fi_wait_obj obj = FI_WAIT_NONE;
  OK(fi_control(&cntr->fid, FI_GETWAIT, &fd));
  OK(fi_control(&cntr->fid, FI_GETWAITOBJ, &obj));
  CHECK(fd >= 0 && obj == FI_WAIT_FD, "counter: fd %d, wait object %d", fd, (int)obj);
  int epfd = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
  CHECK(epfd >= 0 && epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll on the counter's fd");

  struct fi_eq_cm_entry entry;
  CHECK(eq_event(&entry) == FI_CONNREQ, "no connection request");
  struct fid_ep* ep;
  OK(fi_endpoint(domain, entry.info, &ep, NULL));
  OK(fi_ep_bind(ep, &eq->fid, 0));
  OK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT));
  OK(fi_ep_bind(ep, &cntr->fid, FI_RECV));
  OK(fi_enable(ep));
  for (int i = 0; i < CNTR_MSGS; ++i)
    OK((int)fi_recv(ep, buf + i * 64, 64, fi_mr_desc(mr), 0, buf + i * 64));
  OK(fi_accept(ep, NULL, 0));
  CHECK(eq_event(&entry) == FI_CONNECTED, "not connected");
  fi_freeinfo(entry.info);

  struct fid* f = &cntr->fid;
  int slept = 0;
  const double end = now_s() + 10;
  uint64_t v;
  while ((v = fi_cntr_read(cntr)) < CNTR_MSGS) {
    CHECK(now_s() < end, "counter at %llu after 10 s", (unsigned long long)v);
    ret = fi_trywait(fabric, &f, 1);
    if (ret == -FI_EAGAIN) continue;  // a completion waits to be counted
    CHECK(ret == 0, "fi_trywait on the counter = %d", ret);
    struct epoll_event out;
    CHECK(epoll_wait(epfd, &out, 1, 5000) == 1, "epoll_wait on the counter's fd timed out at %llu",
          (unsigned long long)v);
    ++slept;
  }
  CHECK(v == CNTR_MSGS && fi_cntr_readerr(cntr) == 0, "counter %llu, errors %llu",
        (unsigned long long)v, (unsigned long long)fi_cntr_readerr(cntr));
  CHECK(slept >= 1, "never woken by the counter's descriptor");
  for (int i = 0; i < CNTR_MSGS; ++i) {
    char want[16];
    snprintf(want, sizeof(want), "counted %d", i);
    CHECK(strcmp(buf + i * 64, want) == 0, "message %d: '%s'", i, buf + i * 64);
  }
  /* nothing pending: fi_trywait arms and the descriptor stays quiet */
  OK(fi_trywait(fabric, &f, 1));
  struct epoll_event out;
  CHECK(epoll_wait(epfd, &out, 1, 50) == 0, "the counter's fd readable with nothing pending");
  CHECK(fi_close(&cntr->fid) == -FI_EBUSY, "a bound counter closed");
  CHECK(eq_event(&entry) == FI_SHUTDOWN, "no shutdown");
  OK(fi_close(&ep->fid));
  OK(fi_close(&cntr->fid));
  close(epfd);
  printf("fi_rx_check server: counter woke the epoll loop %d times for %d messages\n", slept,
         CNTR_MSGS);
}

static void cntr_client(struct fid_ep* ep) {
  int ret;
  for (int i = 0; i < CNTR_MSGS; ++i) {
    usleep(100 * 1000);
    char* m = buf + 4096 + i * 64;
    snprintf(m, 64, "counted %d", i);
    OK((int)fi_send(ep, m, strlen(m) + 1, fi_mr_desc(mr), 0, m));
    struct fi_cq_data_entry c;
    cq_next(&c, "send");
  }
}

/* ------------------------------------------------------------ remote access counters */

/* The client's transfers into and out of the server's buffer: WRITEs (with
 * remote CQ data when `data`) from the client's bytes at the same offset,
 * READs of the server's first 8 KiB into the client's. */
struct Rma {
  int read, data;
  size_t off, len;
};
static const struct Rma kRma[] = {
    {0, 0, 8192, 1},   {0, 0, 9216, 4096},   {1, 0, 0, 8},        {0, 1, 14000, 100},
    {1, 0, 100, 4000}, {0, 0, 16384, 30000}, {0, 1, 48000, 5000}, {1, 0, 0, 8192},
    {0, 1, 56000, 8},  {1, 0, 1000, 1},      {0, 0, 57000, 2048},
};
enum { NRMA = sizeof(kRma) / sizeof(kRma[0]), RMA_MSG = BUF - 512 };

static void rma_server(void) {
  int ret;
  struct fi_cntr_attr na = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC};
  struct fi_cntr_attr fa = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_FD};
  struct fid_cntr *wcntr, *rcntr, *fcntr;
  OK(fi_cntr_open(domain, &na, &wcntr, NULL));
  OK(fi_cntr_open(domain, &na, &rcntr, NULL));
  OK(fi_cntr_open(domain, &fa, &fcntr, NULL));
  OK(fi_cntr_open(domain, &na, &mr_cntr, NULL));
  ret = fi_mr_bind(mr, &fcntr->fid, FI_REMOTE_WRITE);
  CHECK(ret == -FI_ENOSYS, "an FD counter bound to a region: %d", ret);
  OK(fi_mr_bind(mr, &mr_cntr->fid, FI_REMOTE_WRITE | FI_REMOTE_READ));
  for (size_t i = 0; i < 8192; ++i) buf[i] = (char)pattern(1, i);

  struct fi_eq_cm_entry entry;
  CHECK(eq_event(&entry) == FI_CONNREQ, "no connection request");
  CHECK((entry.info->caps & FI_RMA_EVENT) != 0, "the request's info lacks FI_RMA_EVENT");
  struct fid_ep* ep;
  OK(fi_endpoint(domain, entry.info, &ep, NULL));
  OK(fi_ep_bind(ep, &eq->fid, 0));
  OK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
  ret = fi_ep_bind(ep, &fcntr->fid, FI_REMOTE_WRITE);
  CHECK(ret == -FI_ENOSYS, "an FD counter bound for remote writes: %d", ret);
  OK(fi_ep_bind(ep, &wcntr->fid, FI_REMOTE_WRITE));
  OK(fi_ep_bind(ep, &rcntr->fid, FI_REMOTE_READ));
  OK(fi_enable(ep));
  /* one receive per WRITE with data, and the client's closing message */
  size_t want_w = 0, want_r = 0, datas = 0;
  for (size_t i = 0; i < NRMA; ++i) {
    if (kRma[i].read) {
      ++want_r;
    } else {
      ++want_w;
    }
    datas += (size_t)kRma[i].data;
  }
  for (size_t i = 0; i <= datas; ++i)
    OK((int)fi_recv(ep, buf + RMA_MSG + i * 64, 64, fi_mr_desc(mr), 0, buf + RMA_MSG + i * 64));
  OK(fi_accept(ep, NULL, 0));
  CHECK(eq_event(&entry) == FI_CONNECTED, "not connected");
  fi_freeinfo(entry.info);
  uint64_t* key = (uint64_t*)(buf + BUF - 64);
  key[0] = (uint64_t)(uintptr_t)buf;
  key[1] = fi_mr_key(mr);
  OK((int)fi_send(ep, key, 16, fi_mr_desc(mr), 0, key));

  size_t got_data = 0, sent = 0;
  int done = 0;
  while (!done) {
    struct fi_cq_data_entry c;
    cq_next(&c, "server");
    if (c.flags & FI_SEND) {
      ++sent;
    } else if (c.flags & FI_REMOTE_CQ_DATA) {
      CHECK(c.data == 0x100 + got_data, "remote CQ data %llu", (unsigned long long)c.data);
      ++got_data;
    } else {
      CHECK(c.flags & FI_RECV, "completion flags %#llx", (unsigned long long)c.flags);
      done = 1;
    }
  }
  CHECK(sent == 1 && got_data == datas, "%zu sends, %zu WRITEs with data", sent, got_data);
  for (int round = 0; round < 2; ++round) {
    const uint64_t w = fi_cntr_read(wcntr), r = fi_cntr_read(rcntr);
    CHECK(w == want_w && r == want_r, "remote writes counted %llu (wanted %zu), reads %llu (%zu)",
          (unsigned long long)w, want_w, (unsigned long long)r, want_r);
    const uint64_t m = fi_cntr_read(mr_cntr);
    CHECK(m == want_w + want_r, "the region counted %llu remote accesses (wanted %zu)",
          (unsigned long long)m, want_w + want_r);
    CHECK(fi_cntr_readerr(wcntr) == 0 && fi_cntr_readerr(rcntr) == 0, "errors counted");
    usleep(100 * 1000); /* nothing counted late, nothing twice */
  }
  for (size_t i = 0; i < NRMA; ++i) {
    if (kRma[i].read) continue;
    for (size_t j = 0; j < kRma[i].len; ++j)
      CHECK((unsigned char)buf[kRma[i].off + j] == pattern(2, kRma[i].off + j),
            "WRITE %zu: byte %zu", i, j);
  }
  CHECK(eq_event(&entry) == FI_SHUTDOWN, "no shutdown");
  OK(fi_close(&ep->fid));
  OK(fi_close(&wcntr->fid));
  OK(fi_close(&rcntr->fid));
  OK(fi_close(&fcntr->fid));
  CHECK(fi_close(&mr_cntr->fid) == -FI_EBUSY, "a counter bound to a region closed");
  printf("fi_rx_check server: counted %zu remote writes and %zu remote reads\n", want_w, want_r);
}

static void rma_client(struct fid_ep* ep) {
  int ret;
  struct fi_cq_data_entry c;
  for (size_t i = 8192; i < RMA_MSG; ++i) buf[i] = (char)pattern(2, i);
  cq_next(&c, "the server's key");
  CHECK((c.flags & FI_RECV) && c.len == 16, "key message: flags %#llx len %zu",
        (unsigned long long)c.flags, c.len);
  const uint64_t* key = (const uint64_t*)(buf + RMA_MSG);
  const uint64_t addr = key[0], rkey = key[1];
  uint64_t data = 0x100;
  for (size_t i = 0; i < NRMA; ++i) {
    const struct Rma* o = &kRma[i];
    void* d = fi_mr_desc(mr);
    if (o->read) {
      OK((int)fi_read(ep, buf + o->off, o->len, d, 0, addr + o->off, rkey, NULL));
    } else if (o->data) {
      OK((int)fi_writedata(ep, buf + o->off, o->len, d, data++, 0, addr + o->off, rkey, NULL));
    } else {
      OK((int)fi_write(ep, buf + o->off, o->len, d, 0, addr + o->off, rkey, NULL));
    }
  }
  for (size_t i = 0; i < NRMA; ++i) cq_next(&c, "RMA");
  for (size_t i = 0; i < NRMA; ++i) {
    if (!kRma[i].read) continue;
    for (size_t j = 0; j < kRma[i].len; ++j)
      CHECK((unsigned char)buf[kRma[i].off + j] == pattern(1, kRma[i].off + j),
            "READ %zu: byte %zu", i, j);
  }
  char* m = buf + BUF - 64;
  strcpy(m, "done");
  OK((int)fi_send(ep, m, 5, fi_mr_desc(mr), 0, m));
  cq_next(&c, "send");
}

/* ------------------------------------------------------------ nodesc */

enum { PLAIN = 1 << 16, ND_A = 3000, ND_B1 = 100, ND_B2 = 2000, ND_RMA = 8192, ND_KEY = BUF - 64 };

/* Sources no process can map: refused at post, whichever side.  (A
 * receive buffer is judged for the bytes a message writes: see receive 5.) */
static void nodesc_refusals(struct fid_ep* ep) {
  void* bad[] = {(void*)(uintptr_t)16, (void*)(uintptr_t)(UINT64_MAX - 31),
                 (void*)(uintptr_t)(1ull << 60)};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
    ssize_t r = fi_send(ep, bad[i], 64, NULL, 0, NULL);
    CHECK(r == -FI_EINVAL, "fi_send from %p without a descriptor: %zd", bad[i], r);
  }
}

static char nd_null_ctx; /* receive 5's context */

static void nodesc_server(void) {
  int ret;
  unsigned char* plain = malloc(PLAIN);
  unsigned char stack_part[ND_B1 + 64];
  memset(plain, 0, PLAIN);
  memset(stack_part, 0, sizeof(stack_part));
  struct fi_eq_cm_entry entry;
  CHECK(eq_event(&entry) == FI_CONNREQ, "no connection request");
  struct fid_ep* ep = open_ep(entry.info);
  /* 1: one iovec, NULL descriptor; 2: two iovecs, no descriptor array; 3:
   * zero bytes; 4: a descriptor array of NULL and a region's descriptor */
  OK((int)fi_recv(ep, plain, 4000, NULL, 0, plain));
  struct iovec iv2[2] = {{stack_part, ND_B1}, {plain + 8192, 4000}};
  OK((int)fi_recvv(ep, iv2, NULL, 2, 0, stack_part));
  OK((int)fi_recv(ep, plain + 16384, 64, NULL, 0, plain + 16384));
  struct iovec iv4[2] = {{plain + 20000, 2}, {buf + ND_KEY - 512, 64}};
  void* d4[2] = {NULL, fi_mr_desc(mr)};
  struct fi_msg m4 = {iv4, d4, 2, 0, plain + 20000, 0};
  OK((int)fi_recvmsg(ep, &m4, 0));
  /* 5: 64 bytes at NULL without a descriptor (fabtests' fi_shared_ctx
   * posts its receives so): an empty message completes into it */
  OK((int)fi_recv(ep, NULL, 64, NULL, 0, &nd_null_ctx));
  OK(fi_accept(ep, NULL, 0));
  CHECK(eq_event(&entry) == FI_CONNECTED, "not connected");
  fi_freeinfo(entry.info);
  nodesc_refusals(ep);
  for (size_t i = 0; i < ND_RMA; ++i) buf[i] = (char)pattern(3, i);
  uint64_t* key = (uint64_t*)(buf + ND_KEY);
  key[0] = (uint64_t)(uintptr_t)buf;
  key[1] = fi_mr_key(mr);
  uint64_t init = 40;
  memcpy(buf + ND_RMA, &init, 8);
  OK((int)fi_send(ep, key, 16, fi_mr_desc(mr), 0, key));
  struct fi_cq_data_entry c;
  cq_next(&c, "key send");
  CHECK(c.flags & FI_SEND, "key send flags %#llx", (unsigned long long)c.flags);
  void* ctx[5] = {plain, stack_part, plain + 16384, plain + 20000, &nd_null_ctx};
  size_t len[5] = {ND_A, ND_B1 + ND_B2, 0, 7, 0};
  for (int i = 0; i < 5; ++i) {
    cq_next(&c, "receive");
    CHECK((c.flags & FI_RECV) && c.op_context == ctx[i] && c.len == len[i],
          "receive %d: flags %#llx context %p len %zu", i + 1, (unsigned long long)c.flags,
          c.op_context, c.len);
  }
  for (size_t i = 0; i < ND_A; ++i) CHECK(plain[i] == pattern(4, i), "message 1 byte %zu", i);
  for (size_t i = 0; i < ND_B1; ++i) CHECK(stack_part[i] == pattern(5, i), "message 2 byte %zu", i);
  for (size_t i = ND_B1; i < ND_B1 + ND_B2; ++i)
    CHECK(plain[8192 + i - ND_B1] == pattern(5, i), "message 2 byte %zu", i);
  CHECK(plain[20000] == 'd' && plain[20001] == 'o' && memcmp(buf + ND_KEY - 512, "ne!!!", 5) == 0,
        "message 4 split wrong");
  /* the client's WRITE from unregistered memory landed */
  for (size_t i = 0; i < 4096; ++i)
    CHECK((unsigned char)buf[16384 + i] == pattern(6, i), "WRITE byte %zu", i);
  uint64_t sum = 0;
  memcpy(&sum, buf + ND_RMA, 8);
  CHECK(sum == 42, "atomic target holds %llu, want 42", (unsigned long long)sum);
  CHECK(eq_event(&entry) == FI_SHUTDOWN, "no shutdown");
  OK(fi_close(&ep->fid));
  free(plain);
  printf("fi_rx_check server: received into unregistered memory without descriptors\n");
}

static void nodesc_client(struct fid_ep* ep) {
  int ret;
  struct fi_cq_data_entry c;
  unsigned char* plain = malloc(PLAIN);
  unsigned char stack_part[ND_B1];
  nodesc_refusals(ep);
  cq_next(&c, "the server's key");
  CHECK((c.flags & FI_RECV) && c.len == 16, "key message: flags %#llx len %zu",
        (unsigned long long)c.flags, c.len);
  const uint64_t* key = (const uint64_t*)(buf + RMA_MSG);
  const uint64_t addr = key[0], rkey = key[1];
  for (size_t i = 0; i < ND_A; ++i) plain[i] = pattern(4, i);
  OK((int)fi_send(ep, plain, ND_A, NULL, 0, plain));
  for (size_t i = 0; i < ND_B1; ++i) stack_part[i] = pattern(5, i);
  for (size_t i = ND_B1; i < ND_B1 + ND_B2; ++i) plain[8192 + i - ND_B1] = pattern(5, i);
  struct iovec iv2[2] = {{stack_part, ND_B1}, {plain + 8192, ND_B2}};
  OK((int)fi_sendv(ep, iv2, NULL, 2, 0, stack_part));
  OK((int)fi_send(ep, NULL, 0, NULL, 0, NULL));
  for (int i = 0; i < 3; ++i) cq_next(&c, "send");
  /* WRITE from and READ into unregistered memory; an atomic's old value
   * into it */
  for (size_t i = 0; i < 4096; ++i) plain[16384 + i] = pattern(6, i);
  OK((int)fi_write(ep, plain + 16384, 4096, NULL, 0, addr + 16384, rkey, plain + 16384));
  memset(plain + 32768, 0, ND_RMA);
  OK((int)fi_read(ep, plain + 32768, ND_RMA, NULL, 0, addr, rkey, plain + 32768));
  uint64_t add = 2, old = 0;
  OK((int)fi_fetch_atomic(ep, &add, 1, NULL, &old, NULL, 0, addr + ND_RMA, rkey, FI_UINT64, FI_SUM,
                          &old));
  for (int i = 0; i < 3; ++i) cq_next(&c, "RMA");
  for (size_t i = 0; i < ND_RMA; ++i)
    CHECK(plain[32768 + i] == pattern(3, i), "READ into unregistered memory: byte %zu", i);
  CHECK(old == 40, "fetch-add into unregistered memory returned %llu", (unsigned long long)old);
  char done[8] = "done!!!";
  OK((int)fi_send(ep, done, 7, NULL, 0, done));
  cq_next(&c, "send of done");
  OK((int)fi_send(ep, NULL, 0, NULL, 0, NULL));
  cq_next(&c, "empty send into the receive at NULL");
  CHECK(c.flags & FI_SEND, "empty send: flags %#llx", (unsigned long long)c.flags);
  free(plain);
}

/* ------------------------------------------------------------ completions before close */

static void close_server(struct fid_pep* pep) {
  int ret;
  (void)pep;
  struct fi_eq_cm_entry entry;
  CHECK(eq_event(&entry) == FI_CONNREQ, "no connection request");
  struct fid_ep* ep = open_ep(entry.info);
  OK(fi_accept(ep, NULL, 0));
  CHECK(eq_event(&entry) == FI_CONNECTED, "not connected");
  fi_freeinfo(entry.info);
  strcpy(buf, "completed before the close");
  OK((int)fi_send(ep, buf, strlen(buf) + 1, fi_mr_desc(mr), 0, buf + 1));
  CHECK(eq_event(&entry) == FI_SHUTDOWN, "no shutdown");
  OK(fi_close(&ep->fid));
  struct fi_cq_data_entry c;
  cq_next(&c, "send completed before fi_close");
  CHECK(c.op_context == buf + 1 && (c.flags & FI_SEND), "completion context %p flags %#llx",
        c.op_context, (unsigned long long)c.flags);
  CHECK(fi_cq_read(cq, &c, 1) == -FI_EAGAIN, "a second completion");
}

static void close_client(struct fid_ep* ep) {
  struct fi_cq_data_entry c;
  (void)ep;
  cq_next(&c, "receive");
  CHECK(strcmp(buf + 8192, "completed before the close") == 0, "received '%.40s'", buf + 8192);
}

/* ------------------------------------------------------------ roles */

static int mode_of(const char* mode) {
  if (strcmp(mode, "multi") == 0) return 0;
  if (strcmp(mode, "srx") == 0) return 1;
  if (strcmp(mode, "cntr") == 0) return 2;
  if (strcmp(mode, "rma") == 0) return 3;
  if (strcmp(mode, "nodesc") == 0) return 4;
  if (strcmp(mode, "close") == 0) return 5;
  fprintf(stderr, "fi_rx_check: unknown mode '%s' (multi, srx, cntr, rma, nodesc, close)\n", mode);
  exit(2);
}

static struct fi_info* mode_hints(int mode) {
  struct fi_info* h = make_hints(mode == 0   ? FI_MULTI_RECV
                                 : mode == 3 ? FI_RMA | FI_RMA_EVENT
                                 : mode == 4 ? FI_RMA | FI_ATOMIC
                                             : 0);
  if (mode == 1) h->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
  if (mode == 4) {
    h->mode = FI_RX_CQ_DATA;
    h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  }
  return h;
}

static void check_info(const struct fi_info* fi, int mode) {
  /* Local registration is never required, even of hints that offer it. */
  CHECK((fi->domain_attr->mr_mode & FI_MR_LOCAL) == 0 && (fi->mode & FI_LOCAL_MR) == 0,
        "mr_mode %#x mode %#llx: local registration required", fi->domain_attr->mr_mode,
        (unsigned long long)fi->mode);
  CHECK((fi->domain_attr->mr_mode & FI_MR_PROV_KEY) != 0, "mr_mode %#x without FI_MR_PROV_KEY",
        fi->domain_attr->mr_mode);
  if (mode == 3) {
    CHECK((fi->caps & FI_RMA_EVENT) && (fi->rx_attr->caps & FI_RMA_EVENT),
          "entry caps %#llx, rx_attr caps %#llx: no FI_RMA_EVENT", (unsigned long long)fi->caps,
          (unsigned long long)fi->rx_attr->caps);
    return;
  }
  if (mode != 0) return;
  const uint64_t caps = FI_MULTI_RECV;
  CHECK((fi->caps & caps) == caps, "entry caps %#llx lack %#llx", (unsigned long long)fi->caps,
        (unsigned long long)caps);
  CHECK((fi->rx_attr->caps & caps) == caps && (fi->tx_attr->caps & FI_MULTI_RECV) == 0,
        "rx_attr caps %#llx / tx_attr caps %#llx", (unsigned long long)fi->rx_attr->caps,
        (unsigned long long)fi->tx_attr->caps);
}

static void close_common(struct fid_ep* ep) {
  int ret;
  if (ep != NULL) OK(fi_close(&ep->fid));
  OK(fi_close(&mr->fid));
  if (mr_cntr != NULL) OK(fi_close(&mr_cntr->fid));
  OK(fi_close(&cq->fid));
  OK(fi_close(&domain->fid));
  OK(fi_close(&eq->fid));
  OK(fi_close(&fabric->fid));
  free(buf);
}

static int server(uint16_t port, const char* mode_name) {
  int ret;
  role = "server";
  const int mode = mode_of(mode_name);
  struct fi_info *hints = mode_hints(mode), *info = NULL;
  char svc[8];
  snprintf(svc, sizeof(svc), "%u", port);
  OK(fi_getinfo(FI_VERSION(1, 17), NULL, svc, FI_SOURCE, hints, &info));
  check_info(info, mode);
  open_common(info);
  if (mode == 1) srx_open(info);
  struct fid_pep* pep;
  OK(fi_passive_ep(fabric, info, &pep, NULL));
  OK(fi_pep_bind(pep, &eq->fid, 0));
  OK(fi_listen(pep));
  printf("fi_rx_check server: listening\n");
  fflush(stdout);
  struct fid_ep* ep = NULL;
  if (mode == 0) {
    struct fi_eq_cm_entry entry;
    CHECK(eq_event(&entry) == FI_CONNREQ, "no connection request");
    ep = open_ep(entry.info);
    multi_post(ep);
    OK(fi_accept(ep, NULL, 0));
    CHECK(eq_event(&entry) == FI_CONNECTED, "not connected");
    fi_freeinfo(entry.info);
    multi_server(ep);
    CHECK(eq_event(&entry) == FI_SHUTDOWN, "no shutdown");
  } else if (mode == 1) {
    srx_server(pep);
  } else if (mode == 2) {
    cntr_server();
  } else if (mode == 5) {
    close_server(pep);
  } else if (mode == 3) {
    rma_server();
  } else {
    nodesc_server();
  }
  OK(fi_close(&pep->fid));
  close_common(ep);
  fi_freeinfo(info);
  fi_freeinfo(hints);
  printf("fi_rx_check server: ok\n");
  return 0;
}

static int client(const char* sip, uint16_t port, const char* mode_name) {
  int ret;
  role = "client";
  const int mode = mode_of(mode_name);
  struct fi_info* hints = mode_hints(mode);
  hints->ep_attr->rx_ctx_cnt = 0; /* srx: the client's endpoints are plain */
  struct fi_info* info = NULL;
  char svc[8];
  snprintf(svc, sizeof(svc), "%u", port);
  OK(fi_getinfo(FI_VERSION(1, 17), sip, svc, 0, hints, &info));
  check_info(info, mode);
  open_common(info);
  struct fid_ep* ep = NULL;
  if (mode == 1) {
    srx_client(info);
  } else {
    ep = open_ep(info);
    if (mode == 3 || mode == 4)
      OK((int)fi_recv(ep, buf + RMA_MSG, 64, fi_mr_desc(mr), 0, buf + RMA_MSG));
    if (mode == 5) OK((int)fi_recv(ep, buf + 8192, 4096, fi_mr_desc(mr), 0, buf + 8192));
    OK(fi_connect(ep, info->dest_addr, NULL, 0));
    struct fi_eq_cm_entry entry;
    CHECK(eq_event(&entry) == FI_CONNECTED, "not connected");
    if (mode == 0) {
      multi_client(ep);
    } else if (mode == 2) {
      cntr_client(ep);
    } else if (mode == 5) {
      close_client(ep);
    } else if (mode == 3) {
      rma_client(ep);
    } else {
      nodesc_client(ep);
    }
    OK(fi_shutdown(ep, 0));
  }
  close_common(ep);
  fi_freeinfo(info);
  fi_freeinfo(hints);
  printf("fi_rx_check client: ok\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "server") == 0) return server((uint16_t)atoi(argv[2]), argv[3]);
  if (argc == 5 && strcmp(argv[1], "client") == 0)
    return client(argv[2], (uint16_t)atoi(argv[3]), argv[4]);
  fprintf(stderr, "usage: fi_rx_check server PORT MODE | client SERVER_IP PORT MODE\n");
  return 2;
}
