/* The DAT 2.0 differences dtest/dtestx/dapltest do not reach, through
 * OFED's libdat2 and the plug-in only (<dat2/udat.h>, -ldat2): one process
 * opens two IAs (the two ends of the in-process net_ring link, two dat.conf
 * entries marked threadsafe) and checks
 *   - dat_ia_query with NULL outputs and mask 0, version 2.0, thread safety
 *     as dat.conf says, the IB extension, the IA address;
 *   - dat_cr_reject with private data reaching the peer's reject event;
 *   - a zero-based LMR bound to an RMR through dat_rmr_bind with its LMR
 *     handle and DAT_VA_TYPE_ZB, written by RDMA at an offset;
 *   - the DTO event's operation and transfered_length;
 *   - dat_ia_close of both IAs (libdat2 looks its entry up again from
 *     dat_ia_query's thread safety and version);
 *   - argument codes of entries the plug-in shares with the 1.2 API
 *     (dat_core/front/entries.inc) where 2.0 differs or is not reached
 *     otherwise: SRQ counts, LMR va_type, post_recv count, handle type.
 * DAT_OVERRIDE names the dat.conf (tests/dat2/CMakeLists.txt writes it). */
#include <arpa/inet.h>
#include <dat2/udat.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(c)                                                            \
  do {                                                                      \
    if (!(c)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
      failures++;                                                           \
    }                                                                       \
  } while (0)
