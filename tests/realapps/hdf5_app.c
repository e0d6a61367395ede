/*
 * hdf5_app.c - a small parallel HDF5 writer and reader, so that mana is tested against MPI-IO
 * code it did not write: HDF5's MPI-IO driver and ROMIO underneath it.
 *
 *   usage: hdf5_app [-s STEPS] [FILE]      (default: 24 steps, ./hdf5_app.h5)
 *
 * Every rank takes part in every step of a time loop.  Step s
 *   - reads back, collectively, the grid written at step s-1, each rank taking the rows its
 *     neighbour wrote, and checks every value;
 *   - writes the grid /fields/grid (COLS doubles a row, contiguous) collectively
 *     (H5FD_MPIO_COLLECTIVE): rows are dealt out to the ranks in blocks of BLOCK rows, round
 *     robin, and the ranks hold them with a halo column on each side, so that both the file
 *     and the memory selections become derived MPI datatypes and a file view;
 *   - grows the chunked, extendible dataset /history/series by one row (H5Dset_extent) and
 *     each rank writes its own SERIES_PER_RANK columns of it with independent I/O;
 *   - updates the grid's "step" attribute; every FLUSH_EVERY steps it flushes the file.
 * At the end the file is closed, opened again read-only on every rank and read back whole:
 * the attributes, the last grid and every row of the series are checked against the values
 * recomputed from the step numbers.  Rank 0 prints one line per step and the checksums;
 * nothing on stdout depends on time, process ids or the path, so that runs can be compared
 * byte for byte.
 *
 * HDF5 is left to shut itself down at MPI_Finalize (no H5close): it does so from the delete
 * callback of the attribute it puts on MPI_COMM_SELF, which is part of what is tested.
 *
 * Exit status: 0 every check passed, 1 a value read back was wrong (the lines say which),
 * 2 a usage error, 3 an HDF5 or MPI call failed (the job is aborted).
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  BLOCK = 2,           /* rows per block of the round-robin distribution */
  BLOCKS_PER_RANK = 6, /* so each rank holds BLOCK * BLOCKS_PER_RANK rows */
  COLS = 40,
  HALO = 1,            /* ghost columns on each side of a rank's rows in memory */
  SERIES_PER_RANK = 3, /* columns of /history/series that belong to one rank */
  SERIES_CHUNK_ROWS = 4,
  FLUSH_EVERY = 4,
  DEFAULT_STEPS = 24,
  MAX_STEPS = 10000,
};

static const char title[] = "mana parallel HDF5 test";
static const char fields_description[] = "one grid, rewritten every step";
static const char grid_units[] = "1/64";

static int rank, nranks;

/* Any failing HDF5 or MPI call ends the whole job: the other ranks would otherwise wait in
   the next collective call until the test's time limit. */
__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "hdf5_app: rank %d: ", rank);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 3);
  exit(3);
}

/* HDF5 returns a negative value (or H5I_INVALID_HID) on failure and prints its own error
   stack on stderr, which does not say which call of this program it was: the line added here
   does. */
