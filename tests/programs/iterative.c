/*
 * iterative.c - a long-running, checkpointable workload: explicit 1-D heat equation on a
 * periodic ring of np * NLOCAL points, block-distributed.
 *
 *   usage: iterative [ITERS [NLOCAL [RESID_EVERY [RING_EVERY]]]]
 *          defaults 3000 262144 10 25: about half a second natively at -n 2 on an idle
 *          2-core machine (about 0.15 ms per iteration, 4 MiB of field data per rank); the
 *          run time grows linearly with ITERS, e.g. "iterative 70000" runs 10+ s.
 *          The work per iteration is large on purpose: when the cores are oversubscribed
 *          every synchronisation costs up to a scheduler time slice, so few, big
 *          iterations keep the run time predictable.
 *
 * Every iteration: halo exchange with both neighbours (Irecv/Isend, the interior is
 * updated while they are in flight, then Waitall and the two edge points). Every
 * RESID_EVERY iterations: an Allreduce of the squared update (the "residual"). Every
 * RING_EVERY iterations: a token travels once around the ranks on a duplicated
 * communicator, every hop received with MPI_ANY_SOURCE / MPI_ANY_TAG (status checked).
 *
 * All output is printed by rank 0 at the end and depends only on the arguments (and the
 * rank count), never on timing, so a run that is checkpointed and restarted any number of
 * times must print exactly what an uninterrupted run prints. Wall time goes to stderr, and
 * so does progress with ITERATIVE_PROGRESS=N in the environment: rank 0 prints
 * "iterative: step K of ITERS" every N iterations, for scripts that checkpoint at a step.
 * ITERATIVE_HOLD=FILE:K holds the run after iteration K, still calling MPI (a broadcast
 * every 10 ms), until FILE exists: a script can let periodic checkpoints happen and then
 * release the job, instead of hoping the run lasts long enough. Several holds are separated by
 * commas (FILE1:K1,FILE2:K2, at most 8), so that a job restarted at one can be checkpointed
 * again at the next. Neither changes the output.
 * Checks: heat is conserved (periodic domain), every ring hop came from the left
 * neighbour, and the ring tokens add up to the value computed in closed form.
 * Ranks: 2 (any count works).
 */
#include "mpitest.h"
#include <math.h>
#include <time.h>
#include <unistd.h>

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 1099511628211ULL;
  }
  return h;
}

/* One ITERATIVE_HOLD entry: after iteration step, wait until file exists. */
struct hold {
  long step;
  char file[4096];
};

/* Parses "FILE:K[,FILE:K...]" into holds; returns how many (entries without ":K" are skipped). */
static int parse_holds(const char *spec, struct hold *holds, int max)
{
  int n = 0;

  while (spec && *spec && n < max) {
    const char *end = strchr(spec, ',');
    size_t len = end ? (size_t)(end - spec) : strlen(spec);
    const char *colon = NULL;

    for (size_t i = 0; i < len; i++)
      if (spec[i] == ':')
        colon = spec + i;
    if (colon && len < sizeof(holds[n].file)) {
      holds[n].step = atol(colon + 1);
      snprintf(holds[n].file, sizeof(holds[n].file), "%.*s", (int)(colon - spec), spec);
      n++;
    }
    spec = end ? end + 1 : NULL;
  }
  return n;
}

