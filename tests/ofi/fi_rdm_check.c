/* The dpdat provider's reliable datagram endpoint (FI_EP_RDM), between two
 * processes, checked against libfabric's man pages (fi_tagged(3),
 * fi_msg(3), fi_av(3), fi_cq(3), fi_endpoint(3)):
 *   fi_rdm_check server PORT MODE
 *   fi_rdm_check client SERVER_IP PORT MODE
 * Both ends ask fi_getinfo for FI_EP_RDM with FI_TAGGED | FI_MSG |
 * FI_SOURCE (and FI_DIRECTED_RECV when offered), mode
 * FI_CONTEXT only, no local registration (every buffer goes without a
 * descriptor), and check the entry: provider "dpdat" (FI_RDM_CHECK_PROV
 * names another, e.g. "dpdat;ofi_rxm", to check this program against it:
 * the checks marked "ofi_rxm" below then give way, unless
 * FI_RDM_CHECK_STRICT=1), FI_SOCKADDR_IN, bit 63 in mem_tag_format,
 * inject_size >= 64, 4 bytes (at least) of CQ data, FI_ORDER_SAS.  The
 * server binds PORT (fi_getinfo with FI_SOURCE); the client puts
 * SERVER_IP:PORT (which fi_getinfo's dest_addr must hold) into its AV and
 * sends, as its first message, its own fi_getname bytes; the server puts
 * them into its AV and answers.  Nobody connects:
 * the first send connects on demand (a send may return -FI_EAGAIN until
 * then; every post here retries after reading the CQs, which drives
 * progress).  Completions are FI_CQ_FORMAT_TAGGED, receives read with
 * fi_cq_readfrom; each is taken by its context, so the order of unrelated
 * completions does not matter, and a phase ends only when no completion is
 * left over.  A receive buffer has guard bytes past what it posts, which
 * must stay untouched.  Every wait gives up after 10 s without progress.
 * MODE tagged: messages of 0, 1, 4096, 4097, 16 KiB, 64 KiB + 1, 1 MiB and
 *   4 MiB each way; fi_tsendv of three iovecs into a fi_trecvv of two;
 *   fi_tsendmsg with FI_REMOTE_CQ_DATA into fi_trecvmsg; fi_tinject and
 *   fi_tinjectdata (the buffer reused at once, no send completion);
 *   fi_tsenddata (small and rendezvous: data and FI_REMOTE_CQ_DATA, which
 *   a plain send must not carry); receives with ignore bits matching
 *   several tags (bit 63 set) in posting order while an exact one takes
 *   its own; six messages of one tag, small and large, in the order sent.
 * MODE unexpected: the client sends fourteen tagged messages (small,
 *   rendezvous, three of one tag, three that do not fit) and then an
 *   untagged one; when that arrived (FI_ORDER_SAS: the others are there)
 *   the server posts its receives, in another order than the tags were
 *   sent; everything matches, same-tag messages in the order of arrival.
 *   Truncation, unexpected and posted, small and rendezvous: an error
 *   completion FI_ETRUNC with the receive's context, olen = the bytes that
 *   did not fit, the first len bytes delivered and nothing past them; the
 *   next message of the tag arrives whole, and the sender's send succeeds.
 * MODE peek: FI_PEEK of an absent tag (error completion FI_ENOMSG); of a
 *   present one (length, tag, CQ data reported; the message stays, a
 *   receive still takes it; each peek gives a 64-byte buffer: a completion
 *   whose buf names it must have the message's first bytes there,
 *   fi_tagged(3)); FI_PEEK | FI_CLAIM of a rendezvous message, which then
 *   no peek finds and no plain receive of its tag takes but
 *   fi_trecvmsg(FI_CLAIM) with the same fi_context does; FI_PEEK | FI_DISCARD and FI_CLAIM |
 *   FI_DISCARD (the message is gone, its sender's send still completes);
 *   fi_cancel of posted receives (error completion FI_ECANCELED naming
 *   the context).  The AV is an FI_AV_TABLE here.
 * MODE msg: untagged fi_send / fi_sendv / fi_sendmsg / fi_inject /
 *   fi_injectdata / fi_senddata each way, matched in posting order; the
 *   transmit CQ bound with FI_SELECTIVE_COMPLETION (only the FI_COMPLETION
 *   sends complete); a tagged and an untagged message into a posted
 *   fi_recv and fi_trecv (each kind only into its own); fi_cq_readfrom's
 *   source: FI_ADDR_NOTAVAIL for the client's first message (its address
 *   not yet in the server's AV), the peer's fi_addr afterwards; an
 *   FI_AV_TABLE whose indices follow insertion (an unused address first),
 *   fi_av_lookup, fi_av_straddr, fi_av_remove; with FI_DIRECTED_RECV,
 *   receives directed at the unused address are passed over and cancelled.
 * MODE cntr: a send counter (FI_WAIT_UNSPEC) and a receive counter
 *   (FI_WAIT_NONE) bound next to the CQs: tagged sends, small, rendezvous
 *   (> 16 KiB) and two fi_tinject, make the send counter reach its value
 *   (fi_cntr_wait, which then times out for one more) and the receive
 *   counter count the messages (fi_cntr_read alone moves the endpoint),
 *   exactly, 100 ms later too; a truncated receive counts an error
 *   (fi_cntr_readerr), its send a success; a second server endpoint on
 *   PORT + 1 with a transmit CQ and a receive counter but no receive CQ
 *   enables, receives (data checked, small, rendezvous, one truncated: an
 *   error counted) and puts nothing on its transmit CQ.
 * MODE poll: a poll set of the server's receive CQ and receive counter:
 *   fi_poll gives nothing before a message, then the CQ's context
 *   (fi_cq_open's) for as long as its entry is unread, and the counter's
 *   (fi_cntr_open's) once per change; after fi_poll_del of the CQ (a second
 *   one fails) only the counter's; fi_close of a CQ in a poll set is
 *   -FI_EBUSY until fi_poll_del.
 * MODE wait: CQs with FI_WAIT_FD and a receive counter with one too (the
 *   interface needs automatic progress: fi_pingpong.sh gives it
 *   progress=adaptive; with FI_RDM_CHECK_FD_OPTIONAL=1 a -FI_ENOSYS from
 *   fi_cq_open skips the mode): fi_control(FI_GETWAIT) descriptors;
 *   fi_trywait, poll(2) on the descriptors and fi_cq_read until five
 *   messages (one rendezvous) went each way; the server first sleeps on
 *   the counter's descriptor alone while the client pauses 300 ms.  A
 *   poll(2) of 3 s that times out with a message pending fails.
 *   fi_cq_signal makes the next fi_cq_sread(5000 ms) return -FI_EAGAIN
 *   within 1 s; fi_cq_sread(200 ms) of an empty CQ returns -FI_EAGAIN
 *   after its timeout.
 * MODE many: the server posts 1,100 tagged receives (more than the 1,024
 *   receive records the provider keeps for reuse) and the client injects
 *   1,100 messages into them; then each side posts 300 receives of 20,000
 *   bytes (rendezvous) and sends 300 such messages to the other at once:
 *   more RTSs than the endpoint's 256 send slots, each holding its slot
 *   until the peer's FIN, which needs a slot too.  Every message checked.
 * Every mode ends with a receive of each kind left posted when the
 * endpoint closes.  Prints "fi_rdm_check <role>: ok" and exits 0 when
 * everything matched; a line naming what did not, and exit 1, otherwise. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK_PROGRAM "fi_rdm_check"
#include "fi_check.h"

enum { GUARD = 64, QCAP = 1024 };
#define KIB ((size_t)1024)
#define MIB ((size_t)1 << 20)
enum { TAGGED, UNEXPECTED, PEEK, MSG, CNTR, POLL, WAIT, MANY };
static const uint64_t kBit63 = 1ull << 63;
/* Tags of the exchanges every mode uses. */
static const uint64_t kHelloTag = 0x4e110, kByeTag = 0xb7e, kCtrlTag = 0xc0000;

static const char* role = "?";
static const char* prov = "dpdat";
static int strict;   /* the whole contract: "dpdat", or FI_RDM_CHECK_STRICT=1 */
static int directed; /* the entry offers FI_DIRECTED_RECV */
static int mode;
static struct fi_info* info;
static struct fid_fabric* fabric;
static struct fid_domain* domain;
static struct fid_av* av;
static struct fid_ep* ep;
static fi_addr_t peer = FI_ADDR_NOTAVAIL;   /* the other end in our AV */
static fi_addr_t unused = FI_ADDR_NOTAVAIL; /* MODE msg, peek: an address nobody uses */
static fi_addr_t hello_src;                 /* server: the first message's source */
static unsigned eagains;                    /* -FI_EAGAIN returns of posts */
static struct fid_cntr* scntr;              /* MODE cntr: the send counter */
static struct fid_cntr* rcntr;              /* MODE cntr, poll: the receive counter */
static int no_fd;          /* MODE wait: FD wait objects refused (FI_RDM_CHECK_FD_OPTIONAL) */
static int rx_hold;        /* MODE poll: progress() leaves the receive CQ alone */
static void (*also)(void); /* MODE cntr: progress of a second endpoint */
static const char* g_sip;  /* client: the server's IP */
static int g_port;         /* the server's port */
/* MODE poll: the contexts of the receive CQ and counter (fi_cq_open's,
 * fi_cntr_open's) */
static int rx_cq_ctx, rcntr_ctx;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------ completions */

/* One completion, successful (err 0) or not. */
struct Done {
  void* ctx;
  uint64_t flags;
  size_t len;
  void* buf;
  uint64_t data, tag;
  size_t olen;
  int err;
  fi_addr_t src;
};

/* A CQ's completions read so far and not yet taken. */
struct Queue {
  struct fid_cq* cq;
  const char* name;
  int from; /* read with fi_cq_readfrom */
  size_t n;
  struct Done d[QCAP];
};
static struct Queue txq = {.name = "transmit"}, rxq = {.name = "receive", .from = 1};

static void push(struct Queue* q, struct Done d) {
  CHECK(q->n < QCAP, "more than %d completions left on the %s CQ", QCAP, q->name);
  q->d[q->n++] = d;
}

static void poll_q(struct Queue* q) {
  struct fi_cq_tagged_entry e[8];
  fi_addr_t src[8];
  ssize_t r = q->from ? fi_cq_readfrom(q->cq, e, 8, src) : fi_cq_read(q->cq, e, 8);
  if (r > 0) {
    for (ssize_t i = 0; i < r; ++i) {
      struct Done d = {e[i].op_context,
                       e[i].flags,
                       e[i].len,
                       e[i].buf,
                       e[i].data,
                       e[i].tag,
                       0,
                       0,
                       q->from ? src[i] : FI_ADDR_NOTAVAIL};
      push(q, d);
    }
  } else if (r == -FI_EAVAIL) {
    struct fi_cq_err_entry ee;
    memset(&ee, 0, sizeof(ee));
    r = fi_cq_readerr(q->cq, &ee, 0);
    CHECK(r == 1, "fi_cq_readerr(%s) = %zd after -FI_EAVAIL", q->name, r);
    CHECK(ee.err > 0, "%s CQ error entry with err %d", q->name, ee.err);
    struct Done d = {ee.op_context, ee.flags, ee.len, ee.buf,          ee.data,
                     ee.tag,        ee.olen,  ee.err, FI_ADDR_NOTAVAIL};
    push(q, d);
  } else {
    CHECK(r == -FI_EAGAIN, "fi_cq_read(%s) = %zd (%s)", q->name, r, fi_strerror((int)-r));
  }
}

/* Reading the CQs drives the provider's progress. */
static void progress(void) {
  poll_q(&txq);
  if (!rx_hold) poll_q(&rxq);
  if (also != NULL) also();
}

static void dump(const struct Queue* q) {
  for (size_t i = 0; i < q->n; ++i) {
    const struct Done* d = &q->d[i];
    fprintf(stderr, "  %s CQ: context %p err %d flags %#llx len %zu tag %#llx olen %zu\n", q->name,
            d->ctx, d->err, (unsigned long long)d->flags, d->len, (unsigned long long)d->tag,
            d->olen);
  }
}