#define TRY(expr)                                  \
  do {                                             \
    if ((expr) < 0)                                \
      die("%s failed (line %d)", #expr, __LINE__); \
  } while (0)

static hid_t h5id(hid_t id, const char *what)
{
  if (id < 0)
    die("%s failed", what);
  return id;
}

/* Only rank 0 writes stdout, and flushes every line: a checkpoint may come at any MPI call,
   and a line still in the stdio buffer would be saved in the image and printed twice, by
   the killed run at exit and by the restarted one. */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
  if (rank != 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
  fflush(stdout);
}

/* The grid's value at step s, row i, column j: an integer below 2^20 divided by 64, so that
   every value, and every sum the checks make, is exact in a double. */
static double grid_value(int s, hsize_t i, hsize_t j)
{
  uint64_t x = (uint64_t)s * 7919u + i * 104729u + j * 1299709u + (uint64_t)s * i * 31u;
  return (double)(x % 1000003u) / 64.0;
}

/* The exact integer behind a grid value. */
static uint64_t sixty_fourths(double v)
{
  return (uint64_t)(v * 64.0);
}

/* One element's share of the grid checksum: weighted by its position, so that values in the
   wrong place change the sum; the sum wraps modulo 2^64 and so does not depend on the order
   in which the ranks' shares are added. */
static uint64_t grid_share(double v, hsize_t i, hsize_t j)
{
  return sixty_fourths(v) * (2 * (i * COLS + j) + 1);
}

/* Row k of the rows rank `owner` holds, as a row of the whole grid. */
static hsize_t global_row(int owner, hsize_t k)
{
  hsize_t block = k / BLOCK, within = k % BLOCK;
  return (block * (hsize_t)nranks + (hsize_t)owner) * BLOCK + within;
}

/* What rank `owner` writes into its SERIES_PER_RANK columns of the series row of step s: the
   step, the sum of the rank's grid values at that step (in units of 1/64) and its share of the
   grid checksum cut to 40 bits, so that every entry is an exact double too. */
static void series_row(int s, int owner, double out[SERIES_PER_RANK])
{
  uint64_t sum = 0, share = 0;
  for (hsize_t k = 0; k < BLOCK * BLOCKS_PER_RANK; k++) {
    hsize_t i = global_row(owner, k);
    for (hsize_t j = 0; j < COLS; j++) {
      double v = grid_value(s, i, j);
      sum += sixty_fourths(v);
      share += grid_share(v, i, j);
    }
  }
  out[0] = s;
  out[1] = (double)sum;
  out[2] = (double)(share & ((UINT64_C(1) << 40) - 1));
}

/* Selects in the grid's file space the rows of rank `owner`: BLOCKS_PER_RANK blocks of BLOCK
   whole rows, nranks blocks apart. */
static void select_rows_of(hid_t space, int owner)
{
  hsize_t start[2] = {(hsize_t)owner * BLOCK, 0};
  hsize_t stride[2] = {(hsize_t)nranks * BLOCK, COLS};
  hsize_t count[2] = {BLOCKS_PER_RANK, 1};
  hsize_t block[2] = {BLOCK, COLS};
  TRY(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, stride, count, block));
}

/* The memory space of a rank's rows: the halo columns are outside the selection. */
static hid_t local_memspace(void)
{
  hsize_t dims[2] = {BLOCK * BLOCKS_PER_RANK, COLS + 2 * HALO};
  hid_t space = h5id(H5Screate_simple(2, dims, NULL), "H5Screate_simple (local rows)");
  hsize_t start[2] = {0, HALO}, count[2] = {BLOCK * BLOCKS_PER_RANK, COLS};
  TRY(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL));
  return space;
}

#define LOCAL(buf, k, j) ((buf)[(k) * (COLS + 2 * HALO) + HALO + (j)])

/* Writes a scalar int attribute, creating it the first time.  Attribute writes are
   collective in parallel HDF5: every rank passes the same value. */
static void put_int_attr(hid_t obj, const char *name, int value)
{
  hid_t attr;
  if (H5Aexists(obj, name) > 0) {
    attr = h5id(H5Aopen(obj, name, H5P_DEFAULT), name);
  } else {
    hid_t space = h5id(H5Screate(H5S_SCALAR), "H5Screate");
    attr = h5id(H5Acreate2(obj, name, H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT), name);
    TRY(H5Sclose(space));
  }
  TRY(H5Awrite(attr, H5T_NATIVE_INT, &value));
  TRY(H5Aclose(attr));
}

static void put_ints_attr(hid_t obj, const char *name, const int *values, hsize_t n)
{
  hid_t space = h5id(H5Screate_simple(1, &n, NULL), "H5Screate_simple");
  hid_t attr = h5id(H5Acreate2(obj, name, H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT), name);
  TRY(H5Awrite(attr, H5T_NATIVE_INT, values));
  TRY(H5Aclose(attr));
  TRY(H5Sclose(space));
}

