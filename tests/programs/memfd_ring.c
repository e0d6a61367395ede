/*
 * memfd_ring.c - memory made with memfd_create, in the two ways programs use it: a ring buffer
 * mapped twice back to back (a record that runs past the end goes on at the start through
 * the second view, without a copy; logging and queue libraries do this), and a scratch file
 * kept only through its descriptor, written with write() and read back with pread().
 *
 * Each rank makes the ring's memfd, maps it shared over both halves of a reservation twice its
 * size and closes the descriptor (the mappings keep the memory).  Every round it writes a
 * record at the ring's head through the first view, the record's end wrapping into the second,
 * and checks every byte of both views against a private model of the ring; it appends a line
 * to the scratch memfd (made with MFD_ALLOW_SEALING and sealed against shrinking) and checks
 * its size, seals and name, that a duplicate of its descriptor shares its offset, and that a
 * second opening (read-only, through /proc/self/fd) reads that line at its own offset; then it
 * reduces on MPI_COMM_WORLD (the checkpoints fall there).  A third memfd, a table of three
 * pages kept through its descriptor with only its first page mapped, gets a value per round
 * stored through the mapping and written with pwrite() into its third page; both must read
 * back through the descriptor, with every earlier round's.
 * At the end it reads the scratch memfd from its start and checks every line.
 * Ranks: any.  Arguments: [ROUNDS].
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpitest.h"

enum { RING = 4 * 4096, RECORD = 3001, LINE = 64, LINE_LEN = 27 }; /* LINE_LEN: as printed */
enum { PAGE = 4096, TABLE = 3 * PAGE, SLOTS = PAGE / sizeof(int) };

static void record_bytes(unsigned char *rec, int round, int rank)
{
  for (int i = 0; i < RECORD; i++)
    rec[i] = (unsigned char)(round * 31 + rank * 7 + i);
}

static void line_text(char *line, int round, int rank)
{
  snprintf(line, LINE, "rank %3d round %5d memfd\n", rank, round);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("memfd_ring");
  int rounds = (int)mt_arg("memfd_ring", argc, argv, 1, 40);
  int me = mt_.rank;

  int ring_fd = memfd_create("ring", MFD_CLOEXEC);
  if (ring_fd < 0 || ftruncate(ring_fd, RING) != 0)
    mt_die("cannot make the ring's memfd");
  unsigned char *views = mmap(NULL, 2 * RING, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (views == MAP_FAILED ||
      mmap(views, RING, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, ring_fd, 0) == MAP_FAILED ||
      mmap(views + RING, RING, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, ring_fd, 0) ==
          MAP_FAILED)
    mt_die("cannot map the ring twice");
  close(ring_fd);

  int scratch = memfd_create("scratch", MFD_ALLOW_SEALING);
  if (scratch < 0 || fcntl(scratch, F_ADD_SEALS, F_SEAL_SHRINK) != 0)
    mt_die("cannot make the sealed scratch memfd");
  char link[64];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", scratch);
  int twin = dup(scratch), reader = open(link, O_RDONLY);
  if (twin < 0 || reader < 0)
    mt_die("cannot duplicate or open the scratch memfd again");

  int table = memfd_create("table", MFD_CLOEXEC);
  int *first_page = MAP_FAILED;
  if (table < 0 || ftruncate(table, TABLE) != 0 ||
      (first_page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, table, 0)) == MAP_FAILED)
    mt_die("cannot make and map the table's memfd");

  unsigned char *model = mt_alloc(RING), rec[RECORD];
  char line[LINE];
  long head = 0, bad_rounds = 0;
  for (int r = 0; r < rounds; r++) {
    record_bytes(rec, r, me);
    memcpy(views + head, rec, RECORD); /* past views + RING it lands in the second view */
    for (int i = 0; i < RECORD; i++)
      model[(head + i) % RING] = rec[i];
    head = (head + RECORD) % RING;
    long wrong = 0;
    for (int i = 0; i < RING; i++)
      wrong += (views[i] != model[i]) + (views[RING + i] != model[i]);
    if (wrong)
      mt_check(0, "round %d: %ld bytes of the ring's two views differ from what was written", r,
               wrong);

    line_text(line, r, me);
    int bad_file = write(scratch, line, strlen(line)) != (ssize_t)strlen(line);
    struct stat st = {0};
    char name[64] = "", back[LINE] = "";
    ssize_t n = readlink(link, name, sizeof(name) - 1);
    if (n > 0)
      name[n] = '\0';
    if (bad_file || fstat(scratch, &st) != 0 || st.st_size != (off_t)(r + 1) * LINE_LEN ||
        fcntl(scratch, F_GET_SEALS) != F_SEAL_SHRINK || strncmp(name, "/memfd:scratch", 14) != 0 ||
        lseek(twin, 0, SEEK_CUR) != st.st_size || read(reader, back, LINE_LEN) != LINE_LEN ||
        memcmp(back, line, LINE_LEN) != 0) {
      mt_check(0, "round %d: the scratch memfd (%s, %lld bytes, seals %d): %s", r, name,
               (long long)st.st_size, fcntl(scratch, F_GET_SEALS), strerror(errno));
      bad_file = 1;
    }
    int value = r * 1009 + me + 1, mapped = 0, third[SLOTS], bad_table = 0;
    first_page[r % SLOTS] = value;
    if (pwrite(table, &value, sizeof(value), 2 * PAGE + (off_t)sizeof(int) * (r % SLOTS)) !=
            (ssize_t)sizeof(value) ||
        pread(table, &mapped, sizeof(mapped), (off_t)sizeof(int) * (r % SLOTS)) !=
            (ssize_t)sizeof(mapped) ||
        pread(table, third, sizeof(third), 2 * PAGE) != (ssize_t)sizeof(third))
      bad_table = 1;
    for (int i = 0; i <= r && i < (int)SLOTS && !bad_table; i++)
      bad_table = third[i] != i * 1009 + me + 1;
    if (bad_table || mapped != value) {
      mt_check(0,
               "round %d: the table memfd read back %d through its descriptor for %d stored "
               "through its mapping, or lost a value written into its unmapped page",
               r, mapped, value);
      bad_table = 1;
    }
    bad_rounds += wrong != 0 || bad_file || bad_table;
    mt_allreduce_steps(1);
  }
  mt_check_int("rounds whose ring and scratch and table memfds held what was written",
               rounds - bad_rounds, rounds);

  char *all = mt_alloc((size_t)rounds * LINE + 1);
  ssize_t got = pread(scratch, all, (size_t)rounds * LINE, 0);
  int lines_ok = 0;
  for (int r = 0; got > 0 && r < rounds; r++) {
    line_text(line, r, me);
    lines_ok += memcmp(all + (size_t)r * LINE_LEN, line, LINE_LEN) == 0;
  }
  mt_check_int("lines read back from the scratch memfd", lines_ok, rounds);
  mt_check_int("scratch memfd's bytes", (long long)got, (long long)rounds * LINE_LEN);
  mt_check_int("shrinking the sealed memfd refused", ftruncate(scratch, 0) != 0 && errno == EPERM,
               1);
  munmap(first_page, PAGE);
  close(table);
  close(reader);
  close(twin);
  close(scratch);
  munmap(views, 2 * RING);
  free(all);
  free(model);
  return mt_end();
}
