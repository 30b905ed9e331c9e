/* Checks what libfabric's conformance tests ask of the dpdat provider, as a
 * consumer sees it, between two processes:
 *   fi_caps_check server PORT
 *   fi_caps_check client SERVER_IP PORT
 * - fi_getinfo without hints: each transmit / receive attribute holds only
 *   its own half of the capabilities, and nothing the entry lacks;
 * - the bound source address: a passive endpoint named by fi_setname keeps
 *   its port; an endpoint opened from fi_getinfo with the passive endpoint
 *   as the hints' handle (client), or accepted from its connection request
 *   (server), reports that address through fi_getname, before and after
 *   the connection;
 * - file-descriptor wait objects: an EQ and a CQ opened with FI_WAIT_FD
 *   give their descriptors through fi_control(FI_GETWAIT); after
 *   fi_trywait succeeded, epoll on them sleeps until the connection event /
 *   the peer's message arrives, and fi_trywait refuses (-FI_EAGAIN) while
 *   an entry waits; a CQ with FI_WAIT_UNSPEC gets a descriptor too;
 * - counters: one bound to FI_SEND | FI_RECV on each side counts the
 *   exchange's transfers and an fi_inject (no CQ entry) at the client and
 *   its receive at the server, through fi_cntr_read and fi_cntr_wait.
 * Prints "fi_caps_check <role>: ok" and exits 0 when everything matched; a
 * line naming what did not, and exit 1, otherwise. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#define CHECK_PROGRAM "fi_caps_check"
#include "fi_check.h"

enum { BUF = 4096 };
static const char* role = "?";
static struct fid_fabric* fabric;
static struct fid_domain* domain;
static struct fid_eq* eq;
static struct fid_cq* cq;
static struct fid_ep* ep;
static struct fid_mr* mr;
static struct fid_cntr* cntr;
static char* buf;
static int eq_fd, cq_fd, eq_ep, cq_ep; /* descriptors, an epoll set for each */
static int eq_slept, cq_slept;         /* epoll sleeps that a descriptor ended */

static struct fi_info* make_hints(void) {
  struct fi_info* h = fi_allocinfo();
  h->fabric_attr->prov_name = strdup("dpdat");
  h->ep_attr->type = FI_EP_MSG;
  h->caps = FI_MSG;
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  return h;
}

/* Capabilities without hints: tx and rx attributes hold their own halves. */
static void check_caps(void) {
  int ret;
  struct fi_info* all = NULL;
  OK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &all));
  const uint64_t rx_only = FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE;
  const uint64_t tx_only = FI_SEND | FI_READ | FI_WRITE;
  int seen = 0;
  for (struct fi_info* fi = all; fi != NULL; fi = fi->next) {
    if (strcmp(fi->fabric_attr->prov_name, "dpdat") != 0) continue;
    ++seen;
    /* Connected endpoints: messages, RMA, atomics; reliable-datagram ones:
     * messages and tagged messages. */
    const uint64_t primary =
        fi->ep_attr->type == FI_EP_RDM ? (FI_MSG | FI_TAGGED) : (FI_MSG | FI_RMA | FI_ATOMIC);
    CHECK(fi->ep_attr->type == FI_EP_MSG || fi->ep_attr->type == FI_EP_RDM,
          "no hints: endpoint type %d", (int)fi->ep_attr->type);
    CHECK((fi->caps & primary) == primary, "no hints: caps %#llx lack a primary one",
          (unsigned long long)fi->caps);
    CHECK((fi->tx_attr->caps & rx_only) == 0, "tx_attr caps %#llx hold receive ones",
          (unsigned long long)fi->tx_attr->caps);
    CHECK((fi->rx_attr->caps & tx_only) == 0, "rx_attr caps %#llx hold transmit ones",
          (unsigned long long)fi->rx_attr->caps);
    CHECK((fi->tx_attr->caps & ~fi->caps) == 0 && (fi->rx_attr->caps & ~fi->caps) == 0,
          "attribute caps beyond the entry's");
    CHECK((fi->tx_attr->caps & (FI_LOCAL_COMM | FI_REMOTE_COMM)) == 0,
          "domain capabilities in tx_attr");
  }
  CHECK(seen > 0, "no dpdat entry without hints");
  fi_freeinfo(all);
}

/* Queue sizes: those the hints ask for, ours without; beyond the limit
 * (4096 work requests per endpoint) no entry. */
