/* CPU affinity and nice value of each application thread.  Both belong to the thread, and a
 * restarted process's threads had the launcher's: a hybrid program whose OpenMP runtime (or
 * its own code) pinned each thread to a core ran with every thread floating after a restart,
 * and a thread that lowered its priority got it back.
 *
 * A thread's CPUs are saved as positions in the set the launcher gave the process (the k-th
 * CPU of that set), and a restart gives the thread the CPUs at the same positions of the set
 * its own launcher gave (modulo its size): a job restarted with another placement keeps each
 * thread where the runtime would have put it, not on core numbers of another node that other
 * ranks may now hold.  CPUs outside the launch set are kept as numbers, where allowed.  A
 * thread whose set is the launch set, or whose nice value is the launch one, is left alone. */
#define _GNU_SOURCE
#include "state_sched.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "mana/park.h"
#include "mana/raw_syscall.h"
#include "state.h"

static cpu_set_t launch_cpus;
static int launch_known, launch_nice;

struct saved_sched {
  uint32_t slot;   /* park record */
  uint32_t pinned; /* 1 when its CPUs are not the launch set */
  int32_t nice;
  uint32_t nice_own;   /* 1 when its nice value is not the launch one */
  cpu_set_t positions; /* bit k: the k-th CPU of the launch set */
  cpu_set_t outside;   /* its CPUs outside the launch set, as numbers */
};

static struct saved_sched saved[MANA_MAX_THREADS];
static uint32_t n_saved;

/* What restore found for each park record, for mana_sched_apply. */
static struct {
  uint32_t set_cpus, set_nice;
  int32_t nice;
  cpu_set_t cpus;
} apply[MANA_MAX_THREADS];

void mana_sched_note_launch(void)
{
  launch_known = sched_getaffinity(0, sizeof(launch_cpus), &launch_cpus) == 0;
  errno = 0;
  int nice = getpriority(PRIO_PROCESS, 0);
  launch_nice = errno ? 0 : nice;
}

static int capture(char *err, size_t errlen)
{
  (void)err, (void)errlen;
  struct mana_park_area *area = MANA_PARK;
  n_saved = 0;
  for (uint32_t i = 0; i < MANA_MAX_THREADS && launch_known; i++) {
    const struct mana_thread_record *r = &area->threads[i];
    if (r->state != MANA_THREAD_PARKED)
      continue;
    struct saved_sched *s = &saved[n_saved];
    memset(s, 0, sizeof(*s));
    s->slot = i;
    cpu_set_t cpus;
    if (sched_getaffinity((pid_t)r->tid, sizeof(cpus), &cpus) == 0 &&
        !CPU_EQUAL(&cpus, &launch_cpus)) {
      s->pinned = 1;
      for (int cpu = 0, k = 0; cpu < CPU_SETSIZE; cpu++) {
        int in_launch = CPU_ISSET(cpu, &launch_cpus);
        if (CPU_ISSET(cpu, &cpus)) {
          if (in_launch)
            CPU_SET(k, &s->positions);
          else
            CPU_SET(cpu, &s->outside);
        }
        k += in_launch;
      }
    }
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)r->tid);
    if (!errno && nice != launch_nice) {
      s->nice_own = 1;
      s->nice = nice;
    }
    if (s->pinned || s->nice_own)
      n_saved++;
  }
  return 0;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  static const char none;
  const void *table = n_saved ? (const void *)saved : &none;
  if (mana_image_add_blob(w, MANA_BLOB_SCHED, table, n_saved * sizeof(saved[0])) != 0)
    return mana_fail(err, errlen, 0, "thread affinity: %s", mana_image_writer_error(w));
  return 0;
}

/* The CPUs at `positions` of this process's launch set (modulo its size), and the numbers in
 * `outside` this process may use. */
static int map_cpus(const struct saved_sched *s, cpu_set_t *out)
{
  int cpus[CPU_SETSIZE], n = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
    if (CPU_ISSET(cpu, &launch_cpus))
      cpus[n++] = cpu;
  CPU_ZERO(out);
  if (!n)
    return 0;
  for (int k = 0; k < CPU_SETSIZE; k++)
    if (CPU_ISSET(k, &s->positions))
      CPU_SET(cpus[k % n], out);
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
      if (CPU_ISSET(cpu, &s->outside) && CPU_ISSET(cpu, &allowed))
        CPU_SET(cpu, out);
  return CPU_COUNT(out) > 0;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const struct saved_sched *s;
  size_t len;
  memset(apply, 0, sizeof(apply));
  if (mana_image_blob(r, MANA_BLOB_SCHED, (const void **)&s, &len) != 0)
    return 0; /* an image from before affinity was saved */
  if (len % sizeof(*s) != 0)
    return mana_fail(err, errlen, 0, "the image's thread affinity record is malformed");
  for (size_t i = 0; i < len / sizeof(*s); i++) {
    if (s[i].slot >= MANA_MAX_THREADS)
      return mana_fail(err, errlen, 0, "the image's thread affinity record is malformed");
    if (s[i].pinned && launch_known)
      apply[s[i].slot].set_cpus = map_cpus(&s[i], &apply[s[i].slot].cpus);
    apply[s[i].slot].set_nice = s[i].nice_own;
    apply[s[i].slot].nice = s[i].nice;
  }
  return 0;
}

void mana_sched_apply(uint32_t slot)
{
  if (slot >= MANA_MAX_THREADS)
    return;
  /* Failures leave the launcher's: CPUs this process may not use, a priority it may not raise. */
  if (apply[slot].set_cpus)
    mana_raw_syscall4(SYS_sched_setaffinity, 0, sizeof(apply[slot].cpus), (long)&apply[slot].cpus,
                      0);
  if (apply[slot].set_nice)
    mana_raw_syscall4(SYS_setpriority, PRIO_PROCESS, 0, apply[slot].nice, 0);
}

const struct mana_state_ops mana_state_sched = {"thread affinity", dump, restore, capture, NULL};
