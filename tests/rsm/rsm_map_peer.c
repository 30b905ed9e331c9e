/* Load/store mappings between two processes, in C with only <rsm/rsmapi.h>
 * and plain pointers.
 *   rsm_map_peer export <controller> <importer node> <bytes> check|serve
 *   rsm_map_peer import <controller> <exporter node> <bytes>
 *   rsm_map_peer bench  <controller> <exporter node> <bytes>
 * export publishes a segment of <bytes> to the importer's node with
 * RSM_PERM_RDWR.  With `check` it follows the importer step by step:
 *   1. the importer maps the segment, stores a pattern, closes a barrier and
 *      signals: the exporter's memory holds the pattern byte for byte;
 *   2. the exporter writes a new pattern and signals: the importer opens a
 *      barrier and loads it byte for byte;
 *   3. two importer threads, each with its own import and mapping, store
 *      into interleaved disjoint 512-byte ranges and close their barriers:
 *      the exporter sees both;
 *   4. the importer unmaps and disconnects; the exporter unpublishes.
 * With `serve` it only waits for the bench importer's final signal.
 * bench prints the mapping's figures (first-touch fault cost, barrier close
 * cost for 1, 16 and 256 dirty pages, streaming stores) next to
 * rsm_memseg_import_put of the same data.  Exit status 0: everything held. */
#define _GNU_SOURCE
#include <pthread.h>
#include <rsm/rsmapi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SEG_ID 0x400778u
#define WAIT_MS 60000