#define OK(call)                                                                 \
  do {                                                                           \
    DAT_RETURN r_ = (call);                                                      \
    if (r_ != DAT_SUCCESS) {                                                     \
      const char *mj = "?", *mn = "?";                                           \
      dat_strerror(r_, &mj, &mn);                                                \
      fprintf(stderr, "%s:%d: %s = %s %s\n", __FILE__, __LINE__, #call, mj, mn); \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

#define TIMEOUT_US (5 * 1000 * 1000)

struct side {
  DAT_IA_HANDLE ia;
  DAT_EVD_HANDLE async, dto, conn, cr;
  DAT_PZ_HANDLE pz;
  DAT_EP_HANDLE ep;
};

static void open_side(const char* ia_name, struct side* s) {
  char name[DAT_NAME_MAX_LENGTH];
  snprintf(name, sizeof(name), "%s", ia_name);
  memset(s, 0, sizeof(*s));
  s->async = DAT_HANDLE_NULL;
  OK(dat_ia_openv(name, 8, &s->async, &s->ia, DAT_VERSION_MAJOR, DAT_VERSION_MINOR, DAT_TRUE));
  OK(dat_pz_create(s->ia, &s->pz));
  OK(dat_evd_create(s->ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG, &s->dto));
  OK(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &s->conn));
  OK(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &s->cr));
}

static void new_ep(struct side* s) {
  OK(dat_ep_create(s->ia, s->pz, s->dto, s->dto, s->conn, NULL, &s->ep));
}

static DAT_EVENT wait_event(DAT_EVD_HANDLE evd) {
  DAT_EVENT ev;
  DAT_COUNT more = 0;
  OK(dat_evd_wait(evd, TIMEOUT_US, 1, &ev, &more));
  return ev;
}

int main(void) {
  struct side a, b;
  CHECK(sizeof(DAT_LMR_TRIPLET) == 16);
  open_side("dpdat_a", &a);
  open_side("dpdat_b", &b);

  /* dat_ia_query: NULL outputs with masks 0, then the attributes. */
  OK(dat_ia_query(a.ia, NULL, 0, NULL, 0, NULL));
  DAT_IA_ATTR ia_attr;
  DAT_PROVIDER_ATTR pr_attr;
  OK(dat_ia_query(b.ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL, &pr_attr));
  CHECK(pr_attr.dapl_version_major == 2 && pr_attr.dapl_version_minor == 0);
  CHECK(pr_attr.is_thread_safe == DAT_TRUE);
  CHECK(ia_attr.extension_supported == DAT_EXTENSION_IB);
  CHECK(ia_attr.ia_address_ptr != NULL && ia_attr.ia_address_ptr->sa_family == AF_INET);
  struct sockaddr_in b_addr;
  memcpy(&b_addr, ia_attr.ia_address_ptr, sizeof(b_addr));
  CHECK(ntohl(b_addr.sin_addr.s_addr) == 0xC0A84D02u); /* 192.168.77.2 */

  /* Argument codes (valid handles only: libdat2 dispatches through them). */
  const DAT_RETURN kBadArg2 = DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG2;
  DAT_HANDLE_TYPE ht;
  OK(dat_get_handle_type(a.pz, &ht));
  CHECK(ht == DAT_HANDLE_TYPE_PZ);
  DAT_SRQ_ATTR srq_attr = {.max_recv_dtos = 8, .max_recv_iov = 1, .low_watermark = 0};
  DAT_SRQ_HANDLE srq;
  OK(dat_srq_create(a.ia, a.pz, &srq_attr, &srq));
  CHECK(dat_srq_resize(srq, -1) == kBadArg2);
  CHECK(dat_srq_set_lw(srq, -1) == kBadArg2);
  OK(dat_srq_free(srq));
  srq_attr.max_recv_dtos = -1; /* 2.0: the missing handle pointer is reported first */
  CHECK(dat_srq_create(a.ia, a.pz, &srq_attr, NULL) ==
        (DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG4));
  {
    DAT_REGION_DESCRIPTION region;
    char buf[64];
    region.for_va = buf;
    DAT_LMR_HANDLE lmr;
    CHECK(dat_lmr_create(a.ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), a.pz,
                         DAT_MEM_PRIV_LOCAL_READ_FLAG, (DAT_VA_TYPE)7, &lmr, NULL, NULL, NULL,
                         NULL) == (DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG7));
  }
  {
    DAT_EP_HANDLE ep;
    OK(dat_ep_create(a.ia, a.pz, a.dto, a.dto, a.conn, NULL, &ep));
    DAT_DTO_COOKIE none = {.as_64 = 0};
    CHECK(dat_ep_post_recv(ep, -1, NULL, none, DAT_COMPLETION_DEFAULT_FLAG) == kBadArg2);
    OK(dat_ep_free(ep));
  }

  const DAT_CONN_QUAL qual = 4242;
  DAT_PSP_HANDLE psp;
  OK(dat_psp_create(b.ia, qual, b.cr, DAT_PSP_CONSUMER_FLAG, &psp));

  /* 1. Reject with private data. */
  new_ep(&a);
  OK(dat_ep_connect(a.ep, (DAT_IA_ADDRESS_PTR)&b_addr, qual, TIMEOUT_US, 5, "hello",
                    DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
  DAT_EVENT ev = wait_event(b.cr);
  CHECK(ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
  DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
  DAT_CR_PARAM crp;
  OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp));
  CHECK(crp.private_data_size >= 5 && memcmp(crp.private_data, "hello", 5) == 0);
  OK(dat_cr_reject(cr, 9, "no thanks"));
  ev = wait_event(a.conn);
  CHECK(ev.event_number == DAT_CONNECTION_EVENT_PEER_REJECTED);
  CHECK(ev.event_data.connect_event_data.private_data_size >= 9 &&
        memcmp(ev.event_data.connect_event_data.private_data, "no thanks", 9) == 0);
  OK(dat_ep_free(a.ep));

  /* 2. Connect, accept. */
  new_ep(&a);
  new_ep(&b);
  OK(dat_ep_connect(a.ep, (DAT_IA_ADDRESS_PTR)&b_addr, qual, TIMEOUT_US, 0, NULL,
                    DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
  ev = wait_event(b.cr);
  CHECK(ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
  OK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, b.ep, 0, NULL));
  ev = wait_event(a.conn);
  CHECK(ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED);
  ev = wait_event(b.conn);
  CHECK(ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED);

  /* 3. Zero-based target LMR on b, bound to an RMR with its LMR handle. */
  enum { kLen = 4096, kOff = 100, kMsg = 64 };
  unsigned char *target = calloc(1, kLen), *source = malloc(kMsg);
  for (int i = 0; i < kMsg; ++i) source[i] = (unsigned char)(i * 7 + 1);
  DAT_REGION_DESCRIPTION region;
  DAT_LMR_HANDLE t_lmr, s_lmr;
  DAT_LMR_CONTEXT t_ctx, s_ctx;
  DAT_RMR_CONTEXT t_rctx;
  DAT_VLEN reg_len;
  DAT_VADDR reg_addr;
  region.for_va = target;
  OK(dat_lmr_create(b.ia, DAT_MEM_TYPE_VIRTUAL, region, kLen, b.pz,
                    DAT_MEM_PRIV_LOCAL_WRITE_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG, DAT_VA_TYPE_ZB,
                    &t_lmr, &t_ctx, &t_rctx, &reg_len, &reg_addr));
  CHECK(reg_addr == 0 && reg_len == kLen);
  region.for_va = source;
  OK(dat_lmr_create(a.ia, DAT_MEM_TYPE_VIRTUAL, region, kMsg, a.pz, DAT_MEM_PRIV_LOCAL_READ_FLAG,
                    DAT_VA_TYPE_VA, &s_lmr, &s_ctx, NULL, NULL, NULL));

  DAT_RMR_HANDLE rmr;
  OK(dat_rmr_create(b.pz, &rmr));
  DAT_LMR_TRIPLET bind = {.virtual_address = 0, .segment_length = kLen, .lmr_context = t_ctx};
  DAT_RMR_COOKIE rc = {.as_64 = 0x77};
  DAT_RMR_CONTEXT rmr_ctx = 0;
  OK(dat_rmr_bind(rmr, t_lmr, &bind, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, DAT_VA_TYPE_ZB, b.ep, rc,
                  DAT_COMPLETION_DEFAULT_FLAG, &rmr_ctx));
  ev = wait_event(b.dto);
  CHECK(ev.event_number == DAT_RMR_BIND_COMPLETION_EVENT);
  CHECK(ev.event_data.rmr_completion_event_data.status == DAT_DTO_SUCCESS);
  CHECK(ev.event_data.rmr_completion_event_data.user_cookie.as_64 == 0x77);

  DAT_LMR_TRIPLET l_iov = {.virtual_address = (DAT_VADDR)(uintptr_t)source,
                           .segment_length = kMsg,
                           .lmr_context = s_ctx};
  DAT_RMR_TRIPLET r_iov = {.virtual_address = kOff, .segment_length = kMsg, .rmr_context = rmr_ctx};
  DAT_DTO_COOKIE dc = {.as_64 = 0x1234};
  OK(dat_ep_post_rdma_write(a.ep, 1, &l_iov, dc, &r_iov, DAT_COMPLETION_DEFAULT_FLAG));
  ev = wait_event(a.dto);
  CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT);
  CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
  CHECK(ev.event_data.dto_completion_event_data.operation == DAT_DTO_RDMA_WRITE);
  CHECK(ev.event_data.dto_completion_event_data.transfered_length == kMsg);
  CHECK(ev.event_data.dto_completion_event_data.user_cookie.as_64 == 0x1234);
  CHECK(memcmp(target + kOff, source, kMsg) == 0);
  CHECK(target[kOff - 1] == 0 && target[kOff + kMsg] == 0);

  /* Teardown, then close both IAs through libdat2. */
  OK(dat_ep_disconnect(a.ep, DAT_CLOSE_ABRUPT_FLAG));
  OK(dat_rmr_free(rmr));
  OK(dat_ia_close(a.ia, DAT_CLOSE_ABRUPT_FLAG));
  OK(dat_ia_close(b.ia, DAT_CLOSE_ABRUPT_FLAG));
  free(target);
  free(source);
  if (failures != 0) {
    fprintf(stderr, "dat2_plugin_test: %d check(s) failed\n", failures);
    return 1;
  }
  printf("dat2_plugin_test: all checks passed\n");
  return 0;
}
