/* hello_aligned_libs.c - hello linked to three shared libraries aligned to 2 MiB
 * (aligned_lib.c): loading them makes the upper half's ld.so unmap parts of its reservations
 * through mana's SIGSYS handler before the upper half's TLS exists.  mana_lh once resolved a
 * lazily bound symbol there and crashed before main (yorick's mpy). */
#include "mpitest.h"

int aligned_lib_value1(void);
int aligned_lib_value2(void);
int aligned_lib_value3(void);

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("hello_aligned_libs");
  int mine = aligned_lib_value1() + aligned_lib_value2() + aligned_lib_value3() + mt_.rank;
  int sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  mt_log("libraries answer %d on rank %d", mine, mt_.rank);
  mt_check_int("sum of the libraries' values over ranks", sum,
               60 * mt_.size + mt_.size * (mt_.size - 1) / 2);
  return mt_end();
}