static void put_string_attr(hid_t obj, const char *name, const char *text)
{
  hid_t type = h5id(H5Tcopy(H5T_C_S1), "H5Tcopy");
  TRY(H5Tset_size(type, strlen(text) + 1));
  hid_t space = h5id(H5Screate(H5S_SCALAR), "H5Screate");
  hid_t attr = h5id(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT), name);
  TRY(H5Awrite(attr, type, text));
  TRY(H5Aclose(attr));
  TRY(H5Sclose(space));
  TRY(H5Tclose(type));
}

static int get_int_attr(hid_t obj, const char *name, int *values, int n)
{
  hid_t attr = h5id(H5Aopen(obj, name, H5P_DEFAULT), name);
  hid_t space = h5id(H5Aget_space(attr), "H5Aget_space");
  hssize_t have = H5Sget_simple_extent_npoints(space);
  int ok = have == n;
  if (ok)
    TRY(H5Aread(attr, H5T_NATIVE_INT, values));
  TRY(H5Sclose(space));
  TRY(H5Aclose(attr));
  return ok;
}

/* Reads a string attribute into buf (size n); 0 when it is not a string that fits. */
static int get_string_attr(hid_t obj, const char *name, char *buf, size_t n)
{
  hid_t attr = h5id(H5Aopen(obj, name, H5P_DEFAULT), name);
  hid_t type = h5id(H5Aget_type(attr), "H5Aget_type");
  size_t len = H5Tget_size(type);
  int ok = H5Tget_class(type) == H5T_STRING && len < n;
  if (ok) {
    TRY(H5Aread(attr, type, buf));
    buf[len] = '\0';
  }
  TRY(H5Tclose(type));
  TRY(H5Aclose(attr));
  return ok;
}

/* The file access list: the MPI-IO driver on a duplicate of MPI_COMM_WORLD, with ROMIO hints
   that force two-phase collective buffering (so a collective write really is one), and
   collective metadata writes. */
static hid_t make_fapl(MPI_Info info)
{
  hid_t fapl = h5id(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate(FILE_ACCESS)");
  TRY(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, info));
  TRY(H5Pset_coll_metadata_write(fapl, 1));
  return fapl;
}

static const char *io_mode_name(H5D_mpio_actual_io_mode_t mode)
{
  switch (mode) {
  case H5D_MPIO_NO_COLLECTIVE:
    return "no collective";
  case H5D_MPIO_CHUNK_INDEPENDENT:
    return "chunk independent";
  case H5D_MPIO_CHUNK_COLLECTIVE:
    return "chunk collective";
  case H5D_MPIO_CHUNK_MIXED:
    return "chunk mixed";
  case H5D_MPIO_CONTIGUOUS_COLLECTIVE:
    return "contiguous collective";
  }
  return "unknown";
}

