/* Reading the application's memory from a SIGSYS handler, where a bad pointer the
 * application passed must become the call's error, not a fault of the handler. */
#ifndef MANA_APP_MEMORY_H
#define MANA_APP_MEMORY_H

#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "mana/raw_syscall.h"

/* Copies `len` bytes at `src` to `dst`: 0, or -EFAULT as the kernel would have answered. */
static inline long mana_read_app(void *dst, uint64_t src, size_t len)
{
  struct iovec local = {dst, len}, remote = {(void *)(uintptr_t)src, len};
  long pid = mana_raw_syscall4(SYS_getpid, 0, 0, 0, 0);
  long r = mana_raw_syscall6(SYS_process_vm_readv, pid, (long)&local, 1, (long)&remote, 1, 0);
  return r == (long)len ? 0 : (r < 0 ? r : -EFAULT);
}

#endif
