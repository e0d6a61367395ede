/*
 * dir_handles.c - directories kept open: a DIR stream read one entry per round, and a
 * descriptor used with openat and fstatat, as a program that walks its input directory or
 * works relative to a directory does.  A restarted process had neither (every check of every
 * round after a restart failed; lower-half/state_files.c reopens them).
 *
 * Each rank makes a directory of its own with 10 files, opens it twice and every round takes
 * the next entry of the stream (starting over at its end), opens one file through the
 * descriptor and checks its content; each whole pass over the stream must name every entry
 * once: a stream whose descriptor came back at offset 0 would name them twice.
 * Ranks: 2.  Arguments: [ROUNDS].
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpitest.h"

#define NFILES 10

static void make_files(const char *dir)
{
  for (int i = 0; i < NFILES; i++) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/f%d", dir, i);
    FILE *f = fopen(path, "w");
    if (!f)
      mt_die("cannot make the test files");
    fprintf(f, "file %d\n", i);
    fclose(f);
  }
}

/* 1 when file i, read through the directory descriptor, holds what make_files wrote. */
static int file_reads_back(int dfd, int i)
{
  char name[16], want[32], got[32] = "";
  snprintf(name, sizeof(name), "f%d", i);
  snprintf(want, sizeof(want), "file %d\n", i);
  struct stat st;
  int fd = openat(dfd, name, O_RDONLY);
  if (fd < 0 || fstatat(dfd, name, &st, 0) != 0 || st.st_size != (off_t)strlen(want)) {
    if (fd >= 0)
      close(fd);
    return 0;
  }
  ssize_t n = read(fd, got, sizeof(got) - 1);
  close(fd);
  return n == (ssize_t)strlen(want) && memcmp(got, want, strlen(want)) == 0;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("dir_handles");
  mt_require_size(2);
  int rounds = (int)mt_arg("dir_handles", argc, argv, 1, 60);
  const char *tmp = getenv("TMPDIR");
  char dir[4096];
  snprintf(dir, sizeof(dir), "%s/mana-dir-handles.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir))
    mt_die("mkdtemp failed");
  make_files(dir);
  DIR *stream = opendir(dir);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  if (!stream || dfd < 0)
    mt_die("cannot open the directory");

  int seen[NFILES + 2] = {0}; /* the files, then "." and ".." */
  long passes = 0, bad_passes = 0, bad_files = 0;
  for (int r = 0; r < rounds; r++) {
    struct dirent *e = readdir(stream);
    if (!e) { /* a pass is over: every entry once */
      int ok = 1;
      for (int i = 0; i < NFILES + 2; i++)
        ok &= seen[i] == 1;
      passes++;
      bad_passes += !ok;
      memset(seen, 0, sizeof(seen));
      rewinddir(stream);
      e = readdir(stream);
    }
    if (e && strcmp(e->d_name, ".") == 0)
      seen[NFILES]++;
    else if (e && strcmp(e->d_name, "..") == 0)
      seen[NFILES + 1]++;
    else if (e && e->d_name[0] == 'f' && atoi(e->d_name + 1) < NFILES)
      seen[atoi(e->d_name + 1)]++;
    bad_files += !file_reads_back(dfd, r % NFILES);
    mt_allreduce_steps(1);
  }
  mt_check_int("passes over the directory", passes, (rounds - 1) / (NFILES + 2));
  mt_check_int("passes that named an entry twice or missed one", bad_passes, 0);
  mt_check_int("files not read back through the directory descriptor", bad_files, 0);
  closedir(stream);
  close(dfd);
  for (int i = 0; i < NFILES; i++) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/f%d", dir, i);
    unlink(path);
  }
  rmdir(dir);
  return mt_end();
}
