/* The application's descriptors, read at a checkpoint and put back at a restart: what the
 * kinds of open-file state share (state_files.c, state_unlinked.c). */
#ifndef MANA_LH_APP_FDS_H
#define MANA_LH_APP_FDS_H

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>

/* The open flags and file offset of `fd` (/proc/self/fdinfo); 0, or -1 when unreadable. */
int mana_fd_info(int fd, int32_t *flags, int64_t *pos);

/* The flags to open a saved descriptor's file again with: without those that only made the
 * file (O_CREAT, O_EXCL, O_TRUNC, and O_TMPFILE, which carries O_DIRECTORY: tmpfile() opens
 * with it and the kernel keeps it in the descriptor's flags) or claimed a terminal. */
static inline int mana_fd_reopen_flags(int32_t flags)
{
  return flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_TMPFILE | O_NOCTTY);
}

/* Writes all `bytes` of `data` to `fd` (from its offset); 0, or -1 with errno. */
int mana_fd_write_all(int fd, const char *data, uint64_t bytes);

/* Makes `at` the descriptor `fd` is (unless they are one), moving whatever the launcher left
 * on `at` out of the way first (keeping PMI_FD accurate), with FD_CLOEXEC as `flags` says,
 * then seeks it to `pos` (not for O_APPEND, nor for a negative pos: a pipe).  `fd` is closed in every case but fd == at.
 * Errors name `what`. */
int mana_fd_place(int fd, int at, int32_t flags, int64_t pos, const char *what, char *err,
                  size_t errlen);

/* Calls fn(fd, dup_of, err, errlen) for each descriptor of the anonymous kind `kind`
 * (MANA_ANON_*, app_fd_origin.h) that the application made or duplicated, in /proc/self/fd's
 * order; dup_of is -1, or an earlier such descriptor, itself no duplicate, of the same open
 * file (kcmp).  Stops at the first fn that fails (returns non-zero, err filled).  0, or -1 with
 * err filled. */
int mana_app_anon_fds(uint64_t kind, int (*fn)(int fd, int dup_of, char *err, size_t errlen),
                      char *err, size_t errlen);

/* Makes room for element n of the array at *arr (capacity *cap elements of `size` bytes),
 * doubling it when full: 0, or -1 without memory (the array is left as it was). */
int mana_room_for(void **arr, size_t *cap, size_t n, size_t size);

/* The value of fdinfo line "NAME: VALUE" of `fd` read with `format` (one conversion) into
 * `out`; 0, or -1 when the file or the line is missing. */
int mana_fd_info_field(int fd, const char *name, const char *format, void *out);

#endif
