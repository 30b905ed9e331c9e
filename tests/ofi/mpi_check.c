/* An MPI program that checks the data of what it moves: point-to-point
 * (a ring, several sizes, and to itself), MPI_Allreduce, MPI_Alltoall and one-sided
 * MPI_Put / MPI_Get between fences.  Prints "mpi_check: ok" on rank 0 when
 * every rank saw the expected bytes; exits 1 otherwise. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void expect(int cond, const char* what, int rank) {
  if (!cond) {
    fprintf(stderr, "mpi_check: rank %d: %s wrong\n", rank, what);
    failures++;
  }
}

static unsigned char pattern(int src, int dst, size_t i) {
  return (unsigned char)(src * 31 + dst * 7 + (int)(i % 251));
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;

  /* point-to-point: a ring, eager to rendezvous sizes */
  const size_t sizes[] = {1, 64, 4096, 65536, 1 << 20};
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); ++k) {
    const size_t n = sizes[k];
    unsigned char *out = malloc(n), *in = malloc(n);
    for (size_t i = 0; i < n; ++i) out[i] = pattern(rank, next, i);
    memset(in, 0, n);
    MPI_Sendrecv(out, (int)n, MPI_BYTE, next, 7, in, (int)n, MPI_BYTE, prev, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    int ok = 1;
    for (size_t i = 0; i < n && ok; ++i) ok = in[i] == pattern(prev, rank, i);
    expect(ok, "ring sendrecv", rank);
    free(out);
    free(in);
  }

  /* to itself: with pml cm this goes through the MTL, i.e. the provider */
  {
    const size_t n = 65536;
    unsigned char *out = malloc(n), *in = malloc(n);
    for (size_t i = 0; i < n; ++i) out[i] = pattern(rank, rank, i);
    memset(in, 0, n);
    MPI_Sendrecv(out, (int)n, MPI_BYTE, rank, 9, in, (int)n, MPI_BYTE, rank, 9, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    expect(memcmp(in, out, n) == 0, "sendrecv to self", rank);
    free(out);
    free(in);
  }

  /* MPI_Allreduce over 1000 doubles and 100000 int64 */
  {
    enum { N = 100000 };
    int64_t *a = malloc(N * sizeof(int64_t)), *r = malloc(N * sizeof(int64_t));
    for (int i = 0; i < N; ++i) a[i] = (int64_t)rank * N + i;
    MPI_Allreduce(a, r, N, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    int ok = 1;
    for (int i = 0; i < N && ok; ++i)
      ok = r[i] == (int64_t)N * size * (size - 1) / 2 + (int64_t)i * size;
    expect(ok, "allreduce int64 sum", rank);
    double d[1000], dr[1000];
    for (int i = 0; i < 1000; ++i) d[i] = rank + i * 0.5;
    MPI_Allreduce(d, dr, 1000, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    ok = 1;
    for (int i = 0; i < 1000 && ok; ++i) ok = dr[i] == (size - 1) + i * 0.5;
    expect(ok, "allreduce double max", rank);
    free(a);
    free(r);
  }

  /* MPI_Alltoall, 4 KiB per pair */
  {
    const size_t blk = 4096;
    unsigned char *s = malloc(blk * size), *r = malloc(blk * size);
    for (int d = 0; d < size; ++d)
      for (size_t i = 0; i < blk; ++i) s[d * blk + i] = pattern(rank, d, i);
    memset(r, 0, blk * size);
    MPI_Alltoall(s, (int)blk, MPI_BYTE, r, (int)blk, MPI_BYTE, MPI_COMM_WORLD);
    int ok = 1;
    for (int src = 0; src < size && ok; ++src)
      for (size_t i = 0; i < blk && ok; ++i) ok = r[src * blk + i] == pattern(src, rank, i);
    expect(ok, "alltoall", rank);
    free(s);
    free(r);
  }

  /* one-sided: each rank puts 1024 ints into its successor's window, then
   * gets them back from there */
  {
    enum { W = 1024 };
    int* win_buf = NULL;
    MPI_Win win;
    MPI_Win_allocate(W * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win_buf, &win);
    for (int i = 0; i < W; ++i) win_buf[i] = -1;
    int put[W], got[W];
    for (int i = 0; i < W; ++i) put[i] = rank * 100000 + i;
    MPI_Win_fence(0, win);
    MPI_Put(put, W, MPI_INT, next, 0, W, MPI_INT, win);
    MPI_Win_fence(0, win);
    int ok = 1;
    for (int i = 0; i < W && ok; ++i) ok = win_buf[i] == prev * 100000 + i;
    expect(ok, "MPI_Put", rank);
    memset(got, 0, sizeof(got));
    MPI_Get(got, W, MPI_INT, next, 0, W, MPI_INT, win);
    MPI_Win_fence(0, win);
    ok = 1;
    for (int i = 0; i < W && ok; ++i) ok = got[i] == put[i];
    expect(ok, "MPI_Get", rank);
    MPI_Win_free(&win);
  }

  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf(total == 0 ? "mpi_check: ok (%d ranks)\n" : "mpi_check: %d failures\n",
           total == 0 ? size : total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