static void check_sizes(void) {
  int ret;
  struct fi_info* h = make_hints();
  struct fi_info* info = NULL;
  h->tx_attr->size = 100;
  h->rx_attr->size = 60;
  OK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info));
  CHECK(info->tx_attr->size == 100 && info->rx_attr->size == 60, "hinted sizes 100/60: got %zu/%zu",
        info->tx_attr->size, info->rx_attr->size);
  fi_freeinfo(info);
  h->tx_attr->size = 0;
  h->rx_attr->size = 0;
  OK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info));
  CHECK(info->tx_attr->size >= 64 && info->rx_attr->size >= 64, "default sizes %zu/%zu",
        info->tx_attr->size, info->rx_attr->size);
  fi_freeinfo(info);
  info = NULL;
  h->rx_attr->size = 4097;
  ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
  CHECK(ret == -FI_ENODATA && info == NULL, "receive size 4097: fi_getinfo = %d", ret);
  h->rx_attr->size = 0;
  h->tx_attr->size = 4097;
  ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
  CHECK(ret == -FI_ENODATA && info == NULL, "transmit size 4097: fi_getinfo = %d", ret);
  fi_freeinfo(h);
}

static void check_name(fid_t f, uint32_t ip, uint16_t port, const char* what) {
  int ret;
  struct sockaddr_in s;
  size_t len = sizeof(s);
  memset(&s, 0, sizeof(s));
  OK(fi_getname(f, &s, &len));
  CHECK(len == sizeof(s) && s.sin_family == AF_INET && ntohl(s.sin_addr.s_addr) == ip &&
            ntohs(s.sin_port) == port,
        "%s: name %s:%u, wanted port %u", what, inet_ntoa(s.sin_addr), ntohs(s.sin_port), port);
}

/* fi_trywait on one object, then epoll on its descriptor alone (5 s at
 * most); false when fi_trywait said an entry waits already. */
static int sleep_on(struct fid* f, int epfd, const char* what) {
  int ret = fi_trywait(fabric, &f, 1);
  if (ret == -FI_EAGAIN) return 0;
  CHECK(ret == 0, "%s: fi_trywait = %d", what, ret);
  struct epoll_event ev;
  int n = epoll_wait(epfd, &ev, 1, 5000);
  CHECK(n == 1, "%s: epoll_wait = %d", what, n);
  return 1;
}