/* The completion of the operation with context `ctx`, waiting 10 s at most. */
static struct Done take(struct Queue* q, void* ctx, const char* what) {
  const double end = now_s() + 10;
  for (;;) {
    for (size_t i = 0; i < q->n; ++i) {
      if (q->d[i].ctx != ctx) continue;
      struct Done d = q->d[i];
      memmove(&q->d[i], &q->d[i + 1], (q->n - i - 1) * sizeof(d));
      --q->n;
      return d;
    }
    if (now_s() > end) {
      dump(&txq);
      dump(&rxq);
      CHECK(0, "%s: no %s completion in 10 s (context %p)", what, q->name, ctx);
    }
    progress();
  }
}

/* No completion left over, none arriving for 100 ms. */
static void idle(const char* what) {
  const double end = now_s() + 0.1;
  while (now_s() < end) progress();
  if (txq.n != 0 || rxq.n != 0) {
    dump(&txq);
    dump(&rxq);
    CHECK(0, "%s: completions nobody asked for", what);
  }
}

/* A post, retried while it returns -FI_EAGAIN (the CQs read in between:
 * the first send to a peer connects), 10 s at most. */
#define POST(call)                                                                     \
  do {                                                                                 \
    const double end_ = now_s() + 10;                                                  \
    ssize_t r_;                                                                        \
    while ((r_ = (call)) == -FI_EAGAIN && now_s() < end_) {                            \
      ++eagains;                                                                       \
      progress();                                                                      \
    }                                                                                  \
    CHECK(r_ == 0, "%s = %zd (%s)", #call, r_, fi_strerror((int)(r_ < 0 ? -r_ : r_))); \
  } while (0)

/* ------------------------------------------------------------ messages */

/* A message's buffer and its operation context (an fi_context: FI_CONTEXT
 * and FI_CLAIM want one).  A receive's buffer holds `cap` bytes posted and
 * GUARD more that nothing may write. */
struct Msg {
  struct fi_context ctx;
  char* buf;
  size_t cap, size; /* posted bytes; the message's bytes */
  unsigned seed;
  uint64_t tag;
};

static unsigned char pattern(unsigned seed, size_t i) {
  return (unsigned char)((size_t)seed * 131u + i * 7u + (i >> 12) * 29u + 1u);
}

static struct Msg* msg_new(size_t cap, size_t size, unsigned seed, uint64_t tag) {
  struct Msg* m = calloc(1, sizeof(*m));
  m->buf = malloc(cap + GUARD);
  m->cap = cap;
  m->size = size;
  m->seed = seed;
  m->tag = tag;
  memset(m->buf, 0xee, cap + GUARD);
  return m;
}

/* A message to send: its bytes in place. */
static struct Msg* tx_new(size_t size, unsigned seed, uint64_t tag) {
  struct Msg* m = msg_new(size, size, seed, tag);
  for (size_t i = 0; i < size; ++i) m->buf[i] = (char)pattern(seed, i);
  return m;
}

static void msg_free(struct Msg* m) {
  free(m->buf);
  free(m);
}

static void check_bytes(const struct Msg* m, size_t n, const char* what) {
  for (size_t i = 0; i < n; ++i)
    CHECK((unsigned char)m->buf[i] == pattern(m->seed, i),
          "%s: byte %zu of %zu is %#x, wanted %#x (message %u)", what, i, m->size,
          (unsigned char)m->buf[i], pattern(m->seed, i), m->seed);
  for (size_t i = n; i < m->cap + GUARD; ++i)
    CHECK((unsigned char)m->buf[i] == 0xee, "%s: byte %zu written (%zu delivered, %zu posted)",
          what, i, n, m->cap);
}

static const uint64_t kKinds = FI_TAGGED | FI_MSG | FI_SEND | FI_RECV | FI_REMOTE_CQ_DATA;

/* A successful receive completion of m: its flags (kind, FI_RECV, CQ data
 * exactly when `data` is nonzero), length, tag, buffer, data and source. */
static void check_rx(const struct Msg* m, const struct Done* d, uint64_t kind, uint64_t data,
                     const char* what) {
  CHECK(d->err == 0, "%s: error completion %d (%s), olen %zu", what, d->err, fi_strerror(d->err),
        d->olen);
  const uint64_t want = kind | FI_RECV | (data != 0 ? FI_REMOTE_CQ_DATA : 0);
  CHECK((d->flags & kKinds) == want, "%s: flags %#llx, wanted %#llx", what,
        (unsigned long long)(d->flags & kKinds), (unsigned long long)want);
  CHECK(d->len == m->size, "%s: len %zu, wanted %zu", what, d->len, m->size);
  if (kind == FI_TAGGED)
    CHECK(d->tag == m->tag, "%s: tag %#llx, wanted %#llx", what, (unsigned long long)d->tag,
          (unsigned long long)m->tag);
  if (data != 0)
    CHECK(d->data == data, "%s: data %#llx, wanted %#llx", what, (unsigned long long)d->data,
          (unsigned long long)data);
  /* fi_cq(3) defines buf for FI_MULTI_RECV only; the contract of the
   * native endpoint gives it always. */
  CHECK(d->buf == m->buf || (!strict && d->buf == NULL), "%s: buf %p, posted %p", what, d->buf,
        m->buf);
  if (strict || d->src != FI_ADDR_NOTAVAIL)
    CHECK(d->src == peer, "%s: source %#llx, the peer is %#llx", what, (unsigned long long)d->src,
          (unsigned long long)peer);
  check_bytes(m, m->size, what);
}

/* The successful send completion of m. */
static void check_tx(struct Msg* m, uint64_t kind, const char* what) {
  struct Done d = take(&txq, &m->ctx, what);
  CHECK(d.err == 0, "%s: send error %d (%s)", what, d.err, fi_strerror(d.err));
  CHECK((d.flags & (kKinds & ~FI_REMOTE_CQ_DATA)) == (kind | FI_SEND), "%s: send flags %#llx", what,
        (unsigned long long)d.flags);
}

static void post_trecv(struct Msg* m, uint64_t ignore, fi_addr_t src) {
  POST(fi_trecv(ep, m->buf, m->cap, NULL, src, m->tag, ignore, &m->ctx));
}

static void post_recv(struct Msg* m, fi_addr_t src) {
  POST(fi_recv(ep, m->buf, m->cap, NULL, src, &m->ctx));
}

static void recv_check(struct Msg* m, uint64_t kind, uint64_t data, const char* what) {
  struct Done d = take(&rxq, &m->ctx, what);
  check_rx(m, &d, kind, data, what);
}

/* Every tagged message of the helpers goes with fi_tsendmsg(FI_COMPLETION):
 * it completes on a transmit CQ bound with FI_SELECTIVE_COMPLETION too. */
static void tsend_msg(struct Msg* m, fi_addr_t to) {
  struct iovec iov = {m->buf, m->size};
  struct fi_msg_tagged t = {&iov, NULL, 1, to, m->tag, 0, &m->ctx, 0};
  POST(fi_tsendmsg(ep, &t, FI_COMPLETION));
}

/* A message that says "go on" (n names it), and its wait. */
static void sync_send(unsigned n) {
  struct Msg* m = tx_new(8, 200 + n, kCtrlTag + n);
  tsend_msg(m, peer);
  check_tx(m, FI_TAGGED, "control message");
  msg_free(m);
}

static void sync_wait(unsigned n) {
  struct Msg* m = msg_new(64, 8, 200 + n, kCtrlTag + n);
  post_trecv(m, 0, FI_ADDR_UNSPEC);
  recv_check(m, FI_TAGGED, 0, "control message");
  msg_free(m);
}

/* ------------------------------------------------------------ addresses */

static uint16_t sin_port(const void* a) { return ntohs(((const struct sockaddr_in*)a)->sin_port); }

static const char* sin_ip(const void* a, char* out) {
  return inet_ntop(AF_INET, &((const struct sockaddr_in*)a)->sin_addr, out, INET_ADDRSTRLEN);
}

/* fi_av_lookup of `a` gives back `want`, fi_av_straddr names its IP and port. */
static void check_av_entry(fi_addr_t a, const struct sockaddr_in* want, const char* what) {
  int ret;
  struct sockaddr_in got;
  size_t len = sizeof(got);
  memset(&got, 0, sizeof(got));
  OK(fi_av_lookup(av, a, &got, &len));
  CHECK(len == sizeof(got) && got.sin_family == AF_INET &&
            got.sin_addr.s_addr == want->sin_addr.s_addr && got.sin_port == want->sin_port,
        "%s: fi_av_lookup gives %zu bytes, family %d, port %u", what, len, got.sin_family,
        sin_port(&got));
  char str[128], ip[INET_ADDRSTRLEN], port[16];
  size_t slen = sizeof(str);
  CHECK(fi_av_straddr(av, want, str, &slen) == str, "%s: fi_av_straddr", what);
  snprintf(port, sizeof(port), ":%u", sin_port(want));
  CHECK(strstr(str, sin_ip(want, ip)) != NULL && strstr(str, port) != NULL,
        "%s: fi_av_straddr gives '%s' for %s%s", what, str, ip, port);
}

/* Our bound address: AF_INET, the interface's IP, a port (`port` if nonzero). */
static struct sockaddr_in own_name(uint16_t port) {
  int ret;
  struct sockaddr_in me;
  size_t len = sizeof(me);
  memset(&me, 0, sizeof(me));
  OK(fi_getname(&ep->fid, &me, &len));
  CHECK(len == sizeof(me) && me.sin_family == AF_INET, "fi_getname: %zu bytes, family %d", len,
        me.sin_family);
  CHECK(port == 0 ? sin_port(&me) != 0 : sin_port(&me) == port, "fi_getname: port %u, wanted %u",
        sin_port(&me), port);
  if (info->src_addr != NULL && info->src_addrlen == sizeof(me) &&
      ((struct sockaddr_in*)info->src_addr)->sin_addr.s_addr != INADDR_ANY) {
    char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
    CHECK(me.sin_addr.s_addr == ((struct sockaddr_in*)info->src_addr)->sin_addr.s_addr,
          "fi_getname: IP %s, the entry's source is %s", sin_ip(&me, a), sin_ip(info->src_addr, b));
  }
  return me;
}

/* An address nobody listens at (TEST-NET-1), inserted ahead of the peer
 * in modes with an FI_AV_TABLE. */
static struct sockaddr_in unused_sin(void) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_port = htons(9);
  inet_pton(AF_INET, "192.0.2.1", &a.sin_addr);
  return a;
}

static int av_table(void) { return mode == PEEK || mode == MSG; }

/* Inserts the unused address (tables only) and `peer_sin`; their fi_addrs. */
static void av_insert_peer(const struct sockaddr_in* peer_sin) {
  struct sockaddr_in two[2] = {unused_sin(), *peer_sin};
  fi_addr_t got[2] = {FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL};
  const int n = av_table() ? 2 : 1;
  const int r = fi_av_insert(av, &two[2 - n], (size_t)n, &got[2 - n], 0, NULL);
  CHECK(r == n, "fi_av_insert of %d addresses = %d", n, r);
  unused = got[0];
  peer = got[1];
  CHECK(peer != FI_ADDR_NOTAVAIL, "fi_av_insert gave no fi_addr");
  if (av_table())
    CHECK(unused == 0 && peer == 1, "FI_AV_TABLE gave indices %llu and %llu, not 0 and 1",
          (unsigned long long)unused, (unsigned long long)peer);
  check_av_entry(peer, peer_sin, "the peer's entry");
  if (av_table()) check_av_entry(unused, &two[0], "the unused entry");
}

/* ------------------------------------------------------------ setup */

static struct fi_info* make_hints(uint64_t extra) {
  struct fi_info* h = fi_allocinfo();
  h->fabric_attr->prov_name = strdup(prov);
  h->ep_attr->type = FI_EP_RDM;
  h->caps = FI_TAGGED | FI_MSG | FI_SOURCE | extra;
  h->mode = FI_CONTEXT;
  h->addr_format = FI_SOCKADDR_IN;
  h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  return h;
}

