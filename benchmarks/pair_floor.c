/* pair_floor.c - what the non-blocking collective + MPI_Wait pair costs natively when it is
 * made to pay the two things every interposer built like mana pays in it, measured on the
 * machine at hand:
 *
 *   - a polling wait: MPI_Test in a loop that could stop at a flag, instead of MPI_Wait (a
 *     thread waiting in the lower half must be able to park for a checkpoint);
 *   - the FS switches of two crossings, one per call: FS set to a second thread pointer and
 *     back after each call, with no TLS use between.  Two ways, as mana has
 *     (lower-half/fs_selector.c): four `wrfsbase`; or a selector load (an LDT entry whose base
 *     is the second thread pointer, below 4 GiB) and a `wrfsbase` back, twice.
 *
 * Run natively: mpiexec.mpich -n 2 ./pair_floor.  The variants of the pair (MPI_Wait; test
 * loop; each with either way of switching) alternate every iteration, so a noisy machine slows
 * them alike and the differences stay readable.  Each rank times its own iterations with the
 * TSC, converted to ns against CLOCK_MONOTONIC over the whole run; rank 0 prints the mean over
 * ranks, the FS figures as the extra time of the pair:
 *
 *   floor=iallreduce4_wait pair_ns=830.2 test_loop_ns=+16.0 fs_writes_ns=+42.1 both_ns=+55.3 \
 *         fs_selector_ns=+35.0 both_selector_ns=+48.2 n=2000000 ranks=2
 *
 * Without the FSGSBASE instructions (HWCAP2) the FS variants are skipped; without an LDT entry
 * (modify_ldt refused) the selector ones.
 * Environment: PAIR_FLOOR_N=n iterations (default 400000, also for a value under 6, which would
 * leave a variant unmeasured; run_overhead.sh uses 2000000).
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <asm/ldt.h>
#include <immintrin.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#ifndef HWCAP2_FSGSBASE
#define HWCAP2_FSGSBASE (1 << 1)
#endif

enum { WAIT, TEST_LOOP, WAIT_FS, TEST_LOOP_FS, WAIT_SEL, TEST_LOOP_SEL, NVARIANT };

/* The second thread pointer FS is switched to, below 4 GiB for the selector.  Nothing runs on
 * it: the loop blocks signals while it measures, so no handler can see FS pointing there. */
static uint64_t other_tcb;
static uint16_t other_sel;        /* 0: no LDT entry */
static volatile int stop_waiting; /* what a checkpoint request would set; never set here */

static double now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((target("fsgsbase"))) static inline void fs_away_and_back(uint64_t own)
{
  _writefsbase_u64(other_tcb);
  _writefsbase_u64(own);
}

__attribute__((target("fsgsbase"))) static inline void fs_selector_and_back(uint64_t own)
{
  __asm__ volatile("movw %w0, %%fs" ::"r"(other_sel) : "memory");
  _writefsbase_u64(own);
}

/* The second thread pointer and, if the kernel grants one, LDT entry 0 with it as base. */
static int make_other_tcb(void)
{
  void *p =
      mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
  if (p == MAP_FAILED)
    return -1;
  other_tcb = (uint64_t)(uintptr_t)p;
  struct user_desc d;
  memset(&d, 0, sizeof d);
  d.entry_number = 0;
  d.base_addr = (unsigned int)other_tcb;
  d.limit = 0xfffff;
  d.seg_32bit = 1;
  d.limit_in_pages = 1;
  d.useable = 1;
  if (syscall(SYS_modify_ldt, 0x11, &d, sizeof d) == 0)
    other_sel = 0 << 3 | 4 /* LDT */ | 3 /* RPL 3 */;
  return 0;
}

__attribute__((target("fsgsbase"))) static uint64_t read_fs(void)
{
  return _readfsbase_u64();
}

/* Under mana the FS switches and the LDT entry written here would be the lower half's: this
 * program measures native MPICH only.  mana's lower half is the process's main program. */
