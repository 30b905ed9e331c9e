/* udat_pair: a two-process uDAPL 1.2 program written from the man pages, in
 * C, using only <dat/udat.h> and -ldat.
 *
 *   udat_pair --server IA_NAME [options]
 *   udat_pair --client IA_NAME SERVER_IPV4 [options]
 *
 * IA_NAME is a dpdat IA name; two processes use names configured through
 * DPDAT_IA_<NAME> (e.g. vdev=net_memif0,role=server,socket=/tmp/m.sock;ip=10.0.0.1).
 * The server listens on a fixed connection qualifier; the client connects to
 * SERVER_IPV4 with private data, both exchange a HELLO / GO / DONE protocol
 * over SENDs, and in every round:
 *   server: SEND GO = {round, RMR triplet of its buffer (from dat_rmr_bind)}
 *   client: RDMA WRITE a round-specific pattern (three local segments) into
 *           the triplet, RDMA READ it back elsewhere, compare; SEND DONE
 *   server: compare its buffer with the pattern byte for byte.
 * The client then disconnects gracefully and both sides close everything.
 *
 * Every wait has a timeout.  Exit status:
 *   0 everything held, 1 a DAT call failed or data differed, 2 usage,
 *   3 timed out waiting for an event, 4 the connection broke or was refused
 *   (DAT_CONNECTION_EVENT_BROKEN, a DTO error, a rejected connect).
 * While waiting for the peer's next message each side probes it with a small
 * RDMA READ every --probe-ms (the client learns where from GO, the server
 * from HELLO), so a dead peer is noticed by the transport (BROKEN) instead of
 * by the timeout. */

#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <dat/udat.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define QUAL 0x5A17u
#define MAGIC 0x75645031u /* "udP1" */
#define MSG_LEN 64
#define MAX_EVENTS 8

enum { EXIT_DAT = 1, EXIT_USAGE = 2, EXIT_TIMEOUT = 3, EXIT_BROKEN = 4 };
enum { MSG_HELLO = 1, MSG_GO = 2, MSG_DONE = 3 };
enum { CK_SEND = 1, CK_RECV = 2, CK_WRITE = 3, CK_READ = 4, CK_BIND = 5, CK_PROBE = 6 };

static const char* g_role = "?";
static DAT_TIMEOUT g_timeout_us = 10000000;
static DAT_TIMEOUT g_probe_us = 200000;

