/* The regular files the application opened for writing (written_files.c). */
#ifndef MANA_LH_WRITTEN_FILES_H
#define MANA_LH_WRITTEN_FILES_H

#include <stdint.h>

/* Makes open, openat, openat2 or creat (nr) that upper-half code made for writing, with the
 * call's six arguments, and notes the file it opened; returns what the system call returns.
 * Raw system calls only: the SIGSYS handler runs it on the application's thread pointer. */
long mana_written_files_open(long nr, const long args[6]);

/* Notes the file at path (absolute) with this device and inode (a restart notes again the
 * files its image names). */
void mana_written_files_note(uint64_t dev, uint64_t ino, const char *path);

/* Calls fn for each file noted, with its device, inode and path, until fn returns non-zero
 * (returned).  Only with the application's threads parked or not yet running. */
int mana_written_files_each(int (*fn)(uint64_t dev, uint64_t ino, const char *path, void *arg),
                            void *arg);

#endif
