/* The contract between the two halves of a mana process.
 *
 * The lower half (mana_lh) writes one `struct mana_boundary` at the very start of the upper-half
 * window before it starts the upper half; the stub MPI library finds it at that fixed address,
 * so no symbol lookup, environment variable or relocation is needed to cross over.  The page is
 * inside the window and therefore part of every checkpoint image, but a restarted lower half
 * rewrites every field that points into the lower half before the upper half runs again.
 *
 * Only fixed-size fields here: both halves are built from this header at once, but a restart
 * may map an image written by an earlier build, which MANA_BOUNDARY_VERSION detects. */
#ifndef MANA_BOUNDARY_H
#define MANA_BOUNDARY_H

#include <stddef.h>
#include <stdint.h>

#define MANA_WINDOW_BASE 0x600000000000UL
#define MANA_WINDOW_SIZE 0x010000000000UL /* 1 TiB of address space, reserved not committed */
#define MANA_WINDOW_END (MANA_WINDOW_BASE + MANA_WINDOW_SIZE)

#define MANA_BOUNDARY_MAGIC 0x6d616e61626e6479UL /* "manabndy" */
#define MANA_BOUNDARY_VERSION 1

struct mana_lh_table; /* generated: one pointer per real MPI function plus lower-half services */

/* Extra ranges of upper-half memory outside the window (a non-PIE application's segments). */
#define MANA_MAX_EXTRA_RANGES 8
struct mana_range {
  uint64_t start, end;
};

struct mana_boundary {
  uint64_t magic;
  uint32_t version;
  uint32_t have_fsgsbase; /* 0: switch FS with arch_prctl */

  /* Lower half's thread pointer for MPI calls made from the upper half. */
  uint64_t lower_fs;
  /* The upper half's thread pointer of the thread currently inside MPI; callbacks from MPI into
   * application code (user ops, error handlers, attribute functions) switch back to it. */
  volatile uint64_t caller_upper_fs;

  const struct mana_lh_table *lh;

  /* Set by the checkpoint machinery; blocking wrappers poll it between progress calls. */
  volatile uint32_t park_requested;
  uint32_t restarted; /* number of restarts this upper half has been through */

  uint32_t n_extra_ranges;
  struct mana_range extra_ranges[MANA_MAX_EXTRA_RANGES];

  /* Set by a restarting lower half: what a resumed thread does before it goes on (the main
   * thread runs the stub's restart hook, the others wait for it).  Argument: its record. */
  void (*restart_resume)(void *thread_record);
  /* Registered by the stub: rebuilds the MPI objects after a restart, on the main thread. */
  void (*stub_restart_hook)(void);

  /* Where the upper half was loaded, for tools and the checkpoint writer. */
  uint64_t app_base, ldso_base, stack_low, stack_high;

  /* Registered by the stub: 1 if every MPI object it holds can be rebuilt at restart, else 0
   * with a one-line reason in `reason` (a pending request, an intercommunicator, an open
   * file, ...).  Called while the application is parked, from any thread: it reads the
   * stub's records only, makes no MPI call and uses no thread-local state. */
  int (*stub_can_checkpoint)(char *reason, size_t len);
};

#define MANA_BOUNDARY ((struct mana_boundary *)MANA_WINDOW_BASE)

#endif
