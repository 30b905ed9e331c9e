/* One side of the two-process RSMAPI test (rsm_memif.sh), using only
 * <rsm/rsmapi.h>:
 *   rsm_peer export <controller> <importer node>
 *   rsm_peer import <controller> <exporter node>
 * The exporter publishes SEG_ID to the importer's node only; the importer
 * writes the whole segment (every width), the exporter checks it and answers
 * with its own pattern, which the importer reads back (plain and
 * scatter-gather).  Then the exporter republishes without the importer's node
 * (the import keeps working, a new connect is refused), stops the importer
 * (SIGSTOP) so the disconnect cannot be acknowledged, and checks that a
 * signal interrupts unpublish (RSMERR_INTERRUPTED); once resumed, the
 * importer's next access fails with RSMERR_CONN_ABORTED.  Each step is
 * handed over with rsm_intr_signal_post / rsm_intr_signal_wait. */
#define _GNU_SOURCE
#include <pthread.h>
#include <rsm/rsmapi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SEG_BYTES (1024 * 1024)
#define SEG_ID 0x400777u
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

static unsigned char pat(size_t i, unsigned seed) {
  return (unsigned char)(i * 131u + seed * 17u + 7u);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void on_alarm(int sig) { (void)sig; }

/* Sends SIGALRM to the thread that waits in unpublish (a process-directed
 * signal could land on any of the process's threads). */
static pthread_t waiter;
static void* alarm_later(void* arg) {
  (void)arg;
  sleep_ms(300);
  pthread_kill(waiter, SIGALRM);
  return NULL;
}

static char proc_state(pid_t pid) {
  char path[64], buf[256];
  FILE* f;
  char* p;
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  f = fopen(path, "r");
  if (f == NULL) return '?';
  if (fgets(buf, sizeof(buf), f) == NULL) buf[0] = '\0';
  fclose(f);
  p = strrchr(buf, ')');
  return p != NULL && p[1] == ' ' ? p[2] : '?';
}

static int run_export(rsmapi_controller_handle_t c, rsm_node_id_t importer) {
  rsm_memseg_export_handle_t seg;
  rsm_memseg_id_t id = SEG_ID;
  rsmapi_access_entry_t acl[1], other[1];
  unsigned char* mem = aligned_alloc(4096, SEG_BYTES);
  uint32_t pid = 0, marker = 0;
  struct sigaction sa;
  pthread_t alarm_thread;
  size_t i;
  EXPECT(mem != NULL);
  memset(mem, 0, SEG_BYTES);
  EXPECT_RC(rsm_memseg_export_create(c, &seg, mem, SEG_BYTES, 0), RSM_SUCCESS);
  acl[0].ae_node = importer;
  acl[0].ae_permissions = 0666;
  EXPECT_RC(rsm_memseg_export_publish(seg, &id, acl, 1), RSM_SUCCESS);
  printf("[export] published 0x%x to node %u\n", id, (unsigned)importer);
  fflush(stdout);

  EXPECT_RC(rsm_intr_signal_wait(seg, WAIT_MS), RSM_SUCCESS); /* importer wrote */
  for (i = 0; i < SEG_BYTES; ++i)
    if (mem[i] != pat(i, 1)) {
      fprintf(stderr, "[export] byte %zu: 0x%02x, wanted 0x%02x\n", i, mem[i], pat(i, 1));
      return 1;
    }
  printf("[export] %d B written by the importer: byte-exact\n", SEG_BYTES);
  for (i = 0; i < SEG_BYTES; ++i) mem[i] = pat(i, 2);
  EXPECT_RC(rsm_intr_signal_post(seg, 0), RSM_SUCCESS);

  EXPECT_RC(rsm_intr_signal_wait(seg, WAIT_MS), RSM_SUCCESS); /* importer read, sent its pid */
  memcpy(&pid, mem, sizeof(pid));
  EXPECT(pid > 1);
  other[0].ae_node = importer + 1000;
  other[0].ae_permissions = 0666;
  EXPECT_RC(rsm_memseg_export_republish(seg, other, 1), RSM_SUCCESS);
  EXPECT_RC(rsm_intr_signal_post(seg, 0), RSM_SUCCESS);

  EXPECT_RC(rsm_intr_signal_wait(seg, WAIT_MS), RSM_SUCCESS); /* importer checked republish */
  memcpy(&marker, mem + 64, sizeof(marker));
  EXPECT(marker == 0xC0FFEEu);
  printf("[export] republished without node %u: the granted import still wrote\n",
         (unsigned)importer);

  /* Unpublish while the importer cannot answer: a signal interrupts the wait. */
  EXPECT(kill((pid_t)pid, SIGSTOP) == 0);
  for (i = 0; i < 100 && proc_state((pid_t)pid) != 'T'; ++i) sleep_ms(10);
  EXPECT(proc_state((pid_t)pid) == 'T');
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_alarm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0; /* no SA_RESTART */
  EXPECT(sigaction(SIGALRM, &sa, NULL) == 0);
  waiter = pthread_self();
  EXPECT(pthread_create(&alarm_thread, NULL, alarm_later, NULL) == 0);
  EXPECT_RC(rsm_memseg_export_unpublish(seg), RSMERR_INTERRUPTED);
  pthread_join(alarm_thread, NULL);
  printf("[export] unpublish interrupted by SIGALRM while the importer was stopped\n");
  EXPECT(kill((pid_t)pid, SIGCONT) == 0);
  /* Already unpublished: a second unpublish says so. */
  EXPECT_RC(rsm_memseg_export_unpublish(seg), RSMERR_SEG_NOT_PUBLISHED);
  EXPECT_RC(rsm_memseg_export_destroy(seg), RSM_SUCCESS); /* waits for the disconnect */
  free(mem);
  return 0;
}

static int run_import(rsmapi_controller_handle_t c, rsm_node_id_t exporter) {
  rsm_memseg_import_handle_t im = NULL, im2 = NULL;
  unsigned char* buf = malloc(SEG_BYTES);
  uint32_t pid = (uint32_t)getpid(), marker = 0xC0FFEEu;
  rsm_iovec_t iov[2];
  rsm_scat_gath_t sg;
  size_t i, off;
  int rc = -1, tries;
  EXPECT(buf != NULL);
  for (tries = 0; tries < 600; ++tries) { /* until the exporter has published */
    rc = rsm_memseg_import_connect(c, exporter, SEG_ID, RSM_PERM_RDWR, &im);
    if (rc == RSM_SUCCESS) break;
    if (rc != RSMERR_SEG_NOT_PUBLISHED && rc != RSMERR_REMOTE_NODE_UNREACHABLE) break;
    sleep_ms(100);
  }
  EXPECT_RC(rc, RSM_SUCCESS);
  printf("[import] connected to node %u segment 0x%x\n", (unsigned)exporter, SEG_ID);
  fflush(stdout);

  /* Write the whole segment with every width and a plain put. */
  for (i = 0; i < SEG_BYTES; ++i) buf[i] = pat(i, 1);
  off = 0;
  EXPECT_RC(rsm_memseg_import_put8(im, 0, buf, 4096), RSM_SUCCESS);
  off += 4096;
  EXPECT_RC(rsm_memseg_import_put16(im, (off_t)off, (uint16_t*)(buf + off), 4096), RSM_SUCCESS);
  off += 8192;
  EXPECT_RC(rsm_memseg_import_put32(im, (off_t)off, (uint32_t*)(buf + off), 4096), RSM_SUCCESS);
  off += 16384;
  EXPECT_RC(rsm_memseg_import_put64(im, (off_t)off, (uint64_t*)(buf + off), 4096), RSM_SUCCESS);
  off += 32768;
  EXPECT_RC(rsm_memseg_import_put(im, (off_t)off, buf + off, SEG_BYTES - off), RSM_SUCCESS);
  EXPECT_RC(rsm_intr_signal_post(im, 0), RSM_SUCCESS);

  /* Read the exporter's answer back: one half plain, one half scatter-gather. */
  EXPECT_RC(rsm_intr_signal_wait(im, WAIT_MS), RSM_SUCCESS);
  memset(buf, 0, SEG_BYTES);
  EXPECT_RC(rsm_memseg_import_get(im, 0, buf, SEG_BYTES / 2), RSM_SUCCESS);
  memset(iov, 0, sizeof(iov));
  iov[0].io_type = RSM_VA_TYPE;
  iov[0].local.vaddr = (char*)buf;
  iov[0].local_offset = SEG_BYTES / 2;
  iov[0].remote_offset = SEG_BYTES / 2;
  iov[0].transfer_length = SEG_BYTES / 4;
  iov[1] = iov[0];
  iov[1].local_offset = iov[1].remote_offset = SEG_BYTES / 2 + SEG_BYTES / 4;
  memset(&sg, 0, sizeof(sg));
  sg.io_request_count = 2;
  sg.remote_handle = im;
  sg.iovec = iov;
  EXPECT_RC(rsm_memseg_import_getv(&sg), RSM_SUCCESS);
  for (i = 0; i < SEG_BYTES; ++i)
    if (buf[i] != pat(i, 2)) {
      fprintf(stderr, "[import] byte %zu: 0x%02x, wanted 0x%02x\n", i, buf[i], pat(i, 2));
      return 1;
    }
  {
    uint16_t w16[300];
    uint32_t w32[300];
    uint64_t w64[300];
    EXPECT_RC(rsm_memseg_import_get16(im, 2, w16, 300), RSM_SUCCESS);
    EXPECT_RC(rsm_memseg_import_get32(im, 4096, w32, 300), RSM_SUCCESS);
    EXPECT_RC(rsm_memseg_import_get64(im, SEG_BYTES - 2400, w64, 300), RSM_SUCCESS);
    EXPECT(memcmp(w16, buf + 2, sizeof(w16)) == 0);
    EXPECT(memcmp(w32, buf + 4096, sizeof(w32)) == 0);
    EXPECT(memcmp(w64, buf + SEG_BYTES - 2400, sizeof(w64)) == 0);
  }
  printf("[import] %d B written by the exporter read back: byte-exact\n", SEG_BYTES);
  EXPECT_RC(rsm_memseg_import_put32(im, 0, &pid, 1), RSM_SUCCESS);
  EXPECT_RC(rsm_intr_signal_post(im, 0), RSM_SUCCESS);

  /* Republished without this node: new connects refused, this import works. */
  EXPECT_RC(rsm_intr_signal_wait(im, WAIT_MS), RSM_SUCCESS);
  EXPECT_RC(rsm_memseg_import_connect(c, exporter, SEG_ID, RSM_PERM_READ, &im2),
            RSMERR_SEG_NOT_PUBLISHED_TO_NODE);
  EXPECT_RC(rsm_memseg_import_put32(im, 64, &marker, 1), RSM_SUCCESS);
  EXPECT_RC(rsm_intr_signal_post(im, 0), RSM_SUCCESS);

  /* The exporter unpublishes (this process is stopped meanwhile). */
  for (tries = 0; tries < 6000; ++tries) {
    rc = rsm_memseg_import_get(im, 0, buf, 8);
    if (rc != RSM_SUCCESS) break;
    sleep_ms(10);
  }
  EXPECT_RC(rc, RSMERR_CONN_ABORTED);
  printf("[import] after unpublish: RSMERR_CONN_ABORTED\n");
  EXPECT_RC(rsm_memseg_import_disconnect(im), RSM_SUCCESS);
  free(buf);
  return 0;
}

int main(int argc, char** argv) {
  rsmapi_controller_handle_t c;
  int rc;
  if (argc != 4 || (strcmp(argv[1], "export") != 0 && strcmp(argv[1], "import") != 0)) {
    fprintf(stderr, "usage: %s export|import <controller> <peer node>\n", argv[0]);
    return 2;
  }
  role = argv[1];
  EXPECT_RC(rsm_get_controller(argv[2], &c), RSM_SUCCESS);
  rc = strcmp(role, "export") == 0 ? run_export(c, (rsm_node_id_t)strtoul(argv[3], NULL, 0))
                                   : run_import(c, (rsm_node_id_t)strtoul(argv[3], NULL, 0));
  EXPECT_RC(rsm_release_controller(c), RSM_SUCCESS);
  if (rc == 0) printf("[%s] OK\n", role);
  return rc;
}