static void get_info(const char* node, const char* service, uint64_t flags) {
  struct fi_info* hints = make_hints(FI_DIRECTED_RECV);
  int ret = fi_getinfo(FI_VERSION(1, 17), node, service, flags, hints, &info);
  if (ret == -FI_ENODATA) { /* FI_DIRECTED_RECV is optional */
    fi_freeinfo(hints);
    hints = make_hints(0);
    ret = fi_getinfo(FI_VERSION(1, 17), node, service, flags, hints, &info);
  }
  CHECK(ret == 0, "fi_getinfo(%s, FI_EP_RDM, FI_TAGGED | FI_MSG) = %d (%s)", prov, ret,
        fi_strerror(-ret));
  fi_freeinfo(hints);
  /* The hints' "dpdat" lets layered providers over it answer too
   * ("dpdat;ofi_rxm"): the entry of exactly the provider asked for. */
  const struct fi_info* fi = info;
  while (fi != NULL && strcmp(fi->fabric_attr->prov_name, prov) != 0) fi = fi->next;
  CHECK(fi != NULL, "no entry of provider '%s' (the first is '%s')", prov,
        info->fabric_attr->prov_name);
  struct fi_info* all = info;
  info = fi_dupinfo(fi);
  fi_freeinfo(all);
  fi = info;
  CHECK(fi->ep_attr->type == FI_EP_RDM, "endpoint type %d", fi->ep_attr->type);
  CHECK(fi->addr_format == FI_SOCKADDR_IN, "addr_format %u", fi->addr_format);
  /* (FI_REMOTE_CQ_DATA is no capability in fi_getinfo(3) of 1.17: the
   * flag of the sends, with cq_data_size bytes) */
  const uint64_t caps = FI_TAGGED | FI_MSG | FI_SOURCE;
  CHECK((fi->caps & caps) == caps, "caps %#llx lack %#llx", (unsigned long long)fi->caps,
        (unsigned long long)(caps & ~fi->caps));
  CHECK(fi->ep_attr->mem_tag_format & kBit63, "mem_tag_format %#llx without bit 63",
        (unsigned long long)fi->ep_attr->mem_tag_format);
  CHECK(fi->tx_attr->inject_size >= 64, "inject_size %zu", fi->tx_attr->inject_size);
  CHECK(fi->domain_attr->cq_data_size >= 4, "cq_data_size %zu", fi->domain_attr->cq_data_size);
  CHECK((fi->tx_attr->msg_order & FI_ORDER_SAS) && (fi->rx_attr->msg_order & FI_ORDER_SAS),
        "msg_order tx %#llx rx %#llx without FI_ORDER_SAS",
        (unsigned long long)fi->tx_attr->msg_order, (unsigned long long)fi->rx_attr->msg_order);
  CHECK((fi->mode & ~(uint64_t)FI_CONTEXT) == 0, "mode %#llx beyond FI_CONTEXT",
        (unsigned long long)fi->mode);
  CHECK((fi->domain_attr->mr_mode & FI_MR_LOCAL) == 0, "mr_mode %#x with FI_MR_LOCAL",
        fi->domain_attr->mr_mode);
  CHECK(fi->ep_attr->max_msg_size >= 4 * MIB, "max_msg_size %zu", fi->ep_attr->max_msg_size);
  directed = (fi->caps & FI_DIRECTED_RECV) != 0;
}

static void open_all(void) {
  int ret;
  OK(fi_fabric(info->fabric_attr, &fabric, NULL));
  OK(fi_domain(fabric, info, &domain, NULL));
  struct fi_av_attr aa = {.type = av_table() ? FI_AV_TABLE : FI_AV_MAP, .count = 8};
  OK(fi_av_open(domain, &aa, &av, NULL));
  /* MODE wait: file descriptors; automatic progress (progress=adaptive,
   * fi_pingpong.sh) lets the interface move while the consumer sleeps */
  struct fi_cq_attr ca = {.size = 512,
                          .format = FI_CQ_FORMAT_TAGGED,
                          .wait_obj = mode == WAIT ? FI_WAIT_FD : FI_WAIT_NONE};
  ret = fi_cq_open(domain, &ca, &txq.cq, NULL);
  const char* opt = getenv("FI_RDM_CHECK_FD_OPTIONAL");
  if (mode == WAIT && ret == -FI_ENOSYS && opt != NULL && strcmp(opt, "1") == 0) {
    printf(
        "fi_rdm_check %s: fi_cq_open(FI_WAIT_FD) = -FI_ENOSYS (manual progress): FD waits "
        "skipped\n",
        role);
    no_fd = 1;
    ca.wait_obj = FI_WAIT_NONE;
    ret = fi_cq_open(domain, &ca, &txq.cq, NULL);
  }
  CHECK(ret == 0, "fi_cq_open(wait_obj %s) = %d (%s)%s",
        mode == WAIT ? "FI_WAIT_FD" : "FI_WAIT_NONE", ret, fi_strerror(-ret),
        ret == -FI_ENOSYS ? ": the interface runs manual progress (progress=inline)" : "");
  OK(fi_cq_open(domain, &ca, &rxq.cq, &rx_cq_ctx));
  if (mode == WAIT && !no_fd) printf("fi_rdm_check %s: CQs with FI_WAIT_FD\n", role);
  OK(fi_endpoint(domain, info, &ep, NULL));
  OK(fi_ep_bind(ep, &av->fid, 0));
  OK(fi_ep_bind(ep, &txq.cq->fid, FI_TRANSMIT | (mode == MSG ? FI_SELECTIVE_COMPLETION : 0)));
  OK(fi_ep_bind(ep, &rxq.cq->fid, FI_RECV));
  if (mode == WAIT && !no_fd) {
    /* a receive counter with a descriptor too */
    struct fi_cntr_attr ra = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_FD};
    OK(fi_cntr_open(domain, &ra, &rcntr, NULL));
    OK(fi_ep_bind(ep, &rcntr->fid, FI_RECV));
  }
  if (mode == CNTR || mode == POLL) {
    /* a send counter that fi_cntr_wait waits on, a receive counter read */
    struct fi_cntr_attr sa = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC};
    struct fi_cntr_attr ra = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_NONE};
    OK(fi_cntr_open(domain, &sa, &scntr, NULL));
    OK(fi_cntr_open(domain, &ra, &rcntr, &rcntr_ctx));
    OK(fi_ep_bind(ep, &scntr->fid, FI_SEND));
    OK(fi_ep_bind(ep, &rcntr->fid, FI_RECV));
  }
  OK(fi_enable(ep));
}

/* Receives of each kind that nothing will match, posted when the endpoint
 * closes; the end's last exchange, then everything closed. */
static void close_all(void) {
  int ret;
  struct Msg* t = msg_new(4096, 0, 0, 0xdead);
  struct Msg* u = msg_new(4096, 0, 0, 0);
  post_trecv(t, 0, FI_ADDR_UNSPEC);
  post_recv(u, FI_ADDR_UNSPEC);
  OK(fi_close(&ep->fid));
  OK(fi_close(&txq.cq->fid));
  OK(fi_close(&rxq.cq->fid));
  if (scntr != NULL) OK(fi_close(&scntr->fid));
  if (rcntr != NULL) OK(fi_close(&rcntr->fid));
  OK(fi_close(&av->fid));
  OK(fi_close(&domain->fid));
  OK(fi_close(&fabric->fid));
  msg_free(t);
  msg_free(u);
  fi_freeinfo(info);
}

/* Client: its name to the server (the first send: connects), the answer. */
static void hello_client(const char* sip, const char* port) {
  struct sockaddr_in me = own_name(0);
  struct sockaddr_in srv;
  memset(&srv, 0, sizeof(srv));
  srv.sin_family = AF_INET;
  srv.sin_port = htons((uint16_t)atoi(port));
  CHECK(inet_pton(AF_INET, sip, &srv.sin_addr) == 1, "server IP '%s'", sip);
  /* fi_getinfo(3): node and service without FI_SOURCE name the destination */
  const struct sockaddr_in* dest = info->dest_addr;
  CHECK(dest != NULL && info->dest_addrlen == sizeof(srv), "fi_getinfo(%s, %s) gave no dest_addr",
        sip, port);
  CHECK(dest->sin_family == AF_INET && dest->sin_addr.s_addr == srv.sin_addr.s_addr &&
            dest->sin_port == srv.sin_port,
        "fi_getinfo's dest_addr is not %s:%s (port %u)", sip, port, sin_port(dest));
  av_insert_peer(&srv);
  struct Msg* ans = msg_new(64, 5, 1, kHelloTag);
  post_trecv(ans, 0, FI_ADDR_UNSPEC);
  struct Msg* m = msg_new(sizeof(me), sizeof(me), 0, kHelloTag);
  memcpy(m->buf, &me, sizeof(me));
  tsend_msg(m, peer);
  check_tx(m, FI_TAGGED, "hello");
  recv_check(ans, FI_TAGGED, 0, "the server's answer");
  printf("fi_rdm_check client: %s:%u, connected on demand to the server (%u -FI_EAGAIN)\n",
         inet_ntoa(me.sin_addr), sin_port(&me), eagains);
  msg_free(m);
  msg_free(ans);
}

/* Server: the client's name from its first message into the AV; answer. */
static void hello_server(void) {
  struct Msg* m = msg_new(64, sizeof(struct sockaddr_in), 0, kHelloTag);
  post_trecv(m, 0, FI_ADDR_UNSPEC);
  struct Done d = take(&rxq, &m->ctx, "the client's hello");
  CHECK(d.err == 0 && d.len == sizeof(struct sockaddr_in) && (d.flags & FI_RECV) &&
            d.tag == kHelloTag,
        "hello: err %d len %zu flags %#llx tag %#llx", d.err, d.len, (unsigned long long)d.flags,
        (unsigned long long)d.tag);
  hello_src = d.src;
  struct sockaddr_in cli;
  memcpy(&cli, m->buf, sizeof(cli));
  CHECK(cli.sin_family == AF_INET && cli.sin_port != 0, "hello: family %d port %u", cli.sin_family,
        sin_port(&cli));
  av_insert_peer(&cli);
  struct Msg* ans = tx_new(5, 1, kHelloTag);
  tsend_msg(ans, peer);
  check_tx(ans, FI_TAGGED, "answer");
  printf("fi_rdm_check server: the client at %s:%u\n", inet_ntoa(cli.sin_addr), sin_port(&cli));
  msg_free(m);
  msg_free(ans);
}

/* The last exchange: the client's bye, the server's answer. */
static void bye(int server) {
  struct Msg* m = msg_new(8, 3, 9, kByeTag);
  struct Msg* s = tx_new(3, 9, kByeTag);
  if (server) {
    post_trecv(m, 0, FI_ADDR_UNSPEC);
    recv_check(m, FI_TAGGED, 0, "bye");
    tsend_msg(s, peer);
    check_tx(s, FI_TAGGED, "bye");
  } else {
    post_trecv(m, 0, FI_ADDR_UNSPEC);
    tsend_msg(s, peer);
    check_tx(s, FI_TAGGED, "bye");
    recv_check(m, FI_TAGGED, 0, "the server's bye");
  }
  msg_free(m);
  msg_free(s);
  idle("end");
}

/* ------------------------------------------------------------ MODE tagged */

static const size_t kSizes[] = {0, 1, 4096, 4097, 16 * KIB, 64 * KIB + 1, MIB, 4 * MIB};
enum { NSIZES = sizeof(kSizes) / sizeof(kSizes[0]) };