#define CHECK(call)                                                                            \
  do {                                                                                         \
    DAT_RETURN r_ = (call);                                                                    \
    if (r_ != DAT_SUCCESS) {                                                                   \
      const char *mj = "?", *mn = "?";                                                         \
      dat_strerror(r_, &mj, &mn);                                                              \
      fprintf(stderr, "udat_pair %s: %s:%d: %s -> 0x%08x %s %s\n", g_role, __FILE__, __LINE__, \
              #call, (unsigned)r_, mj, mn);                                                    \
      exit(EXIT_DAT);                                                                          \
    }                                                                                          \
  } while (0)

static void die(int code, const char* what) {
  fprintf(stderr, "udat_pair %s: %s\n", g_role, what);
  exit(code);
}

static const char* conn_event_name(DAT_EVENT_NUMBER n) {
  switch (n) {
    case DAT_CONNECTION_EVENT_ESTABLISHED:
      return "ESTABLISHED";
    case DAT_CONNECTION_EVENT_PEER_REJECTED:
      return "PEER_REJECTED";
    case DAT_CONNECTION_EVENT_NON_PEER_REJECTED:
      return "NON_PEER_REJECTED";
    case DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR:
      return "ACCEPT_COMPLETION_ERROR";
    case DAT_CONNECTION_EVENT_DISCONNECTED:
      return "DISCONNECTED";
    case DAT_CONNECTION_EVENT_BROKEN:
      return "BROKEN";
    case DAT_CONNECTION_EVENT_TIMED_OUT:
      return "TIMED_OUT";
    case DAT_CONNECTION_EVENT_UNREACHABLE:
      return "UNREACHABLE";
    default:
      return "(not a connection event)";
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Big-endian message fields, so the two ends need not share a layout. */
static void put32(unsigned char* p, DAT_UINT32 v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}
static DAT_UINT32 get32(const unsigned char* p) {
  return ((DAT_UINT32)p[0] << 24) | ((DAT_UINT32)p[1] << 16) | ((DAT_UINT32)p[2] << 8) | p[3];
}
static void put64(unsigned char* p, DAT_UINT64 v) {
  put32(p, (DAT_UINT32)(v >> 32));
  put32(p + 4, (DAT_UINT32)v);
}
static DAT_UINT64 get64(const unsigned char* p) {
  return ((DAT_UINT64)get32(p) << 32) | get32(p + 4);
}

struct msg {
  DAT_UINT32 type, round, last;
  DAT_UINT64 len;
  DAT_RMR_TRIPLET rt; /* GO: where to write */
};

static void encode(unsigned char* b, const struct msg* m) {
  memset(b, 0, MSG_LEN);
  put32(b, MAGIC);
  put32(b + 4, m->type);
  put32(b + 8, m->round);
  put32(b + 12, m->last);
  put64(b + 16, m->len);
  put32(b + 24, m->rt.rmr_context);
  put64(b + 28, m->rt.target_address);
  put64(b + 36, m->rt.segment_length);
}

static void decode(const unsigned char* b, DAT_VLEN got, DAT_UINT32 want_type, struct msg* m) {
  if (got != MSG_LEN || get32(b) != MAGIC) die(EXIT_DAT, "malformed message received");
  memset(m, 0, sizeof(*m));
  m->type = get32(b + 4);
  m->round = get32(b + 8);
  m->last = get32(b + 12);
  m->len = get64(b + 16);
  m->rt.rmr_context = get32(b + 24);
  m->rt.target_address = get64(b + 28);
  m->rt.segment_length = get64(b + 36);
  if (m->type != want_type) {
    fprintf(stderr, "udat_pair %s: message type %u, expected %u\n", g_role, (unsigned)m->type,
            (unsigned)want_type);
    exit(EXIT_DAT);
  }
}

/* The byte at offset i of round r's pattern. */
static unsigned char pattern(DAT_UINT32 r, size_t i) {
  return (unsigned char)((i * 131u) ^ (i >> 9) ^ (r * 29u + 7u));
}

/* Round r writes a length that varies with r (never 0, at most size). */
static DAT_VLEN round_len(DAT_UINT32 r, DAT_VLEN size) {
  DAT_VLEN cut = (DAT_VLEN)(r % 5u) * (size / 7u) + (DAT_VLEN)(r % 3u);
  return cut < size ? size - cut : size;
}

struct side {
  DAT_IA_HANDLE ia;
  DAT_EVD_HANDLE async, dto, conn, cr;
  DAT_PZ_HANDLE pz;
  DAT_EP_HANDLE ep;
  DAT_PSP_HANDLE psp;
  DAT_LMR_HANDLE data_lmr, msg_lmr;
  DAT_LMR_CONTEXT data_lctx, msg_lctx;
  DAT_RMR_CONTEXT data_rctx; /* client: lets the server probe it */
  DAT_RMR_HANDLE rmr;
  unsigned char* data; /* server: target area; client: source then read-back area */
  DAT_VLEN data_len;
  unsigned char* msg; /* [0, MSG_LEN): receive slot, [MSG_LEN, 2*MSG_LEN): send slot */
  /* completions seen but not yet claimed, by cookie */
  int seen[CK_PROBE + 1];
  DAT_VLEN seen_len[CK_PROBE + 1];
  int probes_out;
};

/* After a failed DTO or while waiting: the connection event that says why.
 * Never returns. */
static void report_broken(struct side* s, const char* during) {
  DAT_EVENT ev;
  DAT_COUNT nmore;
  char line[256];
  if (dat_evd_wait(s->conn, 3000000, 1, &ev, &nmore) == DAT_SUCCESS) {
    snprintf(line, sizeof(line), "connection lost during %s: DAT_CONNECTION_EVENT_%s", during,
             conn_event_name(ev.event_number));
  } else {
    snprintf(line, sizeof(line), "connection lost during %s: no connection event within 3 s",
             during);
  }
  die(EXIT_BROKEN, line);
}

/* Waits for one event on evd (timeout: g_timeout_us or less). */
static DAT_RETURN wait_one(DAT_EVD_HANDLE evd, DAT_TIMEOUT us, DAT_EVENT* ev) {
  DAT_COUNT nmore;
  return dat_evd_wait(evd, us, 1, ev, &nmore);
}

/* Waits until the DTO / bind completions named by cookies[] have all been
 * seen, in any order (a SEND's completion may trail the peer's answer when
 * its ACK was lost).  probe_rt != NULL: while waiting, probe the peer with a
 * small RDMA READ every g_probe_us. */
static void await(struct side* s, const int* cookies, int n, const char* what,
                  const DAT_RMR_TRIPLET* probe_rt) {
  double deadline = now_s() + (double)g_timeout_us * 1e-6;
  for (;;) {
    int i, missing = 0;
    DAT_EVENT ev;
    DAT_RETURN r;
    DAT_UINT64 ck;
    DAT_DTO_COMPLETION_STATUS st;
    for (i = 0; i < n; ++i)
      if (!s->seen[cookies[i]]) missing = 1;
    if (!missing) break;
    r = wait_one(s->dto, probe_rt != NULL ? g_probe_us : g_timeout_us, &ev);
    if (DAT_GET_TYPE(r) == DAT_TIMEOUT_EXPIRED) {
      char line[160];
      if (now_s() < deadline && probe_rt != NULL) {
        /* Liveness probe: an RDMA READ of the peer's first 8 bytes. */
        DAT_LMR_TRIPLET l;
        DAT_DTO_COOKIE c;
        l.lmr_context = s->msg_lctx;
        l.pad = 0;
        l.virtual_address = (DAT_VADDR)(uintptr_t)(s->msg + 2 * MSG_LEN);
        l.segment_length = 8;
        c.as_64 = CK_PROBE;
        if (s->probes_out == 0) {
          DAT_RMR_TRIPLET t = *probe_rt;
          t.segment_length = 8;
          CHECK(dat_ep_post_rdma_read(s->ep, 1, &l, c, &t, DAT_COMPLETION_DEFAULT_FLAG));
          s->probes_out++;
        }
        continue;
      }
      snprintf(line, sizeof(line), "timed out after %.1f s waiting for %s",
               (double)g_timeout_us * 1e-6, what);
      die(EXIT_TIMEOUT, line);
    }
    CHECK(r);
    if (ev.event_number == DAT_RMR_BIND_COMPLETION_EVENT) {
      if (ev.event_data.rmr_completion_event_data.status != DAT_RMR_BIND_SUCCESS)
        die(EXIT_DAT, "RMR bind failed");
      s->seen[CK_BIND] = 1;
      continue;
    }
    if (ev.event_number != DAT_DTO_COMPLETION_EVENT) {
      fprintf(stderr, "udat_pair %s: unexpected event 0x%x\n", g_role, (unsigned)ev.event_number);
      exit(EXIT_DAT);
    }
    ck = ev.event_data.dto_completion_event_data.user_cookie.as_64;
    st = ev.event_data.dto_completion_event_data.status;
    if (st != DAT_DTO_SUCCESS) {
      /* A broken queue pair flushes everything; the completions already
       * queued may include the one that says why (e.g. TRANSPORT: retries
       * exhausted).  Report that one if it is there. */
      static const char* const kCookie[] = {"?",         "SEND", "RECV",      "RDMA WRITE",
                                            "RDMA READ", "BIND", "probe READ"};
      char during[160];
      DAT_EVENT more;
      while (st == DAT_DTO_ERR_FLUSHED && dat_evd_dequeue(s->dto, &more) == DAT_SUCCESS) {
        if (more.event_number == DAT_DTO_COMPLETION_EVENT &&
            more.event_data.dto_completion_event_data.status != DAT_DTO_ERR_FLUSHED) {
          ck = more.event_data.dto_completion_event_data.user_cookie.as_64;
          st = more.event_data.dto_completion_event_data.status;
        }
      }
      snprintf(during, sizeof(during), "%s (the %s completed with DTO status %d%s)", what,
               ck <= CK_PROBE ? kCookie[ck] : "?", (int)st,
               st == DAT_DTO_ERR_FLUSHED     ? " FLUSHED"
               : st == DAT_DTO_ERR_TRANSPORT ? " TRANSPORT"
                                             : "");
      report_broken(s, during);
    }
    if (ck == CK_PROBE) {
      s->probes_out--;
      continue;
    }
    if (ck < CK_SEND || ck > CK_PROBE || s->seen[ck]) die(EXIT_DAT, "unexpected DTO completion");
    s->seen[ck] = 1;
    s->seen_len[ck] = ev.event_data.dto_completion_event_data.transfered_length;
  }
  {
    int i;
    for (i = 0; i < n; ++i) s->seen[cookies[i]] = 0;
  }
}

static DAT_EVENT wait_conn(struct side* s, DAT_EVENT_NUMBER want, const char* what) {
  DAT_EVENT ev;
  DAT_RETURN r = wait_one(s->conn, g_timeout_us, &ev);
  char line[200];
  if (DAT_GET_TYPE(r) == DAT_TIMEOUT_EXPIRED) {
    snprintf(line, sizeof(line), "timed out after %.1f s waiting for %s",
             (double)g_timeout_us * 1e-6, what);
    die(EXIT_TIMEOUT, line);
  }
  CHECK(r);
  if (ev.event_number != want) {
    snprintf(line, sizeof(line), "waiting for %s: got DAT_CONNECTION_EVENT_%s", what,
             conn_event_name(ev.event_number));
    die(EXIT_BROKEN, line);
  }
  return ev;
}

static void post_recv_msg(struct side* s) {
  DAT_LMR_TRIPLET l;
  DAT_DTO_COOKIE c;
  l.lmr_context = s->msg_lctx;
  l.pad = 0;
  l.virtual_address = (DAT_VADDR)(uintptr_t)s->msg;
  l.segment_length = MSG_LEN;
  c.as_64 = CK_RECV;
  CHECK(dat_ep_post_recv(s->ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG));
}

static void send_msg(struct side* s, const struct msg* m) {
  DAT_LMR_TRIPLET l;
  DAT_DTO_COOKIE c;
  encode(s->msg + MSG_LEN, m);
  l.lmr_context = s->msg_lctx;
  l.pad = 0;
  l.virtual_address = (DAT_VADDR)(uintptr_t)(s->msg + MSG_LEN);
  l.segment_length = MSG_LEN;
  c.as_64 = CK_SEND;
  CHECK(dat_ep_post_send(s->ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG));
}

static void open_side(struct side* s, const char* name, DAT_VLEN data_len) {
  DAT_VLEN reg_size;
  DAT_VADDR reg_addr;
  DAT_REGION_DESCRIPTION region;
  DAT_RMR_CONTEXT unused;
  memset(s, 0, sizeof(*s));
  s->async = DAT_HANDLE_NULL;
  CHECK(dat_ia_open((const DAT_NAME_PTR)name, 8, &s->async, &s->ia));
  CHECK(dat_pz_create(s->ia, &s->pz));
  CHECK(dat_evd_create(s->ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG,
                       &s->dto));
  CHECK(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &s->conn));
  CHECK(dat_ep_create(s->ia, s->pz, s->dto, s->dto, s->conn, NULL, &s->ep));
  s->data_len = data_len;
  s->data = malloc(data_len);
  s->msg = malloc(3 * MSG_LEN);
  if (s->data == NULL || s->msg == NULL) die(EXIT_DAT, "out of memory");
  memset(s->data, 0, data_len);
  region.for_va = s->data;
  CHECK(dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, region, data_len, s->pz, DAT_MEM_PRIV_ALL_FLAG,
                       &s->data_lmr, &s->data_lctx, &s->data_rctx, &reg_size, &reg_addr));
  region.for_va = s->msg;
  CHECK(dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, region, 3 * MSG_LEN, s->pz,
                       DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &s->msg_lmr,
                       &s->msg_lctx, &unused, &reg_size, &reg_addr));
}

