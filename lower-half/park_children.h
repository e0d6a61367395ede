/* Parking at a moment when the application has no child process (park_children.c). */
#ifndef MANA_LH_PARK_CHILDREN_H
#define MANA_LH_PARK_CHILDREN_H

#include <stddef.h>

/* How long a checkpoint waits for the application's child processes to be gone, unless the
 * environment says otherwise (MANA_CHILDREN_WAIT_MS, read by mana_children_wait_ms). */
#define MANA_CHILDREN_WAIT_MS 10000
int mana_children_wait_ms(void);

enum park_children_outcome {
  PARK_CHILDREN_NONE = 0,    /* every thread parked, no child process */
  PARK_CHILDREN_FAILED = -1, /* a thread did not park: err says why */
  PARK_CHILDREN_REMAIN = -2, /* still a child process after wait_ms: err names it */
};

/* Parks every upper-half thread (mana_park_all); while the process has a child, releases the
 * threads, lets them run a few milliseconds and parks them again, for up to wait_ms. */
enum park_children_outcome mana_park_without_children(int signo, int park_timeout_ms, int wait_ms,
                                                      char *err, size_t errlen);

/* 1 when the process has a child process, live or not yet waited for, with the first one
 * described in why ("process 1234 (sh)"); 0 when none; -1 when /proc cannot tell. */
int mana_child_process(char *why, size_t len);

#endif