/* Every size once, with tags of their own; the receives posted first. */
static void sizes(int sending, unsigned base) {
  struct Msg* m[NSIZES];
  char what[64];
  if (sending) {
    sync_wait(base);
    for (size_t i = 0; i < NSIZES; ++i) {
      m[i] = tx_new(kSizes[i], base + i, 0x1000 + base + i);
      POST(fi_tsend(ep, m[i]->buf, m[i]->size, NULL, peer, m[i]->tag, &m[i]->ctx));
    }
    for (size_t i = 0; i < NSIZES; ++i) {
      snprintf(what, sizeof(what), "send of %zu bytes", kSizes[i]);
      check_tx(m[i], FI_TAGGED, what);
      msg_free(m[i]);
    }
    return;
  }
  for (size_t i = 0; i < NSIZES; ++i) {
    m[i] = msg_new(kSizes[i] + 100, kSizes[i], base + i, 0x1000 + base + i);
    post_trecv(m[i], 0, FI_ADDR_UNSPEC);
  }
  sync_send(base);
  for (size_t i = 0; i < NSIZES; ++i) {
    snprintf(what, sizeof(what), "message of %zu bytes", kSizes[i]);
    recv_check(m[i], FI_TAGGED, 0, what);
    msg_free(m[i]);
  }
}

/* The receives and sends of the tagged batch. */
enum { ORDER_N = 6 };
static const size_t kOrder[ORDER_N] = {5, 300000, 1, 70000, 0, 4097};
static const uint64_t kWild = (1ull << 63) | 0x5a00, kExact = (1ull << 63) | 0x5b05;
static const uint64_t kWildSent[3] = {(1ull << 63) | 0x5a05, (1ull << 63) | 0x5a17,
                                      (1ull << 63) | 0x5aff};
static const size_t kWildSize[3] = {10, 70000, 0};

static void tagged_recv(void) {
  /* 3 iovecs sent into 2; a tsendmsg with data into a trecvmsg */
  struct Msg* v = msg_new(80000, 10 + 5000 + 70000, 40, 0x2000);
  struct iovec vr[2] = {{v->buf, 3000}, {v->buf + 3000, 80000 - 3000}};
  POST(fi_trecvv(ep, vr, NULL, 2, FI_ADDR_UNSPEC, v->tag, 0, &v->ctx));
  struct Msg* tm = msg_new(9000, 8200, 41, 0x2001);
  struct iovec tr = {tm->buf, 9000};
  struct fi_msg_tagged trm = {&tr, NULL, 1, FI_ADDR_UNSPEC, tm->tag, 0, &tm->ctx, 0};
  POST(fi_trecvmsg(ep, &trm, 0));
  /* injects, sends with data (small and rendezvous), a plain one */
  struct Msg* inj = msg_new(100, 64, 42, 0x3000);
  struct Msg* injd = msg_new(100, 40, 43, 0x3001);
  struct Msg* dat = msg_new(1000, 1000, 44, 0x4000);
  struct Msg* datb = msg_new(70000, 70000, 45, 0x4001);
  struct Msg* plain = msg_new(100, 33, 46, 0x4002);
  post_trecv(inj, 0, FI_ADDR_UNSPEC);
  post_trecv(injd, 0, FI_ADDR_UNSPEC);
  post_trecv(dat, 0, FI_ADDR_UNSPEC);
  post_trecv(datb, 0, FI_ADDR_UNSPEC);
  post_trecv(plain, 0, FI_ADDR_UNSPEC);
  /* three receives ignoring the low byte, then an exact one */
  struct Msg* w[3];
  for (int i = 0; i < 3; ++i) {
    w[i] = msg_new(70000, kWildSize[i], 50 + i, kWild);
    post_trecv(w[i], 0xff, FI_ADDR_UNSPEC);
  }
  struct Msg* ex = msg_new(100, 20, 53, kExact);
  post_trecv(ex, 0, FI_ADDR_UNSPEC);
  /* one tag, six messages */
  struct Msg* o[ORDER_N];
  for (int i = 0; i < ORDER_N; ++i) {
    o[i] = msg_new(300000, kOrder[i], 60 + i, 0x6000);
    post_trecv(o[i], 0, FI_ADDR_UNSPEC);
  }
  sync_send(20);
  recv_check(v, FI_TAGGED, 0, "tsendv of 3 iovecs into trecvv of 2");
  recv_check(tm, FI_TAGGED, 0x5eed, "tsendmsg with FI_REMOTE_CQ_DATA");
  recv_check(inj, FI_TAGGED, 0, "tinject");
  recv_check(injd, FI_TAGGED, 0xabcd0001, "tinjectdata");
  recv_check(dat, FI_TAGGED, 0xfeedf00d, "tsenddata");
  recv_check(datb, FI_TAGGED, 0x12345678, "tsenddata of 70000 bytes");
  recv_check(plain, FI_TAGGED, 0, "tsend after tsenddata");
  for (int i = 0; i < 3; ++i) {
    w[i]->tag = kWildSent[i]; /* what the completion reports */
    char what[64];
    snprintf(what, sizeof(what), "receive %d ignoring the low byte", i);
    recv_check(w[i], FI_TAGGED, 0, what);
  }
  recv_check(ex, FI_TAGGED, 0, "exact receive next to ignoring ones");
  for (int i = 0; i < ORDER_N; ++i) {
    char what[64];
    snprintf(what, sizeof(what), "message %d of one tag (%zu bytes)", i, kOrder[i]);
    recv_check(o[i], FI_TAGGED, 0, what);
  }
  struct Msg* all[] = {v, tm, inj, injd, dat, datb, plain, w[0], w[1], w[2], ex};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i) msg_free(all[i]);
  for (int i = 0; i < ORDER_N; ++i) msg_free(o[i]);
}

static void tagged_send(void) {
  sync_wait(20);
  struct Msg* v = tx_new(10 + 5000 + 70000, 40, 0x2000);
  struct iovec vs[3] = {{v->buf, 10}, {v->buf + 10, 5000}, {v->buf + 5010, 70000}};
  POST(fi_tsendv(ep, vs, NULL, 3, peer, v->tag, &v->ctx));
  struct Msg* tm = tx_new(8200, 41, 0x2001);
  struct iovec ts[2] = {{tm->buf, 8000}, {tm->buf + 8000, 200}};
  struct fi_msg_tagged tsm = {ts, NULL, 2, peer, tm->tag, 0, &tm->ctx, 0x5eed};
  POST(fi_tsendmsg(ep, &tsm, FI_REMOTE_CQ_DATA | FI_COMPLETION));
  /* injects: the buffer is ours again at return */
  struct Msg* inj = tx_new(64, 42, 0x3000);
  POST(fi_tinject(ep, inj->buf, 64, peer, inj->tag));
  memset(inj->buf, 0, 64);
  struct Msg* injd = tx_new(40, 43, 0x3001);
  POST(fi_tinjectdata(ep, injd->buf, 40, 0xabcd0001, peer, injd->tag));
  memset(injd->buf, 0, 40);
  struct Msg* dat = tx_new(1000, 44, 0x4000);
  POST(fi_tsenddata(ep, dat->buf, 1000, NULL, 0xfeedf00d, peer, dat->tag, &dat->ctx));
  struct Msg* datb = tx_new(70000, 45, 0x4001);
  POST(fi_tsenddata(ep, datb->buf, 70000, NULL, 0x12345678, peer, datb->tag, &datb->ctx));
  struct Msg* plain = tx_new(33, 46, 0x4002);
  POST(fi_tsend(ep, plain->buf, 33, NULL, peer, plain->tag, &plain->ctx));
  /* ignoring receives take 0x5a05, 0x5a17 and 0x5aff in turn, the exact one 0x5b05 */
  struct Msg* w[3];
  struct Msg* ex = tx_new(20, 53, kExact);
  for (int i = 0; i < 3; ++i) {
    w[i] = tx_new(kWildSize[i], 50 + i, kWildSent[i]);
    if (i == 1) POST(fi_tsend(ep, ex->buf, ex->size, NULL, peer, ex->tag, &ex->ctx));
    POST(fi_tsend(ep, w[i]->buf, w[i]->size, NULL, peer, w[i]->tag, &w[i]->ctx));
  }
  struct Msg* o[ORDER_N];
  for (int i = 0; i < ORDER_N; ++i) {
    o[i] = tx_new(kOrder[i], 60 + i, 0x6000);
    POST(fi_tsend(ep, o[i]->buf, o[i]->size, NULL, peer, o[i]->tag, &o[i]->ctx));
  }
  struct Msg* done[] = {v, tm, dat, datb, plain, w[0], w[1], w[2], ex};
  for (size_t i = 0; i < sizeof(done) / sizeof(done[0]); ++i) {
    check_tx(done[i], FI_TAGGED, "tagged send");
    msg_free(done[i]);
  }
  for (int i = 0; i < ORDER_N; ++i) {
    check_tx(o[i], FI_TAGGED, "send of one tag");
    msg_free(o[i]);
  }
  idle("tagged sends (the injects complete nothing)");
  msg_free(inj);
  msg_free(injd);
}

static void run_tagged(int server) {
  sizes(!server, 1);
  sizes(server, 10);
  if (server) {
    tagged_recv();
    idle("tagged receives");
    tagged_send();
  } else {
    tagged_send();
    tagged_recv();
    idle("tagged receives");
  }
}

/* ------------------------------------------------------------ MODE unexpected */

struct Unexp {
  size_t size, cap;
  uint64_t tag;
};
/* 0x7100: three of one tag; 0x7200, 0x7201, 0x7203: truncated, 0x7202 after them */
static const struct Unexp kUnexp[] = {
    {100, 200, 0x7001},   {MIB, MIB, 0x7002},         {4097, 4097, 0x7003},
    {0, 10, 0x7004},      {MIB + 5, MIB + 5, 0x7005}, {64 * KIB + 1, 70000, 0x7006},
    {3, 3, 0x7007},       {10, MIB, 0x7100},          {MIB, MIB, 0x7100},
    {200, MIB, 0x7100},   {200, 50, 0x7200},          {MIB + 3, 64 * KIB, 0x7201},
    {4097, 4096, 0x7203}, {77, 100, 0x7202},
};
enum { NUNEXP = sizeof(kUnexp) / sizeof(kUnexp[0]) };

static void unexp_send(unsigned base) {
  struct Msg* m[NUNEXP];
  for (size_t i = 0; i < NUNEXP; ++i) {
    m[i] = tx_new(kUnexp[i].size, base + i, kUnexp[i].tag);
    POST(fi_tsend(ep, m[i]->buf, m[i]->size, NULL, peer, m[i]->tag, &m[i]->ctx));
  }
  if (base == 100) { /* then an untagged message: all of them are there */
    struct Msg* u = tx_new(4, 99, 0);
    POST(fi_send(ep, u->buf, 4, NULL, peer, &u->ctx));
    check_tx(u, FI_MSG, "untagged send after the tagged ones");
    msg_free(u);
  }
  /* every send succeeds, the truncated ones too */
  for (size_t i = 0; i < NUNEXP; ++i) {
    check_tx(m[i], FI_TAGGED, "send");
    msg_free(m[i]);
  }
}

/* The k-th receive of kUnexp[i]: truncated ones want an FI_ETRUNC. */
static void unexp_check(struct Msg* m, size_t i, const char* how) {
  char what[96];
  snprintf(what, sizeof(what), "%s message %zu (tag %#llx, %zu bytes into %zu)", how, i,
           (unsigned long long)kUnexp[i].tag, kUnexp[i].size, kUnexp[i].cap);
  struct Done d = take(&rxq, &m->ctx, what);
  if (kUnexp[i].size <= kUnexp[i].cap) {
    check_rx(m, &d, FI_TAGGED, 0, what);
    return;
  }
  const size_t over = kUnexp[i].size - kUnexp[i].cap;
  CHECK(d.err == FI_ETRUNC, "%s: err %d (%s), wanted FI_ETRUNC", what, d.err, fi_strerror(d.err));
  CHECK(d.olen == over, "%s: olen %zu, wanted %zu", what, d.olen, over);
  /* fi_cq(3): len is what was placed into the buffer (ofi_rxm gives the
   * message's length) */
  if (strict)
    CHECK(d.len == kUnexp[i].cap, "%s: error entry len %zu, wanted the %zu bytes delivered", what,
          d.len, kUnexp[i].cap);
  CHECK(d.tag == kUnexp[i].tag && (d.flags & (FI_RECV | FI_TAGGED)) == (FI_RECV | FI_TAGGED),
        "%s: error entry tag %#llx flags %#llx", what, (unsigned long long)d.tag,
        (unsigned long long)d.flags);
  check_bytes(m, kUnexp[i].cap, what); /* the first cap bytes, nothing past them */
}