static void close_side(struct side* s) {
  if (s->rmr != DAT_HANDLE_NULL) CHECK(dat_rmr_free(s->rmr));
  if (s->psp != DAT_HANDLE_NULL) CHECK(dat_psp_free(s->psp));
  CHECK(dat_ep_free(s->ep));
  CHECK(dat_lmr_free(s->data_lmr));
  CHECK(dat_lmr_free(s->msg_lmr));
  CHECK(dat_evd_free(s->dto));
  CHECK(dat_evd_free(s->conn));
  if (s->cr != DAT_HANDLE_NULL) CHECK(dat_evd_free(s->cr));
  CHECK(dat_pz_free(s->pz));
  CHECK(dat_ia_close(s->ia, DAT_CLOSE_GRACEFUL_FLAG));
  free(s->data);
  free(s->msg);
}

static const char kReqPdata[] = "udat_pair client v1";
static const char kRepPdata[] = "udat_pair server v1";

static int run_server(const char* ia_name, DAT_VLEN size) {
  struct side s;
  DAT_EVENT ev;
  DAT_CR_PARAM crp;
  DAT_CR_HANDLE cr;
  DAT_RETURN r;
  DAT_LMR_TRIPLET l;
  DAT_RMR_CONTEXT rctx;
  DAT_RMR_COOKIE bck;
  struct msg m, in;
  DAT_RMR_TRIPLET client_rt;
  DAT_UINT32 round = 0;
  DAT_UINT64 bytes = 0;
  const int k_recv[] = {CK_RECV}, k_bind[] = {CK_BIND}, k_go[] = {CK_SEND, CK_RECV};

  open_side(&s, ia_name, size);
  CHECK(dat_evd_create(s.ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &s.cr));
  CHECK(dat_psp_create(s.ia, QUAL, s.cr, DAT_PSP_CONSUMER_FLAG, &s.psp));
  printf("udat_pair server: listening on %s, qualifier %u\n", ia_name, QUAL);
  fflush(stdout);

  r = wait_one(s.cr, g_timeout_us, &ev);
  if (DAT_GET_TYPE(r) == DAT_TIMEOUT_EXPIRED) {
    char line[96];
    snprintf(line, sizeof(line), "timed out after %.1f s: no connection request arrived",
             (double)g_timeout_us * 1e-6);
    die(EXIT_TIMEOUT, line);
  }
  CHECK(r);
  if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT) die(EXIT_DAT, "unexpected CR EVD event");
  cr = ev.event_data.cr_arrival_event_data.cr_handle;
  CHECK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp));
  if (crp.private_data_size != (DAT_COUNT)sizeof(kReqPdata) ||
      memcmp(crp.private_data, kReqPdata, sizeof(kReqPdata)) != 0) {
    CHECK(dat_cr_reject(cr));
    die(EXIT_DAT, "connection request with unexpected private data (rejected)");
  }
  post_recv_msg(&s); /* for HELLO */
  CHECK(dat_cr_accept(cr, s.ep, sizeof(kRepPdata), (DAT_PVOID)kRepPdata));
  wait_conn(&s, DAT_CONNECTION_EVENT_ESTABLISHED, "ESTABLISHED");
  await(&s, k_recv, 1, "HELLO", NULL);
  decode(s.msg, s.seen_len[CK_RECV], MSG_HELLO, &in);
  client_rt = in.rt; /* 8 bytes of the client's memory: the liveness probe */

  /* Expose the buffer through an RMR bound on this EP. */
  CHECK(dat_rmr_create(s.pz, &s.rmr));
  l.lmr_context = s.data_lctx;
  l.pad = 0;
  l.virtual_address = (DAT_VADDR)(uintptr_t)s.data;
  l.segment_length = size;
  bck.as_64 = 77;
  CHECK(dat_rmr_bind(s.rmr, &l, DAT_MEM_PRIV_REMOTE_READ_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG,
                     s.ep, bck, DAT_COMPLETION_DEFAULT_FLAG, &rctx));
  await(&s, k_bind, 1, "the RMR bind", NULL);

  for (;;) {
    size_t i;
    post_recv_msg(&s); /* for DONE */
    memset(&m, 0, sizeof(m));
    m.type = MSG_GO;
    m.round = round;
    m.rt.rmr_context = rctx;
    m.rt.target_address = (DAT_VADDR)(uintptr_t)s.data;
    m.rt.segment_length = size;
    send_msg(&s, &m);
    await(&s, k_go, 2, "DONE", &client_rt);
    decode(s.msg, s.seen_len[CK_RECV], MSG_DONE, &in);
    if (in.round != round || in.len > size) die(EXIT_DAT, "DONE for the wrong round");
    for (i = 0; i < in.len; ++i)
      if (s.data[i] != pattern(round, i)) {
        fprintf(stderr, "udat_pair server: round %u: byte %zu is 0x%02x, expected 0x%02x\n",
                (unsigned)round, i, s.data[i], pattern(round, i));
        exit(EXIT_DAT);
      }
    bytes += in.len;
    ++round;
    if (in.last) break;
  }
  /* The client disconnects; the peer's DREQ ends the connection here. */
  wait_conn(&s, DAT_CONNECTION_EVENT_DISCONNECTED, "the client's disconnect");
  close_side(&s);
  printf("udat_pair server: %u rounds, %llu bytes written by the peer verified byte-exact\n",
         (unsigned)round, (unsigned long long)bytes);
  return 0;
}