static int add_fd(int fd) {
  int e = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
  CHECK(e >= 0 && epoll_ctl(e, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll on descriptor %d", fd);
  return e;
}

static void open_waitables(struct fi_info* fi) {
  int ret;
  struct fi_eq_attr ea = {.size = 16, .wait_obj = FI_WAIT_FD};
  OK(fi_fabric(fi->fabric_attr, &fabric, NULL));
  OK(fi_eq_open(fabric, &ea, &eq, NULL));
  OK(fi_control(&eq->fid, FI_GETWAIT, &eq_fd));
  enum fi_wait_obj obj = FI_WAIT_NONE;
  OK(fi_control(&eq->fid, FI_GETWAITOBJ, &obj));
  CHECK(obj == FI_WAIT_FD, "EQ wait object %d", (int)obj);
  eq_ep = add_fd(eq_fd);
}

static void open_active(struct fi_info* fi) {
  int ret;
  OK(fi_domain(fabric, fi, &domain, NULL));
  struct fi_cq_attr ca = {.size = 64, .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_FD};
  OK(fi_cq_open(domain, &ca, &cq, NULL));
  OK(fi_control(&cq->fid, FI_GETWAIT, &cq_fd));
  cq_ep = add_fd(cq_fd);
  /* FI_WAIT_UNSPEC: the provider picks a descriptor (what ofi_rxm asks
   * FI_GETWAITOBJ / FI_GETWAIT for when its consumer waits) */
  {
    struct fid_cq* any;
    struct fi_cq_attr ua = {.size = 16, .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_UNSPEC};
    enum fi_wait_obj obj = FI_WAIT_NONE;
    int fd = -1;
    OK(fi_cq_open(domain, &ua, &any, NULL));
    OK(fi_control(&any->fid, FI_GETWAITOBJ, &obj));
    OK(fi_control(&any->fid, FI_GETWAIT, &fd));
    CHECK(obj == FI_WAIT_FD && fd >= 0, "FI_WAIT_UNSPEC CQ: wait object %d fd %d", (int)obj, fd);
    OK(fi_close(&any->fid));
  }
  buf = aligned_alloc(4096, BUF);
  memset(buf, 0, BUF);
  OK(fi_mr_reg(domain, buf, BUF, FI_SEND | FI_RECV, 0, 0, 0, &mr, NULL));
  struct fi_cntr_attr na = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC};
  OK(fi_cntr_open(domain, &na, &cntr, NULL));
  OK(fi_endpoint(domain, fi, &ep, NULL));
  OK(fi_ep_bind(ep, &eq->fid, 0));
  OK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
  OK(fi_ep_bind(ep, &cntr->fid, FI_SEND | FI_RECV));
  OK(fi_enable(ep));
  OK((int)fi_recv(ep, buf, 64, fi_mr_desc(mr), 0, buf));
}

/* The EQ's next event through epoll. */
static uint32_t eq_event(struct fi_eq_cm_entry* entry) {
  uint32_t event = 0;
  ssize_t r = fi_eq_read(eq, &event, entry, sizeof(*entry), 0);
  if (r == -FI_EAGAIN) {
    eq_slept += sleep_on(&eq->fid, eq_ep, "EQ");
    r = fi_eq_read(eq, &event, entry, sizeof(*entry), 0);
  }
  if (r == -FI_EAVAIL) {
    struct fi_eq_err_entry e = {0};
    fi_eq_readerr(eq, &e, 0);
    CHECK(0, "EQ error %d", e.err);
  }
  CHECK(r == (ssize_t)sizeof(*entry), "fi_eq_read = %zd", r);
  return event;
}

/* The CQ's next completion through epoll; checks that fi_trywait refuses
 * while it waits unread. */
static void cq_entry(struct fi_cq_msg_entry* c, const char* what) {
  struct fid* f = &cq->fid;
  /* a wake-up may find nothing (an event another read took meanwhile):
   * an event loop tries again */
  for (int i = 0; i < 10 && fi_trywait(fabric, &f, 1) == 0; ++i) {
    cq_slept += sleep_on(&cq->fid, cq_ep, what);
  }
  CHECK(fi_trywait(fabric, &f, 1) == -FI_EAGAIN, "%s: fi_trywait with an entry waiting", what);
  ssize_t r = fi_cq_read(cq, c, 1);
  CHECK(r == 1, "%s: fi_cq_read = %zd", what, r);
}

/* One message each way: the server answers what it received. */
static void exchange(int first) {
  int ret;
  struct fi_cq_msg_entry c;
  if (first) {
    strcpy(buf + 1024, "ping");
    OK((int)fi_send(ep, buf + 1024, 5, fi_mr_desc(mr), 0, buf + 1024));
    cq_entry(&c, "send");
    CHECK(c.op_context == buf + 1024 && (c.flags & FI_SEND), "send completion");
  }
  cq_entry(&c, "receive");
  CHECK(c.op_context == buf && (c.flags & FI_RECV) && c.len == 5, "receive completion");
  if (!first) {
    CHECK(strcmp(buf, "ping") == 0, "received '%s'", buf);
    strcpy(buf + 1024, "pong");
    OK((int)fi_send(ep, buf + 1024, 5, fi_mr_desc(mr), 0, buf + 1024));
    cq_entry(&c, "send");
  } else {
    CHECK(strcmp(buf, "pong") == 0, "received '%s'", buf);
  }
  /* nothing waits now: the descriptor stays quiet after fi_trywait */
  struct fid* f = &cq->fid;
  OK(fi_trywait(fabric, &f, 1));
  struct epoll_event ev;
  CHECK(epoll_wait(cq_ep, &ev, 1, 0) == 0, "the CQ's descriptor readable with nothing queued");
}

static void close_all(void) {
  int ret;
  CHECK(eq_slept > 0 && cq_slept > 0, "never woken by a descriptor (EQ %d, CQ %d sleeps)", eq_slept,
        cq_slept);
  CHECK(fi_close(&cntr->fid) == -FI_EBUSY, "a bound counter closed");
  OK(fi_close(&ep->fid));
  OK(fi_close(&cntr->fid));
  OK(fi_close(&mr->fid));
  OK(fi_close(&cq->fid));
  OK(fi_close(&domain->fid));
  OK(fi_close(&eq->fid));
  OK(fi_close(&fabric->fid));
}

static int server(uint16_t port) {
  int ret;
  role = "server";
  check_caps();
  check_sizes();
  struct fi_info *hints = make_hints(), *info = NULL;
  OK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, FI_SOURCE, hints, &info));
  const uint32_t ip = ntohl(((struct sockaddr_in*)info->src_addr)->sin_addr.s_addr);
  open_waitables(info);
  struct fid_pep* pep;
  OK(fi_passive_ep(fabric, info, &pep, NULL));
  struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons(port)};
  s.sin_addr.s_addr = htonl(ip);
  OK(fi_setname(&pep->fid, &s, sizeof(s)));
  check_name(&pep->fid, ip, port, "passive endpoint after fi_setname");
  OK(fi_pep_bind(pep, &eq->fid, 0));
  OK(fi_listen(pep));
  printf("fi_caps_check server: listening\n");
  fflush(stdout);

  struct fi_eq_cm_entry entry;
  CHECK(eq_event(&entry) == FI_CONNREQ, "no connection request");
  open_active(entry.info);
  check_name(&ep->fid, ip, port, "accepting endpoint");
  OK(fi_accept(ep, NULL, 0));
  CHECK(eq_event(&entry) == FI_CONNECTED && entry.fid == &ep->fid, "not connected");
  check_name(&ep->fid, ip, port, "accepted endpoint");
  fi_freeinfo(entry.info);
  exchange(0);
  /* the client's inject: a receive; the counter counts all three */
  OK((int)fi_recv(ep, buf, 64, fi_mr_desc(mr), 0, buf));
  struct fi_cq_msg_entry c;
  cq_entry(&c, "injected message");
  CHECK(strcmp(buf, "ctr") == 0, "injected '%s'", buf);
  CHECK(fi_cntr_read(cntr) == 3 && fi_cntr_readerr(cntr) == 0, "server counter %llu (errors %llu)",
        (unsigned long long)fi_cntr_read(cntr), (unsigned long long)fi_cntr_readerr(cntr));
  CHECK(eq_event(&entry) == FI_SHUTDOWN, "no shutdown");
  OK(fi_close(&pep->fid));
  close_all();
  fi_freeinfo(info);
  fi_freeinfo(hints);
  printf("fi_caps_check server: ok\n");
  return 0;
}

