/*
 * unlinked_files.c - files a program keeps open after removing them, as scratch files are:
 * a tmpfile(); a file opened read-write and removed, with a duplicate of its descriptor (one
 * offset for both) and another opening of it through /proc/self/fd (an offset of its own,
 * which reads what the other two wrote); a removed file opened write-only with O_APPEND and
 * read through another opening.  Every round writes a line through each writer, reads back
 * and checks everything, and reduces on MPI_COMM_WORLD: a checkpoint may fall anywhere, and a
 * restart must give back each file with its content, every offset, the sharing between
 * descriptors, and no name.  Files are made in TMPDIR (else /tmp).
 * Ranks: 2.  Arguments: [ROUNDS].
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpitest.h"

static int removed_file(const char *dir, int flags)
{
  char path[4200];
  snprintf(path, sizeof(path), "%s/unlinked_files.XXXXXX", dir);
  int fd = mkstemp(path);
  if (fd < 0)
    mt_die("mkstemp failed");
  if (flags != O_RDWR) {
    char link[64];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    int again = open(link, flags);
    close(fd);
    fd = again;
  }
  if (fd < 0 || unlink(path) != 0)
    mt_die("cannot make a removed file");
  return fd;
}

static int open_again(int fd, int flags)
{
  char link[64];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  int again = open(link, flags);
  if (again < 0)
    mt_die("cannot open a removed file again");
  return again;
}

static void put(int fd, const char *s)
{
  size_t len = strlen(s);
  if (write(fd, s, len) != (ssize_t)len)
    mt_die("write failed");
}

/* What the round's writers wrote up to and including round `last`. */
static void expected(char *out, size_t cap, int rank, int last, const char *who)
{
  size_t at = 0;
  out[0] = '\0';
  for (int r = 0; r <= last && at < cap; r++)
    at += (size_t)snprintf(out + at, cap - at, "%s round %d rank %d\n", who, r, rank);
}

static int whole_file_is(int fd, const char *want)
{
  static char got[1 << 16];
  ssize_t n = pread(fd, got, sizeof(got) - 1, 0);
  if (n < 0)
    return 0;
  got[n] = '\0';
  return strcmp(got, want) == 0;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("unlinked_files");
  mt_require_size(2);
  int rounds = (int)mt_arg("unlinked_files", argc, argv, 1, 20);
  const char *dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  int me = mt_.rank;
  FILE *scratch = tmpfile();
  if (!scratch)
    mt_die("tmpfile failed");
  int rw = removed_file(dir, O_RDWR), rw_dup = dup(rw), reader = open_again(rw, O_RDONLY);
  int app = removed_file(dir, O_WRONLY | O_APPEND), app_reader = open_again(app, O_RDONLY);
  static char want[1 << 16], line[128];
  long written = 0, bad_rounds = 0;
  for (int r = 0; r < rounds; r++) {
    int bad = 0;
    fprintf(scratch, "scratch round %d rank %d\n", r, me);
    fflush(scratch);
    snprintf(line, sizeof(line), "rw round %d rank %d\n", r, me);
    put(rw, line);
    written += (long)strlen(line);
    snprintf(line, sizeof(line), "dup round %d rank %d\n", r, me);
    put(rw_dup, line);
    written += (long)strlen(line);
    snprintf(line, sizeof(line), "app round %d rank %d\n", r, me);
    put(app, line);
    /* the offsets: shared by rw and its duplicate, the reader's own */
    bad += lseek(rw, 0, SEEK_CUR) != written || lseek(rw_dup, 0, SEEK_CUR) != written;
    char got[256] = "", both[256];
    size_t len = (size_t)snprintf(both, sizeof(both), "rw round %d rank %d\ndup round %d rank %d\n",
                                  r, me, r, me);
    bad += read(reader, got, len) != (ssize_t)len || memcmp(got, both, len) != 0;
    /* the whole of each file */
    expected(want, sizeof(want), me, r, "scratch");
    bad += !whole_file_is(fileno(scratch), want);
    expected(want, sizeof(want), me, r, "app");
    bad += !whole_file_is(app_reader, want);
    struct stat st;
    bad += fstat(rw, &st) != 0 || st.st_nlink != 0 || st.st_size != written;
    if (bad)
      mt_check(0, "round %d: %d of the files' checks failed", r, bad);
    bad_rounds += bad != 0;
    mt_allreduce_steps(1);
  }
  mt_check_int("rounds whose files were all as written", rounds - bad_rounds, rounds);
  fclose(scratch);
  close(rw);
  close(rw_dup);
  close(reader);
  close(app);
  close(app_reader);
  return mt_end();
}