static int under_mana(void)
{
  FILE *maps = fopen("/proc/self/maps", "r");
  char line[4096];
  int found = 0;
  while (maps && !found && fgets(line, sizeof line, maps)) {
    size_t len = strlen(line);
    found = len >= 9 && strcmp(line + len - 9, "/mana_lh\n") == 0;
  }
  if (maps)
    fclose(maps);
  return found;
}

static void test_loop(MPI_Request *req)
{
  int flag = 0;
  do
    MPI_Test(req, &flag, MPI_STATUS_IGNORE);
  while (!flag && !stop_waiting);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (under_mana()) {
    if (rank == 0)
      fprintf(stderr,
              "pair_floor: run it natively (mpiexec.mpich -n 2 pair_floor), not under mana: "
              "it measures MPICH alone and rewrites FS and the LDT\n");
    MPI_Finalize();
    return 2;
  }
  const char *ns = getenv("PAIR_FLOOR_N");
  long n = ns && atol(ns) >= NVARIANT ? atol(ns) : 400000; /* every variant runs at least once */
  int have_fs = (getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE) != 0 && make_other_tcb() == 0;
  int nvariant = !have_fs ? TEST_LOOP + 1 : other_sel ? NVARIANT : TEST_LOOP_FS + 1;
  uint64_t own_fs = have_fs ? read_fs() : 0;

  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);

  int in = rank + 1, out = 0, want = size * (size + 1) / 2;
  long wrong = 0;
  uint64_t ticks[NVARIANT] = {0};
  long count[NVARIANT] = {0};
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = now_ns();
  uint64_t c0 = __rdtsc();
  for (long i = 0; i < n; i++) {
    int v = (int)(i % nvariant);
    MPI_Request req;
    uint64_t start = __rdtsc();
    MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    if (v == WAIT_FS || v == TEST_LOOP_FS)
      fs_away_and_back(own_fs);
    else if (v == WAIT_SEL || v == TEST_LOOP_SEL)
      fs_selector_and_back(own_fs);
    if (v == TEST_LOOP || v == TEST_LOOP_FS || v == TEST_LOOP_SEL)
      test_loop(&req);
    else
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (v == WAIT_FS || v == TEST_LOOP_FS)
      fs_away_and_back(own_fs);
    else if (v == WAIT_SEL || v == TEST_LOOP_SEL)
      fs_selector_and_back(own_fs);
    ticks[v] += __rdtsc() - start;
    count[v]++;
    wrong += out != want;
  }
  uint64_t c1 = __rdtsc();
  double t1 = now_ns();
  pthread_sigmask(SIG_SETMASK, &old, NULL);

  double ns_per_tick = (t1 - t0) / (double)(c1 - c0);
  double mine[NVARIANT] = {0}, sum[NVARIANT] = {0};
  for (int v = 0; v < nvariant; v++)
    mine[v] = (double)ticks[v] * ns_per_tick / (double)count[v];
  MPI_Reduce(mine, sum, NVARIANT, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  long all_wrong = 0;
  MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    if (all_wrong) {
      fprintf(stderr, "pair_floor: %ld reductions gave a wrong sum\n", all_wrong);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    for (int v = 0; v < NVARIANT; v++)
      sum[v] /= size;
    printf("floor=iallreduce4_wait pair_ns=%.1f test_loop_ns=%+.1f", sum[WAIT],
           sum[TEST_LOOP] - sum[WAIT]);
    if (have_fs)
      printf(" fs_writes_ns=%+.1f both_ns=%+.1f", sum[WAIT_FS] - sum[WAIT],
             sum[TEST_LOOP_FS] - sum[WAIT]);
    if (have_fs && other_sel)
      printf(" fs_selector_ns=%+.1f both_selector_ns=%+.1f", sum[WAIT_SEL] - sum[WAIT],
             sum[TEST_LOOP_SEL] - sum[WAIT]);
    printf(" n=%ld ranks=%d\n", n, size);
  }
  MPI_Finalize();
  return 0;
}
