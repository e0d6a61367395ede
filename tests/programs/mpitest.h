/*
 * mpitest.h - tiny result-logging helpers shared by the integration test programs.
 *
 * Every rank appends its check results to a private text log instead of printing. At the end
 * mt_report() gathers all logs to rank 0, which prints them in rank order, each line prefixed
 * with "[rank] ", followed by a summary line. Output is therefore deterministic no matter how
 * the ranks are scheduled, and only rank 0 ever writes to stdout.
 *
 * Line format:   [r] OK   <what> = <actual values>
 *                [r] FAIL <what> = <actual values> (expected <expected values>)
 * Summary:       <program>: <checks> checks, <failures> failures
 *                RESULT PASS | RESULT FAIL
 *
 * Header-only (static inline) so each program is a single translation unit.
 */
#ifndef MANA_TESTS_MPITEST_H
#define MANA_TESTS_MPITEST_H

#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "waiting_in.h"

struct mt_state {
  char *buf;
  size_t len, cap;
  int checks, fails;
  int rank, size;
  const char *name;
};
static struct mt_state mt_;

static inline void mt_die(const char *what)
{
  fprintf(stderr, "mpitest: %s\n", what);
  MPI_Abort(MPI_COMM_WORLD, 99);
  exit(99);
}

/* Zero-filled allocation that never returns NULL (zeroing also keeps gcc's
 * -Wmaybe-uninitialized quiet about arrays filled in loops it cannot prove run). */
static inline void *mt_alloc(size_t bytes)
{
  void *p = calloc(bytes ? bytes : 1, 1);
  if (!p)
    mt_die("out of memory");
  return p;
}

static inline void mt_reserve(size_t extra)
{
  if (mt_.len + extra + 1 <= mt_.cap)
    return;
  size_t ncap = mt_.cap ? mt_.cap : 4096;
  while (ncap < mt_.len + extra + 1)
    ncap *= 2;
  char *nb = realloc(mt_.buf, ncap);
  if (!nb)
    mt_die("out of memory");
  mt_.buf = nb;
  mt_.cap = ncap;
}

static inline void mt_vappend(const char *fmt, va_list ap)
{
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0)
    mt_die("bad format");
  mt_reserve((size_t)n);
  vsnprintf(mt_.buf + mt_.len, (size_t)n + 1, fmt, ap);
  mt_.len += (size_t)n;
}

/* Append raw text to this rank's log (no newline added). */
__attribute__((format(printf, 1, 2))) static inline void mt_append(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  mt_vappend(fmt, ap);
  va_end(ap);
}

/* Log an informational line (must itself be deterministic). */
__attribute__((format(printf, 1, 2))) static inline void mt_log(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  mt_vappend(fmt, ap);
  va_end(ap);
  mt_append("\n");
}

/* Record a check: prints "OK   <msg>" or "FAIL <msg>". Returns cond. */
__attribute__((format(printf, 2, 3))) static inline int mt_check(int cond, const char *fmt, ...)
{
  va_list ap;
  mt_.checks++;
  if (!cond)
    mt_.fails++;
  mt_append(cond ? "OK   " : "FAIL ");
  va_start(ap, fmt);
  mt_vappend(fmt, ap);
  va_end(ap);
  mt_append("\n");
  return cond;
}

static inline void mt_fmt_ints(const int *v, int n)
{
  mt_append("[");
  for (int i = 0; i < n; i++) {
    if (i == 24 && n > 26) {
      mt_append(" ... (%d more)", n - i);
      break;
    }
    mt_append(i ? " %d" : "%d", v[i]);
  }
  mt_append("]");
}

static inline void mt_fmt_dbls(const double *v, int n)
{
  mt_append("[");
  for (int i = 0; i < n; i++) {
    if (i == 16 && n > 18) {
      mt_append(" ... (%d more)", n - i);
      break;
    }
    mt_append(i ? " %.10g" : "%.10g", v[i]);
  }
  mt_append("]");
}

