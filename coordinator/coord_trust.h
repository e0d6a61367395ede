/* coord_trust: whether a checkpoint directory and what it holds may be trusted.
 *
 * A restart runs the code and data a checkpoint holds with the restarting user's rights, so a
 * checkpoint another user could have changed must never be restarted: a directory made by
 * someone else (a 0777 one in /tmp, say), or a generation, LATEST, MANIFEST or image that
 * belongs to another user or that group or others may write.  root's files are trusted (a
 * site may prepare directories as root).  One owner for the rule: the coordinator checks the
 * directory it writes, mana_restart and the restarting ranks everything they read. */
#ifndef COORD_TRUST_H
#define COORD_TRUST_H

#include <stddef.h>

/* 0 if path (a directory when dir is set, else a regular file) belongs to this user or root
 * and, but for a checkpoint directory itself (top set), no one else may write it; -1 with one
 * line in err naming the path, its owner or mode, and the fix. */
int coord_trusted(const char *path, int dir, int top, char *err, size_t errlen);

#endif
