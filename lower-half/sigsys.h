/* Keeping the upper half's memory inside the window: a seccomp filter traps the upper half's
 * address-choosing mmap/mremap calls and its munmaps, and the SIGSYS handler serves them from
 * the window allocator. */
#ifndef MANA_SIGSYS_H
#define MANA_SIGSYS_H

#include <stdint.h>

/* Installs the SIGSYS handler and the filter (on all threads).  The instruction pointer
 * ranges of upper-half code are taken from the boundary page: the window and a non-PIE
 * application's segments (extra_ranges), so a fresh start and a restart trap the same code. */
int mana_seccomp_install(void);

/* The checkpoint signal is mana's from now on: what the application installs for it is kept
 * aside (app_act: the kernel's struct sigaction, the application's disposition so far), and
 * every mask of the application's blocks it (mana/signals.h). */
void mana_sigsys_keep_aside(int sig, const void *app_act);
/* In a restarted process, before the checkpoint signal of this run is kept aside (if it has
 * one): the restored threads' masks still block the one of the run that wrote the image,
 * which mana_sigsys_restarted_mask takes out again. */
void mana_sigsys_kept_blocked_restored(void);
/* 1 with the application's disposition of sig (unless app_act is NULL) if it is kept aside,
 * else 0. */
int mana_sigsys_kept_aside(int sig, void *app_act);

/* Moves the handlers the upper half installed before the stub registered its dispatcher (a
 * library constructor that ran before the stub's) behind the dispatcher, so that they too run
 * on the application's thread pointer when a signal comes inside MPI.  Called as MPI starts
 * (services.c), before which the application does not enter the lower half for long. */
void mana_sigsys_adopt_early_handlers(void);

/* The kernel mask `mask` of the calling application thread (on its own thread pointer) as the
 * application sees it: with the bits of the signals mana decides on (SIGSYS, the park signal,
 * the checkpoint signal) as the thread last asked them. */
uint64_t mana_sigsys_app_view(uint64_t mask);

/* A mask a thread of the image had (upper_fs: its thread pointer), for the same thread
 * resumed in this restarted process: the checkpoint signal of the run that wrote the image
 * blocked only if the application asked for it, this run's blocked (mana/signals.h). */
uint64_t mana_sigsys_restarted_mask(uint64_t mask, uint64_t upper_fs);

/* Set once upper-half code has asked for MADV_DONTFORK or MADV_WIPEONFORK (trapped): from then
 * on a checkpoint looks for such memory (state_fork_advice.c). */
extern int mana_fork_advice_asked;

/* Counters for tests and diagnostics. */
struct mana_trap_stats {
  uint64_t mmaps, munmaps, mremaps, signal_calls, failures;
};
extern struct mana_trap_stats mana_trap_stats;

#endif