/* Integer scalar check: "what = got" (expected exp). */
static inline int mt_check_int(const char *what, long long got, long long exp)
{
  int ok = got == exp;
  mt_.checks++;
  if (!ok)
    mt_.fails++;
  mt_append("%s%s = %lld", ok ? "OK   " : "FAIL ", what, got);
  if (!ok)
    mt_append(" (expected %lld)", exp);
  mt_append("\n");
  return ok;
}

/* Integer array check; compares all n elements, prints a bounded prefix. */
static inline int mt_check_ints(const char *what, const int *got, const int *exp, int n)
{
  int ok = 1;
  for (int i = 0; i < n; i++)
    if (got[i] != exp[i])
      ok = 0;
  mt_.checks++;
  if (!ok)
    mt_.fails++;
  mt_append("%s%s = ", ok ? "OK   " : "FAIL ", what);
  mt_fmt_ints(got, n);
  if (!ok) {
    int first = 0;
    while (got[first] == exp[first])
      first++;
    mt_append(" (expected ");
    mt_fmt_ints(exp, n);
    mt_append(", first difference at index %d)", first);
  }
  mt_append("\n");
  return ok;
}

/* Double array check with exact comparison (tests only use exactly representable values). */
static inline int mt_check_dbls(const char *what, const double *got, const double *exp, int n)
{
  int ok = 1;
  for (int i = 0; i < n; i++)
    if (got[i] != exp[i])
      ok = 0;
  mt_.checks++;
  if (!ok)
    mt_.fails++;
  mt_append("%s%s = ", ok ? "OK   " : "FAIL ", what);
  mt_fmt_dbls(got, n);
  if (!ok) {
    mt_append(" (expected ");
    mt_fmt_dbls(exp, n);
    mt_append(")");
  }
  mt_append("\n");
  return ok;
}

/* Call after MPI_Init/MPI_Init_thread. */
static inline void mt_begin(const char *name)
{
  mt_.name = name;
  MPI_Comm_rank(MPI_COMM_WORLD, &mt_.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mt_.size);
}

/* Require an exact world size; on mismatch rank 0 says so and every rank exits with 2. */
static inline void mt_require_size(int n)
{
  if (mt_.size == n)
    return;
  if (mt_.rank == 0)
    printf("%s: needs exactly %d ranks, got %d\n", mt_.name, n, mt_.size);
  fflush(stdout);
  MPI_Finalize();
  exit(2);
}

/*
 * Gather every rank's log to rank 0 and print it in rank order plus a summary.
 * Collective over MPI_COMM_WORLD (one MPI_Gather, one MPI_Gatherv).
 * Returns the process exit status to use: 1 on rank 0 if any rank failed, else 0.
 */
static inline int mt_report(void)
{
  int mine[3] = {(int)mt_.len, mt_.checks, mt_.fails};
  int *all = NULL, *displs = NULL, *lens = NULL;
  char *text = NULL;
  if (mt_.rank == 0) {
    all = malloc(sizeof(int) * 3 * (size_t)mt_.size);
    lens = malloc(sizeof(int) * (size_t)mt_.size);
    displs = malloc(sizeof(int) * (size_t)mt_.size);
    if (!all || !lens || !displs)
      mt_die("out of memory");
  }
  MPI_Gather(mine, 3, MPI_INT, all, 3, MPI_INT, 0, MPI_COMM_WORLD);
  size_t total = 0;
  if (mt_.rank == 0) {
    for (int r = 0; r < mt_.size; r++) {
      lens[r] = all[3 * r];
      displs[r] = (int)total;
      total += (size_t)lens[r];
    }
    text = malloc(total + 1);
    if (!text)
      mt_die("out of memory");
  }
  mt_reserve(0);
  MPI_Gatherv(mt_.buf, (int)mt_.len, MPI_CHAR, text, lens, displs, MPI_CHAR, 0, MPI_COMM_WORLD);
  int status = 0;
  if (mt_.rank == 0) {
    int checks = 0, fails = 0;
    for (int r = 0; r < mt_.size; r++) {
      const char *p = text + displs[r], *end = p + lens[r];
      while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        printf("[%d] %.*s\n", r, (int)n, p);
        p += n + (nl ? 1 : 0);
      }
      checks += all[3 * r + 1];
      fails += all[3 * r + 2];
    }
    printf("%s: %d checks, %d failures\n", mt_.name, checks, fails);
    printf("RESULT %s\n", fails == 0 && checks > 0 ? "PASS" : "FAIL");
    fflush(stdout);
    status = (fails == 0 && checks > 0) ? 0 : 1;
    free(all);
    free(lens);
    free(displs);
    free(text);
  }
  free(mt_.buf);
  mt_.buf = NULL;
  mt_.len = mt_.cap = 0;
  return status;
}