static void unexp_recv(unsigned base, int unexpected) {
  struct Msg* m[NUNEXP];
  struct Msg* u = msg_new(16, 4, 99, 0);
  if (unexpected) {
    post_recv(u, FI_ADDR_UNSPEC);
    sync_send(base);
    recv_check(u, FI_MSG, 0, "untagged message after the tagged ones");
  }
  for (size_t k = 0; k < NUNEXP; ++k) { /* backwards, one tag's in order */
    const size_t i = NUNEXP - 1 - k;
    const size_t at = kUnexp[i].tag != 0x7100 ? i : 7 + (9 - i);
    m[at] = msg_new(kUnexp[at].cap, kUnexp[at].size, base + at, kUnexp[at].tag);
    post_trecv(m[at], 0, FI_ADDR_UNSPEC);
  }
  if (!unexpected) sync_send(base);
  for (size_t k = 0; k < NUNEXP; ++k) {
    unexp_check(m[k], k, unexpected ? "unexpected" : "expected");
    msg_free(m[k]);
  }
  msg_free(u);
}

static void run_unexpected(int server) {
  if (server) {
    unexp_recv(100, 1);
    idle("unexpected messages");
    unexp_recv(200, 0);
  } else {
    sync_wait(100);
    unexp_send(100);
    sync_wait(200);
    unexp_send(200);
  }
}

/* ------------------------------------------------------------ MODE peek */

enum { P_DATA = 0x80, P_BIG, P_DISC, P_CDISC, P_LAST, P_ABSENT };
static size_t peek_size[] = {300, MIB + 1, MIB + 7, MIB, 17};

/* ofi_rxm never completes the send of a discarded rendezvous message (and
 * its domain then stays busy): it discards small ones only. */
static void peek_sizes(void) {
  if (!strict) peek_size[2] = peek_size[3] = 5000;
}

static void peek_send(void) {
  sync_wait(30);
  struct Msg* m[5];
  for (int i = 0; i < 5; ++i) {
    m[i] = tx_new(peek_size[i], 70 + i, P_DATA + i);
    if (i == 0)
      POST(fi_tsenddata(ep, m[i]->buf, m[i]->size, NULL, 0x600d, peer, m[i]->tag, &m[i]->ctx));
    else
      POST(fi_tsend(ep, m[i]->buf, m[i]->size, NULL, peer, m[i]->tag, &m[i]->ctx));
  }
  sync_send(31);
  /* discarded ones too: their sends complete */
  for (int i = 0; i < 5; ++i) {
    char what[64];
    snprintf(what, sizeof(what), "send of peeked message %d (tag %#llx, %zu bytes)", i,
             (unsigned long long)m[i]->tag, m[i]->size);
    check_tx(m[i], FI_TAGGED, what);
    msg_free(m[i]);
  }
}

/* fi_trecvmsg with `flags` for `tag` into m (no buffer when m->cap is 0). */
static void recvmsg_flags(struct Msg* m, uint64_t tag, uint64_t flags) {
  struct iovec iov = {m->buf, m->cap};
  struct fi_msg_tagged t = {&iov, NULL, m->cap != 0 ? 1 : 0, FI_ADDR_UNSPEC, tag, 0, &m->ctx, 0};
  POST(fi_trecvmsg(ep, &t, flags));
}

/* A peek for `tag`: found (its length reported; data when it has any) or
 * FI_ENOMSG. */
static void peek(uint64_t tag, uint64_t flags, size_t size, uint64_t data, const char* what) {
  struct Msg* p = msg_new(64, size < 64 ? size : 64, 70 + (unsigned)(tag - P_DATA), tag);
  recvmsg_flags(p, tag, FI_PEEK | flags);
  struct Done d = take(&rxq, &p->ctx, what);
  if (size == (size_t)-1) {
    CHECK(d.err == FI_ENOMSG, "%s: err %d (%s) flags %#llx len %zu, wanted FI_ENOMSG", what, d.err,
          fi_strerror(d.err), (unsigned long long)d.flags, d.len);
  } else {
    CHECK(d.err == 0, "%s: err %d (%s)", what, d.err, fi_strerror(d.err));
    CHECK(d.len == size && d.tag == tag && (d.flags & FI_RECV) && (d.flags & FI_TAGGED),
          "%s: len %zu tag %#llx flags %#llx, wanted %zu bytes of tag %#llx", what, d.len,
          (unsigned long long)d.tag, (unsigned long long)d.flags, size, (unsigned long long)tag);
    /* ofi_rxm reports the data without FI_REMOTE_CQ_DATA */
    if ((data != 0 && strict) || (d.flags & FI_REMOTE_CQ_DATA))
      CHECK((d.flags & FI_REMOTE_CQ_DATA) && d.data == data, "%s: data %#llx flags %#llx", what,
            (unsigned long long)d.data, (unsigned long long)d.flags);
    /* fi_tagged(3): buf set to the peek's buffer says data was copied
     * there; NULL that none was */
    if (d.buf != NULL) {
      CHECK(d.buf == p->buf, "%s: buf %p, given %p", what, d.buf, p->buf);
      check_bytes(p, p->size, what);
    }
  }
  msg_free(p);
}

static const size_t kAbsent = (size_t)-1; /* a peek that finds nothing */

static void peek_recv(void) {
  peek(P_ABSENT, 0, kAbsent, 0, "peek before anything was sent");
  sync_send(30);
  sync_wait(31); /* now everything is there (FI_ORDER_SAS) */
  peek(P_ABSENT, 0, kAbsent, 0, "peek of a tag nobody sent");
  /* found, stays, a receive takes it, then gone */
  peek(P_DATA, 0, peek_size[0], 0x600d, "peek of a message with data");
  peek(P_DATA, 0, peek_size[0], 0x600d, "second peek of the message");
  struct Msg* m = msg_new(400, peek_size[0], 70, P_DATA);
  post_trecv(m, 0, FI_ADDR_UNSPEC);
  recv_check(m, FI_TAGGED, 0x600d, "receive of the peeked message");
  msg_free(m);
  peek(P_DATA, 0, kAbsent, 0, "peek of a message received");
  /* claimed: no plain receive takes it, the claiming receive does */
  peek(P_BIG, 0, peek_size[1], 0, "peek of a rendezvous message");
  struct Msg* c = msg_new(MIB + 1, peek_size[1], 71, P_BIG);
  recvmsg_flags(c, P_BIG, FI_PEEK | FI_CLAIM);
  struct Done d = take(&rxq, &c->ctx, "peek and claim");
  CHECK(d.err == 0 && d.len == peek_size[1] && d.tag == P_BIG, "peek and claim: err %d len %zu",
        d.err, d.len);
  struct Msg* plain = msg_new(MIB + 1, peek_size[1], 71, P_BIG);
  post_trecv(plain, 0, FI_ADDR_UNSPEC);
  peek(P_BIG, 0, kAbsent, 0, "peek of a claimed message");
  recvmsg_flags(c, P_BIG, FI_CLAIM);
  recv_check(c, FI_TAGGED, 0, "FI_CLAIM receive");
  msg_free(c);
  /* FI_PEEK | FI_DISCARD, FI_PEEK | FI_CLAIM then FI_CLAIM | FI_DISCARD */
  struct Msg* x = msg_new(0, 0, 0, P_DISC);
  recvmsg_flags(x, P_DISC, FI_PEEK | FI_DISCARD);
  d = take(&rxq, &x->ctx, "peek and discard");
  CHECK(d.err == 0, "peek and discard: err %d (%s)", d.err, fi_strerror(d.err));
  msg_free(x);
  peek(P_DISC, 0, kAbsent, 0, "peek of a discarded message");
  struct Msg* y = msg_new(0, 0, 0, P_CDISC);
  recvmsg_flags(y, P_CDISC, FI_PEEK | FI_CLAIM);
  d = take(&rxq, &y->ctx, "peek and claim of a rendezvous message");
  CHECK(d.err == 0 && d.len == peek_size[3], "peek and claim: err %d len %zu", d.err, d.len);
  recvmsg_flags(y, P_CDISC, FI_CLAIM | FI_DISCARD);
  d = take(&rxq, &y->ctx, "discard of a claimed message");
  CHECK(d.err == 0, "claim and discard: err %d (%s)", d.err, fi_strerror(d.err));
  msg_free(y);
  peek(P_CDISC, 0, kAbsent, 0, "peek of a claimed and discarded message");
  /* the stream goes on: the last message whole */
  struct Msg* last = msg_new(100, peek_size[4], 74, P_LAST);
  post_trecv(last, 0, FI_ADDR_UNSPEC);
  recv_check(last, FI_TAGGED, 0, "message after the discarded ones");
  msg_free(last);
  /* cancel: the plain receive the claimed message passed by, and another */
  struct Msg* other = msg_new(100, 0, 0, P_ABSENT);
  post_trecv(other, 0, FI_ADDR_UNSPEC);
  idle("peeks (the plain receive of the claimed tag still posted)");
  struct Msg* cancel[2] = {plain, other};
  for (int i = 0; i < 2; ++i) {
    int ret;
    OK((int)fi_cancel(&ep->fid, &cancel[i]->ctx));
    d = take(&rxq, &cancel[i]->ctx, "cancelled receive");
    CHECK(d.err == FI_ECANCELED, "cancelled receive %d: err %d (%s)", i, d.err, fi_strerror(d.err));
    check_bytes(cancel[i], 0, "cancelled receive");
    msg_free(cancel[i]);
  }
}

static void run_peek(int server) {
  peek_sizes();
  if (server)
    peek_recv();
  else
    peek_send();
}

/* ------------------------------------------------------------ MODE msg */

static const size_t kMsgSizes[] = {0, 1, 4097, 64 * KIB + 1, MIB};
enum { NMSG = sizeof(kMsgSizes) / sizeof(kMsgSizes[0]) };

/* Untagged, in posting order: NMSG sizes, sendv, sendmsg with data,
 * inject, injectdata, senddata. */
static void untagged_recv(unsigned base) {
  struct Msg* m[NMSG + 5];
  for (size_t i = 0; i < NMSG; ++i) {
    m[i] = msg_new(kMsgSizes[i] + 10, kMsgSizes[i], base + i, 0);
    post_recv(m[i], FI_ADDR_UNSPEC);
  }
  struct Msg* v = m[NMSG] = msg_new(80000, 75010, base + 10, 0);
  struct iovec vr[2] = {{v->buf, 70000}, {v->buf + 70000, 10000}};
  POST(fi_recvv(ep, vr, NULL, 2, FI_ADDR_UNSPEC, &v->ctx));
  struct Msg* sm = m[NMSG + 1] = msg_new(5000, 5000, base + 11, 0);
  struct iovec sr = {sm->buf, 5000};
  struct fi_msg smr = {&sr, NULL, 1, FI_ADDR_UNSPEC, &sm->ctx, 0};
  POST(fi_recvmsg(ep, &smr, 0));
  for (size_t i = 2; i < 5; ++i) {
    m[NMSG + i] = msg_new(64, i == 4 ? 50 : 64, base + 10 + (unsigned)i, 0);
    post_recv(m[NMSG + i], FI_ADDR_UNSPEC);
  }
  sync_send(base);
  const uint64_t data[NMSG + 5] = {[NMSG + 1] = 0x5e, [NMSG + 3] = 0x1d, [NMSG + 4] = 0xda7a};
  for (size_t i = 0; i < NMSG + 5; ++i) {
    char what[64];
    snprintf(what, sizeof(what), "untagged receive %zu (%zu bytes)", i, m[i]->size);
    recv_check(m[i], FI_MSG, data[i], what);
    msg_free(m[i]);
  }
}

/* The transmit CQ is bound with FI_SELECTIVE_COMPLETION: only the
 * fi_sendmsg(FI_COMPLETION) completes. */
