/* The application's clocks across restarts (docs/architecture.md, "The application's
 * clocks").  A restart on another node, or after a reboot, finds CLOCK_MONOTONIC and
 * CLOCK_BOOTTIME at another origin: the application would see them jump by days or run
 * backwards.  So the upper half reads them through mana's stand-in for the vDSO
 * (upper-half/vdso/), which adds an offset the restart sets, and the calls that take an
 * absolute time on those clocks are trapped and given the kernel's time (clock_calls.c).
 * Shared by the stand-in, which must stay free of libc, and the lower half. */
#ifndef MANA_APP_CLOCKS_H
#define MANA_APP_CLOCKS_H

#include <stdint.h>

enum { MANA_CLOCK_OFF_MONOTONIC, MANA_CLOCK_OFF_BOOTTIME, MANA_CLOCK_N_OFFSETS };

/* The offset that applies to a clock id, or -1: CLOCK_MONOTONIC (1), _RAW (4) and _COARSE (6)
 * take the monotonic one, CLOCK_BOOTTIME (7) and _ALARM (9) the boot-time one; the others
 * (real time, TAI, CPU-time clocks) none, as in a time namespace. */
static inline int mana_clock_offset_index(long clockid)
{
  switch (clockid) {
  case 1:
  case 4:
  case 6:
    return MANA_CLOCK_OFF_MONOTONIC;
  case 7:
  case 9:
    return MANA_CLOCK_OFF_BOOTTIME;
  default:
    return -1;
  }
}

/* The kernel's vDSO entry points the stand-in forwards to (0: not in this kernel's vDSO; the
 * stand-in then makes the system call). */
enum {
  MANA_VDSO_CLOCK_GETTIME,
  MANA_VDSO_GETTIMEOFDAY,
  MANA_VDSO_TIME,
  MANA_VDSO_GETCPU,
  MANA_VDSO_CLOCK_GETRES,
  MANA_VDSO_N_ENTRIES
};

#define MANA_NSEC_PER_SEC 1000000000LL

#endif
