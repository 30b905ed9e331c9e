/* An RSMAPI program in C using only <rsm/rsmapi.h> and -lrsm: one process
 * holds both ends of dpdat's built-in in-process link.  Controller dpdat0
 * exports a segment and publishes it to dpdat1's node; dpdat1 imports it,
 * writes and reads it back byte for byte, signals the exporter, and sees its
 * next access fail once the segment is unpublished.  Exit status 0 means
 * everything held. */
#include <rsm/rsmapi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPECT_RC(call, want)                                                         \
  do {                                                                                \
    int rc_ = (call);                                                                 \
    if (rc_ != (want)) {                                                              \
      fprintf(stderr, "%s:%d: %s -> %d, wanted %d\n", __FILE__, __LINE__, #call, rc_, \
              (int)(want));                                                           \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)
#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                            \
    }                                                                     \
  } while (0)

#define SEG_BYTES (64 * 1024)
#define SEG_ID 0x400042u

int main(void) {
  rsmapi_controller_handle_t ex, im;
  rsmapi_controller_attr_t attr;
  rsm_memseg_export_handle_t seg;
  rsm_memseg_import_handle_t imp;
  rsm_memseg_id_t id = SEG_ID;
  rsm_topology_t* topo;
  rsmapi_access_entry_t acl[1];
  rsm_node_id_t importer_node = 0;
  unsigned char *mem, *out, *in;
  uint32_t words[4] = {0x01020304u, 0x05060708u, 0x090A0B0Cu, 0x0D0E0F10u}, back[4];
  size_t i;
  unsigned int j;
  int k;

  EXPECT_RC(rsm_get_controller("dpdat0", &ex), RSM_SUCCESS);
  EXPECT_RC(rsm_get_controller("dpdat1", &im), RSM_SUCCESS);
  EXPECT_RC(rsm_get_controller_attr(ex, &attr), RSM_SUCCESS);
  EXPECT(attr.attr_page_size > 0 && SEG_BYTES % attr.attr_page_size == 0);

  /* The importer's node, from the topology dpdat0 sees. */
  EXPECT_RC(rsm_get_interconnect_topology(&topo), RSM_SUCCESS);
  for (j = 0; j < topo->topology_hdr.local_cntlr_count; ++j) {
    rsm_connections_t* c = topo->connections[j];
    if (strcmp(c->hdr.cntlr_name, "dpdat0") != 0) continue;
    for (k = 0; k < c->hdr.remote_cntlr_count; ++k)
      if (strcmp(c->remote_cntlr[k].remote_cntlrname, "dpdat1") == 0)
        importer_node = c->remote_cntlr[k].remote_nodeid;
  }
  rsm_free_interconnect_topology(topo);
  EXPECT(importer_node != 0);

  mem = aligned_alloc(attr.attr_page_size, SEG_BYTES);
  out = malloc(SEG_BYTES);
  in = malloc(SEG_BYTES);
  EXPECT(mem != NULL && out != NULL && in != NULL);
  memset(mem, 0, SEG_BYTES);
  EXPECT_RC(rsm_memseg_export_create(ex, &seg, mem, SEG_BYTES, 0), RSM_SUCCESS);
  acl[0].ae_node = importer_node;
  acl[0].ae_permissions = 0666;
  EXPECT_RC(rsm_memseg_export_publish(seg, &id, acl, 1), RSM_SUCCESS);
  EXPECT(id == SEG_ID);

  /* dpdat1 imports from dpdat0's node (the low 16 bits of 192.168.77.1). */
  EXPECT_RC(rsm_memseg_import_connect(im, (77u << 8) | 1u, SEG_ID, RSM_PERM_RDWR, &imp),
            RSM_SUCCESS);
  for (i = 0; i < SEG_BYTES; ++i) out[i] = (unsigned char)(i * 29u + 3u);
  EXPECT_RC(rsm_memseg_import_put(imp, 0, out, SEG_BYTES), RSM_SUCCESS);
  EXPECT(memcmp(mem, out, SEG_BYTES) == 0);
  EXPECT_RC(rsm_memseg_import_get(imp, 0, in, SEG_BYTES), RSM_SUCCESS);
  EXPECT(memcmp(in, out, SEG_BYTES) == 0);
  EXPECT_RC(rsm_memseg_import_put32(imp, 4096, words, 4), RSM_SUCCESS);
  EXPECT_RC(rsm_memseg_import_get32(imp, 4096, back, 4), RSM_SUCCESS);
  EXPECT(memcmp(back, words, sizeof(words)) == 0);
  EXPECT_RC(rsm_memseg_import_get(imp, SEG_BYTES - 4, in, 8), RSMERR_BAD_LENGTH);

  /* A signal from the importer wakes the exporter. */
  EXPECT_RC(rsm_intr_signal_post(imp, 0), RSM_SUCCESS);
  EXPECT_RC(rsm_intr_signal_wait(seg, 5000), RSM_SUCCESS);

  /* Unpublished: the importer's next access fails. */
  EXPECT_RC(rsm_memseg_export_unpublish(seg), RSM_SUCCESS);
  EXPECT_RC(rsm_memseg_import_get(imp, 0, in, 16), RSMERR_CONN_ABORTED);
  EXPECT_RC(rsm_memseg_import_disconnect(imp), RSM_SUCCESS);
  EXPECT_RC(rsm_memseg_export_destroy(seg), RSM_SUCCESS);
  EXPECT_RC(rsm_release_controller(im), RSM_SUCCESS);
  EXPECT_RC(rsm_release_controller(ex), RSM_SUCCESS);
  free(mem);
  free(out);
  free(in);
  printf("rsm_c_example: publish to node %u, import, put/get %d B, signal, unpublish: OK\n",
         (unsigned)importer_node, SEG_BYTES);
  return 0;
}
