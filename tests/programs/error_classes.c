/*
 * error_classes.c - error classes and codes added and deleted (MPI 4.1's deletions, MPIX_ in
 * MPICH 4.0.2), as MPICH's errhan/adderr does in a loop.  A restarted MPI must give every
 * class and code in use its old number, and hand out the deleted numbers again in the order
 * a running MPI would (MPICH: first deleted, first reused).
 *
 * Ranks: any (1 or 2 in the tests).  Prints numbers relative to the first class added.
 */
#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("error_classes");
  int a, b, c, x, y, z;
  MPI_Add_error_class(&a);
  MPI_Add_error_class(&b);
  MPI_Add_error_class(&c);
  MPI_Add_error_code(c, &x);
  MPI_Add_error_code(c, &y);
  MPI_Add_error_code(c, &z);
  MPI_Add_error_string(z, "z of c");
  MPI_Add_error_string(c, "class c");
  MPIX_Delete_error_code(y);
  MPIX_Delete_error_code(x);
  MPIX_Delete_error_class(b);
  MPIX_Delete_error_class(a);
  MPI_Barrier(MPI_COMM_WORLD);
  int d, e, f, w, v;
  MPI_Add_error_class(&d);
  MPI_Add_error_class(&e);
  MPI_Add_error_class(&f);
  MPI_Add_error_code(f, &w);
  MPI_Add_error_code(f, &v);
  MPI_Barrier(MPI_COMM_WORLD);
  mt_check(d == b && e == a && f == c + 1, "deleted classes come back first in, first out");
  int cls = -1;
  MPI_Error_class(z, &cls);
  mt_check(cls == c, "code z still belongs to class c");
  MPI_Error_class(w, &cls);
  mt_check(cls == f, "a new code belongs to its new class");
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(z, text, &len);
  mt_log("string of z: '%s'", text);
  MPI_Error_string(c, text, &len);
  mt_log("string of c: '%s'", text);
  mt_log("classes d-a %d e-a %d f-a %d; codes w-z %d v-z %d", d - a, e - a, f - a, w - z, v - z);
  MPI_Barrier(MPI_COMM_WORLD);
  return mt_end();
}
