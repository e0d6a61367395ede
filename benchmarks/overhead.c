/* overhead.c - per-call cost of common MPI operations, for comparing native runs with runs
 * under mana (where every MPI call goes through a wrapper that switches to the lower half).
 *
 * Run with exactly the same binary both ways:
 *     mpiexec.mpich -n 2 ./overhead
 *     build/bin/mana_launch mpiexec.mpich -n 2 ./overhead
 *
 * For each figure: one warm-up batch, then MANA_BENCH_REPS (default 7) timed batches of n
 * iterations. Every batch starts after an MPI_Barrier; its duration is the maximum over all
 * ranks (gathered outside the timed region). Rank 0 prints one line per figure:
 *
 *     figure=allreduce4 ns_per_call=317.3 min=305.0 max=352.1 reps=7 n=230000 mpi_calls=1 \
 *            n_from=table batch_ms=73.0
 *
 * ns_per_call is the median batch time divided by n; min/max are the fastest/slowest batch.
 * mpi_calls is the number of MPI calls per reported unit on each rank (2 for the
 * nonblocking-collective-plus-MPI_Wait figures). For pingpong8 ns_per_call is the one-way
 * latency (round trip / 2); each rank makes one MPI_Send and one MPI_Recv per round trip, so
 * this is also the time per MPI call; rtt_ns gives the round trip itself.
 *
 * Environment:
 *   MANA_BENCH_SCALE=f       multiply the built-in iteration counts by f (default 1)
 *   MANA_BENCH_REPS=k        timed batches per figure (default 7)
 *   MANA_BENCH_CALIBRATE=1   choose n per figure so that a batch takes ~MANA_BENCH_TARGET_MS
 *   MANA_BENCH_TARGET_MS=t   batch duration aimed at by calibration (default 75)
 *   MANA_BENCH_N=fig=n,...   explicit iteration counts (override table and calibration)
 *   MANA_BENCH_ONLY=fig,...  run only these figures
 *
 * Safety valve: if the warm-up shows that a batch would take more than 8x the target time,
 * n is reduced for that figure and the line carries shrunk_from=<original n>.
 *
 * Taking turns (MANA_BENCH_TURNS=FILE:SIDE, SIDE 0 or 1): two jobs of this program, one
 * native and one under mana, run at the same time and take turns batch by batch. FILE (at
 * least 64 bytes of zeros, made by the caller) holds the turn counter both jobs map; side 0
 * runs the first batch. A job that waits for its turn sleeps in the kernel, so each batch has
 * the CPUs to itself, and the two sides' batches alternate every ~75 ms. On a VM whose speed
 * changes from one second to the next (the host moves its vCPUs), a batch is then compared
 * with the other side's batches just before and after it, which saw the same machine. Each
 * figure line then also carries batches=v1,v2,... (ns per call of every timed batch, in the
 * order run). MANA_BENCH_TURN_WAIT_S (default 120) bounds the wait for the other job, and
 * a non-zero byte at offset 12 of FILE (written by the caller) ends it at once;
 * MANA_BENCH_TURN_LOG=FILE makes rank 0 write "side batch start_ns end_ns" (CLOCK_MONOTONIC)
 * for every timed batch to FILE.SIDE, so a test can check that no two batches of the two jobs
 * overlapped.
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_REPS 101
#define BIG_COUNT (1024 * 1024 / (int)sizeof(double)) /* 1 MiB of doubles */

static int g_rank, g_size;
static MPI_Comm g_split;    /* a communicator the program made (MPI_Comm_split of world) */
static volatile int g_sink; /* keeps results observable so no call is optimized away */

/* Buffers shared by the kernels. */
static int g_i_send, g_i_recv, g_i_bcast;
static char g_pp_buf[8];
static double *g_big_send, *g_big_recv;

static double now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(const char *what)
{
  fprintf(stderr, "overhead: rank %d: %s\n", g_rank, what);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

static void check(int rc, const char *what)
{
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING + 64];
    char err[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, err, &len);
    snprintf(msg, sizeof msg, "%s failed: %s", what, err);
    die(msg);
  }
}