/* Sums a local count or checksum over the ranks (modulo 2^64). */
static uint64_t all_sum(uint64_t local)
{
  uint64_t total = 0;
  if (MPI_Allreduce(&local, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
    die("MPI_Allreduce failed");
  return total;
}

/* Checks the rows of rank `owner` in buf against step s; returns the wrong values and adds
   the checksum shares to *share.  The first wrong value is reported on stderr. */
static uint64_t check_rows(const double *buf, int owner, int s, uint64_t *share, const char *when)
{
  uint64_t bad = 0;
  for (hsize_t k = 0; k < BLOCK * BLOCKS_PER_RANK; k++) {
    hsize_t i = global_row(owner, k);
    for (hsize_t j = 0; j < COLS; j++) {
      double got = LOCAL(buf, k, j), want = grid_value(s, i, j);
      *share += grid_share(got, i, j);
      if (got != want && bad++ == 0)
        fprintf(stderr,
                "hdf5_app: rank %d: %s: grid[%llu][%llu] = %.17g, expected %.17g (step %d)\n", rank,
                when, (unsigned long long)i, (unsigned long long)j, got, want, s);
    }
  }
  return bad;
}

static void usage(const char *prog)
{
  if (rank == 0)
    fprintf(stderr,
            "usage: %s [-s STEPS] [FILE]   (STEPS 1..%d, default %d; FILE default hdf5_app.h5)\n",
            prog, MAX_STEPS, DEFAULT_STEPS);
  MPI_Finalize();
  exit(2);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  int steps = DEFAULT_STEPS;
  const char *path = "hdf5_app.h5";
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "-s") == 0 && a + 1 < argc) {
      char *end;
      long v = strtol(argv[++a], &end, 10);
      if (*end || v < 1 || v > MAX_STEPS)
        usage(argv[0]);
      steps = (int)v;
    } else if (argv[a][0] == '-' || a != argc - 1) {
      usage(argv[0]);
    } else {
      path = argv[a];
    }
  }

  const hsize_t local_rows = BLOCK * BLOCKS_PER_RANK;
  const hsize_t rows = local_rows * (hsize_t)nranks;
  const hsize_t series_cols = SERIES_PER_RANK * (hsize_t)nranks;
  double *mine = calloc(local_rows * (COLS + 2 * HALO), sizeof *mine);
  double *theirs = calloc(local_rows * (COLS + 2 * HALO), sizeof *theirs);
  if (!mine || !theirs)
    die("out of memory");
  /* the halo columns are never written to the file: a marker that would show if they were */
  for (hsize_t k = 0; k < local_rows; k++) {
    mine[k * (COLS + 2 * HALO)] = -1.0;
    mine[k * (COLS + 2 * HALO) + COLS + HALO] = -1.0;
  }
  say("hdf5_app: %d ranks, %d steps, grid %llu x %d (blocks of %d rows, round robin), series %llu "
      "columns",
      nranks, steps, (unsigned long long)rows, COLS, BLOCK, (unsigned long long)series_cols);

  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "romio_cb_write", "enable");
  MPI_Info_set(info, "romio_cb_read", "enable");
  MPI_Info_set(info, "cb_buffer_size", "65536");

  /* ---- create the file, its groups, datasets and fixed attributes ---- */
  hid_t fapl = make_fapl(info);
  hid_t file = h5id(H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl), "H5Fcreate");
  TRY(H5Pclose(fapl));
  put_string_attr(file, "title", title);
  put_int_attr(file, "ranks", nranks);
  put_int_attr(file, "steps", steps);
  int grid_dims[2] = {(int)rows, COLS};
  put_ints_attr(file, "grid_dims", grid_dims, 2);

  hid_t fields =
      h5id(H5Gcreate2(file, "fields", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "H5Gcreate2(fields)");
  hid_t history = h5id(H5Gcreate2(file, "history", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                       "H5Gcreate2(history)");
  put_string_attr(fields, "description", fields_description);

  hsize_t grid_size[2] = {rows, COLS};
  hid_t grid_space = h5id(H5Screate_simple(2, grid_size, NULL), "H5Screate_simple(grid)");
  hid_t grid = h5id(
      H5Dcreate2(fields, "grid", H5T_IEEE_F64LE, grid_space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      "H5Dcreate2(grid)");
  put_string_attr(grid, "units", grid_units);

  hsize_t series_size[2] = {0, series_cols}, series_max[2] = {H5S_UNLIMITED, series_cols};
  hsize_t series_chunk[2] = {SERIES_CHUNK_ROWS, series_cols};
  hid_t series_space =
      h5id(H5Screate_simple(2, series_size, series_max), "H5Screate_simple(series)");
  hid_t series_dcpl = h5id(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate(DATASET_CREATE)");
  TRY(H5Pset_chunk(series_dcpl, 2, series_chunk));
  hid_t series = h5id(H5Dcreate2(history, "series", H5T_IEEE_F64LE, series_space, H5P_DEFAULT,
                                 series_dcpl, H5P_DEFAULT),
                      "H5Dcreate2(series)");
  TRY(H5Pclose(series_dcpl));
  TRY(H5Sclose(series_space));
  put_int_attr(series, "per_rank", SERIES_PER_RANK);

  hid_t collective = h5id(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate(DATASET_XFER)");
  TRY(H5Pset_dxpl_mpio(collective, H5FD_MPIO_COLLECTIVE));
  hid_t independent = h5id(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate(DATASET_XFER)");
  TRY(H5Pset_dxpl_mpio(independent, H5FD_MPIO_INDEPENDENT));

  hid_t memspace = local_memspace();
  hid_t mine_in_file = h5id(H5Scopy(grid_space), "H5Scopy");
  select_rows_of(mine_in_file, rank);
  /* reading the neighbour's rows makes the check go through the file, not this rank's
     memory */
  const int neighbour = (rank + 1) % nranks;
  hid_t theirs_in_file = h5id(H5Scopy(grid_space), "H5Scopy");
  select_rows_of(theirs_in_file, neighbour);

  uint64_t wrong = 0;
  /* ---- the time loop ---- */
  for (int s = 1; s <= steps; s++) {
    char previous[64] = "";
    if (s > 1) {
      TRY(H5Dread(grid, H5T_NATIVE_DOUBLE, memspace, theirs_in_file, collective, theirs));
      uint64_t share = 0;
      uint64_t bad = all_sum(check_rows(theirs, neighbour, s - 1, &share, "step read-back"));
      wrong += bad;
      snprintf(previous, sizeof previous, "grid %d read back %s, ", s - 1, bad ? "WRONG" : "ok");
    }

    uint64_t share = 0;
    for (hsize_t k = 0; k < local_rows; k++) {
      hsize_t i = global_row(rank, k);
      for (hsize_t j = 0; j < COLS; j++) {
        LOCAL(mine, k, j) = grid_value(s, i, j);
        share += grid_share(LOCAL(mine, k, j), i, j);
      }
    }
    TRY(H5Dwrite(grid, H5T_NATIVE_DOUBLE, memspace, mine_in_file, collective, mine));
    if (s == 1) {
      /* proof that the write above was a collective one (HDF5 falls back to independent
         I/O silently); the same on every run */
      H5D_mpio_actual_io_mode_t mode;
      TRY(H5Pget_mpio_actual_io_mode(collective, &mode));
      say("grid write: %s I/O", io_mode_name(mode));
    }
    put_int_attr(grid, "step", s);

    /* the series grows by one row, every rank writing its own columns of it independently */
    hsize_t extent[2] = {(hsize_t)s, series_cols};
    TRY(H5Dset_extent(series, extent));
    hid_t fspace = h5id(H5Dget_space(series), "H5Dget_space(series)");
    hsize_t start[2] = {(hsize_t)s - 1, (hsize_t)rank * SERIES_PER_RANK};
    hsize_t count[2] = {1, SERIES_PER_RANK};
    TRY(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL));
    hid_t rowspace = h5id(H5Screate_simple(2, count, NULL), "H5Screate_simple(series row)");
    double entries[SERIES_PER_RANK];
    series_row(s, rank, entries);
    TRY(H5Dwrite(series, H5T_NATIVE_DOUBLE, rowspace, fspace, independent, entries));
    TRY(H5Sclose(rowspace));
    TRY(H5Sclose(fspace));

    const int flush = s % FLUSH_EVERY == 0;
    if (flush)
      TRY(H5Fflush(file, H5F_SCOPE_GLOBAL));
    say("step %d: %sgrid %d written, checksum %016llx, series %d rows%s", s, previous, s,
        (unsigned long long)all_sum(share), s, flush ? ", flushed" : "");
  }

  TRY(H5Sclose(theirs_in_file));
  TRY(H5Sclose(mine_in_file));
  TRY(H5Sclose(memspace));
  TRY(H5Sclose(grid_space));
  TRY(H5Dclose(series));
  TRY(H5Dclose(grid));
  TRY(H5Gclose(history));
  TRY(H5Gclose(fields));
  TRY(H5Fclose(file));
  say("file closed after %d steps", steps);

  /* ---- open it again, read-only, and read everything back ---- */
  fapl = make_fapl(info);
  TRY(H5Pset_all_coll_metadata_ops(fapl, 1));
  file = h5id(H5Fopen(path, H5F_ACC_RDONLY, fapl), "H5Fopen");
  TRY(H5Pclose(fapl));
  MPI_Info_free(&info);

  /* what the file was opened with: HDF5 hands back duplicates of its communicator and info */
  {
    hid_t access = h5id(H5Fget_access_plist(file), "H5Fget_access_plist");
    MPI_Comm comm;
    MPI_Info got;
    TRY(H5Pget_fapl_mpio(access, &comm, &got));
    int size = 0, flag = 0, len = 16;
    char value[16] = "";
    MPI_Comm_size(comm, &size);
    if (got != MPI_INFO_NULL) {
      MPI_Info_get_string(got, "romio_cb_read", &len, value, &flag);
      MPI_Info_free(&got);
    }
    MPI_Comm_free(&comm);
    TRY(H5Pclose(access));
    const int ok = size == nranks && flag && strcmp(value, "enable") == 0;
    wrong += all_sum(!ok);
    say("reopened: communicator of %d ranks, romio_cb_read %s: %s", size, flag ? value : "(none)",
        ok ? "ok" : "WRONG");
  }
  /* consistency semantics on the reopened file: MPI_File_set_atomicity under HDF5 */
  TRY(H5Fset_mpi_atomicity(file, 1));
  hbool_t atomic = 0;
  TRY(H5Fget_mpi_atomicity(file, &atomic));

  {
    char text[64];
    int n = 0, st = 0, dims[2] = {0, 0};
    int ok = get_string_attr(file, "title", text, sizeof text) && strcmp(text, title) == 0;
    ok = get_int_attr(file, "ranks", &n, 1) && n == nranks && ok;
    ok = get_int_attr(file, "steps", &st, 1) && st == steps && ok;
    ok = get_int_attr(file, "grid_dims", dims, 2) && dims[0] == (int)rows && dims[1] == COLS && ok;
    hid_t g = h5id(H5Gopen2(file, "fields", H5P_DEFAULT), "H5Gopen2(fields)");
    ok = get_string_attr(g, "description", text, sizeof text) &&
         strcmp(text, fields_description) == 0 && ok;
    TRY(H5Gclose(g));
    wrong += all_sum(!ok);
    say("read back: root attributes title, ranks %d, steps %d, grid_dims %d x %d, atomicity %d: %s",
        n, st, dims[0], dims[1], (int)atomic, ok ? "ok" : "WRONG");
  }

  {
    /* every rank reads the whole grid collectively, and checks the rows a rank two places
       on wrote (itself at 2 ranks), so that each row is checked by some rank */
    hid_t d = h5id(H5Dopen2(file, "/fields/grid", H5P_DEFAULT), "H5Dopen2(grid)");
    hid_t space = h5id(H5Dget_space(d), "H5Dget_space(grid)");
    hsize_t dims[2] = {0, 0};
    TRY(H5Sget_simple_extent_dims(space, dims, NULL));
    int ok = dims[0] == rows && dims[1] == COLS;
    double *all = calloc(rows * COLS, sizeof *all);
    if (!all)
      die("out of memory");
    if (ok)
      TRY(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, collective, all));
    uint64_t bad = 0, share = 0;
    const int owner = (rank + 2) % nranks;
    for (hsize_t k = 0; ok && k < local_rows; k++) {
      hsize_t i = global_row(owner, k);
      for (hsize_t j = 0; j < COLS; j++) {
        double got = all[i * COLS + j], want = grid_value(steps, i, j);
        share += grid_share(got, i, j);
        if (got != want && bad++ == 0)
          fprintf(stderr,
                  "hdf5_app: rank %d: final read-back: grid[%llu][%llu] = %.17g, expected %.17g\n",
                  rank, (unsigned long long)i, (unsigned long long)j, got, want);
      }
    }
    free(all);
    int step = 0;
    ok = get_int_attr(d, "step", &step, 1) && step == steps && ok;
    char units[16];
    ok = get_string_attr(d, "units", units, sizeof units) && strcmp(units, grid_units) == 0 && ok;
    bad = all_sum(bad + !ok);
    wrong += bad;
    say("read back: /fields/grid %llu x %llu, step %d, checksum %016llx: %s",
        (unsigned long long)dims[0], (unsigned long long)dims[1], step,
        (unsigned long long)all_sum(share), bad ? "WRONG" : "ok");
    TRY(H5Sclose(space));
    TRY(H5Dclose(d));
  }

  {
    hid_t d = h5id(H5Dopen2(file, "/history/series", H5P_DEFAULT), "H5Dopen2(series)");
    hid_t space = h5id(H5Dget_space(d), "H5Dget_space(series)");
    hsize_t dims[2] = {0, 0}, maxdims[2] = {0, 0}, chunk[2] = {0, 0};
    TRY(H5Sget_simple_extent_dims(space, dims, maxdims));
    hid_t dcpl = h5id(H5Dget_create_plist(d), "H5Dget_create_plist");
    int ok = H5Pget_layout(dcpl) == H5D_CHUNKED && H5Pget_chunk(dcpl, 2, chunk) == 2 &&
             chunk[0] == SERIES_CHUNK_ROWS && chunk[1] == series_cols;
    TRY(H5Pclose(dcpl));
    ok = ok && dims[0] == (hsize_t)steps && dims[1] == series_cols && maxdims[0] == H5S_UNLIMITED;
    double *all = calloc((hsize_t)steps * series_cols, sizeof *all);
    if (!all)
      die("out of memory");
    if (ok)
      TRY(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, collective, all));
    /* each rank checks all of it: it is small, and then rank 0's verdict covers it alone */
    uint64_t bad = 0, sum = 0;
    for (int s = 1; ok && s <= steps; s++) {
      for (int r = 0; r < nranks; r++) {
        double want[SERIES_PER_RANK];
        series_row(s, r, want);
        for (int c = 0; c < SERIES_PER_RANK; c++) {
          double got =
              all[(hsize_t)(s - 1) * series_cols + (hsize_t)r * SERIES_PER_RANK + (hsize_t)c];
          sum = sum * 31 + (uint64_t)got;
          if (got != want[c] && bad++ == 0)
            fprintf(stderr,
                    "hdf5_app: rank %d: final read-back: series[%d][%d] = %.17g, expected %.17g\n",
                    rank, s - 1, r * SERIES_PER_RANK + c, got, want[c]);
        }
      }
    }
    free(all);
    int per_rank = 0;
    ok = get_int_attr(d, "per_rank", &per_rank, 1) && per_rank == SERIES_PER_RANK && ok;
    bad = all_sum(bad + !ok);
    wrong += bad;
    say("read back: /history/series %llu x %llu (chunks of %llu rows), checksum %016llx: %s",
        (unsigned long long)dims[0], (unsigned long long)dims[1], (unsigned long long)chunk[0],
        (unsigned long long)sum, bad ? "WRONG" : "ok");
    TRY(H5Sclose(space));
    TRY(H5Dclose(d));
  }

  TRY(H5Pclose(independent));
  TRY(H5Pclose(collective));
  TRY(H5Fclose(file));
  free(theirs);
  free(mine);

  if (wrong)
    say("hdf5_app: FAIL: %llu wrong value(s) or attribute(s) read back (details on stderr)",
        (unsigned long long)wrong);
  else
    say("hdf5_app: PASS");
  MPI_Finalize();
  return wrong ? 1 : 0;
}
