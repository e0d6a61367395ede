/* Restarting a rank from its image, in a fresh mana_lh whose window is reserved:
 *   1. open and check the image (window, kernel, vDSO must match this process);
 *   2. map the memory back, then the other kinds of state (window allocator, signal
 *      dispositions, open files: before MPI opens anything);
 *   3. re-fill the boundary's lower-half fields, re-arm parking and the seccomp filter;
 *   4. initialize MPI at the recorded thread level and check rank and size;
 *   5. recreate the parked threads on their own thread pointers and contexts, and continue the
 *      main thread, which runs the stub's restart hook before releasing the others. */
#define _GNU_SOURCE
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/futex.h>
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "mana/thread_context.h"
#include "generation.h"
#include "image.h"
#include "mana/boundary.h"
#include "mana/fault.h"
#include "mana/raw_syscall.h"
#include "mana/fs_switch.h"
#include "mana/image_blobs.h"
#include "mana/park.h"
#include "mana/signals.h"
#include "coordinator_link.h"
#include "local_checkpoint.h"
#include "lower_threads.h"
#include "state_memory.h"
#include "services.h"
#include "mpi_threads.h"
#include "park.h"
#include "sigsys.h"
#include "state.h"

/* Released once the main thread has run the stub's restart hook.  restarting: this process
 * is a restart, and restart_done tells whether its threads run the application again. */
static volatile uint32_t restart_done;
static volatile uint32_t restarting;
/* MANA_TEST_RESTART_DELAY_MS: the main thread waits this long before the stub's restart hook,
 * so that tests can ask for a checkpoint while the threads are still resuming. */
static uint32_t resume_delay_ms;

int mana_restart_wait_resumed(int timeout_ms)
{
  if (!__atomic_load_n(&restarting, __ATOMIC_ACQUIRE))
    return 0;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (!__atomic_load_n(&restart_done, __ATOMIC_ACQUIRE)) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    long left = timeout_ms -
                ((now.tv_sec - start.tv_sec) * 1000L + (now.tv_nsec - start.tv_nsec) / 1000000L);
    if (left <= 0)
      return -1;
    struct timespec ts = {left / 1000, (left % 1000) * 1000000L};
    mana_raw_syscall4(SYS_futex, (long)&restart_done, FUTEX_WAIT, 0, (long)&ts);
  }
  return 0;
}

/* Runs on each resumed thread, inside mana_park_self, on the upper half's thread pointer: no
 * TLS, raw system calls only. */
static void resume_thread(void *record)
{
  struct mana_thread_record *r = record;
  struct mana_park_area *area = MANA_PARK;
  if (r->is_main) {
    if (resume_delay_ms) { /* testing aid: widen the window before the threads run again */
      struct timespec ts = {resume_delay_ms / 1000, (long)(resume_delay_ms % 1000) * 1000000L};
      mana_raw_syscall4(SYS_nanosleep, (long)&ts, 0, 0, 0);
    }
    /* glibc keeps the kernel thread id in its struct pthread; a new process has a new one. */
    *(uint32_t *)(uintptr_t)(r->upper_fs + area->tid_offset) = r->tid;
    area->main_tid_at_start = r->tid;
    if (MANA_BOUNDARY->stub_restart_hook)
      MANA_BOUNDARY->stub_restart_hook();
    __atomic_store_n(&restart_done, 1, __ATOMIC_RELEASE);
    mana_raw_syscall4(SYS_futex, (long)&restart_done, FUTEX_WAKE, 0x7fffffff, 0);
    return;
  }
  while (!__atomic_load_n(&restart_done, __ATOMIC_ACQUIRE))
    mana_raw_syscall4(SYS_futex, (long)&restart_done, FUTEX_WAIT, 0, 0);
}

/* clone() straight into a saved context: the child starts on `stack` and resumes `ctx`. */
long mana_clone_resume(unsigned long flags, void *stack, uint32_t *ptid, uint32_t *ctid,
                       uint64_t tls, const struct mana_context *ctx);
__asm__(".text\n"
        ".globl mana_clone_resume\n"
        ".type mana_clone_resume, @function\n"
        "mana_clone_resume:\n"
        "  push %r12\n"
        "  mov %r9, %r12\n"  /* ctx survives the syscall in a callee-saved register */
        "  mov %rcx, %r10\n" /* child_tid: fourth system call argument */
        "  mov $56, %eax\n"  /* SYS_clone(flags, stack, parent_tid, child_tid, tls) */
        "  syscall\n"
        "  test %rax, %rax\n"
        "  jnz 1f\n"
        "  mov %r12, %rdi\n"
        "  call mana_context_resume\n"
        "1:\n"
        "  pop %r12\n"
        "  ret\n"
        ".size mana_clone_resume, .-mana_clone_resume\n");