static void untagged_send(unsigned base) {
  sync_wait(base);
  struct Msg* m[NMSG + 5];
  for (size_t i = 0; i < NMSG; ++i) {
    m[i] = tx_new(kMsgSizes[i], base + i, 0);
    POST(fi_send(ep, m[i]->buf, m[i]->size, NULL, peer, &m[i]->ctx));
  }
  struct Msg* v = m[NMSG] = tx_new(75010, base + 10, 0);
  struct iovec vs[3] = {{v->buf, 10}, {v->buf + 10, 5000}, {v->buf + 5010, 70000}};
  POST(fi_sendv(ep, vs, NULL, 3, peer, &v->ctx));
  struct Msg* sm = m[NMSG + 1] = tx_new(5000, base + 11, 0);
  struct iovec ss = {sm->buf, 5000};
  struct fi_msg smm = {&ss, NULL, 1, peer, &sm->ctx, 0x5e};
  POST(fi_sendmsg(ep, &smm, FI_REMOTE_CQ_DATA | FI_COMPLETION));
  struct Msg* inj = m[NMSG + 2] = tx_new(64, base + 12, 0);
  POST(fi_inject(ep, inj->buf, 64, peer));
  memset(inj->buf, 0, 64);
  struct Msg* injd = m[NMSG + 3] = tx_new(64, base + 13, 0);
  POST(fi_injectdata(ep, injd->buf, 64, 0x1d, peer));
  memset(injd->buf, 0, 64);
  struct Msg* sd = m[NMSG + 4] = tx_new(50, base + 14, 0);
  POST(fi_senddata(ep, sd->buf, 50, NULL, 0xda7a, peer, &sd->ctx));
  check_tx(sm, FI_MSG, "fi_sendmsg(FI_COMPLETION)");
  sync_wait(base + 1); /* the receiver has everything */
  idle("untagged sends without FI_COMPLETION");
  for (size_t i = 0; i < NMSG + 5; ++i) msg_free(m[i]);
}

/* A tagged and an untagged message into a posted fi_recv and fi_trecv;
 * with FI_DIRECTED_RECV receives directed at the unused address first. */
static void kinds_recv(void) {
  struct Msg* u = msg_new(100, 9, 90, 0);
  struct Msg* t = msg_new(100, 7, 91, 0x77);
  post_recv(u, FI_ADDR_UNSPEC);
  post_trecv(t, 0, FI_ADDR_UNSPEC);
  struct Msg *d0 = NULL, *d1 = NULL, *u0 = NULL, *u1 = NULL;
  if (directed) {
    d0 = msg_new(100, 11, 92, 0x88);
    d1 = msg_new(100, 11, 92, 0x88);
    u0 = msg_new(100, 13, 93, 0);
    u1 = msg_new(100, 13, 93, 0);
    post_trecv(d0, 0, unused);
    post_trecv(d1, 0, peer);
    post_recv(u0, unused);
    post_recv(u1, peer);
  }
  sync_send(50);
  recv_check(u, FI_MSG, 0, "untagged message into fi_recv");
  recv_check(t, FI_TAGGED, 0, "tagged message into fi_trecv");
  if (directed) {
    recv_check(d1, FI_TAGGED, 0, "tagged message into the receive directed at its sender");
    recv_check(u1, FI_MSG, 0, "untagged message into the receive directed at its sender");
    idle("receives directed elsewhere");
    struct Msg* c[2] = {d0, u0};
    for (int i = 0; i < 2; ++i) {
      int ret;
      OK((int)fi_cancel(&ep->fid, &c[i]->ctx));
      struct Done d = take(&rxq, &c[i]->ctx, "cancelled directed receive");
      CHECK(d.err == FI_ECANCELED, "directed receive %d: err %d", i, d.err);
    }
    msg_free(d0);
    msg_free(d1);
    msg_free(u0);
    msg_free(u1);
  }
  msg_free(u);
  msg_free(t);
}

static void kinds_send(void) {
  sync_wait(50);
  struct Msg* t = tx_new(7, 91, 0x77);
  struct Msg* u = tx_new(9, 90, 0);
  struct Msg* d = tx_new(11, 92, 0x88);
  struct Msg* du = tx_new(13, 93, 0);
  tsend_msg(t, peer); /* the tagged one first: fi_recv was posted first */
  struct iovec iov = {u->buf, u->size};
  struct fi_msg um = {&iov, NULL, 1, peer, &u->ctx, 0};
  POST(fi_sendmsg(ep, &um, FI_COMPLETION));
  check_tx(t, FI_TAGGED, "tagged send");
  check_tx(u, FI_MSG, "untagged send");
  if (directed) {
    tsend_msg(d, peer);
    struct iovec iv2 = {du->buf, du->size};
    struct fi_msg m2 = {&iv2, NULL, 1, peer, &du->ctx, 0};
    POST(fi_sendmsg(ep, &m2, FI_COMPLETION));
    check_tx(d, FI_TAGGED, "tagged send to a directed receive");
    check_tx(du, FI_MSG, "untagged send to a directed receive");
  }
  msg_free(t);
  msg_free(u);
  msg_free(d);
  msg_free(du);
}

/* fi_av_remove of the unused entry: the peer's stays. */
static void av_remove_unused(const struct sockaddr_in* peer_sin) {
  int ret;
  OK(fi_av_remove(av, &unused, 1, 0));
  struct sockaddr_in got;
  size_t len = sizeof(got);
  /* (ofi_rxm's table still looks a removed index up) */
  if (strict)
    CHECK(fi_av_lookup(av, unused, &got, &len) != 0, "fi_av_lookup of a removed entry succeeded");
  check_av_entry(peer, peer_sin, "the peer's entry after removing another");
}

static void run_msg(int server) {
  if (server) {
    /* The hello came before the client's address was in the AV. */
    if (strict)
      CHECK(hello_src == FI_ADDR_NOTAVAIL, "the first message's source %#llx, not FI_ADDR_NOTAVAIL",
            (unsigned long long)hello_src);
    else
      printf("fi_rdm_check server: the first message's source: %#llx\n",
             (unsigned long long)hello_src);
    untagged_recv(300);
    sync_send(301);
    untagged_send(310);
    kinds_recv();
  } else {
    untagged_send(300);
    untagged_recv(310);
    sync_send(311);
    kinds_send();
  }
  struct sockaddr_in p;
  size_t len = sizeof(p);
  int ret;
  OK(fi_av_lookup(av, peer, &p, &len));
  av_remove_unused(&p);
  printf("fi_rdm_check %s: FI_DIRECTED_RECV %s\n", role, directed ? "checked" : "not offered");
}

/* ------------------------------------------------------------ MODE cntr */

/* Reads c (which moves the endpoints it counts for) until its value
 * reaches `value` and its errors `errs`, 10 s at most; then both exact,
 * and still so 100 ms later (nothing counted twice). */
static void cntr_reach(struct fid_cntr* c, uint64_t value, uint64_t errs, const char* what) {
  double end = now_s() + 10;
  uint64_t v, e;
  for (;;) {
    v = fi_cntr_read(c);
    e = fi_cntr_readerr(c);
    if ((v >= value && e >= errs) || now_s() > end) break;
  }
  for (end = now_s() + 0.1; now_s() < end && v == value && e == errs;) {
    v = fi_cntr_read(c);
    e = fi_cntr_readerr(c);
  }
  CHECK(v == value && e == errs, "%s: counter %llu, errors %llu; wanted %llu and %llu", what,
        (unsigned long long)v, (unsigned long long)e, (unsigned long long)value,
        (unsigned long long)errs);
}

/* Tagged sends counted: small, rendezvous (> 16 KiB), then two fi_tinject. */
static const size_t kCntrSizes[] = {1, 100, 4096, 16 * KIB + 1, 64 * KIB + 1, MIB};
enum { NCSEND = sizeof(kCntrSizes) / sizeof(kCntrSizes[0]), NCNTR = NCSEND + 2 };
static const size_t kInj[2] = {64, 200};
/* The second endpoint's messages (no receive CQ): the last one truncated. */
static const size_t kEp2Sizes[4] = {10, 20000, 300000, 200};
static const size_t kEp2Posted[4] = {10, 20000, 300000, 50};

static size_t inj_size(int i) {
  return kInj[i] < info->tx_attr->inject_size ? kInj[i] : info->tx_attr->inject_size;
}

static struct fid_ep* ep2;
static struct fid_cq* cq2;
static struct fid_cntr* rcntr2;
static void ep2_progress(void) { (void)fi_cntr_read(rcntr2); }

/* Server: a second endpoint on PORT + 1 with a transmit CQ and a receive
 * counter, no receive CQ. */
static void ep2_open(void) {
  int ret;
  struct fi_info* i2 = fi_dupinfo(info);
  CHECK(i2->src_addr != NULL && i2->src_addrlen == sizeof(struct sockaddr_in), "no src_addr");
  ((struct sockaddr_in*)i2->src_addr)->sin_port = htons((uint16_t)(g_port + 1));
  struct fi_cq_attr ca = {.size = 64, .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE};
  OK(fi_cq_open(domain, &ca, &cq2, NULL));
  struct fi_cntr_attr ra = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC};
  OK(fi_cntr_open(domain, &ra, &rcntr2, NULL));
  OK(fi_endpoint(domain, i2, &ep2, NULL));
  OK(fi_ep_bind(ep2, &av->fid, 0));
  OK(fi_ep_bind(ep2, &cq2->fid, FI_TRANSMIT));
  OK(fi_ep_bind(ep2, &rcntr2->fid, FI_RECV));
  ret = fi_enable(ep2);
  CHECK(ret == 0, "fi_enable of an endpoint with a receive counter and no receive CQ = %d (%s)",
        ret, fi_strerror(-ret));
  struct sockaddr_in me;
  size_t len = sizeof(me);
  OK(fi_getname(&ep2->fid, &me, &len));
  CHECK(sin_port(&me) == g_port + 1, "second endpoint: port %u, wanted %d", sin_port(&me),
        g_port + 1);
  fi_freeinfo(i2);
}

static void cntr_recv(void) {
  int ret;
  const uint64_t v0 = fi_cntr_read(rcntr);
  CHECK(fi_cntr_readerr(rcntr) == 0, "receive counter: %llu errors before any",
        (unsigned long long)fi_cntr_readerr(rcntr));
  struct Msg* m[NCNTR];
  for (size_t i = 0; i < NCNTR; ++i) {
    const size_t sz = i < NCSEND ? kCntrSizes[i] : inj_size((int)(i - NCSEND));
    m[i] = msg_new(sz + 10, sz, 500 + (unsigned)i, 0x7000 + i);
    post_trecv(m[i], 0, FI_ADDR_UNSPEC);
  }
  sync_send(70);
  /* fi_cntr_read alone moves the endpoint */
  cntr_reach(rcntr, v0 + NCNTR, 0, "receive counter after the tagged messages");
  for (size_t i = 0; i < NCNTR; ++i) {
    char what[64];
    snprintf(what, sizeof(what), "counted message %zu (%zu bytes)", i, m[i]->size);
    recv_check(m[i], FI_TAGGED, 0, what);
    msg_free(m[i]);
  }
  /* truncated: an error counted, no success */
  struct Msg* t = msg_new(100, 100, 520, 0x7100);
  post_trecv(t, 0, FI_ADDR_UNSPEC);
  sync_send(71);
  cntr_reach(rcntr, v0 + NCNTR, 1, "receive counter after a truncated message");
  struct Done d = take(&rxq, &t->ctx, "truncated receive");
  CHECK(d.err == FI_ETRUNC && d.olen == 200, "truncated receive: err %d (%s) olen %zu", d.err,
        fi_strerror(d.err), d.olen);
  check_bytes(t, 100, "truncated receive");
  msg_free(t);
  /* an endpoint whose receive side has a counter and no CQ (ofi_rxm
   * refuses to enable one: -FI_ENOCQ) */
  if (!strict) {
    printf("fi_rdm_check server: no endpoint without a receive CQ on %s\n", prov);
    return;
  }
  ep2_open();
  struct Msg* r[4];
  for (int i = 0; i < 4; ++i) {
    r[i] = msg_new(kEp2Posted[i], kEp2Sizes[i], 530 + (unsigned)i, 0x7200 + (uint64_t)i);
    POST(fi_trecv(ep2, r[i]->buf, r[i]->cap, NULL, FI_ADDR_UNSPEC, r[i]->tag, 0, &r[i]->ctx));
  }
  also = ep2_progress;
  sync_send(72);
  cntr_reach(rcntr2, 3, 1, "receive counter of the endpoint without a receive CQ");
  for (int i = 0; i < 4; ++i) {
    char what[80];
    snprintf(what, sizeof(what), "message %d (%zu bytes) to the endpoint without a receive CQ", i,
             kEp2Sizes[i]);
    check_bytes(r[i], kEp2Posted[i] < kEp2Sizes[i] ? kEp2Posted[i] : kEp2Sizes[i], what);
    msg_free(r[i]);
  }
  sync_wait(73); /* the client's sends to it completed */
  also = NULL;
  struct fi_cq_tagged_entry e;
  const ssize_t n = fi_cq_read(cq2, &e, 1);
  CHECK(n == -FI_EAGAIN, "second endpoint's transmit CQ: %zd, nothing was sent", n);
  OK(fi_close(&ep2->fid));
  OK(fi_close(&cq2->fid));
  OK(fi_close(&rcntr2->fid));
}

