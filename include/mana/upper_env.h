/* What the lower half adds to the upper half's environment so that the application's ld.so
 * loads mana's stub and its libc starts without rseq (upper-half/environment.c), and the stub
 * takes out again once that ld.so and libc have read it (wrappers/upper_env.c): the
 * application, and every program it starts, sees the job's own environment. */
#ifndef MANA_UPPER_ENV_H
#define MANA_UPPER_ENV_H

/* The stub's directory, put first on LD_LIBRARY_PATH; the variable itself is removed too. */
#define MANA_UPPER_STUB_DIR_ENV "MANA_UPPER_STUB_DIR"
/* Put first on GLIBC_TUNABLES. */
#define MANA_UPPER_TUNABLES "glibc.pthread.rseq=0"

#endif
