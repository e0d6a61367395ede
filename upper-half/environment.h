/* The upper half's environment: the job's own, with mana's stub library directory first on
 * LD_LIBRARY_PATH (so the application's libmpich.so.12 is the stub) and glibc's rseq
 * registration off (the second libc's registration would fail), and the stub's directory named
 * (mana/upper_env.h), so that the stub can undo both once the application's ld.so and libc
 * have read them.  The lower half's environment is never changed in these ways. */
#ifndef MANA_ENVIRONMENT_H
#define MANA_ENVIRONMENT_H

/* Returns a NULL-terminated, malloc'd copy of `envp` adjusted for the upper half. */
char **mana_upper_environment(char *const envp[], const char *stub_dir);

#endif
