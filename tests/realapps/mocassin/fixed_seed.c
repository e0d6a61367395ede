/*
 * fixed_seed.c - preloaded (LD_PRELOAD) into MOCASSIN by tests/realapps/mocassin.sh, so that
 * two runs of the same model give the same numbers and a run under mana can be compared with
 * a native one byte for byte.
 *
 * MOCASSIN has no seed option.  Before each iteration's photon packets every rank does
 *   call date_and_time(values=dt); call random_seed(get=seed)
 *   seed = seed + dt(8) + taskid; call random_seed(put=seed)
 * dt(8) being the milliseconds of the wall clock, and gfortran (since GCC 7) starts its
 * generator from the operating system's entropy.  So this library
 *   - seeds gfortran's generator with a fixed seed when it is loaded (a constructor: before
 *     the program's first random number), as gfortran did by itself before GCC 7, and
 *   - zeroes the milliseconds (values(8)) that _gfortran_date_and_time returns; the date and
 *     the time of day stay, and only appear in messages, which the test masks.
 * The rank still goes into each seed, and the rest of the program is untouched.  A process
 * without libgfortran (mpiexec, mana_launch, mana_lh's own half) loads it and does nothing.
 *
 * The array descriptor is gfortran's since GCC 8 (libgfortran.h: base address, offset,
 * dtype {element length, version, rank, type, attribute}, span, then per dimension stride,
 * lower and upper bound); the two entry points are versioned GFORTRAN_8.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

struct gfc_array {
  void *base;
  ptrdiff_t offset;
  struct {
    size_t elem_len;
    int version;
    signed char rank, type;
    short attribute;
  } dtype;
  ptrdiff_t span;
  struct {
    ptrdiff_t stride, lbound, ubound;
  } dim[1];
};

typedef void seed_fn(int *size, struct gfc_array *put, struct gfc_array *get);
typedef void date_fn(char *date, char *time, char *zone, struct gfc_array *values, size_t date_len,
                     size_t time_len, size_t zone_len);

enum { BT_INTEGER = 1, MAX_SEED = 256 };

__attribute__((constructor)) static void fixed_seed(void)
{
  seed_fn *seed = (seed_fn *)dlvsym(RTLD_DEFAULT, "_gfortran_random_seed_i4", "GFORTRAN_8");
  if (!seed)
    return; // not a Fortran program
  int n = 0, put[MAX_SEED];
  seed(&n, NULL, NULL);
  if (n < 1 || n > MAX_SEED)
    return;
  for (int i = 0; i < n; i++)
    put[i] = 20210225 + 7 * i;
  // put(1:n), contiguous
  struct gfc_array d = {put, -1, {sizeof put[0], 0, 1, BT_INTEGER, 0}, sizeof put[0], {{1, 1, n}}};
  seed(NULL, &d, NULL);
}

void _gfortran_date_and_time(char *date, char *time, char *zone, struct gfc_array *values,
                             size_t date_len, size_t time_len, size_t zone_len)
{
  static date_fn *real;
  if (!real)
    real = (date_fn *)dlvsym(RTLD_NEXT, "_gfortran_date_and_time", "GFORTRAN_8");
  real(date, time, zone, values, date_len, time_len, zone_len);
  if (!values || !values->base || values->dim[0].ubound - values->dim[0].lbound < 7)
    return;
  ptrdiff_t stride = values->dim[0].stride ? values->dim[0].stride : 1;
  // INTEGER(8) or INTEGER(4) values, as libgfortran accepts both
  if (values->dtype.elem_len == 8)
    ((int64_t *)values->base)[7 * stride] = 0;
  else
    ((int32_t *)values->base)[7 * stride] = 0;
}