#define EXPECT_RC(call, want)                                                                    \
  do {                                                                                           \
    int rc_ = (call);                                                                            \
    if (rc_ != (want)) {                                                                         \
      fprintf(stderr, "[%s] %s:%d: %s -> %d, wanted %d\n", role, __FILE__, __LINE__, #call, rc_, \
              (int)(want));                                                                      \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)
#define EXPECT(cond)                                                                 \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "[%s] %s:%d: expected %s\n", role, __FILE__, __LINE__, #cond); \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

static const char* role = "?";
static size_t seg_bytes;
static size_t page;

static unsigned char pat(size_t i, unsigned seed) {
  return (unsigned char)(i * 131u + seed * 17u + 7u + (i >> 12));
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static size_t first_diff(const unsigned char* m, unsigned seed, int interleaved) {
  size_t i;
  for (i = 0; i < seg_bytes; ++i) {
    unsigned s = interleaved ? seed + (unsigned)((i / 512) % 2) : seed;
    if (m[i] != pat(i, s)) return i;
  }
  return seg_bytes;
}

static int run_export(rsmapi_controller_handle_t c, rsm_node_id_t importer, int check) {
  rsm_memseg_export_handle_t seg;
  rsm_memseg_id_t id = SEG_ID;
  rsmapi_access_entry_t acl[1];
  unsigned char* mem = aligned_alloc(page, seg_bytes);
  size_t i, d;
  EXPECT(mem != NULL);
  memset(mem, 0, seg_bytes);
  EXPECT_RC(rsm_memseg_export_create(c, &seg, mem, seg_bytes, 0), RSM_SUCCESS);
  acl[0].ae_node = importer;
  acl[0].ae_permissions = RSM_PERM_RDWR;
  EXPECT_RC(rsm_memseg_export_publish(seg, &id, acl, 1), RSM_SUCCESS);
  printf("[export] published 0x%x (%zu B) to node %u with RSM_PERM_RDWR\n", id, seg_bytes,
         (unsigned)importer);
  fflush(stdout);
  if (check) {
    EXPECT_RC(rsm_intr_signal_wait(seg, WAIT_MS), RSM_SUCCESS);
    d = first_diff(mem, 1, 0);
    if (d != seg_bytes) fprintf(stderr, "[export] byte %zu: 0x%02x\n", d, mem[d]);
    EXPECT(d == seg_bytes);
    printf("[export] stores through the importer's mapping after its barrier: byte-exact\n");
    fflush(stdout);
    for (i = 0; i < seg_bytes; ++i) mem[i] = pat(i, 2);
    EXPECT_RC(rsm_intr_signal_post(seg, 0), RSM_SUCCESS);
    EXPECT_RC(rsm_intr_signal_wait(seg, WAIT_MS), RSM_SUCCESS);
    d = first_diff(mem, 3, 1);
    if (d != seg_bytes) fprintf(stderr, "[export] byte %zu: 0x%02x\n", d, mem[d]);
    EXPECT(d == seg_bytes);
    printf("[export] two concurrent mappings of disjoint ranges: byte-exact\n");
    fflush(stdout);
  }
  EXPECT_RC(rsm_intr_signal_wait(seg, WAIT_MS), RSM_SUCCESS); /* importer done */
  EXPECT_RC(rsm_memseg_export_unpublish(seg), RSM_SUCCESS);
  EXPECT_RC(rsm_memseg_export_destroy(seg), RSM_SUCCESS);
  free(mem);
  printf("[export] OK\n");
  return 0;
}

static rsm_memseg_import_handle_t connect_retry(rsmapi_controller_handle_t c, rsm_node_id_t n) {
  rsm_memseg_import_handle_t im = NULL;
  int rc = -1, tries;
  for (tries = 0; tries < 600; ++tries) { /* until the exporter has published */
    rc = rsm_memseg_import_connect(c, n, SEG_ID, RSM_PERM_RDWR, &im);
    if (rc == RSM_SUCCESS) break;
    if (rc != RSMERR_SEG_NOT_PUBLISHED && rc != RSMERR_REMOTE_NODE_UNREACHABLE) break;
    sleep_ms(100);
  }
  EXPECT_RC(rc, RSM_SUCCESS);
  return im;
}

struct Half {
  rsm_memseg_import_handle_t im;
  unsigned char* p;
  unsigned parity;
  int rc;
};

static void* store_half(void* arg) {
  struct Half* h = arg;
  rsmapi_barrier_t bar;
  size_t i;
  h->rc = rsm_memseg_import_init_barrier(h->im, RSM_BARRIER_SEGMENT, &bar);
  if (h->rc == RSM_SUCCESS) h->rc = rsm_memseg_import_open_barrier(&bar);
  if (h->rc != RSM_SUCCESS) return NULL;
  for (i = 0; i < seg_bytes; ++i)
    if ((i / 512) % 2 == h->parity) h->p[i] = pat(i, 3 + h->parity);
  h->rc = rsm_memseg_import_close_barrier(&bar);
  (void)rsm_memseg_import_destroy_barrier(&bar);
  return NULL;
}

static int run_import(rsmapi_controller_handle_t c, rsm_node_id_t exporter) {
  rsm_memseg_import_handle_t im = connect_retry(c, exporter), im2;
  rsmapi_barrier_t bar;
  unsigned char *p = NULL, *q = NULL;
  struct Half h[2];
  pthread_t t[2];
  size_t i, d;
  printf("[import] connected to node %u segment 0x%x\n", (unsigned)exporter, SEG_ID);
  EXPECT_RC(rsm_memseg_import_map(im, (void**)&p, RSM_MAP_NONE, RSM_PERM_RDWR, 0, seg_bytes),
            RSM_SUCCESS);
  EXPECT_RC(rsm_memseg_import_init_barrier(im, RSM_BARRIER_SEGMENT, &bar), RSM_SUCCESS);
  EXPECT_RC(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS);
  for (i = 0; i < seg_bytes; ++i) p[i] = pat(i, 1);
  EXPECT_RC(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS);
  EXPECT_RC(rsm_intr_signal_post(im, 0), RSM_SUCCESS);
  printf("[import] stored %zu B through the mapping, barrier closed\n", seg_bytes);
  fflush(stdout);

  EXPECT_RC(rsm_intr_signal_wait(im, WAIT_MS), RSM_SUCCESS); /* exporter rewrote */
  EXPECT_RC(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS);
  d = first_diff(p, 2, 0);
  if (d != seg_bytes) fprintf(stderr, "[import] byte %zu: 0x%02x\n", d, p[d]);
  EXPECT(d == seg_bytes);
  EXPECT_RC(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS);
  EXPECT_RC(rsm_memseg_import_destroy_barrier(&bar), RSM_SUCCESS);
  printf("[import] exporter's new data loaded after open_barrier: byte-exact\n");
  fflush(stdout);

  im2 = connect_retry(c, exporter);
  EXPECT_RC(rsm_memseg_import_map(im2, (void**)&q, RSM_MAP_NONE, RSM_PERM_RDWR, 0, seg_bytes),
            RSM_SUCCESS);
  h[0].im = im;
  h[0].p = p;
  h[0].parity = 0;
  h[1].im = im2;
  h[1].p = q;
  h[1].parity = 1;
  for (i = 0; i < 2; ++i) EXPECT(pthread_create(&t[i], NULL, store_half, &h[i]) == 0);
  for (i = 0; i < 2; ++i) {
    pthread_join(t[i], NULL);
    EXPECT_RC(h[i].rc, RSM_SUCCESS);
  }
  EXPECT_RC(rsm_intr_signal_post(im, 0), RSM_SUCCESS);
  EXPECT_RC(rsm_memseg_import_disconnect(im2), RSMERR_SEG_STILL_MAPPED);
  EXPECT_RC(rsm_memseg_import_unmap(im2), RSM_SUCCESS);
  EXPECT_RC(rsm_memseg_import_unmap(im), RSM_SUCCESS);
  EXPECT_RC(rsm_memseg_import_unmap(im), RSMERR_SEG_NOT_MAPPED);
  EXPECT_RC(rsm_memseg_import_disconnect(im2), RSM_SUCCESS);
  EXPECT_RC(rsm_intr_signal_post(im, 0), RSM_SUCCESS);
  EXPECT_RC(rsm_memseg_import_disconnect(im), RSM_SUCCESS);
  printf("[import] OK\n");
  return 0;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Median close_barrier time (us) with n pages dirtied (whole pages) since open. */
static double close_cost(rsm_memseg_import_handle_t im, unsigned char* p, size_t n) {
  enum { kReps = 21 };
  double t[kReps];
  rsmapi_barrier_t bar;
  int r;
  size_t k;
  EXPECT_RC(rsm_memseg_import_init_barrier(im, RSM_BARRIER_SEGMENT, &bar), RSM_SUCCESS);
  for (r = 0; r < kReps; ++r) {
    double t0;
    EXPECT_RC(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS);
    for (k = 0; k < n; ++k) memset(p + k * page, r + 1, page); /* fetches, then dirties */
    t0 = now_s();
    EXPECT_RC(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS);
    t[r] = (now_s() - t0) * 1e6;
  }
  EXPECT_RC(rsm_memseg_import_destroy_barrier(&bar), RSM_SUCCESS);
  qsort(t, kReps, sizeof(t[0]), cmp_double);
  return t[kReps / 2];
}

static int run_bench(rsmapi_controller_handle_t c, rsm_node_id_t exporter) {
  rsm_memseg_import_handle_t im = connect_retry(c, exporter);
  rsmapi_barrier_t bar;
  unsigned char* p = NULL;
  unsigned char* buf = malloc(seg_bytes);
  volatile unsigned char sink = 0;
  const size_t pages = seg_bytes / page;
  double t0, t1, t2;
  size_t i, touched = 0;
  EXPECT(buf != NULL);
  EXPECT(pages >= 256);

  /* First touch, sequential: one load per page (read-ahead fetches 16). */
  EXPECT_RC(rsm_memseg_import_map(im, (void**)&p, RSM_MAP_NONE, RSM_PERM_RDWR, 0, seg_bytes),
            RSM_SUCCESS);
  t0 = now_s();
  for (i = 0; i < pages; ++i) sink = (unsigned char)(sink + p[i * page]);
  t1 = now_s();
  printf("[bench] first touch, sequential loads: %.2f us per 4 KiB page (%zu pages)\n",
         (t1 - t0) * 1e6 / (double)pages, pages);
  EXPECT_RC(rsm_memseg_import_unmap(im), RSM_SUCCESS);
  /* First touch, one page in 128: every load is a fault with its own fetch
   * of the initial read-ahead (16 pages; no fault continues the last fetch). */
  EXPECT_RC(rsm_memseg_import_map(im, (void**)&p, RSM_MAP_NONE, RSM_PERM_RDWR, 0, seg_bytes),
            RSM_SUCCESS);
  t0 = now_s();
  for (i = 0; i < pages; i += 128, ++touched) sink = (unsigned char)(sink + p[i * page]);
  t1 = now_s();
  printf("[bench] first touch, one page in 128: %.2f us per fault (fetches 64 KiB; %zu faults)\n",
         (t1 - t0) * 1e6 / (double)touched, touched);

  /* Barrier close with 1, 16, 256 dirty pages (already present). */
  for (i = 0; i < 256; ++i) sink = (unsigned char)(sink + p[i * page]);
  printf("[bench] close_barrier, 1 dirty page: %.1f us (median of 21)\n", close_cost(im, p, 1));
  printf("[bench] close_barrier, 16 dirty pages: %.1f us\n", close_cost(im, p, 16));
  printf("[bench] close_barrier, 256 dirty pages: %.1f us\n", close_cost(im, p, 256));
  EXPECT_RC(rsm_memseg_import_unmap(im), RSM_SUCCESS);

  /* Streaming stores into a fresh mapping of the whole segment. */
  EXPECT_RC(rsm_memseg_import_map(im, (void**)&p, RSM_MAP_NONE, RSM_PERM_RDWR, 0, seg_bytes),
            RSM_SUCCESS);
  EXPECT_RC(rsm_memseg_import_init_barrier(im, RSM_BARRIER_SEGMENT, &bar), RSM_SUCCESS);
  EXPECT_RC(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS);
  t0 = now_s();
  memset(p, 0x5A, seg_bytes);
  t1 = now_s();
  EXPECT_RC(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS);
  t2 = now_s();
  printf(
      "[bench] streaming stores into a fresh %zu MiB mapping: stores %.3f GB/s, "
      "stores + close_barrier %.3f GB/s (close %.1f ms)\n",
      seg_bytes >> 20, (double)seg_bytes / (t1 - t0) * 1e-9, (double)seg_bytes / (t2 - t0) * 1e-9,
      (t2 - t1) * 1e3);
  /* Into present pages: loaded first (fetched, clean, write-protected). */
  EXPECT_RC(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS);
  for (i = 0; i < pages; ++i) sink = (unsigned char)(sink + p[i * page]);
  t0 = now_s();
  memset(p, 0xA5, seg_bytes);
  t1 = now_s();
  EXPECT_RC(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS);
  t2 = now_s();
  printf(
      "[bench] streaming stores into present pages: stores %.3f GB/s, "
      "stores + close_barrier %.3f GB/s\n",
      (double)seg_bytes / (t1 - t0) * 1e-9, (double)seg_bytes / (t2 - t0) * 1e-9);
  EXPECT_RC(rsm_memseg_import_destroy_barrier(&bar), RSM_SUCCESS);
  EXPECT_RC(rsm_memseg_import_unmap(im), RSM_SUCCESS);

  memset(buf, 0x3C, seg_bytes);
  t0 = now_s();
  EXPECT_RC(rsm_memseg_import_put(im, 0, buf, seg_bytes), RSM_SUCCESS);
  t1 = now_s();
  printf("[bench] rsm_memseg_import_put of the same %zu MiB (implicit mode): %.3f GB/s\n",
         seg_bytes >> 20, (double)seg_bytes / (t1 - t0) * 1e-9);
  t0 = now_s();
  EXPECT_RC(rsm_memseg_import_get(im, 0, buf, seg_bytes), RSM_SUCCESS);
  t1 = now_s();
  printf("[bench] rsm_memseg_import_get of the same %zu MiB: %.3f GB/s (%.2f us per 4 KiB)\n",
         seg_bytes >> 20, (double)seg_bytes / (t1 - t0) * 1e-9, (t1 - t0) * 1e6 / (double)pages);
  (void)sink;
  EXPECT_RC(rsm_intr_signal_post(im, 0), RSM_SUCCESS);
  EXPECT_RC(rsm_memseg_import_disconnect(im), RSM_SUCCESS);
  free(buf);
  printf("[bench] OK\n");
  return 0;
}

int main(int argc, char** argv) {
  rsmapi_controller_handle_t c;
  rsm_node_id_t node;
  int rc;
  if (argc < 5 || (strcmp(argv[1], "export") != 0 && strcmp(argv[1], "import") != 0 &&
                   strcmp(argv[1], "bench") != 0)) {
    fprintf(stderr,
            "usage: %s export|import|bench <controller> <peer node> <bytes> [check|serve]\n",
            argv[0]);
    return 2;
  }
  role = argv[1];
  node = (rsm_node_id_t)strtoul(argv[3], NULL, 0);
  seg_bytes = (size_t)strtoull(argv[4], NULL, 0);
  page = (size_t)sysconf(_SC_PAGESIZE);
  if (seg_bytes == 0 || seg_bytes % page != 0) {
    fprintf(stderr, "%s: <bytes> must be a positive multiple of %zu\n", argv[0], page);
    return 2;
  }
  EXPECT_RC(rsm_get_controller(argv[2], &c), RSM_SUCCESS);
  if (strcmp(role, "export") == 0)
    rc = run_export(c, node, argc < 6 || strcmp(argv[5], "serve") != 0);
  else if (strcmp(role, "import") == 0)
    rc = run_import(c, node);
  else
    rc = run_bench(c, node);
  EXPECT_RC(rsm_release_controller(c), RSM_SUCCESS);
  return rc;
}