static int recreate_threads(char *err, size_t errlen)
{
  struct mana_park_area *area = MANA_PARK;
  const unsigned long flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                              CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |
                              CLONE_CHILD_CLEARTID;
  for (uint32_t i = 0; i < MANA_MAX_THREADS; i++) {
    struct mana_thread_record *r = &area->threads[i];
    if (r->state != MANA_THREAD_PARKED || r->is_main)
      continue;
    /* A small stack for the instant before the thread switches to its own. */
    size_t size = 64 * 1024;
    char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stack == MAP_FAILED) {
      snprintf(err, errlen, "cannot allocate a start-up stack for thread %u: %s", r->tid,
               strerror(errno));
      return -1;
    }
    /* pthread_join waits on the tid field in glibc's struct pthread: the kernel keeps it. */
    uint32_t *tid_field = (uint32_t *)(uintptr_t)(r->upper_fs + area->tid_offset);
    long tid =
        mana_clone_resume(flags, stack + size - 64, tid_field, tid_field, r->upper_fs, &r->ctx);
    if (tid < 0) {
      snprintf(err, errlen, "cannot recreate thread %u: %s", r->tid, strerror((int)-tid));
      return -1;
    }
  }
  return 0;
}

static int check_image(const struct mana_image_info *info, char *err, size_t errlen)
{
  struct utsname u;
  uname(&u);
  if (info->window_base != MANA_WINDOW_BASE || info->window_end != MANA_WINDOW_END) {
    snprintf(err, errlen, "the image was written with another upper-half window");
    return -1;
  }
  if (strcmp(info->kernel_release, u.release) != 0) {
    snprintf(err, errlen, "the image was written under kernel %s, this is %s", info->kernel_release,
             u.release);
    return -1;
  }
  if (info->vdso_base != getauxval(AT_SYSINFO_EHDR)) {
    snprintf(err, errlen,
             "the vDSO is at %#lx here but was at %#lx when the image was written (is ASLR "
             "disabled?)",
             getauxval(AT_SYSINFO_EHDR), (unsigned long)info->vdso_base);
    return -1;
  }
  return 0;
}

/* Before MPI starts: a rank count that differs from the image's is an error every rank can see
 * at once (after MPI_Init, a missing rank would leave the others waiting). */
static int check_launch_size(const struct mana_image_info *info, char *err, size_t errlen)
{
  const char *v = getenv("PMI_SIZE");
  if (!v)
    v = getenv("SLURM_NTASKS");
  if (v && strtoul(v, NULL, 10) != info->world_size) {
    snprintf(err, errlen,
             "the checkpoint has %u ranks but %s ranks were started: restart with -n %u",
             info->world_size, v, info->world_size);
    return -1;
  }
  return 0;
}

static int init_mpi(const struct mana_rank_facts *facts, char *err, size_t errlen)
{
  int provided, rank = -1, size = -1;
  int level = facts->thread_level < MPI_THREAD_SERIALIZED ? MPI_THREAD_SERIALIZED
                                                          : (int)facts->thread_level;
  sigset_t mask;
  mana_lower_threads_mask_enter(&mask); /* for the threads MPICH and UCX make */
  int rc = PMPI_Init_thread(NULL, NULL, level, &provided);
  mana_lower_threads_mask_leave(&mask);
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    PMPI_Error_string(rc, text, &len); /* allowed before MPI is initialized */
    snprintf(err, errlen, "MPI_Init_thread failed: %s", text[0] ? text : "unknown MPI error");
    return -1;
  }
  mana_mpi_thread_level_restored((int)facts->thread_level);
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  if ((uint32_t)size != facts->world_size || (uint32_t)rank != facts->rank) {
    snprintf(err, errlen,
             "the job has %d ranks and this is rank %d, but the image is of rank %u of %u: "
             "restart with the same number of ranks",
             size, rank, facts->rank, facts->world_size);
    return -1;
  }
  return 0;
}

