/*
 * drain_files.c - open MPI files survive a drain and a rebuild in place at their file
 * pointers: a file on MPI_COMM_WORLD opened with MPI_MODE_CREATE | MPI_MODE_EXCL (reopened
 * without them) with a view whose filetype is a vector (freed right after MPI_File_set_view),
 * a file on a duplicate of MPI_COMM_WORLD (freed while the file stays open) written at the
 * shared pointer with MPI_File_write_ordered, and a file per rank on MPI_COMM_SELF with
 * atomicity set and an MPI_File_iwrite pending across the drain.  The program writes, drains
 * and rebuilds, goes on writing at both pointers, drains and rebuilds again, and prints the
 * pointers and everything it reads back.
 * Ranks: 2.
 */
#include <unistd.h>

#include "drain.h"

#define NAME_LEN 256

static void print_ints(const char *what, const int *v, int n)
{
  mt_append("%s:", what);
  for (int i = 0; i < n; i++)
    mt_append(" %d", v[i]);
  mt_append("\n");
}

static void positions(const char *when, MPI_File a, MPI_File b, MPI_File c)
{
  MPI_Offset pa = -1, pb = -1, pc = -1;
  MPI_File_get_position(a, &pa);
  MPI_File_get_position_shared(b, &pb);
  MPI_File_get_position(c, &pc);
  mt_log("%s: view pointer %lld, shared pointer %lld, self pointer %lld", when, (long long)pa,
         (long long)pb, (long long)pc);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("drain_files");
  mt_require_size(2);
  int me = mt_.rank, n = mt_.size;

  /* The directory: rank 0 makes it and tells the others. */
  char dir[NAME_LEN] = "";
  if (me == 0) {
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, sizeof(dir), "%s/mana_files_XXXXXX", tmp);
    if (!mkdtemp(dir))
      mt_die("mkdtemp failed");
  }
  MPI_Bcast(dir, NAME_LEN, MPI_CHAR, 0, MPI_COMM_WORLD);
  char name_a[NAME_LEN + 16], name_b[NAME_LEN + 16], name_c[NAME_LEN + 16];
  snprintf(name_a, sizeof(name_a), "%s/view", dir);
  snprintf(name_b, sizeof(name_b), "%s/shared", dir);
  snprintf(name_c, sizeof(name_c), "%s/self%d", dir, me);

  /* File A: each rank owns 2 of every 2n ints, twice per period of 4n ints. */
  MPI_File a, b, c;
  mt_check(MPI_File_open(MPI_COMM_WORLD, name_a, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR,
                         MPI_INFO_NULL, &a) == MPI_SUCCESS,
           "open A");
  MPI_Datatype vec, filetype;
  MPI_Type_vector(2, 2, 2 * n, MPI_INT, &vec);
  MPI_Type_create_resized(vec, 0, (MPI_Aint)(4 * n * sizeof(int)), &filetype);
  MPI_Type_commit(&filetype);
  MPI_File_set_view(a, (MPI_Offset)(me * 2 * sizeof(int)), MPI_INT, filetype, "native",
                    MPI_INFO_NULL);
  MPI_Type_free(&filetype);
  MPI_Type_free(&vec);

  /* File B: on a duplicate the program frees at once. */
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  mt_check(MPI_File_open(dup, name_b, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &b) ==
               MPI_SUCCESS,
           "open B");
  MPI_Comm_free(&dup);
  MPI_File_set_view(b, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);

  /* File C: this rank's own. */
  mt_check(MPI_File_open(MPI_COMM_SELF, name_c, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                         &c) == MPI_SUCCESS,
           "open C");
  MPI_File_set_atomicity(c, 1);

  int buf[16], next = 100 * (me + 1);
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < 6; i++)
      buf[i] = next++;
    MPI_File_write_all(a, buf, 6, MPI_INT, MPI_STATUS_IGNORE);
    for (int i = 0; i < 3; i++)
      buf[i] = next++;
    MPI_File_write_ordered(b, buf, 3, MPI_INT, MPI_STATUS_IGNORE);
    for (int i = 0; i < 5; i++)
      buf[i] = next++;
    MPI_File_write(c, buf, 2, MPI_INT, MPI_STATUS_IGNORE);
    MPI_Request req;
    MPI_File_iwrite(c, buf + 2, 3, MPI_INT, &req);
    positions(round ? "before the second drain" : "before the first drain", a, b, c);

    drain_checked(round ? "the second time" : "the first time", 1);

    MPI_Status st;
    MPI_Wait(&req, &st);
    int count = -1;
    MPI_Get_count(&st, MPI_INT, &count);
    mt_check_int("iwrite pending across the drain wrote", count, 3);
    int atomic = 0;
    MPI_File_get_atomicity(c, &atomic);
    mt_check_int("atomicity of C", atomic, 1);
    positions(round ? "after the second rebuild" : "after the first rebuild", a, b, c);
  }
  for (int i = 0; i < 4; i++)
    buf[i] = next++;
  MPI_File_write_all(a, buf, 4, MPI_INT, MPI_STATUS_IGNORE);
  for (int i = 0; i < 2; i++)
    buf[i] = next++;
  MPI_File_write_ordered(b, buf, 2, MPI_INT, MPI_STATUS_IGNORE);
  positions("at the end", a, b, c);

  /* Everything, read back through the same handles. */
  MPI_File_sync(a);
  MPI_File_seek(a, 0, MPI_SEEK_SET);
  MPI_File_read_all(a, buf, 16, MPI_INT, MPI_STATUS_IGNORE);
  print_ints("A through my view", buf, 16);
  MPI_File_sync(b);
  MPI_File_read_at_all(b, 0, buf, 16, MPI_INT, MPI_STATUS_IGNORE);
  print_ints("B", buf, 16);
  MPI_File_read_at(c, 0, buf, 10, MPI_INT, MPI_STATUS_IGNORE);
  print_ints("C", buf, 10);
  MPI_Offset sa = 0, sb = 0, sc = 0;
  MPI_File_get_size(a, &sa);
  MPI_File_get_size(b, &sb);
  MPI_File_get_size(c, &sc);
  mt_log("sizes: A %lld B %lld C %lld", (long long)sa, (long long)sb, (long long)sc);

  MPI_File_close(&a);
  MPI_File_close(&b);
  MPI_File_close(&c);
  mt_check(a == MPI_FILE_NULL && b == MPI_FILE_NULL && c == MPI_FILE_NULL, "closed");
  unlink(name_c);
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) {
    unlink(name_a);
    unlink(name_b);
    rmdir(dir);
  }
  return mt_end();
}