static void cntr_send(void) {
  int ret;
  sync_wait(70);
  const uint64_t s0 = fi_cntr_read(scntr);
  struct Msg* m[NCNTR];
  for (size_t i = 0; i < NCNTR; ++i) {
    const size_t sz = i < NCSEND ? kCntrSizes[i] : inj_size((int)(i - NCSEND));
    m[i] = tx_new(sz, 500 + (unsigned)i, 0x7000 + i);
    if (i < NCSEND) {
      POST(fi_tsend(ep, m[i]->buf, sz, NULL, peer, m[i]->tag, &m[i]->ctx));
    } else {
      POST(fi_tinject(ep, m[i]->buf, sz, peer, m[i]->tag));
      memset(m[i]->buf, 0, sz);
    }
  }
  /* fi_cntr_wait moves the endpoint; injects count too */
  const double t0 = now_s();
  ret = fi_cntr_wait(scntr, s0 + NCNTR, 10000);
  CHECK(ret == 0, "fi_cntr_wait(send counter, %llu) = %d (%s) after %.1f s, counter %llu",
        (unsigned long long)(s0 + NCNTR), ret, fi_strerror(-ret), now_s() - t0,
        (unsigned long long)fi_cntr_read(scntr));
  CHECK(fi_cntr_read(scntr) == s0 + NCNTR && fi_cntr_readerr(scntr) == 0,
        "send counter %llu errors %llu after %d sends (from %llu)",
        (unsigned long long)fi_cntr_read(scntr), (unsigned long long)fi_cntr_readerr(scntr),
        (int)NCNTR, (unsigned long long)s0);
  for (size_t i = 0; i < NCSEND; ++i) check_tx(m[i], FI_TAGGED, "counted send");
  for (size_t i = 0; i < NCNTR; ++i) msg_free(m[i]);
  idle("counted sends (fi_tinject: no completion)");
  double t1 = now_s();
  ret = fi_cntr_wait(scntr, s0 + NCNTR + 1, 200);
  t1 = now_s() - t1;
  CHECK(ret == -FI_ETIMEDOUT && t1 > 0.15 && t1 < 3,
        "fi_cntr_wait for a send never made = %d (%s) after %.3f s", ret, fi_strerror(-ret), t1);
  /* truncated at the receiver: the send succeeds */
  sync_wait(71);
  struct Msg* t = tx_new(300, 520, 0x7100);
  tsend_msg(t, peer);
  check_tx(t, FI_TAGGED, "send of a message truncated at the receiver");
  msg_free(t);
  CHECK(fi_cntr_read(scntr) == s0 + NCNTR + 1 && fi_cntr_readerr(scntr) == 0,
        "send counter %llu errors %llu after a truncated message",
        (unsigned long long)fi_cntr_read(scntr), (unsigned long long)fi_cntr_readerr(scntr));
  /* the server's second endpoint, PORT + 1 */
  if (!strict) return;
  sync_wait(72);
  struct sockaddr_in a;
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)(g_port + 1));
  CHECK(inet_pton(AF_INET, g_sip, &a.sin_addr) == 1, "server IP '%s'", g_sip);
  fi_addr_t p2 = FI_ADDR_NOTAVAIL;
  CHECK(fi_av_insert(av, &a, 1, &p2, 0, NULL) == 1, "fi_av_insert of the second endpoint");
  struct Msg* r[4];
  for (int i = 0; i < 4; ++i) {
    r[i] = tx_new(kEp2Sizes[i], 530 + (unsigned)i, 0x7200 + (uint64_t)i);
    POST(fi_tsend(ep, r[i]->buf, r[i]->size, NULL, p2, r[i]->tag, &r[i]->ctx));
  }
  for (int i = 0; i < 4; ++i) {
    check_tx(r[i], FI_TAGGED, "send to the endpoint without a receive CQ");
    msg_free(r[i]);
  }
  sync_send(73);
}

static void run_cntr(int server) {
  if (server)
    cntr_recv();
  else
    cntr_send();
}

/* ------------------------------------------------------------ MODE poll */

static struct fid_poll* pollset;

/* One fi_poll: how often it gave the receive CQ's and the counter's
 * contexts (nothing else may come). */
static void poll_once(int* cq, int* cn, const char* what) {
  void* ctx[4] = {NULL, NULL, NULL, NULL};
  const int n = fi_poll(pollset, ctx, 4);
  CHECK(n >= 0 && n <= 2, "%s: fi_poll = %d", what, n);
  *cq = *cn = 0;
  for (int i = 0; i < n; ++i) {
    if (ctx[i] == &rx_cq_ctx)
      ++*cq;
    else if (ctx[i] == &rcntr_ctx)
      ++*cn;
    else
      CHECK(0, "%s: fi_poll gave context %p, not the CQ's %p or the counter's %p", what, ctx[i],
            (void*)&rx_cq_ctx, (void*)&rcntr_ctx);
  }
  CHECK(*cq <= 1 && *cn <= 1, "%s: fi_poll gave a context twice", what);
}

/* fi_poll gives nothing for `secs`. */
static void poll_none(double secs, const char* what) {
  const double end = now_s() + secs;
  int cq, cn;
  while (now_s() < end) {
    poll_once(&cq, &cn, what);
    CHECK(cq == 0 && cn == 0, "%s: fi_poll gave the %s", what,
          cq != 0 ? "receive CQ's context" : "counter's context");
  }
}

/* fi_poll until the contexts wanted (the CQ's if want_cq, the counter's)
 * came, 10 s at most; the counter's comes once, the CQ's only if wanted. */
static void poll_until(int want_cq, const char* what) {
  const double end = now_s() + 10;
  int cq_n = 0, cn_n = 0, cq, cn;
  while ((want_cq && cq_n == 0) || cn_n == 0) {
    CHECK(now_s() < end, "%s: no %s context from fi_poll in 10 s", what,
          cn_n == 0 ? "counter's" : "receive CQ's");
    poll_once(&cq, &cn, what);
    cq_n += cq;
    cn_n += cn;
    CHECK(want_cq || cq == 0, "%s: fi_poll gave the context of a CQ deleted from the set", what);
    CHECK(cn_n <= 1, "%s: the counter's context twice for one change", what);
  }
}

static void poll_recv(void) {
  int ret;
  struct fi_poll_attr pa = {.flags = 0};
  OK(fi_poll_open(domain, &pa, &pollset));
  OK(fi_poll_add(pollset, &rxq.cq->fid, 0));
  OK(fi_poll_add(pollset, &rcntr->fid, 0));
  const uint64_t v0 = fi_cntr_read(rcntr);
  rx_hold = 1;
  /* fi_poll(3): a counter's context comes when it changed since the last
   * fi_poll; dpdat counts from fi_poll_add, ofi_rxm from the counter's
   * opening (the hello changed it) */
  if (!strict) {
    int cq, cn;
    poll_once(&cq, &cn, "first fi_poll");
    CHECK(cq == 0, "first fi_poll gave the receive CQ's context, the CQ is empty");
  }
  poll_none(0.2, "before a message");
  struct Msg* m1 = msg_new(1010, 1000, 600, 0x9001);
  post_trecv(m1, 0, FI_ADDR_UNSPEC);
  sync_send(80);
  poll_until(1, "a message");
  /* the CQ's entry unread: its context each time; the counter's not again */
  const double end = now_s() + 0.1;
  while (now_s() < end) {
    int cq, cn;
    poll_once(&cq, &cn, "the entry unread");
    CHECK(cq == 1 && cn == 0, "the entry unread: fi_poll gave the CQ %d times, the counter %d", cq,
          cn);
  }
  rx_hold = 0;
  recv_check(m1, FI_TAGGED, 0, "message seen by fi_poll");
  msg_free(m1);
  CHECK(fi_cntr_read(rcntr) == v0 + 1, "receive counter %llu, wanted %llu",
        (unsigned long long)fi_cntr_read(rcntr), (unsigned long long)(v0 + 1));
  rx_hold = 1;
  poll_none(0.1, "after the entry was read");
  /* the CQ out of the set: only the counter's change shows */
  OK(fi_poll_del(pollset, &rxq.cq->fid, 0));
  /* (ofi_rxm's poll set deletes what it does not hold without a word) */
  if (strict)
    CHECK(fi_poll_del(pollset, &rxq.cq->fid, 0) != 0, "a second fi_poll_del of the CQ succeeded");
  struct Msg* m2 = msg_new(100 * KIB + 10, 100 * KIB, 601, 0x9002);
  post_trecv(m2, 0, FI_ADDR_UNSPEC);
  sync_send(81);
  poll_until(0, "a rendezvous message, the CQ deleted from the set");
  poll_none(0.1, "after the counter's change was reported");
  rx_hold = 0;
  recv_check(m2, FI_TAGGED, 0, "message counted in the poll set");
  msg_free(m2);
  /* a CQ in a poll set stays open until deleted from it */
  struct fi_cq_attr ca = {.size = 16, .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE};
  struct fid_cq* cq3;
  OK(fi_cq_open(domain, &ca, &cq3, NULL));
  OK(fi_poll_add(pollset, &cq3->fid, 0));
  ret = fi_close(&cq3->fid);
  if (!strict && ret == 0) { /* ofi_rxm's poll set holds no reference */
    printf("fi_rdm_check server: fi_close of a CQ in a poll set = 0 on %s\n", prov);
    OK(fi_close(&pollset->fid));
    return;
  }
  CHECK(ret == -FI_EBUSY, "fi_close of a CQ in a poll set = %d (%s), wanted -FI_EBUSY", ret,
        fi_strerror(-ret));
  OK(fi_poll_del(pollset, &cq3->fid, 0));
  OK(fi_close(&cq3->fid));
  OK(fi_close(&pollset->fid));
}

static void poll_send(void) {
  sync_wait(80);
  struct Msg* m1 = tx_new(1000, 600, 0x9001);
  tsend_msg(m1, peer);
  check_tx(m1, FI_TAGGED, "message for fi_poll");
  msg_free(m1);
  sync_wait(81);
  struct Msg* m2 = tx_new(100 * KIB, 601, 0x9002);
  tsend_msg(m2, peer);
  check_tx(m2, FI_TAGGED, "rendezvous message for fi_poll");
  msg_free(m2);
}

static void run_poll(int server) {
  if (server)
    poll_recv();
  else
    poll_send();
}

/* ------------------------------------------------------------ MODE wait */

static const size_t kWaitSizes[] = {8, 300, 4096, 200000, 17};
enum { NWAIT = sizeof(kWaitSizes) / sizeof(kWaitSizes[0]) };

static int wait_fd(struct fid_cq* cq, const char* name) {
  int ret, fd = -1;
  OK(fi_control(&cq->fid, FI_GETWAIT, &fd));
  CHECK(fd >= 0, "fi_control(%s CQ, FI_GETWAIT) gave fd %d", name, fd);
  return fd;
}

/* Until the queues hold ntx and nrx completions: the CQs read; when they
 * have nothing, fi_trywait of both and poll(2) on their descriptors, which
 * must wake within 3 s (a message is pending).  The sleeps it took. */