static int refill_boundary(void)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  int fsgs = (getauxval(AT_HWCAP2) & 2) != 0;
  b->have_fsgsbase = (uint32_t)fsgs;
  b->lower_fs = mana_get_fs(fsgs);
  b->park_requested = 0;
  b->restarted++;
  b->restart_resume = resume_thread;
  return 0;
}

int mana_restart_from(const char *path, char *err, size_t errlen)
{
  char dir_buf[4096], name_buf[4096];
  snprintf(dir_buf, sizeof(dir_buf), "%s", path);
  snprintf(name_buf, sizeof(name_buf), "%s", path);
  struct mana_image_reader *r = NULL;
  struct mana_image_info info;
  int dirfd = open(dirname(dir_buf), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) {
    snprintf(err, errlen, "cannot open %s: %s", dir_buf, strerror(errno));
    return -1;
  }
  struct mana_generation gen = {0};
  if (mana_image_open(&r, dirfd, basename(name_buf), &info, err, errlen) != 0 ||
      check_launch_size(&info, err, errlen) != 0 || check_image(&info, err, errlen) != 0)
    return -1;
  /* A committed generation: the image must be the one its MANIFEST lists (a local checkpoint's
   * directory has none). */
  if (faccessat(dirfd, "MANIFEST", F_OK, 0) == 0 &&
      (mana_generation_of_dir(dir_buf, &gen, err, errlen) != 0 ||
       mana_generation_check_image(&gen, basename(name_buf), &info, err, errlen) != 0))
    return -1;
  mana_generation_release(&gen);
  const struct mana_rank_facts *saved_facts;
  size_t len;
  if (mana_image_blob(r, MANA_BLOB_RANK, (const void **)&saved_facts, &len) != 0 ||
      len != sizeof(*saved_facts)) {
    snprintf(err, errlen, "%s: no rank record", path);
    return -1;
  }
  struct mana_rank_facts facts = *saved_facts;
  const struct mana_lh_table *table = MANA_BOUNDARY->lh;
  if (mana_memory_restore(r, err, errlen) != 0)
    return -1;
  for (size_t i = 0; mana_state_kinds[i]; i++)
    if (mana_state_kinds[i]->restore(r, err, errlen) != 0)
      return -1;
  mana_image_close(r);
  close(dirfd);

  /* The restored boundary page is the old process's: point it at this lower half. */
  MANA_BOUNDARY->lh = table;
  refill_boundary();
  if (mana_park_install(MANA_PARK_SIGNAL) != 0 || mana_seccomp_install() != 0) {
    snprintf(err, errlen, "cannot re-arm parking and the seccomp filter");
    return -1;
  }
  if (mana_mpi_threads_restore(err, errlen) != 0)
    return -1;
  if (mana_fault("restart-kill", (long)facts.rank))
    raise(SIGKILL); /* the other ranks are in (or on their way to) MPI_Init */
  if (init_mpi(&facts, err, errlen) != 0)
    return -1;
  /* The links below can ask for a checkpoint at once; they wait for mana_restart_wait_resumed,
   * as until then the threads are resuming with every signal blocked and cannot park. */
  const char *delay = getenv("MANA_TEST_RESTART_DELAY_MS");
  resume_delay_ms = delay ? (uint32_t)strtoul(delay, NULL, 10) : 0;
  __atomic_store_n(&restarting, 1, __ATOMIC_RELEASE);
  mana_local_checkpoint_start(); /* a restarted job can be checkpointed again */
  mana_coordinator_link_start();

  /* From here the threads run again: nothing may interrupt them before their own masks are
   * back (a signal frame or the record restores each thread's mask). */
  sigset_t all;
  mana_sigset_block_all(&all); /* the restart hook allocates: SIGSYS must stay open */
  sigprocmask(SIG_BLOCK, &all, NULL);
  if (recreate_threads(err, errlen) != 0)
    return -1;
  struct mana_park_area *area = MANA_PARK;
  for (uint32_t i = 0; i < MANA_MAX_THREADS; i++) {
    struct mana_thread_record *t = &area->threads[i];
    if (t->state == MANA_THREAD_PARKED && t->is_main) {
      t->tid = (uint32_t)gettid();
      fflush(NULL);
      mana_set_fs((int)MANA_BOUNDARY->have_fsgsbase, t->upper_fs);
      mana_context_resume(&t->ctx);
    }
  }
  snprintf(err, errlen, "the image has no parked main thread");
  return -1;
}
