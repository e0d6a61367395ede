/* One file per kind of process state, each with its dump (into the image: regions for the
 * memory, a blob for the others) and its restore (from it), registered in mana_state_kinds
 * (checkpoint.c).  The threads are the exception: their records are part of the memory, and
 * recreating them is the restart's last step (state_threads.h). */
#ifndef MANA_STATE_H
#define MANA_STATE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct mana_image_writer;
struct mana_image_reader;

struct mana_state_ops {
  const char *name;
  int (*dump)(struct mana_image_writer *w, char *err, size_t errlen);
  int (*restore)(struct mana_image_reader *r, char *err, size_t errlen);
  /* For state a forked writer cannot see (file offsets the resumed application moves, the
   * signals pending on threads the child does not have): read from the live process before
   * any dump (in the rank, before it forks a writer), and dump writes what was read then.
   * NULL: what dump sees is the state. */
  int (*capture)(char *err, size_t errlen);
  /* 1 with the reason when a forked writer could not see this state as it was at the
   * checkpoint, whatever is captured first (memory the application shares with another
   * process changes under the writer once the application resumes): the rank then writes its
   * image itself.  NULL: never. */
  int (*unforkable)(char *why, size_t len);
};

extern const struct mana_state_ops mana_state_rlimits;   /* state_rlimits.c */
extern const struct mana_state_ops mana_state_memory;    /* state_memory.c */
extern const struct mana_state_ops mana_state_file_maps; /* state_file_maps.c */
/* After the restarted MPI_Init (every rank of the job has restored its state): removes the
 * files a restart made to share the application's removed shared memory again. */
void mana_state_file_maps_remove_restored(void);
/* After the restarted MPI_Init, on every rank: 1 with err filled on every rank alike when ranks
 * that shared the application's shared memory at the checkpoint are now on different nodes
 * (or ranks of different nodes with segments of one name on one), -1 when MPI failed here. */
int mana_state_file_maps_check_placement(char *err, size_t errlen);
/* For the placement check, shared memory of any kind: the key of a segment this rank shares,
 * made at the checkpoint from its host and the segment's identity there ... */
uint64_t mana_state_shared_segment_key(const void *identity, size_t len);
/* ... a hash of the name the ranks of a node find it by again (0: none, they meet at its key) */
uint64_t mana_state_shared_segment_name(const void *name, size_t len);
/* ... and the segment noted at a restart: 0, or -1 without memory. */
int mana_state_shared_segment_note(uint64_t key, uint64_t name);
extern const struct mana_state_ops mana_state_sysv_shm; /* state_sysv_shm.c */
/* After the restarted MPI_Init: marks for removal the System V segments that were marked so at
 * the checkpoint (the restart made them again under a key every rank of a node could find). */
void mana_state_sysv_shm_remove_restored(void);
extern const struct mana_state_ops mana_state_window;  /* state_window.c */
extern const struct mana_state_ops mana_state_signals; /* state_signals.c */
/* After a restarted rank's MPI_Init, which installs MPICH's own handlers (SIGUSR1): the
 * application's dispositions from the image again. */
int mana_state_signals_reapply(char *err, size_t errlen);
extern const struct mana_state_ops mana_state_files; /* state_files.c */
/* 1 when path is the checkpoint directory, in it, or a generation directory: mana's. */
int mana_is_mana_path(const char *path);
extern const struct mana_state_ops mana_state_written_files; /* state_written_files.c */
/* After the restarted MPI_Init, once the restart goes ahead on every rank: the files the
 * application wrote that grew after the checkpoint cut back (MPI_Barrier after it on every
 * rank, before any resumes). */
int mana_state_written_files_cut_back(char *err, size_t errlen);
extern const struct mana_state_ops mana_state_unlinked;    /* state_unlinked.c */
extern const struct mana_state_ops mana_state_memfd;       /* state_memfd.c */
extern const struct mana_state_ops mana_state_fork_advice; /* state_fork_advice.c */
/* Around the fork of a writer, with the application parked: the captured ranges' advice
 * lifted, so that the writer has their content (0, or -1 with err filled, nothing lifted)... */
int mana_fork_advice_lift(char *err, size_t errlen);
/* ... and given again in the rank. */
void mana_fork_advice_give_back(void);
extern const struct mana_state_ops mana_state_pipes;    /* state_pipes.c */
extern const struct mana_state_ops mana_state_eventfds; /* state_eventfds.c */
extern const struct mana_state_ops mana_state_timerfds; /* state_timerfds.c */
/* Next to mana_state_timers_arm: the timerfds, made at restore, armed. */
void mana_state_timerfds_arm(void);
extern const struct mana_state_ops mana_state_signalfds; /* state_signalfds.c */
extern const struct mana_state_ops mana_state_epolls;    /* state_epolls.c */
extern const struct mana_state_ops mana_state_pending;   /* state_pending.c */
/* On the main thread, every signal blocked, once released from a park (tid 0: the signals
 * taken off the process's queue at the capture, queued to the process again) or resumed in a
 * restarted process (its id: the image's, queued to it): each with its siginfo (raw: the
 * upper half's FS). */
void mana_state_pending_requeue(uint32_t pid, uint32_t tid);
/* On any other thread released from a park: returns once the main thread has queued those
 * signals again, so that the thread decides whether a signal of the application's ended its
 * wait (interrupted_calls.c) with them pending, as they were (a poll made again took its
 * SIGALRM just before the call and waited on: mpi.signal_in_park).  Raw: the upper half's FS. */
void mana_state_pending_wait_requeued(void);
extern const struct mana_state_ops mana_state_umask;  /* state_umask.c */
extern const struct mana_state_ops mana_state_timers; /* state_timers.c */
/* After every other kind and with every signal blocked, just before the main thread resumes:
 * the interval timers restored, armed (an expiry earlier would run the application's handler
 * on the lower half's thread pointer). */
void mana_state_timers_arm(void);
extern const struct mana_state_ops mana_state_posix_timers; /* state_posix_timers.c */
/* Next to mana_state_timers_arm: the POSIX timers, made at restore, armed. */
void mana_state_posix_timers_arm(void);
/* 1 with *info filled when a restored POSIX timer sends `sig` (raw: the upper half's FS). */
int mana_posix_timer_siginfo(int sig, siginfo_t *info);
extern const struct mana_state_ops mana_state_sched;        /* state_sched.c */
extern const struct mana_state_ops mana_state_thread_names; /* state_thread_names.c */
extern const struct mana_state_ops mana_state_clocks;       /* state_clocks.c */
extern const struct mana_state_ops mana_state_cwd;          /* state_cwd.c */

/* In dump and restore order; the resource limits first (the rest may need a raised one), then
 * the memory (the others may restore into it). */
extern const struct mana_state_ops *const mana_state_kinds[];

#endif