static long arg(int argc, char **argv, int i, long dflt)
{
  if (argc <= i)
    return dflt;
  char *end;
  long v = strtol(argv[i], &end, 10);
  if (*end || v <= 0) {
    fprintf(stderr, "iterative: bad argument '%s' (positive integer expected)\n", argv[i]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return v;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("iterative");
  const int me = mt_.rank, np = mt_.size;
  const long iters = arg(argc, argv, 1, 3000);
  const int nloc = (int)arg(argc, argv, 2, 262144);
  const long resid_every = arg(argc, argv, 3, 10);
  const long ring_every = arg(argc, argv, 4, 25);
  const int left = (me + np - 1) % np, right = (me + 1) % np;
  const double alpha = 0.25;
  double t_start = MPI_Wtime();
  const char *progress = getenv("ITERATIVE_PROGRESS");
  const long progress_every = progress ? atol(progress) : 0;
  static struct hold holds[8];
  const int nholds = parse_holds(getenv("ITERATIVE_HOLD"), holds, 8);

  MPI_Comm ring;
  MPI_Comm_dup(MPI_COMM_WORLD, &ring);

  /* u[0] and u[nloc+1] are ghost cells */
  double *u = mt_alloc(sizeof(double) * (size_t)(nloc + 2));
  double *v = mt_alloc(sizeof(double) * (size_t)(nloc + 2));
  const long long nglob = (long long)np * nloc;
  for (int i = 1; i <= nloc; i++) {
    long long g = (long long)me * nloc + (i - 1);
    u[i] = (double)((g * 7919) % 1000) / 1000.0 + (g < nglob / 2 ? 1.0 : 0.0);
  }
  double heat0_local = 0, heat0 = 0;
  for (int i = 1; i <= nloc; i++)
    heat0_local += u[i];
  MPI_Allreduce(&heat0_local, &heat0, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

  long n_resid = 0, n_ring = 0, bad_hops = 0;
  double last_resid = 0;
  uint64_t resid_digest = 1469598103934665603ULL;
  long long token_total = 0; /* on rank 0: sum of the tokens that came back */

  for (long it = 1; it <= iters; it++) {
    MPI_Request rq[4];
    MPI_Irecv(&u[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(&u[nloc + 1], 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &rq[1]);
    MPI_Isend(&u[nloc], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &rq[2]);
    MPI_Isend(&u[1], 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &rq[3]);
    for (int i = 2; i < nloc; i++)
      v[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
    MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
    v[1] = u[1] + alpha * (u[0] - 2.0 * u[1] + u[2]);
    if (nloc > 1)
      v[nloc] = u[nloc] + alpha * (u[nloc - 1] - 2.0 * u[nloc] + u[nloc + 1]);

    if (it % resid_every == 0) {
      double local = 0, global = 0;
      for (int i = 1; i <= nloc; i++)
        local += (v[i] - u[i]) * (v[i] - u[i]);
      MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      last_resid = sqrt(global);
      resid_digest = fnv1a(resid_digest, &global, sizeof global);
      n_resid++;
    }

    double *t = u;
    u = v;
    v = t;

    if (it % ring_every == 0) {
      /* token starts at rank 0 with value it; rank r adds (r + 1) * it */
      long long tok;
      MPI_Status st;
      int tag = (int)(it % 30000);
      if (me == 0) {
        tok = it;
        MPI_Send(&tok, 1, MPI_LONG_LONG, right, tag, ring);
        MPI_Recv(&tok, 1, MPI_LONG_LONG, MPI_ANY_SOURCE, MPI_ANY_TAG, ring, &st);
        token_total += tok;
      } else {
        MPI_Recv(&tok, 1, MPI_LONG_LONG, MPI_ANY_SOURCE, MPI_ANY_TAG, ring, &st);
        tok += (long long)(me + 1) * it;
        MPI_Send(&tok, 1, MPI_LONG_LONG, right, tag, ring);
      }
      if (st.MPI_SOURCE != left || st.MPI_TAG != tag)
        bad_hops++;
      n_ring++;
    }
    if (progress_every > 0 && me == 0 && it % progress_every == 0)
      fprintf(stderr, "iterative: step %ld of %ld\n", it, iters);
    for (int k = 0; k < nholds; k++) {
      if (it != holds[k].step)
        continue;
      int go = 0;
      if (me == 0)
        fprintf(stderr, "iterative: holding at step %ld until %s exists\n", it, holds[k].file);
      for (;;) {
        if (me == 0)
          go = access(holds[k].file, F_OK) == 0;
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (go)
          break;
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000000}, NULL);
      }
    }
  }

  /* final field: per-rank weighted sum and hash, combined in rank order on rank 0 */
  double part[2] = {0, 0};
  for (int i = 1; i <= nloc; i++) {
    long long g = (long long)me * nloc + (i - 1);
    part[0] += u[i];
    part[1] += u[i] * (double)(g % 97 + 1);
  }
  uint64_t h = fnv1a(1469598103934665603ULL, &u[1], sizeof(double) * (size_t)nloc);
  double *parts = mt_alloc(sizeof(double) * 2 * (size_t)np);
  uint64_t *hashes = mt_alloc(sizeof(uint64_t) * (size_t)np);
  MPI_Gather(part, 2, MPI_DOUBLE, parts, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Gather(&h, 1, MPI_UINT64_T, hashes, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  long total_bad = 0;
  MPI_Reduce(&bad_hops, &total_bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);

  if (me == 0) {
    double heat = 0, checksum = 0;
    uint64_t field_hash = 1469598103934665603ULL;
    for (int r = 0; r < np; r++) {
      heat += parts[2 * r];
      checksum += parts[2 * r + 1];
      field_hash = fnv1a(field_hash, &hashes[r], sizeof hashes[r]);
    }
    /* closed form of the ring tokens: each round at iteration it returns it * (1 + sum_{r>=1} (r+1)) */
    long long per = 1;
    for (int r = 1; r < np; r++)
      per += r + 1;
    long long rounds = iters / ring_every;
    long long expect_tokens = per * ring_every * rounds * (rounds + 1) / 2;

    mt_log("parameters: ranks %d, iterations %ld, points per rank %d, residual every %ld, ring "
           "every %ld",
           np, iters, nloc, resid_every, ring_every);
    mt_log("residual checks %ld, last residual %.12e, residual digest %016llx", n_resid, last_resid,
           (unsigned long long)resid_digest);
    mt_log("field checksum %.12e, field hash %016llx", checksum, (unsigned long long)field_hash);
    mt_check(fabs(heat - heat0) <= 1e-9 * fabs(heat0), "heat conserved: %.9f (initial %.9f)", heat,
             heat0);
    mt_check_int("ring rounds completed", n_ring, rounds);
    mt_check_int("ring token total", token_total, expect_tokens);
    mt_check_int("ring hops with unexpected source or tag", total_bad, 0);
  }
  int status = mt_report();
  double elapsed = MPI_Wtime() - t_start;
  if (me == 0)
    fprintf(stderr, "iterative: %ld iterations in %.3f s\n", iters, elapsed);
  free(u);
  free(v);
  free(parts);
  free(hashes);
  MPI_Comm_free(&ring);
  MPI_Finalize();
  return status;
}