/* mt_report() followed by MPI_Finalize(); returns the exit status for main(). */
static inline int mt_end(void)
{
  int status = mt_report();
  MPI_Finalize();
  return status;
}

/* Deterministic pseudo-random generator for test data (xorshift32). */
static inline uint32_t mt_rand(uint32_t *state)
{
  uint32_t x = *state ? *state : 0x9e3779b9u;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  *state = x;
  return x;
}

/* A 64-bit finalizer (splitmix-style) for deterministic test values and digests. */
static inline uint64_t mt_mix(uint64_t x)
{
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

/* Positive integer argument i of the program, or dflt when absent; aborts the job on a bad
 * one (prog names the program in the message). */
static inline long mt_arg(const char *prog, int argc, char **argv, int i, long dflt)
{
  if (argc <= i)
    return dflt;
  char *end;
  long v = strtol(argv[i], &end, 10);
  if (*end || v <= 0) {
    fprintf(stderr, "%s: bad argument '%s' (positive integer expected)\n", prog, argv[i]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return v;
}

/* How many of the process sets every session has (mpi://WORLD, mpi://SELF) session s lists;
 * *n gets how many it lists in all. */
static inline int mt_standard_psets(MPI_Session s, int *n)
{
  int found = 0;
  *n = 0;
  MPI_Session_get_num_psets(s, MPI_INFO_NULL, n);
  for (int i = 0; i < *n; i++) {
    char name[256];
    int len = sizeof name;
    MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, name);
    found += strcmp(name, "mpi://WORLD") == 0 || strcmp(name, "mpi://SELF") == 0;
  }
  return found;
}

/* Installs fn for sig; with full_mask, every signal is blocked while it runs. */
static inline void mt_on_signal(int sig, void (*fn)(int), int full_mask)
{
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = fn;
  if (full_mask)
    sigfillset(&sa.sa_mask);
  else
    sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, NULL) != 0)
    mt_die("sigaction failed");
}

/* Sleeps about `ms` milliseconds: the pause between two looks at a condition. */
static inline void mt_pause_ms(long ms)
{
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* n MPI calls that change nothing (MPI_Type_size): steps of rank 0's call count, so that
 * checkpoints at chosen calls fall between a program's real operations. */
static inline void mt_local_calls(int n)
{
  for (int k = 0; k < n; k++) {
    int size;
    MPI_Type_size(MPI_DOUBLE, &size);
  }
}

/* n Allreduces on MPI_COMM_WORLD of values derived from the step and the rank, their sum
 * checked: places for a checkpoint at chosen calls after a program's point of interest. */
static inline void mt_allreduce_steps(int n)
{
  long total = 0, want = 0;
  for (int i = 0; i < n; i++) {
    int v = mt_.rank * 10 + i, sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    total += sum;
    want += 10L * mt_.size * (mt_.size - 1) / 2 + (long)mt_.size * i;
  }
  mt_check_int("sum of the allreduces", total, want);
}

#endif /* MANA_TESTS_MPITEST_H */
