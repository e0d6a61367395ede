/* Types of the state blobs a rank's image carries besides its memory regions. */
#ifndef MANA_IMAGE_BLOBS_H
#define MANA_IMAGE_BLOBS_H

enum mana_blob_type {
  MANA_BLOB_WINDOW_FREE = 1,      /* the window allocator's free extents (lower-half memory) */
  MANA_BLOB_SIGNALS = 2,          /* dispositions of signals the upper half set */
  MANA_BLOB_FILES = 3,            /* the upper half's open regular files */
  MANA_BLOB_RANK = 4,             /* MPI facts of the rank: thread level, ... */
  MANA_BLOB_PENDING_SIGNALS = 5,  /* signals pending on parked threads and on the process */
  MANA_BLOB_CWD = 6,              /* the process's working directory, absolute */
  MANA_BLOB_UNLINKED_FILE = 7,    /* one removed file the upper half keeps open, with content */
  MANA_BLOB_UMASK = 8,            /* the process's file mode creation mask */
  MANA_BLOB_TIMERS = 9,           /* the process's interval timers */
  MANA_BLOB_SCHED = 10,           /* CPU affinity and nice value of each parked thread */
  MANA_BLOB_FILE_MAP = 11,        /* one range the upper half maps shared from a regular file */
  MANA_BLOB_PIPE = 12,            /* one pipe the upper half holds both ends of, with its bytes */
  MANA_BLOB_POSIX_TIMERS = 13,    /* the upper half's POSIX timers (timer_create) */
  MANA_BLOB_SYSV_SHM = 14,        /* one range the upper half attaches of System V shared memory */
  MANA_BLOB_WRITTEN_FILE = 15,    /* the size and path of one file the upper half wrote */
  MANA_BLOB_MEMFD = 16,           /* one memfd of the upper half: descriptors, ranges, content */
  MANA_BLOB_FORK_ADVICE = 17,     /* upper-half ranges advised MADV_DONTFORK or MADV_WIPEONFORK */
  MANA_BLOB_RLIMITS = 18,         /* the process's resource limits */
  MANA_BLOB_THREAD_NAMES = 19,    /* the name of each parked thread */
  MANA_BLOB_EVENTFDS = 20,        /* the upper half's eventfds: descriptors, flags, counts */
  MANA_BLOB_CLOCKS = 21,          /* the clocks' readings at the checkpoint and their offsets */
  MANA_BLOB_EPOLLS = 22,          /* the upper half's epoll instances and their watches */
  MANA_BLOB_TIMERFDS = 23,        /* the upper half's timerfds: clocks, times left, counts */
  MANA_BLOB_SIGNALFDS = 24,       /* the upper half's signalfds: descriptors, flags, masks */
  MANA_BLOB_PENDING_SIGINFO = 25, /* each signal pending on the process, with its siginfo */
};

#endif