static int run_client(const char* ia_name, const char* server_ip, DAT_VLEN size, DAT_UINT32 iters,
                      int connect_tries) {
  struct side s;
  DAT_EVENT ev;
  struct sockaddr_in sin;
  struct msg m, go;
  DAT_UINT32 round;
  DAT_UINT64 bytes = 0;
  int attempt;
  double t0;
  const int k_send[] = {CK_SEND}, k_recv[] = {CK_RECV}, k_write[] = {CK_WRITE},
            k_read[] = {CK_READ};
  DAT_RMR_TRIPLET last_rt;
  int have_rt = 0;

  memset(&sin, 0, sizeof(sin));
  sin.sin_family = AF_INET;
  if (inet_pton(AF_INET, server_ip, &sin.sin_addr) != 1) die(EXIT_USAGE, "bad server IPv4");
  open_side(&s, ia_name, 2 * size);

  /* Connect; a server whose link is still coming up may not answer the
   * first attempt (UNREACHABLE / NON_PEER_REJECTED): reset and retry. */
  for (attempt = 1;; ++attempt) {
    DAT_RETURN r;
    CHECK(dat_ep_connect(s.ep, (DAT_IA_ADDRESS_PTR)&sin, QUAL, g_timeout_us, sizeof(kReqPdata),
                         (DAT_PVOID)kReqPdata, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
    r = wait_one(s.conn, g_timeout_us + 1000000, &ev);
    if (DAT_GET_TYPE(r) == DAT_TIMEOUT_EXPIRED)
      die(EXIT_TIMEOUT, "no connection event after dat_ep_connect");
    CHECK(r);
    if (ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED) break;
    fprintf(stderr, "udat_pair client: connect attempt %d: DAT_CONNECTION_EVENT_%s\n", attempt,
            conn_event_name(ev.event_number));
    if (attempt >= connect_tries || ev.event_number == DAT_CONNECTION_EVENT_PEER_REJECTED)
      die(EXIT_BROKEN, "could not connect");
    CHECK(dat_ep_reset(s.ep));
    {
      struct timespec ts = {0, 200000000};
      nanosleep(&ts, NULL);
    }
  }
  if (ev.event_data.connect_event_data.private_data_size != (DAT_COUNT)sizeof(kRepPdata) ||
      memcmp(ev.event_data.connect_event_data.private_data, kRepPdata, sizeof(kRepPdata)) != 0)
    die(EXIT_DAT, "ESTABLISHED with unexpected private data");

  post_recv_msg(&s); /* for the first GO */
  memset(&m, 0, sizeof(m));
  m.type = MSG_HELLO;
  m.rt.rmr_context = s.data_rctx; /* where the server may probe us */
  m.rt.target_address = (DAT_VADDR)(uintptr_t)(s.data + size);
  m.rt.segment_length = 8;
  send_msg(&s, &m);
  await(&s, k_send, 1, "the HELLO send", NULL);
  printf("udat_pair client: connected to %s\n", server_ip);
  fflush(stdout);

  t0 = now_s();
  for (round = 0; round < iters; ++round) {
    DAT_LMR_TRIPLET iov[3];
    DAT_DTO_COOKIE c;
    DAT_RMR_TRIPLET rt;
    DAT_VLEN len = round_len(round, size), a, b;
    unsigned char* src = s.data;
    unsigned char* back = s.data + size;
    size_t i;

    await(&s, k_recv, 1, "the server's GO", have_rt ? &last_rt : NULL);
    decode(s.msg, s.seen_len[CK_RECV], MSG_GO, &go);
    if (go.round != round || go.rt.segment_length < len) die(EXIT_DAT, "GO for the wrong round");
    last_rt = go.rt;
    have_rt = 1;
    post_recv_msg(&s); /* for the next GO */

    /* WRITE the pattern from three local segments (the source is laid out
     * with gaps so each segment starts at a different offset). */
    for (i = 0; i < len; ++i) src[i] = pattern(round, i);
    a = len / 3;
    b = len / 3 + len % 3;
    iov[0].lmr_context = s.data_lctx;
    iov[0].pad = 0;
    iov[0].virtual_address = (DAT_VADDR)(uintptr_t)src;
    iov[0].segment_length = a;
    iov[1] = iov[0];
    iov[1].virtual_address += a;
    iov[1].segment_length = b;
    iov[2] = iov[0];
    iov[2].virtual_address += a + b;
    iov[2].segment_length = len - a - b;
    rt = go.rt;
    rt.segment_length = len;
    c.as_64 = CK_WRITE;
    CHECK(dat_ep_post_rdma_write(s.ep, 3, iov, c, &rt, DAT_COMPLETION_DEFAULT_FLAG));
    await(&s, k_write, 1, "the RDMA WRITE", NULL);
    if (s.seen_len[CK_WRITE] != len) die(EXIT_DAT, "RDMA WRITE length differs");

    /* READ it back into the second half and compare. */
    memset(back, 0, len);
    iov[0].virtual_address = (DAT_VADDR)(uintptr_t)back;
    iov[0].segment_length = len;
    c.as_64 = CK_READ;
    CHECK(dat_ep_post_rdma_read(s.ep, 1, iov, c, &rt, DAT_COMPLETION_DEFAULT_FLAG));
    await(&s, k_read, 1, "the RDMA READ", NULL);
    if (s.seen_len[CK_READ] != len) die(EXIT_DAT, "RDMA READ length differs");
    CHECK(dat_lmr_sync_rdma_read(s.ia, iov, 1));
    if (memcmp(back, src, len) != 0) {
      for (i = 0; i < len && back[i] == src[i]; ++i) {
      }
      fprintf(stderr, "udat_pair client: round %u: read back byte %zu is 0x%02x, wrote 0x%02x\n",
              (unsigned)round, i, back[i], src[i]);
      exit(EXIT_DAT);
    }
    bytes += len;

    memset(&m, 0, sizeof(m));
    m.type = MSG_DONE;
    m.round = round;
    m.len = len;
    m.last = round + 1 == iters;
    send_msg(&s, &m);
    await(&s, k_send, 1, "the DONE send", NULL);
    if ((round + 1) % 100 == 0) {
      printf("udat_pair client: round %u\n", (unsigned)(round + 1));
      fflush(stdout);
    }
  }

  CHECK(dat_ep_disconnect(s.ep, DAT_CLOSE_GRACEFUL_FLAG));
  wait_conn(&s, DAT_CONNECTION_EVENT_DISCONNECTED, "DISCONNECTED");
  /* The receive posted for a GO that never came is flushed. */
  {
    DAT_COUNT nmore;
    DAT_RETURN r = dat_evd_wait(s.dto, g_timeout_us, 1, &ev, &nmore);
    if (DAT_GET_TYPE(r) == DAT_TIMEOUT_EXPIRED)
      die(EXIT_TIMEOUT, "the outstanding receive was not flushed after the disconnect");
    CHECK(r);
    if (ev.event_number != DAT_DTO_COMPLETION_EVENT ||
        ev.event_data.dto_completion_event_data.status != DAT_DTO_ERR_FLUSHED ||
        ev.event_data.dto_completion_event_data.user_cookie.as_64 != CK_RECV)
      die(EXIT_DAT, "expected the outstanding receive to complete as flushed");
  }
  close_side(&s);
  {
    double dt = now_s() - t0;
    printf(
        "udat_pair client: %u rounds, %llu bytes written and read back byte-exact "
        "(%.1f MB/s each way)\n",
        (unsigned)iters, (unsigned long long)bytes, dt > 0 ? (double)bytes / dt / 1e6 : 0.0);
  }
  return 0;
}

static void usage(void) {
  fprintf(stderr,
          "usage: udat_pair --server IA_NAME [--size N] [--timeout-ms T] [--probe-ms P]\n"
          "       udat_pair --client IA_NAME SERVER_IPV4 [--size N] [--iters N] [--timeout-ms T]\n"
          "                 [--probe-ms P] [--connect-tries N]\n");
  exit(EXIT_USAGE);
}

int main(int argc, char** argv) {
  const char* ia_name;
  const char* server_ip = NULL;
  int server, i, first_opt, connect_tries = 10;
  unsigned long long size = 1 << 20, iters = 20;

  if (argc < 3) usage();
  if (strcmp(argv[1], "--server") == 0) {
    server = 1;
    first_opt = 3;
  } else if (strcmp(argv[1], "--client") == 0 && argc >= 4) {
    server = 0;
    server_ip = argv[3];
    first_opt = 4;
  } else {
    usage();
    return EXIT_USAGE;
  }
  ia_name = argv[2];
  g_role = server ? "server" : "client";
  for (i = first_opt; i < argc; ++i) {
    char* end = NULL;
    unsigned long long v;
    if (i + 1 >= argc) usage();
    v = strtoull(argv[i + 1], &end, 0);
    if (end == argv[i + 1] || *end != '\0') usage();
    if (strcmp(argv[i], "--size") == 0 && v >= 64 && v <= (1ull << 30))
      size = v;
    else if (strcmp(argv[i], "--iters") == 0 && v >= 1 && v <= 0xFFFFFFFFull)
      iters = v;
    else if (strcmp(argv[i], "--timeout-ms") == 0 && v >= 1 && v <= 3600000)
      g_timeout_us = (DAT_TIMEOUT)(v * 1000);
    else if (strcmp(argv[i], "--probe-ms") == 0 && v >= 1 && v <= 3600000)
      g_probe_us = (DAT_TIMEOUT)(v * 1000);
    else if (strcmp(argv[i], "--connect-tries") == 0 && v >= 1 && v <= 1000)
      connect_tries = (int)v;
    else
      usage();
    ++i;
  }
  return server ? run_server(ia_name, (DAT_VLEN)size)
                : run_client(ia_name, server_ip, (DAT_VLEN)size, (DAT_UINT32)iters, connect_tries);
}