static unsigned wait_for(size_t ntx, size_t nrx, const char* what) {
  struct fid* fids[2] = {&txq.cq->fid, &rxq.cq->fid};
  struct pollfd pfd[2] = {{wait_fd(txq.cq, "transmit"), POLLIN, 0},
                          {wait_fd(rxq.cq, "receive"), POLLIN, 0}};
  unsigned slept = 0;
  const double end = now_s() + 20;
  for (;;) {
    progress();
    if (txq.n >= ntx && rxq.n >= nrx) return slept;
    CHECK(now_s() < end, "%s: %zu of %zu sends and %zu of %zu receives complete after 20 s", what,
          txq.n, ntx, rxq.n, nrx);
    const int r = fi_trywait(fabric, fids, 2);
    if (r == -FI_EAGAIN) continue;
    CHECK(r == 0, "%s: fi_trywait = %d (%s)", what, r, fi_strerror(-r));
    const int p = poll(pfd, 2, 3000);
    CHECK(
        p > 0,
        "%s: poll(2) of the CQs' descriptors %s after fi_trywait, %zu of %zu sends and %zu of %zu "
        "receives complete",
        what, p == 0 ? "timed out (3 s)" : "failed", txq.n, ntx, rxq.n, nrx);
    ++slept;
  }
}

static void wait_post(struct Msg** m, uint64_t tag0) {
  for (size_t i = 0; i < NWAIT; ++i) {
    m[i] = msg_new(kWaitSizes[i] + 10, kWaitSizes[i], 700 + (unsigned)(tag0 & 0xff) + (unsigned)i,
                   tag0 + i);
    post_trecv(m[i], 0, FI_ADDR_UNSPEC);
  }
}

static void wait_send(struct Msg** m, uint64_t tag0) {
  for (size_t i = 0; i < NWAIT; ++i) {
    m[i] = tx_new(kWaitSizes[i], 700 + (unsigned)(tag0 & 0xff) + (unsigned)i, tag0 + i);
    POST(fi_tsend(ep, m[i]->buf, m[i]->size, NULL, peer, m[i]->tag, &m[i]->ctx));
  }
}

static void wait_check(struct Msg** rx, struct Msg** tx) {
  for (size_t i = 0; i < NWAIT; ++i) {
    char what[64];
    snprintf(what, sizeof(what), "message %zu (%zu bytes) waited for", i, kWaitSizes[i]);
    if (rx != NULL) {
      recv_check(rx[i], FI_TAGGED, 0, what);
      msg_free(rx[i]);
    }
    if (tx != NULL) {
      check_tx(tx[i], FI_TAGGED, what);
      msg_free(tx[i]);
    }
  }
}

/* fi_cq_signal wakes the next fi_cq_sread at once; without it an sread of
 * an empty CQ waits its timeout. */
static void signal_check(void) {
  int ret;
  struct fi_cq_tagged_entry e;
  OK(fi_cq_signal(rxq.cq));
  double t = now_s();
  ssize_t r = fi_cq_sread(rxq.cq, &e, 1, NULL, 5000);
  t = now_s() - t;
  CHECK(r == -FI_EAGAIN && t < 1, "fi_cq_sread(5000 ms) after fi_cq_signal = %zd (%s) after %.3f s",
        r, fi_strerror((int)-r), t);
  t = now_s();
  r = fi_cq_sread(rxq.cq, &e, 1, NULL, 200);
  t = now_s() - t;
  CHECK(r == -FI_EAGAIN && t > 0.15 && t < 3,
        "fi_cq_sread(200 ms) of an empty CQ = %zd (%s) after %.3f s", r, fi_strerror((int)-r), t);
}

/* Until the receive counter reaches `value`: fi_trywait of the counter
 * alone and poll(2) on its descriptor, which must wake within 3 s.  The
 * sleeps it took. */
static unsigned cntr_wait_fd(uint64_t value, const char* what) {
  int ret, fd = -1;
  ret = fi_control(&rcntr->fid, FI_GETWAIT, &fd);
  if (!strict && ret != 0) { /* ofi_rxm: -FI_ENOSYS */
    printf("fi_rdm_check server: fi_control(counter, FI_GETWAIT) = %d on %s\n", ret, prov);
    return 1;
  }
  CHECK(ret == 0, "fi_control(counter, FI_GETWAIT) = %d (%s)", ret, fi_strerror(-ret));
  CHECK(fd >= 0, "fi_control(counter, FI_GETWAIT) gave fd %d", fd);
  struct fid* f = &rcntr->fid;
  struct pollfd pfd = {fd, POLLIN, 0};
  unsigned slept = 0;
  const double end = now_s() + 20;
  for (;;) {
    const uint64_t v = fi_cntr_read(rcntr);
    if (v >= value) {
      CHECK(v == value && fi_cntr_readerr(rcntr) == 0, "%s: counter %llu errors %llu, wanted %llu",
            what, (unsigned long long)v, (unsigned long long)fi_cntr_readerr(rcntr),
            (unsigned long long)value);
      return slept;
    }
    CHECK(now_s() < end, "%s: counter %llu of %llu after 20 s", what, (unsigned long long)v,
          (unsigned long long)value);
    const int r = fi_trywait(fabric, &f, 1);
    if (r == -FI_EAGAIN) continue;
    CHECK(r == 0, "%s: fi_trywait(counter) = %d (%s)", what, r, fi_strerror(-r));
    const int p = poll(&pfd, 1, 3000);
    CHECK(p > 0,
          "%s: poll(2) of the counter's descriptor %s after fi_trywait, counter %llu of %llu", what,
          p == 0 ? "timed out (3 s)" : "failed", (unsigned long long)fi_cntr_read(rcntr),
          (unsigned long long)value);
    ++slept;
  }
}

static void run_wait(int server) {
  struct Msg *rx[NWAIT], *tx[NWAIT];
  unsigned slept;
  if (no_fd) return;
  if (server) {
    /* the client pauses 300 ms before it sends: the server sleeps, on the
     * receive counter's descriptor alone */
    const uint64_t v0 = fi_cntr_read(rcntr);
    wait_post(rx, 0xb000);
    slept = cntr_wait_fd(v0 + NWAIT, "the client's messages, counted");
    CHECK(slept >= 1, "waited for the client's messages without sleeping once");
    /* the completions are there (counted as they were made) */
    rx_hold = 0;
    slept += wait_for(0, NWAIT, "the client's messages");
    wait_check(rx, NULL);
    wait_send(tx, 0xa000);
    slept += wait_for(NWAIT, 0, "the server's sends");
    wait_check(NULL, tx);
  } else {
    wait_post(rx, 0xa000);
    const struct timespec pause = {0, 300000000};
    nanosleep(&pause, NULL);
    wait_send(tx, 0xb000);
    slept = wait_for(NWAIT, NWAIT, "the exchange");
    wait_check(rx, tx);
  }
  signal_check();
  printf("fi_rdm_check %s: %d messages each way waited for, %u sleeps on the descriptors\n", role,
         (int)NWAIT, slept);
}

/* ------------------------------------------------------------ roles */

/* ------------------------------------------------------------ MODE many */

/* More receives than the provider keeps records of (1024) complete at once
 * (the client injects them all), and more rendezvous-size sends both ways
 * at once than the endpoint has send slots (256): an RTS holds its slot
 * until the peer's FIN, and FINs need slots too. */
enum { MANY_SMALL = 1100, MANY_BIG = 300 };
static const size_t kManyBig = 20000; /* above the 16 KiB eager limit */

static void run_many(int server) {
  static struct Msg* small[MANY_SMALL];
  if (server) {
    for (unsigned i = 0; i < MANY_SMALL; ++i) {
      small[i] = msg_new(64, 8, 1000 + i, 0x6d0000 + i);
      post_trecv(small[i], 0, FI_ADDR_UNSPEC);
    }
    sync_send(30);
    for (unsigned i = 0; i < MANY_SMALL; ++i) {
      recv_check(small[i], FI_TAGGED, 0, "many small receives");
      msg_free(small[i]);
    }
  } else {
    sync_wait(30);
    for (unsigned i = 0; i < MANY_SMALL; ++i) {
      struct Msg* m = tx_new(8, 1000 + i, 0x6d0000 + i);
      POST(fi_tinject(ep, m->buf, m->size, peer, m->tag));
      msg_free(m);
    }
  }
  /* Both ways at once: every receive posted first, then every send. */
  static struct Msg *in[MANY_BIG], *out[MANY_BIG];
  const unsigned rx_seed = server ? 5000 : 6000, tx_seed = server ? 6000 : 5000;
  for (unsigned i = 0; i < MANY_BIG; ++i) {
    in[i] = msg_new(kManyBig, kManyBig, rx_seed + i, 0x6e0000 + i);
    post_trecv(in[i], 0, FI_ADDR_UNSPEC);
  }
  if (server) {
    sync_send(31);
    sync_wait(32);
  } else {
    sync_wait(31);
    sync_send(32);
  }
  for (unsigned i = 0; i < MANY_BIG; ++i) {
    out[i] = tx_new(kManyBig, tx_seed + i, 0x6e0000 + i);
    tsend_msg(out[i], peer);
  }
  for (unsigned i = 0; i < MANY_BIG; ++i) {
    check_tx(out[i], FI_TAGGED, "many rendezvous sends");
    recv_check(in[i], FI_TAGGED, 0, "many rendezvous receives");
    msg_free(out[i]);
    msg_free(in[i]);
  }
  idle("many");
  printf("fi_rdm_check %s: %d small receives at once, %d rendezvous sends each way at once\n", role,
         MANY_SMALL, MANY_BIG);
}

static const char* const kModes[] = {"tagged", "unexpected", "peek", "msg",
                                     "cntr",   "poll",       "wait", "many"};

static int mode_of(const char* name) {
  for (int i = 0; i < (int)(sizeof(kModes) / sizeof(kModes[0])); ++i)
    if (strcmp(name, kModes[i]) == 0) return i;
  fprintf(stderr,
          "fi_rdm_check: unknown mode '%s' (tagged, unexpected, peek, msg, cntr, poll, wait)\n",
          name);
  exit(2);
}

static void run(int server, const char* sip, const char* port) {
  if (server)
    hello_server();
  else
    hello_client(sip, port);
  switch (mode) {
    case TAGGED:
      run_tagged(server);
      break;
    case UNEXPECTED:
      run_unexpected(server);
      break;
    case PEEK:
      run_peek(server);
      break;
    case MSG:
      run_msg(server);
      break;
    case CNTR:
      run_cntr(server);
      break;
    case POLL:
      run_poll(server);
      break;
    case MANY:
      run_many(server);
      break;
    default:
      run_wait(server);
      break;
  }
  bye(server);
  close_all();
  printf("fi_rdm_check %s: ok\n", role);
}

int main(int argc, char** argv) {
  const char* p = getenv("FI_RDM_CHECK_PROV");
  if (p != NULL && *p != '\0') prov = p;
  const char* st = getenv("FI_RDM_CHECK_STRICT"); /* the whole contract for another provider */
  strict = strcmp(prov, "dpdat") == 0 || (st != NULL && strcmp(st, "1") == 0);
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc == 4 && strcmp(argv[1], "server") == 0) {
    role = "server";
    mode = mode_of(argv[3]);
    const int port = g_port = atoi(argv[2]);
    get_info(NULL, argv[2], FI_SOURCE);
    open_all();
    own_name((uint16_t)port);
    printf("fi_rdm_check server: listening on %s (%s)\n", argv[2], prov);
    run(1, NULL, NULL);
    return 0;
  }
  if (argc == 5 && strcmp(argv[1], "client") == 0) {
    role = "client";
    mode = mode_of(argv[4]);
    g_sip = argv[2];
    g_port = atoi(argv[3]);
    get_info(argv[2], argv[3], 0);
    open_all();
    run(0, argv[2], argv[3]);
    return 0;
  }
  fprintf(stderr, "usage: fi_rdm_check server PORT MODE | client SERVER_IP PORT MODE\n");
  return 2;
}