/* ---- kernels: each runs n iterations of one operation ------------------------------------ */

static void k_comm_rank(long n)
{
  int r, acc = 0;
  for (long i = 0; i < n; i++) {
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    acc += r;
  }
  g_sink = acc;
}

static void k_comm_size_split(long n)
{
  int s, acc = 0;
  for (long i = 0; i < n; i++) {
    MPI_Comm_size(g_split, &s);
    acc += s;
  }
  g_sink = acc;
}

static void k_wtime(long n)
{
  double acc = 0;
  for (long i = 0; i < n; i++)
    acc += MPI_Wtime();
  g_sink = acc > 0;
}

static void k_pingpong8(long n)
{
  if (g_rank == 0) {
    for (long i = 0; i < n; i++) {
      MPI_Send(g_pp_buf, 8, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
      MPI_Recv(g_pp_buf, 8, MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  } else if (g_rank == 1) {
    for (long i = 0; i < n; i++) {
      MPI_Recv(g_pp_buf, 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(g_pp_buf, 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
    }
  }
}

static void k_allreduce4(long n)
{
  for (long i = 0; i < n; i++)
    MPI_Allreduce(&g_i_send, &g_i_recv, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
}

static void k_bcast4(long n)
{
  for (long i = 0; i < n; i++)
    MPI_Bcast(&g_i_bcast, 1, MPI_INT, 0, MPI_COMM_WORLD);
}

static void k_barrier(long n)
{
  for (long i = 0; i < n; i++)
    MPI_Barrier(MPI_COMM_WORLD);
}

static void k_iallreduce4(long n)
{
  MPI_Request req;
  for (long i = 0; i < n; i++) {
    MPI_Iallreduce(&g_i_send, &g_i_recv, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
  }
}

static void k_ibcast4(long n)
{
  MPI_Request req;
  for (long i = 0; i < n; i++) {
    MPI_Ibcast(&g_i_bcast, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
  }
}

static void k_allreduce1m(long n)
{
  for (long i = 0; i < n; i++)
    MPI_Allreduce(g_big_send, g_big_recv, BIG_COUNT, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

/* ---- result checks (outside the timed region; they catch a broken wrapper layer) ---------- */

static int expected_int_sum(void)
{
  /* g_i_send = rank + 1 on every rank */
  return g_size * (g_size + 1) / 2;
}

static int v_none(void)
{
  return 1;
}

static int v_pingpong(void)
{
  return g_rank > 1 || memcmp(g_pp_buf, "mana-pp", 8) == 0;
}

static int v_allreduce4(void)
{
  return g_i_recv == expected_int_sum();
}

static int v_bcast4(void)
{
  return g_i_bcast == 4242;
}

static int v_allreduce1m(void)
{
  double want0 = (double)g_size * (g_size + 1) / 2.0; /* element 0: sum of (rank+1) */
  double wantl = 0.5 * g_size;                        /* last element: 0.5 per rank */
  return g_big_recv[0] == want0 && g_big_recv[BIG_COUNT - 1] == wantl;
}

struct figure {
  const char *name;
  void (*kernel)(long n);
  int (*verify)(void);
  long default_n; /* iterations per batch (~75 ms on a 2-core KVM AMD EPYC, MPICH 4.0.2 ucx) */
  int unit_div;   /* reported figure = iteration time / unit_div (2: ping-pong one-way) */
  int mpi_calls;  /* MPI calls per reported unit on each rank */
};

static const struct figure figures[] = {
    /* comm_rank: ~20 ms natively, so a slow wrapper does not make the mana run take minutes */
    {"comm_rank", k_comm_rank, v_none, 10000000, 1, 1},
    {"comm_size_split", k_comm_size_split, v_none, 10000000, 1, 1},
    {"wtime", k_wtime, v_none, 2000000, 1, 1},
    {"pingpong8", k_pingpong8, v_pingpong, 280000, 2, 1},
    {"allreduce4", k_allreduce4, v_allreduce4, 230000, 1, 1},
    {"bcast4", k_bcast4, v_bcast4, 620000, 1, 1},
    {"barrier", k_barrier, v_none, 210000, 1, 1},
    {"iallreduce4_wait", k_iallreduce4, v_allreduce4, 100000, 1, 2},
    {"ibcast4_wait", k_ibcast4, v_bcast4, 180000, 1, 2},
    {"allreduce1m", k_allreduce1m, v_allreduce1m, 570, 1, 1},
};
#define NFIG ((int)(sizeof figures / sizeof figures[0]))

/* ---- helpers ------------------------------------------------------------------------------ */

static double env_double(const char *name, double dflt, double lo, double hi)
{
  const char *s = getenv(name);
  if (!s || !*s)
    return dflt;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !(v >= lo && v <= hi)) {
    if (g_rank == 0)
      fprintf(stderr, "overhead: ignoring bad %s=%s\n", name, s);
    return dflt;
  }
  return v;
}

/* Look up "name" in a comma-separated list; with want_value, parse "name=value". */
static int list_has(const char *list, const char *name, long *value)
{
  size_t len = strlen(name);
  const char *p = list;
  while (p && *p) {
    const char *comma = strchr(p, ',');
    size_t item = comma ? (size_t)(comma - p) : strlen(p);
    if (item >= len && strncmp(p, name, len) == 0) {
      if (!value && item == len)
        return 1;
      if (value && item > len && p[len] == '=') {
        *value = strtol(p + len + 1, NULL, 10);
        return 1;
      }
    }
    p = comma ? comma + 1 : NULL;
  }
  return 0;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* ---- taking turns with another job (MANA_BENCH_TURNS) ------------------------------------ */

/* The page both jobs map. seq counts hand-overs: side S runs its k-th batch when seq is
 * 2k + S. Only rank 0 of a job writes seq; done[S] says side S has run all its batches, so
 * the other side stops waiting for it. abandoned (byte offset 12) is set by the caller when
 * one job failed: the other then stops at its next wait instead of waiting out the limit. */
struct turns {
  _Atomic uint32_t seq;
  _Atomic uint32_t done[2];
  _Atomic uint32_t abandoned;
};

static struct turns *g_turns; /* NULL: not taking turns */
static int g_side;
static uint32_t g_batches; /* batches this job has run */
static double g_turn_wait_ns;
static FILE *g_turn_log;

static void turns_open(const char *spec)
{
  const char *colon = strrchr(spec, ':');
  if (!colon || (strcmp(colon, ":0") != 0 && strcmp(colon, ":1") != 0))
    die("MANA_BENCH_TURNS must be FILE:0 or FILE:1");
  g_side = colon[1] - '0';
  char path[4096];
  snprintf(path, sizeof path, "%.*s", (int)(colon - spec), spec);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    char msg[4200];
    snprintf(msg, sizeof msg, "cannot open the turn file %s: %s", path, strerror(errno));
    die(msg);
  }
  void *p = mmap(NULL, sizeof(struct turns), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED)
    die("cannot map the turn file");
  g_turns = p;
  const char *log = getenv("MANA_BENCH_TURN_LOG");
  if (log && *log && g_rank == 0) {
    snprintf(path, sizeof path, "%s.%d", log, g_side);
    if (!(g_turn_log = fopen(path, "w")))
      die("cannot open MANA_BENCH_TURN_LOG");
  }
}

static void futex_call(_Atomic uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
  /* not FUTEX_PRIVATE_FLAG: the word is shared with the other job's processes */
  syscall(SYS_futex, (uint32_t *)word, op, val, ts, NULL, 0);
}

static void turn_hand_over(void)
{
  atomic_store(&g_turns->seq, 2 * (g_batches - 1) + (uint32_t)g_side + 1);
  futex_call(&g_turns->seq, FUTEX_WAKE, INT_MAX, NULL);
}

/* Sleep until seq is at least WANT or the other side is done (WANT < 0: only the latter); die
 * after the wait limit. */
static void turn_wait_for(long want)
{
  double deadline = now_ns() + g_turn_wait_ns;
  for (;;) {
    uint32_t seq = atomic_load(&g_turns->seq);
    if ((want >= 0 && seq >= want) || atomic_load(&g_turns->done[!g_side]))
      return;
    if (atomic_load(&g_turns->abandoned))
      die("the other job failed (the turn file says so); stopping");
    if (now_ns() > deadline) {
      char msg[160];
      snprintf(msg, sizeof msg,
               "side %d waited %.0f s for turn %ld (counter at %u): the other "
               "job is gone or stuck",
               g_side, g_turn_wait_ns / 1e9, want, seq);
      die(msg);
    }
    struct timespec ts = {0, 100 * 1000 * 1000};
    futex_call(&g_turns->seq, FUTEX_WAIT, seq, &ts);
  }
}

/* Before a batch: rank 0 hands the previous turn over now, not at the end of the batch, so
 * that this job's work between batches (checks, printing) never runs beside the other's. */
static void turn_take(void)
{
  if (!g_turns)
    return;
  if (g_rank == 0 && g_batches > 0)
    turn_hand_over();
  turn_wait_for(2 * (long)g_batches + g_side);
  g_batches++;
}

/* After the last batch: say so and hand over, then wait (asleep) until the other side is done
 * too, so that this job's MPI_Finalize does not run beside the other's last batches. */
static void turns_finish(void)
{
  if (!g_turns)
    return;
  if (g_rank == 0) {
    atomic_store(&g_turns->done[g_side], 1);
    if (g_batches > 0)
      turn_hand_over();
    futex_call(&g_turns->seq, FUTEX_WAKE, INT_MAX, NULL);
  }
  turn_wait_for(-1);
  if (g_turn_log)
    fclose(g_turn_log);
}

/* One batch: barrier, n iterations, then the slowest rank's duration (seen by all ranks). */
static double timed_batch(const struct figure *f, long n)
{
  turn_take();
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  double t0 = now_ns();
  f->kernel(n);
  double local = now_ns() - t0, slowest = 0;
  check(MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
        "MPI_Allreduce(max)");
  if (g_turn_log)
    fprintf(g_turn_log, "%d %u %.0f %.0f\n", g_side, g_batches, t0, now_ns());
  return slowest;
}

/* Grow n until a batch lasts >= 1/4 of the target, then scale to the target. All ranks see
 * the same (max-reduced) times, so they all arrive at the same n. */
static long calibrate(const struct figure *f, double target_ns)
{
  long n = 16;
  for (;;) {
    double t = timed_batch(f, n);
    if (t >= target_ns / 4 || n >= (1L << 40)) {
      double want = (double)n * target_ns / (t > 1 ? t : 1);
      /* round to 2 significant digits so the printed n is readable */
      double mag = pow(10, floor(log10(want)) - 1);
      long r = (long)(floor(want / mag + 0.5) * mag);
      return r < 1 ? 1 : r;
    }
    n *= 4;
  }
}

int main(int argc, char **argv)
{
  check(MPI_Init(&argc, &argv), "MPI_Init");
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  check(MPI_Comm_split(MPI_COMM_WORLD, 0, g_rank, &g_split), "MPI_Comm_split");
  if (g_size < 2) {
    if (g_rank == 0)
      fprintf(stderr, "overhead: needs at least 2 ranks (ping-pong uses ranks 0 and 1)\n");
    MPI_Finalize();
    return 2;
  }

  double scale = env_double("MANA_BENCH_SCALE", 1.0, 1e-6, 1e6);
  int reps = (int)env_double("MANA_BENCH_REPS", 7, 1, MAX_REPS);
  int calib = (int)env_double("MANA_BENCH_CALIBRATE", 0, 0, 1);
  double target_ns = env_double("MANA_BENCH_TARGET_MS", 75, 1, 60000) * 1e6;
  const char *nlist = getenv("MANA_BENCH_N");
  const char *only = getenv("MANA_BENCH_ONLY");
  const char *turns = getenv("MANA_BENCH_TURNS");
  g_turn_wait_ns = env_double("MANA_BENCH_TURN_WAIT_S", 120, 1, 86400) * 1e9;
  if (turns && *turns) {
    if (calib)
      die("MANA_BENCH_CALIBRATE cannot take turns: the two jobs would run different batches");
    turns_open(turns);
  }

  g_i_send = g_rank + 1;
  memcpy(g_pp_buf, "mana-pp", 8);
  g_big_send = malloc(BIG_COUNT * sizeof(double));
  g_big_recv = malloc(BIG_COUNT * sizeof(double));
  if (!g_big_send || !g_big_recv)
    die("out of memory");
  for (int i = 0; i < BIG_COUNT; i++)
    g_big_send[i] = (i == 0) ? g_rank + 1 : 0.5;

  if (g_rank == 0) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl)
      *nl = 0;
    for (char *c = lib; *c; c++)
      if (*c == '\t' || *c == '"')
        *c = ' ';
    printf("# overhead: ranks=%d reps=%d scale=%g calibrate=%d target_ms=%g mpi=\"%s\"\n", g_size,
           reps, scale, calib, target_ns / 1e6, lib);
    fflush(stdout);
  }

  for (int fi = 0; fi < NFIG; fi++) {
    const struct figure *f = &figures[fi];
    if (only && *only && !list_has(only, f->name, NULL))
      continue;

    long n = 0;
    const char *how = "table";
    if (nlist && list_has(nlist, f->name, &n) && n > 0) {
      how = "given";
    } else if (calib) {
      n = calibrate(f, target_ns);
      how = "calibrated";
    } else {
      n = (long)((double)f->default_n * scale + 0.5);
    }
    if (n < 1)
      n = 1;

    /* Warm-up with a quarter batch. If it shows that a full batch would run far beyond the
     * target (e.g. a slow wrapper layer), shrink n so the run stays short; the per-call figures
     * stay comparable, and the line says so. */
    long warm = n / 4 > 0 ? n / 4 : 1, shrunk_from = 0;
    double tw = timed_batch(f, warm);
    double projected = tw * (double)n / (double)warm;
    if (projected > 8 * target_ns && n > 1) {
      shrunk_from = n;
      n = (long)((double)n * target_ns / projected);
      if (n < 1)
        n = 1;
    }

    double t[MAX_REPS], in_order[MAX_REPS];
    for (int r = 0; r < reps; r++) {
      if (strstr(f->name, "bcast"))
        g_i_bcast = (g_rank == 0) ? 4242 : -1; /* so the check proves this batch delivered */
      t[r] = in_order[r] = timed_batch(f, n);
    }

    int ok = f->verify(), all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all_ok) {
      if (g_rank == 0)
        fprintf(stderr, "overhead: %s produced a wrong result\n", f->name);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }

    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    double med = (reps % 2) ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    double unit = (double)n * f->unit_div;
    double per = med / unit, mn = t[0] / unit, mx = t[reps - 1] / unit;
    if (g_rank == 0) {
      printf("figure=%s ns_per_call=%.1f min=%.1f max=%.1f reps=%d n=%ld mpi_calls=%d n_from=%s",
             f->name, per, mn, mx, reps, n, f->mpi_calls, how);
      if (f->kernel == k_pingpong8)
        printf(" rtt_ns=%.1f", 2 * per);
      if (shrunk_from)
        printf(" shrunk_from=%ld", shrunk_from);
      printf(" batch_ms=%.1f", med / 1e6);
      if (g_turns)
        for (int r = 0; r < reps; r++)
          printf("%s%.2f", r ? "," : " batches=", in_order[r] / unit);
      printf("\n");
      fflush(stdout);
    }
  }

  turns_finish();
  free(g_big_send);
  free(g_big_recv);
  MPI_Comm_free(&g_split);
  MPI_Finalize();
  return 0;
}