static int client(const char* sip, uint16_t port) {
  int ret;
  role = "client";
  check_caps();
  check_sizes();
  struct fi_info *hints = make_hints(), *src = NULL, *info = NULL;
  OK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, FI_SOURCE, hints, &src));
  const uint32_t ip = ntohl(((struct sockaddr_in*)src->src_addr)->sin_addr.s_addr);
  open_waitables(src);
  /* a passive endpoint lends its bound address to the active one */
  struct fid_pep* pep;
  OK(fi_passive_ep(fabric, src, &pep, NULL));
  const uint16_t mine = (uint16_t)(port + 1);
  struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons(mine)};
  s.sin_addr.s_addr = htonl(ip);
  OK(fi_setname(&pep->fid, &s, sizeof(s)));
  hints->handle = &pep->fid;
  char svc[8];
  snprintf(svc, sizeof(svc), "%u", port);
  OK(fi_getinfo(FI_VERSION(1, 17), sip, svc, 0, hints, &info));
  CHECK(info->handle == &pep->fid, "fi_getinfo dropped the handle");
  hints->handle = NULL;
  open_active(info);
  OK(fi_close(&pep->fid));
  check_name(&ep->fid, ip, mine, "endpoint from the passive one's handle");
  OK(fi_connect(ep, info->dest_addr, NULL, 0));
  struct fi_eq_cm_entry entry;
  CHECK(eq_event(&entry) == FI_CONNECTED && entry.fid == &ep->fid, "not connected");
  check_name(&ep->fid, ip, mine, "connected endpoint");
  exchange(1);
  CHECK(fi_cntr_read(cntr) == 2, "client counter %llu after the exchange",
        (unsigned long long)fi_cntr_read(cntr));
  CHECK(fi_cntr_wait(cntr, 3, 10) == -FI_ETIMEDOUT, "fi_cntr_wait without a transfer");
  strcpy(buf + 2048, "ctr");
  OK((int)fi_inject(ep, buf + 2048, 4, 0));
  OK(fi_cntr_wait(cntr, 3, 5000));
  struct fi_cq_msg_entry c;
  CHECK(fi_cq_read(cq, &c, 1) == -FI_EAGAIN, "a CQ entry for fi_inject");
  OK(fi_shutdown(ep, 0));
  close_all();
  fi_freeinfo(info);
  fi_freeinfo(src);
  fi_freeinfo(hints);
  printf("fi_caps_check client: ok\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "server") == 0) return server((uint16_t)atoi(argv[2]));
  if (argc == 4 && strcmp(argv[1], "client") == 0) return client(argv[2], (uint16_t)atoi(argv[3]));
  fprintf(stderr, "usage: fi_caps_check server PORT | client SERVER_IP PORT\n");
  return 2;
}
